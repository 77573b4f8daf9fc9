/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api_pending.c - entry points of the 1.15 surface whose subsystems are not
 * implemented yet: batch and stream I/O.  Each
 * returns a documented error (never success) and logs once that the
 * feature is missing, so a caller fails loudly instead of silently.
 */
#define _GNU_SOURCE
#include <stdatomic.h>

#include "api.h"
#include "internal.h"
#include "log.h"

static CUfileError_t missing(const char *fn, CUfileOpError code)
{
	log_error("%s is not implemented by this version of opencufile", fn);
	return api_status(OCF_ERR(code));
}

#define NOT_YET(fn, code) return missing(fn, code)

OCF_EXPORT CUfileError_t cuFileBatchIOSetUp(CUfileBatchHandle_t *batch_idp, unsigned nr)
{
	(void)batch_idp, (void)nr;
	NOT_YET(__func__, CU_FILE_BATCH_NOCOMPAT_ERROR);
}
OCF_EXPORT CUfileError_t cuFileBatchIOSubmit(CUfileBatchHandle_t b, unsigned nr, CUfileIOParams_t *p, unsigned int f)
{
	(void)b, (void)nr, (void)p, (void)f;
	NOT_YET(__func__, CU_FILE_INVALID_VALUE);
}
OCF_EXPORT CUfileError_t cuFileBatchIOGetStatus(CUfileBatchHandle_t b, unsigned min_nr, unsigned *nr,
						CUfileIOEvents_t *ev, struct timespec *t)
{
	(void)b, (void)min_nr, (void)nr, (void)ev, (void)t;
	NOT_YET(__func__, CU_FILE_INVALID_VALUE);
}
OCF_EXPORT CUfileError_t cuFileBatchIOCancel(CUfileBatchHandle_t b)
{
	(void)b;
	NOT_YET(__func__, CU_FILE_INVALID_VALUE);
}
OCF_EXPORT void cuFileBatchIODestroy(CUfileBatchHandle_t b) { (void)b; }

OCF_EXPORT CUfileError_t cuFileReadAsync(CUfileHandle_t fh, void *b, size_t *s, off_t *fo, off_t *bo, ssize_t *out,
					 CUstream st)
{
	(void)fh, (void)b, (void)s, (void)fo, (void)bo, (void)out, (void)st;
	NOT_YET(__func__, CU_FILE_ASYNC_NOT_SUPPORTED);
}
OCF_EXPORT CUfileError_t cuFileWriteAsync(CUfileHandle_t fh, void *b, size_t *s, off_t *fo, off_t *bo, ssize_t *out,
					  CUstream st)
{
	(void)fh, (void)b, (void)s, (void)fo, (void)bo, (void)out, (void)st;
	NOT_YET(__func__, CU_FILE_ASYNC_NOT_SUPPORTED);
}
OCF_EXPORT CUfileError_t cuFileStreamRegister(CUstream st, unsigned flags)
{
	(void)st, (void)flags;
	NOT_YET(__func__, CU_FILE_ASYNC_NOT_SUPPORTED);
}
OCF_EXPORT CUfileError_t cuFileStreamDeregister(CUstream st)
{
	(void)st;
	NOT_YET(__func__, CU_FILE_ASYNC_NOT_SUPPORTED);
}
