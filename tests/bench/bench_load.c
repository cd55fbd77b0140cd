/* A fresh process that loads the library and nothing else: `bench_load LIB` dlopens LIB
 * (RTLD_NOW, as a binding does) and exits; without an argument it only starts and exits, the
 * floor a process start costs. With BENCH_LOAD_COUNT=1 in the environment it prints how many
 * shared objects the process has mapped once LIB is loaded. bench_exec times it as a whole
 * process, beside `agentsbx version`. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Distinct files ending in ".so" or holding ".so." among the process's mappings. */
static int count_shared_objects(void)
{
	char line[4096], last[4096] = "";
	FILE *maps = fopen("/proc/self/maps", "r");
	int n = 0;

	if (!maps)
		return -1;
	while (fgets(line, sizeof line, maps)) {
		char *path = strchr(line, '/');

		if (!path)
			continue;
		path[strcspn(path, "\n")] = '\0';
		if (!strstr(path, ".so") || strcmp(path, last) == 0)
			continue;
		snprintf(last, sizeof last, "%s", path);
		n++;
	}
	fclose(maps);
	return n;
}

int main(int argc, char **argv)
{
	const char *count = getenv("BENCH_LOAD_COUNT");

	if (argc > 1 && !dlopen(argv[1], RTLD_NOW)) {
		fprintf(stderr, "bench-load: %s\n", dlerror());
		return 1;
	}
	if (count && strcmp(count, "1") == 0)
		printf("%d\n", count_shared_objects());
	return 0;
}
