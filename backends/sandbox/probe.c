/* What a sandbox got, and whether this host can build one (probed once per process). */
#include "backends/sandbox/sandbox_int.h"


uint32_t sbx_sandbox_flags(const struct sbx_sandbox *sb)
{
	return sb->flags;
}

const char *sbx_sandbox_cgroup_note(const struct sbx_sandbox *sb)
{
	return sb->cgroup_note;
}

enum sbx_sandbox_mode sbx_sandbox_mode_of(const struct sbx_sandbox *sb)
{
	return sb->mode;
}

/* The probe's scratch workspace is not empty after the sandbox ran on it: the protected
 * directories (and, in direct mode, placeholder files) were made in it. */
static void remove_probe_dir(const char *dir)
{
	_cleanup_free_ char *parent = strdup(dir);
	char *slash = parent ? strrchr(parent, '/') : NULL;
	_cleanup_close_ int dirfd = -1;

	if (!slash)
		return;
	*slash = '\0';
	dirfd = open(*parent ? parent : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd >= 0)
		sbx_fs_remove_tree(dirfd, slash + 1);
}

static void describe_mode(enum sbx_sandbox_mode mode, const struct sbx_sandbox *sb,
                          char *detail, size_t len)
{
	snprintf(detail, len, "%s%s", mode == SBX_SANDBOX_BWRAP ? "through " SBX_BWRAP_PATH
	                                                           : "direct (own namespaces)",
	         sbx_sandbox_flags(sb) & SBX_INIT_HAS_LANDLOCK ? ", Landlock" : "");
}

int sbx_sandbox_probe(enum sbx_sandbox_mode mode, char *detail, size_t len)
{
	char hostname[] = "probe";
	struct sbx_sandbox_options o = { .mode = mode, .landlock = true, .hostname = hostname };
	_cleanup_free_ char *dir = NULL;
	struct sbx_sandbox *sb = NULL;
	int r;

	if (mode == SBX_SANDBOX_BWRAP && access(SBX_BWRAP_PATH, X_OK) < 0) {
		snprintf(detail, len, "%s not found", SBX_BWRAP_PATH);
		return -SBX_EBACKEND;
	}
	if ((r = sbx_fs_make_temp_dir("agentsbx-probe", &dir)) < 0) {
		snprintf(detail, len, "%s", sbx_last_error());
		return r;
	}
	sbx_backend_config cfg = { .size = sizeof cfg, .id = "probe", .workdir = dir,
	                           .network_mode = "none", .audit_dir_fd = -1,
	                           .state_dir_fd = -1 };
	r = sbx_sandbox_start("probe", &cfg, &o, mode, &sb);
	if (r == 0) {
		describe_mode(mode, sb, detail, len);
		sbx_sandbox_stop(sb);
	} else {
		snprintf(detail, len, "%s", sbx_last_error());
	}
	remove_probe_dir(dir);
	return r;
}

/* Held while the first open probes (it starts sandboxes): a child forked meanwhile finds it
 * free and probes on its own. */
SBX_FORK_SAFE_MUTEX(pick_lock)
static int picked = -1;           /* the resolved AUTO mode, once probed */
static char pick_detail[512];

int sbx_sandbox_pick_mode(enum sbx_sandbox_mode wanted, enum sbx_sandbox_mode *mode,
                          char *detail, size_t len)
{
	char why_direct[256] = "", why_bwrap[256] = "";
	int r = 0;

	if (wanted != SBX_SANDBOX_AUTO) {
		*mode = wanted;
		return 0;
	}
	pthread_mutex_lock(&pick_lock);
	if (picked < 0) {
		if (sbx_sandbox_probe(SBX_SANDBOX_DIRECT, why_direct, sizeof why_direct) == 0) {
			picked = SBX_SANDBOX_DIRECT;
			snprintf(pick_detail, sizeof pick_detail, "%s", why_direct);
		} else {
			if (sbx_sandbox_probe(SBX_SANDBOX_BWRAP, why_bwrap, sizeof why_bwrap) == 0)
				picked = SBX_SANDBOX_BWRAP;
			snprintf(pick_detail, sizeof pick_detail, "direct does not work (%s); %s",
			         why_direct, why_bwrap);
		}
	}
	if (picked < 0)
		r = -SBX_EBACKEND;
	else
		*mode = (enum sbx_sandbox_mode)picked;
	snprintf(detail, len, "%s", pick_detail);
	pthread_mutex_unlock(&pick_lock);
	return r;
}

/* AUTO mode before anything was probed: the first workspace itself is the probe. Started
 * directly, it settles the mode without a throw-away sandbox (that doubled the first open of
 * every process, a one-shot CLI run included). 1: started; 0: not tried or it failed, and the
 * probes will tell a host without namespaces from a bad config. */
int sbx_sandbox_start_as_probe(const char *name, const sbx_backend_config *cfg,
                               const struct sbx_sandbox_options *o, struct sbx_sandbox **out)
{
	bool unknown;

	pthread_mutex_lock(&pick_lock);
	unknown = picked < 0;
	pthread_mutex_unlock(&pick_lock);
	if (o->mode != SBX_SANDBOX_AUTO || !unknown ||
	    sbx_sandbox_start(name, cfg, o, SBX_SANDBOX_DIRECT, out) < 0)
		return 0;
	pthread_mutex_lock(&pick_lock);
	if (picked < 0) {
		picked = SBX_SANDBOX_DIRECT;
		describe_mode(SBX_SANDBOX_DIRECT, *out, pick_detail, sizeof pick_detail);
	}
	pthread_mutex_unlock(&pick_lock);
	return 1;
}
