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

struct cube_stats cube_stats;

/**
 * cube_check_leaks() - report every module-wide counter that is not zero
 *
 * Called at module exit, when every object must be gone.  The VM harness
 * treats a "cube: leak:" line as a failure.
 */
void cube_check_leaks(void)
{
	static const struct {
		const char *name;
		atomic64_t *v;
	} c[] = {
		{ "sandboxes", &cube_stats.sandboxes },
		{ "pools", &cube_stats.pools },
		{ "snapshots", &cube_stats.snapshots },
		{ "clones", &cube_stats.clones },
		{ "shared_pages", &cube_stats.shared_pages },
		{ "private_pages", &cube_stats.private_pages },
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(c); i++) {
		s64 n = atomic64_read(c[i].v);

		if (n)
			pr_err("leak: %s %lld\n", c[i].name, n);
	}
}

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

	if (_IOC_TYPE(cmd) != CUBE_IOCTL_MAGIC)
		return -ENOTTY;
	if (cmd == CUBE_IOC_VERSION)
		return cube_ioctl_version(argp);
	/*
	 * Each subsystem owns a range of ioctl numbers and checks the
	 * whole command (size and direction) itself.
	 */
	if (_IOC_NR(cmd) >= 0x10 && _IOC_NR(cmd) <= 0x2f)
		return cube_sandbox_dev_ioctl(file, cmd, arg);
	if (_IOC_NR(cmd) >= 0x30 && _IOC_NR(cmd) <= 0x4f)
		return cube_mem_dev_ioctl(file, cmd, arg);
	return -ENOTTY;
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

	ret = cube_mem_init();
	if (ret)
		return ret;
	ret = cube_sandbox_init();
	if (ret)
		goto err_mem;
	ret = cube_genl_init();
	if (ret) {
		pr_err("cannot register the %s genl family: %d\n",
		       CUBE_GENL_NAME, ret);
		goto err_sandbox;
	}
	ret = misc_register(&cube_miscdev);
	if (ret) {
		pr_err("cannot register /dev/%s: %d\n", CUBE_DEVICE_NAME, ret);
		goto err_genl;
	}
	pr_info("loaded, api version %d\n", CUBE_API_VERSION);
	return 0;

err_genl:
	cube_genl_exit();
err_sandbox:
	cube_sandbox_exit();
err_mem:
	cube_mem_exit();
	return ret;
}

static void __exit cube_exit(void)
{
	misc_deregister(&cube_miscdev);
	cube_genl_exit();
	cube_sandbox_exit();
	cube_mem_exit();
	cube_check_leaks();
}

module_init(cube_init);
module_exit(cube_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("cube: disposable KVM microVM sandboxes");
