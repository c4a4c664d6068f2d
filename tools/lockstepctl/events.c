/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lockstepctl events [--max N] [--follow]: the daemon's event log, one
 * line per event (UTC time, severity, type, then its fields), or with
 * --json the events' JSON, one per line. --follow keeps asking for what
 * came after the last one seen, as tail -f does.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "lockstepctl.h"

#define FOLLOW_MS 200

static void
print_event(const json_t *e, bool as_json)
{
	static const char *const skip[] = {"seq", "time_ns", "fleet_ns", "node", "type",
					   "severity", NULL};
	json_int_t t = json_integer_value(json_object_get(e, "time_ns"));
	time_t sec = (time_t)(t / 1000000000);
	const char *k;
	json_t *v;
	char when[32];
	struct tm tm;

	if (as_json) {
		char *s = json_dumps(e, JSON_COMPACT);

		if (s != NULL)
			puts(s);
		free(s);
		return;
	}
	gmtime_r(&sec, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	printf("%s.%06dZ  %-7s  %-12s", when, (int)(t % 1000000000 / 1000),
	       get_s(e, "severity"), get_s(e, "type"));
	json_object_foreach((json_t *)e, k, v) {
		bool skipped = false;
		char *s;

		for (int i = 0; skip[i] != NULL; i++)
			skipped |= strcmp(k, skip[i]) == 0;
		if (skipped)
			continue;
		s = json_is_string(v) ? xstrdup(json_string_value(v)) :
			json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
		printf("  %s=%s", k, s != NULL ? s : "?");
		free(s);
	}
	putchar('\n');
}

int
cmd_events(struct cli *cli, const struct cli_cmd *cmd, int argc, char **argv)
{
	const char *path = cli->n_socks == 1 ? cli->socks[0] : default_socket();
	unsigned long long max = 100;
	json_int_t since = -1;
	struct parsed p;
	int rc = parse_args(cli, cmd, argc, argv, cmd->opts, &p, 0, 0);

	if (rc != EX_OK)
		return rc;
	if (cli->n_socks > 1)
		return usage_error(cmd, "one socket only");
	if (p.val[0] != NULL && (rc = parse_u64(cmd, "--max", p.val[0], 100000, &max)) != EX_OK)
		return rc;
	for (;;) {
		json_t *args = since < 0 ? json_pack("{s:I}", "max", (json_int_t)max) :
			json_pack("{s:I, s:I}", "since", since, "max", (json_int_t)100000);
		json_t *reply, *res, *e;
		size_t i;

		rc = request_result(cli, path, "events", args, &reply, &res);
		if (rc != EX_OK)
			return rc;
		if (json_integer_value(json_object_get(res, "missed")) > 0 && since >= 0)
			fprintf(stderr, "lockstepctl: %lld events were dropped from the daemon's "
				"memory before they could be read\n",
				(long long)json_integer_value(json_object_get(res, "missed")));
		json_array_foreach(json_object_get(res, "events"), i, e)
			print_event(e, cli->json);
		since = json_integer_value(json_object_get(res, "next"));
		json_decref(reply);
		fflush(stdout);
		if (p.val[1] == NULL)
			return EX_OK;
		{
			struct timespec ts = {0, FOLLOW_MS * 1000000L};

			while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
				;
		}
	}
}
