/* Scoped cleanup for memory and fds, so error paths are plain returns. */
#ifndef SBX_UTIL_CLEANUP_H
#define SBX_UTIL_CLEANUP_H

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* The owners' frees (util/buf.h, util/json.h, internal.h), declared again here so that a file
 * using a cleanup need not include every module whose resource some other cleanup names. */
struct sbx_buf;
struct sbx_json;
void sbx_buf_free(struct sbx_buf *b);
void sbx_json_free(struct sbx_json *v);
void sbx_strv_free(char **v);

static inline void sbx_cleanup_free_(void *p) { free(*(void **)p); }
static inline void sbx_cleanup_close_(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}

/* Each closer keeps errno: an error path returns the errno of what failed, not the close's. */
static inline void sbx_cleanup_fclose_(FILE **f)
{
	if (*f) {
		int saved = errno;
		fclose(*f);
		errno = saved;
	}
}
static inline void sbx_cleanup_closedir_(DIR **d)
{
	if (*d) {
		int saved = errno;
		closedir(*d);
		errno = saved;
	}
}
/* A buffer on the stack (sbx_buf b = {0}): its content goes, the struct stays. */
static inline void sbx_cleanup_buf_(struct sbx_buf *b) { sbx_buf_free(b); }
static inline void sbx_cleanup_json_(struct sbx_json **v) { sbx_json_free(*v); }
static inline void sbx_cleanup_strv_(char ***v) { sbx_strv_free(*v); }

#define _cleanup_free_     __attribute__((cleanup(sbx_cleanup_free_)))
#define _cleanup_close_    __attribute__((cleanup(sbx_cleanup_close_)))
#define _cleanup_fclose_   __attribute__((cleanup(sbx_cleanup_fclose_)))
#define _cleanup_closedir_ __attribute__((cleanup(sbx_cleanup_closedir_)))
#define _cleanup_buf_      __attribute__((cleanup(sbx_cleanup_buf_)))
#define _cleanup_json_     __attribute__((cleanup(sbx_cleanup_json_)))
#define _cleanup_strv_     __attribute__((cleanup(sbx_cleanup_strv_)))

/* Hands ownership out of a cleanup-scoped variable. */
#define SBX_TAKE_PTR(p) ({ __typeof__(p) take_ = (p); (p) = NULL; take_; })
#define SBX_TAKE_FD(fd) ({ int take_ = (fd); (fd) = -1; take_; })

#define SBX_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#endif
