/* The YAML front matter of SKILL.md files, read by libyaml's event parser.
 *
 * The block is found here, line by line: it runs from the opening "---" line to the first
 * "---" or "..." line, and the body follows it. Before libyaml reads the block the text is
 * checked (size, NUL bytes, UTF-8) so that those messages name the line and key, and one small
 * pre-pass (lenient_plain) quotes the plain values SKILL.md files write with ": " in them.
 *
 * Of the events, the top-level mapping is kept: each key with its scalar value, or with NULL
 * for a mapping or sequence (libyaml reads and checks those, we keep nothing of them).
 * Scalars are taken as written, with no tag resolution ("null", "~", "true" stay text); tags
 * and anchors are ignored; aliases are refused, since they are how "billion laughs" documents
 * grow and skills have no use for them. libyaml's event parser does not recurse, and nesting
 * deeper than FM_DEPTH_MAX levels is refused to bound its stacks. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include <agentsbx/agentsbx.h>
#include "buf.h"
#include "cleanup.h"
#include "error.h"
#include "frontmatter.h"
#include "lazylib.h"

/* libyaml is loaded on the first front matter to read (lazylib.h). */
#define YAML_FUNCS(X)                                                                      \
	X(yaml_parser_initialize) X(yaml_parser_set_input_string)                          \
	X(yaml_parser_set_encoding) X(yaml_parser_parse) X(yaml_event_delete)              \
	X(yaml_parser_delete)
SBX_LAZY_API(yaml_api, YAML_FUNCS);
static struct sbx_lazylib yaml_lib =
	SBX_LAZYLIB("libyaml-0.so.2", "skills (their SKILL.md front matter)", yaml_api);

#define FM_DEPTH_MAX 1000
#define FM_KEY_MAX 127

struct line {
	const char *s;
	size_t len;         /* without the line break and a '\r' before it */
	size_t next;        /* where the line after it starts */
};

/* The line that starts at text[pos], if pos < len. */
static bool get_line(const char *text, size_t len, size_t pos, struct line *l)
{
	const char *s = text + pos;
	const char *nl;

	if (pos >= len)
		return false;
	nl = memchr(s, '\n', len - pos);
	l->s = s;
	l->len = nl ? (size_t)(nl - s) : len - pos;
	l->next = nl ? pos + l->len + 1 : len;
	if (l->len && s[l->len - 1] == '\r')
		l->len--;
	return true;
}

/* "<what>: line N: key 'k': <message>" (the key part only when there is one). */
__attribute__((format(printf, 5, 6)))
static int fm_fail(const char *what, int code, unsigned line, const char *key,
                   const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (key)
		return sbx_fail(code, "%s: line %u: key '%.64s': %s", what, line, key, msg);
	return sbx_fail(code, "%s: line %u: %s", what, line, msg);
}

static bool is_space(char ch)
{
	return ch == ' ' || ch == '\t';
}

static bool is_blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!is_space(s[i]))
			return false;
	return true;
}

static size_t indent_of(const struct line *l)
{
	size_t i = 0;

	while (i < l->len && is_space(l->s[i]))
		i++;
	return i;
}

static size_t trim_right(const char *s, size_t n)
{
	while (n && is_space(s[n - 1]))
		n--;
	return n;
}

/* Where a comment starts: a '#' at the start or after white space. */
static size_t before_comment(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] == '#' && (i == 0 || is_space(s[i - 1])))
			return i;
	return n;
}

/* "---" (or "...", YAML's document end) alone on a line, trailing blanks allowed. */
static bool is_delimiter(const struct line *l)
{
	return l->len >= 3 && (memcmp(l->s, "---", 3) == 0 || memcmp(l->s, "...", 3) == 0) &&
	       is_blank(l->s + 3, l->len - 3);
}

static bool is_comment_line(const struct line *l)
{
	size_t i = indent_of(l);

	return i < l->len && l->s[i] == '#';
}

static unsigned line_of(const char *text, size_t off)
{
	unsigned n = 1;

	for (size_t i = 0; i < off; i++)
		n += text[i] == '\n';
	return n;
}

/* Where "key" ends in "key: value" or "key:" (s[0] is not blank): the ':' followed by a blank
 * or the line end, before any comment. SIZE_MAX when s is no such line or the key starts with
 * a YAML indicator. */
static size_t key_colon(const char *s, size_t n)
{
	if (!n || strchr("-?[]{},#&*!|>'\"%@`:", s[0]))
		return SIZE_MAX;
	n = before_comment(s, n);
	for (size_t i = 0; i < n; i++)
		if (s[i] == ':' && (i + 1 == n || is_space(s[i + 1])))
			return i;
	return SIZE_MAX;
}

/* The top-level key that line `no` (1-based) of text belongs to, for messages: the key of the
 * last unindented "key:" line up to it, when that key is readable. */
static const char *key_for_line(const char *text, size_t len, unsigned no, char *key)
{
	struct line l;
	bool have = false;
	size_t pos = 0;

	for (unsigned i = 1; i <= no && get_line(text, len, pos, &l); i++, pos = l.next) {
		if (!l.len || is_space(l.s[0]) || is_comment_line(&l))
			continue;
		size_t colon = 0;
		while (colon < l.len && l.s[colon] != ':')
			colon++;
		size_t n = trim_right(l.s, colon);
		have = colon < l.len && n && n <= FM_KEY_MAX && sbx_utf8_valid(l.s, n);
		if (have) {
			memcpy(key, l.s, n);
			key[n] = '\0';
		}
	}
	return have ? key : NULL;
}

/* ---------------------------------------------------------------------------------------
 * The lenient pre-pass
 *
 * Strict YAML ends a plain scalar at ": " (libyaml: "mapping values are not allowed in this
 * context"), but SKILL.md files are written by hand and say "description: Use when: the user
 * asks ...", which the old hand-written parser, and other skill loaders, read as one string.
 * So a "key: value" line (top level or in a nested mapping) whose plain value, with the deeper
 * indented lines that continue it, holds a ':' before a blank or the line end is rewritten
 * into a single-quoted scalar over the same lines: a quote before the value and one after its
 * last line, quotes in it doubled, " #" comments cut. A single-quoted scalar folds its lines
 * the way a plain one does, so libyaml then gives the lenient value, on unchanged line
 * numbers. Values that start with a quote or an indicator (| > [ { & * !) and all other lines
 * are left as they are.
 * ------------------------------------------------------------------------------------- */

static bool has_mapping_colon(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] == ':' && (i + 1 == n || is_space(s[i + 1])))
			return true;
	return false;
}

/* A line's part of a plain value: from s, without a comment and trailing blanks. */
static size_t plain_part(const char *s, size_t n)
{
	return trim_right(s, before_comment(s, n));
}

static void put_single_quoted(sbx_buf *b, const char *s, size_t n)
{
	for (const char *q; n && (q = memchr(s, '\'', n)); n -= (size_t)(q + 1 - s), s = q + 1) {
		sbx_buf_append(b, s, (size_t)(q + 1 - s));
		sbx_buf_append(b, "'", 1);
	}
	sbx_buf_append(b, s, n);
}

static void lenient_plain(const char *text, size_t len, sbx_buf *out)
{
	size_t owner = SIZE_MAX;  /* lines indented deeper than this belong to the value above */
	struct line l, c;

	for (size_t pos = 0; get_line(text, len, pos, &l); ) {
		size_t ind = indent_of(&l), colon, v, end, p;
		const char *s = l.s + ind;
		size_t n = l.len - ind;

		if (is_blank(l.s, l.len) || is_comment_line(&l) || (owner != SIZE_MAX && ind > owner))
			goto copy;
		owner = SIZE_MAX;
		if ((colon = key_colon(s, n)) == SIZE_MAX)
			goto copy;
		for (v = colon + 1; v < n && is_space(s[v]); v++)
			;
		if (v == n || s[v] == '#')
			goto copy;       /* the value is below: its lines may be keys too */
		owner = ind;
		if (strchr("'\"|>[{&*!", s[v]))
			goto copy;
		/* The plain value and its continuation lines: deeper, up to a comment line. Quoted
		 * too: a value YAML would not take as a plain scalar ('@' and '`' are reserved, '%'
		 * a directive, "- ", "? " and ": " indicators) and lines indented with tabs. */
		bool quote = strchr("%@`", s[v]) ||
		             (strchr("-?:", s[v]) && (v + 1 == n || is_space(s[v + 1]))) ||
		             has_mapping_colon(s + v, plain_part(s + v, n - v));
		end = l.next;
		for (p = l.next; get_line(text, len, p, &c); p = c.next) {
			size_t ci = indent_of(&c);
			if (is_blank(c.s, c.len))
				continue;
			if (ci <= ind || is_comment_line(&c))
				break;
			quote = quote || memchr(c.s, '\t', ci) ||
			        has_mapping_colon(c.s + ci, plain_part(c.s + ci, c.len - ci));
			end = c.next;
		}
		if (!quote)
			goto copy;
		sbx_buf_append(out, l.s, ind + v);
		sbx_buf_append(out, "'", 1);
		put_single_quoted(out, s + v, plain_part(s + v, n - v));
		for (p = l.next; p < end && get_line(text, len, p, &c); p = c.next) {
			size_t ci = indent_of(&c);
			sbx_buf_append(out, "\n", 1);
			if (is_blank(c.s, c.len))
				continue;
			sbx_buf_append(out, c.s, ci);
			put_single_quoted(out, c.s + ci, plain_part(c.s + ci, c.len - ci));
		}
		sbx_buf_append(out, "'\n", 2);
		pos = end;
		continue;
copy:
		sbx_buf_append(out, l.s, l.next - pos);
		pos = l.next;
	}
}

/* ---------------------------------------------------------------------------------------
 * libyaml's events and errors
 * ------------------------------------------------------------------------------------- */

struct builder {
	const char *what;
	const char *text;       /* what libyaml reads: the front matter after the pre-pass */
	size_t len;
	sbx_frontmatter *fm;
	char key[FM_KEY_MAX + 1];
	unsigned key_line;
	bool have_key;          /* a top-level key waits for its value */
	size_t depth;           /* open mappings and sequences */
	unsigned documents;
};

/* The byte offset of a libyaml mark (line and column, which counts characters). */
static size_t mark_offset(const struct builder *b, const yaml_mark_t *m)
{
	size_t pos = 0;

	for (size_t line = 0; line < m->line && pos < b->len; pos++)
		line += b->text[pos] == '\n';
	for (size_t col = 0; col < m->column && pos < b->len && b->text[pos] != '\n'; col++) {
		pos++;
		while (pos < b->len && ((unsigned char)b->text[pos] & 0xC0) == 0x80)
			pos++;      /* a UTF-8 continuation byte: the same column */
	}
	return pos;
}

/* libyaml's message, in our words where the old parser had its own. */
static int yaml_fail(const struct builder *b, const yaml_parser_t *p)
{
	const char *problem = p->problem ? p->problem : "not valid YAML";
	const char *context = p->context;
	char key[FM_KEY_MAX + 1];
	unsigned line;
	size_t at;

	if (p->error == YAML_MEMORY_ERROR)
		return sbx_fail(-SBX_ENOMEM, "%s: out of memory", b->what);
	if (p->error == YAML_READER_ERROR) {
		at = p->problem_offset < b->len ? p->problem_offset : b->len;
		line = line_of(b->text, at);
		return fm_fail(b->what, -SBX_EINVAL, line, key_for_line(b->text, b->len, line, key),
		               "%s", problem);
	}
	line = (unsigned)p->problem_mark.line + 1;
	at = mark_offset(b, &p->problem_mark);
	const char *k = key_for_line(b->text, b->len, line, key);
	size_t start = at, before = at;
	while (start && b->text[start - 1] != '\n')
		start--;
	while (before > start && is_space(b->text[before - 1]))
		before--;
	char prev = before > start ? b->text[before - 1] : '\0';

	if (strstr(problem, "escape") || strstr(problem, "hexdecimal"))
		return fm_fail(b->what, -SBX_EINVAL, line, k, "invalid escape in a double-quoted "
		               "value");
	if (context && strstr(context, "quoted scalar") &&
	    (strstr(problem, "end of stream") || strstr(problem, "document indicator"))) {
		line = (unsigned)p->context_mark.line + 1;
		at = mark_offset(b, &p->context_mark);
		return fm_fail(b->what, -SBX_EINVAL, line, key_for_line(b->text, b->len, line, key),
		               "the quoted value has no closing %c",
		               at < b->len && b->text[at] == '\'' ? '\'' : '"');
	}
	if (context && strstr(context, "block scalar") && strstr(problem, "comment or line break"))
		return fm_fail(b->what, -SBX_EINVAL, line, k, before < at ?
		               "unexpected text after the block scalar header" :
		               "invalid block scalar header");
	if (strstr(problem, "indentation indicator"))
		return fm_fail(b->what, -SBX_EINVAL, line, k, "invalid block scalar header");
	if (strstr(problem, "expected key") && before == start && at == start)
		return fm_fail(b->what, -SBX_EINVAL, line, NULL, "expected 'key: value'");
	if (strstr(problem, "expected key") && before == start)
		return fm_fail(b->what, -SBX_EINVAL, line, k, "unexpected indentation");
	if (strstr(problem, "expected key") && (prev == '"' || prev == '\''))
		return fm_fail(b->what, -SBX_EINVAL, line, k, "unexpected text after the closing "
		               "quote");
	if (context)
		return fm_fail(b->what, -SBX_EINVAL, line, k, "%s %s", problem, context);
	return fm_fail(b->what, -SBX_EINVAL, line, k, "%s", problem);
}

static int add_field(struct builder *b, const char *value, size_t vlen)
{
	sbx_frontmatter *fm = b->fm;
	sbx_fm_field *nf;
	char *k, *v = NULL;

	b->have_key = false;
	if (fm->n == SBX_FRONTMATTER_KEYS_MAX)
		return fm_fail(b->what, -SBX_EINVAL, b->key_line, NULL, "more than %d keys",
		               SBX_FRONTMATTER_KEYS_MAX);
	for (size_t i = 0; i < fm->n; i++)
		if (strcmp(fm->fields[i].key, b->key) == 0)
			return fm_fail(b->what, -SBX_EINVAL, b->key_line, b->key,
			               "given twice (first on line %u)", fm->fields[i].line);
	if (value && memchr(value, '\0', vlen))
		return fm_fail(b->what, -SBX_EINVAL, b->key_line, b->key,
		               "contains a NUL character");
	nf = realloc(fm->fields, (fm->n + 1) * sizeof *nf);
	if (nf)
		fm->fields = nf;
	k = strdup(b->key);
	if (value)
		v = strndup(value, vlen);
	if (!nf || !k || (value && !v)) {
		free(k);
		free(v);
		return sbx_fail(-SBX_ENOMEM, "%s: out of memory", b->what);
	}
	fm->fields[fm->n++] = (sbx_fm_field){ k, v, b->key_line };
	return 0;
}

/* A top-level key: a scalar that makes a readable key. */
static int take_key(struct builder *b, const yaml_event_t *ev, unsigned line)
{
	const char *s = (const char *)ev->data.scalar.value;
	size_t n = ev->data.scalar.length;

	if (!n)
		return fm_fail(b->what, -SBX_EINVAL, line, NULL, "expected 'key: value'");
	if (memchr(s, '\0', n))
		return fm_fail(b->what, -SBX_EINVAL, line, NULL, "a key contains a NUL character");
	if (n > FM_KEY_MAX)
		return fm_fail(b->what, -SBX_EINVAL, line, NULL, "key longer than %d bytes",
		               FM_KEY_MAX);
	memcpy(b->key, s, n);
	b->key[n] = '\0';
	b->key_line = line;
	b->have_key = true;
	return 0;
}

static int on_event(struct builder *b, const yaml_event_t *ev)
{
	unsigned line = (unsigned)ev->start_mark.line + 1;
	const char *inside = b->fm->n ? b->fm->fields[b->fm->n - 1].key : NULL;

	switch (ev->type) {
	case YAML_DOCUMENT_START_EVENT:
		if (b->documents++)
			return fm_fail(b->what, -SBX_EINVAL, line, NULL, "a second YAML document");
		return 0;
	case YAML_ALIAS_EVENT:
		return fm_fail(b->what, -SBX_EINVAL, line, b->depth > 1 ? inside : NULL,
		               "aliases ('*name') are not supported");
	case YAML_SEQUENCE_START_EVENT:
	case YAML_MAPPING_START_EVENT:
		if (b->depth == 0 && ev->type == YAML_SEQUENCE_START_EVENT)
			return fm_fail(b->what, -SBX_EINVAL, line, NULL, "expected 'key: value'");
		if (b->depth == 1) {
			if (!b->have_key)
				return fm_fail(b->what, -SBX_EINVAL, line, NULL,
				               "expected 'key: value'");
			int r = add_field(b, NULL, 0);
			if (r < 0)
				return r;
			inside = b->key;
		}
		if (++b->depth > FM_DEPTH_MAX)
			return fm_fail(b->what, -SBX_EINVAL, line, inside, "nested deeper than %d "
			               "levels", FM_DEPTH_MAX);
		return 0;
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT:
		b->depth--;
		return 0;
	case YAML_SCALAR_EVENT:
		if (b->depth == 0) {
			/* Only comments, or nothing, between the lines: no keys. */
			if (!ev->data.scalar.length && ev->data.scalar.plain_implicit)
				return 0;
			return fm_fail(b->what, -SBX_EINVAL, line, NULL, "expected 'key: value'");
		}
		if (b->depth > 1)
			return 0;
		if (!b->have_key)
			return take_key(b, ev, line);
		return add_field(b, (const char *)ev->data.scalar.value, ev->data.scalar.length);
	default:
		return 0;
	}
}

static int parse_yaml(const char *what, const char *text, size_t len, sbx_frontmatter *fm)
{
	const struct yaml_api *ya = sbx_lazylib_load(&yaml_lib);
	struct builder b = { .what = what, .fm = fm };
	sbx_buf pre = { 0 };
	yaml_parser_t p;
	yaml_event_t ev;
	int r = 0;

	if (!ya)
		return SBX_LAZYLIB_ERR;
	lenient_plain(text, len, &pre);
	if (pre.oom || !pre.data) {
		sbx_buf_free(&pre);
		return sbx_fail(-SBX_ENOMEM, "%s: out of memory", what);
	}
	b.text = pre.data;
	b.len = pre.len;
	if (!ya->yaml_parser_initialize(&p)) {
		sbx_buf_free(&pre);
		return sbx_fail(-SBX_ENOMEM, "%s: out of memory", what);
	}
	ya->yaml_parser_set_input_string(&p, (const unsigned char *)b.text, b.len);
	ya->yaml_parser_set_encoding(&p, YAML_UTF8_ENCODING);
	for (;;) {
		if (!ya->yaml_parser_parse(&p, &ev)) {
			r = yaml_fail(&b, &p);
			break;
		}
		bool end = ev.type == YAML_STREAM_END_EVENT;
		r = on_event(&b, &ev);
		ya->yaml_event_delete(&ev);
		if (r < 0 || end)
			break;
	}
	ya->yaml_parser_delete(&p);
	sbx_buf_free(&pre);
	return r;
}

/* ---------------------------------------------------------------------------------------
 * The document
 * ------------------------------------------------------------------------------------- */

static int check_body(const char *what, const char *text, size_t len, size_t off)
{
	struct line l;
	unsigned no = line_of(text, off);

	if (sbx_utf8_valid(text + off, len - off))
		return 0;
	for (size_t pos = off; get_line(text, len, pos, &l); pos = l.next, no++)
		if (!sbx_utf8_valid(l.s, l.next - pos))
			return sbx_fail(-SBX_EINVAL, "%s: line %u: the body is not valid UTF-8",
			                what, no);
	return sbx_fail(-SBX_EINVAL, "%s: the body is not valid UTF-8", what);
}

void sbx_frontmatter_free(sbx_frontmatter *fm)
{
	if (!fm)
		return;
	for (size_t i = 0; i < fm->n; i++) {
		free(fm->fields[i].key);
		free(fm->fields[i].value);
	}
	free(fm->fields);
	*fm = (sbx_frontmatter){ 0 };
}

/* text[0..len) (after a byte order mark) up to the closing line goes to libyaml, the opening
 * line included so that libyaml's line numbers are the file's. */
static int parse_document(const char *what, const char *text, size_t len, sbx_frontmatter *fm)
{
	size_t bom = len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
	const char *t = text + bom;
	size_t n = len - bom, pos;
	char key[FM_KEY_MAX + 1];
	struct line l;
	unsigned no;
	int r;

	if (!get_line(t, n, 0, &l) || !is_delimiter(&l) || l.s[0] != '-')
		return sbx_fail(-SBX_EINVAL, "%s: no front matter (the file must start with a "
		                "'---' line)", what);
	for (pos = l.next, no = 2;; pos = l.next, no++) {
		if (!get_line(t, n, pos, &l))
			return sbx_fail(-SBX_EINVAL, "%s: the front matter has no closing '---' "
			                "line", what);
		if (!sbx_utf8_valid(l.s, l.len))
			return fm_fail(what, -SBX_EINVAL, no, key_for_line(t, n, no, key),
			               "not valid UTF-8");
		if (is_delimiter(&l))
			break;
	}
	if ((r = parse_yaml(what, t, pos, fm)) < 0)
		return r;
	fm->body_offset = bom + l.next;
	return check_body(what, text, len, fm->body_offset);
}

int sbx_frontmatter_parse(const char *text, size_t len, const char *what,
                          sbx_frontmatter *out)
{
	const char *nul;
	int r;

	*out = (sbx_frontmatter){ 0 };
	what = what ? what : "front matter";
	if (!text && len)
		return sbx_fail(-SBX_EINVAL, "%s: no text", what);
	if (!text)
		text = "";
	if (len > SBX_FRONTMATTER_MAX)
		return sbx_fail(-SBX_EFBIG, "%s: %zu bytes, more than the limit of %zu", what, len,
		                SBX_FRONTMATTER_MAX);
	if ((nul = memchr(text, '\0', len)))
		return fm_fail(what, -SBX_EINVAL, line_of(text, (size_t)(nul - text)), NULL,
		               "contains a NUL byte");
	r = parse_document(what, text, len, out);
	if (r < 0)
		sbx_frontmatter_free(out);
	return r;
}

const sbx_fm_field *sbx_frontmatter_get(const sbx_frontmatter *fm, const char *key)
{
	for (size_t i = 0; i < fm->n; i++)
		if (strcmp(fm->fields[i].key, key) == 0)
			return &fm->fields[i];
	return NULL;
}


/* ---------------------------------------------------------------------------------------
 * SKILL.md
 * ------------------------------------------------------------------------------------- */

/* The code point at s (valid UTF-8) and its length. */
static size_t utf8_next(const unsigned char *s, uint32_t *cp)
{
	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if (s[0] < 0xE0) {
		*cp = (uint32_t)(s[0] & 0x1F) << 6 | (s[1] & 0x3F);
		return 2;
	}
	if (s[0] < 0xF0) {
		*cp = (uint32_t)(s[0] & 0x0F) << 12 | (uint32_t)(s[1] & 0x3F) << 6 | (s[2] & 0x3F);
		return 3;
	}
	*cp = (uint32_t)(s[0] & 0x07) << 18 | (uint32_t)(s[1] & 0x3F) << 12 |
	      (uint32_t)(s[2] & 0x3F) << 6 | (s[3] & 0x3F);
	return 4;
}

static bool is_control(uint32_t cp)
{
	return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029;
}

bool sbx_skill_name_valid(const char *name, const char **why)
{
	const unsigned char *s = (const unsigned char *)name;
	size_t len = strlen(name), count = 0;
	const char *dummy;
	uint32_t cp = 0;

	if (!why)
		why = &dummy;
	if (!len)
		return *why = "must not be empty", false;
	if (!sbx_utf8_valid(name, len))
		return *why = "is not valid UTF-8", false;
	if (is_space(name[0]) || is_space(name[len - 1]))
		return *why = "must not start or end with white space", false;
	for (size_t i = 0; i < len; count++) {
		i += utf8_next(s + i, &cp);
		if (cp == '/')
			return *why = "must not contain '/'", false;
		if (is_control(cp))
			return *why = "must not contain control characters", false;
	}
	if (count > SBX_SKILL_NAME_MAX)
		return *why = "is longer than 64 characters", false;
	return true;
}

static int check_description(const char *d)
{
	const unsigned char *s = (const unsigned char *)d;
	uint32_t cp;

	if (is_blank(d, strlen(d)))
		return sbx_fail(-SBX_EINVAL, "SKILL.md: key 'description': must not be empty");
	for (size_t i = 0; s[i];) {
		i += utf8_next(s + i, &cp);
		if (is_control(cp) && cp != '\n' && cp != '\t')
			return sbx_fail(-SBX_EINVAL, "SKILL.md: key 'description': contains the "
			                "control character U+%04X", (unsigned)cp);
	}
	return 0;
}

/* A required string field: present, a scalar. */
static int string_field(const sbx_frontmatter *fm, const char *key, const sbx_fm_field **f)
{
	*f = sbx_frontmatter_get(fm, key);
	if (!*f)
		return sbx_fail(-SBX_EINVAL, "SKILL.md: the front matter has no '%s'", key);
	if (!(*f)->value)
		return sbx_fail(-SBX_EINVAL, "SKILL.md: line %u: key '%s': must be a string, not a "
		                "mapping or list", (*f)->line, key);
	return 0;
}

void sbx_skill_md_free(sbx_skill_md *md)
{
	if (!md)
		return;
	free(md->name);
	free(md->description);
	*md = (sbx_skill_md){ 0 };
}

int sbx_skill_md_parse(const char *text, size_t len, sbx_skill_md *out)
{
	sbx_frontmatter fm;
	const sbx_fm_field *name, *desc;
	const char *why;
	int r;

	*out = (sbx_skill_md){ 0 };
	r = sbx_frontmatter_parse(text, len, "SKILL.md", &fm);
	if (r < 0)
		return r;
	if ((r = string_field(&fm, "name", &name)) < 0 ||
	    (r = string_field(&fm, "description", &desc)) < 0)
		goto out;
	if (!sbx_skill_name_valid(name->value, &why)) {
		r = sbx_fail(-SBX_EINVAL, "SKILL.md: line %u: key 'name': %s", name->line, why);
		goto out;
	}
	if ((r = check_description(desc->value)) < 0)
		goto out;
	out->name = SBX_TAKE_PTR(fm.fields[name - fm.fields].value);
	out->description = SBX_TAKE_PTR(fm.fields[desc - fm.fields].value);
	out->body = text + fm.body_offset;
	out->body_len = len - fm.body_offset;
out:
	sbx_frontmatter_free(&fm);
	return r;
}
