/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log.h - cufile.log in NVIDIA's line format:
 *   " DD-MM-YYYY HH:MM:SS:mmm [pid=N tid=N] LEVEL component:line message"
 */
#ifndef OCF_LOG_H_
#define OCF_LOG_H_

enum ocf_log_level {
	OCF_LOG_NOTICE = 0,
	OCF_LOG_ERROR,
	OCF_LOG_WARN,
	OCF_LOG_INFO,
	OCF_LOG_DEBUG,
	OCF_LOG_TRACE,
};

/* Sets level and file exactly (the configuration has already merged the
 * environment and the parameter setters); used by the driver at open.
 * Until then: level ERROR, cufile.log in the working directory; the file
 * is opened at the first line. */
void log_set(int level, const char *path);
int log_level_from_name(const char *name); /* -1 if unknown */
const char *log_level_name(int level);
int log_current_level(void);
void log_close(void);
/* In the child of a fork(): log_lock may have been held by a parent thread
 * that does not exist here; makes it usable again (single-threaded child). */
void log_after_fork_child(void);

void log_write(int level, const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#define ocf_log(level, ...)                                                   \
	do {                                                                  \
		if ((level) <= log_current_level())                           \
			log_write((level), __FILE__, __LINE__, __VA_ARGS__);  \
	} while (0)
#define log_error(...) ocf_log(OCF_LOG_ERROR, __VA_ARGS__)
#define log_warn(...) ocf_log(OCF_LOG_WARN, __VA_ARGS__)
#define log_info(...) ocf_log(OCF_LOG_INFO, __VA_ARGS__)
#define log_debug(...) ocf_log(OCF_LOG_DEBUG, __VA_ARGS__)
#define log_notice(...) ocf_log(OCF_LOG_NOTICE, __VA_ARGS__)

#endif /* OCF_LOG_H_ */
