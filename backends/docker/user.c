/* Who the container's processes are, as the host sees them. A numeric docker.user says so
 * itself; a user name resolves inside the image only. For a name, the engine tells which
 * host process is the container's main process (State.Pid) and /proc tells its effective
 * uid: that is the uid a detached exec server listens with, so that a later host process
 * can check the socket it reattaches to (sbx_attach_connect_as) for a named user too. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "docker.h"
#include "util/error.h"

/* The numeric part of "uid[:gid]", or -1 for a name. */
static uid_t numeric_uid(const char *user)
{
	char *end;
	unsigned long uid = strtoul(user, &end, 10);

	if (end != user && (*end == '\0' || *end == ':') && uid < (unsigned long)(uid_t)-1)
		return (uid_t)uid;
	return (uid_t)-1;
}

static int main_pid(struct docker_ws *ws, long *pid)
{
	sbx_json *info = NULL;
	const sbx_json *state, *p;
	long status;
	int r;

	if ((r = docker_inspect_container(&ws->engine, ws->container, &status, &info)) < 0)
		return r;
	state = sbx_json_get(info, "State");
	p = state ? sbx_json_get(state, "Pid") : NULL;
	*pid = p && p->type == SBX_JSON_INT && p->i > 1 ? (long)p->i : 0;
	sbx_json_free(info);
	if (!*pid)
		return sbx_fail(-SBX_EPROTO, "docker: the engine names no main process of container "
		                "%.12s", ws->container);
	return 0;
}

/* The effective uid in /proc/<pid>/status ("Uid: real effective saved fs"). */
static int proc_euid(long pid, uid_t *uid)
{
	char path[64], line[256];
	unsigned long real, eff;
	FILE *f;
	int r = -1;

	snprintf(path, sizeof path, "/proc/%ld/status", pid);
	if (!(f = fopen(path, "re")))
		return sbx_fail(-SBX_EBACKEND, "docker: the container's main process (%ld) is not "
		                "visible here: is the engine on this machine?", pid);
	while (r < 0 && fgets(line, sizeof line, f))
		if (sscanf(line, "Uid: %lu %lu", &real, &eff) == 2) {
			*uid = (uid_t)eff;
			r = 0;
		}
	fclose(f);
	return r == 0 ? 0 : sbx_fail(-SBX_EPROTO, "docker: %s has no Uid line", path);
}

int docker_container_uid(struct docker_ws *ws, uid_t *uid)
{
	long pid;
	int r;

	if ((*uid = numeric_uid(ws->user)) != (uid_t)-1)
		return 0;
	if ((r = main_pid(ws, &pid)) < 0)
		return r;
	return proc_euid(pid, uid);
}
