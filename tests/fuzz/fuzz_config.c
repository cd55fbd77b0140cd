/* libFuzzer target for sbx_config_parse: any text must give either a configuration that
 * keeps the documented invariants or -SBX_ECONFIG with a "config: " message; never a crash,
 * a leak or an abort. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <agentsbx/agentsbx.h>
#include "config.h"
#include "util/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond) do { if (!(cond)) { fprintf(stderr, "check failed: %s\n", #cond); \
	abort(); } } while (0)

static void check_env(char **env)
{
	CHECK(env != NULL);
	for (size_t i = 0; env[i]; i++) {
		const char *eq = strchr(env[i], '=');

		CHECK(eq != NULL && eq != env[i]);
		CHECK(i < 1024);
	}
}

static void check_object_text(const char *text)
{
	char err[256];
	sbx_json *v = NULL;

	CHECK(text != NULL);
	CHECK(sbx_json_parse(text, strlen(text), &v, err, sizeof err) == 0);
	CHECK(v->type == SBX_JSON_OBJECT);
	sbx_json_free(v);
}

static void check_config(const sbx_config *cfg, const char *text)
{
	CHECK(sbx_config_valid_backend_name(cfg->backend));
	CHECK(!cfg->id || sbx_config_valid_id(cfg->id));
	if (cfg->workdir) {
		size_t n = strlen(cfg->workdir);

		CHECK(cfg->workdir[0] == '/');
		CHECK(n == 1 || cfg->workdir[n - 1] != '/');
		CHECK(!strstr(cfg->workdir, "//"));
	}
	check_env(cfg->env);
	CHECK(cfg->timeout_ms >= 0 && cfg->timeout_ms <= 604800000);
	CHECK(cfg->max_output >= 1 && cfg->max_output <= ((size_t)1 << 30));
	CHECK(!cfg->network_mode || !strcmp(cfg->network_mode, "none") ||
	      !strcmp(cfg->network_mode, "host"));
	check_object_text(cfg->backend_options);
	CHECK(!strcmp(cfg->json, *text ? text : "{}"));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	sbx_config *cfg = NULL;
	int rc;

	if (!text)
		return 0;
	/* The API takes a C string: the input up to its first NUL. */
	memcpy(text, data, size);
	text[size] = '\0';
	rc = sbx_config_parse(text, &cfg);
	if (rc == 0) {
		CHECK(cfg != NULL);
		check_config(cfg, text);
		sbx_config_free(cfg);
	} else {
		CHECK(cfg == NULL);
		CHECK(rc == -SBX_ECONFIG || rc == -SBX_ENOMEM);
		CHECK(strncmp(sbx_last_error(), "config: ", 8) == 0);
	}
	free(text);
	return 0;
}
