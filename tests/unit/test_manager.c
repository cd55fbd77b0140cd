/* The workspace manager's core on the "local" backend: ids and policies, the explicit
 * override, refusals, the idle TTL on a fake clock, 50 threads, max_workspaces. (The sandbox
 * side, processes and cross-process races: tests/integration/test_manager.c.) */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <agentsbx/agentsbx.h>
#include "manager.h"
#include "manager_ids.h"
#include "support.h"

static char *base;

static void setup(void)
{
	base = test_mkdtemp();
}

static void teardown(void)
{
	test_rm_rf(base);
	free(base);
}

static sbx_manager *open_manager(const char *policy, const char *extra)
{
	char cfg[1024];
	sbx_manager *m = NULL;

	snprintf(cfg, sizeof cfg, "{\"workspace\":{\"backend\":\"local\"},\"base_dir\":\"%s\","
	         "\"policy\":\"%s\"%s%s}", base, policy, extra ? "," : "", extra ? extra : "");
	ck_assert_msg(sbx_manager_open(cfg, &m) == 0, "%s", sbx_last_error());
	return m;
}

/* The id a get returns (static buffer), released at once. */
static const char *id_of(sbx_manager *m, const char *user, const char *agent,
                         const char *session, const char *explicit_id)
{
	static char id[128];
	sbx_workspace *ws = NULL;
	int r = sbx_manager_get(m, user, agent, session, explicit_id, &ws);

	ck_assert_msg(r == 0, "%s", sbx_last_error());
	snprintf(id, sizeof id, "%s", sbx_workspace_id(ws));
	ck_assert_int_eq(sbx_manager_release(m, ws), 0);
	return id;
}

START_TEST(test_ids_are_stable_and_scoped)
{
	struct sbx_managed_id a, b;

	ck_assert_int_eq(sbx_managed_id_resolve(SBX_PER_AGENT, "alice", "coder", "s1", NULL, &a), 0);
	ck_assert_int_eq(sbx_managed_id_resolve(SBX_PER_AGENT, "alice", "coder", "s2", NULL, &b), 0);
	ck_assert_str_eq(a.id, b.id);                    /* the session does not matter */
	ck_assert(sbx_managed_id_valid(a.id));
	ck_assert_int_eq(strlen(a.id), SBX_USER_KEY_LEN + 1 + 2 + 24);
	/* A fixed value: the derivation must not change between releases (restarts reuse it). */
	ck_assert_str_eq(a.name, "a-d77ee045c3d227f47a5d3102");
	ck_assert_int_eq(sbx_managed_id_resolve(SBX_PER_AGENT, "bob", "coder", "s1", NULL, &b), 0);
	ck_assert_str_ne(a.id, b.id);
	ck_assert_str_ne(a.user_key, b.user_key);
	/* Length-prefixed parts: ("ab", "c") is not ("a", "bc"). */
	ck_assert_int_eq(sbx_managed_id_resolve(SBX_PER_AGENT, "ab", "c", NULL, NULL, &a), 0);
	ck_assert_int_eq(sbx_managed_id_resolve(SBX_PER_AGENT, "a", "bc", NULL, NULL, &b), 0);
	ck_assert_str_ne(a.name, b.name);
	/* per_user ignores the agent; per_session does not ignore the session. */
	ck_assert_int_eq(sbx_managed_id_resolve(SBX_PER_USER, "alice", "x", NULL, NULL, &a), 0);
	ck_assert_int_eq(sbx_managed_id_resolve(SBX_PER_USER, "alice", "y", NULL, NULL, &b), 0);
	ck_assert_str_eq(a.id, b.id);
	ck_assert_int_eq(a.name[0], 'u');
	ck_assert_int_eq(sbx_managed_id_resolve(SBX_PER_SESSION, "alice", "x", "1", NULL, &a), 0);
	ck_assert_int_eq(sbx_managed_id_resolve(SBX_PER_SESSION, "alice", "x", "2", NULL, &b), 0);
	ck_assert_str_ne(a.id, b.id);
	/* Odd characters are fine in ids: they are only hashed. */
	ck_assert_int_eq(sbx_managed_id_resolve(SBX_PER_AGENT, "../../etc", "a/b\n", NULL, NULL,
	                                        &a), 0);
	ck_assert(sbx_managed_id_valid(a.id));
}
END_TEST

START_TEST(test_empty_and_unsafe_ids_are_refused)
{
	struct sbx_managed_id a;

	/* Reference bug #2408: an empty id shared by every user. */
	ck_assert_int_eq(sbx_managed_id_resolve(SBX_PER_AGENT, "alice", "a", NULL, "", &a),
	                 -SBX_EINVAL);
	ck_assert_int_eq(sbx_managed_id_resolve(SBX_PER_AGENT, "", "a", NULL, NULL, &a),
	                 -SBX_EINVAL);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "user_id"));
	ck_assert_int_eq(sbx_managed_id_resolve(SBX_PER_AGENT, NULL, "a", NULL, NULL, &a),
	                 -SBX_EINVAL);
	ck_assert_int_eq(sbx_managed_id_resolve(SBX_PER_AGENT, "alice", "", NULL, NULL, &a),
	                 -SBX_EINVAL);
	ck_assert_int_eq(sbx_managed_id_resolve(SBX_PER_SESSION, "alice", "a", "", NULL, &a),
	                 -SBX_EINVAL);
	ck_assert_int_eq(sbx_managed_id_resolve(SBX_PER_SESSION, "alice", "a", NULL, NULL, &a),
	                 -SBX_EINVAL);
	static const char *const unsafe[] = { ".", "..", "../x", "a/b", ".hidden", "a b", "x\n",
		"0123456789012345678901234567890123456789012345678", NULL };
	for (const char *const *u = unsafe; *u; u++)
		ck_assert_msg(sbx_managed_id_resolve(SBX_PER_AGENT, "alice", "a", NULL, *u, &a) ==
		              -SBX_EINVAL, "accepted '%s'", *u);
	ck_assert(!sbx_managed_id_valid("0123456789abcdef-"));
	ck_assert(!sbx_managed_id_valid("0123456789abcdeg-x"));
	ck_assert(!sbx_managed_id_valid("0123456789abcdef-.."));
	ck_assert(sbx_managed_id_valid("0123456789abcdef-x"));
}
END_TEST

START_TEST(test_explicit_id_wins_within_the_user)
{
	sbx_manager *m = open_manager("per_session", NULL);
	char a1[128], a2[128], b1[128];

	snprintf(a1, sizeof a1, "%s", id_of(m, "alice", "coder", "s1", "team-42"));
	snprintf(a2, sizeof a2, "%s", id_of(m, "alice", "reviewer", "s9", "team-42"));
	snprintf(b1, sizeof b1, "%s", id_of(m, "bob", "coder", "s1", "team-42"));
	ck_assert_str_eq(a1, a2);           /* one workspace for alice's agents and sessions */
	ck_assert_str_ne(a1, b1);           /* never bob's */
	/* The full id handed out earlier names the same workspace. */
	ck_assert_str_eq(id_of(m, "alice", "x", "y", a1), a1);
	/* and a derived one too (a service persists it per session, as the reference does) */
	char d[128];
	snprintf(d, sizeof d, "%s", id_of(m, "alice", "coder", "s1", NULL));
	ck_assert_str_eq(id_of(m, "alice", "other", "s2", d + SBX_USER_KEY_LEN + 1), d);
	/* bob passing alice's full id gets a workspace in his own space, not hers. */
	const char *stolen = id_of(m, "bob", "c", "s", a1);
	ck_assert_str_ne(stolen, a1);
	ck_assert_int_eq(strncmp(stolen, b1, SBX_USER_KEY_LEN), 0);
	sbx_manager_free(m);
}
END_TEST

START_TEST(test_policies_and_directories)
{
	sbx_manager *m = open_manager("per_agent", NULL);
	sbx_workspace *a = NULL, *a2 = NULL, *b = NULL;

	ck_assert_int_eq(sbx_manager_get(m, "alice", "coder", "s1", NULL, &a), 0);
	ck_assert_int_eq(sbx_manager_get(m, "alice", "coder", "s2", NULL, &a2), 0);
	ck_assert_ptr_eq(a, a2);
	ck_assert_int_eq(sbx_manager_get(m, "bob", "coder", "s1", NULL, &b), 0);
	ck_assert_ptr_ne(a, b);
	/* Directories: <base>/<user key>/<name>, different for the two users. */
	const char *ra = sbx_workspace_root(a), *rb = sbx_workspace_root(b);
	ck_assert_int_eq(strncmp(ra, base, strlen(base)), 0);
	ck_assert_str_ne(ra, rb);
	ck_assert_int_eq(sbx_file_write(a, "mine", "alice", 5, 0, 0), 0);
	ck_assert_int_eq(sbx_file_stat(b, "mine", &(sbx_stat){ .size = sizeof(sbx_stat) }),
	                 -SBX_ENOENT);
	ck_assert_int_eq(test_mode_of(test_path_at(base, ".records")) & 0777, 0700);
	char *list = NULL;
	ck_assert_int_eq(sbx_manager_list(m, &list), 0);
	ck_assert_ptr_nonnull(strstr(list, "\"refs\":2"));
	ck_assert_ptr_nonnull(strstr(list, "\"policy\":\"per_agent\""));
	sbx_free(list);
	/* Held: close refuses. */
	ck_assert_int_eq(sbx_manager_close(m, sbx_workspace_id(a)), -SBX_EBUSY);
	ck_assert_int_eq(sbx_manager_release(m, a), 0);
	ck_assert_int_eq(sbx_manager_release(m, a2), 0);
	ck_assert_int_eq(sbx_manager_release(m, a), -SBX_EINVAL);   /* one release too many */
	ck_assert_int_eq(sbx_manager_release(m, b), 0);
	sbx_manager_free(m);

	/* per_user: the agents of one user share; restarts find the same directory. */
	m = open_manager("per_user", NULL);
	ck_assert_int_eq(sbx_manager_get(m, "alice", "coder", NULL, NULL, &a), 0);
	ck_assert_int_eq(sbx_manager_get(m, "alice", "writer", NULL, NULL, &a2), 0);
	ck_assert_ptr_eq(a, a2);
	sbx_manager_release(m, a);
	sbx_manager_release(m, a2);
	sbx_manager_free(m);
}
END_TEST

START_TEST(test_bad_configs)
{
	sbx_manager *m = NULL;
	char cfg[512];

	ck_assert_int_eq(sbx_manager_open("{\"policy\":\"per_team\"}", &m), -SBX_ECONFIG);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "policy"));
	snprintf(cfg, sizeof cfg, "{\"base_dir\":\"%s\",\"workspace\":{\"backend\":\"local\","
	         "\"workdir\":\"/tmp\"}}", base);
	ck_assert_int_eq(sbx_manager_open(cfg, &m), -SBX_ECONFIG);
	snprintf(cfg, sizeof cfg, "{\"base_dir\":\"%s\",\"workspace\":{\"backend\":\"local\","
	         "\"timeout_ms\":\"soon\"}}", base);
	ck_assert_int_eq(sbx_manager_open(cfg, &m), -SBX_ECONFIG);
	ck_assert_int_eq(sbx_manager_open("{\"base_dir\":\"relative\"}", &m), -SBX_ECONFIG);
	ck_assert_int_eq(sbx_manager_open("{\"ttl_s\":-1}", &m), -SBX_ECONFIG);
	ck_assert_ptr_null(m);
}
END_TEST

static _Atomic int64_t fake_now;

static int64_t fake_clock(void *unused)
{
	(void)unused;
	return atomic_load(&fake_now);
}

START_TEST(test_ttl_on_a_fake_clock)
{
	sbx_manager *m = open_manager("per_agent", "\"ttl_s\":60,\"sweep_interval_s\":0");
	sbx_workspace *ws = NULL, *held = NULL;
	int closed = -1;
	char id[128];

	atomic_store(&fake_now, 1000000);
	sbx_manager_set_clock_for_testing(m, fake_clock, NULL);
	ck_assert_int_eq(sbx_manager_get(m, "alice", "a", NULL, NULL, &ws), 0);
	ck_assert_int_eq(sbx_manager_get(m, "alice", "held", NULL, NULL, &held), 0);
	snprintf(id, sizeof id, "%s", sbx_workspace_id(ws));
	ck_assert_int_eq(sbx_manager_release(m, ws), 0);
	atomic_store(&fake_now, 1000000 + 59000);
	ck_assert_int_eq(sbx_manager_gc(m, &closed), 0);
	ck_assert_int_eq(closed, 0);
	/* A use through the workspace (not the manager) counts: run something, then wait
	 * almost a TTL again. */
	const char *argv[] = { "true", NULL };
	sbx_result *res = NULL;
	ck_assert_int_eq(sbx_manager_get(m, "alice", "a", NULL, NULL, &ws), 0);
	ck_assert_int_eq(sbx_manager_release(m, ws), 0);
	atomic_store(&fake_now, 1000000 + 100000);
	ck_assert_int_eq(sbx_exec(ws, argv, NULL, &res), 0);   /* handle still open: not expired */
	sbx_result_free(res);
	/* The exec is stamped on the real clock; a sweep carries it over to the manager's. */
	ck_assert_int_eq(sbx_manager_gc(m, &closed), 0);
	ck_assert_int_eq(closed, 0);
	atomic_store(&fake_now, 1000000 + 159000);
	ck_assert_int_eq(sbx_manager_gc(m, &closed), 0);
	ck_assert_int_eq(closed, 0);                             /* 59 s after the exec */
	atomic_store(&fake_now, 1000000 + 161000);
	ck_assert_int_eq(sbx_manager_gc(m, &closed), 0);
	ck_assert_int_eq(closed, 1);                             /* the held one stays */
	char *list = NULL;
	ck_assert_int_eq(sbx_manager_list(m, &list), 0);
	ck_assert_ptr_nonnull(strstr(list, sbx_workspace_id(held)));
	sbx_free(list);
	/* Reopened on the next get, with its files. */
	ck_assert_int_eq(sbx_manager_get(m, "alice", "a", NULL, NULL, &ws), 0);
	ck_assert_str_eq(sbx_workspace_id(ws), id);
	sbx_manager_release(m, ws);
	sbx_manager_release(m, held);
	sbx_manager_free(m);
}
END_TEST

START_TEST(test_max_workspaces)
{
	sbx_manager *m = open_manager("per_agent", "\"max_workspaces\":2");
	sbx_workspace *a = NULL, *b = NULL, *c = NULL;

	ck_assert_int_eq(sbx_manager_get(m, "u", "a", NULL, NULL, &a), 0);
	ck_assert_int_eq(sbx_manager_get(m, "u", "b", NULL, NULL, &b), 0);
	ck_assert_int_eq(sbx_manager_get(m, "u", "c", NULL, NULL, &c), -SBX_EBUSY);
	ck_assert_ptr_nonnull(strstr(sbx_last_error(), "max_workspaces (2)"));
	ck_assert_ptr_null(c);
	/* A workspace already open is no new one. */
	ck_assert_int_eq(sbx_manager_get(m, "u", "a", NULL, NULL, &c), 0);
	sbx_manager_release(m, c);
	sbx_manager_release(m, a);
	ck_assert_int_eq(sbx_manager_close(m, sbx_workspace_id(a)), 0);
	ck_assert_int_eq(sbx_manager_get(m, "u", "c", NULL, NULL, &c), 0);
	sbx_manager_release(m, b);
	sbx_manager_release(m, c);
	sbx_manager_free(m);
}
END_TEST

#define THREADS 50
#define ROUNDS 20

struct worker {
	sbx_manager *m;
	int n;
	int failures;
	const sbx_workspace *shared_seen;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	char agent[32];

	snprintf(agent, sizeof agent, "agent-%d", w->n % 10);   /* 10 workspaces, 5 threads each */
	for (int i = 0; i < ROUNDS; i++) {
		sbx_workspace *own = NULL, *shared = NULL;
		if (sbx_manager_get(w->m, "user", agent, NULL, NULL, &own) < 0 ||
		    sbx_manager_get(w->m, "user", "shared", NULL, NULL, &shared) < 0) {
			w->failures++;
			continue;
		}
		if (w->shared_seen && w->shared_seen != shared)
			w->failures++;
		w->shared_seen = shared;
		const char *argv[] = { "true", NULL };
		sbx_result *res = NULL;
		if (i % 5 == 0 && sbx_exec(own, argv, NULL, &res) < 0)
			w->failures++;
		sbx_result_free(res);
		if (sbx_manager_release(w->m, own) < 0 || sbx_manager_release(w->m, shared) < 0)
			w->failures++;
	}
	return NULL;
}

START_TEST(test_fifty_threads)
{
	sbx_manager *m = open_manager("per_agent", "\"sweep_interval_s\":0.01,\"ttl_s\":0.05");
	struct worker w[THREADS];
	pthread_t t[THREADS];
	char *list = NULL;

	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ .m = m, .n = i };
		ck_assert_int_eq(pthread_create(&t[i], NULL, worker_main, &w[i]), 0);
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		ck_assert_int_eq(w[i].failures, 0);
	}
	ck_assert_int_eq(sbx_manager_list(m, &list), 0);
	int n = 0;
	for (const char *p = list; (p = strstr(p, "\"id\":")); p++)
		n++;
	ck_assert_int_eq(n, 11);
	ck_assert_ptr_null(strstr(list, "\"refs\":1"));   /* every get released */
	sbx_free(list);
	sbx_manager_free(m);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("manager");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_ids_are_stable_and_scoped);
	tcase_add_test(tc, test_empty_and_unsafe_ids_are_refused);
	tcase_add_test(tc, test_explicit_id_wins_within_the_user);
	tcase_add_test(tc, test_policies_and_directories);
	tcase_add_test(tc, test_bad_configs);
	tcase_add_test(tc, test_ttl_on_a_fake_clock);
	tcase_add_test(tc, test_max_workspaces);
	tcase_add_test(tc, test_fifty_threads);
	suite_add_tcase(s, tc);
	return test_run_suite(s);
}
