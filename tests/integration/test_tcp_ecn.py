#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Integration: the kernel's TCP with ECN through the emulator's marking,
counted by lockstepd at the receiver and by tshark behind it.

  [ns S] sk 10.1.0.1 --veth-- sf  lockstep-fabric  (memif)  lockstepd  rd --veth-- rk 10.1.0.2 [ns R]
                              ha    leaf1 -> hb  ---------> fabric   host
                                    100 Mb/s, CE above 30 KB

iperf3 (4 streams, net.ipv4.tcp_ecn=1 at both ends, so data is ECT(0)) from
S to R. The emulator's leaf -> hb link is the bottleneck and CE-marks ECT
frames over its threshold; lockstepd, in the wire in front of R, counts CE
per flow as frames arrive from the fabric (issue 26: the per-flow CE counts
lockstepd's congestion control and its operators rely on). Checked:
  - the bottleneck marked (the kernel's ECN kept the queue under the buffer:
    no tail drop needed);
  - lockstepd's CE count of each iperf3 data flow equals the CE-marked
    frames of that flow tshark saw arrive in ns R, exactly, and their sum
    equals the emulator's ecn_marked counters of the links the data crossed,
    exactly (nothing else crosses them ECT; pure ACKs are not ECT);
  - the sender's TCP answered the echoed marks (ECE): retransmits are fewer
    than the marks, and no tail drop at the bottleneck.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "lab"))
import lslab  # noqa: E402

FABRIC = os.path.join(lslab.BUILD, "app", "fabric", "lockstep-fabric")
RATE = 100000000
ECN_BYTES = 30000
BUFFER = 1000000
SECS = 6


from test_bridge import sh  # noqa: E402


class Wire:
    def __init__(self, tag, tmp):
        self.tag, self.tmp = tag, tmp
        self.ns_s, self.ns_b, self.ns_r = tag + "s", tag + "b", tag + "r"
        self.procs = []

    def up(self):
        for ns in (self.ns_s, self.ns_b, self.ns_r):
            sh("ip", "netns", "add", ns)
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        for side, ns, addr in (("s", self.ns_s, "10.1.0.1/24"), ("r", self.ns_r, "10.1.0.2/24")):
            k, d = self.tag + side + "k", self.tag + side + "d"
            sh("ip", "link", "add", k, "type", "veth", "peer", "name", d)
            sh("ip", "link", "set", k, "netns", ns)
            sh("ip", "link", "set", d, "netns", self.ns_b)
            sh("ip", "-n", ns, "addr", "add", addr, "dev", k)
            # whole frames, MTU-sized: what a wire would carry
            for dev, n in ((k, ns), (d, self.ns_b)):
                sh("ip", "netns", "exec", n, "ethtool", "-K", dev, "tso", "off", "gso", "off",
                   "gro", "off", "tx", "off", "rx", "off", check=False)
            sh("ip", "netns", "exec", self.ns_b, "sysctl", "-qw",
               "net.ipv6.conf.%s.disable_ipv6=1" % d)
            sh("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.%s.disable_ipv6=1" % k)
            sh("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv4.tcp_ecn=1")
            sh("ip", "-n", ns, "link", "set", k, "up")
            sh("ip", "-n", self.ns_b, "link", "set", d, "up")

    def spawn(self, ns, argv, log):
        p = subprocess.Popen(["ip", "netns", "exec", ns] + argv,
                             stdout=open(os.path.join(self.tmp, log), "a"),
                             stderr=subprocess.STDOUT)
        self.procs.append(p)
        return p

    def down(self):
        lslab.stop_all(self.procs)
        for ns in (self.ns_s, self.ns_b, self.ns_r):
            sh("ip", "netns", "del", ns, check=False)
        for prefix in ("f", "d"):
            shutil.rmtree("/var/run/dpdk/%s%s" % (self.tag, prefix), ignore_errors=True)


def topo(w):
    link = {"rate_bps": 1000000000, "delay_ns": 50000, "buffer_bytes": BUFFER,
            "ecn_bytes": ECN_BYTES}
    return {"defaults": {"link": link, "host_link": link}, "convergence_ms": 0,
            "switches": [{"name": "leaf1", "role": "leaf", "ipv4": "10.255.1.1"}],
            "hosts": [{"name": "ha", "leaf": "leaf1", "ipv4": "10.1.0.1/24",
                       "dev": "net_af_packet0,iface=%ssd" % w.tag},
                      {"name": "hb", "leaf": "leaf1", "ipv4": "10.1.0.2/24",
                       "down": {"rate_bps": RATE}}]}


def lsd_config(w):
    return {
        "node": {"name": "rx", "id": 1},
        "ports": [
            {"name": "host", "role": "host", "dev": "net_af_packet1,iface=%srd" % w.tag},
            {"name": "fab", "mac": "02:00:00:00:0b:03", "ipv4": "10.1.0.3/24",
             "dev": "net_memif0,role=client,id=0,socket=%s/fabric/hb.sock,socket-abstract=no"
                    % w.tmp}],
        "bridge": {"host_port": "host", "fabric_port": "fab", "link_bps": 1000000000,
                   "max_flows": 4096, "policy_file": "", "policy": {}},
        "control": {"socket": os.path.join(w.tmp, "rx.sock"), "peers_file": ""},
        "idle": {"backoff": True, "sleep_us": 20},
    }


def tshark_per_stream(pcap):
    """Frames and CE-marked frames per TCP source port (the sender's stream), from the
    capture: ({sport: frames}, {sport: CE frames})."""
    r = sh("tshark", "-r", pcap, "-Y", "tcp.dstport == 5201", "-T", "fields", "-e",
           "tcp.srcport", "-e", "ip.dsfield.ecn", timeout=120)
    frames, ce = {}, {}
    for line in r.stdout.splitlines():
        f = line.split()
        if len(f) != 2:
            continue
        p = int(f[0])
        frames[p] = frames.get(p, 0) + 1
        if int(f[1], 0) == 3:
            ce[p] = ce.get(p, 0) + 1
    return frames, ce


def tshark_dropped(log):
    """Frames tshark says it dropped (its summary on SIGINT), 0 if none."""
    with open(log) as f:
        m = re.search(r"(\d+) packets? dropped", f.read())
    return int(m.group(1)) if m else 0


def main():
    lslab.exit_on_signals()
    lslab.need_root("namespaces, veths")
    c = lslab.Checks("tcp-ecn")
    tag = "le%d" % (os.getpid() % 10000)
    with tempfile.TemporaryDirectory(prefix="lockstep-test-tcpecn-") as tmp:
        os.chmod(tmp, 0o755)
        w = Wire(tag, tmp)
        try:
            w.up()
            os.makedirs(os.path.join(tmp, "fabric"))
            with open(os.path.join(tmp, "topo.json"), "w") as f:
                json.dump(topo(w), f)
            fsock = os.path.join(tmp, "fabric", "ctl.sock")
            w.spawn(w.ns_b, [FABRIC, "--no-pci", "--no-huge", "-m", "512", "--lcores", "0@(0,1)",
                             "--file-prefix", tag + "f", "--", "--topo",
                             os.path.join(tmp, "topo.json"), "--dir", os.path.join(tmp, "fabric"),
                             "--socket", fsock, "--idle-sleep-us", "50", "--sample-us", "0"],
                    "fabric.log")
            if not c.check(lslab.wait_until(lambda: os.path.exists(fsock), 20), "emulator up"):
                return c.finish()
            cfg = lsd_config(w)
            with open(os.path.join(tmp, "rx.json"), "w") as f:
                json.dump(cfg, f)
            w.spawn(w.ns_b, [lslab.LOCKSTEPD, "--no-pci", "--no-huge", "-m", "512", "--lcores",
                             "0@(0,1)", "--file-prefix", tag + "d", "--", "--config",
                             os.path.join(tmp, "rx.json")], "lockstepd.log")
            rx = cfg["control"]["socket"]
            if not c.check(lslab.wait_until(lambda: os.path.exists(rx), 20), "lockstepd up"):
                return c.finish()
            pcap = os.path.join(tmp, "r.pcap")
            cap = w.spawn(w.ns_r, ["tshark", "-q", "-i", tag + "rk", "-f", "tcp port 5201",
                                   "-s", "96", "-B", "64", "-w", pcap], "tshark.log")
            srv = w.spawn(w.ns_r, ["iperf3", "-s", "-1", "-p", "5201"], "iperf3-s.log")
            ping = sh("ip", "netns", "exec", w.ns_s, "ping", "-c", "3", "-i", "0.3", "-W", "2",
                      "10.1.0.2", check=False)
            c.check(ping.returncode == 0, "ping S -> R across the emulator and lockstepd")
            time.sleep(1.0)   # tshark is listening
            links0 = {(e["link"], e["dir"]): e for e in lslab.call(fsock, "links")}
            r = sh("ip", "netns", "exec", w.ns_s, "iperf3", "-c", "10.1.0.2", "-p", "5201",
                   "-t", str(SECS), "-P", "4", "-J", timeout=SECS + 60, check=False)
            srv.wait(30)
            time.sleep(1.0)
            links1 = {(e["link"], e["dir"]): e for e in lslab.call(fsock, "links")}
            flows = lslab.call(rx, "flows", {"top": 64, "dir": "fabric"})["top"]
            cap.send_signal(signal.SIGINT)
            cap.wait(20)
            rep = json.loads(r.stdout) if r.returncode == 0 else {}
            c.check(r.returncode == 0, "iperf3 ran (%s)" % r.stderr.strip()[-200:])
            bn0, bn1 = links0[("hb-leaf1", "ba")]["counters"], links1[("hb-leaf1", "ba")]["counters"]
            # the data crosses ha's uplink too (1 Gb/s: the sender's bursts
            # can queue past the threshold there as well)
            marks = sum(links1[k]["counters"]["ecn_marked"] - links0[k]["counters"]["ecn_marked"]
                        for k in links1)
            bn_marks = bn1["ecn_marked"] - bn0["ecn_marked"]
            drops = bn1["drop_tail"] - bn0["drop_tail"]
            frames, seen = tshark_per_stream(pcap)
            data = [f for f in flows
                    if f["dport"] == 5201 and f["proto"] == 6 and f["src"] == "10.1.0.1"]
            ours = {f["sport"]: f["ce"] for f in data}
            # frames lockstepd forwarded that the capture lacks: tshark's own drop
            # report misses some (CI once showed 1.8% gone with none reported)
            missed = sum(max(0, f["pkts"] - f["drops"] - frames.get(f["sport"], 0))
                         for f in data)
            gbps = rep.get("end", {}).get("sum_received", {}).get("bits_per_second", 0)
            retr = rep.get("end", {}).get("sum_sent", {}).get("retransmits", -1)
            print("# iperf3 %.1f Mb/s, %d retransmits; CE marks %d (%d at the bottleneck), "
                  "%d tail drops; %d forwarded frames not in the capture; "
                  "CE per stream (sport: lockstepd / tshark): %s" % (
                      gbps / 1e6, retr, marks, bn_marks, drops, missed,
                      ", ".join("%d: %d/%d" % (p, ours.get(p, -1), seen.get(p, 0))
                                for p in sorted(set(ours) | set(seen)))), flush=True)
            c.check(bn_marks > 0, "the bottleneck CE-marked the kernel's ECT traffic (%d)" % bn_marks)
            c.check(len(ours) >= 4, "lockstepd holds the 4 data streams as flows (%d)" % len(ours))
            lost = max(tshark_dropped(os.path.join(tmp, "tshark.log")), missed)
            if lost == 0:
                c.check(all(ours.get(p, -1) == seen.get(p, 0) for p in set(ours) | set(seen)),
                        "lockstepd's CE count per stream equals tshark's behind it")
            else:   # a loaded machine: tshark missed frames, so it can only see fewer
                c.check(all(ours.get(p, -1) >= seen.get(p, 0) for p in set(ours) | set(seen)),
                        "tshark missed %d frames: lockstepd's CE count per stream is at least "
                        "tshark's" % lost)
            c.check(sum(ours.values()) == marks,
                    "lockstepd's CE counts add up to the emulator's marks on the path (%d = %d)"
                    % (sum(ours.values()), marks))
            c.check(0 <= retr < marks and drops == 0, "the senders answered the echoed marks: "
                    "%d retransmits < %d marks, %d tail drops" % (retr, marks, drops))
        finally:
            w.down()
    c.finish()


if __name__ == "__main__":
    main()
