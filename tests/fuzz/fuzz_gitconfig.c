/* libFuzzer target for the strict git-config reader and its sanitiser (src/util/gitconfig.c).
 * Beyond "no crash, no leak, no hang", it checks what the git guard relies on:
 *  - a failed parse is -SBX_EINVAL or -SBX_ENOMEM with a message naming the line;
 *  - every key handed out has a lowercase section and name of git's key characters;
 *  - the sanitised copy parses again, holds only allow-listed keys (nothing more is dropped
 *    from it), and sanitising it again gives the very same text. */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <agentsbx/agentsbx.h>
#include "util/gitconfig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond) do { if (!(cond)) { fprintf(stderr, "check failed: %s\n", #cond); \
	abort(); } } while (0)

static void check_name(const char *s, bool dots)
{
	CHECK(*s);
	for (; *s; s++)
		CHECK(islower((unsigned char)*s) || isdigit((unsigned char)*s) || *s == '-' ||
		      (dots && *s == '.'));
}

static int check_entry(const sbx_gitconfig_entry *e, void *userdata)
{
	(void)userdata;
	check_name(e->section, false);
	check_name(e->name, false);
	CHECK(isalpha((unsigned char)e->name[0]));
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* A copy of exactly size bytes, so reading past the end is caught. */
	char *text = malloc(size ? size : 1);
	sbx_gitconfig_clean c, again;
	char err[200];
	int r;

	if (!text)
		return 0;
	memcpy(text, data, size);
	r = sbx_gitconfig_parse(text, size, check_entry, NULL, err, sizeof err);
	CHECK(r == 0 || r == -SBX_EINVAL || r == -SBX_ENOMEM);
	CHECK(r != -SBX_EINVAL || strncmp(err, "line ", 5) == 0);
	r = sbx_gitconfig_sanitize(text, size, NULL, NULL, &c, err, sizeof err);
	if (r == 0) {
		CHECK(c.text && strlen(c.text) == c.len);
		CHECK(sbx_gitconfig_sanitize(c.text, c.len, NULL, NULL, &again, err,
		                             sizeof err) == 0);
		CHECK(again.removed == 0 && again.kept == c.kept);
		CHECK(again.len == c.len && memcmp(again.text, c.text, c.len) == 0);
		sbx_gitconfig_clean_free(&again);
		sbx_gitconfig_clean_free(&c);
	}
	free(text);
	return 0;
}
