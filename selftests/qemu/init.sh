#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# /init of the L1 test machine.  Kernel command line:
#   cube.mode=test|shell   run the selftests, or give a shell on the console
#   cube.filter=NAME       only these tests (see selftests/run_tests.sh)
#   cube.net=1             bring up eth0 (QEMU user net, for forwarded ports)
#   cube.prog_timeout=S    bound each program by S seconds (run_tests.sh -T)
#   cube.test_timeout=S    bound each C test case by S seconds (a slow L1:
#                          make check-debug)
#   cube.fuzz_seed=N       seed the fuzz tests (CUBE_FUZZ_SEED), to replay
#                          a failed run's seed
#   cube.fuzz_seconds=S    run the fuzz tests S seconds (CUBE_FUZZ_SECONDS)
# Results go to /dev/ttyS1 (the host's results file), the console to ttyS0.

PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH HOME=/root TMPDIR=/tmp CUBE_KO=/lib/cube/cube.ko

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
# /tmp holds the tests' template snapshots and rootfs copies: most of L1
# (a tmpfs takes memory only as it fills)
mount -t tmpfs -o mode=1777,size=75% tmpfs /tmp
mount -t tmpfs tmpfs /run
mkdir -p /dev/pts /dev/shm /sys/fs/cgroup
mount -t devpts devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
mount -t cgroup2 cgroup2 /sys/fs/cgroup
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t bpf bpf /sys/fs/bpf 2>/dev/null
hostname l1

mode=test filter= net=0 ptimeout=
for arg in $(cat /proc/cmdline); do
	case $arg in
	cube.mode=*) mode=${arg#cube.mode=} ;;
	cube.filter=*) filter=${arg#cube.filter=} ;;
	cube.net=*) net=${arg#cube.net=} ;;
	cube.prog_timeout=*) ptimeout="-T ${arg#cube.prog_timeout=}" ;;
	cube.test_timeout=*) export CUBE_TEST_TIMEOUT=${arg#cube.test_timeout=} ;;
	cube.fuzz_seed=*) export CUBE_FUZZ_SEED=${arg#cube.fuzz_seed=} ;;
	cube.fuzz_seconds=*) export CUBE_FUZZ_SECONDS=${arg#cube.fuzz_seconds=} ;;
	esac
done

res=/dev/ttyS1
[ "$mode" = shell ] && res=/dev/console
say() { echo "$*" > $res; }
# A setup failure is a test failure: report it in KTAP and go on.
post_fail=0
post() { say "not ok - post: $*"; post_fail=$((post_fail + 1)); }

# The kernel log is checked from here on (boot-time notices are not ours).
echo "cube-vmtest: start" > /dev/kmsg
# A kernel with kmemleak (make check-debug): what boot left unreferenced is
# not ours either; what the run leaves is looked for at the end.
kmemleak=/sys/kernel/debug/kmemleak
if [ -e $kmemleak ]; then
	echo clear > $kmemleak || post "kmemleak is off (its log may say why)"
fi
# Modules the kernel asks for (veth, tun, nf_tables, ...) come from busybox.
echo /bin/modprobe > /proc/sys/kernel/modprobe
# /dev/net/tun appears when tun loads (no udev here to make static nodes).
modprobe tun || post "cannot load tun"
modprobe kvm_amd || post "cannot load kvm_amd"
[ -c /dev/kvm ] || post "no /dev/kvm"

if [ "$net" = 1 ]; then
	modprobe virtio_pci
	modprobe virtio_net
	i=0
	while [ ! -e /sys/class/net/eth0 ] && [ $i -lt 50 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	ip link set lo up
	ip link set eth0 up && ip addr add 10.0.2.15/24 dev eth0 &&
		ip route add default via 10.0.2.2 || post "cannot set up eth0"
else
	ip link set lo up
fi

# Disks from the tests' TEST_DISKS: /dev/vda, vdb, ... in the listed order,
# linked as /dev/disk/cube/<image file name>.
if [ -s /selftests/disks.txt ]; then
	modprobe virtio_pci
	modprobe virtio_blk
	mkdir -p /dev/disk/cube
	set -- a b c d e f g h
	while read -r img; do
		[ -n "$img" ] || continue
		dev=/dev/vd$1
		shift
		i=0
		while [ ! -b $dev ] && [ $i -lt 50 ]; do
			sleep 0.1
			i=$((i + 1))
		done
		[ -b $dev ] || post "disk $img did not appear as $dev"
		ln -sf $dev "/dev/disk/cube/${img##*/}"
	done < /selftests/disks.txt
fi

# The L2 guest kernel: the same Debian cloud kernel L1 runs.
[ -r /boot/vmlinuz ] || post "no guest kernel at /boot/vmlinuz"

insmod "$CUBE_KO" || post "cannot load cube.ko"

if [ "$mode" = shell ]; then
	echo "cube L1 shell: tests in /selftests (run_tests.sh -d /selftests [-t NAME]); exit powers off"
	setsid cttyhack sh -l
	poweroff -f
fi

cd /selftests
if [ -n "$filter" ]; then
	./run_tests.sh -d /selftests $ptimeout -t "$filter" > $res 2>&1
else
	./run_tests.sh -d /selftests $ptimeout > $res 2>&1
fi
rc=$?

# Post-run checks: the module must still be loaded (a test that unloads it
# loads it back), then unload and leave nothing behind; the kernel log must
# show no oops, BUG, WARN or KASAN report and must still hold the start of
# the run (selftests/qemu/logcheck.sh).
# kmemleak names a leak's allocation site only while the code is loaded:
# a scan now lists what cube.ko has already lost, with its symbols.
: > /tmp/kmemleak-loaded.txt
if [ -e $kmemleak ] && grep -q '^cube ' /proc/modules; then
	echo scan > $kmemleak 2>/dev/null && cat $kmemleak > /tmp/kmemleak-loaded.txt
fi
if grep -q '^cube ' /proc/modules; then
	refs=$(cat /sys/module/cube/refcnt 2>/dev/null)
	[ "$refs" = 0 ] || post "cube.ko refcount is $refs after the tests"
	rmmod cube || post "rmmod cube failed"
	[ -e /dev/cube ] && post "/dev/cube still exists after rmmod"
	[ -e /sys/module/cube ] && post "/sys/module/cube still exists after rmmod"
else
	post "cube.ko is not loaded after the tests: a test unloaded it and did not load it back, so its unload was not checked here"
fi
# kmemleak: an object the run allocated and nothing references any more
# is a leak.  Two scans a few seconds apart, as an object is reported only
# once it has been unreferenced for a while (min age 5 s).
if [ -e $kmemleak ]; then
	sleep 6
	if echo scan > $kmemleak && sleep 6 && echo scan > $kmemleak; then
		cat $kmemleak > /tmp/kmemleak.txt
		n=$(grep -c '^unreferenced object' /tmp/kmemleak.txt)
		if [ "$n" -gt 0 ]; then
			post "kmemleak: $n suspected memory leaks:"
			head -n 150 /tmp/kmemleak.txt | sed 's/^/# kmemleak: /' > $res
			if [ -s /tmp/kmemleak-loaded.txt ]; then
				say "# kmemleak, while cube.ko was loaded:"
				head -n 150 /tmp/kmemleak-loaded.txt |
					sed 's/^/# kmemleak: /' > $res
			fi
		fi
	else
		post "kmemleak is off, the run's leaks were not looked for (its log may say why)"
	fi
fi
dmesg > /tmp/dmesg.txt
sh /lib/cube/logcheck.sh < /tmp/dmesg.txt > /tmp/logcheck.txt
case $? in
0)
	;;
2)
	post "kernel log lost the start of the run (no 'cube-vmtest: start'):"
	cat /tmp/logcheck.txt > $res
	;;
*)
	post "kernel log reports a problem:"
	cat /tmp/logcheck.txt > $res
	;;
esac
say "# post-checks: $post_fail failed"
# run.sh compares it with the run's length by the host's clock (clockjump.sh)
say "# cube-vmtest: L1 uptime $(cut -d. -f1 /proc/uptime) s"
say "CUBE-VMTEST-END rc=$rc"
sync
poweroff -f
