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
set -euo pipefail
[ $# -eq 0 ] && set -- 1000 100
rc=0
for s in "$@"; do
	echo "## time scale $s: the link at $((10000 / s)) Mb/s"
	ISO_SCALE="$s" /usr/bin/python3 "$(dirname "$0")/../../tests/integration/test_isolation.py" \
		--bench || rc=1
done
exit $rc
