#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""How far the floor of a sync window sits from the truth (a diagnosis tool, not a test).

    sudo LS_BUILD=build NOISE_WINDOWS=60 tools/bench/window_noise.py [LOAD] > noise.txt

The lab of tools/bench/bench_sync.py (six lockstepd, simulated clocks,
background load LOAD on the spine links, default 0.5) is brought up; from
6 s on, one path window after another (every node, every neighbour, path 0,
in turn) is read with `sync.points`, and every probe it holds is put on the
lab's true timeline: each node's simulated clock is read with `clock {"tsc"}`
every 20 ms over the last 3.5 s, and a stamp is mapped back to true time
between those points. A probe's true one-way delay is then its model delay
plus everything between the sender's clock read and the emulator's ingress:
the noise a software transmit stamp adds, which is what the envelope's
floors sit on.

For every window (the 2 s before its fit) it prints the lowest true delays of
the pure samples per direction, and at the end, over all windows, what the
offset error would be with each side's floor taken as its minimum (what the
envelope does at a fixed drift) or as the mean of its k lowest, both as
measured and with the forward samples thinned to a quarter (as a direction
under four times the load sees its floor): an estimator that looks better
here but moves under thinning would turn asymmetric load into offset error.
Units: ns. Every window's own fit error against the truth is printed too.
"""
import bisect
import json
import os
import random
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_sync  # noqa: E402
from bench_sync import lslab  # noqa: E402

WINDOWS = int(os.environ.get("NOISE_WINDOWS", "60"))
GRID_S, GRID_STEP_S = 3.5, 0.02


def clock(lab, i, tsc=None):
    return lslab.call(lab.sock(i), "clock", {"tsc": tsc} if tsc else {})


def grid(lab, i, tsc0, hz):
    """(local_ns, true_ns) of node i's clock every GRID_STEP_S back from tsc0."""
    g, k = [], 0
    while k * GRID_STEP_S <= GRID_S:
        t = clock(lab, i, int(tsc0 - k * GRID_STEP_S * hz))["truth_at"]
        g.append((t["local_ns"], t["true_ns"]))
        k += 1
    return sorted(g)


def interp(g, x):
    """Linear between the grid's points; integers throughout (ns since 1970
    do not fit a double's 53 bits to the nanosecond)."""
    xs = [p[0] for p in g]
    j = min(max(bisect.bisect_left(xs, x), 1), len(g) - 1)
    (x0, y0), (x1, y1) = g[j - 1], g[j]
    return y0 + (x - x0) * (y1 - y0) // (x1 - x0)


def one_window(lab, i, j, peer, hz):
    """One path window of node i toward node j on the true timeline."""
    tsc = clock(lab, i)["tsc"]
    r = lslab.call(lab.sock(i), "sync.points", {"peer": peer, "path": 0})
    w = r["window"]
    if not w:
        return None
    ga, gb = grid(lab, i, tsc, hz), grid(lab, j, tsc, hz)
    now, span = w["t_ref_ns"], r["window_ns"]
    fwd, rev = [], []
    for t1, t2, t3, t4, pure in r["probes"]:
        if not -span < t1 - now <= 0:
            continue
        if pure & 1:
            fwd.append(interp(gb, t2) - interp(ga, t1))
        if pure & 2:
            rev.append(interp(ga, t4) - interp(gb, t3))
    # the window's own error: its offset (B - A at its t_ref) against the truth
    true_ref = interp(ga, now)
    true_off = interp([(t, lo) for lo, t in gb], true_ref) - now
    return {"i": i, "j": j, "fwd": sorted(fwd), "rev": sorted(rev),
            "fit_err": w["offset_ns"] - true_off, "fit_sigma": w["sigma_ns"]}


def floor_min(a):
    return a[0]


def floor_kmean(k):
    return lambda a: sum(a[:k]) / min(k, len(a))


def report(wins):
    rnd = random.Random(1)
    print("\n%d windows; offset error (ns) with each side's floor taken as:" % len(wins))
    for name, f in (("min", floor_min), ("mean of 4 lowest", floor_kmean(4)),
                    ("mean of 8 lowest", floor_kmean(8))):
        e = [(f(w["fwd"]) - f(w["rev"])) / 2 for w in wins]
        thin = []
        for w in wins:
            for _ in range(20):
                ft = sorted(rnd.sample(w["fwd"], max(5, len(w["fwd"]) // 4)))
                thin.append((f(ft) - f(w["rev"])) / 2)
        print("  %-17s mean %6.1f sd %5.1f | forward thinned to 1/4: mean %6.1f (moved %+6.1f) "
              "sd %5.1f" % (name, statistics.mean(e), statistics.pstdev(e),
                            statistics.mean(thin), statistics.mean(thin) - statistics.mean(e),
                            statistics.pstdev(thin)))
    fe = [w["fit_err"] for w in wins]
    z = [w["fit_err"] / w["fit_sigma"] for w in wins if w["fit_sigma"] > 0]
    print("  the windows' own fits: rms %.1f, rms of error / sigma %.2f" % (
        (sum(x * x for x in fe) / len(fe)) ** 0.5, (sum(x * x for x in z) / len(z)) ** 0.5))


def main():
    load, tmp = bench_sync.tool_args("window_noise", 0.5)
    n = len(bench_sync.HOSTS)
    wins = []
    with bench_sync.loaded_lab(load, tmp) as (lab, t_up):
        c0 = clock(lab, 1)
        time.sleep(1.0)
        c1 = clock(lab, 1)
        hz = (c1["tsc"] - c0["tsc"]) / ((c1["truth_at"]["true_ns"] -
                                         c0["truth_at"]["true_ns"]) * 1e-9)
        time.sleep(max(0.0, 6.0 - (time.time() - t_up)))
        pairs = [(i, j) for i in range(1, n + 1) for j in range(1, n + 1) if i != j]
        k = 0
        while len(wins) < WINDOWS:
            i, j = pairs[k % len(pairs)]
            k += 1
            try:
                w = one_window(lab, i, j, bench_sync.HOSTS[j - 1], hz)
            except (OSError, lslab.CtlError, KeyError) as ex:
                print("skip h%d->h%d: %s" % (i, j, ex), flush=True)
                continue
            if w is None or len(w["fwd"]) < 20 or len(w["rev"]) < 20:
                continue
            wins.append(w)
            print("%6.1f s h%d->h%d fit error %5.0f sigma %4.0f | lowest fwd %s rev %s" % (
                time.time() - t_up, i, j, w["fit_err"], w["fit_sigma"],
                w["fwd"][:6], w["rev"][:6]), flush=True)
    report(wins)


main()
