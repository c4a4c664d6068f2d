#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Integration: two appliances in different subnets, through a real router.

  A (10.1.0.1, fd01::1) -- vethA -- [Linux router ns] -- vethB -- B (10.2.0.1, fd02::1)

The router is a network namespace with forwarding on; it resolves the
appliances with its own ARP and ND, and the appliances reach each other
through their configured gateway4/gateway6. Checks: every IPv4 and IPv6
path answers with zero loss; probes crossed exactly one router hop (the
reflector's Ses-Sender TTL, seen in a capture, is 254); the router's
neighbour table learnt the appliances' MACs from their own ARP/ND answers.
"""
import os
import subprocess
import sys
import tempfile
import time
import ipaddress
import json
import struct

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "lab"))
import lslab  # noqa: E402

LOCKSTEPD = os.path.join(lslab.BUILD, "app", "lockstepd", "lockstepd")


def sh(*cmd, check=True):
    return subprocess.run(cmd, check=check, capture_output=True, text=True)


def main():
    lslab.exit_on_signals()
    c = lslab.Checks("routed")
    lslab.need_root()
    tag = "lsr%d" % (os.getpid() % 100000)
    nsr, nsa, nsb = tag + "r", tag + "a", tag + "b"
    tmp = tempfile.mkdtemp(prefix="ls-routed-")
    procs = []
    try:
        for ns in (nsr, nsa, nsb):
            sh("ip", "netns", "add", ns)
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        sh("ip", "netns", "exec", nsr, "sysctl", "-qw", "net.ipv4.ip_forward=1")
        sh("ip", "netns", "exec", nsr, "sysctl", "-qw", "net.ipv6.conf.all.forwarding=1")
        for side, ns, v4, v6 in (("a", nsa, "10.1.0.254/24", "fd01::fe/64"),
                                 ("b", nsb, "10.2.0.254/24", "fd02::fe/64")):
            dev, rdev = tag + side, tag + "r" + side
            sh("ip", "link", "add", dev, "type", "veth", "peer", "name", rdev)
            sh("ip", "link", "set", dev, "netns", ns)
            sh("ip", "link", "set", rdev, "netns", nsr)
            sh("ip", "-n", nsr, "addr", "add", v4, "dev", rdev)
            sh("ip", "-n", nsr, "addr", "add", v6, "dev", rdev, "nodad")
            sh("ip", "-n", nsr, "link", "set", rdev, "up")
            # the appliance side belongs to lockstepd alone
            sh("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.%s.disable_ipv6=1" % dev)
            sh("ip", "-n", ns, "link", "set", dev, "up")
        nodes = {
            "a": ("10.1.0.1/24", "10.1.0.254", "fd01::1/64", "fd01::fe", "10.2.0.1", "fd02::1"),
            "b": ("10.2.0.1/24", "10.2.0.254", "fd02::1/64", "fd02::fe", "10.1.0.1", "fd01::1"),
        }
        for i, (side, (v4, gw4, v6, gw6, peer4, peer6)) in enumerate(sorted(nodes.items())):
            cfg = {
                "node": {"name": side, "id": i + 1},
                "ports": [{"name": "p0", "dev": "net_af_packet0,iface=%s%s" % (tag, side),
                           "mac": "02:00:00:00:0%d:01" % (i + 1), "ipv4": v4, "gateway4": gw4,
                           "ipv6": v6, "gateway6": gw6}],
                "peers": [{"name": "peer4", "addr": peer4}, {"name": "peer6", "addr": peer6}],
                "probe": {"interval_us": 50000, "paths": 4},
                "control": {"socket": os.path.join(tmp, side + ".sock"), "peers_file": ""},
                "capture": {"dir": tmp},
                "idle": {"backoff": True},
            }
            p = os.path.join(tmp, side + ".json")
            with open(p, "w") as f:
                json.dump(cfg, f)
            log = open(os.path.join(tmp, side + ".log"), "w")
            procs.append(subprocess.Popen(
                ["ip", "netns", "exec", tag + side, LOCKSTEPD, "--no-pci", "--no-huge", "-m", "256",
                 "--lcores", "0@(0,1)", "--file-prefix", tag + side, "--", "--config", p],
                stdout=log, stderr=subprocess.STDOUT))
        sa, sb = os.path.join(tmp, "a.sock"), os.path.join(tmp, "b.sock")
        c.check(lslab.wait_until(lambda: os.path.exists(sa) and os.path.exists(sb), 20), "both daemons up")

        def answered(sock):
            try:
                r = lslab.call(sock, "paths", {"window": "10s"})
            except (OSError, lslab.CtlError):
                return False
            return all(q["received"] >= 5 for p in r["peers"] for q in p["paths"])

        c.check(lslab.wait_until(lambda: answered(sa) and answered(sb), 30),
                "every IPv4 and IPv6 path answers through the router")
        for side, sock in (("a", sa), ("b", sb)):
            lslab.call(sock, "stats.reset")
        # Windows hold complete seconds, collected every 100 ms: wait for
        # the first whole second after the reset rather than sleep a fixed
        # second (which raced the collection and failed now and then).
        lslab.wait_until(lambda: all(q["received"] > 0 for sock in (sa, sb)
                                     for p in lslab.call(sock, "paths", {"window": "10s"})["peers"]
                                     for q in p["paths"]), 5)
        for side, sock in (("a", sa), ("b", sb)):
            for p in lslab.call(sock, "paths", {"window": "10s"})["peers"]:
                for q in p["paths"]:
                    c.check(q["received"] > 0 and q["lost"] == 0,
                            "%s -> %s path %d: received %d lost %d, RTT p50 %s ns"
                            % (side, p["name"], q["path"], q["received"], q["lost"], q["rtt_p50_ns"]))
        # One router hop: the reflector saw TTL 254 (we send 255).
        cap = os.path.join(tmp, "b.pcap")
        lslab.call(sb, "capture.start", {"file": "b.pcap"})
        time.sleep(0.5)
        lslab.call(sb, "capture.stop")
        ttls = set()
        for ts, fr in lslab.read_pcap(cap):
            u = lslab.udp_of(fr)
            # received probes only: the capture also holds B's own probes
            if u and u[3] == 862 and str(ipaddress.ip_address(u[1])) in ("10.2.0.1", "fd02::1"):
                et = struct.unpack("!H", fr[12:14])[0]
                ttls.add(fr[22] if et == 0x0800 else fr[21])
        c.check(ttls == {254}, "probes arrive at the reflector with TTL/hop limit 254: %s" % sorted(ttls))
        neigh = sh("ip", "-n", nsr, "neigh", "show").stdout
        c.check("02:00:00:00:01:01" in neigh and "02:00:00:00:02:01" in neigh,
                "the router learnt both appliances' MACs (ARP/ND answered by lockstepd)")
        c.check("fd01::1" in neigh and "fd02::1" in neigh, "the router resolved both IPv6 addresses (ND)")
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()
        for ns in (nsr, nsa, nsb):
            sh("ip", "netns", "del", ns, check=False)
        for side in "ab":
            sh("rm", "-rf", "/var/run/dpdk/" + tag + side, check=False)
    c.finish()


if __name__ == "__main__":
    main()
