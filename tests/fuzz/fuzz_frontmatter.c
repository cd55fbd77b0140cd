/* libFuzzer target for the SKILL.md front matter parser. Beyond "no crash, no leak, no
 * hang", it checks what skills rely on:
 *  - a parse that succeeds gives keys and values that are NUL-free UTF-8, and a body that
 *    starts inside the text;
 *  - a SKILL.md that parses has a name that passes the name rules and a non-empty
 *    description;
 *  - a failed parse leaves nothing behind and a message naming the file. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <agentsbx/agentsbx.h>
#include "util/buf.h"
#include "util/frontmatter.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond) do { if (!(cond)) { fprintf(stderr, "check failed: %s\n", #cond); \
	abort(); } } while (0)

static void check_frontmatter(const char *text, size_t size)
{
	sbx_frontmatter fm;
	int r = sbx_frontmatter_parse(text, size, "SKILL.md", &fm);

	if (r < 0) {
		CHECK(r == -SBX_EINVAL || r == -SBX_EFBIG || r == -SBX_ENOMEM);
		CHECK(fm.n == 0 && fm.fields == NULL);
		CHECK(strncmp(sbx_last_error(), "SKILL.md: ", 10) == 0);
		return;
	}
	CHECK(fm.body_offset <= size);
	for (size_t i = 0; i < fm.n; i++) {
		const sbx_fm_field *f = &fm.fields[i];
		CHECK(f->key[0] != '\0' && sbx_utf8_valid(f->key, strlen(f->key)));
		CHECK(f->line >= 2);
		CHECK(!f->value || sbx_utf8_valid(f->value, strlen(f->value)));
		CHECK(sbx_frontmatter_get(&fm, f->key) == f);   /* keys are unique */
	}
	sbx_frontmatter_free(&fm);
}

static void check_skill_md(const char *text, size_t size)
{
	sbx_skill_md md;
	int r = sbx_skill_md_parse(text, size, &md);

	if (r < 0) {
		CHECK(md.name == NULL && md.description == NULL);
		CHECK(strncmp(sbx_last_error(), "SKILL.md: ", 10) == 0);
		return;
	}
	CHECK(sbx_skill_name_valid(md.name, NULL));
	CHECK(md.description[0] != '\0');
	CHECK(md.body >= text && md.body + md.body_len == text + size);
	sbx_skill_md_free(&md);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* A copy of exactly size bytes, so reading past the end is caught. */
	char *text = malloc(size ? size : 1);

	if (!text)
		return 0;
	memcpy(text, data, size);
	check_frontmatter(text, size);
	check_skill_md(text, size);
	free(text);
	return 0;
}
