/* Which files Grep searches: its `glob` argument (rg's --glob) and its `type` argument (rg's
 * --type, from a fixed table).
 *
 * `glob` is split on whitespace, then each piece on commas unless it holds braces. A piece
 * starting with '!' excludes what it matches, files and directories alike; the others form a
 * list of which a file must match one. A piece with a '/' (other than a trailing one) is
 * matched against the path below the search directory, one without against the name alone,
 * at any depth, as in .gitignore files; a trailing '/' limits it to directories. As in rg,
 * a file a positive glob names is searched even when a .gitignore excludes it. */
#ifndef SBX_TOOLS_GREP_FILTER_H
#define SBX_TOOLS_GREP_FILTER_H

#include <stdbool.h>
#include <stddef.h>

typedef struct sbx_grep_filter sbx_grep_filter;

/* Builds the filter from the `glob` and `type` arguments (either may be NULL). A bad glob or
 * an unknown type fails with -SBX_EINVAL and a message for the model (sbx_last_error()). */
int sbx_grep_filter_new(const char *globs, const char *type, sbx_grep_filter **out);
void sbx_grep_filter_free(sbx_grep_filter *f);

/* May the walk enter the directory sub (its path below the search directory) named name? */
bool sbx_grep_filter_dir(const sbx_grep_filter *f, const char *sub, size_t len,
                         const char *name);

typedef enum sbx_grep_pick {
	SBX_GREP_SKIP,      /* filtered out */
	SBX_GREP_SEARCH,    /* searched unless .gitignore excludes it */
	SBX_GREP_NAMED,     /* a positive glob matched: searched even when ignored */
} sbx_grep_pick;

sbx_grep_pick sbx_grep_filter_file(const sbx_grep_filter *f, const char *sub, size_t len,
                                   const char *name);

/* The type names Grep knows, comma-separated, for messages and the tool description. */
const char *sbx_grep_type_names(void);

#endif
