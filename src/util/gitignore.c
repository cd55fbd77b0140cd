/* .gitignore files: each line becomes a glob compiled without braces; a line without an
 * inner '/' gets a leading "**" component so it matches a name at any depth. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "error.h"
#include "gitignore.h"
#include "glob.h"

typedef struct rule {
	sbx_glob *glob;
	bool negate;
	bool dir_only;
} rule;

struct sbx_gitignore {
	rule *rules;
	size_t n, cap;
};

void sbx_gitignore_free(sbx_gitignore *g)
{
	if (!g)
		return;
	for (size_t i = 0; i < g->n; i++)
		sbx_glob_free(g->rules[i].glob);
	free(g->rules);
	free(g);
}

/* Drops unescaped trailing spaces (and a CR left by a CRLF file) from line[0..*len). */
static void trim_trailing(const char *line, size_t *len)
{
	if (*len && line[*len - 1] == '\r')
		(*len)--;
	while (*len && line[*len - 1] == ' ') {
		size_t bs = 0;
		while (bs < *len - 1 && line[*len - 2 - bs] == '\\')
			bs++;
		if (bs % 2)
			break;   /* "\ " keeps its space */
		(*len)--;
	}
}

/* Turns one line into a rule. Returns 1 when the line holds one, 0 when it holds none or an
 * invalid pattern, negative for out of memory. */
static int parse_line(const char *line, size_t len, rule *out)
{
	_cleanup_free_ char *pat = NULL;
	bool anchored;
	int r;

	*out = (rule){ NULL, false, false };
	trim_trailing(line, &len);
	if (!len || line[0] == '#')
		return 0;
	if (line[0] == '!') {
		out->negate = true;
		line++;
		len--;
	}
	if (len && line[len - 1] == '/') {
		out->dir_only = true;
		len--;
	}
	if (!len)
		return 0;
	/* A '/' anywhere but the end anchors; a leading one is then only a marker. */
	anchored = memchr(line, '/', len) != NULL;
	while (len && line[0] == '/') {
		line++;
		len--;
	}
	if (!len)
		return 0;
	if (asprintf(&pat, "%s%.*s", anchored ? "" : "**/", (int)len, line) < 0)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	r = sbx_glob_compile(pat, SBX_GLOB_NO_BRACES, &out->glob);
	if (r == -SBX_ENOMEM)
		return r;
	return r == 0;
}

static int add_rule(sbx_gitignore *g, const rule *r)
{
	if (g->n == g->cap) {
		size_t cap = g->cap ? g->cap * 2 : 8;
		rule *v = reallocarray(g->rules, cap, sizeof *v);
		if (!v)
			return sbx_fail(-SBX_ENOMEM, "out of memory");
		g->rules = v;
		g->cap = cap;
	}
	g->rules[g->n++] = *r;
	return 0;
}

int sbx_gitignore_parse(const char *text, size_t len, sbx_gitignore **out)
{
	sbx_gitignore *g = calloc(1, sizeof *g);
	const char *p = text, *end = text + len;

	*out = NULL;
	if (!g)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		rule r;
		int got = parse_line(p, (size_t)(le - p), &r);

		if (got > 0)
			got = add_rule(g, &r);
		if (got < 0) {
			sbx_glob_free(r.glob);
			sbx_gitignore_free(g);
			return got;
		}
		p = nl ? nl + 1 : end;
	}
	if (g->n == 0)
		sbx_gitignore_free(SBX_TAKE_PTR(g));
	*out = g;
	return 0;
}

enum sbx_ignore_verdict sbx_gitignore_match(const sbx_gitignore *g, const char *rel,
                                            size_t len, bool is_dir)
{
	for (size_t i = g ? g->n : 0; i-- > 0;) {
		const rule *r = &g->rules[i];
		if (r->dir_only && !is_dir)
			continue;
		if (sbx_glob_match(r->glob, rel, len))
			return r->negate ? SBX_IGNORE_INCLUDE : SBX_IGNORE_EXCLUDE;
	}
	return SBX_IGNORE_NONE;
}

int sbx_ignore_stack_push(sbx_ignore_stack *s, sbx_gitignore *rules, size_t dir_len)
{
	if (!rules)
		return 0;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 8;
		sbx_ignore_level *v = reallocarray(s->v, cap, sizeof *v);
		if (!v) {
			sbx_gitignore_free(rules);
			return sbx_fail(-SBX_ENOMEM, "out of memory");
		}
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = (sbx_ignore_level){ rules, dir_len };
	return 0;
}

void sbx_ignore_stack_truncate(sbx_ignore_stack *s, size_t n)
{
	while (s->n > n)
		sbx_gitignore_free(s->v[--s->n].rules);
}

void sbx_ignore_stack_free(sbx_ignore_stack *s)
{
	sbx_ignore_stack_truncate(s, 0);
	free(s->v);
	*s = (sbx_ignore_stack){ 0 };
}

bool sbx_ignore_stack_ignored(const sbx_ignore_stack *s, const char *path, size_t len,
                              bool is_dir)
{
	for (size_t i = s->n; i-- > 0;) {
		const sbx_ignore_level *l = &s->v[i];
		if (l->dir_len >= len)
			continue;   /* the path is this level's directory or above it */
		enum sbx_ignore_verdict v = sbx_gitignore_match(l->rules, path + l->dir_len,
		                                                len - l->dir_len, is_dir);
		if (v != SBX_IGNORE_NONE)
			return v == SBX_IGNORE_EXCLUDE;
	}
	return false;
}
