#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Contention avoidance against hashed ECMP alone (issue 29, item 5): two
# collective jobs (2 RoCEv2 flows each, phases of fixed-size transfers, a
# phase ends when its slowest flow does) through two lockstepd onto four
# spines, once per seed (the emulator's hash seeds, so the placement), with
# bridge.balance off and on. Prints each seed's JCTs, where the flows were
# (truth) and the moves, then the median JCT both ways and each seed's
# ratio; --bench judges issue 29's ">= 1.2x, never below 0.98x".
#   tools/bench/bench_contention.sh [SEEDS]   (default 20; CT_PHASES=6, CT_PHASE_BYTES=500000)
#
# BENCH_BASE=<commit>: the same run with that commit's build first, then
# today's, in one invocation (tools/bench/lib.sh, bench_with_base).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_init bench_contention cont
cd "$BENCH_REPO"
n=${1:-20}
bench_with_base python3 tests/integration/test_contention.py --bench $(seq 1 "$n")
