/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cube.ko: the one place where the kernels cube.ko builds against differ.
 *
 * cube.ko supports Linux 6.1 and later.  Each helper below stands in for an
 * interface that a later kernel introduced, and names that kernel, so it can
 * go when the oldest supported kernel has the interface.  The rest of the
 * module uses only the newer interfaces.
 */
#ifndef _CUBE_COMPAT_H
#define _CUBE_COMPAT_H

#include <linux/file.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/version.h>

/*
 * 6.3: vm_area_struct::vm_flags became read-only outside the core mm and is
 * changed with vm_flags_set()/vm_flags_clear() (which also assert the mmap
 * lock).  Distribution kernels may backport it, hence the version test
 * rather than a test of the name, which is a function, not a macro.
 */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 3, 0)
static inline void vm_flags_set(struct vm_area_struct *vma, vm_flags_t flags)
{
	vma->vm_flags |= flags;
}
#endif

/*
 * 6.12: struct fd lost its .file member; fd_file() reads the file.  It is
 * a macro where it exists.
 */
#ifndef fd_file
#define fd_file(f)	((f).file)
#endif

/*
 * Symbol namespaces: bpf_link_get_from_fd() is exported in BPF_INTERNAL from
 * 6.12 on (and plain before).  MODULE_IMPORT_NS() takes an identifier up to
 * 6.12 and a string from 6.13 on; both store the same modinfo string, which
 * this writes directly.  Importing a namespace that a kernel does not use is
 * harmless.
 */
#define CUBE_IMPORT_NS(ns)	MODULE_INFO(import_ns, #ns)

/*
 * 6.7 (and the 6.1 and 6.6 stable series since): GENL_MCAST_CAP_NET_ADMIN,
 * a multicast group only CAP_NET_ADMIN may join.  Without it a kernel
 * cannot restrict the group; it then stays open, as it was on such kernels.
 */
#include <net/genetlink.h>
#ifndef GENL_MCAST_CAP_NET_ADMIN
#define GENL_MCAST_CAP_NET_ADMIN	0
#endif

/*
 * 6.11 (vm_mixed_zeropage_allowed()) refuses the shared zero page in a
 * writable MAP_SHARED mapping unless it is fsdax or VM_IO, which GUP and
 * KVM would not take: there, each clone's holes map a page of zeros of the
 * clone's own instead of the kernel's.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 11, 0)
#define CUBE_HOLES_MAP_ZERO_PFN	0
#else
#define CUBE_HOLES_MAP_ZERO_PFN	1
#endif

/*
 * 6.6: pte_mkwrite() takes the VMA (x86 shadow stacks) and is out of line
 * and unexported on x86; pte_mkwrite_novma() is the plain one.  A clone's
 * mapping is never a shadow stack, and the PTE given here was installed
 * read-only and clean, so nothing was moved to a saved-dirty bit.
 */
static inline pte_t cube_pte_mkwrite(pte_t pte)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 6, 0)
	return pte_mkwrite_novma(pte);
#else
	return pte_mkwrite(pte);
#endif
}

#endif /* _CUBE_COMPAT_H */
