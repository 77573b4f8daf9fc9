/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OCF_TOOLS_DIRECT_ROUTE_H_
#define OCF_TOOLS_DIRECT_ROUTE_H_

#include <stdbool.h>
#include <stddef.h>

/* What gdscheck learned about one GPU through the CUDA driver. */
struct dr_gpu {
	char bus[32];	      /* PCI address as sysfs spells it (lower-case hex) */
	const char *unusable; /* NULL, or why the library cannot use this GPU */
	int rdma;	      /* CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED, -1 unknown */
	int dmabuf;	      /* CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, -1 unknown */
};

/* The running kernel's configuration, as far as gdscheck could read it. */
struct dr_kconfig {
	char source[320]; /* the file read; "" when none could be read */
	char error[400];  /* why not, when source is "" */
	/* 'y', 'm' or 'n' (not set, or absent from the file); 0 when unknown */
	char p2pdma, dmabuf, zone_device;
	int kallsyms_p2pdma; /* config unknown: 1/0 p2pdma_pgmap_ops in kallsyms, -1 unreadable */
};

/* The first mounted file system whose client moves data by RDMA. */
struct dr_mounts {
	char rdma_fs[300]; /* "TYPE on MOUNTPOINT", "" when none */
};

/* path under $OPENCUFILE_GDSCHECK_ROOT (a test-only fake root), or path. */
const char *dr_path(const char *path, char *buf, size_t len);

/* Reads /boot/config-$(uname -r), else /proc/config.gz (zlib). */
void dr_kconfig_load(struct dr_kconfig *k);

/* "built in (CONFIG_PCI_P2PDMA=y in FILE)" and the like, for the kernel line. */
void dr_kconfig_p2pdma_text(const struct dr_kconfig *k, char *out, size_t len);

/* Called for every mount: remembers the first RDMA-capable network file system. */
void dr_note_mount(struct dr_mounts *m, const char *type, const char *mountpoint, const char *superopts);

/* The "Direct path" section, ending with one verdict line per GPU.
 * ngpu: -1 no CUDA driver, 0 no GPU, else the number of entries in gpus. */
void dr_report(const struct dr_kconfig *k, const struct dr_mounts *m, const struct dr_gpu *gpus, int ngpu);

#endif /* OCF_TOOLS_DIRECT_ROUTE_H_ */
