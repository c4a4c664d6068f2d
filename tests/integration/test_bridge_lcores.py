#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Integration: the data path on two lcores (bridge.lcores) with the Linux
kernel's TCP on both sides, as test_bridge.py wires it; the RSS spread by
default (BRIDGE_SPREAD=soft for the soft spread).

RSS: both af_packet ports get two queue pairs (qpairs=2); the kernel's
packet fanout fills them by its own flow hash (ports included), not by
lockstepd's, so each lcore reads frames of the other's address pairs too
and hands them on through its ring: the lab's af_packet has no RSS of its
own, and this is the path every frame takes where a NIC hashes otherwise.
Soft: the lead reads both ports' one queue and hands frames out.

Four iperf3 flows from four source addresses of host H to P. Each host
pair belongs to one lcore (RSS: the symmetric Toeplitz hash of the two
addresses, (h mod 64) mod 2, computed here by an implementation of its
own; soft: ls_flow_spread_hash, by a copy here); the sources are chosen so
that two pairs go to each lcore. Checks:
  - every flow is on the lcore the hash names (`flows`: lcore), both ways
    (the ACKs from P came back to the lcore of their data);
  - both lcores carried frames from both ports (`bridge`: lcores);
  - one slice capped at 150 Mb/s holds all four: their summed goodput is
    the cap (within 2% above, 15% below: TCP's own saw-tooth), though each
    lcore shapes only its own flows -- the control thread splits the cap
    between them by demand (`bridge`: shares);
  - the host side adds up over both lcores: rx_host = tx_fabric + drops +
    held (wheel, slices, rings), and no frame was dropped at the spread;
  - the daemon stops cleanly.
"""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_bridge as tb  # noqa: E402

CAP = 150e6
N_LCORES = 2
M64 = (1 << 64) - 1
SPREAD = os.environ.get("BRIDGE_SPREAD", "rss")
RSS_KEY = bytes([0x6d, 0x5a] * 26)


def toeplitz(data, key=RSS_KEY):
    """The Toeplitz hash of data (bytes) under key, bit by bit."""
    k = int.from_bytes(key, "big")
    kbits = len(key) * 8
    h = 0
    for i in range(len(data) * 8):
        if data[i // 8] >> (7 - i % 8) & 1:
            h ^= (k >> (kbits - 32 - i)) & 0xffffffff
    return h


def mix(x):
    """lib/flow's spread_mix (a murmur3 finaliser)."""
    x ^= x >> 33
    x = (x * 0xff51afd7ed558ccd) & M64
    x ^= x >> 33
    x = (x * 0xc4ceb9fe1a85ec53) & M64
    return x ^ (x >> 33)


def lcore_index(src, dst, n=N_LCORES):
    """Which of n data-path lcores owns IPv4 pair src-dst (0: the lead)."""
    if SPREAD == "rss":
        ip = lambda x: bytes(int(o) for o in x.split("."))  # noqa: E731
        return (toeplitz(ip(src) + ip(dst)) & 63) % n
    a = int.from_bytes(bytes(int(o) for o in src.split(".")), "big")
    b = int.from_bytes(bytes(int(o) for o in dst.split(".")), "big")
    h = (mix((a ^ b) | 4 << 32) >> 32) | 1
    return (h * n) >> 32


def pick_sources(dst, per_lcore=2):
    """Addresses 10.77.0.10.. until each lcore has per_lcore of them."""
    got = {i: [] for i in range(N_LCORES)}
    for last in range(10, 250):
        src = "10.77.0.%d" % last
        j = lcore_index(src, dst)
        if len(got[j]) < per_lcore:
            got[j].append(src)
        if all(len(v) == per_lcore for v in got.values()):
            return got
    raise RuntimeError("no sources found")


class Bridge2(tb.Bridge):
    """test_bridge's wiring, lockstepd on lcores 1 (the lead) and 0."""
    eal_lcores = "0@(0,1),1@(0,1)"

    def config(self, policy):
        path = super().config(policy)
        import json
        with open(path) as f:
            cfg = json.load(f)
        for p in cfg["ports"]:
            p["lcore"] = 1
            if SPREAD == "rss":
                p["dev"] += ",qpairs=%d" % N_LCORES
        cfg["bridge"]["lcores"] = [1, 0]
        cfg["bridge"]["spread"] = SPREAD
        with open(path, "w") as f:
            json.dump(cfg, f)
        return path


def iperf3_many(br, sources, secs=8):
    """One kernel TCP flow from each source to P (a server per flow).
    Returns the receivers' goodputs, bits/s, over the last secs - 2 s."""
    srvs, clis = [], []
    for i, _ in enumerate(sources):
        srvs.append(subprocess.Popen(["ip", "netns", "exec", br.ns_p, "iperf3", "-s", "-1",
                                      "-J", "-p", str(5201 + i)], stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True))
    time.sleep(0.5)
    try:
        for i, src in enumerate(sources):
            clis.append(subprocess.Popen(["ip", "netns", "exec", br.ns_h, "iperf3", "-c",
                                          "10.77.0.2", "-B", src, "-p", str(5201 + i), "-t",
                                          str(secs)], stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL))
        for p in clis:
            p.wait(timeout=secs + 30)
        out = []
        import json
        for s in srvs:
            o, _ = s.communicate(timeout=30)
            iv = json.loads(o)["intervals"][2:]
            out.append(sum(x["sum"]["bits_per_second"] for x in iv) / max(len(iv), 1))
        return out
    finally:
        for p in clis + srvs:
            if p.poll() is None:
                p.kill()
                p.wait()


def checks(c, br, tmp):
    policy = {"slices": [{"name": "capped", "max_bps": CAP, "qlen": 1024,
                          "match": {"proto": "tcp"}}]}
    srcs = pick_sources("10.77.0.2")
    sources = srcs[0] + srcs[1]
    for s in sources:
        tb.sh("ip", "-n", br.ns_h, "addr", "add", s + "/24", "dev", br.tag + "hk")
    c.check(br.start(br.config(policy)), "lockstepd up on lcores 1 and 0")
    tb.sh("ip", "netns", "exec", br.ns_h, "ping", "-c", "2", "-W", "2", "10.77.0.2", check=False)
    rates = iperf3_many(br, sources)
    total = sum(rates)
    want = tb.goodput_of(CAP)
    c.check(want * 0.85 <= total <= want * 1.02,
            "four flows on two lcores in one slice capped at %.0f Mb/s: %.1f Mb/s in all "
            "(goodput at the cap %.1f; flows %s)" %
            (CAP / 1e6, total / 1e6, want / 1e6, ["%.1f" % (r / 1e6) for r in rates]))
    b = br.call("bridge")
    lcores = {x["lcore"]: x for x in b["lcores"]}
    c.check(len(lcores) == 2 and all(x["rx_host"] > 1000 and x["rx_fabric"] > 1000
                                     for x in lcores.values()),
            "both lcores carried frames from both ports: %s" % b["lcores"])
    flows = br.call("flows", {"top": 100})["top"]
    placed, wrong = 0, []
    for f in flows:
        if f["kind"] != "tcp":
            continue
        host_addr = f["src"] if f["dir"] == "host" else f["dst"]
        if host_addr not in sources:
            continue
        want_lcore = [1, 0][lcore_index(host_addr, "10.77.0.2")]
        placed += 1
        if f.get("lcore") != want_lcore:
            wrong.append((host_addr, f["dir"], f["lcore"], want_lcore))
    c.check(placed >= 8 and not wrong,
            "each flow, both ways, on the lcore its address pair hashes to: %d flows, "
            "misplaced %s" % (placed, wrong))
    k, held = b["counters"], b["held"]
    drops = k["pace_drops"] + k["wheel_full"] + k["slice_drops"] + k["tx_drops_fabric"]
    q = held["wheel"] + held["slices"] + held["rings"]
    c.check(k["rx_host"] == k["tx_fabric"] + drops + q,
            "host side over both lcores: rx_host %d = tx_fabric %d + drops %d + held %d" %
            (k["rx_host"], k["tx_fabric"], drops, q))
    sp = b["spread"]
    c.check(sp["mode"] == SPREAD and sp["queues"] == (N_LCORES if SPREAD == "rss" else 1),
            "spread %s, %d queues per port: %s" % (SPREAD, N_LCORES if SPREAD == "rss" else 1,
                                                   sp))
    # soft: the lead hands out every other lcore's frame; RSS: the fanout
    # put some on the wrong queue (none when it happens to agree)
    c.check(k["spread_drops_host"] == 0 and k["spread_drops_fabric"] == 0 and
            (k["spread_out"] > 0 or SPREAD == "rss"),
            "frames handed between lcores %d (for lockstepd, to the lead %d), none dropped "
            "(host %d, fabric %d)" % (k["spread_out"], k["spread_to_lead"],
                                      k["spread_drops_host"], k["spread_drops_fabric"]))
    c.check(any(s["link"] != 0.5 for s in b["shares"]) and
            all(s["messages_failed"] == 0 for s in b["shares"]),
            "the control thread split the link by demand: %s" % b["shares"])
    c.check(br.stop() == 0, "lockstepd stops cleanly (exit 0)")


def main():
    tb.run("bridge-lcores", "lsl", checks, tools=("iperf3", "ethtool"), cls=Bridge2)


if __name__ == "__main__":
    main()
