#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Integration: failover without failure. A spine link dies under RoCEv2 RC
flows; lockstepd moves the flows whose ACKs stop onto other paths, judged by
the emulator's routes (truth: which flows crossed the link) and by the
receiver (how long each flow went without a frame).

  lockstep-load TX -> [host] lockstepd [fab] -> emulator: h1 - leaf1 = spine1..4 = leaf2 - h2
  lockstep-load RX (h2, --respond: an ACK per request, same entropy) ----------------+
  ACKs go back h2 -> leaf2 -> spine -> leaf1 -> h1 -> lockstepd -> host.

lockstepd spreads the flows over its 8 paths (entropy values); ECMP hashes
them over 4 spines. About a second in, leaf1-spineX goes down both ways (X
random among the spines that carry a flow, forward or back); routing
reconverges CONVERGENCE_MS later (ECMP hashes onto the dead link until then,
like BGP/BFD would). It comes back up a second later.

Per flow: "affected" when the emulator's `route` for its 5-tuple (forward,
or its ACKs back) crossed the dead link just before it died. The stall is
the flow's longest gap between two frames at the receiver (sink max_gap),
over the whole run; a flow that moves off the dead path shows the failover
time as that gap: from its last frame before the failure to its first on
the new path (an upper bound of detection + move, since the last frame left
up to a packet interval before the link died).

Checked (CI), three cases (FO_MODES=acks,probes,off picks):
  acks    failover on: every affected flow moved and its stall is below a
          tenth of CONVERGENCE_MS;
  probes  no --respond, so no flow is ever heard and the ACK rule cannot act;
          the sink reflects STAMP (--reflect), lockstepd probes h2 every
          PROBE_US on its 8 paths, and once the route map has paired probe
          paths with data paths (path -> data_paths), the link is picked
          among those the paired data paths cross: every affected flow moved
          on the probes' marks alone, as fast as above;
  off     the same flap, failover off: the affected flows stall about
          CONVERGENCE_MS and lose frames.
With --bench, issue 29's targets: stall <= 2 ms for every affected flow,
and (probes, at a 100 us interval) the last affected flow moved <= 1 ms
after the link died: lockstepd's reaction, from the emulator's truth to the
lcore's move times in the path.silent events (moved_ns), apart from how
long the lab then takes to carry the first frame on the new path
(tools/bench/bench_failover.sh runs seeds).

  test_failover.py [--bench] [SEED ...]     default: one seed
"""
import json
import os
import random
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "lab"))
import lslab  # noqa: E402

SPINES = 4
PATHS = 8
BASE = 49152
FLOWS = int(os.environ.get("FO_FLOWS", "16"))
PPS = int(os.environ.get("FO_PPS", "2000"))  # per flow
FRAME = 498
SECS = float(os.environ.get("FO_SECS", "4"))
CONVERGENCE_MS = 200
SILENCE_US = int(os.environ.get("FO_SILENCE_US", "500"))
# probes-only case: issue 29's interval with --bench; in CI twice that, as the
# two-core lab stalls for ms under 160k probes/s and their reflections
PROBE_US = int(os.environ.get("FO_PROBE_US", "100" if "--bench" in sys.argv else "200"))
PAIR_S = 4.0   # probes-only case: time for the route map to pair probe and data paths
STALL_MAX_US = 2000
REACT_MAX_US = 1000
# frames steered before a mark still on their way to the dead link: lockstepd's
# queues, then the emulator's, which the two-core lab's pauses stretch
LATE_IN_US = 300
GAPS = 256
DOWN_MS = 1000
SIM_EPOCH_NS = 1700000000000000000
# The load generator polls without rest (it sends every few us); the
# emulator and lockstepd sleep when idle and share the other CPU.
CPUS = ({"fabric": "0@1", "lsd": "0@1", "load": "0@0"} if os.environ.get("FO_PIN", "0") == "1"
        else {"fabric": "0@(0,1)", "lsd": "0@(0,1)", "load": "0@(0,1)"})                 # issue 29's target, judged with --bench


def topo(seed):
    rnd = random.Random(seed)
    link = {"rate_bps": 10_000_000_000, "delay_ns": 1000, "buffer_bytes": 1_000_000}
    t = lslab.leaf_spine(2, SPINES, 1, link, link, ipv6=False)
    for s in t["switches"]:
        s["seed"] = rnd.randrange(1 << 32)
    t["convergence_ms"] = CONVERGENCE_MS
    return t


def lsd_config(tmp, mode):
    failover = mode != "off"
    cfg = {
        "node": {"name": "h1", "id": 1},
        "ports": lslab.bridge_ports(tmp, "h1", "02:00:00:00:0a:01", "10.1.0.1/24"),
        "probe": {"paths": PATHS, "src_port_base": BASE},
        "idle": {"backoff": True, "after_polls": 64, "sleep_us": 20},
        "bridge": {"host_port": "host", "fabric_port": "fab", "link_bps": 10_000_000_000,
                   "max_flows": 4096, "policy_file": "",
                   "failover": {"enabled": failover, "silence_us": SILENCE_US,
                                "hold_ms": 5000},
                   "policy": {"flows": [{"name": "rdma", "match": {"roce": True},
                                         "path": {"mode": "spread",
                                                  "paths": list(range(PATHS))}}]}},
        "control": {"socket": os.path.join(tmp, "h1.sock"), "peers_file": ""},
    }
    if mode == "probes":
        # h2 reflects (lockstep-load --reflect); its route map pairs probe
        # and data paths (gateway: the emulator's leaf answers ARP)
        cfg["probe"]["interval_us"] = PROBE_US
        # flows moved on a false alarm (the lab's stalls) come back sooner
        cfg["bridge"]["failover"]["hold_ms"] = 1000
        cfg["ports"][1]["gateway4"] = "10.1.0.254"
        cfg["peers"] = [{"name": "h2", "addr": "10.2.0.1", "port": "fab"}]
        cfg["route"] = {"traces_per_s": 50}
    return cfg


def covered(sock):
    """The data paths some probe path's route stands for (the route map
    traced both). The probes' 8 entropies need not cross every spine the
    data's do: a data path over a spine no probe crosses has only its ACKs."""
    try:
        paths = lslab.call(sock, "path", {"peer": "h2"})["paths"]
    except (OSError, lslab.CtlError):
        return set()
    return set(d for p in paths if p["state"] == "up" for d in p.get("data_paths", []))


def route_links(fsock, src, dst, sport, dport):
    r = lslab.call(fsock, "route", {"src": src, "dst": dst, "sport": sport, "dport": dport,
                                    "proto": 17})
    return {(x["link"], x["dir"]) for x in r}


def flow_paths(sock):
    """{load flow index: path} of the host's RoCEv2 flows (QP 256 + index)."""
    out = {}
    for f in lslab.call(sock, "flows", {"top": 1000, "dir": "host"})["top"]:
        if f["kind"] == "roce" and f["path"] is not None:
            out[f["qp_label"] - 256] = f
    return out


def flap_gap(flow, down_a, down_b, found=False, longest=False):
    """The flow's gap at the receiver that spans the link's death (which
    came between down_a and down_b, seconds on the report's clock): the
    longest gaps are kept with their ends. A gap that does not show among
    them was no longer than the shortest kept (a bound, taken as the value).
    longest: the longest of the gaps that start by down_b and end after
    down_a, not the first."""
    gaps = flow.get("gaps", [])
    hits = [us for us, end in gaps if end - us / 1e6 <= down_b and end >= down_a]
    if found:
        return bool(hits)
    if hits:
        return max(hits) if longest else hits[0]
    return gaps[-1][0] if gaps else 0.0


def run_case(c, tmp, seed, mode, bench):
    failover = mode != "off"
    name = "seed %d, failover %s" % (seed, {"acks": "on", "off": "off",
                                            "probes": "by probes only (no ACKs)"}[mode])
    rnd = random.Random(seed * 7 + 1)
    with lslab.BridgeRig(tmp, name, CPUS, "fo") as rig:
        fsock = rig.fsock
        if not c.check(rig.fabric(topo(seed), ["--idle-sleep-us", "20", "--sample-us", "0",
                                               "--truth", os.path.join(tmp, "truth.jsonl")]),
                       "%s: emulator up" % name):
            return None
        sock = rig.lockstepd(lsd_config(tmp, mode))
        if not c.check(sock is not None, "%s: lockstepd up" % name):
            return None
        report = os.path.join(tmp, "report.json")
        load = rig.load("h2", [
            "--flows", str(FLOWS), "--proto", "roce", "--size", str(FRAME),
            "--rate", str(PPS * FRAME * 8), "--src", "10.1.0.1", "--dst", "10.2.0.1",
            "--dst-mac", "02:fa:00:00:00:01",
            # probes: the route map first pairs probe and data paths
            "--duration", str(SECS + (PAIR_S if mode == "probes" else 0)),
            "--linger-ms", "300", "--report-flows", str(FLOWS), "--report", report,
            # enough of each flow's longest gaps that the one at the flap is
            # among them (the lab's pauses make a few dozen longer ones)
            "--gaps", str(GAPS)] +
            (["--reflect"] if mode == "probes" else ["--respond"]))
        time.sleep(1.2)
        cov = set(range(PATHS))
        if mode == "probes" and not c.check(
                lslab.wait_until(lambda: len(covered(sock)) == PATHS, PAIR_S) or covered(sock),
                "%s: the route map paired probe paths with data paths" % name):
            return None
        if mode == "probes":
            cov = covered(sock)
            print("# %s: data paths the probes stand for: %s" % (name, sorted(cov)), flush=True)
            # a calm moment: no flow away on a false alarm (they come back
            # after hold_ms), some on a path the probes stand for
            lslab.wait_until(lambda: all(
                not (f.get("failover") or {}).get("away") for f in flow_paths(sock).values()) and
                any(f["path"] in cov for f in flow_paths(sock).values()), 2.0)
        before = flow_paths(sock)
        # which flows cross which spine uplink of leaf1, each way (truth)
        fwd, rev = {}, {}
        for i, f in before.items():
            sport = BASE + f["path"]
            fwd[i] = route_links(fsock, "h1", "h2", sport, 4791)
            rev[i] = route_links(fsock, "h2", "h1", sport, 4791)
        if mode == "probes":
            rev = {}   # no ACKs: only the data's own way counts
        used = sorted({l for i, s in list(fwd.items()) + list(rev.items())
                       for (l, _) in s if l.startswith("leaf1-spine") and
                       before[i]["path"] in cov})
        link = rnd.choice(used) if used else "leaf1-spine1"
        # each path's route h1 -> h2 now: which cross the link, which way
        routes = {p: route_links(fsock, "h1", "h2", BASE + p, 4791) for p in range(PATHS)}
        fwd_dirs = {(l, d) for r in routes.values() for l, d in r if l == link}
        on_dead = {BASE + p for p, r in routes.items() if any(l == link for l, _ in r)}
        # Scheduled ahead: in a two-core lab, serving a control request
        # pauses every process for a millisecond or two, which would show
        # in every flow at the edge.
        lslab.call(fsock, "link.flap", {"link": link, "down_ms": DOWN_MS,
                                         "every_ms": 100 * DOWN_MS, "count": 1,
                                         "start_ms": 300})
        load.wait(SECS + 60)
        with open(report) as f:
            rep = json.load(f)
        # the instant the link died, from the emulator's truth (lab
        # timeline = CLOCK_MONOTONIC_RAW + LS_SIM_EPOCH_NS)
        downs, ups, into = [], [], []
        with open(os.path.join(tmp, "truth.jsonl")) as f:
            for line in f:
                try:
                    e = json.loads(line)
                except ValueError:
                    continue
                if e.get("type") == "link" and e.get("link") == link and not e.get("up"):
                    downs.append(e["t"] - SIM_EPOCH_NS)
                if e.get("type") == "link" and e.get("link") == link and e.get("up"):
                    ups.append(e["t"] - SIM_EPOCH_NS)
                # the data frames the dead link dropped (the emulator's
                # record of every frame a down link refuses)
                if (e.get("type") == "drop" and e.get("link") == link and "frame" in e and
                        e["frame"]["dport"] == 4791):
                    into.append((e["t"] - SIM_EPOCH_NS, e["frame"]["sport"], e["dir"]))
        if not c.check(len(downs) > 0, "%s: the emulator's truth has %s going down" % (name, link)):
            return None
        t0 = t1 = min(downs)
        # the events' move times are UTC; the truth's, the lab timeline
        off = time.time_ns() - time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW)
        after = flow_paths(sock)
        br = lslab.call(sock, "bridge")
        counters = br["counters"]
        silent = [e for e in lslab.call(sock, "events", {"max": 100000})["events"]
                  if e["type"] == "path.silent"]
    flows = {f["flow"]: f for f in rep.get("flows", [])}
    hit_f = {i for i, s in fwd.items() if any(l == link for l, _ in s)}
    hit_r = {i for i, s in rev.items() if any(l == link for l, _ in s)} - hit_f
    hit = hit_f | hit_r
    res = {"link": link, "seed": seed, "failover": failover, "mode": mode, "flows": len(flows),
           "fwd": sorted(hit_f), "rev": sorted(hit_r), "counters": {
               k: counters.get(k) for k in ("repaths", "repaths_probe", "probe_silences",
                                            "repath_returns", "repath_exhausted",
                                            "qp_pairs_learnt")},
           "stall_us": {i: flap_gap(flows[i], (t0 - rep["start_raw_ns"]) / 1e9,
                                    (t1 - rep["start_raw_ns"]) / 1e9) for i in flows},
           "lost": {i: flows[i]["lost"] for i in flows},
           "exact": {i for i in flows if flap_gap(flows[i], (t0 - rep["start_raw_ns"]) / 1e9,
                                                   (t1 - rep["start_raw_ns"]) / 1e9, True)},
           "moves": {i: (after.get(i, {}).get("failover") or {}).get("moves", 0) for i in flows}}
    # lockstepd's reaction (issue 29: from the link's death to the last
    # affected flow moved): its moves off the paths the affected flows were
    # on, within 100 ms of the death (moved_ns: when the lcore moved them)
    hot = {before[i]["path"] for i in hit if i in before}
    moves = [e["moved_ns"] for e in silent if e.get("path") in hot and "moved_ns" in e and
             0 <= e["moved_ns"]["first"] - (t0 + off) < 100_000_000]
    res["react_us"] = ((min(m["first"] for m in moves) - t0 - off) / 1e3,
                       (max(m["last"] for m in moves) - t0 - off) / 1e3) if moves else None
    # ... and its decision: when the last of those paths was found silent
    # (marked_ns; by probes the mark, after which every frame of a flow on
    # it goes elsewhere: a flow moves at its next frame, which the test's
    # flows send every 1/PPS); and from the truth, when the last data frame
    # went into the dead link (after the last mark only what was past
    # lockstepd's steering already, plus the lab's pauses, may follow)
    marks = [e["marked_ns"] for e in silent if e.get("path") in hot and "marked_ns" in e and
             0 <= e["marked_ns"] - (t0 + off) < 100_000_000]
    res["mark_us"] = (max(marks) - t0 - off) / 1e3 if marks else None
    last_in = [x for x, _, d in into if 0 <= x - t0 < 100_000_000 and (link, d) in fwd_dirs]
    res["last_in_us"] = (max(last_in) - t0) / 1e3 if last_in else None
    res["into"] = len(last_in)
    # the records name the flows: every data frame the dead link took on
    # the data's way was on a path whose route crossed it then
    res["into_stray"] = sorted({sp for _, sp, d in into if (link, d) in fwd_dirs and
                                sp not in on_dead})
    st = sorted(res["stall_us"][i] for i in hit if i in flows)
    res["up_ms"] = (min(ups) - t0) / 1e6 if ups else None
    res["stray_ms"] = sorted(round((e["marked_ns"] - t0 - off) / 1e6, 1) for e in silent
                             if e.get("path") not in hot and "marked_ns" in e)
    calm = [flows[i]["max_gap_us"] for i in flows if i not in hit]
    print("#   flows that crossed nothing, their gap at the flap, us (<=: not among the %d "
          "longest, no longer than the shortest of them): %s" % (GAPS, " ".join(
              "%s%.0f" % ("" if i in res["exact"] else "<=", res["stall_us"][i])
              for i in sorted(flows, key=lambda i: res["stall_us"][i]) if i not in hit)),
          flush=True)
    print("# %s: %s down; %d of %d flows crossed it (%d forward, %d only their ACKs); "
          "stalls of those, us: %s; others' longest gap %.0f us; lost: affected %d, others %d; "
          "moves: affected %d, others %d; %s" % (
              name, link, len(hit), len(flows), len(hit_f), len(hit_r),
              " ".join("%s%.0f" % ("" if i in res["exact"] else "<=", res["stall_us"][i])
                       for i in sorted(hit, key=lambda i: res["stall_us"][i]) if i in flows),
              max(calm or [0]),
              sum(res["lost"][i] for i in hit if i in flows),
              sum(res["lost"][i] for i in flows if i not in hit),
              sum(res["moves"][i] for i in hit if i in flows),
              sum(res["moves"][i] for i in flows if i not in hit), res["counters"]), flush=True)
    if failover:
        print("#   from the link's death to the first / last move off its paths (lockstepd's "
              "reaction), us: %s; to the last of them found silent: %s" % (
                  "%.0f / %.0f" % res["react_us"] if res["react_us"] else "no move",
                  "%.0f" % res["mark_us"] if res["mark_us"] is not None else "none"),
              flush=True)
    if res["stray_ms"]:
        print("#   paths found silent that the dead link did not carry (moves of flows that "
              "crossed nothing), ms after its death: %s (it came back at %.1f ms)" % (
                  res["stray_ms"], res["up_ms"] or -1), flush=True)
    print("#   data frames into the dead link within 100 ms of its death (truth): %d, the last "
          "%s us after it" % (res["into"], "%.0f" % res["last_in_us"]
                              if res["last_in_us"] is not None else "-"), flush=True)
    print("#   one-way delay h1 -> h2 through lockstepd and the emulator, us: %s" % (
        {k: round(v / 1e3, 1) for k, v in rep.get("rx", {}).get("owd_ns", {}).items()
         if isinstance(v, (int, float))}), flush=True)
    c.check(len(flows) == FLOWS, "%s: every flow arrived (%d)" % (name, len(flows)))
    c.check(not res["into_stray"], "%s: the truth's records of data frames the dead link "
            "dropped (%d in 100 ms) name only paths that cross it (others: %s)" % (
                name, res["into"], res["into_stray"]))
    logged = sum(e["flows_moved"] for e in silent)
    moved = counters["repaths"] + counters["repaths_probe"]
    c.check(logged == moved and br["failover"]["moves_unlogged"] == 0 and
            all(e["dst"] == "10.2.0.1" for e in silent),
            "%s: every move is in the event log: %d path.silent events, %d flows moved, "
            "%d repaths (%d by probes)" % (name, len(silent), logged, moved,
                                           counters["repaths_probe"]))
    if mode == "probes":
        c.check(counters["repaths"] == 0 and counters["probe_silences"] > 0 and
                all(e["by"] == "probes" for e in silent),
                "%s: the probes moved them (no ACK ever came: %d by ACKs, %d probe paths "
                "found silent)" % (name, counters["repaths"], counters["probe_silences"]))
    if failover:
        lim = [(after.get(i, {}).get("failover") or {}).get("limit_us", 0) for i in flows]
        print("#   silence that would move a flow (adaptive), us: min %.0f, max %.0f" % (
            min(lim or [0]), max(lim or [0])), flush=True)
    c.check(len(hit) > 0, "%s: the failed link carried flows" % name)
    if failover:
        c.check(all(res["moves"][i] >= 1 for i in hit if i in flows),
                "%s: every affected flow moved (%s)" % (
                    name, {i: res["moves"][i] for i in hit if i in flows}))
        c.check(all(x < CONVERGENCE_MS * 100 for x in st),
                "%s: affected flows stalled < %d ms, a tenth of routing's convergence (max %.0f us)"
                % (name, CONVERGENCE_MS // 10, max(st or [0])))
        # issue 29's 1 ms is at a 100 us probe interval: the probes' case (the
        # ACK rule alone waits silence_us, then for the flow's next request)
        if bench and mode == "probes":
            c.check(res["mark_us"] is not None and res["mark_us"] <= REACT_MAX_US,
                    "%s: the last of the affected flows' paths found silent <= %d us after "
                    "the link died (%s; their last move, at each flow's next frame: %s)" % (
                        name, REACT_MAX_US, "%.0f us" % res["mark_us"]
                        if res["mark_us"] is not None else "none seen",
                        "%.0f us" % res["react_us"][1] if res["react_us"] else "none seen"))
            c.check(res["mark_us"] is not None and
                    (res["last_in_us"] or 0) <= res["mark_us"] + LATE_IN_US,
                    "%s: no data frame went into the dead link later than %d us after that "
                    "(truth: the last %s us after the death)" % (
                        name, LATE_IN_US, "%.0f" % res["last_in_us"]
                        if res["last_in_us"] is not None else "-"))
            c.check(all(x <= STALL_MAX_US for x in st),
                    "%s: every affected flow's stall <= %d us (max %.0f)" % (
                        name, STALL_MAX_US, max(st or [0])))
    else:
        # The blackhole may start a little after the instant the link died
        # (frames in flight behind a lab pause arrive first, and the gap
        # that spans the instant is that pause: CI, seed 1): the longest gap
        # that starts within 50 ms of it.
        fwd_st = [flap_gap(flows[i], (t0 - rep["start_raw_ns"]) / 1e9,
                           (t1 - rep["start_raw_ns"]) / 1e9 + 0.05, longest=True)
                  for i in hit_f if i in flows]
        c.check(all(x >= CONVERGENCE_MS * 1000 * 0.9 for x in fwd_st),
                "%s: without failover the flows crossing it stall about %d ms (%s)" % (
                    name, CONVERGENCE_MS, " ".join("%.0f" % x for x in fwd_st)))
    return res


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def main():
    lslab.exit_on_signals()
    bench = "--bench" in sys.argv[1:]
    seeds = [int(x) for x in sys.argv[1:] if x != "--bench"] or [1]
    c = lslab.Checks("failover")
    results = []
    modes = os.environ.get("FO_MODES", "acks,probes,off").split(",")
    with tempfile.TemporaryDirectory(prefix="lockstep-test-fo-") as tmp:
        for s in seeds:
            for mode in modes:
                r = run_case(c, tmp, s, mode, bench)
                if r is not None:
                    results.append(r)
    for mode in modes:
        rs = [r for r in results if r["mode"] == mode]
        st = [r["stall_us"][i] for r in rs for i in r["fwd"] if i in r["stall_us"]]
        lost = sum(r["lost"][i] for r in rs for i in r["fwd"] + r["rev"] if i in r["lost"])
        false = sum(r["moves"][i] for r in rs for i in r["moves"]
                    if i not in r["fwd"] and i not in r["rev"])
        react = [r["react_us"][1] for r in rs if r.get("react_us")]
        mark = [r["mark_us"] for r in rs if r.get("mark_us") is not None]
        last_in = [r["last_in_us"] for r in rs if r.get("last_in_us") is not None]
        print("# failover %s over %d seeds (silence_us %d): %d flows whose data crossed the "
              "dead link, stall p50 %.0f us, p99 %.0f us, max %.0f us; %d more whose ACKs "
              "did; frames lost %d; moves of flows that crossed nothing %d; last affected "
              "flow moved after the death p50 %.0f us, max %.0f us (%d of %d seeds seen); "
              "the last of its paths found silent p50 %.0f us, max %.0f us; the last data "
              "frame into the dead link (truth) p50 %.0f us, max %.0f us" % (
                  mode, len(rs), SILENCE_US, len(st), pct(st, 0.5),
                  pct(st, 0.99), max(st or [0]), sum(len(r["rev"]) for r in rs), lost, false,
                  pct(react, 0.5), max(react or [0]), len(react), len(rs),
                  pct(mark, 0.5), max(mark or [0]), pct(last_in, 0.5), max(last_in or [0])),
              flush=True)
    c.finish()


if __name__ == "__main__":
    main()
