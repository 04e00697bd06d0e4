/*
 * par.h - internal: run independent tasks on a few threads (the folds of
 * a cross-validation, each a fit of its own).
 */
#ifndef HP_UTIL_PAR_H
#define HP_UTIL_PAR_H

/* One task; returns 0 or a negative code.  Tasks must not share mutable
 * state except through their own slots in ud. */
typedef int (*hp__task_fn)(int task, void *ud);

/*
 * Run fn(0) .. fn(ntasks - 1) on at most nthreads threads (the calling
 * one among them; nthreads <= 1 runs them in order on the caller).  Every
 * task runs, whatever the others return; the result is the return of the
 * lowest-numbered task that failed, or 0.  A thread that cannot be
 * started leaves its share to the others.
 */
int hp__par_run(int ntasks, int nthreads, hp__task_fn fn, void *ud);

/* The threads to use when the caller says 0: the CPUs this process may
 * run on, at most 16. */
int hp__par_default_threads(void);

#endif
