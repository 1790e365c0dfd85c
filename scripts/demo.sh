#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# demo.sh: cube's main job.  Builds a template (boot the guest once,
# snapshot it), creates a sandbox from it with cubectl and runs
#   python3 -c 'print(2+2)'
# in it, then removes everything it made.  Prints KTAP around the commands'
# own output; exits 0 when the sandbox printed 4.
#
#   demo.sh [DIR]
#
# DIR (default: the script's own folder) holds cubectl, cube-shim, cube-vmm
# and the guest's initramfs.cpio.gz and rootfs.ext4; the root file system
# may instead be the test machine's disk /dev/disk/cube/rootfs-*.ext4.  The
# guest kernel is $CUBE_KERNEL (make demo names KVER's, the kernel whose
# modules the initramfs carries), else DIR/bzImage, else /boot/vmlinuz (the
# test machine's copy of that kernel).
# Needs root, /dev/kvm and cube.ko loaded.
set -u
dir=$(cd "${1:-$(dirname "$0")}" && pwd)
work=/tmp/cube-demo.$$
export CUBE_STATE_DIR=$work/state CUBE_RUN_DIR=$work/run
export CUBE_VMM=$dir/cube-vmm CUBE_SHIM=$dir/cube-shim
C=$dir/cubectl
id=

kernel=${CUBE_KERNEL:-}
for k in "$dir/bzImage" /boot/vmlinuz; do
	[ -n "$kernel" ] && break
	[ -r "$k" ] && kernel=$k
done

cleanup() {
	[ -n "$id" ] && $C kill "$id" >/dev/null 2>&1
	$C template rm demo >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$CUBE_STATE_DIR" "$CUBE_RUN_DIR"

# The VMM reads the root file system from a regular file.
rootfs=$dir/rootfs.ext4
[ -e "$rootfs" ] || rootfs=$(ls /dev/disk/cube/rootfs-*.ext4 2>/dev/null | head -n 1)
if [ -b "$rootfs" ]; then
	cp "$rootfs" "$work/rootfs.ext4"
	rootfs=$work/rootfs.ext4
fi

echo "KTAP version 1"
echo "1..1"
# step CMD...: show and run a cubectl command, its output as KTAP comments
step() {
	echo "# \$ cubectl $*"
	$C "$@" > "$work/out" 2>&1
	st=$?
	sed 's/^/# /' "$work/out"
	return $st
}
fail() {
	echo "# $*"
	echo "not ok 1 python3 in a sandbox prints 4"
	exit 1
}
step template build demo --kernel "$kernel" --initrd "$dir/initramfs.cpio.gz" \
	--rootfs "$rootfs" --append cube.rootfstype=ext4 --memory 256 ||
	fail "template build failed"
echo "# \$ cubectl create --template demo"
id=$($C create --template demo) || fail "create failed"
echo "# $id"
echo "# \$ cubectl exec $id -- python3 -c 'print(2+2)'"
out=$($C exec "$id" -- python3 -c 'print(2+2)') || fail "exec failed"
echo "# $out"
[ "$out" = 4 ] || fail "expected 4, got '$out'"
step kill "$id" && id=
echo "ok 1 python3 in a sandbox prints 4"
