/* SPDX-License-Identifier: Apache-2.0 */
/* A file that is not valid JSON is one ERROR naming the file and the line
 * where parsing stopped, and every key keeps its default (none of the
 * values before the error is applied).  Also: truncated files, trailing
 * garbage, a non-object top level, a missing CUFILE_ENV_PATH_JSON file. */
#define OCF_CONFIG_UNIT
#include "config_test_util.h"

static struct ocf_config cfg;
static struct ocf_cfg_diags d;

static void expect_one_error(const char *path, const char *line, const char *what)
{
	t_load(path, &cfg, &d);
	if (d.n != 1 || d.d[0].level != OCF_LOG_ERROR || !strstr(d.d[0].msg, path) ||
	    !strstr(d.d[0].msg, line) || !strstr(d.d[0].msg, what)) {
		t_print_diags(&d);
		T_FAIL("expected one ERROR with %s and \"%s\"", line, what);
	}
	T_EQ_U(cfg.max_direct_io_size_kb, 16384);
	T_EQ_U(cfg.io_batchsize, 128);
	T_EQ(cfg.source[OCF_K_MAX_DIRECT_IO_SIZE_KB], OCF_SRC_DEFAULT);
	T_ASSERT(!cfg.file_ok);
}

int main(void)
{
	t_clear_config_env();
	t_set_case("missing comma");
	expect_one_error(t_data("cufile_syntax_error.json"), ":5:", "not valid JSON");
	t_set_case("truncated");
	expect_one_error(t_write_text_file("{\n \"properties\": {\n  \"io_batchsize\": 64,\n"), ":4:",
			 "unexpected end of file");
	t_set_case("trailing text");
	expect_one_error(t_write_text_file("{ \"properties\": { \"io_batchsize\": 64 } }\n\n}x\n"), ":3:",
			 "after the top-level object");
	t_set_case("top level array");
	expect_one_error(t_write_text_file("[1, 2]\n"), ":1:", "not an object");
	t_set_case("unterminated comment");
	expect_one_error(t_write_text_file("{ \"properties\": {} }\n/* open\n"), ":3:", "unexpected end of file");
	t_set_case("missing file");
	expect_one_error("/nonexistent/cufile.json", "/nonexistent/cufile.json", "cannot read");
	/* Trailing comments after the object are fine. */
	t_set_case("trailing comment");
	t_load(t_write_text_file("{ \"properties\": { \"io_batchsize\": 64 } }\n// end\n/* x */\n"), &cfg, &d);
	T_EQ(d.n, 0);
	T_EQ_U(cfg.io_batchsize, 64);
	return T_EXIT_PASS;
}
