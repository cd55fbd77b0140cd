/* The "docker" config object. Every key is checked for its type and range, and every message
 * names the key: a configuration comes from callers, files and sometimes models. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "docker.h"
#include "util/error.h"

#define MAX_STRING 4096
#define MAX_CPUS 4096
#define DEFAULT_TMP_BYTES (256ull << 20)
#define MAX_TMP_BYTES (64ull << 30)
/* A detached container's idle TTL unless the config says otherwise (the ns default). */
#define DEFAULT_IDLE_TTL_MS (3600 * 1000LL)

static int option_error(const char *key, const char *why)
{
	return sbx_fail(-SBX_ECONFIG, "config: key 'docker.%s': %s", key, why);
}

/* A string without NUL bytes or control characters, at most MAX_STRING bytes. */
static int take_string(const sbx_json *v, const char *key, char **out)
{
	if (v->type != SBX_JSON_STRING)
		return option_error(key, "expected a string");
	if (v->len == 0 || v->len > MAX_STRING)
		return option_error(key, "expected a non-empty string of at most 4096 bytes");
	for (size_t i = 0; i < v->len; i++)
		if ((unsigned char)v->str[i] < 0x20 || v->str[i] == 0x7f)
			return option_error(key, "control characters (NUL included) are not allowed");
	free(*out);
	if (!(*out = strdup(v->str)))
		return sbx_fail(-SBX_ENOMEM, "docker: out of memory");
	return 0;
}

static int take_bool(const sbx_json *v, const char *key, bool *out)
{
	if (v->type != SBX_JSON_BOOL)
		return option_error(key, "expected true or false");
	*out = v->b;
	return 0;
}

/* "user": "uid", "uid:gid" or a user name the image knows (with an optional ":group"). */
static int check_user(const char *user)
{
	for (const char *p = user; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		      *p == '_' || *p == '-' || *p == '.' || *p == ':'))
			return option_error("user", "expected \"uid\", \"uid:gid\" or a user name");
	if (strchr(user, ':') != strrchr(user, ':') || user[0] == ':' ||
	    user[strlen(user) - 1] == ':')
		return option_error("user", "expected \"uid\", \"uid:gid\" or a user name");
	return 0;
}

static int take_cpus(const sbx_json *v, uint64_t *nano)
{
	double cpus;

	if (v->type != SBX_JSON_INT && v->type != SBX_JSON_NUMBER)
		return option_error("cpus", "expected a number");
	cpus = v->type == SBX_JSON_INT ? (double)v->i : v->d;
	if (!(cpus >= 0.01 && cpus <= MAX_CPUS))
		return option_error("cpus", "expected a number of CPUs from 0.01 to 4096");
	*nano = (uint64_t)(cpus * 1e9);
	return 0;
}

static int take_tmp_size(const sbx_json *v, uint64_t *bytes)
{
	if (v->type != SBX_JSON_INT)
		return option_error("tmp_size", "expected an integer (bytes)");
	if (v->i < (1 << 20) || (uint64_t)v->i > MAX_TMP_BYTES)
		return option_error("tmp_size", "expected 1 MiB to 64 GiB");
	*bytes = (uint64_t)v->i;
	return 0;
}

static int take_network(const sbx_json *v, bool *bridge)
{
	if (v->type != SBX_JSON_STRING || (strcmp(v->str, "bridge") != 0 &&
	                                   strcmp(v->str, "host") != 0) || strlen(v->str) != v->len)
		return option_error("network", "expected \"bridge\" or \"host\" (the way out of "
		                    "network mode \"host\"; mode \"none\" always gets no network)");
	*bridge = strcmp(v->str, "bridge") == 0;
	return 0;
}

static int take_stdio(const sbx_json *v, bool *stream)
{
	if (v->type != SBX_JSON_STRING || strlen(v->str) != v->len ||
	    (strcmp(v->str, "direct") != 0 && strcmp(v->str, "stream") != 0))
		return option_error("stdio", "expected \"direct\" (the host's pipes, passed to the "
		                    "command) or \"stream\" (the Engine's exec stream)");
	*stream = strcmp(v->str, "stream") == 0;
	return 0;
}

static int take_exec(const sbx_json *v, int *exec)
{
	if (v->type != SBX_JSON_STRING || strlen(v->str) != v->len ||
	    (strcmp(v->str, "server") != 0 && strcmp(v->str, "api") != 0))
		return option_error("exec", "expected \"server\" (the resident exec server) or "
		                    "\"api\" (the Engine's exec API)");
	*exec = strcmp(v->str, "server") == 0 ? DOCKER_EXEC_SERVER : DOCKER_EXEC_API;
	return 0;
}

static int take_idle_ttl(const sbx_json *v, struct docker_options *o)
{
	double secs = v->type == SBX_JSON_INT ? (double)v->i : v->type == SBX_JSON_NUMBER ? v->d : -1;

	if (!(secs >= 0 && secs <= 1e9))
		return option_error("idle_ttl_s", "expected a number of seconds >= 0");
	o->idle_ttl_ms = (int64_t)(secs * 1000);
	o->idle_ttl_set = true;
	return 0;
}

/* A detached container stops itself at its idle TTL through its exec server (the ns
 * backend's server loop): without one (exec "api") nothing in it knows when it was used, so
 * only an explicit "idle_ttl_s": 0 lets it run until removed. */
static int check_idle_ttl(struct docker_options *o)
{
	bool server = o->exec == DOCKER_EXEC_SERVER || (o->exec == DOCKER_EXEC_AUTO && !o->stream);

	if (o->idle_ttl_set && !o->detached)
		return option_error("idle_ttl_s", "only a detached container stops by itself (set "
		                    "'docker.detached': true)");
	if (!o->detached)
		return 0;
	if (!o->idle_ttl_set)
		o->idle_ttl_ms = DEFAULT_IDLE_TTL_MS;
	if (!server && o->idle_ttl_ms)
		return option_error("idle_ttl_s", "a detached container stops itself when idle through "
		                    "its exec server, which docker.exec \"api\" has not: use exec "
		                    "\"server\", or set idle_ttl_s to 0 to keep it running until a "
		                    "reset or a non-detached open removes it");
	return 0;
}

static int take_option(const char *key, const sbx_json *v, struct docker_options *o)
{
	int r;

	if (!strcmp(key, "image"))
		return take_string(v, key, &o->image);
	if (!strcmp(key, "host"))
		return take_string(v, key, &o->host);
	if (!strcmp(key, "user")) {
		if ((r = take_string(v, key, &o->user)) < 0)
			return r;
		return check_user(o->user);
	}
	if (!strcmp(key, "detached"))
		return take_bool(v, key, &o->detached);
	if (!strcmp(key, "pull"))
		return take_bool(v, key, &o->pull);
	if (!strcmp(key, "network"))
		return take_network(v, &o->bridge);
	if (!strcmp(key, "exec"))
		return take_exec(v, &o->exec);
	if (!strcmp(key, "stdio"))
		return take_stdio(v, &o->stream);
	if (!strcmp(key, "cpus"))
		return take_cpus(v, &o->nano_cpus);
	if (!strcmp(key, "tmp_size"))
		return take_tmp_size(v, &o->tmp_bytes);
	if (!strcmp(key, "volume"))
		return docker_take_volume(v, o);
	if (!strcmp(key, "idle_ttl_s"))
		return take_idle_ttl(v, o);
	return option_error(key, "unknown key (known: image, host, user, detached, idle_ttl_s, "
	                    "pull, network, exec, stdio, cpus, tmp_size, volume)");
}

int docker_options_parse(const char *options_json, struct docker_options *o)
{
	sbx_json *root = NULL;
	char err[160];
	int r = 0;

	*o = (struct docker_options){ .tmp_bytes = DEFAULT_TMP_BYTES, .pull = true };
	if (sbx_json_parse(options_json ? options_json : "{}", strlen(options_json ? options_json
	                                                                               : "{}"),
	                   &root, err, sizeof err) < 0)
		return sbx_fail(-SBX_ECONFIG, "config: key 'docker': %s", err);
	if (root->type != SBX_JSON_OBJECT)
		r = sbx_fail(-SBX_ECONFIG, "config: key 'docker': expected an object");
	for (size_t i = 0; r == 0 && root->type == SBX_JSON_OBJECT && i < root->n; i++) {
		if (strlen(root->keys[i]) != root->key_lens[i])
			r = sbx_fail(-SBX_ECONFIG, "config: key 'docker': a key contains a NUL byte");
		else
			r = take_option(root->keys[i], root->items[i], o);
	}
	sbx_json_free(root);
	if (r == 0 && !o->image)
		r = option_error("image", "required: the image the workspace's container runs");
	/* The server hands commands the host's pipes: there is no stream to choose. */
	if (r == 0 && o->exec == DOCKER_EXEC_SERVER && o->stream)
		r = option_error("exec", "\"server\" takes the host's pipes: stdio \"stream\" needs "
		                 "exec \"api\"");
	if (r == 0)
		r = docker_check_volume_options(o);
	if (r == 0)
		r = check_idle_ttl(o);
	if (r < 0)
		docker_options_free(o);
	return r;
}

void docker_options_free(struct docker_options *o)
{
	free(o->image);
	free(o->host);
	free(o->user);
	free(o->volume);
	*o = (struct docker_options){ 0 };
}
