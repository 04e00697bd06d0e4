/*
 * h_admin.c - tokens (admin: create, list, revoke), measurements
 * (profiler rows uploaded as CSV; finished jobs' steps, recorded by the
 * scheduler), the estimator (what it was fitted on, its validation
 * errors) and its refit (admin: fitted in a thread of its own from the
 * shipped profiles, the stored profile rows and the public GPU
 * measurements, then swapped in while requests go on with the old one;
 * recorded in the store so a restart keeps it), and registered datasets.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "hetpoold.h"

static const char *const role_names[] = {"reader", "user", "admin"};

static double wall_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static bool path_id(struct hd_req *r, int64_t *id, struct hd_resp *out,
		    const char *what)
{
	if (hp_api_parse_id(r->params[0], id)) {
		hd_problem(out, 404, "not-found", NULL, "no %s '%s'", what,
			   r->params[0]);
		return false;
	}
	return true;
}

/* ---- tokens */

static json_t *token_json(const struct hp_store_token *t)
{
	return json_pack(
	    "{s:I, s:o, s:s, s:f, s:o, s:o}", "id", (json_int_t)t->id, "name",
	    hd_jstr(t->name), "role", role_names[t->role], "created_s",
	    t->created_s, "revoked_s",
	    t->revoked_s > 0 ? json_real(t->revoked_s) : json_null(),
	    "last_used_s",
	    t->last_used_s > 0 ? json_real(t->last_used_s) : json_null());
}

void hd_h_tokens_list(struct hd *d, struct hd_req *r, struct hd_resp *out)
{
	struct hp_store_token *ts = NULL;
	struct hp_error err = {0};
	json_t *a;
	int n = 0;

	(void)r;
	if (hp_store_token_list(d->store, &ts, &n, &err)) {
		hd_problem_err(out, &err);
		return;
	}
	a = json_array();
	for (int i = 0; i < n; i++)
		json_array_append_new(a, token_json(&ts[i]));
	hp_store_token_list_free(ts, n);
	hd_json(out, 200, json_pack("{s:o}", "tokens", a));
}

void hd_h_tokens_add(struct hd *d, struct hd_req *r, struct hd_resp *out)
{
	struct hp_api_token_req t;
	struct hp_api_problem pb = {0};
	struct hp_error err = {0};
	char token[HP_TOKEN_LEN + 1];
	enum hp_role role;
	int64_t id;

	if (hp_api_token_parse(r->body.data, r->body.len, &t, &pb)) {
		hd_problem_from(out, &pb);
		return;
	}
	hp_role_parse(t.role, &role);
	if (hp_store_token_create(d->store, t.name, role, token, &id, &err)) {
		hd_problem_err(out, &err);
		return;
	}
	/* the token's text goes to the caller once, and nowhere else */
	hd_json(out, 201,
		json_pack("{s:I, s:s, s:s, s:s}", "id", (json_int_t)id, "name",
			  t.name, "role", t.role, "token", token));
	explicit_bzero(token, sizeof(token));
	snprintf(out->location, sizeof(out->location), "/v1/tokens/%lld",
		 (long long)id);
	hd_log(HP_LOG_INFO, "token created", "token_id", "i:", (long long)id,
	       "name", "s:", t.name, "role", "s:", t.role, "who",
	       "s:", r->who.name, NULL);
}

void hd_h_token_revoke(struct hd *d, struct hd_req *r, struct hd_resp *out)
{
	struct hp_error err = {0};
	int64_t id;

	if (!path_id(r, &id, out, "token"))
		return;
	if (hp_store_token_revoke(d->store, id, &err)) {
		hd_problem_err(out, &err);
		return;
	}
	hd_auth_flush(d->auth);
	hd_log(HP_LOG_INFO, "token revoked", "token_id", "i:", (long long)id,
	       "who", "s:", r->who.name, NULL);
	hd_text(out, 204, NULL, NULL, 0);
}

/* ---- measurements */

/* Profile rows carry no prediction in the store: the estimator in use
 * predicts each from the spec it ran (the row's spec_json) at its batch on
 * its device type.  Consecutive rows of one configuration at several
 * batches share the analysis at batch 1. */
struct row_predictor {
	const struct hp_estimator *est;
	const struct hp_catalog *cat;
	char *spec;	       /* the last spec analysed, or NULL */
	struct hp_workload w1; /* ... at batch 1 */
	bool ok;	       /* w1 holds it */
};

static void row_predictor_release(struct row_predictor *rp)
{
	free(rp->spec);
	if (rp->ok)
		hp_workload_release(&rp->w1);
}

/* The row's predicted step time, or NaN when it cannot be had (no spec in
 * the row, a device type the estimator does not know). */
static double predict_row(struct row_predictor *rp,
			  const struct hp_store_measurement *m)
{
	struct hp_error err = {0};
	struct hp_prediction p;
	struct hp_workload w = {0};
	json_t *cfg;
	const char *spec;
	double t = NAN;

	if (!rp->est || !rp->cat || !m->config ||
	    !(cfg = json_loads(m->config, 0, NULL)))
		return NAN;
	spec = json_string_value(json_object_get(cfg, "spec_json"));
	if (spec && *spec && (!rp->spec || strcmp(spec, rp->spec))) {
		free(rp->spec);
		if (rp->ok)
			hp_workload_release(&rp->w1);
		rp->ok = false;
		rp->spec = hp_strdup(spec);
		rp->ok = rp->spec && !hd_spec_workload(spec, &rp->w1, &err);
	}
	if (spec && *spec && rp->ok &&
	    !hp_workload_at_batch(&rp->w1, m->batch, &w, &err)) {
		if (!hp_estimator_predict(rp->est, rp->cat, &w, m->device_type,
					  1, -1, &p, &err))
			t = p.step_time_s;
		hp_workload_release(&w);
	}
	json_decref(cfg);
	return t;
}

static json_t *meas_json(const struct hp_store_measurement *m,
			 struct row_predictor *rp, uint64_t version)
{
	json_t *o = json_object();
	double pred = m->predicted_step_time_s;
	char by[64] = "";

	json_object_set_new(o, "id", json_integer(m->id));
	json_object_set_new(
	    o, "kind", json_string(m->kind == HP_MEAS_JOB ? "job" : "profile"));
	json_object_set_new(o, "job_id",
			    m->job_id ? json_integer(m->job_id) : json_null());
	json_object_set_new(o, "device_type", hd_jstr(m->device_type));
	json_object_set_new(o, "devices", json_integer(m->ndevices));
	json_object_set_new(o, "batch", json_integer(m->batch));
	json_object_set_new(o, "step_time_s", hd_jnum(m->step_time_s));
	if (pred > 0) {
		snprintf(by, sizeof(by), "the estimator when it was submitted");
	} else if (m->kind == HP_MEAS_PROFILE &&
		   (pred = predict_row(rp, m)) > 0) {
		snprintf(by, sizeof(by), "the estimator in use (version %llu)",
			 (unsigned long long)version);
	}
	json_object_set_new(o, "predicted_step_time_s", hd_jnum(pred));
	json_object_set_new(o, "predicted_by",
			    by[0] ? json_string(by) : json_null());
	json_object_set_new(o, "energy_per_step_j",
			    hd_jnum(m->energy_per_step_j));
	json_object_set_new(o, "power_w", hd_jnum(m->power_w));
	json_object_set_new(o, "config", hd_jtext(m->config));
	json_object_set_new(o, "source", hd_jstr(m->source));
	json_object_set_new(o, "created_s", json_real(m->created_s));
	return o;
}

void hd_h_meas_list(struct hd *d, struct hd_req *r, struct hd_resp *out)
{
	struct hp_store_measurement *ms = NULL;
	struct hp_error err = {0};
	const char *kind = hd_query(r, "kind"), *after = hd_query(r, "after");
	const char *limit = hd_query(r, "limit");
	int64_t a = 0, l = 1000;
	int k = -1, n = 0;
	json_t *arr;

	if (kind) {
		if (!strcmp(kind, "profile"))
			k = HP_MEAS_PROFILE;
		else if (!strcmp(kind, "job"))
			k = HP_MEAS_JOB;
		else {
			hd_problem(out, 400, "invalid-field", "kind",
				   "'kind' must be profile or job");
			return;
		}
	}
	if (after && hp_api_parse_id(after, &a)) {
		hd_problem(out, 400, "invalid-field", "after",
			   "'after' must be a measurement id");
		return;
	}
	if (limit && hp_parse_i64(limit, 1, 10000, &l)) {
		hd_problem(out, 400, "invalid-field", "limit",
			   "'limit' must be 1 to 10000");
		return;
	}
	if (hp_store_measurement_list(d->store, k, a, (int)l, &ms, &n, &err)) {
		hd_problem_err(out, &err);
		return;
	}
	arr = json_array();
	{
		const struct hp_snap *snap = hp_ctx_acquire(d->ctx);
		struct row_predictor rp = {.est = hp_snap_estimator(snap),
					   .cat = hp_snap_catalog(snap)};
		for (int i = 0; i < n; i++)
			json_array_append_new(
			    arr, meas_json(&ms[i], &rp, hp_snap_version(snap)));
		row_predictor_release(&rp);
		hp_snap_release(snap);
	}
	hd_json(out, 200,
		json_pack("{s:o, s:o}", "measurements", arr, "next_after",
			  n == l ? json_integer(ms[n - 1].id) : json_null()));
	hp_store_measurement_list_free(ms, n);
}

void hd_h_meas_add(struct hd *d, struct hd_req *r, struct hd_resp *out)
{
	struct hp_error err = {0};
	char source[128];
	int added = 0;

	snprintf(source, sizeof(source), "upload by %s", r->who.name);
	if (hp_store_measurement_import_csv(d->store, r->body.data, r->body.len,
					    source, &added, &err)) {
		if (err.code == HP_EPARSE || err.code == HP_EINVAL ||
		    err.code == HP_ERANGE)
			hd_problem(out, 400, "invalid-csv", NULL, "%s",
				   err.msg);
		else
			hd_problem_err(out, &err);
		return;
	}
	hd_log(HP_LOG_INFO, "measurements added", "rows",
	       "i:", (long long)added, "who", "s:", r->who.name, NULL);
	hd_json(out, 201, json_pack("{s:i}", "added", added));
}

/* ---- the estimator */

void hd_h_estimator(struct hd *d, struct hd_req *r, struct hd_resp *out)
{
	const struct hp_snap *snap = hp_ctx_acquire(d->ctx);
	const struct hp_estimator *est = hp_snap_estimator(snap);
	struct hp_store_estimator se = {0};
	json_t *o = json_object(), *rf;

	(void)r;
	json_object_set_new(o, "version",
			    json_integer((json_int_t)hp_snap_version(snap)));
	json_object_set_new(
	    o, "family",
	    est ? json_string(hp_est_family_name(hp_estimator_family(est)))
		: json_null());
	json_object_set_new(o, "provenance",
			    hd_jstr(est ? hp_estimator_provenance(est) : NULL));
	hp_snap_release(snap);
	if (!hp_store_estimator_current(d->store, &se, NULL)) {
		json_object_set_new(
		    o, "stored",
		    json_pack("{s:I, s:f, s:I}", "id", (json_int_t)se.id,
			      "created_s", se.created_s, "measurements_upto",
			      (json_int_t)se.measurements_upto));
		json_object_set_new(o, "fitted_on", hd_jtext(se.fitted_on));
		json_object_set_new(o, "validation", hd_jtext(se.validation));
		hp_store_estimator_release(&se);
	} else {
		json_object_set_new(o, "stored", json_null());
		json_object_set_new(
		    o, "fitted_on",
		    json_pack("{s:s}", "note",
			      "the shipped estimator (data/estimators/"
			      "default.json, or --estimator): see its "
			      "provenance"));
		json_object_set_new(o, "validation", json_null());
	}
	pthread_mutex_lock(&d->refit.mu);
	rf = json_pack(
	    "{s:b, s:o, s:o, s:o}", "running", d->refit.running, "started_s",
	    hd_jnum(d->refit.started_s > 0 ? d->refit.started_s : NAN),
	    "ended_s", hd_jnum(d->refit.ended_s > 0 ? d->refit.ended_s : NAN),
	    "error",
	    d->refit.error[0] ? json_string(d->refit.error) : json_null());
	pthread_mutex_unlock(&d->refit.mu);
	json_object_set_new(o, "refit", rf);
	hd_json(out, 200, o);
}

struct refit_job {
	struct hd *d;
	struct hp_api_refit_req req;
};

static json_t *validation_json(const struct hp_validation *v)
{
	json_t *rows = json_array(), *notes = json_array();

	for (int i = 0; i < v->n; i++) {
		const struct hp_validation_row *x = &v->rows[i];
		json_array_append_new(
		    rows, json_pack("{s:s, s:s, s:s, s:i, s:o, s:o, s:o, s:s}",
				    "data", x->data, "family", x->family,
				    "scheme", x->scheme, "n", x->n, "mape_pct",
				    hd_jnum(x->mape), "median_pct",
				    hd_jnum(x->median), "worst_pct",
				    hd_jnum(x->worst), "note", x->note));
	}
	for (int i = 0; i < v->nnotes; i++)
		json_array_append_new(notes, json_string(v->notes[i]));
	return json_pack("{s:o, s:o}", "rows", rows, "notes", notes);
}

static void refit_done(struct hd *d, const char *error, uint64_t version)
{
	pthread_mutex_lock(&d->refit.mu);
	d->refit.running = false;
	d->refit.ended_s = wall_now();
	snprintf(d->refit.error, sizeof(d->refit.error), "%s",
		 error ? error : "");
	d->refit.version = version;
	pthread_mutex_unlock(&d->refit.mu);
}

static void *refit_main(void *arg)
{
	struct refit_job *rj = arg;
	struct hd *d = rj->d;
	struct hp_fit_options o = {0};
	struct hp_fit_report rep = {0};
	struct hp_error err = {0};
	struct hp_buf csv;
	struct hp_store_estimator se = {0};
	struct hp_validation val = {0};
	char shipped[4096], pub[4096], models[4096], stored[4096];
	const char *sets[2];
	const struct hp_snap *snap;
	uint64_t version = 0;
	int rows = 0, nsets = 0;
	int64_t upto = 0;
	json_t *fitted = NULL;

	/* the fit is a background job: it yields to the requests */
	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10);
	hp_buf_init(&csv, 256u << 20);
	{
		struct hp_store_measurement *ms = NULL;
		int n = 0;
		/* the newest measurement id this fit sees */
		for (int64_t after = 0;;) {
			if (hp_store_measurement_list(d->store, -1, after, 1000,
						      &ms, &n, NULL) ||
			    n == 0)
				break;
			upto = after = ms[n - 1].id;
			hp_store_measurement_list_free(ms, n);
			ms = NULL;
			if (n < 1000)
				break;
		}
		hp_store_measurement_list_free(ms, n);
	}
	if (hp_store_dataset_csv(d->store, &csv, &rows, &err))
		goto fail;
	if (!hp_data_path("profiles/cpu-default.csv", shipped, sizeof(shipped)))
		sets[nsets++] = shipped;
	if (rows > 0) {
		snprintf(stored, sizeof(stored), "%s/refit-profiles.csv",
			 d->cfg.data_dir);
		{
			FILE *f = fopen(stored, "wb");
			if (!f || fwrite(csv.data, 1, csv.len, f) != csv.len ||
			    fclose(f)) {
				hp_error_set(&err, HP_EIO, "cannot write '%s'",
					     stored);
				goto fail;
			}
		}
		sets[nsets++] = stored;
	}
	o.datasets = sets;
	o.ndatasets = nsets;
	if (!hp_data_path("measurements", pub, sizeof(pub)))
		o.public_dir = pub;
	if (!hp_data_path("models", models, sizeof(models)))
		o.models_dir = models;
	snap = hp_ctx_acquire(d->ctx);
	o.family =
	    rj->req.family[0]
		? (hp_est_family_parse(rj->req.family, &o.family), o.family)
		: (hp_snap_estimator(snap)
		       ? hp_estimator_family(hp_snap_estimator(snap))
		       : HP_EST_PHYSICAL);
	hp_snap_release(snap);
	o.skip_bad_rows = true;
	o.report = &rep;
	hd_log(HP_LOG_INFO, "refit started", "profile_files",
	       "i:", (long long)nsets, "stored_rows", "i:", (long long)rows,
	       NULL);
	if (hp_ctx_refit(d->ctx, &o, &version, &err))
		goto fail;
	fitted = json_pack(
	    "{s:I, s:i, s:I, s:b, s:s}", "profile_rows",
	    (json_int_t)rep.profile_rows, "stored_profile_rows", rows,
	    "bad_rows_skipped", (json_int_t)rep.bad_rows_skipped, "public_gpu",
	    o.public_dir != NULL, "family", hp_est_family_name(o.family));
	snap = hp_ctx_acquire(d->ctx);
	if (rj->req.validate) {
		struct hp_fit_options vo = o;
		vo.report = NULL;
		if (hp_estimator_validate(&vo, hp_snap_catalog(snap), 5, &val,
					  &err))
			hd_log(HP_LOG_WARN, "refit: validation failed", "error",
			       "s:", err.msg, NULL);
	}
	se.body = hp_snap_estimator(snap)
		      ? hp_estimator_dumps(hp_snap_estimator(snap))
		      : NULL;
	se.provenance =
	    hp_snap_estimator(snap)
		? (char *)hp_estimator_provenance(hp_snap_estimator(snap))
		: NULL;
	hp_snap_release(snap);
	se.fitted_on = json_dumps(fitted, JSON_COMPACT);
	if (val.n) {
		json_t *v = validation_json(&val);
		se.validation = json_dumps(v, JSON_COMPACT);
		json_decref(v);
	}
	se.measurements_upto = upto;
	if (se.body && hp_store_estimator_add(d->store, &se, NULL, &err))
		hd_log(HP_LOG_WARN, "refit: recording the estimator", "error",
		       "s:", err.msg, NULL);
	free(se.body);
	free(se.fitted_on);
	free(se.validation);
	hp_validation_release(&val);
	json_decref(fitted);
	hp_buf_release(&csv);
	hd_log(HP_LOG_INFO, "refit done: estimator swapped in", "version",
	       "i:", (long long)version, NULL);
	refit_done(d, NULL, version);
	free(rj);
	return NULL;
fail:
	hd_log(HP_LOG_WARN, "refit failed", "error", "s:", err.msg, NULL);
	hp_buf_release(&csv);
	refit_done(d, err.msg, 0);
	free(rj);
	return NULL;
}

void hd_refit_join(struct hd *d)
{
	pthread_mutex_lock(&d->refit.mu);
	if (d->refit.joinable) {
		pthread_t t = d->refit.thread;
		d->refit.joinable = false;
		pthread_mutex_unlock(&d->refit.mu);
		pthread_join(t, NULL);
		return;
	}
	pthread_mutex_unlock(&d->refit.mu);
}

void hd_h_refit(struct hd *d, struct hd_req *r, struct hd_resp *out)
{
	struct hp_api_problem pb = {0};
	struct refit_job *rj;
	pthread_t old;
	bool join = false;

	if (!(rj = calloc(1, sizeof(*rj)))) {
		hd_problem(out, 500, "internal", NULL, "out of memory");
		return;
	}
	rj->d = d;
	if (hp_api_refit_parse(r->body.data, r->body.len, &rj->req, &pb)) {
		free(rj);
		hd_problem_from(out, &pb);
		return;
	}
	pthread_mutex_lock(&d->refit.mu);
	if (d->refit.running) {
		pthread_mutex_unlock(&d->refit.mu);
		free(rj);
		hd_problem(out, 409, "refit-running", NULL,
			   "a refit is running; GET /v1/estimator says when "
			   "it ends");
		return;
	}
	if (d->refit.joinable) {
		old = d->refit.thread;
		join = true;
	}
	d->refit.running = true;
	d->refit.started_s = wall_now();
	d->refit.ended_s = 0;
	d->refit.error[0] = '\0';
	pthread_mutex_unlock(&d->refit.mu);
	if (join)
		pthread_join(old, NULL); /* it has ended: running was false */
	pthread_mutex_lock(&d->refit.mu);
	d->refit.joinable = false;
	if (pthread_create(&d->refit.thread, NULL, refit_main, rj)) {
		d->refit.running = false;
		pthread_mutex_unlock(&d->refit.mu);
		free(rj);
		hd_problem(out, 500, "internal", NULL,
			   "cannot start the refit");
		return;
	}
	d->refit.joinable = true;
	pthread_mutex_unlock(&d->refit.mu);
	hd_log(HP_LOG_INFO, "refit requested", "who", "s:", r->who.name, NULL);
	hd_json(out, 202,
		json_pack("{s:{s:b, s:f}}", "refit", "running", 1, "started_s",
			  d->refit.started_s));
	snprintf(out->location, sizeof(out->location), "/v1/estimator");
}

/* ---- datasets */

static json_t *dataset_json(const struct hp_store_dataset *ds)
{
	return json_pack("{s:I, s:o, s:o, s:o, s:I, s:f}", "id",
			 (json_int_t)ds->id, "name", hd_jstr(ds->name), "path",
			 hd_jstr(ds->path), "sha256", hd_jstr(ds->sha256),
			 "size", (json_int_t)ds->size, "created_s",
			 ds->created_s);
}

void hd_h_datasets_list(struct hd *d, struct hd_req *r, struct hd_resp *out)
{
	struct hp_store_dataset *ds = NULL;
	struct hp_error err = {0};
	json_t *a;
	int n = 0;

	(void)r;
	if (hp_store_dataset_list(d->store, &ds, &n, &err)) {
		hd_problem_err(out, &err);
		return;
	}
	a = json_array();
	for (int i = 0; i < n; i++)
		json_array_append_new(a, dataset_json(&ds[i]));
	hp_store_dataset_list_free(ds, n);
	hd_json(out, 200, json_pack("{s:o}", "datasets", a));
}

void hd_h_datasets_add(struct hd *d, struct hd_req *r, struct hd_resp *out)
{
	static const char *const files[] = {
	    "train-images-idx3-ubyte", "train-labels-idx1-ubyte",
	    "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};
	struct hp_api_dataset_req q;
	struct hp_api_problem pb = {0};
	struct hp_store_dataset ds = {0};
	struct hp_error err = {0};
	struct stat st;
	int64_t id, size = 0;

	if (hp_api_dataset_parse(r->body.data, r->body.len, &q, &pb)) {
		hd_problem_from(out, &pb);
		return;
	}
	if (!strcmp(q.name, "fashion-mnist") || !strcmp(q.name, "synthetic")) {
		/* jobs naming these get the trainer's own data */
		hd_problem(out, 422, "unprocessable", "name",
			   "'%s' is the trainer's own data: give the dataset "
			   "another name",
			   q.name);
		return;
	}
	if (stat(q.path, &st) || !S_ISDIR(st.st_mode)) {
		hd_problem(out, 422, "unprocessable", "path",
			   "'%s' is not a folder on the server", q.path);
		return;
	}
	for (int i = 0; i < 4; i++) {
		char p[1200];
		snprintf(p, sizeof(p), "%s/%s", q.path, files[i]);
		if (stat(p, &st)) {
			snprintf(p, sizeof(p), "%s/%s.gz", q.path, files[i]);
			if (stat(p, &st)) {
				hd_problem(out, 422, "unprocessable", "path",
					   "'%s' lacks %s (plain or .gz): the "
					   "trainer reads the four "
					   "Fashion-MNIST IDX files",
					   q.path, files[i]);
				return;
			}
		}
		size += st.st_size;
	}
	ds.name = q.name;
	ds.path = q.path;
	ds.size = size;
	if (hp_store_dataset_add(d->store, &ds, &id, &err)) {
		hd_problem_err(out, &err);
		return;
	}
	ds.id = id;
	ds.created_s = wall_now();
	hd_json(out, 201, dataset_json(&ds));
	snprintf(out->location, sizeof(out->location), "/v1/datasets/%s",
		 q.name);
}

void hd_h_dataset_delete(struct hd *d, struct hd_req *r, struct hd_resp *out)
{
	struct hp_error err = {0};

	if (hp_store_dataset_remove(d->store, r->params[0], &err)) {
		hd_problem_err(out, &err);
		return;
	}
	hd_text(out, 204, NULL, NULL, 0);
}
