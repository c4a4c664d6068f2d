#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Integration: a 9000-byte MTU on 2 KB mbufs (issue 30's day-one list: "a
9000 MTU with 2 KB mbufs and no scatter").

A frame longer than one mbuf arrives as a chain: by the RX scatter offload,
which lockstepd turns on where a port offers it (NICs; port.c), or by a PMD
that chains by itself (memif, net_pcap), where it says at start that the
port offers none. No vdev here offers the offload, so the branch that
enables it runs only on hardware; what runs here is everything after it.
One lockstepd reads a pcap of N STAMP test packets of 9014 bytes (IP 9000:
the base packet and an Extra Padding TLV) and writes its replies to another.
Checked:
  - the start-up warning names the port and its driver;
  - every test packet arrived as a chain and was made one for the probe
    path (jumbo_copied N) and reflected (rx_reflected N);
  - N replies of 9014 bytes went out, each with a UDP checksum that
    verifies and the sender's padding echoed byte for byte.
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "lab"))
import lslab  # noqa: E402
from test_loop import SCAPY_PY  # noqa: E402

N = 20
D_MAC, P_MAC = "02:00:00:00:30:01", "02:00:00:00:30:02"
D_IP, P_IP = "10.30.0.1", "10.30.0.2"

# argv: out.pcap n: n STAMP test packets of IP length 9000, padding bytes i*7
WRITE = r"""
import struct, sys
from scapy.all import Ether, IP, UDP, Raw, wrpcap
path, n = sys.argv[1], int(sys.argv[2])
pkts = []
for i in range(n):
    pad = 9000 - 20 - 8 - 44 - 4
    body = bytes((i * 7 + k) & 0xff for k in range(pad))
    base = struct.pack("!IIIH", i, 0x12345678, i, 0x8001) + bytes(30)
    tlv = struct.pack("!BBH", 0, 1, pad) + body
    pkts.append(Ether(src="%(pmac)s", dst="%(dmac)s") / IP(src="%(pip)s", dst="%(dip)s", ttl=255) /
                UDP(sport=40000 + i, dport=862) / Raw(base + tlv))
wrpcap(path, pkts)
""" % {"pmac": P_MAC, "dmac": D_MAC, "pip": P_IP, "dip": D_IP}

# argv: in.pcap: a JSON line per STAMP reply: length, checksum ok, padding echoed
READ = r"""
import json, sys
from scapy.all import rdpcap, IP, UDP
for p in rdpcap(sys.argv[1]):
    if UDP not in p or p[UDP].sport != 862:
        continue
    b = bytes(p[UDP].payload)
    q = p.copy()
    del q[UDP].chksum
    seq_sender = int.from_bytes(b[24:28], "big")
    pad = b[48:]
    want = bytes((seq_sender * 7 + k) & 0xff for k in range(len(pad)))
    print(json.dumps({"len": len(p), "cksum_ok": IP(bytes(q[IP]))[UDP].chksum == p[UDP].chksum,
                      "pad_ok": pad == want and len(pad) == 9000 - 20 - 8 - 48,
                      "seq": seq_sender}))
"""


def main():
    lslab.exit_on_signals()
    c = lslab.Checks("jumbo")
    if not os.path.exists(SCAPY_PY):
        print("SKIP: no %s (python3-scapy)" % SCAPY_PY)
        sys.exit(77)
    tmp = tempfile.mkdtemp(prefix="ls-jumbo-")
    src, out = os.path.join(tmp, "in.pcap"), os.path.join(tmp, "out.pcap")
    subprocess.run([SCAPY_PY, "-c", WRITE, src, str(N)], check=True, timeout=60)
    sock = os.path.join(tmp, "d.sock")
    cfg = {
        "node": {"name": "j", "id": 30},
        "ports": [{"name": "p0", "dev": "net_pcap0,rx_pcap=%s,tx_pcap=%s" % (src, out),
                   "mac": D_MAC, "ipv4": D_IP + "/24", "mtu": 9000, "kernel_stamps": False}],
        "control": {"socket": sock},
        "idle": {"backoff": True, "after_polls": 64, "sleep_us": 200},
    }
    d = lslab.Daemon(cfg, tmp, "j").start()
    try:
        c.check(lslab.wait_until(lambda: os.path.exists(sock), 30), "daemon up")
        counters = lambda: lslab.call(sock, "status")["counters"]  # noqa: E731
        lslab.wait_until(lambda: counters()["rx_reflected"] >= N, 10)
        st = counters()
    finally:
        d.stop(15)
    with open(d.log_path) as f:
        log = f.read()
    c.check("port p0: MTU 9000 makes frames of up to 9022 bytes" in log and
            "net_pcap offers no RX scatter offload" in log,
            "start-up says the port (net_pcap) offers no RX scatter offload and what that means")
    c.check(st["rx_reflected"] == N and st["jumbo_copied"] == N,
            "%d test packets of 9014 bytes arrived as chains and were reflected "
            "(rx_reflected %d, jumbo_copied %d)" % (N, st["rx_reflected"], st["jumbo_copied"]))
    r = subprocess.run([SCAPY_PY, "-c", READ, out], capture_output=True, text=True, timeout=60)
    rep = [json.loads(x) for x in r.stdout.split("\n") if x]
    c.check(len(rep) == N and sorted(x["seq"] for x in rep) == list(range(N)),
            "%d replies written, one per test packet (%d)" % (N, len(rep)))
    c.check(rep and all(x["len"] == 9014 and x["cksum_ok"] and x["pad_ok"] for x in rep),
            "every reply is 9014 bytes, its UDP checksum verifies and the padding is echoed "
            "(%s)" % [x for x in rep if not (x["len"] == 9014 and x["cksum_ok"] and x["pad_ok"])][:3])
    c.finish()


if __name__ == "__main__":
    main()
