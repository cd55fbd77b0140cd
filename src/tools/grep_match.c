/* Grep's matching engine over whole buffers. The search asks PCRE2 for the next match from
 * the current position, turns it into the line(s) it lies on, reports them and resumes after
 * them, so a file with few matches costs one JIT scan plus a little work per match.
 *
 * PCRE2 backtracks, and its match limit counts per starting position: a pattern such as
 * (a+)+$ can cost ~2^n steps on each line of n a's, hours for a file that a command wrote to
 * be searched. So no call to the engine is allowed to scan far: an offset limit bounds where
 * a match may start (the subject stays the whole file, so anchors and lookaround see what
 * they would), the slice grows while calls are quick and shrinks to a single position when
 * they are slow, and the deadline, the file's CPU budget and the stop flag are looked at
 * between calls. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/grep_match.h"
#include "util/cleanup.h"
#include "util/error.h"

/* The JIT stack grows to this; deeper patterns fail on the file instead of the process. */
#define JIT_STACK_START (32u << 10)
#define JIT_STACK_MAX (4u << 20)
/* Starting positions one engine call may try: it starts small (one position may cost up to
 * PCRE2's match limit, tens of milliseconds), halves down to one when a call takes longer
 * than SLICE_SLOW_NS, and grows eightfold up to SLICE_MAX when one took under a tenth of
 * that, so a quick pattern reaches whole-file slices in a few calls. */
#define SLICE_START ((size_t)16)
#define SLICE_MAX ((size_t)1 << 20)
#define SLICE_SLOW_NS 5000000
/* The CPU clock is a system call: it is first read once a file has spent this long in the
 * engine (most files never do), and the budget counts from there. */
#define CPU_WATCH_AFTER_NS 20000000

struct sbx_grep_regex {
	pcre2_code *code;
	bool jit;
	sbx_grep_opts opts;
};

struct sbx_grep_matcher {
	const sbx_grep_regex *re;
	pcre2_match_data *md;
	pcre2_match_context *mctx;
	pcre2_jit_stack *stack;
};

int sbx_grep_regex_compile(const char *pattern, size_t len, const sbx_grep_opts *opts,
                           sbx_grep_regex **out)
{
	uint32_t flags = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | PCRE2_UCP | PCRE2_MULTILINE |
	                 PCRE2_USE_OFFSET_LIMIT;
	pcre2_compile_context *cc;
	sbx_grep_regex *re;
	PCRE2_SIZE erroff = 0;
	int errcode = 0;

	*out = NULL;
	if (opts->caseless)
		flags |= PCRE2_CASELESS;
	if (opts->multiline)
		flags |= PCRE2_DOTALL;
	re = calloc(1, sizeof *re);
	cc = pcre2_compile_context_create(NULL);
	if (!re || !cc) {
		free(re);
		pcre2_compile_context_free(cc);
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	}
	/* CRLF files: '$' before "\r\n", and '.' does not swallow the '\r'. */
	pcre2_set_newline(cc, PCRE2_NEWLINE_ANYCRLF);
	re->code = pcre2_compile((PCRE2_SPTR)pattern, len, flags, &errcode, &erroff, cc);
	pcre2_compile_context_free(cc);
	if (!re->code) {
		PCRE2_UCHAR msg[256];
		free(re);
		if (errcode == PCRE2_ERROR_HEAPLIMIT || errcode == PCRE2_ERROR_NOMEMORY)
			return sbx_fail(-SBX_ENOMEM, "out of memory");
		pcre2_get_error_message(errcode, msg, sizeof msg);
		return sbx_fail(-SBX_EINVAL, "invalid regex: %s at offset %zu", (const char *)msg,
		                (size_t)erroff);
	}
	re->jit = pcre2_jit_compile(re->code, PCRE2_JIT_COMPLETE) == 0;
	re->opts = *opts;
	*out = re;
	return 0;
}

void sbx_grep_regex_free(sbx_grep_regex *re)
{
	if (!re)
		return;
	pcre2_code_free(re->code);
	free(re);
}

int sbx_grep_matcher_new(const sbx_grep_regex *re, sbx_grep_matcher **out)
{
	sbx_grep_matcher *m = calloc(1, sizeof *m);

	*out = NULL;
	if (!m)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	m->re = re;
	m->md = pcre2_match_data_create_from_pattern(re->code, NULL);
	m->mctx = pcre2_match_context_create(NULL);
	if (re->jit)
		m->stack = pcre2_jit_stack_create(JIT_STACK_START, JIT_STACK_MAX, NULL);
	if (!m->md || !m->mctx || (re->jit && !m->stack)) {
		sbx_grep_matcher_free(m);
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	}
	if (m->stack)
		pcre2_jit_stack_assign(m->mctx, NULL, m->stack);
	*out = m;
	return 0;
}

void sbx_grep_matcher_free(sbx_grep_matcher *m)
{
	if (!m)
		return;
	pcre2_match_data_free(m->md);
	pcre2_match_context_free(m->mctx);
	pcre2_jit_stack_free(m->stack);
	free(m);
}

/* ---------------------------------------------------------------------------------------
 * One buffer
 * ------------------------------------------------------------------------------------- */

typedef struct scan {
	sbx_grep_matcher *m;
	const sbx_grep_opts *o;
	const sbx_grep_limits *lim;
	const char *d;
	size_t len;
	const char *shown;
	size_t shown_len;
	sbx_grep_result *res;
	/* A line start known to the scan and its number: it only moves forward. */
	size_t cur, cur_no;
	/* Content mode: the last line printed (0 = none), where the next one starts, how many
	 * after-context lines are still owed. */
	size_t last_no, last_end, after_left;
	bool done;   /* files mode: the first match settles it; any mode: the file was cut */
	/* The engine's slices, and the time spent in it (see out_of_time). */
	size_t slice;
	int64_t engine_ns, cpu_check_ns, cpu_start_ns;
	size_t cut_at;   /* where the search was when it was cut */
} scan;

/* The engine stopped because of a limit of ours: the file is cut (s->res->cut says why). */
#define RUN_CUT (-10000)

static int64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Looked at before every engine call. The CPU clock is a system call, so it is read only
 * once the wall time spent in the engine could have used up the budget (and then again when
 * it could have since). Sets res->cut when the file's search must end. */
static bool out_of_time(scan *s, int64_t now_ns)
{
	const sbx_grep_limits *lim = s->lim;

	if (lim->stop && atomic_load_explicit(lim->stop, memory_order_relaxed)) {
		s->res->cut = SBX_GREP_CUT_STOPPED;
		return true;
	}
	if (lim->deadline_ms && now_ns / 1000000 >= lim->deadline_ms) {
		s->res->cut = SBX_GREP_CUT_DEADLINE;
		return true;
	}
	if (!lim->cpu_budget_ms || s->engine_ns < s->cpu_check_ns)
		return false;
	int64_t budget = lim->cpu_budget_ms * 1000000;
	if (!s->cpu_start_ns) {
		s->cpu_start_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID);
		s->cpu_check_ns = s->engine_ns + budget;
		return false;
	}
	int64_t used = clock_ns(CLOCK_THREAD_CPUTIME_ID) - s->cpu_start_ns;
	if (used >= budget) {
		s->res->cut = SBX_GREP_CUT_SLOW;
		return true;
	}
	s->cpu_check_ns = s->engine_ns + (budget - used);
	return false;
}

static void adapt_slice(scan *s, int64_t took_ns)
{
	if (took_ns > SLICE_SLOW_NS)
		s->slice = s->slice > 1 ? s->slice / 2 : 1;
	else if (took_ns < SLICE_SLOW_NS / 10 && s->slice < SLICE_MAX)
		s->slice *= 8;
}

/* The next position a match may start at after `limit`: not inside a UTF-8 character. */
static size_t next_start(const char *subject, size_t len, size_t limit)
{
	size_t p = limit + 1;

	for (int k = 0; k < 3 && p < len && ((unsigned char)subject[p] & 0xC0) == 0x80; k++)
		p++;
	return p;
}

/* Runs the pattern on subject[0..len) from start, one slice of starting positions per call.
 * Returns 1 with the match's bounds, 0 for none, RUN_CUT when a limit ended it, or another
 * negative value when the engine gave up. */
static int run_match(scan *s, const char *subject, size_t len, size_t start, size_t *ms,
                     size_t *me)
{
	sbx_grep_matcher *m = s->m;
	int rc;

	while (start <= len) {
		size_t limit = len - start > s->slice ? start + s->slice : len;
		int64_t t0 = clock_ns(CLOCK_MONOTONIC), took;

		if (out_of_time(s, t0)) {
			s->cut_at = (size_t)(subject - s->d) + start;
			return RUN_CUT;
		}
		pcre2_set_offset_limit(m->mctx, limit);
		if (m->re->jit)
			rc = pcre2_jit_match(m->re->code, (PCRE2_SPTR)subject, len, start, 0, m->md,
			                     m->mctx);
		else
			rc = pcre2_match(m->re->code, (PCRE2_SPTR)subject, len, start, 0, m->md, m->mctx);
		took = clock_ns(CLOCK_MONOTONIC) - t0;
		s->engine_ns += took;
		adapt_slice(s, took);
		if (rc >= 0) {
			PCRE2_SIZE *ov = pcre2_get_ovector_pointer(m->md);
			*ms = ov[0];
			*me = ov[1] < ov[0] ? ov[0] : ov[1];   /* \K can put the end before the start */
			return 1;
		}
		if (rc != PCRE2_ERROR_NOMATCH) {
			s->res->cut = SBX_GREP_CUT_ENGINE;
			s->cut_at = (size_t)(subject - s->d) + start;
			return rc;
		}
		if (limit >= len)
			return 0;
		start = next_start(subject, len, limit);
	}
	return 0;
}

static size_t line_end(const scan *s, size_t pos)
{
	const char *nl = memchr(s->d + pos, '\n', s->len - pos);

	return nl ? (size_t)(nl - s->d) : s->len;
}

/* Moves the cursor to the start of the line holding pos (pos >= the cursor) and returns it;
 * the cursor keeps that line's number. */
static size_t seek_line(scan *s, size_t pos)
{
	const char *nl;

	while ((nl = memchr(s->d + s->cur, '\n', pos - s->cur))) {
		s->cur = (size_t)(nl - s->d) + 1;
		s->cur_no++;
	}
	return s->cur;
}

/* Is pos past the last line? A file's final newline ends its last line; it starts none. */
static bool past_last_line(const scan *s, size_t pos)
{
	return pos >= s->len && (s->len == 0 || s->d[s->len - 1] == '\n');
}

static size_t matches_in_line(scan *s, size_t ls, size_t le)
{
	size_t n = 0, pos = 0, ms, me;

	while (pos <= le - ls && run_match(s, s->d + ls, le - ls, pos, &ms, &me) > 0) {
		n++;
		pos = me > pos ? me : pos + 1;
	}
	return n;
}

static void print_line(scan *s, char kind, size_t no, size_t ls, size_t le)
{
	sbx_buf *b = &s->res->out;
	size_t n = le - ls;

	if (n && s->d[ls + n - 1] == '\r')
		n--;
	sbx_buf_append(b, s->shown, s->shown_len);
	if (s->o->line_numbers)
		sbx_buf_printf(b, "%c%zu%c", kind, no, kind);
	else
		sbx_buf_append(b, &kind, 1);
	if (n <= SBX_GREP_MAX_COLUMNS)
		sbx_buf_append(b, s->d + ls, n);
	else if (kind == ':')
		sbx_buf_printf(b, "[Omitted long line with %zu matches]", matches_in_line(s, ls, le));
	else
		sbx_buf_puts(b, "[Omitted long context line]");
	sbx_buf_puts(b, "\n");
	s->res->lines++;
	if (s->res->cut != SBX_GREP_CUT_NONE)
		s->done = true;   /* counting the long line's matches ran into a limit */
}

/* Prints the after-context owed to the last match, up to (not including) line `before_no`. */
static void print_after(scan *s, size_t before_no)
{
	while (s->after_left && s->last_no + 1 < before_no && !past_last_line(s, s->last_end)) {
		size_t le = line_end(s, s->last_end);
		print_line(s, '-', ++s->last_no, s->last_end, le);
		s->last_end = le < s->len ? le + 1 : le;
		s->after_left--;
	}
}

static size_t prev_line_start(const scan *s, size_t ls)
{
	const char *nl = ls > 1 ? memrchr(s->d, '\n', ls - 1) : NULL;

	return nl ? (size_t)(nl - s->d) + 1 : 0;
}

static void print_match(scan *s, size_t no, size_t ls, size_t le)
{
	size_t first = no > s->o->before ? no - s->o->before : 1, start = ls;

	print_after(s, no);
	if (first <= s->last_no)
		first = s->last_no + 1;
	if (s->last_no && first > s->last_no + 1 && (s->o->before || s->o->after)) {
		sbx_buf_puts(&s->res->out, "--\n");
		s->res->lines++;
	}
	for (size_t i = first; i < no; i++)
		start = prev_line_start(s, start);
	for (size_t i = first; i < no; i++) {
		size_t e = line_end(s, start);
		print_line(s, '-', i, start, e);
		start = e + 1;
	}
	print_line(s, ':', no, ls, le);
	s->last_no = no;
	s->last_end = le < s->len ? le + 1 : le;
	s->after_left = s->o->after;
}

/* Has the file printed all a page could show of it? */
static bool over_budget(const scan *s)
{
	const sbx_grep_limits *lim = s->lim;

	return (lim->max_lines && s->res->lines >= lim->max_lines) ||
	       (lim->max_bytes && s->res->out.len > lim->max_bytes);
}

/* The line starting at ls (number no, ending at le) matches. */
static void report_line(scan *s, size_t no, size_t ls, size_t le)
{
	s->res->matched++;
	if (s->o->mode == SBX_GREP_FILES) {
		s->done = true;
	} else if (s->o->mode == SBX_GREP_CONTENT) {
		print_match(s, no, ls, le);
		if (!s->done && over_budget(s)) {
			s->done = true;
			s->res->cut = SBX_GREP_CUT_BUDGET;
			s->cut_at = le;
		}
	}
}

/* Without multiline: each match names one line; a match that runs past its line's end is
 * only a hint, confirmed by matching the line alone. */
static int scan_lines(scan *s)
{
	size_t pos = 0, ms, me;
	int rc;

	while (!s->done && pos <= s->len && !past_last_line(s, pos)) {
		rc = run_match(s, s->d, s->len, pos, &ms, &me);
		if (rc <= 0)
			return rc;
		if (past_last_line(s, ms))
			return 0;
		size_t ls = seek_line(s, ms), le = line_end(s, ms);
		if (me > le) {
			rc = run_match(s, s->d + ls, le - ls, 0, &ms, &me);
			if (rc < 0)
				return rc;
		}
		if (rc > 0)
			report_line(s, s->cur_no, ls, le);
		pos = le + 1;
	}
	return 0;
}

/* With multiline: every line from the match's start to its end matches (once). */
static int scan_multiline(scan *s)
{
	size_t pos = 0, ms, me, reported_no = 0;
	int rc;

	while (!s->done && pos <= s->len) {
		rc = run_match(s, s->d, s->len, pos, &ms, &me);
		if (rc <= 0)
			return rc;
		if (past_last_line(s, ms))
			return 0;
		size_t last = me > ms ? me - 1 : ms;
		for (size_t at = ms; !s->done && at <= last && !past_last_line(s, at);) {
			size_t ls = seek_line(s, at), le = line_end(s, at);
			if (s->cur_no > reported_no) {
				report_line(s, s->cur_no, ls, le);
				reported_no = s->cur_no;
			}
			at = le + 1;
		}
		pos = me > ms ? me : ms + 1;
		while (pos < s->len && ((unsigned char)s->d[pos] & 0xC0) == 0x80)
			pos++;   /* an empty match moves on by a whole character */
	}
	return 0;
}

const char *sbx_grep_cut_reason(sbx_grep_cut cut)
{
	switch (cut) {
	case SBX_GREP_CUT_DEADLINE: return "the search's deadline passed";
	case SBX_GREP_CUT_SLOW: return "the pattern used up the time one file may take";
	case SBX_GREP_CUT_ENGINE: return "the pattern needs too much backtracking";
	case SBX_GREP_CUT_BUDGET: return "the file printed more than one result page holds";
	case SBX_GREP_CUT_STOPPED: return "the page was full";
	case SBX_GREP_CUT_NONE: return "not cut";
	default: return "?";
	}
}

int sbx_grep_buffer(sbx_grep_matcher *m, const char *data, size_t len, const char *shown,
                    const sbx_grep_limits *lim, sbx_grep_result *res)
{
	static const sbx_grep_limits none = { 0 };
	const sbx_grep_opts *o = &m->re->opts;
	scan s = { .m = m, .o = o, .lim = lim ? lim : &none, .d = data, .len = len,
	           .shown = shown, .shown_len = strlen(shown), .res = res, .cur_no = 1,
	           .slice = SLICE_START };
	int rc;

	s.cpu_check_ns = CPU_WATCH_AFTER_NS;
	rc = o->multiline ? scan_multiline(&s) : scan_lines(&s);
	if (rc < 0 && res->cut == SBX_GREP_CUT_NONE)
		res->cut = SBX_GREP_CUT_ENGINE;
	if (res->cut != SBX_GREP_CUT_NONE) {
		if (s.cut_at >= s.cur)
			seek_line(&s, s.cut_at < len ? s.cut_at : len);
		res->cut_line = s.cur_no;
	}
	if (o->mode == SBX_GREP_CONTENT && res->cut == SBX_GREP_CUT_NONE)
		print_after(&s, SIZE_MAX);
	else if (o->mode == SBX_GREP_FILES && res->matched)
		sbx_buf_printf(&res->out, "%s\n", shown);
	else if (o->mode == SBX_GREP_COUNT && res->matched)
		sbx_buf_printf(&res->out, "%s:%zu\n", shown, res->matched);
	if (o->mode != SBX_GREP_CONTENT && res->matched)
		res->lines++;
	return res->out.oom ? sbx_fail(-SBX_ENOMEM, "out of memory") : 0;
}
