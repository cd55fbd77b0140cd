/* Skills and context offload through the public API, on the backend SBX_TEST_BACKEND names
 * (tests/meson.build registers it for local and ns).
 *
 *  - skills from a host folder and from tar, tar.gz, tar.xz, tar.zst and zip archives (flat,
 *    or in one top-level folder), seen and usable by commands inside; the JSON listing; removal by
 *    name; duplicate names; dir clashes;
 *  - hostile folders and archives (made here with tar and python's tarfile and zipfile) are
 *    refused with the entry named, and nothing is left in the workspace;
 *  - offload: context lines, data blocks moved to data/, tool results never overwritten,
 *    content-addressed data, ids checked, and appends from several threads and processes
 *    that never interleave. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <agentsbx/agentsbx.h>
#include "backend_support.h"
#include "support.h"

static char *workdir;
static char *src;           /* host folder for skills and archives to add */
static sbx_workspace *ws;

static void setup(void)
{
	workdir = bt_mkdtemp();
	src = bt_mkdtemp();
	ws = bt_open_ok(workdir, NULL);
}

static void teardown(void)
{
	bt_close_case_workspace(&ws);
}

/* ---------------------------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------------------------- */

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...)
{
	va_list ap;
	char *cmd = NULL;

	va_start(ap, fmt);
	ck_assert_int_ge(vasprintf(&cmd, fmt, ap), 0);
	va_end(ap);
	ck_assert_msg(system(cmd) == 0, "command failed: %s", cmd);
	free(cmd);
}

/* A skill folder at src/<rel>: SKILL.md, an executable script, a doc and a link to it. */
static void make_skill(const char *rel, const char *name, const char *description)
{
	sh("mkdir -p '%s/%s/scripts' '%s/%s/docs'", src, rel, src, rel);
	char *dir = bt_fmt("%s/%s", src, rel);
	char *md = bt_fmt("---\nname: %s\ndescription: %s\n---\n# %s\n\nRun scripts/run.sh.\n",
	                  name, description, name);
	test_put_file(dir, "SKILL.md", md, 0644);
	test_put_file(dir, "scripts/run.sh", "#!/bin/sh\necho ran $1\n", 0755);
	test_put_file(dir, "docs/ref.md", "reference text\n", 0644);
	sh("ln -s docs/ref.md '%s/link'", dir);
	free(md);
	free(dir);
}

static char *host_bytes(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;

	ck_assert_msg(fd >= 0, "open %s: %s", path, strerror(errno));
	ck_assert_int_eq(fstat(fd, &st), 0);
	char *data = malloc((size_t)st.st_size + 1);
	ck_assert_ptr_nonnull(data);
	size_t got = 0;
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, data + got, (size_t)st.st_size - got);
		ck_assert_int_gt(n, 0);
		got += (size_t)n;
	}
	close(fd);
	*len = got;
	return data;
}

static char *skills_json(void)
{
	char *json = NULL;

	ck_assert_msg(sbx_skills_json(ws, &json) == 0, "sbx_skills_json: %s", sbx_last_error());
	return json;
}

/* What is in skills/ ("" when there is no such folder): names only, sorted. */
static char *skills_folder(void)
{
	char *json = NULL;
	int r = sbx_file_list(ws, "skills", &json);

	if (r == -SBX_ENOENT)
		return strdup("");
	ck_assert_msg(r == 0, "list skills: %s", sbx_last_error());
	return json;
}

/* The folder is as it was: no staging or removal leftovers, nothing added. */
static void assert_nothing_left(const char *before)
{
	char *now = skills_folder();

	if (strcmp(before, "") == 0 && strcmp(now, "[]") == 0) {
		free(now);
		return;
	}
	ck_assert_str_eq(now, before);
	free(now);
}

static char *run_inside(const char *cmd)
{
	char *full = bt_fmt("cd '%s' && %s", sbx_workspace_root(ws), cmd);
	char *out = bt_shell_out(ws, full);

	free(full);
	return out;
}

/* ---------------------------------------------------------------------------------------
 * Adding from a folder
 * ------------------------------------------------------------------------------------- */

START_TEST(add_from_folder)
{
	char *name = NULL;

	make_skill("pdf", "PDF Tools", "Work with PDF files.");
	ck_assert_msg(sbx_skill_add(ws, test_path_at(src, "pdf"), &name) == 0, "%s",
	              sbx_last_error());
	ck_assert_str_eq(name, "PDF Tools");
	sbx_free(name);

	char *json = skills_json();
	ck_assert_str_eq(json, "[{\"name\":\"PDF Tools\",\"description\":\"Work with PDF files.\","
	                 "\"dir\":\"skills/PDF_Tools\",\"trusted\":true}]");
	sbx_free(json);
	/* Commands inside see it: the script runs, the link leads to the doc. */
	char *out = run_inside("cd skills/PDF_Tools && scripts/run.sh x && cat link && "
	                       "readlink link && head -2 SKILL.md");
	ck_assert_str_eq(out, "ran x\nreference text\ndocs/ref.md\n---\nname: PDF Tools\n");
	free(out);
	/* name_out may be NULL. */
	make_skill("other", "other", "Another.");
	ck_assert_int_eq(sbx_skill_add(ws, test_path_at(src, "other"), NULL), 0);
}
END_TEST

START_TEST(add_folder_refusals)
{
	char *before = skills_folder(), *name = (char *)1;

	ck_assert_int_eq(sbx_skill_add(NULL, src, NULL), -SBX_EINVAL);
	ck_assert_int_eq(sbx_skill_add(ws, NULL, &name), -SBX_EINVAL);
	ck_assert_ptr_null(name);
	ck_assert_int_eq(sbx_skill_add(ws, test_path_at(src, "missing"), NULL), -SBX_ENOENT);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "host_path"));
	test_put_file(src, "file", "x", 0644);
	ck_assert_int_eq(sbx_skill_add(ws, test_path_at(src, "file"), NULL), -SBX_ENOTDIR);
	/* No SKILL.md; SKILL.md without a description; SKILL.md a symlink. */
	sh("mkdir '%s/empty'", src);
	ck_assert_int_eq(sbx_skill_add(ws, test_path_at(src, "empty"), NULL), -SBX_EINVAL);
	ck_assert_str_eq(sbx_last_error(), "sbx_skill_add: the folder has no SKILL.md");
	make_skill("nodesc", "x", "y");
	test_put_file(test_path_at(src, "nodesc"), "SKILL.md", "---\nname: x\n---\n", 0644);
	ck_assert_int_eq(sbx_skill_add(ws, test_path_at(src, "nodesc"), NULL), -SBX_EINVAL);
	ck_assert_str_eq(sbx_last_error(), "sbx_skill_add: SKILL.md: the front matter has no "
	                 "'description'");
	make_skill("mdlink", "x", "y");
	sh("cd '%s/mdlink' && mv SKILL.md real.md && ln -s real.md SKILL.md", src);
	ck_assert_int_eq(sbx_skill_add(ws, test_path_at(src, "mdlink"), NULL), -SBX_EINVAL);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "SKILL.md must be a regular file"));
	/* Links out of the folder, a FIFO. */
	make_skill("out", "out", "Links out.");
	sh("ln -s /etc/passwd '%s/out/docs/passwd'", src);
	ck_assert_int_eq(sbx_skill_add(ws, test_path_at(src, "out"), NULL), -SBX_EINVAL);
	ck_assert_str_eq(sbx_last_error(), "sbx_skill_add: file 'docs/passwd': the symlink to "
	                 "'/etc/passwd' points outside the archive (targets must be relative, with "
	                 "'..' only at the start)");
	sh("rm '%s/out/docs/passwd' && ln -s ../../pdf '%s/out/docs/up'", src, src);
	ck_assert_int_eq(sbx_skill_add(ws, test_path_at(src, "out"), NULL), -SBX_EINVAL);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "'docs/up'"));
	sh("rm '%s/out/docs/up' && mkfifo '%s/out/pipe'", src, src);
	ck_assert_int_eq(sbx_skill_add(ws, test_path_at(src, "out"), NULL), -SBX_EINVAL);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "file 'pipe': is a FIFO"));
	assert_nothing_left(before);
	free(before);
}
END_TEST

/* ---------------------------------------------------------------------------------------
 * Adding from archives
 * ------------------------------------------------------------------------------------- */

static const char zip_script[] =
	"import os, sys, stat, zipfile\n"
	"src, out = sys.argv[1], sys.argv[2]  # src: '.' or one folder, relative\n"
	"with zipfile.ZipFile(out, 'w', zipfile.ZIP_DEFLATED) as z:\n"
	"    for root, dirs, files in os.walk(src):\n"
	"        for n in sorted(dirs + files):\n"
	"            p = os.path.join(root, n)\n"
	"            rel = os.path.normpath(p)\n"
	"            if os.path.islink(p):\n"
	"                i = zipfile.ZipInfo(rel)\n"
	"                i.create_system = 3\n"
	"                i.external_attr = (stat.S_IFLNK | 0o777) << 16\n"
	"                z.writestr(i, os.readlink(p))\n"
	"            else:\n"
	"                z.write(p, rel)\n";

/* Makes src/<file> from the folder src/<dir> (its contents, or the folder itself when
 * `folder`), in format "tar", "tar.gz", "tar.xz", "tar.zst" or "zip". */
static char *make_archive(const char *dir, const char *format, bool folder, size_t *len)
{
	char *file = bt_fmt("%s/%s.%s", src, dir, format);
	const char *what = folder ? dir : ".";
	const char *from = folder ? src : test_path_at(src, dir);

	if (strcmp(format, "zip") == 0) {
		test_put_file(src, "zip.py", zip_script, 0644);
		sh("cd '%s' && python3 '%s/zip.py' '%s' '%s'", from, src, what, file);
	} else {
		const char *how = strcmp(format, "tar.gz") == 0 ? "-czf" :
		                  strcmp(format, "tar.xz") == 0 ? "-cJf" :
		                  strcmp(format, "tar.zst") == 0 ? "--zstd -cf" : "-cf";
		sh("tar -C '%s' %s '%s' '%s'", from, how, file, what);
	}
	char *data = host_bytes(file, len);
	free(file);
	return data;
}

START_TEST(add_from_archives)
{
	static const char *const formats[] = { "tar", "tar.gz", "zip", "tar.xz", "tar.zst" };

	/* Each format, flat and in a folder, with the format named and told from the bytes. */
	for (int k = 0; k < 20; k++) {
		const char *format = formats[k / 4];
		bool folder = k % 4 >= 2, named = k % 2;
		char *dir = bt_fmt("s%d", k), *name = bt_fmt("skill %d", k), *got = NULL;
		size_t len;

		make_skill(dir, name, "From an archive.");
		char *data = make_archive(dir, format, folder, &len);
		int r = sbx_skill_add_archive(ws, data, len, named ? format : NULL, &got);
		ck_assert_msg(r == 0, "%s %s %s: %s", format, folder ? "folder" : "flat",
		              named ? "named" : "detected", sbx_last_error());
		ck_assert_str_eq(got, name);
		char *cmd = bt_fmt("cd skills/skill_%d && scripts/run.sh %d && cat link", k, k);
		char *out = run_inside(cmd);
		char *want = bt_fmt("ran %d\nreference text\n", k);
		ck_assert_str_eq(out, want);
		free(want);
		free(out);
		free(cmd);
		sbx_free(got);
		free(data);
		free(dir);
		free(name);
	}
	char *json = skills_json();
	ck_assert_ptr_nonnull(strstr(json, "{\"name\":\"skill 19\",\"description\":\"From an "
	                             "archive.\",\"dir\":\"skills/skill_19\",\"trusted\":true}"));
	sbx_free(json);
	char *folder = skills_folder();
	ck_assert_ptr_null(strstr(folder, ".staging"));
	free(folder);
}
END_TEST

START_TEST(archive_argument_checks)
{
	size_t len;
	char *data;

	make_skill("a", "a", "b");
	data = make_archive("a", "tar", false, &len);
	ck_assert_int_eq(sbx_skill_add_archive(NULL, data, len, NULL, NULL), -SBX_EINVAL);
	ck_assert_int_eq(sbx_skill_add_archive(ws, NULL, 0, NULL, NULL), -SBX_EINVAL);
	ck_assert_int_eq(sbx_skill_add_archive(ws, data, len, "rar", NULL), -SBX_EINVAL);
	ck_assert_str_eq(sbx_last_error(), "sbx_skill_add_archive: format: 'rar' is not an archive "
	                 "format (use \"tar\", \"tar.gz\", \"tar.xz\", \"tar.zst\" or \"zip\")");
	ck_assert_int_eq(sbx_skill_add_archive(ws, "junk", 4, NULL, NULL), -SBX_EINVAL);
	ck_assert_int_eq(sbx_skill_add_archive(ws, data, len, "zip", NULL), -SBX_EINVAL);
	/* A truncated archive. */
	ck_assert_int_eq(sbx_skill_add_archive(ws, data, 1500, "tar", NULL), -SBX_EINVAL);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "truncated"));
	free(data);
	/* Two top-level folders: no SKILL.md where one is looked for. */
	make_skill("two/x", "x", "y");
	make_skill("two/y", "y", "z");
	data = make_archive("two", "tar", false, &len);
	ck_assert_int_eq(sbx_skill_add_archive(ws, data, len, NULL, NULL), -SBX_EINVAL);
	ck_assert_str_eq(sbx_last_error(), "sbx_skill_add_archive: the archive has no SKILL.md at "
	                 "its top or inside a single top-level folder");
	free(data);
	assert_nothing_left("");
}
END_TEST

/* Hostile archives made with python's tarfile and zipfile, which write what they are told. */
static const char hostile_script[] =
	"import io, sys, tarfile, zipfile, gzip\n"
	"out = sys.argv[1]\n"
	"MD = b'---\\nname: evil\\ndescription: d\\n---\\n'\n"
	"def tar(name, entries, fmt=tarfile.GNU_FORMAT, mode='w'):\n"
	"    with tarfile.open(f'{out}/{name}', mode, format=fmt, encoding='utf-8',\n"
	"                      errors='surrogateescape') as t:\n"
	"        i = tarfile.TarInfo('SKILL.md'); i.size = len(MD); t.addfile(i, io.BytesIO(MD))\n"
	"        for e in entries:\n"
	"            i = tarfile.TarInfo(e['name']); i.type = e.get('type', tarfile.REGTYPE)\n"
	"            i.linkname = e.get('link', ''); data = e.get('data', b'')\n"
	"            i.size = len(data) if i.type == tarfile.REGTYPE else 0\n"
	"            t.addfile(i, io.BytesIO(data) if i.type == tarfile.REGTYPE else None)\n"
	"tar('dotdot.tar', [{'name': '../escape', 'data': b'x'}])\n"
	"tar('deep-dotdot.tar', [{'name': 'a/../../escape', 'data': b'x'}])\n"
	"tar('absolute.tar', [{'name': '/etc/passwd', 'data': b'x'}])\n"
	"tar('link-root.tar', [{'name': 'root', 'type': tarfile.SYMTYPE, 'link': '/'}])\n"
	"tar('link-up.tar', [{'name': 'up', 'type': tarfile.SYMTYPE, 'link': '../..'}])\n"
	"tar('through-link.tar', [{'name': 'sub', 'type': tarfile.SYMTYPE, 'link': '.'},\n"
	"                         {'name': 'sub/x', 'data': b'x'}])\n"
	"tar('device.tar', [{'name': 'tty', 'type': tarfile.CHRTYPE}])\n"
	"tar('fifo.tar', [{'name': 'pipe', 'type': tarfile.FIFOTYPE}])\n"
	"tar('hardlink-out.tar',\n"
	"    [{'name': 'h', 'type': tarfile.LNKTYPE, 'link': '../etc/shadow'}])\n"
	"tar('not-utf8.tar', [{'name': 'bad\\udcff', 'data': b'x'}])\n"
	"with zipfile.ZipFile(f'{out}/zip-dotdot.zip', 'w') as z:\n"
	"    z.writestr('SKILL.md', MD); z.writestr('../escape', b'x')\n"
	"class Zeros(io.RawIOBase):\n"
	"    def __init__(self, n): self.n = n\n"
	"    def readable(self): return True\n"
	"    def readinto(self, b):\n"
	"        k = min(len(b), self.n); b[:k] = bytes(k); self.n -= k; return k\n"
	"with zipfile.ZipFile(f'{out}/bomb.zip', 'w', zipfile.ZIP_DEFLATED,\n"
	"                     compresslevel=1) as z:\n"
	"    z.writestr('SKILL.md', MD)\n"
	"    for k in range(5):\n"
	"        with z.open(f'zeros{k}', 'w') as f:\n"
	"            for _ in range(60): f.write(bytes(1 << 20))\n"
	"with tarfile.open(f'{out}/bomb.tar.gz', 'w:gz', compresslevel=1) as t:\n"
	"    i = tarfile.TarInfo('SKILL.md'); i.size = len(MD); t.addfile(i, io.BytesIO(MD))\n"
	"    i = tarfile.TarInfo('zeros'); i.size = 300 << 20; t.addfile(i, Zeros(i.size))\n";

START_TEST(hostile_archives_refused)
{
	static const struct {
		const char *file, *message;
	} cases[] = {
		{ "dotdot.tar", "archive entry '../escape': '..' is not allowed in names" },
		{ "deep-dotdot.tar", "archive entry 'a/../../escape': '..' is not allowed" },
		{ "absolute.tar", "archive entry '/etc/passwd': absolute names are not allowed" },
		{ "link-root.tar", "archive entry 'root': the symlink to '/' points outside" },
		{ "link-up.tar", "archive entry 'up': the symlink to '../..' points outside" },
		{ "through-link.tar", "archive entry 'sub/x': lies below 'sub', which is a "
		  "symlink" },
		{ "device.tar", "archive entry 'tty': is a character device" },
		{ "fifo.tar", "archive entry 'pipe': is a FIFO" },
		{ "hardlink-out.tar", "archive entry 'h': the hard link target is not a valid "
		  "name" },
		{ "not-utf8.tar", "archive entry 'bad\\xff': the name is not valid UTF-8" },
		{ "zip-dotdot.zip", "archive entry '../escape': '..' is not allowed" },
		{ "bomb.zip", "archive entry 'zeros4': the archive expands beyond the limit of "
		  "268435456 bytes" },
		{ "bomb.tar.gz", "archive entry 'zeros': 314572800 bytes, more than the limit of "
		  "67108864 for one file" },
	};
	char *before = skills_folder();

	sh("python3 - '%s' <<'EOF'\n%sEOF", src, hostile_script);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		size_t len;
		char *data = host_bytes(test_path_at(src, cases[i].file), &len);
		int r = sbx_skill_add_archive(ws, data, len, NULL, NULL);
		ck_assert_msg(r == -SBX_EINVAL, "%s: got %d (%s)", cases[i].file, r,
		              sbx_last_error());
		ck_assert_msg(strstr(sbx_last_error(), cases[i].message), "%s: '%s' lacks '%s'",
		              cases[i].file, sbx_last_error(), cases[i].message);
		ck_assert_msg(strncmp(sbx_last_error(), "sbx_skill_add_archive: ", 23) == 0, "%s",
		              sbx_last_error());
		free(data);
		assert_nothing_left(before);
	}
	ck_assert(!test_exists(test_path_at(workdir, "escape")));
	ck_assert(!test_exists(test_path_at(workdir, "../escape")));
	free(before);
}
END_TEST

/* ---------------------------------------------------------------------------------------
 * Listing, removing, names
 * ------------------------------------------------------------------------------------- */

START_TEST(list_skips_what_is_no_skill)
{
	sbx_stat st = { .size = sizeof st };

	make_skill("b", "beta", "Second.");
	make_skill("a", "alpha", "First.");
	ck_assert_int_eq(sbx_skill_add(ws, test_path_at(src, "b"), NULL), 0);
	ck_assert_int_eq(sbx_skill_add(ws, test_path_at(src, "a"), NULL), 0);
	/* A folder without SKILL.md, one with a broken one, a file, a hidden skill. */
	ck_assert_int_eq(sbx_file_mkdir(ws, "skills/empty", 0), 0);
	bt_put(ws, "skills/broken/SKILL.md", "no front matter", 0);
	bt_put(ws, "skills/notes.txt", "x", 0);
	bt_put(ws, "skills/.hidden/SKILL.md", "---\nname: hidden\ndescription: d\n---\n", 0);
	char *json = skills_json();
	ck_assert_str_eq(json, "[{\"name\":\"alpha\",\"description\":\"First.\",\"dir\":"
	                 "\"skills/alpha\",\"trusted\":true},{\"name\":\"beta\",\"description\":\"Second.\","
	                 "\"dir\":\"skills/beta\",\"trusted\":true}]");
	sbx_free(json);

	/* Removal is by name, not by dir. */
	ck_assert_int_eq(sbx_skill_remove(ws, "alpha"), 0);
	ck_assert_int_eq(sbx_file_stat(ws, "skills/alpha", &st), -SBX_ENOENT);
	ck_assert_int_eq(sbx_skill_remove(ws, "alpha"), -SBX_ENOENT);
	ck_assert_str_eq(sbx_last_error(), "sbx_skill_remove: no skill named 'alpha' (there is: "
	                 "'beta')");
	ck_assert_int_eq(sbx_skill_remove(ws, "skills/beta"), -SBX_ENOENT);
	ck_assert_int_eq(sbx_skill_remove(ws, NULL), -SBX_EINVAL);
	json = skills_json();
	ck_assert_str_eq(json, "[{\"name\":\"beta\",\"description\":\"Second.\",\"dir\":"
	                 "\"skills/beta\",\"trusted\":true}]");
	sbx_free(json);
	ck_assert_int_eq(sbx_skill_remove(ws, "beta"), 0);
	json = skills_json();
	ck_assert_str_eq(json, "[]");
	sbx_free(json);
	char *folder = skills_folder();
	ck_assert_ptr_null(strstr(folder, ".removing"));
	free(folder);

	ck_assert_int_eq(sbx_skills_json(NULL, &json), -SBX_EINVAL);
	ck_assert_int_eq(sbx_skills_json(ws, NULL), -SBX_EINVAL);
}
END_TEST

START_TEST(no_skills_folder_is_no_skills)
{
	char *json = skills_json();

	ck_assert_str_eq(json, "[]");
	sbx_free(json);
	ck_assert_int_eq(sbx_skill_remove(ws, "x"), -SBX_ENOENT);
	ck_assert_str_eq(sbx_last_error(), "sbx_skill_remove: no skill named 'x' (there are: "
	                 "none)");
}
END_TEST

START_TEST(duplicate_names_and_dir_clashes)
{
	char *name = NULL;

	make_skill("one", "a b", "Spaces.");
	make_skill("two", "a_b", "Underscore.");
	make_skill("three", "a/b", "Slash.");
	ck_assert_int_eq(sbx_skill_add(ws, test_path_at(src, "one"), NULL), 0);
	ck_assert_int_eq(sbx_skill_add(ws, test_path_at(src, "one"), &name), -SBX_EEXIST);
	ck_assert_ptr_null(name);
	ck_assert_str_eq(sbx_last_error(), "sbx_skill_add: a skill named 'a b' is already there "
	                 "(skills/a_b)");
	ck_assert_int_eq(sbx_skill_add(ws, test_path_at(src, "two"), NULL), 0);
	ck_assert_int_eq(sbx_skill_add(ws, test_path_at(src, "three"), NULL), -SBX_EINVAL);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "key 'name': must not contain '/'"));
	/* A folder someone else made takes the name too. */
	bt_put(ws, "skills/x_y/readme", "not a skill", 0);
	make_skill("four", "x.y", "Dot.");
	ck_assert_int_eq(sbx_skill_add(ws, test_path_at(src, "four"), NULL), 0);
	char *json = skills_json();
	ck_assert_str_eq(json, "[{\"name\":\"a b\",\"description\":\"Spaces.\",\"dir\":"
	                 "\"skills/a_b\",\"trusted\":true},{\"name\":\"a_b\",\"description\":\"Underscore.\","
	                 "\"dir\":\"skills/a_b_1\",\"trusted\":true},{\"name\":\"x.y\",\"description\":\"Dot.\","
	                 "\"dir\":\"skills/x_y_1\",\"trusted\":true}]");
	sbx_free(json);
}
END_TEST

/* ---------------------------------------------------------------------------------------
 * Offload
 * ------------------------------------------------------------------------------------- */

static char *read_ws(const char *path)
{
	/* Static: see test_tools.c's call_in (a gcc 12 -Wdangling-pointer false positive). */
	static char *data;
	size_t len;

	data = NULL;
	ck_assert_msg(sbx_file_read(ws, path, &data, &len) == 0, "read %s: %s", path,
	              sbx_last_error());
	return data;
}

START_TEST(offload_context_lines)
{
	char *path = NULL;

	ck_assert_int_eq(sbx_offload_context(ws, "s1", "{ \"role\" : \"user\", \"content\": "
	                                     "\"hi\\nthere\" }", &path), 0);
	ck_assert_str_eq(path, "sessions/s1/context.jsonl");
	sbx_free(path);
	ck_assert_int_eq(sbx_offload_context(ws, "s1", "[{\"role\":\"assistant\",\"n\":1.5},"
	                                     "{\"role\":\"user\",\"content\":[]}]", &path), 0);
	sbx_free(path);
	ck_assert_int_eq(sbx_offload_context(ws, "s1", "[]", &path), 0);
	sbx_free(path);
	char *text = read_ws("sessions/s1/context.jsonl");
	ck_assert_str_eq(text, "{\"role\":\"user\",\"content\":\"hi\\nthere\"}\n"
	                 "{\"role\":\"assistant\",\"n\":1.5}\n"
	                 "{\"role\":\"user\",\"content\":[]}\n");
	sbx_free(text);
	/* Commands inside see the same file. */
	char *out = run_inside("wc -l < sessions/s1/context.jsonl");
	ck_assert_str_eq(out, "3\n");
	free(out);

	/* A last line someone left unfinished: the next one starts on its own line. */
	bt_put(ws, "sessions/s2/context.jsonl", "{\"partial\":", 0);
	ck_assert_int_eq(sbx_offload_context(ws, "s2", "{\"a\":1}", &path), 0);
	sbx_free(path);
	text = read_ws("sessions/s2/context.jsonl");
	ck_assert_str_eq(text, "{\"partial\":\n{\"a\":1}\n");
	sbx_free(text);
}
END_TEST

START_TEST(offload_context_data_blocks)
{
	char *path = NULL;
	/* "hello" in base64; the second block's data is wrapped as MIME does. */
	const char *msgs =
		"[{\"role\":\"user\",\"content\":["
		"{\"type\":\"text\",\"text\":\"look\"},"
		"{\"type\":\"data\",\"id\":\"d1\",\"source\":{\"type\":\"base64\","
		"\"data\":\"aGVsbG8=\",\"media_type\":\"image/png\"},\"name\":\"a.png\"},"
		"{\"type\":\"data\",\"source\":{\"type\":\"base64\",\"data\":\"aGVs\\r\\nbG8\","
		"\"media_type\":\"application/x-unknown\"}},"
		"{\"type\":\"data\",\"source\":{\"type\":\"url\",\"url\":\"https://x/y.png\","
		"\"media_type\":\"image/png\"}},"
		"{\"type\":\"tool_result\",\"output\":[{\"type\":\"data\",\"source\":{\"type\":"
		"\"base64\",\"data\":\"aGVsbG8=\",\"media_type\":\"image/png\"}}]}]}]";
	const char *sha = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824";

	ck_assert_msg(sbx_offload_context(ws, "s", msgs, &path) == 0, "%s", sbx_last_error());
	sbx_free(path);
	char *text = read_ws("sessions/s/context.jsonl");
	char *want = bt_fmt(
		"{\"role\":\"user\",\"content\":["
		"{\"type\":\"text\",\"text\":\"look\"},"
		"{\"type\":\"data\",\"id\":\"d1\",\"source\":{\"type\":\"url\",\"url\":"
		"\"workspace:///data/%s.png\",\"media_type\":\"image/png\"},\"name\":\"a.png\"},"
		"{\"type\":\"data\",\"source\":{\"type\":\"url\","
		"\"url\":\"workspace:///data/%s.bin\",\"media_type\":\"application/x-unknown\"}},"
		"{\"type\":\"data\",\"source\":{\"type\":\"url\",\"url\":\"https://x/y.png\","
		"\"media_type\":\"image/png\"}},"
		"{\"type\":\"tool_result\",\"output\":[{\"type\":\"data\",\"source\":{\"type\":"
		"\"base64\",\"data\":\"aGVsbG8=\",\"media_type\":\"image/png\"}}]}]}\n", sha, sha);
	ck_assert_str_eq(text, want);
	sbx_free(text);
	free(want);
	char *p = bt_fmt("data/%s.png", sha);
	text = read_ws(p);
	ck_assert_str_eq(text, "hello");
	sbx_free(text);
	free(p);

	/* Bad blocks name the message and the block; the file stays as it was. */
	ck_assert_int_eq(sbx_offload_context(ws, "s", "[{\"content\":[]},{\"content\":[{\"type\":"
	                                     "\"data\",\"source\":{\"type\":\"base64\",\"data\":"
	                                     "\"a$b\",\"media_type\":\"image/png\"}}]}]", &path),
	                 -SBX_EINVAL);
	ck_assert_ptr_null(path);
	ck_assert_str_eq(sbx_last_error(), "sbx_offload_context: messages_json: item 1, content "
	                 "block 0: source.data is not valid base64");
	ck_assert_int_eq(sbx_offload_context(ws, "s", "{\"content\":[{\"type\":\"data\",\"source\":"
	                                     "{\"type\":\"base64\",\"data\":\"aGVsbG8=\","
	                                     "\"media_type\":\"png\"}}]}", &path), -SBX_EINVAL);
	ck_assert_str_eq(sbx_last_error(), "sbx_offload_context: messages_json: content block 0: "
	                 "source.media_type 'png': not a media type (type/subtype, like "
	                 "image/png)");
	ck_assert_int_eq(sbx_offload_context(ws, "s", "{\"content\":[{\"type\":\"data\",\"source\":"
	                                     "{\"type\":\"base64\",\"data\":7}}]}", &path),
	                 -SBX_EINVAL);
	ck_assert_int_eq(sbx_offload_context(ws, "s", "[{},\"text\"]", &path), -SBX_EINVAL);
	ck_assert_str_eq(sbx_last_error(), "sbx_offload_context: messages_json: item 1 is a "
	                 "string, not a message object");
	ck_assert_int_eq(sbx_offload_context(ws, "s", "42", &path), -SBX_EINVAL);
	ck_assert_int_eq(sbx_offload_context(ws, "s", "{\"a\":", &path), -SBX_EINVAL);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "sbx_offload_context: messages_json: "));
	ck_assert_int_eq(sbx_offload_context(ws, "s", NULL, &path), -SBX_EINVAL);
	ck_assert_int_eq(sbx_offload_context(ws, "s", "{}", NULL), -SBX_EINVAL);
	text = read_ws("sessions/s/context.jsonl");
	ck_assert_int_eq((int)strlen(text), (int)strlen(strchr(text, '\n')) + (int)(strchr(text,
	                 '\n') - text));
	ck_assert_ptr_null(strchr(strchr(text, '\n') + 1, '\n'));
	sbx_free(text);
}
END_TEST

START_TEST(offload_tool_results_never_clash)
{
	char *p1 = NULL, *p2 = NULL, *p3 = NULL;

	ck_assert_int_eq(sbx_offload_tool_result(ws, "s", "call_1", "first", 5, &p1), 0);
	ck_assert_int_eq(sbx_offload_tool_result(ws, "s", "call_1", "second", 6, &p2), 0);
	ck_assert_int_eq(sbx_offload_tool_result(ws, "s", "call_1", NULL, 0, &p3), 0);
	ck_assert_str_eq(p1, "sessions/s/tool_result-call_1.txt");
	ck_assert_str_eq(p2, "sessions/s/tool_result-call_1(1).txt");
	ck_assert_str_eq(p3, "sessions/s/tool_result-call_1(2).txt");
	char *t = read_ws(p1);
	ck_assert_str_eq(t, "first");
	sbx_free(t);
	t = read_ws(p2);
	ck_assert_str_eq(t, "second");
	sbx_free(t);
	t = read_ws(p3);
	ck_assert_str_eq(t, "");
	sbx_free(t);
	sbx_free(p1);
	sbx_free(p2);
	sbx_free(p3);
	ck_assert_int_eq(sbx_offload_tool_result(ws, "s", "c", NULL, 3, &p1), -SBX_EINVAL);
	ck_assert_int_eq(sbx_offload_tool_result(ws, "s", "c", "x", 1, NULL), -SBX_EINVAL);
}
END_TEST

START_TEST(offload_data_is_content_addressed)
{
	char *u1 = NULL, *u2 = NULL, *u3 = NULL;
	const char *sha = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824";

	ck_assert_int_eq(sbx_offload_data(ws, "image/jpeg", "hello", 5, &u1), 0);
	ck_assert_int_eq(sbx_offload_data(ws, "IMAGE/JPEG; q=1", "hello", 5, &u2), 0);
	ck_assert_int_eq(sbx_offload_data(ws, "audio/wav", "hello", 5, &u3), 0);
	char *want = bt_fmt("workspace:///data/%s.jpg", sha);
	ck_assert_str_eq(u1, want);
	ck_assert_str_eq(u2, want);
	free(want);
	want = bt_fmt("workspace:///data/%s.wav", sha);
	ck_assert_str_eq(u3, want);
	free(want);
	sbx_free(u1);
	sbx_free(u2);
	sbx_free(u3);
	char *list = NULL;
	ck_assert_int_eq(sbx_file_list(ws, "data", &list), 0);
	ck_assert_int_eq(strstr(strstr(list, ".jpg") + 1, ".jpg") == NULL, 1);
	sbx_free(list);
	/* Empty data has a hash too. */
	ck_assert_int_eq(sbx_offload_data(ws, "text/plain", NULL, 0, &u1), 0);
	ck_assert_str_eq(u1, "workspace:///data/"
	                 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855.txt");
	sbx_free(u1);

	static const char *const bad[] = { "png", "/png", "image/", "image/png/x", "im age/png",
	                                   "image/png\n", "", "image/p\xc3\xa9" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		ck_assert_msg(sbx_offload_data(ws, bad[i], "x", 1, &u1) == -SBX_EINVAL, "%s",
		              bad[i]);
		ck_assert_ptr_null(u1);
		ck_assert_ptr_nonnull(strstr(sbx_last_error(), "sbx_offload_data: media_type"));
	}
	ck_assert_int_eq(sbx_offload_data(ws, NULL, "x", 1, &u1), -SBX_EINVAL);
	ck_assert_int_eq(sbx_offload_data(ws, "a/b", NULL, 1, &u1), -SBX_EINVAL);
	ck_assert_int_eq(sbx_offload_data(ws, "a/b", "x", 1, NULL), -SBX_EINVAL);
	ck_assert_int_eq(sbx_offload_data(NULL, "a/b", "x", 1, &u1), -SBX_EINVAL);
}
END_TEST

START_TEST(offload_ids_checked)
{
	char long_id[130], *p = NULL;
	static const char *const bad[] = { "", ".hidden", "a/b", "..", "a b", "caf\xc3\xa9",
	                                   "a\n" };

	memset(long_id, 'x', 128);
	long_id[128] = '\0';
	ck_assert_int_eq(sbx_offload_context(ws, long_id, "{}", &p), 0);
	sbx_free(p);
	ck_assert_int_eq(sbx_offload_tool_result(ws, "ok-1.2_3", long_id, "x", 1, &p), 0);
	sbx_free(p);
	long_id[128] = 'x';
	long_id[129] = '\0';
	ck_assert_int_eq(sbx_offload_context(ws, long_id, "{}", &p), -SBX_EINVAL);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		ck_assert_int_eq(sbx_offload_context(ws, bad[i], "{}", &p), -SBX_EINVAL);
		ck_assert_ptr_nonnull(strstr(sbx_last_error(), "sbx_offload_context: session_id"));
		ck_assert_int_eq(sbx_offload_tool_result(ws, "s", bad[i], "x", 1, &p), -SBX_EINVAL);
		ck_assert_ptr_nonnull(strstr(sbx_last_error(), "tool_call_id"));
		ck_assert_ptr_null(p);
	}
	ck_assert_int_eq(sbx_offload_context(ws, NULL, "{}", &p), -SBX_EINVAL);
	ck_assert_str_eq(sbx_last_error(), "sbx_offload_context: session_id must not be NULL");
	ck_assert_int_eq(sbx_offload_context(NULL, "s", "{}", &p), -SBX_EINVAL);
}
END_TEST

/* ---- concurrent appends ------------------------------------------------------------ */

#define LINES_PER_WRITER 1000
#define THREADS 4
#define PROCESSES 2
#define PAD 3000    /* lines far beyond PIPE_BUF */

static void append_lines(int writer)
{
	char pad[PAD + 1], *msg = NULL, *path = NULL;

	memset(pad, 'a' + writer, PAD);
	pad[PAD] = '\0';
	for (int i = 0; i < LINES_PER_WRITER; i++) {
		ck_assert_int_ge(asprintf(&msg, "{\"w\":%d,\"i\":%d,\"pad\":\"%s\"}", writer, i,
		                          pad), 0);
		int r = sbx_offload_context(ws, "busy", msg, &path);
		ck_assert_msg(r == 0, "writer %d line %d: %s", writer, i, sbx_last_error());
		sbx_free(path);
		free(msg);
	}
}

static void *thread_main(void *arg)
{
	append_lines((int)(intptr_t)arg);
	return NULL;
}

START_TEST(concurrent_appends_stay_whole)
{
	pid_t kids[PROCESSES];
	pthread_t threads[THREADS];

	/* The processes share the handle's files, not its sandbox: they only append. */
	for (int p = 0; p < PROCESSES; p++) {
		kids[p] = fork();
		ck_assert_int_ge(kids[p], 0);
		if (kids[p] == 0) {
			append_lines(THREADS + p);
			_exit(0);
		}
	}
	for (int t = 0; t < THREADS; t++)
		ck_assert_int_eq(pthread_create(&threads[t], NULL, thread_main,
		                                (void *)(intptr_t)t), 0);
	for (int t = 0; t < THREADS; t++)
		pthread_join(threads[t], NULL);
	for (int p = 0; p < PROCESSES; p++) {
		int status;
		ck_assert_int_eq(waitpid(kids[p], &status, 0), kids[p]);
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		              "writer process %d failed", p);
	}

	char *text = read_ws("sessions/busy/context.jsonl");
	static bool seen[THREADS + PROCESSES][LINES_PER_WRITER];
	int lines = 0;
	char *save = NULL;
	for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save), lines++) {
		int w, i, n = 0;
		ck_assert_msg(sscanf(l, "{\"w\":%d,\"i\":%d,\"pad\":\"%n", &w, &i, &n) == 2 && n,
		              "line %d is broken: %.80s", lines, l);
		ck_assert(w >= 0 && w < THREADS + PROCESSES && i >= 0 && i < LINES_PER_WRITER);
		ck_assert_msg(!seen[w][i], "line w=%d i=%d twice", w, i);
		seen[w][i] = true;
		/* One check per line: each check costs a message to Check's parent process. */
		char own[2] = { (char)('a' + w), '\0' };
		ck_assert_msg(strlen(l) == (size_t)n + PAD + 2 && strspn(l + n, own) == PAD &&
		              strcmp(l + n + PAD, "\"}") == 0, "line w=%d i=%d mixed with another",
		              w, i);
	}
	ck_assert_int_eq(lines, (THREADS + PROCESSES) * LINES_PER_WRITER);
	sbx_free(text);
}
END_TEST

static Suite *skills_suite(void)
{
	Suite *s = suite_create("skills");
	TCase *add = tcase_create("add");
	TCase *list = tcase_create("list");
	TCase *off = tcase_create("offload");

	tcase_add_checked_fixture(add, setup, teardown);
	tcase_set_timeout(add, 300);
	tcase_add_test(add, add_from_folder);
	tcase_add_test(add, add_folder_refusals);
	tcase_add_test(add, add_from_archives);
	tcase_add_test(add, archive_argument_checks);
	tcase_add_test(add, hostile_archives_refused);
	suite_add_tcase(s, add);

	tcase_add_checked_fixture(list, setup, teardown);
	tcase_add_test(list, list_skips_what_is_no_skill);
	tcase_add_test(list, no_skills_folder_is_no_skills);
	tcase_add_test(list, duplicate_names_and_dir_clashes);
	suite_add_tcase(s, list);

	tcase_add_checked_fixture(off, setup, teardown);
	tcase_set_timeout(off, 300);
	tcase_add_test(off, offload_context_lines);
	tcase_add_test(off, offload_context_data_blocks);
	tcase_add_test(off, offload_tool_results_never_clash);
	tcase_add_test(off, offload_data_is_content_addressed);
	tcase_add_test(off, offload_ids_checked);
	tcase_add_test(off, concurrent_appends_stay_whole);
	suite_add_tcase(s, off);
	return s;
}

int main(void)
{
	return bt_main(skills_suite);
}
