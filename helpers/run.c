/* agentsbx-run: the local backend's per-command runner as a program. The protocol is in
 * run_proto.h; the runner itself in runner.c. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "run_proto.h"
#include "runner.h"

#define NORETURN __attribute__((noreturn))

static NORETURN void usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static NORETURN void usage_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("agentsbx-run: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputs("\n", stderr);
	va_end(ap);
	exit(2);
}

static bool parse_u64(const char *s, unsigned long long *out)
{
	char *end;

	if (*s < '0' || *s > '9')
		return false; /* strtoull would accept " -1" */
	errno = 0;
	*out = strtoull(s, &end, 10);
	return errno == 0 && *end == '\0';
}

static void parse_rlimit(const char *arg)
{
	const char *eq = strchr(arg, '=');
	unsigned long long value;

	if (!eq || !parse_u64(eq + 1, &value))
		usage_error("--rlimit '%s': expected NAME=NUMBER", arg);
	if (!sbx_runner_set_rlimit(arg, (size_t)(eq - arg), value))
		usage_error("--rlimit '%s': unknown limit (cpu, fsize, nofile, nproc, as)", arg);
}

/* --control-socket: where the host cannot hand over a socketpair end (the docker backend
 * starts the runner through the Engine's exec API), the runner connects to a SOCK_SEQPACKET
 * socket the host listens on and makes that connection its control channel on fd 3. */
static void connect_control(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof sa.sun_path)
		usage_error("--control-socket '%s': path too long", path);
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0)
		usage_error("--control-socket '%s': %s", path, strerror(errno));
	if (fd != SBX_RUN_CONTROL_FD) {
		if (dup2(fd, SBX_RUN_CONTROL_FD) < 0)
			usage_error("--control-socket: dup2: %s", strerror(errno));
		close(fd);
	}
}

/* --env-clear, --env NAME=VALUE: an environment exactly as the host composed it, where the
 * runner's own was made by someone else (the Engine merges the image's into every exec). */
static void set_env_entry(const char *entry)
{
	const char *eq = strchr(entry, '=');
	char *name;

	if (!eq || eq == entry)
		usage_error("--env '%s': expected NAME=VALUE", entry);
	name = strndup(entry, (size_t)(eq - entry));
	if (!name || setenv(name, eq + 1, 1) < 0)
		usage_error("--env '%s': %s", entry, strerror(errno));
	free(name);
}

static char **parse_args(int argc, char **argv)
{
	bool have_proto = false;
	int i;

	for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
		if (strcmp(argv[i], "--control-socket") == 0 && i + 1 < argc) {
			connect_control(argv[++i]);
		} else if (strcmp(argv[i], "--env-clear") == 0) {
			clearenv();
		} else if (strcmp(argv[i], "--env") == 0 && i + 1 < argc) {
			set_env_entry(argv[++i]);
		} else if (strcmp(argv[i], "--proto") == 0 && i + 1 < argc) {
			if (strcmp(argv[++i], "1") != 0)
				usage_error("unsupported protocol version '%s'", argv[i]);
			have_proto = true;
		} else if (strcmp(argv[i], "--rlimit") == 0 && i + 1 < argc) {
			parse_rlimit(argv[++i]);
		} else {
			usage_error("unexpected argument '%s'", argv[i]);
		}
	}
	if (!have_proto)
		usage_error("missing --proto %d", SBX_RUN_PROTO_VERSION);
	if (i + 1 >= argc)
		usage_error("missing -- COMMAND");
	return argv + i + 1;
}

int main(int argc, char **argv)
{
	char **command = parse_args(argc, argv);

	if (sbx_runner_run(command) < 0)
		usage_error("fd %d is not the control socket", SBX_RUN_CONTROL_FD);
	return 0;
}
