/*
 * h_jobs.c - recommendations and jobs: POST /v1/recommendations (the
 * answer of `hetpool recommend --json`, on the devices free now), and
 * jobs: submit, list, get, cancel, and a job's logs, metrics (the
 * trainer's per-step lines) and results.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hetpool/lrfind.h"
#include "hetpoold.h"

#define MAX_READ (16u << 20)
#define DEFAULT_READ (1u << 20)

/* The job description in the body, its device type checked against the
 * catalog: 0, or the answer in out. */
static int read_job(struct hd *d, struct hd_req *r, enum hp_api_body kind,
		    struct hp_api_job *j, struct hd_resp *out)
{
	struct hp_api_problem pb = {0};
	struct hp_error err = {0};

	if (hp_api_job_parse(r->body.data, r->body.len, kind, j, &pb)) {
		hd_problem_from(out, &pb);
		return -1;
	}
	if (j->device_type[0] && strcmp(j->device_type, "cpu")) {
		const struct hp_snap *snap = hp_ctx_acquire(d->ctx);
		const struct hp_device_type *t = hp_ctx_find_type(
		    hp_snap_catalog(snap), j->device_type, &err);
		hp_snap_release(snap);
		if (!t) {
			hd_problem(out, 400, "invalid-field",
				   "constraints.device_type",
				   "%s; GET /v1/nodes lists the pool's types",
				   err.msg);
			hp_api_job_release(j);
			return -1;
		}
	}
	return 0;
}

/* A library error about the job in a body: 422 naming the model when it
 * is the model that is missing. */
static void job_problem(struct hd_resp *out, const struct hp_api_job *j,
			const struct hp_error *err)
{
	if (err->code == HP_ENOENT && j->model_id)
		hd_problem(out, 422, "unknown-model", "model_id",
			   "there is no model %lld; POST /v1/models stores "
			   "one",
			   (long long)j->model_id);
	else if (err->code == HP_EINVAL || err->code == HP_EPARSE ||
		 err->code == HP_ESHAPE || err->code == HP_ERANGE ||
		 err->code == HP_ECYCLE || err->code == HP_EUNSUPP)
		hd_problem(out, 422, "unprocessable", NULL, "%s", err->msg);
	else
		hd_problem_err(out, err);
}

void hd_h_recommend(struct hd *d, struct hd_req *r, struct hd_resp *out)
{
	struct hp_api_job j;
	struct hp_rec_result res = {0};
	struct hp_rec_job rj;
	struct hd_pool *pool = NULL;
	struct hp_error err = {0};
	char *s;

	if (read_job(d, r, HP_API_RECOMMENDATION, &j, out))
		return;
	if (hd_recommend(d, &j, &res, &pool, &err)) {
		job_problem(out, &j, &err);
		goto out;
	}
	hp_api_job_rec(&j, &rj);
	if (!(s = hp_rec_result_json_ex(&res, &rj, pool->pool,
					HP_REC_JSON_COMPACT))) {
		hd_problem(out, 500, "internal", NULL, "out of memory");
		goto out;
	}
	hd_text(out, 200, "application/json", s, strlen(s));
out:
	hp_rec_result_release(&res);
	hd_pool_put(pool);
	hp_api_job_release(&j);
}

static bool path_id(struct hd_req *r, int64_t *id, struct hd_resp *out)
{
	if (hp_api_parse_id(r->params[0], id)) {
		hd_problem(out, 404, "not-found", NULL, "no job '%s'",
			   r->params[0]);
		return false;
	}
	return true;
}

static void answer_job(struct hd *d, int64_t id, int status,
		       struct hd_resp *out)
{
	struct hp_store_job j = {0};
	struct hp_error err = {0};
	struct hp_buf b;
	uint64_t gen = hd_jobdoc_gen();
	size_t len;
	char *doc;

	if (status == 200 && (doc = hd_jobdoc_get(id, &len))) {
		hd_text(out, 200, "application/json", doc, len);
		return;
	}
	if (hp_store_job_get(d->store, id, &j, &err)) {
		hd_problem_err(out, &err);
		return;
	}
	hp_buf_init(&b, 64u << 20);
	if (hd_job_render(d, &j, &b)) {
		hp_buf_release(&b);
		hd_problem(out, 500, "internal", NULL, "out of memory");
	} else {
		len = b.len;
		if (status == 200)
			hd_jobdoc_put(id, b.data, len,
				      hp_job_state_terminal(j.state), gen);
		hd_text(out, status, "application/json", hp_buf_detach(&b),
			len);
	}
	if (status == 201 || status == 202)
		snprintf(out->location, sizeof(out->location), "/v1/jobs/%lld",
			 (long long)id);
	hp_store_job_release(&j);
}

void hd_h_jobs_submit(struct hd *d, struct hd_req *r, struct hd_resp *out)
{
	struct hp_api_job j;
	struct hp_error err = {0};
	int64_t id = 0;

	if (read_job(d, r, HP_API_JOB, &j, out))
		return;
	if (hd_sched_submit(d, &j, &r->who, &id, &err))
		job_problem(out, &j, &err);
	else
		answer_job(d, id, 201, out);
	hp_api_job_release(&j);
}

void hd_h_job_get(struct hd *d, struct hd_req *r, struct hd_resp *out)
{
	int64_t id;

	if (path_id(r, &id, out))
		answer_job(d, id, 200, out);
}

void hd_h_jobs_list(struct hd *d, struct hd_req *r, struct hd_resp *out)
{
	struct hp_store_job_filter f = {0};
	struct hp_store_job *jobs = NULL;
	struct hp_error err = {0};
	const char *state = hd_query(r, "state"), *user = hd_query(r, "user");
	const char *limit = hd_query(r, "limit"), *after = hd_query(r, "after");
	const char *order = hd_query(r, "order");
	int64_t v;
	struct hp_buf b;
	size_t len;
	int n = 0, rc;

	f.limit = 100;
	if (state) {
		/* a comma-separated list of states */
		char buf[128];
		if (strlen(state) >= sizeof(buf)) {
			hd_problem(out, 400, "invalid-field", "state",
				   "'state' is longer than the six states "
				   "comma-separated");
			return;
		}
		snprintf(buf, sizeof(buf), "%s", state);
		for (char *p = buf, *e; p && *p; p = e) {
			enum hp_job_state st;
			if ((e = strchr(p, ',')))
				*e++ = '\0';
			if (hp_job_state_parse(p, &st)) {
				hd_problem(out, 400, "invalid-field", "state",
					   "'state' holds '%.32s'; give "
					   "queued, starting, running, "
					   "succeeded, failed or cancelled "
					   "(comma-separated)",
					   p);
				return;
			}
			f.states |= 1u << st;
		}
	}
	if (user) {
		if (!strcmp(user, "me"))
			f.owner = r->who.token_id;
		else if (hp_api_parse_id(user, &f.owner)) {
			hd_problem(out, 400, "invalid-field", "user",
				   "'user' must be 'me' or a token id");
			return;
		}
	}
	if (limit) {
		if (hp_parse_i64(limit, 1, 1000, &v)) {
			hd_problem(out, 400, "invalid-field", "limit",
				   "'limit' must be a whole number from 1 to "
				   "1000");
			return;
		}
		f.limit = (int)v;
	}
	if (after && hp_api_parse_id(after, &f.after_id)) {
		hd_problem(out, 400, "invalid-field", "after",
			   "'after' must be a job id");
		return;
	}
	if (order) {
		if (strcmp(order, "newest") && strcmp(order, "oldest")) {
			hd_problem(out, 400, "invalid-field", "order",
				   "'order' must be newest or oldest");
			return;
		}
		f.newest_first = !strcmp(order, "newest");
	}
	if (hp_store_job_list(d->store, &f, &jobs, &n, &err)) {
		hd_problem_err(out, &err);
		return;
	}
	hp_buf_init(&b, 256u << 20);
	rc = hp_buf_adds(&b, "{\"jobs\":[");
	for (int i = 0; i < n && !rc; i++)
		if (!(rc = i ? hp_buf_add(&b, ",", 1) : 0))
			rc = hd_job_render(d, &jobs[i], &b);
	if (!rc && n == f.limit)
		rc = hp_buf_printf(&b, "],\"next_after\":%lld}",
				   (long long)jobs[n - 1].id);
	else if (!rc)
		rc = hp_buf_adds(&b, "],\"next_after\":null}");
	hp_store_job_list_free(jobs, n);
	if (rc) {
		hp_buf_release(&b);
		hd_problem(out, 500, "internal", NULL, "out of memory");
		return;
	}
	len = b.len;
	hd_text(out, 200, "application/json", hp_buf_detach(&b), len);
}

void hd_h_job_cancel(struct hd *d, struct hd_req *r, struct hd_resp *out)
{
	struct hp_error err = {0};
	enum hp_job_state st;
	char reason[128];
	int64_t id;

	if (!path_id(r, &id, out))
		return;
	snprintf(reason, sizeof(reason), "cancelled by %s", r->who.name);
	if (hp_store_job_cancel(d->store, id,
				r->who.role == HD_ADMIN ? 0 : r->who.token_id,
				reason, &st, &err)) {
		hd_problem_err(out, &err);
		return;
	}
	hd_job_changed(id);
	hd_log(HP_LOG_INFO, "job cancel", "job", "i:", (long long)id, "who",
	       "s:", r->who.name, "state", "s:", hp_job_state_name(st), NULL);
	if (st == HP_JOB_CANCELLED) {
		hd_pool_changed(d);
		answer_job(d, id, 200, out);
	} else {
		/* the scheduler stops it; the job says cancel_requested */
		answer_job(d, id, 202, out);
	}
	hd_sched_kick(d);
}

int hd_job_remove(struct hd *d, int64_t id, int64_t owner, struct hp_error *err)
{
	struct hp_store_job sj = {0};
	struct hp_error e2 = {0};
	int rc;

	if ((rc = hp_store_job_get(d->store, id, &sj, err)))
		return rc;
	if (owner && sj.owner != owner) {
		hp_store_job_release(&sj);
		return hp_error_set(err, HP_ENOENT, "no job %lld",
				    (long long)id);
	}
	if (!hp_job_state_terminal(sj.state)) {
		rc = hp_error_set(err, HP_ESTATE,
				  "job %lld is %s: cancel it, and remove it "
				  "once it has ended",
				  (long long)id, hp_job_state_name(sj.state));
		hp_store_job_release(&sj);
		return rc;
	}
	/* the folder first: a job whose processes have not all ended yet
	 * (its deployment says so) keeps both; one whose folder is not
	 * under this jobs folder (moved, another --jobs-dir) loses only its
	 * row, and the log says where its folder was */
	if (sj.deploy_id &&
	    (rc = hp_deploy_remove(d->deploy, sj.deploy_id, &e2)) != 0) {
		if (rc != HP_ENOENT) {
			*err = e2;
			hp_store_job_release(&sj);
			return rc;
		}
		hd_log(HP_LOG_WARN, "job removed without its folder", "job",
		       "i:", (long long)id, "folder",
		       "s:", sj.deploy_dir ? sj.deploy_dir : "", "error",
		       "s:", e2.msg, NULL);
	}
	hp_store_job_release(&sj);
	if ((rc = hp_store_job_remove(d->store, id, owner, err)))
		return rc;
	hd_job_changed(id);
	return 0;
}

void hd_h_job_delete(struct hd *d, struct hd_req *r, struct hd_resp *out)
{
	struct hp_error err = {0};
	int64_t id;

	if (!path_id(r, &id, out))
		return;
	if (hd_job_remove(d, id, r->who.role == HD_ADMIN ? 0 : r->who.token_id,
			  &err)) {
		hd_problem_err(out, &err);
		return;
	}
	hd_log(HP_LOG_INFO, "job removed", "job", "i:", (long long)id, "who",
	       "s:", r->who.name, NULL);
	hd_text(out, 204, NULL, NULL, 0);
}

/* The started job's deployment: 0 with it in *dj, or the answer. */
static int deployment(struct hd *d, struct hd_req *r, struct hp_store_job *sj,
		      struct hd_resp *out)
{
	struct hp_error err = {0};
	int64_t id;

	if (!path_id(r, &id, out))
		return -1;
	if (hp_store_job_get(d->store, id, sj, &err)) {
		hd_problem_err(out, &err);
		return -1;
	}
	if (!sj->deploy_id) {
		/* ended before it was launched, nothing will come (404); else
		 * not launched yet (409) */
		bool ended = hp_job_state_terminal(sj->state);
		hd_problem(out, ended ? 404 : 409,
			   ended ? "not-found" : "not-launched", NULL,
			   "job %lld is %s and %s launched: it has no logs, "
			   "metrics or results%s",
			   (long long)id, hp_job_state_name(sj->state),
			   ended ? "was never" : "has not been",
			   ended ? "" : " yet");
		hp_store_job_release(sj);
		return -1;
	}
	return 0;
}

/* Bytes [offset, offset + limit) of a file, as ctype; the file's size in
 * X-Size so a client can follow it.  A launched job's file that was not
 * written (yet) is empty, so a client following it sees no error. */
static void serve_file(struct hd_req *r, const char *path, const char *ctype,
		       struct hd_resp *out)
{
	const char *off = hd_query(r, "offset"), *lim = hd_query(r, "limit");
	int64_t o = 0, l = DEFAULT_READ;
	struct stat st;
	FILE *f;
	char *buf;
	size_t n;

	if (off && hp_parse_i64(off, 0, INT64_MAX / 2, &o)) {
		hd_problem(out, 400, "invalid-field", "offset",
			   "'offset' must be a byte offset (0 or more)");
		return;
	}
	if (lim && hp_parse_i64(lim, 1, MAX_READ, &l)) {
		hd_problem(out, 400, "invalid-field", "limit",
			   "'limit' must be 1 to %u bytes", MAX_READ);
		return;
	}
	if (!(f = fopen(path, "rb"))) {
		if (errno == ENOENT) {
			hd_text(out, 200, ctype, NULL, 0);
			out->xname = "X-Size";
			snprintf(out->xvalue, sizeof(out->xvalue), "0");
		} else {
			hd_problem(out, 500, "internal", NULL,
				   "cannot read the file");
		}
		return;
	}
	if (fstat(fileno(f), &st)) {
		fclose(f);
		hd_problem(out, 500, "internal", NULL, "cannot read the file");
		return;
	}
	/* what the file holds past offset, not the whole limit: a
	 * reader asking for 16 MiB of a small log costs its size */
	if (o >= st.st_size)
		l = 0;
	else if (l > st.st_size - o)
		l = st.st_size - o;
	if (!(buf = malloc((size_t)l + 1))) {
		fclose(f);
		hd_problem(out, 500, "internal", NULL, "cannot read the file");
		return;
	}
	n = 0;
	if (l > 0 && fseeko(f, (off_t)o, SEEK_SET) == 0)
		n = fread(buf, 1, (size_t)l, f);
	fclose(f);
	hd_text(out, 200, ctype, buf, n);
	out->xname = "X-Size";
	snprintf(out->xvalue, sizeof(out->xvalue), "%lld",
		 (long long)st.st_size);
}

void hd_h_job_logs(struct hd *d, struct hd_req *r, struct hd_resp *out)
{
	struct hp_store_job sj = {0};
	struct hp_error err = {0};
	const char *rk = hd_query(r, "rank");
	char path[HP_DEPLOY_PATH_MAX + 64];
	int64_t rank = -1;

	if (rk && hp_parse_i64(rk, 0, HP_PLAN_MAX_RANKS - 1, &rank)) {
		hd_problem(out, 400, "invalid-field", "rank",
			   "'rank' must be a rank number from 0");
		return;
	}
	if (deployment(d, r, &sj, out))
		return;
	{
		/* a rank the job has, and a log that will be written here
		 * (a client following one that never is would wait for
		 * ever) */
		struct hp_job dj = {0};
		if (hp_deploy_status(d->deploy, sj.deploy_id, false, &dj,
				     &err)) {
			hd_problem_err(out, &err);
			goto done;
		}
		if (rank >= dj.nranks) {
			hd_problem(out, 404, "not-found", "rank",
				   "job %lld has %d rank%s (0 to %d)",
				   (long long)sj.id, dj.nranks,
				   dj.nranks == 1 ? "" : "s", dj.nranks - 1);
			hp_job_release(&dj);
			goto done;
		}
		if (dj.backend == HP_BACKEND_KUBERNETES) {
			hd_problem(out, 409, "logs-in-pods", NULL,
				   dj.applied
				       ? "job %lld runs in Kubernetes: its "
					 "logs are its pods' (kubectl logs "
					 "-l hetpool.io/job=%s)"
				       : "job %lld's manifests were written, "
					 "not applied: no pod ran, so there "
					 "is no log (%s)",
				   (long long)sj.id, dj.id);
			hp_job_release(&dj);
			goto done;
		}
		hp_job_release(&dj);
	}
	if (hp_deploy_log_path(d->deploy, sj.deploy_id, (int)rank, path,
			       sizeof(path), &err))
		hd_problem_err(out, &err);
	else
		serve_file(r, path, "text/plain; charset=utf-8", out);
done:
	hp_store_job_release(&sj);
}

void hd_h_job_metrics(struct hd *d, struct hd_req *r, struct hd_resp *out)
{
	struct hp_store_job sj = {0};
	char path[HP_DEPLOY_PATH_MAX + 64];

	if (deployment(d, r, &sj, out))
		return;
	snprintf(path, sizeof(path), "%s/%s/out/metrics.jsonl",
		 hp_deploy_jobs_dir(d->deploy), sj.deploy_id);
	serve_file(r, path, "application/x-ndjson", out);
	hp_store_job_release(&sj);
}

/* Most bytes of metrics.jsonl a range test's analysis reads (a test has
 * hundreds of lines). */
#define LRFIND_MAX_BYTES (64u << 20)
/* Points of each fitted curve drawn for the dashboard. */
#define LRFIND_CURVE_POINTS 120

static json_t *jnum_or_null(double x)
{
	return isfinite(x) ? json_real(x) : json_null();
}

/* The steps as read, for a plot of the range test. */
static json_t *lrfind_points(const struct hp_lrfind_series *s)
{
	json_t *pts = json_array();

	for (int i = 0; pts && i < s->n; i++)
		json_array_append_new(
		    pts,
		    json_pack("{s:I, s:f, s:o, s:o}", "step",
			      (json_int_t)s->pts[i].step, "lr", s->pts[i].lr,
			      "loss", jnum_or_null(s->pts[i].loss), "accuracy",
			      jnum_or_null(s->pts[i].accuracy)));
	return pts;
}

/* The smoothed loss and both fits as [lr, loss] pairs, each over the
 * rates it covers: what the plot draws beside the steps. */
static json_t *lrfind_curves(const struct hp_lrfind_series *s,
			     const struct hp_lrfind_result *res)
{
	json_t *sm = json_array(), *po = json_array(), *lf = json_array();
	const struct hp_lrfind_logfit *L = &res->logfit;
	double lo = log(s->pts[res->fit_start].lr);
	double hi = log(s->pts[res->fit_end - 1].lr);
	const int k = LRFIND_CURVE_POINTS;

	for (int i = 0; res->smooth && i < res->analysed; i++)
		json_array_append_new(sm,
				      json_pack("[f, o]", s->pts[i].lr,
						jnum_or_null(res->smooth[i])));
	for (int i = 0; i < k && hi > lo; i++) {
		double lr = exp(lo + (hi - lo) * i / (k - 1));
		json_array_append_new(
		    po, json_pack(
			    "[f, o]", lr,
			    jnum_or_null(hp_lrfind_poly_eval(&res->poly, lr))));
	}
	for (int i = 0; i < k && L->points > 0 && L->lr_hi > L->lr_lo; i++) {
		double lr =
		    L->lr_lo * pow(L->lr_hi / L->lr_lo, (double)i / (k - 1));
		json_array_append_new(
		    lf, json_pack("[f, o]", lr,
				  jnum_or_null(L->a + L->b * log(lr))));
	}
	return json_pack("{s:o, s:o, s:o}", "smoothed", sm, "polynomial", po,
			 "log_fit", lf);
}

void hd_h_job_lrfind(struct hd *d, struct hd_req *r, struct hd_resp *out)
{
	struct hp_store_job sj = {0};
	struct hp_lrfind_series s;
	struct hp_lrfind_result res = {0};
	struct hp_lrfind_run run = {0};
	struct hp_api_job j = {0};
	struct hp_api_problem pb = {0};
	struct hp_error err = {0};
	char path[HP_DEPLOY_PATH_MAX + 64];
	char *text = NULL, *an = NULL;
	size_t len = 0, used = 0;
	json_t *o, *analysis = NULL;
	int rc;

	hp_lrfind_series_init(&s);
	if (deployment(d, r, &sj, out))
		goto out_nojob;
	if (!sj.description ||
	    hp_api_job_parse(sj.description, strlen(sj.description), HP_API_JOB,
			     &j, &pb) ||
	    !(j.training.lr_range_min > 0)) {
		hd_problem(out, 404, "not-a-range-test", NULL,
			   "job %lld is not a learning-rate range test (a "
			   "job is one when submitted with "
			   "training.lr_range)",
			   (long long)sj.id);
		goto out;
	}
	snprintf(path, sizeof(path), "%s/%s/out/metrics.jsonl",
		 hp_deploy_jobs_dir(d->deploy), sj.deploy_id);
	rc = hp_read_file(path, LRFIND_MAX_BYTES, &text, &len, &err);
	if (rc == HP_ENOENT) {
		rc = 0;
		len = 0;
	} else if (rc) {
		hd_problem_err(out, &err);
		goto out;
	}
	/* A running job's last line may be half written: left for later. */
	rc = hp_lrfind_parse_metrics(&s, text ? text : "", len, "metrics.jsonl",
				     1, HP_LRFIND_PARSE_PARTIAL, &used, &err);
	if (rc == HP_ENOMEM) {
		hd_problem(out, 500, "internal", NULL, "out of memory");
		goto out;
	}
	if (!rc && !(rc = hp_lrfind_analyse(&s, NULL, &res, &err))) {
		run.steps_requested = j.steps;
		if ((an = hp_lrfind_result_json(&s, &res, &run)))
			analysis = json_loads(an, 0, NULL);
		if (!analysis) {
			hd_problem(out, 500, "internal", NULL, "out of memory");
			goto out;
		}
	}
	o = json_pack("{s:I, s:s, s:f, s:f, s:I, s:i, s:o, s:o}", "job_id",
		      (json_int_t)sj.id, "state", hp_job_state_name(sj.state),
		      "lr_min", j.training.lr_range_min, "lr_max",
		      j.training.lr_range_max, "steps_requested",
		      (json_int_t)j.steps, "steps_read", s.n, "analysis",
		      analysis ? analysis : json_null(), "analysis_error",
		      rc ? json_string(err.msg) : json_null());
	if (o) {
		json_object_set_new(o, "points", lrfind_points(&s));
		json_object_set_new(o, "curves",
				    rc ? json_null() : lrfind_curves(&s, &res));
	}
	hd_json(out, 200, o);
out:
	hp_api_job_release(&j);
	hp_store_job_release(&sj);
out_nojob:
	hp_lrfind_result_release(&res);
	hp_lrfind_series_release(&s);
	free(text);
	free(an);
}

void hd_h_job_results(struct hd *d, struct hd_req *r, struct hd_resp *out)
{
	struct hp_store_job sj = {0};
	struct hp_job dj = {0};
	struct hp_error err = {0};
	char *s;

	if (deployment(d, r, &sj, out))
		return;
	if (!hp_job_state_terminal(sj.state)) {
		hd_problem(out, 409, "not-ended", NULL,
			   "job %lld is %s: its results come when it ends",
			   (long long)sj.id, hp_job_state_name(sj.state));
		goto out;
	}
	if (hp_deploy_status(d->deploy, sj.deploy_id, false, &dj, &err)) {
		hd_problem_err(out, &err);
		goto out;
	}
	if (!dj.results) {
		hd_problem(out, 404, "no-results", NULL,
			   "job %lld ended %s without results%s%s",
			   (long long)sj.id, hp_job_state_name(sj.state),
			   sj.reason ? ": " : "", sj.reason ? sj.reason : "");
		goto out;
	}
	s = dj.results;
	dj.results = NULL;
	hd_text(out, 200, "application/json", s, strlen(s));
out:
	hp_job_release(&dj);
	hp_store_job_release(&sj);
}
