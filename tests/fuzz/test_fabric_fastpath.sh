#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# lockstep-fabric's IPv4 fast path decides exactly like the generic path: the
# same 60k frames (tests/fuzz/gen_fabric_pcap.py: IPv4 of every kind a switch
# must judge, IPv6, ARP, garbage) enter a 2x2 leaf-spine from h1, once as
# usual and once with --no-fastpath, and everything must be identical: the
# frames out of every host port (TTL, checksums, CE marks, ICMP errors, ARP
# replies; ECMP over two spines), the counters, every link direction's
# counters (ECN marks, tail drops, random loss), and with --hops the probes'
# per-hop truth records.
#
# The result does not depend on timing: h1's frames arrive in bursts (one
# rx burst shares an arrival time) and the links are fast enough (1 Tb/s) to
# drain a burst's queues long before the next burst, so every queue, mark
# and drop follows from the pcap alone.
#   LS_BUILD=build tests/fuzz/test_fabric_fastpath.sh      (as root)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
NAME=test_fabric_fastpath TAG=fabfast
. "$HERE/fabric_lib.sh"

frames=$(/usr/bin/python3 "$HERE/gen_fabric_pcap.py" "$TMP/in.pcap" --count 60000)

run() { # run NAME [fabric options]: replay in.pcap, keep what came out
	local name=$1 out=$TMP/$1 rx=0
	shift
	mkdir -p "$out"
	cat > "$out/topo.json" <<JSON
{"defaults": {"link": {"delay_ns": 1000, "rate_bps": 1000000000000, "buffer_bytes": 20000,
                       "ecn_bytes": 3000, "mtu": 9000, "loss": 0.01}},
 "switches": [{"name": "spine1", "role": "spine", "ipv4": "10.255.0.1", "ipv6": "fd00:ff::1"},
              {"name": "spine2", "role": "spine", "ipv4": "10.255.0.2", "ipv6": "fd00:ff::2"},
              {"name": "leaf1", "role": "leaf", "ipv4": "10.255.1.1", "ipv6": "fd00:ff:1::1"},
              {"name": "leaf2", "role": "leaf", "ipv4": "10.255.1.2", "ipv6": "fd00:ff:1::2"}],
 "links": [{"a": "leaf1", "b": "spine1"}, {"a": "leaf1", "b": "spine2"},
           {"a": "leaf2", "b": "spine1"}, {"a": "leaf2", "b": "spine2"}],
 "hosts": [{"name": "h1", "leaf": "leaf1", "ipv4": "10.1.0.1/24", "ipv6": "fd00:1::1/64",
            "dev": "net_pcap0,rx_pcap=$TMP/in.pcap,tx_pcap=$out/h1.pcap"},
           {"name": "h2", "leaf": "leaf1", "ipv4": "10.1.0.2/24", "ipv6": "fd00:1::2/64",
            "mac": "02:00:00:00:01:02", "dev": "net_pcap1,tx_pcap=$out/h2.pcap"},
           {"name": "h3", "leaf": "leaf2", "ipv4": "10.2.0.1/24", "ipv6": "fd00:2::1/64",
            "mac": "02:00:00:00:02:01", "dev": "net_pcap2,tx_pcap=$out/h3.pcap"},
           {"name": "h4", "leaf": "leaf2", "ipv4": "10.2.0.2/24", "ipv6": "fd00:2::2/64",
            "mac": "02:00:00:00:02:02", "dev": "net_pcap3,tx_pcap=$out/h4.pcap"}]}
JSON
	"$LS_BUILD/app/fabric/lockstep-fabric" --no-pci --no-huge -m 512 --lcores '0@(0,1)' \
		--file-prefix "$PRE$name" -- --topo "$out/topo.json" --dir "$out" \
		--socket "$out/ctl.sock" --sample-us 0 --icmp-rate 0 "$@" > "$out/fab.log" 2>&1 &
	PID=$!
	local ctl=("$LS_BUILD/tools/lockstepctl/lockstepctl" -s "$out/ctl.sock")
	fab_wait_socket "$out/ctl.sock" "$name"
	for _ in $(seq 1 600); do
		kill -0 "$PID" 2>/dev/null || fail "$name: lockstep-fabric died"
		rx=$("${ctl[@]}" call status |
			/usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["counters"]["rx_pkts"])')
		[ "$rx" -ge "$frames" ] && break
		sleep 0.2
	done
	[ "$rx" -ge "$frames" ] || fail "$name: received $rx of $frames frames"
	sleep 1 # everything delivered: the longest path is a few microseconds
	"${ctl[@]}" call status > "$out/status.json"
	"${ctl[@]}" call links > "$out/links.json"
	kill -TERM "$PID"
	wait "$PID" || fail "$name: exit status $? after SIGTERM"
	PID=""
}

run fast
run generic --no-fastpath
run fast-hops --hops --truth "$TMP/fast-hops/truth.jsonl"
run generic-hops --no-fastpath --hops --truth "$TMP/generic-hops/truth.jsonl"

/usr/bin/python3 - "$TMP" <<'PY'
import json, struct, sys

tmp = sys.argv[1]


def frames(path):
    out = []
    with open(path, "rb") as f:
        f.read(24)
        while True:
            h = f.read(16)
            if len(h) < 16:
                return out
            out.append(f.read(struct.unpack("<IIII", h)[2]))


def hops(path):
    # A record's absolute times depend on when its burst arrived: keep the
    # times relative to its arrival.
    out = []
    for line in open(path):
        r = json.loads(line)
        if r["type"] in ("hop", "drop"):
            t = r.pop("t")
            for k in ("depart", "deliver"):
                if k in r:
                    r[k] -= t
            out.append(r)
    return out


def links(path):
    return [{k: v for k, v in x.items() if k != "depth_bytes"} for x in json.load(open(path))]


failed = passed = 0


def check(ok, what):
    global failed, passed
    print("%s  %s" % ("ok  " if ok else "FAIL", what))
    failed += not ok
    passed += bool(ok)


for a, b in (("fast", "generic"), ("fast-hops", "generic-hops")):
    for h in ("h1", "h2", "h3", "h4"):
        fa, fb = frames("%s/%s/%s.pcap" % (tmp, a, h)), frames("%s/%s/%s.pcap" % (tmp, b, h))
        check(fa == fb and len(fa) > 0, "%s vs %s: %d and %d frames out of %s, identical"
              % (a, b, len(fa), len(fb), h))
    ca = json.load(open("%s/%s/status.json" % (tmp, a)))["counters"]
    cb = json.load(open("%s/%s/status.json" % (tmp, b)))["counters"]
    ca.pop("idle_sleeps", None)
    cb.pop("idle_sleeps", None)
    check(ca == cb, "%s vs %s: counters %s" % (a, b, {k: v for k, v in ca.items() if v}))
    la, lb = links("%s/%s/links.json" % (tmp, a)), links("%s/%s/links.json" % (tmp, b))
    tot = {}
    for x in la:
        for k, v in x["counters"].items():
            tot[k] = tot.get(k, 0) + v
    check(la == lb, "%s vs %s: per-link counters, totals %s" % (a, b, tot))
    # What the mix must exercise, or the comparison proves little.
    check(all(tot[k] > 0 for k in ("ecn_marked", "drop_tail", "drop_loss")) and
          all(ca[k] > 0 for k in ("icmp_time_exceeded", "no_route", "bad", "arp_answered")),
          "%s: CE marks, tail drops, random loss, Time Exceeded, no route, bad, ARP all seen" % a)
ha = hops("%s/fast-hops/truth.jsonl" % tmp)
hb = hops("%s/generic-hops/truth.jsonl" % tmp)
check(ha == hb and len(ha) > 1000, "hop truth: %d and %d records, identical" % (len(ha), len(hb)))
print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
PY
