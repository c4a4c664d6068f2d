#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# lab.sh: bring up a lab mesh of lockstepd appliances on one machine.
#
#   tools/lab/lab.sh up   [--nodes N] [--transport memif|veth] [--dir DIR]
#                         [--interval-us US] [--paths P] [--lcores L] [--build DIR]
#   tools/lab/lab.sh up   --topo FILE [--truth [--sample-us N] [--truth-max-mb N]] [--link memif|pcap] [--extra JSON]
#                         [--fabric-core CPU] [--rx-trailer] [--tx-trailer] [--dir DIR]
#                         [--interval-us US]
#                         [--paths P]
#   tools/lab/lab.sh restart-node --node I [--dir DIR] [--fabric-core CPU]
#   tools/lab/lab.sh down [--dir DIR]
#   tools/lab/lab.sh mesh [--dir DIR] [lockstepctl mesh options]
#
# memif: every pair of nodes gets its own memif link (a full mesh of
#   point-to-point links, node i the memif server for pairs (i, j>i)); each
#   link is its own /24, so no routing is needed.
# veth:  every node lives in its own network namespace with one veth into a
#   Linux bridge in a "switch" namespace; lockstepd drives its veth through
#   net_af_packet, the kernel keeps no address on it, and ARP/ND/STAMP are
#   all lockstepd's own. One /24 (and one IPv6 /64) for the whole mesh.
#
# fabric (--topo): lockstep-fabric emulates the topology's leaf-spine network
#   (config/fabric/*.json); every host of it is one lockstepd, connected by a
#   memif link to the emulator, probing every other host. --truth records the
#   ground truth (queues, link events, every probe's hops) in DIR/truth.jsonl;
#   --sample-us sets its queue-depth sampling (0: none, which keeps a busy
#   fabric's probe records from being crowded out); --truth-max-mb N the
#   file's cap (default 1024; 0: none).
#   --link pcap puts a veth pair between each host and the emulator instead
#   of memif: lockstepd drives its end with net_pcap, so every frame it
#   receives carries the kernel's receive stamp, which it uses as receive
#   time (its own polling delay no longer shows in one-way delays); the
#   emulator drives the other end with net_af_packet (no stamps, but frames
#   are seen at once: libpcap's TPACKET_V3 would hand them over ~1 ms late)
#   and takes ingress time when it polls them. --fabric-core CPU gives the
#   emulator that CPU to itself, busy polling (no idle sleep), and keeps the
#   daemons (and all their threads) on the other CPUs: its ingress and
#   delivery times are then within a few us of the truth, which is what
#   faithful one-way delays need (docs/fabric.md, "One-way delays in the
#   lab"). --rx-trailer makes the emulator act as the hosts' NICs with
#   receive stamps: it appends to every frame it delivers the instant the
#   model delivered it, and the daemons (clock.rx_trailer) take their
#   receive stamps from there, free of kernel and polling delays (the lab's
#   stand-in for hardware stamps; transmit stamps stay software TSC reads).
#   --tx-trailer makes it act as NICs that send on a timestamp: the daemons
#   (clock.tx_trailer) stamp T1 and T3 a lead ahead and append that instant,
#   and the emulator puts each such frame on the wire at it (the lab's
#   stand-in for send scheduling, e.g. mlx5's; docs/clocks.md).
#   --extra merges {"*": {...}, "<host>": {...}} into the daemons'
#   configs (simulated clocks, sync settings; see fabric_configs.py).
#
# Every daemon runs without hugepages, with its own --file-prefix, on an
# lcore allowed to float over all CPUs, and with idle back-off on, so a
# dozen share two cores. `down` always cleans up processes, namespaces,
# sockets and DPDK runtime files, even after a crash.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
dir=/tmp/lockstep-lab
nodes=4
transport=memif
interval_us=10000
paths=4
lcores=1   # polling lcores per daemon; memif ports are spread over them
topo=""
truth=0
sample_us=""
truth_max_mb=""
link=memif
extra=""
only=""
rx_trailer=0
tx_trailer=0
fabric_core=""  # CPU the emulator busy-polls on, alone; "" = shares all CPUs
build="${LS_BUILD:-$root/build}"
PY=/usr/bin/python3

die() { echo "lab: $*" >&2; [ "${cmd:-}" = up ] && do_down quiet; exit 1; }

cmd=${1:-}
[ -n "$cmd" ] && shift || true
while [ $# -gt 0 ]; do
	case "$1" in
	--nodes) nodes=$2; shift 2 ;;
	--transport) transport=$2; shift 2 ;;
	--dir) dir=$2; shift 2 ;;
	--interval-us) interval_us=$2; shift 2 ;;
	--paths) paths=$2; shift 2 ;;
	--lcores) lcores=$2; shift 2 ;;
	--topo) topo=$2; transport=fabric; shift 2 ;;
	--truth) truth=1; shift ;;
	--sample-us) sample_us=$2; shift 2 ;;
	--truth-max-mb) truth_max_mb=$2; shift 2 ;;
	--link) link=$2; shift 2 ;;
	--extra) extra=$2; shift 2 ;;
	--node) only=$2; shift 2 ;;
	--fabric-core) fabric_core=$2; shift 2 ;;
	--rx-trailer) rx_trailer=1; shift ;;
	--tx-trailer) tx_trailer=1; shift ;;
	--build) build=$2; shift 2 ;;
	*) break ;;
	esac
done
usage() { awk 'NR > 3 && !/^#/ { exit } NR > 3 { sub(/^# ?/, ""); print }' "$0"; }
case "$cmd" in
-h|--help|help) usage; exit 0 ;;
mesh|watch) ;;    # the rest goes to lockstepctl
*) if [ $# -gt 0 ]; then
	# before anything is touched: a typo must not bring up (or down) a lab
	echo "lab: unknown option \"$1\" for \"$cmd\" (tools/lab/lab.sh --help)" >&2
	exit 2
   fi ;;
esac

lockstepd="$build/app/lockstepd/lockstepd"
lockstepctl="$build/tools/lockstepctl/lockstepctl"
fabric="$build/app/fabric/lockstep-fabric"

# The lab directory holds the pid files `down` kills and the configs the
# daemons run as root: it must be ours alone, or another local user who
# made it first could have us kill any process, overwrite a file through a
# link, or run their config (issue 27 M4).
dir_private() {
	[ -d "$dir" ] && [ ! -L "$dir" ] && [ "$(stat -c %u "$dir")" = "$(id -u)" ] &&
		(( (8#$(stat -c %a "$dir") & 8#022) == 0 ))
}

# Create the lab directory 0700, or accept an existing one only if private.
make_dir() {
	mkdir -p "$(dirname "$dir")"
	mkdir -m 0700 "$dir" 2>/dev/null || true
	dir_private || die "$dir is not a private directory of ours (a symbolic link," \
		"another user's, or writable by group or others): refusing;" \
		"remove it or give another --dir"
}

# A unique tag keeps namespaces of parallel labs (and tests) apart.
tag_of() { echo "ls$(echo -n "$dir" | md5sum | cut -c1-6)"; }

mac_of() { printf '02:00:00:00:%02x:%02x' "$1" "$2"; }

node_json() { # node_json I PORTS_JSON PEERS_JSON
	cat <<JSON
{
  "node": {"name": "n$1", "id": $1},
  "ports": [$2],
  "peers": [$3],
  "probe": {"interval_us": $interval_us, "paths": $paths},
  "control": {"socket": "$dir/n$1.sock", "peers_file": ""},
  "capture": {"dir": "$dir"},
  "idle": {"backoff": true, "after_polls": 64, "sleep_us": 200},
  "log": {"level": "info"}
}
JSON
}

gen_memif() {
	local i j link ports peers
	for ((i = 1; i <= nodes; i++)); do
		ports=""; peers=""; np=0
		for ((j = 1; j <= nodes; j++)); do
			[ "$i" = "$j" ] && continue
			if ((i < j)); then a=$i; b=$j; role=server; me=1; them=2
			else a=$j; b=$i; role=client; me=2; them=1; fi
			link=$((a * 16 + b))
			ports+="${ports:+,}
    {\"name\": \"l$a-$b\", \"dev\": \"net_memif$link,role=$role,id=0,socket=$dir/memif/$a-$b.sock,socket-abstract=no\", \"mac\": \"$(mac_of "$i" "$j")\", \"ipv4\": \"10.$a.$b.$me/24\", \"lcore\": $((np++ % lcores))}"
			peers+="${peers:+,}
    {\"name\": \"n$j\", \"addr\": \"10.$a.$b.$them\", \"port\": \"l$a-$b\"}"
		done
		node_json "$i" "$ports" "$peers" > "$dir/n$i.json"
	done
}

gen_veth() {
	local i j peers
	for ((i = 1; i <= nodes; i++)); do
		peers=""
		for ((j = 1; j <= nodes; j++)); do
			[ "$i" = "$j" ] && continue
			peers+="${peers:+,}
    {\"name\": \"n$j\", \"addr\": \"10.9.0.$j\"},
    {\"name\": \"n${j}v6\", \"addr\": \"fd00:9::$j\"}"
		done
		node_json "$i" "
    {\"name\": \"p0\", \"dev\": \"net_af_packet0,iface=$(tag_of)v$i\", \"mac\": \"$(mac_of "$i" 0)\", \"ipv4\": \"10.9.0.$i/24\", \"ipv6\": \"fd00:9::$i/64\"}" \
			"$peers" > "$dir/n$i.json"
	done
}

setup_veth_net() {
	local t i
	t=$(tag_of)
	ip netns add "${t}sw"
	ip -n "${t}sw" link add br0 type bridge
	ip -n "${t}sw" link set br0 up
	for ((i = 1; i <= nodes; i++)); do
		ip netns add "${t}n$i"
		ip link add "${t}v$i" type veth peer name "${t}b$i"
		ip link set "${t}v$i" netns "${t}n$i"
		ip link set "${t}b$i" netns "${t}sw"
		ip -n "${t}sw" link set "${t}b$i" master br0 up
		# The kernel keeps quiet on the appliance's wire: no IPv6 (no RS,
		# no MLD, no DAD), so every frame there is lockstepd's.
		ip netns exec "${t}n$i" sysctl -qw "net.ipv6.conf.${t}v$i.disable_ipv6=1"
		ip -n "${t}n$i" link set "${t}v$i" up
		ip -n "${t}n$i" link set lo up
	done
}

# The CPUs the daemons may use: all this shell may run on, less the
# emulator's own (--fabric-core). Prints them comma-separated.
node_cpus() {
	local c x out=""
	for c in $(taskset -pc $$ | sed 's/.*: //' | tr ',' ' '); do
		case "$c" in
		*-*) c=$(seq "${c%-*}" "${c#*-}") ;;
		esac
		for x in $c; do
			[ "$x" = "$fabric_core" ] || out+="${out:+,}$x"
		done
	done
	echo "$out"
}

# Node indices to start: all, or just --node.
node_list() { if [ -n "$only" ]; then echo "$only"; else seq 1 "$nodes"; fi; }

start_nodes() {
	local i prefix=() t eal_lcores="" l cpus
	t=$(tag_of)
	# Every lcore may float over every CPU (the lab shares two cores) but
	# the emulator's own one, if it has one. taskset keeps the daemons' EAL
	# control threads off that CPU too.
	cpus=$(node_cpus)
	for ((l = 0; l < lcores; l++)); do eal_lcores+="${eal_lcores:+,}$l@($cpus)"; done
	for i in $(node_list); do
		prefix=(taskset -c "$cpus")
		[ "$transport" = veth ] && prefix=(ip netns exec "${t}n$i" "${prefix[@]}")
		# A subshell waits for the daemon and writes its exit status to
		# n$i.rc (tests check that SIGTERM exits 0); n$i.pid is the daemon's.
		rm -f "$dir/n$i.rc"
		(
			"${prefix[@]}" "$lockstepd" --no-pci --no-huge -m 256 --lcores "$eal_lcores" \
				--file-prefix "${t}n$i" --log-level 'lib.eal:warning' -- \
				--config "$dir/n$i.json" > "$dir/n$i.log" 2>&1 &
			echo $! > "$dir/n$i.pid.new"
			mv "$dir/n$i.pid.new" "$dir/n$i.pid"
			rc=0
			wait $! || rc=$?
			echo $rc > "$dir/n$i.rc"
		) > /dev/null 2>&1 &
	done
	for i in $(node_list); do
		for _ in $(seq 1 100); do [ -s "$dir/n$i.pid" ] && break; sleep 0.05; done
	done
	# Wait for every control socket to answer.
	for i in $(node_list); do
		for _ in $(seq 1 150); do
			"$lockstepctl" -s "$dir/n$i.sock" status > /dev/null 2>&1 && break
			if ! kill -0 "$(cat "$dir/n$i.pid")" 2>/dev/null; then
				cat "$dir/n$i.log" >&2
				die "n$i exited during start-up (log above)"
			fi
			sleep 0.1
		done
		"$lockstepctl" -s "$dir/n$i.sock" status > /dev/null ||
			die "n$i does not answer on $dir/n$i.sock (see $dir/n$i.log)"
	done
}

start_fabric() {
	local t args=() i e
	t=$(tag_of)
	[ -f "$topo" ] || die "no topology file $topo"
	mkdir -p "$dir/fabric"
	case "$link" in memif|pcap) ;; *) die "unknown --link $link (memif or pcap)" ;; esac
	[ -z "$extra" ] || [ -f "$extra" ] || die "no --extra file $extra"
	nodes=$("$PY" "$here/fabric_configs.py" "$topo" "$dir" "$interval_us" "$paths" \
		"$link" "$extra" "$t" "$rx_trailer" "$tx_trailer" | wc -l)
	local ftopo=$topo
	if [ "$link" = pcap ]; then
		ftopo=$dir/topo.json
		for ((i = 1; i <= nodes; i++)); do
			ip link add "${t}f$i" type veth peer name "${t}h$i"
			for e in f h; do
				# nothing but the emulator and lockstepd speak on these wires
				sysctl -qw "net.ipv6.conf.${t}$e$i.disable_ipv6=1"
				ip link set "${t}$e$i" up
			done
		done
	fi
	[ "$truth" = 1 ] && args=(--truth "$dir/truth.jsonl" --hops)
	[ -n "$sample_us" ] && args+=(--sample-us "$sample_us")
	[ -n "$truth_max_mb" ] && args+=(--truth-max-mb "$truth_max_mb")
	[ "$rx_trailer" = 1 ] && args+=(--rx-trailer)
	[ "$tx_trailer" = 1 ] && args+=(--tx-trailer)
	# Shared CPUs: sleep when idle (never past the next event). Own CPU:
	# busy poll there; its control threads go to the other CPUs (EAL).
	local fl="0@($(node_cpus))" sleep=50
	[ -n "$fabric_core" ] && fl="0@$fabric_core" && sleep=0
	"$fabric" --no-pci --no-huge -m 512 --lcores "$fl" --file-prefix "${t}fab" \
		--log-level 'lib.eal:warning' -- --topo "$ftopo" --dir "$dir/fabric" \
		--socket "$dir/fabric/ctl.sock" --idle-sleep-us "$sleep" "${args[@]}" \
		> "$dir/fabric.log" 2>&1 &
	echo $! > "$dir/fabric.pid"
	for _ in $(seq 1 100); do
		[ -S "$dir/fabric/ctl.sock" ] && break
		kill -0 "$(cat "$dir/fabric.pid")" 2>/dev/null || { cat "$dir/fabric.log" >&2; die "lockstep-fabric exited"; }
		sleep 0.1
	done
	[ -S "$dir/fabric/ctl.sock" ] || die "lockstep-fabric does not answer (see $dir/fabric.log)"
}

do_up() {
	[ -x "$lockstepd" ] || die "no $lockstepd: build first (meson setup build && ninja -C build)"
	[ "$(id -u)" = 0 ] || die "needs root (DPDK runtime files, namespaces)"
	if [ -n "$fabric_core" ]; then
		[ "$transport" = fabric ] || die "--fabric-core needs --topo"
		[[ "$fabric_core" =~ ^[0-9]+$ ]] && [ -n "$(node_cpus)" ] &&
			[ "$(node_cpus | tr ',' '\n' | wc -l)" -lt "$(nproc)" ] ||
			die "--fabric-core $fabric_core: not one of this shell's CPUs, or the only one"
	fi
	make_dir
	do_down quiet
	# Whatever fails from here on, leave nothing half-started behind.
	trap 'echo "lab: up failed, cleaning up" >&2; do_down quiet' ERR
	mkdir -p "$dir"
	echo "$transport $nodes" > "$dir/lab.info"
	case "$transport" in
	fabric) start_fabric ;;
	memif) mkdir -p "$dir/memif"; gen_memif ;;
	veth) gen_veth; setup_veth_net ;;
	*) die "unknown transport $transport (memif or veth)" ;;
	esac
	start_nodes
	echo "lab: $nodes lockstepd up over $transport in $dir (sockets $dir/n*.sock)"
	if [ "$transport" = fabric ] && [ "$link" = pcap ] && [ -z "$fabric_core" ] &&
	   [ "$(nproc)" -gt 1 ]; then
		echo "lab: note: the emulator shares the CPUs and sleeps when idle; for faithful" \
			"one-way delays give it a core: --fabric-core $(($(nproc) - 1))" >&2
	fi
}

do_down() {
	local t pid
	t=$(tag_of)
	if [ -e "$dir" ] && ! dir_private; then
		echo "lab: $dir is not a private directory of ours: its pid files are left alone" >&2
	elif [ -d "$dir" ]; then
		for f in "$dir"/n*.pid "$dir"/fabric.pid; do
			[ -e "$f" ] || continue
			pid=$(cat "$f")
			kill -TERM "$pid" 2>/dev/null || true
		done
		for f in "$dir"/n*.pid "$dir"/fabric.pid; do
			[ -e "$f" ] || continue
			pid=$(cat "$f")
			for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
			kill -KILL "$pid" 2>/dev/null || true
			rm -f "$f"
		done
		rm -f "$dir"/*.sock "$dir"/memif/*.sock "$dir"/fabric/*.sock
	fi
	for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$t" || true); do
		ip netns del "$ns" 2>/dev/null || true
	done
	for l in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | grep "^${t}f[0-9]" || true); do
		ip link del "$l" 2>/dev/null || true
	done
	rm -rf /var/run/dpdk/"$t"n* /var/run/dpdk/"$t"fab 2>/dev/null || true
	[ "${1:-}" = quiet ] || echo "lab: down ($dir)"
}

# Stop node --node I (SIGTERM) and start it again with the same config: a
# daemon restart, for tests of rejoining. Give the same --fabric-core as up.
do_restart_node() {
	local pid
	[ -n "$only" ] || die "restart-node needs --node I"
	dir_private || die "$dir is not a private directory of ours: refusing"
	read -r transport nodes < "$dir/lab.info"
	pid=$(cat "$dir/n$only.pid")
	kill -TERM "$pid" 2>/dev/null || true
	for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$pid" 2>/dev/null || true
	# A memif server (the emulator) may not have let go of the old
	# connection yet, and refuses the new one: the daemon then fails to
	# start its port (seen once in a parallel test run). Try again.
	for try in 1 2 3; do
		(start_nodes) && break
		[ "$try" = 3 ] && die "n$only did not restart"
		echo "lab: n$only did not start, trying again in 1 s" >&2
		sleep 1
	done
	echo "lab: n$only restarted"
}

case "$cmd" in
up) do_up ;;
restart-node) do_restart_node ;;
down) do_down ;;
mesh) exec "$lockstepctl" mesh --dir "$dir" "$@" ;;
watch) exec "$lockstepctl" watch --dir "$dir" "$@" ;;
*) usage >&2; exit 2 ;;
esac
