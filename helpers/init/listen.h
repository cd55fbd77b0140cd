/* The clients of the exec server (listen.c): the channel the host started the init with and,
 * for a detached sandbox, the connections accepted on its Unix socket. */
#ifndef SBX_INIT_LISTEN_H
#define SBX_INIT_LISTEN_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>

#define SBX_INIT_MAX_CLIENTS 64

struct sbx_init_peers {
	int ctl;                               /* the starting channel, -1 once closed */
	int listener;                          /* the detached sandbox's socket, or -1 */
	int clients[SBX_INIT_MAX_CLIENTS];     /* accepted connections */
	size_t n_clients;
};

void sbx_init_peers_init(struct sbx_init_peers *p, int ctl);
/* Is anyone still able to reach the server (the channel open, or a listening socket)? */
bool sbx_init_peers_alive(const struct sbx_init_peers *p);
/* Fills fds with the channel and the clients, then the listener last; returns how many. At
 * most SBX_INIT_MAX_CLIENTS + 2. */
size_t sbx_init_peers_pollfds(const struct sbx_init_peers *p, struct pollfd *fds);
/* Starts listening on a bound socket the host sent (takes fd). One listener per sandbox. */
void sbx_init_peers_listen(struct sbx_init_peers *p, int fd);
/* Accepts one waiting connection: only from outside the sandbox, as our own uid. */
void sbx_init_peers_accept(struct sbx_init_peers *p);
/* Forgets and closes a channel or a client that hung up. */
void sbx_init_peers_drop(struct sbx_init_peers *p, int fd);

/* One more uid whose processes outside the sandbox may connect: the host user of a docker
 * workspace, whose container runs the server as another user (spec key "host_uid"). */
void sbx_init_peers_allow_uid(unsigned uid);

/* The READY message main.c sent, which every accepted client receives first. */
void sbx_init_set_greeting(const void *msg, size_t len);

#endif
