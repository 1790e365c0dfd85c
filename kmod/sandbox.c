// SPDX-License-Identifier: GPL-2.0
/*
 * cube.ko: sandboxes.
 *
 * A sandbox is an anon-inode fd owned by the VMM that created it.  It ties
 * together the resources of one microVM (its KVM VM file, network
 * namespace, eBPF links and memory clone) so that they are all dropped when
 * the fd goes away, which at the latest happens when the VMM dies.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/anon_inodes.h>
#include <linux/bpf.h>
#include <linux/cred.h>
#include <linux/ctype.h>
#include <linux/file.h>
#include <linux/kvm_host.h>
#include <linux/magic.h>
#include <linux/pid.h>
#include <linux/poll.h>
#include <linux/proc_fs.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>
#include <linux/xarray.h>
#include <net/genetlink.h>
#include <net/net_namespace.h>

#include "compat.h"
#include "sandbox.h"

/* bpf_link_get_from_fd(), for CUBE_IOC_SANDBOX_ADD_BPF_LINK */
CUBE_IMPORT_NS(BPF_INTERNAL);

static DEFINE_XARRAY(cube_sandboxes);
static atomic64_t cube_sandbox_next_id = ATOMIC64_INIT(0);

static void cube_sandbox_release_ref(struct kref *ref)
{
	struct cube_sandbox *sb = container_of(ref, struct cube_sandbox, ref);

	put_pid(sb->owner);
	kfree_rcu(sb, rcu);
}

void cube_sandbox_put(struct cube_sandbox *sb)
{
	kref_put(&sb->ref, cube_sandbox_release_ref);
}

/**
 * cube_sandbox_get_by_id() - look up a live sandbox
 * @id: the sandbox's id
 *
 * Return: the sandbox with a reference held, or NULL.
 */
struct cube_sandbox *cube_sandbox_get_by_id(u64 id)
{
	struct cube_sandbox *sb;

	if (id > ULONG_MAX)
		return NULL;
	rcu_read_lock();
	sb = xa_load(&cube_sandboxes, id);
	if (sb && !kref_get_unless_zero(&sb->ref))
		sb = NULL;
	rcu_read_unlock();
	return sb;
}

/**
 * cube_sandbox_get_next() - iterate over live sandboxes in id order
 * @index: in: the smallest id wanted; out: the id found
 *
 * Return: the first live sandbox whose id is at least *@index, with a
 * reference held, or NULL when there is none.
 */
struct cube_sandbox *cube_sandbox_get_next(unsigned long *index)
{
	struct cube_sandbox *sb;

	rcu_read_lock();
	for (;;) {
		sb = xa_find(&cube_sandboxes, index, ULONG_MAX, XA_PRESENT);
		if (!sb || kref_get_unless_zero(&sb->ref))
			break;
		if (*index == ULONG_MAX) {
			sb = NULL;
			break;
		}
		(*index)++;
	}
	rcu_read_unlock();
	return sb;
}

/**
 * cube_name_valid() - check a template, pool or label key name
 * @name: NUL-terminated string
 * @slash: whether '/' is allowed
 *
 * Return: true when @name is non-empty and made of [A-Za-z0-9._-] (and '/').
 */
bool cube_name_valid(const char *name, bool slash)
{
	const char *p;

	if (!*name)
		return false;
	for (p = name; *p; p++) {
		if (isalnum(*p) || *p == '.' || *p == '_' || *p == '-')
			continue;
		if (slash && *p == '/')
			continue;
		return false;
	}
	return true;
}

/*
 * A fixed-size string field from userspace: it must hold a NUL, and the
 * bytes after it must be zero, so that later extensions can use them.
 */
static bool cube_str_field_ok(const char *s, size_t size)
{
	size_t len = strnlen(s, size);

	if (len == size)
		return false;
	return !memchr_inv(s + len, 0, size - len);
}

static void cube_sandbox_wake(struct cube_sandbox *sb)
{
	wake_up_interruptible_poll(&sb->wq, EPOLLIN | EPOLLPRI | EPOLLRDBAND);
}

/**
 * cube_sandbox_vm_vcpus() - vCPUs created so far in the bound KVM VM
 * @sb: the sandbox, with ->lock held
 *
 * The VM file's private data is KVM's struct kvm, kept alive by the file
 * reference the sandbox holds; online_vcpus only grows.
 */
u32 cube_sandbox_vm_vcpus(struct cube_sandbox *sb)
{
	struct kvm *kvm;

	lockdep_assert_held(&sb->lock);
	if (!sb->vm_file)
		return 0;
	kvm = sb->vm_file->private_data;
	return atomic_read(&kvm->online_vcpus);
}

/**
 * cube_sandbox_vm_memory() - guest memory registered in the bound KVM VM
 * @sb: the sandbox, with ->lock held
 *
 * Sums the user memory slots of address space 0 under KVM's SRCU, as KVM
 * itself reads them; KVM's private slots are not guest memory.
 */
u64 cube_sandbox_vm_memory(struct cube_sandbox *sb)
{
	struct kvm_memory_slot *slot;
	struct kvm_memslots *slots;
	struct kvm *kvm;
	u64 bytes = 0;
	int idx, bkt;

	lockdep_assert_held(&sb->lock);
	if (!sb->vm_file)
		return 0;
	kvm = sb->vm_file->private_data;
	idx = srcu_read_lock(&kvm->srcu);
	slots = kvm_memslots(kvm);
	kvm_for_each_memslot(slot, bkt, slots)
		if (slot->id < KVM_USER_MEM_SLOTS)
			bytes += (u64)slot->npages << PAGE_SHIFT;
	srcu_read_unlock(&kvm->srcu, idx);
	return bytes;
}

/* Called by the pool code, with cube_pool_lock held. */
void cube_sandbox_mark_taken(struct cube_sandbox *sb)
{
	lockdep_assert_held(&sb->lock);
	sb->flags |= CUBE_SANDBOX_F_TAKEN;
	cube_sandbox_wake(sb);
}

static void cube_sandbox_kill_work(struct work_struct *work)
{
	struct cube_sandbox *sb = container_of(to_delayed_work(work),
					       struct cube_sandbox, kill_work);
	bool dead;

	mutex_lock(&sb->lock);
	dead = sb->dead;
	mutex_unlock(&sb->lock);
	if (!dead)
		kill_pid(sb->owner, SIGKILL, 1);
	cube_sandbox_put(sb);
}

/**
 * cube_sandbox_kill() - ask a sandbox's owner to stop, then force it
 * @sb: the sandbox
 * @grace_ms: how long the owner has before it gets SIGKILL
 *
 * The owner sees the request through poll() on its sandbox fd.  When the
 * grace period is over and the sandbox fd is still open, the owner process
 * is killed; its death closes the fd, which tears the sandbox down.
 *
 * Return: 0, -ENOENT if the sandbox is being torn down, -EALREADY if a
 * kill is already pending.
 */
int cube_sandbox_kill(struct cube_sandbox *sb, unsigned int grace_ms)
{
	int ret = 0;

	mutex_lock(&sb->lock);
	if (sb->dead) {
		ret = -ENOENT;
		goto out;
	}
	if (sb->flags & CUBE_SANDBOX_F_KILL_REQUESTED) {
		ret = -EALREADY;
		goto out;
	}
	sb->flags |= CUBE_SANDBOX_F_KILL_REQUESTED;
	kref_get(&sb->ref);
	if (!schedule_delayed_work(&sb->kill_work, msecs_to_jiffies(grace_ms)))
		cube_sandbox_put(sb);
	cube_sandbox_wake(sb);
out:
	mutex_unlock(&sb->lock);
	return ret;
}

/* Drop everything the sandbox holds; it is dead and nobody can add more. */
static void cube_sandbox_drop_resources(struct cube_sandbox *sb)
{
	unsigned int i;

	for (i = 0; i < sb->nr_links; i++)
		bpf_link_put(sb->links[i]);
	sb->nr_links = 0;
	if (sb->net)
		put_net(sb->net);
	sb->net = NULL;
	if (sb->vm_file)
		fput(sb->vm_file);
	sb->vm_file = NULL;
	if (sb->clone)
		cube_clone_put(sb->clone);
	sb->clone = NULL;
}

static int cube_sandbox_release(struct inode *inode, struct file *file)
{
	struct cube_sandbox *sb = file->private_data;

	mutex_lock(&cube_pool_lock);
	mutex_lock(&sb->lock);
	sb->dead = true;
	cube_pool_remove_locked(sb);
	if (sb->state != CUBE_SANDBOX_EXITED) {
		sb->state = CUBE_SANDBOX_EXITED;
		sb->exit_reason = CUBE_EXIT_CLOSED;
	}
	mutex_unlock(&sb->lock);
	mutex_unlock(&cube_pool_lock);

	xa_erase(&cube_sandboxes, sb->id);
	if (cancel_delayed_work_sync(&sb->kill_work))
		cube_sandbox_put(sb);

	mutex_lock(&sb->lock);
	cube_sandbox_drop_resources(sb);
	mutex_unlock(&sb->lock);

	cube_genl_sandbox_event(sb, CUBE_CMD_EVENT_SANDBOX_EXIT);
	atomic64_dec(&cube_stats.sandboxes);
	cube_sandbox_put(sb);
	return 0;
}

static __poll_t cube_sandbox_poll(struct file *file, poll_table *wait)
{
	struct cube_sandbox *sb = file->private_data;
	__poll_t mask = 0;
	u32 flags;

	poll_wait(file, &sb->wq, wait);
	flags = READ_ONCE(sb->flags);
	if (flags & CUBE_SANDBOX_F_KILL_REQUESTED)
		mask |= EPOLLIN | EPOLLRDNORM | EPOLLPRI;
	if (flags & CUBE_SANDBOX_F_TAKEN)
		mask |= EPOLLRDBAND;
	return mask;
}

static bool cube_file_is_kvm_vm(struct file *file)
{
	return file->f_inode->i_sb->s_magic == ANON_INODE_FS_MAGIC &&
	       !strcmp(file->f_path.dentry->d_name.name, "kvm-vm");
}

static int cube_get_fd_arg(void __user *argp, struct cube_fd_arg *a)
{
	if (copy_from_user(a, argp, sizeof(*a)))
		return -EFAULT;
	if (a->flags)
		return -EINVAL;
	if (a->fd < 0)
		return -EBADF;
	return 0;
}

/* Configuration is only accepted while the sandbox is being created. */
static int cube_sandbox_configurable(struct cube_sandbox *sb)
{
	lockdep_assert_held(&sb->lock);
	return sb->state == CUBE_SANDBOX_CREATING ? 0 : -EBUSY;
}

static long cube_sandbox_bind_vm(struct cube_sandbox *sb, void __user *argp)
{
	struct cube_fd_arg a;
	struct file *file;
	int ret;

	ret = cube_get_fd_arg(argp, &a);
	if (ret)
		return ret;
	file = fget(a.fd);
	if (!file)
		return -EBADF;
	if (!cube_file_is_kvm_vm(file)) {
		ret = -EINVAL;
		goto out_put;
	}
	mutex_lock(&sb->lock);
	ret = cube_sandbox_configurable(sb);
	if (!ret && sb->vm_file)
		ret = -EBUSY;
	if (!ret) {
		sb->vm_file = file;
		sb->flags |= CUBE_SANDBOX_F_VM;
		file = NULL;
	}
	mutex_unlock(&sb->lock);
out_put:
	if (file)
		fput(file);
	return ret;
}

static long cube_sandbox_set_netns(struct cube_sandbox *sb, void __user *argp)
{
	struct cube_fd_arg a;
	struct net *net;
	int ret;

	ret = cube_get_fd_arg(argp, &a);
	if (ret)
		return ret;
	net = get_net_ns_by_fd(a.fd);
	if (IS_ERR(net))
		return PTR_ERR(net);
	mutex_lock(&sb->lock);
	ret = cube_sandbox_configurable(sb);
	if (!ret && sb->net)
		ret = -EBUSY;
	if (!ret) {
		sb->net = net;
		sb->netns_cookie = net->net_cookie;
		sb->flags |= CUBE_SANDBOX_F_NETNS;
		net = NULL;
	}
	mutex_unlock(&sb->lock);
	if (net)
		put_net(net);
	return ret;
}

static long cube_sandbox_add_bpf_link(struct cube_sandbox *sb,
				      void __user *argp)
{
	struct bpf_link *link;
	struct cube_fd_arg a;
	unsigned int i;
	int ret;

	ret = cube_get_fd_arg(argp, &a);
	if (ret)
		return ret;
	link = bpf_link_get_from_fd(a.fd);
	if (IS_ERR(link))
		return PTR_ERR(link);
	mutex_lock(&sb->lock);
	ret = cube_sandbox_configurable(sb);
	if (ret)
		goto out;
	for (i = 0; i < sb->nr_links; i++) {
		if (sb->links[i] == link) {
			ret = -EEXIST;
			goto out;
		}
	}
	if (sb->nr_links == CUBE_BPF_LINKS_MAX) {
		ret = -ENOSPC;
		goto out;
	}
	sb->links[sb->nr_links++] = link;
	link = NULL;
out:
	mutex_unlock(&sb->lock);
	if (link)
		bpf_link_put(link);
	return ret;
}

static long cube_sandbox_set_clone(struct cube_sandbox *sb, void __user *argp)
{
	struct cube_clone *clone;
	struct cube_fd_arg a;
	int ret;

	ret = cube_get_fd_arg(argp, &a);
	if (ret)
		return ret;
	clone = cube_clone_fget(a.fd);
	if (IS_ERR(clone))
		return PTR_ERR(clone);
	if (!clone)
		return -EINVAL;
	mutex_lock(&sb->lock);
	ret = cube_sandbox_configurable(sb);
	if (!ret && sb->clone)
		ret = -EBUSY;
	if (!ret) {
		sb->clone = clone;
		sb->flags |= CUBE_SANDBOX_F_CLONE;
		clone = NULL;
	}
	mutex_unlock(&sb->lock);
	if (clone)
		cube_clone_put(clone);
	return ret;
}

static bool cube_state_transition_ok(u32 from, u32 to)
{
	switch (to) {
	case CUBE_SANDBOX_READY:
		return from == CUBE_SANDBOX_CREATING;
	case CUBE_SANDBOX_RUNNING:
		return from == CUBE_SANDBOX_READY ||
		       from == CUBE_SANDBOX_PAUSED;
	case CUBE_SANDBOX_PAUSED:
		return from == CUBE_SANDBOX_RUNNING;
	case CUBE_SANDBOX_EXITED:
		return from != CUBE_SANDBOX_EXITED;
	default:
		return false;
	}
}

static long cube_sandbox_set_state(struct cube_sandbox *sb, void __user *argp)
{
	struct cube_sandbox_state_arg a;
	bool exit;
	int ret = 0;

	if (copy_from_user(&a, argp, sizeof(a)))
		return -EFAULT;
	if (a.reserved || a.state >= __CUBE_SANDBOX_STATE_MAX)
		return -EINVAL;
	exit = a.state == CUBE_SANDBOX_EXITED;
	if (exit != (a.exit_reason != CUBE_EXIT_NONE) ||
	    a.exit_reason >= __CUBE_EXIT_MAX ||
	    a.exit_reason == CUBE_EXIT_CLOSED)
		return -EINVAL;

	mutex_lock(&cube_pool_lock);
	mutex_lock(&sb->lock);
	if (!cube_state_transition_ok(sb->state, a.state) ||
	    (sb->pool && !exit)) {
		ret = -EBUSY;
	} else {
		if (exit)
			cube_pool_remove_locked(sb);
		sb->state = a.state;
		sb->exit_reason = a.exit_reason;
	}
	mutex_unlock(&sb->lock);
	mutex_unlock(&cube_pool_lock);
	if (!ret)
		cube_genl_sandbox_event(sb, CUBE_CMD_EVENT_SANDBOX_STATE);
	return ret;
}

static long cube_sandbox_set_limits(struct cube_sandbox *sb, void __user *argp)
{
	struct cube_sandbox_limits a;
	int ret;

	if (copy_from_user(&a, argp, sizeof(a)))
		return -EFAULT;
	if (a.flags || a.reserved)
		return -EINVAL;
	if (!a.vcpus || a.vcpus > CUBE_VCPUS_MAX)
		return -EINVAL;
	if (!a.memory_bytes || !PAGE_ALIGNED(a.memory_bytes))
		return -EINVAL;
	if (!cube_str_field_ok(a.template_name, sizeof(a.template_name)) ||
	    !cube_name_valid(a.template_name, false))
		return -EINVAL;

	mutex_lock(&sb->lock);
	ret = cube_sandbox_configurable(sb);
	if (!ret) {
		sb->vcpus = a.vcpus;
		sb->memory_bytes = a.memory_bytes;
		sb->owner_uid = a.owner_uid;
		strscpy(sb->template, a.template_name, sizeof(sb->template));
	}
	mutex_unlock(&sb->lock);
	return ret;
}

static bool cube_label_value_ok(const char *v)
{
	for (; *v; v++)
		if (*v < 0x20 || *v > 0x7e)
			return false;
	return true;
}

static long cube_sandbox_set_label(struct cube_sandbox *sb, void __user *argp)
{
	struct cube_sandbox_label *a;
	bool del;
	unsigned int i;
	int ret;

	a = memdup_user(argp, sizeof(*a));
	if (IS_ERR(a))
		return PTR_ERR(a);
	ret = -EINVAL;
	if ((a->flags & ~CUBE_LABEL_F_DELETE) || a->reserved)
		goto out_free;
	del = a->flags & CUBE_LABEL_F_DELETE;
	if (!cube_str_field_ok(a->key, sizeof(a->key)) ||
	    !cube_name_valid(a->key, true) ||
	    !cube_str_field_ok(a->value, sizeof(a->value)) ||
	    !cube_label_value_ok(a->value) || (del && a->value[0]))
		goto out_free;

	mutex_lock(&sb->lock);
	ret = cube_sandbox_configurable(sb);
	if (ret)
		goto out_unlock;
	for (i = 0; i < sb->nr_labels; i++)
		if (!strcmp(sb->labels[i].key, a->key))
			break;
	if (del) {
		if (i == sb->nr_labels) {
			ret = -ENOENT;
			goto out_unlock;
		}
		sb->nr_labels--;
		if (i != sb->nr_labels)
			sb->labels[i] = sb->labels[sb->nr_labels];
		memset(&sb->labels[sb->nr_labels], 0, sizeof(sb->labels[0]));
		goto out_unlock;
	}
	if (i == sb->nr_labels) {
		if (sb->nr_labels == CUBE_LABELS_MAX) {
			ret = -ENOSPC;
			goto out_unlock;
		}
		sb->nr_labels++;
	}
	strscpy(sb->labels[i].key, a->key, sizeof(sb->labels[i].key));
	strscpy(sb->labels[i].value, a->value, sizeof(sb->labels[i].value));
out_unlock:
	mutex_unlock(&sb->lock);
out_free:
	kfree(a);
	return ret;
}

static long cube_sandbox_get_info(struct cube_sandbox *sb, void __user *argp)
{
	struct cube_sandbox_info info = { .id = sb->id };
	u64 faults;

	mutex_lock(&sb->lock);
	info.state = sb->state;
	info.exit_reason = sb->exit_reason;
	info.flags = sb->flags;
	if (sb->pool)
		info.flags |= CUBE_SANDBOX_F_POOLED;
	info.vcpus = sb->vcpus;
	info.vm_vcpus = cube_sandbox_vm_vcpus(sb);
	info.vm_memory_bytes = cube_sandbox_vm_memory(sb);
	info.nr_bpf_links = sb->nr_links;
	info.memory_bytes = sb->memory_bytes;
	info.netns_cookie = sb->netns_cookie;
	if (sb->clone)
		cube_clone_counters(sb->clone, &info.private_pages,
				    &info.shared_pages, &faults);
	mutex_unlock(&sb->lock);

	return copy_to_user(argp, &info, sizeof(info)) ? -EFAULT : 0;
}

static long cube_sandbox_pool_enter(struct cube_sandbox *sb, void __user *argp)
{
	struct cube_pool_arg a;

	if (copy_from_user(&a, argp, sizeof(a)))
		return -EFAULT;
	if (a.flags || a.reserved || a.id || a.owner_pid || a.reserved2 ||
	    !cube_str_field_ok(a.name, sizeof(a.name)) ||
	    !cube_name_valid(a.name, false))
		return -EINVAL;
	return cube_pool_enter(sb, a.name);
}

static long cube_sandbox_ioctl(struct file *file, unsigned int cmd,
			       unsigned long arg)
{
	struct cube_sandbox *sb = file->private_data;
	void __user *argp = (void __user *)arg;

	switch (cmd) {
	case CUBE_IOC_SANDBOX_BIND_VM:
		return cube_sandbox_bind_vm(sb, argp);
	case CUBE_IOC_SANDBOX_SET_NETNS:
		return cube_sandbox_set_netns(sb, argp);
	case CUBE_IOC_SANDBOX_ADD_BPF_LINK:
		return cube_sandbox_add_bpf_link(sb, argp);
	case CUBE_IOC_SANDBOX_SET_CLONE:
		return cube_sandbox_set_clone(sb, argp);
	case CUBE_IOC_SANDBOX_SET_STATE:
		return cube_sandbox_set_state(sb, argp);
	case CUBE_IOC_SANDBOX_SET_LIMITS:
		return cube_sandbox_set_limits(sb, argp);
	case CUBE_IOC_SANDBOX_SET_LABEL:
		return cube_sandbox_set_label(sb, argp);
	case CUBE_IOC_SANDBOX_GET_INFO:
		return cube_sandbox_get_info(sb, argp);
	case CUBE_IOC_SANDBOX_POOL_ENTER:
		return cube_sandbox_pool_enter(sb, argp);
	case CUBE_IOC_SANDBOX_POOL_LEAVE:
		if (arg)
			return -EINVAL;
		return cube_pool_leave(sb);
	default:
		return -ENOTTY;
	}
}

static const struct file_operations cube_sandbox_fops = {
	.owner		= THIS_MODULE,
	.release	= cube_sandbox_release,
	.poll		= cube_sandbox_poll,
	.unlocked_ioctl	= cube_sandbox_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.llseek		= noop_llseek,
};

static long cube_sandbox_create(void __user *argp)
{
	struct cube_sandbox_create a;
	struct cube_sandbox *sb;
	struct file *file;
	int fd, ret;

	if (copy_from_user(&a, argp, sizeof(a)))
		return -EFAULT;
	if (a.flags || a.reserved || a.id)
		return -EINVAL;

	sb = kzalloc(sizeof(*sb), GFP_KERNEL_ACCOUNT);
	if (!sb)
		return -ENOMEM;
	kref_init(&sb->ref);
	mutex_init(&sb->lock);
	init_waitqueue_head(&sb->wq);
	INIT_DELAYED_WORK(&sb->kill_work, cube_sandbox_kill_work);
	INIT_LIST_HEAD(&sb->pool_node);
	sb->owner = get_task_pid(current, PIDTYPE_TGID);
	sb->owner_uid = from_kuid_munged(&init_user_ns, current_uid());
	sb->created_ns = ktime_get_real_ns();
	sb->state = CUBE_SANDBOX_CREATING;
	sb->id = atomic64_inc_return(&cube_sandbox_next_id);

	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0) {
		ret = fd;
		goto err_free;
	}
	a.id = sb->id;
	if (copy_to_user(argp, &a, sizeof(a))) {
		ret = -EFAULT;
		goto err_fd;
	}
	ret = xa_insert(&cube_sandboxes, sb->id, sb, GFP_KERNEL_ACCOUNT);
	if (ret)
		goto err_fd;
	file = anon_inode_getfile("cube-sandbox", &cube_sandbox_fops, sb,
				  O_RDWR | O_CLOEXEC);
	if (IS_ERR(file)) {
		ret = PTR_ERR(file);
		goto err_erase;
	}
	/* From here on the file owns the sandbox: release tears it down. */
	atomic64_inc(&cube_stats.sandboxes);
	cube_genl_sandbox_event(sb, CUBE_CMD_EVENT_SANDBOX_NEW);
	fd_install(fd, file);
	return fd;

err_erase:
	xa_erase(&cube_sandboxes, sb->id);
err_fd:
	put_unused_fd(fd);
err_free:
	cube_sandbox_put(sb);
	return ret;
}

static long cube_pool_take_ioctl(void __user *argp)
{
	struct cube_pool_arg a;
	struct pid *owner;
	int ret;

	if (copy_from_user(&a, argp, sizeof(a)))
		return -EFAULT;
	if (a.flags || a.reserved || a.id || a.owner_pid || a.reserved2 ||
	    !cube_str_field_ok(a.name, sizeof(a.name)) ||
	    !cube_name_valid(a.name, false))
		return -EINVAL;
	ret = cube_pool_take(a.name, &a.id, &owner);
	if (ret)
		return ret;
	a.owner_pid = pid_vnr(owner);
	put_pid(owner);
	/* The sandbox is taken even if the answer cannot be written. */
	return copy_to_user(argp, &a, sizeof(a)) ? -EFAULT : 0;
}

/* %CUBE_IOC_SANDBOX_NETNS_OPEN: a new fd of a sandbox's netns. */
static long cube_sandbox_netns_open(void __user *argp)
{
	struct cube_sandbox_ref a;
	struct cube_sandbox *sb;
	long ret = -ENOENT;

	if (copy_from_user(&a, argp, sizeof(a)))
		return -EFAULT;
	if (a.flags || a.reserved)
		return -EINVAL;
	if (!capable(CAP_NET_ADMIN))
		return -EPERM;
	sb = cube_sandbox_get_by_id(a.id);
	if (!sb)
		return -ENOENT;
	mutex_lock(&sb->lock);
	if (sb->net && !sb->dead)
		ret = open_related_ns(&sb->net->ns, get_net_ns);
	mutex_unlock(&sb->lock);
	cube_sandbox_put(sb);
	return ret;
}

/**
 * cube_sandbox_dev_ioctl() - /dev/cube ioctls 0x10-0x2f
 * @file: the /dev/cube file
 * @cmd: the ioctl command
 * @arg: its argument
 *
 * Return: a new sandbox fd for %CUBE_IOC_SANDBOX_CREATE, a netns fd for
 * %CUBE_IOC_SANDBOX_NETNS_OPEN, 0 or a negative errno otherwise.
 */
long cube_sandbox_dev_ioctl(struct file *file, unsigned int cmd,
			    unsigned long arg)
{
	void __user *argp = (void __user *)arg;

	switch (cmd) {
	case CUBE_IOC_SANDBOX_CREATE:
		return cube_sandbox_create(argp);
	case CUBE_IOC_POOL_TAKE:
		return cube_pool_take_ioctl(argp);
	case CUBE_IOC_SANDBOX_NETNS_OPEN:
		return cube_sandbox_netns_open(argp);
	default:
		return -ENOTTY;
	}
}

int cube_sandbox_init(void)
{
	return 0;
}

void cube_sandbox_exit(void)
{
	/*
	 * No sandbox is left: each holds a module reference through its fd,
	 * and releasing the fd cancels its kill work.
	 */
	WARN_ON(!xa_empty(&cube_sandboxes));
	cube_pool_destroy_all();
	rcu_barrier();
}
