/* Context offload: what a harness moves out of the model's context goes into the workspace.
 *
 *   sessions/<id>/context.jsonl          one compact JSON message per line, appended
 *   sessions/<id>/tool_result-<id>.txt   then "(1)", "(2)"... on a clash, never overwritten
 *   data/<sha256 of the bytes><ext>      written once
 *
 * Appends are one piece. Where the files are on the host, all the lines of a call go out in a
 * single write(2) on an O_APPEND descriptor under the file's host lock (util/hostlock.h: a
 * lock file outside the workspace, which no command inside can take and hold, unlike an
 * flock of the file itself): writers in other threads and processes never interleave within
 * a line, and a write cut short is truncated away, so a failure leaves no half line.
 * Elsewhere the file is read and rewritten atomically under a process-wide lock.
 *
 * Media types map to extensions by a fixed table (below), not by the host's mime database,
 * so the same bytes get the same name everywhere. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>


#include "internal.h"
#include "util/base64.h"
#include "util/buf.h"
#include "util/cleanup.h"
#include "util/digest.h"
#include "util/error.h"
#include "util/forksafe.h"
#include "util/hostlock.h"
#include "util/json.h"
#include "util/path.h"

#define ID_MAX 128
#define MEDIA_PART_MAX 127
#define CLASH_MAX 10000
/* One append at most: a single write(2) moves at most ~2 GiB, and readers want less. */
#define APPEND_MAX ((size_t)1 << 30)

static const struct {
	const char *type;
	const char *ext;
} media_exts[] = {
	{ "image/png", ".png" },
	{ "image/jpeg", ".jpg" },
	{ "image/jpg", ".jpg" },
	{ "image/gif", ".gif" },
	{ "image/webp", ".webp" },
	{ "image/svg+xml", ".svg" },
	{ "image/bmp", ".bmp" },
	{ "image/tiff", ".tiff" },
	{ "image/x-icon", ".ico" },
	{ "image/avif", ".avif" },
	{ "image/heic", ".heic" },
	{ "application/pdf", ".pdf" },
	{ "application/json", ".json" },
	{ "application/xml", ".xml" },
	{ "application/zip", ".zip" },
	{ "application/gzip", ".gz" },
	{ "application/x-tar", ".tar" },
	{ "application/javascript", ".js" },
	{ "text/plain", ".txt" },
	{ "text/markdown", ".md" },
	{ "text/html", ".html" },
	{ "text/csv", ".csv" },
	{ "text/css", ".css" },
	{ "text/xml", ".xml" },
	{ "text/javascript", ".js" },
	{ "audio/mpeg", ".mp3" },
	{ "audio/mp3", ".mp3" },
	{ "audio/wav", ".wav" },
	{ "audio/x-wav", ".wav" },
	{ "audio/ogg", ".ogg" },
	{ "audio/flac", ".flac" },
	{ "audio/aac", ".aac" },
	{ "audio/mp4", ".m4a" },
	{ "audio/webm", ".weba" },
	{ "video/mp4", ".mp4" },
	{ "video/webm", ".webm" },
	{ "video/quicktime", ".mov" },
	{ "video/mpeg", ".mpeg" },
	{ "video/ogg", ".ogv" },
};

static bool host_files(const sbx_workspace *ws)
{
	return ws->caps & SBX_BACKEND_CAP_HOST_FILES;
}

static int check_ws(const char *fn, const sbx_workspace *ws)
{
	if (!ws)
		return sbx_fail(-SBX_EINVAL, "%s: ws must not be NULL", fn);
	if (host_files(ws) && ws->root_fd < 0)
		return sbx_fail(-SBX_ESTATE, "%s: the workspace has no root directory open", fn);
	return 0;
}

/* Session and tool-call ids: [A-Za-z0-9_.-], 1..128 characters, not starting with '.'. */
static int check_id(const char *fn, const char *what, const char *id)
{
	size_t n;

	if (!id)
		return sbx_fail(-SBX_EINVAL, "%s: %s must not be NULL", fn, what);
	n = strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-");
	if (n == 0 || id[n] != '\0' || n > ID_MAX || id[0] == '.')
		return sbx_fail(-SBX_EINVAL, "%s: %s '%.40s%s': use 1..%d of [A-Za-z0-9_.-], not "
		                "starting with '.'", fn, what, id, strlen(id) > 40 ? "..." : "",
		                ID_MAX);
	return 0;
}

/* ---------------------------------------------------------------------------------------
 * Data
 * ------------------------------------------------------------------------------------- */

/* A restricted name of RFC 6838: [A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*, at most 127. */
static size_t media_part(const char *s)
{
	size_t n = 0;

	if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') ||
	      (s[0] >= '0' && s[0] <= '9')))
		return 0;
	n = strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$&^_.+-");
	return n <= MEDIA_PART_MAX ? n : 0;
}

/* "type/subtype", optionally followed by "; parameters" (printable ASCII, ignored). */
static int media_ext(const char *mt, const char **ext)
{
	size_t t = media_part(mt), s = t && mt[t] == '/' ? media_part(mt + t + 1) : 0;
	const char *rest = mt + t + 1 + s;

	if (!s || (*rest && *rest != ';' && *rest != ' '))
		return sbx_fail(-SBX_EINVAL, "media_type '%.60s': not a media type (type/subtype, "
		                "like image/png)", mt);
	for (const char *p = rest; *p; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
			return sbx_fail(-SBX_EINVAL, "media_type '%.60s': its parameters hold a "
			                "control or non-ASCII character", mt);
	*ext = ".bin";
	for (size_t i = 0; i < SBX_ARRAY_SIZE(media_exts); i++)
		if (strlen(media_exts[i].type) == t + 1 + s &&
		    strncasecmp(media_exts[i].type, mt, t + 1 + s) == 0)
			*ext = media_exts[i].ext;
	return 0;
}

/* Stores the bytes under data/ unless there already; *path is "data/<sha256><ext>". */
static int store_data(sbx_workspace *ws, const char *media_type, const void *data, size_t len,
                      char **path)
{
	const char *ext = ".bin";
	char hex[65];
	int r;

	*path = NULL;
	if ((r = media_ext(media_type, &ext)) < 0 || (r = sbx_sha256_hex(data, len, hex)) < 0)
		return r;
	if (asprintf(path, "data/%s%s", hex, ext) < 0)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	r = sbx_file_write(ws, *path, len ? data : "", len, 0644,
	                   SBX_WRITE_EXCL | SBX_WRITE_MKDIRS);
	/* Content-addressed: a file of that name holds these bytes already. */
	if (r == -SBX_EEXIST)
		r = 0;
	if (r < 0)
		free(SBX_TAKE_PTR(*path));
	return r;
}

static char *data_url(const char *path)
{
	char *url = NULL;

	return asprintf(&url, "workspace:///%s", path) < 0 ? NULL : url;
}

int sbx_offload_data(sbx_workspace *ws, const char *media_type, const void *data, size_t len,
                     char **url_out)
{
	static const char fn[] = "sbx_offload_data";
	_cleanup_free_ char *path = NULL;
	int r;

	if (url_out)
		*url_out = NULL;
	if ((r = check_ws(fn, ws)) < 0)
		return r;
	if (!media_type)
		return sbx_fail(-SBX_EINVAL, "%s: media_type must not be NULL (unknown bytes are "
		                "application/octet-stream)", fn);
	if (!data && len)
		return sbx_fail(-SBX_EINVAL, "%s: data must not be NULL (len is %zu)", fn, len);
	if (!url_out)
		return sbx_fail(-SBX_EINVAL, "%s: url_out must not be NULL", fn);
	if ((r = store_data(ws, media_type, data, len, &path)) < 0) {
		char msg[512];
		snprintf(msg, sizeof msg, "%s", sbx_last_error());
		return sbx_fail(r, "%s: %s", fn, msg);
	}
	if (!(*url_out = data_url(path)))
		return sbx_fail(-SBX_ENOMEM, "%s: out of memory", fn);
	return 0;
}

/* ---------------------------------------------------------------------------------------
 * Tool results
 * ------------------------------------------------------------------------------------- */

/* Writes data under the first free name: a name another writer takes meanwhile makes the
 * exclusive write fail, and the next name is tried. */
static int store_tool_result(sbx_workspace *ws, const char *session, const char *call,
                             const void *data, size_t len, char **path)
{
	for (int k = 0; k <= CLASH_MAX; k++) {
		sbx_stat st = { .size = sizeof st };
		char *p = NULL;
		int n = k ? asprintf(&p, "sessions/%s/tool_result-%s(%d).txt", session, call, k) :
		            asprintf(&p, "sessions/%s/tool_result-%s.txt", session, call);
		if (n < 0)
			return sbx_fail(-SBX_ENOMEM, "out of memory");
		/* A look first spares a write for names long taken. */
		int r = sbx_file_stat(ws, p, &st);
		if (r == -SBX_ENOENT)
			r = sbx_file_write(ws, p, len ? data : "", len, 0644,
			                   SBX_WRITE_EXCL | SBX_WRITE_MKDIRS);
		else if (r == 0)
			r = -SBX_EEXIST;
		if (r == 0) {
			*path = p;
			return 0;
		}
		free(p);
		if (r != -SBX_EEXIST)
			return r;
	}
	return sbx_fail(-SBX_EEXIST, "tool_result-%s.txt and its %d numbered variants exist",
	                call, CLASH_MAX);
}

int sbx_offload_tool_result(sbx_workspace *ws, const char *session_id,
                            const char *tool_call_id, const void *data, size_t len,
                            char **path_out)
{
	static const char fn[] = "sbx_offload_tool_result";
	int r;

	if (path_out)
		*path_out = NULL;
	if ((r = check_ws(fn, ws)) < 0 || (r = check_id(fn, "session_id", session_id)) < 0 ||
	    (r = check_id(fn, "tool_call_id", tool_call_id)) < 0)
		return r;
	if (!data && len)
		return sbx_fail(-SBX_EINVAL, "%s: data must not be NULL (len is %zu)", fn, len);
	if (!path_out)
		return sbx_fail(-SBX_EINVAL, "%s: path_out must not be NULL", fn);
	if ((r = store_tool_result(ws, session_id, tool_call_id, data, len, path_out)) < 0) {
		char msg[512];
		snprintf(msg, sizeof msg, "%s", sbx_last_error());
		return sbx_fail(r, "%s: %s", fn, msg);
	}
	return 0;
}

/* ---------------------------------------------------------------------------------------
 * Context: data blocks
 * ------------------------------------------------------------------------------------- */

static const char *str_member(const sbx_json *obj, const char *key)
{
	const sbx_json *v = sbx_json_get(obj, key);

	return v && v->type == SBX_JSON_STRING ? v->str : NULL;
}

/* Replaces obj's member key (which exists) by v. */
static void replace_member(sbx_json *obj, const char *key, sbx_json *v)
{
	for (size_t i = 0; i < obj->n; i++)
		if (strcmp(obj->keys[i], key) == 0) {
			sbx_json_free(obj->items[i]);
			obj->items[i] = v;
			return;
		}
}

/* {"type":"url","url":"workspace:///data/...","media_type":"..."} as a tree. */
static int url_source(const char *url, const char *media_type, sbx_json **out)
{
	sbx_buf b = { 0 };
	char err[128];
	int r;

	sbx_buf_puts(&b, "{\"type\":\"url\",\"url\":");
	sbx_buf_json_string(&b, url, strlen(url));
	sbx_buf_puts(&b, ",\"media_type\":");
	sbx_buf_json_string(&b, media_type, strlen(media_type));
	sbx_buf_puts(&b, "}");
	if (b.oom) {
		sbx_buf_free(&b);
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	}
	r = sbx_json_parse(b.data, b.len, out, err, sizeof err);
	sbx_buf_free(&b);
	return r < 0 ? sbx_fail(-SBX_EIO, "building the url source: %s", err) : 0;
}

/* A data block with a base64 source: store the bytes, point the block at them. */
static int offload_block(sbx_workspace *ws, sbx_json *block, sbx_json *src, const char *where)
{
	_cleanup_free_ unsigned char *bytes = NULL;
	_cleanup_free_ char *path = NULL, *url = NULL;
	const sbx_json *data = sbx_json_get(src, "data");
	const char *mt = str_member(src, "media_type");
	sbx_json *nsrc;
	size_t len;
	int r;

	if (!data || data->type != SBX_JSON_STRING)
		return sbx_fail(-SBX_EINVAL, "%s: source.data must be a base64 string", where);
	if (!mt)
		return sbx_fail(-SBX_EINVAL, "%s: source.media_type must be a string", where);
	if ((r = sbx_base64_decode(data->str, data->len, &bytes, &len)) < 0)
		return r == -SBX_ENOMEM ? sbx_fail(r, "out of memory") :
		       sbx_fail(r, "%s: source.data is not valid base64", where);
	if ((r = store_data(ws, mt, bytes, len, &path)) < 0) {
		char msg[512];
		snprintf(msg, sizeof msg, "%s", sbx_last_error());
		return sbx_fail(r, "%s: source.%s", where, msg);
	}
	if (!(url = data_url(path)))
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	if ((r = url_source(url, mt, &nsrc)) < 0)
		return r;
	replace_member(block, "source", nsrc);
	return 0;
}

/* Offloads the top-level data blocks in msg's "content" (nested ones, in tool results, stay). */
static int offload_blocks(sbx_workspace *ws, sbx_json *msg, size_t index, bool single)
{
	sbx_json *content = (sbx_json *)sbx_json_get(msg, "content");
	char where[128];

	if (!content || content->type != SBX_JSON_ARRAY)
		return 0;
	for (size_t j = 0; j < content->n; j++) {
		sbx_json *block = content->items[j];
		if (block->type != SBX_JSON_OBJECT || !str_member(block, "type") ||
		    strcmp(str_member(block, "type"), "data") != 0)
			continue;
		sbx_json *src = (sbx_json *)sbx_json_get(block, "source");
		if (!src || src->type != SBX_JSON_OBJECT || !str_member(src, "type") ||
		    strcmp(str_member(src, "type"), "base64") != 0)
			continue;
		if (single)
			snprintf(where, sizeof where, "messages_json: content block %zu", j);
		else
			snprintf(where, sizeof where, "messages_json: item %zu, content block %zu",
			         index, j);
		int r = offload_block(ws, block, src, where);
		if (r < 0)
			return r;
	}
	return 0;
}

/* ---------------------------------------------------------------------------------------
 * Context: appending lines
 * ------------------------------------------------------------------------------------- */

/* Does the file end in a newline (or is it empty)? Another writer's crash, or an editor,
 * may have left a last line unfinished: ours then starts on a line of its own. */
static int ends_with_newline(int fd, off_t size, bool *yes)
{
	char c;
	ssize_t n;

	*yes = true;
	if (size == 0)
		return 0;
	do
		n = pread(fd, &c, 1, size - 1);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return sbx_fail(sbx_errno_code(errno), "read: %s", strerror(errno));
	*yes = n == 1 && c == '\n';
	return 0;
}

static int open_for_append(sbx_workspace *ws, const char *path)
{
	struct stat st;
	/* O_NONBLOCK: a FIFO planted there fails the check below instead of blocking. */
	int fd = sbx_path_open(ws->root_fd, path, O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW |
	                       O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0644);

	if (fd == -SBX_ELOOP)
		return sbx_fail(-SBX_EINVAL, "%s: is a symlink", path);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return sbx_fail(-SBX_EINVAL, "%s: not a regular file", path);
	}
	return fd;
}

/* Other writers hold it for one write; a holder past this is broken, not busy. */
#define APPEND_LOCK_TIMEOUT_MS 5000

/* The file's host lock. Where the lock folder cannot be used (its message says why), the
 * append goes on unlocked: one O_APPEND write still keeps the lines whole. */
static int take_append_lock(int fd, const char *path, int *lock)
{
	char msg[512];
	int r = sbx_hostlock_take(fd, "append", APPEND_LOCK_TIMEOUT_MS, lock);

	if (r == 0 || r != -SBX_ETIMEDOUT) {
		sbx_error_clear();
		return 0;
	}
	snprintf(msg, sizeof msg, "%s", sbx_last_error());
	return sbx_fail(r, "%s: append: %s", path, msg);
}

/* buf[0] is room for a '\n' before the lines, used when the file needs one. */
static int append_on_host(sbx_workspace *ws, const char *dir, const char *path, char *buf,
                          size_t len)
{
	struct stat st;
	bool nl;
	int r;

	if ((r = sbx_file_mkdir(ws, dir, 0755)) < 0)
		return r;
	_cleanup_close_ int fd = open_for_append(ws, path);
	if (fd < 0)
		return fd;
	_cleanup_hostlock_ int lock = -1;
	if ((r = take_append_lock(fd, path, &lock)) < 0)
		return r;
	if (fstat(fd, &st) < 0)
		return sbx_fail(sbx_errno_code(errno), "%s: %s", path, strerror(errno));
	if ((r = ends_with_newline(fd, st.st_size, &nl)) < 0)
		return r;
	const char *out = nl ? buf + 1 : buf;
	size_t n = nl ? len - 1 : len;
	ssize_t w;
	do
		w = write(fd, out, n);
	while (w < 0 && errno == EINTR);
	if (w == (ssize_t)n)
		return 0;
	/* Failed or cut short (disk full, a file size limit): take back whatever part landed,
	 * so no half line stays. */
	int err = errno;
	(void)!ftruncate(fd, st.st_size);
	if (w < 0)
		return sbx_fail(sbx_errno_code(err), "%s: append: %s", path, strerror(err));
	return sbx_fail(-SBX_EIO, "%s: append: only %zd of %zu bytes could be written (disk "
	                "full, or a file size limit)", path, w, n);
}

SBX_FORK_SAFE_MUTEX(rewrite_lock)

/* Without host files: read, add, write back atomically; the lock orders this process's
 * writers (other processes cannot reach the file the same way). */
static int append_elsewhere(sbx_workspace *ws, const char *path, const char *buf, size_t len)
{
	_cleanup_free_ char *old = NULL;
	sbx_buf b = { 0 };
	size_t olen = 0;
	int r;

	pthread_mutex_lock(&rewrite_lock);
	r = sbx_file_read(ws, path, &old, &olen);
	if (r == -SBX_ENOENT)
		r = 0;
	if (r == 0) {
		sbx_buf_append(&b, old ? old : "", olen);
		if (olen && old[olen - 1] != '\n')
			sbx_buf_append(&b, buf, len);
		else
			sbx_buf_append(&b, buf + 1, len - 1);
		r = b.oom ? sbx_fail(-SBX_ENOMEM, "out of memory") :
		    sbx_file_write(ws, path, b.data ? b.data : "", b.len, 0, SBX_WRITE_MKDIRS);
	}
	pthread_mutex_unlock(&rewrite_lock);
	sbx_buf_free(&b);
	return r;
}

static const char *article(const char *noun)
{
	return strchr("aeiou", noun[0]) ? "an" : "a";
}

/* The messages: one object, or an array of objects. */
static int parse_messages(const char *fn, const char *text, sbx_json **out)
{
	char err[256];
	sbx_json *v;
	const char *t;
	int r = 0;

	*out = NULL;
	if (sbx_json_parse(text, strlen(text), &v, err, sizeof err) < 0)
		return sbx_fail(-SBX_EINVAL, "%s: messages_json: %s", fn, err);
	if (v->type == SBX_JSON_ARRAY) {
		for (size_t i = 0; i < v->n && r == 0; i++)
			if (v->items[i]->type != SBX_JSON_OBJECT) {
				t = sbx_json_type_name(v->items[i]->type);
				r = sbx_fail(-SBX_EINVAL, "%s: messages_json: item %zu is %s %s, "
				             "not a message object", fn, i, article(t), t);
			}
	} else if (v->type != SBX_JSON_OBJECT) {
		t = sbx_json_type_name(v->type);
		r = sbx_fail(-SBX_EINVAL, "%s: messages_json: must be a message object or an "
		             "array of them, not %s %s", fn, article(t), t);
	}
	if (r < 0)
		sbx_json_free(v);
	else
		*out = v;
	return r;
}

/* Offloads the data blocks and writes the lines (after one spare byte, see append_on_host). */
static int build_lines(sbx_workspace *ws, sbx_json *v, sbx_buf *b)
{
	bool single = v->type == SBX_JSON_OBJECT;
	size_t n = single ? 1 : v->n;
	int r;

	sbx_buf_append(b, "\n", 1);
	for (size_t i = 0; i < n; i++) {
		sbx_json *msg = single ? v : v->items[i];
		if ((r = offload_blocks(ws, msg, i, single)) < 0)
			return r;
		sbx_json_write(b, msg);
		sbx_buf_append(b, "\n", 1);
	}
	if (b->oom)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	if (b->len > APPEND_MAX)
		return sbx_fail(-SBX_E2BIG, "the messages take %zu bytes as lines, more than %zu",
		                b->len - 1, APPEND_MAX);
	return 0;
}

static int offload_context(sbx_workspace *ws, const char *fn, const char *session,
                           const char *text, char **path_out)
{
	_cleanup_free_ char *dir = NULL, *path = NULL;
	sbx_json *v = NULL;
	sbx_buf b = { 0 };
	int r = parse_messages(fn, text, &v);

	if (r < 0)
		return r;
	if (asprintf(&dir, "sessions/%s", session) < 0 ||
	    asprintf(&path, "sessions/%s/context.jsonl", session) < 0) {
		r = sbx_fail(-SBX_ENOMEM, "out of memory");
		goto out;
	}
	if ((r = build_lines(ws, v, &b)) < 0)
		goto out;
	if (host_files(ws))
		r = append_on_host(ws, dir, path, b.data, b.len);
	else
		r = append_elsewhere(ws, path, b.data, b.len);
	if (r == 0)
		*path_out = SBX_TAKE_PTR(path);
out:
	sbx_json_free(v);
	sbx_buf_free(&b);
	return r;
}

int sbx_offload_context(sbx_workspace *ws, const char *session_id, const char *messages_json,
                        char **path_out)
{
	static const char fn[] = "sbx_offload_context";
	int r;

	if (path_out)
		*path_out = NULL;
	if ((r = check_ws(fn, ws)) < 0 || (r = check_id(fn, "session_id", session_id)) < 0)
		return r;
	if (!messages_json)
		return sbx_fail(-SBX_EINVAL, "%s: messages_json must not be NULL", fn);
	if (!path_out)
		return sbx_fail(-SBX_EINVAL, "%s: path_out must not be NULL", fn);
	r = offload_context(ws, fn, session_id, messages_json, path_out);
	if (r < 0 && strncmp(sbx_last_error(), fn, strlen(fn)) != 0) {
		char msg[512];
		snprintf(msg, sizeof msg, "%s", sbx_last_error());
		return sbx_fail(r, "%s: %s", fn, msg);
	}
	return r;
}
