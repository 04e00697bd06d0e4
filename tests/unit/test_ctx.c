/*
 * test_ctx.c - the shared context (ctx.h): the shipped catalog with this
 * host applied and the shipped estimator loaded once; a snapshot held
 * across a swap keeps its estimator, whole, and gives the same
 * predictions as before; a refit swaps in what hp_estimator_fit() gives
 * on the same data; the loaders' errors name what is wrong, in one
 * wording.  The same calls from many threads at once: test_threads.c.
 */
#include <string.h>

#include "hetpool/ctx.h"
#include "test.h"

HP_TEST(ctx_loads_the_shipped_catalog_and_estimator)
{
	struct hp_error err = {0};
	struct hp_ctx *ctx = hp_ctx_new(NULL, &err);
	const struct hp_snap *s;
	const struct hp_catalog *cat;
	const struct hp_device_type *cpu;

	if (!ctx)
		HP_FAIL("%s", err.msg);
	s = hp_ctx_acquire(ctx);
	ASSERT_EQ_INT(hp_snap_version(s), 1);
	cat = hp_snap_catalog(s);
	ASSERT(cat && cat->n > 10);
	ASSERT(hp_snap_estimator(s));
	/* this host's figures are in the CPU type */
	cpu = hp_catalog_find(cat, "cpu");
	ASSERT(cpu && cpu->detected);
	hp_snap_release(s);
	hp_ctx_free(ctx);

	/* the catalog alone */
	ctx = hp_ctx_new(&(struct hp_ctx_options){.no_estimator = true}, &err);
	ASSERT(ctx);
	s = hp_ctx_acquire(ctx);
	ASSERT(!hp_snap_estimator(s));
	hp_snap_release(s);
	ASSERT_EQ_INT(hp_ctx_predict(ctx, NULL, "v100", 1, -1, NULL, &err),
		      HP_EINVAL);
	ASSERT_STR_EQ(err.msg, "no estimator loaded");
	hp_ctx_free(ctx);
}

/* A prediction of resnet18 at batch 32 on v100 with snapshot s. */
static void predict_r18(const struct hp_snap *s, const struct hp_workload *w,
			struct hp_prediction *p)
{
	struct hp_error err = {0};

	if (hp_estimator_predict(hp_snap_estimator(s), hp_snap_catalog(s), w,
				 "v100", 1, -1, p, &err))
		HP_FAIL("%s", err.msg);
}

HP_TEST(ctx_snapshot_outlives_a_swap)
{
	struct hp_error err = {0};
	struct hp_ctx *ctx = hp_ctx_new(NULL, &err);
	struct hp_model_input mi;
	struct hp_prediction before, held, after;
	struct hp_estimator *other;
	const struct hp_snap *s1, *s2;
	uint64_t v = 0;

	ASSERT(ctx);
	ASSERT_EQ_INT(
	    hp_ctx_load_model(hp_test_path("data/models/resnet18.train.onnx"),
			      32, NULL, 0, &mi, &err),
	    0);
	s1 = hp_ctx_acquire(ctx);
	predict_r18(s1, &mi.workload, &before);
	/* An estimator fitted on a CPU profile alone: no GPU model. */
	other = hp_estimator_fit(
	    &(struct hp_fit_options){
		.datasets = (const char *const[]){hp_test_path(
		    "tests/data/estimate/cpu-small.csv")},
		.ndatasets = 1,
		.no_intervals = true,
		.threads = 1},
	    hp_snap_catalog(s1), &err);
	if (!other)
		HP_FAIL("%s", err.msg);
	ASSERT_EQ_INT(hp_ctx_swap_estimator(ctx, other, &v, &err), 0);
	ASSERT_EQ_INT(v, 2);
	s2 = hp_ctx_acquire(ctx);
	ASSERT_EQ_INT(hp_snap_version(s2), 2);
	ASSERT(hp_snap_estimator(s2) == other);
	/* the same catalog, shared */
	ASSERT(hp_snap_catalog(s2) == hp_snap_catalog(s1));
	/* the new one cannot predict a GPU; the held one still does, the
	 * same as before the swap */
	ASSERT_EQ_INT(hp_estimator_predict(other, hp_snap_catalog(s2),
					   &mi.workload, "v100", 1, -1, &after,
					   &err),
		      HP_EUNSUPP);
	predict_r18(s1, &mi.workload, &held);
	ASSERT(memcmp(&before, &held, sizeof(held)) == 0);
	/* the context's own reference goes first: both snapshots live on */
	hp_ctx_free(ctx);
	predict_r18(s1, &mi.workload, &held);
	ASSERT(memcmp(&before, &held, sizeof(held)) == 0);
	hp_snap_release(s1);
	ASSERT(hp_snap_estimator(s2) == other);
	hp_snap_release(s2);
	hp_model_input_release(&mi);
}

HP_TEST(ctx_refit_swaps_in_the_fit)
{
	const char *data = hp_test_path("tests/data/estimate/cpu-small.csv");
	struct hp_fit_options o = {.datasets = &data,
				   .ndatasets = 1,
				   .no_intervals = true,
				   .threads = 2};
	struct hp_error err = {0};
	struct hp_ctx *ctx = hp_ctx_new(NULL, &err);
	struct hp_estimator *ref;
	struct hp_model_input mi;
	struct hp_prediction a, b;
	const struct hp_snap *s;
	uint64_t v = 0;

	ASSERT(ctx);
	ASSERT_EQ_INT(hp_ctx_load_model(hp_test_path("data/models/"
						     "resnet18.train.onnx"),
					8, NULL, 0, &mi, &err),
		      0);
	s = hp_ctx_acquire(ctx);
	ref = hp_estimator_fit(&o, hp_snap_catalog(s), &err);
	hp_snap_release(s);
	ASSERT(ref);
	ASSERT_EQ_INT(hp_ctx_refit(ctx, &o, &v, &err), 0);
	ASSERT_EQ_INT(v, 2);
	s = hp_ctx_acquire(ctx);
	ASSERT_EQ_INT(hp_estimator_predict(ref, hp_snap_catalog(s),
					   &mi.workload, "cpu", 1, -1, &a,
					   &err),
		      0);
	ASSERT_EQ_INT(hp_ctx_predict(ctx, &mi.workload, "cpu", 1, -1, &b, &err),
		      0);
	ASSERT(memcmp(&a, &b, sizeof(a)) == 0);
	hp_snap_release(s);
	/* a fit that fails swaps nothing */
	o.datasets = (const char *const[]){"/nonexistent/x.csv"};
	ASSERT(hp_ctx_refit(ctx, &o, &v, &err) != 0);
	ASSERT(strstr(err.msg, "/nonexistent/x.csv"));
	s = hp_ctx_acquire(ctx);
	ASSERT_EQ_INT(hp_snap_version(s), 2);
	hp_snap_release(s);
	hp_estimator_free(ref);
	hp_model_input_release(&mi);
	hp_ctx_free(ctx);
}

HP_TEST(ctx_loaders_name_what_is_wrong)
{
	struct hp_error err = {0};
	struct hp_model_input mi;
	struct hp_catalog *cat;
	char buf[4096];

	ASSERT(!hp_ctx_load_graph("/nonexistent/m.onnx", &err));
	ASSERT_STR_EQ(err.msg, "model '/nonexistent/m.onnx': cannot open: No "
			       "such file or directory");
	ASSERT(hp_ctx_load_model("/nonexistent/m.onnx", 1, NULL, 0, &mi,
				 &err) != 0);
	ASSERT_STR_EQ(err.msg, "model '/nonexistent/m.onnx': cannot open: No "
			       "such file or directory");
	ASSERT(!mi.graph);
	ASSERT(!hp_ctx_load_estimator("/nonexistent/e.json", &err));
	ASSERT(strstr(err.msg, "estimator '/nonexistent/e.json'"));
	ASSERT(!hp_ctx_load_catalog("/nonexistent/d.csv", NULL, &err));
	ASSERT(strstr(err.msg, "'/nonexistent/d.csv'"));
	cat = hp_ctx_load_catalog(NULL, NULL, &err);
	ASSERT(cat);
	ASSERT(hp_ctx_find_type(cat, "A100", &err) != NULL);
	ASSERT(!hp_ctx_find_type(cat, "tpu9", &err));
	ASSERT_STR_EQ(err.msg, "device type 'tpu9' is not in the catalog");
	ASSERT(!hp_ctx_load_pool("/nonexistent/p.json", cat, &err));
	ASSERT(strstr(err.msg, "pool '/nonexistent/p.json'"));
	hp_catalog_free(cat);
	ASSERT_EQ_INT(hp_data_path("no-such-file.csv", buf, sizeof(buf)),
		      HP_ENOENT);
	ASSERT_EQ_INT(hp_data_path(HP_DATA_ESTIMATOR, buf, sizeof(buf)), 0);
}
