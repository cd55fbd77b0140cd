/* What journal.c and journal_read.c share (util/journal.h is the interface). */
#ifndef SBX_UTIL_JOURNAL_INT_H
#define SBX_UTIL_JOURNAL_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "journal.h"

/* Reads a small file (at most len - 1 bytes, NUL-terminated); the byte count or -errno. */
int sbx_journal_read_small(int dirfd, const char *path, char *buf, size_t len);
int sbx_journal_boot_id(char out[40]);
int sbx_journal_pidns(uint64_t *ino);
/* The start time and state letter of a process, from /proc/<pid>/stat. */
int sbx_journal_proc_start(int64_t pid, uint64_t *start, char *state);

/* The inode generation of the file open as fd, where the file system keeps one. */
bool sbx_journal_generation(int fd, uint64_t *gen);

/* The birth time (ns since the epoch) of name in dirfd, not following a link ("": dirfd
 * itself), where the file system keeps one. */
bool sbx_journal_birth(int dirfd, const char *name, uint64_t *born);

/* 2 * bytes hex digits of randomness (bytes <= 16) into out (NUL-terminated). */
void sbx_journal_random_hex(char *out, size_t bytes);
void sbx_journal_owner_json(sbx_buf *b, const struct sbx_journal_owner *o);
/* Writes the note `name` (replacing an existing one when replace); 0 or -errno. */
int sbx_journal_put_note(int dir_fd, const char *name, const sbx_buf *text, bool replace);
/* Opens the journal directory below root_fd (making it when create); 0 or -errno. */
int sbx_journal_open_dir(int root_fd, const char *journal_rel, bool create, int *out);

#endif
