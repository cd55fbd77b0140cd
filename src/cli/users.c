/* See users.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/users.h"
#include "config.h"
#include "util/idmap.h"
#include "backends/sandbox/sandbox.h"

int cli_print_users(const char *config_json)
{
	struct sbx_sandbox_options so = { 0 };
	const char *dir, *tmp = getenv("TMPDIR");
	sbx_config *cfg = NULL;
	bool sandbox, ok;
	char line[1024];

	if (sbx_config_parse(config_json, &cfg) < 0)
		return 1;
	sandbox = !strcmp(cfg->backend, "ns") || !strcmp(cfg->backend, "bwrap");
	if (!sandbox) {        /* its own users: docker's are the image's or the config's */
		sbx_config_free(cfg);
		return 0;
	}
	if (sbx_sandbox_parse_options(cfg->backend, cfg->backend_options,
	                                         !strcmp(cfg->backend, "ns"), &so) < 0) {
		printf("\nusers: %s\n", sbx_last_error());
		sbx_config_free(cfg);
		return 1;
	}
	dir = cfg->workdir ? cfg->workdir : tmp && *tmp ? tmp : "/tmp";
	ok = sbx_idmap_describe(so.subid_user, dir, so.allow_host_root, line, sizeof line);
	printf("\nusers: %s%s\n", line, cfg->workdir ? "" : " (where temporary workspaces go)");
	sbx_sandbox_free_options(&so);
	sbx_config_free(cfg);
	return ok ? 0 : 1;
}
