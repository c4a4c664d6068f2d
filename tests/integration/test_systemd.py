#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Integration: the systemd units (config/systemd, docs/deploy.md).

1. `systemd-analyze verify` passes both units as meson generated them, with
   nothing on stderr (an unknown key, a missing binary, a bad specifier all
   print), the template checked as an instance, lockstepd@n1.service.
2. lockstepd@'s command line, run as systemd would run it for instance n1
   with a drop-in (`Environment="LSD_EAL=..."`, `Environment=LSD_CONFIG=...`):
   %i expanded, $LSD_EAL split into words, ${LSD_CONFIG} one word. The
   daemon starts and answers as n1, tells NOTIFY_SOCKET READY=1 (Type=notify)
   and WATCHDOG=1 every half WATCHDOG_USEC, and none while its lcore is
   held (ptrace stops that one thread: a stuck lcore, the rest of the daemon
   running), again once it runs; ExecReload (SIGHUP to the main
   pid) makes the config file's peers the peer list, the stop signal
   (KillSignal) ends it with status 0 within TimeoutStopSec after STOPPING=1.
3. lockstep-hugepages' command names only options dpdk-hugepages.py has (it
   is not run: it would reserve the machine's hugepages).
"""
import configparser
import ctypes
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "lab"))
import lslab  # noqa: E402

UNITS = os.path.join(lslab.BUILD, "config", "systemd")
DAEMON = os.path.abspath(os.path.join(lslab.BUILD, "app", "lockstepd", "lockstepd"))


def unit(name):
    """The unit's [Section] key=value lines (the last of a repeated key wins,
    except Environment, which accumulates), as systemd reads them."""
    p = configparser.ConfigParser(strict=False, interpolation=None, delimiters=("=",),
                                  comment_prefixes=("#", ";"))
    p.optionxform = str
    env = []
    with open(os.path.join(UNITS, name)) as f:
        text = f.read()
    for ln in text.splitlines():
        if ln.startswith("Environment="):
            env.append(ln[len("Environment="):])
    p.read_string(text)
    return p, env


def environment(assignments):
    """systemd's Environment= values (quoted or not) as a dict."""
    out = {}
    for a in assignments:
        for word in re.findall(r'"[^"]*"|\S+', a):
            word = word.strip('"')
            if "=" in word:
                k, v = word.split("=", 1)
                out[k] = v
    return out


def expand(cmd, inst, env):
    """ExecStart as systemd expands it: %i, ${VAR} one word, $VAR split."""
    words = []
    for w in cmd.replace("%i", inst).split():
        m = re.fullmatch(r"\$\{(\w+)\}", w)
        if m:
            words.append(env.get(m.group(1), ""))
            continue
        m = re.fullmatch(r"\$(\w+)", w)
        if m:
            words.extend(env.get(m.group(1), "").split())
            continue
        words.append(w)
    return words


def verify(c, tmp):
    """Both units through systemd-analyze verify, lockstepd at the build's."""
    for name in ("lockstepd@.service", "lockstep-hugepages.service"):
        with open(os.path.join(UNITS, name)) as f:
            text = f.read()
        prefix_bin = re.search(r"ExecStart=(\S+)/lockstepd ", text)
        if prefix_bin:
            text = text.replace(prefix_bin.group(1) + "/lockstepd", DAEMON)
        with open(os.path.join(tmp, name), "w") as f:
            f.write(text)
    r = subprocess.run(["systemd-analyze", "verify", "--man=no",
                        os.path.join(tmp, "lockstepd@n1.service"),
                        os.path.join(tmp, "lockstep-hugepages.service")],
                       capture_output=True, text=True, timeout=60)
    c.check(r.returncode == 0 and not r.stderr.strip(),
            "systemd-analyze verify lockstepd@n1.service lockstep-hugepages.service: "
            "exit %d, stderr %r" % (r.returncode, r.stderr.strip()[:300]))
    # and it does find faults: the same unit with a key misspelt
    with open(os.path.join(tmp, "lockstepd@.service")) as f:
        bad = f.read().replace("RestartSec=", "RestartSek=")
    with open(os.path.join(tmp, "bad@.service"), "w") as f:
        f.write(bad)
    r = subprocess.run(["systemd-analyze", "verify", "--man=no", os.path.join(tmp, "bad@n1.service")],
                       capture_output=True, text=True, timeout=60)
    c.check("RestartSek" in r.stderr, "verify names a misspelt key: %r" % r.stderr.strip()[:200])


def lsd_config(tmp, peers):
    return {"node": {"name": "n1", "id": 1},
            "ports": [{"name": "p0", "dev": "net_null0", "mac": "02:00:00:00:5d:01",
                       "ipv4": "10.251.0.1/24", "lcore": 1}],
            "peers": [{"name": n, "addr": a, "port": "p0", "mac": "02:00:00:00:5d:09"}
                      for n, a in peers],
            "control": {"socket": os.path.join(tmp, "n1.sock"), "peers_file": ""},
            "idle": {"backoff": True}}


def run_unit(c, tmp):
    u, env_lines = unit("lockstepd@.service")
    cfg = os.path.join(tmp, "n1.json")
    with open(cfg, "w") as f:
        json.dump(lsd_config(tmp, [("a", "10.251.0.2")]), f)
    # the drop-in an operator writes with systemctl edit lockstepd@n1
    dropin = ['"LSD_EAL=--no-pci --no-huge -m 256 -l 0,1"', "LSD_CONFIG=%s" % cfg]
    env = environment(env_lines + dropin)
    argv = expand(u["Service"]["ExecStart"], "n1", env)
    argv[0] = DAEMON
    c.check(argv[1:3] == ["--file-prefix", "lockstep-n1"] and argv[-2:] == ["--config", cfg] and
            "--" in argv and argv.index("--") > argv.index("-m"),
            "ExecStart for n1 with the drop-in: %s" % " ".join(argv[1:]))
    log = open(os.path.join(tmp, "n1.log"), "w")
    # systemd's side of Type=notify: a datagram socket in NOTIFY_SOCKET, and
    # WATCHDOG_USEC from WatchdogSec (2 s here, not the unit's 30)
    note = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    note.bind(os.path.join(tmp, "notify"))
    note.settimeout(0.2)
    env_run = dict(os.environ, NOTIFY_SOCKET=os.path.join(tmp, "notify"), WATCHDOG_USEC="2000000")
    p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env_run)
    heard = []

    def listen(secs):
        end = time.time() + secs
        while time.time() < end:
            try:
                heard.append((time.time(), note.recv(512).decode()))
            except socket.timeout:
                pass
    sock = os.path.join(tmp, "n1.sock")
    try:
        up = lslab.wait_until(lambda: os.path.exists(sock) and
                              lslab.call(sock, "status")["node"] == "n1", 30)
        c.check(up, "lockstepd@n1 up, answering as n1")
        if not up:
            return
        listen(3.5)
        ready = [m for _, m in heard if m.startswith("READY=1")]
        dogs = [t for t, m in heard if m == "WATCHDOG=1"]
        c.check(u["Service"]["Type"] == "notify" and ready and "MAINPID=%d" % p.pid in ready[0] and
                len(dogs) >= 2 and all(0.5 < b - a < 1.5 for a, b in zip(dogs, dogs[1:])),
                "Type=notify: %r, then WATCHDOG=1 every half WATCHDOG_USEC (%s s apart)" % (
                    ready[:1], [round(b - a, 2) for a, b in zip(dogs, dogs[1:])]))
        stuck_lcore(c, p, heard, listen, os.path.join(tmp, "n1.log"))
        # ExecReload: kill -HUP $MAINPID, after the file gained a peer
        with open(cfg, "w") as f:
            json.dump(lsd_config(tmp, [("a", "10.251.0.2"), ("b", "10.251.0.3")]), f)
        reload = expand(u["Service"]["ExecReload"], "n1", {"MAINPID": str(p.pid)})
        subprocess.run(reload, check=True)
        ok = lslab.wait_until(lambda: sorted(x["name"] for x in lslab.call(sock, "peers"))
                              == ["a", "b"], 10)
        c.check(ok and p.poll() is None, "ExecReload (%s): the file's peers a and b, still "
                "running" % " ".join(reload))
        sig = getattr(signal, u["Service"]["KillSignal"])
        stop_s = float(u["Service"]["TimeoutStopSec"])
        p.send_signal(sig)
        rc = p.wait(stop_s)
        listen(0.3)
        c.check(rc == 0 and heard[-1][1] == "STOPPING=1",
                "KillSignal %s: exit %d within TimeoutStopSec %.0f s, STOPPING=1 said (last: %r)"
                % (sig.name, rc, stop_s, heard[-1][1]))
    finally:
        note.close()
        if p.poll() is None:
            p.kill()
            p.wait()
        log.close()
    c.check(u["Service"]["RuntimeDirectory"] == "lockstep" and
            u["Service"]["StateDirectory"] == "lockstep" and
            u["Unit"]["Requires"] == "lockstep-hugepages.service",
            "sockets in /run/lockstep, state in /var/lib/lockstep, hugepages first")


PTRACE_DETACH, PTRACE_SEIZE, PTRACE_INTERRUPT = 17, 0x4206, 0x4207


def hold_thread(tid):
    """Stop one thread of a running process (ptrace works on threads: the
    others go on), as an lcore stuck in a loop or a driver call would."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
    for req in (PTRACE_SEIZE, PTRACE_INTERRUPT):
        if libc.ptrace(req, tid, None, None) != 0:
            raise OSError(ctypes.get_errno(), "ptrace(%#x, %d)" % (req, tid))
    os.waitpid(tid, 0x40000000)          # __WALL: its stop
    return lambda: libc.ptrace(PTRACE_DETACH, tid, None, None)


def lcore_threads(pid):
    return [int(t) for t in os.listdir("/proc/%d/task" % pid)
            if open("/proc/%d/task/%s/comm" % (pid, t)).read().startswith("rte-worker-")]


def stuck_lcore(c, p, heard, listen, log_path):
    """The watchdog means every lcore: WATCHDOG=1 stops while one is held,
    and comes back once it runs again."""
    tids = lcore_threads(p.pid)
    if not c.check(len(tids) == 1, "lockstepd's lcore thread: %s" % tids):
        return
    release = hold_thread(tids[0])
    try:
        t0 = time.time()
        listen(3.5)
    finally:
        release()
    # a ping the lcore took before it stopped may still give one WATCHDOG=1
    # a period later; none after that
    late = [round(t - t0, 2) for t, m in heard if m == "WATCHDOG=1" and t > t0 + 1.2]
    with open(log_path) as f:
        said = "has not taken a message" in f.read()
    c.check(not late and said and p.poll() is None,
            "lcore held 3.5 s (ptrace): no WATCHDOG=1 after its last ping (late: %s), the log "
            "names the lcore, the daemon runs on" % late)
    t1 = time.time()
    listen(2.5)
    back = [round(t - t1, 2) for t, m in heard if m == "WATCHDOG=1" and t > t1]
    c.check(back and back[0] < 2.1, "the lcore runs again: WATCHDOG=1 back after %s s" % back[:1])


def hugepages(c):
    u, env_lines = unit("lockstep-hugepages.service")
    argv = expand(u["Service"]["ExecStart"], "", environment(env_lines))
    helptext = subprocess.run([argv[0], "--help"], capture_output=True, text=True).stdout
    opts = [a for a in argv[1:] if a.startswith("-")]
    c.check(os.access(argv[0], os.X_OK) and opts and all(o in helptext for o in opts) and
            argv[argv.index("--reserve") + 1] == "2G",
            "lockstep-hugepages: %s, every option dpdk-hugepages.py's" % " ".join(argv))


def main():
    lslab.exit_on_signals()
    lslab.need_root("lockstepd needs root")
    c = lslab.Checks("systemd")
    if not shutil.which("systemd-analyze"):
        c.check(False, "systemd-analyze is installed (tools/deps: systemd)")
        c.finish()
    tmp = tempfile.mkdtemp(prefix="ls-systemd-")
    try:
        verify(c, tmp)
        run_unit(c, tmp)
        hugepages(c)
    finally:
        if c.failed:
            lslab.last_words(os.path.join(tmp, "n1.log"), "lockstepd@n1", 20)
        shutil.rmtree(tmp, ignore_errors=True)
    c.finish()


if __name__ == "__main__":
    main()
