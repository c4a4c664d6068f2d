#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Integration, regression for issue 27 H1: one forged packet must not start
a reflection loop between two reflectors.

Two lockstepd reflectors (A, B: net_af_packet on veths into one Linux
bridge) and an injector port on the same bridge that does not learn MACs,
so a frame forged with B's MAC and address still leaves A's reply on B's
port. scapy (an independent packet builder) sends A one STAMP test packet
"from B", UDP 862 -> 862. Before the fix, A's reply (862 -> 862) was a
valid test packet for B, whose reply was one for A, and so on until the
rate limits bit. Now A refuses it (rx_reflector_loop): at most one reply in
total. A control packet from B's port 49152 first shows the path A -> B
carries replies, so the loop check cannot pass for want of a wire.
"""
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "lab"))
import lslab  # noqa: E402

SCAPY_PY = "/usr/bin/python3"  # Debian's python3-scapy
A_MAC, B_MAC = "02:00:00:00:27:01", "02:00:00:00:27:02"
A_IP, B_IP = "10.27.0.1", "10.27.0.2"

SEND = r"""
import struct, sys
from scapy.all import Ether, IP, UDP, Raw, sendp, conf
conf.verb = 0
from scapy.all import IPOption_RR
iface, smac, dmac, src, dst, sport = sys.argv[1:7]
# Record Route: options that leave the UDP checksum alone (a source route's
# final hop would be the pseudo-header's destination)
opts = [IPOption_RR(routers=[sys.argv[7]])] if len(sys.argv) > 7 else []
stamp = struct.pack("!I", 27) + bytes(40)   # RFC 8762 sender base packet, 44 bytes
sendp(Ether(src=smac, dst=dmac) / IP(src=src, dst=dst, ttl=64, options=opts) /
      UDP(sport=int(sport), dport=862) / Raw(stamp), iface=iface)
"""


class NsDaemon(lslab.Daemon):
    """A Daemon run inside network namespace ns (ip netns exec execs it, so
    the pid is lockstepd's own)."""

    def __init__(self, ns, *a, **kw):
        self.ns = ns
        super().__init__(*a, **kw)

    def argv(self):
        return ["ip", "netns", "exec", self.ns] + super().argv()


def sh(*args):
    subprocess.run(list(args), check=True)


def scapy_checks(name):
    """Checks for a test that plays a daemon's peer with scapy in a network
    namespace: root and Debian's python3-scapy, or exit (77: a skip, which
    fails CI)."""
    lslab.exit_on_signals()
    c = lslab.Checks(name)
    lslab.need_root("needs root (network namespaces)")
    if not os.path.exists(SCAPY_PY):
        print("SKIP: no %s (python3-scapy)" % SCAPY_PY)
        sys.exit(77)
    return c


def veth_ns(ns, a, b):
    """Network namespace ns holding a veth pair a <-> b, both up, IPv6 off
    (no router solicitations in a test's captures)."""
    sh("ip", "netns", "add", ns)
    sh("ip", "-n", ns, "link", "add", a, "type", "veth", "peer", "name", b)
    for e in (a, b):
        sh("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.%s.disable_ipv6=1" % e)
        sh("ip", "-n", ns, "link", "set", e, "up")


def switch_ns(ns, ports, injector):
    """A Linux bridge br0 in namespace ns (created, with br0, by the caller)
    and a veth into it per port. Each daemon port X is moved into a
    namespace of its own, ns + X's last letter: net_af_packet's fanout group
    id is pid ^ ifindex, which collides between two processes started one
    after the other in one namespace (EINVAL at start). The injector port
    stays in ns. IPv6 off on all of them (no router solicitations)."""
    for e in tuple(ports) + (injector,):
        own = ns if e == injector else ns + e[-1]
        if own != ns:
            sh("ip", "netns", "add", own)
        sh("ip", "-n", ns, "link", "add", e, "type", "veth", "peer", "name", e + "br")
        sh("ip", "-n", ns, "link", "set", e + "br", "master", "br0", "up")
        if own != ns:
            sh("ip", "-n", ns, "link", "set", e, "netns", own)
        sh("ip", "netns", "exec", own, "sysctl", "-qw", "net.ipv6.conf.%s.disable_ipv6=1" % e)
        sh("ip", "-n", own, "link", "set", e, "up")


def del_ns(ns, suffixes):
    """Remove ns and ns + each suffix (switch_ns's daemon namespaces)."""
    for n in ("",) + tuple(suffixes):
        subprocess.run(["ip", "netns", "del", ns + n], check=False, stderr=subprocess.DEVNULL)


def counters(sock):
    return lslab.call(sock, "status")["counters"]


def main():
    lslab.exit_on_signals()
    c = lslab.Checks("loop")
    lslab.need_root("needs root (network namespaces)")
    if not os.path.exists(SCAPY_PY):
        print("SKIP: no %s (python3-scapy)" % SCAPY_PY)
        sys.exit(77)
    ns = "lsloop%d" % os.getpid()
    tmp = tempfile.mkdtemp(prefix="ls-loop-")
    daemons = []
    try:
        sh("ip", "netns", "add", ns)
        sh("ip", "-n", ns, "link", "add", "br0", "type", "bridge")
        switch_ns(ns, ("lpa", "lpb"), "lpi")
        # The injector's port must not learn B's MAC from the forged frame,
        # or A's reply would go back to the injector instead of to B.
        sh("ip", "-n", ns, "link", "set", "lpibr", "type", "bridge_slave", "learning", "off")
        sh("ip", "-n", ns, "link", "set", "br0", "up")
        socks = {}
        for name, mac, ip in (("a", A_MAC, A_IP), ("b", B_MAC, B_IP)):
            socks[name] = os.path.join(tmp, name + ".sock")
            cfg = {
                "node": {"name": name, "id": 1 if name == "a" else 2},
                "ports": [{"name": "p0", "dev": "net_af_packet0,iface=lp" + name,
                           "mac": mac, "ipv4": ip + "/24"}],
                "control": {"socket": socks[name], "peers_file": ""},
                "idle": {"backoff": True, "after_polls": 64, "sleep_us": 200},
            }
            daemons.append(NsDaemon(ns + name, cfg, tmp, name,
                                    prefix="lsloop%s%d" % (name, os.getpid())).start())
        for name, s in socks.items():
            c.check(lslab.wait_until(lambda: os.path.exists(s), 30), "daemon %s up" % name)

        def send(sport, *lsrr):
            subprocess.run(["ip", "netns", "exec", ns, SCAPY_PY, "-c", SEND, "lpi",
                            B_MAC, A_MAC, B_IP, A_IP, str(sport)] + list(lsrr), check=True)

        # Control: an ordinary test packet "from B" is answered once, and the
        # answer reaches B (which has no such peer: rx_reply_no_peer).
        send(49152)
        ok = lslab.wait_until(lambda: counters(socks["b"])["rx_reply_no_peer"] >= 1, 10)
        ca, cb = counters(socks["a"]), counters(socks["b"])
        c.check(ok and ca["rx_reflected"] == 1 and cb["rx_reply_no_peer"] == 1,
                "control: A reflected %d, B got %d reply" % (ca["rx_reflected"], cb["rx_reply_no_peer"]))
        base = ca["rx_reflected"] + ca["rx_rate_limited"] + cb["rx_reflected"] + cb["rx_rate_limited"]

        send(862)
        lslab.wait_until(lambda: counters(socks["a"])["rx_pkts"] >= ca["rx_pkts"] + 1, 10)
        time.sleep(2)  # a loop, if any, runs at wire speed: 2 s is thousands of rounds
        ca, cb = counters(socks["a"]), counters(socks["b"])
        answered = ca["rx_reflected"] + ca["rx_rate_limited"] + cb["rx_reflected"] + cb["rx_rate_limited"] - base
        c.check(answered <= 1, "forged 862 -> 862: %d reflector answers in total (at most 1)" % answered)
        c.check(ca["rx_reflector_loop"] == 1, "A counted it as rx_reflector_loop (%d)" % ca.get("rx_reflector_loop", -1))

        # A test packet with IPv4 options (Record Route) is not answered:
        # the reply would echo them, and a source-route option would steer
        # it (issue 27, review L9).
        send(49152, "10.27.0.9")
        lslab.wait_until(lambda: counters(socks["a"])["rx_stamp_ip_options"] >= 1, 10)
        time.sleep(0.5)
        ca2 = counters(socks["a"])
        moved = {k: ca2[k] - ca[k] for k in ca2 if k.startswith("rx_") and ca2[k] != ca.get(k)}
        c.check(ca2["rx_stamp_ip_options"] == 1 and ca2["rx_reflected"] == ca["rx_reflected"],
                "IPv4 options: not reflected, counted rx_stamp_ip_options (counters moved: %s)"
                % moved)
    finally:
        for d in daemons:
            d.stop(15)
        del_ns(ns, "ab")
    c.finish()


if __name__ == "__main__":
    main()
