#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# exec_tty_test.sh: cubectl exec -t runs the command on a pseudo-terminal
# of the guest.  Without a terminal on our side the size is 24x80, output
# of both streams comes on stdout, -i passes piped input through the
# terminal and ends it with end-of-file; the exit status is the command's.
# Under script(1) our side is a terminal: its size is forwarded and
# changes of it (SIGWINCH) reach the guest.
cd "$(dirname "$0")" || exit 1
. ./ktap.sh

C=./cubectl
export CUBE_STATE_DIR=/tmp/tty-test/state CUBE_RUN_DIR=/tmp/tty-test/run
rm -rf /tmp/tty-test
mkdir -p "$CUBE_STATE_DIR" "$CUBE_RUN_DIR"

id=
cleanup() {
	[ -n "$id" ] && $C kill "$id" >/dev/null 2>&1
	$C template rm tty >/dev/null 2>&1
	rm -rf /tmp/tty-test /tmp/tty-rootfs.ext4
}
trap cleanup EXIT

# out_has NAME PATTERN: the last command's stdout matches PATTERN (grep -E)
out_has() {
	if tr -d '\r' </tmp/ktap.out | grep -Eq "$2"; then
		ok "$1"
	else
		not_ok "$1" "stdout: $(head -c 300 /tmp/ktap.out | tr -d '\r')"
	fi
}

ktap_plan 20
rootfs=$(ls /dev/disk/cube/rootfs-*.ext4 2>/dev/null | head -n 1)
cp "$rootfs" /tmp/tty-rootfs.ext4
expect "template builds" 0 $C template build tty \
	--kernel /boot/vmlinuz --initrd ./initramfs.cpio.gz \
	--rootfs /tmp/tty-rootfs.ext4 --append cube.rootfstype=ext4
id=$($C create --template tty)
case "$id" in
[0-9]*) ok "a sandbox" ;;
*) not_ok "a sandbox" "got '$id'" ;;
esac

expect "exec -t tty exits 0" 0 $C exec -t "$id" -- tty
out_has "stdin is a /dev/pts terminal" '^/dev/pts/[0-9]+$'
expect "without -t there is no terminal" 1 $C exec "$id" -- tty

expect "exec -t stty size" 0 $C exec -t "$id" -- stty size
out_has "no host terminal: 24 rows, 80 columns" '^24 80$'

$C exec -t "$id" -- sh -c 'echo "term=$TERM"' >/tmp/ktap.out 2>&1
out_has "TERM is xterm-256color" '^term=xterm-256color$'
$C exec -t --env TERM=dumb "$id" -- sh -c 'echo "term=$TERM"' >/tmp/ktap.out 2>&1
out_has "an --env TERM= wins" '^term=dumb$'

expect "exec -t keeps the exit status" 7 $C exec -t "$id" -- sh -c 'exit 7'

$C exec -t "$id" -- sh -c 'echo to-stderr >&2' >/tmp/ktap.out 2>/dev/null
out_has "stderr comes through the terminal, on stdout" '^to-stderr$'

printf 'echo $((6*7))x\nexit 5\n' >/tmp/tty-test/in
expect "exec -i -t with piped input" 5 \
	sh -c "$C exec -i -t $id -- sh </tmp/tty-test/in"
out_has "the piped input reached the shell" '(^|# )42x$'

expect "exec -i -t: end of input is end-of-file" 0 \
	sh -c "printf 'abc\n' | timeout 60 $C exec -i -t $id -- cat"
out_has "cat echoed its input and ended" '^abc$'

expect "exec -t without -i: the command reads end-of-file" 0 \
	timeout 60 $C exec -t "$id" -- cat </dev/null

if command -v script >/dev/null && command -v stty >/dev/null; then
	# script(1) gives cubectl a terminal; its size comes from stty
	# inside, then a resize and SIGWINCH while the command runs.  No
	# fixed sleeps: the resize waits for the first size in script's
	# output, and the command reads the size again only once told to
	# (a file the host makes after the SIGWINCH), each with a deadline.
	cat >/tmp/tty-test/resize.sh <<-EOF
	stty rows 33 cols 111
	$C exec -t $id -- sh -c 'stty size; i=0; while [ ! -e /tmp/winch-go ] && [ \$i -lt 600 ]; do sleep 0.1; i=\$((i + 1)); done; stty size' &
	t=0
	until grep -q '^33 111' /tmp/ktap.out || [ \$t -ge 600 ]; do
		sleep 0.1
		t=\$((t + 1))
	done
	stty rows 44 cols 122
	kill -WINCH \$!
	$C exec $id -- touch /tmp/winch-go
	wait \$!
	EOF
	timeout 120 script -qec "sh /tmp/tty-test/resize.sh" /dev/null \
		>/tmp/ktap.out 2>&1 </dev/null
	out_has "a host terminal's size is forwarded" '^33 111$'
	out_has "SIGWINCH forwards the new size" '^44 122$'

	# The guest retitles the terminal and clears it on its console:
	# cubectl logs shows that as text on a terminal, as it is elsewhere.
	$C exec "$id" -- sh -c \
		"printf '\\033]0;cube-title\\007\\033[2Jctl-mark\\n' > /dev/console"
	esc=$(printf '\033')
	# the guest's tty sends it through the UART after the write returns
	wait_until 60 sh -c "$C logs $id | grep -q ctl-mark"
	timeout 60 script -qec "$C logs $id" /dev/null >/tmp/ktap.out 2>&1 </dev/null
	if grep -q 'x1b]0;cube-title.x07.x1b\[2Jctl-mark' /tmp/ktap.out &&
		! grep -q "$esc" /tmp/ktap.out; then
		ok "logs on a terminal shows the guest's control characters as text"
	else
		not_ok "logs on a terminal shows the guest's control characters as text" \
			"$(grep ctl-mark /tmp/ktap.out | od -c | head -n 5)"
	fi
	$C logs "$id" >/tmp/ktap.out 2>&1
	if grep -q "${esc}]0;cube-title" /tmp/ktap.out; then
		ok "logs into a file is the console as it is"
	else
		not_ok "logs into a file is the console as it is" \
			"$(grep ctl-mark /tmp/ktap.out | od -c | head -n 5)"
	fi
else
	for t in "a host terminal's size is forwarded" \
		"SIGWINCH forwards the new size" \
		"logs on a terminal shows the guest's control characters as text" \
		"logs into a file is the console as it is"; do
		ktap_n=$((ktap_n + 1))
		echo "ok $ktap_n $t # SKIP no script(1)"
	done
fi
exit $ktap_failed
