/* The workspace manager: (user, agent, session) → an open, shared, reference-counted
 * workspace, closed after an idle TTL.
 *
 * In memory, one entry per workspace this manager has open, keyed by its full id, with a
 * state: OPENING (one thread builds it, outside the manager's lock, so cold opens of
 * different workspaces run in parallel; later getters of the same one wait on `changed`),
 * READY, CLOSING (the sweeper or a close takes it down, outside the lock). Across processes,
 * manager_store.c's file locks: the open/close lock makes two processes' opens of one
 * workspace run one after the other (the second attaches to the detached sandbox the first
 * started), and the lease tells whether any process still holds a workspace. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "internal.h"
#include "manager.h"
#include "manager_ids.h"
#include "manager_store.h"
#include "util/buf.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/json.h"

#define DEFAULT_TTL_MS (3600 * 1000LL)
#define DEFAULT_SWEEP_MS (300 * 1000LL)

enum entry_state { OPENING, READY, CLOSING };

struct entry {
	struct entry *next;
	struct sbx_managed_id mid;
	enum entry_state state;
	sbx_workspace *ws;
	char *workdir;            /* host directory, or NULL */
	bool detached;            /* its sandbox outlives the handle */
	int refs;                 /* gets not yet released */
	int lease_fd;
	int64_t last_used;        /* manager clock */
	int64_t seen_stamp;       /* the workspace's own last_used_ms, as last looked at */
};

struct sbx_manager {
	struct sbx_store store;
	sbx_json *ws_config;      /* the "workspace" object */
	char *backend;
	const sbx_backend_ops *ops; /* the backend's table (the registry keeps it) */
	bool host_files;          /* the backend keeps the files on this host */
	bool can_detach;          /* SBX_BACKEND_CAP_DETACHED: its sandbox may outlive a handle */
	bool detached;
	enum sbx_isolation policy;
	int64_t ttl_ms, sweep_ms;
	size_t max_workspaces;

	pthread_mutex_t lock;
	pthread_cond_t changed;   /* an entry finished opening or closing */
	pthread_cond_t wake;      /* the sweeper: time to stop */
	struct entry *entries;
	size_t n_entries;
	bool stopping;
	bool have_sweeper;
	pthread_t sweeper;
	sbx_manager_clock_fn clock;
	void *clock_data;
};

/* ---- configuration ------------------------------------------------------------------- */

int sbx_manager_default_base_dir(char **out)
{
	const char *state = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
	int n;

	if (state && state[0] == '/')
		n = asprintf(out, "%s/agentsbx", state);
	else if (home && home[0] == '/')
		n = asprintf(out, "%s/.local/state/agentsbx", home);
	else
		return sbx_fail(-SBX_ECONFIG, "config: key 'base_dir': required when neither "
		                "XDG_STATE_HOME nor HOME is set");
	return n < 0 ? sbx_fail(-SBX_ENOMEM, "out of memory") : 0;
}

static int config_error(const char *key, const char *why)
{
	return sbx_fail(-SBX_ECONFIG, "config: key '%s': %s", key, why);
}

/* Seconds (integer or fraction, >= 0) as milliseconds. */
static int parse_seconds(const sbx_json *v, const char *key, int64_t *ms)
{
	double s = v->type == SBX_JSON_INT ? (double)v->i : v->type == SBX_JSON_NUMBER ? v->d : -1;

	if (s < 0 || s > 1e9)
		return config_error(key, "expected a number of seconds >= 0");
	*ms = (int64_t)(s * 1000);
	return 0;
}

/* What a workspace of the backend can do with the options of its section (whether its files
 * are on this host decides where the manager keeps them). */
static int section_caps(const sbx_backend_ops *ops, const sbx_json *section, uint32_t *caps)
{
	sbx_buf text = { 0 };
	int r;

	if (section)
		sbx_json_write(&text, section);
	if (text.oom)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	r = sbx_backend_caps(ops, section ? text.data : "{}", caps);
	sbx_buf_free(&text);
	return r;
}

/* Can the manager keep, list and stop this backend's detached sandboxes? */
static bool ops_can_detach(const sbx_backend_ops *ops)
{
	return ops && (ops->caps & SBX_BACKEND_CAP_DETACHED) && ops->detached_running &&
	       ops->detached_stop;
}

/* The backend and what follows from it; refuses what the manager sets itself. */
static int study_workspace_config(sbx_manager *m)
{
	const sbx_json *b = sbx_json_get(m->ws_config, "backend"), *section;
	const sbx_backend_ops *ops;
	uint32_t caps;
	int r;

	if (sbx_json_get(m->ws_config, "id") || sbx_json_get(m->ws_config, "workdir") ||
	    sbx_json_get(m->ws_config, "state_dir"))
		return config_error("workspace", "'id', 'workdir' and 'state_dir' are the manager's "
		                    "to set");
	if (b && b->type != SBX_JSON_STRING)
		return config_error("workspace.backend", "expected a string");
	if (!(m->backend = strdup(b ? b->str : SBX_DEFAULT_BACKEND)))
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	if ((r = sbx_registry_find(m->backend, &ops)) < 0)
		return r;
	section = sbx_json_get(m->ws_config, m->backend);
	if ((r = section_caps(ops, section, &caps)) < 0)
		return r;
	m->host_files = caps & SBX_BACKEND_CAP_HOST_FILES;
	m->ops = ops;
	m->can_detach = (caps & SBX_BACKEND_CAP_DETACHED) && ops_can_detach(ops);
	const sbx_json *d = section && section->type == SBX_JSON_OBJECT
	                    ? sbx_json_get(section, "detached") : NULL;
	m->detached = m->can_detach && !(d && d->type == SBX_JSON_BOOL && !d->b);
	return 0;
}

/* A detached sandbox backend's section gets what the base does not say: "detached": true,
 * and the manager's TTL as the sandbox's own idle TTL ("idle_ttl_s"), so that it stops by
 * itself when no process of ours is left to sweep it. */
static void detached_section(const sbx_manager *m, sbx_buf *b, const sbx_json *v)
{
	bool first = true;

	sbx_buf_puts(b, "{");
	if (!v || !sbx_json_get(v, "detached")) {
		sbx_buf_puts(b, "\"detached\":true");
		first = false;
	}
	if (!v || !sbx_json_get(v, "idle_ttl_s")) {
		sbx_buf_printf(b, "%s\"idle_ttl_s\":%.3f", first ? "" : ",", (double)m->ttl_ms / 1000);
		first = false;
	}
	for (size_t k = 0; v && k < v->n; k++) {
		sbx_buf_puts(b, first ? "" : ",");
		first = false;
		sbx_buf_json_string(b, v->keys[k], v->key_lens[k]);
		sbx_buf_puts(b, ":");
		sbx_json_write(b, v->items[k]);
	}
	sbx_buf_puts(b, "}");
}

/* A managed workspace keeps its state folder (and private HOME) below the manager's
 * base_dir, beside its workdir and outside it: <base_dir>/<user key>/.state/<name> (no name
 * starts with '.', so it is nobody's workdir). It goes with the user's folder. */
static void put_state_dir(sbx_buf *b, const char *workdir)
{
	const char *slash = strrchr(workdir, '/');
	_cleanup_free_ char *path = NULL;

	if (!slash || asprintf(&path, "%.*s/.state/%s", (int)(slash - workdir), workdir,
	                       slash + 1) < 0) {
		b->oom = true;
		return;
	}
	sbx_buf_puts(b, ",\"state_dir\":");
	sbx_buf_json_string(b, path, strlen(path));
}

/* The workspace config for one id: the base object with id and workdir, and a sandbox
 * backend's "detached": true unless the base says otherwise (detached_section). */
static char *workspace_config(const sbx_manager *m, const char *id, const char *workdir)
{
	sbx_buf b = { 0 };
	bool section_seen = false;

	sbx_buf_puts(&b, "{\"id\":");
	sbx_buf_json_string(&b, id, strlen(id));
	if (workdir) {
		sbx_buf_puts(&b, ",\"workdir\":");
		sbx_buf_json_string(&b, workdir, strlen(workdir));
		put_state_dir(&b, workdir);
	}
	for (size_t i = 0; i < m->ws_config->n; i++) {
		const char *key = m->ws_config->keys[i];
		const sbx_json *v = m->ws_config->items[i];
		sbx_buf_puts(&b, ",");
		sbx_buf_json_string(&b, key, m->ws_config->key_lens[i]);
		sbx_buf_puts(&b, ":");
		if (m->detached && !strcmp(key, m->backend) && v->type == SBX_JSON_OBJECT) {
			detached_section(m, &b, v);
		} else {
			sbx_json_write(&b, v);
		}
		section_seen |= !strcmp(key, m->backend);
	}
	if (m->detached && !section_seen) {
		sbx_buf_printf(&b, ",\"%s\":", m->backend);
		detached_section(m, &b, NULL);
	}
	sbx_buf_puts(&b, "}");
	if (b.oom) {
		sbx_buf_free(&b);
		return NULL;
	}
	return sbx_buf_steal(&b, NULL);
}

/* The workspace config is checked once, at open, not at the first conversation. */
static int check_workspace_config(const sbx_manager *m)
{
	_cleanup_free_ char *text = workspace_config(m, "check", m->host_files ? "/" : NULL);
	sbx_config *cfg = NULL;
	int r;

	if (!text)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	r = sbx_config_parse(text, &cfg);
	sbx_config_free(cfg);
	if (r < 0) {
		char why[768];
		snprintf(why, sizeof why, "%s", sbx_last_error());
		return sbx_fail(r, "config: key 'workspace': %s", why);
	}
	return 0;
}

static int parse_key(sbx_manager *m, const char *key, const sbx_json *v, char **base_dir)
{
	if (!strcmp(key, "workspace")) {
		if (v->type != SBX_JSON_OBJECT)
			return config_error(key, "expected an object");
		return 0;   /* kept as a tree: see sbx_manager_open */
	}
	if (!strcmp(key, "base_dir")) {
		if (v->type != SBX_JSON_STRING || !v->str[0] || strlen(v->str) != v->len)
			return config_error(key, "expected a path");
		return (*base_dir = strdup(v->str)) ? 0 : sbx_fail(-SBX_ENOMEM, "out of memory");
	}
	if (!strcmp(key, "policy")) {
		if (v->type != SBX_JSON_STRING || !sbx_isolation_parse(v->str, &m->policy))
			return config_error(key, "expected \"per_agent\", \"per_session\" or "
			                    "\"per_user\"");
		return 0;
	}
	if (!strcmp(key, "ttl_s"))
		return parse_seconds(v, key, &m->ttl_ms);
	if (!strcmp(key, "sweep_interval_s"))
		return parse_seconds(v, key, &m->sweep_ms);
	if (!strcmp(key, "max_workspaces")) {
		if (v->type != SBX_JSON_INT || v->i < 0)
			return config_error(key, "expected an integer >= 0");
		m->max_workspaces = (size_t)v->i;
		return 0;
	}
	return sbx_fail(-SBX_ECONFIG, "config: unknown key '%s'", key);
}

static int parse_manager_config(sbx_manager *m, const char *json, char **base_dir)
{
	const char *text = json && json[0] ? json : "{}";
	sbx_json *root = NULL;
	char err[256];
	int r = 0;

	if (sbx_json_parse(text, strlen(text), &root, err, sizeof err) < 0)
		return sbx_fail(-SBX_ECONFIG, "config: %s", err);
	if (root->type != SBX_JSON_OBJECT)
		r = sbx_fail(-SBX_ECONFIG, "config: expected an object");
	for (size_t i = 0; r == 0 && i < root->n; i++)
		r = parse_key(m, root->keys[i], root->items[i], base_dir);
	/* The workspace object is kept as its own tree (a copy: the root goes). */
	const sbx_json *ws = r == 0 ? sbx_json_get(root, "workspace") : NULL;
	sbx_buf copy = { 0 };
	if (ws)
		sbx_json_write(&copy, ws);
	else
		sbx_buf_puts(&copy, "{}");
	if (r == 0 && (copy.oom || sbx_json_parse(copy.data, copy.len, &m->ws_config, err,
	                                          sizeof err) < 0))
		r = sbx_fail(-SBX_ENOMEM, "out of memory");
	sbx_buf_free(&copy);
	sbx_json_free(root);
	return r;
}

/* ---- time ------------------------------------------------------------------------------ */

static int64_t now_ms(const sbx_manager *m)
{
	return m->clock ? m->clock(m->clock_data) : sbx_now_ms();
}

void sbx_manager_set_clock_for_testing(sbx_manager *m, sbx_manager_clock_fn fn, void *userdata)
{
	pthread_mutex_lock(&m->lock);
	m->clock = fn;
	m->clock_data = userdata;
	pthread_mutex_unlock(&m->lock);
}

/* Brings last_used up to the workspace's own last exec or tool call (under the lock). The
 * workspace stamps the real monotonic clock; the age of its stamp carries over to ours. */
static void refresh_use(sbx_manager *m, struct entry *e)
{
	int64_t stamp = atomic_load(&e->ws->last_used_ms);

	if (stamp == e->seen_stamp)
		return;
	e->seen_stamp = stamp;
	int64_t when = now_ms(m) - (sbx_now_ms() - stamp);
	if (when > e->last_used)
		e->last_used = when;
	sbx_store_stamp(&m->store, e->mid.id);
}

/* ---- entries --------------------------------------------------------------------------- */

static struct entry *find_entry(sbx_manager *m, const char *id)
{
	for (struct entry *e = m->entries; e; e = e->next)
		if (!strcmp(e->mid.id, id))
			return e;
	return NULL;
}

static struct entry *find_by_handle(sbx_manager *m, const sbx_workspace *ws)
{
	for (struct entry *e = m->entries; e; e = e->next)
		if (e->ws == ws && e->state == READY)
			return e;
	return NULL;
}

static void unlink_entry(sbx_manager *m, struct entry *gone)
{
	for (struct entry **p = &m->entries; *p; p = &(*p)->next)
		if (*p == gone) {
			*p = gone->next;
			m->n_entries--;
			break;
		}
	free(gone->workdir);
	free(gone);
}

/* ---- opening --------------------------------------------------------------------------- */

static char *record_json(const sbx_manager *m, const struct entry *e, const char *config)
{
	sbx_buf b = { 0 };

	sbx_buf_puts(&b, "{\"id\":");
	sbx_buf_json_string(&b, e->mid.id, strlen(e->mid.id));
	sbx_buf_printf(&b, ",\"user_key\":\"%s\",\"name\":\"%s\",\"policy\":\"%s\",\"backend\":",
	               e->mid.user_key, e->mid.name, sbx_isolation_name(m->policy));
	sbx_buf_json_string(&b, m->backend, strlen(m->backend));
	sbx_buf_printf(&b, ",\"detached\":%s,\"workdir\":", e->detached ? "true" : "false");
	if (e->workdir)
		sbx_buf_json_string(&b, e->workdir, strlen(e->workdir));
	else
		sbx_buf_puts(&b, "null");
	sbx_buf_printf(&b, ",\"config\":%s}", config);
	if (b.oom) {
		sbx_buf_free(&b);
		return NULL;
	}
	return sbx_buf_steal(&b, NULL);
}

/* The cold open of one entry, outside the manager's lock but under the workspace's file lock:
 * the lease first (so no other process takes the workspace for idle meanwhile), then the
 * workspace (a detached sandbox: attached if one runs), then the record. `recorded` is the
 * configuration of sbx_manager_get_by_id, else it is built from the manager's. */
static int open_entry(sbx_manager *m, struct entry *e, const char *recorded)
{
	_cleanup_close_ int lock = -1;
	_cleanup_free_ char *config = NULL, *record = NULL;
	int r;

	if ((r = sbx_store_lock(&m->store, e->mid.id, true, &lock)) < 0)
		return r;
	if (!recorded && m->host_files && (r = sbx_store_workdir(&m->store, &e->mid, &e->workdir)) < 0)
		return r;
	config = recorded ? strdup(recorded) : workspace_config(m, e->mid.id, e->workdir);
	if (!config)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	/* A sandbox that is not detached cannot be shared: one process at a time. */
	if ((r = sbx_store_lease(&m->store, e->mid.id, m->can_detach && !e->detached,
	                         &e->lease_fd)) < 0)
		return r;
	if ((r = sbx_workspace_open(config, &e->ws)) < 0)
		goto fail;
	if (!(record = record_json(m, e, config))) {
		r = sbx_fail(-SBX_ENOMEM, "out of memory");
		goto fail;
	}
	if ((r = sbx_store_write_record(&m->store, e->mid.id, record)) < 0)
		goto fail;
	e->seen_stamp = atomic_load(&e->ws->last_used_ms);
	return 0;
fail:
	sbx_workspace_close(e->ws);
	e->ws = NULL;
	close(SBX_TAKE_FD(e->lease_fd));
	return r;
}

/* Takes one reference on the workspace `mid` names, opening it when no thread has. */
static int acquire(sbx_manager *m, const struct sbx_managed_id *mid, bool detached,
                   const char *workdir, const char *recorded, sbx_workspace **out)
{
	struct entry *e;
	int r;

	pthread_mutex_lock(&m->lock);
	for (;;) {
		if (m->stopping) {
			pthread_mutex_unlock(&m->lock);
			return sbx_fail(-SBX_ESTATE, "workspace manager: being freed");
		}
		e = find_entry(m, mid->id);
		if (!e)
			break;
		if (e->state == READY) {
			e->refs++;
			e->last_used = now_ms(m);
			*out = e->ws;
			pthread_mutex_unlock(&m->lock);
			return 0;
		}
		pthread_cond_wait(&m->changed, &m->lock);   /* opening or closing: see how it ends */
	}
	if (m->max_workspaces && m->n_entries >= m->max_workspaces) {
		pthread_mutex_unlock(&m->lock);
		return sbx_fail(-SBX_EBUSY, "workspace manager: max_workspaces (%zu) reached: %zu "
		                "workspaces are open; release or close one first", m->max_workspaces,
		                m->n_entries);
	}
	if (!(e = calloc(1, sizeof *e)) || (workdir && !(e->workdir = strdup(workdir)))) {
		free(e);
		pthread_mutex_unlock(&m->lock);
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	}
	e->mid = *mid;
	e->state = OPENING;
	e->detached = detached;
	e->lease_fd = -1;
	e->next = m->entries;
	m->entries = e;
	m->n_entries++;
	pthread_mutex_unlock(&m->lock);

	r = open_entry(m, e, recorded);

	pthread_mutex_lock(&m->lock);
	if (r == 0) {
		e->state = READY;
		e->refs = 1;
		e->last_used = now_ms(m);
		*out = e->ws;
	} else {
		unlink_entry(m, e);   /* a waiting getter tries for itself */
	}
	pthread_cond_broadcast(&m->changed);
	pthread_mutex_unlock(&m->lock);
	return r;
}

int sbx_manager_get(sbx_manager *m, const char *user_id, const char *agent_id,
                    const char *session_id, const char *workspace_id, sbx_workspace **out)
{
	struct sbx_managed_id mid;
	int r;

	if (!m || !out)
		return sbx_fail(-SBX_EINVAL, "manager or out is NULL");
	*out = NULL;
	if ((r = sbx_managed_id_resolve(m->policy, user_id, agent_id, session_id, workspace_id,
	                                &mid)) < 0)
		return r;
	return acquire(m, &mid, m->detached, NULL, NULL, out);
}

int sbx_manager_get_by_id(sbx_manager *m, const char *id, sbx_workspace **out)
{
	sbx_json *rec = NULL;
	struct sbx_managed_id mid = { 0 };
	const sbx_json *config, *detached, *workdir;
	_cleanup_free_ char *config_text = NULL;
	int r;

	if (!m || !out)
		return sbx_fail(-SBX_EINVAL, "manager or out is NULL");
	*out = NULL;
	if (!sbx_managed_id_valid(id))
		return sbx_fail(-SBX_EINVAL, "workspace manager: invalid workspace id '%.80s'",
		                id ? id : "(null)");
	if ((r = sbx_store_read_record(&m->store, id, &rec)) < 0)
		return r;
	config = sbx_json_get(rec, "config");
	detached = sbx_json_get(rec, "detached");
	workdir = sbx_json_get(rec, "workdir");
	if (config && config->type == SBX_JSON_OBJECT) {
		sbx_buf b = { 0 };
		sbx_json_write(&b, config);
		config_text = b.oom ? NULL : sbx_buf_steal(&b, NULL);
		sbx_buf_free(&b);
	}
	memcpy(mid.user_key, id, SBX_USER_KEY_LEN);
	snprintf(mid.name, sizeof mid.name, "%s", id + SBX_USER_KEY_LEN + 1);
	snprintf(mid.id, sizeof mid.id, "%s", id);
	if (!config_text)
		r = sbx_fail(-SBX_EPROTO, "workspace manager: record of %s is damaged", id);
	else
		r = acquire(m, &mid, detached && detached->type == SBX_JSON_BOOL && detached->b,
		            workdir && workdir->type == SBX_JSON_STRING ? workdir->str : NULL,
		            config_text, out);
	sbx_json_free(rec);
	return r;
}

int sbx_manager_release(sbx_manager *m, sbx_workspace *ws)
{
	struct entry *e;

	if (!m || !ws)
		return sbx_fail(-SBX_EINVAL, "manager or workspace is NULL");
	pthread_mutex_lock(&m->lock);
	e = find_by_handle(m, ws);
	if (!e || e->refs == 0) {
		pthread_mutex_unlock(&m->lock);
		return sbx_fail(-SBX_EINVAL, "workspace manager: this workspace is not held from "
		                "this manager");
	}
	e->refs--;
	e->last_used = now_ms(m);
	refresh_use(m, e);
	sbx_store_stamp(&m->store, e->mid.id);
	pthread_mutex_unlock(&m->lock);
	return 0;
}

/* ---- closing --------------------------------------------------------------------------- */

/* The table of the backend that runs a record's workspace: the one its recorded config
 * names (what the workspace was opened with; a manager of another config, the CLI's, may
 * look at it), else the record's, else the manager's own. NULL when it cannot be found. */
static const sbx_backend_ops *record_ops(const sbx_manager *m, const sbx_json *rec)
{
	const sbx_json *config = sbx_json_get(rec, "config");
	const sbx_json *b = config && config->type == SBX_JSON_OBJECT
	                    ? sbx_json_get(config, "backend") : NULL;
	const sbx_backend_ops *ops = NULL;

	if (!b || b->type != SBX_JSON_STRING)
		b = sbx_json_get(rec, "backend");
	if (!b || b->type != SBX_JSON_STRING || !strcmp(b->str, m->backend))
		return m->ops;
	return sbx_registry_find(b->str, &ops) == 0 ? ops : NULL;
}

/* Stops the detached sandbox of workdir through its backend (under the workspace's lock). */
static int stop_detached(const sbx_backend_ops *ops, const char *workdir, const char *id,
                         bool *stopped)
{
	int done = 0, r;

	*stopped = false;
	if (!ops_can_detach(ops))
		return sbx_fail(-SBX_ENOSYS, "workspace manager: workspace %s: its backend cannot "
		                "stop a detached sandbox", id);
	r = ops->detached_stop(workdir, id, &done);
	*stopped = done != 0;
	return r;
}

/* Whether a detached sandbox of workdir runs; false when its backend cannot tell. */
static bool detached_running(const sbx_backend_ops *ops, const char *workdir)
{
	int running = 0;

	return ops_can_detach(ops) && ops->detached_running(workdir, &running) == 0 && running;
}

/* Stops a detached sandbox that no process holds (under the workspace's lock). */
static int stop_if_unheld(sbx_manager *m, const sbx_backend_ops *ops, const char *id,
                          const char *workdir, bool *stopped)
{
	*stopped = false;
	if (!sbx_store_lease_free(&m->store, id))
		return 0;
	return stop_detached(ops, workdir, id, stopped);
}

/* Closes an entry marked CLOSING (outside the manager's lock); with stop, also its detached
 * sandbox unless another process holds it. */
static int retire_entry(sbx_manager *m, struct entry *e, bool stop)
{
	_cleanup_close_ int lock = -1;
	bool stopped;
	int r = sbx_store_lock(&m->store, e->mid.id, true, &lock), c;

	c = sbx_workspace_close(e->ws);
	e->ws = NULL;
	close(SBX_TAKE_FD(e->lease_fd));
	if (r == 0 && stop && e->detached && e->workdir)
		r = stop_if_unheld(m, m->ops, e->mid.id, e->workdir, &stopped);
	return r < 0 ? r : c;
}

static void forget_entries(sbx_manager *m, struct entry **list, size_t n)
{
	pthread_mutex_lock(&m->lock);
	for (size_t i = 0; i < n; i++)
		unlink_entry(m, list[i]);
	pthread_cond_broadcast(&m->changed);
	pthread_mutex_unlock(&m->lock);
}

/* A detached sandbox left by a process that died (or freed its manager) is stopped once
 * nobody holds it and its last use is older than the TTL. */
static int collect_orphans(sbx_manager *m)
{
	char **ids = NULL;
	int stopped_count = 0;

	if (m->ttl_ms == 0 || sbx_store_list(&m->store, &ids) < 0)
		return 0;
	for (char **id = ids; *id; id++) {
		pthread_mutex_lock(&m->lock);
		bool ours = find_entry(m, *id) != NULL;
		pthread_mutex_unlock(&m->lock);
		int64_t idle = sbx_store_idle_ms(&m->store, *id);
		if (ours || idle < m->ttl_ms)
			continue;
		sbx_json *rec = NULL;
		_cleanup_close_ int lock = -1;
		bool stopped = false;
		if (sbx_store_read_record(&m->store, *id, &rec) == 0 &&
		    sbx_store_lock(&m->store, *id, false, &lock) == 0) {
			const sbx_json *d = sbx_json_get(rec, "detached"), *w = sbx_json_get(rec, "workdir");
			if (d && d->type == SBX_JSON_BOOL && d->b && w && w->type == SBX_JSON_STRING &&
			    stop_if_unheld(m, record_ops(m, rec), *id, w->str, &stopped) == 0 &&
			    stopped)
				stopped_count++;
		}
		sbx_json_free(rec);
	}
	sbx_strv_free(ids);
	return stopped_count;
}

/* One sweep: the unheld entries idle beyond the TTL are closed; then the orphans. */
static int sweep(sbx_manager *m)
{
	struct entry **expired;
	size_t n = 0;

	pthread_mutex_lock(&m->lock);
	expired = calloc(m->n_entries + 1, sizeof *expired);
	int64_t now = now_ms(m);
	for (struct entry *e = m->entries; expired && e; e = e->next) {
		if (e->state != READY)
			continue;
		refresh_use(m, e);
		if (e->refs == 0 && m->ttl_ms > 0 && now - e->last_used >= m->ttl_ms) {
			e->state = CLOSING;
			expired[n++] = e;
		}
	}
	pthread_mutex_unlock(&m->lock);
	for (size_t i = 0; i < n; i++)
		retire_entry(m, expired[i], true);
	forget_entries(m, expired, n);
	free(expired);
	return (int)n + collect_orphans(m);
}

int sbx_manager_gc(sbx_manager *m, int *closed)
{
	if (!m)
		return sbx_fail(-SBX_EINVAL, "manager is NULL");
	int n = sweep(m);
	if (closed)
		*closed = n;
	return 0;
}

int sbx_manager_close(sbx_manager *m, const char *id)
{
	struct entry *e;
	sbx_json *rec = NULL;
	int r;

	if (!m || !sbx_managed_id_valid(id))
		return sbx_fail(-SBX_EINVAL, "workspace manager: invalid workspace id '%.80s'",
		                id ? id : "(null)");
	pthread_mutex_lock(&m->lock);
	while ((e = find_entry(m, id)) && e->state != READY)
		pthread_cond_wait(&m->changed, &m->lock);
	if (e && e->refs > 0) {
		pthread_mutex_unlock(&m->lock);
		return sbx_fail(-SBX_EBUSY, "workspace manager: workspace %s is still held by %d "
		                "caller(s); release it first", id, e->refs);
	}
	if (e)
		e->state = CLOSING;
	pthread_mutex_unlock(&m->lock);
	if (e) {
		r = retire_entry(m, e, true);
		forget_entries(m, &e, 1);
		return r;
	}
	/* Not open here: stop its detached sandbox, if no other process holds it. */
	if ((r = sbx_store_read_record(&m->store, id, &rec)) < 0)
		return r;
	const sbx_json *d = sbx_json_get(rec, "detached"), *w = sbx_json_get(rec, "workdir");
	_cleanup_close_ int lock = -1;
	bool stopped;
	if (d && d->type == SBX_JSON_BOOL && d->b && w && w->type == SBX_JSON_STRING &&
	    (r = sbx_store_lock(&m->store, id, true, &lock)) == 0) {
		r = sbx_store_lease_free(&m->store, id)
		    ? stop_detached(record_ops(m, rec), w->str, id, &stopped)
		    : sbx_fail(-SBX_EBUSY, "workspace manager: workspace %s is held by another "
		               "process", id);
	}
	sbx_json_free(rec);
	return r;
}

/* ---- listing --------------------------------------------------------------------------- */

static void list_one(sbx_manager *m, sbx_buf *b, const char *id)
{
	sbx_json *rec = NULL;
	struct entry *e;
	int refs = 0;
	bool here;

	if (sbx_store_read_record(&m->store, id, &rec) < 0)
		return;
	pthread_mutex_lock(&m->lock);
	e = find_entry(m, id);
	here = e != NULL;
	refs = e ? e->refs : 0;
	if (e && e->state == READY)
		refresh_use(m, e);
	pthread_mutex_unlock(&m->lock);
	const sbx_json *d = sbx_json_get(rec, "detached"), *w = sbx_json_get(rec, "workdir");
	bool detached = d && d->type == SBX_JSON_BOOL && d->b;
	bool has_dir = w && w->type == SBX_JSON_STRING;
	bool held = here || !sbx_store_lease_free(&m->store, id);
	bool running = detached && has_dir ? detached_running(record_ops(m, rec), w->str) : held;
	const char *keys[] = { "id", "user_key", "name", "policy", "backend" };

	sbx_buf_puts(b, b->len > 1 ? ",{" : "{");
	for (size_t i = 0; i < SBX_ARRAY_SIZE(keys); i++) {
		const sbx_json *v = sbx_json_get(rec, keys[i]);
		sbx_buf_printf(b, "%s\"%s\":", i ? "," : "", keys[i]);
		if (v)
			sbx_json_write(b, v);
		else
			sbx_buf_puts(b, "null");
	}
	sbx_buf_puts(b, ",\"workdir\":");
	if (has_dir)
		sbx_json_write(b, w);
	else
		sbx_buf_puts(b, "null");
	sbx_buf_printf(b, ",\"detached\":%s,\"refs\":%d,\"held\":%s,\"running\":%s,"
	               "\"idle_s\":%lld}", detached ? "true" : "false", refs,
	               held ? "true" : "false", running ? "true" : "false",
	               (long long)(sbx_store_idle_ms(&m->store, id) / 1000));
	sbx_json_free(rec);
}

int sbx_manager_list(sbx_manager *m, char **json_out)
{
	char **ids = NULL;
	sbx_buf b = { 0 };
	int r;

	if (!m || !json_out)
		return sbx_fail(-SBX_EINVAL, "manager or json_out is NULL");
	*json_out = NULL;
	if ((r = sbx_store_list(&m->store, &ids)) < 0)
		return r;
	sbx_buf_puts(&b, "[");
	for (char **id = ids; *id; id++)
		list_one(m, &b, *id);
	sbx_buf_puts(&b, "]");
	sbx_strv_free(ids);
	if (b.oom) {
		sbx_buf_free(&b);
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	}
	*json_out = sbx_buf_steal(&b, NULL);
	return 0;
}

/* ---- the sweeper and the manager's life ------------------------------------------------ */

static void *sweeper_main(void *arg)
{
	sbx_manager *m = arg;
	struct timespec until;

	pthread_mutex_lock(&m->lock);
	while (!m->stopping) {
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += m->sweep_ms / 1000;
		until.tv_nsec += (m->sweep_ms % 1000) * 1000000;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		while (!m->stopping && pthread_cond_timedwait(&m->wake, &m->lock, &until) != ETIMEDOUT)
			;
		if (m->stopping)
			break;
		pthread_mutex_unlock(&m->lock);
		sweep(m);
		pthread_mutex_lock(&m->lock);
	}
	pthread_mutex_unlock(&m->lock);
	return NULL;
}

/* The sweeper waits on the monotonic clock: a change of the wall clock must not close or
 * keep workspaces. */
static void init_wake(sbx_manager *m)
{
	pthread_condattr_t attr;

	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&m->wake, &attr);
	pthread_condattr_destroy(&attr);
}

static int start_sweeper(sbx_manager *m)
{
	int err;

	if (m->sweep_ms == 0)
		return 0;
	if ((err = pthread_create(&m->sweeper, NULL, sweeper_main, m)) != 0)
		return sbx_fail(-SBX_ENOMEM, "workspace manager: cannot start the sweeper: %s",
		                strerror(err));
	m->have_sweeper = true;
	return 0;
}

static void free_manager(sbx_manager *m)
{
	sbx_store_close(&m->store);
	sbx_json_free(m->ws_config);
	free(m->backend);
	pthread_mutex_destroy(&m->lock);
	pthread_cond_destroy(&m->changed);
	pthread_cond_destroy(&m->wake);
	free(m);
}

int sbx_manager_open(const char *config_json, sbx_manager **out)
{
	_cleanup_free_ char *base_dir = NULL;
	sbx_manager *m;
	int r;

	if (!out)
		return sbx_fail(-SBX_EINVAL, "out is NULL");
	*out = NULL;
	if (!(m = calloc(1, sizeof *m)))
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	m->store = (struct sbx_store){ .base_fd = -1, .locks_fd = -1, .records_fd = -1 };
	m->policy = SBX_PER_AGENT;
	m->ttl_ms = DEFAULT_TTL_MS;
	m->sweep_ms = DEFAULT_SWEEP_MS;
	pthread_mutex_init(&m->lock, NULL);
	pthread_cond_init(&m->changed, NULL);
	init_wake(m);
	if ((r = parse_manager_config(m, config_json, &base_dir)) < 0 ||
	    (r = study_workspace_config(m)) < 0 || (r = check_workspace_config(m)) < 0)
		goto fail;
	if (!base_dir && (r = sbx_manager_default_base_dir(&base_dir)) < 0)
		goto fail;
	if ((r = sbx_store_open(base_dir, &m->store)) < 0 || (r = start_sweeper(m)) < 0)
		goto fail;
	*out = m;
	return 0;
fail:
	free_manager(m);
	return r;
}

void sbx_manager_free(sbx_manager *m)
{
	struct entry *e;

	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	m->stopping = true;
	pthread_cond_broadcast(&m->wake);
	/* Opens in flight finish first (their getters own the result). */
	while (true) {
		for (e = m->entries; e && e->state == READY; e = e->next)
			;
		if (!e)
			break;
		pthread_cond_wait(&m->changed, &m->lock);
	}
	pthread_mutex_unlock(&m->lock);
	if (m->have_sweeper)
		pthread_join(m->sweeper, NULL);
	while ((e = m->entries)) {
		retire_entry(m, e, false);
		unlink_entry(m, e);
	}
	free_manager(m);
}
