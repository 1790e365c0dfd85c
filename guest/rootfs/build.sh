#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# build.sh OUTDIR: the guest's read-only root filesystem image.
#
# Debian bookworm, minbase variant, with python3-minimal, from the Debian
# mirror of the machine's apt sources, packed into an ext4 image with
# e2fsprogs.  Cached as OUTDIR/rootfs-<hash>.ext4 by the hash of this
# recipe, rebuilt only when it changes; OUTDIR/rootfs.ext4 links to it.
# Needs root (debootstrap) and ~25 s with a close mirror.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: build.sh OUTDIR}
suite=bookworm
include=python3-minimal

hash=$(cat "$here/build.sh" | sha256sum | cut -c1-16)
img=$out/rootfs-$hash.ext4
if [ -f "$img" ]; then
	ln -sfn "rootfs-$hash.ext4" "$out/rootfs.ext4"
	exit 0
fi
for t in debootstrap mkfs.ext4; do
	command -v $t >/dev/null || { echo "rootfs: $t missing (apt-get install debootstrap e2fsprogs)" >&2; exit 1; }
done

# The mirror serving $suite: deb822 .sources files, then one-line lists.
mirror=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk -v s="$suite" '
	/^[[:space:]]*$/ { if (uri != "" && ok) { print uri; exit } uri = ""; ok = 0; next }
	$1 == "URIs:" { uri = $2 }
	$1 == "Suites:" { for (i = 2; i <= NF; i++) if ($i == s) ok = 1 }
	END { if (uri != "" && ok) print uri }' | head -n 1)
if [ -z "$mirror" ]; then
	mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
		awk -v s="$suite" '$1 == "deb" && $3 == s { print $2; exit }')
fi
if [ -z "$mirror" ]; then
	echo "rootfs: no Debian mirror for $suite in /etc/apt/sources.list(.d)" >&2
	exit 1
fi

dir=$(mktemp -d "$out/.rootfs.XXXXXX")
trap 'rm -rf "$dir" "$img.tmp"' EXIT
start=$(date +%s)
debootstrap --variant=minbase --include="$include" "$suite" "$dir" "$mirror" \
	> "$out/rootfs-debootstrap.log" 2>&1 ||
	{ echo "rootfs: debootstrap failed, see $out/rootfs-debootstrap.log" >&2; exit 1; }
# what a sandbox does not need
rm -rf "$dir/var/cache/apt/"*.bin "$dir/var/cache/apt/archives/"*.deb \
	"$dir/var/lib/apt/lists/"* "$dir/usr/share/doc" "$dir/usr/share/man" \
	"$dir/usr/share/info" "$dir/usr/share/locale" "$dir/usr/share/i18n" \
	"$dir/var/log/"*
echo cube > "$dir/etc/hostname"
: > "$dir/etc/machine-id"
if [ "$(chroot "$dir" python3 -c 'print(2+2)')" != 4 ]; then
	echo "rootfs: python3 does not work in the new root" >&2
	exit 1
fi
kib=$(du -sk "$dir" | cut -f1)
# the image is read-only in the guest: little room beyond the files
size=$(( kib + kib / 10 + 16384 ))
mkfs.ext4 -q -F -L cube-root -O ^has_journal -E root_owner=0:0 \
	-U 6375622d-726f-6f74-6673-000000000001 -d "$dir" "$img.tmp" "${size}k"
mv "$img.tmp" "$img"
ln -sfn "rootfs-$hash.ext4" "$out/rootfs.ext4"
for old in "$out"/rootfs-*.ext4; do
	[ "$old" = "$img" ] || rm -f "$old"
done
echo "rootfs: $img ($(( size / 1024 )) MiB) in $(( $(date +%s) - start )) s"
