#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# jail_test.sh: the VMM of a real sandbox (restored from its template by
# cube-shim) and of its fork is jailed as Documentation/vmm.rst says:
#   * its cgroup has the sandbox's own limits, memory.max = memory +
#     128 MiB and cpu.max = vCPUs x 100 ms, as a booted VM's would be (not
#     the generous fixed ones a restore once had);
#   * its fd table is what it needs: stdio (/dev/null, vmm.log), KVM, its
#     eventfds, epolls, signalfd and timerfd, its sockets, the console log,
#     the rootfs, the tap, its cube.ko clone (whose counters "status"
#     reports); never a pipe (the shim's report channel is one);
#   * no core, bounded file size and descriptors; every thread without
#     capabilities, with no_new_privs and seccomp, vCPUs with a second
#     filter of their own.
# Needs cube.ko, /dev/kvm, the guest rootfs disk (to build the template).
cd "$(dirname "$0")" || exit 1
. ./ktap.sh

C=./cubectl
T=/tmp/jail-test
export CUBE_STATE_DIR=$T/state CUBE_RUN_DIR=$T/run
rm -rf $T
mkdir -p "$CUBE_STATE_DIR" "$CUBE_RUN_DIR"
MEM=192

cleanup() {
	for id in $($C --json ls 2>/dev/null | sed -n 's/.*"id": *\([0-9]*\).*/\1/p'); do
		$C kill "$id" >/dev/null 2>&1
	done
	$C template rm jt >/dev/null 2>&1
	rm -rf $T
}
trap cleanup EXIT

# the process that runs sandbox $1's VM: cube-vmm's child, under seccomp
vm_pid() {
	for f in /proc/[0-9]*/cmdline; do
		p=${f#/proc/}
		p=${p%/cmdline}
		tr '\0' ' ' < "$f" 2>/dev/null |
			grep -q -- "--restore .*$CUBE_RUN_DIR/sandboxes/$1/vsock" ||
			continue
		grep -q '^Seccomp:[[:space:]]*2' "/proc/$p/status" 2>/dev/null &&
			echo "$p" && return 0
	done
	return 1
}

# the fds of process $1 (sandbox $2) that are none of what a VMM needs:
# /dev/cube is for checkpoints (module snapshots of its clone; their files
# come with each request, so no directory is held), its disk file for a
# template with a disk
odd_fds() {
	for fd in /proc/$1/fd/*; do
		t=$(readlink "$fd") || continue
		case "$t" in
		/dev/null|/dev/kvm|/dev/net/tun|/dev/cube|anon_inode:kvm-vm|\
		anon_inode:kvm-vcpu:*|"anon_inode:[eventfd]"|\
		"anon_inode:[eventpoll]"|"anon_inode:[signalfd]"|\
		"anon_inode:[timerfd]"|socket:*|*cube-clone*|$T/rootfs.ext4|\
		$CUBE_RUN_DIR/sandboxes/$2/vmm.log|\
		$CUBE_RUN_DIR/sandboxes/$2/console.log|\
		$CUBE_STATE_DIR/disks/$2.img) ;;
		*) echo "${fd##*/}:$t" ;;
		esac
	done
}

# check_vm NAME ID: the jail of sandbox ID's VMM
check_vm() {
	pid=$(vm_pid "$2")
	if [ -z "$pid" ]; then
		not_ok "$1: its VMM runs under seccomp" "no such process"
		ktap_finish $PLAN
		exit 1
	fi
	odd=$(odd_fds "$pid" "$2")
	pipes=$(ls -l /proc/$pid/fd | grep -c 'pipe:')
	[ -z "$odd" ] && [ "$pipes" = 0 ] &&
		ok "$1: the VMM holds only the fds it needs" ||
		not_ok "$1: the VMM holds only the fds it needs" "odd fds: $odd"

	core=$(awk '/^Max core file size/ { print $5 "/" $6 }' /proc/$pid/limits)
	fsize=$(awk '/^Max file size/ { print $4 "/" $5 }' /proc/$pid/limits)
	nofile=$(awk '/^Max open files/ { print $4 }' /proc/$pid/limits)
	want=$(((MEM + 64) * 1048576))
	[ "$core" = 0/0 ] && [ "$fsize" = "$want/$want" ] &&
		[ "$nofile" -gt 1032 ] && [ "$nofile" -lt 1200 ] &&
		ok "$1: rlimits: no core, bounded file size and fds" ||
		not_ok "$1: rlimits: no core, bounded file size and fds" \
			"core $core, file size $fsize (want $want), open files $nofile"

	bad=
	two=0
	for st in /proc/$pid/task/*/status; do
		grep -q '^CapEff:[[:space:]]*0000000000000000$' "$st" &&
			grep -q '^CapBnd:[[:space:]]*0000000000000000$' "$st" &&
			grep -q '^NoNewPrivs:[[:space:]]*1$' "$st" &&
			grep -q '^Seccomp:[[:space:]]*2$' "$st" || bad="$bad $st"
		grep -q '^Seccomp_filters:[[:space:]]*2$' "$st" && two=$((two + 1))
	done
	[ -z "$bad" ] && [ "$two" = 1 ] &&
		ok "$1: every thread without capabilities, under seccomp; the vCPU's own filter" ||
		not_ok "$1: every thread without capabilities, under seccomp; the vCPU's own filter" \
			"threads not jailed:$bad; threads with two filters: $two"

	cg=/sys/fs/cgroup/cube/cube-$2
	mem=$(cat $cg/memory.max 2>&1)
	cpu=$(cat $cg/cpu.max 2>&1)
	[ "$mem" = $(((MEM + 128) * 1048576)) ] && [ "$cpu" = "100000 100000" ] &&
		ok "$1: cgroup limits of its shape" ||
		not_ok "$1: cgroup limits of its shape" \
			"memory.max $mem (want $(((MEM + 128) * 1048576))), cpu.max $cpu"

	# Uid: real, effective, saved, fs; the same for Gid
	ids=$(awk '/^(Uid|Gid):/ { print $2, $3, $4, $5 }' /proc/$pid/status | tr '\n' ' ')
	set -- "$1" "$2" $ids
	vm_uid=$3
	[ "$3" -ge $JAIL_BASE ] && [ "$3" -lt $((JAIL_BASE + 65536)) ] &&
		[ "$3 $3 $3 $3 $3 $3 $3 $3" = "$3 $4 $5 $6 $7 $8 $9 ${10}" ] &&
		ok "$1: runs as a uid and gid of its own" ||
		not_ok "$1: runs as a uid and gid of its own" "Uid/Gid: $ids"

	same=
	for ns in mnt pid ipc net; do
		[ "$(readlink /proc/$pid/ns/$ns)" = "$(readlink /proc/self/ns/$ns)" ] &&
			same="$same $ns"
	done
	nspid=$(awk '/^NSpid:/ { print $NF }' /proc/$pid/status)
	[ -z "$same" ] && [ "$nspid" = 1 ] &&
		ok "$1: namespaces of its own, pid 1 in its pid namespace" ||
		not_ok "$1: namespaces of its own, pid 1 in its pid namespace" \
			"shares:$same; its pid there: $nspid"

	root=$(stat -L -c %d:%i /proc/$pid/root/ 2>&1)
	dir=$(stat -c %d:%i $CUBE_RUN_DIR/sandboxes/$2)
	[ "$root" = "$dir" ] &&
		ok "$1: its root is its run directory" ||
		not_ok "$1: its root is its run directory" "root $root, run directory $dir"
}

JAIL_BASE=1073741824

PLAN=24
ktap_plan $PLAN
rootfs=$(ls /dev/disk/cube/rootfs-*.ext4 2>/dev/null | head -n 1)
if [ -z "$rootfs" ] || [ ! -c /dev/kvm ]; then
	not_ok "guest images and /dev/kvm are there" "rootfs '$rootfs', /dev/kvm"
	ktap_finish $PLAN
	exit 1
fi
cp "$rootfs" $T/rootfs.ext4
expect "template build" 0 $C template build jt --kernel /boot/vmlinuz \
	--initrd ./initramfs.cpio.gz --rootfs $T/rootfs.ext4 \
	--append cube.rootfstype=ext4 --vcpus 1 --memory $MEM
[ $got = 0 ] || { ktap_finish $PLAN; exit 1; }

id=$($C create --template jt)
[ -n "$id" ] && ok "create" || { not_ok "create" "no id"; ktap_finish $PLAN; exit 1; }
check_vm "sandbox" "$id"
uid_sandbox=$vm_uid

fid=$($C fork "$id")
if [ -n "$fid" ] && [ "$($C exec "$fid" -- echo forked)" = forked ]; then
	ok "fork runs"
else
	not_ok "fork runs" "fork id '$fid'"
	ktap_finish $PLAN
	exit 1
fi
check_vm "fork" "$fid"
[ "$uid_sandbox" != "$vm_uid" ] &&
	ok "a sandbox and its fork run as different uids" ||
	not_ok "a sandbox and its fork run as different uids" "both $vm_uid"

# The disk of a restore is the one template.conf names, never the one the
# snapshot's state file names (a paused sandbox's or a fork's state is
# written by its own VMM).  Point the template at a copy whose last block
# holds a marker: a new sandbox reads it from its disk, past its page cache.
size=$(stat -c %s $T/rootfs.ext4)
cp $T/rootfs.ext4 $T/other.ext4
printf cube-disk-marker | dd of=$T/other.ext4 bs=4096 seek=$((size / 4096 - 1)) \
	conv=notrunc 2>/dev/null
sed -i "s|^rootfs=.*|rootfs=$T/other.ext4|" "$CUBE_STATE_DIR/templates/jt/template.conf"
did=$($C create --template jt)
got=$([ -n "$did" ] && $C exec "$did" -- dd if=/dev/vda bs=4096 \
	skip=$((size / 4096 - 1)) count=1 iflag=direct 2>/dev/null | head -c 16)
[ "$got" = cube-disk-marker ] &&
	ok "a restore's disk is its template's, not its state file's" ||
	not_ok "a restore's disk is its template's, not its state file's" \
		"sandbox '$did' read '$got' at the end of its disk"
# A compromised VMM: cube-vmm-hooks runs the attacker's routine in its main
# thread once the jail is in, before the process-wide filter (so that
# what the namespaces, root, uid and Landlock stop by themselves is seen).
# Each target is a host file or socket it must not reach (read, written,
# connected to), or a walk out of every directory it holds open (it
# holds none: its checkpoints come as files with each request).
echo secret-key > $T/api-keys
chmod 600 $T/api-keys
echo anyone-may-read > $T/public
chmod 644 $T/public
mem=$(ls $CUBE_STATE_DIR/forks/*/memory 2>/dev/null | head -n 1)
# target=what it must get: host paths are not there at all (the mount
# namespace), the run directory's files are root's (the uid), and the one
# any user may read, console.log, is outside its Landlock domain
want="read:$T/api-keys=ENOENT
read:${mem:-$CUBE_STATE_DIR/forks/none/memory}=ENOENT
connect:$CUBE_RUN_DIR/sandboxes/$id/vsock=ENOENT
connect:$CUBE_RUN_DIR/sandboxes/$id/control=ENOENT
read:$CUBE_RUN_DIR/sandboxes/$id/vmm.log=ENOENT
read:/vmm.log=EACCES
read:/console.log=EACCES
write:/escape=EACCES
write:$T/escape=ENOENT
read:/proc/1/environ=ENOENT
dirfds:../../../../../../..$T/public=NONE"
targets=$(echo "$want" | sed 's/=[A-Z]*$//' | paste -sd,)
eid=$(CUBE_VMM=./cube-vmm-hooks CUBE_VMM_TEST_CALL=escape-unfiltered \
	CUBE_VMM_TEST_TARGETS="$targets" $C create --template jt 2>&1)
log=$CUBE_RUN_DIR/sandboxes/$eid/vmm.log
grep 'test hook: escape' "$log" 2>/dev/null | sed 's/^/# /'
# what each got ("dirfds:X fd N: E" counts as "dirfds:X=E", one per fd)
got=$(sed -n 's/.*test hook: escape \([a-z]*:[^ ]*\)\( fd [0-9]*\)*: \([A-Z]*\)$/\1=\3/p' \
	"$log" 2>/dev/null | sort -u)
[ "$got" = "$(echo "$want" | sort -u)" ] &&
	grep -q 'test hook: escape done' "$log" && [ ! -e $T/escape ] &&
	ok "a compromised VMM reaches no host file or socket" ||
	not_ok "a compromised VMM reaches no host file or socket" \
		"sandbox '$eid' got: $(echo $got)"
[ "$($C exec "$eid" -- echo still 2>/dev/null)" = still ] &&
	ok "the sandbox of that VMM still runs" ||
	not_ok "the sandbox of that VMM still runs" "sandbox '$eid'"

# SIGKILL of its supervisor (the cube-shim, whose clone made it pid 1 of
# its pid namespace) ends the jailed VM too: taking the
# jail's uid cleared its parent-death signal, which it sets again
vp=$(vm_pid "$eid")
sup=$(awk '{ print $4 }' /proc/$vp/stat 2>/dev/null)
[ -n "$sup" ] && kill -9 "$sup"
i=0
while [ $i -lt 100 ] && kill -0 "$vp" 2>/dev/null; do
	sleep 0.1
	i=$((i + 1))
done
[ -n "$vp" ] && [ -n "$sup" ] && ! kill -0 "$vp" 2>/dev/null &&
	ok "the jailed VM dies with its supervisor" ||
	not_ok "the jailed VM dies with its supervisor" "VM '$vp', supervisor '$sup'"

# Filtered, it opens no file by name at all, even one it could read: the
# filter kills it at openat(2) (SIGSYS, 31 on x86-64)
out=$(CUBE_VMM=./cube-vmm-hooks CUBE_VMM_TEST_CALL=escape \
	CUBE_VMM_TEST_TARGETS="read:/public-in-root" $C create --template jt 2>&1)
rc=$?
[ $rc != 0 ] && echo "$out" | grep -q 'killed by signal 31,' &&
	ok "a compromised VMM cannot open a file by name (killed at openat(2))" ||
	not_ok "a compromised VMM cannot open a file by name (killed at openat(2))" \
		"create: $rc '$out'"

# ... nor signal a host process: the filter kills it at kill(2)
sleep 300 &
victim=$!
out=$(CUBE_VMM=./cube-vmm-hooks CUBE_VMM_TEST_CALL=escape \
	CUBE_VMM_TEST_TARGETS="kill:$victim" $C create --template jt 2>&1)
rc=$?
kill -0 $victim 2>/dev/null && [ $rc != 0 ] &&
	ok "a compromised VMM cannot signal a host process (killed at kill(2))" ||
	not_ok "a compromised VMM cannot signal a host process (killed at kill(2))" \
		"create: $rc '$out'; victim alive: $(kill -0 $victim 2>&1 && echo yes)"
kill $victim 2>/dev/null
ktap_finish $PLAN
exit $ktap_failed
