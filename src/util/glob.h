/* Glob patterns over '/'-separated relative paths, compiled once and matched many times: the
 * Glob tool's pattern, Grep's glob filter and .gitignore rules all use them.
 *
 * Syntax:
 *   *        any run of characters within one path component (dotfiles included)
 *   ?        one character (a UTF-8 sequence) other than '/'
 *   [...]    one character from a class: ranges "a-z", negation with a leading '!' or '^',
 *            a leading ']' is literal, POSIX names "[:alpha:]"; never matches '/'
 *   **       as a whole component: zero or more components; as the last component: one or
 *            more (everything below the directory before it, not the directory itself);
 *            anywhere else the same as '*'
 *   {a,b}    alternatives, nested allowed, "{a}" is one alternative; not with SBX_GLOB_NO_BRACES
 *   \c       c literally
 * A pattern is matched against a whole relative path ("src/a.c", no leading or trailing '/');
 * "." components and repeated slashes in the pattern are dropped. */
#ifndef SBX_UTIL_GLOB_H
#define SBX_UTIL_GLOB_H

#include <stdbool.h>
#include <stddef.h>

#define SBX_GLOB_MAX_PATTERN 4096   /* bytes */
#define SBX_GLOB_MAX_ALTERNATIVES 256   /* after brace expansion */

/* Compile flags. */
#define SBX_GLOB_NO_BRACES 0x1u   /* '{', ',' and '}' are ordinary characters (gitignore) */

typedef struct sbx_glob sbx_glob;

/* Compiles pattern. A bad pattern (unclosed '[' or '{', a trailing backslash, a reversed
 * range, too long, too many alternatives) fails with -SBX_EINVAL and a message saying what is
 * wrong and where (sbx_last_error()). */
int sbx_glob_compile(const char *pattern, unsigned flags, sbx_glob **out);
void sbx_glob_free(sbx_glob *g);

/* Does the relative path path[0..len) match? */
bool sbx_glob_match(const sbx_glob *g, const char *path, size_t len);

/* Could a path below the directory dir[0..len) ("" = the base) match? False only when none
 * can, so a walker may skip the directory. */
bool sbx_glob_may_match_below(const sbx_glob *g, const char *dir, size_t len);

#endif
