/* Glob patterns: checked once, brace groups expanded into alternatives, each alternative
 * compiled into path components ("segments") made of atoms.
 *
 * Matching runs at two levels with the same greedy algorithm: components against segments
 * ('**' is the star) and characters against atoms ('*' is the star). Each non-star unit
 * consumes exactly one unit of text, so remembering only the last star and retrying it one
 * unit further is complete, and the cost stays O(text x pattern) without recursion, whatever
 * a pattern like "*a*a*a*b" tries to provoke. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "error.h"
#include "glob.h"

/* More brace groups than anyone writes; bounds the expansion work for hostile patterns. */
#define MAX_BRACE_GROUPS 64
/* Invalid UTF-8 bytes decode to this base plus the byte, so they only match themselves. */
#define RAW_BYTE_BASE 0x110000u

enum atom_kind { ATOM_BYTE, ATOM_ANY, ATOM_STAR, ATOM_CLASS };

typedef struct atom {
	uint8_t kind;
	uint32_t v;   /* BYTE: the byte; CLASS: index into classes */
} atom;

enum named_class { NAMED_NONE, NAMED_ALNUM, NAMED_ALPHA, NAMED_BLANK, NAMED_CNTRL, NAMED_DIGIT,
	NAMED_GRAPH, NAMED_LOWER, NAMED_PRINT, NAMED_PUNCT, NAMED_SPACE, NAMED_UPPER,
	NAMED_XDIGIT };

typedef struct range {
	uint32_t lo, hi;   /* code points, inclusive */
	uint8_t named;     /* a POSIX class instead of lo..hi */
} range;

typedef struct cls {
	uint32_t first, n;   /* into ranges */
	bool negate;
} cls;

/* What a segment needs from a component. */
enum seg_kind {
	SEG_GLOBSTAR,   /* zero or more whole components */
	SEG_LITERAL,    /* exactly these bytes */
	SEG_SUFFIX,     /* '*' then literal bytes, like "*.py" */
	SEG_ATOMS,      /* anything else: run the atoms */
};

typedef struct seg {
	uint8_t kind;
	uint32_t first, n;   /* ATOMS: into atoms; LITERAL/SUFFIX: into lits */
} seg;

typedef struct alt {
	uint32_t first, n;   /* into segs */
} alt;

struct sbx_glob {
	alt *alts;
	seg *segs;
	atom *atoms;
	cls *classes;
	range *ranges;
	char *lits;
	size_t nalts, nsegs, natoms, nclasses, nranges, nlits;
	size_t cap_alts, cap_segs, cap_atoms, cap_classes, cap_ranges, cap_lits;
};

/* ---------------------------------------------------------------------------------------
 * Characters
 * ------------------------------------------------------------------------------------- */

static bool is_cont(unsigned char c)
{
	return (c & 0xC0) == 0x80;
}

/* Decodes one character at s (s < end); returns its length. Lenient: it only has to agree
 * with itself, since pattern and text are decoded the same way. */
static size_t decode(const char *s, const char *end, uint32_t *cp)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t avail = (size_t)(end - s), n;

	if (u[0] < 0x80) {
		*cp = u[0];
		return 1;
	}
	if (u[0] >= 0xC2 && u[0] <= 0xDF)
		n = 2;
	else if (u[0] >= 0xE0 && u[0] <= 0xEF)
		n = 3;
	else if (u[0] >= 0xF0 && u[0] <= 0xF4)
		n = 4;
	else
		n = 0;
	for (size_t i = 1; n && i < n; i++)
		if (i >= avail || !is_cont(u[i]))
			n = 0;
	if (!n) {
		*cp = RAW_BYTE_BASE + u[0];
		return 1;
	}
	*cp = u[0] & (0x7F >> n);
	for (size_t i = 1; i < n; i++)
		*cp = (*cp << 6) | (u[i] & 0x3F);
	return n;
}

static bool in_named(uint8_t named, uint32_t c)
{
	if (c >= 0x80)   /* the POSIX classes are ASCII here, as in git's wildmatch */
		return false;
	switch (named) {
	case NAMED_ALNUM: return (c | 0x20) - 'a' < 26 || c - '0' < 10;
	case NAMED_ALPHA: return (c | 0x20) - 'a' < 26;
	case NAMED_BLANK: return c == ' ' || c == '\t';
	case NAMED_CNTRL: return c < 0x20 || c == 0x7F;
	case NAMED_DIGIT: return c - '0' < 10;
	case NAMED_GRAPH: return c > 0x20 && c < 0x7F;
	case NAMED_LOWER: return c - 'a' < 26;
	case NAMED_PRINT: return c >= 0x20 && c < 0x7F;
	case NAMED_PUNCT: return c > 0x20 && c < 0x7F && !in_named(NAMED_ALNUM, c);
	case NAMED_SPACE: return c == ' ' || (c >= '\t' && c <= '\r');
	case NAMED_UPPER: return c - 'A' < 26;
	case NAMED_XDIGIT: return c - '0' < 10 || (c | 0x20) - 'a' < 6;
	default: return false;
	}
}

static uint8_t named_class(const char *name, size_t n)
{
	static const char *const names[] = { "alnum", "alpha", "blank", "cntrl", "digit", "graph",
		"lower", "print", "punct", "space", "upper", "xdigit" };

	for (size_t i = 0; i < SBX_ARRAY_SIZE(names); i++)
		if (strlen(names[i]) == n && memcmp(names[i], name, n) == 0)
			return (uint8_t)(NAMED_ALNUM + i);
	return NAMED_NONE;
}

/* ---------------------------------------------------------------------------------------
 * Storage
 * ------------------------------------------------------------------------------------- */

/* Grows *arr (of *cap elements of size sz) to hold one more than n. */
static int grow(void **arr, size_t *cap, size_t n, size_t sz)
{
	void *p;
	size_t c;

	if (n < *cap)
		return 0;
	c = *cap ? *cap * 2 : 8;
	p = reallocarray(*arr, c, sz);
	if (!p)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	*arr = p;
	*cap = c;
	return 0;
}

#define PUSH(g, field, value) \
	(grow((void **)&(g)->field, &(g)->cap_##field, (g)->n##field, sizeof *(g)->field) < 0 ? \
		-SBX_ENOMEM : ((g)->field[(g)->n##field++] = (value), 0))

/* ---------------------------------------------------------------------------------------
 * Classes: one parser for the check (out == NULL) and the compile
 * ------------------------------------------------------------------------------------- */

typedef struct class_error {
	const char *what;   /* NULL when the class is good */
	const char *at;
} class_error;

/* Parses the class starting at p ('['). Returns the position after its ']', or NULL with
 * *err set. With g, stores the class and puts its index in *index. */
static const char *parse_class(const char *p, const char *end, sbx_glob *g, uint32_t *index,
                               class_error *err)
{
	const char *open = p;
	cls c = { g ? (uint32_t)g->nranges : 0, 0, false };
	bool first = true;

	p++;
	if (p < end && (*p == '!' || *p == '^')) {
		c.negate = true;
		p++;
	}
	for (;;) {
		range r = { 0, 0, NAMED_NONE };

		if (p >= end) {
			*err = (class_error){ "unclosed '['", open };
			return NULL;
		}
		if (*p == ']' && !first)
			break;
		first = false;
		if (*p == '[' && p + 1 < end && p[1] == ':') {
			const char *name = p + 2, *q = name;
			while (q + 1 < end && !(q[0] == ':' && q[1] == ']'))
				q++;
			if (q + 1 >= end) {
				*err = (class_error){ "unclosed '[:'", p };
				return NULL;
			}
			r.named = named_class(name, (size_t)(q - name));
			if (r.named == NAMED_NONE) {
				*err = (class_error){ "unknown character class name", p };
				return NULL;
			}
			p = q + 2;
		} else {
			const char *at = p;
			if (*p == '\\' && ++p >= end)
				continue;   /* reported as unclosed on the next round */
			p += decode(p, end, &r.lo);
			r.hi = r.lo;
			if (p + 1 < end && *p == '-' && p[1] != ']') {
				p++;
				if (*p == '\\' && ++p >= end)
					continue;
				p += decode(p, end, &r.hi);
				if (r.hi < r.lo) {
					*err = (class_error){ "reversed range", at };
					return NULL;
				}
			}
		}
		if (g && PUSH(g, ranges, r) < 0)
			return NULL;
		c.n++;
	}
	if (g) {
		if (PUSH(g, classes, c) < 0)
			return NULL;
		*index = (uint32_t)g->nclasses - 1;
	}
	return p + 1;
}

static bool class_matches(const sbx_glob *g, const cls *c, uint32_t cp)
{
	bool hit = false;

	for (uint32_t i = 0; i < c->n && !hit; i++) {
		const range *r = &g->ranges[c->first + i];
		hit = r->named ? in_named(r->named, cp) : (cp >= r->lo && cp <= r->hi);
	}
	return hit != c->negate;
}

/* ---------------------------------------------------------------------------------------
 * Checking the whole pattern first, so messages can point into what the caller wrote
 * ------------------------------------------------------------------------------------- */

static int bad_pattern(const char *pattern, const char *what, const char *at)
{
	return sbx_fail(-SBX_EINVAL, "invalid glob pattern '%s': %s at byte %zu", pattern, what,
	                (size_t)(at - pattern));
}

static int check_pattern(const char *pattern, size_t len, bool braces)
{
	const char *p = pattern, *end = pattern + len;
	const char *opens[MAX_BRACE_GROUPS];
	size_t depth = 0, groups = 0;
	class_error err = { NULL, NULL };

	if (len > SBX_GLOB_MAX_PATTERN)
		return sbx_fail(-SBX_EINVAL, "invalid glob pattern: %zu bytes, the limit is %d", len,
		                SBX_GLOB_MAX_PATTERN);
	if (memchr(pattern, '\0', len))
		return sbx_fail(-SBX_EINVAL, "invalid glob pattern: it contains a NUL byte");
	while (p < end) {
		if (*p == '\\') {
			if (p + 1 >= end)
				return bad_pattern(pattern, "a backslash with nothing to escape", p);
			p += 2;
		} else if (*p == '[') {
			const char *next = parse_class(p, end, NULL, NULL, &err);
			if (!next)
				return bad_pattern(pattern, err.what, err.at);
			p = next;
		} else if (braces && *p == '{') {
			if (++groups > MAX_BRACE_GROUPS)
				return bad_pattern(pattern, "too many '{' groups", p);
			opens[depth++] = p++;
		} else if (braces && *p == '}' && depth) {
			depth--;
			p++;
		} else {
			p++;
		}
	}
	if (depth)
		return bad_pattern(pattern, "unclosed '{'", opens[depth - 1]);
	return 0;
}

/* ---------------------------------------------------------------------------------------
 * Brace expansion (on a checked pattern)
 * ------------------------------------------------------------------------------------- */

typedef struct strlist {
	char **v;
	size_t n, cap;
} strlist;

static void strlist_free(strlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
}

static int strlist_push(strlist *l, char *s)
{
	if (!s || grow((void **)&l->v, &l->cap, l->n, sizeof *l->v) < 0) {
		free(s);
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	}
	l->v[l->n++] = s;
	return 0;
}

/* The next character position after the unit at p: an escape pair, a whole class or one
 * byte. Classes are skipped whole so '{' ',' '}' inside them stay literal. */
static const char *skip_unit(const char *p, const char *end)
{
	class_error err;

	if (*p == '\\')
		return p + 2 <= end ? p + 2 : end;
	if (*p == '[') {
		const char *next = parse_class(p, end, NULL, NULL, &err);
		return next ? next : p + 1;
	}
	return p + 1;
}

/* Finds the first top-level '{' of s; then its matching '}' and the top-level commas in
 * between go to seps (seps[0] = the '{', last = the '}'). Returns the number of seps or 0. */
static size_t find_group(const char *s, const char **seps, size_t max)
{
	const char *end = s + strlen(s), *p = s;
	size_t n = 0, depth = 0;

	while (p < end && *p != '{')
		p = skip_unit(p, end);
	if (p >= end)
		return 0;
	seps[n++] = p++;
	while (p < end) {
		if (*p == '{') {
			depth++;
		} else if (*p == '}') {
			if (!depth) {
				seps[n++] = p;
				return n;
			}
			depth--;
		} else if (*p == ',' && !depth) {
			if (n + 1 >= max)
				return SIZE_MAX;
			seps[n++] = p;
		}
		p = skip_unit(p, end);
	}
	return 0;   /* not reached for a checked pattern */
}

static char *splice(const char *s, const char *cut_from, const char *choice, size_t choice_len,
                    const char *resume)
{
	size_t head = (size_t)(cut_from - s), tail = strlen(resume);
	char *r = malloc(head + choice_len + tail + 1);

	if (!r)
		return NULL;
	memcpy(r, s, head);
	memcpy(r + head, choice, choice_len);
	memcpy(r + head + choice_len, resume, tail + 1);
	return r;
}

/* Expands the brace groups of pattern into out, one string per alternative. A pending list
 * instead of recursion: every pending string yields at least one result, so pending + done
 * bounds the final count and the cap is enforced before the work grows. */
static int expand_braces(const char *pattern, strlist *out)
{
	strlist pending = { 0 };
	const char *seps[SBX_GLOB_MAX_ALTERNATIVES + 2];
	int r = strlist_push(&pending, strdup(pattern));

	while (r == 0 && pending.n) {
		_cleanup_free_ char *s = pending.v[--pending.n];
		size_t n = find_group(s, seps, SBX_ARRAY_SIZE(seps));

		if (n == 0) {
			r = strlist_push(out, SBX_TAKE_PTR(s));
			continue;
		}
		if (n == SIZE_MAX || pending.n + out->n + n - 1 > SBX_GLOB_MAX_ALTERNATIVES) {
			r = sbx_fail(-SBX_EINVAL, "invalid glob pattern '%s': more than %d alternatives",
			             pattern, SBX_GLOB_MAX_ALTERNATIVES);
			break;
		}
		/* Pushed in reverse so alternatives come out in the order written. */
		for (size_t i = n - 1; i > 0 && r == 0; i--)
			r = strlist_push(&pending, splice(s, seps[0], seps[i - 1] + 1,
			                              (size_t)(seps[i] - seps[i - 1] - 1), seps[n - 1] + 1));
	}
	strlist_free(&pending);
	return r;
}

/* ---------------------------------------------------------------------------------------
 * Compiling one alternative
 * ------------------------------------------------------------------------------------- */

static bool is_globstar(const char *s, size_t n)
{
	return n == 2 && s[0] == '*' && s[1] == '*';
}

/* The end of the component starting at p: the next unescaped '/' outside a class. */
static const char *component_end(const char *p, const char *end)
{
	while (p < end && *p != '/')
		p = skip_unit(p, end);
	return p;
}

static int push_atoms(sbx_glob *g, const char *p, const char *end)
{
	class_error err;

	while (p < end) {
		atom a = { ATOM_BYTE, (unsigned char)*p };

		if (*p == '*') {
			while (p < end && *p == '*')
				p++;
			a.kind = ATOM_STAR;
		} else if (*p == '?') {
			a.kind = ATOM_ANY;
			p++;
		} else if (*p == '[') {
			a.kind = ATOM_CLASS;
			p = parse_class(p, end, g, &a.v, &err);
			if (!p)
				return -SBX_ENOMEM;   /* the check already refused bad classes */
		} else {
			if (*p == '\\')
				p++;
			a.v = (unsigned char)*p++;
		}
		if (PUSH(g, atoms, a) < 0)
			return -SBX_ENOMEM;
	}
	return 0;
}

/* Turns atoms [first, natoms) into a LITERAL or SUFFIX segment when they allow it. */
static int simplify_segment(sbx_glob *g, seg *s)
{
	uint32_t lit_from = s->first;
	bool suffix = s->n > 0 && g->atoms[s->first].kind == ATOM_STAR;

	if (suffix)
		lit_from++;
	for (uint32_t i = lit_from; i < s->first + s->n; i++)
		if (g->atoms[i].kind != ATOM_BYTE)
			return 0;
	s->kind = suffix ? SEG_SUFFIX : SEG_LITERAL;
	uint32_t first = (uint32_t)g->nlits;
	for (uint32_t i = lit_from; i < s->first + s->n; i++)
		if (PUSH(g, lits, (char)g->atoms[i].v) < 0)
			return -SBX_ENOMEM;
	g->natoms = s->first;   /* the atoms are no longer needed */
	s->first = first;
	s->n = (uint32_t)g->nlits - first;
	return 0;
}

static int push_segment(sbx_glob *g, const char *p, const char *end)
{
	seg s = { SEG_ATOMS, (uint32_t)g->natoms, 0 };
	size_t n = (size_t)(end - p);

	if (n == 0 || (n == 1 && *p == '.'))
		return 0;
	if (is_globstar(p, n)) {
		if (g->nsegs > g->alts[g->nalts - 1].first &&
		    g->segs[g->nsegs - 1].kind == SEG_GLOBSTAR)
			return 0;   /* "**" twice is "**" once */
		s.kind = SEG_GLOBSTAR;
		return PUSH(g, segs, s);
	}
	if (push_atoms(g, p, end) < 0)
		return -SBX_ENOMEM;
	s.n = (uint32_t)g->natoms - s.first;
	if (simplify_segment(g, &s) < 0)
		return -SBX_ENOMEM;
	return PUSH(g, segs, s);
}

static int compile_alternative(sbx_glob *g, const char *s)
{
	static const char any_name[] = "*";
	const char *end = s + strlen(s), *p = s;
	alt a = { (uint32_t)g->nsegs, 0 };

	if (PUSH(g, alts, a) < 0)
		return -SBX_ENOMEM;
	while (p < end) {
		const char *ce = component_end(p, end);
		if (push_segment(g, p, ce) < 0)
			return -SBX_ENOMEM;
		p = ce < end ? ce + 1 : ce;
	}
	/* A trailing "**" means what is below: one more component at least. */
	if (g->nsegs > a.first && g->segs[g->nsegs - 1].kind == SEG_GLOBSTAR &&
	    push_segment(g, any_name, any_name + 1) < 0)
		return -SBX_ENOMEM;
	g->alts[g->nalts - 1].n = (uint32_t)g->nsegs - a.first;
	return 0;
}

int sbx_glob_compile(const char *pattern, unsigned flags, sbx_glob **out)
{
	bool braces = !(flags & SBX_GLOB_NO_BRACES);
	strlist alts = { 0 };
	sbx_glob *g;
	int r;

	*out = NULL;
	r = check_pattern(pattern, strlen(pattern), braces);
	if (r < 0)
		return r;
	r = braces ? expand_braces(pattern, &alts) : strlist_push(&alts, strdup(pattern));
	if (r < 0) {
		strlist_free(&alts);
		return r;
	}
	g = calloc(1, sizeof *g);
	if (!g)
		r = sbx_fail(-SBX_ENOMEM, "out of memory");
	for (size_t i = 0; r == 0 && i < alts.n; i++)
		r = compile_alternative(g, alts.v[i]);
	strlist_free(&alts);
	if (r < 0) {
		sbx_glob_free(g);
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	}
	*out = g;
	return 0;
}

void sbx_glob_free(sbx_glob *g)
{
	if (!g)
		return;
	free(g->alts);
	free(g->segs);
	free(g->atoms);
	free(g->classes);
	free(g->ranges);
	free(g->lits);
	free(g);
}

/* ---------------------------------------------------------------------------------------
 * Matching
 * ------------------------------------------------------------------------------------- */

static bool atom_matches(const sbx_glob *g, const atom *a, const char *t, const char *end,
                         size_t *used)
{
	uint32_t cp;

	if (a->kind == ATOM_BYTE) {
		*used = 1;
		return (unsigned char)*t == a->v;
	}
	*used = decode(t, end, &cp);
	return a->kind == ATOM_ANY || class_matches(g, &g->classes[a->v], cp);
}

/* The characters of one component [t, end) against the atoms of s. */
static bool atoms_match(const sbx_glob *g, const seg *s, const char *t, const char *end)
{
	const atom *at = g->atoms + s->first;
	uint32_t pi = 0, star = UINT32_MAX;
	const char *star_t = NULL;
	size_t used;

	while (t < end) {
		if (pi < s->n && at[pi].kind == ATOM_STAR) {
			star = pi++;
			star_t = t;
			continue;
		}
		if (pi < s->n && atom_matches(g, &at[pi], t, end, &used)) {
			pi++;
			t += used;
			continue;
		}
		if (star == UINT32_MAX)
			return false;
		uint32_t cp;
		star_t += decode(star_t, end, &cp);
		t = star_t;
		pi = star + 1;
	}
	while (pi < s->n && at[pi].kind == ATOM_STAR)
		pi++;
	return pi == s->n;
}

static bool segment_matches(const sbx_glob *g, const seg *s, const char *t, size_t n)
{
	switch (s->kind) {
	case SEG_LITERAL:
		return n == s->n && memcmp(t, g->lits + s->first, n) == 0;
	case SEG_SUFFIX:
		return n >= s->n && (!s->n || memcmp(t + n - s->n, g->lits + s->first, s->n) == 0);
	case SEG_ATOMS:
		return atoms_match(g, s, t, t + n);
	default:
		return false;
	}
}

static const char *next_slash(const char *t, const char *end)
{
	const char *s = memchr(t, '/', (size_t)(end - t));

	return s ? s : end;
}

static bool alternative_matches(const sbx_glob *g, const alt *a, const char *t,
                                const char *end)
{
	const seg *sg = a->n ? g->segs + a->first : NULL;   /* "." has no segments */
	uint32_t pi = 0, star = UINT32_MAX;
	const char *star_t = NULL;

	while (t < end) {
		const char *ce = next_slash(t, end);
		if (pi < a->n && sg[pi].kind == SEG_GLOBSTAR) {
			star = pi++;
			star_t = t;
			continue;
		}
		if (pi < a->n && segment_matches(g, &sg[pi], t, (size_t)(ce - t))) {
			pi++;
			t = ce < end ? ce + 1 : ce;
			continue;
		}
		if (star == UINT32_MAX)
			return false;
		ce = next_slash(star_t, end);
		star_t = ce < end ? ce + 1 : ce;
		t = star_t;
		pi = star + 1;
	}
	while (pi < a->n && sg[pi].kind == SEG_GLOBSTAR)
		pi++;
	return pi == a->n;
}

bool sbx_glob_match(const sbx_glob *g, const char *path, size_t len)
{
	if (!len)
		return false;
	for (size_t i = 0; i < g->nalts; i++)
		if (alternative_matches(g, &g->alts[i], path, path + len))
			return true;
	return false;
}

/* The directory's components must match the segments before the first "**" one for one,
 * and at least one segment must be left for what lies below. */
static bool alternative_may_match_below(const sbx_glob *g, const alt *a, const char *t,
                                        const char *end)
{
	uint32_t pi = 0;

	while (t < end) {
		const char *ce = next_slash(t, end);
		if (pi >= a->n)
			return false;
		if (g->segs[a->first + pi].kind == SEG_GLOBSTAR)
			return true;
		if (!segment_matches(g, &g->segs[a->first + pi], t, (size_t)(ce - t)))
			return false;
		pi++;
		t = ce < end ? ce + 1 : ce;
	}
	return pi < a->n;
}

bool sbx_glob_may_match_below(const sbx_glob *g, const char *dir, size_t len)
{
	for (size_t i = 0; i < g->nalts; i++)
		if (alternative_may_match_below(g, &g->alts[i], dir, dir + len))
			return true;
	return false;
}
