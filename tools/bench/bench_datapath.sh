#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Benchmark (not a test): lockstepd's data path (the bridge: host port ->
# parse -> flow table -> steer/pace/slice -> fabric port) forwarding rate on
# one core, against dpdk-testpmd --forward-mode=macswap on the same vdevs and
# core, in one run, for several cases:
#
#   64      64-byte IPv4 TCP-shaped frames, BENCH_FLOWS distinct flows
#   1500    the same with 1500-byte frames
#   pace    64-byte TCP, one slice with flow_bps 10e9: every frame goes
#           through the pacing wheel, none is held long
#   steer   64-byte frames, half RoCEv2 spread over paths 0-3 (source port
#           rewritten, ICRC and UDP checksum updated), half IPv6 UDP pinned
#           to path 2 (flow label rewritten)
#   mix     64-byte 802.1Q frames, 32 slices (one per VID 1..32), half
#           RoCEv2 (spread), half TCP-shaped
#   full    issue 25's line as written, pacing and steering on together:
#           the steer traffic and policy, every frame in a slice with
#           flow_bps 10e9 (so through the pacing wheel, as in pace)
#   full1500  the same with 1500-byte frames
#   cc      the steer traffic with its RoCEv2 in a DCQCN slice that is also
#           notification point: QP tracking and the reaction point per frame
#           (no CNP arrives: the cost CC adds to every frame, against steer)
#
# Host port: net_pcap rx_pcap=FILE,infinite_rx=1 with one frame per flow
# (tools/bench/gen_flows_pcap.py), so every flow comes back once per pass and
# the flow table holds BENCH_FLOWS flows. Fabric port: net_null no-rx=1 (a TX
# sink). testpmd gets the same two vdevs and forwards port 0 -> port 1. The
# pcap PMD's cost (an mbuf allocated and the frame copied per RX) is in both
# numbers. lockstepd is measured from the bridge counter tx_fabric over
# BENCH_SECS after the flow table is full; testpmd from port 1's per-second
# Tx-pps (first 2 samples skipped). Cycles/packet = the core's clock / rate.
#
#   sudo tools/bench/bench_datapath.sh                 # from the repo root
#   LS_BUILD=build BENCH_SECS=5 BENCH_CASES="64 mix" sudo -E tools/bench/bench_datapath.sh
#
# Memory: net_pcap keeps every frame of the pcap in an mbuf, so each
# contestant needs BENCH_FLOWS + 64k mbufs (a 4 KB page each with --no-huge:
# 4.3 GB for 1 M flows) plus the flow table; -m is sized from BENCH_FLOWS
# (5.7 GB for 1 M; override: BENCH_MEM, MB). Starting a contestant (filling
# the pool, loading the pcap) takes about a minute on a loaded 2-vCPU VM.
#
# BENCH_LCORES="1 2" runs lockstepd on each number of data-path lcores in
# turn (bridge.lcores: the lead on BENCH_CORE, the second on BENCH_CTL_CORE,
# the soft spread), each against the same testpmd run; a row per number.
# On the lab's 2 vCPUs the second lcore shares its CPU with the control
# thread, and the lead reads, copies (net_pcap) and sends every frame.
#
# BENCH_SPREAD=rss runs the rows of more than one lcore on the RSS spread
# instead: the host port gets a queue per lcore, each replaying its own
# pcap, the frames split as a NIC's RSS would split them under lockstepd's
# settings (gen_flows_pcap.py QUEUES); the fabric port's net_null a queue
# per lcore. Each lcore reads and writes its own queues (pcap has no RSS
# hash in its mbufs: every frame's owner is checked in software, and
# spread_out shows any that were not its own).
#
# BENCH_BASE=<commit> also measures that commit's lockstepd (built once in a
# temporary worktree, tools/bench/lib.sh) in the same invocation, and
# BENCH_ROUNDS=N (default 1, 2 with a base) repeats every case: each round
# runs base, today, then testpmd, so the machine's drift shows as spread
# within each contestant. The table gives today's means; a line per case
# gives every run, both ratios to testpmd and today / base.
#
# BENCH_HUGE=1 runs both contestants on 2 MB hugepages instead, as DPDK runs
# in production (mbufs packed, not one per 4 KB page; the flow table's random
# lines no longer a TLB miss each). It reserves the pages itself (root) and
# gives them back at the end; -m shrinks to what the packed pool needs.
set -euo pipefail

# lib.sh for bench_base_build only: the helpers below replace its fail and ctl
. "$(dirname "$0")/lib.sh"
BENCH_NAME=bench_datapath
LS_BUILD=${LS_BUILD:-./build}
DAEMON=$LS_BUILD/app/lockstepd/lockstepd
CTL=$LS_BUILD/tools/lockstepctl/lockstepctl
TESTPMD=${TESTPMD:-dpdk-testpmd}
PY=/usr/bin/python3
GEN=$(dirname "$0")/gen_flows_pcap.py
CORE=${BENCH_CORE:-1}          # the data-path core for both contestants
CTL_CORE=${BENCH_CTL_CORE:-0}  # testpmd's main lcore (it does not forward)
SECS=${BENCH_SECS:-10}
FLOWS=${BENCH_FLOWS:-1048576}
CASES=${BENCH_CASES:-"64 1500 pace steer full full1500 mix cc"}
NLCS=${BENCH_LCORES:-1}
SPREAD=${BENCH_SPREAD:-soft}
MBUFS=$((FLOWS + 65536))
# mbufs (a 2,176-byte buffer + headers: one per 4 KB page with --no-huge) +
# flow table (~300 B/flow) + 1 GB slack
# (a flow table per data-path lcore)
MAXLC=$(echo $NLCS | tr ' ' '\n' | sort -n | tail -n 1)
MEM=${BENCH_MEM:-$(( (MBUFS * 4096 + MAXLC * FLOWS * 384) / 1048576 + 1024 ))}
TMP=$(mktemp -d /tmp/ls-bench-dp.XXXXXX)
SOCK=$TMP/ctl.sock
PREFIX=ls-bench-dp$$
PIDS=()

fail() { echo "bench_datapath: $*" >&2; exit 1; }
say() { echo "bench_datapath: $*" >&2; }

cleanup() {
	local rc=$?
	for p in "${PIDS[@]}"; do
		kill -KILL "$p" 2>/dev/null || true
	done
	rm -rf "$TMP" "/var/run/dpdk/$PREFIX-ls" "/var/run/dpdk/$PREFIX-pmd"
	rm -f /dev/hugepages/"$PREFIX"-* 2>/dev/null || true
	[ -z "$BASE_WT" ] || git -C "$BENCH_REPO" worktree remove --force "$BASE_WT" 2>/dev/null || true
	[ -n "${HP_WAS:-}" ] && echo "$HP_WAS" >"$HP"
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

EAL_MEM=(--no-huge -m "$MEM")
if [ -n "${BENCH_HUGE:-}" ]; then
	# ~2.4 KB per mbuf packed, the flow table and 1 GB slack
	MEM=${BENCH_MEM:-$(( (MBUFS * 2560 + MAXLC * FLOWS * 384) / 1048576 + 1024 ))}
	EAL_MEM=(-m "$MEM")
	HP=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
	HP_WAS=$(cat "$HP")
	echo $(( MEM / 2 + 64 )) >"$HP"
	[ "$(cat "$HP")" -ge $(( MEM / 2 )) ] || { echo "bench_datapath: cannot reserve $MEM MB of hugepages" >&2; echo "$HP_WAS" >"$HP"; exit 1; }
	mountpoint -q /dev/hugepages || { mkdir -p /dev/hugepages && mount -t hugetlbfs nodev /dev/hugepages; }
fi

ctl() {
	"$CTL" -s "$SOCK" call "$1"
}

[ "$(id -u)" = 0 ] || fail "must run as root"
[ -x "$DAEMON" ] || fail "no lockstepd at $DAEMON (set LS_BUILD)"
[ -x "$CTL" ] || fail "no lockstepctl at $CTL (set LS_BUILD)"
command -v "$TESTPMD" >/dev/null || fail "no $TESTPMD (apt-get install dpdk)"
avail=$(awk '/MemAvailable/ { print int($2 / 1024) }' /proc/meminfo)
[ "$avail" -gt $((MEM + 2048)) ] ||
	fail "need ~$((MEM + 2048)) MB free for $FLOWS flows, have $avail MB: lower BENCH_FLOWS"
# the core's clock (on this VM cpuinfo's MHz is the TSC rate)
HZ=$(awk -v c="$CORE" '/^processor/ { p = $3 } /^cpu MHz/ && p == c { printf "%.0f", $4 * 1e6 }' /proc/cpuinfo)
[ -n "$HZ" ] || HZ=0

# case -> "pcap kind" "frame size" "policy JSON"
case_kind() {
	case $1 in
	64|pace) echo tcp ;;
	1500) echo tcp ;;
	steer|cc|full|full1500) echo steer ;;
	mix) echo mix ;;
	*) fail "unknown case $1 (64 1500 pace steer mix cc full full1500)" ;;
	esac
}
case_size() { case $1 in 1500|full1500) echo 1500 ;; *) echo 64 ;; esac; }
case_policy() {
	local roce='{"name": "roce", "match": {"roce": true}, "path": {"mode": "spread", "paths": [0, 1, 2, 3]}}'
	local v6='{"name": "v6", "match": {"dst": "fd00::/16", "proto": "udp"}, "path": {"mode": "pin", "paths": [2]}}'
	case $1 in
	64|1500) echo '{}' ;;
	pace) echo '{"slices": [{"name": "paced", "flow_bps": 10e9, "match": {"proto": "tcp"}}]}' ;;
	steer) echo "{\"flows\": [$roce, $v6]}" ;;
	full|full1500) echo "{\"slices\": [{\"name\": \"paced\", \"flow_bps\": 10e9,
		\"match\": {\"proto\": \"udp\"}}], \"flows\": [$roce, $v6]}" ;;
	cc) echo "{\"slices\": [{\"name\": \"rdma\", \"match\": {\"roce\": true},
		\"cc\": {\"mode\": \"dcqcn\", \"np\": true}}], \"flows\": [$roce]}" ;;
	mix)
		local s="" v
		for v in $(seq 32); do
			s="$s${s:+, }{\"name\": \"vlan$v\", \"match\": {\"vid\": $v}}"
		done
		echo "{\"slices\": [$s], \"flows\": [$roce]}" ;;
	esac
}

# Run lockstepd on one case; writes "pps flows table_bytes paced/s steered/s"
# to $TMP/ls.out (not in a subshell, so cleanup sees its pid).
run_lockstepd() {
	local name=$1 pcap=$2 policy=$3 nlc=${4:-1} i n lcores="" eal="$CORE" mb=$MBUFS
	# n lcores: the pool holds mbufs per lcore (bridge.mbufs), so each gets
	# a share of the pcap's frames plus room, and the EAL runs both cores
	local hdev="net_pcap0,rx_pcap=$pcap,infinite_rx=1" fdev="net_null0,no-rx=1"
	if [ "$nlc" -gt 1 ]; then
		lcores="\"lcores\": [$CORE, $CTL_CORE], \"spread\": \"$SPREAD\","
		eal="$CTL_CORE,$CORE"
		mb=$((MBUFS / nlc + 16384))
	fi
	if [ "$nlc" -gt 1 ] && [ "$SPREAD" = rss ]; then
		[ -f "$pcap.rss$nlc.0" ] || {
			say "splitting $(basename "$pcap") over $nlc queues as RSS would"
			"$PY" "$GEN" "$pcap.rss$nlc" "$PCAP_KIND" "$FLOWS" "$PCAP_SIZE" "$nlc" >/dev/null
		}
		hdev="net_pcap0,infinite_rx=1"
		for i in $(seq 0 $((nlc - 1))); do
			hdev="$hdev,rx_pcap=$pcap.rss$nlc.$i"
		done
	fi
	cat >"$TMP/bench.json" <<EOF
{
  "node": {"name": "bench", "id": 1},
  "ports": [{"name": "host", "role": "host", "lcore": $CORE,
             "dev": "$hdev"},
            {"name": "fab", "dev": "$fdev", "mac": "02:00:00:00:00:03",
             "ipv4": "10.200.0.3/24", "lcore": $CORE}],
  "bridge": {"host_port": "host", "fabric_port": "fab", "link_bps": 10000000000000, $lcores
             "max_flows": $FLOWS, "mbufs": $mb, "policy_file": "",
             "policy": $policy},
  "control": {"socket": "$SOCK"},
  "idle": {"backoff": false},
  "log": {"level": "warning"}
}
EOF
	rm -f "$SOCK"
	"$DAEMON" --no-pci "${EAL_MEM[@]}" --file-prefix "$PREFIX-ls" -l "$eal" \
		-- --config "$TMP/bench.json" >"$TMP/ls.log" 2>&1 &
	LPID=$!
	PIDS+=("$LPID")
	# loading the pcap into mbufs takes a while for 1 M frames
	for i in $(seq 3000); do
		[ -S "$SOCK" ] && ctl bridge >/dev/null 2>&1 && break
		kill -0 "$LPID" 2>/dev/null || { cat "$TMP/ls.log" >&2; fail "lockstepd failed to start ($name)"; }
		sleep 0.1
	done
	ctl bridge >/dev/null 2>&1 || { cat "$TMP/ls.log" >&2; fail "lockstepd has no bridge ($name)"; }
	# warm-up: until the flow table holds every flow (one pass), then 1 s
	for i in $(seq 600); do
		n=$(ctl bridge | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["flows"])')
		[ "$n" -ge "$FLOWS" ] && break
		sleep 0.1
	done
	sleep 1
	ctl bridge >"$TMP/b0.json"
	t0=$(date +%s.%N)
	sleep "$SECS"
	ctl bridge >"$TMP/b1.json"
	t1=$(date +%s.%N)
	ctl slices >"$TMP/sl.json"
	[ -n "${BENCH_PERF:-}" ] && perf_lockstepd "$LPID" "$name"
	kill -TERM "$LPID"
	wait "$LPID" || fail "lockstepd exited with status $? (log: $(tail -n 5 "$TMP/ls.log"))"
	"$PY" - "$TMP/b0.json" "$TMP/b1.json" "$t0" "$t1" "$name" "$FLOWS" "$TMP/sl.json" <<'EOF'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
sl = json.load(open(sys.argv[7]))
sl = sl.get("slices", []) if isinstance(sl, dict) else sl
busy = sum(1 for x in sl if x.get("stats", {}).get("sent_pkts", 0) > 0)
dt = float(sys.argv[4]) - float(sys.argv[3])
name, want = sys.argv[5], int(sys.argv[6])
ca, cb = a["counters"], b["counters"]
d = lambda k: cb[k] - ca[k]
bad = {k: cb[k] for k in ("flows_full", "pace_drops", "wheel_full", "slice_drops",
                         "tx_drops_fabric", "bad_ip", "not_ip") if cb[k]}
sys.stderr.write("bench_datapath: %s: lockstepd tx_fabric %.0f/s (rx_host %.0f/s), flows %d of %d "
                 "(flows_new %d, aged %d), paced %.0f/s, steered %.0f/s, flow table %d B, "
                 "%d of %d slices sent, spread %s (handed between lcores %.0f/s)%s\n" % (
                 name, d("tx_fabric") / dt, d("rx_host") / dt, b["flows"], want,
                 cb["flows_new"], cb["flows_aged"], d("paced") / dt, d("steered") / dt,
                 b["flow_table_bytes"], busy, len(sl), b["spread"]["mode"],
                 d("spread_out") / dt, ", nonzero: %s" % bad if bad else ""))
print("%.0f %d %d %.0f %.0f" % (d("tx_fabric") / dt, b["flows"], b["flow_table_bytes"],
                               d("paced") / dt, d("steered") / dt))
EOF
} >"$TMP/ls.out"

# Optional (BENCH_PERF=1): 3 s of perf timer sampling on the running lockstepd,
# top symbols (the VM has no PMU counters; cpu-clock sampling works).
perf_lockstepd() {
	command -v perf >/dev/null || { say "no perf"; return 0; }
	perf record -q -e cpu-clock -p "$1" -o "${BENCH_PERF_OUT:-$TMP/perf.data}" -- sleep 3 >/dev/null 2>&1 || return 0
	say "$2: perf, share of lockstepd's samples by object, then by symbol" \
		"(DPDK's shared libraries have no symbols: net_pcap is the PMD's RX copy)"
	perf report -q -i "${BENCH_PERF_OUT:-$TMP/perf.data}" --no-children --sort dso 2>/dev/null |
		grep -v '^$' | head -n 6 >&2 || true
	perf report -q -i "${BENCH_PERF_OUT:-$TMP/perf.data}" --no-children --sort dso,symbol 2>/dev/null |
		grep -v '^$' | head -n 12 >&2 || true
}

# testpmd macswap on the same pcap and core; writes port 1's mean Tx-pps to
# $TMP/pmd.out.
run_testpmd() {
	local pcap=$2
	bench_testpmd "$SECS" "$TMP/pmd.log" --no-pci "${EAL_MEM[@]}" --file-prefix "$PREFIX-pmd" \
		-l "$CTL_CORE,$CORE" --main-lcore "$CTL_CORE" \
		--vdev "net_pcap0,rx_pcap=$pcap,infinite_rx=1" --vdev "net_null0,no-rx=1" -- \
		--forward-mode=macswap --nb-cores=1 --stats-period 1 --total-num-mbufs=$MBUFS \
		--no-lsc-interrupt
	# port 1's per-second Tx-pps; skip the first two samples, average the rest
	awk '/NIC statistics for port/ { for (i = 1; i < NF; i++) if ($i == "port") p = $(i + 1) }
	     /Tx-pps:/ && p == 1 { print $2 }' "$TMP/pmd.log" |
		awk 'NR > 2 { s += $1; n++ } END { if (n) printf "%.0f", s / n; else print 0 }' \
		>"$TMP/pmd.out"
}

BASE_BUILD=""
[ -z "${BENCH_BASE:-}" ] || { bench_base_build "$BENCH_BASE"; }
ROUNDS=${BENCH_ROUNDS:-$([ -n "$BASE_BUILD" ] && echo 2 || echo 1)}
say "core $CORE ($(awk "BEGIN { printf \"%.2f\", $HZ / 1e9 }") GHz), ${SECS}s per run," \
	"$FLOWS flows, $MBUFS mbufs, -m $MEM, cases: $CASES"
declare -A PCAPS
RESULTS=()
for c in $CASES; do
	kind=$(case_kind "$c")
	size=$(case_size "$c")
	pcap=${PCAPS[$kind-$size]:-}
	if [ -z "$pcap" ]; then
		pcap=$TMP/$kind-$size.pcap
		say "writing $FLOWS $size-byte $kind frames to $pcap"
		"$PY" "$GEN" "$pcap" "$kind" "$FLOWS" "$size"
		PCAPS[$kind-$size]=$pcap
	fi
	PCAP_KIND=$kind PCAP_SIZE=$size
	declare -A TODAY_RUNS=() BASE_RUNS=() LAST=()
	pmd_runs=""
	for r in $(seq "$ROUNDS"); do
		for nlc in $NLCS; do
			if [ -n "$BASE_BUILD" ]; then
				DAEMON=$BASE_BUILD/app/lockstepd/lockstepd CTL=$BASE_BUILD/tools/lockstepctl/lockstepctl
				run_lockstepd "$c (base $BASE_NAME, round $r)" "$pcap" "$(case_policy "$c")" "$nlc"
				read -r ls_pps _ <"$TMP/ls.out"
				BASE_RUNS[$nlc]="${BASE_RUNS[$nlc]:-} $ls_pps"
			fi
			DAEMON=$LS_BUILD/app/lockstepd/lockstepd CTL=$LS_BUILD/tools/lockstepctl/lockstepctl
			run_lockstepd "$c${BASE_BUILD:+ (today, round $r)}" "$pcap" "$(case_policy "$c")" "$nlc"
			read -r ls_pps nflows tbytes paced steered <"$TMP/ls.out"
			TODAY_RUNS[$nlc]="${TODAY_RUNS[$nlc]:-} $ls_pps"
			LAST[$nlc]="$nflows $tbytes $paced $steered"
		done
		run_testpmd "$c" "$pcap"
		pmd_pps=$(cat "$TMP/pmd.out")
		[ "$pmd_pps" -gt 0 ] || { tail -n 30 "$TMP/pmd.log" >&2; fail "no Tx-pps samples from testpmd ($c)"; }
		say "$c: testpmd macswap $pmd_pps pkt/s"
		pmd_runs="$pmd_runs $pmd_pps"
	done
	pmd_pps=$(bench_mean $pmd_runs)
	for nlc in $NLCS; do
		ls_pps=$(bench_mean ${TODAY_RUNS[$nlc]})
		read -r nflows tbytes paced steered <<<"${LAST[$nlc]}"
		RESULTS+=("$c $size $ls_pps $pmd_pps $nflows $tbytes $paced $steered $nlc")
		[ "$ROUNDS" -gt 1 ] || [ -n "$BASE_BUILD" ] || continue
		awk -v c="$c" -v k="$nlc" -v t="${TODAY_RUNS[$nlc]}" -v b="${BASE_RUNS[$nlc]:-}" \
			-v p="$pmd_runs" -v bn="${BASE_NAME:-}" 'function mean(s, a, n, i, x) {
				n = split(s, a, " "); for (i = 1; i <= n; i++) x += a[i]; return n ? x / n : 0 }
			BEGIN { line = sprintf("bench_datapath: %s, %d lcore(s): today%s, testpmd%s", c, k, t, p)
			line = line sprintf("; today / testpmd %.3f", mean(t) / mean(p))
			if (b != "") line = line sprintf("; base %s%s, base / testpmd %.3f; today / base %.3f",
				bn, b, mean(b) / mean(p), mean(t) / mean(b))
			print line }' >&2
	done
done

echo "bench_datapath: core $CORE, ${SECS}s each, $FLOWS flows; pkt/s, cycles/pkt at $HZ Hz"
printf '%-6s %5s %3s %12s %8s %12s %8s %6s %9s %8s %12s %12s\n' case bytes lcs lockstepd \
	cyc/pkt testpmd cyc/pkt ratio flows B/flow paced/s steered/s
for r in "${RESULTS[@]}"; do
	read -r c size ls pmd nflows tbytes paced steered nlc <<<"$r"
	awk -v c="$c" -v s="$size" -v l="$ls" -v p="$pmd" -v n="$nflows" -v b="$tbytes" \
		-v f="$FLOWS" -v pa="$paced" -v st="$steered" -v hz="$HZ" -v k="$nlc" 'BEGIN {
		printf "%-6s %5d %3d %12d %8.0f %12d %8.0f %6.3f %9d %8.1f %12d %12d\n", c, s, k, l,
			l ? hz / l : 0, p, p ? hz / p : 0, p ? l / p : 0, n, b / (f * k), pa, st }'
done
