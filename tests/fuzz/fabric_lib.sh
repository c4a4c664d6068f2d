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

# fab_start_one_leaf RX_PCAP [EMULATOR OPTIONS...]: lockstep-fabric with one
# leaf and two hosts on pcap vdevs, h1 reading RX_PCAP (written to
# $TMP/h1-out.pcap, h2's to $TMP/h2-out.pcap); sets PID and CTL (lockstepctl
# on its socket) and waits for the socket.
fab_start_one_leaf() {
	local rx=$1
	shift
	cat > "$TMP/topo.json" <<JSON
{"defaults": {"link": {"delay_ns": 1000, "rate_bps": 100000000000, "buffer_bytes": 16777216, "mtu": 9000}},
 "switches": [{"name": "leaf1", "role": "leaf", "ipv4": "10.9.0.254", "ipv6": "fd00:9::fe"}],
 "links": [],
 "hosts": [{"name": "h1", "leaf": "leaf1", "ipv4": "10.9.0.2/24", "ipv6": "fd00:9::2/64",
            "dev": "net_pcap0,rx_pcap=$rx,tx_pcap=$TMP/h1-out.pcap"},
           {"name": "h2", "leaf": "leaf1", "ipv4": "10.9.0.1/24", "ipv6": "fd00:9::1/64",
            "dev": "net_pcap1,tx_pcap=$TMP/h2-out.pcap"}]}
JSON
	"$LS_BUILD/app/fabric/lockstep-fabric" --no-pci --no-huge -m 512 --lcores '0@(0,1)' \
		--file-prefix "$PRE" -- --topo "$TMP/topo.json" --dir "$TMP" --socket "$TMP/ctl.sock" \
		"$@" > "$TMP/fab.log" 2>&1 &
	PID=$!
	CTL=("$LS_BUILD/tools/lockstepctl/lockstepctl" -s "$TMP/ctl.sock")
	fab_wait_socket "$TMP/ctl.sock" "lockstep-fabric"
}

# fab_wait_socket SOCK WHAT: wait up to 10 s for the emulator's control socket.
fab_wait_socket() {
	for _ in $(seq 1 100); do [ -S "$1" ] && return 0; sleep 0.1; done
	fail "$2: the emulator did not start"
}
