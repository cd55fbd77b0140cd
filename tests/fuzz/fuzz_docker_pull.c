/* libFuzzer target for the docker backend's reading of an image pull's answer: bytes as the
 * engine could send them (JSON lines, garbage, lines far over the limit, values of every
 * type where a string or a count belongs) go through the line splitter of the Engine API
 * client in chunks of varying size, and each object through the reading of a pull event.
 *
 * Beyond "no crash, no leak": every event has non-NULL strings; a byte count is never taken
 * from anything but a positive integer; the first byte of the input says after how many
 * objects the reader stops the stream (0: never), and then not one more object arrives. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <agentsbx/agentsbx.h>
#include "docker.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond) do { if (!(cond)) { fprintf(stderr, "check failed: %s\n", #cond); \
	abort(); } } while (0)

struct seen {
	unsigned objects;
	unsigned stop_after;
	bool stopped;
};

static bool is_count_of(const sbx_json *line, const char *key, uint64_t got)
{
	const sbx_json *d = sbx_json_get(line, "progressDetail");
	const sbx_json *v = d && d->type == SBX_JSON_OBJECT ? sbx_json_get(d, key) : NULL;

	if (!v || v->type != SBX_JSON_INT || v->i <= 0)
		return got == 0;
	return got == (uint64_t)v->i;
}

static int on_line(void *arg, const sbx_json *line)
{
	struct seen *s = arg;
	struct docker_pull_event ev;

	CHECK(!s->stopped);
	CHECK(line->type == SBX_JSON_OBJECT);
	docker_pull_event_read(line, &ev);
	CHECK(ev.id && ev.status);
	CHECK(is_count_of(line, "current", ev.current));
	CHECK(is_count_of(line, "total", ev.total));
	(void)strlen(ev.id);
	(void)strlen(ev.status);
	if (ev.error)
		(void)strlen(ev.error);
	if (++s->objects == s->stop_after) {
		s->stopped = true;
		return -SBX_EBACKEND;
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct seen s = { .stop_after = size ? data[0] : 0 };
	struct docker_lines dl;
	size_t off = size ? 1 : 0, step = 1;
	int r = 0;

	docker_lines_init(&dl, on_line, &s);
	while (off < size && r == 0) {
		size_t n = step < size - off ? step : size - off;

		r = docker_lines_feed(&dl, (const char *)data + off, n);
		off += n;
		step = step * 7 % 4099 + 1;
	}
	if (r == 0)
		r = docker_lines_finish(&dl);
	CHECK(r == 0 || r == -SBX_EBACKEND);
	CHECK((r != 0) == s.stopped);
	/* Once stopped, it stays stopped: more lines reach nobody. */
	if (r)
		CHECK(docker_lines_feed(&dl, "{}\n", 3) == r);
	docker_lines_free(&dl);
	return 0;
}
