/* The network policy of a workspace: its mode and, in mode "allowlist", the allow and deny
 * rules that agentsbx-proxy decides every connection by. One parser and one matcher, used by
 * the library (to validate the config and sbx_workspace_set_network) and by the proxy (to
 * decide), so the two can never disagree about what a rule means.
 *
 * A rule is one string, with an optional ":port" (any port without one):
 *   example.com          that host name exactly
 *   *.example.com        its subdomains at any depth, not example.com itself
 *   192.0.2.7, 2001:db8::1, [2001:db8::1]:443     an IP literal
 *   192.0.2.0/24, 2001:db8::/32, [2001:db8::/32]:443   an address range (CIDR)
 * How a connection is decided (deny wins over allow, at each step):
 *  1. A target given as a name is matched against the name rules only; a target given as an
 *     IP literal against the address rules only. So allowing "pypi.org" does not allow
 *     connecting to pypi.org's address by number.
 *  2. A name that passed is resolved by the proxy, and each address is checked again: one an
 *     address rule of the deny list covers is dropped; one in a loopback, link-local, private
 *     or otherwise internal range (sbx_netaddr_internal) is dropped unless the name matched an
 *     exact name rule (not a wildcard) or an address rule of the allow list covers it. This
 *     is what stops DNS rebinding: "x.example.com" resolving to 127.0.0.1 goes nowhere.
 *     The proxy connects only to the addresses that are left, never re-resolving. */
#ifndef SBX_UTIL_NETPOLICY_H
#define SBX_UTIL_NETPOLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "json.h"

#define SBX_NET_MAX_RULES 1024       /* per list */
#define SBX_NET_NAME_MAX 253         /* a DNS name, without the trailing dot */

enum sbx_net_mode { SBX_NET_NONE, SBX_NET_ALLOWLIST, SBX_NET_HOST };

enum sbx_netrule_kind {
	SBX_NETRULE_NAME,             /* exactly this name */
	SBX_NETRULE_WILDCARD,         /* subdomains of name ("*." stripped) */
	SBX_NETRULE_RANGE,            /* addr/prefix; an IP literal is a full-length prefix */
};

/* An IPv4 (family 4, first 4 bytes) or IPv6 (family 6) address. IPv4-mapped IPv6 addresses
 * (::ffff:a.b.c.d) are always stored as IPv4, so one rule covers both spellings. */
struct sbx_netaddr {
	int family;
	uint8_t b[16];
};

struct sbx_netrule {
	enum sbx_netrule_kind kind;
	char name[SBX_NET_NAME_MAX + 1];  /* NAME, WILDCARD: lower case, no trailing dot */
	struct sbx_netaddr addr;          /* RANGE */
	int prefix;                       /* RANGE: bits */
	uint16_t port;                    /* 0 = any */
};

struct sbx_netpolicy {
	struct sbx_netrule *allow, *deny;
	size_t n_allow, n_deny;
};

/* The whole "network" object: {"mode": ..., "allow": [...], "deny": [...]}. allow and deny
 * only with mode "allowlist"; mode "allowlist" without allow denies everything. */
struct sbx_network {
	enum sbx_net_mode mode;
	bool mode_given;
	struct sbx_netpolicy policy;
};

/* Parses and validates a "network" object. On failure returns -1 with a message such as
 * "key 'network.allow[2]': port 0 is out of range (1..65535)" in err. */
int sbx_network_parse(const sbx_json *v, struct sbx_network *out, char *err, size_t errlen);
void sbx_network_free(struct sbx_network *n);
const char *sbx_net_mode_name(enum sbx_net_mode mode);

/* One rule from text[0..len). On failure returns -1 with the reason (without the key) in why. */
int sbx_netrule_parse(const char *text, size_t len, struct sbx_netrule *out, char *why,
                      size_t whylen);
/* The rule as it would be written ("*.example.com:443"). */
void sbx_netrule_format(const struct sbx_netrule *r, char *out, size_t len);

/* A connection's destination as a client asked for it. */
struct sbx_nettarget {
	bool is_name;
	char name[SBX_NET_NAME_MAX + 1]; /* is_name: normalised (lower case, no trailing dot) */
	struct sbx_netaddr addr;         /* !is_name */
	uint16_t port;
};

/* Reads a host as a client wrote it (a name, a dotted-quad IPv4 address, an IPv6 address with
 * or without brackets) into t. Refuses everything else, including the numeric spellings the
 * C library's resolver would take for addresses ("2130706433", "0x7f.1", "127.1"): -1. */
int sbx_nettarget_parse(const char *host, size_t len, uint16_t port, struct sbx_nettarget *t);
/* The host part of t for messages and the audit log ("example.com", "192.0.2.1", "::1"). */
void sbx_nettarget_host(const struct sbx_nettarget *t, char *out, size_t len);

/* Why a target or an address was allowed or refused. */
struct sbx_netverdict {
	bool allowed;
	bool exact_name;              /* allowed by an exact name rule (internal addresses pass) */
	char rule[SBX_NET_NAME_MAX + 64]; /* "network.deny[0] evil.com", "default", ... */
	char reason[1024];             /* a sentence for the client and the audit log */
};

/* Step 1: the target as asked. */
void sbx_netpolicy_check(const struct sbx_netpolicy *p, const struct sbx_nettarget *t,
                         struct sbx_netverdict *v);
/* Step 2: may a name that step 1 allowed (exact_name: by an exact name entry) connect to the
 * resolved address a? When not, returns false with the refusal in *v (the caller keeps the
 * last one, to report when no address is left); when it may, *v is not touched. */
bool sbx_netpolicy_check_address(const struct sbx_netpolicy *p, const struct sbx_netaddr *a,
                                 uint16_t port, bool exact_name, struct sbx_netverdict *v);

/* The name of the internal range a is in ("loopback", "private", "link-local", ...), or NULL
 * for an address on the public internet. */
const char *sbx_netaddr_internal(const struct sbx_netaddr *a);
/* From and to sockaddr (sockaddr_in / sockaddr_in6; IPv4-mapped IPv6 becomes IPv4). */
int sbx_netaddr_from_sockaddr(const void *sa, struct sbx_netaddr *a);
/* Text form ("192.0.2.1", "2001:db8::1"). */
void sbx_netaddr_format(const struct sbx_netaddr *a, char *out, size_t len);

#endif
