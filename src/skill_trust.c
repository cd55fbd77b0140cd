/* Which skills the library added (skills.h: sbx_skill_record_*).
 *
 * skills/ is a folder of the workspace, and a workspace's commands can write it: a command
 * that wrote skills/x/SKILL.md had its description appear in sbx_workspace_instructions(),
 * a path into the harness's own system prompt. So only sbx_skill_add and
 * sbx_skill_add_archive make trusted skills: each records the skill's folder, name and the
 * SHA-256 of its SKILL.md in the state folder (.agentsbx/skills.json), which no command can
 * write (the sandboxes bind the state folder read-only; a backend without host files keeps it
 * through its file API). A skill whose SKILL.md is not the one recorded for its folder, byte
 * for byte, is untrusted: kept out of the prompt, the Skill tool and its list, and reported
 * with "trusted": false by sbx_skills_json. sbx_skill_remove drops the record.
 *
 *   {"version": 2, "skills": {"skills/<dir>": {"name": "...", "sha256": "<hex>"}, ...},
 *    "mac": "<hex>"}
 *
 * No command can write the record, but the workdir may have brought one before the first
 * open: a cloned repository or an unpacked archive with a .agentsbx of its own, whose record
 * trusts the skills it ships (version 1 records did; their descriptions reached the prompt).
 * So the record carries an HMAC-SHA-256, under a key of this host user's that no workspace
 * sees (util/hostkey.h), of its entries in order ("agentsbx skills v2", then dir, name and
 * sha256 of each, every one NUL-terminated). A record whose MAC does not hold (another
 * host's, another user's, one a tool made, a version 1 record) trusts nothing: its skills are
 * added again to be trusted. Only where the state folder is on this host: a backend without
 * host files keeps it in the sandbox, which every replica of a service may serve and whose
 * commands may write it, and there the record is taken as it is (docs/security.md).
 *
 * A record that is missing, too large or unreadable trusts nothing (a forged or broken
 * record must never trust more). Writers of one process take the skills lock; writers of
 * several processes the state folder's host lock "skills" (util/hostlock.h), and the record
 * is replaced atomically, so readers need no lock. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


#include "skills.h"
#include "util/buf.h"
#include "util/cleanup.h"
#include "util/digest.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/hostkey.h"
#include "util/hostlock.h"
#include "util/json.h"
#include "util/statedir.h"

#define RECORD_NAME "skills.json"
#define RECORD_PATH SBX_STATE_DIR_NAME "/" RECORD_NAME
#define RECORD_MAX ((size_t)1 << 20)
#define LOCK_TIMEOUT_MS 5000
#define RECORD_VERSION 2
#define MAC_CONTEXT "agentsbx skills v2"
#define KEY_PURPOSE "skills"

/* ---- reading ------------------------------------------------------------------------- */

static int read_record_text(sbx_workspace *ws, char **text, size_t *len)
{
	_cleanup_close_ int dir = -1;
	int r;

	if (ws->state_fd < 0) {
		if (!ws->ops->file_read)
			return -SBX_ENOSYS;
		return ws->ops->file_read(ws->state, RECORD_PATH, text, len);
	}
	if ((r = sbx_state_dir(ws, NULL, 0, &dir)) < 0)
		return r;
	return sbx_statedir_read(dir, RECORD_NAME, RECORD_MAX, text, len);
}

sbx_json *sbx_skill_record_parse(const char *text, size_t len)
{
	sbx_json *doc = NULL;
	const sbx_json *skills;
	char err[64];

	if (len > RECORD_MAX || sbx_json_parse(text, len, &doc, err, sizeof err) < 0)
		return NULL;
	skills = sbx_json_get(doc, "skills");
	if (!skills || skills->type != SBX_JSON_OBJECT) {
		sbx_json_free(doc);
		return NULL;
	}
	return doc;
}

static const char *string_of(const sbx_json *obj, const char *key)
{
	const sbx_json *v = sbx_json_get(obj, key);

	return v && v->type == SBX_JSON_STRING && strlen(v->str) == v->len ? v->str : NULL;
}

/* An entry as the record keeps it: an object with a name and a hash, under a dir without
 * a NUL. NULL name and sha256 otherwise. */
static bool entry_fields(const sbx_json *skills, size_t i, const char **name,
                         const char **sha256)
{
	const sbx_json *e = skills->items[i];

	*name = e->type == SBX_JSON_OBJECT ? string_of(e, "name") : NULL;
	*sha256 = e->type == SBX_JSON_OBJECT ? string_of(e, "sha256") : NULL;
	return *name && *sha256 && strlen(skills->keys[i]) == skills->key_lens[i];
}

static void canon_entry(sbx_buf *canon, const char *dir, const char *name, const char *sha256)
{
	sbx_buf_append(canon, dir, strlen(dir) + 1);
	sbx_buf_append(canon, name, strlen(name) + 1);
	sbx_buf_append(canon, sha256, strlen(sha256) + 1);
}

static int canon_mac(const unsigned char *key, const sbx_buf *canon, char mac[65])
{
	if (canon->oom)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	return sbx_hmac_sha256_hex(key, SBX_HOSTKEY_LEN, canon->data, canon->len, mac);
}

static bool same_text(const char *a, const char *b, size_t n)
{
	unsigned char d = 0;

	for (size_t i = 0; i < n; i++)
		d |= (unsigned char)(a[i] ^ b[i]);
	return d == 0;
}

bool sbx_skill_record_verify(const sbx_json *doc, const unsigned char *key)
{
	const sbx_json *skills = doc ? sbx_json_get(doc, "skills") : NULL;
	const sbx_json *version = doc ? sbx_json_get(doc, "version") : NULL;
	const char *mac = doc ? string_of(doc, "mac") : NULL, *name, *sha256;
	sbx_buf canon = { 0 };
	char want[65];
	bool ok;

	if (!key || !skills || skills->type != SBX_JSON_OBJECT || !version ||
	    version->type != SBX_JSON_INT || version->i != RECORD_VERSION || !mac ||
	    strlen(mac) != 64)
		return false;
	sbx_buf_append(&canon, MAC_CONTEXT, sizeof MAC_CONTEXT);
	for (size_t i = 0; i < skills->n; i++) {
		if (!entry_fields(skills, i, &name, &sha256)) {
			sbx_buf_free(&canon);
			return false;
		}
		canon_entry(&canon, skills->keys[i], name, sha256);
	}
	ok = canon_mac(key, &canon, want) == 0 && same_text(want, mac, 64);
	sbx_buf_free(&canon);
	sbx_error_clear();
	return ok;
}

sbx_json *sbx_skill_record_load(sbx_workspace *ws)
{
	_cleanup_free_ char *text = NULL;
	unsigned char key[SBX_HOSTKEY_LEN];
	size_t len = 0;
	sbx_json *doc = NULL;

	/* Where the state folder is the sandbox's own (a backend without host files: any
	 * replica of a service may read it, and its commands may write it), the MAC proves
	 * nothing: the record is taken as it is there. */
	if (read_record_text(ws, &text, &len) == 0 && (doc = sbx_skill_record_parse(text, len)) &&
	    ws->state_fd >= 0 &&
	    (sbx_hostkey_get(KEY_PURPOSE, key) < 0 || !sbx_skill_record_verify(doc, key))) {
		sbx_json_free(doc);
		doc = NULL;
	}
	sbx_error_clear();
	return doc;
}

/* The entry of dir in the record, or NULL. */
static const sbx_json *entry_of(const sbx_json *record, const char *dir)
{
	const sbx_json *skills = record ? sbx_json_get(record, "skills") : NULL;
	const sbx_json *e = skills ? sbx_json_get(skills, dir) : NULL;

	return e && e->type == SBX_JSON_OBJECT ? e : NULL;
}

bool sbx_skill_record_trusts(const sbx_json *record, const char *dir, const char *name,
                             const char *sha256)
{
	const sbx_json *e = entry_of(record, dir);
	const char *n = e ? string_of(e, "name") : NULL, *h = e ? string_of(e, "sha256") : NULL;

	return n && h && !strcmp(n, name) && !strcmp(h, sha256);
}

/* ---- writing ------------------------------------------------------------------------- */

static void put_entry(sbx_buf *b, const char *name, const char *sha256)
{
	sbx_buf_puts(b, ":{\"name\":");
	sbx_buf_json_string(b, name, strlen(name));
	sbx_buf_puts(b, ",\"sha256\":");
	sbx_buf_json_string(b, sha256, strlen(sha256));
	sbx_buf_puts(b, "}");
}

int sbx_skill_record_render(const sbx_json *old, const char *dir, const char *name,
                            const char *sha256, const unsigned char *key, sbx_buf *b)
{
	const sbx_json *skills = old ? sbx_json_get(old, "skills") : NULL;
	sbx_buf canon = { 0 };
	const char *n, *h;
	bool first = true;
	char mac[65];
	int r;

	sbx_buf_append(&canon, MAC_CONTEXT, sizeof MAC_CONTEXT);
	sbx_buf_printf(b, "{\"version\":%d,\"skills\":{", RECORD_VERSION);
	for (size_t i = 0; skills && skills->type == SBX_JSON_OBJECT && i < skills->n; i++) {
		if (!entry_fields(skills, i, &n, &h) || !strcmp(skills->keys[i], dir))
			continue;
		sbx_buf_puts(b, first ? "" : ",");
		sbx_buf_json_string(b, skills->keys[i], skills->key_lens[i]);
		put_entry(b, n, h);
		canon_entry(&canon, skills->keys[i], n, h);
		first = false;
	}
	if (name) {
		sbx_buf_puts(b, first ? "" : ",");
		sbx_buf_json_string(b, dir, strlen(dir));
		put_entry(b, name, sha256);
		canon_entry(&canon, dir, name, sha256);
	}
	r = canon_mac(key, &canon, mac);
	sbx_buf_free(&canon);
	if (r < 0)
		return r;
	sbx_buf_printf(b, "},\"mac\":\"%s\"}\n", mac);
	return b->oom ? sbx_fail(-SBX_ENOMEM, "out of memory") : 0;
}

static int write_remote(sbx_workspace *ws, const sbx_buf *b)
{
	int r;

	if (!ws->ops->file_write || !ws->ops->file_mkdir)
		return sbx_fail(-SBX_ENOSYS, "backend '%s' has no file API to keep the record of "
		                "its skills with", ws->ops->name);
	if ((r = ws->ops->file_mkdir(ws->state, SBX_STATE_DIR_NAME, 0755)) < 0 && r != -SBX_EEXIST)
		return r;
	return ws->ops->file_write(ws->state, RECORD_PATH, b->data, b->len, 0600, 0);
}

/* Read, change, write back: under the caller's skills lock and, on the host, the state
 * folder's host lock. */
static int update(sbx_workspace *ws, const char *dir, const char *name, const char *sha256)
{
	_cleanup_close_ int state = -1;
	_cleanup_hostlock_ int lock = -1;
	unsigned char key[SBX_HOSTKEY_LEN];
	sbx_buf b = { 0 };
	sbx_json *old;
	int r;

	if ((r = sbx_hostkey_get(KEY_PURPOSE, key)) < 0) {
		char msg[512];
		snprintf(msg, sizeof msg, "%s", sbx_last_error());
		return sbx_fail(r, "the record of the workspace's skills (%s): %s", RECORD_PATH, msg);
	}
	if (ws->state_fd >= 0) {
		if ((r = sbx_state_dir(ws, NULL, 0755, &state)) < 0 ||
		    (r = sbx_hostlock_take(state, "skills", LOCK_TIMEOUT_MS, &lock)) < 0)
			return r;
	}
	old = sbx_skill_record_load(ws);
	r = sbx_skill_record_render(old, dir, name, sha256, key, &b);
	sbx_json_free(old);
	if (r == 0)
		r = state >= 0 ? sbx_fs_write_atomic(state, RECORD_NAME, b.data, b.len, 0600, 0)
		               : write_remote(ws, &b);
	sbx_buf_free(&b);
	if (r < 0) {
		char msg[512];
		snprintf(msg, sizeof msg, "%s", sbx_last_error());
		return sbx_fail(r, "the record of the workspace's skills (%s): %s", RECORD_PATH, msg);
	}
	return 0;
}

int sbx_skill_record_add(sbx_workspace *ws, const char *dir, const char *name,
                         const char *sha256)
{
	return update(ws, dir, name, sha256);
}

int sbx_skill_record_remove(sbx_workspace *ws, const char *dir)
{
	return update(ws, dir, NULL, NULL);
}
