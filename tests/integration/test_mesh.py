#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Integration: a full mesh of real lockstepd processes.

  test_mesh.py memif [N]   N (default 4) appliances over memif links
  test_mesh.py memif N L   the same with each daemon polling its ports from
                           L lcores (ports spread round-robin)
  test_mesh.py veth [N]    N (default 3) appliances in network namespaces,
                           net_af_packet on veths into a Linux bridge, IPv4
                           and IPv6 peers (so ARP and ND are exercised)

Checks what an operator relies on: every pair and path sees probes with
zero loss and a plausible RTT; a peer removed at run time stops being
probed (verified on the wire, with the daemon's own capture); a killed peer
shows 100% loss on every path within 3 probe intervals; SIGTERM shuts a
daemon down cleanly and removes its socket file.
"""
import ipaddress
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "lab"))
import lslab  # noqa: E402

INTERVAL_US = 100000
PATHS = 4


def peers_of(lab, i):
    return [p["name"] for p in lslab.call(lab.sock(i), "peers")]


def main():
    transport = sys.argv[1] if len(sys.argv) > 1 else "memif"
    nodes = int(sys.argv[2]) if len(sys.argv) > 2 else (4 if transport == "memif" else 3)
    lcores = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    c = lslab.Checks("mesh-%s-%dlcore" % (transport, lcores))
    iv = INTERVAL_US / 1e6

    with lslab.Lab(nodes, transport, INTERVAL_US, PATHS, lcores=lcores) as lab:
        if lcores > 1:
            used = {p["lcore"] for p in lslab.call(lab.sock(1), "status")["ports"]}
            c.check(len(used) == lcores, "n1 polls its ports from %d lcores %s" % (lcores, sorted(used)))
        # 1. Every pair and path: probes, zero loss, plausible RTT.
        def all_paths_answered():
            for i in range(1, nodes + 1):
                for p in lslab.call(lab.sock(i), "paths", {"window": "10s"})["peers"]:
                    for q in p["paths"]:
                        if q["received"] < 5:
                            return False
            return True

        c.check(lslab.wait_until(all_paths_answered, 30),
                "every node receives replies on every path to every peer")
        lslab.call(lab.sock(1), "stats.reset")  # start-up ARP/ND is over now
        time.sleep(20 * iv)
        for i in range(1, nodes + 1):
            r = lslab.call(lab.sock(i), "paths", {"window": "10s"})
            expect = (nodes - 1) * (2 if transport == "veth" else 1)
            c.check(len(r["peers"]) == expect, "n%d has %d peers (%d)" % (i, expect, len(r["peers"])))
            for p in r["peers"]:
                for q in p["paths"]:
                    tot = lslab.call(lab.sock(i), "path", {"peer": p["name"]})["paths"][q["path"]]["counters"]
                    rtt = q["rtt_p50_ns"]
                    c.check(q["sent"] > 0 and q["received"] > 0 and q["lost"] == 0 and tot["lost"] == 0,
                            "n%d -> %s path %d: sent %d received %d lost %d (total lost %d)"
                            % (i, p["name"], q["path"], q["sent"], q["received"], q["lost"], tot["lost"]))
                    c.check(rtt is not None and 1000 <= rtt <= 50_000_000,
                            "n%d -> %s path %d: RTT p50 %s ns plausible (1 us .. 50 ms)"
                            % (i, p["name"], q["path"], rtt))

        # 2. Counters add up on every node: each packet has one disposition.
        for i in range(1, nodes + 1):
            cnt = lslab.call(lab.sock(i), "status")["counters"]
            disp = sum(v for k, v in cnt.items() if k.startswith("rx_") and k != "rx_pkts")
            c.check(abs(disp - cnt["rx_pkts"]) <= 2 * lab.nodes,  # racing reads of live counters
                    "n%d: dispositions %d vs rx_pkts %d" % (i, disp, cnt["rx_pkts"]))

        # 3. A peer removed at run time stops being probed: capture on n2 and
        # look for probes from n1 after the removal.
        entry = [p for p in lslab.call(lab.sock(1), "peers") if p["name"] == "n2"][0]
        lslab.call(lab.sock(1), "peer.del", {"name": "n2"})
        c.check("n2" not in peers_of(lab, 1), "peer.del n2: gone from n1's peer list")
        time.sleep(2 * iv)  # probes already in flight land
        n1_addrs = {p["addr"] for p in lslab.call(lab.sock(2), "peers")
                    if p["name"] in ("n1", "n1v6")}
        cap = os.path.join(lab.dir, "n2-after-del.pcap")
        lslab.call(lab.sock(2), "capture.start", {"file": os.path.basename(cap)})
        time.sleep(10 * iv)
        stop = lslab.call(lab.sock(2), "capture.stop")
        from_n1 = {}
        probes_rx = 0
        for ts, fr in lslab.read_pcap(cap):
            u = lslab.udp_of(fr)
            if u is None or u[3] != 862:
                continue
            probes_rx += 1
            src = str(ipaddress.ip_address(u[0]))
            if src in n1_addrs:
                from_n1[src] = from_n1.get(src, 0) + 1
        c.check(stop["packets"] > 0, "capture on n2 recorded %d packets" % stop["packets"])
        c.check(probes_rx > 0, "n2 still receives probes from its other peers (%d)" % probes_rx)
        # Over veth, n1 still probes n2's IPv6 address (peer n2v6): only the
        # deleted IPv4 peer must fall silent.
        c.check(from_n1.get(entry["addr"], 0) == 0,
                "no probe from n1 to %s reached n2 after peer.del (%d)"
                % (entry["addr"], from_n1.get(entry["addr"], 0)))
        added = lslab.call(lab.sock(1), "peer.add",
                           {"name": "n2again", "addr": entry["addr"], "port": entry["port"]})
        c.check(added["name"] == "n2again", "peer.add at run time accepted")
        c.check(lslab.wait_until(lambda: all(q["counters"]["received"] > 0 for q in
                                             lslab.path_totals(lab.sock(1), "n2again").values()), 10),
                "re-added peer answers on every path")

        # 4. A killed peer shows 100% loss on every path within 3 intervals.
        victim = nodes
        os.kill(lab.pid(victim), signal.SIGKILL)
        t_kill = time.time()
        time.sleep(0.05)  # replies already in flight
        base = {}
        for i in range(1, nodes):
            for name in _names_for(lab, i, victim):
                base[(i, name)] = lslab.path_totals(lab.sock(i), name)
        time.sleep(max(0.0, t_kill + 3 * iv - time.time()))
        elapsed = time.time() - t_kill
        for (i, name), b in base.items():
            now = lslab.path_totals(lab.sock(i), name)
            for k, q in now.items():
                dl = q["counters"]["lost"] - b[k]["counters"]["lost"]
                dr = q["counters"]["received"] - b[k]["counters"]["received"]
                c.check(dl >= 1 and dr == 0,
                        "n%d -> %s path %d: %.0f ms after kill: +%d lost, +%d received (100%% loss)"
                        % (i, name, k, elapsed * 1000, dl, dr))

        # 5. SIGTERM: clean exit, socket removed, final stats logged.
        for i in range(1, nodes):
            os.kill(lab.pid(i), signal.SIGTERM)
        for i in range(1, nodes):
            gone = lslab.wait_until(lambda: not os.path.exists(lab.sock(i)), 10)
            c.check(gone, "n%d: SIGTERM removed %s" % (i, lab.sock(i)))
            c.check(lslab.wait_until(lambda: "final: rx" in lab.log(i), 5),
                    "n%d: logged final statistics" % i)
    c.finish()


def _names_for(lab, i, victim):
    return [p["name"] for p in lslab.call(lab.sock(i), "peers")
            if p["name"] in ("n%d" % victim, "n%dv6" % victim)]


if __name__ == "__main__":
    main()
