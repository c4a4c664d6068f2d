#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Integration: per-link queueing (issue 29, item 2) against the emulator's
truth. Every host's lockstepd probes every other host on PATHS paths and
traces them; once a second it fits each link's mean queueing to its paths'
means (`links.queues`, app/lockstepd/linkq.c, lib/tomo). The emulator
records every probe's crossing of every link with the queueing it met
(lab.sh --truth, hop records): the truth for a link direction over an
interval is the mean of those.

Time scale: 1000 times slower than the fabric it stands for (10 Mb/s links
for 10 Gb/s, 1 ms link delays for 1 us, probes every 20 ms for 20 us), so
the issue's "within max(5%, 2 us)" is max(5%, 2 ms) here. The lab's
scheduling noise (a reflector held up reads as queueing toward it, on the
peer's downlink) is 0.1-0.7 ms with the emulator on a core of its own
(--fabric-core 1), 0.3-3.5 ms without: 3 us at the real scale, which fails
the check on the hosts' downlinks (29 false alarms in 92 in one run).

Judged per node, per link group it reports (links its paths always cross
together are one group, and are judged by the sum of their truths), per
interval after a warm-up: the estimate within max(5%, 2 ms) of the truth in
>= 90% of them; and per interval, the congested link (truth over HOT_MS)
named: the node's top group holds it in >= 95% of intervals, and a group
whose truth is under HOT_MS / 2 reads over HOT_MS in <= 1%.

Topologies (--bench: all three; CI: the first) and loads (background
traffic from the emulator's generators: 1500-byte frames in bursts at twice
the link's rate, exponential on and off times, averaging the given share):
  2x2   2 leaves, 2 spines, 2 hosts a leaf
  2x4   2 leaves, 4 spines, 2 hosts a leaf
  3x3   3 leaves, 3 spines, 2 hosts a leaf (paths to two remote leaves)
  uplink    leaf1 -> spine1 at 60% of its rate
  downlink  leaf2 -> h3 at 60%
  two       leaf1 -> spine2 at 50% and spine1 -> leaf2 at 70%

  test_linkq.py [--bench] [TOPO[:LOAD] ...]
"""
import bisect
import json
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "lab"))
import lslab  # noqa: E402

SCALE = int(os.environ.get("LQ_SCALE", "1000"))
LINK_BPS = 10_000_000_000 // SCALE   # 10 Gb/s at the real scale
PATHS = 4
PROBE_US = 20 * SCALE
# congested: 5 us of mean queueing at the real scale, 2.5 times the accuracy
# floor; a false alarm is a link read over it whose truth is under half of
# it. (At 1 us, under the floor, an estimate 1.5 us off -- within its
# accuracy -- counted as a false alarm.)
HOT_MS = 5e-3 * SCALE
TOL_MS = 2e-3 * SCALE            # max(5%, 2 us) at the real scale
WARM_S = 6                       # the load's queues, the first estimates after it
TRACE_S = int(os.environ.get("LQ_TRACE_S", "150"))  # every path traced (6 hosts: > 60 s)
SECS = int(os.environ.get("LQ_SECS", "12"))
LAB_EPOCH_NS = 1700000000000000000
# the emulator on a core of its own, busy polling (its delivery times within
# a few us of the model's; docs/fabric.md), and no queue-depth sampling (the
# probes' hop records are the truth here; depth samples crowded the file
# past its 1 GB cap within a minute), and room for 6 hosts' records (the
# default 1 GB cap cut the truth of the 3x3 runs before their judged seconds)
LAB_EXTRA = os.environ.get("LQ_LAB", "--fabric-core 1 --sample-us 0 --truth-max-mb 8192").split()
TOPOS = {"2x2": (2, 2, 2), "2x4": (2, 4, 2), "3x3": (3, 3, 2)}
LOADS = {
    "uplink": [("leaf1-spine1", "ab", 0.6)],
    "downlink": [("h3-leaf2", "ba", 0.6)],
    "two": [("leaf1-spine2", "ab", 0.5), ("leaf2-spine1", "ba", 0.7)],
}


def topo(name):
    leaves, spines, hosts = TOPOS[name]
    link = {"rate_bps": LINK_BPS, "delay_ns": 1000 * SCALE, "buffer_bytes": 100_000}
    return lslab.leaf_spine(leaves, spines, hosts, link, dict(link), ipv6=False)


def names_of(t):
    """lockstepd's addresses -> the emulator's node names."""
    m = {s["ipv4"]: s["name"] for s in t["switches"]}
    m.update({h["ipv4"].split("/")[0]: h["name"] for h in t["hosts"]})
    return m


def link_dirs(t):
    """{frozenset({x, y}): (emulator link name, a end)}"""
    out = {}
    for l in t["links"]:
        out[frozenset((l["a"], l["b"]))] = ("%s-%s" % (l["a"], l["b"]), l["a"])
    for h in t["hosts"]:
        out[frozenset((h["name"], h["leaf"]))] = ("%s-%s" % (h["name"], h["leaf"]), h["name"])
    return out


def read_truth(path):
    """{(link, dir): ([t], [queue_ns])} from the hop records, sorted by t."""
    per = {}
    with open(path) as f:
        for line in f:
            if '"hop"' not in line:
                continue
            r = json.loads(line)
            if r.get("type") != "hop" or "queue_ns" not in r:
                continue
            per.setdefault((r["link"], r["dir"]), []).append((r["t"], r["queue_ns"]))
    out = {}
    for k, v in per.items():
        v.sort()
        ts = [x[0] for x in v]
        pre = [0]
        for x in v:
            pre.append(pre[-1] + x[1])
        out[k] = (ts, pre)
    return out


def truth_mean(tr, key, t0, t1):
    """The mean queueing (ns) of the probes that crossed key in [t0, t1)."""
    if key not in tr:
        return None
    ts, pre = tr[key]
    i, j = bisect.bisect_left(ts, t0), bisect.bisect_left(ts, t1)
    return (pre[j] - pre[i]) / (j - i) if j > i else None


def run(c, tname, lname, rows):
    t = topo(tname)
    addr = names_of(t)
    ldir = link_dirs(t)
    hosts = [h["name"] for h in t["hosts"]]
    name = "%s:%s" % (tname, lname)
    tmp = tempfile.mkdtemp(prefix="ls-linkq-")
    topo_file = os.path.join(tmp, "topo.json")
    with open(topo_file, "w") as f:
        json.dump(t, f)
    extra_file = os.path.join(tmp, "extra.json")
    with open(extra_file, "w") as f:
        json.dump({h: {"links": {"hot_us": 5000},
                       "probe": {"loss_timeout_us": 100 * PROBE_US}} for h in hosts}, f)
    samples = []   # (host, at_lab_ns, span_ns, reply)
    with lslab.FabricLab(topo_file, "linkq", ["--interval-us", str(PROBE_US), "--paths",
                                              str(PATHS), "--extra", extra_file,
                                              "--truth"] + LAB_EXTRA) as lab:
        socks = [lab.sock(i) for i in range(1, len(hosts) + 1)]
        truth_file = os.path.join(lab.dir, "truth.jsonl")
        # every node's every path traced and in its estimate (traces come in
        # the background, a few a second)
        want = (len(hosts) - 1) * PATHS

        def traced():
            try:
                return all(lslab.call(s, "links.queues")["paths"] >= want for s in socks)
            except (OSError, lslab.CtlError):
                return False
        # (a path whose trace is still incomplete after that is left out:
        # it is judged by what the node reports, not by what it waits for)
        if not lslab.wait_until(traced, TRACE_S):
            print("# %s: not every path traced after %d s: %s of %d" % (
                name, TRACE_S, [lslab.call(s, "links.queues")["paths"] for s in socks], want),
                flush=True)
        for link, d, util in LOADS[lname]:
            # bursts at twice the link's rate, exponential on (mean 20 ms)
            # and off, averaging util of the link: queues of tens of ms
            on = 20 * SCALE
            lslab.call(lab.fab, "gen.start", {
                "name": "%s-%s" % (link, d), "link": link, "dir": d, "rate_bps": 2 * LINK_BPS,
                "pkt_bytes": 1500, "on_us": on, "off_us": int(on * (2 / util - 1)),
                "random": True})
        time.sleep(WARM_S)
        off = time.clock_gettime_ns(time.CLOCK_REALTIME) - \
            time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW)
        seen = {s: 0 for s in socks}
        end = time.time() + SECS
        while time.time() < end:
            for h, s in zip(hosts, socks):
                r = lslab.call(s, "links.queues")
                if r["estimates"] > seen[s] and r["span_ms"] > 0:
                    seen[s] = r["estimates"]
                    samples.append((h, r["at_utc_ns"] - off + LAB_EPOCH_NS,
                                    int(r["span_ms"] * 1e6), r))
            time.sleep(0.25)
        kept = os.path.join(tmp, "truth.jsonl")
        os.rename(truth_file, kept) if os.path.exists(truth_file) else None
        truth_file = kept
    tr = read_truth(truth_file)
    shutil.rmtree(tmp, ignore_errors=True)    # the truth is ~1 GB
    if os.environ.get("LQ_DEBUG"):
        with open("/tmp/lq-samples.json", "w") as f:
            json.dump(samples, f)
        print("# truth keys %s" % sorted(tr)[:40])
        for k, (ts, pre) in sorted(tr.items())[:3]:
            print("# %s: %d records, t %d .. %d" % (k, len(ts), ts[0], ts[-1]))
        for h, at, span, r in samples[-4:]:
            print("# %s at %d span %d: %s" % (h, at, span, json.dumps(r)[:1500]))
    good = bad = 0
    top_ok = top_n = 0
    fa = fa_n = 0
    worst = []
    for h, at, span, r in samples:
        groups = {}
        for e in r["links"]:
            a, b = e["link"].split("-")
            key = frozenset((addr.get(a, a), addr.get(b, b)))
            if key not in ldir:
                continue
            lname_, aend = ldir[key]
            d = "ab" if addr.get(e["from"], e["from"]) == aend else "ba"
            tm = truth_mean(tr, (lname_, d), at - span, at)
            g = groups.setdefault(round(e["queue_us"], 3), {"est": e["queue_us"] / 1e3,
                                                             "truth": 0.0, "known": True,
                                                             "links": [], "shared": e["shared"]})
            g["links"].append("%s/%s" % (lname_, d))
            if tm is None:
                g["known"] = False
            else:
                g["truth"] += tm / 1e6
        for g in groups.values():
            if not g["known"]:
                continue
            tol = max(0.05 * g["truth"], TOL_MS)
            if abs(g["est"] - g["truth"]) <= tol:
                good += 1
            else:
                bad += 1
                worst.append((abs(g["est"] - g["truth"]), h, g["links"], g["est"], g["truth"]))
            if g["truth"] < HOT_MS / 2:
                fa_n += 1
                fa += g["est"] > HOT_MS
        hot = [g for g in groups.values() if g["known"] and g["truth"] > HOT_MS]
        if hot:
            top_n += 1
            best = max(groups.values(), key=lambda g: g["est"])
            truth_top = max(hot, key=lambda g: g["truth"])
            top_ok += best is truth_top
    n = good + bad
    frac = good / n if n else 0
    rows.append((name, len(samples), n, frac, top_ok, top_n, fa, fa_n))
    worst.sort(reverse=True)
    print("# %s: %d estimates, %d group-intervals: within max(5%%, %.0f ms) %d (%.1f%%); "
          "congested link on top %d of %d; false alarms %d of %d; worst %s" % (
              name, len(samples), n, TOL_MS, good, 100 * frac, top_ok, top_n, fa, fa_n,
              [(x[1], x[2], round(x[3], 2), round(x[4], 2)) for x in worst[:3]]), flush=True)
    c.check(n > 0 and frac >= 0.90, "%s: per-link queueing within max(5%%, 2 us) in >= 90%% "
            "of intervals (%.1f%% of %d)" % (name, 100 * frac, n))
    c.check(top_n > 0 and top_ok >= 0.95 * top_n, "%s: the congested link on top in >= 95%% "
            "of intervals (%d of %d)" % (name, top_ok, top_n))
    c.check(fa <= 0.01 * fa_n, "%s: false alarms <= 1%% (%d of %d)" % (name, fa, fa_n))


def main():
    lslab.exit_on_signals()
    bench = "--bench" in sys.argv[1:]
    cases = [a for a in sys.argv[1:] if not a.startswith("--")]
    if not cases:
        cases = (["%s:%s" % (tn, ln) for tn in TOPOS for ln in LOADS] if bench
                 else ["2x2:uplink"])
    c = lslab.Checks("linkq")
    rows = []
    for case in cases:
        tn, _, ln = case.partition(":")
        for l in ([ln] if ln else list(LOADS)):
            run(c, tn, l, rows)
    if len(rows) > 1:
        print("# linkq over %d cases: within max(5%%, 2 us) %s; congested on top %s; "
              "false alarms %d of %d" % (
                  len(rows), " ".join("%s %.1f%%" % (r[0], 100 * r[3]) for r in rows),
                  " ".join("%d/%d" % (r[4], r[5]) for r in rows), sum(r[6] for r in rows),
                  sum(r[7] for r in rows)), flush=True)
    c.finish()


if __name__ == "__main__":
    main()
