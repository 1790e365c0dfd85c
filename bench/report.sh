#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# report.sh LOG MACHINE [OUTDIR]: the figures of a benchmark run as a table
# on the terminal and as JSON.  LOG is the run's output (the harness's
# results.log, or what the benchmarks printed natively); its figures are
# the lines "bench: figure=NAME key=value ..." (indented or not).  MACHINE
# says where they were measured ("kvm" or "emulated").  Writes into OUTDIR
# (default build/bench/<date>-<commit>/ of this tree): results.json,
# table.txt, the log itself and, with gnuplot, latency.png (the CDF of
# create to first output, from the "bench: samples=" lines) and memory.png
# (host memory per idle sandbox and in all, against N); prints the table.
# BENCH_COMMIT names the commit measured when it is not this tree's HEAD
# (a log reported later).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
log=$1 machine=$2
commit=${BENCH_COMMIT:-$(git -C "$top" rev-parse --short HEAD 2>/dev/null || echo unknown)}
[ -n "${BENCH_COMMIT:-}" ] || git -C "$top" diff --quiet HEAD -- 2>/dev/null ||
	commit="$commit-dirty"
stamp=$(date -u +%Y%m%d-%H%M%S)
out=${3:-$top/build/bench/$stamp-$commit}
mkdir -p "$out"
cp "$log" "$out/run.log"
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
ncpu=$(nproc 2>/dev/null || echo 1)
case $machine in
emulated)
	kernel=${KVER:-$("$top/scripts/kver" 2>/dev/null || echo unknown)}
	what="emulated: L1 under QEMU TCG (nested SVM) on this build machine; times are emulation's, compare counts and ratios"
	;;
*)
	kernel=$(uname -r)
	what="kvm: native, hardware virtualization"
	;;
esac

sed -n 's/^[[:space:]]*bench: figure=//p' "$log" > "$out/figures.txt"
sed -n 's/^[[:space:]]*bench: samples=//p' "$log" > "$out/samples.txt"

# the slope of host memory against N idle sandboxes: what one more costs,
# between the two largest N (MemAvailable moves by megabytes on its own, so
# a count of 1 says little; many sandboxes swamp that noise)
slope=$(awk '$1 == "memory_idle" {
	n = h = 0
	for (i = 2; i <= NF; i++) {
		split($i, kv, "=")
		if (kv[1] == "n") n = kv[2]
		if (kv[1] == "host_kib") h = kv[2]
	}
	if (n > 0) { N[++k] = n; T[k] = n * h }
} END {
	if (k < 2) exit
	hi = 1
	for (i = 2; i <= k; i++) if (N[i] > N[hi]) hi = i
	lo = 0
	for (i = 1; i <= k; i++) if (N[i] < N[hi] && (!lo || N[i] > N[lo])) lo = i
	if (lo)
		printf "memory_slope from_n=%d to_n=%d host_kib_per_sandbox=%.0f\n", N[lo], N[hi], (T[hi] - T[lo]) / (N[hi] - N[lo])
}' "$out/figures.txt")
[ -n "$slope" ] && echo "$slope" >> "$out/figures.txt"

# The rows of a full run: each one missing gets a row that says why, from
# a "bench: missing=NAME[:KEY=VALUE] reason=..." line of the run where a
# benchmark said why it left it out, else that the log has no such figure.
sed -n 's/^[[:space:]]*bench: missing=//p' "$log" > "$out/missing.txt"
for want in clone restore_cube_first boot_cube_vmm boot_qemu_microvm \
	boot_ratio_cube_vmm_over_qemu restore_cube restore_no_cube \
	template_build restore_counts restore_trim \
	latency_cubectl:pool=0 latency_cubectl:pool=1 idle_cost idle_exits \
	memory_idle memory_slope guest_timer idle_guest idle_host_exits \
	idle_guest_memory private_kinds private_contents density density_no_cube \
	density_ratio density_meminfo density_meminfo_no_cube density_slab \
	density_slab_no_cube latency_sdk:pool=0 \
	latency_sdk:pool=1 net_setup net_memory net_memory_slab net_memory_drop \
	net_create net_data rollback:dirty_mib=1 \
	rollback:dirty_mib=10 rollback:dirty_mib=100; do
	name=${want%%:*} key=
	[ "$name" = "$want" ] || key=${want#*:}
	awk -v n="$name" -v k="$key" '$1 == n && (k == "" || index($0, " " k " ")) { f = 1 }
		END { exit !f }' "$out/figures.txt" && continue
	why=$(awk -v w="$want" '$1 == w { sub(/^[^ ]+ +reason=/, ""); gsub(/"/, ""); print; exit }' "$out/missing.txt")
	echo "$name${key:+ $key} not_run=\"${why:-no such figure in the run's log (see run.log)}\"" >> "$out/figures.txt"
done

# JSON: the machine, then one object per figure line; numbers stay numbers
awk -v machine="$machine" -v what="$what" -v kernel="$kernel" \
    -v cpu="$cpu ($ncpu CPUs)" -v commit="$commit" -v date="$stamp" '
function q(s) { gsub(/\\/, "\\\\", s); gsub(/"/, "\\\"", s); return "\"" s "\"" }
function val(v) { return v ~ /^-?[0-9]+(\.[0-9]+)?$/ ? v : q(v) }
BEGIN {
	printf "{\n  \"machine\": %s,\n  \"about\": %s,\n  \"kernel\": %s,\n  \"cpu\": %s,\n  \"commit\": %s,\n  \"date\": %s,\n  \"figures\": [",
	       q(machine), q(what), q(kernel), q(cpu), q(commit), q(date)
	n = 0
}
{
	line = $0
	name = line; sub(/ .*/, "", name)
	rest = substr(line, length(name) + 2)
	printf "%s\n    {\"figure\": %s", n++ ? "," : "", q(name)
	while (match(rest, /^[A-Za-z0-9_]+=("[^"]*"|[^ ]*)/)) {
		kv = substr(rest, 1, RLENGTH)
		rest = substr(rest, RLENGTH + 1); sub(/^ +/, "", rest)
		k = kv; sub(/=.*/, "", k)
		v = substr(kv, length(k) + 2); gsub(/^"|"$/, "", v)
		printf ", %s: %s", q(k), val(v)
	}
	printf "}"
}
END { printf "\n  ]\n}\n" }' "$out/figures.txt" > "$out/results.json"

{
	echo "cube benchmarks, $stamp, commit $commit"
	echo "machine: $what"
	echo "kernel $kernel; CPU $cpu ($ncpu CPUs)"
	echo
	awk '{
		name = $1; $1 = ""
		printf "%-28s%s\n", name, $0
	}' "$out/figures.txt"
	[ -s "$out/figures.txt" ] || echo "(no figures: see $out/run.log)"
	echo
	echo "results: $out/results.json"
} > "$out/table.txt"

# the plots, where gnuplot is installed (scripts/packages.txt has it)
plots=
if command -v gnuplot >/dev/null 2>&1; then
	cmds= i=0
	while read -r name pool conc ms; do
		i=$((i + 1))
		f=$out/cdf-$i.dat
		echo "${ms#ms=}" | tr , '\n' | awk 'NF { v[++n] = $1 }
			END { for (i = 1; i <= n; i++) print v[i], i / n }' > "$f"
		t="${name#latency_} ${conc#concurrency=}x $( [ "${pool#pool=}" = 1 ] && echo "warm pool" || echo "no pool")"
		cmds="$cmds${cmds:+, }'$f' using 1:2 with steps title '$t'"
	done < "$out/samples.txt"
	if [ -n "$cmds" ]; then
		gnuplot -e "set terminal pngcairo size 900,560 noenhanced; set output '$out/latency.png';
			set title 'create to first command output ($machine)'; set logscale x;
			set xlabel 'ms'; set ylabel 'fraction of sandboxes'; set yrange [0:1]; set key bottom right;
			set grid; plot $cmds" 2>"$out/gnuplot.err" && plots="$plots latency.png"
	fi
	awk '$1 == "memory_idle" {
		for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		print v["n"], v["host_kib"] / 1024, v["n"] * v["host_kib"] / 1024, v["guest_private_kib"] / 1024, (v["vmm_anon_kib"] + v["vmm_pte_kib"]) / 1024
	}' "$out/figures.txt" | sort -n > "$out/memory.dat"
	if [ -s "$out/memory.dat" ]; then
		gnuplot -e "set terminal pngcairo size 900,560 noenhanced; set output '$out/memory.png';
			set title 'idle sandboxes: host memory ($machine)'; set xlabel 'idle sandboxes (N)';
			set ylabel 'MiB per sandbox'; set y2label 'MiB in all'; set y2tics; set ytics nomirror;
			set key top left; set grid;
			plot '$out/memory.dat' using 1:2 with linespoints title 'host (MemAvailable) per sandbox',
			     '' using 1:4 with linespoints title 'guest private per sandbox',
			     '' using 1:5 with linespoints title 'VMM anon+page tables per sandbox',
			     '' using 1:3 axes x1y2 with linespoints title 'host in all (right)'" \
			2>>"$out/gnuplot.err" && plots="$plots memory.png"
	fi
	[ -s "$out/gnuplot.err" ] || rm -f "$out/gnuplot.err"
fi
[ -n "$plots" ] && echo "plots:$plots (in $out)" >> "$out/table.txt"
[ -n "$plots" ] || echo "plots: none (gnuplot not installed or no samples)" >> "$out/table.txt"
cat "$out/table.txt"
