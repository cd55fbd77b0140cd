/* The host side of a sandbox run by agentsbx-init: options, start (direct or through the
 * system bubblewrap), commands, stop. See sandbox.h and helpers/init_proto.h. */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "init_proto.h"
#include "proxy_proto.h"
#include "internal.h"
#include "mcp/mcp.h"
#include "util/auditlog.h"
#include "util/fdlimit.h"
#include "util/fdpass.h"
#include "util/buf.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/forksafe.h"
#include "util/fs.h"
#include "util/idmap.h"
#include "util/journal.h"
#include "util/json.h"
#include "backends/common/launch.h"
#include "backends/common/netproxy.h"
#include "util/path.h"
#include "util/quota.h"
#include "util/sandbox.h"
#include "util/sandbox_attach.h"
#include "util/sandbox_spare.h"
#include "util/sandbox_warden.h"

#define INIT_NAME "agentsbx-init"
#define READY_TIMEOUT_MS 15000
#define STOP_TIMEOUT_MS 5000
#define BWRAP_INIT_PATH "/run/agentsbx/init"

struct sbx_sandbox {
	const char *who;
	enum sbx_sandbox_mode mode;
	sbx_backend_config cfg;       /* copied strings below keep it valid */
	char *workdir;
	char *id;
	char *network_mode;
	struct sbx_netproxy *proxy;   /* mode "allowlist": the workspace's proxy, kept across
	                                 restarts (a reset changes the sandbox, not the policy) */
	int root_fd;                  /* O_PATH fd of workdir, for paths beneath it */
	char *placeholders;           /* the journal note of the placeholders made (see below) */
	const struct sbx_sandbox_options *opts; /* owned by the backend, outlives sb */
	int ctl;
	pid_t pid;                    /* the outer init process (direct) or bwrap, our child */
	int pidfd;                    /* instead, for a sandbox that was a spare: a pidfd of its
	                                 outer process, which is no child of ours */
	int outer_pidfd;              /* direct mode: a pidfd of the outer process, from READY's
	                                 init_pid, opened while READY says it lives: the warden
	                                 joins the sandbox's namespaces through it (a pid alone
	                                 could be reused once the tidier reaps the outer) */
	uint32_t flags;
	char cgroup_note[244];
	struct sbx_runclient_set live;
	int files_root;               /* limits.disk_bytes: the init's fd of the capped workspace
	                                 (util/quota.h), replaced at every start; else -1 */
	struct sbx_idmap idmap;       /* the caller is root: the host range the sandbox runs as
	                                 (util/idmap.h); off for anyone else, or after the
	                                 root_inside fallback */
	int ws_tree;                  /* the idmapped workspace made when the users were decided,
	                                 for the first start; -1 once taken */
};

/* ---- options ------------------------------------------------------------------------- */

static int option_error(const char *backend, const char *key, const char *why)
{
	return sbx_fail(-SBX_ECONFIG, "config: key '%s.%s': %s", backend, key, why);
}

static int dup_string(const sbx_json *v, const char *backend, const char *key, char **out)
{
	if (v->type != SBX_JSON_STRING || strlen(v->str) != v->len || !v->len)
		return option_error(backend, key, "expected a non-empty string without NUL bytes");
	if (!(*out = strdup(v->str)))
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	return 0;
}

static int absolute_path(const sbx_json *v, const char *backend, const char *key, char **out)
{
	int r = dup_string(v, backend, key, out);

	if (r == 0 && ((*out)[0] != '/' || strlen(*out) >= PATH_MAX || strstr(*out, "/../") ||
	               !strcmp(*out + strlen(*out) - (strlen(*out) >= 3 ? 3 : 0), "/.."))) {
		free(*out);
		*out = NULL;
		return option_error(backend, key, "expected an absolute path without '..'");
	}
	return r;
}

static int parse_binds(const char *backend, const sbx_json *v, struct sbx_sandbox_options *o)
{
	if (v->type != SBX_JSON_ARRAY)
		return option_error(backend, "binds", "expected an array");
	if (!(o->binds = calloc(v->n + 1, sizeof *o->binds)))
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	for (size_t i = 0; i < v->n; i++) {
		const sbx_json *b = v->items[i], *src, *dst, *rw;
		char key[64];
		char *s = NULL, *d = NULL;
		int r;

		snprintf(key, sizeof key, "binds[%zu]", i);
		if (b->type != SBX_JSON_OBJECT)
			return option_error(backend, key, "expected an object");
		for (size_t k = 0; k < b->n; k++)
			if (strcmp(b->keys[k], "source") && strcmp(b->keys[k], "dest") &&
			    strcmp(b->keys[k], "writable"))
				return option_error(backend, key, "unknown key (source, dest, writable)");
		src = sbx_json_get(b, "source");
		dst = sbx_json_get(b, "dest");
		rw = sbx_json_get(b, "writable");
		if (!src || !dst)
			return option_error(backend, key, "needs source and dest");
		if (rw && rw->type != SBX_JSON_BOOL)
			return option_error(backend, key, "writable: expected true or false");
		if ((r = absolute_path(src, backend, key, &s)) < 0)
			return r;
		if ((r = absolute_path(dst, backend, key, &d)) < 0) {
			free(s);
			return r;
		}
		o->binds[i] = (struct sbx_bind){ .source = s, .dest = d, .writable = rw && rw->b };
		o->n_binds = i + 1;
		if (!strcmp(d, "/") || !strncmp(d, "/proc", 5) || !strncmp(d, "/dev", 4) ||
		    !strcmp(d, SBX_SANDBOX_ROOT))
			return option_error(backend, key, "dest may not be /, /proc, /dev or /workspace");
	}
	return 0;
}

/* The state folder stays read-only inside whatever the list says: the git guard's quarantine,
 * the record of trusted skills, the audit log and the journal the host's root acts on live
 * there, and the host trusts them only because no command can write them. */
static int keep_state_dir_protected(char **list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(list[i], SBX_STATE_DIR "/") || !strcmp(list[i], SBX_STATE_DIR))
			return 0;
	if (!(list[n] = strdup(SBX_STATE_DIR "/")))
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	return 0;
}

static int parse_protected(const char *backend, const sbx_json *v, struct sbx_sandbox_options *o)
{
	char why[128];

	if (v->type != SBX_JSON_ARRAY)
		return option_error(backend, "protected_paths", "expected an array");
	/* Each entry is a mount (and, under bubblewrap, a walk of the mount table): 20,000 took
	 * 36 s and then failed as a start timeout. Within the cap a sandbox starts in a fraction
	 * of a second. */
	if (v->n > SBX_PROTECTED_PATHS_MAX) {
		snprintf(why, sizeof why, "at most %d entries (this has %zu): each is a mount in the "
		         "sandbox", SBX_PROTECTED_PATHS_MAX, v->n);
		return option_error(backend, "protected_paths", why);
	}
	/* One more than listed: the state folder, which no list may leave out (below). */
	if (!(o->protected_paths = calloc(v->n + 2, sizeof *o->protected_paths)))
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	for (size_t i = 0; i < v->n; i++) {
		char **p = &o->protected_paths[i];
		int r = dup_string(v->items[i], backend, "protected_paths", p);

		if (r < 0)
			return r;
		if (strlen(*p) >= PATH_MAX)
			return option_error(backend, "protected_paths", "an entry is longer than 4095 "
			                    "bytes");
		if ((*p)[0] == '/' || !strcmp(*p, "..") || !strncmp(*p, "../", 3) || strstr(*p, "/../"))
			return option_error(backend, "protected_paths",
			                    "entries are relative to /workspace, without '..'");
	}
	return keep_state_dir_protected(o->protected_paths, v->n);
}

static int parse_mode(const char *backend, const sbx_json *v, struct sbx_sandbox_options *o)
{
	static const char *const names[] = { "auto", "direct", "bwrap" };

	for (size_t i = 0; v->type == SBX_JSON_STRING && i < SBX_ARRAY_SIZE(names); i++)
		if (!strcmp(v->str, names[i])) {
			o->mode = (enum sbx_sandbox_mode)i;
			return 0;
		}
	return option_error(backend, "mode", "expected \"auto\", \"direct\" or \"bwrap\"");
}

/* A user name as useradd(8) takes them (subuid(5) has no quoting): letters, digits, '_', '-'
 * and '.', not starting with '-', at most 32. */
static int parse_subid_user(const char *backend, const sbx_json *v, struct sbx_sandbox_options *o)
{
	int r = dup_string(v, backend, "subid_user", &o->subid_user);
	size_t n = r == 0 ? strlen(o->subid_user) : 0;

	if (r < 0)
		return r;
	if (n > 32 || o->subid_user[0] == '-' ||
	    strspn(o->subid_user, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	                          "0123456789_-.") != n)
		return option_error(backend, "subid_user", "expected a user name (letters, digits, "
		                    "'_', '-', '.'; at most 32)");
	return 0;
}

static int parse_option(const char *backend, const char *key, const sbx_json *v,
                        bool allow_mode, struct sbx_sandbox_options *o)
{
	if (allow_mode && !strcmp(key, "mode"))
		return parse_mode(backend, v, o);
	if (!strcmp(key, "rootfs"))
		return absolute_path(v, backend, key, &o->rootfs);
	if (!strcmp(key, "binds"))
		return parse_binds(backend, v, o);
	if (!strcmp(key, "protected_paths"))
		return parse_protected(backend, v, o);
	if (!strcmp(key, "hostname")) {
		int r = dup_string(v, backend, key, &o->hostname);
		if (r == 0 && strlen(o->hostname) > 64)
			return option_error(backend, key, "longer than 64 characters");
		return r;
	}
	if (!strcmp(key, "detached")) {
		if (v->type != SBX_JSON_BOOL)
			return option_error(backend, key, "expected true or false");
		o->detached = v->b;
		return 0;
	}
	if (!strcmp(key, "idle_ttl_s")) {
		double secs = v->type == SBX_JSON_INT ? (double)v->i
		              : v->type == SBX_JSON_NUMBER ? v->d : -1;
		if (!(secs >= 0 && secs <= 1e9))
			return option_error(backend, key, "expected a number of seconds >= 0");
		o->idle_ttl_ms = (int64_t)(secs * 1000);
		o->idle_ttl_set = true;
		return 0;
	}
	if (allow_mode && !strcmp(key, "prestart")) {
		if (v->type != SBX_JSON_BOOL)
			return option_error(backend, key, "expected true or false");
		o->prestart = v->b;
		return 0;
	}
	if (!strcmp(key, "landlock")) {
		if (v->type != SBX_JSON_BOOL)
			return option_error(backend, key, "expected true or false");
		o->landlock = v->b;
		return 0;
	}
	if (!strcmp(key, "subid_user"))
		return parse_subid_user(backend, v, o);
	if (!strcmp(key, "root_inside")) {
		if (v->type != SBX_JSON_STRING || (strcmp(v->str, "unprivileged") &&
		                                   strcmp(v->str, "allow-host-root")))
			return option_error(backend, key, "expected \"unprivileged\" or "
			                    "\"allow-host-root\"");
		o->allow_host_root = !strcmp(v->str, "allow-host-root");
		return 0;
	}
	return sbx_fail(-SBX_ECONFIG, "config: unknown key '%s.%s'", backend, key);
}

int sbx_sandbox_parse_options(const char *backend, const char *options_json, bool allow_mode,
                              struct sbx_sandbox_options *o)
{
	const char *text = options_json ? options_json : "{}";
	sbx_json *root = NULL;
	char err[256];
	int r = 0;

	memset(o, 0, sizeof *o);
	o->mode = allow_mode ? SBX_SANDBOX_AUTO : SBX_SANDBOX_BWRAP;
	o->landlock = true;
	o->prestart = allow_mode;     /* ns only: bubblewrap builds its sandboxes itself */
	if (sbx_json_parse(text, strlen(text), &root, err, sizeof err) < 0)
		return sbx_fail(-SBX_ECONFIG, "config: key '%s': %s", backend, err);
	if (root->type != SBX_JSON_OBJECT)
		r = sbx_fail(-SBX_ECONFIG, "config: key '%s': expected an object", backend);
	for (size_t i = 0; r == 0 && i < root->n; i++)
		r = parse_option(backend, root->keys[i], root->items[i], allow_mode, o);
	sbx_json_free(root);
	if (r == 0 && o->idle_ttl_set && !o->detached)
		r = option_error(backend, "idle_ttl_s", "only a detached sandbox stops by itself (set "
		                 "'detached': true)");
	if (r == 0 && o->detached && !o->idle_ttl_set)
		o->idle_ttl_ms = SBX_SANDBOX_IDLE_TTL_MS;
	if (r == 0 && !o->hostname && !(o->hostname = strdup("agentsbx")))
		r = sbx_fail(-SBX_ENOMEM, "out of memory");
	if (r < 0)
		sbx_sandbox_free_options(o);
	return r;
}

void sbx_sandbox_free_options(struct sbx_sandbox_options *o)
{
	for (size_t i = 0; i < o->n_binds; i++) {
		free((char *)o->binds[i].source);
		free((char *)o->binds[i].dest);
	}
	free(o->binds);
	for (char **p = o->protected_paths; p && *p; p++)
		free(*p);
	free(o->protected_paths);
	free(o->rootfs);
	free(o->hostname);
	free(o->subid_user);
	memset(o, 0, sizeof *o);
}

/* ---- the seccomp program ------------------------------------------------------------- */

/* Building the deny-list with libseccomp costs about a millisecond, every sandbox the same:
 * it is built once per process, kept in a sealed memfd, and handed to each direct-mode init
 * (which falls back to building it when there is none). */
static pthread_once_t program_once = PTHREAD_ONCE_INIT;
static int program_fd = -1;

static void build_seccomp_program(void)
{
	char err[256];
	int fd = memfd_create("agentsbx-seccomp", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0)
		return;
	if (sbx_seccomp_export(fd, err, sizeof err) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		close(fd);
		return;
	}
	program_fd = fd;
}

static int seccomp_program(void)
{
	pthread_once(&program_once, build_seccomp_program);
	return program_fd;
}

/* ---- the spec the init reads --------------------------------------------------------- */

static void json_key_string(sbx_buf *b, const char *key, const char *value)
{
	sbx_buf_printf(b, "\"%s\":", key);
	sbx_buf_json_string(b, value, strlen(value));
	sbx_buf_puts(b, ",");
}

/* The part of path below dir ("a/b" for dir "/w" and path "/w/a/b"), or NULL. */
static const char *path_below(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	while (n > 1 && dir[n - 1] == '/')
		n--;
	if (strncmp(path, dir, n) != 0 || path[n] != '/' || !path[n + 1])
		return NULL;
	return path + n + 1;
}

/* Under bubblewrap (0.8.0 cannot size a tmpfs), a capped /tmp or workspace needs the init
 * to enter a user and mount namespace of its own (helpers/init/quota.c), which
 * --disable-userns would forbid; its seccomp filter refuses every namespace after that. Only
 * a config that asks for a cap pays for it with bubblewrap's backstop: without one, /tmp is
 * bubblewrap's, uncapped, as it always was. */
static bool bwrap_caps_tmpfs(const struct sbx_sandbox *sb)
{
	return sbx_quota_asked(&sb->cfg);
}

/* ---- users (util/idmap.h) ------------------------------------------------------------- */

/* A bind the sandbox gets as a mount the library made, when it runs as a host range: one
 * from outside the workdir (those inside come with the idmapped workspace). The init, no
 * longer the host's root, could reach the source only as far as any user may. */
static bool bind_needs_tree(const struct sbx_sandbox *sb, size_t i)
{
	return sb->idmap.on && !path_below(sb->opts->binds[i].source, sb->workdir);
}

/* What a host process of ours looks like to the sandbox's init: a uid its namespace does
 * not map, which the kernel shows as the overflow uid. */
static unsigned overflow_uid(void)
{
	_cleanup_close_ int fd = open("/proc/sys/kernel/overflowuid", O_RDONLY | O_CLOEXEC);
	char text[16] = "";
	unsigned v = 65534;

	if (fd >= 0 && read(fd, text, sizeof text - 1) > 0)
		sscanf(text, "%u", &v);
	return v;
}

static void spec_users(sbx_buf *b, const struct sbx_sandbox *sb)
{
	if (!sb->idmap.on)
		return;
	sbx_buf_printf(b, "\"users\":{\"uid\":%u,\"gid\":%u,\"count\":%u},\"host_uid\":%u,",
	               sb->idmap.uid, sb->idmap.gid, sb->idmap.count, overflow_uid());
	if (sbx_quota_disk_bytes(&sb->cfg))
		sbx_buf_puts(b, "\"state_mount\":true,");
}

/* The init's spec. A pre-started init gets the same without the workspace id (it serves
 * any workspace of this shape, and the id only names a cgroup, which such a sandbox has not). */
static char *build_spec(const struct sbx_sandbox *sb, bool prestart)
{
	const struct sbx_sandbox_options *o = sb->opts;
	sbx_buf b = { 0 };
	int trees = 0;

	sbx_buf_puts(&b, prestart ? "{\"prestart\":true," : "{");
	json_key_string(&b, "id", prestart ? "prestarted" : sb->id);
	json_key_string(&b, "hostname", o->hostname);
	json_key_string(&b, "network", sb->network_mode);
	if (sb->proxy)
		sbx_buf_printf(&b, "\"proxy_port\":%d,", SBX_PROXY_PORT);
	if (o->rootfs)
		json_key_string(&b, "rootfs", o->rootfs);
	sbx_buf_puts(&b, "\"binds\":[");
	for (size_t i = 0; i < o->n_binds; i++) {
		const char *in_ws = path_below(o->binds[i].source, sb->workdir);

		sbx_buf_puts(&b, i ? ",{" : "{");
		/* Sources in the workspace are named relative to it: the init opens them beneath it,
		 * and a pre-started init can serve any workspace. */
		json_key_string(&b, in_ws ? "workspace_source" : "source",
		                in_ws ? in_ws : o->binds[i].source);
		json_key_string(&b, "dest", o->binds[i].dest);
		if (bind_needs_tree(sb, i))
			sbx_buf_printf(&b, "\"tree_fd\":%d,", SBX_INIT_FIRST_TREE_FD + trees++);
		sbx_buf_printf(&b, "\"writable\":%s}", o->binds[i].writable ? "true" : "false");
	}
	sbx_buf_puts(&b, "],");
	spec_users(&b, sb);
	if (o->protected_paths) {
		sbx_buf_puts(&b, "\"protected\":[");
		for (char **p = o->protected_paths; *p; p++) {
			sbx_buf_puts(&b, p == o->protected_paths ? "" : ",");
			sbx_buf_json_string(&b, *p, strlen(*p));
		}
		sbx_buf_puts(&b, "],");
	}
	if (sb->cfg.read_only)
		sbx_buf_puts(&b, "\"workspace_readonly\":true,");
	if (o->detached && o->idle_ttl_ms > 0)
		sbx_buf_printf(&b, "\"idle_ttl_ms\":%lld,", (long long)o->idle_ttl_ms);
	/* As root, what the sandbox creates in the workdir is root's on the host (idmapped, or
	 * the host-root fallback): a set-id bit on it would be a root program for any host user. */
	if (geteuid() == 0)
		sbx_buf_puts(&b, "\"refuse_setid\":true,");
	if (sb->mode == SBX_SANDBOX_DIRECT || bwrap_caps_tmpfs(sb))
		sbx_quota_spec_keys(&b, &sb->cfg);
	sbx_buf_printf(&b, "\"memory_bytes\":%llu,\"pids\":%llu,\"landlock\":%s,"
	               "\"seccomp_program\":%s}",
	               (unsigned long long)sb->cfg.limits.memory_bytes,
	               (unsigned long long)sb->cfg.limits.pids, o->landlock ? "true" : "false",
	               sb->mode == SBX_SANDBOX_DIRECT && seccomp_program() >= 0 ? "true" : "false");
	if (b.oom) {
		sbx_buf_free(&b);
		return NULL;
	}
	return sbx_buf_steal(&b, NULL);
}

/* ---- starting the init --------------------------------------------------------------- */

struct argv_builder {
	const char **v;
	size_t n, cap;
	bool oom;
};

static void arg(struct argv_builder *a, const char *s)
{
	if (a->n + 2 > a->cap) {
		size_t cap = a->cap ? 2 * a->cap : 64;
		const char **v = realloc(a->v, cap * sizeof *v);
		if (!v) {
			a->oom = true;
			return;
		}
		a->v = v;
		a->cap = cap;
	}
	a->v[a->n++] = s;
	a->v[a->n] = NULL;
}

static void args3(struct argv_builder *a, const char *x, const char *y, const char *z)
{
	arg(a, x);
	arg(a, y);
	if (z)
		arg(a, z);
}

/* Paths built for bubblewrap's arguments, freed together. */
struct string_pool {
	char **v;
	size_t n;
};

static const char *pooled(struct string_pool *p, char *s)
{
	char **v = s ? realloc(p->v, (p->n + 1) * sizeof *v) : NULL;

	if (!v) {
		free(s);
		return "";  /* bwrap then fails on an empty path, and the start reports it */
	}
	p->v = v;
	p->v[p->n++] = s;
	return s;
}

static void pool_free(struct string_pool *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->v[i]);
	free(p->v);
}

static char *path_join(const char *a, const char *b)
{
	char *s = NULL;

	return asprintf(&s, "%s/%s", a, b) < 0 ? NULL : s;
}

/* "a/b/" → "a/b": with the mark, lstat would follow a symlink. */
static char *without_dir_mark(const char *p)
{
	size_t n = strlen(p);

	return strndup(p, n && p[n - 1] == '/' ? n - 1 : n);
}

static const char *const *protected_list(const struct sbx_sandbox *sb)
{
	return sb->opts->protected_paths ? (const char *const *)sb->opts->protected_paths
	                                 : sbx_default_protected_paths;
}

/* Protected entries missing when the sandbox starts get empty read-only placeholders, which
 * the init or bubblewrap binds read-only onto themselves, so they can't be created from
 * inside. They are made here, for both, and noted in the workspace's journal before they
 * exist (util/journal.h): they go when the sandbox stops — here at close, by the sandbox's
 * tidier when it ends otherwise (its host killed, its idle TTL), or, when both died, at the
 * next open — and only while they are still the empty entries made here. */
static void make_placeholders(struct sbx_sandbox *sb)
{
	const char *const *list = protected_list(sb);
	size_t n = 0;
	sbx_journal *j = NULL;

	free(SBX_TAKE_PTR(sb->placeholders));
	while (list[n])
		n++;
	_cleanup_free_ char **paths = calloc(n + 1, sizeof *paths);
	_cleanup_free_ bool *dirs = calloc(n + 1, sizeof *dirs);
	if (!paths || !dirs || sbx_journal_open(sb->root_fd, SBX_JOURNAL_WORKSPACE, &j) < 0) {
		sbx_error_clear();    /* best effort: the sandbox makes them itself then */
		return;
	}
	for (size_t i = 0; i < n; i++) {
		paths[i] = without_dir_mark(list[i]);
		dirs[i] = list[i][0] && list[i][strlen(list[i]) - 1] == '/';
		if (!paths[i])
			break;
	}
	if (sbx_journal_make_placeholders(j, (const char *const *)paths, dirs, sb->opts->detached,
	                                  &sb->placeholders) < 0)
		sbx_error_clear();
	for (size_t i = 0; i < n; i++)
		free(paths[i]);
	sbx_journal_free(j);
}

static void remove_placeholders(struct sbx_sandbox *sb)
{
	sbx_journal_undo(sb->root_fd, SBX_JOURNAL_WORKSPACE, sb->placeholders);
	free(SBX_TAKE_PTR(sb->placeholders));
}

static void bwrap_system_dirs(struct argv_builder *a, struct string_pool *pool,
                              const char *rootfs)
{
	if (rootfs) {
		args3(a, "--ro-bind", rootfs, "/");
		return;
	}
	for (const char *const *d = sbx_system_dirs; *d; d++) {
		const char *path = pooled(pool, path_join("", *d));
		char target[PATH_MAX];
		struct stat st;
		ssize_t n;

		if (lstat(path, &st) < 0)
			continue;
		if (S_ISLNK(st.st_mode) && (n = readlink(path, target, sizeof target - 1)) > 0) {
			target[n] = '\0';
			args3(a, "--symlink", pooled(pool, strdup(target)), path);
		} else if (S_ISDIR(st.st_mode)) {
			args3(a, "--ro-bind", path, path);
		}
	}
}

static void bwrap_etc_entry(struct argv_builder *a, struct string_pool *pool, const char *name)
{
	const char *path = pooled(pool, path_join("/etc", name));

	args3(a, "--ro-bind-try", path, path);
}

/* The allow-list, with "name*" entries expanded against the host's /etc. */
static void bwrap_etc(struct argv_builder *a, struct string_pool *pool, bool have_rootfs)
{
	if (have_rootfs)
		return;
	args3(a, "--tmpfs", "/etc", NULL);
	for (const char *const *e = sbx_etc_allowlist; *e; e++) {
		size_t len = strlen(*e);
		DIR *d;
		struct dirent *de;

		if ((*e)[len - 1] != '*') {
			bwrap_etc_entry(a, pool, *e);
			continue;
		}
		if (!(d = opendir("/etc")))
			continue;
		while ((de = readdir(d)))
			if (!strncmp(de->d_name, *e, len - 1) && de->d_name[0] != '.')
				bwrap_etc_entry(a, pool, pooled(pool, strdup(de->d_name)));
		closedir(d);
	}
}

/* The fds bubblewrap binds (--bind-fd, --ro-bind-fd): the child gets v[i] as fd
 * BWRAP_FIRST_BIND_FD + i, after the init's own (init_proto.h). Closed by the caller after
 * the start. */
#define BWRAP_FIRST_BIND_FD SBX_INIT_FIRST_TREE_FD

struct fd_list {
	int *v;
	size_t n;
};

/* Takes fd; returns its number in bubblewrap as a string, or NULL (fd closed) when out of
 * memory — the path is then left out, and bwrap_argv reports the shortage. */
static const char *fd_list_take(struct fd_list *l, struct string_pool *pool, int fd)
{
	int *v = realloc(l->v, (l->n + 1) * sizeof *v);
	char *num = NULL;

	if (!v || asprintf(&num, "%d", BWRAP_FIRST_BIND_FD + (int)l->n) < 0) {
		if (v)
			l->v = v;
		close(fd);
		return NULL;
	}
	l->v = v;
	l->v[l->n++] = fd;
	return pooled(pool, num);
}

/* Takes fd (closed on failure). */
static int fd_list_push(struct fd_list *l, int fd)
{
	int *v = realloc(l->v, (l->n + 1) * sizeof *v);

	if (!v) {
		close(fd);
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	}
	l->v = v;
	l->v[l->n++] = fd;
	return 0;
}

static void fd_list_close(struct fd_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		close(l->v[i]);
	free(l->v);
	*l = (struct fd_list){ 0 };
}

static bool already_bound(const struct argv_builder *a, const char *dest)
{
	for (size_t i = 0; i + 2 < a->n; i++)
		if (!strcmp(a->v[i], "--bind-fd") && !strcmp(a->v[i + 2], dest))
			return true;
	return false;
}

static void bind_fd(struct argv_builder *a, struct string_pool *pool, struct fd_list *fds,
                    const char *option, int fd, const char *dest)
{
	const char *num = fd_list_take(fds, pool, fd);

	if (num)
		args3(a, option, num, dest);
	else
		a->oom = true;
}

/* One protected path under bubblewrap, treated as protect.c treats it in direct mode. It is
 * walked from the workspace one component at a time without following a link, and each
 * step is handed to bubblewrap as an open fd: nothing can be swapped in between the look and
 * the bind.
 *  - a directory on the way is bound onto itself, writable as before: a mount point cannot
 *    be renamed, so ".git" cannot be moved aside and replaced by a fresh one with new hooks;
 *  - a regular file on the way (a worktree's ".git" file, which names the real git
 *    directory) decides where the rest resolves: it is bound read-only, and the walk ends;
 *  - the path itself, when it exists (make_placeholders made what was missing), is
 *    bound read-only;
 *  - a symlink ends the walk: binding over it would follow it. */
static void bwrap_protect_one(struct argv_builder *a, struct string_pool *pool,
                              struct fd_list *fds, int root_fd, const char *entry)
{
	_cleanup_free_ char *rel = without_dir_mark(entry), *prefix = NULL;
	_cleanup_close_ int cur = fcntl(root_fd, F_DUPFD_CLOEXEC, 3);
	char *save = NULL, *name, *next;

	if (!rel || !(prefix = calloc(1, strlen(rel) + 1)) || cur < 0) {
		a->oom = a->oom || !rel || !prefix;
		return;
	}
	for (name = strtok_r(rel, "/", &save); name; name = next) {
		int fd = openat(cur, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		const char *dest;
		struct stat st;

		next = strtok_r(NULL, "/", &save);
		if (fd >= 0 && (fstat(fd, &st) < 0 || S_ISLNK(st.st_mode))) {
			close(fd);
			fd = -1;
		}
		if (fd < 0)
			return;   /* missing, or a link: nothing to bind */
		strcat(strcat(prefix, *prefix ? "/" : ""), name);
		dest = pooled(pool, path_join(SBX_SANDBOX_ROOT, prefix));
		if (!next || !S_ISDIR(st.st_mode)) {
			bind_fd(a, pool, fds, "--ro-bind-fd", fd, dest);
			return;
		}
		if (!already_bound(a, dest)) {
			int pin = fcntl(fd, F_DUPFD_CLOEXEC, 3);

			if (pin < 0) {
				close(fd);
				return;
			}
			bind_fd(a, pool, fds, "--bind-fd", pin, dest);
		}
		close(cur);
		cur = fd;
	}
}

static void bwrap_protected(struct argv_builder *a, struct string_pool *pool,
                            struct fd_list *fds, const struct sbx_sandbox *sb)
{
	for (const char *const *p = protected_list(sb); *p; p++)
		bwrap_protect_one(a, pool, fds, sb->root_fd, *p);
}

/* Binds the init makes itself when the sandbox runs as a host range (helpers/init/quota.c):
 * from the idmapped workspace, or idmapped mounts of their own. */
static bool init_makes_bind(const struct sbx_sandbox *sb, size_t i)
{
	return sb->idmap.on && (path_below(sb->opts->binds[i].source, sb->workdir) ||
	                        bind_needs_tree(sb, i));
}

/* Such a bind's mount point, where the init cannot make one: outside its own /tmp and
 * workspace, in bubblewrap's read-only root. A directory, or a file for a file. */
static void bwrap_mount_point(struct argv_builder *a, const struct sbx_sandbox *sb, size_t i)
{
	const struct sbx_bind *b = &sb->opts->binds[i];
	const char *in_ws = path_below(b->source, sb->workdir);
	struct stat st;
	bool dir = true;

	if (!strncmp(b->dest, "/tmp/", 5) || path_below(b->dest, SBX_SANDBOX_ROOT))
		return;
	if (in_ws ? fstatat(sb->root_fd, in_ws, &st, AT_SYMLINK_NOFOLLOW) == 0
	          : lstat(b->source, &st) == 0)
		dir = S_ISDIR(st.st_mode);
	if (dir)
		args3(a, "--dir", b->dest, NULL);
	else
		args3(a, "--ro-bind", "/dev/null", b->dest);
}

/* The workspace: by fd, not by path (the host path can't be swapped under us), with its
 * protected paths; or, as a host range, only its mount point, for the init's idmapped one. */
static void bwrap_workspace(struct argv_builder *a, struct string_pool *pool,
                            struct fd_list *fds, const struct sbx_sandbox *sb)
{
	if (sb->idmap.on) {
		args3(a, "--dir", SBX_SANDBOX_ROOT, NULL);
		return;
	}
	args3(a, sb->cfg.read_only ? "--ro-bind-fd" : "--bind-fd", "5", SBX_SANDBOX_ROOT);
	/* A capped workspace hides this one; the init protects its paths on the tmpfs. */
	if (!sbx_quota_disk_bytes(&sb->cfg))
		bwrap_protected(a, pool, fds, sb);
}

/* A bind source inside the workspace (the MCP run folder, a caller's bind below the workdir)
 * goes to bubblewrap as an fd opened beneath the workspace, as the init opens it in direct
 * mode: bubblewrap would follow a link in the path anywhere on the host. */
static int bwrap_workspace_bind(struct argv_builder *a, struct string_pool *pool,
                                struct fd_list *fds, const struct sbx_sandbox *sb,
                                const struct sbx_bind *b, const char *rel)
{
	int fd = sbx_path_open(sb->root_fd, rel, O_PATH | O_NOFOLLOW | O_CLOEXEC, 0);
	struct stat st;
	char msg[512];

	if (fd >= 0 && (fstat(fd, &st) < 0 || S_ISLNK(st.st_mode) || S_ISCHR(st.st_mode) ||
	                S_ISBLK(st.st_mode))) {
		close(fd);
		return sbx_fail(-SBX_EINVAL, "%s: bind source %s: a link or a device node is not "
		                "allowed", sb->who, b->source);
	}
	if (fd < 0) {
		snprintf(msg, sizeof msg, "%s", sbx_last_error());
		return sbx_fail(fd, "%s: bind source %s: %s", sb->who, b->source, msg);
	}
	bind_fd(a, pool, fds, b->writable ? "--bind-fd" : "--ro-bind-fd", fd, b->dest);
	return 0;
}

static int bwrap_binds(struct argv_builder *a, struct string_pool *pool, struct fd_list *fds,
                       const struct sbx_sandbox *sb)
{
	const struct sbx_sandbox_options *o = sb->opts;
	int r;

	for (size_t i = 0; i < o->n_binds; i++) {
		const char *in_ws = path_below(o->binds[i].source, sb->workdir);

		if (init_makes_bind(sb, i)) {
			bwrap_mount_point(a, sb, i);
			continue;
		}
		if (in_ws && (r = bwrap_workspace_bind(a, pool, fds, sb, &o->binds[i], in_ws)) < 0)
			return r;
		if (!in_ws)
			args3(a, o->binds[i].writable ? "--bind" : "--ro-bind", o->binds[i].source,
			      o->binds[i].dest);
	}
	return 0;
}

/* bubblewrap's command line in *out (caller frees), or a negative code with the message. */
static int bwrap_argv(const struct sbx_sandbox *sb, const char *init, struct string_pool *pool,
                      struct fd_list *fds, const char ***out)
{
	struct argv_builder a = { 0 };
	const struct sbx_sandbox_options *o = sb->opts;
	int r;

	/* --unshare-all only tries the user namespace; --disable-userns needs one for sure. */
	/* The outer process that starts bwrap and watches the host (helpers/init/main.c). */
	arg(&a, init);
	if (o->detached)
		arg(&a, "--detached");
	if (sb->placeholders)
		args3(&a, "--tidy", sb->placeholders, NULL);   /* its outer process tidies */
	/* As root: the outer process starts bubblewrap as the range's first host ids. */
	if (sb->idmap.on) {
		char *ids = NULL;

		if (asprintf(&ids, "%u:%u", sb->idmap.uid, sb->idmap.gid) < 0)
			ids = NULL;
		args3(&a, "--users", pooled(pool, ids), NULL);
	}
	args3(&a, "--proto", "1", NULL);
	args3(&a, "--mode", "bwrap", "--");
	args3(&a, SBX_BWRAP_PATH, "--unshare-all", "--unshare-user");
	if (!strcmp(sb->network_mode, "host"))
		arg(&a, "--share-net");
	/* bwrap's parent is agentsbx-init's single-threaded outer process ("--mode bwrap"), so
	 * --die-with-parent (PR_SET_PDEATHSIG, which fires when the parent *thread* ends) holds. */
	args3(&a, "--die-with-parent", "--new-session", NULL);
	arg(&a, "--as-pid-1");
	/* Unprivileged, it runs the init as that user; the init attaches the workspace in a
	 * user and mount namespace of its own (helpers/init/quota.c), as for a capped /tmp, and
	 * is uid 0 there. (Not "--uid 0": bubblewrap drops CAP_SETFCAP, and without it no
	 * namespace below may map its parent's uid 0.) */
	if (!bwrap_caps_tmpfs(sb) && !sb->idmap.on)
		arg(&a, "--disable-userns");
	args3(&a, "--hostname", o->hostname, NULL);
	bwrap_system_dirs(&a, pool, o->rootfs);
	bwrap_etc(&a, pool, o->rootfs != NULL);
	args3(&a, "--proc", "/proc", NULL);
	args3(&a, "--dev", "/dev", NULL);
	args3(&a, "--tmpfs", "/tmp", NULL);
	bwrap_workspace(&a, pool, fds, sb);
	if ((r = bwrap_binds(&a, pool, fds, sb)) < 0) {
		free(a.v);
		return r;
	}
	args3(&a, "--ro-bind", init, BWRAP_INIT_PATH);
	args3(&a, "--chdir", SBX_SANDBOX_ROOT, NULL);
	args3(&a, "--", BWRAP_INIT_PATH, "--proto");
	args3(&a, "1", "--mode", "inside");
	if (a.oom) {
		free(a.v);
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	}
	*out = a.v;
	return 0;
}

/* Reads what bubblewrap said on stderr, for the error message. */
static void read_stderr(int fd, char *out, size_t len)
{
	ssize_t n;

	out[0] = '\0';
	if (fd < 0)
		return;
	fcntl(fd, F_SETFL, O_NONBLOCK);
	n = read(fd, out, len - 1);
	if (n > 0) {
		out[n] = '\0';
		out[strcspn(out, "\n")] = '\0';
	}
}

static void reap(pid_t pid, int *status)
{
	while (waitpid(pid, status, 0) < 0 && errno == EINTR)
		;
}

/* Whether process pid is in this process's mount namespace. */
static bool in_our_mount_ns(pid_t pid)
{
	char path[64];
	struct stat a, b;

	snprintf(path, sizeof path, "/proc/%d/ns/mnt", (int)pid);
	return stat(path, &a) == 0 && stat("/proc/self/ns/mnt", &b) == 0 &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* Direct mode: READY names the process the host waits for, the tidier (helpers/init/tidy.c),
 * which stays in the host's namespaces, or the outer process itself when there is no tidier.
 * The outer, in the sandbox's user and mount namespaces, is the tidier's only child. Opened
 * while READY says the sandbox lives, so the pid names it and no later process. */
static int open_outer_pidfd(pid_t ready_pid)
{
	pid_t outer = in_our_mount_ns(ready_pid) ? sbx_warden_first_child(ready_pid) : ready_pid;

	if (outer <= 0 || in_our_mount_ns(outer))
		return -1;
	return (int)syscall(SYS_pidfd_open, outer, 0);
}

/* Waits for READY (0), ERROR or the init's early death (negative, with the message). */
static int wait_ready(struct sbx_sandbox *sb, int err_fd)
{
	union {
		uint32_t kind;
		struct sbx_init_ready ready;
		struct sbx_init_error error;
	} msg;
	struct pollfd pfd = { .fd = sb->ctl, .events = POLLIN };
	char said[256];
	int status = 0, n;

	n = poll(&pfd, 1, READY_TIMEOUT_MS);
	if (n == 0)
		return sbx_fail(-SBX_ETIMEDOUT, "%s: the sandbox did not start within %d ms", sb->who,
		                READY_TIMEOUT_MS);
	memset(&msg, 0, sizeof msg);
	ssize_t got = recv(sb->ctl, &msg, sizeof msg, 0);
	if (got == (ssize_t)sizeof msg.ready && msg.kind == SBX_INIT_READY) {
		sb->flags = msg.ready.flags;
		if (sb->outer_pidfd >= 0)
			close(SBX_TAKE_FD(sb->outer_pidfd));
		if (sb->mode == SBX_SANDBOX_DIRECT && msg.ready.init_pid > 0)
			sb->outer_pidfd = open_outer_pidfd(msg.ready.init_pid);
		memcpy(sb->cgroup_note, msg.ready.cgroup_note, sizeof sb->cgroup_note);
		sb->cgroup_note[sizeof sb->cgroup_note - 1] = '\0';
		return 0;
	}
	if (got == (ssize_t)sizeof msg.error && msg.kind == SBX_INIT_ERROR) {
		msg.error.message[sizeof msg.error.message - 1] = '\0';
		return sbx_fail(-SBX_EBACKEND, "%s: sandbox setup failed: %s", sb->who,
		                msg.error.message);
	}
	read_stderr(err_fd, said, sizeof said);
	if (sb->pid > 0)
		reap(sb->pid, &status);
	sb->pid = -1;
	if (said[0])
		return sbx_fail(-SBX_EBACKEND, "%s: the sandbox did not start: %s", sb->who, said);
	return sbx_fail(-SBX_EBACKEND, "%s: the sandbox init exited (status 0x%x) before it was "
	                "ready", sb->who, (unsigned)status);
}

/* The fds a start hands the init (init_proto.h: 3 control, 4 spec, 5 workspace, 6 seccomp
 * program, 7 proxy bridge, 8 idmapped workspace, 9 state folder; -1 leaves a number closed)
 * and, from fd 10 on, bubblewrap's bind fds or the binds' idmapped mounts. */
struct init_fds {
	int ctl, spec, workspace, bridge, tree, state;
	const struct fd_list *extra;
};

static int spawn_init(enum sbx_sandbox_mode mode, bool detached, const char *init,
                      const char *const *bwrap, const char *tidy, const struct init_fds *f,
                      int err_fd, pid_t *pid)
{
	const char *direct[10];
	size_t k = 0;
	const size_t own = SBX_INIT_FIRST_TREE_FD - SBX_INIT_CONTROL_FD;
	size_t n = own + (f->extra ? f->extra->n : 0);
	int *fds = malloc(n * sizeof *fds), err;

	if (!fds)
		return ENOMEM;
	fds[0] = f->ctl;
	fds[1] = f->spec;
	fds[2] = f->workspace;
	/* fd 6: the seccomp program the spec announced (built before the spec was). */
	fds[3] = mode == SBX_SANDBOX_DIRECT ? seccomp_program() : -1;
	fds[4] = f->bridge;
	fds[5] = f->tree;
	fds[6] = f->state;
	if (n > own)
		memcpy(fds + own, f->extra->v, f->extra->n * sizeof *fds);
	direct[k++] = INIT_NAME;
	if (detached)
		direct[k++] = "--detached";
	else if (f->workspace < 0)
		direct[k++] = "--prestarted";   /* a spare: no workspace yet */
	if (tidy) {
		/* The placeholders' note, for the tidier (helpers/init/tidy.c). */
		direct[k++] = "--tidy";
		direct[k++] = tidy;
	}
	direct[k++] = "--proto";
	direct[k++] = "1";
	direct[k++] = "--mode";
	direct[k++] = "direct";
	direct[k] = NULL;
	err = sbx_spawn_with_fds(init, mode == SBX_SANDBOX_BWRAP ? bwrap : direct, fds, n, err_fd,
	                         pid);
	free(fds);
	return err;
}

/* Why the workdir (or a bind's source) cannot be given as an idmapped mount, as an error. */
static int idmap_failure(const struct sbx_sandbox *sb, int dir_fd, const char *what, int r)
{
	char why[256];

	if (!sbx_idmap_unsupported(r))
		return sbx_fail(sbx_errno_code(-r), "%s: an idmapped mount of %s: %s", sb->who, what,
		                strerror(-r));
	sbx_idmap_why(dir_fd, r, why, sizeof why);
	return sbx_fail(-SBX_ENOSYS, "%s: %s cannot be given to the sandbox through an idmapped "
	                "mount (%s): as root, the sandbox runs as unprivileged host ids (inside 0 -> "
	                "host %u, %s), and only such a mount keeps the files there yours; the key "
	                "'%s.root_inside': \"allow-host-root\" runs it as host root instead, with a "
	                "warning in the audit log", sb->who, what, why, sb->idmap.uid,
	                sb->idmap.source, sb->who);
}

static int dup_root(const struct sbx_sandbox *sb, int *out)
{
	if ((*out = fcntl(sb->root_fd, F_DUPFD_CLOEXEC, 3)) < 0)
		return sbx_fail(sbx_errno_code(errno), "%s: dup: %s", sb->who, strerror(errno));
	return 0;
}

/* The workspace as the sandbox gets it: the directory, or (as a host range) its idmapped
 * mount, the one made when the users were decided or a new one. */
static int workspace_fd_for(struct sbx_sandbox *sb, int *out)
{
	int r;

	if (!sb->idmap.on)
		return dup_root(sb, out);
	if (sb->ws_tree >= 0) {
		*out = SBX_TAKE_FD(sb->ws_tree);
		return 0;
	}
	r = sbx_idmap_tree(&sb->idmap, sb->root_fd, out);
	return r < 0 ? idmap_failure(sb, sb->root_fd, sb->workdir, r) : 0;
}

/* As a host range, a capped workspace's state folder as the host sees it (init_proto.h,
 * fd 9); else -1. */
static int state_fd_for(const struct sbx_sandbox *sb, int *out)
{
	int r;

	*out = -1;
	if (!sb->idmap.on || !sbx_quota_disk_bytes(&sb->cfg))
		return 0;
	r = sbx_idmap_plain_tree(sb->root_fd, SBX_STATE_DIR, out);
	return r < 0 ? sbx_fail(sbx_errno_code(-r), "%s: a mount of the state folder %s: %s",
	                        sb->who, SBX_STATE_DIR, strerror(-r)) : 0;
}

/* One bind's mount: idmapped, so that the sandbox's root is the owner of what the host's
 * root owns there; or, for a read-only bind on a file system without idmapped mounts, as the
 * host has it (its files are then the sandbox's only as far as any user may read them). */
static int bind_tree(const char *who, const struct sbx_idmap *m, const char *source,
                     bool writable, int *tree)
{
	_cleanup_close_ int src = open(source, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	char why[256];
	int r;

	if (src < 0)
		return sbx_fail(sbx_errno_code(errno), "%s: open the bind source %s: %s", who, source,
		                strerror(errno));
	r = sbx_idmap_tree(m, src, tree);
	if (r < 0 && !writable && sbx_idmap_unsupported(r))
		r = sbx_idmap_plain_tree(src, "", tree);
	if (r == 0)
		return 0;
	if (!sbx_idmap_unsupported(r))
		return sbx_fail(sbx_errno_code(-r), "%s: a mount of the bind source %s: %s", who,
		                source, strerror(-r));
	sbx_idmap_why(src, r, why, sizeof why);
	return sbx_fail(-SBX_ENOSYS, "config: key '%s.binds': the writable bind source %s cannot "
	                "be given to the sandbox through an idmapped mount (%s): as root, the "
	                "sandbox runs as unprivileged host ids; make the bind read-only, or the "
	                "key '%s.root_inside': \"allow-host-root\" runs it as host root", who,
	                source, why, who);
}

/* The mounts of the binds that need one (bind_needs_tree), in the spec's order (which is that
 * of the fds from SBX_INIT_FIRST_TREE_FD). */
static int bind_trees_for(const struct sbx_sandbox *sb, struct fd_list *trees)
{
	const struct sbx_sandbox_options *o = sb->opts;
	int r = 0;

	for (size_t i = 0; i < o->n_binds && r == 0; i++) {
		int tree;

		if (!bind_needs_tree(sb, i))
			continue;
		if (trees->n == SBX_INIT_MAX_TREES)
			r = sbx_fail(-SBX_ECONFIG, "config: key '%s.binds': more than %d binds", sb->who,
			             SBX_INIT_MAX_TREES);
		else if ((r = bind_tree(sb->who, &sb->idmap, o->binds[i].source, o->binds[i].writable,
		                        &tree)) == 0)
			r = fd_list_push(trees, tree);
	}
	return r;
}

/* The same from the spec itself, for a spare's starter, which has the spec and no sandbox:
 * the binds whose entry names a "tree_fd". */
static int spec_bind_trees(const char *who, const char *spec, struct fd_list *trees)
{
	const sbx_json *users, *binds;
	struct sbx_idmap m = { .on = true };
	sbx_json *root = NULL;
	char err[128];
	int r = 0;

	if (sbx_json_parse(spec, strlen(spec), &root, err, sizeof err) < 0)
		return sbx_fail(-SBX_EPROTO, "%s: the sandbox spec: %s", who, err);
	users = sbx_json_get(root, "users");
	binds = sbx_json_get(root, "binds");
	if (users) {
		m.uid = (uint32_t)sbx_json_get(users, "uid")->i;
		m.gid = (uint32_t)sbx_json_get(users, "gid")->i;
		m.count = (uint32_t)sbx_json_get(users, "count")->i;
	}
	for (size_t i = 0; users && binds && i < binds->n && r == 0; i++) {
		const sbx_json *b = binds->items[i], *rw = sbx_json_get(b, "writable");
		int tree;

		if (!sbx_json_get(b, "tree_fd"))
			continue;
		if (trees->n == SBX_INIT_MAX_TREES)
			r = sbx_fail(-SBX_ECONFIG, "config: key '%s.binds': more than %d binds", who,
			             SBX_INIT_MAX_TREES);
		else if ((r = bind_tree(who, &m, sbx_json_get(b, "source")->str, rw && rw->b,
		                        &tree)) == 0)
			r = fd_list_push(trees, tree);
	}
	sbx_json_free(root);
	return r;
}

/* The fds of this start; *f's fds are then the caller's to close (init_fds_close). */
static int init_fds_open(struct sbx_sandbox *sb, struct init_fds *f, struct fd_list *trees)
{
	int r;

	*f = (struct init_fds){ .ctl = -1, .spec = -1, .workspace = -1, .bridge = -1, .tree = -1,
	                        .state = -1, .extra = trees };
	/* fd 5 is the host's view in any case: the tidier's (helpers/init/tidy.c). */
	if ((r = dup_root(sb, &f->workspace)) < 0 ||
	    (sb->idmap.on && (r = workspace_fd_for(sb, &f->tree)) < 0) ||
	    (r = state_fd_for(sb, &f->state)) < 0)
		return r;
	return sb->idmap.on ? bind_trees_for(sb, trees) : 0;
}

static void init_fds_close(struct init_fds *f)
{
	const int fds[] = { f->spec, f->workspace, f->bridge, f->tree, f->state };

	for (size_t i = 0; i < SBX_ARRAY_SIZE(fds); i++)
		if (fds[i] >= 0)
			close(fds[i]);
	*f = (struct init_fds){ .ctl = -1, .spec = -1, .workspace = -1, .bridge = -1, .tree = -1,
	                        .state = -1 };
}

/* Starts the init and waits until it is ready. */
static int launch_fresh(struct sbx_sandbox *sb, const char *init)
{
	_cleanup_free_ char *spec = NULL;
	_cleanup_close_ int child_ctl = -1, err_read = -1, err_write = -1;
	_cleanup_free_ const char **argv = NULL;
	struct string_pool pool = { 0 };
	struct fd_list extra = { 0 };
	struct init_fds f;
	int sv[2], p[2], r, err;

	make_placeholders(sb);
	if (!(spec = build_spec(sb, false)))
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	if ((r = init_fds_open(sb, &f, &extra)) < 0)
		goto out;
	if ((f.spec = sbx_memfd_with("agentsbx-spec", spec, strlen(spec))) < 0) {
		r = f.spec;
		goto out;
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		r = sbx_fail(sbx_errno_code(errno), "%s: socketpair: %s", sb->who, strerror(errno));
		goto out;
	}
	sb->ctl = sv[0];
	f.ctl = child_ctl = sv[1];
	/* What the starter says on stderr explains a failure before the protocol runs. */
	if (pipe2(p, O_CLOEXEC) == 0) {
		err_read = p[0];
		err_write = p[1];
	}
	if (sb->mode == SBX_SANDBOX_BWRAP && (r = bwrap_argv(sb, init, &pool, &extra, &argv)) < 0)
		goto out;
	if (sb->proxy && (r = sbx_netproxy_bridge(sb->proxy, &f.bridge)) < 0)
		goto out;
	err = spawn_init(sb->mode, sb->opts->detached, init, argv, sb->placeholders, &f, err_write,
	                 &sb->pid);
	pool_free(&pool);
	pool = (struct string_pool){ 0 };
	fd_list_close(&extra);
	init_fds_close(&f);
	if (err) {
		sb->pid = -1;
		return sbx_fail(-SBX_EBACKEND, "%s: start %s: %s", sb->who,
		                init, strerror(err));
	}
	/* Only the init may hold the other end: its closing is how we see the sandbox die. */
	close(SBX_TAKE_FD(child_ctl));
	close(SBX_TAKE_FD(err_write));
	if ((r = wait_ready(sb, err_read)) < 0)
		return r;
	/* A pids limit only a cgroup enforces: refuse rather than run without it. */
	if (sb->cfg.limits.pids && !(sb->flags & SBX_INIT_HAS_CGROUP))
		return sbx_fail(-SBX_ECONFIG, "config: key 'limits.pids': this sandbox has no cgroup "
		                "to enforce it (%s)", sb->cgroup_note[0] ? sb->cgroup_note :
		                "none could be made");
	return 0;
out:
	pool_free(&pool);
	fd_list_close(&extra);
	init_fds_close(&f);
	return r;
}

/* Ends the init by closing its channel (it exits, and the kernel empties its PID namespace
 * before the outer process can see it gone), then kills the outer process if it lingers. */
static void stop_init(struct sbx_sandbox *sb)
{
	if (sb->ctl >= 0)
		close(SBX_TAKE_FD(sb->ctl));
	sbx_reap_or_kill(sb->pid, STOP_TIMEOUT_MS);
	sb->pid = -1;
	sbx_pidfd_wait_or_kill(SBX_TAKE_FD(sb->pidfd), STOP_TIMEOUT_MS);
}

/* After the init is gone: the placeholders, and the cgroup the outer process made (under this
 * process's own cgroup, which the outer process shared; it cannot remove it while in it). */
static void stop_and_tidy(struct sbx_sandbox *sb)
{
	stop_init(sb);
	remove_placeholders(sb);
	if (sb->flags & SBX_INIT_HAS_CGROUP)
		sbx_cgroup_cleanup(sb->id);
}

/* ---- pre-started sandboxes (sandbox_spare.h) ------------------------------------------ */

/* A pre-started init knows neither the workspace id (cgroup limits are per id) nor a proxy
 * (one per workspace), and only direct mode builds its own root. */
static bool can_prestart(const struct sbx_sandbox *sb)
{
	return sb->opts->prestart && sb->mode == SBX_SANDBOX_DIRECT && !sb->opts->detached &&
	       !sb->proxy && !sb->cfg.limits.memory_bytes && !sb->cfg.limits.pids;
}

/* What a spare must match to serve a sandbox: its spec, and the ids the init maps into its
 * user namespace (a process that changes its uid must not get a spare of the old one). */
static char *spare_shape(const struct sbx_sandbox *sb)
{
	_cleanup_free_ char *spec = build_spec(sb, true);
	char *shape = NULL;

	if (!spec || asprintf(&shape, "%u:%u %s", (unsigned)getuid(), (unsigned)getgid(),
	                      spec) < 0)
		return NULL;
	return shape;
}

/* Starts an init of this shape and parks it: it builds itself while the caller goes on. A
 * failure costs only the next start its head start. Runs on the spare's starter thread
 * (sandbox_spare.h). Takes shape. */
static void prestart(char *shape)
{
	struct sbx_spare s = { .shape = shape, .pidfd = -1, .ctl = -1, .err_fd = -1 };
	_cleanup_close_ int spec_fd = -1, child_ctl = -1, err_write = -1;
	_cleanup_free_ char *init = NULL;
	int sv[2], p[2];
	pid_t first;

	const char *spec = strchr(shape, '{');   /* after the "uid:gid " of spare_shape */

	if (sbx_helper_path(INIT_NAME, &init) < 0 ||
	    (spec_fd = sbx_memfd_with("agentsbx-spec", spec, strlen(spec))) < 0 ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		sbx_spare_discard(&s);
		return;
	}
	s.ctl = sv[0];
	child_ctl = sv[1];
	if (pipe2(p, O_CLOEXEC) == 0) {
		s.err_fd = p[0];
		err_write = p[1];
	}
	struct fd_list trees = { 0 };
	const struct init_fds fds = { .ctl = child_ctl, .spec = spec_fd, .workspace = -1,
	                              .bridge = -1, .tree = -1, .state = -1, .extra = &trees };

	if (spec_bind_trees("prestart", spec, &trees) < 0 ||
	    spawn_init(SBX_SANDBOX_DIRECT, false, init, NULL, NULL, &fds, err_write, &first) != 0) {
		fd_list_close(&trees);
		close(SBX_TAKE_FD(child_ctl));   /* no spare holds it: the discard need not wait */
		sbx_spare_discard(&s);
		return;
	}
	fd_list_close(&trees);
	/* The first process forks the outer one and exits at once; this thread is the one to
	 * wait for that, not the caller. The outer's pidfd is read when the spare is taken. */
	int status;
	reap(first, &status);
	sbx_spare_park(&s);
}

/* ACTIVATE with the workspace (and, init_proto.h, the state folder's mount). */
static int send_activation(struct sbx_sandbox *sb, const struct sbx_init_spawn *activate)
{
	int fds[2] = { -1, -1 }, r;

	if ((r = workspace_fd_for(sb, &fds[0])) == 0 && (r = state_fd_for(sb, &fds[1])) == 0)
		r = sbx_send_with_fds(sb->ctl, activate, sizeof *activate, fds, fds[1] >= 0 ? 2 : 1);
	for (int i = 0; i < 2; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return r;
}

/* Hands the workspace to a parked spare of this shape and waits for it. 0 when it is ready;
 * negative when there is none or it failed (it is stopped then, and an ordinary start,
 * which reports whatever is wrong, follows). */
static int launch_from_spare(struct sbx_sandbox *sb, const char *shape)
{
	const struct sbx_init_spawn activate = { .kind = SBX_INIT_ACTIVATE };
	struct sbx_spare s;
	int r;

	if (!sbx_spare_take(shape, &s))
		return -SBX_ENOENT;
	if ((r = sbx_spare_receive_outer(&s, READY_TIMEOUT_MS)) < 0) {
		sbx_spare_discard(&s);
		return r;
	}
	sb->pidfd = SBX_TAKE_FD(s.pidfd);
	sb->ctl = SBX_TAKE_FD(s.ctl);
	make_placeholders(sb);
	r = send_activation(sb, &activate);
	if (r == 0)
		r = wait_ready(sb, s.err_fd);
	sbx_spare_discard(&s);
	if (r < 0) {
		stop_init(sb);
		remove_placeholders(sb);
	}
	return r < 0 ? r : 0;
}

/* A capped workspace: the root the init hands over right after READY. */
static int take_files_root(struct sbx_sandbox *sb)
{
	int fd, r;

	if (!sbx_quota_disk_bytes(&sb->cfg))
		return 0;
	if ((r = sbx_quota_receive_files_root(sb->ctl, sb->who, &fd)) < 0)
		return r;
	/* The sandbox's tmpfs belongs to its user namespace, where the host's root has no id: an
	 * idmapped view gives it the sandbox's root's (util/idmap.h). */
	if (sb->idmap.on && (r = sbx_idmap_host_view(fd)) < 0) {
		close(fd);
		return sbx_fail(sbx_errno_code(-r), "%s: the host's view of the capped workspace: "
		                "mount_setattr: %s", sb->who, strerror(-r));
	}
	if (sb->files_root >= 0)
		close(sb->files_root);
	sb->files_root = fd;
	return 0;
}

static int launch(struct sbx_sandbox *sb)
{
	_cleanup_free_ char *init = NULL, *shape = NULL;
	int r;

	if ((r = sbx_helper_path(INIT_NAME, &init)) < 0) {
		char why[512];
		snprintf(why, sizeof why, "%s", sbx_last_error());
		return sbx_fail(-SBX_EBACKEND, "%s: %s", sb->who, why);
	}
	if (can_prestart(sb) && !(shape = spare_shape(sb)))
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	if ((!shape || launch_from_spare(sb, shape) < 0) && (r = launch_fresh(sb, init)) < 0)
		return r;
	if ((r = take_files_root(sb)) < 0)
		return r;
	if (shape && sbx_spare_wanted(shape))
		sbx_spare_schedule(SBX_TAKE_PTR(shape), prestart);
	return 0;
}

static void free_sandbox(struct sbx_sandbox *sb)
{
	if (sb->pidfd >= 0)
		close(sb->pidfd);
	if (sb->outer_pidfd >= 0)
		close(sb->outer_pidfd);
	sbx_netproxy_stop(sb->proxy);
	sbx_runclient_set_destroy(&sb->live);
	free(sb->placeholders);
	if (sb->root_fd >= 0)
		close(sb->root_fd);
	if (sb->files_root >= 0)
		close(sb->files_root);
	if (sb->ws_tree >= 0)
		close(sb->ws_tree);
	free(sb->workdir);
	free(sb->id);
	free(sb->network_mode);
	free(sb);
}

/* ---- detached sandboxes (sandbox_attach.c) -------------------------------------------- */

/* The socket lives in the state folder: a sandbox that could write there could replace it. */
static bool protects_state_dir(const struct sbx_sandbox *sb)
{
	for (const char *const *p = protected_list(sb); *p; p++)
		if (!strcmp(*p, SBX_STATE_DIR "/") || !strcmp(*p, SBX_STATE_DIR))
			return true;
	return false;
}

/* Under the run directory's lock: attach to the sandbox running for this workdir, or launch
 * one (its init started with --detached) and hand it its socket. */
static int attach_or_launch(struct sbx_sandbox *sb)
{
	_cleanup_close_ int run = -1;
	_cleanup_hostlock_ int lock = -1;
	struct sbx_init_ready ready;
	int r, status;

	if (!protects_state_dir(sb))
		return sbx_fail(-SBX_ECONFIG, "config: key '%s.detached': protected_paths must keep "
		                "'%s/' (the detached sandbox's socket lives there)", sb->who,
		                SBX_STATE_DIR);
	if ((r = sbx_attach_open_run_dir(sb->root_fd, true, &run)) < 0 ||
	    (r = sbx_attach_lock(run, &lock)) < 0)
		return r;
	r = sbx_attach_connect(run, sb->who, &ready, NULL, &sb->ctl);
	if (r == 0) {
		sb->flags = ready.flags;
		memcpy(sb->cgroup_note, ready.cgroup_note, sizeof sb->cgroup_note);
		return 0;
	}
	if (r != -SBX_ENOENT)
		return r;
	/* None runs, and none can start while we hold the lock: the placeholders of one that
	 * ended go before ours are made (its tidier may have been killed with it). */
	sbx_journal_sweep(sb->root_fd, SBX_JOURNAL_WORKSPACE, SBX_SWEEP_DETACHED);
	if ((r = launch(sb)) < 0)
		return r;
	/* The first half of the detached init has exited (helpers/init/main.c, leave_host). */
	reap(sb->pid, &status);
	sb->pid = -1;
	return sbx_attach_hand_listener(run, sb->ctl, sb->who);
}

/* reset: stop the running sandbox (whoever started it) and start afresh. */
static int restart_detached(struct sbx_sandbox *sb)
{
	int r;

	sbx_runclient_kill_all(&sb->live, false);
	if (sb->ctl >= 0)
		close(SBX_TAKE_FD(sb->ctl));
	if ((r = sbx_sandbox_destroy_detached(sb->workdir, sb->id, NULL)) < 0)
		return r;
	return attach_or_launch(sb);
}

/* The fallback's warning, one record in the audit log at each open (the way
 * util/auditlog.h has helpers write them). */
static void audit_host_root(const struct sbx_sandbox *sb, const sbx_backend_config *cfg,
                            const char *why)
{
	char now[64];
	sbx_buf b = { 0 };

	if (!SBX_BACKEND_CONFIG_HAS(cfg, audit_keep) || cfg->audit_dir_fd < 0)
		return;
	sbx_auditlog_time(now, sizeof now);
	sbx_buf_printf(&b, "{\"time\":\"%s\",\"workspace\":", now);
	sbx_buf_json_string(&b, sb->id, strlen(sb->id));
	sbx_buf_printf(&b, ",\"kind\":\"users\",\"level\":\"warning\",\"event\":\"host-root\","
	               "\"rule\":\"%s.root_inside allow-host-root\",\"mapping\":\"inside 0 -> host "
	               "0\",\"reason\":", sb->who);
	sbx_buf_json_string(&b, why, strlen(why));
	sbx_buf_puts(&b, ",\"exposure\":\"commands run as the host's root: whatever gets past "
	             "the sandbox's other walls owns every root-owned file\"}\n");
	if (!b.oom)
		sbx_auditlog_append(cfg->audit_dir_fd, b.data, b.len, cfg->audit_max_bytes,
		                    cfg->audit_keep);
	sbx_buf_free(&b);
}

/* As root: the host range the sandbox runs as, and an idmapped mount of its workdir to prove
 * the file system takes one (kept for the first start). Where it does not, the open is
 * refused, or with root_inside "allow-host-root" the sandbox runs as host root, audited. */
static int decide_users(struct sbx_sandbox *sb, const sbx_backend_config *cfg)
{
	char why[320];
	int r;

	if ((r = sbx_idmap_resolve(sb->who, sb->opts->subid_user, &sb->idmap)) < 0 ||
	    !sb->idmap.on)
		return r;
	r = sbx_idmap_tree(&sb->idmap, sb->root_fd, &sb->ws_tree);
	if (r < 0 && !sbx_idmap_unsupported(r))
		return idmap_failure(sb, sb->root_fd, sb->workdir, r);
	if (r < 0)
		sbx_idmap_why(sb->root_fd, r, why, sizeof why);
	else if (sbx_quota_disk_bytes(&sb->cfg) && !sbx_idmap_tmpfs_ok(why, sizeof why))
		r = -EOPNOTSUPP;   /* the host could not write into the capped workspace */
	if (r == 0)
		return 0;
	if (!sb->opts->allow_host_root)
		return r == -EOPNOTSUPP
		       ? sbx_fail(-SBX_ENOSYS, "%s: the capped workspace (limits.disk_bytes) cannot "
		                  "be served to the host as root (%s); the key '%s.root_inside': "
		                  "\"allow-host-root\" runs it as host root instead, with a warning in "
		                  "the audit log", sb->who, why, sb->who)
		       : idmap_failure(sb, sb->root_fd, sb->workdir, r);
	if (sb->ws_tree >= 0)
		close(SBX_TAKE_FD(sb->ws_tree));
	sb->idmap.on = false;
	audit_host_root(sb, cfg, why);
	return 0;
}

/* Mode "allowlist": the workspace's proxy, before the sandbox that will reach it. The config
 * copy keeps no pointer to the policy: the core owns it, and it changes. */
static int start_proxy(struct sbx_sandbox *sb, const sbx_backend_config *cfg)
{
	struct sbx_netproxy_settings s;

	sbx_netproxy_settings_of(&s, sb->id, cfg);
	sb->cfg.network_json = NULL;
	sb->cfg.audit_dir_fd = -1;
	if (strcmp(sb->network_mode, "allowlist") != 0)
		return 0;
	if (!s.network_json)
		return sbx_fail(-SBX_ECONFIG, "%s: network mode 'allowlist' came without its policy",
		                sb->who);
	return sbx_netproxy_start(sb->who, &s, &sb->proxy);
}

/* The backstop for cgroups whose sandbox and tidier were both killed (helpers/init/tidy.c):
 * swept before a sandbox that makes one starts, and once by every process that starts any
 * (only root, or a delegated cgroup v2 tree, can have made them). */
static pthread_once_t cgroup_sweep_once = PTHREAD_ONCE_INIT;

static void sweep_cgroups_once(void)
{
	sbx_cgroup_sweep();
}

static void sweep_dead_cgroups(const sbx_backend_config *cfg)
{
	if (cfg->limits.memory_bytes || cfg->limits.pids)
		sbx_cgroup_sweep();
	else
		pthread_once(&cgroup_sweep_once, sweep_cgroups_once);
}

/* Enough file descriptors to start a sandbox? Short of them, every step failed in its own
 * way, and the probes that followed took that for a host without namespaces. Needed here:
 * the init's channels, the spec and bubblewrap's bind fds; in the init (the limit is
 * inherited): its own, every /etc entry it pins and each protected path's pins. */
static int check_fds(const char *who, const struct sbx_sandbox_options *o)
{
	int protected = 0;

	for (const char *const *p = o->protected_paths ? (const char *const *)o->protected_paths
	                                               : sbx_default_protected_paths; *p; p++)
		protected++;
	return sbx_fd_headroom(who, "start the sandbox", 12 + protected,
	                       48 + 2 * protected + (int)o->n_binds);
}

int sbx_sandbox_start(const char *who, const sbx_backend_config *cfg,
                      const struct sbx_sandbox_options *o, enum sbx_sandbox_mode mode,
                      struct sbx_sandbox **out)
{
	struct sbx_sandbox *sb = calloc(1, sizeof *sb);
	int r;

	*out = NULL;
	if (!sb)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	sbx_runclient_set_init(&sb->live);
	sb->who = who;
	sb->mode = mode;
	sb->opts = o;
	sb->ctl = -1;
	sb->pid = -1;
	sb->pidfd = -1;
	sb->outer_pidfd = -1;
	sb->root_fd = -1;
	sb->files_root = -1;
	sb->ws_tree = -1;
	memcpy(&sb->cfg, cfg, cfg->size < sizeof sb->cfg ? cfg->size : sizeof sb->cfg);
	sb->workdir = cfg->workdir ? strdup(cfg->workdir) : NULL;
	sb->id = strdup(cfg->id);
	sb->network_mode = strdup(cfg->network_mode ? cfg->network_mode : "none");
	if (!sb->workdir || !sb->id || !sb->network_mode) {
		free_sandbox(sb);
		return sbx_fail(cfg->workdir ? -SBX_ENOMEM : -SBX_EINVAL,
		                "%s: %s", who, cfg->workdir ? "out of memory" : "a workdir is required");
	}
	sb->root_fd = open(sb->workdir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (sb->root_fd < 0) {
		r = sbx_fail(sbx_errno_code(errno), "%s: open %s: %s", who, sb->workdir,
		             strerror(errno));
		free_sandbox(sb);
		return r;
	}
	if (sb->opts->detached && strcmp(sb->network_mode, "allowlist") == 0) {
		free_sandbox(sb);
		return sbx_fail(-SBX_ECONFIG, "config: key '%s.detached': a detached sandbox cannot "
		                "use network mode 'allowlist' (its proxy lives with the host process)",
		                who);
	}
	if ((r = decide_users(sb, cfg)) < 0 || (r = start_proxy(sb, cfg)) < 0) {
		free_sandbox(sb);
		return r;
	}
	sweep_dead_cgroups(&sb->cfg);
	if ((r = sb->opts->detached ? attach_or_launch(sb) : launch(sb)) < 0) {
		char why[1024];
		snprintf(why, sizeof why, "%s", sbx_last_error());
		stop_and_tidy(sb);   /* quietly: the launch's message is the one that matters */
		sbx_fail(r, "%s", why);
		free_sandbox(sb);
		return r;
	}
	*out = sb;
	return 0;
}

int sbx_sandbox_restart(struct sbx_sandbox *sb)
{
	if (sb->opts->detached)
		return restart_detached(sb);
	sbx_runclient_kill_all(&sb->live, false);
	stop_and_tidy(sb);
	return launch(sb);
}

void sbx_sandbox_stop(struct sbx_sandbox *sb)
{
	if (!sb)
		return;
	sbx_runclient_kill_all(&sb->live, true);
	if (sb->opts->detached)
		close(SBX_TAKE_FD(sb->ctl));   /* only detaches: the sandbox runs on */
	else
		stop_and_tidy(sb);
	free_sandbox(sb);
	sbx_spare_nudge();   /* the caller's work is done: a spare may start now */
}

/* ---- commands ------------------------------------------------------------------------ */

/* The spawn message: the header, then the payload (init_proto.h); *len counts both. */
static char *build_message(const sbx_backend_spawn *req, const sbx_backend_limits *limits,
                           size_t *len)
{
	sbx_rlimit_text rl[SBX_RUNCLIENT_MAX_RLIMITS];
	size_t nrl = sbx_runclient_rlimits(limits, rl);
	struct sbx_init_spawn head = { .kind = SBX_INIT_SPAWN, .nlimits = (uint32_t)nrl };
	sbx_buf b = { 0 };

	sbx_buf_append(&b, &head, sizeof head);
	sbx_buf_append(&b, req->cwd, strlen(req->cwd) + 1);
	for (; req->argv[head.argc]; head.argc++)
		sbx_buf_append(&b, req->argv[head.argc], strlen(req->argv[head.argc]) + 1);
	for (; req->envp && req->envp[head.envc]; head.envc++)
		sbx_buf_append(&b, req->envp[head.envc], strlen(req->envp[head.envc]) + 1);
	for (size_t i = 0; i < nrl; i++)
		sbx_buf_append(&b, rl[i], strlen(rl[i]) + 1);
	if (b.oom || b.len - sizeof head > SBX_INIT_PAYLOAD_MAX) {
		sbx_buf_free(&b);
		return NULL;
	}
	head.payload_len = (uint32_t)(b.len - sizeof head);
	memcpy(b.data, &head, sizeof head);
	return sbx_buf_steal(&b, len);
}

/* The payload travels in the message itself, or in a memfd when it is larger than the inline
 * limit (a memfd per command costs an inode, and few commands need one). */
static int send_spawn(int ctl, const char *msg, size_t len,
                      const int stdio_and_runner[SBX_INIT_SPAWN_FDS - 1])
{
	const size_t head_len = sizeof(struct sbx_init_spawn);
	_cleanup_close_ int payload_fd = -1;
	int fds[SBX_INIT_SPAWN_FDS];

	memcpy(fds, stdio_and_runner, sizeof *fds * (SBX_INIT_SPAWN_FDS - 1));
	if (len - head_len <= SBX_INIT_INLINE_MAX)
		return sbx_send_with_fds(ctl, msg, len, fds, SBX_INIT_SPAWN_FDS - 1);
	payload_fd = sbx_memfd_with("agentsbx-spawn", msg + head_len, len - head_len);
	if (payload_fd < 0)
		return -EIO;
	fds[SBX_INIT_SPAWN_FDS - 1] = payload_fd;
	return sbx_send_with_fds(ctl, msg, head_len, fds, SBX_INIT_SPAWN_FDS);
}

int sbx_init_channel_spawn(int ctl, const char *who, const sbx_backend_spawn *req,
                           const sbx_backend_limits *limits, struct sbx_runclient_set *live,
                           void **proc, int *wait_fd)
{
	_cleanup_free_ char *msg = NULL;
	_cleanup_close_ int host_end = -1, runner_end = -1;
	struct sbx_runclient *p;
	size_t len = 0;
	int sv[2], r;

	if (ctl < 0)
		return sbx_fail(-SBX_ESTATE, "%s: the sandbox is not running", who);
	if (!(msg = build_message(req, limits, &len)))
		return sbx_fail(-SBX_E2BIG, "%s: command, environment and cwd exceed %u bytes",
		                who, SBX_INIT_PAYLOAD_MAX);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return sbx_fail(sbx_errno_code(errno), "%s: socketpair: %s", who, strerror(errno));
	host_end = sv[0];
	runner_end = sv[1];
	const int fds[SBX_INIT_SPAWN_FDS - 1] = { req->stdin_fd, req->stdout_fd, req->stderr_fd,
	                                          runner_end };
	if ((r = send_spawn(ctl, msg, len, fds)) < 0)
		return sbx_fail(-SBX_EIO, "%s: the sandbox init does not answer: %s", who,
		                strerror(-r));
	if (!(p = sbx_runclient_new(0, host_end, who)))
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	host_end = -1;
	if (live)
		sbx_runclient_track(live, p);
	*proc = p;
	*wait_fd = p->ctrl;
	return 0;
}

int sbx_sandbox_spawn(struct sbx_sandbox *sb, const sbx_backend_spawn *req, void **proc,
                      int *wait_fd)
{
	const sbx_backend_limits *limits = req->size >= offsetof(sbx_backend_spawn, limits) +
	                                   sizeof req->limits && req->limits ? req->limits
	                                                                      : &sb->cfg.limits;

	return sbx_init_channel_spawn(sb->ctl, sb->who, req, limits, &sb->live, proc, wait_fd);
}

/* ---- facts and probes ---------------------------------------------------------------- */

uint32_t sbx_sandbox_flags(const struct sbx_sandbox *sb)
{
	return sb->flags;
}

const char *sbx_sandbox_cgroup_note(const struct sbx_sandbox *sb)
{
	return sb->cgroup_note;
}

enum sbx_sandbox_mode sbx_sandbox_mode_of(const struct sbx_sandbox *sb)
{
	return sb->mode;
}

/* The probe's scratch workspace is not empty after the sandbox ran on it: the protected
 * directories (and, in direct mode, placeholder files) were made in it. */
static void remove_probe_dir(const char *dir)
{
	_cleanup_free_ char *parent = strdup(dir);
	char *slash = parent ? strrchr(parent, '/') : NULL;
	_cleanup_close_ int dirfd = -1;

	if (!slash)
		return;
	*slash = '\0';
	dirfd = open(*parent ? parent : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd >= 0)
		sbx_fs_remove_tree(dirfd, slash + 1);
}

static void describe_mode(enum sbx_sandbox_mode mode, const struct sbx_sandbox *sb,
                          char *detail, size_t len)
{
	snprintf(detail, len, "%s%s", mode == SBX_SANDBOX_BWRAP ? "through " SBX_BWRAP_PATH
	                                                           : "direct (own namespaces)",
	         sbx_sandbox_flags(sb) & SBX_INIT_HAS_LANDLOCK ? ", Landlock" : "");
}

int sbx_sandbox_probe(enum sbx_sandbox_mode mode, char *detail, size_t len)
{
	char hostname[] = "probe";
	struct sbx_sandbox_options o = { .mode = mode, .landlock = true, .hostname = hostname };
	_cleanup_free_ char *dir = NULL;
	struct sbx_sandbox *sb = NULL;
	int r;

	if (mode == SBX_SANDBOX_BWRAP && access(SBX_BWRAP_PATH, X_OK) < 0) {
		snprintf(detail, len, "%s not found", SBX_BWRAP_PATH);
		return -SBX_EBACKEND;
	}
	if ((r = sbx_fs_make_temp_dir("agentsbx-probe", &dir)) < 0) {
		snprintf(detail, len, "%s", sbx_last_error());
		return r;
	}
	sbx_backend_config cfg = { .size = sizeof cfg, .id = "probe", .workdir = dir,
	                           .network_mode = "none", .audit_dir_fd = -1,
	                           .state_dir_fd = -1 };
	r = sbx_sandbox_start("probe", &cfg, &o, mode, &sb);
	if (r == 0) {
		describe_mode(mode, sb, detail, len);
		sbx_sandbox_stop(sb);
	} else {
		snprintf(detail, len, "%s", sbx_last_error());
	}
	remove_probe_dir(dir);
	return r;
}

/* Held while the first open probes (it starts sandboxes): a child forked meanwhile finds it
 * free and probes on its own. */
SBX_FORK_SAFE_MUTEX(pick_lock)
static int picked = -1;           /* the resolved AUTO mode, once probed */
static char pick_detail[512];

int sbx_sandbox_pick_mode(enum sbx_sandbox_mode wanted, enum sbx_sandbox_mode *mode,
                          char *detail, size_t len)
{
	char why_direct[256] = "", why_bwrap[256] = "";
	int r = 0;

	if (wanted != SBX_SANDBOX_AUTO) {
		*mode = wanted;
		return 0;
	}
	pthread_mutex_lock(&pick_lock);
	if (picked < 0) {
		if (sbx_sandbox_probe(SBX_SANDBOX_DIRECT, why_direct, sizeof why_direct) == 0) {
			picked = SBX_SANDBOX_DIRECT;
			snprintf(pick_detail, sizeof pick_detail, "%s", why_direct);
		} else {
			if (sbx_sandbox_probe(SBX_SANDBOX_BWRAP, why_bwrap, sizeof why_bwrap) == 0)
				picked = SBX_SANDBOX_BWRAP;
			snprintf(pick_detail, sizeof pick_detail, "direct does not work (%s); %s",
			         why_direct, why_bwrap);
		}
	}
	if (picked < 0)
		r = -SBX_EBACKEND;
	else
		*mode = (enum sbx_sandbox_mode)picked;
	snprintf(detail, len, "%s", pick_detail);
	pthread_mutex_unlock(&pick_lock);
	return r;
}

/* AUTO mode before anything was probed: the first workspace itself is the probe. Started
 * directly, it settles the mode without a throw-away sandbox (that doubled the first open of
 * every process, a one-shot CLI run included). 1: started; 0: not tried or it failed, and the
 * probes will tell a host without namespaces from a bad config. */
static int start_as_probe(const char *name, const sbx_backend_config *cfg,
                          const struct sbx_sandbox_options *o, struct sbx_sandbox **out)
{
	bool unknown;

	pthread_mutex_lock(&pick_lock);
	unknown = picked < 0;
	pthread_mutex_unlock(&pick_lock);
	if (o->mode != SBX_SANDBOX_AUTO || !unknown ||
	    sbx_sandbox_start(name, cfg, o, SBX_SANDBOX_DIRECT, out) < 0)
		return 0;
	pthread_mutex_lock(&pick_lock);
	if (picked < 0) {
		picked = SBX_SANDBOX_DIRECT;
		describe_mode(SBX_SANDBOX_DIRECT, *out, pick_detail, sizeof pick_detail);
	}
	pthread_mutex_unlock(&pick_lock);
	return 1;
}

/* ---- the backend glue ---------------------------------------------------------------- */

struct sandbox_ws {
	struct sbx_sandbox_options opts;
	struct sbx_sandbox *sb;
	char *workdir;
};

static void free_ws(struct sandbox_ws *w)
{
	sbx_sandbox_free_options(&w->opts);
	free(w->workdir);
	free(w);
}

int sbx_sandbox_backend_open(const char *name, bool allow_mode, const sbx_backend_config *cfg,
                             void **state)
{
	struct sandbox_ws *w = calloc(1, sizeof *w);
	enum sbx_sandbox_mode mode;
	char detail[512];
	int r;

	*state = NULL;
	if (!w)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	if (!cfg->workdir || !(w->workdir = strdup(cfg->workdir))) {
		free(w);
		return sbx_fail(-SBX_EINVAL, "%s: a host workdir is required", name);
	}
	if ((r = sbx_sandbox_parse_options(name, cfg->options_json, allow_mode, &w->opts)) < 0 ||
	    (r = sbx_quota_check(name, cfg, w->opts.detached)) < 0 ||
	    (r = sbx_mcp_sandbox_binds(cfg, !sbx_quota_disk_bytes(cfg), &w->opts.binds,
	                               &w->opts.n_binds)) < 0) {
		free_ws(w);
		return r;
	}
	if (w->opts.detached && cfg->workdir_is_temporary) {
		free_ws(w);
		return sbx_fail(-SBX_ECONFIG, "config: key '%s.detached': a detached sandbox needs "
		                "a 'workdir' (a temporary one is removed at close)", name);
	}
	if (w->opts.detached && SBX_BACKEND_CONFIG_HAS(cfg, state_dir) && cfg->state_dir) {
		free_ws(w);
		return sbx_fail(-SBX_ECONFIG, "config: key '%s.detached': a detached sandbox keeps "
		                "its socket in the workdir's state folder, which this workdir cannot "
		                "hold (the library may not write it)", name);
	}
	if ((r = check_fds(name, &w->opts)) < 0) {
		free_ws(w);
		return r;
	}
	if (start_as_probe(name, cfg, &w->opts, &w->sb)) {
		*state = w;
		return 0;
	}
	if ((r = sbx_sandbox_pick_mode(w->opts.mode, &mode, detail, sizeof detail)) < 0) {
		free_ws(w);
		return sbx_fail(-SBX_EBACKEND, "%s: no way to build a sandbox on this host (%s)",
		                name, detail);
	}
	if ((r = sbx_sandbox_start(name, cfg, &w->opts, mode, &w->sb)) < 0) {
		free_ws(w);
		return r;
	}
	*state = w;
	return 0;
}

int sbx_sandbox_backend_close(void *state)
{
	struct sandbox_ws *w = state;

	if (!w)
		return 0;
	sbx_sandbox_stop(w->sb);
	free_ws(w);
	return 0;
}

int sbx_sandbox_backend_reset(void *state)
{
	return sbx_sandbox_restart(((struct sandbox_ws *)state)->sb);
}

const char *sbx_sandbox_backend_root(void *state)
{
	(void)state;
	return SBX_SANDBOX_ROOT;
}

int sbx_sandbox_backend_files_root(void *state)
{
	return ((struct sandbox_ws *)state)->sb->files_root;
}

const char *const *sbx_sandbox_backend_protected(void *state)
{
	struct sandbox_ws *w = state;

	return w->opts.protected_paths ? (const char *const *)w->opts.protected_paths
	                               : sbx_default_protected_paths;
}

/* A pidfd (the caller's to close) of a process in the sandbox's mount namespace: in direct
 * mode the outer process (it made the namespaces, and the init shares them); under
 * bubblewrap, bwrap's child (the init, --as-pid-1), which stays ours while bwrap, our child,
 * is unreaped. As a host range with placeholders to tidy, our child is the tidier that stayed
 * root, and the outer process its child (helpers/init/main.c, drop_to_users). A detached
 * sandbox's outer process is no longer ours to name: none (-1). */
static int pidfd_in_sandbox(const struct sbx_sandbox *sb)
{
	pid_t init, outer = sb->pid;

	if (sb->opts->detached)
		return -1;
	if (sb->mode == SBX_SANDBOX_BWRAP) {
		if (outer > 0 && sb->idmap.on && sb->placeholders)
			outer = sbx_warden_first_child(outer);
		init = outer > 0 ? sbx_warden_first_child(sbx_warden_first_child(outer)) : -1;
		return init > 0 ? (int)syscall(SYS_pidfd_open, init, 0) : -1;
	}
	return sb->outer_pidfd >= 0 ? fcntl(sb->outer_pidfd, F_DUPFD_CLOEXEC, 3) : -1;
}

int sbx_sandbox_backend_protect_now(void *state, const char *const *rel_paths)
{
	struct sandbox_ws *w = state;
	int target;

	if (!rel_paths || !rel_paths[0])
		return 0;
	if ((target = pidfd_in_sandbox(w->sb)) < 0)
		return sbx_fail(-SBX_ENOSYS, "%s: no process to bind through (detached sandbox)",
		                w->sb->who);
	return sbx_warden_bind(w->sb->who, target, rel_paths);
}

const char *sbx_sandbox_backend_host_dir(void *state)
{
	return ((struct sandbox_ws *)state)->workdir;
}

int sbx_sandbox_backend_spawn(void *state, const sbx_backend_spawn *req, void **proc,
                              int *wait_fd)
{
	return sbx_sandbox_spawn(((struct sandbox_ws *)state)->sb, req, proc, wait_fd);
}

/* The mode of a validated network object. */
static bool network_mode_is(const char *network_json, const char *mode)
{
	sbx_json *v = NULL;
	const sbx_json *m;
	char err[64];
	bool same;

	if (sbx_json_parse(network_json, strlen(network_json), &v, err, sizeof err) < 0)
		return false;
	m = sbx_json_get(v, "mode");
	same = m && m->type == SBX_JSON_STRING && !strcmp(m->str, mode);
	sbx_json_free(v);
	return same;
}

int sbx_sandbox_set_network(struct sbx_sandbox *sb, const char *network_json)
{
	if (!network_mode_is(network_json, sb->network_mode))
		return sbx_fail(-SBX_ENOSYS, "%s: the sandbox runs with network mode '%s', which "
		                "cannot change while it runs", sb->who, sb->network_mode);
	return sb->proxy ? sbx_netproxy_set_policy(sb->proxy, network_json) : 0;
}

int sbx_sandbox_backend_set_network(void *state, const char *network_json)
{
	return sbx_sandbox_set_network(((struct sandbox_ws *)state)->sb, network_json);
}

const char *const *sbx_sandbox_backend_env(void *state)
{
	return ((struct sandbox_ws *)state)->sb->proxy ? sbx_netproxy_env() : NULL;
}
