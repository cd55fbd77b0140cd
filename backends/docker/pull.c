/* Pulling a missing image (POST /images/create), with its progress reported to the caller of
 * the open. The engine answers 200 and then writes one JSON object per line (its
 * CreateImageInfo): {"status", "id", "progress", "progressDetail": {"current", "total"}} while
 * it works, and {"errorDetail": {"message"}, "error"} when it fails: a failed pull is still a
 * 200, so those lines are the verdict. */
#include <stdio.h>
#include <string.h>

#include "docker.h"
#include "util/error.h"

#define PULL_TIMEOUT_MS (30L * 60 * 1000)

static const char *string_member(const sbx_json *obj, const char *key)
{
	const sbx_json *v = sbx_json_get(obj, key);

	return v && v->type == SBX_JSON_STRING ? v->str : NULL;
}

/* A byte count: a non-negative integer, else unknown (0). */
static uint64_t count_member(const sbx_json *obj, const char *key)
{
	const sbx_json *v = obj && obj->type == SBX_JSON_OBJECT ? sbx_json_get(obj, key) : NULL;

	return v && v->type == SBX_JSON_INT && v->i > 0 ? (uint64_t)v->i : 0;
}

void docker_pull_event_read(const sbx_json *line, struct docker_pull_event *ev)
{
	const sbx_json *detail = sbx_json_get(line, "errorDetail");
	const char *s;

	*ev = (struct docker_pull_event){ .id = "", .status = "" };
	/* errorDetail is the current spelling; "error" the deprecated one beside it. */
	ev->error = detail && detail->type == SBX_JSON_OBJECT ? string_member(detail, "message")
	                                                      : NULL;
	if (!ev->error)
		ev->error = string_member(line, "error");
	if ((s = string_member(line, "id")))
		ev->id = s;
	if ((s = string_member(line, "status")))
		ev->status = s;
	detail = sbx_json_get(line, "progressDetail");
	ev->current = count_member(detail, "current");
	ev->total = count_member(detail, "total");
}

struct pull {
	struct docker_ws *ws;
	const char *image;
};

static int pull_line(void *arg, const sbx_json *line)
{
	struct pull *p = arg;
	struct docker_pull_event ev;

	docker_pull_event_read(line, &ev);
	if (ev.error)
		return sbx_fail(-SBX_EBACKEND, "docker: pull image '%s': %s", p->image, ev.error);
	if (p->ws->progress && ev.status[0]) {
		sbx_open_progress report = {
			.size = sizeof report, .phase = "pull", .subject = p->image, .item = ev.id,
			.status = ev.status, .current = ev.current, .total = ev.total,
		};
		p->ws->progress(p->ws->progress_userdata, &report);
	}
	return 0;
}

int docker_pull_image(struct docker_ws *ws)
{
	const char *image = ws->opts.image, *last;
	struct pull p = { .ws = ws, .image = image };
	sbx_buf path = { 0 };
	char what[300];
	int r;

	if (!image) /* options.c requires it; said again for the compiler's flow analysis */
		return sbx_fail(-SBX_ECONFIG, "config: key 'docker.image': required");
	last = strrchr(image, '/');
	snprintf(what, sizeof what, "pull image '%s'", image);
	sbx_buf_puts(&path, "/images/create?fromImage=");
	docker_url_escape(&path, image);
	/* Without a tag the engine pulls every tag of the repository. */
	if (!strchr(last ? last : image, ':') && !strchr(image, '@'))
		sbx_buf_puts(&path, "&tag=latest");
	r = path.oom ? sbx_fail(-SBX_ENOMEM, "docker: out of memory")
	             : docker_call_lines(&ws->engine, "POST", path.data, what, PULL_TIMEOUT_MS,
	                                 pull_line, &p);
	sbx_buf_free(&path);
	return r;
}
