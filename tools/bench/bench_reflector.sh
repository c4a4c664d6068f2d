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
set -euo pipefail

LS_BUILD=${LS_BUILD:-./build}
DAEMON=$LS_BUILD/app/lockstepd/lockstepd
TESTPMD=${TESTPMD:-dpdk-testpmd}
PY=/usr/bin/python3
CORE=${BENCH_CORE:-1}          # the data-path core for both contestants
CTL_CORE=${BENCH_CTL_CORE:-0}  # testpmd's main lcore (it does not forward)
SECS=${BENCH_SECS:-10}
TMP=$(mktemp -d /tmp/ls-bench-refl.XXXXXX)
SOCK=$TMP/ctl.sock
PREFIX=ls-bench-refl$$
PIDS=()

fail() { echo "bench_reflector: $*" >&2; exit 1; }

cleanup() {
	local rc=$?
	for p in "${PIDS[@]}"; do
		kill -KILL "$p" 2>/dev/null || true
	done
	rm -rf "$TMP" "/var/run/dpdk/$PREFIX-ls" "/var/run/dpdk/$PREFIX-pmd"
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# One control-socket request through lockstepctl: prints the result JSON.
ctl() {
	"$LS_BUILD/tools/lockstepctl/lockstepctl" -s "$SOCK" call "$1"
}

[ "$(id -u)" = 0 ] || fail "must run as root"
[ -x "$DAEMON" ] || fail "no lockstepd at $DAEMON (set LS_BUILD)"
command -v "$TESTPMD" >/dev/null || fail "no $TESTPMD (apt-get install dpdk)"

# 256 valid 44-byte STAMP test packets from 16 sources (IPv4), so the
# rate-limit table is looked up as it would be with a real mesh.
PCAP=$TMP/stamp.pcap
"$PY" - "$PCAP" <<'EOF'
import struct, sys

def csum(b):
    b += b"\0" * (len(b) & 1)
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff

dmac, smac = bytes.fromhex("020000000001"), bytes.fromhex("020000000099")
dst = bytes([10, 9, 0, 1])
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
    for i in range(256):
        src = bytes([10, 9, 0, 100 + i % 16])
        stamp = struct.pack("!IIIHH28x", i, 0, 0, 0x4101, 0)
        ulen = 8 + len(stamp)
        ph = src + dst + struct.pack("!BBH", 0, 17, ulen)
        u = struct.pack("!HHHH", 49152 + i % 8, 862, ulen, 0) + stamp
        c = csum(ph + u) or 0xffff
        u = u[:6] + struct.pack("!H", c) + u[8:]
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + ulen, 0, 0x4000, 64, 17, 0, src, dst)
        ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
        fr = dmac + smac + b"\x08\x00" + ip + u
        f.write(struct.pack("<IIII", 0, i, len(fr), len(fr)) + fr)
EOF
DEV="net_pcap0,rx_pcap=$PCAP,infinite_rx=1"

# --- lockstepd -------------------------------------------------------------
cat >"$TMP/bench.json" <<EOF
{
  "node": {"name": "bench", "id": 1},
  "ports": [{"name": "p0", "dev": "$DEV", "mac": "02:00:00:00:00:01",
             "ipv4": "10.9.0.1/24", "lcore": $CORE}],
  "reflector": {"rate_pps": 100000000, "burst": 1000000},
  "control": {"socket": "$SOCK"},
  "idle": {"backoff": false},
  "log": {"level": "warning"}
}
EOF
"$DAEMON" --no-pci --no-huge -m 1024 --file-prefix "$PREFIX-ls" -l "$CORE" \
	-- --config "$TMP/bench.json" >"$TMP/ls.log" 2>&1 &
LPID=$!
PIDS+=("$LPID")
for _ in $(seq 100); do
	[ -S "$SOCK" ] && ctl status >/dev/null 2>&1 && break
	kill -0 "$LPID" 2>/dev/null || { cat "$TMP/ls.log" >&2; fail "lockstepd failed to start"; }
	sleep 0.1
done
sleep 1   # let the TSC calibration and caches settle
ctl status >"$TMP/s0.json"
t0=$(date +%s.%N)
sleep "$SECS"
ctl status >"$TMP/s1.json"
t1=$(date +%s.%N)
kill -TERM "$LPID"
wait "$LPID" || fail "lockstepd exited with status $? (log: $(tail -n 5 "$TMP/ls.log"))"
ls_pps=$("$PY" - "$TMP/s0.json" "$TMP/s1.json" "$t0" "$t1" <<'EOF'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
dt = float(sys.argv[4]) - float(sys.argv[3])
d = lambda k: b["counters"][k] - a["counters"][k]
tx = b["ports"][0]["tx_pkts"] - a["ports"][0]["tx_pkts"]
print("%.0f" % (d("tx_replies") / dt))
sys.stderr.write("bench_reflector: lockstepd: %.0f replies/s (port tx %.0f/s, rx %.0f/s), "
                 "rate-limited %d, tx_dropped %d, alloc_failed %d\n" % (
                 d("tx_replies") / dt, tx / dt, d("rx_pkts") / dt, d("rx_rate_limited"),
                 d("tx_dropped"), d("alloc_failed")))
EOF
)

# --- testpmd macswap ---------------------------------------------------------
# Main lcore on CTL_CORE (prints stats), the one forwarding lcore on CORE.
"$TESTPMD" --no-pci --no-huge -m 1024 --file-prefix "$PREFIX-pmd" -l "$CTL_CORE,$CORE" \
	--main-lcore "$CTL_CORE" --vdev "$DEV" -- --forward-mode=macswap --nb-cores=1 \
	--stats-period 1 --total-num-mbufs=16384 --no-lsc-interrupt >"$TMP/pmd.log" 2>&1 &
TPID=$!
PIDS+=("$TPID")
sleep $((SECS + 2))
kill -INT "$TPID"
wait "$TPID" || true
# Per-second Tx-pps samples; skip the first two (start-up) and average the rest.
pmd_pps=$(grep -o 'Tx-pps: *[0-9]*' "$TMP/pmd.log" | awk '{print $2}' |
	awk 'NR > 2 { s += $1; n++ } END { if (n) printf "%.0f", s / n; else print 0 }')
[ "$pmd_pps" -gt 0 ] || { tail -n 30 "$TMP/pmd.log" >&2; fail "no Tx-pps samples from testpmd"; }
echo "bench_reflector: testpmd macswap: $pmd_pps pkt/s" >&2

echo "bench_reflector: core $CORE, ${SECS}s each: lockstepd $ls_pps replies/s," \
	"testpmd macswap $pmd_pps pkt/s, ratio $("$PY" -c "print('%.3f' % ($ls_pps / $pmd_pps))")"
