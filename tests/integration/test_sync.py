#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Integration test: clock sync across the fabric emulator, against ground truth.

Four lockstepd on a 2x2x2 leaf-spine (lockstep-fabric, veth + net_pcap links
so receive times are the kernel's stamps), each with a simulated clock wrong
by milliseconds and tens of ppm, with wander. The reference is elected (node
1, the lowest id), so fleet time is h1's local clock.

Ground truth without timing games: every process on the host reads the same
TSC. The test takes one TSC value T, asks every node for its fleet-time
reading at T (`sync {"tsc": T}`) and the reference for its local time at T
(`clock {"tsc": T}` -> truth_at.local_ns, the simulated clock evaluated at
that instant). The difference is the node's sync error, exactly.

Checks: every node synced within the convergence bound; error under 2 us on
every node over repeated readings; the reported bound contains the truth;
the shared-memory reader (lsfleettime) agrees; synced one-way delays match
the configured path delays in both directions, with the same host-stack
constant forward and back (their difference is what sync error would show
as); a node cut off holds over and says so, its bound widening but
holding the truth, and syncs again when its link is back; the reference
cut off, the next lowest id takes over without stepping fleet time off
its clock, and gives the role back when its link is back; a restarted
node rejoins and reconverges.

With the argument "trailer" (meson test sync-fabric-trailer) the same runs,
up to holdover, failover and the restart (the kernel-stamp run's),
over memif links with the emulator playing NICs with receive stamps
(lab.sh --rx-trailer, clock.rx_trailer): every node must take every receive
stamp from the trailer (none missing; at most 0.5% refused as stale, when
a descheduled lcore polled them over 10 ms late), and the delay floors must
sit within a few microseconds of the configured delays.

With "unsent" (meson test sync-fabric-unsent) the daemons stamp a lead
ahead and append send-time trailers but the emulator runs without
--tx-trailer (a lab misconfigured): nobody sends the frames at their
instant, and every node must notice (status clock.tx_stamps.unsent_seen,
and one warning in its log) rather than report delays a lead off in silence.

With "trailer sendtime" (meson test sync-fabric-sendtime) the emulator also
plays NICs that send on a timestamp (lab.sh --tx-trailer,
clock.tx_trailer): every node must send its probes and replies with a
send-time trailer (none without room for it), the emulator must send them
at that instant (none refused, at most 5% reaching it after it), and the
delay floors must sit within 2 us of the configured delays (no ingress
poll left in them). Without it, no frame carries one.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "lab"))
import lslab  # noqa: E402

# Fleet-time error against the reference's clock (README "clock sync":
# fleet-time p99 ~65-100 ns; docs/sync.md). ERR_BOUND_NS bounds every single
# reading (a descheduled daemon on 2 shared vCPUs can be hit in one);
# MEDIAN_ERR_NS bounds the median over the non-reference readings of a
# measurement, which load does not move: seen 9-83 ns, and a node 1 us off
# (a one-sided stamp bias, a broken step) gives ~1000 ns and fails it.
ERR_BOUND_NS = 2000          # every reading (was the only check)
MEDIAN_ERR_NS = 500          # median of non-reference readings (new; seen <= 83 ns)
# The reported bound [earliest, latest] must hold the truth (docs/sync.md,
# "bound"): all readings but one (was: 90%; seen 100% in every run).
BOUND_MISSES_MAX = 1
CONVERGE_S = 20              # generous: start-up of 5 processes on 2 vCPUs included
HOST_NS, SPINE_NS, RATE = 20000, 100000, 10_000_000_000

TOPO = lslab.leaf_spine(2, 2, 2,
                        link={"delay_ns": SPINE_NS, "rate_bps": RATE, "buffer_bytes": 1048576,
                              "ecn_bytes": 131072, "loss": 0, "mtu": 9000},
                        host_link={"delay_ns": HOST_NS})
LEAF = {h["name"]: h["leaf"] for h in TOPO["hosts"]}

# Offsets up to +-10 ms, drifts up to +-100 ppm, wander on every clock.
CLOCKS = {
    "h1": (3_100_000, 12.0), "h2": (-7_900_000, -85.0),
    "h3": (9_500_000, 100.0), "h4": (-2_200_000, -40.0),
}
# asym_bound_ns: the lab's uncalibrated asymmetry allowance (see docs/sync.md):
# transmit stamps are TSC reads before a syscall hands the frame to veth,
# receive stamps the kernel's, and the two ends' host stacks differ by up to
# a microsecond or two; the bound must say so. wander_ns: two clocks of 20
# ns/sqrt(s) each wander apart by 20 * sqrt(2).
EXTRA = {"*": {"sync": {"purity_tol_ns": 1500, "asym_bound_ns": 2000,
                        "wander_ns": 30}}}
for h, (off, drift) in CLOCKS.items():
    EXTRA[h] = {"clock": {"source": "sim",
                          "sim": {"offset_ns": off, "drift_ppm": drift, "wander_ns": 20}}}


def errors(lab, n):
    """One instant T: node -> (error ns, reading, status, truth)."""
    truth, reps = lslab.fleet_readings(lab.sock(1), [lab.sock(i) for i in range(1, n + 1)])
    return {i: (r["reading"]["fleet_ns"] - truth, r["reading"], r["state"]["status"], truth)
            for i, r in enumerate(reps, 1)}


def all_synced(lab, n):
    return lslab.all_synced([lab.sock(i) for i in range(1, n + 1)])


def pctl(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def measure(c, lab, n, rounds, what):
    errs, inside, total, worst, nonref = [], 0, 0, {}, []
    for _ in range(rounds):
        for i, (e, rd, status, truth) in errors(lab, n).items():
            errs.append(abs(e))
            if status != "reference":
                nonref.append(abs(e))
            worst[i] = max(worst.get(i, 0), abs(e))
            total += 1
            if rd["earliest_ns"] <= truth <= rd["latest_ns"]:
                inside += 1
        time.sleep(0.25)
    print("%s: |error| p50 %.0f ns, p99 %.0f ns, max %.0f ns over %d readings; "
          "truth inside the bound in %d/%d; worst per node %s"
          % (what, pctl(errs, .5), pctl(errs, .99), max(errs), len(errs), inside, total,
             {i: round(w) for i, w in sorted(worst.items())}))
    c.check(max(errs) < ERR_BOUND_NS,
            "%s: every node within %d ns of the reference's clock (max %.0f ns)"
            % (what, ERR_BOUND_NS, max(errs)))
    med = statistics.median(nonref) if nonref else None
    c.check(med is not None and med < MEDIAN_ERR_NS,
            "%s: median |error| of the %d non-reference readings %s ns < %d ns"
            % (what, len(nonref), "%.0f" % med if med is not None else "-", MEDIAN_ERR_NS))
    c.check(inside >= total - BOUND_MISSES_MAX,
            "%s: the reported bound holds the truth in all readings but at most %d (%d/%d)"
            % (what, BOUND_MISSES_MAX, inside, total))
    return max(errs)


def holdover(c, lab, n):
    """The last host's only link goes down: it holds over on its drift and
    says so, its bound widens and still holds the truth, the others stay
    synced; back up, it syncs again."""
    def reading():
        return errors(lab, n)[n]

    def status(i):
        return lslab.call(lab.sock(i), "sync")["state"]["status"]

    _, rd, _, _ = reading()
    w0 = rd["latest_ns"] - rd["earliest_ns"]
    link = "h%d-%s" % (n, LEAF["h%d" % n])
    lslab.call(lab.fab, "link.set", {"link": link, "up": False})
    try:
        t0 = time.time()
        ok = lslab.wait_until(lambda: status(n) == "holdover", 10, step=0.1)
        c.check(ok, "h%d cut off (%s down): it says holdover (%.1f s)" % (n, link, time.time() - t0))
        time.sleep(2)
        e, rd, st, truth = reading()
        w1 = rd["latest_ns"] - rd["earliest_ns"]
        c.check(st == "holdover" and w1 > w0 and rd["earliest_ns"] <= truth <= rd["latest_ns"],
                "in holdover its bound widened (%.0f -> %.0f ns) and holds the truth (error %.0f ns)"
                % (w0, w1, e))
        c.check(abs(e) < ERR_BOUND_NS, "in holdover it stays within %d ns of the reference's clock "
                "(%.0f ns)" % (ERR_BOUND_NS, e))
        others = [status(i) for i in range(1, n)]
        c.check(all(s in ("synced", "reference") for s in others),
                "the others stay synced without it: %s" % others)
    finally:
        lslab.call(lab.fab, "link.set", {"link": link, "up": True})
    t0 = time.time()
    ok = lslab.wait_until(lambda: all_synced(lab, n), CONVERGE_S, step=0.25)
    c.check(ok, "link back up: h%d synced again (%.1f s)" % (n, time.time() - t0))


def failover(c, lab, n):
    """The reference's only link goes down: once ref_timeout has passed, h2
    (the next lowest id) takes the role and carries fleet time on along h1's
    timeline instead of stepping to its own clock (milliseconds away). h1
    is alive, only cut off, so its clock is still the truth. Back up, h1 is
    the reference again for everyone."""
    def state(i):
        return lslab.call(lab.sock(i), "sync")["state"]

    link = "h1-%s" % LEAF["h1"]
    lslab.call(lab.fab, "link.set", {"link": link, "up": False})
    try:
        t0 = time.time()
        worst = 0

        def sample():
            """Every other node's error against h1's clock, into worst."""
            nonlocal worst
            worst = max([worst] + [abs(e) for i, (e, _, _, _) in errors(lab, n).items()
                                   if i > 1])

        def took_over():
            sample()
            return state(2)["status"] == "reference"

        ok = lslab.wait_until(took_over, 15, step=0.25)
        c.check(ok, "h1 cut off (%s down): h2 took the reference role (%.1f s)"
                % (link, time.time() - t0))
        for _ in range(8):
            sample()
            time.sleep(0.25)
        st = [state(i) for i in range(2, n + 1)]
        t = lslab.call(lab.sock(1), "clock")["tsc"]
        gap = (lslab.call(lab.sock(2), "clock", {"tsc": t})["truth_at"]["local_ns"] -
               lslab.call(lab.sock(1), "clock", {"tsc": t})["truth_at"]["local_ns"])
        c.check(all(x["ref_id"] == 2 for x in st) and
                all(x["status"] == "synced" for x in st[1:]),
                "h2..h%d follow h2: %s" % (n, [(x["ref_id"], x["status"]) for x in st]))
        c.check(worst < ERR_BOUND_NS,
                "through the failover fleet time stayed within %d ns of h1's clock "
                "(max %.0f ns; h2's own clock is %.0f us off it)"
                % (ERR_BOUND_NS, worst, gap / 1e3))
    finally:
        lslab.call(lab.fab, "link.set", {"link": link, "up": True})
    t0 = time.time()
    ok = lslab.wait_until(lambda: all_synced(lab, n) and
                          all(state(i)["ref_id"] == 1 for i in range(1, n + 1)),
                          CONVERGE_S, step=0.25)
    c.check(ok, "link back up: h1 is everyone's reference again (%.1f s)" % (time.time() - t0))


def expected_owd(a, b, frame_bytes):
    hops = 2 if LEAF[a] == LEAF[b] else 4
    delay = 2 * HOST_NS + (hops - 2) * SPINE_NS
    return delay + hops * frame_bytes * 8 * 1e9 / RATE


TRAILER = "trailer" in sys.argv[1:]
SENDTIME = "sendtime" in sys.argv[1:]
SENDTIME_LATE_MAX = 0.05  # of frames sent at their instant, reaching the emulator after it
TRAILER_REFUSED_MAX = 0.005  # of trailer stamps, refused as stale (descheduled lcore)
# Floors above the configured delay: the host stack with kernel stamps (T1
# before a send syscall, T2 the kernel's stamp); with trailer stamps only
# the emulator's ingress poll; with send-time trailers too, nothing but the
# sync error.
FLOOR_SLACK_NS = 2000 if SENDTIME else 10000 if TRAILER else 20000
# ... and below it by no more than the sync error (a floor is the delay plus
# the two ends' offset error). Not tightened: 500 ns was tried and failed in
# sendtime mode on this loaded VM (floors 1.6 us under, in a run whose
# sync error peaked, see docs/testing.md).
FLOOR_UNDER_NS = ERR_BOUND_NS
# ... which this run measures: a synced delay is off by the receiver's
# fleet-time error less the sender's, so a floor may sit under the
# configured delay by at most twice the largest |error| the run saw (the
# steady state's readings and a fresh set taken with the floors), plus
# FLOOR_UNDER_PAD for errors between readings. Issue 27 B: the bound was
# 2 us whatever the run's sync did; it is now 2 x max|error| + 300 ns,
# never looser than 2 us (steady-state max 53-167 ns in quiet runs: about
# 0.4-0.6 us).
FLOOR_UNDER_PAD_NS = 300
# Forward minus reverse excess over the floors is twice the sync error
# (docs/sync.md): 2 x the run's floor bound below, never over 4 us (a fixed
# 1500 ns failed in a run whose sync error peaked: 1679 ns).
FLOOR_ASYM_NS = 2 * ERR_BOUND_NS


def points_offset(r, settled_ns=0):
    """A window's offset rebuilt from sync.points' probes: at the window's
    fixed drift b the envelope is each side's least d -/+ b t (t from the
    fit's instant), and the offset half their difference (docs/sync.md).
    settled_ns > 0 leaves out replies that came within that long before the
    fit: they may have reached the estimator only after it."""
    w, b = r["window"], r["fixed_drift_ppm"] * 1e-6
    now, span = w["t_ref_ns"], r["window_ns"]
    fe = re = None
    for t1, t2, t3, t4, pure in r["probes"]:
        if not (-span < t1 - now <= 0) or t4 > now - settled_ns:
            continue
        if pure & 1:
            v = (t2 - t1) - b * (t1 - now)
            fe = v if fe is None else min(fe, v)
        if pure & 2:
            v = (t4 - t3) + b * (t4 - now)
            re = v if re is None else min(re, v)
    return None if fe is None or re is None else 0.5 * (fe - re)


def check_points(c, lab):
    """sync.points: the probes it lists are the ones the newest window was
    fitted from (its offset rebuilt from them when the fit dropped no
    outlier), and bad arguments get errors."""
    for _ in range(20):
        r = lslab.call(lab.sock(1), "sync.points", {"peer": "h2", "path": 0})
        w = r["window"]
        if w and r["fixed_drift_ppm"] is not None and w["outliers"] == 0:
            break
        time.sleep(0.25)
    probes = r["probes"]
    c.check(len(probes) >= 100 and all(len(p) == 5 for p in probes) and
            all(p[0] <= q[0] for p, q in zip(probes, probes[1:])),
            "sync.points lists %d probes, oldest first" % len(probes))
    offs = [points_offset(r, s) for s in (0, 5000000)] \
        if r["window"] and r["fixed_drift_ppm"] is not None else []
    c.check(any(o is not None and abs(o - r["window"]["offset_ns"]) < 1.0 for o in offs),
            "sync.points rebuilds the newest window's offset (%s vs %s ns)"
            % (offs, r["window"] and r["window"]["offset_ns"]))
    for args, want in (({"peer": "nope"}, "not_found"), ({}, "bad_args"),
                       ({"peer": "h2", "path": 99}, "bad_args"),
                       ({"peer": "h2", "bogus": 1}, "bad_args")):
        try:
            lslab.call(lab.sock(1), "sync.points", args)
            got = "ok"
        except lslab.CtlError as ex:
            got = str(ex)
        c.check(want in got, "sync.points %s: %s" % (json.dumps(args), got))


def lab_files(name, extra):
    """Checks named name (skip unless root), and TOPO and extra written to a
    scratch directory: (checks, hosts, topology file, extra file)."""
    c = lslab.Checks(name)
    lslab.need_root()
    tmp = tempfile.mkdtemp(prefix="ls-sync-")
    topo_file, extra_file = os.path.join(tmp, "topo.json"), os.path.join(tmp, "extra.json")
    json.dump(TOPO, open(topo_file, "w"))
    json.dump(extra, open(extra_file, "w"))
    return c, len(TOPO["hosts"]), topo_file, extra_file


def unsent():
    """clock.tx_trailer everywhere, an emulator without --tx-trailer."""
    extra = json.loads(json.dumps(EXTRA))
    for h in CLOCKS:
        extra[h]["clock"]["tx_trailer"] = True
    c, n, topo_file, extra_file = lab_files("sync-unsent", extra)
    with lslab.FabricLab(topo_file, "unsent", ["--link", "memif", "--extra", extra_file]) as lab:
        def seen():
            try:
                return all(lslab.call(lab.sock(i), "status")["clock"]["tx_stamps"]["unsent_seen"] > 0
                           for i in range(1, n + 1))
            except (OSError, lslab.CtlError):
                return False
        c.check(lslab.wait_until(seen, 20), "every node counts replies that still carry a send-time "
                "trailer: %s" % [lslab.call(lab.sock(i), "status")["clock"]["tx_stamps"]["unsent_seen"]
                                 for i in range(1, n + 1)])
        c.check(lslab.wait_until(lambda: all("send-time trailer still on" in lab.log(i)
                                             for i in range(1, n + 1)), 5),
                "and each says so once in its log")
        fc = lslab.call(lab.fab, "status")["counters"]
        c.check(fc["tx_at"] + fc["tx_at_late"] + fc["tx_at_bad"] == 0,
                "the emulator (no --tx-trailer) sent none at an instant (%d)" % fc["tx_at"])
        c.check(all(lab.log(i).count("send-time trailer still on") == 1 for i in range(1, n + 1)),
                "one warning per node, not one per frame")
    c.finish()


def floor_min(path_reply, d):
    """Median over the paths of each path's minimum in the last second; a
    path whose last second holds no sample (the window had just rolled, or
    the VM stalled the node for a second: CI run, sync-fabric-sendtime) is
    left out, and with none at all the 10 s window stands in."""
    for w in ("1s", "10s"):
        xs = [x["windows"][w][d]["min"] for x in path_reply["paths"]
              if x["windows"][w][d]["min"] is not None]
        if xs:
            return statistics.median(xs)
    return float("nan")


def main():
    lslab.exit_on_signals()
    if "unsent" in sys.argv[1:]:
        unsent()
        return
    c, n, topo_file, extra_file = lab_files(
        "sync-sendtime" if SENDTIME else "sync-trailer" if TRAILER else "sync", EXTRA)
    link = ["--link", "memif", "--rx-trailer"] if TRAILER else ["--link", "pcap"]
    if SENDTIME:
        link.append("--tx-trailer")
    with lslab.FabricLab(topo_file, "sync", link + ["--extra", extra_file,
                                                    "--fabric-core", "1"]) as lab:
        t0 = time.time()
        ok = lslab.wait_until(lambda: all_synced(lab, n), CONVERGE_S, step=0.25)
        conv = time.time() - t0
        c.check(ok, "all %d nodes synced to one reference within %d s (took %.1f s after the "
                "lab was up)" % (n, CONVERGE_S, conv))
        st = [lslab.call(lab.sock(i), "sync")["state"] for i in range(1, n + 1)]
        c.check(all(s["ref_id"] == 1 for s in st), "the elected reference is node 1 (lowest id): "
                "%s" % [s["ref_id"] for s in st])
        c.check(st[0]["status"] == "reference", "node 1 says it is the reference")
        time.sleep(4)  # a full window of pure pairs everywhere
        worst_err = measure(c, lab, n, 20, "steady state")
        # each edge reports the pure samples its newest windows rest on,
        # also once the per-path track gives the estimate
        nb = lslab.call(lab.sock(2), "sync")["neighbors"]
        counts = [(x["edge"] or {}).get("n_fwd", 0) for x in nb] + \
                 [(x["edge"] or {}).get("n_rev", 0) for x in nb]
        c.check(nb and min(counts) > 0, "every edge reports its window's samples: %s" % counts)
        # the neighbours' reflectors (the fast path) put their own estimate
        # of the edge in the sync TLVs they fill (LS_SYNC_F_EDGE): back_ns
        backs = [x["back_ns"] for x in nb if x["used"]]
        c.check(backs and all(b != 0 for b in backs),
                "the neighbours' replies carry their own edge estimates: back_ns %s" % backs)

        # The shared-memory reader sees the same fleet time, no syscall per read.
        shm = "/dev/shm/lockstep-h2.fleettime"
        lft = os.path.join(lslab.BUILD, "tools", "fleettime", "lsfleettime")
        r = subprocess.run([lft, shm], capture_output=True, text=True)
        c.check(r.returncode == 0, "lsfleettime reads %s" % shm)
        if r.returncode == 0:
            rd = json.loads(r.stdout.splitlines()[-1])
            truth = lslab.call(lab.sock(1), "clock", {"tsc": rd["ctr"]})["truth_at"]["local_ns"]
            e = rd["fleet_ns"] - truth
            print("shm reading: error %.0f ns, bound +-%.0f ns" % (e, rd["half_ns"]))
            c.check(abs(e) < ERR_BOUND_NS and rd["flags"] & 1,
                    "shm fleet time within %d ns of the truth (%.0f ns), flagged synced"
                    % (ERR_BOUND_NS, e))
            c.check(rd["earliest_ns"] <= truth <= rd["latest_ns"], "shm bound holds the truth")

        # Synced one-way delays: per direction, the last second's minimum
        # against the configured delay. Both carry one host-stack constant
        # (T1 read -> frame on the wire); their difference is twice any sync
        # error. The 60 s window must hold no raw clock difference (those
        # are milliseconds off): delays start with the first fit.
        frame = 14 + 20 + 8 + 44 + 4 + 24  # second pair member, IPv4
        asym = []
        for _ in range(8):
            worst_err = max([worst_err] + [abs(e) for e, _, _, _ in errors(lab, n).values()])
            time.sleep(0.25)
        under = min(FLOOR_UNDER_NS, 2 * worst_err + FLOOR_UNDER_PAD_NS)
        print("# floors may sit under the configured delays by %.0f ns (2 x max |error| %.0f "
              "ns + %d)" % (under, worst_err, FLOOR_UNDER_PAD_NS), flush=True)
        for i, a in enumerate(("h1", "h2", "h3", "h4"), 1):
            for b in ("h1", "h2", "h3", "h4"):
                if a == b:
                    continue
                p = lslab.call(lab.sock(i), "path", {"peer": b})
                sy = p.get("sync") or {}
                # median over the paths of each path's minimum: robust to a
                # single odd sample (the emulator used to let one in a
                # thousand in early; fixed, see docs/fabric.md)
                fmin, rmin = floor_min(p, "fwd"), floor_min(p, "rev")
                exp = expected_owd(a, b, frame)
                c.check(sy.get("owd_synced") is True and
                        -under <= fmin - exp < FLOOR_SLACK_NS and
                        -under <= rmin - exp < FLOOR_SLACK_NS,
                        "%s->%s: synced one-way delay floors fwd %.1f us, rev %.1f us vs "
                        "configured %.1f us" % (a, b, fmin / 1e3, rmin / 1e3, exp / 1e3))
                asym.append((fmin - exp) - (rmin - exp))
                # The 60 s window's distributions cover whole 10 s blocks
                # (docs/control.md, "path"), so a few seconds after the lab is up
                # it can still be empty: the 10 s window holds the start.
                # A raw (unsynced) sample always comes with its reply's other
                # direction, and one of the two is the delay minus the clocks'
                # difference (5 to 17 ms here): below the floor, which the
                # minimum catches; so does a delay corrected by an offset
                # that was off (down to 42 us under the floor, from the
                # start-up's first fits, before delays waited two windows:
                # docs/sync.md). The maximum only rules out the absurd (an
                # offset off by seconds): a stalled VM delays real probes by
                # up to 101.5 ms (a CI run, every path of one node at once),
                # so it cannot tell raw samples from those.
                held = [x["windows"][w][d] for w in ("10s", "60s") for d in ("fwd", "rev")
                        for x in p["paths"] if x["windows"][w][d]["count"] > 0]
                lo = min(h["min"] for h in held) if held else None
                hi = max(h["max"] for h in held) if held else None
                c.check(held and -ERR_BOUND_NS <= lo - exp and hi - exp < 1000000000,
                        "%s->%s: the 10 s and 60 s windows hold synced delays only (min %s, "
                        "max %s us)" % (a, b, "%.1f" % (lo / 1e3) if held else "-",
                                        "%.1f" % (hi / 1e3) if held else "-"))
        check_points(c, lab)
        print("floor asymmetry (fwd excess - rev excess) per pair, ns:",
              " ".join("%.0f" % x for x in asym))
        # twice the sync error again: the same run-measured bound, both ends.
        # Not with kernel stamps (pcap): their send and receive paths differ
        # per direction by more than the sync error (934 ns with a 201 ns
        # error in one run), so there the fixed 4 us stands.
        asym_bound = min(FLOOR_ASYM_NS, 2 * under) if TRAILER else FLOOR_ASYM_NS
        c.check(max(abs(x) for x in asym) < asym_bound,
                "forward and reverse floors agree within %d ns (max %.0f ns)"
                % (asym_bound, max(abs(x) for x in asym)))

        # Where the receive stamps came from.
        rs = [lslab.call(lab.sock(i), "status")["clock"]["rx_stamps"] for i in range(1, n + 1)]
        if TRAILER:
            # A trailer stamp more than one walk knot (10 ms) older than its
            # burst's poll is refused (converting it would replay the
            # simulated walk on the lcore) and the frame keeps its software
            # stamp: that happens when a daemon's lcore is descheduled for
            # that long, as on a 2-core machine running the whole suite in
            # parallel (6 and 64 of about 208,000 in two CI runs). A broken
            # trailer path refuses or misses them all.
            c.check(all(r["trailer"] > 1000 and r["trailer_missing"] == 0 and
                        r["trailer_rejected"] <= TRAILER_REFUSED_MAX * r["trailer"] and
                        r["kernel"] == 0 for r in rs),
                    "receive stamps came from the emulator's trailer, none missing, "
                    "at most %.1f%% refused as stale: %s"
                    % (100 * TRAILER_REFUSED_MAX,
                       [(r["trailer"], r["trailer_missing"], r["trailer_rejected"]) for r in rs]))
        else:
            c.check(all(r["kernel"] > 1000 and r["trailer"] == 0 for r in rs),
                    "receive stamps are the kernel's: %s"
                    % [(r["kernel"], r["kernel_rejected"]) for r in rs])

        # Whether frames were sent at their stamps.
        ts = [lslab.call(lab.sock(i), "status")["clock"]["tx_stamps"] for i in range(1, n + 1)]
        fc = lslab.call(lab.fab, "status")["counters"]
        if SENDTIME:
            c.check(all(t["mode"] == "trailer" and t["scheduled"] > 1000 and t["no_room"] == 0
                        for t in ts),
                    "every node sent its probes and replies with a send-time trailer: %s"
                    % [(t["scheduled"], t["no_room"]) for t in ts])
            c.check(all(t["unsent_seen"] == 0 for t in ts),
                    "no reply arrived with its trailer still on (the emulator took each off): %s"
                    % [t["unsent_seen"] for t in ts])
            c.check(fc["tx_at"] > 1000 and fc["tx_at_bad"] == 0 and
                    fc["tx_at_late"] <= SENDTIME_LATE_MAX * fc["tx_at"],
                    "the emulator sent them at their instants: %d on time, %d late (at most "
                    "%.0f%%), %d refused" % (fc["tx_at"], fc["tx_at_late"],
                                             100 * SENDTIME_LATE_MAX, fc["tx_at_bad"]))
        else:
            c.check(all(t["mode"] == "software" and t["scheduled"] == 0 for t in ts) and
                    fc["tx_at"] + fc["tx_at_late"] + fc["tx_at_bad"] == 0,
                    "no frame carried a send-time trailer: %s, emulator %s"
                    % ([t["scheduled"] for t in ts], fc["tx_at"]))

        # Holdover, failover and a restart are clock sync's logic, whatever
        # stamps the nodes take: the kernel-stamp run (sync-fabric) does
        # them; the trailer runs stop here (CI's 20 minutes).
        if TRAILER:
            c.finish()
        holdover(c, lab, n)
        failover(c, lab, n)
        # A node that restarts rejoins and reconverges.
        subprocess.run([lslab.LAB, "restart-node", "--dir", lab.dir, "--node", "4",
                        "--fabric-core", "1", "--build", lslab.BUILD], check=True)
        t0 = time.time()
        ok = lslab.wait_until(lambda: all_synced(lab, n), CONVERGE_S, step=0.25)
        c.check(ok, "restarted node 4 synced again (%.1f s)" % (time.time() - t0))
        # Its neighbours heard it restart (it announced "not synced yet"
        # after having been synced), started their estimators for it over
        # and acquired it again, as when it was added. Its simulated clock
        # started again from its configured offset, a step of hundreds of
        # microseconds, less than the probes' round trip across the spines
        # could show: before, that step went into the windows and every
        # neighbour's edge to h4 kept a negative half gap.
        seen = [lslab.call(lab.sock(i), "path", {"peer": "h4"}).get("sync") or {}
                for i in (1, 2, 3)]
        c.check(all(x.get("resets", 0) >= 1 and x.get("reacquired", 0) >= 1 for x in seen),
                "h1..h3 started h4's estimators over and acquired it again (resets, "
                "reacquired: %s)" % [(x.get("resets"), x.get("reacquired")) for x in seen])
        # Its first fits use each 2 s window's own slope, which sparse floor
        # samples can tilt (tens of us, seen once in about ten runs at 4 s);
        # from 4 s on the slope comes from the path's offset history.
        time.sleep(8)
        measure(c, lab, n, 12, "after restart")
        gaps = [[x["edge"]["half_gap_ns"] for x in lslab.call(lab.sock(i), "sync")["neighbors"]
                 if x["node_id"] == 4 and x["edge"]][0] for i in (1, 2, 3)]
        c.check(all(g > 0 for g in gaps),
                "after the restart every edge to h4 has a positive half gap (ns): %s"
                % [round(g) for g in gaps])
    c.finish()


if __name__ == "__main__":
    main()
