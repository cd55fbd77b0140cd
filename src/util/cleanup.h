/* Scoped cleanup for memory and fds, so error paths are plain returns. */
#ifndef SBX_UTIL_CLEANUP_H
#define SBX_UTIL_CLEANUP_H

#include <stdlib.h>
#include <unistd.h>
#include <errno.h>

static inline void sbx_cleanup_free_(void *p) { free(*(void **)p); }
static inline void sbx_cleanup_close_(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}

#define _cleanup_free_  __attribute__((cleanup(sbx_cleanup_free_)))
#define _cleanup_close_ __attribute__((cleanup(sbx_cleanup_close_)))

/* Hands ownership out of a cleanup-scoped variable. */
#define SBX_TAKE_PTR(p) ({ __typeof__(p) take_ = (p); (p) = NULL; take_; })
#define SBX_TAKE_FD(fd) ({ int take_ = (fd); (fd) = -1; take_; })

#define SBX_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#endif
