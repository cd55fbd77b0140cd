/* seccomp_walk.h: every mismatch is collected, so one run names every call that got
 * through, not the first. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "init/seccomp_table.h"
#include "seccomp_walk.h"

struct report {
	char *text;
	size_t len;
	int problems;
};

__attribute__((format(printf, 2, 3)))
static void add(struct report *r, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	n = strlen(line);
	r->text = realloc(r->text, r->len + n + 2);
	if (!r->text)
		abort();
	memcpy(r->text + r->len, line, n);
	r->len += n;
	r->text[r->len++] = '\n';
	r->text[r->len] = '\0';
	r->problems++;
}

/* The value after "kind key " on its line of out (a copy, or NULL). */
static char *lookup(const char *out, const char *kind, const char *key)
{
	size_t k = strlen(kind), n = strlen(key);

	for (const char *l = out; l && *l;) {
		const char *next = strchr(l, '\n');

		if (!strncmp(l, kind, k) && l[k] == ' ' && !strncmp(l + k + 1, key, n) &&
		    l[k + 1 + n] == ' ')
			return strndup(l + k + 2 + n, strcspn(l + k + 2 + n, "\n"));
		l = next ? next + 1 : NULL;
	}
	return NULL;
}

/* "OUTCOME [WANT]": the first word in *outcome, the second (or NULL) in *want. */
static void split(char *value, char **outcome, char **want)
{
	char *space = value ? strchr(value, ' ') : NULL;

	*outcome = value;
	*want = NULL;
	if (space) {
		*space = '\0';
		*want = space + 1;
	}
}

static void check_row(struct report *r, const struct sbx_syscall_row *row, const char *walk,
                      const char *deny, const char *bare)
{
	const char *want = row->ours == SBX_OURS_ENOSYS ? "ENOSYS" : deny;
	char *got = lookup(walk, "row", row->name), *before = bare ? lookup(bare, "row", row->name)
	                                                           : NULL;

	if (!got)
		add(r, "%s: not walked", row->name);
	else if (strcmp(got, want))
		add(r, "%s: got %s, want %s", row->name, got, want);
	if (bare && (!before || !strcmp(before, want)))
		add(r, "%s: without the filter it gave %s: the walk proves nothing", row->name,
		    before ? before : "nothing");
	free(got);
	free(before);
}

static void check_rows(struct report *r, const char *walk, const char *deny, const char *bare)
{
	for (size_t i = 0; i < sbx_syscall_table_len; i++) {
		const struct sbx_syscall_row *row = &sbx_syscall_table[i];

		if (sbx_syscall_row_nr(row) < 0)
			continue;
		if (row->ours == SBX_OURS_REFUSE || row->ours == SBX_OURS_ENOSYS)
			check_row(r, row, walk, deny, bare);
	}
}

/* Every line of one kind, as "key value" pairs, for fn. */
static void each_line(const char *out, const char *kind,
                      void (*fn)(struct report *, const char *key, char *value, void *),
                      struct report *r, void *arg)
{
	size_t k = strlen(kind);

	for (const char *l = out; l && *l;) {
		const char *next = strchr(l, '\n');
		size_t len = next ? (size_t)(next - l) : strlen(l);

		if (len > k && !strncmp(l, kind, k) && l[k] == ' ') {
			char *line = strndup(l + k + 1, len - k - 1), *value = strchr(line, ' ');

			if (value) {
				*value++ = '\0';
				fn(r, line, value, arg);
			}
			free(line);
		}
		l = next ? next + 1 : NULL;
	}
}

struct expect {
	const char *deny, *newer, *bare;
	int max;
};

static void check_control(struct report *r, const char *name, char *value, void *arg)
{
	const struct expect *e = arg;
	char *got, *want, *before = e->bare ? lookup(e->bare, "control", name) : NULL;
	char *before_got = NULL, *before_want;

	split(value, &got, &want);
	split(before, &before_got, &before_want);
	if (!want || strcmp(got, want))
		add(r, "control %s: got %s, want %s (allowed, the kernel should have answered)",
		    name, got, want ? want : "?");
	if (e->bare && (!before_got || strcmp(before_got, got)))
		add(r, "control %s: %s with the filter, %s without", name, got,
		    before_got ? before_got : "nothing");
	free(before);
}

static void check_number(struct report *r, const char *key, char *value, void *arg)
{
	const struct expect *e = arg;
	int nr = atoi(key);
	const char *want = nr > e->max ? e->newer : e->deny;

	if (strcmp(value, want))
		add(r, "number %d: got %s, want %s", nr, value, want);
}

static void check_x32(struct report *r, const char *key, char *value, void *arg)
{
	const struct expect *e = arg;

	if (strcmp(value, e->deny))
		add(r, "x32 number %s: got %s, want %s", key, value, e->deny);
}

/* Rows we allow must not be in the walk as refused. */
static void check_no_stray_row(struct report *r, const char *name, char *value, void *arg)
{
	const struct sbx_syscall_row *row = sbx_syscall_row_find(name);

	(void)value;
	(void)arg;
	if (!row || (row->ours != SBX_OURS_REFUSE && row->ours != SBX_OURS_ENOSYS))
		add(r, "row %s: walked as refused, but the table does not refuse it", name);
}

char *seccomp_walk_check(const char *walk, const char *deny, const char *newer,
                         const char *bare)
{
	struct report r = { 0 };
	struct expect e = { deny, newer, bare, sbx_syscall_table_max_nr() };

	check_rows(&r, walk, deny, bare);
	each_line(walk, "row", check_no_stray_row, &r, &e);
	each_line(walk, "control", check_control, &r, &e);
	each_line(walk, "number", check_number, &r, &e);
	each_line(walk, "x32", check_x32, &r, &e);
	if (!strstr(walk, "\nnumber ") && strncmp(walk, "number ", 7))
		add(&r, "no number was walked");
	return r.text;
}

int seccomp_walk_controls(const char *walk)
{
	int n = 0;

	for (const char *l = walk; (l = strstr(l, "control ")); l++)
		n += l == walk || l[-1] == '\n';
	return n;
}
