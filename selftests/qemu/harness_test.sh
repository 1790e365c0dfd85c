#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# harness_test.sh: the VM harness fails when it must.  On a scratch copy of
# the tree, first the parts that can be fed crafted input without booting
# L1 (a few seconds):
#   - cube_test.h: SKIP() after a failed EXPECT_*, and a failed check in a
#     fixture's teardown, fail the test
#   - run_tests.sh: a program that exits 0 before its plan's end, or prints
#     no plan, fails; a trailing plan that matches passes; 1..0 skips; a
#     program's output is shown whole and once, to its last line (one with
#     no newline too), however it came out, when the program ends
#   - logcheck.sh: a kernel log that lost the start marker fails, a WARN
#     fails, a clean log passes
#   - clockjump.sh: an L1 clock far ahead of the host's is found (run.sh
#     then makes a failed run once more), one behind it or a run that did
#     not end is not; run.sh never makes a stalled run again, even when
#     L1's clock jumped too, nor one with forwarded ports, but makes again
#     one in which L1 lost an interrupt; the lost interrupt is read off a
#     monitor dump (IF set, a deliverable vector in IRR) and not off one
#     that lacks either
#   - listen_backlog.so: a burst of connections to a port listened on
#     with a backlog of 1 is queued whole with it preloaded, not without
#   - verdict.sh: run_tests.sh's non-zero exit status fails a run whose
#     summary shows no failure; a skip the allowlist does not name fails,
#     a listed one passes; a stalled run fails, and one in which L1 lost
#     an interrupt says so, with the vCPU's registers and local APIC; a
#     run that went on after a kick passes and says so
# then four runs of the harness (about a minute or two each):
#   1. one group (T=kvm) of good tests          -> passes, no skip, and
#      L1's command line has a large log_buf_len
#   2. the same group plus a failing test       -> fails, names the test
#   3. cube.ko with a WARN_ON in its init path,
#      and a test that unloads it for good      -> fails on the kernel log
#                                                  and on the missing module
#   4. a test silent for longer than STALL      -> L1 is dumped (vCPU
#      registers, NMI backtraces) and the first stall fails the run, with
#      no second run (halted, but with no interrupt left undelivered)
# Prints KTAP; exits 0 when every verdict was right.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

rsync -a --exclude /build --exclude /.git --exclude '*.o' --exclude '*.ko' \
	"$top/" "$work/tree/"
# The root file systems the tree has built, linked so the copy does not
# build them again (they are cached by the hash of their recipes, which
# the copy shares); the minimal guest kernel is left out (GUEST_KERNEL=0).
mkdir -p "$work/tree/build/guest"
for f in "$top"/build/guest/rootfs-*.ext4 "$top"/build/guest/code-interpreter-*.ext4; do
	[ -e "$f" ] && ln -s "$f" "$work/tree/build/guest/"
done
q=$work/tree/selftests/qemu
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
	make -s -C "$work/tree" vmtest VMTEST_DIR="$work/vm" GUEST_KERNEL=0 T="$1" \
		> "$work/out" 2>&1
}

echo "KTAP version 1"
echo "1..24"

# cube_test.h, natively.
mkdir -p "$work/ct"
cat > "$work/ct/ct.c" <<'EOT'
#include "cube_test.h"

TEST(expect_then_skip)
{
	EXPECT_EQ(1 + 1, 3);
	SKIP("skipping after a failure");
}

TEST(plain_skip)
{
	SKIP("nothing to test here");
}

FIXTURE(fx) { int v; };
FIXTURE_SETUP(fx) { self->v = 1; }
FIXTURE_TEARDOWN(fx) { EXPECT_EQ(self->v, 2); }
TEST_F(fx, teardown_check)
{
	ASSERT_EQ(self->v, 1);
}

TEST_MAIN()
EOT
cc -I"$work/tree/selftests/lib" -o "$work/ct/ct" "$work/ct/ct.c" > "$work/out" 2>&1 &&
	"$work/ct/ct" >> "$work/out" 2>&1
rc=$?
[ $rc = 1 ] && grep -q '^not ok 1 expect_then_skip$' "$work/out" &&
	grep -q '^ok 2 plain_skip # SKIP nothing to test here$' "$work/out"
result $? "cube_test.h: SKIP() after a failed EXPECT fails the test"
[ $rc = 1 ] && grep -q '^not ok 3 fx.teardown_check$' "$work/out"
result $? "cube_test.h: a failed check in a fixture's teardown fails the test"

# run_tests.sh, natively, on crafted programs.
rt=$work/rt
mkdir -p "$rt/g"
: > "$rt/kselftest-list.txt"
prog() {
	printf '#!/bin/sh\n%s\n' "$2" > "$rt/g/$1"
	chmod +x "$rt/g/$1"
	echo "g:$1" >> "$rt/kselftest-list.txt"
}
prog early.sh 'printf "KTAP version 1\n1..3\nok 1 first\n"; exit 0'
prog noplan.sh 'printf "ok 1 first\nok 2 second\n"; exit 0'
prog trailing.sh 'printf "ok 1 first\nok 2 second\n1..2\n"'
prog skipall.sh 'echo "1..0 # SKIP no widget"; exit 4'
# a line shown in part before the rest of it came, many lines at the very
# end, a skip among them and a last line with no newline
prog lossless.sh 'echo "1..2"; printf "# par"; sleep 1.2; echo "tial"
i=0; while [ $i -lt 300 ]; do echo "# line $i"; i=$((i + 1)); done
echo "ok 1 first"; echo "ok 2 last # SKIP tail end"; printf "# no newline"'
sh "$work/tree/selftests/run_tests.sh" -d "$rt" > "$work/out" 2>&1
rc=$?
[ $rc != 0 ] && grep -q '^not ok 1 selftests: g: early.sh$' "$work/out" &&
	grep -q '^# g:early.sh planned 3 results (1..3) but printed 1$' "$work/out"
result $? "run_tests.sh: a program that exits 0 before its plan's end fails"
grep -q '^not ok 2 selftests: g: noplan.sh$' "$work/out"
result $? "run_tests.sh: a program that prints no plan fails"
grep -q '^ok 3 selftests: g: trailing.sh$' "$work/out" &&
	grep -q '^ok 4 selftests: g: skipall.sh # SKIP no widget$' "$work/out" &&
	grep -q '^# 6 passed, 2 failed, 2 skipped$' "$work/out"
result $? "run_tests.sh: a matching trailing plan passes, 1..0 skips with its reason"
[ "$(grep -c '^    # line [0-9]*$' "$work/out")" = 300 ] &&
	[ "$(grep -c '^    # partial$' "$work/out")" = 1 ] &&
	[ "$(grep -c '# par' "$work/out")" = 1 ] &&
	grep -q '^    # line 299$' "$work/out" &&
	grep -q '^    ok 2 last # SKIP tail end$' "$work/out" &&
	grep -q '^    # no newline$' "$work/out" &&
	grep -q '^ok 5 selftests: g: lossless.sh$' "$work/out"
result $? "run_tests.sh: a program's output is shown whole, once, to its last line"

# logcheck.sh, on crafted kernel logs.
lc() { printf "$1" | sh "$q/logcheck.sh" > "$work/out" 2>&1; }
lc '[ 1.0] boot\n[ 9.0] cube: loaded\n'
rc=$?
[ $rc = 2 ] && grep -q 'no longer holds' "$work/out"
result $? "logcheck.sh: a kernel log without the start marker fails"
lc '[ 1.0] cube-vmtest: start\n[ 2.0] cube: loaded\n'
rc=$?
lc '[ 1.0] cube-vmtest: start\n[ 2.0] WARNING: CPU: 0 PID: 1 at x.c:1\n'
[ $? = 1 ] && [ $rc = 0 ] && grep -q '^# dmesg: .*WARNING: CPU:' "$work/out"
result $? "logcheck.sh: a WARN after the start marker fails, a clean log passes"

# clockjump.sh, on crafted results: L1's uptime against the host's clock.
printf '# post-checks: 0 failed\r\n# cube-vmtest: L1 uptime 24694 s\r\n' > "$work/cj"
jump=$(sh "$q/clockjump.sh" "$work/cj" 113)
[ $? = 0 ] && [ "$jump" = 24581 ]
result $? "clockjump.sh: an L1 clock far ahead of the host's is found, with by how much"
printf '# cube-vmtest: L1 uptime 100 s\n' > "$work/cj"
sh "$q/clockjump.sh" "$work/cj" 113 > /dev/null
rc=$?
printf 'ok 1 x\n' > "$work/cj"
sh "$q/clockjump.sh" "$work/cj" 113 > /dev/null
[ $? = 1 ] && [ $rc = 1 ]
result $? "clockjump.sh: an L1 clock behind the host's, or no uptime (a run that did not end), is no jump"

# listen_backlog.so, which run.sh preloads into QEMU: a port listened on
# with a backlog of 1 (as QEMU's forwarded ports are) queues a burst of
# 100 connections whole with it, and about 2 of them without it.
cc -O2 -Wall -Wextra -Werror -shared -fPIC -o "$work/listen_backlog.so" \
	"$q/listen_backlog.c" > "$work/out" 2>&1 &&
	cc -O2 -Wall -Wextra -Werror -o "$work/backlog_probe" \
		"$q/backlog_probe.c" >> "$work/out" 2>&1 &&
	plain=$("$work/backlog_probe" 100 2>> "$work/out") &&
	raised=$(LD_PRELOAD=$work/listen_backlog.so "$work/backlog_probe" 100 2>> "$work/out") &&
	echo "queued: $plain without, $raised with" >> "$work/out" &&
	[ "$plain" -le 10 ] && [ "$raised" = 100 ]
result $? "listen_backlog.so: a port QEMU listens on with a backlog of 1 queues a burst of 100 connections"

# run.sh's choice to make a failed run again, on a crafted run with a
# clock jump: made again, but not when L1 also stalled, nor with FWD; a
# run in which L1 lost an interrupt is made again, but not with FWD.
mkdir -p "$work/rj"
printf '# cube-vmtest: L1 uptime 24694 s\r\n' > "$work/rj/results.log"
why=$(sh "$q/run.sh" retryable "$work/rj" 113 2> "$work/out")
rc=$?
echo 720 > "$work/rj/stalled"
sh "$q/run.sh" retryable "$work/rj" 113 >> "$work/out" 2>&1
rc2=$?
rm "$work/rj/stalled"
FWD=8000:8000 sh "$q/run.sh" retryable "$work/rj" 113 >> "$work/out" 2>&1
rc3=$?
[ $rc = 0 ] && echo "$why" | grep -q "clock ran 24581 s ahead" &&
	[ $rc2 = 1 ] && [ $rc3 = 1 ] &&
	grep -q 'L1 stalled: a stalled run is not made again' "$work/out"
result $? "run.sh: a stalled run is not made again, though L1's clock jumped"
printf 'ok 1 x\r\n' > "$work/rj/results.log"
echo 134 > "$work/rj/stalled"
echo 134 > "$work/rj/lost-interrupts"
why=$(sh "$q/run.sh" retryable "$work/rj" 900 2> "$work/out")
rc=$?
FWD=8000:8000 sh "$q/run.sh" retryable "$work/rj" 900 >> "$work/out" 2>&1
rc2=$?
rm "$work/rj/lost-interrupts"
sh "$q/run.sh" retryable "$work/rj" 900 >> "$work/out" 2>&1
rc3=$?
rm "$work/rj/stalled"
echo "03:01:02 vector 236, 138 s without a result line" > "$work/rj/kicks"
why2=$(sh "$q/run.sh" retryable "$work/rj" 900 2>> "$work/out")
rc4=$?
rm "$work/rj/kicks"
[ $rc = 0 ] && echo "$why" | grep -q "L1 lost an interrupt" &&
	[ $rc2 = 1 ] && [ $rc3 = 1 ] && [ $rc4 = 0 ] &&
	echo "$why2" | grep -q "L1 lost an interrupt and was kicked (1 time"
result $? "run.sh: a run in which L1 lost an interrupt, dumped or kicked, is made again, a plain stall is not"

# The lost interrupt, read off monitor dumps: the one a real run left
# (vector 236 in IRR, PPR 0x10, halted, IF set), the same busy (a nested
# guest that never exits), then with IF clear (a real lockup), with no
# IRR, or with the vector below the processor priority.
dump() {
	printf '%s\n' 'CPU#0' \
		"RIP=ffffffffa0217a0b RFL=$1 [-----P-] CPL=0 II=0 A20=1 SMM=0 HLT=$2" \
		'dumping local APIC state for CPU 0 ' \
		'Timer	 DCR=0x3 (divide by 16) initial_count = 243099 current_count = 0' \
		'ISR	 (none)' "IRR	 $3 " '' "APR 0x00 TPR 0x10 DFR 0x0f LDR 0x01 PPR $4" \
		> "$work/dump"
	sh "$q/run.sh" stuck-irq x "$work/dump"
}
vec=$(dump 00000206 1 236 0x10) && [ "$vec" = 236 ] &&
	[ "$(dump 00000257 0 236 0x10)" = 236 ] &&
	! dump 00000006 1 236 0x10 > /dev/null && ! dump 00000122 0 236 0x10 > /dev/null &&
	! dump 00000206 1 '(none)' 0x10 > /dev/null && ! dump 00000206 1 236 0xe0 > /dev/null &&
	dump 00000206 1 '34 236' 0xd0 > /dev/null
result $? "run.sh: a lost interrupt is read off a monitor dump, halted or busy, not off one with IF clear, no IRR or a masked vector"

# verdict.sh, on crafted runs.
run() {
	mkdir -p "$work/v/$1"
	printf '%s\n' 'KTAP version 1' '1..1' '# selftests: kvm: kvm_test' \
		'    KTAP version 1' '    1..2' '    ok 1 kvm.one' \
		"    ok 2 kvm.two$2" 'ok 1 selftests: kvm: kvm_test' "# $3" \
		'# post-checks: 0 failed' "CUBE-VMTEST-END rc=$4" > "$work/v/$1/results.log"
	echo 0 > "$work/v/$1/qemu.rc"
	: > "$work/v/$1/console.log"
}
verdict() { sh "$q/verdict.sh" "$work/v/$1" > "$work/out" 2>&1; }
run good "" "2 passed, 0 failed" 0
run rc "" "2 passed, 0 failed" 1
verdict good && ! verdict rc &&
	grep -q '^not ok - vmtest: run_tests.sh exited with status 1' "$work/out" &&
	grep -q '^2 passed, 1 failed$' "$work/out"
result $? "verdict.sh: run_tests.sh's non-zero status fails a run with no failed test"
run skip " # SKIP no widget here" "1 passed, 0 failed, 1 skipped" 0
echo 'kvm:kvm_test | kvm.two | no widget' > "$work/v/list"
SKIPS=$work/v/list sh "$q/verdict.sh" "$work/v/skip" > /dev/null 2>&1 && ! verdict skip &&
	grep -q '^not ok - vmtest: unexpected skip: kvm:kvm_test: kvm.two # SKIP no widget here' "$work/out"
result $? "verdict.sh: a skip the allowlist does not name fails the run, a listed one passes"
run stall "" "2 passed, 0 failed" 0
echo 720 > "$work/v/stall/stalled"
! verdict stall && grep -q '^not ok - vmtest: L1 stalled' "$work/out"
result $? "verdict.sh: a stalled run fails"
echo 236 > "$work/v/stall/lost-interrupts"
printf '%s\n' 'CPU#0' 'RIP=ffffffff9be17a0b RFL=00000212 [----A--] CPL=0 II=0 A20=1 SMM=0 HLT=1' \
	'dumping local APIC state for CPU 0' 'LVTT	 0x000000ec one-shot' \
	'Timer	 DCR=0x3 (divide by 16) initial_count = 0 current_count = 0' \
	'ISR	 236' > "$work/v/stall/monitor.log"
! verdict stall &&
	grep -q '^not ok - vmtest: L1 lost an interrupt: .* vector 236 pending' "$work/out" &&
	grep -q '^#   RIP=.*HLT=1' "$work/out" && grep -q '^#   ISR	 236' "$work/out"
result $? "verdict.sh: a run in which L1 lost an interrupt fails, with its registers and local APIC"
echo "03:01:02 vector 236, 138 s without a result line" > "$work/v/good/kicks"
verdict good && grep -q '^# vmtest: L1 lost an interrupt and a key press .* at: 03:01:02 vector 236' "$work/out" &&
	grep -q '^2 passed, 0 failed$' "$work/out"
result $? "verdict.sh: a run that went on after a kick passes, and says so"

# The harness itself, booting L1.
vmtest kvm
rc=$?
[ $rc = 0 ] && grep -q '^[0-9]* passed, 0 failed$' "$work/out" &&
	grep -q '^# vmtest: L1 command line: .* log_buf_len=16M' "$work/out"
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

# A WARN_ON in cube.ko's init, and a test that unloads cube.ko and leaves
# it unloaded: two failures of one run.
sed -i 's/^\(\tpr_info("loaded, api version\)/\tWARN_ON(1);\n\1/' "$work/tree/kmod/main.c"
grep -q 'WARN_ON(1);' "$work/tree/kmod/main.c" || echo "# could not inject WARN_ON"
cat > "$work/tree/selftests/module/unload_for_good.sh" <<'EOT'
#!/bin/sh
echo "KTAP version 1"
echo "1..1"
rmmod cube && echo "ok 1 cube.ko unloaded, not loaded back" ||
	echo "not ok 1 cube.ko unloaded, not loaded back"
EOT
chmod +x "$work/tree/selftests/module/unload_for_good.sh"
echo 'TEST_PROGS += unload_for_good.sh' >> "$work/tree/selftests/module/Makefile"
vmtest module:device_test,module:unload_for_good.sh
rc=$?
[ $rc != 0 ] && grep -q 'not ok - post: kernel log reports a problem' "$work/out" &&
	grep -q 'WARNING: CPU:' "$work/out"
result $? "a WARN_ON in cube.ko fails the run"
[ $rc != 0 ] && grep -q '^ *ok 1 cube.ko unloaded, not loaded back' "$work/out" &&
	grep -q 'not ok - post: cube.ko is not loaded after the tests' "$work/out"
result $? "cube.ko left unloaded by a test fails the run"

# A silent test (40 s, within its own 60 s bound) against STALL=15: L1
# sits halted, but with no interrupt left undelivered, so it is a plain
# stall, whatever IRQ_STALL is.
sed -i 's/^\tWARN_ON(1);$//' "$work/tree/kmod/main.c"
sed -i 's/ASSERT_EQ(1 + 1, 3);/sleep(40);/' "$work/tree/selftests/kvm/kvm_test.c"
STALL=15 IRQ_STALL=10 vmtest kvm:kvm_test/deliberate_failure
rc=$?
[ $rc != 0 ] && [ "$(grep -c '^not ok - vmtest: L1 stalled' "$work/out")" = 1 ] &&
	! grep -q 'once more' "$work/out" &&
	[ "$(grep -c '^# vmtest: L1 command line' "$work/out")" = 1 ] &&
	grep -q '^#   RIP=' "$work/out" &&
	grep -q 'NMI backtrace for cpu' "$work/out" &&
	grep -q '^0 passed, 1 failed$' "$work/out"
result $? "a stalled L1 is dumped and fails the run at the first stall"

exit $failed
