#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Integration: the peers an operator sets survive a restart.

One lockstepd with two config peers and control.peers_file in the test's
directory:
  - peer.add n4, peer.del n2, probe.set n3's paths and interval: each reply
    says saved, and the file holds exactly the resulting list;
  - after SIGTERM and a new start, `peers` is that list (n3 with its new
    paths and interval, n4; no n2), not the config's;
  - SIGHUP makes the edited config's peers the list (unchanged ones keep
    running) and saves it; the daemon does not exit;
  - a broken peers file (a bad address) stops the start with the file, the
    key and the reason, exit status non-zero, and is left as it was;
  - peers_file "" writes nothing.
"""
import json
import os
import shutil
import signal
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tools", "lab"))
import lslab  # noqa: E402


def config(tmp, peers_file):
    return {
        "node": {"name": "ps", "id": 7},
        "ports": [{"name": "p0", "dev": "net_null0", "mac": "02:00:00:00:07:00",
                   "ipv4": "10.9.0.1/24"}],
        "peers": [{"name": "n2", "addr": "10.9.0.2"}, {"name": "n3", "addr": "10.9.0.3"}],
        "probe": {"interval_us": 100000, "paths": 2},
        "control": {"socket": os.path.join(tmp, "ps.sock"), "peers_file": peers_file},
        "sync": {"shm": ""},
        "idle": {"backoff": True, "sleep_us": 200},
    }


def names(sock):
    return sorted((p["name"], p["paths"], p["interval_us"]) for p in lslab.call(sock, "peers"))


def main():
    lslab.exit_on_signals()
    c = lslab.Checks("persist")
    lslab.need_root()
    tmp = tempfile.mkdtemp(prefix="ls-persist-")
    state = os.path.join(tmp, "state", "ps.peers.json")   # the directory is made on save
    cfg = config(tmp, state)
    d = lslab.Daemon(cfg, tmp, "ps")
    try:
        d.start()
        c.check(lslab.wait_until(lambda: os.path.exists(d.sock), 20), "lockstepd up")
        r1 = lslab.call(d.sock, "peer.add", {"name": "n4", "addr": "10.9.0.4", "paths": 3})
        r2 = lslab.call(d.sock, "peer.del", {"name": "n2"})
        r3 = lslab.call(d.sock, "probe.set", {"peer": "n3", "paths": 4, "interval_us": 50000})
        c.check(r1.get("saved") and r2.get("saved") and r3.get("saved"),
                "peer.add, peer.del, probe.set each saved: %s %s %s" % (r1, r2, r3))
        want = [("n3", 4, 50000), ("n4", 3, 100000)]
        before = names(d.sock)
        c.check(before == want, "peers after the changes: %s" % before)
        with open(state) as f:
            saved = json.load(f)
        c.check(sorted((p["name"], p["paths"], p["interval_us"]) for p in saved) == want and
                all(p["port"] == "p0" for p in saved),
                "the file holds that list: %s" % saved)
        rc = d.stop()
        c.check(rc == 0, "SIGTERM: exit 0 (got %s)" % rc)

        d = lslab.Daemon(cfg, tmp, "ps")
        d.start()
        c.check(lslab.wait_until(lambda: os.path.exists(d.sock) and
                                 lslab.call(d.sock, "peers") is not None, 20), "lockstepd again")
        after = names(d.sock)
        c.check(after == want, "after the restart the peers are the operator's, not the "
                "config's: %s" % after)

        # SIGHUP: the edited config's peers become the list; the daemon lives on
        cfg2 = dict(cfg, peers=[{"name": "n3", "addr": "10.9.0.3", "paths": 4,
                                 "interval_us": 50000},
                                {"name": "n7", "addr": "10.9.0.7"}])
        with open(d.cfg_path, "w") as f:
            json.dump(cfg2, f)
        d.proc.send_signal(signal.SIGHUP)
        want2 = [("n3", 4, 50000), ("n7", 2, 100000)]
        c.check(lslab.wait_until(lambda: names(d.sock) == want2, 10),
                "SIGHUP: the config's peers now (n3 kept, n4 gone, n7 added): %s" %
                names(d.sock))
        c.check(d.proc.poll() is None, "SIGHUP does not stop lockstepd")
        with open(state) as f:
            c.check(sorted(p["name"] for p in json.load(f)) == ["n3", "n7"],
                    "... and the list is saved")
        d.stop()

        # a broken file: refused whole, named, left alone
        with open(state, "w") as f:
            json.dump([{"name": "n4", "addr": "10.9.0.4"}, {"name": "n5", "addr": "10.9.0.999"}],
                      f)
        with open(state) as f:
            broken = f.read()
        r = lslab.Daemon(cfg, tmp, "ps").run(timeout=60)
        out = r.stdout + r.stderr
        c.check(r.returncode != 0 and state in out and "[1].addr" in out,
                "a bad peers file stops the start naming file and key (rc %d): %s" %
                (r.returncode, [l for l in out.splitlines() if state in l][:1]))
        with open(state) as f:
            c.check(f.read() == broken, "the bad file is left as it was")

        # off: nothing written
        os.unlink(state)
        cfg_off = config(tmp, "")
        d = lslab.Daemon(cfg_off, tmp, "ps")
        d.start()
        lslab.wait_until(lambda: os.path.exists(d.sock), 20)
        r = lslab.call(d.sock, "peer.add", {"name": "n6", "addr": "10.9.0.6"})
        d.stop()
        c.check(not os.path.exists(state) and r.get("saved") is True,
                "peers_file \"\": nothing written (reply %s)" % r)
    finally:
        if d.proc is not None:
            d.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    c.finish()


if __name__ == "__main__":
    main()
