/* Reading the workspace's skills (listing, the system-prompt block, the JSON the API returns)
 * and removing one. Adding is in skill_import.c. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "skills.h"
#include "util/cleanup.h"
#include "util/digest.h"
#include "util/error.h"
#include "util/forksafe.h"
#include "util/json.h"
#include "util/path.h"

SBX_FORK_SAFE_MUTEX(skills_mutex)

void sbx_skills_lock(void)
{
	pthread_mutex_lock(&skills_mutex);
}

void sbx_skills_unlock(void)
{
	pthread_mutex_unlock(&skills_mutex);
}

/* ---------------------------------------------------------------------------------------
 * The skills folder
 * ------------------------------------------------------------------------------------- */

/* The parsed listing of skills/ (NULL when there is no such folder). */
static int list_folder(sbx_workspace *ws, sbx_json **out)
{
	_cleanup_free_ char *json = NULL;
	char err[128];
	int r = sbx_file_list(ws, SBX_SKILLS_DIR, &json);

	*out = NULL;
	if (r == -SBX_ENOENT || r == -SBX_ENOTDIR)
		return 0;
	if (r < 0)
		return r;
	if (sbx_json_parse(json, strlen(json), out, err, sizeof err) < 0 ||
	    (*out)->type != SBX_JSON_ARRAY) {
		sbx_json_free(*out);
		*out = NULL;
		return sbx_fail(-SBX_EPROTO, "the listing of skills/ is not a JSON array");
	}
	return 0;
}

/* An entry's name when it is usable as one path component, else NULL. */
static const char *entry_name(const sbx_json *item, const char **type)
{
	const sbx_json *name = sbx_json_get(item, "name");
	const sbx_json *t = sbx_json_get(item, "type");

	if (!name || name->type != SBX_JSON_STRING || !t || t->type != SBX_JSON_STRING)
		return NULL;
	if (name->len == 0 || strlen(name->str) != name->len || strchr(name->str, '/') ||
	    strcmp(name->str, ".") == 0 || strcmp(name->str, "..") == 0)
		return NULL;
	*type = t->str;
	return name->str;
}

int sbx_skills_list_names(sbx_workspace *ws, sbx_skills_names *out)
{
	sbx_json *list;
	const char *type;
	int r = list_folder(ws, &list);

	*out = (sbx_skills_names){ 0 };
	if (r < 0 || !list)
		return r;
	out->v = calloc(list->n ? list->n : 1, sizeof *out->v);
	if (!out->v) {
		sbx_json_free(list);
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < list->n; i++) {
		const char *name = entry_name(list->items[i], &type);
		if (name && !(out->v[out->n++] = strdup(name))) {
			sbx_json_free(list);
			sbx_skills_names_free(out);
			return sbx_fail(-SBX_ENOMEM, "out of memory");
		}
	}
	sbx_json_free(list);
	return 0;
}

bool sbx_skills_names_has(const sbx_skills_names *names, const char *name)
{
	for (size_t i = 0; i < names->n; i++)
		if (strcmp(names->v[i], name) == 0)
			return true;
	return false;
}

void sbx_skills_names_free(sbx_skills_names *names)
{
	for (size_t i = 0; i < names->n; i++)
		free(names->v[i]);
	free(names->v);
	*names = (sbx_skills_names){ 0 };
}

char *sbx_skill_dir_base(const char *name)
{
	char *dir = malloc(strlen(name) + 1);
	size_t o = 0;

	if (!dir)
		return NULL;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
		bool keep = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		            (*p >= '0' && *p <= '9') || *p == '_' || *p == '-';
		/* One '_' per character: UTF-8 continuation bytes add nothing. */
		if (keep)
			dir[o++] = (char)*p;
		else if ((*p & 0xC0) != 0x80)
			dir[o++] = '_';
	}
	dir[o] = '\0';
	return dir;
}

/* ---------------------------------------------------------------------------------------
 * Loading
 * ------------------------------------------------------------------------------------- */

int sbx_skill_read_md(sbx_workspace *ws, const char *dir, char **text, size_t *len,
                      sbx_skill_md *md)
{
	_cleanup_free_ char *path = NULL;
	sbx_stat st = { .size = sizeof st };
	int r;

	*text = NULL;
	*md = (sbx_skill_md){ 0 };
	if (asprintf(&path, "%s/SKILL.md", dir) < 0)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	/* Look before reading: a huge file or a FIFO planted there must cost nothing. */
	if ((r = sbx_file_stat(ws, path, &st)) < 0)
		return r;
	if (st.type != SBX_FILE_REGULAR)
		return sbx_fail(-SBX_EINVAL, "%s: not a regular file", path);
	if (st.file_size > SBX_FRONTMATTER_MAX)
		return sbx_fail(-SBX_EFBIG, "%s: larger than %zu bytes", path, SBX_FRONTMATTER_MAX);
	/* The cap again in the read itself: the stat above may be stale by now. */
	if ((r = sbx_file_read_rel(ws, path, SBX_FRONTMATTER_MAX, text, len, NULL)) < 0)
		return r;
	if ((r = sbx_skill_md_parse(*text, *len, md)) < 0)
		free(SBX_TAKE_PTR(*text));
	return r;
}

void sbx_skills_free(sbx_skill *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++) {
		free(v[i].name);
		free(v[i].description);
		free(v[i].dir);
	}
	free(v);
}

static int compare_skills(const void *a, const void *b)
{
	const sbx_skill *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	if (c)
		return c;
	if (x->trusted != y->trusted)
		return x->trusted ? -1 : 1;
	return strcmp(x->dir, y->dir);
}

/* Sorted by name; of two with the same name a trusted one wins, else the first dir. */
static void sort_and_dedupe(sbx_skill *v, size_t *n)
{
	size_t o = 0;

	if (*n == 0)
		return;
	qsort(v, *n, sizeof *v, compare_skills);
	for (size_t i = 0; i < *n; i++) {
		if (o && strcmp(v[o - 1].name, v[i].name) == 0) {
			free(v[i].name);
			free(v[i].description);
			free(v[i].dir);
			continue;
		}
		v[o++] = v[i];
	}
	*n = o;
}

/* Reads skills/<name> into v[*n] when it is a skill (trusted when the record says so);
 * anything else is skipped. */
static int load_one(sbx_workspace *ws, const sbx_json *record, const char *name, sbx_skill *v,
                    size_t *n)
{
	_cleanup_free_ char *dir = NULL, *text = NULL;
	sbx_skill s = { 0 };
	sbx_skill_md md;
	size_t len;
	int r;

	if (asprintf(&dir, SBX_SKILLS_DIR "/%s", name) < 0)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	r = sbx_skill_read_md(ws, dir, &text, &len, &md);
	if (r == -SBX_ENOMEM)
		return r;
	if (r < 0)
		return 0;
	if ((r = sbx_sha256_hex(text, len, s.sha256)) < 0) {
		sbx_skill_md_free(&md);
		return r;
	}
	s.trusted = sbx_skill_record_trusts(record, dir, md.name, s.sha256);
	s.name = SBX_TAKE_PTR(md.name);
	s.description = SBX_TAKE_PTR(md.description);
	s.dir = SBX_TAKE_PTR(dir);
	v[(*n)++] = s;
	sbx_skill_md_free(&md);
	return 0;
}

/* Drops the untrusted ones. */
static void keep_trusted(sbx_skill *v, size_t *n)
{
	size_t o = 0;

	for (size_t i = 0; i < *n; i++) {
		if (v[i].trusted) {
			v[o++] = v[i];
			continue;
		}
		free(v[i].name);
		free(v[i].description);
		free(v[i].dir);
	}
	*n = o;
}

int sbx_skills_load(sbx_workspace *ws, bool trusted_only, sbx_skill **out, size_t *count)
{
	sbx_json *list, *record = NULL;
	sbx_skill *v;
	const char *type;
	size_t n = 0;
	int r = list_folder(ws, &list);

	*out = NULL;
	*count = 0;
	if (r < 0 || !list)
		return r;
	if (!(v = calloc(list->n ? list->n : 1, sizeof *v))) {
		sbx_json_free(list);
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	}
	record = sbx_skill_record_load(ws);
	for (size_t i = 0; i < list->n && r == 0; i++) {
		const char *name = entry_name(list->items[i], &type);
		if (name && name[0] != '.' && strcmp(type, "dir") == 0)
			r = load_one(ws, record, name, v, &n);
	}
	sbx_json_free(record);
	sbx_json_free(list);
	if (r < 0) {
		sbx_skills_free(v, n);
		return r;
	}
	sort_and_dedupe(v, &n);
	if (trusted_only)
		keep_trusted(v, &n);
	if (n == 0) {
		free(v);
		return 0;
	}
	*out = v;
	*count = n;
	return 0;
}

/* ---------------------------------------------------------------------------------------
 * The system-prompt block and the JSON listing
 * ------------------------------------------------------------------------------------- */

/* The wording AgentScope's toolkit uses, so prompts tuned for it keep working. */
static const char intro[] =
	"<agent-skills>\n"
	"Skills are a collection of instructions, scripts, and resources to extend your "
	"capabilities.\n\n"
	"**IMPORTANT**: Skills are NOT tools, and you cannot call a skill directly. To use a "
	"skill, you MUST use the `Skill` tool to read the skill's full instructions, and then "
	"follow those instructions to use the tools and resources provided by the skill.\n\n"
	"# Available Skills:";

static void put_xml_text(sbx_buf *b, const char *s)
{
	for (; *s; s++) {
		size_t run = strcspn(s, "&<>");
		sbx_buf_append(b, s, run);
		s += run;
		if (!*s)
			break;
		sbx_buf_puts(b, *s == '&' ? "&amp;" : *s == '<' ? "&lt;" : "&gt;");
	}
}

int sbx_skills_render(sbx_workspace *ws, sbx_buf *out)
{
	sbx_skill *v;
	size_t n;
	const char *root = sbx_workspace_root(ws);
	size_t rl = root ? strlen(root) : 0;
	int r = sbx_skills_load(ws, true, &v, &n);

	if (r < 0 || n == 0)
		return r;
	while (rl && root[rl - 1] == '/')
		rl--;
	sbx_buf_puts(out, intro);
	for (size_t i = 0; i < n; i++) {
		sbx_buf_puts(out, "\n<skill>\n<name>");
		put_xml_text(out, v[i].name);
		sbx_buf_puts(out, "</name>\n<description>");
		put_xml_text(out, v[i].description);
		sbx_buf_puts(out, "</description>\n<dir>");
		sbx_buf_append(out, root ? root : "", rl);
		sbx_buf_puts(out, "/");
		put_xml_text(out, v[i].dir);
		sbx_buf_puts(out, "</dir>\n</skill>");
	}
	sbx_buf_puts(out, "\n</agent-skills>");
	sbx_skills_free(v, n);
	return out->oom ? sbx_fail(-SBX_ENOMEM, "out of memory") : 0;
}

int sbx_skills_json(sbx_workspace *ws, char **json_out)
{
	sbx_buf b = { 0 };
	sbx_skill *v;
	size_t n;
	int r;

	if (json_out)
		*json_out = NULL;
	if (!ws)
		return sbx_fail(-SBX_EINVAL, "sbx_skills_json: ws must not be NULL");
	if (!json_out)
		return sbx_fail(-SBX_EINVAL, "sbx_skills_json: json_out must not be NULL");
	if ((r = sbx_skills_load(ws, false, &v, &n)) < 0)
		return r;
	sbx_buf_puts(&b, "[");
	for (size_t i = 0; i < n; i++) {
		sbx_buf_puts(&b, i ? ",{\"name\":" : "{\"name\":");
		sbx_buf_json_string(&b, v[i].name, strlen(v[i].name));
		sbx_buf_puts(&b, ",\"description\":");
		sbx_buf_json_string(&b, v[i].description, strlen(v[i].description));
		sbx_buf_puts(&b, ",\"dir\":");
		sbx_buf_json_string(&b, v[i].dir, strlen(v[i].dir));
		sbx_buf_printf(&b, ",\"trusted\":%s}", v[i].trusted ? "true" : "false");
	}
	sbx_buf_puts(&b, "]");
	sbx_skills_free(v, n);
	if (b.oom) {
		sbx_buf_free(&b);
		return sbx_fail(-SBX_ENOMEM, "sbx_skills_json: out of memory");
	}
	*json_out = sbx_buf_steal(&b, NULL);
	return 0;
}

/* ---------------------------------------------------------------------------------------
 * Removing
 * ------------------------------------------------------------------------------------- */

static const sbx_skill *find_skill(const sbx_skill *v, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i].name, name) == 0)
			return &v[i];
	return NULL;
}

/* On a host folder the skill leaves in one rename, so no reader sees half of it; then the
 * renamed folder is deleted at leisure. */
static int remove_on_host(sbx_workspace *ws, const char *dir)
{
	unsigned char rnd[8];
	char gone[64];
	_cleanup_close_ int skfd = sbx_path_open(ws->root_fd, SBX_SKILLS_DIR,
	                                         O_PATH | O_DIRECTORY | O_CLOEXEC, 0);

	if (skfd < 0)
		return skfd;
	if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd)
		return sbx_fail(-SBX_EIO, "getrandom: %s", strerror(errno));
	snprintf(gone, sizeof gone, ".removing-%02x%02x%02x%02x%02x%02x%02x%02x", rnd[0], rnd[1],
	         rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
	if (renameat(skfd, dir + strlen(SBX_SKILLS_DIR "/"), skfd, gone) < 0)
		return sbx_fail(sbx_errno_code(errno), "rename %s: %s", dir, strerror(errno));
	char path[96];
	snprintf(path, sizeof path, SBX_SKILLS_DIR "/%s", gone);
	return sbx_file_remove(ws, path, SBX_REMOVE_RECURSIVE);
}

/* Elsewhere SKILL.md goes first: from then on the folder is no skill, whatever is left. */
static int remove_elsewhere(sbx_workspace *ws, const char *dir)
{
	_cleanup_free_ char *md = NULL;
	int r;

	if (asprintf(&md, "%s/SKILL.md", dir) < 0)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	if ((r = sbx_file_remove(ws, md, 0)) < 0)
		return r;
	return sbx_file_remove(ws, dir, SBX_REMOVE_RECURSIVE);
}

static int remove_locked(sbx_workspace *ws, const char *name)
{
	sbx_skill *v;
	size_t n;
	int r = sbx_skills_load(ws, false, &v, &n);

	if (r < 0)
		return r;
	const sbx_skill *s = find_skill(v, n, name);
	if (!s) {
		sbx_buf names = { 0 };
		for (size_t i = 0; i < n; i++)
			sbx_buf_printf(&names, "%s'%s'", i ? ", " : "", v[i].name);
		r = sbx_fail(-SBX_ENOENT, "sbx_skill_remove: no skill named '%.100s' (there %s: "
		             "%s)", name, n == 1 ? "is" : "are", n ? names.data : "none");
		sbx_buf_free(&names);
	} else if ((r = sbx_skill_record_remove(ws, s->dir)) < 0) {
		/* The record could not change: the skill stays, as it was. */
	} else if (ws->caps & SBX_BACKEND_CAP_HOST_FILES) {
		r = remove_on_host(ws, s->dir);
	} else {
		r = remove_elsewhere(ws, s->dir);
	}
	sbx_skills_free(v, n);
	return r;
}

int sbx_skill_remove(sbx_workspace *ws, const char *name)
{
	int r;

	if (!ws)
		return sbx_fail(-SBX_EINVAL, "sbx_skill_remove: ws must not be NULL");
	if (!name)
		return sbx_fail(-SBX_EINVAL, "sbx_skill_remove: name must not be NULL");
	sbx_skills_lock();
	r = remove_locked(ws, name);
	sbx_skills_unlock();
	return r;
}
