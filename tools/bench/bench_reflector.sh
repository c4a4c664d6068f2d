#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Benchmark (not a test): lockstepd reflector packets/s on one core, against
# dpdk-testpmd --forward-mode=macswap on the same vdev and core, in one run.
#
# Both read the same pcap of valid STAMP test packets replayed forever
# (net_pcap infinite_rx=1; no tx_pcap, so TX frees the packets). The pcap
# PMD's own cost (mbuf alloc + copy on RX, free on TX) is in both numbers, so
# the ratio says how much the reflector (parse, checksum verify, rate-limit
# lookup, reflect, timestamps, checksum rewrite) costs on top of the cheapest
# possible turn-around.
#
#   sudo tools/bench/bench_reflector.sh          # from the repo root
#   LS_BUILD=/tmp/build BENCH_CORE=1 BENCH_SECS=10 sudo -E tools/bench/bench_reflector.sh
#   BENCH_BASE=HEAD~1 sudo -E tools/bench/bench_reflector.sh   # and that commit, interleaved
#   BENCH_PROBES=stamp-sync sudo -E tools/bench/bench_reflector.sh  # probes with the sync TLV
#
# BENCH_PROBES: "stamp" (default: plain RFC 8762 test packets, 44 bytes of
# payload) or "stamp-sync" (the first probe of lockstepd's pairs: the
# lockstep TLV and a zeroed sync TLV the reflector fills with its clock
# state, 136 bytes; the daemon runs with sync on, its default, so every
# reply is filled). testpmd turns the same frames around.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

TESTPMD=${TESTPMD:-dpdk-testpmd}
PY=/usr/bin/python3
CORE=${BENCH_CORE:-1}          # the data-path core for both contestants
CTL_CORE=${BENCH_CTL_CORE:-0}  # testpmd's main lcore (it does not forward)
SECS=${BENCH_SECS:-10}
bench_init bench_reflector refl
SOCK=$TMP/ctl.sock

command -v "$TESTPMD" >/dev/null || fail "no $TESTPMD (apt-get install dpdk)"

PROBES=${BENCH_PROBES:-stamp}
PCAP=$TMP/$PROBES.pcap
bench_pcap "$PROBES" "$PCAP"
DEV="net_pcap0,rx_pcap=$PCAP,infinite_rx=1"

# --- lockstepd -------------------------------------------------------------
# kernel_stamps false: on a net_pcap port lockstepd would otherwise read the
# kernel's receive stamp of every frame and send each reply by itself at its
# T3 (the lab's accurate stamps, dedce0d), a path no NIC takes; measured
# here is the NIC's: one software stamp per burst, replies in one burst.
# A base build that predates the key gets the file without it.
cat >"$TMP/bench.json" <<EOF
{
  "node": {"name": "bench", "id": 1},
  "ports": [{"name": "p0", "dev": "$DEV", "mac": "02:00:00:00:00:01",
             "ipv4": "10.9.0.1/24", "lcore": $CORE, "kernel_stamps": false}],
  "reflector": {"rate_pps": 100000000, "burst": 1000000},
  "control": {"socket": "$SOCK"},
  "idle": {"backoff": false},
  "log": {"level": "warning"}
}
EOF

sed 's/, "kernel_stamps": false//' "$TMP/bench.json" >"$TMP/bench-old.json"

# reflect LABEL BUILD: one lockstepd run; replies/s in $RESULT.
reflect() {
	local cfg=$TMP/bench.json
	grep -q kernel_stamps "$2/app/lockstepd/lockstepd" || cfg=$TMP/bench-old.json
	bench_daemon "$2" "$cfg" "$PRE-ls" "$CORE"
	bench_window "$2"
	RESULT=$("$PY" - "$TMP/s0.json" "$TMP/s1.json" "$t0" "$t1" "$1" <<'EOF'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
dt = float(sys.argv[4]) - float(sys.argv[3])
d = lambda k: b["counters"][k] - a["counters"][k]
tx = b["ports"][0]["tx_pkts"] - a["ports"][0]["tx_pkts"]
print("%.0f" % (d("tx_replies") / dt))
sys.stderr.write("bench_reflector: lockstepd%s: %.0f replies/s (port tx %.0f/s, rx %.0f/s), "
                 "rate-limited %d, tx_dropped %d, alloc_failed %d, sync TLVs filled %.0f/s\n" % (
                 sys.argv[5], d("tx_replies") / dt, tx / dt, d("rx_pkts") / dt,
                 d("rx_rate_limited"), d("tx_dropped"), d("alloc_failed"),
                 (b["counters"].get("sync_filled", 0) - a["counters"].get("sync_filled", 0)) / dt))
EOF
)
}
# testpmd after every round, so that each ratio's two sides share the
# machine's state of that minute; the ratio is of the means
PMD_RES=()
macswap() {
	local pps
	bench_testpmd "$SECS" "$TMP/pmd.log" --no-pci --no-huge -m 1024 --file-prefix "$PRE-pmd" \
		-l "$CTL_CORE,$CORE" --main-lcore "$CTL_CORE" --vdev "$DEV" -- --forward-mode=macswap \
		--nb-cores=1 --stats-period 1 --total-num-mbufs=16384 --no-lsc-interrupt
	pps=$({ grep -o 'Tx-pps: *[0-9]*' "$TMP/pmd.log" || true; } | awk '{print $2}' |
		awk 'NR > 2 { s += $1; n++ } END { if (n) printf "%.0f", s / n; else print 0 }')
	[ "$pps" -gt 0 ] || { tail -n 30 "$TMP/pmd.log" >&2; fail "no Tx-pps samples from testpmd"; }
	echo "bench_reflector: testpmd macswap (round $1): $pps pkt/s" >&2
	PMD_RES+=("$pps")
}
BENCH_ROUND_HOOK=macswap
bench_rounds reflect
ls_pps=$TODAY
pmd_pps=$(bench_mean "${PMD_RES[@]}")
[ ${#PMD_RES[@]} -eq 1 ] || echo "bench_reflector: testpmd macswap: $pmd_pps pkt/s (mean of ${#PMD_RES[@]}: ${PMD_RES[*]})" >&2

echo "bench_reflector: core $CORE, ${SECS}s each: lockstepd $ls_pps replies/s," \
	"testpmd macswap $pmd_pps pkt/s, ratio $("$PY" -c "print('%.3f' % ($ls_pps / $pmd_pps))")"
bench_summary replies/s "$pmd_pps" "testpmd macswap"
