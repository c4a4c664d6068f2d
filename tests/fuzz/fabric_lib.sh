# SPDX-License-Identifier: BSD-3-Clause
#
# Sourced by the lockstep-fabric tests in this directory: the set-up they
# share. Set NAME (the test's name, for messages) and TAG (a short word for
# the temporary directory and the EAL file prefix) first. Gives LS_BUILD,
# TMP, PRE, PID (set it to the emulator's pid: it is killed on exit), fail()
# (tails $TMP/fab.log when there is one), fab_wait_socket(); removes TMP
# and the EAL runtime files on exit; skips (77) unless root.
set -euo pipefail
LS_BUILD=${LS_BUILD:-./build}
TMP=$(mktemp -d "/tmp/ls-$TAG.XXXXXX")
PRE=ls$TAG$$
PID=""
cleanup() {
	local rc=$?
	[ -n "$PID" ] && kill -KILL "$PID" 2>/dev/null || true
	rm -rf "$TMP" /var/run/dpdk/"$PRE"*
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM
fail() {
	echo "$NAME: FAIL: $*" >&2
	if [ -f "$TMP/fab.log" ]; then tail -n 20 "$TMP/fab.log" >&2; fi
	exit 1
}
[ "$(id -u)" = 0 ] || { echo "SKIP: must run as root (DPDK)"; exit 77; }

# fab_wait_socket SOCK WHAT: wait up to 10 s for the emulator's control socket.
fab_wait_socket() {
	for _ in $(seq 1 100); do [ -S "$1" ] && return 0; sleep 0.1; done
	fail "$2: the emulator did not start"
}
