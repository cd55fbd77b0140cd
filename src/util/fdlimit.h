/* Whether this process has the file descriptors a step needs (RLIMIT_NOFILE).
 *
 * Starting a sandbox takes descriptors in this process (socket pairs, pipes, memfds, bind
 * fds) and in the sandbox's init, which inherits the limit (it pins every /etc entry and
 * protected path it binds). Run out halfway and the failure surfaced as "no way to build a
 * sandbox on this host"; asked first, it is a sentence that says what is short. */
#ifndef SBX_UTIL_FDLIMIT_H
#define SBX_UTIL_FDLIMIT_H

/* 0 when at least need_free descriptors are free here and the soft limit is at least
 * need_limit (for a child that inherits it); else -SBX_EIO with "<who>: too many open files
 * to <step>: ..." naming the numbers. When /proc cannot be read, only the limit is checked. */
int sbx_fd_headroom(const char *who, const char *step, int need_free, int need_limit);

#endif
