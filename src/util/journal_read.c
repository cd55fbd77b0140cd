/* The journal's reading half (journal.h): notes parsed back, what they list taken away when
 * its maker has ended, and the notes with it. Everything here trusts a note only as far as
 * its own checks go: a name must look like one of ours, an entry must still be what was
 * noted, directories are opened beneath the root. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include <agentsbx/agentsbx.h>
#include "cleanup.h"
#include "error.h"
#include "journal.h"
#include "journal_int.h"
#include "json.h"
#include "path.h"

#define ITEMS_MAX 4096
/* A note that cannot be read back, or a dot-file of a note being replaced, is junk once it is
 * this old: writing one takes microseconds. */
#define JUNK_AGE_S 60

/* ---- parsing ---------------------------------------------------------------------------- */

static int bad(const char *key, const char *why)
{
	return sbx_fail(-SBX_EINVAL, "journal note: '%s': %s", key, why);
}

static bool is_string(const sbx_json *v)
{
	return v && v->type == SBX_JSON_STRING && strlen(v->str) == v->len;
}

static bool plain_name(const char *s)
{
	return s[0] && strlen(s) <= NAME_MAX && !strchr(s, '/') && strcmp(s, ".") &&
	       strcmp(s, "..");
}

/* ".<something>.sbx-XXXXXX": the only names a note may ask to remove on their own. */
static bool temp_name(const char *s)
{
	size_t n = strlen(s);
	const char *tail = n >= 12 ? s + n - 11 : NULL;

	if (!plain_name(s) || s[0] != '.' || !tail || strncmp(tail, ".sbx-", 5) != 0)
		return false;
	for (const char *c = tail + 5; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9')))
			return false;
	return true;
}

/* Relative, no "..", no empty component: a directory to open beneath the root. */
static bool relative_dir_ok(const char *s)
{
	if (s[0] == '/' || strlen(s) >= PATH_MAX)
		return false;
	for (const char *p = s; *p; ) {
		size_t n = strcspn(p, "/");
		if (n == 0 || (n == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		p += n;
		if (*p == '/' && !*++p)
			return false;
	}
	return true;
}

static int take_u64(const sbx_json *obj, const char *key, bool required, uint64_t *out)
{
	const sbx_json *v = sbx_json_get(obj, key);

	*out = 0;
	if (!v)
		return required ? bad(key, "missing") : 0;
	if (v->type != SBX_JSON_INT || v->i < 0)
		return bad(key, "expected a non-negative integer");
	*out = (uint64_t)v->i;
	return 0;
}

static int only_keys(const sbx_json *obj, const char *what, const char *const *keys)
{
	for (size_t i = 0; i < obj->n; i++) {
		bool known = false;

		for (const char *const *k = keys; *k && !known; k++)
			known = strlen(obj->keys[i]) == obj->key_lens[i] && !strcmp(*k, obj->keys[i]);
		if (!known)
			return bad(what, "unknown key");
	}
	return 0;
}

static int take_owner(const sbx_json *v, struct sbx_journal_owner *o)
{
	static const char *const keys[] = { "boot", "pidns", "pid", "start", NULL };
	const sbx_json *boot = v && v->type == SBX_JSON_OBJECT ? sbx_json_get(v, "boot") : NULL;
	uint64_t pid;
	int r;

	if (!v || v->type != SBX_JSON_OBJECT)
		return bad("owner", "expected an object");
	if ((r = only_keys(v, "owner", keys)) < 0)
		return r;
	if (!is_string(boot) || boot->len == 0 || boot->len >= sizeof o->boot)
		return bad("owner.boot", "expected a boot id");
	memcpy(o->boot, boot->str, boot->len + 1);
	if ((r = take_u64(v, "pidns", true, &o->pidns)) < 0 || (r = take_u64(v, "pid", true, &pid)) < 0 ||
	    (r = take_u64(v, "start", true, &o->start)) < 0)
		return r;
	if (pid == 0 || pid > INT32_MAX)
		return bad("owner.pid", "not a pid");
	o->pid = (int64_t)pid;
	return 0;
}

static int take_item(const sbx_json *v, enum sbx_journal_kind kind, struct sbx_journal_item *it)
{
	static const char *const keys[] = { "at", "name", "tmp", "dir", "sock", "dev", "ino", "gen",
	                                    "born", NULL };
	const sbx_json *at, *name, *tmp, *dir, *sock;
	int r;

	if (v->type != SBX_JSON_OBJECT)
		return bad("items", "expected objects");
	if ((r = only_keys(v, "items", keys)) < 0)
		return r;
	at = sbx_json_get(v, "at");
	name = sbx_json_get(v, "name");
	tmp = sbx_json_get(v, "tmp");
	dir = sbx_json_get(v, "dir");
	sock = sbx_json_get(v, "sock");
	if (!is_string(at) || !relative_dir_ok(at->str))
		return bad("items.at", "expected a relative directory without '..'");
	if (!is_string(tmp) || !temp_name(tmp->str))
		return bad("items.tmp", "expected a temporary name of ours");
	/* A temporary file has only its temporary name; a placeholder has its own too. */
	if (kind == SBX_NOTE_TEMP ? name != NULL : !is_string(name) || !plain_name(name->str))
		return bad("items.name", kind == SBX_NOTE_TEMP ? "not for a temporary file"
		                                                : "expected a file name");
	if (dir && dir->type != SBX_JSON_BOOL)
		return bad("items.dir", "expected true or false");
	it->dir = dir && dir->b;
	if (kind == SBX_NOTE_TEMP && it->dir)
		return bad("items.dir", "a temporary file is no directory");
	if (sock && sock->type != SBX_JSON_BOOL)
		return bad("items.sock", "expected true or false");
	it->sock = sock && sock->b;
	if (it->sock && (kind == SBX_NOTE_TEMP || it->dir))
		return bad("items.sock", "only a placeholder that is no directory is a socket");
	if ((r = take_u64(v, "dev", false, &it->dev)) < 0 || (r = take_u64(v, "ino", false, &it->ino)) < 0 ||
	    (r = take_u64(v, "gen", false, &it->gen)) < 0 || (r = take_u64(v, "born", false, &it->born)) < 0)
		return r;
	it->has_gen = sbx_json_get(v, "gen") != NULL;
	it->has_born = sbx_json_get(v, "born") != NULL;
	/* A socket has no generation to ask for: its birth time alone tells a reused number. */
	if (it->sock && it->ino && !it->has_born)
		return bad("items.born", "a socket's inode is noted with its birth time");
	it->at = strdup(at->str);
	it->tmp = strdup(tmp->str);
	it->name = name ? strdup(name->str) : NULL;
	if (!it->at || !it->tmp || (name && !it->name))
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	return 0;
}

static int take_note(const sbx_json *root, struct sbx_journal_note *out)
{
	static const char *const keys[] = { "kind", "owner", "detached", "items", NULL };
	const sbx_json *kind, *detached, *items;
	int r;

	if (root->type != SBX_JSON_OBJECT)
		return bad("(top)", "expected an object");
	if ((r = only_keys(root, "(top)", keys)) < 0)
		return r;
	kind = sbx_json_get(root, "kind");
	if (!is_string(kind) || (strcmp(kind->str, "temp") && strcmp(kind->str, "placeholders")))
		return bad("kind", "expected \"temp\" or \"placeholders\"");
	out->kind = !strcmp(kind->str, "temp") ? SBX_NOTE_TEMP : SBX_NOTE_PLACEHOLDERS;
	if ((r = take_owner(sbx_json_get(root, "owner"), &out->owner)) < 0)
		return r;
	detached = sbx_json_get(root, "detached");
	if (detached && (detached->type != SBX_JSON_BOOL || out->kind == SBX_NOTE_TEMP))
		return bad("detached", "expected true or false, for placeholders");
	out->detached = detached && detached->b;
	items = sbx_json_get(root, "items");
	if (!items || items->type != SBX_JSON_ARRAY || items->n == 0 || items->n > ITEMS_MAX ||
	    (out->kind == SBX_NOTE_TEMP && items->n != 1))
		return bad("items", "expected a non-empty array (one item for a temporary file)");
	if (!(out->items = calloc(items->n, sizeof *out->items)))
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	for (size_t i = 0; i < items->n; i++) {
		out->n_items = i + 1;
		if ((r = take_item(items->items[i], out->kind, &out->items[i])) < 0)
			return r;
	}
	return 0;
}

int sbx_journal_parse(const char *text, size_t len, struct sbx_journal_note *out)
{
	sbx_json *root = NULL;
	char err[160];
	int r;

	memset(out, 0, sizeof *out);
	if (len > SBX_JOURNAL_RECORD_MAX)
		return bad("(top)", "too large");
	if (sbx_json_parse(text, len, &root, err, sizeof err) < 0)
		return sbx_fail(-SBX_EINVAL, "journal note: %s", err);
	r = take_note(root, out);
	sbx_json_free(root);
	if (r < 0)
		sbx_journal_note_free(out);
	return r;
}

void sbx_journal_note_free(struct sbx_journal_note *n)
{
	for (size_t i = 0; i < n->n_items; i++) {
		free(n->items[i].at);
		free(n->items[i].name);
		free(n->items[i].tmp);
	}
	free(n->items);
	memset(n, 0, sizeof *n);
}

/* ---- taking things away ----------------------------------------------------------------- */

/* The same inode as noted: its number, and its birth time and generation where they were
 * noted (an inode number freed and given to a new file is not ours). A socket cannot be
 * opened for its generation: its birth time must match. */
static bool same_inode(int dirfd, const char *name, const struct stat *st,
                       const struct sbx_journal_item *it)
{
	uint64_t gen, born;

	if (!it->ino || (uint64_t)st->st_ino != it->ino || (uint64_t)st->st_dev != it->dev)
		return false;
	if (it->has_born && (!sbx_journal_birth(dirfd, name, &born) || born != it->born))
		return false;
	if (S_ISSOCK(st->st_mode))
		return it->has_born;
	if (!it->has_gen)
		return true;
	_cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	                                             O_NOCTTY | O_CLOEXEC);
	return fd >= 0 && sbx_journal_generation(fd, &gen) && gen == it->gen;
}

/* Removes name in dirfd if it is still what the item noted: the same inode, or, for the
 * temporary name of an item noted before its inode was known, an empty entry (the name was
 * random and noted before it existed). A placeholder must still be empty, and of the noted
 * type: a directory only where a directory was noted, a socket only where a socket was
 * (never a user's socket of the same name, which is another inode). */
static bool remove_entry(int dirfd, const char *name, const struct sbx_journal_item *it,
                         bool placeholder, bool is_tmp)
{
	struct stat st;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return false;
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode) && !S_ISSOCK(st.st_mode))
		return false;
	if (S_ISSOCK(st.st_mode) && !(placeholder && it->sock))
		return false;
	bool same = same_inode(dirfd, name, &st, it);
	bool empty = S_ISDIR(st.st_mode) || S_ISSOCK(st.st_mode) || st.st_size == 0;
	if (!same && !(is_tmp && !it->ino && empty))
		return false;
	if (S_ISDIR(st.st_mode))          /* rmdir refuses a directory that is not empty */
		return placeholder && it->dir && unlinkat(dirfd, name, AT_REMOVEDIR) == 0;
	if (S_ISSOCK(st.st_mode))
		return unlinkat(dirfd, name, 0) == 0;
	if (!S_ISREG(st.st_mode) || (placeholder && st.st_size != 0))
		return false;
	return unlinkat(dirfd, name, 0) == 0;
}

/* Whether the item's own name holds its noted inode and no other name does: then its
 * temporary name is gone (renamed, or unlinked once linked) and is not looked up. A lookup of
 * a name that is not there leaves a negative dentry in the directory for as long as the
 * kernel keeps it, one per session with random names; an inotify watch with child events on
 * the directory (the git guard's, at every open) walks them all. */
static bool named_alone(int dirfd, const struct sbx_journal_item *it)
{
	struct stat st;

	return it->name && it->ino && fstatat(dirfd, it->name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	       (S_ISDIR(st.st_mode) || st.st_nlink == 1) && same_inode(dirfd, it->name, &st, it);
}

static int remove_items(int root_fd, const struct sbx_journal_note *n)
{
	int removed = 0;

	for (size_t i = 0; i < n->n_items; i++) {
		const struct sbx_journal_item *it = &n->items[i];
		bool placeholder = n->kind == SBX_NOTE_PLACEHOLDERS;
		_cleanup_close_ int dirfd = it->at[0] ? sbx_path_open(root_fd, it->at, O_PATH |
		                                                      O_DIRECTORY, 0)
		                                      : fcntl(root_fd, F_DUPFD_CLOEXEC, 3);

		if (dirfd < 0)
			continue;         /* the directory went: so did what was in it */
		if (!named_alone(dirfd, it))
			removed += remove_entry(dirfd, it->tmp, it, placeholder, true);
		if (it->name)
			removed += remove_entry(dirfd, it->name, it, placeholder, false);
	}
	sbx_error_clear();                /* a missing directory is no failure of the caller's */
	return removed;
}

/* Reads a note: 0, -ENOENT when it is gone, else -EINVAL for one that is not a note. */
static int read_note(int dir_fd, const char *name, struct sbx_journal_note *out)
{
	_cleanup_close_ int fd = openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	                                              O_CLOEXEC);
	_cleanup_free_ char *text = NULL;
	size_t len;

	memset(out, 0, sizeof *out);
	if (fd < 0)
		return errno == ENOENT ? -ENOENT : -EINVAL;
	if (sbx_fs_read_fd(fd, SBX_JOURNAL_RECORD_MAX, &text, &len) < 0 ||
	    sbx_journal_parse(text, len, out) < 0) {
		sbx_error_clear();
		return -EINVAL;
	}
	return 0;
}

void sbx_journal_undo(int root_fd, const char *journal_rel, const char *record)
{
	_cleanup_close_ int dir_fd = -1;
	struct sbx_journal_note n;

	if (!record || sbx_journal_open_dir(root_fd, journal_rel, false, &dir_fd) < 0)
		return;
	if (read_note(dir_fd, record, &n) == 0) {
		remove_items(root_fd, &n);
		sbx_journal_note_free(&n);
	}
	unlinkat(dir_fd, record, 0);
}

/* ---- sweeping --------------------------------------------------------------------------- */

static bool older_than(int dir_fd, const char *name, time_t age)
{
	struct stat st;

	return fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	       time(NULL) - st.st_mtime > age;
}

static bool due(const struct sbx_journal_note *n, unsigned what)
{
	if (n->kind == SBX_NOTE_PLACEHOLDERS && n->detached)
		return what & SBX_SWEEP_DETACHED;
	return (what & SBX_SWEEP_ENDED) && !sbx_journal_owner_alive(&n->owner);
}

static int sweep_one(int root_fd, int dir_fd, const char *name, unsigned what)
{
	struct sbx_journal_note n;
	int removed = 0, r;

	if (name[0] == '.') {             /* a note being replaced where files cannot be unnamed */
		if (older_than(dir_fd, name, JUNK_AGE_S))
			unlinkat(dir_fd, name, 0);
		return 0;
	}
	if ((r = read_note(dir_fd, name, &n)) < 0) {
		if (r == -EINVAL && older_than(dir_fd, name, JUNK_AGE_S))
			unlinkat(dir_fd, name, 0);
		return 0;
	}
	if (due(&n, what)) {
		removed = remove_items(root_fd, &n);
		unlinkat(dir_fd, name, 0);
	}
	sbx_journal_note_free(&n);
	return removed;
}

int sbx_journal_sweep(int root_fd, const char *journal_rel, unsigned what)
{
	int dir_fd = -1, removed = 0;
	DIR *d;
	struct dirent *e;

	if (sbx_journal_open_dir(root_fd, journal_rel, false, &dir_fd) < 0)
		return 0;
	_cleanup_close_ int listing = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (listing < 0 || !(d = fdopendir(listing))) {
		close(dir_fd);
		return 0;
	}
	listing = -1;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			removed += sweep_one(root_fd, dir_fd, e->d_name, what);
	closedir(d);
	close(dir_fd);
	return removed;
}
