/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api.h - helpers shared by the public API files.
 */
#ifndef OCF_API_H_
#define OCF_API_H_

#include "cufile.h"

/* Internal result (0, -errno or -CUfileOpError) to CUfileError_t. */
CUfileError_t api_status(long r);

#endif /* OCF_API_H_ */
