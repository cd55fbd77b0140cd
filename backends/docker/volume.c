/* Workspaces without a host directory: /workspace is a named Docker volume, the files go
 * through the archive API (files.c), and the control sockets, which must be host paths,
 * live in a library-private host folder.
 *
 * "volume": "NAME" uses the user's volume NAME (made when missing, never removed by us);
 * "volume": true makes the workspace a volume of its own, agentsbx-<id>, labelled with the
 * id, reused by every open of that id and removed when an ephemeral workspace closes. A
 * volume we make has its root handed to the workspace's user (a fresh volume's root is
 * root's), through a container that is created for that, never started, and removed. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "docker.h"
#include "util/archive.h"
#include "util/cleanup.h"
#include "util/digest.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/http.h"

#define DOCKER_LABEL_VOLUME_OWNER "io.agentsbx.volume-owner"
#define VOLUME_NAME_MAX 200
#define VOLUME_BUSY_ROUNDS 100
#define VOLUME_BUSY_US 50000

static int volume_option_error(const char *why)
{
	return sbx_fail(-SBX_ECONFIG, "config: key 'docker.volume': %s", why);
}

/* Docker's rule for volume names: [a-zA-Z0-9][a-zA-Z0-9_.-]+. */
static bool volume_name_ok(const char *s, size_t len)
{
	return docker_name_ok(s, len, 2, VOLUME_NAME_MAX);
}

int docker_take_volume(const sbx_json *v, struct docker_options *o)
{
	free(o->volume);
	o->volume = NULL;
	o->volume_own = false;
	if (v->type == SBX_JSON_BOOL) {
		o->volume_own = v->b;
		return 0;
	}
	if (v->type != SBX_JSON_STRING)
		return volume_option_error("expected a volume name or true (a volume of the "
		                           "workspace's own)");
	if (!volume_name_ok(v->str, v->len))
		return volume_option_error("expected a Docker volume name: 2 to 200 of "
		                           "[a-zA-Z0-9_.-], starting with a letter or digit");
	if (!(o->volume = strdup(v->str)))
		return sbx_fail(-SBX_ENOMEM, "docker: out of memory");
	return 0;
}

/* "uid:gid", both numbers. */
static bool numeric_owner(const char *user, unsigned *uid, unsigned *gid)
{
	char *end;
	unsigned long u, g;

	u = strtoul(user, &end, 10);
	if (end == user || *end != ':')
		return false;
	g = strtoul(end + 1, &end, 10);
	if (*end || u > 0x7fffffff || g > 0x7fffffff || user[0] == '-' || strchr(user, '-'))
		return false;
	*uid = (unsigned)u;
	*gid = (unsigned)g;
	return true;
}

int docker_check_volume_options(const struct docker_options *o)
{
	unsigned uid, gid;

	if ((o->volume || o->volume_own) && o->user && !numeric_owner(o->user, &uid, &gid))
		return sbx_fail(-SBX_ECONFIG, "config: key 'docker.user': a workspace with "
		                "docker.volume needs \"uid:gid\" (the files the library writes into "
		                "the volume are owned by them; a name is known only inside the image)");
	return 0;
}

int docker_workspace_caps(const char *options_json, uint32_t *caps)
{
	struct docker_options o;
	int r = docker_options_parse(options_json, &o);

	if (r < 0)
		return r;
	if (o.volume || o.volume_own)
		*caps &= ~(uint32_t)SBX_BACKEND_CAP_HOST_FILES;
	docker_options_free(&o);
	return 0;
}

const char *docker_files_label(const struct docker_ws *ws)
{
	static _Thread_local char label[VOLUME_NAME_MAX + 16];

	if (!ws->volume)
		return ws->workdir;
	snprintf(label, sizeof label, "volume:%s", ws->volume);
	return label;
}

void docker_add_volume_mount(const struct docker_ws *ws, sbx_buf *b)
{
	sbx_buf_puts(b, "{\"Type\":\"volume\",\"Source\":");
	sbx_buf_json_string(b, ws->volume, strlen(ws->volume));
	sbx_buf_printf(b, ",\"Target\":\"" DOCKER_WORKSPACE "\",\"ReadOnly\":%s,"
	               "\"VolumeOptions\":{\"NoCopy\":true}}", ws->read_only ? "true" : "false");
}

const char *docker_attach_root(const struct docker_ws *ws)
{
	return ws->volume ? ws->state_dir : ws->workdir;
}

/* ---- the private host folder ------------------------------------------------------------ */

/* A folder of ours alone: made 0700 when missing, refused when someone else could have
 * made it or can write it (a /tmp name another user took first). */
static int own_private_dir(const char *path)
{
	struct stat st;

	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return sbx_fail(-sbx_errno_code(errno), "docker: create %s: %s", path,
		                strerror(errno));
	if (lstat(path, &st) < 0)
		return sbx_fail(-sbx_errno_code(errno), "docker: %s: %s", path, strerror(errno));
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077))
		return sbx_fail(-SBX_EACCES, "docker: %s is not a private folder of this user (it "
		                "must be a directory of uid %u with mode 0700)", path,
		                (unsigned)geteuid());
	return 0;
}

/* $XDG_RUNTIME_DIR/agentsbx, else /tmp/agentsbx-<uid>; then docker-<digest of the id>: the
 * same folder for every process that opens this id (a detached workspace's attach dir is
 * there), short enough for socket paths below it. */
static int make_state_dir(struct docker_ws *ws)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	_cleanup_free_ char *base = NULL, *state = NULL;
	unsigned char md[SBX_SHA256_LEN];
	char hex[17];
	struct stat st;
	int r;

	if (xdg && xdg[0] == '/' && stat(xdg, &st) == 0 && S_ISDIR(st.st_mode) &&
	    st.st_uid == geteuid())
		r = asprintf(&base, "%s/agentsbx", xdg);
	else
		r = asprintf(&base, "/tmp/agentsbx-%u", (unsigned)geteuid());
	if (r < 0)
		return sbx_fail(-SBX_ENOMEM, "docker: out of memory");
	sbx_sha256_of(ws->id, strlen(ws->id), md);
	sbx_hex_of(md, 8, hex);
	if ((r = own_private_dir(base)) < 0)
		return r;
	if (asprintf(&ws->state_dir, "%s/docker-%s", base, hex) < 0 ||
	    asprintf(&state, "%s/.agentsbx", ws->state_dir) < 0)
		return sbx_fail(-SBX_ENOMEM, "docker: out of memory");
	if ((r = own_private_dir(ws->state_dir)) < 0)
		return r;
	return own_private_dir(state);
}

static void remove_state_dir(struct docker_ws *ws)
{
	_cleanup_free_ char *parent = ws->state_dir ? strdup(ws->state_dir) : NULL;
	char *slash = parent ? strrchr(parent, '/') : NULL;
	_cleanup_close_ int dirfd = -1;

	if (!slash)
		return;
	*slash = '\0';
	dirfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd >= 0)
		(void)sbx_fs_remove_tree(dirfd, slash + 1);
}

/* ---- the volume ------------------------------------------------------------------------- */

static void volume_path(sbx_buf *path, const char *name, const char *tail)
{
	sbx_buf_puts(path, "/volumes/");
	docker_url_escape(path, name);
	sbx_buf_puts(path, tail);
}

static int volume_exists(struct docker_ws *ws, bool *exists)
{
	sbx_buf path = { 0 };
	long status = 0;
	int r;

	volume_path(&path, ws->volume, "");
	r = path.oom ? sbx_fail(-SBX_ENOMEM, "docker: out of memory")
	             : docker_call(&ws->engine, "GET", path.data, NULL, "inspect the volume",
	                           &status, NULL);
	sbx_buf_free(&path);
	*exists = r == 0;
	return r == -SBX_ENOENT ? 0 : r;
}

static int create_volume(struct docker_ws *ws)
{
	sbx_buf body = { 0 };
	long status;
	int r;

	sbx_buf_puts(&body, "{\"Name\":");
	sbx_buf_json_string(&body, ws->volume, strlen(ws->volume));
	sbx_buf_puts(&body, ",\"Labels\":{\"" DOCKER_LABEL_BACKEND "\":\"docker\",\""
	                    DOCKER_LABEL_WORKSPACE "\":");
	sbx_buf_json_string(&body, ws->id, strlen(ws->id));
	sbx_buf_printf(&body, ",\"" DOCKER_LABEL_VOLUME_OWNER "\":\"%s\"}}",
	               ws->volume_own ? "workspace" : "user");
	r = body.oom ? sbx_fail(-SBX_ENOMEM, "docker: out of memory")
	             : docker_call(&ws->engine, "POST", "/volumes/create", &body,
	                           "create the volume", &status, NULL);
	sbx_buf_free(&body);
	return r;
}

static int remove_container_quietly(struct docker_ws *ws, const char *id)
{
	sbx_buf path = { 0 };
	long status;
	int r;

	sbx_buf_printf(&path, "/containers/%s?force=1", id);
	r = path.oom ? -SBX_ENOMEM : docker_call(&ws->engine, "DELETE", path.data, NULL,
	                                         "remove the volume's helper container",
	                                         &status, NULL);
	sbx_buf_free(&path);
	return r;
}

/* The volume's root to the workspace's user: a tar with the one directory entry
 * "workspace", extracted at "/" of a container that has the volume at /workspace and a
 * writable root (the engine refuses to extract onto a read-only one), created for this and
 * never started. Extracting at /workspace itself would not do: the engine skips the root
 * of what it extracts into. */
static int give_root_to_user(struct docker_ws *ws)
{
	sbx_buf body = { 0 }, tar = { 0 };
	sbx_json *answer = NULL;
	const sbx_json *id;
	struct sbx_http_response resp = { 0 };
	_cleanup_free_ char *cid = NULL;
	long status;
	int r;

	sbx_buf_puts(&body, "{\"Image\":");
	sbx_buf_json_string(&body, ws->opts.image, strlen(ws->opts.image));
	sbx_buf_puts(&body, ",\"Entrypoint\":[\"/.agentsbx-never-started\"],\"Cmd\":null,"
	                    "\"NetworkDisabled\":true,\"Labels\":{\"" DOCKER_LABEL_BACKEND
	                    "\":\"docker\"},\"HostConfig\":{\"NetworkMode\":\"none\","
	                    "\"Mounts\":[{\"Type\":\"volume\",\"Source\":");
	sbx_buf_json_string(&body, ws->volume, strlen(ws->volume));
	sbx_buf_puts(&body, ",\"Target\":\"" DOCKER_WORKSPACE "\"}]}}");
	r = body.oom ? sbx_fail(-SBX_ENOMEM, "docker: out of memory")
	             : docker_call(&ws->engine, "POST", "/containers/create", &body,
	                           "create the volume's helper container", &status, &answer);
	sbx_buf_free(&body);
	if (r < 0)
		return r;
	id = sbx_json_get(answer, "Id");
	cid = id && id->type == SBX_JSON_STRING ? strdup(id->str) : NULL;
	sbx_json_free(answer);
	if (!cid)
		return sbx_fail(-SBX_EPROTO, "docker: the engine created a container without an Id");
	r = sbx_tar_append(&tar, &(sbx_tar_member){ .path = DOCKER_WORKSPACE + 1,
	                                           .type = SBX_ENTRY_DIR, .mode = 0755,
	                                           .uid = ws->file_uid, .gid = ws->file_gid,
	                                           .mtime = time(NULL) });
	sbx_tar_finish(&tar);
	sbx_buf_printf(&body, "/containers/%s/archive?path=%%2F", cid);
	if (r == 0 && (tar.oom || body.oom))
		r = sbx_fail(-SBX_ENOMEM, "docker: out of memory");
	if (r == 0) {
		r = docker_call_raw(&ws->engine, &(struct docker_raw_call){
			.method = "PUT", .path = body.data, .body = &tar,
			.what = "give the volume's root to the workspace's user" }, &resp);
		sbx_http_response_free(&resp);
	}
	sbx_buf_free(&body);
	sbx_buf_free(&tar);
	(void)remove_container_quietly(ws, cid);
	return r;
}

static int remove_volume(struct docker_ws *ws)
{
	sbx_buf path = { 0 };
	long status = 0;
	int r = 0;

	volume_path(&path, ws->volume, "?force=1");
	/* 409: a container that still uses it is on its way out (AutoRemove). */
	for (int i = 0; i < VOLUME_BUSY_ROUNDS && !path.oom; i++) {
		r = docker_call(&ws->engine, "DELETE", path.data, NULL, "remove the volume",
		                &status, NULL);
		if (r == -SBX_ENOENT)
			r = 0;
		if (r == 0 || status != 409)
			break;
		usleep(VOLUME_BUSY_US);
	}
	sbx_buf_free(&path);
	return r;
}

static int volume_up(struct docker_ws *ws)
{
	bool exists;
	int r;

	if ((r = volume_exists(ws, &exists)) < 0 || exists)
		return r;
	if ((r = create_volume(ws)) < 0)
		return r;
	if ((r = give_root_to_user(ws)) < 0)
		(void)remove_volume(ws);
	return r;
}

/* Whether a reset empties the workspace's own volume, as the core empties a temporary
 * workdir: the config's "baseline" when it says "keep" or "empty", else the core's default,
 * which the id stands in for here (a workspace opened without one is temporary, one given
 * an id is like one given a workdir: kept). */
static bool reset_empties(const sbx_backend_config *cfg)
{
	sbx_json *j = NULL;
	const sbx_json *b;
	char err[32];
	bool empty = true;

	if (cfg->config_json && sbx_json_parse(cfg->config_json, strlen(cfg->config_json), &j,
	                                       err, sizeof err) == 0) {
		b = sbx_json_get(j, "baseline");
		if (b && b->type == SBX_JSON_STRING && strcmp(b->str, "default") != 0)
			empty = strcmp(b->str, "keep") != 0;
		else
			empty = !sbx_json_get(j, "id");
	}
	sbx_json_free(j);
	return empty;
}

int docker_volume_setup(struct docker_ws *ws, const sbx_backend_config *cfg)
{
	int r;

	if (cfg->workdir)
		return sbx_fail(-SBX_ECONFIG, "config: key 'workdir': a docker workspace with "
		                "docker.volume keeps its files in the volume; it takes no workdir");
	/* The core keeps its tool state in the workspace's .agentsbx, here in the volume. */
	if (ws->read_only)
		return sbx_fail(-SBX_ECONFIG, "config: key 'mode': a read-only workspace cannot have "
		                "docker.volume (the library keeps its state in the workspace's files, "
		                "which a read-only volume would refuse)");
	if (!numeric_owner(ws->user, &ws->file_uid, &ws->file_gid))
		return docker_check_volume_options(&ws->opts);
	ws->volume_own = ws->opts.volume_own;
	ws->reset_empties = ws->volume_own && !ws->opts.detached && reset_empties(cfg);
	if (ws->opts.volume)
		ws->volume = strdup(ws->opts.volume);
	else if (asprintf(&ws->volume, "agentsbx-%s", ws->id) < 0)
		ws->volume = NULL;
	if (!ws->volume)
		return sbx_fail(-SBX_ENOMEM, "docker: out of memory");
	if ((r = make_state_dir(ws)) < 0)
		return r;
	return volume_up(ws);
}

int docker_volume_close(struct docker_ws *ws)
{
	int r = 0;

	if (!ws->volume || ws->opts.detached)
		return 0;
	if (ws->volume_own)
		r = remove_volume(ws);
	remove_state_dir(ws);
	return r;
}

int docker_volume_reset(struct docker_ws *ws)
{
	int r;

	if (!ws->volume || !ws->reset_empties)
		return 0;
	if ((r = remove_volume(ws)) < 0)
		return r;
	return volume_up(ws);
}
