/* The seccomp baseline as data: one row per system call name, what Docker's default profile
 * does with it and what our filter does. The filter (seccomp.c) is built from these rows, the
 * tests walk them (tests/probe/sbx-probe.c, tests/unit/test_harden.c,
 * tests/integration/test_ns_security.c) and `agentsbx doctor` counts them. The rows are in
 * seccomp_table.c, with the commit of moby's profile they were derived from;
 * seccomp-table.py regenerates Docker's columns from a newer profile.
 *
 * No libseccomp types here: the probe and the tests include this header too. */
#ifndef SBX_INIT_SECCOMP_TABLE_H
#define SBX_INIT_SECCOMP_TABLE_H

#include <stdbool.h>
#include <stddef.h>

/* What Docker's profile says about a name, as the profile writes it. Whether that allows the
 * call in a container with Docker's default capabilities on this machine is
 * sbx_docker_verdict's business. */
enum sbx_docker_rule {
	SBX_DOCKER_ALLOW,       /* in the unconditional allow list */
	SBX_DOCKER_ARGS,        /* allowed with the argument values its rules list (socket,
	                           personality, clone); detail: capabilities that lift them */
	SBX_DOCKER_KERNEL,      /* allowed from kernel version detail on ("4.8") */
	SBX_DOCKER_ARCH,        /* allowed on the architectures in detail ("amd64 x32") only */
	SBX_DOCKER_CAPS,        /* allowed with one of the capabilities in detail only */
	SBX_DOCKER_ENOSYS,      /* answered ENOSYS unless a capability in detail (clone3) */
	SBX_DOCKER_UNLISTED,    /* not in the profile: its default action, EPERM */
};

/* What our filter does with a name, wherever the native architecture has it. */
enum sbx_our_rule {
	SBX_OURS_ALLOW,
	SBX_OURS_ARGS,          /* allowed with the arguments of its argument rule (seccomp.c) */
	SBX_OURS_REFUSE,        /* EPERM */
	SBX_OURS_ENOSYS,        /* ENOSYS: libc falls back to an older call */
	SBX_OURS_EXEMPT,        /* the kernel lets it past every seccomp filter (uprobe and
	                           uretprobe, on x86-64 since 6.11): allowed, as it would be
	                           anyway; it acts only from a uprobe's trampoline */
};

struct sbx_syscall_row {
	const char *name;             /* as the kernel and libseccomp name it */
	int nr;                       /* where libseccomp 2.5 may not know the name: its number
	                                 (the generic table's, which every architecture shares
	                                 from 424 on), else 0 */
	enum sbx_docker_rule docker;
	const char *docker_detail;    /* capabilities, architectures or kernel version; or NULL */
	enum sbx_our_rule ours;
};

/* Docker's verdict for a container with Docker's default capabilities, on the architecture
 * this is built for and the running kernel. */
enum sbx_docker_verdict {
	SBX_VERDICT_ALLOWS,
	SBX_VERDICT_ARGS,             /* allows some argument values */
	SBX_VERDICT_REFUSES,          /* EPERM */
	SBX_VERDICT_ENOSYS,
};

extern const struct sbx_syscall_row sbx_syscall_table[];
extern const size_t sbx_syscall_table_len;

/* The commit of moby's profile the Docker columns come from. */
extern const char sbx_docker_profile_source[];

/* The row for name, or NULL. */
const struct sbx_syscall_row *sbx_syscall_row_find(const char *name);

/* The row's system call number on the native architecture, or -1 when it has none there. */
int sbx_syscall_row_nr(const struct sbx_syscall_row *row);

enum sbx_docker_verdict sbx_docker_verdict(const struct sbx_syscall_row *row);

/* Whether cap ("CAP_SYS_CHROOT") is in Docker's default capability set. */
bool sbx_docker_default_cap(const char *cap, size_t len);

/* Docker's name of the architecture this is built for ("amd64", "arm64", ...). */
const char *sbx_docker_native_arch(void);

/* The highest native number of any row: numbers above it are newer than the table. */
int sbx_syscall_table_max_nr(void);

/* The argument rules of the rows marked SBX_OURS_ARGS, by name, for the tests and doctor
 * (seccomp.c holds the comparisons). docker: Docker's profile has this rule too (ours may be
 * stricter); otherwise Docker allows those arguments. */
struct sbx_arg_rule_info {
	const char *name;             /* "netlink-not-route", "personality", ... */
	const char *syscall;
	bool docker;
	const char *what;             /* what it refuses, in a few words */
};

extern const struct sbx_arg_rule_info sbx_arg_rules[];
extern const size_t sbx_arg_rules_len;

/* The counts `agentsbx doctor` prints, over the rows the native architecture has. */
struct sbx_seccomp_counts {
	int known;                    /* rows with a native number, exempt ones but */
	int exempt;                   /* rows the kernel lets past every filter */
	int refused;                  /* of those, refused by us (EPERM or ENOSYS) */
	int docker_refused;           /* refused by Docker's profile (default capabilities) */
	int docker_refused_here;      /* of those, refused by us too */
	int ours_only;                /* refused by us, allowed by Docker */
	int arg_rules;                /* our argument rules */
	int ours_arg_rules;           /* of those, the ones Docker's profile has not */
	int docker_arg_rules;         /* rows Docker allows only with some arguments */
	int docker_arg_rules_here;    /* of those, refused by us or held by an argument rule of
	                                 ours that has Docker's rule */
	int max_nr;                   /* numbers above it answer ENOSYS */
};

void sbx_seccomp_count(struct sbx_seccomp_counts *c);

/* The 32-bit tables the filter refuses whole on this architecture ("i386 and x32"), or NULL
 * when it has none (seccomp.c). */
const char *sbx_seccomp_compat_tables(void);

#endif
