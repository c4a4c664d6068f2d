#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Integration: lockstepd's per-flow pacing measured at a receiver.

  lockstep-load TX --memif--> host port  lockstepd  fabric port --memif--> lockstep-load RX
  (one process, CPU 1)                  (bridge, CPU 0)

One slice paces each of its flows at flow_bps. lockstep-load offers every
flow 25% more than that (OVERLOAD), so each flow is always backlogged at
lockstepd and what leaves is the pacer's own rate: a pacer that is off, or
set to another rate, shows at the receiver. lockstepd drops the excess as a
shaper's queue limit (bridge.pace_max_delay_us: 1.5 frame periods, at least
200 ms), so every flow keeps a frame waiting.

Three cases (issue 25's 1 / 1k / 100k flows), each checked against the
issue's target, rate error <= 0.5% (issue 25 item 3):

  case   flows   flow_bps   frame   frames per flow per 100 ms
  1      1       200 Mb/s   1500 B  1667
  1k     1000    200 kb/s   250 B   10 (a 10 ms period: whole periods a window)
  100k   100000  2560 b/s   128 B   0.25 (250k frames/s in all)

- aggregate rate over every complete 100 ms window (frames arriving in the
  window over 100 ms) against flows x flow_bps: all three cases;
- per-flow rate over each 100 ms window, frames in the window over 100 ms:
  checked for 1 flow. With 1k flows a window holds 10 frames, so that
  figure moves by one frame in ten (10%) whatever the pacer does: it is
  reported, not checked. What is checked per flow and window there is the
  rate inside the window (bytes after its first frame over its first-to-last
  span), which has no such quantisation. With 100k flows a window holds
  0 or 1 frames of a flow: no per-flow rate exists at 100 ms;
- per-flow rate over the whole measured run (bytes after the first frame
  over first-to-last arrival), every flow: all three cases.

Measuring starts when every flow's queue at lockstepd has filled (settle)
and ends when TX ends. A last run sets the policy's flow_bps 1% above what
the checks expect and asserts that the same checks then fail.

The machine is shared: when another process holds a polling thread's CPU,
frames bunch up, and a window's edges or the run's ends show the machine,
not the pacer. The test reads both polling threads' run-queue waits every
20 ms (/proc/PID/task/PID/schedstat) and judges a window only when both
waited at most 0.25 ms around its edges (half of 0.5% of 100 ms) and, where
the flows' phases matter, in the first period; the run only when the waits
around its ends are at most 0.25% of it and none is over 10 ms. Everything
else is printed as "not checked" with its figure; when nothing could be
judged at all, the test reports SKIP (77), never a pass.

LS_PACING_CASES=1,1k,100k,wrong picks runs; LS_PACING_KEEP=1 keeps the
reports and logs.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "lab"))
import lslab  # noqa: E402

LOCKSTEPD = os.path.join(lslab.BUILD, "app", "lockstepd", "lockstepd")
LOAD = os.path.join(lslab.BUILD, "app", "load", "lockstep-load")
OVERLOAD = 1.25     # offered / paced: every flow stays backlogged at lockstepd
TARGET = 0.005      # issue 25 item 3: rate error over 100 ms <= 0.5%
# A polling thread kept off its CPU for w ms across a window's edge shifts
# up to w ms of frames from one 100 ms window to the next: w / 100 ms of
# error that is the machine's (other processes), not the pacer's (a wait
# inside a window delays frames within it; the pacer catches up). A window
# is judged when both polling threads waited at most half the target's
# share of it around each of its edges.
WINDOW_WAIT_MS = 0.5 * TARGET * 100
EDGE_S = 0.02       # around an edge: one sample interval either side
# Over the run, a wait while the span begins or ends makes its first or last
# frames late by up to its length: the run is judged when the waits around
# both ends are at most half the target's share of the span. In between the
# pacer's clock catches up after a wait, as long as its frames wait for it
# (200 ms queue limit) and no ring overflows meanwhile (a memif ring of
# 4096 frames holds 16 ms at 250k frames/s): no sample may hold 10 ms.
RUN_WAIT_FRAC = 0.5 * TARGET
RUN_STALL_MS = 10
MIN_WINDOWS = 10    # fewer clean windows than this say nothing about the rest

CASES = [
    # name, flows, --proto, --family, frame bytes, flow_bps, TX seconds
    ("1 flow", 1, "roce", "4", 1500, 200e6, 6),
    ("1k flows", 1000, "roce,udp,tcp", "4,6", 250, 200e3, 6),
    ("100k flows", 100000, "udp", "4", 128, 2560, 7),
]


class Rig:
    """lockstepd with two memif server ports, and lockstep-load as their client."""

    def __init__(self, tmp, tag):
        self.tmp, self.tag = tmp, tag
        self.sock = os.path.join(tmp, "ctl.sock")
        self.hsock = os.path.join(tmp, "host.memif")
        self.fsock = os.path.join(tmp, "fab.memif")
        self.proc = None

    def start(self, flows, flow_bps, period_s):
        # a flow's queue limit: 1.5 frame periods, so each flow always has
        # a frame waiting, and at least 200 ms, so frames wait through the
        # moments another process holds lockstepd's CPU and the pacer's
        # clock (exact, not restarted while frames wait) catches up after
        # them; the wheel's horizon covers it
        max_delay_us = int(max(200000, 1.5e6 * period_s))
        slot_ns = max(100, int(max_delay_us * 1000 * 2 / 65536))
        # what waits in the wheel (a queue limit of each flow) and the slice
        mbufs = min(4194304, int(flows * (max_delay_us / 1e6 / period_s + 1) * 1.2) + 16384)
        cfg = {
            "node": {"name": "pace", "id": 1},
            "ports": [
                {"name": "host", "role": "host", "rx_desc": 4096, "tx_desc": 4096,
                 "dev": "net_memif0,role=server,id=0,socket=%s,socket-abstract=no,"
                        "rsize=12" % self.hsock},
                {"name": "fab", "rx_desc": 4096, "tx_desc": 4096,
                 "dev": "net_memif1,role=server,id=0,socket=%s,socket-abstract=no,"
                        "rsize=12" % self.fsock,
                 "mac": "02:77:00:00:00:03", "ipv4": "10.77.0.3/24"},
            ],
            "bridge": {"host_port": "host", "fabric_port": "fab", "link_bps": 40000000000,
                       "max_flows": max(4096, flows * 2), "pace_max_delay_us": max_delay_us,
                       "wheel_slot_ns": slot_ns, "mbufs": mbufs,
                       "policy_file": os.path.join(self.tmp, "policy.json"),
                       "policy": {"slices": [{"name": "paced", "flow_bps": int(flow_bps),
                                              "qlen": 16384, "match": {}}]}},
            "control": {"socket": self.sock},
        }
        path = os.path.join(self.tmp, "pace.json")
        # a lockstepd that keeps its peer list keeps it here, not in the host's
        # state directory (older ones do not know the key)
        cfg["control"]["peers_file"] = ""
        with open(path, "w") as f:
            json.dump(cfg, f)
        if subprocess.run([LOCKSTEPD, "--", "--config", path, "--check-config"],
                          capture_output=True).returncode != 0:
            del cfg["control"]["peers_file"]
            with open(path, "w") as f:
                json.dump(cfg, f)
        for p in (self.sock, cfg["bridge"]["policy_file"]):
            if os.path.exists(p):
                os.unlink(p)
        mem = 512 + mbufs * 3 // 1024   # MB: the pool's mbufs are about 2.3 KB
        log = open(os.path.join(self.tmp, "lockstepd.log"), "a")
        self.proc = subprocess.Popen(
            [LOCKSTEPD, "--no-pci", "--no-huge", "-m", str(mem), "--lcores", "0@0",
             "--file-prefix", self.tag + "d", "--", "--config", path],
            stdout=log, stderr=subprocess.STDOUT)
        return lslab.wait_until(self.up, 30)

    def up(self):
        try:
            lslab.call(self.sock, "bridge")
            return True
        except (OSError, lslab.CtlError, ValueError):
            return False

    def status(self):
        return lslab.call(self.sock, "bridge")

    def stop(self):
        if self.proc is None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def load(self, name, flows, proto, family, size, flow_bps, secs, settle_ms):
        report = os.path.join(self.tmp, "report-%d.json" % flows)
        # memif clients in zero-copy mode: lockstepd reads and writes our
        # mbufs in place (zero-copy shares memory as one file per segment)
        cmd = [LOAD, "--no-pci", "--no-huge", "--single-file-segments", "-m", "768",
               "--lcores", "0@1", "--file-prefix", self.tag + "l",
               "--vdev", "net_memif0,role=client,id=0,socket=%s,socket-abstract=no,"
                         "rsize=12,zero-copy=yes" % self.hsock,
               "--vdev", "net_memif1,role=client,id=0,socket=%s,socket-abstract=no,"
                         "rsize=12,zero-copy=yes" % self.fsock,
               "--", "--tx", "net_memif0", "--rx", "net_memif1", "--flows", str(flows),
               "--proto", proto, "--family", family, "--size", str(size),
               "--rate", repr(flow_bps * OVERLOAD), "--duration", str(secs),
               # first frames over the paced period: each flow keeps the
               # phase of its first frame at the pacer, so the paced phases
               # are even and the aggregate smooth (spread over the shorter
               # offered period they would leave a gap in each paced period)
               "--spread-us", str(int(size * 8 / flow_bps * 1e6)),
               "--settle-ms", str(settle_ms), "--linger-ms", "300", "--detail", "1",
               "--report-flows", "0", "--report", report]
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        cw = CpuWait([self.proc.pid, p.pid])
        try:
            _, stderr = p.communicate(timeout=secs + 60)
        finally:
            cw.finish()
        t_end = time.monotonic()
        with open(os.path.join(self.tmp, "load.log"), "a") as f:
            f.write("== %s\n%s\n%s\n" % (name, " ".join(cmd), stderr))
        if p.returncode != 0:
            print(stderr[-3000:])
            return None
        with open(report) as f:
            rep = json.load(f)
        # our clock at the report's zero: its times are from its start
        rep["t0"], rep["cpu"] = t_end - rep["elapsed_s"], cw
        return rep


class CpuWait:
    """Samples, every 20 ms, how long each process's main thread (its polling
    lcore: both run their loop on the main lcore) has waited for a CPU:
    /proc/PID/task/PID/schedstat, second field, run-queue wait in ns. The
    files stay open and each sample is two preads: the sampler runs on the
    pollers' CPUs, so it must take next to nothing from them."""

    def __init__(self, pids):
        self.pids, self.samples, self.stop = pids, [], False
        self.fds = []
        for pid in pids:
            try:
                self.fds.append(os.open("/proc/%d/task/%d/schedstat" % (pid, pid), os.O_RDONLY))
            except OSError:
                self.fds.append(None)
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    @staticmethod
    def wait_ns(fd):
        try:
            return int(os.pread(fd, 128, 0).split()[1]) if fd is not None else None
        except (OSError, ValueError, IndexError):
            return None

    def run(self):
        while not self.stop:
            self.samples.append((time.monotonic(), [self.wait_ns(fd) for fd in self.fds]))
            time.sleep(0.02)

    def finish(self):
        self.stop = True
        self.t.join()
        for fd in self.fds:
            if fd is not None:
                os.close(fd)

    def longest(self, t0, t1):
        """The largest wait (ms) of one process in one sample interval."""
        worst = 0.0
        for (ta, wa), (tb, wb) in zip(self.samples, self.samples[1:]):
            if tb >= t0 and ta <= t1:
                for x, y in zip(wa, wb):
                    if x is not None and y is not None:
                        worst = max(worst, (y - x) / 1e6)
        return worst

    def during(self, t0, t1):
        """Each process's wait (ms) between monotonic times t0 and t1, from
        the samples just outside them (None when not sampled)."""
        out = []
        for i in range(len(self.pids)):
            pts = [(t, w[i]) for t, w in self.samples if w[i] is not None]
            a = [w for t, w in pts if t <= t0] or [w for t, w in pts[:1]]
            b = [w for t, w in pts if t >= t1] or [w for t, w in pts[-1:]]
            out.append((b[0] - a[-1]) / 1e6 if a and b else None)
        return out


def worst_of(*errs):
    """The error furthest from 0, with its sign."""
    return max(errs, key=abs)


def err(x, want):
    return x / want - 1.0


def cpu_gates(rep, flows, period):
    """(waits over the run in ms, run judged?, [window k judged?], waits in
    the first period) from the polling threads' run-queue waits (CpuWait)."""
    rx, t0, cw = rep["rx"], rep["t0"], rep["cpu"]
    m, w = rx["measured"], rx["windows"]
    # A paced flow keeps, for good, the phase its first frame had at the
    # pacer; those go out over the first period. A wait then makes some
    # flows' phases late by up to its length, and unless a window holds a
    # whole number of periods (each flow then has the same count in every
    # window, whatever its phase) every later window's aggregate moves by up
    # to wait / 100 ms as those flows' frames cross its edges: such windows
    # are judged only if the first period was clean too.
    start = cw.during(t0 - 0.05, t0 + period + 0.05)
    periods = w["ms"] / 1e3 / period
    phases_ok = flows == 1 or abs(periods - round(periods)) < 1e-6 or \
        all(x is not None and x <= WINDOW_WAIT_MS for x in start)
    a, b = t0 + m["from_s"], t0 + m["to_s"]
    run = cw.during(a, b)
    ends = [x + y if x is not None and y is not None else None
            for x, y in zip(cw.during(a - 0.1, a + 0.1), cw.during(b - 0.1, b + 0.1))]
    span_ms = (m["to_s"] - m["from_s"]) * 1e3
    run_ok = all(x is not None and x <= RUN_WAIT_FRAC * span_ms for x in ends) and \
        cw.longest(a - 0.5, b) <= RUN_STALL_MS
    clean = []
    for k in range(len(w["bytes"])):
        a = t0 + w["from_s"] + k * w["ms"] / 1e3
        edges = [cw.during(e - EDGE_S, e + EDGE_S) for e in (a, a + w["ms"] / 1e3)]
        clean.append(phases_ok and all(x is not None and y is not None and
                                       x + y <= WINDOW_WAIT_MS for x, y in zip(*edges)))
    return run, run_ok, clean, start


def judge(rep, flows, size, flow_bps, run_ok, clean, busy):
    """One run's figures: [(what, error, verdict)], verdict "check" (held
    to the target) or the reason it is reported and not checked (busy)."""
    rx = rep["rx"]
    agg = flows * flow_bps
    fs, w = rx["flows_summary"], rx["windows"]
    out = [("aggregate rate over the measured run",
            err(rx["measured"]["rate_bps"], agg), "check" if run_ok else busy)]
    if fs["rate_bps"] and fs["rate_bps"]["flows"] == flows:
        out.append(("per-flow rate over the run, worst of %d flows" % flows,
                    worst_of(err(fs["rate_bps"]["min"], flow_bps),
                             err(fs["rate_bps"]["max"], flow_bps)),
                    "check" if run_ok else busy))
    ms = w["ms"] / 1e3
    verdict = "check" if sum(clean) >= MIN_WINDOWS else busy
    per_win = 0.1 * flow_bps / (size * 8)       # frames of a flow per window

    def worst(keys, want, per_flow):
        """Errors of the windows with the CPUs, and of the others."""
        good, bad = [], []
        for k, ok in enumerate(clean):
            vals = [w[key][k] if per_flow else w[key][k] * 8 / ms for key in keys]
            if any(v is None for v in vals):
                continue
            (good if ok else bad).append(worst_of(*(err(v, want) for v in vals)))
        return good, bad

    rows = [("aggregate rate per 100 ms window", ["bytes"], agg, False, verdict)]
    # one frame more or less moves a flow's count in a window by 1 / per_win:
    # below 200 frames a window, counting cannot resolve 0.5%
    rows.append(("per-flow rate per 100 ms window (frames counted)",
                 ["flow_min_bps", "flow_max_bps"], flow_bps, True,
                 verdict if per_win >= 200 else
                 "%.1f frames per flow per window: counting cannot resolve 0.5%%" % per_win))
    if per_win >= 2:
        rows.append(("per-flow rate inside 100 ms windows (first-to-last span)",
                     ["span_min_bps", "span_max_bps"], flow_bps, True, verdict))
    for what, keys, want, per_flow, v in rows:
        good, bad = worst(keys, want, per_flow)
        if good:
            out.append(("%s, worst of %d windows with the CPUs" % (what, len(good)),
                        worst_of(*good), v))
        if bad:
            out.append(("%s, worst of %d windows without" % (what, len(bad)),
                        worst_of(*bad), busy))
    return out


def report(c, name, rep, flows, size, flow_bps, bridge):
    """Print a run's figures and check what can be judged; returns the number
    of checks against the target that were made."""
    rx, tx = rep["rx"], rep["tx"]
    bc = bridge["counters"]
    run, run_ok, clean, start = cpu_gates(rep, flows, size * 8 / flow_bps)
    print("# %s: lockstep-load sent %d frames (%.4g Mb/s offered, late %d, port full %d), "
          "received %d of %d flows (imissed %d), measured %.6g Mb/s, one-way delay p50 %s us "
          "p99 %s us" %
          (name, tx["pkts"], tx["rate_bps"] / 1e6, tx["late"], tx["port_full"], rx["pkts"],
           rx["flows_seen"], rx["port_stats"]["imissed"], rx["measured"]["rate_bps"] / 1e6,
           rx["owd_ns"] and rx["owd_ns"]["p50"] / 1e3, rx["owd_ns"] and rx["owd_ns"]["p99"] / 1e3))
    print("# %s: lockstepd rx_host %d (missed %d) tx_fabric %d pace_drops %d wheel_full %d "
          "slice_drops %d tx_drops_fabric %d" %
          (name, bc.get("rx_host", -1), bridge["host"]["rx_missed"], bc.get("tx_fabric", -1),
           bc.get("pace_drops", -1), bc.get("wheel_full", -1), bc.get("slice_drops", -1),
           bc.get("tx_drops_fabric", -1)))
    print("# %s: the polling threads (lockstepd, lockstep-load) waited for a CPU %s ms in "
          "the measured %.1f s, %s ms in the first period (the flows' phases); %d of %d "
          "windows judged (both waiting <= %.2f ms around their edges)" %
          (name, ", ".join("%.2f" % x if x is not None else "?" for x in run),
           rx["measured"]["to_s"] - rx["measured"]["from_s"],
           ", ".join("%.2f" % x if x is not None else "?" for x in start),
           sum(clean), len(clean), WINDOW_WAIT_MS))
    c.check(rx["flows_seen"] == flows, "%s: every flow arrived (%d)" % (name, rx["flows_seen"]))
    # the premise of the rate checks: lockstep-load offered more than the
    # pacer lets through (without its CPU it may not have)
    line = "%s: lockstepd held the flows to their rate (pace_drops %d of %d offered)" % (
        name, bc.get("pace_drops", 0), tx["pkts"])
    if run_ok:
        c.check(bc.get("pace_drops", 0) > 0, line)
    else:
        print("not checked  %s: the polling threads waited for a CPU (other processes)" % line)
    busy = "the polling threads waited for a CPU (other processes)"
    # The sink measures what reaches it. Frames lost after the pacer (a slice
    # queue or lockstepd's TX ring full because the sink's ring was, or the
    # sink's own misses) mean the receiver did not keep up: the rate it sees
    # is then not the pacer's, and nothing of the run is held to 0.5%.
    after = bc.get("slice_drops", 0) + bc.get("tx_drops_fabric", 0) + \
        rx["port_stats"]["imissed"]
    if after:
        run_ok, clean = False, [False] * len(clean)
        busy = ("%d frames lost after the pacer (slice_drops %d, tx_drops_fabric %d, sink "
                "imissed %d): the sink did not keep up" %
                (after, bc.get("slice_drops", 0), bc.get("tx_drops_fabric", 0),
                 rx["port_stats"]["imissed"]))
    made = 0
    for what, e, verdict in judge(rep, flows, size, flow_bps, run_ok, clean, busy):
        line = "%s: %s: %+.4f%% (target %.1f%%)" % (name, what, e * 100, TARGET * 100)
        if verdict == "check":
            c.check(abs(e) <= TARGET, line)
            made += 1
        else:
            print("not checked  %s: %s" % (line, verdict))
    return made


def main():
    c = lslab.Checks("bridge-pacing")
    lslab.need_root()
    tag = "lsp%d" % (os.getpid() % 100000)
    tmp = tempfile.mkdtemp(prefix="ls-pacing-")
    rig = Rig(tmp, tag)

    def cleanup(*_):
        rig.stop()
        for p in ("d", "l"):
            shutil.rmtree("/var/run/dpdk/%s%s" % (tag, p), ignore_errors=True)

    signal.signal(signal.SIGTERM, lambda *a: (cleanup(), sys.exit(1)))
    try:
        made = 0
        # e.g. "1k,wrong" runs the 1k case and the wrong-rate run only
        only = os.environ.get("LS_PACING_CASES", "").split(",") if \
            os.environ.get("LS_PACING_CASES") else None
        for name, flows, proto, fam, size, bps, secs in CASES:
            if only and name.split()[0] not in only:
                continue
            period = size * 8 / bps
            # a flow's queue at lockstepd fills at (OVERLOAD - 1) of its
            # rate: 4 queue limits, and a period for flows that start late
            settle_ms = int(500 + 4 * max(0.2, 1.5 * period) * 1e3 + 1000 * period)
            if not c.check(rig.start(flows, bps, period), "%s: lockstepd up" % name):
                break
            rep = rig.load(name, flows, proto, fam, size, bps, secs, settle_ms)
            bridge = rig.status()
            rig.stop()
            if not c.check(rep is not None, "%s: lockstep-load ran" % name):
                continue
            made += report(c, name, rep, flows, size, bps, bridge)
        # the checks must fail when the pacer runs at another rate than expected
        name, flows, proto, fam, size, bps, _ = CASES[0]
        if (not only or "wrong" in only) and c.check(rig.start(flows, bps * 1.01, size * 8 / bps),
                                "wrong rate: lockstepd up"):
            rep = rig.load("wrong", flows, proto, fam, size, bps, 4, 1500)
            rig.stop()
            if c.check(rep is not None, "wrong rate: lockstep-load ran"):
                _, run_ok, clean, _ = cpu_gates(rep, flows, size * 8 / bps)
                res = judge(rep, flows, size, bps, run_ok, clean,
                            "the polling threads waited for a CPU (other processes)")
                bad = ["%s %+.3f%%" % (w, e * 100) for w, e, v in res
                       if v == "check" and abs(e) > TARGET]
                if run_ok:
                    c.check(len(bad) >= 2, "policy at 1.01 x flow_bps: the checks fail (%s)" %
                            "; ".join(bad))
                    made += 1
                else:
                    print("not checked  policy at 1.01 x flow_bps (%s): the polling threads "
                          "waited for a CPU" % "; ".join("%s %+.3f%%" % (w, e * 100)
                                                          for w, e, _ in res[:2]))
    except Exception:
        # lockstepd went away under a case once in CI (its control socket
        # reset): its log is in tmp, which goes
        lslab.last_words(os.path.join(tmp, "lockstepd.log"), "bridge-pacing")
        raise
    finally:
        cleanup()
        if os.environ.get("LS_PACING_KEEP"):     # the reports and logs, to look into
            print("# kept %s" % tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    if made == 0 and c.failed == 0:
        # honest about a busy machine: nothing was measured against 0.5%
        print("SKIP: the polling threads never had their CPUs long enough to measure "
              "0.5%% (%d functional checks passed)" % c.passed)
        sys.exit(77)
    c.finish()


if __name__ == "__main__":
    main()
