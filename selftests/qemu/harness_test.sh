#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# harness_test.sh: the VM harness fails when it must.  On a scratch copy of
# the tree it runs the harness four times and checks each verdict:
#   1. one group (T=kvm) of good tests          -> passes
#   2. the same group plus a failing test       -> fails, names the test
#   3. cube.ko with a WARN_ON in its init path  -> fails on the kernel log
#   4. a test silent for longer than STALL      -> L1 is dumped (vCPU
#      registers, NMI backtraces), run again, and the second stall fails
# Prints KTAP; exits 0 when every verdict was right.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

rsync -a --exclude /build --exclude /.git --exclude '*.o' --exclude '*.ko' \
	"$top/" "$work/tree/"
n=0 failed=0
result() {
	n=$((n + 1))
	if [ "$1" = 0 ]; then
		echo "ok $n $2"
	else
		echo "not ok $n $2"
		sed 's/^/# /' "$work/out" | tail -n 25
		failed=1
	fi
}
vmtest() {
	make -s -C "$work/tree" vmtest VMTEST_DIR="$work/vm" T="$1" > "$work/out" 2>&1
}

echo "KTAP version 1"
echo "1..4"

vmtest kvm
rc=$?
[ $rc = 0 ] && grep -q '^[0-9]* passed, 0 failed$' "$work/out"
result $? "a passing group passes"

cat >> "$work/tree/selftests/kvm/kvm_test.c" <<'EOT'

TEST(deliberate_failure)
{
	ASSERT_EQ(1 + 1, 3);
}
EOT
sed -i '/^TEST_MAIN()$/d' "$work/tree/selftests/kvm/kvm_test.c"
echo 'TEST_MAIN()' >> "$work/tree/selftests/kvm/kvm_test.c"
vmtest kvm
rc=$?
[ $rc != 0 ] && grep -q '^ *not ok [0-9]* deliberate_failure' "$work/out" &&
	grep -q '^[0-9]* passed, 1 failed$' "$work/out"
result $? "a failing selftest fails the run"

sed -i 's/^\(\tpr_info("loaded, api version\)/\tWARN_ON(1);\n\1/' "$work/tree/kmod/main.c"
grep -q 'WARN_ON(1);' "$work/tree/kmod/main.c" || echo "# could not inject WARN_ON"
vmtest module:device_test
rc=$?
[ $rc != 0 ] && grep -q 'not ok - post: kernel log reports a problem' "$work/out" &&
	grep -q 'WARNING: CPU:' "$work/out"
result $? "a WARN_ON in cube.ko fails the run"

# A silent test (40 s, within its own 60 s bound) against STALL=15.
sed -i 's/^\tWARN_ON(1);$//' "$work/tree/kmod/main.c"
sed -i 's/ASSERT_EQ(1 + 1, 3);/sleep(40);/' "$work/tree/selftests/kvm/kvm_test.c"
STALL=15 vmtest kvm:kvm_test/deliberate_failure
rc=$?
[ $rc != 0 ] && [ "$(grep -c '^not ok - vmtest: L1 stalled' "$work/out")" = 2 ] &&
	grep -q 'running it once more' "$work/out" &&
	grep -q '^#   RIP=' "$work/out" &&
	grep -q 'NMI backtrace for cpu' "$work/out"
result $? "a stalled L1 is dumped, run again, and fails"

exit $failed
