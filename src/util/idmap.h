/* The users a sandbox runs as, host side (docs/security.md, "Users: never host root inside").
 *
 * A caller that is not root maps its own uid and gid into the sandbox: nothing here applies.
 * As root, the sandbox's ids 0..count-1 are an unprivileged host range instead — the
 * subordinate range of a user in /etc/subuid and /etc/subgid, or a fixed range — so a process
 * inside is uid 0 to itself and nobody on the host. Its workdir (and every other host directory
 * it may write) reaches it through an idmapped mount: a detached clone of the directory whose
 * ids are shifted by the same map, so that what the sandbox's root writes is owned by the
 * host's root and what root owns is the sandbox's. Only CAP_SYS_ADMIN in the host's user
 * namespace may make such a mount, so the library makes it and hands the fd over.
 *
 * The user namespace an idmapped mount takes its map from is a throw-away one with the same
 * map, made once per process and map, and kept (an fd is all a mount needs). */
#ifndef SBX_UTIL_IDMAP_H
#define SBX_UTIL_IDMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Whose /etc/subuid and /etc/subgid entries are used when the config names nobody. */
#define SBX_IDMAP_DEFAULT_USER "agentsbx"
/* Without such entries: 65536 ids from 0x70000000, above the ranges useradd hands out
 * (from 100000, 65536 each), above systemd-nspawn's container ranges (which end below
 * 0x70000000) and below 2^31 (where tools that treat ids as signed go wrong). */
#define SBX_IDMAP_FIXED_START 1879048192u
#define SBX_IDMAP_MAX_COUNT 65536u

struct sbx_idmap {
	bool on;                  /* the caller is root: the sandbox's ids are the range below */
	uint32_t uid, gid;        /* the host uid and gid of the sandbox's 0 */
	uint32_t count;           /* how many ids are mapped, from 0 */
	char source[160];         /* where the range comes from, for doctor and messages */
};

/* For this process and the user whose subordinate ranges to use (NULL: the default): as
 * root, the first usable range of that user in both /etc/subuid and /etc/subgid (at most
 * SBX_IDMAP_MAX_COUNT ids of it), else the fixed range, refused when another user's entry
 * overlaps it; as anyone else, m->on is false. who prefixes messages; the config key named
 * in them is "<who>.subid_user". */
int sbx_idmap_resolve(const char *who, const char *user, struct sbx_idmap *m);

/* The same from the files' text (NULL: no such file) for a caller that is root: for tests. */
int sbx_idmap_resolve_text(const char *who, const char *user, const char *uid_text,
                           const char *subuid, const char *subgid, struct sbx_idmap *m);

/* A detached, recursive clone of the directory dir_fd is on, idmapped with m and nosuid,
 * nodev: what the sandbox mounts instead of the directory. 0 or a negative errno; an errno
 * for which sbx_idmap_unsupported says true means the file system (or kernel) cannot. */
int sbx_idmap_tree(const struct sbx_idmap *m, int dir_fd, int *out);
/* A detached, recursive clone of rel beneath dir_fd without any idmap (the host's view). */
int sbx_idmap_plain_tree(int dir_fd, const char *rel, int *out);
/* Makes a detached mount of a file system the sandbox mounted itself (its capped workspace,
 * owned by its user namespace) show the sandbox's root as the host's root and take the
 * host's root's writes as the sandbox's root's: the host's view of its files. */
int sbx_idmap_host_view(int tree_fd);

/* Whether err (negative) from the calls above says "no idmapped mounts here" rather than a
 * fault of ours. */
bool sbx_idmap_unsupported(int err);
/* "ramfs: mount_setattr: Invalid argument" for the directory fd and the error. */
void sbx_idmap_why(int dir_fd, int err, char *out, size_t len);

/* Can this kernel idmap a tmpfs (6.3+), which a capped workspace needs as root? Probed once;
 * *why says why not. */
bool sbx_idmap_tmpfs_ok(char *why, size_t len);

/* One line for `agentsbx doctor`: the mapping a sandbox started by this process gets, and
 * whether dir (NULL: none) can be given through an idmapped mount. Returns false when a
 * sandbox on dir would be refused as the config stands (allow_host_root false). */
bool sbx_idmap_describe(const char *user, const char *dir, bool allow_host_root, char *out,
                        size_t len);

#endif
