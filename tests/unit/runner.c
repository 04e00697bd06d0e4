/*
 * runner.c - runs every registered test in its own forked process, with a
 * time limit, and ends with the lines "unit: N skipped" (tests that cannot
 * run on this machine, HP_SKIP) and "unit: N passed, N failed".
 *
 * Usage: hp_unit [-l] [SUBSTRING...]   (-l lists the tests)
 */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

#define MAX_TESTS 4096

struct entry {
	const char *name;
	hp_test_fn fn;
};
static struct entry tests[MAX_TESTS];
static int ntests;

void hp_test_register(const char *name, hp_test_fn fn)
{
	if (ntests < MAX_TESTS)
		tests[ntests++] = (struct entry){name, fn};
}

const char *hp_test_path(const char *rel)
{
	static char buf[8][4096];
	static int k;
	char *b = buf[k++ % 8];
	snprintf(b, sizeof(buf[0]), "%s/%s", HP_SOURCE_DIR, rel);
	return b;
}

const char *hp_test_shared(const char *rel)
{
	static char buf[8][4096];
	static int k;
	char *b = buf[k++ % 8];
	const char *env = getenv("HP_SHARED_DIR");
	if (env)
		snprintf(b, sizeof(buf[0]), "%s/%s", env, rel);
	else
		snprintf(b, sizeof(buf[0]), "%s/../shared/%s", HP_SOURCE_DIR,
			 rel);
	return access(b, R_OK) == 0 ? b : NULL;
}

static int cmp(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->name,
		      ((const struct entry *)b)->name);
}

static bool selected(const char *name, int argc, char **argv)
{
	if (argc == 0)
		return true;
	for (int i = 0; i < argc; i++)
		if (strstr(name, argv[i]))
			return true;
	return false;
}

int main(int argc, char **argv)
{
	int passed = 0, failed = 0, skipped = 0;
	bool list = argc > 1 && strcmp(argv[1], "-l") == 0;
	unsigned limit_s = 300;
	const char *lim = getenv("HP_TEST_TIMEOUT");

	if (lim)
		limit_s = (unsigned)strtoul(lim, NULL, 10);
	if (list) {
		argc--;
		argv++;
	}
	qsort(tests, (size_t)ntests, sizeof(tests[0]), cmp);
	for (int i = 0; i < ntests; i++) {
		if (!selected(tests[i].name, argc - 1, argv + 1))
			continue;
		if (list) {
			printf("%s\n", tests[i].name);
			continue;
		}
		fflush(stdout);
		pid_t pid = fork();
		if (pid < 0) {
			perror("fork");
			return 2;
		}
		if (pid == 0) {
			alarm(limit_s);
			tests[i].fn();
			fflush(NULL);
			_exit(0);
		}
		int st = 0;
		while (waitpid(pid, &st, 0) < 0)
			;
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
			printf("ok   %s\n", tests[i].name);
			passed++;
		} else if (WIFEXITED(st) &&
			   WEXITSTATUS(st) == HP_TEST_SKIP_STATUS) {
			printf("skip %s\n", tests[i].name);
			skipped++;
		} else {
			if (WIFSIGNALED(st))
				printf("FAIL %s (signal %d%s)\n", tests[i].name,
				       WTERMSIG(st),
				       WTERMSIG(st) == SIGALRM ? ", timeout"
							       : "");
			else
				printf("FAIL %s (exit %d)\n", tests[i].name,
				       WEXITSTATUS(st));
			failed++;
		}
	}
	if (!list) {
		printf("unit: %d skipped\n", skipped);
		printf("unit: %d passed, %d failed\n", passed, failed);
	}
	return failed ? 1 : 0;
}
