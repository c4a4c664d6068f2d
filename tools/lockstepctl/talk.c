/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Talking to the daemon: one connection per request, so a wedged or
 * restarted daemon never leaves the tool holding a stale socket. Every
 * failure is printed here once and mapped to exactly one exit code.
 */

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "ls_ctl.h"
#include "lockstepctl.h"


/*
 * $LOCKSTEP_SOCKET, else the daemon's own default, /run/lockstep/<node>.sock
 * (docs/config.md, control.socket): the one socket there when there is
 * exactly one, else DEFAULT_SOCKET (whose error names the directory).
 */
const char *
default_socket(void)
{
	static char found[PATH_MAX];
	const char *env = getenv("LOCKSTEP_SOCKET");
	unsigned int n = 0;
	struct dirent *e;
	DIR *d;

	if (env && env[0])
		return env;
	if (access(DEFAULT_SOCKET, F_OK) == 0 || (d = opendir(DEFAULT_SOCKET_DIR)) == NULL)
		return DEFAULT_SOCKET;
	while ((e = readdir(d)) != NULL) {
		size_t len = strlen(e->d_name);

		if (len > 5 && strcmp(e->d_name + len - 5, ".sock") == 0 &&
		    e->d_type == DT_SOCK) {
			snprintf(found, sizeof(found), "%s/%s", DEFAULT_SOCKET_DIR, e->d_name);
			n++;
		}
	}
	closedir(d);
	return n == 1 ? found : DEFAULT_SOCKET;
}

/* Map a connect failure to a message and exit code. */
static int
connect_error(const char *path, int err)
{
	if (err == ENOENT || err == ECONNREFUSED) {
		fprintf(stderr, "lockstepctl: cannot connect to %s: daemon not "
			"running? (%s)\n", path, strerror(err));
		return EX_NODAEMON;
	}
	if (err == EACCES || err == EPERM) {
		fprintf(stderr, "lockstepctl: cannot connect to %s: permission "
			"denied (%s)\n", path, strerror(err));
		return EX_PERM;
	}
	fprintf(stderr, "lockstepctl: cannot connect to %s: %s\n", path,
		strerror(err));
	return EX_NODAEMON;
}

/*
 * Connect to @path, send one request, read its reply. Returns EX_OK with
 * *reply set when the daemon answered (whatever "ok" says), or the exit
 * code of the failure with the reason already printed. Steals @args.
 */
int
request(const struct cli *cli, const char *path, const char *cmd,
	json_t *args, json_t **reply)
{
	int fd, rc;

	*reply = NULL;
	fd = ls_ctl_connect(path);
	if (fd < 0) {
		json_decref(args);
		return connect_error(path, -fd);
	}
	rc = ls_ctl_call(fd, cmd, args, cli->timeout_ms, reply);
	close(fd);
	json_decref(args);
	if (rc == 0)
		return EX_OK;
	if (rc == -ETIMEDOUT)
		fprintf(stderr, "lockstepctl: %s: no reply within %d ms\n",
			path, cli->timeout_ms);
	else if (rc == -EBADMSG)
		fprintf(stderr, "lockstepctl: %s: malformed reply\n", path);
	else if (rc == -EACCES || rc == -EPERM)
		return connect_error(path, -rc);
	else
		fprintf(stderr, "lockstepctl: %s: no reply (%s)\n", path,
			strerror(-rc));
	return EX_PROTO;
}

/* request() and the reply's result: EX_REPLY (printed, *reply freed) when
 * the daemon answered with an error. */
int
request_result(const struct cli *cli, const char *path, const char *cmd, json_t *args,
	       json_t **reply, json_t **res)
{
	int rc = request(cli, path, cmd, args, reply);

	if (rc != EX_OK)
		return rc;
	*res = json_object_get(*reply, "result");
	if (!json_is_true(json_object_get(*reply, "ok")) || *res == NULL) {
		print_reply_error(*reply, NULL);
		json_decref(*reply);
		*reply = NULL;
		return EX_REPLY;
	}
	return EX_OK;
}

void
print_reply_error(const json_t *reply, const char *who)
{
	const json_t *err = json_object_get(reply, "error");
	const char *code = json_string_value(json_object_get(err, "code"));
	const char *msg = json_string_value(json_object_get(err, "message"));

	if (who != NULL)
		fprintf(stderr, "%s: ", who);
	fprintf(stderr, "error: %s: %s\n", code ? code : "unknown",
		msg ? msg : "");
}

void
print_json(const json_t *j)
{
	char *s = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);

	if (s == NULL)
		die_oom();
	puts(s);
	free(s);
}

/* The one socket a single-daemon command talks to. */
static const char *
single_socket(const struct cli *cli, const struct cli_cmd *cmd)
{
	if (cli->n_socks > 1) {
		usage_error(cmd, "only mesh and watch take several sockets");
		return NULL;
	}
	return cli->n_socks == 1 ? cli->socks[0] : default_socket();
}

/* One request to one daemon, formatted by @fmt. Steals @args. */
int
run_single(struct cli *cli, const struct cli_cmd *cmd, const char *dcmd,
	   json_t *args, formatter fmt)
{
	const char *path = single_socket(cli, cmd);
	json_t *reply;
	int rc;

	if (path == NULL) {
		json_decref(args);
		return EX_USAGE;
	}
	rc = request(cli, path, dcmd, args, &reply);
	if (rc != EX_OK)
		return rc;
	if (cli->json)
		print_json(reply);
	if (!json_is_true(json_object_get(reply, "ok"))) {
		print_reply_error(reply, NULL);
		rc = EX_REPLY;
	} else if (!cli->json) {
		rc = fmt(json_object_get(reply, "result"));
		if (rc == EX_PROTO)
			fprintf(stderr, "lockstepctl: %s: unexpected reply "
				"shape for %s\n", path, dcmd);
	}
	json_decref(reply);
	return rc;
}
