# SPDX-License-Identifier: GPL-2.0
# Common flags for cube's userspace programs; included by each folder's Makefile.
# $(TOP) is the source tree's root.

TOP ?= $(abspath $(dir $(lastword $(MAKEFILE_LIST)))/..)
CC ?= cc
PKG_CONFIG ?= pkg-config

CUBE_CFLAGS := -std=gnu11 -O2 -g -D_GNU_SOURCE \
	-Wall -Wextra -Werror -Wno-unused-parameter \
	-Wformat=2 -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-fno-strict-aliasing -I$(TOP)/uapi
CUBE_LDFLAGS :=

CFLAGS ?=
LDFLAGS ?=
ALL_CFLAGS = $(CUBE_CFLAGS) $(CFLAGS)
ALL_LDFLAGS = $(CUBE_LDFLAGS) $(LDFLAGS)

# What a program linked with libcube ($(TOP)/lib/libcube.a) needs after it.
LIBCUBE_LIBS = $(shell $(PKG_CONFIG) --libs json-c libmicrohttpd zlib \
	libnl-genl-3.0 libbpf libnftables) -lresolv -lpthread
