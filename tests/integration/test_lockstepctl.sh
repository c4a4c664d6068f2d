#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# lockstepctl against fake daemons (fake_ctl_server.py): exit codes, table
# output, mesh over two sockets, --json. No DPDK, no root needed.
#
# usage: test_lockstepctl.sh [PATH-TO-lockstepctl]
#        (default: $LOCKSTEPCTL, else $LS_BUILD or ./build, + /tools/lockstepctl/lockstepctl)

set -u

HERE=$(cd "$(dirname "$0")" && pwd)
CTL=${1:-${LOCKSTEPCTL:-${LS_BUILD:-./build}/tools/lockstepctl/lockstepctl}}
PY=/usr/bin/python3
FAKE="$HERE/fake_ctl_server.py"

[ -x "$CTL" ] || { echo "lockstepctl not found at $CTL" >&2; exit 2; }

TMP=$(mktemp -d /tmp/lockstepctl-test.XXXXXX)
PIDS=""
cleanup() {
	for p in $PIDS; do
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

FAILS=0
TESTS=0
fail() {
	echo "FAIL: $*" >&2
	FAILS=$((FAILS + 1))
}

# start_fake NODE PEERS [DOWN]: run a fake daemon on $TMP/NODE.sock.
start_fake() {
	"$PY" "$FAKE" --socket "$TMP/$1.sock" --node "$1" --peers "$2" \
		--down "${3:-}" &
	PIDS="$PIDS $!"
	i=0
	while [ ! -S "$TMP/$1.sock" ]; do
		i=$((i + 1))
		[ $i -gt 100 ] && { echo "fake $1 did not start" >&2; exit 1; }
		sleep 0.05
	done
}

# expect RC ARGS...: run lockstepctl, check its exit code; output in $OUT/$ERR.
expect() {
	want=$1
	shift
	TESTS=$((TESTS + 1))
	"$CTL" "$@" >"$TMP/out" 2>"$TMP/err"
	got=$?
	OUT=$(cat "$TMP/out")
	ERR=$(cat "$TMP/err")
	if [ "$got" != "$want" ]; then
		fail "lockstepctl $* exited $got, want $want"
		sed 's/^/    stdout: /' "$TMP/out" >&2
		sed 's/^/    stderr: /' "$TMP/err" >&2
		return 1
	fi
	return 0
}

# contains TEXT WHERE: $OUT (or $ERR) contains TEXT.
contains() {
	case "$2" in
	err) hay=$ERR ;;
	*) hay=$OUT ;;
	esac
	case "$hay" in
	*"$1"*) return 0 ;;
	esac
	fail "expected '$1' in $2 of the last command"
	printf '%s\n' "$hay" | sed 's/^/    /' >&2
	return 1
}

is_json() {
	printf '%s\n' "$OUT" | "$PY" -c 'import json, sys
for line in sys.stdin:
    json.loads(line)' || fail "output is not JSON: $OUT"
}

start_fake n1 n2,n3 n3
start_fake n2 n1,n3
S1="$TMP/n1.sock"
S2="$TMP/n2.sock"

# --- success, and table output ---------------------------------------------
expect 0 -s "$S1" status && contains "n1 (id 7)" out && contains "p0" out
expect 0 -s "$S1" peers && contains "PEER" out && contains "down" out
expect 0 -s "$S1" paths --window 1s && contains "window 1s" out
expect 0 -s "$S1" path n2 --window 60s && contains "60s" out
expect 0 -s "$S1" clock && contains "truth.offset_ns:" out
expect 0 -s "$S1" help && contains "peer.add" out
expect 0 -s "$S1" peer add n9 10.9.9.9 --port 9000 --paths 4 \
	--interval-us 250 && contains "interval_us:" out && contains "250" out
expect 0 -s "$S1" peer del n9 && contains "n9" out
expect 1 -s "$S1" peer del n9 && contains "error: not_found:" err
# What lockstepctl sent, as the fake received it ("last" is the fake's own).
expect 0 -s "$S1" probe set --peer n2 --interval-us 500 --paths 3 && contains "updated:" out
expect 0 -s "$S1" --json call last '{"cmd": "probe.set"}' &&
	contains '"result":{"peer":"n2","interval_us":500,"paths":3}' out
expect 0 -s "$S1" stats reset && contains "reset:" out && contains "4" out
expect 0 -s "$S1" log level debug && contains "debug" out
expect 0 -s "$S1" capture start x.pcap --snaplen 96 && contains "/var/lib/lockstep/capture/x.pcap" out
expect 0 -s "$S1" --json call last '{"cmd": "capture.start"}' &&
	contains '"result":{"file":"x.pcap","snaplen":96}' out
expect 0 -s "$S1" sync && contains "synced" out
expect 0 -s "$S1" capture stop && contains "packets:" out
expect 0 -s "$S1" call clock '{}' && contains "now_ns" out
# Socket from the environment, options after the command.
LOCKSTEP_SOCKET=$S2 expect 0 status && contains "n2 (id 7)" out
expect 0 status -s "$S2" && contains "n2" out

# --- the daemon replies an error: 1 -----------------------------------------
expect 1 -s "$S1" path nosuch && contains "error: not_found:" err
expect 1 -s "$S1" peer add n2 10.0.0.9 && contains "error: exists:" err
expect 1 -s "$S1" call no.such.command && contains "error: unknown_command" err

# --- usage errors: 2 ---------------------------------------------------------
expect 2
expect 2 -s "$S1" frobnicate
expect 2 -s "$S1" peer
expect 2 -s "$S1" peer add onlyname
expect 2 -s "$S1" paths --window 5s
expect 2 -s "$S1" status --bogus
expect 2 -s "$S1" peer add a 1.2.3.4 --paths notanumber
expect 2 -s "$S1" call clock '[1]'
expect 2 -s "$S1" -s "$S2" status
expect 2 --timeout
expect 0 --help && contains "exit status" out

# --- daemon not running: 3 ---------------------------------------------------
expect 3 -s "$TMP/missing.sock" status &&
	contains "cannot connect to $TMP/missing.sock: daemon not running? (No such file or directory)" err
# A socket file nobody listens on (kept out of $TMP, which mesh --dir scans).
mkdir "$TMP/other"
"$PY" -c 'import socket, sys
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.close()' "$TMP/other/dead.sock"
expect 3 -s "$TMP/other/dead.sock" status && contains "Connection refused" err

# --- permission denied: 4 (only testable as root, by dropping to nobody) ----
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null 2>&1; then
	chmod 0600 "$S1"
	TESTS=$((TESTS + 1))
	setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$CTL" -s "$S1" status >/dev/null 2>"$TMP/err"
	rc=$?
	[ $rc = 4 ] || fail "permission denied exited $rc, want 4: $(cat "$TMP/err")"
	chmod 0666 "$S1"
fi

# --- timeout and malformed reply: 5 -----------------------------------------
expect 5 -s "$S1" --timeout 200 call sleep '{"s": 1}' && contains "no reply" err
expect 5 -s "$S1" call garbage && contains "malformed reply" err

# --- --json ------------------------------------------------------------------
expect 0 -s "$S1" --json status && is_json && contains '"ok":true' out
expect 0 -s "$S1" --json paths && is_json
expect 1 -s "$S1" --json path nosuch && is_json && contains '"ok":false' out

# --- mesh / watch -------------------------------------------------------------
expect 0 mesh -s "$S1" -s "$S2" && contains "NODE" out
n1row=$(printf '%s\n' "$OUT" | grep -c '^n1 ')
n2row=$(printf '%s\n' "$OUT" | grep -c '^n2 ')
[ "$n1row" = 1 ] && [ "$n2row" = 1 ] || fail "mesh lacks a node row: $OUT"
# n1 -> n3: every path down. n1 -> n2: median of 10.0 and 10.1 µs.
printf '%s\n' "$OUT" | grep '^n1 ' | grep -q DOWN || fail "n1 row lacks DOWN: $OUT"
printf '%s\n' "$OUT" | grep '^n1 ' | grep -q '10\.1' || fail "n1->n2 cell: $OUT"
expect 0 mesh --dir "$TMP" --metric loss && contains "%" out
expect 0 --json mesh --dir "$TMP" && is_json
printf '%s\n' "$OUT" | "$PY" -c 'import json, sys
d = json.load(sys.stdin)
assert set(d) == {"n1", "n2"}, d.keys()
assert d["n1"]["node"] == "n1" and isinstance(d["n2"]["peers"], list)' ||
	fail "mesh --json is not {node: result}"
# A node that does not answer still gets a row, and the exit code says so.
expect 3 mesh -s "$S1" -s "$TMP/missing.sock" && contains "missing" out
expect 2 mesh --metric jitter
expect 0 watch -s "$S1" -s "$S2" --interval 0.1 --count 2
[ "$(printf '%s\n' "$OUT" | grep -c '^n2 ')" = 2 ] || fail "watch did not refresh twice"
expect 0 --json watch --dir "$TMP" --interval 0.1 --count 2 && is_json

# --- the mesh in colour, and as a picture a real renderer draws -------------
# n1 -> n2 and n2 -> n1 are the lowest (10.05 µs: green), n2 -> n3 the
# highest (11.05: red), n1 -> n3 DOWN, a node to itself no data, a node
# that does not answer its own grey.
expect 0 mesh -s "$S1" -s "$S2" && case "$OUT" in *"$(printf '\033')"*)
	fail "colour escapes in output that is not a terminal: $OUT" ;; esac
expect 0 mesh -s "$S1" -s "$S2" --color always && contains "48;2;215;48;39m" out &&
	contains "48;2;26;152;80m" out && contains "scale (µs)" out
expect 2 mesh --color sometimes
expect 2 mesh -s "$S1" --svg ""
expect 3 mesh -s "$S1" -s "$S2" -s "$TMP/missing.sock" --svg "$TMP/m.svg" \
	--html "$TMP/m.html" && contains "NODE" out
TESTS=$((TESTS + 1))
if ! command -v rsvg-convert >/dev/null; then
	fail "no rsvg-convert to render the SVG (tools/deps installs librsvg2-bin)"
elif ! rsvg-convert -o "$TMP/m.png" "$TMP/m.svg" 2>"$TMP/err"; then
	fail "rsvg-convert refused the SVG: $(cat "$TMP/err")"
else
	"$PY" "$HERE/svg_check.py" "$TMP/m.svg" "$TMP/m.png" "n1>n2=#1a9850" \
		"n2>n1=#1a9850" "n2>n3=#d73027" "n1>n3=#404040" "n1>n1=#e0e0e0" \
		"missing>n3=#a0a0a0" >"$TMP/out" 2>&1 || fail "heat map: $(cat "$TMP/out")"
fi
grep -q '<svg xmlns' "$TMP/m.html" && grep -q '</html>' "$TMP/m.html" ||
	fail "mesh --html wrote no page with the picture in it"
expect 2 mesh -s "$S1" --svg "$TMP/no/such/dir/m.svg" && contains "cannot write" err
# mesh --prometheus (the fleet from a real Prometheus: test_metrics.py)
expect 2 mesh --prometheus ftp://x && contains "takes a URL" err
expect 2 mesh --prometheus http://127.0.0.1:1 -s "$S1" && contains "not both" err
expect 2 mesh --prometheus http://127.0.0.1:1 --window 60s && contains "10s window" err
expect 5 mesh --prometheus http://127.0.0.1:1 && contains "127.0.0.1:1" err
expect 2 mesh -s "$S1" --group-by leaf && contains "route" err
expect 2 mesh --prometheus http://127.0.0.1:1 --group-by 'le af' && contains "label name" err

# --- audit over two fake daemons (a real fleet with faults: test_audit.py) ----
# n1's paths to n3 are down; the fakes know no path.mtu
expect 6 audit -s "$S1" -s "$S2" && contains "audit of 2 daemons: FAIL" out &&
	contains "reach     FAIL" out && contains "not probed: path.mtu: unknown_command" out &&
	contains "links     pass" out && contains "clock     pass" out
expect 6 --json audit -s "$S1" -s "$S2" --skip mtu && is_json
printf '%s\n' "$OUT" | "$PY" -c 'import json, sys
d = json.load(sys.stdin)
items = {i["item"]: i for i in d["items"]}
assert d["pass"] is False and d["daemons"] == 2 and items["mtu"]["skipped"], d
assert [(r["node"], r["peer"]) for r in items["reach"]["rows"] if not r["pass"]] == [("n1", "n3")]
assert all(items[k]["pass"] for k in ("daemons", "capacity", "paths", "links", "firmware", "clock"))' ||
	fail "audit --json: $OUT"
expect 3 audit -s "$S1" -s "$TMP/missing.sock" --skip mtu,paths && contains "no answer" out
printf '# the fleet, relative to this file\n\nn2.sock  # n2\n' >"$TMP/fleet"
expect 0 audit --fleet "$TMP/fleet" --skip mtu && contains "audit of 1 daemon: PASS" out
expect 2 audit --fleet "$TMP/no-such-fleet" && contains "cannot read fleet file" err
expect 2 audit -s "$S1" --mtu-sizes 1500,x
expect 2 audit -s "$S1" --skip bogus
expect 2 audit -s "$S1" --capacity-frac 0 && contains "capacity-frac" err

# --version, as the daemons have it; peer add --port takes the port's name
# and sends it as given (the fake refuses a port that is not a string, as
# the daemon does, and echoes it)
expect 0 --version && contains "lockstepctl 0.1.0" out
expect 0 -s "$S1" --json peer add n9 10.0.0.9 --port p1 && is_json
expect 0 -s "$S1" --json call last '{"cmd": "peer.add"}' &&
	contains '"result":{"name":"n9","addr":"10.0.0.9","port":"p1"}' out

# The default socket, as a plain `lockstepctl status` next to a daemon finds
# it: no $LOCKSTEP_SOCKET, the daemon's /run/lockstep/<node>.sock. In a mount
# namespace of its own, /run a private tmpfs there, so the machine's is not
# touched: one socket is found; with two, the error names the directory;
# /run/lockstep/lockstepd.sock wins when it exists.
defsock() {
	unshare -m --propagation private sh -c '
		mount -t tmpfs tmpfs /run && mkdir /run/lockstep || exit 9
		for n in $3; do
			"$1" "$2" --socket /run/lockstep/$n.sock --node $n --peers n2 &
			pids="$pids $!"
		done
		i=0
		for n in $3; do
			while [ ! -S /run/lockstep/$n.sock ] && [ $i -lt 100 ]; do
				i=$((i + 1)); sleep 0.05
			done
		done
		env -u LOCKSTEP_SOCKET "$4" status; rc=$?
		kill $pids 2>/dev/null
		wait
		exit $rc' sh "$PY" "$FAKE" "$1" "$CTL" >"$TMP/out" 2>"$TMP/err"
}
TESTS=$((TESTS + 1))
defsock n5; rc=$?
if [ $rc = 0 ] && grep -q "n5 (id 7)" "$TMP/out"; then :; else
	fail "plain status with one daemon in /run/lockstep: exit $rc, $(head -c 300 "$TMP/out" "$TMP/err")"
fi
TESTS=$((TESTS + 1))
defsock "n5 n6"; rc=$?
if [ $rc != 0 ] && grep -q "/run/lockstep" "$TMP/err"; then :; else
	fail "plain status with two daemons: exit $rc (want an error naming /run/lockstep): $(head -c 300 "$TMP/err")"
fi
TESTS=$((TESTS + 1))
defsock "n6 lockstepd"; rc=$?
if [ $rc = 0 ] && grep -q "lockstepd (id 7)" "$TMP/out"; then :; else
	fail "plain status with /run/lockstep/lockstepd.sock among others: exit $rc, $(head -c 300 "$TMP/out" "$TMP/err")"
fi

echo "lockstepctl: $TESTS checks, $FAILS failures"
[ "$FAILS" = 0 ]
