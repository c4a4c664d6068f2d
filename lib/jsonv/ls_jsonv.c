/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Error reporting and file loading for lockstep's JSON formats. Each format
 * keeps its own schema; this file holds only what makes their errors look
 * alike and safe to print (see ls_jsonv.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "ls_jsonv.h"

#define MSG_LEN 512

int
ls_jsonv_fail(const struct ls_jsonv *v, const char *path, const char *fmt, ...)
{
	char reason[MSG_LEN];
	va_list ap;

	if (v->err == NULL || v->errlen == 0)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	if (v->src != NULL && path != NULL && path[0] != '\0')
		snprintf(v->err, v->errlen, "%s: %s: %s", v->src, path, reason);
	else if (v->src != NULL)
		snprintf(v->err, v->errlen, "%s: %s", v->src, reason);
	else if (path != NULL && path[0] != '\0')
		snprintf(v->err, v->errlen, "%s: %s", path, reason);
	else
		snprintf(v->err, v->errlen, "%s", reason);
	return -EINVAL;
}

/* Control characters become '?' so that the message stays one line whatever
 * the file contains. */
const char *
ls_jsonv_quote(char *buf, size_t len, const char *s)
{
	size_t i, n = 0;

	for (i = 0; s[i] != '\0' && n + 4 < len && i < LS_JSONV_QUOTE_MAX; i++) {
		unsigned char ch = (unsigned char)s[i];

		buf[n++] = (ch < 0x20 || ch == 0x7f) ? '?' : (char)ch;
	}
	if (s[i] != '\0' && n + 4 <= len) {
		memcpy(buf + n, "...", 3);
		n += 3;
	}
	buf[n] = '\0';
	return buf;
}

const char *
ls_jsonv_key(char *buf, const char *parent, const char *key)
{
	char k[LS_JSONV_QUOTE_MAX + 4];
	int n;

	ls_jsonv_quote(k, sizeof(k), key);
	if (parent == NULL || parent[0] == '\0')
		n = snprintf(buf, LS_JSONV_PATH_LEN, "%s", k);
	else
		n = snprintf(buf, LS_JSONV_PATH_LEN, "%s.%s", parent, k);
	/* only a caller-supplied prefix can be this long: mark the cut */
	if (n >= LS_JSONV_PATH_LEN)
		memcpy(buf + LS_JSONV_PATH_LEN - 4, "...", 4);
	return buf;
}

const char *
ls_jsonv_index(char *buf, const char *parent, size_t i)
{
	snprintf(buf, LS_JSONV_PATH_LEN, "%s[%zu]", parent, i);
	return buf;
}

const char *
ls_jsonv_kind(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "object";
	case JSON_ARRAY:
		return "array";
	case JSON_STRING:
		return "string";
	case JSON_INTEGER:
		return "integer";
	case JSON_REAL:
		return "real";
	case JSON_TRUE:
	case JSON_FALSE:
		return "boolean";
	case JSON_NULL:
		return "null";
	}
	return "?";
}

bool
ls_jsonv_name_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	       (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' || ch == '-';
}

int
ls_jsonv_load(const struct ls_jsonv *v, size_t max_name, json_t **root)
{
	json_error_t jerr;
	struct stat st;
	FILE *f;
	int rc;

	*root = NULL;
	if (v->src == NULL) {
		struct ls_jsonv anon = {.src = "(null)", .err = v->err, .errlen = v->errlen};

		return ls_jsonv_fail(&anon, NULL, "no file name");
	}
	if (strlen(v->src) > max_name) {
		ls_jsonv_fail(v, NULL, "file name longer than %zu characters", max_name);
		return -ENAMETOOLONG;
	}
	/* Open it ourselves rather than json_load_file(): jansson folds the open
	 * failure into its message and errno does not survive, while callers
	 * want -ENOENT / -EACCES as such. */
	f = fopen(v->src, "r");
	if (f == NULL) {
		rc = -errno;
		ls_jsonv_fail(v, NULL, "cannot open: %s", strerror(-rc));
		return rc;
	}
	/* jansson's "'[' or '{' expected near end of file" hides the cause */
	if (fstat(fileno(f), &st) == 0) {
		if (S_ISDIR(st.st_mode)) {
			fclose(f);
			ls_jsonv_fail(v, NULL, "cannot open: %s", strerror(EISDIR));
			return -EISDIR;
		}
		if (S_ISREG(st.st_mode) && st.st_size == 0) {
			fclose(f);
			return ls_jsonv_fail(v, NULL, "empty file");
		}
	}
	/* duplicate keys are a syntax-level error: which one wins is a guess */
	*root = json_loadf(f, JSON_REJECT_DUPLICATES, &jerr);
	fclose(f);
	if (*root == NULL) {
		if (jerr.line > 0)
			return ls_jsonv_fail(v, NULL, "line %d column %d: %s", jerr.line,
					     jerr.column, jerr.text);
		return ls_jsonv_fail(v, NULL, "%s", jerr.text);
	}
	return 0;
}

int
ls_jsonv_save(const json_t *j, const char *file, char *err, size_t errlen)
{
	char tmp[4096];
	int fd, rc = 0;
	FILE *f;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%d", file, (int)getpid()) >= (int)sizeof(tmp)) {
		snprintf(err, errlen, "%s: path too long", file);
		return -ENAMETOOLONG;
	}
	/* new file only, never through a link someone left in the directory */
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
		return rc;
	}
	f = fdopen(fd, "w");
	if (f == NULL || json_dumpf(j, f, JSON_INDENT(2) | JSON_SORT_KEYS) != 0 ||
	    fputc('\n', f) == EOF || fflush(f) != 0 || fsync(fd) != 0)
		rc = -(errno ? errno : EIO);
	if (f != NULL)
		fclose(f);
	else
		close(fd);
	if (rc == 0 && rename(tmp, file) != 0)
		rc = -errno;
	if (rc < 0) {
		snprintf(err, errlen, "%s: %s", file, strerror(-rc));
		unlink(tmp);
	}
	return rc;
}
