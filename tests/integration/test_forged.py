#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Integration, regression for issue 27 M1: forged replies are not believed.

One lockstepd (net_af_packet on a veth in a network namespace) probes a
peer whose address nobody answers for; scapy on the other end of the veth
plays the peer (and the attacker spoofing it). It sniffs the daemon's
probes and answers:
  1. one reply made correctly from a probe (the control: it is believed,
     one answer on the path and one record for clock sync), then
  2. forged replies "from the peer", each echoing our lockstep TLV: the
     sequence number of a probe we did send but a T1 one second off, and
     the exact T1 of a probe but a sequence number we never sent.
Before the fix the second kind went to clock sync (any reply naming us
did) and the first kind into the delay windows too. Now both are counted
as rx_reply_unmatched and change neither the path's counters nor sync.
"""
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "lab"))
import lslab  # noqa: E402
from test_loop import NsDaemon, SCAPY_PY, scapy_checks, veth_ns  # noqa: E402

D_MAC, P_MAC = "02:00:00:00:28:01", "02:00:00:00:28:02"
D_IP, P_IP = "10.28.0.1", "10.28.0.2"

# argv: iface mode(good|forge) n. Sniffs n probes, answers as mode says,
# prints how many replies it sent.
PEER = r"""
import struct, sys
from scapy.all import Ether, IP, UDP, Raw, sendp, sniff, conf
conf.verb = 0
iface, mode, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
probes = sniff(iface=iface, count=n, timeout=20,
               lfilter=lambda p: UDP in p and p[UDP].dport == 862)

def reply(p, seq_delta=0, t1_sec_delta=0):
    b = bytes(p[UDP].payload)
    seq, t1s, t1f, ee = struct.unpack("!IIIH", b[:14])
    base = (struct.pack("!IIIHH", 1, t1s, t1f, 0x8001, 0) + struct.pack("!II", t1s, t1f) +
            struct.pack("!IIIHH", (seq + seq_delta) & 0xffffffff, (t1s + t1_sec_delta) & 0xffffffff,
                        t1f, ee, 0) + struct.pack("!B3x", 255))
    return (Ether(src=p[Ether].dst, dst=p[Ether].src) / IP(src=p[IP].dst, dst=p[IP].src, ttl=255) /
            UDP(sport=862, dport=p[UDP].sport) / Raw(base + b[44:]))

out = []
for p in probes:
    if mode == "good":
        out.append(reply(p))
    else:
        out.append(reply(p, t1_sec_delta=1))
        out.append(reply(p, seq_delta=100000))
sendp(out, iface=iface)
print(len(out))
"""


def main():
    c = scapy_checks("forged")
    ns = "lsforge%d" % os.getpid()
    tmp = tempfile.mkdtemp(prefix="ls-forged-")
    d = None
    try:
        veth_ns(ns, "fa", "fp")
        sock = os.path.join(tmp, "d.sock")
        cfg = {
            "node": {"name": "d", "id": 5},
            "ports": [{"name": "p0", "dev": "net_af_packet0,iface=fa", "mac": D_MAC, "ipv4": D_IP + "/24"}],
            "peers": [{"name": "p", "addr": P_IP, "mac": P_MAC}],
            "probe": {"interval_us": 50000, "paths": 2},
            "control": {"socket": sock, "peers_file": ""},
            "idle": {"backoff": True, "after_polls": 64, "sleep_us": 200},
        }
        d = NsDaemon(ns, cfg, tmp, "d", prefix="lsforge%d" % os.getpid()).start()
        c.check(lslab.wait_until(lambda: os.path.exists(sock), 30), "daemon up")

        def peer(mode, n):
            p = subprocess.run(["ip", "netns", "exec", ns, SCAPY_PY, "-c", PEER, "fp", mode, str(n)],
                               capture_output=True, text=True, timeout=60)
            return int(p.stdout.strip() or 0)

        def state():
            st = lslab.call(sock, "status")["counters"]
            paths = lslab.path_totals(sock, "p")
            answered = sum(q["counters"]["received"] + q["counters"]["late"] for q in paths.values())
            return st, answered

        sent = peer("good", 1)
        time.sleep(0.5)
        st0, ans0 = state()
        c.check(sent == 1 and ans0 == 1 and st0["sync_recs"] == 1 and st0["rx_reply_unmatched"] == 0,
                "control: a correct reply is believed (answered %d, sync records %d)" % (ans0, st0["sync_recs"]))

        sent = peer("forge", 10)
        lslab.wait_until(lambda: state()[0]["rx_reply"] + state()[0]["rx_reply_unmatched"] >=
                         st0["rx_reply"] + sent, 10)
        st1, ans1 = state()
        c.check(sent == 20 and st1["rx_reply_unmatched"] == sent,
                "%d forged replies counted as rx_reply_unmatched (%d)" % (sent, st1["rx_reply_unmatched"]))
        c.check(ans1 == ans0, "forged replies left the path's answers unchanged (%d -> %d)" % (ans0, ans1))
        c.check(st1["sync_recs"] == st0["sync_recs"] and st1["sync_dropped"] == st0["sync_dropped"],
                "forged replies reached clock sync: no (%d -> %d records)" % (st0["sync_recs"], st1["sync_recs"]))
    finally:
        if d is not None:
            d.stop(15)
        subprocess.run(["ip", "netns", "del", ns], check=False)
    c.finish()


if __name__ == "__main__":
    main()
