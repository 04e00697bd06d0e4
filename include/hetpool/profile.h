/*
 * profile.h - the profiler: run a configuration's training steps on a
 * device until the median step time is stable (bounded in time), and
 * record time, its spread, memory and energy where the device reports it,
 * with the model's features and the identity of host and device.
 */
#ifndef HETPOOL_PROFILE_H
#define HETPOOL_PROFILE_H

#include <signal.h>

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

#ifdef __cplusplus
}
#endif
#endif
