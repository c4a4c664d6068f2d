#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Benchmark (not a test) of lockstep-fabric, run as root from the repo root:
#
#   LS_BUILD=build BENCH_SECS=5 tools/bench/bench_fabric.sh
#   BENCH_BASE=HEAD~1 tools/bench/bench_fabric.sh   # the forwarding rate of that commit too
#
# 1. Forwarding rate on one core, against dpdk-testpmd --forward-mode=io on
#    the same vdevs and core in the same run. The issue asks for memif; on a
#    2-vCPU machine a memif generator and sink must time-share one CPU and
#    cannot load either contestant (the script measures and prints that
#    ceiling), so both contestants get the same CPU-bound setup instead:
#    host h1 is a pcap replayed forever, h2 a null port. Topology: one leaf,
#    two hosts, 100 Gb/s links (the model never limits).
# 2. Fidelity: the emulator busy-polling on core 1, two lockstepd on core 0
#    probing each other across it (an idle path); the emulator reports how
#    late each delivery left versus the time its model computed
#    (status.delivery_lateness_ns): the error it adds to configured
#    propagation + serialization. Today's build only, also with BENCH_BASE.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

SECS=${BENCH_SECS:-5}
TESTPMD=${TESTPMD:-dpdk-testpmd}
bench_init bench_fabric fab

cat > "$TMP/topo.json" <<'JSON'
{"defaults": {"link": {"delay_ns": 1000, "rate_bps": 100000000000, "buffer_bytes": 16777216, "mtu": 9000}},
 "switches": [{"name": "leaf1", "role": "leaf", "ipv4": "10.255.1.1"}],
 "links": [],
 "hosts": [{"name": "h1", "leaf": "leaf1", "ipv4": "10.1.0.1/24"},
           {"name": "h2", "leaf": "leaf1", "ipv4": "10.1.0.2/24"}]}
JSON

memif() { echo "net_memif0,role=$1,id=0,socket=$2,socket-abstract=no"; }
pmd() { # pmd NAME LCORES VDEV... -- testpmd args
	local name=$1 lcores=$2; shift 2
	local vdevs=()
	while [ "$1" != "--" ]; do vdevs+=(--vdev "$1"); shift; done
	shift
	"$TESTPMD" --lcores "$lcores" --no-pci --no-huge -m 512 --file-prefix "$PRE$name" \
		"${vdevs[@]}" -- --total-num-mbufs=16384 --stats-period 1 "$@" \
		> "$TMP/$name.log" 2>&1 &
	PIDS+=($!)
}
# fabric_up BUILD TOPO NAME SETTLE: BUILD's emulator busy-polling on core 1
# (control socket $TMP/fab.ctl), given SETTLE seconds and then up to 10 s
# more for its socket (a loaded machine starts it slowly).
fabric_up() {
	local pid
	"$1/app/fabric/lockstep-fabric" -l 1 --no-pci --no-huge -m 512 --file-prefix "$PRE$3" \
		-- --topo "$2" --dir "$TMP" --socket "$TMP/fab.ctl" --sample-us 0 \
		> "$TMP/$3.log" 2>&1 &
	pid=$!
	PIDS+=("$pid")
	sleep "$4"
	for _ in $(seq 100); do
		[ -S "$TMP/fab.ctl" ] && return 0
		kill -0 "$pid" 2>/dev/null || { tail -n 20 "$TMP/$3.log" >&2; fail "lockstep-fabric failed to start"; }
		sleep 0.1
	done
	fail "lockstep-fabric: no control socket after 10 s"
}
fab_tx() { # the emulator's transmitted packets so far
	"$1/tools/lockstepctl/lockstepctl" -s "$TMP/fab.ctl" call status |
		/usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["counters"]["tx_pkts"])'
}
rx_pps() { # median of the sink's last Rx-pps samples
	grep -a "Rx-pps" "$TMP/sink.log" | tail -n "$SECS" | awk '{print $2}' | sort -n |
		awk '{a[NR]=$1} END {print (NR ? a[int((NR+1)/2)] : 0)}'
}
stop_all() {
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	PIDS=()
	rm -f "$TMP"/*.sock "$TMP/fab.ctl"
}
gen_and_sink() { # gen and sink on CPU 0 (two lcores each: testpmd needs a forwarding lcore)
	pmd sink '0@0,1@0' "$(memif client "$TMP/h2.sock")" -- --forward-mode=rxonly
	pmd gen '0@0,1@0' "$(memif client "$TMP/h1.sock")" -- --forward-mode=txonly \
		--txpkts=64 --tx-ip=10.1.0.1,10.1.0.2 --tx-udp=49152,862
	sleep $((SECS + 3))
}

# Rig ceiling over memif on this machine: generator straight into the sink.
pmd sink '0@0,1@0' "$(memif server "$TMP/h2.sock")" -- --forward-mode=rxonly
sleep 1
pmd gen '0@0,1@0' "$(memif client "$TMP/h2.sock")" -- --forward-mode=txonly --txpkts=64 \
	--tx-ip=10.1.0.1,10.1.0.2 --tx-udp=49152,862
sleep $((SECS + 3))
rig=$(rx_pps)
stop_all
echo "bench_fabric: memif rig ceiling (txonly -> rxonly, both on CPU 0): $rig pkt/s" \
	"(two busy pollers time-share one CPU: too slow to load either contestant)"

# CPU-bound forwarding on one core, the same vdevs for both contestants: h1 is
# a pcap of 64-byte UDP packets (10.1.0.1 -> 10.1.0.2) replayed forever, h2 a
# null port that drops what it is sent.
bench_pcap udp "$TMP/h1.pcap"
H1="net_pcap0,rx_pcap=$TMP/h1.pcap,infinite_rx=1"
H2="net_null0,no-rx=1"
/usr/bin/python3 - "$TMP/topo.json" "$H1" "$H2" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
t["hosts"][0]["dev"], t["hosts"][1]["dev"] = sys.argv[2], sys.argv[3]
json.dump(t, open(sys.argv[1], "w"))
PY

pmd io '0@0,1@1' "$H1" "$H2" -- --forward-mode=io
sleep $((SECS + 3))
io=$(grep -a -A 12 "statistics for port 1" "$TMP/io.log" | grep -a "Tx-pps" | tail -n "$SECS" |
	awk '{print $2}' | sort -n | awk '{a[NR]=$1} END {print (NR ? a[int((NR+1)/2)] : 0)}')
stop_all

# forward LABEL BUILD: BUILD's emulator on core 1 for SECS; pkt/s in $RESULT.
forward() {
	local a b
	fabric_up "$2" "$TMP/topo.json" fab 2
	a=$(fab_tx "$2")
	t0=$(date +%s.%N)
	sleep "$SECS"
	b=$(fab_tx "$2")
	t1=$(date +%s.%N)
	RESULT=$(awk -v a="$a" -v b="$b" -v t0="$t0" -v t1="$t1" 'BEGIN { printf "%.0f", (b - a) / (t1 - t0) }')
	stop_all
	[ -z "$1" ] || echo "bench_fabric:   lockstep-fabric$1: $RESULT pkt/s"
}
bench_rounds forward
fab=$TODAY

echo "bench_fabric: forwarding 64-byte packets h1 -> leaf -> h2 on core 1, ${SECS} s, pcap in / null out:"
echo "bench_fabric:   testpmd io:       $io pkt/s"
echo "bench_fabric:   lockstep-fabric:  $fab pkt/s"
awk -v a="$fab" -v b="$io" 'BEGIN { if (b > 0) printf "bench_fabric:   ratio fabric / io: %.3f\n", a / b }'
bench_summary pkt/s "$io" "testpmd io"

# Fidelity: the emulator alone on core 1, busy; two lockstepd on core 0.
cat > "$TMP/topo2.json" <<'JSON'
{"defaults": {"link": {"delay_ns": 20000, "rate_bps": 10000000000}},
 "switches": [{"name": "leaf1", "role": "leaf", "ipv4": "10.255.1.1"}],
 "links": [],
 "hosts": [{"name": "h1", "leaf": "leaf1", "ipv4": "10.1.0.1/24"},
           {"name": "h2", "leaf": "leaf1", "ipv4": "10.1.0.2/24"}]}
JSON
fabric_up "$LS_BUILD" "$TMP/topo2.json" fab2 1.5
for i in 1 2; do
	o=$((3 - i))
	cat > "$TMP/n$i.json" <<JSON
{"node": {"name": "h$i", "id": $i},
 "ports": [{"name": "p0", "dev": "$(memif client "$TMP/h$i.sock" | sed "s/net_memif0/net_memif0/")",
            "mac": "02:00:00:00:00:0$i", "ipv4": "10.1.0.$i/24"}],
 "peers": [{"name": "h$o", "addr": "10.1.0.$o"}],
 "probe": {"interval_us": 1000, "paths": 4},
 "control": {"socket": "$TMP/n$i.sock"},
 "idle": {"backoff": true, "sleep_us": 20}}
JSON
	"$LS_BUILD/app/lockstepd/lockstepd" --lcores '0@0' --no-pci --no-huge -m 256 \
		--file-prefix "${PRE}n$i" -- --config "$TMP/n$i.json" > "$TMP/n$i.log" 2>&1 &
	PIDS+=($!)
done
sleep $((SECS + 3))
"$LS_BUILD/tools/lockstepctl/lockstepctl" -s "$TMP/fab.ctl" call status > "$TMP/st.json"
stop_all
# The machine's own share: how often a bare busy loop on core 1 loses the CPU.
cat > "$TMP/jit.c" <<'C'
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <x86intrin.h>
static uint64_t ns(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC_RAW, &t); return t.tv_sec * 1000000000ULL + t.tv_nsec; }
int main(int argc, char **argv)
{
	uint64_t t0 = ns(), c0 = __rdtsc(), secs = argc > 1 ? atoi(argv[1]) : 5, hz, prev, end, n = 0, g1 = 0, g10 = 0, mx = 0;
	while (ns() - t0 < 100000000ULL) ;
	hz = (__rdtsc() - c0) * 10;
	prev = __rdtsc(); end = prev + secs * hz;
	for (;;) { uint64_t t = __rdtsc(), g = t - prev; prev = t; if (t > end) break; n++;
		if (g > hz / 1000000) g1++; if (g > hz / 100000) g10++; if (g > mx) mx = g; }
	printf("%lu %lu %.1f\n", (unsigned long)g1, (unsigned long)g10, mx * 1e6 / hz);
	return 0;
}
C
jit=""
if cc -O2 -include stdlib.h -o "$TMP/jit" "$TMP/jit.c" 2>/dev/null; then
	jit=$(taskset -c 1 "$TMP/jit" "$SECS")
fi
/usr/bin/python3 - "$TMP/st.json" "$SECS" $jit <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
secs = float(sys.argv[2])
l = s["delivery_lateness_ns"]
print("bench_fabric: fidelity, idle path, emulator busy-polling on its own core: %d deliveries"
      % l["count"])
print("bench_fabric:   lateness vs the model's delivery time: p50 %d ns, p99 %d ns, p99.9 %d ns, max %d ns"
      % (l["p50"], l["p99"], l["p999"], l["max"]))
if len(sys.argv) > 5:
    print("bench_fabric:   this machine, a bare busy loop on core 1 for %d s: %s gaps > 1 us (%.0f/s), %s > 10 us, max %s us"
          % (secs, sys.argv[3], int(sys.argv[3]) / secs, sys.argv[4], sys.argv[5]))
PY
