/*
 * job.c - a job's state file (JOBDIR/job.json): its names, parsing and
 * writing, and the one way to change it: under the job's lock, forward
 * only (queued, starting, running, then one terminal state that is
 * final), replaced atomically.  Also what a job collects when it ends:
 * the trainer's results and what each rank ran on.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "deploy/deploy_int.h"
#include "util/banned.h"

/* Largest state file, results file and rank record read. */
#define JOB_MAX_BYTES (1u << 20)
#define RESULTS_MAX_BYTES (1u << 20)
#define RESULTS_KEEP_BYTES (64u << 10)

static const char *const state_names[] = {
    "queued", "starting", "running", "succeeded", "failed", "cancelled",
};
static const char *const backend_names[] = {
    "local",
    "mpi",
    "slurm",
    "kubernetes",
};

const char *hp_job_state_name(enum hp_job_state s)
{
	return (unsigned)s < 6 ? state_names[s] : "unknown";
}

int hp_job_state_parse(const char *s, enum hp_job_state *out)
{
	for (int i = 0; i < 6; i++)
		if (!strcmp(s, state_names[i])) {
			*out = (enum hp_job_state)i;
			return 0;
		}
	return HP_EINVAL;
}

bool hp_job_state_terminal(enum hp_job_state s)
{
	return s == HP_JOB_SUCCEEDED || s == HP_JOB_FAILED ||
	       s == HP_JOB_CANCELLED;
}

static int state_rank(enum hp_job_state s)
{
	return hp_job_state_terminal(s) ? 3 : (int)s;
}

bool hp__state_forward(enum hp_job_state a, enum hp_job_state b)
{
	return state_rank(b) > state_rank(a);
}

const char *hp_backend_name(enum hp_backend b)
{
	return (unsigned)b < HP_BACKEND_COUNT ? backend_names[b] : "unknown";
}

int hp_backend_parse(const char *s, enum hp_backend *out)
{
	for (int i = 0; i < HP_BACKEND_COUNT; i++)
		if (!strcmp(s, backend_names[i])) {
			*out = (enum hp_backend)i;
			return 0;
		}
	if (!strcmp(s, "k8s")) {
		*out = HP_BACKEND_KUBERNETES;
		return 0;
	}
	return HP_EINVAL;
}

bool hp_job_id_valid(const char *id)
{
	size_t n = strlen(id);

	if (n == 0 || n >= HP_JOB_ID_MAX || id[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((id[i] >= 'a' && id[i] <= 'z') ||
		      (id[i] >= '0' && id[i] <= '9') || id[i] == '-'))
			return false;
	return true;
}

double hp__wall_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void hp_job_release(struct hp_job *j)
{
	if (!j)
		return;
	free(j->results);
	free(j->ranks);
	j->results = NULL;
	j->ranks = NULL;
	j->nranks_seen = 0;
}

void hp_job_list_free(struct hp_job *jobs, int n)
{
	for (int i = 0; jobs && i < n; i++)
		hp_job_release(&jobs[i]);
	free(jobs);
}

static json_t *str_or_null(const char *s)
{
	return s && *s ? json_string(s) : json_null();
}

static json_t *time_or_null(double t)
{
	return t > 0 ? json_real(t) : json_null();
}

static json_t *job_object(const struct hp_job *j)
{
	json_t *o = json_object(), *ranks = json_array(), *res = NULL;

	json_object_set_new(o, "id", json_string(j->id));
	json_object_set_new(o, "name", str_or_null(j->name));
	json_object_set_new(o, "backend",
			    json_string(hp_backend_name(j->backend)));
	json_object_set_new(o, "state",
			    json_string(hp_job_state_name(j->state)));
	json_object_set_new(o, "reason", str_or_null(j->reason));
	json_object_set_new(o, "created", time_or_null(j->created_s));
	json_object_set_new(o, "started", time_or_null(j->started_s));
	json_object_set_new(o, "ended", time_or_null(j->ended_s));
	json_object_set_new(o, "ranks", json_integer(j->nranks));
	json_object_set_new(o, "model", str_or_null(j->model));
	json_object_set_new(o, "data", str_or_null(j->data));
	json_object_set_new(o, "cancel_requested",
			    json_boolean(j->cancel_requested));
	json_object_set_new(o, "exit_status",
			    j->exit_status >= 0 ? json_integer(j->exit_status)
						: json_null());
	json_object_set_new(o, "pid",
			    j->pid > 0 ? json_integer(j->pid) : json_null());
	json_object_set_new(o, "pid_start",
			    j->pid_start
				? json_integer((json_int_t)j->pid_start)
				: json_null());
	json_object_set_new(o, "slurm_id", str_or_null(j->slurm_id));
	json_object_set_new(o, "applied", json_boolean(j->applied));
	json_object_set_new(o, "namespace", str_or_null(j->k8s_namespace));
	if (j->results)
		res = json_loads(j->results, 0, NULL);
	json_object_set_new(o, "results", res ? res : json_null());
	for (int i = 0; i < j->nranks_seen; i++) {
		const struct hp_job_rank *r = &j->ranks[i];
		json_array_append_new(
		    ranks,
		    json_pack("{s:i, s:s, s:s, s:s, s:s, s:s, s:o, s:I}",
			      "rank", r->rank, "host", r->host, "node", r->node,
			      "device", r->device, "requested", r->requested,
			      "cuda_visible_devices", r->cuda_visible_devices,
			      "note", str_or_null(r->note), "pid",
			      (json_int_t)r->pid));
	}
	json_object_set_new(o, "rank_devices", ranks);
	return o;
}

char *hp_job_json(const struct hp_job *j)
{
	json_t *o = job_object(j);
	char *s = json_dumps(o, JSON_INDENT(2));

	json_decref(o);
	return s;
}

/* Copy a string field (absent or null: ""); false when it is something
 * else or too long. */
static bool take_str(json_t *o, const char *key, char *out, size_t n)
{
	json_t *x = json_object_get(o, key);

	out[0] = '\0';
	if (!x || json_is_null(x))
		return true;
	if (!json_is_string(x) || json_string_length(x) >= n ||
	    strlen(json_string_value(x)) != json_string_length(x))
		return false;
	memcpy(out, json_string_value(x), json_string_length(x) + 1);
	return true;
}

static bool take_time(json_t *o, const char *key, double *out)
{
	json_t *x = json_object_get(o, key);

	*out = 0;
	if (!x || json_is_null(x))
		return true;
	if (!json_is_number(x) || !isfinite(json_number_value(x)) ||
	    json_number_value(x) < 0)
		return false;
	*out = json_number_value(x);
	return true;
}

static bool take_int(json_t *o, const char *key, int64_t lo, int64_t hi,
		     int64_t dflt, int64_t *out)
{
	json_t *x = json_object_get(o, key);

	*out = dflt;
	if (!x || json_is_null(x))
		return true;
	if (!json_is_integer(x) || json_integer_value(x) < lo ||
	    json_integer_value(x) > hi)
		return false;
	*out = json_integer_value(x);
	return true;
}

static int parse_ranks(json_t *a, struct hp_job *out)
{
	size_t n = json_array_size(a);

	if (!json_is_array(a) || n > HP_PLAN_MAX_RANKS)
		return -1;
	if (n == 0)
		return 0;
	out->ranks = calloc(n, sizeof(*out->ranks));
	if (!out->ranks)
		return -1;
	for (size_t i = 0; i < n; i++) {
		json_t *r = json_array_get(a, i);
		struct hp_job_rank *x = &out->ranks[i];
		int64_t v;
		if (!json_is_object(r) ||
		    !take_int(r, "rank", 0, HP_PLAN_MAX_RANKS, 0, &v))
			return -1;
		x->rank = (int)v;
		if (!take_int(r, "pid", 0, INT64_MAX, 0, &v))
			return -1;
		x->pid = (long)v;
		if (!take_str(r, "host", x->host, sizeof(x->host)) ||
		    !take_str(r, "node", x->node, sizeof(x->node)) ||
		    !take_str(r, "device", x->device, sizeof(x->device)) ||
		    !take_str(r, "requested", x->requested,
			      sizeof(x->requested)) ||
		    !take_str(r, "cuda_visible_devices",
			      x->cuda_visible_devices,
			      sizeof(x->cuda_visible_devices)) ||
		    !take_str(r, "note", x->note, sizeof(x->note)))
			return -1;
		out->nranks_seen = (int)i + 1;
	}
	return 0;
}

int hp_job_parse(const char *text, size_t len, struct hp_job *out,
		 struct hp_error *err)
{
	json_error_t je;
	json_t *o, *x;
	char buf[64];
	int64_t v;
	const char *bad = NULL;

	memset(out, 0, sizeof(*out));
	out->exit_status = -1;
	o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!o)
		return hp_error_set(err, HP_EPARSE, "job state: line %d: %s",
				    je.line, je.text);
	if (!json_is_object(o)) {
		bad = "not an object";
		goto out;
	}
	if (!take_str(o, "id", out->id, sizeof(out->id)) ||
	    !hp_job_id_valid(out->id)) {
		bad = "'id'";
		goto out;
	}
	if (!take_str(o, "state", buf, sizeof(buf)) ||
	    hp_job_state_parse(buf, &out->state)) {
		bad = "'state'";
		goto out;
	}
	if (!take_str(o, "backend", buf, sizeof(buf)) ||
	    hp_backend_parse(buf, &out->backend)) {
		bad = "'backend'";
		goto out;
	}
	if (!take_str(o, "name", out->name, sizeof(out->name)) ||
	    !take_str(o, "reason", out->reason, sizeof(out->reason)) ||
	    !take_str(o, "model", out->model, sizeof(out->model)) ||
	    !take_str(o, "data", out->data, sizeof(out->data)) ||
	    !take_str(o, "slurm_id", out->slurm_id, sizeof(out->slurm_id)) ||
	    !take_str(o, "namespace", out->k8s_namespace,
		      sizeof(out->k8s_namespace))) {
		bad = "a text field";
		goto out;
	}
	if (!take_time(o, "created", &out->created_s) ||
	    !take_time(o, "started", &out->started_s) ||
	    !take_time(o, "ended", &out->ended_s)) {
		bad = "a time";
		goto out;
	}
	if (!take_int(o, "ranks", 0, HP_PLAN_MAX_RANKS, 0, &v)) {
		bad = "'ranks'";
		goto out;
	}
	out->nranks = (int)v;
	if (!take_int(o, "exit_status", 0, 1 << 16, -1, &v)) {
		bad = "'exit_status'";
		goto out;
	}
	out->exit_status = (int)v;
	if (!take_int(o, "pid", 0, INT32_MAX, 0, &v)) {
		bad = "'pid'";
		goto out;
	}
	out->pid = (long)v;
	if (!take_int(o, "pid_start", 0, INT64_MAX, 0, &v)) {
		bad = "'pid_start'";
		goto out;
	}
	out->pid_start = (unsigned long long)v;
	x = json_object_get(o, "cancel_requested");
	out->cancel_requested = json_is_true(x);
	x = json_object_get(o, "applied");
	out->applied = json_is_true(x);
	x = json_object_get(o, "results");
	if (json_is_object(x)) {
		out->results = json_dumps(x, JSON_COMPACT);
		if (!out->results) {
			bad = "'results'";
			goto out;
		}
	}
	x = json_object_get(o, "rank_devices");
	if (x && !json_is_null(x) && parse_ranks(x, out)) {
		bad = "'rank_devices'";
		goto out;
	}
out:
	json_decref(o);
	if (bad) {
		hp_job_release(out);
		return hp_error_set(err, HP_EPARSE, "job state: %s is bad",
				    bad);
	}
	return 0;
}

int hp__job_load(const char *jobdir, struct hp_job *out, struct hp_error *err)
{
	char path[HP_DEPLOY_PATH_MAX + 32], *text;
	size_t len;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = hp__path(path, sizeof(path), err, "%s/%s", jobdir,
			   HP_JOB_FILE)))
		return rc;
	if ((rc = hp_read_file(path, JOB_MAX_BYTES, &text, &len, err))) {
		hp_error_prefix(err, "'%s'", path);
		return rc;
	}
	rc = hp_job_parse(text, len, out, err);
	free(text);
	if (rc) {
		hp_error_prefix(err, "'%s'", path);
		return rc;
	}
	snprintf(out->dir, sizeof(out->dir), "%s", jobdir);
	return 0;
}

int hp__job_save(const struct hp_job *job, struct hp_error *err)
{
	char path[HP_DEPLOY_PATH_MAX + 32];
	json_t *o;
	int rc;

	if ((rc = hp__path(path, sizeof(path), err, "%s/%s", job->dir,
			   HP_JOB_FILE)))
		return rc;
	if (!(o = job_object(job)))
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	rc = hp__write_json(path, o, err);
	json_decref(o);
	return rc;
}

int hp__job_update(const char *jobdir, int state, const char *reason,
		   void (*fn)(struct hp_job *, void *), void *ud,
		   struct hp_job *out, struct hp_error *err)
{
	struct hp_job j;
	int fd, rc;

	if ((fd = hp__lock(jobdir, err)) < 0)
		return fd;
	if ((rc = hp__job_load(jobdir, &j, err)))
		goto out;
	if (fn)
		fn(&j, ud);
	if (state >= 0 &&
	    hp__state_forward(j.state, (enum hp_job_state)state)) {
		j.state = (enum hp_job_state)state;
		if (reason)
			snprintf(j.reason, sizeof(j.reason), "%s", reason);
		if (j.state == HP_JOB_RUNNING && !j.started_s)
			j.started_s = hp__wall_now();
		if (hp_job_state_terminal(j.state)) {
			j.ended_s = hp__wall_now();
			if (!j.started_s && j.state == HP_JOB_SUCCEEDED)
				j.started_s = j.ended_s;
			hp__job_collect(&j);
		}
	}
	rc = hp__job_save(&j, err);
	if (!rc && out) {
		*out = j;
		memset(&j, 0, sizeof(j));
	}
	hp_job_release(&j);
out:
	hp__unlock(fd);
	return rc;
}

/* One rank's record, logs/rank-K.json, as hp_deploy_rank_prepare()
 * wrote it. */
static bool read_rank(const char *dir, int k, struct hp_job_rank *r)
{
	char path[HP_DEPLOY_PATH_MAX + 64];
	json_t *o;
	int64_t v;
	bool ok;

	snprintf(path, sizeof(path), "%s/logs/rank-%d.json", dir, k);
	if (!(o = hp__read_json(path, 64u << 10, NULL)))
		return false;
	ok = json_is_object(o) &&
	     take_str(o, "host", r->host, sizeof(r->host)) &&
	     take_str(o, "node", r->node, sizeof(r->node)) &&
	     take_str(o, "device", r->device, sizeof(r->device)) &&
	     take_str(o, "requested", r->requested, sizeof(r->requested)) &&
	     take_str(o, "cuda_visible_devices", r->cuda_visible_devices,
		      sizeof(r->cuda_visible_devices)) &&
	     take_str(o, "note", r->note, sizeof(r->note)) &&
	     take_int(o, "pid", 0, INT64_MAX, 0, &v);
	r->pid = ok ? (long)v : 0;
	r->rank = k;
	json_decref(o);
	return ok;
}

bool hp__results_state(const char *jobdir, char *buf, size_t n, char *why,
		       size_t wn)
{
	char path[HP_DEPLOY_PATH_MAX + 64];
	json_t *o, *s;
	bool ok;

	buf[0] = '\0';
	if (why)
		why[0] = '\0';
	snprintf(path, sizeof(path), "%s/out/results.json", jobdir);
	o = hp__read_json(path, RESULTS_MAX_BYTES, NULL);
	ok = json_is_object(o);
	s = ok ? json_object_get(o, "state") : NULL;
	if (json_is_string(s) && !hp_str_has_control(json_string_value(s)))
		snprintf(buf, n, "%s", json_string_value(s));
	s = ok ? json_object_get(o, "stop_reason") : NULL;
	if (why && json_is_string(s) &&
	    !hp_str_has_control(json_string_value(s)))
		snprintf(why, wn, "%s", json_string_value(s));
	json_decref(o);
	return ok;
}

enum hp_job_state hp__stuck_outcome(const char *jobdir, const char *argv0,
				    double after_s, const char *after,
				    char *reason, size_t n)
{
	const char *name =
	    strrchr(argv0, '/') ? strrchr(argv0, '/') + 1 : argv0;
	char state[32];
	bool have = hp__results_state(jobdir, state, sizeof(state), NULL, 0);

	if (have &&
	    (!strcmp(state, "completed") || !strcmp(state, "stopped"))) {
		snprintf(reason, n,
			 "%s did not exit within %.3g s after %s, and was "
			 "stopped; the trainer had finished (out/results.json: "
			 "%s)",
			 name, after_s, after, state);
		return HP_JOB_SUCCEEDED;
	}
	if (have && !strcmp(state, "cancelled")) {
		snprintf(reason, n,
			 "the trainer stopped on a SIGTERM (out/results.json: "
			 "cancelled); %s did not exit within %.3g s after %s, "
			 "and was stopped",
			 name, after_s, after);
		return HP_JOB_CANCELLED;
	}
	snprintf(reason, n,
		 "%s did not exit within %.3g s after %s, and was stopped; the "
		 "trainer wrote no results (see the rank logs)",
		 name, after_s, after);
	return HP_JOB_FAILED;
}

void hp__job_collect(struct hp_job *job)
{
	char path[HP_DEPLOY_PATH_MAX + 64];
	json_t *o;

	snprintf(path, sizeof(path), "%s/out/results.json", job->dir);
	o = hp__read_json(path, RESULTS_MAX_BYTES, NULL);
	if (json_is_object(o)) {
		char *s = json_dumps(o, JSON_COMPACT);
		if (s && strlen(s) > RESULTS_KEEP_BYTES) {
			/* many ranks: their lists stay in the file, the
			 * totals come into the state file */
			free(s);
			json_object_del(o, "devices");
			json_object_del(o, "rank_energy_j");
			json_object_del(o, "local_batches");
			json_object_set_new(o, "per_rank_lists",
					    json_string("left out: see "
							"out/results.json"));
			s = json_dumps(o, JSON_COMPACT);
		}
		if (s && strlen(s) <= RESULTS_KEEP_BYTES) {
			free(job->results);
			job->results = s;
		} else {
			free(s);
		}
	}
	json_decref(o);
	if (job->nranks > 0 && job->nranks <= HP_PLAN_MAX_RANKS) {
		struct hp_job_rank *r = calloc((size_t)job->nranks, sizeof(*r));
		int n = 0;
		for (int k = 0; r && k < job->nranks; k++)
			if (read_rank(job->dir, k, &r[n]))
				n++;
		if (r && n) {
			free(job->ranks);
			job->ranks = r;
			job->nranks_seen = n;
		} else {
			free(r);
		}
	}
}
