/* sbx-netprobe: run by the network tests inside a sandbox, it tries the ways out a program
 * could try and prints what happened, one line per probe:
 *
 *   sbx-netprobe tcp ADDR PORT          "tcp <OK|errno name>": a direct connect (3 s limit)
 *   sbx-netprobe udp ADDR PORT          "udp <OK|errno name>": a datagram sent directly
 *   sbx-netprobe raw                    "raw <OK|errno name>": an ICMP raw socket
 *   sbx-netprobe packet                 "packet <OK|errno name>": an AF_PACKET socket
 *   sbx-netprobe ping                   "ping <OK|errno name>": an ICMP datagram socket
 *   sbx-netprobe get PROXY HOST PORT    a plain socket program using the proxy on
 *                                       127.0.0.1:PROXY: CONNECT HOST:PORT, then
 *                                       "GET / HTTP/1.0"; prints both status lines and the
 *                                       body of the answer
 *   sbx-netprobe socks PROXY HOST PORT  SOCKS5 with greeting and request sent in one write;
 *                                       prints "socks method <m> reply <r>" (hex), then on
 *                                       success the first line of a GET's answer
 *   sbx-netprobe flood N PROXY HOST PORT
 *                                       N connections open at once, each a CONNECT to
 *                                       HOST:PORT (an echo server) and one line echoed;
 *                                       prints "flood <N> connected <a> echoed <b>"
 *
 * Exits 0, or 2 on a usage error. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/socket.h>

#ifndef AF_PACKET
#define AF_PACKET 17
#endif

static const char *outcome(int err)
{
	return err == 0 ? "OK" : strerrorname_np(err) ? strerrorname_np(err) : "EUNKNOWN";
}

static int fill_addr(const char *addr, int port, struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in *in = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof *ss);
	if (inet_pton(AF_INET, addr, &in->sin_addr) == 1) {
		in->sin_family = AF_INET;
		in->sin_port = htons((uint16_t)port);
		*len = sizeof *in;
		return AF_INET;
	}
	if (inet_pton(AF_INET6, addr, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)port);
		*len = sizeof *in6;
		return AF_INET6;
	}
	return -1;
}

static int probe_tcp(const char *addr, int port)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int family = fill_addr(addr, port, &ss, &len), fd, err = 0;
	struct pollfd p;

	if (family < 0)
		return EINVAL;
	fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	if (connect(fd, (struct sockaddr *)&ss, len) < 0) {
		err = errno;
		if (err == EINPROGRESS) {
			p = (struct pollfd){ .fd = fd, .events = POLLOUT };
			len = sizeof err;
			err = poll(&p, 1, 3000) == 1 ? (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len),
			                                err) : ETIMEDOUT;
		}
	}
	close(fd);
	return err;
}

static int probe_udp(const char *addr, int port)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int family = fill_addr(addr, port, &ss, &len), fd, err = 0;

	if (family < 0)
		return EINVAL;
	fd = socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	if (sendto(fd, "x", 1, 0, (struct sockaddr *)&ss, len) < 0)
		err = errno;
	close(fd);
	return err;
}

static int probe_socket(int family, int type, int protocol)
{
	int fd = socket(family, type | SOCK_CLOEXEC, protocol);

	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

static int connect_proxy(int proxy_port, bool nonblocking)
{
	struct sockaddr_in in = { .sin_family = AF_INET, .sin_port = htons((uint16_t)proxy_port),
	                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (nonblocking ? SOCK_NONBLOCK : 0), 0);

	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&in, sizeof in) < 0 && errno != EINPROGRESS) {
		close(fd);
		return -1;
	}
	return fd;
}

static bool write_all(int fd, const char *s, size_t len)
{
	while (len) {
		ssize_t n = write(fd, s, len);

		if (n <= 0)
			return false;
		s += n;
		len -= (size_t)n;
	}
	return true;
}

/* Reads up to the blank line that ends a head (or EOF); returns the bytes read. */
static size_t read_head(int fd, char *buf, size_t cap)
{
	size_t len = 0;

	while (len + 1 < cap) {
		ssize_t n = read(fd, buf + len, 1);

		if (n <= 0)
			break;
		len++;
		if (len >= 4 && !memcmp(buf + len - 4, "\r\n\r\n", 4))
			break;
	}
	buf[len] = '\0';
	return len;
}

static void print_status_line(const char *what, const char *head)
{
	printf("%s %.*s\n", what, (int)strcspn(head, "\r\n"), head);
}

static int probe_get(int proxy_port, const char *host, const char *port)
{
	char req[1024], head[8192], body[8192];
	int fd = connect_proxy(proxy_port, false);
	ssize_t n;

	if (fd < 0) {
		printf("proxy %s\n", outcome(errno));
		return 0;
	}
	snprintf(req, sizeof req, "CONNECT %s:%s HTTP/1.1\r\nHost: %s:%s\r\n\r\n", host, port,
	         host, port);
	write_all(fd, req, strlen(req));
	read_head(fd, head, sizeof head);
	print_status_line("connect", head);
	if (strncmp(head, "HTTP/1.1 200", 12) != 0) {
		n = read(fd, body, sizeof body - 1);
		body[n > 0 ? n : 0] = '\0';
		printf("body %s", body);
		close(fd);
		return 0;
	}
	snprintf(req, sizeof req, "GET / HTTP/1.0\r\nHost: %s\r\n\r\n", host);
	write_all(fd, req, strlen(req));
	read_head(fd, head, sizeof head);
	print_status_line("get", head);
	n = read(fd, body, sizeof body - 1);
	body[n > 0 ? n : 0] = '\0';
	printf("body %s", body);
	close(fd);
	return 0;
}

/* Reads exactly len bytes (or fewer at EOF); returns how many. */
static size_t read_exactly(int fd, uint8_t *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, buf + got, len - got);

		if (n <= 0)
			break;
		got += (size_t)n;
	}
	return got;
}

static int probe_socks(int proxy_port, const char *host, const char *port)
{
	uint8_t req[300] = { 5, 1, 0, 5, 1, 0, 3 }, reply[10] = { 0 };
	size_t hlen = strlen(host), len;
	char get[512], head[4096];
	int fd = connect_proxy(proxy_port, false), p = atoi(port);

	if (fd < 0 || hlen > 255) {
		printf("proxy %s\n", outcome(errno));
		return 0;
	}
	req[7] = (uint8_t)hlen;
	memcpy(req + 8, host, hlen);
	req[8 + hlen] = (uint8_t)(p >> 8);
	req[9 + hlen] = (uint8_t)p;
	len = 10 + hlen;
	write_all(fd, (const char *)req, len);
	read_exactly(fd, reply, 2);
	printf("socks method %02x", reply[1]);
	memset(reply, 0, sizeof reply);
	read_exactly(fd, reply, sizeof reply);
	printf(" reply %02x\n", reply[1]);
	if (reply[1] == 0) {
		snprintf(get, sizeof get, "GET / HTTP/1.0\r\nHost: %s\r\n\r\n", host);
		write_all(fd, get, strlen(get));
		read_head(fd, head, sizeof head);
		print_status_line("get", head);
	}
	close(fd);
	return 0;
}

/* ---- many at once ---------------------------------------------------------------------- */

enum { F_CONNECTING, F_HEAD, F_ECHO, F_DONE, F_FAILED };

struct flood_conn {
	int fd, state;
	char buf[256];
	size_t len;
};

static void raise_fd_limit(size_t n)
{
	struct rlimit lim;

	if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < n + 64) {
		lim.rlim_cur = lim.rlim_max < n + 64 ? lim.rlim_max : n + 64;
		setrlimit(RLIMIT_NOFILE, &lim);
	}
}

static void flood_step(struct flood_conn *c, short revents, const char *request, int *connected)
{
	ssize_t n;

	if (revents & (POLLERR | POLLHUP)) {
		c->state = F_FAILED;
		return;
	}
	if (c->state == F_CONNECTING && (revents & POLLOUT)) {
		if (!write_all(c->fd, request, strlen(request)))
			c->state = F_FAILED;
		else
			c->state = F_HEAD;
		return;
	}
	if (!(revents & POLLIN))
		return;
	n = read(c->fd, c->buf + c->len, sizeof c->buf - 1 - c->len);
	if (n <= 0) {
		c->state = F_FAILED;
		return;
	}
	c->len += (size_t)n;
	c->buf[c->len] = '\0';
	if (c->state == F_HEAD && strstr(c->buf, "\r\n\r\n")) {
		if (strncmp(c->buf, "HTTP/1.1 200", 12) != 0) {
			c->state = F_FAILED;
			return;
		}
		(*connected)++;
		c->len = 0;
		c->state = F_ECHO;
		write_all(c->fd, "ping\n", 5);
	} else if (c->state == F_ECHO && c->len >= 5) {
		c->state = strncmp(c->buf, "ping\n", 5) == 0 ? F_DONE : F_FAILED;
	}
}

static int probe_flood(int n, int proxy_port, const char *host, const char *port)
{
	struct flood_conn *c = calloc((size_t)n, sizeof *c);
	struct pollfd *p = calloc((size_t)n, sizeof *p);
	char request[600];
	int connected = 0, echoed = 0, active = n;
	time_t until = time(NULL) + 60;

	raise_fd_limit((size_t)n);
	snprintf(request, sizeof request, "CONNECT %s:%s HTTP/1.1\r\nHost: %s:%s\r\n\r\n", host,
	         port, host, port);
	for (int i = 0; i < n; i++) {
		c[i].fd = connect_proxy(proxy_port, true);
		c[i].state = c[i].fd < 0 ? F_FAILED : F_CONNECTING;
	}
	while (active > 0 && time(NULL) < until) {
		active = 0;
		for (int i = 0; i < n; i++) {
			bool live = c[i].state != F_DONE && c[i].state != F_FAILED;

			p[i] = (struct pollfd){ .fd = live ? c[i].fd : -1,
			                        .events = c[i].state == F_CONNECTING ? POLLOUT : POLLIN };
			active += live;
		}
		if (active == 0 || poll(p, (nfds_t)n, 1000) < 0)
			break;
		for (int i = 0; i < n; i++)
			if (p[i].fd >= 0 && p[i].revents)
				flood_step(&c[i], p[i].revents, request, &connected);
	}
	/* Every connection is still open here: they were all open at once. */
	for (int i = 0; i < n; i++) {
		echoed += c[i].state == F_DONE;
		if (c[i].fd >= 0)
			close(c[i].fd);
	}
	printf("flood %d connected %d echoed %d\n", n, connected, echoed);
	free(c);
	free(p);
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: sbx-netprobe tcp|udp ADDR PORT | raw | packet | ping | "
	        "get|socks PROXY HOST PORT | flood N PROXY HOST PORT\n");
	return 2;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 4 && !strcmp(argv[1], "tcp"))
		printf("tcp %s\n", outcome(probe_tcp(argv[2], atoi(argv[3]))));
	else if (argc == 4 && !strcmp(argv[1], "udp"))
		printf("udp %s\n", outcome(probe_udp(argv[2], atoi(argv[3]))));
	else if (argc == 2 && !strcmp(argv[1], "raw"))
		printf("raw %s\n", outcome(probe_socket(AF_INET, SOCK_RAW, IPPROTO_ICMP)));
	else if (argc == 2 && !strcmp(argv[1], "packet"))
		printf("packet %s\n", outcome(probe_socket(AF_PACKET, SOCK_RAW, 0)));
	else if (argc == 2 && !strcmp(argv[1], "ping"))
		printf("ping %s\n", outcome(probe_socket(AF_INET, SOCK_DGRAM, IPPROTO_ICMP)));
	else if (argc == 5 && !strcmp(argv[1], "get"))
		return probe_get(atoi(argv[2]), argv[3], argv[4]);
	else if (argc == 5 && !strcmp(argv[1], "socks"))
		return probe_socks(atoi(argv[2]), argv[3], argv[4]);
	else if (argc == 6 && !strcmp(argv[1], "flood"))
		return probe_flood(atoi(argv[2]), atoi(argv[3]), argv[4], argv[5]);
	else
		return usage();
	return 0;
}
