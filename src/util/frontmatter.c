/* The YAML front matter subset of SKILL.md files. One pass over the lines with a cursor; each
 * value parser takes the lines that belong to its value and leaves the cursor on the next key,
 * so nothing recurses and hostile nesting costs nothing but lines skipped. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <agentsbx/agentsbx.h>
#include "buf.h"
#include "cleanup.h"
#include "error.h"
#include "frontmatter.h"

struct cursor {
	const char *text;
	size_t len;
	size_t pos;         /* where the next line starts */
	unsigned line;      /* number of the last line taken */
	const char *what;
};

struct line {
	const char *s;
	size_t len;         /* without the line break and a '\r' before it */
	size_t next;        /* where the line after it starts */
	unsigned no;
};

/* ---------------------------------------------------------------------------------------
 * Lines and errors
 * ------------------------------------------------------------------------------------- */

static bool peek_line(const struct cursor *c, struct line *l)
{
	const char *s = c->text + c->pos;
	const char *nl;

	if (c->pos >= c->len)
		return false;
	nl = memchr(s, '\n', c->len - c->pos);
	l->s = s;
	l->len = nl ? (size_t)(nl - s) : c->len - c->pos;
	l->next = nl ? c->pos + l->len + 1 : c->len;
	if (l->len && s[l->len - 1] == '\r')
		l->len--;
	l->no = c->line + 1;
	return true;
}

static void skip_line(struct cursor *c, const struct line *l)
{
	c->pos = l->next;
	c->line = l->no;
}

/* "<what>: line N: key 'k': <message>" (the key part only when there is one). */
__attribute__((format(printf, 5, 6)))
static int fm_fail(const struct cursor *c, int code, unsigned line, const char *key,
                   const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (key)
		return sbx_fail(code, "%s: line %u: key '%.64s': %s", c->what, line, key, msg);
	return sbx_fail(code, "%s: line %u: %s", c->what, line, msg);
}

/* Takes the next line, which must be UTF-8: the message names the key it belongs to. */
static int take_line(struct cursor *c, struct line *l, const char *key)
{
	if (!peek_line(c, l))
		return 0;
	skip_line(c, l);
	if (!sbx_utf8_valid(l->s, l->len))
		return fm_fail(c, -SBX_EINVAL, l->no, key, "not valid UTF-8");
	return 1;
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

static size_t leading_spaces(const char *s, size_t n)
{
	size_t i = 0;

	while (i < n && s[i] == ' ')
		i++;
	return i;
}

static size_t trim_right(const char *s, size_t n)
{
	while (n && is_space(s[n - 1]))
		n--;
	return n;
}

/* Cuts a comment off: a '#' at the start or after white space. */
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

/* A line that belongs to the value above it: indented and not blank. */
static bool is_continuation(const struct line *l)
{
	return l->len && is_space(l->s[0]) && !is_blank(l->s, l->len);
}

static bool is_comment_line(const struct line *l)
{
	size_t i = 0;

	while (i < l->len && is_space(l->s[i]))
		i++;
	return i < l->len && l->s[i] == '#';
}

/* A sequence item: "- x" or a lone "-". */
static bool is_item(const char *s, size_t n)
{
	return n && s[0] == '-' && (n == 1 || is_space(s[1]));
}

/* ---------------------------------------------------------------------------------------
 * Plain scalars and skipped values
 * ------------------------------------------------------------------------------------- */

/* Appends the indented lines that continue a plain scalar, folded YAML's way: one line break
 * becomes a space, each blank line between two lines a newline. */
static int plain_continuation(struct cursor *c, const char *key, sbx_buf *b)
{
	struct line l;
	size_t blanks = 0;

	while (peek_line(c, &l)) {
		if (is_delimiter(&l))
			break;
		if (is_blank(l.s, l.len)) {
			skip_line(c, &l);
			blanks++;
			continue;
		}
		if (!is_continuation(&l))
			break;
		int r = take_line(c, &l, key);
		if (r < 0)
			return r;
		if (is_comment_line(&l))
			continue;
		size_t start = 0;
		while (is_space(l.s[start]))
			start++;
		size_t n = trim_right(l.s + start, before_comment(l.s + start, l.len - start));
		if (b->len) {
			if (blanks)
				for (size_t i = 0; i < blanks; i++)
					sbx_buf_append(b, "\n", 1);
			else
				sbx_buf_append(b, " ", 1);
		}
		sbx_buf_append(b, l.s + start, n);
		blanks = 0;
	}
	return 0;
}

static int plain_scalar(struct cursor *c, const char *key, const char *v, size_t n, sbx_buf *b)
{
	sbx_buf_append(b, v, trim_right(v, before_comment(v, n)));
	return plain_continuation(c, key, b);
}

/* A value we do not read (a mapping, a sequence, a flow collection): its lines are the
 * indented ones after the key and, for a sequence, "- " lines at the key's own level. */
static int skip_nested(struct cursor *c, const char *key)
{
	struct line l;

	while (peek_line(c, &l)) {
		if (is_delimiter(&l))
			break;
		if (!is_blank(l.s, l.len) && !is_continuation(&l) && !is_item(l.s, l.len))
			break;
		int r = take_line(c, &l, key);
		if (r < 0)
			return r;
	}
	return 0;
}

/* ---------------------------------------------------------------------------------------
 * Quoted scalars
 * ------------------------------------------------------------------------------------- */

static void put_utf8(sbx_buf *b, uint32_t cp)
{
	char u[4];
	size_t n;

	if (cp < 0x80) {
		u[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		u[0] = (char)(0xC0 | (cp >> 6));
		u[1] = (char)(0x80 | (cp & 0x3F));
		n = 2;
	} else if (cp < 0x10000) {
		u[0] = (char)(0xE0 | (cp >> 12));
		u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		u[2] = (char)(0x80 | (cp & 0x3F));
		n = 3;
	} else {
		u[0] = (char)(0xF0 | (cp >> 18));
		u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
		u[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
		u[3] = (char)(0x80 | (cp & 0x3F));
		n = 4;
	}
	sbx_buf_append(b, u, n);
}

static int hex_value(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* The code point of a \x, \u or \U escape with `digits` hex digits at s. */
static int hex_escape(const char *s, size_t avail, size_t digits, uint32_t *cp)
{
	uint32_t v = 0;

	if (avail < digits)
		return -1;
	for (size_t i = 0; i < digits; i++) {
		int h = hex_value(s[i]);
		if (h < 0)
			return -1;
		v = v << 4 | (uint32_t)h;
	}
	if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
		return -1;
	*cp = v;
	return 0;
}

/* One escape of a double-quoted scalar at s[0] (the character after the backslash). Returns
 * the bytes used, or 0 for an unknown or malformed escape. */
static size_t decode_escape(const char *s, size_t avail, sbx_buf *b)
{
	static const char simple_in[] = "0abt\tnvfre \"/\\";
	static const char simple_out[] = "\0\a\b\t\t\n\v\f\r\x1b \"/\\";
	const char *hit = memchr(simple_in, s[0], sizeof simple_in - 1);
	uint32_t cp;

	if (hit) {
		sbx_buf_append(b, &simple_out[hit - simple_in], 1);
		return 1;
	}
	switch (s[0]) {
	case 'N': put_utf8(b, 0x85); return 1;
	case '_': put_utf8(b, 0xA0); return 1;
	case 'L': put_utf8(b, 0x2028); return 1;
	case 'P': put_utf8(b, 0x2029); return 1;
	case 'x':
		if (hex_escape(s + 1, avail - 1, 2, &cp) < 0)
			return 0;
		put_utf8(b, cp);
		return 3;
	case 'u':
		if (hex_escape(s + 1, avail - 1, 4, &cp) < 0)
			return 0;
		put_utf8(b, cp);
		return 5;
	case 'U':
		if (hex_escape(s + 1, avail - 1, 8, &cp) < 0)
			return 0;
		put_utf8(b, cp);
		return 9;
	default:
		return 0;
	}
}

/* What may follow a closing quote on its line: blanks and a comment. */
static int after_quote(const struct cursor *c, const struct line *l, const char *key,
                       const char *rest, size_t n)
{
	size_t i = 0;

	while (i < n && is_space(rest[i]))
		i++;
	if (i < n && rest[i] != '#')
		return fm_fail(c, -SBX_EINVAL, l->no, key, "unexpected text after the closing "
		               "quote");
	return 0;
}

/* A quoted scalar that starts at v (after the opening quote) on line *l and may run over
 * the following lines, which fold as in plain scalars. `dq`: double quotes with escapes;
 * otherwise single quotes, where '' stands for one quote. */
static int quoted_scalar(struct cursor *c, struct line l, const char *key, const char *v,
                         size_t n, bool dq, sbx_buf *b)
{
	const char quote = dq ? '"' : '\'';
	unsigned first_line = l.no;

	for (;;) {
		/* Trailing blanks of a line are not part of the value; escaped ones are. */
		size_t keep = b->len;
		bool joined = false;
		size_t i = 0;

		while (i < n) {
			char ch = v[i];
			if (ch == quote && !dq && i + 1 < n && v[i + 1] == '\'') {
				sbx_buf_append(b, "'", 1);
				i += 2;
				keep = b->len;
			} else if (ch == quote) {
				return after_quote(c, &l, key, v + i + 1, n - i - 1);
			} else if (ch == '\\' && dq && i + 1 == n) {
				joined = true;       /* an escaped line break: no space */
				i++;
			} else if (ch == '\\' && dq) {
				size_t used = decode_escape(v + i + 1, n - i - 1, b);
				if (!used)
					return fm_fail(c, -SBX_EINVAL, l.no, key,
					               "invalid escape '\\%c'", v[i + 1]);
				i += 1 + used;
				keep = b->len;
			} else {
				sbx_buf_append(b, &ch, 1);
				i++;
				if (!is_space(ch))
					keep = b->len;
			}
		}
		if (!joined) {
			b->len = keep;
			if (b->data)
				b->data[b->len] = '\0';
		}

		/* The value goes on: blank lines become newlines, one line break a space. */
		size_t blanks = 0;
		for (;;) {
			int r = take_line(c, &l, key);
			if (r < 0)
				return r;
			if (r == 0 || is_delimiter(&l))
				return fm_fail(c, -SBX_EINVAL, first_line, key,
				               "the quoted value has no closing %c", quote);
			if (!is_blank(l.s, l.len))
				break;
			blanks++;
		}
		for (size_t k = 0; k < blanks; k++)
			sbx_buf_append(b, "\n", 1);
		if (!blanks && !joined)
			sbx_buf_append(b, " ", 1);
		size_t start = 0;
		while (start < l.len && is_space(l.s[start]))
			start++;
		v = l.s + start;
		n = l.len - start;
	}
}

/* ---------------------------------------------------------------------------------------
 * Block scalars
 * ------------------------------------------------------------------------------------- */

struct block_header {
	bool folded;
	char chomp;         /* '-' strip, '+' keep, 0 clip */
	size_t indent;      /* 0 = detect from the first line */
};

static int block_header(const struct cursor *c, const struct line *l, const char *key,
                        const char *v, size_t n, struct block_header *h)
{
	size_t i = 1;

	h->folded = v[0] == '>';
	h->chomp = 0;
	h->indent = 0;
	for (; i < n && i < 3; i++) {
		if ((v[i] == '-' || v[i] == '+') && !h->chomp)
			h->chomp = v[i];
		else if (v[i] >= '1' && v[i] <= '9' && !h->indent)
			h->indent = (size_t)(v[i] - '0');
		else
			break;
	}
	if (i < n && !is_space(v[i]))
		return fm_fail(c, -SBX_EINVAL, l->no, key, "invalid block scalar header '%.*s'",
		               (int)(n > 8 ? 8 : n), v);
	while (i < n && is_space(v[i]))
		i++;
	if (i < n && v[i] != '#')
		return fm_fail(c, -SBX_EINVAL, l->no, key, "unexpected text after the block "
		               "scalar header");
	return 0;
}

/* Adds one content line of a folded scalar: lines fold into spaces, blank lines stay line
 * breaks, and "more indented" lines keep theirs. */
static void fold_line(sbx_buf *b, const char *s, size_t n, size_t blanks, bool *started,
                      bool *prev_more)
{
	bool more = n && is_space(s[0]);

	if (*started) {
		bool plain = !more && !*prev_more;
		size_t breaks = plain ? blanks : blanks + 1;
		if (plain && !blanks)
			sbx_buf_append(b, " ", 1);
		for (size_t k = 0; k < breaks; k++)
			sbx_buf_append(b, "\n", 1);
	} else {
		for (size_t k = 0; k < blanks; k++)
			sbx_buf_append(b, "\n", 1);
	}
	sbx_buf_append(b, s, n);
	*started = true;
	*prev_more = more;
}

static int block_scalar(struct cursor *c, const struct line *kl, const char *key,
                        const char *v, size_t n, sbx_buf *b)
{
	struct block_header h;
	struct line l;
	size_t blanks = 0;
	bool started = false, prev_more = false;
	int r = block_header(c, kl, key, v, n, &h);

	if (r < 0)
		return r;
	while (peek_line(c, &l)) {
		size_t sp = leading_spaces(l.s, l.len);
		if (is_blank(l.s, l.len)) {
			skip_line(c, &l);
			blanks++;
			continue;
		}
		if (!h.indent && sp == 0)
			break;
		if (!h.indent)
			h.indent = sp;
		if (sp < h.indent)
			break;
		if ((r = take_line(c, &l, key)) < 0)
			return r;
		const char *s = l.s + h.indent;
		size_t len = l.len - h.indent;
		if (h.folded) {
			fold_line(b, s, len, blanks, &started, &prev_more);
		} else {
			for (size_t k = 0; k < blanks + (started ? 1 : 0); k++)
				sbx_buf_append(b, "\n", 1);
			sbx_buf_append(b, s, len);
			started = true;
		}
		blanks = 0;
	}
	/* Chomping: what becomes of the final line break and the blank lines after it. */
	if (started && h.chomp != '-')
		sbx_buf_append(b, "\n", 1);
	if (h.chomp == '+')
		for (size_t k = 0; k < blanks; k++)
			sbx_buf_append(b, "\n", 1);
	return 0;
}

/* ---------------------------------------------------------------------------------------
 * Keys and values
 * ------------------------------------------------------------------------------------- */

/* Does s hold "key:" or "key: value" (a mapping entry)? */
static bool has_mapping_colon(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] == ':' && (i + 1 == n || is_space(s[i + 1])))
			return true;
	return false;
}

/* The value of a key whose line holds nothing after the colon: a nested mapping or sequence
 * (skipped), a scalar on the following indented lines, or empty. */
static int value_below(struct cursor *c, const char *key, sbx_buf *b, bool *nested)
{
	struct cursor probe = *c;
	struct line l;
	int r;

	/* Look past blank and comment lines for the first line of the value. */
	for (;;) {
		if (!peek_line(&probe, &l) || is_delimiter(&l))
			return 0;
		if (!is_blank(l.s, l.len) && !is_comment_line(&l))
			break;
		skip_line(&probe, &l);
	}
	if (!is_continuation(&l) && !is_item(l.s, l.len))
		return 0;
	size_t start = 0;
	while (is_space(l.s[start]))
		start++;
	const char *s = l.s + start;
	size_t n = l.len - start;
	if (is_item(s, n) || has_mapping_colon(s, n) || s[0] == '[' || s[0] == '{') {
		*nested = true;
		return skip_nested(c, key);
	}
	/* A scalar: move the cursor onto its first line and read it from there. */
	unsigned first = l.no;
	while (c->line + 1 <= first)
		if ((r = take_line(c, &l, key)) < 0)
			return r;
	if (s[0] == '"' || s[0] == '\'')
		return quoted_scalar(c, l, key, s + 1, n - 1, s[0] == '"', b);
	return plain_scalar(c, key, s, n, b);
}

static int parse_value(struct cursor *c, const struct line *l, const char *key,
                       const char *v, size_t n, sbx_buf *b, bool *nested)
{
	*nested = false;
	if (n == 0 || v[0] == '#')
		return value_below(c, key, b, nested);
	if (v[0] == '"' || v[0] == '\'')
		return quoted_scalar(c, *l, key, v + 1, n - 1, v[0] == '"', b);
	if (v[0] == '|' || v[0] == '>')
		return block_scalar(c, l, key, v, n, b);
	if (v[0] == '[' || v[0] == '{') {
		*nested = true;
		return skip_nested(c, key);
	}
	return plain_scalar(c, key, v, n, b);
}

static int add_field(const struct cursor *c, sbx_frontmatter *fm, const char *key, size_t klen,
                     char *value, unsigned line)
{
	sbx_fm_field *nf;
	char *k;

	if (fm->n == SBX_FRONTMATTER_KEYS_MAX) {
		free(value);
		return fm_fail(c, -SBX_EINVAL, line, NULL, "more than %d keys",
		               SBX_FRONTMATTER_KEYS_MAX);
	}
	for (size_t i = 0; i < fm->n; i++)
		if (strncmp(fm->fields[i].key, key, klen) == 0 && !fm->fields[i].key[klen]) {
			free(value);
			return fm_fail(c, -SBX_EINVAL, line, fm->fields[i].key,
			               "given twice (first on line %u)", fm->fields[i].line);
		}
	nf = realloc(fm->fields, (fm->n + 1) * sizeof *nf);
	k = strndup(key, klen);
	if (!nf || !k) {
		if (nf)
			fm->fields = nf;
		free(k);
		free(value);
		return sbx_fail(-SBX_ENOMEM, "%s: out of memory", c->what);
	}
	fm->fields = nf;
	fm->fields[fm->n++] = (sbx_fm_field){ k, value, line };
	return 0;
}

/* Characters that cannot start a plain key (YAML indicators). */
static bool bad_key_start(char ch)
{
	return strchr("-?[]{},#&*!|>'\"%@`", ch) != NULL;
}

/* One "key: value" entry starting on line l (already taken). */
static int parse_entry(struct cursor *c, const struct line *l, sbx_frontmatter *fm)
{
	size_t colon = 0, klen, vstart;
	sbx_buf b = { 0 };
	bool nested;
	char key[128];
	int r;

	if (bad_key_start(l->s[0]))
		return fm_fail(c, -SBX_EINVAL, l->no, NULL, "expected 'key: value'");
	while (colon < l->len &&
	       !(l->s[colon] == ':' && (colon + 1 == l->len || is_space(l->s[colon + 1]))))
		colon++;
	if (colon == l->len)
		return fm_fail(c, -SBX_EINVAL, l->no, NULL, "expected 'key: value'");
	klen = trim_right(l->s, colon);
	if (klen == 0)
		return fm_fail(c, -SBX_EINVAL, l->no, NULL, "expected 'key: value'");
	if (klen >= sizeof key)
		return fm_fail(c, -SBX_EINVAL, l->no, NULL, "key longer than %zu bytes",
		               sizeof key - 1);
	memcpy(key, l->s, klen);
	key[klen] = '\0';
	vstart = colon + 1;
	while (vstart < l->len && is_space(l->s[vstart]))
		vstart++;
	r = parse_value(c, l, key, l->s + vstart, l->len - vstart, &b, &nested);
	if (r < 0 || b.oom) {
		sbx_buf_free(&b);
		return r < 0 ? r : sbx_fail(-SBX_ENOMEM, "%s: out of memory", c->what);
	}
	if (nested) {
		sbx_buf_free(&b);
		return add_field(c, fm, key, klen, NULL, l->no);
	}
	if (memchr(b.data ? b.data : "", '\0', b.len)) {
		sbx_buf_free(&b);
		return fm_fail(c, -SBX_EINVAL, l->no, key, "contains a NUL character");
	}
	char *value = b.data ? sbx_buf_steal(&b, NULL) : strdup("");
	if (!value)
		return sbx_fail(-SBX_ENOMEM, "%s: out of memory", c->what);
	return add_field(c, fm, key, klen, value, l->no);
}

/* ---------------------------------------------------------------------------------------
 * The document
 * ------------------------------------------------------------------------------------- */

static unsigned line_of(const char *text, size_t off)
{
	unsigned n = 1;

	for (size_t i = 0; i < off; i++)
		n += text[i] == '\n';
	return n;
}

static int check_text(const struct cursor *c)
{
	const char *nul = memchr(c->text, '\0', c->len);

	if (c->len > SBX_FRONTMATTER_MAX)
		return sbx_fail(-SBX_EFBIG, "%s: %zu bytes, more than the limit of %zu", c->what,
		                c->len, SBX_FRONTMATTER_MAX);
	if (nul)
		return fm_fail(c, -SBX_EINVAL, line_of(c->text, (size_t)(nul - c->text)), NULL,
		               "contains a NUL byte");
	return 0;
}

static int check_body(const struct cursor *c, size_t off)
{
	struct cursor b = *c;
	struct line l;

	if (sbx_utf8_valid(c->text + off, c->len - off))
		return 0;
	while (peek_line(&b, &l)) {
		skip_line(&b, &l);
		if (!sbx_utf8_valid(l.s, l.next - (size_t)(l.s - c->text)))
			return sbx_fail(-SBX_EINVAL, "%s: line %u: the body is not valid UTF-8",
			                c->what, l.no);
	}
	return sbx_fail(-SBX_EINVAL, "%s: the body is not valid UTF-8", c->what);
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

/* A key line that is not UTF-8: name the key when that part of the line is readable. */
static int invalid_key_line(const struct cursor *c, const struct line *l)
{
	char key[128];
	size_t colon = 0;

	while (colon < l->len && l->s[colon] != ':')
		colon++;
	colon = trim_right(l->s, colon);
	if (colon && colon < l->len && colon < sizeof key && sbx_utf8_valid(l->s, colon)) {
		memcpy(key, l->s, colon);
		key[colon] = '\0';
		return fm_fail(c, -SBX_EINVAL, l->no, key, "not valid UTF-8");
	}
	return fm_fail(c, -SBX_EINVAL, l->no, NULL, "not valid UTF-8");
}

static int parse_document(struct cursor *c, sbx_frontmatter *fm)
{
	struct line l;
	int r;

	/* An editor's byte order mark is not content. */
	if (c->len >= 3 && memcmp(c->text, "\xEF\xBB\xBF", 3) == 0)
		c->pos = 3;
	if (!peek_line(c, &l) || !is_delimiter(&l) || l.s[0] != '-')
		return sbx_fail(-SBX_EINVAL, "%s: no front matter (the file must start with a "
		                "'---' line)", c->what);
	skip_line(c, &l);
	for (;;) {
		if (!peek_line(c, &l))
			return sbx_fail(-SBX_EINVAL, "%s: the front matter has no closing '---' "
			                "line", c->what);
		skip_line(c, &l);
		if (!sbx_utf8_valid(l.s, l.len))
			return invalid_key_line(c, &l);
		if (is_delimiter(&l))
			break;
		if (is_blank(l.s, l.len) || is_comment_line(&l))
			continue;
		if (is_space(l.s[0]))
			return fm_fail(c, -SBX_EINVAL, l.no, NULL, "unexpected indentation");
		if ((r = parse_entry(c, &l, fm)) < 0)
			return r;
	}
	fm->body_offset = c->pos;
	return check_body(c, c->pos);
}

int sbx_frontmatter_parse(const char *text, size_t len, const char *what,
                          sbx_frontmatter *out)
{
	struct cursor c = { text, len, 0, 0, what ? what : "front matter" };
	int r;

	*out = (sbx_frontmatter){ 0 };
	if (!text && len)
		return sbx_fail(-SBX_EINVAL, "%s: no text", c.what);
	if (!text)
		text = c.text = "";
	r = check_text(&c);
	if (r < 0)
		return r;
	r = parse_document(&c, out);
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
