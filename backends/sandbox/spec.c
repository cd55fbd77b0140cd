/* The spec the init reads (src/proto/init_proto.h): the sandbox described as JSON, the
 * users it runs as, and the seccomp program every sandbox of the process shares. */
#include <linux/seccomp.h>

#include "backends/sandbox/sandbox_int.h"
#include "backends/sandbox/seccomp_program.h"


/* The deny-list is the same for every sandbox: built at build time (seccomp_program.h),
 * written once per process into a sealed memfd, and handed to each direct-mode init (which
 * falls back to building it when there is none). Building it with libseccomp here cost about
 * a millisecond and libseccomp's mapping in every process. */
static pthread_once_t program_once = PTHREAD_ONCE_INIT;
static int program_fd = -1;

/* The variant this kernel loads as meant: with SECCOMP_RET_KILL_PROCESS where it has it
 * (what libseccomp's API level 3 stands for), else the one that kills the thread. */
static void embedded_program(const struct sock_filter **insns, size_t *len)
{
	uint32_t action = SECCOMP_RET_KILL_PROCESS;

	if (syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) == 0) {
		*insns = sbx_seccomp_program_kill_process;
		*len = sbx_seccomp_program_kill_process_len;
	} else {
		*insns = sbx_seccomp_program_kill_thread;
		*len = sbx_seccomp_program_kill_thread_len;
	}
}

static void build_seccomp_program(void)
{
	int fd = memfd_create("agentsbx-seccomp", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	const struct sock_filter *insns;
	size_t len;

	if (fd < 0)
		return;
	embedded_program(&insns, &len);
	if (pwrite(fd, insns, len * sizeof insns[0], 0) != (ssize_t)(len * sizeof insns[0]) ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		close(fd);
		return;
	}
	program_fd = fd;
}

int sbx_sandbox_seccomp_program(void)
{
	pthread_once(&program_once, build_seccomp_program);
	return program_fd;
}

/* ---- the spec the init reads --------------------------------------------------------- */

static void json_key_string(sbx_buf *b, const char *key, const char *value)
{
	sbx_buf_printf(b, "\"%s\":", key);
	sbx_buf_json_string(b, value, strlen(value));
	sbx_buf_puts(b, ",");
}

/* Where commands see the workspace: /workspace, or with workdir_mount "host" the workdir's own
 * host path. */
const char *sbx_sandbox_view_root(const struct sbx_sandbox_options *o, const char *workdir)
{
	return o->workdir_at_host && workdir ? workdir : SBX_SANDBOX_ROOT;
}

/* The part of path below dir ("a/b" for dir "/w" and path "/w/a/b"), or NULL. */
/* Under bubblewrap (0.8.0 cannot size a tmpfs), a capped /tmp or workspace needs the init
 * to enter a user and mount namespace of its own (helpers/init/quota.c), which
 * --disable-userns would forbid; its seccomp filter refuses every namespace after that. Only
 * a config that asks for a cap pays for it with bubblewrap's backstop: without one, /tmp is
 * bubblewrap's, uncapped, as it always was. */
bool sbx_sandbox_bwrap_caps_tmpfs(const struct sbx_sandbox *sb)
{
	return sbx_quota_asked(&sb->cfg);
}

/* Whether the init under bubblewrap needs a user and mount namespace of its own: for the
 * caps, and to mount the workspace at its host path (workdir_mount "host"), which bubblewrap
 * cannot do after the protected paths' binds: only the init can bind the protected
 * workspace there, with the git guard's later binds propagating to it. */
bool sbx_sandbox_bwrap_own_mounts(const struct sbx_sandbox *sb)
{
	return sbx_sandbox_bwrap_caps_tmpfs(sb) ||
	       strcmp(sbx_sandbox_view_root(sb->opts, sb->workdir), SBX_SANDBOX_ROOT);
}

/* ---- users (util/idmap.h) ------------------------------------------------------------- */

/* A bind the sandbox gets as a mount the library made, when it runs as a host range: one
 * from outside the workdir (those inside come with the idmapped workspace). The init, no
 * longer the host's root, could reach the source only as far as any user may. */
bool sbx_sandbox_bind_needs_tree(const struct sbx_sandbox *sb, size_t i)
{
	return sb->idmap.on && !sbx_path_below(sb->opts->binds[i].source, sb->workdir);
}

/* A bind from the state folder outside the workdir (the private HOME, MCP's run folder),
 * named relative to it for a spare, whose activation brings the source (init_proto.h): its
 * path below the folder, or NULL. Only as many as an activation carries; another stays a
 * bind of its path, and a spare of that spec serves that state folder only. */
const char *sbx_sandbox_bind_in_state(const struct sbx_sandbox *sb, size_t i)
{
	size_t room = SBX_INIT_ACTIVATE_FDS - 1 - (sb->idmap.on && sbx_quota_disk_bytes(&sb->cfg));
	size_t before = 0;

	if (!sb->state_dir || sbx_path_below(sb->opts->binds[i].source, sb->workdir))
		return NULL;
	for (size_t k = 0; k < i; k++)
		before += sbx_path_below(sb->opts->binds[k].source, sb->workdir) == NULL &&
		          sbx_path_below(sb->opts->binds[k].source, sb->state_dir) != NULL;
	if (before >= room)
		return NULL;
	return sbx_path_below(sb->opts->binds[i].source, sb->state_dir);
}

/* What a host process of ours looks like to the sandbox's init: a uid its namespace does
 * not map, which the kernel shows as the overflow uid. */
static unsigned overflow_uid(void)
{
	_cleanup_close_ int fd = open("/proc/sys/kernel/overflowuid", O_RDONLY | O_CLOEXEC);
	char text[16] = "";
	unsigned v = 65534;

	if (fd >= 0 && read(fd, text, sizeof text - 1) > 0)
		sscanf(text, "%u", &v);
	return v;
}

static void spec_users(sbx_buf *b, const struct sbx_sandbox *sb)
{
	if (!sb->idmap.on)
		return;
	sbx_buf_printf(b, "\"users\":{\"uid\":%u,\"gid\":%u,\"count\":%u},\"host_uid\":%u,",
	               sb->idmap.uid, sb->idmap.gid, sb->idmap.count, overflow_uid());
	if (sbx_quota_disk_bytes(&sb->cfg))
		sbx_buf_puts(b, "\"state_mount\":true,");
}

/* The init's spec. A pre-started init gets the same without the workspace id (it serves
 * any workspace of this shape, and the id only names a cgroup, which such a sandbox has not). */
char *sbx_sandbox_build_spec(const struct sbx_sandbox *sb, bool prestart)
{
	const struct sbx_sandbox_options *o = sb->opts;
	sbx_buf b = { 0 };
	int trees = 0;

	sbx_buf_puts(&b, prestart ? "{\"prestart\":true," : "{");
	json_key_string(&b, "id", prestart ? "prestarted" : sb->id);
	json_key_string(&b, "hostname", o->hostname);
	json_key_string(&b, "network", sb->network_mode);
	if (sb->proxy)
		sbx_buf_printf(&b, "\"proxy_port\":%d,", SBX_PROXY_PORT);
	if (o->rootfs)
		json_key_string(&b, "rootfs", o->rootfs);
	sbx_buf_puts(&b, "\"binds\":[");
	for (size_t i = 0; i < o->n_binds; i++) {
		const char *in_ws = sbx_path_below(o->binds[i].source, sb->workdir);
		const char *in_state = prestart ? sbx_sandbox_bind_in_state(sb, i) : NULL;

		sbx_buf_puts(&b, i ? ",{" : "{");
		/* Sources in the workspace are named relative to it: the init opens them beneath it,
		 * and a pre-started init can serve any workspace. The same for those in the state
		 * folder (the private HOME, MCP's run folder), which comes with the activation. */
		if (in_ws)
			json_key_string(&b, "workspace_source", in_ws);
		else if (in_state)
			json_key_string(&b, "state_source", in_state);
		else
			json_key_string(&b, "source", o->binds[i].source);
		json_key_string(&b, "dest", o->binds[i].dest);
		/* A spare's source from the state folder comes with its activation. */
		if (!in_state && sbx_sandbox_bind_needs_tree(sb, i))
			sbx_buf_printf(&b, "\"tree_fd\":%d,", SBX_INIT_FIRST_TREE_FD + trees++);
		sbx_buf_printf(&b, "\"writable\":%s}", o->binds[i].writable ? "true" : "false");
	}
	sbx_buf_puts(&b, "],");
	spec_users(&b, sb);
	/* Absent, the init guards its defaults. A temporary workdir's list is empty
	 * (sbx_sandbox_protected_list), a spare's too when it is started for one: the list is
	 * part of its shape, so it serves only temporary workdirs, and a spare with the defaults
	 * never serves one (which a keeper's spare, there before any open, would). */
	if (o->protected_paths || sb->cfg.workdir_is_temporary) {
		const char *const *list = sbx_sandbox_protected_list(sb);

		sbx_buf_puts(&b, "\"protected\":[");
		for (const char *const *p = list; *p; p++) {
			sbx_buf_puts(&b, p == list ? "" : ",");
			sbx_buf_json_string(&b, *p, strlen(*p));
		}
		sbx_buf_puts(&b, "],");
	}
	if (sb->cfg.read_only)
		sbx_buf_puts(&b, "\"workspace_readonly\":true,");
	/* The init mounts the workspace there too, and starts commands there (workdir_mount). */
	if (strcmp(sbx_sandbox_view_root(o, sb->workdir), SBX_SANDBOX_ROOT))
		json_key_string(&b, "workspace_view", sbx_sandbox_view_root(o, sb->workdir));
	if (o->detached && o->idle_ttl_ms > 0)
		sbx_buf_printf(&b, "\"idle_ttl_ms\":%lld,", (long long)o->idle_ttl_ms);
	/* As root, what the sandbox creates in the workdir is root's on the host (idmapped, or
	 * the host-root fallback): a set-id bit on it would be a root program for any host user. */
	if (geteuid() == 0)
		sbx_buf_puts(&b, "\"refuse_setid\":true,");
	if (sb->mode == SBX_SANDBOX_DIRECT || sbx_sandbox_bwrap_caps_tmpfs(sb))
		sbx_quota_spec_keys(&b, &sb->cfg);
	sbx_buf_printf(&b, "\"memory_bytes\":%llu,\"pids\":%llu,\"landlock\":%s,"
	               "\"seccomp_program\":%s}",
	               (unsigned long long)sb->cfg.limits.memory_bytes,
	               (unsigned long long)sb->cfg.limits.pids, o->landlock ? "true" : "false",
	               sb->mode == SBX_SANDBOX_DIRECT && sbx_sandbox_seccomp_program() >= 0
	               ? "true" : "false");
	if (b.oom) {
		sbx_buf_free(&b);
		return NULL;
	}
	return sbx_buf_steal(&b, NULL);
}
