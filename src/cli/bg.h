/* agentsbx bg: long-running commands that outlive the CLI process that started them. */
#ifndef SBX_CLI_BG_H
#define SBX_CLI_BG_H

extern const char sbx_cli_bg_usage[];

/* The workspace configuration the shared options describe (main.c's build_config):
 * 0 with *out malloc'ed, or the exit code to end with. */
int sbx_cli_build_config(const char *config, const char *backend, const char *workdir,
                         char **out);

int sbx_cli_bg(int argc, char **argv);

#endif
