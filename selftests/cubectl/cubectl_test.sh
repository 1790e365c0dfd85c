#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# cubectl_test.sh: cubectl and cubed against real sandboxes.  Builds a
# template from the guest images, creates sandboxes from it (directly and
# from a pool cubed keeps filled), runs commands, copies files, watches
# events, checks every command's bad flags (a clear error, its exit code,
# nothing changed), and that it leaves no sandbox, process, veth, pool,
# template or file behind: counted before anything is swept.  Its plan is
# printed first; results an early failure never reaches are reported failed.
# Needs cube.ko, /dev/kvm, the guest rootfs disk.
cd "$(dirname "$0")" || exit 1
. ./ktap.sh

C=./cubectl
export CUBE_STATE_DIR=/tmp/cubectl-test/state CUBE_RUN_DIR=/tmp/cubectl-test/run
rm -rf /tmp/cubectl-test
mkdir -p "$CUBE_STATE_DIR" "$CUBE_RUN_DIR"
cubed_pid=

cleanup() {
	[ -n "$cubed_pid" ] && kill "$cubed_pid" 2>/dev/null && wait "$cubed_pid"
	$C pool set t1 --size 0 >/dev/null 2>&1
	for id in $($C --json ls 2>/dev/null | sed -n 's/.*"id": *\([0-9]*\).*/\1/p'); do
		$C kill "$id" >/dev/null 2>&1
	done
	wait_gone_all 60
	rm -rf /tmp/cubectl-test /tmp/cubectl-rootfs.ext4
}

sandbox_count() {
	$C --json stats | sed -n 's/.*"sandboxes": *\([0-9]*\).*/\1/p'
}

no_sandbox() {
	[ "$(sandbox_count)" = 0 ]
}

wait_gone_all() {
	wait_until "$1" no_sandbox
}

gone() {
	! $C inspect "$1" >/dev/null 2>&1
}

# private_pages ID: the sandbox's private guest pages (inspect --json)
private_pages() {
	$C --json inspect "$1" | sed -n 's/.*"private_pages": *\([0-9]*\).*/\1/p' | head -n 1
}

# settled_pages ID: sandbox ID's private pages once a trim made them fewer
# (cube-shim: --trim-every 10), or after 90 s
settled_pages() {
	local p0 p1 i=0

	p0=$(private_pages "$1") p1=$p0
	while [ $i -lt 90 ] && [ -n "$p1" ] && [ "$p1" -ge "${p0:-0}" ]; do
		sleep 1
		p1=$(private_pages "$1")
		i=$((i + 1))
	done
	echo "$p1"
}

# shim_pid ID: the pid of sandbox ID's cube-shim (its owner)
shim_pid() {
	$C --json inspect "$1" | sed -n 's/.*"owner_pid": *\([0-9]*\).*/\1/p'
}

# vmm_args ID: the command line of sandbox ID's cube-vmm, a space after each
vmm_args() {
	local shim p

	shim=$(shim_pid "$1")
	for p in $(cat /proc/$shim/task/*/children 2>/dev/null); do
		[ "$(cat /proc/$p/comm 2>/dev/null)" = cube-vmm ] || continue
		tr '\0' ' ' < /proc/$p/cmdline
		return
	done
}

# pgpgin ID: what sandbox ID's guest has read from its disks, in KiB
pgpgin() {
	$C cp "$1:/proc/vmstat" - 2>/dev/null | awk '$1 == "pgpgin" { print $2 }'
}
# cube-vmm and cube-shim processes running
vmm_procs() {
	cat /proc/[0-9]*/comm 2>/dev/null | grep -c '^cube-\(vmm\|shim\)$'
}

# host ends of sandbox veths (cubeN)
veths() {
	ip -o link show 2>/dev/null | awk -F': ' '$2 ~ /^cube[0-9]+(@|$)/' | wc -l
}

# answers ID SECONDS: a command runs in sandbox ID within SECONDS (by the
# clock: one try may take the agent's 30 s)
answers() {
	end=$(($(date +%s) + $2))
	while :; do
		[ "$($C exec --timeout 30 "$1" -- echo alive 2>/dev/null)" = alive ] && return 0
		[ "$(date +%s)" -ge "$end" ] && return 1
		sleep 1
	done
}

# the sandboxes of pool $1, from ls --json (id comes first in each object)
pooled_ids() {
	$C --json ls | awk -v pool="$1" '
		/"id":/ { id = $0; gsub(/[^0-9]/, "", id) }
		$0 ~ "\"pool\": *\"" pool "\"" { print id }'
}

# all_gone ID...: none of the sandboxes exists
all_gone() {
	for g in "$@"; do
		gone "$g" || return 1
	done
}

no_vmm() {
	[ "$(vmm_procs)" = 0 ]
}

no_veth() {
	[ "$(veths)" = 0 ]
}

# what a refused command must not change: the sandboxes and their states,
# pools, templates, processes, the files of the state and run directories,
# and the live sandbox's egress policy
snapshot() {
	$C ls 2>&1 | awk '{ print $1, $2, $3 }'
	$C pool ls 2>&1
	$C template ls 2>&1
	echo "vmm $(vmm_procs)"
	find "$CUBE_STATE_DIR" "$CUBE_RUN_DIR" /tmp/cubectl-test 2>&1 | sort
	[ -n "$id" ] && $C net show "$id" 2>&1 | awk '$1 == "policy"'
}

# bad_flags TABLE: each line "STATUS ARGS...": cubectl ARGS (@ID@ is the
# live sandbox) exits STATUS with an error on stderr, prints nothing on
# stdout, and changes nothing
bad_flags() {
	echo "$ktap_n $ktap_failed" > /tmp/cubectl-snap.count
	echo "$1" | while read -r want args; do
		[ -n "$want" ] || continue
		args=$(echo "$args" | sed "s/@ID@/$id/g")
		snapshot > /tmp/cubectl-snap.before 2>&1
		# shellcheck disable=SC2086
		$C $args >/tmp/ktap.out 2>/tmp/ktap.err
		got=$?
		snapshot > /tmp/cubectl-snap.after 2>&1
		err=$(head -c 300 /tmp/ktap.err | tr '\n' ' ')
		if [ "$got" != "$want" ]; then
			not_ok "cubectl $args: exit $want" "exited $got: $err"
		elif ! grep -q "$errpat" /tmp/ktap.err; then
			not_ok "cubectl $args: exit $want" "no clear error on stderr: '$err'"
		elif [ -s /tmp/ktap.out ]; then
			not_ok "cubectl $args: exit $want" "stdout: $(head -c 200 /tmp/ktap.out)"
		elif ! cmp -s /tmp/cubectl-snap.before /tmp/cubectl-snap.after; then
			not_ok "cubectl $args: exit $want" "it changed: $(diff /tmp/cubectl-snap.before /tmp/cubectl-snap.after | tail -n +3 | head -n 8 | tr '\n' ' ')"
		else
			ok "cubectl $args: exit $want, nothing changed"
		fi
		echo "$ktap_n $ktap_failed" > /tmp/cubectl-snap.count
	done
	# the loop ran in a subshell (a pipe): take its count back
	read -r ktap_n ktap_failed < /tmp/cubectl-snap.count
}
errpat='no command\|no such\|usage\|invalid\|unknown\|unrecognized\|requires an argument\|needs\|must\|cannot\|not found'

# Before anything exists (no template, no sandbox): usage errors and
# unknown names and ids.
BAD_EMPTY='
2 nope
2 --bogus ls
2 create --vcpus 99
2 create --memory 12x
2 create --timeout 0
2 create --net open
2 create --label novalue
2 kill x1
2 exec 1 --
3 create --template missing
3 inspect 999999
3 kill 999999
3 pool set missing --size 1
3 template rm missing
'

# With template t1 and sandbox @ID@ running: every command's unknown flag,
# missing argument, bad number and unknown id.  None may touch @ID@.
BAD_LIVE='
2 create --bogus
2 create --vcpus
2 create --vcpus 0
2 create --memory -5
2 create --memory 99999999999999999999
2 create --timeout 86401
2 create --label b@d=1
2 create --template ../t1
2 create --template t1 --net /no/such/policy
2 exec --bogus @ID@ -- true
2 exec --timeout 0 @ID@ -- true
2 exec --timeout x @ID@ -- true
2 exec --timeout
2 exec --env NOEQ @ID@ -- true
2 exec --cwd rel @ID@ -- true
2 exec
2 exec @ID@
2 exec x -- true
2 run
2 run @ID@
2 run x print(1)
2 run --bogus @ID@ print(1)
2 run @ID@ --language
2 run @ID@ -l
3 run 999999 print(1)
2 fork
2 fork x
2 fork --bogus @ID@
2 fork @ID@ 2
2 kill
2 kill --bogus @ID@
2 kill --grace 0 @ID@
2 kill --grace x @ID@
2 kill --grace
2 kill @ID@ x
2 ls --bogus
2 ls extra
2 inspect
2 inspect x
2 inspect --bogus @ID@
2 inspect @ID@ 2
2 logs
2 logs x
2 logs --bogus @ID@
3 logs 999999
2 cp
2 cp /tmp/cubectl-test/f
2 cp /tmp/cubectl-test/f /tmp/cubectl-test/g2
2 cp x:/etc/hostname /tmp/cubectl-test/g2
2 cp @ID@:etc/hostname /tmp/cubectl-test/g2
3 cp 999999:/etc/hostname /tmp/cubectl-test/g2
2 events --bogus
2 events --count
2 events --count 0
2 events --count x
2 events extra
2 stats --bogus
2 stats x
2 stats @ID@ 2
3 stats 999999
2 template
2 template bogus
2 template build
2 template build t9
2 template build t9 --bogus
2 template build ../t9 --kernel /boot/vmlinuz
2 template build t9 --kernel /boot/vmlinuz --vcpus 0
2 template build t9 --kernel /boot/vmlinuz --memory 1
2 template build t9 --kernel /boot/vmlinuz --net /no/such/policy
3 template build t9 --kernel /no/such/kernel
2 template ls --bogus
2 template rm
2 template rm ../t1
2 template rm t1 t2
2 pool
2 pool bogus
2 pool set
2 pool set t1
2 pool set t1 --size
2 pool set t1 --size -1
2 pool set t1 --size x
2 pool set t1 --size 5000
2 pool set t1 --size 1 --low x
2 pool set t1 --bogus 1
2 pool set ../t1 --size 1
2 pool ls --bogus
2 net
2 net bogus @ID@
2 net show
2 net show x
2 net show @ID@ 2
2 net set @ID@
2 net set x none
2 net set @ID@ /no/such/policy
3 net show 999999
3 net set 999999 deny
'
nbad() {
	echo "$1" | grep -c '^[0-9]'
}
# results outside the two tables (see run)
PLAN_FIXED=79
PLAN=$((PLAN_FIXED + $(nbad "$BAD_EMPTY") + $(nbad "$BAD_LIVE")))

pool_ready() {
	$C pool ls | awk -v want="$1" '$1 == "t1" && $3 >= want { f = 1 } END { exit !f }'
}

# cubed with its E2B API on 127.0.0.1:3000; waits until it answers
start_api_cubed() {
	./cubed --api-port 3000 --envd-port 49983 \
		--api-key-file /tmp/cubectl-test/keys 2>>/tmp/cubectl-test/cubed.log &
	cubed_pid=$!
	wait_until 30 wget -q -O /dev/null http://127.0.0.1:3000/health
}

# the E2B API's sandbox list, as JSON
api_list() {
	wget -q -O - --header "X-API-Key: cube-restart-key" \
		http://127.0.0.1:3000/v2/sandboxes 2>/dev/null
}

run() {
	# usage and lookup errors, before anything exists
	id=
	bad_flags "$BAD_EMPTY"
	expect "exec in an unknown id exits 125" 125 $C exec 999999 -- true
	expect "ls with no sandbox" 0 $C ls
	if [ "$($C --json ls | tr -d ' \n')" = "[]" ]; then
		ok "ls --json is an empty array"
	else
		not_ok "ls --json is an empty array" "$($C --json ls)"
	fi
	expect "stats" 0 $C stats

	rootfs=$(ls /dev/disk/cube/rootfs-*.ext4 2>/dev/null | head -n 1)
	if [ -z "$rootfs" ] || [ ! -c /dev/kvm ]; then
		not_ok "guest images and /dev/kvm are there" "rootfs '$rootfs', /dev/kvm"
		return
	fi
	cp "$rootfs" /tmp/cubectl-rootfs.ext4
	progress "building template t1"
	expect "template build" 0 $C template build t1 --kernel /boot/vmlinuz \
		--initrd ./initramfs.cpio.gz --rootfs /tmp/cubectl-rootfs.ext4 \
		--append cube.rootfstype=ext4 --run 'echo built > /root/marker'
	if [ $got != 0 ]; then
		sed 's/^/# /' /tmp/ktap.err | tail -n 20
		return
	fi
	expect "template build of an existing name exits 7" 7 $C template build t1 \
		--kernel /boot/vmlinuz
	expect "a failing --run fails the build" 1 $C template build t2 \
		--kernel /boot/vmlinuz --initrd ./initramfs.cpio.gz \
		--rootfs /tmp/cubectl-rootfs.ext4 --append cube.rootfstype=ext4 \
		--run 'exit 3'
	if ! $C template ls | grep -q '^t2 ' && [ ! -e "$CUBE_STATE_DIR/templates/t2" ]; then
		ok "a failed build leaves no template"
	else
		not_ok "a failed build leaves no template" "t2 is still there"
	fi

	id=$($C create --template t1 --label team=qa 2>/tmp/ktap.err)
	case "$id" in
	[1-9]*) ok "create prints the new id" ;;
	*) not_ok "create prints the new id" "got '$id': $(cat /tmp/ktap.err)"; return ;;
	esac
	if $C ls | awk -v id="$id" '$1 == id && $2 == "running" && $3 == "t1" { f = 1 } END { exit !f }'; then
		ok "ls shows it running"
	else
		not_ok "ls shows it running" "$($C ls)"
	fi
	# khugepaged would give a shim's or VMM's stack a 2 MiB page
	# (this sandbox's: its shim and what it started, not a build's VMM)
	procs=$(shim_pid "$id")
	for level in 1 2; do
		for p in $procs; do
			procs="$procs $(cat /proc/$p/task/*/children 2>/dev/null)"
		done
		procs=$(echo $procs | tr ' ' '\n' | sort -u)
	done
	thp=$(for p in $procs; do
		awk '/^THP_enabled:/ { print $2 }' "/proc/$p/status"
	done | sort | uniq -c | tr -s ' ')
	# (the shim, the VMM and the child it runs the VM in: all at 0)
	if [ "${thp% 0}" != "$thp" ] && [ "${thp% 0}" -ge 2 ] 2>/dev/null; then
		ok "its cube-shim and cube-vmm run without transparent huge pages"
	else
		not_ok "its cube-shim and cube-vmm run without transparent huge pages" \
			"THP_enabled counts: '$thp'"
	fi
	# nothing waits on the VM but the shim: the cube-vmm it started is
	# its only child, and has none (no supervisor of its own; jailed, it
	# was cloned as pid 1 of its pid namespace and joined its cgroup)
	shim=$(shim_pid "$id")
	kids=$(cat /proc/$shim/task/*/children 2>/dev/null)
	grand=$(for p in $kids; do cat /proc/$p/task/*/children 2>/dev/null; done)
	got="$(echo $kids | wc -w) $(for p in $kids; do cat /proc/$p/comm; done) $(echo $grand | wc -w)"
	[ "$got" = "1 cube-vmm 0" ] &&
		ok "a sandbox is two processes: its cube-shim and its cube-vmm" ||
		not_ok "a sandbox is two processes: its cube-shim and its cube-vmm" \
			"children, their names, grandchildren: '$got'"
	# its cube-shim gave back what its set-up freed (the network, once
	# built in a thread whose malloc arena kept ~850 KiB, is now built by
	# cube-shim-net, and the shim maps neither libbpf nor libnftables),
	# and sleeps until something happens: no timer of its own
	shim=$(shim_pid "$id")
	anon=$(awk '/^RssAnon:/ { print $2 }' "/proc/$shim/status" 2>/dev/null)
	echo "# its cube-shim holds ${anon:-?} KiB of anonymous memory"
	if [ -n "$anon" ] && [ "$anon" -le 320 ]; then
		ok "its cube-shim keeps no more than 320 KiB of anonymous memory"
	else
		not_ok "its cube-shim keeps no more than 320 KiB of anonymous memory" \
			"RssAnon '$anon' KiB"
	fi
	w0=$(awk '/^voluntary_ctxt_switches:/ { print $2 }' "/proc/$shim/task/$shim/status" 2>/dev/null)
	sleep 5
	w1=$(awk '/^voluntary_ctxt_switches:/ { print $2 }' "/proc/$shim/task/$shim/status" 2>/dev/null)
	if [ -n "$w0" ] && [ -n "$w1" ] && [ $((w1 - w0)) -le 1 ]; then
		ok "its idle cube-shim does not wake"
	else
		not_ok "its idle cube-shim does not wake" \
			"woken $((${w1:-0} - ${w0:-0})) times in 5 s"
	fi
	# the build ran the shell before its snapshot: the loader and libc are
	# in the snapshot's page cache, and a first command reads next to
	# nothing from disk (KiB the guest's kernel counts, read without an exec)
	# (and it does count reads: perl, 3.7 MiB, was never read)
	in0=$(pgpgin "$id")
	$C exec "$id" -- true
	in1=$(pgpgin "$id")
	$C exec "$id" -- cat /usr/bin/perl > /dev/null
	in2=$(pgpgin "$id")
	echo "# read from disk: $((${in1:-0} - ${in0:-0})) KiB by a first command, $((${in2:-0} - ${in1:-0})) KiB by cat perl"
	if [ -n "$in0" ] && [ -n "$in1" ] && [ -n "$in2" ] &&
	   [ $((in1 - in0)) -lt 256 ] && [ $((in2 - in1)) -ge 1024 ]; then
		ok "a first command finds the loader and libc in the template's page cache"
	else
		not_ok "a first command finds the loader and libc in the template's page cache" \
			"pgpgin '$in0' -> '$in1' -> '$in2' KiB"
	fi
	# once it settles (cube-shim: --trim-every 10), an idle sandbox gives
	# back the private pages that hold the snapshot's contents again
	t0=$(cut -d. -f1 /proc/uptime)
	p0=$(private_pages "$id") p1=$(settled_pages "$id")
	i=$(($(cut -d. -f1 /proc/uptime) - t0))
	echo "# private pages: $p0 after its commands, $p1 after $i s idle"
	if [ -n "$p0" ] && [ -n "$p1" ] && [ "$p1" -lt "$p0" ]; then
		ok "an idle sandbox trims its private pages by itself"
	else
		not_ok "an idle sandbox trims its private pages by itself" \
			"private pages '$p0' -> '$p1' in $i s"
	fi
	# sandboxes of one user share the pages they hold with the same bytes
	# (cube-shim: --merge-group, its uid + 1); --no-merge keeps them its
	# own.  Both run what $id ran first, then settle and trim.
	mid2=$($C create --template t1 2>/tmp/ktap.err)
	mid3=$($C create --template t1 --no-merge 2>>/tmp/ktap.err)
	args2=$(vmm_args "$mid2") args3=$(vmm_args "$mid3")
	if [ "${args2#*--merge-group 1 }" != "$args2" ] &&
	   [ "${args3#*--merge-group}" = "$args3" ]; then
		ok "a sandbox's VMM merges in its user's group, not with --no-merge"
	else
		not_ok "a sandbox's VMM merges in its user's group, not with --no-merge" \
			"'$args2' / '$args3': $(cat /tmp/ktap.err)"
	fi
	$C exec "$mid2" -- true
	$C exec "$mid3" -- true
	settled_pages "$mid2" > /tmp/cubectl-test/p2 &
	p3=$(settled_pages "$mid3")
	wait $!
	p2=$(cat /tmp/cubectl-test/p2)
	echo "# settled private pages: $p2 merged, $p3 with --no-merge"
	if [ -n "$p2" ] && [ -n "$p3" ] && [ $((p2 + 64)) -le "$p3" ]; then
		ok "a settled sandbox shares the pages its user's others hold"
	else
		not_ok "a settled sandbox shares the pages its user's others hold" \
			"private pages '$p2' merged, '$p3' not"
	fi
	$C kill "$mid2" "$mid3" >/dev/null 2>&1
	# their ends take a moment after kill returns: wait, or the refused
	# commands' "nothing changed" below sees them go (a make check did)
	merge_gone() {
		! $C ls | awk 'NR > 1 { print $1 }' | grep -qx -e "$mid2" -e "$mid3"
	}
	wait_until 30 merge_gone ||
		echo "# sandboxes $mid2 and $mid3 still listed 30 s after their kill"
	if $C --json inspect "$id" | grep -q '"team": *"qa"'; then
		ok "inspect --json shows its label"
	else
		not_ok "inspect --json shows its label" "$($C --json inspect "$id")"
	fi
	printf 'abc\001\n' > /tmp/cubectl-test/f
	bad_flags "$BAD_LIVE"
	if $C ls | awk -v id="$id" '$1 == id && $2 == "running" { f = 1 } END { exit !f }' &&
	   [ "$($C exec "$id" -- echo still)" = still ]; then
		ok "after every refused command the sandbox still runs commands"
	else
		not_ok "after every refused command the sandbox still runs commands" "$($C ls)"
	fi
	out=$($C exec "$id" -- echo hi)
	[ "$out" = hi ] && ok "exec streams stdout" || not_ok "exec streams stdout" "got '$out'"
	out=$($C exec "$id" -- sh -c 'echo oops >&2' 2>&1 >/dev/null)
	[ "$out" = oops ] && ok "exec streams stderr" || not_ok "exec streams stderr" "got '$out'"
	expect "exec exits with the command's status" 3 $C exec "$id" -- sh -c 'exit 3'
	expect "exec exits 128+9 when SIGKILL ends the command" 137 \
		$C exec "$id" -- sh -c 'kill -9 $$'
	out=$(echo data | $C exec -i "$id" -- cat)
	[ "$out" = data ] && ok "exec -i forwards stdin" || not_ok "exec -i forwards stdin" "got '$out'"
	out=$($C exec --env FOO=bar "$id" -- sh -c 'echo $FOO')
	[ "$out" = bar ] && ok "exec --env" || not_ok "exec --env" "got '$out'"
	out=$($C exec --cwd /tmp "$id" -- pwd)
	[ "$out" = /tmp ] && ok "exec --cwd" || not_ok "exec --cwd" "got '$out'"
	out=$($C exec "$id" -- cat /root/marker)
	[ "$out" = built ] && ok "the template's --run result is in the sandbox" ||
		not_ok "the template's --run result is in the sandbox" "got '$out'"
	$C exec "$id" -- sh -c 'echo before-fork > /root/state'
	fid=$($C fork "$id" 2>/tmp/ktap.err)
	case "$fid" in
	[1-9]*)
		out=$($C exec "$fid" -- cat /root/state)
		[ "$out" = before-fork ] && ok "fork copies the running sandbox" ||
			not_ok "fork copies the running sandbox" "got '$out'"
		$C exec "$fid" -- sh -c 'echo child > /root/state'
		out=$($C exec "$id" -- cat /root/state)
		[ "$out" = before-fork ] && ok "the parent does not see the fork's writes" ||
			not_ok "the parent does not see the fork's writes" "got '$out'"
		$C kill "$fid" >/dev/null
		wait_until 30 gone "$fid"
		;;
	*)
		not_ok "fork copies the running sandbox" "got '$fid': $(cat /tmp/ktap.err)"
		not_ok "the parent does not see the fork's writes" "no fork"
		;;
	esac
	expect "fork of an unknown id exits 3" 3 $C fork 999999
	expect "exec -t runs a command on a pty" 0 $C exec -t "$id" -- true
	expect "exec of a missing program exits 125" 125 $C exec "$id" -- /no/such/program

	expect "cp uploads" 0 $C cp /tmp/cubectl-test/f "$id:/tmp/f"
	expect "cp downloads" 0 $C cp "$id:/tmp/f" /tmp/cubectl-test/g
	cmp -s /tmp/cubectl-test/f /tmp/cubectl-test/g && ok "cp round trip is exact" ||
		not_ok "cp round trip is exact" "files differ"
	expect "cp of a missing file exits 3" 3 $C cp "$id:/no/such" /tmp/cubectl-test/h
	[ ! -e /tmp/cubectl-test/h ] && ok "a failed cp leaves no file" ||
		not_ok "a failed cp leaves no file" "/tmp/cubectl-test/h exists"
	expect "cp needs an absolute sandbox path" 2 $C cp /tmp/cubectl-test/f "$id:rel"

	$C --json events --count 1 > /tmp/cubectl-test/events &
	ev_pid=$!
	# subscribed once it waits in poll(2): the kill comes after that
	if wait_until 30 in_poll "$ev_pid"; then
		ok "events subscribes and waits"
	else
		not_ok "events subscribes and waits" "$(cat /proc/$ev_pid/syscall 2>&1)"
	fi
	expect "kill" 0 $C kill "$id"
	if wait_until 30 gone "$id"; then
		ok "a killed sandbox goes away"
	else
		not_ok "a killed sandbox goes away" "$($C inspect "$id")"
	fi
	wait_until 10 test -s /tmp/cubectl-test/events
	kill "$ev_pid" 2>/dev/null
	wait "$ev_pid" 2>/dev/null
	if grep -q "\"id\": *$id\|\"id\":$id" /tmp/cubectl-test/events; then
		ok "events reports it"
	else
		not_ok "events reports it" "$(cat /tmp/cubectl-test/events)"
	fi
	[ ! -e "$CUBE_RUN_DIR/sandboxes/$id" ] && ok "its run directory is gone" ||
		not_ok "its run directory is gone" "$(ls "$CUBE_RUN_DIR/sandboxes/$id")"

	CUBE_VMM=/bin/false $C create --template t1 >/dev/null 2>/tmp/ktap.err
	st=$?
	if [ $st != 0 ] && wait_until 10 no_sandbox &&
	   [ -z "$(ls "$CUBE_RUN_DIR/sandboxes" 2>/dev/null)" ]; then
		ok "a failed create leaves nothing behind"
	else
		not_ok "a failed create leaves nothing behind" "status $st, $(sandbox_count) sandboxes"
	fi

	# Clones of one snapshot never share random state: three sandboxes
	# restored from it read three different streams, at once.
	rnd=
	rids=
	for i in 1 2 3; do
		rids="$rids $($C create --template t1 --vcpus 1)"
	done
	for id in $rids; do
		rnd="$rnd $($C exec "$id" -- python3 -c 'import os; print(os.urandom(16).hex())')"
	done
	nr=$(echo $rnd | tr ' ' '\n' | grep -c '^[0-9a-f]\{32\}$')
	nu=$(echo $rnd | tr ' ' '\n' | sort -u | grep -c '^[0-9a-f]\{32\}$')
	[ "$nr" = 3 ] && [ "$nu" = 3 ] &&
		ok "three clones of one snapshot read different random bytes" ||
		not_ok "three clones of one snapshot read different random bytes" "got:$rnd"
	expect "the three clones are killed" 0 $C kill $rids

	# Hostile workloads hurt only their own sandbox: a fork bomb and a
	# memory hog in one leave this machine and another sandbox working.
	ha=$($C create --template t1 --vcpus 1)
	hb=$($C create --template t1 --vcpus 1)
	$C exec --timeout 60 "$ha" -- sh -c 'echo bombing; b() { b | b & }; b; sleep 90' \
		>/tmp/cubectl-test/bomb 2>&1 &
	bomb=$!
	# the bomb has started once its first line is out
	if wait_until 60 grep -q bombing /tmp/cubectl-test/bomb; then
		ok "the fork bomb starts"
	else
		not_ok "the fork bomb starts" "$(head -c 300 /tmp/cubectl-test/bomb)"
	fi
	out=$($C exec --timeout 120 "$hb" -- echo fine)
	# still running when the other sandbox answered: it was "during"
	if [ "$out" = fine ] && kill -0 $bomb 2>/dev/null; then
		ok "another sandbox runs commands during a fork bomb"
	else
		not_ok "another sandbox runs commands during a fork bomb" \
			"got '$out'; bomb still running: $(kill -0 $bomb 2>/dev/null && echo yes || echo no)"
	fi
	wait $bomb
	# The bombed sandbox answers again only once its guest has torn down
	# the bomb's processes; nothing bounds their number per command yet,
	# and under emulation that teardown outlasted 180 s in two of three
	# runs (it costs only that sandbox: see the check above).  A known
	# limit, listed in selftests/qemu/skips.txt: waited for 60 s, then the
	# sandbox is ended and the memory hog gets a sandbox of its own.
	if answers "$ha" 60; then
		ok "the fork-bombed sandbox answers again"
	else
		skip "the fork-bombed sandbox answers again" \
			"known: a fork bomb's teardown outlasts 60 s (no per-command pids limit in the guest)"
	fi
	$C kill "$ha" >/dev/null 2>&1
	ha=$($C create --template t1 --vcpus 1)
	# the guest's OOM killer ends the hog (SIGKILL: 128 + 9); 125 would be
	# the VM or its agent gone
	$C exec --timeout 120 "$ha" -- python3 -c '
a = []
while True:
    a.append(bytearray(1 << 20))' >/dev/null 2>/tmp/cubectl-test/hog
	st=$?
	[ $st = 137 ] && ok "a memory hog in a sandbox is OOM-killed there (status 137)" ||
		not_ok "a memory hog in a sandbox is OOM-killed there (status 137)" \
			"status $st: $(head -c 300 /tmp/cubectl-test/hog)"
	if answers "$ha" 120; then
		ok "the sandbox of the memory hog runs commands after it"
	else
		not_ok "the sandbox of the memory hog runs commands after it" "no answer within 120 s"
	fi
	avail=$(awk '/^MemAvailable:/ { print int($2 / 1024) }' /proc/meminfo)
	[ "$avail" -gt 200 ] && ok "this machine keeps its memory (${avail} MiB available)" ||
		not_ok "this machine keeps its memory" "${avail} MiB available"
	out=$($C exec --timeout 120 "$hb" -- echo fine)
	[ "$out" = fine ] && ok "another sandbox runs commands after a memory hog" ||
		not_ok "another sandbox runs commands after a memory hog" "got '$out'"
	expect "the hostile sandboxes are killed" 0 $C kill "$ha" "$hb"

	# cubed keeps the pool filled; create takes from it
	expect "pool set" 0 $C pool set t1 --size 1
	./cubed --no-api -v 2>/tmp/cubectl-test/cubed.log &
	cubed_pid=$!
	if wait_until 180 pool_ready 1; then
		ok "cubed fills the pool"
	else
		not_ok "cubed fills the pool" "$($C pool ls; tail -n 5 /tmp/cubectl-test/cubed.log)"
	fi
	id2=$($C create --template t1)
	if $C --json pool ls | grep -q '"taken": *1'; then
		ok "create takes the warm sandbox"
	else
		not_ok "create takes the warm sandbox" "$($C pool ls)"
	fi
	out=$($C exec "$id2" -- echo pooled)
	[ "$out" = pooled ] && ok "a pooled sandbox runs commands" ||
		not_ok "a pooled sandbox runs commands" "got '$out'"
	if wait_until 180 pool_ready 1; then
		ok "cubed refills the pool after a take"
	else
		not_ok "cubed refills the pool after a take" "$($C pool ls)"
	fi
	id3=$($C create --template t1 --vcpus 1 --timeout 3)
	if [ -n "$id3" ] && wait_until 60 gone "$id3"; then
		ok "cubed kills a sandbox at its end time"
	else
		not_ok "cubed kills a sandbox at its end time" "id '$id3' still there"
	fi
	kill "$cubed_pid"
	wait "$cubed_pid"
	st=$?
	cubed_pid=
	[ $st = 0 ] && ok "cubed stops on SIGTERM with status 0" ||
		not_ok "cubed stops on SIGTERM with status 0" "status $st"
	# end times survive a restart of cubed: it rebuilds from the module
	id4=$($C create --template t1 --vcpus 1 --timeout 2)
	sleep 4
	if [ -n "$id4" ] && ! gone "$id4"; then
		ok "without cubed nothing ends a sandbox"
	else
		not_ok "without cubed nothing ends a sandbox" "id '$id4'"
	fi
	./cubed --no-api 2>>/tmp/cubectl-test/cubed.log &
	cubed_pid=$!
	if [ -n "$id4" ] && wait_until 60 gone "$id4"; then
		ok "a restarted cubed enforces an end time set while it was down"
	else
		not_ok "a restarted cubed enforces an end time set while it was down" "id '$id4' still there"
	fi
	kill "$cubed_pid"
	wait "$cubed_pid"
	cubed_pid=

	# Five running sandboxes survive a restart of cubed: its E2B API lists
	# all five before and after, and each still runs commands.
	echo cube-restart-key > /tmp/cubectl-test/keys
	five=
	for i in 1 2 3 4 5; do
		five="$five $($C create --template t1 --vcpus 1)"
	done
	start_api_cubed
	before=$(api_list)
	kill "$cubed_pid"
	wait "$cubed_pid"
	start_api_cubed
	after=$(api_list)
	listed=0 usable=0
	for id in $five; do
		echo "$before" | grep -qE "\"sandboxID\": *\"$id\"" &&
			echo "$after" | grep -qE "\"sandboxID\": *\"$id\"" &&
			listed=$((listed + 1))
		[ "$($C exec "$id" -- echo "alive-$id")" = "alive-$id" ] &&
			usable=$((usable + 1))
	done
	[ "$listed" = 5 ] && ok "5 sandboxes listed by the API before and after a cubed restart" ||
		not_ok "5 sandboxes listed by the API before and after a cubed restart" \
			"$listed of 5 ($five): before $before after $after"
	[ "$usable" = 5 ] && ok "5 sandboxes run commands after a cubed restart" ||
		not_ok "5 sandboxes run commands after a cubed restart" "$usable of 5"
	kill "$cubed_pid"
	wait "$cubed_pid"
	cubed_pid=
	# shellcheck disable=SC2086
	expect "the five are killed" 0 $C kill $five
	expect "template rm of a pooled template exits 7" 7 $C template rm t1
	# deleting the pool ends its warm (never taken) sandboxes, as
	# cubectl(8) says; id2, taken from it, goes on
	warm=$(pooled_ids t1)
	expect "pool set --size 0 removes the pool" 0 $C pool set t1 --size 0
	# shellcheck disable=SC2086
	if wait_until 60 all_gone $warm; then
		ok "pool set --size 0 ends the pool's warm sandboxes ($(echo $warm))"
	else
		not_ok "pool set --size 0 ends the pool's warm sandboxes ($(echo $warm))" "$($C ls)"
	fi
	expect "kill of the remaining sandbox" 0 $C kill "$id2"

	# Nothing left behind: every sandbox this test made was killed by it
	# or ended on its own; count what is left before anything is swept
	# (cleanup kills what remains, after the results).
	if wait_gone_all 60; then
		ok "no sandbox is left"
	else
		not_ok "no sandbox is left" "$($C ls)"
	fi
	if wait_until 30 no_vmm; then
		ok "no cube-vmm or cube-shim process is left"
	else
		not_ok "no cube-vmm or cube-shim process is left" \
			"$(for f in $(grep -l '^cube-\(vmm\|shim\)$' /proc/[0-9]*/comm 2>/dev/null); do
				d=${f%/comm}
				echo "${d#/proc/} $(awk '/^(State|PPid):/ { printf "%s ", $2 }' $d/status)$(cat $d/wchan 2>/dev/null) $(tr '\0' ' ' < $d/cmdline | cut -c1-120)"
			done | tr '\n' ';')"
	fi
	if wait_until 30 no_veth; then
		ok "no sandbox veth is left"
	else
		not_ok "no sandbox veth is left" "$(ip -o link show | awk -F': ' '{ print $2 }' | tr '\n' ' ')"
	fi
	left=$(ls "$CUBE_RUN_DIR/sandboxes" 2>/dev/null)
	[ -z "$left" ] && ok "no sandbox run directory is left" ||
		not_ok "no sandbox run directory is left" "$left"
	if ! $C pool ls | awk '$1 == "t1" { f = 1 } END { exit !f }'; then
		ok "no pool is left"
	else
		not_ok "no pool is left" "$($C pool ls)"
	fi
	expect "template rm" 0 $C template rm t1
	expect "template rm of an unknown template exits 3" 3 $C template rm t1
	# the state directory keeps the E2B id counter, the behaviour logs
	# (they outlive their sandboxes by design, bounded as a whole) and
	# empty folders only
	# (-mindepth is global in find: depth 2 is a path test instead)
	left=$(find "$CUBE_STATE_DIR" -mindepth 1 -path "$CUBE_STATE_DIR/audit" -prune -o \
		\( ! -type d ! -name e2b-last-id -print \) -o \
		\( -type d -path "$CUBE_STATE_DIR/*/*" -print \) 2>/dev/null)
	[ -z "$left" ] && ok "nothing is left in the state directory" ||
		not_ok "nothing is left in the state directory" "$(echo $left)"
}

ktap_plan "$PLAN"
run 2>&1
ktap_finish "$PLAN"
cleanup
rm -f /tmp/ktap.out /tmp/ktap.err /tmp/cubectl-snap.*
[ "$ktap_n" = "$PLAN" ] || echo "# cubectl_test.sh: $ktap_n results for a plan of $PLAN"
exit $ktap_failed
