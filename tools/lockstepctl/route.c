/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lockstepctl route PEER [PATH] [--dport N] [--max-ttl N] [--fresh]: the
 * routers a path crosses (the daemon's path discovery), traceroute style:
 * one line per TTL with the router's address, the round trip and what it
 * answered. Starts a trace when the daemon has none young enough (or with
 * --fresh) and asks again until it is done. --json prints the final reply.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "lockstepctl.h"

#define POLL_MS 100
#define POLL_MAX 50             /* 5 s: a trace waits 500 ms for answers */

static void
print_route(const json_t *r)
{
	const json_t *h;
	size_t i;

	printf("route to %s path %s (sport %s, dport %s, %s): %s%s\n", get_s(r, "peer"),
	       get_s(r, "path"), get_s(r, "sport"), get_s(r, "dport"), get_s(r, "family"),
	       get_s(r, "state"),
	       json_is_true(json_object_get(r, "complete")) ? ", complete (the TTL after the "
	       "last router reached the peer)" : "");
	json_array_foreach(json_object_get(r, "hops"), i, h) {
		if (json_is_null(json_object_get(h, "addr")))
			printf("%3s  *\n", get_s(h, "ttl"));
		else
			printf("%3s  %-40s %10.1f us  %s\n", get_s(h, "ttl"), get_s(h, "addr"),
			       json_number_value(json_object_get(h, "rtt_us")), get_s(h, "icmp"));
	}
}

int
cmd_route(struct cli *cli, const struct cli_cmd *cmd, int argc, char **argv)
{
	const char *path = cli->n_socks == 1 ? cli->socks[0] : default_socket();
	unsigned long long pathno = 0, dport = 0, ttl = 0;
	struct parsed p;
	json_t *reply = NULL, *res = NULL;
	int rc = parse_args(cli, cmd, argc, argv, cmd->opts, &p, 1, 2);

	if (rc != EX_OK)
		return rc;
	if (cli->n_socks > 1)
		return usage_error(cmd, "one socket only");
	if ((p.npos > 1 && (rc = parse_u64(cmd, "PATH", p.pos[1], 63, &pathno)) != EX_OK) ||
	    (p.val[0] != NULL && (rc = parse_u64(cmd, "--dport", p.val[0], 65535, &dport)) != EX_OK) ||
	    (p.val[1] != NULL && (rc = parse_u64(cmd, "--max-ttl", p.val[1], 31, &ttl)) != EX_OK))
		return rc;
	for (int n = 0; n < POLL_MAX; n++) {
		json_t *args = json_pack("{s:s, s:I}", "peer", p.pos[0], "path", (json_int_t)pathno);

		if (dport != 0)
			json_object_set_new(args, "dport", json_integer((json_int_t)dport));
		if (ttl != 0)
			json_object_set_new(args, "max_ttl", json_integer((json_int_t)ttl));
		if (n == 0 && p.val[2] != NULL)
			json_object_set_new(args, "fresh", json_true());
		json_decref(reply);
		rc = request_result(cli, path, "route", args, &reply, &res);
		if (rc != EX_OK)
			return rc;
		if (strcmp(get_s(res, "state"), "done") == 0)
			break;
		{
			struct timespec ts = {0, POLL_MS * 1000000L};

			while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
				;
		}
	}
	if (cli->json) {
		char *s = json_dumps(res, JSON_INDENT(2));

		if (s != NULL)
			puts(s);
		free(s);
	} else {
		print_route(res);
	}
	json_decref(reply);
	return EX_OK;
}
