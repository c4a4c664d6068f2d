# SPDX-License-Identifier: BSD-3-Clause
"""Helpers for the lab and its users (tests/integration, tools/bench): bring
a lab up and down with tools/lab/lab.sh or start one lockstepd (Daemon),
talk to control sockets, read pcap files (from lspkt), and count checks so
each test script ends with the plain "N passed, N failed" line.

Lives beside lab.sh; scripts elsewhere put tools/lab on sys.path first.
Standard library only, so the tests run with Debian's python3 as is.
"""
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

from lspkt import read_pcap, udp_of  # noqa: F401  (re-exported for the tests)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("LS_BUILD", os.path.join(ROOT, "build"))
LAB = os.path.join(ROOT, "tools", "lab", "lab.sh")
LOCKSTEPD = os.path.join(BUILD, "app", "lockstepd", "lockstepd")
FABRIC = os.path.join(BUILD, "app", "fabric", "lockstep-fabric")
LOAD = os.path.join(BUILD, "app", "load", "lockstep-load")


def need_root(why="needs root"):
    """Exit 77 (meson's SKIP) unless root: without root a test skips, never passes."""
    if os.geteuid() != 0:
        print("SKIP: " + why)
        sys.exit(77)


def exit_on_signals():
    """Make SIGTERM (a meson time-out) and SIGINT end the test through its
    finally blocks and with blocks, so the namespaces, processes, shared
    memory and directories it made are removed as on a normal exit."""
    def leave(signum, frame):
        raise SystemExit(128 + signum)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, leave)


def stop_all(procs, timeout=15):
    """SIGTERM each still-running Popen, the last started first (a daemon
    before the emulator it uses), SIGKILL after timeout."""
    for p in reversed(procs):
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


class CtlError(Exception):
    pass


def call(sock, cmd, args=None, timeout=5.0):
    """One request on a fresh connection; returns result or raises CtlError."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(sock)
        req = {"cmd": cmd}
        if args is not None:
            req["args"] = args
        s.sendall((json.dumps(req) + "\n").encode())
        buf = b""
        while not buf.endswith(b"\n"):
            d = s.recv(1 << 20)
            if not d:
                break
            buf += d
    finally:
        s.close()
    rep = json.loads(buf)
    if not rep.get("ok"):
        raise CtlError("%s: %s" % (cmd, rep.get("error")))
    return rep["result"]


class Checks:
    """Counts assertions; a failed check is reported, not raised, so one run
    shows every problem."""

    def __init__(self, name):
        self.name = name
        self.passed = 0
        self.failed = 0

    def check(self, cond, what):
        if cond:
            self.passed += 1
            print("ok    %s" % what, flush=True)
        else:
            self.failed += 1
            print("FAIL  %s" % what, flush=True)
        return cond

    def finish(self):
        print("%s: %d passed, %d failed" % (self.name, self.passed, self.failed))
        print("%d passed, %d failed" % (self.passed, self.failed))
        sys.exit(0 if self.failed == 0 and self.passed > 0 else 1)


class _Lab:
    """tools/lab/lab.sh up with args on __enter__, always torn down (on exit,
    SIGINT or SIGTERM, e.g. a meson time-out); skip (77) when not root."""

    def __init__(self, name, args, quiet=False):
        # private (0700, ours): lab.sh refuses a directory someone else made
        self.dir = tempfile.mkdtemp(prefix="lockstep-test-%s-" % name)
        self.args = ["--dir", self.dir, "--build", BUILD] + list(args)
        self.out = subprocess.DEVNULL if quiet else None
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, self._on_signal)

    def _on_signal(self, signum, frame):
        self.down()
        sys.exit(128 + signum)

    def __enter__(self):
        need_root("needs root (DPDK runtime files, network namespaces)")
        try:
            subprocess.run([LAB, "up"] + self.args, check=True, stdout=self.out)
        except BaseException:
            self.down()  # a half-started lab must not outlive the test
            raise
        return self

    def __exit__(self, *exc):
        self.down()
        return False

    def down(self):
        subprocess.run([LAB, "down", "--dir", self.dir], check=False, stdout=self.out)

    def sock(self, i):
        return os.path.join(self.dir, "n%d.sock" % i)

    def pid(self, i):
        with open(os.path.join(self.dir, "n%d.pid" % i)) as f:
            return int(f.read())

    def log(self, i):
        with open(os.path.join(self.dir, "n%d.log" % i)) as f:
            return f.read()

    def log_tail(self, i, lines=25):
        """The end of node i's log, indented, for a failed check's report."""
        return "".join("    | " + l for l in self.log(i).splitlines(True)[-lines:])

    def exit_status(self, i, timeout=10):
        """Node i's exit status once it has exited (lab.sh writes n<i>.rc;
        128+N: killed by signal N), None if still running after timeout."""
        path = os.path.join(self.dir, "n%d.rc" % i)
        if not wait_until(lambda: os.path.exists(path) and os.path.getsize(path) > 0, timeout):
            return None
        with open(path) as f:
            return int(f.read())


class Daemon:
    """One lockstepd on virtual devices (no PCI, no hugepages), for tests that
    need a single daemon rather than a lab: cfg is written to DIR/NAME.json,
    the output goes to DIR/NAME.log, and the EAL gets a file prefix of its
    own (default "ls" NAME pid) so runs never share DPDK runtime files.

    start() and stop() (SIGTERM, SIGKILL after a time-out; returns the exit
    status, also kept in .rc), or a with block around both. run() instead
    runs it to its exit with the output captured, for a daemon that must
    refuse to start."""

    def __init__(self, cfg, dir, name, prefix=None):
        self.cfg_path = os.path.join(dir, name + ".json")
        self.log_path = os.path.join(dir, name + ".log")
        self.prefix = prefix or "ls%s%d" % (name, os.getpid())
        self.sock = cfg.get("control", {}).get("socket")
        # a test's peers never go to (or come from) the host's state directory
        cfg.setdefault("control", {}).setdefault("peers_file", "")
        self.proc, self.rc, self._log = None, None, None
        with open(self.cfg_path, "w") as f:
            json.dump(cfg, f)

    def argv(self):
        return [LOCKSTEPD, "--no-pci", "--no-huge", "-m", "256", "--lcores", "0@(0,1)",
                "--file-prefix", self.prefix, "--", "--config", self.cfg_path]

    def start(self):
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen(self.argv(), stdout=self._log, stderr=subprocess.STDOUT)
        return self

    def stop(self, timeout=15):
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.rc = self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.rc = self.proc.wait()
            self.proc = None
            self._log.close()
        return self.rc

    def run(self, timeout=60):
        return subprocess.run(self.argv(), capture_output=True, text=True, timeout=timeout)

    def log(self):
        with open(self.log_path) as f:
            return f.read()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False


class Lab(_Lab):
    """A mesh of N lockstepd over memif or veth (lab.sh up --nodes N)."""

    def __init__(self, nodes, transport, interval_us=100000, paths=4, tag=None, lcores=1):
        super().__init__(tag or transport,
                         ["--nodes", str(nodes), "--transport", transport,
                          "--interval-us", str(interval_us), "--paths", str(paths),
                          "--lcores", str(lcores)])
        self.nodes = nodes
        self.transport = transport
        self.interval_s = interval_us / 1e6


class FabricLab(_Lab):
    """lockstep-fabric plus one lockstepd per host (lab.sh up --topo FILE);
    extra lab.sh options in args."""

    def __init__(self, topo_file, name, args=(), quiet=False):
        super().__init__(name, ["--topo", topo_file] + list(args), quiet)

    @property
    def fab(self):
        return os.path.join(self.dir, "fabric", "ctl.sock")


def leaf_spine(leaves, spines, hosts_per_leaf, link, host_link, ipv6=True, links=None):
    """A topology for lockstep-fabric: spineS and leafL switches, hosts h1..
    numbered leaf by leaf (host k of leaf L at 10.L.0.k/24, fd00:L::k/64),
    every leaf joined to every spine. link/host_link are the layered
    defaults; links optionally gives per-link overrides by "leafL-spineS"."""
    sw = [{"name": "spine%d" % s, "role": "spine", "ipv4": "10.255.0.%d" % s,
           "ipv6": "fd00:ff::%d" % s} for s in range(1, spines + 1)]
    sw += [{"name": "leaf%d" % l, "role": "leaf", "ipv4": "10.255.1.%d" % l,
            "ipv6": "fd00:ff::1:%d" % l} for l in range(1, leaves + 1)]
    lk = []
    for l in range(1, leaves + 1):
        for s in range(1, spines + 1):
            e = {"a": "leaf%d" % l, "b": "spine%d" % s}
            e.update((links or {}).get("leaf%d-spine%d" % (l, s), {}))
            lk.append(e)
    hosts = []
    for l in range(1, leaves + 1):
        for k in range(1, hosts_per_leaf + 1):
            h = {"name": "h%d" % (len(hosts) + 1), "leaf": "leaf%d" % l,
                 "ipv4": "10.%d.0.%d/24" % (l, k)}
            if ipv6:
                h["ipv6"] = "fd00:%d::%d/64" % (l, k)
            hosts.append(h)
    if not ipv6:
        for x in sw:
            del x["ipv6"]
    return {"defaults": {"link": dict(link), "host_link": dict(host_link)},
            "convergence_ms": 0, "switches": sw, "links": lk, "hosts": hosts}


def all_synced(socks):
    """Every daemon synced to one and the same reference (at start-up each is
    briefly its own reference, until it hears a lower id)."""
    try:
        st = [call(s, "sync")["state"] for s in socks]
    except (OSError, CtlError, KeyError):
        return False
    return (all(s["status"] in ("synced", "reference") for s in st) and
            len({s["ref_id"] for s in st}) == 1 and
            sum(s["status"] == "reference" for s in st) == 1)


def fleet_readings(ref_sock, socks):
    """At one TSC instant T: the reference's clock at T (= true fleet time, from
    its simulated clock's ground truth) and each daemon's `sync` reply for T.
    Every process on the host reads the same TSC, so the comparison is exact."""
    tsc = call(ref_sock, "clock")["tsc"]
    truth = call(ref_sock, "clock", {"tsc": tsc})["truth_at"]["local_ns"]
    return truth, [call(s, "sync", {"tsc": tsc}) for s in socks]


def last_words(log_path, name, n=40):
    """Print the last n lines of a test's process log (a case that failed:
    its temporary directory goes with it)."""
    try:
        with open(log_path) as f:
            print("# %s: the processes' last words:\n%s" % (name, "".join(f.readlines()[-n:])),
                  flush=True)
    except OSError:
        pass


def memif(i, role, path):
    """A memif vdev on a plain (not abstract) socket file."""
    return "net_memif%d,role=%s,id=0,socket=%s,socket-abstract=no" % (i, role, path)


def bridge_ports(tmp, host, mac, ipv4, host_memif="host.memif"):
    """lockstepd's two ports in the bridge tests: "host", a memif server at
    TMP/HOST_MEMIF that lockstep-load sends into, and "fab", its link to the
    emulator's host HOST."""
    return [{"name": "host", "role": "host",
             "dev": memif(0, "server", os.path.join(tmp, host_memif))},
            {"name": "fab", "mac": mac, "ipv4": ipv4,
             "dev": memif(1, "client", "%s/fabric/%s.sock" % (tmp, host))}]


class BridgeRig:
    """The data-path tests' setup: the emulator, one lockstepd bridging a
    memif host port to one of its hosts, lockstep-load on both sides (it
    sends into the host port, its sink sits at another emulator host).
    Processes log to TMP/case.log; a with block stops them all, and on an
    exception prints their last words (a lockstepd that died says why).

    cpus: {"fabric", "lsd", "load"} EAL --lcores strings."""

    def __init__(self, tmp, name, cpus, tag):
        self.tmp, self.name, self.cpus, self.tag = tmp, name, cpus, tag
        self.fsock = os.path.join(tmp, "fabric", "ctl.sock")
        self.procs = []
        os.makedirs(os.path.join(tmp, "fabric"), exist_ok=True)
        self.log_path = os.path.join(tmp, "case.log")
        self.logs = open(self.log_path, "a")

    def _eal(self, binary, who, name=None):
        return [binary, "--no-pci", "--no-huge", "-m", "512", "--lcores", self.cpus[who],
                "--file-prefix", "%s%s%d" % (self.tag, name or who, os.getpid())]

    def _start(self, argv):
        p = subprocess.Popen(argv, stdout=self.logs, stderr=subprocess.STDOUT)
        self.procs.append(p)
        return p

    def fabric(self, topo, args=()):
        """The emulator on TOPO (a dict); True once its socket is up."""
        path = os.path.join(self.tmp, "topo.json")
        with open(path, "w") as f:
            json.dump(topo, f)
        self._start(self._eal(FABRIC, "fabric") +
                    ["--", "--topo", path, "--dir", os.path.join(self.tmp, "fabric"),
                     "--socket", self.fsock] + list(args))
        return wait_until(lambda: os.path.exists(self.fsock), 20)

    def lockstepd(self, cfg):
        """lockstepd on CFG (a dict, written beside the log); its control
        socket once up, else None."""
        path = os.path.join(self.tmp, cfg["node"]["name"] + ".json")
        with open(path, "w") as f:
            json.dump(cfg, f)
        # a prefix per node: several may run in one rig
        self._start(self._eal(LOCKSTEPD, "lsd", "lsd" + cfg["node"]["name"]) +
                    ["--", "--config", path])
        sock = cfg["control"]["socket"]
        if wait_until(lambda: os.path.exists(sock), 20):
            return sock
        self.logs.flush()
        last_words(self.log_path, self.name)
        return None

    def load(self, sink_host, args, host_memif="host.memif"):
        """lockstep-load from the host port (TMP/HOST_MEMIF) to emulator
        host SINK_HOST."""
        return self._start(self._eal(LOAD, "load", "load" + sink_host) +
                           ["--vdev", memif(0, "client", os.path.join(self.tmp, host_memif)),
                            "--vdev", memif(1, "client", "%s/fabric/%s.sock" %
                                            (self.tmp, sink_host)),
                            "--", "--tx", "net_memif0", "--rx", "net_memif1"] + list(args))

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc):
        if exc_type is not None:
            self.logs.flush()
            last_words(self.log_path, self.name)
        stop_all(self.procs)
        self.logs.close()
        return False


def wait_until(pred, timeout, step=0.1):
    end = time.time() + timeout
    while time.time() < end:
        if pred():
            return True
        time.sleep(step)
    return pred()


def path_totals(sock, peer):
    """{path index: counters} for one peer of one daemon."""
    r = call(sock, "path", {"peer": peer})
    return {p["path"]: p for p in r["paths"]}
