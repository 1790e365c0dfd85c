#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# net_bench.sh [DIR]: what the sandbox network costs, in one run.
#
#   * the network's set-up per sandbox (net_setup_bench: namespace, tap,
#     veth, NAT, egress program), what a create without a warm pool adds,
#     and the kernel memory one holds (net_setup_bench memory: 20 held);
#   * create to first command, without and with a warm pool, for a template
#     with a network device and for one without (--net none): the ratios
#     say what networking adds to a cold start;
#   * from inside a guest to a server in an "internet" namespace: TCP
#     throughput and UDP round trips with the egress program attached, then
#     with it detached from the same sandbox (ratio).
#
# BENCH_SAMPLES (default 5) sets the samples per figure, BENCH_NET_MEMORY_N
# (20) the networks held for the memory figure and BENCH_NETNS_WAIT_S
# (60) how long to wait for their namespaces to go once dropped; in the
# VM harness, cube.bench_samples=... and so on (cmdline_env.sh).
# DIR has the layout of `make demo-install` (default ../demo).  Needs root,
# /dev/kvm and cube.ko.  A measurement, not a test: under TCG the times are
# emulation's and only the ratios carry over to a KVM host.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/cmdline_env.sh"
dir=$(cd "${1:-$here/../demo}" && pwd)
work=/tmp/cube-net-bench.$$
export CUBE_STATE_DIR=$work/state CUBE_RUN_DIR=$work/run
export CUBE_VMM=$dir/cube-vmm CUBE_SHIM=$dir/cube-shim
C=$dir/cubectl
N=${BENCH_SAMPLES:-5}
ip() { /usr/sbin/ip "$@"; }

cubed=
cleanup() {
	[ -n "$cubed" ] && kill "$cubed" 2>/dev/null
	for t in benchnet benchnone; do $C pool set $t --size 0 >/dev/null 2>&1; done
	for i in $($C --json ls 2>/dev/null | sed -n 's/.*"id": *\([0-9]*\).*/\1/p'); do
		$C kill "$i" >/dev/null 2>&1
	done
	for t in benchnet benchnone; do $C template rm $t >/dev/null 2>&1; done
	for p in $(ip netns pids inet 2>/dev/null); do kill "$p"; done
	ip netns del inet 2>/dev/null
	ip route del 203.0.113.10/32 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$CUBE_STATE_DIR" "$CUBE_RUN_DIR" /var/run/netns

kernel=${CUBE_KERNEL:-/boot/vmlinuz}
rootfs=$dir/rootfs.ext4
[ -e "$rootfs" ] || rootfs=$(ls /dev/disk/cube/rootfs-*.ext4 2>/dev/null | head -n 1)
cp "$rootfs" "$work/rootfs.ext4"

ms() { awk '{ printf "%d", $1 * 1000 }' /proc/uptime; }
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# the far end: 203.0.113.10 in namespace "inet", routed from here
ip netns add inet &&
ip link add w-inet type veth peer name eth0 netns inet &&
ip addr add 192.0.2.1/30 dev w-inet && ip link set w-inet up &&
ip -n inet addr add 192.0.2.2/30 dev eth0 && ip -n inet link set eth0 up &&
ip -n inet link set lo up && ip -n inet addr add 203.0.113.10/32 dev lo &&
ip -n inet route add default via 192.0.2.1 &&
ip route add 203.0.113.10/32 via 192.0.2.2 || { echo "# net_bench: no world"; exit 1; }
ip netns exec inet "$here/net_sink" 203.0.113.10 &

"$here/net_setup_bench" setup 20 || exit 1
"$here/net_setup_bench" memory "${BENCH_NET_MEMORY_N:-20}" || exit 1

for t in benchnet benchnone; do
	net=internet
	[ $t = benchnone ] && net=none
	$C template build $t --kernel "$kernel" --initrd "$dir/initramfs.cpio.gz" \
		--rootfs "$work/rootfs.ext4" --append cube.rootfstype=ext4 \
		--memory 256 --net $net >/dev/null || { echo "# net_bench: template build failed"; exit 1; }
done

# create_ms TEMPLATE: create to the first command's answer, then kill
create_ms() {
	t0=$(ms)
	id=$($C create --template "$1") || return 1
	$C exec "$id" -- true || return 1
	t1=$(ms)
	$C kill "$id" >/dev/null
	echo $((t1 - t0))
}

for t in benchnet benchnone; do
	i=0
	while [ $i -lt "$N" ]; do create_ms $t; i=$((i + 1)); done > "$work/cold-$t"
done

$C pool set benchnet --size "$N" >/dev/null
$C pool set benchnone --size "$N" >/dev/null
"$dir/cubed" --no-api 2>"$work/cubed.log" &
cubed=$!
full() { $C pool ls | awk -v n="$N" '$1 ~ /^bench(net|none)$/ && $3 >= n { f++ } END { exit f != 2 }'; }
i=0
while ! full && [ $i -lt 300 ] && kill -0 "$cubed" 2>/dev/null; do
	sleep 1
	i=$((i + 1))
done
full || { echo "# net_bench: the pools did not fill: $(tail -n 3 "$work/cubed.log")"; exit 1; }
kill "$cubed"
wait "$cubed" 2>/dev/null
cubed=
for t in benchnet benchnone; do
	i=0
	while [ $i -lt "$N" ]; do create_ms $t; i=$((i + 1)); done > "$work/warm-$t"
done
cn=$(median < "$work/cold-benchnet") c0=$(median < "$work/cold-benchnone")
wn=$(median < "$work/warm-benchnet") w0=$(median < "$work/warm-benchnone")
echo "# create to first command, no pool: network $cn ms, none $c0 ms (x$(echo "$cn $c0" | awk '{ printf "%.2f", $1 / $2 }')), median of $N"
echo "# create to first command, warm pool: network $wn ms, none $w0 ms (x$(echo "$wn $w0" | awk '{ printf "%.2f", $1 / $2 }')), median of $N"
echo "bench: figure=net_create runs=$N no_pool_net_ms=$cn no_pool_none_ms=$c0 pool_net_ms=$wn pool_none_ms=$w0"

# the data path, with and without the egress program
probe='
import socket, sys, time
n = 16 << 20
s = socket.create_connection(("203.0.113.10", 5001), timeout=30)
buf = b"x" * 65536
t = time.monotonic()
for _ in range(n // len(buf)):
    s.sendall(buf)
s.shutdown(socket.SHUT_WR)
s.recv(1)
mbs = n / (time.monotonic() - t) / 1e6
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.settimeout(2)
u.connect(("203.0.113.10", 5002))
r = []
for i in range(200):
    t = time.monotonic()
    u.send(b"p")
    u.recv(16)
    r.append((time.monotonic() - t) * 1e6)
r.sort()
print("%.1f %d %d" % (mbs, r[100], r[190]))'
id=$($C create --template benchnet) || exit 1
set -- $($C exec "$id" -- python3 -c "$probe")
on_t=$1 on_50=$2 on_95=$3
"$here/net_setup_bench" detach "$id" || exit 1
set -- $($C exec "$id" -- python3 -c "$probe")
off_t=$1 off_50=$2 off_95=$3
$C kill "$id" >/dev/null
echo "# guest to internet, TCP: $on_t MB/s with the egress program, $off_t MB/s without (x$(echo "$on_t $off_t" | awk '{ printf "%.2f", $1 / $2 }'))"
echo "# guest to internet, UDP round trip: p50 $on_50 us / p95 $on_95 us with, p50 $off_50 us / p95 $off_95 us without (x$(echo "$on_50 $off_50" | awk '{ printf "%.2f", $1 / $2 }'))"
echo "bench: figure=net_data tcp_mbs_egress=$on_t tcp_mbs_none=$off_t udp_rtt_p50_us_egress=$on_50 udp_rtt_p95_us_egress=$on_95 udp_rtt_p50_us_none=$off_50 udp_rtt_p95_us_none=$off_95"
