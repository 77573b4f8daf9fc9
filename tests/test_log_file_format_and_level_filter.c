/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Logging: with CUFILE_LOGFILE_PATH=<file> (set by the test environment)
 * the library writes its log there, every line in the format
 *   " DD-MM-YYYY HH:MM:SS:mmm [pid=N tid=N] LEVEL component:line message"
 * with this process's pid; an error (a bad handle registration) produces an
 * ERROR line.  argv[1] says which CUFILE_LOGGING_LEVEL the environment set:
 *   debug -> lines below ERROR (INFO/DEBUG) appear too
 *   error -> no WARN/INFO/DEBUG/TRACE lines at all
 */
#include "test.h"

#include <regex.h>

#define LINE_RE                                                                             \
	"^ ([0-9]{2})-([0-9]{2})-([0-9]{4}) ([0-9]{2}):([0-9]{2}):([0-9]{2}):([0-9]{3}) "    \
	"\\[pid=([0-9]+) tid=([0-9]+)\\] (NOTICE|ERROR|WARN|INFO|DEBUG|TRACE) "              \
	"[^ :]+:[0-9]+ .*$"

static int field(const char *line, const regmatch_t *m)
{
	return atoi(line + m->rm_so);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "debug";
	const char *log = getenv("CUFILE_LOGFILE_PATH");
	const char *level = getenv("CUFILE_LOGGING_LEVEL");

	if (!log || !*log)
		T_SKIP("CUFILE_LOGFILE_PATH is not set");
	if (!level)
		T_SKIP("CUFILE_LOGGING_LEVEL is not set");
	fprintf(stderr, "log %s, level %s, mode %s\n", log, level, mode);
	unlink(log);

	/* Some API calls, including errors. */
	const char *path = t_make_pattern_file(64 * T_KIB, 0);
	int fd = t_open(path, O_RDWR);
	T_CUFILE_OK(cuFileDriverOpen());
	CUfileHandle_t fh = NULL;
	T_NE(t_try_register_fd(-1, &fh), CU_FILE_SUCCESS);
	int dir = t_open(t_dir(), O_RDONLY | O_DIRECTORY);
	T_NE(t_try_register_fd(dir, &fh), CU_FILE_SUCCESS);
	close(dir);
	fh = t_register_fd(fd);
	uint8_t buf[4096];
	T_IO(cuFileRead(fh, buf, sizeof(buf), 0, 0), sizeof(buf));
	T_CUFILE_OK(cuFileBufRegister(buf, sizeof(buf), 0));
	T_CUFILE_OK(cuFileBufDeregister(buf));
	cuFileHandleDeregister(fh);
	T_CUFILE_OK(cuFileDriverClose());
	close(fd);

	FILE *f = fopen(log, "r");
	if (!f)
		T_FAIL("no log file at %s: %s", log, strerror(errno));
	regex_t re;
	T_EQ(regcomp(&re, LINE_RE, REG_EXTENDED), 0);
	char line[8192];
	int nlines = 0, nerror = 0, nbelow = 0, nwarn = 0, lineno = 0;
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		size_t len = strlen(line);
		if (len && line[len - 1] == '\n')
			line[--len] = 0;
		if (!len)
			continue;
		regmatch_t m[11];
		if (regexec(&re, line, 11, m, 0) != 0)
			T_FAIL("log line %d does not match the format: \"%s\"", lineno, line);
		int day = field(line, &m[1]), mon = field(line, &m[2]), year = field(line, &m[3]);
		int hh = field(line, &m[4]), mm = field(line, &m[5]), ss = field(line, &m[6]);
		if (day < 1 || day > 31 || mon < 1 || mon > 12 || year < 2020 || hh > 23 || mm > 59 ||
		    ss > 60)
			T_FAIL("log line %d has an impossible date/time: \"%s\"", lineno, line);
		if (field(line, &m[8]) != (int)getpid())
			T_FAIL("log line %d has pid %d, this process is %d", lineno,
			       field(line, &m[8]), (int)getpid());
		const char *lv = line + m[10].rm_so;
		nlines++;
		if (!strncmp(lv, "ERROR", 5))
			nerror++;
		else if (!strncmp(lv, "WARN", 4))
			nwarn++;
		else if (!strncmp(lv, "INFO", 4) || !strncmp(lv, "DEBUG", 5) ||
			 !strncmp(lv, "TRACE", 5))
			nbelow++;
	}
	fclose(f);
	regfree(&re);
	fprintf(stderr, "%d lines: %d ERROR, %d WARN, %d INFO/DEBUG/TRACE\n", nlines, nerror,
		nwarn, nbelow);

	T_GE(nerror, 1);
	if (!strcmp(mode, "debug")) {
		T_GE(nbelow, 1);
	} else if (!strcmp(mode, "error")) {
		T_EQ(nbelow, 0);
		T_EQ(nwarn, 0);
	} else {
		T_FAIL("unknown mode %s", mode);
	}
	return 0;
}
