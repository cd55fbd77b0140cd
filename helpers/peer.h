/* The host process behind a helper's control socket. */
#ifndef SBX_HELPERS_PEER_H
#define SBX_HELPERS_PEER_H

/* A pidfd of the process that made the socket sock (SO_PEERCRED), or -1. A helper polls it
 * beside the socket: the socket closes when the host dies, unless a child the host forked
 * (without exec) still holds a copy; the pidfd tells anyway. */
int sbx_pidfd_of_peer(int sock);

#endif
