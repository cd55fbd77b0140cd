/* The audit log (JSON lines in the workspace's state folder, rotated by size) and the
 * approval hook.
 *
 * Secrets must not reach the log: the values of secret-looking names (environment entries,
 * JSON keys, "password=..." in text), token-shaped strings (API keys of the common services,
 * JWTs) and the secrets the config lists are replaced by "[REDACTED]" before anything is
 * written. A record is appended with one write(2) under a host lock (util/hostlock.h) that no
 * command inside can take, so concurrent writers from threads or processes never interleave,
 * a crash never leaves half a record, and no command can make the host wait for the log. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <errno.h>
#include <fcntl.h>
#include <pcre2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit.h"
#include "util/auditlog.h"
#include "util/cleanup.h"
#include "util/error.h"

#define REDACTED "[REDACTED]"

/* Names whose values are secrets (environment variables, JSON keys). */
static const char secret_name_re[] =
	"(?i)(pass(word|wd)?|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|"
	"credential|auth)";
/* Token shapes of common services, and "name=value" / "name: value" with a secret name. */
static const char secret_text_re[] =
	"(sk-[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|"
	"AKIA[0-9A-Z]{16}|xox[abprs]-[A-Za-z0-9-]{10,}|"
	"eyJ[A-Za-z0-9_-]{8,}\\.[A-Za-z0-9_-]{8,}\\.[A-Za-z0-9_-]{8,})"
	"|(?i)(?:pass(?:word|wd)?|secret|token|api[_-]?key)[\"']?\\s*[=:]\\s*[\"']?([^\\s\"']+)";

static pcre2_code *name_re, *text_re;
static pthread_once_t compile_once = PTHREAD_ONCE_INIT;

static pcre2_code *compile(const char *pattern)
{
	int err;
	PCRE2_SIZE off;
	pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED,
	                               PCRE2_UTF | PCRE2_MATCH_INVALID_UTF, &err, &off, NULL);

	if (re)
		pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
	return re;
}

static void compile_patterns(void)
{
	name_re = compile(secret_name_re);
	text_re = compile(secret_text_re);
}

static bool matches(pcre2_code *re, const char *s, size_t len)
{
	pcre2_match_data *md;
	int rc;

	pthread_once(&compile_once, compile_patterns);
	if (!re || !(md = pcre2_match_data_create_from_pattern(re, NULL)))
		return true;          /* cannot tell: err on the side of redacting */
	rc = pcre2_match(re, (PCRE2_SPTR)s, len, 0, 0, md, NULL);
	pcre2_match_data_free(md);
	return rc >= 0;
}

static bool secret_name(const char *s, size_t len)
{
	pthread_once(&compile_once, compile_patterns);
	return matches(name_re, s, len);
}

/* Copies s, replacing every configured secret. */
static void replace_configured(const sbx_workspace *ws, sbx_buf *out, const char *s, size_t len)
{
	char **secrets = ws->cfg->audit_redact;
	size_t i = 0;

	while (i < len) {
		size_t hit = 0;

		for (size_t k = 0; secrets && secrets[k] && !hit; k++) {
			size_t n = strlen(secrets[k]);

			if (n <= len - i && memcmp(s + i, secrets[k], n) == 0)
				hit = n;
		}
		if (hit) {
			sbx_buf_puts(out, REDACTED);
			i += hit;
		} else {
			sbx_buf_append(out, s + i, 1);
			i++;
		}
	}
}

/* Replaces the token-shaped parts of s (group 1: a whole token; group 2: the value after a
 * secret name). */
static void replace_tokens(sbx_buf *out, const char *s, size_t len)
{
	pcre2_match_data *md;
	size_t pos = 0;

	pthread_once(&compile_once, compile_patterns);
	if (!text_re || !(md = pcre2_match_data_create_from_pattern(text_re, NULL))) {
		sbx_buf_puts(out, REDACTED);
		return;
	}
	while (pos <= len && pcre2_match(text_re, (PCRE2_SPTR)s, len, pos, 0, md, NULL) >= 0) {
		PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
		size_t from = ov[2] != PCRE2_UNSET ? ov[2] : ov[4], to = ov[2] != PCRE2_UNSET ? ov[3] : ov[5];

		if (from == PCRE2_UNSET || to <= pos) {
			pos = ov[1] > pos ? ov[1] : pos + 1;
			continue;
		}
		sbx_buf_append(out, s + pos, from - pos);
		sbx_buf_puts(out, REDACTED);
		pos = to;
	}
	if (pos < len)
		sbx_buf_append(out, s + pos, len - pos);
	pcre2_match_data_free(md);
}

void sbx_audit_redact_text(const sbx_workspace *ws, sbx_buf *out, const char *s, size_t len)
{
	sbx_buf tmp = { 0 };

	replace_configured(ws, &tmp, s, len);
	replace_tokens(out, tmp.data ? tmp.data : "", tmp.len);
	sbx_buf_free(&tmp);
}

static void redacted_string(const sbx_workspace *ws, sbx_buf *out, const char *s, size_t len)
{
	sbx_buf tmp = { 0 };

	sbx_audit_redact_text(ws, &tmp, s, len);
	sbx_buf_json_string(out, tmp.data ? tmp.data : "", tmp.len);
	sbx_buf_free(&tmp);
}

static void redacted_json(const sbx_workspace *ws, sbx_buf *out, const sbx_json *v, int depth)
{
	if (!v || depth > SBX_JSON_MAX_DEPTH) {
		sbx_buf_puts(out, "null");
		return;
	}
	switch (v->type) {
	case SBX_JSON_STRING:
		redacted_string(ws, out, v->str, v->len);
		return;
	case SBX_JSON_ARRAY:
		sbx_buf_puts(out, "[");
		for (size_t i = 0; i < v->n; i++) {
			if (i)
				sbx_buf_puts(out, ",");
			redacted_json(ws, out, v->items[i], depth + 1);
		}
		sbx_buf_puts(out, "]");
		return;
	case SBX_JSON_OBJECT:
		sbx_buf_puts(out, "{");
		for (size_t i = 0; i < v->n; i++) {
			if (i)
				sbx_buf_puts(out, ",");
			sbx_buf_json_string(out, v->keys[i], v->key_lens[i]);
			sbx_buf_puts(out, ":");
			if (v->items[i]->type == SBX_JSON_STRING &&
			    secret_name(v->keys[i], v->key_lens[i]))
				sbx_buf_json_string(out, REDACTED, strlen(REDACTED));
			else
				redacted_json(ws, out, v->items[i], depth + 1);
		}
		sbx_buf_puts(out, "}");
		return;
	default:
		sbx_json_write(out, v);
	}
}

/* ---- where the log lives ---- */

int sbx_audit_setup(sbx_workspace *ws)
{
	_cleanup_free_ char *path = NULL;

	if (!ws->cfg->audit_enabled || !sbx_state_path(ws))
		return 0;
	if (asprintf(&path, "%s/%s", sbx_state_path(ws), SBX_AUDIT_LOG_NAME) < 0)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	ws->audit_path = SBX_TAKE_PTR(path);
	return 0;
}

void sbx_audit_teardown(sbx_workspace *ws)
{
	free(ws->audit_path);
	ws->audit_path = NULL;
}

int sbx_audit_dir_fd(sbx_workspace *ws)
{
	int fd = -1;

	if (ws->audit_path && sbx_state_dir(ws, NULL, 0755, &fd) < 0)
		sbx_error_clear();
	return fd;
}

/* The state folder comes from sbx_state_dir (never through a link, checked at every use),
 * and the append takes a host lock (util/auditlog.c) no command can hold. The threads of
 * this process queue for it on the workspace's audit_lock first: the host lock is a flock
 * polled with pauses of 1 to 32 ms, and 32 threads running commands in one workspace spent
 * more time in those pauses than in their commands. The audit_lock guards nothing else, so
 * a slow append stalls only the appends that would have waited for the host lock anyway. */
static void append_line(sbx_workspace *ws, const char *line, size_t len)
{
	char kept[1024];
	int dirfd = -1;

	snprintf(kept, sizeof kept, "%s", sbx_last_error());
	if (sbx_state_dir(ws, NULL, 0755, &dirfd) == 0) {
		pthread_mutex_lock(&ws->audit_lock);
		sbx_auditlog_append(dirfd, line, len, ws->cfg->audit_max_bytes, ws->cfg->audit_keep);
		pthread_mutex_unlock(&ws->audit_lock);
		close(dirfd);
	}
	if (kept[0])
		sbx_fail(-SBX_EIO, "%s", kept);
	else
		sbx_error_clear();
}

/* ---- records ---- */

static bool active(const sbx_audit_rec *rec)
{
	return rec->ws != NULL;
}

static void key(sbx_audit_rec *rec, const char *k)
{
	sbx_buf_puts(&rec->b, ",");
	sbx_buf_json_string(&rec->b, k, strlen(k));
	sbx_buf_puts(&rec->b, ":");
}

void sbx_audit_begin(sbx_audit_rec *rec, sbx_workspace *ws, const char *kind)
{
	char now[64];

	*rec = (sbx_audit_rec){ .start_ms = sbx_now_ms() };
	if (!ws || !ws->audit_path)
		return;
	rec->ws = ws;
	sbx_auditlog_time(now, sizeof now);
	sbx_buf_printf(&rec->b, "{\"time\":\"%s\",\"workspace\":", now);
	sbx_buf_json_string(&rec->b, ws->id, strlen(ws->id));
	sbx_audit_str(rec, "kind", kind);
}

void sbx_audit_str(sbx_audit_rec *rec, const char *k, const char *value)
{
	if (!active(rec))
		return;
	key(rec, k);
	if (value)
		redacted_string(rec->ws, &rec->b, value, strlen(value));
	else
		sbx_buf_puts(&rec->b, "null");
}

void sbx_audit_int(sbx_audit_rec *rec, const char *k, int64_t value)
{
	if (!active(rec))
		return;
	key(rec, k);
	sbx_buf_printf(&rec->b, "%lld", (long long)value);
}

void sbx_audit_json(sbx_audit_rec *rec, const char *k, const sbx_json *value)
{
	if (!active(rec))
		return;
	key(rec, k);
	redacted_json(rec->ws, &rec->b, value, 0);
}

void sbx_audit_strv(sbx_audit_rec *rec, const char *k, const char *const *v)
{
	if (!active(rec))
		return;
	key(rec, k);
	sbx_buf_puts(&rec->b, "[");
	for (size_t i = 0; v && v[i]; i++) {
		const char *eq = strchr(v[i], '=');

		if (i)
			sbx_buf_puts(&rec->b, ",");
		if (eq && eq != v[i] && secret_name(v[i], (size_t)(eq - v[i]))) {
			sbx_buf tmp = { 0 };

			sbx_buf_append(&tmp, v[i], (size_t)(eq - v[i]) + 1);
			sbx_buf_puts(&tmp, REDACTED);
			sbx_buf_json_string(&rec->b, tmp.data, tmp.len);
			sbx_buf_free(&tmp);
		} else {
			redacted_string(rec->ws, &rec->b, v[i], strlen(v[i]));
		}
	}
	sbx_buf_puts(&rec->b, "]");
}

void sbx_audit_end(sbx_audit_rec *rec)
{
	if (!active(rec))
		return;
	sbx_audit_int(rec, "duration_ms", sbx_now_ms() - rec->start_ms);
	sbx_buf_puts(&rec->b, "}\n");
	if (!rec->b.oom)
		append_line(rec->ws, rec->b.data, rec->b.len);
	sbx_buf_free(&rec->b);
	rec->ws = NULL;
}

/* ---- approval ---- */

bool sbx_approval_allows(sbx_workspace *ws, const char *request_json, char *reason,
                         size_t reason_len)
{
	sbx_approval_fn fn;
	void *ud;
	int verdict;

	pthread_mutex_lock(&ws->hooks_lock);
	fn = ws->approval_fn;
	ud = ws->approval_userdata;
	pthread_mutex_unlock(&ws->hooks_lock);
	if (!fn)
		return true;
	reason[0] = '\0';
	verdict = fn(ud, request_json, reason, reason_len);
	reason[reason_len - 1] = '\0';
	if (verdict == SBX_APPROVE)
		return true;
	if (!reason[0])
		snprintf(reason, reason_len, "denied by the approval handler");
	return false;
}

int sbx_set_approval_handler(sbx_workspace *ws, sbx_approval_fn fn, void *userdata)
{
	if (!ws)
		return sbx_fail(-SBX_EINVAL, "sbx_set_approval_handler: ws must not be NULL");
	pthread_mutex_lock(&ws->hooks_lock);
	ws->approval_fn = fn;
	ws->approval_userdata = fn ? userdata : NULL;
	pthread_mutex_unlock(&ws->hooks_lock);
	return 0;
}

const char *sbx_audit_path(const sbx_workspace *ws)
{
	return ws ? ws->audit_path : NULL;
}

static void json_strv(sbx_buf *b, const char *const *v)
{
	sbx_buf_puts(b, "[");
	for (size_t i = 0; v && v[i]; i++) {
		if (i)
			sbx_buf_puts(b, ",");
		sbx_buf_json_string(b, v[i], strlen(v[i]));
	}
	sbx_buf_puts(b, "]");
}

int sbx_exec_approve(sbx_workspace *ws, const char *kind, const char *const argv[],
                     const char *cwd, sbx_audit_rec *rec)
{
	char reason[1024];
	sbx_buf req = { 0 };
	bool allowed = true;

	sbx_audit_begin(rec, ws, kind);
	sbx_audit_strv(rec, "argv", argv);
	sbx_audit_str(rec, "cwd", cwd ? cwd : sbx_workspace_root(ws));
	pthread_mutex_lock(&ws->hooks_lock);
	bool have_handler = ws->approval_fn != NULL;
	pthread_mutex_unlock(&ws->hooks_lock);
	if (have_handler) {
		sbx_buf_puts(&req, "{\"kind\":\"exec\",\"class\":\"exec\",\"argv\":");
		json_strv(&req, argv);
		sbx_buf_puts(&req, ",\"cwd\":");
		cwd = cwd ? cwd : sbx_workspace_root(ws);
		sbx_buf_json_string(&req, cwd, strlen(cwd));
		sbx_buf_puts(&req, "}");
		if (req.oom) {
			sbx_buf_free(&req);
			sbx_audit_end(rec);
			return sbx_fail(-SBX_ENOMEM, "out of memory");
		}
		allowed = sbx_approval_allows(ws, req.data, reason, sizeof reason);
		sbx_buf_free(&req);
	}
	if (allowed)
		return 0;
	sbx_audit_str(rec, "result", "denied");
	sbx_audit_str(rec, "reason", reason);
	sbx_audit_end(rec);
	return sbx_fail(-SBX_EPERM, "%s denied by the approval handler: %s", kind, reason);
}
