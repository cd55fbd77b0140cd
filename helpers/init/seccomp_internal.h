/* Between the pieces of the seccomp filter: seccomp.c builds it from the table,
 * seccomp_args.c adds the argument rules, seccomp_bpf.c turns it into the program the kernel
 * loads. Not for other modules: sandbox.h has the filter's interface. */
#ifndef SBX_INIT_SECCOMP_INTERNAL_H
#define SBX_INIT_SECCOMP_INTERNAL_H

#include <seccomp.h>
#include <stddef.h>

/* The whole baseline in a libseccomp context: refused calls answer deny_errno. Release *out
 * with seccomp_release, also after a failure. */
int sbx_seccomp_build(int deny_errno, scmp_filter_ctx *out, char *err, size_t errlen);

/* Adds the rules that allow the call name (number nr) with safe arguments only. A row marked
 * SBX_OURS_ARGS without rules here is an error: it would be refused whole by accident. */
int sbx_seccomp_add_arg_rules(scmp_filter_ctx ctx, const char *name, int nr, char *err,
                              size_t errlen);

/* The set-id filter (seccomp_setid.c) in a libseccomp context; release *out as above. */
int sbx_seccomp_build_setid(scmp_filter_ctx *out, char *err, size_t errlen);

#endif
