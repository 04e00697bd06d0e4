/* buf.c - the growable, capped, NUL-terminated buffer and file reading. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hetpool/util.h"
#include "util/banned.h"

void hp_buf_init(struct hp_buf *b, size_t cap)
{
	b->data = NULL;
	b->len = 0;
	b->alloc = 0;
	b->cap = cap;
}

void hp_buf_release(struct hp_buf *b)
{
	free(b->data);
	hp_buf_init(b, b->cap);
}

void hp_buf_reset(struct hp_buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

static int grow(struct hp_buf *b, size_t need)
{
	size_t want;
	char *p;

	if (need > b->cap)
		return HP_ETOOBIG;
	if (need + 1 <= b->alloc)
		return 0;
	want = b->alloc ? b->alloc : 64;
	while (want < need + 1)
		want *= 2;
	if (want > b->cap + 1)
		want = b->cap + 1;
	p = realloc(b->data, want);
	if (!p)
		return HP_ENOMEM;
	b->data = p;
	b->alloc = want;
	return 0;
}

int hp_buf_add(struct hp_buf *b, const void *p, size_t n)
{
	int rc;

	if (n > b->cap || b->len > b->cap - n)
		return HP_ETOOBIG;
	rc = grow(b, b->len + n);
	if (rc)
		return rc;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

int hp_buf_adds(struct hp_buf *b, const char *s)
{
	return hp_buf_add(b, s, strlen(s));
}

int hp_buf_vprintf(struct hp_buf *b, const char *fmt, va_list ap)
{
	va_list ap2;
	int n, rc;

	va_copy(ap2, ap);
	n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n < 0)
		return HP_EINVAL;
	if ((size_t)n > b->cap || b->len > b->cap - (size_t)n)
		return HP_ETOOBIG;
	rc = grow(b, b->len + (size_t)n);
	if (rc)
		return rc;
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
	return 0;
}

int hp_buf_printf(struct hp_buf *b, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = hp_buf_vprintf(b, fmt, ap);
	va_end(ap);
	return rc;
}

const char *hp_buf_str(const struct hp_buf *b)
{
	return b->data ? b->data : "";
}

char *hp_buf_detach(struct hp_buf *b)
{
	char *p = b->data;

	if (!p)
		p = calloc(1, 1);
	hp_buf_init(b, b->cap);
	return p;
}

int hp_read_file(const char *path, size_t max_bytes, char **out, size_t *len,
		 struct hp_error *err)
{
	struct stat st;
	FILE *f;
	int fd;
	char *p;
	size_t n;

	*out = NULL;
	*len = 0;
	/* O_NONBLOCK: a FIFO must not block before it is refused below. */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	f = fd >= 0 ? fdopen(fd, "rb") : NULL;
	if (fd >= 0 && !f)
		close(fd);
	/* a path that cannot name a file (a symlink loop, a file taken for
	 * a folder, too long) is the caller's bad input, as a missing one */
	if (!f)
		return hp_error_set(err,
				    errno == ENOENT ? HP_ENOENT
				    : errno == EACCES || errno == ELOOP ||
					    errno == ENOTDIR ||
					    errno == ENAMETOOLONG
					? HP_EINVAL
					: HP_EIO,
				    "cannot open: %s", strerror(errno));
	if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
		fclose(f);
		return hp_error_set(err, HP_EINVAL, "not a regular file");
	}
	if ((uintmax_t)st.st_size > max_bytes) {
		fclose(f);
		return hp_error_set(
		    err, HP_ETOOBIG,
		    "file is %lld bytes, more than the limit of "
		    "%zu",
		    (long long)st.st_size, max_bytes);
	}
	p = malloc((size_t)st.st_size + 1);
	if (!p) {
		fclose(f);
		return hp_error_set(err, HP_ENOMEM, "out of memory reading");
	}
	n = fread(p, 1, (size_t)st.st_size, f);
	if (ferror(f)) {
		free(p);
		fclose(f);
		return hp_error_set(err, HP_EIO, "read error");
	}
	fclose(f);
	p[n] = '\0';
	*out = p;
	*len = n;
	return 0;
}

int hp_mkdirs(const char *path, int mode, struct hp_error *err)
{
	char buf[4096];
	size_t n = strlen(path);
	int e;

	if (n == 0 || n >= sizeof(buf)) {
		errno = ENAMETOOLONG;
		return hp_error_set(err, HP_ERANGE,
				    n ? "path too long" : "empty path");
	}
	memcpy(buf, path, n + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, (mode_t)mode) && errno != EEXIST)
			goto fail;
		*p = '/';
	}
	if (mkdir(buf, (mode_t)mode) && errno != EEXIST)
		goto fail;
	return 0;
fail:
	e = errno;
	hp_error_set(err, HP_EIO, "cannot make folder '%s': %s", buf,
		     strerror(e));
	errno = e;
	return HP_EIO;
}
