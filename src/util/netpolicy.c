/* Network rules: parsing, matching, and the table of internal address ranges (netpolicy.h).
 *
 * Everything parsed here is untrusted: rules come from a config a model may have written, and
 * targets from programs inside the sandbox. Parsing is strict where leniency would let two
 * spellings of one address get different answers: IPv4 only as a dotted quad, no numeric
 * "names", IPv4-mapped IPv6 folded into IPv4, range bits beyond the prefix refused. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "netpolicy.h"

#define SHOW_MAX 64

/* Untrusted text as it may appear in a message: printable ASCII, the rest as \xNN. */
static void show(char *out, size_t outlen, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0, n = len > SHOW_MAX ? SHOW_MAX : len;

	for (size_t i = 0; i < n && o + 5 < outlen; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c >= 0x20 && c < 0x7f && c != '\\' && c != '"') {
			out[o++] = (char)c;
		} else {
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	if (n < len && o + 4 < outlen) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	if (outlen)
		out[o] = '\0';
}

/* ---- addresses ------------------------------------------------------------------------- */

static const uint8_t v4_mapped_prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

static void fold_mapped(struct sbx_netaddr *a)
{
	if (a->family == 6 && memcmp(a->b, v4_mapped_prefix, 12) == 0) {
		memmove(a->b, a->b + 12, 4);
		memset(a->b + 4, 0, 12);
		a->family = 4;
	}
}

/* A strict IP literal (no brackets, no zone, no port). */
static bool parse_ip(const char *s, struct sbx_netaddr *a)
{
	memset(a, 0, sizeof *a);
	if (inet_pton(AF_INET, s, a->b) == 1) {
		a->family = 4;
		return true;
	}
	if (inet_pton(AF_INET6, s, a->b) == 1) {
		a->family = 6;
		fold_mapped(a);
		return true;
	}
	return false;
}

static int addr_bits(const struct sbx_netaddr *a)
{
	return a->family == 4 ? 32 : 128;
}

static bool prefix_matches(const struct sbx_netaddr *net, int prefix, const struct sbx_netaddr *a)
{
	int full = prefix / 8, rest = prefix % 8;

	if (net->family != a->family)
		return false;
	if (memcmp(net->b, a->b, (size_t)full) != 0)
		return false;
	if (rest == 0)
		return true;
	uint8_t mask = (uint8_t)(0xff << (8 - rest));
	return (net->b[full] & mask) == (a->b[full] & mask);
}

static bool bits_beyond_prefix(const struct sbx_netaddr *a, int prefix)
{
	for (int bit = prefix; bit < addr_bits(a); bit++)
		if (a->b[bit / 8] & (0x80 >> (bit % 8)))
			return true;
	return false;
}

void sbx_netaddr_format(const struct sbx_netaddr *a, char *out, size_t len)
{
	if (!inet_ntop(a->family == 4 ? AF_INET : AF_INET6, a->b, out, (socklen_t)len))
		snprintf(out, len, "?");
}

int sbx_netaddr_from_sockaddr(const void *sa, struct sbx_netaddr *a)
{
	const struct sockaddr *s = sa;

	memset(a, 0, sizeof *a);
	if (s->sa_family == AF_INET) {
		a->family = 4;
		memcpy(a->b, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		return 0;
	}
	if (s->sa_family == AF_INET6) {
		a->family = 6;
		memcpy(a->b, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
		fold_mapped(a);
		return 0;
	}
	return -1;
}

/* Ranges that are not the public internet: this host, its links, private networks, and the
 * special-purpose blocks (RFC 6890) a resolver answer has no business pointing into. The
 * documentation ranges (TEST-NET-1..3, 2001:db8::/32) are not listed: nothing routes them,
 * and tests build their hosts there. */
struct internal_range {
	int family;
	uint8_t b[16];
	int prefix;
	const char *what;
};

static const struct internal_range internal_ranges[] = {
	{ 4, { 0 }, 8, "\"this network\" (0.0.0.0/8)" },
	{ 4, { 10 }, 8, "private (10.0.0.0/8)" },
	{ 4, { 100, 64 }, 10, "shared address space (100.64.0.0/10)" },
	{ 4, { 127 }, 8, "loopback (127.0.0.0/8)" },
	{ 4, { 169, 254 }, 16, "link-local (169.254.0.0/16)" },
	{ 4, { 172, 16 }, 12, "private (172.16.0.0/12)" },
	{ 4, { 192, 0, 0 }, 24, "IETF protocol assignments (192.0.0.0/24)" },
	{ 4, { 192, 168 }, 16, "private (192.168.0.0/16)" },
	{ 4, { 198, 18 }, 15, "benchmarking (198.18.0.0/15)" },
	{ 4, { 224 }, 4, "multicast (224.0.0.0/4)" },
	{ 4, { 240 }, 4, "reserved (240.0.0.0/4)" },
	{ 6, { 0 }, 128, "unspecified (::)" },
	{ 6, { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 }, 128, "loopback (::1)" },
	{ 6, { 0 }, 96, "IPv4-compatible (::/96)" },
	{ 6, { 0x01, 0x00 }, 64, "discard (100::/64)" },
	{ 6, { 0x00, 0x64, 0xff, 0x9b, 0x00, 0x01 }, 48, "local NAT64 (64:ff9b:1::/48)" },
	{ 6, { 0xfc }, 7, "unique-local (fc00::/7)" },
	{ 6, { 0xfe, 0x80 }, 10, "link-local (fe80::/10)" },
	{ 6, { 0xfe, 0xc0 }, 10, "site-local (fec0::/10)" },
	{ 6, { 0xff }, 8, "multicast (ff00::/8)" },
};

static const struct sbx_netaddr nat64 = { 6, { 0x00, 0x64, 0xff, 0x9b } };
static const struct sbx_netaddr six_to_four = { 6, { 0x20, 0x02 } };

/* IPv6 forms that carry an IPv4 address: NAT64 (64:ff9b::/96) and 6to4 (2002::/16) reach
 * whatever IPv4 address they embed, so that address decides. */
static bool embedded_v4(const struct sbx_netaddr *a, struct sbx_netaddr *v4)
{
	memset(v4, 0, sizeof *v4);
	v4->family = 4;
	if (prefix_matches(&nat64, 96, a)) {
		memcpy(v4->b, a->b + 12, 4);
		return true;
	}
	if (prefix_matches(&six_to_four, 16, a)) {
		memcpy(v4->b, a->b + 2, 4);
		return true;
	}
	return false;
}

const char *sbx_netaddr_internal(const struct sbx_netaddr *a)
{
	struct sbx_netaddr v4;

	if (a->family == 6 && embedded_v4(a, &v4))
		return sbx_netaddr_internal(&v4);
	for (size_t i = 0; i < sizeof internal_ranges / sizeof internal_ranges[0]; i++) {
		const struct internal_range *r = &internal_ranges[i];
		struct sbx_netaddr net = { .family = r->family };

		memcpy(net.b, r->b, sizeof net.b);
		if (prefix_matches(&net, r->prefix, a))
			return r->what;
	}
	return NULL;
}

/* ---- names ----------------------------------------------------------------------------- */

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

/* Lower-cases src[0..len) into out, drops one trailing dot, and checks the DNS shape: labels
 * of 1..63 name characters, at most 253 in all, and a last label that is not all digits
 * (those are the resolver's numeric address spellings, never names). */
static bool normalize_name(const char *src, size_t len, char *out, const char **why)
{
	size_t label = 0, last_start = 0;
	bool last_numeric = true;

	if (len && src[len - 1] == '.')
		len--;
	if (len == 0 || len > SBX_NET_NAME_MAX) {
		*why = len ? "longer than 253 characters" : "empty host name";
		return false;
	}
	for (size_t i = 0; i < len; i++) {
		char c = src[i];

		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		out[i] = c;
		if (c == '.') {
			if (label == 0) {
				*why = "empty label in host name";
				return false;
			}
			label = 0;
			last_start = i + 1;
			last_numeric = true;
			continue;
		}
		if (!name_char(c)) {
			*why = "host names have only letters, digits, '-', '_' and '.'";
			return false;
		}
		if (++label > 63) {
			*why = "a label of the host name is longer than 63 characters";
			return false;
		}
		if (c < '0' || c > '9')
			last_numeric = false;
	}
	out[len] = '\0';
	if (label == 0) {
		*why = "empty label in host name";
		return false;
	}
	if (last_numeric || (len - last_start > 1 && out[last_start] == '0' && out[last_start + 1] == 'x')) {
		*why = "not an IP address in dotted-quad form, and not a host name";
		return false;
	}
	return true;
}

/* ---- rules ----------------------------------------------------------------------------- */

static bool parse_port(const char *s, uint16_t *port)
{
	unsigned long v = 0;

	if (!*s || strlen(s) > 5)
		return false;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			return false;
		v = v * 10 + (unsigned long)(*p - '0');
	}
	if (v < 1 || v > 65535)
		return false;
	*port = (uint16_t)v;
	return true;
}

/* Splits "host[:port]", "[v6[/n]][:port]" and a bare "v6[/n]" into host and port. */
static int split_port(char *s, char **host, const char **port_text, const char **why)
{
	char *colon;

	*port_text = NULL;
	if (s[0] == '[') {
		char *close = strchr(s, ']');

		if (!close) {
			*why = "'[' without ']'";
			return -1;
		}
		*close = '\0';
		*host = s + 1;
		if (close[1] == ':')
			*port_text = close + 2;
		else if (close[1]) {
			*why = "only \":port\" may follow ']'";
			return -1;
		}
		return 0;
	}
	*host = s;
	colon = strchr(s, ':');
	if (colon && strchr(colon + 1, ':'))
		return 0;                 /* more than one ':': an IPv6 address without a port */
	if (colon) {
		*colon = '\0';
		*port_text = colon + 1;
	}
	return 0;
}

static int parse_range(char *host, struct sbx_netrule *r, const char **why)
{
	char *slash = strchr(host, '/');
	long prefix = -1;

	if (slash) {
		char *end;

		*slash = '\0';
		if (!slash[1] || slash[1] < '0' || slash[1] > '9') {
			*why = "expected a prefix length after '/'";
			return -1;
		}
		prefix = strtol(slash + 1, &end, 10);
		if (*end) {
			*why = "expected a prefix length after '/'";
			return -1;
		}
	}
	if (!parse_ip(host, &r->addr)) {
		*why = slash ? "expected an IP address before '/'" : "not an IP address";
		return -1;
	}
	/* "::ffff:10.0.0.0/104" was folded to IPv4: its prefix folds with it. */
	if (slash && r->addr.family == 4 && strchr(host, ':')) {
		if (prefix < 96 || prefix > 128) {
			*why = "an IPv4-mapped range needs a prefix length in 96..128";
			return -1;
		}
		prefix -= 96;
	}
	if (prefix > addr_bits(&r->addr)) {
		*why = r->addr.family == 4 ? "prefix length out of range (0..32)"
		                            : "prefix length out of range (0..128)";
		return -1;
	}
	r->kind = SBX_NETRULE_RANGE;
	r->prefix = slash ? (int)prefix : addr_bits(&r->addr);
	if (bits_beyond_prefix(&r->addr, r->prefix)) {
		*why = "the address has bits set beyond the prefix length";
		return -1;
	}
	return 0;
}

static int parse_rule_host(char *host, bool bracketed, struct sbx_netrule *r, const char **why)
{
	struct sbx_netaddr probe;

	if (bracketed || strchr(host, '/') || strchr(host, ':') || parse_ip(host, &probe))
		return parse_range(host, r, why);
	if (!strcmp(host, "*")) {
		*why = "'*' alone would allow every host: list the hosts, or use mode \"host\"";
		return -1;
	}
	if (!strncmp(host, "*.", 2)) {
		r->kind = SBX_NETRULE_WILDCARD;
		host += 2;
	} else {
		r->kind = SBX_NETRULE_NAME;
	}
	if (strchr(host, '*')) {
		*why = "'*' may only stand at the start, as in \"*.example.com\"";
		return -1;
	}
	return normalize_name(host, strlen(host), r->name, why) ? 0 : -1;
}

int sbx_netrule_parse(const char *text, size_t len, struct sbx_netrule *out, char *why,
                      size_t whylen)
{
	char buf[SBX_NET_NAME_MAX + 16];
	const char *port_text = NULL, *reason = NULL;
	char *host;

	memset(out, 0, sizeof *out);
	if (len == 0 || memchr(text, '\0', len) || len >= sizeof buf) {
		snprintf(why, whylen, "%s", len == 0 ? "empty rule" : memchr(text, '\0', len)
		         ? "contains a NUL byte" : "longer than 253 characters");
		return -1;
	}
	memcpy(buf, text, len);
	buf[len] = '\0';
	if (split_port(buf, &host, &port_text, &reason) < 0 ||
	    parse_rule_host(host, buf[0] == '[', out, &reason) < 0) {
		snprintf(why, whylen, "%s", reason);
		return -1;
	}
	if (port_text && !parse_port(port_text, &out->port)) {
		char shown[SHOW_MAX * 4 + 8];

		show(shown, sizeof shown, port_text, strlen(port_text));
		snprintf(why, whylen, "port \"%s\" is not a number in 1..65535", shown);
		return -1;
	}
	return 0;
}

void sbx_netrule_format(const struct sbx_netrule *r, char *out, size_t len)
{
	char host[INET6_ADDRSTRLEN + 8], port[8] = "";
	bool v6 = r->kind == SBX_NETRULE_RANGE && r->addr.family == 6;

	if (r->port)
		snprintf(port, sizeof port, ":%u", r->port);
	if (r->kind != SBX_NETRULE_RANGE) {
		snprintf(out, len, "%s%s%s", r->kind == SBX_NETRULE_WILDCARD ? "*." : "", r->name, port);
		return;
	}
	sbx_netaddr_format(&r->addr, host, sizeof host);
	if (r->prefix != addr_bits(&r->addr))
		snprintf(host + strlen(host), sizeof host - strlen(host), "/%d", r->prefix);
	if (v6 && r->port)
		snprintf(out, len, "[%s]%s", host, port);
	else
		snprintf(out, len, "%s%s", host, port);
}

/* ---- the network object ---------------------------------------------------------------- */

__attribute__((format(printf, 4, 5)))
static int fail_key(char *err, size_t errlen, const char *key, const char *fmt, ...)
{
	int n = snprintf(err, errlen, "key '%s': ", key);
	va_list ap;

	if (n >= 0 && (size_t)n < errlen) {
		va_start(ap, fmt);
		vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return -1;
}

static int parse_list(const sbx_json *v, const char *key, struct sbx_netrule **rules, size_t *n,
                      char *err, size_t errlen)
{
	if (v->type != SBX_JSON_ARRAY)
		return fail_key(err, errlen, key, "expected an array of strings, got %s",
		                sbx_json_type_name(v->type));
	if (v->n > SBX_NET_MAX_RULES) {
		return fail_key(err, errlen, key, "at most %d entries", SBX_NET_MAX_RULES);
	}
	free(*rules);
	*n = 0;
	if (!(*rules = calloc(v->n ? v->n : 1, sizeof **rules)))
		return fail_key(err, errlen, key, "%s", "out of memory");
	for (size_t i = 0; i < v->n; i++) {
		const sbx_json *item = v->items[i];
		char path[64], why[160], shown[SHOW_MAX * 4 + 8];

		snprintf(path, sizeof path, "%s[%zu]", key, i);
		if (item->type != SBX_JSON_STRING)
			return fail_key(err, errlen, path, "expected a string, got %s",
			                sbx_json_type_name(item->type));
		if (sbx_netrule_parse(item->str, item->len, &(*rules)[i], why, sizeof why) < 0) {
			show(shown, sizeof shown, item->str, item->len);
			return fail_key(err, errlen, path, "\"%s\": %s", shown, why);
		}
		*n = i + 1;
	}
	return 0;
}

static int parse_mode(const sbx_json *v, struct sbx_network *out, char *err, size_t errlen)
{
	static const char *const names[] = { "none", "allowlist", "host" };
	char shown[SHOW_MAX * 4 + 8];

	if (v->type != SBX_JSON_STRING)
		return fail_key(err, errlen, "network.mode", "expected a string, got %s",
		                sbx_json_type_name(v->type));
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strlen(names[i]) == v->len && !memcmp(v->str, names[i], v->len)) {
			out->mode = (enum sbx_net_mode)i;
			out->mode_given = true;
			return 0;
		}
	show(shown, sizeof shown, v->str, v->len);
	return fail_key(err, errlen, "network.mode", "unknown mode '%s' (expected \"none\", "
	                "\"allowlist\" or \"host\")", shown);
}

int sbx_network_parse(const sbx_json *v, struct sbx_network *out, char *err, size_t errlen)
{
	const sbx_json *allow = NULL, *deny = NULL;
	int r = 0;

	memset(out, 0, sizeof *out);
	if (v->type != SBX_JSON_OBJECT)
		return fail_key(err, errlen, "network", "expected an object, got %s",
		                sbx_json_type_name(v->type));
	for (size_t i = 0; r == 0 && i < v->n; i++) {
		const char *k = strlen(v->keys[i]) == v->key_lens[i] ? v->keys[i] : "";

		if (!strcmp(k, "mode")) {
			r = parse_mode(v->items[i], out, err, errlen);
		} else if (!strcmp(k, "allow")) {
			allow = v->items[i];
		} else if (!strcmp(k, "deny")) {
			deny = v->items[i];
		} else {
			char shown[SHOW_MAX * 4 + 8], key[SHOW_MAX * 4 + 16];

			show(shown, sizeof shown, v->keys[i], v->key_lens[i]);
			snprintf(key, sizeof key, "network.%s", shown);
			snprintf(err, errlen, "unknown key '%s' (expected mode, allow, deny)", key);
			r = -1;
		}
	}
	if (r == 0 && (allow || deny) && out->mode != SBX_NET_ALLOWLIST)
		r = fail_key(err, errlen, allow ? "network.allow" : "network.deny",
		             "%s", "allow and deny lists need \"mode\": \"allowlist\"");
	if (r == 0 && allow)
		r = parse_list(allow, "network.allow", &out->policy.allow, &out->policy.n_allow,
		               err, errlen);
	if (r == 0 && deny)
		r = parse_list(deny, "network.deny", &out->policy.deny, &out->policy.n_deny, err,
		               errlen);
	if (r < 0)
		sbx_network_free(out);
	return r;
}

void sbx_network_free(struct sbx_network *n)
{
	free(n->policy.allow);
	free(n->policy.deny);
	memset(n, 0, sizeof *n);
}

const char *sbx_net_mode_name(enum sbx_net_mode mode)
{
	return mode == SBX_NET_HOST ? "host" : mode == SBX_NET_ALLOWLIST ? "allowlist" : "none";
}

/* ---- targets and decisions ------------------------------------------------------------- */

int sbx_nettarget_parse(const char *host, size_t len, uint16_t port, struct sbx_nettarget *t)
{
	char buf[SBX_NET_NAME_MAX + 2];
	const char *why;

	memset(t, 0, sizeof *t);
	t->port = port;
	if (len >= 2 && host[0] == '[' && host[len - 1] == ']') {
		host++;
		len -= 2;
	}
	if (len == 0 || len >= sizeof buf || memchr(host, '\0', len))
		return -1;
	memcpy(buf, host, len);
	buf[len] = '\0';
	if (parse_ip(buf, &t->addr))
		return 0;
	t->is_name = true;
	return normalize_name(buf, len, t->name, &why) ? 0 : -1;
}

void sbx_nettarget_host(const struct sbx_nettarget *t, char *out, size_t len)
{
	if (t->is_name)
		snprintf(out, len, "%s", t->name);
	else
		sbx_netaddr_format(&t->addr, out, len);
}

static bool name_matches(const struct sbx_netrule *r, const char *name)
{
	size_t n = strlen(name), m = strlen(r->name);

	if (r->kind == SBX_NETRULE_NAME)
		return !strcmp(r->name, name);
	/* "*.example.com": ends in ".example.com", with at least one label before it. */
	return r->kind == SBX_NETRULE_WILDCARD && n > m + 1 && name[n - m - 1] == '.' &&
	       !strcmp(name + n - m, r->name);
}

static bool rule_matches(const struct sbx_netrule *r, const struct sbx_nettarget *t)
{
	if (r->port && r->port != t->port)
		return false;
	if (t->is_name)
		return r->kind != SBX_NETRULE_RANGE && name_matches(r, t->name);
	return r->kind == SBX_NETRULE_RANGE && prefix_matches(&r->addr, r->prefix, &t->addr);
}

static void name_rule(struct sbx_netverdict *v, const char *list, size_t i,
                      const struct sbx_netrule *r)
{
	char text[SBX_NET_NAME_MAX + 16];

	sbx_netrule_format(r, text, sizeof text);
	snprintf(v->rule, sizeof v->rule, "network.%s[%zu] %s", list, i, text);
}

/* The first rule of the list that matches t, or -1. */
static long find_rule(const struct sbx_netrule *rules, size_t n, const struct sbx_nettarget *t)
{
	for (size_t i = 0; i < n; i++)
		if (rule_matches(&rules[i], t))
			return (long)i;
	return -1;
}

/* An exact name entry that matches t, or -1: it decides before any wildcard, since only it
 * lets the name resolve into internal ranges. */
static long find_exact_rule(const struct sbx_netrule *rules, size_t n,
                            const struct sbx_nettarget *t)
{
	for (size_t i = 0; i < n; i++)
		if (rules[i].kind == SBX_NETRULE_NAME && rule_matches(&rules[i], t))
			return (long)i;
	return -1;
}

void sbx_netpolicy_check(const struct sbx_netpolicy *p, const struct sbx_nettarget *t,
                         struct sbx_netverdict *v)
{
	char host[SBX_NET_NAME_MAX + 1];
	long i;

	memset(v, 0, sizeof *v);
	sbx_nettarget_host(t, host, sizeof host);
	if ((i = find_rule(p->deny, p->n_deny, t)) >= 0) {
		name_rule(v, "deny", (size_t)i, &p->deny[i]);
		snprintf(v->reason, sizeof v->reason, "%s:%u is denied by %s", host, t->port, v->rule);
		return;
	}
	if ((i = find_exact_rule(p->allow, p->n_allow, t)) >= 0 ||
	    (i = find_rule(p->allow, p->n_allow, t)) >= 0) {
		v->allowed = true;
		v->exact_name = p->allow[i].kind == SBX_NETRULE_NAME;
		name_rule(v, "allow", (size_t)i, &p->allow[i]);
		snprintf(v->reason, sizeof v->reason, "%s:%u is allowed by %s", host, t->port, v->rule);
		return;
	}
	snprintf(v->rule, sizeof v->rule, "default");
	snprintf(v->reason, sizeof v->reason, "%s:%u matches no entry of network.allow%s", host,
	         t->port, t->is_name ? "" : " (name entries do not cover addresses)");
}

bool sbx_netpolicy_check_address(const struct sbx_netpolicy *p, const struct sbx_netaddr *a,
                                 uint16_t port, bool exact_name, struct sbx_netverdict *v)
{
	struct sbx_nettarget t = { .is_name = false, .addr = *a, .port = port };
	char text[INET6_ADDRSTRLEN];
	const char *internal;
	long i;

	sbx_netaddr_format(a, text, sizeof text);
	if ((i = find_rule(p->deny, p->n_deny, &t)) >= 0) {
		v->allowed = false;
		name_rule(v, "deny", (size_t)i, &p->deny[i]);
		snprintf(v->reason, sizeof v->reason, "it resolves to %s, denied by %s", text, v->rule);
		return false;
	}
	internal = sbx_netaddr_internal(a);
	if (!internal || exact_name || find_rule(p->allow, p->n_allow, &t) >= 0)
		return true;
	v->allowed = false;
	snprintf(v->rule, sizeof v->rule, "internal-address");
	snprintf(v->reason, sizeof v->reason, "it resolves to %s, a %s address, which only an "
	         "exact name entry or an address range in network.allow permits", text, internal);
	return false;
}
