#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Integration: path discovery (`route`) against the emulator's own routes.

Four lockstepd on a 2-leaf, 4-spine emulator (two hosts per leaf), 8 paths
per peer. From h1, for every peer (same leaf and across, IPv4 and IPv6),
every path and both destination ports (862: the probes' 5-tuple; 4791: the
data's), lockstepd traces the path with TTL-limited probes and names the
routers that answered. The judge is the emulator's `route` for the same
5-tuple (its forwarding's own hashes): the switches must be the same, in
order, every trace complete (the peer reached right after the last router).

Also printed: how many paths reach the peer over a spine other than the one
the data with the same entropy takes (the fabric hashes the destination
port: why the data's own traces matter, docs/datapath.md).
"""
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "lab"))
import lslab  # noqa: E402

PATHS = 8
BASE = 49152
TOPO = lslab.leaf_spine(2, 4, 2, link={"delay_ns": 20000, "rate_bps": 10_000_000_000},
                        host_link={"delay_ns": 5000})
HOSTS = [h["name"] for h in TOPO["hosts"]]
ADDR_OF = {}
for sw in TOPO["switches"]:
    ADDR_OF[sw["ipv4"]] = sw["name"]
    ADDR_OF[sw["ipv6"]] = sw["name"]


def switches_on(links, src):
    """The switches a list of (link, dir) crosses, in order, from host src."""
    out = []
    for x in links:
        a, b = x["link"].split("-", 1)
        nxt = b if x["dir"] == "ab" else a
        if nxt not in HOSTS:
            out.append(nxt)
    return out


def trace(sock, peer, path, dport):
    r = lslab.call(sock, "route", {"peer": peer, "path": path, "dport": dport, "fresh": True})
    return r["trace"]


def result(sock, peer, path, dport):
    end = time.time() + 5
    while time.time() < end:
        r = lslab.call(sock, "route", {"peer": peer, "path": path, "dport": dport})
        if r["state"] == "done":
            return r
        time.sleep(0.1)
    return r


def leaf_groups(c, lab, tmp):
    """lockstepctl mesh --group-by route: each node's group is the router
    that answers its TTL 1, which must be its leaf in the topology."""
    ctl = os.path.join(lslab.BUILD, "tools", "lockstepctl", "lockstepctl")
    socks = sum([["-s", lab.sock(i + 1)] for i in range(len(HOSTS))], [])
    svg = os.path.join(tmp, "groups.svg")
    out = subprocess.run([ctl] + socks + ["mesh", "--group-by", "route", "--color", "never",
                                          "--svg", svg], capture_output=True, text=True,
                         timeout=60)
    rows = [ln.split() for ln in out.stdout.splitlines()[2:] if ln.strip()][1:]
    got = {r[1]: ADDR_OF.get(r[0], r[0]) for r in rows if len(r) > 2}
    want = {h["name"]: h["leaf"] for h in TOPO["hosts"]}
    order = [r[1] for r in rows]
    c.check(out.returncode == 0 and got == want and
            order == sorted(order, key=lambda n: (want[n], n)),
            "mesh --group-by route: each node under its leaf, rows by leaf (%s; want %s)"
            % (got, want))
    rs = subprocess.run(["rsvg-convert", "-o", svg + ".png", svg], capture_output=True)
    with open(svg) as f:
        lines = f.read().count('class="group"')
    # rows: leaf1 | leaf2; columns: leaf1 | leaf2 | the IPv6 peers, which
    # are no node's name (group unknown)
    c.check(rs.returncode == 0 and lines == 3,
            "the SVG renders with a line between the leaves' rows and columns and before "
            "the ungrouped IPv6 peers (%d lines, want 3)" % lines)


def main():
    lslab.exit_on_signals()
    lslab.need_root()
    c = lslab.Checks("route")
    tmp = tempfile.mkdtemp(prefix="ls-route-")
    topo_file = os.path.join(tmp, "topo.json")
    with open(topo_file, "w") as f:
        json.dump(TOPO, f)
    with lslab.FabricLab(topo_file, "route", ["--interval-us", "100000",
                                             "--paths", str(PATHS)]) as lab:
        s1 = lab.sock(1)

        def resolved():
            try:
                return all(q["received"] >= 1 for p in lslab.call(s1, "paths", {"window": "10s"})["peers"]
                           for q in p["paths"])
            except (OSError, lslab.CtlError):
                return False
        c.check(lslab.wait_until(resolved, 40), "h1 reaches every peer on every path")
        peers = [(o + sfx, o, fam) for o in HOSTS if o != "h1"
                 for sfx, fam in (("", "ipv4"), ("v6", "ipv6"))]
        bad, n_ok, n_all, differ = [], 0, 0, 0
        for peer, host, fam in peers:
            spine_of = {}
            for dport in (862, 4791):
                for k in range(PATHS):
                    trace(s1, peer, k, dport)
                for k in range(PATHS):
                    r = result(s1, peer, k, dport)
                    got = [ADDR_OF.get(h["addr"], h["addr"]) if h["addr"] else None
                           for h in r["hops"]]
                    sport = BASE + k
                    want = switches_on(lslab.call(lab.fab, "route", {
                        "src": "h1", "dst": host, "sport": sport, "dport": dport,
                        "family": fam, "flow_label": sport if fam == "ipv6" else 0}), "h1")
                    n_all += 1
                    if got == want and r["complete"] and all(h.get("rtt_us", 0) > 0 for h in r["hops"]):
                        n_ok += 1
                    else:
                        bad.append((peer, k, dport, got, want, r["complete"]))
                    spine_of[(k, dport)] = [x for x in want if x.startswith("spine")]
            differ += sum(1 for k in range(PATHS) if spine_of[(k, 862)] != spine_of[(k, 4791)])
        print("# %d of %d traces (peers x %d paths x ports 862, 4791) named the emulator's "
              "switches in order; %d paths of the cross-leaf peers take another spine for "
              "the data (4791) than for the probes (862)" % (n_ok, n_all, PATHS, differ),
              flush=True)
        for b in bad[:10]:
            print("#   %s path %d dport %d: lockstepd %s, emulator %s, complete %s" % b, flush=True)
        c.check(n_ok == n_all, "every trace matches the emulator's route (%d/%d)" % (n_ok, n_all))
        # the spines hashed over: more than one across the 8 paths
        r = [result(s1, "h3", k, 862)["hops"] for k in range(PATHS)]
        spines = {ADDR_OF.get(h[1]["addr"]) for h in r if len(h) > 1 and h[1]["addr"]}
        c.check(len(spines) >= 2, "h1 -> h3's 8 paths cross %d spines (%s)" % (
            len(spines), sorted(s for s in spines if s)))
        # the CLI, traceroute style: a line per router, the emulator's addresses
        out = subprocess.run([os.path.join(lslab.BUILD, "tools", "lockstepctl", "lockstepctl"),
                              "-s", s1, "route", "h3", "2", "--fresh"], capture_output=True,
                             text=True, timeout=30)
        want = switches_on(lslab.call(lab.fab, "route", {
            "src": "h1", "dst": "h3", "sport": BASE + 2, "dport": 862}), "h1")
        addr = {v: k for k, v in ADDR_OF.items() if ":" not in k}
        lines = [ln.split() for ln in out.stdout.splitlines()[1:]]
        c.check(out.returncode == 0 and [ln[1] for ln in lines] == [addr[x] for x in want] and
                "complete" in out.stdout.splitlines()[0],
                "lockstepctl route h3 2: %s" % out.stdout.replace("\n", " | "))
        # bad arguments: an error reply, the connection stays usable
        for args, code in (({"peer": "h3", "path": PATHS}, "bad_args"),
                           ({"peer": "nobody"}, "not_found"),
                           ({"peer": "h3", "max_ttl": 40}, "bad_args"),
                           ({"peer": "h3", "fresh": 1}, "bad_args")):
            try:
                lslab.call(s1, "route", args)
                c.check(False, "route %s is refused" % args)
            except lslab.CtlError as e:
                c.check(code in str(e), "route %s: %s" % (args, e))
        leaf_groups(c, lab, tmp)
        st = lslab.call(s1, "status")["counters"]
        c.check(st["tx_trace"] >= n_all and st["rx_route_icmp"] > 0 and st["route_dropped"] == 0,
                "counters: %d probes sent, %d answers, %d dropped" % (
                    st["tx_trace"], st["rx_route_icmp"], st["route_dropped"]))
    c.finish()


if __name__ == "__main__":
    main()
