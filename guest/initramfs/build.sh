#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# build.sh OUTDIR AGENT KVER: the guest initramfs.
#
# Holds cube-agent as /init, and the kernel modules listed in
# guest/initramfs/modules plus their dependencies, from
# /lib/modules/KVER/kernel/..., with a modules.dep of just those.  Nothing
# else.  Reproducible: sorted entries, owner 0:0, mtimes at the epoch,
# cpio --reproducible, gzip -n.  Named by the hash of its inputs and rebuilt
# only when they change:
#
#   OUTDIR/initramfs-<hash>.cpio.gz, OUTDIR/initramfs.cpio.gz (symlink)
set -eu

here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: build.sh OUTDIR AGENT KVER}
agent=${2:?usage: build.sh OUTDIR AGENT KVER}
kver=${3:-}
moddir=/lib/modules/$kver

want=$(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$here/modules")
mods=
if [ -n "$kver" ] && [ -f "$moddir/modules.dep" ]; then
	# the wanted modules and, recursively, what they depend on
	mods=$(awk -v want="$want" '
		function base(p,  b) { b = p; sub(/.*\//, "", b); sub(/\.ko.*$/, "", b); gsub(/-/, "_", b); return b }
		function add(p,  i, n, d) {
			if (p in seen) return
			seen[p] = 1
			n = split(deps[p], d, " ")
			for (i = 1; i <= n; i++) add(d[i])
			print p
		}
		FILENAME ~ /modules\.builtin$/ { builtin[base($1)] = 1; next }
		{ p = $1; sub(/:$/, "", p); d = $0; sub(/^[^:]*:[ ]*/, "", d); deps[p] = d; byname[base(p)] = p }
		END {
			n = split(want, w, "\n")
			for (i = 1; i <= n; i++) {
				if (!(w[i] in byname)) { if (!(w[i] in builtin)) print "missing:" w[i] > "/dev/stderr"; continue }
				add(byname[w[i]])
			}
		}' "$moddir/modules.builtin" "$moddir/modules.dep" | LC_ALL=C sort -u)
else
	echo "initramfs: no $moddir/modules.dep: agent only (a kernel with everything built in)" >&2
fi

hash=$( (cat "$here/build.sh" "$here/modules" "$agent"; echo "$kver";
	 for m in $mods; do echo "$m"; cat "$moddir/$m"; done) | sha256sum | cut -c1-16)
dest=$out/initramfs-$hash.cpio.gz
if [ -f "$dest" ]; then
	ln -sfn "initramfs-$hash.cpio.gz" "$out/initramfs.cpio.gz"
	exit 0
fi

stage=$(mktemp -d "$out/.initramfs.XXXXXX")
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/dev" "$stage/proc" "$stage/sys" "$stage/tmp" "$stage/cube"
install -m 0755 "$agent" "$stage/init"
mknod -m 0600 "$stage/dev/console" c 5 1 2>/dev/null || true
# Compressed modules (6.12's are .ko.xz) are shipped decompressed, so the
# agent loads every kernel's modules the same way and the guest spends no
# boot time decompressing them.
if [ -n "$mods" ]; then
	mkdir -p "$stage/lib/modules/$kver"
	for m in $mods; do
		plain=${m%.xz}
		plain=${plain%.zst}
		mkdir -p "$stage/lib/modules/$kver/$(dirname "$m")"
		case $m in
		*.xz) xz -dc "$moddir/$m" > "$stage/lib/modules/$kver/$plain" ;;
		*.zst) zstd -qdc "$moddir/$m" > "$stage/lib/modules/$kver/$plain" ;;
		*) cp "$moddir/$m" "$stage/lib/modules/$kver/$m" ;;
		esac
	done
	# modules.dep of the shipped modules only, in a stable order
	for m in $mods; do
		grep -E "^$m:" "$moddir/modules.dep"
	done | sed -e 's/\.ko\.\(xz\|zst\)/.ko/g' > "$stage/lib/modules/$kver/modules.dep"
fi
find "$stage" -exec touch -h -d @0 {} +
(cd "$stage" && find . -mindepth 1 | LC_ALL=C sort |
	cpio -o -H newc --reproducible -R 0:0 --quiet) | gzip -n -9 > "$dest.tmp"
mv "$dest.tmp" "$dest"
ln -sfn "initramfs-$hash.cpio.gz" "$out/initramfs.cpio.gz"
for old in "$out"/initramfs-*.cpio.gz; do
	[ "$old" = "$dest" ] || rm -f "$old"
done
echo "initramfs: $dest ($(wc -c < "$dest") bytes, $(echo $mods | wc -w) modules)"
