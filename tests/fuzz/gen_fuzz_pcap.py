#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Write a deterministic pcap (DLT_EN10MB) of hostile and valid frames for
lockstepd's receive path.

Headers come from tools/lab/lspkt.py (plain struct, no scapy: ~50x faster
for 100k+ frames, and every builder takes the field we want to break).

Mix (per frame, by weight):
  valid   STAMP test packets to the daemon (IPv4/IPv6, with and without TLVs)
  mutated the same with one or more faults: byte flips, truncation, random
          IP/UDP/TLV length fields, bad checksums, fragments, VLAN tags,
          huge TLV lengths
  garbage random bytes of length 0..1600 with random or real EtherTypes
  neigh   ARP and ND, well-formed and malformed
  reply   STAMP reflector packets (source port 862) from non-peers and from
          the configured peer
  icmp    ICMP/ICMPv6 Time Exceeded and Unreachable quoting a path-discovery
          probe of ours (tagged or not, any trace id and TTL), truncated or
          with random type, code and inner lengths (app/lockstepd/route.c)

The daemon side of the contract (see tests/fuzz/test_fuzz.sh): MAC
02:00:00:00:00:01, 10.9.0.1/24, fd00:9::1/64, one peer 10.9.0.2.
"""
import argparse
import ipaddress
import os
import random
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "lab"))
from lspkt import (ETH_ARP, ETH_IP4, ETH_IP6, ETH_QINQ, ETH_VLAN, STAMP_PORT,  # noqa: E402
                   csum, eth, ipv4, ipv6, l4_csum, udp, write_pcap)

OUR_MAC = bytes.fromhex("020000000001")
PEER_MAC = bytes.fromhex("020000000002")
BCAST = b"\xff" * 6
OUR_V4 = ipaddress.IPv4Address("10.9.0.1").packed
PEER_V4 = ipaddress.IPv4Address("10.9.0.2").packed
OUR_V6 = ipaddress.IPv6Address("fd00:9::1").packed
PEER_V6 = ipaddress.IPv6Address("fd00:9::2").packed
SPORT_BASE = 49152


def udp_frame(rnd, v6, src, dst, sport, dport, payload, dst_mac=OUR_MAC, src_mac=None, **kw):
    src_mac = src_mac or random_unicast_mac(rnd)
    if v6:
        return eth(dst_mac, src_mac, ETH_IP6, ipv6(src, dst, 17, udp(src, dst, sport, dport, payload)))
    return eth(dst_mac, src_mac, ETH_IP4, ipv4(src, dst, 17, udp(src, dst, sport, dport, payload), **kw))


def random_unicast_mac(rnd):
    return bytes([rnd.randrange(256) & 0xFE | 0x02]) + rnd.randbytes(5)


def random_src(rnd, v6):
    # A few thousand distinct sources: exercises the rate-limit table without
    # filling it.
    n = rnd.randrange(4000)
    if v6:
        return ipaddress.IPv6Address("fd00:9::1000").packed[:12] + struct.pack("!I", 0x10000 + n)
    return ipaddress.IPv4Address(0x0A0A0000 + 1 + n).packed  # 10.10.0.1 .. 10.10.15.160


def tlv(rnd, typ=None, length=None, value=None):
    typ = rnd.choice([1, 3, 8, 200, 252, 255, rnd.randrange(256)]) if typ is None else typ
    value = rnd.randbytes(rnd.choice([0, 4, 8, 24, rnd.randrange(64)])) if value is None else value
    ln = len(value) if length is None else length
    return struct.pack("!BBH", rnd.choice([0, 0, 0, 0x80, rnd.randrange(256)]), typ, ln & 0xFFFF) + value


def stamp_test(rnd, with_tlvs):
    z = rnd.choice([0x4000, 0])
    p = struct.pack("!IIIHH28x", rnd.getrandbits(32), rnd.getrandbits(32), rnd.getrandbits(32),
                    z | 0x0101, rnd.choice([0, 0, rnd.getrandbits(16)]))
    if with_tlvs:
        for _ in range(rnd.randrange(1, 4)):
            p += tlv(rnd)
    return p


def stamp_reply(rnd):
    return struct.pack("!I8sHH8sI8sHHB3x", rnd.getrandbits(32), rnd.randbytes(8), 0x4101, 0,
                       rnd.randbytes(8), rnd.getrandbits(32), rnd.randbytes(8), 0x4101, 0, 64)


def gen_valid(rnd):
    v6 = rnd.random() < 0.4
    payload = stamp_test(rnd, rnd.random() < 0.4)
    dst_mac = rnd.choice([OUR_MAC] * 8 + [BCAST, b"\x01\x00\x5e\x00\x00\x01"])
    return udp_frame(rnd, v6, random_src(rnd, v6), OUR_V6 if v6 else OUR_V4,
                     rnd.randrange(1024, 65536), STAMP_PORT, payload, dst_mac=dst_mac)


def gen_mutated(rnd):
    v6 = rnd.random() < 0.4
    src, dst = random_src(rnd, v6), OUR_V6 if v6 else OUR_V4
    sport = rnd.randrange(1024, 65536)
    payload = stamp_test(rnd, rnd.random() < 0.6)
    kind = rnd.randrange(11)
    smac = random_unicast_mac(rnd)
    if kind == 0:      # random byte flips anywhere
        f = bytearray(udp_frame(rnd, v6, src, dst, sport, STAMP_PORT, payload))
        for _ in range(rnd.randrange(1, 9)):
            f[rnd.randrange(len(f))] ^= 1 << rnd.randrange(8)
        return bytes(f)
    if kind == 1:      # truncated at a random length
        f = udp_frame(rnd, v6, src, dst, sport, STAMP_PORT, payload)
        return f[:rnd.randrange(len(f))]
    if kind == 2:      # random UDP length
        seg = udp(src, dst, sport, STAMP_PORT, payload, ulen=rnd.getrandbits(16))
        l3 = ipv6(src, dst, 17, seg) if v6 else ipv4(src, dst, 17, seg)
        return eth(OUR_MAC, smac, ETH_IP6 if v6 else ETH_IP4, l3)
    if kind == 3:      # random IP length field (total length / payload length / IHL)
        seg = udp(src, dst, sport, STAMP_PORT, payload)
        if v6:
            return eth(OUR_MAC, smac, ETH_IP6, ipv6(src, dst, 17, seg, plen=rnd.getrandbits(16)))
        return eth(OUR_MAC, smac, ETH_IP4, ipv4(src, dst, 17, seg, tot_len=rnd.getrandbits(16),
                                                ihl=rnd.choice([5, rnd.randrange(16)])))
    if kind == 4:      # bad UDP or IPv4 header checksum
        seg = udp(src, dst, sport, STAMP_PORT, payload, bad_csum=True)
        if v6:
            return eth(OUR_MAC, smac, ETH_IP6, ipv6(src, dst, 17, seg))
        if rnd.random() < 0.5:
            seg = udp(src, dst, sport, STAMP_PORT, payload)
            return eth(OUR_MAC, smac, ETH_IP4, ipv4(src, dst, 17, seg, bad_csum=True))
        return eth(OUR_MAC, smac, ETH_IP4, ipv4(src, dst, 17, seg))
    if kind == 5:      # fragments: first, middle, last; IPv6 fragment header
        seg = udp(src, dst, sport, STAMP_PORT, payload)
        if v6:
            fh = struct.pack("!BBHI", 17, 0, rnd.choice([0x0001, 0x0008, 0x0009]), rnd.getrandbits(32))
            return eth(OUR_MAC, smac, ETH_IP6, ipv6(src, dst, 44, fh + seg))
        return eth(OUR_MAC, smac, ETH_IP4, ipv4(src, dst, 17, seg, frag=rnd.choice([0x2000, 0x2001, 0x0001, 0x1fff])))
    if kind == 6:      # VLAN / QinQ tags in front of a valid packet
        inner = udp_frame(rnd, v6, src, dst, sport, STAMP_PORT, payload)
        tags = b""
        for _ in range(rnd.randrange(1, 3)):
            tags += struct.pack("!HH", rnd.choice([ETH_VLAN, ETH_QINQ]), rnd.getrandbits(16))
        return inner[:12] + tags + inner[12:]
    if kind == 7:      # huge or inconsistent TLV length
        p = stamp_test(rnd, False) + tlv(rnd, length=rnd.choice([0xFFFF, 0x8000, 1500, rnd.getrandbits(16)]))
        if rnd.random() < 0.5:
            p += tlv(rnd)
        return udp_frame(rnd, v6, src, dst, sport, STAMP_PORT, p)
    if kind == 8:      # STAMP payload shorter than 44 bytes
        return udp_frame(rnd, v6, src, dst, sport, STAMP_PORT, payload[:rnd.randrange(44)])
    if kind == 9:      # bad source addresses: multicast, broadcast, unspecified, ours
        if v6:
            bad = rnd.choice([b"\0" * 16, b"\xff\x02" + b"\0" * 13 + b"\x01", OUR_V6])
        else:
            bad = rnd.choice([b"\0" * 4, b"\xff" * 4, b"\xe0\0\0\x01", OUR_V4, b"\x0a\x09\x00\xff"])
        return udp_frame(rnd, v6, bad, dst, sport, STAMP_PORT, payload)
    # kind 10: not for us at L2/L3/L4 (other MAC, other IP, other port, TCP)
    c = rnd.randrange(4)
    if c == 0:
        return udp_frame(rnd, v6, src, dst, sport, STAMP_PORT, payload, dst_mac=random_unicast_mac(rnd))
    if c == 1:
        other = PEER_V6 if v6 else b"\x0a\x09\x00\x63"
        return udp_frame(rnd, v6, src, other, sport, STAMP_PORT, payload)
    if c == 2:
        return udp_frame(rnd, v6, src, dst, sport, rnd.choice([53, 861, 863, 4789]), payload)
    tcp = struct.pack("!HHIIBBHHH", sport, 80, 1, 0, 0x50, 0x02, 1024, 0, 0)
    return eth(OUR_MAC, smac, ETH_IP6 if v6 else ETH_IP4,
               ipv6(src, dst, 6, tcp) if v6 else ipv4(src, dst, 6, tcp))


def gen_garbage(rnd):
    n = rnd.randrange(1601)
    r = rnd.random()
    if r < 0.4 or n < 14:
        return rnd.randbytes(n)
    dst = rnd.choice([OUR_MAC, BCAST, random_unicast_mac(rnd), b"\x33\x33\xff\x00\x00\x01"])
    etype = rnd.choice([ETH_IP4, ETH_IP6, ETH_ARP, ETH_VLAN, ETH_QINQ, 0x88CC, 0x88F7, rnd.getrandbits(16)])
    return eth(dst, random_unicast_mac(rnd), etype, rnd.randbytes(n - 14))


def arp(op, sha, spa, tha, tpa, htype=1, ptype=ETH_IP4, hlen=6, plen=4):
    return struct.pack("!HHBBH6s4s6s4s", htype, ptype, hlen, plen, op, sha, spa, tha, tpa)


def nd_frame(rnd, ns, src, dst, target, lladdr=None, hlim=255, code=0, opt_len=None, bad_csum=False):
    body = struct.pack("!I16s", 0x20000000 if not ns else 0, target)
    if lladdr is not None:
        ol = 1 if opt_len is None else opt_len
        body += struct.pack("!BB6s", 1 if ns else 2, ol, lladdr)
    icmp = struct.pack("!BBH", 135 if ns else 136, code, 0) + body
    c = l4_csum(src, dst, 58, icmp)
    if bad_csum:
        c ^= 0x0F0F
    icmp = icmp[:2] + struct.pack("!H", c) + icmp[4:]
    if dst[0] == 0xFF:
        dmac = b"\x33\x33" + dst[12:]
    else:
        dmac = OUR_MAC
    return eth(dmac, lladdr or random_unicast_mac(rnd), ETH_IP6, ipv6(src, dst, 58, icmp, hlim=hlim))


def gen_neigh(rnd):
    smac = random_unicast_mac(rnd)
    k = rnd.randrange(12)
    sn_mcast = bytes.fromhex("ff0200000000000000000001ff000001")
    if k == 0:   # ARP request for us
        return eth(BCAST, smac, ETH_ARP, arp(1, smac, random_src(rnd, False), b"\0" * 6, OUR_V4))
    if k == 1:   # ARP request for someone else
        return eth(BCAST, smac, ETH_ARP, arp(1, smac, random_src(rnd, False), b"\0" * 6, b"\x0a\x09\x00\x07"))
    if k == 2:   # ARP reply from the peer (learns its MAC)
        return eth(OUR_MAC, PEER_MAC, ETH_ARP, arp(2, PEER_MAC, PEER_V4, OUR_MAC, OUR_V4))
    if k == 3:   # gratuitous ARP
        ip = random_src(rnd, False)
        return eth(BCAST, smac, ETH_ARP, arp(rnd.choice([1, 2]), smac, ip, b"\0" * 6, ip))
    if k == 4:   # malformed ARP: wrong types/lengths/opcodes, truncation
        a = arp(rnd.getrandbits(16), smac, random_src(rnd, False), b"\0" * 6, OUR_V4,
                htype=rnd.choice([1, 6, rnd.getrandbits(16)]), ptype=rnd.choice([ETH_IP4, ETH_IP6, 0]),
                hlen=rnd.choice([6, 0, 16, 255]), plen=rnd.choice([4, 0, 16, 255]))
        return eth(BCAST, smac, ETH_ARP, a[:rnd.choice([len(a), rnd.randrange(len(a) + 1)])])
    if k == 5:   # ARP with a multicast sender MAC or broadcast sender IP
        return eth(BCAST, smac, ETH_ARP, arp(1, b"\x01\x00\x5e\0\0\x01", rnd.choice([b"\xff" * 4, b"\0" * 4]),
                                             b"\0" * 6, OUR_V4))
    src = random_src(rnd, True)
    if k == 6:   # NS for our global address, with SLLAO
        return nd_frame(rnd, True, src, sn_mcast, OUR_V6, lladdr=smac)
    if k == 7:   # DAD NS from :: (no SLLAO allowed)
        return nd_frame(rnd, True, b"\0" * 16, sn_mcast, OUR_V6)
    if k == 8:   # NA from the peer / from a stranger
        return nd_frame(rnd, False, PEER_V6, OUR_V6, PEER_V6, lladdr=PEER_MAC)
    if k == 9:   # NS for someone else
        return nd_frame(rnd, True, src, sn_mcast, PEER_V6, lladdr=smac)
    if k == 10:  # malformed ND: hop limit, code, zero/huge option length, checksum
        return nd_frame(rnd, rnd.random() < 0.5, src, sn_mcast, OUR_V6, lladdr=smac,
                        hlim=rnd.choice([255, 64, 1]), code=rnd.choice([0, 0, 1]),
                        opt_len=rnd.choice([1, 0, 2, 255]), bad_csum=rnd.random() < 0.3)
    f = nd_frame(rnd, True, src, sn_mcast, OUR_V6, lladdr=smac)  # truncated ND
    return f[:rnd.randrange(54, len(f))]


def gen_reply(rnd):
    v6 = rnd.random() < 0.4
    r = rnd.random()
    if r < 0.6:   # from a non-peer
        src = random_src(rnd, v6)
    else:         # from the peer: some to our path ports, some to others
        src = PEER_V6 if v6 else PEER_V4
    dport = SPORT_BASE + rnd.randrange(4) if rnd.random() < 0.5 else rnd.randrange(1024, 65536)
    p = stamp_reply(rnd)
    if rnd.random() < 0.2:
        p = p[:rnd.randrange(44)]
    elif rnd.random() < 0.3:
        p += tlv(rnd, typ=252)
    return udp_frame(rnd, v6, src, OUR_V6 if v6 else OUR_V4, STAMP_PORT, dport, p,
                     src_mac=PEER_MAC if src in (PEER_V4, PEER_V6) else None)


def gen_icmp(rnd):
    """An ICMP error about one of our path-discovery probes: from a router,
    quoting our UDP datagram (source port on a path, to 862 or 4791) with
    its tag (IPv4 identification 0b101 + id + TTL; IPv6 "LSRT" id TTL) or
    without, then cut anywhere or with a random type or code."""
    v6 = rnd.random() < 0.5
    router = random_src(rnd, v6)
    me, peer = (OUR_V6, PEER_V6) if v6 else (OUR_V4, PEER_V4)
    sport = SPORT_BASE + rnd.choice([0, 1, 7, 63, 64, 1000])
    dport = rnd.choice([STAMP_PORT, 4791, rnd.randrange(65536)])
    ident, ttl = rnd.randrange(256), rnd.choice([0, 1, 2, 8, 31])
    tag = (0x5 << 13 | ident << 5 | ttl) if rnd.random() < 0.8 else rnd.randrange(65536)
    pay = (b"LSRT" + bytes([ident, ttl]) + bytes(10)) if rnd.random() < 0.8 else rnd.randbytes(16)
    if v6:
        inner = ipv6(me, peer, 17, udp(me, peer, sport, dport, pay), hlim=1)
        typ, code = rnd.choice([(3, 0), (3, 1), (1, 4), (1, 0), (rnd.randrange(256), 0)])
        body = struct.pack("!BBHI", typ, code, 0, 0) + inner
        body = body[:2] + struct.pack("!H", l4_csum(router, me, 58, body)) + body[4:]
        frame = eth(OUR_MAC, random_unicast_mac(rnd), ETH_IP6, ipv6(router, me, 58, body))
    else:
        inner = ipv4(me, peer, 17, udp(me, peer, sport, dport, pay), ttl=1, ident=tag)
        if rnd.random() < 0.5:
            inner = inner[:28]          # RFC 792's IP header + 8 bytes
        typ, code = rnd.choice([(11, 0), (11, 1), (3, 3), (3, 0), (rnd.randrange(256), 0)])
        body = struct.pack("!BBHI", typ, code, 0, 0) + inner
        body = body[:2] + struct.pack("!H", csum(body)) + body[4:]
        frame = eth(OUR_MAC, random_unicast_mac(rnd), ETH_IP4, ipv4(router, me, 1, body))
    r = rnd.random()
    if r < 0.3:
        frame = frame[:rnd.randrange(len(frame) + 1)]
    elif r < 0.4:
        b = bytearray(frame)
        b[rnd.randrange(14, len(b))] = rnd.randrange(256)
        frame = bytes(b)
    return frame


GENERATORS = [(gen_valid, 25), (gen_mutated, 35), (gen_garbage, 15), (gen_neigh, 15), (gen_reply, 10),
              (gen_icmp, 8)]


def gen_forged_sendtime(rnd):
    """A valid probe with a send-time trailer (lockstep-fabric --tx-trailer)
    whose instant no host could mean: 0, the largest, or random 64 bits
    (the lab timeline is ~1.7e18 ns; 10 ms ahead and 1 s behind are believed)."""
    at = rnd.choice([0, (1 << 64) - 1, rnd.getrandbits(64)])
    return gen_valid(rnd)[:1500] + struct.pack(">Q", at) + b"LSTX"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", help="pcap file to write")
    ap.add_argument("--count", type=int, default=120000)
    ap.add_argument("--seed", type=int, default=8762)
    ap.add_argument("--forged-sendtime", type=int, default=0, metavar="N",
                    help="then N probes with send-time trailers no host could mean")
    args = ap.parse_args()

    rnd = random.Random(args.seed)
    gens = [g for g, w in GENERATORS for _ in range(w)]
    frames = [rnd.choice(gens)(rnd)[:1600] for _ in range(args.count)]
    frames += [gen_forged_sendtime(rnd) for _ in range(args.forged_sendtime)]
    write_pcap(args.out, frames)
    print(len(frames))
    return 0


if __name__ == "__main__":
    sys.exit(main())
