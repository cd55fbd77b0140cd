/* docs/config.md documents every key src/config.c accepts: the top-level key table, the
 * limits table and the nested "<key>.<sub>" paths the parsers name. A key added to the code
 * without a line in the reference fails here. */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"

#define KEY_MAX 64
#define KEYS_MAX 128

typedef struct key_list {
	char names[KEYS_MAX][KEY_MAX];
	size_t n;
} key_list;

/* The whole file under the source root, NUL-terminated; the test fails if it cannot be read. */
static char *source_file(const char *rel)
{
	const char *root = getenv("SBX_TEST_SOURCE_ROOT");
	char path[4096];
	FILE *f;
	char *text;
	long len;

	ck_assert_msg(root != NULL, "SBX_TEST_SOURCE_ROOT is not set");
	snprintf(path, sizeof path, "%s/%s", root, rel);
	f = fopen(path, "rb");
	ck_assert_msg(f != NULL, "cannot open %s", path);
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	len = ftell(f);
	ck_assert_int_ge(len, 0);
	rewind(f);
	text = calloc(1, (size_t)len + 1);
	ck_assert_ptr_nonnull(text);
	ck_assert_uint_eq(fread(text, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	return text;
}

static void add_key(key_list *keys, const char *prefix, const char *name, size_t len)
{
	ck_assert_uint_lt(keys->n, KEYS_MAX);
	ck_assert_uint_lt(strlen(prefix) + len, KEY_MAX);
	snprintf(keys->names[keys->n++], KEY_MAX, "%s%.*s", prefix, (int)len, name);
}

/* The first string of each `{ "name", ... }` row of the table that starts at `table`. */
static void table_keys(const char *text, const char *table, const char *prefix, key_list *keys)
{
	const char *p = strstr(text, table), *end;

	ck_assert_msg(p != NULL, "src/config.c has no table '%s' any more: update this test", table);
	end = strstr(p, "};");
	ck_assert_ptr_nonnull(end);
	while ((p = strstr(p, "{ \"")) && p < end) {
		const char *name = p + 3, *close = strchr(name, '"');

		ck_assert_ptr_nonnull(close);
		add_key(keys, prefix, name, (size_t)(close - name));
		p = close;
	}
}

static bool is_key_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

/* Every string literal "top.sub" in the source whose top is a top-level key: the paths the
 * nested parsers check and name in their messages ("audit.keep", "mcp.transport"). */
static void nested_keys(const char *text, const key_list *top, key_list *keys)
{
	for (const char *p = strchr(text, '"'); p; p = strchr(p + 1, '"')) {
		const char *s = p + 1, *dot = s, *e;

		while (is_key_char(*dot))
			dot++;
		if (*dot != '.' || dot == s)
			continue;
		for (e = dot + 1; is_key_char(*e); e++)
			;
		if (*e != '"' || e == dot + 1)
			continue;
		for (size_t i = 0; i < top->n; i++)
			if (strlen(top->names[i]) == (size_t)(dot - s) &&
			    !strncmp(top->names[i], s, (size_t)(dot - s))) {
				add_key(keys, "", s, (size_t)(e - s));
				break;
			}
		p = e;
	}
}

/* Is `key`, in backquotes, in the document? */
static bool documented(const char *doc, const char *key)
{
	char quoted[KEY_MAX + 8];

	snprintf(quoted, sizeof quoted, "`%s`", key);
	return strstr(doc, quoted) != NULL;
}

static bool listed(const key_list *keys, const char *name)
{
	for (size_t i = 0; i < keys->n; i++)
		if (!strcmp(keys->names[i], name))
			return true;
	return false;
}

/* prefix + the first len bytes of name, in a static buffer. */
static const char *joined_key(const char *prefix, const char *name, size_t len)
{
	static char buf[KEY_MAX];

	snprintf(buf, sizeof buf, "%s%.*s", prefix, (int)len, name);
	return buf;
}

START_TEST(every_config_key_is_in_docs_config_md)
{
	char *code = source_file("src/config.c"), *doc = source_file("docs/config.md");
	static key_list top, limits, nested;
	const key_list *all[] = { &top, &limits, &nested };
	int missing = 0;

	top.n = limits.n = nested.n = 0;
	table_keys(code, "top_level_keys[] = {", "", &top);
	table_keys(code, "limit_rules[] = {", "limits.", &limits);
	nested_keys(code, &top, &nested);
	/* The extraction itself works: keys every version has are found. */
	ck_assert_msg(listed(&top, "timeout_ms") && listed(&limits, "limits.pids") &&
	              listed(&nested, "audit.keep"), "the key extraction found nothing usable");
	for (size_t t = 0; t < sizeof all / sizeof all[0]; t++)
		for (size_t i = 0; i < all[t]->n; i++)
			if (!documented(doc, all[t]->names[i])) {
				fprintf(stderr, "docs/config.md lacks `%s` (src/config.c accepts it)\n",
				        all[t]->names[i]);
				missing++;
			}
	ck_assert_msg(missing == 0, "%d config keys are not documented in docs/config.md", missing);
	free(code);
	free(doc);
}
END_TEST

/* Every "name" the sandbox options parser compares a key with: `strcmp(key, "name")` for the
 * backend's own keys, `strcmp(b->keys[k], "name")` for a bind's (as "binds[].name"). */
static void option_keys(const char *text, key_list *keys)
{
	static const struct {
		const char *pattern;
		const char *prefix;
	} forms[] = {
		{ "strcmp(key, \"", "" },
		{ "strcmp(b->keys[k], \"", "binds[]." },
	};

	for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++)
		for (const char *p = strstr(text, forms[f].pattern); p;
		     p = strstr(p + 1, forms[f].pattern)) {
			const char *name = p + strlen(forms[f].pattern), *close = strchr(name, '"');

			ck_assert_ptr_nonnull(close);
			if (!listed(keys, joined_key(forms[f].prefix, name, (size_t)(close - name))))
				add_key(keys, forms[f].prefix, name, (size_t)(close - name));
		}
}

/* The ns and bwrap backends' options (backends/sandbox/options.c) each have a row `ns.<key>`
 * in docs/config.md and a row `<key>` in the backend's README, where users look. */
START_TEST(every_sandbox_option_is_documented)
{
	char *code = source_file("backends/sandbox/options.c");
	char *doc = source_file("docs/config.md"), *readme = source_file("backends/ns/README.md");
	static key_list keys;
	int missing = 0;

	keys.n = 0;
	option_keys(code, &keys);
	ck_assert_msg(listed(&keys, "rootfs") && listed(&keys, "prestart") &&
	              listed(&keys, "binds[].writable"), "the key extraction found nothing usable");
	for (size_t i = 0; i < keys.n; i++) {
		char full[KEY_MAX + 4];

		snprintf(full, sizeof full, "ns.%s", keys.names[i]);
		if (!documented(doc, full)) {
			fprintf(stderr, "docs/config.md lacks `%s` (backends/sandbox/options.c accepts "
			        "it)\n", full);
			missing++;
		}
		if (!documented(readme, keys.names[i])) {
			fprintf(stderr, "backends/ns/README.md lacks `%s`\n", keys.names[i]);
			missing++;
		}
	}
	ck_assert_msg(missing == 0, "%d sandbox options are not documented", missing);
	free(code);
	free(doc);
	free(readme);
}
END_TEST

static Suite *config_docs_suite(void)
{
	Suite *s = suite_create("config_docs");
	TCase *tc = tcase_create("keys");

	tcase_add_test(tc, every_config_key_is_in_docs_config_md);
	tcase_add_test(tc, every_sandbox_option_is_documented);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run_suite(config_docs_suite());
}
