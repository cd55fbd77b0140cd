/* Secrets of this host user's that no workspace can read or forge, for records the library
 * keeps inside a workspace and must be able to tell from a copy someone else made.
 *
 * A workspace's state folder is protected from the workspace's commands, but not from what
 * the workdir held before the first open: a cloned repository or an unpacked archive can
 * bring a .agentsbx of its own, with a record that says whatever its author wants. So such
 * records carry an HMAC under a key only this user's host processes have.
 *
 * The key lives in $XDG_STATE_HOME/agentsbx (by default ~/.local/state/agentsbx of the
 * user's home in the password database), a 0700 folder of this user's that no sandbox is
 * given; one file per purpose, <purpose>.key, 32 random bytes, made once (atomically: two
 * processes that race agree on the first). Where that folder cannot be used (no home, a
 * read-only one) the key goes into the host-lock folder (util/hostlock.h), which lasts until
 * the next boot: records made with it are then trusted until then. */
#ifndef SBX_UTIL_HOSTKEY_H
#define SBX_UTIL_HOSTKEY_H

#include <stddef.h>

#define SBX_HOSTKEY_LEN 32

/* The key for purpose ([a-z], a few letters) into key. 0, or a negative code with a message
 * saying where it could not be kept. */
int sbx_hostkey_get(const char *purpose, unsigned char key[SBX_HOSTKEY_LEN]);

#endif
