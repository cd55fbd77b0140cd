/* The docker backend's internals: one container per workspace, driven through the Docker
 * Engine API (engine.c), configured from the "docker" config object (options.c), created and
 * found again by label (container.c), and running commands through the exec API under
 * agentsbx-run (exec.c), whose control channel is a Unix socket in a host folder bound into
 * the container (control.c). */
#ifndef SBX_DOCKER_H
#define SBX_DOCKER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <agentsbx/backend.h>

#include "util/buf.h"
#include "util/json.h"
#include "util/linebuf.h"

#define DOCKER_WHO "docker"
/* Where the container sees things. */
#define DOCKER_WORKSPACE "/workspace"
#define DOCKER_RUNNER "/.agentsbx/agentsbx-run"
#define DOCKER_INIT "/.agentsbx/agentsbx-init"
#define DOCKER_CONTROL_DIR "/.agentsbx/run"
/* The host folder (inside the workspace's state folder) holding the control sockets. */
#define DOCKER_STATE_SUBDIR ".agentsbx/docker"
/* Labels every container of ours carries. */
#define DOCKER_LABEL_WORKSPACE "io.agentsbx.workspace"
#define DOCKER_LABEL_WORKDIR "io.agentsbx.workdir"
#define DOCKER_LABEL_SPEC "io.agentsbx.spec"
#define DOCKER_LABEL_BACKEND "io.agentsbx.backend"

/* ---- engine.c: the Engine API ---------------------------------------------------------- */

struct docker_engine {
	char *unix_socket;            /* the engine's socket, or NULL for tcp:// */
	char *base_url;               /* "http://docker" or "http://host:port" */
	char api[16];                 /* "/v1.41": the negotiated version's path prefix */
	long timeout_ms;              /* per call; 0 = the default (the probe's is short) */
};

/* Reads where the engine is (host: "unix:///path" or "tcp://host:port"; NULL = $DOCKER_HOST,
 * else the default socket) and negotiates the API version with GET /version, waiting at most
 * timeout_ms for the answer (0 = the default). */
int docker_engine_connect(struct docker_engine *e, const char *host, long timeout_ms);
void docker_engine_free(struct docker_engine *e);

/* One API call: method, path (after the version prefix, query string included), optional
 * JSON body. *status gets the HTTP status; with out non-NULL a JSON response body is parsed
 * into *out. A transport failure is an error; a status >= 400 is an error carrying the
 * engine's message (what says what we were doing). */
int docker_call(const struct docker_engine *e, const char *method, const char *path,
                const sbx_buf *body, const char *what, long *status, sbx_json **out);
/* The same, taking over the connection after the response head (exec start). */
int docker_call_upgrade(const struct docker_engine *e, const char *path, const sbx_buf *body,
                        const char *what, int *fd, sbx_buf *early);
/* The same for answers that are JSON lines (POST /images/create): fn gets each parsed line
 * and may stop the transfer with a negative code, which is returned. timeout_ms 0 = none. */
typedef int (*docker_line_fn)(void *arg, const sbx_json *line);
int docker_call_lines(const struct docker_engine *e, const char *method, const char *path,
                      const char *what, long timeout_ms, docker_line_fn fn, void *arg);
/* The splitting of such an answer, as its bytes arrive: every line that is a JSON object goes
 * to fn; anything else, and a line longer than DOCKER_LINE_MAX, is skipped. Feed and finish
 * (the last line may lack its newline) return 0, or fn's negative code, after which nothing
 * more is handed on. */
#define DOCKER_LINE_MAX ((size_t)1 << 20)
struct docker_lines {
	docker_line_fn fn;
	void *arg;
	sbx_linebuf lines;
	int stopped;                  /* fn's negative code, once it stopped the transfer */
};
void docker_lines_init(struct docker_lines *dl, docker_line_fn fn, void *arg);
int docker_lines_feed(struct docker_lines *dl, const char *data, size_t len);
int docker_lines_finish(struct docker_lines *dl);
void docker_lines_free(struct docker_lines *dl);
/* The same for answers that are not JSON (the archive API): the response as it came, body
 * capped at max_body (0: the default cap; beyond it -SBX_EFBIG, no message). A status >= 400
 * is an error unless keep_errors (then the caller reads resp->status). Free resp with
 * sbx_http_response_free() either way. */
struct sbx_http_response;
struct docker_raw_call {
	const char *method, *path, *what;
	const sbx_buf *body;          /* sent as application/x-tar, or NULL */
	size_t max_body;
	bool keep_errors;
};
int docker_call_raw(const struct docker_engine *e, const struct docker_raw_call *c,
                    struct sbx_http_response *resp);
/* Percent-encodes s for a query string or a path segment, appending to b. */
void docker_url_escape(sbx_buf *b, const char *s);

/* ---- options.c: the "docker" config object --------------------------------------------- */

struct docker_options {
	char *image;                  /* required */
	char *host;                   /* engine address, NULL = $DOCKER_HOST or the default */
	char *user;                   /* "uid[:gid]" or a name; NULL = chosen at open */
	bool detached;                /* close leaves the container (default: removed) */
	int64_t idle_ttl_ms;          /* detached: its exec server stops it when no host has held
	                                 it for this long (0: never) */
	bool idle_ttl_set;
	bool bridge;                  /* network "bridge" instead of the host's (mode host) */
	uint64_t nano_cpus;           /* 0 = no CPU limit */
	uint64_t tmp_bytes;           /* size of the tmpfs on /tmp */
	bool pull;                    /* pull the image when the engine lacks it */
	bool stream;                  /* stdio "stream": through the exec's hijacked connection
	                                 (default "direct": the host's pipes, passed to the
	                                 runner over its control socket) */
	int exec;                     /* DOCKER_EXEC_*: how commands start */
	char *volume;                 /* "volume": the named volume at /workspace (volume.c) */
	bool volume_own;              /* "volume": true: a volume of the workspace's own */
};

/* "exec": "server" runs the ns backend's resident exec server (agentsbx-init) as the
 * container's main process and starts commands through it, as ns does; "api" starts each
 * through the Engine's exec API. Default: the server, unless stdio is "stream". */
enum { DOCKER_EXEC_AUTO, DOCKER_EXEC_SERVER, DOCKER_EXEC_API };

int docker_options_parse(const char *options_json, struct docker_options *o);
void docker_options_free(struct docker_options *o);

/* ---- volume.c: workspaces whose files are a named volume ---------------------------------- */

/* The "volume" key: a volume name, or true for a volume of the workspace's own. */
int docker_take_volume(const sbx_json *v, struct docker_options *o);
/* What a volume workspace refuses (a user name the library cannot own files as). */
int docker_check_volume_options(const struct docker_options *o);
/* The ops table's workspace_caps: a volume workspace has no host files. */
int docker_workspace_caps(const char *options_json, uint32_t *caps);

/* ---- control.c: the runner's control sockets ------------------------------------------- */

/* A listening SOCK_SEQPACKET socket named <dir>/<random>.sock that the container's user can
 * connect to. *name gets the file name (caller frees). */
int docker_control_listen(const char *dir, int *fd, char **name);
/* Waits up to timeout_ms for the runner's connection on lfd; also returns (-SBX_EIO) when
 * stop_fd becomes readable first (the exec stream ended: nobody will connect). */
int docker_control_accept(int lfd, int stop_fd, int timeout_ms, int *conn);

/* ---- the workspace -------------------------------------------------------------------- */

struct docker_proc;
struct sbx_netproxy;

struct docker_ws {
	struct docker_options opts;
	struct docker_engine engine;
	char *id;                     /* the workspace id */
	char *workdir;                /* host directory bound at /workspace */
	char *control_dir;            /* host folder of the control sockets */
	char *runner;                 /* host path of agentsbx-run (static) */
	char *init;                   /* host path of agentsbx-init (static), for the server */
	bool server;                  /* commands start through the exec server */
	char *user;                   /* the user commands run as */
	char *container;              /* the container's id */
	char *network;                /* "none", "host" or "bridge" */
	bool read_only;
	sbx_backend_limits limits;
	int keepalive;                /* control channel of the container's main process, the
	                                 runner or the exec server (-1: detached, none) */
	pthread_mutex_t lock;         /* the live list */
	struct docker_proc *live;
	bool allowlist;               /* network mode "allowlist": NetworkMode none plus proxy */
	struct sbx_netproxy *proxy;   /* its proxy, kept across resets */
	sbx_open_progress_fn progress; /* the open's listener, during open only (else NULL) */
	void *progress_userdata;
	/* volume.c: with docker.volume, /workspace is this volume and workdir is NULL. */
	char *volume;                 /* the volume's name */
	bool volume_own;              /* made for this workspace: an ephemeral close removes it */
	bool reset_empties;           /* reset makes the workspace's own volume anew */
	char *state_dir;              /* library-private host folder (sockets, the attach dir) */
	unsigned file_uid, file_gid;  /* the owner of what the file ops write */
};

/* pull.c: one line of a pull's answer, read (pointers into the line; "" for what it lacks,
 * error NULL unless it reports the failure; byte counts 0 when unknown or not counts). */
struct docker_pull_event {
	const char *id, *status, *error;
	uint64_t current, total;
};
void docker_pull_event_read(const sbx_json *line, struct docker_pull_event *ev);
/* Pulls the configured image, reporting progress to ws->progress. */
int docker_pull_image(struct docker_ws *ws);

/* network.c: mode "allowlist" */
int docker_network_start(struct docker_ws *ws, const sbx_backend_config *cfg);
void docker_network_spec(const struct docker_ws *ws, sbx_buf *spec);
int docker_network_hand_bridge(struct docker_ws *ws);
void docker_network_stop(struct docker_ws *ws);
int docker_set_network(void *state, const char *network_json);
const char *const *docker_base_env(void *state);

/* user.c: the uid the container's processes have on the host (a numeric docker.user, else
 * that of its main process, which the engine names). */
int docker_container_uid(struct docker_ws *ws, uid_t *uid);

/* volume.c */
/* Before the container: the volume found or made (its root given to the workspace's user),
 * and the private host folder of the control sockets. */
int docker_volume_setup(struct docker_ws *ws, const sbx_backend_config *cfg);
/* After the container is gone: an ephemeral close removes the workspace's own volume and
 * private folder; reset (again true) empties the volume when the workspace's files are
 * temporary. */
int docker_volume_close(struct docker_ws *ws);
int docker_volume_reset(struct docker_ws *ws);
/* The volume's entry of the container's Mounts (read-only with the workspace). */
void docker_add_volume_mount(const struct docker_ws *ws, sbx_buf *b);
/* The label value that says where the files are: the workdir, or "volume:NAME". */
const char *docker_files_label(const struct docker_ws *ws);
/* The folder holding the workspace's ".agentsbx/run" attach dir: the workdir, or the
 * private folder. */
const char *docker_attach_root(const struct docker_ws *ws);

/* files.c: the file ops of a volume workspace, through the archive API */
int docker_file_read(void *state, const char *rel, char **data, size_t *len);
int docker_file_write(void *state, const char *rel, const void *data, size_t len,
                      unsigned mode, uint32_t flags);
int docker_file_stat(void *state, const char *rel, sbx_stat *st);
int docker_file_list(void *state, const char *rel, char **json_out);
int docker_file_mkdir(void *state, const char *rel, unsigned mode);
int docker_file_remove(void *state, const char *rel, uint32_t flags);
/* The tree below rel as the engine's tar (the ops table's file_tree). */
int docker_file_tree(void *state, const char *rel, size_t max, char **tar, size_t *len);
/* The ops table's spawn: a volume workspace's cwd resolved as the file ops resolve paths. */
int docker_volume_spawn(void *state, const sbx_backend_spawn *req, void **proc, int *wait_fd);

/* container.c */
int docker_container_up(struct docker_ws *ws);
/* Removes the container (ephemeral close, reset). */
int docker_container_remove(struct docker_ws *ws);

/* exec.c */
int docker_spawn(void *state, const sbx_backend_spawn *req, void **proc, int *wait_fd);
int docker_proc_wait(void *proc, int timeout_ms, int *exit_code, int *term_signal);
int docker_proc_signal(void *proc, int sig);
int docker_proc_kill(void *proc);
void docker_proc_release(void *proc);
/* Kills every live command of the workspace (reset, close) and waits for their ends; with
 * forget (close) they leave the workspace, which the core may free before releasing them. */
void docker_kill_all(struct docker_ws *ws, bool forget);

#endif
