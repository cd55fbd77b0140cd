/* What a sandbox shows of the host. One set of tables for both ways of building the root (the
 * init's own rootfs.c, and the bubblewrap arguments the library writes), so they cannot drift. */
#include <string.h>

#include "sandbox.h"

/* The host's system directories, bound read-only. On a merged-/usr system (Debian 12) all but
 * usr are links, recreated as links. */
const char *const sbx_system_dirs[] = {
	"usr", "bin", "sbin", "lib", "lib64", "lib32", "libx32", NULL,
};

/* Where third-party toolchains install themselves: each entry of the host's, read-only, in a
 * directory of the sandbox's own, so that a bind the config puts below it (/opt/tool) still
 * finds a place to make its mount point. */
const char *const sbx_opt_dir = "opt";

/* The places of the layout (rootfs_layout.c) commands may write, besides the workspace and
 * the writable binds: Landlock allows writes beneath each. */
const char *const sbx_layout_writable[] = {
	"/tmp", "/dev/shm", "/run", "/var/tmp", "/var/cache", NULL,
};

/* The /etc entries the sandbox sees, where they exist: what programs need to resolve names,
 * find libraries, certificates, time zones and terminal descriptions. Never secrets: no
 * shadow, gshadow, sudoers, ssh keys or machine-id, and only the public half of /etc/ssl
 * (certs, openssl.cnf), not ssl/private. npmrc and pip.conf stay out: they can hold registry
 * credentials. Links here are followed on the host (they are root's: localtime into
 * /usr/share/zoneinfo, resolv.conf into /run, os-release into /usr/lib) and the target is
 * bound under the allow-listed name, so nothing else of the target's directory shows.
 * A trailing '*' makes a prefix. hostname is written by us, mtab is our own link. */
const char *const sbx_etc_allowlist[] = {
	"passwd", "group", "hosts", "resolv.conf", "nsswitch.conf", "host.conf", "gai.conf",
	"ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "timezone", "alternatives",
	"ssl/certs", "ssl/openssl.cnf", "ca-certificates", "ca-certificates.conf",
	"pki/tls/certs", "pki/ca-trust/extracted",
	"os-release", "debian_version", "mime.types", "protocols", "services", "shells",
	"profile", "bash.bashrc", "environment", "inputrc", "terminfo", "magic", "magic.mime",
	"login.defs", "perl", "mailcap", "python3*",
	NULL,
};

/* Why each default is there:
 *  .git/hooks/  hooks run on the host at the user's next git command;
 *  .git/config  core.hooksPath, core.fsmonitor, core.sshCommand, filter and diff drivers and
 *               aliases all name programs the host's git runs;
 *  .agentsbx/   the library's own state: the sandbox must not forge what the library
 *               believes about its workspace;
 *  .bashrc .bash_profile .profile .zshrc
 *               run by the user's shell when the workspace is (or becomes) a home directory;
 *               .bash_profile is read instead of .profile, so creating it matters as much;
 *  .mcp.json    the MCP servers an agent harness starts for this directory: host commands.
 * Residual risk, by design of the "parent missing: skip" rule: in a workspace without .git,
 * `git init` inside creates .git/hooks freely. A caller that treats every workspace as a
 * repository can add ".git/" to its list. */
const char *const sbx_default_protected_paths[] = {
	".git/hooks/", ".git/config", SBX_STATE_DIR "/",
	".bashrc", ".bash_profile", ".profile", ".zshrc",
	".mcp.json",
	NULL,
};

/* A missing protected entry made inside the sandbox (the race path of protect.c) gets an
 * empty directory as its placeholder, even where a file is protected (.bashrc, .mcp.json):
 * git shows and commits no empty directory, so the placeholders leave nothing in the user's
 * repository, inside or on the host, and a directory blocks the name as well as a file
 * (nothing can be created under it, written to it, removed or renamed: it is a read-only
 * mount point). Only entries inside .git stay files: git itself reads them (.git/config)
 * and does not list them. */
bool sbx_placeholder_is_dir(const char *entry)
{
	size_t len = strlen(entry);

	return (len > 0 && entry[len - 1] == '/') || strncmp(entry, ".git/", 5) != 0;
}

/* What the library makes on the host before the sandbox starts: where a file is protected
 * outside .git, a socket inode, which git neither shows nor commits either and which costs a
 * fraction of a directory to make and remove (no block to allocate, none to discard); the
 * init covers it with an empty read-only file (protect.c), so inside the name can be neither
 * created, written, removed nor renamed. A protected directory ("/" at the end) stays a
 * directory, an entry inside .git a file, as above. */
enum sbx_placeholder_kind sbx_placeholder_kind_of(const char *entry)
{
	size_t len = strlen(entry);

	if (!sbx_placeholder_is_dir(entry))
		return SBX_PLACEHOLDER_FILE;
	return len > 0 && entry[len - 1] == '/' ? SBX_PLACEHOLDER_DIR : SBX_PLACEHOLDER_SOCKET;
}
