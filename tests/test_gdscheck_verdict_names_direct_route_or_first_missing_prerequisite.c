/* SPDX-License-Identifier: Apache-2.0 */
/* gdscheck (argv[1]) ends its report with one verdict per GPU on the direct
 * path: the route storage could DMA into that GPU by, or the first missing
 * prerequisite.  Each case builds a fake /sys, /proc/driver, /proc/config.gz
 * and /boot under OPENCUFILE_GDSCHECK_ROOT and runs gdscheck against the
 * stand-in CUDA driver's two GPUs (PCI 0000:01:00.0 and 0000:02:00.0):
 *
 *   GPU 0 sits behind a PCIe switch (root port 00:01.0, switch ports
 *   0a:00.0 / 0b:00.0); an NVMe controller, when a case adds one, sits on
 *   another port of the same switch (0b:01.0 -> 04:00.0).  GPU 1 hangs off
 *   root port 00:02.0 alone, so no NVMe ever shares a bridge with it.
 *
 * The kernel configuration is read from /boot/config-$(uname -r) first and
 * from /proc/config.gz (gzip, zlib) otherwise; a gdscheck built without zlib
 * must say it could not read the latter.  Last, without any GPU, gdscheck
 * says there is no direct route to consider. */
#include "test.h"

#include <sys/utsname.h>
#ifdef OCF_HAVE_ZLIB
#include <zlib.h>
#endif

static const char *tool;
static char root[PATH_MAX];

static void put(const char *rel, const char *text)
{
	char path[PATH_MAX + 400], cmd[PATH_MAX + 500];
	snprintf(path, sizeof(path), "%s%s", root, rel);
	snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", path);
	T_EQ(system(cmd), 0);
	FILE *f = fopen(path, "w");
	T_ASSERT(f != NULL);
	fputs(text, f);
	T_EQ(fclose(f), 0);
}

static void mkdirs(const char *rel)
{
	char cmd[PATH_MAX + 100];
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s%s'", root, rel);
	T_EQ(system(cmd), 0);
}

/* A PCI function at sysfs path devices/<chain> with its class, linked from
 * bus/pci/devices/<bus> the way the kernel links it (relative). */
static void pci_dev(const char *chain, const char *cls)
{
	char rel[700], link[PATH_MAX + 200], target[800];
	snprintf(rel, sizeof(rel), "/sys/devices/%s/class", chain);
	put(rel, cls);
	const char *bus = strrchr(chain, '/') + 1;
	mkdirs("/sys/bus/pci/devices");
	snprintf(link, sizeof(link), "%s/sys/bus/pci/devices/%s", root, bus);
	snprintf(target, sizeof(target), "../../../devices/%s", chain);
	T_EQ(symlink(target, link), 0);
}

#define RP1 "pci0000:00/0000:00:01.0"
#define SW RP1 "/0000:0a:00.0"
#define RP2 "pci0000:00/0000:00:02.0"

static void topology(bool nvme_near, bool nvme_far)
{
	pci_dev(RP1, "0x060400\n");
	pci_dev(SW, "0x060400\n");
	pci_dev(SW "/0000:0b:00.0", "0x060400\n");
	pci_dev(SW "/0000:0b:00.0/0000:01:00.0", "0x030200\n");
	pci_dev(RP2, "0x060400\n");
	pci_dev(RP2 "/0000:02:00.0", "0x030200\n");
	if (nvme_near) {
		pci_dev(SW "/0000:0b:01.0", "0x060400\n");
		pci_dev(SW "/0000:0b:01.0/0000:04:00.0", "0x010802\n");
	}
	if (nvme_far)
		pci_dev("pci0000:00/0000:00:03.0/0000:05:00.0", "0x010802\n");
}

static void boot_config(const char *text)
{
	struct utsname u;
	T_EQ(uname(&u), 0);
	char rel[400];
	snprintf(rel, sizeof(rel), "/boot/config-%s", u.release);
	put(rel, text);
}

/* /proc/config.gz, gzip-compressed; without zlib in this build a file that
 * only starts like gzip, which gdscheck must refuse to read the same way. */
static void proc_config_gz(const char *text)
{
	char path[PATH_MAX + 100];
	mkdirs("/proc");
	snprintf(path, sizeof(path), "%s/proc/config.gz", root);
#ifdef OCF_HAVE_ZLIB
	gzFile g = gzopen(path, "wb");
	T_ASSERT(g != NULL);
	T_EQ(gzputs(g, text), (long long)strlen(text));
	T_EQ(gzclose(g), Z_OK);
#else
	FILE *f = fopen(path, "w");
	T_ASSERT(f != NULL);
	fputs("\x1f\x8b not really gzip", f);
	fclose(f);
	(void)text;
#endif
}

static void open_module(const char *version_line, bool static_bar1)
{
	put("/proc/driver/nvidia/version", version_line);
	put("/proc/driver/nvidia/params", static_bar1
					      ? "ResmanDebugLevel: 4294967295\nRegistryDwords: "
						"\"RMForceStaticBar1=1;RmForceDisableIomapWC=1;\"\n"
					      : "ResmanDebugLevel: 4294967295\nRegistryDwords: \"\"\n");
}

#define OPEN_580 "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build\n"
#define OPEN_560 "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  560.35.03  Release Build\n"
#define PROPRIETARY "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.95.05  Release Build\n"

static void new_root(const char *name)
{
	t_set_case("%s", name);
	snprintf(root, sizeof(root), "%s/gdscheck_root_%d", t_dir(), (int)getpid());
	char cmd[2 * PATH_MAX + 100];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' && mkdir -p '%s'", root, root);
	T_EQ(system(cmd), 0);
	if (root[0] != '/') {
		char abs[PATH_MAX];
		T_ASSERT(realpath(root, abs) != NULL);
		memcpy(root, abs, sizeof(root));
	}
}

static char out[1 << 17];

static const char *run(void)
{
	setenv("OPENCUFILE_GDSCHECK_ROOT", root, 1);
	char cmd[2 * PATH_MAX + 100];
	snprintf(cmd, sizeof(cmd), "%s 2>&1", tool);
	FILE *p = popen(cmd, "r");
	T_ASSERT(p != NULL);
	size_t n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = '\0';
	T_EQ(pclose(p), 0);
	return out;
}

/* The report ends with exactly these lines. */
static void expect_tail(const char *const *lines, int n)
{
	size_t len = strlen(out), want = 0;
	for (int i = 0; i < n; i++)
		want += strlen(lines[i]) + 1;
	const char *tail = want <= len ? out + len - want : out;
	const char *p = tail;
	for (int i = 0; i < n; i++) {
		size_t l = strlen(lines[i]);
		if (want > len || strncmp(p, lines[i], l) != 0 || p[l] != '\n') {
			fprintf(stderr, "--- gdscheck output ---\n%s--- expected to end with ---\n", out);
			for (int j = 0; j < n; j++)
				fprintf(stderr, "%s\n", lines[j]);
			T_FAIL("verdict lines differ");
		}
		p += l + 1;
	}
	/* ...and the line before them is the last of the section, not a verdict. */
	T_ASSERT(tail > out && tail[-1] == '\n');
	const char *prev = tail - 1;
	while (prev > out && prev[-1] != '\n')
		prev--;
	T_ASSERT(strncmp(prev, "GPU ", 4) != 0);
}

#define TAIL(...)                                                                                            \
	do {                                                                                                 \
		const char *const l_[] = {__VA_ARGS__};                                                      \
		expect_tail(l_, (int)(sizeof(l_) / sizeof(l_[0])));                                          \
	} while (0)

#define NO "no direct route \xe2\x80\x94 "
#define NOT_NEAR                                                                                             \
	"no NVMe behind the same PCIe switch as the GPU (between root ports the kernel allows peer "         \
	"DMA only on host bridges of its allowlist)"

int main(int argc, char **argv)
{
	if (argc < 2)
		T_FAIL("usage: %s GDSCHECK", argv[0]);
	tool = argv[1];
	setenv("FAKECUDA_DEVICE_COUNT", "2", 1);
	setenv("CUFILE_ENV_PATH_JSON", "/nonexistent/cufile.json", 1);

	new_root("P2PDMA unset, known from /proc/config.gz only");
	topology(true, false);
	open_module(OPEN_580, true);
	proc_config_gz("CONFIG_PCI=y\n# CONFIG_PCI_P2PDMA is not set\nCONFIG_DMA_SHARED_BUFFER=y\n");
	run();
#ifdef OCF_HAVE_ZLIB
	T_ASSERT(
	    strstr(out, "PCI P2PDMA: kernel not built in (CONFIG_PCI_P2PDMA is not set in /proc/config.gz)"));
	TAIL("GPU 0: " NO "CONFIG_PCI_P2PDMA is not set in the running kernel",
	     "GPU 1: " NO "CONFIG_PCI_P2PDMA is not set in the running kernel");
#else
	TAIL("GPU 0: " NO "could not tell whether the running kernel has CONFIG_PCI_P2PDMA (could not read "
	     "/proc/config.gz: gdscheck was built without zlib)",
	     "GPU 1: " NO "could not tell whether the running kernel has CONFIG_PCI_P2PDMA (could not read "
	     "/proc/config.gz: gdscheck was built without zlib)");
#endif

	new_root("P2PDMA set in /boot (which wins over /proc/config.gz), no NVMe");
	topology(false, false);
	open_module(OPEN_580, true);
	boot_config("CONFIG_PCI_P2PDMA=y\nCONFIG_DMA_SHARED_BUFFER=y\nCONFIG_ZONE_DEVICE=y\n");
	proc_config_gz("# CONFIG_PCI_P2PDMA is not set\n");
	run();
	T_ASSERT(strstr(out, "kernel configuration: /boot/config-"));
	TAIL("GPU 0: " NO "no NVMe controller (no PCI device of class 0x0108 under /sys/bus/pci/devices)",
	     "GPU 1: " NO "no NVMe controller (no PCI device of class 0x0108 under /sys/bus/pci/devices)");

	new_root("P2PDMA set, NVMe behind GPU 0's switch, open module 580, static BAR1");
	topology(true, false);
	open_module(OPEN_580, true);
	boot_config("CONFIG_PCI_P2PDMA=y\n");
	run();
	T_ASSERT(strstr(out, "NVMe controllers: 0000:04:00.0"));
	T_ASSERT(strstr(out, "NVIDIA kernel module: open, 580.95.05"));
	TAIL("GPU 0: direct route possible: PCI P2PDMA with NVMe 0000:04:00.0 (common PCIe bridge "
	     "0000:0a:00.0)",
	     "GPU 1: " NO NOT_NEAR);

	new_root("P2PDMA set, the only NVMe on another root port");
	topology(false, true);
	open_module(OPEN_580, true);
	boot_config("CONFIG_PCI_P2PDMA=y\n");
	run();
	TAIL("GPU 0: " NO NOT_NEAR, "GPU 1: " NO NOT_NEAR);

	new_root("P2PDMA set, NVMe near, proprietary module");
	topology(true, false);
	open_module(PROPRIETARY, true);
	boot_config("CONFIG_PCI_P2PDMA=y\n");
	run();
	TAIL("GPU 0: " NO "the NVIDIA kernel module is the proprietary one; PCI P2PDMA needs the open one",
	     "GPU 1: " NO NOT_NEAR);

	new_root("P2PDMA set, NVMe near, open module 560");
	topology(true, false);
	open_module(OPEN_560, true);
	boot_config("CONFIG_PCI_P2PDMA=y\n");
	run();
	TAIL("GPU 0: " NO "the open NVIDIA module 560.35.03 is older than 565, the first with PCI P2PDMA",
	     "GPU 1: " NO NOT_NEAR);

	new_root("P2PDMA set, NVMe near, no static BAR1");
	topology(true, false);
	open_module(OPEN_580, false);
	boot_config("CONFIG_PCI_P2PDMA=y\n");
	run();
	TAIL("GPU 0: " NO "static BAR1 is not requested (NVreg_RegistryDwords has no RMForceStaticBar1=1 in "
	     "/proc/driver/nvidia/params)",
	     "GPU 1: " NO NOT_NEAR);

	new_root("nvidia-fs loaded, P2PDMA unset");
	topology(true, false);
	open_module(OPEN_580, true);
	boot_config("# CONFIG_PCI_P2PDMA is not set\n");
	mkdirs("/proc/driver/nvidia-fs");
	run();
	T_ASSERT(strstr(out, "nvidia-fs: loaded (/proc/driver/nvidia-fs); opencufile does not use it"));
	TAIL("GPU 0: direct route possible: nvidia-fs with NVMe 0000:04:00.0",
	     "GPU 1: direct route possible: nvidia-fs with NVMe 0000:04:00.0");

	new_root("no kernel configuration anywhere, p2pdma_pgmap_ops in kallsyms");
	topology(false, false);
	put("/proc/kallsyms", "0000000000000000 T _stext\n0000000000000000 d p2pdma_pgmap_ops\n");
	run();
	T_ASSERT(strstr(out, "p2pdma_pgmap_ops in /proc/kallsyms"));
	TAIL("GPU 0: " NO "no NVMe controller (no PCI device of class 0x0108 under /sys/bus/pci/devices)",
	     "GPU 1: " NO "no NVMe controller (no PCI device of class 0x0108 under /sys/bus/pci/devices)");

	new_root("no kernel configuration anywhere, no kallsyms");
	topology(true, false);
	run();
	struct utsname u;
	T_EQ(uname(&u), 0);
	char want[700];
	snprintf(want, sizeof(want),
		 "could not tell whether the running kernel has CONFIG_PCI_P2PDMA (no /boot/config-%s, no "
		 "/proc/config.gz)",
		 u.release);
	char w0[800], w1[800];
	snprintf(w0, sizeof(w0), "GPU 0: " NO "%s", want);
	snprintf(w1, sizeof(w1), "GPU 1: " NO "%s", want);
	TAIL(w0, w1);

	new_root("the stand-in driver reports no GPU");
	setenv("FAKECUDA_DEVICE_COUNT", "0", 1);
	run();
	TAIL("no GPU: no direct route to consider (the CUDA driver reports no GPU)");

	new_root("no CUDA driver");
	setenv("OPENCUFILE_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
	run();
	TAIL("no GPU: no direct route to consider (no CUDA driver)");

	char cmd[2 * PATH_MAX + 100];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	T_EQ(system(cmd), 0);
	return T_EXIT_PASS;
}
