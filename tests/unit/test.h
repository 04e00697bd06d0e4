/*
 * test.h - the in-tree test runner (after libuv's test/task.h): tests
 * register themselves with HP_TEST(), the runner forks one process per
 * test, and a failed check prints file:line and ends that process.
 */
#ifndef HP_TEST_H
#define HP_TEST_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef void (*hp_test_fn)(void);
void hp_test_register(const char *name, hp_test_fn fn);

#define HP_TEST(name)                                                          \
	static void test_##name(void);                                         \
	__attribute__((constructor)) static void register_##name(void)         \
	{                                                                      \
		hp_test_register(#name, test_##name);                          \
	}                                                                      \
	static void test_##name(void)

#define HP_FAIL(...)                                                           \
	do {                                                                   \
		fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                \
		fprintf(stderr, __VA_ARGS__);                                  \
		fprintf(stderr, "\n");                                         \
		exit(1);                                                       \
	} while (0)

/* Exit status of a test that cannot run here (no GPU, no driver). */
#define HP_TEST_SKIP_STATUS 77

/* The test cannot run on this machine: say why and stop; the runner counts
 * it as skipped, never as passed. */
#define HP_SKIP(...)                                                           \
	do {                                                                   \
		printf("SKIP ");                                               \
		printf(__VA_ARGS__);                                           \
		printf("\n");                                                  \
		fflush(stdout);                                                \
		_exit(HP_TEST_SKIP_STATUS);                                    \
	} while (0)

#define ASSERT(expr)                                                           \
	do {                                                                   \
		if (!(expr))                                                   \
			HP_FAIL("assertion failed: %s", #expr);                \
	} while (0)

#define ASSERT_EQ_INT(a, b)                                                    \
	do {                                                                   \
		long long va_ = (long long)(a), vb_ = (long long)(b);          \
		if (va_ != vb_)                                                \
			HP_FAIL("%s == %lld, expected %s == %lld", #a, va_,    \
				#b, vb_);                                      \
	} while (0)

#define ASSERT_STR_EQ(a, b)                                                    \
	do {                                                                   \
		const char *sa_ = (a), *sb_ = (b);                             \
		if (!sa_ || !sb_ || strcmp(sa_, sb_) != 0)                     \
			HP_FAIL("%s == \"%s\", expected \"%s\"", #a,           \
				sa_ ? sa_ : "(null)", sb_ ? sb_ : "(null)");   \
	} while (0)

/* |a - b| <= tol * max(1, |b|) */
#define ASSERT_NEAR(a, b, tol)                                                 \
	do {                                                                   \
		double va_ = (double)(a), vb_ = (double)(b);                   \
		double sc_ = fabs(vb_) > 1 ? fabs(vb_) : 1;                    \
		if (!(fabs(va_ - vb_) <= (tol)*sc_))                           \
			HP_FAIL("%s == %.9g, expected %.9g (tol %g)", #a, va_, \
				vb_, (double)(tol));                           \
	} while (0)

/* A new folder for this test: PREFIX and six random characters, under
 * the folder the runner made for the test (in $TMPDIR, else /tmp), which
 * it removes when the test's process ends, however it ends.  Up to 32 a
 * test; each path stays good for the test's life. */
const char *hp_test_tmpdir(const char *prefix);

/* Path of a file in the source tree. */
const char *hp_test_path(const char *rel);
/* Path of the shared/ folder beside the checkout, or NULL if absent. */
const char *hp_test_shared(const char *rel);

#endif
