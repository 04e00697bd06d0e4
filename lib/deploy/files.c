/*
 * files.c - the job directory's plumbing: JSON files replaced atomically
 * (hp_write_file_atomic), folders made, the job's lock, JSON files read
 * with a size cap, file checksums, and the checks on names and paths
 * that come from users and plans.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "deploy/deploy_int.h"
#include "util/banned.h"

int hp__path(char *buf, size_t n, struct hp_error *err, const char *fmt, ...)
{
	va_list ap;
	int k;

	va_start(ap, fmt);
	k = vsnprintf(buf, n, fmt, ap);
	va_end(ap);
	if (k < 0 || (size_t)k >= n)
		return hp_error_set(err, HP_ERANGE, "path too long: '%.80s...'",
				    buf);
	return 0;
}

int hp__write_json(const char *path, const json_t *o, struct hp_error *err)
{
	char *s = json_dumps(o, JSON_INDENT(2) | JSON_SORT_KEYS);
	int rc;

	if (!s)
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	rc = hp_write_file_atomic(path, s, strlen(s), 0644, err);
	free(s);
	return rc;
}

int hp__lock(const char *jobdir, struct hp_error *err)
{
	char path[HP_DEPLOY_PATH_MAX + 32];
	int fd;

	if (hp__path(path, sizeof(path), err, "%s/%s", jobdir, HP_JOB_LOCK))
		return HP_ERANGE;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return hp_error_set(err, HP_EIO, "cannot open '%s': %s", path,
				    strerror(errno));
	while (flock(fd, LOCK_EX)) {
		if (errno != EINTR) {
			int e = errno;
			close(fd);
			return hp_error_set(err, HP_EIO, "cannot lock '%s': %s",
					    path, strerror(e));
		}
	}
	return fd;
}

void hp__unlock(int fd)
{
	if (fd >= 0)
		close(fd);
}

json_t *hp__read_json(const char *path, size_t max, struct hp_error *err)
{
	json_error_t je;
	size_t len;
	char *text;
	json_t *o;

	if (hp_read_file(path, max, &text, &len, err))
		return NULL;
	o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	free(text);
	if (!o)
		hp_error_set(err, HP_EPARSE, "'%s': line %d: %s", path, je.line,
			     je.text);
	return o;
}

int hp__sha256_file(const char *path, char hex[65], int64_t *size,
		    struct hp_error *err)
{
	struct hp__sha256 s;
	char buf[1 << 16];
	int64_t total = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	/* a file the user named that is not there or not theirs to read
	 * is bad input, not an I/O failure */
	if (fd < 0)
		return hp_error_set(err,
				    errno == EACCES || errno == ENOENT ||
					    errno == ELOOP || errno == ENOTDIR
					? HP_EINVAL
					: HP_EIO,
				    "cannot read '%s': %s", path,
				    strerror(errno));
	hp__sha256_init(&s);
	for (;;) {
		ssize_t r = read(fd, buf, sizeof(buf));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			close(fd);
			return hp_error_set(err, HP_EIO, "cannot read '%s': %s",
					    path, strerror(e));
		}
		if (r == 0)
			break;
		hp__sha256_add(&s, buf, (size_t)r);
		total += r;
	}
	close(fd);
	hp__sha256_hex(&s, hex);
	if (size)
		*size = total;
	return 0;
}

static bool in(const char *set, char c)
{
	return c && strchr(set, c);
}

#define LOWER "abcdefghijklmnopqrstuvwxyz"
#define UPPER "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
#define DIGIT "0123456789"

bool hp__name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n >= HP_NAME_MAX || s[0] == '-' || s[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!in(LOWER UPPER DIGIT "-._", s[i]))
			return false;
	return true;
}

bool hp_deploy_host_name_ok(const char *name)
{
	return name && hp__name_ok(name);
}

bool hp__type_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n >= HP_TYPE_MAX || !in(LOWER DIGIT, s[0]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!in(LOWER DIGIT "-._", s[i]))
			return false;
	return true;
}

bool hp__path_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || s[0] != '/' || n > HP_DEPLOY_PATH_MAX - 160 ||
	    hp_str_has_control(s))
		return false;
	for (const char *p = s; (p = strstr(p, "..")); p += 2)
		if (p[-1] == '/' && (p[2] == '/' || p[2] == '\0'))
			return false;
	return true;
}

int hp__map_get(const char *map, const char *key, char *out, size_t n,
		const char *what, struct hp_error *err)
{
	const char *p = map;
	bool found = false;

	snprintf(out, n, "%s", key);
	while (p && *p) {
		const char *end = strchr(p, ','), *eq;
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char k[HP_NAME_MAX], v[HP_NAME_MAX];

		eq = memchr(p, '=', len);
		if (!eq || eq == p || (size_t)(eq - p) >= sizeof(k) ||
		    len - (size_t)(eq - p) - 1 >= sizeof(v) ||
		    len - (size_t)(eq - p) - 1 == 0)
			return hp_error_set(err, HP_EINVAL,
					    "%s '%s': give TYPE=NAME pairs "
					    "separated by commas",
					    what, map);
		memcpy(k, p, (size_t)(eq - p));
		k[eq - p] = '\0';
		memcpy(v, eq + 1, len - (size_t)(eq - p) - 1);
		v[len - (size_t)(eq - p) - 1] = '\0';
		if (!hp__type_ok(k) || !hp__name_ok(v))
			return hp_error_set(err, HP_EINVAL,
					    "%s '%s': '%s=%s' is not a device "
					    "type and a name of letters, "
					    "digits, '-', '.' and '_'",
					    what, map, k, v);
		if (!found && !strcmp(k, key)) {
			snprintf(out, n, "%s", v);
			found = true;
		}
		p = end ? end + 1 : NULL;
	}
	return 0;
}

void hp__hostname(char *buf, size_t n)
{
	char h[256];
	char *dot;

	if (gethostname(h, sizeof(h)) || !h[0]) {
		snprintf(buf, n, "localhost");
		return;
	}
	h[sizeof(h) - 1] = '\0';
	if ((dot = strchr(h, '.')))
		*dot = '\0';
	snprintf(buf, n, "%s", h);
}
