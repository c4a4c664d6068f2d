/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * DPDK telemetry: /lockstep/status, /lockstep/peers, /lockstep/paths[,PEER]
 * and /lockstep/sync, for the tools that already read DPDK applications
 * (dpdk-telemetry.py, collectd's and telegraf's DPDK plugins).
 *
 * Each is the control command of the same name: the telemetry thread posts
 * the request, the control thread runs it with ls_ctl_call_local() on its
 * next turn (it owns the windows and the peer registry) and fills the reply.
 * The hand-over is a mutex and a condition variable between two control-
 * plane threads; nothing here is on an lcore. A request the control thread
 * does not take within 2 s is withdrawn under the mutex, so a late control
 * thread never writes into a reply the telemetry library has freed.
 *
 * rte_telemetry (22.11) holds one dict level of at most 256 entries with
 * names of [A-Za-z0-9_/]: the reply is the command's JSON flattened to
 * "a/b/0/c" keys, reals as strings, cut at 255 entries ("truncated": 1).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <rte_telemetry.h>

#include "lockstepd.h"
#include "ls_ctl.h"

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct ls_ctl *ctl;
	/* the one request in flight (telemetry serves one client at a time) */
	bool pending, taken, done;
	uint64_t seq;                /* the request's number: a late answer to an
				      * old one never fills a newer one's d */
	char cmd[32];
	char param[64];
	struct rte_tel_data *d;
} tel = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

/* A name rte_telemetry accepts: anything else becomes '_'. */
static void
tel_name(char *s)
{
	for (; *s != '\0'; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_' || *s == '/'))
			*s = '_';
}

static void
flatten(struct rte_tel_data *d, const char *prefix, json_t *v, unsigned int *n)
{
	char key[RTE_TEL_MAX_STRING_LEN], buf[64];
	const char *k;
	json_t *e;
	size_t i;

	if (*n >= RTE_TEL_MAX_DICT_ENTRIES - 1)
		return;
	if (json_is_object(v) || json_is_array(v)) {
		if (json_is_object(v)) {
			json_object_foreach(v, k, e) {
				snprintf(key, sizeof(key), "%s%s%s", prefix, *prefix ? "/" : "", k);
				flatten(d, key, e, n);
			}
		} else {
			json_array_foreach(v, i, e) {
				snprintf(key, sizeof(key), "%s%s%zu", prefix, *prefix ? "/" : "", i);
				flatten(d, key, e, n);
			}
		}
		return;
	}
	snprintf(key, sizeof(key), "%s", *prefix ? prefix : "value");
	tel_name(key);
	if (json_is_string(v)) {
		rte_tel_data_add_dict_string(d, key, json_string_value(v));
	} else if (json_is_integer(v) && json_integer_value(v) >= 0) {
		rte_tel_data_add_dict_u64(d, key, (uint64_t)json_integer_value(v));
	} else if (json_is_integer(v)) {
		snprintf(buf, sizeof(buf), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		rte_tel_data_add_dict_string(d, key, buf);
	} else if (json_is_real(v)) {
		snprintf(buf, sizeof(buf), "%.9g", json_real_value(v));
		rte_tel_data_add_dict_string(d, key, buf);
	} else if (json_is_boolean(v)) {
		rte_tel_data_add_dict_int(d, key, json_is_true(v));
	} else {
		return; /* null: no value, no entry */
	}
	(*n)++;
}

/* /lockstep/paths,PEER: that peer's entry only. */
static json_t *
pick_peer(json_t *r, const char *peer)
{
	json_t *e;
	size_t i;

	json_array_foreach(json_object_get(r, "peers"), i, e)
		if (strcmp(json_string_value(json_object_get(e, "name")) ?: "", peer) == 0)
			return json_incref(e);
	return json_pack("{ss}", "error", "no such peer");
}

/* Control thread: serve the pending request, if any. */
void
lsd_telemetry_poll(void)
{
	char cmd[32], param[64], err[256];
	json_t *r, *v;
	unsigned int n = 0;
	uint64_t seq;

	pthread_mutex_lock(&tel.mu);
	if (!tel.pending || tel.taken) {
		pthread_mutex_unlock(&tel.mu);
		return;
	}
	tel.taken = true;
	seq = tel.seq;
	memcpy(cmd, tel.cmd, sizeof(cmd));
	memcpy(param, tel.param, sizeof(param));
	pthread_mutex_unlock(&tel.mu);

	r = ls_ctl_call_local(tel.ctl, cmd, NULL, err, sizeof(err));
	v = r == NULL ? json_pack("{ss}", "error", err) :
	    strcmp(cmd, "paths") == 0 && param[0] != '\0' ? pick_peer(r, param) : json_incref(r);
	json_decref(r);

	pthread_mutex_lock(&tel.mu);
	if (tel.pending && tel.seq == seq) { /* not withdrawn: d is still the client's */
		rte_tel_data_start_dict(tel.d);
		flatten(tel.d, "", v, &n);
		if (n >= RTE_TEL_MAX_DICT_ENTRIES - 1)
			rte_tel_data_add_dict_int(tel.d, "truncated", 1);
		tel.done = true;
		pthread_cond_signal(&tel.cv);
	}
	pthread_mutex_unlock(&tel.mu);
	json_decref(v);
}

/* Telemetry thread. */
static int
tel_cb(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct timespec until;
	int rc = 0;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 2;
	pthread_mutex_lock(&tel.mu);
	snprintf(tel.cmd, sizeof(tel.cmd), "%s", cmd + strlen("/lockstep/"));
	snprintf(tel.param, sizeof(tel.param), "%s", params ? params : "");
	tel.d = d;
	tel.seq++;
	tel.pending = true;
	tel.taken = tel.done = false;
	while (!tel.done && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&tel.cv, &tel.mu, &until);
	rc = tel.done ? 0 : -ETIMEDOUT;
	tel.pending = false; /* withdrawn if not done: the control thread leaves d alone */
	pthread_mutex_unlock(&tel.mu);
	return rc;
}

int
lsd_telemetry_start(struct ls_ctl *ctl)
{
	static const struct { const char *cmd, *help; } c[] = {
		{"/lockstep/status", "lockstepd: node, clock, ports, counters, reflector"},
		{"/lockstep/peers", "lockstepd: peers with state, loss and RTT"},
		{"/lockstep/paths", "lockstepd: every path (10 s window); parameter: one peer's name"},
		{"/lockstep/sync", "lockstepd: clock sync state and fleet-time reading"},
	};

	tel.ctl = ctl;
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++)
		if (rte_telemetry_register_cmd(c[i].cmd, tel_cb, c[i].help) < 0)
			return -EINVAL;
	return 0;
}
