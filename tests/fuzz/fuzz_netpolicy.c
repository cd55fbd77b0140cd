/* libFuzzer target for the network rule parser (src/util/netpolicy.c): any rule that parses
 * formats to text that parses to the same rule, and matching it against a target made from
 * the same bytes never crashes. The whole "network" object parser runs on the input as JSON
 * too, its failures leaving a message in the documented form. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json.h"
#include "util/netpolicy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond) do { if (!(cond)) { fprintf(stderr, "check failed: %s\n", #cond); \
	abort(); } } while (0)

static void fuzz_rule(const char *text, size_t size)
{
	struct sbx_netrule r, again;
	struct sbx_netpolicy p = { .allow = &r, .n_allow = 1 };
	struct sbx_nettarget t;
	struct sbx_netverdict v;
	char why[200], out[400];

	if (sbx_netrule_parse(text, size, &r, why, sizeof why) < 0) {
		CHECK(why[0] != '\0');
		return;
	}
	sbx_netrule_format(&r, out, sizeof out);
	CHECK(sbx_netrule_parse(out, strlen(out), &again, why, sizeof why) == 0);
	CHECK(!memcmp(&r, &again, sizeof r));
	if (sbx_nettarget_parse(text, size, 443, &t) == 0) {
		sbx_netpolicy_check(&p, &t, &v);
		if (!t.is_name)
			sbx_netpolicy_check_address(&p, &t.addr, 443, false, &v);
	}
}

static void fuzz_network(const char *text, size_t size)
{
	struct sbx_network n;
	sbx_json *v = NULL;
	char err[600];

	if (sbx_json_parse(text, size, &v, err, sizeof err) < 0)
		return;
	if (sbx_network_parse(v, &n, err, sizeof err) == 0)
		sbx_network_free(&n);
	else
		CHECK(!strncmp(err, "key '", 5) || !strncmp(err, "unknown key '", 13));
	sbx_json_free(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size ? size : 1);

	memcpy(buf, data, size);
	fuzz_rule(buf, size);
	fuzz_network(buf, size);
	free(buf);
	return 0;
}
