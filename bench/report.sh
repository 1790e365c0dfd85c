#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# report.sh LOG MACHINE [OUTDIR]: the figures of a benchmark run as a table
# on the terminal and as JSON.  LOG is the run's output (the harness's
# results.log, or what the benchmarks printed natively); its figures are
# the lines "bench: figure=NAME key=value ..." (indented or not).  MACHINE
# says where they were measured ("kvm" or "emulated").  Writes into OUTDIR
# (default build/bench/<date>-<commit>/ of this tree): results.json,
# table.txt and the log itself; prints the table.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
log=$1 machine=$2
commit=$(git -C "$top" rev-parse --short HEAD 2>/dev/null || echo unknown)
git -C "$top" diff --quiet HEAD -- 2>/dev/null || commit="$commit-dirty"
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
cat "$out/table.txt"
