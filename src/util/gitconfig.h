/* A strict reader of git's config file format, and the sanitiser the git guard
 * (src/gitguard*.c) runs over every config a sandboxed command changed.
 *
 * Strict means: anything git itself would reject, and anything this reader is not sure it
 * reads exactly as git does, is an error, never a guess. An error makes the caller treat the
 * whole file as hostile (quarantine it), so a parser disagreement with git can only cost a
 * legitimate file, never let a key through unseen. Covered: [section], [section "sub"] with
 * \" and \\ escapes, the old [section.sub] form, keys with or without "= value", quoting,
 * the escapes \n \t \b \" \\, line continuations, comments (# and ;), CRLF line ends and a
 * leading UTF-8 BOM. Includes are ordinary keys here (include.path, includeIf.*.path): they
 * are not on the allow-list, so they never survive sanitising. */
#ifndef SBX_UTIL_GITCONFIG_H
#define SBX_UTIL_GITCONFIG_H

#include <stdbool.h>
#include <stddef.h>

/* One key. section and name are lowercased (git compares them case-insensitively);
 * subsection is as written (case-sensitive) or NULL; value is NULL for a bare "key" (git's
 * implicit true). All are NUL-terminated; value may hold no NUL (one is a parse error). */
typedef struct sbx_gitconfig_entry {
	const char *section;
	const char *subsection;
	const char *name;
	const char *value;
} sbx_gitconfig_entry;

/* Called once per key, in file order; a non-zero return stops the parse and is returned. */
typedef int (*sbx_gitconfig_fn)(const sbx_gitconfig_entry *e, void *userdata);

/* Parses len bytes of text. Returns 0, the callback's non-zero value, -SBX_EINVAL with a
 * sentence naming the line in err (a syntax git rejects or this reader does not take), or
 * -SBX_ENOMEM. */
int sbx_gitconfig_parse(const char *text, size_t len, sbx_gitconfig_fn fn, void *userdata,
                        char *err, size_t errlen);

/* Whether a key is on the allow-list: keys that can neither run a program nor send git
 * elsewhere for its configuration (see the list in gitconfig.c and docs/security.md).
 * core.worktree is allowed only as a relative path; the caller checks where it leads. */
bool sbx_gitconfig_key_allowed(const sbx_gitconfig_entry *e);

/* The result of sanitising one file. */
typedef struct sbx_gitconfig_clean {
	char *text;                /* the kept keys, written out afresh (malloc'd) */
	size_t len;
	size_t kept, removed;      /* keys kept and dropped */
	char first_removed[160];   /* "section.sub.name" of the first dropped key, for reports */
} sbx_gitconfig_clean;

/* Extra decision for a key that the allow-list does not settle on its own: return true to
 * keep it. The guard keeps a key the user had at open (identical section, subsection, name
 * and value) and checks where core.worktree leads. NULL: the allow-list alone decides. */
typedef bool (*sbx_gitconfig_keep_fn)(const sbx_gitconfig_entry *e, bool allowed,
                                      void *userdata);

/* Parses text and keeps only what keep (or, without it, the allow-list) accepts. Returns 0
 * with out filled (out->removed == 0: nothing to change), or sbx_gitconfig_parse's error. */
int sbx_gitconfig_sanitize(const char *text, size_t len, sbx_gitconfig_keep_fn keep,
                           void *userdata, sbx_gitconfig_clean *out, char *err, size_t errlen);
void sbx_gitconfig_clean_free(sbx_gitconfig_clean *c);

/* "section.sub.name" (sub omitted when NULL) into buf. */
void sbx_gitconfig_key_name(const sbx_gitconfig_entry *e, char *buf, size_t len);

#endif
