/* An agent loop with a scripted model: the harness gives the "model" the workspace's tools and
 * instructions, then runs each tool call the model makes and prints the call and its result.
 * The model is a file of tool calls (examples/scripted_session.txt: a tool name, a space, the
 * arguments as JSON, one call per line), so it runs anywhere without an API key. The Python
 * and Node harnesses in examples/ print the same transcript for the same file.
 *
 *   agent_loop [SCRIPT] [CONFIG_JSON]
 *
 * CONFIG_JSON defaults to $AGENTSBX_CONFIG, then {"backend":"ns"}. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <agentsbx/agentsbx.h>

#ifndef SCRIPT_DEFAULT
#define SCRIPT_DEFAULT "examples/scripted_session.txt"
#endif
#define SESSION "demo"

/* The "output" member of a tool result, unescaped (results are our own well-formed JSON). */
static char *output_of(const char *result)
{
	const char *p = strstr(result, "\"output\":\"");
	char *out = malloc(strlen(result) + 1), *o = out;

	if (!out || !p) {
		if (out)
			out[0] = '\0';
		return out;
	}
	for (p += 10; *p && *p != '"'; p++) {
		if (*p != '\\') {
			*o++ = *p;
			continue;
		}
		switch (*++p) {
		case 'n': *o++ = '\n'; break;
		case 't': *o++ = '\t'; break;
		case 'r': *o++ = '\r'; break;
		case 'b': *o++ = '\b'; break;
		case 'f': *o++ = '\f'; break;
		case 'u': {
			char hex[5] = { p[1], p[2], p[3], p[4], 0 };
			unsigned cp = (unsigned)strtoul(hex, NULL, 16);

			if (cp < 0x80) {
				*o++ = (char)cp;
			} else if (cp < 0x800) {
				*o++ = (char)(0xC0 | (cp >> 6));
				*o++ = (char)(0x80 | (cp & 0x3F));
			} else {
				*o++ = (char)(0xE0 | (cp >> 12));
				*o++ = (char)(0x80 | ((cp >> 6) & 0x3F));
				*o++ = (char)(0x80 | (cp & 0x3F));
			}
			p += 4;
			break;
		}
		default: *o++ = *p;
		}
	}
	*o = '\0';
	return out;
}

/* One call: ">>> NAME ARGS", "<<< ok|error", the output, a blank line. */
static int run_call(sbx_workspace *ws, const char *name, const char *args, int *errors)
{
	char *result = NULL, *output;
	int ok;

	printf(">>> %s %s\n", name, args);
	if (sbx_tool_call_session(ws, SESSION, name, args, &result) < 0) {
		fprintf(stderr, "agent_loop: %s: %s\n", name, sbx_last_error());
		return -1;
	}
	ok = strncmp(result, "{\"ok\":true", 10) == 0;
	*errors += !ok;
	output = output_of(result);
	printf("<<< %s\n%s%s\n", ok ? "ok" : "error", output ? output : "",
	       output && *output && output[strlen(output) - 1] != '\n' ? "\n" : "");
	free(output);
	sbx_free(result);
	fflush(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	const char *script = argc > 1 ? argv[1] : SCRIPT_DEFAULT;
	const char *config = argc > 2 ? argv[2] : getenv("AGENTSBX_CONFIG");
	char line[65536], *tools = NULL;
	int calls = 0, errors = 0, rc = 0;
	sbx_workspace *ws;
	FILE *f = fopen(script, "r");

	if (!f)
		return perror(script), 2;
	if (sbx_workspace_open(config ? config : "{\"backend\":\"ns\"}", &ws) < 0) {
		fprintf(stderr, "agent_loop: %s\n", sbx_last_error());
		fclose(f);
		return 1;
	}
	/* What a real harness hands the model with its first request. */
	if (sbx_tools_json(ws, &tools) < 0) {
		fprintf(stderr, "agent_loop: %s\n", sbx_last_error());
		rc = 1;
	}
	sbx_free(tools);
	while (rc == 0 && fgets(line, sizeof line, f)) {
		char *args;

		line[strcspn(line, "\n")] = '\0';
		if (!line[0] || line[0] == '#')
			continue;
		args = strchr(line, ' ');
		if (args)
			*args++ = '\0';
		if (run_call(ws, line, args ? args : "{}", &errors) < 0)
			rc = 1;
		calls++;
	}
	fclose(f);
	printf("session: %d tool calls, %d errors\n", calls, errors);
	if (sbx_workspace_close(ws) < 0 && rc == 0)
		rc = 1;
	return rc;
}
