/* The sandbox's network in mode "none": a new network namespace holds only a loopback
 * interface, and it starts down. Bringing it up is all it takes: the kernel itself gives lo
 * 127.0.0.1/8 (and ::1 where IPv6 is on) when it goes up, so no RTM_NEWADDR is needed.
 * The link change goes through libnl-route-3, the netlink library the design uses for every
 * interface operation (veth and addresses come later with the allowlist mode). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <netlink/errno.h>
#include <netlink/netlink.h>
#include <netlink/route/link.h>
#include <netlink/socket.h>
#include <linux/if.h>

#include "util/error.h"
#include "init/sandbox.h"

/* libnl answers with its own codes; the init speaks errno. */
static int errno_of_nlerr(int nlerr)
{
	switch (abs(nlerr)) {
	case NLE_PERM:
		return -EPERM;
	case NLE_NOACCESS:
		return -EACCES;
	case NLE_NOMEM:
		return -ENOMEM;
	case NLE_NODEV:
	case NLE_OBJ_NOTFOUND:
		return -ENODEV;
	case NLE_OPNOTSUPP:
		return -EOPNOTSUPP;
	case NLE_AF_NOSUPPORT:
		return -EAFNOSUPPORT;
	default:
		return -EIO;
	}
}

static int nl_fail(char *err, size_t errlen, int nlerr, const char *step)
{
	return sbx_fail_buf(err, errlen, errno_of_nlerr(nlerr), "loopback: %s: %s", step,
	                    nl_geterror(nlerr));
}

static int set_link_up(struct nl_sock *sk, char *err, size_t errlen)
{
	struct rtnl_link *lo = NULL, *change = NULL;
	int r = rtnl_link_get_kernel(sk, 0, "lo", &lo);

	if (r < 0)
		return nl_fail(err, errlen, r, "get link lo");
	change = rtnl_link_alloc();
	if (!change) {
		rtnl_link_put(lo);
		return sbx_fail_buf(err, errlen, -ENOMEM, "loopback: out of memory");
	}
	rtnl_link_set_flags(change, IFF_UP);
	r = rtnl_link_change(sk, lo, change, 0);
	rtnl_link_put(change);
	rtnl_link_put(lo);
	if (r < 0)
		return nl_fail(err, errlen, r, "set lo up");
	return 0;
}

int sbx_net_loopback_up(char *err, size_t errlen)
{
	struct nl_sock *sk = nl_socket_alloc();
	int r;

	if (!sk)
		return sbx_fail_buf(err, errlen, -ENOMEM, "loopback: out of memory");
	/* libnl opens its socket with SOCK_CLOEXEC, so it cannot leak into commands. */
	r = nl_connect(sk, NETLINK_ROUTE);
	if (r < 0)
		r = nl_fail(err, errlen, r, "connect to rtnetlink");
	else
		r = set_link_up(sk, err, errlen);
	nl_socket_free(sk);
	return r;
}
