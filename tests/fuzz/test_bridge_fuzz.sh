#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Bridge fuzz test: lockstepd as a bump in the wire between two net_pcap
# ports, >= 100k hostile and valid frames into each side (gen_bridge_pcap.py:
# flows of TCP/UDP/VXLAN/Geneve/RoCEv2 over IPv4/IPv6/VLAN, mutated; runts,
# ARP, LLDP, broadcast, jumbo; on the fabric side also the probe path's mix
# to lockstepd's own MAC), under a policy that paces some flows, caps a
# slice, steers RoCEv2, tunnels and IPv6. Then:
#
#  - the daemon is alive, answers and shuts down cleanly;
#  - host side, exactly (bridge counters, held = the `bridge` reply's gauges):
#      rx_host = tx_fabric + pace_drops + wheel_full + slice_drops
#                + tx_drops_fabric + held.wheel + held.slices
#    and rx_host = frames in the host file = the PMD's count; not_ip and
#    bad_ip are what a Python copy of ls_flow_parse finds in the file;
#  - fabric side, exactly: port rx = status rx_pkts (frames to our MAC, the
#    probe path) + rx_fabric + route_icmp (answers to our path discovery,
#    kept), and rx_fabric = tx_host + tx_drops_host;
#  - output files: HOSTOUT holds tx_host frames, FABOUT tx_fabric frames
#    plus lockstepd's own (tx_probes + tx_replies + tx_arp + tx_nd +
#    tx_trace, the background path discovery's probes);
#  - frames the bridge may not change (not IP, bad IP, TCP, plain UDP over
#    IPv4) come out byte for byte; steered ones differ only in the entropy
#    field, with UDP checksum and ICRC as good as they came in (multisets);
#    nothing comes out that did not go in: no amplification.
#
# FUZZ_LCORES=2 runs the data path on two lcores (bridge.lcores, the soft
# spread: the lead hands each frame to the lcore its address pair hashes
# to through rings): the same checks hold over the summed counters, with
# frames dropped at a full ring (spread_drops_*) and those on the rings
# (held.rings) in their sums, and flows on both lcores.
#
# FUZZ_SPREAD=rss (with FUZZ_LCORES=2) runs the RSS spread instead: each
# port with two queues (net_pcap: two rx_pcap and two tx_pcap files), each
# input split over them by a hash of the whole frame, so most frames arrive
# at the lcore that does not own them and go over through its ring (on a
# NIC, RSS would put a flow's frames on one queue; here every frame's owner
# is checked in software, and the hostile ones too); the queues' outputs are
# merged before the same checks.
#
#   sudo tests/fuzz/test_bridge_fuzz.sh                   # from the repo root
#   LS_BUILD=build-asan FUZZ_COUNT=200000 FUZZ_SEED=7 sudo -E tests/fuzz/test_bridge_fuzz.sh
#   FUZZ_LCORES=2 sudo -E tests/fuzz/test_bridge_fuzz.sh
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
FUZZ_COUNT=${FUZZ_COUNT:-110000}
FUZZ_SEED=${FUZZ_SEED:-2525}
FUZZ_LCORES=${FUZZ_LCORES:-1}
FUZZ_SPREAD=${FUZZ_SPREAD:-soft}
MIN_DELIVERED=100000
NAME=test_bridge_fuzz TAG=bfuzz$FUZZ_LCORES${FUZZ_SPREAD:0:1}
. "$HERE/../lsd_lib.sh"      # LS_BUILD, DAEMON, PY, TMP, SOCK, DPID, fail, ctl, lsd_fuzz_*
lsd_fuzz_begin

HIN=$TMP/HOSTFUZZ.pcap
FIN=$TMP/FABFUZZ.pcap
HOUT=$TMP/HOSTOUT.pcap
FOUT=$TMP/FABOUT.pcap
read -r nhost nfab < <("$PY" "$HERE/gen_bridge_pcap.py" gen "$HIN" "$FIN" \
	--count "$FUZZ_COUNT" --seed "$FUZZ_SEED")
echo "test_bridge_fuzz: generated $nhost host and $nfab fabric frames (seed $FUZZ_SEED)"

# One lcore (0, floating over both CPUs), or two (the lead 1, and 0): the
# flow table is halved so that the input still fills each lcore's.
EAL_LCORES='0@(0,1)' LC='' FLOWS=16384
HDEV="net_pcap0,rx_pcap=$HIN,tx_pcap=$HOUT" FDEV="net_pcap1,rx_pcap=$FIN,tx_pcap=$FOUT"
if [ "$FUZZ_LCORES" = 2 ]; then
	EAL_LCORES='0@(0,1),1@(0,1)' LC='"lcore": 1,' FLOWS=8192
	LCORES_KEY="\"lcores\": [1, 0], \"spread\": \"$FUZZ_SPREAD\","
fi
if [ "$FUZZ_SPREAD" = rss ]; then
	[ "$FUZZ_LCORES" = 2 ] || fail "FUZZ_SPREAD=rss needs FUZZ_LCORES=2"
	# frames the rings drop never reach a table: smaller tables still fill
	FLOWS=4096
	echo "test_bridge_fuzz: host frames per queue $("$PY" "$HERE/gen_bridge_pcap.py" split "$HIN" 2)," \
		"fabric $("$PY" "$HERE/gen_bridge_pcap.py" split "$FIN" 2)"
	HDEV="net_pcap0,rx_pcap=$HIN.0,rx_pcap=$HIN.1,tx_pcap=$HOUT.0,tx_pcap=$HOUT.1"
	FDEV="net_pcap1,rx_pcap=$FIN.0,rx_pcap=$FIN.1,tx_pcap=$FOUT.0,tx_pcap=$FOUT.1"
fi

# The fabric port has gen_fuzz_pcap.py's addresses, so its probe-path mix
# is addressed to lockstepd. link_bps is far above the replay rate: the
# default slice never drops, so every untouched frame must come out.
cat >"$TMP/bfuzz.json" <<EOF
{
  "node": {"name": "bfuzz", "id": 9},
  "ports": [
    {"name": "host", "role": "host", $LC "dev": "$HDEV"},
    {"name": "fab", $LC "dev": "$FDEV",
     "mac": "02:00:00:00:00:01", "ipv4": "10.9.0.1/24", "ipv6": "fd00:9::1/64"}
  ],
  "peers": [{"name": "n2", "addr": "10.9.0.2", "port": "fab"}],
  "probe": {"interval_us": 10000, "paths": 4, "dst_port": 862, "src_port_base": 49152},
  "reflector": {"rate_pps": 100000000, "burst": 1000000, "max_sources": 65536},
  "bridge": {
    "host_port": "host", "fabric_port": "fab", "link_bps": 100000000000, ${LCORES_KEY:-}
    "max_flows": $FLOWS, "pace_max_delay_us": 2000, "mbufs": 1024, "policy_file": "",
    "policy": {
      "slices": [
        {"name": "paced", "flow_bps": 500000, "match": {"proto": "tcp", "dport": 5201}},
        {"name": "small", "max_bps": 1000000, "qlen": 16,
         "match": {"proto": "udp", "dport": 9999}},
        {"name": "roce", "weight": 4, "match": {"roce": true},
         "path": {"mode": "spread", "paths": [0, 1, 2, 3]}},
        {"name": "fast", "latency": true, "max_bps": 1000000000, "flow_bps": 200000000,
         "match": {"dscp": [46]}}
      ],
      "flows": [
        {"name": "v6pin", "match": {"dst": "fd20::/16"}, "path": {"mode": "pin", "paths": [2]}},
        {"name": "vxlan", "match": {"proto": "udp", "dport": 4789},
         "path": {"mode": "spread", "paths": [0, 1, 2, 3]}},
        {"name": "geneve", "match": {"proto": "udp", "dport": 6081},
         "path": {"mode": "avoid", "paths": [1]}, "slice": "roce"}
      ]
    }
  },
  "control": {"socket": "$SOCK", "peers_file": ""},
  "idle": {"backoff": true},
  "log": {"level": "info"}
}
EOF

"$DAEMON" --no-pci --no-huge -m 1024 --file-prefix "$PREFIX" --lcores "$EAL_LCORES" \
	-- --config "$TMP/bfuzz.json" >"$TMP/daemon.log" 2>&1 &
DPID=$!

# Counters as one line of JSON: {"status": ..., "bridge": ...}.
snapshot() {
	local st br
	st=$(ctl status) && br=$(ctl bridge) && sl=$(ctl slices) &&
		printf '{"status": %s, "bridge": %s, "slices": %s}\n' "$st" "$br" "$sl"
}

# While the input streams in, take the paced slice away and put it back
# again and again: its queued frames move to "default", frames in the
# pacing wheel come out for a slice that is gone (or whose index a new
# slice took), flows are reclassified.
PACED='{"name": "paced", "flow_bps": 500000, "match": {"proto": "tcp", "dport": 5201}}'
(
	for _ in $(seq 100); do
		[ -e "$TMP/toggle.stop" ] && break
		if ctl slice.del '{"name": "paced"}' >/dev/null 2>&1; then
			echo del >>"$TMP/toggle.log"
		fi
		sleep 0.02
		if ctl slice.set "$PACED" >/dev/null 2>&1; then
			echo set >>"$TMP/toggle.log"
		fi
		sleep 0.05
	done
) &
TOGGLE=$!

# Done when both ports have delivered their whole file and the data path
# holds nothing any more (the wheel and slice queues drain in ms) -- or
# when nothing moves for 2 s.
deadline=$((SECONDS + 180))
last=
stable=0
while :; do
	kill -0 "$DPID" 2>/dev/null || fail "lockstepd died while reading the fuzz input"
	if snap=$(snapshot 2>/dev/null); then
		state=$(echo "$snap" | "$PY" -c '
import json, sys
s = json.load(sys.stdin)
b, p = s["bridge"], {q["name"]: q for q in s["status"]["ports"]}
print(p["host"]["rx_pkts"], p["fab"]["rx_pkts"],
      b["held"]["wheel"] + b["held"]["slices"] + b["held"]["rings"],
      b["counters"]["tx_fabric"], b["counters"]["tx_host"])')
		read -r hrx frx held _ _ <<<"$state"
		[ "$hrx" -ge "$nhost" ] && [ "$frx" -ge "$nfab" ] && [ "$held" = 0 ] && break
		if [ "$state" = "$last" ]; then
			stable=$((stable + 1))
			[ $stable -ge 4 ] && break
		else
			stable=0
		fi
		last=$state
	fi
	[ $SECONDS -lt $deadline ] || fail "timed out: host rx ${hrx:-?}/$nhost fabric rx ${frx:-?}/$nfab held ${held:-?}"
	sleep 0.5
done

touch "$TMP/toggle.stop"
wait "$TOGGLE" || true
ntoggle=$(grep -c . "$TMP/toggle.log" 2>/dev/null || true)
echo "test_bridge_fuzz: $ntoggle policy changes (slice.del / slice.set paced) during the input"
ctl slice.set "$PACED" >/dev/null || fail "slice.set paced after the input"

# lockstepd's own frames must be counted before the files are closed: stop
# probing (no more probes, no more ARP for the peer), then take the last
# snapshot once the counters stand still.
ctl peer.del '{"name": "n2"}' >/dev/null || fail "peer.del"
sleep 0.5
prev=
for _ in $(seq 20); do
	snap=$(snapshot) || fail "control socket not answering after the fuzz input"
	cur=$(echo "$snap" | "$PY" -c '
import json, sys
s = json.load(sys.stdin)
c = s["status"]["counters"]
print(c["tx_probes"], c["tx_replies"], c["tx_arp"], c["tx_nd"], c["tx_trace"],
      s["bridge"]["counters"])')
	[ "$cur" = "$prev" ] && break
	prev=$cur
	sleep 0.5
done
[ "$cur" = "$prev" ] || fail "counters still moving 10 s after the input ended"
echo "$snap" >"$TMP/final.json"

# Clean shutdown: exit status 0, control socket removed (net_pcap closes
# the tx_pcap files on stop).
lsd_stop_clean "after the fuzz input"

if [ "$FUZZ_SPREAD" = rss ]; then
	"$PY" "$HERE/gen_bridge_pcap.py" cat "$HOUT" "$HOUT.0" "$HOUT.1" &&
		"$PY" "$HERE/gen_bridge_pcap.py" cat "$FOUT" "$FOUT.0" "$FOUT.1" ||
		fail "merging the queues' output files"
fi
"$PY" "$HERE/gen_bridge_pcap.py" check "$HIN" "$FIN" "$HOUT" "$FOUT" >"$TMP/files.json" ||
	fail "reading the pcap files"

"$PY" - "$TMP/final.json" "$TMP/files.json" "$MIN_DELIVERED" "$FUZZ_LCORES" "$FUZZ_SPREAD" <<'EOF' || fail "counter check"
import json, sys
s = json.load(open(sys.argv[1]))
f = json.load(open(sys.argv[2]))
need = int(sys.argv[3])
nlc = int(sys.argv[4])
spread = sys.argv[5]
c = s["bridge"]["counters"]
held = s["bridge"]["held"]
st = s["status"]["counters"]
ports = {p["name"]: p for p in s["status"]["ports"]}
bad = []

def check(ok, what):
    print("  %-4s %s" % ("ok" if ok else "FAIL", what))
    if not ok:
        bad.append(what)

print("test_bridge_fuzz: bridge counters:")
for k, v in c.items():
    if v:
        print("    %-16s %9d" % (k, v))
print("    held: wheel %d, slices %d, rings %d; flows now %d" %
      (held["wheel"], held["slices"], held["rings"], s["bridge"]["flows"]))
for lc in s["bridge"]["lcores"]:
    print("    lcore %d: flows %d rx_host %d rx_fabric %d" %
          (lc["lcore"], lc["flows"], lc["rx_host"], lc["rx_fabric"]))
for sl in s["slices"]:
    x = sl["stats"]
    print("    slice %-8s enq %7d sent %7d drops %6d backlog %d" %
          (sl["name"], x["enq_pkts"], x["sent_pkts"], x["drops"], x["backlog"]))
print("    probe path: rx_pkts %d; tx probes %d replies %d arp %d nd %d dropped %d" %
      (st["rx_pkts"], st["tx_probes"], st["tx_replies"], st["tx_arp"], st["tx_nd"],
       st["tx_dropped"]))
print("    files: %s" % json.dumps({k: v for k, v in f.items() if k != "fwd_examples"}))

hrx, frx = ports["host"]["rx_pkts"], ports["fab"]["rx_pkts"]
print("test_bridge_fuzz: checks:")
check(hrx >= need and frx >= need, "PMDs delivered host %d, fabric %d frames (>= %d each)" % (hrx, frx, need))
check(hrx == f["host_in"] and frx == f["fab_in"],
      "every frame of both files was read: host %d of %d, fabric %d of %d" %
      (hrx, f["host_in"], frx, f["fab_in"]))
check(c["rx_host"] + c["spread_drops_host"] == hrx,
      "rx_host %d + spread_drops_host %d = host port rx %d" %
      (c["rx_host"], c["spread_drops_host"], hrx))
drops = c["pace_drops"] + c["wheel_full"] + c["slice_drops"] + c["tx_drops_fabric"]
q = held["wheel"] + held["slices"] + held["rings"]
check(c["rx_host"] == c["tx_fabric"] + drops + q,
      "host side: rx_host %d = tx_fabric %d + pace_drops %d + wheel_full %d + slice_drops %d "
      "+ tx_drops_fabric %d + held %d (= %d)" %
      (c["rx_host"], c["tx_fabric"], c["pace_drops"], c["wheel_full"], c["slice_drops"],
       c["tx_drops_fabric"], q, c["tx_fabric"] + drops + q))
check(q == 0, "nothing held at the end: wheel %d, slices %d, rings %d" %
      (held["wheel"], held["slices"], held["rings"]))
if nlc > 1:
    lcs = s["bridge"]["lcores"]
    check(len(lcs) == nlc and all(x["flows"] > 0 and x["rx_host"] > 0 and x["rx_fabric"] > 0
                                   for x in lcs),
          "%d lcores, each with flows and frames from both sides: %s" % (nlc, lcs))
    check(c["spread_out"] > 0, "frames handed to the other lcore: %d" % c["spread_out"])
    check(s["bridge"]["spread"]["mode"] == spread and s["bridge"]["spread"]["queues"] == nlc
          if spread == "rss" else s["bridge"]["spread"]["mode"] == "soft",
          "the %s spread ran: %s" % (spread, s["bridge"]["spread"]))
# A frame the spread dropped (a full ring to its owner) was never
# classified: with none, the counts are exact; else short by at most those.
sdh = c["spread_drops_host"]
check(f["host_not_ip"] - sdh <= c["not_ip"] <= f["host_not_ip"] and
      f["host_bad_ip"] - sdh <= c["bad_ip"] <= f["host_bad_ip"] and
      (sdh > 0 or (c["not_ip"], c["bad_ip"]) == (f["host_not_ip"], f["host_bad_ip"])),
      "not_ip %d / bad_ip %d = what ls_flow_parse's copy finds in the host file (%d / %d), "
      "less at most the %d frames the spread dropped" %
      (c["not_ip"], c["bad_ip"], f["host_not_ip"], f["host_bad_ip"], sdh))
# A removed slice takes its drop counter with it, but the one removed here
# ("paced") never fills its queue (the wheel spaces its frames): so every
# slice drop is a full queue of a slice still there -- none is a frame the
# wheel released for a slice that had gone.
check(c["slice_drops"] == sum(x["stats"]["drops"] for x in s["slices"]),
      "slice_drops %d = sum of the slices' drops %d" %
      (c["slice_drops"], sum(x["stats"]["drops"] for x in s["slices"])))
check(frx == st["rx_pkts"] + c["rx_fabric"] + c["route_icmp"] + c["spread_drops_fabric"],
      "fabric side: port rx %d = probe path rx_pkts %d + rx_fabric %d + route_icmp %d "
      "+ spread_drops_fabric %d" %
      (frx, st["rx_pkts"], c["rx_fabric"], c["route_icmp"], c["spread_drops_fabric"]))
# RSS: frames to our MAC that arrive at another lcore's queue go to the
# lead over a ring, where a full one drops them (spread_drops_fabric)
ours_lost = f["fab_ours"] - st["rx_pkts"]
check(0 <= ours_lost <= (c["spread_drops_fabric"] if spread == "rss" else 0),
      "probe path rx_pkts %d = frames to lockstepd's MAC in the fabric file %d, less %d "
      "the spread dropped on the way to the lead" % (st["rx_pkts"], f["fab_ours"], ours_lost))
disp = sum(v for k, v in st.items() if k.startswith("rx_") and k != "rx_pkts")
check(disp == st["rx_pkts"], "probe path dispositions add up: %d = rx_pkts %d" % (disp, st["rx_pkts"]))
check(c["rx_fabric"] == c["tx_host"] + c["tx_drops_host"],
      "rx_fabric %d = tx_host %d + tx_drops_host %d" %
      (c["rx_fabric"], c["tx_host"], c["tx_drops_host"]))
check(f["host_out"] == c["tx_host"], "HOSTOUT.pcap frames %d = tx_host %d" % (f["host_out"], c["tx_host"]))
own = st["tx_probes"] + st["tx_replies"] + st["tx_arp"] + st["tx_nd"] + st["tx_trace"]
check(f["fab_out_fwd"] == c["tx_fabric"] and f["fab_out_own"] == own,
      "FABOUT.pcap frames %d = tx_fabric %d forwarded (%d found) + own %d "
      "(tx_probes %d + tx_replies %d + tx_arp %d + tx_nd %d + tx_trace %d; %d found)" %
      (f["fab_out"], c["tx_fabric"], f["fab_out_fwd"], own, st["tx_probes"], st["tx_replies"],
       st["tx_arp"], st["tx_nd"], st["tx_trace"], f["fab_out_own"]))
check(f["host_out_not_in"] == 0 and
      f["host_out_missing"] + ours_lost == c["tx_drops_host"] + c["spread_drops_fabric"],
      "fabric -> host frames byte-identical: %d out not in, %d missing + %d of ours lost "
      "= tx_drops_host %d + spread_drops_fabric %d" %
      (f["host_out_not_in"], f["host_out_missing"], ours_lost, c["tx_drops_host"],
       c["spread_drops_fabric"]))
def_drops = sum(x["stats"]["drops"] for x in s["slices"] if x["name"] == "default")
check(f["untouched_out_not_in"] == 0 and
      f["untouched_missing"] <= def_drops + c["spread_drops_host"],
      "untouched frames (not IP, bad IP) byte-identical: in %d, out %d, %d out not in, "
      "%d missing (default slice drops %d, spread_drops_host %d)" %
      (f["untouched_in"], f["untouched_out"], f["untouched_out_not_in"],
       f["untouched_missing"], def_drops, c["spread_drops_host"]))
check(f["fwd_not_in"] == 0,
      "every forwarded IP frame is an input frame, changed at most in its entropy field, "
      "UDP checksum and ICRC as good as before: %d not (%d with a checksum broken) %s" %
      (f["fwd_not_in"], f["fwd_checksum_broken"], f["fwd_examples"]))
check(f["steered_out"] <= c["steered"],
      "frames changed on the way %d <= steered %d" % (f["steered_out"], c["steered"]))
check(f["roce_icrc_ok_out"] > 0, "RoCEv2 frames with a good ICRC came out: %d (in %d)" %
      (f["roce_icrc_ok_out"], f["roce_icrc_ok_in"]))
check(f["fab_out"] <= f["host_in"] + own and f["host_out"] <= f["fab_in"] and
      st["tx_replies"] <= st["rx_pkts"],
      "no amplification: fabric out %d <= host in %d + own %d, host out %d <= fabric in %d, "
      "replies %d <= probe path rx %d" %
      (f["fab_out"], f["host_in"], own, f["host_out"], f["fab_in"], st["tx_replies"], st["rx_pkts"]))
for k in ("pace_drops", "slice_drops", "steered", "paced", "multi_seg", "not_ip", "bad_ip",
          "flows_full", "ce_from_host", "ce_from_fabric", "reclassified"):
    check(c[k] > 0, "the input exercised %s (%d)" % (k, c[k]))
check(st["rx_reflected"] > 0, "probes to lockstepd were reflected (%d)" % st["rx_reflected"])
sys.exit(1 if bad else 0)
EOF
echo "test_bridge_fuzz: PASS"
