/*
 * fuzz_proto.c: libFuzzer target for the agent protocol's decoders
 * (include/drover/proto.h). The input is read as JSON and decoded as each
 * message; what decodes must encode, decode again and encode to the same
 * bytes, and what fails must say why.
 */
#include "drover/proto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void no_log(void *cls, const char *line)
{
	(void)cls;
	(void)line;
}

/* One message type: decode, and the round trip on success. */
#define CHECK(kind)                                                                     \
	do {                                                                            \
		struct drv_proto_##kind m, m2;                                          \
		if (drv_proto_##kind##_decode(j, &m, &d) == 0) {                        \
			json_t *e1 = drv_proto_##kind##_encode(&m), *e2;                \
			char *a, *b;                                                    \
			if (drv_proto_##kind##_decode(e1, &m2, &d) != 0) {              \
				fprintf(stderr, #kind " encoding does not decode: %s\n", d.err); \
				abort();                                                \
			}                                                               \
			e2 = drv_proto_##kind##_encode(&m2);                            \
			a = json_dumps(e1, JSON_COMPACT | JSON_SORT_KEYS);              \
			b = json_dumps(e2, JSON_COMPACT | JSON_SORT_KEYS);              \
			if (strcmp(a, b)) {                                             \
				fprintf(stderr, #kind " round trip differs:\n%s\n%s\n", a, b); \
				abort();                                                \
			}                                                               \
			free(a);                                                        \
			free(b);                                                        \
			json_decref(e1);                                                \
			json_decref(e2);                                                \
			drv_proto_##kind##_release(&m2);                                \
			drv_proto_##kind##_release(&m);                                 \
		} else if (!d.err[0]) {                                                 \
			fprintf(stderr, #kind ": a failed decode without a reason\n");  \
			abort();                                                        \
		}                                                                       \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct drv_proto_seen *seen;
	struct drv_proto_dec d = { .peer = "fuzz", .log = no_log };
	json_t *j = json_loadb((const char *)data, size, 0, NULL);

	if (!seen)
		seen = drv_proto_seen_new();
	d.seen = seen;
	if (!j)
		return 0;
	CHECK(register);
	CHECK(registered);
	CHECK(sync);
	CHECK(sync_reply);
	json_decref(j);
	return 0;
}
