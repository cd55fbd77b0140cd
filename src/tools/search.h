/* The directory walk under Glob and Grep: over the host-visible root fd, one directory fd per
 * level (openat + fdopendir, never a host path string), entries in name order, symlinks never
 * followed (a symlinked file or directory is neither listed nor entered), special files left
 * out, the version-control folders rg's callers exclude (.git .svn .hg .bzr .jj .sl) and the
 * library's state folder at the workspace root skipped, optionally .gitignore files applied
 * (ignored directories are not entered; ignored files are reported as such).
 *
 * Paths handed to callbacks are root-relative ("src/a.c"), with the part below the walk's base
 * directory beside them. */
#ifndef SBX_TOOLS_SEARCH_H
#define SBX_TOOLS_SEARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/gitignore.h"

#define SBX_WALK_MAX_DEPTH 256

typedef struct sbx_walk_entry {
	const char *rel;    /* root-relative path */
	size_t rel_len;
	const char *sub;    /* the same path relative to the walk's base */
	size_t sub_len;
	const char *name;   /* the last component */
	int dirfd;          /* the directory holding it; valid during the callback only */
	bool is_dir;
	bool ignored;       /* a file the .gitignore rules exclude (the callback decides) */
} sbx_walk_entry;

typedef struct sbx_walk {
	int root_fd;          /* O_PATH fd of the workspace root */
	const char *base;     /* root-relative directory to walk ("" = the root) */
	bool gitignore;       /* apply the .gitignore files of the base, its ancestors up to the
	                         root and the directories below */
	int64_t deadline_ms;  /* sbx_now_ms() value after which the walk stops; 0 = none */
	/* May the walk enter this directory (NULL: yes)? Called after the ignore rules. */
	bool (*want_dir)(void *ud, const sbx_walk_entry *e);
	/* A regular file (by its directory entry). Returns 0 to go on, 1 to end the walk,
	 * negative to fail it. */
	int (*on_file)(void *ud, const sbx_walk_entry *e);
	/* The process is out of file descriptors (EMFILE, ENFILE) where the walk needs one: may
	 * the caller close some of its own (true: the walk tries once more)? NULL: it cannot. */
	bool (*relieve_fds)(void *ud);
	void *ud;

	/* Filled by the walk. */
	bool timed_out;
	size_t dirs_unreadable;   /* directories that could not be opened or listed */
	size_t dirs_too_deep;     /* directories below SBX_WALK_MAX_DEPTH, not entered, and
	                             entries whose path passes PATH_MAX, left out */
	int fd_exhausted;         /* EMFILE or ENFILE that a retry did not cure: the walk
	                             stopped there (0 = it did not) */
} sbx_walk;

/* Is err one of the errnos of a process or host out of file descriptors? */
bool sbx_walk_fds_exhausted(int err);

/* Walks w->base, which must be a directory (not a symlink). Returns 0 (also when on_file
 * ended the walk, the deadline passed or file descriptors ran out: see timed_out and
 * fd_exhausted), -SBX_ENOENT / -SBX_ENOTDIR / -SBX_EESCAPE ... when the base cannot be
 * opened as a directory, or a callback's negative code. A directory that cannot be read
 * is counted in dirs_unreadable: a caller must not call such a walk complete. */
int sbx_walk_run(sbx_walk *w);

/* Is name one of the folders every walk skips (.git and the like)? */
bool sbx_walk_skipped_name(const char *name);

#endif
