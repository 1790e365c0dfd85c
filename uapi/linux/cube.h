/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * cube: disposable KVM microVM sandboxes.
 *
 * This is the one header shared by the cube kernel module (cube.ko), the
 * VMM, cubectl and cubed.  It defines the /dev/cube ioctl interface and the
 * "cube" generic-netlink family.  See Documentation/userspace-api/cube.rst.
 */
#ifndef _UAPI_LINUX_CUBE_H
#define _UAPI_LINUX_CUBE_H

#include <linux/types.h>
#include <linux/ioctl.h>

/**
 * DOC: versioning
 *
 * CUBE_API_VERSION is bumped whenever the ioctl or netlink interface gains
 * something a client may want to test for.  Existing ioctl numbers, structure
 * layouts and netlink attribute numbers never change meaning; structures only
 * grow at their end and carry their own size.
 */
#define CUBE_API_VERSION	1

/** define CUBE_DEVICE_NAME - name of the misc device node under /dev */
#define CUBE_DEVICE_NAME	"cube"

/** define CUBE_IOCTL_MAGIC - ioctl type byte of every /dev/cube ioctl */
#define CUBE_IOCTL_MAGIC	0xCB

/**
 * struct cube_version - answer of %CUBE_IOC_VERSION
 * @api_version: the module's %CUBE_API_VERSION
 * @genl_version: the module's %CUBE_GENL_VERSION
 * @reserved: zero
 */
struct cube_version {
	__u32 api_version;
	__u32 genl_version;
	__u64 reserved;
};

/*
 * ioctls on /dev/cube.  Numbers 0x00-0x0f: the device itself;
 * 0x10-0x2f: sandboxes and pools; 0x30-0x4f: snapshots and clones.
 */
#define CUBE_IOC_VERSION	_IOR(CUBE_IOCTL_MAGIC, 0x00, struct cube_version)

/* --- sandboxes and pools (0x10-0x2f) --- */

/* --- snapshots and clones (0x30-0x4f) --- */

/**
 * DOC: generic netlink
 *
 * The family is named %CUBE_GENL_NAME; resolve its id with the nlctrl
 * CTRL_CMD_GETFAMILY request.  Its multicast group %CUBE_GENL_MCGRP_EVENTS
 * carries sandbox and pool events.
 */
#define CUBE_GENL_NAME		"cube"
#define CUBE_GENL_VERSION	1
#define CUBE_GENL_MCGRP_EVENTS	"events"

/**
 * enum cube_cmd - generic-netlink commands of the "cube" family
 * @CUBE_CMD_UNSPEC: unused
 * @CUBE_CMD_GET_STATS: module-wide counters, in a %CUBE_A_STATS nest
 * @CUBE_CMD_GET_SANDBOX: one sandbox (doit) or all of them (dumpit)
 * @CUBE_CMD_KILL_SANDBOX: ask a sandbox's owner to stop, then force it
 * @CUBE_CMD_GET_SNAPSHOT: one snapshot (doit) or all of them (dumpit)
 * @CUBE_CMD_DEL_SNAPSHOT: delete a snapshot
 * @CUBE_CMD_NEW_POOL: create a pool
 * @CUBE_CMD_GET_POOL: one pool (doit) or all of them (dumpit)
 * @CUBE_CMD_TAKE_POOL: claim one ready sandbox from a pool
 * @CUBE_CMD_SET_POOL: change a pool's watermarks
 * @CUBE_CMD_DEL_POOL: destroy a pool
 * @CUBE_CMD_EVENT_SANDBOX_NEW: event: a sandbox was created
 * @CUBE_CMD_EVENT_SANDBOX_STATE: event: a sandbox changed state
 * @CUBE_CMD_EVENT_SANDBOX_EXIT: event: a sandbox exited (with its reason)
 * @CUBE_CMD_EVENT_POOL_LOW: event: a pool fell below its low watermark
 */
enum cube_cmd {
	CUBE_CMD_UNSPEC,
	CUBE_CMD_GET_STATS,
	CUBE_CMD_GET_SANDBOX,
	CUBE_CMD_KILL_SANDBOX,
	CUBE_CMD_GET_SNAPSHOT,
	CUBE_CMD_DEL_SNAPSHOT,
	CUBE_CMD_NEW_POOL,
	CUBE_CMD_GET_POOL,
	CUBE_CMD_TAKE_POOL,
	CUBE_CMD_SET_POOL,
	CUBE_CMD_DEL_POOL,
	CUBE_CMD_EVENT_SANDBOX_NEW,
	CUBE_CMD_EVENT_SANDBOX_STATE,
	CUBE_CMD_EVENT_SANDBOX_EXIT,
	CUBE_CMD_EVENT_POOL_LOW,
	__CUBE_CMD_MAX
};
#define CUBE_CMD_MAX (__CUBE_CMD_MAX - 1)

/**
 * enum cube_attr - top-level attributes; each object travels in its own nest
 * @CUBE_A_UNSPEC: unused
 * @CUBE_A_STATS: nest of &enum cube_stats_attr
 * @CUBE_A_SANDBOX: nest of &enum cube_sandbox_attr
 * @CUBE_A_SNAPSHOT: nest of &enum cube_snapshot_attr
 * @CUBE_A_POOL: nest of &enum cube_pool_attr
 */
enum cube_attr {
	CUBE_A_UNSPEC,
	CUBE_A_STATS,
	CUBE_A_SANDBOX,
	CUBE_A_SNAPSHOT,
	CUBE_A_POOL,
	__CUBE_A_MAX
};
#define CUBE_A_MAX (__CUBE_A_MAX - 1)

/* --- sandbox, pool and stats attributes --- */

/* --- snapshot attributes --- */

#endif /* _UAPI_LINUX_CUBE_H */
