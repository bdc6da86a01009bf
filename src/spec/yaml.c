/*
 * yaml.c: what drover does around libfyaml, both because of bugs in
 * Debian's libfyaml 0.7.12 that a user's file can reach.
 *
 * 1. drv_yaml_guard, the check every YAML text passes before libfyaml sees
 * it. libfyaml 0.7.12 frees a simple key twice when it refuses a tab
 * after the ':' of a key inside an explicit key ("? s:<TAB>?" is the
 * smallest such input): fy_fetch_value recycles the key, then
 * fy_ws_indentation_check fails ("cannot use tab for indentation of block
 * entry") and the error path recycles it again. The corrupted free list
 * crashes fy_parser_destroy -> fy_parse_cleanup -> fy_indent_vacuum_internal
 * (SEGV; with FYPCF_DISABLE_RECYCLING, glibc's "double free" abort). No
 * parse flag avoids it, so we refuse such text first.
 *
 * What is refused is a tab in the blanks that follow a block indicator
 * ("- ", "? ", ": ") on the same line when a block collection indicator
 * ("- ", "? ", ": ") or, where libfyaml checks, a block scalar ("|", ">")
 * comes next: there the blanks are indentation (YAML 1.2 s-indent), which
 * YAML allows to be spaces only. libfyaml refuses all of these too, only
 * without crashing in most places. Tabs elsewhere are left alone: inside
 * quoted, block and plain scalars, in comments, in flow collections, and
 * between "key:" and a plain scalar or a block scalar ("key:<TAB>|" is
 * valid YAML and libfyaml reads it).
 *
 * The scan is a small line-by-line lexer: it knows enough (quotes, flow
 * brackets, comments, block scalar bodies) not to look for indicators
 * inside scalars, nothing more. It is not a YAML parser.
 *
 * 2. drv_yaml_node_json, a node as JSON without libfyaml's emitter: its
 * JSON mode dereferences NULL (fy_emit_token_scalar -> fy_atom_is_number)
 * on an empty block scalar at the end of the text ("a: |\n"), valid YAML.
 */
#include "spec_int.h"

#include <libfyaml.h>
#include <stdio.h>
#include <string.h>

struct scan {
	const char *b;
	size_t len;
	struct drv_diags *d;
	int flow;        /* depth of [ and { */
	char quote;      /* '"' or '\'' while inside a quoted scalar, else 0 */
	bool block;      /* inside a block scalar's body */
	int block_indent; /* its header line's indentation; -1: until --- or ... */
	/* column of the explicit key ("? ") libfyaml still has open, 0 when
	 * none, -1 when unknown (a tab came before it on its line) */
	int qkey;
	int line;        /* 1-based, of the line being scanned */
	/* where column() got to on this line: byte cpos is column ccol, and
	 * ctab says whether a tab came before it (linear time on long lines) */
	size_t cpos;
	int ccol;
	bool ctab;
};

static bool blank(char c)
{
	return c == ' ' || c == '\t';
}

/* blank, line break or end of text at i */
static bool blankz(const struct scan *s, size_t i)
{
	return i >= s->len || blank(s->b[i]) || s->b[i] == '\n' || s->b[i] == '\r';
}

/* 1-based column of byte i of the current line, in characters; i never
 * goes back within a line, so a line costs its length once */
static int column(struct scan *s, size_t i)
{
	for (; s->cpos < i; s->cpos++) {
		if (s->b[s->cpos] == '\t')
			s->ctab = true;
		if (((unsigned char)s->b[s->cpos] & 0xc0) != 0x80)
			s->ccol++;
	}
	return s->ccol;
}

/* Past the closing quote of the scalar whose body starts at i, or le when
 * it goes on past the line (s->quote stays set then). */
static size_t skip_quoted(struct scan *s, size_t i, size_t le)
{
	while (i < le) {
		char c = s->b[i++];
		if (s->quote == '"' && c == '\\') {
			i++;
		} else if (c == s->quote) {
			if (s->quote == '\'' && i < le && s->b[i] == '\'') {
				i++; /* '' is a quote inside '...' */
			} else {
				s->quote = 0;
				return i;
			}
		}
	}
	return le;
}

/* Flow content from i: past the bracket that closes the outermost flow
 * collection, or le (s->flow stays > 0 then). */
static size_t skip_flow(struct scan *s, size_t ls, size_t i, size_t le)
{
	while (i < le) {
		char c = s->b[i];
		if (s->quote) {
			i = skip_quoted(s, i, le);
			continue;
		}
		if (c == '#' && (i == ls || blank(s->b[i - 1])))
			return le;
		if ((c == '"' || c == '\'') &&
		    (i == ls || blank(s->b[i - 1]) || strchr("[{,:", s->b[i - 1]))) {
			s->quote = c;
		} else if (c == '[' || c == '{') {
			s->flow++;
		} else if (c == ']' || c == '}') {
			if (--s->flow == 0)
				return i + 1;
		}
		i++;
	}
	return le;
}

/*
 * The block indicator ind at i (followed by a blank): checks the blanks
 * after it. Returns where they end, or 0 after reporting a tab.
 */
static size_t after_indicator(struct scan *s, size_t i, size_t le)
{
	char ind = s->b[i], next;
	size_t j = i + 1, tab = 0;
	bool bad, complex = s->qkey != 0, tabbed;
	int col = column(s, i);

	tabbed = s->ctab; /* a tab before the indicator on its line */

	if (ind == '?') {
		s->qkey = tabbed ? -1 : col;
	} else if (ind == ':' && s->qkey > 0 && !tabbed && col <= s->qkey) {
		s->qkey = 0; /* the ':' of the explicit key: libfyaml closes it */
	}
	while (j < le && blank(s->b[j])) {
		if (s->b[j] == '\t' && !tab)
			tab = j;
		j++;
	}
	if (!tab || j >= le)
		return j;
	next = s->b[j];
	if (ind != ':' || complex) {
		/* where libfyaml runs fy_ws_indentation_check: its own rule */
		bad = strchr("?:|>", next) || (next == '-' && blankz(s, j + 1));
	} else {
		/* after a plain key's ':' only a block sequence or explicit key
		 * is indentation (and invalid on the key's line anyway) */
		bad = (next == '-' || next == '?') && blankz(s, j + 1);
	}
	if (!bad)
		return j;
	drv_diag_err(s->d, s->line, column(s, tab), NULL,
		     "found a tab in indentation, expected spaces (YAML forbids tabs for indentation)");
	return 0;
}

/* One line [ls, le); false after reporting a tab. */
static bool scan_line(struct scan *s, size_t ls, size_t le)
{
	const char *b = s->b;
	size_t i = ls, indent = 0;
	bool tokstart = true, doc_line = false;

	s->cpos = ls;
	s->ccol = 1;
	s->ctab = false;

	while (i < le && b[i] == ' ')
		i++;
	indent = i - ls;
	if (s->block) {
		size_t k = i;
		while (k < le && (blank(b[k]) || b[k] == '\r'))
			k++;
		if (k == le)
			return true; /* a blank line goes with the scalar */
		if (s->block_indent < 0 ? !((le - ls >= 3) && (!memcmp(b + ls, "---", 3) ||
								!memcmp(b + ls, "...", 3)) && blankz(s, ls + 3))
					: (int)indent > s->block_indent)
			return true;
		s->block = false;
	}
	if (s->quote || s->flow)
		tokstart = false; /* inside a scalar or collection begun above */
	if (s->quote)
		i = skip_quoted(s, ls, le);
	else if (s->flow)
		i = skip_flow(s, ls, ls, le);
	else if (le > ls && b[ls] == '%')
		return true; /* a directive */
	else if (le - ls >= 3 && (!memcmp(b + ls, "---", 3) || !memcmp(b + ls, "...", 3)) &&
		 blankz(s, ls + 3)) {
		i = ls + 3;
		doc_line = true;
	}
	while (i < le) {
		char c = b[i];
		if (s->quote) {
			i = skip_quoted(s, i, le);
			continue;
		}
		if (s->flow) {
			i = skip_flow(s, ls, i, le);
			continue;
		}
		if (blank(c) || c == '\r') {
			i++;
			continue;
		}
		if (c == '#' && (i == ls || blank(b[i - 1])))
			break;
		if ((c == ':' || (tokstart && (c == '-' || c == '?'))) && blankz(s, i + 1)) {
			i = after_indicator(s, i, le);
			if (!i)
				return false;
			tokstart = true;
			continue;
		}
		if (!tokstart) {
			i++;
			continue;
		}
		if (c == '"' || c == '\'') {
			s->quote = c;
			i++;
			tokstart = false;
		} else if (c == '[' || c == '{') {
			s->flow = 1;
			i++;
			tokstart = false;
		} else if (c == '|' || c == '>') {
			s->block = true;
			s->block_indent = doc_line ? -1 : (int)indent;
			break;
		} else if (c == '&' || c == '!') {
			while (i < le && !blankz(s, i))
				i++; /* an anchor or tag: the node comes after it */
		} else {
			tokstart = false; /* a plain scalar or an alias */
			i++;
		}
	}
	return true;
}

bool drv_yaml_guard(const char *buf, size_t len, struct drv_diags *d)
{
	struct scan s = { .b = buf, .len = len, .d = d, .qkey = 0, .line = 1 };
	size_t ls = 0, le;

	if (!drv_spec_check_text(buf, len, false, d))
		return false;
	if (len >= 3 && !memcmp(buf, "\xef\xbb\xbf", 3))
		ls = 3; /* a byte order mark: not content */
	while (ls < len) {
		/* YAML breaks lines at LF, CRLF and a lone CR */
		for (le = ls; le < len && buf[le] != '\n' && buf[le] != '\r'; le++)
			;
		if (!scan_line(&s, ls, le))
			return false;
		ls = le + (le + 1 < len && buf[le] == '\r' && buf[le + 1] == '\n' ? 2 : 1);
		s.line++;
	}
	return true;
}

bool drv_yaml_guard_err(const char *buf, size_t len, char *err, size_t errsz)
{
	struct drv_diags d;
	bool ok;

	drv_diags_init(&d, NULL);
	ok = drv_yaml_guard(buf, len, &d);
	if (!ok && d.n)
		snprintf(err, errsz, "%d:%d: %s", d.v[0].line, d.v[0].col, d.v[0].msg);
	drv_diags_release(&d);
	return ok;
}

/* Is t (n bytes) a JSON number, as libfyaml's JSON emitter tells them? */
static bool json_number(const char *t, size_t n)
{
	size_t i = 0;

	if (i < n && t[i] == '-')
		i++;
	if (i >= n || t[i] < '0' || t[i] > '9')
		return false;
	if (t[i] == '0')
		i++;
	else
		while (i < n && t[i] >= '0' && t[i] <= '9')
			i++;
	if (i < n && t[i] == '.') {
		if (++i >= n || t[i] < '0' || t[i] > '9')
			return false;
		while (i < n && t[i] >= '0' && t[i] <= '9')
			i++;
	}
	if (i < n && (t[i] == 'e' || t[i] == 'E')) {
		if (++i < n && (t[i] == '+' || t[i] == '-'))
			i++;
		if (i >= n || t[i] < '0' || t[i] > '9')
			return false;
		while (i < n && t[i] >= '0' && t[i] <= '9')
			i++;
	}
	return i == n;
}

json_t *drv_yaml_node_json(struct fy_node *n)
{
	json_t *j;

	if (!n)
		return json_null();
	if (fy_node_is_mapping(n)) {
		void *it = NULL;
		struct fy_node_pair *p;
		j = json_object();
		while ((p = fy_node_mapping_iterate(n, &it))) {
			struct fy_node *k = fy_node_pair_key(p);
			size_t kl = 0;
			const char *kt = k && fy_node_is_scalar(k) ? fy_node_get_scalar(k, &kl) : NULL;
			char *key;
			if (!kt)
				continue; /* a collection as a key has no JSON form */
			key = drv_strndup(kt, kl);
			json_object_set_new(j, key, drv_yaml_node_json(fy_node_pair_value(p)));
			drv_free(key);
		}
	} else if (fy_node_is_sequence(n)) {
		void *it = NULL;
		struct fy_node *x;
		j = json_array();
		while ((x = fy_node_sequence_iterate(n, &it)))
			json_array_append_new(j, drv_yaml_node_json(x));
	} else {
		size_t len = 0, tl = 0;
		const char *t = fy_node_get_scalar(n, &len);
		bool plain;
		enum fy_node_style st = fy_node_get_style(n);
		j = NULL;
		if (!t)
			t = "";
		/* a block scalar has no escapes, so no NUL, but 0.7.12 gives one
		 * byte 0 for an empty one at the end of the text ("a: |\n") */
		if (st == FYNS_LITERAL || st == FYNS_FOLDED)
			len = strnlen(t, len);
		plain = st == FYNS_PLAIN && !fy_node_get_tag(n, &tl);
		/* the JSON emitter's typing: plain null, true, false, numbers */
		if (plain && (len == 0 || (len == 4 && !memcmp(t, "null", 4))))
			j = json_null();
		else if (plain && len == 4 && !memcmp(t, "true", 4))
			j = json_true();
		else if (plain && len == 5 && !memcmp(t, "false", 5))
			j = json_false();
		else if (plain && json_number(t, len))
			j = json_loadb(t, len, JSON_DECODE_ANY, NULL); /* NULL when too big */
		if (!j)
			j = json_stringn(t, len);
		if (!j)
			j = json_string(""); /* not UTF-8: drv_yaml_guard lets none through */
	}
	return j;
}

int drv_yaml_load(const char *buf, size_t len, struct drv_diags *d, struct fy_document **out)
{
	struct fy_parse_cfg cfg;
	struct fy_diag_cfg dcfg;
	struct fy_diag *diag;
	struct fy_diag_error *e;
	void *it = NULL;
	int n = 0;

	*out = NULL;
	if (!drv_yaml_guard(buf, len, d))
		return DRV_EPARSE;
	fy_diag_cfg_default(&dcfg);
	dcfg.fp = NULL;
	dcfg.colorize = false;
	diag = fy_diag_create(&dcfg);
	if (diag)
		fy_diag_set_collect_errors(diag, true);
	memset(&cfg, 0, sizeof(cfg));
	cfg.flags = FYPCF_QUIET | FYPCF_COLLECT_DIAG;
	cfg.diag = diag;
	*out = fy_document_build_from_string(&cfg, buf, len);
	if (*out) {
		fy_diag_unref(diag); /* the document holds its own reference */
		return 0;
	}
	while (diag && (e = fy_diag_errors_iterate(diag, &it))) {
		drv_diag_err(d, e->line, e->column, NULL, "YAML syntax: %s", e->msg); /* 1-based */
		n++;
	}
	if (diag)
		fy_diag_destroy(diag); /* frees the collected errors too */
	return n ? DRV_EPARSE : 0;
}
