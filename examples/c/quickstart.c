/* The README's example: open a workspace, run a command, read its output and exit code. */
#include <stdio.h>
#include <agentsbx/agentsbx.h>

int main(void)
{
	sbx_workspace *ws;
	sbx_result *res;
	const char *argv[] = { "sh", "-c", "echo hello from $(basename \"$PWD\"); exit 3", NULL };
	sbx_exec_opts opts = { .size = sizeof opts, .timeout_ms = 5000 };

	if (sbx_workspace_open("{\"backend\":\"ns\"}", &ws) < 0 ||
	    sbx_exec(ws, argv, &opts, &res) < 0) {
		fprintf(stderr, "agentsbx: %s\n", sbx_last_error());
		return 1;
	}
	printf("stdout: %s", sbx_result_stdout(res, NULL));
	printf("exit code: %d\n", sbx_result_exit_code(res));
	sbx_result_free(res);
	return sbx_workspace_close(ws) < 0;
}
