/* The workspace configuration: one JSON object, validated key by key.
 *
 * Everything here is untrusted input (a harness may pass through what a model or a user
 * wrote), so each key is checked for type and range, unknown keys are refused rather than
 * ignored (a typo must not silently drop a limit), and every message names the key path. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "internal.h"
#include "util/buf.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/json.h"
#include "util/netpolicy.h"

#define ENV_MAX_ENTRIES   1024
#define ENV_NAME_MAX      256
#define ENV_VALUE_MAX     ((size_t)128 << 10)
#define TIMEOUT_MS_MAX    INT64_C(604800000)       /* 7 days */
#define ID_MAX            64
#define BACKEND_NAME_MAX  32

#define KIB INT64_C(1024)
#define MIB (KIB * 1024)
#define GIB (MIB * 1024)
#define TIB (GIB * 1024)

/* Keys and values quoted in messages are cut to this many bytes. */
#define SHOW_MAX          64
/* Room for SHOW_MAX bytes shown as \xNN, a prefix like "limits." and "...". */
#define SHOWN_SIZE        (SHOW_MAX * 4 + 32)

/*
 * Ranges of "limits". 0 means "not set" to backends, so a limit that is given must be at least
 * 1; the maxima are far beyond any sane sandbox and exist to catch typos and unit mix-ups
 * (seconds given as milliseconds, KiB as bytes) before a backend has to:
 *   max_output       1 B .. 1 GiB per stream (the host keeps that much in memory)
 *   cpu_seconds      1 .. 1,000,000 (about 11.5 days of CPU time)
 *   memory_bytes     1 MiB .. 1 TiB (below 1 MiB not even a shell starts)
 *   file_size_bytes  1 B .. 1 TiB
 *   open_files       16 .. 1,048,576 (below 16 a shell cannot start a pipeline; the ceiling is
 *                    the kernel's default fs.nr_open)
 *   processes, pids  1 .. 4,194,304 (the kernel's PID_MAX_LIMIT)
 *   disk_bytes       1 MiB .. 1 TiB (the workspace's files; below 1 MiB not even the
 *                    library's state folder fits)
 *   tmp_bytes        1 MiB .. 1 TiB (the sandbox's /tmp and /dev/shm, each)
 *   background_shells 1 .. 64 (the Bash tool's shells running at once; each keeps its
 *                    output in host memory)
 */
typedef struct limit_rule {
	const char *name;
	int64_t min, max;
	size_t offset;       /* of the uint64_t in sbx_config; LIMIT_MAX_OUTPUT for max_output */
} limit_rule;

#define LIMIT_MAX_OUTPUT SIZE_MAX

#define LIMIT_OF(member) (offsetof(sbx_config, limits) + offsetof(sbx_backend_limits, member))

static const limit_rule limit_rules[] = {
	{ "max_output", 1, GIB, LIMIT_MAX_OUTPUT },
	{ "cpu_seconds", 1, 1000000, LIMIT_OF(cpu_seconds) },
	{ "memory_bytes", MIB, TIB, LIMIT_OF(memory_bytes) },
	{ "file_size_bytes", 1, TIB, LIMIT_OF(file_size_bytes) },
	{ "open_files", 16, 1048576, LIMIT_OF(open_files) },
	{ "processes", 1, 4194304, LIMIT_OF(processes) },
	{ "pids", 1, 4194304, LIMIT_OF(pids) },
	{ "disk_bytes", MIB, TIB, offsetof(sbx_config, disk_bytes) },
	{ "tmp_bytes", MIB, TIB, offsetof(sbx_config, tmp_bytes) },
	{ "background_shells", 1, 64, offsetof(sbx_config, background_shells) },
};

static bool is_lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

bool sbx_config_valid_id(const char *id)
{
	size_t n;

	if (!id || id[0] == '.')
		return false;
	n = strnlen(id, ID_MAX + 1);
	if (n == 0 || n > ID_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = id[i];

		if (!is_alpha(c) && !is_digit(c) && c != '_' && c != '.' && c != '-')
			return false;
	}
	return true;
}

bool sbx_config_valid_backend_name(const char *name)
{
	size_t n;

	if (!name)
		return false;
	n = strnlen(name, BACKEND_NAME_MAX + 1);
	if (n == 0 || n > BACKEND_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is_lower_alnum(name[i]) && name[i] != '_')
			return false;
	return true;
}

static bool valid_env_name(const char *name, size_t len)
{
	if (len == 0 || len > ENV_NAME_MAX || (!is_alpha(name[0]) && name[0] != '_'))
		return false;
	for (size_t i = 1; i < len; i++)
		if (!is_alpha(name[i]) && !is_digit(name[i]) && name[i] != '_')
			return false;
	return true;
}

/* Text from the config as it may appear in a message: printable ASCII kept, everything else
 * as \xNN, cut at SHOW_MAX bytes, so a hostile config cannot put control characters or
 * megabytes into sbx_last_error(). */
static void show(char *out, size_t outlen, const char *prefix, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0, shown = len > SHOW_MAX ? SHOW_MAX : len;

	o = (size_t)snprintf(out, outlen, "%s", prefix);
	if (o >= outlen)
		return;
	for (size_t i = 0; i < shown && o + 5 < outlen; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'') {
			out[o++] = (char)c;
		} else {
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	if (shown < len && o + 4 < outlen) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o] = '\0';
}

static int config_oom(void)
{
	return sbx_fail(-SBX_ENOMEM, "config: out of memory");
}

static int expect_type(const sbx_json *v, sbx_json_type type, const char *what, const char *path)
{
	if (v->type == type)
		return 0;
	return sbx_fail(-SBX_ECONFIG, "config: key '%s': expected %s, got %s", path, what,
	                sbx_json_type_name(v->type));
}

/* A string value without NUL bytes (they would silently cut it short as a C string). */
static int expect_c_string(const sbx_json *v, const char *path)
{
	int rc = expect_type(v, SBX_JSON_STRING, "a string", path);

	if (rc < 0)
		return rc;
	if (memchr(v->str, '\0', v->len))
		return sbx_fail(-SBX_ECONFIG, "config: key '%s': contains a NUL byte", path);
	return 0;
}

static bool literal_is_integer(const char *s)
{
	return !strpbrk(s, ".eE");
}

/* Integers only as integer literals: 1.0, 1e3 and friends are refused rather than guessed
 * at, and literals beyond int64 are out of range like any other too-large value. */
static int expect_int(const sbx_json *v, const char *path, int64_t min, int64_t max,
                      int64_t *out)
{
	char lit[SHOWN_SIZE];

	if (v->type == SBX_JSON_NUMBER) {
		show(lit, sizeof lit, "", v->str, v->len);
		if (literal_is_integer(v->str))
			return sbx_fail(-SBX_ECONFIG, "config: key '%s': %s is out of range "
			                "(%" PRId64 "..%" PRId64 ")", path, lit, min, max);
		return sbx_fail(-SBX_ECONFIG, "config: key '%s': expected an integer, got number %s",
		                path, lit);
	}
	if (v->type != SBX_JSON_INT)
		return sbx_fail(-SBX_ECONFIG, "config: key '%s': expected an integer, got %s", path,
		                sbx_json_type_name(v->type));
	if (v->i < min || v->i > max)
		return sbx_fail(-SBX_ECONFIG, "config: key '%s': %" PRId64 " is out of range "
		                "(%" PRId64 "..%" PRId64 ")", path, v->i, min, max);
	*out = v->i;
	return 0;
}

static int parse_backend(sbx_config *cfg, const sbx_json *v)
{
	char shown[SHOWN_SIZE];
	char *name;
	int rc = expect_c_string(v, "backend");

	if (rc < 0)
		return rc;
	if (!sbx_config_valid_backend_name(v->str)) {
		show(shown, sizeof shown, "", v->str, v->len);
		return sbx_fail(-SBX_ECONFIG, "config: key 'backend': invalid backend name '%s' "
		                "(expected [a-z0-9_], 1..%d characters)", shown, BACKEND_NAME_MAX);
	}
	name = strdup(v->str);
	if (!name)
		return config_oom();
	free(cfg->backend);
	cfg->backend = name;
	return 0;
}

/* Drops empty and "." components and trailing slashes of an absolute path, in place. ".."
 * stays: what it leads to depends on symlinks, and this code does not look at the disk. */
static void normalize_absolute_path(char *path)
{
	char *in = path, *out = path;

	while (*in) {
		char *end;
		size_t n;

		while (*in == '/')
			in++;
		end = strchrnul(in, '/');
		n = (size_t)(end - in);
		if (n && !(n == 1 && in[0] == '.')) {
			*out++ = '/';
			memmove(out, in, n);
			out += n;
		}
		in = end;
	}
	if (out == path)
		*out++ = '/';
	*out = '\0';
}

static int parse_workdir(sbx_config *cfg, const sbx_json *v)
{
	_cleanup_free_ char *cwd = NULL;
	char *path = NULL;
	int rc = expect_c_string(v, "workdir");

	if (rc < 0)
		return rc;
	if (v->len == 0)
		return sbx_fail(-SBX_ECONFIG, "config: key 'workdir': must not be empty");
	if (v->len >= PATH_MAX)
		return sbx_fail(-SBX_ECONFIG, "config: key 'workdir': longer than %d bytes",
		                PATH_MAX - 1);
	if (v->str[0] == '/') {
		path = strdup(v->str);
	} else {
		cwd = getcwd(NULL, 0);
		if (!cwd)
			return sbx_fail(-SBX_ECONFIG, "config: key 'workdir': cannot make the relative "
			                "path absolute: getcwd: %s", strerror(errno));
		if (asprintf(&path, "%s/%s", cwd, v->str) < 0)
			path = NULL;
	}
	if (!path)
		return config_oom();
	normalize_absolute_path(path);
	if (strlen(path) >= PATH_MAX) {
		free(path);
		return sbx_fail(-SBX_ECONFIG, "config: key 'workdir': longer than %d bytes once "
		                "made absolute", PATH_MAX - 1);
	}
	free(cfg->workdir);
	cfg->workdir = path;
	return 0;
}

static int parse_id(sbx_config *cfg, const sbx_json *v)
{
	char shown[SHOWN_SIZE];
	int rc = expect_c_string(v, "id");

	if (rc < 0)
		return rc;
	if (!sbx_config_valid_id(v->str)) {
		show(shown, sizeof shown, "", v->str, v->len);
		return sbx_fail(-SBX_ECONFIG, "config: key 'id': invalid id '%s' (expected "
		                "[A-Za-z0-9_.-], 1..%d characters, not starting with '.')", shown,
		                ID_MAX);
	}
	free(cfg->id);
	cfg->id = strdup(v->str);
	return cfg->id ? 0 : config_oom();
}

/* "workdir" keeps the old in-tree folder; anything else must be an absolute path of a
 * folder the library may make (it is this workspace's own, not a parent of several). */
static int parse_state_dir(sbx_config *cfg, const sbx_json *v)
{
	int rc = expect_c_string(v, "state_dir");
	char *copy;

	if (rc < 0)
		return rc;
	if (strcmp(v->str, "workdir") != 0 && v->str[0] != '/')
		return sbx_fail(-SBX_ECONFIG, "config: key 'state_dir': expected an absolute path "
		                "or \"workdir\"");
	if (v->len >= PATH_MAX)
		return sbx_fail(-SBX_ECONFIG, "config: key 'state_dir': longer than %d bytes",
		                PATH_MAX - 1);
	if (!(copy = strdup(v->str)))
		return config_oom();
	if (copy[0] == '/')
		normalize_absolute_path(copy);
	if (!strcmp(copy, "/")) {
		free(copy);
		return sbx_fail(-SBX_ECONFIG, "config: key 'state_dir': must not be /");
	}
	free(cfg->state_dir);
	cfg->state_dir = copy;
	return 0;
}

static void strv_free(char **v)
{
	if (!v)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}

static int env_entry(const char *name, size_t name_len, const sbx_json *value, char **out)
{
	char path[SHOWN_SIZE];

	show(path, sizeof path, "env.", name, name_len);
	if (!valid_env_name(name, name_len))
		return sbx_fail(-SBX_ECONFIG, "config: key '%s': invalid variable name (expected "
		                "[A-Za-z_][A-Za-z0-9_]*, at most %d characters)", path,
		                ENV_NAME_MAX);
	if (expect_c_string(value, path) < 0)
		return -SBX_ECONFIG;
	if (value->len > ENV_VALUE_MAX)
		return sbx_fail(-SBX_ECONFIG, "config: key '%s': value longer than %zu bytes", path,
		                ENV_VALUE_MAX);
	if (asprintf(out, "%s=%s", name, value->str) < 0) {
		*out = NULL;
		return config_oom();
	}
	return 0;
}

static int parse_env(sbx_config *cfg, const sbx_json *v)
{
	char **env;
	int rc = expect_type(v, SBX_JSON_OBJECT, "an object", "env");

	if (rc < 0)
		return rc;
	if (v->n > ENV_MAX_ENTRIES)
		return sbx_fail(-SBX_ECONFIG, "config: key 'env': more than %d variables",
		                ENV_MAX_ENTRIES);
	env = calloc(v->n + 1, sizeof *env);
	if (!env)
		return config_oom();
	for (size_t i = 0; i < v->n; i++) {
		rc = env_entry(v->keys[i], v->key_lens[i], v->items[i], &env[i]);
		if (rc < 0) {
			strv_free(env);
			return rc;
		}
	}
	strv_free(cfg->env);
	cfg->env = env;
	return 0;
}

static int parse_timeout(sbx_config *cfg, const sbx_json *v)
{
	return expect_int(v, "timeout_ms", 0, TIMEOUT_MS_MAX, &cfg->timeout_ms);
}

static const limit_rule *find_limit_rule(const char *name, size_t len)
{
	for (size_t i = 0; i < SBX_ARRAY_SIZE(limit_rules); i++)
		if (strlen(limit_rules[i].name) == len && memcmp(limit_rules[i].name, name, len) == 0)
			return &limit_rules[i];
	return NULL;
}

static int parse_limits(sbx_config *cfg, const sbx_json *v)
{
	char path[SHOWN_SIZE];
	int rc = expect_type(v, SBX_JSON_OBJECT, "an object", "limits");

	if (rc < 0)
		return rc;
	for (size_t i = 0; i < v->n; i++) {
		const limit_rule *rule = find_limit_rule(v->keys[i], v->key_lens[i]);
		int64_t value = 0;

		show(path, sizeof path, "limits.", v->keys[i], v->key_lens[i]);
		if (!rule)
			return sbx_fail(-SBX_ECONFIG, "config: unknown key '%s'", path);
		rc = expect_int(v->items[i], path, rule->min, rule->max, &value);
		if (rc < 0)
			return rc;
		if (rule->offset == LIMIT_MAX_OUTPUT)
			cfg->max_output = (size_t)value;
		else
			*(uint64_t *)((char *)cfg + rule->offset) = (uint64_t)value;
	}
	return 0;
}

/* The "network" object (util/netpolicy.c validates it, the same code the proxy decides
 * with). Kept as its compact JSON for the backend and the proxy, and its mode by name. */
static int network_from_json(const sbx_json *v, const char *who, char **mode, char **json)
{
	struct sbx_network net;
	sbx_buf b = { 0 };
	char err[512];

	if (sbx_network_parse(v, &net, err, sizeof err) < 0)
		return sbx_fail(-SBX_ECONFIG, "%s: %s", who, err);
	bool given = net.mode_given;

	sbx_json_write(&b, v);
	*json = sbx_buf_steal(&b, NULL);
	*mode = given ? strdup(sbx_net_mode_name(net.mode)) : NULL;
	sbx_network_free(&net);
	if (!*json || (given && !*mode)) {
		free(*json);
		free(*mode);
		*json = *mode = NULL;
		return sbx_fail(-SBX_ENOMEM, "%s: out of memory", who);
	}
	return 0;
}

static int parse_network(sbx_config *cfg, const sbx_json *v)
{
	char *mode = NULL, *json = NULL;
	int rc = network_from_json(v, "config", &mode, &json);

	if (rc < 0)
		return rc;
	free(cfg->network_mode);
	free(cfg->network_json);
	cfg->network_mode = mode;
	cfg->network_json = json;
	return 0;
}

int sbx_config_parse_network(const char *text, const char *who, char **mode, char **json)
{
	sbx_json *root = NULL;
	char err[256];
	int rc;

	*mode = *json = NULL;
	if (!text)
		return sbx_fail(-SBX_EINVAL, "%s: no network object", who);
	rc = sbx_json_parse(text, strnlen(text, SBX_CONFIG_MAX_BYTES + 1), &root, err, sizeof err);
	if (rc == -SBX_ENOMEM)
		return sbx_fail(rc, "%s: out of memory", who);
	if (rc < 0)
		return sbx_fail(-SBX_ECONFIG, "%s: %s", who, err);
	rc = network_from_json(root, who, mode, json);
	sbx_json_free(root);
	if (rc == 0 && !*mode) {
		free(*json);
		*json = NULL;
		rc = sbx_fail(-SBX_ECONFIG, "%s: key 'network.mode': missing", who);
	}
	return rc;
}

/* What reset returns the workspace to. */
static int parse_baseline(sbx_config *cfg, const sbx_json *v)
{
	static const char *const names[] = { "default", "keep", "empty", "snapshot" };
	char shown[SHOWN_SIZE];
	int rc = expect_c_string(v, "baseline");

	if (rc < 0)
		return rc;
	for (size_t i = 0; i < SBX_ARRAY_SIZE(names); i++)
		if (strcmp(v->str, names[i]) == 0) {
			cfg->baseline = (enum sbx_baseline)i;
			return 0;
		}
	show(shown, sizeof shown, "", v->str, v->len);
	return sbx_fail(-SBX_ECONFIG, "config: key 'baseline': unknown value '%s' (expected "
	                "\"keep\", \"empty\" or \"snapshot\")", shown);
}

/* "read-only": every write through the library fails, and backends that can mount the
 * workspace read-only do. */
static int parse_mode(sbx_config *cfg, const sbx_json *v)
{
	char shown[SHOWN_SIZE];
	int rc = expect_c_string(v, "mode");

	if (rc < 0)
		return rc;
	if (strcmp(v->str, "read-only") == 0 || strcmp(v->str, "read-write") == 0) {
		cfg->read_only = v->str[5] == 'o';
		return 0;
	}
	show(shown, sizeof shown, "", v->str, v->len);
	return sbx_fail(-SBX_ECONFIG, "config: key 'mode': unknown value '%s' (expected "
	                "\"read-write\" or \"read-only\")", shown);
}

static int parse_audit_redact(sbx_config *cfg, const sbx_json *v)
{
	int rc = expect_type(v, SBX_JSON_ARRAY, "an array of strings", "audit.redact");

	if (rc < 0)
		return rc;
	if (v->n > SBX_AUDIT_MAX_SECRETS)
		return sbx_fail(-SBX_ECONFIG, "config: key 'audit.redact': at most %d entries",
		                SBX_AUDIT_MAX_SECRETS);
	strv_free(cfg->audit_redact);
	cfg->audit_redact = calloc(v->n + 1, sizeof *cfg->audit_redact);
	if (!cfg->audit_redact)
		return config_oom();
	for (size_t i = 0; i < v->n; i++) {
		char path[SHOWN_SIZE];

		snprintf(path, sizeof path, "audit.redact[%zu]", i);
		if ((rc = expect_c_string(v->items[i], path)) < 0)
			return rc;
		if (v->items[i]->len < 4)
			return sbx_fail(-SBX_ECONFIG, "config: key '%s': a secret of fewer than 4 "
			                "characters would redact ordinary text", path);
		if (!(cfg->audit_redact[i] = strdup(v->items[i]->str)))
			return config_oom();
	}
	return 0;
}

/* The audit log: {"enabled": bool, "max_bytes": size before rotation, "keep": rotated files
 * kept, "redact": [secrets never written]}. */
static int parse_audit(sbx_config *cfg, const sbx_json *v)
{
	char path[SHOWN_SIZE];
	int64_t n = 0;
	int rc = expect_type(v, SBX_JSON_OBJECT, "an object", "audit");

	for (size_t i = 0; rc == 0 && i < v->n; i++) {
		const char *k = v->keys[i];
		const sbx_json *item = v->items[i];

		if (v->key_lens[i] != strlen(k))
			k = "";       /* an embedded NUL: unknown */
		if (strcmp(k, "enabled") == 0) {
			if ((rc = expect_type(item, SBX_JSON_BOOL, "true or false", "audit.enabled")) == 0)
				cfg->audit_enabled = item->b;
		} else if (strcmp(k, "max_bytes") == 0) {
			if ((rc = expect_int(item, "audit.max_bytes", 4096, INT64_C(1) << 40, &n)) == 0)
				cfg->audit_max_bytes = (uint64_t)n;
		} else if (strcmp(k, "keep") == 0) {
			if ((rc = expect_int(item, "audit.keep", 0, 100, &n)) == 0)
				cfg->audit_keep = (int)n;
		} else if (strcmp(k, "redact") == 0) {
			rc = parse_audit_redact(cfg, item);
		} else {
			show(path, sizeof path, "audit.", v->keys[i], v->key_lens[i]);
			rc = sbx_fail(-SBX_ECONFIG, "config: unknown key '%s'", path);
		}
	}
	return rc;
}

/* MCP: {"transport": "socket" | "stream"} — how the host reaches the workspace's MCP
 * gateway (src/proto/mcp_proto.h). Absent: the backend's capabilities decide. */
static int parse_mcp(sbx_config *cfg, const sbx_json *v)
{
	char shown[SHOWN_SIZE];
	int rc = expect_type(v, SBX_JSON_OBJECT, "an object", "mcp");

	for (size_t i = 0; rc == 0 && i < v->n; i++) {
		const sbx_json *item = v->items[i];

		if (v->key_lens[i] != strlen(v->keys[i]) || strcmp(v->keys[i], "transport") != 0) {
			show(shown, sizeof shown, "mcp.", v->keys[i], v->key_lens[i]);
			return sbx_fail(-SBX_ECONFIG, "config: unknown key '%s'", shown);
		}
		if ((rc = expect_c_string(item, "mcp.transport")) < 0)
			return rc;
		if (strcmp(item->str, "socket") != 0 && strcmp(item->str, "stream") != 0) {
			show(shown, sizeof shown, "", item->str, item->len);
			return sbx_fail(-SBX_ECONFIG, "config: key 'mcp.transport': unknown value '%s' "
			                "(expected \"socket\" or \"stream\")", shown);
		}
		cfg->mcp_stream = strcmp(item->str, "stream") == 0 ? 1 : 0;
	}
	return rc;
}

/* The opt-in for a workdir in a system tree (src/workdir_policy.c): the key names the risk. */
static int parse_allow_system_workdir(sbx_config *cfg, const sbx_json *v)
{
	int rc = expect_type(v, SBX_JSON_BOOL, "true or false", "unsafe_allow_system_workdir");

	if (rc == 0)
		cfg->allow_system_workdir = v->b;
	return rc;
}

typedef int (*key_parser)(sbx_config *cfg, const sbx_json *v);

static const struct {
	const char *name;
	key_parser parse;       /* NULL: handled before the others */
} top_level_keys[] = {
	{ "backend", NULL },
	{ "workdir", parse_workdir },
	{ "id", parse_id },
	{ "state_dir", parse_state_dir },
	{ "env", parse_env },
	{ "timeout_ms", parse_timeout },
	{ "limits", parse_limits },
	{ "network", parse_network },
	{ "baseline", parse_baseline },
	{ "mode", parse_mode },
	{ "audit", parse_audit },
	{ "mcp", parse_mcp },
	{ "unsafe_allow_system_workdir", parse_allow_system_workdir },
};

static bool find_top_level_key(const char *name, key_parser *parse)
{
	for (size_t i = 0; i < SBX_ARRAY_SIZE(top_level_keys); i++) {
		if (strcmp(top_level_keys[i].name, name) == 0) {
			*parse = top_level_keys[i].parse;
			return true;
		}
	}
	return false;
}

/* A backend's own section. The chosen backend's name is accepted even where the registry does
 * not list it (an out-of-tree plugin): whether it exists is the registry's call at open. */
static int parse_backend_section(sbx_config *cfg, const char *key, const sbx_json *v)
{
	sbx_buf b = {0};
	char *json;
	int rc = expect_type(v, SBX_JSON_OBJECT, "an object", key);

	if (rc < 0 || strcmp(key, cfg->backend) != 0)
		return rc;
	sbx_json_write(&b, v);
	json = sbx_buf_steal(&b, NULL);
	if (!json)
		return config_oom();
	free(cfg->backend_options);
	cfg->backend_options = json;
	return 0;
}

static int parse_member(sbx_config *cfg, const char *key, size_t key_len, const sbx_json *v)
{
	char shown[SHOWN_SIZE];
	key_parser parse;

	/* A key with a NUL byte matches nothing, and must not match its C-string prefix. */
	if (strlen(key) == key_len) {
		if (find_top_level_key(key, &parse))
			return parse ? parse(cfg, v) : 0;
		/* Only well-formed names reach the registry, which may look for plugin files. */
		if (sbx_config_valid_backend_name(key) &&
		    (strcmp(key, cfg->backend) == 0 || sbx_registry_is_backend_name(key)))
			return parse_backend_section(cfg, key, v);
	}
	show(shown, sizeof shown, "", key, key_len);
	return sbx_fail(-SBX_ECONFIG, "config: unknown key '%s'", shown);
}

static int config_new(const char *text, sbx_config **out)
{
	sbx_config *cfg = calloc(1, sizeof *cfg);

	*out = cfg;
	if (!cfg)
		return config_oom();
	cfg->max_output = SBX_DEFAULT_MAX_OUTPUT;
	cfg->audit_enabled = true;
	cfg->mcp_stream = -1;
	cfg->audit_max_bytes = SBX_AUDIT_DEFAULT_MAX_BYTES;
	cfg->audit_keep = SBX_AUDIT_DEFAULT_KEEP;
	cfg->backend = strdup(SBX_DEFAULT_BACKEND);
	cfg->env = calloc(1, sizeof *cfg->env);
	cfg->backend_options = strdup("{}");
	cfg->json = strdup(text);
	if (!cfg->backend || !cfg->env || !cfg->backend_options || !cfg->json)
		return config_oom();
	return 0;
}

static int config_fill(sbx_config *cfg, const sbx_json *root)
{
	const sbx_json *backend;
	int rc;

	if (root->type != SBX_JSON_OBJECT)
		return sbx_fail(-SBX_ECONFIG, "config: expected a JSON object, got %s",
		                sbx_json_type_name(root->type));
	/* The backend comes first: it decides which section becomes backend_options. */
	backend = sbx_json_get(root, "backend");
	if (backend && (rc = parse_backend(cfg, backend)) < 0)
		return rc;
	for (size_t i = 0; i < root->n; i++) {
		rc = parse_member(cfg, root->keys[i], root->key_lens[i], root->items[i]);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int sbx_config_parse(const char *text, sbx_config **out)
{
	sbx_json *root = NULL;
	sbx_config *cfg = NULL;
	char err[256];
	size_t len;
	int rc;

	if (!out)
		return sbx_fail(-SBX_EINVAL, "config: no output pointer");
	*out = NULL;
	if (!text || !*text)
		text = "{}";
	len = strnlen(text, (size_t)SBX_CONFIG_MAX_BYTES + 1);
	if (len > SBX_CONFIG_MAX_BYTES)
		return sbx_fail(-SBX_ECONFIG, "config: larger than %u bytes", SBX_CONFIG_MAX_BYTES);
	rc = sbx_json_parse(text, len, &root, err, sizeof err);
	if (rc == -SBX_ENOMEM)
		return config_oom();
	if (rc < 0)
		return sbx_fail(-SBX_ECONFIG, "config: %s", err);
	rc = config_new(text, &cfg);
	if (rc == 0)
		rc = config_fill(cfg, root);
	sbx_json_free(root);
	if (rc < 0) {
		sbx_config_free(cfg);
		return rc;
	}
	*out = cfg;
	return 0;
}

void sbx_config_free(sbx_config *cfg)
{
	if (!cfg)
		return;
	free(cfg->backend);
	free(cfg->workdir);
	free(cfg->id);
	free(cfg->state_dir);
	strv_free(cfg->env);
	free(cfg->network_mode);
	free(cfg->network_json);
	strv_free(cfg->audit_redact);
	free(cfg->backend_options);
	free(cfg->json);
	free(cfg);
}
