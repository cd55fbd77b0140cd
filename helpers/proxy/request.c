/* Parsing what proxy clients send (request.h). */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "request.h"

#define HTTP_DEFAULT_PORT 80

static int bad(struct sbx_http_request *r, int status, const char *why)
{
	r->status = status;
	snprintf(r->error, sizeof r->error, "%s", why);
	return SBX_PARSE_BAD;
}

/* RFC 9110 token characters (method and header names). */
static bool tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* The end of the head (just past the blank line), 0 while it has not arrived, or -1 for a bare
 * LF or CR anywhere before it (line endings other parsers read differently). */
static long head_end(const char *buf, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (buf[i] == '\r' && i + 1 < len && buf[i + 1] != '\n')
			return -1;
		if (buf[i] != '\n')
			continue;
		if (i == 0 || buf[i - 1] != '\r')
			return -1;
		if (i >= 3 && buf[i - 2] == '\n' && buf[i - 3] == '\r')
			return (long)i + 1;
	}
	return 0;
}

static bool parse_port(const char *s, size_t len, uint16_t *port)
{
	unsigned v = 0;

	if (len == 0 || len > 5)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	if (v == 0 || v > 65535)
		return false;
	*port = (uint16_t)v;
	return true;
}

/* "host", "host:port", "[v6]" or "[v6]:port" into host (brackets removed) and port (or
 * default_port; 0 = a port is required). */
static bool parse_authority(const char *s, size_t len, uint16_t default_port, char *host,
                            size_t host_cap, uint16_t *port)
{
	const char *h = s, *colon = NULL;
	size_t hlen;

	if (len == 0 || memchr(s, '@', len))
		return false;
	if (s[0] == '[') {
		const char *close = memchr(s, ']', len);

		if (!close)
			return false;
		h = s + 1;
		hlen = (size_t)(close - h);
		if ((size_t)(close + 1 - s) < len) {
			if (close[1] != ':')
				return false;
			colon = close + 1;
		}
	} else {
		colon = memchr(s, ':', len);
		hlen = colon ? (size_t)(colon - s) : len;
	}
	if (hlen == 0 || hlen >= host_cap)
		return false;
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	if (colon)
		return parse_port(colon + 1, len - (size_t)(colon + 1 - s), port);
	*port = default_port;
	return default_port != 0;
}

static bool same_host(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);

	if (la && a[la - 1] == '.')
		la--;
	if (lb && b[lb - 1] == '.')
		lb--;
	return la == lb && strncasecmp(a, b, la) == 0;
}

/* The request target: authority form for CONNECT, absolute http:// form otherwise. */
static int parse_target(const char *t, size_t len, struct sbx_http_request *r, const char *head)
{
	static const char http[] = "http://";
	size_t alen;

	if (r->connect) {
		if (!parse_authority(t, len, 0, r->host, sizeof r->host, &r->port))
			return bad(r, 400, "CONNECT needs a target host:port");
		return SBX_PARSE_DONE;
	}
	if (len >= 8 && strncasecmp(t, "https://", 8) == 0)
		return bad(r, 400, "https:// URLs go through CONNECT, not as plain requests");
	if (len < sizeof http - 1 || strncasecmp(t, http, sizeof http - 1) != 0)
		return bad(r, 400, "not a proxy request: expected CONNECT or an absolute http:// URL");
	t += sizeof http - 1;
	len -= sizeof http - 1;
	alen = strcspn(t, "/?# ");
	if (alen > len)
		alen = len;
	if (!parse_authority(t, alen, HTTP_DEFAULT_PORT, r->host, sizeof r->host, &r->port))
		return bad(r, 400, "the URL has no valid host[:port] (and no user@ part is allowed)");
	if (alen < len && t[alen] == '#')
		return bad(r, 400, "a fragment does not belong in a request");
	r->target_off = (size_t)(t + alen - head);
	r->target_len = len - alen;
	return SBX_PARSE_DONE;
}

/* "METHOD SP target SP HTTP/1.x CRLF": returns the offset of the first header line. */
static int parse_request_line(const char *head, size_t end, struct sbx_http_request *r,
                              size_t *next)
{
	const char *line_end = memchr(head, '\r', end);
	const char *sp1, *sp2;
	size_t mlen, line_len;

	if (!line_end)
		return bad(r, 400, "malformed request line");
	line_len = (size_t)(line_end - head);
	sp1 = memchr(head, ' ', line_len);
	sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(line_end - sp1 - 1)) : NULL;
	if (!sp1 || !sp2 || sp2 == sp1 + 1)
		return bad(r, 400, "malformed request line");
	mlen = (size_t)(sp1 - head);
	if (mlen == 0 || mlen >= sizeof r->method)
		return bad(r, 400, "malformed method");
	for (size_t i = 0; i < mlen; i++)
		if (!tchar((unsigned char)head[i]))
			return bad(r, 400, "malformed method");
	memcpy(r->method, head, mlen);
	r->method[mlen] = '\0';
	if ((size_t)(line_end - sp2 - 1) != 8 || (memcmp(sp2 + 1, "HTTP/1.1", 8) != 0 &&
	                                          memcmp(sp2 + 1, "HTTP/1.0", 8) != 0))
		return bad(r, 400, "only HTTP/1.0 and HTTP/1.1 requests");
	r->version_off = (size_t)(sp2 + 1 - head);
	for (const char *p = sp1 + 1; p < sp2; p++)
		if ((unsigned char)*p <= 0x20 || *p == 0x7f)
			return bad(r, 400, "control characters in the request target");
	r->connect = strcmp(r->method, "CONNECT") == 0;
	*next = line_len + 2;
	return parse_target(sp1 + 1, (size_t)(sp2 - sp1 - 1), r, head);
}

struct header_facts {
	const char *host;             /* the Host value, and its length */
	size_t host_len;
	int n_host;
	bool transfer_encoding;
	bool has_length;
	uint64_t length;
};

static int take_content_length(const char *v, size_t len, struct header_facts *f,
                               struct sbx_http_request *r)
{
	uint64_t n = 0;

	if (len == 0 || len > 18)
		return bad(r, 400, "invalid Content-Length");
	for (size_t i = 0; i < len; i++) {
		if (v[i] < '0' || v[i] > '9')
			return bad(r, 400, "invalid Content-Length");
		n = n * 10 + (uint64_t)(v[i] - '0');
	}
	if (f->has_length && f->length != n)
		return bad(r, 400, "conflicting Content-Length headers");
	f->has_length = true;
	f->length = n;
	return SBX_PARSE_DONE;
}

/* One "name: value" line (without its CRLF). */
static int parse_header(const char *line, size_t len, struct header_facts *f,
                        struct sbx_http_request *r)
{
	const char *colon = memchr(line, ':', len), *v, *vend;
	size_t nlen;

	if (len && (line[0] == ' ' || line[0] == '\t'))
		return bad(r, 400, "folded header lines are not accepted");
	if (!colon || colon == line)
		return bad(r, 400, "malformed header line");
	nlen = (size_t)(colon - line);
	for (size_t i = 0; i < nlen; i++)
		if (!tchar((unsigned char)line[i]))
			return bad(r, 400, "malformed header name");
	for (v = colon + 1; v < line + len && (*v == ' ' || *v == '\t'); v++)
		;
	for (vend = line + len; vend > v && (vend[-1] == ' ' || vend[-1] == '\t'); vend--)
		;
	for (const char *p = v; p < vend; p++)
		if (((unsigned char)*p < 0x20 && *p != '\t') || *p == 0x7f)
			return bad(r, 400, "control characters in a header value");
	if (nlen == 4 && !strncasecmp(line, "host", 4)) {
		f->host = v;
		f->host_len = (size_t)(vend - v);
		f->n_host++;
	} else if (nlen == 14 && !strncasecmp(line, "content-length", 14)) {
		return take_content_length(v, (size_t)(vend - v), f, r);
	} else if (nlen == 17 && !strncasecmp(line, "transfer-encoding", 17)) {
		f->transfer_encoding = true;
	}
	return SBX_PARSE_DONE;
}

/* The Host header, when there is one, must name the target: a request that says one host to
 * the proxy and another to the server is how a policy gets fooled. */
static int check_host_header(const struct header_facts *f, struct sbx_http_request *r)
{
	char host[256];
	uint16_t port = 0;

	if (f->n_host > 1)
		return bad(r, 400, "more than one Host header");
	r->has_host_header = f->n_host == 1;
	if (!r->has_host_header)
		return SBX_PARSE_DONE;
	if (!parse_authority(f->host, f->host_len, r->connect ? r->port : HTTP_DEFAULT_PORT, host,
	                     sizeof host, &port) ||
	    !same_host(host, r->host) || port != r->port) {
		char why[sizeof r->error];

		snprintf(why, sizeof why, "the Host header '%.*s' does not match the request target "
		         "%.64s:%u", (int)(f->host_len > 64 ? 64 : f->host_len), f->host, r->host,
		         r->port);
		return bad(r, 400, why);
	}
	return SBX_PARSE_DONE;
}

int sbx_http_parse(const char *buf, size_t len, struct sbx_http_request *r)
{
	struct header_facts f = { 0 };
	size_t pos = 0;
	long end;
	int rc;

	memset(r, 0, sizeof *r);
	end = head_end(buf, len > SBX_HTTP_HEAD_MAX ? SBX_HTTP_HEAD_MAX : len);
	if (end < 0)
		return bad(r, 400, "lines must end in CRLF");
	if (end == 0)
		return len >= SBX_HTTP_HEAD_MAX ? bad(r, 431, "request head larger than 16 KiB")
		                                : SBX_PARSE_MORE;
	r->head_len = (size_t)end;
	if ((rc = parse_request_line(buf, r->head_len, r, &pos)) != SBX_PARSE_DONE)
		return rc;
	while (pos + 2 < r->head_len) {
		const char *line = buf + pos, *cr = memchr(line, '\r', r->head_len - pos);
		size_t line_len = (size_t)(cr - line);

		if ((rc = parse_header(line, line_len, &f, r)) != SBX_PARSE_DONE)
			return rc;
		pos += line_len + 2;
	}
	if ((rc = check_host_header(&f, r)) != SBX_PARSE_DONE)
		return rc;
	if (!r->connect && f.transfer_encoding)
		return bad(r, 501, "request bodies with Transfer-Encoding are not forwarded; send "
		           "Content-Length");
	r->content_length = r->connect ? 0 : f.length;
	return SBX_PARSE_DONE;
}

/* Headers that belong to one hop, or to the proxy (every Proxy-*: credentials meant for a
 * proxy must not reach the server): never passed on. */
static bool hop_by_hop(const char *name, size_t len)
{
	static const char *const names[] = { "connection", "keep-alive", "te", "trailer",
	                                     "upgrade", "transfer-encoding" };

	if (len >= 6 && !strncasecmp(name, "proxy-", 6))
		return true;
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strlen(names[i]) == len && !strncasecmp(names[i], name, len))
			return true;
	return false;
}

struct out {
	char *p;
	size_t len, cap;
	bool full;
};

static void put(struct out *o, const char *s, size_t len)
{
	if (o->full || len > o->cap - o->len) {
		o->full = true;
		return;
	}
	memcpy(o->p + o->len, s, len);
	o->len += len;
}

static void puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

size_t sbx_http_rewrite(const char *head, const struct sbx_http_request *r, char *out,
                        size_t cap)
{
	struct out o = { out, 0, cap, false };
	const char *first = memchr(head, '\n', r->head_len);
	size_t pos = (size_t)(first - head) + 1;

	puts_(&o, r->method);
	puts_(&o, " ");
	if (r->target_len)
		put(&o, head + r->target_off, r->target_len);
	else
		puts_(&o, "/");
	puts_(&o, " ");
	put(&o, head + r->version_off, 8);
	puts_(&o, "\r\n");
	while (pos + 2 < r->head_len) {
		const char *line = head + pos, *cr = memchr(line, '\r', r->head_len - pos);
		size_t line_len = (size_t)(cr - line);
		const char *colon = memchr(line, ':', line_len);

		if (!hop_by_hop(line, (size_t)(colon - line)))
			put(&o, line, line_len + 2);
		pos += line_len + 2;
	}
	if (!r->has_host_header) {
		char host[300];
		bool v6 = strchr(r->host, ':') != NULL;

		if (r->port == HTTP_DEFAULT_PORT)
			snprintf(host, sizeof host, "Host: %s%s%s\r\n", v6 ? "[" : "", r->host, v6 ? "]" : "");
		else
			snprintf(host, sizeof host, "Host: %s%s%s:%u\r\n", v6 ? "[" : "", r->host,
			         v6 ? "]" : "", r->port);
		puts_(&o, host);
	}
	puts_(&o, "Connection: close\r\n\r\n");
	return o.full ? 0 : o.len;
}

/* ---- SOCKS5 ---------------------------------------------------------------------------- */

static int socks_bad(struct sbx_socks_request *r, uint8_t reply, const char *why)
{
	r->reply = reply;
	snprintf(r->error, sizeof r->error, "%s", why);
	return SBX_PARSE_BAD;
}

int sbx_socks_parse_greeting(const uint8_t *buf, size_t len, struct sbx_socks_request *r)
{
	memset(r, 0, sizeof *r);
	if (len < 2)
		return SBX_PARSE_MORE;
	if (buf[0] != SBX_SOCKS_VERSION || buf[1] == 0)
		return socks_bad(r, SBX_SOCKS_GENERAL_FAILURE, "malformed SOCKS5 greeting");
	if (len < 2 + (size_t)buf[1])
		return SBX_PARSE_MORE;
	for (size_t i = 0; i < buf[1]; i++)
		if (buf[2 + i] == 0)
			r->no_auth_offered = true;
	r->used = 2 + (size_t)buf[1];
	return SBX_PARSE_DONE;
}

/* The length of a request with this address type, 0 while unknown, or -1 for a bad type. */
static long socks_request_len(const uint8_t *buf, size_t len)
{
	switch (buf[3]) {
	case 1:
		return 4 + 4 + 2;
	case 4:
		return 4 + 16 + 2;
	case 3:
		return len < 5 ? 0 : 5 + (long)buf[4] + 2;
	default:
		return -1;
	}
}

int sbx_socks_parse_request(const uint8_t *buf, size_t len, struct sbx_socks_request *r)
{
	long need;

	memset(r, 0, sizeof *r);
	if (len < 4)
		return SBX_PARSE_MORE;
	if (buf[0] != SBX_SOCKS_VERSION)
		return socks_bad(r, SBX_SOCKS_GENERAL_FAILURE, "malformed SOCKS5 request");
	if ((need = socks_request_len(buf, len)) < 0)
		return socks_bad(r, SBX_SOCKS_ADDRESS_UNSUPPORTED, "unknown SOCKS5 address type");
	if (need == 0 || len < (size_t)need)
		return SBX_PARSE_MORE;
	r->used = (size_t)need;
	if (buf[1] != 1)
		return socks_bad(r, SBX_SOCKS_COMMAND_UNSUPPORTED,
		                 "only SOCKS5 CONNECT is supported (no BIND, no UDP ASSOCIATE)");
	r->port = (uint16_t)(buf[need - 2] << 8 | buf[need - 1]);
	if (buf[3] == 3) {
		if (buf[4] == 0 || memchr(buf + 5, '\0', buf[4]))
			return socks_bad(r, SBX_SOCKS_GENERAL_FAILURE, "malformed SOCKS5 host name");
		memcpy(r->host, buf + 5, buf[4]);
		r->host[buf[4]] = '\0';
		r->is_name = true;
	} else {
		inet_ntop(buf[3] == 1 ? AF_INET : AF_INET6, buf + 4, r->host, sizeof r->host);
	}
	if (r->port == 0)
		return socks_bad(r, SBX_SOCKS_GENERAL_FAILURE, "port 0");
	return SBX_PARSE_DONE;
}
