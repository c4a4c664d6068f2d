#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# lockstep-fabric rate-limits the ICMP errors a switch originates (RFC 4443
# 2.4 f, RFC 1812 4.3.2.8): 2000 UDP frames with TTL 1 enter from h1 as
# fast as net_pcap replays them; with --icmp-rate 100 (a burst of 10) the
# leaf answers the burst and then about 100 a second, counts the rest as
# icmp_rate_limited, and every frame is either answered or counted. The
# answers are the Time Exceeded frames h1 receives.
#   LS_BUILD=build tests/fuzz/test_fabric_icmp.sh      (as root)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
NAME=test_fabric_icmp TAG=fabicmp
. "$HERE/fabric_lib.sh"

N=2000
/usr/bin/python3 - "$TMP/ttl1.pcap" "$N" <<'PY'
import sys
from scapy.all import Ether, IP, UDP, Raw, wrpcap
wrpcap(sys.argv[1], [Ether(src="02:00:00:00:09:02", dst="02:fa:00:00:00:01") /
                     IP(src="10.9.0.2", dst="10.9.0.1", ttl=1) /
                     UDP(sport=40000 + i % 1000, dport=9) / Raw(bytes(18))
                     for i in range(int(sys.argv[2]))])
PY
t0=$(date +%s.%N)
fab_start_one_leaf "$TMP/ttl1.pcap" --icmp-rate 100
for _ in $(seq 1 100); do
	rx=$("${CTL[@]}" call status | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["counters"]["rx_pkts"])')
	[ "$rx" -ge "$N" ] && break
	sleep 0.1
done
sleep 0.5
"${CTL[@]}" call status > "$TMP/status.json"
kill -TERM "$PID"
wait "$PID" || fail "exit status $? after SIGTERM"
PID=""
t1=$(date +%s.%N)
/usr/bin/python3 - "$N" "$t0" "$t1" "$TMP/h1-out.pcap" "$TMP/status.json" <<'PY'
import json, sys
from scapy.all import rdpcap, ICMP
c = json.load(open(sys.argv[5]))["counters"]
n, secs = int(sys.argv[1]), float(sys.argv[3]) - float(sys.argv[2])
te, lim = c["icmp_time_exceeded"], c["icmp_rate_limited"]
seen = sum(1 for p in rdpcap(sys.argv[4]) if ICMP in p and p[ICMP].type == 11)
most = 10 + 100 * secs + 1   # the burst, then 100 a second for at most the run
print("test_fabric_icmp: %d frames with TTL 1: %d Time Exceeded sent (%d seen by h1), %d "
      "rate-limited; at most %.0f allowed in %.1f s" % (c["rx_pkts"], te, seen, lim, most, secs))
ok = c["rx_pkts"] == n and te + lim == n and 10 <= te <= most and seen == te
print("test_fabric_icmp: %s" % ("PASS" if ok else "FAIL"))
print("1 passed, 0 failed" if ok else "0 passed, 1 failed")
sys.exit(0 if ok else 1)
PY
