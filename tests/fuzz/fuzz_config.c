/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_config - libFuzzer target for the cufile.json reader.
 *
 * Feeds arbitrary bytes to config_parse_text over the defaults and checks
 * the reader's promises on whatever comes out: no crash or sanitizer report,
 * every effective size within its key's [min, max] (and the stored one too
 * where the key refuses values outside it), every string NUL-terminated
 * inside its field, arrays within bounds (and their elements within range
 * where refused outside it), slab arrays of equal length, a staging budget
 * within its cap, and every message NUL-terminated.  Built with -DOPENCUFILE_FUZZ=ON and clang:
 *   build/tests/fuzz_config tests/fuzz/corpus_config -max_total_time=300
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

static struct ocf_config cfg;
static struct ocf_cfg_diags diags;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	config_load_defaults(&cfg);
	memset(&diags, 0, sizeof(diags));
	config_parse_text(&cfg, (const char *)data, size, "fuzz.json", &diags);
	for (int k = 0; k < OCF_K_COUNT; k++) {
		const struct ocf_cfg_key_info *ki = config_key_info((enum ocf_cfg_key)k);
		const char *f = (const char *)&cfg + ki->offset;
		unsigned r = config_key_refusal((enum ocf_cfg_key)k)->all; /* what the file refuses */
		switch (ki->type) {
		case OCF_CFG_SIZE: {
			size_t v = *(const size_t *)f, e = config_effective_size(&cfg, (enum ocf_cfg_key)k);
			if (ki->max != UINT64_MAX && (e < ki->min || e > ki->max))
				abort();
			if (((r & OCF_REFUSE_BELOW_MIN) && v < ki->min) || ((r & OCF_REFUSE_ABOVE_MAX) && v > ki->max))
				abort();
			break;
		}
		case OCF_CFG_SIZE_ARRAY: {
			const struct ocf_size_array *a = (const void *)f;
			if (a->n < 1 || a->n > OCF_CFG_ARRAY_MAX)
				abort();
			for (size_t i = 0; i < a->n; i++)
				if (((r & OCF_REFUSE_BELOW_MIN) && a->v[i] < ki->min) ||
				    ((r & OCF_REFUSE_ABOVE_MAX) && a->v[i] > ki->max))
					abort();
			break;
		}
		case OCF_CFG_STRING:
		case OCF_CFG_STRING_ARRAY:
		case OCF_CFG_OBJECT:
			if (!memchr(f, '\0', ki->size))
				abort();
			break;
		case OCF_CFG_BOOL:
			if (*(const unsigned char *)f > 1)
				abort();
			break;
		}
		if (cfg.source[k] > OCF_SRC_SETTER)
			abort();
	}
	if (cfg.posix_pool_slab_size_kb.n != cfg.posix_pool_slab_count.n)
		abort();
	if (config_staging_budget(&cfg, NULL) > config_staging_budget_cap())
		abort();
	config_note_effective(&cfg, &diags);
	for (int i = 0; i < diags.n; i++)
		if (!memchr(diags.d[i].msg, '\0', sizeof(diags.d[i].msg)))
			abort();
	return 0;
}
