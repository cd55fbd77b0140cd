/* Helpers shared by the Check test programs. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support.h"

char *test_mkdtemp(void)
{
	const char *tmp = getenv("TMPDIR");
	char *path = NULL;

	if (asprintf(&path, "%s/sbx-test-XXXXXX", tmp && *tmp ? tmp : "/tmp") < 0)
		abort();
	if (!mkdtemp(path))
		abort();
	return path;
}

void test_rm_rf(const char *path)
{
	char *cmd = NULL;

	if (!path || !*path || strcmp(path, "/") == 0)
		return;
	if (asprintf(&cmd, "rm -rf -- '%s'", path) < 0)
		abort();
	if (system(cmd) != 0)
		fprintf(stderr, "warning: %s failed\n", cmd);
	free(cmd);
}

bool test_process_exists(const char *fragment)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	bool found = false;
	char self[32];

	snprintf(self, sizeof self, "%d", (int)getpid());
	while (d && (e = readdir(d)) && !found) {
		char path[300], buf[4096];
		ssize_t n;
		int fd;

		if (e->d_name[0] < '0' || e->d_name[0] > '9' || strcmp(e->d_name, self) == 0)
			continue;
		snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		n = read(fd, buf, sizeof buf - 1);
		close(fd);
		if (n <= 0)
			continue;
		for (ssize_t i = 0; i < n; i++)
			if (buf[i] == '\0')
				buf[i] = ' ';
		buf[n] = '\0';
		if (strstr(buf, fragment))
			found = true;
	}
	if (d)
		closedir(d);
	return found;
}

int test_run_suite(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
