#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Per-link queueing against the emulator's truth (issue 29, item 2): three
# leaf-spine topologies (2x2, 2x4, 3x3) under three loads (a hot spine
# uplink, a hot host downlink, two links at once), at the 1000x time scale.
# Per case: the share of (node, link group, second) estimates within
# max(5%, 2 us) of the truth, the seconds whose congested link is on top,
# and the false alarms; then one line over all cases.
#   tools/bench/bench_linkq.sh [TOPO[:LOAD] ...]     (default: all nine)
#   LQ_SECS=N   seconds judged per case (default 12)
#
# BENCH_BASE=<commit>: the same run with that commit's build first, then
# today's, in one invocation (tools/bench/lib.sh, bench_with_base).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_init bench_linkq linkq
cd "$BENCH_REPO"
bench_with_base python3 tests/integration/test_linkq.py --bench "$@"
