/* SPDX-License-Identifier: Apache-2.0 */
/*
 * direct_route.c - gdscheck's verdict on the direct path: can storage DMA
 * straight into each GPU's memory on this machine, and by which route?
 *
 * DESIGN: four routes are judged, each as an ordered list of prerequisites
 * read from files the kernel publishes (docs/direct-path.md says why each
 * one matters):
 *
 *   nvidia-fs      NVIDIA's out-of-tree module (/proc/driver/nvidia-fs) and
 *                  an NVMe or RDMA device for it to drive;
 *   PCI P2PDMA     CONFIG_PCI_P2PDMA, an NVMe controller sharing a PCIe
 *                  bridge with the GPU (realpath of the sysfs entries gives
 *                  the chain of bridges), the open NVIDIA module >= 565 and
 *                  static BAR1 (NVIDIA's documented settings);
 *   GPUDirect RDMA an RDMA device, a peer-memory client (nvidia_peermem,
 *                  nvidia-fs or dma-buf) and a mounted RDMA file system;
 *   dma-buf + io_uring  dma-buf export by the GPU, CONFIG_DMA_SHARED_BUFFER,
 *                  an NVMe controller, and io_uring buffers backed by a
 *                  dma-buf, which no released kernel has (not probed).
 *
 * A route is "possible" when all of its prerequisites hold: that is what a
 * GDS library could use, not what opencufile does (it always stages through
 * host memory).  When none is possible, the verdict names the first missing
 * prerequisite of the route that matters most here: GPUDirect RDMA when an
 * RDMA file system is mounted, PCI P2PDMA (the route a stock kernel and the
 * open GPU module provide) otherwise.  The kernel configuration comes from
 * /boot/config-$(uname -r) or, where that is missing, /proc/config.gz read
 * with zlib; without zlib gdscheck says it could not read it, and falls back
 * to looking for p2pdma_pgmap_ops in /proc/kallsyms (NVIDIA's own check).
 *
 * Every path goes through dr_path(), so a test can point gdscheck at a fake
 * tree with OPENCUFILE_GDSCHECK_ROOT and check the verdict for platforms this
 * machine is not.
 */
#define _GNU_SOURCE
#include "direct_route.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#ifdef OCF_HAVE_ZLIB
#include <zlib.h>
#endif

#define DR_MAX_NVME 64
#define DR_MAX_DEPTH 16

const char *dr_path(const char *path, char *buf, size_t len)
{
	const char *root = getenv("OPENCUFILE_GDSCHECK_ROOT");
	if (!root || !*root)
		return path;
	snprintf(buf, len, "%s%s", root, path);
	return buf;
}

static bool dr_exists(const char *path)
{
	char b[PATH_MAX];
	struct stat st;
	return stat(dr_path(path, b, sizeof(b)), &st) == 0;
}

/* First line of a small file, without its newline; 0 or -errno. */
static int read_line(const char *path, char *out, size_t len)
{
	char b[PATH_MAX];
	FILE *f = fopen(dr_path(path, b, sizeof(b)), "re");
	if (!f)
		return -errno;
	int r = fgets(out, (int)len, f) ? 0 : -EIO;
	fclose(f);
	if (r == 0)
		out[strcspn(out, "\n")] = '\0';
	return r;
}

/* ------------------------------------------------------ kernel config */

static void kcfg_line(struct dr_kconfig *k, const char *line)
{
	static const struct {
		const char *name;
		size_t off;
	} keys[] = {
	    {"CONFIG_PCI_P2PDMA", offsetof(struct dr_kconfig, p2pdma)},
	    {"CONFIG_DMA_SHARED_BUFFER", offsetof(struct dr_kconfig, dmabuf)},
	    {"CONFIG_ZONE_DEVICE", offsetof(struct dr_kconfig, zone_device)},
	};
	bool unset = strncmp(line, "# ", 2) == 0;
	const char *p = unset ? line + 2 : line;
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		size_t n = strlen(keys[i].name);
		if (strncmp(p, keys[i].name, n) != 0)
			continue;
		char *v = (char *)k + keys[i].off;
		if (unset && strncmp(p + n, " is not set", 11) == 0)
			*v = 'n';
		else if (!unset && p[n] == '=')
			*v = p[n + 1] == 'y' || p[n + 1] == 'm' ? p[n + 1] : 'n';
	}
}

/* Reads the configuration at path (plain or gzip); 0, or -errno with a
 * message in k->error. */
static int kcfg_read(struct dr_kconfig *k, const char *shown, const char *path)
{
	char line[512];
#ifdef OCF_HAVE_ZLIB
	/* gzopen reads a plain file as it is, so one path serves both. */
	gzFile g = gzopen(path, "rb");
	if (!g) {
		int e = errno ? errno : ENOMEM;
		snprintf(k->error, sizeof(k->error), "could not read %s: %s", shown, strerror(e));
		return -e;
	}
	while (gzgets(g, line, (int)sizeof(line)))
		kcfg_line(k, line);
	int zerr = Z_OK;
	const char *msg = gzerror(g, &zerr);
	if (zerr != Z_OK) {
		snprintf(k->error, sizeof(k->error), "could not read %s: %s", shown,
			 zerr == Z_ERRNO ? strerror(errno) : msg);
		gzclose(g);
		return -EIO;
	}
	gzclose(g);
	return 0;
#else
	FILE *f = fopen(path, "re");
	if (!f) {
		int e = errno;
		snprintf(k->error, sizeof(k->error), "could not read %s: %s", shown, strerror(e));
		return -e;
	}
	int c0 = fgetc(f), c1 = fgetc(f);
	if (c0 == 0x1f && c1 == 0x8b) {
		fclose(f);
		snprintf(k->error, sizeof(k->error), "could not read %s: gdscheck was built without zlib",
			 shown);
		return -ENOTSUP;
	}
	rewind(f);
	while (fgets(line, (int)sizeof(line), f))
		kcfg_line(k, line);
	fclose(f);
	return 0;
#endif
}

static int kallsyms_has(const char *sym)
{
	char b[PATH_MAX], line[512];
	FILE *f = fopen(dr_path("/proc/kallsyms", b, sizeof(b)), "re");
	if (!f)
		return -1;
	int found = 0;
	size_t n = strlen(sym);
	while (!found && fgets(line, sizeof(line), f)) {
		/* "address type name [module]" */
		char *name = strchr(line, ' ');
		name = name ? strchr(name + 1, ' ') : NULL;
		if (name && strncmp(name + 1, sym, n) == 0 && strchr(" \t\n", name[1 + n]))
			found = 1;
	}
	fclose(f);
	return found;
}

/* Reads one candidate file; on success it becomes k->source. */
static int kcfg_try(struct dr_kconfig *k, const char *path)
{
	char b[PATH_MAX];
	k->p2pdma = k->dmabuf = k->zone_device = 0;
	int r = kcfg_read(k, path, dr_path(path, b, sizeof(b)));
	if (r != 0) {
		k->p2pdma = k->dmabuf = k->zone_device = 0;
		return r;
	}
	snprintf(k->source, sizeof(k->source), "%s", path);
	/* An option the file does not name is not set. */
	for (char *v = &k->p2pdma; v <= &k->zone_device; v++)
		if (!*v)
			*v = 'n';
	return 0;
}

void dr_kconfig_load(struct dr_kconfig *k)
{
	memset(k, 0, sizeof(*k));
	k->kallsyms_p2pdma = -1;
	struct utsname u;
	uname(&u);
	char boot[300];
	snprintf(boot, sizeof(boot), "/boot/config-%s", u.release);
	bool have_boot = dr_exists(boot), have_proc = dr_exists("/proc/config.gz");
	if (have_boot && kcfg_try(k, boot) == 0)
		return;
	/* /proc/config.gz's error, if it is tried, is the one reported. */
	if (have_proc && kcfg_try(k, "/proc/config.gz") == 0)
		return;
	if (!have_boot && !have_proc)
		snprintf(k->error, sizeof(k->error), "no %s, no /proc/config.gz", boot);
	k->kallsyms_p2pdma = kallsyms_has("p2pdma_pgmap_ops");
}

void dr_kconfig_p2pdma_text(const struct dr_kconfig *k, char *out, size_t len)
{
	if (k->source[0])
		snprintf(out, len, "%s (CONFIG_PCI_P2PDMA%s in %s)",
			 k->p2pdma == 'y' ? "built in" : "not built in",
			 k->p2pdma == 'y' ? "=y" : " is not set", k->source);
	else if (k->kallsyms_p2pdma >= 0)
		snprintf(out, len, "%s (%s; p2pdma_pgmap_ops %s /proc/kallsyms)",
			 k->kallsyms_p2pdma ? "built in" : "probably not built in", k->error,
			 k->kallsyms_p2pdma ? "in" : "not in");
	else
		snprintf(out, len, "unknown (%s)", k->error);
}

/* ------------------------------------------------------- PCI topology */

/* "dddd:bb:dd.f" (the domain may be longer than 4 digits). */
static bool is_pci_addr(const char *s, size_t n)
{
	const char *colon = memchr(s, ':', n);
	if (!colon || n < 12 || s + n - colon != 8)
		return false;
	const char *t = colon; /* ":bb:dd.f" */
	return t[3] == ':' && t[6] == '.';
}

/* The PCI addresses from the root port down to dev itself, from the
 * resolved sysfs path; the count, 0 when dev is not in sysfs. */
static int pci_chain(const char *bus, char chain[DR_MAX_DEPTH][24])
{
	char p[PATH_MAX], b[PATH_MAX], real[PATH_MAX];
	snprintf(p, sizeof(p), "/sys/bus/pci/devices/%s", bus);
	if (!realpath(dr_path(p, b, sizeof(b)), real))
		return 0;
	int n = 0;
	for (char *s = real; *s && n < DR_MAX_DEPTH;) {
		while (*s == '/')
			s++;
		size_t len = strcspn(s, "/");
		if (is_pci_addr(s, len) && len < 24) {
			memcpy(chain[n], s, len);
			chain[n][len] = '\0';
			n++;
		}
		s += len;
	}
	return n;
}

struct nvme {
	char bus[24];
	char chain[DR_MAX_DEPTH][24];
	int depth;
};

struct facts {
	struct nvme nvme[DR_MAX_NVME];
	int n_nvme;
	bool nvfs, peermem;
	int rdma_devs;
	char rdma_first[64];
	/* NVIDIA kernel module: 0 not loaded, 1 proprietary, 2 open */
	int nv_module, nv_major;
	char nv_version[160];
	int static_bar1; /* 1 requested, 0 not, -1 unknown */
	int iommu_groups;
};

static void scan_nvme(struct facts *f)
{
	char b[PATH_MAX];
	DIR *d = opendir(dr_path("/sys/bus/pci/devices", b, sizeof(b)));
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d)) != NULL && f->n_nvme < DR_MAX_NVME) {
		char p[PATH_MAX], cls[32];
		if (e->d_name[0] == '.' || strlen(e->d_name) >= sizeof(f->nvme[0].bus))
			continue;
		snprintf(p, sizeof(p), "/sys/bus/pci/devices/%s/class", e->d_name);
		/* class 0x0108xx: mass storage, non-volatile memory controller */
		if (read_line(p, cls, sizeof(cls)) != 0 || strncmp(cls, "0x0108", 6) != 0)
			continue;
		struct nvme *n = &f->nvme[f->n_nvme++];
		snprintf(n->bus, sizeof(n->bus), "%.23s", e->d_name);
		n->depth = pci_chain(n->bus, n->chain);
	}
	closedir(d);
}

static int count_entries(const char *dir, char *first, size_t len)
{
	char b[PATH_MAX];
	DIR *d = opendir(dr_path(dir, b, sizeof(b)));
	if (!d)
		return 0;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.' && n++ == 0 && first && len) {
			size_t k = strnlen(e->d_name, len - 1); /* a longer name is shown cut */
			memcpy(first, e->d_name, k);
			first[k] = '\0';
		}
	closedir(d);
	return n;
}

static void gather(struct facts *f)
{
	memset(f, 0, sizeof(*f));
	scan_nvme(f);
	f->nvfs = dr_exists("/proc/driver/nvidia-fs");
	f->peermem = dr_exists("/sys/module/nvidia_peermem");
	f->rdma_devs = count_entries("/sys/class/infiniband", f->rdma_first, sizeof(f->rdma_first));
	f->iommu_groups = count_entries("/sys/kernel/iommu_groups", NULL, 0);

	char line[256];
	if (read_line("/proc/driver/nvidia/version", line, sizeof(line)) == 0) {
		f->nv_module = strstr(line, "Open Kernel Module") ? 2 : 1;
		const char *m = strstr(line, "Module");
		for (const char *t = (m ? m : line) + 1; *t; t++)
			if (t[-1] == ' ' && *t >= '0' && *t <= '9') {
				f->nv_major = atoi(t);
				snprintf(f->nv_version, sizeof(f->nv_version), "%.*s", (int)strcspn(t, " \t"),
					 t);
				break;
			}
	}
	/* NVIDIA's P2PDMA setup asks for NVreg_RegistryDwords="RMForceStaticBar1=1;..."; the
	 * driver lists its registry settings in params. */
	char b[PATH_MAX];
	FILE *p = fopen(dr_path("/proc/driver/nvidia/params", b, sizeof(b)), "re");
	f->static_bar1 = -1;
	if (p) {
		f->static_bar1 = 0;
		while (fgets(line, sizeof(line), p))
			if (strncmp(line, "RegistryDwords", 14) == 0 &&
			    strcasestr(line, "RMForceStaticBar1=1"))
				f->static_bar1 = 1;
		fclose(p);
	}
}

/* ------------------------------------------------------------ routes */

struct verdict {
	bool ok;
	char text[400]; /* ok: what the route uses; else the first missing prerequisite */
};

static bool fail(struct verdict *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool fail(struct verdict *v, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(v->text, sizeof(v->text), fmt, ap);
	va_end(ap);
	v->ok = false;
	return false;
}

#define NO_RDMA_ATTR                                                                                         \
	"the GPU or its driver does not support GPUDirect RDMA "                                             \
	"(CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED is 0)"

/* The NVMe controller sharing the deepest PCIe bridge with the GPU; NULL
 * when none shares one.  *bridge: that bridge. */
static const struct nvme *nearest_nvme(const struct facts *f, char gchain[][24], int gdepth,
				       const char **bridge)
{
	const struct nvme *best = NULL;
	int best_common = 0;
	for (int i = 0; i < f->n_nvme; i++) {
		const struct nvme *n = &f->nvme[i];
		int common = 0;
		/* bridges only: the last element of each chain is the device */
		while (common < gdepth - 1 && common < n->depth - 1 &&
		       strcmp(gchain[common], n->chain[common]) == 0)
			common++;
		if (common > best_common) {
			best_common = common;
			best = n;
			*bridge = gchain[common - 1];
		}
	}
	return best;
}

static bool route_nvfs(const struct facts *f, const struct dr_gpu *g, struct verdict *v)
{
	if (g->rdma == 0)
		return fail(v, NO_RDMA_ATTR);
	if (!f->nvfs)
		return fail(v, "the nvidia-fs module is not loaded (no /proc/driver/nvidia-fs)");
	if (f->n_nvme == 0 && f->rdma_devs == 0)
		return fail(v, "no NVMe controller and no RDMA device for nvidia-fs to drive");
	v->ok = true;
	if (f->n_nvme)
		snprintf(v->text, sizeof(v->text), "with NVMe %s", f->nvme[0].bus);
	else
		snprintf(v->text, sizeof(v->text), "with RDMA device %s", f->rdma_first);
	return true;
}

static bool route_p2pdma(const struct dr_kconfig *k, const struct facts *f, const struct dr_gpu *g,
			 struct verdict *v)
{
	if (g->rdma == 0)
		return fail(v, NO_RDMA_ATTR);
	if (!k->source[0] && k->kallsyms_p2pdma == 0)
		return fail(v,
			    "CONFIG_PCI_P2PDMA is probably not set in the running kernel (%s; no "
			    "p2pdma_pgmap_ops in /proc/kallsyms)",
			    k->error);
	if (!k->source[0] && k->kallsyms_p2pdma < 0)
		return fail(v, "could not tell whether the running kernel has CONFIG_PCI_P2PDMA (%s)",
			    k->error);
	if (k->source[0] && k->p2pdma != 'y')
		return fail(v, "CONFIG_PCI_P2PDMA is not set in the running kernel");
	if (f->n_nvme == 0)
		return fail(v,
			    "no NVMe controller (no PCI device of class 0x0108 under /sys/bus/pci/devices)");
	char gchain[DR_MAX_DEPTH][24];
	int gdepth = pci_chain(g->bus, gchain);
	if (gdepth == 0)
		return fail(v, "GPU %s is not under /sys/bus/pci/devices", g->bus);
	const char *bridge = NULL;
	const struct nvme *n = nearest_nvme(f, gchain, gdepth, &bridge);
	if (!n)
		return fail(v,
			    "no NVMe behind the same PCIe switch as the GPU (between root ports the kernel "
			    "allows peer DMA only on host bridges of its allowlist)");
	if (f->nv_module == 0)
		return fail(v, "the NVIDIA kernel module is not loaded (no /proc/driver/nvidia/version)");
	if (f->nv_module == 1)
		return fail(v,
			    "the NVIDIA kernel module is the proprietary one; PCI P2PDMA needs the open one");
	if (f->nv_major && f->nv_major < 565)
		return fail(v, "the open NVIDIA module %s is older than 565, the first with PCI P2PDMA",
			    f->nv_version);
	if (f->static_bar1 == 0)
		return fail(
		    v, "static BAR1 is not requested (NVreg_RegistryDwords has no RMForceStaticBar1=1 in "
		       "/proc/driver/nvidia/params)");
	v->ok = true;
	snprintf(v->text, sizeof(v->text), "with NVMe %s (common PCIe bridge %s)", n->bus, bridge);
	return true;
}

static bool route_rdma(const struct dr_kconfig *k, const struct dr_mounts *m, const struct facts *f,
		       const struct dr_gpu *g, struct verdict *v)
{
	bool dmabuf = k->dmabuf == 'y' && g->dmabuf == 1;
	if (g->rdma == 0 && !dmabuf)
		return fail(v, NO_RDMA_ATTR);
	if (f->rdma_devs == 0)
		return fail(v, "no RDMA device (nothing under /sys/class/infiniband)");
	if (!f->peermem && !f->nvfs && !dmabuf)
		return fail(
		    v, "no peer-memory client: neither nvidia_peermem nor nvidia-fs is loaded, and dma-buf "
		       "is not available");
	if (!m->rdma_fs[0])
		return fail(
		    v, "no RDMA file system mounted (NFS with proto=rdma, Lustre, GPFS, WekaFS, BeeGFS)");
	v->ok = true;
	snprintf(v->text, sizeof(v->text), "via %s to %s (%s)", f->rdma_first, m->rdma_fs,
		 f->peermem ? "nvidia_peermem"
		 : f->nvfs  ? "nvidia-fs"
			    : "dma-buf");
	return true;
}

static bool route_dmabuf_uring(const struct dr_kconfig *k, const struct facts *f, const struct dr_gpu *g,
			       struct verdict *v)
{
	if (g->dmabuf == 0)
		return fail(v, "the GPU or its driver cannot export dma-bufs "
			       "(CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED is 0)");
	if (k->source[0] && k->dmabuf != 'y')
		return fail(v, "CONFIG_DMA_SHARED_BUFFER is not set in the running kernel");
	if (f->n_nvme == 0)
		return fail(v, "no NVMe controller");
	return fail(v, "io_uring buffers backed by a dma-buf are in no released kernel (not probed)");
}

void dr_note_mount(struct dr_mounts *m, const char *type, const char *mountpoint, const char *superopts)
{
	if (m->rdma_fs[0])
		return;
	bool nfs_rdma = strncmp(type, "nfs", 3) == 0 && superopts && strstr(superopts, "proto=rdma");
	static const char *const rdma_types[] = {"lustre", "gpfs", "wekafs", "beegfs", NULL};
	bool other = false;
	for (const char *const *t = rdma_types; *t; t++)
		other |= strcmp(type, *t) == 0;
	if (nfs_rdma || other)
		snprintf(m->rdma_fs, sizeof(m->rdma_fs), "%s%s on %s", type, nfs_rdma ? " (proto=rdma)" : "",
			 mountpoint);
}

/* ------------------------------------------------------------ report */

static void print_platform(const struct dr_kconfig *k, const struct facts *f)
{
	if (k->source[0])
		printf("  kernel configuration: %s: CONFIG_PCI_P2PDMA%s, CONFIG_DMA_SHARED_BUFFER%s, "
		       "CONFIG_ZONE_DEVICE%s\n",
		       k->source, k->p2pdma == 'y' ? "=y" : " not set", k->dmabuf == 'y' ? "=y" : " not set",
		       k->zone_device == 'y' ? "=y" : " not set");
	else
		printf("  kernel configuration: %s\n", k->error);
	if (f->nv_module)
		printf("  NVIDIA kernel module: %s%s%s\n", f->nv_module == 2 ? "open" : "proprietary",
		       f->nv_version[0] ? ", " : "", f->nv_version);
	else
		printf("  NVIDIA kernel module: not loaded (no /proc/driver/nvidia/version)\n");
	printf("  NVMe controllers: ");
	if (f->n_nvme == 0)
		printf("none");
	for (int i = 0; i < f->n_nvme; i++)
		printf("%s%s", i ? ", " : "", f->nvme[i].bus);
	printf("\n  RDMA devices: %d%s%s; nvidia_peermem %s; nvidia-fs %s\n", f->rdma_devs,
	       f->rdma_devs ? ", " : "", f->rdma_devs ? f->rdma_first : "",
	       f->peermem ? "loaded" : "not loaded", f->nvfs ? "loaded" : "not loaded");
	if (f->iommu_groups)
		printf("  IOMMU: on (%d groups); NVIDIA's P2PDMA setup wants it off or in passthrough "
		       "(iommu=pt), and "
		       "ACS redirection on switch ports sends peer traffic up to the root complex\n",
		       f->iommu_groups);
	else
		printf("  IOMMU: off (no IOMMU groups)\n");
}

void dr_report(const struct dr_kconfig *k, const struct dr_mounts *m, const struct dr_gpu *gpus, int ngpu)
{
	printf("\nDirect path (storage DMA straight into GPU memory; opencufile always stages through host "
	       "memory; docs/direct-path.md)\n");
	struct facts *f = calloc(1, sizeof(*f));
	if (!f) {
		printf("  out of memory\n");
		return;
	}
	gather(f);
	print_platform(k, f);
	struct verdict *final = calloc(ngpu > 0 ? (size_t)ngpu : 1, sizeof(*final));
	if (!final) {
		free(f);
		printf("  out of memory\n");
		return;
	}
	for (int i = 0; i < ngpu; i++) {
		const struct dr_gpu *g = &gpus[i];
		struct verdict a, b, d, c;
		printf("  GPU %d (%s):\n", i, g->bus);
		if (g->unusable) {
			fail(&final[i], "the GPU is not usable (%s)", g->unusable);
			printf("    not usable: %s\n", g->unusable);
			continue;
		}
		route_nvfs(f, g, &a);
		route_p2pdma(k, f, g, &b);
		route_rdma(k, m, f, g, &d);
		route_dmabuf_uring(k, f, g, &c);
		const struct verdict *all[] = {&a, &b, &d, &c};
		static const char *const names[] = {"nvidia-fs", "PCI P2PDMA", "GPUDirect RDMA",
						    "dma-buf + io_uring"};
		for (size_t r = 0; r < 4; r++)
			printf("    %s: %s%s\n", names[r], all[r]->ok ? "possible, " : "", all[r]->text);
		/* P2PDMA first: the route a stock kernel and the open GPU module give. */
		static const int order[] = {1, 0, 2};
		char list[sizeof(final[i].text)] = "";
		for (size_t r = 0; r < 3; r++) {
			if (!all[order[r]]->ok)
				continue;
			size_t used = strlen(list);
			int w = snprintf(list + used, sizeof(list) - used, "%s%s %s", list[0] ? "; " : "",
					 names[order[r]], all[order[r]]->text);
			if (w < 0 || (size_t)w >= sizeof(list) - used)
				break; /* full: the routes listed so far */
		}
		if (list[0]) {
			final[i].ok = true;
			snprintf(final[i].text, sizeof(final[i].text), "%s", list);
		} else {
			final[i] = m->rdma_fs[0] ? d : b;
		}
	}
	if (ngpu <= 0)
		printf("no GPU: no direct route to consider (%s)\n",
		       ngpu < 0 ? "no CUDA driver" : "the CUDA driver reports no GPU");
	for (int i = 0; i < ngpu; i++) {
		if (final[i].ok)
			printf("GPU %d: direct route possible: %s\n", i, final[i].text);
		else
			printf("GPU %d: no direct route \xe2\x80\x94 %s\n", i, final[i].text);
	}
	free(final);
	free(f);
}
