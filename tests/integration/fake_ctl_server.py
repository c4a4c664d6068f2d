#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Fake lockstepd control socket for testing lockstepctl without DPDK.

It speaks the control protocol (docs/control.md): one JSON request per
line, one JSON reply per line. Replies are canned but have the real
shapes (tests/integration/test_control.py compares them, key by key, with
a real lockstepd's for every command of a non-bridge daemon), so lockstepctl's formatting, exit codes and mesh aggregation can
be tested by an unprivileged user in a second. A few extra commands
misbehave on purpose ("garbage" answers non-JSON, "sleep" answers late).

Standard library only, so it runs wherever /usr/bin/python3 does.

usage: fake_ctl_server.py --socket PATH --node NAME [--peers a,b,c]
                          [--down PEER,...]
"""

import argparse
import json
import os
import signal
import socketserver
import sys
import time

ARGS = None
PEERS = {}  # name -> addr, mutable through peer.add / peer.del


def err(code, msg):
    return {"ok": False, "error": {"code": code, "message": msg}}


def ok(result):
    return {"ok": True, "result": result}


def path_entries(peer, idx):
    """Two paths per peer; all down for peers named in --down."""
    down = peer in ARGS.down
    out = []
    for p in range(2):
        base = 10000 + 1000 * idx + 100 * p  # ns, distinct per peer/path
        out.append({
            "path": p, "sport": 49152 + p,
            "state": "down" if down else "up",
            "sent": 1000, "received": 0 if down else 999 - p,
            "lost": 1000 if down else 1 + p,
            "loss_pct": 100.0 if down else 0.1 * (1 + p),
            "rtt_p50_ns": None if down else base,
            "rtt_p99_ns": None if down else base * 2,
            "fwd_p50_ns": None if down else base // 2,
            "rev_p50_ns": None if down else base // 2 + 50,
        })
    return out


LAST = {}  # cmd -> the args of its last request (for "last")
# lockstepd's status.counters, in its order (app/lockstepd; test_control
# fails when the two differ)
COUNTERS = (
    "rx_pkts rx_reflected rx_rate_limited rx_reflector_disabled rx_stamp_short rx_stamp_ip_options "
    "rx_reflector_loop rx_reply rx_reply_short rx_reply_no_peer rx_reply_no_path "
    "rx_reply_unmatched rx_mtu_reply rx_arp rx_nd rx_l2_not_ours rx_l3_not_ours rx_udp_other_port "
    "rx_other rx_route_icmp rx_bad_source_mac rx_bad_truncated rx_bad_l3 rx_bad_checksum "
    "rx_bad_fragment rx_bad_arp rx_bad_nd rx_bad_vlan rx_bad_address tx_probes "
    "tx_replies tx_arp tx_nd tx_dropped alloc_failed probes_unresolved rl_overflow "
    "idle_sleeps tlv_unknown tlv_malformed foreign_replies sync_recs sync_dropped "
    "rl_evicted tx_trace route_dropped tx_vlan_failed tx_mtu jumbo_copied sync_filled sync_unanswerable "
    "memif_guard_waits").split()


def clock_json():
    return {"source": "sim", "now_ns": 123456789, "invariant_tsc": True,
            "calibration": {"counter": "tsc", "nominal_hz": 0, "tsc_hz": 2.4e9,
                            "tai_offset_ns": 37000000000, "refits": 1, "last_step_ppm": 0.0},
            "rx_stamps": {"trailer_mode": False, "kernel": 0, "kernel_rejected": 0,
                          "nic_rejected": 0, "trailer": 0, "trailer_missing": 0,
                          "trailer_rejected": 0},
            "tx_stamps": {"mode": "software", "lead_ns": 20000, "scheduled": 0, "no_room": 0,
                          "unfitted": 0, "unsent_seen": 0},
            "truth": {"true_ns": 123456000, "local_ns": 123456789,
                      "offset_ns": 789, "drift_ppm": 1.5},
            "sim": {"offset_ns": 789, "drift_ppm": 1.5, "wander_ns": 0.0, "seed": 7}}


def hist(base):
    return {"count": 1000, "min": base // 2, "p50": base, "p99": base * 2,
            "p999": base * 3, "max": base * 4, "mean": base + 17.5}


def handle(req):
    cmd = req.get("cmd")
    a = req.get("args") or {}
    node = ARGS.node
    if cmd == "help":
        return ok([{"cmd": c, "usage": "", "help": "fake " + c} for c in (
            "capture.start", "capture.stop", "clock", "events", "help", "links",
            "links.queues", "log.level", "path", "path.train", "paths", "peer.add", "peer.del", "peers",
            "probe.set", "route", "stats.reset", "status", "sync", "sync.points")])
    if cmd == "status":
        return ok({
            "node": node, "node_id": 7, "version": "0.1.0-fake",
            "uptime_s": 3725.5,
            "clock": clock_json(),
            "ports": [{"name": "p0", "dev": "0000:3b:00.0", "port_id": 0,
                       "mac": "02:00:00:00:00:07", "ipv4": "10.0.0.7",
                       "ipv6": None, "vlan": None, "lcore": 2, "driver": "net_ice",
                       "link_up": True,
                       "rx_pkts": 12345, "tx_pkts": 12340,
                       "rx_missed": 0, "speed_mbps": 100000, "duplex": "full",
                       "mtu": 9000, "fw_version": "4.40 0x8001b8f5 1.3429.0"}],
            "n_peers": len(PEERS), "n_paths": 2 * len(PEERS),
            "counters": dict({k: 0 for k in COUNTERS}, rx_pkts=12345, rx_reflected=5),
            "reflector": {"reflected": 5, "rate_limited": 0, "enabled": True},
            "capture": {"active": False, "file": "", "packets": 0,
                        "bytes": 0, "dropped": 0}})
    if cmd == "peers":
        out = []
        for i, (name, addr) in enumerate(PEERS.items()):
            down = name in ARGS.down
            out.append({"name": name, "addr": addr, "port": "p0",
                        "paths": 2, "interval_us": 1000, "dscp": 26, "pcp": None,
                        "state": "down" if down else "up",
                        "mac": None if down else "02:00:00:00:00:%02x" % i,
                        "sent": 2000, "received": 0 if down else 1997,
                        "lost": 2000 if down else 3,
                        "loss_pct": 100.0 if down else 0.15,
                        "rtt_p50_ns": None if down else 10000 + 1000 * i,
                        "asym_ns": 0.0})
        return ok(out)
    if cmd == "paths":
        window = a.get("window", "10s")
        if window not in ("1s", "10s", "60s"):
            return err("bad_args", "bad window")
        return ok({"node": node, "window": window, "peers": [
            {"name": name, "addr": addr, "state": "down" if name in ARGS.down else "up",
             "paths": path_entries(name, i)}
            for i, (name, addr) in enumerate(PEERS.items())]})
    if cmd == "path":
        peer = a.get("peer")
        if peer not in PEERS:
            return err("not_found", "no peer %s" % peer)
        windows = [a["window"]] if "window" in a else ["1s", "10s", "60s"]
        paths = []
        for p in range(2):
            paths.append({
                "path": p, "sport": 49152 + p, "state": "up", "consecutive_lost": 0,
                "counters": {"sent": 10, "received": 9, "lost": 1,
                             "late": 0, "reordered": 0, "duplicated": 0,
                             "unknown": 0},
                "windows": {w: {"sent": 10, "received": 9, "lost": 1,
                                "late": 0, "reordered": 0, "duplicated": 0,
                                "loss_pct": 10.0, "rtt": hist(20000),
                                "fwd": hist(10000), "rev": hist(10000)}
                            for w in windows},
                "data_paths": [p]})
        return ok({"peer": peer, "addr": PEERS[peer], "state": "up", "interval_us": 1000,
                   "paths": paths,
                   "sync": {"node_id": 2, "owd_synced": False, "peer_offset_ns": 0.0,
                            "peer_drift_ppm": 0.0, "resets": 0, "reacquired": 0,
                            "paths": [{"fit": None, "window": None, "fwd_kept": 0,
                                       "fwd_rejected": 0, "rev_kept": 0, "rev_rejected": 0}
                                      for _ in range(2)]}})
    if cmd == "peer.add":
        if "name" not in a or "addr" not in a:
            return err("bad_args", "name and addr are required")
        if a["name"] in PEERS:
            return err("exists", "peer %s already exists" % a["name"])
        if "port" in a and not isinstance(a["port"], str):
            return err("bad_args", "port: a port's name (string)")
        PEERS[a["name"]] = a["addr"]
        LAST["peer.add"] = a  # what lockstepctl sent (read back by "last")
        # the daemon's reply, with what was sent in it (the test reads it)
        return ok({"name": a["name"], "addr": a["addr"], "paths": a.get("paths", 2),
                   "interval_us": a.get("interval_us", 1000), "saved": True})
    if cmd == "peer.del":
        if a.get("name") not in PEERS:
            return err("not_found", "no peer %s" % a.get("name"))
        del PEERS[a["name"]]
        return ok({"name": a["name"], "saved": True})
    if cmd == "probe.set":
        if "peer" in a and a["peer"] not in PEERS:
            return err("not_found", "no peer %s" % a["peer"])
        LAST["probe.set"] = a  # what lockstepctl sent (read back by "last")
        return ok({"updated": 1 if "peer" in a else len(PEERS), "saved": True})
    if cmd == "last":  # not a daemon command: the test's window into the fake
        return ok(LAST.get(a.get("cmd"), None))
    if cmd == "stats.reset":
        return ok({"reset": 2 * len(PEERS)})
    if cmd == "clock":
        return ok(dict(clock_json(), tsc=1000, truth_at={
            "tsc": 1000, "true_ns": 123456000, "local_ns": 123456789, "offset_ns": 789.0}))
    if cmd == "sync":
        return ok({"enabled": True,
                   "state": {"node_id": 7, "status": "synced", "ref_id": 1, "ref_seq": 3, "hops": 1,
                             "theta_ns": 789.0, "phi_ppm": 1.5, "sigma_ns": 12.0,
                             "phi_sigma_ppm": 0.01, "age_ms": 20.5, "bound_sigma_ns": 40.0,
                             "cluster_ns": 0.0, "cluster_n": 0, "wander_obs_ns": 0.0,
                             "lag_ms": 250.0},
                   "reading": {"tsc": 1000, "local_ns": 123456789, "fleet_ns": 123456000,
                               "earliest_ns": 123455960, "latest_ns": 123456040, "half_ns": 40.0},
                   "counters": {"records": 100, "steps": 2, "net_steps": 7, "resets": 0,
                                "shm_updates": 6},
                   "truth": {"tsc": 1000, "true_ns": 123456000, "local_ns": 123456789,
                             "offset_ns": 789.0},
                   "chrony": None,
                   "neighbors": [], "step_tsc": 900})
    if cmd == "sync.points":
        if a.get("peer") not in PEERS:
            return err("not_found", "no peer %s" % a.get("peer"))
        return ok({"path": a.get("path", 0), "window_ns": 2000000000, "fixed_drift_ppm": None,
                   "fit": None, "window": None, "probes": []})
    if cmd == "log.level":
        return ok({"level": a.get("level", "info")})
    if cmd == "capture.start":
        LAST["capture.start"] = a
        return ok({"file": "/var/lib/lockstep/capture/" + a.get("file", "")})
    if cmd == "events":
        return ok({"events": [{"seq": 1, "time_ns": 1796000000000000000, "fleet_ns": None,
                               "node": node, "type": "clock.state", "severity": "info",
                               "status": "reference", "was": "start", "ref_id": 7,
                               "was_ref_id": 0}],
                   "next": 1, "missed": 0, "counts": {"clock.state": 1}, "file": None})
    if cmd == "links":
        return ok({"suspects": [], "weak": [], "paths_down_traced": 0, "unexplained": 0,
                   "links_known": 0})
    if cmd == "links.queues":
        return ok({"links": [], "at_utc_ns": 0, "span_ms": 0.0, "paths": 0, "estimates": 0})
    if cmd == "route":
        return ok({"trace": 0, "peer": a.get("peer", ""), "path": a.get("path", 0),
                   "sport": 49152, "dport": 862, "family": "ipv4", "state": "done",
                   "started_ns": 1796000000000000000, "max_ttl": 8,
                   "hops": [{"ttl": 1, "addr": "10.255.1.1", "rtt_us": 12.5,
                             "icmp": "time_exceeded"}], "complete": True})
    if cmd == "path.train":
        # every path faster than the stamps resolve, as on the lab's 10 Gb/s links
        return ok({"peer": a.get("peer", ""), "addr": "10.0.0.9", "family": "ipv4",
                   "state": "done", "started_ns": 1796000000000000000, "size": 1500,
                   "count": 32, "trains": 3, "frame_bytes": 1518, "resolution_mbps": 470.7,
                   "resized": 0,
                   "paths": [{"path": k, "sport": 49152 + k, "sent": 96, "back": 96,
                              "fwd_mbps": None, "rtt_mbps": None, "fwd_unresolved": True,
                              "rtt_unresolved": True} for k in range(2)]})
    if cmd == "capture.stop":
        return ok({"file": "/tmp/x.pcap", "packets": 10, "bytes": 1280,
                   "dropped": 0})
    if cmd == "sleep":
        time.sleep(float(a.get("s", 3)))
        return ok(None)
    return err("unknown_command", "unknown command \"%s\"" % cmd)


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        for raw in self.rfile:
            line = raw.strip()
            if not line:
                continue
            try:
                req = json.loads(line)
            except ValueError:
                rep = err("bad_json", "not JSON")
            else:
                if not isinstance(req, dict) or \
                        not isinstance(req.get("cmd"), str):
                    rep = err("bad_request", "not a request")
                elif req["cmd"] == "garbage":
                    self.wfile.write(b"this is not json\n")
                    self.wfile.flush()
                    continue
                else:
                    rep = handle(req)
            self.wfile.write(json.dumps(rep).encode() + b"\n")
            self.wfile.flush()


class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--socket", required=True)
    ap.add_argument("--node", required=True)
    ap.add_argument("--peers", default="")
    ap.add_argument("--down", default="")
    ARGS = ap.parse_args()
    ARGS.down = [p for p in ARGS.down.split(",") if p]
    for i, p in enumerate(x for x in ARGS.peers.split(",") if x):
        PEERS[p] = "10.0.0.%d" % (i + 1)

    try:
        os.unlink(ARGS.socket)
    except FileNotFoundError:
        pass
    srv = Server(ARGS.socket, Handler)

    def stop(signum, frame):
        try:
            os.unlink(ARGS.socket)
        except OSError:
            pass
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    srv.serve_forever()


if __name__ == "__main__":
    main()
