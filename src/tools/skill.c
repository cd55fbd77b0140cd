/* The Skill tool: hands the model a skill's instructions (the body of its SKILL.md) by name.
 * Listed only while the workspace has skills (tools.c asks skills.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "skills.h"
#include "tools/tool.h"
#include "util/cleanup.h"
#include "util/error.h"

static const char description[] =
	"Reads the full instructions of a skill.\n"
	"\n"
	"Skills are folders of instructions, scripts and resources that extend what you can do. "
	"The system prompt lists the available ones in <agent-skills>, each with its name, a "
	"description of when to use it, and its folder. A skill is not a tool you can call: to "
	"use one, call this tool with the skill's name, then follow the instructions it returns. "
	"Scripts and files those instructions mention are in the skill's folder; run and read "
	"them with the other tools.\n"
	"\n"
	"Usage:\n"
	"- When a task matches a skill's description, read the skill before starting the task.\n"
	"- Pass the name exactly as listed in <agent-skills>; names are case-sensitive.\n"
	"- Instructions you already read in this conversation are still valid: do not read the "
	"same skill again.\n"
	"- A name that is not there gives an error listing the skills that are.";

static const char input_schema[] =
	"{\"type\":\"object\","
	"\"properties\":{"
	"\"skill\":{\"type\":\"string\","
	"\"description\":\"The exact name of the skill, as listed in <agent-skills> (for example "
	"\\\"pdf-tools\\\").\"}},"
	"\"required\":[\"skill\"],"
	"\"additionalProperties\":false}";

static const sbx_skill *find(const sbx_skill *v, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i].name, name) == 0)
			return &v[i];
	return NULL;
}

static int not_found(sbx_tool_out *out, const char *name, const sbx_skill *v, size_t n)
{
	sbx_buf names = { 0 };
	int r;

	for (size_t i = 0; i < n; i++)
		sbx_buf_printf(&names, "%s'%s'", i ? ", " : "", v[i].name);
	if (names.oom) {
		sbx_buf_free(&names);
		return sbx_fail(-SBX_ENOMEM, "Skill: out of memory");
	}
	if (n)
		r = sbx_tool_error(out, "SkillNotFoundError: Skill '%s' not found. Available "
		                   "skills: %s.", name, names.data);
	else
		r = sbx_tool_error(out, "SkillNotFoundError: Skill '%s' not found. There are no "
		                   "skills in this workspace.", name);
	sbx_buf_free(&names);
	return r;
}

static int show(sbx_tool_ctx *ctx, const sbx_skill *s, sbx_tool_out *out)
{
	_cleanup_free_ char *text = NULL, *shown = NULL;
	sbx_skill_md md;
	char sha256[65];
	size_t len;
	int r = sbx_skill_read_md(ctx->ws, s->dir, &text, &len, &md);

	if (r == -SBX_ENOMEM)
		return r;
	if (r < 0)
		/* Changed or removed since it was listed. */
		return sbx_tool_error(out, "Error: skill '%s' cannot be read: %s", s->name,
		                      sbx_last_error());
	/* Only the SKILL.md the library added, byte for byte: a command may have replaced it
	 * since the listing. */
	if ((r = sbx_skill_sha256(text, len, sha256)) < 0 || strcmp(sha256, s->sha256) != 0) {
		sbx_skill_md_free(&md);
		return r < 0 ? r : sbx_tool_error(out, "Error: skill '%s' was changed in the "
		                                  "workspace since it was added; it is no longer "
		                                  "trusted", s->name);
	}
	sbx_buf_append(&out->text, md.body, md.body_len);
	shown = sbx_tool_display_path(ctx, s->dir);
	sbx_tool_meta_str(out, "name", md.name, strlen(md.name));
	if (shown)
		sbx_tool_meta_str(out, "dir", shown, strlen(shown));
	sbx_skill_md_free(&md);
	return shown ? 0 : sbx_fail(-SBX_ENOMEM, "Skill: out of memory");
}

static int skill_run(sbx_tool_ctx *ctx, const sbx_json *args, sbx_tool_out *out)
{
	const char *name = sbx_tool_arg_str(args, "skill", "");
	sbx_skill *v;
	size_t n;
	int r = sbx_skills_load(ctx->ws, true, &v, &n);

	if (r < 0)
		return r;
	const sbx_skill *s = find(v, n, name);
	r = s ? show(ctx, s, out) : not_found(out, name, v, n);
	sbx_skills_free(v, n);
	return r;
}

const sbx_tool_def sbx_tool_skill = {
	.name = "Skill",
	.description = description,
	.input_schema = input_schema,
	.cls = "read",
	.run = skill_run,
};
