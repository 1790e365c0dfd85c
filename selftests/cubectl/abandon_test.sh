#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# abandon_test.sh: a start that nobody waits for any more leaves nothing.
# The sandboxes here restore through a VMM that never answers (a sleep in
# place of cube-vmm), so each waits for its agent; then:
#   * the cubectl create waiting for it is killed (what a benchmark's time
#     limit does): the shim must stop the VMM and go at once, not at the
#     boot timeout (120 s), and with it the module's sandbox and its
#     reference to cube.ko;
#   * cubectl kill of a sandbox still starting: the same.
# And a descriptor the caller of cubectl create leaves open (a program that
# reads the create's output through a pipe, with a copy of the pipe's write
# end on another fd) reaches neither the shim nor the VMM: else the caller
# waits for its end of file as long as the sandbox lives.
# Needs cube.ko, /dev/kvm, the guest rootfs disk (to build the template).
cd "$(dirname "$0")" || exit 1
. ./ktap.sh

C=./cubectl
export CUBE_STATE_DIR=/tmp/abandon-test/state CUBE_RUN_DIR=/tmp/abandon-test/run
rm -rf /tmp/abandon-test
mkdir -p "$CUBE_STATE_DIR" "$CUBE_RUN_DIR"

cleanup() {
	for id in $($C --json ls 2>/dev/null | sed -n 's/.*"id": *\([0-9]*\).*/\1/p'); do
		$C kill "$id" >/dev/null 2>&1
	done
	$C template rm ab >/dev/null 2>&1
	rm -rf /tmp/abandon-test
}
trap cleanup EXIT

# the sandboxes of template ab the module lists
count() {
	$C ls 2>/dev/null | awk 'NR > 1 && $3 == "ab" { n++ } END { print n + 0 }'
}
# is the silent VMM running?  (busybox here has no pgrep)
vmm_alive() {
	for f in /proc/[0-9]*/cmdline; do
		tr '\0' ' ' < "$f" 2>/dev/null | grep -q 'abandon-test/neve[r]' && return 0
	done
	return 1
}
none_left() {
	[ "$(count)" = 0 ] && ! vmm_alive
}
starting() {
	[ "$(count)" = 1 ] && vmm_alive
}

ktap_plan 7
rootfs=$(ls /dev/disk/cube/rootfs-*.ext4 2>/dev/null | head -n 1)
if [ -z "$rootfs" ] || [ ! -c /dev/kvm ]; then
	not_ok "guest images and /dev/kvm are there" "rootfs '$rootfs', /dev/kvm"
	exit 1
fi
cp "$rootfs" /tmp/abandon-test/rootfs.ext4
expect "template build" 0 $C template build ab --kernel /boot/vmlinuz \
	--initrd ./initramfs.cpio.gz --rootfs /tmp/abandon-test/rootfs.ext4 \
	--append cube.rootfstype=ext4 --net none
[ $got = 0 ] || exit 1

# fd 7 is a copy of the pipe cat reads: it sees end of file when create ends
( $C create --template ab 7>&1 | cat > /tmp/abandon-test/out ) &
bg=$!
bg_done() { ! kill -0 "$bg" 2>/dev/null; }
if wait_until 90 bg_done; then
	ok "a create whose caller left another fd open returns when the sandbox is up"
else
	not_ok "a create whose caller left another fd open returns when the sandbox is up" \
		"$(count) sandboxes of ab; the reader still waits for end of file"
fi
for id in $($C ls | awk 'NR > 1 && $3 == "ab" { print $1 }'); do
	$C kill "$id" >/dev/null 2>&1
done
wait "$bg" 2>/dev/null
if wait_until 10 none_left && [ "$(count)" = 0 ]; then
	ok "that sandbox ran and is gone"
else
	not_ok "that sandbox ran and is gone" "$(count) sandboxes of ab"
fi

# a VMM that starts and never answers
printf '#!/bin/sh\nwhile :; do sleep 1; done\n' > /tmp/abandon-test/never
chmod +x /tmp/abandon-test/never

CUBE_VMM=/tmp/abandon-test/never $C create --template ab >/dev/null 2>&1 &
pid=$!
if wait_until 30 starting; then
	ok "a create through a silent VMM waits for the agent"
else
	not_ok "a create through a silent VMM waits for the agent" "$($C ls)"
fi
kill "$pid"
wait "$pid" 2>/dev/null
# before: the shim waited the whole boot timeout (120 s) with its VMM
if wait_until 10 none_left; then
	ok "killing the waiting cubectl create leaves no sandbox and no VMM"
else
	not_ok "killing the waiting cubectl create leaves no sandbox and no VMM" \
		"$(count) sandboxes; VMM alive: $(vmm_alive && echo yes || echo no)"
fi

CUBE_VMM=/tmp/abandon-test/never $C create --template ab >/dev/null 2>&1 &
pid=$!
wait_until 30 starting
id=$($C ls | awk 'NR > 1 && $3 == "ab" { print $1 }')
$C kill "$id" >/dev/null 2>&1
if wait_until 10 none_left; then
	ok "cubectl kill of a sandbox still starting stops it at once"
else
	not_ok "cubectl kill of a sandbox still starting stops it at once" \
		"$(count) sandboxes; VMM alive: $(vmm_alive && echo yes || echo no)"
fi
wait "$pid" 2>/dev/null
st=$?
[ "$st" != 0 ] && ok "that create fails (status $st)" ||
	not_ok "that create fails" "it exited 0"
exit $ktap_failed
