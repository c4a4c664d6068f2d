#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Integration: a lockstepd mesh across lockstep-fabric, checked against the
emulator's configuration and its ground truth.

2 spines x 2 leaves x 2 hosts, host links 20 us, leaf-spine links 300 us,
four lockstepd probing every other host on 4 paths over IPv4 and IPv6.

  1. configured path delays show up in measured RTTs: every RTT lies in
     [expected, expected + lab slack], and cross-leaf minus same-leaf RTT
     matches the configured difference;
  2. a downed spine link (with a long routing convergence delay, so ECMP
     keeps hashing onto it) makes exactly the paths that cross it, forward
     or reverse, as the emulator's own `route` says, lose probes;
  3. bursty background load on one link direction raises the RTT of exactly
     the paths that cross it (each path's lower median of two windows,
     against the median rise of the paths that cross nothing);
  4. the ground truth agrees: per-hop link delays equal the configured ones,
     probes cross the links `route` predicts, the failure is recorded, drops
     on the dead link are "down", queues build only on the loaded link.
  5. h1 expects receive-stamp trailers (clock.rx_trailer) the emulator does
     not append (no --rx-trailer): every frame is counted as without one and
     keeps its bytes, and h1 measures like the others (checks 1-4 include it).
"""
import collections
import gc
import json
import os
import re
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "lab"))
import lslab  # noqa: E402

HOST_US, SPINE_US = 20, 300
INTERVAL_US, PATHS = 50000, 4
# Lab overhead on two shared cores (idle back-off, scheduling), on top of
# the configured RTT: 305 to 522 us in the runs of 2026-11-25 (the median
# sits on a histogram bucket, 1/32 of its value). It is the measuring
# node's, the same on all its paths, so each path is judged against its
# node's own overhead (the median over its paths of RTT minus configured):
# within PATH_US of it (issue 27 B: the band was +800 us on every path,
# which a path 700 us off would have passed). PATH_US is three histogram
# buckets at a cross-leaf RTT (~1.7 ms with the overhead): the spread seen
# over one node's paths was at most 100 us. The overhead itself is only
# reported (bounded by SLACK_US, the lab's, not the product's); never
# faster than configured (-5 us); the spine's share is checked by the
# cross-minus-same-leaf difference (+-100 us).
SLACK_US = 800
PATH_US = 150

TOPO = lslab.leaf_spine(2, 2, 2,
                        link={"delay_ns": SPINE_US * 1000, "rate_bps": 10_000_000_000,
                              "buffer_bytes": 1048576, "ecn_bytes": 131072},
                        host_link={"delay_ns": HOST_US * 1000})
HOSTS = [h["name"] for h in TOPO["hosts"]]
LEAF = {h["name"]: h["leaf"] for h in TOPO["hosts"]}


Hop = collections.namedtuple("Hop", "t link dir depart deliver ser_ns queue_ns")
# lockstep-fabric writes a hop as one compact JSON object (app/fabric/control.c,
# truth_json); a million of them take json.loads ~17 s on a CI core, this
# pattern ~2 s. Likewise queue depths. A line neither matches is parsed as
# JSON, so a change of format costs time, not checks.
HOP_RE = re.compile(r'\{"t":(\d+),"link":"([^"]+)","dir":"(ab|ba)","type":"hop",.*'
                    r'"depart":(\d+),"deliver":(\d+),"ser_ns":(\d+),"queue_ns":(-?\d+)')


DEPTH_RE = re.compile(r'\{"t":(\d+),"link":"([^"]+)","dir":"(ab|ba)","type":"depth","bytes":(\d+)\}$')


def read_truth(lines):
    """(hops as Hop tuples, every other record as a dict). The collector is
    off meanwhile: a million new tuples would run it thousands of times over
    a growing heap (11.6 s with it, 6.8 s without, on the test's 1.7 M)."""
    gc.disable()
    try:
        return read_truth_records(lines)
    finally:
        gc.enable()


def read_truth_records(lines):
    hops, recs = [], []
    for ln in lines:
        if '"type":"hop"' not in ln:
            m = DEPTH_RE.match(ln)
            recs.append({"t": int(m[1]), "link": m[2], "dir": m[3], "type": "depth", "bytes": int(m[4])}
                        if m else json.loads(ln))
            continue
        m = HOP_RE.match(ln)
        if m:
            t, link, d, dep, dlv, ser, q = m.groups()
            hops.append(Hop(int(t), link, d, int(dep), int(dlv), int(ser), int(q)))
        else:
            x = json.loads(ln)
            if x["type"] != "hop":
                recs.append(x)
                continue
            hops.append(Hop(x["t"], x["link"], x["dir"], x["depart"], x["deliver"], x["ser_ns"],
                            x["queue_ns"]))
    return hops, recs


def peers_of(name):
    return [(o + sfx, o, fam) for o in HOSTS if o != name
            for sfx, fam in (("", "ipv4"), ("v6", "ipv6"))]


def crossing(lab, link, dirs=("ab", "ba")):
    """{(node, peer, path): bool}: does the probe or its reply cross link?"""
    out = {}
    for i, n in enumerate(HOSTS, 1):
        for peer, o, fam in peers_of(n):
            for p in range(PATHS):
                sport = 49152 + p
                fl = sport if fam == "ipv6" else 0  # lockstepd's IPv6 flow label
                fwd = lslab.call(lab.fab, "route", {"src": n, "dst": o, "sport": sport, "dport": 862,
                                                    "family": fam, "flow_label": fl})
                rev = lslab.call(lab.fab, "route", {"src": o, "dst": n, "sport": 862, "dport": sport,
                                                    "family": fam, "flow_label": fl})
                out[(i, peer, p)] = any(h["link"] == link and h["dir"] in dirs for h in fwd + rev)
    return out


def snapshot(lab):
    s = {}
    for i, n in enumerate(HOSTS, 1):
        for peer, _, _ in peers_of(n):
            for p in lslab.call(lab.sock(i), "path", {"peer": peer, "window": "1s"})["paths"]:
                s[(i, peer, p["path"])] = p
    return s


def rtts(lab, window="10s"):
    r = {}
    for i, n in enumerate(HOSTS, 1):
        for peer in lslab.call(lab.sock(i), "paths", {"window": window})["peers"]:
            for q in peer["paths"]:
                r[(i, peer["name"], q["path"])] = q["rtt_p50_ns"]
    return r


def quiet_rtts(lab, windows=2, secs=4):
    """Each path's lowest RTT median over `windows` fresh windows of `secs`.

    Lab noise (a lockstepd or the emulator losing its shared core) only adds
    delay, and on a busy machine it can hold one path's median up for a whole
    window: a CI run once saw a path that crossed nothing rise +754 us in one
    4 s window. A load's queue is there in every window, so the lowest of two
    keeps it and sheds the transient."""
    best = {}
    for _ in range(windows):
        reset_all(lab)
        time.sleep(secs)
        for k, v in rtts(lab).items():
            if v is not None and (best.get(k) is None or v < best[k]):
                best[k] = v
            else:
                best.setdefault(k, None)
    return best


def reset_all(lab):
    for i in range(1, len(HOSTS) + 1):
        lslab.call(lab.sock(i), "stats.reset")


def main():
    lslab.exit_on_signals()
    c = lslab.Checks("fabric")
    lslab.need_root()
    tmp = tempfile.mkdtemp(prefix="ls-fab-")
    topo_file = os.path.join(tmp, "topo.json")
    with open(topo_file, "w") as f:
        json.dump(TOPO, f)
    extra_file = os.path.join(tmp, "extra.json")
    with open(extra_file, "w") as f:
        json.dump({"h1": {"clock": {"source": "tsc", "rx_trailer": True}}}, f)
    with lslab.FabricLab(topo_file, "fabric", ["--truth", "--interval-us", str(INTERVAL_US),
                                               "--paths", str(PATHS), "--extra", extra_file]) as lab:
        def answered():
            try:
                return all(q["received"] >= 3 for i in range(1, 5)
                           for p in lslab.call(lab.sock(i), "paths", {"window": "10s"})["peers"]
                           for q in p["paths"])
            except (OSError, lslab.CtlError):
                return False
        c.check(lslab.wait_until(answered, 40), "every host reaches every other on every path (IPv4, IPv6)")

        # 1. Delays: each path's lowest median over two fresh windows (lab
        # noise only adds delay), judged against its node's own overhead.
        r = quiet_rtts(lab, windows=2, secs=3)
        same, cross, over = [], [], {}
        for (i, peer, p), rtt in sorted(r.items()):
            n, o = HOSTS[i - 1], peer.rstrip("v6")
            exp_us = 2 * (2 * HOST_US + (0 if LEAF[n] == LEAF[o] else 2 * SPINE_US))
            if rtt is not None:
                over.setdefault(i, []).append(rtt / 1000 - exp_us)
        node_over = {i: sorted(v)[len(v) // 2] for i, v in over.items()}
        print("# lab overhead on the RTT per node (median over its paths, us): %s" %
              {HOSTS[i - 1]: round(v, 1) for i, v in sorted(node_over.items())}, flush=True)
        for (i, peer, p), rtt in sorted(r.items()):
            n, o = HOSTS[i - 1], peer.rstrip("v6")
            exp_us = 2 * (2 * HOST_US + (0 if LEAF[n] == LEAF[o] else 2 * SPINE_US))
            base = node_over.get(i, 0)
            ok = rtt is not None and rtt / 1000 >= exp_us - 5 and \
                abs(rtt / 1000 - exp_us - base) <= PATH_US and base <= SLACK_US
            c.check(ok, "%s -> %s path %d: RTT p50 %s us, configured %d us + the node's "
                    "overhead %.1f us (+-%d us)" % (n, peer, p, None if rtt is None else
                                                   round(rtt / 1000, 1), exp_us, base, PATH_US))
            (same if LEAF[n] == LEAF[o] else cross).append(rtt or 0)
        same.sort()
        cross.sort()
        diff = (cross[len(cross) // 2] - same[len(same) // 2]) / 1000
        c.check(abs(diff - 4 * SPINE_US) <= 100,
                "cross-leaf minus same-leaf RTT %.1f us, configured %d us (+-100)" % (diff, 4 * SPINE_US))

        # The emulator's own noise is reported: how late it delivered, and
        # how long a sent frame could wait for its next poll (its ingress
        # time), a histogram of every pass of its loop since start.
        st = lslab.call(lab.fab, "status")
        gap = st.get("poll_gap_ns", {})
        c.check(gap.get("count", 0) > 1000 and 0 < gap["p50"] <= gap["p99"] <= gap["max"] and
                st["delivery_lateness_ns"]["count"] > 0,
                "status reports the emulator's poll gap (%s) and delivery lateness" % gap)

        # 2. A spine link goes down; ECMP keeps using it for the convergence delay.
        lslab.call(lab.fab, "routing.set", {"convergence_ms": 60000})
        cr = crossing(lab, "leaf1-spine1")
        c.check(0 < sum(cr.values()) < len(cr),
                "%d of %d paths cross leaf1-spine1 (forward or reverse)" % (sum(cr.values()), len(cr)))
        t_down = lslab.call(lab.fab, "status")["now_ns"]
        lslab.call(lab.fab, "link.set", {"link": "leaf1-spine1", "up": False})
        time.sleep(0.5)
        a = snapshot(lab)
        time.sleep(2.0)
        b = snapshot(lab)
        for k, crosses in sorted(cr.items()):
            dl = b[k]["counters"]["lost"] - a[k]["counters"]["lost"]
            dr = b[k]["counters"]["received"] - a[k]["counters"]["received"]
            if crosses:
                c.check(dl > 0 and dr == 0, "n%d -> %s path %d crosses the dead link: +%d lost, +%d received"
                        % (k[0], k[1], k[2], dl, dr))
            else:
                c.check(dl == 0 and dr > 0, "n%d -> %s path %d avoids it: +%d lost, +%d received"
                        % (k[0], k[1], k[2], dl, dr))
        lslab.call(lab.fab, "routing.set", {"convergence_ms": 0})
        lslab.call(lab.fab, "link.set", {"link": "leaf1-spine1", "up": True})
        t_up = lslab.call(lab.fab, "status")["now_ns"]

        # 3. Bursty load on one direction of one link: 2 Gb/s bursts (1.2 ms on,
        # 1.8 ms off: 80% on average) into a 1 Gb/s link build a queue of up to
        # 1.2 ms; a probe meets a queue uniform over the cycle (idle 20% of
        # it), so a crossing path's median RTT should rise ~450 us. Medians,
        # not means: on two shared cores one multi-ms scheduling stall moves
        # a mean by hundreds of us. At ~1.3 ms a median's resolution is one
        # histogram bucket (1/32, ~65 us): the bounds leave two buckets of
        # room, and every crossing path must still rise more than any other.
        lslab.call(lab.fab, "link.set", {"link": "leaf2-spine2", "dir": "ba", "rate_bps": 1e9})
        time.sleep(1.0)
        cr = crossing(lab, "leaf2-spine2", ("ba",))
        before = quiet_rtts(lab)
        lslab.call(lab.fab, "gen.start", {"name": "load", "link": "leaf2-spine2", "dir": "ba",
                                          "rate_bps": 2e9, "on_us": 1200, "off_us": 1800,
                                          "pkt_bytes": 9000})
        time.sleep(1.0)
        after = quiet_rtts(lab)
        lslab.call(lab.fab, "gen.stop", {"name": "load"})
        rise = {k: ((after[k] or 0) - (before[k] or 0)) / 1000 for k in cr}
        # What every path rose by alike is the lab's, not the load's: the
        # emulator generates the bursts on its own core and, when the
        # machine is busy, delivers everything later (+197 us on every path
        # with a busy loop on the other core, 2026-11-25). The claim is
        # about the crossing paths against the others, so both are read
        # against the median of the paths that cross nothing.
        common = sorted(v for k, v in rise.items() if not cr[k])
        common = common[len(common) // 2]
        # A path that does not cross the link may rise by noise alone: a
        # scheduling stall in one of its windows moved one median up by
        # +197 us over the others (a half-busy machine, 2026-11-25), while
        # every crossing path rose by 524 us or more. So a path that does
        # not cross may rise by up to 140 us, or by half the least a
        # crossing path rose if that is more: load that leaked onto it
        # would put it level with the crossing ones, noise does not.
        lo_c = min((rise[k] - common for k in cr if cr[k]), default=0)
        quiet_max = max(140, lo_c / 2)
        for k, crosses in sorted(cr.items()):
            if crosses:
                # the bursts queue up to 1.2 ms; the median probe of a
                # crossing path has seen 196-330 us of it in runs so far
                c.check(rise[k] - common >= 150,
                        "n%d -> %s path %d crosses the loaded link: RTT p50 %+.1f us (%+.1f over "
                        "the others' median)" % (k[0], k[1], k[2], rise[k], rise[k] - common))
            else:
                # Only a rise would be the load's doing: a path that does not
                # cross the link can only come out faster by the noise of its
                # "before" median (-197 us, three buckets, in two runs on a
                # busy machine on 2026-11-25).
                c.check(rise[k] - common <= quiet_max,
                        "n%d -> %s path %d does not cross it: RTT p50 %+.1f us (%+.1f over the "
                        "others' median, at most %.0f)" % (k[0], k[1], k[2], rise[k], rise[k] - common,
                                                           quiet_max))
        lo = min(v for k, v in rise.items() if cr[k])
        hi = max(v for k, v in rise.items() if not cr[k])
        c.check(lo - common > 2 * max(hi - common, 0),
                "every crossing path rose more (min %+.1f us) than twice any other (max %+.1f us), "
                "both over the others' median (%+.1f us)" % (lo, hi, common))

        # 3b. Flaps, a slow receiver, routed background traffic between hosts.
        t_flap = lslab.call(lab.fab, "status")["now_ns"]  # load phase over
        lslab.call(lab.fab, "link.flap", {"link": "leaf2-spine1", "down_ms": 100, "every_ms": 300,
                                          "count": 2})
        lslab.call(lab.fab, "host.slow", {"host": "h4", "rate_bps": 1e7})
        slow = [x for x in lslab.call(lab.fab, "links") if x["link"] == "h4-leaf2"]
        c.check([x["params"]["rate_bps"] for x in slow] == [10_000_000_000, 10_000_000],
                "host.slow h4: leaf2 -> h4 at 10 Mb/s, h4 -> leaf2 unchanged")
        before = {(x["link"], x["dir"]): x["counters"]["pkts"] for x in lslab.call(lab.fab, "links")}
        lslab.call(lab.fab, "gen.start", {"name": "pair", "src": "h1", "dst": "h4", "rate_bps": 1e8,
                                          "flows": 8, "pkt_bytes": 1000})
        time.sleep(1.0)
        g = lslab.call(lab.fab, "gens")
        lslab.call(lab.fab, "gen.stop", {"name": "pair"})
        after = {(x["link"], x["dir"]): x["counters"]["pkts"] for x in lslab.call(lab.fab, "links")}
        grew = {k for k in after if after[k] - before.get(k, 0) >= 1000}
        c.check(g and g[0]["name"] == "pair" and g[0]["sent"] >= 10000,
                "routed generator h1 -> h4 sent %s packets" % (g[0]["sent"] if g else None))
        c.check(("h1-leaf1", "ab") in grew and ("h4-leaf2", "ba") in grew and
                (("leaf1-spine1", "ab") in grew or ("leaf1-spine2", "ab") in grew),
                "its packets crossed h1 -> leaf1 -> a spine -> leaf2 -> h4")
        c.check(any(x["counters"]["drop_tail"] > 0 for x in lslab.call(lab.fab, "links")
                    if x["link"] == "h4-leaf2" and x["dir"] == "ba"),
                "100 Mb/s into h4's 10 Mb/s last hop: tail drops there (a slow receiver)")
        # random on/off bursts: exponential lengths, the same mean duty cycle
        try:
            lslab.call(lab.fab, "gen.start", {"name": "bad", "link": "leaf1-spine1", "rate_bps": 1e8,
                                              "random": True})
            c.check(False, "random without on_us/off_us is refused")
        except lslab.CtlError:
            c.check(True, "random without on_us/off_us is refused")
        lslab.call(lab.fab, "gen.start", {"name": "rnd", "link": "leaf1-spine1", "dir": "ab",
                                          "rate_bps": 1e8, "pkt_bytes": 1000, "on_us": 200,
                                          "off_us": 800, "random": True})
        time.sleep(2.0)
        g = [x for x in lslab.call(lab.fab, "gens") if x["name"] == "rnd"]
        lslab.call(lab.fab, "gen.stop", {"name": "rnd"})
        # 12.5k pkt/s while on, on 20% of the time: ~2.5k/s (the lab takes
        # a moment to answer, so 2 s of sleep is a little more)
        c.check(g and g[0]["random"] and 3000 <= g[0]["sent"] <= 8000,
                "random on/off generator: %s packets in ~2 s at a 20%% mean duty cycle"
                % (g[0]["sent"] if g else None))
        lslab.call(lab.fab, "host.slow", {"host": "h4", "rate_bps": 1e10})
        back = [x for x in lslab.call(lab.fab, "links") if x["link"] == "h4-leaf2" and x["dir"] == "ba"][0]
        c.check(back["depth_bytes"] <= back["params"]["buffer_bytes"],
                "a slowed link set back to full rate keeps a sane queue (%d bytes)" % back["depth_bytes"])

        # 4. Ground truth.
        configured = {}
        for ln in lslab.call(lab.fab, "links"):
            configured[(ln["link"], ln["dir"])] = ln["params"]["delay_ns"]
        # The emulator is still writing: read what is there in one go and
        # drop the unterminated tail. (Iterating the open file lines instead
        # can hand out the tail of a line that was partial at the first EOF
        # as a line of its own once the writer has finished it.)
        with open(os.path.join(lab.dir, "truth.jsonl")) as f:
            lines = f.read().split("\n")[:-1]
        # A probe's recorded hops follow the route the emulator computes for
        # it: the first h1 -> h3 probe after the link came back, and its route
        # while the emulator is up.
        h1h3 = [ln for ln in lines if '"type":"hop"' in ln and '"10.1.0.1"' in ln and '"10.2.0.1"' in ln]
        h1h3 = [x for x in map(json.loads, h1h3) if x["probe"]["src"] == "10.1.0.1" and
                x["probe"]["dst"] == "10.2.0.1" and not x["probe"]["reflected"]]
        # lockstepd's route traces share a path's ports but are not STAMP:
        # no sequence number, one frame per TTL (a CI run once took a trace
        # re-run after the link came back for the first probe)
        h1h3 = [x for x in h1h3 if x["probe"]["seq"] is not None]
        h = next(x for x in h1h3 if x["t"] > t_up)
        seq, sport = h["probe"]["seq"], h["probe"]["sport"]
        walked = [(x["link"], x["dir"]) for x in h1h3
                  if x["probe"]["seq"] == seq and x["probe"]["sport"] == sport]
        route = [(x["link"], x["dir"]) for x in lslab.call(lab.fab, "route", {"src": "h1", "dst": "h3",
                                                                              "sport": sport, "dport": 862})]
        c.check(walked == route, "probe %d from h1 to h3 crossed %s, route says %s" % (seq, walked, route))

        # 5. A trailer port that gets frames without trailers loses nothing.
        # (rx_pkts counts a burst before its frames are stamped, and the
        # status reply reads the two counters at different instants, so a
        # burst or two can land between them either way: CI once saw 2
        # more missing trailers than frames)
        st = lslab.call(lab.sock(1), "status")
        rs, rx = st["clock"]["rx_stamps"], st["counters"]["rx_pkts"]
        c.check(rs["trailer_mode"] and rs["trailer"] == 0 and rx > 1000 and
                abs(rx - rs["trailer_missing"]) <= 64,
                "h1 (clock.rx_trailer, emulator without --rx-trailer): all %d frames counted "
                "without a trailer (%d), software stamps used" % (rx, rs["trailer_missing"]))

    # The rest of the truth once the lab is down: a million records parse
    # 3x faster without four lockstepd and the emulator polling both cores.
    hops, recs = read_truth(lines)
    print("# truth: %d hop records, %d others" % (len(hops), len(recs)), flush=True)
    # Before any rate change the link delay is exactly the configured one;
    # after a slowed link is sped up, packets behind the backlog cannot
    # overtake it (FIFO: deliveries never reorder), so the bound is >=.
    early = [h for h in hops if h.t < t_flap]
    bad = [h for h in early if h.deliver - h.depart != configured[(h.link, h.dir)]]
    c.check(len(early) > 1000 and not bad,
            "%d probe hops before any rate change: deliver - depart equals the configured delay on "
            "every one (%d differ)" % (len(early), len(bad)))
    bad = [h for h in hops if h.deliver - h.depart < configured[(h.link, h.dir)]]
    c.check(not bad, "all %d hops: never faster than the configured delay (%d are)" % (len(hops), len(bad)))
    bad = [h for h in hops if h.depart - h.t != h.queue_ns + h.ser_ns]
    c.check(not bad, "every hop's departure = arrival + queueing + its serialization (%d differ)" % len(bad))
    ev = [x for x in recs if x["type"] == "link" and x["link"] == "leaf1-spine1"]
    c.check(len(ev) == 4 and [e["up"] for e in ev] == [False, False, True, True]
            and t_down <= ev[0]["t"] <= ev[2]["t"] <= t_up,
            "link down/up recorded for both directions, in order, at the right times")
    # Only drops while the link was down are the dead link's: the same
    # link carries the random generator's bursts later on, and on a
    # loaded machine a stalled emulator can catch up on them in one go
    # and tail-drop (seen once in a parallel full-suite run).
    drops = [x for x in recs if x["type"] == "drop" and x["link"] == "leaf1-spine1"
             and t_down <= x["t"] <= t_up]
    other = sorted((d["reason"], d["t"], d.get("queue_bytes")) for d in drops if d["reason"] != "down")
    c.check(drops and not other,
            "%d probes dropped on the dead link, all for reason \"down\"%s"
            % (len(drops), " (others: %s)" % other[:5] if other else ""))
    deep = {}
    for x in recs:
        if x["type"] == "depth" and t_up < x["t"] < t_flap:
            key = (x["link"], x["dir"])
            deep[key] = max(deep.get(key, 0), x["bytes"])
    loaded = deep.get(("leaf2-spine2", "ba"), 0)
    others = max([v for k, v in deep.items() if k != ("leaf2-spine2", "ba")] or [0])
    c.check(loaded >= 30000 and others < 5000,
            "during the load phase, queues built on the loaded link only: %d bytes there, at most %d elsewhere"
            % (loaded, others))
    # The schedule is exact (the instants it calls for, "due"); when the
    # emulator applied each edge ("t") trails it by however long a busy
    # CI host held up the poll loop (11 ms seen once), so that gets a
    # looser bound than the schedule itself.
    fl = [x for x in recs if x["type"] == "link" and x["link"] == "leaf2-spine1" and x["dir"] == "ab"]
    due = [x.get("due", 0) for x in fl]
    gaps = [(due[i + 1] - due[i]) / 1e6 for i in range(len(due) - 1)]
    late = [(x["t"] - d) / 1e6 for x, d in zip(fl, due)]
    c.check([x["up"] for x in fl] == [False, True, False, True] and due[0] >= t_flap and
            gaps == [100, 200, 100] and all(0 <= x < 50 for x in late),
            "flap: down 100 ms every 300 ms, twice: due %s ms apart, applied %s ms late"
            % (gaps, [round(x, 2) for x in late]))
    c.finish()


if __name__ == "__main__":
    main()
