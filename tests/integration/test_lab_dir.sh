#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Regression (issue 27 M4): lab.sh ran as root in a fixed /tmp directory that
# another local user could create first, then make lab.info a link to any
# file, plant pid files root kills, or swap the configs root runs. Now it
# uses the directory only when it is private (ours, a real directory, not
# group/other writable): a symlink, another user's directory and a
# world-writable one are each refused before anything is written or killed.
#   LS_BUILD=build tests/integration/test_lab_dir.sh      (as root)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
LAB="$HERE/../../tools/lab/lab.sh"
[ "$(id -u)" = 0 ] || { echo "SKIP: must run as root (chown)"; exit 77; }
TMP=$(mktemp -d /tmp/ls-labdir.XXXXXX)
SLEEPER=""
cleanup() {
	[ -n "$SLEEPER" ] && kill "$SLEEPER" 2>/dev/null || true
	rm -rf "$TMP"
}
trap cleanup EXIT
pass=0 failed=0
check() { # check WHAT COND...
	local what=$1; shift
	if "$@"; then echo "ok    $what"; pass=$((pass + 1)); else echo "FAIL  $what"; failed=$((failed + 1)); fi
}

# A process a planted pid file points at: it must survive.
sleep 300 & SLEEPER=$!
victim=$TMP/victim
echo precious > "$victim"

refused() { # refused CASE DIR: lab.sh up and down both leave DIR's contents alone
	local what=$1 d=$2 out
	out=$("$LAB" up --dir "$d" --nodes 2 --transport memif --build "${LS_BUILD:-build}" 2>&1) && return 1
	echo "$out" | grep -q "not a private directory" || { echo "$out" >&2; return 1; }
	"$LAB" down --dir "$d" > /dev/null 2>&1 || true
	kill -0 "$SLEEPER" && [ "$(cat "$victim")" = precious ] && [ ! -e "$d/n1.json" ] &&
		[ ! -e "$TMP/real/lab.info" ]
}

mkdir -m 0700 "$TMP/real"
ln -s "$TMP/real" "$TMP/link"
check "a symlink as lab dir: refused" refused symlink "$TMP/link"

mkdir -m 0755 "$TMP/foreign"
echo "$SLEEPER" > "$TMP/foreign/n1.pid"
ln -s "$victim" "$TMP/foreign/lab.info"
chown nobody "$TMP/foreign"
check "another user's lab dir (planted pid file and link): refused, nothing killed or written" \
	refused foreign "$TMP/foreign"

mkdir "$TMP/open"
chmod 0777 "$TMP/open"
echo "$SLEEPER" > "$TMP/open/n1.pid"
check "a world-writable lab dir: refused, nothing killed" refused open "$TMP/open"

echo "test_lab_dir: $pass passed, $failed failed"
echo "$pass passed, $failed failed"
[ "$failed" = 0 ]
