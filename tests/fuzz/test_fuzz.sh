#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Fuzz test: replay >= 100k hostile frames (gen_fuzz_pcap.py) into lockstepd
# through a net_pcap port and check that it survives, that every received
# frame lands in exactly one disposition counter, and that it shuts down
# cleanly.
#
#   sudo tests/fuzz/test_fuzz.sh                          # from the repo root
#   LS_BUILD=/tmp/build FUZZ_COUNT=200000 FUZZ_SEED=7 sudo -E tests/fuzz/test_fuzz.sh
# Long mode (not in CI), on the sanitizer build (tools/test_sanitize makes it):
#   LS_BUILD=build-asan FUZZ_COUNT=10000000 FUZZ_SEED=$RANDOM tests/fuzz/test_fuzz.sh
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
FUZZ_COUNT=${FUZZ_COUNT:-120000}
FUZZ_SEED=${FUZZ_SEED:-8762}
MIN_DELIVERED=100000
NAME=test_fuzz TAG=fuzz
. "$HERE/../lsd_lib.sh"      # LS_BUILD, DAEMON, PY, TMP, SOCK, DPID, fail, ctl, lsd_fuzz_*
lsd_fuzz_begin

IN=$TMP/fuzz.pcap
OUT=$TMP/out.pcap
frames=$("$PY" "$HERE/gen_fuzz_pcap.py" "$IN" --count "$FUZZ_COUNT" --seed "$FUZZ_SEED")
echo "test_fuzz: generated $frames frames (seed $FUZZ_SEED)"

# Rate limit far above the replay rate, so valid probes are reflected and
# the reply path (checksums, TLV walk, trimming) sees the hostile input too.
cat >"$TMP/fuzz.json" <<EOF
{
  "node": {"name": "fuzz", "id": 7},
  "ports": [{"name": "p0", "dev": "net_pcap0,rx_pcap=$IN,tx_pcap=$OUT",
             "mac": "02:00:00:00:00:01", "ipv4": "10.9.0.1/24", "ipv6": "fd00:9::1/64"}],
  "peers": [{"name": "n2", "addr": "10.9.0.2", "port": "p0"}],
  "probe": {"interval_us": 10000, "paths": 4, "dst_port": 862, "src_port_base": 49152},
  "reflector": {"rate_pps": 100000000, "burst": 1000000, "max_sources": 65536},
  "control": {"socket": "$SOCK", "peers_file": ""},
  "idle": {"backoff": true},
  "log": {"level": "info"}
}
EOF

"$DAEMON" --no-pci --no-huge -m 512 --file-prefix "$PREFIX" --lcores '0@(0,1)' \
	-- --config "$TMP/fuzz.json" >"$TMP/daemon.log" 2>&1 &
DPID=$!

# Done when the daemon has classified everything the PMD delivered and the
# PMD has stopped delivering (end of file) -- or when all frames are in.
# 120 s for the CI corpus; a long run (FUZZ_COUNT=10000000) gets 1 s per 20k frames more
wait_s=$((120 + FUZZ_COUNT / 20000))
deadline=$((SECONDS + wait_s))
last=-1
stable=0
while :; do
	kill -0 "$DPID" 2>/dev/null || fail "lockstepd died while reading the fuzz input"
	if st=$(ctl status 2>/dev/null); then
		read -r rx port_rx < <(echo "$st" | "$PY" -c '
import json, sys
s = json.load(sys.stdin)
print(s["counters"]["rx_pkts"], s["ports"][0]["rx_pkts"])')
		[ "$rx" -ge "$frames" ] && break
		if [ "$rx" = "$port_rx" ] && [ "$rx" = "$last" ] && [ "$rx" -gt 0 ]; then
			stable=$((stable + 1))
			[ $stable -ge 4 ] && break
		else
			stable=0
		fi
		last=$rx
	fi
	[ $SECONDS -lt $deadline ] || fail "timed out: rx_pkts ${rx:-?} of $frames after $wait_s s"
	sleep 0.5
done

# Still alive and answering after the whole input.
kill -0 "$DPID" 2>/dev/null || fail "lockstepd is not running after the fuzz input"
ctl status >"$TMP/status.json" || fail "control socket not answering after the fuzz input"

"$PY" - "$TMP/status.json" "$frames" "$MIN_DELIVERED" <<'EOF' || fail "counter check"
import json, sys
s = json.load(open(sys.argv[1]))
frames, need = int(sys.argv[2]), int(sys.argv[3])
c = s["counters"]
port_rx = s["ports"][0]["rx_pkts"]
disp = {k: v for k, v in c.items() if k.startswith("rx_") and k != "rx_pkts"}
total = sum(disp.values())
print("test_fuzz: frames in file %d, delivered by the PMD %d, counted rx_pkts %d, "
      "sum of dispositions %d" % (frames, port_rx, c["rx_pkts"], total))
for k, v in sorted(disp.items(), key=lambda kv: -kv[1]):
    print("  %-24s %8d" % (k, v))
print("  tx: replies %d probes %d arp %d nd %d dropped %d; tlv_unknown %d tlv_malformed %d "
      "alloc_failed %d" % (c["tx_replies"], c["tx_probes"], c["tx_arp"], c["tx_nd"],
                           c["tx_dropped"], c["tlv_unknown"], c["tlv_malformed"],
                           c["alloc_failed"]))
bad = []
if port_rx < need:
    bad.append("PMD delivered %d frames, need >= %d" % (port_rx, need))
if c["rx_pkts"] != port_rx:
    bad.append("rx_pkts %d != port rx_pkts %d" % (c["rx_pkts"], port_rx))
if total != c["rx_pkts"]:
    bad.append("dispositions sum %d != rx_pkts %d (off by %d)" % (total, c["rx_pkts"], total - c["rx_pkts"]))
if c["rx_reflected"] == 0:
    bad.append("nothing reflected: valid probes in the mix were not answered")
if c["rx_rate_limited"] != 0:
    bad.append("%d rate-limited despite rate_pps 1e8" % c["rx_rate_limited"])
for b in bad:
    print("test_fuzz: " + b)
sys.exit(1 if bad else 0)
EOF

# Clean shutdown: exit status 0 and the control socket removed.
lsd_stop_clean "after the fuzz input"

# Everything the daemon sent must be well-formed with correct checksums
# (the pcap PMD writes tx_pcap on close). Port 862 is decoded as STAMP so
# that random reply ports do not trip unrelated heuristic dissectors.
# tshark is in tools/deps: without it these checks cannot run, which is a
# failure, never a pass.
command -v tshark >/dev/null || fail "tshark not installed (tools/deps): cannot check what the daemon transmitted"
{
	# Frames of $OUT matching display filter $1 (tshark errors are fatal).
	tcount() {
		tshark -r "$OUT" -d udp.port==862,twamp.test -o udp.check_checksum:TRUE \
			-o ip.check_checksum:TRUE ${1:+-Y "$1"} -T fields -e frame.number \
			>"$TMP/tshark.out" 2>"$TMP/tshark.err" ||
			fail "tshark on $OUT: $(grep -v 'Running as user' "$TMP/tshark.err")"
		wc -l <"$TMP/tshark.out"
	}
	nout=$(tcount "")
	nbad=$(tcount 'ip.checksum.status==0 || udp.checksum.status==0 ||
		icmpv6.checksum.status==0 || _ws.malformed')
	# A packet "from" our own address is spoofed; answering it sends a reply
	# to ourselves (a loop on a hairpinning switch or with two reflectors).
	# The same goes for the subnet's broadcast address (directed broadcast).
	nself=$(tcount 'ip.dst==10.9.0.1 || ipv6.dst==fd00:9::1')
	nbcast=$(tcount 'ip.dst==10.9.0.255')
	echo "test_fuzz: daemon transmitted $nout frames: $nbad malformed/bad checksum," \
		"$nself addressed to itself, $nbcast to the subnet broadcast"
	[ "$nbad" -eq 0 ] || fail "$nbad transmitted frames malformed or with bad checksums"
	[ "$nself" -eq 0 ] || fail "$nself replies sent to the daemon's own address (a source address of ours was reflected)"
	[ "$nbcast" -eq 0 ] || fail "$nbcast replies sent to 10.9.0.255 (a subnet-broadcast source was reflected)"
	[ "$nout" -gt 0 ] || fail "the daemon transmitted nothing (tx pcap empty): nothing checked"
}
echo "test_fuzz: PASS"
