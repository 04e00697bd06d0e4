/*
 * cmd_calibrate.c - `hetpool calibrate`: hp_calibrate_host() (engine/
 * calibrate.c: profile the built-in "calibrate" sweep on this host within
 * a time budget, fit this host's corrections, store them in its host
 * file) with its options, progress on a terminal, Ctrl-C, and its report
 * as text or JSON.
 */
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli.h"
#include "hetpool/device.h"
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
    "                    else its CPUs); predictions use it with 'predict "
    "--threads\n"
    "                    N' or HETPOOL_THREADS=N.  At most the CPUs this "
    "process\n"
    "                    may run on (exit 2): more would take turns on "
    "them, and\n"
    "                    predictions past them are made at their count\n"
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

/* A calibration whose yardstick runs this many times slower than the last
 * one's at the same threads warns that the host may be slowed. */
#define SLOWER_THAN_LAST 1.3

/* Progress on a terminal's stderr. */
static void progress(void *ctx, const struct hp_calibrate_progress *p)
{
	(void)ctx;
	if (p->peaks)
		fprintf(stderr,
			"calibrate: measuring this host's peaks at %d "
			"thread%s...\n",
			p->threads, p->threads == 1 ? "" : "s");
	else
		fprintf(stderr,
			"\rcalibrate: round %d [%2d/%d] %-34s %3.0f s left",
			p->round, p->index, p->n, p->id, p->left_s);
}

static json_t *num_or_null(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

static int print_json(const struct hp_calibrate_result *r)
{
	json_t *o = json_object(), *arr = json_array(), *cj;
	char *s = hp_host_file_json(&r->file);
	int status = EXIT_OK;

	cj = s ? json_loads(s, 0, NULL) : NULL;
	free(s);
	for (int i = 0; i < r->npoints; i++) {
		const struct hp_calibrate_point *p = &r->points[i];
		json_t *ms = json_array();
		for (int j = 0; j < r->nmeas; j++)
			if (r->meas[j].point == i)
				json_array_append_new(
				    ms,
				    json_pack(
					"{s:f, s:o, s:o}", "wall_s",
					r->meas[j].wall_s, "ref_time_s",
					r->meas[j].ref_time_s > 0
					    ? json_real(r->meas[j].ref_time_s)
					    : json_null(),
					"cpu_pressure",
					num_or_null(r->meas[j].cpu_pressure)));
		json_array_append_new(
		    arr, json_pack(
			     "{s:s, s:f, s:f, s:f, s:f, s:o, s:o, s:i, s:o}",
			     "id", p->id, "measured_s", p->measured_s, "wall_s",
			     p->wall_s, "predicted_s", p->predicted_s,
			     "calibrated_s", p->calibrated_s, "ref_time_s",
			     p->ref_time_s > 0 ? json_real(p->ref_time_s)
					       : json_null(),
			     "cpu_pressure", num_or_null(p->cpu_pressure),
			     "rounds", p->rounds, "measurements", ms));
	}
	json_object_set_new(o, "host_file", json_string(r->path));
	json_object_set_new(o, "host", cj ? cj : json_null());
	json_object_set_new(o, "configurations", arr);
	json_object_set_new(o, "seconds", json_real(r->seconds));
	json_object_set_new(o, "rounds", json_integer(r->rounds));
	json_object_set_new(o, "measurements", json_integer(r->nmeas));
	json_object_set_new(o, "left_out_busy", json_integer(r->left_out_busy));
	json_object_set_new(o, "slower_than_last",
			    r->slower_than_last > 0
				? json_real(r->slower_than_last)
				: json_null());
	if (json_dumpf(o, stdout, JSON_INDENT(2)) != 0)
		status = cli_error(EXIT_FAIL, "calibrate: cannot write JSON");
	else
		fputc('\n', stdout);
	json_decref(o);
	return status;
}

static void print_text(const struct hp_calibrate_result *r, double ridge,
		       double max_pressure)
{
	const struct hp_host_calib *cb = &r->file.calib;

	printf("calibrated %s at %d thread%s from %d configurations (%d "
	       "measurement%s in %d round%s: each configuration's median) in "
	       "%.0f s\n",
	       r->file.key, r->threads, r->threads == 1 ? "" : "s", r->npoints,
	       r->nmeas, r->nmeas == 1 ? "" : "s", r->rounds,
	       r->rounds == 1 ? "" : "s", r->seconds);
	if (cb->nparams > 0)
		printf("  fit:      this host's own physical model on these "
		       "configurations, against its %.0f GFLOP/s ISA peak "
		       "(predictions use it in place of the carried fit)\n",
		       cb->fit_gflops);
	else
		printf("  factors:  conv %.3f, fc %.3f, other %.3f (ridge "
		       "%g; fewer than %d configurations: no fit of this "
		       "host's own)\n",
		       exp(cb->log_scale[0]), exp(cb->log_scale[1]),
		       exp(cb->log_scale[2]), ridge, HP_HOST_OWN_FIT_MIN);
	printf("  MAPE on these configurations: %.1f%% before, %.1f%% after "
	       "(in sample)\n",
	       cb->mape_before, cb->mape_after);
	if (r->ref_s > 0)
		printf("  speed:    the yardstick's step took %.3f ms (median "
		       "of %d; %.3f-%.3f ms as the host's speed moved): "
		       "times scaled to it, predictions hold at it\n",
		       1e3 * r->ref_s, r->ref_n, 1e3 * r->ref_lo_s,
		       1e3 * r->ref_hi_s);
	else
		printf("  speed:    not measured (no yardstick in the "
		       "profiler's rows): absolute times\n");
	if (r->left_out_busy)
		printf("  left out: %d measurement%s taken while the "
		       "host was busy (threads waited for a CPU over %.0f%% "
		       "of the time)\n",
		       r->left_out_busy, r->left_out_busy == 1 ? "" : "s",
		       100 * max_pressure);
	printf("  saved in %s\n", r->path);
}

/*
 * More threads than the CPUs this process may run on take turns on them:
 * the calibration would time the turns, and stored at those threads it
 * would never be used, since predictions past the CPUs are made at the
 * CPUs' count (lib/ctx/load.c).  threads: --threads, 0 when not given
 * ($HETPOOL_THREADS, else the CPUs).  0 or exit 2.
 */
static int check_threads(int threads)
{
	struct hp_error err = {0};
	struct hp_host h;
	const char *what = "--threads ";

	if (!threads) {
		threads = hp_ctx_threads();
		what = "HETPOOL_THREADS=";
	}
	/* the CPUs cannot be counted: the calibration says why */
	if (!threads || hp_host_detect(&h, &err) || h.logical_cpus < 1)
		return 0;
	if (threads > h.logical_cpus)
		return cli_error(EXIT_USAGE,
				 "calibrate: %s%d is more than the %d CPU%s "
				 "this process may run on: its threads would "
				 "take turns, and predictions at more threads "
				 "than CPUs are made at %d; give %d or fewer",
				 what, threads, h.logical_cpus,
				 h.logical_cpus == 1 ? "" : "s", h.logical_cpus,
				 h.logical_cpus);
	return 0;
}

static int cmd_calibrate(int argc, char **argv)
{
	struct hp_calibrate_opts co;
	struct cal_args a;
	struct hp_calibrate_result r;
	struct hp_error err = {0};
	int first, status, rc;

	hp_calibrate_opts_init(&co);
	a = (struct cal_args){.seconds = co.seconds,
			      .ridge = co.ridge,
			      .max_pressure = co.max_pressure};
	if ((status = cli_parse(&cli_cmd_calibrate, argc, argv, &a, &first)))
		return status < 0 ? EXIT_OK : status;
	if (first < argc)
		return cli_error(EXIT_USAGE,
				 "calibrate: unexpected argument '%s'",
				 argv[first]);
	if ((status = check_threads(a.threads)))
		return status;
	co.threads = a.threads;
	co.seconds = a.seconds;
	co.ridge = a.ridge;
	co.max_pressure = a.max_pressure;
	co.estimator = a.estimator;
	co.stop = &stop_flag;
	if (isatty(STDERR_FILENO))
		co.progress = progress;
	signal(SIGINT, on_signal);
	rc = hp_calibrate_host(&co, &r, &err);
	signal(SIGINT, SIG_DFL);
	if (co.progress)
		fprintf(stderr, "\r%-72s\r", "");
	if (rc)
		return cli_error(cli_status_for(rc), "calibrate: %s%s", err.msg,
				 cli_load_hint(&err));
	/* A whole calibration run while a neighbour slowed the host holds
	 * its predictions at that speed: the yardstick cannot see it from
	 * inside, but the last calibration's can. */
	if (r.slower_than_last > SLOWER_THAN_LAST) {
		char e[96];
		fprintf(stderr,
			"calibrate: warning: this host ran %.1fx slower than "
			"at its calibration of %s (the profiler's yardstick "
			"%.3f ms against %.3f ms): other work may be slowing "
			"it, and predictions now hold at this speed; calibrate "
			"again when it is quiet\n",
			r.slower_than_last, cli_esc(r.last_when, e, sizeof(e)),
			1e3 * r.ref_s, 1e3 * r.last_ref_s);
	}
	if (a.json)
		status = print_json(&r);
	else
		print_text(&r, a.ridge, a.max_pressure);
	hp_calibrate_result_release(&r);
	return status;
}

const struct cli_cmd cli_cmd_calibrate = {
    .name = "calibrate",
    .run = cmd_calibrate,
    .help = help,
    .opts = cal_opts,
};
