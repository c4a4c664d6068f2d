#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Link inference over randomized scenarios (issue 29, items 2, 3, 6): per
# seed a 2-leaf fabric with 2 to 4 spines and its own ECMP hash seeds, a
# random leaf1-spine link dies (every node must name it within 1 s, nothing
# else), then a slow receiver and a slow sender (named within 2 s, nobody
# else). Prints per node and seed the detection times; the summary line
# counts the checks.
#   tools/bench/bench_links.sh [SEEDS]       (default 10)
set -euo pipefail
cd "$(dirname "$0")/../.."
n=${1:-10}
exec python3 tests/integration/test_links.py $(seq 1 "$n")
