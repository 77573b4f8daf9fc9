/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cuda_loader.c - dlopen of the CUDA driver.
 *
 * DESIGN: loaded once per process (pthread_once) and never unloaded: the
 * driver keeps threads and atexit handlers of its own, and unloading it
 * under a running process is unsafe.  Failure is graded: no library, a
 * missing symbol, cuInit failing or zero devices all leave the library in
 * host-memory-only mode, with the reason logged once at INFO level.
 */
#define _GNU_SOURCE
#include "cuda_loader.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>

#include "config.h"
#include "internal.h"
#include "log.h"

struct ocf_cuda ocf_cu;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int load_result = -ENODEV;
static int device_count;

static void load_driver(void)
{
	const char *path = config_env_text(OCF_E_LIBCUDA);
	void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		log_info("CUDA driver not loaded (%s): host memory only", dlerror());
		return;
	}
	struct ocf_cuda t;
#define OCF_CUDA_RESOLVE(name, sym, ret, args)                                         \
	t.name = (ret(*) args)dlsym(lib, sym);                                         \
	if (!t.name) {                                                         \
		log_error("CUDA driver %s lacks %s: host memory only", path, sym);     \
		return;                                                        \
	}
	OCF_CUDA_FUNCS(OCF_CUDA_RESOLVE)
#undef OCF_CUDA_RESOLVE
#define OCF_CUDA_RESOLVE_OPTIONAL(name, sym, ret, args) t.name = (ret(*) args)dlsym(lib, sym);
	OCF_CUDA_OPTIONAL_FUNCS(OCF_CUDA_RESOLVE_OPTIONAL)
#undef OCF_CUDA_RESOLVE_OPTIONAL

	CUresult r = t.Init(0);
	if (r != CUDA_SUCCESS) {
		log_info("cuInit failed (%d): host memory only", (int)r);
		return;
	}
	int n = 0;
	r = t.DeviceGetCount(&n);
	if (r != CUDA_SUCCESS || n <= 0) {
		log_info("no CUDA device (%d, count %d): host memory only", (int)r, n);
		return;
	}
	ocf_cu = t;
	device_count = n;
	load_result = 0;
	int ver = 0;
	t.DriverGetVersion(&ver);
	log_info("CUDA driver %s loaded: version %d, %d device(s)", path, ver, n);
}

int cuda_load(void)
{
	pthread_once(&load_once, load_driver);
	return load_result;
}

bool cuda_available(void) { return cuda_load() == 0; }

int cuda_device_count(void) { return cuda_available() ? device_count : 0; }

static __thread CUresult last_error;

CUresult cuda_last_error(void) { return last_error; }

const char *cuda_error_name(CUresult r)
{
	last_error = r;
	const char *s = NULL;
	if (cuda_available() && ocf_cu.GetErrorName(r, &s) == CUDA_SUCCESS && s)
		return s;
	return "CUDA_ERROR_UNKNOWN";
}
