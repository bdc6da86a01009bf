/*
 * fuzz_yaml.c: libFuzzer target for src/spec/yaml.c, the layer in front of
 * libfyaml. Whatever drv_yaml_guard lets through is parsed, every document
 * of the stream, and turned into JSON with drv_yaml_node_json; nothing may
 * crash. The parser runs with FYPCF_DISABLE_RECYCLING so that libfyaml's
 * own frees go through ASan: a double free like the one the guard exists
 * for (0.7.12's, on "? s:<TAB>?") is reported even where the recycling
 * allocator drover uses would only crash later, if at all.
 */
#include "drover/spec.h"

#include <libfyaml.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_libfyaml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fy_parse_cfg cfg;
	struct fy_parser *fyp;
	struct fy_document *fyd;
	struct drv_diags d;
	char *buf = malloc(size + 1);
	int ndocs = 0;

	memcpy(buf, data, size);
	buf[size] = '\0';
	drv_diags_init(&d, "fuzz");
	if (!drv_yaml_guard(buf, size, &d)) {
		/* refused: with one error at a real position */
		if (d.nerrors != 1 || d.v[0].line < 1 || d.v[0].col < 1)
			abort();
		goto out;
	}
	memset(&cfg, 0, sizeof(cfg));
	cfg.flags = FYPCF_QUIET | FYPCF_DISABLE_RECYCLING;
	fyp = fy_parser_create(&cfg);
	if (!fyp || fy_parser_set_string(fyp, buf, size))
		abort();
	while (ndocs++ < 16 && (fyd = fy_parse_load_document(fyp))) {
		json_decref(drv_yaml_node_json(fy_document_root(fyd)));
		fy_document_destroy(fyd);
	}
	fy_parser_destroy(fyp);
out:
	drv_diags_release(&d);
	free(buf);
	return 0;
}
