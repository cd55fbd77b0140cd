/* The checks every archive entry passes before the caller sees it (see archive.h), format
 * detection, and the dispatch to the readers.
 *
 * The entries seen so far are kept as a tree of path components, hashed by (parent,
 * component): memory grows with the components of the archive, not with the square of its
 * path lengths, and "is there a symlink above this entry?" is one lookup per component. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <agentsbx/agentsbx.h>
#include "archive_int.h"
#include "buf.h"
#include "cleanup.h"
#include "error.h"

#define NAME_COMPONENT_MAX 255

enum node_type { NODE_ROOT, NODE_IMPLICIT_DIR, NODE_DIR, NODE_FILE, NODE_SYMLINK };

struct node {
	uint32_t parent;
	uint8_t type;           /* enum node_type */
	uint64_t size;          /* NODE_FILE: bytes, for hard links to it */
	char *comp;
};

struct tree {
	struct node *nodes;     /* [0] is the root */
	size_t n, cap;
	uint32_t *slots;        /* hash table of node indexes; 0 = empty (the root is no child) */
	size_t nslots;
};

struct sbx_arc {
	sbx_archive_limits lim;
	const char *label;      /* "archive entry", "file" */
	sbx_archive_cb cb;
	void *userdata;
	size_t entries;
	uint64_t total;
	struct tree tree;
};

/* ---------------------------------------------------------------------------------------
 * Messages
 * ------------------------------------------------------------------------------------- */

/* The name as a message may show it: valid UTF-8 without control characters as it is, else
 * with \xNN escapes; long names cut. */
static void shown_name(const char *name, size_t len, char *out, size_t cap)
{
	bool plain = sbx_utf8_valid(name, len) && !memchr(name, '\0', len);
	size_t o = 0, i = 0;

	for (i = 0; plain && i < len; i++)
		if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f)
			plain = false;
	for (i = 0; i < len && o + 8 < cap; i++) {
		unsigned char ch = (unsigned char)name[i];
		if (plain || (ch >= 0x20 && ch < 0x7f && ch != '\\'))
			out[o++] = (char)ch;
		else
			o += (size_t)snprintf(out + o, cap - o, "\\x%02x", ch);
	}
	/* A cut name ends on a character boundary, and room for "..." is left: the loop stops
	 * 8 bytes before the end. */
	while (plain && i < len && o && ((unsigned char)name[i] & 0xC0) == 0x80) {
		i--;
		o--;
	}
	memcpy(out + o, i < len ? "..." : "", i < len ? 4 : 1);
}

int sbx_arc_fail(const sbx_arc *a, const char *name, size_t name_len, const char *fmt, ...)
{
	char shown[200], msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (!name)
		return sbx_fail(-SBX_EINVAL, "%s", msg);
	shown_name(name, name_len, shown, sizeof shown);
	return sbx_fail(-SBX_EINVAL, "%s '%s': %s", a->label, shown, msg);
}

const sbx_archive_limits *sbx_arc_limits(const sbx_arc *a)
{
	return &a->lim;
}

/* ---------------------------------------------------------------------------------------
 * The tree of names seen
 * ------------------------------------------------------------------------------------- */

static uint64_t hash_child(uint32_t parent, const char *comp, size_t len)
{
	uint64_t h = 1469598103934665603ull ^ parent;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)comp[i]) * 1099511628211ull;
	return h;
}

/* The slot that holds (parent, comp), or the empty slot where it would go. */
static size_t tree_slot(const struct tree *t, uint32_t parent, const char *comp, size_t len)
{
	size_t mask = t->nslots - 1, i = hash_child(parent, comp, len) & mask;

	for (;; i = (i + 1) & mask) {
		uint32_t idx = t->slots[i];
		if (!idx)
			return i;
		const struct node *nd = &t->nodes[idx];
		if (nd->parent == parent && strncmp(nd->comp, comp, len) == 0 && !nd->comp[len])
			return i;
	}
}

static uint32_t tree_find(const struct tree *t, uint32_t parent, const char *comp, size_t len)
{
	return t->nslots ? t->slots[tree_slot(t, parent, comp, len)] : 0;
}

static int tree_grow(struct tree *t)
{
	size_t nslots = t->nslots ? t->nslots * 2 : 256;
	uint32_t *old = t->slots;
	size_t oldn = t->nslots;

	t->slots = calloc(nslots, sizeof *t->slots);
	if (!t->slots) {
		t->slots = old;
		return sbx_fail(-SBX_ENOMEM, "archive: out of memory");
	}
	t->nslots = nslots;
	for (size_t i = 0; i < oldn; i++)
		if (old[i]) {
			const struct node *nd = &t->nodes[old[i]];
			t->slots[tree_slot(t, nd->parent, nd->comp, strlen(nd->comp))] = old[i];
		}
	free(old);
	return 0;
}

static int tree_add(struct tree *t, uint32_t parent, const char *comp, size_t len, int type,
                    uint32_t *idx)
{
	int r;

	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		struct node *nv = cap < UINT32_MAX ? realloc(t->nodes, cap * sizeof *nv) : NULL;
		if (!nv)
			return sbx_fail(-SBX_ENOMEM, "archive: out of memory");
		t->nodes = nv;
		t->cap = cap;
		if (t->n == 0)
			t->nodes[t->n++] = (struct node){ 0, NODE_ROOT, 0, NULL };
	}
	if ((t->n + 1) * 2 > t->nslots && (r = tree_grow(t)) < 0)
		return r;
	char *copy = strndup(comp, len);
	if (!copy)
		return sbx_fail(-SBX_ENOMEM, "archive: out of memory");
	*idx = (uint32_t)t->n;
	t->nodes[t->n++] = (struct node){ parent, (uint8_t)type, 0, copy };
	t->slots[tree_slot(t, parent, comp, len)] = *idx;
	return 0;
}

static void tree_free(struct tree *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->nodes[i].comp);
	free(t->nodes);
	free(t->slots);
	*t = (struct tree){ 0 };
}

/* The node of a normalised path, or 0. */
static uint32_t tree_lookup(const struct tree *t, const char *path)
{
	uint32_t idx = 0;

	while (*path) {
		size_t len = strcspn(path, "/");
		idx = tree_find(t, idx, path, len);
		if (!idx)
			return 0;
		path += len + (path[len] == '/');
	}
	return idx;
}

/* ---------------------------------------------------------------------------------------
 * Names and links
 * ------------------------------------------------------------------------------------- */

static bool is_dot(const char *s, size_t n)
{
	return n == 1 && s[0] == '.';
}

static bool is_dotdot(const char *s, size_t n)
{
	return n == 2 && s[0] == '.' && s[1] == '.';
}

/* Checks a stored name and writes its normalised form ("" for the root). */
static int normalize_name(const sbx_arc *a, const char *raw, size_t len, char **out)
{
	_cleanup_free_ char *path = NULL;
	size_t o = 0, depth = 0;

	*out = NULL;
	if (len == 0)
		return sbx_arc_fail(a, "", 0, "has an empty name");
	if (memchr(raw, '\0', len))
		return sbx_arc_fail(a, raw, len, "the name contains a NUL byte");
	if (!sbx_utf8_valid(raw, len))
		return sbx_arc_fail(a, raw, len, "the name is not valid UTF-8");
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)raw[i] < 0x20 || raw[i] == 0x7f)
			return sbx_arc_fail(a, raw, len, "the name contains a control character");
	if (raw[0] == '/')
		return sbx_arc_fail(a, raw, len, "absolute names are not allowed");
	if (len > SBX_ARCHIVE_PATH_MAX)
		return sbx_arc_fail(a, raw, len, "the name is longer than %d bytes",
		                    SBX_ARCHIVE_PATH_MAX);
	if (!(path = malloc(len + 1)))
		return sbx_fail(-SBX_ENOMEM, "archive: out of memory");
	for (size_t i = 0; i < len;) {
		size_t n = 0;
		while (i + n < len && raw[i + n] != '/')
			n++;
		if (is_dotdot(raw + i, n))
			return sbx_arc_fail(a, raw, len, "'..' is not allowed in names");
		if (n > NAME_COMPONENT_MAX)
			return sbx_arc_fail(a, raw, len, "a name component is longer than %d bytes",
			                    NAME_COMPONENT_MAX);
		if (n && !is_dot(raw + i, n)) {
			if (++depth > SBX_ARCHIVE_DEPTH_MAX)
				return sbx_arc_fail(a, raw, len, "more than %d levels deep",
				                    SBX_ARCHIVE_DEPTH_MAX);
			if (o)
				path[o++] = '/';
			memcpy(path + o, raw + i, n);
			o += n;
		}
		i += n + 1;
	}
	path[o] = '\0';
	*out = SBX_TAKE_PTR(path);
	return 0;
}

bool sbx_archive_link_inside(const char *path, const char *target)
{
	size_t depth = 0, ups = 0;
	bool leading = true;

	if (!path || !target || !*target || *target == '/')
		return false;
	/* The link's directory is as deep as its path has slashes. */
	for (const char *p = path; *p; p++)
		depth += *p == '/';
	for (const char *p = target; *p;) {
		size_t n = strcspn(p, "/");
		if (is_dotdot(p, n)) {
			if (!leading || ++ups > depth)
				return false;
		} else if (n && !is_dot(p, n)) {
			leading = false;
		}
		p += n + (p[n] == '/');
	}
	return true;
}

static int check_symlink(const sbx_arc *a, const sbx_arc_raw *raw, const char *path,
                         char **target)
{
	const char *name = raw->name;
	size_t nlen = raw->name_len;

	*target = NULL;
	if (!raw->link || raw->link_len == 0)
		return sbx_arc_fail(a, name, nlen, "a symlink with an empty target");
	if (memchr(raw->link, '\0', raw->link_len))
		return sbx_arc_fail(a, name, nlen, "the symlink target contains a NUL byte");
	if (raw->link_len > SBX_ARCHIVE_LINK_MAX)
		return sbx_arc_fail(a, name, nlen, "the symlink target is longer than %d bytes",
		                    SBX_ARCHIVE_LINK_MAX);
	if (!sbx_utf8_valid(raw->link, raw->link_len))
		return sbx_arc_fail(a, name, nlen, "the symlink target is not valid UTF-8");
	if (!(*target = strndup(raw->link, raw->link_len)))
		return sbx_fail(-SBX_ENOMEM, "archive: out of memory");
	if (!(a->lim.flags & SBX_ARCHIVE_AS_STORED) && !sbx_archive_link_inside(path, *target)) {
		char shown[200];
		shown_name(raw->link, raw->link_len, shown, sizeof shown);
		free(SBX_TAKE_PTR(*target));
		return sbx_arc_fail(a, name, nlen, "the symlink to '%s' points outside the "
		                    "archive (targets must be relative, with '..' only at the "
		                    "start)", shown);
	}
	return 0;
}

/* ---------------------------------------------------------------------------------------
 * Limits and the entry checks
 * ------------------------------------------------------------------------------------- */

int sbx_arc_admit(sbx_arc *a, const char *name, size_t name_len, uint64_t size)
{
	if (size > a->lim.max_file)
		return sbx_arc_fail(a, name, name_len, "%llu bytes, more than the limit of %zu for "
		                    "one file", (unsigned long long)size, a->lim.max_file);
	if (size > a->lim.max_total - a->total)
		return sbx_arc_fail(a, name, name_len, "the archive expands beyond the limit of "
		                    "%llu bytes", (unsigned long long)a->lim.max_total);
	a->total += size;
	return 0;
}

static const char *node_kind(uint8_t type)
{
	return type == NODE_SYMLINK ? "a symlink" : "a file";
}

/* Places path in the tree: its parents must be directories (made implicitly when absent),
 * and it must be new unless both are directories. Sets *repeat for a directory seen before
 * with an entry of its own. */
static int place(sbx_arc *a, const sbx_arc_raw *raw, const char *path, uint8_t type,
                 uint32_t *idx, bool *repeat)
{
	uint32_t at = 0;
	int r;

	*repeat = false;
	for (const char *p = path; *p;) {
		size_t n = strcspn(p, "/");
		bool last = p[n] == '\0';
		uint32_t child = tree_find(&a->tree, at, p, n);
		uint8_t had = child ? a->tree.nodes[child].type : NODE_ROOT;
		bool had_dir = had == NODE_DIR || had == NODE_IMPLICIT_DIR;
		if (!last && child && !had_dir)
			return sbx_arc_fail(a, raw->name, raw->name_len, "lies below '%.*s', which "
			                    "is %s in the archive", (int)(p + n - path), path,
			                    node_kind(had));
		if (last && child) {
			if (type != NODE_DIR || !had_dir)
				return sbx_arc_fail(a, raw->name, raw->name_len, "the path appears "
				                    "twice in the archive");
			*repeat = had == NODE_DIR;
			a->tree.nodes[child].type = NODE_DIR;
			*idx = child;
			return 0;
		}
		if (!child && (r = tree_add(&a->tree, at, p, n, last ? type : NODE_IMPLICIT_DIR,
		                            &child)) < 0)
			return r;
		at = child;
		p += n + !last;
	}
	*idx = at;
	return 0;
}

/* A hard link's target: an earlier regular file of this archive. */
static int check_hardlink(sbx_arc *a, const sbx_arc_raw *raw, char **target, uint64_t *size)
{
	uint32_t idx;
	int r;

	*target = NULL;
	if (!raw->link || raw->link_len == 0)
		return sbx_arc_fail(a, raw->name, raw->name_len, "a hard link with an empty "
		                    "target");
	r = normalize_name(a, raw->link, raw->link_len, target);
	if (r == -SBX_ENOMEM)
		return r;
	if (r < 0)
		return sbx_arc_fail(a, raw->name, raw->name_len, "the hard link target is not a "
		                    "valid name in the archive");
	idx = **target ? tree_lookup(&a->tree, *target) : 0;
	if (!idx || a->tree.nodes[idx].type != NODE_FILE) {
		free(SBX_TAKE_PTR(*target));
		return sbx_arc_fail(a, raw->name, raw->name_len, "a hard link to something that is "
		                    "not an earlier file of the archive");
	}
	*size = a->tree.nodes[idx].size;
	return sbx_arc_admit(a, raw->name, raw->name_len, *size);
}

static uint8_t node_type_of(int entry_type)
{
	switch (entry_type) {
	case SBX_ENTRY_DIR:
		return NODE_DIR;
	case SBX_ENTRY_SYMLINK:
		return NODE_SYMLINK;
	default:
		return NODE_FILE;
	}
}

int sbx_arc_emit(sbx_arc *a, const sbx_arc_raw *raw)
{
	_cleanup_free_ char *path = NULL, *link = NULL;
	sbx_archive_entry e = { 0 };
	uint64_t size = raw->size;
	uint32_t idx = 0;
	bool repeat;
	int r;

	if (++a->entries > a->lim.max_entries)
		return sbx_arc_fail(a, NULL, 0, "the archive has more than %zu entries",
		                    a->lim.max_entries);
	if ((r = normalize_name(a, raw->name, raw->name_len, &path)) < 0)
		return r;
	if (raw->type == SBX_ENTRY_OTHER && !(a->lim.flags & SBX_ARCHIVE_AS_STORED))
		return sbx_arc_fail(a, raw->name, raw->name_len, "is %s; only files, directories "
		                    "and links are allowed", raw->other ? raw->other : "of an "
		                    "unsupported kind");
	if (!*path) {
		if (raw->type == SBX_ENTRY_DIR)
			return 0;       /* "./": the root itself */
		return sbx_arc_fail(a, raw->name, raw->name_len, "names the archive's root");
	}
	if (raw->type == SBX_ENTRY_SYMLINK)
		r = check_symlink(a, raw, path, &link);
	else if (raw->type == SBX_ENTRY_HARDLINK)
		r = check_hardlink(a, raw, &link, &size);
	if (r < 0)
		return r;
	if ((r = place(a, raw, path, node_type_of(raw->type), &idx, &repeat)) < 0)
		return r;
	if (repeat)
		return 0;
	if (raw->type == SBX_ENTRY_FILE)
		a->tree.nodes[idx].size = raw->size;

	e.path = path;
	e.type = raw->type == SBX_ENTRY_OTHER ? SBX_ENTRY_SPECIAL : raw->type;
	e.mode = raw->mode & 0777;
	e.data = raw->type == SBX_ENTRY_FILE ? raw->data : NULL;
	e.size = raw->type == SBX_ENTRY_FILE || raw->type == SBX_ENTRY_HARDLINK ? (size_t)size : 0;
	e.link = link;
	e.mtime = raw->mtime;
	if (e.type == SBX_ENTRY_FILE && !e.data)
		e.data = "";
	return a->cb(&e, a->userdata);
}

/* ---------------------------------------------------------------------------------------
 * Formats and dispatch
 * ------------------------------------------------------------------------------------- */

/* Names as sbx_skill_add_archive takes them. */
static const struct {
	const char *name;
	int format;
} format_names[] = {
	{ "tar", SBX_ARCHIVE_TAR },
	{ "tar.gz", SBX_ARCHIVE_TAR_GZ },
	{ "tar.xz", SBX_ARCHIVE_TAR_XZ },
	{ "tar.zst", SBX_ARCHIVE_TAR_ZST },
	{ "zip", SBX_ARCHIVE_ZIP },
};

/* 7z is refused on purpose: its headers may themselves be compressed and a solid block must
 * be decompressed from its start to reach any file in it, so the per-entry bounds the other
 * formats get (admit a size, then read at most that) do not hold for it. */
#define SEVEN_ZIP_REFUSED "7z archives are not supported (a solid 7z block cannot be read " \
	"within the per-file limits; use tar.xz, tar.zst or zip)"

int sbx_archive_format_from_name(const char *name, const char *what, int *format)
{
	for (size_t i = 0; name && i < sizeof format_names / sizeof format_names[0]; i++)
		if (strcmp(name, format_names[i].name) == 0) {
			*format = format_names[i].format;
			return 0;
		}
	if (name && strcmp(name, "7z") == 0)
		return sbx_fail(-SBX_EINVAL, "%s: %s", what, SEVEN_ZIP_REFUSED);
	return sbx_fail(-SBX_EINVAL, "%s: '%.32s' is not an archive format (use \"tar\", "
	                "\"tar.gz\", \"tar.xz\", \"tar.zst\" or \"zip\")", what,
	                name ? name : "(null)");
}

/* Does the 512-byte block look like a tar header (its checksum adds up)? */
static bool tar_header_ok(const unsigned char *h)
{
	unsigned long sum = 0, stored = 0;
	size_t i = 148;

	for (size_t k = 0; k < 512; k++)
		sum += k >= 148 && k < 156 ? ' ' : h[k];
	while (i < 156 && h[i] == ' ')
		i++;
	if (i == 156 || h[i] < '0' || h[i] > '7')
		return false;
	for (; i < 156 && h[i] >= '0' && h[i] <= '7'; i++)
		stored = stored * 8 + (unsigned long)(h[i] - '0');
	return stored == sum;
}

static bool starts_with(const unsigned char *p, size_t len, const char *magic, size_t n)
{
	return len >= n && memcmp(p, magic, n) == 0;
}

int sbx_archive_detect(const void *data, size_t len, int *format)
{
	const unsigned char *p = data;

	if (len >= 4 && memcmp(p, "PK", 2) == 0 &&
	    (memcmp(p + 2, "\x03\x04", 2) == 0 || memcmp(p + 2, "\x05\x06", 2) == 0))
		*format = SBX_ARCHIVE_ZIP;
	else if (starts_with(p, len, "\x1f\x8b", 2))
		*format = SBX_ARCHIVE_TAR_GZ;
	else if (starts_with(p, len, "\xfd" "7zXZ\0", 6))
		*format = SBX_ARCHIVE_TAR_XZ;
	else if (starts_with(p, len, "\x28\xb5\x2f\xfd", 4))
		*format = SBX_ARCHIVE_TAR_ZST;
	else if (starts_with(p, len, "7z\xbc\xaf\x27\x1c", 6))
		return sbx_fail(-SBX_EINVAL, "format: %s", SEVEN_ZIP_REFUSED);
	else if (len >= 512 && tar_header_ok(p))
		*format = SBX_ARCHIVE_TAR;
	else
		return sbx_fail(-SBX_EINVAL, "format: the data is not a tar, tar.gz, tar.xz, "
		                "tar.zst or zip archive");
	return 0;
}

int sbx_archive_iterate(const void *data, size_t len, int format,
                        const sbx_archive_limits *limits, sbx_archive_cb cb, void *userdata)
{
	sbx_arc a = { *limits, "archive entry", cb, userdata, 0, 0, { 0 } };
	int r;

	if (!data && len)
		return sbx_fail(-SBX_EINVAL, "archive: no data");
	r = sbx_arc_read_libarchive(&a, data ? data : "", len, format);
	tree_free(&a.tree);
	return r;
}

int sbx_archive_iterate_dir(int dirfd, const sbx_archive_limits *limits, sbx_archive_cb cb,
                            void *userdata)
{
	sbx_arc a = { *limits, "file", cb, userdata, 0, 0, { 0 } };
	int r = sbx_arc_walk_dir(&a, dirfd);

	tree_free(&a.tree);
	return r;
}
