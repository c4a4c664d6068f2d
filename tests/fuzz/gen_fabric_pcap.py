#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Write a deterministic pcap of what host h1 (10.1.0.1, fd00:1::1) might send
into lockstep-fabric, for tests/fuzz/test_fabric_fastpath.sh.

Mostly IPv4 to the other hosts (UDP with random ports, some to the STAMP port
so --hops records them; TCP, ICMP echo and errors, GRE), with everything the
IPv4 fast path must hand to the generic path or judge exactly like it: TTL 0,
1, 2 and 3 (Time Exceeded at the first, second or third switch), every ECN
codepoint (links mark ECT packets above a small threshold), IP options,
fragments, bad header checksums, bad total lengths, truncated frames, unknown
destinations, the switches' own addresses. Plus IPv6, ARP and garbage.

Addresses: h1 10.1.0.1 and h2 10.1.0.2 on leaf1, h3 10.2.0.1 and h4 10.2.0.2
on leaf2 (fd00:1::/64 and fd00:2::/64 alike), leaf1 10.255.1.1.
"""
import argparse
import os
import random
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "lab"))
from lspkt import csum, write_pcap  # noqa: E402

H1_MAC = bytes.fromhex("020000000101")
LEAF_MAC = bytes.fromhex("02fa00000003")
BCAST = b"\xff" * 6
DSTS = ["10.1.0.2"] * 3 + ["10.2.0.1"] * 5 + ["10.2.0.2"] * 2 + \
       ["10.255.1.1", "10.255.0.1", "10.3.0.1", "10.1.0.1"]


def ip4(a):
    return bytes(int(x) for x in a.split("."))


def eth(dst, etype, payload):
    return dst + H1_MAC + struct.pack("!H", etype) + payload


def v4(rnd):
    proto = rnd.choice([17] * 8 + [6, 1, 47])
    n = rnd.choice([0, 10, 40, 200, 1000, 1458])
    if proto == 17:
        dport = rnd.choice([862, 53, rnd.randrange(65536)])
        l4 = struct.pack("!HHHH", rnd.randrange(1, 65536), dport, 8 + n, 0) + rnd.randbytes(n)
    elif proto == 1:
        l4 = bytes([rnd.choice([8, 0, 3, 11]), 0, 0, 0, 0, 1, 0, 1]) + bytes(n)
        l4 = l4[:2] + struct.pack("!H", csum(l4)) + l4[4:]
    else:
        l4 = rnd.randbytes(20 + n)
    opts = b"" if rnd.random() < 0.95 else b"\x01\x01\x01\x00"
    frag = 0x4000 if rnd.random() < 0.9 else rnd.choice([0x2000, 0x0001, 0x0000])
    tlen = 20 + len(opts) + len(l4)
    if rnd.random() < 0.03:
        tlen = rnd.randrange(0, tlen + 50)
    h = struct.pack("!BBHHHBBH4s4s", 0x45 + len(opts) // 4, rnd.randrange(256), tlen & 0xFFFF,
                    rnd.randrange(65536), frag, rnd.choice([0, 1, 2, 3, 64, 64, 64, 255]), proto, 0,
                    ip4("10.1.0.1"), ip4(rnd.choice(DSTS))) + opts
    c = csum(h) ^ (0x1234 if rnd.random() < 0.03 else 0)
    h = h[:10] + struct.pack("!H", c) + h[12:]
    if rnd.random() < 0.02:
        l4 = l4[:rnd.randrange(len(l4) + 1)]
    return eth(LEAF_MAC, 0x0800, h + l4)


def v6(rnd):
    src = bytes.fromhex("fd000001000000000000000000000001")
    dst = bytes.fromhex(rnd.choice(["fd000002000000000000000000000001",
                                    "fd000001000000000000000000000002",
                                    "fd000009000000000000000000000001"]))
    n = rnd.choice([10, 100, 1000])
    u = struct.pack("!HHHH", rnd.randrange(1, 65536), 862, 8 + n, 0) + bytes(n)
    h = struct.pack("!IHBB16s16s", 0x60000000 | rnd.randrange(1 << 28), len(u), 17,
                    rnd.choice([0, 1, 2, 64]), src, dst)
    return eth(LEAF_MAC, 0x86DD, h + u)


def arp(rnd):
    tpa = ip4(rnd.choice(["10.1.0.2", "10.1.0.1", "10.1.0.9"]))
    return eth(BCAST, 0x0806, struct.pack("!HHBBH6s4s6s4s", 1, 0x0800, 6, 4, 1, H1_MAC,
                                          ip4("10.1.0.1"), bytes(6), tpa))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", help="pcap file to write")
    ap.add_argument("--count", type=int, default=60000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rnd = random.Random(args.seed)
    # An ARP first: the leaf learns h1's MAC, so replies to h1 are unicast.
    frames = [arp(rnd)]
    while len(frames) < args.count:
        r = rnd.random()
        frames.append(v4(rnd) if r < 0.80 else v6(rnd) if r < 0.90 else arp(rnd) if r < 0.92
                      else rnd.randbytes(rnd.randrange(14, 200)))
    write_pcap(args.out, (fr + bytes(max(0, 60 - len(fr))) for fr in frames), first_us=0)
    print(len(frames))
    return 0


if __name__ == "__main__":
    sys.exit(main())
