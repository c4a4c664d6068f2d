#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Integration: lockstepd's control socket and command line, on a live daemon.

One lockstepd (a memif server port with no client, so the wire is quiet,
and a simulated clock) answers every command in `help` with valid
arguments; bad JSON, an unknown command, an oversize request and bad
arguments get error replies on a connection that stays usable; several
clients are served at once; the socket has mode 0660. Bad configuration
files make lockstepd exit 2 naming the file, the key and the reason.
"""
import json
import os
import platform
import socket
import stat
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "lab"))
import lslab  # noqa: E402

LOCKSTEPD = lslab.LOCKSTEPD
HERE = os.path.dirname(os.path.abspath(__file__))


class Conn:
    """A persistent client connection (to prove it survives bad requests)."""

    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.settimeout(5)
        self.s.connect(path)
        self.buf = b""

    def raw(self, data):
        self.s.sendall(data)
        while b"\n" not in self.buf:
            d = self.s.recv(65536)
            if not d:
                raise EOFError("server closed the connection")
            self.buf += d
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def call(self, cmd, args=None):
        req = {"cmd": cmd}
        if args is not None:
            req["args"] = args
        return self.raw((json.dumps(req) + "\n").encode())


def config(tmp, extra=None, name="c1"):
    cfg = {
        "node": {"name": name, "id": 7},
        "ports": [{"name": "p0",
                   "dev": "net_memif0,role=server,id=0,socket=%s/m.sock,socket-abstract=no" % tmp,
                   "mac": "02:00:00:00:07:01", "ipv4": "10.7.0.1/24", "ipv6": "fd00:7::1/64"}],
        "peers": [{"name": "a", "addr": "10.7.0.2", "asym_ns": 1500},
                  {"name": "b6", "addr": "fd00:7::2", "paths": 2}],
        "probe": {"interval_us": 100000, "paths": 3},
        "clock": {"source": "sim", "sim": {"offset_ns": 123456, "drift_ppm": 12.5, "wander_ns": 0}},
        "control": {"socket": "%s/%s.sock" % (tmp, name), "peers_file": ""},
        "capture": {"dir": "%s/cap" % tmp},
        "sync": {"shm": "%s/%s.fleettime" % (tmp, name)},
        "events": {"file": "%s/%s.events" % (tmp, name)},
        "idle": {"backoff": True},
    }
    if extra:
        for k, v in extra.items():
            cfg[k] = v
    return cfg


def shape_diff(real, fake, where="result"):
    """Differences in shape (keys, JSON types) between two replies; None on
    either side matches anything (a null field), as does an empty list."""
    if real is None or fake is None:
        return []
    if isinstance(real, dict) and isinstance(fake, dict):
        out = ["%s.%s: only the daemon has it" % (where, k) for k in real if k not in fake]
        out += ["%s.%s: only the fake has it" % (where, k) for k in fake if k not in real]
        for k in real:
            if k in fake:
                out += shape_diff(real[k], fake[k], "%s.%s" % (where, k))
        return out
    if isinstance(real, list) and isinstance(fake, list):
        return shape_diff(real[0], fake[0], where + "[0]") if real and fake else []
    num = (int, float)
    same = (isinstance(real, bool) == isinstance(fake, bool) and
            (isinstance(real, num) and isinstance(fake, num) or type(real) is type(fake)))
    return [] if same else ["%s: daemon %s, fake %s" % (where, type(real).__name__, type(fake).__name__)]


def check_fake_shapes(c, tmp, valid, real):
    """tests/integration/fake_ctl_server.py stands in for the daemon in the
    lockstepctl test: its replies must keep the daemon's shapes (it had
    drifted: no sync, peers' port a number, echoed arguments as replies)."""
    fs = os.path.join(tmp, "fake.sock")
    fake = subprocess.Popen(["/usr/bin/python3", os.path.join(HERE, "fake_ctl_server.py"),
                             "--socket", fs, "--node", "c1", "--peers", "a,b6"])
    try:
        lslab.wait_until(lambda: os.path.exists(fs), 10)
        f = Conn(fs)
        for name, args in valid.items():
            if name not in real:
                continue  # no ok reply from the daemon here to compare with
            r = f.call(name, args)
            d = shape_diff(real[name], r.get("result")) if r.get("ok") else ["error %s" % r]
            c.check(not d, "fake_ctl_server's %s reply has the daemon's shape%s"
                    % (name, (": " + "; ".join(d[:6])) if d else ""))
    finally:
        fake.terminate()
        fake.wait()


def run_bad_config(c, tmp, text, key, what):
    path = os.path.join(tmp, "bad.json")
    with open(path, "w") as f:
        f.write(text)
    p = subprocess.run([LOCKSTEPD, "--", "--config", path], capture_output=True, text=True, timeout=30)
    err = p.stderr.strip()
    c.check(p.returncode == 2 and path in err and key in err,
            "bad config (%s): exit %d, message names file and %s: %s" % (what, p.returncode, key, err))


def main():
    lslab.exit_on_signals()
    c = lslab.Checks("control")
    lslab.need_root()
    tmp = tempfile.mkdtemp(prefix="ls-ctl-")
    d = lslab.Daemon(config(tmp), tmp, "c1", prefix="lsctl%d" % os.getpid()).start()
    cfgp, sock = d.cfg_path, d.sock
    try:
        c.check(lslab.wait_until(lambda: os.path.exists(sock), 20), "daemon created its socket")
        time.sleep(0.3)
        mode = stat.S_IMODE(os.stat(sock).st_mode)
        c.check(mode == 0o660, "socket mode is 0660 (%o)" % mode)

        k = Conn(sock)
        helps = k.call("help")
        names = sorted(h["cmd"] for h in helps["result"])
        c.check(helps["ok"] and all("usage" in h and "help" in h for h in helps["result"]),
                "help lists %d commands with usage and help" % len(names))
        valid = {
            "help": None, "status": None, "peers": None, "paths": {"window": "1s"},
            "path": {"peer": "a", "window": "60s"},
            "peer.add": {"name": "z", "addr": "10.7.0.9", "paths": 1},
            "peer.del": {"name": "z"},
            "probe.set": {"interval_us": 50000},
            "stats.reset": None, "clock": None, "sync": None, "sync.points": {"peer": "a"},
            "log.level": {"level": "debug"},
            "capture.start": {"file": "c.pcap"}, "capture.stop": None,
            "events": {"max": 50},
            "links": None, "links.queues": None,
            # answered by the error cases below: no peer is resolved here
            "route": {"peer": "a"}, "path.mtu": {"peer": "a"}, "path.train": {"peer": "a"},
        }
        c.check(sorted(valid) == names, "test covers every command: %s" % names)
        # Each command's reply carries what it is for, not just ok (what the
        # value must be, for this config: 2 peers a (3 paths), b6 (2 paths)).
        cap = os.path.join(tmp, "cap", "c.pcap")
        content = {
            "help": lambda r: sorted(h["cmd"] for h in r) == names,
            "status": lambda r: (r["node"] == "c1" and r["node_id"] == 7 and r["n_peers"] == 2
                                 and r["n_paths"] == 5 and r["ports"][0]["name"] == "p0"
                                 and r["clock"]["source"] == "sim" and "rx_pkts" in r["counters"]),
            "peers": lambda r: [(p["name"], p["addr"], p["paths"]) for p in r]
                               == [("a", "10.7.0.2", 3), ("b6", "fd00:7::2", 2)],
            "paths": lambda r: (r["node"] == "c1" and r["window"] == "1s"
                                and [(p["name"], [q["path"] for q in p["paths"]]) for p in r["peers"]]
                                == [("a", [0, 1, 2]), ("b6", [0, 1])]
                                and r["peers"][0]["paths"][1]["sport"] == 49153),
            "path": lambda r: (r["peer"] == "a" and r["addr"] == "10.7.0.2" and len(r["paths"]) == 3
                               and all(list(q["windows"]) == ["60s"] and "sent" in q["counters"]
                                       for q in r["paths"])),
            # saved: peers_file is "" here, so nothing to write is a success
            "peer.add": lambda r: r == {"name": "z", "addr": "10.7.0.9", "paths": 1,
                                        "interval_us": 100000, "saved": True},
            "peer.del": lambda r: r == {"name": "z", "saved": True},
            "probe.set": lambda r: r == {"updated": 2, "saved": True},
            "stats.reset": lambda r: r == {"reset": 5},
            "clock": lambda r: (r["source"] == "sim" and r["sim"]["offset_ns"] == 123456
                                and r["sim"]["drift_ppm"] == 12.5 and r["calibration"]["tsc_hz"] > 0),
            "sync": lambda r: (r["enabled"] is True and r["state"]["node_id"] == 7
                               and r["reading"]["earliest_ns"] <= r["reading"]["fleet_ns"]
                               <= r["reading"]["latest_ns"] and isinstance(r["neighbors"], list)),
            "sync.points": lambda r: r["path"] == 0 and isinstance(r["probes"], list),
            "log.level": lambda r: r == {"level": "debug"},
            # a lone node is its own reference: the clock's first state is an event
            "events": lambda r: (r["missed"] == 0 and r["next"] == len(r["events"]) and
                                 r["file"] == os.path.join(tmp, "c1.events") and
                                 # the file holds the same events, one JSON line each
                                 [json.loads(l) for l in open(r["file"])][:len(r["events"])]
                                 == r["events"] and
                                 all(e["node"] == "c1" and e["seq"] == i + 1 and e["time_ns"] > 0
                                     for i, e in enumerate(r["events"])) and
                                 any(e["type"] == "clock.state" and e["was"] == "start"
                                     for e in r["events"]) and
                                 sum(r["counts"].values()) == len(r["events"])),
            # nothing dead, hot or traced yet: an empty picture, every field there
            "links": lambda r: (r["suspects"] == [] and r["weak"] == [] and
                                r["paths_down_traced"] == 0 and r["unexplained"] == 0 and
                                r["links_known"] == 0),
            # nothing traced: no link fitted, every field there
            "links.queues": lambda r: (r["links"] == [] and r["paths"] == 0 and
                                       r["estimates"] >= 0 and r["span_ms"] >= 0 and
                                       "at_utc_ns" in r),
            "capture.start": lambda r: r == {"file": cap},
            "capture.stop": lambda r: (r["file"] == cap and r["packets"] >= 0 and r["bytes"] >= 24
                                       and r["dropped"] == 0 and os.path.getsize(cap) == r["bytes"]),
        }
        real = {}
        for name in ["help", "status", "peers", "paths", "path", "peer.add", "peer.del",
                     "probe.set", "stats.reset", "clock", "sync", "sync.points", "log.level",
                     "capture.start", "capture.stop", "events", "links", "links.queues"]:
            r = k.call(name, valid[name])
            real[name] = r.get("result")
            try:
                good = r.get("ok") is True and bool(content[name](r["result"]))
            except (KeyError, TypeError, IndexError, OSError) as e:
                good = "%s: %r" % (type(e).__name__, e) and False
            c.check(good, "%s answers ok with the right content: %s"
                    % (name, json.dumps(r.get("result"))[:300]))

        check_fake_shapes(c, tmp, valid, real)

        st = k.call("status")["result"]
        c.check(st["node"] == "c1" and st["n_peers"] == 2 and st["n_paths"] == 5,
                "status: node c1, 2 peers, 5 paths")
        peers = {p["name"]: p for p in k.call("peers")["result"]}
        c.check(peers["a"]["paths"] == 3 and peers["b6"]["paths"] == 2 and
                peers["a"]["interval_us"] == 50000, "peers shows per-peer paths and the new interval")
        ck = k.call("clock")["result"]
        c.check(ck["source"] == "sim" and "truth" in ck, "clock reports the simulated source and its ground truth")
        # the CPU's promise the TSC keeps one rate (CPUID INVTSC; Linux's
        # nonstop_tsc flag on x86), as the fleet-time page's readers assume
        # (lib/sync/ls_fleettime.h); every ARMv8 generic counter keeps one
        if platform.machine() in ("x86_64", "i686"):
            with open("/proc/cpuinfo") as f:
                flags = next((ln.split(":", 1)[1].split() for ln in f if ln.startswith("flags")), [])
            want = "nonstop_tsc" in flags
        else:
            want = True
        c.check(ck.get("invariant_tsc") is want,
                "clock reports invariant_tsc %s (the CPU: %s)" % (ck.get("invariant_tsc"), want))
        off = ck["truth"]["offset_ns"]
        c.check(123456 <= off < 123456 + 12.5e-6 * 3600e9, "truth offset %.1f ns = configured offset + drift" % off)
        c.check(k.call("log.level")["result"]["level"] == "debug", "log.level reads back what was set")
        r = k.call("probe.set", {"peer": "a", "paths": 5})
        c.check(r["ok"] and len(k.call("path", {"peer": "a"})["result"]["paths"]) == 5,
                "probe.set paths=5 on one peer gives it 5 paths")
        r = k.call("probe.set", {"paths": 4, "interval_us": 20000})
        ps = k.call("peers")["result"]
        c.check(r["ok"] and r["result"]["updated"] == 2 and
                all(p["paths"] == 4 and p["interval_us"] == 20000 for p in ps),
                "probe.set on all peers: updated %s, paths %s" % (r.get("result"), [p["paths"] for p in ps]))

        # Bad input: an error reply each time, and the same connection still works.
        bad = [
            (b"{not json\n", "bad_json"),
            (b"[1,2]\n", "bad_request"),
            (b'{"args": {}}\n', "bad_request"),
            (b'{"cmd": "status", "args": 5}\n', "bad_request"),
            (b'{"cmd": "no.such"}\n', "unknown_command"),
            (b'{"cmd": "status", "pad": "' + b"x" * 200000 + b'"}\n', "too_large"),
        ]
        for data, code in bad:
            r = k.raw(data)
            c.check(r.get("ok") is False and r["error"]["code"] == code,
                    "%r... -> error %s" % (data[:24], r.get("error", {}).get("code")))
            c.check(k.call("status").get("ok") is True, "connection usable after %s" % code)
        capdir = os.path.join(tmp, "cap")
        os.makedirs(capdir, exist_ok=True)
        outside = os.path.join(tmp, "outside")
        os.symlink(outside, os.path.join(capdir, "link.pcap"))
        os.mkfifo(os.path.join(capdir, "fifo.pcap"))
        with open(os.path.join(capdir, "old.pcap"), "w") as f:
            f.write("keep me")
        bad_args = [
            ("peer.add", {"name": "q"}, "bad_args", "addr"),
            ("peer.add", {"name": "q", "addr": "10.7.0.300"}, "bad_args", "addr"),
            ("peer.add", {"name": "q", "addr": "10.7.0.5", "colour": 1}, "bad_args", "colour"),
            ("peer.add", {"name": "a", "addr": "10.7.0.5"}, "exists", "a"),
            ("peer.add", {"name": "q", "addr": "10.7.0.2"}, "exists", "10.7.0.2"),
            ("peer.add", {"name": "q", "addr": "10.7.0.5", "port": "p9"}, "bad_args", "p9"),
            ("peer.del", {"name": "nobody"}, "not_found", "nobody"),
            ("peer.del", {}, "bad_args", "name"),
            ("path", {"peer": "nobody"}, "not_found", "nobody"),
            ("path", {"peer": "a", "window": "5s"}, "bad_args", "window"),
            ("paths", {"window": 10}, "bad_args", "window"),
            ("probe.set", {"interval_us": 5}, "bad_args", "interval_us"),
            ("probe.set", {"paths": 65}, "bad_args", "paths"),
            ("probe.set", {}, "bad_args", "interval_us"),
            ("sync.points", {"peer": "nobody"}, "not_found", "nobody"),
            ("sync.points", {"peer": "a", "path": 64}, "bad_args", "path"),
            ("sync.points", {"peer": "a", "path": 4}, "not_found", "path 4"),
            ("sync.points", {"path": 0}, "bad_args", "peer"),
            ("log.level", {"level": "loud"}, "bad_args", "level"),
            ("events", {"since": -1}, "bad_args", "since"),
            ("route", {"peer": "a"}, "busy", "not resolved"),
            ("route", {"peer": "nobody"}, "not_found", "nobody"),
            ("route", {"peer": "a", "path": 9}, "bad_args", "4 paths"),  # probe.set made 4
            ("route", {"peer": "a", "dport": 0}, "bad_args", "dport"),
            ("path.mtu", {"peer": "a"}, "busy", "not resolved"),
            ("path.mtu", {"peer": "nobody"}, "not_found", "nobody"),
            ("path.mtu", {"peer": "a", "sizes": [100]}, "bad_args", "sizes"),
            ("path.mtu", {"peer": "a", "sizes": [9217]}, "bad_args", "sizes"),
            ("path.mtu", {"peer": "a", "sizes": "1500"}, "bad_args", "sizes"),
            ("path.mtu", {"peer": "a", "sizes": [1500] * 9}, "bad_args", "sizes"),
            ("path.mtu", {"peer": "a", "count": 9}, "bad_args", "count"),
            ("path.mtu", {"peer": "a", "fresh": 1}, "bad_args", "fresh"),
            ("path.mtu", {"peer": "a", "colour": 1}, "bad_args", "colour"),
            ("path.train", {"peer": "a"}, "busy", "not resolved"),
            ("path.train", {"peer": "nobody"}, "not_found", "nobody"),
            ("path.train", {"peer": "a", "count": 33}, "bad_args", "count"),
            ("path.train", {"peer": "a", "count": 1}, "bad_args", "count"),
            ("path.train", {"peer": "a", "trains": 5}, "bad_args", "trains"),
            ("path.train", {"peer": "a", "size": 127}, "bad_args", "size"),
            ("path.train", {"peer": "a", "size": 9000}, "bad_args", "MTU"),
            ("path.train", {"peer": "a", "fresh": "yes"}, "bad_args", "fresh"),
            ("path.train", {"peer": "a", "colour": 1}, "bad_args", "colour"),
            ("events", {"max": 0}, "bad_args", "max"),
            ("events", {"limit": 5}, "bad_args", "limit"),
            ("capture.start", {}, "bad_args", "file"),
            # Regression (issue 27 H2): captures go into capture.dir only, as new
            # plain files; anything else is refused and the daemon stays up.
            ("capture.start", {"file": "/etc/lockstep-x.pcap"}, "bad_args", "plain file name"),
            ("capture.start", {"file": "../x.pcap"}, "bad_args", "plain file name"),
            ("capture.start", {"file": ".."}, "bad_args", "plain file name"),
            ("capture.start", {"file": ".hidden"}, "bad_args", "plain file name"),
            ("capture.start", {"file": "sub/x.pcap"}, "bad_args", "plain file name"),
            ("capture.start", {"file": "x" * 129}, "bad_args", "plain file name"),
            ("capture.start", {"file": "link.pcap"}, "bad_args", "File exists"),
            ("capture.start", {"file": "fifo.pcap"}, "bad_args", "File exists"),
            ("capture.start", {"file": "old.pcap"}, "bad_args", "File exists"),
            ("capture.stop", None, "not_found", "capture"),
            # Regression (issue 27 L3): an instant hours away walked the
            # simulated clock's wander for hours on the control thread.
            ("clock", {"tsc": 2 ** 62}, "bad_args", "within 60 s"),
            ("sync", {"tsc": 2 ** 62}, "bad_args", "within 60 s"),
        ]
        for cmd, args, code, word in bad_args:
            r = k.call(cmd, args)
            e = r.get("error", {})
            c.check(r.get("ok") is False and e.get("code") == code and word in e.get("message", ""),
                    "%s %s -> %s: %s" % (cmd, json.dumps(args), e.get("code"), e.get("message")))
        c.check(k.call("status")["result"]["n_peers"] == 2, "bad requests changed nothing (2 peers)")
        # Regression (issue 27 L7): probe.set paths rebuilt the peer without
        # its configured asymmetry, biasing clock sync.
        r = k.call("probe.set", {"peer": "a", "paths": 2})
        a = [p for p in k.call("peers")["result"] if p["name"] == "a"]
        c.check(r.get("ok") and a and a[0]["paths"] == 2 and a[0]["asym_ns"] == 1500,
                "probe.set paths keeps the peer's asym_ns (%s)" % (a[0].get("asym_ns") if a else None))
        with open(os.path.join(capdir, "old.pcap")) as f:
            kept = f.read()
        c.check(not os.path.lexists(outside) and kept == "keep me" and
                not os.path.exists("/etc/lockstep-x.pcap"),
                "refused captures wrote nothing (link target absent, old file kept)")
        st = os.stat(os.path.join(capdir, "c.pcap"))
        c.check(stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o640,
                "a capture is a new regular file, mode 0640 (%o)" % stat.S_IMODE(st.st_mode))

        # Several clients at once, interleaved on open connections.
        conns = [Conn(sock) for _ in range(6)]
        for rnd in range(3):
            for cc in conns:
                cc.s.sendall(b'{"cmd": "status"}\n{"cmd": "peers"}\n')
            ok = True
            for cc in conns:
                r1 = json.loads(_line(cc))
                r2 = json.loads(_line(cc))
                ok = ok and r1["ok"] and r2["ok"] and r1["result"]["node"] == "c1" and isinstance(r2["result"], list)
            c.check(ok, "6 clients, round %d: pipelined requests all answered in order" % rnd)

        # Regression (issue 27 L5): max_clients (16) idle connections locked
        # the operator out ("busy"). Now one of them gives way.
        ctl = os.path.join(lslab.BUILD, "tools", "lockstepctl", "lockstepctl")
        idle = []
        for _ in range(16):
            s = socket.socket(socket.AF_UNIX)
            s.connect(sock)
            idle.append(s)
        time.sleep(0.3)  # the control thread accepts them
        p = subprocess.run([ctl, "-s", sock, "status"], capture_output=True, text=True)
        c.check(p.returncode == 0 and "c1" in p.stdout,
                "16 idle clients: lockstepctl status still answers (exit %d %s)" % (p.returncode, p.stderr.strip()))
        c.check(k.call("status").get("ok") is True, "a quiet earlier client kept its slot")
        for s in idle:
            s.close()

        # lockstepctl against the live daemon.
        p = subprocess.run([ctl, "-s", sock, "peers"], capture_output=True, text=True)
        c.check(p.returncode == 0 and "b6" in p.stdout, "lockstepctl peers prints a table (exit %d)" % p.returncode)
        p = subprocess.run([ctl, "-s", sock, "--json", "status"], capture_output=True, text=True)
        c.check(p.returncode == 0 and json.loads(p.stdout)["result"]["node"] == "c1",
                "lockstepctl --json status prints the raw reply")
        p = subprocess.run([ctl, "-s", sock, "peer", "del", "nobody"], capture_output=True, text=True)
        c.check(p.returncode == 1 and "not_found" in p.stderr, "lockstepctl exits 1 on an error reply")
        p = subprocess.run([ctl, "-s", os.path.join(tmp, "none.sock"), "status"], capture_output=True, text=True)
        c.check(p.returncode == 3 and "not running" in p.stderr, "lockstepctl exits 3 when no daemon")
    finally:
        rc = d.stop(15)
    # Regression (issue 27 L4): a clean exit marks fleet time unsynced and
    # removes the file, rather than leaving a page that looks synced.
    c.check(not os.path.exists(os.path.join(tmp, "c1.fleettime")), "clean exit removed sync.shm")
    c.check(rc == 0, "SIGTERM: exit status 0 (%d)" % rc)
    c.check(not os.path.exists(sock), "SIGTERM: socket file removed")

    # Bad configuration files.
    good = config(tmp)
    run_bad_config(c, tmp, "{\n  \"node\": {\"name\": \"x\", \"id\": 1},\n  oops\n}", "line 3", "JSON syntax")
    g = json.loads(json.dumps(good)); g["probe"]["interval_us"] = 5
    run_bad_config(c, tmp, json.dumps(g), "probe.interval_us", "out of range")
    g = json.loads(json.dumps(good)); g["peers"][1]["port"] = "p9"
    run_bad_config(c, tmp, json.dumps(g), "peers[1].port", "dangling port")
    g = json.loads(json.dumps(good)); g["ports"][0]["colour"] = "red"
    run_bad_config(c, tmp, json.dumps(g), "ports[0].colour", "unknown key")
    g = json.loads(json.dumps(good)); g["capture"]["dir"] = "cap"
    run_bad_config(c, tmp, json.dumps(g), "capture.dir", "relative capture directory")
    g = json.loads(json.dumps(good)); g["node"]["id"] = "7"
    run_bad_config(c, tmp, json.dumps(g), "node.id", "wrong type")
    p = subprocess.run([LOCKSTEPD, "--", "--config", os.path.join(tmp, "missing.json")],
                       capture_output=True, text=True)
    c.check(p.returncode == 2 and "missing.json" in p.stderr, "missing config file: exit 2 and named")
    p = subprocess.run([LOCKSTEPD, "--help"], capture_output=True, text=True)
    c.check(p.returncode == 0 and "--config" in p.stdout and "--check-config" in p.stdout, "--help documents the options")
    p = subprocess.run([LOCKSTEPD, "--", "--config", cfgp, "--check-config"], capture_output=True, text=True)
    c.check(p.returncode == 0 and "ok" in p.stdout, "--check-config accepts a good file without the EAL")
    g = json.loads(json.dumps(good)); g["clock"] = {"source": "tsc", "tx_sched": True}
    run_bad_config(c, tmp, json.dumps(g), "clock.tx_sched", "send scheduling without a NIC clock")
    # A port that cannot send on a timestamp (memif) refuses clock.tx_sched
    # at start, by name, rather than sending unscheduled frames stamped
    # ahead of when they leave.
    g = json.loads(json.dumps(good)); g["clock"] = {"source": "nic", "tx_sched": True}
    g["control"]["socket"] = os.path.join(tmp, "txs.sock")
    p = lslab.Daemon(g, tmp, "txs", prefix="lstxs%d" % os.getpid()).run(timeout=60)
    out = p.stdout + p.stderr
    c.check(p.returncode != 0 and "does not send on a timestamp" in out and "p0" in out,
            "clock.tx_sched on a memif port: exit %d, port named: %s"
            % (p.returncode, [x for x in out.splitlines() if "timestamp" in x][:1]))
    shm_checks(c, tmp, good)
    c.finish()


def shm_checks(c, tmp, good):
    """Regression (issue 27 M3): sync.shm was opened with O_CREAT and no other
    check, so whoever created the path first (a local user in /dev/shm) got a
    file root writes fleet time into, or a link root truncates the target of.
    Now a link or a file we do not own exclusively is refused, by name."""
    shm = os.path.join(tmp, "sh.fleettime")
    g = json.loads(json.dumps(good))
    g["sync"] = {"shm": shm}
    g["control"]["socket"] = os.path.join(tmp, "sh.sock")
    target = os.path.join(tmp, "victim")
    with open(target, "w") as f:
        f.write("precious")
    cases = [("symlink", lambda: os.symlink(target, shm), "symbolic link"),
             ("world-writable file", lambda: (open(shm, "w").close(), os.chmod(shm, 0o666)), "not ours"),
             ("hard link", lambda: os.link(target, shm), "not ours"),
             ("FIFO", lambda: os.mkfifo(shm, 0o644), "not ours")]
    for what, make, word in cases:
        make()
        p = lslab.Daemon(g, tmp, "sh", prefix="lssh%d" % os.getpid()).run(timeout=60)
        out = p.stdout + p.stderr
        with open(target) as f:
            kept = f.read()
        c.check(p.returncode != 0 and "sync.shm" in out and word in out and kept == "precious",
                "sync.shm is a %s: refused (exit %d), target untouched: %s"
                % (what, p.returncode, [x for x in out.splitlines() if "sync.shm" in x][:1]))
        os.unlink(shm)


def _line(cc):
    while b"\n" not in cc.buf:
        cc.buf += cc.s.recv(65536)
    line, cc.buf = cc.buf.split(b"\n", 1)
    return line


if __name__ == "__main__":
    main()
