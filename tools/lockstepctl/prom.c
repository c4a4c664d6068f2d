/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mesh --prometheus URL: the matrix for a whole fleet from the Prometheus
 * server that scrapes every lockstepd's /metrics (docs/metrics.md), instead
 * of one control socket per node. Each node's series become the shape a
 * daemon's "paths" reply has, so mesh.c lays them out as it does its own:
 *
 *   lockstep_info{node}                    which instance is which node
 *   up                                     instances whose scrape fails
 *   lockstep_path_up{peer,path}            path state
 *   lockstep_path_rtt_seconds{quantile="0.5"} (or forward/reverse delay,
 *   lockstep_path_loss_ratio)              the cell's figure
 *
 * An instance of a job that scrapes lockstepd whose scrape fails (up 0)
 * gets a row of "?", as a daemon that does not answer its socket does.
 * libcurl fetches (GET /api/v1/query); jansson reads the answers.
 */
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <jansson.h>

#include "lockstepctl.h"
#include "prom.h"

struct buf {
	char *p;
	size_t n;
};

static size_t
sink(char *data, size_t size, size_t nmemb, void *arg)
{
	struct buf *b = arg;
	size_t len = size * nmemb;

	/* a PromQL answer for a fleet is megabytes, not gigabytes */
	if (b->n + len > (64u << 20))
		return 0;
	b->p = realloc(b->p, b->n + len + 1);
	if (b->p == NULL)
		die_oom();
	memcpy(b->p + b->n, data, len);
	b->n += len;
	b->p[b->n] = '\0';
	return len;
}

/* One instant query: its result vector, or NULL with the reason on stderr. */
static json_t *
query(CURL *c, const char *base, const char *promql, int timeout_ms)
{
	char *q = curl_easy_escape(c, promql, 0), *url;
	struct buf b = {0};
	json_t *j, *res = NULL;
	json_error_t je;
	long code = 0;
	CURLcode rc;

	if (q == NULL)
		die_oom();
	url = xasprintf("%s%s/api/v1/query?query=%s", base,
			base[strlen(base) - 1] == '/' ? "" : "", q);
	curl_free(q);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	rc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	if (rc != CURLE_OK) {
		fprintf(stderr, "lockstepctl: %s: %s\n", url, curl_easy_strerror(rc));
	} else if (code != 200) {
		fprintf(stderr, "lockstepctl: %s: HTTP %ld\n", url, code);
	} else if ((j = json_loadb(b.p ? b.p : "", b.n, 0, &je)) == NULL) {
		fprintf(stderr, "lockstepctl: %s: not JSON: %s\n", url, je.text);
	} else {
		const char *st = json_string_value(json_object_get(j, "status"));
		json_t *r = json_object_get(json_object_get(j, "data"), "result");

		if (st == NULL || strcmp(st, "success") != 0 || !json_is_array(r))
			fprintf(stderr, "lockstepctl: %s: Prometheus says %s: %s\n", url,
				st ? st : "nothing",
				json_string_value(json_object_get(j, "error")) ?: "no result vector");
		else
			res = json_incref(r);
		json_decref(j);
	}
	free(b.p);
	free(url);
	return res;
}

static const char *
label(const json_t *sample, const char *name)
{
	return json_string_value(json_object_get(json_object_get(sample, "metric"), name));
}

/* A sample's value: Prometheus sends [time, "text"]. NaN when absent. */
static double
value(const json_t *sample)
{
	const char *s = json_string_value(json_array_get(json_object_get(sample, "value"), 1));

	return s ? strtod(s, NULL) : __builtin_nan("");
}

/* The path object of node (by instance) / peer / path, made on first use. */
static json_t *
path_obj(json_t *by_inst, const json_t *sample)
{
	const char *inst = label(sample, "instance"), *peer = label(sample, "peer");
	const char *path = label(sample, "path");
	json_t *node, *peers, *pe = NULL, *paths, *pa;
	size_t i;

	if (inst == NULL || peer == NULL || path == NULL ||
	    (node = json_object_get(by_inst, inst)) == NULL)
		return NULL;
	peers = json_object_get(node, "peers");
	json_array_foreach(peers, i, pe)
		if (strcmp(json_string_value(json_object_get(pe, "name")), peer) == 0)
			break;
	if (i == json_array_size(peers)) {
		pe = json_pack("{ss s[]}", "name", peer, "paths");
		json_array_append_new(peers, pe);
	}
	paths = json_object_get(pe, "paths");
	json_array_foreach(paths, i, pa)
		if (json_integer_value(json_object_get(pa, "path")) == atoll(path))
			return pa;
	pa = json_pack("{sI}", "path", (json_int_t)atoll(path));
	json_array_append_new(paths, pa);
	return pa;
}

/* Every sample of promql into its path objects: key = sample x scale. */
static int
fill(CURL *c, const char *base, int timeout_ms, json_t *by_inst, const char *promql,
     const char *key, double scale)
{
	json_t *r = query(c, base, promql, timeout_ms), *s;
	size_t i;

	if (r == NULL)
		return EX_PROTO;
	json_array_foreach(r, i, s) {
		json_t *pa = path_obj(by_inst, s);
		double v = value(s);

		if (pa == NULL || v != v)
			continue;
		if (strcmp(key, "state") == 0)
			json_object_set_new(pa, key, json_string(v > 0 ? "up" : "down"));
		else
			json_object_set_new(pa, key, json_real(v * scale));
	}
	json_decref(r);
	return EX_OK;
}

/* Rows: one per lockstepd instance (its node name), one "?" row per
 * instance of the same jobs whose scrape fails. */
static int
prom_rows(CURL *c, const char *base, int timeout_ms, json_t *by_inst, json_t *names,
	  const char *group_label, json_t *groups)
{
	json_t *info = query(c, base, "lockstep_info", timeout_ms), *up, *s;
	json_t *jobs = json_object();
	size_t i;

	if (info == NULL)
		return EX_PROTO;
	json_array_foreach(info, i, s) {
		const char *inst = label(s, "instance"), *node = label(s, "node");

		if (inst == NULL || node == NULL)
			continue;
		json_object_set_new(by_inst, inst, json_pack("{ss ss s[]}", "node", node,
							     "window", "10s", "peers"));
		if (group_label != NULL && label(s, group_label) != NULL)
			json_object_set_new(groups, inst, json_string(label(s, group_label)));
		json_object_set_new(names, inst, json_string(node));
		if (label(s, "job") != NULL)
			json_object_set_new(jobs, label(s, "job"), json_true());
	}
	json_decref(info);
	up = query(c, base, "up == 0", timeout_ms);
	json_array_foreach(up, i, s) {
		const char *inst = label(s, "instance"), *job = label(s, "job");

		if (inst != NULL && job != NULL && json_object_get(jobs, job) != NULL &&
		    json_object_get(names, inst) == NULL) {
			json_object_set_new(names, inst, json_null());
			/* target labels are on up too: a dead node keeps its leaf */
			if (group_label != NULL && label(s, group_label) != NULL)
				json_object_set_new(groups, inst,
						    json_string(label(s, group_label)));
		}
	}
	json_decref(up);
	json_decref(jobs);
	return EX_OK;
}

static int
by_name(const void *a, const void *b)
{
	return strcmp(json_string_value(json_object_get(*(json_t *const *)a, "name")),
		      json_string_value(json_object_get(*(json_t *const *)b, "name")));
}

int
prom_mesh(const char *base, const char *metric, const char *group_label, int timeout_ms,
	  json_t **nodes)
{
	static const struct { const char *metric, *promql, *key; double scale; } m[] = {
		{"rtt", "lockstep_path_rtt_seconds{quantile=\"0.5\"}", "rtt_p50_ns", 1e9},
		{"fwd", "lockstep_path_forward_delay_seconds{quantile=\"0.5\"}", "fwd_p50_ns", 1e9},
		{"rev", "lockstep_path_reverse_delay_seconds{quantile=\"0.5\"}", "rev_p50_ns", 1e9},
		{"loss", "lockstep_path_loss_ratio", "loss_pct", 100},
	};
	json_t *by_inst = json_object(), *names = json_object(), *out = json_array(), *v;
	json_t *groups = json_object();
	json_t **rows;
	const char *inst;
	size_t n = 0;
	CURL *c;
	int rc;

	if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0 || (c = curl_easy_init()) == NULL) {
		fprintf(stderr, "lockstepctl: cannot start libcurl\n");
		return EX_PROTO;
	}
	rc = prom_rows(c, base, timeout_ms, by_inst, names, group_label, groups);
	if (rc == EX_OK)
		rc = fill(c, base, timeout_ms, by_inst, "lockstep_path_up", "state", 1);
	for (size_t k = 0; rc == EX_OK && k < sizeof(m) / sizeof(m[0]); k++)
		if (strcmp(m[k].metric, metric) == 0)
			rc = fill(c, base, timeout_ms, by_inst, m[k].promql, m[k].key, m[k].scale);
	/* rows sorted by name: the same on every run */
	rows = calloc(json_object_size(names) + 1, sizeof(*rows));
	if (rows == NULL)
		die_oom();
	json_object_foreach(names, inst, v) {
		json_t *res = json_object_get(by_inst, inst);

		rows[n++] = json_pack("{ss sO sO}", "name",
				      json_is_string(v) ? json_string_value(v) : inst,
				      "result", res ? res : json_null(),
				      "group", json_object_get(groups, inst) ?: json_null());
	}
	qsort(rows, n, sizeof(*rows), by_name);
	for (size_t i = 0; i < n; i++)
		json_array_append_new(out, rows[i]);
	free(rows);
	curl_easy_cleanup(c);
	curl_global_cleanup();
	json_decref(by_inst);
	json_decref(names);
	json_decref(groups);
	if (rc != EX_OK) {
		json_decref(out);
		return rc;
	}
	*nodes = out;
	return EX_OK;
}
