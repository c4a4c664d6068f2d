#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Benchmark (not a test): slice isolation on the emulator's host link, issue
# 25's "a bulk slice saturating the link raises a latency slice's p99
# one-way delay by at most 20 us over idle (10 Gb/s host link)". 30 s per
# case (idle, shielded, unshielded), at each time scale given (default 1000
# 100: the 10 Gb/s link run 1000 and 100 times slower; the lab's scheduling
# noise divides by the scale, so the two together show how much of a figure
# is the lab's). tests/integration/test_isolation.py says how and why.
#
#   LS_BUILD=build tools/bench/bench_isolation.sh 1000 100
#
# BENCH_BASE=<commit>: the same run with that commit's build first, then
# today's, in one invocation (tools/bench/lib.sh, bench_with_base).
set -euo pipefail
[ $# -eq 0 ] && set -- 1000 100
. "$(dirname "$0")/lib.sh"
bench_init bench_isolation iso
scales() {
	local rc=0 s
	for s in "$@"; do
		echo "## time scale $s: the link at $((10000 / s)) Mb/s"
		ISO_SCALE="$s" /usr/bin/python3 "$BENCH_REPO/tests/integration/test_isolation.py" \
			--bench || rc=1
	done
	return $rc
}
bench_with_base scales "$@"
