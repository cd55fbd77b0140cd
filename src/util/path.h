/* Paths inside the workspace: turning what a caller wrote into a root-relative path, and
 * opening it on the host without leaving the root (openat2 RESOLVE_BENEATH, or a careful
 * component walk where the kernel lacks openat2). */
#ifndef SBX_UTIL_PATH_H
#define SBX_UTIL_PATH_H

#include <stdbool.h>
#include <sys/types.h>

/* Turns `path` into a path relative to the root. `root_view` is the absolute root as commands
 * see it; an absolute `path` must be root_view or lie under it. Refuses non-UTF-8, over-long
 * and escaping absolute paths, naming `what` (e.g. "path") in the message. "" means the root.
 * The result keeps ".." components: resolution decides where they lead. Caller frees *rel. */
int sbx_path_relative(const char *root_view, const char *path, const char *what, char **rel);
/* The same, also taking an absolute path under host_view (the host's name of the same
 * directory; NULL: none): a workspace's files have two names. Outside both: -SBX_EESCAPE,
 * naming both. */
int sbx_path_relative_in(const char *root_view, const char *host_view, const char *path,
                         const char *what, char **rel);

/* What follows dir in path when path is strictly below dir ("/a/b/c" below "/a" or "/a/":
 * "b/c"), else NULL (so also for dir "/"). Text only: both are absolute, normalized paths. */
const char *sbx_path_below(const char *path, const char *dir);

/* Lexical normalisation for backends whose files are not on the host: drops "" and "."
 * components, applies "..", and refuses to climb above the root (-SBX_EESCAPE). */
int sbx_path_normalize(const char *rel, const char *what, char **out);

/* Opens rel (root-relative) beneath the directory fd `rootfd` with open(2) flags and mode.
 * No step may leave the root: "..", absolute symlinks, symlinks pointing outside and /proc
 * magic links fail with -SBX_EESCAPE. With O_NOFOLLOW a final symlink is not followed (open it
 * with O_PATH|O_NOFOLLOW to get the link itself). Returns the fd or a negative code (errno
 * then holds the failing system call's errno, which tells EMFILE from other I/O errors). */
int sbx_path_open(int rootfd, const char *rel, int flags, mode_t mode);

/* Opens the directory containing rel's last component (creating missing directories with
 * mode 0755 when mkdirs) and returns it in *dirfd with the last component in *name (caller
 * frees). Refuses rel == "" (the root has no parent inside the root) and a last component of
 * "." or "..". */
int sbx_path_open_parent(int rootfd, const char *rel, bool mkdirs, int *dirfd, char **name);

/* Testing hook: true forces the component-walk fallback even where openat2 works. */
void sbx_path_force_fallback(bool on);

#endif
