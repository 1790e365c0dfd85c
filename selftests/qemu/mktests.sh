#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# mktests.sh OUT INIT CUBE_KO TESTDIR: the L1 initramfs top layer: /init,
# cube.ko, /init's kernel log check, and the installed selftests with the
# shared libraries their programs need.  Loaded after the base layer, so
# its files win.
set -eu
out=$1 init=$2 ko=$3 tests=$4
here=$(cd "$(dirname "$0")" && pwd)
. "$here/stage-lib.sh"

ROOT=$(mktemp -d)
trap 'rm -rf "$ROOT"' EXIT

stage_file "$init" /init
chmod 755 "$ROOT/init"
stage_file "$ko" /lib/cube/cube.ko
stage_file "$here/logcheck.sh" /lib/cube/logcheck.sh
mkdir -p "$ROOT/selftests"
cp -a "$tests"/. "$ROOT/selftests/"
find "$ROOT/selftests" -type f -perm -u+x | while read -r f; do
	if head -c 4 "$f" | grep -q ELF; then
		stage_libs "$f"
	fi
done
pack_cpio "$out"
