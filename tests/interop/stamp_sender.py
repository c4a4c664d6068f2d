#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Independent STAMP Session-Sender (RFC 8762, unauthenticated mode).

Written from the RFC text only -- it shares no code with lockstep -- so that
a reflector bug cannot be hidden by the same misreading on both sides. It
sends test packets from an ordinary kernel UDP socket and checks every reply
byte by byte against RFC 8762 section 4.3 (and RFC 8972 for the TLV case).

Variants sent, round-robin:
  base  44-byte packet, PTPv2 timestamp (Z=1)
  ntp   44-byte packet, NTP timestamp (Z=0)
  tlv   44-byte base + one TLV of an unassigned type (RFC 8972), with a
        non-zero SSID, expecting the TLV back with the U flag set

Exit status 0 only when every reply arrived and passed every check.
"""
import argparse
import os
import socket
import struct
import sys
import time

BASE_LEN = 44
EE_S, EE_Z = 0x8000, 0x4000
TLV_U = 0x80
UNKNOWN_TLV_TYPE = 200          # unassigned in the IANA STAMP TLV registry
NTP_EPOCH_OFFSET = 2208988800   # seconds from 1900-01-01 to 1970-01-01
TOLERANCE_NS = 5_000_000        # clocks of sender and reflector may differ this much
SENT_TTL = 64
REPLY_TTL = 255                 # lockstepd sends replies with TTL/hop limit 255

# Linux socket options not always exported by the socket module.
IP_RECVTTL = getattr(socket, "IP_RECVTTL", 12)
IP_TTL_CMSG = getattr(socket, "IP_TTL", 2)
IPV6_RECVHOPLIMIT = getattr(socket, "IPV6_RECVHOPLIMIT", 51)
IPV6_HOPLIMIT = getattr(socket, "IPV6_HOPLIMIT", 52)


def tai_minus_utc_ns():
    """Kernel TAI offset, whole seconds (0 when nobody set it: then TAI == UTC)."""
    d = time.clock_gettime_ns(time.CLOCK_TAI) - time.clock_gettime_ns(time.CLOCK_REALTIME)
    return round(d / 1e9) * 1_000_000_000


def ptp_encode(tai_ns):
    # PTPv2 truncated: 32-bit seconds + 32-bit nanoseconds, TAI since 1970.
    return struct.pack("!II", (tai_ns // 1_000_000_000) & 0xffffffff, tai_ns % 1_000_000_000)


def ntp_encode(tai_ns, tai_off_ns):
    # NTP: 32-bit seconds since 1900 + 32-bit binary fraction, UTC.
    utc = tai_ns - tai_off_ns
    sec, ns = divmod(utc, 1_000_000_000)
    return struct.pack("!II", (sec + NTP_EPOCH_OFFSET) & 0xffffffff, (ns << 32) // 1_000_000_000)


def ts_decode(raw, ee, tai_off_ns):
    """Timestamp in TAI ns, read in the format its Error Estimate Z bit names."""
    sec, frac = struct.unpack("!II", raw)
    if ee & EE_Z:
        return sec * 1_000_000_000 + frac
    return (sec - NTP_EPOCH_OFFSET) * 1_000_000_000 + ((frac * 1_000_000_000) >> 32) + tai_off_ns


class Checker:
    def __init__(self):
        self.failures = []
        self.checks = 0

    def check(self, ok, what):
        self.checks += 1
        if not ok:
            self.failures.append(what)
            print("FAIL: " + what)
        return ok


def build_request(seq, variant, tai_off_ns):
    t1 = time.clock_gettime_ns(time.CLOCK_TAI)
    if variant == "ntp":
        ee = 0x0100 | 1          # Z=0, scale 1, multiplier 1 (S=0: not synchronised)
        ts = ntp_encode(t1, tai_off_ns)
    else:
        ee = EE_Z | (12 << 8) | 1  # Z=1 PTP
        ts = ptp_encode(t1)
    ssid = 0xbeef if variant == "tlv" else 0  # RFC 8972 SSID sits in the first MBZ bytes
    pkt = struct.pack("!I8sHH28x", seq, ts, ee, ssid)
    assert len(pkt) == BASE_LEN
    if variant == "tlv":
        # Flags 0, Type, Length (of the value), 8 value bytes.
        pkt += struct.pack("!BBH", 0, UNKNOWN_TLV_TYPE, 8) + bytes(range(0xa0, 0xa8))
    return pkt, t1


def validate(c, tag, req, rep, t4, rx_ttl, tai_off_ns, variant):
    c.check(len(rep) == len(req), f"{tag}: reply length {len(rep)} != request length {len(req)}")
    if len(rep) < BASE_LEN:
        return
    (r_seq, r_ts, r_ee, r_mbz1, r_t2, s_seq, s_ts, s_ee, r_mbz2, s_ttl, r_mbz3) = \
        struct.unpack("!I8sHH8sI8sHHB3s", rep[:BASE_LEN])
    q_seq, q_ts, q_ee, q_ssid = struct.unpack("!I8sHH", req[:16])

    # Stateless reflector: its sequence number is the sender's (RFC 8762 4.3.1).
    c.check(r_seq == q_seq, f"{tag}: reflector seq {r_seq} != sender seq {q_seq}")
    c.check(s_seq == q_seq, f"{tag}: Session-Sender Sequence Number {s_seq} != {q_seq}")
    c.check(s_ts == q_ts, f"{tag}: Session-Sender Timestamp {s_ts.hex()} != {q_ts.hex()}")
    c.check(s_ee == q_ee, f"{tag}: Session-Sender Error Estimate {s_ee:#06x} != {q_ee:#06x}")
    c.check(s_ttl == SENT_TTL, f"{tag}: Ses-Sender TTL {s_ttl} != sent TTL {SENT_TTL}")
    # The MBZ right after the reflector's Error Estimate carries the SSID
    # under RFC 8972; with SSID 0 it must be zero.
    c.check(r_mbz1 == q_ssid, f"{tag}: reflector MBZ/SSID {r_mbz1:#06x} != {q_ssid:#06x}")
    c.check(r_mbz2 == 0, f"{tag}: MBZ after Session-Sender Error Estimate is {r_mbz2:#06x}")
    c.check(r_mbz3 == b"\0\0\0", f"{tag}: MBZ after Ses-Sender TTL is {r_mbz3.hex()}")
    c.check(r_ee & EE_Z, f"{tag}: reflector Error Estimate {r_ee:#06x} lacks Z (PTP) bit")
    c.check((r_ee & 0xff) != 0, f"{tag}: reflector Error Estimate {r_ee:#06x} has multiplier 0 (must not be 0)")
    c.check(rx_ttl in (None, REPLY_TTL), f"{tag}: reply IP TTL/hop limit {rx_ttl} != {REPLY_TTL}")

    t1 = ts_decode(q_ts, q_ee, tai_off_ns)
    t2 = ts_decode(r_t2, r_ee, tai_off_ns)
    t3 = ts_decode(r_ts, r_ee, tai_off_ns)
    ok = c.check(t1 - TOLERANCE_NS <= t2, f"{tag}: T2 {t2} earlier than T1 {t1} by {(t1 - t2) / 1e6:.3f} ms")
    ok &= c.check(t2 <= t3, f"{tag}: T3 {t3} earlier than T2 {t2} by {t2 - t3} ns")
    ok &= c.check(t3 <= t4 + TOLERANCE_NS, f"{tag}: T4 {t4} earlier than T3 {t3} by {(t3 - t4) / 1e6:.3f} ms")
    ok &= c.check(t4 - t1 < 1_000_000_000, f"{tag}: RTT {(t4 - t1) / 1e6:.3f} ms implausible")

    if variant == "tlv" and len(rep) >= BASE_LEN + 12:
        flags, typ, length = struct.unpack("!BBH", rep[BASE_LEN:BASE_LEN + 4])
        c.check(flags == TLV_U, f"{tag}: TLV flags {flags:#04x} != U ({TLV_U:#04x})")
        c.check(typ == UNKNOWN_TLV_TYPE, f"{tag}: TLV type {typ} != {UNKNOWN_TLV_TYPE}")
        c.check(length == 8, f"{tag}: TLV length {length} != 8")
        c.check(rep[BASE_LEN + 4:] == req[BASE_LEN + 4:],
                f"{tag}: TLV value {rep[BASE_LEN + 4:].hex()} != {req[BASE_LEN + 4:].hex()}")
    return t4 - t1, t3 - t2


def open_socket(addr):
    info = socket.getaddrinfo(addr, None, 0, socket.SOCK_DGRAM)[0]
    fam = info[0]
    s = socket.socket(fam, socket.SOCK_DGRAM)
    if fam == socket.AF_INET:
        s.setsockopt(socket.IPPROTO_IP, socket.IP_TTL, SENT_TTL)
        s.setsockopt(socket.IPPROTO_IP, IP_RECVTTL, 1)
    else:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_UNICAST_HOPS, SENT_TTL)
        s.setsockopt(socket.IPPROTO_IPV6, IPV6_RECVHOPLIMIT, 1)
    s.bind(("0.0.0.0", 0) if fam == socket.AF_INET else ("::", 0))
    return s, fam


def recv_ttl(ancdata):
    for level, typ, data in ancdata:
        if (level, typ) in ((socket.IPPROTO_IP, IP_TTL_CMSG), (socket.IPPROTO_IPV6, IPV6_HOPLIMIT)):
            return struct.unpack("i", data[:4])[0] if len(data) >= 4 else data[0]
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--addr", required=True, help="reflector IPv4 or IPv6 address")
    ap.add_argument("--port", type=int, default=862)
    ap.add_argument("--count", type=int, default=30, help="packets to send (variants round-robin)")
    ap.add_argument("--timeout", type=float, default=1.0, help="seconds to wait for each reply")
    ap.add_argument("--variants", default="base,ntp,tlv")
    ap.add_argument("--seq-start", type=int, default=1)
    args = ap.parse_args()

    variants = args.variants.split(",")
    tai_off = tai_minus_utc_ns()
    s, fam = open_socket(args.addr)
    s.settimeout(args.timeout)
    dst = (args.addr, args.port)
    c = Checker()
    lost, rtts, residence = 0, [], []

    for i in range(args.count):
        seq = args.seq_start + i
        variant = variants[i % len(variants)]
        tag = f"{args.addr} seq {seq} ({variant})"
        req, _ = build_request(seq, variant, tai_off)
        s.sendto(req, dst)
        deadline = time.monotonic() + args.timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                lost += 1
                c.check(False, f"{tag}: no reply within {args.timeout} s")
                break
            s.settimeout(left)
            try:
                rep, anc, _flags, src = s.recvmsg(2048, socket.CMSG_SPACE(4) * 2)
            except socket.timeout:
                continue
            t4 = time.clock_gettime_ns(time.CLOCK_TAI)
            # A late reply to an earlier probe is not this one's; skip it.
            if len(rep) >= 4 and struct.unpack("!I", rep[:4])[0] != seq:
                continue
            c.check(src[1] == args.port, f"{tag}: reply from port {src[1]}")
            r = validate(c, tag, req, rep, t4, recv_ttl(anc), tai_off, variant)
            if r:
                rtts.append(r[0])
                residence.append(r[1])
            break

    def us(v):
        return f"{v / 1000:.1f}"
    print(f"stamp_sender: {args.addr}: sent {args.count}, replies {args.count - lost}, lost {lost}, "
          f"checks {c.checks}, failed {len(c.failures)}")
    if rtts:
        rtts.sort()
        print(f"stamp_sender: RTT us min {us(rtts[0])} p50 {us(rtts[len(rtts) // 2])} max {us(rtts[-1])}; "
              f"reflector residence us max {us(max(residence))}; TAI-UTC {tai_off // 10**9} s")
    return 0 if not c.failures and args.count > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
