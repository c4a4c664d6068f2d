#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Write the two inputs of the bridge fuzz test (test_bridge_fuzz.sh) and
check its outputs.

  gen  HOST.pcap FAB.pcap [--count N] [--seed S]
       HOST: what the host sends into the bridge; FAB: what the fabric
       delivers. Both are transit traffic (a few thousand flows: TCP, UDP,
       VXLAN, Geneve, RoCEv2, other protocols, IPv4/IPv6, VLAN/QinQ, up to
       9000-byte jumbo frames) valid and mutated (byte flips, truncation,
       IHL < 5, total length beyond the frame or below the header, bad UDP
       lengths, truncated BTH, fragments, wrong IP version), and runts, ARP,
       LLDP, broadcast and random EtherTypes. FAB also carries the probe
       path's traffic to lockstepd's own MAC (gen_fuzz_pcap.py's mix: STAMP
       probes, replies, ARP/ND, garbage) -- the daemon's addresses are
       gen_fuzz_pcap's: 02:00:00:00:00:01, 10.9.0.1, fd00:9::1.
  check HOST.pcap FAB.pcap HOSTOUT.pcap FABOUT.pcap
       Reads the four files and prints one JSON object: what ls_flow_parse
       makes of the host frames (not_ip, bad_ip), the frames for lockstepd
       in FAB, and the multiset comparisons (see check()).

python3 stdlib only; plain struct like gen_fuzz_pcap.py (imported).
"""
import argparse
import collections
import ipaddress
import json
import os
import random
import struct
import sys
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "lab"))
import lspkt  # noqa: E402  (csum: the probe path's fuzz generator imports it too)
import gen_fuzz_pcap as gf  # noqa: E402  (eth, ipv4, ipv6, udp, csum, write_pcap, probe-path mix)

OUR_MAC = gf.OUR_MAC
ETH_IP4, ETH_IP6, ETH_ARP, ETH_VLAN, ETH_QINQ = 0x0800, 0x86DD, 0x0806, 0x8100, 0x88A8
ROCE, VXLAN, GENEVE = 4791, 4789, 6081
PACED_PORT, SMALL_PORT = 5201, 9999     # the policy's "paced" and "small" slices
MAX_FRAME = 9000


# ---------------------------------------------------------------- pcap in

def read_pcap(path):
    frames = []
    with open(path, "rb") as f:
        hdr = f.read(24)
        magic = struct.unpack("<I", hdr[:4])[0]
        e = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
        while True:
            h = f.read(16)
            if len(h) < 16:
                break
            incl = struct.unpack(e + "IIII", h)[2]
            frames.append(f.read(incl))
    return frames


# ---------------------------------------------------------------- RoCEv2

def icrc(l3, ip_len, udp_off, v6):
    """RoCEv2 ICRC (as lib/roce computes it) of the IP packet l3[:ip_len]."""
    bth = udp_off + 8
    h = bytearray(b"\xff" * 8 + l3[:bth + 12])
    ip = 8
    if v6:
        h[ip] |= 0x0F
        h[ip + 1] = h[ip + 2] = h[ip + 3] = 0xFF
        h[ip + 7] = 0xFF
    else:
        h[ip + 1] = 0xFF
        h[ip + 8] = 0xFF
        h[ip + 10] = h[ip + 11] = 0xFF
    h[ip + udp_off + 6] = h[ip + udp_off + 7] = 0xFF
    h[ip + bth + 4] = 0xFF
    return zlib.crc32(l3[bth + 12:ip_len - 4], zlib.crc32(bytes(h))) & 0xFFFFFFFF


def roce_located(fr, p):
    """ls_roce_locate's view: (ip_len, udp_off) or None."""
    l3 = p["l3"]
    if p["family"] == 4:
        ihl = (fr[l3] & 15) * 4
        ip_len = gf_rd16(fr, l3 + 2)
        if ihl < 20 or fr[l3 + 9] != 17 or (gf_rd16(fr, l3 + 6) & 0x3FFF):
            return None
        udp_off = ihl
    else:
        if fr[l3 + 6] != 17:
            return None
        ip_len = 40 + gf_rd16(fr, l3 + 4)
        udp_off = 40
    if ip_len > len(fr) - l3 or ip_len < udp_off + 8:
        return None
    ulen = gf_rd16(fr, l3 + udp_off + 4)
    if gf_rd16(fr, l3 + udp_off + 2) != ROCE or ulen != ip_len - udp_off or ulen < 24:
        return None
    return ip_len, udp_off


def gf_rd16(b, o):
    return b[o] << 8 | b[o + 1]


# ---------------------------------------------------------------- ls_flow_parse, in Python

def flow_parse(f):
    """Mirror of lib/flow ls_flow_parse: ('not_ip'|'bad_ip'|'ip', info)."""
    n = len(f)
    if n < 14:
        return "not_ip", None
    et, l3 = gf_rd16(f, 12), 14
    if et in (ETH_VLAN, ETH_QINQ):
        if n < 18:
            return "not_ip", None
        et, l3 = gf_rd16(f, 16), 18
    p = {"l3": l3, "l4": 0, "kind": "other", "dport": 0}
    if et == ETH_IP4:
        if l3 + 20 > n:
            return "bad_ip", None
        ihl, tot = (f[l3] & 15) * 4, gf_rd16(f, l3 + 2)
        if f[l3] >> 4 != 4 or ihl < 20 or tot < ihl:
            return "bad_ip", None
        if l3 + ihl > n:
            return "bad_ip", None
        p.update(family=4, proto=f[l3 + 9], l3_len=tot)
        first = (gf_rd16(f, l3 + 6) & 0x1FFF) == 0
        l4, l3_end = l3 + ihl, l3 + tot
    elif et == ETH_IP6:
        if l3 + 40 > n:
            return "bad_ip", None
        if f[l3] >> 4 != 6:
            return "bad_ip", None
        pl = gf_rd16(f, l3 + 4)
        p.update(family=6, proto=f[l3 + 6], l3_len=40 + pl)
        first = True
        l4, l3_end = l3 + 40, l3 + 40 + pl
    else:
        return "not_ip", None
    if first and p["proto"] == 6 and l4 + 20 <= n and l4 + 20 <= l3_end:
        p.update(l4=l4, kind="tcp", dport=gf_rd16(f, l4 + 2))
    elif first and p["proto"] == 17 and l4 + 8 <= n and l4 + 8 <= l3_end:
        p.update(l4=l4, kind="udp", dport=gf_rd16(f, l4 + 2))
        if p["dport"] == ROCE and l4 + 20 <= n and l4 + 20 <= l3_end:
            p["kind"] = "roce"
    return "ip", p


def steerable(p):
    """bridge.c entropy_kind: may the bridge rewrite this frame?"""
    if p is None:
        return None
    if p["kind"] == "roce" or (p["kind"] == "udp" and p["dport"] in (VXLAN, GENEVE)):
        return "sport"
    if p["family"] == 6:
        return "label"
    return None


def udp_csum_ok(fr, p):
    """None when there is no checkable UDP checksum."""
    l3, l4 = p["l3"], p["l4"]
    if p["l3_len"] > len(fr) - l3:
        return None
    ulen = p["l3_len"] - (l4 - l3)
    seg = fr[l4:l4 + ulen]
    if p["family"] == 4:
        if seg[6:8] == b"\0\0":
            return None
        ph = fr[l3 + 12:l3 + 20] + struct.pack("!BBH", 0, 17, ulen)
    else:
        ph = fr[l3 + 8:l3 + 40] + struct.pack("!IxxxB", ulen, 17)
    return lspkt.csum(ph + seg) == 0


def masked(fr):
    """The frame with what steering may change blanked out, and whether
    its checksums hold: (bytes, udp checksum ok, ICRC ok). Untouchable
    frames come back whole."""
    kind, p = flow_parse(fr)
    ent = steerable(p) if kind == "ip" else None
    if ent is None:
        return fr, None, None
    b = bytearray(fr)
    ck = ic = None
    if ent == "sport":
        l4 = p["l4"]
        ck = udp_csum_ok(fr, p)
        if p["kind"] == "roce":
            loc = roce_located(fr, p)
            if loc is not None:
                ip_len, udp_off = loc
                l3 = p["l3"]
                ic = icrc(fr[l3:], ip_len, udp_off, p["family"] == 6) == \
                    struct.unpack("<I", fr[l3 + ip_len - 4:l3 + ip_len])[0]
                b[l3 + ip_len - 4:l3 + ip_len] = b"\0" * 4
        b[l4:l4 + 2] = b"\0\0"
        b[l4 + 6:l4 + 8] = b"\0\0"
    else:
        l3 = p["l3"]
        b[l3 + 1] &= 0xF0
        b[l3 + 2] = b[l3 + 3] = 0
    return bytes(b), ck, ic


# ---------------------------------------------------------------- generator

def rmac(rnd):
    return bytes([rnd.randrange(256) & 0xFE | 0x02]) + rnd.randbytes(5)


class Flow:
    pass


def make_flows(rnd, n, side):
    """n flows; side picks the address ranges so host->fabric and
    fabric->host flows differ."""
    flows = []
    for i in range(n):
        fl = Flow()
        fl.v6 = rnd.random() < 0.4
        if fl.v6:
            fl.src = ipaddress.IPv6Address("fd10:%x::%x" % (side, i + 1)).packed
            fl.dst = ipaddress.IPv6Address("fd20:%x::%x" % (side, rnd.randrange(1, 200))).packed
        else:
            fl.src = ipaddress.IPv4Address("10.%d.%d.%d" % (100 + side, i // 250, i % 250 + 1)).packed
            fl.dst = ipaddress.IPv4Address("10.%d.0.%d" % (120 + side, rnd.randrange(1, 200))).packed
        fl.smac, fl.dmac = rmac(rnd), rmac(rnd)
        r = rnd.random()
        fl.kind = ("tcp" if r < 0.35 else "udp" if r < 0.55 else "roce" if r < 0.75 else
                   "tunnel" if r < 0.85 else "other")
        fl.sport = rnd.randrange(1024, 65536)
        fl.dport = {"tcp": rnd.choice([PACED_PORT, PACED_PORT, 80, 443, rnd.randrange(1, 65536)]),
                    "udp": rnd.choice([SMALL_PORT, 53, 123, rnd.randrange(1, 65536)]),
                    "roce": ROCE, "tunnel": rnd.choice([VXLAN, GENEVE]), "other": 0}[fl.kind]
        fl.proto = {"tcp": 6, "other": rnd.choice([1, 47, 50, 58, 132])}.get(fl.kind, 17)
        fl.qp = rnd.getrandbits(24)
        fl.psn = rnd.getrandbits(24)
        fl.vlan = rnd.choice([None] * 6 + [rnd.randrange(4096)])
        fl.label = rnd.getrandbits(20)
        fl.seq = rnd.getrandbits(32)
        flows.append(fl)
    return flows


def payload_len(rnd):
    r = rnd.random()
    if r < 0.3:
        return rnd.randrange(0, 64)
    if r < 0.75:
        return rnd.randrange(1300, 1460)
    if r < 0.97:
        return rnd.randrange(0, 1460)
    return rnd.randrange(1460, MAX_FRAME - 80)     # jumbo


def roce_l4(fl, src, dst, v6, plen, rnd):
    """UDP + BTH + payload + ICRC for one RoCEv2 packet (valid ICRC)."""
    bth = struct.pack("!BBHII", rnd.choice([0x04, 0x0A, 0x11, 0x81, 0x06]), 0x40, 0xFFFF,
                      fl.qp, fl.psn & 0xFFFFFF)
    fl.psn += 1
    body = bth + rnd.randbytes(plen) + b"\0\0\0\0"
    seg = struct.pack("!HHHH", fl.sport, ROCE, 8 + len(body), 0) + body
    return seg


def build(fl, rnd, ecn):
    plen = payload_len(rnd)
    v6 = fl.v6
    tos = rnd.choice([0, 0, 26 << 2, 46 << 2]) | ecn
    if fl.kind == "tcp":
        l4 = struct.pack("!HHIIBBHHH", fl.sport, fl.dport, fl.seq, 0, 0x50, 0x10, 512, 0, 0) + \
            rnd.randbytes(plen)
        fl.seq = (fl.seq + plen) & 0xFFFFFFFF
    elif fl.kind in ("udp", "tunnel"):
        l4 = gf.udp(fl.src, fl.dst, fl.sport, fl.dport, rnd.randbytes(plen),
                    bad_csum=rnd.random() < 0.05)
        if not v6 and rnd.random() < 0.3:
            l4 = l4[:6] + b"\0\0" + l4[8:]          # no checksum over IPv4
    elif fl.kind == "roce":
        l4 = roce_l4(fl, fl.src, fl.dst, v6, plen, rnd)
    else:
        l4 = rnd.randbytes(plen)
    if v6:
        l3 = gf.ipv6(fl.src, fl.dst, fl.proto, l4)
        l3 = struct.pack("!I", 0x60000000 | (tos << 20) | fl.label) + l3[4:]
        et = ETH_IP6
    else:
        l3 = gf.ipv4(fl.src, fl.dst, fl.proto, l4, ident=rnd.getrandbits(16),
                     frag=0x4000 if fl.kind in ("tcp", "roce") else 0)
        l3 = l3[:1] + bytes([tos]) + l3[2:10] + b"\0\0" + l3[12:]
        l3 = l3[:10] + struct.pack("!H", lspkt.csum(l3[:20])) + l3[12:]
        et = ETH_IP4
    if fl.kind == "roce":
        # the ICRC over the finished IP packet
        udp_off = 40 if v6 else 20
        c = icrc(l3, len(l3), udp_off, v6)
        l3 = l3[:-4] + struct.pack("<I", c)
        if rnd.random() < 0.5 or v6:
            # UDP checksum too (RoCEv2 NICs leave it 0 over IPv4)
            seg = bytearray(l3[udp_off:])
            seg[6:8] = b"\0\0"
            seg[6:8] = struct.pack("!H", gf.l4_csum(fl.src, fl.dst, 17, bytes(seg)))
            l3 = l3[:udp_off] + bytes(seg)
    tags = b""
    if fl.vlan is not None:
        tags = struct.pack("!HH", ETH_VLAN, rnd.randrange(8) << 13 | fl.vlan)
    return fl.dmac + fl.smac + tags + struct.pack("!H", et) + l3


def mutate(fr, rnd):
    """One hostile change to a built frame (kinds the brief asks for)."""
    b = bytearray(fr)
    l3 = 18 if gf_rd16(b, 12) == ETH_VLAN else 14
    v4 = gf_rd16(b, l3 - 2) == ETH_IP4
    k = rnd.randrange(12)
    if k == 0:                          # byte flips anywhere
        for _ in range(rnd.randrange(1, 6)):
            b[rnd.randrange(len(b))] ^= 1 << rnd.randrange(8)
    elif k == 1:                        # truncated anywhere (BTH, L4, L3, L2)
        return bytes(b[:rnd.randrange(len(b))])
    elif k == 2 and v4:                 # IHL < 5
        b[l3] = 0x40 | rnd.randrange(5)
    elif k == 2:                        # IPv6 payload length garbage
        b[l3 + 4:l3 + 6] = struct.pack("!H", rnd.getrandbits(16))
    elif k == 3 and v4:                 # total length beyond the frame / below the header
        b[l3 + 2:l3 + 4] = struct.pack("!H", rnd.choice([len(b) - l3 + rnd.randrange(1, 9000),
                                                         rnd.randrange(20), 0xFFFF]))
    elif k == 3:
        b[l3 + 4:l3 + 6] = struct.pack("!H", len(b) - l3 - 40 + rnd.randrange(1, 9000))
    elif k == 4 and v4:                 # fragments: first, middle, last
        b[l3 + 6:l3 + 8] = struct.pack("!H", rnd.choice([0x2000, 0x2000 | rnd.randrange(1, 8192),
                                                         rnd.randrange(1, 8192)]))
    elif k == 4:                        # IPv6 fragment header in front of the L4
        nh = b[l3 + 6]
        fh = struct.pack("!BBHI", nh, 0, rnd.choice([1, 8, 9]), rnd.getrandbits(32))
        b[l3 + 6] = 44
        pl = gf_rd16(b, l3 + 4) + 8
        b[l3 + 4:l3 + 6] = struct.pack("!H", pl & 0xFFFF)
        b[l3 + 40:l3 + 40] = fh
    elif k == 5:                        # UDP/TCP length garbage
        off = l3 + ((b[l3] & 15) * 4 if v4 else 40)
        if off + 6 <= len(b):
            b[off + 4:off + 6] = struct.pack("!H", rnd.getrandbits(16))
    elif k == 6:                        # BTH cut short inside the IP length
        off = l3 + ((b[l3] & 15) * 4 if v4 else 40)
        cut = off + 8 + rnd.randrange(12)
        if v4:
            b[l3 + 2:l3 + 4] = struct.pack("!H", max(cut - l3, 20) & 0xFFFF)
        else:
            b[l3 + 4:l3 + 6] = struct.pack("!H", max(cut - l3 - 40, 0))
        return bytes(b[:cut + rnd.choice([0, 0, 4, 40])])
    elif k == 7:                        # wrong IP version for the EtherType
        b[l3] = (rnd.choice([0, 4, 5, 6, 15]) << 4) | (b[l3] & 15)
    elif k == 8:                        # one more tag: QinQ (parser takes one tag)
        b[12:12] = struct.pack("!HH", rnd.choice([ETH_QINQ, ETH_VLAN]), rnd.getrandbits(16))
    elif k == 9:                        # padded far beyond the IP length (jumbo)
        b += rnd.randbytes(rnd.randrange(1, MAX_FRAME - len(b))) if len(b) < MAX_FRAME - 1 else b""
    elif k == 10:                       # UDP destination port becomes RoCEv2 or a tunnel
        off = l3 + ((b[l3] & 15) * 4 if v4 else 40)
        if off + 4 <= len(b):
            b[off + 2:off + 4] = struct.pack("!H", rnd.choice([ROCE, VXLAN, GENEVE]))
    else:                               # random garbage after the Ethernet header
        b[l3:] = rnd.randbytes(len(b) - l3)
    return bytes(b[:MAX_FRAME])


def other_frame(rnd, side):
    """Not a flow: runts, ARP, LLDP, broadcast, random EtherTypes, frames
    for lockstepd's MAC from the host side."""
    k = rnd.randrange(8)
    smac = rmac(rnd)
    if k == 0:                          # runt, 0..59 bytes
        return rnd.randbytes(rnd.randrange(60))
    if k == 1:                          # ARP request / reply
        op = rnd.choice([1, 2])
        a = gf.arp(op, smac, rnd.randbytes(4), b"\0" * 6, rnd.randbytes(4))
        return gf.eth(gf.BCAST if op == 1 else rmac(rnd), smac, ETH_ARP, a)
    if k == 2:                          # LLDP
        tlvs = struct.pack("!HB6s", (1 << 9) | 7, 4, smac) + struct.pack("!HB6s", (2 << 9) | 7, 3, smac) \
            + struct.pack("!HH", (3 << 9) | 2, 120) + b"\0\0"
        return gf.eth(b"\x01\x80\xc2\x00\x00\x0e", smac, 0x88CC, tlvs)
    if k == 3:                          # broadcast / multicast of anything
        dst = rnd.choice([gf.BCAST, b"\x01\x00\x5e\x00\x00\x05", b"\x33\x33\x00\x00\x00\x01"])
        return gf.eth(dst, smac, rnd.choice([ETH_IP4, ETH_IP6, rnd.getrandbits(16)]),
                      rnd.randbytes(rnd.randrange(1500)))
    if k == 4:                          # random EtherType, random size up to jumbo
        return gf.eth(rmac(rnd), smac, rnd.getrandbits(16),
                      rnd.randbytes(rnd.randrange(46, MAX_FRAME - 14)))
    if k == 5 and side == 0:            # the host talking to lockstepd's MAC: still transit
        return gf.gen_valid(rnd)
    if k == 5:                          # jumbo STAMP probe to lockstepd (padded past the IP)
        return gf.gen_valid(rnd) + rnd.randbytes(rnd.randrange(1, MAX_FRAME - 200))
    # pure garbage, sometimes long
    return rnd.randbytes(rnd.randrange(14, rnd.choice([100, 1600, MAX_FRAME])))


def gen_side(rnd, count, side, probe_share):
    flows = make_flows(rnd, 3000, side)
    # a few heavy flows: pacing and slice limits have something to bite
    heavy = flows[:40]
    probe_gens = [g for g, w in gf.GENERATORS for _ in range(w)]
    out = []
    for _ in range(count):
        r = rnd.random()
        if r < probe_share:
            fr = rnd.choice(probe_gens)(rnd)
            if fr[:6] != OUR_MAC and rnd.random() < 0.7 and len(fr) >= 6:
                fr = OUR_MAC + fr[6:]       # mostly to our MAC: the probe path
        elif r < probe_share + 0.12:
            fr = other_frame(rnd, side)
        else:
            fl = rnd.choice(heavy) if rnd.random() < 0.4 else rnd.choice(flows)
            ecn = rnd.choice([0, 0, 1, 2, 3])
            fr = build(fl, rnd, ecn)
            if rnd.random() < 0.35:
                fr = mutate(fr, rnd)
        out.append(fr[:MAX_FRAME])
    return out


def gen(args):
    rnd = random.Random(args.seed)
    host = gen_side(rnd, args.count, 0, 0.0)
    fab = gen_side(rnd, args.count, 1, 0.25)
    gf.write_pcap(args.host, host)
    gf.write_pcap(args.fab, fab)
    print(len(host), len(fab))


# ---------------------------------------------------------------- check

def check(args):
    """Multisets: every frame out of the bridge must be one that came in,
    byte for byte except where steering may write (masked()), with its
    UDP checksum and ICRC as good as they were."""
    host, fab = read_pcap(args.host), read_pcap(args.fab)
    hout, fout = read_pcap(args.hostout), read_pcap(args.fabout)
    r = {"host_in": len(host), "fab_in": len(fab), "host_out": len(hout), "fab_out": len(fout)}
    kinds = collections.Counter(flow_parse(f)[0] for f in host)
    r["host_not_ip"], r["host_bad_ip"], r["host_ip"] = kinds["not_ip"], kinds["bad_ip"], kinds["ip"]
    ours = [f for f in fab if len(f) >= 6 and f[:6] == OUR_MAC]
    r["fab_ours"] = len(ours)
    r["fab_ours_multiseg"] = sum(1 for f in ours if len(f) > 2048 - 128)

    # fabric -> host: never changed, never for lockstepd's MAC
    want = collections.Counter(f for f in fab if not (len(f) >= 6 and f[:6] == OUR_MAC))
    got = collections.Counter(hout)
    r["host_out_not_in"] = sum((got - want).values())
    r["host_out_missing"] = sum((want - got).values())

    # host -> fabric: lockstepd's own frames are those from its MAC that the
    # host did not send
    from_host = collections.Counter(host)
    own = [f for f in fout if len(f) >= 12 and f[6:12] == OUR_MAC and from_host[f] == 0]
    r["fab_out_own"] = len(own)
    own_c = collections.Counter(own)
    fwd = list((collections.Counter(fout) - own_c).elements())
    r["fab_out_fwd"] = len(fwd)
    unt_in = collections.Counter(f for f in host if flow_parse(f)[0] != "ip")
    unt_out = collections.Counter(f for f in fwd if flow_parse(f)[0] != "ip")
    r["untouched_in"], r["untouched_out"] = sum(unt_in.values()), sum(unt_out.values())
    r["untouched_out_not_in"] = sum((unt_out - unt_in).values())
    r["untouched_missing"] = sum((unt_in - unt_out).values())
    m_in = collections.Counter(masked(f) for f in host)
    m_out = collections.Counter(masked(f) for f in fwd)
    extra = m_out - m_in
    r["fwd_not_in"] = sum(extra.values())
    # of those: frames that match an input but lost a good checksum/ICRC
    strip = collections.Counter(k[0] for k in m_in)
    r["fwd_checksum_broken"] = sum(v for k, v in extra.items() if strip[k[0]] > 0)
    r["fwd_examples"] = [k[0][:64].hex() for k in list(extra)[:3]]
    r["steerable_in"] = sum(1 for f in host if flow_parse(f)[0] == "ip" and
                            steerable(flow_parse(f)[1]) is not None)
    r["steered_out"] = sum(1 for f in fwd if from_host[f] == 0)
    r["roce_icrc_ok_in"] = sum(v for k, v in m_in.items() if k[2])
    r["roce_icrc_ok_out"] = sum(v for k, v in m_out.items() if k[2])
    json.dump(r, sys.stdout)
    print()


def split(args):
    """IN over N files (IN.0 ...) by a hash of each whole frame: a queue per
    lcore for the RSS spread, each flow's frames on every queue, so most
    arrive where their owner is not (the hand-over between lcores)."""
    frames = read_pcap(args.input)
    parts = [[] for _ in range(args.n)]
    for f in frames:
        parts[zlib.crc32(f) % args.n].append(f)
    for i, part in enumerate(parts):
        gf.write_pcap("%s.%d" % (args.input, i), part)
    print(" ".join(str(len(x)) for x in parts))


def cat(args):
    """The frames of the files IN... in one pcap OUT (queue outputs merged)."""
    gf.write_pcap(args.output, [f for path in args.inputs for f in read_pcap(path)])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gen")
    g.add_argument("host")
    g.add_argument("fab")
    g.add_argument("--count", type=int, default=110000)
    g.add_argument("--seed", type=int, default=2525)
    c = sub.add_parser("check")
    for a in ("host", "fab", "hostout", "fabout"):
        c.add_argument(a)
    sp = sub.add_parser("split")
    sp.add_argument("input")
    sp.add_argument("n", type=int)
    ct = sub.add_parser("cat")
    ct.add_argument("output")
    ct.add_argument("inputs", nargs="+")
    args = ap.parse_args()
    return {"gen": gen, "check": check, "split": split, "cat": cat}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main() or 0)
