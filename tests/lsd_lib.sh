# SPDX-License-Identifier: BSD-3-Clause
#
# Sourced by the shell tests that drive one lockstepd through its control
# socket (tests/fuzz/test_fuzz.sh, tests/interop/test_interop.sh). Set NAME
# (for messages) and TAG (for the temporary directory); LS_BUILD, DAEMON
# and PY default to ./build, its lockstepd and Debian's python3. Gives TMP
# (a fresh directory), SOCK (the control socket in it), DPID (set it to the
# daemon's pid), fail(), ctl(), lsd_stop_clean (the checked shutdown), and
# for the caller's clean-up lsd_stop and lsd_log_tail; lsd_require checks
# root (else SKIP) and the daemon binary (else FAIL); lsd_fuzz_begin and lsd_fuzz_cleanup serve the fuzz tests.

LS_BUILD=${LS_BUILD:-./build}
DAEMON=${DAEMON:-$LS_BUILD/app/lockstepd/lockstepd}
PY=${PY:-/usr/bin/python3}
TMP=$(mktemp -d "/tmp/ls-$TAG.XXXXXX")
SOCK=$TMP/ctl.sock
DPID=

fail() { echo "$NAME: FAIL: $*" >&2; exit 1; }

# One control-socket request through lockstepctl: prints the result JSON,
# exits non-zero with the error on ok:false.
ctl() {
	"$LS_BUILD/tools/lockstepctl/lockstepctl" -s "$SOCK" call "$1" "${2:-{\}}"
}

# lsd_stop [-KILL]: stop the daemon if it still runs: SIGTERM and up to
# 5 s to exit, then SIGKILL; with -KILL at once.
lsd_stop() {
	if [ -n "$DPID" ] && kill -0 "$DPID" 2>/dev/null; then
		if [ "${1:-}" != -KILL ]; then
			kill -TERM "$DPID" 2>/dev/null || true
			for _ in $(seq 50); do kill -0 "$DPID" 2>/dev/null || break; sleep 0.1; done
		fi
		kill -KILL "$DPID" 2>/dev/null || true
	fi
}

# lsd_stop_clean WHEN: the daemon must be running WHEN this is called, exit
# 0 on SIGTERM, remove its control socket and leave no sanitizer report in
# its log; fails the test otherwise.
lsd_stop_clean() {
	local rc=0

	kill -0 "$DPID" 2>/dev/null || fail "lockstepd is not running $1"
	kill -TERM "$DPID"
	wait "$DPID" || rc=$?
	DPID=
	[ $rc -eq 0 ] || fail "lockstepd exited with status $rc after SIGTERM"
	[ ! -e "$SOCK" ] || fail "control socket $SOCK left behind after shutdown"
	if grep -E "ERROR: (Address|Undefined|Leak)Sanitizer|runtime error:" "$TMP/daemon.log"; then
		fail "sanitizer report in the daemon log"
	fi
}

# The daemon's last words, on stderr, when it wrote any.
lsd_log_tail() {
	if [ -f "$TMP/daemon.log" ]; then
		echo "---- lockstepd log (last 40 lines) ----" >&2
		tail -n 40 "$TMP/daemon.log" >&2
	fi
}

# lsd_require WHY: exit 77 (SKIP) unless root, saying WHY root is needed;
# fail unless lockstepd is built.
lsd_require() {
	[ "$(id -u)" = 0 ] || { echo "SKIP: must run as root ($1)"; exit 77; }
	[ -x "$DAEMON" ] || fail "no lockstepd at $DAEMON (set LS_BUILD)"
}

# lsd_fuzz_begin: what both fuzz tests do first: an EAL prefix of their
# own, lsd_fuzz_cleanup on exit, root and the daemon required.
lsd_fuzz_begin() {
	PREFIX="ls-$TAG$$"          # EAL runtime dir /var/run/dpdk/$PREFIX
	trap lsd_fuzz_cleanup EXIT
	trap 'exit 130' INT TERM
	lsd_require "DPDK"
}

# lsd_fuzz_cleanup: the fuzz tests' EXIT trap (set FUZZ_SEED, FUZZ_COUNT and
# PREFIX first): stop the daemon; on failure show its log and the seed that
# replays it (the input is deterministic), and keep TMP with FUZZ_KEEP=1;
# remove the EAL runtime directory.
lsd_fuzz_cleanup() {
	local rc=$?

	lsd_stop -KILL
	if [ $rc -ne 0 ]; then
		lsd_log_tail
		echo "$NAME: reproduce with FUZZ_SEED=$FUZZ_SEED FUZZ_COUNT=$FUZZ_COUNT" >&2
	fi
	if [ $rc -ne 0 ] && [ -n "${FUZZ_KEEP:-}" ]; then
		echo "$NAME: kept $TMP" >&2
	else
		rm -rf "$TMP"
	fi
	rm -rf "/var/run/dpdk/$PREFIX"
	exit $rc
}
