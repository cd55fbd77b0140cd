/* See users.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/users.h"
#include "config.h"
#include "backends/sandbox/sandbox.h"

int cli_print_users(const char *config_json)
{
	const char *dir, *tmp = getenv("TMPDIR");
	sbx_config *cfg = NULL;
	char line[1024];
	bool ok = true;
	int r;

	if (sbx_config_parse(config_json, &cfg) < 0)
		return 1;
	dir = cfg->workdir ? cfg->workdir : tmp && *tmp ? tmp : "/tmp";
	/* Only the resident sandbox has these users: docker's are the image's or the config's. */
	r = sbx_sandbox_describe_users(cfg->backend, cfg->backend_options, dir, line, sizeof line,
	                               &ok);
	if (r < 0)
		printf("\nusers: %s\n", sbx_last_error());
	else if (r == 0)
		printf("\nusers: %s%s\n", line, cfg->workdir ? "" : " (where temporary workspaces go)");
	sbx_config_free(cfg);
	return r < 0 || !ok ? 1 : 0;
}
