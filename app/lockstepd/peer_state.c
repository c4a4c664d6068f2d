/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The peer list survives a restart: after every change on the control
 * socket (peer.add, peer.del, probe.set) the whole list is written
 * atomically to control.peers_file, and at start that file, when it
 * exists, is the list (the operator's last word, as the data path's
 * policy file is), checked peer by peer like the config's peers[] and
 * refused whole with file, key and reason. "" turns it off.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "lockstepd.h"
#include "ls_jsonv.h"

static json_t *
peer_conf_json(const struct lsd_peer *p)
{
	char addr[LS_ADDR_STRLEN], mac[LS_MAC_STRLEN];
	json_t *o = json_pack("{ss ss ss si si sf}", "name", p->name,
			      "addr", ls_addr_fmt(&p->addr, addr, sizeof(addr)),
			      "port", lsd.ports[p->port_idx].conf->name, "paths", (int)p->n_paths,
			      "interval_us", (int)p->interval_us, "asym_ns", p->asym_ns);

	if (o != NULL && p->static_mac)
		json_object_set_new(o, "mac", json_string(ls_mac_fmt(&p->mac, mac, sizeof(mac))));
	if (o != NULL && p->dscp_conf >= 0)
		json_object_set_new(o, "dscp", json_integer(p->dscp_conf));
	if (o != NULL && p->pcp_conf >= 0)
		json_object_set_new(o, "pcp", json_integer(p->pcp_conf));
	return o;
}

int
lsd_peers_save(void)
{
	const char *file = lsd.cfg.control.peers_file;
	char err[LS_ERR_LEN], dir[sizeof(lsd.cfg.control.peers_file)], *slash;
	json_t *a;
	int rc;

	if (file[0] == '\0')
		return 0;
	snprintf(dir, sizeof(dir), "%s", file);
	slash = strrchr(dir, '/');
	if (slash != NULL && slash != dir) {
		*slash = '\0';
		mkdir(dir, 0750);
	}
	a = json_array();
	for (unsigned int i = 0; i < lsd_peer_count(); i++)
		json_array_append_new(a, peer_conf_json(lsd_peer_at(i)));
	rc = ls_jsonv_save(a, file, err, sizeof(err));
	json_decref(a);
	if (rc < 0)
		LSD_LOG(ERR, "peers not saved: %s", err);
	return rc;
}

/* The saved list in place of the config's peers[]; 0 when there is none. */
int
lsd_peers_restore(char *err, size_t errlen)
{
	const char *file = lsd.cfg.control.peers_file;
	struct ls_jsonv jv = {.src = file, .err = err, .errlen = errlen};
	struct ls_conf_peer *peers;
	char where[32], perr[LS_ERR_LEN];
	json_t *root;
	size_t n;
	int rc;

	if (file[0] == '\0' || (access(file, F_OK) != 0 && errno == ENOENT))
		return 0;
	rc = ls_jsonv_load(&jv, sizeof(lsd.cfg.control.peers_file), &root);
	if (rc < 0)
		return rc;
	n = json_array_size(root);
	if (!json_is_array(root) || n > LS_MAX_PEERS) {
		snprintf(err, errlen, "%s: expected an array of at most %d peers", file,
			 LS_MAX_PEERS);
		json_decref(root);
		return -EINVAL;
	}
	peers = calloc(n ? n : 1, sizeof(*peers));
	if (peers == NULL) {
		json_decref(root);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		snprintf(where, sizeof(where), "[%zu]", i);
		rc = ls_config_parse_peer(json_array_get(root, i), &lsd.cfg, where, &peers[i], perr,
					  sizeof(perr));
		for (size_t j = 0; rc == 0 && j < i; j++)
			if (strcmp(peers[j].name, peers[i].name) == 0) {
				snprintf(perr, sizeof(perr), "%s.name: \"%s\" used twice", where,
					 peers[i].name);
				rc = -EINVAL;
			}
		if (rc < 0) {
			snprintf(err, errlen, "%s: %s", file, perr);
			free(peers);
			json_decref(root);
			return rc;
		}
	}
	json_decref(root);
	free(lsd.cfg.peers);
	lsd.cfg.peers = peers;
	lsd.cfg.n_peers = (unsigned int)n;
	LSD_LOG(INFO, "peers from %s (%zu), not the config's", file, n);
	return 0;
}
