/* MCP tools in the agent toolbox: mcp__<server>__<tool> in sbx_tools_json and through
 * sbx_tool_call (tools.c asks these hooks). They belong to the default agent; the tool call's
 * session picks the server instance, so each session keeps its own server state. The
 * dispatcher checks the model's arguments against the server's inputSchema, asks the
 * approval hook (class "exec": the server runs code) and writes the audit record, exactly as
 * for the built-in tools. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/mcp.h"
#include "tools/tool.h"
#include "util/error.h"

#define PREFIX "mcp__"
#define PREFIX_LEN 5

struct mcp_tool_def {
	sbx_tool_def def;
	char *name, *description, *schema;
};

bool sbx_mcp_is_tool_name(const char *name)
{
	const char *sep;

	if (strncmp(name, PREFIX, PREFIX_LEN) != 0)
		return false;
	sep = strstr(name + PREFIX_LEN, "__");
	return sep && sep > name + PREFIX_LEN && sep[2];
}

/* "mcp__fs__read_file" → "fs", "read_file" (server names hold no "__"). */
static int split_name(const char *name, char **server, const char **tool)
{
	const char *sep = strstr(name + PREFIX_LEN, "__");

	*tool = sep + 2;
	*server = strndup(name + PREFIX_LEN, (size_t)(sep - name - PREFIX_LEN));
	return *server ? 0 : sbx_fail(-SBX_ENOMEM, "out of memory");
}

static const char *str_or(const sbx_json *v, const char *dflt)
{
	return v && v->type == SBX_JSON_STRING ? v->str : dflt;
}

static void append_tool(sbx_buf *b, const char *server, const sbx_json *tool, size_t *shown)
{
	const sbx_json *name = sbx_json_get(tool, "name"), *schema = sbx_json_get(tool, "inputSchema");
	sbx_buf full = { 0 };
	const char *desc = str_or(sbx_json_get(tool, "description"), "");

	if (!name || name->type != SBX_JSON_STRING)
		return;
	sbx_buf_printf(&full, PREFIX "%s__%s", server, name->str);
	sbx_buf_puts(b, (*shown)++ ? ",{\"name\":" : "{\"name\":");
	sbx_buf_json_string(b, full.data ? full.data : "", full.len);
	sbx_buf_puts(b, ",\"description\":");
	sbx_buf_json_string(b, desc, strlen(desc));
	sbx_buf_puts(b, ",\"input_schema\":");
	if (schema && schema->type == SBX_JSON_OBJECT)
		sbx_json_write(b, schema);
	else
		sbx_buf_puts(b, "{\"type\":\"object\",\"properties\":{}}");
	sbx_buf_puts(b, "}");
	sbx_buf_free(&full);
}

static void append_server(sbx_workspace *ws, const char *session, const char *server, sbx_buf *b,
                          size_t *shown)
{
	char *tools_json = NULL, perr[128];
	sbx_json *tools = NULL;

	/* A server that cannot start or answer is left out: the others stay usable. */
	if (sbx_mcp_tools(ws, SBX_MCP_DEFAULT_AGENT, session, server, &tools_json) < 0)
		return;
	if (sbx_json_parse(tools_json, strlen(tools_json), &tools, perr, sizeof perr) == 0)
		for (size_t i = 0; i < tools->n; i++)
			append_tool(b, server, tools->items[i], shown);
	sbx_json_free(tools);
	free(tools_json);
}

void sbx_mcp_tools_append(sbx_workspace *ws, sbx_buf *b, size_t *shown)
{
	const char *agent = SBX_MCP_DEFAULT_AGENT, *session = SBX_MCP_DEFAULT_SESSION;
	sbx_mcp_decl *decls;
	size_t n;

	/* No declarations, no gateway: a workspace without MCP pays nothing. */
	if (sbx_mcp_decls_load(ws, &decls, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++)
		if (!decls[i].error && sbx_mcp_decl_visible(&decls[i], agent, session) &&
		    sbx_mcp_decl_resolve(decls, n, agent, session, decls[i].name) == &decls[i])
			append_server(ws, session, decls[i].name, b, shown);
	sbx_mcp_decls_free(decls, n);
}

/* The text a model reads from a CallToolResult: text blocks as they are, other blocks named. */
static void render_content(const sbx_json *result, sbx_buf *text)
{
	const sbx_json *content = sbx_json_get(result, "content");

	for (size_t i = 0; content && content->type == SBX_JSON_ARRAY && i < content->n; i++) {
		const sbx_json *c = content->items[i], *data = sbx_json_get(c, "data");
		const char *type = str_or(sbx_json_get(c, "type"), "?");

		if (text->len)
			sbx_buf_puts(text, "\n");
		if (!strcmp(type, "text"))
			sbx_buf_puts(text, str_or(sbx_json_get(c, "text"), ""));
		else if (!strcmp(type, "resource"))
			sbx_buf_puts(text, str_or(sbx_json_get(sbx_json_get(c, "resource"), "text"),
			                          "[embedded resource]"));
		else if (!strcmp(type, "resource_link"))
			sbx_buf_printf(text, "[resource link %s]", str_or(sbx_json_get(c, "uri"), "?"));
		else
			sbx_buf_printf(text, "[%s %s, %zu bytes of base64]", type,
			               str_or(sbx_json_get(c, "mimeType"), ""), data ? data->len : 0);
	}
	if (!text->len && sbx_json_get(result, "structuredContent"))
		sbx_json_write(text, sbx_json_get(result, "structuredContent"));
}

static int run_mcp_tool(sbx_tool_ctx *ctx, const sbx_json *args, sbx_tool_out *out)
{
	char *server = NULL, *result_json = NULL, perr[128];
	const char *tool;
	sbx_buf a = { 0 }, text = { 0 };
	sbx_json *result = NULL;
	const sbx_json *is_error;
	int r;

	if ((r = split_name(ctx->tool_name, &server, &tool)) < 0)
		return r;
	sbx_json_write(&a, args);
	r = sbx_mcp_call(ctx->ws, SBX_MCP_DEFAULT_AGENT, ctx->session_id, server, tool,
	                 a.data ? a.data : "{}", &result_json);
	sbx_buf_free(&a);
	sbx_tool_meta_str(out, "mcp_server", server, strlen(server));
	sbx_tool_meta_str(out, "mcp_tool", tool, strlen(tool));
	free(server);
	if (r == -SBX_ENOMEM)
		return r;
	if (r < 0)   /* the server crashed, timed out, refused: the model reads why */
		return sbx_tool_error(out, "Error: %s", sbx_last_error());
	if (sbx_json_parse(result_json, strlen(result_json), &result, perr, sizeof perr) < 0) {
		free(result_json);
		return sbx_tool_error(out, "Error: the MCP server's result does not parse: %s", perr);
	}
	free(result_json);
	render_content(result, &text);
	is_error = sbx_json_get(result, "isError");
	if (is_error && is_error->type == SBX_JSON_BOOL && is_error->b)
		sbx_tool_error(out, "%s", text.data ? text.data : "Error");
	else
		sbx_buf_append(&out->text, text.data ? text.data : "", text.len);
	sbx_buf_free(&text);
	sbx_json_free(result);
	return 0;
}

int sbx_mcp_tool_def(sbx_workspace *ws, const char *session_id, const char *name,
                     sbx_tool_def **def, char *why, size_t why_len)
{
	char *server = NULL, *tools_json = NULL, perr[128];
	const char *tool;
	sbx_json *tools = NULL;
	struct mcp_tool_def *d = NULL;
	int r;

	if ((r = split_name(name, &server, &tool)) < 0)
		return r;
	if ((r = sbx_mcp_tools(ws, SBX_MCP_DEFAULT_AGENT, session_id, server, &tools_json)) < 0) {
		snprintf(why, why_len, "%s", sbx_last_error());
		free(server);
		return r == -SBX_ENOMEM ? r : 1;
	}
	r = 1;
	snprintf(why, why_len, "MCP server '%s' has no tool named \"%.64s\"", server, tool);
	if (sbx_json_parse(tools_json, strlen(tools_json), &tools, perr, sizeof perr) == 0)
		for (size_t i = 0; r == 1 && i < tools->n; i++) {
			const sbx_json *t = tools->items[i], *schema = sbx_json_get(t, "inputSchema");
			sbx_buf sb = { 0 };

			if (strcmp(str_or(sbx_json_get(t, "name"), ""), tool))
				continue;
			if (schema && schema->type == SBX_JSON_OBJECT)
				sbx_json_write(&sb, schema);
			else
				sbx_buf_puts(&sb, "{\"type\":\"object\",\"properties\":{}}");
			if (!(d = calloc(1, sizeof *d)) || !(d->name = strdup(name)) ||
			    !(d->description = strdup(str_or(sbx_json_get(t, "description"), ""))) ||
			    !(d->schema = sbx_buf_steal(&sb, NULL))) {
				sbx_buf_free(&sb);
				sbx_mcp_tool_def_free(d ? &d->def : NULL);
				r = sbx_fail(-SBX_ENOMEM, "out of memory");
				break;
			}
			d->def = (sbx_tool_def){ .name = d->name, .description = d->description,
			                         .input_schema = d->schema, .cls = "exec",
			                         .run = run_mcp_tool };
			*def = &d->def;
			r = 0;
		}
	sbx_json_free(tools);
	free(tools_json);
	free(server);
	return r;
}

void sbx_mcp_tool_def_free(sbx_tool_def *def)
{
	struct mcp_tool_def *d;

	if (!def)
		return;
	d = (struct mcp_tool_def *)((char *)def - offsetof(struct mcp_tool_def, def));
	free(d->name);
	free(d->description);
	free(d->schema);
	free(d);
}
