#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Soak (not in CI; issue 29): flaps every few seconds under background load
for SOAK_MIN minutes (default 10) on the links test's fabric (2 leaves, 4
spines, 2 hosts a leaf, four lockstepd, 8 paths, probes every 20 ms,
routing converging after 5 s so a 1 s flap kills its paths).

Every FLAP_S seconds a random leaf-spine link goes down for 1 s (scheduled
ahead with link.flap start_ms); 2 Gb/s of background traffic runs h2 -> h4
the whole time. Reported at the end:
  - per flap, whether some node said link.suspect naming a link of that
    spine within 1 s of the truth's instant, and how soon;
  - suspects that no flap explains (no flap of a link of their spine in the
    2 s before them): events without a cause;
  - each lockstepd's RSS at the start and the end (flat memory).

  sudo LS_BUILD=build SOAK_MIN=10 tools/bench/soak_links.py
"""
import json
import os
import random
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lab"))
import lslab  # noqa: E402

MINUTES = float(os.environ.get("SOAK_MIN", "10"))
FLAP_S = float(os.environ.get("FLAP_S", "4"))


def rss_kb(lab_dir):
    out = {}
    for pid in subprocess.run(["pgrep", "-f", lab_dir], capture_output=True,
                              text=True).stdout.split():
        try:
            cmd = open("/proc/%s/cmdline" % pid).read()
            if "lockstepd" not in cmd:
                continue
            for ln in open("/proc/%s/status" % pid):
                if ln.startswith("VmRSS:"):
                    out[pid] = int(ln.split()[1])
        except OSError:
            pass
    return out


def main():
    lslab.exit_on_signals()
    lslab.need_root()
    rnd = random.Random(29)
    t = lslab.leaf_spine(2, 4, 2, link={"delay_ns": 20000, "rate_bps": 10_000_000_000},
                         host_link={"delay_ns": 5000})
    t["convergence_ms"] = 5000
    hosts = [h["name"] for h in t["hosts"]]
    addr = {s["name"]: (s["ipv4"], s["ipv6"]) for s in t["switches"]}
    tmp = tempfile.mkdtemp(prefix="ls-soak-")
    with open(os.path.join(tmp, "topo.json"), "w") as f:
        json.dump(t, f)
    with open(os.path.join(tmp, "extra.json"), "w") as f:
        json.dump({h: {"links": {"hot_us": 5000}} for h in hosts}, f)
    with lslab.FabricLab(os.path.join(tmp, "topo.json"), "soak",
                         ["--interval-us", "20000", "--paths", "8",
                          "--extra", os.path.join(tmp, "extra.json")]) as lab:
        socks = [lab.sock(i) for i in range(1, 5)]
        lslab.wait_until(lambda: all(lslab.call(s, "links")["links_known"] >= 8 for s in socks), 60)
        time.sleep(2)
        rss0 = rss_kb(lab.dir)
        lslab.call(lab.fab, "gen.start", {"name": "bg", "src": "h2", "dst": "h4",
                                          "rate_bps": 2e9, "flows": 16})
        flaps = []
        end = time.time() + MINUTES * 60
        rss_mid = []
        # Each node keeps its last events.keep (4,096) events: read them as
        # the run goes (a read at the end lost the first fifth of a 10-minute
        # run's, and with them the first flaps' suspects).
        allev, nxt, missed_ev = [], [0] * len(socks), [0]

        def drain():
            for i, s in enumerate(socks):
                while True:
                    r = lslab.call(s, "events", {"since": nxt[i], "max": 100000})
                    missed_ev[0] += r["missed"]
                    allev.extend((i + 1, e) for e in r["events"])
                    if not r["events"] or r["next"] <= nxt[i]:
                        break
                    nxt[i] = r["next"]
        while time.time() < end:
            link = "leaf%d-spine%d" % (rnd.randint(1, 2), rnd.randint(1, 4))
            b = time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW)
            lslab.call(lab.fab, "link.flap", {"link": link, "down_ms": 1000,
                                              "every_ms": 100000, "count": 1, "start_ms": 100})
            off = time.clock_gettime_ns(time.CLOCK_REALTIME) - \
                time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW)
            flaps.append((link, b + 100_000_000 + off))   # UTC of the link's death
            time.sleep(FLAP_S)
            if len(flaps) % 30 == 0:
                rss_mid.append(sum(rss_kb(lab.dir).values()))
            if len(flaps) % 5 == 0:
                drain()
        lslab.call(lab.fab, "gen.stop", {"name": "bg"})
        time.sleep(2)
        rss1 = rss_kb(lab.dir)
        drain()
        sus = [(i, e) for i, e in allev if e["type"] == "link.suspect"]
    spine_of = lambda link: link.split("-")[1]  # noqa: E731

    def touches(e, spine):
        return any(addr[spine][0] in c.split("-") or addr[spine][1] in c.split("-")
                   for c in e["candidates"])
    named, lags, missed = 0, [], []
    for link, t_ns in flaps:
        hits = [(e["time_ns"] - t_ns) / 1e6 for _, e in sus
                if touches(e, spine_of(link)) and 0 <= e["time_ns"] - t_ns <= 1e9]
        if hits:
            named += 1
            lags.append(min(hits))
        else:
            missed.append((link, t_ns))
    causeless = [e for _, e in sus
                 if not any(touches(e, spine_of(link)) and 0 <= e["time_ns"] - t_ns <= 2e9
                            for link, t_ns in flaps)]
    lags.sort()
    print("soak_links: %.0f min, %d flaps every %.0f s under 2 Gb/s of background traffic" % (
        MINUTES, len(flaps), FLAP_S))
    print("soak_links: %d of %d flaps named by some node within 1 s (first event after p50 %.0f ms, "
          "p99 %.0f ms, max %.0f ms); %d link.suspect events in all, %d without a flap behind "
          "them" % (named, len(flaps), lags[len(lags) // 2] if lags else -1,
                    lags[int(len(lags) * 0.99)] if lags else -1, lags[-1] if lags else -1,
                    len(sus), len(causeless)))
    print("soak_links: %d events read as the run went, %d the nodes had dropped before "
          "they were read" % (len(allev), missed_ev[0]))
    print("soak_links: lockstepd RSS, kB: start %s, every 30 flaps (sum) %s, end %s" % (
        sorted(rss0.values()), rss_mid, sorted(rss1.values())))
    for e in causeless[:5]:
        print("soak_links:   without a cause: %s" % json.dumps(e)[:300])
    # what the nodes said around a flap nobody named: a suspect of another
    # link, paths down without a suspect, or nothing at all
    for link, t_ns in missed[:int(os.environ.get("SOAK_SHOW", "8"))]:
        near = [(n, e) for n, e in allev if -1e9 <= e["time_ns"] - t_ns <= 2e9]
        kinds = {}
        for n, e in near:
            kinds[e["type"]] = kinds.get(e["type"], 0) + 1
        print("soak_links:   not named: %s at %d; events from -1 s to +2 s: %s" % (
            link, t_ns, kinds))
        for n, e in near:
            if e["type"] in ("link.suspect", "link.clear", "link.up"):
                print("soak_links:     h%d %+.0f ms %s %s" % (
                    n, (e["time_ns"] - t_ns) / 1e6, e["type"],
                    json.dumps({k: v for k, v in e.items()
                                if k not in ("time_ns", "type", "seq")})[:240]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
