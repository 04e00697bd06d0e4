/*
 * watchdog.c - the stall watchdog: a rank that stops (SIGSTOP, a hung driver, a
 * node that froze) holds every other rank in its next collective for ever, and
 * the job with them, until somebody cancels it.  A thread in each rank
 * watches the steps go by; when none has completed for the stall time it
 * says so and ends its rank, and the launcher (mpirun, srun) ends the
 * others: the job fails with a reason instead of hanging.
 *
 * The stall time is --stall-timeout S, or by default the larger of
 * TR_STALL_MIN_S and TR_STALL_STEPS times the slowest step so far; the
 * watch starts after the first step (which builds the kernels and may be
 * slow), and work that is not a step counts as progress too (each batch of
 * an evaluation, each tensor of a checkpoint).  A rank stopped as a whole
 * (Slurm's suspend sends SIGSTOP to every process of the job) is not a stall:
 * the thread was stopped with it, sees its own tick come late, and starts its
 * count again.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "hetpool/util.h"
#include "trainer.h"

#define TR_STALL_MIN_S 600.0
#define TR_STALL_STEPS 20.0
#define TICK_S 0.5
/* a tick later than this (or a quarter of the limit) was the process
 * being stopped (or starved) */
#define LATE_TICK_S 5.0

static struct {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool running;
	bool stop;	/* under mu */
	double fixed_s; /* > 0: --stall-timeout */
	int rank;
	_Atomic double last_s;	  /* the last beat; 0: not armed */
	_Atomic double slowest_s; /* the slowest step so far */
	_Atomic long long step;
} wd = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* Sleep a tick, or less when told to stop; true: stop. */
static bool tick(void)
{
	struct timespec until;
	bool stop;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_nsec += (long)(TICK_S * 1e9);
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&wd.mu);
	while (!wd.stop && pthread_cond_timedwait(&wd.cv, &wd.mu, &until) == 0)
		;
	stop = wd.stop;
	pthread_mutex_unlock(&wd.mu);
	return stop;
}

/* The stall limit: fixed_s when > 0, else the automatic one. */
static double limit_s(double fixed_s, double slowest_s)
{
	double auto_s = TR_STALL_STEPS * slowest_s;

	if (fixed_s > 0)
		return fixed_s;
	return auto_s > TR_STALL_MIN_S ? auto_s : TR_STALL_MIN_S;
}

static void *watch(void *arg)
{
	double prev = hp_now_s();

	(void)arg;
	while (!tick()) {
		double now = hp_now_s(), last = atomic_load(&wd.last_s);
		double limit = limit_s(wd.fixed_s, atomic_load(&wd.slowest_s));
		/* late by more than a quarter of the limit (at most
		 * LATE_TICK_S): a stop of the rank as a whole that long
		 * must not count as its stall */
		bool late = now - prev - TICK_S >
			    (limit / 4 < LATE_TICK_S ? limit / 4 : LATE_TICK_S);

		prev = now;
		if (last <= 0)
			continue; /* not armed yet */
		if (late) {
			/* stopped with the rank (or starved): that time was
			 * nobody's stall; count from now */
			atomic_store(&wd.last_s, now);
			continue;
		}
		if (now - last > limit) {
			tr_error("rank %d: no progress for %.0f s after step "
				 "%lld (the stall limit; --stall-timeout "
				 "sets it): a rank is stopped, hung or far "
				 "slower than before; ending the run (its "
				 "last checkpoint resumes it)",
				 wd.rank, now - last,
				 (long long)atomic_load(&wd.step));
			/* no MPI from this thread: the launcher sees the
			 * rank end and ends the others */
			_exit(TR_EXIT_FAIL);
		}
	}
	return NULL;
}

int tr_watchdog_start(double stall_s, int rank)
{
	pthread_condattr_t ca;
	sigset_t all, old;
	int rc;

	if (stall_s == 0 || wd.running)
		return 0;
	wd.fixed_s = stall_s > 0 ? stall_s : 0;
	wd.rank = rank;
	wd.stop = false;
	atomic_store(&wd.last_s, 0.0);
	atomic_store(&wd.slowest_s, 0.0);
	atomic_store(&wd.step, 0);
	if (pthread_condattr_init(&ca))
		return -1;
	rc = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) ||
	     pthread_cond_init(&wd.cv, &ca);
	pthread_condattr_destroy(&ca);
	if (rc)
		return -1;
	/* signals (SIGTERM's cancel) stay the main thread's */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = pthread_create(&wd.thread, NULL, watch, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		pthread_cond_destroy(&wd.cv);
		return -1;
	}
	wd.running = true;
	return 0;
}

void tr_watchdog_step(long long step, double step_s)
{
	if (!wd.running)
		return;
	if (step_s > atomic_load(&wd.slowest_s))
		atomic_store(&wd.slowest_s, step_s);
	atomic_store(&wd.step, step);
	atomic_store(&wd.last_s, hp_now_s());
}

void tr_watchdog_beat(void)
{
	/* armed by the first step only */
	if (wd.running && atomic_load(&wd.last_s) > 0)
		atomic_store(&wd.last_s, hp_now_s());
}

void tr_watchdog_stop(void)
{
	if (!wd.running)
		return;
	pthread_mutex_lock(&wd.mu);
	wd.stop = true;
	pthread_cond_signal(&wd.cv);
	pthread_mutex_unlock(&wd.mu);
	pthread_join(wd.thread, NULL);
	pthread_cond_destroy(&wd.cv);
	wd.running = false;
}
