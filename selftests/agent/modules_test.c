// SPDX-License-Identifier: GPL-2.0
/*
 * modules_test: the agent's module loading plan (guest/agent/modules.c):
 * the order from a modules.dep, and module parameters taken from the
 * kernel command line (virtio_mmio.device=... for a modular virtio_mmio).
 */
#include "agent.h"
#include "cube_test.h"

static int pos(const char **order, int n, const char *path)
{
	int i;

	for (i = 0; i < n; i++)
		if (!strcmp(order[i], path))
			return i;
	return -1;
}

TEST(order_dependencies_first)
{
	char text[] =
		"kernel/net/vmw_vsock/vmw_vsock_virtio_transport.ko: "
		"kernel/net/vmw_vsock/vmw_vsock_virtio_transport_common.ko "
		"kernel/net/vmw_vsock/vsock.ko kernel/drivers/virtio/virtio.ko "
		"kernel/drivers/virtio/virtio_ring.ko\n"
		"kernel/drivers/virtio/virtio_mmio.ko: kernel/drivers/virtio/virtio.ko "
		"kernel/drivers/virtio/virtio_ring.ko\n"
		"kernel/net/vmw_vsock/vmw_vsock_virtio_transport_common.ko: "
		"kernel/net/vmw_vsock/vsock.ko\n"
		"kernel/drivers/virtio/virtio.ko: kernel/drivers/virtio/virtio_ring.ko\n"
		"kernel/drivers/virtio/virtio_ring.ko:\n"
		"kernel/net/vmw_vsock/vsock.ko:\n"
		"kernel/fs/overlayfs/overlay.ko:\n";
	const char *order[16];
	int n;

	n = modules_order(text, order, 16);
	ASSERT_EQ(n, 7);
	/* each once, after what it needs */
	EXPECT_GE(pos(order, n, "kernel/drivers/virtio/virtio_ring.ko"), 0);
	EXPECT_LT(pos(order, n, "kernel/drivers/virtio/virtio_ring.ko"),
		  pos(order, n, "kernel/drivers/virtio/virtio.ko"));
	EXPECT_LT(pos(order, n, "kernel/drivers/virtio/virtio.ko"),
		  pos(order, n, "kernel/drivers/virtio/virtio_mmio.ko"));
	EXPECT_LT(pos(order, n, "kernel/net/vmw_vsock/vsock.ko"),
		  pos(order, n, "kernel/net/vmw_vsock/vmw_vsock_virtio_transport_common.ko"));
	EXPECT_LT(pos(order, n, "kernel/net/vmw_vsock/vmw_vsock_virtio_transport_common.ko"),
		  pos(order, n, "kernel/net/vmw_vsock/vmw_vsock_virtio_transport.ko"));
	EXPECT_LT(pos(order, n, "kernel/drivers/virtio/virtio.ko"),
		  pos(order, n, "kernel/net/vmw_vsock/vmw_vsock_virtio_transport.ko"));
	EXPECT_GE(pos(order, n, "kernel/fs/overlayfs/overlay.ko"), 0);
}

TEST(order_errors)
{
	char missing[] = "a.ko: b.ko\n";
	char cycle[] = "a.ko: b.ko\nb.ko: a.ko\n";
	char many[] = "a.ko:\nb.ko:\nc.ko:\n";
	char junk[] = "no colon here\n\n:\n";
	const char *order[4];

	EXPECT_EQ(modules_order(missing, order, 4), -ENOENT);
	EXPECT_EQ(modules_order(cycle, order, 4), -ELOOP);
	EXPECT_EQ(modules_order(many, order, 2), -E2BIG);
	EXPECT_EQ(modules_order(junk, order, 4), 1);	/* ":" names an empty module */
}

TEST(params_from_cmdline)
{
	const char *cmdline = "console=ttyS0 virtio_mmio.device=4K@0xd0000000:5 "
		"quiet virtio-mmio.device=4K@0xd0001000:6 virtio_mmiox.foo=1 "
		"vsock.x=2 virtio_mmio. novirtio_mmio.device=1\n";
	char out[128];

	modules_params(cmdline, "virtio_mmio", out, sizeof(out));
	EXPECT_STREQ(out, "device=4K@0xd0000000:5 device=4K@0xd0001000:6");
	modules_params(cmdline, "vsock", out, sizeof(out));
	EXPECT_STREQ(out, "x=2");
	modules_params(cmdline, "overlay", out, sizeof(out));
	EXPECT_STREQ(out, "");
	/* what does not fit is left out, never cut */
	modules_params(cmdline, "virtio_mmio", out, 30);
	EXPECT_STREQ(out, "device=4K@0xd0000000:5");
}

TEST_MAIN()
