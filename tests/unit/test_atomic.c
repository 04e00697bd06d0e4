/*
 * test_atomic.c - lib/util/atomic.c: files replaced whole through a
 * temporary beside them.  Each test works in a fresh directory and checks
 * what is left in it: the target with the old or the new contents, and
 * never a temporary.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hetpool/util.h"
#include "test.h"

/* The entries of dir, "." and ".." aside. */
static int entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	ASSERT(d);
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

/* The whole file (static storage), or NULL when it cannot be read. */
static const char *contents(const char *path)
{
	static char buf[1 << 16];
	FILE *f = fopen(path, "rb");
	size_t n;

	if (!f)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return buf;
}

static void remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char p[4200];

	while (d && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
			if (unlink(p))
				remove_dir(p);
		}
	if (d)
		closedir(d);
	rmdir(dir);
}

HP_TEST(atomic_writes_and_replaces)
{
	const char *dir = hp_test_tmpdir("hp-atomic-");
	char path[4096];
	struct hp_error err = {0};
	struct hp_atomic_file af;
	struct stat st;
	char tmp[sizeof(af.tmp)];

	snprintf(path, sizeof(path), "%s/out.json", dir);
	ASSERT_EQ_INT(hp_write_file_atomic(path, "old\n", 4, 0644, &err), 0);
	ASSERT_STR_EQ(contents(path), "old\n");
	ASSERT_EQ_INT(entries(dir), 1);

	/* until the commit the target keeps its old contents, the new ones
	 * wait in a temporary beside it */
	ASSERT_EQ_INT(hp_atomic_open(&af, path, 0600, &err), 0);
	ASSERT(af.fd >= 0);
	ASSERT(!strncmp(af.tmp, path, strlen(path)));
	ASSERT_EQ_INT(hp_atomic_write(&af, "new ", 4, &err), 0);
	ASSERT_EQ_INT(hp_atomic_write(&af, "contents\n", 9, &err), 0);
	ASSERT_STR_EQ(contents(path), "old\n");
	ASSERT_STR_EQ(contents(af.tmp), "new contents\n");
	ASSERT_EQ_INT(entries(dir), 2);
	snprintf(tmp, sizeof(tmp), "%s", af.tmp);
	ASSERT_EQ_INT(hp_atomic_commit(&af, &err), 0);
	ASSERT_STR_EQ(contents(path), "new contents\n");
	ASSERT(access(tmp, F_OK) != 0);
	ASSERT_EQ_INT(entries(dir), 1);
	ASSERT(af.fd < 0 && !af.tmp[0]);
	/* the mode is the one asked for (0600 passes any umask) */
	ASSERT(stat(path, &st) == 0);
	ASSERT_EQ_INT(st.st_mode & 07777, 0600);
	/* an empty file is a file too */
	ASSERT_EQ_INT(hp_write_file_atomic(path, "", 0, 0644, &err), 0);
	ASSERT_STR_EQ(contents(path), "");
	ASSERT_EQ_INT(entries(dir), 1);
	remove_dir(dir);
}

/* The mode goes through the umask as open(2)'s does. */
HP_TEST(atomic_mode_follows_umask)
{
	const char *dir = hp_test_tmpdir("hp-atomic-");
	char path[4096];
	struct hp_error err = {0};
	struct stat st;

	snprintf(path, sizeof(path), "%s/run.sh", dir);
	umask(027);
	ASSERT_EQ_INT(hp_write_file_atomic(path, "#!/bin/sh\n", 10, 0755, &err),
		      0);
	ASSERT(stat(path, &st) == 0);
	ASSERT_EQ_INT(st.st_mode & 07777, 0750);
	remove_dir(dir);
}

/* A path whose parent is a regular file: refused at the open (root may
 * write into a read-only directory, but not into a file), with the path
 * and the system's reason, and nothing is created. */
HP_TEST(atomic_open_failure_names_path_and_reason)
{
	const char *dir = hp_test_tmpdir("hp-atomic-");
	char parent[4096], path[4200], msg[4400];
	struct hp_error err = {0};
	struct hp_atomic_file af;
	char *huge;

	snprintf(parent, sizeof(parent), "%s/file", dir);
	ASSERT_EQ_INT(hp_write_file_atomic(parent, "x", 1, 0644, &err), 0);
	snprintf(path, sizeof(path), "%s/out.json", parent);
	ASSERT_EQ_INT(hp_atomic_open(&af, path, 0644, &err), HP_EIO);
	snprintf(msg, sizeof(msg), "cannot write '%s': Not a directory", path);
	ASSERT_STR_EQ(err.msg, msg);
	ASSERT(af.fd < 0 && !af.tmp[0]);
	hp_atomic_abort(&af); /* harmless after a failure */
	ASSERT_EQ_INT(hp_write_file_atomic(path, "y", 1, 0644, &err), HP_EIO);
	ASSERT_STR_EQ(err.msg, msg);
	ASSERT_STR_EQ(contents(parent), "x");
	ASSERT_EQ_INT(entries(dir), 1);

	snprintf(path, sizeof(path), "%s/no/out.json", dir);
	ASSERT_EQ_INT(hp_atomic_open(&af, path, 0644, &err), HP_EIO);
	ASSERT(strstr(err.msg, "No such file or directory"));
	ASSERT_EQ_INT(entries(dir), 1);

	ASSERT_EQ_INT(hp_atomic_open(&af, "", 0644, &err), HP_EINVAL);
	ASSERT_STR_EQ(err.msg, "no file name to write");
	ASSERT((huge = malloc(5000)));
	memset(huge, 'a', 4999);
	huge[4999] = '\0';
	ASSERT_EQ_INT(hp_atomic_open(&af, huge, 0644, &err), HP_EINVAL);
	ASSERT(!strncmp(err.msg, "cannot write 'aaa", 17));
	ASSERT(strstr(err.msg, "...': File name too long"));
	free(huge);
	remove_dir(dir);
}

/* A rename that fails (the target is a directory) and a write that fails
 * (past the file size limit) leave the target as it was and remove the
 * temporary. */
HP_TEST(atomic_failure_leaves_target_unchanged)
{
	const char *dir = hp_test_tmpdir("hp-atomic-");
	char path[4096], sub[4096], msg[4300];
	struct hp_error err = {0};
	struct hp_atomic_file af;
	struct rlimit rl = {.rlim_cur = 16, .rlim_max = RLIM_INFINITY};
	char big[64];

	snprintf(sub, sizeof(sub), "%s/taken", dir);
	ASSERT(mkdir(sub, 0755) == 0);
	snprintf(path, sizeof(path), "%s/taken/keep", dir);
	ASSERT_EQ_INT(hp_write_file_atomic(path, "kept", 4, 0644, &err), 0);
	ASSERT_EQ_INT(hp_write_file_atomic(sub, "new", 3, 0644, &err), HP_EIO);
	snprintf(msg, sizeof(msg), "cannot write '%s': Is a directory", sub);
	ASSERT_STR_EQ(err.msg, msg);
	ASSERT_STR_EQ(contents(path), "kept");
	ASSERT_EQ_INT(entries(dir), 1);
	ASSERT_EQ_INT(entries(sub), 1);

	/* a write past RLIMIT_FSIZE fails with EFBIG (SIGXFSZ ignored; this
	 * test runs in a process of its own) */
	snprintf(path, sizeof(path), "%s/out", dir);
	ASSERT_EQ_INT(hp_write_file_atomic(path, "old", 3, 0644, &err), 0);
	signal(SIGXFSZ, SIG_IGN);
	ASSERT(setrlimit(RLIMIT_FSIZE, &rl) == 0);
	memset(big, 'b', sizeof(big));
	ASSERT_EQ_INT(hp_atomic_open(&af, path, 0644, &err), 0);
	ASSERT_EQ_INT(hp_atomic_write(&af, big, sizeof(big), &err), HP_EIO);
	snprintf(msg, sizeof(msg), "cannot write '%s': File too large", path);
	ASSERT_STR_EQ(err.msg, msg);
	ASSERT(af.fd < 0 && !af.tmp[0]);
	/* the struct is spent: a commit is refused, an abort does nothing */
	ASSERT_EQ_INT(hp_atomic_commit(&af, &err), HP_EINVAL);
	hp_atomic_abort(&af);
	ASSERT_EQ_INT(hp_write_file_atomic(path, big, sizeof(big), 0644, &err),
		      HP_EIO);
	ASSERT_STR_EQ(contents(path), "old");
	ASSERT_EQ_INT(entries(dir), 2);
	remove_dir(dir);
}

HP_TEST(atomic_abort_leaves_nothing)
{
	const char *dir = hp_test_tmpdir("hp-atomic-");
	char path[4096];
	struct hp_error err = {0};
	struct hp_atomic_file af, other;

	snprintf(path, sizeof(path), "%s/ckpt", dir);
	ASSERT_EQ_INT(hp_atomic_open(&af, path, 0644, &err), 0);
	ASSERT_EQ_INT(hp_atomic_write(&af, "half", 4, &err), 0);
	hp_atomic_abort(&af);
	ASSERT_EQ_INT(entries(dir), 0);
	hp_atomic_abort(&af);

	/* over an existing file: it stays; two writers of one path at once
	 * get temporaries of their own */
	ASSERT_EQ_INT(hp_write_file_atomic(path, "v1", 2, 0644, &err), 0);
	ASSERT_EQ_INT(hp_atomic_open(&af, path, 0644, &err), 0);
	ASSERT_EQ_INT(hp_atomic_open(&other, path, 0644, &err), 0);
	ASSERT(strcmp(af.tmp, other.tmp));
	ASSERT_EQ_INT(hp_atomic_write(&af, "v2", 2, &err), 0);
	ASSERT_EQ_INT(hp_atomic_write(&other, "v3", 2, &err), 0);
	hp_atomic_abort(&af);
	ASSERT_STR_EQ(contents(path), "v1");
	ASSERT_EQ_INT(hp_atomic_commit(&other, &err), 0);
	ASSERT_STR_EQ(contents(path), "v3");
	ASSERT_EQ_INT(entries(dir), 1);
	remove_dir(dir);
}

/* Threads replacing one file at once: each rename is whole, so the file
 * always holds one writer's full contents, and no temporary is left. */
struct writer {
	const char *path;
	int id, failures;
};

static void *write_many(void *ud)
{
	struct writer *w = ud;
	struct hp_error err = {0};
	char text[256];

	for (int i = 0; i < 50; i++) {
		int n =
		    snprintf(text, sizeof(text), "%d:%d:%0200d\n", w->id, i, 0);
		w->failures += hp_write_file_atomic(w->path, text, (size_t)n,
						    0644, &err) != 0;
	}
	return NULL;
}

HP_TEST(atomic_threads_on_one_path)
{
	const char *dir = hp_test_tmpdir("hp-atomic-");
	char path[4096];
	struct writer w[4];
	pthread_t th[4];
	const char *c;
	char want[256];
	int id, i;

	snprintf(path, sizeof(path), "%s/state.json", dir);
	for (int k = 0; k < 4; k++) {
		w[k] = (struct writer){.path = path, .id = k};
		ASSERT(pthread_create(&th[k], NULL, write_many, &w[k]) == 0);
	}
	for (int k = 0; k < 4; k++) {
		ASSERT(pthread_join(th[k], NULL) == 0);
		ASSERT_EQ_INT(w[k].failures, 0);
	}
	/* the last rename is some thread's last write, whole */
	ASSERT((c = contents(path)));
	ASSERT(sscanf(c, "%d:%d:", &id, &i) == 2);
	ASSERT(id >= 0 && id < 4 && i == 49);
	snprintf(want, sizeof(want), "%d:%d:%0200d\n", id, i, 0);
	ASSERT_STR_EQ(c, want);
	ASSERT_EQ_INT(entries(dir), 1);
	remove_dir(dir);
}

/* hp_mkdirs, the one mkdir -p of the project: the folders above are made,
 * one that is there is fine, and a failure names the folder it could not
 * make, with the reason, and leaves mkdir's errno. */
HP_TEST(mkdirs_makes_parents_and_names_failures)
{
	const char *dir = hp_test_tmpdir("hp-mkdirs-");
	struct hp_error err = {0};
	struct stat st;
	char p[1024];

	snprintf(p, sizeof(p), "%s/a/b/c", dir);
	ASSERT_EQ_INT(hp_mkdirs(p, 0750, &err), 0);
	ASSERT(stat(p, &st) == 0 && S_ISDIR(st.st_mode));
	ASSERT_EQ_INT(hp_mkdirs(p, 0750, &err), 0); /* there: fine */
	snprintf(p, sizeof(p), "%s/a/b/c/", dir);   /* a trailing '/' */
	ASSERT_EQ_INT(hp_mkdirs(p, 0750, &err), 0);
	snprintf(p, sizeof(p), "%s/file", dir);
	ASSERT(contents(p) == NULL);
	ASSERT_EQ_INT(hp_write_file_atomic(p, "x", 1, 0644, &err), 0);
	snprintf(p, sizeof(p), "%s/file/under", dir);
	ASSERT_EQ_INT(hp_mkdirs(p, 0750, &err), HP_EIO);
	ASSERT_EQ_INT(errno, ENOTDIR);
	snprintf(p, sizeof(p),
		 "cannot make folder '%s/file/under': Not a "
		 "directory",
		 dir);
	ASSERT_STR_EQ(err.msg, p);
	ASSERT_EQ_INT(hp_mkdirs("", 0750, &err), HP_ERANGE);
	remove_dir(dir);
}
