/* The tidier: what a sandbox leaves on the host must go when the sandbox ends, however it
 * ends — closed by its host, its host killed, stopped at its idle TTL. Nothing inside the
 * sandbox can do that (its processes are gone by then, and the outer process lives in the
 * sandbox's user and mount namespaces, where the placeholders are mount points and the
 * host's cgroup tree is out of reach). So in direct mode the first process splits before it
 * enters any namespace: the parent stays outside, in the host's namespaces and cgroup, and
 * only waits; the child becomes the outer process. Once the child has ended (and with it the
 * init and every process of the sandbox), the parent removes the workspace's cgroup (if the
 * child said it made one) and the placeholders its note lists (util/journal.h), then exits
 * with the child's status. In bubblewrap mode the outer process is outside bubblewrap's
 * namespaces anyway and tidies itself after bwrap ends.
 *
 * The host's handle on the sandbox (its child, READY's init_pid for a detached one) is the
 * tidier: a host that waits for it knows that everything is gone once the wait returns. A
 * sandbox with nothing to tidy (no placeholders noted, no cgroup: a pre-started spare always)
 * has no tidier, and the outer process is the handle, as before. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "proto/init_proto.h"
#include "sandbox.h"
#include "tidy.h"
#include "util/journal.h"

#define CGROUP_MADE 'C'

static int exit_status_of(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

void sbx_tidy_remove(int root_fd, const char *note)
{
	if (root_fd >= 0 && note)
		sbx_journal_undo(root_fd, SBX_JOURNAL_WORKSPACE, note);
}

/* The parent's side: holds nothing of the sandbox's (its channel must close when the init
 * ends, not when the tidier does), waits, tidies, mirrors the end. */
static _Noreturn void tidy_after(pid_t outer, int report, const char *note, const char *id)
{
	int root = fcntl(SBX_INIT_WORKSPACE_FD, F_DUPFD_CLOEXEC, 16), status = 0, devnull;
	char made = 0;

	close(SBX_INIT_CONTROL_FD);
	close(SBX_INIT_WORKSPACE_FD);
	close(SBX_INIT_SECCOMP_FD);
	close(SBX_INIT_BRIDGE_FD);
	/* Nor the host's stderr pipe: nothing is said from here. */
	if ((devnull = open("/dev/null", O_WRONLY | O_CLOEXEC)) >= 0) {
		dup2(devnull, STDERR_FILENO);
		close(devnull);
	}
	signal(SIGPIPE, SIG_IGN);
	while (waitpid(outer, &status, 0) < 0)
		if (errno != EINTR)
			break;
	if (read(report, &made, 1) == 1 && made == CGROUP_MADE)
		sbx_cgroup_cleanup(id);
	sbx_tidy_remove(root, note);
	_exit(exit_status_of(status));
}

int sbx_tidy_split(const char *note, const char *id, struct sbx_tidy *t)
{
	int p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	t->tidier = getpid();
	pid = fork();
	if (pid < 0) {
		int e = errno;
		close(p[0]);
		close(p[1]);
		return -e;
	}
	if (pid > 0) {
		close(p[1]);
		tidy_after(pid, p[0], note, id);
	}
	close(p[0]);
	t->report = p[1];
	return 0;
}

void sbx_tidy_report_cgroup(struct sbx_tidy *t)
{
	const char made = CGROUP_MADE;

	if (t->report >= 0 && write(t->report, &made, 1) != 1) {
		/* the tidier is gone: nobody to tell */
	}
}

void sbx_tidy_done_reporting(struct sbx_tidy *t)
{
	if (t->report >= 0)
		close(t->report);
	t->report = -1;
}
