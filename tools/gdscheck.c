/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gdscheck - what opencufile will do on this machine, and its statistics.
 *
 *   gdscheck [-p]      platform check: library version, which libcufile.so.0
 *                      this process loaded and why (which_libcufile.c),
 *                      configuration file, every setting of tier user
 *                      with its value and source (the tuning and test
 *                      ones where set; -k lists them all), GPUs
 *                      (BAR1 size, usable or not), mounted file systems
 *                      (type, O_DIRECT tested), io_uring, nvidia-fs, PCI
 *                      P2PDMA, the data path reads will take, and last one
 *                      verdict per GPU on the direct path (direct_route.c):
 *                      which route could DMA from storage into it, or the
 *                      first missing prerequisite.
 *   gdscheck -k        lists every setting as Markdown tables: the keys, then
 *                      the environment variables, each with its tier
 *                      (docs/configuration.md).
 *   gdscheck -s FILE   prints a statistics snapshot written by a process
 *                      running with OPENCUFILE_STATS_FILE=FILE (see
 *                      src/stats_file.h; stats_report.c, shared with
 *                      gds_stats, prints it).
 *
 * DESIGN: the configuration is computed by the library's own config.c,
 * compiled into this program, in this process's environment, so what is
 * printed is what the library computes at cuFileDriverOpen in a process
 * with the same environment (setter calls aside).  GPU facts come from the
 * CUDA driver loaded with dlopen (no GPU = a finding, not a failure) and
 * the BAR size from the library's cuFileGetBARSizeInKB.  O_DIRECT is tested
 * by writing and reading 4 KiB of an unnamed O_TMPFILE file on each
 * writable mount (a named file, unlinked at once, where O_TMPFILE is not
 * supported): the answer is what the kernel does, not what a table says.
 * The kernel configuration is read from /boot/config-$(uname -r) or
 * /proc/config.gz (zlib, when built with it).  OPENCUFILE_GDSCHECK_ROOT
 * (tests only) puts /sys, /proc/driver, /proc/config.gz, /proc/kallsyms and
 * /boot under a fake root; mounts, io_uring and the CUDA driver stay real.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <cufile.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "cpu_budget.h"
#include "direct_route.h"
#include "log.h"
#include "stats_report.h"
#include "which_libcufile.h"

#ifndef OCF_VERSION_STRING
#define OCF_VERSION_STRING "unknown"
#endif

/* ---------------------------------------------------------------- CUDA */

struct cu {
	CUresult (*Init)(unsigned);
	CUresult (*DeviceGetCount)(int *);
	CUresult (*DeviceGet)(CUdevice *, int);
	CUresult (*DeviceGetName)(char *, int, CUdevice);
	CUresult (*DeviceGetAttribute)(int *, CUdevice_attribute, CUdevice);
	CUresult (*DeviceGetPCIBusId)(char *, int, CUdevice);
	CUresult (*DriverGetVersion)(int *);
};

static int gpu_count = -1; /* -1: no usable driver */
static int usable_gpus;
#define MAX_GPUS 64
static struct dr_gpu gpus[MAX_GPUS]; /* the first gpu_count (at most MAX_GPUS) */
static struct dr_mounts rdma_mounts;

static void check_gpus(void)
{
	printf("\nGPUs\n");
	void *h = dlopen(config_env_text(OCF_E_LIBCUDA), RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		printf("  no CUDA driver (%s): host-memory mode\n", dlerror());
		return;
	}
	struct cu cu = {
		.Init = (CUresult(*)(unsigned))dlsym(h, "cuInit"),
		.DeviceGetCount = (CUresult(*)(int *))dlsym(h, "cuDeviceGetCount"),
		.DeviceGet = (CUresult(*)(CUdevice *, int))dlsym(h, "cuDeviceGet"),
		.DeviceGetName = (CUresult(*)(char *, int, CUdevice))dlsym(h, "cuDeviceGetName"),
		.DeviceGetAttribute = (CUresult(*)(int *, CUdevice_attribute, CUdevice))dlsym(h, "cuDeviceGetAttribute"),
		.DeviceGetPCIBusId = (CUresult(*)(char *, int, CUdevice))dlsym(h, "cuDeviceGetPCIBusId"),
		.DriverGetVersion = (CUresult(*)(int *))dlsym(h, "cuDriverGetVersion"),
	};
	if (!cu.Init || !cu.DeviceGetCount || !cu.DeviceGet || !cu.DeviceGetName || !cu.DeviceGetAttribute ||
	    !cu.DeviceGetPCIBusId) {
		printf("  CUDA driver lacks basic entry points: host-memory mode\n");
		return;
	}
	CUresult r = cu.Init(0);
	int n = 0;
	if (r != CUDA_SUCCESS || cu.DeviceGetCount(&n) != CUDA_SUCCESS || n == 0) {
		printf("  CUDA driver present, cuInit returned %d, %d GPUs: host-memory mode\n", (int)r, n);
		gpu_count = 0;
		return;
	}
	int ver = 0;
	if (cu.DriverGetVersion)
		cu.DriverGetVersion(&ver);
	printf("  CUDA driver API %d.%d, %d GPU%s\n", ver / 1000, ver % 1000 / 10, n, n == 1 ? "" : "s");
	gpu_count = n;
	for (int i = 0; i < n; i++) {
		CUdevice d;
		char name[128] = "?", bus[32] = "?";
		int mode = 0, uva = 0;
		cu.DeviceGet(&d, i);
		cu.DeviceGetName(name, (int)sizeof(name), d);
		cu.DeviceGetPCIBusId(bus, (int)sizeof(bus), d);
		cu.DeviceGetAttribute(&mode, CU_DEVICE_ATTRIBUTE_COMPUTE_MODE, d);
		cu.DeviceGetAttribute(&uva, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, d);
		size_t bar = 0;
		CUfileError_t e = cuFileGetBARSizeInKB(i, &bar);
		char barbuf[64];
		if (e.err == CU_FILE_SUCCESS)
			snprintf(barbuf, sizeof(barbuf), "BAR1 %zu MiB", bar / 1024);
		else
			snprintf(barbuf, sizeof(barbuf), "BAR1 unknown (%s)", cufileop_status_error(e.err));
		const char *why = mode == CU_COMPUTEMODE_PROHIBITED ? "no: compute mode prohibited"
				  : !uva			     ? "no: no unified addressing"
								     : "yes";
		if (why[0] == 'y')
			usable_gpus++;
		if (i < MAX_GPUS) {
			struct dr_gpu *g = &gpus[i];
			snprintf(g->bus, sizeof(g->bus), "%s", bus);
			for (char *c = g->bus; *c; c++)
				if (*c >= 'A' && *c <= 'F')
					*c = (char)(*c - 'A' + 'a');
			g->unusable = why[0] == 'y' ? NULL : why + 4;
			g->rdma = g->dmabuf = -1;
			cu.DeviceGetAttribute(&g->rdma, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED, d);
			cu.DeviceGetAttribute(&g->dmabuf, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, d);
		}
		printf("  GPU %d: %s, PCI %s, %s, usable: %s\n", i, name, bus, barbuf, why);
	}
}

/* ---------------------------------------------------------- file systems */

static const char *const pseudo_fs[] = {
	"proc", "sysfs", "devtmpfs", "devpts", "cgroup", "cgroup2", "mqueue", "securityfs", "debugfs", "tracefs",
	"pstore", "bpf", "configfs", "fusectl", "hugetlbfs", "autofs", "binfmt_misc", "rpc_pipefs", "nsfs",
	"efivarfs", "selinuxfs", "ramfs", NULL};

static bool is_pseudo(const char *type)
{
	for (const char *const *p = pseudo_fs; *p; p++)
		if (strcmp(type, *p) == 0)
			return true;
	return false;
}

/* mountinfo escapes blanks as \040 etc. */
static void unescape(char *s)
{
	char *o = s;
	for (char *p = s; *p; p++) {
		if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] && p[3]) {
			*o++ = (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
			p += 3;
		} else {
			*o++ = *p;
		}
	}
	*o = '\0';
}

/* Writes then reads 4 KiB with O_DIRECT in directory dir. */
static void test_odirect(const char *dir, bool ro, char *out, size_t len)
{
	if (ro) {
		snprintf(out, len, "not tested: read-only");
		return;
	}
	bool named = false;
	char path[4200];
	int fd = open(dir, O_TMPFILE | O_RDWR | O_DIRECT | O_CLOEXEC, 0600);
	if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
		snprintf(path, sizeof(path), "%s/.gdscheck.%d", strcmp(dir, "/") ? dir : "", (int)getpid());
		fd = open(path, O_CREAT | O_EXCL | O_RDWR | O_DIRECT | O_CLOEXEC, 0600);
		named = fd >= 0;
		if (named)
			unlink(path);
	}
	if (fd < 0) {
		if (errno == EACCES || errno == EPERM || errno == EROFS)
			snprintf(out, len, "not tested: not writable (%s)", strerror(errno));
		else
			snprintf(out, len, "no (open: %s)", strerror(errno));
		return;
	}
	void *buf = NULL;
	if (posix_memalign(&buf, 4096, 4096) != 0) {
		close(fd);
		snprintf(out, len, "not tested: out of memory");
		return;
	}
	memset(buf, 0x5a, 4096);
	ssize_t w = pwrite(fd, buf, 4096, 0);
	int we = errno;
	ssize_t r = w == 4096 ? pread(fd, buf, 4096, 0) : -1;
	int re = errno;
	if (w != 4096)
		snprintf(out, len, "no (write: %s)", w < 0 ? strerror(we) : "short");
	else if (r != 4096)
		snprintf(out, len, "no (read: %s)", r < 0 ? strerror(re) : "short");
	else
		snprintf(out, len, "yes");
	free(buf);
	close(fd);
}

static void check_mounts(bool all)
{
	printf("\nFile systems (O_DIRECT: 4 KiB written and read back in a temporary file)\n");
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f) {
		printf("  cannot read /proc/self/mountinfo: %s\n", strerror(errno));
		return;
	}
	char line[8192];
	int hidden = 0;
	while (fgets(line, sizeof(line), f)) {
		/* id parent major:minor root mountpoint options [optional...] - type source superoptions */
		char *fields[16];
		int n = 0;
		for (char *tok = strtok(line, " \n"); tok && n < 16; tok = strtok(NULL, " \n"))
			fields[n++] = tok;
		int dash = -1;
		for (int i = 6; i < n; i++)
			if (strcmp(fields[i], "-") == 0) {
				dash = i;
				break;
			}
		if (n < 6 || dash < 0 || dash + 2 >= n)
			continue;
		char *mnt = fields[4], *opts = fields[5], *type = fields[dash + 1], *src = fields[dash + 2];
		unescape(mnt);
		dr_note_mount(&rdma_mounts, type, mnt, dash + 3 < n ? fields[dash + 3] : NULL);
		if (!all && is_pseudo(type)) {
			hidden++;
			continue;
		}
		bool ro = strncmp(opts, "ro", 2) == 0 && (opts[2] == ',' || opts[2] == '\0');
		struct stat st;
		char res[160];
		if (stat(mnt, &st) != 0 || !S_ISDIR(st.st_mode))
			snprintf(res, sizeof(res), "not tested: not a directory");
		else
			test_odirect(mnt, ro, res, sizeof(res));
		printf("  %-28s %-10s %-24.24s O_DIRECT: %s\n", mnt, type, src, res);
	}
	fclose(f);
	if (hidden)
		printf("  (%d pseudo file systems not shown; -a shows them)\n", hidden);
}

/* ------------------------------------------------------------ kernel */

static bool exists(const char *p)
{
	char b[4200];
	struct stat st;
	return stat(dr_path(p, b, sizeof(b)), &st) == 0;
}

static void check_kernel(const struct dr_kconfig *kcfg, bool *nvfs, bool *p2p)
{
	struct utsname u;
	uname(&u);
	printf("\nKernel %s\n", u.release);

	struct io_uring_params prm;
	memset(&prm, 0, sizeof(prm));
	long fd = syscall(__NR_io_uring_setup, 4, &prm);
	if (fd >= 0) {
		close((int)fd);
		printf("  io_uring: available (features 0x%x); staged direct I/O uses it (OPENCUFILE_IO_BACKEND)\n",
		       prm.features);
	} else {
		printf("  io_uring: not available (%s)\n", strerror(errno));
	}

	/* Read-ahead's view of writes (src/readahead.c): stores through a
	 * shared mapping into pages already dirty are seen only through
	 * cachestat's count of dirty pages. */
	struct {
		uint64_t off, len;
	} range = {0, 4096};
	uint64_t counts[5];
	int cfd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	long cs = cfd >= 0 ? syscall(451 /* cachestat */, cfd, &range, counts, 0) : -1;
	const char *why = cs == 0 ? "" : strerror(errno);
	if (cfd >= 0)
		close(cfd);
	if (cs == 0)
		printf("  read-ahead: sees every write that ended before a read began (inotify, the file's times, "
		       "cachestat's dirty pages: ranges with dirty pages are not read ahead), but a Linux AIO "
		       "write still in flight; no windows on tmpfs or network file systems\n");
	else
		printf("  read-ahead: cachestat not answered (%s; Linux 6.5): stores through a shared mapping into "
		       "pages already dirty are NOT seen; read such files with OPENCUFILE_READAHEAD=off\n",
		       why);

	*nvfs = exists("/proc/driver/nvidia-fs");
	printf("  nvidia-fs: %s\n", *nvfs ? "loaded (/proc/driver/nvidia-fs); opencufile does not use it"
					  : "not loaded (no /proc/driver/nvidia-fs)");

	int providers = 0;
	char droot[4200];
	DIR *d = opendir(dr_path("/sys/bus/pci/devices", droot, sizeof(droot)));
	if (d) {
		struct dirent *e;
		while ((e = readdir(d)) != NULL) {
			char p[512];
			snprintf(p, sizeof(p), "/sys/bus/pci/devices/%s/p2pmem", e->d_name);
			if (e->d_name[0] != '.' && exists(p))
				providers++;
		}
		closedir(d);
	}
	char ktext[800];
	dr_kconfig_p2pdma_text(kcfg, ktext, sizeof(ktext));
	*p2p = providers > 0;
	printf("  PCI P2PDMA: kernel %s, %d device%s publishing p2pmem; opencufile does not use it\n", ktext,
	       providers, providers == 1 ? "" : "s");
	printf("  cuFileDriverSetP2PFlags: no flag can take effect here (setting one returns "
	       "CU_FILE_PLATFORM_NOT_SUPPORTED; every type reads back 0)\n");
}

/* ------------------------------------------------------- configuration */

/* The CPUs the library sizes its threads for: the same reading as the
 * library's at driver open (src/cpu_budget.c), of this process, which runs
 * with the same affinity and cgroup as a program started from the same
 * shell.  OPENCUFILE_GDSCHECK_ROOT prefixes the /proc and /sys paths. */
static void check_cpus(void)
{
	struct ocf_cpu_budget b;
	ocf_cpu_budget_read(&b, getenv("OPENCUFILE_GDSCHECK_ROOT"));
	printf("\nCPU budget\n");
	printf("  %ld CPU%s (limited by %s): online %ld, affinity mask %ld", b.budget, b.budget == 1 ? "" : "s",
	       b.limited_by, b.online, b.affinity);
	if (b.quota > 0)
		printf(", cgroup quota %.2f (%s)", b.quota, b.quota_from);
	else
		printf(", no cgroup quota");
	if (b.cap > 0)
		printf(", OPENCUFILE_CPUS %ld", b.cap);
	printf("\n  engine helpers, executor threads and participants per request are sized from it\n");
}

/* One setting's line of the report: name, value, source and a note. */
static void setting_line(const char *name, const char *value, enum ocf_cfg_source src, const char *note)
{
	printf("  %-44s %-30s %s%s\n", name, value, config_source_name(src), note);
}

/* The configuration: every setting of tier user with its value and source;
 * the tuning and test ones only where set (gdscheck -k lists them all). */
static void check_config(void)
{
	struct ocf_config *cfg = calloc(1, sizeof(*cfg));
	struct ocf_cfg_diags *d = calloc(1, sizeof(*d));
	if (!cfg || !d) {
		printf("out of memory\n");
		exit(1);
	}
	config_load(cfg, d);
	config_note_effective(cfg, d); /* values kept as set that the library uses otherwise */
	config_env_note_refused(d);    /* variables the library will not take as set */
	config_env_note_unknown(d);    /* variables named OPENCUFILE_* it does not know */
	printf("\nConfiguration\n");
	if (cfg->file_path[0])
		printf("  file: %s (%s)\n", cfg->file_path, cfg->file_ok ? "read" : "with errors");
	else
		printf("  file: none (%s does not exist): built-in defaults\n", config_file_path());
	for (int i = 0; i < d->n; i++)
		printf("  %s: %s\n", log_level_name(d->d[i].level), d->d[i].msg);
	if (d->dropped)
		printf("  ... %d more messages\n", d->dropped);
	int hidden[OCF_TIER_TEST + 1] = {0};
	char note[96];
	printf("  %-44s %-30s %s\n", "key", "value", "source");
	for (int k = 0; k < OCF_K_COUNT; k++) {
		const struct ocf_cfg_key_info *ki = config_key_info((enum ocf_cfg_key)k);
		enum ocf_cfg_source src = (enum ocf_cfg_source)cfg->source[k];
		if (ki->tier != OCF_TIER_USER && src == OCF_SRC_DEFAULT) {
			hidden[ki->tier]++;
			continue;
		}
		char v[OCF_CFG_LIST_LEN + 8];
		config_format_value(cfg, (enum ocf_cfg_key)k, v, sizeof(v));
		bool inert = strncmp(ki->drives, "accepted", 8) == 0;
		int o = snprintf(note, sizeof(note), "%s", inert ? " (reported only)" : "");
		if (ki->tier != OCF_TIER_USER)
			snprintf(note + o, sizeof(note) - (size_t)o, " (%s)", config_tier_name(ki->tier));
		setting_line(ki->path, v, src, note);
	}
	printf("  %-44s %-30s %s\n", "environment variable", "value", "source");
	/* The keys' variables: the key's value and where it came from. */
	for (int k = 0; k < OCF_K_COUNT; k++) {
		const struct ocf_cfg_key_info *ki = config_key_info((enum ocf_cfg_key)k);
		enum ocf_cfg_source src = (enum ocf_cfg_source)cfg->source[k];
		if (!ki->env || (ki->tier != OCF_TIER_USER && src == OCF_SRC_DEFAULT))
			continue;
		char v[OCF_CFG_LIST_LEN + 8];
		config_format_value(cfg, (enum ocf_cfg_key)k, v, sizeof(v));
		snprintf(note, sizeof(note), " (%s)", ki->path);
		setting_line(ki->env, v, src, note);
	}
	/* The variables that are no key's: the library's as it parses them,
	 * the other programs' as they read them. */
	for (int e = 0; e < OCF_E_COUNT; e++) {
		const struct ocf_env_info *ei = config_env_info((enum ocf_env)e);
		uint64_t val;
		const char *text;
		char why[240], v[160];
		enum ocf_cfg_source src;
		if (ei->reader) {
			text = getenv(ei->var);
			text = text && *text ? text : NULL;
			src = text ? OCF_SRC_ENV : OCF_SRC_DEFAULT;
			config_env_format((enum ocf_env)e, 0, text, src, v, sizeof(v));
		} else {
			src = config_env_parse((enum ocf_env)e, &val, &text, why, sizeof(why));
			config_env_format((enum ocf_env)e, val, text, src, v, sizeof(v));
		}
		if (ei->tier != OCF_TIER_USER && !text) {
			hidden[ei->tier]++;
			continue;
		}
		int o = 0;
		note[0] = '\0';
		if (ei->tier != OCF_TIER_USER || ei->reader)
			o = snprintf(note, sizeof(note), " (");
		if (ei->tier != OCF_TIER_USER && o > 0)
			o += snprintf(note + o, sizeof(note) - (size_t)o, "%s%s", config_tier_name(ei->tier),
				      ei->reader ? ", " : "");
		if (ei->reader && o > 0)
			o += snprintf(note + o, sizeof(note) - (size_t)o, "read by %s", ei->reader);
		if (o > 0 && (size_t)o < sizeof(note))
			snprintf(note + o, sizeof(note) - (size_t)o, ")");
		setting_line(ei->var, v, src, note);
	}
	printf("  not shown: %d tuning and %d test settings at their defaults; "
	       "gdscheck -k lists every setting with its tier\n",
	       hidden[OCF_TIER_TUNING], hidden[OCF_TIER_TEST]);
	free(cfg);
	free(d);
}

static void data_path_line(bool nvfs, bool p2p)
{
	printf("\nData path: ");
	if (gpu_count <= 0)
		printf("reads go file -> pread -> host memory, because no usable CUDA GPU was found "
		       "(host-memory mode: every buffer is treated as host memory).\n");
	else if (usable_gpus == 0)
		printf("reads into GPU memory will fail, because no GPU is usable; reads into host memory "
		       "go file -> pread -> host memory.\n");
	else
		printf("reads into GPU memory go file -> pread%s -> pinned staging buffer -> cuMemcpyHtoDAsync "
		       "-> GPU, because opencufile has no GPUDirect DMA path%s; reads into host memory go "
		       "straight to it with pread.\n",
		       " (O_DIRECT when the file was opened with it)",
		       nvfs || p2p ? " (nvidia-fs / P2PDMA are present but not used)"
				   : " (and neither nvidia-fs nor PCI P2PDMA is present)");
}

/* --------------------------------------------------------------- stats */

static int print_stats_file(const char *path)
{
	struct ocf_stats_file f;
	if (stats_report_read("gdscheck", path, &f) != 0)
		return 1;
	stats_report_print(stdout, &f, NULL, (int)f.level);
	return 0;
}

/* Refusal bits in words appended at buf + o, the first one after prefix;
 * returns the new offset. */
static int bits_words(unsigned r, const char *prefix, char *buf, size_t len, int o)
{
	static const char *const words[] = {"below the range", "above the range", "not a listed value",
					    "not a multiple of 4", "not increasing", "empty", "(0 accepted)"};
	const char *first = prefix;
	for (unsigned i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		if (!(r & (1u << i)) || o < 0 || (size_t)o >= len)
			continue;
		o += snprintf(buf + o, len - (size_t)o, "%s%s%s", o ? ", " : "", first, words[i]);
		first = "";
	}
	return o;
}

/* What a key refuses (config_key_refusal), in words; "" for nothing. */
static void refusal_words(enum ocf_cfg_key k, char *buf, size_t len)
{
	const struct ocf_refusal *r = config_key_refusal(k);
	buf[0] = '\0';
	int o = bits_words(r->all, "", buf, len, 0);
	o = bits_words(r->param, "parameter setter: ", buf, len, o);
	bits_words(r->prop, "property setter: ", buf, len, o);
}

/* The environment table as Markdown, for docs/configuration.md. */
static void print_env_table(void)
{
	static const char *const type_names[] = {"number", "switch", "word", "text"};
	printf("| variable | tier | type | default | range | read by | what it does |\n");
	printf("| --- | --- | --- | --- | --- | --- | --- |\n");
	for (int e = 0; e < OCF_E_COUNT; e++) {
		const struct ocf_env_info *ei = config_env_info((enum ocf_env)e);
		char def[160], range[128] = "", type[32];
		snprintf(type, sizeof(type), "%s", type_names[ei->type]);
		if (ei->type == OCF_ENV_NUMBER && *ei->unit)
			snprintf(type, sizeof(type), "number (%s)", ei->unit);
		if (ei->reader)
			def[0] = '\0';
		else if (ei->type == OCF_ENV_NUMBER && ei->def_text)
			snprintf(def, sizeof(def), "%s", ei->def_text); /* computed: in words */
		else if (ei->type == OCF_ENV_NUMBER)
			snprintf(def, sizeof(def), "`%llu`", (unsigned long long)ei->def);
		else if (ei->type == OCF_ENV_TEXT)
			snprintf(def, sizeof(def), ei->def_text ? "`%s`" : "unset", ei->def_text);
		else
			snprintf(def, sizeof(def), "`%s`", ei->type == OCF_ENV_SWITCH ? (ei->def ? "on" : "off")
										: ei->words[ei->def]);
		if (ei->type == OCF_ENV_NUMBER)
			snprintf(range, sizeof(range), "%llu .. %llu", (unsigned long long)ei->min,
				 (unsigned long long)ei->max);
		else if (ei->type == OCF_ENV_SWITCH)
			snprintf(range, sizeof(range), "on, off");
		else if (ei->type == OCF_ENV_WORD) {
			int o = 0;
			for (const char *const *w = ei->words; *w && o < (int)sizeof(range) - 1; w++)
				o += snprintf(range + o, sizeof(range) - (size_t)o, "%s%s", o ? ", " : "", *w);
		}
		const char *reader = ei->reader ? ei->reader : "the library";
		if (!ei->reader && ei->tier == OCF_TIER_TUNING)
			reader = "the library, at open";
		printf("| `%s` | %s | %s | %s | %s | %s | %s |\n", ei->var, config_tier_name(ei->tier), type,
		       def, range, reader, ei->doc);
	}
}

/* The key table as Markdown, for docs/configuration.md. */
static void print_key_table(void)
{
	static const char *const type_names[] = {"bool", "integer", "string", "integer array", "string array",
						 "object"};
	struct ocf_config def;
	config_load_defaults(&def);
	printf("| key | tier | type | default | range | refused | environment | what it drives here |\n");
	printf("| --- | --- | --- | --- | --- | --- | --- | --- |\n");
	for (int k = 0; k < OCF_K_COUNT; k++) {
		const struct ocf_cfg_key_info *ki = config_key_info((enum ocf_cfg_key)k);
		char v[OCF_CFG_LIST_LEN + 8], range[128] = "", refused[128];
		config_format_value(&def, (enum ocf_cfg_key)k, v, sizeof(v));
		if (ki->type == OCF_CFG_SIZE || ki->type == OCF_CFG_SIZE_ARRAY)
			snprintf(range, sizeof(range), "%s%llu .. %llu", ki->type == OCF_CFG_SIZE_ARRAY ? "each " : "",
				 (unsigned long long)ki->min, (unsigned long long)ki->max);
		else if (ki->choices) {
			int o = 0;
			for (const char *const *c = ki->choices; *c && o < (int)sizeof(range) - 1; c++)
				o += snprintf(range + o, sizeof(range) - (size_t)o, "%s%s", o ? ", " : "", *c);
		}
		refusal_words((enum ocf_cfg_key)k, refused, sizeof(refused));
		char env[64] = "";
		if (ki->env)
			snprintf(env, sizeof(env), "`%s`", ki->env);
		printf("| `%s` | %s | %s | `%s` | %s | %s | %s | %s |\n", ki->path, config_tier_name(ki->tier),
		       type_names[ki->type], v, range, refused, env, ki->drives);
	}
}

static void usage(FILE *to)
{
	fprintf(to, "usage: gdscheck [-p] [-a]    platform check (-a: list pseudo file systems too)\n"
		    "       gdscheck -s FILE      print a statistics file (OPENCUFILE_STATS_FILE)\n"
		    "       gdscheck -k           list every setting: the keys, then the environment variables "
		    "(Markdown)\n");
}

int main(int argc, char **argv)
{
	bool all = false;
	int opt;
	while ((opt = getopt(argc, argv, "paks:h")) != -1) {
		switch (opt) {
		case 'p':
			break;
		case 'a':
			all = true;
			break;
		case 's':
			return print_stats_file(optarg);
		case 'k':
			print_key_table();
			printf("\n");
			print_env_table();
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	int v = 0;
	cuFileGetVersion(&v);
	printf("opencufile %s, cuFile API %d.%d (cuFileGetVersion %d)\n", OCF_VERSION_STRING, v / 1000,
	       v % 1000 / 10, v);
	report_libcufile();
	check_config();
	check_cpus();
	check_gpus();
	check_mounts(all);
	bool nvfs = false, p2p = false;
	struct dr_kconfig kcfg;
	dr_kconfig_load(&kcfg);
	check_kernel(&kcfg, &nvfs, &p2p);
	data_path_line(nvfs, p2p);
	dr_report(&kcfg, &rdma_mounts, gpus, gpu_count > MAX_GPUS ? MAX_GPUS : gpu_count);
	return 0;
}
