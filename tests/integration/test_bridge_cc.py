#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Integration: congestion control in lockstepd's data path, frames built
and decoded by scapy's RoCE layer (an implementation we did not write).

  [ns H] hk (10.77.0.1) --veth-- hd  lockstepd  fd --veth-- fk (10.77.0.2) [ns P]

A slice takes RoCEv2 with cc {mode dcqcn, np true}. Checks, in order:
  - CE-marked requests from the fabric before lockstepd knows the sender's
    QP: counted cnp_unpaired, no CNP on the wire (a CNP to a guessed QP
    would slow a flow that did nothing);
  - the host's RC ACK (to QP X, PSN q) pairs X with the host's QP Y that
    got the request with PSN q (qp_pairs_learnt);
  - then 6 CE-marked requests within one CNP interval give exactly one CNP,
    the rest cnp_rate_limited; the CNP as scapy decodes it: BTH opcode 0x81
    to QP X, from H to P, FECN/BECN as Annex A17 sets them, a valid ICRC;
    tshark's InfiniBand dissector names it a CNP when tshark is installed;
  - per-flow, per-slice and per-path CE counts equal the CE frames sent;
  - reaction point: the host's RoCEv2 flow to QP X in the dcqcn slice runs
    at the line; a CNP from the fabric to QP Y cuts its rate to about half
    (alpha starts near 1), a second cuts it again, `flows --cc` shows
    rate, alpha, state and CNPs; a CNP to an unknown QP is cnp_unmatched;
  - `lockstepctl cc` and `lockstepctl flows --cc` print their tables;
  - delay mode, on the probe mesh's own one-way delays: a second lockstepd
    in ns P reflects the bridge's probes; a UDP flow from H to it in a
    delay slice runs at the line; a real queue on the forward direction (a
    20 Mb/s tbf on the bridge's fabric egress, filled by bulk UDP from H in
    another slice) cuts the flow's rate; the same queue on the reverse
    direction only (the reflector's egress, filled from P) does not; with
    the queue gone the rate climbs back.
"""
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_bridge  # noqa: E402
from test_bridge import sh, SYS_PY, BASE  # noqa: E402
import lslab  # noqa: E402  (test_bridge put tools/lab on the path)

QP_Y = 0x000123   # the host's QP (frames from the fabric name it)
QP_X = 0x000456   # the remote sender's QP (frames from the host name it)
QP_Y2, QP_X2 = 0x000789, 0x000abc  # a second pair of QPs of the same hosts
QP_Y3, QP_X3 = 0x000def, 0x000321  # a third, whose first CNP comes before its ACK
LINK = 300000000  # Bridge.config's link_bps
H, P = "10.77.0.1", "10.77.0.2"
# BRIDGE_LCORES=2: the data path on two lcores (test_bridge_lcores.Bridge2).
# H-P hashes to the second (not the lead): the CNPs and QP pairing run
# there; RF, the delay mode's reflector, is chosen so that H-RF does too:
# its flow's loop reads the lead's probe state from the other lcore.
LCORES = int(os.environ.get("BRIDGE_LCORES", "1"))
RF = "10.77.0.6" if LCORES == 2 else "10.77.0.5"

# Frames from argv (JSON list of [iface_side, kind, opcode, dqp, psn, ecn, sport])
SEND = r"""
import json, sys
from scapy.all import Ether, IP, UDP, Raw, sendp
from scapy.contrib.roce import BTH
H, P = "10.77.0.1", "10.77.0.2"
frames = []
for side, opcode, dqp, psn, ecn, sport in json.loads(sys.argv[2]):
    src, dst = (H, P) if side == "h" else (P, H)
    p = Ether(dst="02:00:00:00:00:99") / IP(src=src, dst=dst, tos=ecn) / \
        UDP(sport=sport, dport=4791, chksum=0) / \
        BTH(opcode=opcode, dqpn=dqp, psn=psn) / Raw(b"x" * (0 if opcode in (0x11, 0x81) else 64))
    frames.append(Ether(bytes(p)))   # scapy fills the ICRC when it builds
# argv[3]: seconds between frames (a flow that keeps sending, slowly)
sendp(frames, iface=sys.argv[1], verbose=False,
      inter=float(sys.argv[3]) if len(sys.argv) > 3 else 0)
"""

# CNPs seen on an interface for a while, as hex
SNIFF = r"""
import socket, struct, sys, time
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
s.bind((sys.argv[1], 0))
s.settimeout(0.2)
end, out = time.time() + float(sys.argv[2]), []
while time.time() < end:
    try:
        f = s.recv(65535)
    except socket.timeout:
        continue
    if struct.unpack("!H", f[12:14])[0] != 0x0800 or f[23] != 17:
        continue
    ihl = (f[14] & 15) * 4
    if struct.unpack("!H", f[16 + ihl:18 + ihl])[0] == 4791 and f[22 + ihl] == 0x81:
        out.append(f.hex())
print(repr(out))
"""

DECODE = r"""
import struct, sys
from scapy.all import Ether, IP
from scapy.layers.inet import UDP
from scapy.contrib.roce import BTH
from scapy.packet import bind_layers
bind_layers(UDP, BTH, dport=4791)
e = Ether(bytes.fromhex(sys.argv[1]))
b = e[BTH]
print(repr({"src": e[IP].src, "dst": e[IP].dst, "opcode": b.opcode, "dqp": b.dqpn,
            "becn": int(b.becn), "icrc_ok": struct.pack("!I", b.icrc) == b.compute_icrc(b""),
            "dscp": e[IP].tos >> 2}))
"""


def send(br, side, frames, inter=0.0):
    ns, iface = (br.ns_h, br.tag + "hk") if side == "h" else (br.ns_p, br.tag + "fk")
    sh("ip", "netns", "exec", ns, SYS_PY, "-c", SEND, iface, json.dumps(
        [[side] + list(f) for f in frames]), str(inter))


def sniff(br, secs):
    return subprocess.Popen(["ip", "netns", "exec", br.ns_p, SYS_PY, "-c", SNIFF,
                             br.tag + "fk", str(secs)], stdout=subprocess.PIPE, text=True)


def counters(br):
    return br.call("cc")["counters"]


def cc_flow(br, qp):
    for f in br.call("flows", {"top": 50, "dir": "host", "cc": True})["top"]:
        if f.get("qp_label") == qp:
            return f
    return None


BULK = r"""
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
end = time.time() + float(sys.argv[2])
while time.time() < end:
    for _ in range(36):          # ~40 Mb/s of 1400-byte datagrams
        s.sendto(b"b" * 1400, (sys.argv[1], 7001))
    time.sleep(0.01)
"""

UDP_SEND = r"""
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("10.77.0.1", 40000))     # one flow across the runs: its loop's state carries on
end = time.time() + float(sys.argv[1])
while time.time() < end:
    s.sendto(b"x" * 100, (sys.argv[2], 7000))
    time.sleep(0.0002)
"""


def reflector(br, tmp):
    """A second lockstepd in ns P, RF on the same veth as P's kernel."""
    cfg = {"node": {"name": "rf", "id": 2},
           "ports": [{"name": "p", "dev": "net_af_packet0,iface=%sfk,qdisc_bypass=0" % br.tag,
                      "mac": "02:77:00:00:00:05", "ipv4": RF + "/24"}],
           "control": {"socket": os.path.join(tmp, "rf.sock"), "peers_file": ""},
           "sync": {"enabled": False, "shm": ""},
           "idle": {"backoff": True, "sleep_us": 20}}
    path = os.path.join(tmp, "rf.json")
    with open(path, "w") as f:
        json.dump(cfg, f)
    log = open(os.path.join(tmp, "rf.log"), "a")
    return subprocess.Popen(
        ["ip", "netns", "exec", br.ns_p, os.path.join(lslab.BUILD, "app", "lockstepd",
                                                      "lockstepd"),
         "--no-pci", "--no-huge", "-m", "256", "--lcores", "0@(0,1)", "--file-prefix",
         br.tag + "r", "--", "--config", path], stdout=log, stderr=subprocess.STDOUT)


def delay_flow(br):
    for f in br.call("flows", {"top": 50, "dir": "host", "cc": True})["top"]:
        if f.get("dst") == RF and f.get("dport") == 7000 and f.get("sport") == 40000:
            return f["cc"]
    return None


def delay_mode(c, br, tmp):
    """The delay loop end to end (see the module's docstring)."""
    rf = reflector(br, tmp)
    try:
        with open(os.path.join(tmp, "br.json")) as f:
            cfg = json.load(f)
        cfg["ports"][1]["dev"] += ",qdisc_bypass=0"   # netem must see lockstepd's frames
        cfg["peers"] = [{"name": "rf", "addr": RF, "port": "fab"}]
        cfg["probe"] = {"interval_us": 1000, "paths": 2, "acquire_rate": 1}
        cfg["sync"] = {"enabled": False, "shm": ""}
        # the target well above what af_packet's own jitter reaches on two
        # shared cores (CI once saw a 1.4 ms forward sample with the reverse
        # bulk sender busy: a 1 ms target cut the rate by 22%), the full
        # queue's delay (~100 ms) well above the target
        cfg["bridge"]["policy"] = {"slices": [{"name": "dly", "match": {"dport": 7000},
                                               "cc": {"mode": "delay", "target_us": 4000}}]}
        cfg["bridge"]["policy_file"] = ""
        with open(os.path.join(tmp, "br2.json"), "w") as f:
            json.dump(cfg, f)
        br.stop()
        c.check(br.start(os.path.join(tmp, "br2.json")), "lockstepd again, with a peer and a "
                "delay slice")
        c.check(lslab.wait_until(lambda: any(
            p["received"] > 50 for p in br.call("peers")), 20),
            "the reflector in ns P answers the bridge's probes")

        def run(secs):
            sh("ip", "netns", "exec", br.ns_h, SYS_PY, "-c", UDP_SEND, str(secs), RF,
               timeout=secs + 30)
            return delay_flow(br)

        f0 = run(2)
        c.check(f0 is not None and f0["mode"] == "delay" and f0["rate_bps"] >= 0.9 * LINK,
                "no queue: the delay-mode flow runs near the line: %s" % f0)
        def queue(ns, dev, dst, secs):
            """A 20 Mb/s bottleneck on dev's egress, kept full for secs."""
            sh("ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", dev, "root", "tbf",
               "rate", "20mbit", "burst", "5kb", "latency", "10ms")
            src = br.ns_p if dst == "10.77.0.1" else br.ns_h
            bulk = subprocess.Popen(["ip", "netns", "exec", src, SYS_PY, "-c", BULK, dst,
                                     str(secs + 1)])
            time.sleep(0.5)
            f = run(secs)
            for pe in br.call("paths", {"window": "1s"})["peers"]:
                for pa in pe["paths"]:
                    print("   path %s: sent %s received %s rtt_p50 %s fwd_p50 %s rev_p50 %s" % (
                        pa.get("path"), pa.get("sent"), pa.get("received"),
                        pa.get("rtt_p50_ns"), pa.get("fwd_p50_ns"), pa.get("rev_p50_ns")))
            print("   tc:", sh("ip", "netns", "exec", ns, "tc", "-s", "qdisc", "show", "dev",
                              dev).stdout.replace("\n", " | "))
            bulk.wait(30)
            sh("ip", "netns", "exec", ns, "tc", "qdisc", "del", "dev", dev, "root")
            return f

        f1 = queue(br.ns_p, br.tag + "fk", "10.77.0.1", 1)
        c.check(f1 is not None and f1["rate_bps"] >= 0.9 * LINK,
                "a full queue on the reverse path only: the rate stays: %s" % f1)
        f2 = queue(br.ns_b, br.tag + "fd", "10.77.0.2", 1)
        c.check(f2 is not None and f2["decreases"] > f1["decreases"] and
                f2["rate_bps"] <= 0.5 * LINK,
                "a full queue on the forward path: the rate is cut: %s" % f2)
        time.sleep(0.5)
        f3 = run(2)
        c.check(f3 is not None and f3["increases"] > f2["increases"] and
                f3["rate_bps"] >= 0.9 * LINK,
                "the queue gone: the rate climbs back: %s" % f3)
    finally:
        rf.terminate()
        rf.wait(10)


def pair_ageing(c, br, policy):
    """Address pairs unused for bridge.flow_idle_ms are forgotten
    (qp_pairs_aged), so the table never fills for good. Requests do not
    touch the pair table, so a pair whose flows only send requests ages while
    its flows live on: they must register their QPs again (the ageing epoch),
    or the next ACK could not pair them and CE would never give a CNP."""
    path = br.config(policy)
    with open(path) as f:
        cfg = json.load(f)
    cfg["bridge"]["flow_idle_ms"] = 6000
    with open(path, "w") as f:
        json.dump(cfg, f)
    br.stop()
    if not c.check(br.start(path), "lockstepd restarted with flow_idle_ms 6000"):
        return
    # requests from P to the host's QP Y every 0.5 s for 8 s, no ACK: the
    # flow stays, its pair (touched once, when Y registered) ages (2 s and
    # 0.25 s made it 4 s shorter, and failed under a loaded CI: the steps
    # after it outlived the flow itself)
    psn = 9000 + 16
    # (the pair, made at the first request, ages at ~6 s; the living flow
    # registers Y again with the next request, so the pair the ACK below
    # finds, a few seconds later, is young)
    send(br, "p", [(0x04, QP_Y, 9000 + i, 2, BASE + 3) for i in range(16)], inter=0.5)
    st = counters(br)
    c.check(st["qp_pairs_aged"] >= 1, "a pair unused for 6 s is forgotten: qp_pairs_aged %d"
            % st["qp_pairs_aged"])
    # traffic resumes: a request (its living flow registers Y again, in the
    # new epoch), the host's ACK for it (pairs X and Y), a CE-marked request
    send(br, "p", [(0x04, QP_Y, psn, 2, BASE + 3)])
    send(br, "h", [(0x11, QP_X, psn, 0, 50000)])
    time.sleep(0.3)
    rx = sniff(br, 2.0)
    time.sleep(0.5)
    send(br, "p", [(0x04, QP_Y, psn + 1, 3, BASE + 3)])
    out, _ = rx.communicate(timeout=20)
    st2 = counters(br)
    c.check(st2["qp_pairs_learnt"] > st["qp_pairs_learnt"] and
            len(eval(out.strip() or "[]")) == 1,
            "the living flow registered its QP again: the ACK pairs it (learnt %d -> %d) and "
            "CE gives a CNP on the wire" % (st["qp_pairs_learnt"], st2["qp_pairs_learnt"]))



def main():
    if LCORES == 2:
        import test_bridge_lcores as tl
        for a, what in ((P, "H-P"), (RF, "H-RF")):
            assert tl.lcore_index(H, a) == 1, what + " must hash to the second lcore"
        test_bridge.run("bridge-cc-lcores", "lsc", checks, cls=tl.Bridge2)
    else:
        test_bridge.run("bridge-cc", "lsc", checks)


def checks(c, br, tmp):
    # T = K = 10 s and B = 1 GB: no increase events during the test, so
    # every rate read is the decreases' doing alone
    policy = {"slices": [{"name": "rdma", "match": {"roce": True},
                          "cc": {"mode": "dcqcn", "np": True, "cnp_interval_us": 500000,
                                 "t_us": 10000000, "k_us": 10000000,
                                 "byte_reset": 1 << 30}}]}
    c.check(br.start(br.config(policy)), "lockstepd up with a dcqcn slice")
    ce0 = counters(br)

    # 1. CE before the pairing: counted, no CNP
    rx = sniff(br, 2.0)
    time.sleep(0.5)
    send(br, "p", [(0x04, QP_Y, 1000, 3, BASE + 3), (0x04, QP_Y, 1001, 3, BASE + 3)])
    out, _ = rx.communicate(timeout=20)
    st = counters(br)
    c.check(eval(out.strip() or "[]") == [] and st["cnp_sent"] == 0,
            "CE before the sender's QP is known: no CNP on the wire")
    c.check(st["cnp_unpaired"] - ce0["cnp_unpaired"] == 2,
            "... counted cnp_unpaired: %d (want 2)" % st["cnp_unpaired"])

    # 2. the host's ACK for PSN 1001 pairs X with Y
    send(br, "h", [(0x11, QP_X, 1001, 0, 50000)])
    time.sleep(0.3)
    st = counters(br)
    c.check(st["qp_pairs_learnt"] >= 1,
            "the host's RC ACK pairs its QP with the sender's: qp_pairs_learnt %d" %
            st["qp_pairs_learnt"])

    # 3. six CE requests in one interval: one CNP, five rate-limited
    rx = sniff(br, 2.5)
    time.sleep(0.5)
    send(br, "p", [(0x04, QP_Y, 1002 + i, 3, BASE + 3) for i in range(6)])
    out, _ = rx.communicate(timeout=20)
    cnps = eval(out.strip() or "[]")
    st2 = counters(br)
    c.check(len(cnps) == 1 and st2["cnp_sent"] == 1,
            "6 CE-marked requests within the CNP interval: %d CNP on the wire, "
            "cnp_sent %d (want 1)" % (len(cnps), st2["cnp_sent"]))
    c.check(st2["cnp_rate_limited"] == 5,
            "... the other 5 cnp_rate_limited: %d" % st2["cnp_rate_limited"])
    if cnps:
        d = eval(sh(SYS_PY, "-c", DECODE, cnps[0]).stdout.strip())
        c.check(d["opcode"] == 0x81 and d["dqp"] == QP_X and d["src"] == "10.77.0.1" and
                d["dst"] == "10.77.0.2" and d["becn"] == 1,
                "scapy decodes a CNP (opcode 0x81, BECN) from H to P for QP X: %s" % d)
        c.check(d["icrc_ok"], "the CNP's ICRC is valid by scapy")
        if shutil.which("tshark"):
            pcap = os.path.join(tmp, "cnp.pcap")
            sh(SYS_PY, "-c", "import sys; from scapy.all import Ether, wrpcap; "
               "wrpcap(sys.argv[1], [Ether(bytes.fromhex(sys.argv[2]))])", pcap, cnps[0])
            r = sh("tshark", "-r", pcap, "-d", "udp.port==4791,infiniband", "-T", "fields",
                   "-e", "infiniband.bth.opcode", "-e", "infiniband.bth.destqp",
                   check=False)
            f = r.stdout.strip().split("\t")
            c.check(r.returncode == 0 and len(f) == 2 and int(f[0], 0) == 0x81 and
                    int(f[1], 0) == QP_X,
                    "tshark's InfiniBand dissector: opcode and dest QP %s" % f)

    # 4. CE per flow, slice and path: 8 CE frames from P with sport BASE+3
    fab = [f for f in br.call("flows", {"top": 50, "dir": "fabric"})["top"]
           if f.get("qp_label") == QP_Y]
    cc = br.call("cc")
    rd = [s for s in cc["slices"] if s["name"] == "rdma"]
    c.check(len(fab) == 1 and fab[0]["ce"] == 8 and fab[0]["slice"] == "rdma",
            "the fabric flow to QP Y: 8 CE, slice rdma: %s" % fab)
    c.check(rd and rd[0]["ce"] == 8 and rd[0]["mode"] == "dcqcn",
            "slice rdma: 8 CE, mode dcqcn: %s" % rd)
    c.check({"path": 3, "ce": 8} in cc["paths_ce"],
            "CE by the sender's path: path 3 has 8: %s" % cc["paths_ce"])

    # 5. reaction point: the host's flow to X, then CNPs to Y
    send(br, "h", [(0x04, QP_X, 5000 + i, 2, 50000) for i in range(4)])
    time.sleep(0.3)
    f0 = cc_flow(br, QP_X)
    c.check(f0 is not None and f0["cc"]["mode"] == "dcqcn" and
            f0["cc"]["rate_bps"] == LINK and f0["cc"]["state"] == "idle",
            "the host's flow to QP X under DCQCN at the line before any CNP: %s" %
            (f0 and f0["cc"]))
    send(br, "p", [(0x81, QP_Y, 0, 0, 50000)])
    time.sleep(0.3)
    f1 = cc_flow(br, QP_X)["cc"]
    # alpha_init 1023/1024: Rc = line x (1 - alpha/2) = 0.5005 x line
    want = LINK * (1 - (1023 / 1024) / 2)
    c.check(abs(f1["rate_bps"] - want) <= 0.001 * want and f1["cnps"] == 1 and
            f1["state"] == "recovery" and f1["target_bps"] == LINK,
            "a CNP to QP Y cuts the flow to line x (1 - alpha/2) = %.0f: %s" % (want, f1))
    # two CNPs back to back: no timer between them, whatever the machine's
    # load did since the first one, so the second cut is exactly
    # Rc = Rt (1 - alpha/2) with the alpha the first of them raised
    send(br, "p", [(0x81, QP_Y, 0, 0, 50000), (0x81, QP_Y, 0, 0, 50000)])
    time.sleep(0.3)
    f2 = cc_flow(br, QP_X)["cc"]
    g = 1 / 256
    a_before = (f2["alpha"] - g) / (1 - g)
    want2 = f2["target_bps"] * (1 - a_before / 2)
    c.check(abs(f2["rate_bps"] - want2) <= 0.001 * want2 and f2["cnps"] == 3 and
            f2["rate_bps"] < f1["rate_bps"],
            "two more CNPs: the last cuts Rt x (1 - alpha/2) = %.0f, with alpha raised "
            "by the one before: %s" % (want2, f2))
    send(br, "p", [(0x81, 0x000999, 0, 0, 50000)])
    time.sleep(0.3)
    st3 = counters(br)
    c.check(st3["cnp_received"] == 4 and st3["cnp_held"] == 1 and st3["cnp_unmatched"] == 0
            and cc_flow(br, QP_X)["cc"]["cnps"] == 3,
            "a CNP to a QP not paired: held for its first ACK, no flow cut (received %d, "
            "held %d, unmatched %d)" % (st3["cnp_received"], st3["cnp_held"],
                                        st3["cnp_unmatched"]))
    # a CNP before the ACK that pairs its QP (a responder may send them in
    # that order): the host's requests to X3, a CNP to Y3, then the ACK to
    # Y3 for those requests pairs Y3 with X3 and applies the held CNP
    send(br, "h", [(0x04, QP_X3, 3000 + i, 2, 50000) for i in range(3)])
    time.sleep(0.3)
    send(br, "p", [(0x81, QP_Y3, 0, 0, 50000)])
    send(br, "p", [(0x11, QP_Y3, 3001, 0, 50000)])
    time.sleep(0.3)
    f3, st4 = cc_flow(br, QP_X3), counters(br)
    c.check(f3 is not None and f3["cc"]["cnps"] == 1 and f3["cc"]["state"] == "recovery" and
            st4["cnp_held"] == 2 and st4["cnp_held_applied"] == 1,
            "a CNP before its QP's first ACK: held, then applied when the ACK paired the QP "
            "(held %d, applied %d): %s" % (st4["cnp_held"], st4["cnp_held_applied"],
                                          f3 and f3["cc"]))
    # a second pair of QPs of the same hosts, paired by an ACK as X and Y
    # were; the host's flow to X2, then a CNP to Y2: three of the pair's
    # QPs (Y, Y3, Y2) have had a CNP within 20 T (200 s here), so X2's flow
    # takes a third of R_AI and R_HAI; X's flow, whose CNPs came when only Y
    # had any, a whole one (cc.ai_share, docs/cc.md)
    send(br, "p", [(0x04, QP_Y2, 7000, 2, BASE + 3)])
    send(br, "h", [(0x11, QP_X2, 7000, 0, 50000)])
    send(br, "h", [(0x04, QP_X2, 6000 + i, 2, 50000) for i in range(4)])
    time.sleep(0.3)
    send(br, "p", [(0x81, QP_Y2, 0, 0, 50000)])
    time.sleep(0.3)
    fx, fx2 = cc_flow(br, QP_X), cc_flow(br, QP_X2)
    c.check(fx2 is not None and fx2["cc"]["cnps"] == 1 and fx2["cc"]["share"] == 3 and
            fx["cc"]["share"] == 1,
            "a CNP to the pair's third QP cut: its flow shares the increase with X's and "
            "X3's (share 3; X's 1): %s, %s" % (fx2 and fx2["cc"], fx["cc"]))

    # fair cut (cc.ai_share): X's flow (three CNPs) runs below 7/8 of the
    # mean rate of the pair's flows that send lately, with X2's (one CNP);
    # while both keep sending, a CNP to Y does not cut X's flow
    # (cnp_fair_skipped), and a CNP to Y2 cuts X2's, the faster
    fx, fx2 = cc_flow(br, QP_X)["cc"], cc_flow(br, QP_X2)["cc"]
    c.check(fx["rate_bps"] * 8 * 2 < (fx["rate_bps"] + fx2["rate_bps"]) * 7,
            "X's flow below 7/8 of the pair's mean (%d, X2's %d)" %
            (fx["rate_bps"], fx2["rate_bps"]))
    ns, iface = br.ns_h, br.tag + "hk"
    keep = subprocess.Popen(["ip", "netns", "exec", ns, SYS_PY, "-c", SEND, iface, json.dumps(
        [["h", 0x04, q, 5100 + i, 2, 50000] for i in range(40) for q in (QP_X, QP_X2)]), "0.04"])
    time.sleep(1.5)
    sk0 = counters(br)["cnp_fair_skipped"]
    send(br, "p", [(0x81, QP_Y, 0, 0, 50000)])
    time.sleep(0.2)
    fxa, sk1 = cc_flow(br, QP_X)["cc"], counters(br)["cnp_fair_skipped"]
    send(br, "p", [(0x81, QP_Y2, 0, 0, 50000)])
    time.sleep(0.2)
    fx2a, sk2 = cc_flow(br, QP_X2)["cc"], counters(br)["cnp_fair_skipped"]
    keep.wait(30)
    c.check(sk1 == sk0 + 1 and fxa["cnps"] == fx["cnps"] + 1 and
            fxa["rate_bps"] >= fx["rate_bps"],
            "a CNP to Y while X's flow is the pair's slower: counted, not cut "
            "(cnp_fair_skipped %d -> %d): %s" % (sk0, sk1, fxa))
    c.check(sk2 == sk1 and fx2a["cnps"] == fx2["cnps"] + 1 and
            fx2a["rate_bps"] < fx2["rate_bps"],
            "a CNP to Y2, the pair's faster: cut (%d -> %d)" %
            (fx2["rate_bps"], fx2a["rate_bps"]))

    # 6. the operator's view
    ctl = os.path.join(lslab.BUILD, "tools", "lockstepctl", "lockstepctl")
    r = sh(ctl, "-s", br.sock, "cc", check=False)
    c.check(r.returncode == 0 and "rdma" in r.stdout and "dcqcn" in r.stdout and
            "cnp_sent" in r.stdout, "lockstepctl cc prints slices and counters")
    r = sh(ctl, "-s", br.sock, "flows", "--cc", "--dir", "host", check=False)
    c.check(r.returncode == 0 and "ALPHA" in r.stdout and "recovery" in r.stdout and
            "SHARE" in r.stdout,
            "lockstepctl flows --cc shows rate, alpha, state and share (rc %d)" % r.returncode)

    delay_mode(c, br, tmp)
    pair_ageing(c, br, policy)


if __name__ == "__main__":
    main()
