#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Benchmark (not a test): Session-Sender probes/s on one core, each probe
# built and timestamped individually. 64 peers x 8 paths, a coded pair per
# path every 100 us = 10.24 M probes/s requested, so the sender is the
# bottleneck and the measured rate is its ceiling.
#
#   sudo tools/bench/bench_sender.sh             # from the repo root
#   LS_BUILD=/tmp/build BENCH_CORE=1 BENCH_SECS=10 BENCH_PEERS=64 BENCH_PATHS=8 \
#       sudo -E tools/bench/bench_sender.sh
#   BENCH_BASE=HEAD~1 sudo -E tools/bench/bench_sender.sh   # and that commit, interleaved
#
# The port is net_null with no-rx=1: TX frees the packets, RX is always
# empty, so the core does nothing but send. net_null cannot answer ARP, so
# every peer has a static next-hop "mac" (no resolution needed).
#
# It also prints the memory per peer-path, from sizeof() of the daemon's
# structs (compiled here against the tree's headers; today's tree only).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

REPO=$BENCH_REPO
PY=/usr/bin/python3
CORE=${BENCH_CORE:-1}
SECS=${BENCH_SECS:-10}
NPEERS=${BENCH_PEERS:-64}
NPATHS=${BENCH_PATHS:-8}
INTERVAL_US=${BENCH_INTERVAL_US:-100}
bench_init bench_sender snd
SOCK=$TMP/ctl.sock

# --- memory per peer-path (sizeof) ----------------------------------------------
if command -v cc >/dev/null && pkg-config --exists libdpdk; then
	cat >"$TMP/sz.c" <<'EOF'
#include <stdio.h>
#include "lockstepd.h"
struct lsd_global lsd;
int main(void)
{
	printf("bench_sender: memory per peer-path: %zu B lcore-side (struct lsd_peer_path)"
	       " + %zu B control-side (struct ls_path_window), one C-heap block per peer,"
	       " + the outstanding-probe ring (%zu B an entry) + the windows' non-empty"
	       " buckets (4 B each) + clock sync's estimators; per peer %zu B + paths"
	       " (tools/bench/bench_peers.sh measures it all)\n",
	       sizeof(struct lsd_peer_path), sizeof(struct ls_path_window),
	       sizeof(struct ls_path_track), sizeof(struct lsd_peer));
	return 0;
}
EOF
	if cc -DALLOW_EXPERIMENTAL_API -w -o "$TMP/sz" "$TMP/sz.c" \
		$(for d in "$REPO"/app/lockstepd "$REPO"/drivers/clock "$REPO"/lib/*/; do
			echo "-I$d"; done) $(pkg-config --cflags libdpdk) 2>"$TMP/sz.err"; then
		"$TMP/sz"
	else
		echo "bench_sender: (sizeof probe did not compile: $(head -n 3 "$TMP/sz.err"))"
	fi
fi

# --- config ----------------------------------------------------------------------
"$PY" - "$TMP/bench.json" "$SOCK" "$CORE" "$NPEERS" "$NPATHS" "$INTERVAL_US" <<'EOF'
import json, sys
out, sock, core, npeers, npaths, ival = sys.argv[1:]
cfg = {
    "node": {"name": "bench-snd", "id": 1},
    "ports": [{"name": "p0", "dev": "net_null0,no-rx=1", "mac": "02:00:00:00:00:01",
               "ipv4": "10.9.0.1/16", "lcore": int(core)}],
    # On-link peers with a static next-hop MAC: no ARP.
    "peers": [{"name": "p%d" % i, "addr": "10.9.%d.%d" % (1 + i // 250, 1 + i % 250),
               "mac": "02:00:00:01:%02x:%02x" % (i >> 8, i & 0xff)} for i in range(int(npeers))],
    "probe": {"interval_us": int(ival), "paths": int(npaths)},
    "control": {"socket": sock},
    "idle": {"backoff": False},
    "log": {"level": "warning"},
}
json.dump(cfg, open(out, "w"), indent=1)
EOF

# send LABEL BUILD: one lockstepd run; probes/s in $RESULT.
send() {
	local resolved=0

	bench_daemon "$2" "$TMP/bench.json" "$PRE" "$CORE"
	for _ in $(seq 100); do
		[ "$(ctl "$2" status | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["n_peers"])')" = "$NPEERS" ] && break
		sleep 0.1
	done
	for _ in $(seq 50); do
		resolved=$(ctl "$2" peers | "$PY" -c 'import json,sys; print(sum(p["state"] != "resolving" for p in json.load(sys.stdin)))')
		[ "$resolved" = "$NPEERS" ] && break
		sleep 0.1
	done
	[ "$resolved" = "$NPEERS" ] || fail "only $resolved of $NPEERS peers resolved (static mac ignored?)"
	bench_window "$2"
	"$PY" - "$TMP/s0.json" "$TMP/s1.json" "$t0" "$t1" "$NPEERS" "$NPATHS" "$INTERVAL_US" "$CORE" \
		"$1" "$TMP/rate" <<'EOF'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
dt = float(sys.argv[4]) - float(sys.argv[3])
npeers, npaths, ival, core = map(int, sys.argv[5:9])
d = lambda k: b["counters"][k] - a["counters"][k]
want = npeers * npaths * 2 * 1e6 / ival
got = d("tx_probes") / dt
print("bench_sender:%s core %d, %.1f s: %d peers x %d paths, pair every %d us = %.2f M probes/s "
      "requested; sent %.2f M probes/s (%.0f%%); port tx %.2f M/s; tx_dropped %d, "
      "alloc_failed %d, probes_unresolved %d, rx during run %d" % (
      sys.argv[9], core, dt, npeers, npaths, ival, want / 1e6, got / 1e6, 100 * got / want,
      (b["ports"][0]["tx_pkts"] - a["ports"][0]["tx_pkts"]) / dt / 1e6,
      d("tx_dropped"), d("alloc_failed"), d("probes_unresolved"), d("rx_pkts")))
open(sys.argv[10], "w").write("%.0f\n" % got)
EOF
	RESULT=$(cat "$TMP/rate")
}
bench_rounds send
bench_summary probes/s "$((NPEERS * NPATHS * 2 * 1000000 / INTERVAL_US))" requested
