#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Integration: fleet time reaches a real chronyd (Debian's) through its SOCK
refclock (sync.chrony_sock), and chronyd sees what fleet time says.

One lockstepd, alone, is the fleet's reference: fleet time is its own
simulated clock, the lab's true time (LS_SIM_EPOCH_NS + CLOCK_MONOTONIC_RAW)
plus a configured 2.5 ms offset and no drift. chronyd runs in the test's
directory with `-x` (it never touches the system clock) and `refclock SOCK`.
sync.chrony_offset_ns takes the lab's epoch out (true time less the system
clock, measured here at start), as an operator's would take TAI's 37 s out
for a UTC host; what is left for chronyd is 2.5 ms plus however far the
system clock and MONOTONIC_RAW moved apart since.

Checks: chronyd takes the samples (the refclock reaches, lockstepd counts
them sent with no error); every sample chronyd logged (refclocks.log, full
precision) is the expected offset, computed here from the two clocks at the
sample's own time, within 20 us (pairing CLOCK_REALTIME with the TSC, and
this VM's scheduling); chronyc's view of the source agrees in sign and size;
and with sync.chrony_offset_ns 1 ms off, chronyd sees it 1 ms off (the
offset is not ignored). A socket path nobody serves costs counted errors,
and lockstepd keeps running.

Then a node that is not the reference ("fleet"): two lockstepd across
lockstep-fabric (memif, one leaf), h1 the reference with the same clock as
above, h2 with its own clock 40 ms behind and 80 ppm fast, wandering, and
h2 feeding chronyd. Every sample must be fleet time (h1's clock: the same
2.5 ms as above), not h2's clock (which would read -40 ms and move 80 us a
second), within the tolerance plus the bound h2 reports.
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tools", "lab"))
import lslab  # noqa: E402

BUILD = os.environ.get("LS_BUILD", "build")
DAEMON = os.path.join(BUILD, "app", "lockstepd", "lockstepd")
SIM_EPOCH_NS = 1700000000000000000
OFFSET_NS = 2500000
TOL_NS = 20000


class Checks:
    def __init__(self):
        self.failed = 0
        self.passed = 0

    def check(self, ok, what):
        print("%s  %s" % ("ok   " if ok else "FAIL", what), flush=True)
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        return ok


def sys_less_raw():
    """CLOCK_REALTIME less CLOCK_MONOTONIC_RAW now, ns (the tighter of 5 reads)."""
    best = None
    for _ in range(5):
        a = time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW)
        r = time.clock_gettime_ns(time.CLOCK_REALTIME)
        b = time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW)
        if best is None or b - a < best[0]:
            best = (b - a, r - (a + b) // 2)
    return best[1]


def chrony_conf(d):
    path = os.path.join(d, "chrony.conf")
    with open(path, "w") as f:
        f.write("refclock SOCK %s/refclock.sock refid LSTP poll 0 precision 1e-6\n" % d)
        f.write("bindcmdaddress %s/chronyd.sock\ncmdport 0\n" % d)
        f.write("pidfile %s/chronyd.pid\nlogdir %s\nlog refclocks\n" % (d, d))
    return path


def lsd_config(d, sock, chrony_offset):
    return {
        "node": {"name": "ref", "id": 1},
        "ports": [{"name": "p0", "dev": "net_null0", "mac": "02:00:00:00:c0:01",
                   "ipv4": "10.250.0.1/24", "lcore": 1}],
        "clock": {"source": "sim", "sim": {"offset_ns": OFFSET_NS, "drift_ppm": 0.0,
                                           "wander_ns": 0.0}},
        "sync": {"chrony_sock": sock, "chrony_offset_ns": chrony_offset, "shm": ""},
        "control": {"socket": os.path.join(d, "ctl.sock")},
        "idle": {"backoff": True},
        "log": {"level": "info"},
    }


def start_lsd(d, sock, chrony_offset, tag):
    import json
    cfg = os.path.join(d, "lsd-%s.json" % tag)
    with open(cfg, "w") as f:
        json.dump(lsd_config(d, sock, chrony_offset), f)
    log = open(os.path.join(d, "lsd-%s.log" % tag), "w")
    p = subprocess.Popen([DAEMON, "--no-pci", "--no-huge", "-m", "256", "--file-prefix",
                          "ls-chrony-%d-%s" % (os.getpid(), tag), "-l", "0,1",
                          "--", "--config", cfg],
                         stdout=log, stderr=subprocess.STDOUT)
    ctl = os.path.join(d, "ctl.sock")
    ok = lslab.wait_until(lambda: os.path.exists(ctl) and _answers(ctl), 30)
    return p, ctl if ok else None


def _answers(ctl):
    try:
        lslab.call(ctl, "status")
        return True
    except Exception:
        return False


def stop(p):
    if p is not None and p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(15)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def refclock_samples(d):
    """(system time of the sample, offset s) from chronyd's refclocks.log:
    date time refid DP L P raw_offset cooked_offset dispersion."""
    out = []
    try:
        with open(os.path.join(d, "refclocks.log")) as f:
            for line in f:
                w = line.split()
                if len(w) < 9 or w[2] != "LSTP":
                    continue
                try:
                    out.append((w[0] + " " + w[1], float(w[6])))
                except ValueError:
                    pass    # a sample chronyd dropped (no offset)
    except OSError:
        pass
    return out


def offsets_within(samples, want_ns, tol_ns, d0, d1):
    """(every sample is want_ns within tol_ns, the offsets in ns): true less
    system is want + (d0 - d(t)), d having moved from d0 to d1 meanwhile."""
    lo = want_ns + min(0, d0 - d1) - tol_ns
    hi = want_ns + max(0, d0 - d1) + tol_ns
    offs = [round(o * 1e9) for _, o in samples]
    return bool(offs) and all(lo <= o <= hi for o in offs), offs


def run(c, d, chrony_offset, want_ns, tag):
    """chronyd and lockstepd with chrony_offset; every sample chronyd logs
    must be want_ns (plus the clocks' own parting) within TOL_NS."""
    ch, up = start_chronyd(d, tag)
    p = None
    try:
        if not c.check(up, "%s: chronyd is up with its SOCK refclock" % tag):
            return
        d0 = sys_less_raw()
        p, ctl = start_lsd(d, os.path.join(d, "refclock.sock"), chrony_offset, tag)
        if not c.check(ctl is not None, "%s: lockstepd up" % tag):
            return
        lslab.wait_until(lambda: len(refclock_samples(d)) >= 6, 30)
        d1 = sys_less_raw()
        st = lslab.call(ctl, "sync")
        chs = st.get("chrony") or {}
        samples = refclock_samples(d)
        c.check(len(samples) >= 6 and chs.get("sent", 0) >= 6 and chs.get("errors") == 0,
                "%s: chronyd took lockstepd's samples (%d logged; lockstepd: %s)" % (
                    tag, len(samples), chs))
        ok, offs = offsets_within(samples, want_ns, TOL_NS, d0, d1)
        c.check(ok,
                "%s: every sample chronyd logged is fleet time less the system clock, "
                "%d ns (+-%d; the clocks parted %d ns): %s" % (
                    tag, want_ns, TOL_NS, d1 - d0, offs[:8]))
        src = subprocess.run(["chronyc", "-h", os.path.join(d, "chronyd.sock"), "-n", "-c",
                              "sources"], capture_output=True, text=True, timeout=10)
        rows = [r.split(",") for r in src.stdout.splitlines() if ",LSTP," in r]
        # chronyc: the local clock less the source (ahead: positive)
        last = float(rows[0][7]) if rows else None
        c.check(last is not None and abs(-last * 1e9 - want_ns) <= TOL_NS + abs(d1 - d0),
                "%s: chronyc's last sample of LSTP is the same offset, opposite sign "
                "(local clock less the source): %s" % (tag, rows[0] if rows else src.stdout))
        # and chronyd chose it: the source it would steer the clock to ('*'
        # in `sources`; -x only keeps it from touching this machine's clock)
        def chosen():
            r = subprocess.run(["chronyc", "-h", os.path.join(d, "chronyd.sock"), "-n", "-c",
                                "sources"], capture_output=True, text=True, timeout=10)
            rows = [x.split(",") for x in r.stdout.splitlines() if ",LSTP," in x]
            return rows[0] if rows and rows[0][1] == "*" else None
        # (once: the wait for chronyd's selection, ~6 s, is the same in both)
        if tag == "aligned":
            c.check(lslab.wait_until(chosen, 30),
                    "%s: chronyd selected LSTP as its reference ('*' in chronyc sources)" % tag)
    finally:
        stop(p)
        ch.send_signal(signal.SIGTERM)
        try:
            ch.wait(10)
        except subprocess.TimeoutExpired:
            ch.kill()
        for f in ("refclocks.log", "refclock.sock", "chronyd.sock"):
            try:
                os.unlink(os.path.join(d, f))
            except OSError:
                pass


def start_chronyd(d, tag):
    ch = subprocess.Popen(["chronyd", "-x", "-d", "-u", "root", "-f", chrony_conf(d)],
                          stdout=open(os.path.join(d, "chronyd-%s.log" % tag), "w"),
                          stderr=subprocess.STDOUT)
    return ch, lslab.wait_until(lambda: os.path.exists(os.path.join(d, "refclock.sock")), 10)


def fleet(c, d, epoch):
    """chronyd on a node that is not the reference: fleet time, not its clock."""
    import json
    topo = lslab.leaf_spine(1, 1, 2, link={"delay_ns": 10000, "rate_bps": 10_000_000_000},
                            host_link={"delay_ns": 10000})
    extra = {"*": {"idle": {"backoff": True}},
             "h1": {"clock": {"source": "sim", "sim": {"offset_ns": OFFSET_NS, "drift_ppm": 0.0,
                                                         "wander_ns": 0.0}}},
             "h2": {"clock": {"source": "sim", "sim": {"offset_ns": -40000000, "drift_ppm": 80.0,
                                                         "wander_ns": 20.0}},
                    "sync": {"chrony_sock": os.path.join(d, "refclock.sock"),
                             "chrony_offset_ns": epoch, "shm": ""}}}
    topo_file, extra_file = os.path.join(d, "topo.json"), os.path.join(d, "extra.json")
    json.dump(topo, open(topo_file, "w"))
    json.dump(extra, open(extra_file, "w"))
    ch, up = start_chronyd(d, "fleet")
    try:
        if not c.check(up, "fleet: chronyd is up with its SOCK refclock"):
            return
        d0 = sys_less_raw()
        with lslab.FabricLab(topo_file, "chrony", ["--link", "memif", "--extra", extra_file],
                             quiet=True) as lab:
            h2 = lab.sock(2)

            def synced():
                try:
                    return lslab.call(h2, "sync")["state"]["status"] == "synced"
                except (OSError, lslab.CtlError):
                    return False
            if not c.check(lslab.wait_until(synced, 30), "fleet: h2 synced to h1"):
                return
            lslab.wait_until(lambda: len(refclock_samples(d)) >= 6, 30)
            st = lslab.call(h2, "sync")
            d1 = sys_less_raw()
        samples = refclock_samples(d)
        chs = st.get("chrony") or {}
        half = st["reading"]["half_ns"]
        c.check(len(samples) >= 6 and chs.get("sent", 0) >= 6 and chs.get("errors") == 0 and
                st["state"]["ref_id"] == 1 and st["state"]["status"] == "synced",
                "fleet: chronyd took h2's samples (%d logged; h2: %s, not the reference)" % (
                    len(samples), chs))
        tol = TOL_NS + max(half, 0)
        ok, offs = offsets_within(samples, OFFSET_NS, tol, d0, d1)
        c.check(ok,
                "fleet: every sample from h2 is fleet time (h1's clock) less the system clock, "
                "%d ns (+-%d: %d and h2's bound %.0f), not h2's own -40 ms: %s" % (
                    OFFSET_NS, tol, TOL_NS, half, offs[:8]))
    finally:
        ch.send_signal(signal.SIGTERM)
        try:
            ch.wait(10)
        except subprocess.TimeoutExpired:
            ch.kill()


def main():
    lslab.need_root("chronyd and lockstepd need root")
    c = Checks()
    if not shutil.which("chronyd") or not shutil.which("chronyc"):
        c.check(False, "chronyd and chronyc are installed (tools/deps: chrony)")
        return 1
    d = tempfile.mkdtemp(prefix="ls-chrony-")
    os.chmod(d, 0o700)   # chronyd refuses a command socket in a directory others can enter
    try:
        # the lab's epoch out: fleet time less chrony_offset is the system
        # clock plus OFFSET_NS (the reference's own sim offset)
        epoch = SIM_EPOCH_NS - sys_less_raw()
        run(c, d, epoch, OFFSET_NS, "aligned")
        run(c, d, epoch + 1000000, OFFSET_NS - 1000000, "1 ms off")
        # nobody at the socket: errors counted, the daemon stays up
        p, ctl = start_lsd(d, os.path.join(d, "nobody.sock"), 0, "nobody")
        try:
            ok = ctl is not None and lslab.wait_until(
                lambda: (lslab.call(ctl, "sync").get("chrony") or {}).get("errors", 0) >= 2, 10)
            c.check(ok and p.poll() is None,
                    "no chronyd at the socket: errors counted (%s), lockstepd still running" % (
                        ctl and lslab.call(ctl, "sync").get("chrony")))
        finally:
            stop(p)
        fleet(c, d, epoch)
    finally:
        if c.failed:
            for f in sorted(os.listdir(d)):
                if f.endswith(".log"):
                    lslab.last_words(os.path.join(d, f), f, 20)
        if not os.environ.get("LS_CHRONY_KEEP"):
            shutil.rmtree(d, ignore_errors=True)
    print("chrony: %d passed, %d failed" % (c.passed, c.failed))
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main())
