/* See progress.h. The engine reports per layer ("Downloading" with bytes, "Extracting",
 * "Pull complete"); the bar sums the layers' bytes, and counts a layer done when it is
 * complete or already there. What the engine says is printed only after control characters
 * are replaced: a registry's words must not drive the terminal. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/progress.h"

#define MAX_LAYERS 512
#define ID_MAX 72
#define BAR_WIDTH 24

struct layer {
	char id[ID_MAX];
	uint64_t current, total;
	bool done;
};

struct cli_progress {
	FILE *out;
	bool tty;
	bool drawn;                   /* a bar line is on screen, not ended */
	char subject[256];
	size_t n;
	struct layer layers[MAX_LAYERS];
};

struct cli_progress *cli_progress_new(FILE *out, int tty)
{
	struct cli_progress *p = calloc(1, sizeof *p);

	if (p) {
		p->out = out;
		p->tty = tty != 0;
	}
	return p;
}

/* s cut to len bytes with every control byte (and DEL) as '?'. */
static void printable(char *dst, size_t len, const char *s)
{
	size_t i = 0;

	for (; s[i] && i + 1 < len; i++)
		dst[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
	dst[i] = '\0';
}

static struct layer *layer_of(struct cli_progress *p, const char *id)
{
	char clean[ID_MAX];

	printable(clean, sizeof clean, id);
	for (size_t i = 0; i < p->n; i++)
		if (!strcmp(p->layers[i].id, clean))
			return &p->layers[i];
	if (p->n == MAX_LAYERS)
		return NULL;
	memcpy(p->layers[p->n].id, clean, sizeof clean);
	return &p->layers[p->n++];
}

/* Statuses that carry a layer's bytes (the engine's words since API 1.x). */
static bool is_transfer(const char *status)
{
	return !strcmp(status, "Downloading") || !strcmp(status, "Extracting");
}

static bool is_layer_done(const char *status)
{
	return !strcmp(status, "Pull complete") || !strcmp(status, "Already exists");
}

/* A layer event is one whose item is a layer id: the engine uses the tag as the item of
 * "Pulling from ...", which is about the image as a whole. */
static bool is_layer_event(const sbx_open_progress *ev)
{
	return ev->item[0] && strncmp(ev->status, "Pulling from ", 13) != 0;
}

static void human(char *out, size_t len, uint64_t bytes)
{
	static const char *const unit[] = { "B", "kB", "MB", "GB", "TB" };
	double v = (double)bytes;
	int u = 0;

	while (v >= 1000 && u < 4) {
		v /= 1000;
		u++;
	}
	snprintf(out, len, u ? "%.1f %s" : "%.0f %s", v, unit[u]);
}

static void draw_bar(struct cli_progress *p)
{
	uint64_t cur = 0, total = 0;
	size_t done = 0;
	char bar[BAR_WIDTH + 1], a[32], b[32];
	int fill = 0;

	for (size_t i = 0; i < p->n; i++) {
		const struct layer *l = &p->layers[i];

		done += l->done;
		total += l->total;
		cur += l->done ? l->total : l->current < l->total ? l->current : l->total;
	}
	if (total)
		fill = (int)(cur * BAR_WIDTH / total);
	for (int i = 0; i < BAR_WIDTH; i++)
		bar[i] = i < fill ? '#' : '.';
	bar[BAR_WIDTH] = '\0';
	human(a, sizeof a, cur);
	human(b, sizeof b, total);
	/* \r and erase to the end: the same line redrawn. */
	fprintf(p->out, "\r\033[Kpulling %s [%s] %s / %s, %zu/%zu layers", p->subject, bar, a, b,
	        done, p->n);
	fflush(p->out);
	p->drawn = true;
}

static void end_line(struct cli_progress *p)
{
	if (p->drawn)
		fputc('\n', p->out);
	p->drawn = false;
}

void cli_progress_event(void *userdata, const sbx_open_progress *ev)
{
	struct cli_progress *p = userdata;
	char status[256], size[32];
	struct layer *l;

	if (!p || ev->size < offsetof(sbx_open_progress, total) + sizeof ev->total)
		return;
	printable(p->subject, sizeof p->subject, ev->subject);
	printable(status, sizeof status, ev->status);
	if (!is_layer_event(ev)) {
		/* The image's own lines: "Pulling from ...", "Digest: ...", "Status: ...". */
		end_line(p);
		fprintf(p->out, "agentsbx: %s %s: %s\n", ev->phase, p->subject, status);
		fflush(p->out);
		return;
	}
	if (!(l = layer_of(p, ev->item)) || l->done)
		return;
	if (is_transfer(ev->status) && ev->total) {
		/* Extracting counts the same bytes again: the bar shows the larger stage. */
		l->current = !strcmp(ev->status, "Downloading") || ev->current > l->current
		                 ? ev->current : l->current;
		l->total = ev->total > l->total ? ev->total : l->total;
	}
	if (is_layer_done(ev->status)) {
		l->done = true;
		if (!p->tty) {
			human(size, sizeof size, l->total);
			fprintf(p->out, "agentsbx: %s %s: layer %s: %s%s%s%s\n", ev->phase, p->subject,
			        l->id, status, l->total ? " (" : "", l->total ? size : "",
			        l->total ? ")" : "");
			fflush(p->out);
		}
	}
	if (p->tty)
		draw_bar(p);
}

void cli_progress_end(struct cli_progress *p)
{
	if (!p)
		return;
	end_line(p);
	free(p);
}
