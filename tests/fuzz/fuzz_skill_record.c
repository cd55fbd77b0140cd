/* libFuzzer target for the record of the skills the library added (src/skill_trust.c), the
 * one file of the state folder whose content decides what reaches a model's system prompt.
 * Where commands can write the state folder (local, a docker volume) it is hostile input.
 * Beyond "no crash, no leak", it checks what the trust rests on:
 *  - a record that parses trusts a (dir, name, sha256) only when an entry says exactly that;
 *  - rendering it with a new entry gives a record that parses, trusts the new entry, and
 *    still trusts every entry the old one trusted (other dirs);
 *  - rendering it with that entry dropped trusts it no more;
 *  - a rendered record's MAC holds under its key and under no other, and no input holds
 *    one (a record the library did not make under this key is never verified). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <agentsbx/agentsbx.h>
#include "skills.h"
#include "util/buf.h"
#include "util/hostkey.h"
#include "util/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond) do { if (!(cond)) { fprintf(stderr, "check failed: %s\n", #cond); \
	abort(); } } while (0)

#define NEW_DIR "skills/fuzz-new"
#define NEW_SHA "0000000000000000000000000000000000000000000000000000000000000000"

static const unsigned char key[SBX_HOSTKEY_LEN] = "agentsbx fuzz key, 32 bytes long";
static const unsigned char other_key[SBX_HOSTKEY_LEN] = "another key for the fuzz target";

static const char *member(const sbx_json *obj, const char *key)
{
	const sbx_json *v = sbx_json_get(obj, key);

	return v && v->type == SBX_JSON_STRING && strlen(v->str) == v->len ? v->str : NULL;
}

/* Every entry the old record trusts (first of a dir, as sbx_json_get finds it) is trusted by
 * the new one, unless it is the dir that changed. */
static void check_kept(const sbx_json *old, const sbx_json *now, const char *changed)
{
	const sbx_json *skills = sbx_json_get(old, "skills");

	for (size_t i = 0; skills && i < skills->n; i++) {
		const char *dir = skills->keys[i];
		const sbx_json *e = sbx_json_get(skills, dir);
		const char *name = e ? member(e, "name") : NULL, *sha = e ? member(e, "sha256") : NULL;

		if (strlen(dir) != skills->key_lens[i] || !name || !sha || !strcmp(dir, changed) ||
		    !sbx_skill_record_trusts(old, dir, name, sha))
			continue;
		CHECK(sbx_skill_record_trusts(now, dir, name, sha));
	}
}

/* Each entry (the first of its dir) is trusted with exactly its own name and hash. */
static void check_exact(const sbx_json *rec)
{
	const sbx_json *skills = sbx_json_get(rec, "skills");

	for (size_t i = 0; skills && i < skills->n; i++) {
		const char *dir = skills->keys[i];
		const sbx_json *e;
		const char *name, *sha;

		if (strlen(dir) != skills->key_lens[i] || !(e = sbx_json_get(skills, dir)))
			continue;
		name = member(e, "name");
		sha = member(e, "sha256");
		CHECK(sbx_skill_record_trusts(rec, dir, name ? name : "", sha ? sha : "") ==
		      (e->type == SBX_JSON_OBJECT && name && sha));
		if (name && sha) {
			CHECK(!strcmp(sha, NEW_SHA "x") ||
			      !sbx_skill_record_trusts(rec, dir, name, NEW_SHA "x"));
			CHECK(!sbx_skill_record_trusts(rec, dir, "", sha) || !*name);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	sbx_json *old = sbx_skill_record_parse((const char *)data, size), *now;
	sbx_buf b = { 0 };

	if (old) {
		check_exact(old);
		CHECK(!sbx_skill_record_verify(old, key));
	}
	CHECK(sbx_skill_record_render(old, NEW_DIR, "fuzz", NEW_SHA, key, &b) == 0);
	now = sbx_skill_record_parse(b.data, b.len);
	CHECK(now != NULL);
	CHECK(sbx_skill_record_verify(now, key));
	CHECK(!sbx_skill_record_verify(now, other_key));
	CHECK(sbx_skill_record_trusts(now, NEW_DIR, "fuzz", NEW_SHA));
	CHECK(!sbx_skill_record_trusts(now, NEW_DIR, "fuzz", "other"));
	if (old)
		check_kept(old, now, NEW_DIR);
	sbx_buf_free(&b);
	b = (sbx_buf){ 0 };
	CHECK(sbx_skill_record_render(now, NEW_DIR, NULL, NULL, key, &b) == 0);
	sbx_json *dropped = sbx_skill_record_parse(b.data, b.len);
	CHECK(dropped != NULL);
	CHECK(sbx_skill_record_verify(dropped, key));
	CHECK(!sbx_skill_record_trusts(dropped, NEW_DIR, "fuzz", NEW_SHA));
	check_kept(now, dropped, NEW_DIR);
	sbx_json_free(dropped);
	sbx_json_free(now);
	sbx_json_free(old);
	sbx_buf_free(&b);
	return 0;
}
