/*
 * profile.h - the profiler: run a configuration's training steps on a
 * device until the median step time is stable (bounded in time), and
 * record time, its spread, memory and energy where the device reports it,
 * with the model's features and the identity of host and device.
 */
#ifndef HETPOOL_PROFILE_H
#define HETPOOL_PROFILE_H

#include <signal.h>

#include "hetpool/device.h"
#include "hetpool/engine.h"
#include "hetpool/perf.h"

#ifdef __cplusplus
extern "C" {
#endif

struct hp_profile_opts {
	const char *device; /* "cpu" or "cuda:K" */
	int threads;	    /* 0: all cores */
	enum hp_optimizer opt;
	int warmup_steps;    /* at least this many untimed steps (3) */
	double warmup_s;     /* and at least this long (0.2 s) */
	int min_steps;	     /* timed steps before stopping (10) */
	int max_steps;	     /* at most (500) */
	double max_seconds;  /* timed stepping stops after this (4 s) */
	double stable_rel;   /* stop once the median's standard error is
				below this fraction of it (0.01) */
	double max_pressure; /* re-measure when our threads waited for a CPU
				more than this fraction of the timed time
				(schedstat run-queue delay; 0.05) ... */
	int retries;	     /* ... up to this many times (3) */
	uint64_t seed;
	bool reference;	  /* time the yardstick between steps (true) ... */
	double ref_share; /* ... for about this share of the time (0.03) */
	size_t max_bytes; /* refuse configurations needing more (0: 80% RAM) */
	volatile sig_atomic_t *stop; /* set by a signal handler: cancel */
};

void hp_profile_opts_init(struct hp_profile_opts *o);

/*
 * Measure one configuration into row (caller's).  HP_ETOOBIG when the
 * batch cannot fit (nothing large allocated), HP_EDEVICE for a device that
 * is not there, HP_ECANCELED when *o->stop was set.
 */
int hp_profile_config(const struct hp_sweep_config *c,
		      const struct hp_profile_opts *o,
		      struct hp_profile_row *row, struct hp_error *err);

/*
 * Time the yardstick alone: the reference step hp_profile_config() times
 * between a configuration's steps (ref_time_s), on o's device and
 * threads, after 3 warm-up steps, for about `seconds` (at least 7 steps,
 * at most 512).  *ref_s: the median seconds; *cv (may be NULL): stdev /
 * mean.  A host's speed now, to rescale a CPU prediction made at the
 * estimator's reference speed: hp_est_rescale_ref(t,
 * hp_estimator_ref_time_s(est, "cpu"), *ref_s).  HP_EINVAL for seconds
 * not above 0; HP_ECANCELED when *o->stop was set.
 */
int hp_profile_ref_time(const struct hp_profile_opts *o, double seconds,
			double *ref_s, double *cv, struct hp_error *err);

/*
 * Calibrating this host (`hetpool calibrate`): measure its peaks when its
 * host file has none at these threads, profile the built-in "calibrate"
 * sweep in up to HP_CALIBRATE_ROUNDS interleaved rounds while the budget
 * lasts, scale each measurement to the calibration's speed (the
 * profiler's yardstick), fit this host's corrections on each
 * configuration's median and store them in its host file, where the
 * catalog loaders find them (docs/estimator.md, "Hosts").
 */
#define HP_CALIBRATE_ROUNDS 3

struct hp_calibrate_progress {
	bool peaks;	/* measuring the host's peaks (the rest unset) */
	int threads;	/* at these threads */
	int round;	/* 1.. */
	int index, n;	/* configuration index (1..n) of n */
	const char *id; /* its id */
	double left_s;	/* of the budget */
};

struct hp_calibrate_opts {
	int threads;	       /* 0: $HETPOOL_THREADS, else all CPUs */
	double seconds;	       /* the budget (150) */
	double ridge;	       /* of the per-class factors (1) */
	double max_pressure;   /* measurements whose threads waited for a CPU
				  more of the time are left out (0.5) */
	const char *estimator; /* NULL: the shipped one */
	volatile sig_atomic_t *stop; /* set (a signal handler): stop
					measuring and fit what was measured */
	/* called before each measurement, from this thread */
	void (*progress)(void *ctx, const struct hp_calibrate_progress *p);
	void *progress_ctx;
};

/* A configuration of the design that went into the fit. */
struct hp_calibrate_point {
	char id[96];
	int rounds;	     /* its measurements */
	double measured_s;   /* median time at the calibration's speed */
	double wall_s;	     /* median of the profiler's step times */
	double ref_time_s;   /* median yardstick (NaN: not measured) */
	double cpu_pressure; /* median (NaN: not known) */
	double predicted_s;  /* predicted before the calibration */
	double calibrated_s; /* and after */
};

/* One measurement that went into the fit. */
struct hp_calibrate_meas {
	int point;	     /* index into points */
	double wall_s;	     /* the profiler's step time */
	double ref_time_s;   /* its yardstick (NaN: not measured) */
	double cpu_pressure; /* NaN: not known */
};

struct hp_calibrate_result {
	char path[4200];	  /* the host file written */
	struct hp_host_file file; /* as written */
	int threads;		  /* the threads calibrated at */
	int npoints;		  /* configurations fitted on */
	struct hp_calibrate_point *points;
	int nmeas;
	struct hp_calibrate_meas *meas;
	int rounds;	   /* rounds of the design measured */
	int left_out_busy; /* measurements left out (max_pressure) */
	double seconds;	   /* it took */
	/* the yardstick's median at the calibration's speed (NaN: none),
	 * and the range of the measurements' yardsticks */
	double ref_s, ref_lo_s, ref_hi_s;
	int ref_n;
	/* this calibration's yardstick over the last one's at these
	 * threads (NaN: no last one), that one's and when */
	double slower_than_last, last_ref_s;
	char last_when[32];
};

void hp_calibrate_opts_init(struct hp_calibrate_opts *o);
/*
 * Calibrate this host.  On success the host file is written and r filled
 * (release it with hp_calibrate_result_release()).  Errors: HP_EIO for a
 * host that cannot be read or a host file that cannot be read or written
 * (the message names it), HP_EDEVICE when its peaks or a configuration
 * could not be measured or fewer than 3 configurations were (the host
 * busy, the budget short: the message says which), the estimator's and
 * catalog's loading errors, HP_ENOMEM.
 */
int hp_calibrate_host(const struct hp_calibrate_opts *o,
		      struct hp_calibrate_result *r, struct hp_error *err);
void hp_calibrate_result_release(struct hp_calibrate_result *r);

#ifdef __cplusplus
}
#endif
#endif
