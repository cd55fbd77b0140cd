/* The resolver's worker threads (resolver.h). The threads are never joined: the proxy exits
 * with them blocked in getaddrinfo, which is harmless. */
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include "resolver.h"

struct job {
	struct job *next;
	struct sbx_resolution res;
	char name[SBX_NET_NAME_MAX + 1];
};

struct sbx_resolver {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct job *queue, **queue_tail;
	struct job *done, **done_tail;
	size_t pending, max_pending;
	int event_fd;
};

static void lookup(struct job *j)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct addrinfo *list = NULL;

	j->res.error = getaddrinfo(j->name, NULL, &hints, &list);
	for (struct addrinfo *a = list; a && j->res.n < SBX_RESOLVE_MAX_ADDRS; a = a->ai_next) {
		struct sbx_netaddr addr;
		bool seen = false;

		if (sbx_netaddr_from_sockaddr(a->ai_addr, &addr) < 0)
			continue;
		for (size_t i = 0; i < j->res.n; i++)
			seen = seen || !memcmp(&j->res.addrs[i], &addr, sizeof addr);
		if (!seen)
			j->res.addrs[j->res.n++] = addr;
	}
	if (list)
		freeaddrinfo(list);
	if (j->res.error == 0 && j->res.n == 0)
		j->res.error = EAI_NONAME;
}

static void *worker(void *arg)
{
	struct sbx_resolver *r = arg;
	const uint64_t one = 1;

	for (;;) {
		struct job *j;

		pthread_mutex_lock(&r->lock);
		while (!r->queue)
			pthread_cond_wait(&r->wake, &r->lock);
		j = r->queue;
		r->queue = j->next;
		if (!r->queue)
			r->queue_tail = &r->queue;
		pthread_mutex_unlock(&r->lock);

		lookup(j);

		pthread_mutex_lock(&r->lock);
		j->next = NULL;
		*r->done_tail = j;
		r->done_tail = &j->next;
		pthread_mutex_unlock(&r->lock);
		if (write(r->event_fd, &one, sizeof one) < 0) {
			/* the counter cannot overflow at our rates; nothing else can fail */
		}
	}
	return NULL;
}

int sbx_resolver_start(int nthreads, size_t max_pending, struct sbx_resolver **out,
                       int *event_fd)
{
	struct sbx_resolver *r = calloc(1, sizeof *r);
	sigset_t all, saved;
	pthread_attr_t attr;
	int err = 0;

	if (!r)
		return -ENOMEM;
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->wake, NULL);
	r->queue_tail = &r->queue;
	r->done_tail = &r->done;
	r->max_pending = max_pending;
	r->event_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (r->event_fd < 0)
		return -errno;
	/* The workers take no signals: the loop's thread handles what there is. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &saved);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 << 10);
	for (int i = 0; i < nthreads && !err; i++) {
		pthread_t t;
		err = pthread_create(&t, &attr, worker, r);
	}
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
	if (err)
		return -err;
	*out = r;
	*event_fd = r->event_fd;
	return 0;
}

int sbx_resolver_submit(struct sbx_resolver *r, uint32_t slot, uint64_t gen, const char *name)
{
	struct job *j;

	pthread_mutex_lock(&r->lock);
	if (r->pending >= r->max_pending) {
		pthread_mutex_unlock(&r->lock);
		return -1;
	}
	r->pending++;
	pthread_mutex_unlock(&r->lock);
	if (!(j = calloc(1, sizeof *j))) {
		pthread_mutex_lock(&r->lock);
		r->pending--;
		pthread_mutex_unlock(&r->lock);
		return -1;
	}
	j->res.slot = slot;
	j->res.gen = gen;
	strncpy(j->name, name, sizeof j->name - 1);
	pthread_mutex_lock(&r->lock);
	*r->queue_tail = j;
	r->queue_tail = &j->next;
	pthread_cond_signal(&r->wake);
	pthread_mutex_unlock(&r->lock);
	return 0;
}

size_t sbx_resolver_collect(struct sbx_resolver *r, struct sbx_resolution *out, size_t max)
{
	uint64_t count;
	size_t n = 0;

	if (read(r->event_fd, &count, sizeof count) < 0 && errno != EAGAIN)
		return 0;
	pthread_mutex_lock(&r->lock);
	while (r->done && n < max) {
		struct job *j = r->done;

		r->done = j->next;
		if (!r->done)
			r->done_tail = &r->done;
		out[n++] = j->res;
		r->pending--;
		free(j);
	}
	/* More than max were waiting: wake the loop again for the rest. */
	if (r->done) {
		const uint64_t one = 1;
		if (write(r->event_fd, &one, sizeof one) < 0) {
			/* see worker() */
		}
	}
	pthread_mutex_unlock(&r->lock);
	return n;
}
