/*
 * cmd_calibrate.c - `hetpool calibrate`: profile the built-in "calibrate"
 * sweep on this host (a time budget), fit this host's own physical model
 * on it (a factor per layer class when too few configurations were
 * measured) and store it in its host file, where predict, recommend and
 * hetpoold find it.
 */
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "hetpool/device.h"
#include "hetpool/engine.h"
#include "hetpool/estimate.h"
#include "hetpool/profile.h"
#include "opt.h"

static const char help[] =
    "usage: hetpool calibrate [--threads N] [--seconds S] [--ridge R] "
    "[--json]\n"
    "                         [--max-pressure F] [--estimator FILE]\n"
    "\n"
    "Calibrate the CPU predictions on this host.  Measures this host's "
    "peaks\n"
    "first when its host file has none at these threads (as 'hetpool "
    "host'\n"
    "does when asked, about 2 s), then profiles the built-in 'calibrate' "
    "sweep\n"
    "(24 customized CNNs spanning what users write: 1-3 conv layers, "
    "16-64\n"
    "filters, kernels 1-7, stride 1-2, max or average pooling, 1 or 3 "
    "input\n"
    "channels, batch norm on or off, dropout, 10 or 100 classes, batch "
    "16-32,\n"
    "and 6 more whose 3x3 convs come down to 2x2-4x4 maps: 30 in all)\n"
    "within the time budget, in up to 3 rounds (all of them, then all "
    "again,\n"
    "while the budget lasts: drift then falls on every configuration "
    "alike),\n"
    "and fits this host's own physical model on each configuration's "
    "median\n"
    "(as 'hetpool fit' fits a profile; with fewer than 12 configurations "
    "a\n"
    "factor on each layer class's predicted time instead, pulled to 1 by "
    "a\n"
    "ridge).  The fit goes in this host's file (see 'hetpool host'); "
    "predict,\n"
    "recommend and hetpoold use it for the cpu type at these threads in "
    "place\n"
    "of the estimator's carried fit, and say so in the prediction's "
    "basis\n"
    "(\"calibrated on this host at DATE from N configurations (its own "
    "fit)\").\n"
    "A configuration measured while other work kept its threads waiting "
    "for a\n"
    "CPU over half of the time (--max-pressure) is left out; at one "
    "thread, a\n"
    "configuration's time is the time its thread ran (the wall time less "
    "the\n"
    "time it waited for a CPU).  Drift: each configuration's time is "
    "taken\n"
    "relative to the profiler's yardstick (a fixed reference step timed "
    "between\n"
    "its steps) and scaled to the yardstick's median over the "
    "calibration, so a\n"
    "neighbour slowing the host part of the way does not bend the fit; "
    "the host\n"
    "file keeps that median, the speed its predictions hold at; a "
    "median over\n"
    "1.3x the last calibration's at these threads is warned of (a "
    "neighbour may\n"
    "be slowing the host).  Progress goes to stderr on a terminal; "
    "Ctrl-C stops\n"
    "and fits on what was measured.\n"
    "\n"
    "  --threads N       threads to run and predict at (default: "
    "$HETPOOL_THREADS,\n"
    "                    else all CPUs); predictions use it with 'predict "
    "--threads\n"
    "                    N' or HETPOOL_THREADS=N\n"
    "  --seconds S       time budget in seconds, all included (default "
    "150; at\n"
    "                    least 10): fewer rounds, then fewer "
    "configurations, when\n"
    "                    it runs out\n"
    "  --ridge R         pull of each factor to 1, as if R more rows said "
    "so\n"
    "                    (default 1; the factors are kept beside the "
    "fit)\n"
    "  --max-pressure F  leave out a configuration whose thread waited for "
    "a CPU\n"
    "                    (other work on the host) over this share of the "
    "time\n"
    "                    (default 0.5; 1: keep every one)\n"
    "  --estimator FILE  the estimator to calibrate (default: the shipped "
    "one)\n"
    "  --json            print the calibration and every configuration's "
    "measured\n"
    "                    and predicted times as JSON\n"
    "\n"
    "examples:\n"
    "  hetpool calibrate --threads 1\n"
    "  hetpool calibrate --seconds 60 --json | jq .calibration\n"
    "  hetpool host --threads 1   # shows the calibration\n";

struct cal_args {
	int threads;
	double seconds, ridge, max_pressure;
	bool json;
	const char *estimator;
};

static const struct cli_opt cal_opts[] = {
    CLI_OPT_INT("threads", struct cal_args, threads, 1, 4096),
    CLI_OPT_NUM("seconds", struct cal_args, seconds, 10, 86400),
    CLI_OPT_NUM("ridge", struct cal_args, ridge, 0, 1e6),
    CLI_OPT_NUM("max-pressure", struct cal_args, max_pressure, 0, 1),
    CLI_OPT_FLAG("json", struct cal_args, json),
    CLI_OPT_STR("estimator", struct cal_args, estimator),
    CLI_OPT_END,
};

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

/* A configuration of the design: its workload, the profiler's budget
 * for it, and what its measurements came to. */
struct cal_point {
	char id[96];
	struct hp_workload w;
	bool have_w;  /* w made (round 0) */
	bool skip;    /* left out: too slow for the budget, or too large */
	double max_s; /* the profiler's --max-seconds for it */
	bool tight;   /* short runs (a tight budget) */
	int rounds;   /* measurements kept */
	/* the medians over its measurements: the time at the calibration's
	 * speed, the wall time, the yardstick, cpu_pressure */
	double measured_s, wall_s, ref_s, pressure;
	double before_s, after_s; /* predicted before and after */
};

/* One measurement of a configuration (one round's). */
struct cal_row {
	int cfg;
	double wall_s;	 /* the profiler's step time */
	double ref_s;	 /* the yardstick's median between its steps, s
			    (NaN: not measured) */
	double pressure; /* the profiler's cpu_pressure */
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
static double to_calibration_speed(const struct cal_row *rows, int n, double *t,
				   double *cls, int threads)
{
	double *wall = malloc(((size_t)n + 1) * 3 * sizeof(*wall)), med;
	double *ref = wall + n + 1, *share = ref + n + 1;

	if (!wall)
		return NAN;
	for (int i = 0; i < n; i++) {
		wall[i] = rows[i].wall_s;
		ref[i] = rows[i].ref_s;
		share[i] = ran_share(rows[i].pressure, threads);
	}
	med = hp_est_to_ref_speed(n, wall, ref, share, t, cls, 3);
	free(wall);
	return med;
}

/* Rounds of the design, at most: each configuration measured this many
 * times, interleaved (round 1 all, then round 2 all, ...), while the
 * budget lasts; its median goes into the fit. */
#define CAL_ROUNDS 3

/* A calibration whose yardstick runs this many times slower than the last
 * one's at the same threads warns that the host may be slowed. */
#define SLOWER_THAN_LAST 1.3

/* Rows whose threads waited for a CPU more than this share of the time
 * are left out of the fit (the profiler measured them again once); the
 * default of --max-pressure. */
#define MAX_PRESSURE 0.5

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

static void utc_now(char *buf, size_t n)
{
	time_t t = time(NULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int cmd_calibrate(int argc, char **argv)
{
	struct cal_args a = {
	    .seconds = 150, .ridge = 1, .max_pressure = MAX_PRESSURE};
	struct hp_error err = {0};
	struct hp_host h;
	struct hp_host_file f;
	struct hp_catalog *cat = NULL;
	struct hp_estimator *est = NULL;
	struct hp_device_type *t;
	struct cal_point *pts = NULL;
	struct cal_row *rows = NULL;
	/* the measurements' times and class times; scratch for medians */
	double *rt = NULL, *rcls = NULL, *med = NULL, last_round = 0;
	int *order = NULL, nrows = 0, nrounds = 0;
	bool out_of_time = false;
	const struct hp_workload **wl = NULL;
	double *ys = NULL, *cls = NULL, t0 = hp_now_s(), ref_s;
	/* this calibration's yardstick over the last one's (NaN: none) */
	double prev_ratio = NAN, prev_ref = NAN;
	char prev_when[32] = "";
	struct hp_sweep sw = {0};
	int ndesign = 0;
	char path[4200], tbuf[16];
	bool tty = isatty(STDERR_FILENO);
	int first, status = EXIT_OK, rc, n = 0, nbusy = 0;

	if ((status = cli_parse(&cli_cmd_calibrate, argc, argv, &a, &first)))
		return status < 0 ? EXIT_OK : status;
	if (first < argc)
		return cli_error(EXIT_USAGE,
				 "calibrate: unexpected argument '%s'",
				 argv[first]);
	if (hp_host_detect(&h, &err))
		return cli_error(EXIT_FAIL, "calibrate: %s", err.msg);
	h.threads = a.threads ? a.threads : hp_ctx_threads();
	h.threads = hp_host_threads(&h);
	/* the catalog and every prediction below are for these threads */
	snprintf(tbuf, sizeof(tbuf), "%d", h.threads);
	setenv("HETPOOL_THREADS", tbuf, 1);

	/* the host file, with its peaks at these threads */
	if ((rc = hp_host_file_path(NULL, &h, path, sizeof(path), &err)))
		return cli_error(cli_status_for(rc), "calibrate: %s", err.msg);
	rc = hp_host_file_load(path, &f, &err);
	if (rc == HP_ENOENT) {
		hp_host_file_init(&f, &h);
	} else if (rc) {
		return cli_error(EXIT_FAIL, "calibrate: %s", err.msg);
	} else {
		struct hp_host_file fresh;
		hp_host_file_init(&fresh, &h);
		fresh.peaks = f.peaks;
		fresh.calib = f.calib; /* kept until the new one is made */
		f = fresh;
	}
	if (!f.peaks.when[0] || f.peaks.threads != h.threads) {
		if (tty)
			fprintf(stderr,
				"calibrate: measuring this host's "
				"peaks at %d thread%s...\n",
				h.threads, h.threads == 1 ? "" : "s");
		if ((rc = hp_engine_cpu_peaks(h.threads, 1.0, h.l3_bytes,
					      &f.peaks, &err)))
			return cli_error(EXIT_FAIL, "calibrate: %s", err.msg);
		/* the catalog below carries this host by them */
		if ((rc = hp_host_file_save(path, &f, &err)))
			return cli_error(EXIT_FAIL, "calibrate: %s", err.msg);
	}

	if (!(cat = cli_load_catalog("calibrate", NULL, NULL, &status)))
		return status;
	if (!(est = hp_ctx_load_estimator(a.estimator, &err))) {
		status = cli_error(cli_status_for(err.code), "calibrate: %s",
				   err.msg);
		goto out;
	}
	if (!(t = host_type(cat))) {
		status = cli_error(EXIT_FAIL,
				   "calibrate: the catalog has no cpu type");
		goto out;
	}
	t->calib.has = false; /* predictions before: uncalibrated */
	/* the built-in "calibrate" sweep: 24 configurations that span
	 * every variable of plain convs (kernels 1-7, strides, both
	 * poolings, 1 and 3 input channels, batch norm, dropout, classes)
	 * and 6 whose 3x3 convs reach 2x2-4x4 maps */
	if ((rc = hp_sweep_parse(hp_sweep_named_json("calibrate"),
				 strlen(hp_sweep_named_json("calibrate")), NULL,
				 &sw, &err))) {
		status = cli_error(EXIT_FAIL, "calibrate: %s", err.msg);
		goto out;
	}
	ndesign = sw.n;
	pts = calloc((size_t)ndesign, sizeof(*pts));
	order = calloc((size_t)ndesign, sizeof(*order));
	wl = calloc((size_t)ndesign, sizeof(*wl));
	ys = calloc((size_t)ndesign, sizeof(*ys));
	cls = calloc(3 * (size_t)ndesign, sizeof(*cls));
	rows = calloc((size_t)ndesign * CAL_ROUNDS, sizeof(*rows));
	rt = calloc((size_t)ndesign * CAL_ROUNDS, sizeof(*rt));
	rcls = calloc(3 * (size_t)ndesign * CAL_ROUNDS, sizeof(*rcls));
	med = calloc((size_t)CAL_ROUNDS + 1, sizeof(*med));
	if (!pts || !order || !wl || !ys || !cls || !rows || !rt || !rcls ||
	    !med) {
		status = cli_error(EXIT_FAIL, "calibrate: out of memory");
		goto out;
	}

	signal(SIGINT, on_signal);
	for (int r = 0; r < CAL_ROUNDS && !stop_flag && !out_of_time; r++) {
		double r0 = hp_now_s();
		/* another round only when the budget has room for it */
		if (r > 0 && a.seconds - (r0 - t0) < 1.1 * last_round)
			break;
		for (int i = 0; i < ndesign && !stop_flag; i++) {
			const struct hp_sweep_config *c = &sw.configs[i];
			struct hp_profile_opts po;
			struct hp_profile_row *row = NULL;
			struct cal_point *p = &pts[i];
			struct cal_row *q = &rows[nrows];
			double left = a.seconds - (hp_now_s() - t0);

			if (left < 2) {
				out_of_time = true;
				break;
			}
			if (r == 0) {
				double per = left / (ndesign - i);
				snprintf(p->id, sizeof(p->id), "%s", c->id);
				if ((rc = config_workload(c, &p->w, &err)) ||
				    (rc = predict_cpu(est, cat, &p->w,
						      &p->before_s, &err))) {
					status = cli_error(cli_status_for(rc),
							   "calibrate: %s: %s",
							   c->id, err.msg);
					goto out;
				}
				p->have_w = true;
				/* a configuration whose steps would not fit
				 * in its share of the budget is left out */
				p->skip =
				    p->before_s * 8 > (per > 1 ? per : 1) * 2;
				/* the profiler's own settings (as 'hetpool
				 * profile'), in this configuration's share
				 * of the budget; a tight budget (--seconds
				 * well under the default): short runs, as
				 * many configurations as it allows */
				p->max_s = per * 0.6 < 4 ? per * 0.6 : 4;
				p->tight = per < 3;
			}
			if (p->skip)
				continue;
			hp_profile_opts_init(&po);
			po.threads = h.threads;
			po.max_seconds = p->max_s;
			po.retries = 1;
			if (p->tight) {
				po.warmup_steps = 2;
				po.warmup_s = 0.05;
				po.min_steps = 5;
				po.stable_rel = 0.02;
			}
			po.stop = &stop_flag;
			if (!(row = calloc(1, sizeof(*row)))) {
				status = cli_error(EXIT_FAIL,
						   "calibrate: out of memory");
				goto out;
			}
			if (tty)
				fprintf(stderr,
					"\rcalibrate: round %d [%2d/%d] %-34s "
					"%3.0f s left",
					r + 1, i + 1, ndesign, c->id, left);
			rc = hp_profile_config(c, &po, row, &err);
			if (rc == HP_ECANCELED || stop_flag) {
				free(row);
				break;
			}
			if (rc) {
				free(row);
				if (rc == HP_ETOOBIG) {
					p->skip = true;
					continue;
				}
				status =
				    cli_error(EXIT_FAIL, "calibrate: %s: %s",
					      p->id, err.msg);
				goto out;
			}
			q->cfg = i;
			q->wall_s = rt[nrows] = row->step_time_s;
			q->ref_s = row->ref_steps > 0 && row->ref_time_s > 0
				       ? row->ref_time_s
				       : NAN;
			q->pressure = row->cpu_pressure;
			rcls[3 * nrows] = row->time_conv_s;
			rcls[3 * nrows + 1] = row->time_fc_s;
			rcls[3 * nrows + 2] = row->time_other_s;
			free(row);
			/* a measurement whose thread waited for a CPU much
			 * of the time measured the neighbours, not this
			 * host */
			if (q->pressure > a.max_pressure) {
				nbusy++;
				continue;
			}
			/* one thread: the time it ran, not the time it
			 * waited for a CPU taken by other work (wall =
			 * on-CPU + waiting) */
			for (int k = -1; k < 3; k++) {
				double *v =
				    k < 0 ? &rt[nrows] : &rcls[3 * nrows + k];
				*v *= ran_share(q->pressure, h.threads);
			}
			nrows++;
		}
		last_round = hp_now_s() - r0;
		nrounds = r + 1;
	}
	signal(SIGINT, SIG_DFL);
	if (tty)
		fprintf(stderr, "\r%-72s\r", "");
	/* the measurements at the calibration's speed, then each
	 * configuration's median over its rounds */
	ref_s = to_calibration_speed(rows, nrows, rt, rcls, h.threads);
	for (int i = 0; i < ndesign; i++) {
		struct cal_point *p = &pts[i];
		double *v = med;
		int m = 0;
		for (int j = 0; j < nrows; j++)
			m += rows[j].cfg == i;
		if (!m)
			continue;
		p->rounds = m;
		for (int k = -1; k < 3; k++) {
			m = 0;
			for (int j = 0; j < nrows; j++)
				if (rows[j].cfg == i)
					v[m++] =
					    k < 0 ? rt[j] : rcls[3 * j + k];
			*(k < 0 ? &p->measured_s : &cls[3 * n + k]) =
			    hp_est_median(v, m);
		}
		for (int k = 0; k < 3; k++) {
			m = 0;
			for (int j = 0; j < nrows; j++)
				if (rows[j].cfg == i)
					v[m++] = k == 0	  ? rows[j].wall_s
						 : k == 1 ? rows[j].ref_s
							  : rows[j].pressure;
			*(k == 0   ? &p->wall_s
			  : k == 1 ? &p->ref_s
				   : &p->pressure) = hp_est_median(v, m);
		}
		wl[n] = &p->w;
		ys[n] = p->measured_s;
		order[n++] = i;
	}
	if (n < 3) {
		status =
		    cli_error(EXIT_FAIL,
			      "calibrate: %d configuration%s measured in "
			      "%.0f s (%d measurement%s left out: the host was "
			      "busy): too few to fit (give more --seconds)",
			      n, n == 1 ? "" : "s", a.seconds, nbusy,
			      nbusy == 1 ? "" : "s");
		goto out;
	}
	/* the last calibration at these threads, for its speed */
	if (f.calib.has && f.calib.threads == h.threads &&
	    f.calib.ref_time_s > 0 && ref_s > 0) {
		prev_ratio = ref_s / f.calib.ref_time_s;
		snprintf(prev_when, sizeof(prev_when), "%s", f.calib.when);
		prev_ref = f.calib.ref_time_s;
	}
	if ((rc = hp_estimator_calibrate_host_fit(
		 est, cat, "cpu", wl, ys, cls, n, a.ridge, &f.calib, &err))) {
		status =
		    cli_error(cli_status_for(rc), "calibrate: %s", err.msg);
		goto out;
	}
	f.calib.ref_time_s = ref_s;
	utc_now(f.calib.when, sizeof(f.calib.when));
	/* A whole calibration run while a neighbour slowed the host holds
	 * its predictions at that speed: the yardstick cannot see it from
	 * inside, but the last calibration's can. */
	if (prev_ratio > SLOWER_THAN_LAST) {
		char e[96];
		fprintf(stderr,
			"calibrate: warning: this host ran %.1fx slower than "
			"at its calibration of %s (the profiler's yardstick "
			"%.3f ms against %.3f ms): other work may be slowing "
			"it, and predictions now hold at this speed; calibrate "
			"again when it is quiet\n",
			prev_ratio, cli_esc(prev_when, e, sizeof(e)),
			1e3 * ref_s, 1e3 * prev_ref);
	}
	if ((rc = hp_host_file_save(path, &f, &err))) {
		status = cli_error(EXIT_FAIL, "calibrate: %s", err.msg);
		goto out;
	}
	t->calib = f.calib;
	for (int i = 0; i < n; i++)
		predict_cpu(est, cat, &pts[order[i]].w, &pts[order[i]].after_s,
			    &err);

	if (a.json) {
		json_t *o = json_object(), *arr = json_array(), *cj;
		char *s = hp_host_file_json(&f);
		cj = s ? json_loads(s, 0, NULL) : NULL;
		free(s);
		for (int i = 0; i < n; i++) {
			const struct cal_point *p = &pts[order[i]];
			json_t *ms = json_array();
			for (int j = 0; j < nrows; j++)
				if (rows[j].cfg == order[i])
					json_array_append_new(
					    ms,
					    json_pack(
						"{s:f, s:o, s:o}", "wall_s",
						rows[j].wall_s, "ref_time_s",
						rows[j].ref_s > 0
						    ? json_real(rows[j].ref_s)
						    : json_null(),
						"cpu_pressure",
						isnan(rows[j].pressure)
						    ? json_null()
						    : json_real(
							  rows[j].pressure)));
			json_array_append_new(
			    arr,
			    json_pack(
				"{s:s, s:f, s:f, s:f, s:f, s:o, s:o, s:i, "
				"s:o}",
				"id", p->id, "measured_s", p->measured_s,
				"wall_s", p->wall_s, "predicted_s", p->before_s,
				"calibrated_s", p->after_s, "ref_time_s",
				p->ref_s > 0 ? json_real(p->ref_s)
					     : json_null(),
				"cpu_pressure",
				isnan(p->pressure) ? json_null()
						   : json_real(p->pressure),
				"rounds", p->rounds, "measurements", ms));
		}
		json_object_set_new(o, "host_file", json_string(path));
		json_object_set_new(o, "host", cj ? cj : json_null());
		json_object_set_new(o, "configurations", arr);
		json_object_set_new(o, "seconds", json_real(hp_now_s() - t0));
		json_object_set_new(o, "rounds", json_integer(nrounds));
		json_object_set_new(o, "measurements", json_integer(nrows));
		json_object_set_new(o, "left_out_busy", json_integer(nbusy));
		json_object_set_new(o, "slower_than_last",
				    prev_ratio > 0 ? json_real(prev_ratio)
						   : json_null());
		if (json_dumpf(o, stdout, JSON_INDENT(2)) != 0)
			status = cli_error(EXIT_FAIL,
					   "calibrate: cannot write JSON");
		else
			fputc('\n', stdout);
		json_decref(o);
		goto out;
	}
	printf("calibrated %s at %d thread%s from %d configurations (%d "
	       "measurement%s in %d round%s: each configuration's median) in "
	       "%.0f s\n",
	       f.key, h.threads, h.threads == 1 ? "" : "s", n, nrows,
	       nrows == 1 ? "" : "s", nrounds, nrounds == 1 ? "" : "s",
	       hp_now_s() - t0);
	if (f.calib.nparams > 0)
		printf("  fit:      this host's own physical model on these "
		       "configurations, against its %.0f GFLOP/s ISA peak "
		       "(predictions use it in place of the carried fit)\n",
		       f.calib.fit_gflops);
	else
		printf("  factors:  conv %.3f, fc %.3f, other %.3f (ridge "
		       "%g; fewer than %d configurations: no fit of this "
		       "host's own)\n",
		       exp(f.calib.log_scale[0]), exp(f.calib.log_scale[1]),
		       exp(f.calib.log_scale[2]), a.ridge, HP_HOST_OWN_FIT_MIN);
	printf("  MAPE on these configurations: %.1f%% before, %.1f%% after "
	       "(in sample)\n",
	       f.calib.mape_before, f.calib.mape_after);
	if (ref_s > 0) {
		double lo = INFINITY, hi = 0;
		int nr = 0;
		for (int i = 0; i < nrows; i++)
			if (rows[i].ref_s > 0) {
				double r =
				    rows[i].ref_s *
				    ran_share(rows[i].pressure, h.threads);
				lo = fmin(lo, r);
				hi = fmax(hi, r);
				nr++;
			}
		printf("  speed:    the yardstick's step took %.3f ms (median "
		       "of %d; %.3f-%.3f ms as the host's speed moved): "
		       "times scaled to it, predictions hold at it\n",
		       1e3 * ref_s, nr, 1e3 * lo, 1e3 * hi);
	} else {
		printf("  speed:    not measured (no yardstick in the "
		       "profiler's rows): absolute times\n");
	}
	if (nbusy)
		printf("  left out: %d measurement%s taken while the "
		       "host was busy (threads waited for a CPU over %.0f%% "
		       "of the time)\n",
		       nbusy, nbusy == 1 ? "" : "s", 100 * a.max_pressure);
	printf("  saved in %s\n", path);
out:
	for (int i = 0; pts && i < ndesign; i++)
		if (pts[i].have_w)
			hp_workload_release(&pts[i].w);
	free(pts);
	free(order);
	free(rows);
	free(rt);
	free(rcls);
	free(med);
	free(wl);
	free(ys);
	free(cls);
	hp_sweep_release(&sw);
	hp_estimator_free(est);
	hp_catalog_free(cat);
	return status;
}

const struct cli_cmd cli_cmd_calibrate = {
    .name = "calibrate",
    .run = cmd_calibrate,
    .help = help,
    .opts = cal_opts,
};
