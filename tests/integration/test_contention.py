#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Integration: contention avoidance. Two collective jobs whose flows collide
on a spine link under hashed ECMP; each sender's lockstepd sees the link's
queue build (its probes' forward one-way delay on the paths that cross it)
and moves part of its own flows to a cool path. Judged by the jobs' own
completion times and by the emulator's routes (truth: which flow crossed
which spine).

  job A: lockstep-load TX -> [host] lockstepd h1 [fab] -> h1 - leaf1 = spine1..4 = leaf2 - h3 (sink)
  job B: lockstep-load TX -> [host] lockstepd h2 [fab] -> h2 - leaf1 = spine1..4 = leaf2 - h4 (sink)

Each job is FLOWS RoCEv2 flows (the QPs of one ring step between two
hosts) playing phases: every flow sends PHASE_BYTES, and the next phase
starts when the last flow's last frame has arrived (lockstep-load
--phase-bytes: the sink and the sender are one process). Each flow runs at
0.85 of a spine link; the host links carry two. Each lockstepd spreads its
flows over its 16 paths (entropy values), the leaf hashes those onto four
spines: two flows on one spine uplink make it the bottleneck of both jobs.
The sinks reflect STAMP so each lockstepd probes its job's destination on
the same 16 paths, and its route map pairs probe paths with data paths.

Each seed runs twice on the same placement (the emulator's hash seeds and
the flows are the seed's): ECMP alone (bridge.balance off), then with
contention avoidance. Printed per seed: each job's JCT both ways, where
the flows were (spine per flow, truth), the moves (flows.rebalanced).

Time scale: as cc-fabric, 1000 times slower (10 Mb/s spine links for
10 Gb/s, 1 ms link delays for 1 us, probes every 20 ms for 20 us, the
balance's timers likewise); bytes unchanged.

Checked (CI), on the first of seeds 1.. whose ECMP placement collides:
  - with balance, moves are logged as flows.rebalanced and the counters
    agree; at the end the busiest spine uplink carries no more flows than
    with ECMP alone (truth; printed: whether it is one flow to a spine);
  - the jobs finish at least 1.1x sooner than with ECMP alone (mean JCT;
    4 phases, the first before any move weighs more than in the bench).
With --bench SEED...: issue 29's table over the seeds given (median JCT
>= 1.2x better than ECMP alone, never worse than 0.98x), judged over all
seeds, colliding or not (tools/bench/bench_contention.sh runs 20).

Also checked (CI, the same seed), the delay mode's reading of the mesh
(run_delay): the flows sharing a spine uplink are cut, those alone are not.

  test_contention.py [--bench] [--verbose] [SEED ...]    (verbose: every move)
  test_contention.py --delay [SEED ...]                  (the delay-mode check only)
"""
import json
import os
import random
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "lab"))
import lslab  # noqa: E402

SCALE = 1000
LINK = 10e9 / SCALE                       # a spine link
FLOW_RATE = int(0.85 * LINK)
FLOWS = 2                                 # per job
SPINES = 4
PATHS = 16
BASE = 49152
FRAME = 1498
PHASE_BYTES = int(os.environ.get("CT_PHASE_BYTES", "500000"))
PHASES = int(os.environ.get("CT_PHASES", "6"))
WARM_MS = 5000                            # probes learn floors, routes pair paths
PROBE_US = 20 * SCALE
SIM_EPOCH_NS = 1700000000000000000
CPUS = {"fabric": "0@(0,1)", "lsd": "0@(0,1)", "load": "0@(0,1)"}
VERBOSE = "--verbose" in sys.argv
JOBS = (("A", "h1", "10.1.0.1", "02:00:00:00:0a:01", "h3", "10.2.0.1"),
        ("B", "h2", "10.1.0.2", "02:00:00:00:0a:02", "h4", "10.2.0.2"))


def topo(seed):
    rnd = random.Random(seed)
    link = {"rate_bps": int(LINK), "delay_ns": 1000 * SCALE, "buffer_bytes": 4_000_000}
    host = dict(link, rate_bps=int(2 * LINK))
    t = lslab.leaf_spine(2, SPINES, 2, link, host, ipv6=False)
    for s in t["switches"]:
        s["seed"] = rnd.randrange(1 << 32)
    return t


def lsd_config(tmp, job, mode):
    """mode: "ecmp", "balance", or "delay" (the delay mode on, balance off)."""
    _, host, ip, mac, sink, dst = job
    balance = mode == "balance"
    slices = []
    if mode == "delay":
        # at the real scale: a 10 us target, a change per 20 us at most,
        # the increase 1/1000 of the link per change (docs/cc.md)
        slices = [{"name": "rdma", "match": {"roce": True}, "flow_bps": FLOW_RATE,
                   "cc": {"mode": "delay", "target_us": 10 * SCALE,
                          "interval_us": 20 * SCALE, "ai_bps": int(LINK / 1000),
                          "min_bps": int(1e6 / SCALE)}}]
    ports = lslab.bridge_ports(tmp, host, mac, ip + "/24", host + ".memif")
    ports[1]["gateway4"] = "10.1.0.254"     # leaf1 answers ARP: route tracing
    return {
        "node": {"name": host, "id": int(host[1:])},
        "ports": ports,
        "probe": {"paths": PATHS, "src_port_base": BASE, "interval_us": PROBE_US,
                  # a probe behind a deep queue is late, not lost (2 ms)
                  "loss_timeout_us": 100 * PROBE_US},
        "peers": [{"name": sink, "addr": dst, "port": "fab"}],
        "route": {"traces_per_s": 50},
        "idle": {"backoff": True, "after_polls": 64, "sleep_us": 50},
        "bridge": {"host_port": "host", "fabric_port": "fab", "link_bps": int(2 * LINK),
                   "max_flows": 4096, "policy_file": "",
                   "failover": {"enabled": False},
                   # at the real scale: hot at 20 us of building queue; the
                   # timers follow the probes (a round per half interval, a
                   # jitter and settling of ten: 200 us)
                   "balance": {"enabled": balance, "hot_us": 20 * SCALE},
                   "policy": {"slices": slices,
                              "flows": [{"name": "rdma", "match": {"roce": True},
                                         "path": {"mode": "spread",
                                                  "paths": list(range(PATHS))}}]}},
        "control": {"socket": os.path.join(tmp, host + ".sock"), "peers_file": ""},
    }


def spine_of(fsock, src, dst, path):
    r = lslab.call(fsock, "route", {"src": src, "dst": dst, "sport": BASE + path,
                                    "dport": 4791, "proto": 17})
    for x in r:
        if x["link"].startswith("leaf1-spine"):
            return x["link"][len("leaf1-"):]
    return None


def placement(fsock, socks):
    """{(job, flow): (path, spine)} from each lockstepd's flows and the
    emulator's routes."""
    out = {}
    for job, sock in zip(JOBS, socks):
        for f in lslab.call(sock, "flows", {"top": 100, "dir": "host"})["top"]:
            if f["kind"] == "roce" and f["path"] is not None:
                out[(job[0], f["qp_label"] - 256)] = (f["path"],
                                                      spine_of(fsock, job[1], job[4], f["path"]))
    return out


def collides(pl):
    spines = [s for _, s in pl.values()]
    return len(spines) != len(set(spines))


def most(pl):
    """Flows on the busiest spine uplink."""
    spines = [s for _, s in pl.values()]
    return max(spines.count(s) for s in spines) if spines else 0


def wait_paired(socks, timeout):
    """Whether every data path of each lockstepd's destination is paired
    with a probe path (its route map) within timeout s."""
    return lslab.wait_until(lambda: all(
        len({d for p in lslab.call(s, "path", {"peer": j[4]})["paths"]
             for d in p.get("data_paths", [])}) == PATHS for s, j in zip(socks, JOBS)),
        timeout, step=0.5)


def start(c, rig, name, seed, mode, load_args):
    """The emulator, a lockstepd per job and the jobs' generators, started:
    (sockets, reports, generators, paired), or None. paired (delay mode
    only, else None): the routes paired data and probe paths before the
    generators started."""
    if not c.check(rig.fabric(topo(seed), ["--idle-sleep-us", "50", "--sample-us", "0"]),
                   "%s: emulator up" % name):
        return None
    socks = []
    for job in JOBS:
        s = rig.lockstepd(lsd_config(rig.tmp, job, mode))
        if not c.check(s is not None, "%s: lockstepd %s up" % (name, job[1])):
            return None
        socks.append(s)
    # the delay mode reads data path k from the probe paths paired with
    # it: paired before the flows start, or it reads probe path k
    paired = wait_paired(socks, 15) if mode == "delay" else None
    reports = {}
    loads = []
    for job in JOBS:
        reports[job[0]] = os.path.join(rig.tmp, "report-%s.json" % job[0])
        loads.append(rig.load(job[4], [
            "--flows", str(FLOWS), "--proto", "roce", "--size", str(FRAME),
            "--rate", str(FLOW_RATE), "--src", job[2], "--dst", job[5],
            "--dst-mac", "02:fa:00:00:00:01", "--reflect",
            "--tx-delay-ms", str(WARM_MS), "--linger-ms", "200",
            "--idle-sleep-us", "100", "--report", reports[job[0]]] + load_args,
            host_memif=job[1] + ".memif"))
    time.sleep(WARM_MS / 1000 + 1.0)
    return socks, reports, loads, paired


def run(c, tmp, seed, balance, need_collision=False):
    """One run; None when it could not start (or need_collision and the
    placement has none)."""
    name = "seed %d, %s" % (seed, "balance" if balance else "ECMP alone")
    with lslab.BridgeRig(tmp, name, CPUS, "ct") as rig:
        up = start(c, rig, name, seed, "balance" if balance else "ecmp",
                   ["--phase-bytes", str(PHASE_BYTES), "--phases", str(PHASES),
                    "--duration", "120"])
        if up is None:
            return None
        socks, reports, loads, _ = up
        pl = {}
        lslab.wait_until(lambda: len(pl.update(placement(rig.fsock, socks)) or pl) ==
                         2 * FLOWS, 5)
        if need_collision and not collides(pl):
            print("# %s: no two flows on one spine, next seed (%s)" % (name, sorted(pl.items())),
                  flush=True)
            return None
        for p in loads:
            p.wait(300)
        end = placement(rig.fsock, socks)
        bal = [lslab.call(s, "bridge") for s in socks]
        evs = [[e for e in lslab.call(s, "events", {"max": 100000})["events"]
                if e["type"] == "flows.rebalanced"] for s in socks]
        if VERBOSE:
            for job, e in sorted(((j, e) for j, ev in zip(JOBS, evs) for e in ev),
                                 key=lambda x: x[1]["time_ns"]):
                if True:
                    print("#   %.3f s %s: %s path %d (%s, %.0f us) -> %d (%s, %.0f us)" % (
                        e["time_ns"] % 100000000000 / 1e9, job[1], e["flows_moved"],
                        e["path"], spine_of(rig.fsock, job[1], job[4], e["path"]),
                        e["queue_us"], e["to"], spine_of(rig.fsock, job[1], job[4], e["to"]),
                        e["to_queue_us"]), flush=True)
        cover = [sorted({d for p in lslab.call(s, "path", {"peer": j[4]})["paths"]
                         for d in p.get("data_paths", [])}) for s, j in zip(socks, JOBS)]
    rep = {}
    for j, path in reports.items():
        with open(path) as f:
            rep[j] = json.load(f)
    res = {"seed": seed, "balance": balance, "start": pl, "end": end,
           "jct": {j: r.get("phases", {}).get("jct_s") for j, r in rep.items()},
           "done": {j: r.get("phases", {}).get("done") for j, r in rep.items()},
           "lost": {j: r.get("rx", {}).get("lost", 0) for j, r in rep.items()},
           "moves": sum(len(e) for e in evs),
           "flows_moved": sum(e["flows_moved"] for ev in evs for e in ev),
           "balanced": sum(b["counters"]["balanced"] for b in bal),
           "summary": [b["balance"] for b in bal], "cover": cover}
    print("# %s: JCT A %.3f s, B %.3f s (phases %s); spines at start %s, at end %s; "
          "moves %d (%d flows); data paths the probes stand for %s; lost %s; balance %s" % (
              name, res["jct"]["A"] or -1, res["jct"]["B"] or -1, res["done"],
              {"%s%d" % k: v[1] for k, v in sorted(pl.items())},
              {"%s%d" % k: v[1] for k, v in sorted(end.items())},
              res["moves"], res["flows_moved"], [len(x) for x in cover], res["lost"],
              [{k: v for k, v in b.items() if k in ("no_target", "not_ours", "flow_scans",
                                                    "destinations_full", "orders_failed")}
               for b in res["summary"]] if balance else "off"),
          flush=True)
    c.check(all(res["done"][j] == PHASES for j in res["done"]),
            "%s: both jobs finished their %d phases (%s)" % (name, PHASES, res["done"]))
    return res


def cc_state(socks):
    """{(job, flow): (decreases, rate_bps)} from each lockstepd's delay mode."""
    out = {}
    for job, sock in zip(JOBS, socks):
        for f in lslab.call(sock, "flows", {"top": 100, "dir": "host", "cc": True})["top"]:
            if f["kind"] == "roce" and f.get("cc", {}).get("mode") == "delay":
                out[(job[0], f["qp_label"] - 256)] = (f["cc"]["decreases"], f["cc"]["rate_bps"],
                                                      f["cc"]["increases"])
    return out


def run_delay(c, tmp, seed):
    """The delay mode (docs/cc.md) on the same collision, balance off: a flow
    is cut by the queue of its own data path, which its lockstepd reads from
    the probe paths paired with it (the route map), not from probe path k,
    which the leaves hash onto another spine. The routes paired before the
    flows start, 3 s after: the flows sharing a spine uplink (truth) were
    cut, the flows alone on theirs were cut less (a lab stall may cut one
    once) and run faster."""
    name = "seed %d, delay mode" % seed
    with lslab.BridgeRig(tmp, name, CPUS, "ct") as rig:
        up = start(c, rig, name, seed, "delay", ["--duration", "6"])
        if up is None:
            return None
        socks, _, loads, paired = up
        pl = {}
        lslab.wait_until(lambda: len(pl.update(placement(rig.fsock, socks)) or pl) ==
                         2 * FLOWS, 5)
        time.sleep(2)
        b = cc_state(socks)
        if VERBOSE:
            print("# %s: cc (decreases, rate, increases) %s" % (name, b), flush=True)
        for p in loads:
            p.wait(60)
    spines = [sp for _, sp in pl.values()]
    rows = {k: (pl[k][1], spines.count(pl[k][1]) > 1, b[k][0], b[k][1])
            for k in sorted(pl) if k in b}
    print("# %s: routes paired %s; per flow (spine, shared, cuts, rate Mb/s at the real "
          "scale): %s" % (name, paired, " ".join(
              "%s%d:%s/%s/%d/%.0f" % (k + (v[0], "shared" if v[1] else "alone", v[2],
                                           v[3] * SCALE / 1e6)) for k, v in rows.items())),
          flush=True)
    c.check(paired, "%s: every data path paired with a probe path" % name)
    c.check(len(rows) == 2 * FLOWS, "%s: the delay mode runs on all %d flows" % (name, 2 * FLOWS))
    shared = [v for v in rows.values() if v[1]]
    alone = [v for v in rows.values() if not v[1]]
    c.check(len(shared) > 0 and all(v[2] > 0 for v in shared),
            "%s: the flows sharing a spine uplink were cut (%s)" % (name, [v[2] for v in shared]))
    # a lab stall (a process waiting ms for a CPU, us at the real scale)
    # can cut a lone flow once: fewer cuts than any shared flow, a higher rate
    c.check(shared and all(v[2] < min(x[2] for x in shared) and
                           v[3] > max(x[3] for x in shared) for v in alone),
            "%s: the flows alone on theirs were cut less and run faster (%s)" % (
                name, [(v[2], round(v[3] / FLOW_RATE, 2)) for v in alone]))
    return rows


def mean_jct(r):
    return statistics.mean(r["jct"].values())


def main():
    lslab.exit_on_signals()
    bench = "--bench" in sys.argv[1:]
    seeds = [int(x) for x in sys.argv[1:] if not x.startswith("--")]
    c = lslab.Checks("contention")
    pairs = []
    with tempfile.TemporaryDirectory(prefix="lockstep-test-ct-") as tmp:
        if "--delay" in sys.argv[1:]:
            for s in seeds or [1]:
                run_delay(c, tmp, s)
            c.finish()
        for s in (seeds or range(1, 6)):
            base = run(c, tmp, s, False, need_collision=not bench)
            if base is None:
                continue
            bal = run(c, tmp, s, True)
            if bal is None:
                continue
            pairs.append((base, bal))
            if not bench:
                # the seed whose placement collides: the delay mode's view
                # of the same collision
                run_delay(c, tmp, s)
                break
    if not c.check(len(pairs) > 0, "a seed ran both ways"):
        c.finish()
    for base, bal in pairs:
        c.check(bal["moves"] > 0 or not collides(base["start"]),
                "seed %d: balance moved flows off the shared spine (%d moves)" % (
                    bal["seed"], bal["moves"]))
        c.check(bal["flows_moved"] == bal["balanced"],
                "seed %d: every move is in the event log (%d flows in flows.rebalanced, "
                "%d counted)" % (bal["seed"], bal["flows_moved"], bal["balanced"]))
        # one to a spine at the end in 15 of 20 seeds (docs/benchmarks.md):
        # printed; never worse than where they started: checked
        print("# seed %d: at the end %s (truth: %s)" % (
            bal["seed"], "two flows share a spine uplink" if collides(bal["end"]) else
            "one flow to a spine uplink", {"%s%d" % k: v[1] for k, v in sorted(bal["end"].items())}),
            flush=True)
        c.check(most(bal["end"]) <= most(base["start"]),
                "seed %d: the busiest spine uplink carries no more flows than with ECMP alone "
                "(%d, was %d)" % (bal["seed"], most(bal["end"]), most(base["start"])))
        c.check(base["moves"] == 0 and base["balanced"] == 0,
                "seed %d: ECMP alone moved nothing" % base["seed"])
    ratios = [mean_jct(b) / mean_jct(a) for b, a in pairs]
    jb = [x for b, _ in pairs for x in b["jct"].values()]
    ja = [x for _, a in pairs for x in a["jct"].values()]
    print("# contention over %d seeds: median JCT ECMP alone %.3f s, with balance %.3f s: "
          "%.2fx; per seed (ECMP / balance): %s; min %.2f" % (
              len(pairs), statistics.median(jb), statistics.median(ja),
              statistics.median(jb) / statistics.median(ja),
              " ".join("%d:%.2f" % (b["seed"], r) for (b, _), r in zip(pairs, ratios)),
              min(ratios)), flush=True)
    if bench:
        c.check(statistics.median(jb) / statistics.median(ja) >= 1.2,
                "median JCT >= 1.2x better than ECMP alone")
        c.check(min(ratios) >= 0.98, "never worse than 0.98x in any seed")
    else:
        # the bench judges 1.2 over 20 seeds; one seed in CI, 4 phases
        # (the first, before any move, weighs more): 1.1
        c.check(ratios[0] >= 1.1, "seed %d: the jobs finished %.2fx sooner than with ECMP "
                "alone (mean JCT; >= 1.1)" % (pairs[0][0]["seed"], ratios[0]))
    c.finish()


if __name__ == "__main__":
    main()
