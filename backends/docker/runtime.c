/* The OCI runtime a workspace's container runs on. "docker.runtime" names one the engine has
 * registered (runc, runsc for gVisor's user-space kernel, kata-runtime, crun...); it becomes
 * the container's HostConfig.Runtime. The engine's GET /info says which it has and which is
 * its default: an open names an unknown runtime's alternatives instead of letting the create
 * fail, and a container found again by its labels is used only when it runs on the runtime
 * this open asks for (the configured one, else the engine's default): a container made by
 * another hand, or before the default changed, is replaced and the audit log says what was
 * found. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "docker.h"
#include "util/cleanup.h"
#include "util/auditlog.h"
#include "util/error.h"
#include "util/http.h"

#define RUNTIME_NAME_MAX 128

/* Names as daemon.json's "runtimes" keys are written in practice (runc, io.containerd.runc.v2,
 * kata-runtime): nothing that could mean something else in a JSON body or a message. */
static bool runtime_name_ok(const char *s, size_t len)
{
	return docker_name_ok(s, len, 1, RUNTIME_NAME_MAX);
}

int docker_take_runtime(const sbx_json *v, struct docker_options *o)
{
	if (v->type != SBX_JSON_STRING || !runtime_name_ok(v->str, v->len))
		return sbx_fail(-SBX_ECONFIG, "config: key 'docker.runtime': expected the name of a "
		                "runtime the engine has registered ([A-Za-z0-9][A-Za-z0-9_.-]*, at "
		                "most %d characters), such as \"runc\" or \"runsc\"", RUNTIME_NAME_MAX);
	free(o->runtime);
	if (!(o->runtime = strdup(v->str)))
		return sbx_fail(-SBX_ENOMEM, "docker: out of memory");
	return 0;
}

void docker_runtimes_free(struct docker_runtimes *rt)
{
	for (size_t i = 0; i < rt->n; i++)
		free(rt->list[i].name);
	free(rt->list);
	free(rt->default_name);
	*rt = (struct docker_runtimes){ 0 };
}

/* The value of one of gVisor's flags in a runtime's arguments ("-name=value", "--name
 * value"; the last one counts), or fallback. */
static const char *flag_value(const sbx_json *args, const char *name, const char *fallback)
{
	const char *value = fallback;
	size_t n = strlen(name);

	for (size_t i = 0; args && args->type == SBX_JSON_ARRAY && i < args->n; i++) {
		const sbx_json *a = args->items[i], *next = i + 1 < args->n ? args->items[i + 1] : NULL;
		const char *flag;

		if (a->type != SBX_JSON_STRING)
			continue;
		flag = a->str + strspn(a->str, "-");
		if (!strncmp(flag, name, n) && flag[n] == '=')
			value = flag + n + 1;
		else if (!strcmp(flag, name) && next && next->type == SBX_JSON_STRING)
			value = next->str;
		/* The deprecated spelling of --host-uds=all. */
		else if (!strcmp(name, "host-uds") && (!strcmp(flag, "fsgofer-host-uds") ||
		                                        !strcmp(flag, "fsgofer-host-uds=true")))
			value = "all";
	}
	return value;
}

/* What an entry of /info's "Runtimes" says: gVisor is a runtime whose program is runsc; its
 * host Unix sockets are closed to what runs inside unless --host-uds is open or all, and
 * every command's runner, and the exec server, connect to a socket the host listens on in a
 * bound folder (control.c). */
static void read_runtime(const sbx_json *entry, struct docker_runtime *rt)
{
	const sbx_json *path = sbx_json_get(entry, "path");
	const char *base, *uds;

	if (!path || path->type != SBX_JSON_STRING)
		return;
	base = strrchr(path->str, '/') ? strrchr(path->str, '/') + 1 : path->str;
	rt->gvisor = strncmp(base, "runsc", 5) == 0;
	uds = flag_value(sbx_json_get(entry, "runtimeArgs"), "host-uds", "none");
	rt->sockets_closed = rt->gvisor && strcmp(uds, "open") != 0 && strcmp(uds, "all") != 0;
	rt->no_network = rt->gvisor &&
	                 !strcmp(flag_value(sbx_json_get(entry, "runtimeArgs"), "network", "sandbox"),
	                         "none");
}

/* The keys of /info's "Runtimes" object and its "DefaultRuntime". */
static int read_runtimes(const sbx_json *info, struct docker_runtimes *rt)
{
	const sbx_json *list = sbx_json_get(info, "Runtimes");
	const sbx_json *def = sbx_json_get(info, "DefaultRuntime");

	if (!list || list->type != SBX_JSON_OBJECT)
		return sbx_fail(-SBX_EPROTO, "docker: the engine's /info lists no Runtimes");
	if (list->n && !(rt->list = calloc(list->n, sizeof *rt->list)))
		return sbx_fail(-SBX_ENOMEM, "docker: out of memory");
	for (size_t i = 0; i < list->n; i++) {
		if (!runtime_name_ok(list->keys[i], list->key_lens[i]))
			continue;     /* nothing a config could name */
		read_runtime(list->items[i], &rt->list[rt->n]);
		if (!(rt->list[rt->n++].name = strdup(list->keys[i])))
			return sbx_fail(-SBX_ENOMEM, "docker: out of memory");
	}
	if (def && def->type == SBX_JSON_STRING && runtime_name_ok(def->str, def->len) &&
	    !(rt->default_name = strdup(def->str)))
		return sbx_fail(-SBX_ENOMEM, "docker: out of memory");
	return 0;
}

int docker_runtimes_parse(const char *json, size_t len, struct docker_runtimes *rt)
{
	sbx_json *info = NULL;
	char err[160];
	int r;

	*rt = (struct docker_runtimes){ 0 };
	if (sbx_json_parse(json, len, &info, err, sizeof err) < 0)
		return sbx_fail(-SBX_EPROTO, "docker: the engine's /info is not JSON: %s", err);
	r = info->type == SBX_JSON_OBJECT ? read_runtimes(info, rt)
	                                  : sbx_fail(-SBX_EPROTO, "docker: the engine's /info is "
	                                             "not an object");
	sbx_json_free(info);
	if (r < 0)
		docker_runtimes_free(rt);
	return r;
}

int docker_runtimes_get(const struct docker_engine *e, struct docker_runtimes *rt)
{
	struct docker_raw_call call = { .method = "GET", .path = "/info",
	                                .what = "ask the engine its runtimes" };
	struct sbx_http_response resp;
	int r;

	*rt = (struct docker_runtimes){ 0 };
	if ((r = docker_call_raw(e, &call, &resp)) == 0)
		r = docker_runtimes_parse(resp.body.data ? resp.body.data : "", resp.body.len, rt);
	sbx_http_response_free(&resp);
	return r;
}

const struct docker_runtime *docker_runtimes_find(const struct docker_runtimes *rt,
                                                  const char *name)
{
	for (size_t i = 0; name && i < rt->n; i++)
		if (!strcmp(rt->list[i].name, name))
			return &rt->list[i];
	return NULL;
}

void docker_runtimes_describe(const struct docker_runtimes *rt, sbx_buf *out)
{
	for (size_t i = 0; i < rt->n; i++) {
		const struct docker_runtime *r = &rt->list[i];

		sbx_buf_printf(out, "%s%s", i ? ", " : "", r->name);
		if (rt->default_name && !strcmp(r->name, rt->default_name))
			sbx_buf_puts(out, " (default)");
		if (r->sockets_closed)
			sbx_buf_puts(out, " (gVisor without --host-uds=open: unusable here)");
		else if (r->gvisor)
			sbx_buf_puts(out, " (gVisor)");
	}
	if (!rt->n)
		sbx_buf_puts(out, "none");
}

#define HOST_UDS_ADVICE "gVisor lets what runs inside connect to the host's Unix sockets only " \
	"with --host-uds=open (or =all) among the runtime's runtimeArgs in dockerd's daemon.json, " \
	"and every command reaches this host process through one"

/* What gVisor cannot do for us, said before a container is made (and, for the sockets,
 * before the exec server waits in vain for a minute). */
static int usable_runtime(const struct docker_ws *ws, const struct docker_runtime *rt)
{
	if (!rt->gvisor)
		return 0;
	if (rt->sockets_closed)
		return sbx_fail(-SBX_EBACKEND, "config: key 'docker.runtime': runtime '%s' is "
		                "gVisor registered without --host-uds=open: %s", rt->name,
		                HOST_UDS_ADVICE);
	/* The Sentry runs every process inside on host threads of its own (with the ptrace
	 * platform several per process), all in the container's cgroup. */
	if (ws->limits.pids)
		return sbx_fail(-SBX_ECONFIG, "config: key 'limits.pids': not with gVisor (docker "
		                "runtime '%s'): the engine's pids limit would count gVisor's own host "
		                "threads, several per process inside, and stop the whole sandbox when "
		                "reached instead of failing a fork; limits.processes (RLIMIT_NPROC, "
		                "which gVisor enforces) bounds the processes of each command", rt->name);
	/* The bridge hands every accepted connection to the host's proxy as an fd; on gVisor
	 * those are sockets of its own network stack, which no host process can hold. */
	if (ws->allowlist)
		return sbx_fail(-SBX_ECONFIG, "config: key 'network.mode': \"allowlist\" is not "
		                "available with gVisor (docker runtime '%s'): the connections inside are "
		                "sockets of gVisor's own network stack, which cannot be handed to the "
		                "host's proxy; use mode \"none\", or runc", rt->name);
	if (rt->no_network && strcmp(ws->network, "none") != 0)
		return sbx_fail(-SBX_ECONFIG, "config: key 'network.mode': \"host\" cannot work on "
		                "gVisor registered with --network=none (docker runtime '%s'): its "
		                "commands would have no network at all", rt->name);
	/* gVisor imports a host socket only once it is connected. */
	if (ws->opts.detached && ws->server)
		return sbx_fail(-SBX_ECONFIG, "config: key 'docker.detached': not with exec "
		                "\"server\" on gVisor (docker runtime '%s'): gVisor cannot listen on "
		                "the socket a detached exec server is handed by the host; set "
		                "docker.exec to \"api\" for a detached gVisor workspace", rt->name);
	return 0;
}

/* An unknown runtime is what this engine lacks, as a missing engine is: -SBX_EBACKEND, with
 * the key and what the engine has instead. */
static int unknown_runtime(const char *name, const struct docker_runtimes *rt)
{
	sbx_buf list = { 0 };
	int r;

	docker_runtimes_describe(rt, &list);
	r = list.oom ? sbx_fail(-SBX_ENOMEM, "docker: out of memory")
	             : sbx_fail(-SBX_EBACKEND, "config: key 'docker.runtime': the engine has no "
	                        "runtime '%s' (registered: %s; a runtime is registered in dockerd's "
	                        "daemon.json \"runtimes\")", name, list.data);
	sbx_buf_free(&list);
	return r;
}

/* The runtime the container runs on, from /info: the configured one, else the engine's
 * default. Refused when unknown or not usable with this configuration. */
static int resolve_runtime(struct docker_ws *ws)
{
	struct docker_runtimes rt;
	const struct docker_runtime *found;
	const char *name;
	int r;

	if ((r = docker_runtimes_get(&ws->engine, &rt)) < 0)
		return r;
	name = ws->opts.runtime ? ws->opts.runtime : rt.default_name;
	found = docker_runtimes_find(&rt, name);
	if (!name)
		r = sbx_fail(-SBX_EPROTO, "docker: the engine's /info names no DefaultRuntime");
	else if (!found)
		r = unknown_runtime(name, &rt);
	else if ((r = usable_runtime(ws, found)) == 0 && !(ws->runtime = strdup(name)))
		r = sbx_fail(-SBX_ENOMEM, "docker: out of memory");
	docker_runtimes_free(&rt);
	return r;
}

/* Asked only where the answer matters: a named runtime, the settings gVisor refuses (a
 * network, pids, a detached server), and a detached container that will be found again. An ephemeral open on the default runtime
 * keeps its one fewer round trip (a container it finds after all is checked then). */
int docker_runtime_check(struct docker_ws *ws)
{
	if (!ws->opts.runtime && !ws->limits.pids && !ws->opts.detached && !ws->allowlist &&
	    !strcmp(ws->network, "none"))
		return 0;
	return resolve_runtime(ws);
}

static int wanted_runtime(struct docker_ws *ws)
{
	return ws->runtime ? 0 : resolve_runtime(ws);
}

/* The HostConfig.Runtime of container id (the engine fills in its default at create). */
static int container_runtime(struct docker_ws *ws, const char *id, char **runtime)
{
	sbx_json *info = NULL;
	const sbx_json *hc, *rt;
	long status;
	int r;

	*runtime = NULL;
	if ((r = docker_inspect_container(&ws->engine, id, &status, &info)) < 0)
		return r;
	hc = sbx_json_get(info, "HostConfig");
	rt = hc ? sbx_json_get(hc, "Runtime") : NULL;
	if (rt && rt->type == SBX_JSON_STRING && strlen(rt->str) == rt->len)
		*runtime = strdup(rt->str);
	else
		*runtime = strdup("");   /* none named: not the one we want, whatever that is */
	sbx_json_free(info);
	return *runtime ? 0 : sbx_fail(-SBX_ENOMEM, "docker: out of memory");
}

int docker_runtime_matches(struct docker_ws *ws, const char *id, bool *matches)
{
	_cleanup_free_ char *found = NULL;
	int r;

	*matches = false;
	if ((r = wanted_runtime(ws)) < 0 || (r = container_runtime(ws, id, &found)) < 0)
		return r;
	*matches = !strcmp(found, ws->runtime);
	if (!*matches) {
		free(ws->replaced_why);
		if (asprintf(&ws->replaced_why, "container %.12s runs on runtime '%.*s', not on '%s' "
		             "as this workspace asks (%s)", id, RUNTIME_NAME_MAX, *found ? found : "?",
		             ws->runtime, ws->opts.runtime ? "docker.runtime" : "the engine's "
		             "default") < 0)
			ws->replaced_why = NULL;
	}
	return 0;
}

void docker_audit_replaced(struct docker_ws *ws, const sbx_backend_config *cfg)
{
	char now[64];
	sbx_buf b = { 0 };

	if (!ws->replaced_why)
		return;
	if (!SBX_BACKEND_CONFIG_HAS(cfg, audit_keep) || cfg->audit_dir_fd < 0)
		goto done;
	sbx_auditlog_time(now, sizeof now);
	sbx_buf_printf(&b, "{\"time\":\"%s\",\"workspace\":", now);
	sbx_buf_json_string(&b, ws->id, strlen(ws->id));
	sbx_buf_puts(&b, ",\"kind\":\"docker\",\"event\":\"container-replaced\",\"reason\":");
	sbx_buf_json_string(&b, ws->replaced_why, strlen(ws->replaced_why));
	sbx_buf_puts(&b, "}\n");
	if (!b.oom)
		sbx_auditlog_append(cfg->audit_dir_fd, b.data, b.len, cfg->audit_max_bytes,
		                    cfg->audit_keep);
	sbx_buf_free(&b);
done:
	free(ws->replaced_why);
	ws->replaced_why = NULL;
}

void docker_runtime_hint(struct docker_ws *ws, char *out, size_t len)
{
	struct docker_runtimes rt;
	const struct docker_runtime *found;

	out[0] = '\0';
	if (docker_runtimes_get(&ws->engine, &rt) < 0)
		return;
	found = docker_runtimes_find(&rt, ws->opts.runtime ? ws->opts.runtime : rt.default_name);
	if (found && found->sockets_closed)
		snprintf(out, len, "; the container runs on runtime '%s': %s", found->name,
		         HOST_UDS_ADVICE);
	docker_runtimes_free(&rt);
}
