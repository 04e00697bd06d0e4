/*
 * metrics.c - the trainer's metrics.jsonl: one JSON object per step, and
 * the cut made on --resume so the steps after the checkpoint are not
 * listed twice.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "hetpool/train.h"
#include "util/banned.h"

/* A real, or null for NaN and infinities (JSON has no such numbers). */
static json_t *real_or_null(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

char *hp_step_record_json(const struct hp_step_record *r)
{
	json_t *o = json_object(), *lb = json_array(), *ss = json_array(),
	       *as = json_array();
	char *s = NULL;
	bool ok = o && lb && ss && as;

	for (int i = 0; ok && i < r->ranks; i++)
		ok =
		    !json_array_append_new(lb, json_integer(r->local[i])) &&
		    !json_array_append_new(ss, real_or_null(r->step_s[i])) &&
		    !json_array_append_new(as, real_or_null(r->allreduce_s[i]));
	ok = ok && !json_object_set_new(o, "step", json_integer(r->step)) &&
	     !json_object_set_new(o, "epoch", json_integer(r->epoch)) &&
	     !json_object_set_new(o, "loss", real_or_null(r->loss)) &&
	     !json_object_set_new(o, "accuracy", real_or_null(r->accuracy)) &&
	     !json_object_set_new(o, "lr", real_or_null(r->lr)) &&
	     !json_object_set(o, "local_batches", lb) &&
	     !json_object_set(o, "rank_step_s", ss) &&
	     !json_object_set(o, "rank_allreduce_s", as) &&
	     !json_object_set_new(o, "step_s", real_or_null(r->wall_step_s)) &&
	     !json_object_set_new(o, "samples_per_s",
				  real_or_null(r->samples_per_s)) &&
	     !json_object_set_new(o, "elapsed_s", real_or_null(r->elapsed_s));
	if (ok)
		s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER |
				      JSON_REAL_PRECISION(9));
	json_decref(lb);
	json_decref(ss);
	json_decref(as);
	json_decref(o);
	return s;
}

/* The step a metrics line belongs to, or -1 when it names none. */
static int64_t line_step(const char *line, size_t n)
{
	json_error_t je;
	json_t *o = json_loadb(line, n, 0, &je), *v;
	int64_t step = -1;

	if (!json_is_object(o)) {
		json_decref(o);
		return -1;
	}
	v = json_object_get(o, "step");
	if (!json_is_integer(v))
		v = json_object_get(o, "at_step");
	if (json_is_integer(v))
		step = json_integer_value(v);
	json_decref(o);
	return step;
}

int hp_metrics_truncate(const char *path, int64_t step, struct hp_error *err)
{
	struct stat st;
	char *buf = NULL;
	size_t len = 0, keep = 0;
	int rc, fd;

	/* a pipe or a device (a log collector's, /dev/null) has no lines to
	 * cut: the appends go on to it */
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
		return 0;
	rc = hp_read_file(path, (size_t)1 << 32, &buf, &len, err);
	if (rc == HP_ENOENT) {
		hp_error_clear(err);
		return 0;
	}
	if (rc) {
		hp_error_prefix(err, "'%s'", path);
		return rc;
	}
	/* whole lines only: a line cut by a kill is dropped */
	for (size_t i = 0; i < len;) {
		const char *nl = memchr(buf + i, '\n', len - i);
		size_t n;
		int64_t s;
		if (!nl)
			break;
		n = (size_t)(nl - (buf + i));
		s = line_step(buf + i, n);
		if (s < 0 || s > step)
			break;
		keep = i + n + 1;
		i = keep;
	}
	free(buf);
	if (keep == len)
		return 0;
	/* cut in place: a copy of the kept part would need the disk's room
	 * for it, and a full disk is where a killed run is resumed */
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || ftruncate(fd, (off_t)keep) || fsync(fd)) {
		rc = hp_error_set(err, HP_EIO,
				  "cannot cut '%s' back to step %lld: %s", path,
				  (long long)step, strerror(errno));
		if (fd >= 0)
			close(fd);
		return rc;
	}
	if (close(fd))
		return hp_error_set(err, HP_EIO,
				    "cannot cut '%s' back to step %lld: %s",
				    path, (long long)step, strerror(errno));
	return 0;
}
