#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Integration: a memif client that is turned away at start-up connects later.

A memif server whose device is probed but not yet started answers a client
with "ID not found", and DPDK's memif PMD never retries: without help the
link stays down for good. Appliances wired back to back start in any
order, so this happened in the lab (a four-node mesh, once in 27 runs
with a busy CPU). Here the window is held open on purpose: dpdk-testpmd
probes a memif server and starts it only when told to (--disable-device-
start). lockstepd, as its client, is turned away first; once testpmd starts
the port, lockstepd's fresh starts must bring the link up, say so in its
log, and carry probes (testpmd forwards them back with macswap, so the
replies are lockstepd's own probes and do not match: we only count frames).
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "lab"))
import lslab  # noqa: E402


def main():
    lslab.exit_on_signals()
    c = lslab.Checks("memif-connect")
    lslab.need_root()
    testpmd = shutil.which("dpdk-testpmd")
    if testpmd is None:
        print("SKIP: no dpdk-testpmd (Debian package dpdk)")
        sys.exit(77)
    tmp = tempfile.mkdtemp(prefix="ls-memif-")
    msock = os.path.join(tmp, "m.sock")
    sock = os.path.join(tmp, "c.sock")
    cfg = {
        "node": {"name": "c", "id": 2},
        "ports": [{"name": "l1",
                   "dev": "net_memif7,role=client,id=0,socket=%s,socket-abstract=no" % msock,
                   "mac": "02:00:00:00:02:01", "ipv4": "10.1.2.2/24"}],
        "peers": [{"name": "s", "addr": "10.1.2.1"}],
        "probe": {"interval_us": 100000, "paths": 1},
        "control": {"socket": sock, "peers_file": ""},
        "idle": {"backoff": True},
    }
    tag = "lsmc%d" % os.getpid()
    tp_log = open(os.path.join(tmp, "testpmd.log"), "w")
    tp = subprocess.Popen([testpmd, "-l", "0-1", "--no-huge", "-m", "256", "--no-pci",
                           "--file-prefix", tag + "tp",
                           "--vdev", "net_memif0,role=server,id=0,socket=%s,socket-abstract=no" % msock,
                           "--", "-i", "--disable-device-start", "--total-num-mbufs=4096",
                           "--forward-mode=macswap"],
                          stdin=subprocess.PIPE, stdout=tp_log, stderr=subprocess.STDOUT, text=True)
    d = lslab.Daemon(cfg, tmp, "c", prefix=tag)
    try:
        c.check(lslab.wait_until(lambda: os.path.exists(msock), 20),
                "testpmd probed its memif server (socket there, device not started)")
        d.start()
        log = d.log
        c.check(lslab.wait_until(lambda: "connecting again" in log(), 15),
                "lockstepd was turned away and starts its port afresh")
        t0 = time.time()
        tp.stdin.write("port start all\nstart\n")
        tp.stdin.flush()
        c.check(lslab.wait_until(lambda: os.path.exists(sock), 20),
                "lockstepd finished starting (%.1f s after the server started)" % (time.time() - t0))

        def link_up():
            try:
                return all(p["link_up"] for p in lslab.call(sock, "status")["ports"])
            except (OSError, lslab.CtlError):
                return False

        c.check(lslab.wait_until(link_up, 10), "its memif link is up")
        time.sleep(1.0)
        st = lslab.call(sock, "status")
        c.check(st["ports"][0]["rx_pkts"] > 0,
                "frames cross the link (lockstepd's port received %d)" % st["ports"][0]["rx_pkts"])
        c.check("carrying on without it" not in log(), "no port was given up on")
    finally:
        d.stop(20)
        try:
            tp.stdin.write("quit\n")
            tp.stdin.flush()
        except (BrokenPipeError, ValueError):
            pass
        try:
            tp.wait(timeout=10)
        except subprocess.TimeoutExpired:
            tp.kill()
            tp.wait()
        subprocess.run(["rm", "-rf", "/var/run/dpdk/" + tag, "/var/run/dpdk/" + tag + "tp"], check=False)
    c.finish()


if __name__ == "__main__":
    main()
