#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Interop test: lockstepd's reflector against an independent STAMP sender
# (stamp_sender.py, kernel UDP sockets) across a veth pair, IPv4 and IPv6,
# then a capture through the control socket decoded by tshark.
#
#   sudo tests/interop/test_interop.sh            # from the repo root
#   LS_BUILD=/tmp/build sudo -E tests/interop/test_interop.sh
#
# Needs root, iproute2, ethtool, tshark and /usr/bin/python3.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
LS_BUILD=${LS_BUILD:-./build}
DAEMON=$LS_BUILD/app/lockstepd/lockstepd
PY=/usr/bin/python3          # the distribution python (PATH may hold a pyenv one)
SUF=io$$
NS_S=ls-$SUF-s              # kernel STAMP sender
NS_D=ls-$SUF-d              # lockstepd (device under test)
VETH_S=v$SUF-s
VETH_D=v$SUF-d
NAME=test_interop TAG=interop
. "$HERE/../lsd_lib.sh"      # TMP, SOCK, DPID, fail, ctl, lsd_stop, lsd_log_tail, lsd_require
PREFIX="ls-$SUF"          # EAL runtime dir /var/run/dpdk/$PREFIX

cleanup() {
	local rc=$?
	lsd_stop
	ip netns del "$NS_S" 2>/dev/null || true
	ip netns del "$NS_D" 2>/dev/null || true
	[ $rc -eq 0 ] || lsd_log_tail
	rm -rf "$TMP"
	rm -rf "/var/run/dpdk/$PREFIX"
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM
lsd_require "namespaces, DPDK"
command -v tshark >/dev/null || fail "tshark not installed"
"$PY" -c 'import json, socket' || fail "$PY unusable"

# --- topology ------------------------------------------------------------
ip netns add "$NS_S"
ip netns add "$NS_D"
ip link add "$VETH_S" type veth peer name "$VETH_D"
ip link set "$VETH_S" netns "$NS_S"
ip link set "$VETH_D" netns "$NS_D"
ip -n "$NS_S" link set lo up
ip -n "$NS_S" addr add 10.77.0.2/24 dev "$VETH_S"
ip -n "$NS_S" addr add fd00:77::2/64 dev "$VETH_S" nodad
ip -n "$NS_S" link set "$VETH_S" up
# The kernel on the DUT side must stay quiet: no addresses, no IPv6 noise.
ip netns exec "$NS_D" sysctl -qw "net.ipv6.conf.$VETH_D.disable_ipv6=1"
ip -n "$NS_D" link set lo up
ip -n "$NS_D" link set "$VETH_D" up
# veth hands af_packet UDP with the checksum left to "offload"; af_packet
# does not report that, so the DUT would see bad checksums. Make the
# sender's kernel compute them.
ip netns exec "$NS_S" ethtool -K "$VETH_S" tx off >/dev/null

cat >"$TMP/n1.json" <<EOF
{
  "node": {"name": "interop", "id": 1},
  "ports": [{"name": "p0", "dev": "net_af_packet0,iface=$VETH_D",
             "ipv4": "10.77.0.1/24", "ipv6": "fd00:77::1/64"}],
  "reflector": {"rate_pps": 20000, "burst": 256},
  "control": {"socket": "$SOCK", "peers_file": ""},
  "capture": {"dir": "$TMP"},
  "idle": {"backoff": true},
  "log": {"level": "info"}
}
EOF

# --- daemon --------------------------------------------------------------
ip netns exec "$NS_D" "$DAEMON" --no-pci --no-huge -m 512 --file-prefix "$PREFIX" \
	--lcores '0@(0,1)' -- --config "$TMP/n1.json" >"$TMP/daemon.log" 2>&1 &
DPID=$!
for _ in $(seq 150); do
	[ -S "$SOCK" ] && ctl status >/dev/null 2>&1 && break
	kill -0 "$DPID" 2>/dev/null || fail "lockstepd exited during start-up"
	sleep 0.1
done
ctl status >/dev/null || fail "control socket $SOCK never answered"
echo "test_interop: lockstepd up (pid $DPID)"

# --- STAMP interop, both families -----------------------------------------
# 30 packets per family: 10 each of base (PTP), NTP, and unknown-TLV.
for addr in 10.77.0.1 fd00:77::1; do
	ip netns exec "$NS_S" "$PY" "$HERE/stamp_sender.py" --addr "$addr" --count 30 --timeout 1 ||
		fail "stamp_sender against $addr"
done

# --- capture + tshark -----------------------------------------------------
CAP=$TMP/cap.pcap
ctl capture.start '{"file": "cap.pcap"}' >/dev/null || fail "capture.start"
ip netns exec "$NS_S" "$PY" "$HERE/stamp_sender.py" --addr 10.77.0.1 --count 5 \
	--variants base --seq-start 1001 || fail "stamp_sender during capture"
sleep 0.3   # the control thread drains the capture ring every ~10 ms
ctl capture.stop >/dev/null || fail "capture.stop"
[ -s "$CAP" ] || fail "capture file $CAP empty or missing"

# Nanosecond pcap: magic a1b23c4d in the writer's byte order.
magic=$(od -An -tx1 -N4 "$CAP" | tr -d ' \n')
case $magic in
	4d3cb2a1|a1b23c4d) ;;
	*) fail "capture magic $magic: not a nanosecond pcap (want a1b23c4d)" ;;
esac

# Both directions of every probe: request and reply carry the same sender seq.
seqs=$(tshark -r "$CAP" -d udp.port==862,twamp.test -Y twamp.test \
	-T fields -e twamp.test.seq_number 2>"$TMP/tshark.err" | sort -n | tr '\n' ' ')
want="1001 1001 1002 1002 1003 1003 1004 1004 1005 1005 "
[ "$seqs" = "$want" ] || fail "tshark sequence numbers: got '$seqs', want '$want' ($(cat "$TMP/tshark.err"))"
# The reflected half must decode as the reflector format with our seq copied.
sseqs=$(tshark -r "$CAP" -d udp.port==862,twamp.test -Y 'twamp.test && udp.srcport==862' \
	-T fields -e twamp.test.sender_seq_number 2>/dev/null | sort -n | tr '\n' ' ')
[ "$sseqs" = "1001 1002 1003 1004 1005 " ] || fail "tshark reflected sender seqs: got '$sseqs'"

# --- counters add up ----------------------------------------------------------
ctl status | "$PY" -c '
import json, sys
c = json.load(sys.stdin)["counters"]
disp = sum(v for k, v in c.items() if k.startswith("rx_") and k != "rx_pkts")
print("test_interop: rx_pkts %d reflected %d arp %d nd %d other-dispositions %d" % (
    c["rx_pkts"], c["rx_reflected"], c["rx_arp"], c["rx_nd"],
    disp - c["rx_reflected"] - c["rx_arp"] - c["rx_nd"]))
assert c["rx_reflected"] >= 65, "rx_reflected %d < 65 probes sent" % c["rx_reflected"]
assert disp == c["rx_pkts"], "dispositions %d != rx_pkts %d" % (disp, c["rx_pkts"])
' || fail "status counters"

echo "test_interop: PASS"
