/* The parked spare of this process (spare.h). One slot, under a lock: a spare is
 * worth its idle process only to a caller that keeps opening workspaces of one shape. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

#include "proto/init_proto.h"
#include "util/clock.h"
#include "util/fdpass.h"
#include "backends/common/launch.h"
#include "backends/sandbox/spare.h"

/* Opens further apart than this do not start spares; a spare parked longer than the maximum
 * age is not used (its /etc is a copy from when it started; and by SBX_INIT_PRESTART_IDLE_MS
 * it has ended by itself). */
#define SPARE_REPEAT_MS 10000
#define SPARE_MAX_AGE_MS 30000
#define SPARE_STOP_TIMEOUT_MS 2000
/* After a take found its spare not started yet, spares start at once for this long. */
#define SPARE_EAGER_MS 2000
#define SPARE_NONE { .pidfd = -1, .ctl = -1, .err_fd = -1 }

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct sbx_spare parked = SPARE_NONE;
static pid_t parked_owner;        /* the process that parked it: a forked child must not use it */
static long long parked_at_ms;
static char *last_shape;
static long long last_start_ms;

/* The spare to start next, its starter thread waiting on start_cond (sbx_spare_schedule). */
static pthread_cond_t start_cond = PTHREAD_COND_INITIALIZER;
static char *scheduled;
static sbx_spare_starter scheduled_start;
static pid_t schedule_owner;
static bool start_now;
static long long eager_until_ms;

/* A fork while another thread holds the lock would leave the child a lock nobody unlocks:
 * forks wait for it, and the child starts with it free. */
static void lock_for_fork(void)
{
	pthread_mutex_lock(&lock);
}

static void unlock_after_fork(void)
{
	pthread_mutex_unlock(&lock);
}

/* The child has no starter thread: none waits on the condition either. */
static void unlock_in_child(void)
{
	start_cond = (pthread_cond_t)PTHREAD_COND_INITIALIZER;
	pthread_mutex_unlock(&lock);
}

static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void watch_forks(void)
{
	pthread_atfork(lock_for_fork, unlock_after_fork, unlock_in_child);
}

/* Every user of the slot, not only the first schedule: a fork during the process's first
 * opens (take, wanted) must find the handlers in place. */
static void lock_slot(void)
{
	pthread_once(&fork_once, watch_forks);
	pthread_mutex_lock(&lock);
}

int sbx_spare_receive_outer(struct sbx_spare *s, int timeout_ms)
{
	struct pollfd pfd = { .fd = s->ctl, .events = POLLIN };
	struct sbx_init_spawn msg;
	size_t nfds = 0;
	int r;

	if (s->pidfd >= 0)
		return 0;
	if (poll(&pfd, 1, timeout_ms) <= 0)
		return -ETIMEDOUT;
	r = sbx_recv_with_fds(s->ctl, &msg, sizeof msg, &s->pidfd, 1, &nfds);
	if (r == 0 && (msg.kind != SBX_INIT_OUTER || nfds != 1)) {
		if (nfds)
			close(s->pidfd);
		r = -EPROTO;
	}
	if (r < 0)
		s->pidfd = -1;
	return r;
}

void sbx_spare_discard(struct sbx_spare *s)
{
	/* Its pidfd, to wait for the end (and reap it for a subreaper host). A spare parked a
	 * moment ago may not have sent it yet; the wait ends as soon as it does, or its end of the
	 * channel closes. */
	if (s->ctl >= 0)
		sbx_spare_receive_outer(s, SPARE_STOP_TIMEOUT_MS);
	if (s->ctl >= 0)
		close(s->ctl);
	if (s->err_fd >= 0)
		close(s->err_fd);
	sbx_pidfd_wait_or_kill(s->pidfd, SPARE_STOP_TIMEOUT_MS);
	free(s->shape);
	*s = (struct sbx_spare)SPARE_NONE;
}

/* After a fork the slot's fds are copies and the spare serves the parent: close the copies,
 * leave the process alone. */
static void forget_if_inherited(void)
{
	if (!parked.shape || parked_owner == getpid())
		return;
	/* Not discard: that would read the parent's spare's message off the shared channel. */
	if (parked.pidfd >= 0)
		close(parked.pidfd);
	close(parked.ctl);
	if (parked.err_fd >= 0)
		close(parked.err_fd);
	free(parked.shape);
	parked = (struct sbx_spare)SPARE_NONE;
}

/* Takes the parked spare out of the slot (caller holds the lock). */
static struct sbx_spare unpark(void)
{
	struct sbx_spare s = parked;

	parked = (struct sbx_spare)SPARE_NONE;
	return s;
}

/* A forked child has the parent's schedule but not its thread (caller holds the lock). */
static void forget_schedule_if_inherited(void)
{
	if (schedule_owner == getpid())
		return;
	free(scheduled);
	scheduled = NULL;
	start_now = false;
	schedule_owner = getpid();
}

/* A take while a spare of its shape waits to start: the caller opens faster than it closes
 * (caller holds the lock). */
static void note_take(const char *shape, long long now)
{
	forget_schedule_if_inherited();
	if (now < eager_until_ms || (scheduled && strcmp(scheduled, shape) == 0)) {
		eager_until_ms = now + SPARE_EAGER_MS;
		/* Only a waiting start is hurried; a later schedule sees the eager time itself. */
		if (scheduled) {
			start_now = true;
			pthread_cond_signal(&start_cond);
		}
	}
}

bool sbx_spare_take(const char *shape, struct sbx_spare *out)
{
	struct sbx_spare stale = SPARE_NONE;
	bool taken = false;

	lock_slot();
	forget_if_inherited();
	note_take(shape, sbx_now_ms());
	if (parked.shape && sbx_now_ms() - parked_at_ms > SPARE_MAX_AGE_MS)
		stale = unpark();
	else if (parked.shape && strcmp(parked.shape, shape) == 0) {
		*out = unpark();
		taken = true;
	}
	pthread_mutex_unlock(&lock);
	sbx_spare_discard(&stale);        /* outside the lock: it waits for a process */
	return taken;
}

bool sbx_spare_wanted(const char *shape)
{
	long long now = sbx_now_ms();
	bool wanted;

	lock_slot();
	forget_if_inherited();
	/* A spare of another shape gives way: the latest shape is the likeliest next. */
	wanted = !(parked.shape && strcmp(parked.shape, shape) == 0) && last_shape &&
	         strcmp(last_shape, shape) == 0 && now - last_start_ms < SPARE_REPEAT_MS;
	if (!last_shape || strcmp(last_shape, shape) != 0) {
		char *copy = strdup(shape);
		if (copy) {
			free(last_shape);
			last_shape = copy;
		}
	}
	last_start_ms = now;
	pthread_mutex_unlock(&lock);
	return wanted;
}

static void *starter_main(void *arg)
{
	struct timespec deadline;
	sbx_spare_starter start;
	char *shape;

	(void)arg;
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += SBX_SPARE_DELAY_MS / 1000;
	deadline.tv_nsec += (long)(SBX_SPARE_DELAY_MS % 1000) * 1000000;
	if (deadline.tv_nsec >= 1000000000) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&lock);
	while (scheduled && !start_now &&
	       pthread_cond_clockwait(&start_cond, &lock, CLOCK_MONOTONIC, &deadline) != ETIMEDOUT)
		;
	shape = scheduled;
	start = scheduled_start;
	scheduled = NULL;
	start_now = false;
	pthread_mutex_unlock(&lock);
	if (shape)
		start(shape);
	return NULL;
}

/* The starter runs with every signal blocked: the host's handlers stay on the host's threads. */
static bool create_starter(void)
{
	sigset_t all, saved;
	pthread_attr_t attr;
	pthread_t thread;
	int err;

	if (pthread_attr_init(&attr) != 0)
		return false;
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &saved);
	err = pthread_create(&thread, &attr, starter_main, NULL);
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
	pthread_attr_destroy(&attr);
	return err == 0;
}

void sbx_spare_schedule(char *shape, sbx_spare_starter start)
{
	bool have_thread;

	lock_slot();
	forget_schedule_if_inherited();
	/* One waits already: it starts the latest shape instead. */
	have_thread = scheduled != NULL;
	free(scheduled);
	scheduled = shape;
	scheduled_start = start;
	if (sbx_now_ms() < eager_until_ms) {
		start_now = true;
		pthread_cond_signal(&start_cond);
	}
	if (!have_thread && !create_starter()) {
		scheduled = NULL;
		free(shape);
	}
	pthread_mutex_unlock(&lock);
}

void sbx_spare_nudge(void)
{
	lock_slot();
	forget_schedule_if_inherited();
	if (scheduled) {
		start_now = true;
		pthread_cond_signal(&start_cond);
	}
	pthread_mutex_unlock(&lock);
}

void sbx_spare_park(struct sbx_spare *s)
{
	struct sbx_spare old;

	lock_slot();
	forget_if_inherited();
	old = unpark();
	parked = *s;
	parked_owner = getpid();
	parked_at_ms = sbx_now_ms();
	pthread_mutex_unlock(&lock);
	*s = (struct sbx_spare)SPARE_NONE;
	sbx_spare_discard(&old);
}
