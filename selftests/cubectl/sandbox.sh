# SPDX-License-Identifier: GPL-2.0
# sandbox.sh: helpers of this group's tests that drive real sandboxes
# (sourced after ktap.sh; C is the cubectl to run).

# no_sandbox: the module has no sandbox left
no_sandbox() {
	[ "$($C --json stats | sed -n 's/.*"sandboxes": *\([0-9]*\).*/\1/p')" = 0 ]
}

# x ID SCRIPT: run SCRIPT with sh in sandbox ID, stdout and stderr
# (X_TIMEOUT seconds, default 60)
x() {
	$C exec --timeout "${X_TIMEOUT:-60}" "$1" -- sh -c "$2" 2>&1
}

# vmm_pid ID: the pid of sandbox ID's cube-vmm (its command line names
# cube-ID)
vmm_pid() {
	for p in /proc/[0-9]*; do
		if tr '\0' ' ' < "$p/cmdline" 2>/dev/null |
			grep -q -- "--id cube-$1 "; then
			echo "${p#/proc/}"
			return
		fi
	done
}

# check NAME WANT GOT
check() {
	if [ "$2" = "$3" ]; then
		ok "$1"
	else
		not_ok "$1" "want '$2', got '$3'"
	fi
}
