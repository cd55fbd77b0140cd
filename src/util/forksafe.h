/* Process-wide mutexes that a forked child finds unlocked.
 *
 * A harness may fork (a worker pool, a test runner) while another of its threads is inside
 * the library holding a process-wide mutex: the child has a copy of the mutex, locked by a
 * thread it does not have, and its first call that needs it waits forever. The mutexes
 * declared here are made fresh in the child. Only for mutexes that keep no state of their
 * own consistent, i.e. that order work on files or guard a value a child may compute again:
 * what the holder was doing is the parent's business, and the child's own calls then run
 * beside it as another process's would. (Mutexes that guard in-memory state take theirs
 * around the fork instead: util/hostlock.c, util/idmap.c, backends/sandbox/spare.c,
 * gitguard_watch.c. Taking these around the fork too could deadlock it: a thread holding one
 * may wait for one of those.) */
#ifndef SBX_UTIL_FORKSAFE_H
#define SBX_UTIL_FORKSAFE_H

#include <pthread.h>

/* Defines `static pthread_mutex_t name`, reset to its initial state in every forked child
 * (a handler registered when the library is loaded). */
#define SBX_FORK_SAFE_MUTEX(name)                                                          \
	static pthread_mutex_t name = PTHREAD_MUTEX_INITIALIZER;                            \
	static void name##_in_child(void)                                                   \
	{                                                                                   \
		name = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;                          \
	}                                                                                   \
	__attribute__((constructor)) static void name##_watch_forks(void)                   \
	{                                                                                   \
		(void)pthread_atfork(NULL, NULL, name##_in_child);                          \
	}

#endif
