/* Unit tests of configuration parsing and validation. */
#include <check.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <agentsbx/agentsbx.h>
#include "config.h"
#include "support.h"
#include "util/buf.h"

static sbx_config *parse_ok(const char *text)
{
	sbx_config *cfg = NULL;
	int rc = sbx_config_parse(text, &cfg);

	ck_assert_msg(rc == 0, "config %s failed: %s", text ? text : "(null)", sbx_last_error());
	ck_assert_ptr_nonnull(cfg);
	return cfg;
}

/* Expects -SBX_ECONFIG with a message containing `want`. */
static void assert_refused(const char *text, const char *want)
{
	sbx_config *cfg = (sbx_config *)&cfg; /* must be reset to NULL */
	int rc = sbx_config_parse(text, &cfg);

	ck_assert_msg(rc == -SBX_ECONFIG, "config %s gave %d", text, rc);
	ck_assert_ptr_null(cfg);
	ck_assert_msg(strstr(sbx_last_error(), want) != NULL, "config %s: message '%s' lacks '%s'",
	              text, sbx_last_error(), want);
	ck_assert_msg(strncmp(sbx_last_error(), "config: ", 8) == 0, "%s", sbx_last_error());
}

static void assert_defaults(const sbx_config *cfg)
{
	ck_assert_str_eq(cfg->backend, SBX_DEFAULT_BACKEND);
	ck_assert_ptr_null(cfg->workdir);
	ck_assert_ptr_null(cfg->id);
	ck_assert_ptr_nonnull(cfg->env);
	ck_assert_ptr_null(cfg->env[0]);
	ck_assert_int_eq(cfg->timeout_ms, 0);
	ck_assert_uint_eq(cfg->max_output, SBX_DEFAULT_MAX_OUTPUT);
	ck_assert_uint_eq(cfg->limits.cpu_seconds, 0);
	ck_assert_uint_eq(cfg->limits.memory_bytes, 0);
	ck_assert_uint_eq(cfg->limits.file_size_bytes, 0);
	ck_assert_uint_eq(cfg->limits.open_files, 0);
	ck_assert_uint_eq(cfg->limits.processes, 0);
	ck_assert_uint_eq(cfg->limits.pids, 0);
	ck_assert_ptr_null(cfg->network_mode);
	ck_assert_str_eq(cfg->backend_options, "{}");
}

START_TEST(empty_configs_give_defaults)
{
	static const char *const texts[] = { NULL, "", "{}", " { } \n" };

	for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
		sbx_config *cfg = parse_ok(texts[i]);

		assert_defaults(cfg);
		ck_assert_str_eq(cfg->json, texts[i] && *texts[i] ? texts[i] : "{}");
		sbx_config_free(cfg);
	}
	sbx_config_free(NULL);
}
END_TEST

START_TEST(full_config)
{
	const char *text =
		"{\"backend\": \"docker\", \"workdir\": \"/srv/ws/\", \"id\": \"agent-7.a_b\","
		" \"env\": {\"FOO\": \"bar\", \"_X1\": \"\", \"EQ\": \"a=b\"},"
		" \"timeout_ms\": 30000,"
		" \"limits\": {\"max_output\": 1024, \"cpu_seconds\": 10,"
		"   \"memory_bytes\": 268435456, \"file_size_bytes\": 1048576, \"open_files\": 256,"
		"   \"processes\": 64, \"pids\": 128},"
		" \"network\": {\"mode\": \"host\"},"
		" \"docker\": {\"image\": \"debian:12\", \"opts\": [1, 2.5, true, null]},"
		" \"k8s\": {\"namespace\": \"x\"}}";
	sbx_config *cfg = parse_ok(text);

	ck_assert_str_eq(cfg->backend, "docker");
	ck_assert_str_eq(cfg->workdir, "/srv/ws");
	ck_assert_str_eq(cfg->id, "agent-7.a_b");
	ck_assert_str_eq(cfg->env[0], "FOO=bar");
	ck_assert_str_eq(cfg->env[1], "_X1=");
	ck_assert_str_eq(cfg->env[2], "EQ=a=b");
	ck_assert_ptr_null(cfg->env[3]);
	ck_assert_int_eq(cfg->timeout_ms, 30000);
	ck_assert_uint_eq(cfg->max_output, 1024);
	ck_assert_uint_eq(cfg->limits.cpu_seconds, 10);
	ck_assert_uint_eq(cfg->limits.memory_bytes, 268435456);
	ck_assert_uint_eq(cfg->limits.file_size_bytes, 1048576);
	ck_assert_uint_eq(cfg->limits.open_files, 256);
	ck_assert_uint_eq(cfg->limits.processes, 64);
	ck_assert_uint_eq(cfg->limits.pids, 128);
	ck_assert_str_eq(cfg->network_mode, "host");
	ck_assert_str_eq(cfg->backend_options,
	                 "{\"image\":\"debian:12\",\"opts\":[1,2.5,true,null]}");
	ck_assert_str_eq(cfg->json, text);
	sbx_config_free(cfg);
}
END_TEST

START_TEST(top_level_must_be_an_object)
{
	assert_refused("[]", "config: expected a JSON object, got array");
	assert_refused("1", "got integer");
	assert_refused("\"x\"", "got string");
	assert_refused("null", "got null");
}
END_TEST

START_TEST(invalid_json_names_offset)
{
	assert_refused("{\"id\": }", "config: invalid JSON at byte ");
	assert_refused("{", "config: invalid JSON at byte 1: premature EOF");
	assert_refused("   ", "config: invalid JSON at byte");
	assert_refused("{\"id\":\"a\",\"id\":\"b\"}", "duplicate object key \"id\"");
	assert_refused("{\"env\":{\"A\":\"\xFF\"}}", "invalid bytes in UTF8 string");
}
END_TEST

START_TEST(size_limit)
{
	char *text = malloc(SBX_CONFIG_MAX_BYTES + 2);
	sbx_config *cfg;

	/* Exactly the limit is fine (whitespace padding)... */
	memset(text, ' ', SBX_CONFIG_MAX_BYTES);
	text[0] = '{';
	text[SBX_CONFIG_MAX_BYTES - 1] = '}';
	text[SBX_CONFIG_MAX_BYTES] = '\0';
	cfg = parse_ok(text);
	ck_assert_uint_eq(strlen(cfg->json), SBX_CONFIG_MAX_BYTES);
	sbx_config_free(cfg);
	/* ...one byte more is not. */
	text[SBX_CONFIG_MAX_BYTES - 1] = ' ';
	text[SBX_CONFIG_MAX_BYTES] = '}';
	text[SBX_CONFIG_MAX_BYTES + 1] = '\0';
	assert_refused(text, "config: larger than 1048576 bytes");
	free(text);
}
END_TEST

START_TEST(unknown_keys)
{
	assert_refused("{\"foo\": 1}", "config: unknown key 'foo'");
	assert_refused("{\"Backend\": \"local\"}", "config: unknown key 'Backend'");
	assert_refused("{\"no_such_backend\": {}}", "config: unknown key 'no_such_backend'");
	/* Keys are shown safely: control bytes escaped, NUL bytes never cut them short, long
	 * keys trimmed. */
	assert_refused("{\"a\\u0001'\\\\\": 1}", "config: unknown key 'a\\x01\\x27\\x5c'");
	assert_refused("{\"id\\u0000x\": \"a\"}", "config: unknown key 'id\\x00x'");
	assert_refused("{\"\xC3\xA9\": 1}", "config: unknown key '\\xc3\\xa9'");

	sbx_buf b = {0};
	char *text;

	sbx_buf_puts(&b, "{\"");
	for (int i = 0; i < 1000; i++)
		sbx_buf_puts(&b, "k");
	sbx_buf_puts(&b, "\": 1}");
	text = sbx_buf_steal(&b, NULL);
	assert_refused(text, "kkkk...'");
	ck_assert_uint_lt(strlen(sbx_last_error()), 200);
	free(text);
}
END_TEST

START_TEST(backend_name)
{
	sbx_config *cfg = parse_ok("{\"backend\": \"opensandbox\"}");

	ck_assert_str_eq(cfg->backend, "opensandbox");
	sbx_config_free(cfg);
	/* Existence is the registry's business at open time, not the parser's. */
	cfg = parse_ok("{\"backend\": \"my_plugin_2\"}");
	ck_assert_str_eq(cfg->backend, "my_plugin_2");
	sbx_config_free(cfg);

	assert_refused("{\"backend\": \"Docker\"}", "config: key 'backend': invalid backend name 'Docker'");
	assert_refused("{\"backend\": \"\"}", "key 'backend'");
	assert_refused("{\"backend\": \"a-b\"}", "key 'backend'");
	assert_refused("{\"backend\": \"../x\"}", "key 'backend'");
	assert_refused("{\"backend\": \"abcdefghijklmnopqrstuvwxyz0123456\"}", "key 'backend'");
	assert_refused("{\"backend\": \"loc\\u0000al\"}", "key 'backend': contains a NUL byte");
	assert_refused("{\"backend\": 1}", "config: key 'backend': expected a string, got integer");
	assert_refused("{\"backend\": null}", "config: key 'backend': expected a string, got null");
	cfg = parse_ok("{\"backend\": \"abcdefghijklmnopqrstuvwxyz012345\"}");
	sbx_config_free(cfg);
}
END_TEST

START_TEST(valid_name_helpers)
{
	char long_id[70];

	ck_assert(sbx_config_valid_id("a"));
	ck_assert(sbx_config_valid_id("A-z_0.9"));
	ck_assert(sbx_config_valid_id("x.."));
	ck_assert(!sbx_config_valid_id(NULL));
	ck_assert(!sbx_config_valid_id(""));
	ck_assert(!sbx_config_valid_id("."));
	ck_assert(!sbx_config_valid_id(".."));
	ck_assert(!sbx_config_valid_id(".hidden"));
	ck_assert(!sbx_config_valid_id("a/b"));
	ck_assert(!sbx_config_valid_id("a b"));
	ck_assert(!sbx_config_valid_id("\xC3\xA9"));
	memset(long_id, 'x', 64);
	long_id[64] = '\0';
	ck_assert(sbx_config_valid_id(long_id));
	long_id[64] = 'x';
	long_id[65] = '\0';
	ck_assert(!sbx_config_valid_id(long_id));

	ck_assert(sbx_config_valid_backend_name("local"));
	ck_assert(sbx_config_valid_backend_name("a_1"));
	ck_assert(!sbx_config_valid_backend_name(NULL));
	ck_assert(!sbx_config_valid_backend_name(""));
	ck_assert(!sbx_config_valid_backend_name("Local"));
	ck_assert(!sbx_config_valid_backend_name("lo cal"));
	ck_assert(!sbx_config_valid_backend_name("a.so"));
}
END_TEST

START_TEST(workdir_absolute_is_normalised)
{
	static const struct { const char *in, *want; } cases[] = {
		{ "/srv/ws", "/srv/ws" },
		{ "/srv/ws/", "/srv/ws" },
		{ "/srv//ws///", "/srv/ws" },
		{ "/srv/./ws/.", "/srv/ws" },
		{ "/srv/../ws", "/srv/../ws" },  /* ".." depends on symlinks: kept */
		{ "/", "/" },
		{ "///", "/" },
		{ "/.", "/" },
		{ "/a b/\xC3\xA9", "/a b/\xC3\xA9" },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char text[256];
		sbx_config *cfg;

		snprintf(text, sizeof text, "{\"workdir\": \"%s\"}", cases[i].in);
		cfg = parse_ok(text);
		ck_assert_str_eq(cfg->workdir, cases[i].want);
		sbx_config_free(cfg);
	}
}
END_TEST

START_TEST(workdir_relative_is_made_absolute)
{
	char *cwd = getcwd(NULL, 0);
	char want[PATH_MAX + 16];
	sbx_config *cfg;

	ck_assert_ptr_nonnull(cwd);
	cfg = parse_ok("{\"workdir\": \"ws/sub/\"}");
	snprintf(want, sizeof want, "%s/ws/sub", strcmp(cwd, "/") ? cwd : "");
	ck_assert_str_eq(cfg->workdir, want);
	sbx_config_free(cfg);
	cfg = parse_ok("{\"workdir\": \".\"}");
	ck_assert_str_eq(cfg->workdir, cwd);
	sbx_config_free(cfg);
	free(cwd);
}
END_TEST

START_TEST(workdir_refused)
{
	char *text = malloc(PATH_MAX + 64);

	assert_refused("{\"workdir\": \"\"}", "config: key 'workdir': must not be empty");
	assert_refused("{\"workdir\": \"/a\\u0000b\"}", "config: key 'workdir': contains a NUL");
	assert_refused("{\"workdir\": 5}", "config: key 'workdir': expected a string, got integer");
	assert_refused("{\"workdir\": [\"/x\"]}", "got array");
	strcpy(text, "{\"workdir\": \"/");
	memset(text + strlen(text), 'a', PATH_MAX);
	strcpy(text + 14 + PATH_MAX, "\"}");
	assert_refused(text, "config: key 'workdir': longer than");
	free(text);
}
END_TEST

START_TEST(state_dir_values)
{
	sbx_config *cfg = parse_ok("{}");

	ck_assert_ptr_null(cfg->state_dir);
	sbx_config_free(cfg);
	cfg = parse_ok("{\"state_dir\": \"/srv//state/ws/./\"}");
	ck_assert_str_eq(cfg->state_dir, "/srv/state/ws");
	sbx_config_free(cfg);
	cfg = parse_ok("{\"state_dir\": \"workdir\"}");
	ck_assert_str_eq(cfg->state_dir, "workdir");
	sbx_config_free(cfg);
	assert_refused("{\"state_dir\": \"state\"}",
	               "config: key 'state_dir': expected an absolute path or \"workdir\"");
	assert_refused("{\"state_dir\": \"\"}", "config: key 'state_dir': expected an absolute");
	assert_refused("{\"state_dir\": \"/\"}", "config: key 'state_dir': must not be /");
	assert_refused("{\"state_dir\": \"//./\"}", "config: key 'state_dir': must not be /");
	assert_refused("{\"state_dir\": 5}", "config: key 'state_dir': expected a string");
	assert_refused("{\"state_dir\": \"/a\\u0000b\"}", "config: key 'state_dir': contains a NUL");
}
END_TEST

START_TEST(id_values)
{
	sbx_config *cfg = parse_ok("{\"id\": \"ws-1\"}");

	ck_assert_str_eq(cfg->id, "ws-1");
	sbx_config_free(cfg);
	assert_refused("{\"id\": \"\"}", "config: key 'id': invalid id ''");
	assert_refused("{\"id\": \".x\"}", "config: key 'id': invalid id '.x'");
	assert_refused("{\"id\": \"../etc\"}", "key 'id'");
	assert_refused("{\"id\": \"a\\nb\"}", "invalid id 'a\\x0ab'");
	assert_refused("{\"id\": \"a\\u0000\"}", "key 'id': contains a NUL byte");
	assert_refused("{\"id\": 7}", "config: key 'id': expected a string, got integer");
	assert_refused("{\"id\": \"0123456789012345678901234567890123456789012345678901234567890123"
	               "4\"}", "key 'id'");
}
END_TEST

START_TEST(env_values)
{
	sbx_config *cfg = parse_ok("{\"env\": {}}");

	ck_assert_ptr_nonnull(cfg->env);
	ck_assert_ptr_null(cfg->env[0]);
	sbx_config_free(cfg);
	cfg = parse_ok("{\"env\": {\"PATH\": \"/x\", \"LANG\": \"C.UTF-8\", \"U\": \"\xC3\xA9\"}}");
	ck_assert_str_eq(cfg->env[0], "PATH=/x");
	ck_assert_str_eq(cfg->env[1], "LANG=C.UTF-8");
	ck_assert_str_eq(cfg->env[2], "U=\xC3\xA9");
	ck_assert_ptr_null(cfg->env[3]);
	sbx_config_free(cfg);

	assert_refused("{\"env\": []}", "config: key 'env': expected an object, got array");
	assert_refused("{\"env\": {\"FOO\": 1}}", "config: key 'env.FOO': expected a string, got integer");
	assert_refused("{\"env\": {\"FOO\": null}}", "config: key 'env.FOO': expected a string, got null");
	assert_refused("{\"env\": {\"FOO\": \"a\\u0000b\"}}", "config: key 'env.FOO': contains a NUL");
	assert_refused("{\"env\": {\"1A\": \"x\"}}", "config: key 'env.1A': invalid variable name");
	assert_refused("{\"env\": {\"A-B\": \"x\"}}", "key 'env.A-B': invalid variable name");
	assert_refused("{\"env\": {\"A=B\": \"x\"}}", "key 'env.A=B': invalid variable name");
	assert_refused("{\"env\": {\"\": \"x\"}}", "key 'env.': invalid variable name");
	assert_refused("{\"env\": {\"A\\u0000B\": \"x\"}}", "key 'env.A\\x00B': invalid variable name");
	assert_refused("{\"env\": {\"OK\": \"x\", \"BAD NAME\": \"x\"}}", "key 'env.BAD NAME'");
}
END_TEST

/* {"env": {<n variables named V<i> with value_len 'x's>}} with an optional extra name. */
static char *env_config(int n, size_t value_len, size_t name_len)
{
	sbx_buf b = {0};

	sbx_buf_puts(&b, "{\"env\": {");
	for (int i = 0; i < n; i++) {
		sbx_buf_printf(&b, "%s\"V%d", i ? "," : "", i);
		for (size_t k = 1; k < name_len; k++)
			sbx_buf_puts(&b, "_");
		sbx_buf_puts(&b, "\":\"");
		for (size_t k = 0; k < value_len; k++)
			sbx_buf_append(&b, "x", 1);
		sbx_buf_puts(&b, "\"");
	}
	sbx_buf_puts(&b, "}}");
	return sbx_buf_steal(&b, NULL);
}

START_TEST(env_limits)
{
	sbx_config *cfg;
	char *text;

	text = env_config(1024, 1, 1);
	cfg = parse_ok(text);
	ck_assert_str_eq(cfg->env[1023], "V1023=x");
	ck_assert_ptr_null(cfg->env[1024]);
	sbx_config_free(cfg);
	free(text);
	text = env_config(1025, 1, 1);
	assert_refused(text, "config: key 'env': more than 1024 variables");
	free(text);

	text = env_config(1, 128 * 1024, 1);
	cfg = parse_ok(text);
	ck_assert_uint_eq(strlen(cfg->env[0]), 3 + 128 * 1024);
	sbx_config_free(cfg);
	free(text);
	text = env_config(1, 128 * 1024 + 1, 1);
	assert_refused(text, "config: key 'env.V0': value longer than 131072 bytes");
	free(text);

	/* "V0" plus underscores: 256 characters in all is the longest name. */
	text = env_config(1, 1, 255);
	cfg = parse_ok(text);
	sbx_config_free(cfg);
	free(text);
	text = env_config(1, 1, 256);
	assert_refused(text, "invalid variable name");
	free(text);
}
END_TEST

START_TEST(timeout_values)
{
	sbx_config *cfg = parse_ok("{\"timeout_ms\": 604800000}");

	ck_assert_int_eq(cfg->timeout_ms, 604800000);
	sbx_config_free(cfg);
	cfg = parse_ok("{\"timeout_ms\": 0}");
	ck_assert_int_eq(cfg->timeout_ms, 0);
	sbx_config_free(cfg);

	assert_refused("{\"timeout_ms\": \"10\"}",
	               "config: key 'timeout_ms': expected an integer, got string");
	assert_refused("{\"timeout_ms\": true}", "key 'timeout_ms': expected an integer, got boolean");
	assert_refused("{\"timeout_ms\": {}}", "key 'timeout_ms': expected an integer, got object");
	assert_refused("{\"timeout_ms\": 1.5}", "key 'timeout_ms': expected an integer, got number 1.5");
	assert_refused("{\"timeout_ms\": 1.0}", "key 'timeout_ms': expected an integer");
	assert_refused("{\"timeout_ms\": 1e3}", "key 'timeout_ms': expected an integer");
	assert_refused("{\"timeout_ms\": 1e400}", "key 'timeout_ms'");
	assert_refused("{\"timeout_ms\": -1}", "key 'timeout_ms': -1 is out of range (0..604800000)");
	assert_refused("{\"timeout_ms\": 604800001}", "key 'timeout_ms': 604800001 is out of range");
	assert_refused("{\"timeout_ms\": 99999999999999999999}",
	               "key 'timeout_ms': 99999999999999999999 is out of range");
	assert_refused("{\"timeout_ms\": -99999999999999999999}", "key 'timeout_ms'");
	assert_refused("{\"timeout_ms\": -9223372036854775808}", "key 'timeout_ms'");
}
END_TEST

typedef struct limit_case {
	const char *key;
	long long min, max;
} limit_case;

static const limit_case limit_cases[] = {
	{ "max_output", 1, 1LL << 30 },
	{ "cpu_seconds", 1, 1000000 },
	{ "memory_bytes", 1LL << 20, 1LL << 40 },
	{ "file_size_bytes", 1, 1LL << 40 },
	{ "open_files", 16, 1048576 },
	{ "processes", 1, 4194304 },
	{ "pids", 1, 4194304 },
	{ "disk_bytes", 1LL << 20, 1LL << 40 },
	{ "tmp_bytes", 1LL << 20, 1LL << 40 },
};

static uint64_t limit_value(const sbx_config *cfg, const char *key)
{
	if (!strcmp(key, "max_output"))
		return cfg->max_output;
	if (!strcmp(key, "cpu_seconds"))
		return cfg->limits.cpu_seconds;
	if (!strcmp(key, "memory_bytes"))
		return cfg->limits.memory_bytes;
	if (!strcmp(key, "file_size_bytes"))
		return cfg->limits.file_size_bytes;
	if (!strcmp(key, "open_files"))
		return cfg->limits.open_files;
	if (!strcmp(key, "processes"))
		return cfg->limits.processes;
	if (!strcmp(key, "disk_bytes"))
		return cfg->disk_bytes;
	if (!strcmp(key, "tmp_bytes"))
		return cfg->tmp_bytes;
	return cfg->limits.pids;
}

START_TEST(limit_ranges)
{
	const limit_case *c = &limit_cases[_i];
	char text[256], want[128];
	sbx_config *cfg;

	snprintf(text, sizeof text, "{\"limits\": {\"%s\": %lld}}", c->key, c->min);
	cfg = parse_ok(text);
	ck_assert_uint_eq(limit_value(cfg, c->key), (uint64_t)c->min);
	sbx_config_free(cfg);
	snprintf(text, sizeof text, "{\"limits\": {\"%s\": %lld}}", c->key, c->max);
	cfg = parse_ok(text);
	ck_assert_uint_eq(limit_value(cfg, c->key), (uint64_t)c->max);
	sbx_config_free(cfg);

	snprintf(want, sizeof want, "config: key 'limits.%s': %lld is out of range (%lld..%lld)",
	         c->key, c->min - 1, c->min, c->max);
	snprintf(text, sizeof text, "{\"limits\": {\"%s\": %lld}}", c->key, c->min - 1);
	assert_refused(text, want);
	snprintf(text, sizeof text, "{\"limits\": {\"%s\": %lld}}", c->key, c->max + 1);
	assert_refused(text, "is out of range");
	snprintf(text, sizeof text, "{\"limits\": {\"%s\": -1}}", c->key);
	assert_refused(text, "is out of range");
	snprintf(want, sizeof want, "config: key 'limits.%s': expected an integer, got string",
	         c->key);
	snprintf(text, sizeof text, "{\"limits\": {\"%s\": \"1\"}}", c->key);
	assert_refused(text, want);
	snprintf(text, sizeof text, "{\"limits\": {\"%s\": 16.5}}", c->key);
	assert_refused(text, "expected an integer, got number 16.5");
	snprintf(text, sizeof text, "{\"limits\": {\"%s\": 1e400}}", c->key);
	assert_refused(text, "expected an integer");
	snprintf(text, sizeof text, "{\"limits\": {\"%s\": 99999999999999999999}}", c->key);
	assert_refused(text, "is out of range");
}
END_TEST

START_TEST(limits_object)
{
	assert_refused("{\"limits\": 5}", "config: key 'limits': expected an object, got integer");
	assert_refused("{\"limits\": {\"foo\": 1}}", "config: unknown key 'limits.foo'");
	assert_refused("{\"limits\": {\"pids\": 5, \"memory\": 1}}", "unknown key 'limits.memory'");
	assert_refused("{\"limits\": {\"pids\\u0000\": 5}}", "unknown key 'limits.pids\\x00'");
	assert_refused("{\"limits\": {\"pids\": 0}}", "key 'limits.pids': 0 is out of range");
	sbx_config_free(parse_ok("{\"limits\": {}}"));
}
END_TEST

START_TEST(network_values)
{
	sbx_config *cfg = parse_ok("{\"network\": {\"mode\": \"none\"}}");

	ck_assert_str_eq(cfg->network_mode, "none");
	sbx_config_free(cfg);
	cfg = parse_ok("{\"network\": {}}");
	ck_assert_ptr_null(cfg->network_mode);
	sbx_config_free(cfg);

	assert_refused("{\"network\": \"none\"}", "config: key 'network': expected an object, got string");
	assert_refused("{\"network\": {\"mode\": \"open\"}}",
	               "config: key 'network.mode': unknown mode 'open'");
	assert_refused("{\"network\": {\"mode\": \"None\"}}", "key 'network.mode'");
	assert_refused("{\"network\": {\"mode\": \"\"}}", "key 'network.mode'");
	assert_refused("{\"network\": {\"mode\": \"none\\u0000x\"}}", "key 'network.mode'");
	assert_refused("{\"network\": {\"mode\": 0}}",
	               "config: key 'network.mode': expected a string, got integer");
	assert_refused("{\"network\": {\"mode\": \"none\", \"allow\": [\"x.com\"]}}",
	               "config: key 'network.allow': allow and deny lists need \"mode\": "
	               "\"allowlist\"");
	assert_refused("{\"network\": {\"deny\": []}}", "config: key 'network.deny': allow and");
	assert_refused("{\"network\": {\"mode\": \"none\", \"proxy\": 1}}",
	               "config: unknown key 'network.proxy'");
}
END_TEST

/* Allowlist policies: kept as JSON for the backend, every entry checked with a message that
 * names its index. */
START_TEST(network_allowlist)
{
	sbx_config *cfg = parse_ok("{\"network\": {\"mode\": \"allowlist\", \"allow\": "
	                           "[\"pypi.org\", \"*.github.com:443\"], \"deny\": [\"10.0.0.0/8\"]}}");

	ck_assert_str_eq(cfg->network_mode, "allowlist");
	ck_assert_str_eq(cfg->network_json, "{\"mode\":\"allowlist\",\"allow\":[\"pypi.org\","
	                 "\"*.github.com:443\"],\"deny\":[\"10.0.0.0/8\"]}");
	sbx_config_free(cfg);
	cfg = parse_ok("{\"network\": {\"mode\": \"allowlist\"}}");
	ck_assert_str_eq(cfg->network_mode, "allowlist");
	sbx_config_free(cfg);

	assert_refused("{\"network\": {\"mode\": \"allowlist\", \"allow\": [\"a.org\", \"b.org\", "
	               "\"c.org:99999\"]}}",
	               "config: key 'network.allow[2]': \"c.org:99999\": port \"99999\" is not a "
	               "number in 1..65535");
	assert_refused("{\"network\": {\"mode\": \"allowlist\", \"allow\": [\"*\"]}}",
	               "config: key 'network.allow[0]': \"*\": '*' alone would allow every host");
	assert_refused("{\"network\": {\"mode\": \"allowlist\", \"deny\": [\"x\", 7]}}",
	               "config: key 'network.deny[1]': expected a string, got integer");
	assert_refused("{\"network\": {\"mode\": \"allowlist\", \"deny\": [\"bad\\u0001name\"]}}",
	               "config: key 'network.deny[0]': \"bad\\x01name\": host names have only");
	assert_refused("{\"network\": {\"mode\": \"allowlist\", \"allow\": {}}}",
	               "config: key 'network.allow': expected an array of strings, got object");
}
END_TEST

START_TEST(backend_sections)
{
	sbx_config *cfg;

	/* Another backend's section is only type-checked. */
	cfg = parse_ok("{\"docker\": {\"image\": \"x\"}}");
	ck_assert_str_eq(cfg->backend, SBX_DEFAULT_BACKEND);
	ck_assert_str_eq(cfg->backend_options, "{}");
	sbx_config_free(cfg);
	/* The chosen one's becomes backend_options, whichever comes first. */
	cfg = parse_ok("{\"docker\": { \"image\" : \"x\", \"n\": [ 1 ] }, \"backend\": \"docker\"}");
	ck_assert_str_eq(cfg->backend_options, "{\"image\":\"x\",\"n\":[1]}");
	sbx_config_free(cfg);
	cfg = parse_ok("{\"ns\": {\"keep\": true}}");   /* the default backend's own */
	ck_assert_str_eq(cfg->backend_options, "{\"keep\":true}");
	sbx_config_free(cfg);
	cfg = parse_ok("{\"backend\": \"docker\", \"docker\": {}}");
	ck_assert_str_eq(cfg->backend_options, "{}");
	sbx_config_free(cfg);
	/* A plugin the registry does not list may still carry its own options. */
	cfg = parse_ok("{\"backend\": \"my_plugin\", \"my_plugin\": {\"a\": \"\\u00e9\"}}");
	ck_assert_str_eq(cfg->backend_options, "{\"a\":\"\xC3\xA9\"}");
	sbx_config_free(cfg);

	assert_refused("{\"docker\": 1}", "config: key 'docker': expected an object, got integer");
	assert_refused("{\"backend\": \"docker\", \"docker\": \"x\"}",
	               "config: key 'docker': expected an object");
	assert_refused("{\"local\": []}", "config: key 'local': expected an object, got array");
	assert_refused("{\"backend\": \"docker\", \"my_plugin\": {}}",
	               "config: unknown key 'my_plugin'");
	assert_refused("{\"../docker\": {}}", "config: unknown key '../docker'");
	assert_refused("{\"Docker\": {}}", "config: unknown key 'Docker'");
	/* An invalid backend name fails before any section is looked at. */
	assert_refused("{\"docker\": {}, \"backend\": \"Bad\"}", "key 'backend'");
}
END_TEST

START_TEST(first_error_wins_and_nothing_leaks)
{
	/* Errors after some keys were already stored must free them (run under ASan). */
	assert_refused("{\"backend\": \"docker\", \"docker\": {\"a\": 1}, \"workdir\": \"/x\","
	               " \"id\": \"x\", \"env\": {\"A\": \"b\"}, \"network\": {\"mode\": \"host\"},"
	               " \"limits\": {\"pids\": 5}, \"zzz\": 1}", "unknown key 'zzz'");
	assert_refused("{\"env\": {\"A\": \"b\", \"C\": 1}}", "key 'env.C'");
	assert_refused("{\"timeout_ms\": -1, \"foo\": 1}", "key 'timeout_ms'");
}
END_TEST

START_TEST(bad_output_pointer)
{
	ck_assert_int_eq(sbx_config_parse("{}", NULL), -SBX_EINVAL);
}
END_TEST

static Suite *config_suite(void)
{
	Suite *s = suite_create("config");
	TCase *tc = tcase_create("document");

	tcase_add_test(tc, empty_configs_give_defaults);
	tcase_add_test(tc, full_config);
	tcase_add_test(tc, top_level_must_be_an_object);
	tcase_add_test(tc, invalid_json_names_offset);
	tcase_add_test(tc, size_limit);
	tcase_add_test(tc, unknown_keys);
	tcase_add_test(tc, first_error_wins_and_nothing_leaks);
	tcase_add_test(tc, bad_output_pointer);
	suite_add_tcase(s, tc);

	tc = tcase_create("keys");
	tcase_add_test(tc, backend_name);
	tcase_add_test(tc, valid_name_helpers);
	tcase_add_test(tc, workdir_absolute_is_normalised);
	tcase_add_test(tc, workdir_relative_is_made_absolute);
	tcase_add_test(tc, workdir_refused);
	tcase_add_test(tc, id_values);
	tcase_add_test(tc, state_dir_values);
	tcase_add_test(tc, env_values);
	tcase_add_test(tc, env_limits);
	tcase_add_test(tc, timeout_values);
	tcase_add_loop_test(tc, limit_ranges, 0, (int)(sizeof limit_cases / sizeof limit_cases[0]));
	tcase_add_test(tc, limits_object);
	tcase_add_test(tc, network_values);
	tcase_add_test(tc, network_allowlist);
	tcase_add_test(tc, backend_sections);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run_suite(config_suite());
}
