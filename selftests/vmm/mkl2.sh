#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# mkl2.sh OUT KVER INIT PROGS...: the initramfs of the L2 test guest:
# busybox, INIT as /init, the virtio/vsock/net modules of KVER flattened into
# /lib/modules, and the static PROGS in /bin.
set -eu
out=$1 kver=$2 init=$3
shift 3
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/bin" "$root/proc" "$root/sys" "$root/dev" "$root/tmp" \
	"$root/lib/modules"
# The kernel opens /dev/console for init before anything is mounted.
mknod "$root/dev/console" c 5 1 2>/dev/null || true
cp /bin/busybox "$root/bin/busybox"
for app in $(/bin/busybox --list); do
	[ "$app" = busybox ] || ln -s busybox "$root/bin/$app"
done
cp "$init" "$root/init"
chmod 755 "$root/init"
for p in "$@"; do
	cp "$p" "$root/bin/"
done
moddir=/lib/modules/$kver/kernel
for m in drivers/virtio/virtio_ring drivers/virtio/virtio \
	drivers/virtio/virtio_mmio net/vmw_vsock/vsock \
	net/vmw_vsock/vmw_vsock_virtio_transport_common \
	net/vmw_vsock/vmw_vsock_virtio_transport drivers/block/virtio_blk \
	drivers/char/hw_random/virtio-rng net/core/failover \
	drivers/net/net_failover drivers/net/virtio_net; do
	# built into this kernel (6.12 has virtio and virtio_ring built in)
	grep -qx "kernel/$m.ko" "/lib/modules/$kver/modules.builtin" && continue
	f=$(ls "$moddir/$m.ko"* 2>/dev/null | head -n 1)
	[ -n "$f" ] || { echo "mkl2: module $m not found in $kver" >&2; exit 1; }
	case $f in
	*.xz) xz -dc "$f" > "$root/lib/modules/$(basename "$m").ko" ;;
	*.zst) zstd -qdc "$f" > "$root/lib/modules/$(basename "$m").ko" ;;
	*) cp "$f" "$root/lib/modules/$(basename "$m").ko" ;;
	esac
done
(cd "$root" && find . | cpio -o -H newc --quiet) | gzip -9 > "$out.tmp"
mv "$out.tmp" "$out"
