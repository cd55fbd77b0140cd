/* agentsbx-run: the local backend's per-command runner as a program. The protocol is in
 * run_proto.h; the runner itself in runner.c. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static char **parse_args(int argc, char **argv)
{
	bool have_proto = false;
	int i;

	for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
		if (strcmp(argv[i], "--proto") == 0 && i + 1 < argc) {
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
