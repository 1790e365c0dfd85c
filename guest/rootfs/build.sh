#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# build.sh OUTDIR [VARIANT]: the guest's read-only root filesystem image.
#
# Debian bookworm, minbase variant, from the Debian mirror of the machine's
# apt sources, with what E2B's users expect of a sandbox (installed with apt
# in the new root, without recommends): the full python3, python3-pip,
# python3-venv, curl, git, ca-certificates and sudo; and E2B's default
# account "user" (uid 1000, home /home/user, /bin/bash) with passwordless
# sudo.  Packed into an ext4 image with e2fsprogs.  Cached as
# OUTDIR/rootfs-<hash>.ext4 by the hash of this recipe, rebuilt only when
# it changes; OUTDIR/rootfs.ext4 links to it.  Needs root (debootstrap,
# chroot) and a minute or two with a close mirror.
#
# VARIANT code-interpreter: the same base (the user too) with a Jupyter
# kernel (python3-ipykernel, python3-jupyter-client), matplotlib, numpy and
# pandas, and the code interpreter service of guest/code-interpreter/
# installed as /usr/local/bin/cube-code-interpreter.  Cached the same way
# as OUTDIR/code-interpreter-<hash>.ext4 (the hash also covers the
# service's files), linked as OUTDIR/code-interpreter.ext4.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: build.sh OUTDIR [code-interpreter]}
variant=${2:-}
suite=bookworm
include=python3-minimal
# every variant: installed with apt in the new root (debootstrap's own
# dependency resolution leaves some packages unconfigurable)
base="python3 python3-pip python3-venv curl git ca-certificates sudo"
ci=$here/../code-interpreter

case $variant in
"")
	name=rootfs
	extra=
	hash=$(cat "$here/build.sh" | sha256sum | cut -c1-16)
	;;
code-interpreter)
	name=code-interpreter
	extra="python3-ipykernel python3-jupyter-client python3-matplotlib python3-numpy python3-pandas"
	hash=$( (cat "$here/build.sh"; cd "$ci" && find . -type f | LC_ALL=C sort |
		while read -r f; do echo "$f"; cat "$f"; done) | sha256sum | cut -c1-16)
	;;
*)
	echo "rootfs: unknown variant $variant (code-interpreter)" >&2
	exit 2
	;;
esac
img=$out/$name-$hash.ext4
if [ -f "$img" ]; then
	ln -sfn "$name-$hash.ext4" "$out/$name.ext4"
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
	> "$out/$name-debootstrap.log" 2>&1 ||
	{ echo "rootfs: debootstrap failed, see $out/$name-debootstrap.log" >&2; exit 1; }
mount -t proc proc "$dir/proc"
trap 'umount "$dir/proc" 2>/dev/null || :; rm -rf "$dir" "$img.tmp"' EXIT
if ! { chroot "$dir" apt-get update &&
	chroot "$dir" env DEBIAN_FRONTEND=noninteractive apt-get install -y \
		--no-install-recommends $base $extra; } >> "$out/$name-debootstrap.log" 2>&1; then
	echo "rootfs: apt-get install failed, see $out/$name-debootstrap.log" >&2
	exit 1
fi
chroot "$dir" apt-get clean
umount "$dir/proc"
# E2B's default user: commands and files of the E2B API are its unless
# root is asked for
chroot "$dir" useradd --create-home --uid 1000 --user-group \
	--shell /bin/bash user
echo 'user ALL=(ALL:ALL) NOPASSWD: ALL' > "$dir/etc/sudoers.d/user"
chmod 0440 "$dir/etc/sudoers.d/user"
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
if ! chroot "$dir" sh -c 'python3 -m venv /tmp/cube-venv &&
	/tmp/cube-venv/bin/pip --version && rm -rf /tmp/cube-venv &&
	pip3 --version && curl --version && git --version && visudo -c &&
	[ "$(stat -c %U:%G /home/user)" = user:user ] &&
	[ "$(id -u user)" = 1000 ]' >"$out/$name-check.log" 2>&1; then
	echo "rootfs: the base tools or the user do not work, see $out/$name-check.log" >&2
	exit 1
fi
if [ "$variant" = code-interpreter ]; then
	install -d "$dir/usr/local/lib/cube-code-interpreter"
	install -m 0644 "$ci"/*.py "$dir/usr/local/lib/cube-code-interpreter/"
	install -m 0755 "$ci/cube-code-interpreter" "$dir/usr/local/bin/"
	if ! chroot "$dir" python3 -c 'import ipykernel, jupyter_client, matplotlib, numpy, pandas' \
		>>"$out/$name-check.log" 2>&1; then
		echo "rootfs: the Jupyter stack does not import, see $out/$name-check.log" >&2
		exit 1
	fi
fi
kib=$(du -sk "$dir" | cut -f1)
# the image is read-only in the guest: little room beyond the files
size=$(( kib + kib / 10 + 16384 ))
mkfs.ext4 -q -F -L cube-root -O ^has_journal -E root_owner=0:0 \
	-U 6375622d-726f-6f74-6673-000000000001 -d "$dir" "$img.tmp" "${size}k"
mv "$img.tmp" "$img"
ln -sfn "$name-$hash.ext4" "$out/$name.ext4"
for old in "$out/$name"-*.ext4; do
	[ "$old" = "$img" ] || rm -f "$old"
done
echo "rootfs: $img ($(( size / 1024 )) MiB) in $(( $(date +%s) - start )) s"
