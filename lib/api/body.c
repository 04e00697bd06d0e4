/*
 * body.c - the strict readers of hetpoold's request bodies: one JSON
 * object, every key known to the route, every value of its type and in
 * its range (include/hetpool/api.h says what each body holds).
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hetpool/api.h"
#include "hetpool/model.h"
#include "hetpool/pool.h"

#include "util/banned.h"

/* The ranges of the job description (the CLI's, from cmd_recommend.c). */
#define MAX_SAMPLES ((int64_t)1 << 40)
#define MAX_EPOCHS ((int64_t)1 << 20)
#define MAX_STEPS ((int64_t)1 << 40)
#define MAX_BATCH ((int64_t)1 << 24)
#define MAX_DEADLINE_S (10.0 * 365 * 86400)
#define MAX_DEVICES (1 << 20)

/* ---- reading the body */

/* Nesting depth of v (1 for a scalar); stops counting past limit. */
static int depth(json_t *v, int limit)
{
	int d = 0, k;

	if (limit <= 0)
		return 1;
	if (json_is_object(v)) {
		const char *key;
		json_t *x;
		json_object_foreach(v, key, x)
		{
			if ((k = depth(x, limit - 1)) > d)
				d = k;
			if (d >= limit)
				break;
		}
	} else if (json_is_array(v)) {
		size_t i;
		json_t *x;
		json_array_foreach(v, i, x)
		{
			if ((k = depth(x, limit - 1)) > d)
				d = k;
			if (d >= limit)
				break;
		}
	}
	return d + 1;
}

/* Parse body into an object; NULL with pb set. */
static json_t *load_max(const char *body, size_t len, size_t max,
			struct hp_api_problem *pb)
{
	json_error_t je;
	json_t *o;

	if (len > max) {
		hp_api_fail(pb, 413, "body-too-large", NULL,
			    "the body is %zu bytes; at most %zu are read", len,
			    max);
		return NULL;
	}
	o = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
	if (!o) {
		/* jansson quotes the offending bytes as they are */
		char esc[sizeof(je.text) * 4];
		hp_str_escape(je.text, esc, sizeof(esc));
		hp_api_fail(pb, 400, "malformed-json", NULL,
			    "the body is not JSON: line %d column %d: %s",
			    je.line, je.column, esc);
		return NULL;
	}
	if (!json_is_object(o)) {
		json_decref(o);
		hp_api_fail(pb, 400, "malformed-json", NULL,
			    "the body must be a JSON object {...}");
		return NULL;
	}
	if (depth(o, HP_API_MAX_DEPTH + 1) > HP_API_MAX_DEPTH) {
		json_decref(o);
		hp_api_fail(pb, 400, "malformed-json", NULL,
			    "the body nests deeper than %d levels",
			    HP_API_MAX_DEPTH);
		return NULL;
	}
	return o;
}

static json_t *load(const char *body, size_t len, struct hp_api_problem *pb)
{
	/* the server read at most its --max-body */
	return load_max(body, len, HP_API_BODY_CAP, pb);
}

/* "prefix.key", or key alone. */
static const char *path(char *buf, size_t n, const char *prefix,
			const char *key)
{
	int k = prefix && *prefix ? snprintf(buf, n, "%s.%s", prefix, key)
				  : snprintf(buf, n, "%s", key);

	/* a path cut short still names the field's start, in whole
	 * characters: it goes into the detail, which must stay UTF-8 */
	if (k < 0 || (size_t)k >= n) {
		buf[n - 1] = '\0';
		hp_str_cut_utf8(buf);
	}
	return buf;
}

/* Refuse a key of o not in known (NULL-terminated). */
static int known_keys(json_t *o, const char *const *known, const char *prefix,
		      struct hp_api_problem *pb)
{
	const char *key;
	json_t *v;
	char f[96], esc[96];

	json_object_foreach(o, key, v)
	{
		bool ok = false;
		for (int i = 0; known[i] && !ok; i++)
			ok = !strcmp(key, known[i]);
		if (!ok) {
			hp_str_escape(key, esc, sizeof(esc));
			return hp_api_fail(pb, 400, "unknown-field",
					   path(f, sizeof(f), prefix, esc),
					   "unknown field '%s'%s%s", esc,
					   prefix && *prefix ? " in " : "",
					   prefix && *prefix ? prefix : "");
		}
	}
	return 0;
}

/* An integer field in [min, max]; absent: 0 and *given false. */
static int get_int(json_t *o, const char *key, const char *prefix, int64_t min,
		   int64_t max, int64_t *out, bool *given,
		   struct hp_api_problem *pb)
{
	json_t *v = json_object_get(o, key);
	char f[96];

	if (given)
		*given = v != NULL;
	if (!v)
		return 0;
	path(f, sizeof(f), prefix, key);
	if (!json_is_integer(v))
		return hp_api_fail(pb, 400, "invalid-field", f,
				   "'%s' must be an integer", f);
	if (json_integer_value(v) < min || json_integer_value(v) > max)
		return hp_api_fail(pb, 400, "invalid-field", f,
				   "'%s' is %lld; give %lld to %lld", f,
				   (long long)json_integer_value(v),
				   (long long)min, (long long)max);
	*out = json_integer_value(v);
	return 0;
}

static int get_int32(json_t *o, const char *key, const char *prefix, int min,
		     int max, int *out, struct hp_api_problem *pb)
{
	int64_t v = *out;
	int rc = get_int(o, key, prefix, min, max, &v, NULL, pb);

	*out = (int)v;
	return rc;
}

/* A number in (min, max] (lo_open) or [min, max]. */
static int get_num(json_t *o, const char *key, const char *prefix, double min,
		   bool lo_open, double max, double *out,
		   struct hp_api_problem *pb)
{
	json_t *v = json_object_get(o, key);
	char f[96];
	double x;

	if (!v)
		return 0;
	path(f, sizeof(f), prefix, key);
	if (!json_is_number(v))
		return hp_api_fail(pb, 400, "invalid-field", f,
				   "'%s' must be a number", f);
	x = json_number_value(v);
	if (!isfinite(x) || (lo_open ? !(x > min) : !(x >= min)) || x > max)
		return hp_api_fail(pb, 400, "invalid-field", f,
				   "'%s' is %g; give a number %s %g and at "
				   "most %g",
				   f, x, lo_open ? "above" : "from", min, max);
	*out = x;
	return 0;
}

/* A string of at most n - 1 bytes; with words (NULL-terminated), one of
 * them; with name_chars, 1-63 of [A-Za-z0-9._-]. */
static int get_str(json_t *o, const char *key, const char *prefix, char *out,
		   size_t n, const char *const *words, bool name_chars,
		   struct hp_api_problem *pb)
{
	json_t *v = json_object_get(o, key);
	const char *s;
	char f[96], esc[96];
	size_t len;

	if (!v)
		return 0;
	path(f, sizeof(f), prefix, key);
	if (!json_is_string(v))
		return hp_api_fail(pb, 400, "invalid-field", f,
				   "'%s' must be a string", f);
	s = json_string_value(v);
	len = json_string_length(v);
	if (words) {
		for (int i = 0; words[i]; i++)
			if (!strcmp(s, words[i]) && len == strlen(words[i])) {
				snprintf(out, n, "%s", s);
				return 0;
			}
		char list[160] = "";
		size_t k = 0;
		for (int i = 0; words[i]; i++)
			k += (size_t)snprintf(list + k, sizeof(list) - k,
					      "%s'%s'",
					      i == 0	     ? ""
					      : words[i + 1] ? ", "
							     : " or ",
					      words[i]);
		hp_str_escape(s, esc, sizeof(esc));
		return hp_api_fail(pb, 400, "invalid-field", f,
				   "'%s' is '%s'; give %s", f, esc, list);
	}
	if (name_chars ? !hp_api_name_valid(s) || len != strlen(s)
		       : len == 0 || len >= n || len != strlen(s) ||
			     hp_str_has_control(s))
		return hp_api_fail(pb, 400, "invalid-field", f,
				   name_chars ? "'%s' must be 1 to 63 letters, "
						"digits, '.', '_' or '-'"
					      : "'%s' must be 1 to %zu bytes "
						"without control characters",
				   f, n - 1);
	snprintf(out, n, "%s", s);
	return 0;
}

/* An object field (absent: NULL, no error). */
static int get_obj(json_t *o, const char *key, const char *prefix, json_t **out,
		   struct hp_api_problem *pb)
{
	json_t *v = json_object_get(o, key);
	char f[96];

	*out = NULL;
	if (!v)
		return 0;
	if (!json_is_object(v))
		return hp_api_fail(pb, 400, "invalid-field",
				   path(f, sizeof(f), prefix, key),
				   "'%s' must be an object {...}", f);
	*out = v;
	return 0;
}

static int missing(struct hp_api_problem *pb, const char *field,
		   const char *what)
{
	return hp_api_fail(pb, 400, "missing-field", field, "give %s", what);
}

/* A spec object, checked by the spec reader, as compact JSON. */
static int get_spec(json_t *v, const char *field, char **out,
		    struct hp_api_problem *pb)
{
	struct hp_spec sp;
	struct hp_error err = {0};
	char *text;
	size_t n;
	int rc;

	if (!json_is_object(v))
		return hp_api_fail(pb, 400, "invalid-field", field,
				   "'%s' must be a hetpool model spec {...}",
				   field);
	if (!(text = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS)))
		return hp_api_fail(pb, 500, "internal", NULL, "out of memory");
	n = strlen(text);
	if (n > HP_API_MAX_SPEC) {
		free(text);
		return hp_api_fail(pb, 413, "body-too-large", field,
				   "'%s' is %zu bytes; at most %u", field, n,
				   HP_API_MAX_SPEC);
	}
	rc = hp_spec_parse_only(text, n, &sp, &err);
	if (rc) {
		free(text);
		if (rc == HP_ENOMEM)
			return hp_api_fail(pb, 500, "internal", NULL,
					   "out of memory");
		char esc[sizeof(err.msg) * 4];
		return hp_api_fail(pb, 400, "invalid-field", field, "%s: %s",
				   field,
				   hp_str_escape(err.msg, esc, sizeof(esc)));
	}
	hp_spec_release(&sp);
	*out = text;
	return 0;
}

/* ---- the job description */

static const char *const lr_rules[] = {"linear", "sqrt", "none", NULL};
static const char *const optimizers[] = {"sgd", "adam", NULL};

static int read_constraints(json_t *c, struct hp_api_job *j,
			    struct hp_api_problem *pb)
{
	static const char *const k[] = {"device_type", "devices", "nodes",
					NULL};
	int rc;

	if ((rc = known_keys(c, k, "constraints", pb)) ||
	    (rc = get_str(c, "device_type", "constraints", j->device_type,
			  sizeof(j->device_type), NULL, false, pb)) ||
	    (rc = get_int32(c, "devices", "constraints", 1, MAX_DEVICES,
			    &j->devices, pb)) ||
	    (rc = get_int32(c, "nodes", "constraints", 1, 100000, &j->nodes,
			    pb)))
		return rc;
	return 0;
}

/* "training.lr_range": a learning-rate range test's two ends. */
static int read_lr_range(json_t *lr, struct hp_api_training *tr,
			 struct hp_api_problem *pb)
{
	static const char *const k[] = {"lr_min", "lr_max", NULL};
	static const char pre[] = "training.lr_range";
	double lo = 0, hi = 0;
	int rc;

	if ((rc = known_keys(lr, k, pre, pb)) ||
	    (rc = get_num(lr, "lr_min", pre, 0, true, 1000, &lo, pb)) ||
	    (rc = get_num(lr, "lr_max", pre, 0, true, 1000, &hi, pb)))
		return rc;
	if (!(lo > 0))
		return missing(pb, "training.lr_range.lr_min",
			       "'training.lr_range.lr_min': the lowest rate "
			       "of the range test, e.g. 1e-5");
	if (!(hi > 0))
		return missing(pb, "training.lr_range.lr_max",
			       "'training.lr_range.lr_max': the highest rate "
			       "of the range test, e.g. 1");
	if (!(hi >= 10 * lo))
		return hp_api_fail(pb, 400, "invalid-field",
				   "training.lr_range.lr_max",
				   "'training.lr_range.lr_max' %g must be at "
				   "least 10 times 'lr_min' %g: a range test "
				   "spans decades",
				   hi, lo);
	if (tr->lr > 0)
		return hp_api_fail(pb, 400, "invalid-field", "training.lr",
				   "'training.lr' and 'training.lr_range' "
				   "exclude each other: a range test sets the "
				   "rate of every step");
	tr->lr_range_min = lo;
	tr->lr_range_max = hi;
	return 0;
}

static int read_training(json_t *t, struct hp_api_training *tr,
			 struct hp_api_problem *pb)
{
	static const char *const k[] = {"lr",
					"optimizer",
					"seed",
					"warmup_steps",
					"checkpoint_every",
					"max_seconds",
					"stall_timeout_s",
					"threads",
					"ranks",
					"lr_range",
					NULL};
	int rc;
	json_t *lr;

	if ((rc = known_keys(t, k, "training", pb)) ||
	    (rc = get_num(t, "lr", "training", 0, true, 1000, &tr->lr, pb)) ||
	    (rc = get_str(t, "optimizer", "training", tr->optimizer,
			  sizeof(tr->optimizer), optimizers, false, pb)) ||
	    (rc = get_int(t, "seed", "training", 0, INT64_MAX / 2, &tr->seed,
			  NULL, pb)) ||
	    (rc = get_int(t, "warmup_steps", "training", 0, MAX_STEPS,
			  &tr->warmup_steps, NULL, pb)) ||
	    (rc = get_int(t, "checkpoint_every", "training", 1, MAX_STEPS,
			  &tr->checkpoint_every, NULL, pb)) ||
	    (rc = get_num(t, "max_seconds", "training", 1, false, 1e9,
			  &tr->max_seconds, pb)) ||
	    (rc = get_num(t, "stall_timeout_s", "training", 1, false, 1e9,
			  &tr->stall_timeout_s, pb)) ||
	    (rc = get_int32(t, "threads", "training", 1, 4096, &tr->threads,
			    pb)) ||
	    (rc = get_int32(t, "ranks", "training", 1, 4096, &tr->ranks, pb)) ||
	    (rc = get_obj(t, "lr_range", "training", &lr, pb)))
		return rc;
	if (lr)
		return read_lr_range(lr, tr, pb);
	return 0;
}

int hp_api_job_parse(const char *body, size_t len, enum hp_api_body kind,
		     struct hp_api_job *out, struct hp_api_problem *pb)
{
	static const char *const k_rec[] = {
	    "model_id",	   "spec",	 "samples",    "epochs",    "steps",
	    "batch",	   "deadline_s", "lr_rule",    "ref_batch", "front",
	    "constraints", "confidence", "input_rate", NULL};
	static const char *const k_job[] = {
	    "model_id",	   "spec",	 "samples", "epochs",	 "steps",
	    "batch",	   "deadline_s", "lr_rule", "ref_batch", "front",
	    "constraints", "data",	 "name",    "training",	 "confidence",
	    "input_rate",  NULL};
	struct hp_api_job *j = out;
	json_t *o, *c, *t, *spec;
	char rule[8] = "";
	bool given;
	int64_t front = 5;
	int rc;

	memset(j, 0, sizeof(*j));
	j->training.seed = -1;
	j->training.warmup_steps = -1;
	j->lr_rule = HP_LR_LINEAR;
	j->front = 5;
	if (!(o = load(body, len, pb)))
		return HP_EINVAL;
	if ((rc = known_keys(o, kind == HP_API_JOB ? k_job : k_rec, NULL, pb)))
		goto out;
	spec = json_object_get(o, "spec");
	if ((rc = get_int(o, "model_id", NULL, 1, HP_API_MAX_ID, &j->model_id,
			  &given, pb)))
		goto out;
	if (given && spec) {
		rc = hp_api_fail(pb, 400, "conflicting-fields", "spec",
				 "give 'model_id' or 'spec', not both");
		goto out;
	}
	if (!given && !spec) {
		rc = missing(pb, "model_id",
			     "'model_id' (a stored model) or 'spec' (a "
			     "hetpool model spec)");
		goto out;
	}
	if (spec && (rc = get_spec(spec, "spec", &j->spec, pb)))
		goto out;
	if ((rc = get_int(o, "samples", NULL, 1, MAX_SAMPLES, &j->samples, NULL,
			  pb)) ||
	    (rc = get_int(o, "epochs", NULL, 1, MAX_EPOCHS, &j->epochs, NULL,
			  pb)) ||
	    (rc = get_int(o, "steps", NULL, 1, MAX_STEPS, &j->steps, NULL,
			  pb)) ||
	    (rc = get_int(o, "batch", NULL, 1, MAX_BATCH, &j->batch, NULL,
			  pb)) ||
	    (rc = get_num(o, "deadline_s", NULL, 0, true, MAX_DEADLINE_S,
			  &j->deadline_s, pb)) ||
	    (rc = get_str(o, "lr_rule", NULL, rule, sizeof(rule), lr_rules,
			  false, pb)) ||
	    (rc = get_int(o, "ref_batch", NULL, 1, MAX_BATCH, &j->ref_batch,
			  NULL, pb)) ||
	    (rc = get_int(o, "front", NULL, 0, HP_REC_FRONT_MAX, &front, NULL,
			  pb)) ||
	    (rc = get_num(o, "confidence", NULL, 0, true, 0.999999,
			  &j->confidence, pb)) ||
	    (rc = get_num(o, "input_rate", NULL, 0, true, 1e9, &j->input_rate,
			  pb)))
		goto out;
	j->front = (int)front;
	if (rule[0])
		hp_lr_rule_parse(rule, &j->lr_rule);
	if (j->front == 1) {
		rc = hp_api_fail(pb, 400, "invalid-field", "front",
				 "'front' is 1; give 0, or 2 to %d deadlines",
				 HP_REC_FRONT_MAX);
		goto out;
	}
	if ((rc = get_obj(o, "constraints", NULL, &c, pb)) ||
	    (c && (rc = read_constraints(c, j, pb))))
		goto out;
	if (!j->samples &&
	    !(kind == HP_API_JOB &&
	      json_is_string(json_object_get(o, "data")) &&
	      !strcmp(json_string_value(json_object_get(o, "data")),
		      "fashion-mnist"))) {
		rc = missing(pb, "samples",
			     "'samples', the dataset's size in samples");
		goto out;
	}
	if (!j->epochs == !j->steps) {
		rc = j->epochs
			 ? hp_api_fail(pb, 400, "conflicting-fields", "steps",
				       "give 'epochs' or 'steps', not "
				       "both")
			 : missing(pb, "epochs", "'epochs' or 'steps'");
		goto out;
	}
	if (!j->batch) {
		rc = missing(pb, "batch", "'batch', the global batch");
		goto out;
	}
	if (!(j->deadline_s > 0)) {
		rc = missing(pb, "deadline_s",
			     "'deadline_s', the wall-clock time the job may "
			     "take, in seconds");
		goto out;
	}
	if (kind == HP_API_JOB) {
		if ((rc = get_str(o, "data", NULL, j->data, sizeof(j->data),
				  NULL, true, pb)) ||
		    (rc = get_str(o, "name", NULL, j->name, sizeof(j->name),
				  NULL, true, pb)) ||
		    (rc = get_obj(o, "training", NULL, &t, pb)) ||
		    (t && (rc = read_training(t, &j->training, pb))))
			goto out;
		if (!j->data[0]) {
			rc = missing(pb, "data",
				     "'data': fashion-mnist, synthetic or a "
				     "registered dataset's name");
			goto out;
		}
		if (!j->samples)
			j->samples = 60000; /* fashion-mnist's training set */
	}
	if (j->batch > j->samples) {
		rc = hp_api_fail(pb, 400, "invalid-field", "batch",
				 "'batch' %lld is more than 'samples' %lld: a "
				 "step would take more samples than the data "
				 "holds",
				 (long long)j->batch, (long long)j->samples);
		goto out;
	}
	rc = 0;
out:
	json_decref(o);
	if (rc)
		hp_api_job_release(j);
	return rc;
}

void hp_api_job_release(struct hp_api_job *j)
{
	if (!j)
		return;
	free(j->spec);
	memset(j, 0, sizeof(*j));
}

static int set_int(json_t *o, const char *k, int64_t v)
{
	return json_object_set_new(o, k, json_integer(v));
}

char *hp_api_job_json(const struct hp_api_job *j, enum hp_api_body kind)
{
	json_t *o = json_object(), *c = NULL, *t = NULL, *spec = NULL;
	const struct hp_api_training *tr = &j->training;
	char *s = NULL;
	int bad = 0;

	if (!o)
		return NULL;
	if (j->model_id)
		bad |= set_int(o, "model_id", j->model_id);
	if (j->spec) {
		if (!(spec = json_loads(j->spec, 0, NULL)))
			goto out;
		bad |= json_object_set_new(o, "spec", spec);
	}
	bad |= set_int(o, "samples", j->samples);
	bad |= j->epochs ? set_int(o, "epochs", j->epochs)
			 : set_int(o, "steps", j->steps);
	bad |= set_int(o, "batch", j->batch);
	bad |= json_object_set_new(o, "deadline_s", json_real(j->deadline_s));
	bad |= json_object_set_new(o, "lr_rule",
				   json_string(hp_lr_rule_name(j->lr_rule)));
	if (j->ref_batch)
		bad |= set_int(o, "ref_batch", j->ref_batch);
	bad |= set_int(o, "front", j->front);
	if (j->confidence > 0)
		bad |= json_object_set_new(o, "confidence",
					   json_real(j->confidence));
	if (j->input_rate > 0)
		bad |= json_object_set_new(o, "input_rate",
					   json_real(j->input_rate));
	if (j->device_type[0] || j->devices || j->nodes) {
		if (!(c = json_object()))
			goto out;
		bad |= json_object_set_new(o, "constraints", c);
		if (j->device_type[0])
			bad |= json_object_set_new(c, "device_type",
						   json_string(j->device_type));
		if (j->devices)
			bad |= set_int(c, "devices", j->devices);
		if (j->nodes)
			bad |= set_int(c, "nodes", j->nodes);
	}
	if (kind == HP_API_JOB) {
		bad |= json_object_set_new(o, "data", json_string(j->data));
		if (j->name[0])
			bad |= json_object_set_new(o, "name",
						   json_string(j->name));
		if (!(t = json_object()))
			goto out;
		if (tr->lr > 0)
			bad |= json_object_set_new(t, "lr", json_real(tr->lr));
		if (tr->optimizer[0])
			bad |= json_object_set_new(t, "optimizer",
						   json_string(tr->optimizer));
		if (tr->seed >= 0)
			bad |= set_int(t, "seed", tr->seed);
		if (tr->warmup_steps >= 0)
			bad |= set_int(t, "warmup_steps", tr->warmup_steps);
		if (tr->checkpoint_every)
			bad |= set_int(t, "checkpoint_every",
				       tr->checkpoint_every);
		if (tr->max_seconds > 0)
			bad |= json_object_set_new(t, "max_seconds",
						   json_real(tr->max_seconds));
		if (tr->stall_timeout_s > 0)
			bad |=
			    json_object_set_new(t, "stall_timeout_s",
						json_real(tr->stall_timeout_s));
		if (tr->threads)
			bad |= set_int(t, "threads", tr->threads);
		if (tr->ranks)
			bad |= set_int(t, "ranks", tr->ranks);
		if (tr->lr_range_min > 0)
			bad |= json_object_set_new(
			    t, "lr_range",
			    json_pack("{s:f, s:f}", "lr_min", tr->lr_range_min,
				      "lr_max", tr->lr_range_max));
		if (json_object_size(t)) {
			bad |= json_object_set_new(o, "training", t);
		} else {
			json_decref(t);
		}
	}
	if (!bad)
		s = json_dumps(o, JSON_COMPACT);
out:
	json_decref(o);
	return s;
}

void hp_api_job_rec(const struct hp_api_job *j, struct hp_rec_job *out)
{
	memset(out, 0, sizeof(*out));
	out->samples = j->samples;
	out->epochs = j->epochs;
	out->steps = j->steps;
	out->batch = j->batch;
	out->ref_batch = j->ref_batch;
	out->lr_rule = j->lr_rule;
	out->deadline_s = j->deadline_s;
	out->device_type = j->device_type[0] ? j->device_type : NULL;
	out->ndevices = j->devices;
	out->nnodes = j->nodes;
	out->front = j->front;
	out->confidence = j->confidence;
	out->input_sample_s = j->input_rate > 0 ? 1 / j->input_rate : 0;
}

/* ---- the other bodies */

static const char *const roles[] = {"admin", "user", "reader", NULL};

int hp_api_token_parse(const char *body, size_t len,
		       struct hp_api_token_req *out, struct hp_api_problem *pb)
{
	static const char *const k[] = {"name", "role", NULL};
	json_t *o;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!(o = load(body, len, pb)))
		return HP_EINVAL;
	if ((rc = known_keys(o, k, NULL, pb)) ||
	    (rc = get_str(o, "name", NULL, out->name, sizeof(out->name), NULL,
			  false, pb)) ||
	    (rc = get_str(o, "role", NULL, out->role, sizeof(out->role), roles,
			  false, pb)))
		goto out;
	if (!out->name[0])
		rc = missing(pb, "name", "'name', who the token is for");
	else if (!out->role[0])
		rc = missing(pb, "role", "'role': admin, user or reader");
out:
	json_decref(o);
	if (rc)
		memset(out, 0, sizeof(*out));
	return rc;
}

int hp_api_node_patch_parse(const char *body, size_t len, bool *drained,
			    struct hp_api_problem *pb)
{
	static const char *const k[] = {"state", NULL};
	static const char *const states[] = {"drained", "active", NULL};
	char state[8] = "";
	json_t *o;
	int rc;

	if (!(o = load(body, len, pb)))
		return HP_EINVAL;
	if (!(rc = known_keys(o, k, NULL, pb)) &&
	    !(rc = get_str(o, "state", NULL, state, sizeof(state), states,
			   false, pb)) &&
	    !state[0])
		rc = missing(pb, "state", "'state': drained or active");
	if (!rc)
		*drained = !strcmp(state, "drained");
	json_decref(o);
	return rc;
}

static int check_node(json_t *n, const char *prefix, struct hp_api_problem *pb)
{
	static const char *const k_node[] = {
	    "name",	     "devices",	    "cpu_cores",      "memory_gb",
	    "intra_bw_gbps", "net_bw_gbps", "net_latency_us", "base_power_w",
	    "net_transport", NULL};
	static const char *const k_dev[] = {"type", "count", "free", NULL};
	/* The names the pool file takes (HP_NET_RDMA is the last). */
	const char *transports[HP_NET_RDMA + 2];
	json_t *devs, *d;
	char f[96], transport[8];
	size_t i;
	int rc;

	if (!json_is_object(n))
		return hp_api_fail(pb, 400, "invalid-field", prefix,
				   "'%s' must be a node object {...}",
				   prefix[0] ? prefix : "the body");
	for (int t = 0; t <= HP_NET_RDMA; t++)
		transports[t] = hp_net_transport_name((enum hp_net_transport)t);
	transports[HP_NET_RDMA + 1] = NULL;
	if ((rc = known_keys(n, k_node, prefix, pb)) ||
	    (rc = get_str(n, "net_transport", prefix, transport,
			  sizeof(transport), transports, false, pb)))
		return rc;
	devs = json_object_get(n, "devices");
	if (!json_is_array(devs))
		return json_is_null(devs) || !devs
			   ? missing(pb, path(f, sizeof(f), prefix, "devices"),
				     "'devices': [{\"type\", \"count\"}, ...]")
			   : hp_api_fail(pb, 400, "invalid-field",
					 path(f, sizeof(f), prefix, "devices"),
					 "'%s' must be an array", f);
	json_array_foreach(devs, i, d)
	{
		char p[96];
		snprintf(p, sizeof(p), "%s%sdevices[%zu]", prefix,
			 prefix[0] ? "." : "", i);
		if (!json_is_object(d))
			return hp_api_fail(pb, 400, "invalid-field", p,
					   "'%s' must be an object", p);
		if ((rc = known_keys(d, k_dev, p, pb)))
			return rc;
	}
	return 0;
}

int hp_api_pool_check(const char *body, size_t len, bool one_node,
		      struct hp_api_problem *pb)
{
	static const char *const k_pool[] = {"nodes", NULL};
	json_t *o, *nodes, *n;
	size_t i;
	int rc = 0;

	if (!(o = load_max(body, len, HP_POOL_MAX_BYTES, pb)))
		return HP_EINVAL;
	if (one_node) {
		rc = check_node(o, "", pb);
		goto out;
	}
	if ((rc = known_keys(o, k_pool, NULL, pb)))
		goto out;
	nodes = json_object_get(o, "nodes");
	if (!json_is_array(nodes)) {
		rc = nodes ? hp_api_fail(pb, 400, "invalid-field", "nodes",
					 "'nodes' must be an array")
			   : missing(pb, "nodes", "'nodes': [...]");
		goto out;
	}
	json_array_foreach(nodes, i, n)
	{
		char p[32];
		snprintf(p, sizeof(p), "nodes[%zu]", i);
		if ((rc = check_node(n, p, pb)))
			goto out;
	}
out:
	json_decref(o);
	return rc;
}

int hp_api_model_parse(const char *body, size_t len,
		       struct hp_api_model_req *out, struct hp_api_problem *pb)
{
	static const char *const k[] = {"name", "spec", NULL};
	json_t *o, *spec;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!(o = load(body, len, pb)))
		return HP_EINVAL;
	if ((rc = known_keys(o, k, NULL, pb)) ||
	    (rc = get_str(o, "name", NULL, out->name, sizeof(out->name), NULL,
			  true, pb)))
		goto out;
	if (!out->name[0]) {
		rc = missing(pb, "name", "'name', a label for the model");
		goto out;
	}
	if (!(spec = json_object_get(o, "spec"))) {
		rc = missing(pb, "spec",
			     "'spec', a hetpool model spec (or send an ONNX "
			     "file as application/octet-stream)");
		goto out;
	}
	rc = get_spec(spec, "spec", &out->spec, pb);
out:
	json_decref(o);
	if (rc)
		hp_api_model_release(out);
	return rc;
}

void hp_api_model_release(struct hp_api_model_req *m)
{
	if (!m)
		return;
	free(m->spec);
	memset(m, 0, sizeof(*m));
}

int hp_api_refit_parse(const char *body, size_t len,
		       struct hp_api_refit_req *out, struct hp_api_problem *pb)
{
	static const char *const k[] = {"validate", "family", NULL};
	static const char *const families[] = {"physical", "linear", NULL};
	json_t *o, *v;
	int rc;

	memset(out, 0, sizeof(*out));
	out->validate = true;
	if (len == 0)
		return 0; /* no body: the defaults */
	if (!(o = load(body, len, pb)))
		return HP_EINVAL;
	if ((rc = known_keys(o, k, NULL, pb)) ||
	    (rc = get_str(o, "family", NULL, out->family, sizeof(out->family),
			  families, false, pb)))
		goto out;
	if ((v = json_object_get(o, "validate"))) {
		if (!json_is_boolean(v))
			rc = hp_api_fail(pb, 400, "invalid-field", "validate",
					 "'validate' must be true or false");
		else
			out->validate = json_is_true(v);
	}
out:
	json_decref(o);
	return rc;
}

int hp_api_dataset_parse(const char *body, size_t len,
			 struct hp_api_dataset_req *out,
			 struct hp_api_problem *pb)
{
	static const char *const k[] = {"name", "path", NULL};
	json_t *o;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!(o = load(body, len, pb)))
		return HP_EINVAL;
	if ((rc = known_keys(o, k, NULL, pb)) ||
	    (rc = get_str(o, "name", NULL, out->name, sizeof(out->name), NULL,
			  true, pb)) ||
	    (rc = get_str(o, "path", NULL, out->path, sizeof(out->path), NULL,
			  false, pb)))
		goto out;
	if (!out->name[0])
		rc = missing(pb, "name", "'name', the dataset's label");
	else if (!out->path[0])
		rc = missing(pb, "path",
			     "'path', the folder on the server that holds "
			     "it");
	else if (out->path[0] != '/' || strstr(out->path, "/../") ||
		 (strlen(out->path) >= 3 &&
		  !strcmp(out->path + strlen(out->path) - 3, "/..")))
		rc = hp_api_fail(pb, 400, "invalid-field", "path",
				 "'path' must be an absolute path without "
				 "'..'");
out:
	json_decref(o);
	if (rc)
		memset(out, 0, sizeof(*out));
	return rc;
}
