/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The snapshot state file: a header, then sections, each with its own
 * header and crc32 (zlib's), 8-byte aligned; the last section is END.
 * All integers little-endian.  See Documentation/vmm.rst for the layout.
 *
 * The parser trusts nothing: a wrong magic, an unknown version, a bad
 * checksum, a section running past the end, a truncated file or a missing
 * END are each refused with their own error and message.
 */
#ifndef CUBE_VMM_SNAPFILE_H
#define CUBE_VMM_SNAPFILE_H

#include <stddef.h>
#include <stdint.h>

#define SNAP_MAGIC		"CUBESNAP"
#define SNAP_VERSION		1
#define SNAP_MAX_SECTIONS	4096
#define SNAP_MAX_FILE		(64ULL << 20)

enum snap_sec_type {
	SNAP_SEC_END		= 0,
	SNAP_SEC_CONFIG		= 1,	/* struct snap_config */
	SNAP_SEC_CLOCK		= 2,	/* struct kvm_clock_data */
	SNAP_SEC_IRQCHIP	= 3,	/* struct kvm_irqchip, id = chip */
	SNAP_SEC_PIT		= 4,	/* struct kvm_pit_state2 */
	SNAP_SEC_SERIAL		= 5,	/* struct serial_regs */
	SNAP_SEC_VIRTIO		= 6,	/* struct virtio_mmio_state, id = slot */
	SNAP_SEC_VSOCK		= 7,	/* struct vsock_state */
	SNAP_SEC_NET		= 8,	/* struct virtio_net_state */
	SNAP_SEC_DISK		= 9,	/* struct snap_disk_state */
	/* Per vCPU, id = vCPU index. */
	SNAP_SEC_VCPU_REGS	= 0x100,
	SNAP_SEC_VCPU_SREGS,
	SNAP_SEC_VCPU_FPU,
	SNAP_SEC_VCPU_XSAVE,
	SNAP_SEC_VCPU_XCRS,
	SNAP_SEC_VCPU_MSRS,		/* kvm_msr_entry[] */
	SNAP_SEC_VCPU_LAPIC,
	SNAP_SEC_VCPU_EVENTS,
	SNAP_SEC_VCPU_MP_STATE,
	SNAP_SEC_VCPU_DEBUGREGS,
	SNAP_SEC_VCPU_CPUID,		/* kvm_cpuid_entry2[] */
	SNAP_SEC_VCPU_LAST = SNAP_SEC_VCPU_CPUID,
};

struct snap_header {
	char magic[8];
	uint32_t version;
	uint32_t header_size;
	uint64_t file_size;		/* the whole state file */
	uint64_t mem_size;		/* bytes of guest memory */
	uint32_t mem_crc32;		/* crc32 of the memory file */
	uint32_t nr_vcpus;
	uint32_t nr_sections;		/* END included */
	uint32_t flags;
	uint32_t reserved;
	uint32_t header_crc32;		/* of this header, this field zero */
};

struct snap_sec_header {
	uint32_t type;
	uint32_t id;
	uint64_t size;			/* payload bytes, padding excluded */
	uint32_t crc32;			/* of this header (field zero) + payload */
	uint32_t reserved;
};

/* A section as parsed; data points into the parsed buffer. */
struct snap_section {
	uint32_t type;
	uint32_t id;
	uint64_t size;
	const void *data;
};

struct snap_image {
	struct snap_header hdr;
	unsigned int nr;
	struct snap_section *secs;
};

/* Building a state file in memory. */
struct snap_buf {
	uint8_t *data;
	size_t len;
	size_t cap;
	unsigned int nr;
	int err;
};

void snap_buf_init(struct snap_buf *b);
void snap_add(struct snap_buf *b, uint32_t type, uint32_t id,
	      const void *data, size_t len);
/* Append END and fill the header; 0 or the first error (-ENOMEM, ...). */
int snap_finish(struct snap_buf *b, uint64_t mem_size, uint32_t mem_crc32,
		uint32_t nr_vcpus);
void snap_buf_free(struct snap_buf *b);

/*
 * Check and index a state file.  0, or -EINVAL (not a snapshot or
 * malformed), -EPROTONOSUPPORT (other version), -ENODATA (truncated),
 * -EBADMSG (checksum mismatch), -ENOMEM; err says which in words.
 */
int snap_parse(const void *buf, size_t len, struct snap_image *img,
	       char *err, size_t errlen);
const struct snap_section *snap_find(const struct snap_image *img,
				     uint32_t type, uint32_t id);
void snap_image_free(struct snap_image *img);

uint32_t snap_crc32(const void *data, size_t len);

#endif /* CUBE_VMM_SNAPFILE_H */
