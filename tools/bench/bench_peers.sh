#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Benchmark (not a test): a Pingmesh-sized peer list on one lockstepd
# (issue 28 C). Adds BENCH_PEERS peers x BENCH_PATHS paths (default 10,000
# x 8) through the control socket's peer.add, one at a time on one
# connection, and prints
#   - RSS (VmRSS) before, after, and after deleting them all again, and the
#     growth per peer-path ("all told": lcore and control side, clock-sync
#     estimators, allocator overhead);
#   - peer.add latency (p50, p99, max, as the client sees it; the client
#     pinned to the CPUs other than the lcore's, as isolcpus would);
#   - the control thread's CPU (ls-ctl's utime+stime from /proc) over
#     BENCH_SECS with every path probing;
#   - the time from starting lockstepd with a config file holding the same
#     peers to all of them installed (EAL start-up included; the figure for
#     an empty peer list is printed beside it).
#
#   sudo tools/bench/bench_peers.sh                   # from the repo root
#   LS_BUILD=/tmp/build BENCH_PEERS=2000 BENCH_PATHS=8 BENCH_SECS=10 \
#       sudo -E tools/bench/bench_peers.sh
#   BENCH_BASE=bd392a6 sudo -E tools/bench/bench_peers.sh   # and that commit
#   BENCH_SYNC_PATHS=1 sudo -E tools/bench/bench_peers.sh    # clock sync on 1 path a peer
#   BENCH_SYNC_PATHS=0 sudo -E tools/bench/bench_peers.sh    # clock sync off
#   BENCH_PEERS_FILE=1 sudo -E tools/bench/bench_peers.sh    # peer.add saving the list
#   BENCH_REPLY=1 sudo -E tools/bench/bench_peers.sh         # every peer replies
#   BENCH_LAT_OUT=FILE ...        # every peer.add: its start (s from the first) and ms
#
# BENCH_REPLY=1: the port is a memif whose other end is lockstep-load
# --reflect-any on core 0, answering every probe from the address and MAC it
# was sent to, so every path's windows and clock sync fill as with real
# reflectors; BENCH_SECS defaults to 90 then (the 60 s windows full). The
# figure counts what 90 s fill: the sync track (120 windows of the
# estimator's window, 12 s at a pair a second, 40 B each) takes 24 min to
# fill, so up to 4,800 B a synced path are still to come (docs/benchmarks.md).
#
# The port is net_null with no-rx=1 and every peer has a static next-hop
# MAC, so every path sends a coded pair each BENCH_INTERVAL_US (default 1 s,
# Pingmesh's pace) and no reply ever comes: the lcore does all its per-path
# work (timers, sequence tracking, loss), the control thread all of its
# (windows every 100 ms, snapshots every second); the histograms stay
# empty, so their share is what tests/unit/test_pathstats measures
# (ls_path_window_bytes) and docs/benchmarks.md adds. The base commit gets
# BENCH_BASE_PEERS peers (default 1000: before issue 28 lockstepd held at
# most 4,096 and ran out of memory near 3,800).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3
CORE=${BENCH_CORE:-1}
SECS=${BENCH_SECS:-10}
NPEERS=${BENCH_PEERS:-10000}
NPATHS=${BENCH_PATHS:-8}
INTERVAL_US=${BENCH_INTERVAL_US:-1000000}
BASE_PEERS=${BENCH_BASE_PEERS:-1000}
SYNC_PATHS=${BENCH_SYNC_PATHS:-}   # sync.paths; empty: the daemon's default (all); 0: sync off
REPLY=${BENCH_REPLY:-0}
[ "$REPLY" = 1 ] && SECS=${BENCH_SECS:-90}
bench_init bench_peers prs
# The client runs where an operator's lockstepctl would: off the polling
# core, as docs/deploy.md's isolcpus keeps everything else off it. Left to
# the scheduler it landed there now and then and waited behind the busy
# lcore for its time slice (up to 4.6 ms, perf sched), which was most of
# peer.add's p99.
HOUSE=$("$PY" -c 'import os, sys; print(",".join(str(c) for c in sorted(os.sched_getaffinity(0)) if c != int(sys.argv[1])))' "$CORE")
[ -n "$HOUSE" ] || fail "no CPU left for the client besides the lcore's ($CORE)"
SOCK=$TMP/ctl.sock
MSOCK=$TMP/refl.sock
DEV="net_null0,no-rx=1"
[ "$REPLY" = 1 ] && DEV="net_memif0,role=server,id=0,socket=$MSOCK,socket-abstract=no"

# reflector BUILD: lockstep-load answering every probe on the memif (core 0)
reflector() {
	local load=$1/app/load/lockstep-load
	[ -x "$load" ] || fail "no lockstep-load at $load"
	"$load" --no-pci --no-huge -m 512 --file-prefix "${PRE}ld" -l 0 \
		--vdev "net_memif0,role=client,id=0,socket=$MSOCK,socket-abstract=no" \
		-- --rx net_memif0 --reflect-any --flows 1 --duration 86400 >"$TMP/load.log" 2>&1 &
	RPID=$!
	PIDS+=("$RPID")
}

# config FILE NPEERS [PEERS_FILE [SYNC_PATHS]]: the daemon's configuration
# with NPEERS peers in it.
config() {
	"$PY" - "$1" "$SOCK" "$CORE" "$2" "$NPATHS" "$INTERVAL_US" "${3:-}" "${4:-}" "$DEV" <<'EOF'
import json, sys
out, sock, core, npeers, npaths, ival, pfile, sync_paths, dev = sys.argv[1:]
cfg = {
    "node": {"name": "bench-peers", "id": 1},
    "ports": [{"name": "p0", "dev": dev, "mac": "02:00:00:00:00:01",
               "ipv4": "10.128.0.1/9", "lcore": int(core)}],
    "peers": [{"name": "p%d" % i, "addr": "10.%d.%d.%d" % (129 + i // 62500, i // 250 % 250,
                                                            1 + i % 250),
               "mac": "02:00:00:%02x:%02x:%02x" % (i >> 16, (i >> 8) & 0xff, i & 0xff)}
              for i in range(int(npeers))],
    "probe": {"interval_us": int(ival), "paths": int(npaths)},
    # no peers file: each peer.add would rewrite the whole list (measured
    # separately, BENCH_PEERS_FILE=1), and a daemon started later would
    # load it instead of peers[]
    "control": {"socket": sock, "peers_file": pfile},
    "idle": {"backoff": False},
    "log": {"level": "warning"},
}
if sync_paths == "0":
    cfg["sync"] = {"enabled": False}
elif sync_paths:
    cfg["sync"] = {"paths": int(sync_paths)}
json.dump(cfg, open(out, "w"))
EOF
}

measure_failed() {
	fail "the measurement failed; lockstepd's log ends:"$'\n'"$(tail -n 20 "$TMP/ls.log")"$'\n'"lockstep-load's:"$'\n'"$(tail -n 5 "$TMP/load.log" 2>/dev/null)"
}

# measure LABEL BUILD: one daemon, peers added, probed, deleted; then one
# started from a config file. Bytes per path in $RESULT.
measure() {
	local n=$NPEERS t_empty t_full sp=$SYNC_PATHS
	# the base: fewer peers, and no sync.paths (it has no such key)
	[ "$2" = "$LS_BUILD" ] || { n=$BASE_PEERS; sp=""; }
	# BENCH_PEERS_FILE=1: keep control.peers_file as a daemon does by
	# default, so each peer.add/del rewrites the whole list (fsync'd)
	config "$TMP/empty.json" 0 "$([ "${BENCH_PEERS_FILE:-0}" = 1 ] && echo "$TMP/peers.json")" "$sp"
	bench_daemon "$2" "$TMP/empty.json" "$PRE" "$CORE"
	[ "$REPLY" = 1 ] && reflector "$2"
	taskset -c "$HOUSE" "$PY" - "$SOCK" "$LPID" "$n" "$NPATHS" "$SECS" "$1" "$TMP/res" "$REPLY" <<'EOF' || measure_failed

import json, os, socket, sys, time
sock, pid, n, npaths, secs, label, out, reply = sys.argv[1:]
pid, n, npaths, secs = int(pid), int(n), int(npaths), float(secs)

def rss():
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024

def ctl_ticks():
    for t in os.listdir("/proc/%d/task" % pid):
        if open("/proc/%d/task/%s/comm" % (pid, t)).read().strip() == "ls-ctl":
            f = open("/proc/%d/task/%s/stat" % (pid, t)).read().rsplit(")", 1)[1].split()
            return int(f[11]) + int(f[12])
    return 0

buf = b""
def connect():
    global s, buf
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(30)
    s.connect(sock)
    buf = b""
connect()
def call(cmd, args=None):
    global buf
    s.sendall((json.dumps({"cmd": cmd, "args": args or {}}) + "\n").encode())
    while b"\n" not in buf:
        buf += s.recv(1 << 20)
    line, buf = buf.split(b"\n", 1)
    return json.loads(line)

def by_mapping():
    """RSS by mapping kind, largest first: where what is not given back
    lives ([anon]: glibc's arenas of threads other than main, i.e. the
    control thread's heap; DPDK's memory; [heap]: the main arena)."""
    kinds, name = {}, None
    for line in open("/proc/%d/smaps" % pid):
        f = line.split()
        if "-" in f[0] and len(f[0].split("-")) == 2 and ":" not in f[0]:
            name = f[5] if len(f) > 5 else "[anon]"
            name = "DPDK's memory" if "rte" in name or "dpdk" in name or \
                "nohuge" in name or "map_" in name else name
            if name.startswith("/") and ".so" in name:
                name = "shared objects"
        elif f[0] == "Rss:":
            kinds[name] = kinds.get(name, 0) + int(f[1]) * 1024
    top = sorted(kinds.items(), key=lambda x: -x[1])[:5]
    return ", ".join("%s %.1f MiB" % (k, v / 2**20) for k, v in top)


r0 = rss()
map0 = by_mapping()
lat, added, err = [], 0, ""
starts = []
for i in range(n):
    a = {"name": "p%d" % i,
         "addr": "10.%d.%d.%d" % (129 + i // 62500, i // 250 % 250, 1 + i % 250),
         "mac": "02:00:00:%02x:%02x:%02x" % (i >> 16, (i >> 8) & 0xff, i & 0xff)}
    t = time.perf_counter()
    try:
        r = call("peer.add", a)
    except OSError as e:
        sys.exit("peer.add %d: %s; lockstepd %s" % (i + 1, e, "running" if os.path.exists(
            "/proc/%d" % pid) else "gone"))
    lat.append(time.perf_counter() - t)
    starts.append(t)
    if "error" in r:
        err = " (peer.add %d failed: %s)" % (i + 1, r["error"].get("message", r["error"]))
        break
    added += 1
if os.environ.get("BENCH_LAT_OUT"):           # each add: start (s from the first), ms
    with open(os.environ["BENCH_LAT_OUT"], "w") as f:
        for t, l in zip(starts, lat):
            f.write("%.6f %.3f\n" % (t - starts[0], l * 1e3))
time.sleep(2)                               # timers armed, windows started
r1 = rss()
hz = os.sysconf("SC_CLK_TCK")
c0, t0 = ctl_ticks(), time.time()
time.sleep(secs)
c1, t1 = ctl_ticks(), time.time()
cpu = 100.0 * (c1 - c0) / hz / (t1 - t0)
connect()   # the daemon closes a connection idle for a minute
st = call("status")["result"]
sent = st["counters"]["tx_probes"]
r2 = rss()
if reply == "1":
    c = st["counters"]
    print("bench_peers:%s replies: %d probes sent, %d replies received, %d to no path" % (
          label, sent, c.get("rx_reply", 0), c.get("rx_reply_no_path", 0)))
t = time.perf_counter()
for i in range(added):
    call("peer.del", {"name": "p%d" % i})
tdel = time.perf_counter() - t
time.sleep(1)
r3 = rss()

time.sleep(2)
print("bench_peers:%s RSS by mapping at start: %s; 3 s after peer.del of all (%.0f MiB): %s"
      % (label, map0, rss() / 2**20, by_mapping()))
lat.sort()
q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] * 1e3 if lat else 0
paths = max(1, added * npaths)
per = (r2 - r0) / paths
print("bench_peers:%s %d peers x %d paths added%s: RSS %.0f MiB before, %.0f MiB with "
      "them (%.0f MiB after %.0f s of probing), %.0f MiB after peer.del of all (%.1f s); "
      "%.0f B per peer-path (%.2f KiB)" % (
      label, added, npaths, err, r0 / 2**20, r1 / 2**20, r2 / 2**20, secs, r3 / 2**20, tdel,
      per, per / 1024))
print("bench_peers:%s peer.add latency p50 %.3f ms, p99 %.3f ms, max %.3f ms; control "
      "thread (ls-ctl) CPU %.1f%% of a core at %d paths; probes sent so far %d" % (
      label, q(0.5), q(0.99), q(1.0), cpu, added * npaths, sent))
open(out, "w").write("%.0f\n" % per)
EOF
	kill -TERM "$LPID"; wait "$LPID" || true; rm -f "$SOCK"
	[ "$REPLY" = 1 ] && { kill -TERM "$RPID"; wait "$RPID" || true; }
	RESULT=$(cat "$TMP/res")
	# start-up from a config file: empty, then with the peers
	for f in empty full; do
		[ $f = full ] && config "$TMP/full.json" "$n" "" "$sp"
		local t=$(date +%s.%N)
		bench_daemon "$2" "$TMP/$f.json" "$PRE" "$CORE"
		local want=0; [ $f = full ] && want=$n
		for _ in $(seq 600); do
			[ "$(ctl "$2" status | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["n_peers"])')" = "$want" ] && break
			sleep 0.05
		done
		local e=$(echo "$(date +%s.%N) - $t" | bc)
		[ $f = empty ] && t_empty=$e || t_full=$e
		kill -TERM "$LPID"; wait "$LPID" || true; rm -f "$SOCK"
	done
	[ -z "$sp" ] || echo "bench_peers:$1 (config: sync.paths $sp; 0 = sync off)"
	printf "bench_peers:%s config file with %d peers x %d paths: all installed %.2f s after start (%.2f s with no peers)\n" \
		"$1" "$n" "$NPATHS" "$t_full" "$t_empty"
}
bench_rounds measure
bench_summary "B per peer-path"
