/* The workspace manager's files in base_dir (manager_store.c), shared by every process that
 * manages the same directory:
 *   <base_dir>/.locks/<id>.lock    flock(LOCK_EX) around opening, attaching, closing, stopping
 *   <base_dir>/.locks/<id>.lease   flock held while a process has the workspace open: shared,
 *                                  or exclusive where only one process may
 *   <base_dir>/.records/<id>.json  what the workspace is and how it was opened; its mtime is
 *                                  the last use any process saw
 *   <base_dir>/.journal/           the temporary names of records being written
 *                                  (util/journal.h)
 *   <base_dir>/<user key>/<name>/  the workspace's files (host-file backends)
 * Every directory is 0700 and opened without following symlinks. */
#ifndef SBX_MANAGER_STORE_H
#define SBX_MANAGER_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include "manager_ids.h"
#include "util/json.h"

struct sbx_store {
	char *base_dir;      /* absolute, resolved */
	int base_fd, locks_fd, records_fd;
	struct sbx_journal *journal;
};

int sbx_store_open(const char *base_dir, struct sbx_store *st);
void sbx_store_close(struct sbx_store *st);

/* Creates <base_dir>/<user key>/<name> if missing and returns its path (caller frees). */
int sbx_store_workdir(struct sbx_store *st, const struct sbx_managed_id *mid, char **path);

/* The workspace's lock, blocking (wait) or not (-SBX_EBUSY when taken). Release: close(fd). */
int sbx_store_lock(struct sbx_store *st, const char *id, bool wait, int *fd);
/* Takes the lease: shared, or exclusive. -SBX_EBUSY when another process holds it so that
 * we cannot. Release: close(fd). */
int sbx_store_lease(struct sbx_store *st, const char *id, bool exclusive, int *fd);
/* Does no process hold the lease? */
bool sbx_store_lease_free(struct sbx_store *st, const char *id);

int sbx_store_write_record(struct sbx_store *st, const char *id, const char *json);
/* -SBX_ENOENT when there is none. */
int sbx_store_read_record(struct sbx_store *st, const char *id, sbx_json **out);
/* Marks the workspace used now (the record's mtime). */
void sbx_store_stamp(struct sbx_store *st, const char *id);
/* Milliseconds since the last use any process recorded, or -1 without a record. */
int64_t sbx_store_idle_ms(struct sbx_store *st, const char *id);
/* The ids that have records (a NULL-terminated vector; sbx_strv_free). */
int sbx_store_list(struct sbx_store *st, char ***ids);

#endif
