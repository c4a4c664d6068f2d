#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Benchmark (not a test): Debian's linuxptp ptp4l as a clock-sync baseline to
# compare lockstep against. Two network namespaces joined by a veth pair,
# ptp4l -S (software timestamping) over UDPv4 at one end as master, at the
# other as slave. Both namespaces read the same CLOCK_REALTIME, so the
# slave's reported "master offset" is its measurement error, not a real
# clock difference. Both run with free_running 1 (the slave also slaveOnly),
# so neither ever steps or slews the shared system clock.
#
#   sudo tools/bench/bench_ptp4l.sh              # from the repo root
#   BENCH_SECS=120 BENCH_LOAD=both sudo -E tools/bench/bench_ptp4l.sh
#
# Sync and Delay_Req at 8/s (logSyncInterval -3). With free_running, ptp4l
# 3.x prints one offset per freq_est_interval (at least 1 s), not one per
# Sync, so the samples are every 8th sync's offset (raw, not averaged), about
# one per second. Each variant runs BENCH_SECS from the slave's first
# offset; the first BENCH_SKIP (10) s of offsets (path-delay filter filling)
# are discarded. Percentiles are nearest-rank, so with ~50 samples p99 is
# the maximum. BENCH_LOAD: 0 (default) idle, 1 CPU-busy (a busy loop per
# CPU), both (idle, then CPU-busy).
set -euo pipefail

PY=/usr/bin/python3
SECS=${BENCH_SECS:-60}
SKIP=${BENCH_SKIP:-10}
LOAD=${BENCH_LOAD:-0}
LOG_SYNC=${BENCH_LOG_SYNC:--3}
NSM=lsptpm$$                   # master namespace
NSS=lsptps$$                   # slave namespace
VM=lsptpm$$                    # veth ends, one in each namespace
VS=lsptps$$
TMP=$(mktemp -d /tmp/ls-bench-ptp.XXXXXX)
PIDS=()

fail() { echo "bench_ptp4l: $*" >&2; exit 1; }

cleanup() {
	local rc=$?
	for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	ip netns del "$NSM" 2>/dev/null || true
	ip netns del "$NSS" 2>/dev/null || true
	rm -rf "$TMP"
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

[ "$(id -u)" = 0 ] || fail "must run as root (network namespaces, apt-get)"
case $LOAD in 0 | 1 | both) ;; *) fail "BENCH_LOAD must be 0, 1 or both" ;; esac
[ "$SECS" -gt $((SKIP + 5)) ] || fail "BENCH_SECS ($SECS) must exceed BENCH_SKIP ($SKIP) + 5"
command -v ip >/dev/null || apt-get install -y iproute2 >&2 || fail "cannot install iproute2"
command -v ptp4l >/dev/null || apt-get install -y linuxptp >&2 || fail "cannot install linuxptp"

# --- topology: master 10.77.0.1 -- veth -- 10.77.0.2 slave ------------------
ip netns add "$NSM"
ip netns add "$NSS"
ip link add "$VM" type veth peer name "$VS"
ip link set "$VM" netns "$NSM"
ip link set "$VS" netns "$NSS"
ip -n "$NSM" addr add 10.77.0.1/24 dev "$VM"
ip -n "$NSS" addr add 10.77.0.2/24 dev "$VS"
for ns in "$NSM:$VM" "$NSS:$VS"; do
	ip -n "${ns%%:*}" link set lo up
	ip -n "${ns%%:*}" link set "${ns#*:}" up
done

# summary_interval = logSyncInterval keeps per-sample "master offset" lines
# (a longer one prints rms/max summaries instead); freq_est_interval 0 is the
# shortest ptp4l accepts and sets the sample rate under free_running (1/s).
# uds_address: the default /var/run/ptp4l is a file path, shared across
# network namespaces.
common_cfg() {
	cat <<EOF
[global]
free_running		1
logSyncInterval		$LOG_SYNC
logMinDelayReqInterval	$LOG_SYNC
summary_interval	$LOG_SYNC
freq_est_interval	0
uds_address		$TMP/$1.sock
EOF
}
{ common_cfg master; echo "priority1		127"; } >"$TMP/master.cfg"
{ common_cfg slave; echo "slaveOnly		1"; } >"$TMP/slave.cfg"

VERSION=$(ptp4l -v)
echo "bench_ptp4l: ptp4l $VERSION, kernel $(uname -r), $(nproc) CPUs," \
	"UDPv4 over veth, software timestamps, logSyncInterval $LOG_SYNC" >&2

# run VARIANT LOADPROCS: one measurement; prints the summary line.
run() {
	local name=$1 nload=$2 mpid spid i
	local mlog=$TMP/$name.master.log slog=$TMP/$name.slave.log
	PIDS=()
	for ((i = 0; i < nload; i++)); do
		( while :; do :; done ) &
		PIDS+=($!)
	done
	ip netns exec "$NSM" ptp4l -S -4 -m -f "$TMP/master.cfg" -i "$VM" >"$mlog" 2>&1 &
	mpid=$!
	PIDS+=("$mpid")
	ip netns exec "$NSS" ptp4l -S -4 -m -f "$TMP/slave.cfg" -i "$VS" >"$slog" 2>&1 &
	spid=$!
	PIDS+=("$spid")
	# Announce timeouts + BMCA take ~10 s before the slave reports an offset.
	for ((i = 0; i < 600; i++)); do
		grep -q "master offset" "$slog" && break
		kill -0 "$mpid" 2>/dev/null || { cat "$mlog" >&2; fail "$name: master ptp4l exited"; }
		kill -0 "$spid" 2>/dev/null || { cat "$slog" >&2; fail "$name: slave ptp4l exited"; }
		sleep 0.1
	done
	grep -q "master offset" "$slog" || { tail -n 20 "$mlog" "$slog" >&2; fail "$name: no offset in 60 s"; }
	read -r -a st0 < <(grep '^cpu ' /proc/stat)
	sleep "$SECS"
	read -r -a st1 < <(grep '^cpu ' /proc/stat)
	kill -0 "$spid" 2>/dev/null || { tail -n 20 "$slog" >&2; fail "$name: slave ptp4l died"; }
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	PIDS=()
	# Whole-machine CPU use over the run (all processes, ours included), so an
	# "idle" number taken on a busy machine shows as such.
	"$PY" - "$slog" "$SKIP" "$name" "${st0[*]:1:8}" "${st1[*]:1:8}" <<'EOF'
import math, re, sys
log, skip, name = sys.argv[1], float(sys.argv[2]), sys.argv[3]
s0, s1 = ([int(x) for x in a.split()] for a in sys.argv[4:6])
d = [b - a for a, b in zip(s0, s1)]
busy = 100.0 * (1 - (d[3] + d[4]) / max(1, sum(d)))  # idle + iowait
rx = re.compile(r"^ptp4l\[([\d.]+)\]: master offset\s+(-?\d+) s(\d) freq\s+([+-]?\d+) "
                r"path delay\s+(-?\d+)")
rows, odd = [], []
for line in open(log):
    m = rx.match(line)
    if m:
        rows.append((float(m[1]), int(m[2]), int(m[3]), int(m[5])))
    elif re.search(r"timed out|FAULT|bad timestamp|without timestamp|jump", line):
        odd.append(line.strip())
if not rows:
    sys.exit("bench_ptp4l: %s: no offsets parsed" % name)
t_first = rows[0][0]
rows = [r for r in rows if r[0] >= t_first + skip]
if len(rows) < 2:
    sys.exit("bench_ptp4l: %s: only %d offsets after the %g s skip" % (name, len(rows), skip))
def pct(v, p):  # nearest rank
    v = sorted(v)
    return v[max(0, math.ceil(p / 100 * len(v)) - 1)]
off = [r[1] for r in rows]
a = [abs(x) for x in off]
span = rows[-1][0] - rows[0][0]
print("bench_ptp4l: %s: %d offsets over %.0f s: |offset| p50 %d ns, p99 %d ns, max %d ns; "
      "mean offset %+.0f ns; path delay p50 %d ns; machine CPU %.0f%% busy" % (
      name, len(off), span, pct(a, 50), pct(a, 99), max(a), sum(off) / len(off),
      pct([r[3] for r in rows], 50), busy))
for l in odd[:5]:
    sys.stderr.write("bench_ptp4l: %s: ptp4l said: %s\n" % (name, l))
if odd:
    sys.stderr.write("bench_ptp4l: %s: %d warning/fault lines in the slave log\n" % (name, len(odd)))
EOF
}

case $LOAD in
0) run idle 0 ;;
1) run cpu-busy "$(nproc)" ;;
both) run idle 0; run cpu-busy "$(nproc)" ;;
esac
