#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Integration: the reflector cannot be used as an amplifier or a flood relay.

A net_pcap port replays, as fast as the PMD can, 2,000 valid STAMP test
packets from one source interleaved with 100 from each of ten other
sources, to a reflector limited to 100 packets/s with a burst of 10 per
source. The replies written to the TX pcap must show: every reply the same
size as its request (no amplification); the flooding source held to its
burst; every light source still answered up to its burst (one source's
flood does not starve the others); and every packet counted exactly once.

Then (regression, issue 27 M2) 100,000 spoofed sources, one probe each,
against a 1,024-source table, with ten probes from a configured peer
spread among them after the table is full: the peer has a bucket of its
own, so all ten are answered (before the fix it shared the overflow bucket
with every stranger and got almost none).
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "lab"))
import lslab  # noqa: E402
import lspkt  # noqa: E402

DUT_MAC = bytes.fromhex("020000000001")
DUT_IP = bytes([10, 8, 0, 1])
RATE, BURST = 100, 10


def probe(src, seq, pad):
    """An RFC 8762 Session-Sender packet, with an unknown TLV as padding."""
    stamp = lspkt.stamp_probe(seq, lspkt.tlv(200, b"\0" * pad))
    u = lspkt.udp(src, DUT_IP, 49152, lspkt.STAMP_PORT, stamp)
    ip = lspkt.ipv4(src, DUT_IP, 17, u, frag=0x4000)
    return lspkt.eth(DUT_MAC, bytes.fromhex("020000000099"), lspkt.ETH_IP4, ip)


def spoofed_flood(c, tmp):
    """A configured peer's probes are never rate-limited by strangers."""
    rx, tx = os.path.join(tmp, "rx2.pcap"), os.path.join(tmp, "tx2.pcap")
    peer = bytes([10, 8, 0, 50])
    n_spoof, n_peer = 100000, 10
    frames = []
    for k in range(n_spoof):
        s = 0x0A640000 + 1 + k  # 10.100.0.1 .. : none ours, none martian
        frames.append(probe(s.to_bytes(4, "big"), k, 0))
        if k >= 5000 and k % ((n_spoof - 5000) // n_peer) == 0 and sum(
                1 for f in frames if f[26:30] == peer) < n_peer:
            frames.append(probe(peer, k, 0))
    lspkt.write_pcap(rx, frames, first_us=0)
    sock = os.path.join(tmp, "rl2.sock")
    cfg = {
        "node": {"name": "rl2", "id": 10},
        "ports": [{"name": "p0", "dev": "net_pcap0,rx_pcap=%s,tx_pcap=%s" % (rx, tx),
                   "mac": "02:00:00:00:00:01", "ipv4": "10.8.0.1/24"}],
        "peers": [{"name": "p", "addr": "10.8.0.50", "mac": "02:00:00:00:00:50"}],
        "probe": {"interval_us": 1000000},
        "reflector": {"rate_pps": RATE, "burst": BURST, "max_sources": 1024},
        "control": {"socket": sock, "peers_file": ""},
    }
    d = lslab.Daemon(cfg, tmp, "rl2", prefix="lsrl2%d" % os.getpid()).start()
    try:
        c.check(lslab.wait_until(lambda: os.path.exists(sock), 20), "flood: daemon up")
        c.check(lslab.wait_until(lambda: lslab.call(sock, "status")["counters"]["rx_pkts"] >= len(frames), 60),
                "flood: all %d frames received" % len(frames))
        cnt = lslab.call(sock, "status")["counters"]
    finally:
        d.stop(15)
    c.check(cnt["rl_overflow"] > n_spoof / 2,
            "flood: the table was full, strangers overflowed (%d)" % cnt["rl_overflow"])
    to_peer = sum(1 for ts, fr in lslab.read_pcap(tx)
                  if (lslab.udp_of(fr) or (0, 0, 0))[:3] == (DUT_IP, peer, 862))
    c.check(to_peer == n_peer, "flood: the configured peer's %d probes all answered (%d)" % (n_peer, to_peer))


def main():
    lslab.exit_on_signals()
    c = lslab.Checks("ratelimit")
    lslab.need_root()
    tmp = tempfile.mkdtemp(prefix="ls-rl-")
    spoofed_flood(c, tmp)
    rx, tx = os.path.join(tmp, "rx.pcap"), os.path.join(tmp, "tx.pcap")
    heavy = bytes([10, 8, 0, 200])
    light = [bytes([10, 8, 0, 100 + i]) for i in range(10)]
    frames = []
    for k in range(2000):
        frames.append(probe(heavy, k, 40))
        if k % 2 == 0:
            frames.append(probe(light[(k // 2) % 10], k, k % 64))
    lspkt.write_pcap(rx, frames, first_us=0)
    sock = os.path.join(tmp, "rl.sock")
    cfg = {
        "node": {"name": "rl", "id": 9},
        "ports": [{"name": "p0", "dev": "net_pcap0,rx_pcap=%s,tx_pcap=%s" % (rx, tx),
                   "mac": "02:00:00:00:00:01", "ipv4": "10.8.0.1/24"}],
        "reflector": {"rate_pps": RATE, "burst": BURST},
        "control": {"socket": sock, "peers_file": ""},
    }
    d = lslab.Daemon(cfg, tmp, "rl", prefix="lsrl%d" % os.getpid()).start()
    try:
        c.check(lslab.wait_until(lambda: os.path.exists(sock), 20), "daemon up")
        c.check(lslab.wait_until(lambda: lslab.call(sock, "status")["counters"]["rx_pkts"] >= len(frames), 30),
                "all %d frames received" % len(frames))
        st = lslab.call(sock, "status")
        cnt = st["counters"]
        disp = sum(v for k, v in cnt.items() if k.startswith("rx_") and k != "rx_pkts")
        c.check(disp == cnt["rx_pkts"] == len(frames), "every frame counted once (%d)" % disp)
        c.check(cnt["rx_reflected"] + cnt["rx_rate_limited"] == len(frames),
                "reflected %d + rate-limited %d" % (cnt["rx_reflected"], cnt["rx_rate_limited"]))
    finally:
        d.stop(15)
    # Allowance (docs/datapath.md, reflector: a token bucket per source,
    # rate_pps RATE, burst BURST): the burst plus what the rate refills while
    # the daemon was answering. That time is the span of the replies' pcap
    # timestamps (written as they leave; the input replays as fast as the
    # PMD reads), plus REFILL_SLACK_S for the reads before the first reply.
    # Was BURST + RATE * max(1 s, time after the replay) + 1 = 111 for a
    # burst of 10; now ~11-13 when the replay takes milliseconds, and it
    # widens by itself when the replay was descheduled.
    REFILL_SLACK_S = 0.02
    ts = [t for t, fr in lslab.read_pcap(tx)]
    span = (max(ts) - min(ts)) / 1e9 if ts else 0.0
    allow = int(BURST + RATE * (span + REFILL_SLACK_S)) + 1
    print("replies over %.1f ms: allowance per source %d" % (span * 1e3, allow))
    per_src, same_size = {}, True
    req_len = {}
    for fr in frames:
        req_len.setdefault(fr[26:30], set()).add(len(fr))
    for ts, fr in lslab.read_pcap(tx):
        u = lslab.udp_of(fr)
        if u is None or u[2] != 862:
            continue
        per_src[u[1]] = per_src.get(u[1], 0) + 1
        same_size &= len(fr) in req_len.get(u[1], ())
    c.check(same_size, "every reply is exactly the size of a request from that source")
    c.check(BURST <= per_src.get(heavy, 0) <= allow,
            "flooding source (2000 sent): %d replies, bound %d" % (per_src.get(heavy, 0), allow))
    for s in light:
        c.check(BURST <= per_src.get(s, 0) <= allow,
                "light source %s (100 sent): %d replies" % (".".join(map(str, s)), per_src.get(s, 0)))
    c.finish()


if __name__ == "__main__":
    main()
