/* A scripted agent session in an `ns` workspace: the "model" is a list of commands, as an agent
 * would issue them, and the harness runs each in the sandbox with a timeout, streams its output
 * and reports how it ended. Some of the commands try to leave the sandbox; watch them fail.
 *
 *   agent_session [CONFIG_JSON]      (default: {"backend":"ns"})
 */
#include <stdio.h>
#include <string.h>

#include <agentsbx/agentsbx.h>

struct step {
	const char *why;          /* what the agent means to do */
	const char *command;
};

static const struct step script[] = {
	{ "look around", "id; hostname; pwd; ls /" },
	{ "write a program and run it",
	  "printf 'print(sum(range(10)))\\n' > sum.py && python3 sum.py || echo no python3" },
	{ "read a host secret", "cat /etc/shadow" },
	{ "see host processes", "ls /proc | grep -c '^[0-9]'" },
	{ "reach the network",
	  "python3 -c 'import socket; socket.create_connection((\"1.1.1.1\", 80), 2)' 2>&1 "
	  "| tail -1" },
	{ "write outside the workspace", "echo pwned > /usr/pwned" },
	{ "tamper with the library's state", "echo forged > .agentsbx/state" },
	{ "leave a daemon behind", "setsid sh -c 'sleep 600 &' ; echo started" },
	{ "run too long", "sleep 5" },
};

/* Output arrives in chunks, not lines: indent each line as it starts. */
static void stream(int stream_id, const char *data, size_t len, void *userdata)
{
	static int at_line_start = 1;

	(void)stream_id;
	(void)userdata;
	for (size_t i = 0; i < len; i++) {
		if (at_line_start)
			fputs("    | ", stdout);
		putchar(data[i]);
		at_line_start = data[i] == '\n';
	}
}

static void run_step(sbx_workspace *ws, const struct step *s)
{
	sbx_exec_opts opts = {
		.size = sizeof opts,
		.timeout_ms = 2000,
		.flags = SBX_EXEC_MERGE_STDERR,
		.on_output = stream,
	};
	sbx_result *res = NULL;

	printf("agent: %s\n  $ %s\n", s->why, s->command);
	fflush(stdout);
	if (sbx_exec_shell(ws, s->command, &opts, &res) < 0) {
		printf("  error: %s\n\n", sbx_last_error());
		return;
	}
	if (sbx_result_timed_out(res))
		printf("  -> killed after %lld ms (timeout), with everything it started\n\n",
		       (long long)sbx_result_duration_ms(res));
	else
		printf("  -> exit %d in %lld ms\n\n", sbx_result_exit_code(res),
		       (long long)sbx_result_duration_ms(res));
	sbx_result_free(res);
}

int main(int argc, char **argv)
{
	const char *config = argc > 1 ? argv[1] : "{\"backend\":\"ns\"}";
	sbx_workspace *ws = NULL;

	if (sbx_workspace_open(config, &ws) < 0) {
		fprintf(stderr, "agent_session: %s\n", sbx_last_error());
		return 1;
	}
	printf("workspace %s on backend '%s', root %s\n\n", sbx_workspace_id(ws),
	       sbx_workspace_backend(ws), sbx_workspace_root(ws));
	for (size_t i = 0; i < sizeof script / sizeof script[0]; i++)
		run_step(ws, &script[i]);
	/* Closing ends the sandbox: the daemon the agent left behind dies with it. */
	return sbx_workspace_close(ws) < 0;
}
