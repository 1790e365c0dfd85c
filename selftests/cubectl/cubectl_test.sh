#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# cubectl_test.sh: cubectl and cubed against real sandboxes.  Builds a
# template from the guest images, creates sandboxes from it (directly and
# from a pool cubed keeps filled), runs commands, copies files, watches
# events, checks every error's exit code, and leaves no sandbox, pool,
# template or file behind.  Needs cube.ko, /dev/kvm, the guest rootfs disk.
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
	expect "unknown command exits 2" 2 $C nope
	expect "bad --vcpus exits 2" 2 $C create --vcpus 99
	expect "bad --memory exits 2" 2 $C create --memory 12x
	expect "bad --timeout exits 2" 2 $C create --timeout 0
	expect "bad --net exits 2" 2 $C create --net open
	expect "bad --label exits 2" 2 $C create --label novalue
	expect "bad sandbox id exits 2" 2 $C kill x1
	expect "exec without a command exits 2" 2 $C exec 1 --
	expect "unknown template exits 3" 3 $C create --template missing
	expect "inspect of an unknown id exits 3" 3 $C inspect 999999
	expect "kill of an unknown id exits 3" 3 $C kill 999999
	expect "exec in an unknown id exits 125" 125 $C exec 999999 -- true
	expect "pool set of an unknown template exits 3" 3 $C pool set missing --size 1
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
	if $C --json inspect "$id" | grep -q '"team": *"qa"'; then
		ok "inspect --json shows its label"
	else
		not_ok "inspect --json shows its label" "$($C --json inspect "$id")"
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
		;;
	esac
	expect "fork of an unknown id exits 3" 3 $C fork 999999
	expect "exec -t runs a command on a pty" 0 $C exec -t "$id" -- true
	expect "exec of a missing program exits 125" 125 $C exec "$id" -- /no/such/program

	printf 'abc\001\n' > /tmp/cubectl-test/f
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
	sleep 1
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
	$C kill $rids >/dev/null 2>&1

	# Hostile workloads hurt only their own sandbox: a fork bomb and a
	# memory hog in one leave this machine and another sandbox working.
	ha=$($C create --template t1 --vcpus 1)
	hb=$($C create --template t1 --vcpus 1)
	$C exec --timeout 20 "$ha" -- sh -c 'b() { b | b & }; b; sleep 30' \
		>/dev/null 2>&1 &
	bomb=$!
	sleep 5
	out=$($C exec --timeout 120 "$hb" -- echo fine)
	[ "$out" = fine ] && ok "another sandbox runs commands during a fork bomb" ||
		not_ok "another sandbox runs commands during a fork bomb" "got '$out'"
	wait $bomb
	$C exec --timeout 120 "$ha" -- python3 -c '
a = []
while True:
    a.append(bytearray(1 << 20))' >/dev/null 2>&1
	st=$?
	[ $st != 0 ] && ok "a memory hog in a sandbox fails there (status $st)" ||
		not_ok "a memory hog in a sandbox fails there" "status 0"
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
	for id in $five; do
		$C kill "$id" >/dev/null 2>&1
	done
	expect "template rm of a pooled template exits 7" 7 $C template rm t1
	expect "pool set --size 0 removes the pool" 0 $C pool set t1 --size 0
	expect "kill of the remaining sandbox" 0 $C kill "$id2"
	for i in $($C --json ls | sed -n 's/.*"id": *\([0-9]*\).*/\1/p'); do
		$C kill "$i" >/dev/null 2>&1
	done
	if wait_gone_all 60; then
		ok "no sandbox is left"
	else
		not_ok "no sandbox is left" "$($C ls)"
	fi
	expect "template rm" 0 $C template rm t1
	expect "template rm of an unknown template exits 3" 3 $C template rm t1
}

run > /tmp/cubectl-results 2>&1
cleanup
ktap_plan "$ktap_n"
cat /tmp/cubectl-results
rm -f /tmp/cubectl-results /tmp/ktap.out /tmp/ktap.err
exit $ktap_failed
