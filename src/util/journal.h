/* What the library makes in a workspace that must not outlive its maker, noted before it
 * appears so that a later open can take it away when the maker died first:
 *  - the empty placeholders of protected paths, which must stay exactly as long as the
 *    sandbox that binds them read-only runs;
 *  - the temporary names of atomic writes (util/fs.h), for the moment between giving the new
 *    file a name and renaming it over the old one.
 * The journal is a private directory (.agentsbx/journal of a workspace, .journal of a
 * manager's base_dir), one small JSON file per note, written before the thing it lists gets
 * its name and removed once it is gone. A note names who made the thing (boot, PID namespace,
 * pid and start time: an identity no reused pid can take) and, for every item, where it is
 * (a directory relative to the root, opened beneath it, never through a link), its names and
 * the device, inode and inode generation it got (the generation tells a reused inode number
 * apart, where the file system keeps one; the birth time does so for a socket, which cannot be
 * opened to ask for a generation). A sweep removes an item only when its maker has provably
 * ended and the entry there still is what was noted: the same inode (a placeholder: still
 * empty), or, where the inode was not known yet, an empty entry under the random name that
 * was noted before it was created. It reads only the journal, never walks the tree. */
#ifndef SBX_UTIL_JOURNAL_H
#define SBX_UTIL_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "fs.h"

#define SBX_JOURNAL_WORKSPACE ".agentsbx/journal"
#define SBX_JOURNAL_STORE ".journal"
#define SBX_JOURNAL_RECORD_MAX (64u << 10)

/* Who made something: a process, as the kernel knows it. */
struct sbx_journal_owner {
	char boot[40];            /* /proc/sys/kernel/random/boot_id */
	uint64_t pidns;           /* inode of /proc/self/ns/pid */
	int64_t pid;              /* in that PID namespace */
	uint64_t start;           /* start time in clock ticks after boot (/proc/pid/stat) */
};

/* This process (computed once per process, again after a fork). */
int sbx_journal_self(struct sbx_journal_owner *o);
/* Does the owner still run? A process of another PID namespace cannot be looked at from
 * here: true (it is left alone). A zombie has ended. */
bool sbx_journal_owner_alive(const struct sbx_journal_owner *o);

/* A note as read back (sbx_journal_parse): what the sweep acts on. */
enum sbx_journal_kind { SBX_NOTE_TEMP, SBX_NOTE_PLACEHOLDERS };

struct sbx_journal_item {
	char *at;                 /* the directory, relative to the root ("" for the root) */
	char *name;               /* a placeholder's name, NULL for a temporary file */
	char *tmp;                /* the temporary name it had (a placeholder before its rename) */
	bool dir;                 /* a placeholder directory */
	bool sock;                /* a placeholder socket (never with dir) */
	uint64_t dev, ino;        /* 0, 0 until known */
	bool has_gen;             /* the file system told its inode generation (FS_IOC_GETVERSION) */
	uint64_t gen;
	bool has_born;            /* the file system told its birth time (statx STATX_BTIME) */
	uint64_t born;            /* in ns since the epoch */
};

struct sbx_journal_note {
	enum sbx_journal_kind kind;
	struct sbx_journal_owner owner;
	bool detached;            /* placeholders of a detached sandbox: they outlive the owner */
	struct sbx_journal_item *items;
	size_t n_items;
};

/* Parses a note's text. -SBX_EINVAL (with the reason) for anything that is not one: every
 * field checked, names without '/' or NUL, directories relative without "..". */
int sbx_journal_parse(const char *text, size_t len, struct sbx_journal_note *out);
void sbx_journal_note_free(struct sbx_journal_note *n);

/* A journal below the directory root_fd (dup'ed): journal_rel is SBX_JOURNAL_WORKSPACE or
 * SBX_JOURNAL_STORE. Created (0700) when missing; its parent must exist. */
typedef struct sbx_journal sbx_journal;
int sbx_journal_open(int root_fd, const char *journal_rel, sbx_journal **out);
void sbx_journal_free(sbx_journal *j);

/* The hooks by which atomic writes (sbx_fs_write_atomic_noted) note their temporary names
 * in this journal; NULL for a NULL journal. Valid while j is. */
const struct sbx_fs_temp_notes *sbx_journal_temp_notes(sbx_journal *j);

/* What a placeholder is made as. */
enum sbx_placeholder_kind {
	SBX_PLACEHOLDER_FILE,     /* an empty read-only file (0444) */
	SBX_PLACEHOLDER_DIR,      /* an empty directory (0755) */
	/* A socket inode (0444): no data block to allocate or discard, so it is the cheapest
	 * entry to make and remove; git and host tools skip it (git status does not list it,
	 * open() fails at once with ENXIO). Made as a directory instead where the file system
	 * tells no birth time: without it a socket's inode could not be told from a later one
	 * that got the same number. */
	SBX_PLACEHOLDER_SOCKET,
};

/* The placeholders of one sandbox start. For each of paths (relative to the root; kinds[i]:
 * what to make) that is missing while its parent exists, an empty entry of that kind is made
 * and given its name without replacing anything: a file as an unnamed file (O_TMPFILE),
 * noted with its inode, then linked; a directory or a socket (or a file where there are no
 * unnamed files) under a random temporary name that is noted before it exists, noted again
 * with its inode, then renamed. None missing: no note (*record NULL). *record is the note's
 * name in the journal (caller frees), for sbx_journal_undo. Best effort: what cannot be made
 * is left to the sandbox (which then cannot make it either, or makes it itself). */
int sbx_journal_make_placeholders(sbx_journal *j, const char *const *paths,
                                  const enum sbx_placeholder_kind *kinds, bool detached,
                                  char **record);

/* Removes what the note `record` lists (still the noted inode, still empty; never a socket
 * the note does not call one) and the note.
 * Whoever made it calls this when its sandbox has ended: the library at close, the sandbox's
 * tidier (helpers/init/tidy.c) when it ends otherwise. */
void sbx_journal_undo(int root_fd, const char *journal_rel, const char *record);

/* sbx_journal_sweep: which notes. */
#define SBX_SWEEP_ENDED    (1u << 0)  /* every note whose owner has ended, but placeholders of
                                         detached sandboxes (they outlive their owner) */
#define SBX_SWEEP_DETACHED (1u << 1)  /* placeholders of detached sandboxes: the caller holds
                                         the workspace's run lock and knows none runs */

/* Sweeps the journal below root_fd (absent: nothing to do). Returns how many items it
 * removed. Notes that cannot be read back are removed when older than a minute (a writer
 * killed between creating and filling one; the note lists nothing yet then). */
int sbx_journal_sweep(int root_fd, const char *journal_rel, unsigned what);

#endif
