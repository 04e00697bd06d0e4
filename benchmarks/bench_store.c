/*
 * bench_store.c - the store's operations as hetpoold uses them, on a
 * database file in $TMPDIR (default /tmp): submitting a job (committed,
 * synchronous=FULL against NORMAL, interleaved round by round), reading a
 * job, verifying a token, the pool of data/pools/sample.json (unchanged,
 * so cached; and rebuilt after a write),
 * a job's whole allocation cycle (start, running, succeeded), and job
 * reads from 8 threads at once.  Each figure is the median of BENCH_REPS
 * rounds (default 5) with the fastest and slowest round beside it.
 *
 * Usage: bench_store [POOL.json]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hetpool/pool.h"
#include "hetpool/store.h"

#define MAX_REPS 50

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void report(const char *what, const char *unit, double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_d);
	printf("%-44s %10.2f %s  (rounds %.2f .. %.2f)\n", what, v[n / 2], unit,
	       v[0], v[n - 1]);
}

static void die(const char *what, const struct hp_error *err)
{
	fprintf(stderr, "bench_store: %s: %s\n", what, err->msg);
	exit(1);
}

static void rm_files(const char *path)
{
	char p[600];

	unlink(path);
	snprintf(p, sizeof(p), "%s-wal", path);
	unlink(p);
	snprintf(p, sizeof(p), "%s-shm", path);
	unlink(p);
}

static struct hp_store *open_fresh(const char *path, bool no_sync)
{
	struct hp_store_options o = {.no_sync = no_sync, .max_connections = 9};
	struct hp_error err = {0};
	struct hp_store *s;

	rm_files(path);
	if (!(s = hp_store_open(path, &o, &err)))
		die("open", &err);
	return s;
}

/* Milliseconds per job submission (each one committed). */
static double adds_ms(struct hp_store *s, int n)
{
	struct hp_store_job_new in = {
	    .description = "{\"model_id\": 1, \"samples\": 60000, \"epochs\": "
			   "1, \"batch\": 256, \"deadline_s\": 3600}",
	    .data = "fashion-mnist"};
	struct hp_error err = {0};
	double t0 = hp_now_s();

	for (int i = 0; i < n; i++)
		if (hp_store_job_add(s, &in, NULL, &err))
			die("job add", &err);
	return (hp_now_s() - t0) * 1e3 / n;
}

struct reader {
	struct hp_store *s;
	int n, njobs;
};

static void *read_jobs(void *arg)
{
	struct reader *r = arg;
	struct hp_error err = {0};
	struct hp_store_job j;

	for (int i = 0; i < r->n; i++) {
		if (hp_store_job_get(r->s, 1 + i % r->njobs, &j, &err))
			die("job get", &err);
		hp_store_job_release(&j);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	const char *pool_path = argc > 1 ? argv[1] : "data/pools/sample.json";
	const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	const char *reps_env = getenv("BENCH_REPS");
	int reps = reps_env ? (int)strtol(reps_env, NULL, 10) : 5;
	double full[MAX_REPS], normal[MAX_REPS], get_us[MAX_REPS],
	    tok_us[MAX_REPS], pool_us[MAX_REPS], rebuild_us[MAX_REPS],
	    cycle_ms[MAX_REPS], par_kps[MAX_REPS];
	char path[512], token[HP_TOKEN_LEN + 1];
	struct hp_error err = {0};
	struct hp_pool *pool;
	struct hp_store *s;
	const int njobs = 200;

	if (reps < 1 || reps > MAX_REPS)
		reps = 5;
	snprintf(path, sizeof(path), "%s/bench-store.%d.db", tmp,
		 (int)getpid());
	if (!(pool = hp_pool_load(pool_path, NULL, &err)))
		die("pool", &err);
	for (int r = 0; r < reps; r++) {
		struct hp_store_job j;
		pthread_t th[8];
		struct reader rd[8];
		double t0;

		/* Interleaved: FULL then NORMAL, on fresh files. */
		s = open_fresh(path, false);
		full[r] = adds_ms(s, 50);
		hp_store_close(s);
		s = open_fresh(path, true);
		normal[r] = adds_ms(s, 50);
		adds_ms(s, njobs - 50);

		t0 = hp_now_s();
		for (int i = 0; i < 20000; i++) {
			if (hp_store_job_get(s, 1 + i % njobs, &j, &err))
				die("job get", &err);
			hp_store_job_release(&j);
		}
		get_us[r] = (hp_now_s() - t0) * 1e6 / 20000;

		if (hp_store_token_create(s, "bench", HP_ROLE_USER, token, NULL,
					  &err))
			die("token", &err);
		t0 = hp_now_s();
		for (int i = 0; i < 20000; i++)
			if (hp_store_token_verify(s, token, NULL, &err))
				die("verify", &err);
		tok_us[r] = (hp_now_s() - t0) * 1e6 / 20000;

		if (hp_store_pool_load(s, pool, false, &err))
			die("pool load", &err);
		t0 = hp_now_s();
		for (int i = 0; i < 2000; i++) {
			struct hp_pool *p = hp_store_pool(s, &err);
			if (!p)
				die("pool", &err);
			hp_pool_free(p);
		}
		pool_us[r] = (hp_now_s() - t0) * 1e6 / 2000;
		/* After a change (a drain, a write), the pool is built again.
		 */
		t0 = hp_now_s();
		for (int i = 0; i < 200; i++) {
			struct hp_pool *p;
			if (hp_store_node_drain(s, pool->nodes[0].name,
						(i + 1) % 2, &err) ||
			    !(p = hp_store_pool(s, &err)))
				die("drain + pool", &err);
			hp_pool_free(p);
		}
		rebuild_us[r] = (hp_now_s() - t0) * 1e6 / 200;

		/* Start, run and end the queued jobs, 2 devices each. */
		t0 = hp_now_s();
		for (int i = 1; i <= 100; i++) {
			struct hp_store_devreq q = {pool->nodes[0].name,
						    pool->nodes[0].devs[0].type,
						    2, -1};
			if (hp_store_job_start(s, i, &q, 1, NULL, NULL, NULL,
					       &err) ||
			    hp_store_job_transition(s, i, HP_JOB_RUNNING, NULL,
						    &err) ||
			    hp_store_job_transition(s, i, HP_JOB_SUCCEEDED,
						    NULL, &err))
				die("cycle", &err);
		}
		cycle_ms[r] = (hp_now_s() - t0) * 1e3 / 100;

		t0 = hp_now_s();
		for (int t = 0; t < 8; t++) {
			rd[t] = (struct reader){s, 5000, njobs};
			pthread_create(&th[t], NULL, read_jobs, &rd[t]);
		}
		for (int t = 0; t < 8; t++)
			pthread_join(th[t], NULL);
		par_kps[r] = 8 * 5000 / (hp_now_s() - t0) / 1e3;
		hp_store_close(s);
	}
	rm_files(path);
	printf("store on %s, %d rounds, medians:\n", tmp, reps);
	report("submit a job, synchronous=FULL (fsync)", "ms", full, reps);
	report("submit a job, synchronous=NORMAL", "ms", normal, reps);
	report("read a job", "us", get_us, reps);
	report("verify a token", "us", tok_us, reps);
	report("the pool (sample.json), unchanged: cached", "us", pool_us,
	       reps);
	report("a node drained (NORMAL), then the pool rebuilt", "us",
	       rebuild_us, reps);
	report("start + running + succeeded, 2 devices (NORMAL)", "ms",
	       cycle_ms, reps);
	report("read jobs from 8 threads", "k/s", par_kps, reps);
	hp_pool_free(pool);
	return 0;
}
