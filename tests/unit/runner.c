/*
 * runner.c - runs every registered test in its own forked process, with a
 * time limit, and ends with the lines "unit: N skipped" (tests that cannot
 * run on this machine, HP_SKIP) and "unit: N passed, N failed".
 *
 * Each test gets a folder of its own for its files (hp_test_tmpdir()),
 * removed after it ends, pass or fail.
 *
 * Usage: hp_unit [-l] [SUBSTRING...]   (-l lists the tests)
 */
#define _XOPEN_SOURCE 700 /* nftw() */
#include <ftw.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

#define MAX_TESTS 4096

struct entry {
	const char *name;
	hp_test_fn fn;
	double seconds; /* wall time of its run, for the slowest list */
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

/* The running test's folder (made before the fork, removed after). */
static char test_dir[4096];

const char *hp_test_tmpdir(const char *prefix)
{
	static char buf[32][4200];
	static int k;
	char *b;

	if (k == 32)
		HP_FAIL("more than 32 folders for one test");
	b = buf[k++];
	snprintf(b, sizeof(buf[0]), "%s/%sXXXXXX", test_dir, prefix);
	if (!test_dir[0] || !mkdtemp(b))
		HP_FAIL("cannot make a folder '%s' for the test", b);
	return b;
}

static int rm_entry(const char *path, const struct stat *st, int flag,
		    struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

static int cmp(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->name,
		      ((const struct entry *)b)->name);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int by_seconds(const void *a, const void *b)
{
	double x = (*(const struct entry *const *)a)->seconds;
	double y = (*(const struct entry *const *)b)->seconds;
	return (x < y) - (x > y);
}

/* The slowest tests and the total, where the suite's time goes. */
static void print_slowest(int n)
{
	static struct entry *order[MAX_TESTS];
	double total = 0;
	int m = 0;

	for (int i = 0; i < ntests; i++)
		if (tests[i].seconds > 0) {
			order[m++] = &tests[i];
			total += tests[i].seconds;
		}
	qsort(order, (size_t)m, sizeof(order[0]), by_seconds);
	printf("unit: %.0f s in %d tests; the slowest:", total, m);
	for (int i = 0; i < m && i < n; i++)
		printf(" %s %.1f s%s", order[i]->name, order[i]->seconds,
		       i + 1 < m && i + 1 < n ? "," : "");
	printf("\n");
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
		{
			const char *t = getenv("TMPDIR");
			snprintf(test_dir, sizeof(test_dir),
				 "%s/hp_unit.XXXXXX", t && t[0] ? t : "/tmp");
			if (!mkdtemp(test_dir))
				test_dir[0] = '\0'; /* hp_test_tmpdir() fails */
		}
		fflush(stdout);
		double t0 = now_s();
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
		tests[i].seconds = now_s() - t0;
		if (test_dir[0])
			nftw(test_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
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
		print_slowest(12);
		printf("unit: %d skipped\n", skipped);
		printf("unit: %d passed, %d failed\n", passed, failed);
	}
	return failed ? 1 : 0;
}
