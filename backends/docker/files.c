/* The file ops of a workspace whose /workspace is a volume (volume.c): the core hands them a
 * normalised root-relative path, and they move the files through the Engine's archive API
 * (HEAD: a path's stat; GET: a tar of it; PUT: a tar extracted into a directory), with the
 * tar built and read by util/archive. What the API cannot do (rename, remove) is a command
 * run in the container as the workspace's user, its paths passed as arguments.
 *
 * Paths are resolved the way the container sees them and must stay in /workspace: each
 * component is stat'ed in turn, and a symlink is followed only to the target the engine
 * resolves for it (in the container's view) when that lies in /workspace. The engine follows
 * the links of a path's directories itself, so checking every component first is what keeps
 * a link to /etc from turning a Read into one of the container's /etc. What each transfer
 * then names has no links left in it. A command that swaps a checked directory for a link in
 * the moment between the check and the transfer could still send that one transfer through
 * it, into the container's own files, which its read-only root keeps from being written.
 *
 * A write goes to a temporary name in the target's directory and is renamed over the target
 * (mv -T, as the workspace's user): readers in the container see the old file or the new one,
 * and a failed transfer (a full volume, the engine gone) leaves the old file. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "docker.h"
#include "pathstat.h"
#include "util/archive.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/http.h"

#define STAT_HEADER "X-Docker-Container-Path-Stat"
#define STAT_HEADER_MAX 16384
/* A directory's tar (list) is read whole: beyond this, listing it needs another way. */
#define LIST_MAX_BYTES ((size_t)256 << 20)
#define LIST_MAX_ENTRIES 1000000
/* Headers, pax records and padding around one file's content. */
#define TAR_SLACK ((size_t)1 << 20)
#define MAX_LINK_HOPS 8
#define COMMAND_TIMEOUT_MS 60000
#define COMMAND_OUTPUT_MAX 2048
#define COMMAND_PATH "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#define DEFAULT_FILE_MODE 0644
#define DEFAULT_DIR_MODE 0755

/* ---- the archive API -------------------------------------------------------------------- */

static void archive_path(const struct docker_ws *ws, sbx_buf *b, const char *path)
{
	sbx_buf_printf(b, "/containers/%s/archive?path=", ws->container);
	docker_url_escape(b, path);
}

/* HEAD: the stat of path in the container (its directories' links followed by the engine,
 * the last component not). -SBX_ENOENT, without a message, when there is nothing there. */
static int archive_stat(struct docker_ws *ws, const char *path, struct docker_path_stat *st)
{
	struct sbx_http_response resp = { 0 };
	sbx_buf url = { 0 };
	char *value = malloc(STAT_HEADER_MAX + 1);
	int r;

	*st = (struct docker_path_stat){ 0 };
	archive_path(ws, &url, path);
	if (!value || url.oom)
		r = sbx_fail(-SBX_ENOMEM, "docker: out of memory");
	else
		r = docker_call_raw(&ws->engine, &(struct docker_raw_call){
			.method = "HEAD", .path = url.data, .what = "stat a path",
			.keep_errors = true }, &resp);
	if (r == 0 && resp.status == 404)
		r = -SBX_ENOENT;
	else if (r == 0 && resp.status >= 400)
		r = sbx_fail(-SBX_EIO, "docker: stat %s: HTTP %ld", path, resp.status);
	else if (r == 0 && !sbx_http_response_header(&resp, STAT_HEADER, value,
	                                             STAT_HEADER_MAX + 1))
		r = sbx_fail(-SBX_EPROTO, "docker: stat %s: the engine sent no path stat", path);
	else if (r == 0)
		r = docker_path_stat_parse(value, strlen(value), st);
	sbx_http_response_free(&resp);
	sbx_buf_free(&url);
	free(value);
	return r;
}

/* GET: the tar of path, at most max bytes. */
static int archive_get(struct docker_ws *ws, const char *path, size_t max,
                       struct sbx_http_response *resp)
{
	sbx_buf url = { 0 };
	int r;

	*resp = (struct sbx_http_response){ 0 };
	archive_path(ws, &url, path);
	r = url.oom ? sbx_fail(-SBX_ENOMEM, "docker: out of memory")
	            : docker_call_raw(&ws->engine, &(struct docker_raw_call){
	                      .method = "GET", .path = url.data, .what = "read through the "
	                      "archive API", .max_body = max }, resp);
	sbx_buf_free(&url);
	return r;
}

/* PUT: tar extracted into the directory dir. */
static int archive_put(struct docker_ws *ws, const char *dir, const sbx_buf *tar)
{
	struct sbx_http_response resp = { 0 };
	sbx_buf url = { 0 };
	int r;

	archive_path(ws, &url, dir);
	sbx_buf_puts(&url, "&noOverwriteDirNonDir=true");
	r = url.oom ? sbx_fail(-SBX_ENOMEM, "docker: out of memory")
	            : docker_call_raw(&ws->engine, &(struct docker_raw_call){
	                      .method = "PUT", .path = url.data, .body = tar,
	                      .what = "write through the archive API" }, &resp);
	sbx_http_response_free(&resp);
	sbx_buf_free(&url);
	return r;
}

/* ---- commands (what the archive API cannot do) ------------------------------------------- */

static int code_of_message(const char *out)
{
	static const struct { const char *text; int code; } known[] = {
		{ "No such file", -SBX_ENOENT }, { "not empty", -SBX_ENOTEMPTY },
		{ "Permission denied", -SBX_EACCES }, { "Not a directory", -SBX_ENOTDIR },
		{ "Is a directory", -SBX_EISDIR }, { "File exists", -SBX_EEXIST },
		{ "Read-only", -SBX_EPERM }, { "No space", -SBX_ENOSPC },
		{ "Operation not permitted", -SBX_EPERM },
	};

	for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
		if (strstr(out, known[i].text))
			return known[i].code;
	return -SBX_EIO;
}

static void read_output(int fd, char *out, size_t cap)
{
	size_t len = 0;
	char sink[512];

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;
		if (poll(&p, 1, COMMAND_TIMEOUT_MS) <= 0)
			break;
		if (len + 1 < cap)
			n = read(fd, out + len, cap - 1 - len);
		else
			n = read(fd, sink, sizeof sink);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (len + 1 < cap)
			len += (size_t)n;
	}
	out[len] = '\0';
	while (len && (out[len - 1] == '\n' || out[len - 1] == '\r'))
		out[--len] = '\0';
}

/* Runs argv in the container as the workspace's user; 0 when it exits 0, else the code its
 * message suggests, with "<what>: <its message>". */
static int run_command(struct docker_ws *ws, const char *const *argv, const char *what)
{
	static const char *const envp[] = { COMMAND_PATH, "LC_ALL=C", NULL };
	_cleanup_close_ int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
	int pipefd[2] = { -1, -1 }, wait_fd, code = -1, sig = 0, r;
	char out[COMMAND_OUTPUT_MAX];
	void *proc = NULL;

	if (in < 0 || pipe2(pipefd, O_CLOEXEC) < 0)
		return sbx_fail(-sbx_errno_code(errno), "docker: %s: %s", what, strerror(errno));
	sbx_backend_spawn req = {
		.size = sizeof req, .argv = argv, .envp = envp, .cwd = DOCKER_WORKSPACE,
		.cwd_fd = -1, .stdin_fd = in, .stdout_fd = pipefd[1], .stderr_fd = pipefd[1],
	};
	r = docker_spawn(ws, &req, &proc, &wait_fd);
	close(pipefd[1]);
	if (r < 0) {
		close(pipefd[0]);
		return r;
	}
	read_output(pipefd[0], out, sizeof out);
	close(pipefd[0]);
	r = docker_proc_wait(proc, COMMAND_TIMEOUT_MS, &code, &sig);
	docker_proc_release(proc);
	if (r < 0)
		return r;
	if (code == 0)
		return 0;
	if (code == 127)
		return sbx_fail(-SBX_ENOSYS, "docker: %s: the image has no '%s' (a workspace with "
		                "docker.volume needs mv, ln, rm and rmdir in the image): %s", what,
		                argv[0], out);
	return sbx_fail(code_of_message(out), "docker: %s: %s", what,
	                *out ? out : "the command failed");
}

/* ---- resolving a path the way the container sees it -------------------------------------- */

struct walk {
	char *path;                   /* the target's path with no links left (exists), or the
	                                 deepest existing directory on the way (!exists) */
	const char *missing;          /* !exists: the components below path, in rel */
	bool exists;
	struct docker_path_stat st;   /* exists: the target's */
};

static void walk_free(struct walk *w)
{
	free(w->path);
	docker_path_stat_free(&w->st);
	*w = (struct walk){ 0 };
}

static bool in_workspace(const char *path)
{
	size_t n = strlen(DOCKER_WORKSPACE);

	return !strncmp(path, DOCKER_WORKSPACE, n) && (path[n] == '\0' || path[n] == '/');
}

/* A symlink met on the way: the engine's resolution of it, if that stays in /workspace. */
static int follow_link(struct docker_ws *ws, const char *op, const char *shown,
                       const char *rel, size_t upto, struct walk *w)
{
	for (int hops = 0; w->st.type == SBX_FILE_SYMLINK; hops++) {
		_cleanup_free_ char *target = w->st.link ? strdup(w->st.link) : NULL;
		int r;

		if (!target)
			return sbx_fail(w->st.link ? -SBX_ENOMEM : -SBX_EPROTO, "%s '%s': the engine "
			                "gave no target for the link '%.*s'", op, shown, (int)upto, rel);
		if (!in_workspace(target))
			return sbx_fail(-SBX_EESCAPE, "%s '%s': the link '%.*s' leads outside the "
			                "workspace (to %s in the container)", op, shown, (int)upto, rel,
			                target);
		if (hops == MAX_LINK_HOPS)
			return sbx_fail(-SBX_ELOOP, "%s '%s': too many links", op, shown);
		docker_path_stat_free(&w->st);
		r = archive_stat(ws, target, &w->st);
		if (r == -SBX_ENOENT)
			return sbx_fail(-SBX_ENOENT, "%s '%s': the link '%.*s' points to nothing", op,
			                shown, (int)upto, rel);
		if (r < 0)
			return r;
		free(w->path);
		w->path = SBX_TAKE_PTR(target);
	}
	return 0;
}

/* Walks rel ("" = the root) from /workspace, one component at a time; links in directories
 * are followed (inside only), the last component's too when follow_last. */
static int walk_as(struct docker_ws *ws, const char *op, const char *shown, const char *rel,
                   bool follow_last, struct walk *w)
{
	const char *p = rel;
	int r;

	*w = (struct walk){ .path = strdup(DOCKER_WORKSPACE) };
	if (!w->path)
		return sbx_fail(-SBX_ENOMEM, "docker: out of memory");
	if ((r = archive_stat(ws, DOCKER_WORKSPACE, &w->st)) < 0)
		return r == -SBX_ENOENT ? sbx_fail(r, "%s '%s': the container has no "
		                                   DOCKER_WORKSPACE, op, shown) : r;
	while (*p) {
		size_t n = strcspn(p, "/");
		bool last = p[n] == '\0';
		_cleanup_free_ char *next = NULL;

		if (w->st.type != SBX_FILE_DIRECTORY)
			return sbx_fail(-SBX_ENOTDIR, "%s '%s': '%.*s' is not a directory", op, shown,
			                (int)(p - rel - 1), rel);
		if (asprintf(&next, "%s/%.*s", w->path, (int)n, p) < 0)
			return sbx_fail(-SBX_ENOMEM, "docker: out of memory");
		docker_path_stat_free(&w->st);
		r = archive_stat(ws, next, &w->st);
		if (r == -SBX_ENOENT) {
			w->missing = p;
			return 0;
		}
		if (r < 0)
			return r;
		free(w->path);
		w->path = SBX_TAKE_PTR(next);
		if ((!last || follow_last) &&
		    (r = follow_link(ws, op, shown, rel, (size_t)(p + n - rel), w)) < 0)
			return r;
		p += n + !last;
	}
	w->exists = true;
	return 0;
}

static int walk(struct docker_ws *ws, const char *op, const char *rel, bool follow_last,
                struct walk *w)
{
	return walk_as(ws, op, rel, rel, follow_last, w);
}

/* A walk that must end at an existing directory (list, search, a command's cwd). */
static int walk_to_dir(struct docker_ws *ws, const char *op, const char *shown, const char *rel,
                       struct walk *w)
{
	int r = walk_as(ws, op, shown, rel, true, w);

	if (r == 0 && !w->exists)
		r = sbx_fail(-SBX_ENOENT, "%s '%s': no such directory", op, shown);
	else if (r == 0 && w->st.type != SBX_FILE_DIRECTORY)
		r = sbx_fail(-SBX_ENOTDIR, "%s '%s': not a directory", op, shown);
	return r;
}

/* ---- read ------------------------------------------------------------------------------- */

struct read_state {
	const char *name;             /* the entry expected: the file's last component */
	const char *rel;
	char *data;
	size_t len;
	int entries;
};

static int take_file(const sbx_archive_entry *e, void *arg)
{
	struct read_state *rs = arg;

	if (rs->entries++ || e->type != SBX_ENTRY_FILE || strcmp(e->path, rs->name) != 0)
		return sbx_fail(-SBX_EIO, "read '%s': the file changed while it was read", rs->rel);
	if (!(rs->data = malloc(e->size + 1)))
		return sbx_fail(-SBX_ENOMEM, "read '%s': out of memory (%zu bytes)", rs->rel,
		                e->size);
	memcpy(rs->data, e->data, e->size);
	rs->data[e->size] = '\0';
	rs->len = e->size;
	return 0;
}

int docker_file_read(void *state, const char *rel, char **data, size_t *len)
{
	struct docker_ws *ws = state;
	struct walk w;
	struct sbx_http_response resp = { 0 };
	struct read_state rs = { .rel = rel };
	const sbx_archive_limits lim = { 4, SBX_FILE_READ_MAX, SBX_FILE_READ_MAX,
	                                 SBX_ARCHIVE_AS_STORED };
	int r = walk(ws, "read", rel, true, &w);

	if (r == 0 && !w.exists)
		r = sbx_fail(-SBX_ENOENT, "read '%s': no such file", rel);
	else if (r == 0 && w.st.type == SBX_FILE_DIRECTORY)
		r = sbx_fail(-SBX_EISDIR, "read '%s': is a directory", rel);
	else if (r == 0 && w.st.type != SBX_FILE_REGULAR)
		r = sbx_fail(-SBX_EINVAL, "read '%s': not a regular file", rel);
	else if (r == 0 && w.st.size > SBX_FILE_READ_MAX)
		r = sbx_fail(-SBX_EFBIG, "read '%s': %llu bytes, more than the %zu a read returns",
		             rel, (unsigned long long)w.st.size, SBX_FILE_READ_MAX);
	if (r < 0) {
		walk_free(&w);
		return r;
	}
	rs.name = strrchr(w.path, '/') + 1;
	r = archive_get(ws, w.path, (size_t)w.st.size + TAR_SLACK, &resp);
	if (r == -SBX_EFBIG)
		r = sbx_fail(r, "read '%s': the file grew while it was read", rel);
	if (r == 0)
		r = sbx_archive_iterate(resp.body.data, resp.body.len, SBX_ARCHIVE_TAR, &lim,
		                        take_file, &rs);
	if (r == 0 && !rs.data)
		r = sbx_fail(-SBX_EIO, "read '%s': the file changed while it was read", rel);
	sbx_http_response_free(&resp);
	walk_free(&w);
	if (r < 0) {
		free(rs.data);
		return r;
	}
	*data = rs.data;
	*len = rs.len;
	return 0;
}

/* ---- stat ------------------------------------------------------------------------------- */

int docker_file_stat(void *state, const char *rel, sbx_stat *st)
{
	struct walk w;
	int r = walk(state, "stat", rel, false, &w);

	if (r == 0 && !w.exists)
		r = sbx_fail(-SBX_ENOENT, "stat '%s': no such file", rel);
	if (r == 0) {
		st->type = w.st.type;
		st->mode = w.st.mode;
		st->file_size = w.st.size;
		st->mtime_sec = w.st.mtime_sec;
		st->mtime_nsec = w.st.mtime_nsec;
	}
	walk_free(&w);
	return r;
}

/* ---- write and mkdir -------------------------------------------------------------------- */

static int random_name(char *out, size_t len)
{
	unsigned char raw[8];

	if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
		return sbx_fail(-SBX_EIO, "docker: getrandom: %s", strerror(errno));
	snprintf(out, len, ".agentsbx-write-");
	for (size_t i = 0; i < sizeof raw; i++)
		snprintf(out + strlen(out), len - strlen(out), "%02x", raw[i]);
	return 0;
}

/* Tar entries for the directories of missing (a relative path) that do not exist: every
 * component but the last, and the last too when all. */
static int add_missing_dirs(struct docker_ws *ws, sbx_buf *tar, const char *missing, bool all,
                            unsigned last_mode)
{
	_cleanup_free_ char *path = strdup(missing);
	int r;

	if (!path)
		return sbx_fail(-SBX_ENOMEM, "docker: out of memory");
	for (char *slash = path;; slash++) {
		slash = strchr(slash, '/');
		if (!slash && !all)
			return 0;
		if (slash)
			*slash = '\0';
		r = sbx_tar_append(tar, &(sbx_tar_member){
			.path = path, .type = SBX_ENTRY_DIR, .uid = ws->file_uid, .gid = ws->file_gid,
			.mode = slash ? DEFAULT_DIR_MODE : last_mode, .mtime = time(NULL) });
		if (r < 0 || !slash)
			return r;
		*slash = '/';
	}
}

/* The temporary file is renamed over the target (replacing a link rather than following
 * it); with excl it is linked to the target's name instead, which fails when that exists. */
static int install(struct docker_ws *ws, const char *rel, const char *tmp, const char *dest,
                   bool excl, bool over_link)
{
	const char *mv[] = { "mv", "-fT", "--", tmp, dest, NULL };
	const char *ln[] = { "ln", "--", tmp, dest, NULL };
	const char *rm[] = { "rm", "-f", "--", tmp, NULL };
	const char *rm_link[] = { "rm", "-f", "--", dest, NULL };
	_cleanup_free_ char *what = NULL;
	int r = 0;

	if (asprintf(&what, "write '%s'", rel) < 0)
		return sbx_fail(-SBX_ENOMEM, "docker: out of memory");
	/* A link the file replaces goes first: some mv -T (busybox's) follow a link to a
	 * directory and refuse. The one moment without either is a link's, not a file's. */
	if (over_link && !excl)
		r = run_command(ws, rm_link, what);
	if (r == 0)
		r = run_command(ws, excl ? ln : mv, what);
	if (r < 0 || excl) {
		char err[512];
		snprintf(err, sizeof err, "%s", sbx_last_error());
		(void)run_command(ws, rm, what);
		if (r < 0)
			return sbx_fail(r, "%s", err);
	}
	return 0;
}

int docker_file_write(void *state, const char *rel, const void *data, size_t len,
                      unsigned mode, uint32_t flags)
{
	struct docker_ws *ws = state;
	_cleanup_free_ char *parent = strdup(rel), *tmp_rel = NULL, *tmp = NULL, *dest = NULL;
	char *slash = parent ? strrchr(parent, '/') : NULL;
	const char *name = slash ? slash + 1 : rel;
	struct walk w = { 0 }, target = { 0 };
	sbx_buf tar = { 0 };
	char tmp_name[40];
	int r;

	if (!parent)
		return sbx_fail(-SBX_ENOMEM, "docker: out of memory");
	if (slash)
		*slash = '\0';
	r = walk_as(ws, "write", rel, slash ? parent : "", true, &w);
	if (r == 0 && !w.exists && !(flags & SBX_WRITE_MKDIRS))
		r = sbx_fail(-SBX_ENOENT, "write '%s': the directory '%s' does not exist", rel,
		             parent);
	if (r == 0 && w.exists && w.st.type != SBX_FILE_DIRECTORY)
		r = sbx_fail(-SBX_ENOTDIR, "write '%s': '%s' is not a directory", rel, parent);
	if (r == 0 && w.exists && asprintf(&dest, "%s/%s", w.path, name) < 0)
		r = sbx_fail(-SBX_ENOMEM, "docker: out of memory");
	if (r == 0 && dest) {
		int found = archive_stat(ws, dest, &target.st);

		target.exists = found == 0;
		if (found < 0 && found != -SBX_ENOENT)
			r = found;
		else if (target.exists && target.st.type == SBX_FILE_DIRECTORY)
			r = sbx_fail(-SBX_EISDIR, "write '%s': is a directory", rel);
		else if (target.exists && (flags & SBX_WRITE_EXCL))
			r = sbx_fail(-SBX_EEXIST, "write '%s': the file exists", rel);
	}
	/* Mode 0 keeps an existing file's mode, as the host path does. */
	if (!mode)
		mode = target.exists && target.st.type == SBX_FILE_REGULAR ? target.st.mode & 0777
		                                                            : DEFAULT_FILE_MODE;
	if (r == 0 && !w.exists)
		r = add_missing_dirs(ws, &tar, w.missing, true, DEFAULT_DIR_MODE);
	if (r == 0)
		r = random_name(tmp_name, sizeof tmp_name);
	if (r == 0 && (asprintf(&tmp_rel, "%s%s%s", w.exists ? "" : w.missing,
	                        w.exists ? "" : "/", tmp_name) < 0 ||
	               asprintf(&tmp, "%s/%s", w.path, tmp_rel) < 0 ||
	               (!dest && asprintf(&dest, "%s/%s/%s", w.path, w.missing, name) < 0)))
		r = sbx_fail(-SBX_ENOMEM, "docker: out of memory");
	if (r == 0)
		r = sbx_tar_append(&tar, &(sbx_tar_member){
			.path = tmp_rel, .type = SBX_ENTRY_FILE, .mode = mode, .uid = ws->file_uid,
			.gid = ws->file_gid, .mtime = time(NULL), .data = data, .size = len });
	sbx_tar_finish(&tar);
	if (r == 0 && tar.oom)
		r = sbx_fail(-SBX_ENOMEM, "write '%s': out of memory", rel);
	if (r == 0 && (r = archive_put(ws, w.path, &tar)) < 0) {
		/* What a failed extraction left of the temporary file goes. */
		const char *rm[] = { "rm", "-f", "--", tmp, NULL };
		char err[512];
		snprintf(err, sizeof err, "%s", sbx_last_error());
		(void)run_command(ws, rm, "remove a failed write's temporary file");
		r = sbx_fail(r, "write '%s': %s", rel, err);
	}
	if (r == 0)
		r = install(ws, rel, tmp, dest, flags & SBX_WRITE_EXCL,
		            target.exists && target.st.type == SBX_FILE_SYMLINK);
	sbx_buf_free(&tar);
	walk_free(&w);
	walk_free(&target);
	return r;
}

int docker_file_mkdir(void *state, const char *rel, unsigned mode)
{
	struct docker_ws *ws = state;
	struct walk w;
	sbx_buf tar = { 0 };
	int r = walk(ws, "mkdir", rel, true, &w);

	if (r == 0 && w.exists && w.st.type != SBX_FILE_DIRECTORY)
		r = sbx_fail(-SBX_EEXIST, "mkdir '%s': exists and is not a directory", rel);
	if (r == 0 && !w.exists) {
		r = add_missing_dirs(ws, &tar, w.missing, true, mode ? mode : DEFAULT_DIR_MODE);
		sbx_tar_finish(&tar);
		if (r == 0 && tar.oom)
			r = sbx_fail(-SBX_ENOMEM, "mkdir '%s': out of memory", rel);
		if (r == 0 && (r = archive_put(ws, w.path, &tar)) < 0) {
			char err[512];
			snprintf(err, sizeof err, "%s", sbx_last_error());
			r = sbx_fail(r, "mkdir '%s': %s", rel, err);
		}
	}
	sbx_buf_free(&tar);
	walk_free(&w);
	return r;
}

/* ---- remove ----------------------------------------------------------------------------- */

int docker_file_remove(void *state, const char *rel, uint32_t flags)
{
	struct docker_ws *ws = state;
	_cleanup_free_ char *what = NULL;
	struct walk w;
	int r;

	if (!*rel)
		return sbx_fail(-SBX_EBUSY, "remove '': the workspace root cannot be removed");
	if (asprintf(&what, "remove '%s'", rel) < 0)
		return sbx_fail(-SBX_ENOMEM, "docker: out of memory");
	/* The last component is what goes (a link, not its target). */
	if ((r = walk(ws, "remove", rel, false, &w)) == 0 && !w.exists)
		r = sbx_fail(-SBX_ENOENT, "remove '%s': no such file", rel);
	if (r == 0) {
		const char *rm[] = { "rm", "-f", "--", w.path, NULL };
		const char *rmdir[] = { "rmdir", "--", w.path, NULL };
		const char *rm_r[] = { "rm", "-rf", "--", w.path, NULL };
		bool dir = w.st.type == SBX_FILE_DIRECTORY;
		r = run_command(ws, !dir ? rm : (flags & SBX_REMOVE_RECURSIVE) ? rm_r : rmdir, what);
	}
	walk_free(&w);
	return r;
}

/* ---- list ------------------------------------------------------------------------------- */

struct list_entry {
	char *name;
	const char *type;
	uint64_t size;
	int64_t mtime;
};

struct list_state {
	const char *top;              /* the directory's own name, the tar's first component */
	const char *rel;
	struct list_entry *v;
	size_t n, cap;
};

static const char *type_name(int type)
{
	switch (type) {
	case SBX_ENTRY_FILE:
	case SBX_ENTRY_HARDLINK:
		return "file";
	case SBX_ENTRY_DIR:
		return "dir";
	case SBX_ENTRY_SYMLINK:
		return "symlink";
	default:
		return "other";
	}
}

/* Keeps the entries one level below the directory ("top/name"). */
static int take_entry(const sbx_archive_entry *e, void *arg)
{
	struct list_state *ls = arg;
	size_t tn = strlen(ls->top);
	const char *name = e->path + tn + 1;

	if (strncmp(e->path, ls->top, tn) != 0 || e->path[tn] != '/' || strchr(name, '/'))
		return strncmp(e->path, ls->top, tn) == 0 && (e->path[tn] == '/' || !e->path[tn])
		       ? 0 : sbx_fail(-SBX_EPROTO, "list '%s': the engine's tar holds '%.200s'",
		                      ls->rel, e->path);
	if (ls->n == ls->cap) {
		size_t cap = ls->cap ? ls->cap * 2 : 32;
		struct list_entry *nv = realloc(ls->v, cap * sizeof *nv);
		if (!nv)
			return sbx_fail(-SBX_ENOMEM, "list '%s': out of memory", ls->rel);
		ls->v = nv;
		ls->cap = cap;
	}
	if (!(ls->v[ls->n].name = strdup(name)))
		return sbx_fail(-SBX_ENOMEM, "list '%s': out of memory", ls->rel);
	ls->v[ls->n].type = type_name(e->type);
	/* As lstat would say: a link's size is its target's length, a directory's nothing. */
	ls->v[ls->n].size = e->type == SBX_ENTRY_SYMLINK ? strlen(e->link)
	                    : e->type == SBX_ENTRY_DIR || e->type == SBX_ENTRY_SPECIAL ? 0
	                    : e->size;
	ls->v[ls->n].mtime = e->mtime;
	ls->n++;
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct list_entry *)a)->name, ((const struct list_entry *)b)->name);
}

static int list_json(struct list_state *ls, char **json)
{
	sbx_buf b = { 0 };

	if (ls->n)
		qsort(ls->v, ls->n, sizeof *ls->v, by_name);
	sbx_buf_puts(&b, "[");
	for (size_t i = 0; i < ls->n; i++) {
		sbx_buf_puts(&b, i ? ",{\"name\":" : "{\"name\":");
		sbx_buf_json_string(&b, ls->v[i].name, strlen(ls->v[i].name));
		sbx_buf_printf(&b, ",\"type\":\"%s\",\"size\":%llu,\"mtime\":%lld}", ls->v[i].type,
		               (unsigned long long)ls->v[i].size, (long long)ls->v[i].mtime);
	}
	sbx_buf_puts(&b, "]");
	if (b.oom || !(*json = sbx_buf_steal(&b, NULL))) {
		sbx_buf_free(&b);
		return sbx_fail(-SBX_ENOMEM, "list '%s': out of memory", ls->rel);
	}
	return 0;
}

int docker_file_list(void *state, const char *rel, char **json_out)
{
	struct docker_ws *ws = state;
	struct list_state ls = { .rel = rel };
	struct sbx_http_response resp = { 0 };
	const sbx_archive_limits lim = { LIST_MAX_ENTRIES, LIST_MAX_BYTES, LIST_MAX_BYTES,
	                                 SBX_ARCHIVE_AS_STORED };
	struct walk w;
	int r = walk_to_dir(ws, "list", rel, rel, &w);

	if (r == 0) {
		ls.top = strrchr(w.path, '/') + 1;
		r = archive_get(ws, w.path, LIST_MAX_BYTES, &resp);
		if (r == -SBX_EFBIG)
			r = sbx_fail(r, "list '%s': the directory's tree is larger than the %zu bytes "
			             "a listing through the archive API reads", rel, LIST_MAX_BYTES);
	}
	if (r == 0)
		r = sbx_archive_iterate(resp.body.data, resp.body.len, SBX_ARCHIVE_TAR, &lim,
		                        take_entry, &ls);
	if (r == 0)
		r = list_json(&ls, json_out);
	for (size_t i = 0; i < ls.n; i++)
		free(ls.v[i].name);
	free(ls.v);
	sbx_http_response_free(&resp);
	walk_free(&w);
	return r;
}

/* ---- the working directory of a command ------------------------------------------------ */

/* The core checks a cwd only by its name where the files are not on the host: here it is
 * resolved like any path of the file ops, and the command starts in what it resolved to. */
int docker_volume_spawn(void *state, const sbx_backend_spawn *req, void **proc, int *wait_fd)
{
	struct docker_ws *ws = state;
	size_t n = strlen(DOCKER_WORKSPACE);
	sbx_backend_spawn copy;
	struct walk w;
	int r;

	if (!ws->volume || !req->cwd || !strcmp(req->cwd, DOCKER_WORKSPACE))
		return docker_spawn(state, req, proc, wait_fd);
	*proc = NULL;
	*wait_fd = -1;
	if (strncmp(req->cwd, DOCKER_WORKSPACE "/", n + 1) != 0)
		return sbx_fail(-SBX_EESCAPE, "cwd '%s' is outside the workspace", req->cwd);
	r = walk_to_dir(ws, "cwd", req->cwd, req->cwd + n + 1, &w);
	if (r == 0) {
		copy = *req;
		copy.cwd = w.path;
		r = docker_spawn(state, &copy, proc, wait_fd);
	}
	walk_free(&w);
	return r;
}

/* ---- the tree, for the searches ------------------------------------------------------- */

int docker_file_tree(void *state, const char *rel, size_t max, char **tar, size_t *len)
{
	struct docker_ws *ws = state;
	struct sbx_http_response resp = { 0 };
	struct walk w;
	int r = walk_to_dir(ws, "search", rel, rel, &w);

	if (r == 0)
		r = archive_get(ws, w.path, max, &resp);
	if (r == 0 && !(*tar = sbx_buf_steal(&resp.body, len)))
		r = sbx_fail(-SBX_ENOMEM, "search '%s': out of memory", rel);
	sbx_http_response_free(&resp);
	walk_free(&w);
	return r;
}
