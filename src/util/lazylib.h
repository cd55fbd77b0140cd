/* Libraries loaded on first use.
 *
 * Most users of the library never open a docker workspace, install a skill or reach a remote
 * MCP server, yet every process start paid the loader for libcurl's, libarchive's, libyaml's
 * and libcrypto's trees (about 40 shared objects). Their users resolve them here instead: a
 * table of the functions a module calls, filled by dlopen of the library's SONAME the first
 * time the module needs it. Every symbol resolves or none does; a library that cannot be
 * loaded is an ordinary error naming it and what needs it, never an abort.
 *
 * A module lists its functions once in an X-macro and gets a struct of typed pointers (the
 * types come from the library's own header, through __typeof__), so a call reads
 * `api->curl_easy_init()`:
 *
 *	#define CURL_FUNCS(X) X(curl_easy_init) X(curl_easy_cleanup)
 *	SBX_LAZY_API(curl_api, CURL_FUNCS);
 *	static struct sbx_lazylib curl_lib =
 *		SBX_LAZYLIB("libcurl.so.4", "the docker backend and remote MCP servers", curl_api);
 *	...
 *	const struct curl_api *api = sbx_lazylib_load(&curl_lib);  // NULL: failed, message set
 */
#ifndef SBX_UTIL_LAZYLIB_H
#define SBX_UTIL_LAZYLIB_H

#include <stddef.h>

#include <agentsbx/common.h>

struct sbx_lazylib {
	const char *soname;
	const char *needed_by; /* what fails without it, for the message */
	const char *const *names; /* the functions, in the order of the api struct's pointers */
	size_t count;
	void *api;   /* the module's struct of pointers (count of them), filled all at once */
	int state;   /* 0 not tried, 1 loaded, -1 failed (why says why); read atomically */
	char why[400];
};

#define SBX_LAZY_PTR_(f) __typeof__(f) *f;
#define SBX_LAZY_NAME_(f) #f,
/* `struct name` with one typed pointer per function of LIST. */
#define SBX_LAZY_STRUCT(name, LIST) struct name { LIST(SBX_LAZY_PTR_) }
/* The storage `name##_slots` (of linkage `storage`: static, or empty for a table that more
 * than one file uses) and the list of names, in the order of the pointers. */
#define SBX_LAZY_TABLE(storage, name, LIST)                                                \
	storage struct name name##_slots;                                                  \
	static const char *const name##_names[] = { LIST(SBX_LAZY_NAME_) };                \
	_Static_assert(sizeof(struct name) == sizeof name##_names / sizeof(char *) *       \
	               sizeof(void (*)(void)), "one pointer per name, no padding")
/* Both, for a table private to one file. */
#define SBX_LAZY_API(name, LIST) SBX_LAZY_STRUCT(name, LIST); SBX_LAZY_TABLE(static, name, LIST)

#define SBX_LAZYLIB(so, users, name)                                                       \
	{ .soname = (so), .needed_by = (users), .names = name##_names,                     \
	  .count = sizeof name##_names / sizeof name##_names[0], .api = &name##_slots }

/* Loads lib once (thread-safe; a failure is remembered, so later calls fail the same way at
 * no cost). Returns lib->api, or NULL with the thread's message set to "<soname> could not
 * be loaded, which <needed_by> need: <dlerror>"; the caller returns SBX_LAZYLIB_ERR. */
const void *sbx_lazylib_load(struct sbx_lazylib *lib);

/* The code of a library that cannot be loaded: the host does not support the feature. */
#define SBX_LAZYLIB_ERR (-SBX_ENOSYS)

#endif
