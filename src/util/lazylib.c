/* See lazylib.h. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include <agentsbx/agentsbx.h>
#include "error.h"
#include "forksafe.h"
#include "lazylib.h"

/* One lock for every table: loads are rare (once per library and process) and a load that
 * waits for another library's costs nothing that matters. A forked child may load again. */
SBX_FORK_SAFE_MUTEX(lazy_lock)

static void note_failure(struct sbx_lazylib *lib, const char *what)
{
	snprintf(lib->why, sizeof lib->why, "%s could not be loaded, which %s need: %s",
	         lib->soname, lib->needed_by, what ? what : "unknown reason");
}

/* dlopen and resolve every name; all of them or nothing (the handle is closed again, the
 * pointers stay NULL). */
static int open_and_resolve(struct sbx_lazylib *lib)
{
	/* RTLD_LOCAL: the library's symbols serve only this table, not the host's own lookups. */
	void *h = dlopen(lib->soname, RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		note_failure(lib, dlerror());
		return -1;
	}
	char *slots = lib->api;
	for (size_t i = 0; i < lib->count; i++) {
		void *sym = dlsym(h, lib->names[i]);
		if (!sym) {
			char what[200];
			snprintf(what, sizeof what, "it has no %s", lib->names[i]);
			note_failure(lib, what);
			memset(lib->api, 0, lib->count * sizeof(void (*)(void)));
			dlclose(h);
			return -1;
		}
		/* POSIX guarantees a data pointer from dlsym converts to the function's. */
		memcpy(slots + i * sizeof(void (*)(void)), &sym, sizeof sym);
	}
	return 1; /* the handle stays open for the life of the process */
}

const void *sbx_lazylib_load(struct sbx_lazylib *lib)
{
	int state = __atomic_load_n(&lib->state, __ATOMIC_ACQUIRE);

	if (state == 0) {
		pthread_mutex_lock(&lazy_lock);
		state = lib->state;
		if (state == 0) {
			state = open_and_resolve(lib);
			__atomic_store_n(&lib->state, state, __ATOMIC_RELEASE);
		}
		pthread_mutex_unlock(&lazy_lock);
	}
	if (state < 0) {
		sbx_fail(SBX_LAZYLIB_ERR, "%s", lib->why);
		return NULL;
	}
	return lib->api;
}
