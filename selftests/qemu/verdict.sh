#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# verdict.sh DIR: judge one L1 test run from the files run.sh left in DIR
# (results.log, console.log, qemu.rc, stalled, lost-interrupts, kicks,
# monitor.log); print what failed, then the summary "N passed, N failed[,
# N skipped]"; exit 0 only when nothing did.  Every one of these is a failure:
#   - a test failed (L1's summary) or a post-run check did (not ok - post:)
#   - L1 stalled (stalled: no result line for STALL seconds; with
#     lost-interrupts: L1 sat halted with an interrupt undelivered), timed out
#     (TIMEOUT) or stopped before the end marker
#   - no summary from L1, or run_tests.sh's exit status (CUBE-VMTEST-END
#     rc=N) is not 0 while the summary shows no failure
#   - the console shows a kernel problem the post-checks did not report
#   - a test skipped that the allowlist (SKIPS, default skips.txt beside
#     this script) does not name
# run.sh calls it after each run; the harness's own test feeds it crafted
# files.
set -u
dir=$1
here=$(cd "$(dirname "$0")" && pwd)
con=$dir/console.log res=$dir/results.log
skips=${SKIPS:-$here/skips.txt}
timeout=${TIMEOUT:-1800}
[ -r "$res" ] || { echo "verdict: no $res" >&2; exit 2; }
[ -e "$con" ] || : > "$con"
# L1's serial port ends its lines with CR LF.
tr -d '\r' < "$res" > "$dir/results.txt"
res=$dir/results.txt

# stall_report: what a stalled L1 was doing: the last register dump and
# the local APICs from the QEMU monitor, then the NMI's backtraces.
stall_report() {
	if [ -e "$dir/lost-interrupts" ]; then
		echo "not ok - vmtest: L1 lost an interrupt: halted with" \
			"interrupts enabled, vector $(cat "$dir/lost-interrupts")" \
			"pending and deliverable in its local APIC, no result" \
			"line for $(cat "$dir/stalled") s (a fault of the emulator)"
	else
		echo "not ok - vmtest: L1 stalled: no result line for $(cat "$dir/stalled") s"
	fi
	echo "# vCPUs (QEMU monitor):"
	tr -d '\r' < "$dir/monitor.log" 2>/dev/null | awk '
	/^CPU#/ && !incpu { n++; incpu = 1 }
	!/^CPU#|^RIP=|^CS =/ { incpu = 0 }
	/^CPU#|^RIP=|^CS =/ { dump[n] = dump[n] $0 "\n" }
	/^dumping local APIC/ { lapic = 1 }
	lapic && /^(dumping|LVTT[ \t]|Timer|SPIV|ISR|IRR|APR)/ { apic = apic $0 "\n" }
	END { printf "%s%s", dump[n], apic }' | sed 's/^/#   /'
	echo "# L1 kernel after an NMI ($con):"
	if grep -q 'NMI' "$con"; then
		sed -n '/NMI/,$p' "$con" | head -n 300 | sed 's/^/# /'
	else
		tail -n 60 "$con" | sed 's/^/# /'
	fi
}

# unexpected_skips: every skip in the results that the allowlist does not
# name, one "not ok" line each.  A list line is "GROUP:PROGRAM | TEST |
# REASON": TEST as on its result line ("-" for a program skipped whole,
# 1..0 # SKIP), REASON a part of the reason it gives.
unexpected_skips() {
	awk -v list="$skips" '
	function trim(s) { sub(/^[ \t]+/, "", s); sub(/[ \t]+$/, "", s); return s }
	BEGIN {
		while ((getline line < list) > 0) {
			if (line ~ /^[ \t]*(#|$)/)
				continue
			n = split(line, f, "|")
			if (n != 3) {
				printf "not ok - vmtest: %s: bad line: %s\n", list, line
				bad++
				continue
			}
			k = trim(f[1]) "|" trim(f[2])
			want[k] = trim(f[3])
		}
	}
	function check(prog, test, why,   k) {
		k = prog "|" test
		if (k in want && index(why, want[k]))
			return
		printf "not ok - vmtest: unexpected skip: %s: %s # SKIP %s", prog, test, why
		printf " (not in %s)\n", list
		bad++
	}
	/^# selftests: / { prog = $3 $4; nested = 0; next }
	/^    +(not )?ok [0-9]+/ {
		nested = 1
		line = $0
		if (!sub(/^ +ok [0-9]+ /, "", line) || !match(line, /# *[Ss][Kk][Ii][Pp]/))
			next
		test = trim(substr(line, 1, RSTART - 1))
		why = trim(substr(line, RSTART + RLENGTH))
		check(prog, test, why)
		next
	}
	/^ok [0-9]+ selftests: .*# *SKIP/ {
		if (nested)
			next
		why = $0
		sub(/^.*# *SKIP */, "", why)
		check(prog, "-", why)
	}
	END { exit bad > 0 }
	' "$res"
}

pass=0 fail=0 skip=0
sum=$(sed -n 's/^# \([0-9]* passed, .*\)/\1/p' "$res" | tail -n 1)
if [ -n "$sum" ]; then
	pass=$(echo "$sum" | sed -n 's/^\([0-9]*\) passed.*/\1/p')
	fail=$(echo "$sum" | sed -n 's/.* \([0-9]*\) failed.*/\1/p')
	s=$(echo "$sum" | sed -n 's/.* \([0-9]*\) skipped.*/\1/p')
	skip=${s:-0}
fi
tests_failed=$fail
post=$(grep -c '^not ok - post:' "$res")
fail=$((fail + post))
qrc=$(cat "$dir/qemu.rc" 2>/dev/null)
end=$(grep '^CUBE-VMTEST-END' "$res" | tail -n 1)
if [ -e "$dir/stalled" ]; then
	# One vCPU, every program bounded well below STALL: a stall is a
	# hang; run.sh makes the run again only when L1 lost an interrupt.
	fail=$((fail + 1))
	stall_report
elif [ -z "$end" ]; then
	fail=$((fail + 1))
	if [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
		echo "not ok - vmtest: L1 timed out after $timeout s"
	else
		echo "not ok - vmtest: L1 stopped before the end of the run (panic, oops or crash)"
	fi
	echo "# last console lines ($con):"
	tail -n 60 "$con" | sed 's/^/# /'
elif [ -z "$sum" ]; then
	fail=$((fail + 1))
	echo "not ok - vmtest: no test summary from L1"
fi
if [ -n "$end" ]; then
	rc=${end#CUBE-VMTEST-END rc=}
	case $rc in
	0)
		;;
	'' | *[!0-9]*)
		fail=$((fail + 1))
		echo "not ok - vmtest: no exit status from run_tests.sh ('$end')"
		;;
	*)
		if [ "$tests_failed" = 0 ]; then
			fail=$((fail + 1))
			echo "not ok - vmtest: run_tests.sh exited with status $rc, yet its summary shows no failure"
		fi
		;;
	esac
fi
# The console up to the NMI a stalled run was sent (its panic is ours).
if [ -e "$dir/stalled" ]; then
	sed '/NMI/,$d' "$con" > "$dir/console.before-nmi"
	con=$dir/console.before-nmi
fi
if grep -qE 'Kernel panic|BUG:|Oops|WARNING: CPU:' "$con"; then
	if [ "$post" = 0 ]; then
		fail=$((fail + 1))
		echo "not ok - vmtest: the L1 console shows a kernel problem:"
		grep -E -A 20 'Kernel panic|BUG:|Oops|WARNING: CPU:' "$con" | head -n 60 | sed 's/^/# /'
	fi
fi
if [ "$skip" -gt 0 ] || grep -q '# *SKIP' "$res"; then
	out=$(unexpected_skips)
	if [ -n "$out" ]; then
		echo "$out"
		fail=$((fail + $(echo "$out" | grep -c '^not ok')))
	fi
fi
# A lost interrupt that a key press delivered: the run went on (run.sh).
if [ -s "$dir/kicks" ]; then
	echo "# vmtest: L1 lost an interrupt and a key press through the QEMU" \
		"monitor delivered it, at: $(tr '\n' ';' < "$dir/kicks")"
fi
line="$pass passed, $fail failed"
[ "$skip" -gt 0 ] && line="$line, $skip skipped"
echo "$line"
[ "$fail" -eq 0 ]
