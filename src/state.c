/* Where a workspace keeps the library's state (internal.h: sbx_state_*), and the one way
 * the core reaches it.
 *
 * By default the state folder is outside the workdir, so that nothing of the library's (the
 * audit log, the tool sessions, MCP's declarations and sockets, the skills record) nor of
 * the tools' home lands in the user's tree: $XDG_STATE_HOME/agentsbx/workspaces/<key> (or
 * ~/.local/state/agentsbx/..., for root too), or the path the config's "state_dir" names (the
 * workspace manager names one below its base_dir). It is this user's, 0700, opened without
 * following a link at its last component; its parents are the user's own configuration and
 * are made as needed. It also holds the workspace's private HOME (home/), which the sandbox
 * backends bind at /home/<user> and local uses as is. The sandbox sees nothing else of it.
 *
 * The key is the workdir's base name (readable) and a hash of its canonical path (collision-
 * free): the same workdir finds its state again at every open. It does not survive a rename
 * of the workdir (a renamed folder starts afresh, its old state stays where it was) — on
 * purpose: a device and inode key would survive a rename but not a copy or a restore from a
 * backup, and a reused inode number would hand one folder's state, HOME and trusted skills to
 * another.
 *
 * A workdir that still has the old <workdir>/.agentsbx from before 1.7 is migrated at the
 * first open that makes its new state folder: its entries are moved over as they are (links
 * included: they are refused later, at use, with an error naming them, as before). Its
 * journal and a detached sandbox's run folder stay: those are the sandbox's (below). An open
 * that fails half-way leaves the new folder marked (.migrating), and the next one finishes
 * the job; a workdir the library may not write has its entries copied, not moved. After
 * that the in-tree folder is not read again.
 *
 * "state_dir": "workdir" keeps the old layout: the state folder is <workdir>/.agentsbx,
 * opened at open from the workdir's fd without following links (util/statedir.h): a link
 * planted there (to a folder outside, whose subfolders the host would otherwise make) fails
 * the open with an error naming it, on every backend. The fd is kept; each use checks that
 * the folder still is that one (a command of a backend without protection, local, may have
 * moved it away) and opens it afresh, by the same rules, when it is not. A workdir the
 * library cannot write then opens only with "mode": "read-only" and keeps its state in a
 * private temporary folder instead, removed at close, as a temporary workdir always does.
 *
 * What stays in the workdir in every layout: <workdir>/.agentsbx/journal (util/journal.h),
 * the notes of what the library makes there (protected paths' placeholders, temporary names
 * of atomic writes), which must live beside what they list, and a detached sandbox's run
 * folder. Both are empty once the workspace is closed, and the folder is then taken away
 * (sbx_state_tidy_workdir). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "internal.h"
#include "util/cleanup.h"
#include "util/digest.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/path.h"
#include "util/statedir.h"
#include "proto/mcp_proto.h"

/* What a temporary state folder takes over from an unwritable workdir's own one: the
 * record of the skills the library added (skills.c), so they stay trusted. */
#define SEEDED_FILE "skills.json"
#define SEEDED_MAX ((size_t)1 << 20)

#define DEFAULT_SUBDIR "agentsbx/workspaces"
#define HOME_SUBDIR "home"
#define KEY_NAME_MAX 48            /* of the workdir's base name in the key */
#define KEY_HASH_HEX 16            /* 64 bits of SHA-256: no collision among one user's folders */
#define STATE_MODE 0700
/* The in-tree entries that are the sandbox's, not the core's: never migrated. */
#define JOURNAL_NAME "journal"
#define RUN_NAME "run"
/* In a new state folder until the migration of the old one is over (migrate_legacy). */
#define MIGRATING_NAME ".migrating"

static bool same_inode(int fd, int dir_fd, const char *name)
{
	struct stat a, b;

	return fstat(fd, &a) == 0 && fstatat(dir_fd, name, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* Errors that mean "the library may not write here", as opposed to a hostile entry. */
static bool not_writable(int r)
{
	return r == -SBX_EACCES || r == -SBX_EPERM;
}

static int workdir_state(sbx_workspace *ws, int *fd)
{
	int r = sbx_statedir_open(ws->root_fd, NULL, 0755, fd);
	char msg[512];

	if (r == 0 || not_writable(r))
		return r;
	snprintf(msg, sizeof msg, "%s", sbx_last_error());
	return sbx_fail(r, "state folder of %s: %s", ws->workdir, msg);
}

/* Copies the skills record of the workdir's own state folder, if it has a readable one. */
static void seed_from_workdir(sbx_workspace *ws)
{
	_cleanup_close_ int from = -1;
	_cleanup_free_ char *data = NULL;
	size_t len;

	if (sbx_statedir_open(ws->root_fd, NULL, 0, &from) < 0 ||
	    sbx_statedir_read(from, SEEDED_FILE, SEEDED_MAX, &data, &len) < 0) {
		sbx_error_clear();
		return;
	}
	(void)sbx_fs_write_atomic(ws->state_fd, SEEDED_FILE, data, len, 0600, 0);
	sbx_error_clear();
}

static int make_temporary(sbx_workspace *ws)
{
	_cleanup_free_ char *prefix = NULL;
	int r;

	if (asprintf(&prefix, "agentsbx-state-%s", ws->id) < 0)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	if ((r = sbx_fs_make_temp_dir(prefix, &ws->state_path)) < 0)
		return r;
	ws->state_temporary = true;
	ws->state_fd = open(ws->state_path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (ws->state_fd < 0)
		return sbx_fail(sbx_errno_code(errno), "open %s: %s", ws->state_path, strerror(errno));
	seed_from_workdir(ws);
	return 0;
}

/* An existing state folder the caller may not write is no better than none. */
static bool writable(int fd)
{
	return faccessat(fd, ".", W_OK, AT_EACCESS) == 0;
}

/* The old layout: <workdir>/.agentsbx, or a temporary folder for an unwritable workdir. */
static int setup_in_workdir(sbx_workspace *ws)
{
	int fd = -1, r = workdir_state(ws, &fd);

	if (r == 0 && !writable(fd)) {
		r = sbx_fail(-SBX_EACCES, "%s/%s is not writable", ws->workdir, SBX_STATE_DIR_NAME);
		close(SBX_TAKE_FD(fd));
	}
	if (r == 0) {
		ws->state_fd = fd;
		if ((ws->state_root_fd = fcntl(ws->root_fd, F_DUPFD_CLOEXEC, 3)) < 0)
			return sbx_fail(sbx_errno_code(errno), "dup: %s", strerror(errno));
		if (asprintf(&ws->state_path, "%s/%s", ws->workdir, SBX_STATE_DIR_NAME) < 0 ||
		    !(ws->state_leaf = strdup(SBX_STATE_DIR_NAME)))
			return sbx_fail(-SBX_ENOMEM, "out of memory");
		return 0;
	}
	if (!not_writable(r))
		return r;
	sbx_error_clear();
	return make_temporary(ws);
}

/* $XDG_STATE_HOME (absolute), else $HOME/.local/state, else the password database's home. */
static int state_home(char **out)
{
	const char *xdg = secure_getenv("XDG_STATE_HOME"), *home = secure_getenv("HOME");
	struct passwd pw, *found = NULL;
	char buf[4096];

	if (xdg && xdg[0] == '/')
		return asprintf(out, "%s/" DEFAULT_SUBDIR, xdg) < 0 ? -SBX_ENOMEM : 0;
	if (!(home && home[0] == '/') &&
	    getpwuid_r(geteuid(), &pw, buf, sizeof buf, &found) == 0 && found && found->pw_dir)
		home = found->pw_dir;
	if (!home || home[0] != '/')
		return sbx_fail(-SBX_ECONFIG, "config: key 'state_dir': required when neither "
		                "XDG_STATE_HOME nor a home directory is known");
	return asprintf(out, "%s/.local/state/" DEFAULT_SUBDIR, home) < 0 ? -SBX_ENOMEM : 0;
}

/* "<base name>-<hash>" of the canonical workdir (see the top of the file for why). */
static int workdir_key(const char *workdir, char *out, size_t len)
{
	const char *base = strrchr(workdir, '/');
	char hex[65], name[KEY_NAME_MAX + 1];
	size_t n = 0;
	int r;

	base = base && base[1] ? base + 1 : "root";
	for (; base[n] && n < KEY_NAME_MAX; n++) {
		char c = base[n];
		bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		             (c >= '0' && c <= '9') || c == '-' || c == '_' || (c == '.' && n > 0);
		name[n] = plain ? c : '_';
	}
	name[n] = '\0';
	if ((r = sbx_sha256_hex(workdir, strlen(workdir), hex)) < 0)
		return r;
	snprintf(out, len, "%s-%.*s", name, KEY_HASH_HEX, hex);
	return 0;
}

static int default_state_path(const sbx_workspace *ws, char **out)
{
	_cleanup_free_ char *base = NULL;
	char key[KEY_NAME_MAX + KEY_HASH_HEX + 2];
	int r;

	if ((r = state_home(&base)) < 0)
		return r == -SBX_ENOMEM ? sbx_fail(r, "out of memory") : r;
	if ((r = workdir_key(ws->workdir, key, sizeof key)) < 0)
		return r;
	return asprintf(out, "%s/%s", base, key) < 0 ? sbx_fail(-SBX_ENOMEM, "out of memory") : 0;
}

/* mkdir -p of path's parent: a trusted host path (the user's state home or the folder the
 * caller named), new folders 0700. */
static int make_parents(const char *path)
{
	_cleanup_free_ char *copy = strdup(path);
	char *last = copy ? strrchr(copy, '/') : NULL;

	if (!last)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	*last = '\0';
	for (char *p = copy + 1; *copy; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char saved = *p;
		*p = '\0';
		if (mkdir(copy, STATE_MODE) < 0 && errno != EEXIST)
			return sbx_fail(sbx_errno_code(errno), "config: key 'state_dir': mkdir %s: %s",
			                copy, strerror(errno));
		*p = saved;
		if (saved == '\0')
			break;
	}
	return 0;
}

/* The folder itself: made 0700 when missing (*made), never through a link at its name, ours
 * alone (a folder of another user's is refused; one of ours open to others is closed). */
static int open_private_leaf(sbx_workspace *ws, const char *path, bool *made)
{
	_cleanup_free_ char *parent = strdup(path);
	char *slash = parent ? strrchr(parent, '/') : NULL;
	struct stat st;
	int r;

	if (!slash)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	*slash = '\0';
	if (!(ws->state_leaf = strdup(slash + 1)))
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	ws->state_root_fd = open(*parent ? parent : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (ws->state_root_fd < 0)
		return sbx_fail(sbx_errno_code(errno), "config: key 'state_dir': open %s: %s",
		                *parent ? parent : "/", strerror(errno));
	*made = mkdirat(ws->state_root_fd, ws->state_leaf, STATE_MODE) == 0;
	r = sbx_statedir_open_below(ws->state_root_fd, parent, ws->state_leaf, 0, &ws->state_fd);
	if (r < 0) {
		char msg[512];
		snprintf(msg, sizeof msg, "%s", sbx_last_error());
		return sbx_fail(r, "config: key 'state_dir': %s", msg);
	}
	if (fstat(ws->state_fd, &st) < 0)
		return sbx_fail(sbx_errno_code(errno), "stat %s: %s", path, strerror(errno));
	if (st.st_uid != geteuid())
		return sbx_fail(-SBX_EACCES, "config: key 'state_dir': %s belongs to uid %u, not to "
		                "this user (uid %u): refused", path, (unsigned)st.st_uid,
		                (unsigned)geteuid());
	if ((st.st_mode & 077) && fchmod(ws->state_fd, STATE_MODE) < 0)
		return sbx_fail(sbx_errno_code(errno), "chmod %s: %s", path, strerror(errno));
	if (!writable(ws->state_fd))
		return sbx_fail(-SBX_EACCES, "config: key 'state_dir': %s is not writable", path);
	return 0;
}

/* A file streamed, not read whole: an audit log may be large. A copy cut short is redone
 * by the next open (MIGRATING_NAME), over what this one left. */
static int copy_file(int from, int to, const char *name, mode_t mode)
{
	_cleanup_close_ int src = sbx_statedir_open_file(from, name, O_RDONLY, 0);
	_cleanup_close_ int dst = -1;
	char chunk[65536];
	ssize_t n;
	int r;

	if (src < 0)
		return src;
	if ((dst = sbx_statedir_open_file(to, name, O_WRONLY | O_CREAT | O_TRUNC, mode)) < 0)
		return dst;
	while ((n = read(src, chunk, sizeof chunk)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if ((r = sbx_write_all(dst, chunk, (size_t)n)) < 0)
			return r;
	}
	return 0;
}

/* Copies one entry of a legacy folder across file systems: a folder with its tree, a file,
 * a link as a link (never followed). */
static int copy_entry(int from, int to, const char *name)
{
	_cleanup_close_ int src = -1, dst = -1;
	char target[PATH_MAX];
	struct stat st;
	ssize_t n;

	if (fstatat(from, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	if (S_ISLNK(st.st_mode)) {
		if ((n = readlinkat(from, name, target, sizeof target - 1)) < 0)
			return -errno;
		target[n] = '\0';
		return symlinkat(target, to, name) < 0 ? -errno : 0;
	}
	if (S_ISREG(st.st_mode))
		return copy_file(from, to, name, st.st_mode & 0700);
	if (!S_ISDIR(st.st_mode))
		return 0;             /* FIFOs and the like: nothing of the library's */
	if (mkdirat(to, name, STATE_MODE) < 0 && errno != EEXIST)
		return -errno;
	if ((src = openat(from, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
	    (dst = openat(to, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return -errno;
	return sbx_fs_copy_tree(src, dst, NULL);
}

static int migration_pending(sbx_workspace *ws)
{
	_cleanup_close_ int fd = sbx_statedir_open_file(ws->state_fd, MIGRATING_NAME,
	                                                O_WRONLY | O_CREAT, 0600);

	return fd < 0 ? fd : 0;
}

static bool migration_is_pending(const sbx_workspace *ws)
{
	return faccessat(ws->state_fd, MIGRATING_NAME, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

static int migration_done(sbx_workspace *ws)
{
	if (unlinkat(ws->state_fd, MIGRATING_NAME, 0) < 0 && errno != ENOENT)
		return sbx_fail(sbx_errno_code(errno), "remove %s/%s: %s", ws->state_path,
		                MIGRATING_NAME, strerror(errno));
	return 0;
}

static bool migrated_entry(const char *name)
{
	return strcmp(name, ".") && strcmp(name, "..") && strcmp(name, JOURNAL_NAME) &&
	       strcmp(name, RUN_NAME) && strcmp(name, MIGRATING_NAME);
}

/* One entry: moved; copied across file systems; copied and left where it is when the library
 * may not write the workdir (a read-only mount opened with "mode": "read-only"), where a
 * failed move stranded the state (the next open, finding the folder made, left it behind). */
static int migrate_entry(sbx_workspace *ws, int from, const char *name)
{
	bool keep_source = !ws->workdir_writable;
	int e, r;

	if (renameat(from, name, ws->state_fd, name) == 0)
		return 0;
	e = errno;
	if (e != EXDEV && !(keep_source && (e == EACCES || e == EPERM || e == EROFS)))
		return -e;
	if ((r = copy_entry(from, ws->state_fd, name)) < 0) {
		(void)sbx_fs_remove_tree(ws->state_fd, name);   /* the next open copies it afresh */
		return r;
	}
	return keep_source ? 0 : sbx_fs_remove_tree(from, name);
}

/* Moves what a workdir's old .agentsbx holds into the new state folder, once: the folder
 * keeps MIGRATING_NAME from its making until the last entry is over, so that an open that
 * failed half-way is finished by the next one. */
static int migrate_legacy(sbx_workspace *ws)
{
	_cleanup_close_ int from = -1;
	struct dirent *e;
	DIR *d;
	int r = sbx_statedir_open(ws->root_fd, NULL, 0, &from);

	if (r == -SBX_ENOENT) {
		sbx_error_clear();
		return migration_done(ws);
	}
	if (r < 0) {
		char msg[512];
		snprintf(msg, sizeof msg, "%s", sbx_last_error());
		return sbx_fail(r, "state folder of %s: %s", ws->workdir, msg);
	}
	if (!(d = fdopendir(fcntl(from, F_DUPFD_CLOEXEC, 3))))
		return sbx_fail(sbx_errno_code(errno), "list %s/%s: %s", ws->workdir,
		                SBX_STATE_DIR_NAME, strerror(errno));
	while (r == 0 && (errno = 0, e = readdir(d))) {
		if (!migrated_entry(e->d_name))
			continue;
		if ((r = migrate_entry(ws, from, e->d_name)) < 0)
			r = sbx_fail(sbx_errno_code(-r), "migrate %s/%s/%s to %s: %s", ws->workdir,
			             SBX_STATE_DIR_NAME, e->d_name, ws->state_path, strerror(-r));
	}
	closedir(d);
	return r < 0 ? r : migration_done(ws);
}

static bool has_line(const char *text, const char *line)
{
	size_t n = strlen(line);

	for (const char *p = text; (p = strstr(p, line)); p += n)
		if ((p == text || p[-1] == '\n') && (p[n] == '\n' || p[n] == '\0'))
			return true;
	return false;
}

/* git inside must not show <workdir>/.agentsbx (the journal's notes while a sandbox runs):
 * the private HOME's global excludes file ($HOME/.config/git/ignore, git's default
 * core.excludesFile) lists it, and only it; the user's repository is not touched. A file
 * the agent wrote there keeps its lines: ours is appended once. Best effort. */
static void exclude_journal_from_git(int home_fd)
{
	static const char line[] = "/" SBX_STATE_DIR_NAME "/";
	static const char block[] = "# agentsbx: the library's journal in the workspace while it "
	                            "is open (removed at close)\n/" SBX_STATE_DIR_NAME "/\n";
	_cleanup_close_ int dir = -1, fd = -1;
	_cleanup_free_ char *text = NULL;
	size_t len = 0;

	if (sbx_statedir_open_below(home_fd, "home", ".config/git", 0700, &dir) < 0)
		goto out;
	if (sbx_statedir_read(dir, "ignore", (size_t)1 << 20, &text, &len) == 0 &&
	    has_line(text, line))
		goto out;
	if ((fd = sbx_statedir_open_file(dir, "ignore", O_WRONLY | O_APPEND | O_CREAT, 0644)) < 0)
		goto out;
	if (len && text[len - 1] != '\n')
		(void)!write(fd, "\n", 1);
	(void)!write(fd, block, sizeof block - 1);
out:
	sbx_error_clear();
}

/* The private HOME: <state>/home, made 0700, never through a link. A temporary workdir has
 * no journal (workspace.c, open_journal) to keep out of git, and its HOME is new and goes
 * at close: the excludes file would be 2 folders and a file made and removed for nothing. */
static int make_home(sbx_workspace *ws)
{
	_cleanup_close_ int fd = -1;
	int r = sbx_statedir_open_below(ws->state_fd, ws->state_path, HOME_SUBDIR, STATE_MODE, &fd);

	if (r < 0)
		return r;
	if (!ws->workdir_temporary)
		exclude_journal_from_git(fd);
	if (asprintf(&ws->home_path, "%s/" HOME_SUBDIR, ws->state_path) < 0)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	return 0;
}

/* ---- a state folder the sandbox would see ------------------------------------------------
 * A sandbox sees its workdir whole. A state folder below it (`--workdir ~` and the default
 * ~/.local/state/agentsbx/...) would be writable inside: a command rewrote skills.json,
 * mcp.json and the audit log, other workspaces' state, and read the library's keys, with
 * which it forged trust records that a local workspace acts on. Hiding folders inside is the
 * backends' business and not something every one of them can do; until they do, such an
 * open is refused, naming the key to change. local is not refused: its commands run on the
 * host as the user, who may write there anyway. */

/* path with its longest existing prefix resolved (links, "..") and the rest as it is: where
 * a folder the open is about to make will be. NULL when out of memory. */
static char *resolve_existing_part(const char *path)
{
	_cleanup_free_ char *head = strdup(path);
	char *out = NULL, *real, *cut;

	while (head) {
		if ((real = realpath(*head ? head : "/", NULL))) {
			if (asprintf(&out, "%s%s", strcmp(real, "/") ? real : "", path + strlen(head)) < 0)
				out = NULL;
			free(real);
			return out;
		}
		if (!(cut = strrchr(head, '/')))
			break;
		*cut = '\0';
	}
	return head ? strdup(path) : NULL;
}

/* Is path dir itself or below it (both canonical)? */
static bool path_within(const char *path, const char *dir)
{
	return !strcmp(dir, "/") || !strcmp(path, dir) || sbx_path_below(path, dir);
}

/* The library's folders of this user that no sandbox may see: its key folder (util/hostkey.c
 * finds it from XDG_STATE_HOME or the password database) and the default state home (from
 * XDG_STATE_HOME or $HOME). NULL-terminated, caller frees. */
static int library_folders(char *out[3])
{
	const char *xdg = secure_getenv("XDG_STATE_HOME"), *home = secure_getenv("HOME");
	struct passwd pw, *found = NULL;
	char buf[4096];
	int n = 0;

	out[0] = out[1] = out[2] = NULL;
	if (xdg && xdg[0] == '/')
		return asprintf(&out[0], "%s/agentsbx", xdg) < 0 ? -SBX_ENOMEM : 0;
	if (home && home[0] == '/' && asprintf(&out[n++], "%s/.local/state/agentsbx", home) < 0) {
		out[--n] = NULL;
		return -SBX_ENOMEM;
	}
	if (getpwuid_r(geteuid(), &pw, buf, sizeof buf, &found) == 0 && found && found->pw_dir &&
	    found->pw_dir[0] == '/' &&
	    asprintf(&out[n], "%s/.local/state/agentsbx", found->pw_dir) < 0) {
		out[n] = NULL;
		return -SBX_ENOMEM;
	}
	return 0;
}

static int refuse_library_folder_inside(const sbx_workspace *ws)
{
	char *folders[3];
	int r = library_folders(folders);

	for (int i = 0; r == 0 && folders[i]; i++) {
		_cleanup_free_ char *real = resolve_existing_part(folders[i]);

		if (!real)
			r = -SBX_ENOMEM;
		else if (path_within(real, ws->workdir))
			r = sbx_fail(-SBX_ECONFIG, "config: key 'workdir': %s holds the library's own "
			             "folder %s (its keys, every workspace's state), which a command of "
			             "this sandbox could read and rewrite; open a folder below it, or set "
			             "XDG_STATE_HOME to a folder outside the workdir", ws->workdir, real);
	}
	for (int i = 0; folders[i]; i++)
		free(folders[i]);
	return r == -SBX_ENOMEM ? sbx_fail(r, "out of memory") : r;
}

static int refuse_state_seen_inside(const sbx_workspace *ws)
{
	_cleanup_free_ char *state = NULL;

	if (!(ws->caps & SBX_BACKEND_CAP_ISOLATED))
		return 0;
	if (!(state = resolve_existing_part(ws->state_path)))
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	if (path_within(state, ws->workdir))
		return sbx_fail(-SBX_ECONFIG, "config: key 'state_dir': the state folder %s is inside "
		                "the workdir %s, where a command of this sandbox could rewrite it (the "
		                "skills record, MCP's declarations, the audit log); name a \"state_dir\" "
		                "outside the workdir", state, ws->workdir);
	if (path_within(ws->workdir, state))
		return sbx_fail(-SBX_ECONFIG, "config: key 'workdir': %s is inside the state folder %s, "
		                "which a command of this sandbox could then rewrite; name a "
		                "\"state_dir\" outside the workdir", ws->workdir, state);
	return refuse_library_folder_inside(ws);
}

static int setup_outside(sbx_workspace *ws)
{
	bool made = false;
	int r;

	if (ws->cfg->state_dir)
		ws->state_path = strdup(ws->cfg->state_dir);
	else if ((r = default_state_path(ws, &ws->state_path)) < 0)
		return r;
	if (!ws->state_path)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	if ((r = refuse_state_seen_inside(ws)) < 0)
		return r;
	if ((r = make_parents(ws->state_path)) < 0 || (r = open_private_leaf(ws, ws->state_path,
	                                                                      &made)) < 0)
		return r;
	if (made && (r = migration_pending(ws)) < 0)
		return sbx_fail(r, "%s/%s: %s", ws->state_path, MIGRATING_NAME, strerror(-r));
	return made || migration_is_pending(ws) ? migrate_legacy(ws) : 0;
}

/* A workdir the library may not write opens read-only, or not at all. */
static int check_workdir_writable(sbx_workspace *ws)
{
	int e;

	ws->workdir_writable = ws->workdir_temporary || writable(ws->root_fd);
	e = errno;
	if (ws->workdir_writable || ws->cfg->read_only)
		return 0;
	return sbx_fail(sbx_errno_code(e), "config: key 'workdir': %s is not writable for the "
	                "library (%s); open it with \"mode\": \"read-only\", which then leaves "
	                "it untouched", ws->workdir, strerror(e));
}

int sbx_state_setup(sbx_workspace *ws)
{
	bool in_workdir = ws->cfg->state_dir && !strcmp(ws->cfg->state_dir, "workdir");
	int r;

	if ((r = check_workdir_writable(ws)) < 0)
		return r;
	if (in_workdir && !ws->workdir_temporary) {
		if ((r = setup_in_workdir(ws)) < 0)
			return r;
		ws->state_outside = ws->state_temporary;
		return 0;
	}
	ws->state_outside = true;
	if ((r = ws->workdir_temporary ? make_temporary(ws) : setup_outside(ws)) < 0)
		return r;
	return make_home(ws);
}

void sbx_state_teardown(sbx_workspace *ws)
{
	if (ws->state_fd >= 0)
		close(ws->state_fd);
	if (ws->state_root_fd >= 0)
		close(ws->state_root_fd);
	if (ws->state_temporary && ws->state_path) {
		_cleanup_free_ char *parent = strdup(ws->state_path);
		char *slash = parent ? strrchr(parent, '/') : NULL;

		if (slash) {
			*slash = '\0';
			_cleanup_close_ int dir = open(*parent ? parent : "/",
			                               O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (dir >= 0)
				sbx_fs_remove_tree(dir, slash + 1);
		}
	}
	free(ws->state_path);
	free(ws->state_leaf);
	free(ws->home_path);
	ws->state_fd = ws->state_root_fd = -1;
	ws->state_path = ws->state_leaf = ws->home_path = NULL;
	ws->state_temporary = ws->state_outside = false;
}

/* A run folder of the MCP gateway in the workdir (mcp/host.c: a backend that sees only the
 * workdir) whose gateway no longer listens: its socket, its copy of the gateway, itself. */
static void remove_idle_run_folder(int dir)
{
	_cleanup_close_ int run = openat(dir, SBX_MCP_RUN_SUBDIR,
	                                 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	_cleanup_close_ int sock = -1, fd = -1;
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct stat st;

	if (run < 0)
		return;
	sock = openat(run, SBX_MCP_SOCKET_NAME, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (sock >= 0 && fstat(sock, &st) == 0 && S_ISSOCK(st.st_mode)) {
		snprintf(addr.sun_path, sizeof addr.sun_path, "/proc/self/fd/%d", sock);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 && connect(fd, (struct sockaddr *)&addr, sizeof addr) == 0)
			return;            /* a gateway still serves another handle */
		(void)unlinkat(run, SBX_MCP_SOCKET_NAME, 0);
	}
	if (fstatat(run, SBX_MCP_GATEWAY_NAME, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
		(void)unlinkat(run, SBX_MCP_GATEWAY_NAME, 0);
	(void)unlinkat(dir, SBX_MCP_RUN_SUBDIR, AT_REMOVEDIR);
}

void sbx_state_tidy_workdir(sbx_workspace *ws)
{
	_cleanup_close_ int dir = -1;

	/* Plain calls, no sbx_fail: this runs on the failure paths of open too, whose message
	 * must survive. */
	if (!ws->state_outside || !ws->workdir_writable || ws->workdir_temporary ||
	    ws->root_fd < 0 ||
	    (dir = openat(ws->root_fd, SBX_STATE_DIR_NAME,
	                  O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return;
	/* The MCP run folder a backend without binds got in the workdir (mcp/host.c), once its
	 * gateway is gone. Then each folder only when empty: a detached sandbox's run folder,
	 * a note of a sandbox that still runs, or anything left from before 1.7 keeps it. */
	remove_idle_run_folder(dir);
	(void)unlinkat(dir, JOURNAL_NAME, AT_REMOVEDIR);
	(void)unlinkat(ws->root_fd, SBX_STATE_DIR_NAME, AT_REMOVEDIR);
}

/* Under state_lock: the kept fd, replaced when <workdir>/.agentsbx is no longer that folder
 * (made again when it is gone, refused when a link or a file took its place). */
static int current_state_fd(sbx_workspace *ws)
{
	int fd, r;
	char msg[512];

	if (ws->state_root_fd < 0 || same_inode(ws->state_fd, ws->state_root_fd, ws->state_leaf))
		return 0;
	r = sbx_statedir_open_below(ws->state_root_fd, ws->state_outside ? "its parent"
	                                                                 : ws->workdir,
	                            ws->state_leaf, ws->state_outside ? STATE_MODE : 0755, &fd);
	if (r < 0) {
		snprintf(msg, sizeof msg, "%s", sbx_last_error());
		return sbx_fail(r, "state folder of %s: %s", ws->workdir, msg);
	}
	close(ws->state_fd);
	ws->state_fd = fd;
	return 0;
}

int sbx_state_dir(sbx_workspace *ws, const char *sub, mode_t mode, int *out)
{
	_cleanup_close_ int dir = -1;
	int r;

	*out = -1;
	if (ws->state_fd < 0)
		return sbx_fail(-SBX_ENOSYS, "backend '%s' keeps the state folder inside the "
		                "workspace, out of the host's reach", ws->ops->name);
	pthread_mutex_lock(&ws->state_lock);
	r = current_state_fd(ws);
	if (r == 0 && (dir = fcntl(ws->state_fd, F_DUPFD_CLOEXEC, 3)) < 0)
		r = sbx_fail(sbx_errno_code(errno), "dup: %s", strerror(errno));
	pthread_mutex_unlock(&ws->state_lock);
	if (r < 0)
		return r;
	if (!sub || !*sub) {
		*out = SBX_TAKE_FD(dir);
		return 0;
	}
	return sbx_statedir_open_below(dir, ws->state_outside ? ws->state_path
	                                                      : SBX_STATE_DIR_NAME, sub, mode, out);
}

const char *sbx_state_path(const sbx_workspace *ws)
{
	return ws->state_path;
}

const char *sbx_state_home(const sbx_workspace *ws)
{
	return ws->home_path;
}
