# SPDX-License-Identifier: BSD-3-Clause
#
# Sourced by the benchmark scripts (bench_reflector.sh, bench_sender.sh,
# bench_fabric.sh, bench_peers.sh, bench_datapath.sh and the lab-driven ones
# through bench_with_base), not run: the scratch directory and its cleanup, the
# control-socket call, the daemon's measuring window, the test pcaps, and
# BENCH_BASE.
#
# BENCH_BASE=<commit> builds that commit once in a temporary git worktree
# (the build is cached in /tmp/ls-bench-base-<hash>, the worktree removed
# right after) and measures it and today's build in the same invocation, on
# the same vdev and core, interleaved base, today, base, today ...
# (BENCH_ROUNDS rounds, default 2), so that drift on a noisy machine shows
# as a spread within each contestant instead of as a difference between
# them. Each script passes one function that measures one build;
# bench_rounds calls it in that order and bench_summary prints a line per
# contestant and today / base.

BENCH_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
LS_BUILD=${LS_BUILD:-./build}
PIDS=()
BASE_WT=""

fail() { echo "$BENCH_NAME: $*" >&2; exit 1; }

# bench_init NAME TAG: $TMP (scratch), $PRE (DPDK file-prefix stem), cleanup
# on exit; NAME starts every output line.
bench_init() {
	BENCH_NAME=$1
	TMP=$(mktemp -d "/tmp/ls-bench-$2.XXXXXX")
	PRE=ls-bench-$2$$
	trap bench_cleanup EXIT
	trap 'exit 130' INT TERM
	[ "$(id -u)" = 0 ] || fail "must run as root"
}

bench_cleanup() {
	local rc=$? p
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	[ ${#PIDS[@]} -eq 0 ] || sleep 0.5
	for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
	[ -z "$BASE_WT" ] || git -C "$BENCH_REPO" worktree remove --force "$BASE_WT" 2>/dev/null || true
	rm -rf "$TMP" /var/run/dpdk/"$PRE"*
	exit $rc
}

# ctl BUILD CMD: one control-socket request ($SOCK) with BUILD's lockstepctl.
ctl() {
	"$1/tools/lockstepctl/lockstepctl" -s "$SOCK" call "$2"
}

# bench_daemon BUILD CONFIG FILE_PREFIX LCORE: start BUILD's lockstepd
# (no hugepages) and wait for its control socket; its pid in $LPID.
bench_daemon() {
	local daemon=$1/app/lockstepd/lockstepd
	[ -x "$daemon" ] || fail "no lockstepd at $daemon (set LS_BUILD)"
	"$daemon" --no-pci --no-huge -m 1024 --file-prefix "$3" -l "$4" \
		-- --config "$2" >"$TMP/ls.log" 2>&1 &
	LPID=$!
	PIDS+=("$LPID")
	for _ in $(seq 100); do
		[ -S "$SOCK" ] && ctl "$1" status >/dev/null 2>&1 && return 0
		kill -0 "$LPID" 2>/dev/null || { cat "$TMP/ls.log" >&2; fail "lockstepd failed to start"; }
		sleep 0.1
	done
}

# bench_window BUILD: a second to settle (TSC calibration, caches), then
# status before and after $SECS into $TMP/s0.json, s1.json (and the times
# $t0, $t1); then stop the daemon.
bench_window() {
	sleep 1
	ctl "$1" status >"$TMP/s0.json"
	t0=$(date +%s.%N)
	sleep "$SECS"
	ctl "$1" status >"$TMP/s1.json"
	t1=$(date +%s.%N)
	kill -TERM "$LPID"
	wait "$LPID" || fail "lockstepd exited with status $? (log: $(tail -n 5 "$TMP/ls.log"))"
	rm -f "$SOCK"
}

# bench_pcap KIND FILE: a pcap replayed forever by net_pcap. "stamp": 256
# valid 44-byte STAMP test packets from 16 IPv4 sources to 10.9.0.1 (the
# reflector's rate-limit table is looked up as with a real mesh).
# "stamp-sync": the same as lockstepd's sender sends the first probe of a
# pair: the lockstep TLV (type 252) and a zeroed sync TLV (253, 64 bytes)
# for the reflector to fill, 136 bytes of payload. "udp": 64
# UDP packets of 64 bytes, 10.1.0.1 -> 10.1.0.2 (the emulator's h1 -> h2).
bench_pcap() {
	/usr/bin/python3 - "$@" <<'EOF'
import struct, sys

def csum(b):
    # RFC 1071: 16-bit words (an odd last byte padded), carries folded back in
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b[:len(b) & ~1]))
    s += b[-1] << 8 if len(b) & 1 else 0
    while s > 0xffff:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff

def ipv4(src, dst, u):
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(u), 0, 0x4000, 64, 17, 0, src, dst)
    return ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]

kind, out = sys.argv[1:3]
frames = []
if kind in ("stamp", "stamp-sync"):
    dst = bytes([10, 9, 0, 1])
    for i in range(256):
        src = bytes([10, 9, 0, 100 + i % 16])
        stamp = struct.pack("!IIIHH28x", i, 0, 0, 0x4101, 0)
        if kind == "stamp-sync":
            # lockstep TLV: magic "LSTP", version 1, member 0, path, node,
            # pair id, spacing, 4 MBZ; then the sync TLV, zeroed
            lt = struct.pack("!IBBHIII4x", 0x4c535450, 1, 0, i % 8, 2, i, 1000)
            stamp += struct.pack("!BBH", 0, 252, len(lt)) + lt
            stamp += struct.pack("!BBH", 0, 253, 64) + bytes(64)
        ulen = 8 + len(stamp)
        u = struct.pack("!HHHH", 49152 + i % 8, 862, ulen, 0) + stamp
        c = csum(src + dst + struct.pack("!BBH", 0, 17, ulen) + u) or 0xffff
        u = u[:6] + struct.pack("!H", c) + u[8:]
        frames.append(bytes.fromhex("020000000001020000000099") + b"\x08\x00" +
                      ipv4(src, dst, u) + u)
else:
    for i in range(64):
        u = struct.pack("!HHHH", 49152 + i, 862, 8 + 10, 0) + bytes(10)
        frames.append(bytes.fromhex("02fa00000001020000000001") + b"\x08\x00" +
                      ipv4(bytes([10, 1, 0, 1]), bytes([10, 1, 0, 2]), u) + u)
with open(out, "wb") as f:
    f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
    for i, fr in enumerate(frames):
        f.write(struct.pack("<IIII", 0, i, len(fr), len(fr)) + fr)
EOF
}

# bench_testpmd SECS LOG ARGS...: dpdk-testpmd ($TESTPMD) with ARGS, run for
# SECS + 2 s from its first statistics (its start takes a few seconds), then
# stopped; its output in LOG for the caller to read.
bench_testpmd() {
	local secs=$1 log=$2 pid
	shift 2
	"${TESTPMD:-dpdk-testpmd}" "$@" >"$log" 2>&1 &
	pid=$!
	PIDS+=("$pid")
	for _ in $(seq 3000); do
		grep -q 'Tx-pps' "$log" && break
		kill -0 "$pid" 2>/dev/null || { tail -n 30 "$log" >&2; fail "testpmd failed"; }
		sleep 0.1
	done
	sleep $((secs + 2))
	kill -INT "$pid"
	wait "$pid" || true
}

# bench_base_build COMMIT: $BASE_BUILD, the build directory of COMMIT, built
# first unless /tmp holds a complete build of that hash already. Not in a
# subshell: the cleanup must see $BASE_WT to remove the worktree.
bench_base_build() {
	local hash dir
	hash=$(git -C "$BENCH_REPO" rev-parse --verify --quiet "$1^{commit}") ||
		fail "BENCH_BASE=$1 is not a commit"
	dir=/tmp/ls-bench-base-$hash
	BASE_NAME=${hash:0:7}  # the commit built, even if a name like HEAD moves meanwhile
	# (a cache from before lockstep-load was built here lacks it: rebuilt)
	if [ -e "$dir/.bench-complete" ] && { [ -x "$dir/app/load/lockstep-load" ] ||
		! git -C "$BENCH_REPO" cat-file -e "$hash:app/load/meson.build" 2>/dev/null; }; then
		echo "$BENCH_NAME: base $1 = ${hash:0:12}: cached build $dir" >&2
		BASE_BUILD=$dir
		return
	fi
	echo "$BENCH_NAME: base $1 = ${hash:0:12}: building in $dir (a few minutes)" >&2
	rm -rf "$dir"
	BASE_WT=$TMP/base-src
	git -C "$BENCH_REPO" worktree add --detach "$BASE_WT" "$hash" >&2 ||
		fail "git worktree add failed"
	# only what the benchmarks run: the tests would double the build time
	# (commits before the emulator have none to build)
	{ meson setup "$dir" "$BASE_WT" && ninja -C "$dir" app/lockstepd/lockstepd \
		tools/lockstepctl/lockstepctl && { [ ! -d "$BASE_WT/app/fabric" ] ||
		ninja -C "$dir" app/fabric/lockstep-fabric; } && { [ ! -d "$BASE_WT/app/load" ] ||
		ninja -C "$dir" app/load/lockstep-load; }; } >"$TMP/base-build.log" 2>&1 ||
		{ tail -n 20 "$TMP/base-build.log" >&2; fail "building $1 failed"; }
	git -C "$BENCH_REPO" worktree remove --force "$BASE_WT"
	BASE_WT=""
	touch "$dir/.bench-complete"
	BASE_BUILD=$dir
}

# bench_rounds FUNC: FUNC LABEL BUILD measures one build and leaves its
# figure in $RESULT. Without BENCH_BASE: today's build BENCH_ROUNDS times
# (default once) with an empty label, so the lines read as they always
# have. With it: base and today interleaved. Figures in BASE_RES, TODAY_RES.
# BENCH_ROUND_HOOK, if set, names a function called with the round's number
# after each round (a reference such as testpmd, measured beside each).
bench_rounds() {
	local r base_build="" rounds
	BASE_RES=()
	TODAY_RES=()
	if [ -n "${BENCH_BASE:-}" ]; then
		bench_base_build "$BENCH_BASE"
		base_build=$BASE_BUILD
	fi
	rounds=${BENCH_ROUNDS:-$([ -n "$base_build" ] && echo 2 || echo 1)}
	for r in $(seq "$rounds"); do
		if [ -n "$base_build" ]; then
			"$1" " (base $BASE_NAME, round $r)" "$base_build"
			BASE_RES+=("$RESULT")
			"$1" " (today, round $r)" "$LS_BUILD"
		elif [ "$rounds" -gt 1 ]; then
			"$1" " (round $r)" "$LS_BUILD"
		else
			"$1" "" "$LS_BUILD"
		fi
		TODAY_RES+=("$RESULT")
		# a reference measured in every round (bench_reflector's testpmd)
		[ -z "${BENCH_ROUND_HOOK:-}" ] || "$BENCH_ROUND_HOOK" "$r"
	done
	TODAY=$(bench_mean "${TODAY_RES[@]}")
}

bench_mean() {
	echo "$@" | awk '{ for (i = 1; i <= NF; i++) s += $i; printf "%.0f", s / NF }'
}

# bench_summary UNIT [REF REF_NAME]: one line per contestant (mean, each
# round, share of REF) and, with BENCH_BASE, today / base.
bench_summary() {
	local unit=$1 ref=${2:-} refname=${3:-} base
	bench_summary_line "today" "$unit" "$ref" "$refname" "${TODAY_RES[@]}"
	[ ${#BASE_RES[@]} -gt 0 ] || return 0
	bench_summary_line "base $BASE_NAME" "$unit" "$ref" "$refname" "${BASE_RES[@]}"
	base=$(bench_mean "${BASE_RES[@]}")
	awk -v n="$BENCH_NAME" -v a="$TODAY" -v b="$base" 'BEGIN { if (b > 0)
		printf "%s: summary today / base: %.3f (%+.1f%%)\n", n, a / b, 100 * (a / b - 1) }'
}

bench_summary_line() {
	local who=$1 unit=$2 ref=$3 refname=$4
	shift 4
	awk -v n="$BENCH_NAME" -v who="$who" -v unit="$unit" -v ref="$ref" -v rn="$refname" \
		-v runs="$*" 'BEGIN { k = split(runs, r, " "); for (i = 1; i <= k; i++) s += r[i]
		m = s / k; line = sprintf("%s: summary %s: %.0f %s (mean of %d: %s)", n, who, m, unit, k, runs)
		if (ref > 0) line = line sprintf(", %.3f of %s", m / ref, rn)
		print line }'
}

# bench_with_base CMD...: the benchmarks that drive the lab from Python
# (bench_cc_fabric, bench_isolation, bench_contention, bench_failover,
# bench_links, bench_sync.py) run CMD once with today's build; with BENCH_BASE, first with
# that commit's build (LS_BUILD), then today's, each under a "## base" or
# "## today" heading, so both figures print in one invocation on the same
# machine. Today's harness drives both builds: a base older than a config
# key or command it uses fails at that step, and says so.
bench_with_base() {
	local rc=0
	if [ -z "${BENCH_BASE:-}" ]; then
		"$@"
		return
	fi
	bench_base_build "$BENCH_BASE"
	echo "## base $BASE_NAME ($BASE_BUILD)"
	BENCH_BASE="" LS_BUILD=$BASE_BUILD "$@" || rc=1
	echo "## today ($LS_BUILD)"
	BENCH_BASE="" LS_BUILD=$(realpath "$LS_BUILD") "$@" || rc=1
	return $rc
}
