/* The keeper (agentsbx-keeper, keeper.c): a per-user process that keeps one parked spare
 * (spare.h) for processes that have none of their own -- above all the one-shot CLI, which
 * is a new process for every command and so never finds one in its own slot.
 *
 * Trust: the keeper listens on a SOCK_SEQPACKET socket in the user's private runtime folder
 * (util/hostlock.h, sbx_runtime_dir: the euid's, mode 0700), serves only peers of its own
 * uid, and a client accepts only a keeper of its own euid. A spare inherits more than its
 * spec from the process that started it (the keeper, and through it the first CLI): its
 * namespaces, cgroup, rlimits, umask, nice, capabilities, seccomp filters, CPU affinity and
 * the build of the helpers. All that is the caller's "context" (sbx_keeper_context); the
 * socket is named after its hash, and a take carries it in full, so that a caller is only
 * ever served by a keeper started from a process exactly like itself. What the spawn resets
 * (signal mask and dispositions, fds) or the spec gives (env, cwd, ids inside) is not part
 * of it; the keeper clears its environment and leaves the caller's folder.
 *
 * Protocol: one request per connection, sbx_keeper_request then the context, a NUL and the
 * shape; one reply, sbx_keeper_reply, with the spare's ctl, err_fd and outer pidfd when
 * kind is SBX_KEEPER_SPARE. The keeper keeps no copy of what it hands over. */
#ifndef SBX_BACKENDS_SANDBOX_KEEPER_H
#define SBX_BACKENDS_SANDBOX_KEEPER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backends/sandbox/spare.h"

#define SBX_KEEPER_NAME "agentsbx-keeper"
#define SBX_KEEPER_INIT_NAME "agentsbx-init"   /* whose build is part of the context */
#define SBX_KEEPER_MAGIC 0x6b656570u   /* "keep" */
#define SBX_KEEPER_MAX_REQUEST (256 * 1024)
/* Idle this long without a take, the keeper exits with its spare (AGENTSBX_KEEPER_IDLE_MS). */
#define SBX_KEEPER_IDLE_MS 60000

enum { SBX_KEEPER_TAKE = 1 };
enum { SBX_KEEPER_NONE = 1, SBX_KEEPER_SPARE = 2 };

struct sbx_keeper_request {
	uint32_t magic;
	uint32_t kind;
	uint32_t context_len;       /* then the context, a NUL, the shape (no NUL) */
	uint32_t shape_len;
};

struct sbx_keeper_reply {
	uint32_t magic;
	uint32_t kind;
	uint32_t has_err_fd;        /* the fds: ctl, pidfd[, err_fd] */
};

/* A take's shape (malloc'd), when msg (n bytes, as received) is a well-formed take of this
 * context; else NULL. The keeper's parser of what a peer sends (keeper_proto.c). */
char *sbx_keeper_parse_take(const char *msg, size_t n, const char *context);

/* What a spare inherits from the process that starts it, as text (see above); init is the
 * init helper's path, whose build is part of it. NULL when out of memory. */
char *sbx_keeper_context(const char *init);

/* The socket's and the lock's names in the runtime folder for this context. */
void sbx_keeper_names(const char *context, char *sock, char *lock, size_t len);

/* Whether the environment lets this process use a keeper (AGENTSBX_KEEPER=0 does not). */
bool sbx_keeper_allowed(void);

/* Asks this user's keeper for a spare of shape; true with *out filled (the caller's alone
 * then). When no keeper runs, starts one (detached, building a spare of this shape at once)
 * and returns false. Never an error: any failure is a false. */
bool sbx_keeper_take(const char *init, const char *shape, struct sbx_spare *out);

/* For `agentsbx doctor`: whether a keeper runs for this process's context, where, or that
 * it is off, as a sentence in out. 0, or -1 when this host cannot have one (with why). */
int sbx_keeper_describe(char *out, size_t len);

#endif
