#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# lockstep-fabric under hostile input: the fuzz corpus (random and mutated
# frames: truncated, bad lengths and checksums, fragments, VLANs, garbage ARP
# and ND, valid probes) enters the emulator from host h1 through a net_pcap
# port, addressed so that a good part of it is routable (h1 and h2 use the
# corpus' addresses). The emulator must keep running and answering, account
# for every frame it received, and shut down cleanly. It runs with
# --tx-trailer, and the corpus ends with probes carrying send-time trailers
# whose instants no host could mean: each is counted as not believed and
# the frame goes on without it. The truth file (every hop, every depth
# change) is held to --truth-max-mb 1.
#   LS_BUILD=build tests/fuzz/test_fabric_fuzz.sh      (as root)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
NAME=test_fabric_fuzz TAG=fabfuzz
. "$HERE/fabric_lib.sh"

/usr/bin/python3 "$HERE/gen_fuzz_pcap.py" "$TMP/fuzz.pcap" --count 120000 \
	--forged-sendtime 3000 > "$TMP/gen.out"
fab_start_one_leaf "$TMP/fuzz.pcap" --sample-us 10 --tx-trailer --truth "$TMP/truth.jsonl" --hops \
	--truth-max-mb 1
# Wait until every frame of the pcap has been received.
frames=$(tail -n 1 "$TMP/gen.out" | grep -o '[0-9]\+' | head -n 1)
for _ in $(seq 1 600); do
	kill -0 "$PID" 2>/dev/null || fail "lockstep-fabric died"
	rx=$("${CTL[@]}" call status | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["counters"]["rx_pkts"])')
	[ "$rx" -ge "$frames" ] && break
	sleep 0.2
done
sleep 1
"${CTL[@]}" call status > "$TMP/st.json" || fail "the emulator no longer answers"
"${CTL[@]}" call links > "$TMP/links.json" || fail "the emulator no longer answers"
/usr/bin/python3 - "$TMP/st.json" "$frames" "$TMP/links.json" "$TMP/truth.jsonl" <<'PY' || exit 1
import json, os, sys
c = json.load(open(sys.argv[1]))["counters"]
frames = int(sys.argv[2])
links = json.load(open(sys.argv[3]))
links = links.get("links", links) if isinstance(links, dict) else links
drops = sum(l.get(k, 0) for l in links for k in ("drop_tail", "drop_loss", "drop_down", "drop_mtu"))
# Every frame from h1 ends in exactly one place (each mbuf is freed or sent
# once; an answer or an ICMP error reuses the request's): sent to a host
# (forwarded or answered), dropped as bad / not IP / no route, consumed
# silently (ignored: ARP/ND not to answer, ICMP about ICMP), or dropped by a
# link. Nothing is in flight after the wait above.
out = (c["tx_pkts"] + c["bad"] + c["not_ip"] + c["no_route"] + c["ignored"] +
       c["icmp_rate_limited"] + drops)
print("test_fabric_fuzz: %d frames in: tx %d, arp %d, nd %d, icmp %d (rate-limited %d), bad %d, "
      "not ip %d, no route %d, ignored %d, link drops %d: %d accounted for"
      % (c["rx_pkts"], c["tx_pkts"], c["arp_answered"], c["nd_answered"], c["icmp_time_exceeded"],
         c["icmp_rate_limited"], c["bad"], c["not_ip"], c["no_route"], c["ignored"], drops, out))
ok = c["rx_pkts"] >= frames and c["bad"] > 0 and c["tx_pkts"] > 0
if out != c["rx_pkts"]:
    print("test_fabric_fuzz: FAIL: %d frames received, %d accounted for (off by %d)"
          % (c["rx_pkts"], out, out - c["rx_pkts"]))
    ok = False
print("test_fabric_fuzz: send-time trailers: %d believed, %d late, %d not believed (3000 forged)"
      % (c["tx_at"], c["tx_at_late"], c["tx_at_bad"]))
ok = ok and c["tx_at_bad"] == 3000 and c["tx_at"] == 0 and c["tx_at_late"] == 0
# --truth-max-mb 1: the file stops at 1 MB (plus the record that crossed it)
# and what was not written is counted
size = os.path.getsize(sys.argv[4])
print("test_fabric_fuzz: truth file %d bytes (limit 1 MB), %d records unwritten"
      % (size, c["truth_unwritten"]))
ok = ok and (1 << 20) <= size <= (1 << 20) + 4096 and c["truth_unwritten"] > 0
print("test_fabric_fuzz: %s" % ("PASS" if ok else "FAIL: not every frame was received or "
                                "classified, a forged send time was believed, or the "
                                "truth file passed its limit"))
sys.exit(0 if ok else 1)
PY
kill -TERM "$PID"
wait "$PID" || fail "exit status $? after SIGTERM"
PID=""
[ ! -e "$TMP/ctl.sock" ] || fail "control socket left behind"
echo "test_fabric_fuzz: survived $frames hostile frames, clean shutdown"
echo "1 passed, 0 failed"
