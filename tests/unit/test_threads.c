/*
 * test_threads.c - hp_recommend() and hp_estimator_predict() from 8
 * threads at once, on one shared context (ctx.h), each call giving what
 * the same call gives alone: different models, pools, deadlines, batch
 * bounds and fronts, and predictions on four device types.  While the
 * threads run, the context is refitted (a new estimator swapped in) and
 * then swapped back to a reload of the shipped one; every call is
 * compared, after the threads end, with the same call made serially on
 * the snapshot (version) it ran on.  `make tsan` runs these under
 * ThreadSanitizer (build-tsan/), where a data race fails the test.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hetpool/ctx.h"
#include "test.h"

enum { NTHREADS = 8, NMODELS = 2, NPOOLS = 2, MAXVER = 4, MIN_ITERS = 3 };

/* One call to make: a recommendation and a prediction. */
struct task {
	int model, pool;
	struct hp_rec_job job;
	const char *device; /* predicted at batch `batch` per device */
	int batch_at;	    /* index into the workloads at batch */
	int ndevices;
};

/* What one call gave. */
struct outcome {
	int task;
	uint64_t version;
	int rec_rc;
	char rec_msg[256];
	char *rec_json; /* owned */
	int pred_rc;
	char pred_msg[256];
	struct hp_prediction pred;
};

static const int64_t pred_batches[] = {8, 64};

struct shared {
	struct hp_ctx *ctx;
	struct hp_workload w1[NMODELS];	   /* at batch 1 */
	struct hp_workload wb[NMODELS][2]; /* at pred_batches */
	struct hp_pool *pools[NPOOLS];
	struct task tasks[32];
	int ntasks;
	atomic_int done;	     /* the swaps are over */
	atomic_int iters;	     /* calls finished, all threads */
	atomic_int seen[MAXVER + 1]; /* calls that acquired each version */
};

struct reader {
	struct shared *sh;
	int id;
	struct outcome *out;
	int n, cap;
};

/* Task t on snapshot s into o. */
static void call(const struct shared *sh, const struct hp_snap *s, int t,
		 struct outcome *o)
{
	const struct task *k = &sh->tasks[t];
	const struct hp_estimator *est = hp_snap_estimator(s);
	const struct hp_catalog *cat = hp_snap_catalog(s);
	struct hp_error err = {0};
	struct hp_rec_result r;

	memset(o, 0, sizeof(*o));
	o->task = t;
	o->version = hp_snap_version(s);
	o->rec_rc = hp_recommend(est, cat, &sh->w1[k->model],
				 sh->pools[k->pool], &k->job, &r, &err);
	if (o->rec_rc) {
		snprintf(o->rec_msg, sizeof(o->rec_msg), "%s", err.msg);
	} else {
		o->rec_json =
		    hp_rec_result_json(&r, &k->job, sh->pools[k->pool]);
		ASSERT(o->rec_json);
		hp_rec_result_release(&r);
	}
	err.msg[0] = '\0';
	o->pred_rc =
	    hp_estimator_predict(est, cat, &sh->wb[k->model][k->batch_at],
				 k->device, k->ndevices, -1, &o->pred, &err);
	snprintf(o->pred_msg, sizeof(o->pred_msg), "%s", err.msg);
}

static void *reader_main(void *arg)
{
	struct reader *R = arg;
	struct shared *sh = R->sh;

	for (int i = 0;; i++) {
		int last = atomic_load(&sh->done) && i >= MIN_ITERS;
		int t = (R->id * 5 + i * 3) % sh->ntasks;
		const struct hp_snap *s = hp_ctx_acquire(sh->ctx);
		uint64_t v = hp_snap_version(s);
		ASSERT(v >= 1 && v <= MAXVER);
		atomic_fetch_add(&sh->seen[v], 1);
		if (R->n == R->cap) {
			R->cap = R->cap ? 2 * R->cap : 16;
			R->out =
			    realloc(R->out, (size_t)R->cap * sizeof(*R->out));
			ASSERT(R->out);
		}
		call(sh, s, t, &R->out[R->n++]);
		hp_snap_release(s);
		atomic_fetch_add(&sh->iters, 1);
		if (last)
			break;
	}
	return NULL;
}

/* A pool of n nodes of 8 GPUs of one of six types, free counts and
 * links varied, as JSON. */
static struct hp_pool *make_pool(int n, const struct hp_catalog *cat)
{
	static const struct {
		const char *type;
		int intra, net, lat, base;
	} sku[6] = {
	    {"v100", 1200, 100, 3, 1000},     {"a100-80", 2400, 200, 2, 1500},
	    {"h100-sxm", 3600, 400, 2, 2000}, {"t4", 128, 25, 15, 350},
	    {"a10", 256, 100, 5, 500},	      {"l40s", 512, 200, 4, 800}};
	struct hp_error err = {0};
	struct hp_pool *p;
	size_t cap = (size_t)n * 400 + 64, off = 0;
	char *text = malloc(cap);

	ASSERT(text);
	off += (size_t)snprintf(text + off, cap - off, "{\"nodes\": [");
	for (int i = 0; i < n; i++) {
		int s = i % 6;
		off += (size_t)snprintf(
		    text + off, cap - off,
		    "%s{\"name\": \"n%04d\", \"devices\": [{\"type\": \"%s\", "
		    "\"count\": 8, \"free\": %d}], \"cpu_cores\": 64, "
		    "\"memory_gb\": 512, \"intra_bw_gbps\": %d, "
		    "\"net_bw_gbps\": %d, \"net_latency_us\": %d, "
		    "\"base_power_w\": %d}",
		    i ? ", " : "", i, sku[s].type, (i * 7) % 9,
		    sku[s].intra + i % 3, sku[s].net, sku[s].lat,
		    sku[s].base + 10 * (i % 4));
	}
	snprintf(text + off, cap - off, "]}");
	p = hp_pool_parse(text, strlen(text), "generated", cat, &err);
	if (!p)
		HP_FAIL("%s", err.msg);
	free(text);
	return p;
}

static void shared_init(struct shared *sh)
{
	static const char *const models[NMODELS] = {
	    "data/models/resnet18.train.onnx",
	    "benchmarks/specs/cnn3_s32_small.json"};
	static const double deadlines[] = {3600, 300, 86400, 600};
	static const char *const devices[] = {"v100", "a100-80", "t4", "cpu"};
	struct hp_error err = {0};
	const struct hp_snap *s;

	memset(sh, 0, sizeof(*sh));
	sh->ctx = hp_ctx_new(NULL, &err);
	if (!sh->ctx)
		HP_FAIL("%s", err.msg);
	s = hp_ctx_acquire(sh->ctx);
	for (int m = 0; m < NMODELS; m++) {
		struct hp_model_input mi;
		if (hp_ctx_load_model(hp_test_path(models[m]), 1, NULL, 0, &mi,
				      &err))
			HP_FAIL("%s", err.msg);
		sh->w1[m] = mi.workload;
		memset(&mi.workload, 0, sizeof(mi.workload));
		hp_model_input_release(&mi);
		for (int b = 0; b < 2; b++)
			ASSERT_EQ_INT(hp_workload_at_batch(&sh->w1[m],
							   pred_batches[b],
							   &sh->wb[m][b], &err),
				      0);
	}
	sh->pools[0] = hp_ctx_load_pool(hp_test_path("data/pools/sample.json"),
					hp_snap_catalog(s), &err);
	ASSERT(sh->pools[0]);
	sh->pools[1] = make_pool(120, hp_snap_catalog(s));
	hp_snap_release(s);
	/* 16 tasks: every model on every pool, four deadlines, batch or
	 * bounds, with and without the exact front, a type constraint. */
	for (int t = 0; t < 16; t++) {
		struct task *k = &sh->tasks[sh->ntasks++];
		k->model = t % NMODELS;
		k->pool = (t / 2) % NPOOLS;
		k->job.samples = 1281167;
		k->job.epochs = 1 + t % 3;
		if (t % 4 == 3) {
			k->job.batch_min = 128;
			k->job.batch_max = 1024;
		} else {
			k->job.batch = 256 << (t % 3);
		}
		k->job.deadline_s = deadlines[t % 4];
		k->job.front = t % 5 == 0 ? 0 : 3;
		k->job.device_type = t == 7 ? "v100" : NULL;
		k->job.lr_rule = (enum hp_lr_rule)(t % 3);
		k->device = devices[t % 4];
		k->batch_at = (t / 4) % 2;
		k->ndevices = 1 + t % 2;
	}
}

static void shared_release(struct shared *sh)
{
	for (int m = 0; m < NMODELS; m++) {
		hp_workload_release(&sh->w1[m]);
		for (int b = 0; b < 2; b++)
			hp_workload_release(&sh->wb[m][b]);
	}
	for (int p = 0; p < NPOOLS; p++)
		hp_pool_free(sh->pools[p]);
	hp_ctx_free(sh->ctx);
}

/* Wait (without a clock: the threads always make progress) until
 * *counter reaches n. */
static void wait_for(atomic_int *counter, int n)
{
	while (atomic_load(counter) < n) {
		struct timespec ts = {0, 2000000};
		nanosleep(&ts, NULL);
	}
}

static void same(const struct outcome *a, const struct outcome *b)
{
	if (a->rec_rc != b->rec_rc || strcmp(a->rec_msg, b->rec_msg))
		HP_FAIL("task %d v%llu: recommend %d '%s', serially %d '%s'",
			a->task, (unsigned long long)a->version, a->rec_rc,
			a->rec_msg, b->rec_rc, b->rec_msg);
	if ((a->rec_json == NULL) != (b->rec_json == NULL) ||
	    (a->rec_json && strcmp(a->rec_json, b->rec_json)))
		HP_FAIL("task %d v%llu: the recommendation differs from the "
			"same call made serially",
			a->task, (unsigned long long)a->version);
	if (a->pred_rc != b->pred_rc || strcmp(a->pred_msg, b->pred_msg) ||
	    memcmp(&a->pred, &b->pred, sizeof(a->pred)))
		HP_FAIL("task %d v%llu: the prediction differs from the same "
			"call made serially (%d '%s' vs %d '%s')",
			a->task, (unsigned long long)a->version, a->pred_rc,
			a->pred_msg, b->pred_rc, b->pred_msg);
}

HP_TEST(threads_recommend_and_predict_from_8_threads_across_a_refit)
{
	const char *data = hp_test_path("tests/data/estimate/cpu-small.csv");
	struct hp_fit_options fo = {.datasets = &data,
				    .ndatasets = 1,
				    .no_intervals = true,
				    .threads = 2};
	static struct shared sh;
	struct reader readers[NTHREADS];
	pthread_t th[NTHREADS];
	const struct hp_snap *snaps[MAXVER + 1] = {0};
	struct outcome *ref[MAXVER + 1] = {0};
	struct hp_error err = {0};
	uint64_t v = 0;
	int total = 0, versions = 0, successes = 0;

	shared_init(&sh);
	snaps[1] = hp_ctx_acquire(sh.ctx);
	for (int i = 0; i < NTHREADS; i++) {
		readers[i] = (struct reader){&sh, i, NULL, 0, 0};
		ASSERT_EQ_INT(
		    pthread_create(&th[i], NULL, reader_main, &readers[i]), 0);
	}
	/* A refit while they run, once some calls are done; then back to
	 * the shipped estimator (a reload) once calls have run on it. */
	wait_for(&sh.iters, NTHREADS);
	ASSERT_EQ_INT(hp_ctx_refit(sh.ctx, &fo, &v, &err), 0);
	ASSERT_EQ_INT(v, 2);
	snaps[2] = hp_ctx_acquire(sh.ctx);
	wait_for(&sh.seen[2], 4);
	{
		struct hp_estimator *est = hp_ctx_load_estimator(NULL, &err);
		ASSERT(est);
		ASSERT_EQ_INT(hp_ctx_swap_estimator(sh.ctx, est, &v, &err), 0);
		ASSERT_EQ_INT(v, 3);
	}
	snaps[3] = hp_ctx_acquire(sh.ctx);
	atomic_store(&sh.done, 1);
	for (int i = 0; i < NTHREADS; i++)
		ASSERT_EQ_INT(pthread_join(th[i], NULL), 0);

	/* Every call against the same call made serially on its version. */
	for (int ver = 1; ver <= 3; ver++) {
		ref[ver] = calloc((size_t)sh.ntasks, sizeof(*ref[ver]));
		ASSERT(ref[ver]);
		for (int t = 0; t < sh.ntasks; t++)
			ref[ver][t].task = -1;
		versions += atomic_load(&sh.seen[ver]) > 0;
	}
	for (int i = 0; i < NTHREADS; i++)
		for (int j = 0; j < readers[i].n; j++) {
			struct outcome *o = &readers[i].out[j];
			struct outcome *r = &ref[o->version][o->task];
			if (r->task < 0)
				call(&sh, snaps[o->version], o->task, r);
			same(o, r);
			successes += o->rec_rc == 0 && o->pred_rc == 0;
			total++;
		}
	/* The reload gives what the shipped one gave. */
	for (int t = 0; t < sh.ntasks; t++)
		if (ref[1][t].task >= 0 && ref[3][t].task >= 0)
			same(&ref[3][t], &ref[1][t]);
	fprintf(stderr,
		"threads: %d calls on %d threads over %d versions, %d with a "
		"recommendation and a prediction; all as made serially\n",
		total, NTHREADS, versions, successes);
	ASSERT_EQ_INT(versions, 3);
	ASSERT(total >= NTHREADS * (MIN_ITERS + 1));
	ASSERT(successes >= NTHREADS);
	for (int ver = 1; ver <= 3; ver++) {
		for (int t = 0; t < sh.ntasks; t++)
			free(ref[ver][t].rec_json);
		free(ref[ver]);
		hp_snap_release(snaps[ver]);
	}
	for (int i = 0; i < NTHREADS; i++) {
		for (int j = 0; j < readers[i].n; j++)
			free(readers[i].out[j].rec_json);
		free(readers[i].out);
	}
	shared_release(&sh);
}

/* The library's log sink is global: set and read from many threads at
 * once, every message reaches it. */
static atomic_int logged;

static void count_sink(enum hp_log_level level, const char *msg, void *ud)
{
	(void)level;
	(void)msg;
	atomic_fetch_add((atomic_int *)ud, 1);
}

static void *log_main(void *arg)
{
	(void)arg;
	for (int i = 0; i < 200; i++) {
		hp_log_set(count_sink, &logged, HP_LOG_DEBUG);
		hp_log(HP_LOG_WARN, "message %d", i);
	}
	return NULL;
}

HP_TEST(threads_log_sink_set_while_logging)
{
	pthread_t th[NTHREADS];

	for (int i = 0; i < NTHREADS; i++)
		ASSERT_EQ_INT(pthread_create(&th[i], NULL, log_main, NULL), 0);
	for (int i = 0; i < NTHREADS; i++)
		ASSERT_EQ_INT(pthread_join(th[i], NULL), 0);
	hp_log_set(NULL, NULL, HP_LOG_WARN);
	ASSERT_EQ_INT(atomic_load(&logged), NTHREADS * 200);
}
