#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# run.sh MODE DIR INITRD: boot the L1 test machine under QEMU and report.
#   MODE   test or shell
#   DIR    working folder (console.log and results.log are written here)
# Environment: VM_KVER, VM_KERNEL (L1's image, default
# /boot/vmlinuz-$VM_KVER), T (filter), FWD ("HOSTPORT:GUESTPORT,..." forwarded
# from 127.0.0.1 into L1), TIMEOUT (seconds, default 1800), MEM (MiB,
# default 2048), SMP (default 1; see below), V=1 (show the console as it
# runs), L1_APPEND (more words for L1's kernel command line), STALL
# (seconds without a result line before L1 counts as stalled, default 720,
# above run_tests.sh's 600 s bound on one program; 0: never).
#
# In test mode prints L1's KTAP results, then the summary line
# "N passed, N failed[, N skipped]", and exits 0 only when nothing failed:
# verdict.sh judges the run (the tests, run_tests.sh's exit status, the
# post-checks on the module and the kernel log, L1's end within the
# timeout, and that every skip is one skips.txt expects).
#
# A stalled L1 (no result line for STALL seconds, while every test case
# is bounded well below that) has its vCPU registers read through the
# QEMU monitor and is sent an NMI, so that its kernel prints every CPU's
# backtrace before it stops; the run fails.  It is not made again: with
# one vCPU a stall is a hang, and a clean second run would hide it.
#
# One failure is made again, once: a failed run during which L1's clock
# ran ahead of the host's by more than a minute (clockjump.sh: the host
# paused or starved QEMU, and every timeout in L1 fired early).  The report
# says so, the first run's files stay in DIR/first/, and the second run's
# verdict is the run's.  Not with FWD, where the host drives the tests, and
# never a stalled run, whatever its clock did (retryable below).
#
#   run.sh retryable DIR WALL   (the harness's own test) only says whether
#   a failed run that left its files in DIR and took WALL s would be made
#   again: exit 0, printing by how many seconds L1's clock ran ahead, or 1.
#
# L1 has one vCPU unless SMP says otherwise: with two, multi-threaded TCG
# was seen to freeze L1 while KVM in it created a VM (one vCPU stuck on a
# kernel nop while holding its runqueue lock, the other spinning on that
# lock); one vCPU never did.
set -u
mode=$1 dir=$2 initrd=$3
here=$(cd "$(dirname "$0")" && pwd)

# retryable WALL: whether the failed run in $dir, of WALL s, is made once
# more; prints the clock's jump when it is.
retryable() {
	# (Not with forwarded ports: there the host drives the tests, once.)
	[ -z "${FWD:-}" ] || return 1
	j=$(sh "$here/clockjump.sh" "$dir/results.log" "$1") || return 1
	# One vCPU, every program bounded well below STALL: a stall is a
	# hang, and a clean second run would hide it, even when L1's clock
	# jumped too.
	if [ -e "$dir/stalled" ]; then
		echo "# vmtest: L1's clock ran $j s ahead of the host's, but L1" \
			"stalled: a stalled run is not made again" >&2
		return 1
	fi
	echo "$j"
}
if [ "$mode" = retryable ]; then
	retryable "$3"
	exit
fi
kernel=${VM_KERNEL:-/boot/vmlinuz-$VM_KVER}
[ -r "$kernel" ] || { echo "vmtest: no $kernel (install linux-image-cloud-amd64)" >&2; exit 2; }

timeout=${TIMEOUT:-1800}
# watchdog_thresh=60: under emulation L1 time jumps when the host is busy;
# a real lockup still ends the run at TIMEOUT.
append="console=ttyS0 panic=-1 oops=panic loglevel=4 quiet watchdog_thresh=60"
# An NMI from the host (a stalled run) panics L1 with all CPUs' backtraces.
append="$append unknown_nmi_panic panic_print=0x40 cube.mode=$mode"
# The kernel log is checked from the start of the run to its end: a ring
# buffer large enough to hold all of it (a smaller one fails the check).
append="$append log_buf_len=16M"
[ -n "${T:-}" ] && append="$append cube.filter=$T"
# Settings for one test or benchmark (e.g. cube.pool=4), read by it from
# /proc/cmdline.
[ -n "${L1_APPEND:-}" ] && append="$append $L1_APPEND"

net="-nic none"
if [ -n "${FWD:-}" ]; then
	fwd=
	for pair in $(echo "$FWD" | tr ',' ' '); do
		fwd="$fwd,hostfwd=tcp:127.0.0.1:${pair%%:*}-:${pair#*:}"
	done
	net="-netdev user,id=n0,restrict=on$fwd -device virtio-net-pci,netdev=n0,romfile="
	append="$append cube.net=1"
fi

# Disks the tests asked for (selftests' TEST_DISKS), read-only, in order.
disks=
if [ -r "$dir/selftests/disks.txt" ]; then
	i=0
	while read -r img; do
		[ -n "$img" ] || continue
		disks="$disks -drive file=$img,if=virtio,format=raw,readonly=on,id=d$i"
		i=$((i + 1))
	done < "$dir/selftests/disks.txt"
fi
net="$net$disks"

# oops=panic + panic=-1 + -no-reboot: any oops ends the run at once, and
# the missing end marker fails it.  KVM inside L1 needs emulated SVM.
qemu() {
	qemu-system-x86_64 -machine q35,accel=tcg -cpu EPYC,+svm \
		-m "${MEM:-2048}" -smp "${SMP:-1}" -nographic -no-reboot \
		-kernel "$kernel" -initrd "$initrd" -append "$append" \
		$net "$@"
}

if [ "$mode" = shell ]; then
	qemu -serial mon:stdio -serial null
	exit $?
fi

con=$dir/console.log res=$dir/results.log mon=$dir/monitor
stall=${STALL:-720}

# stall_watch: while QEMU runs, wait for the results file to stop growing
# for $stall seconds; then read the vCPUs, send an NMI and end QEMU.
stall_watch() {
	last=-1 idle=0
	while [ ! -e "$dir/qemu.rc" ]; do
		sleep 5
		size=$(stat -c %s "$res" 2>/dev/null || echo 0)
		if [ "$size" != "$last" ]; then
			last=$size idle=0
			continue
		fi
		idle=$((idle + 5))
		[ "$idle" -ge "$stall" ] || continue
		echo "$idle" > "$dir/stalled"
		echo "info registers -a" > "$mon.in"
		sleep 3
		echo "nmi" > "$mon.in"
		i=0
		while [ ! -e "$dir/qemu.rc" ] && [ $i -lt 60 ]; do
			sleep 1
			i=$((i + 1))
		done
		[ -e "$dir/qemu.rc" ] || kill "$(cat "$dir/qemu.pid")" 2>/dev/null
		return
	done
}

# run_l1: one L1 run; its results stream to stdout, the console to a file.
run_l1() {
	: > "$con"
	: > "$res"
	rm -f "$dir/qemu.rc" "$dir/stalled" "$dir/qemu.pid" "$mon.in" "$mon.out"
	mkfifo "$mon.in" "$mon.out"
	cat "$mon.out" > "$dir/monitor.log" &
	monpid=$!
	if [ "$stall" -gt 0 ]; then
		stall_watch &
		watchpid=$!
	fi
	{
		timeout --foreground -k 10 "$timeout" \
			qemu-system-x86_64 -machine q35,accel=tcg -cpu EPYC,+svm \
			-m "${MEM:-2048}" -smp "${SMP:-1}" -display none -no-reboot \
			-monitor "pipe:$mon" -pidfile "$dir/qemu.pid" \
			-kernel "$kernel" -initrd "$initrd" \
			-append "$append" $net -serial "file:$con" \
			-chardev stdio,id=res,signal=off -serial chardev:res \
			< /dev/null 2> "$dir/qemu.err"
		echo $? > "$dir/qemu.rc"
	} | tee "$res" | grep -v '^CUBE-VMTEST-END'
	[ -n "${watchpid:-}" ] && wait "$watchpid"
	kill "$monpid" 2>/dev/null
	wait "$monpid" 2>/dev/null
	rm -f "$mon.in" "$mon.out"
	# QEMU's notices about CPU features TCG lacks are expected; anything
	# else it said is worth showing.
	grep -v "TCG doesn't support requested feature" "$dir/qemu.err" >&2
}

# judged_run: one L1 run and its verdict; $wall is its length.
judged_run() {
	start=$(date +%s)
	if [ "${V:-0}" = 1 ]; then
		tail -n +1 -f "$con" &
		tailpid=$!
	fi
	run_l1
	[ -n "${tailpid:-}" ] && kill "$tailpid" 2>/dev/null
	wall=$(( $(date +%s) - start ))
	echo "# vmtest: L1 run took $wall s"
	TIMEOUT=$timeout sh "$here/verdict.sh" "$dir"
}

echo "# vmtest: L1 command line: $append"
judged_run && exit 0
rc=$?
jump=$(retryable "$wall") || exit $rc
echo "# vmtest: L1's clock ran $jump s ahead of the host's during this run" \
	"(the host paused or starved QEMU), so its timeouts fired early:" \
	"the run is made once more, and that run's verdict is the run's;" \
	"the first run's files are in $dir/first/"
rm -rf "$dir/first"
mkdir -p "$dir/first"
for f in console.log results.log results.txt monitor.log qemu.err qemu.rc; do
	[ -e "$dir/$f" ] && mv "$dir/$f" "$dir/first/"
done
judged_run
