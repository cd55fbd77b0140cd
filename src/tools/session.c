/* Tool sessions, stored as
 *   {"cwd": "sub/dir", "reads": {"a.txt": [mtime_sec, mtime_nsec, size, seq], ...},
 *    "reads_escaped": {"bad\\xffname": [...]}}
 * where a path that is not UTF-8 (JSON cannot hold it) is kept under "reads_escaped" in the
 * form the tools print names (text.h). A session file that cannot be parsed is treated as
 * empty (the model re-reads files; nothing worse happens), never as an error that would
 * block every tool call. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/session.h"
#include "tools/text.h"
#include "util/buf.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/forksafe.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/statedir.h"

#define SESSION_DIR ".agentsbx/tools"
#define SESSION_SUBDIR "tools"
#define MAX_READS 1000            /* beyond this the oldest entries are forgotten */
#define SESSION_FILE_MAX ((size_t)8 << 20)

/* Saves of one process are serialised; the merge covers other processes' saves. */
SBX_FORK_SAFE_MUTEX(save_lock)

bool sbx_tool_session_id_ok(const char *id)
{
	size_t n = id ? strlen(id) : 0;

	if (n == 0 || n > 128 || id[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = id[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '.' || c == '-'))
			return false;
	}
	return true;
}

static char *session_path(const char *id)
{
	char *p;

	return asprintf(&p, "%s/%s.json", SESSION_DIR, id) < 0 ? NULL : p;
}

/* Where the files are on the host, sessions live in the state folder reached through
 * sbx_state_dir (no link followed, nothing blocking); elsewhere through the file API. */
static bool in_state_dir(const sbx_workspace *ws)
{
	return ws->state_fd >= 0;
}

static int read_session_file(sbx_workspace *ws, const char *id, char **text, size_t *len)
{
	_cleanup_free_ char *path = NULL, *name = NULL;
	_cleanup_close_ int dir = -1;
	int r;

	if (!in_state_dir(ws)) {
		if (!(path = session_path(id)))
			return sbx_fail(-SBX_ENOMEM, "out of memory");
		/* Capped in the read itself: a command may have put a giant in its place. */
		return sbx_file_read_rel(ws, path, SESSION_FILE_MAX, text, len, NULL);
	}
	if (asprintf(&name, "%s.json", id) < 0)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	if ((r = sbx_state_dir(ws, SESSION_SUBDIR, 0, &dir)) < 0)
		return r;
	return sbx_statedir_read(dir, name, SESSION_FILE_MAX, text, len);
}

static int write_session_file(sbx_workspace *ws, const char *id, const char *text, size_t len)
{
	_cleanup_free_ char *path = NULL, *name = NULL;
	_cleanup_close_ int dir = -1;
	int r;

	if (!in_state_dir(ws)) {
		if (!(path = session_path(id)))
			return sbx_fail(-SBX_ENOMEM, "out of memory");
		return sbx_file_write(ws, path, text, len, 0600, SBX_WRITE_MKDIRS);
	}
	if (asprintf(&name, "%s.json", id) < 0)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	if ((r = sbx_state_dir(ws, SESSION_SUBDIR, 0755, &dir)) < 0)
		return r;
	return sbx_fs_write_atomic(dir, name, text, len, 0600, 0);
}

static int push_read(struct sbx_tool_session *s, const char *rel, int64_t sec, int64_t nsec,
                     uint64_t size, int64_t seq)
{
	struct sbx_tool_read *nv = realloc(s->reads, (s->n_reads + 1) * sizeof *nv);
	char *copy = strdup(rel);

	if (nv)
		s->reads = nv;
	if (!nv || !copy) {
		free(copy);
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	}
	s->reads[s->n_reads++] = (struct sbx_tool_read){ copy, sec, nsec, size, seq };
	if (seq >= s->next_seq)
		s->next_seq = seq + 1;
	return 0;
}

static struct sbx_tool_read *find(const struct sbx_tool_session *s, const char *rel)
{
	for (size_t i = 0; i < s->n_reads; i++)
		if (strcmp(s->reads[i].rel, rel) == 0)
			return &s->reads[i];
	return NULL;
}

static bool int_at(const sbx_json *a, size_t i, int64_t *out)
{
	if (a->n <= i || a->items[i]->type != SBX_JSON_INT)
		return false;
	*out = a->items[i]->i;
	return true;
}

/* escaped: the keys are paths as the tools print them, to be unescaped. */
static int parse_reads(struct sbx_tool_session *s, const sbx_json *reads, bool escaped)
{
	for (size_t i = 0; reads && reads->type == SBX_JSON_OBJECT && i < reads->n; i++) {
		const sbx_json *e = reads->items[i];
		_cleanup_free_ char *raw = NULL;
		int64_t sec, nsec, size, seq;
		int r;

		if (e->type != SBX_JSON_ARRAY || !int_at(e, 0, &sec) || !int_at(e, 1, &nsec) ||
		    !int_at(e, 2, &size) || !int_at(e, 3, &seq) || size < 0 ||
		    strlen(reads->keys[i]) != reads->key_lens[i])
			continue;
		if (escaped && (r = sbx_tool_unescape_name(reads->keys[i], reads->key_lens[i],
		                                           &raw)) <= 0) {
			if (r < 0)
				return sbx_fail(-SBX_ENOMEM, "out of memory");
			continue;
		}
		if ((r = push_read(s, raw ? raw : reads->keys[i], sec, nsec, (uint64_t)size, seq)) < 0)
			return r;
	}
	return 0;
}

/* Fills s from the stored file, if there is a readable one. */
static int load_stored(sbx_workspace *ws, struct sbx_tool_session *s)
{
	_cleanup_free_ char *text = NULL;
	sbx_json *root = NULL;
	const sbx_json *cwd;
	char err[128];
	size_t len;
	int r;

	if (read_session_file(ws, s->id, &text, &len) < 0 || len > SESSION_FILE_MAX)
		return 0;
	if (sbx_json_parse(text, len, &root, err, sizeof err) < 0)
		return 0;
	cwd = sbx_json_get(root, "cwd");
	if (cwd && cwd->type == SBX_JSON_STRING && strlen(cwd->str) == cwd->len) {
		free(s->cwd);
		if (!(s->cwd = strdup(cwd->str))) {
			sbx_json_free(root);
			return sbx_fail(-SBX_ENOMEM, "out of memory");
		}
	}
	r = parse_reads(s, sbx_json_get(root, "reads"), false);
	if (r == 0)
		r = parse_reads(s, sbx_json_get(root, "reads_escaped"), true);
	sbx_json_free(root);
	return r;
}

static struct sbx_tool_session *session_new(const char *id)
{
	struct sbx_tool_session *s = calloc(1, sizeof *s);

	if (s && (!(s->id = strdup(id)) || !(s->cwd = strdup("")))) {
		sbx_tool_session_free(s);
		return NULL;
	}
	return s;
}

int sbx_tool_session_load(sbx_workspace *ws, const char *id, struct sbx_tool_session **out)
{
	struct sbx_tool_session *s = session_new(id);
	int r;

	*out = NULL;
	if (!s)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	if ((r = load_stored(ws, s)) < 0) {
		sbx_tool_session_free(s);
		return r;
	}
	*out = s;
	return 0;
}

void sbx_tool_session_free(struct sbx_tool_session *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n_reads; i++)
		free(s->reads[i].rel);
	for (size_t i = 0; i < s->n_touched; i++)
		free(s->touched[i]);
	free(s->reads);
	free(s->touched);
	free(s->cwd);
	free(s->id);
	free(s);
}

const struct sbx_tool_read *sbx_tool_session_read_of(const struct sbx_tool_session *s,
                                                     const char *rel)
{
	return find(s, rel);
}

static int touch(struct sbx_tool_session *s, const char *rel)
{
	char **nv;

	for (size_t i = 0; i < s->n_touched; i++)
		if (strcmp(s->touched[i], rel) == 0)
			return 0;
	if (!(nv = realloc(s->touched, (s->n_touched + 1) * sizeof *nv)))
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	s->touched = nv;
	if (!(s->touched[s->n_touched] = strdup(rel)))
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	s->n_touched++;
	return 0;
}

int sbx_tool_session_note_read(struct sbx_tool_session *s, const char *rel, const sbx_stat *st)
{
	struct sbx_tool_read *e = find(s, rel);
	int r = touch(s, rel);

	if (r < 0)
		return r;
	if (!e)
		return push_read(s, rel, st->mtime_sec, st->mtime_nsec, st->file_size, s->next_seq++);
	e->mtime_sec = st->mtime_sec;
	e->mtime_nsec = st->mtime_nsec;
	e->size = st->file_size;
	e->seq = s->next_seq++;
	return 0;
}

int sbx_tool_session_set_cwd(struct sbx_tool_session *s, const char *rel)
{
	char *copy = strdup(rel);

	if (!copy)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	free(s->cwd);
	s->cwd = copy;
	s->cwd_changed = true;
	return 0;
}

/* Applies this call's changes on top of what is stored now. */
static int merge_into(const struct sbx_tool_session *mine, struct sbx_tool_session *stored)
{
	int r;

	if (mine->cwd_changed && (r = sbx_tool_session_set_cwd(stored, mine->cwd)) < 0)
		return r;
	for (size_t i = 0; i < mine->n_touched; i++) {
		const struct sbx_tool_read *e = find(mine, mine->touched[i]);
		struct sbx_tool_read *t = find(stored, mine->touched[i]);
		int64_t seq = stored->next_seq++;

		if (!e)
			continue;
		if (!t) {
			if ((r = push_read(stored, e->rel, e->mtime_sec, e->mtime_nsec, e->size, seq)) < 0)
				return r;
			continue;
		}
		t->mtime_sec = e->mtime_sec;
		t->mtime_nsec = e->mtime_nsec;
		t->size = e->size;
		t->seq = seq;
	}
	return 0;
}

static int by_seq_desc(const void *a, const void *b)
{
	const struct sbx_tool_read *x = a, *y = b;

	return (x->seq < y->seq) - (x->seq > y->seq);
}

/* The newest MAX_READS entries whose path is UTF-8 (escaped false) or is not. */
static void serialise_reads(const struct sbx_tool_session *s, sbx_buf *b, bool escaped)
{
	size_t written = 0;

	for (size_t i = 0; i < s->n_reads && i < MAX_READS; i++) {
		const struct sbx_tool_read *e = &s->reads[i];
		size_t len = strlen(e->rel);

		if (sbx_utf8_valid(e->rel, len) == escaped)
			continue;
		if (written++)
			sbx_buf_puts(b, ",");
		if (escaped) {
			_cleanup_free_ char *key = sbx_tool_escape_name(e->rel, len);
			if (!key) {
				b->oom = true;
				return;
			}
			sbx_buf_json_string(b, key, strlen(key));
		} else {
			sbx_buf_json_string(b, e->rel, len);
		}
		sbx_buf_printf(b, ":[%lld,%lld,%llu,%lld]", (long long)e->mtime_sec,
		               (long long)e->mtime_nsec, (unsigned long long)e->size, (long long)e->seq);
	}
}

static void serialise(struct sbx_tool_session *s, sbx_buf *b)
{
	if (s->n_reads)
		qsort(s->reads, s->n_reads, sizeof *s->reads, by_seq_desc);
	sbx_buf_puts(b, "{\"cwd\":");
	sbx_buf_json_string(b, s->cwd, strlen(s->cwd));
	sbx_buf_puts(b, ",\"reads\":{");
	serialise_reads(s, b, false);
	sbx_buf_puts(b, "},\"reads_escaped\":{");
	serialise_reads(s, b, true);
	sbx_buf_puts(b, "}}\n");
}

int sbx_tool_session_save(sbx_workspace *ws, struct sbx_tool_session *s)
{
	struct sbx_tool_session *stored = NULL;
	sbx_buf b = { 0 };
	int r;

	if (!s->cwd_changed && s->n_touched == 0)
		return 0;
	pthread_mutex_lock(&save_lock);
	r = sbx_tool_session_load(ws, s->id, &stored);
	if (r == 0)
		r = merge_into(s, stored);
	if (r == 0) {
		serialise(stored, &b);
		r = b.oom ? sbx_fail(-SBX_ENOMEM, "out of memory")
		          : write_session_file(ws, s->id, b.data, b.len);
	}
	pthread_mutex_unlock(&save_lock);
	sbx_buf_free(&b);
	sbx_tool_session_free(stored);
	return r;
}
