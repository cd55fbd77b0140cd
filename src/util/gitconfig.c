/* git's config format, read the way git 2.39's config.c reads it (git_parse_source,
 * get_base_var, get_value, parse_value), with every leniency of git's turned into an error
 * (see gitconfig.h), and the allow-list of keys a sanitised config keeps. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "error.h"
#include "gitconfig.h"

#define NAME_MAX_LEN 1024          /* longer section or key names are refused, not truncated */

struct reader {
	const char *p, *end;
	bool eof;
	unsigned line;
	bool bad;                     /* a byte git would read differently (NUL, a lone CR) */
};

/* git's get_next_char: CRLF reads as LF, the end of the text as a final LF. */
static int next_char(struct reader *r)
{
	if (r->p >= r->end) {
		r->eof = true;
		return '\n';
	}
	int c = (unsigned char)*r->p++;
	if (c == '\r') {
		if (r->p < r->end && *r->p == '\n')
			r->p++, c = '\n';
		else
			r->bad = true;    /* git takes a lone CR as a space: we do not guess */
	}
	if (c == '\0')
		r->bad = true;
	if (c == '\n')
		r->line++;
	return c;
}

static bool is_key_char(int c)
{
	return isalnum(c) || c == '-';
}

struct parse {
	struct reader rd;
	sbx_buf section, subsection, name, value;
	bool has_section, has_subsection;
	sbx_gitconfig_fn fn;
	void *userdata;
	char *err;
	size_t errlen;
};

static int syntax(struct parse *ps, const char *what)
{
	snprintf(ps->err, ps->errlen, "line %u: %s", ps->rd.line + 1, what);
	return -SBX_EINVAL;
}

static void buf_reset(sbx_buf *b)
{
	b->len = 0;
	sbx_buf_append(b, "", 0);
}

/* [section "sub"]: the part after the whitespace, up to and including the ']'. */
static int read_extended_subsection(struct parse *ps, int c)
{
	do {
		if (c == '\n')
			return syntax(ps, "incomplete section header");
		c = next_char(&ps->rd);
	} while (isspace(c));
	if (c != '"')
		return syntax(ps, "a subsection name must be quoted");
	ps->has_subsection = true;
	for (;;) {
		c = next_char(&ps->rd);
		if (c == '\n')
			return syntax(ps, "newline in a subsection name");
		if (c == '"')
			break;
		if (c == '\\') {
			c = next_char(&ps->rd);
			/* git drops the backslash before any other character; we take only these two */
			if (c != '"' && c != '\\')
				return syntax(ps, "unknown escape in a subsection name");
		}
		sbx_buf_append(&ps->subsection, (char[]){ (char)c }, 1);
	}
	if (next_char(&ps->rd) != ']')
		return syntax(ps, "expected ']' right after the subsection name");
	return 0;
}

/* The old form [section.sub]: the subsection is lowercased, as git does. */
static int split_dotted_section(struct parse *ps)
{
	char *dot = memchr(ps->section.data, '.', ps->section.len);

	if (!dot)
		return 0;
	if (dot == ps->section.data || dot[1] == '\0')
		return syntax(ps, "empty part in a dotted section name");
	buf_reset(&ps->subsection);
	sbx_buf_puts(&ps->subsection, dot + 1);
	ps->has_subsection = true;
	ps->section.len = (size_t)(dot - ps->section.data);
	ps->section.data[ps->section.len] = '\0';
	return 0;
}

/* After '[': git's get_base_var. */
static int read_section(struct parse *ps)
{
	buf_reset(&ps->section);
	buf_reset(&ps->subsection);
	ps->has_subsection = false;
	ps->has_section = false;
	for (;;) {
		int c = next_char(&ps->rd);
		if (ps->rd.eof)
			return syntax(ps, "incomplete section header");
		if (c == ']')
			break;
		if (isspace(c)) {
			if (memchr(ps->section.data, '.', ps->section.len))
				return syntax(ps, "a dotted section name with a quoted subsection");
			int r = read_extended_subsection(ps, c);
			if (r < 0)
				return r;
			break;
		}
		if (!is_key_char(c) && c != '.')
			return syntax(ps, "bad character in a section name");
		if (ps->section.len >= NAME_MAX_LEN)
			return syntax(ps, "section name too long");
		sbx_buf_append(&ps->section, (char[]){ (char)tolower(c) }, 1);
	}
	if (ps->section.len == 0)
		return syntax(ps, "empty section name");
	ps->has_section = true;
	return ps->has_subsection ? 0 : split_dotted_section(ps);
}

/* git's parse_value: after '='. */
static int read_value(struct parse *ps)
{
	bool quote = false, comment = false;
	size_t space = 0;

	buf_reset(&ps->value);
	for (;;) {
		int c = next_char(&ps->rd);
		if (c == '\n') {
			if (quote)
				return syntax(ps, "unterminated quote in a value");
			return 0;
		}
		if (comment)
			continue;
		if (isspace(c) && !quote) {
			if (ps->value.len)
				space++;
			continue;
		}
		if (!quote && (c == ';' || c == '#')) {
			comment = true;
			continue;
		}
		for (; space; space--)
			sbx_buf_append(&ps->value, " ", 1);
		if (c == '\\') {
			c = next_char(&ps->rd);
			switch (c) {
			case '\n':
				continue;
			case 't': c = '\t'; break;
			case 'b': c = '\b'; break;
			case 'n': c = '\n'; break;
			case '\\': case '"': break;
			default:
				return syntax(ps, "unknown escape in a value");
			}
			sbx_buf_append(&ps->value, (char[]){ (char)c }, 1);
			continue;
		}
		if (c == '"') {
			quote = !quote;
			continue;
		}
		sbx_buf_append(&ps->value, (char[]){ (char)c }, 1);
	}
}

/* A key starting with c: git's get_value. */
static int read_key(struct parse *ps, int c)
{
	bool has_value = false;
	int r;

	if (!ps->has_section)
		return syntax(ps, "a key before any section");
	buf_reset(&ps->name);
	sbx_buf_append(&ps->name, (char[]){ (char)tolower(c) }, 1);
	for (;;) {
		c = next_char(&ps->rd);
		if (ps->rd.eof || !is_key_char(c))
			break;
		if (ps->name.len >= NAME_MAX_LEN)
			return syntax(ps, "key name too long");
		sbx_buf_append(&ps->name, (char[]){ (char)tolower(c) }, 1);
	}
	while (c == ' ' || c == '\t')
		c = next_char(&ps->rd);
	if (c != '\n') {
		if (c != '=')
			return syntax(ps, "expected '=' or the end of the line after a key");
		if ((r = read_value(ps)) < 0)
			return r;
		has_value = true;
	}
	if (ps->rd.bad)
		return syntax(ps, "a NUL byte or a lone carriage return");
	if (ps->section.oom || ps->subsection.oom || ps->name.oom || ps->value.oom)
		return -SBX_ENOMEM;
	sbx_gitconfig_entry e = {
		.section = ps->section.data,
		.subsection = ps->has_subsection ? ps->subsection.data : NULL,
		.name = ps->name.data,
		.value = has_value ? ps->value.data : NULL,
	};
	if (has_value && strlen(e.value) != ps->value.len)
		return syntax(ps, "a NUL byte in a value");
	return ps->fn(&e, ps->userdata);
}

/* git_parse_source's loop. */
static int parse_all(struct parse *ps)
{
	static const unsigned char bom[] = { 0xef, 0xbb, 0xbf };
	bool comment = false;
	int r;

	if (ps->rd.end - ps->rd.p >= 3 && memcmp(ps->rd.p, bom, 3) == 0)
		ps->rd.p += 3;
	for (;;) {
		int c = next_char(&ps->rd);
		if (ps->rd.bad)
			return syntax(ps, "a NUL byte or a lone carriage return");
		if (c == '\n') {
			if (ps->rd.eof)
				return 0;
			comment = false;
			continue;
		}
		if (comment || isspace(c))
			continue;
		if (c == '#' || c == ';') {
			comment = true;
			continue;
		}
		if (c == '[') {
			if ((r = read_section(ps)) < 0)
				return r;
			continue;
		}
		if (!isalpha(c))
			return syntax(ps, "expected a section, a key or a comment");
		if ((r = read_key(ps, c)) != 0)
			return r;
	}
}

int sbx_gitconfig_parse(const char *text, size_t len, sbx_gitconfig_fn fn, void *userdata,
                        char *err, size_t errlen)
{
	struct parse ps = {
		.rd = { .p = text, .end = text + len },
		.fn = fn, .userdata = userdata, .err = err, .errlen = errlen,
	};
	int r;

	if (errlen)
		err[0] = '\0';
	r = parse_all(&ps);
	sbx_buf_free(&ps.section);
	sbx_buf_free(&ps.subsection);
	sbx_buf_free(&ps.name);
	sbx_buf_free(&ps.value);
	return r;
}

/* ---- the allow-list ---------------------------------------------------------------- */

enum check { ANY, BOOL, NUMBER, URL, UPDATE_MODE, REL_PATH, TAG_OPT };

struct rule {
	const char *section;
	bool sub;                 /* the key lives in a subsection ([remote "origin"]) */
	const char *name;
	enum check check;
};

/* Keys that name no program, no hook, no file of configuration and no transport helper.
 * Everything else (core.hooksPath, core.fsmonitor, core.pager, core.editor, core.sshCommand,
 * core.askPass, alias.*, filter.*, diff.*.textconv, merge.*.driver, include*, credential.*,
 * remote.*.uploadpack / receivepack / vcs, gpg.*, sequence.editor, ...) is dropped. */
static const struct rule rules[] = {
	{ "core", false, "repositoryformatversion", NUMBER },
	{ "core", false, "filemode", BOOL },
	{ "core", false, "bare", BOOL },
	{ "core", false, "logallrefupdates", ANY },
	{ "core", false, "ignorecase", BOOL },
	{ "core", false, "symlinks", BOOL },
	{ "core", false, "precomposeunicode", BOOL },
	{ "core", false, "protecthfs", BOOL },
	{ "core", false, "protectntfs", BOOL },
	{ "core", false, "autocrlf", ANY },
	{ "core", false, "eol", ANY },
	{ "core", false, "safecrlf", ANY },
	{ "core", false, "checkstat", ANY },
	{ "core", false, "trustctime", BOOL },
	{ "core", false, "quotepath", BOOL },
	{ "core", false, "sparsecheckout", BOOL },
	{ "core", false, "sparsecheckoutcone", BOOL },
	{ "core", false, "splitindex", BOOL },
	{ "core", false, "commitgraph", BOOL },
	{ "core", false, "multipackindex", BOOL },
	{ "core", false, "abbrev", ANY },
	{ "core", false, "compression", NUMBER },
	{ "core", false, "worktree", REL_PATH },
	{ "extensions", false, "worktreeconfig", BOOL },
	{ "extensions", false, "objectformat", ANY },
	{ "extensions", false, "preciousobjects", BOOL },
	{ "remote", true, "url", URL },
	{ "remote", true, "pushurl", URL },
	{ "remote", true, "fetch", ANY },
	{ "remote", true, "push", ANY },
	{ "remote", true, "tagopt", TAG_OPT },
	{ "remote", true, "prune", BOOL },
	{ "remote", true, "mirror", BOOL },
	{ "remote", true, "skipdefaultupdate", BOOL },
	{ "branch", true, "remote", URL },        /* a remote's name, or a URL git fetches */
	{ "branch", true, "pushremote", URL },
	{ "branch", true, "merge", ANY },
	{ "branch", true, "rebase", ANY },
	{ "branch", true, "description", ANY },
	{ "submodule", true, "url", URL },
	{ "submodule", true, "active", BOOL },
	{ "submodule", true, "branch", ANY },
	{ "submodule", true, "update", UPDATE_MODE },  /* "!command" would run a command */
	{ "submodule", true, "fetchrecursesubmodules", ANY },
	{ "submodule", true, "ignore", ANY },
	{ "submodule", true, "shallow", BOOL },
	{ "user", false, "name", ANY },
	{ "user", false, "email", ANY },
	{ "init", false, "defaultbranch", ANY },
	{ "pull", false, "rebase", ANY },
	{ "pull", false, "ff", ANY },
	{ "push", false, "default", ANY },
	{ "push", false, "autosetupremote", BOOL },
	{ "fetch", false, "prune", BOOL },
};

static bool one_of(const char *v, const char *const *set)
{
	for (; *set; set++)
		if (strcasecmp(v, *set) == 0)
			return true;
	return false;
}

static bool is_bool(const char *v)
{
	static const char *const words[] = { "true", "false", "yes", "no", "on", "off", "1", "0",
	                                     "", NULL };
	return !v || one_of(v, words);
}

static bool is_number(const char *v)
{
	if (!v || !*v)
		return false;
	for (const char *p = *v == '-' ? v + 1 : v; *p; p++)
		if (!isdigit((unsigned char)*p))
			return false;
	return strlen(v) < 12;
}

/* An ordinary transport: no "<helper>::" (git would run git-remote-<helper>, ext:: a command
 * line), no option-looking value, and a scheme only from git's built-in ones. */
static bool is_plain_url(const char *v)
{
	static const char *const schemes[] = { "http", "https", "ftp", "ftps", "git", "ssh",
	                                       "git+ssh", "ssh+git", "file", NULL };
	const char *colon;

	if (!v || v[0] == '-' || strstr(v, "::"))
		return false;
	colon = strstr(v, "://");
	if (colon) {
		char scheme[16];
		size_t n = (size_t)(colon - v);
		if (n == 0 || n >= sizeof scheme)
			return false;
		memcpy(scheme, v, n);
		scheme[n] = '\0';
		return one_of(scheme, schemes);
	}
	return true;
}

static bool check_value(enum check c, const char *v)
{
	static const char *const updates[] = { "checkout", "rebase", "merge", "none", NULL };
	static const char *const tagopts[] = { "--no-tags", "--tags", NULL };

	switch (c) {
	case ANY: return true;
	case BOOL: return is_bool(v);
	case NUMBER: return is_number(v);
	case URL: return is_plain_url(v);
	case UPDATE_MODE: return v && one_of(v, updates);
	case TAG_OPT: return v && one_of(v, tagopts);
	case REL_PATH: return v && *v && v[0] != '/' && v[0] != '~';
	default: return false;
	}
}

bool sbx_gitconfig_key_allowed(const sbx_gitconfig_entry *e)
{
	for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
		const struct rule *r = &rules[i];
		if (strcmp(r->section, e->section) != 0 || strcmp(r->name, e->name) != 0 ||
		    r->sub != (e->subsection != NULL))
			continue;
		return check_value(r->check, e->value);
	}
	return false;
}

void sbx_gitconfig_key_name(const sbx_gitconfig_entry *e, char *buf, size_t len)
{
	if (e->subsection)
		snprintf(buf, len, "%s.%s.%s", e->section, e->subsection, e->name);
	else
		snprintf(buf, len, "%s.%s", e->section, e->name);
}

/* ---- writing a sanitised copy ----------------------------------------------------- */

struct sanitizer {
	sbx_gitconfig_keep_fn keep;
	void *userdata;
	sbx_gitconfig_clean *out;
	sbx_buf text;
	char *last_section, *last_sub;    /* of the header written last */
	bool wrote_header, last_had_sub;
};

/* A value in quotes takes \" \\ \n \t \b; a subsection name only \" and \\ (its other
 * bytes are read as they are). */
static void put_escaped(sbx_buf *b, const char *s, bool value)
{
	for (; *s; s++) {
		const char *esc = NULL;
		switch (*s) {
		case '"': esc = "\\\""; break;
		case '\\': esc = "\\\\"; break;
		case '\n': esc = value ? "\\n" : NULL; break;
		case '\t': esc = value ? "\\t" : NULL; break;
		case '\b': esc = value ? "\\b" : NULL; break;
		default: break;
		}
		if (esc)
			sbx_buf_puts(b, esc);
		else
			sbx_buf_append(b, s, 1);
	}
}

/* A value that reads back the same without quotes (as git itself writes most). */
static bool plain_value(const char *v)
{
	if (!*v)
		return false;
	for (; *v; v++)
		if (!isalnum((unsigned char)*v) && !strchr("._/:@+*-,=~^%", *v))
			return false;
	return true;
}

static bool same_header(const struct sanitizer *s, const sbx_gitconfig_entry *e)
{
	if (!s->wrote_header || strcmp(s->last_section, e->section) != 0)
		return false;
	if (s->last_had_sub != (e->subsection != NULL))
		return false;
	return !e->subsection || strcmp(s->last_sub, e->subsection) == 0;
}

static int write_header(struct sanitizer *s, const sbx_gitconfig_entry *e)
{
	char *sec = strdup(e->section), *sub = strdup(e->subsection ? e->subsection : "");

	if (!sec || !sub) {
		free(sec);
		free(sub);
		return -SBX_ENOMEM;
	}
	free(s->last_section);
	free(s->last_sub);
	s->last_section = sec;
	s->last_sub = sub;
	s->last_had_sub = e->subsection != NULL;
	s->wrote_header = true;
	sbx_buf_printf(&s->text, "[%s", e->section);
	if (e->subsection) {
		sbx_buf_puts(&s->text, " \"");
		put_escaped(&s->text, e->subsection, false);
		sbx_buf_puts(&s->text, "\"");
	}
	sbx_buf_puts(&s->text, "]\n");
	return 0;
}

static int sanitize_one(const sbx_gitconfig_entry *e, void *userdata)
{
	struct sanitizer *s = userdata;
	bool allowed = sbx_gitconfig_key_allowed(e);
	int r;

	if (s->keep ? !s->keep(e, allowed, s->userdata) : !allowed) {
		if (s->out->removed++ == 0)
			sbx_gitconfig_key_name(e, s->out->first_removed, sizeof s->out->first_removed);
		return 0;
	}
	s->out->kept++;
	if (!same_header(s, e) && (r = write_header(s, e)) < 0)
		return r;
	sbx_buf_printf(&s->text, "\t%s", e->name);
	if (e->value && plain_value(e->value)) {
		sbx_buf_printf(&s->text, " = %s", e->value);
	} else if (e->value) {
		sbx_buf_puts(&s->text, " = \"");
		put_escaped(&s->text, e->value, true);
		sbx_buf_puts(&s->text, "\"");
	}
	sbx_buf_puts(&s->text, "\n");
	return 0;
}

int sbx_gitconfig_sanitize(const char *text, size_t len, sbx_gitconfig_keep_fn keep,
                           void *userdata, sbx_gitconfig_clean *out, char *err, size_t errlen)
{
	struct sanitizer s = { .keep = keep, .userdata = userdata, .out = out };
	int r;

	memset(out, 0, sizeof *out);
	sbx_buf_append(&s.text, "", 0);
	r = sbx_gitconfig_parse(text, len, sanitize_one, &s, err, errlen);
	free(s.last_section);
	free(s.last_sub);
	if (r == 0 && s.text.oom)
		r = -SBX_ENOMEM;
	if (r < 0) {
		sbx_buf_free(&s.text);
		memset(out, 0, sizeof *out);
		return r;
	}
	out->len = s.text.len;
	out->text = s.text.data;
	return 0;
}

void sbx_gitconfig_clean_free(sbx_gitconfig_clean *c)
{
	if (c) {
		free(c->text);
		c->text = NULL;
	}
}
