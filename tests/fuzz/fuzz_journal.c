/* libFuzzer target for the journal's note parser (util/journal.h): what it accepts is what
 * a sweep then acts on, so beyond "no crash, no leak" it checks that an accepted note can
 * only ever name our own temporary names (".<x>.sbx-XXXXXX") on their own, plain names,
 * and directories relative to the root without "..". */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <agentsbx/agentsbx.h>
#include "util/journal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond) do { if (!(cond)) { fprintf(stderr, "check failed: %s\n", #cond); \
	abort(); } } while (0)

static void check_dir(const char *at)
{
	CHECK(at[0] != '/');
	for (const char *p = at; *p; ) {
		size_t n = strcspn(p, "/");
		CHECK(n > 0 && !(n == 2 && p[0] == '.' && p[1] == '.'));
		p += n + (p[n] == '/');
	}
}

static void check_item(const struct sbx_journal_note *n, const struct sbx_journal_item *it)
{
	size_t len = strlen(it->tmp);

	check_dir(it->at);
	CHECK(it->tmp[0] == '.' && !strchr(it->tmp, '/') && len >= 12);
	CHECK(strncmp(it->tmp + len - 11, ".sbx-", 5) == 0);
	if (n->kind == SBX_NOTE_TEMP) {
		CHECK(it->name == NULL && !it->dir);
	} else {
		CHECK(it->name && it->name[0] && !strchr(it->name, '/'));
		CHECK(strcmp(it->name, ".") && strcmp(it->name, ".."));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sbx_journal_note n;
	int r = sbx_journal_parse((const char *)data, size, &n);

	if (r < 0) {
		CHECK(r == -SBX_EINVAL || r == -SBX_ENOMEM);
		CHECK(n.items == NULL && n.n_items == 0);
		return 0;
	}
	CHECK(n.n_items >= 1 && (n.kind == SBX_NOTE_PLACEHOLDERS || n.n_items == 1));
	CHECK(n.owner.pid > 0 && n.owner.boot[0]);
	CHECK(!n.detached || n.kind == SBX_NOTE_PLACEHOLDERS);
	for (size_t i = 0; i < n.n_items; i++)
		check_item(&n, &n.items[i]);
	sbx_journal_note_free(&n);
	return 0;
}
