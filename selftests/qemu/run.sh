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
# One stall is not a hang of the tests: L1 losing an interrupt, which
# QEMU's TCG was seen to do.  Once no result line came for IRQ_STALL
# seconds (default 5), the harness reads L1's vCPU and local APIC through
# the QEMU monitor every few seconds, each time twice, a second apart.  If
# both times the vCPU has interrupts enabled (halted, or running: then it
# may be running a nested guest, whose exit the interrupt should force)
# while its local APIC holds a vector in IRR above its processor priority
# (PPR), an interrupt is due and deliverable and was not delivered: no
# code in L1 can leave a CPU so.  (An L1 spinning with interrupts off, a
# real lockup, shows IF clear and stays a stall.)  The first such dumps,
# 2026-12-07: the APIC timer expired, vector 236 pending in IRR, ISR
# empty, PPR 0x10, for minutes; twice with the vCPU halted, once with it
# busy in a fork bomb's nested guest that never exited.  The harness then
# presses a key through the monitor: the keyboard's interrupt makes QEMU
# look at the APIC again, and when that delivers the lost one (its vector
# leaves IRR, or a result line comes) the run goes on, the kick noted in
# DIR/kicks.  It is looked for early because every minute L1 sits on a
# lost timer interrupt is a minute its tests' timeouts, RCU's stall
# detector and the soft-lockup watchdog see pass at once when it comes:
# the first harness waited 120 s before it looked, and a CI run lost two
# interrupts, each kicked after 138 s, which failed a test's boot wait
# and so the run.  Now the watcher finds one in about ten seconds.  A
# kick may not deliver it at once: with the vCPU busy in a nested guest
# the interrupt waits for that guest's next exit (an E2B run's CPU-bound
# guest was seen to hold one past 37 s), so a kick that did not deliver
# is tried again.  After KICKS (default 20) kicks that delivered, it
# kicks no more.  A loss still there after IRQ_DUMP seconds (default
# 120) without a result line is dumped as the other stall (registers,
# the local APIC, an NMI backtrace), named for what it is
# (DIR/lost-interrupts), and is retryable below; so is a failed run that
# was kicked.  Only the first vCPU's APIC is read: the harness runs L1
# with one.  Since kicks were needed two to four times a run, the harness
# also presses a key every POKE_S seconds (default 2; 0: never) whatever
# L1 does, so that a lost interrupt waits at most that long (poke_loop
# below); the watcher stays for one that a key press does not deliver.
#
#   run.sh stuck-irq FILE   (the harness's own test) only says whether a
#   monitor dump (info registers -a, then info lapic) shows the lost
#   interrupt: exit 0, printing the pending vector, or 1.
#
# A failed run is made again, once, in two cases: L1 lost its interrupts,
# or L1's clock ran ahead of the host's by more than a minute during it
# (clockjump.sh: the host paused or starved QEMU, and every timeout in L1
# fired early) and it did not stall.  The report says which, the first
# run's files stay in DIR/first/, and the second run's verdict is the
# run's.  Never with FWD, where the host drives the tests (retryable
# below).
#
#   run.sh retryable DIR WALL   (the harness's own test) only says whether
#   a failed run that left its files in DIR and took WALL s would be made
#   again: exit 0, printing why, or 1.
#
# L1 has one vCPU unless SMP says otherwise: with two, multi-threaded TCG
# was seen to freeze L1 while KVM in it created a VM (one vCPU stuck on a
# kernel nop while holding its runqueue lock, the other spinning on that
# lock); one vCPU never did.
set -u
mode=$1 dir=$2 initrd=$3
here=$(cd "$(dirname "$0")" && pwd)

# retryable WALL: whether the failed run in $dir, of WALL s, is made once
# more; prints why when it is.
retryable() {
	# (Not with forwarded ports: there the host drives the tests, once.)
	[ -z "${FWD:-}" ] || return 1
	if [ -s "$dir/kicks" ] && [ ! -e "$dir/lost-interrupts" ]; then
		echo "L1 lost an interrupt and was kicked ($(wc -l < "$dir/kicks")" \
			"time(s), $dir/kicks), so its tests saw minutes pass at once"
		return 0
	fi
	if [ -e "$dir/lost-interrupts" ]; then
		echo "L1 lost an interrupt (halted with interrupts enabled and" \
			"vector $(cat "$dir/lost-interrupts") pending, deliverable," \
			"in its local APIC): a fault of the emulator, not of the tests"
		return 0
	fi
	j=$(sh "$here/clockjump.sh" "$dir/results.log" "$1") || return 1
	# One vCPU, every program bounded well below STALL: a stall is a
	# hang, and a clean second run would hide it, even when L1's clock
	# jumped too.
	if [ -e "$dir/stalled" ]; then
		echo "# vmtest: L1's clock ran $j s ahead of the host's, but L1" \
			"stalled: a stalled run is not made again" >&2
		return 1
	fi
	echo "L1's clock ran $j s ahead of the host's during this run (the" \
		"host paused or starved QEMU), so its timeouts fired early"
}
# stuck_irq: whether the monitor dump on stdin shows every vCPU with
# interrupts enabled and a deliverable vector pending in the local APIC;
# prints that vector.
stuck_irq() {
	tr -d '\r' | awk '
	function hex(s,   i, v, c) {
		sub(/^0x/, "", s)
		v = 0
		for (i = 1; i <= length(s); i++) {
			c = index("0123456789abcdef", tolower(substr(s, i, 1)))
			if (!c)
				return -1
			v = v * 16 + c - 1
		}
		return v
	}
	/^RIP=/ {
		n++
		rfl = $0; sub(/.*RFL=/, "", rfl); sub(/ .*/, "", rfl)
		# IF is bit 9 of RFLAGS
		if (int(hex(rfl) / 512) % 2 == 0)
			masked++
	}
	/^IRR[ \t]/ {
		for (i = 2; i <= NF; i++)
			if ($i ~ /^[0-9]+$/ && $i + 0 > irr)
				irr = $i + 0
	}
	/PPR 0x/ {
		ppr = $0; sub(/.*PPR /, "", ppr); sub(/ .*/, "", ppr)
		ppr = hex(ppr)
		seen_ppr = 1
	}
	END {
		# deliverable: its priority class above the processor priority
		if (n > 0 && !masked && seen_ppr && ppr >= 0 && irr > 0 &&
		    int(irr / 16) > int(ppr / 16)) {
			print irr
			exit 0
		}
		exit 1
	}'
}

if [ "$mode" = retryable ]; then
	retryable "$3"
	exit
fi
if [ "$mode" = stuck-irq ]; then
	stuck_irq < "$3"
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
	# QEMU listens on those ports with a backlog of 1: listen_backlog.so
	# (built by the Makefile beside the initramfs) gives them a real one.
	if [ ! -r "$dir/listen_backlog.so" ]; then
		echo "vmtest: $dir/listen_backlog.so is missing (make -C selftests/qemu builds it)" >&2
		exit 1
	fi
	preload="LD_PRELOAD=$dir/listen_backlog.so"
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
	env ${preload:-} qemu-system-x86_64 -machine q35,accel=tcg -cpu EPYC,+svm \
		-m "${MEM:-2048}" -smp "${SMP:-1}" -nographic -no-reboot \
		-kernel "$kernel" -initrd "$initrd" -append "$append" \
		$net "$@"
}

if [ "$mode" = shell ]; then
	qemu -serial mon:stdio -serial null
	exit $?
fi

con=$dir/console.log res=$dir/results.log mon=$dir/monitor
stall=${STALL:-720} irqstall=${IRQ_STALL:-5} maxkicks=${KICKS:-20}
irqdump=${IRQ_DUMP:-120}
poke=${POKE_S:-2}

# mon_send CMD: one command to QEMU's monitor.  The FIFO is opened read-
# write, which never waits: QEMU may have ended meanwhile, and an open for
# writing alone would then wait for a reader for ever (the run with it).
mon_send() {
	echo "$1" 1<> "$mon.in"
}

# monitor CMD: run CMD in the QEMU monitor; prints what it answered.
monitor() {
	off=$(stat -c %s "$dir/monitor.log" 2>/dev/null || echo 0)
	mon_send "$1"
	sleep 1
	tail -c +$((off + 1)) "$dir/monitor.log"
}

# results_size: bytes of results so far (L1 prints a line: they grow).
results_size() {
	stat -c %s "$res" 2>/dev/null || echo 0
}

# lost_irq: the vCPU and local APIC, read now, show a lost interrupt;
# prints its vector.
lost_irq() {
	{ monitor "info registers -a"; monitor "info lapic"; } | stuck_irq
}

# dump_and_end: read the vCPUs and the local APICs, send an NMI (L1's
# kernel prints every CPU's backtrace and panics), end QEMU.
dump_and_end() {
	monitor "info registers -a" > /dev/null
	monitor "info lapic" > /dev/null
	mon_send "nmi"
	i=0
	while [ ! -e "$dir/qemu.rc" ] && [ $i -lt 60 ]; do
		sleep 1
		i=$((i + 1))
	done
	[ -e "$dir/qemu.rc" ] || kill "$(cat "$dir/qemu.pid")" 2>/dev/null
}

# stall_watch: while QEMU runs, wait for the results file to stop growing
# for $stall seconds, then dump L1 and end QEMU.  Once it has not grown for
# $irqstall seconds, look for a lost interrupt every few seconds: when L1
# shows one twice a second apart, kick it (at most $maxkicks times); a
# kick that does not deliver it ends the run as a stall.
stall_watch() {
	last=-1 since=$(date +%s) kicks=0
	while [ ! -e "$dir/qemu.rc" ]; do
		sleep 3
		size=$(results_size) now=$(date +%s)
		if [ "$size" != "$last" ]; then
			last=$size since=$now
			continue
		fi
		idle=$((now - since))
		if [ "$irqstall" -gt 0 ] && [ "$idle" -ge "$irqstall" ] &&
			vec=$(lost_irq) && sleep 1 && vec2=$(lost_irq) &&
			[ "$vec" = "$vec2" ] &&
			[ "$(results_size)" = "$last" ]; then
			idle=$(($(date +%s) - since))
			if [ $kicks -lt "$maxkicks" ]; then
				mon_send "sendkey shift"
				sleep 1
				if ! lost_irq > /dev/null ||
					[ "$(results_size)" != "$last" ]; then
					kicks=$((kicks + 1))
					echo "$(date +%T) vector $vec, $idle s without a result line" >> "$dir/kicks"
					continue
				fi
			fi
			# A busy nested guest may hold it until its next exit:
			# only a loss that lasts is a stall.
			[ "$idle" -ge "$irqdump" ] || continue
			echo "$idle" > "$dir/stalled"
			echo "$vec" > "$dir/lost-interrupts"
			dump_and_end
			return
		fi
		[ "$idle" -ge "$stall" ] || continue
		echo "$idle" > "$dir/stalled"
		dump_and_end
		return
	done
}

# poke_loop: while QEMU runs, press a key in L1 every $poke seconds.  The
# keyboard's interrupt makes QEMU look at L1's local APIC again, which
# delivers a timer interrupt it lost (see the top of this file) within
# $poke seconds, where the watcher above needs about ten to see one: the
# kicks a full run needed show it was not rare (two to four a run, each
# a jump of L1's clock that some tests' timeouts and the kernel's own
# grace periods saw; two such runs in a row failed a CI run).  L1 does
# nothing with the key (a shift, pressed and released).
poke_loop() {
	while [ ! -e "$dir/qemu.rc" ]; do
		sleep "$poke"
		mon_send "sendkey shift"
	done
}

# run_l1: one L1 run; its results stream to stdout, the console to a file.
run_l1() {
	: > "$con"
	: > "$res"
	rm -f "$dir/qemu.rc" "$dir/stalled" "$dir/lost-interrupts" "$dir/kicks" "$dir/qemu.pid" \
		"$mon.in" "$mon.out"
	mkfifo "$mon.in" "$mon.out"
	cat "$mon.out" > "$dir/monitor.log" &
	monpid=$!
	if [ "$stall" -gt 0 ]; then
		stall_watch &
		watchpid=$!
	fi
	if [ "$poke" -gt 0 ]; then
		poke_loop &
		pokepid=$!
	fi
	{
		timeout --foreground -k 10 "$timeout" \
			env ${preload:-} qemu-system-x86_64 -machine q35,accel=tcg -cpu EPYC,+svm \
			-m "${MEM:-2048}" -smp "${SMP:-1}" -display none -no-reboot \
			-monitor "pipe:$mon" -pidfile "$dir/qemu.pid" \
			-kernel "$kernel" -initrd "$initrd" \
			-append "$append" $net -serial "file:$con" \
			-chardev stdio,id=res,signal=off -serial chardev:res \
			< /dev/null 2> "$dir/qemu.err"
		echo $? > "$dir/qemu.rc"
	} | tee "$res" | grep -v '^CUBE-VMTEST-END'
	[ -n "${watchpid:-}" ] && wait "$watchpid"
	[ -n "${pokepid:-}" ] && wait "$pokepid"
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
why=$(retryable "$wall") || exit $rc
echo "# vmtest: $why: the run is made once more, and that run's verdict" \
	"is the run's; the first run's files are in $dir/first/"
rm -rf "$dir/first"
mkdir -p "$dir/first"
for f in console.log results.log results.txt monitor.log qemu.err qemu.rc \
	stalled lost-interrupts kicks; do
	[ -e "$dir/$f" ] && mv "$dir/$f" "$dir/first/"
done
judged_run
