#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Integration: Debian's dpdk-dumpcap captures lockstepd's ports, every
frame, beside lockstepd's own probe capture (issue 30 item 10).

  [ns H] hk (10.79.0.1, fd79::1) --veth-- hd  lockstepd  fd --veth-- fk (10.79.0.2, fd79::2) [ns P]
                                          host port    fabric port (10.79.0.3, fd79::3)

lockstepd runs on hugepages (a private hugetlbfs mount; the pages are
reserved for the test and given back): dpdk-dumpcap is a DPDK secondary
process and cannot attach to a --no-huge one. It bridges H and P and probes
P (2 paths, 50 ms). While `capture.start` and dpdk-dumpcap (both ports)
run, the kernels in H and P ping each other across the bridge (IPv4 and
IPv6: ARP, ND and echoes in the data path), P resolves lockstepd's own
addresses (ARP, ND) and sends its reflector 5 STAMP test packets. tshark
reads the pcapng:
  - the echoes exactly: 5 (IPv4) and 3 (IPv6) requests in on the host port
    and out on the fabric port, the replies the other way round;
  - H's ARP and ND cross the bridge (as many out on the fabric port as in
    on the host port); every ARP and ND request P sends for lockstepd's
    addresses is answered once, from lockstepd's MAC;
  - the 5 test packets in and their 5 reflected replies out;
  - the probes to P on both paths, sequence numbers without a gap, every
    one of them also in lockstepd's own capture, none on the host port;
  - every frame has its direction; dumpcap dropped none and the file holds
    what it counted, but for the few frames its ring held when it stopped
    (it reads its counts without draining the ring); timestamps are today's (DPDK 22.11 stamped every
    capture 2^64 TSC ticks late: lsd_pdump_init() works around it).
A lockstepd on --no-huge says pdump is off and dumpcap cannot attach.
SKIP (77) only without root or when the hugepages cannot be reserved.
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

HP = "/sys/kernel/mm/hugepages/hugepages-2048kB"
PAGES = 128                       # 256 MiB: here lockstepd took 43, dpdk-dumpcap 6 more
DUMPCAP = os.environ.get("LS_DUMPCAP") or shutil.which("dpdk-dumpcap") or "/usr/bin/dpdk-dumpcap"
FAB_MAC = "02:79:00:00:00:03"
H4, P4, B4 = "10.79.0.1", "10.79.0.2", "10.79.0.3"
H6, P6, B6 = "fd79::1", "fd79::2", "fd79::3"
BASE = 49152                      # probe.src_port_base default
PINGS4, PINGS6, TESTS = 5, 3, 5

# P's STAMP sender: TESTS RFC 8762 test packets from its kernel's UDP socket
# to lockstepd's reflector; prints how many replies came back.
SENDER = r"""
import socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], 50862))
s.settimeout(1.0)
got = 0
for i in range(int(sys.argv[3])):
    s.sendto(struct.pack("!I", 7900 + i) + bytes(40), (sys.argv[2], 862))
    try:
        s.recvfrom(2048)
        got += 1
    except socket.timeout:
        pass
print(got)
"""


def sh(*cmd, check=True):
    return subprocess.run(cmd, check=check, capture_output=True, text=True, timeout=60)


def hp_read(name):
    with open(os.path.join(HP, name)) as f:
        return int(f.read())


def hp_write(n):
    with open(os.path.join(HP, "nr_hugepages"), "w") as f:
        f.write("%d\n" % n)


class Hugepages:
    """PAGES 2 MiB pages reserved on top of what the host holds, on a mount
    of our own (so whatever files DPDK leaves go with the umount); release()
    unmounts and puts nr_hugepages back to what it was."""

    def __init__(self, tmp):
        self.dir = os.path.join(tmp, "huge")
        self.before = None
        self.mounted = False

    def reserve(self):
        """None when done, else why not (the only reason to skip)."""
        if not os.path.isdir(HP):
            return "no 2 MiB hugepages in this kernel (%s)" % HP
        self.before = hp_read("nr_hugepages")
        try:
            hp_write(self.before + PAGES)
        except OSError as e:
            return "cannot raise nr_hugepages: %s" % e
        if hp_read("free_hugepages") < PAGES:
            return "asked for %d more hugepages, %d free (memory too fragmented?)" % (
                PAGES, hp_read("free_hugepages"))
        os.makedirs(self.dir)
        r = sh("mount", "-t", "hugetlbfs", "-o", "pagesize=2M", "nodev", self.dir, check=False)
        if r.returncode != 0:
            return "cannot mount hugetlbfs: %s" % r.stderr.strip()
        self.mounted = True
        return None

    def release(self):
        if self.mounted and sh("umount", self.dir, check=False).returncode == 0:
            self.mounted = False
        if self.before is not None:
            hp_write(self.before)
        return hp_read("nr_hugepages")


class Rig:
    def __init__(self, tag, tmp):
        self.tag, self.tmp = tag, tmp
        self.ns_h, self.ns_b, self.ns_p = tag + "h", tag + "b", tag + "p"
        self.sock = os.path.join(tmp, "ctl.sock")
        self.prefix = tag + "b"
        self.cap_dir = os.path.join(tmp, "cap")
        self.log_path = os.path.join(tmp, "lsd.log")
        self.proc = None

    def wire(self):
        for ns in (self.ns_h, self.ns_b, self.ns_p):
            sh("ip", "netns", "add", ns)
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        for side, ns, a4, a6 in (("h", self.ns_h, H4, H6), ("f", self.ns_p, P4, P6)):
            k, d = self.tag + side + "k", self.tag + side + "d"
            sh("ip", "link", "add", k, "type", "veth", "peer", "name", d)
            sh("ip", "link", "set", k, "netns", ns)
            sh("ip", "link", "set", d, "netns", self.ns_b)
            sh("ip", "-n", ns, "addr", "add", a4 + "/24", "dev", k)
            sh("ip", "-n", ns, "addr", "add", a6 + "/64", "dev", k, "nodad")
            sh("ip", "netns", "exec", self.ns_b, "sysctl", "-qw",
               "net.ipv6.conf.%s.disable_ipv6=1" % d)
            # finished checksums: the reflector answers no half-made UDP
            for dev, n in ((k, ns), (d, self.ns_b)):
                sh("ip", "netns", "exec", n, "ethtool", "-K", dev, "tx", "off", "rx", "off",
                   check=False)
            sh("ip", "-n", ns, "link", "set", k, "up")
            sh("ip", "-n", self.ns_b, "link", "set", d, "up")

    def config(self):
        cfg = {
            "node": {"name": "dc", "id": 1},
            "ports": [
                {"name": "host", "role": "host", "dev": "net_af_packet0,iface=%shd" % self.tag},
                {"name": "fab", "dev": "net_af_packet1,iface=%sfd" % self.tag,
                 "mac": FAB_MAC, "ipv4": B4 + "/24", "ipv6": B6 + "/64"},
            ],
            "bridge": {"host_port": "host", "fabric_port": "fab", "link_bps": 1000000000,
                       "max_flows": 4096,
                       "policy_file": os.path.join(self.tmp, "policy.json")},
            "probe": {"interval_us": 50000, "paths": 2},
            "peers": [{"name": "p", "addr": P4, "port": "fab"}],
            "capture": {"dir": self.cap_dir},
            "control": {"socket": self.sock, "peers_file": ""},
            "idle": {"backoff": True, "sleep_us": 20},
        }
        path = os.path.join(self.tmp, "dc.json")
        with open(path, "w") as f:
            json.dump(cfg, f)
        return path

    def start(self, huge_dir):
        """lockstepd on hugepages from huge_dir (no -m: the EAL takes pages
        as it needs them)."""
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            ["ip", "netns", "exec", self.ns_b, lslab.LOCKSTEPD, "--no-pci", "--huge-dir", huge_dir,
             "--lcores", "0@(0,1)", "--file-prefix", self.prefix, "--", "--config",
             self.config()], stdout=self.log, stderr=subprocess.STDOUT)
        lslab.wait_until(lambda: self.answers() or self.proc.poll() is not None, 20)
        return self.answers()

    def answers(self):
        try:
            lslab.call(self.sock, "status")
            return True
        except (OSError, lslab.CtlError, ValueError):
            return False

    def stop(self):
        rc = None
        if self.proc is not None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                rc = self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                rc = self.proc.wait()
            self.proc = None
            self.log.close()
        return rc

    def lsd_log(self):
        with open(self.log_path) as f:
            return f.read()

    def teardown(self):
        self.stop()
        for ns in (self.ns_h, self.ns_b, self.ns_p):
            sh("ip", "netns", "del", ns, check=False)
        shutil.rmtree("/var/run/dpdk/" + self.prefix, ignore_errors=True)


class Dumpcap:
    """dpdk-dumpcap on every port of the process with file prefix prefix,
    writing pcapng to path; started() once it has enabled capture
    (it prints its running count after the pdump requests succeeded)."""

    def __init__(self, prefix, path, log_path):
        self.path, self.log_path = path, log_path
        self.log = open(log_path, "w")
        # 22.11 takes one -i (the last); "*" is every port
        argv = [DUMPCAP, "--file-prefix=" + prefix, "-p", "-w", path, "-i", "*"]
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT)

    def out(self):
        with open(self.log_path) as f:
            return f.read()

    def started(self, timeout=15):
        return lslab.wait_until(lambda: "Packets captured:" in self.out() or
                                self.proc.poll() is not None, timeout) and \
            self.proc.poll() is None

    def stop(self):
        """SIGINT (as Ctrl-C), SIGKILL after 10 s; the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode

    def counts(self):
        """{interface: (received, dropped)} from its closing report."""
        return {m.group(1): (int(m.group(2)), int(m.group(3))) for m in
                re.finditer(r"Packets received/dropped on interface '([^']+)': (\d+)/(\d+)",
                            self.out())}


STAMP_MIN = 44  # an unauthenticated STAMP test packet's bytes (RFC 8762)
IN_RING_AT_STOP = 8  # dumpcap's counted-but-unwritten frames (check_file)

FIELDS = ["frame.interface_name", "frame.packet_flags_direction", "frame.time_epoch",
          "eth.src", "arp.opcode", "arp.src.proto_ipv4", "arp.dst.proto_ipv4",
          "ip.src", "ip.dst", "ipv6.src", "ipv6.dst", "icmp.type", "icmpv6.type",
          "icmpv6.nd.ns.target_address", "icmpv6.nd.na.target_address",
          "udp.srcport", "udp.dstport", "udp.length", "twamp.test.seq_number"]


def decode(path):
    """One dict per frame, from tshark's own dissectors (UDP 862 as
    TWAMP-Test, which is STAMP's unauthenticated base format)."""
    out = subprocess.run(["tshark", "-r", path, "-d", "udp.port==862,twamp.test",
                          "-T", "fields", "-E", "separator=|", "-E", "occurrence=f"] +
                         sum([["-e", f] for f in FIELDS], []),
                         check=True, capture_output=True, text=True, timeout=60).stdout
    return [dict(zip(FIELDS, line.split("|"))) for line in out.splitlines()]


def count(rows, iface, inbound, **want):
    """Frames on iface ("dpdk:N") in one direction whose fields equal want
    (keys with '_' for '.')."""
    d = "0x00000001" if inbound else "0x00000002"
    return sum(1 for r in rows if r["frame.interface_name"] == iface and
               r["frame.packet_flags_direction"] == d and
               all(r[k.replace("__", ".")] == v for k, v in want.items()))


def probes(rows, iface=None):
    """{(path source port, seq)} of our probes to P (optionally on iface,
    outbound), from rows. Not the route traces' TTL-limited probes, which
    share a path's 5-tuple but carry 16 bytes ("LSRT", the trace, the TTL),
    shorter than any STAMP packet: tshark reads "LSRT" as sequence number
    1280528980."""
    return {(int(r["udp.srcport"]), int(r["twamp.test.seq_number"])) for r in rows
            if r["ip.src"] == B4 and r["ip.dst"] == P4 and r["udp.dstport"] == "862" and
            r["twamp.test.seq_number"] and r["udp.length"] and
            int(r["udp.length"]) >= 8 + STAMP_MIN and
            (iface is None or (r["frame.interface_name"] == iface and
                               r["frame.packet_flags_direction"] == "0x00000002"))}


def traffic(rig):
    """What crosses both ports during the capture; the three kernels'
    answers (ping exit statuses, replies to the test packets)."""
    for ns in (rig.ns_h, rig.ns_p):
        sh("ip", "-n", ns, "neigh", "flush", "all", check=False)

    def bg(ns, *cmd):
        return subprocess.Popen(("ip", "netns", "exec", ns) + cmd, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
    procs = [bg(rig.ns_h, "ping", "-c", str(PINGS4), "-i", "0.2", "-W", "2", P4),
             bg(rig.ns_h, "ping", "-6", "-c", str(PINGS6), "-i", "0.2", "-W", "2", P6),
             bg(rig.ns_p, "/usr/bin/python3", "-c", SENDER, P4, B4, str(TESTS)),
             # lockstepd answers ND, not echoes: one solicitation is the point
             bg(rig.ns_p, "ping", "-6", "-c", "1", "-W", "1", B6)]
    outs = [p.communicate(timeout=30)[0] for p in procs]
    return [p.returncode for p in procs], outs[2].strip()


def check_frames(c, rows, host, fab):
    """The bridged and the answered frames, exactly where they can be."""
    for name, fam, n, req, rep, src, dst in (
            ("IPv4", "icmp.type", PINGS4, "8", "0", H4, P4),
            ("IPv6", "icmpv6.type", PINGS6, "128", "129", H6, P6)):
        a = "ip" if fam == "icmp.type" else "ipv6"
        got = (count(rows, host, True, **{fam.replace(".", "__"): req, a + "__src": src}),
               count(rows, fab, False, **{fam.replace(".", "__"): req, a + "__src": src}),
               count(rows, fab, True, **{fam.replace(".", "__"): rep, a + "__src": dst}),
               count(rows, host, False, **{fam.replace(".", "__"): rep, a + "__src": dst}))
        c.check(got == (n, n, n, n),
                "%s echo H -> P through the bridge: requests in on host / out on fabric, "
                "replies in on fabric / out on host: %s, want %d each" % (name, got, n))
    arp_in = count(rows, host, True, arp__opcode="1", arp__dst__proto_ipv4=P4)
    arp_out = count(rows, fab, False, arp__opcode="1", arp__dst__proto_ipv4=P4)
    c.check(arp_in >= 1 and arp_out == arp_in,
            "H's ARP for P crosses the bridge: %d in on host, %d out on fabric"
            % (arp_in, arp_out))
    ns_in = count(rows, host, True, icmpv6__type="135", icmpv6__nd__ns__target_address=P6)
    ns_out = count(rows, fab, False, icmpv6__type="135", icmpv6__nd__ns__target_address=P6)
    c.check(ns_in >= 1 and ns_out == ns_in,
            "H's ND for P crosses the bridge: %d in on host, %d out on fabric" % (ns_in, ns_out))
    q = count(rows, fab, True, arp__opcode="1", arp__dst__proto_ipv4=B4, arp__src__proto_ipv4=P4)
    a = count(rows, fab, False, arp__opcode="2", arp__src__proto_ipv4=B4, eth__src=FAB_MAC)
    c.check(q >= 1 and a == q, "P's ARP for lockstepd: %d requests in, %d replies out" % (q, a))
    q = count(rows, fab, True, icmpv6__type="135", icmpv6__nd__ns__target_address=B6)
    a = count(rows, fab, False, icmpv6__type="136", icmpv6__nd__na__target_address=B6,
              eth__src=FAB_MAC)
    c.check(q >= 1 and a == q, "P's ND for lockstepd: %d solicitations in, %d advertisements "
            "out" % (q, a))
    t = (count(rows, fab, True, udp__srcport="50862", udp__dstport="862"),
         count(rows, fab, False, udp__srcport="862", udp__dstport="50862"))
    c.check(t == (TESTS, TESTS), "P's STAMP test packets in on fabric, lockstepd's "
            "reflected replies out: %s, want %d each" % (t, TESTS))


def check_probes(c, rows, fab, host, builtin):
    seen = probes(rows, fab)
    for k in range(2):
        seqs = sorted(s for p, s in seen if p == BASE + k)
        # by arithmetic, not a list of the range: one odd sequence number
        # (2^32 - 1, say) made that list 24 GB and the OOM killer ended the test
        span = seqs[-1] - seqs[0] + 1 if seqs else 0
        odd = [b for a, b in zip(seqs, seqs[1:]) if b != a + 1][:5]
        c.check(len(seqs) >= 10 and span == len(seqs),
                "probes to P on path %d: %d, sequence %s..%s without a gap%s"
                % (k, len(seqs), seqs[0] if seqs else None, seqs[-1] if seqs else None,
                   " (after a gap: %s)" % odd if odd else ""))
    c.check(not probes(rows, host), "no probe on the host port")
    own = probes(builtin)
    c.check(seen and seen <= own,
            "every probe dpdk-dumpcap saw is in lockstepd's own capture, which started "
            "before and stopped after it (%d of its %d; missing %s)"
            % (len(seen & own), len(own), sorted(seen - own)[:5]))


def check_file(c, dc, rows, rc, t0, t1, names):
    n = dc.counts()
    c.check(rc == 0 and set(n) == set(names) and all(d == 0 for _, d in n.values()),
            "dpdk-dumpcap exits 0 and dropped nothing: %s (rc %s)" % (n, rc))
    # dpdk-dumpcap reads its counts (what the primary put in its ring)
    # after its last dequeue, without draining the ring: frames that went
    # in at that instant are counted and never written. Probes keep going
    # at ~300/s, so that is a frame or two, never more than a burst.
    got = sum(r for r, _ in n.values())
    c.check(0 <= got - len(rows) <= IN_RING_AT_STOP,
            "the file holds every frame it counted but the last few still in its ring at "
            "stop (<= %d): %d frames, %d counted" % (IN_RING_AT_STOP, len(rows), got))
    c.check(all(r["frame.packet_flags_direction"] in ("0x00000001", "0x00000002") for r in rows),
            "every frame says in or out")
    ts = [float(r["frame.time_epoch"]) for r in rows] or [0]
    c.check(t0 - 1 <= min(ts) and max(ts) <= t1 + 1,
            "timestamps are today's: %.3f..%.3f s from the capture's start (wall clock), "
            "it lasted %.3f s" % (min(ts) - t0, max(ts) - t0, t1 - t0))


def capture_run(c, rig, tmp):
    """Both captures around the traffic: the rows of dpdk-dumpcap's file and
    of lockstepd's own, (None, None) when dpdk-dumpcap did not attach."""
    names = ("net_af_packet0", "net_af_packet1")
    lslab.call(rig.sock, "capture.start", {"file": "own.pcap"})
    t0 = time.time()
    dc = Dumpcap(rig.prefix, os.path.join(tmp, "dc.pcapng"),
                 os.path.join(tmp, "dumpcap.log"))
    if not c.check(dc.started(), "dpdk-dumpcap attached and capturing" +
                   ("" if dc.proc.poll() is None else " (it exited %d)" % dc.proc.poll())):
        dc.stop()
        lslab.call(rig.sock, "capture.stop")
        return None, None
    rcs, replies = traffic(rig)
    c.check(rcs[:3] == [0, 0, 0] and replies == str(TESTS),
            "pings H -> P answered (ping exit statuses IPv4 %d, IPv6 %d), %s of %d test "
            "packets answered" % (rcs[0], rcs[1], replies, TESTS))
    time.sleep(0.5)  # the last replies' frames through both ports
    t1 = time.time()
    rc = dc.stop()
    own = lslab.call(rig.sock, "capture.stop")
    rows = decode(dc.path)
    c.check(own["packets"] > 0 and own["dropped"] == 0,
            "lockstepd's own capture ran beside it: %d packets, %d dropped"
            % (own["packets"], own["dropped"]))
    check_file(c, dc, rows, rc, t0, t1, names)
    return rows, decode(own["file"])


def no_huge(c, tmp):
    """The documented limit: on --no-huge, pdump is off and says why, and
    dumpcap cannot attach (it fails, it does not hang)."""
    cfg = {"node": {"name": "nh", "id": 2},
           "ports": [{"name": "p0", "dev": "net_null0", "mac": "02:79:00:00:00:09",
                      "ipv4": "10.79.9.1/24"}],
           "control": {"socket": os.path.join(tmp, "nh.sock")},
           "idle": {"backoff": True, "sleep_us": 200}}
    d = lslab.Daemon(cfg, tmp, "nh", prefix="lsdcnh%d" % os.getpid())
    try:
        d.start()
        up = lslab.wait_until(lambda: os.path.exists(d.sock), 20)
        r = sh(DUMPCAP, "--file-prefix=" + d.prefix, "-D", check=False)
        why = "Cannot get hugepage information"
        c.check(up and "pdump: off (--no-huge: dpdk-dumpcap cannot attach)" in d.log() and
                r.returncode != 0 and why in r.stdout + r.stderr,
                "on --no-huge: the log says pdump is off; dpdk-dumpcap exits %d (%s)"
                % (r.returncode, why if why in r.stdout + r.stderr else r.stderr.strip()))
    finally:
        d.stop()
        shutil.rmtree("/var/run/dpdk/" + d.prefix, ignore_errors=True)


def run(c, rig, hp, tmp):
    if not c.check(os.access(DUMPCAP, os.X_OK), "%s is there (Debian's dpdk)" % DUMPCAP):
        return
    rig.wire()
    if not c.check(rig.start(hp.dir), "lockstepd up on hugepages"):
        return
    log = rig.lsd_log()
    c.check("pdump: ready for dpdk-dumpcap --file-prefix=%s" % rig.prefix in log,
            "the log names the file prefix dpdk-dumpcap needs")
    ports = dict(re.findall(r"port (\w+): ethdev (\d+)", log))
    host, fab = "dpdk:" + ports.get("host", "?"), "dpdk:" + ports.get("fab", "?")
    c.check(lslab.wait_until(lambda: lslab.call(rig.sock, "peers")[0]["mac"], 10),
            "P resolved before the capture starts")
    rows, builtin = capture_run(c, rig, tmp)
    if rows is None:
        return
    check_frames(c, rows, host, fab)
    check_probes(c, rows, fab, host, builtin)
    c.check(rig.answers(), "lockstepd still answers after dpdk-dumpcap left")
    rc = rig.stop()
    c.check(rc == 0, "lockstepd exits 0 (%s)" % rc)
    no_huge(c, tmp)


def main():
    lslab.exit_on_signals()
    c = lslab.Checks("dumpcap")
    lslab.need_root("needs root (hugepages, network namespaces)")
    tmp = tempfile.mkdtemp(prefix="ls-dumpcap-")
    hp = Hugepages(tmp)
    rig = Rig("lsdc%d" % (os.getpid() % 10000), tmp)
    why = None
    try:
        why = hp.reserve()
        if why is None:
            run(c, rig, hp, tmp)
    finally:
        rig.teardown()
        left = hp.release()
        if c.failed:
            lslab.last_words(rig.log_path, "lockstepd")
            lslab.last_words(os.path.join(tmp, "dumpcap.log"), "dpdk-dumpcap", 10)
        shutil.rmtree(tmp, ignore_errors=True)
    if why is not None:
        print("SKIP: " + why)
        sys.exit(77)
    c.check(left == hp.before, "hugepages given back: nr_hugepages %d, was %d"
            % (left, hp.before))
    c.finish()


if __name__ == "__main__":
    main()
