/* Unit tests of the strict git-config reader and its sanitiser (src/util/gitconfig.c): what
 * it reads must be what the real git reads (checked against `git config --list` of the
 * installed git), what git would reject it rejects, and a sanitised config keeps exactly the
 * allow-listed keys. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/gitconfig.h"

/* "section.sub.name=value\n" per key (git's --list form), in b. */
static int list_one(const sbx_gitconfig_entry *e, void *userdata)
{
	char key[256];

	sbx_gitconfig_key_name(e, key, sizeof key);
	sbx_buf_printf(userdata, "%s%s%s\n", key, e->value ? "=" : "", e->value ? e->value : "");
	return 0;
}

static char *our_list(const char *text, int *rc, char *err, size_t errlen)
{
	sbx_buf b = { 0 };

	sbx_buf_append(&b, "", 0);
	*rc = sbx_gitconfig_parse(text, strlen(text), list_one, &b, err, errlen);
	return b.data;
}

/* What the installed git lists for the same text (NULL if git rejects it). */
static char *git_list(const char *text)
{
	char path[] = "/tmp/sbx-gitconfig-XXXXXX";
	int fd = mkstemp(path);
	sbx_buf b = { 0 };
	char buf[4096], *cmd;
	size_t n;
	FILE *p;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	ck_assert_int_ge(asprintf(&cmd, "git config --file %s --list 2>/dev/null", path), 0);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	sbx_buf_append(&b, "", 0);
	while ((n = fread(buf, 1, sizeof buf, p)) > 0)
		sbx_buf_append(&b, buf, n);
	int status = pclose(p);
	unlink(path);
	free(cmd);
	if (status != 0) {
		sbx_buf_free(&b);
		return NULL;
	}
	return b.data;
}

/* Texts git reads, each with its quirks; ours must list exactly what git lists. */
static const char *const agreeing[] = {
	"[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n",
	"[Core] HooksPath = /tmp/x\n",                               /* key on the header line */
	"[remote \"Origin\"]\n\turl = https://example.com/r.git\n",  /* subsection keeps case */
	"[Remote.Origin]\n\turl = x\n",                              /* old form: lowercased */
	"[a \"q\\\"uo\\\\te\"]\n\tk = v\n",                          /* escapes in a subsection */
	"[s]\n\tk = \"  spaced  \" tail # comment\n\tb\n",            /* quotes, comments, bool */
	"[s]\n\tk = one \\\n two\n",                                 /* a continuation line */
	"[s]\n\tk = a\\tb\\nc\\\\d\\\"e\n",                          /* value escapes */
	"[s]\r\n\tk = crlf\r\n",
	"\xef\xbb\xbf[s]\n\tk = bom\n",
	"; comment\n# comment\n[s] ; c\n\tk=v;c\n\tk2 =\n",
	"[s]\n\tk = a\t\t b  \n",                                   /* inner blanks, one space each */
	"[include]\n\tpath = other\n[includeIf \"gitdir:/x/\"]\n\tpath = y\n",
	"[s \"\"]\n\tk = empty subsection\n",
};

START_TEST(reads_what_git_reads)
{
	for (size_t i = 0; i < sizeof agreeing / sizeof agreeing[0]; i++) {
		char err[200];
		int rc;
		char *ours = our_list(agreeing[i], &rc, err, sizeof err);
		char *theirs = git_list(agreeing[i]);

		ck_assert_msg(theirs != NULL, "git rejects sample %zu", i);
		ck_assert_msg(rc == 0, "sample %zu: %s", i, err);
		ck_assert_msg(strcmp(ours, theirs) == 0, "sample %zu:\nours:\n%s\ngit's:\n%s", i,
		              ours, theirs);
		free(ours);
		free(theirs);
	}
}
END_TEST

/* Texts git rejects, or reads in a way we will not guess at: every one is an error. */
static const char *const refused[] = {
	"[s]\n\tk = \"unterminated\n",
	"[s]\n\tk = bad \\q escape\n",
	"[s \"sub\" ]\n\tk = v\n",
	"[]\n\tk = v\n",
	"k = v\n",
	"[s]\n\tk v\n",
	"[s]\n\t9k = v\n",
	"[s\n",
	"[s \"a\\zb\"]\n",          /* git drops the backslash; we refuse */
	"[s]\n\tk = lone\rcr\n",
	"[s.]\n\tk = v\n",
	"[s]\n\t!k = v\n",
};

START_TEST(refuses_what_git_refuses_or_might_read_otherwise)
{
	for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
		char err[200];
		int rc;
		char *ours = our_list(refused[i], &rc, err, sizeof err);

		ck_assert_msg(rc == -SBX_EINVAL, "sample %zu parsed: %s", i, ours);
		ck_assert_msg(strncmp(err, "line ", 5) == 0, "sample %zu: %s", i, err);
		free(ours);
	}
	/* A NUL byte, which no C string can show. */
	char err[200];
	sbx_buf b = { 0 };
	ck_assert_int_eq(sbx_gitconfig_parse("[s]\n\tk = a\0b\n", 13, list_one, &b, err,
	                                     sizeof err), -SBX_EINVAL);
	sbx_buf_free(&b);
}
END_TEST

static char *sanitized(const char *text, size_t *removed, char *first, size_t first_len)
{
	sbx_gitconfig_clean c;
	char err[200];

	ck_assert_int_eq(sbx_gitconfig_sanitize(text, strlen(text), NULL, NULL, &c, err,
	                                        sizeof err), 0);
	*removed = c.removed;
	if (first)
		snprintf(first, first_len, "%s", c.first_removed);
	return c.text;
}

START_TEST(a_fresh_clone_keeps_every_key)
{
	const char *clone =
		"[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n"
		"\tlogallrefupdates = true\n[remote \"origin\"]\n\turl = /srv/repo.git\n"
		"\tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n"
		"\tremote = origin\n\tmerge = refs/heads/main\n"
		"[submodule \"lib\"]\n\turl = ../lib\n\tactive = true\n"
		"[user]\n\tname = A\n\temail = a@example.com\n";
	size_t removed;
	char *out = sanitized(clone, &removed, NULL, 0);

	ck_assert_uint_eq(removed, 0);
	/* The rewrite lists what the original lists. */
	char *a = git_list(clone), *b = git_list(out);
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	ck_assert_str_eq(a, b);
	free(a);
	free(b);
	free(out);
}
END_TEST

START_TEST(keys_that_run_programs_are_dropped)
{
	static const char *const hostile[] = {
		"[core]\n\thooksPath = /tmp/h\n",
		"[core]\n\tfsmonitor = touch /tmp/x\n",
		"[core]\n\tpager = sh -c x\n",
		"[core]\n\teditor = x\n",
		"[core]\n\tsshCommand = x\n",
		"[core]\n\taskPass = x\n",
		"[core]\n\tgitProxy = x\n",
		"[core]\n\tworktree = /etc\n",
		"[alias]\n\tst = !touch /tmp/x\n",
		"[filter \"lfs\"]\n\tclean = x\n",
		"[diff \"x\"]\n\ttextconv = x\n",
		"[include]\n\tpath = ../../evil\n",
		"[includeIf \"onbranch:main\"]\n\tpath = evil\n",
		"[remote \"o\"]\n\turl = ext::sh -c touch% /tmp/x\n",
		"[remote \"o\"]\n\turl = fd::7\n",
		"[remote \"o\"]\n\turl = -oProxyCommand=x\n",
		"[remote \"o\"]\n\turl = evil://host/x\n",
		"[remote \"o\"]\n\tuploadpack = touch /tmp/x\n",
		"[remote \"o\"]\n\tvcs = x\n",
		"[submodule \"s\"]\n\tupdate = !touch /tmp/x\n",
		"[branch \"b\"]\n\tremote = ext::x\n",
		"[credential]\n\thelper = !x\n",
		"[gpg]\n\tprogram = x\n",
		"[sequence]\n\teditor = x\n",
		"[uploadpack]\n\tpackObjectsHook = x\n",
		"[protocol]\n\tallow = always\n",
		"[Core] FSMonitor = \"touch /tmp/x\"\n",
		"[core.hooksPath]\n",        /* a section with no keys: nothing to keep or drop */
	};

	for (size_t i = 0; i < sizeof hostile / sizeof hostile[0]; i++) {
		char first[160];
		size_t removed;
		char *out = sanitized(hostile[i], &removed, first, sizeof first);
		ck_assert_msg(removed == (i + 1 < sizeof hostile / sizeof hostile[0] ? 1u : 0u),
		              "sample %zu: %zu removed", i, removed);
		ck_assert_msg(out[0] == '\0', "sample %zu kept: %s", i, out);
		free(out);
	}
}
END_TEST

START_TEST(ordinary_values_of_checked_keys_stay)
{
	const char *text =
		"[remote \"a\"]\n\turl = git@example.com:x/y.git\n\tpushurl = ssh://h/r\n"
		"\turl = https://h/r\n\turl = ../rel\n\ttagopt = --no-tags\n"
		"[submodule \"s\"]\n\tupdate = rebase\n[core]\n\tworktree = ../../s\n"
		"\trepositoryformatversion = 1\n[extensions]\n\tworktreeConfig = true\n";
	size_t removed;
	char *out = sanitized(text, &removed, NULL, 0);

	ck_assert_uint_eq(removed, 0);
	free(out);
}
END_TEST

/* The keep callback decides (the guard keeps what the user had at open). */
static bool keep_pager(const sbx_gitconfig_entry *e, bool allowed, void *userdata)
{
	(void)userdata;
	return allowed || (!strcmp(e->section, "core") && !strcmp(e->name, "pager") &&
	                   e->value && !strcmp(e->value, "less"));
}

START_TEST(the_keep_callback_decides_and_the_rewrite_reads_back)
{
	const char *text = "[core]\n\tpager = less\n\tpager = evil\n\tbare = false\n"
	                   "[s \"we\\\"ird\"]\n\tk = \"tab\\there\\nnl \\\"q\\\" \\\\ #;\"\n";
	sbx_gitconfig_clean c;
	char err[200];

	ck_assert_int_eq(sbx_gitconfig_sanitize(text, strlen(text), keep_pager, NULL, &c, err,
	                                        sizeof err), 0);
	ck_assert_uint_eq(c.removed, 2);    /* pager = evil and s.we"ird.k */
	ck_assert_uint_eq(c.kept, 2);
	ck_assert_str_eq(c.first_removed, "core.pager");
	char *list = git_list(c.text);
	ck_assert_ptr_nonnull(list);
	ck_assert_str_eq(list, "core.pager=less\ncore.bare=false\n");
	free(list);
	sbx_gitconfig_clean_free(&c);

	/* Every byte survives the round trip through our writer and git's reader. */
	ck_assert_int_eq(sbx_gitconfig_sanitize(text, strlen(text), NULL, NULL, &c, err,
	                                        sizeof err), 0);
	sbx_gitconfig_clean_free(&c);
	const char *weird = "[user]\n\tname = \"tab\\there \\\"q\\\" \\\\ #; x\"\n";
	ck_assert_int_eq(sbx_gitconfig_sanitize(weird, strlen(weird), NULL, NULL, &c, err,
	                                        sizeof err), 0);
	list = git_list(c.text);
	ck_assert_ptr_nonnull(list);
	ck_assert_str_eq(list, "user.name=tab\there \"q\" \\ #; x\n");
	free(list);
	sbx_gitconfig_clean_free(&c);
}
END_TEST

static Suite *gitconfig_suite(void)
{
	Suite *s = suite_create("gitconfig");
	TCase *tc = tcase_create("gitconfig");

	tcase_add_test(tc, reads_what_git_reads);
	tcase_add_test(tc, refuses_what_git_refuses_or_might_read_otherwise);
	tcase_add_test(tc, a_fresh_clone_keeps_every_key);
	tcase_add_test(tc, keys_that_run_programs_are_dropped);
	tcase_add_test(tc, ordinary_values_of_checked_keys_stay);
	tcase_add_test(tc, the_keep_callback_decides_and_the_rewrite_reads_back);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run_suite(gitconfig_suite());
}
