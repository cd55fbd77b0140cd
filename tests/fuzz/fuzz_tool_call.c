/* libFuzzer target for what a model's reply reaches: arbitrary arguments for each agent tool,
 * through sbx_tool_call_session on a `local` workspace in a temporary directory (files to
 * read, edit and grep, an image, a CRLF file, a skill).
 *
 * The input is the tool's name on its first line (any name: unknown ones are tried too; an
 * empty line picks a tool from the first byte after it) and the arguments after it. Bash is
 * denied by the approval hook, so the fuzzer never runs a command, but its arguments are still
 * checked against its schema before the hook is asked.
 *
 * Beyond "no crash, no leak, no hang", it checks what a harness relies on: the call returns 0
 * (or -SBX_ENOMEM), and the result is a JSON object with a boolean "ok", a string "output" and
 * an object "metadata".
 *
 * Run it as an unprivileged user: a bug it finds may write where it should not. */
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <agentsbx/agentsbx.h>
#include "util/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond) do { if (!(cond)) { fprintf(stderr, "check failed: %s\n", #cond); \
	abort(); } } while (0)

static const char *const tools[] = { "Bash", "Read", "Write", "Edit", "Glob", "Grep",
                                     "BashOutput", "KillShell", "Skill" };

static sbx_workspace *ws;
static char dir[] = "/tmp/fuzz-tool-call-XXXXXX";
static char skill_dir[] = "/tmp/fuzz-tool-skill-XXXXXX";

static int deny_exec(void *userdata, const char *request, char *reason, size_t len)
{
	(void)userdata;
	if (strstr(request, "\"class\":\"exec\"")) {
		snprintf(reason, len, "the fuzzer runs no commands");
		return SBX_DENY;
	}
	return SBX_APPROVE;
}

static void put(const char *rel, const char *text, size_t len)
{
	CHECK(sbx_file_write(ws, rel, text, len, 0, SBX_WRITE_MKDIRS) == 0);
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void cleanup(void)
{
	if (ws)
		sbx_workspace_close(ws);
	nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
	nftw(skill_dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void open_workspace(void)
{
	static const char png[] = "\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
	char *config, *path;
	FILE *f;

	/* The local backend runs its commands through a helper of this build. */
	setenv("SBX_HELPER_DIR", SBX_FUZZ_HELPER_DIR, 0);
	CHECK(mkdtemp(dir) && mkdtemp(skill_dir));
	atexit(cleanup);
	CHECK(asprintf(&config, "{\"backend\":\"local\",\"workdir\":\"%s\"}", dir) > 0);
	if (sbx_workspace_open(config, &ws) < 0) {
		fprintf(stderr, "cannot open the workspace: %s\n", sbx_last_error());
		abort();
	}
	free(config);
	CHECK(sbx_set_approval_handler(ws, deny_exec, NULL) == 0);
	put("a.txt", "one\ntwo\nthree\n", 14);
	put("sub/b.c", "int main(void) { return 0; }\n", 29);
	put("crlf.txt", "x\r\ny\r\n", 6);
	put("pic.png", png, sizeof png - 1);
	put("evil\nname:1:x", "needle\n", 7);
	CHECK(asprintf(&path, "%s/SKILL.md", skill_dir) > 0);
	CHECK((f = fopen(path, "w")));
	fputs("---\nname: demo\ndescription: a skill\n---\nbody\n", f);
	fclose(f);
	free(path);
	CHECK(sbx_skill_add(ws, skill_dir, NULL) == 0);
}

static void check_result(const char *res)
{
	sbx_json *v = NULL;
	const sbx_json *ok, *output, *meta;
	char err[256];

	CHECK(sbx_json_parse(res, strlen(res), &v, err, sizeof err) == 0);
	CHECK(v->type == SBX_JSON_OBJECT);
	ok = sbx_json_get(v, "ok");
	output = sbx_json_get(v, "output");
	meta = sbx_json_get(v, "metadata");
	CHECK(ok && ok->type == SBX_JSON_BOOL);
	CHECK(output && output->type == SBX_JSON_STRING);
	CHECK(meta && meta->type == SBX_JSON_OBJECT);
	sbx_json_free(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nl = memchr(data, '\n', size);
	size_t name_len = nl ? (size_t)(nl - data) : size;
	char *name, *args, *res = NULL;
	int r;

	if (size > 65536)
		return 0;
	if (!ws)
		open_workspace();
	if (name_len == 0 && size > 1)
		name = strdup(tools[data[1] % (sizeof tools / sizeof *tools)]);
	else
		name = strndup((const char *)data, name_len);
	args = nl ? strndup((const char *)nl + 1, size - name_len - 1) : strdup("");
	CHECK(name && args);
	r = sbx_tool_call_session(ws, "fuzz", name, args, &res);
	CHECK(r == 0 || r == -SBX_ENOMEM || (r == -SBX_EINVAL && strlen(name) != name_len));
	if (r == 0) {
		CHECK(res != NULL);
		check_result(res);
	}
	sbx_free(res);
	free(name);
	free(args);
	return 0;
}
