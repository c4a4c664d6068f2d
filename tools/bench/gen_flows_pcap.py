#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Write a pcap of FLOWS frames, one per distinct flow, for bench_datapath.sh.

    gen_flows_pcap.py OUT KIND FLOWS SIZE [QUEUES]

KIND:
  tcp    IPv4 TCP-shaped frames (ACK|PSH), flow i = source 10.<i>/12, port
  steer  every other frame RoCEv2 over IPv4 (UDP 4791, BTH, valid ICRC) or
         IPv6 UDP (flow label 0x12345); source ports and labels are outside
         the path range 49152.. so steering rewrites every frame
  mix    802.1Q-tagged, VID 1 + i % 32, every other frame RoCEv2 or TCP
  check  write 4 frames of each shape and verify them with scapy (ICRC,
         IP/UDP/TCP checksums); prints "ok" (needs scapy: /usr/bin/python3)

QUEUES (for the RSS spread): write OUT.0 .. OUT.<QUEUES-1> instead, each
frame to the queue a NIC's RSS would give it under lockstepd's settings
(Toeplitz over the IP addresses with the symmetric key 0x6d5a..., table
entry j -> (j mod 64) mod QUEUES; lib/flow's ls_flow_rss_hash).

SIZE is the captured frame length in bytes (no FCS), at least 64. Every IPv4
header, UDP and TCP checksum and every ICRC is valid. Stdlib only; the
payload is constant, so its checksum is summed once.
"""
import struct
import sys
import zlib

DMAC = bytes.fromhex("020000000002")
SMAC = bytes.fromhex("020000000001")
DST4 = bytes([10, 200, 0, 2])
DST6 = bytes.fromhex("fd000000000000000000000000000002")
SRC6 = bytes.fromhex("fd000000000000000000000000000000")
ROCE_PORT = 4791


def sum16(b):
    if len(b) & 1:
        b += b"\0"
    return sum(struct.unpack("!%dH" % (len(b) // 2), b))


def fold(s):
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return s


def csum(s):
    return ~fold(s) & 0xffff


class Maker:
    def __init__(self, size):
        self.size = size
        self.pay = {}

    def payload(self, n):
        """Constant payload of n bytes and its (even-aligned) 16-bit sum."""
        if n not in self.pay:
            p = bytes((k * 7 + 1) & 0xff for k in range(n))
            self.pay[n] = (p, sum16(p))
        return self.pay[n]

    def eth(self, vid, etype):
        if vid:
            return DMAC + SMAC + struct.pack("!HHH", 0x8100, vid, etype)
        return DMAC + SMAC + struct.pack("!H", etype)

    def ip4(self, src, proto, l4len, tos=0):
        h = struct.pack("!BBHHHBBH4s4s", 0x45, tos, 20 + l4len, 0, 0x4000, 64, proto, 0,
                        src, DST4)
        return h[:10] + struct.pack("!H", csum(sum16(h))) + h[12:]

    def tcp4(self, i, vid=0):
        l2 = 18 if vid else 14
        pay, ps = self.payload(self.size - l2 - 40)
        src = struct.pack("!I", 0x0a000000 | (i >> 4 & 0xfffff))
        sport = 1024 + (i & 15) * 1000
        h = struct.pack("!HHIIBBHHH", sport, 80, i, 1, 0x50, 0x18, 65535, 0, 0)
        ph = src + DST4 + struct.pack("!HH", 6, 20 + len(pay))
        c = csum(sum16(ph) + sum16(h) + ps)
        h = h[:16] + struct.pack("!H", c) + h[18:]
        return self.eth(vid, 0x0800) + self.ip4(src, 6, 20 + len(pay)) + h + pay

    def roce4(self, i, vid=0):
        """RoCEv2 RC SEND Only to QP i, sport outside the path range."""
        l2 = 18 if vid else 14
        pay, _ = self.payload(self.size - l2 - 20 - 8 - 12 - 4)
        src = struct.pack("!I", 0x0a100000 | (i & 0xfffff))
        sport = 1024 + (i * 7 & 0x3fff)
        bth = struct.pack("!BBHII", 0x04, 0x40, 0xffff, i & 0xffffff,
                          0x80000000 | (i & 0xffffff))
        ulen = 8 + len(bth) + len(pay) + 4
        ip = self.ip4(src, 17, ulen, tos=0x02)   # ECT(0), as RoCE NICs send
        udp = struct.pack("!HHHH", sport, ROCE_PORT, ulen, 0)
        # ICRC: CRC32 over 8 bytes of 0xff, the IP header with TOS, TTL and
        # checksum set to all ones, UDP with its checksum all ones, BTH with
        # its reserved byte (FECN, BECN, resv6) all ones, the payload
        # (scapy.contrib.roce compute_icrc); stored little-endian.
        mip = ip[:1] + b"\xff" + ip[2:8] + b"\xff" + ip[9:10] + b"\xff\xff" + ip[12:]
        mudp = udp[:6] + b"\xff\xff"
        mbth = bth[:4] + b"\xff" + bth[5:]
        crc = zlib.crc32(pay, zlib.crc32(b"\xff" * 8 + mip + mudp + mbth))
        icrc = struct.pack("<I", crc)
        # the UDP checksum (optional over IPv4) is left 0, as RoCE NICs do
        return self.eth(vid, 0x0800) + ip + udp + bth + pay + icrc

    def udp6(self, i, vid=0):
        l2 = 18 if vid else 14
        pay, ps = self.payload(self.size - l2 - 48)
        src = SRC6[:12] + struct.pack("!I", 0x10000000 | i)
        sport = 1024 + (i & 0x3fff)
        ulen = 8 + len(pay)
        ip = struct.pack("!IHBB16s16s", 0x60012345, ulen, 17, 64, src, DST6)
        udp = struct.pack("!HHHH", sport, 9000, ulen, 0)
        ph = src + DST6 + struct.pack("!II", ulen, 17)
        c = csum(sum16(ph) + sum16(udp) + ps) or 0xffff
        udp = udp[:6] + struct.pack("!H", c)
        return self.eth(vid, 0x86dd) + ip + udp + pay


def frames(kind, n, size):
    m = Maker(size)
    if kind == "tcp":
        for i in range(n):
            yield m.tcp4(i)
    elif kind == "steer":
        for i in range(n):
            yield m.roce4(i >> 1) if i & 1 == 0 else m.udp6(i >> 1)
    elif kind == "mix":
        for i in range(n):
            vid = 1 + i % 32
            yield m.roce4(i >> 1, vid) if i & 1 == 0 else m.tcp4(i >> 1, vid)
    else:
        raise SystemExit("unknown kind %s" % kind)


SYM_WIN = [((0x6d5a6d5a6d5a6d5a << k) >> 32) & 0xffffffff for k in range(16)]


def rss_queue(fr, queues):
    """The queue of frame fr under lockstepd's RSS settings: the Toeplitz
    hash of a key of period 16 is that of the XOR of the 16-bit words."""
    l3 = 18 if fr[12:14] == b"\x81\x00" else 14
    v4 = fr[l3 - 2:l3] == b"\x08\x00"
    addrs = fr[l3 + 12:l3 + 20] if v4 else fr[l3 + 8:l3 + 40]
    x = 0
    for i in range(0, len(addrs), 2):
        x ^= addrs[i] << 8 | addrs[i + 1]
    h = 0
    for k in range(16):
        if x >> (15 - k) & 1:
            h ^= SYM_WIN[k]
    return (h & 63) % queues


def write(path, kind, n, size, queues=0):
    outs = [open(path if queues == 0 else "%s.%d" % (path, q), "wb", buffering=1 << 22)
            for q in range(max(queues, 1))]
    cnt = [0] * len(outs)
    for f in outs:
        f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
    for fr in frames(kind, n, size):
        assert len(fr) == size, (kind, len(fr))
        q = rss_queue(fr, queues) if queues else 0
        i = cnt[q]
        cnt[q] += 1
        outs[q].write(struct.pack("<IIII", i // 1000000, i % 1000000, size, size) + fr)
    for f in outs:
        f.close()
    return cnt


def check():
    import io
    import logging
    logging.getLogger("scapy").setLevel(logging.ERROR)
    from scapy.all import Ether, IP, IPv6, TCP, UDP, raw, bind_layers
    from scapy.contrib.roce import BTH
    bind_layers(UDP, BTH, dport=ROCE_PORT)
    bad = 0
    for size in (64, 1500):
        for kind in ("tcp", "steer", "mix"):
            for fr in frames(kind, 8, size):
                p = Ether(fr)
                for layer in (IP, TCP, UDP, IPv6):
                    if layer in p:
                        got = p[layer].chksum if layer is not IPv6 else None
                        if got is None or (layer is UDP and got == 0):
                            continue
                        q = p.copy()
                        del q[layer].chksum
                        if Ether(raw(q))[layer].chksum != got:
                            bad += 1
                            print("bad %s checksum: %s %d" % (layer.__name__, kind, size))
                if BTH in p:
                    want = p[BTH].icrc
                    q = Ether(fr)
                    q[BTH].icrc = None
                    if Ether(raw(q))[BTH].icrc != want:
                        bad += 1
                        print("bad ICRC: %s %d" % (kind, size))
    print("ok" if bad == 0 else "%d bad" % bad)
    return bad == 0


if __name__ == "__main__":
    if len(sys.argv) == 2 and sys.argv[1] == "check":
        sys.exit(0 if check() else 1)
    if len(sys.argv) not in (5, 6):
        sys.exit(__doc__)
    out, kind, n, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    if size < 64 or size > 9000:
        sys.exit("SIZE must be 64..9000")
    got = write(out, kind, n, size, int(sys.argv[5]) if len(sys.argv) == 6 else 0)
    if len(got) > 1:
        print(" ".join(str(c) for c in got))
