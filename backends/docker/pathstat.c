/* The engine's X-Docker-Container-Path-Stat header: base64 of a JSON object
 * {"name": "...", "size": N, "mode": N, "mtime": "RFC 3339", "linkTarget": "..."} where mode
 * is a Go os.FileMode (permission bits low, the kind as high bits). It comes from the engine,
 * which reads a file system the workspace's commands control: every field is checked. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pathstat.h"
#include "util/base64.h"
#include "util/error.h"
#include "util/json.h"

#define STAT_HEADER_MAX 16384

/* Go's os.FileMode bits. */
#define GO_DIR        (1ull << 31)
#define GO_SYMLINK    (1ull << 27)
#define GO_DEVICE     (1ull << 26)
#define GO_PIPE       (1ull << 25)
#define GO_SOCKET     (1ull << 24)
#define GO_SETUID     (1ull << 23)
#define GO_SETGID     (1ull << 22)
#define GO_CHARDEV    (1ull << 21)
#define GO_STICKY     (1ull << 20)
#define GO_IRREGULAR  (1ull << 19)
#define GO_KIND (GO_DIR | GO_SYMLINK | GO_DEVICE | GO_PIPE | GO_SOCKET | GO_CHARDEV | GO_IRREGULAR)

static int bad(const char *why)
{
	return sbx_fail(-SBX_EPROTO, "docker: the engine's path stat %s", why);
}

static int kind_of(unsigned long long mode)
{
	switch (mode & GO_KIND) {
	case 0:
		return SBX_FILE_REGULAR;
	case GO_DIR:
		return SBX_FILE_DIRECTORY;
	case GO_SYMLINK:
		return SBX_FILE_SYMLINK;
	default:
		return SBX_FILE_OTHER;
	}
}

static int two_digits(const char *s, int *v)
{
	if (s[0] < '0' || s[0] > '9' || s[1] < '0' || s[1] > '9')
		return -1;
	*v = (s[0] - '0') * 10 + (s[1] - '0');
	return 0;
}

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian), without the C library's time zone. */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;

	return era * 146097 + doe - 719468;
}

int docker_parse_rfc3339(const char *s, int64_t *sec, int64_t *nsec)
{
	int y1, y2, mo, d, h, mi, se, oh = 0, om = 0;
	int64_t frac = 0;
	size_t i = 19;

	*sec = *nsec = 0;
	if (strlen(s) < 20 || two_digits(s, &y1) || two_digits(s + 2, &y2) || s[4] != '-' ||
	    two_digits(s + 5, &mo) || s[7] != '-' || two_digits(s + 8, &d) || s[10] != 'T' ||
	    two_digits(s + 11, &h) || s[13] != ':' || two_digits(s + 14, &mi) || s[16] != ':' ||
	    two_digits(s + 17, &se))
		return -1;
	if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60)
		return -1;
	if (s[i] == '.') {
		int digits = 0;
		for (i++; s[i] >= '0' && s[i] <= '9'; i++, digits++)
			if (digits < 9)
				frac = frac * 10 + (s[i] - '0');
		if (!digits)
			return -1;
		for (; digits < 9; digits++)
			frac *= 10;
	}
	if (s[i] == 'Z') {
		i++;
	} else if (s[i] == '+' || s[i] == '-') {
		if (two_digits(s + i + 1, &oh) || s[i + 3] != ':' || two_digits(s + i + 4, &om) ||
		    oh > 23 || om > 59)
			return -1;
		if (s[i] == '-') {
			oh = -oh;
			om = -om;
		}
		i += 6;
	} else {
		return -1;
	}
	if (s[i])
		return -1;
	*sec = days_from_civil(y1 * 100 + y2, mo, d) * 86400 + h * 3600 + mi * 60 + se -
	       (oh * 3600 + om * 60);
	*nsec = frac;
	return 0;
}

static const sbx_json *member(const sbx_json *obj, const char *key, sbx_json_type type)
{
	const sbx_json *v = sbx_json_get(obj, key);

	return v && v->type == type ? v : NULL;
}

static int fill(const sbx_json *j, struct docker_path_stat *st)
{
	const sbx_json *name = member(j, "name", SBX_JSON_STRING),
	               *size = member(j, "size", SBX_JSON_INT),
	               *mode = member(j, "mode", SBX_JSON_INT),
	               *mtime = member(j, "mtime", SBX_JSON_STRING),
	               *link = sbx_json_get(j, "linkTarget");

	if (j->type != SBX_JSON_OBJECT || !name || !size || !mode)
		return bad("lacks its name, size or mode");
	if (size->i < 0 || mode->i < 0 || (unsigned long long)mode->i > 0xffffffffull)
		return bad("has a negative size or a mode out of range");
	if (strlen(name->str) != name->len || (link && (link->type != SBX_JSON_STRING ||
	                                                strlen(link->str) != link->len)))
		return bad("has a name or link target with a NUL byte");
	st->type = kind_of((unsigned long long)mode->i);
	st->mode = (unsigned)(mode->i & 0777) | (mode->i & (long long)GO_SETUID ? 04000 : 0) |
	           (mode->i & (long long)GO_SETGID ? 02000 : 0) |
	           (mode->i & (long long)GO_STICKY ? 01000 : 0);
	st->size = (uint64_t)size->i;
	if (mtime && docker_parse_rfc3339(mtime->str, &st->mtime_sec, &st->mtime_nsec) < 0)
		return bad("has an mtime that is not RFC 3339");
	if (!(st->name = strdup(name->str)) ||
	    (link && link->len && !(st->link = strdup(link->str))))
		return sbx_fail(-SBX_ENOMEM, "docker: out of memory");
	return 0;
}

int docker_path_stat_parse(const char *b64, size_t len, struct docker_path_stat *st)
{
	unsigned char *text = NULL;
	size_t text_len = 0;
	sbx_json *j = NULL;
	char err[96];
	int r;

	*st = (struct docker_path_stat){ 0 };
	if (len > STAT_HEADER_MAX)
		return bad("header is too long");
	if (sbx_base64_decode(b64, len, &text, &text_len) < 0)
		return bad("header is not base64");
	r = sbx_json_parse((const char *)text, text_len, &j, err, sizeof err);
	free(text);
	if (r < 0)
		return bad("is not JSON");
	r = fill(j, st);
	sbx_json_free(j);
	if (r < 0)
		docker_path_stat_free(st);
	return r;
}

void docker_path_stat_free(struct docker_path_stat *st)
{
	free(st->name);
	free(st->link);
	*st = (struct docker_path_stat){ 0 };
}
