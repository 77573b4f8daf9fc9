/* SPDX-License-Identifier: Apache-2.0 */
/*
 * which_libcufile.c - gdscheck's report of which libcufile.so.0 this process
 * loaded, whether it is opencufile, and why the dynamic loader chose it.
 *
 * DESIGN: the loaded copy is the object that provides cuFileRead (dladdr).
 * The reason is found by redoing, for the name "libcufile.so.0", the search
 * that ld.so does for a program's DT_NEEDED entry, step by step:
 *   1. LD_PRELOAD (an entry that is this file);
 *   2. the program's DT_RPATH, LD_LIBRARY_PATH, the program's DT_RUNPATH:
 *      dlinfo(RTLD_DI_SERINFO) lists exactly these, in ld.so's order, ahead
 *      of the system directories, which come last (glibc leaves dls_flags
 *      0, so a directory is told apart by its name: in LD_LIBRARY_PATH, a
 *      system library directory, or else the program's own);
 *   3. the ld.so cache: its first libcufile.so.0 of this machine type wins
 *      (`ldconfig -p` prints the cache in lookup order); ldconfig builds it
 *      from the directories of /etc/ld.so.conf and its include files, read
 *      in order, so the file that lists the winner's directory is named;
 *   4. the system directories.
 * The first step that yields a file is the prediction; when it is the file
 * actually loaded the report says "chosen by", otherwise it says what a
 * program without its own RUNPATH would get (a library loaded by full path,
 * or through another library's RUNPATH, as torch does with the nvidia-cufile
 * wheel, is not predicted here).  A copy is recognised as opencufile by the
 * names of its OPENCUFILE_* settings inside the file.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <link.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cufile.h>

#include "which_libcufile.h"

#define SONAME "libcufile.so.0"
#define MAX_CACHE 16

static bool same_file(const char *a, const char *b)
{
	struct stat sa, sb;
	return a && b && stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* "opencufile", "another implementation" or why the file cannot be read. */
static const char *identify(const char *path)
{
	static const char marker[] = "OPENCUFILE_LIBCUDA";
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return "unreadable";
	static char buf[1 << 16];
	size_t keep = 0;
	bool found = false;
	ssize_t n;
	while (!found && (n = read(fd, buf + keep, sizeof(buf) - keep)) > 0) {
		size_t have = keep + (size_t)n;
		found = memmem(buf, have, marker, sizeof(marker) - 1) != NULL;
		keep = have < sizeof(marker) ? have : sizeof(marker) - 1;
		memmove(buf, buf + have - keep, keep);
	}
	close(fd);
	return found ? "opencufile" : "another implementation";
}

/* Whether the ELF file is of this process's class and machine. */
static bool same_machine(const char *path)
{
	static ElfW(Ehdr) self;
	static int have_self = -1;
	ElfW(Ehdr) h;
	if (have_self < 0) {
		int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
		have_self = fd >= 0 && read(fd, &self, sizeof(self)) == (ssize_t)sizeof(self);
		if (fd >= 0)
			close(fd);
	}
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	bool ok = read(fd, &h, sizeof(h)) == (ssize_t)sizeof(h);
	close(fd);
	if (!ok || memcmp(h.e_ident, ELFMAG, SELFMAG) != 0)
		return false;
	return !have_self || (h.e_ident[EI_CLASS] == self.e_ident[EI_CLASS] && h.e_machine == self.e_machine);
}

/* libcufile.so.0 entries of the ld.so cache for this machine, in lookup order. */
static int cache_entries(char paths[][PATH_MAX], int max)
{
	static const char *const ldconfig[] = {"/sbin/ldconfig", "/usr/sbin/ldconfig"};
	const char *prog = NULL;
	for (size_t i = 0; i < sizeof(ldconfig) / sizeof(ldconfig[0]) && !prog; i++)
		if (access(ldconfig[i], X_OK) == 0)
			prog = ldconfig[i];
	if (!prog)
		return -1;
	char cmd[64];
	snprintf(cmd, sizeof(cmd), "%s -p 2>/dev/null", prog);
	FILE *p = popen(cmd, "r");
	if (!p)
		return -1;
	char line[PATH_MAX + 128];
	int n = 0;
	while (fgets(line, sizeof(line), p)) {
		char *s = line + strspn(line, " \t");
		if (strncmp(s, SONAME " ", sizeof(SONAME)) != 0)
			continue;
		char *arrow = strstr(s, "=> ");
		if (!arrow)
			continue;
		arrow += 3;
		arrow[strcspn(arrow, "\n")] = 0;
		if (n < max && same_machine(arrow))
			snprintf(paths[n++], PATH_MAX, "%s", arrow);
	}
	pclose(p);
	return n;
}

/* The first file of /etc/ld.so.conf (following includes, in order) that
 * lists DIR; "" when none does. */
static bool conf_lists(const char *conf, const char *dir, char *who, size_t len, int depth)
{
	FILE *f = fopen(conf, "r");
	if (!f || depth > 4) {
		if (f)
			fclose(f);
		return false;
	}
	char line[PATH_MAX + 16];
	bool found = false;
	while (!found && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "#\n")] = 0;
		char *s = line + strspn(line, " \t");
		if (!*s)
			continue;
		if (strncmp(s, "include", 7) == 0 && (s[7] == ' ' || s[7] == '\t')) {
			char *pat = s + 8 + strspn(s + 8, " \t");
			pat[strcspn(pat, " \t")] = 0;
			char full[PATH_MAX];
			if (pat[0] != '/') { /* relative to the including file's directory */
				const char *slash = strrchr(conf, '/');
				int dl = slash ? (int)(slash - conf) : 0;
				snprintf(full, sizeof(full), "%.*s/%.*s", dl, conf, PATH_MAX - 2 - dl, pat);
			} else {
				snprintf(full, sizeof(full), "%s", pat);
			}
			glob_t g;
			if (glob(full, 0, NULL, &g) == 0) {
				for (size_t i = 0; i < g.gl_pathc && !found; i++)
					found = conf_lists(g.gl_pathv[i], dir, who, len, depth + 1);
				globfree(&g);
			}
			continue;
		}
		s[strcspn(s, " \t:=,")] = 0;
		char real[PATH_MAX];
		if (realpath(s, real) && strcmp(real, dir) == 0) {
			snprintf(who, len, "%s", conf);
			found = true;
		}
	}
	fclose(f);
	return found;
}

static bool in_ld_library_path(const char *dir)
{
	const char *p = getenv("LD_LIBRARY_PATH");
	size_t n = strlen(dir);
	while (p && *p) {
		size_t len = strcspn(p, ":;");
		if (len == n && strncmp(p, dir, n) == 0)
			return true;
		p += len + (p[len] != 0);
	}
	return false;
}

/* /lib, /usr/lib, their 32/64/x32 forms and multiarch subdirectories. */
static bool is_system_dir(const char *d)
{
	if (strncmp(d, "/usr", 4) == 0)
		d += 4;
	if (strncmp(d, "/lib", 4) != 0)
		return false;
	d += 4;
	if (strncmp(d, "64", 2) == 0 || strncmp(d, "32", 2) == 0)
		d += 2;
	else if (strncmp(d, "x32", 3) == 0)
		d += 3;
	if (*d == 0)
		return true;
	return *d == '/' && !strchr(d + 1, '/') && strstr(d, "-linux-") != NULL;
}

static void explain_cache_entry(const char *entry)
{
	char dir[PATH_MAX], real[PATH_MAX], who[PATH_MAX] = "";
	snprintf(dir, sizeof(dir), "%s", entry);
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = 0;
	if (!realpath(dir, real))
		snprintf(real, sizeof(real), "%s", dir);
	if (conf_lists("/etc/ld.so.conf", real, who, sizeof(who), 0))
		printf("    its directory is listed in %s\n"
		       "    (ldconfig reads /etc/ld.so.conf and the files it includes in order;\n"
		       "    the directories of an earlier file come first in the cache)\n",
		       who);
	else
		printf("    its directory is not listed in /etc/ld.so.conf(.d): a system directory,\n"
		       "    which ldconfig puts after the listed ones\n");
}

void report_libcufile(void)
{
	printf("\nLibrary\n");
	Dl_info info;
	char loaded[PATH_MAX] = "?";
	if (dladdr((void *)cuFileRead, &info) && info.dli_fname && !realpath(info.dli_fname, loaded))
		snprintf(loaded, sizeof(loaded), "%s", info.dli_fname);
	printf("  %s in this process: %s (%s)\n", SONAME, loaded, identify(loaded));

	/* 1. LD_PRELOAD */
	const char *pre = getenv("LD_PRELOAD");
	if (pre && *pre) {
		char *list = strdup(pre), *save = NULL;
		for (char *t = list ? strtok_r(list, " :", &save) : NULL; t; t = strtok_r(NULL, " :", &save))
			if (same_file(t, loaded)) {
				printf("  chosen by: LD_PRELOAD (%s)\n", t);
				free(list);
				return;
			}
		free(list);
	}

	/* 2. RPATH, LD_LIBRARY_PATH, RUNPATH; 4. the system directories. */
	char predicted[PATH_MAX] = "", why[PATH_MAX + 64] = "";
	char defaults[8][PATH_MAX];
	int ndefaults = 0;
	void *self = dlopen(NULL, RTLD_LAZY);
	Dl_serinfo size;
	if (self && dlinfo(self, RTLD_DI_SERINFOSIZE, &size) == 0) {
		Dl_serinfo *si = malloc(size.dls_size);
		if (si) {
			*si = size;
			if (dlinfo(self, RTLD_DI_SERINFO, si) == 0) {
				for (unsigned i = 0; i < si->dls_cnt; i++) {
					const char *d = si->dls_serpath[i].dls_name;
					if (is_system_dir(d) && !in_ld_library_path(d)) {
						if (ndefaults < 8)
							snprintf(defaults[ndefaults++], PATH_MAX, "%.*s", PATH_MAX - 32, d);
						continue;
					}
					char cand[PATH_MAX];
					snprintf(cand, sizeof(cand), "%.*s/%s", PATH_MAX - 32, d, SONAME);
					if (!predicted[0] && access(cand, R_OK) == 0 && same_machine(cand)) {
						snprintf(predicted, sizeof(predicted), "%s", cand);
						snprintf(why, sizeof(why), "%s (%.*s)",
							 in_ld_library_path(d) ? "LD_LIBRARY_PATH"
									       : "this program's RPATH/RUNPATH",
							 PATH_MAX - 32, d);
					}
				}
			}
			free(si);
		}
	}
	if (self)
		dlclose(self);

	/* 3. the ld.so cache */
	char cache[MAX_CACHE][PATH_MAX];
	int nc = cache_entries(cache, MAX_CACHE);
	bool from_cache = false;
	if (!predicted[0] && nc > 0) {
		snprintf(predicted, sizeof(predicted), "%s", cache[0]);
		snprintf(why, sizeof(why), "the ld.so cache, whose first %s is %s", SONAME, cache[0]);
		from_cache = true;
	}
	for (int i = 0; !predicted[0] && i < ndefaults; i++) {
		char cand[PATH_MAX];
		snprintf(cand, sizeof(cand), "%.*s/%s", PATH_MAX - 32, defaults[i], SONAME);
		if (access(cand, R_OK) == 0 && same_machine(cand)) {
			snprintf(predicted, sizeof(predicted), "%s", cand);
			snprintf(why, sizeof(why), "the system directory %.*s (not in the ld.so cache)",
				 PATH_MAX - 64, defaults[i]);
		}
	}

	if (predicted[0] && same_file(predicted, loaded)) {
		printf("  chosen by: %s\n", why);
	} else if (predicted[0]) {
		printf("  loaded by another route (a full path, or a library's own RUNPATH);\n"
		       "  a program without a RUNPATH would get %s (%s), chosen by %s\n",
		       predicted, identify(predicted), why);
	} else {
		printf("  loaded by another route; no %s in the search path or the ld.so cache\n", SONAME);
	}
	if (from_cache)
		explain_cache_entry(cache[0]);
	if (nc < 0)
		printf("  ld.so cache: ldconfig not found, not read\n");
	for (int i = 0; i < nc; i++)
		printf("  ld.so cache entry %d: %s (%s)\n", i + 1, cache[i], identify(cache[i]));
	printf("  to choose: LD_PRELOAD=/path/%s for one process; for every process an\n"
	       "  /etc/ld.so.conf.d entry sorted first, then ldconfig (docs/using.md)\n",
	       SONAME);
}
