#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# clockjump.sh RESULTS WALL: whether L1's clock ran ahead of the host's
# during a run.  RESULTS is the run's results file, where /init printed
# L1's uptime at the end ("# cube-vmtest: L1 uptime N s"); WALL is the
# run's length in seconds by the host's clock.  L1 boots after QEMU
# starts, so its uptime stays below WALL; under emulation its clock jumps
# ahead when the host pauses or starves QEMU, and then every timer in L1
# fires early: test timeouts, the RCU and lockup detectors.
#   exit 0  L1's clock ran more than SLACK (default 60) seconds ahead:
#           prints by how many seconds
#   exit 1  it did not, or the run printed no uptime (it did not end)
set -u
res=$1 wall=$2 slack=${SLACK:-60}
up=$(tr -d '\r' < "$res" 2>/dev/null |
	sed -n 's/^# cube-vmtest: L1 uptime \([0-9][0-9]*\) s$/\1/p' | tail -n 1)
[ -n "$up" ] || exit 1
[ "$up" -gt $((wall + slack)) ] || exit 1
echo $((up - wall))
