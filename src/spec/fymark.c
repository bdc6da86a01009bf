/*
 * fymark.c: where a libfyaml node starts in its file, for error messages.
 * Shared by the manifest and cluster-file parsers, which both report
 * "file:line:col" for any node, collections included.
 */
#include "spec_int.h"

#include <libfyaml.h>

void drv_spec_node_mark(struct fy_node *n, int *line, int *col)
{
	int guard = 0;

	*line = *col = 0;
	/* a collection has no token of its own: use its first scalar's */
	while (n && guard++ < DRV_SPEC_MAX_DEPTH) {
		if (fy_node_is_scalar(n)) {
			struct fy_token *t = fy_node_get_scalar_token(n);
			const struct fy_mark *m = t ? fy_token_start_mark(t) : NULL;
			if (m) {
				*line = m->line + 1; /* fy_mark is 0-based */
				*col = m->column + 1;
			}
			return;
		} else if (fy_node_is_mapping(n)) {
			void *it = NULL;
			struct fy_node_pair *p = fy_node_mapping_iterate(n, &it);
			n = p ? fy_node_pair_key(p) : NULL;
		} else if (fy_node_is_sequence(n)) {
			void *it = NULL;
			n = fy_node_sequence_iterate(n, &it);
		} else {
			return;
		}
	}
}
