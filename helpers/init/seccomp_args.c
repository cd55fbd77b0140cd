/* The argument rules of the seccomp baseline: for each call the table marks SBX_OURS_ARGS,
 * the argument values it is allowed with; any other value meets the filter's default answer
 * (EPERM). sbx_arg_rules in seccomp_table.c names them for the tests and doctor.
 *
 * An allow rule must compare what the kernel reads. Where the kernel truncates an argument
 * to int, a compare of all 64 bits would let a caller set high bits to slip past a rule the
 * low bits would fail (CVE-2019-10063 was that bypass of a TIOCSTI deny; a 64-bit "family <
 * 38" or "> 40" allow, the shape of Docker's socket rule, lets AF_ALG and AF_VSOCK through
 * with a high bit set). So socket's family and protocol and ioctl's request are compared on
 * their low 32 bits, mknod's mode on its S_IFMT bits (the kernel reads 16), clone's flags
 * under the namespace mask (the kernel reads the low 32). personality is compared whole, as
 * Docker does: high bits get EPERM, and glibc passes the low 32 only. */
#include <errno.h>
#include <linux/netlink.h>
#include <linux/sched.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "util/error.h"
#include "init/seccomp_internal.h"

#ifndef CLONE_NEWCGROUP
#define CLONE_NEWCGROUP 0x02000000
#endif
#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif

/* clone's flags are its first argument everywhere but s390, which swaps flags and stack. */
#if defined(__s390__) || defined(__s390x__)
#define CLONE_FLAGS_ARG 1
#else
#define CLONE_FLAGS_ARG 0
#endif

#define LOW32 0xFFFFFFFFull
#define CLONE_NAMESPACES (CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | \
                          CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET)
_Static_assert(CLONE_NAMESPACES == 0x7E020000, "Docker's clone mask");

struct rule_ctx {
	scmp_filter_ctx ctx;
	const char *name;
	int nr;
	char *err;
	size_t errlen;
};

/* Allow the call when all n comparisons hold. Exact: on an architecture where libseccomp
 * would multiplex socket through socketcall, a rule with arguments fails instead of becoming
 * an unconditional socketcall(SYS_SOCKET). */
static int allow_when(const struct rule_ctx *r, unsigned n, const struct scmp_arg_cmp *cmp)
{
	int rc = seccomp_rule_add_exact_array(r->ctx, SCMP_ACT_ALLOW, r->nr, n, cmp);

	if (rc < 0)
		return sbx_fail_buf(r->err, r->errlen, rc, "seccomp rule %s: %s", r->name,
		                    strerror(-rc));
	return 0;
}

static int allow_masked(const struct rule_ctx *r, unsigned arg, uint64_t mask, uint64_t value)
{
	const struct scmp_arg_cmp cmp = { arg, SCMP_CMP_MASKED_EQ, mask, value };

	return allow_when(r, 1, &cmp);
}

/* The families an agent's programs use; netlink for NETLINK_ROUTE only (ip, getaddrinfo):
 * the other netlink families (netfilter first) are the kernel's most exploited surface from a
 * user namespace, and the rest of the families have no use in a workspace. */
static int socket_rules(const struct rule_ctx *r)
{
	static const int families[] = { AF_UNIX, AF_INET, AF_INET6 };
	const struct scmp_arg_cmp netlink_route[] = {
		{ 0, SCMP_CMP_MASKED_EQ, LOW32, AF_NETLINK },
		{ 2, SCMP_CMP_MASKED_EQ, LOW32, NETLINK_ROUTE },
	};
	int rc;

	for (size_t i = 0; i < sizeof families / sizeof families[0]; i++)
		if ((rc = allow_masked(r, 0, LOW32, (uint64_t)families[i])) < 0)
			return rc;
	return allow_when(r, 2, netlink_route);
}

/* Docker's personas: PER_LINUX, PER_LINUX32, UNAME26 with each, and the query. Not
 * ADDR_NO_RANDOMIZE (ASLR off for every child) nor READ_IMPLIES_EXEC. */
static int personality_rules(const struct rule_ctx *r)
{
	static const uint64_t personas[] = { 0x0, 0x8, 0x20000, 0x20008, 0xffffffff };
	int rc;

	for (size_t i = 0; i < sizeof personas / sizeof personas[0]; i++) {
		const struct scmp_arg_cmp cmp = { 0, SCMP_CMP_EQ, personas[i], 0 };

		if ((rc = allow_when(r, 1, &cmp)) < 0)
			return rc;
	}
	return 0;
}

/* fork, threads and posix_spawn, but no new namespace (clone has no CLONE_NEWTIME: that bit
 * is part of its exit signal). */
static int clone_rules(const struct rule_ctx *r)
{
	return allow_masked(r, CLONE_FLAGS_ARG, CLONE_NAMESPACES, 0);
}

/* Regular files (S_IFMT 0 means one too), FIFOs and sockets; no device nodes. */
static int mknod_mode_rules(const struct rule_ctx *r, unsigned mode_arg)
{
	static const uint64_t types[] = { 0, S_IFREG, S_IFIFO, S_IFSOCK };
	int rc;

	for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
		if ((rc = allow_masked(r, mode_arg, S_IFMT, types[i])) < 0)
			return rc;
	return 0;
}

static int mknod_rules(const struct rule_ctx *r) { return mknod_mode_rules(r, 1); }
static int mknodat_rules(const struct rule_ctx *r) { return mknod_mode_rules(r, 2); }

/* Allows the call when the low 32 bits of argument arg are none of refused[0..n). libseccomp
 * has no masked "not equal": the complement is covered by masked equalities, one for each
 * bit prefix (the first len bits equal prefix) that no refused value has, splitting where
 * one does: at most 32 rules per refused value. */
static int allow_low32_except(const struct rule_ctx *r, unsigned arg, const uint32_t *refused,
                              size_t n, uint32_t prefix, unsigned len)
{
	uint32_t mask = len ? ~0u << (32 - len) : 0;
	bool hit = false;
	int rc;

	for (size_t i = 0; i < n && !hit; i++)
		hit = (refused[i] & mask) == prefix;
	if (!hit)
		return allow_masked(r, arg, mask, prefix);
	if (len == 32)
		return 0;       /* a refused value itself */
	if ((rc = allow_low32_except(r, arg, refused, n, prefix, len + 1)) < 0)
		return rc;
	return allow_low32_except(r, arg, refused, n, prefix | 1u << (31 - len), len + 1);
}

/* Every request but typing into the terminal (CVE-2017-5226) and the console's TIOCLINUX. */
static int ioctl_rules(const struct rule_ctx *r)
{
	static const uint32_t refused[] = { TIOCSTI, TIOCLINUX };

	return allow_low32_except(r, 1, refused, sizeof refused / sizeof refused[0], 0, 0);
}

static const struct {
	const char *name;
	int (*add)(const struct rule_ctx *r);
} builders[] = {
	{ "socket", socket_rules }, { "personality", personality_rules },
	{ "clone", clone_rules }, { "mknod", mknod_rules }, { "mknodat", mknodat_rules },
	{ "ioctl", ioctl_rules },
};

int sbx_seccomp_add_arg_rules(scmp_filter_ctx ctx, const char *name, int nr, char *err,
                              size_t errlen)
{
	const struct rule_ctx r = { ctx, name, nr, err, errlen };

	for (size_t i = 0; i < sizeof builders / sizeof builders[0]; i++)
		if (!strcmp(builders[i].name, name))
			return builders[i].add(&r);
	return sbx_fail_buf(err, errlen, -EINVAL, "seccomp: no argument rules for %s", name);
}
