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

typedef struct sbx_grep_result {
	sbx_buf out;        /* the file's output lines, each ending in '\n' */
	size_t lines;       /* lines in out */
	size_t matched;     /* matching lines (files mode: 1 once one is found) */
	bool engine_error;  /* the regex engine gave up on this file (backtracking limit) */
} sbx_grep_result;

/* Compiles pattern (JIT where available). An invalid pattern fails with -SBX_EINVAL and the
 * message "invalid regex: <PCRE2's words> at offset N" (sbx_last_error()). */
int sbx_grep_regex_compile(const char *pattern, size_t len, const sbx_grep_opts *opts,
                           sbx_grep_regex **out);
void sbx_grep_regex_free(sbx_grep_regex *re);

/* What one thread needs to run re: match data and a JIT stack. */
int sbx_grep_matcher_new(const sbx_grep_regex *re, sbx_grep_matcher **out);
void sbx_grep_matcher_free(sbx_grep_matcher *m);

/* Searches data[0..len), the contents of the file shown as `shown`, and appends its output
 * to res. Returns 0 or -SBX_ENOMEM. */
int sbx_grep_buffer(sbx_grep_matcher *m, const char *data, size_t len, const char *shown,
                    sbx_grep_result *res);

#endif
