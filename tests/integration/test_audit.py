#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Integration: `lockstepctl audit` over a fleet on the emulator, healthy and
with faults injected (issue 30 item 5).

Four lockstepd on a 2-leaf, 4-spine lockstep-fabric (two hosts per leaf),
ports at MTU 9000, 8 paths per peer, IPv4 and IPv6 peers.

1. Healthy: the audit (sockets from a fleet file) passes every item and
   exits 0; every pair's padded probes of 1500, 4200 and 9000 bytes came
   back on every path.
2. Faults, all at once: leaf2-spine1 carries at most 4000-byte packets
   (`link.set mtu`), leaf1-spine2 is down with routing held (a dead path
   for whatever hashes onto it), and h4 restarted with a clock-sync step of
   60 s (unsynced). The audit (sockets as -s) exits 6 and the judge is the
   emulator's own `route` for every probe's 5-tuple, forward and back:
   - reach fails for exactly the pairs with a path over leaf1-spine2, and
     names exactly those paths;
   - mtu: every pair's failed sizes and paths are exactly what the routes
     say (1500: the dead paths; 4200 and 9000: those and the paths over
     leaf2-spine1), and the emulator counted MTU drops on that link;
   - clock fails for h4 alone; links and firmware pass.
   - capacity (packet trains, path.train): leaf2-spine3 slowed to 20 Mb/s
     both ways; a pair's paths that cross it fail (each measured near
     0.02 Gb/s) when they are not the pair's majority (the judge compares a
     path with its pair's median), dead paths fail (nothing back), and with
     --min-gbps 1 every path over the slow link fails whatever its pair.
   The table run names the failures and exits 6; bad options exit 2.
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
DEAD, SMALL, SLOW = "leaf1-spine2", "leaf2-spine1", "leaf2-spine3"
SIZES = (1500, 4200, 9000)
CTL = os.path.join(lslab.BUILD, "tools", "lockstepctl", "lockstepctl")
TOPO = lslab.leaf_spine(2, 4, 2, link={"delay_ns": 20000, "rate_bps": 10_000_000_000},
                        host_link={"delay_ns": 5000})
HOSTS = [h["name"] for h in TOPO["hosts"]]


def audit(args, timeout=60):
    """lockstepctl audit ARGS: (exit status, stdout, seconds)."""
    t0 = time.time()
    p = subprocess.run([CTL, "audit"] + args, capture_output=True, text=True, timeout=timeout)
    if p.stderr:
        print("# audit stderr: %s" % p.stderr.strip().replace("\n", " | "), flush=True)
    return p.returncode, p.stdout, time.time() - t0


def item(rep, name):
    return next(i for i in rep["items"] if i["item"] == name)


def crossing(lab):
    """For every (node, peer, path): the links its probe and reply cross, and
    the links of the probe's way alone (what a trace sees), from the
    emulator's route with the same 5-tuple and flow label."""
    out, fwd_of = {}, {}
    for i, src in enumerate(HOSTS, 1):
        for dst in HOSTS:
            if dst == src:
                continue
            for fam, sfx in (("ipv4", ""), ("ipv6", "v6")):
                for k in range(PATHS):
                    fl = BASE + k if fam == "ipv6" else 0
                    fwd = lslab.call(lab.fab, "route", {"src": src, "dst": dst, "sport": BASE + k,
                                                        "dport": 862, "family": fam,
                                                        "flow_label": fl})
                    rev = lslab.call(lab.fab, "route", {"src": dst, "dst": src, "sport": 862,
                                                        "dport": BASE + k, "family": fam,
                                                        "flow_label": fl})
                    out[(src, dst + sfx, k)] = {x["link"] for x in fwd + rev}
                    fwd_of[(src, dst + sfx, k)] = tuple(x["link"] for x in fwd)
    return out, fwd_of


def settled(lab):
    """Every node synced to one reference, and every path of every peer up."""
    socks = [lab.sock(i) for i in range(1, len(HOSTS) + 1)]
    if not lslab.all_synced(socks):
        return False
    try:
        return all(q["state"] == "up" for s in socks
                   for p in lslab.call(s, "paths", {"window": "1s"})["peers"] for q in p["paths"])
    except (OSError, lslab.CtlError):
        return False


def fresh_windows(lab):
    """Zero every node's windows, so the audit's loss is what came after."""
    for i in range(1, len(HOSTS) + 1):
        lslab.call(lab.sock(i), "stats.reset")
    time.sleep(2)


def healthy(c, lab, tmp, fwd_of):
    # relative names: from the fleet file's directory
    fleet = os.path.join(tmp, "fleet")
    with open(fleet, "w") as f:
        f.write("# the lab's daemons\n\n" + "".join(
            "%s  # h%d\n" % (os.path.relpath(lab.sock(i), tmp), i) for i in range(1, len(HOSTS) + 1)))
    rc, out, secs = audit(["--fleet", fleet, "--json"])
    rep = json.loads(out)
    bad = ["%s %s: %s" % (i["item"], r["node"], r["detail"]) for i in rep["items"]
           for r in i.get("rows", []) if not r["pass"]]
    print("# healthy audit: %.1f s, exit %d" % (secs, rc), flush=True)
    c.check(rc == 0 and rep["pass"] and rep["daemons"] == len(HOSTS) and not bad,
            "healthy fleet: every item passes, exit 0 (%s)" % ("; ".join(bad[:6]) or "none failed"))
    mtu = item(rep, "mtu")["rows"]
    c.check(len(mtu) == len(HOSTS) * (len(HOSTS) - 1) * 2 and
            all(r["largest_ok"] == 9000 and r["failed"] == [] for r in mtu),
            "1500, 4200 and 9000-byte probes came back on every path of all %d pairs" % len(mtu))
    # distinct router lists: as many as the emulator's routes of the 8 paths take
    paths = item(rep, "paths")["rows"]
    want = {(r["node"], r["peer"]): len({fwd_of[(r["node"], r["peer"], k)] for k in range(PATHS)})
            for r in paths}
    got = {(r["node"], r["peer"]): r["distinct"] for r in paths}
    c.check(all(r["traced"] == PATHS for r in paths) and got == want,
            "every path traced; distinct router lists per pair as the emulator routes them "
            "(%s; differ: %s)" % (sorted(set(got.values())),
                                   [(p, got[p], want[p]) for p in got if got[p] != want[p]][:3]))
    return secs


def inject(lab):
    """h4 unsynced (restarted with a 60 s sync step), a link at MTU 4000, a link down."""
    cfg = os.path.join(lab.dir, "n4.json")
    with open(cfg) as f:
        conf = json.load(f)
    conf.setdefault("sync", {})["interval_ms"] = 60000
    with open(cfg, "w") as f:
        json.dump(conf, f)
    subprocess.run([lslab.LAB, "restart-node", "--dir", lab.dir, "--node", "4",
                    "--build", lslab.BUILD], check=True, stdout=subprocess.DEVNULL)
    ok = lslab.wait_until(lambda: all(q["state"] == "up" for i in range(1, 5)
                                      for p in lslab.call(lab.sock(i), "paths", {"window": "1s"})
                                      ["peers"] for q in p["paths"]), 20)
    lslab.call(lab.fab, "routing.set", {"convergence_ms": 600000})
    lslab.call(lab.fab, "link.set", {"link": SMALL, "mtu": 4000})
    lslab.call(lab.fab, "link.set", {"link": DEAD, "up": False})
    lslab.call(lab.fab, "link.set", {"link": SLOW, "rate_bps": 2e7})
    fresh_windows(lab)
    return ok


def faulty(c, lab, routes):
    socks = sum([["-s", lab.sock(i)] for i in range(1, len(HOSTS) + 1)], [])
    rc, out, secs = audit(socks + ["--json"])
    rep = json.loads(out)
    print("# faulty audit: %.1f s, exit %d" % (secs, rc), flush=True)
    c.check(rc == 6 and rep["pass"] is False, "with the faults the audit fails, exit 6 (%d)" % rc)
    dead = {}
    small = {}
    for (node, peer, k), links in routes.items():
        dead.setdefault((node, peer), set())
        small.setdefault((node, peer), set())
        if DEAD in links:
            dead[(node, peer)].add(k)
        elif SMALL in links:
            small[(node, peer)].add(k)
    # reach: exactly the pairs with a dead path, naming exactly those paths
    rows = {(r["node"], r["peer"]): r for r in item(rep, "reach")["rows"]}
    want = {p for p, d in dead.items() if d}
    got = {p for p, r in rows.items() if not r["pass"]}
    named = all(set(rows[p]["down"]) | set(rows[p]["lossy"]) == dead[p] for p in rows)
    c.check(got == want and named and len(want) > 0,
            "reach fails exactly the %d pairs with a path over %s, naming those paths "
            "(extra %s, missing %s)" % (len(want), DEAD, sorted(got - want)[:3],
                                        sorted(want - got)[:3]))
    # mtu: per pair, the sizes and paths that failed are what the routes say
    wrong = []
    for r in item(rep, "mtu")["rows"]:
        p = (r["node"], r["peer"])
        exp = {s: dead[p] | (small[p] if s > 4000 else set()) for s in SIZES}
        gotf = {f["size"]: set(f["paths"]) for f in r.get("failed", [])}
        if gotf != {s: v for s, v in exp.items() if v} or r["pass"] != (not any(exp.values())):
            wrong.append((p, {s: sorted(v) for s, v in gotf.items()},
                          {s: sorted(v) for s, v in exp.items() if v}))
    n_small = sum(1 for p in small if small[p])
    c.check(not wrong and n_small > 0,
            "mtu: every pair's failed sizes and paths match the routes (%d pairs have paths "
            "over %s at MTU 4000; wrong: %s)" % (n_small, SMALL, wrong[:2]))
    drops = sum(x["counters"]["drop_mtu"] for x in lslab.call(lab.fab, "links")
                if x["link"] == SMALL)
    c.check(drops > 0, "the emulator dropped %d packets over %s's MTU" % (drops, SMALL))
    clock = {r["node"]: r for r in item(rep, "clock")["rows"]}
    c.check([n for n, r in clock.items() if not r["pass"]] == ["h4"] and
            "unsynced" in clock["h4"]["detail"],
            "clock fails h4 alone: %s" % clock["h4"]["detail"])
    c.check(all(item(rep, x)["pass"] for x in ("daemons", "links", "firmware")),
            "daemons, links and firmware still pass")
    capacity(c, lab, socks, rep, routes)
    return secs


def capacity(c, lab, socks, rep, routes):
    """The capacity item against the routes: dead paths fail; paths over SLOW
    fail where they are not their pair's majority (or always, with a floor)."""
    dead, slow, fast = {}, {}, {}
    for (node, peer, k), links in routes.items():
        for d in (dead, slow, fast):
            d.setdefault((node, peer), set())
        (dead if DEAD in links else slow if SLOW in links else fast)[(node, peer)].add(k)
    rows = {(r["node"], r["peer"]): r for r in item(rep, "capacity")["rows"]}
    want = {p: dead[p] | (slow[p] if len(fast[p]) >= len(slow[p]) else set()) for p in rows}
    wrong = [(p, rows[p]["failed"], sorted(want[p]), rows[p]["detail"],
              [(k, "dead" if k in dead[p] else "slow" if k in slow[p] else "fast", q["rtt_mbps"],
                q["rtt_unresolved"], q["back"]) for k, q in enumerate(rows[p].get("paths", []))])
             for p in rows if set(rows[p]["failed"]) != want[p] or rows[p]["pass"] != (not want[p])]
    meas = [q["rtt_mbps"] for p in rows for k, q in enumerate(rows[p].get("paths", []))
            if k in slow[p] and q["rtt_mbps"] is not None]
    c.check(not wrong and meas,
            "capacity: every pair fails exactly its dead paths and, where they are not its "
            "majority, its paths over %s (20 Mb/s; measured %s Mb/s; %d pairs have some; "
            "wrong: %s)" % (SLOW, "%.0f-%.0f" % (min(meas), max(meas)) if meas else None,
                            sum(1 for p in slow if slow[p]), wrong[:2]))
    # the floor on two nodes (every pair of theirs), not four: CI's time
    skip = "reach,mtu,paths,links,firmware,clock"
    rc, out, secs = audit(socks[:4] + ["--json", "--skip", skip, "--min-gbps", "1"])
    rows = {(r["node"], r["peer"]): r for r in item(json.loads(out), "capacity")["rows"]}
    wrong = [(p, rows[p]["failed"], sorted(dead[p] | slow[p]),
              [(k, q["rtt_mbps"], q["rtt_unresolved"], q["back"])
               for k, q in enumerate(rows[p].get("paths", []))]) for p in rows
             if set(rows[p]["failed"]) != dead[p] | slow[p]]
    c.check(rc == 6 and not wrong,
            "capacity --min-gbps 1 (h1, h2): every path over %s or %s fails, no other (%.1f s; "
            "wrong: %s)" % (SLOW, DEAD, secs, wrong[:2]))


def table_and_usage(c, lab):
    # capacity skipped too: its trains into dead paths wait them out (9 s)
    rc, out, _ = audit(["--dir", lab.dir, "--skip", "mtu,paths,capacity"])
    print("# " + out.replace("\n", "\n# "), flush=True)
    c.check(rc == 6 and "audit of 4 daemons: FAIL" in out and "reach     FAIL" in out and
            "mtu       skipped" in out and "capacity  skipped" in out and "not on fleet time: sync unsynced" in out,
            "the table names the failing items and h4's clock, exit 6")
    for args in (["--mtu-sizes", "1500,x"], ["--skip", "daemons"], ["--max-loss", "101"],
                 ["--window", "5s"], ["--min-paths", "0"], ["--capacity-frac", "2"],
                 ["--min-gbps", "-1"]):
        rc, _, _ = audit(["--dir", lab.dir] + args)
        c.check(rc == 2, "audit %s: usage error, exit 2 (%d)" % (" ".join(args), rc))


def main():
    lslab.exit_on_signals()
    lslab.need_root()
    c = lslab.Checks("audit")
    tmp = tempfile.mkdtemp(prefix="ls-audit-")
    topo_file, extra = os.path.join(tmp, "topo.json"), os.path.join(tmp, "extra.json")
    with open(topo_file, "w") as f:
        json.dump(TOPO, f)
    with open(extra, "w") as f:
        json.dump({"*": {"port": {"mtu": 9000}}}, f)
    t0 = time.time()
    with lslab.FabricLab(topo_file, "audit", ["--interval-us", "100000", "--paths", str(PATHS),
                                             "--extra", extra]) as lab:
        c.check(lslab.wait_until(lambda: settled(lab), 30),
                "the fleet synced, every path up (%.1f s)" % (time.time() - t0))
        routes, fwd_of = crossing(lab)
        fresh_windows(lab)
        a = healthy(c, lab, tmp, fwd_of)
        c.check(inject(lab), "h4 restarted unsynced and every path came back")
        b = faulty(c, lab, routes)
        table_and_usage(c, lab)
        print("# audits took %.1f and %.1f s; the test %.1f s" % (a, b, time.time() - t0),
              flush=True)
    c.finish()


if __name__ == "__main__":
    main()
