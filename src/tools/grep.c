/* The Grep tool: rg's behaviour as AgentScope and Claude Code drive it (--hidden, the VCS
 * folders excluded, .gitignore respected, --max-columns 500), on our own walker and PCRE2.
 *
 * The calling thread walks and opens the files (fd-relative, never following symlinks) and
 * hands them to worker threads that read and search them. Results are consumed strictly in
 * walk order (paths in name order, directory by directory), which keeps the output
 * deterministic, and pagination is applied while consuming: once a page is full and one more
 * line exists, the walk stops, so the default 250-line page of a huge tree costs little.
 *
 * Without a path it searches the current working directory, the session's (where the Bash
 * tool's commands run now), as Claude Code's does; the reference's is the workdir its Bash
 * always runs in. Its options have one name each, Claude Code's ("-i", "-n"); the
 * reference's spellings ("i", "case_insensitive", "n") are accepted as aliases.
 *
 * Files with a NUL byte in their first 8 KiB are binary and skipped (rg's default), files over
 * 64 MiB are skipped and counted in the metadata. .gitignore files are applied whether or not
 * the workspace is a git repository (rg --no-require-git): workspaces often are not.
 *
 * The files are hostile (a command may have written them to be searched): each file's search
 * is bounded (grep_match.h: the deadline, a CPU budget per file, an output budget worked out
 * from what the page still needs, a stop flag once the page is full), a file is never read
 * past the size cap whatever it becomes after its stat, and when file descriptors run out
 * the search waits for its own open files to close and goes on with fewer, or fails saying
 * so. Anything not searched completely (a file cut short, a file or directory that could
 * not be read) makes "complete" false, and the output says what and why. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/grep_filter.h"
#include "tools/grep_match.h"
#include "tools/search.h"
#include "tools/tool.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/path.h"

#define GREP_DEFAULT_HEAD_LIMIT 250
#define GREP_MAX_FILE_SIZE (64u << 20)
#define GREP_BINARY_PROBE 8192
#define GREP_TIMEOUT_MS 30000
/* The most text one call returns, whatever head_limit says (0 included). */
#define GREP_MAX_OUTPUT (16u << 20)
#define GREP_MAX_WORKERS 4
/* Files opened and waiting for a worker: bounds the fds the search holds. */
#define GREP_QUEUE 128
/* Files handed between the walker and a worker at a time. */
#define GREP_BATCH 16
/* Zeroed bytes kept after a file's data: PCRE2's JIT scans ahead in 16-byte blocks, and
 * reading initialised memory of our own keeps valgrind quiet and the reads in bounds. */
#define GREP_READ_SLACK 64
/* The CPU time one file's search may take (a backtracking pattern is cut there, well within
 * the deadline), and how many cut files the result names one by one. */
#define GREP_FILE_CPU_MS 2000
#define GREP_CUTS_NAMED 10

enum file_status { FILE_SEARCHED, FILE_BINARY, FILE_LARGE, FILE_UNREADABLE, FILE_SKIPPED };

typedef struct file_slot {
	char *shown;
	sbx_grep_result res;
	uint8_t status;
	bool done;
} file_slot;

typedef struct file_job {
	file_slot *slot;
	int fd;
} file_job;

/* What the tool prints: pagination applied line by line as results arrive in order. */
typedef struct page {
	size_t skip, take;       /* lines still to skip (offset) and to take (SIZE_MAX: all) */
	sbx_buf text;
	size_t total;            /* result lines seen */
	bool truncated;          /* a line past the page exists */
	bool overflow;           /* ... because the text reached GREP_MAX_OUTPUT */
	bool separate_files;     /* context mode: "--" between files */
	bool any_file;
} page;

typedef struct grep_stats {
	size_t files, matches, searched, binary, large, unreadable, engine_errors;
	size_t dirs_unreadable, dirs_too_deep, cut;
} grep_stats;

/* A file whose search ended early in a way the page did not ask for. */
typedef struct cut_note {
	char *shown;
	sbx_grep_cut why;
	size_t line;
} cut_note;

typedef struct worker {
	struct grep_run *run;
	pthread_t thread;
	sbx_grep_matcher *matcher;
	char *buf;
	size_t cap;
} worker;

typedef struct grep_run {
	sbx_tool_ctx *ctx;
	const sbx_grep_regex *re;
	const sbx_grep_filter *filter;
	sbx_grep_mode mode;
	page pg;
	grep_stats st;
	/* Slots in walk order; consumed ones are freed and NULL. */
	file_slot **slots;
	size_t nslots, cap, consumed;
	/* The queue between the walker and the workers. */
	pthread_mutex_t lock;
	pthread_cond_t not_empty, not_full;
	file_job queue[GREP_QUEUE];
	size_t qhead, qlen;
	file_job pending[GREP_BATCH];   /* the walker's, not yet queued */
	size_t npending;
	bool closing;   /* no more jobs will come */
	bool stop;      /* the page is full: remaining jobs are dropped */
	_Atomic bool stop_flag;   /* the same, for searches already under way (grep_match.h) */
	int error;      /* a worker ran out of memory */
	worker *workers;
	size_t nworkers;
	worker inline_worker;   /* for the single-threaded case and a single file */
	int64_t deadline_ms;
	/* Output of finished files not consumed yet: what the page cannot use of a file still
	 * to be searched (the budgets are worked out from it, so that it stays bounded). */
	size_t held_lines, held_bytes;
	/* Files open (queued or being searched), the most the walker keeps open (lowered when
	 * file descriptors run out), and the signal that some were closed. */
	_Atomic size_t open_files;
	size_t open_cap;
	pthread_cond_t fds_closed;
	int fd_exhausted;   /* the errno when no retry helped */
	cut_note cuts[GREP_CUTS_NAMED];
} grep_run;

/* ---------------------------------------------------------------------------------------
 * Searching one file
 * ------------------------------------------------------------------------------------- */

/* Makes room for `need` bytes of data plus the zeroed slack after them. */
static bool reserve(worker *w, size_t need)
{
	char *p;

	if (w->cap >= need + GREP_READ_SLACK)
		return true;
	p = realloc(w->buf, need + GREP_READ_SLACK);
	if (!p)
		return false;
	w->buf = p;
	w->cap = need + GREP_READ_SLACK;
	return true;
}

enum read_result { READ_OK, READ_FAILED, READ_TOO_BIG };

/* Reads fd to its end into w->buf. size is what fstat said; the file may have changed since
 * (a command can grow it into a sparse giant): never more than GREP_MAX_FILE_SIZE + 1 bytes
 * are read, whatever it becomes. */
static enum read_result read_whole(worker *w, int fd, size_t size, size_t *len)
{
	const size_t most = (size_t)GREP_MAX_FILE_SIZE + 1;
	size_t used = 0, want = size < most ? size + 1 : most;

	if (!reserve(w, want))
		return READ_FAILED;
	for (;;) {
		size_t room = w->cap - GREP_READ_SLACK - used;
		if (room == 0) {   /* it grew since fstat */
			if (used >= most)
				return READ_TOO_BIG;
			if (!reserve(w, used * 2 < most ? used * 2 : most))
				return READ_FAILED;
			continue;
		}
		ssize_t n = read(fd, w->buf + used, room);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return READ_FAILED;
		if (n == 0)
			break;
		used += (size_t)n;
		if ((size_t)n < room)
			break;   /* a short read of a regular file is its end: no read to see 0 */
	}
	if (used > GREP_MAX_FILE_SIZE)
		return READ_TOO_BIG;
	memset(w->buf + used, 0, GREP_READ_SLACK);
	*len = used;
	return READ_OK;
}

static bool looks_binary(const char *d, size_t len)
{
	return memchr(d, '\0', len < GREP_BINARY_PROBE ? len : GREP_BINARY_PROBE) != NULL;
}

/* Searches the file open on fd (closed here) into slot, within lim. explicit: the path the
 * model named, where a binary file is searched too and reported as such. Returns 0 or
 * -SBX_ENOMEM. */
static int search_file(worker *w, int fd, file_slot *slot, bool explicit,
                       const sbx_grep_limits *lim)
{
	enum read_result rr;
	struct stat st;
	size_t len = 0;
	int r = 0;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		slot->status = FILE_UNREADABLE;
	} else if ((uint64_t)st.st_size > GREP_MAX_FILE_SIZE) {
		slot->status = FILE_LARGE;
	} else if ((rr = read_whole(w, fd, (size_t)st.st_size, &len)) != READ_OK) {
		slot->status = rr == READ_TOO_BIG ? FILE_LARGE : FILE_UNREADABLE;
	} else if (looks_binary(w->buf, len) && !explicit) {
		slot->status = FILE_BINARY;
	} else {
		slot->status = FILE_SEARCHED;
		r = sbx_grep_buffer(w->matcher, w->buf, len, slot->shown, lim, &slot->res);
		if (r == 0 && explicit && looks_binary(w->buf, len) &&
		    w->run->mode == SBX_GREP_CONTENT && slot->res.matched) {
			/* Lines of a binary file are noise; say that it matches, as rg does. */
			slot->res.out.len = 0;
			sbx_buf_printf(&slot->res.out, "%s: binary file matches\n", slot->shown);
			slot->res.lines = 1;
		}
	}
	close(fd);
	return r;
}

/* ---------------------------------------------------------------------------------------
 * Consuming results in order
 * ------------------------------------------------------------------------------------- */

static void page_line(page *pg, const char *line, size_t n)
{
	pg->total++;
	if (pg->skip) {
		pg->skip--;
	} else if (pg->take && pg->text.len + n >= GREP_MAX_OUTPUT) {
		pg->truncated = pg->overflow = true;
	} else if (pg->take) {
		if (pg->text.len)
			sbx_buf_puts(&pg->text, "\n");
		sbx_buf_append(&pg->text, line, n);
		if (pg->take != SIZE_MAX)
			pg->take--;
	} else {
		pg->truncated = true;
	}
}

static void note_cut(grep_run *g, file_slot *s)
{
	if (g->st.cut < GREP_CUTS_NAMED) {
		cut_note *n = &g->cuts[g->st.cut];
		n->shown = SBX_TAKE_PTR(s->shown);
		n->why = s->res.cut;
		n->line = s->res.cut_line;
	}
	g->st.cut++;
}

static void consume_slot(grep_run *g, file_slot *s)
{
	const char *p = s->res.out.data, *end = p ? p + s->res.out.len : p;

	switch (s->status) {
	case FILE_SEARCHED: g->st.searched++; break;
	case FILE_BINARY: g->st.binary++; break;
	case FILE_LARGE: g->st.large++; break;
	case FILE_UNREADABLE: g->st.unreadable++; break;
	default: break;
	}
	if (s->res.cut == SBX_GREP_CUT_ENGINE)
		g->st.engine_errors++;
	if (s->res.matched) {
		g->st.files++;
		g->st.matches += s->res.matched;
	}
	g->held_lines -= s->res.lines;
	g->held_bytes -= s->res.out.len;
	if (s->res.lines) {
		if (g->pg.separate_files && g->pg.any_file)
			page_line(&g->pg, "--", 2);
		g->pg.any_file = true;
	}
	while (p < end && !g->pg.truncated) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		page_line(&g->pg, p, (size_t)(le - p));
		p = nl ? nl + 1 : end;
	}
	/* A file cut to the page's budget is only missing what the page cannot show; any other
	 * cut leaves results out. */
	if (s->res.cut != SBX_GREP_CUT_NONE && s->res.cut != SBX_GREP_CUT_STOPPED &&
	    !(s->res.cut == SBX_GREP_CUT_BUDGET && g->pg.truncated))
		note_cut(g, s);
}

static void slot_free(file_slot *s)
{
	if (!s)
		return;
	free(s->shown);
	sbx_buf_free(&s->res.out);
	free(s);
}

/* Consumes the finished slots at the front. Called with the lock held (or single-threaded).
 * Sets g->stop once the page is full, which also ends the searches under way. */
static void consume_ready(grep_run *g)
{
	while (g->consumed < g->nslots && g->slots[g->consumed]->done && !g->stop) {
		file_slot *s = g->slots[g->consumed];
		consume_slot(g, s);
		slot_free(s);
		g->slots[g->consumed++] = NULL;
		if (g->pg.truncated) {
			g->stop = true;
			atomic_store(&g->stop_flag, true);
		}
	}
}

/* The limits of a file whose search starts now (lock held, or single-threaded): the
 * deadline, the CPU budget, and what the page could still use of it, which is what it
 * still needs less what finished files hold unconsumed (all of them come before this one).
 * *beyond: the page gets all it can show without this file. */
static sbx_grep_limits limits_now(grep_run *g, bool *beyond)
{
	sbx_grep_limits lim = { .deadline_ms = g->deadline_ms, .cpu_budget_ms = GREP_FILE_CPU_MS,
	                        .stop = &g->stop_flag };
	size_t used = g->pg.text.len + g->held_bytes;

	lim.max_bytes = used < GREP_MAX_OUTPUT ? GREP_MAX_OUTPUT - used : 0;
	*beyond = lim.max_bytes == 0;
	if (g->pg.take != SIZE_MAX) {
		/* The lines to skip and to take, and one more to know the page is truncated;
		 * both come from int64 arguments, so the sum fits. */
		size_t need = g->pg.skip + g->pg.take + 1;
		lim.max_lines = need > g->held_lines ? need - g->held_lines : 0;
		*beyond |= lim.max_lines == 0;
	}
	return lim;
}

/* A search is over (lock held, or single-threaded): its output is held until consumed. */
static void mark_done(grep_run *g, file_slot *s)
{
	s->done = true;
	g->held_lines += s->res.lines;
	g->held_bytes += s->res.out.len;
}

/* ---------------------------------------------------------------------------------------
 * Workers
 * ------------------------------------------------------------------------------------- */

/* Takes up to GREP_BATCH jobs off the queue (lock held). */
static size_t take_jobs(grep_run *g, file_job *jobs)
{
	size_t n = 0;

	while (g->qlen && n < GREP_BATCH) {
		jobs[n++] = g->queue[g->qhead];
		g->qhead = (g->qhead + 1) % GREP_QUEUE;
		g->qlen--;
	}
	if (n)
		pthread_cond_signal(&g->not_full);
	return n;
}

/* Jobs move in batches: a hand-over per file cost more futex calls than the search itself. */
static void *worker_main(void *arg)
{
	worker *w = arg;
	grep_run *g = w->run;
	file_job jobs[GREP_BATCH];
	int r[GREP_BATCH];

	pthread_mutex_lock(&g->lock);
	for (;;) {
		while (!g->qlen && !g->closing)
			pthread_cond_wait(&g->not_empty, &g->lock);
		size_t n = take_jobs(g, jobs);
		if (!n)
			break;
		bool beyond;
		sbx_grep_limits lim = limits_now(g, &beyond);
		bool skip = g->stop || g->error || beyond;
		pthread_mutex_unlock(&g->lock);

		for (size_t i = 0; i < n; i++) {
			r[i] = 0;
			if (skip) {
				close(jobs[i].fd);
				jobs[i].slot->status = FILE_SKIPPED;
			} else {
				r[i] = search_file(w, jobs[i].fd, jobs[i].slot, false, &lim);
			}
		}

		pthread_mutex_lock(&g->lock);
		for (size_t i = 0; i < n; i++) {
			mark_done(g, jobs[i].slot);
			if (r[i] < 0 && !g->error)
				g->error = r[i];
		}
		g->open_files -= n;
		pthread_cond_broadcast(&g->fds_closed);
	}
	pthread_mutex_unlock(&g->lock);
	return NULL;
}

/* Workers besides the walking thread, which is kept busy listing and opening: one per
 * further CPU. With one CPU the walking thread searches too, without any hand-over. */
static size_t worker_count(void)
{
	const char *env = getenv("SBX_GREP_THREADS");   /* a knob for benchmarks and tests */
	long n = env && *env ? strtol(env, NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN);

	if (n <= 1)
		return 0;
	return n - 1 > GREP_MAX_WORKERS ? GREP_MAX_WORKERS : (size_t)(n - 1);
}

static int worker_init(worker *w, grep_run *g)
{
	w->run = g;
	return sbx_grep_matcher_new(g->re, &w->matcher);
}

static void worker_fini(worker *w)
{
	sbx_grep_matcher_free(w->matcher);
	free(w->buf);
}

static int start_workers(grep_run *g, size_t n)
{
	g->workers = calloc(n ? n : 1, sizeof *g->workers);
	if (!g->workers)
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		int r = worker_init(&g->workers[i], g);
		if (r < 0)
			return r;
		if (pthread_create(&g->workers[i].thread, NULL, worker_main, &g->workers[i]) != 0) {
			worker_fini(&g->workers[i]);
			break;   /* fewer threads still work */
		}
		g->nworkers++;
	}
	return 0;
}

static void stop_workers(grep_run *g)
{
	pthread_mutex_lock(&g->lock);
	g->closing = true;
	pthread_cond_broadcast(&g->not_empty);
	pthread_mutex_unlock(&g->lock);
	for (size_t i = 0; i < g->nworkers; i++) {
		pthread_join(g->workers[i].thread, NULL);
		worker_fini(&g->workers[i]);
	}
	free(g->workers);
	g->workers = NULL;
	g->nworkers = 0;
}

/* ---------------------------------------------------------------------------------------
 * The walk's side
 * ------------------------------------------------------------------------------------- */

static bool grep_want_dir(void *ud, const sbx_walk_entry *e)
{
	grep_run *g = ud;

	return sbx_grep_filter_dir(g->filter, e->sub, e->sub_len, e->name);
}

static int add_slot(grep_run *g, const char *rel, file_slot **out)
{
	file_slot *s = calloc(1, sizeof *s);

	if (!s || !(s->shown = sbx_tool_display_path(g->ctx, rel))) {
		free(s);
		return sbx_fail(-SBX_ENOMEM, "out of memory");
	}
	if (g->nslots == g->cap) {
		size_t cap = g->cap ? g->cap * 2 : 256;
		file_slot **v = reallocarray(g->slots, cap, sizeof *v);
		if (!v) {
			slot_free(s);
			return sbx_fail(-SBX_ENOMEM, "out of memory");
		}
		g->slots = v;
		g->cap = cap;
	}
	g->slots[g->nslots++] = s;
	*out = s;
	return 0;
}

static int search_inline(grep_run *g, int fd, file_slot *s)
{
	bool beyond;
	sbx_grep_limits lim = limits_now(g, &beyond);
	int r = search_file(&g->inline_worker, fd, s, false, &lim);

	mark_done(g, s);
	consume_ready(g);
	return r < 0 ? r : g->stop;
}

/* Moves the walker's pending jobs to the queue (lock held). */
static void push_pending(grep_run *g)
{
	for (size_t i = 0; i < g->npending; i++) {
		while (g->qlen == GREP_QUEUE)
			pthread_cond_wait(&g->not_full, &g->lock);
		g->queue[(g->qhead + g->qlen) % GREP_QUEUE] = g->pending[i];
		g->qlen++;
		if (g->qlen == GREP_BATCH || i + 1 == g->npending)
			pthread_cond_signal(&g->not_empty);
	}
	g->npending = 0;
}

/* Moves the walker's pending jobs to the queue, and consumes what is finished. Returns 1
 * when the page is full, 0 to go on, or a worker's error. */
static int flush_jobs(grep_run *g)
{
	int r;

	pthread_mutex_lock(&g->lock);
	push_pending(g);
	consume_ready(g);
	r = g->error ? g->error : g->stop;
	pthread_mutex_unlock(&g->lock);
	return r;
}

/* Waits, with the pending jobs handed over, until fewer than `most` files are open. */
static void wait_for_open_files(grep_run *g, size_t most)
{
	pthread_mutex_lock(&g->lock);
	push_pending(g);
	while (g->open_files >= most && g->open_files > 0)
		pthread_cond_wait(&g->fds_closed, &g->lock);
	consume_ready(g);
	pthread_mutex_unlock(&g->lock);
}

/* The walk's answer to EMFILE/ENFILE (search.h): the files this search holds open are
 * searched and closed, and from now on it keeps half as many open. False when it holds
 * none: then the descriptors are not its to give back. */
static bool relieve_fds(void *ud)
{
	grep_run *g = ud;
	size_t open;

	if (!g->nworkers)
		return false;
	pthread_mutex_lock(&g->lock);
	open = g->open_files;
	if (open)
		g->open_cap = open / 2 ? open / 2 : 1;
	pthread_mutex_unlock(&g->lock);
	if (!open)
		return false;
	wait_for_open_files(g, 1);
	return true;
}

static int hand_over(grep_run *g, int fd, file_slot *s)
{
	g->pending[g->npending++] = (file_job){ s, fd };
	return g->npending == GREP_BATCH ? flush_jobs(g) : 0;
}

/* Opens a file the walk found, for reading: never following a symlink or blocking on a FIFO
 * swapped in, and giving descriptors back when they run out. -1 with errno on failure. */
static int open_found(grep_run *g, const sbx_walk_entry *e)
{
	const int flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
	int fd;

	if (g->nworkers && g->open_files >= g->open_cap)
		wait_for_open_files(g, g->open_cap);
	fd = openat(e->dirfd, e->name, flags);
	if (fd < 0 && sbx_walk_fds_exhausted(errno) && relieve_fds(g))
		fd = openat(e->dirfd, e->name, flags);
	return fd;
}

static int grep_on_file(void *ud, const sbx_walk_entry *e)
{
	grep_run *g = ud;
	sbx_grep_pick pick = sbx_grep_filter_file(g->filter, e->sub, e->sub_len, e->name);
	file_slot *s;
	int fd, r;

	if (pick == SBX_GREP_SKIP || (pick == SBX_GREP_SEARCH && e->ignored))
		return 0;
	fd = open_found(g, e);
	if (fd < 0 && sbx_walk_fds_exhausted(errno)) {
		g->fd_exhausted = errno;
		return 1;   /* the search cannot go on honestly: it ends, and says why */
	}
	if (fd < 0) {
		/* Gone since the listing is not unreadable; anything else is. */
		if (errno != ENOENT && errno != ELOOP)
			g->st.unreadable++;
		return 0;
	}
	r = add_slot(g, e->rel, &s);
	if (r < 0) {
		close(fd);
		return r;
	}
	if (!g->nworkers)
		return search_inline(g, fd, s);
	g->open_files++;
	return hand_over(g, fd, s);
}

/* Consumes what the workers finished after the walk ended. */
static void drain(grep_run *g)
{
	pthread_mutex_lock(&g->lock);
	consume_ready(g);
	pthread_mutex_unlock(&g->lock);
}

static void grep_run_free(grep_run *g)
{
	for (size_t i = g->consumed; i < g->nslots; i++)
		slot_free(g->slots[i]);
	free(g->slots);
	worker_fini(&g->inline_worker);
	sbx_buf_free(&g->pg.text);
	for (size_t i = 0; i < g->st.cut && i < GREP_CUTS_NAMED; i++)
		free(g->cuts[i].shown);
	pthread_mutex_destroy(&g->lock);
	pthread_cond_destroy(&g->not_empty);
	pthread_cond_destroy(&g->not_full);
	pthread_cond_destroy(&g->fds_closed);
}

/* ---------------------------------------------------------------------------------------
 * The tool
 * ------------------------------------------------------------------------------------- */

typedef struct grep_args {
	const char *pattern, *path, *glob, *type;
	sbx_grep_opts opts;
	int64_t head_limit, offset;
} grep_args;

/* Reads the arguments; returns 1 after writing a tool error for a bad one. */
static int read_args(const sbx_json *args, grep_args *a, sbx_tool_out *out)
{
	const char *mode = sbx_tool_arg_str(args, "output_mode", "files_with_matches");
	int64_t c = sbx_tool_arg_int(args, "context", sbx_tool_arg_int(args, "-C", -1));
	int64_t before = c >= 0 ? c : sbx_tool_arg_int(args, "-B", 0);
	int64_t after = c >= 0 ? c : sbx_tool_arg_int(args, "-A", 0);

	a->pattern = sbx_tool_arg_str(args, "pattern", "");
	a->path = sbx_tool_arg_str(args, "path", NULL);
	a->glob = sbx_tool_arg_str(args, "glob", NULL);
	a->type = sbx_tool_arg_str(args, "type", NULL);
	a->head_limit = sbx_tool_arg_int(args, "head_limit", GREP_DEFAULT_HEAD_LIMIT);
	a->offset = sbx_tool_arg_int(args, "offset", 0);
	if (a->head_limit < 0)
		return sbx_tool_error(out, "Error: head_limit must be non-negative."), 1;
	if (a->offset < 0)
		return sbx_tool_error(out, "Error: offset must be non-negative."), 1;
	if (before < 0 || after < 0)
		return sbx_tool_error(out, "Error: context line counts must be non-negative."), 1;
	if (strcmp(mode, "content") == 0)
		a->opts.mode = SBX_GREP_CONTENT;
	else if (strcmp(mode, "count") == 0)
		a->opts.mode = SBX_GREP_COUNT;
	else if (strcmp(mode, "files_with_matches") == 0)
		a->opts.mode = SBX_GREP_FILES;
	else
		return sbx_tool_error(out, "Error: output_mode must be \"content\", "
		                      "\"files_with_matches\" or \"count\", not \"%s\".", mode), 1;
	/* The reference's "i", "case_insensitive" and "n" arrive renamed (sbx_tool_grep.aliases). */
	a->opts.caseless = sbx_tool_arg_bool(args, "-i", false);
	a->opts.multiline = sbx_tool_arg_bool(args, "multiline", false);
	if (a->opts.mode == SBX_GREP_CONTENT) {
		a->opts.line_numbers = sbx_tool_arg_bool(args, "-n", true);
		a->opts.before = (size_t)before;
		a->opts.after = (size_t)after;
	}
	if (!*a->pattern)
		return sbx_tool_error(out, "Error: pattern must not be empty."), 1;
	return 0;
}

/* What was not searched completely, and why: a file cut short (named, up to
 * GREP_CUTS_NAMED), files and directories that could not be read. */
static void print_gaps(grep_run *g, sbx_tool_out *out)
{
	const grep_stats *st = &g->st;
	size_t named = st->cut < GREP_CUTS_NAMED ? st->cut : GREP_CUTS_NAMED;

	for (size_t i = 0; i < named; i++)
		sbx_buf_printf(&out->text, "%s(The search of %s stopped at line %zu: %s. Its results "
		               "are incomplete.)", i ? "\n" : "\n\n", g->cuts[i].shown,
		               g->cuts[i].line, sbx_grep_cut_reason(g->cuts[i].why));
	if (st->cut > named)
		sbx_buf_printf(&out->text, "\n(... and %zu more files were cut short.)",
		               st->cut - named);
	if (st->cut && g->st.engine_errors)
		sbx_buf_puts(&out->text, "\n(Simplify the pattern: nested repetitions such as "
		             "(a+)+ backtrack without end.)");
	if (st->unreadable || st->dirs_unreadable)
		sbx_buf_printf(&out->text, "\n\n(%zu file(s) and %zu directory(ies) could not be "
		               "read; results from them are missing.)", st->unreadable,
		               st->dirs_unreadable);
	if (st->dirs_too_deep)
		sbx_buf_printf(&out->text, "\n\n(%zu directory(ies) nested deeper than %d levels, or "
		               "with paths over 4095 bytes, were not searched.)", st->dirs_too_deep, SBX_WALK_MAX_DEPTH);
}

static void meta_cuts(grep_run *g, sbx_tool_out *out)
{
	size_t named = g->st.cut < GREP_CUTS_NAMED ? g->st.cut : GREP_CUTS_NAMED;
	sbx_buf list = { 0 };

	sbx_tool_meta_int(out, "cut_short", (int64_t)g->st.cut);
	if (!named)
		return;
	sbx_buf_puts(&list, "[");
	for (size_t i = 0; i < named; i++) {
		const char *why = sbx_grep_cut_reason(g->cuts[i].why);

		sbx_buf_puts(&list, i ? ",{\"file\":" : "{\"file\":");
		sbx_buf_json_string(&list, g->cuts[i].shown, strlen(g->cuts[i].shown));
		sbx_buf_printf(&list, ",\"line\":%zu,\"reason\":", g->cuts[i].line);
		sbx_buf_json_string(&list, why, strlen(why));
		sbx_buf_puts(&list, "}");
	}
	sbx_buf_puts(&list, "]");
	sbx_buf_puts(&out->meta, ",\"cut_files\":");
	sbx_buf_append(&out->meta, list.data, list.len);
	out->meta.oom |= list.oom;
	sbx_buf_free(&list);
}

static void print_result(grep_run *g, const grep_args *a, bool timed_out, sbx_tool_out *out)
{
	page *pg = &g->pg;
	const grep_stats *st = &g->st;
	bool complete = !pg->truncated && !timed_out && !st->cut && !st->unreadable &&
	                !st->dirs_unreadable && !st->dirs_too_deep;

	if (!pg->total) {
		sbx_buf_printf(&out->text, "No matches found for pattern: %s", a->pattern);
	} else if (!pg->text.len) {
		sbx_buf_printf(&out->text, "No results at offset %lld: the search gave %zu result "
		               "lines.", (long long)a->offset, pg->total);
	} else {
		sbx_buf_append(&out->text, pg->text.data, pg->text.len);
	}
	if (!complete && !pg->truncated && !pg->total)
		sbx_buf_puts(&out->text, " (The search was not complete: see below.)");
	if (pg->overflow)
		sbx_buf_printf(&out->text, "\n\n(Output stopped at %u MiB. Use head_limit and offset "
		               "to page through the rest, or a more specific pattern.)",
		               GREP_MAX_OUTPUT >> 20);
	if ((pg->truncated && !pg->overflow) || a->offset > 0) {
		sbx_buf_puts(&out->text, "\n\n[Showing results with pagination = ");
		if (pg->truncated && !pg->overflow)
			sbx_buf_printf(&out->text, "limit: %lld%s", (long long)a->head_limit,
			               a->offset > 0 ? ", " : "");
		if (a->offset > 0)
			sbx_buf_printf(&out->text, "offset: %lld", (long long)a->offset);
		sbx_buf_puts(&out->text, "]");
	}
	if (timed_out)
		sbx_buf_printf(&out->text, "\n\n(The search stopped after %d seconds; results are "
		               "incomplete. Try a more specific path or pattern.)",
		               GREP_TIMEOUT_MS / 1000);
	print_gaps(g, out);
	sbx_tool_meta_int(out, "files", (int64_t)st->files);
	if (a->opts.mode != SBX_GREP_FILES)
		sbx_tool_meta_int(out, "matches", (int64_t)st->matches);
	sbx_tool_meta_int(out, "searched", (int64_t)st->searched);
	sbx_tool_meta_bool(out, "truncated", pg->truncated);
	sbx_tool_meta_bool(out, "complete", complete);
	sbx_tool_meta_int(out, "skipped_binary", (int64_t)st->binary);
	sbx_tool_meta_int(out, "skipped_large", (int64_t)st->large);
	sbx_tool_meta_int(out, "unreadable", (int64_t)st->unreadable);
	sbx_tool_meta_int(out, "unreadable_dirs", (int64_t)st->dirs_unreadable);
	sbx_tool_meta_int(out, "too_deep_dirs", (int64_t)st->dirs_too_deep);
	if (st->engine_errors)
		sbx_tool_meta_int(out, "engine_errors", (int64_t)st->engine_errors);
	meta_cuts(g, out);
}

/* The model named a regular file: it is searched whatever the filters and .gitignore say. */
static int grep_one_file(grep_run *g, int fd, const char *rel)
{
	bool beyond;
	sbx_grep_limits lim = limits_now(g, &beyond);
	file_slot *s;
	int r = add_slot(g, rel, &s);

	if (r < 0) {
		close(fd);
		return r;
	}
	r = search_file(&g->inline_worker, fd, s, true, &lim);
	mark_done(g, s);
	consume_ready(g);
	return r;
}

static int grep_tree(grep_run *g, const char *rel, bool *timed_out)
{
	sbx_walk w = { .root_fd = g->ctx->root_fd, .base = rel, .gitignore = true,
	               .deadline_ms = g->deadline_ms, .want_dir = grep_want_dir,
	               .on_file = grep_on_file, .relieve_fds = relieve_fds, .ud = g };
	int r = start_workers(g, worker_count());

	if (r == 0)
		r = sbx_walk_run(&w);
	if (g->nworkers)
		flush_jobs(g);   /* an error it reports is in g->error */
	stop_workers(g);
	if (r == 0 && g->error)   /* the message was set in the worker's thread */
		r = sbx_fail(g->error, "out of memory");
	if (r == 0)
		drain(g);
	*timed_out = w.timed_out;
	g->st.dirs_unreadable = w.dirs_unreadable;
	g->st.dirs_too_deep = w.dirs_too_deep;
	if (w.fd_exhausted && !g->fd_exhausted)
		g->fd_exhausted = w.fd_exhausted;
	return r;
}

/* File descriptors ran out and giving back our own did not help: an error, not a partial
 * answer that would look like "no matches". */
static int fds_exhausted_error(grep_run *g, sbx_tool_out *out)
{
	struct rlimit rl = { 0 };

	getrlimit(RLIMIT_NOFILE, &rl);
	return sbx_tool_error(out, "Error: Grep ran out of file descriptors (%s) after searching "
	                      "%zu files, with none of its own left open to close, so it cannot "
	                      "search the rest. The host process may open %llu files at once; "
	                      "close some or raise that limit, then search again (a narrower path "
	                      "needs fewer).", strerror(g->fd_exhausted), g->st.searched,
	                      (unsigned long long)rl.rlim_cur);
}

/* Opens what path names, for reading, without following a final symlink. Returns the fd, or
 * -1 after writing a tool error, or a negative code below -1 for out of memory. */
static int open_target(sbx_tool_ctx *ctx, const char *rel, const char *path, struct stat *st,
                       sbx_tool_out *out)
{
	int fd = sbx_path_open(ctx->root_fd, rel,
	                       O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0);
	const char *shown = path && *path ? path : ".";

	if (fd == -SBX_ENOMEM)
		return fd;
	if (fd == -SBX_ENOENT || fd == -SBX_ENOTDIR)
		return sbx_tool_error(out, "Error: Path does not exist: %s", shown), -1;
	if (fd == -SBX_ELOOP)
		return sbx_tool_error(out, "Error: Path is a symbolic link, which Grep does not "
		                      "follow: %s", shown), -1;
	if (fd < 0)
		return sbx_tool_error(out, "Error: %s", sbx_last_error()), -1;
	if (fstat(fd, st) < 0 || (!S_ISDIR(st->st_mode) && !S_ISREG(st->st_mode))) {
		close(fd);
		return sbx_tool_error(out, "Error: Path is neither a file nor a directory: %s",
		                      shown), -1;
	}
	return fd;
}

static int grep_run_tool(sbx_tool_ctx *ctx, const sbx_json *args, sbx_tool_out *out)
{
	grep_args a = { 0 };
	_cleanup_free_ char *rel = NULL;
	sbx_grep_regex *re = NULL;
	sbx_grep_filter *filter = NULL;
	grep_run g = { .ctx = ctx, .lock = PTHREAD_MUTEX_INITIALIZER,
	               .not_empty = PTHREAD_COND_INITIALIZER, .not_full = PTHREAD_COND_INITIALIZER,
	               .fds_closed = PTHREAD_COND_INITIALIZER, .open_cap = SIZE_MAX,
	               .deadline_ms = sbx_now_ms() + GREP_TIMEOUT_MS };
	bool timed_out = false;
	struct stat st;
	int r, fd;

	if (ctx->root_fd < 0)
		return sbx_tool_error(out, "Error: Grep needs the workspace's files on this host, and "
		                      "this backend keeps them elsewhere. Use Bash (grep) instead.");
	if (read_args(args, &a, out))
		return 0;
	r = sbx_tool_resolve_search_path(ctx, a.path, &rel, out);
	if (r != 0)
		return r < 0 ? r : 0;
	r = sbx_grep_regex_compile(a.pattern, strlen(a.pattern), &a.opts, &re);
	if (r == 0)
		r = sbx_grep_filter_new(a.glob, a.type, &filter);
	if (r == -SBX_EINVAL)
		r = sbx_tool_error(out, "Error: %s", sbx_last_error());
	if (r != 0 || !out->ok)
		goto done;
	fd = open_target(ctx, rel, a.path, &st, out);
	if (fd < -1)
		r = fd;
	if (fd < 0)
		goto done;

	g.re = re;
	g.filter = filter;
	g.mode = a.opts.mode;
	g.pg = (page){ .skip = (size_t)a.offset,
	               .take = a.head_limit ? (size_t)a.head_limit : SIZE_MAX,
	               .separate_files = a.opts.before || a.opts.after };
	r = worker_init(&g.inline_worker, &g);
	if (r == 0 && S_ISREG(st.st_mode)) {
		r = grep_one_file(&g, fd, rel);
	} else {
		close(fd);
		if (r == 0)
			r = grep_tree(&g, rel, &timed_out);
	}
	if (r == 0 && g.pg.text.oom)
		r = sbx_fail(-SBX_ENOMEM, "out of memory");
	if (r == 0 && g.fd_exhausted)
		r = fds_exhausted_error(&g, out);
	else if (r == 0)
		print_result(&g, &a, timed_out, out);
	grep_run_free(&g);
done:
	sbx_grep_filter_free(filter);
	sbx_grep_regex_free(re);
	return r;
}

const sbx_tool_def sbx_tool_grep = {
	.name = "Grep",
	.description =
		"A powerful search tool for file contents, with ripgrep's behaviour.\n"
		"Usage:\n"
		"- ALWAYS use Grep for search tasks. NEVER run `grep` or `rg` through Bash: this tool "
		"is faster and its output is made for you\n"
		"- Supports full regular expression syntax (PCRE2, like ripgrep's), e.g. "
		"\"log.*Error\", \"function\\\\s+\\\\w+\"\n"
		"- Filter files with the glob parameter (e.g. \"*.js\", \"**/*.tsx\", \"!vendor/**\") "
		"or the type parameter (e.g. \"js\", \"py\", \"rust\")\n"
		"- Output modes: \"content\" shows matching lines, \"files_with_matches\" shows only "
		"file paths (the default), \"count\" shows the number of matching lines per file\n"
		"- Literal braces need escaping in the pattern (use `interface\\\\{\\\\}` to find "
		"`interface{}` in Go code)\n"
		"- Patterns match within single lines by default. For patterns that span lines, like "
		"`struct \\\\{[\\\\s\\\\S]*?field`, use multiline: true\n"
		"- Results list absolute paths in path order and stop at 250 lines or entries unless "
		"head_limit says otherwise (page further with offset). Files excluded by .gitignore, "
		"binary files, files over 64 MiB and version-control folders are not searched, "
		"symbolic links are not followed, and lines over 500 characters are replaced by a "
		"note\n"
		"- Searches the current working directory (where the Bash tool's commands run now) "
		"unless path names another file or directory\n"
		"- For an open-ended search that may take several rounds, batch the Glob and Grep "
		"calls you need in one response",
	.input_schema =
		"{\"type\":\"object\","
		"\"properties\":{"
		"\"pattern\":{\"type\":\"string\",\"description\":\"The regular expression pattern to "
		"search for in file contents\"},"
		"\"path\":{\"type\":\"string\",\"description\":\"File or directory to search in (rg "
		"PATH). Defaults to the current working directory (where the Bash tool's commands "
		"run now; the workspace root at first). An absolute path under the workspace root, "
		"or a path relative to the root\"},"
		"\"glob\":{\"type\":\"string\",\"description\":\"Glob pattern to filter files (e.g. "
		"\\\"*.js\\\", \\\"*.{ts,tsx}\\\"; \\\"!pattern\\\" excludes) - maps to rg --glob\"},"
		"\"output_mode\":{\"type\":\"string\",\"enum\":[\"content\",\"files_with_matches\","
		"\"count\"],\"description\":\"Output mode: \\\"content\\\" shows matching lines "
		"(supports -A/-B/-C context, -n line numbers, head_limit), \\\"files_with_matches\\\" "
		"shows file paths (supports head_limit), \\\"count\\\" shows match counts (supports "
		"head_limit). Defaults to \\\"files_with_matches\\\".\"},"
		"\"-B\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"Number of lines to show "
		"before each match (rg -B). Requires output_mode: \\\"content\\\", ignored "
		"otherwise.\"},"
		"\"-A\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"Number of lines to show "
		"after each match (rg -A). Requires output_mode: \\\"content\\\", ignored "
		"otherwise.\"},"
		"\"-C\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"Number of lines to show "
		"before and after each match (rg -C). Requires output_mode: \\\"content\\\", ignored "
		"otherwise.\"},"
		"\"context\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"Same as -C; takes "
		"precedence over -C, -A and -B. Requires output_mode: \\\"content\\\".\"},"
		"\"-n\":{\"type\":\"boolean\",\"description\":\"Show line numbers in output (rg -n). "
		"Requires output_mode: \\\"content\\\", ignored otherwise. Defaults to true.\"},"
		"\"-i\":{\"type\":\"boolean\",\"description\":\"Case insensitive search (rg -i)\"},"
		"\"type\":{\"type\":\"string\",\"description\":\"File type to search (rg --type): "
		"one of c, cmake, cpp, cs, css, dart, docker, elixir, erlang, go, haskell, html, java, "
		"js, json, kotlin, lua, make, md, meson, perl, php, proto, py, r, rb, rust, scala, sh, "
		"sql, swift, toml, ts, txt, xml, yaml. More efficient than glob for standard file "
		"types.\"},"
		"\"head_limit\":{\"type\":\"integer\",\"description\":\"Limit output to the first N "
		"lines/entries, like \\\"| head -N\\\". Works in every output mode. Defaults to 250; "
		"0 means unlimited.\"},"
		"\"offset\":{\"type\":\"integer\",\"description\":\"Skip the first N lines/entries "
		"before applying head_limit, like \\\"| tail -n +N | head -N\\\". Defaults to 0.\"},"
		"\"multiline\":{\"type\":\"boolean\",\"description\":\"Enable multiline mode where . "
		"matches newlines and patterns can span lines (rg -U --multiline-dotall). Default: "
		"false.\"}"
		"},"
		"\"required\":[\"pattern\"],"
		"\"additionalProperties\":false}",
	.cls = "read",
	.run = grep_run_tool,
	/* One name per option for models: Claude Code's. The reference (AgentScope) spells them
	 * "i" (with "case_insensitive") and "n"; calls that do still work. */
	.aliases = (const char *const[]){ "i", "-i", "case_insensitive", "-i", "n", "-n", NULL },
};
