/* The core's half of a workspace's network policy: which mode the backend must enforce, what
 * the audit log says about it, and changing it on an open workspace. The backend (and for
 * "allowlist" its proxy, helpers/proxy/) enforces; the core validates and records. */
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "audit.h"
#include "internal.h"
#include "network.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/json.h"
#include "util/netpolicy.h"

static uint32_t cap_of(const char *mode)
{
	if (!strcmp(mode, "none"))
		return SBX_BACKEND_CAP_NETWORK_NONE;
	if (!strcmp(mode, "allowlist"))
		return SBX_BACKEND_CAP_NETWORK_ALLOWLIST;
	return SBX_BACKEND_CAP_NETWORK_HOST;
}

static const char *why_not(const char *mode)
{
	if (!strcmp(mode, "allowlist"))
		return ": it has no network of its own for a proxy to be the only way out of";
	if (!strcmp(mode, "none"))
		return ": its commands share the host's network";
	return "";
}

int sbx_network_choose_mode(const sbx_workspace *ws, const char **mode)
{
	uint32_t caps = ws->caps;
	const char *asked = ws->cfg->network_mode;

	if (!asked) {
		*mode = (caps & SBX_BACKEND_CAP_NETWORK_NONE) ? "none" : "host";
		return 0;
	}
	if (!(caps & cap_of(asked)))
		return sbx_fail(-SBX_ECONFIG, "config: key 'network.mode': backend '%s' cannot "
		                "enforce '%s'%s", ws->ops->name, asked, why_not(asked));
	*mode = asked;
	return 0;
}

/* The lists of a network object, for the audit record (NULL members are left out). */
static void audit_lists(sbx_audit_rec *rec, const char *network_json)
{
	sbx_json *v = NULL;
	char err[64];

	if (!network_json ||
	    sbx_json_parse(network_json, strlen(network_json), &v, err, sizeof err) < 0)
		return;
	for (const char *const *k = (const char *const[]){ "allow", "deny", NULL }; *k; k++) {
		const sbx_json *list = sbx_json_get(v, *k);

		if (list)
			sbx_audit_json(rec, *k, list);
	}
	sbx_json_free(v);
}

static void audit_mode(sbx_audit_rec *rec, const char *mode)
{
	sbx_audit_str(rec, "mode", mode);
	if (!strcmp(mode, "host"))
		sbx_audit_str(rec, "exposure", "commands share the host's network: every address "
		              "and port the host reaches, its loopback services included");
}

void sbx_network_audit_open(sbx_workspace *ws, const char *mode)
{
	sbx_audit_rec rec;

	sbx_audit_begin(&rec, ws, "network");
	sbx_audit_str(&rec, "event", "open");
	audit_mode(&rec, mode);
	if (!strcmp(mode, "allowlist"))
		audit_lists(&rec, ws->cfg->network_json);
	sbx_audit_end(&rec);
}

/* The backend's set_network, where its table has one. */
static int backend_set_network(sbx_workspace *ws, const char *json)
{
	const sbx_backend_ops *ops = ws->ops;

	if (!ops->set_network)
		return sbx_fail(-SBX_ENOSYS, "sbx_workspace_set_network: backend '%s' cannot change "
		                "the network policy of an open workspace", ops->name);
	return ops->set_network(ws->state, json);
}

static int apply_policy(sbx_workspace *ws, char *mode, char *json)
{
	const char *current = ws->network_mode;
	int r;

	if (strcmp(current, mode) != 0)
		return sbx_fail(-SBX_ENOSYS, "sbx_workspace_set_network: key 'network.mode': the "
		                "workspace runs with '%s', and a running sandbox cannot change to '%s' "
		                "(open a new workspace; to cut one off, keep \"allowlist\" with an empty "
		                "\"allow\")", current, mode);
	if ((r = backend_set_network(ws, json)) < 0)
		return r;
	free(ws->cfg->network_mode);
	free(ws->cfg->network_json);
	ws->cfg->network_mode = mode;
	ws->cfg->network_json = json;
	return 0;
}

int sbx_workspace_set_network(sbx_workspace *ws, const char *network_json)
{
	_cleanup_free_ char *mode = NULL, *json = NULL;
	sbx_audit_rec rec;
	int r;

	if (!ws)
		return sbx_fail(-SBX_EINVAL, "sbx_workspace_set_network: ws must not be NULL");
	if ((r = sbx_config_parse_network(network_json, "sbx_workspace_set_network", &mode,
	                                  &json)) < 0)
		return r;
	pthread_mutex_lock(&ws->network_lock);
	sbx_audit_begin(&rec, ws, "network");
	sbx_audit_str(&rec, "event", "set");
	audit_mode(&rec, mode);
	audit_lists(&rec, json);
	r = apply_policy(ws, mode, json);
	if (r == 0) {
		mode = json = NULL;     /* the config owns them now */
		sbx_audit_str(&rec, "result", "ok");
	} else {
		sbx_audit_str(&rec, "result", "refused");
		sbx_audit_str(&rec, "error", sbx_last_error());
	}
	sbx_audit_end(&rec);
	pthread_mutex_unlock(&ws->network_lock);
	return r;
}

/* ---- the library's own connections ---- */

struct host_decision {
	const char *decision;        /* "allow" or "deny" */
	const char *rule;
	const char *reason;
	char address[64];
};

static void audit_host_connect(sbx_workspace *ws, const char *who, const char *host,
                               unsigned port, const struct host_decision *d)
{
	sbx_audit_rec rec;

	sbx_audit_begin(&rec, ws, "network");
	sbx_audit_str(&rec, "event", "host-connect");
	sbx_audit_str(&rec, "for", who);
	sbx_audit_str(&rec, "decision", d->decision);
	sbx_audit_str(&rec, "rule", d->rule);
	sbx_audit_str(&rec, "reason", d->reason);
	sbx_audit_str(&rec, "host", host);
	sbx_audit_int(&rec, "port", port);
	if (d->address[0])
		sbx_audit_str(&rec, "address", d->address);
	sbx_audit_end(&rec);
}

/* Step 2 of the allowlist for a name: the first resolved address the policy lets through. */
static int pick_address(const struct sbx_netpolicy *p, const struct sbx_nettarget *t,
                        bool exact_name, struct sbx_netverdict *refusal,
                        struct sbx_netaddr *out)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res, *ai;
	int r = getaddrinfo(t->name, NULL, &hints, &res);

	if (r != 0) {
		snprintf(refusal->reason, sizeof refusal->reason, "cannot resolve %s: %s", t->name,
		         gai_strerror(r));
		snprintf(refusal->rule, sizeof refusal->rule, "resolve");
		return -1;
	}
	r = -1;
	for (ai = res; ai && r < 0; ai = ai->ai_next) {
		struct sbx_netaddr a;

		if (sbx_netaddr_from_sockaddr(ai->ai_addr, &a) == 0 &&
		    sbx_netpolicy_check_address(p, &a, t->port, exact_name, refusal)) {
			*out = a;
			r = 0;
		}
	}
	freeaddrinfo(res);
	return r;
}

/* Mode "allowlist": fills d, and pin when a name passed. */
static void decide_allowlist(const char *network_json, const char *host, unsigned port,
                             struct host_decision *d, struct sbx_netverdict *v, char *pin,
                             size_t pin_len)
{
	struct sbx_network net = { 0 };
	struct sbx_nettarget t;
	struct sbx_netaddr a;
	sbx_json *doc = NULL;
	char err[256];

	d->decision = "deny";
	d->rule = v->rule;
	d->reason = v->reason;
	if (!network_json || sbx_json_parse(network_json, strlen(network_json), &doc, err,
	                                    sizeof err) < 0 ||
	    sbx_network_parse(doc, &net, err, sizeof err) < 0) {
		snprintf(v->rule, sizeof v->rule, "policy");
		snprintf(v->reason, sizeof v->reason, "the workspace's network policy cannot be read");
	} else if (sbx_nettarget_parse(host, strlen(host), (uint16_t)port, &t) < 0) {
		snprintf(v->rule, sizeof v->rule, "target");
		snprintf(v->reason, sizeof v->reason, "'%.200s' is not a host name or IP address the "
		         "policy can judge", host);
	} else if (sbx_netpolicy_check(&net.policy, &t, v), v->allowed) {
		if (!t.is_name) {
			d->decision = "allow";
			sbx_netaddr_format(&t.addr, d->address, sizeof d->address);
		} else if (pick_address(&net.policy, &t, v->exact_name, v, &a) == 0) {
			d->decision = "allow";
			sbx_netaddr_format(&a, d->address, sizeof d->address);
			/* curl takes IPv6 addresses in brackets here */
			snprintf(pin, pin_len, a.family == 6 ? "%s:%u:[%s]" : "%s:%u:%s", t.name, port,
			         d->address);
		}
	}
	sbx_network_free(&net);
	sbx_json_free(doc);
}

int sbx_network_host_connect(sbx_workspace *ws, const char *who, const char *host,
                             unsigned port, char *pin, size_t pin_len)
{
	struct host_decision d = { 0 };
	struct sbx_netverdict v = { 0 };
	_cleanup_free_ char *json = NULL;
	char mode[16];

	pin[0] = '\0';
	pthread_mutex_lock(&ws->network_lock);
	snprintf(mode, sizeof mode, "%s", ws->network_mode);
	json = ws->cfg->network_json ? strdup(ws->cfg->network_json) : NULL;
	pthread_mutex_unlock(&ws->network_lock);
	if (!strcmp(mode, "host")) {
		d = (struct host_decision){ "allow", "mode host", "the workspace has the host's network" };
	} else if (!strcmp(mode, "allowlist")) {
		decide_allowlist(json, host, port, &d, &v, pin, pin_len);
	} else {
		d = (struct host_decision){ "deny", "mode none", "the workspace's network mode is "
		                            "\"none\": it has no network" };
	}
	audit_host_connect(ws, who, host, port, &d);
	if (strcmp(d.decision, "allow") != 0)
		return sbx_fail(-SBX_EPERM, "%s: connecting to %s:%u is refused by the workspace's "
		                "network policy (mode \"%s\", %s): %s", who, host, port, mode, d.rule,
		                d.reason);
	return 0;
}
