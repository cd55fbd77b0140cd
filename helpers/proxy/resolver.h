/* Name resolution off the event loop: getaddrinfo blocks (seconds, when a DNS server is slow),
 * so a few worker threads run it and the loop learns of each answer through an eventfd. A
 * connection that gives up waiting leaves its job to finish unheard: answers are matched to
 * connections by slot and generation, never by pointer. */
#ifndef SBX_PROXY_RESOLVER_H
#define SBX_PROXY_RESOLVER_H

#include <stddef.h>
#include <stdint.h>

#include "util/netpolicy.h"

#define SBX_RESOLVE_MAX_ADDRS 8

struct sbx_resolution {
	uint32_t slot;
	uint64_t gen;
	int error;                    /* 0, or an EAI_* code */
	size_t n;
	struct sbx_netaddr addrs[SBX_RESOLVE_MAX_ADDRS];
};

struct sbx_resolver;

/* Starts nthreads workers; *event_fd polls readable when answers are waiting. */
int sbx_resolver_start(int nthreads, size_t max_pending, struct sbx_resolver **out,
                       int *event_fd);
/* Queues a lookup of name; -1 when max_pending lookups already wait. */
int sbx_resolver_submit(struct sbx_resolver *r, uint32_t slot, uint64_t gen, const char *name);
/* Takes up to max answers; returns how many. */
size_t sbx_resolver_collect(struct sbx_resolver *r, struct sbx_resolution *out, size_t max);

#endif
