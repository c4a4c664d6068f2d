#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Integration: documented features no other test runs end to end (issue 27
B, "untested documented features"), on one 2x2x2 emulator lab:

  - a peer's state: "up", then "degraded" when the paths that cross a dead
    spine link go down after probe.down_after losses (routing held by a
    long convergence delay), "down" when every path is;
  - reflector.enabled false (h4): nothing answered, counted
    rx_reflector_disabled, and h4 is "down" at h1 after down_after losses;
  - reflector.timestamp_format "ntp" (h3): its replies carry NTP timestamps
    (tshark decodes them as such from h1's capture), and h1's RTT toward it
    is its path's: configured plus h1's lab overhead (read from the
    same-leaf peer h2) within 150 us;
  - capture limits: max_bytes ends the file there, snaplen cuts the frames;
  - clock.source "auto" on memif (no NIC clock): the TSC, as status says;
    "nic" there: lockstepd refuses to start and says which port has none;
  - lockstepctl sync: the table names the node's status and reference;
  - the emulator's gen.start with util 0.5 of a link: the link's own byte
    counter says 0.5 of its rate (+-5%).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "lab"))
import lslab  # noqa: E402

INTERVAL_US, PATHS, DOWN_AFTER = 50000, 4, 3
RATE = 1_000_000_000
TOPO = lslab.leaf_spine(2, 2, 2, link={"delay_ns": 100000, "rate_bps": RATE},
                        host_link={"delay_ns": 10000}, ipv6=False)
CTL = os.path.join(lslab.BUILD, "tools", "lockstepctl", "lockstepctl")


def peer(sock, name):
    return next(p for p in lslab.call(sock, "peers") if p["name"] == name)


def path_states(sock, name):
    r = lslab.call(sock, "paths", {"window": "1s"})
    pe = next(p for p in r["peers"] if p["name"] == name)
    return {q["path"]: q["state"] for q in pe["paths"]}


def main():
    lslab.exit_on_signals()
    lslab.need_root()
    c = lslab.Checks("features")
    tmp = tempfile.mkdtemp(prefix="ls-feat-")
    topo_file, extra_file = os.path.join(tmp, "topo.json"), os.path.join(tmp, "extra.json")
    with open(topo_file, "w") as f:
        json.dump(TOPO, f)
    with open(extra_file, "w") as f:
        json.dump({"*": {"probe": {"down_after": DOWN_AFTER}, "clock": {"source": "auto"},
                         "capture": {"dir": tmp}},
                   "h3": {"reflector": {"timestamp_format": "ntp"}},
                   "h4": {"reflector": {"enabled": False}}}, f)
    with lslab.FabricLab(topo_file, "features", ["--interval-us", str(INTERVAL_US), "--paths",
                                                 str(PATHS), "--extra", extra_file]) as lab:
        s1, s4 = lab.sock(1), lab.sock(4)
        c.check(lslab.wait_until(lambda: all(peer(s1, n)["received"] > 5 for n in ("h2", "h3")),
                                 40), "h1 hears h2 and h3")
        st = lslab.call(s1, "status")
        c.check(st["clock"]["source"] == "tsc",
                "clock.source auto on memif (no NIC clock): %s" % st["clock"]["source"])
        # reflector.enabled false
        time.sleep(DOWN_AFTER * INTERVAL_US / 1e6 + 1)
        p4, st4 = peer(s1, "h4"), lslab.call(s4, "status")["counters"]
        c.check(p4["state"] == "down" and p4["received"] == 0 and
                st4["rx_reflector_disabled"] > 0 and st4["rx_reflected"] == 0,
                "reflector.enabled false: h4 answers nothing (%d disabled, %d reflected), h1 "
                "says h4 is %s" % (st4["rx_reflector_disabled"], st4["rx_reflected"],
                                   p4["state"]))
        # timestamp_format ntp: tshark reads h1's capture of h3's replies
        cap = lslab.call(s1, "capture.start", {"file": "ntp.pcap"})
        time.sleep(1.5)
        lslab.call(s1, "capture.stop")
        path = cap.get("file", os.path.join(tmp, "ntp.pcap"))
        out = subprocess.run(["tshark", "-r", path, "-d", "udp.port==862,twamp.test", "-Y",
                              "ip.src==10.2.0.1 && udp.srcport==862", "-T", "fields", "-e",
                              "twamp.test.error_estimate.z", "-e", "twamp.test.timestamp"],
                             capture_output=True, text=True)
        rows = [ln.split("\t") for ln in out.stdout.splitlines() if ln.strip()]
        year = time.strftime("%Y", time.gmtime())
        print("# h3's replies as tshark reads them: %s" % rows[:2], flush=True)
        # the reflector's error estimate comes first (the sender's, copied
        # from h1's probe, is PTP): Z clear (NTP format), and the time tshark
        # decodes from its timestamp is today's
        c.check(out.returncode == 0 and len(rows) > 0 and
                all(r[0].split(",")[0] in ("0", "False") and year in r[1] for r in rows),
                "timestamp_format ntp: h3's %d replies carry NTP timestamps (Z=0, %s) %s"
                % (len(rows), rows[0] if rows else "-", out.stderr.strip()[:200]))
        # capture limits: max_bytes stops the file there, snaplen cuts frames
        lim = lslab.call(s1, "capture.start", {"file": "lim.pcap", "max_bytes": 4096,
                                               "snaplen": 64})
        time.sleep(1.5)
        try:
            stop = lslab.call(s1, "capture.stop")
        except lslab.CtlError:
            stop = {}
        lens = subprocess.run(["tshark", "-r", lim["file"], "-T", "fields", "-e", "frame.cap_len"],
                              capture_output=True, text=True).stdout.split()
        c.check(0 < os.path.getsize(lim["file"]) <= 4096 and lens and
                max(int(x) for x in lens) <= 64,
                "capture max_bytes 4096, snaplen 64: file %d bytes, %d frames of at most %s "
                "bytes (stop: %s)" % (os.path.getsize(lim["file"]), len(lens),
                                      max(lens, key=int) if lens else "-", stop))
        r2, r3 = peer(s1, "h2")["rtt_p50_ns"], peer(s1, "h3")["rtt_p50_ns"]
        exp3 = 2 * (2 * 10 + 2 * 100)
        c.check(r3 is not None and exp3 - 5 <= r3 / 1000 <= exp3 + (r2 / 1000 - 40) + 150,
                "h1 -> h3 (NTP replies) RTT p50 %.1f us: configured %d us plus h1's overhead "
                "(h2's RTT less its 40 us: %.1f us) +-150 us" % (r3 / 1000, exp3, r2 / 1000 - 40))
        # degraded, then down: paths crossing leaf1-spine1 die and stay dead
        lslab.call(lab.fab, "routing.set", {"convergence_ms": 60000})
        lslab.call(lab.fab, "link.set", {"link": "leaf1-spine1", "up": False})
        ok = lslab.wait_until(lambda: peer(s1, "h3")["state"] == "degraded", 5, 0.05)
        ps = path_states(s1, "h3")
        c.check(ok and 0 < sum(v == "down" for v in ps.values()) < PATHS,
                "a spine link down: h1 says h3 is %s, paths %s" % (peer(s1, "h3")["state"], ps))
        lslab.call(lab.fab, "link.set", {"link": "leaf1-spine2", "up": False})
        ok = lslab.wait_until(lambda: peer(s1, "h3")["state"] == "down", 5, 0.05)
        c.check(ok and peer(s1, "h2")["state"] == "up",
                "both spine links down: h3 %s (every path), same-leaf h2 %s"
                % (peer(s1, "h3")["state"], peer(s1, "h2")["state"]))
        for ln in ("leaf1-spine1", "leaf1-spine2"):
            lslab.call(lab.fab, "link.set", {"link": ln, "up": True})
        lslab.call(lab.fab, "routing.set", {"convergence_ms": 0})
        c.check(lslab.wait_until(lambda: peer(s1, "h3")["state"] == "up", 10, 0.1),
                "links back: h3 up again")
        # lockstepctl sync
        out = subprocess.run([CTL, "-s", s1, "sync"], capture_output=True, text=True, timeout=10)
        sy = lslab.call(s1, "sync")["state"]
        c.check(out.returncode == 0 and sy["status"] in out.stdout,
                "lockstepctl sync shows the node's status (%s): %s" % (
                    sy["status"], out.stdout.strip().replace("\n", " | ")[:200]))
        # the emulator's generator at half a link's rate
        lslab.call(lab.fab, "gen.start", {"name": "half", "link": "leaf2-spine2", "dir": "ab",
                                          "util": 0.5})
        time.sleep(0.5)

        def counter():
            for e in lslab.call(lab.fab, "links"):
                if e["link"] == "leaf2-spine2" and e["dir"] == "ab":
                    return e["counters"]["bytes"], time.monotonic()
        b0, t0 = counter()
        time.sleep(2.0)
        b1, t1 = counter()
        util = (b1 - b0) * 8 / RATE / (t1 - t0)
        lslab.call(lab.fab, "gen.stop", {"name": "half"})
        c.check(abs(util - 0.5) <= 0.025,
                "gen.start util 0.5: the link carried %.3f of its rate" % util)
    # clock.source nic where no port has a NIC clock: refused, named
    cfg = os.path.join(tmp, "nic.json")
    with open(cfg, "w") as f:
        json.dump({"node": {"name": "nicx", "id": 9},
                   "ports": [{"name": "p0", "dev": "net_null0", "ipv4": "10.9.9.1/24"}],
                   "clock": {"source": "nic"}, "sync": {"shm": ""},
                   "control": {"socket": os.path.join(tmp, "nicx.sock"), "peers_file": ""}}, f)
    r = subprocess.run([os.path.join(lslab.BUILD, "app", "lockstepd", "lockstepd"), "--no-pci",
                        "--no-huge", "-m", "256", "--file-prefix", "lsnic%d" % os.getpid(), "--",
                        "--config", cfg], capture_output=True, text=True, timeout=60)
    said = [ln for ln in (r.stdout + r.stderr).splitlines() if "nic requested" in ln]
    c.check(r.returncode != 0 and said and "no RX timestamp" in said[0],
            "clock.source nic on a port without a NIC clock: exit %d, %s" % (
                r.returncode, said[0] if said else (r.stdout + r.stderr)[-200:]))
    shutil.rmtree(tmp, ignore_errors=True)
    c.finish()


if __name__ == "__main__":
    main()
