/* The host process behind a helper's control socket. */
#ifndef SBX_HELPERS_PEER_H
#define SBX_HELPERS_PEER_H

#include <stddef.h>

/* A pidfd of the process that made the socket sock (SO_PEERCRED), or -1. A helper polls it
 * beside the socket: the socket closes when the host dies, unless a child the host forked
 * (without exec) still holds a copy; the pidfd tells anyway. */
int sbx_pidfd_of_peer(int sock);

/* For helpers started where the host cannot hand them a socketpair end (the docker backend
 * starts them through the Engine API): connects a SOCK_SEQPACKET Unix socket to path and
 * makes it fd target. 0 or -errno. */
int sbx_peer_connect_at(const char *path, int target);

/* Receives one message on sock carrying exactly n (1..8) fds (SCM_RIGHTS) and moves them to
 * the fds listed in targets. 0, or -EPROTO when the message has another number of fds, or
 * -errno. */
int sbx_peer_receive_fds_at(int sock, const int *targets, size_t n);

#endif
