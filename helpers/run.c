/* agentsbx-run: the local backend's per-command runner as a program. The protocol is in
 * run_proto.h; the runner itself in runner.c. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "peer.h"
#include "proto/run_proto.h"
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
	int r = sbx_peer_connect_at(path, SBX_RUN_CONTROL_FD);

	if (r < 0)
		usage_error("--control-socket '%s': %s", path, strerror(-r));
}

/* --env-only, --env-keep NAME: the environment exactly as the host composed it, where the
 * runner's own was made by someone else (the Engine merges the image's into every exec). The
 * values come in the environment, the names to keep on the command line: values such as
 * secrets never show in a process listing. */
static bool env_only;
static char **env_keep;
static size_t env_keep_n;

static void keep_env_name(const char *name)
{
	char **grown = realloc(env_keep, (env_keep_n + 1) * sizeof *env_keep);

	if (!grown)
		usage_error("--env-keep: out of memory");
	env_keep = grown;
	env_keep[env_keep_n++] = (char *)name;
}

static bool kept(const char *entry)
{
	size_t len = strcspn(entry, "=");

	for (size_t i = 0; i < env_keep_n; i++)
		if (strlen(env_keep[i]) == len && !strncmp(env_keep[i], entry, len))
			return true;
	return false;
}

static void filter_environment(void)
{
	size_t n = 0, out = 0;

	if (!env_only)
		return;
	while (environ && environ[n])
		n++;
	/* In place: environ is ours to rearrange, and nothing else holds its entries. */
	for (size_t i = 0; i < n; i++)
		if (kept(environ[i]))
			environ[out++] = environ[i];
	if (environ)
		environ[out] = NULL;
	free(env_keep);
}

/* --stdio-from-control: the host sends the command's stdin, stdout and stderr (SCM_RIGHTS, in
 * that order) as the first message on the control channel, so that the command writes
 * straight into the host's pipes, as a local command does. */
static void receive_stdio(void)
{
	static const int stdio[3] = { 0, 1, 2 };
	int r = sbx_peer_receive_fds_at(SBX_RUN_CONTROL_FD, stdio, 3);

	if (r < 0)
		usage_error("--stdio-from-control: no stdio from the host: %s", strerror(-r));
	/* dup2 leaves close-on-exec off: the command gets these. */
}

static char **parse_args(int argc, char **argv)
{
	bool have_proto = false;
	int i;

	for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
		if (strcmp(argv[i], "--control-socket") == 0 && i + 1 < argc) {
			connect_control(argv[++i]);
		} else if (strcmp(argv[i], "--stdio-from-control") == 0) {
			receive_stdio();
		} else if (strcmp(argv[i], "--env-only") == 0) {
			env_only = true;
		} else if (strcmp(argv[i], "--env-keep") == 0 && i + 1 < argc) {
			keep_env_name(argv[++i]);
		} else if (strcmp(argv[i], "--proto") == 0 && i + 1 < argc) {
			if (strcmp(argv[++i], "1") != 0)
				usage_error("unsupported protocol version '%s'", argv[i]);
			have_proto = true;
		} else if (strcmp(argv[i], "--rlimit") == 0 && i + 1 < argc) {
			parse_rlimit(argv[++i]);
		} else if (strcmp(argv[i], "--pty") == 0 && i + 1 < argc) {
			if (!sbx_runner_set_pty(argv[++i]))
				usage_error("--pty '%s': expected ROWSxCOLS", argv[i]);
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

	filter_environment();
	if (sbx_runner_run(command) < 0)
		usage_error("fd %d is not the control socket", SBX_RUN_CONTROL_FD);
	return 0;
}
