/* One message with file descriptors attached (SCM_RIGHTS): how the library hands fds to its
 * helpers (the sandbox init, the network proxy). */
#ifndef SBX_UTIL_FDPASS_H
#define SBX_UTIL_FDPASS_H

#include <stddef.h>

/* Sends len bytes of data with nfds (1..8) fds in one sendmsg, without SIGPIPE, retrying on
 * EINTR. Returns 0 when all of data went, else -errno (-EIO for a short write). */
int sbx_send_with_fds(int sock, const void *data, size_t len, const int *fds, size_t nfds);

/* Receives one message of exactly len bytes and up to maxfds (at most 8) fds, close-on-exec,
 * into fds (*nfds of them). Returns 0; -EPIPE when the peer closed, -EPROTO for a message
 * of another size (its fds closed), or -errno. */
int sbx_recv_with_fds(int sock, void *data, size_t len, int *fds, size_t maxfds, size_t *nfds);

/* Receives one message (of at most 64 bytes, which are dropped) carrying exactly n (1..8)
 * fds. 0; -EPIPE when the peer closed, -EPROTO for another number of fds (those closed). */
int sbx_recv_fds(int sock, int *fds, size_t n);

#endif
