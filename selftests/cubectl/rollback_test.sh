#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# rollback_test.sh: cubectl checkpoint and rollback against real sandboxes.
# What a sandbox did after a checkpoint (a file on its tmpfs root, a
# process started, memory written) is gone after a rollback to it and what
# it had then is there; a rollback without a name goes back to the
# template; two sandboxes of one template roll back independently; the
# random bytes differ after each rollback of one checkpoint; a rollback
# racing a kill or a running exec ends clean; bad inputs are refused with
# a clear error and change nothing; create/checkpoint/kill cycles and a
# SIGKILLed cube-vmm leave no run directory and no module snapshot; what a
# SIGKILLed cube-shim left goes at the next create.
# Needs cube.ko, /dev/kvm, the guest rootfs disk.
cd "$(dirname "$0")" || exit 1
. ./ktap.sh
. ./sandbox.sh

C=./cubectl
T=/tmp/rollback-test
export CUBE_STATE_DIR=$T/state CUBE_RUN_DIR=$T/run
rm -rf $T
mkdir -p "$CUBE_STATE_DIR" "$CUBE_RUN_DIR"

cleanup() {
	for s in $($C --json ls 2>/dev/null | sed -n 's/.*"id": *\([0-9]*\).*/\1/p'); do
		$C kill "$s" >/dev/null 2>&1
	done
	wait_until 60 no_sandbox
	$C template rm rb >/dev/null 2>&1
	rm -rf $T /tmp/rollback-rootfs.ext4
}
trap cleanup EXIT

# the module's snapshots (templates' and checkpoints')
snaps() {
	$C --json stats | sed -n 's/.*"snapshots": *\([0-9]*\).*/\1/p'
}

# snaps_are N: the module holds N snapshots (a snapshot a clone still
# maps goes with the clone, just after its sandbox)
snaps_are() {
	[ "$(snaps)" = "$1" ]
}

# the run and state directories, but the sandboxes' run directories and
# the behaviour logs (they outlive their sandboxes)
dirs() {
	find "$CUBE_RUN_DIR" "$CUBE_STATE_DIR" |
		grep -v "^$CUBE_RUN_DIR/sandboxes/\|^$CUBE_STATE_DIR/audit" | sort
}

# vmm_gone ID: sandbox ID's cube-vmm is no longer there
vmm_gone() {
	[ -z "$(vmm_pid "$1")" ]
}

gone() {
	! $C inspect "$1" >/dev/null 2>&1 && [ ! -e "$CUBE_RUN_DIR/sandboxes/$1" ]
}

PLAN=61
ktap_plan $PLAN

main() {
	rootfs=$(ls /dev/disk/cube/rootfs-*.ext4 2>/dev/null | head -n 1)
	if [ -z "$rootfs" ] || [ ! -c /dev/kvm ]; then
		not_ok "guest images and /dev/kvm are there" "rootfs '$rootfs', /dev/kvm"
		return
	fi
	cp "$rootfs" /tmp/rollback-rootfs.ext4
	progress "building template rb"
	expect "template build" 0 $C template build rb --kernel /boot/vmlinuz \
		--initrd ./initramfs.cpio.gz --rootfs /tmp/rollback-rootfs.ext4 \
		--append cube.rootfstype=ext4 --run 'echo built > /root/marker'
	[ "$got" = 0 ] || return

	a=$($C create --template rb) && b=$($C create --template rb)
	[ -n "$a" ] && [ -n "$b" ] || {
		not_ok "two sandboxes of the template" "ids '$a' '$b'"
		return
	}
	ok "two sandboxes of the template"
	# with no checkpoint yet: the template's snapshot alone
	snaps0=$(snaps)
	dir0=$(dirs)

	# --- A: what the checkpoint had comes back, what came after goes ---
	x "$a" 'echo kept > /root/before' >/dev/null
	cp1=$($C checkpoint "$a" c1)
	check "checkpoint ID NAME prints the name" c1 "$cp1"
	check "checkpoint ls lists it" "NAME c1" "$($C checkpoint ls "$a" | tr '\n' ' ' | sed 's/ $//')"
	check "checkpoint ls --json" '[{"name":"c1"}]' "$($C checkpoint ls --json "$a" | tr -d ' \n')"
	check "a second checkpoint without a name is cp-1" cp-1 "$($C checkpoint "$a")"
	check "a third one is cp-2" cp-2 "$($C checkpoint "$a")"
	x "$a" 'echo after > /root/after; setsid sleep 1000 </dev/null >/dev/null 2>&1 &
		dd if=/dev/urandom of=/tmp/dirty bs=1M count=16 2>/dev/null; echo done' >/dev/null
	check "after the checkpoint: a file, a process, 16 MiB written" \
		"after yes 16777216" \
		"$(x "$a" 'cat /root/after; grep -qx sleep /proc/[0-9]*/comm && echo yes; stat -c %s /tmp/dirty' | tr '\n' ' ' | sed 's/ $//')"
	# B changes too: A's rollback must not touch it
	x "$b" 'echo mine > /root/b' >/dev/null
	out=$($C rollback "$a" c1)
	rc=$?
	case "$rc $out" in
	"0 rolled back to c1 in "*) ok "rollback ID c1: $out" ;;
	*) not_ok "rollback ID c1" "exit $rc: $out" ;;
	esac
	pages=$(echo "$out" | sed -n 's/.*(\([0-9]*\) pages).*/\1/p')
	[ -n "$pages" ] && [ "$pages" -gt 0 ] && ok "the rollback put back $pages pages" ||
		not_ok "the rollback put back pages" "$out"
	check "what the checkpoint had is there" "kept built" \
		"$(x "$a" 'cat /root/before /root/marker' | tr '\n' ' ' | sed 's/ $//')"
	check "the file, the process and the memory written after are gone" "none" \
		"$(x "$a" 'ls /root/after /tmp/dirty 2>/dev/null; grep -lx sleep /proc/[0-9]*/comm 2>/dev/null; echo none')"
	check "the other sandbox kept its own change" mine "$(x "$b" 'cat /root/b')"
	check "checkpoints stay after a rollback" "c1 cp-1 cp-2" \
		"$($C checkpoint ls "$a" | tail -n +2 | sort | tr '\n' ' ' | sed 's/ $//')"
	j=$($C --json rollback "$a" cp-1 | tr -d ' \n')
	case "$j" in
	'{"target":"cp-1","us":'*'"pages":'*'"total_us":'*) ok "rollback --json" ;;
	*) not_ok "rollback --json" "$j" ;;
	esac
	check "the guest's identity is set again" "cube-$a" "$(x "$a" hostname)"

	# --- B: a rollback without a name goes back to the template ---
	out=$($C rollback "$b")
	case "$out" in
	"rolled back to @restore in "*) ok "rollback ID without a name: $out" ;;
	*) not_ok "rollback ID without a name" "$out" ;;
	esac
	check "B is the template's state again" "built" \
		"$(x "$b" 'cat /root/marker; cat /root/b 2>/dev/null')"
	check "A was not touched by B's rollback" "kept" "$(x "$a" 'cat /root/before')"

	# --- a checkpoint's pages are the sandbox's: its cgroup pays ---
	# (so they count against its memory.max as its guest memory does,
	# whatever uid the module's per-user bound sees)
	cg=/sys/fs/cgroup/cube/cube-$b
	x "$b" 'dd if=/dev/urandom of=/tmp/cg bs=1M count=16 2>/dev/null' >/dev/null
	m0=$(cat $cg/memory.current 2>/dev/null)
	j=$($C --json checkpoint "$b" charged | tr -d ' \n')
	m1=$(cat $cg/memory.current 2>/dev/null)
	cpp=$(echo "$j" | sed -n 's/.*"pages":\([0-9]*\).*/\1/p')
	if [ -n "$cpp" ] && [ -n "$m0" ] && [ "$cpp" -ge 4096 ] &&
	   [ $((m1 - m0)) -ge $((cpp * 4096 * 8 / 10)) ]; then
		ok "a checkpoint's copies are charged to its sandbox's cgroup"
	else
		not_ok "a checkpoint's copies are charged to its sandbox's cgroup" \
			"$j; memory.current $m0 -> $m1"
	fi
	$C checkpoint rm "$b" charged >/dev/null
	m2=$(cat $cg/memory.current 2>/dev/null)
	if [ -n "$cpp" ] && [ -n "$m2" ] &&
	   [ $((m1 - m2)) -ge $((cpp * 4096 * 8 / 10)) ] &&
	   [ ! -e "$CUBE_RUN_DIR/sandboxes/$b/checkpoints/charged" ]; then
		ok "and given back, with its files, when it is removed"
	else
		not_ok "and given back, with its files, when it is removed" \
			"memory.current $m1 -> $m2; $(ls $CUBE_RUN_DIR/sandboxes/$b/checkpoints)"
	fi

	# --- random bytes differ after each rollback of one checkpoint ---
	kern= py=
	for i in 1 2 3; do
		$C rollback "$a" c1 >/dev/null
		kern="$kern $(x "$a" 'head -c 16 /dev/urandom | od -An -tx1 | tr -d " \n"')"
		py="$py $(x "$a" "python3 -c 'import os; print(os.urandom(16).hex())'")"
	done
	[ "$(echo $kern | tr ' ' '\n' | grep '^[0-9a-f]\{32\}$' | sort -u | wc -l)" = 3 ] &&
		ok "/dev/urandom bytes: 3 different" ||
		not_ok "/dev/urandom bytes: 3 different" "got:$kern"
	[ "$(echo $py | tr ' ' '\n' | grep '^[0-9a-f]\{32\}$' | sort -u | wc -l)" = 3 ] &&
		ok "python3 os.urandom: 3 different" ||
		not_ok "python3 os.urandom: 3 different" "got:$py"

	# --- A, on a clone of c1 now: back to the template and forth, twice ---
	# (the way to the template is a clone the jailed VMM could not make)
	out= failed=
	for t in '' c1 '' c1 ''; do
		out=$($C rollback "$a" $t 2>&1) || { failed="to ${t:-the template}: $out"; break; }
	done
	if [ -z "$failed" ]; then
		check "template, c1, template, c1, template: the template's state" \
			"built" "$(x "$a" 'cat /root/marker /root/before 2>/dev/null')"
	else
		not_ok "template, c1, template, c1, template" "$failed"
	fi
	$C rollback "$a" c1 >/dev/null
	check "and c1's again" "kept built" \
		"$(x "$a" 'cat /root/before /root/marker' | tr '\n' ' ' | sed 's/ $//')"

	# --- bad inputs: a clear error, the status, nothing changed ---
	lock=$CUBE_RUN_DIR/sandboxes/$a/rollback.lock
	state() {
		$C ls 2>&1 | awk '{ print $1, $2, $3 }'
		$C checkpoint ls "$a" 2>&1
		echo "snapshots $(snaps)"
		find "$CUBE_RUN_DIR" "$CUBE_STATE_DIR" | grep -v "^$CUBE_STATE_DIR/audit" | sort
		x "$a" 'cat /root/before; ls /root'
	}
	while read -r want args; do
		[ -n "$want" ] || continue
		args=$(echo "$args" | sed "s/@A@/$a/g")
		state > $T/before 2>&1
		# shellcheck disable=SC2086
		$C $args >$T/out 2>$T/err
		rc=$?
		state > $T/after 2>&1
		err=$(head -c 200 $T/err | tr '\n' ' ')
		if [ "$rc" != "$want" ]; then
			not_ok "cubectl $args: exit $want" "exited $rc: $err"
		elif ! grep -q 'usage\|bad checkpoint name\|exists\|no sandbox\|no checkpoint\|busy\|invalid\|unrecognized' $T/err; then
			not_ok "cubectl $args: exit $want" "no clear error: '$err'"
		elif [ -s $T/out ]; then
			not_ok "cubectl $args: exit $want" "stdout: $(head -c 200 $T/out)"
		elif ! cmp -s $T/before $T/after; then
			not_ok "cubectl $args: exit $want" "it changed: $(diff $T/before $T/after | tail -n +3 | head -n 6 | tr '\n' ' ')"
		else
			ok "cubectl $args: exit $want, $err"
		fi
	done <<EOF
2 checkpoint
2 checkpoint @A@ .hidden
2 checkpoint @A@ a/b
2 checkpoint --bogus @A@ x
7 checkpoint @A@ c1
3 checkpoint 999999 x
3 checkpoint ls 999999
3 checkpoint rm @A@ nosuch
2 rollback abc
3 rollback @A@ nosuch
3 rollback 999999
EOF

	# A rollback while another of the same sandbox holds its lock: busy,
	# at once.  The first is seen holding it in /proc/locks (by the lock
	# file's inode); should it end before the second starts, try again.
	busy=
	for try in 1 2 3 4 5; do
		ino=$(stat -c %i "$lock")
		$C rollback "$a" c1 >/dev/null 2>&1 &
		first=$!
		# until it holds the lock, or has ended without being seen
		while read -r _ _ pst _ 2>/dev/null </proc/$first/stat &&
			[ "$pst" != Z ]; do
			grep -q "FLOCK.*:$ino " /proc/locks && break
		done
		$C rollback "$a" c1 >$T/out 2>$T/err
		rc=$?
		wait $first
		rc1=$?
		if [ "$rc" = 7 ] && grep -q busy $T/err; then
			busy="exit $rc: $(head -c 200 $T/err), the first exit $rc1"
			break
		fi
	done
	if [ -n "$busy" ] && [ "$rc1" = 0 ]; then
		ok "a rollback during another is refused: $busy"
	else
		not_ok "a rollback during another is refused" "last: exit $rc, $(head -c 200 $T/err), the first exit $rc1"
	fi

	s1=$(snaps)
	expect "checkpoint rm ID cp-2" 0 $C checkpoint rm "$a" cp-2
	wait_until 30 snaps_are $((s1 - 1))
	check "the module snapshot went with it" $((s1 - 1)) "$(snaps)"

	# --- a rollback racing a kill ---
	c=$($C create --template rb)
	$C checkpoint "$c" r >/dev/null
	$C rollback "$c" r >/dev/null 2>&1 &
	rbp=$!
	$C kill "$c" >/dev/null
	t0=$(date +%s)
	wait $rbp
	rbt=$(($(date +%s) - t0))
	# it notices the sandbox gone, rather than waiting for its agent
	[ "$rbt" -lt 30 ] && ok "the racing rollback ended within ${rbt} s" ||
		not_ok "the racing rollback ended in time" "it took ${rbt} s"
	wait_until 60 gone "$c" && ok "a rollback racing a kill: the sandbox is gone" ||
		not_ok "a rollback racing a kill: the sandbox is gone" "$(ls -la "$CUBE_RUN_DIR/sandboxes/$c" 2>&1)"

	# --- a rollback while an exec runs: the exec ends with an error ---
	d=$($C create --template rb)
	$C checkpoint "$d" r >/dev/null
	($C exec "$d" -- sleep 300 >$T/exec.out 2>$T/exec.err; echo $? > $T/exec.rc) &
	wait_until 60 sh -c "$C exec $d -- sh -c 'grep -qx sleep /proc/[0-9]*/comm'"
	expect "rollback while an exec runs" 0 $C rollback "$d" r
	if wait_until 60 test -s $T/exec.rc && [ "$(cat $T/exec.rc)" != 0 ]; then
		ok "the running exec ended with status $(cat $T/exec.rc): $(head -c 120 $T/exec.err | tr '\n' ' ')"
	else
		not_ok "the running exec ended with an error" "rc '$(cat $T/exec.rc 2>/dev/null)'"
	fi
	check "the sandbox answers after it" alive "$(x "$d" 'echo alive')"
	$C kill "$d" >/dev/null
	wait_until 60 gone "$d"

	# --- a SIGKILLed cube-vmm with checkpoints, then cubectl kill ---
	e=$($C create --template rb)
	$C checkpoint "$e" k1 >/dev/null && $C checkpoint "$e" k2 >/dev/null
	check "two checkpoints: two more module snapshots" $((s1 + 1)) "$(snaps)"
	# A record is the VMM's writing: a hostile one names A's c1 (same
	# template, parent and size), as it would by writing into a record
	# it was passed and then failing the request, which leaves the
	# files.  Released as its jail uid, it deletes nothing of A's.
	f=$CUBE_RUN_DIR/sandboxes/$e/checkpoints
	mkdir "$f/forged" &&
		cp "$CUBE_RUN_DIR/sandboxes/$a/checkpoints/c1/cube-snapshot-id" "$f/forged/"
	pid=$(vmm_pid "$e")
	[ -n "$pid" ] && kill -9 "$pid"
	$C kill "$e" >/dev/null 2>&1
	wait_until 60 gone "$e" && ok "after SIGKILL of its cube-vmm and kill, no run directory" ||
		not_ok "after SIGKILL of its cube-vmm and kill, no run directory" "$(find "$CUBE_RUN_DIR/sandboxes/$e" 2>&1 | head -5)"
	wait_until 30 snaps_are $((s1 - 1))
	check "no module snapshot of theirs is left, and A's named by a forged record is" \
		$((s1 - 1)) "$(snaps)"
	out=$($C rollback "$a" c1 2>&1)
	case "$out" in
	"rolled back to c1 in "*) ok "A rolls back to the c1 the forged record named" ;;
	*) not_ok "A rolls back to the c1 the forged record named" "$out" ;;
	esac

	# --- a SIGKILLed cube-shim with a checkpoint: the next create ---
	# --- removes its run directory and the checkpoint's snapshot ---
	g=$($C create --template rb)
	$C checkpoint "$g" k1 >/dev/null
	check "a checkpoint of G: one more module snapshot" "$s1" "$(snaps)"
	shim=$($C --json inspect "$g" | sed -n 's/.*"owner_pid": *\([0-9]*\).*/\1/p')
	[ -n "$shim" ] && kill -9 "$shim"
	wait_until 60 sh -c "! $C inspect $g >/dev/null 2>&1"
	wait_until 60 vmm_gone "$g"
	# what a shim killed before its end leaves: until this change, for good
	if [ -d "$CUBE_RUN_DIR/sandboxes/$g/checkpoints/k1" ]; then
		ok "G's killed cube-shim left its run directory and checkpoint"
	else
		not_ok "G's killed cube-shim left its run directory and checkpoint" \
			"$(ls -A "$CUBE_RUN_DIR/sandboxes" | tr '\n' ' ')"
	fi
	h=$($C create --template rb)
	check "the next create removed G's run directory" "" \
		"$(find "$CUBE_RUN_DIR/sandboxes/$g" 2>/dev/null | head -3)"
	check "and released G's checkpoint's module snapshot" $((s1 - 1)) "$(snaps)"
	check "and removed its VMM's cgroup" no \
		"$([ -e /sys/fs/cgroup/cube/cube-$g ] && echo yes || echo no)"
	check "the behaviour log says so" 1 \
		"$(grep -c '"event":"run_dir_swept"' "$CUBE_STATE_DIR/audit/$g.jsonl" 2>&1)"
	check "live sandboxes' run directories stay" "yes yes yes" \
		"$(for i in "$a" "$b" "$h"; do [ -e "$CUBE_RUN_DIR/sandboxes/$i/rollback.lock" ] && echo yes; done | tr '\n' ' ' | sed 's/ $//')"
	check "the new sandbox answers" alive "$(x "$h" 'echo alive')"
	$C kill "$h" >/dev/null
	wait_until 60 gone "$h"

	# --- 50 create/checkpoint/kill cycles ---
	fails=0
	for i in $(seq 50); do
		s=$($C create --template rb) || { fails=$((fails + 1)); continue; }
		$C checkpoint "$s" one >/dev/null || fails=$((fails + 1))
		$C checkpoint "$s" >/dev/null || fails=$((fails + 1))
		$C kill "$s" >/dev/null
		wait_until 60 gone "$s" || fails=$((fails + 1))
	done
	check "50 create/checkpoint/kill cycles" 0 "$fails"
	wait_until 30 snaps_are $((s1 - 1))
	check "the module snapshots after them are as before" $((s1 - 1)) "$(snaps)"

	$C kill "$a" "$b" >/dev/null
	wait_until 60 no_sandbox
	wait_until 30 snaps_are "$snaps0"
	check "at the end, the module's snapshots are the template's" "$snaps0" "$(snaps)"
	check "at the end, the run and state directories are as before" "$dir0" \
		"$(dirs)"
	check "at the end, no sandbox run directory is left" "" \
		"$(ls -A "$CUBE_RUN_DIR/sandboxes")"
}

main
ktap_finish $PLAN
exit $ktap_failed
