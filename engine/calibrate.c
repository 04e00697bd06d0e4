/*
 * calibrate.c - calibrating this host (hp_calibrate_host(), `hetpool
 * calibrate`): measure its peaks when its host file has none at these
 * threads, profile the built-in "calibrate" sweep in interleaved rounds
 * within a time budget, fit this host's own physical model on each
 * configuration's median (a factor per layer class when too few were
 * measured) and store it in its host file, where predict, recommend and
 * hetpoold find it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hetpool/ctx.h"
#include "hetpool/estimate.h"
#include "hetpool/profile.h"
#include "hetpool/util.h"

/* hp_calibrate_opts_init()'s budget and ridge */
#define DEFAULT_RIDGE 1.0
#define DEFAULT_SECONDS 150.0
/* Rows whose threads waited for a CPU more than this share of the time
 * are left out of the fit (the profiler measured them again once). */
#define DEFAULT_MAX_PRESSURE 0.5

void hp_calibrate_opts_init(struct hp_calibrate_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->seconds = DEFAULT_SECONDS;
	o->ridge = DEFAULT_RIDGE;
	o->max_pressure = DEFAULT_MAX_PRESSURE;
}

void hp_calibrate_result_release(struct hp_calibrate_result *r)
{
	free(r->points);
	free(r->meas);
	r->points = NULL;
	r->meas = NULL;
	r->npoints = r->nmeas = 0;
}

/* A configuration of the design under way: its workload, the profiler's
 * budget for it, and what its measurements came to. */
struct cal_point {
	struct hp_calibrate_point out;
	struct hp_workload w;
	bool have_w;  /* w made (round 0) */
	bool skip;    /* left out: too slow for the budget, or too large */
	double max_s; /* the profiler's max_seconds for it */
	bool tight;   /* short runs (a tight budget) */
};

/* The share of its wall time a measurement's thread ran: 1 -
 * cpu_pressure at one thread (the rest it waited for a CPU), else 1. */
static double ran_share(double pressure, int threads)
{
	return threads == 1 && pressure > 0 && pressure < 1 ? 1 - pressure : 1;
}

/*
 * Times at the calibration's speed (hp_est_to_ref_speed()).  Each
 * measurement carries the yardstick, a fixed reference step timed between
 * its steps on the same threads (docs/profiler.md), so time / yardstick
 * is its time relative to the host's speed while it ran, whatever
 * neighbours did to it then.  The calibration's speed is the median
 * yardstick over its measurements (at one thread, of the time the thread
 * ran, as the measurements' own times); t and cls (3 a row: the times the
 * thread ran, on entry) are scaled to it.  Returns the median (NaN: none
 * had one), which the host file keeps: the yardstick's time at which this
 * host's predictions hold.
 */
static double to_calibration_speed(const struct hp_calibrate_meas *rows, int n,
				   double *t, double *cls, int threads)
{
	double *wall = malloc(((size_t)n + 1) * 3 * sizeof(*wall)), med;
	double *ref = wall + n + 1, *share = ref + n + 1;

	if (!wall)
		return NAN;
	for (int i = 0; i < n; i++) {
		wall[i] = rows[i].wall_s;
		ref[i] = rows[i].ref_time_s;
		share[i] = ran_share(rows[i].cpu_pressure, threads);
	}
	med = hp_est_to_ref_speed(n, wall, ref, share, t, cls, 3);
	free(wall);
	return med;
}

/* The workload of a sweep configuration. */
static int config_workload(const struct hp_sweep_config *c,
			   struct hp_workload *w, struct hp_error *err)
{
	struct hp_graph *g = hp_spec_to_graph(&c->spec, err);
	int rc;

	if (!g)
		return err->code ? err->code : HP_EINVAL;
	rc = hp_workload_from_graph(g, c->batch, NULL, 0, w, err);
	hp_graph_free(g);
	return rc;
}

static int predict_cpu(const struct hp_estimator *est,
		       const struct hp_catalog *cat,
		       const struct hp_workload *w, double *out,
		       struct hp_error *err)
{
	struct hp_prediction p;
	int rc = hp_estimator_predict(est, cat, w, "cpu", 1, HP_EST_PHYSICAL,
				      &p, err);

	*out = rc ? NAN : p.step_time_s;
	return rc;
}

/* The catalog's detected CPU type (the host), or NULL. */
static struct hp_device_type *host_type(struct hp_catalog *cat)
{
	for (int i = 0; i < cat->n; i++)
		if (cat->types[i].kind == HP_DEVICE_CPU &&
		    cat->types[i].detected)
			return &cat->types[i];
	return NULL;
}

/* err's message kept (after "what: " when what is not NULL) under
 * another code. */
static int recode(struct hp_error *err, int code, const char *what)
{
	char m[sizeof(err->msg)];

	snprintf(m, sizeof(m), "%s", err->msg);
	return what ? hp_error_set(err, code, "%s: %s", what, m)
		    : hp_error_set(err, code, "%s", m);
}

static bool stopped(const struct hp_calibrate_opts *o)
{
	return o->stop && *o->stop;
}

/* This host at the threads asked for, and its host file (its peaks
 * measured when it has none at them). */
static int host_file(const struct hp_calibrate_opts *o,
		     struct hp_calibrate_result *r, struct hp_host *h,
		     struct hp_error *err)
{
	struct hp_host_file *f = &r->file;
	int rc;

	if ((rc = hp_host_detect(h, err)))
		return recode(err, HP_EIO, NULL);
	h->threads = o->threads > 0 ? o->threads : hp_ctx_threads();
	h->threads = hp_host_threads(h);
	r->threads = h->threads;
	if ((rc = hp_host_file_path(NULL, h, r->path, sizeof(r->path), err)))
		return rc;
	rc = hp_host_file_load(r->path, f, err);
	if (rc == HP_ENOENT) {
		hp_host_file_init(f, h);
	} else if (rc) {
		/* a state file that cannot be read is the host's fault, not
		 * the caller's (the message names it) */
		return recode(err, HP_EIO, NULL);
	} else {
		struct hp_host_file fresh;
		hp_host_file_init(&fresh, h);
		fresh.peaks = f->peaks;
		fresh.calib = f->calib; /* kept until the new one is made */
		*f = fresh;
	}
	if (f->peaks.when[0] && f->peaks.threads == h->threads)
		return 0;
	if (o->progress) {
		struct hp_calibrate_progress p = {.peaks = true,
						  .threads = h->threads};
		o->progress(o->progress_ctx, &p);
	}
	if ((rc = hp_engine_cpu_peaks(h->threads, 1.0, h->l3_bytes, &f->peaks,
				      err)))
		return recode(err, HP_EDEVICE, NULL);
	/* the catalog carries this host by them */
	if ((rc = hp_host_file_save(r->path, f, err)))
		return recode(err, HP_EIO, NULL);
	return 0;
}

/* The state of one calibration. */
struct cal {
	const struct hp_calibrate_opts *o;
	struct hp_calibrate_result *r;
	struct hp_catalog *cat;
	struct hp_estimator *est;
	struct hp_sweep sw;
	struct cal_point *pts;
	int ndesign;
	/* the measurements' times and class times (3 each), as the threads
	 * ran them; scratch for medians */
	double *rt, *rcls, *med;
	double t0;
};

/* One measurement of configuration i in round r; *done when the budget
 * is spent. */
static int measure(struct cal *c, int r, int i, bool *done,
		   struct hp_error *err)
{
	const struct hp_calibrate_opts *o = c->o;
	struct hp_calibrate_result *res = c->r;
	const struct hp_sweep_config *sc = &c->sw.configs[i];
	struct cal_point *p = &c->pts[i];
	struct hp_calibrate_meas *q = &res->meas[res->nmeas];
	struct hp_profile_opts po;
	struct hp_profile_row *row;
	double left = o->seconds - (hp_now_s() - c->t0);
	int rc, k = res->nmeas;

	if (left < 2) {
		*done = true;
		return 0;
	}
	if (r == 0) {
		double per = left / (c->ndesign - i);
		snprintf(p->out.id, sizeof(p->out.id), "%s", sc->id);
		if ((rc = config_workload(sc, &p->w, err)) ||
		    (rc = predict_cpu(c->est, c->cat, &p->w,
				      &p->out.predicted_s, err)))
			return recode(err, rc, sc->id);
		p->have_w = true;
		/* a configuration whose steps would not fit in its share
		 * of the budget is left out */
		p->skip = p->out.predicted_s * 8 > (per > 1 ? per : 1) * 2;
		/* the profiler's own settings (as 'hetpool profile'), in
		 * this configuration's share of the budget; a tight budget
		 * (seconds well under the default): short runs, as many
		 * configurations as it allows */
		p->max_s = per * 0.6 < 4 ? per * 0.6 : 4;
		p->tight = per < 3;
	}
	if (p->skip)
		return 0;
	hp_profile_opts_init(&po);
	po.threads = res->threads;
	po.max_seconds = p->max_s;
	po.retries = 1;
	if (p->tight) {
		po.warmup_steps = 2;
		po.warmup_s = 0.05;
		po.min_steps = 5;
		po.stable_rel = 0.02;
	}
	po.stop = o->stop;
	if (!(row = calloc(1, sizeof(*row))))
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	if (o->progress) {
		struct hp_calibrate_progress pg = {.threads = res->threads,
						   .round = r + 1,
						   .index = i + 1,
						   .n = c->ndesign,
						   .id = sc->id,
						   .left_s = left};
		o->progress(o->progress_ctx, &pg);
	}
	rc = hp_profile_config(sc, &po, row, err);
	if (rc == HP_ECANCELED || stopped(o)) {
		free(row);
		*done = true;
		return 0;
	}
	if (rc) {
		free(row);
		if (rc == HP_ETOOBIG) {
			p->skip = true;
			return 0;
		}
		return recode(err, HP_EDEVICE, p->out.id);
	}
	q->point = i;
	q->wall_s = c->rt[k] = row->step_time_s;
	q->ref_time_s =
	    row->ref_steps > 0 && row->ref_time_s > 0 ? row->ref_time_s : NAN;
	q->cpu_pressure = row->cpu_pressure;
	c->rcls[3 * k] = row->time_conv_s;
	c->rcls[3 * k + 1] = row->time_fc_s;
	c->rcls[3 * k + 2] = row->time_other_s;
	free(row);
	/* a measurement whose thread waited for a CPU much of the time
	 * measured the neighbours, not this host */
	if (q->cpu_pressure > o->max_pressure) {
		res->left_out_busy++;
		return 0;
	}
	/* one thread: the time it ran, not the time it waited for a CPU
	 * taken by other work (wall = on-CPU + waiting) */
	for (int j = -1; j < 3; j++) {
		double *v = j < 0 ? &c->rt[k] : &c->rcls[3 * k + j];
		*v *= ran_share(q->cpu_pressure, res->threads);
	}
	res->nmeas++;
	return 0;
}

/* Each configuration's medians over its measurements; the points with
 * any into res->points (their indices into c->pts in order), their
 * workloads, times and class times into wl, ys, cls. */
static int medians(struct cal *c, int *order, const struct hp_workload **wl,
		   double *ys, double *cls)
{
	struct hp_calibrate_result *res = c->r;
	const struct hp_calibrate_meas *rows = res->meas;
	int n = 0;

	for (int i = 0; i < c->ndesign; i++) {
		struct cal_point *p = &c->pts[i];
		double *v = c->med;
		int m = 0;
		for (int j = 0; j < res->nmeas; j++)
			m += rows[j].point == i;
		if (!m)
			continue;
		p->out.rounds = m;
		for (int k = -1; k < 3; k++) {
			m = 0;
			for (int j = 0; j < res->nmeas; j++)
				if (rows[j].point == i)
					v[m++] = k < 0 ? c->rt[j]
						       : c->rcls[3 * j + k];
			*(k < 0 ? &p->out.measured_s : &cls[3 * n + k]) =
			    hp_est_median(v, m);
		}
		for (int k = 0; k < 3; k++) {
			m = 0;
			for (int j = 0; j < res->nmeas; j++)
				if (rows[j].point == i)
					v[m++] = k == 0 ? rows[j].wall_s
						 : k == 1
						     ? rows[j].ref_time_s
						     : rows[j].cpu_pressure;
			*(k == 0   ? &p->out.wall_s
			  : k == 1 ? &p->out.ref_time_s
				   : &p->out.cpu_pressure) =
			    hp_est_median(v, m);
		}
		wl[n] = &p->w;
		ys[n] = p->out.measured_s;
		order[n++] = i;
	}
	return n;
}

/* The yardstick's range over the measurements, as the threads ran. */
static void ref_range(struct hp_calibrate_result *res)
{
	res->ref_lo_s = INFINITY;
	res->ref_hi_s = 0;
	res->ref_n = 0;
	for (int i = 0; i < res->nmeas; i++) {
		const struct hp_calibrate_meas *q = &res->meas[i];
		if (q->ref_time_s > 0) {
			double v = q->ref_time_s *
				   ran_share(q->cpu_pressure, res->threads);
			res->ref_lo_s = fmin(res->ref_lo_s, v);
			res->ref_hi_s = fmax(res->ref_hi_s, v);
			res->ref_n++;
		}
	}
	if (!res->ref_n)
		res->ref_lo_s = res->ref_hi_s = NAN;
}

static int run(struct cal *c, struct hp_error *err)
{
	const struct hp_calibrate_opts *o = c->o;
	struct hp_calibrate_result *res = c->r;
	struct hp_host_file *f = &res->file;
	struct hp_device_type *t;
	const struct hp_workload **wl;
	double *ys, *cls, last_round = 0;
	int *order, n, rc, nd;
	bool done = false;

	if (!(c->cat = hp_ctx_load_catalog_at(NULL, res->threads, NULL, err)) ||
	    !(c->est = hp_ctx_load_estimator(o->estimator, err)))
		return err->code ? err->code : HP_EINVAL;
	if (!(t = host_type(c->cat)))
		return hp_error_set(err, HP_EINTERNAL,
				    "the catalog has no cpu type");
	t->calib.has = false; /* predictions before: uncalibrated */
	/* the built-in "calibrate" sweep: 24 configurations that span every
	 * variable of plain convs (kernels 1-7, strides, both poolings, 1
	 * and 3 input channels, batch norm, dropout, classes) and 6 whose
	 * 3x3 convs reach 2x2-4x4 maps */
	if ((rc = hp_sweep_parse(hp_sweep_named_json("calibrate"),
				 strlen(hp_sweep_named_json("calibrate")), NULL,
				 &c->sw, err)))
		return recode(err, HP_EINTERNAL, NULL);
	nd = c->ndesign = c->sw.n;
	c->pts = calloc((size_t)nd, sizeof(*c->pts));
	res->meas =
	    calloc((size_t)nd * HP_CALIBRATE_ROUNDS, sizeof(*res->meas));
	c->rt = calloc((size_t)nd * HP_CALIBRATE_ROUNDS, sizeof(*c->rt));
	c->rcls =
	    calloc(3 * (size_t)nd * HP_CALIBRATE_ROUNDS, sizeof(*c->rcls));
	c->med = calloc((size_t)HP_CALIBRATE_ROUNDS + 1, sizeof(*c->med));
	if (!c->pts || !res->meas || !c->rt || !c->rcls || !c->med)
		return hp_error_set(err, HP_ENOMEM, "out of memory");

	for (int r = 0; r < HP_CALIBRATE_ROUNDS && !stopped(o) && !done; r++) {
		double r0 = hp_now_s();
		/* another round only when the budget has room for it */
		if (r > 0 && o->seconds - (r0 - c->t0) < 1.1 * last_round)
			break;
		for (int i = 0; i < nd && !stopped(o) && !done; i++)
			if ((rc = measure(c, r, i, &done, err)))
				return rc;
		last_round = hp_now_s() - r0;
		res->rounds = r + 1;
	}
	/* the measurements at the calibration's speed, then each
	 * configuration's median over its rounds */
	res->ref_s = to_calibration_speed(res->meas, res->nmeas, c->rt, c->rcls,
					  res->threads);
	ref_range(res);
	order = calloc((size_t)nd, sizeof(*order));
	wl = calloc((size_t)nd, sizeof(*wl));
	ys = calloc((size_t)nd, sizeof(*ys));
	cls = calloc(3 * (size_t)nd, sizeof(*cls));
	if (!order || !wl || !ys || !cls) {
		rc = hp_error_set(err, HP_ENOMEM, "out of memory");
		goto out;
	}
	n = medians(c, order, wl, ys, cls);
	if (n < 3) {
		rc = hp_error_set(
		    err, HP_EDEVICE,
		    "%d configuration%s measured in %.0f s (%d measurement%s "
		    "left out: the host was busy): too few to fit (give more "
		    "seconds)",
		    n, n == 1 ? "" : "s", o->seconds, res->left_out_busy,
		    res->left_out_busy == 1 ? "" : "s");
		goto out;
	}
	/* the last calibration at these threads, for its speed */
	res->slower_than_last = res->last_ref_s = NAN;
	if (f->calib.has && f->calib.threads == res->threads &&
	    f->calib.ref_time_s > 0 && res->ref_s > 0) {
		res->slower_than_last = res->ref_s / f->calib.ref_time_s;
		snprintf(res->last_when, sizeof(res->last_when), "%s",
			 f->calib.when);
		res->last_ref_s = f->calib.ref_time_s;
	}
	if ((rc = hp_estimator_calibrate_host_fit(c->est, c->cat, "cpu", wl, ys,
						  cls, n, o->ridge, &f->calib,
						  err)))
		goto out;
	f->calib.ref_time_s = res->ref_s;
	hp_utc_iso8601(time(NULL), f->calib.when, sizeof(f->calib.when));
	if ((rc = hp_host_file_save(res->path, f, err))) {
		rc = recode(err, HP_EIO, NULL);
		goto out;
	}
	t->calib = f->calib;
	if (!(res->points = calloc((size_t)n, sizeof(*res->points)))) {
		rc = hp_error_set(err, HP_ENOMEM, "out of memory");
		goto out;
	}
	for (int i = 0; i < n; i++) {
		struct cal_point *p = &c->pts[order[i]];
		struct hp_error ignored = {0};
		predict_cpu(c->est, c->cat, &p->w, &p->out.calibrated_s,
			    &ignored);
		res->points[i] = p->out;
	}
	/* the measurements name their points by the fit's order */
	for (int j = 0; j < res->nmeas; j++)
		for (int i = 0; i < n; i++)
			if (order[i] == res->meas[j].point) {
				res->meas[j].point = i;
				break;
			}
	res->npoints = n;
out:
	free(order);
	free(wl);
	free(ys);
	free(cls);
	return rc;
}

int hp_calibrate_host(const struct hp_calibrate_opts *o,
		      struct hp_calibrate_result *r, struct hp_error *err)
{
	struct cal c = {.o = o, .r = r, .t0 = hp_now_s()};
	struct hp_host h;
	int rc;

	memset(r, 0, sizeof(*r));
	r->ref_s = r->ref_lo_s = r->ref_hi_s = NAN;
	r->slower_than_last = r->last_ref_s = NAN;
	if (!(o->seconds > 0) || !(o->ridge >= 0) ||
	    !(o->max_pressure >= 0 && o->max_pressure <= 1) || o->threads < 0)
		return hp_error_set(err, HP_EINVAL,
				    "calibrate: seconds must be above 0, "
				    "ridge at least 0, max_pressure in [0, "
				    "1], threads at least 0");
	if (!(rc = host_file(o, r, &h, err)))
		rc = run(&c, err);
	for (int i = 0; c.pts && i < c.ndesign; i++)
		if (c.pts[i].have_w)
			hp_workload_release(&c.pts[i].w);
	free(c.pts);
	free(c.rt);
	free(c.rcls);
	free(c.med);
	hp_sweep_release(&c.sw);
	hp_estimator_free(c.est);
	hp_catalog_free(c.cat);
	r->seconds = hp_now_s() - c.t0;
	if (rc)
		hp_calibrate_result_release(r);
	return rc;
}
