/*
 * metrics.c - read the trainer's metrics.jsonl (one JSON object per step)
 * into a range-test series.  The file is outside input, and may be read
 * while the trainer still writes it: a last line without its newline can
 * be left for the next read.  Every error names the file and the line.
 */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hetpool/lrfind.h"
#include "util/banned.h"

void hp_lrfind_series_init(struct hp_lrfind_series *s)
{
	memset(s, 0, sizeof(*s));
}

void hp_lrfind_series_release(struct hp_lrfind_series *s)
{
	if (!s)
		return;
	free(s->pts);
	memset(s, 0, sizeof(*s));
}

int hp_lrfind_series_add(struct hp_lrfind_series *s, int64_t step, double lr,
			 double loss, double accuracy, struct hp_error *err)
{
	const struct hp_lrfind_point *last = s->n ? &s->pts[s->n - 1] : NULL;

	if (!isfinite(lr) || !(lr > 0))
		return hp_error_set(err, HP_EINVAL,
				    "step %lld: lr %g is not a positive number",
				    (long long)step, lr);
	if (step < 0)
		return hp_error_set(err, HP_EINVAL, "step %lld is negative",
				    (long long)step);
	/* A loss is at least 0 (cross-entropy, squared error); not finite
	 * marks where the run overflowed (the divergence). */
	if (loss < 0 && isfinite(loss))
		return hp_error_set(err, HP_EINVAL,
				    "step %lld: loss %g is negative",
				    (long long)step, loss);
	if (!isnan(accuracy) && !(accuracy >= 0 && accuracy <= 1))
		return hp_error_set(err, HP_EINVAL,
				    "step %lld: accuracy %g is not between 0 "
				    "and 1",
				    (long long)step, accuracy);
	if (last && step <= last->step)
		return hp_error_set(err, HP_EINVAL,
				    "step %lld does not follow step %lld",
				    (long long)step, (long long)last->step);
	if (last && lr < last->lr)
		return hp_error_set(
		    err, HP_EINVAL,
		    "step %lld: lr %.17g is below the previous "
		    "step's %.17g: the rate must rise in a range "
		    "test",
		    (long long)step, lr, last->lr);
	if (s->n >= HP_LRFIND_MAX_POINTS)
		return hp_error_set(err, HP_ETOOBIG,
				    "more than %d steps: too many for a range "
				    "test",
				    HP_LRFIND_MAX_POINTS);
	if (s->n == s->alloc) {
		int na = s->alloc ? 2 * s->alloc : 256;
		struct hp_lrfind_point *p;

		if (na > HP_LRFIND_MAX_POINTS)
			na = HP_LRFIND_MAX_POINTS;
		p = realloc(s->pts, (size_t)na * sizeof(*p));
		if (!p)
			return hp_error_set(err, HP_ENOMEM, "out of memory");
		s->pts = p;
		s->alloc = na;
	}
	s->pts[s->n].step = step;
	s->pts[s->n].lr = lr;
	s->pts[s->n].loss = loss;
	s->pts[s->n].accuracy = accuracy;
	s->n++;
	return 0;
}

/* A loss that overflowed: null or a string naming a non-finite value. */
static bool nonfinite_value(const json_t *v, double *out)
{
	static const struct {
		const char *s;
		double v;
	} names[] = {{"nan", NAN},	  {"NaN", NAN},
		     {"inf", INFINITY},	  {"Infinity", INFINITY},
		     {"-inf", -INFINITY}, {"-Infinity", -INFINITY}};

	if (json_is_null(v)) {
		*out = NAN;
		return true;
	}
	if (!json_is_string(v))
		return false;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(json_string_value(v), names[i].s)) {
			*out = names[i].v;
			return true;
		}
	return false;
}

static int parse_line(struct hp_lrfind_series *s, const char *line, size_t len,
		      struct hp_error *err)
{
	json_error_t jerr;
	json_t *o = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
	json_t *step, *lr, *loss, *acc;
	double lossv, accv = NAN;
	int rc = 0;

	if (!o)
		return hp_error_set(err, HP_EPARSE, "not JSON: %s", jerr.text);
	if (!json_is_object(o)) {
		rc = hp_error_set(err, HP_EPARSE, "not a JSON object");
		goto out;
	}
	if (!(step = json_object_get(o, "step"))) {
		s->skipped++;
		goto out;
	}
	if (!json_is_integer(step)) {
		rc = hp_error_set(err, HP_EINVAL, "'step' is not an integer");
		goto out;
	}
	lr = json_object_get(o, "lr");
	if (!lr || !json_is_number(lr)) {
		rc = hp_error_set(err, HP_EINVAL, "'lr' is %s",
				  lr ? "not a number" : "missing");
		goto out;
	}
	loss = json_object_get(o, "loss");
	if (!loss) {
		rc = hp_error_set(err, HP_EINVAL, "'loss' is missing");
		goto out;
	}
	if (json_is_number(loss))
		lossv = json_number_value(loss);
	else if (!nonfinite_value(loss, &lossv)) {
		rc = hp_error_set(err, HP_EINVAL,
				  "'loss' is not a number, null, \"nan\" or "
				  "\"inf\"");
		goto out;
	}
	acc = json_object_get(o, "accuracy");
	if (acc && json_is_number(acc))
		accv = json_number_value(acc);
	else if (acc && !json_is_null(acc)) {
		rc = hp_error_set(err, HP_EINVAL,
				  "'accuracy' is not a number or null");
		goto out;
	}
	rc = hp_lrfind_series_add(s, json_integer_value(step),
				  json_number_value(lr), lossv, accv, err);
out:
	json_decref(o);
	return rc;
}

static bool blank(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r')
			return false;
	return true;
}

int hp_lrfind_parse_metrics(struct hp_lrfind_series *s, const char *text,
			    size_t len, const char *name, int first_line,
			    unsigned flags, size_t *consumed,
			    struct hp_error *err)
{
	size_t pos = 0;
	int line = first_line, rc = 0;

	if (consumed)
		*consumed = 0;
	while (pos < len) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos;

		if (!nl && (flags & HP_LRFIND_PARSE_PARTIAL))
			break;
		if (!blank(text + pos, n) &&
		    (rc = parse_line(s, text + pos, n, err))) {
			hp_error_prefix(err, "%s line %d", name, line);
			return rc;
		}
		pos += n + (nl ? 1 : 0);
		line++;
		if (consumed)
			*consumed = pos;
	}
	return 0;
}
