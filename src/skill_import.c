/* Adding a skill from a host folder or an archive.
 *
 * Both sources are read as a stream of checked entries (util/archive.h) twice. The first pass
 * writes nothing: it finds SKILL.md and the layout (flat, or one top-level folder for
 * archives) and checks what the checks of the archive layer cannot know, like links leaving
 * the top-level folder. The second pass writes. So a hostile archive is refused before a byte
 * of it lands in the workspace.
 *
 * Where the files are on the host, the skill is written into skills/.staging-<random> and
 * renamed into place: it appears whole or not at all, and a failure removes the staging
 * folder. Elsewhere the file API has no rename: the skill is written into its final folder
 * with SKILL.md last, so it counts as a skill only once complete, and is removed on failure.
 * Symlinks need the host: backends without host files refuse skills that hold them. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "skills.h"
#include "util/archive.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/path.h"

/* What one skill may hold. */
static const sbx_archive_limits skill_limits = {
	.max_entries = 10000,
	.max_file = (size_t)64 << 20,
	.max_total = (uint64_t)256 << 20,
};

#define DIR_SUFFIX_MAX 1000
/* macOS's Finder adds resource forks under __MACOSX/ beside the folder it compresses. */
#define MACOS_JUNK "__MACOSX"

struct source {
	int dirfd;              /* a host folder, or -1 for an archive */
	const void *data;
	size_t len;
	int format;
	bool nested_ok;         /* may the skill sit in one top-level folder? */
};

static int source_iterate(const struct source *src, sbx_archive_cb cb, void *userdata)
{
	if (src->dirfd >= 0)
		return sbx_archive_iterate_dir(src->dirfd, &skill_limits, cb, userdata);
	return sbx_archive_iterate(src->data, src->len, src->format, &skill_limits, cb, userdata);
}

static bool is_junk(const char *path)
{
	size_t n = strlen(MACOS_JUNK);

	return strncmp(path, MACOS_JUNK, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

static bool host_files(const sbx_workspace *ws)
{
	return ws->caps & SBX_BACKEND_CAP_HOST_FILES;
}

/* ---------------------------------------------------------------------------------------
 * Pass 1: the plan
 * ------------------------------------------------------------------------------------- */

struct md_copy {
	bool seen;
	int type;
	size_t size;
	char *text;             /* when a regular file within the size limit */
};

struct plan {
	bool host;
	char *top;              /* first component of the first entry */
	bool single_top;        /* so far every entry lies in top/ (or is top, a directory) */
	struct md_copy flat, nested;
	char *link_leaving_top; /* first symlink in top/ whose target leaves top/ */
	char *first_link;
	/* the outcome */
	const char *strip;      /* "" or "<top>/" (then in strip_buf) */
	char *strip_buf;
	struct md_copy *md_src;
	sbx_skill_md md;
};

static void plan_free(struct plan *p)
{
	sbx_skill_md_free(&p->md);
	free(p->strip_buf);
	free(p->top);
	free(p->flat.text);
	free(p->nested.text);
	free(p->link_leaving_top);
	free(p->first_link);
}

static int copy_md(const sbx_archive_entry *e, struct md_copy *c)
{
	c->seen = true;
	c->type = e->type;
	c->size = e->size;
	if (e->type != SBX_ENTRY_FILE || e->size > SBX_FRONTMATTER_MAX)
		return 0;
	if (!(c->text = malloc(e->size + 1)))
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	memcpy(c->text, e->data, e->size);
	c->text[e->size] = '\0';
	return 0;
}

static int keep_name(char **slot, const char *path)
{
	if (*slot)
		return 0;
	return (*slot = strdup(path)) ? 0 : sbx_fail(-SBX_ENOMEM, "out of memory");
}

static int plan_entry(const sbx_archive_entry *e, void *userdata)
{
	struct plan *p = userdata;
	size_t n = strcspn(e->path, "/");
	int r;

	if (is_junk(e->path))
		return 0;
	if (!p->top) {
		if (!(p->top = strndup(e->path, n)))
			return sbx_fail(-SBX_ENOMEM, "out of memory");
		p->single_top = true;
	}
	bool in_top = strlen(p->top) == n && strncmp(e->path, p->top, n) == 0;
	if (!in_top || (e->path[n] == '\0' && e->type != SBX_ENTRY_DIR))
		p->single_top = false;

	if (strcmp(e->path, "SKILL.md") == 0)
		r = copy_md(e, &p->flat);
	else if (in_top && strcmp(e->path + n, "/SKILL.md") == 0)
		r = copy_md(e, &p->nested);
	else
		r = 0;
	if (r < 0 || e->type != SBX_ENTRY_SYMLINK)
		return r;
	if ((r = keep_name(&p->first_link, e->path)) < 0)
		return r;
	if (in_top && e->path[n] && !sbx_archive_link_inside(e->path + n + 1, e->link))
		return keep_name(&p->link_leaving_top, e->path);
	return 0;
}

static int choose_layout(const struct source *src, struct plan *p)
{
	if (p->flat.seen) {
		p->strip = "";
		p->md_src = &p->flat;
		return 0;
	}
	if (src->nested_ok && p->single_top && p->nested.seen) {
		if (asprintf(&p->strip_buf, "%s/", p->top) < 0)
			return sbx_fail(-SBX_ENOMEM, "out of memory");
		p->strip = p->strip_buf;
		p->md_src = &p->nested;
		if (p->link_leaving_top)
			return sbx_fail(-SBX_EINVAL, "archive entry '%s': the symlink points "
			                "outside the skill's folder", p->link_leaving_top);
		return 0;
	}
	if (src->dirfd >= 0)
		return sbx_fail(-SBX_EINVAL, "the folder has no SKILL.md");
	return sbx_fail(-SBX_EINVAL, "the archive has no SKILL.md at its top or inside a single "
	                "top-level folder");
}

static int check_md(struct plan *p)
{
	const struct md_copy *c = p->md_src;

	if (c->type != SBX_ENTRY_FILE)
		return sbx_fail(-SBX_EINVAL, "SKILL.md must be a regular file, not a link");
	if (c->size > SBX_FRONTMATTER_MAX)
		return sbx_fail(-SBX_EFBIG, "SKILL.md: %zu bytes, more than the limit of %zu",
		                c->size, SBX_FRONTMATTER_MAX);
	return sbx_skill_md_parse(c->text, c->size, &p->md);
}

static int make_plan(sbx_workspace *ws, const struct source *src, struct plan *p)
{
	int r;

	p->host = host_files(ws);
	if ((r = source_iterate(src, plan_entry, p)) < 0 || (r = choose_layout(src, p)) < 0 ||
	    (r = check_md(p)) < 0)
		return r;
	if (!p->host && p->first_link)
		return sbx_fail(-SBX_ENOSYS, "'%s' is a symlink, and backend '%s' cannot make "
		                "symlinks", p->first_link, ws->ops->name);
	return 0;
}

/* ---------------------------------------------------------------------------------------
 * Pass 2: writing
 * ------------------------------------------------------------------------------------- */

struct link {
	char *rel, *target;
};

struct writer {
	sbx_workspace *ws;
	const struct plan *plan;
	const char *dest;       /* workspace-relative folder the skill is written into */
	struct link *links;     /* made after everything else: nothing is written through them */
	size_t nlinks;
};

static void writer_free(struct writer *w)
{
	for (size_t i = 0; i < w->nlinks; i++) {
		free(w->links[i].rel);
		free(w->links[i].target);
	}
	free(w->links);
}

static unsigned file_mode(unsigned stored)
{
	return stored & 0111 ? 0755 : 0644;
}

static int defer_link(struct writer *w, const char *rel, const char *target)
{
	struct link *nv = realloc(w->links, (w->nlinks + 1) * sizeof *nv);

	if (!nv)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	w->links = nv;
	nv[w->nlinks].rel = strdup(rel);
	nv[w->nlinks].target = strdup(target);
	if (!nv[w->nlinks].rel || !nv[w->nlinks].target) {
		free(nv[w->nlinks].rel);
		free(nv[w->nlinks].target);
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	}
	w->nlinks++;
	return 0;
}

/* A hard link becomes a copy: the file API knows no links, and a copy is as good here. */
static int copy_file(struct writer *w, const char *target_rel, const char *path)
{
	_cleanup_free_ char *src = NULL, *data = NULL;
	size_t len;
	int r;

	if (strcmp(target_rel, "SKILL.md") == 0)
		return sbx_file_write(w->ws, path, w->plan->md_src->text, w->plan->md_src->size,
		                      0644, SBX_WRITE_MKDIRS | SBX_WRITE_EXCL);
	if (asprintf(&src, "%s/%s", w->dest, target_rel) < 0)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	if ((r = sbx_file_read(w->ws, src, &data, &len)) < 0)
		return r;
	return sbx_file_write(w->ws, path, data, len, 0644, SBX_WRITE_MKDIRS | SBX_WRITE_EXCL);
}

static int write_entry(const sbx_archive_entry *e, void *userdata)
{
	struct writer *w = userdata;
	const char *strip = w->plan->strip;
	size_t sl = strlen(strip);
	_cleanup_free_ char *path = NULL;

	if (is_junk(e->path) || strncmp(e->path, strip, sl) != 0)
		return 0;   /* the top-level folder itself */
	const char *rel = e->path + sl;
	if (strcmp(rel, "SKILL.md") == 0)
		return 0;   /* written last, from what the plan checked */
	if (asprintf(&path, "%s/%s", w->dest, rel) < 0)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	switch (e->type) {
	case SBX_ENTRY_DIR:
		return sbx_file_mkdir(w->ws, path, 0755);
	case SBX_ENTRY_FILE:
		return sbx_file_write(w->ws, path, e->data, e->size, file_mode(e->mode),
		                      SBX_WRITE_MKDIRS | SBX_WRITE_EXCL);
	case SBX_ENTRY_HARDLINK:
		if (strncmp(e->link, strip, sl) != 0)
			return sbx_fail(-SBX_EINVAL, "archive entry '%s': a hard link to a file "
			                "outside the skill's folder", e->path);
		return copy_file(w, e->link + sl, path);
	case SBX_ENTRY_SYMLINK:
		return defer_link(w, rel, e->link);
	default:
		return sbx_fail(-SBX_EINVAL, "'%s': unexpected entry type", e->path);
	}
}

static int make_link(struct writer *w, const struct link *l)
{
	_cleanup_free_ char *path = NULL, *name = NULL;
	_cleanup_close_ int dirfd = -1;
	int r;

	if (asprintf(&path, "%s/%s", w->dest, l->rel) < 0)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	if ((r = sbx_path_open_parent(w->ws->root_fd, path, true, &dirfd, &name)) < 0)
		return r;
	if (symlinkat(l->target, dirfd, name) < 0)
		return sbx_fail(sbx_errno_code(errno), "symlink %s: %s", path, strerror(errno));
	return 0;
}

static int write_skill(sbx_workspace *ws, const struct source *src, const struct plan *p,
                       const char *dest)
{
	struct writer w = { ws, p, dest, NULL, 0 };
	_cleanup_free_ char *md = NULL;
	int r = source_iterate(src, write_entry, &w);

	for (size_t i = 0; r == 0 && i < w.nlinks; i++)
		r = make_link(&w, &w.links[i]);
	writer_free(&w);
	if (r < 0)
		return r;
	if (asprintf(&md, "%s/SKILL.md", dest) < 0)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	return sbx_file_write(ws, md, p->md_src->text, p->md_src->size, 0644,
	                      SBX_WRITE_MKDIRS | SBX_WRITE_EXCL);
}

/* Removes what a failed add left, keeping the message of the failure. */
static int undo(sbx_workspace *ws, const char *dest, int r)
{
	char msg[1024];

	snprintf(msg, sizeof msg, "%s", sbx_last_error());
	(void)sbx_file_remove(ws, dest, SBX_REMOVE_RECURSIVE);
	return sbx_fail(r, "%s", msg);
}

/* ---------------------------------------------------------------------------------------
 * Names and dirs
 * ------------------------------------------------------------------------------------- */

/* A name only a trusted skill takes: an untrusted one (a command's) cannot block an add. */
static int refuse_duplicate(sbx_workspace *ws, const char *name)
{
	sbx_skill *v;
	size_t n;
	int r = sbx_skills_load(ws, true, &v, &n);

	for (size_t i = 0; r == 0 && i < n; i++)
		if (strcmp(v[i].name, name) == 0)
			r = sbx_fail(-SBX_EEXIST, "a skill named '%s' is already there (%s)", name,
			             v[i].dir);
	sbx_skills_free(v, n);
	return r;
}

/* Candidate k of a dir: base, base_1, base_2, ... */
static char *candidate(const char *base, int k)
{
	char *c = NULL;

	if (k == 0)
		return strdup(base);
	return asprintf(&c, "%s_%d", base, k) < 0 ? NULL : c;
}

static int no_free_dir(const char *base)
{
	return sbx_fail(-SBX_EEXIST, "no free folder for the skill: %s and %s_1..%s_%d are taken",
	                base, base, base, DIR_SUFFIX_MAX);
}

/* renameat2(RENAME_NOREPLACE), or where the file system lacks it a look first (the lock
 * keeps this process's adders apart). 1 when the name was taken. */
static int rename_noreplace(int dirfd, const char *from, const char *to)
{
	struct stat st;

	if (renameat2(dirfd, from, dirfd, to, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno == EEXIST || errno == ENOTEMPTY)
		return 1;
	if (errno != EINVAL && errno != ENOSYS)
		return sbx_fail(sbx_errno_code(errno), "rename into skills/%s: %s", to,
		                strerror(errno));
	if (fstatat(dirfd, to, &st, AT_SYMLINK_NOFOLLOW) == 0)
		return 1;
	if (renameat(dirfd, from, dirfd, to) < 0)
		return sbx_fail(sbx_errno_code(errno), "rename into skills/%s: %s", to,
		                strerror(errno));
	return 0;
}

/* Renames the staging folder to the first free dir. */
static int install_staged(sbx_workspace *ws, const char *staging, const char *base,
                          char **dir_out)
{
	sbx_skills_names taken;
	_cleanup_close_ int skfd = sbx_path_open(ws->root_fd, SBX_SKILLS_DIR,
	                                         O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
	int r;

	if (skfd < 0)
		return skfd;
	if ((r = sbx_skills_list_names(ws, &taken)) < 0)
		return r;
	r = 1;
	for (int k = 0; k <= DIR_SUFFIX_MAX && r == 1; k++) {
		char *c = candidate(base, k);
		if (!c) {
			r = sbx_fail(-SBX_ENOMEM, "out of memory");
			break;
		}
		if (!sbx_skills_names_has(&taken, c))
			r = rename_noreplace(skfd, staging + strlen(SBX_SKILLS_DIR "/"), c);
		if (r == 0)
			*dir_out = c;
		else
			free(c);
	}
	sbx_skills_names_free(&taken);
	return r == 1 ? no_free_dir(base) : r;
}

static int random_hex(char *out, size_t bytes)
{
	unsigned char rnd[16];

	if (bytes > sizeof rnd || getrandom(rnd, bytes, 0) != (ssize_t)bytes)
		return sbx_fail(-SBX_EIO, "getrandom: %s", strerror(errno));
	for (size_t i = 0; i < bytes; i++)
		snprintf(out + 2 * i, 3, "%02x", rnd[i]);
	return 0;
}

/* Records the skill just installed in dir ("skills/<dir>") as one the library added; when
 * that fails it is removed again (untrusted, it would be no skill for the model). */
static int record_installed(sbx_workspace *ws, const struct plan *p, const char *dir)
{
	char sha256[65];
	int r = sbx_skill_sha256(p->md_src->text, p->md_src->size, sha256);

	if (r == 0)
		r = sbx_skill_record_add(ws, dir, p->md.name, sha256);
	return r < 0 ? undo(ws, dir, r) : 0;
}

/* Host files: stage, then (under the lock) check the name again, rename into place, and
 * record it. */
static int add_on_host(sbx_workspace *ws, const struct source *src, const struct plan *p,
                       const char *base, char **dir_out)
{
	char staging[64], hex[33];
	sbx_stat st = { .size = sizeof st };
	int r;

	if ((r = random_hex(hex, 16)) < 0)
		return r;
	snprintf(staging, sizeof staging, SBX_SKILLS_DIR "/.staging-%s", hex);
	if (sbx_file_stat(ws, staging, &st) == 0)
		return sbx_fail(-SBX_EEXIST, "%s exists already", staging);
	if ((r = sbx_file_mkdir(ws, staging, 0755)) < 0)
		return r;
	if ((r = write_skill(ws, src, p, staging)) < 0)
		return undo(ws, staging, r);
	sbx_skills_lock();
	r = refuse_duplicate(ws, p->md.name);
	if (r == 0)
		r = install_staged(ws, staging, base, dir_out);
	if (r < 0)
		r = undo(ws, staging, r);
	if (r == 0) {
		_cleanup_free_ char *dir = NULL;
		if (asprintf(&dir, SBX_SKILLS_DIR "/%s", *dir_out) < 0)
			r = sbx_fail(-SBX_ENOMEM, "out of memory");
		else
			r = record_installed(ws, p, dir);
		if (r < 0)
			free(SBX_TAKE_PTR(*dir_out));
	}
	sbx_skills_unlock();
	return r;
}

/* The first dir that is neither listed nor there. */
static int free_dir(sbx_workspace *ws, const char *base, char **dir_out)
{
	sbx_skills_names taken;
	int r = sbx_skills_list_names(ws, &taken);

	for (int k = 0; r == 0 && k <= DIR_SUFFIX_MAX; k++) {
		_cleanup_free_ char *c = candidate(base, k), *path = NULL;
		sbx_stat st = { .size = sizeof st };
		if (!c || asprintf(&path, SBX_SKILLS_DIR "/%s", c) < 0) {
			r = sbx_fail(-SBX_ENOMEM, "out of memory");
			break;
		}
		if (sbx_skills_names_has(&taken, c) || sbx_file_stat(ws, path, &st) == 0)
			continue;
		*dir_out = SBX_TAKE_PTR(c);
		sbx_skills_names_free(&taken);
		return 0;
	}
	sbx_skills_names_free(&taken);
	return r < 0 ? r : no_free_dir(base);
}

/* No host files: straight into the final folder, under the lock, SKILL.md last. */
static int add_elsewhere(sbx_workspace *ws, const struct source *src, const struct plan *p,
                         const char *base, char **dir_out)
{
	_cleanup_free_ char *dir = NULL, *dest = NULL;
	int r;

	sbx_skills_lock();
	r = refuse_duplicate(ws, p->md.name);
	if (r == 0)
		r = free_dir(ws, base, &dir);
	if (r == 0 && asprintf(&dest, SBX_SKILLS_DIR "/%s", dir) < 0)
		r = sbx_fail(-SBX_ENOMEM, "out of memory");
	if (r == 0 && (r = sbx_file_mkdir(ws, dest, 0755)) == 0 &&
	    (r = write_skill(ws, src, p, dest)) < 0)
		r = undo(ws, dest, r);
	if (r == 0)
		r = record_installed(ws, p, dest);
	sbx_skills_unlock();
	if (r == 0)
		*dir_out = SBX_TAKE_PTR(dir);
	return r;
}

/* ---------------------------------------------------------------------------------------
 * The public functions
 * ------------------------------------------------------------------------------------- */

/* Prefixes the message of a failure with the function's name. */
static int fail_in(const char *fn, int r)
{
	char msg[1024];

	snprintf(msg, sizeof msg, "%s", sbx_last_error());
	return sbx_fail(r, "%s: %s", fn, msg);
}

static int add_skill(sbx_workspace *ws, const struct source *src, char **name_out)
{
	struct plan p = { 0 };
	_cleanup_free_ char *base = NULL, *dir = NULL;
	int r;

	if ((r = make_plan(ws, src, &p)) < 0 || (r = refuse_duplicate(ws, p.md.name)) < 0)
		goto out;
	if (!(base = sbx_skill_dir_base(p.md.name))) {
		r = sbx_fail(-SBX_ENOMEM, "out of memory");
		goto out;
	}
	r = p.host ? add_on_host(ws, src, &p, base, &dir) : add_elsewhere(ws, src, &p, base, &dir);
	if (r == 0 && name_out && !(*name_out = strdup(p.md.name)))
		r = sbx_fail(-SBX_ENOMEM, "out of memory");
out:
	plan_free(&p);
	return r;
}

static int check_ws(const char *fn, sbx_workspace *ws, char **name_out)
{
	if (name_out)
		*name_out = NULL;
	if (!ws)
		return sbx_fail(-SBX_EINVAL, "%s: ws must not be NULL", fn);
	if (host_files(ws) && ws->root_fd < 0)
		return sbx_fail(-SBX_ESTATE, "%s: the workspace has no root directory open", fn);
	return 0;
}

int sbx_skill_add(sbx_workspace *ws, const char *host_path, char **name_out)
{
	static const char fn[] = "sbx_skill_add";
	int r = check_ws(fn, ws, name_out);

	if (r < 0)
		return r;
	if (!host_path)
		return sbx_fail(-SBX_EINVAL, "%s: host_path must not be NULL", fn);
	_cleanup_close_ int fd = open(host_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return sbx_fail(sbx_errno_code(errno), "%s: host_path '%s': %s", fn, host_path,
		                strerror(errno));
	struct source src = { .dirfd = fd };
	r = add_skill(ws, &src, name_out);
	return r < 0 ? fail_in(fn, r) : 0;
}

int sbx_skill_add_archive(sbx_workspace *ws, const void *data, size_t len, const char *format,
                          char **name_out)
{
	static const char fn[] = "sbx_skill_add_archive";
	struct source src = { .dirfd = -1, .data = data, .len = len, .nested_ok = true };
	int r = check_ws(fn, ws, name_out);

	if (r < 0)
		return r;
	if (!data)
		return sbx_fail(-SBX_EINVAL, "%s: data must not be NULL", fn);
	r = format ? sbx_archive_format_from_name(format, "format", &src.format) :
	             sbx_archive_detect(data, len, &src.format);
	if (r == 0)
		r = add_skill(ws, &src, name_out);
	return r < 0 ? fail_in(fn, r) : 0;
}
