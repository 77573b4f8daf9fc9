/* SPDX-License-Identifier: Apache-2.0 */
/*
 * topology.c - cuFileExportPCIeTopology (1.17): the PCIe topology the
 * library sees, as a JSON file with a leading // comment line (the form of
 * NVIDIA's static-routing topology file, miscellaneous.static_routing_filepath).
 *
 * Contents: "gpus" (index, name, PCI address, NUMA node, UUID), "block_devices"
 * (name, PCI address of the controller, NUMA node, NVMe or not) from
 * /sys/block, and "filesystems" (mount point, type, source, and the block
 * device behind it) from /proc/self/mounts for block-backed and network
 * file systems.  The body is `null` when there is nothing to list.  The
 * file is written whether or not the driver is open; this library does no
 * routing, so it only describes the machine.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <mntent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <dirent.h>
#include <unistd.h>

#include "api.h"
#include "cuda_loader.h"
#include "internal.h"
#include "log.h"

/* The NUMA node sysfs gives in `dir`/numa_node, or -1. */
static int numa_of(const char *dir)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/numa_node", dir);
	FILE *f = fopen(p, "re");
	int n = -1;
	if (f) {
		if (fscanf(f, "%d", &n) != 1)
			n = -1;
		fclose(f);
	}
	return n;
}

/* Is s a PCI address "dddd:bb:dd.f"? */
static bool is_pci_addr(const char *s)
{
	unsigned d, b, v, fn;
	char tail;
	return strlen(s) == 12 && sscanf(s, "%4x:%2x:%2x.%1x%c", &d, &b, &v, &fn, &tail) == 4;
}

/* The PCI address of the device nearest to a sysfs device path (the last
 * PCI component of its real path), or "" when none. */
static void pci_of(const char *devpath, char *out, size_t n, char *pcidir, size_t pn)
{
	out[0] = '\0';
	pcidir[0] = '\0';
	char *real = realpath(devpath, NULL);
	if (!real)
		return;
	char *save = NULL;
	size_t len = 0;
	char acc[PATH_MAX] = "";
	for (char *c = strtok_r(real, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		len += (size_t)snprintf(acc + len, sizeof(acc) - OCF_MIN(len, sizeof(acc)), "/%s", c);
		if (len >= sizeof(acc))
			break;
		if (is_pci_addr(c)) {
			snprintf(out, n, "%s", c);
			snprintf(pcidir, pn, "%s", acc);
		}
	}
	free(real);
}

static void add_str(struct json_object *o, const char *k, const char *v)
{
	json_object_object_add(o, k, json_object_new_string(v));
}

static struct json_object *gpus(void)
{
	struct json_object *a = json_object_new_array();
	int n = cuda_device_count();
	for (int i = 0; i < n; i++) {
		CUdevice dev;
		char bus[32] = "", name[128] = "";
		if (ocf_cu.DeviceGet(&dev, i) != CUDA_SUCCESS)
			continue;
		if (ocf_cu.DeviceGetPCIBusId(bus, (int)sizeof(bus), dev) != CUDA_SUCCESS)
			bus[0] = '\0';
		if (ocf_cu.DeviceGetName(name, (int)sizeof(name), dev) != CUDA_SUCCESS)
			name[0] = '\0';
		for (char *c = bus; *c; c++)
			if (*c >= 'A' && *c <= 'F')
				*c = (char)(*c - 'A' + 'a'); /* sysfs spells addresses in lower case */
		struct json_object *g = json_object_new_object();
		json_object_object_add(g, "index", json_object_new_int(i));
		add_str(g, "name", name);
		add_str(g, "pci_address", bus);
		char dir[96];
		snprintf(dir, sizeof(dir), "/sys/bus/pci/devices/%s", bus);
		json_object_object_add(g, "numa_node", json_object_new_int(bus[0] ? numa_of(dir) : -1));
		CUuuid u;
		if (ocf_cu.DeviceGetUuid(&u, dev) == CUDA_SUCCESS) {
			char hex[33];
			for (int k = 0; k < 16; k++)
				snprintf(hex + 2 * k, 3, "%02x", (unsigned char)u.bytes[k]);
			add_str(g, "uuid", hex);
		}
		json_object_array_add(a, g);
	}
	return a;
}

static struct json_object *block_devices(void)
{
	struct json_object *a = json_object_new_array();
	DIR *d = opendir("/sys/block");
	if (!d)
		return a;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || !strncmp(e->d_name, "loop", 4) || !strncmp(e->d_name, "ram", 3) ||
		    !strncmp(e->d_name, "zram", 4))
			continue;
		char dev[PATH_MAX], pci[16], pcidir[PATH_MAX];
		snprintf(dev, sizeof(dev), "/sys/block/%s/device", e->d_name);
		pci_of(dev, pci, sizeof(pci), pcidir, sizeof(pcidir));
		struct json_object *b = json_object_new_object();
		add_str(b, "name", e->d_name);
		add_str(b, "pci_address", pci);
		json_object_object_add(b, "numa_node", json_object_new_int(pcidir[0] ? numa_of(pcidir) : -1));
		json_object_object_add(b, "nvme", json_object_new_boolean(strncmp(e->d_name, "nvme", 4) == 0));
		json_object_array_add(a, b);
	}
	closedir(d);
	return a;
}

static bool network_fs(const char *type)
{
	static const char *const net[] = {"nfs", "nfs4", "lustre", "beegfs", "gpfs", "wekafs", "virtiofs", NULL};
	for (const char *const *t = net; *t; t++)
		if (strcmp(type, *t) == 0)
			return true;
	return false;
}

static struct json_object *filesystems(void)
{
	struct json_object *a = json_object_new_array();
	FILE *f = setmntent("/proc/self/mounts", "re");
	if (!f)
		return a;
	struct mntent m;
	char buf[4096];
	while (getmntent_r(f, &m, buf, sizeof(buf))) {
		bool block = strncmp(m.mnt_fsname, "/dev/", 5) == 0;
		if (!block && !network_fs(m.mnt_type))
			continue;
		struct json_object *o = json_object_new_object();
		add_str(o, "mount_point", m.mnt_dir);
		add_str(o, "type", m.mnt_type);
		add_str(o, "source", m.mnt_fsname);
		struct stat st;
		if (block && stat(m.mnt_fsname, &st) == 0 && S_ISBLK(st.st_mode)) {
			char link[64], real[PATH_MAX];
			snprintf(link, sizeof(link), "/sys/dev/block/%u:%u", major(st.st_rdev), minor(st.st_rdev));
			if (realpath(link, real)) {
				/* .../block/nvme0n1/nvme0n1p1: the disk is the
				 * partition's parent, or the device itself. */
				char *slash = strrchr(real, '/');
				char part[PATH_MAX + 16];
				snprintf(part, sizeof(part), "%s/partition", real);
				if (slash && access(part, F_OK) == 0) {
					*slash = '\0';
					slash = strrchr(real, '/');
				}
				if (slash)
					add_str(o, "block_device", slash + 1);
			}
		}
		json_object_array_add(a, o);
	}
	endmntent(f);
	return a;
}

/* 0, or an internal error. */
static int export_topology(const char *filename)
{
	struct stat st;
	if (stat(filename, &st) == 0 && S_ISDIR(st.st_mode))
		return OCF_ERR(CU_FILE_INVALID_VALUE);
	struct json_object *root = json_object_new_object();
	struct json_object *g = gpus(), *b = block_devices(), *fs = filesystems();
	bool empty = !json_object_array_length(g) && !json_object_array_length(b) && !json_object_array_length(fs);
	json_object_object_add(root, "version", json_object_new_int(1));
	json_object_object_add(root, "gpus", g);
	json_object_object_add(root, "block_devices", b);
	json_object_object_add(root, "filesystems", fs);
	FILE *f = fopen(filename, "we");
	if (!f) {
		int e = errno;
		json_object_put(root);
		log_error("cuFileExportPCIeTopology: cannot write %s: %s", filename, strerror(e));
		return e == ENOENT || e == ENOTDIR || e == EISDIR ? OCF_ERR(CU_FILE_INVALID_VALUE) : -e;
	}
	fprintf(f, "// PCIe topology seen by opencufile (GPUs, block devices, file systems); JSON after this line\n");
	fprintf(f, "%s\n", empty ? "null" : json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY));
	json_object_put(root);
	int bad = ferror(f);
	if (fclose(f) != 0 || bad) {
		log_error("cuFileExportPCIeTopology: writing %s failed", filename);
		return OCF_ERR(CU_FILE_IO_ERROR);
	}
	return 0;
}

OCF_EXPORT CUfileError_t cuFileExportPCIeTopology(const char *filename)
{
	API_FORK_GUARD(API_FORK_STATUS);
	if (!filename || !*filename)
		return api_status(OCF_ERR(CU_FILE_INVALID_VALUE));
	return api_status(export_topology(filename));
}
