/* `agentsbx doctor`'s line on the users a sandbox runs as (src/util/idmap.h). */
#ifndef SBX_CLI_USERS_H
#define SBX_CLI_USERS_H

/* Prints "users: ..." for the configuration config_json (validated JSON) of a sandbox
 * backend (ns, bwrap; nothing for another): the mapping a
 * sandbox of this process gets, and whether its workdir (or, without one, the directory
 * temporary workspaces go to) can be given through an idmapped mount. Returns 1 when such a
 * sandbox would be refused, else 0. */
int cli_print_users(const char *config_json);

#endif
