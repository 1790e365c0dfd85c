#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# cube.ko unloads cleanly, leaving no device, sysfs entry or log complaint
# behind, and loads again.  $CUBE_KO names the module file.
n=0 failed=0
check() {
	n=$((n + 1))
	if eval "$2"; then
		echo "ok $n $1"
	else
		echo "not ok $n $1"
		failed=1
	fi
}

if [ ! -r "${CUBE_KO:-}" ]; then
	echo "1..0 # SKIP CUBE_KO does not name the module file"
	exit 4
fi
echo "KTAP version 1"
echo "1..7"
mark="cube-load-unload-$$"
echo "$mark" > /dev/kmsg
grep -q '^cube ' /proc/modules || insmod "$CUBE_KO"
check "loaded before the test" "grep -q '^cube ' /proc/modules"
check "rmmod succeeds" "rmmod cube"
check "/dev/cube is gone" "[ ! -e /dev/cube ]"
check "/sys/module/cube is gone" "[ ! -e /sys/module/cube ]"
check "insmod succeeds again" "insmod '$CUBE_KO'"
check "/dev/cube is back" "[ -c /dev/cube ]"
check "no leak or warning logged" \
	"! dmesg | sed -n '/$mark/,\$p' | grep -qE 'cube: leak:|WARNING:|BUG:'"
exit $failed
