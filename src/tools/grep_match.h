/* Grep's matching engine: a PCRE2 pattern run over a whole file buffer at once, with line
 * numbers worked out only around the matches, and the file's output lines written the way rg
 * prints them when given a path ("path:12:text", "path-13-context", "--" between groups,
 * "path" alone, "path:N").
 *
 * Semantics follow rg: '^' and '$' match at line boundaries; without multiline a match never
 * spans lines (one that would is re-checked against its first line alone); with multiline '.'
 * also matches newlines and every line a match touches is a matching line. "\r\n" ends a line
 * as "\n" does and the '\r' is not printed. Invalid UTF-8 is searched, not refused. Lines
 * longer than 500 bytes are printed as "[Omitted long line with N matches]" (rg's
 * --max-columns 500). */
#ifndef SBX_TOOLS_GREP_MATCH_H
#define SBX_TOOLS_GREP_MATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

#define SBX_GREP_MAX_COLUMNS 500

typedef enum sbx_grep_mode {
	SBX_GREP_FILES,     /* files_with_matches: the path of each file with a match */
	SBX_GREP_CONTENT,   /* the matching lines (and context) */
	SBX_GREP_COUNT,     /* path:number of matching lines */
} sbx_grep_mode;

typedef struct sbx_grep_opts {
	sbx_grep_mode mode;
	bool line_numbers;   /* content mode: "path:12:text" rather than "path:text" */
	bool caseless;
	bool multiline;
	size_t before, after;   /* content mode: context lines */
} sbx_grep_opts;

typedef struct sbx_grep_regex sbx_grep_regex;
typedef struct sbx_grep_matcher sbx_grep_matcher;

/* What one file's search may cost. The file's contents are hostile: a pattern that
 * backtracks on every line can cost hours per megabyte, and a file where every line matches
 * can print more than any page shows. The engine is run over the file in slices whose size
 * adapts to how long each took, and these are checked between slices, between matches and
 * between lines. */
typedef struct sbx_grep_limits {
	int64_t deadline_ms;         /* sbx_now_ms() value at which the search stops; 0 = none */
	int64_t cpu_budget_ms;       /* this thread's CPU time for the file; 0 = none */
	size_t max_lines;            /* output lines: more than the page can show (0 = none) */
	size_t max_bytes;            /* output bytes (0 = none) */
	const _Atomic bool *stop;    /* set elsewhere when nothing more is wanted (or NULL) */
} sbx_grep_limits;

/* Why a file's search ended before its end. */
typedef enum sbx_grep_cut {
	SBX_GREP_CUT_NONE,
	SBX_GREP_CUT_DEADLINE,   /* the search's deadline passed */
	SBX_GREP_CUT_SLOW,       /* the file used up its CPU budget */
	SBX_GREP_CUT_ENGINE,     /* the engine gave up (backtracking or depth limit) */
	SBX_GREP_CUT_BUDGET,     /* the output reached max_lines or max_bytes */
	SBX_GREP_CUT_STOPPED,    /* *stop was set */
} sbx_grep_cut;

typedef struct sbx_grep_result {
	sbx_buf out;        /* the file's output lines, each ending in '\n' */
	size_t lines;       /* lines in out */
	size_t matched;     /* matching lines (files mode: 1 once one is found) */
	sbx_grep_cut cut;   /* why the search of the file ended early, if it did */
	size_t cut_line;    /* the line it had reached then (1-based) */
} sbx_grep_result;

/* "the 30 s deadline passed" and the like, for messages. */
const char *sbx_grep_cut_reason(sbx_grep_cut cut);

/* Compiles pattern (JIT where available). An invalid pattern fails with -SBX_EINVAL and the
 * message "invalid regex: <PCRE2's words> at offset N" (sbx_last_error()). */
int sbx_grep_regex_compile(const char *pattern, size_t len, const sbx_grep_opts *opts,
                           sbx_grep_regex **out);
void sbx_grep_regex_free(sbx_grep_regex *re);

/* What one thread needs to run re: match data and a JIT stack. */
int sbx_grep_matcher_new(const sbx_grep_regex *re, sbx_grep_matcher **out);
void sbx_grep_matcher_free(sbx_grep_matcher *m);

/* Searches data[0..len), the contents of the file shown as `shown`, within lim (NULL: no
 * limits), and appends its output to res. Returns 0 or -SBX_ENOMEM. */
int sbx_grep_buffer(sbx_grep_matcher *m, const char *data, size_t len, const char *shown,
                    const sbx_grep_limits *lim, sbx_grep_result *res);

#endif
