#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Write one lockstepd config per host of a lockstep-fabric topology.

  fabric_configs.py TOPO DIR INTERVAL_US PATHS [LINK [EXTRA_JSON [TAG [RX_TRAILER [TX_TRAILER]]]]]

Host i (in topology order) becomes DIR/n<i>.json: a memif client port to the
emulator's socket DIR/fabric/<host>.sock (LINK "memif", the default) or,
with LINK "pcap", a net_pcap port on veth TAG"h"<i> whose other end TAG"f"<i>
the emulator drives with net_af_packet (lockstepd takes receive times from
the kernel's packet-socket stamps, so its polling delay does not show in
the delays; the emulator sees frames at once and stamps them when it polls,
see docs/fabric.md; the emulator's topology with those devices is written
to DIR/topo.json). RX_TRAILER "1" sets clock.rx_trailer (the emulator runs
with --rx-trailer: receive stamps from the trailer it appends); TX_TRAILER
"1" sets clock.tx_trailer (the emulator runs with --tx-trailer: frames
enter the network at the instant their T1 or T3 says). EXTRA_JSON is a file
holding {"*": {...}, "<host>": {...}}
merged into every node's config and into that host's (e.g. "clock",
"sync"); a "port" object in either is merged into the node's one port
instead (lists are not merged), e.g. {"*": {"port": {"mtu": 9000}}}.
A memif port whose MTU makes frames longer than memif's 2 KB buffers gets
buffers that hold a whole frame (bsize): a frame spread over several
descriptors corrupted DPDK 22.11's memif rings (a later single-descriptor
frame in a reused slot kept the NEXT flag, and the receiver ran on into
stale descriptors, replaying them by the hundred thousand a second). The host's addresses, the leaf as
gateway (the emulator's leaves answer ARP/ND for every address but the
host's own, so any address of the subnet works), and every other host as a
peer (IPv4, and IPv6 where both ends have it). Prints the host names.
"""
import ipaddress
import json
import sys


def merge(dst, src):
    """Deep-merge dict src into dst."""
    for k, v in src.items():
        if isinstance(v, dict) and isinstance(dst.get(k), dict):
            merge(dst[k], v)
        else:
            dst[k] = v


def main():
    topo_file, out, interval, paths = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    link = sys.argv[5] if len(sys.argv) > 5 else "memif"
    extra = json.load(open(sys.argv[6])) if len(sys.argv) > 6 and sys.argv[6] else {}
    tag = sys.argv[7] if len(sys.argv) > 7 else "ls"
    rx_trailer = len(sys.argv) > 8 and sys.argv[8] == "1"
    tx_trailer = len(sys.argv) > 9 and sys.argv[9] == "1"
    topo = json.load(open(topo_file))
    hosts = topo["hosts"]
    for i, h in enumerate(hosts, 1):
        if link == "pcap":
            h["dev"] = "net_af_packet%d,iface=%sf%d" % (i, tag, i)
            dev = "net_pcap0,iface=%sh%d" % (tag, i)
        else:
            dev = ("net_memif0,role=client,id=0,socket=%s/fabric/%s.sock,socket-abstract=no"
                   % (out, h["name"]))
        port = {"name": "p0", "dev": dev,
                "mac": "02:00:00:00:%02x:%02x" % (i // 256, i % 256)}
        for fam, gw in (("ipv4", "gateway4"), ("ipv6", "gateway6")):
            if fam in h:
                iface = ipaddress.ip_interface(h[fam])
                port[fam] = h[fam]
                # any other address of the subnet: the leaf proxies it
                cand = iface.network.network_address + (254 if fam == "ipv4" else 0xfe)
                if cand == iface.ip:
                    cand = cand - 1
                port[gw] = str(cand)
        peers = []
        for j, o in enumerate(hosts, 1):
            if j == i:
                continue
            for fam, suffix in (("ipv4", ""), ("ipv6", "v6")):
                if fam in h and fam in o:
                    peers.append({"name": o["name"] + suffix,
                                  "addr": str(ipaddress.ip_interface(o[fam]).ip)})
        cfg = {"node": {"name": h["name"], "id": i}, "ports": [port], "peers": peers,
               "probe": {"interval_us": interval, "paths": paths},
               "control": {"socket": "%s/n%d.sock" % (out, i), "peers_file": ""},
               "idle": {"backoff": True, "after_polls": 64, "sleep_us": 50},
               "log": {"level": "info"}}
        if rx_trailer:
            # the emulator's trailer stamps are on the TSC timeline (the
            # extra config may make the clock simulated; not a NIC's)
            cfg["clock"] = {"source": "tsc", "rx_trailer": True}
        if tx_trailer:
            cfg.setdefault("clock", {"source": "tsc"})["tx_trailer"] = True
        for part in (dict(extra.get("*", {})), dict(extra.get(h["name"], {}))):
            merge(port, part.pop("port", {}))
            merge(cfg, part)
        if link != "pcap" and port.get("mtu", 1500) + 18 + 12 > 2048:
            # Ethernet, VLAN tag and a trailer: the frame in one buffer
            bsize = (port["mtu"] + 30 + 1023) // 1024 * 1024
            port["dev"] = port["dev"].replace(",id=0,", ",id=0,bsize=%d,rsize=9," % bsize)
        with open("%s/n%d.json" % (out, i), "w") as f:
            json.dump(cfg, f, indent=1)
        print(h["name"])
    if link == "pcap":
        with open("%s/topo.json" % out, "w") as f:
            json.dump(topo, f, indent=1)


if __name__ == "__main__":
    main()
