#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""lib/roce against scapy's RoCE layer (scapy.contrib.roce) and tshark.

Usage: test_roce_scapy.py ROCE_TOOL

scapy builds random RoCEv2 packets and computes their ICRC itself; we feed
them to roce_tool (our C library) and compare. Debian 12's scapy (2.5.0)
computes the ICRC over IPv4 only, so for IPv6 this script masks a copy of
the scapy-built packet through scapy's own fields (traffic class, flow label,
hop limit, UDP checksum, FECN/BECN/resv6 to ones) and runs zlib.crc32 over
it, the same recipe newer scapy uses. It also rewrites source ports with
our incremental update and lets scapy recompute both the ICRC and the UDP
checksum, and decodes CNPs we build in scapy and, when tshark is there, in
Wireshark's InfiniBand dissector.

Exit 77 (skip) when scapy is missing.
"""
import logging
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

try:
    from scapy.all import IP, IPv6, UDP, Raw, Ether, raw, wrpcap, conf
    from scapy.contrib.roce import BTH, CNPPadding, CNP_OPCODE
except ImportError:
    # python3-scapy installs for Debian's interpreter; a pyenv or venv
    # python3 first in PATH does not see it.
    if os.path.exists('/usr/bin/python3') and \
            os.path.realpath(sys.executable) != os.path.realpath('/usr/bin/python3'):
        os.execv('/usr/bin/python3', ['/usr/bin/python3'] + sys.argv)
    print('SKIP: scapy not installed (apt-get install python3-scapy)')
    sys.exit(77)

conf.verb = 0
# scapy 2.5 warns on every IPv6 BTH it cannot checksum; we do that below.
logging.getLogger('scapy').setLevel(logging.ERROR)
TOOL = sys.argv[1]
rng = random.Random(4791)
failures = []


def fail(msg):
    failures.append(msg)
    print('FAIL:', msg)


def run_tool(args, lines):
    out = subprocess.run([TOOL] + args, input='\n'.join(lines) + '\n',
                         capture_output=True, text=True, check=True).stdout
    return out.splitlines()


def wire_icrc(pkt_bytes):
    """The ICRC a packet carries, as the crc32() value (little-endian)."""
    return struct.unpack('<I', pkt_bytes[-4:])[0]


def icrc6(pkt):
    """ICRC of an IPv6 RoCEv2 packet, masking through scapy's fields."""
    m = IPv6(raw(pkt))
    m.tc = 0xff
    m.fl = 0xfffff
    m.hlim = 0xff
    m[UDP].chksum = 0xffff
    m[BTH].fecn = 1
    m[BTH].becn = 1
    m[BTH].resv6 = 0x3f
    return zlib.crc32(b'\xff' * 8 + raw(m)[:-4]) & 0xffffffff


def random_packet(v6):
    bth = BTH(opcode=rng.choice([0x00, 0x04, 0x0a, 0x11, 0x24, 0x64, 0x81]),
              solicited=rng.getrandbits(1), migreq=rng.getrandbits(1),
              padcount=rng.getrandbits(2), pkey=rng.getrandbits(16),
              fecn=rng.getrandbits(1), becn=rng.getrandbits(1),
              dqpn=rng.getrandbits(24), ackreq=rng.getrandbits(1),
              psn=rng.getrandbits(24))
    plen = rng.choice([0, 1, 3, 4, 16, 256, 1024, 4096, rng.randrange(4097)])
    payload = Raw(bytes(rng.getrandbits(8) for _ in range(plen)))
    udp = UDP(sport=rng.getrandbits(16), dport=4791)
    if rng.random() < 0.5:
        udp.chksum = 0      # what RoCE NICs send; otherwise scapy fills it
    if v6:
        ip = IPv6(src='2001:db8::%x' % rng.getrandbits(16),
                  dst='2001:db8:1::%x' % rng.getrandbits(16),
                  tc=rng.getrandbits(8), fl=rng.getrandbits(20),
                  hlim=rng.randrange(1, 256))
    else:
        ip = IP(src='10.%d.%d.%d' % tuple(rng.getrandbits(8) for _ in range(3)),
                dst='10.%d.%d.%d' % tuple(rng.getrandbits(8) for _ in range(3)),
                tos=rng.getrandbits(8), ttl=rng.randrange(1, 256),
                id=rng.getrandbits(16), flags=rng.choice(['DF', 0]))
    return ip / udp / bth / payload


def reference_icrc(pkt_bytes, v6):
    if v6:
        return icrc6(IPv6(pkt_bytes))
    p = IP(pkt_bytes)
    del p[BTH].icrc
    return wire_icrc(raw(p))


def udp_ok(pkt_bytes, v6):
    """True when the UDP checksum is zero or scapy agrees with it."""
    p = IPv6(pkt_bytes) if v6 else IP(pkt_bytes)
    if p[UDP].chksum == 0:
        return True
    want = p[UDP].chksum
    del p[UDP].chksum
    return (IPv6(raw(p)) if v6 else IP(raw(p)))[UDP].chksum == want


def scapy_packet(v6):
    """Bytes of a random packet with the ICRC scapy (or, for IPv6, this
    script's recipe on scapy's fields) gives it."""
    b = raw(random_packet(v6))
    if v6:
        b = b[:-4] + struct.pack('<I', icrc6(IPv6(b)))
        if IPv6(b)[UDP].chksum != 0:
            p = IPv6(b)
            del p[UDP].chksum   # the ICRC changed: let scapy redo it
            b = raw(p)
    return b


def check_icrc(n):
    pkts = [(v6, scapy_packet(v6)) for v6 in [i % 2 == 1 for i in range(n)]]
    out = run_tool(['icrc'], [b.hex() for _, b in pkts])
    if len(out) != len(pkts):
        fail('icrc: %d answers for %d packets' % (len(out), len(pkts)))
        return pkts
    for (v6, b), line in zip(pkts, out):
        want = wire_icrc(b)
        if line != '%08x ok' % want:
            fail('icrc v%d len %d: tool says %r, scapy %08x'
                 % (6 if v6 else 4, len(b), line, want))
    print('icrc: %d packets (IPv4 vs scapy compute_icrc, IPv6 vs masked '
          'zlib.crc32) compared' % len(pkts))
    return pkts


def check_sport(pkts):
    bad = 0
    for port in [0, 1, 4791, 0xffff, rng.getrandbits(16)]:
        out = run_tool(['sport', str(port)], [b.hex() for _, b in pkts])
        for (v6, b), line in zip(pkts, out):
            nb = bytes.fromhex(line)
            p = IPv6(nb) if v6 else IP(nb)
            if p[UDP].sport != port or len(nb) != len(b):
                fail('sport: port not rewritten')
                bad += 1
                continue
            if wire_icrc(nb) != reference_icrc(nb, v6):
                fail('sport %d v%d len %d: ICRC %08x, scapy %08x'
                     % (port, 6 if v6 else 4, len(nb), wire_icrc(nb),
                        reference_icrc(nb, v6)))
                bad += 1
            if not udp_ok(nb, v6):
                fail('sport %d v%d: UDP checksum wrong' % (port, 6 if v6 else 4))
                bad += 1
    print('sport: %d rewrites checked against scapy, %d bad' % (5 * len(pkts), bad))


def build_cnp(src, dst, qp, pkey, sport, dscp, ecn):
    out = run_tool(['cnp', src, dst, str(qp), str(pkey), str(sport),
                    str(dscp), str(ecn)], [])
    return bytes.fromhex(out[0])


def check_cnp():
    cnps = []
    for v6, src, dst in [(False, '192.0.2.1', '192.0.2.2'),
                         (True, '2001:db8::1', '2001:db8::2')]:
        qp = rng.getrandbits(24)
        b = build_cnp(src, dst, qp, 0xffff, 0xc001, 48, 1)
        p = IPv6(b) if v6 else IP(b)
        want = {'opcode': CNP_OPCODE, 'dqpn': qp, 'becn': 1, 'fecn': 0,
                'psn': 0, 'pkey': 0xffff, 'solicited': 0, 'migreq': 0,
                'padcount': 0, 'version': 0, 'ackreq': 0}
        if BTH not in p or CNPPadding not in p:
            fail('cnp v%d: scapy does not see BTH/CNPPadding: %r'
                 % (6 if v6 else 4, p))
            continue
        for k, v in want.items():
            if getattr(p[BTH], k) != v:
                fail('cnp v%d: BTH %s = %r, want %r'
                     % (6 if v6 else 4, k, getattr(p[BTH], k), v))
        if p[CNPPadding].reserved1 or p[CNPPadding].reserved2:
            fail('cnp: reserved bytes not zero')
        if p[UDP].dport != 4791 or p[UDP].sport != 0xc001:
            fail('cnp: UDP ports')
        tos = p.tc if v6 else p.tos
        if tos != (48 << 2 | 1):
            fail('cnp: DSCP/ECN %#x' % tos)
        if wire_icrc(b) != reference_icrc(b, v6):
            fail('cnp v%d: ICRC %08x, scapy %08x'
                 % (6 if v6 else 4, wire_icrc(b), reference_icrc(b, v6)))
        if not udp_ok(b, v6):
            fail('cnp v%d: UDP checksum' % (6 if v6 else 4))
        if not v6:
            q = IP(b)
            del q.chksum
            if IP(raw(q)).chksum != p.chksum:
                fail('cnp: IPv4 header checksum')
        print('cnp v%d: scapy decodes %s, DestQP %#x'
              % (6 if v6 else 4, p[BTH].sprintf('%opcode%'), p[BTH].dqpn))
        cnps.append((v6, qp, b))
    return cnps


def check_tshark(cnps):
    tshark = shutil.which('tshark')
    if not tshark:
        print('tshark: not installed, skipped')
        return
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, 'cnp.pcap')
        frames = [Ether(src='02:00:00:00:00:01', dst='02:00:00:00:00:02',
                        type=0x86dd if v6 else 0x0800) / Raw(b)
                  for v6, _, b in cnps]
        wrpcap(path, frames)
        env = dict(os.environ, HOME=d, XDG_CONFIG_HOME=d)
        r = subprocess.run([tshark, '-r', path, '-T', 'fields',
                            '-e', 'infiniband.bth.opcode',
                            '-e', 'infiniband.bth.destqp',
                            '-e', 'infiniband.invariant.crc',
                            '-e', '_ws.col.Info'],
                           capture_output=True, text=True, env=env)
        if r.returncode != 0:
            fail('tshark: exit %d: %s' % (r.returncode, r.stderr.strip()))
            return
        lines = r.stdout.strip().splitlines()
        if len(lines) != len(cnps):
            fail('tshark: %d lines for %d CNPs' % (len(lines), len(cnps)))
            return
        for (v6, qp, b), line in zip(cnps, lines):
            f = line.split('\t')
            print('tshark v%d: %s' % (6 if v6 else 4, line))
            if int(f[0], 0) != CNP_OPCODE or int(f[1], 16) != qp:
                fail('tshark v%d: opcode/QP %r, want 129 / %#x'
                     % (6 if v6 else 4, f[:2], qp))
            if f[2] and int(f[2], 16) not in (wire_icrc(b),
                                              struct.unpack('>I', b[-4:])[0]):
                fail('tshark v%d: ICRC field %s' % (6 if v6 else 4, f[2]))


pkts = check_icrc(400)
check_sport(pkts[:120])
cnps = check_cnp()
check_tshark(cnps)
if failures:
    print('%d failures' % len(failures))
    sys.exit(1)
print('all agree')
