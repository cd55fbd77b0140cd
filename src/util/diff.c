/* Unified diff: the common head and tail are cut off as bytes first (an Edit changes a few
 * lines of a long file, and only what differs is split into lines), lines compared by hash
 * then bytes, Myers' O((N+M)D) search over what remains with D bounded, and limits on the
 * size of the part that differs and of the output, so a diff never costs unbounded time or
 * memory. Hunks and their headers follow difflib.unified_diff, which is what the reference
 * tools print. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diff.h"

#define CONTEXT 3
#define MAX_EDIT_DISTANCE 1000   /* beyond this: one hunk replaces the differing middle */

struct line {
	const char *s;
	size_t len;      /* with its newline, if it has one */
	uint64_t hash;
};

enum op { EQ, DEL, INS };

struct edit {
	enum op op;
	size_t a, b;     /* line indexes in a and b (the one not involved is where it would be) */
};

struct script {
	struct edit *v;
	size_t n, cap;
	bool oom;
};

static uint64_t hash_bytes(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
	return h;
}

static struct line *split_lines(const char *s, size_t len, size_t *count)
{
	size_t n = 0, cap = 16;
	struct line *v = malloc(cap * sizeof *v);

	for (size_t i = 0; v && i < len;) {
		const char *nl = memchr(s + i, '\n', len - i);
		size_t l = nl ? (size_t)(nl - (s + i)) + 1 : len - i;

		if (n == cap) {
			struct line *nv = realloc(v, (cap *= 2) * sizeof *v);
			if (!nv) {
				free(v);
				return NULL;
			}
			v = nv;
		}
		v[n++] = (struct line){ s + i, l, hash_bytes(s + i, l) };
		i += l;
	}
	*count = n;
	return v;
}

static bool same(const struct line *x, const struct line *y)
{
	return x->hash == y->hash && x->len == y->len && memcmp(x->s, y->s, x->len) == 0;
}

static void push(struct script *sc, enum op op, size_t a, size_t b)
{
	if (sc->n == sc->cap) {
		size_t cap = sc->cap ? sc->cap * 2 : 64;
		struct edit *nv = realloc(sc->v, cap * sizeof *nv);

		if (!nv) {
			sc->oom = true;
			return;
		}
		sc->v = nv;
		sc->cap = cap;
	}
	sc->v[sc->n++] = (struct edit){ op, a, b };
}

/* The fallback for a middle too different to search: delete all of it, insert all of it. */
static void replace_all(struct script *sc, size_t a0, size_t n, size_t b0, size_t m)
{
	for (size_t i = 0; i < n; i++)
		push(sc, DEL, a0 + i, b0);
	for (size_t j = 0; j < m; j++)
		push(sc, INS, a0 + n, b0 + j);
}

/* Myers: trace[d] holds the furthest x reached on each diagonal k (index k + d) after d
 * edits; walking the trace back from the end yields the edits. Returns false when the
 * distance exceeds the bound. */
static bool myers(struct script *sc, const struct line *a, size_t n, const struct line *b,
                  size_t m, size_t a0, size_t b0)
{
	size_t dmax = n + m < MAX_EDIT_DISTANCE ? n + m : MAX_EDIT_DISTANCE;
	long **trace = calloc(dmax + 1, sizeof *trace);
	long d_end = -1;

	if (!trace) {
		sc->oom = true;
		return true;
	}
	for (long d = 0; d <= (long)dmax && d_end < 0; d++) {
		long *v = malloc((size_t)(2 * d + 1) * sizeof *v);
		long *prev = d ? trace[d - 1] : NULL;

		if (!v)
			break;
		trace[d] = v;
		for (long k = -d; k <= d; k += 2) {
			long x;

			if (d == 0)
				x = 0;
			else if (k == -d || (k != d && prev[k - 1 + (d - 1)] < prev[k + 1 + (d - 1)]))
				x = prev[k + 1 + (d - 1)];        /* down: an insertion */
			else
				x = prev[k - 1 + (d - 1)] + 1;    /* right: a deletion */
			long y = x - k;
			while (x < (long)n && y < (long)m && same(&a[x], &b[y]))
				x++, y++;
			v[k + d] = x;
			if (x >= (long)n && y >= (long)m) {
				d_end = d;
				break;
			}
		}
	}
	if (d_end >= 0) {
		/* Back from (n, m): collect the edits in reverse, then reverse them. */
		size_t start = sc->n;
		long x = (long)n, y = (long)m;

		for (long d = d_end; d > 0; d--) {
			long *prev = trace[d - 1], k = x - y, pk, px, py;

			if (k == -d || (k != d && prev[k - 1 + (d - 1)] < prev[k + 1 + (d - 1)]))
				pk = k + 1;
			else
				pk = k - 1;
			px = prev[pk + (d - 1)];
			py = px - pk;
			while (x > px && y > py)
				push(sc, EQ, a0 + (size_t)--x, b0 + (size_t)--y);
			if (pk == k + 1)
				push(sc, INS, a0 + (size_t)x, b0 + (size_t)--y);
			else
				push(sc, DEL, a0 + (size_t)--x, b0 + (size_t)y);
		}
		while (x > 0 && y > 0)
			push(sc, EQ, a0 + (size_t)--x, b0 + (size_t)--y);
		for (size_t i = start, j = sc->n ? sc->n - 1 : 0; !sc->oom && i < j; i++, j--) {
			struct edit t = sc->v[i];
			sc->v[i] = sc->v[j];
			sc->v[j] = t;
		}
	}
	for (size_t d = 0; d <= dmax; d++)
		free(trace[d]);
	free(trace);
	return d_end >= 0;
}

static void build_script(struct script *sc, const struct line *a, size_t n, const struct line *b,
                         size_t m)
{
	size_t head = 0, tail = 0;

	while (head < n && head < m && same(&a[head], &b[head]))
		head++;
	while (tail < n - head && tail < m - head && same(&a[n - 1 - tail], &b[m - 1 - tail]))
		tail++;
	for (size_t i = 0; i < head; i++)
		push(sc, EQ, i, i);
	if (!myers(sc, a + head, n - head - tail, b + head, m - head - tail, head, head))
		replace_all(sc, head, n - head - tail, head, m - head - tail);
	for (size_t i = 0; i < tail; i++)
		push(sc, EQ, n - tail + i, m - tail + i);
}

static void put_line(sbx_buf *out, char mark, const struct line *l)
{
	sbx_buf_append(out, &mark, 1);
	sbx_buf_append(out, l->s, l->len);
	if (!l->len || l->s[l->len - 1] != '\n')
		sbx_buf_puts(out, "\n\\ No newline at end of file\n");
}

static void put_range(sbx_buf *out, size_t start, size_t len)
{
	if (len == 1)
		sbx_buf_printf(out, "%zu", start + 1);
	else
		sbx_buf_printf(out, "%zu,%zu", len ? start + 1 : start, len);
}

/* Where the hunks go: the lines of the part that differs, the number of lines before that
 * part, and the output's own bound. */
struct sink {
	sbx_buf *out;
	const struct line *a, *b;
	size_t line0;
	size_t limit;    /* out->len may not pass this */
	bool full;
};

/* One hunk: edits [from, to) of the script. */
static void put_hunk(struct sink *k, const struct script *sc, size_t from, size_t to)
{
	size_t a_len = 0, b_len = 0;

	for (size_t i = from; i < to; i++) {
		a_len += sc->v[i].op != INS;
		b_len += sc->v[i].op != DEL;
	}
	sbx_buf_puts(k->out, "@@ -");
	put_range(k->out, k->line0 + sc->v[from].a, a_len);
	sbx_buf_puts(k->out, " +");
	put_range(k->out, k->line0 + sc->v[from].b, b_len);
	sbx_buf_puts(k->out, " @@\n");
	for (size_t i = from; i < to && !k->full; i++) {
		const struct edit *e = &sc->v[i];

		put_line(k->out, e->op == EQ ? ' ' : e->op == DEL ? '-' : '+',
		         e->op == INS ? &k->b[e->b] : &k->a[e->a]);
		k->full = k->out->len > k->limit;
	}
}

static void put_hunks(struct sink *k, const struct script *sc)
{
	size_t i = 0;

	while (i < sc->n && !k->full) {
		size_t change, end, last_change;

		while (i < sc->n && sc->v[i].op == EQ)
			i++;
		if (i == sc->n)
			return;
		change = i;
		last_change = i;
		/* Extend while the next change is within two contexts of the last one. */
		for (end = i; end < sc->n; end++) {
			if (sc->v[end].op != EQ)
				last_change = end;
			else if (end - last_change > 2 * CONTEXT)
				break;
		}
		size_t from = change > CONTEXT ? change - CONTEXT : 0;
		size_t to = last_change + 1 + CONTEXT < sc->n ? last_change + 1 + CONTEXT : sc->n;

		put_hunk(k, sc, from, to);
		i = to;
	}
}

/* ---- the part that differs ---- */

/* The span [start, a_end) of a and [start, b_end) of b outside of which the texts are the
 * same, on line boundaries, with CONTEXT lines of the same text kept on either side. */
struct window {
	size_t start, a_end, b_end;
	size_t line0;    /* lines before start */
};

static size_t common_prefix(const char *a, const char *b, size_t n)
{
	size_t i = 0;

	/* Block by block first: a long equal head is the common case and memcmp is fast. */
	while (i + 4096 <= n && memcmp(a + i, b + i, 4096) == 0)
		i += 4096;
	while (i < n && a[i] == b[i])
		i++;
	return i;
}

static size_t common_suffix(const char *a, size_t alen, const char *b, size_t blen, size_t n)
{
	size_t i = 0;

	while (i + 4096 <= n && memcmp(a + alen - i - 4096, b + blen - i - 4096, 4096) == 0)
		i += 4096;
	while (i < n && a[alen - 1 - i] == b[blen - 1 - i])
		i++;
	return i;
}

/* The start of the line before the one starting at pos (pos > 0). */
static size_t line_before(const char *s, size_t pos)
{
	const char *nl = pos > 1 ? memrchr(s, '\n', pos - 1) : NULL;

	return nl ? (size_t)(nl - s) + 1 : 0;
}

static size_t count_newlines(const char *s, size_t n)
{
	size_t c = 0;

	for (size_t i = 0; i < n; i++)
		c += s[i] == '\n';
	return c;
}

static struct window find_window(const char *a, size_t alen, const char *b, size_t blen)
{
	size_t shorter = alen < blen ? alen : blen, p = common_prefix(a, b, shorter), start, end;
	size_t s = common_suffix(a, alen, b, blen, shorter - p);
	const char *nl;
	struct window w;

	/* Back to the start of the first line that differs, and CONTEXT lines further. */
	nl = p ? memrchr(a, '\n', p) : NULL;
	start = nl ? (size_t)(nl - a) + 1 : 0;
	for (int k = 0; k < CONTEXT && start > 0; k++)
		start = line_before(a, start);
	/* On to the end of the line where the common tail begins, and CONTEXT lines further. */
	end = alen - s;
	nl = end < alen ? memchr(a + end, '\n', alen - end) : NULL;
	end = nl ? (size_t)(nl - a) + 1 : alen;
	for (int k = 0; k < CONTEXT && end < alen; k++) {
		nl = memchr(a + end, '\n', alen - end);
		end = nl ? (size_t)(nl - a) + 1 : alen;
	}
	w.start = start;
	w.a_end = end;
	w.b_end = blen - (alen - end);
	w.line0 = count_newlines(a, start);
	return w;
}

static size_t count_lines(const char *s, size_t n)
{
	return count_newlines(s, n) + (n && s[n - 1] != '\n');
}

/* Says why the diff of the window would cost too much (false: it would not). */
static bool over_limits(const struct window *w, const char *a, const char *b,
                        const sbx_diff_limits *lim, char *why, size_t why_len)
{
	size_t abytes = w->a_end - w->start, bbytes = w->b_end - w->start, alines, blines;

	if (abytes > lim->max_bytes || bbytes > lim->max_bytes) {
		snprintf(why, why_len, "the change spans %zu bytes of the old text and %zu of the "
		         "new; diffs are made up to %zu bytes", abytes, bbytes, lim->max_bytes);
		return true;
	}
	alines = count_lines(a + w->start, abytes);
	blines = count_lines(b + w->start, bbytes);
	if (alines > lim->max_lines || blines > lim->max_lines) {
		snprintf(why, why_len, "the change spans %zu lines of the old text and %zu of the "
		         "new; diffs are made up to %zu lines", alines, blines, lim->max_lines);
		return true;
	}
	return false;
}

int sbx_diff_unified(sbx_buf *out, const char *from_name, const char *a, size_t alen,
                     const char *to_name, const char *b, size_t blen, const sbx_diff_limits *lim,
                     char *why, size_t why_len)
{
	static const sbx_diff_limits defaults = { SBX_DIFF_MAX_BYTES, SBX_DIFF_MAX_LINES,
	                                          SBX_DIFF_MAX_OUTPUT };
	char ignored[8];
	struct window w;
	struct line *la = NULL, *lb = NULL;
	struct script sc = { 0 };
	size_t n = 0, m = 0, before = out->len;
	int r = 0;

	if (!lim)
		lim = &defaults;
	if (!why || !why_len)
		why = ignored, why_len = sizeof ignored;
	if (alen == blen && memcmp(a, b, alen) == 0)
		return 0;
	w = find_window(a, alen, b, blen);
	if (over_limits(&w, a, b, lim, why, why_len))
		return 1;
	la = split_lines(a + w.start, w.a_end - w.start, &n);
	lb = split_lines(b + w.start, w.b_end - w.start, &m);
	if (!la || !lb) {
		out->oom = true;
		goto done;
	}
	build_script(&sc, la, n, lb, m);
	if (sc.oom) {
		out->oom = true;
		goto done;
	}
	sbx_buf_printf(out, "--- %s\n+++ %s\n", from_name, to_name);
	struct sink k = { out, la, lb, w.line0, before + lim->max_output, false };
	put_hunks(&k, &sc);
	if (k.full) {
		out->len = before;
		if (out->data)
			out->data[before] = '\0';
		snprintf(why, why_len, "the diff is longer than %zu bytes (the old text has %zu "
		         "bytes, the new %zu)", lim->max_output, alen, blen);
		r = 1;
	}
done:
	free(sc.v);
	free(la);
	free(lb);
	return r;
}
