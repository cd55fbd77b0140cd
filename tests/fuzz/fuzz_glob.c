/* libFuzzer target for the glob compiler and matcher and the .gitignore parser.
 *
 * Input: a flags byte, then lines: the first is a pattern, the others are paths. The whole
 * input (less the flags byte) is also parsed as a .gitignore file and the paths matched
 * against it. Beyond "no crash, no leak, no hang", it checks:
 *  - a refused pattern gets -SBX_EINVAL and a message in the documented form;
 *  - pruning is safe: when a path matches, every directory above it may match below;
 *  - a path with every byte escaped compiles and matches itself. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <agentsbx/agentsbx.h>
#include "util/gitignore.h"
#include "util/glob.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond) do { if (!(cond)) { fprintf(stderr, "check failed: %s\n", #cond); \
	abort(); } } while (0)

#define MAX_PATHS 16

/* Is p a path as a walk produces it: non-empty components, none "." or ".."? */
static bool walk_shaped(const char *p, size_t n)
{
	size_t start = 0;

	if (!n)
		return false;
	for (size_t i = 0; i <= n; i++) {
		if (i < n && p[i] != '/')
			continue;
		size_t len = i - start;
		if (len == 0 || (len == 1 && p[start] == '.') ||
		    (len == 2 && p[start] == '.' && p[start + 1] == '.'))
			return false;
		start = i + 1;
	}
	return true;
}

static void check_pruning(const sbx_glob *g, const char *path, size_t n)
{
	if (!walk_shaped(path, n) || !sbx_glob_match(g, path, n))
		return;
	CHECK(sbx_glob_may_match_below(g, "", 0));
	for (size_t i = 0; i < n; i++)
		if (path[i] == '/')
			CHECK(sbx_glob_may_match_below(g, path, i));
}

static void check_escaped_self_match(const char *path, size_t n)
{
	char *pat;
	size_t k = 0;
	sbx_glob *g = NULL;

	if (!walk_shaped(path, n) || n > SBX_GLOB_MAX_PATTERN / 2)
		return;
	pat = malloc(2 * n + 1);
	CHECK(pat != NULL);
	for (size_t i = 0; i < n; i++) {
		if (path[i] != '/')
			pat[k++] = '\\';
		pat[k++] = path[i];
	}
	pat[k] = '\0';
	CHECK(sbx_glob_compile(pat, 0, &g) == 0);
	CHECK(sbx_glob_match(g, path, n));
	sbx_glob_free(g);
	free(pat);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *lines[MAX_PATHS + 1];
	size_t lens[MAX_PATHS + 1], nlines = 0;
	char *text;
	sbx_glob *g = NULL;
	sbx_gitignore *gi = NULL;
	unsigned flags;
	int r;

	if (size < 1)
		return 0;
	flags = data[0] & 1 ? SBX_GLOB_NO_BRACES : 0;
	text = malloc(size);
	CHECK(text != NULL);
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';   /* patterns and paths are C strings */

	for (char *p = text; nlines <= MAX_PATHS;) {
		char *nl = strchr(p, '\n');
		lines[nlines] = p;
		lens[nlines++] = nl ? (size_t)(nl - p) : strlen(p);
		if (!nl)
			break;
		*nl = '\0';
		p = nl + 1;
	}

	r = sbx_glob_compile(lines[0], flags, &g);
	if (r < 0) {
		CHECK(g == NULL);
		CHECK(r == -SBX_EINVAL || r == -SBX_ENOMEM);
		if (r == -SBX_EINVAL)
			CHECK(strncmp(sbx_last_error(), "invalid glob pattern", 20) == 0);
	}
	for (size_t i = 1; i < nlines; i++) {
		if (g) {
			sbx_glob_match(g, lines[i], lens[i]);
			sbx_glob_may_match_below(g, lines[i], lens[i]);
			check_pruning(g, lines[i], lens[i]);
		}
		check_escaped_self_match(lines[i], lens[i]);
	}
	sbx_glob_free(g);

	/* The same bytes as a .gitignore (newlines restored). */
	for (size_t i = 0; i + 1 < nlines; i++)
		text[lines[i] - text + lens[i]] = '\n';
	r = sbx_gitignore_parse(text, strlen(text), &gi);
	CHECK(r == 0 || r == -SBX_ENOMEM);
	for (size_t i = 1; i < nlines; i++) {
		size_t n = strcspn(lines[i], "\n");
		sbx_gitignore_match(gi, lines[i], n, false);
		sbx_gitignore_match(gi, lines[i], n, true);
	}
	sbx_gitignore_free(gi);
	free(text);
	return 0;
}
