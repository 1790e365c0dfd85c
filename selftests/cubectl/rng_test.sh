#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# rng_test.sh: clones of one snapshot never share random state.  The
# template is snapshotted after more than two minutes of guest uptime,
# when the guest kernel reseeds its CRNG only once a minute on its own;
# three sandboxes restored from it at once must still read three
# different values from the kernel's random source and from Python's.
cd "$(dirname "$0")" || exit 1
. ./ktap.sh

C=./cubectl
export CUBE_STATE_DIR=/tmp/rng-test/state CUBE_RUN_DIR=/tmp/rng-test/run
rm -rf /tmp/rng-test
mkdir -p "$CUBE_STATE_DIR" "$CUBE_RUN_DIR"

ids=
cleanup() {
	[ -n "$ids" ] && $C kill $ids >/dev/null 2>&1
	$C template rm late >/dev/null 2>&1
	rm -rf /tmp/rng-test /tmp/rng-rootfs.ext4
}
trap cleanup EXIT

# distinct VALUES...: how many of the words are different hex strings
distinct() {
	echo "$@" | tr ' ' '\n' | grep '^[0-9a-f]\{32\}$' | sort -u | wc -l
}

ktap_plan 4
rootfs=$(ls /dev/disk/cube/rootfs-*.ext4 2>/dev/null | head -n 1)
cp "$rootfs" /tmp/rng-rootfs.ext4
# Uptime past 120 s: the kernel's early-boot reseeding is over.
expect "template built after 125 s of uptime" 0 $C template build late \
	--kernel /boot/vmlinuz --initrd ./initramfs.cpio.gz \
	--rootfs /tmp/rng-rootfs.ext4 --append cube.rootfstype=ext4 \
	--run 'sleep 125; cat /proc/uptime'
for i in 1 2 3; do
	ids="$ids $($C create --template late --vcpus 1)"
done
n=$(echo $ids | wc -w)
[ "$n" = 3 ] && ok "three sandboxes restored from it" ||
	not_ok "three sandboxes restored from it" "got ids '$ids'"

kern= py=
for id in $ids; do
	kern="$kern $($C exec "$id" -- sh -c 'head -c 16 /dev/urandom | od -An -tx1 | tr -d " \n"')"
	py="$py $($C exec "$id" -- python3 -c 'import os; print(os.urandom(16).hex())')"
done
[ "$(distinct $kern)" = 3 ] &&
	ok "their kernels' random bytes differ" ||
	not_ok "their kernels' random bytes differ" "got:$kern"
[ "$(distinct $py)" = 3 ] &&
	ok "python3's os.urandom differs" ||
	not_ok "python3's os.urandom differs" "got:$py"
exit $ktap_failed
