/* The audit record of one connection (or refused attempt): one JSON line in the workspace's
 * audit log, appended the way the library appends its own (src/util/auditlog.h). */
#ifndef SBX_PROXY_RECORD_H
#define SBX_PROXY_RECORD_H

#include <stdint.h>

struct sbx_proxy;

struct sbx_record_info {
	const char *decision;         /* "allow" or "deny" */
	const char *rule;             /* what decided: "network.allow[0] pypi.org", "default", ... */
	const char *reason;           /* deny: the sentence the client was told */
	const char *protocol;         /* "connect", "http", "socks5", or NULL before it was known */
	const char *method;           /* "http": the request method */
	const char *host;             /* as asked (normalised), or NULL */
	uint16_t port;
	const char *address;          /* the address connected to, or NULL */
	const char *error;            /* allowed, but it failed or was cut: why */
	uint64_t bytes_up, bytes_down;
	int64_t duration_ms;
};

void sbx_record(struct sbx_proxy *px, const struct sbx_record_info *ri);

#endif
