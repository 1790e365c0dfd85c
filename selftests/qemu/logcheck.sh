#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# logcheck.sh < KERNEL_LOG: the L1 kernel log check, run by /init after
# the tests (staged as /lib/cube/logcheck.sh).  Reads the whole kernel log
# (dmesg) and judges what follows the "cube-vmtest: start" marker /init
# printed before the tests:
#   exit 0  nothing wrong
#   exit 1  a problem (oops, BUG, WARN, a cube: leak: line, ...); the lines
#           found, then their context, are printed as "# dmesg: " comments
#   exit 2  the marker is gone: the ring buffer dropped the start of the
#           run, so the log cannot be checked (L1 boots with a large
#           log_buf_len so that this does not happen)
# The harness's own test feeds it crafted logs.
log=${TMPDIR:-/tmp}/logcheck.$$
trap 'rm -f "$log" "$log.bad"' EXIT

if ! sed -n '/cube-vmtest: start/,$p' > "$log" || [ ! -s "$log" ]; then
	echo "# the kernel log no longer holds the 'cube-vmtest: start' marker:"
	echo "# its ring buffer dropped the start of the test run, which was not checked"
	exit 2
fi

# A test that drives a memory cgroup into its OOM killer on purpose
# (memory/hole_test: a clone cannot grow past memory.max) makes the kernel
# print the invoking task's stack: that report, and only for the programs
# named here, is not a problem.
expected_oom='hole_test'
awk -v who="$expected_oom" '
	/ invoked oom-killer: / { split($0, a, " invoked oom-killer: ");
		n = split(a[1], w, " "); if (index(" " who " ", " " w[n] " ")) skip = 1 }
	skip && /<\/TASK>/ { skip = 0; next }
	!skip' "$log" > "$log.f"
mv "$log.f" "$log"

# WARNING: is a WARN() (WARNING: CPU:) or a lockdep report (WARNING:
# possible circular locking dependency detected, inconsistent lock state,
# suspicious RCU usage, ...); BUG: covers KASAN (BUG: KASAN:) and
# DEBUG_ATOMIC_SLEEP (BUG: sleeping function called from invalid context).
# An RCU stall, an OOM kill and a hung task name themselves on the line
# before their stack; a stack alone ("Call Trace:") is shown with the
# lines that led to it.
bad='cube: leak:|WARNING:|BUG:|Oops|KASAN|general protection fault|Call Trace:|refcount_t:|list_add corruption|list_del corruption|UBSAN:|possible circular locking|blocked for more than|rcu: INFO:|detected stall|invoked oom-killer|Out of memory'
grep -E "$bad" "$log" > "$log.bad" || exit 0
sed 's/^/# dmesg: /' "$log.bad" | head -n 40
grep -E -B 12 -A 30 'WARNING:|BUG:|UBSAN:|Oops|general protection fault|Call Trace:' "$log" |
	head -n 160 | sed 's/^/# dmesg: /'
exit 1
