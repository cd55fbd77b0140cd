/* A host that forks while another of its threads is inside the library (a worker pool
 * started beside a busy agent loop): the child must be able to use the library at once. A
 * process-wide mutex held by the other thread at the fork is, in the child, locked by a thread
 * that does not exist there, and the child's first call that takes it would wait forever.
 *
 * To fork at exactly that moment, this program interposes renameat and renameat2 (its own
 * definitions win over the C library's for the core archive it links): a thread that armed
 * itself stops in the rename its call makes while it holds the lock, until the test lets it
 * go on. The child, forked meanwhile, opens a workspace of its own and makes the same call,
 * which must return. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <agentsbx/agentsbx.h>
#include "support.h"

/* Generous: a child that is not stuck returns in milliseconds; a stuck one never does. */
#define CHILD_BOUND_MS 60000

/* ---- stopping a thread inside the library ----------------------------------------------- */

static __thread const char *stop_at;   /* the name of the rename this thread stops in */
static int stopped[2] = { -1, -1 }, resume[2] = { -1, -1 };

static void stop_if_armed(const char *name)
{
	char c = 's';

	if (!stop_at || strcmp(name, stop_at) != 0)
		return;
	stop_at = NULL;
	(void)!write(stopped[1], &c, 1);
	(void)!read(resume[0], &c, 1);
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

int renameat(int olddirfd, const char *oldpath, int newdirfd, const char *newpath)
{
	static int (*real)(int, const char *, int, const char *);

	if (!real)
		real = (int (*)(int, const char *, int, const char *))dlsym(RTLD_NEXT, "renameat");
	stop_if_armed(base_name(newpath));
	return real(olddirfd, oldpath, newdirfd, newpath);
}

int renameat2(int olddirfd, const char *oldpath, int newdirfd, const char *newpath,
              unsigned int flags)
{
	static int (*real)(int, const char *, int, const char *, unsigned int);

	if (!real)
		real = (int (*)(int, const char *, int, const char *, unsigned int))
		       dlsym(RTLD_NEXT, "renameat2");
	stop_if_armed(base_name(newpath));
	return real(olddirfd, oldpath, newdirfd, newpath, flags);
}

/* ---- the calls ------------------------------------------------------------------------- */

static sbx_workspace *open_local(char **dir)
{
	sbx_workspace *ws = NULL;
	char *cfg = NULL;

	*dir = test_mkdtemp();
	test_put_file(*dir, "f.txt", "hello\n", 0644);
	ck_assert_int_ge(asprintf(&cfg, "{\"backend\":\"local\",\"workdir\":\"%s\"}", *dir), 0);
	ck_assert_msg(sbx_workspace_open(cfg, &ws) == 0, "open: %s", sbx_last_error());
	free(cfg);
	return ws;
}

/* Read, whose tool session is saved under the sessions' process-wide lock. */
static int read_call(sbx_workspace *ws)
{
	char *out = NULL;
	int r = sbx_tool_call_session(ws, "s", "Read", "{\"file_path\":\"f.txt\"}", &out);

	if (r == 0 && !strstr(out, "hello"))
		r = -1;
	sbx_free(out);
	return r;
}

/* sbx_skill_add, which renames its staged folder into skills/ under the skills lock. */
static int add_skill_call(sbx_workspace *ws)
{
	char *src = test_mkdtemp(), *name = NULL;
	int r;

	test_put_file(src, "SKILL.md", "---\nname: forky\ndescription: a test skill\n---\nbody\n",
	              0644);
	r = sbx_skill_add(ws, src, &name);
	sbx_free(name);
	test_rm_rf(src);
	free(src);
	return r;
}

struct stopped_call {
	sbx_workspace *ws;
	int (*call)(sbx_workspace *);
	const char *stop_at;
	int result;
};

static void *run_stopped(void *p)
{
	struct stopped_call *c = p;

	stop_at = c->stop_at;
	c->result = c->call(c->ws);
	return NULL;
}

/* Waits at most CHILD_BOUND_MS for the child; kills it when it is stuck. */
static bool child_returned(pid_t child, int *status)
{
	struct timespec pause = { 0, 10 * 1000 * 1000 };

	for (int waited = 0; waited < CHILD_BOUND_MS; waited += 10) {
		pid_t r = waitpid(child, status, WNOHANG);
		if (r == child)
			return true;
		ck_assert_int_eq(r, 0);
		nanosleep(&pause, NULL);
	}
	kill(child, SIGKILL);
	waitpid(child, status, 0);
	return false;
}

/* One thread makes call and stops in the rename named stop_at, holding the lock; the
 * process forks; the child makes the same call on a workspace of its own. */
static void fork_during(int (*call)(sbx_workspace *), const char *rename_to, const char *what)
{
	char *dir = NULL, c;
	sbx_workspace *ws = open_local(&dir);
	struct stopped_call sc = { .ws = ws, .call = call, .stop_at = rename_to };
	pthread_t t;
	int status, verdict[2];

	ck_assert_int_eq(pipe2(stopped, O_CLOEXEC), 0);
	ck_assert_int_eq(pipe2(resume, O_CLOEXEC), 0);
	ck_assert_int_eq(pthread_create(&t, NULL, run_stopped, &sc), 0);
	ck_assert_int_eq(read(stopped[0], &c, 1), 1);
	/* The child says it succeeded through a pipe, not its exit status: under valgrind the
	 * child's exit reports what the stopped thread (absent there) had allocated as lost. */
	ck_assert_int_eq(pipe2(verdict, O_CLOEXEC), 0);
	pid_t child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		char *cdir = NULL;
		sbx_workspace *cws = open_local(&cdir);
		int r = call(cws);
		if (r == 0 && sbx_workspace_close(cws) == 0)
			(void)!write(verdict[1], "0", 1);
		_exit(0);
	}
	close(verdict[1]);
	bool returned = child_returned(child, &status);
	char said = 0;
	bool succeeded = read(verdict[0], &said, 1) == 1 && said == '0';
	close(verdict[0]);
	ck_assert_int_eq(write(resume[1], "r", 1), 1);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_msg(returned, "%s in a child forked while another thread held the lock did not "
	              "return within %d ms", what, CHILD_BOUND_MS);
	ck_assert_msg(succeeded, "%s in the child failed (status 0x%x)", what, (unsigned)status);
	ck_assert_msg(sc.result == 0, "%s in the parent: %d %s", what, sc.result, sbx_last_error());
	ck_assert_int_eq(sbx_workspace_close(ws), 0);
	for (int i = 0; i < 2; i++) {
		close(stopped[i]);
		close(resume[i]);
	}
	test_rm_rf(dir);
	free(dir);
}

START_TEST(test_a_child_saves_tool_sessions_while_its_parent_does)
{
	fork_during(read_call, "s.json", "a Read");
}
END_TEST

START_TEST(test_a_child_adds_skills_while_its_parent_does)
{
	fork_during(add_skill_call, "forky", "sbx_skill_add");
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("fork");
	TCase *tc = tcase_create("fork");

	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_a_child_saves_tool_sessions_while_its_parent_does);
	tcase_add_test(tc, test_a_child_adds_skills_while_its_parent_does);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run_suite(make_suite());
}
