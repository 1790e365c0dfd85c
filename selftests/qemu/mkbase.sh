#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# mkbase.sh OUT KVER MODULES...: the L1 initramfs base layer: busybox, the
# named kernel modules of KVER with their dependencies (and modules.dep, so
# busybox modprobe works), iproute2's ip, util-linux's script and the shared
# libraries they need, and KVER's kernel image as /boot/vmlinuz, for L2
# guests.
# Environment: VM_MODROOT, the root the modules are under (default /);
# L2_KERNEL, the image for L2 guests (default /boot/vmlinuz-KVER).
set -eu
out=$1 kver=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
. "$here/stage-lib.sh"

ROOT=$(mktemp -d)
trap 'rm -rf "$ROOT"' EXIT

mkdir -p "$ROOT"/bin "$ROOT"/sbin "$ROOT"/usr/bin "$ROOT"/usr/sbin \
	"$ROOT"/proc "$ROOT"/sys "$ROOT"/dev "$ROOT"/tmp "$ROOT"/run \
	"$ROOT"/etc "$ROOT"/root
stage_file /bin/busybox /bin/busybox
for app in $(/bin/busybox --list); do
	[ "$app" = busybox ] || ln -s busybox "$ROOT/bin/$app"
done
for b in /usr/sbin/ip /usr/bin/strace; do
	[ -x "$b" ] && stage_bin "$b"
done
# script(1) (util-linux, in Debian's essential bsdutils): gives the pty
# tests (cubectl/exec_tty_test.sh) a terminal; busybox has none.
stage_bin /usr/bin/script
# mke2fs (e2fsprogs): cubectl template build --disk makes the disk's file
# system with it; busybox's cannot make ext4.
stage_bin /usr/sbin/mke2fs
stage_file /etc/mke2fs.conf /etc/mke2fs.conf
echo "root:x:0:0:root:/root:/bin/sh" > "$ROOT/etc/passwd"
echo "nobody:x:65534:65534:nobody:/:/bin/false" >> "$ROOT/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' > "$ROOT/etc/group"

moddir=${VM_MODROOT:-}/lib/modules/$kver
dep=$moddir/modules.dep
[ -r "$dep" ] || { echo "mkbase: no $dep (install linux-image-cloud-amd64)" >&2; exit 1; }
: > "$ROOT/modules.want"
for m in "$@"; do
	path=$(grep -E "(^|/)$m\.ko(\.[a-z]+)?:" "$dep" | head -n 1 | cut -d: -f1)
	if [ -z "$path" ]; then
		if grep -qE "(^|/)$m\.ko" "$moddir/modules.builtin"; then
			continue
		fi
		echo "mkbase: module $m not found in $kver" >&2
		exit 1
	fi
	echo "$path" >> "$ROOT/modules.want"
	grep -E "^$path:" "$dep" | cut -d: -f2 | tr ' ' '\n' >> "$ROOT/modules.want"
done
for path in $(grep . "$ROOT/modules.want" | sort -u); do
	stage_file "$moddir/$path" "/lib/modules/$kver/$path"
done
rm "$ROOT/modules.want"
for f in modules.dep modules.builtin modules.alias modules.softdep; do
	stage_file "$moddir/$f" "/lib/modules/$kver/$f"
done
stage_file "${L2_KERNEL:-/boot/vmlinuz-$kver}" /boot/vmlinuz
pack_cpio "$out"
