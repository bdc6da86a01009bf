/*
 * fuzz_libfyaml.h: for the fuzz targets whose input goes through libfyaml
 * (manifest, cluster file, tenants file); include it in exactly one file.
 *
 * libfyaml 0.7.12 (Debian's) leaks a 512 B or 4 KiB buffer when it formats
 * the text of some single-quoted scalars with '' escapes (fy_atom_format_text,
 * under fy_node_get_scalar and fy_node_get_scalar0 alike); a ten-line
 * program that builds such a document, reads its scalars and destroys it
 * leaks the same under valgrind. Not drover's memory, so LeakSanitizer is
 * told to skip stacks in libfyaml.so. NEEDSWORK: libfyaml has no frame
 * pointers, so a fy_document drover forgot to destroy would be skipped
 * too; the ASan unit tests and valgrind on `drover validate` cover that.
 */
#ifndef DROVER_FUZZ_LIBFYAML_H
#define DROVER_FUZZ_LIBFYAML_H

const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	return "leak:libfyaml.so\n";
}

#endif
