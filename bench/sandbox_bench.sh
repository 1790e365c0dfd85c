#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# sandbox_bench.sh [DIR]: boot-to-ready and restore-to-ready through
# cubectl.  Builds a template from the guest images in DIR (the layout of
# `make demo-install`: cubectl, cube-shim, cube-vmm, initramfs.cpio.gz,
# rootfs.ext4 or the test machine's rootfs disk; default ../demo beside this
# script), reports how long the build took (boot, agent ready, snapshot),
# then runs sandbox_bench at each of $BENCH_CONCURRENCY (default "1 50").
# Needs root, /dev/kvm and cube.ko.  A measurement, not a test.
set -u
here=$(cd "$(dirname "$0")" && pwd)
dir=$(cd "${1:-$here/../demo}" && pwd)
work=/tmp/cube-bench.$$
export CUBE_STATE_DIR=$work/state CUBE_RUN_DIR=$work/run
export CUBE_VMM=$dir/cube-vmm CUBE_SHIM=$dir/cube-shim
C=$dir/cubectl
trap '$C template rm bench >/dev/null 2>&1; rm -rf "$work"' EXIT
mkdir -p "$CUBE_STATE_DIR" "$CUBE_RUN_DIR"

# the kernel whose modules the initramfs carries: make benchmarks names it
kernel=${CUBE_KERNEL:-/boot/vmlinuz}
rootfs=$dir/rootfs.ext4
[ -e "$rootfs" ] || rootfs=$(ls /dev/disk/cube/rootfs-*.ext4 2>/dev/null | head -n 1)
if [ -b "$rootfs" ]; then
	cp "$rootfs" "$work/rootfs.ext4"
	rootfs=$work/rootfs.ext4
fi

t0=$(cut -d' ' -f1 /proc/uptime)
$C template build bench --kernel "$kernel" --initrd "$dir/initramfs.cpio.gz" \
	--rootfs "$rootfs" --append cube.rootfstype=ext4 --memory 256 >/dev/null || {
	echo "# sandbox_bench: template build failed"
	exit 1
}
t1=$(cut -d' ' -f1 /proc/uptime)
echo "# template build (boot to agent ready, then snapshot): $(echo "$t0 $t1" | awk '{ printf "%.2f", $2 - $1 }') s"
args=
for c in ${BENCH_CONCURRENCY:-1 50}; do
	args="$args -c $c"
done
"$here/sandbox_bench" -t bench -C "$C" -n "${BENCH_SAMPLES:-50}" $args
