/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The daemons of a fleet, as control sockets: every -s, every socket
 * named in a fleet file, and every *.sock in a directory (the lab's, or
 * /run/lockstep, where each daemon of a host makes <node>.sock). mesh,
 * watch and audit ask them all; a socket named twice is asked once.
 */

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lockstepctl.h"

static bool
listed(char *const *v, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i], s) == 0)
			return true;
	return false;
}

static void
add(char ***v, size_t *n, char *s)
{
	if (listed(*v, *n, s)) {
		free(s);
		return;
	}
	*v = realloc(*v, (*n + 1) * sizeof(**v));
	if (*v == NULL)
		die_oom();
	(*v)[(*n)++] = s;
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every *.sock in dir, sorted, after what v holds. */
static int
add_dir(const char *dir, char ***v, size_t *n)
{
	size_t first = *n;
	struct dirent *de;
	DIR *d = opendir(dir);

	if (d == NULL) {
		int err = errno;

		fprintf(stderr, "lockstepctl: cannot read %s: %s%s\n", dir, strerror(err),
			err == ENOENT ? " (no daemon running?)" : "");
		return err == EACCES ? EX_PERM : EX_NODAEMON;
	}
	while ((de = readdir(d)) != NULL) {
		size_t len = strlen(de->d_name);

		if (len > 5 && strcmp(de->d_name + len - 5, ".sock") == 0)
			add(v, n, xasprintf("%s/%s", dir, de->d_name));
	}
	closedir(d);
	qsort(*v + first, *n - first, sizeof(**v), cmp_str);
	return EX_OK;
}

/* One socket per line; blank lines and # comments skipped; a relative
 * path is relative to the file's directory. */
static int
add_file(const char *path, char ***v, size_t *n)
{
	const char *slash = strrchr(path, '/');
	char *line = NULL;
	size_t cap = 0;
	FILE *f = fopen(path, "r");

	if (f == NULL) {
		fprintf(stderr, "lockstepctl: cannot read fleet file %s: %s\n", path,
			strerror(errno));
		return EX_USAGE;
	}
	while (getline(&line, &cap, f) >= 0) {
		char *s = line + strspn(line, " \t"), *e = s + strcspn(s, "#\r\n");

		while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
			e--;
		*e = '\0';
		if (*s == '\0')
			continue;
		if (*s == '/' || slash == NULL)
			add(v, n, xstrdup(s));
		else
			add(v, n, xasprintf("%.*s/%s", (int)(slash - path), path, s));
	}
	free(line);
	fclose(f);
	return EX_OK;
}

int
fleet_sockets(const struct cli *cli, const char *dir, const char *fleet, char ***out,
	      size_t *n_out)
{
	char **v = NULL;
	size_t n = 0;
	int rc = EX_OK;

	for (size_t i = 0; i < cli->n_socks; i++)
		add(&v, &n, xstrdup(cli->socks[i]));
	if (fleet != NULL)
		rc = add_file(fleet, &v, &n);
	if (rc == EX_OK && dir == NULL && cli->n_socks == 0 && fleet == NULL)
		dir = DEFAULT_DIR;
	if (rc == EX_OK && dir != NULL)
		rc = add_dir(dir, &v, &n);
	if (rc == EX_OK && n == 0) {
		fprintf(stderr, "lockstepctl: no control sockets%s%s (no daemon running?)\n",
			dir ? " in " : "", dir ? dir : "");
		rc = EX_NODAEMON;
	}
	if (rc != EX_OK) {
		for (size_t i = 0; i < n; i++)
			free(v[i]);
		free(v);
		return rc;
	}
	*out = v;
	*n_out = n;
	return EX_OK;
}

char *
sock_label(const char *path)
{
	const char *b = strrchr(path, '/');
	char *s = xstrdup(b ? b + 1 : path);
	size_t len = strlen(s);

	if (len > 5 && strcmp(s + len - 5, ".sock") == 0)
		s[len - 5] = '\0';
	return s;
}
