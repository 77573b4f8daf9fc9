/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cuFileExportPCIeTopology writes, with the driver closed or open, a file
 * whose first line is a // comment and whose rest is JSON: an object with
 * "gpus" (each with a PCI address and a NUMA node), "block_devices" and
 * "filesystems" arrays, or null when there is nothing to list.  An existing
 * file is replaced.  NULL, "", a missing directory and a directory are
 * CU_FILE_INVALID_VALUE.
 */
#include "test.h"

#include <json-c/json.h>

static void check_file(const char *path)
{
	FILE *f = fopen(path, "r");
	T_ASSERT(f != NULL);
	static char text[1 << 20];
	size_t n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	T_ASSERT(strncmp(text, "//", 2) == 0);
	char *body = strchr(text, '\n');
	T_ASSERT(body != NULL);
	struct json_object *root = json_tokener_parse(body + 1);
	if (!root) {
		T_ASSERT(strncmp(body + 1, "null", 4) == 0);
		return;
	}
	T_ASSERT(json_object_is_type(root, json_type_object));
	struct json_object *g, *b, *fs;
	T_ASSERT(json_object_object_get_ex(root, "gpus", &g) && json_object_is_type(g, json_type_array));
	T_ASSERT(json_object_object_get_ex(root, "block_devices", &b) && json_object_is_type(b, json_type_array));
	T_ASSERT(json_object_object_get_ex(root, "filesystems", &fs) && json_object_is_type(fs, json_type_array));
	int ngpu = 0;
	T_ASSERT(t_cuda_init() != 0 || cuDeviceGetCount(&ngpu) == CUDA_SUCCESS);
	T_EQ((long long)json_object_array_length(g), ngpu);
	for (size_t i = 0; i < json_object_array_length(g); i++) {
		struct json_object *e = json_object_array_get_idx(g, i), *v;
		T_ASSERT(json_object_object_get_ex(e, "pci_address", &v));
		T_ASSERT(json_object_object_get_ex(e, "numa_node", &v));
	}
	json_object_put(root);
}

int main(void)
{
	const char *path = t_new_file_path();
	FILE *f = fopen(path, "w");
	T_ASSERT(f != NULL);
	fputs("old contents that must go away\n", f);
	fclose(f);
	T_CUFILE_OK(cuFileExportPCIeTopology(path));
	check_file(path);
	T_CUFILE_OK(cuFileDriverOpen());
	T_CUFILE_OK(cuFileExportPCIeTopology(path));
	check_file(path);
	T_CUFILE_OK(cuFileDriverClose());

	T_CUFILE(cuFileExportPCIeTopology(NULL), CU_FILE_INVALID_VALUE);
	T_CUFILE(cuFileExportPCIeTopology(""), CU_FILE_INVALID_VALUE);
	T_CUFILE(cuFileExportPCIeTopology("/nonexistent-dir-ocf/topology.json"), CU_FILE_INVALID_VALUE);
	T_CUFILE(cuFileExportPCIeTopology("."), CU_FILE_INVALID_VALUE);
	return T_EXIT_PASS;
}
