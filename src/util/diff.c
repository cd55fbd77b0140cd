/* Unified diff: lines compared by hash then bytes, the common head and tail trimmed first
 * (an Edit changes a few lines of a long file), Myers' O((N+M)D) search over what remains with
 * D bounded so a diff never costs unbounded time or memory. Hunks and their headers follow
 * difflib.unified_diff, which is what the reference tools print. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/diff.h"

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

/* One hunk: edits [from, to) of the script. */
static void put_hunk(sbx_buf *out, const struct script *sc, size_t from, size_t to,
                     const struct line *a, const struct line *b)
{
	size_t a_len = 0, b_len = 0;

	for (size_t i = from; i < to; i++) {
		a_len += sc->v[i].op != INS;
		b_len += sc->v[i].op != DEL;
	}
	sbx_buf_puts(out, "@@ -");
	put_range(out, sc->v[from].a, a_len);
	sbx_buf_puts(out, " +");
	put_range(out, sc->v[from].b, b_len);
	sbx_buf_puts(out, " @@\n");
	for (size_t i = from; i < to; i++) {
		const struct edit *e = &sc->v[i];

		put_line(out, e->op == EQ ? ' ' : e->op == DEL ? '-' : '+',
		         e->op == INS ? &b[e->b] : &a[e->a]);
	}
}

static void put_hunks(sbx_buf *out, const struct script *sc, const struct line *a,
                      const struct line *b)
{
	size_t i = 0;

	while (i < sc->n) {
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

		put_hunk(out, sc, from, to, a, b);
		i = to;
	}
}

void sbx_diff_unified(sbx_buf *out, const char *from_name, const char *a, size_t alen,
                      const char *to_name, const char *b, size_t blen)
{
	size_t n = 0, m = 0;
	struct line *la = split_lines(a, alen, &n), *lb = split_lines(b, blen, &m);
	struct script sc = { 0 };

	if (!la || !lb) {
		out->oom = true;
		goto done;
	}
	if (alen == blen && memcmp(a, b, alen) == 0)
		goto done;
	build_script(&sc, la, n, lb, m);
	if (sc.oom) {
		out->oom = true;
		goto done;
	}
	sbx_buf_printf(out, "--- %s\n+++ %s\n", from_name, to_name);
	put_hunks(out, &sc, la, lb);
done:
	free(sc.v);
	free(la);
	free(lb);
}
