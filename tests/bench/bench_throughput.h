/* Throughput of warm execs: commands per second with N threads, as a ratio to N threads doing
 * bare posix_spawn + wait in the same run (bench_throughput.c). bench-exec calls it for its
 * RESULT line; bench-throughput (bench_throughput_main.c) runs it alone. */
#ifndef SBX_BENCH_THROUGHPUT_H
#define SBX_BENCH_THROUGHPUT_H

/* Ratios of sbx_exec's commands per second to bare spawns' with as many threads; -1 where a
 * row could not run. */
struct bench_tput {
	double tput1, tput2, tput8, tput32;   /* 1, 2, 8, 32 threads in one ns workspace */
	double tput32ws;                      /* 32 threads, each in a workspace of its own */
};

/* Runs every row `rounds` times, the sbx_exec and the bare side of a row interleaved, and
 * prints a table of medians. Returns 0, or -1 when no ns workspace could be opened. */
int bench_throughput(int rounds, struct bench_tput *out);

#endif
