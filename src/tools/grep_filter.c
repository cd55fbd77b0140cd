/* Grep's file filter: rg's --glob overrides (the last glob that matches decides) and a fixed
 * table of file types. */
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/grep_filter.h"
#include "util/buf.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/glob.h"

/* File types: name and a glob matched against the file name. Aliases (alias = true) are
 * accepted but not listed. Close to rg's own table for these names. */
static const struct file_type {
	const char *name;
	const char *glob;
	bool alias;
} file_types[] = {
	{ "c", "*.{c,h}", false },
	{ "cmake", "{CMakeLists.txt,*.cmake}", false },
	{ "cpp", "*.{C,cc,cpp,cxx,c++,h,H,hh,hpp,hxx,h++,inl,ipp,tpp,cppm,ixx}", false },
	{ "cs", "*.{cs,csx}", false },
	{ "csharp", "*.{cs,csx}", true },
	{ "css", "*.{css,scss,sass,less}", false },
	{ "dart", "*.dart", false },
	{ "docker", "{Dockerfile,Dockerfile.*,*.dockerfile,*.Dockerfile,Containerfile}", false },
	{ "elixir", "*.{ex,exs,eex,heex,leex}", false },
	{ "erlang", "*.{erl,hrl}", false },
	{ "go", "*.go", false },
	{ "haskell", "*.{hs,lhs}", false },
	{ "html", "*.{htm,html,xhtml,ejs}", false },
	{ "java", "*.{java,jsp,jspx,properties}", false },
	{ "js", "*.{js,jsx,mjs,cjs,vue}", false },
	{ "javascript", "*.{js,jsx,mjs,cjs,vue}", true },
	{ "json", "*.{json,jsonl,jsonc,geojson}", false },
	{ "kotlin", "*.{kt,kts}", false },
	{ "lua", "*.lua", false },
	{ "make", "{Makefile,makefile,GNUmakefile,*.mk,*.mak}", false },
	{ "md", "*.{md,markdown,mdx,mkd,mdown,mkdn,mdwn}", false },
	{ "markdown", "*.{md,markdown,mdx,mkd,mdown,mkdn,mdwn}", true },
	{ "meson", "{meson.build,meson_options.txt,meson.options}", false },
	{ "perl", "*.{pl,pm,t,pod}", false },
	{ "php", "*.{php,php3,php4,php5,phtml}", false },
	{ "proto", "*.proto", false },
	{ "py", "*.{py,pyi,pyw}", false },
	{ "python", "*.{py,pyi,pyw}", true },
	{ "r", "*.{R,r,Rmd,rmd}", false },
	{ "rb", "{*.rb,*.rake,*.gemspec,Gemfile,Rakefile}", false },
	{ "ruby", "{*.rb,*.rake,*.gemspec,Gemfile,Rakefile}", true },
	{ "rust", "*.rs", false },
	{ "scala", "*.{scala,sc,sbt}", false },
	{ "sh", "{*.sh,*.bash,*.zsh,*.ksh,*.csh,*.tcsh,*.fish,.bashrc,.bash_profile,.profile,"
	        ".zshrc,.zprofile}", false },
	{ "sql", "*.{sql,psql}", false },
	{ "swift", "*.swift", false },
	{ "toml", "{*.toml,Cargo.lock}", false },
	{ "ts", "*.{ts,tsx,mts,cts}", false },
	{ "typescript", "*.{ts,tsx,mts,cts}", true },
	{ "txt", "*.txt", false },
	{ "xml", "*.{xml,xsd,xsl,xslt,svg,plist}", false },
	{ "yaml", "*.{yaml,yml}", false },
};

typedef struct filter_glob {
	sbx_glob *glob;
	bool negate;
	bool anchored;   /* matched against the path below the search directory, not the name */
	bool dir_only;
} filter_glob;

struct sbx_grep_filter {
	filter_glob *v;
	size_t n, cap;
	size_t positives;
	bool positives_anchored;   /* every positive glob is anchored: directories can be pruned */
	sbx_glob *type;
};

static pthread_once_t names_once = PTHREAD_ONCE_INIT;
static char *names_list;

static void build_names(void)
{
	sbx_buf b = { 0 };

	for (size_t i = 0; i < SBX_ARRAY_SIZE(file_types); i++)
		if (!file_types[i].alias)
			sbx_buf_printf(&b, "%s%s", b.len ? ", " : "", file_types[i].name);
	names_list = sbx_buf_steal(&b, NULL);
}

const char *sbx_grep_type_names(void)
{
	pthread_once(&names_once, build_names);
	return names_list ? names_list : "(out of memory)";
}

void sbx_grep_filter_free(sbx_grep_filter *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->n; i++)
		sbx_glob_free(f->v[i].glob);
	free(f->v);
	sbx_glob_free(f->type);
	free(f);
}

/* Compiles one piece of the glob argument into f. */
static int add_glob(sbx_grep_filter *f, const char *piece, size_t len)
{
	_cleanup_free_ char *pat = NULL;
	filter_glob fg = { NULL, false, false, false };
	int r;

	if (len && piece[0] == '!') {
		fg.negate = true;
		piece++;
		len--;
	}
	if (len && piece[len - 1] == '/') {
		fg.dir_only = true;
		len--;
	}
	if (!len)
		return 0;
	fg.anchored = memchr(piece, '/', len) != NULL;
	while (len && piece[0] == '/') {
		piece++;
		len--;
	}
	/* A positive "dir/" means the files below the directories it names. */
	if (fg.dir_only && !fg.negate) {
		r = asprintf(&pat, "%s%.*s/**", fg.anchored ? "" : "**/", (int)len, piece);
		fg.anchored = true;
		fg.dir_only = false;
	} else {
		r = asprintf(&pat, "%.*s", (int)len, piece);
	}
	if (r < 0)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	r = sbx_glob_compile(pat, 0, &fg.glob);
	if (r < 0)
		return r;
	if (f->n == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 8;
		filter_glob *v = reallocarray(f->v, cap, sizeof *v);
		if (!v) {
			sbx_glob_free(fg.glob);
			return sbx_fail(-SBX_ENOMEM, "out of memory");
		}
		f->v = v;
		f->cap = cap;
	}
	f->v[f->n++] = fg;
	if (!fg.negate) {
		f->positives++;
		f->positives_anchored = f->positives_anchored && fg.anchored;
	}
	return 0;
}

/* One whitespace-separated word: split on commas unless it holds braces. */
static int add_word(sbx_grep_filter *f, const char *w, size_t len)
{
	const char *end = w + len;

	if (memchr(w, '{', len))
		return add_glob(f, w, len);
	while (w < end) {
		const char *comma = memchr(w, ',', (size_t)(end - w));
		const char *pe = comma ? comma : end;
		int r = add_glob(f, w, (size_t)(pe - w));
		if (r < 0)
			return r;
		w = comma ? comma + 1 : end;
	}
	return 0;
}

static int add_globs(sbx_grep_filter *f, const char *globs)
{
	const char *p = globs;

	while (*p) {
		while (*p && isspace((unsigned char)*p))
			p++;
		const char *w = p;
		while (*p && !isspace((unsigned char)*p))
			p++;
		if (p > w) {
			int r = add_word(f, w, (size_t)(p - w));
			if (r < 0)
				return r;
		}
	}
	return 0;
}

static int set_type(sbx_grep_filter *f, const char *type)
{
	for (size_t i = 0; i < SBX_ARRAY_SIZE(file_types); i++)
		if (strcmp(type, file_types[i].name) == 0)
			return sbx_glob_compile(file_types[i].glob, 0, &f->type);
	return sbx_fail(-SBX_EINVAL, "unknown file type '%s'. Known types: %s", type,
	                sbx_grep_type_names());
}

int sbx_grep_filter_new(const char *globs, const char *type, sbx_grep_filter **out)
{
	sbx_grep_filter *f = calloc(1, sizeof *f);
	int r = 0;

	*out = NULL;
	if (!f)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	f->positives_anchored = true;
	if (globs)
		r = add_globs(f, globs);
	if (r == 0 && type && *type)
		r = set_type(f, type);
	if (r < 0) {
		sbx_grep_filter_free(f);
		return r;
	}
	*out = f;
	return 0;
}

static bool glob_hits(const filter_glob *g, const char *sub, size_t len, const char *name,
                      bool is_dir)
{
	if (g->dir_only && !is_dir)
		return false;
	if (g->anchored)
		return sbx_glob_match(g->glob, sub, len);
	return sbx_glob_match(g->glob, name, strlen(name));
}

/* The last glob matching the entry, or NULL. */
static const filter_glob *last_hit(const sbx_grep_filter *f, const char *sub, size_t len,
                                   const char *name, bool is_dir)
{
	for (size_t i = f->n; i-- > 0;)
		if (glob_hits(&f->v[i], sub, len, name, is_dir))
			return &f->v[i];
	return NULL;
}

bool sbx_grep_filter_dir(const sbx_grep_filter *f, const char *sub, size_t len,
                         const char *name)
{
	const filter_glob *hit = last_hit(f, sub, len, name, true);

	if (hit)
		return !hit->negate;
	if (!f->positives || !f->positives_anchored)
		return true;
	for (size_t i = 0; i < f->n; i++)
		if (!f->v[i].negate && sbx_glob_may_match_below(f->v[i].glob, sub, len))
			return true;
	return false;
}

sbx_grep_pick sbx_grep_filter_file(const sbx_grep_filter *f, const char *sub, size_t len,
                                   const char *name)
{
	const filter_glob *hit = last_hit(f, sub, len, name, false);

	if (hit && hit->negate)
		return SBX_GREP_SKIP;
	if (!hit && f->positives)
		return SBX_GREP_SKIP;
	if (f->type && !sbx_glob_match(f->type, name, strlen(name)))
		return SBX_GREP_SKIP;
	return hit ? SBX_GREP_NAMED : SBX_GREP_SEARCH;
}
