# SPDX-License-Identifier: GPL-2.0
# ktap.sh: KTAP helpers for the shell tests of this group (sourced).
ktap_n=0
ktap_failed=0

ktap_plan() {
	echo "KTAP version 1"
	echo "1..$1"
}

# ktap_finish PLAN: the plan printed first is kept: each result a step
# that ended early never reached is reported as failed
ktap_finish() {
	while [ "$ktap_n" -lt "$1" ]; do
		not_ok "not run" "an earlier step failed, so this result was never reached"
	done
}

# ok NAME: the last check passed; not_ok NAME WHY: it failed
ok() {
	ktap_n=$((ktap_n + 1))
	echo "ok $ktap_n $1"
	progress "ok $ktap_n $1"
}

# skip NAME REASON: a result that neither passes nor fails; the harness
# fails the run unless selftests/qemu/skips.txt expects it
skip() {
	ktap_n=$((ktap_n + 1))
	echo "ok $ktap_n $1 # SKIP $2"
	progress "ok $ktap_n $1 # SKIP $2"
}

not_ok() {
	ktap_n=$((ktap_n + 1))
	echo "# $2"
	echo "not ok $ktap_n $1"
	progress "not ok $ktap_n $1: $2"
	ktap_failed=1
}

# progress MSG: to the kernel log (the harness's console.log), as results
# are printed only at the end
progress() {
	[ -w /dev/kmsg ] && echo "<3>${0##*/}: $1" | head -c 900 > /dev/kmsg
}

# expect NAME STATUS CMD...: CMD exits with STATUS
expect() {
	name=$1 want=$2
	shift 2
	"$@" >/tmp/ktap.out 2>/tmp/ktap.err
	got=$?
	if [ "$got" = "$want" ]; then
		ok "$name"
	else
		not_ok "$name" "'$*' exited $got, want $want: $(head -c 300 /tmp/ktap.err)"
	fi
}

# in_poll PID: PID is blocked in poll(2) or ppoll(2) (x86-64 numbers)
in_poll() {
	read -r nr _ < "/proc/$1/syscall" 2>/dev/null || return 1
	[ "$nr" = 7 ] || [ "$nr" = 271 ]
}

# wait_until SECONDS CMD...: poll CMD until it succeeds
wait_until() {
	t=$1
	shift
	while [ "$t" -gt 0 ]; do
		"$@" >/dev/null 2>&1 && return 0
		sleep 1
		t=$((t - 1))
	done
	return 1
}
