# SPDX-License-Identifier: GPL-2.0
#
# cube: top-level build.
#
#   make                 module, userspace programs, selftests
#   make demo            the main job (see README.md)
#   make benchmarks      the benchmarks (natively on a KVM host)
#   make check           native unit tests, then the selftests in the VM harness
#                        (KVER's kernel), and cube.ko's groups on 6.12 (KVER2)
#   make check NATIVE=1  native unit tests, then the selftests natively (root, real KVM)
#   make fuzz [FUZZ=name] [FUZZ_SECONDS=n]  the parsers' libFuzzer harnesses,
#                        n seconds each (default 300); make check runs them briefly
#   make vmtest [T=name] the selftests (or one test/group) in the VM harness
#   make vmshell         an interactive shell in the same L1 machine
#   make check-debug [T=name]  the selftests in the VM harness on a debug L1
#                        kernel (KASAN, UBSAN, lockdep, kmemleak), built once
#   make install         cube.ko, the programs and the guest files (DESTDIR, PREFIX)
#   make clean           back to the tree as cloned
#
# KVER: the Debian cloud kernel the VM harness boots as L1, whose modules the
# guest initramfs carries, and which cube.ko is built for in the harness.
# Default: the one the package list installs (scripts/kver); name another
# with KVER=<version>, e.g. make check KVER=$$(scripts/kver 6.12).
#
# KDIR: the kernel build tree for the native cube.ko.  Default: KVER's when
# KVER is named, else the running kernel's when it exists, else KVER's.

TOP := $(CURDIR)
export TOP

RUNNING_KDIR := /lib/modules/$(shell uname -r)/build
KDIR_FOR_KVER := $(if $(filter command line environment%,$(origin KVER)),1)
KVER ?= $(shell KVER= $(TOP)/scripts/kver)
VM_KVER := $(KVER)
VM_KDIR := /lib/modules/$(VM_KVER)/build
export KVER VM_KVER VM_KDIR

KDIR ?= $(if $(KDIR_FOR_KVER),$(VM_KDIR),$(if $(wildcard $(RUNNING_KDIR)/Makefile),$(RUNNING_KDIR),$(VM_KDIR)))
export KDIR

USER_DIRS := lib e2b cubectl guest vmm selftests bench

.PHONY: all module modules userspace $(USER_DIRS) check unit fuzz fuzz-short vmtest vmshell \
	demo demo-install benchmarks vmtest-kver2 vmtest-harness e2b-sdk guest-kernel check-debug \
	install install-dkms \
	clean help

all: module userspace

module modules:
	@test -f $(KDIR)/Makefile || { echo "cube: no kernel build tree at '$(KDIR)' (install linux-headers-cloud-amd64 or set KDIR)" >&2; exit 1; }
	$(MAKE) -C $(KDIR) M=$(TOP) W=1 modules

userspace: $(USER_DIRS)

$(USER_DIRS):
	$(MAKE) -C $@

# libcube first: the programs and the tests link it; then the E2B API
# (e2b/, on libcube), which cubed, cubectl and the e2b tests link.
$(filter-out lib,$(USER_DIRS)): lib
cubectl selftests: e2b

# Native unit tests of userspace code and of the uapi header.
unit: userspace
	$(MAKE) -C selftests unit

# Coverage-guided fuzzing of the parsers (fuzz/, Documentation/dev-tools/fuzzing.rst),
# with ASan and UBSan: each harness for FUZZ_SECONDS; make check runs each
# for FUZZ_SHORT_SECONDS (20 s), natively.
fuzz:
	$(MAKE) -C fuzz run

fuzz-short:
	$(MAKE) -C fuzz short

ifeq ($(NATIVE),1)
check: unit fuzz-short all
	grep -q '^cube ' /proc/modules || insmod kmod/cube.ko
	CUBE_KO=$(TOP)/kmod/cube.ko CUBE_L2_KERNEL=$${CUBE_L2_KERNEL:-/boot/vmlinuz-$(KVER)} \
		$(MAKE) -C selftests run_tests T='$(T)'
else
check: unit fuzz-short vmtest vmtest-kver2 vmtest-harness e2b-sdk
endif

# The second kernel: the groups that exercise cube.ko, on Debian 12's 6.12
# cloud kernel (scripts/install-deps installs it), so the module is tested
# on both kernels it supports.  KVER2=<version> names another; KVER2=none
# leaves it out.
KVER2 ?= $(shell KVER= $(TOP)/scripts/kver 6.12)
KMOD_GROUPS := kvm,module,memory,sandbox,netlink,net
vmtest-kver2:
	@test -n "$(KVER2)" || { echo "make check: no 6.12 kernel installed (scripts/install-deps installs it; KVER2=none to leave it out)" >&2; exit 1; }
	$(if $(filter none,$(KVER2)),@echo "vmtest-kver2: left out (KVER2=none)",\
	$(MAKE) -C selftests/qemu run KVER=$(KVER2) VM_KVER=$(KVER2) \
		VM_KDIR=/lib/modules/$(KVER2)/build \
		VMTEST_DIR=$(TOP)/build/vmtest-$(KVER2) T='$(KMOD_GROUPS)')

# The unmodified E2B SDK (npm "e2b", under node on this machine) against
# cubed in L1, through forwarded ports.
e2b-sdk:
	selftests/e2b/run_sdk_test.sh

# The harness itself: it must pass good tests and fail bad ones.
vmtest-harness:
	selftests/qemu/harness_test.sh

# The minimal guest kernel agent/guest_test boots (bzImage-cube), built
# first: guest/build-kernel.sh caches it by its configuration and source
# (build/guest/kernel-<hash>/), so only a first run builds it.
# GUEST_KERNEL=0 leaves it out (the harness's own test, which does not
# run that test).
vmtest: $(if $(filter 0,$(GUEST_KERNEL)),,guest-kernel)
	$(MAKE) -C selftests/qemu run T='$(T)'

guest-kernel:
	$(MAKE) -C guest kernel JOBS=$$(nproc)

vmshell:
	$(MAKE) -C selftests/qemu shell

# The selftests on an L1 kernel with the kernel's checkers on: Debian's
# linux-source-6.1 with KASAN, UBSAN, lockdep, DEBUG_ATOMIC_SLEEP and
# kmemleak (scripts/build-debug-kernel: built once per configuration and
# source version, in build/debug-kernel/<hash>/).  L2 guests keep KVER's
# kernel.  Several times slower than make vmtest under TCG: larger bounds
# (DEBUG_TIMEOUT for the run, the program and test case bounds through
# L1_APPEND, STALL above them) and more memory for the shadow and lockdep.
# Not part of make check.
DEBUG_TIMEOUT ?= 14400
DEBUG_MEM ?= 4096
DEBUG_KERNEL_DIR := $(TOP)/build/debug-kernel
check-debug:
	@mkdir -p $(DEBUG_KERNEL_DIR)
	scripts/build-debug-kernel > $(DEBUG_KERNEL_DIR)/current
	dir=$$(cat $(DEBUG_KERNEL_DIR)/current) && kv=$$(cat $$dir/kver) && \
	$(MAKE) -C selftests/qemu run VM_KVER=$$kv VM_KDIR=$$dir/build \
		VM_KERNEL=$$dir/vmlinuz VM_MODROOT=$$dir/root \
		VMTEST_DIR=$(TOP)/build/vmtest-debug T='$(T)' \
		TIMEOUT=$(DEBUG_TIMEOUT) MEM=$(DEBUG_MEM) STALL=$${STALL:-2700} \
		L1_APPEND="cube.prog_timeout=2400 cube.test_timeout=900 $(L1_APPEND)"

# The main job (scripts/demo.sh): a template, a sandbox made from it, and
# python3 -c 'print(2+2)' run in it with cubectl.  Natively where this host
# has hardware KVM and loads modules (or NATIVE=1), else in the VM harness.
NATIVE_OK := $(shell grep -qwE 'vmx|svm' /proc/cpuinfo 2>/dev/null && \
	[ -e /proc/modules ] && [ -f $(RUNNING_KDIR)/Makefile ] && echo 1)
DEMO_NATIVE := $(or $(NATIVE),$(NATIVE_OK),0)
DEMO_DIR := $(TOP)/build/demo

# Everything the demo uses, into INSTALL_PATH/demo/ (harness layout).
demo-install: userspace
	@test -n "$(INSTALL_PATH)" || { echo "INSTALL_PATH not set" >&2; exit 1; }
	$(MAKE) -C guest rootfs
	mkdir -p $(INSTALL_PATH)/demo
	cp scripts/demo.sh cubectl/cubectl cubectl/cubed cubectl/cube-shim cubectl/cube-shim-net vmm/cube-vmm $(INSTALL_PATH)/demo/
	cp -L $(GUEST_OUT)/initramfs.cpio.gz $(INSTALL_PATH)/demo/
	echo demo:demo.sh >> $(INSTALL_PATH)/kselftest-list.txt
	realpath $(GUEST_OUT)/rootfs.ext4 >> $(INSTALL_PATH)/disks.txt

# The benchmarks (bench/): natively where this host can, else in the VM
# harness (where times are emulation's, counts still hold).
ifeq ($(DEMO_NATIVE),1)
benchmarks: all
	grep -q '^cube ' /proc/modules || insmod kmod/cube.ko
	rm -rf $(TOP)/build/bench-native && $(MAKE) --no-print-directory demo-install INSTALL_PATH=$(TOP)/build/bench-native
	ln -sf $$(realpath $(GUEST_OUT)/rootfs.ext4) $(TOP)/build/bench-native/demo/rootfs.ext4
	{ bench/clone_bench; \
	  CUBE_KERNEL=$${CUBE_KERNEL:-/boot/vmlinuz-$(KVER)} bench/sandbox_bench.sh $(TOP)/build/bench-native/demo; \
	  bench/vmm_bench -k $${CUBE_L2_KERNEL:-/boot/vmlinuz-$(KVER)}; \
	  bench/rollback_bench -k $${CUBE_L2_KERNEL:-/boot/vmlinuz-$(KVER)}; \
	  for f in latency_sdk:pool=0 latency_sdk:pool=1 net_setup net_create net_data; do \
		echo "bench: missing=$$f reason=\"in the test machine only (bench/sdk_bench.sh; make vmtest T=bench:net_bench.sh)\""; \
	  done; } 2>&1 | tee $(TOP)/build/bench-native/run.log
	bench/report.sh $(TOP)/build/bench-native/run.log kvm
else
# Three L1 boots: the bench group (TIMEOUT bounds it whatever happens; STALL
# under it, above sandbox_bench.sh's own 1320 s deadline, which ends a hung
# run cleanly), then the E2B SDK's latency with a warm pool and without one
# (each bounded by BENCH_SDK_TIMEOUT); the figures of all go to
# build/bench/<date>-<commit>/.  The environment's BENCH_* settings reach
# L1's benchmarks through its command line (cube.bench_*, commas for
# spaces) and the SDK's directly.  38.8 minutes on a fresh clone on a
# 2-core build machine, building included (2026-12-07;
# Documentation/admin-guide.rst).
BENCH_VMTEST_DIR := $(TOP)/build/vmtest-bench
benchmarks:
	st=0; app=$$(env | awk -F= '/^BENCH_/ && $$1 !~ /TIMEOUT$$/ { \
		v = substr($$0, length($$1) + 2); gsub(/ /, ",", v); \
		printf " cube.bench_%s=%s", tolower(substr($$1, 7)), v }'); \
	$(MAKE) -C selftests/qemu run T=bench MEM=6144 TIMEOUT=$${BENCH_TIMEOUT:-1800} STALL=1500 \
		VMTEST_DIR=$(BENCH_VMTEST_DIR) L1_APPEND="$${L1_APPEND:-}$$app" || st=$$?; \
	cp $(BENCH_VMTEST_DIR)/results.log $(TOP)/build/bench-run.log; \
	{ TIMEOUT=$${BENCH_SDK_TIMEOUT:-900} bench/sdk_bench.sh 2>&1 || \
		echo "# make benchmarks: bench/sdk_bench.sh failed"; } | tee -a $(TOP)/build/bench-run.log; \
	grep -q '^# make benchmarks: bench/sdk_bench.sh failed' $(TOP)/build/bench-run.log && st=1; \
	bench/report.sh $(TOP)/build/bench-run.log emulated; exit $$st
endif

ifeq ($(DEMO_NATIVE),1)
demo: all
	grep -q '^cube ' /proc/modules || insmod kmod/cube.ko
	rm -rf $(DEMO_DIR) && $(MAKE) --no-print-directory demo-install INSTALL_PATH=$(DEMO_DIR)
	ln -sf $$(realpath $(GUEST_OUT)/rootfs.ext4) $(DEMO_DIR)/demo/rootfs.ext4
	CUBE_KERNEL=$${CUBE_KERNEL:-/boot/vmlinuz-$(KVER)} $(DEMO_DIR)/demo/demo.sh
else
demo:
	$(MAKE) -C selftests/qemu run T=demo
endif

DESTDIR ?=
PREFIX ?= /usr/local
GUEST_OUT := $(TOP)/build/guest
# The module's version, as DKMS registers it.
CUBE_VERSION ?= 0.1
DKMS_SRC := $(DESTDIR)/usr/src/cube-$(CUBE_VERSION)
# Installs the module, the programs, and the guest's initramfs and root file
# system (built by `make`, see guest/Makefile).  With DKMS on the host the
# module's sources go to /usr/src/cube-$(CUBE_VERSION) and DKMS builds
# cube.ko for every installed kernel, and again for each kernel installed
# later; without it, cube.ko is installed for KDIR's kernel only.
install: all
	if command -v dkms >/dev/null; then \
		$(MAKE) --no-print-directory install-dkms; \
	else \
		$(MAKE) -C $(KDIR) M=$(TOP) INSTALL_MOD_PATH=$(DESTDIR) modules_install; \
	fi
	$(MAKE) -C cubectl install DESTDIR=$(DESTDIR) PREFIX=$(PREFIX)
	install -D -m 0755 vmm/cube-vmm $(DESTDIR)$(PREFIX)/sbin/cube-vmm
	install -D -m 0644 $(GUEST_OUT)/initramfs.cpio.gz $(DESTDIR)$(PREFIX)/share/cube/guest/initramfs.cpio.gz
	if [ -e $(GUEST_OUT)/rootfs.ext4 ]; then \
		install -D -m 0644 $(GUEST_OUT)/rootfs.ext4 $(DESTDIR)$(PREFIX)/share/cube/guest/rootfs.ext4; fi
	if [ -e $(GUEST_OUT)/bzImage-cube ]; then \
		install -D -m 0644 $(GUEST_OUT)/bzImage-cube $(DESTDIR)$(PREFIX)/share/cube/guest/bzImage; fi
	install -D -m 0644 kmod/99-cube.rules $(DESTDIR)$(PREFIX)/share/cube/99-cube.rules

# The module's sources for DKMS; registered, built and installed for every
# kernel that has its headers, unless DESTDIR stages a package.
install-dkms:
	rm -rf $(DKMS_SRC)
	mkdir -p $(DKMS_SRC)/kmod $(DKMS_SRC)/uapi/linux
	install -m 0644 Kbuild $(DKMS_SRC)/Kbuild
	install -m 0644 kmod/Kbuild kmod/*.c kmod/*.h $(DKMS_SRC)/kmod/
	install -m 0644 uapi/linux/cube.h $(DKMS_SRC)/uapi/linux/
	sed 's/@CUBE_VERSION@/$(CUBE_VERSION)/' dkms.conf > $(DKMS_SRC)/dkms.conf
	if [ -z "$(DESTDIR)" ]; then \
		dkms remove -m cube -v $(CUBE_VERSION) --all >/dev/null 2>&1 || true; \
		dkms add -m cube -v $(CUBE_VERSION) || exit 1; \
		for k in $$(ls /lib/modules); do \
			[ -e /lib/modules/$$k/build/Makefile ] || continue; \
			dkms install -m cube -v $(CUBE_VERSION) -k $$k || exit 1; \
		done; \
	fi

help:
	@sed -n '3,19p' Makefile | sed 's/^# \{0,1\}//'

clean:
	-$(MAKE) -C $(KDIR) M=$(TOP) clean >/dev/null 2>&1
	for d in $(USER_DIRS) selftests/qemu; do $(MAKE) -C $$d clean; done
	rm -rf build
