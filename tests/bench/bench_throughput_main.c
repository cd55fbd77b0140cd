/* bench-throughput: the throughput table alone (bench_throughput.c); the argument is the
 * number of rounds. Ends with the RESULT line the benchmarks share. */
#include <stdio.h>
#include <stdlib.h>

#include "bench_throughput.h"

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 15;
	struct bench_tput t;

	if (rounds < 1 || rounds > 10000)
		return 2;
	if (bench_throughput(rounds, &t) < 0)
		return 1;
	printf("\ntarget: >= 0.8x bare spawns at 8 and 32 threads\n");
	printf("RESULT tput1=%.2f tput2=%.2f tput8=%.2f tput32=%.2f tput32ws=%.2f\n", t.tput1,
	       t.tput2, t.tput8, t.tput32, t.tput32ws);
	return 0;
}
