#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Integration: the sync TLV's version rule on the wire (docs/sync.md,
"Upgrades"; issue 30's day-one list: the TLV's version had no upgrade
story).

One lockstepd (net_af_packet on a veth in a network namespace) reflects;
scapy on the other end of the veth asks it four times, each a STAMP test
packet with a sync TLV whose first byte is the version the asker reads:
  0  an asker from before asks existed: answered in version 2;
  2  today's: answered in 2;
  3  a newer node's: answered in the newest this build encodes, 2;
  1  older than any this build encodes: the value comes back as it was
     sent (nothing the asker could misread), counted in sync_unanswerable.
Every reply must carry a valid UDP checksum (tshark is not needed: scapy
recomputes it and compares).
"""
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "lab"))
import lslab  # noqa: E402
from test_loop import NsDaemon, SCAPY_PY, scapy_checks, veth_ns  # noqa: E402

D_MAC, P_MAC = "02:00:00:00:29:01", "02:00:00:00:29:02"
D_IP, P_IP = "10.29.0.1", "10.29.0.2"
ASKS = (0, 2, 3, 1)

# argv: iface asks... Sends one test packet per ask (source port 40000 + i),
# prints a JSON line per reply: the ask, the value's first byte, whether any
# byte after it is set, and whether the UDP checksum verifies.
ASKER = r"""
import json, struct, sys, time
from scapy.all import Ether, IP, UDP, Raw, AsyncSniffer, sendp, conf
conf.verb = 0
iface, asks = sys.argv[1], [int(x) for x in sys.argv[2:]]
sn = AsyncSniffer(iface=iface, lfilter=lambda p: UDP in p and p[UDP].sport == 862)
sn.start()
time.sleep(0.5)
out = []
for i, ask in enumerate(asks):
    base = struct.pack("!IIIH", i, 0x12345678, 0, 0x8001) + bytes(30)
    tlv = struct.pack("!BBH", 0, 253, 64) + bytes([ask]) + bytes(63)
    out.append(Ether(src="%(pmac)s", dst="%(dmac)s") / IP(src="%(pip)s", dst="%(dip)s", ttl=255) /
               UDP(sport=40000 + i, dport=862) / Raw(base + tlv))
sendp(out, iface=iface)
time.sleep(1.5)
for p in sn.stop():
    b = bytes(p[UDP].payload)
    ck = p[UDP].chksum
    q = p.copy()
    del q[UDP].chksum
    good = IP(bytes(q[IP]))[UDP].chksum == ck
    v = b[44 + 4:44 + 4 + 64]
    print(json.dumps({"ask": asks[p[UDP].dport - 40000], "version": v[0],
                      "filled": any(v[1:]), "tlv_flags": b[44], "cksum_ok": good}))
""" % {"pmac": P_MAC, "dmac": D_MAC, "pip": P_IP, "dip": D_IP}


def main():
    c = scapy_checks("sync-version")
    ns = "lssyncv%d" % os.getpid()
    tmp = tempfile.mkdtemp(prefix="ls-syncv-")
    d = None
    try:
        veth_ns(ns, "va", "vp")
        sock = os.path.join(tmp, "d.sock")
        cfg = {
            "node": {"name": "d", "id": 6},
            "ports": [{"name": "p0", "dev": "net_af_packet0,iface=va", "mac": D_MAC,
                       "ipv4": D_IP + "/24"}],
            "control": {"socket": sock, "peers_file": ""},
            "idle": {"backoff": True, "after_polls": 64, "sleep_us": 200},
        }
        d = NsDaemon(ns, cfg, tmp, "d", prefix=ns).start()
        c.check(lslab.wait_until(lambda: os.path.exists(sock), 30), "daemon up")
        st0 = lslab.call(sock, "status")["counters"]
        p = subprocess.run(["ip", "netns", "exec", ns, SCAPY_PY, "-c", ASKER, "vp"] +
                           [str(a) for a in ASKS], capture_output=True, text=True, timeout=60)
        replies = {r["ask"]: r for r in map(json.loads, p.stdout.split("\n")[:-1])}
        print("# replies: %s" % sorted(replies.values(), key=lambda r: r["ask"]), flush=True)
        if not c.check(sorted(replies) == sorted(ASKS),
                       "every ask answered (%s of %s; stderr: %s)" % (sorted(replies), ASKS,
                                                                      p.stderr.strip()[-300:])):
            return
        for ask in (0, 2, 3):
            r = replies[ask]
            c.check(r["version"] == 2 and r["filled"] and r["tlv_flags"] == 0,
                    "ask %d: answered in version %d, filled %s" % (ask, r["version"], r["filled"]))
        r = replies[1]
        c.check(r["version"] == 1 and not r["filled"],
                "ask 1 (older than any this build encodes): the value came back as sent "
                "(version %d, filled %s)" % (r["version"], r["filled"]))
        c.check(all(r["cksum_ok"] for r in replies.values()),
                "every reply's UDP checksum verifies (%s)" % [r["cksum_ok"] for r in replies.values()])
        st1 = lslab.call(sock, "status")["counters"]
        c.check(st1["sync_filled"] - st0["sync_filled"] == 3 and
                st1["sync_unanswerable"] - st0["sync_unanswerable"] == 1,
                "counted: %d filled, %d unanswerable" % (st1["sync_filled"] - st0["sync_filled"],
                                                        st1["sync_unanswerable"] - st0["sync_unanswerable"]))
    finally:
        if d is not None:
            d.stop(15)
        subprocess.run(["ip", "netns", "del", ns], check=False)
    c.finish()


if __name__ == "__main__":
    main()
