/*
 * bench_rec_rate.c - the load benchmark's in-process side: the rate at
 * which the library computes the recommendations POST /v1/recommendations
 * answers, on the same pool, model and job, with THREADS threads calling
 * hp_ctx_recommend() on one shared context for SECONDS seconds (the
 * server's request threads do the same, plus HTTP, JSON, auth and the
 * database).  Prints calls per second and per-call latency percentiles.
 *
 *   bench_rec_rate POOL.json MODEL THREADS SECONDS SAMPLES EPOCHS BATCH
 *                  DEADLINE_S
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hetpool/ctx.h"
#include "hetpool/util.h"

struct shared {
	struct hp_ctx *ctx;
	const struct hp_pool *pool;
	const struct hp_workload *w1;
	struct hp_rec_job job;
	double until;
	atomic_long calls;
	atomic_int failed;
};

struct worker {
	pthread_t t;
	struct shared *s;
	double *lat;
	size_t n, cap;
};

static void *run(void *arg)
{
	struct worker *w = arg;
	struct shared *s = w->s;

	while (hp_now_s() < s->until) {
		struct hp_rec_result r;
		struct hp_error err = {0};
		double t0 = hp_now_s();
		if (hp_ctx_recommend(s->ctx, s->w1, s->pool, &s->job, &r,
				     &err)) {
			fprintf(stderr, "bench_rec_rate: %s\n", err.msg);
			atomic_store(&s->failed, 1);
			return NULL;
		}
		hp_rec_result_release(&r);
		if (w->n == w->cap) {
			double *nl;
			w->cap = w->cap ? 2 * w->cap : 4096;
			if (!(nl = realloc(w->lat, w->cap * sizeof(*nl))))
				abort();
			w->lat = nl;
		}
		w->lat[w->n++] = hp_now_s() - t0;
		atomic_fetch_add(&s->calls, 1);
	}
	return NULL;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	struct hp_ctx_options o = {0};
	struct hp_error err = {0};
	struct hp_model_input mi = {0};
	struct shared s = {0};
	struct worker w[64];
	const struct hp_snap *snap;
	struct hp_pool *pool;
	double *all, t0, secs;
	size_t n = 0;
	int threads;

	if (argc != 9) {
		fprintf(stderr, "usage: bench_rec_rate POOL.json MODEL THREADS "
				"SECONDS SAMPLES EPOCHS BATCH DEADLINE_S\n");
		return 2;
	}
	threads = atoi(argv[3]);
	secs = atof(argv[4]);
	if (threads < 1 || threads > 64 || !(secs > 0))
		return 2;
	if (!(s.ctx = hp_ctx_new(&o, &err)) ||
	    hp_ctx_load_model(argv[2], 1, NULL, 0, &mi, &err)) {
		fprintf(stderr, "bench_rec_rate: %s\n", err.msg);
		return 1;
	}
	snap = hp_ctx_acquire(s.ctx);
	pool = hp_ctx_load_pool(argv[1], hp_snap_catalog(snap), &err);
	hp_snap_release(snap);
	if (!pool) {
		fprintf(stderr, "bench_rec_rate: %s\n", err.msg);
		return 1;
	}
	s.pool = pool;
	s.w1 = &mi.workload;
	s.job.samples = atoll(argv[5]);
	s.job.epochs = atoll(argv[6]);
	s.job.batch = atoll(argv[7]);
	s.job.deadline_s = atof(argv[8]);
	s.job.front = 5; /* the API's default */
	t0 = hp_now_s();
	s.until = t0 + secs;
	for (int i = 0; i < threads; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].s = &s;
		pthread_create(&w[i].t, NULL, run, &w[i]);
	}
	for (int i = 0; i < threads; i++)
		pthread_join(w[i].t, NULL);
	secs = hp_now_s() - t0;
	if (atomic_load(&s.failed))
		return 1;
	for (int i = 0; i < threads; i++)
		n += w[i].n;
	if (!(all = malloc((n ? n : 1) * sizeof(*all))))
		return 1;
	n = 0;
	for (int i = 0; i < threads; i++) {
		memcpy(all + n, w[i].lat, w[i].n * sizeof(*all));
		n += w[i].n;
		free(w[i].lat);
	}
	qsort(all, n, sizeof(*all), cmp);
	printf("in-process: %d threads, %.1f s: %ld recommendations, %.1f/s; "
	       "latency p50 %.2f ms, p90 %.2f ms, p99 %.2f ms\n",
	       threads, secs, atomic_load(&s.calls),
	       (double)atomic_load(&s.calls) / secs, n ? all[n / 2] * 1e3 : 0,
	       n ? all[n * 9 / 10] * 1e3 : 0, n ? all[n * 99 / 100] * 1e3 : 0);
	free(all);
	hp_pool_free(pool);
	hp_model_input_release(&mi);
	hp_ctx_free(s.ctx);
	return 0;
}
