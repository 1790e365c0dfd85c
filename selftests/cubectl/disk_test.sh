#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# disk_test.sh: the writable disk of real sandboxes.  A template built with
# --disk gives each sandbox a copy of its disk as the root's writable layer:
# what a guest writes lands in its disk file on the host (not in guest
# memory), a full disk is ENOSPC inside while another sandbox keeps working
# and the host file never outgrows its size, what the guest deletes is
# given back to the host, a larger disk at create is grown into, a fork
# sees exactly the files of the moment it forked, a rollback puts the disk
# back with the memory, the host-wide limit refuses a disk that does not
# fit, a dead sandbox's disk is swept, and 50 create/kill cycles leave no
# file behind.
cd "$(dirname "$0")" || exit 1
. ./ktap.sh
. ./sandbox.sh

C=./cubectl
W=/tmp/disk-test
export CUBE_STATE_DIR=$W/state CUBE_RUN_DIR=$W/run
rm -rf $W
mkdir -p "$CUBE_STATE_DIR" "$CUBE_RUN_DIR"
D=$CUBE_STATE_DIR/disks
MiB=1048576
X_TIMEOUT=120

cleanup() {
	for s in $($C --json ls 2>/dev/null | sed -n 's/.*"id": *\([0-9]*\).*/\1/p'); do
		$C kill "$s" >/dev/null 2>&1
	done
	wait_until 60 no_sandbox
	$C template rm dk >/dev/null 2>&1
	rm -rf $W
}
trap cleanup EXIT

# the size of the root file system in the guest, KiB
root_kib() {
	x "$1" 'df -Pk / | awk "NR == 2 { print \$2 }"'
}

# KiB the host file system holds for sandbox $1's disk
held_kib() {
	du -k "$D/$1.img" 2>/dev/null | cut -f1
}

# the lines of stdin as one line of words
words() {
	tr '\n' ' ' | sed 's/ *$//'
}

size_of() {
	stat -c %s "$1" 2>/dev/null
}

files() {
	find "$CUBE_RUN_DIR" "$CUBE_STATE_DIR" |
		grep -v "^$CUBE_STATE_DIR/audit" | sort
}

ktap_plan 31

main() {
	rootfs=$(ls /dev/disk/cube/rootfs-*.ext4 2>/dev/null | head -n 1)
	if [ -z "$rootfs" ] || [ ! -c /dev/kvm ]; then
		not_ok "guest images and /dev/kvm are there" "rootfs '$rootfs', /dev/kvm"
		return
	fi
	cp "$rootfs" $W/rootfs.ext4

	expect "a bad --disk is refused" 2 $C template build bad \
		--kernel /boot/vmlinuz --rootfs $W/rootfs.ext4 --disk 10Q
	progress "building template dk"
	expect "template build --disk 64M" 0 $C template build dk \
		--kernel /boot/vmlinuz --initrd ./initramfs.cpio.gz \
		--rootfs $W/rootfs.ext4 --append cube.rootfstype=ext4 --disk 64M \
		--run 'echo built > /root/marker'
	[ "$got" = 0 ] || return
	t=$CUBE_STATE_DIR/templates/dk
	check "the template keeps its disk in its snapshot, not the build's" \
		"disk=$((64 * MiB)) $((64 * MiB)) none" \
		"$(grep '^disk=' $t/template.conf) $(size_of $t/snapshot/disk.img) $(ls $t/build-disk.img 2>/dev/null || echo none)"

	a=$($C create --template dk) && b=$($C create --template dk)
	if [ -z "$a" ] || [ -z "$b" ]; then
		not_ok "two sandboxes of the template start" "a '$a' b '$b'"
		return
	fi
	ok "two sandboxes of the template start"
	check "a sandbox's disk is a host file of the disk's size" \
		"$((64 * MiB))" "$(size_of $D/$a.img)"
	kib=$(root_kib "$a")
	if [ -n "$kib" ] && [ "$kib" -gt 50000 ] && [ "$kib" -le 65536 ]; then
		ok "the guest's root is the 64 MiB disk"
	else
		not_ok "the guest's root is the 64 MiB disk" "df says '$kib' KiB"
	fi
	check "what the template's build wrote is there" built \
		"$(x "$a" 'cat /root/marker')"

	before=$(held_kib "$a")
	x "$a" 'dd if=/dev/urandom of=/root/r bs=1M count=8 2>/dev/null && sync' >/dev/null
	after=$(held_kib "$a")
	if [ $((after - before)) -ge 8000 ]; then
		ok "what the guest writes lands in its disk file"
	else
		not_ok "what the guest writes lands in its disk file" "held $before KiB, then $after KiB"
	fi

	progress "filling sandbox $a's disk"
	out=$(x "$a" 'dd if=/dev/zero of=/root/fill bs=1M 2>&1; echo "status $?"; sync')
	case $out in
	*"No space left on device"*"status 1"*) ok "a full disk is ENOSPC in the guest" ;;
	*) not_ok "a full disk is ENOSPC in the guest" "$(echo "$out" | tail -n 3)" ;;
	esac
	check "the host file never outgrows the disk" "$((64 * MiB))" \
		"$(size_of $D/$a.img)"
	full=$(held_kib "$a")
	if [ -n "$full" ] && [ "$full" -le 65536 ]; then
		ok "the host holds at most the disk's size"
	else
		not_ok "the host holds at most the disk's size" "$full KiB"
	fi
	check "another sandbox keeps working" ok \
		"$(x "$b" 'echo ok > /root/x && cat /root/x')"
	check "the full sandbox still answers" up "$(x "$a" 'echo up')"
	x "$a" 'rm -f /root/fill; sync' >/dev/null
	freed=$(held_kib "$a")
	if [ -n "$freed" ] && [ $((full - freed)) -ge 30000 ]; then
		ok "what the guest deletes is given back to the host"
	else
		not_ok "what the guest deletes is given back to the host" "held $full KiB, then $freed KiB"
	fi

	expect "a disk smaller than the template's is refused" 2 \
		$C create --template dk --disk 32M
	expect "a bad size is a usage error" 2 $C create --template dk --disk 64X
	c=$($C create --template dk --disk 128M)
	kib=$(root_kib "$c")
	if [ -n "$kib" ] && [ "$kib" -gt 120000 ] && [ "$kib" -le 131072 ]; then
		ok "a larger disk at create is grown into"
	else
		not_ok "a larger disk at create is grown into" "df says '$kib' KiB"
	fi
	check "it holds more than the template's disk" ok \
		"$(x "$c" 'dd if=/dev/zero of=/root/big bs=1M count=80 >/dev/null 2>&1 && rm /root/big && echo ok')"

	# a + b + c may grow to 256 MiB
	out=$(CUBE_DISK_LIMIT=300M $C create --template dk 2>&1)
	case $out in
	*"no room"*) ok "the host-wide limit refuses a disk that does not fit"
		;;
	*) not_ok "the host-wide limit refuses a disk that does not fit" "$out"
		[ -n "$out" ] && $C kill "$out" >/dev/null 2>&1 ;;
	esac
	check "a refused create leaves no disk" 3 "$(ls $D | grep -c '\.img$')"

	x "$b" 'echo one > /root/before' >/dev/null
	f=$($C fork "$b")
	x "$b" 'echo two > /root/after; rm /root/before' >/dev/null
	check "a fork sees exactly the files of its moment" "one none" \
		"$(x "$f" 'cat /root/before; ls /root/after 2>/dev/null || echo none' | words)"
	x "$f" 'echo mine > /root/child' >/dev/null
	check "the parent never sees the fork's files" "none two" \
		"$(x "$b" 'ls /root/child 2>/dev/null || echo none; cat /root/after' | words)"
	$C kill "$f" >/dev/null

	x "$b" 'echo kept > /root/cp' >/dev/null
	$C checkpoint "$b" cp1 >/dev/null
	x "$b" 'echo later > /root/post; rm /root/cp; dd if=/dev/urandom of=/root/r bs=1M count=4 2>/dev/null' >/dev/null
	$C rollback "$b" cp1 >/dev/null
	check "a rollback puts the disk back with the memory" "kept none" \
		"$(x "$b" 'cat /root/cp; ls /root/post 2>/dev/null || echo none' | words)"
	check "the disk keeps working after it" same \
		"$(x "$b" 'dd if=/dev/urandom of=/root/w bs=1M count=4 2>/dev/null; a=$(md5sum < /root/w); sync; echo 3 > /proc/sys/vm/drop_caches; [ "$a" = "$(md5sum < /root/w)" ] && echo same')"
	$C rollback "$c" >/dev/null
	kib=$(root_kib "$c")
	if [ -n "$kib" ] && [ "$kib" -gt 120000 ]; then
		ok "back at the template, a larger disk is grown into again"
	else
		not_ok "back at the template, a larger disk is grown into again" "df says '$kib' KiB"
	fi

	# a sandbox killed with its shim leaves its disk; the next create
	# sweeps it
	vm_gone() { [ -z "$(vmm_pid "$1")" ]; }
	vp=$(vmm_pid "$c")
	sp=$(awk '{ print $4 }' /proc/$vp/stat 2>/dev/null)
	kill -9 "$sp" "$vp" 2>/dev/null
	# the VM process dies with its supervisor, not at the same instant
	wait_until 30 vm_gone "$c"
	e=$($C create --template dk)
	check "a dead sandbox's disk is swept by the next create" none \
		"$(ls $D/$c.img 2>/dev/null || echo none)$(p=$(vmm_pid "$c"); [ -n "$p" ] && echo " (still running: $p $(cat /proc/$p/stat))")"
	$C kill "$a" "$b" "$e" >/dev/null
	wait_until 60 no_sandbox
	check "killed sandboxes leave no disk" 0 "$(ls $D | grep -c '\.img$')"

	progress "50 create/kill cycles"
	s=$($C create --template dk) && $C kill "$s" >/dev/null
	wait_until 30 no_sandbox
	files > $W/before
	fails=0
	i=0
	while [ $i -lt 50 ]; do
		s=$($C create --template dk) || fails=$((fails + 1))
		# every tenth writes to its disk first
		[ -n "$s" ] && [ $((i % 10)) = 0 ] &&
			x "$s" 'echo x > /root/x' >/dev/null
		[ -n "$s" ] && $C kill "$s" >/dev/null
		i=$((i + 1))
	done
	wait_until 60 no_sandbox
	files > $W/after
	check "50 create/kill cycles all work" 0 "$fails"
	if cmp -s $W/before $W/after; then
		ok "and leave no file behind"
	else
		not_ok "and leave no file behind" "$(diff $W/before $W/after | head -n 5)"
	fi
	expect "template rm" 0 $C template rm dk
	check "the template's disk goes with it" none \
		"$(ls $t 2>/dev/null || echo none)"
}

main
ktap_finish 31
exit $ktap_failed
