# SPDX-License-Identifier: GPL-2.0
# Shared rules for one selftest group (one folder of selftests/).
#
# A group's Makefile sets, then includes this file:
#   TEST_GEN_PROGS   C test programs built from <name>.c (KTAP output)
#   TEST_PROGS       test scripts run as they are (KTAP output)
#   TEST_FILES       extra files installed beside the tests
#   TEST_DISKS       image files the VM harness attaches to L1 as read-only
#                    virtio-blk disks, seen there as /dev/disk/cube/<file name>
#   TEST_UNIT_PROGS  native unit tests run by `make check` on the build host
#   LDLIBS, EXTRA_CFLAGS, LOCAL_HDRS as needed
#   CUSTOM_PROGS     programs among the above built by the group's own rules
# and may add its own rules for programs made of several files.

SELFTESTS := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
TOP ?= $(abspath $(SELFTESTS)/..)
include $(TOP)/scripts/userspace.mk

GROUP := $(notdir $(CURDIR))
TEST_GEN_PROGS ?=
TEST_PROGS ?=
TEST_FILES ?=
TEST_DISKS ?=
TEST_UNIT_PROGS ?=
CUSTOM_PROGS ?=
LOCAL_HDRS += $(SELFTESTS)/lib/cube_test.h $(TOP)/uapi/linux/cube.h
TEST_CFLAGS = $(ALL_CFLAGS) -I$(SELFTESTS)/lib $(EXTRA_CFLAGS)

.PHONY: all install run_tests unit clean
.DEFAULT_GOAL := all

all: $(TEST_GEN_PROGS) $(TEST_UNIT_PROGS)

$(filter-out $(CUSTOM_PROGS),$(TEST_GEN_PROGS) $(TEST_UNIT_PROGS)): %: %.c $(LOCAL_HDRS)
	$(CC) $(TEST_CFLAGS) -o $@ $(filter %.c %.o,$^) $(ALL_LDFLAGS) $(LDLIBS)

# install INSTALL_PATH=DIR: the group's tests into DIR/<group>/, listed in
# DIR/kselftest-list.txt as "<group>:<program>".
install: all
	@test -n "$(INSTALL_PATH)" || { echo "INSTALL_PATH not set" >&2; exit 1; }
	mkdir -p $(INSTALL_PATH)/$(GROUP)
	$(if $(strip $(TEST_GEN_PROGS) $(TEST_PROGS) $(TEST_FILES)),cp -a $(TEST_GEN_PROGS) $(TEST_PROGS) $(TEST_FILES) $(INSTALL_PATH)/$(GROUP)/)
	for p in $(TEST_GEN_PROGS) $(TEST_PROGS); do echo "$(GROUP):$$(basename $$p)"; done >> $(INSTALL_PATH)/kselftest-list.txt
	for d in $(TEST_DISKS); do echo "$$(realpath $$d)"; done >> $(INSTALL_PATH)/disks.txt

run_tests: all
	@$(SELFTESTS)/run_tests.sh -d $(CURDIR) $(foreach p,$(TEST_GEN_PROGS) $(TEST_PROGS),$(GROUP):$(notdir $(p)))

unit: all
	@set -e; for p in $(TEST_UNIT_PROGS); do echo "# unit: $(GROUP)/$$p"; ./$$p; done

clean:
	rm -f $(TEST_GEN_PROGS) $(TEST_UNIT_PROGS) *.o $(EXTRA_CLEAN)
