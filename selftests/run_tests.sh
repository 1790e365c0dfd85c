#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# run_tests.sh: run installed cube selftests and print one KTAP report.
#
#   run_tests.sh -d DIR [-t FILTER] [-T SECONDS]
#
# DIR holds kselftest-list.txt ("group:program" lines) and a folder a group.
# FILTER is "group", "program" or "group:program", optionally followed by
# "/TEST", which is handed to the program as "-t TEST"; or a comma-separated
# list of groups and programs ("module,memory,sandbox").  Each program is
# bounded by SECONDS (default 600), or by its group's settings file
# ("timeout=SECONDS").  Every program's KTAP is nested (indented
# by four spaces) under one result line; the last line is the summary
# "N passed, N failed[, N skipped]".  Exit status: 0 when nothing failed.
#
# A program must print exactly one KTAP plan ("1..N", first or last) and N
# results numbered 1 to N in order; anything else (no plan, two plans, too
# few or too many results, a result out of order) is one more failure, as
# is an exit status other than 0 or 4 (kselftest's skip).  "1..0 # SKIP
# reason" skips the whole program; its reason goes on its result line.
# The groups bench and demo (benchmarks, the main job) may print no KTAP:
# their exit status judges them.

dir=.
filter=
limit=600
while getopts d:t:T: opt; do
	case $opt in
	d) dir=$OPTARG ;;
	t) filter=$OPTARG ;;
	T) limit=$OPTARG ;;
	*) echo "usage: $0 -d DIR [-t FILTER] [-T SECONDS]" >&2; exit 2 ;;
	esac
done

list=$dir/kselftest-list.txt
if [ ! -r "$list" ]; then
	echo "run_tests: no $list" >&2
	exit 2
fi

sel=${filter%%/*}
sub=
case $filter in */*) sub=${filter#*/} ;; esac

matches() {
	[ -z "$sel" ] && return 0
	for s in $(echo "$sel" | tr ',' ' '); do
		[ "$s" = "$1" ] || [ "$s" = "$2" ] || [ "$s" = "$1:$2" ] && return 0
	done
	return 1
}

progs=
n=0
while IFS=: read -r group prog; do
	[ -n "$group" ] || continue
	if matches "$group" "$prog"; then
		progs="$progs $group:$prog"
		n=$((n + 1))
	fi
done < "$list"

if [ "$n" -eq 0 ]; then
	echo "run_tests: no test matches '$filter'" >&2
	exit 2
fi

# What is left of a program that ran out of time: processes and, for the
# ones asleep in the kernel, where.
hung_report() {
	echo "# $1: out of time; processes left:"
	for st in /proc/[0-9]*/stat; do
		line=$(cat "$st" 2>/dev/null) || continue
		read -r pid comm state _ <<-EOF
		$line
		EOF
		case $comm in "(kthreadd)") continue ;; esac
		[ -r "/proc/$pid/cmdline" ] || continue
		cmd=$(tr '\0\n' '  ' < "/proc/$pid/cmdline" 2>/dev/null | cut -c 1-160)
		[ -n "$cmd" ] || continue
		echo "#   $pid $state $cmd"
		if [ "$state" = D ] && [ -r "/proc/$pid/stack" ]; then
			sed 's/^/#     /' "/proc/$pid/stack"
		fi
	done
}

# size FILE: its length in bytes
size() {
	wc -c < "$1" | tr -d ' \t'
}

# show_rest FILE: end the follower of FILE (the program has ended) and
# show, indented as the follower does, what it had not shown yet: tail -f
# looks for more only once a second.  Nothing is shown twice: the follower
# showed FILE's first $(size FILE.shown) bytes, and when they end inside a
# line, the rest of that line goes on where it stopped.  A last line with
# no newline is ended, so that the result line that follows is a line.
show_rest() {
	# the follower's shell writes its pid before it becomes tail
	t=0
	while [ ! -s "$1.follow" ] && [ $t -lt 1000 ]; do
		sleep 0.01
		t=$((t + 1))
	done
	if [ -s "$1.follow" ]; then
		kill "$(cat "$1.follow")" 2>/dev/null
		wait 2>/dev/null
	else
		echo "# run_tests: the output follower did not start"
	fi
	shown=$(size "$1.shown" 2>/dev/null)
	shown=${shown:-0}
	if [ "$shown" -lt "$(size "$1")" ]; then
		if [ "$shown" -gt 0 ] && [ -n "$(tail -c 1 "$1.shown")" ]; then
			tail -c +$((shown + 1)) "$1" | sed '1!s/^/    /'
		else
			tail -c +$((shown + 1)) "$1" | sed 's/^/    /'
		fi
	fi
	if [ -s "$1" ] && [ -n "$(tail -c 1 "$1")" ]; then
		echo
	fi
}

# ktap_count FILE: of FILE's unindented KTAP, print "plans planned results
# passed skipped failed order", order being 1 when a result's number is not
# its rank.
ktap_count() {
	awk '
	/^1\.\.[0-9]+/ { plans++; sub(/^1\.\./, ""); planned = $1 + 0 }
	/^(not )?ok [0-9]+([ \t]|$)/ {
		n++
		num = ($1 == "not") ? $3 : $2
		if (num + 0 != n)
			order = 1
		if ($1 == "not")
			f++
		else if ($0 ~ /#[ \t]*[Ss][Kk][Ii][Pp]/)
			s++
		else
			p++
	}
	END { printf "%d %d %d %d %d %d %d\n", plans, planned, n, p, s, f, order }
	' "$1"
}

# ktap_required GROUP: its programs are tests and print KTAP.  The
# benchmarks (bench/) and the main job (demo/), which the harness also runs
# on request, print figures and are judged by their exit status.
ktap_required() {
	case $1 in
	bench|demo) return 1 ;;
	esac
	return 0
}

pass=0 fail=0 skip=0 i=0
out=${TMPDIR:-/tmp}/cube-test.$$
echo "KTAP version 1"
echo "1..$n"
for gp in $progs; do
	group=${gp%%:*}
	prog=${gp#*:}
	i=$((i + 1))
	echo "# selftests: $group: $prog"
	set -- "./$prog"
	[ -n "$sub" ] && set -- "$@" -t "$sub"
	# The output goes to a file (a daemon a test leaves behind cannot hold
	# a pipe open) and is shown as it grows, so a hang shows where it is;
	# what the follower showed is copied to $out.shown (see show_rest).
	: > "$out"
	rm -f "$out.follow"
	sh -c 'echo $$ > "$1.follow"; exec tail -n +1 -f "$1"' sh "$out" |
		tee "$out.shown" | sed 's/^/    /' &
	# A group's "settings" file may give its programs another bound
	# (timeout=SECONDS), as in kselftest.
	plimit=$limit
	if [ -r "$dir/$group/settings" ]; then
		t=$(sed -n 's/^timeout=\([0-9][0-9]*\)$/\1/p' "$dir/$group/settings")
		[ -n "$t" ] && plimit=$t
	fi
	(cd "$dir/$group" && exec timeout -k 10 "$plimit" "$@") >> "$out" 2>&1 &
	ppid=$!
	wait $ppid 2>/dev/null
	rc=$?
	if [ "$rc" = 124 ] || [ "$rc" = 137 ] || [ "$rc" = 143 ]; then
		hung_report "$group/$prog" >> "$out"
	fi
	show_rest "$out"
	# The program's own (unindented) KTAP: its plans, its results.
	read -r plans planned nres p s f order <<-EOF
	$(ktap_count "$out")
	EOF
	why=
	if [ "$plans" -eq 0 ] && [ "$nres" -eq 0 ] && ! ktap_required "$group"; then
		# a benchmark or the demo: judged by its exit status
		case $rc in
		0) p=1 ;;
		4) s=1 ;;
		*) why="exited with status $rc" ;;
		esac
		planned=1
	elif [ "$plans" -eq 0 ]; then
		why="printed no KTAP plan (1..N)"
	elif [ "$plans" -gt 1 ]; then
		why="printed $plans KTAP plans"
	elif [ "$nres" -ne "$planned" ]; then
		why="planned $planned results (1..$planned) but printed $nres"
	elif [ "$order" != 0 ]; then
		why="numbered its results out of order"
	fi
	if [ -z "$why" ] && [ "$rc" != 0 ] && [ "$rc" != 4 ] && [ "$f" -eq 0 ]; then
		why="exited with status $rc"
	fi
	reason=
	if [ -n "$why" ]; then
		echo "# $group:$prog $why"
		f=$((f + 1))
	elif [ "$planned" -eq 0 ]; then
		# 1..0: the whole program skipped, and why
		s=1
		reason=$(sed -n 's/^1\.\.0[ \t]*#[ \t]*[Ss][Kk][Ii][Pp][ \t]*//p' "$out" | head -n 1)
		[ -n "$reason" ] || reason="(no reason given)"
	fi
	pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + s))
	if [ "$rc" = 124 ] || [ "$rc" = 143 ]; then
		echo "# $group:$prog timed out after $plimit s"
	fi
	if [ "$f" -gt 0 ]; then
		echo "not ok $i selftests: $group: $prog"
	elif [ -n "$reason" ]; then
		echo "ok $i selftests: $group: $prog # SKIP $reason"
	elif [ "$p" -eq 0 ] && [ "$s" -gt 0 ]; then
		echo "ok $i selftests: $group: $prog # SKIP"
	else
		echo "ok $i selftests: $group: $prog"
	fi
done
rm -f "$out" "$out.follow" "$out.shown"

summary="$pass passed, $fail failed"
[ "$skip" -gt 0 ] && summary="$summary, $skip skipped"
echo "# $summary"
[ "$fail" -eq 0 ]
