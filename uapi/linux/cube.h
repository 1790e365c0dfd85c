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

/* ioctls on /dev/cube */
#define CUBE_IOC_VERSION	_IOR(CUBE_IOCTL_MAGIC, 0x00, struct cube_version)

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

#endif /* _UAPI_LINUX_CUBE_H */
