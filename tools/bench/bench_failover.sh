#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Failover time against the same flap without failover (issue 29, item 4):
# a spine link dies under 16 RoCEv2 RC flows, once per seed (topology
# hashes, the failed spine), with failover on and off. Prints, over all
# seeds, the stall of every flow whose data crossed the dead link (its gap
# at the receiver spanning the link's death: detection + move + one packet
# interval), frames lost, and moves of flows that crossed nothing (false
# alarms); --bench judges the 2 ms stall target.
#   tools/bench/bench_failover.sh [SEEDS]      (default 10; FO_SILENCE_US=500)
#
# BENCH_BASE=<commit>: the same run with that commit's build first, then
# today's, in one invocation (tools/bench/lib.sh, bench_with_base).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_init bench_failover fo
cd "$BENCH_REPO"
n=${1:-10}
export FO_SILENCE_US=${FO_SILENCE_US:-500}
bench_with_base python3 tests/integration/test_failover.py --bench $(seq 1 "$n")
