/* The sandbox's seccomp program, generated at build time (helpers/seccomp_gen.c) with the
 * init's own builder, so that the host side needs no libseccomp: one variant for kernels
 * with SECCOMP_RET_KILL_PROCESS (4.14 and later), one that kills the thread instead. The unit
 * test seccomp_program builds both again with libseccomp and compares. */
#ifndef SBX_SANDBOX_SECCOMP_PROGRAM_H
#define SBX_SANDBOX_SECCOMP_PROGRAM_H

#include <linux/filter.h>
#include <stddef.h>

extern const struct sock_filter sbx_seccomp_program_kill_process[];
extern const size_t sbx_seccomp_program_kill_process_len;
extern const struct sock_filter sbx_seccomp_program_kill_thread[];
extern const size_t sbx_seccomp_program_kill_thread_len;

#endif
