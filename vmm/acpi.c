// SPDX-License-Identifier: GPL-2.0
/* Minimal ACPI tables; see acpi.h.  Layouts follow the ACPI 6.3 spec. */
#include <errno.h>
#include <string.h>

#include "acpi.h"
#include "util.h"

#define ACPI_OEM_ID		"CUBE  "
#define ACPI_OEM_TABLE_ID	"CUBEVMM "
#define ACPI_CREATOR_ID		"CUBE"
#define FADT_SIZE		276
#define FADT_F_RESET_REG_SUP	(1U << 10)
#define FADT_F_HW_REDUCED	(1U << 20)
/* IA-PC boot architecture flags: no VGA, no MSI, no ASPM, no CMOS RTC. */
#define FADT_BOOT_ARCH		((1 << 2) | (1 << 3) | (1 << 4) | (1 << 5))
#define GAS_SYSTEM_IO		1
#define ACPI_SCI_IRQ		9	/* unused, but not IRQ 0 */
#define ACPI_UART_PORT		0x3f8
#define ACPI_UART_IRQ		4
#define IOAPIC_ADDR		0xfec00000U
#define LAPIC_ADDR		0xfee00000U

struct acpi_buf {
	uint8_t *p;
	size_t len;
	size_t cap;
	int err;
};

static void put(struct acpi_buf *b, const void *data, size_t n)
{
	if (b->err || n > b->cap - b->len) {
		b->err = -ENOSPC;
		return;
	}
	memcpy(b->p + b->len, data, n);
	b->len += n;
}

static void put8(struct acpi_buf *b, uint8_t v) { put(b, &v, 1); }
static void put16(struct acpi_buf *b, uint16_t v) { put(b, &v, 2); }
static void put32(struct acpi_buf *b, uint32_t v) { put(b, &v, 4); }
static void put64(struct acpi_buf *b, uint64_t v) { put(b, &v, 8); }

static uint8_t acpi_sum(const uint8_t *p, size_t n)
{
	uint8_t s = 0;

	while (n--)
		s += *p++;
	return s;
}

/* Standard 36-byte header; length and checksum are fixed up at the end. */
static void put_header(struct acpi_buf *b, const char *sig, uint8_t rev)
{
	put(b, sig, 4);
	put32(b, 0);
	put8(b, rev);
	put8(b, 0);
	put(b, ACPI_OEM_ID, 6);
	put(b, ACPI_OEM_TABLE_ID, 8);
	put32(b, 1);
	put(b, ACPI_CREATOR_ID, 4);
	put32(b, 1);
}

static void finish_table(struct acpi_buf *b)
{
	uint32_t len = b->len;

	if (b->err)
		return;
	memcpy(b->p + 4, &len, 4);
	b->p[9] = 0;
	b->p[9] = -acpi_sum(b->p, len);
}

static void put_gas(struct acpi_buf *b, uint16_t port)
{
	put8(b, GAS_SYSTEM_IO);
	put8(b, 8);		/* bit width */
	put8(b, 0);		/* bit offset */
	put8(b, 1);		/* byte access */
	put64(b, port);
}

static void build_fadt(struct acpi_buf *b, uint64_t dsdt)
{
	uint8_t zero[96] = { 0 };

	put_header(b, "FACP", 6);
	put32(b, 0);			/* 36 firmware_ctrl */
	put32(b, (uint32_t)dsdt);	/* 40 dsdt */
	/* 44 .. 108: PM blocks, latencies: unused when hardware-reduced. */
	put8(b, 0);			/* 44 reserved */
	put8(b, 0);			/* 45 preferred PM profile */
	put16(b, ACPI_SCI_IRQ);		/* 46 sci_int */
	put(b, zero, 109 - 48);
	put16(b, FADT_BOOT_ARCH);	/* 109 iapc_boot_arch */
	put8(b, 0);			/* 111 reserved */
	put32(b, FADT_F_HW_REDUCED | FADT_F_RESET_REG_SUP); /* 112 flags */
	put_gas(b, ACPI_RESET_PORT);	/* 116 reset_reg */
	put8(b, ACPI_RESET_VALUE);	/* 128 reset_value */
	put16(b, 0);			/* 129 arm_boot_arch */
	put8(b, 3);			/* 131 fadt minor version */
	put64(b, 0);			/* 132 x_firmware_ctrl */
	put64(b, dsdt);			/* 140 x_dsdt */
	put(b, zero, 8 * 12);		/* 148 .. 243 x_pm1a_evt .. x_gpe1 */
	put_gas(b, ACPI_SLEEP_CTL_PORT);/* 244 sleep_control */
	put_gas(b, ACPI_SLEEP_STS_PORT);/* 256 sleep_status */
	put(b, "CUBEVMM\0", 8);		/* 268 hypervisor vendor */
	if (!b->err && b->len != FADT_SIZE)
		b->err = -EINVAL;
	finish_table(b);
}

static void build_madt(struct acpi_buf *b, int nr_vcpus)
{
	int i;

	put_header(b, "APIC", 5);
	put32(b, LAPIC_ADDR);
	put32(b, 1);			/* PCAT_COMPAT: 8259s present */
	for (i = 0; i < nr_vcpus; i++) {
		put8(b, 0);		/* processor local APIC */
		put8(b, 8);
		put8(b, i);		/* ACPI processor uid */
		put8(b, i);		/* APIC id */
		put32(b, 1);		/* enabled */
	}
	put8(b, 1);			/* I/O APIC */
	put8(b, 12);
	put8(b, 0);			/* id */
	put8(b, 0);
	put32(b, IOAPIC_ADDR);
	put32(b, 0);			/* GSI base */
	put8(b, 4);			/* local APIC NMI: LINT1 of all */
	put8(b, 6);
	put8(b, 0xff);
	put16(b, 0);
	put8(b, 1);
	finish_table(b);
}

/* AML package length for a body of n bytes (the length counts itself). */
static void aml_pkglen(struct acpi_buf *b, size_t n)
{
	if (n + 1 < 64) {
		put8(b, n + 1);
	} else if (n + 2 < 4096) {
		n += 2;
		put8(b, (1 << 6) | (n & 0xf));
		put8(b, n >> 4);
	} else {
		n += 3;
		put8(b, (2 << 6) | (n & 0xf));
		put8(b, n >> 4);
		put8(b, n >> 12);
	}
}

static void aml_name_string(struct acpi_buf *b, const char *seg,
			    const char *str)
{
	put8(b, 0x08);			/* NameOp */
	put(b, seg, 4);
	put8(b, 0x0d);			/* StringPrefix */
	put(b, str, strlen(str) + 1);
}

static void aml_device(struct acpi_buf *b, int idx,
		       const struct acpi_mmio_dev *d)
{
	uint8_t body[128], crs[32];
	struct acpi_buf db = { .p = body, .cap = sizeof(body) };
	struct acpi_buf cb = { .p = crs, .cap = sizeof(crs) };
	char name[5];

	/* ResourceTemplate: Memory32Fixed, Extended IRQ (edge, high), End. */
	put8(&cb, 0x86);
	put16(&cb, 9);
	put8(&cb, 1);			/* read-write */
	put32(&cb, (uint32_t)d->base);
	put32(&cb, d->size);
	put8(&cb, 0x89);
	put16(&cb, 6);
	put8(&cb, 0x03);		/* consumer, edge, active high */
	put8(&cb, 1);
	put32(&cb, d->irq);
	put8(&cb, 0x79);
	put8(&cb, 0);

	aml_name_string(&db, "_HID", "LNRO0005");
	put8(&db, 0x08);
	put(&db, "_UID", 4);
	put8(&db, 0x0a);
	put8(&db, idx);
	put8(&db, 0x08);
	put(&db, "_CRS", 4);
	put8(&db, 0x11);		/* BufferOp */
	aml_pkglen(&db, 2 + cb.len);
	put8(&db, 0x0a);
	put8(&db, cb.len);
	put(&db, crs, cb.len);
	if (cb.err || db.err) {
		b->err = -ENOSPC;
		return;
	}

	snprintf(name, sizeof(name), "VR%02X", idx & 0xff);
	put8(b, 0x5b);			/* DeviceOp */
	put8(b, 0x82);
	aml_pkglen(b, 4 + db.len);
	put(b, name, 4);
	put(b, body, db.len);
}

/*
 * The UART as a PNP0501 device: with a hardware-reduced FADT, Linux has no
 * legacy PIC and maps no ISA IRQ by itself, so the 8250 driver gets IRQ 4
 * through this device's resources.
 */
static void aml_uart(struct acpi_buf *b)
{
	uint8_t body[96], crs[32];
	struct acpi_buf db = { .p = body, .cap = sizeof(body) };
	struct acpi_buf cb = { .p = crs, .cap = sizeof(crs) };

	put8(&cb, 0x47);		/* I/O port, 16-bit decode */
	put8(&cb, 0x01);
	put16(&cb, ACPI_UART_PORT);
	put16(&cb, ACPI_UART_PORT);
	put8(&cb, 1);			/* alignment */
	put8(&cb, 8);			/* length */
	put8(&cb, 0x89);		/* extended IRQ: edge, active high */
	put16(&cb, 6);
	put8(&cb, 0x03);
	put8(&cb, 1);
	put32(&cb, ACPI_UART_IRQ);
	put8(&cb, 0x79);
	put8(&cb, 0);

	aml_name_string(&db, "_HID", "PNP0501");
	put8(&db, 0x08);
	put(&db, "_UID", 4);
	put8(&db, 0x00);		/* ZeroOp */
	put8(&db, 0x08);
	put(&db, "_CRS", 4);
	put8(&db, 0x11);
	aml_pkglen(&db, 2 + cb.len);
	put8(&db, 0x0a);
	put8(&db, cb.len);
	put(&db, crs, cb.len);
	if (cb.err || db.err) {
		b->err = -ENOSPC;
		return;
	}
	put8(b, 0x5b);
	put8(b, 0x82);
	aml_pkglen(b, 4 + db.len);
	put(b, "COM1", 4);
	put(b, body, db.len);
}

static void build_dsdt(struct acpi_buf *b, const struct acpi_mmio_dev *devs,
		       int nr_devs)
{
	uint8_t scope[1024];
	struct acpi_buf sb = { .p = scope, .cap = sizeof(scope) };
	static const uint8_t s5[] = {
		0x08, '_', 'S', '5', '_',	/* Name (_S5, */
		0x12, 0x06, 0x02,		/*   Package (2) { */
		0x0a, 0x05, 0x0a, 0x05,		/*     5, 5 }) */
	};
	int i;

	put_header(b, "DSDT", 2);
	put(b, s5, sizeof(s5));
	aml_uart(&sb);
	for (i = 0; i < nr_devs; i++)
		aml_device(&sb, i, &devs[i]);
	if (sb.err) {
		b->err = sb.err;
		return;
	}
	put8(b, 0x10);			/* ScopeOp */
	aml_pkglen(b, 5 + sb.len);
	put(b, "\\_SB_", 5);
	put(b, scope, sb.len);
	finish_table(b);
}

int acpi_build(struct guest_mem *gm, uint64_t addr, uint64_t limit,
	       int nr_vcpus, const struct acpi_mmio_dev *devs, int nr_devs)
{
	uint64_t rsdp = addr, xsdt = addr + 0x40, fadt = addr + 0x100;
	uint64_t madt = addr + 0x300, dsdt = addr + 0x800;
	struct acpi_buf b;
	uint8_t *p;

	if (limit > gm->size || dsdt + 0x1000 > limit)
		return -ENOSPC;
	p = gm_ptr(gm, addr, limit - addr);
	memset(p, 0, limit - addr);

	b = (struct acpi_buf) { .p = gm->host + dsdt, .cap = limit - dsdt };
	build_dsdt(&b, devs, nr_devs);
	if (b.err)
		return b.err;
	b = (struct acpi_buf) { .p = gm->host + madt, .cap = dsdt - madt };
	build_madt(&b, nr_vcpus);
	if (b.err)
		return b.err;
	b = (struct acpi_buf) { .p = gm->host + fadt, .cap = madt - fadt };
	build_fadt(&b, dsdt);
	if (b.err)
		return b.err;
	b = (struct acpi_buf) { .p = gm->host + xsdt, .cap = fadt - xsdt };
	put_header(&b, "XSDT", 1);
	put64(&b, fadt);
	put64(&b, madt);
	finish_table(&b);
	if (b.err)
		return b.err;

	b = (struct acpi_buf) { .p = gm->host + rsdp, .cap = 36 };
	put(&b, "RSD PTR ", 8);
	put8(&b, 0);			/* checksum of the first 20 bytes */
	put(&b, ACPI_OEM_ID, 6);
	put8(&b, 2);			/* revision */
	put32(&b, 0);			/* no RSDT */
	put32(&b, 36);
	put64(&b, xsdt);
	put8(&b, 0);			/* extended checksum */
	put8(&b, 0);
	put16(&b, 0);
	if (b.err)
		return b.err;
	b.p[8] = -acpi_sum(b.p, 20);
	b.p[32] = -acpi_sum(b.p, 36);
	return 0;
}
