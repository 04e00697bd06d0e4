/* par.c - a bounded parallel for over independent tasks (pthreads). */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include "util/banned.h"
#include "util/par.h"

struct par {
	hp__task_fn fn;
	void *ud;
	int ntasks;
	int next;      /* the next task to hand out */
	int first_bad; /* lowest failed task, or ntasks */
	int first_rc;  /* its return */
	pthread_mutex_t mu;
};

static void *worker(void *arg)
{
	struct par *p = arg;

	for (;;) {
		int t, rc;
		pthread_mutex_lock(&p->mu);
		t = p->next < p->ntasks ? p->next++ : -1;
		pthread_mutex_unlock(&p->mu);
		if (t < 0)
			return NULL;
		rc = p->fn(t, p->ud);
		if (rc) {
			pthread_mutex_lock(&p->mu);
			if (t < p->first_bad) {
				p->first_bad = t;
				p->first_rc = rc;
			}
			pthread_mutex_unlock(&p->mu);
		}
	}
}

int hp__par_run(int ntasks, int nthreads, hp__task_fn fn, void *ud)
{
	struct par p = {
	    fn, ud, ntasks, 0, ntasks, 0, PTHREAD_MUTEX_INITIALIZER};
	pthread_t th[16];
	int started = 0;

	if (nthreads > ntasks)
		nthreads = ntasks;
	if (nthreads > 16)
		nthreads = 16;
	for (int i = 1; i < nthreads; i++) {
		if (pthread_create(&th[started], NULL, worker, &p))
			break;
		started++;
	}
	worker(&p);
	for (int i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	pthread_mutex_destroy(&p.mu);
	return p.first_rc;
}

int hp__par_default_threads(void)
{
	cpu_set_t set;
	int n = 0;

	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		n = CPU_COUNT(&set);
	if (n <= 0)
		n = (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (n <= 0)
		n = 1;
	return n > 16 ? 16 : n;
}
