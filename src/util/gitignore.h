/* .gitignore rules: one file's rules parsed into globs, and a stack of the files that apply
 * to a directory being walked (deeper files first, as git decides).
 *
 * Per git's documentation: blank lines and lines starting with '#' are skipped ("\#" is a
 * literal '#'); a leading '!' re-includes ("\!" is a literal '!'); unescaped trailing spaces
 * are dropped; a trailing '/' matches directories only; a pattern with a '/' at its start or
 * middle is anchored to the file's directory, one without matches a name at any depth; "**"
 * matches across directories; braces have no meaning. Lines that are not valid patterns are
 * ignored, as git ignores them. Within one file the last matching rule decides. */
#ifndef SBX_UTIL_GITIGNORE_H
#define SBX_UTIL_GITIGNORE_H

#include <stdbool.h>
#include <stddef.h>

typedef struct sbx_gitignore sbx_gitignore;

enum sbx_ignore_verdict {
	SBX_IGNORE_NONE,      /* no rule matches */
	SBX_IGNORE_EXCLUDE,   /* ignored */
	SBX_IGNORE_INCLUDE,   /* re-included by a '!' rule */
};

/* Parses the text of one .gitignore. A file without rules gives *out == NULL. Fails only for
 * out of memory. */
int sbx_gitignore_parse(const char *text, size_t len, sbx_gitignore **out);
void sbx_gitignore_free(sbx_gitignore *g);

/* The verdict of g's rules on rel (relative to g's directory, no leading '/'). */
enum sbx_ignore_verdict sbx_gitignore_match(const sbx_gitignore *g, const char *rel,
                                            size_t len, bool is_dir);

/* The rules in force during a walk. Each level holds the rules of one directory's .gitignore
 * and the length of that directory's path in the walk's paths ("src/" gives 4; 0 for the
 * directory the paths are relative to). */
typedef struct sbx_ignore_level {
	sbx_gitignore *rules;
	size_t dir_len;
} sbx_ignore_level;

typedef struct sbx_ignore_stack {
	sbx_ignore_level *v;
	size_t n, cap;
} sbx_ignore_stack;

/* Takes ownership of rules (NULL pushes nothing). Returns 0 or -SBX_ENOMEM (rules freed). */
int sbx_ignore_stack_push(sbx_ignore_stack *s, sbx_gitignore *rules, size_t dir_len);
/* Frees the levels above the first n. */
void sbx_ignore_stack_truncate(sbx_ignore_stack *s, size_t n);
void sbx_ignore_stack_free(sbx_ignore_stack *s);

/* Is path[0..len) ignored? The deepest file with a matching rule decides. */
bool sbx_ignore_stack_ignored(const sbx_ignore_stack *s, const char *path, size_t len,
                              bool is_dir);

#endif
