#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Link inference over randomized scenarios (issue 29, items 2, 3, 6): per
# seed a 2-leaf fabric with 2 to 4 spines and its own ECMP hash seeds, a
# random leaf1-spine link dies (every node must name it within 1 s, nothing
# else), then a slow receiver and a slow sender (named within 2 s, nobody
# else). Prints per node and seed the detection times; the summary line
# counts the checks.
#   tools/bench/bench_links.sh [SEEDS]       (default 10)
#
# BENCH_BASE=<commit>: the same run with that commit's build first, then
# today's, in one invocation (tools/bench/lib.sh, bench_with_base).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_init bench_links links
cd "$BENCH_REPO"
n=${1:-10}
bench_with_base python3 tests/integration/test_links.py $(seq 1 "$n")
