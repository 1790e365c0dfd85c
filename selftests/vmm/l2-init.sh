#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# /init of the tiny L2 guest the vmm selftests boot under cube-vmm.  The
# kernel command line's cube.test=MODE says what to do; every mode prints
# a CUBE-L2-* line on the serial console that the tests look for.
PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
# The UART's own tty: output through the 8250 driver and its interrupts.
exec < /dev/ttyS0 > /dev/ttyS0 2>&1

# Results go to the console tty and to the kernel log (which the kernel
# writes to the UART itself): a test sees them either way.
say() {
	echo "$*"
	echo "<2>$*" > /dev/kmsg
}
say "CUBE-L2-INIT"
# A helper's output, line by line, through say.
run_say() {
	"$@" 2>&1 | while read -r l; do say "$l"; done
}

mode=boot debug= flood=
for arg in $(cat /proc/cmdline); do
	case $arg in
	cube.test=*) mode=${arg#cube.test=} ;;
	cube.debug=*) debug=1 ;;
	cube.flood=*) flood=${arg#cube.flood=} ;;
	esac
done

# virtio-mmio devices come from the ACPI DSDT once virtio_mmio is loaded.
for m in virtio_ring virtio virtio_mmio vsock \
	vmw_vsock_virtio_transport_common vmw_vsock_virtio_transport \
	virtio_blk virtio-rng failover net_failover virtio_net; do
	# evil-virtq drives the devices itself through /dev/mem.
	[ "$mode" = evil ] && [ "$m" = virtio_mmio ] && break
	[ -e /lib/modules/$m.ko ] || continue	# built in
	insmod /lib/modules/$m.ko || say "CUBE-L2-MODULE-FAILED $m"
done

off() {
	poweroff -f
	sleep 5
	say "CUBE-L2-POWEROFF-FAILED"
}

case $mode in
boot)
	say "CUBE-L2-BOOT-OK"
	off
	;;
cpus)
	say "CUBE-L2-CPUS $(grep -c ^processor /proc/cpuinfo)"
	off
	;;
blk)
	i=0
	while [ ! -b /dev/vda ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
	say "CUBE-L2-BLK-SUM $(md5sum < /dev/vda | cut -d' ' -f1)"
	say "CUBE-L2-BLK-SIZE $(cat /sys/block/vda/size)"
	say "CUBE-L2-BLK-RO $(cat /sys/block/vda/ro)"
	off
	;;
rng)
	say "CUBE-L2-RNG $(cat /sys/class/misc/hw_random/rng_current 2>/dev/null)"
	head -c 64 /dev/hwrng > /tmp/r && say "CUBE-L2-RNG-READ $(wc -c < /tmp/r)"
	off
	;;
vsock)
	run_say /bin/vsock-echo 1234
	;;
kv)
	run_say /bin/vsock-kv 1235
	;;
sh)
	# vmm_disk_test drives the guest with shell lines over vsock
	run_say /bin/vsock-sh 1236
	;;
evil)
	run_say /bin/evil-virtq
	off
	;;
net)
	# The sandbox network (lib/cube_net_addr.h), by the agent's own code;
	# its resolv.conf replaces a symbolic link, never follows it.
	ip link set lo up
	mkdir -p /tmp/root/etc
	ln -s /tmp/nowhere /tmp/root/etc/resolv.conf
	run_say /bin/agent-net /tmp/root
	[ -L /tmp/root/etc/resolv.conf ] && say "CUBE-L2-RESOLV-STILL-A-LINK"
	say "CUBE-L2-RESOLV $(grep nameserver /tmp/root/etc/resolv.conf)"
	say "CUBE-L2-HOSTS $(grep -c localhost /tmp/root/etc/hosts)"
	say "CUBE-L2-NET-UP $(cat /sys/class/net/eth0/address)" \
		"$(ip -4 addr show dev eth0 | grep -o 'inet [0-9./]*')" \
		"$(ip route | grep ^default)" \
		"mtu $(cat /sys/class/net/eth0/mtu)"
	if ping -c 1 -W 20 169.254.0.22 > /dev/null 2>&1; then
		say "CUBE-L2-NET-PING-OK"
	else
		say "CUBE-L2-NET-PING-FAILED"
	fi
	run_say /bin/net-echo 7 169.254.0.22 9999 5001
	;;
netdevs)
	run_say /bin/agent-net
	say "CUBE-L2-NETDEVS $(ls /sys/class/net | tr '\n' ' ')"
	while :; do sleep 5; done
	;;
flood)
	# cube.flood=N lines of about 80 bytes on the console, as fast as the
	# guest's kernel writes them (its console driver polls the UART)
	line=CUBE-L2-FLOOD-0123456789abcdef0123456789abcdef0123456789abc
	i=0
	while [ $i -lt "${flood:-64}" ]; do
		echo "<2>$line" > /dev/kmsg
		i=$((i + 1))
	done
	echo "<2>CUBE-L2-FLOOD-DONE" > /dev/kmsg
	off
	;;
reboot)
	say "CUBE-L2-REBOOT"
	reboot -f
	;;
*)
	say "CUBE-L2-HANG"
	while :; do
		sleep 5
		if [ -n "$debug" ]; then
			for f in /proc/interrupts /proc/tty/driver/serial; do
				grep -E '^ *4:|ttyS|uart:16' $f | while read -r l; do
					echo "<2>$l" > /dev/kmsg
				done
			done
		fi
	done
	;;
esac
