// SPDX-License-Identifier: GPL-2.0
/*
 * cube.ko: the /dev/cube misc device and module life cycle.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/uaccess.h>

#include "cube.h"

static long cube_ioctl_version(void __user *argp)
{
	struct cube_version v = {
		.api_version = CUBE_API_VERSION,
		.genl_version = CUBE_GENL_VERSION,
	};

	return copy_to_user(argp, &v, sizeof(v)) ? -EFAULT : 0;
}

static long cube_dev_ioctl(struct file *file, unsigned int cmd,
			   unsigned long arg)
{
	void __user *argp = (void __user *)arg;

	switch (cmd) {
	case CUBE_IOC_VERSION:
		return cube_ioctl_version(argp);
	default:
		return -ENOTTY;
	}
}

static const struct file_operations cube_dev_fops = {
	.owner		= THIS_MODULE,
	.unlocked_ioctl	= cube_dev_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.llseek		= noop_llseek,
};

static struct miscdevice cube_miscdev = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= CUBE_DEVICE_NAME,
	.fops	= &cube_dev_fops,
	.mode	= 0600,
};

static int __init cube_init(void)
{
	int ret;

	ret = misc_register(&cube_miscdev);
	if (ret) {
		pr_err("cannot register /dev/%s: %d\n", CUBE_DEVICE_NAME, ret);
		return ret;
	}
	pr_info("loaded, api version %d\n", CUBE_API_VERSION);
	return 0;
}

static void __exit cube_exit(void)
{
	misc_deregister(&cube_miscdev);
}

module_init(cube_init);
module_exit(cube_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("cube: disposable KVM microVM sandboxes");
