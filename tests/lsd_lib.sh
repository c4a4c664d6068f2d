# SPDX-License-Identifier: BSD-3-Clause
#
# Sourced by the shell tests that drive one lockstepd through its control
# socket (tests/fuzz/test_fuzz.sh, tests/interop/test_interop.sh) once they
# have set LS_BUILD, DAEMON, SOCK, TMP and fail(). Gives ctl(), lsd_log_tail
# for a failed run's clean-up, and lsd_require (root, else SKIP; a built
# daemon, else FAIL).

# One control-socket request through lockstepctl: prints the result JSON,
# exits non-zero with the error on ok:false.
ctl() {
	"$LS_BUILD/tools/lockstepctl/lockstepctl" -s "$SOCK" call "$1" "${2:-{\}}"
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
