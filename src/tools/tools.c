/* The tool dispatcher: schemas out, calls in.
 *
 * A call goes: parse the arguments (invalid JSON is a tool error the model can read) → check
 * them against the tool's schema → ask the approval hook → load the session → run → save the
 * session → write the audit record → build {"ok", "output", "metadata"}.
 *
 * The schema check covers the JSON Schema subset our schemas use: "type" (object, string,
 * integer, number, boolean, array), "properties", "required", "additionalProperties": false,
 * "enum" of strings, "minimum"/"maximum" of integers, "items" of arrays. Strings must be
 * UTF-8 without NUL bytes: they become paths, regexes and shell text. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "mcp/mcp.h"
#include "skills.h"
#include "tools/session.h"
#include "tools/snapshot.h"
#include "tools/text.h"
#include "tools/tool.h"
#include "util/cleanup.h"
#include "util/error.h"

#define DEFAULT_SESSION "default"
#define ARGS_MAX ((size_t)16 << 20)
#define SCHEMA_ERR_MAX 512

/* In the order models see them (AgentScope lists Bash, Edit, Glob, Grep, Read, Write; Claude
 * Code leads with the ones used most). Skill goes last and only when skills exist. */
static const sbx_tool_def *const builtin_tools[] = {
	&sbx_tool_bash, &sbx_tool_read, &sbx_tool_write, &sbx_tool_edit,
	&sbx_tool_glob, &sbx_tool_grep, &sbx_tool_bash_output, &sbx_tool_kill_shell,
	&sbx_tool_skill,
};

static const sbx_tool_def *find_tool(const char *name)
{
	for (size_t i = 0; i < sizeof builtin_tools / sizeof *builtin_tools; i++)
		if (strcmp(builtin_tools[i]->name, name) == 0)
			return builtin_tools[i];
	return NULL;
}

static bool have_skills(sbx_workspace *ws)
{
	sbx_skill *skills = NULL;
	size_t n = 0;

	if (sbx_skills_load(ws, true, &skills, &n) < 0)
		return false;
	sbx_skills_free(skills, n);
	return n > 0;
}

int sbx_tools_json(sbx_workspace *ws, char **json_out)
{
	bool skills;
	sbx_buf b = { 0 };
	size_t shown_total = 0;

	if (!json_out)
		return sbx_fail(-SBX_EINVAL, "sbx_tools_json: json_out must not be NULL");
	*json_out = NULL;
	if (!ws)
		return sbx_fail(-SBX_EINVAL, "sbx_tools_json: ws must not be NULL");
	skills = have_skills(ws);
	sbx_buf_puts(&b, "[");
	for (size_t i = 0, shown = 0; i < sizeof builtin_tools / sizeof *builtin_tools; i++) {
		const sbx_tool_def *t = builtin_tools[i];

		if (t == &sbx_tool_skill && !skills)
			continue;
		sbx_buf_puts(&b, shown++ ? ",{\"name\":" : "{\"name\":");
		sbx_buf_json_string(&b, t->name, strlen(t->name));
		sbx_buf_puts(&b, ",\"description\":");
		sbx_buf_json_string(&b, t->description, strlen(t->description));
		sbx_buf_printf(&b, ",\"input_schema\":%s}", t->input_schema);
		shown_total = shown;
	}
	sbx_mcp_tools_append(ws, &b, &shown_total);
	sbx_buf_puts(&b, "]");
	if (b.oom) {
		sbx_buf_free(&b);
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	}
	*json_out = sbx_buf_steal(&b, NULL);
	return 0;
}

/* ---- argument checking ---- */

static bool type_ok(const sbx_json *v, const char *type)
{
	if (strcmp(type, "number") == 0)
		return v->type == SBX_JSON_INT || v->type == SBX_JSON_NUMBER;
	return strcmp(sbx_json_type_name(v->type), type) == 0;
}

static bool string_ok(const sbx_json *v, char *err, const char *name)
{
	if (memchr(v->str, '\0', v->len)) {
		snprintf(err, SCHEMA_ERR_MAX, "\"%s\" must not contain NUL bytes", name);
		return false;
	}
	if (!sbx_utf8_valid(v->str, v->len)) {
		snprintf(err, SCHEMA_ERR_MAX, "\"%s\" is not valid UTF-8", name);
		return false;
	}
	return true;
}

static bool enum_ok(const sbx_json *v, const sbx_json *allowed, char *err, const char *name)
{
	size_t used, listed = 0;

	if (!allowed || allowed->type != SBX_JSON_ARRAY)
		return true;
	for (size_t i = 0; i < allowed->n; i++)
		if (allowed->items[i]->type == SBX_JSON_STRING && strcmp(allowed->items[i]->str, v->str) == 0)
			return true;
	used = (size_t)snprintf(err, SCHEMA_ERR_MAX, "\"%s\" must be one of:", name);
	/* An MCP server's schema may list anything there: only its strings are choices. */
	for (size_t i = 0; i < allowed->n && used < SCHEMA_ERR_MAX; i++)
		if (allowed->items[i]->type == SBX_JSON_STRING)
			used += (size_t)snprintf(err + used, SCHEMA_ERR_MAX - used, "%s \"%.64s\"",
			                         listed++ ? "," : "", allowed->items[i]->str);
	return false;
}

static bool range_ok(const sbx_json *v, const sbx_json *schema, char *err, const char *name)
{
	const sbx_json *min = sbx_json_get(schema, "minimum"), *max = sbx_json_get(schema, "maximum");

	if (min && min->type == SBX_JSON_INT && v->i < min->i) {
		snprintf(err, SCHEMA_ERR_MAX, "\"%s\" must be at least %lld (got %lld)", name,
		         (long long)min->i, (long long)v->i);
		return false;
	}
	if (max && max->type == SBX_JSON_INT && v->i > max->i) {
		snprintf(err, SCHEMA_ERR_MAX, "\"%s\" must be at most %lld (got %lld)", name,
		         (long long)max->i, (long long)v->i);
		return false;
	}
	return true;
}

static bool value_ok(const sbx_json *v, const sbx_json *schema, char *err, const char *name)
{
	const sbx_json *type = sbx_json_get(schema, "type"), *items;

	if (type && type->type == SBX_JSON_STRING && !type_ok(v, type->str)) {
		snprintf(err, SCHEMA_ERR_MAX, "\"%s\" must be %s %s (got %s)", name,
		         strchr("aeiou", type->str[0]) ? "an" : "a", type->str, sbx_json_type_name(v->type));
		return false;
	}
	if (v->type == SBX_JSON_STRING)
		return string_ok(v, err, name) && enum_ok(v, sbx_json_get(schema, "enum"), err, name);
	if (v->type == SBX_JSON_INT)
		return range_ok(v, schema, err, name);
	if (v->type == SBX_JSON_ARRAY && (items = sbx_json_get(schema, "items")))
		for (size_t i = 0; i < v->n; i++) {
			char item_name[96];

			snprintf(item_name, sizeof item_name, "%.60s[%zu]", name, i);
			if (!value_ok(v->items[i], items, err, item_name))
				return false;
		}
	return true;
}

static void list_properties(const sbx_json *props, char *err, size_t used)
{
	for (size_t i = 0; props && i < props->n && used < SCHEMA_ERR_MAX; i++)
		used += (size_t)snprintf(err + used, SCHEMA_ERR_MAX - used, "%s%.64s", i ? ", " : "",
		                         props->keys[i]);
}

/* A member of the schema when it has the JSON type wanted, else NULL: the built-in schemas
 * are ours, but an MCP server's comes from inside the sandbox and may be anything. */
static const sbx_json *schema_member(const sbx_json *schema, const char *key, sbx_json_type t)
{
	const sbx_json *v = sbx_json_get(schema, key);

	return v && v->type == t ? v : NULL;
}

/* Every required member is there and not null. A model that sends null for a required
 * string has not given it: passing the null on would leave the tool without its input. */
static bool required_ok(const sbx_json *args, const sbx_json *required, char *err)
{
	for (size_t i = 0; required && i < required->n; i++) {
		const sbx_json *name = required->items[i], *v;

		if (name->type != SBX_JSON_STRING || strlen(name->str) != name->len)
			continue;
		if (!(v = sbx_json_get(args, name->str))) {
			snprintf(err, SCHEMA_ERR_MAX, "\"%.64s\" is required", name->str);
			return false;
		}
		if (v->type == SBX_JSON_NULL) {
			snprintf(err, SCHEMA_ERR_MAX, "\"%.64s\" is required and must not be null",
			         name->str);
			return false;
		}
	}
	return true;
}

/* Returns true when args satisfy schema; otherwise err says why, naming the field. */
static bool args_ok(const sbx_json *args, const sbx_json *schema, char *err)
{
	const sbx_json *props = schema_member(schema, "properties", SBX_JSON_OBJECT);
	const sbx_json *required = schema_member(schema, "required", SBX_JSON_ARRAY);

	if (args->type != SBX_JSON_OBJECT) {
		snprintf(err, SCHEMA_ERR_MAX, "the arguments must be a JSON object (got %s)",
		         sbx_json_type_name(args->type));
		return false;
	}
	if (!required_ok(args, required, err))
		return false;
	for (size_t i = 0; i < args->n; i++) {
		const sbx_json *prop = strlen(args->keys[i]) == args->key_lens[i]
		                       ? sbx_json_get(props, args->keys[i]) : NULL;

		if (!prop) {
			_cleanup_free_ char *key = sbx_tool_escape_name(args->keys[i], args->key_lens[i]);
			int used = snprintf(err, SCHEMA_ERR_MAX, "unknown parameter \"%.64s\"; the "
			                    "parameters are: ", key ? key : "?");
			list_properties(props, err, (size_t)used);
			return false;
		}
		if (args->items[i]->type == SBX_JSON_NULL)
			continue;      /* models send null for "not given": treated as absent */
		if (!value_ok(args->items[i], prop, err, args->keys[i]))
			return false;
	}
	return true;
}

/* Drops null members so that tools see them as absent. */
static void drop_nulls(sbx_json *args)
{
	size_t kept = 0;

	for (size_t i = 0; i < args->n; i++) {
		if (args->items[i]->type == SBX_JSON_NULL) {
			sbx_json_free(args->items[i]);
			free(args->keys[i]);
			continue;
		}
		args->items[kept] = args->items[i];
		args->keys[kept] = args->keys[i];
		args->key_lens[kept] = args->key_lens[i];
		kept++;
	}
	args->n = kept;
}

/* The index of member key in args, or -1. */
static ssize_t member_index(const sbx_json *args, const char *key)
{
	for (size_t i = 0; i < args->n; i++)
		if (strlen(args->keys[i]) == args->key_lens[i] && strcmp(args->keys[i], key) == 0)
			return (ssize_t)i;
	return -1;
}

static void drop_member(sbx_json *args, size_t i)
{
	sbx_json_free(args->items[i]);
	free(args->keys[i]);
	memmove(&args->items[i], &args->items[i + 1], (args->n - i - 1) * sizeof *args->items);
	memmove(&args->keys[i], &args->keys[i + 1], (args->n - i - 1) * sizeof *args->keys);
	memmove(&args->key_lens[i], &args->key_lens[i + 1],
	        (args->n - i - 1) * sizeof *args->key_lens);
	args->n--;
}

/* A tool's old parameter names (sbx_tool_def.aliases) become the schema's, so that a model
 * sees one name per option while harnesses that send an old one keep working. */
static int rename_aliases(sbx_json *args, const char *const *aliases)
{
	for (size_t a = 0; aliases && aliases[a]; a += 2) {
		ssize_t old = member_index(args, aliases[a]);
		char *name;

		if (old < 0)
			continue;
		if (member_index(args, aliases[a + 1]) >= 0) {
			drop_member(args, (size_t)old);
			continue;
		}
		if (!(name = strdup(aliases[a + 1])))
			return sbx_fail(-SBX_ENOMEM, "out of memory");
		free(args->keys[old]);
		args->keys[old] = name;
		args->key_lens[old] = strlen(name);
	}
	return 0;
}

/* ---- a call ---- */

struct call {
	sbx_workspace *ws;
	const sbx_tool_def *tool;
	const char *name;
	const char *session_id;
	sbx_json *args;
	sbx_tool_out out;
	sbx_audit_rec rec;
	const char *result_class;   /* for the audit log: ok, error, denied */
};

static int parse_args(struct call *c, const char *args_json)
{
	char err[SCHEMA_ERR_MAX], perr[256];
	sbx_json *schema = NULL;
	size_t len = args_json ? strlen(args_json) : 0;
	int r;

	if (len > ARGS_MAX)
		return sbx_tool_error(&c->out, "Error: the arguments of %s are too large (%zu bytes; "
		                      "the limit is %zu)", c->name, len, ARGS_MAX), 1;
	if (sbx_json_parse(len ? args_json : "{}", len ? len : 2, &c->args, perr, sizeof perr) < 0)
		return sbx_tool_error(&c->out, "Error: the arguments of %s are not valid JSON: %s",
		                      c->name, perr), 1;
	if (c->args->type == SBX_JSON_OBJECT && (r = rename_aliases(c->args, c->tool->aliases)) < 0)
		return r;
	r = sbx_json_parse(c->tool->input_schema, strlen(c->tool->input_schema), &schema, perr,
	                   sizeof perr);
	if (r < 0)
		return sbx_fail(-SBX_EIO, "tool %s: its own schema does not parse: %s", c->name, perr);
	bool ok = args_ok(c->args, schema, err);
	sbx_json_free(schema);
	if (!ok)
		return sbx_tool_error(&c->out, "Error: invalid arguments for %s: %s", c->name, err), 1;
	drop_nulls(c->args);
	return 0;
}

static bool approved(struct call *c)
{
	char reason[1024];
	sbx_buf req = { 0 };
	bool allowed;

	sbx_buf_puts(&req, "{\"kind\":\"tool\",\"tool\":");
	sbx_buf_json_string(&req, c->name, strlen(c->name));
	sbx_buf_puts(&req, ",\"class\":");
	sbx_buf_json_string(&req, c->tool->cls, strlen(c->tool->cls));
	sbx_buf_puts(&req, ",\"session_id\":");
	sbx_buf_json_string(&req, c->session_id, strlen(c->session_id));
	sbx_buf_puts(&req, ",\"arguments\":");
	sbx_json_write(&req, c->args);
	sbx_buf_puts(&req, "}");
	allowed = req.oom ? false : sbx_approval_allows(c->ws, req.data, reason, sizeof reason);
	if (req.oom)
		snprintf(reason, sizeof reason, "out of memory while asking for approval");
	sbx_buf_free(&req);
	if (!allowed) {
		sbx_tool_error(&c->out, "Permission denied: %s", reason);
		c->result_class = "denied";
	}
	return allowed;
}

/* The tool did its work, but its session could not be stored (a full disk, say). That is no
 * reason to lose the work or report a library failure: the result stands and says what the
 * lost state means for the next calls. Only running out of memory fails the call. */
static int session_not_saved(struct call *c, int r)
{
	char why[512];

	snprintf(why, sizeof why, "%s", sbx_tool_last_error());
	if (r == -SBX_ENOMEM)
		return sbx_fail(r, "tool %s: saving session '%s': %s", c->name, c->session_id, why);
	sbx_buf_printf(&c->out.text, "\n\n<system-reminder>This call's session state could not be "
	               "saved (%s): files it read or changed must be read again before Write or "
	               "Edit change them, and Bash keeps its previous working directory."
	               "</system-reminder>", why);
	sbx_tool_meta_bool(&c->out, "session_saved", false);
	sbx_tool_meta_str(&c->out, "session_error", why, strlen(why));
	return 0;
}

static int run_tool(struct call *c)
{
	struct sbx_tool_session *session = NULL;
	sbx_tool_ctx ctx = {
		.ws = c->ws, .session_id = c->session_id, .root_view = sbx_workspace_root(c->ws),
		.host_view = sbx_workspace_host_view(c->ws),
		.root_fd = c->ws->root_fd, .tool_name = c->name,
	};
	char *snapshot = NULL;
	int r = sbx_tool_session_load(c->ws, c->session_id, &session);

	if (r < 0)
		return r;
	ctx.session = session;
	/* The searches walk a host directory: where the files are elsewhere, a copy of them. */
	if ((!strcmp(c->name, "Glob") || !strcmp(c->name, "Grep")) &&
	    sbx_tool_can_snapshot(c->ws) && (r = sbx_tool_snapshot(c->ws, &ctx.root_fd,
	                                                         &snapshot)) < 0) {
		sbx_tool_error(&c->out, "Error: %s could not copy the workspace's files to search "
		               "them: %s", c->name, sbx_last_error());
		sbx_tool_session_free(session);
		return 0;
	}
	r = c->tool->run(&ctx, c->args, &c->out);
	if (snapshot)
		sbx_tool_snapshot_free(ctx.root_fd, snapshot);
	if (r == 0 && (r = sbx_tool_session_save(c->ws, session)) < 0)
		r = session_not_saved(c, r);
	sbx_tool_session_free(session);
	return r;
}

static int build_result(struct call *c, char **result_json)
{
	sbx_buf b = { 0 };

	sbx_buf_printf(&b, "{\"ok\":%s,\"output\":", c->out.ok ? "true" : "false");
	sbx_buf_json_string(&b, c->out.text.data ? c->out.text.data : "", c->out.text.len);
	sbx_buf_printf(&b, ",\"metadata\":{%s}}", c->out.meta.data ? c->out.meta.data : "");
	if (b.oom || c->out.text.oom || c->out.meta.oom) {
		sbx_buf_free(&b);
		return sbx_fail(-SBX_ENOMEM, "tool %s: out of memory building the result", c->name);
	}
	*result_json = sbx_buf_steal(&b, NULL);
	return 0;
}

static void audit_call(struct call *c, int r)
{
	sbx_audit_str(&c->rec, "session_id", c->session_id);
	if (c->args)
		sbx_audit_json(&c->rec, "arguments", c->args);
	if (r < 0) {
		sbx_audit_str(&c->rec, "result", "error");
		sbx_audit_str(&c->rec, "error", sbx_last_error());
	} else {
		sbx_audit_str(&c->rec, "result", c->result_class ? c->result_class
		                                                  : c->out.ok ? "ok" : "tool_error");
		sbx_audit_int(&c->rec, "output_bytes", (int64_t)c->out.text.len);
	}
	sbx_audit_end(&c->rec);
}

static int check_call_args(sbx_workspace *ws, const char *session_id, const char *name,
                           char **result_json)
{
	if (!result_json)
		return sbx_fail(-SBX_EINVAL, "sbx_tool_call: result_json must not be NULL");
	*result_json = NULL;
	if (!ws)
		return sbx_fail(-SBX_EINVAL, "sbx_tool_call: ws must not be NULL");
	if (!name)
		return sbx_fail(-SBX_EINVAL, "sbx_tool_call: name must not be NULL");
	if (session_id && !sbx_tool_session_id_ok(session_id))
		return sbx_fail(-SBX_EINVAL, "sbx_tool_call: session_id '%.64s' is not valid "
		                "([A-Za-z0-9_.-], 1..128 characters, not starting with '.')", session_id);
	return 0;
}

int sbx_tool_call_session(sbx_workspace *ws, const char *session_id, const char *name,
                          const char *args_json, char **result_json)
{
	struct call c = { .ws = ws, .name = name, .out = { .ok = true } };
	sbx_tool_def *mcp_def = NULL;
	int r = check_call_args(ws, session_id, name, result_json);

	if (r < 0)
		return r;
	sbx_workspace_touch(ws);
	c.session_id = session_id ? session_id : DEFAULT_SESSION;
	sbx_audit_begin(&c.rec, ws, "tool");
	sbx_audit_str(&c.rec, "tool", name);
	c.tool = find_tool(name);
	if (!c.tool && sbx_mcp_is_tool_name(name)) {
		char why[512];

		/* An MCP tool: the same path, with a definition the server gave. */
		if ((r = sbx_mcp_tool_def(ws, c.session_id, name, &mcp_def, why, sizeof why)) == 0)
			c.tool = mcp_def;
		else if (r > 0)
			sbx_tool_error(&c.out, "Error: %s", why);
	}
	if (r != 0) {
		/* reported above */
	} else if (!c.tool || (c.tool == &sbx_tool_skill && !have_skills(ws))) {
		sbx_tool_error(&c.out, "Error: no tool named \"%.64s\"; the tools are Bash, Read, "
		               "Write, Edit, Glob, Grep, BashOutput, KillShell%s", name, have_skills(ws) ? " and Skill" : "");
		r = 0;
	} else if ((r = parse_args(&c, args_json)) == 0 && approved(&c)) {
		r = run_tool(&c);
	}
	if (r > 0)
		r = 0;            /* a tool error in the arguments: reported in the result */
	audit_call(&c, r);
	if (r == 0)
		r = build_result(&c, result_json);
	sbx_json_free(c.args);
	sbx_buf_free(&c.out.text);
	sbx_buf_free(&c.out.meta);
	sbx_mcp_tool_def_free(mcp_def);
	return r;
}

int sbx_tool_call(sbx_workspace *ws, const char *name, const char *args_json,
                  char **result_json)
{
	return sbx_tool_call_session(ws, NULL, name, args_json, result_json);
}
