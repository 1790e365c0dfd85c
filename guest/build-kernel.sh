#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# build-kernel.sh OUTDIR: build cube's minimal guest kernel from Debian's
# linux-source-6.1 package and guest/kernel.config (applied on top of
# allnoconfig).  The result is cached by the hash of the fragment and the
# source package's version:
#
#   OUTDIR/kernel-<hash>/bzImage, OUTDIR/kernel-<hash>/vmlinux
#   OUTDIR/bzImage-cube, OUTDIR/vmlinux-cube   (symlinks to the newest build)
#
# Runs at the lowest priority on one job (nice -n 19 make -j1); set JOBS to
# change the job count.  Not part of the default build: the Debian cloud
# kernel is the default guest kernel.
#
# build-kernel.sh OUTDIR --path: print the bzImage of the current fragment
# when it has been built (nothing otherwise), build nothing.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: build-kernel.sh OUTDIR}
jobs=${JOBS:-1}
tarball=$(ls -1 /usr/src/linux-source-6.1.tar.* 2>/dev/null | head -n 1)
if [ -z "$tarball" ]; then
	echo "build-kernel: no /usr/src/linux-source-6.1.tar.*: apt-get install linux-source-6.1" >&2
	exit 1
fi
for t in flex bison bc; do
	command -v $t >/dev/null || { echo "build-kernel: $t missing (apt-get install flex bison bc libelf-dev)" >&2; exit 1; }
done

mkdir -p "$out"
out=$(cd "$out" && pwd)
# the kernel is named by its config fragment and its source, nothing else
hash=$( (cat "$here/kernel.config"; basename "$tarball"; \
	 dpkg-query -W -f '${Version}' linux-source-6.1 2>/dev/null || true) | \
	sha256sum | cut -c1-16)
dest=$out/kernel-$hash
if [ "${2:-}" = --path ]; then
	[ -f "$dest/bzImage" ] && echo "$dest/bzImage"
	exit 0
fi
if [ -f "$dest/bzImage" ] && [ -f "$dest/vmlinux" ]; then
	echo "build-kernel: up to date: $dest"
	exit 0
fi

src=$out/linux-source-6.1
if [ ! -f "$src/.cube-extracted" ]; then
	rm -rf "$src"
	mkdir -p "$src"
	tar -C "$src" --strip-components=1 -xf "$tarball"
	touch "$src/.cube-extracted"
fi

obj=$dest/obj
mkdir -p "$obj"
start=$(date +%s)
export KBUILD_BUILD_TIMESTAMP='1970-01-01' KBUILD_BUILD_USER=cube KBUILD_BUILD_HOST=cube
make -s -C "$src" O="$obj" KCONFIG_ALLCONFIG="$here/kernel.config" allnoconfig
# every option the fragment sets must have survived dependency resolution
missing=0
grep -E '^CONFIG_[A-Z0-9_]+=' "$here/kernel.config" | while IFS= read -r line; do
	grep -qxF "$line" "$obj/.config" || { echo "build-kernel: not applied: $line" >&2; exit 1; }
done || missing=1
[ "$missing" -eq 0 ] || exit 1
nice -n 19 make -C "$src" O="$obj" -j"$jobs" bzImage
cp "$obj/arch/x86/boot/bzImage" "$dest/bzImage.tmp" && mv "$dest/bzImage.tmp" "$dest/bzImage"
cp "$obj/vmlinux" "$dest/vmlinux.tmp" && mv "$dest/vmlinux.tmp" "$dest/vmlinux"
ln -sfn "kernel-$hash/bzImage" "$out/bzImage-cube"
ln -sfn "kernel-$hash/vmlinux" "$out/vmlinux-cube"
# builds of older fragments are not used again
for old in "$out"/kernel-*; do
	[ "$old" = "$dest" ] || rm -rf "$old"
done
echo "build-kernel: built $dest in $(( $(date +%s) - start )) s"
