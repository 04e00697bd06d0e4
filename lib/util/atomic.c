/*
 * atomic.c - files replaced whole: a temporary file beside the target,
 * flushed to disk and renamed over it, then the directory flushed, so a
 * reader or a crash sees the old file or the new one and never part of one.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "hetpool/util.h"
#include "util/banned.h"

/* Names tried for the temporary before giving up: enough for every thread
 * of a process writing the same file at once, and stale files left by a
 * killed process that had the same id. */
#define TMP_TRIES 1000

static int cannot_write(struct hp_error *err, int code, const char *path, int e)
{
	return hp_error_set(err, code, "cannot write '%s': %s", path,
			    strerror(e ? e : EIO));
}

/* Close and remove the temporary, whatever state it is in. */
static void discard(struct hp_atomic_file *af)
{
	if (af->fd >= 0)
		close(af->fd);
	if (af->tmp[0])
		unlink(af->tmp);
	af->fd = -1;
	af->tmp[0] = '\0';
}

/* Make the rename itself durable: flush the directory holding path.  Best
 * effort: the file is in place either way. */
static void sync_dir(const char *path)
{
	char dir[sizeof(((struct hp_atomic_file *)0)->path)];
	const char *slash = strrchr(path, '/');
	int fd;

	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		(void)fsync(fd);
		close(fd);
	}
}

int hp_atomic_open(struct hp_atomic_file *af, const char *path, int mode,
		   struct hp_error *err)
{
	int e = 0;

	af->fd = -1;
	af->path[0] = af->tmp[0] = '\0';
	if (!path || !*path)
		return hp_error_set(err, HP_EINVAL, "no file name to write");
	if (strlen(path) >= sizeof(af->path)) /* its start, and the reason */
		return hp_error_set(err, HP_EINVAL,
				    "cannot write '%.80s...': %s", path,
				    strerror(ENAMETOOLONG));
	snprintf(af->path, sizeof(af->path), "%s", path);
	/* Beside the target, since a rename cannot cross file systems; O_EXCL
	 * makes the name this call's alone, so the next one is tried when
	 * another writer holds it (no counter shared between threads). */
	for (int n = 0; n < TMP_TRIES; n++) {
		snprintf(af->tmp, sizeof(af->tmp), "%s.tmp.%ld.%d", path,
			 (long)getpid(), n);
		af->fd = open(af->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
			      mode);
		if (af->fd >= 0)
			return 0;
		if ((e = errno) != EEXIST)
			break;
	}
	af->tmp[0] = '\0';
	return cannot_write(err, HP_EIO, path, e);
}

int hp_atomic_write(struct hp_atomic_file *af, const void *data, size_t len,
		    struct hp_error *err)
{
	const char *p = data;

	if (af->fd < 0)
		return cannot_write(err, HP_EINVAL, af->path, EBADF);
	while (len > 0) {
		ssize_t w = write(af->fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int e = w < 0 ? errno : EIO;
			discard(af);
			return cannot_write(err, HP_EIO, af->path, e);
		}
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

int hp_atomic_commit(struct hp_atomic_file *af, struct hp_error *err)
{
	int e = 0;

	if (af->fd < 0 || !af->tmp[0]) {
		discard(af);
		return cannot_write(err, HP_EINVAL, af->path, EBADF);
	}
	if (fsync(af->fd))
		e = errno;
	if (close(af->fd) && !e)
		e = errno;
	af->fd = -1;
	if (!e && rename(af->tmp, af->path))
		e = errno;
	if (e) {
		discard(af);
		return cannot_write(err, HP_EIO, af->path, e);
	}
	af->tmp[0] = '\0';
	sync_dir(af->path);
	return 0;
}

void hp_atomic_abort(struct hp_atomic_file *af)
{
	discard(af);
}

int hp_write_file_atomic(const char *path, const void *data, size_t len,
			 int mode, struct hp_error *err)
{
	struct hp_atomic_file af;
	int rc;

	if ((rc = hp_atomic_open(&af, path, mode, err)) ||
	    (rc = hp_atomic_write(&af, data, len, err)))
		return rc;
	return hp_atomic_commit(&af, err);
}
