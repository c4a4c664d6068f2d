#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Clock-sync start-up trace on the fabric emulator (a diagnosis tool, not a test).

    sudo LS_BUILD=build TRACE_SECS=10 tools/bench/trace_sync.py [LOAD] > trace.txt

The lab of tools/bench/bench_sync.py (six lockstepd on 2 spines x 2 leaves x
3 hosts, simulated clocks, background load LOAD on the spine links, default
0.9) is brought up, and from then on, every TRACE_EVERY_S (default 0.25)
for TRACE_SECS, every node is read at once: its fleet-time error against
the reference's simulated clock, its sigma, and for each neighbour its
edge's offset and drift against ground truth at the instant of its last
fit step, with the sigmas the edge claims. It prints one table per node
(time from lab up across, quantities down) and one JSON line per sample.

Why: the benchmark says how far off the fleet is and when; this says which
edge was off, by how much, whether it said so, and whether its drift or its
offset was the one that was wrong. Start-up under load is where the fleet is
furthest off (docs/benchmarks.md).
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_sync  # noqa: E402
from bench_sync import lslab  # noqa: E402

SECS = float(os.environ.get("TRACE_SECS", "10"))
EVERY = float(os.environ.get("TRACE_EVERY_S", "0.25"))


def local_at(lab, i, tsc):
    return lslab.call(lab.sock(i), "clock", {"tsc": tsc})["truth_at"]["local_ns"]


def sample(lab, n, t_up):
    """One reading of every node and every edge against the truth."""
    socks = [lab.sock(i) for i in range(1, n + 1)]
    truth, reps = lslab.fleet_readings(socks[0], socks[1:])
    out = {"t": round(time.time() - t_up, 2), "nodes": {}}
    drift = {i: d for i, (_, d) in enumerate(bench_sync.CLOCKS, 1)}
    for i, r in enumerate([lslab.call(socks[0], "sync")] + reps, 1):
        st = r["state"]
        node = {"status": st["status"], "sigma": round(st["sigma_ns"]),
                "phi_sigma_ppm": round(st["phi_sigma_ppm"], 3)}
        if i > 1 and st["status"] in ("synced", "holdover"):
            node["err"] = round(r["reading"]["fleet_ns"] - truth)
        t = r["step_tsc"]
        if t:
            here = local_at(lab, i, t)
            edges = {}
            for x in r["neighbors"]:
                e, j = x["edge"], x["node_id"]
                if not e:
                    continue
                true_d = ((1 + drift[j] * 1e-6) / (1 + drift[i] * 1e-6) - 1) * 1e6
                edges["h%d" % j] = {
                    "err": round(e["offset_ns"] - (local_at(lab, j, t) - here)),
                    "sig": round(e["sigma_ns"]),
                    "derr_ppm": round(e["drift_ppm"] - true_d, 3),
                    "dsig_ppm": round(e["drift_sigma_ppm"], 3),
                    "w": round(x["weight"], 3), "rej": x["rejected"]}
            node["edges"] = edges
        out["nodes"]["h%d" % i] = node
    return out


def table(samples, n):
    for i in range(1, n + 1):
        h = "h%d" % i
        print("\n%s  (fleet error and sigma, ns; each edge: offset error and sigma, ns,"
              " drift error and sigma, ppm)" % h)
        cols, keys = [], ["fleet", "sigma"]
        for s in samples:
            nd = s["nodes"].get(h, {})
            c = {"fleet": nd.get("err"), "sigma": nd.get("sigma")}
            for j, e in sorted(nd.get("edges", {}).items()):
                c.update({j + " off": e["err"], j + " sig": e["sig"],
                          j + " dppm": e["derr_ppm"], j + " dsig": e["dsig_ppm"]})
            keys += [k for k in c if k not in keys]
            cols.append(c)
        print("  %-9s" % "t" + "".join("%9.2f" % s["t"] for s in samples))
        for k in keys:
            print("  %-9s" % k + "".join("%9s" % ("-" if c.get(k) is None else c[k])
                                        for c in cols))


def main():
    load, tmp = bench_sync.tool_args("trace_sync", 0.9)
    n = len(bench_sync.HOSTS)
    samples = []
    with bench_sync.loaded_lab(load, tmp) as (lab, t_up):
        end = t_up + SECS
        while time.time() < end:
            t = time.time()
            try:
                samples.append(sample(lab, n, t_up))
            except (OSError, lslab.CtlError, KeyError):
                pass
            time.sleep(max(0.0, EVERY - (time.time() - t)))
    table(samples, n)
    for s in samples:
        print("JSON " + json.dumps(s))


if __name__ == "__main__":
    main()
