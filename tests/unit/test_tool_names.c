/* Unit tests of how the agent tools print names and read them back (tools/text.h,
 * sbx_tool_display_path and sbx_tool_resolve_path): every byte that could make one name look
 * like two or like another is escaped, the printed form always maps back to the one name it
 * came from, and a path the model writes picks the file it means. */
#include <check.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support.h"
#include "tools/text.h"
#include "tools/tool.h"
#include "util/buf.h"

static char *escaped(const char *s, size_t len)
{
	char *e = sbx_tool_escape_name(s, len);

	ck_assert_ptr_nonnull(e);
	return e;
}

#define ESCAPES_TO(raw, want) do { \
	char *e_ = escaped(raw, sizeof raw - 1); \
	ck_assert_str_eq(e_, want); \
	free(e_); \
} while (0)

START_TEST(control_bytes_and_bad_utf8_are_escaped)
{
	ESCAPES_TO("plain name.c", "plain name.c");
	ESCAPES_TO("caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC", "caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC");
	/* The case: a newline and ":1:" would make one Grep line look like two. */
	ESCAPES_TO("a\nb.c:1:x", "a\\nb.c:1:x");
	ESCAPES_TO("t\tr\re", "t\\tr\\re");
	ESCAPES_TO("\x1b[31mred\x7f", "\\x1b[31mred\\x7f");
	ESCAPES_TO("back\\slash", "back\\\\slash");
	/* Bytes that are not UTF-8, a truncated sequence, an overlong one, a surrogate. */
	ESCAPES_TO("bad\xff", "bad\\xff");
	ESCAPES_TO("cut\xE6\x97", "cut\\xe6\\x97");
	ESCAPES_TO("long\xC0\xAF", "long\\xc0\\xaf");
	ESCAPES_TO("sur\xED\xA0\x80", "sur\\xed\\xa0\\x80");
	/* Valid UTF-8 that still bends a listing: NEL (C1), U+2028, RLO, LRI, ALM. */
	ESCAPES_TO("nel\xC2\x85", "nel\\xc2\\x85");
	ESCAPES_TO("ls\xE2\x80\xA8", "ls\\xe2\\x80\\xa8");
	ESCAPES_TO("rlo\xE2\x80\xAEtxt.exe", "rlo\\xe2\\x80\\xaetxt.exe");
	ESCAPES_TO("lri\xE2\x81\xA6", "lri\\xe2\\x81\\xa6");
	ESCAPES_TO("alm\xD8\x9C", "alm\\xd8\\x9c");
	/* Just outside those ranges: printed as they are. */
	ESCAPES_TO("\xC2\xA0\xE2\x80\xA7\xE2\x81\xA5", "\xC2\xA0\xE2\x80\xA7\xE2\x81\xA5");
	ck_assert(!sbx_tool_name_needs_escape("ok", 2));
	ck_assert(sbx_tool_name_needs_escape("a\\b", 3));
	ck_assert(sbx_tool_name_needs_escape("a\0b", 3));
}
END_TEST

/* What the printer gives is one line of valid UTF-8. */
static void assert_printable(const char *e)
{
	for (const unsigned char *p = (const unsigned char *)e; *p; p++)
		ck_assert_msg(*p >= 0x20 && *p != 0x7f, "control byte 0x%02x in %s", *p, e);
	ck_assert(sbx_utf8_valid(e, strlen(e)));
}

static void assert_round_trip(const char *raw, size_t len)
{
	char *e = escaped(raw, len), *back = NULL;
	int r = sbx_tool_unescape_name(e, strlen(e), &back);

	assert_printable(e);
	if (len == strlen(e) && memcmp(e, raw, len) == 0) {
		ck_assert_int_eq(r, 0);   /* nothing escaped: it names only itself */
	} else {
		ck_assert_int_eq(r, 1);
		ck_assert_uint_eq(strlen(back), len);
		ck_assert_mem_eq(back, raw, len);
	}
	free(back);
	free(e);
}

START_TEST(every_name_maps_back_to_itself)
{
	unsigned seed = 4242;
	char raw[64];

	/* Random names of every byte but NUL and '/', which no name holds. */
	for (int round = 0; round < 20000; round++) {
		size_t len = 1 + (size_t)rand_r(&seed) % 20;
		for (size_t i = 0; i < len; i++) {
			do
				raw[i] = (char)(rand_r(&seed) % 256);
			while (raw[i] == '\0' || raw[i] == '/');
		}
		raw[len] = '\0';
		assert_round_trip(raw, len);
	}
	assert_round_trip("a\\nb", 4);
	assert_round_trip("\\\\", 2);
}
END_TEST

static void unescape_refused(const char *s)
{
	char *out = NULL;

	ck_assert_msg(sbx_tool_unescape_name(s, strlen(s), &out) == 0, "%s unescaped", s);
	ck_assert_ptr_null(out);
}

/* Only the printer's own form is read back: no escape spells '.', '/' or NUL (that could
 * make "..", a new component, or a cut), and no second spelling of a name exists. */
START_TEST(only_the_printed_form_is_read_back)
{
	char *out = NULL;

	unescape_refused("no escapes");
	unescape_refused("\\x2e\\x2e");
	unescape_refused("a\\x2fb");
	unescape_refused("nul\\x00");
	unescape_refused("\\x41");                 /* 'A' prints as itself */
	unescape_refused("\\xc3\\xa9");            /* so does 'é' */
	unescape_refused("\\xFF");                 /* the printer writes lower case */
	unescape_refused("\\x0a");                 /* a newline prints as \n */
	unescape_refused("trailing\\");
	unescape_refused("\\q");
	unescape_refused("\\x4");
	ck_assert_int_eq(sbx_tool_unescape_name("d\\nx/f\\xff", 10, &out), 1);
	ck_assert_str_eq(out, "d\nx/f\xff");
	free(out);
}
END_TEST

START_TEST(display_paths_escape_every_name)
{
	sbx_tool_ctx ctx = { .root_view = "/workspace", .root_fd = -1 };
	char *p;

	p = sbx_tool_display_path(&ctx, "dir\n/x\xff");
	ck_assert_str_eq(p, "/workspace/dir\\n/x\\xff");
	free(p);
	p = sbx_tool_display_path(&ctx, "");
	ck_assert_str_eq(p, "/workspace");
	free(p);
	ctx.root_view = "/";
	p = sbx_tool_display_path(&ctx, "a\tb");
	ck_assert_str_eq(p, "/a\\tb");
	free(p);
	ctx.root_view = "/host/odd\ndir/";
	p = sbx_tool_display_path(&ctx, "f");
	ck_assert_str_eq(p, "/host/odd\\ndir/f");
	free(p);
}
END_TEST

/* ---- resolving what the model wrote ---- */

static char *tmp;
static int root_fd = -1;
static sbx_tool_ctx ctx;

static void setup(void)
{
	tmp = test_mkdtemp();
	root_fd = open(tmp, O_PATH | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(root_fd, 0);
	ctx = (sbx_tool_ctx){ .session_id = "default", .root_view = "/workspace",
	                      .root_fd = root_fd };
}

static void teardown(void)
{
	close(root_fd);
	test_rm_rf(tmp);
	free(tmp);
}

/* The root-relative path the tools take for what the model wrote (a tool error: NULL). */
static char *resolved(const char *path)
{
	sbx_tool_out out = { .ok = true };
	char *rel = NULL;
	int r = sbx_tool_resolve_path(&ctx, "file_path", path, &rel, &out);

	ck_assert_int_ge(r, 0);
	sbx_buf_free(&out.text);
	sbx_buf_free(&out.meta);
	return r == 0 ? rel : NULL;
}

#define RESOLVES_TO(path, want) do { \
	char *r_ = resolved(path); \
	ck_assert_msg(r_ && strcmp(r_, want) == 0, "%s -> %s", path, r_ ? r_ : "(error)"); \
	free(r_); \
} while (0)

START_TEST(a_printed_name_leads_to_its_file)
{
	test_put_file(tmp, "a\nb", "lf\n", 0644);
	test_put_file(tmp, "bad\xff", "ff\n", 0644);
	ck_assert_int_eq(mkdir(test_path_at(tmp, "d\tx"), 0755), 0);
	RESOLVES_TO("a\\nb", "a\nb");
	RESOLVES_TO("/workspace/a\\nb", "a\nb");
	RESOLVES_TO("bad\\xff", "bad\xff");
	RESOLVES_TO("/workspace/bad\\xff", "bad\xff");
	/* A new file in a directory only the escaped reading reaches goes there. */
	RESOLVES_TO("d\\tx/new.txt", "d\tx/new.txt");
	/* A new name that no directory explains is taken as written. */
	RESOLVES_TO("fresh\\nname", "fresh\\nname");
	/* Not an escaped form at all: as written. */
	RESOLVES_TO("C:\\dir", "C:\\dir");
	RESOLVES_TO("plain", "plain");
	/* The escaped reading never gets around the root. */
	ck_assert_ptr_null(resolved("/elsewhere/a\\nb"));
	ck_assert_ptr_null(resolved("../a\\nb"));
}
END_TEST

/* Two files whose printed names differ only by the escaping: "a\nb" (a newline) prints as
 * a\nb, "a\\nb" (a backslash and an n) as a\\nb. Each printed form leads to its own file. */
START_TEST(look_alike_names_stay_apart)
{
	test_put_file(tmp, "a\nb", "newline\n", 0644);
	test_put_file(tmp, "a\\nb", "backslash\n", 0644);
	RESOLVES_TO("a\\nb", "a\nb");
	RESOLVES_TO("a\\\\nb", "a\\nb");
	/* With only the literal one there, its name as written also reaches it. */
	ck_assert_int_eq(unlink(test_path_at(tmp, "a\nb")), 0);
	RESOLVES_TO("a\\nb", "a\\nb");
}
END_TEST

static Suite *names_suite(void)
{
	Suite *s = suite_create("tool_names");
	TCase *t = tcase_create("escaping");
	TCase *r = tcase_create("resolving");

	tcase_add_test(t, control_bytes_and_bad_utf8_are_escaped);
	tcase_add_test(t, every_name_maps_back_to_itself);
	tcase_add_test(t, only_the_printed_form_is_read_back);
	tcase_add_test(t, display_paths_escape_every_name);
	suite_add_tcase(s, t);
	tcase_add_checked_fixture(r, setup, teardown);
	tcase_add_test(r, a_printed_name_leads_to_its_file);
	tcase_add_test(r, look_alike_names_stay_apart);
	suite_add_tcase(s, r);
	return s;
}

int main(void)
{
	return test_run_suite(names_suite());
}
