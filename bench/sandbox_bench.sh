#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# sandbox_bench.sh [DIR]: what a sandbox costs through cubectl.  Builds a
# template from the guest images in DIR (the layout of `make demo-install`:
# cubectl, cube-shim, cube-vmm, initramfs.cpio.gz, rootfs.ext4 or the test
# machine's rootfs disk; default ../demo beside this script), reports how
# long the build took (boot, agent ready, snapshot), then runs sandbox_bench:
#
#   * latency: create to ready and the first command, at each concurrency
#     of $BENCH_CONCURRENCY (default "1 50"), $BENCH_SAMPLES runs each
#     (default 50) but at least $BENCH_ROUNDS batches (default 4: 200 runs
#     at concurrency 50), no batch started after a level has run
#     $BENCH_LEVEL_S seconds (default 150; the figure says how many runs),
#     without a pool, then (BENCH_POOL=1, the default) from a warm pool as
#     large as the largest concurrency, kept full by cubed; per restore,
#     the VM exits, the VMM's page faults and its clone's (faults, copies);
#   * memory: $BENCH_MEM_N (default "1 10 50") idle sandboxes at once, per
#     sandbox: host memory, cgroup, guest private pages, VMM overhead;
#   * what an idle guest does: one sandbox idles $BENCH_PROBE_S seconds
#     (default 20; 0 leaves this out) untraced, and the guest pages it made
#     its own meanwhile are counted, with its memory as its kernel sees it
#     (huge pages, page cache, slab); then as long again while the guest
#     kernel traces its timers, work items and interrupts; the most
#     frequent are listed, with their rate (the wakeups that cost VM exits
#     while nothing runs), with the guest's timer device and APIC mode, and
#     meanwhile this kernel's trace of the same VM: its exits by reason and
#     the APIC registers and MSRs written;
#   * density: idle sandboxes made until they use $BENCH_DENSITY_MIB
#     (default 512; 0 leaves this out) of host memory, at most
#     $BENCH_DENSITY_MAX (default 200), once onto /dev/cube clones and once
#     with cube-vmm --no-cube (the memory file mapped MAP_PRIVATE), and
#     the ratio of the two; past the budget, each waits up to
#     $BENCH_SETTLE_S (default 30) seconds for its sandboxes to settle
#     (give pages back, cube-vmm --trim-every) before it stops.
#
# BENCH_APPEND adds to the template's guest kernel command line (say
# init_on_free=1, to see what the guest's zeroed free pages give back to a
# trim).  BENCH_CGROUP=0 leaves out the memory.current of a cgroup holding the
# shims and VMMs (on by default).  In the VM harness, where the environment
# does not reach, the kernel command line gives the same settings:
# cube.bench_samples=10 cube.bench_concurrency=1,10 and so on (commas for
# spaces), through L1_APPEND.
#
# The whole run stops itself after $BENCH_DEADLINE seconds (default 1320),
# below the harness's bound on the bench group.  Whatever way it ends
# (done, failed, SIGTERM/SIGINT/SIGHUP) it leaves nothing: no sandbox, VMM,
# namespace, cgroup, template or state file, and so no reference to cube.ko.
# Needs root, /dev/kvm and cube.ko.  A measurement, not a test.
set -u
here=$(cd "$(dirname "$0")" && pwd)
dir=$(cd "${1:-$here/../demo}" && pwd)
work=/tmp/cube-bench.$$
export CUBE_STATE_DIR=$work/state CUBE_RUN_DIR=$work/run
export CUBE_VMM=$dir/cube-vmm CUBE_SHIM=$dir/cube-shim
C=$dir/cubectl
T=bench
. "$here/cmdline_env.sh"
start=$(cut -d' ' -f1 /proc/uptime)
deadline=${BENCH_DEADLINE:-1320}

child=
beat=
cubed=
# BENCH_HEARTBEAT=S: a line with L1's uptime every S seconds, to tell a
# machine whose time stopped from a benchmark that waits
if [ "${BENCH_HEARTBEAT:-0}" -gt 0 ]; then
	while :; do
		sleep "$BENCH_HEARTBEAT"
		echo "# alive: uptime $(cut -d' ' -f1 /proc/uptime) s, $(ls /proc | grep -c '^[0-9]') processes"
		# where each of the benchmark's processes waits
		for p in /proc/[0-9]*; do
			c=$( (tr '\0' ' ' < "$p/cmdline") 2>/dev/null | cut -c 1-100)
			case $c in
			*cubectl*|*cube-shim*|*cube-vmm*|*cubed*|*sandbox_bench\ *)
				echo "#   ${p#/proc/} $(cat "$p/wchan" 2>/dev/null) $c" ;;
			esac
		done
	done &
	beat=$!
fi
# run CMD...: in the background, waited for, so that a signal reaches the
# trap at once instead of after CMD ends
run() {
	"$@" &
	child=$!
	wait "$child"
	st=$?
	child=
	return $st
}
# private_count ID: how many guest pages sandbox ID holds as its own (the
# module's count; bench/private_pages says which)
private_count() {
	$C --json inspect "$1" 2>/dev/null |
		sed -n 's/.*"private_pages": *\([0-9]*\).*/\1/p' | head -n 1
}
# vmm_pid ID: the process that runs sandbox ID's VM (the shim's child at
# the bottom: the VMM runs the VM in a child of its own)
vmm_pid() {
	local p c d=0

	p=$($C --json inspect "$1" 2>/dev/null | sed -n 's/.*"owner_pid": *\([0-9]*\).*/\1/p' | head -n 1)
	while [ -n "$p" ] && [ $d -lt 3 ]; do
		c=$(awk '{ print $1 }' "/proc/$p/task/$p/children" 2>/dev/null)
		[ -n "$c" ] || break
		p=$c d=$((d + 1))
	done
	[ $d -gt 0 ] && echo "$p"
}
# classify_private ID [ID2]: what the guest pages sandbox ID holds as its
# own are, as its kernel's /proc/kpageflags and kpagecount tell (read in
# the guest, which makes a few more its own meanwhile), and what they hold:
# zeros, the snapshot's bytes, the same bytes as sibling ID2's
classify_private() {
	local vmm vmm2= sid ranges why

	vmm=$(vmm_pid "$1")
	[ -z "${2:-}" ] || vmm2=$(vmm_pid "$2")
	sid=$(awk '{ print $1; exit }' "$CUBE_STATE_DIR/templates/$T/snapshot/cube-snapshot-id" 2>/dev/null)
	if [ -z "$vmm" ] || [ -z "$sid" ] ||
	   ! ranges=$("$here/private_pages" "$vmm" "$sid" $vmm2 2>"$work/private.err"); then
		why="the private pages could not be listed: $(tail -n 1 "$work/private.err" 2>/dev/null | tr -d '"')"
		echo "bench: missing=private_kinds reason=\"$why\""
		echo "bench: missing=private_contents reason=\"$why\""
		return
	fi
	awk '$1 == "contents" {
		$1 = ""
		for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		printf "# idle guest: of its %d private pages, %d hold zeros and %d the snapshot'"'"'s bytes", v["private"], v["zero"], v["as_snapshot"]
		if ("same_in_both" in v)
			printf "; of the %d a sibling that ran the same holds too, %d hold the same bytes in both", v["private_in_both"], v["same_in_both"]
		printf "\nbench: figure=private_contents%s\n", $0
		f = 1
	} END { exit !f }' "$work/private.err" ||
		echo "bench: missing=private_contents reason=\"private_pages printed no contents line\""
	$C exec "$1" -- python3 -c '
import struct, sys
pages = []
for r in sys.argv[1].split(","):
    if r:
        a, _, b = r.partition("-")
        pages.extend(range(int(a), int(b or a) + 1))
bit = lambda f, n: f >> n & 1
kinds = {}
with open("/proc/kpageflags", "rb") as fl, open("/proc/kpagecount", "rb") as fc:
    for p in pages:
        fl.seek(p * 8); f, = struct.unpack("Q", fl.read(8))
        fc.seek(p * 8); c, = struct.unpack("Q", fc.read(8))
        if bit(f, 7): k = "slab"
        elif bit(f, 10): k = "free"
        elif bit(f, 26): k = "page_tables"
        elif bit(f, 12): k = "anon"
        elif bit(f, 5) or bit(f, 11): k = "page_cache"
        elif bit(f, 32): k = "reserved"
        elif bit(f, 16): k = "compound_tail"
        elif c == 0: k = "free"
        else: k = "other_kernel"
        kinds[k] = kinds.get(k, 0) + 1
print(len(pages), " ".join("%s=%d" % kv for kv in sorted(kinds.items())))
' "$ranges" > "$work/private-kinds" 2>&1
	awk 'NR == 1 && NF >= 2 && $1 ~ /^[0-9]+$/ {
		n = $1; $1 = ""
		printf "# idle guest: its %d private pages, as its kernel sees them:%s\n", n, $0
		printf "bench: figure=private_kinds pages=%d%s\n", n, $0
		f = 1
	} END { exit !f }' "$work/private-kinds" ||
		echo "bench: missing=private_kinds reason=\"the guest could not read its page flags: $(tail -n 1 "$work/private-kinds" | tr -d '"')\""
}
cleanup() {
	trap - EXIT INT TERM HUP
	[ -n "$beat" ] && kill "$beat" 2>/dev/null
	if [ -n "$child" ]; then
		kill "$child" 2>/dev/null
		wait "$child" 2>/dev/null
	fi
	# the pool first, so that cubed does not refill what is killed below
	$C pool set $T --size 0 >/dev/null 2>&1
	if [ -n "$cubed" ]; then
		kill "$cubed" 2>/dev/null
		wait "$cubed" 2>/dev/null
	fi
	# anything of the template left (sandbox_bench kills its own; this
	# catches a sandbox_bench that was killed outright)
	i=0
	while [ $i -lt 30 ]; do
		ids=$($C ls 2>/dev/null | awk -v t=$T 'NR > 1 && $3 == t { print $1 }')
		[ -n "$ids" ] || break
		$C kill $ids >/dev/null 2>&1
		sleep 1
		i=$((i + 1))
	done
	$C template rm $T >/dev/null 2>&1
	# the host's KVM trace of the idle probe, if it was on
	if [ -n "${ht:-}" ] && [ -d "$ht/events/kvm" ]; then
		for e in kvm_exit kvm_apic kvm_msr kvm_mmio kvm_pio; do
			echo 0 > "$ht/events/kvm/$e/enable" 2>/dev/null
		done
		echo > "$ht/set_event_pid" 2>/dev/null
	fi
	for g in /sys/fs/cgroup/cube-bench.*; do
		[ -d "$g" ] && rmdir "$g" 2>/dev/null
	done
	rm -rf "$work"
}
trap cleanup EXIT
trap 'echo "# sandbox_bench.sh: stopped by SIGTERM"; exit 143' TERM
trap 'echo "# sandbox_bench.sh: stopped by SIGINT"; exit 130' INT
trap 'echo "# sandbox_bench.sh: stopped by SIGHUP"; exit 129' HUP
mkdir -p "$CUBE_STATE_DIR" "$CUBE_RUN_DIR"

# seconds left before the deadline
left() {
	awk -v s="$start" -v d="$deadline" '{ l = int(s + d - $1); print (l > 0 ? l : 0) }' /proc/uptime
}

# the kernel whose modules the initramfs carries: make benchmarks names it
kernel=${CUBE_KERNEL:-/boot/vmlinuz}
rootfs=$dir/rootfs.ext4
[ -e "$rootfs" ] || rootfs=$(ls /dev/disk/cube/rootfs-*.ext4 2>/dev/null | head -n 1)
if [ -b "$rootfs" ]; then
	run cp "$rootfs" "$work/rootfs.ext4" || exit 1
	rootfs=$work/rootfs.ext4
fi

t0=$(cut -d' ' -f1 /proc/uptime)
run $C template build $T --kernel "$kernel" --initrd "$dir/initramfs.cpio.gz" \
	--rootfs "$rootfs" --append "cube.rootfstype=ext4${BENCH_APPEND:+ $BENCH_APPEND}" \
	--memory 256 >/dev/null || {
	echo "# sandbox_bench: template build failed"
	exit 1
}
t1=$(cut -d' ' -f1 /proc/uptime)
echo "# template build (boot to agent ready, then snapshot): $(echo "$t0 $t1" | awk '{ printf "%.2f", $2 - $1 }') s"
echo "bench: figure=template_build seconds=$(echo "$t0 $t1" | awk '{ printf "%.2f", $2 - $1 }')"

args="-r ${BENCH_ROUNDS:-4} -L ${BENCH_LEVEL_S:-150}"
for c in ${BENCH_CONCURRENCY:-1 50}; do
	args="$args -c $c"
done
for n in ${BENCH_MEM_N:-1 10 50}; do
	args="$args -m $n"
done
rc=0
[ "${BENCH_CGROUP:-1}" = 1 ] && args="$args -g"
run "$here/sandbox_bench" -t $T -C "$C" -n "${BENCH_SAMPLES:-50}" -T "$(left)" $args || rc=1

# latency from a warm pool: cubed keeps it at the largest concurrency
if [ "${BENCH_POOL:-1}" = 1 ]; then
	size=0 pargs=
	for c in ${BENCH_CONCURRENCY:-1 50}; do
		[ "$c" -gt "$size" ] && size=$c
		pargs="$pargs -c $c"
	done
	pargs="$pargs -r ${BENCH_ROUNDS:-4} -L ${BENCH_LEVEL_S:-150}"
	"$dir/cubed" --no-api > "$work/cubed.log" 2>&1 &
	cubed=$!
	if $C pool set $T --size "$size" >/dev/null; then
		run "$here/sandbox_bench" -t $T -C "$C" -P -n "${BENCH_SAMPLES:-50}" \
			-T "$(left)" $pargs || rc=1
	else
		echo "# sandbox_bench: cannot set a pool of $size for $T"
		rc=1
	fi
	$C pool set $T --size 0 >/dev/null 2>&1
	kill "$cubed" 2>/dev/null
	wait "$cubed" 2>/dev/null
	cubed=
	sed 's/^/# cubed: /' "$work/cubed.log" | tail -n 5
else
	echo 'bench: missing=latency_cubectl:pool=1 reason="BENCH_POOL=0"'
fi

# what an idle guest still does: its kernel's trace of timers that fired,
# work items run and interrupts taken while one sandbox idles
probe_s=${BENCH_PROBE_S:-20}
if [ "$probe_s" -gt 0 ] && id=$($C create --template $T 2>/dev/null); then
	# the guest's timer device, clock source and CPU flags: what its kernel
	# programs its timer through (lapic-deadline: an MSR write; lapic: the
	# APIC's initial count, an MSR in x2APIC mode, MMIO in xAPIC mode)
	timer_info='
echo "clockevent $(cat /sys/devices/system/clockevents/clockevent0/current_device)"
echo "clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
while read -r l; do case $l in flags*) echo "$l"; break ;; esac; done < /proc/cpuinfo'
	$C exec "$id" -- true >/dev/null 2>&1
	$C exec "$id" -- sh -c "$timer_info" > "$work/guest-timer" 2>/dev/null
	# a sibling that ran the same: which of their own pages the two share
	if id2=$($C create --template $T 2>/dev/null); then
		$C exec "$id2" -- true >/dev/null 2>&1
		$C exec "$id2" -- sh -c "$timer_info" >/dev/null 2>&1
	fi
	awk '$1 == "clockevent" { ce = $2 } $1 == "clocksource" { cs = $2 } $1 == "flags" {
		for (i = 1; i <= NF; i++) { if ($i == "x2apic") x2 = 1; if ($i == "tsc_deadline_timer") dl = 1 }
		f = 1
	} END {
		if (!f) exit
		if (ce == "") ce = "unknown"
		if (cs == "") cs = "unknown"
		printf "# idle guest: timer %s, clock source %s, x2APIC %s, TSC deadline %s\n", ce, cs, x2 ? "yes" : "no", dl ? "yes" : "no"
		printf "bench: figure=guest_timer clockevent=%s clocksource=%s x2apic=%d tsc_deadline=%d\n", ce, cs, x2, dl
	}' "$work/guest-timer"
	# what the idle guest makes its own while nothing runs and nothing
	# traces it (tracing fills a ring buffer in the guest)
	priv0=$(private_count "$id")
	sleep "$probe_s"
	priv1=$(private_count "$id")
	classify_private "$id" "$id2"
	[ -z "$id2" ] || $C kill "$id2" >/dev/null 2>&1
	$C exec "$id" -- sh -c '
t=/sys/kernel/tracing
[ -w $t/trace ] || mount -t tracefs tracefs $t 2>/dev/null
[ -w $t/trace ] || { echo "no tracefs in the guest"; exit 3; }
echo 0 > $t/tracing_on; echo > $t/trace
for e in timer/timer_expire_entry timer/hrtimer_expire_entry \
	 workqueue/workqueue_execute_start irq/irq_handler_entry; do
	echo 1 > $t/events/$e/enable || exit 3
done
echo 1 > $t/tracing_on; sleep '"$probe_s"'; echo 0 > $t/tracing_on
cat $t/trace' > "$work/probe" 2>&1 &
	child=$!
	# meanwhile, in the middle of that window, this kernel's view of the same
	# idle VM: KVM's exits by reason, the APIC registers, MSRs, MMIO and
	# ports it wrote, traced in its VMM's threads only (the shim's child at
	# the bottom: the VMM runs the VM in a child of its own)
	ht=/sys/kernel/tracing
	[ -w $ht/trace ] || ht=/sys/kernel/debug/tracing
	hw=$((probe_s - 6))
	vmm=$(vmm_pid "$id")
	if [ "$hw" -ge 5 ] && [ -w "$ht/trace" ] && [ -d "$ht/events/kvm/kvm_exit" ]; then
		sleep 3
		echo 0 > $ht/tracing_on; echo > $ht/trace
		if [ -n "$vmm" ] && [ -d "/proc/$vmm/task" ]; then
			echo $(ls "/proc/$vmm/task") > $ht/set_event_pid
		else
			echo "# idle host: the VMM not found: every VM of this host traced"
		fi
		for e in kvm_exit kvm_apic kvm_msr kvm_mmio kvm_pio; do
			echo 1 > $ht/events/kvm/$e/enable 2>/dev/null
		done
		echo 1 > $ht/tracing_on; sleep "$hw"; echo 0 > $ht/tracing_on
		cat $ht/trace > "$work/host-trace"
		for e in kvm_exit kvm_apic kvm_msr kvm_mmio kvm_pio; do
			echo 0 > $ht/events/kvm/$e/enable 2>/dev/null
		done
		echo > $ht/set_event_pid
		echo > $ht/trace
		echo 1 > $ht/tracing_on
		awk -v s="$hw" '
		/ kvm_exit:/ && match($0, /reason [^ ]+/) {
			r = substr($0, RSTART + 7, RLENGTH - 7); gsub(/[^A-Za-z0-9_]/, "_", r)
			k["exit " r]++; e[r]++; n++
		}
		/ kvm_apic:/ && match($0, /apic_(read|write) [^ ]+/) { k[substr($0, RSTART, RLENGTH)]++ }
		/ kvm_msr:/ && match($0, /msr_(read|write) [^ ]+/) { k[substr($0, RSTART, RLENGTH)]++ }
		/ kvm_mmio:/ && match($0, /mmio [a-z]+ len [0-9]+ gpa [^ ]+/) { k[substr($0, RSTART, RLENGTH)]++ }
		/ kvm_pio:/ && match($0, /pio_(read|write) at [^ ]+/) { k[substr($0, RSTART, RLENGTH)]++ }
		END {
			for (x in k) printf "%d %s\n", k[x], x
			l = sprintf("bench: figure=idle_host_exits window_s=%d exits_per_s=%.2f", s, n / s)
			for (r in e) l = l sprintf(" %s=%.2f", r, e[r] / s)
			print l > "/dev/stderr"
		}' "$work/host-trace" 2> "$work/host.fig" | sort -rn | head -n 15 |
			awk -v s="$hw" '{ n = $1; $1 = ""; printf "# idle host: %6.2f a second%s\n", n / s, $0 }'
		cat "$work/host.fig"
	else
		echo "bench: missing=idle_host_exits reason=\"no kvm trace events in this kernel's tracefs, or BENCH_PROBE_S below 11\""
	fi
	wait "$child"
	st=$?
	child=
	# huge pages in the guest: each one 512 pages the host holds for it
	$C exec "$id" -- sh -c 'cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo none
grep -E "^(AnonHugePages|Cached|AnonPages|PageTables|Slab):" /proc/meminfo' \
		> "$work/guest-mem" 2>/dev/null
	awk -v p0="${priv0:-}" -v p1="${priv1:-}" '
	NR == 1 { thp = $0; if (match($0, /\[[a-z]+\]/)) thp = substr($0, RSTART + 1, RLENGTH - 2) }
	/^[A-Za-z]+:/ { sub(":", "", $1); kb[$1] = $2 }
	END {
		if (p0 == "" || p1 == "" || !("AnonHugePages" in kb)) exit 1
		printf "# idle guest: private pages %d, %d after %d s idle, untraced; huge pages %d KiB (THP %s); anon %d, page cache %d, slab %d, page tables %d KiB\n", p0, p1, s, kb["AnonHugePages"], thp, kb["AnonPages"], kb["Cached"], kb["Slab"], kb["PageTables"]
		printf "bench: figure=idle_guest_memory window_s=%d private_pages_start=%d private_pages_end=%d anon_huge_kib=%d thp=%s anon_kib=%d cached_kib=%d slab_kib=%d page_tables_kib=%d\n", s, p0, p1, kb["AnonHugePages"], thp, kb["AnonPages"], kb["Cached"], kb["Slab"], kb["PageTables"]
	}' s="$probe_s" "$work/guest-mem" ||
		echo "bench: missing=idle_guest_memory reason=\"the guest's /proc/meminfo or the sandbox's private pages could not be read\""
	$C kill "$id" >/dev/null 2>&1
	if [ $st = 0 ]; then
		awk -v s="$probe_s" '
		/ timer_expire_entry:| hrtimer_expire_entry:/ {
			if (match($0, /function=[^ ]+/)) k["timer " substr($0, RSTART + 9, RLENGTH - 9)]++
			t++
		}
		/ workqueue_execute_start:/ {
			if (match($0, /function [^ ]+/)) k["work " substr($0, RSTART + 9, RLENGTH - 9)]++
			w++
		}
		/ irq_handler_entry:/ {
			if (match($0, /name=[^ ]+/)) k["irq " substr($0, RSTART + 5, RLENGTH - 5)]++
			q++
		}
		END {
			for (x in k) printf "%d %s\n", k[x], x
			printf "bench: figure=idle_guest window_s=%d timers_per_s=%.2f work_per_s=%.2f irqs_per_s=%.2f\n", s, t / s, w / s, q / s > "/dev/stderr"
		}' "$work/probe" 2> "$work/probe.fig" | sort -rn | head -n 15 |
			awk -v s="$probe_s" '{ n = $1; $1 = ""; printf "# idle guest: %6.2f a second %s\n", n / s, $0 }'
		cat "$work/probe.fig"
	else
		echo "# idle guest: no trace ($(tail -n 1 "$work/probe"))"
		echo "bench: missing=idle_guest reason=\"no trace in the guest: $(tail -n 1 "$work/probe" | tr -d '"')\""
	fi
elif [ "$probe_s" -gt 0 ]; then
	for f in idle_guest guest_timer idle_host_exits idle_guest_memory private_kinds private_contents; do
		echo "bench: missing=$f reason=\"the probe sandbox could not be created\""
	done
else
	for f in idle_guest guest_timer idle_host_exits idle_guest_memory private_kinds private_contents; do
		echo "bench: missing=$f reason=\"BENCH_PROBE_S=0\""
	done
fi

# density: onto /dev/cube clones, then the MAP_PRIVATE file path (or that
# first: BENCH_DENSITY_ORDER=no-cube-first, to see what the first pass
# pays that the second finds done)
budget=${BENCH_DENSITY_MIB:-512}
max=${BENCH_DENSITY_MAX:-200}
settle=${BENCH_SETTLE_S:-30}
order=${BENCH_DENSITY_ORDER:-cube-first}
why="BENCH_DENSITY_MIB=0"
case $order in
cube-first|no-cube-first) ;;
*)	why="BENCH_DENSITY_ORDER='$order' is neither cube-first nor no-cube-first"
	budget=0 rc=1 ;;
esac
density_cube() {
	run "$here/sandbox_bench" -t $T -C "$C" -D "$budget" -x "$max" -S "$settle" \
		-T "$(left)" > "$work/dens-cube" || rc=1
	cat "$work/dens-cube"
}
density_file() {
	printf '#!/bin/sh\nexec "%s" --no-cube "$@"\n' "$dir/cube-vmm" > "$work/vmm-no-cube"
	chmod +x "$work/vmm-no-cube"
	CUBE_VMM=$work/vmm-no-cube run "$here/sandbox_bench" -t $T -C "$C" \
		-D "$budget" -x "$max" -S "$settle" -T "$(left)" > "$work/dens-file" || rc=1
	sed 's/figure=density /figure=density_no_cube /; s/figure=density_meminfo /figure=density_meminfo_no_cube /; s/figure=density_slab /figure=density_slab_no_cube /' "$work/dens-file"
}
if [ "$budget" -gt 0 ]; then
	echo "# density: $order"
	if [ "$order" = cube-first ]; then
		density_cube
		density_file
	else
		density_file
		density_cube
	fi
	a=$(sed -n 's/^bench: figure=density .*sandboxes=\([0-9]*\).*/\1/p' "$work/dens-cube")
	b=$(sed -n 's/^bench: figure=density .*sandboxes=\([0-9]*\).*/\1/p' "$work/dens-file")
	if [ -n "$a" ] && [ -n "$b" ] && [ "$b" -gt 0 ]; then
		echo "# density in $budget MiB: $a sandboxes onto /dev/cube, $b with --no-cube (MAP_PRIVATE): x$(echo "$a $b" | awk '{ printf "%.2f", $1 / $2 }')"
		echo "bench: figure=density_ratio budget_mib=$budget cube=$a no_cube=$b ratio=$(echo "$a $b" | awk '{ printf "%.3f", $1 / $2 }')"
	fi
else
	for f in density density_no_cube density_ratio density_meminfo density_meminfo_no_cube \
		density_slab density_slab_no_cube; do
		echo "bench: missing=$f reason=\"$why\""
	done
fi
exit $rc
