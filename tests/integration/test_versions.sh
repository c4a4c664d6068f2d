#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Integration: what a new user types first (issue 30's day-one list).
#   - every program answers --version (and -V) with its name and the
#     project's version, exit 0, no root or hugepages needed; the DPDK
#     programs add DPDK's version once ("DPDK 22.11.x", not "DPDK DPDK");
#   - an unknown option is refused with exit status 2 or 1 and a message;
#   - tools/lab/lab.sh --help prints its whole header, an unknown option
#     stops it before it touches anything (exit 2).
#   test_versions.sh VERSION     (LS_BUILD: the build directory)
set -u
ver=$1
b=${LS_BUILD:-./build}
root=$(cd "$(dirname "$0")/../.." && pwd)
fail=0 pass=0
check() { # check DESCRIPTION COMMAND...: the command's status 0 is a pass
	local what=$1; shift
	if "$@"; then echo "ok    $what"; pass=$((pass + 1))
	else echo "FAIL  $what"; fail=$((fail + 1)); fi
}
out=$(mktemp); trap 'rm -f "$out"' EXIT

for p in "lockstepd app/lockstepd/lockstepd" "lockstep-fabric app/fabric/lockstep-fabric" \
	 "lockstep-load app/load/lockstep-load" "lockstepctl tools/lockstepctl/lockstepctl"; do
	set -- $p
	for opt in --version -V; do
		"$b/$2" $opt >"$out" 2>&1; rc=$?
		line=$(head -n 1 "$out")
		if [ "$1" = lockstepctl ]; then
			want="^$1 $ver\$"
		else
			want="^$1 $ver \\(DPDK [0-9]+\\.[0-9]+[^ ]*\\)\$"
		fi
		check "$1 $opt: \"$line\" (exit $rc)" \
			test "$rc" = 0 -a "$(wc -l <"$out")" = 1 -a -n "$(grep -E "$want" "$out")"
	done
	"$b/$2" --no-such-option >"$out" 2>&1; rc=$?
	check "$1 --no-such-option: refused (exit $rc): $(head -n 1 "$out")" \
		test "$rc" -ne 0 -a -n "$(grep -i -E 'unknown|unrecognized|invalid|--no-such-option' "$out")"
done

# lab.sh: the whole header (its last usage line is "lab.sh mesh"), and a typo
# stops it before anything (exit 2, the option named)
"$root/tools/lab/lab.sh" --help >"$out" 2>&1; rc=$?
check "lab.sh --help: exit $rc, $(wc -l <"$out") lines, ends with the commands and notes" \
	test "$rc" = 0 -a -n "$(grep -F 'lab.sh mesh' "$out")" -a -n "$(grep -F 'memif:' "$out")" \
	-a -n "$(grep -F -- '--link pcap' "$out")"
"$root/tools/lab/lab.sh" down --dirr /tmp/nowhere >"$out" 2>&1; rc=$?
check "lab.sh down --dirr: refused (exit $rc): $(head -n 1 "$out")" \
	test "$rc" = 2 -a -n "$(grep -F -- '--dirr' "$out")"
"$root/tools/lab/lab.sh" up --nodse 3 >"$out" 2>&1; rc=$?
check "lab.sh up --nodse: refused before anything starts (exit $rc)" \
	test "$rc" = 2 -a -n "$(grep -F -- '--nodse' "$out")"

echo "versions: $pass passed, $fail failed"
[ "$fail" = 0 ]
