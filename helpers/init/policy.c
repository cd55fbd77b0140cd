/* What a sandbox shows of the host. One table for both ways of building the root (the init's
 * own rootfs.c, and the bubblewrap arguments the library writes), so they cannot drift. */
#include "sandbox.h"

/* Bound read-only at the same path when they exist; a top-level symlink (merged /usr) is
 * recreated as a symlink instead. */
const char *const sbx_system_dirs[] = {
	"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", NULL,
};

/* /etc is an allow-list: what programs need to run, resolve names and verify TLS, and nothing
 * that holds host secrets (shadow, gshadow, sudoers, ssh keys, machine-id are absent). */
const char *const sbx_etc_allowlist[] = {
	"passwd", "group", "hosts", "resolv.conf", "nsswitch.conf", "host.conf", "gai.conf",
	"ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "timezone", "alternatives",
	"ssl", "ca-certificates", "ca-certificates.conf", "os-release", "debian_version",
	"mime.types", "protocols", "services", "profile", "bash.bashrc", "environment", "inputrc",
	"terminfo", "magic", "magic.mime", "login.defs", "perl", "mailcap", "python3",
	"python3.11", "gitconfig", "vim", "nanorc", "xdg", NULL,
};

/* Kept read-only inside /workspace: agents attack their own configuration (hooks that run on
 * the host's next git command, the library's state, shell start-up files, MCP server lists).
 * A trailing '/' marks a directory: a missing one gets an empty placeholder so it can't be
 * created from inside; a missing file is left missing. */
const char *const sbx_default_protected_paths[] = {
	".git/hooks/", ".git/config", ".agentsbx/", ".bashrc", ".bash_profile", ".profile",
	".zshrc", ".mcp.json", NULL,
};
