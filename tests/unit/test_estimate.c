/*
 * test_estimate.c - the estimator: the non-linear fit recovers the
 * parameters of data the model itself generated (with noise), the linear
 * fit agrees with a naive normal-equations solve, the roofline is FLOPs /
 * peak, intervals cover most of the truth, an unmeasured device type with
 * twice the peak and bandwidth is predicted faster, save/load gives the
 * same predictions, and bad estimator JSON is refused by name.  The fit
 * engine (physfit.c) against the naive fit it replaced: equal parameters
 * to the bit on distinct rows, equal predictions on merged rows, GSL's
 * own finite-difference Jacobian.  Bad profile rows, a dataset given
 * twice and an output that cannot be written are refused by name.
 */
#include <dirent.h>
#include <gsl/gsl_multifit_nlinear.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "estimate/estimate_int.h"
#include "hetpool/estimate.h"
#include "hetpool/perf.h"
#include "test.h"

/* A small deterministic generator (xorshift) and a normal deviate. */
static uint64_t rng_state = 88172645463325252ull;
static double urand(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (double)(rng_state >> 11) / 9007199254740992.0;
}
static double nrand(void)
{
	double u = urand() + 1e-12, v = urand();
	return sqrt(-2 * log(u)) * cos(2 * M_PI * v);
}

/* A synthetic CNN-like workload of n layers at batch b. */
static void synth_wl(struct hp_workload *w, int n, int64_t b)
{
	memset(w, 0, sizeof(*w));
	w->cls = calloc((size_t)n, 1);
	w->flops = calloc((size_t)n, sizeof(double));
	w->bytes = calloc((size_t)n, sizeof(double));
	w->wbytes = calloc((size_t)n, sizeof(double));
	w->width = calloc((size_t)n, sizeof(double));
	w->red = calloc((size_t)n, sizeof(double));
	w->karea = calloc((size_t)n, sizeof(double));
	w->pool = calloc((size_t)n, 1);
	ASSERT(w->cls && w->flops && w->bytes && w->wbytes && w->width &&
	       w->red && w->karea && w->pool);
	w->nlayers = n;
	w->batch = b;
	for (int i = 0; i < n; i++) {
		int k = i % 3 == 0   ? HP_EST_CONV
			: i % 3 == 1 ? HP_EST_OTHER
				     : (i == n - 1 ? HP_EST_FC : HP_EST_OTHER);
		double size = pow(10, 5 + 4 * urand()) * (double)b;
		w->cls[i] = (unsigned char)k;
		w->flops[i] = k == HP_EST_OTHER ? size / 50 : size;
		w->bytes[i] = k == HP_EST_OTHER ? size / 5 : size / 40;
		w->wbytes[i] = k == HP_EST_OTHER ? 0 : 8 * 4 * 1e4 * (1 + i);
		w->width[i] = 8 << (i % 4);
		/* convs: 1x1, 3x3 and 5x5 kernels over 1 to 128 channels;
		 * "other" layers in turn a max pooling, an average one and
		 * neither */
		w->karea[i] = k == HP_EST_CONV ? (i % 9 < 3   ? 1
						  : i % 9 < 6 ? 9
							      : 25)
					       : 0;
		w->red[i] = w->karea[i] * (1 << (i % 8));
		w->pool[i] = k != HP_EST_OTHER ? HP_POOL_NONE
			     : i % 3 == 1      ? HP_POOL_MAX
			     : i % 5 == 2      ? HP_POOL_AVG
					       : HP_POOL_NONE;
		w->flops_total += w->flops[i];
	}
	w->params = 100000;
	w->state_bytes = 3 * 4 * w->params;
	w->activations_bytes = 1000000 * b;
	w->conv_layers = 2 + n / 6;
	w->fc_layers = 1;
	w->filters = 32;
	w->fc_width = 10;
	w->input_size = 32;
}

static void true_theta(double *th)
{
	hp__phys_prior(true, th);
	th[HP__TH_EMAX + HP_EST_CONV] = log(0.7);
	th[HP__TH_EMAX + HP_EST_OTHER] = log(0.3);
	th[HP__TH_TAU + HP_EST_CONV] = log(2e-5);
	th[HP__TH_EM] = log(0.5);
	th[HP__TH_T0] = log(3e-4);
}

static const struct hp__dev_spec cpu_spec = {true, 1e12, 0, 50e9, 10e9};

HP_TEST(estimate_phys_fit_recovers_parameters)
{
	enum { N = 120 };
	static struct hp_workload w[N + 20];
	struct hp__fitpt pts[N];
	bool fr[HP__NTH] = {0};
	double th[HP__NTH], truth[HP__NTH];

	true_theta(truth);
	for (int i = 0; i < N + 20; i++)
		synth_wl(&w[i], 6 + i % 12, (int64_t)1 << (i % 7));
	for (int i = 0; i < N; i++) {
		pts[i].w = &w[i];
		pts[i].d = cpu_spec;
		pts[i].src = HP__SRC_PROFILE;
		pts[i].ndev = 1;
		pts[i].dev = 0;
		pts[i].t = hp__phys_time(truth, &cpu_spec, &w[i], 0, 1, NULL) *
			   exp(0.02 * nrand());
		for (int k = 0; k < HP_EST_NCLASS; k++)
			pts[i].tcls[k] = NAN;
	}
	for (int j = 0; j <= HP__TH_T0; j++)
		fr[j] = true;
	hp__phys_prior(true, th);
	ASSERT_EQ_INT(hp__phys_fit(pts, N, th, NULL, fr, 0, NULL, 0, NULL), 0);
	/* The well-determined parameters come back... */
	ASSERT_NEAR(exp(th[HP__TH_EMAX]), 0.7, 0.1);
	ASSERT_NEAR(exp(th[HP__TH_T0]) / 3e-4, 1, 0.2);
	/* ...and unseen workloads are predicted within the noise. */
	for (int i = N; i < N + 20; i++) {
		double a = hp__phys_time(th, &cpu_spec, &w[i], 0, 1, NULL);
		double b = hp__phys_time(truth, &cpu_spec, &w[i], 0, 1, NULL);
		ASSERT_NEAR(a / b, 1, 0.05);
	}
	for (int i = 0; i < N + 20; i++)
		hp_workload_release(&w[i]);
}

/* Naive reference: solve (X'X) b = X'y by Gaussian elimination. */
static void normal_eq(const double *X, const double *y, int n, int p, double *b)
{
	double A[8][9];
	for (int r = 0; r < p; r++) {
		for (int c = 0; c < p; c++) {
			A[r][c] = 0;
			for (int i = 0; i < n; i++)
				A[r][c] += X[i * p + r] * X[i * p + c];
		}
		A[r][p] = 0;
		for (int i = 0; i < n; i++)
			A[r][p] += X[i * p + r] * y[i];
	}
	for (int k = 0; k < p; k++)
		for (int r = k + 1; r < p; r++) {
			double f = A[r][k] / A[k][k];
			for (int c = k; c <= p; c++)
				A[r][c] -= f * A[k][c];
		}
	for (int r = p - 1; r >= 0; r--) {
		double s = A[r][p];
		for (int c = r + 1; c < p; c++)
			s -= A[r][c] * b[c];
		b[r] = s / A[r][r];
	}
}

HP_TEST(estimate_linear_fit_matches_normal_equations)
{
	enum { N = 60, P = 5 };
	double X[N * P], y[N], b[P], ref[P];
	const double beta[P] = {1.5, -0.3, 0.8, 0.05, -2.0};

	for (int i = 0; i < N; i++) {
		X[i * P] = 1;
		for (int j = 1; j < P; j++)
			X[i * P + j] = 10 * urand();
		y[i] = 0.1 * nrand();
		for (int j = 0; j < P; j++)
			y[i] += beta[j] * X[i * P + j];
	}
	ASSERT_EQ_INT(hp__linear_fit(X, y, N, P, false, b, NULL), 0);
	normal_eq(X, y, N, P, ref);
	for (int j = 0; j < P; j++)
		ASSERT_NEAR(b[j], ref[j], 1e-8);
	/* The robust variant lands near the same answer on clean data. */
	ASSERT_EQ_INT(hp__linear_fit(X, y, N, P, true, b, NULL), 0);
	for (int j = 0; j < P; j++)
		ASSERT_NEAR(b[j], beta[j], 0.1);
}

static struct hp_catalog *test_catalog(void)
{
	struct hp_error err = {0};
	struct hp_catalog *cat =
	    hp_catalog_load(hp_test_path("data/devices.csv"), &err);
	if (!cat)
		HP_FAIL("catalog: %s", err.msg);
	for (int i = 0; i < cat->n; i++)
		if (cat->types[i].kind == HP_DEVICE_CPU) {
			cat->types[i].fp32_tflops = 1.0;
			cat->types[i].mem_gb = 64;
		}
	return cat;
}

/* The shipped public measurements (data/measurements, their models in
 * data/models) as a sample set. */
static void load_public_set(struct hp__set *set, const struct hp_catalog *cat)
{
	struct hp_fit_options o = {0};
	struct hp_error err = {0};
	char pub[1024], models[1024];

	snprintf(pub, sizeof(pub), "%s", hp_test_path("data/measurements"));
	snprintf(models, sizeof(models), "%s", hp_test_path("data/models"));
	o.public_dir = pub;
	o.models_dir = models;
	if (hp__set_load(set, &o, cat, &err))
		HP_FAIL("public set: %s", err.msg);
}

HP_TEST(estimate_roofline_is_flops_over_peak)
{
	struct hp_catalog *cat = test_catalog();
	const struct hp_device_type *v100 = hp_catalog_find(cat, "v100");
	struct hp_workload w;

	synth_wl(&w, 9, 32);
	ASSERT(v100);
	ASSERT_NEAR(hp_roofline_time_s(&w, v100),
		    w.flops_total / (v100->fp32_tflops * 1e12), 1e-12);
	hp_workload_release(&w);
	hp_catalog_free(cat);
}

/* A sample set of synthetic CPU and GPU measurements. */
static void synth_set(struct hp__set *set, const struct hp_catalog *cat,
		      int ncpu, const char *const *gpus, int ngpus, int per_gpu)
{
	double th[HP__NTH], gth[HP__NTH];
	int n = ncpu + ngpus * per_gpu;

	true_theta(th);
	hp__phys_prior(false, gth);
	gth[HP__TH_EMAX] = log(0.6);
	memset(set, 0, sizeof(*set));
	set->s = calloc((size_t)n, sizeof(*set->s));
	set->wl = calloc((size_t)n, sizeof(*set->wl));
	ASSERT(set->s && set->wl);
	for (int i = 0; i < n; i++) {
		struct hp__sample *s = &set->s[i];
		const char *dev = i < ncpu ? "cpu" : gpus[(i - ncpu) / per_gpu];
		struct hp__dev_spec d;
		ASSERT(hp__dev_spec(hp_catalog_find(cat, dev), &d));
		synth_wl(&set->wl[i], 6 + i % 10, (int64_t)4 << (i % 5));
		snprintf(s->device, sizeof(s->device), "%s", dev);
		snprintf(s->family, sizeof(s->family), "f%d", i % 4);
		s->src = i < ncpu ? HP__SRC_PROFILE : HP__SRC_LAMBDA;
		s->ndev = 1;
		s->wl = i;
		s->power_w = NAN;
		s->structural = true;
		s->t = hp__phys_time(i < ncpu ? th : gth, &d, &set->wl[i],
				     s->src, 1, NULL) *
		       exp(0.05 * nrand());
	}
	set->n = set->alloc = set->nwl = set->awl = n;
}

HP_TEST(estimate_interval_covers_truth)
{
	struct hp_catalog *cat = test_catalog();
	struct hp__set set;
	struct hp_estimator *est;
	double th[HP__NTH];
	int inside = 0, n = 100;
	struct hp__dev_spec d;

	synth_set(&set, cat, 120, NULL, 0, 0);
	est = hp__fit_set(&set, NULL, cat, true, 1, NULL, NULL);
	ASSERT(est);
	true_theta(th);
	ASSERT(hp__dev_spec(hp_catalog_find(cat, "cpu"), &d));
	for (int i = 0; i < n; i++) {
		struct hp_workload w;
		struct hp_prediction p;
		double t;
		synth_wl(&w, 5 + i % 11, (int64_t)2 << (i % 6));
		t = hp__phys_time(th, &d, &w, 0, 1, NULL) * exp(0.05 * nrand());
		ASSERT_EQ_INT(
		    hp_estimator_predict(est, cat, &w, "cpu", 1, -1, &p, NULL),
		    0);
		ASSERT(p.step_time_lo_s <= p.step_time_s &&
		       p.step_time_s <= p.step_time_hi_s);
		inside += t >= p.step_time_lo_s && t <= p.step_time_hi_s;
		hp_workload_release(&w);
	}
	/* A 10th-90th percentile interval: about 80% inside. */
	ASSERT(inside >= 65);
	hp_estimator_free(est);
	hp__set_release(&set);
	hp_catalog_free(cat);
}

HP_TEST(estimate_unmeasured_device_scales_with_specs)
{
	static const char *const gpus[] = {"v100", "a100-80", "rtx3090"};
	struct hp_catalog *cat = test_catalog();
	struct hp_device_type *t4 = NULL;
	struct hp__set set;
	struct hp_estimator *est;
	struct hp_workload w;
	struct hp_prediction a, b;

	synth_set(&set, cat, 0, gpus, 3, 30);
	est = hp__fit_set(&set, NULL, cat, false, 1, NULL, NULL);
	ASSERT(est);
	synth_wl(&w, 20, 64);
	ASSERT_EQ_INT(hp_estimator_predict(est, cat, &w, "t4", 1, -1, &a, NULL),
		      0);
	ASSERT(!a.measured);
	ASSERT(strstr(a.basis, "no measurements of t4"));
	for (int i = 0; i < cat->n; i++)
		if (!strcmp(cat->types[i].name, "t4"))
			t4 = &cat->types[i];
	ASSERT(t4);
	t4->fp32_tflops *= 2;
	t4->mem_bw_gbs *= 2;
	ASSERT_EQ_INT(hp_estimator_predict(est, cat, &w, "t4", 1, -1, &b, NULL),
		      0);
	ASSERT(b.step_time_s < 0.8 * a.step_time_s);
	/* Unmeasured types get the wider leave-device-out interval. */
	ASSERT(a.step_time_hi_s > a.step_time_s);
	hp_workload_release(&w);
	hp_estimator_free(est);
	hp__set_release(&set);
	hp_catalog_free(cat);
}

HP_TEST(estimate_save_load_round_trip)
{
	static const char *const gpus[] = {"v100", "a100-80"};
	struct hp_catalog *cat = test_catalog();
	struct hp_error err = {0};
	struct hp__set set;
	struct hp_estimator *est, *back;
	struct hp_workload w;
	char *text;

	synth_set(&set, cat, 60, gpus, 2, 20);
	est = hp__fit_set(&set, NULL, cat, true, 1, NULL, NULL);
	ASSERT(est);
	text = hp_estimator_dumps(est);
	ASSERT(text);
	back = hp_estimator_loads(text, strlen(text), &err);
	if (!back)
		HP_FAIL("reload: %s", err.msg);
	synth_wl(&w, 12, 16);
	for (int f = 0; f < 3; f++) {
		static const char *const devs[] = {"cpu", "v100", "l4"};
		for (int k = 0; k < 3; k++) {
			struct hp_prediction a, b;
			int ra = hp_estimator_predict(est, cat, &w, devs[k], 2,
						      f, &a, NULL);
			int rb = hp_estimator_predict(back, cat, &w, devs[k], 2,
						      f, &b, NULL);
			ASSERT_EQ_INT(ra, rb);
			if (ra)
				continue;
			ASSERT(a.step_time_s == b.step_time_s);
			ASSERT(a.step_time_lo_s == b.step_time_lo_s);
			ASSERT(a.step_time_hi_s == b.step_time_hi_s);
			ASSERT(a.peak_memory_bytes == b.peak_memory_bytes);
			ASSERT((isnan(a.power_w) && isnan(b.power_w)) ||
			       a.power_w == b.power_w);
		}
	}
	free(text);
	hp_workload_release(&w);
	hp_estimator_free(est);
	hp_estimator_free(back);
	hp__set_release(&set);
	hp_catalog_free(cat);
}

HP_TEST(estimate_bad_json_refused)
{
	static const struct {
		const char *text, *says;
	} cases[] = {
	    {"", "not valid JSON"},
	    {"[1,2]", "not a JSON object"},
	    {"{\"format\":\"other\"}", "'format'"},
	    {"{\"format\":\"hetpool-estimator\",\"version\":99}", "version 99"},
	    {"{\"format\":\"hetpool-estimator\",\"version\":1}", "refit"},
	    {"{\"format\":\"hetpool-estimator\",\"version\":2,"
	     "\"family\":\"magic\"}",
	     "'family'"},
	    {"{\"format\":\"hetpool-estimator\",\"version\":2,"
	     "\"family\":\"physical\",\"gpu\":{\"fitted\":true,\"rows\":1}}",
	     "'gpu.params'"},
	};
	struct hp_catalog *cat = test_catalog();
	struct hp__set set;
	struct hp_estimator *est;
	struct hp_error err = {0};
	char *text, *p;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		hp_error_clear(&err);
		ASSERT(!hp_estimator_loads(cases[i].text, strlen(cases[i].text),
					   &err));
		ASSERT_EQ_INT(err.code, HP_EPARSE);
		if (!strstr(err.msg, cases[i].says))
			HP_FAIL("case %zu: '%s' lacks '%s'", i, err.msg,
				cases[i].says);
	}
	/* A good file with one parameter made absurd. */
	synth_set(&set, cat, 30, NULL, 0, 0);
	est = hp__fit_set(&set, NULL, cat, false, 1, NULL, NULL);
	ASSERT(est);
	text = hp_estimator_dumps(est);
	p = strstr(text, "\"log_mem_eff\": ");
	ASSERT(p);
	p += strlen("\"log_mem_eff\": ");
	memcpy(p, "1e300", 5);
	memset(p + 5, ' ', strcspn(p + 5, ",\n}"));
	ASSERT(!hp_estimator_loads(text, strlen(text), &err));
	ASSERT(strstr(err.msg, "log_mem_eff"));
	ASSERT(!hp_estimator_load("/nonexistent/est.json", &err));
	ASSERT(strstr(err.msg, "/nonexistent/est.json"));
	free(text);
	hp_estimator_free(est);
	hp__set_release(&set);
	hp_catalog_free(cat);
}

HP_TEST(estimate_memory_energy_and_errors)
{
	struct hp_catalog *cat = test_catalog();
	struct hp__set set;
	struct hp_estimator *est;
	struct hp_workload w;
	struct hp_prediction p;
	struct hp_error err = {0};

	synth_set(&set, cat, 40, NULL, 0, 0);
	est = hp__fit_set(&set, NULL, cat, false, 1, NULL, NULL);
	ASSERT(est);
	synth_wl(&w, 10, 8);
	/* No GPU model without GPU data: a clear refusal. */
	ASSERT_EQ_INT(
	    hp_estimator_predict(est, cat, &w, "v100", 1, -1, &p, &err),
	    HP_EUNSUPP);
	ASSERT_EQ_INT(
	    hp_estimator_predict(est, cat, &w, "tpu9", 1, -1, &p, &err),
	    HP_ENOENT);
	ASSERT(strstr(err.msg, "'tpu9'"));
	ASSERT_EQ_INT(
	    hp_estimator_predict(est, cat, &w, "cpu", 1, -1, &p, NULL), 0);
	/* The catalog has no CPU TDP: energy unknown, and says why. */
	ASSERT(isnan(p.energy_per_step_j));
	ASSERT(strstr(p.energy_basis, "not known"));
	ASSERT(p.fits_in_memory);
	ASSERT(p.peak_memory_bytes >= w.state_bytes + w.activations_bytes / 2);
	/* Activations past the host's memory do not fit. */
	w.activations_bytes = (int64_t)1 << 40;
	ASSERT_EQ_INT(
	    hp_estimator_predict(est, cat, &w, "cpu", 1, -1, &p, NULL), 0);
	ASSERT(!p.fits_in_memory);
	ASSERT(p.memory_known);
	/* A device whose memory is not known is not said to fit. */
	w.activations_bytes = 1024;
	for (int i = 0; i < cat->n; i++)
		if (cat->types[i].kind == HP_DEVICE_CPU)
			cat->types[i].mem_gb = NAN;
	ASSERT_EQ_INT(
	    hp_estimator_predict(est, cat, &w, "cpu", 1, -1, &p, NULL), 0);
	ASSERT(!p.memory_known);
	ASSERT(!p.fits_in_memory);
	hp_workload_release(&w);
	hp_estimator_free(est);
	hp__set_release(&set);
	hp_catalog_free(cat);
}

HP_TEST(estimate_gpu_power_between_idle_and_board)
{
	const struct hp_device_type *t;
	struct hp_catalog *cat = test_catalog();

	t = hp_catalog_find(cat, "v100");
	ASSERT(t);
	ASSERT_NEAR(hp__power_w(t, 0, 0.5), t->idle_w, 1e-9);
	ASSERT_NEAR(hp__power_w(t, 1, 0.5), t->tdp_w, 1e-9);
	ASSERT_NEAR(hp__power_w(t, 0.25, 0.5),
		    t->idle_w + (t->tdp_w - t->idle_w) * 0.5, 1e-9);
	ASSERT_NEAR(hp__power_w(t, 7, 0.5), t->tdp_w, 1e-9);
	hp_catalog_free(cat);
}

HP_TEST(estimate_kfold_keeps_repeats_together)
{
	/* validate's k-fold holds out every repeat of a configuration with
	 * it: Zeus measured each (model, batch) with two optimizers, rows
	 * a few percent apart, and a twin in the training folds would
	 * predict its row as well as the noise lets it. */
	struct hp_catalog *cat = test_catalog();
	struct hp__set set;
	int pairs = 0, per_fold[5] = {0};

	load_public_set(&set, cat);
	for (int i = 0; i < set.n; i++) {
		int f = hp__kfold_of(&set, i, 5);
		ASSERT(f >= 0 && f < 5);
		per_fold[f]++;
		for (int j = i + 1; j < set.n; j++) {
			if (set.s[j].wl != set.s[i].wl ||
			    strcmp(set.s[j].device, set.s[i].device))
				continue;
			pairs++;
			ASSERT_EQ_INT(hp__kfold_of(&set, j, 5), f);
		}
	}
	ASSERT(pairs >= 10); /* Zeus's V100 ShuffleNetV2 rows, at least */
	for (int f = 0; f < 5; f++)
		ASSERT(per_fold[f] >= set.n / 20);
	hp__set_release(&set);
	hp_catalog_free(cat);
}

HP_TEST(estimate_public_runs_fit_in_memory)
{
	/* Every configuration the public sources ran must be predicted to
	 * fit on its GPU: the memory model's GPU side is checked against
	 * what really ran. */
	struct hp_catalog *cat = test_catalog();
	struct hp_error err = {0};
	struct hp__set set;
	struct hp_estimator *est;
	int checked = 0;

	load_public_set(&set, cat);
	est = hp__fit_set(&set, NULL, cat, false, 1, NULL, &err);
	ASSERT(est);
	for (int i = 0; i < set.n; i++) {
		struct hp_prediction p;
		const struct hp__sample *s = &set.s[i];
		/* Zeus's ImageNet ResNet-50 ran batches of 192-360 on 16 GB
		 * GPUs: not possible for one FP32 replica (PyTorch needs
		 * ~20 GB at 256), so not a memory data point (its speed is
		 * FP32-like and is fitted). */
		if (s->src == HP__SRC_ZEUS && !strcmp(s->family, "resnet50"))
			continue;
		/* Zeus's CIFAR ShuffleNetV2 is analysed through torchvision's
		 * at 128x128, whose stem's maps are 4x the variant's: a time
		 * proxy (the same stages), not a memory one (batch 4,096 on
		 * 24 GB: about 5 GB more stem activations). */
		if (!strcmp(s->family, "shufflenetv2-cifar"))
			continue;
		ASSERT_EQ_INT(hp__predict(est, cat, &set.wl[s->wl], s->device,
					  s->ndev, HP_EST_PHYSICAL, s->src,
					  s->prec, &p, &err),
			      0);
		if (!p.fits_in_memory)
			HP_FAIL("%s %s batch %lld: %.1f GB predicted, %.1f GB "
				"on the device",
				s->device, s->family,
				(long long)set.wl[s->wl].batch,
				(double)p.peak_memory_bytes / 1e9,
				p.device_memory_bytes / 1e9);
		checked++;
	}
	ASSERT(checked > 70); /* ResNet-18 and -50, fp32 and amp */
	hp_estimator_free(est);
	hp__set_release(&set);
	hp_catalog_free(cat);
}

HP_TEST(estimate_precision_peaks)
{
	/* The peak each precision uses, against the catalog's figures by
	 * hand: fp32 on an A100 is FP32 x (TF32/FP32)^kappa, tf32 the TF32
	 * peak, amp FP32 x (FP16/FP32)^kappa_amp; a K80 has no FP16 unit. */
	struct hp_catalog *cat = test_catalog();
	const struct hp_device_type *a100 = hp_catalog_find(cat, "a100-80");
	const struct hp_device_type *k80 = hp_catalog_find(cat, "k80");
	struct hp__dev_spec d;
	double th[HP__NTH];
	enum hp_precision p;

	ASSERT(a100 && k80);
	hp__phys_prior(false, th);
	th[HP__TH_KAPPA] = log(0.25 / 0.75);   /* kappa 0.25 */
	th[HP__TH_KAPPA_AMP] = log(0.4 / 0.6); /* kappa_amp 0.4 */
	ASSERT(hp__dev_spec(a100, &d));
	ASSERT_NEAR(hp__peak(th, &d), 19.5e12 * pow(156 / 19.5, 0.25), 1e3);
	d.prec = HP_PREC_TF32;
	ASSERT_NEAR(hp__peak(th, &d), 156e12, 1e3);
	d.prec = HP_PREC_AMP;
	ASSERT_NEAR(hp__peak(th, &d), 19.5e12 * pow(312 / 19.5, 0.4), 1e3);
	ASSERT(hp__dev_spec(k80, &d));
	d.prec = HP_PREC_AMP;
	ASSERT_NEAR(hp__peak(th, &d), k80->fp32_tflops * 1e12, 1e3);
	ASSERT_EQ_INT(hp_precision_parse("amp", &p), 0);
	ASSERT_EQ_INT(p, HP_PREC_AMP);
	ASSERT_EQ_INT(hp_precision_parse("fp16", &p), HP_EINVAL);
	hp_catalog_free(cat);
}

HP_TEST(estimate_precision_predictions)
{
	/* Fitted on the public data (Lambda's fp16 rows as amp): ResNet-50
	 * at batch 256 on a V100 in amp against fp32.  Lambda measured 833
	 * against 369 img/s (2.26x; batch 256 and 128); the prediction must
	 * be 1.7-3x, with half the activation memory.  tf32 on a V100 (no
	 * TF32) and amp on a CPU are refused. */
	struct hp_catalog *cat = test_catalog();
	struct hp_error err = {0};
	struct hp__set set;
	struct hp_estimator *est;
	struct hp_prediction f, a, t;
	struct hp_workload *w = NULL;

	load_public_set(&set, cat);
	for (int i = 0; i < set.n; i++)
		if (set.s[i].prec == HP_PREC_AMP && set.s[i].ndev == 1 &&
		    !strcmp(set.s[i].device, "v100"))
			w = &set.wl[set.s[i].wl];
	ASSERT(w && w->batch == 256);
	est = hp__fit_set(&set, NULL, cat, false, 1, NULL, &err);
	ASSERT(est);
	ASSERT(est->gpu_amp_n >= 20);
	ASSERT_EQ_INT(
	    hp_estimator_predict(est, cat, w, "v100", 1, -1, &f, &err), 0);
	ASSERT_EQ_INT(hp_estimator_predict_prec(est, cat, w, "v100", 1, -1,
						HP_PREC_AMP, &a, &err),
		      0);
	ASSERT_EQ_INT(a.precision, HP_PREC_AMP);
	ASSERT(strstr(a.basis, "amp rows"));
	if (f.step_time_s / a.step_time_s < 1.7 ||
	    f.step_time_s / a.step_time_s > 3)
		HP_FAIL("amp speed-up %.2f, measured 2.26",
			f.step_time_s / a.step_time_s);
	ASSERT(a.peak_memory_bytes < f.peak_memory_bytes);
	ASSERT_EQ_INT(hp_estimator_predict_prec(est, cat, w, "v100", 1, -1,
						HP_PREC_TF32, &t, &err),
		      HP_EUNSUPP);
	ASSERT_EQ_INT(hp_estimator_predict_prec(est, cat, w, "a100-80", 1, -1,
						HP_PREC_TF32, &t, &err),
		      0);
	ASSERT_EQ_INT(hp_estimator_predict_prec(est, cat, w, "a100-80", 1, -1,
						HP_PREC_FP32, &f, &err),
		      0);
	ASSERT(t.step_time_s <= f.step_time_s); /* kappa <= 1 */
	/* an RTX 3090's TF32 rate is its FP32 one: tf32 is fp32 there */
	ASSERT_EQ_INT(hp_estimator_predict_prec(est, cat, w, "rtx3090", 1, -1,
						HP_PREC_TF32, &t, &err),
		      0);
	ASSERT_EQ_INT(hp_estimator_predict_prec(est, cat, w, "rtx3090", 1, -1,
						HP_PREC_FP32, &f, &err),
		      0);
	ASSERT(t.step_time_s == f.step_time_s);
	hp_estimator_free(est);
	hp__set_release(&set);
	hp_catalog_free(cat);
}

/* No layer runs faster than the host's measured peak (d.cap): each
 * class's rate is min(peak x e_max, cap), by the formula; without a cap
 * (0) it is peak x e_max. */
HP_TEST(estimate_rates_capped_at_measured_peak)
{
	double th[HP__NTH];
	struct hp__th_exp e;
	struct hp__dev_rates r;
	struct hp__dev_spec d;

	hp__phys_prior(true, th);
	th[HP__TH_EMAX + HP_EST_CONV] = log(1.5);
	th[HP__TH_EMAX + HP_EST_FC] = log(0.5);
	memset(&d, 0, sizeof(d));
	d.cpu = true;
	d.fp32 = 80e9;
	d.bw = 20e9;
	d.chan_block = 16;
	hp__th_exp_init(&e, th);
	hp__dev_rates_init(&r, &e, th, &d);
	ASSERT_NEAR(r.rate[HP_EST_CONV], 120e9, 1e-3);
	ASSERT_NEAR(r.rate[HP_EST_FC], 40e9, 1e-3);
	d.cap = 100e9;
	hp__dev_rates_init(&r, &e, th, &d);
	ASSERT_NEAR(r.rate[HP_EST_CONV], 100e9, 1e-3);
	ASSERT_NEAR(r.rate[HP_EST_FC], 40e9, 1e-3);
	/* the latency term keeps e_max's share */
	ASSERT_NEAR(r.lat[HP_EST_CONV], exp(th[HP__TH_TAU + HP_EST_CONV]) / 1.5,
		    1e-18);
}

/* The public set's ResNet-50 at FP32 on one V100 (its last such row), or
 * NULL. */
static struct hp_workload *v100_resnet50(struct hp__set *set)
{
	struct hp_workload *w = NULL;

	for (int i = 0; i < set->n; i++)
		if (set->s[i].prec == HP_PREC_FP32 && set->s[i].ndev == 1 &&
		    !strcmp(set->s[i].device, "v100") &&
		    !strcmp(set->s[i].family, "resnet50"))
			w = &set->wl[set->s[i].wl];
	return w;
}

HP_TEST(estimate_input_pipeline_caps_gpu_step)
{
	/* ResNet-50 at b a V100 (fitted on the public data), with a host
	 * input pipeline of `cores` cores at sample_s each: the step is
	 * max(compute, b x sample_s / cores), the busy share and so the
	 * power fall when the pipeline caps it, the energy per step rises.
	 * A pipeline that keeps up changes nothing; on a CPU device it is not
	 * modelled; negative figures are refused. */
	struct hp_catalog *cat = test_catalog();
	struct hp_error err = {0};
	struct hp__set set;
	struct hp_estimator *est;
	struct hp_prediction f, c, k, q;
	struct hp_predict_opts o;
	struct hp_workload *w = NULL;
	const double cores = 6;
	double b;

	load_public_set(&set, cat);
	w = v100_resnet50(&set);
	ASSERT(w);
	b = (double)w->batch;
	est = hp__fit_set(&set, NULL, cat, false, 1, NULL, &err);
	ASSERT(est);
	ASSERT_EQ_INT(
	    hp_estimator_predict_opts(est, cat, w, "v100", 1, NULL, &f, &err),
	    0);
	ASSERT(isnan(f.input_time_s) && !f.input_bound);
	/* a pipeline at half the GPU's pace: it sets the step */
	hp_predict_opts_init(&o);
	o.input_cores = cores;
	o.input_sample_s = 2 * f.step_time_s * cores / b;
	ASSERT_EQ_INT(
	    hp_estimator_predict_opts(est, cat, w, "v100", 1, &o, &c, &err), 0);
	ASSERT(c.input_bound);
	ASSERT_NEAR(c.step_time_s, b * o.input_sample_s / cores,
		    1e-12 * c.step_time_s);
	ASSERT_NEAR(c.input_time_s, c.step_time_s, 1e-12 * c.step_time_s);
	ASSERT_NEAR(c.samples_per_s, f.samples_per_s / 2,
		    1e-9 * f.samples_per_s);
	ASSERT(c.step_time_lo_s >= c.step_time_s &&
	       c.step_time_hi_s >= c.step_time_s);
	ASSERT(c.power_w < f.power_w);
	ASSERT(c.energy_per_step_j > f.energy_per_step_j);
	ASSERT(strstr(c.basis, "caps the step"));
	/* on 4 devices each device's share is its own batch of b */
	ASSERT_EQ_INT(
	    hp_estimator_predict_opts(est, cat, w, "v100", 4, &o, &q, &err), 0);
	ASSERT_NEAR(q.input_time_s, c.input_time_s, 1e-12);
	/* a pipeline at twice the GPU's pace: nothing changes */
	o.input_sample_s = 0.5 * f.step_time_s * cores / b;
	ASSERT_EQ_INT(
	    hp_estimator_predict_opts(est, cat, w, "v100", 1, &o, &k, &err), 0);
	ASSERT(!k.input_bound);
	ASSERT(k.step_time_s == f.step_time_s && k.power_w == f.power_w);
	ASSERT_NEAR(k.input_time_s, f.step_time_s / 2, 1e-12);
	/* a CPU device (the shipped estimator has its fit): not modelled,
	 * said so */
	hp_estimator_free(est);
	est = hp_estimator_load(hp_test_path("data/estimators/default.json"),
				&err);
	ASSERT(est);
	ASSERT_EQ_INT(
	    hp_estimator_predict_opts(est, cat, w, "cpu", 1, NULL, &f, &err),
	    0);
	o.input_sample_s = 100;
	ASSERT_EQ_INT(
	    hp_estimator_predict_opts(est, cat, w, "cpu", 1, &o, &k, &err), 0);
	ASSERT(k.step_time_s == f.step_time_s && isnan(k.input_time_s));
	ASSERT(strstr(k.basis, "not modelled on a CPU"));
	o.input_cores = -1;
	ASSERT_EQ_INT(
	    hp_estimator_predict_opts(est, cat, w, "v100", 1, &o, &k, &err),
	    HP_EINVAL);
	hp_estimator_free(est);
	hp__set_release(&set);
	hp_catalog_free(cat);
}

/* The step by layer class (hp_prediction.class_time_s): finite and at
 * least 0 for the physical family, under the step, the rest (the per-step
 * overhead) the same at twice the batch; ResNet-50's convs the largest
 * class on a V100 and on the CPU; NaN for the roofline family. */
HP_TEST(estimate_class_times_add_up)
{
	struct hp_catalog *cat = test_catalog();
	struct hp_error err = {0};
	struct hp__set set;
	struct hp_estimator *est;
	struct hp_workload *w = NULL, w2;
	const char *dev[2] = {"v100", "cpu"};

	load_public_set(&set, cat);
	w = v100_resnet50(&set);
	ASSERT(w);
	for (int e = 0; e < 2; e++) {
		struct hp_prediction a, b, l;
		double sa = 0, sb = 0;
		est =
		    e ? hp_estimator_load(
			    hp_test_path("data/estimators/default.json"), &err)
		      : hp__fit_set(&set, NULL, cat, false, 1, NULL, &err);
		ASSERT(est);
		ASSERT_EQ_INT(
		    hp_estimator_predict(est, cat, w, dev[e], 1, -1, &a, &err),
		    0);
		for (int k = 0; k < HP_EST_NCLASS; k++) {
			ASSERT(isfinite(a.class_time_s[k]) &&
			       a.class_time_s[k] >= 0);
			sa += a.class_time_s[k];
		}
		ASSERT(sa < a.step_time_s);
		ASSERT(a.class_time_s[HP_EST_CONV] >
			   a.class_time_s[HP_EST_OTHER] &&
		       a.class_time_s[HP_EST_CONV] > a.class_time_s[HP_EST_FC]);
		/* the same layers at twice the batch (the public rows'
		 * workloads are per batch: scale a copy by hand) */
		w2 = *w;
		w2.batch = 2 * w->batch;
		w2.flops = malloc((size_t)w->nlayers * sizeof(double));
		w2.bytes = malloc((size_t)w->nlayers * sizeof(double));
		w2.in_bytes = malloc((size_t)w->nlayers * sizeof(double));
		w2.out_bytes = malloc((size_t)w->nlayers * sizeof(double));
		ASSERT(w2.flops && w2.bytes && w2.in_bytes && w2.out_bytes);
		w2.flops_total = 0;
		for (int i = 0; i < w->nlayers; i++) {
			w2.flops[i] = 2 * w->flops[i];
			w2.bytes[i] = 2 * w->bytes[i];
			w2.in_bytes[i] = w->in_bytes ? 2 * w->in_bytes[i] : 0;
			w2.out_bytes[i] =
			    w->out_bytes ? 2 * w->out_bytes[i] : 0;
			w2.flops_total += w2.flops[i];
		}
		if (!w->in_bytes) {
			free(w2.in_bytes);
			free(w2.out_bytes);
			w2.in_bytes = w2.out_bytes = NULL;
		}
		ASSERT_EQ_INT(hp_estimator_predict(est, cat, &w2, dev[e], 1, -1,
						   &b, &err),
			      0);
		for (int k = 0; k < HP_EST_NCLASS; k++)
			sb += b.class_time_s[k];
		ASSERT(sb > sa);
		ASSERT_NEAR(b.step_time_s - sb, a.step_time_s - sa,
			    1e-9 * a.step_time_s);
		free(w2.flops);
		free(w2.bytes);
		free(w2.in_bytes);
		free(w2.out_bytes);
		if (e) {
			ASSERT_EQ_INT(hp_estimator_predict(est, cat, w, dev[e],
							   1, HP_EST_ROOFLINE,
							   &l, &err),
				      0);
			for (int k = 0; k < HP_EST_NCLASS; k++)
				ASSERT(isnan(l.class_time_s[k]));
		}
		hp_estimator_free(est);
	}
	hp__set_release(&set);
	hp_catalog_free(cat);
}

HP_TEST(estimate_gpu_power_follows_busy_share)
{
	/* Fitted on Zeus's measured power (59 rows at default power), a
	 * GPU's power as a function of the share of the step it runs
	 * kernels: MAPE 14% on them (with FLOP utilisation, 23%: a
	 * memory-bound ShuffleNetV2 at batch 1,024 draws 225 W of an
	 * RTX 6000's 260 W at 8% of its FP32 peak).  An estimator file
	 * without power.utilisation (fitted on FLOP utilisation) keeps that
	 * meaning. */
	struct hp_catalog *cat = test_catalog();
	struct hp_error err = {0};
	struct hp__set set;
	struct hp_estimator *est, *back;
	char *text, *k;

	load_public_set(&set, cat);
	est = hp__fit_set(&set, NULL, cat, false, 1, NULL, &err);
	ASSERT(est);
	ASSERT(est->power_busy);
	ASSERT_EQ_INT(est->power_n, 59);
	if (!(est->power_mape < 18))
		HP_FAIL("power MAPE %.1f%% on the Zeus rows", est->power_mape);
	for (int i = 0; i < set.n; i++) {
		struct hp_prediction p;
		const struct hp__sample *s = &set.s[i];
		if (!(s->power_w > 0) || strcmp(s->device, "rtx6000") ||
		    strcmp(s->family, "shufflenetv2-cifar") ||
		    set.wl[s->wl].batch != 1024)
			continue;
		ASSERT_EQ_INT(hp__predict(est, cat, &set.wl[s->wl], s->device,
					  1, HP_EST_PHYSICAL, s->src,
					  HP_PREC_FP32, &p, &err),
			      0);
		/* measured 225 W */
		if (p.power_w < 180 || p.power_w > 260)
			HP_FAIL("rtx6000 ShuffleNetV2 b1024: %.0f W",
				p.power_w);
		ASSERT(strstr(p.energy_basis, "busy share"));
	}
	text = hp_estimator_dumps(est);
	ASSERT(text);
	ASSERT((k = strstr(text, "\"utilisation\"")));
	memcpy(k + 1, "old_", 4);
	back = hp_estimator_loads(text, strlen(text), &err);
	if (!back)
		HP_FAIL("old file: %s", err.msg);
	ASSERT(!back->power_busy);
	free(text);
	hp_estimator_free(back);
	hp_estimator_free(est);
	hp__set_release(&set);
	hp_catalog_free(cat);
}

HP_TEST(estimate_old_file_without_kappa_amp_loads)
{
	/* An estimator written before precision was modelled has no
	 * kappa_amp_logit nor amp_rows: it loads, with the default. */
	static const char *const gpus[] = {"v100", "a100-80"};
	struct hp_catalog *cat = test_catalog();
	struct hp_error err = {0};
	struct hp__set set;
	struct hp_estimator *est, *back;
	double prior[HP__NTH];
	char *text, *k;

	synth_set(&set, cat, 0, gpus, 2, 20);
	est = hp__fit_set(&set, NULL, cat, false, 1, NULL, NULL);
	ASSERT(est);
	est->gpu_th[HP__TH_KAPPA_AMP] = 1.5;
	text = hp_estimator_dumps(est);
	ASSERT(text);
	/* rename the keys: as if they were not there */
	while ((k = strstr(text, "\"kappa_amp_logit\"")))
		memcpy(k + 1, "old_", 4);
	/* ... nor the max-pooling and reduction terms (before 2026-12-01) */
	est->gpu_th[HP__TH_IDX] = 0.7;
	while ((k = strstr(text, "\"log_maxpool_traffic\"")))
		memcpy(k + 1, "old_", 4);
	while ((k = strstr(text, "\"log_conv_half_reduction\"")))
		memcpy(k + 1, "old_", 4);
	ASSERT((k = strstr(text, "\"amp_rows\"")));
	memcpy(k + 1, "old_", 4);
	back = hp_estimator_loads(text, strlen(text), &err);
	if (!back)
		HP_FAIL("old file: %s", err.msg);
	hp__phys_prior(false, prior);
	ASSERT(back->gpu_th[HP__TH_KAPPA_AMP] == prior[HP__TH_KAPPA_AMP]);
	ASSERT(back->gpu_th[HP__TH_IDX] == prior[HP__TH_IDX]);
	ASSERT(back->gpu_th[HP__TH_KHALF] == prior[HP__TH_KHALF]);
	ASSERT_EQ_INT(back->gpu_amp_n, 0);
	free(text);
	hp_estimator_free(est);
	hp_estimator_free(back);
	hp__set_release(&set);
	hp_catalog_free(cat);
}

HP_TEST(estimate_public_cifar_models_are_cifar_variants)
{
	/* Gavel's "ResNet-18 on CIFAR-10" is the CIFAR variant (3x3 stride-1
	 * stem, no max-pool): 11,173,962 parameters and 555.4 M MACs per
	 * sample at 3x32x32 (shared/data/models/REFERENCE.csv), so forward
	 * and both backward passes about 6 x 555.4 M FLOPs; torchvision's
	 * ResNet-18 at 32x32 would be 11,689,512 parameters and 37.5 M MACs
	 * (0.23 GFLOPs a step per sample). */
	struct hp_catalog *cat = test_catalog();
	struct hp__set set;
	int rows = 0;

	load_public_set(&set, cat);
	for (int i = 0; i < set.n; i++) {
		const struct hp_workload *w = &set.wl[set.s[i].wl];
		double per;
		if (set.s[i].src != HP__SRC_GAVEL ||
		    strcmp(set.s[i].family, "resnet18-cifar"))
			continue;
		per = w->flops_total / (double)w->batch;
		ASSERT_EQ_INT((int)w->params, 11173962);
		if (per < 6 * 555.4e6 || per > 6.3 * 555.4e6)
			HP_FAIL("%s batch %lld: %.4g FLOPs per sample, not "
				"about 6 x 555.4 M",
				set.s[i].device, (long long)w->batch, per);
		rows++;
	}
	ASSERT_EQ_INT(rows, 15); /* K80, P100, V100 x batch 16..256 */
	/* Zeus's CIFAR ShuffleNetV2 (stride-1 stem, no max-pool) through
	 * torchvision's at 128x128: the same stage map sizes, about 49 M
	 * MACs a sample (at 32x32 it would be about 3 M). */
	rows = 0;
	for (int i = 0; i < set.n; i++) {
		const struct hp_workload *w = &set.wl[set.s[i].wl];
		double per = w->flops_total / (double)w->batch;
		if (strcmp(set.s[i].family, "shufflenetv2-cifar"))
			continue;
		if (per < 6 * 40e6 || per > 6 * 60e6)
			HP_FAIL("ShuffleNetV2 batch %lld: %.4g FLOPs per "
				"sample",
				(long long)w->batch, per);
		rows++;
	}
	ASSERT(rows >= 30);
	hp__set_release(&set);
	hp_catalog_free(cat);
}

/* Channel padding: a profile row's backend gives the block, the workload
 * knows which tensors another layer wrote, and a net of 8-channel convs
 * costs more on a 16-channel block than unpadded, a 16-channel one not. */
HP_TEST(estimate_channel_padding)
{
	static const char *spec8 =
	    "{\"input\":[3,16,16],\"classes\":10,\"layers\":["
	    "{\"type\":\"conv\",\"filters\":8,\"kernel\":3,\"stride\":1,"
	    "\"pad\":1},{\"type\":\"relu\"},"
	    "{\"type\":\"conv\",\"filters\":8,\"kernel\":3,\"stride\":1,"
	    "\"pad\":1},{\"type\":\"fc\",\"units\":10}]}";
	char spec16[512];
	struct hp_workload w8, w16;
	struct hp_error err = {0};
	struct hp__dev_spec d = cpu_spec;
	double th[HP__NTH], t8[2], t16[2];
	const char *p;
	size_t off;

	ASSERT_EQ_INT(hp__chan_block("cpu: oneDNN 2.6.3 jit:avx512_core, 2 "
				     "threads"),
		      16);
	ASSERT_EQ_INT(hp__chan_block("cpu: oneDNN 2.6.3 jit:avx2, 4 threads"),
		      8);
	ASSERT_EQ_INT(hp__chan_block("cuda: cuDNN 9"), 1);
	ASSERT_EQ_INT(hp__chan_block(NULL), 1);
	/* the same net with 16 channels */
	snprintf(spec16, sizeof(spec16), "%s", spec8);
	while ((p = strstr(spec16, "\"filters\":8,"))) {
		off = (size_t)(p - spec16) + strlen("\"filters\":");
		memmove(spec16 + off + 1, spec16 + off,
			strlen(spec16 + off) + 1);
		memcpy(spec16 + off, "16", 2);
	}
	for (int k = 0; k < 2; k++) {
		const char *s = k ? spec16 : spec8;
		struct hp_workload *w = k ? &w16 : &w8;
		struct hp_graph *g = hp_spec_parse(s, strlen(s), &err);
		ASSERT(g);
		ASSERT_EQ_INT(hp_workload_from_graph(g, 4, NULL, 0, w, &err),
			      0);
		hp_graph_free(g);
	}
	/* conv (input: the model's, never padded), relu, conv, fc (input:
	 * the second conv's output through the flatten) */
	ASSERT(w8.nlayers >= 4);
	ASSERT(w8.cls[0] == HP_EST_CONV && w8.cin[0] == 0 && w8.cout[0] == 8);
	ASSERT(w8.cls[1] == HP_EST_OTHER && w8.cin[1] == 8);
	ASSERT(w8.cls[2] == HP_EST_CONV && w8.cin[2] == 8 && w8.cout[2] == 8);
	ASSERT(w8.cls[3] == HP_EST_FC && w8.cin[3] == 8 && w8.cout[3] == 0);
	ASSERT(w8.in_bytes[3] == 4.0 * 4 * 8 * 16 * 16);
	hp__phys_prior(true, th);
	for (int b = 0; b < 2; b++) {
		d.chan_block = b ? 16 : 1;
		t8[b] = hp__phys_time(th, &d, &w8, 0, 1, NULL);
		t16[b] = hp__phys_time(th, &d, &w16, 0, 1, NULL);
	}
	ASSERT(t8[1] > 1.05 * t8[0]);
	ASSERT_NEAR(t16[1], t16[0], 1e-12);
	hp_workload_release(&w8);
	hp_workload_release(&w16);
}

/* One dimension's kernel taps inside the input, counted as the overlap of
 * each output's window with [0, n) (dilation 1): not the tap-by-tap count
 * of workload.c. */
static double taps_overlap(int n, int out, int k, int s, int p)
{
	double in = 0;

	for (int o = 0; o < out; o++) {
		int lo = o * s - p, hi = lo + k;
		lo = lo < 0 ? 0 : lo;
		hi = hi > n ? n : hi;
		in += hi > lo ? hi - lo : 0;
	}
	return in / ((double)out * k);
}

/* A conv's share of kernel taps inside its input reaches the workload
 * (5x5 pad 2 on 16x16, 3x3 pad 1 on 8x8, 3x3 stride 2 pad 1 on 4x4, 1x1
 * on 2x2), and it scales a conv's FLOPs on the CPU, whose direct
 * convolutions skip the taps on padding, not on a GPU. */
HP_TEST(estimate_conv_padding_taps)
{
	static const char *spec =
	    "{\"input\":[3,16,16],\"classes\":10,\"layers\":["
	    "{\"type\":\"conv\",\"filters\":8,\"kernel\":5,\"stride\":1,"
	    "\"pad\":2},{\"type\":\"pool\",\"op\":\"max\",\"kernel\":2,"
	    "\"stride\":2},"
	    "{\"type\":\"conv\",\"filters\":16,\"kernel\":3,\"stride\":1,"
	    "\"pad\":1},{\"type\":\"pool\",\"op\":\"max\",\"kernel\":2,"
	    "\"stride\":2},"
	    "{\"type\":\"conv\",\"filters\":16,\"kernel\":3,\"stride\":2,"
	    "\"pad\":1},"
	    "{\"type\":\"conv\",\"filters\":16,\"kernel\":1,\"stride\":1,"
	    "\"pad\":0},"
	    "{\"type\":\"fc\",\"units\":10}]}";
	/* input size, output size, kernel, stride, pad of each conv */
	static const int geo[4][5] = {{16, 16, 5, 1, 2},
				      {8, 8, 3, 1, 1},
				      {4, 2, 3, 2, 1},
				      {2, 2, 1, 1, 0}};
	struct hp_workload w;
	struct hp_error err = {0};
	struct hp_graph *g = hp_spec_parse(spec, strlen(spec), &err);
	struct hp__dev_spec cpu = cpu_spec, gpu = cpu_spec;
	int c = 0, first = -1;

	ASSERT(g);
	ASSERT_EQ_INT(hp_workload_from_graph(g, 4, NULL, 0, &w, &err), 0);
	hp_graph_free(g);
	ASSERT(w.valid);
	gpu.cpu = false;
	for (int i = 0; i < w.nlayers; i++) {
		struct hp__layer Lc, Lg;
		double v;
		if (w.cls[i] != HP_EST_CONV) {
			ASSERT(w.valid[i] == 0);
			continue;
		}
		ASSERT(c < 4);
		v = taps_overlap(geo[c][0], geo[c][1], geo[c][2], geo[c][3],
				 geo[c][4]);
		v *= v;
		ASSERT_NEAR(w.valid[i], v, 1e-12);
		ASSERT(hp__layer_of(&w, i, &cpu, &Lc));
		ASSERT(hp__layer_of(&w, i, &gpu, &Lg));
		ASSERT_NEAR(Lc.flops, Lg.flops * v, 1e-9 * Lg.flops);
		if (first < 0)
			first = i;
		c++;
	}
	ASSERT_EQ_INT(c, 4);
	/* by hand: 5x5 pad 2 on 16: (3+4+5x12+4+3)/80 per side */
	ASSERT_NEAR(w.valid[first], (74.0 / 80) * (74.0 / 80), 1e-12);
	hp_workload_release(&w);
}

/* A conv's reduction length (input channels per group x kernel area,
 * from the spec by hand) and which poolings are max poolings reach the
 * workload, and the model's factors use them: a conv's compute time is
 * multiplied by 1 + khalf / K, a max pooling's activation traffic by
 * exp(log_maxpool_traffic). */
HP_TEST(estimate_reduction_and_max_pooling)
{
	static const char *spec =
	    "{\"input\":[1,16,16],\"classes\":10,\"layers\":["
	    "{\"type\":\"conv\",\"filters\":8,\"kernel\":5,\"stride\":1,"
	    "\"pad\":2},{\"type\":\"relu\"},"
	    "{\"type\":\"pool\",\"op\":\"max\",\"kernel\":2,\"stride\":2},"
	    "{\"type\":\"conv\",\"filters\":16,\"kernel\":3,\"stride\":1,"
	    "\"pad\":1},{\"type\":\"relu\"},"
	    "{\"type\":\"pool\",\"op\":\"avg\",\"kernel\":2,\"stride\":2},"
	    "{\"type\":\"fc\",\"units\":10}]}";
	struct hp_workload w1, w;
	struct hp_error err = {0};
	struct hp__dev_spec d = cpu_spec;
	struct hp_graph *g = hp_spec_parse(spec, strlen(spec), &err);
	double th[HP__NTH], red[2], t0, t1;
	int nconv = 0, nmax = 0;

	ASSERT(g);
	ASSERT_EQ_INT(hp_workload_from_graph(g, 1, NULL, 0, &w1, &err), 0);
	hp_graph_free(g);
	ASSERT_EQ_INT(hp_workload_at_batch(&w1, 6, &w, &err), 0);
	for (int i = 0; i < w.nlayers; i++) {
		if (w.cls[i] == HP_EST_CONV) {
			ASSERT(nconv < 2);
			red[nconv++] = w.red[i];
		} else {
			ASSERT(w.red[i] == 0);
		}
		if (w.pool[i] == HP_POOL_MAX)
			nmax++;
	}
	ASSERT_EQ_INT(nconv, 2);
	ASSERT(red[0] == 1 * 5 * 5 && red[1] == 8 * 3 * 3);
	ASSERT_EQ_INT(nmax, 1);
	for (int i = 0, c = 0, p = 0; i < w.nlayers; i++) {
		if (w.cls[i] == HP_EST_CONV)
			ASSERT(w.karea[i] == (c++ ? 9 : 25));
		if (w.pool[i] != HP_POOL_NONE)
			ASSERT(w.pool[i] == (p++ ? HP_POOL_AVG : HP_POOL_MAX));
	}
	/* the layer's parts: f3 = 1 + khalf / K exactly */
	hp__phys_prior(true, th);
	th[HP__TH_KHALF] = log(36);
	for (int i = 0; i < w.nlayers; i++) {
		struct hp__th_exp e;
		struct hp__dev_rates r;
		struct hp__layer L;
		struct hp__layer_parts P, Q;
		hp__th_exp_init(&e, th);
		hp__dev_rates_init(&r, &e, th, &d);
		if (!hp__layer_of(&w, i, &d, &L))
			continue;
		hp__layer_parts(&L, &r, HP__PART_ALL, &P);
		ASSERT_NEAR(P.f3, w.red[i] > 0 ? 1 + 36 / w.red[i] : 1, 1e-12);
		/* the max pooling's traffic, and no other layer's, moves */
		th[HP__TH_IDX] = log(2.5);
		hp__th_exp_init(&e, th);
		hp__dev_rates_init(&r, &e, th, &d);
		hp__layer_parts(&L, &r, HP__PART_ALL, &Q);
		th[HP__TH_IDX] = 0;
		ASSERT_NEAR(Q.ta / P.ta, w.pool[i] == HP_POOL_MAX ? 2.5 : 1,
			    1e-12);
	}
	t0 = hp__phys_time(th, &d, &w, 0, 1, NULL);
	th[HP__TH_IDX] = log(4);
	t1 = hp__phys_time(th, &d, &w, 0, 1, NULL);
	ASSERT(t1 > t0);
	hp_workload_release(&w1);
	hp_workload_release(&w);
}

/* With the profiler's per-class times the fit sees each layer class on its
 * own: the model's own class split comes back exactly, and the classes'
 * parameters with it. */
HP_TEST(estimate_phys_fit_uses_class_times)
{
	enum { N = 80 };
	static struct hp_workload w[N];
	struct hp__fitpt pts[N];
	bool fr[HP__NTH] = {0};
	double th[HP__NTH], truth[HP__NTH], pc[HP_EST_NCLASS],
	    tc[HP_EST_NCLASS];

	true_theta(truth);
	/* the reduction and max-pooling terms on: their layers' class
	 * times show them */
	truth[HP__TH_IDX] = log(3);
	truth[HP__TH_KHALF] = log(20);
	for (int i = 0; i < N; i++) {
		synth_wl(&w[i], 6 + i % 12, (int64_t)1 << (i % 7));
		memset(&pts[i], 0, sizeof(pts[i]));
		pts[i].w = &w[i];
		pts[i].d = cpu_spec;
		pts[i].src = HP__SRC_PROFILE;
		pts[i].ndev = 1;
		pts[i].t = hp__phys_time_cls(truth, &cpu_spec, &w[i], 0, 1,
					     NULL, pts[i].tcls);
		/* the parts and the overhead add up to the step */
		ASSERT_NEAR((pts[i].tcls[0] + pts[i].tcls[1] + pts[i].tcls[2] +
			     exp(truth[HP__TH_T0])) /
				pts[i].t,
			    1, 1e-9);
	}
	for (int j = 0; j <= HP__TH_T0; j++)
		fr[j] = true;
	fr[HP__TH_IDX] = fr[HP__TH_KHALF] = true;
	hp__phys_prior(true, th);
	th[HP__TH_KHALF] = log(HP__KHALF_START); /* as fit.c starts it */
	ASSERT_EQ_INT(hp__phys_fit(pts, N, th, NULL, fr, 0, NULL, 0, NULL), 0);
	ASSERT_NEAR(exp(th[HP__TH_KHALF]) / 20, 1, 0.1);
	ASSERT_NEAR(exp(th[HP__TH_IDX]) / 3, 1, 0.1);
	/* conv is compute-bound here (the synthetic fc and other layers
	 * are bound by their traffic: their efficiency is not seen) */
	ASSERT_NEAR(exp(th[HP__TH_EMAX + HP_EST_CONV]) /
			exp(truth[HP__TH_EMAX + HP_EST_CONV]),
		    1, 0.1);
	for (int i = 0; i < N; i += 7) {
		hp__phys_time_cls(th, &cpu_spec, &w[i], 0, 1, NULL, pc);
		hp__phys_time_cls(truth, &cpu_spec, &w[i], 0, 1, NULL, tc);
		for (int k = 0; k < HP_EST_NCLASS; k++)
			if (tc[k] > 0)
				ASSERT_NEAR(pc[k] / tc[k], 1, 0.05);
	}
	for (int i = 0; i < N; i++)
		hp_workload_release(&w[i]);
}

/* --- the fit engine against a naive reference --------------------------- */

/*
 * The physical fit as it was written before the fit engine compiled its
 * points (lib/estimate/model.c up to 0ef3db9): every row its own residual
 * through hp__phys_time_cls(), GSL's own finite-difference Jacobian, the
 * same prior, ridge and Huber passes.  hp__phys_fit() must give its
 * parameters to the bit when no rows are merged.
 */
struct ref_ctx {
	const struct hp__fitpt *pts;
	int n;
	const double *wt;
	double th[HP__NTH], prior[HP__NTH];
	int idx[HP__NTH], nfree, nscale;
	double *scale, shrink;
	int cls_pt[512], ncls;
};

static double ref_time(const struct ref_ctx *c, const double *th,
		       const double *sc, const struct hp__fitpt *p)
{
	/* a type's scale corrects its compute, before the all-reduce */
	struct hp__dev_spec d = p->d;

	if (c->nscale > 0 && p->dev >= 0 && p->dev < c->nscale)
		d.compute_scale = exp(sc[p->dev]);
	return hp__phys_time(th, &d, p->w, p->src, p->ndev, NULL);
}

static int ref_f(const gsl_vector *x, void *ud, gsl_vector *f)
{
	struct ref_ctx *c = ud;
	double th[HP__NTH], *sc = c->scale;
	size_t row;

	memcpy(th, c->th, sizeof(th));
	for (int j = 0; j < c->nfree; j++) {
		double v = gsl_vector_get(x, (size_t)j);
		th[c->idx[j]] = v > 30 ? 30 : v < -60 ? -60 : v;
	}
	for (int d = 0; d < c->nscale; d++) {
		double v = gsl_vector_get(x, (size_t)(c->nfree + d));
		sc[d] = v > 20 ? 20 : v < -20 ? -20 : v;
	}
	for (int i = 0; i < c->n; i++) {
		double r =
		    log(ref_time(c, th, sc, &c->pts[i])) - log(c->pts[i].t);
		if (!isfinite(r))
			r = 50;
		gsl_vector_set(f, (size_t)i, sqrt(c->wt[i]) * r);
	}
	for (int i = 0; i < c->ncls; i++) {
		const struct hp__fitpt *p = &c->pts[c->cls_pt[i]];
		double pc[HP_EST_NCLASS];
		hp__phys_time_cls(th, &p->d, p->w, p->src, p->ndev, NULL, pc);
		for (int k = 0; k < HP_EST_NCLASS; k++) {
			double r = 0;
			if (p->tcls[k] > 0 && pc[k] > 0)
				r = log(pc[k]) - log(p->tcls[k]);
			if (!isfinite(r))
				r = 50;
			gsl_vector_set(f,
				       (size_t)(c->n + i * HP_EST_NCLASS + k),
				       0.5 * sqrt(c->wt[c->cls_pt[i]]) * r);
		}
	}
	row = (size_t)(c->n + c->ncls * HP_EST_NCLASS);
	for (int j = 0; j < c->nfree; j++)
		gsl_vector_set(f, row + (size_t)j,
			       0.05 * (th[c->idx[j]] - c->prior[c->idx[j]]));
	for (int d = 0; d < c->nscale; d++)
		gsl_vector_set(f, row + (size_t)(c->nfree + d),
			       sqrt(c->shrink) * sc[d]);
	return GSL_SUCCESS;
}

static void ref_solve(struct ref_ctx *c)
{
	gsl_multifit_nlinear_parameters par =
	    gsl_multifit_nlinear_default_parameters();
	gsl_multifit_nlinear_fdf fdf;
	gsl_multifit_nlinear_workspace *ws;
	size_t np = (size_t)(c->nfree + c->nscale);
	size_t nres = (size_t)c->n + (size_t)c->ncls * HP_EST_NCLASS + np;
	gsl_vector *x = gsl_vector_alloc(np);
	int info;

	ws = gsl_multifit_nlinear_alloc(gsl_multifit_nlinear_trust, &par, nres,
					np);
	ASSERT(x && ws);
	for (int j = 0; j < c->nfree; j++)
		gsl_vector_set(x, (size_t)j, c->th[c->idx[j]]);
	for (int d = 0; d < c->nscale; d++)
		gsl_vector_set(x, (size_t)(c->nfree + d), c->scale[d]);
	memset(&fdf, 0, sizeof(fdf));
	fdf.f = ref_f;
	fdf.n = nres;
	fdf.p = np;
	fdf.params = c;
	gsl_multifit_nlinear_init(x, &fdf, ws);
	gsl_multifit_nlinear_driver(200, 1e-8, 1e-8, 1e-8, NULL, NULL, &info,
				    ws);
	for (int j = 0; j < c->nfree; j++) {
		double v = gsl_vector_get(ws->x, (size_t)j);
		c->th[c->idx[j]] = v > 30 ? 30 : v < -60 ? -60 : v;
	}
	for (int d = 0; d < c->nscale; d++) {
		double v = gsl_vector_get(ws->x, (size_t)(c->nfree + d));
		c->scale[d] = v > 20 ? 20 : v < -20 ? -20 : v;
	}
	gsl_multifit_nlinear_free(ws);
	gsl_vector_free(x);
}

static void ref_fit(const struct hp__fitpt *pts, int n, double *th,
		    const bool *fr, int nscale, double *scale)
{
	static struct ref_ctx c;
	double wt[512], r[512], s;

	ASSERT(n <= 512);
	memset(&c, 0, sizeof(c));
	c.pts = pts;
	c.n = n;
	c.wt = wt;
	memcpy(c.th, th, sizeof(c.th));
	memcpy(c.prior, th, sizeof(c.prior));
	for (int j = 0; j < HP__NTH; j++)
		if (fr[j])
			c.idx[c.nfree++] = j;
	c.nscale = scale ? nscale : 0;
	c.scale = scale;
	c.shrink = 2;
	for (int i = 0; i < n; i++) {
		bool any = false;
		for (int k = 0; k < HP_EST_NCLASS; k++)
			any |= pts[i].tcls[k] > 0;
		if (any)
			c.cls_pt[c.ncls++] = i;
		wt[i] = 1;
	}
	for (int d = 0; d < c.nscale; d++)
		scale[d] = 0;
	for (int pass = 0; pass < 3; pass++) {
		ref_solve(&c);
		if (pass == 2)
			break;
		for (int i = 0; i < n; i++) {
			r[i] = fabs(log(ref_time(&c, c.th, c.scale, &pts[i])) -
				    log(pts[i].t));
			wt[i] = r[i];
		}
		s = 1.4826 * hp__quantile(wt, n, 0.5);
		if (!(s > 1e-3))
			s = 1e-3;
		for (int i = 0; i < n; i++)
			wt[i] = r[i] <= 1.5 * s ? 1 : 1.5 * s / r[i];
	}
	memcpy(th, c.th, sizeof(c.th));
}

/* A GPU device of the test: peak, TF32 peak, bandwidth, link. */
static struct hp__dev_spec gpu_spec(int k)
{
	struct hp__dev_spec d = {false, (10 + 5 * k) * 1e12,
				 k % 2 ? (40 + 20 * k) * 1e12 : 0,
				 (600 + 300 * k) * 1e9, 12e9 * (1 + k)};
	d.chan_block = 1;
	d.fp16 = k == 0 ? 0 : 8 * d.fp32; /* type 0: no FP16 unit */
	return d;
}

/* n points: CPU rows with class times (gpu false), or GPU rows of 4 types
 * from the three public sources, some on several devices, a third of them
 * in amp; each workload appears `copies` times with its own noise. */
static void engine_points(struct hp__fitpt *pts, struct hp_workload *w, int n,
			  int copies, bool gpu)
{
	double truth[HP__NTH];

	true_theta(truth);
	truth[HP__TH_IDX] = log(3);
	truth[HP__TH_KHALF] = log(20);
	if (gpu) {
		hp__phys_prior(false, truth);
		truth[HP__TH_EMAX] = log(0.6);
		truth[HP__TH_SRC] = log(1.3);
		truth[HP__TH_KAPPA] = 0.5;
		truth[HP__TH_KAPPA_AMP] = -0.4;
	}
	for (int i = 0; i < n; i++) {
		struct hp__fitpt *p = &pts[i];
		int u = i / copies;
		memset(p, 0, sizeof(*p));
		if (i % copies == 0)
			synth_wl(&w[u], 5 + u % 9, (int64_t)2 << (u % 6));
		p->w = &w[u];
		p->d = gpu ? gpu_spec(u % 4) : cpu_spec;
		if (gpu && u % 3 == 2)
			p->d.prec = HP_PREC_AMP;
		p->dev = gpu ? u % 4 : 0;
		p->src = gpu ? 1 + u % 3 : HP__SRC_PROFILE;
		p->ndev = gpu && u % 5 == 0 ? 4 : 1;
		/* every fourth configuration measured slower: outliers for
		 * the Huber passes */
		p->t =
		    hp__phys_time_cls(truth, &p->d, p->w, p->src, p->ndev, NULL,
				      p->tcls) *
		    exp((u % 4 == 1 ? (gpu ? 0.2 : 0.05) : 0) + 0.03 * nrand());
		for (int k = 0; k < HP_EST_NCLASS; k++)
			p->tcls[k] = gpu || u % 7 == 3
					 ? NAN
					 : p->tcls[k] * exp(0.05 * nrand());
	}
}

static void engine_free(struct hp_workload *w, int nw)
{
	for (int i = 0; i < nw; i++)
		hp_workload_release(&w[i]);
}

static void cpu_free_params(bool *fr)
{
	memset(fr, 0, HP__NTH * sizeof(*fr));
	for (int j = 0; j <= HP__TH_T0; j++)
		fr[j] = true;
	fr[HP__TH_EMW] = fr[HP__TH_CHALF] = fr[HP__TH_SHALF] = true;
	fr[HP__TH_CACHE] = fr[HP__TH_CACHEX] = true;
	fr[HP__TH_IDX] = fr[HP__TH_KHALF] = true;
}

static void gpu_free_params(bool *fr)
{
	memset(fr, 0, HP__NTH * sizeof(*fr));
	for (int j = 0; j <= HP__TH_T0; j++)
		fr[j] = true;
	fr[HP__TH_EMAX + HP_EST_FC] = fr[HP__TH_TAU + HP_EST_FC] = false;
	fr[HP__TH_KAPPA] = fr[HP__TH_COMM] = fr[HP__TH_KAPPA_AMP] = true;
	for (int s = 0; s < 2; s++)
		fr[HP__TH_SRC + s] = fr[HP__TH_SRC_T0 + s] =
		    fr[HP__TH_SRC_TS + s] = true;
}

/* Distinct rows: the fit engine's parameters are the naive fit's, to the
 * bit, on CPU rows with class times and on GPU rows with sources, several
 * devices and per-device scales. */
HP_TEST(estimate_phys_fit_equals_naive_reference)
{
	enum { N = 90 };
	static struct hp_workload w[N];
	static struct hp__fitpt pts[N];
	bool fr[HP__NTH];

	for (int gpu = 0; gpu < 2; gpu++) {
		double th[HP__NTH], ref[HP__NTH], sc[4] = {0}, rsc[4] = {0};
		engine_points(pts, w, N, 1, gpu);
		if (gpu)
			gpu_free_params(fr);
		else
			cpu_free_params(fr);
		hp__phys_prior(!gpu, th);
		memcpy(ref, th, sizeof(th));
		ASSERT_EQ_INT(hp__phys_fit(pts, N, th, NULL, fr, gpu ? 4 : 0,
					   gpu ? sc : NULL, 2, NULL),
			      0);
		ref_fit(pts, N, ref, fr, gpu ? 4 : 0, gpu ? rsc : NULL);
		for (int j = 0; j < HP__NTH; j++)
			if (th[j] != ref[j])
				HP_FAIL("%s parameter %d: %.17g, naive %.17g",
					gpu ? "gpu" : "cpu", j, th[j], ref[j]);
		for (int d = 0; d < 4; d++)
			ASSERT(sc[d] == rsc[d]);
		engine_free(w, N);
	}
}

/* Rows that repeat a configuration are merged into one weighted residual
 * (with their spread as a constant one): the same objective, so the same
 * fit as the naive one on every row up to the solver's tolerance (2e-8
 * here). */
HP_TEST(estimate_phys_fit_merged_rows_match_naive)
{
	enum { N = 240, COPIES = 4 };
	static struct hp_workload w[N / COPIES];
	static struct hp__fitpt pts[N];
	bool fr[HP__NTH];

	for (int gpu = 0; gpu < 2; gpu++) {
		double th[HP__NTH], ref[HP__NTH], sc[4] = {0}, rsc[4] = {0};
		struct ref_ctx c = {0};
		engine_points(pts, w, N, COPIES, gpu);
		if (gpu)
			gpu_free_params(fr);
		else
			cpu_free_params(fr);
		hp__phys_prior(!gpu, th);
		memcpy(ref, th, sizeof(th));
		ASSERT_EQ_INT(hp__phys_fit(pts, N, th, NULL, fr, gpu ? 4 : 0,
					   gpu ? sc : NULL, 2, NULL),
			      0);
		ref_fit(pts, N, ref, fr, gpu ? 4 : 0, gpu ? rsc : NULL);
		/* what matters: the predictions, row by row */
		c.nscale = gpu ? 4 : 0;
		for (int i = 0; i < N; i++)
			ASSERT_NEAR(ref_time(&c, th, sc, &pts[i]) /
					ref_time(&c, ref, rsc, &pts[i]),
				    1, 1e-6);
		engine_free(w, N / COPIES);
	}
}

/* The Jacobian from cached layer parts is GSL's forward difference of
 * every residual, to the bit: CPU and GPU rows, distinct and merged,
 * with uneven weights, at a point away from the prior. */
HP_TEST(estimate_phys_jacobian_is_gsl_forward_difference)
{
	enum { N = 120 };
	static struct hp_workload w[N];
	static struct hp__fitpt pts[N];
	double wt[N], th[HP__NTH], sc[4] = {0.1, -0.2, 0.05, 0.3}, diff;
	bool fr[HP__NTH];

	for (int i = 0; i < N; i++)
		wt[i] = i % 3 ? 1 : 0.4;
	for (int gpu = 0; gpu < 2; gpu++)
		for (int copies = 1; copies <= 3; copies += 2) {
			engine_points(pts, w, N, copies, gpu);
			if (gpu)
				gpu_free_params(fr);
			else
				cpu_free_params(fr);
			hp__phys_prior(!gpu, th);
			for (int j = 0; j < HP__NTH; j++)
				th[j] += 0.1 * (j % 3) - 0.05;
			ASSERT_EQ_INT(hp__phys_check_jacobian(
					  pts, N, th, fr, gpu ? 4 : 0,
					  gpu ? sc : NULL, wt, &diff, NULL),
				      0);
			if (diff != 0)
				HP_FAIL("%s, copies %d: Jacobians differ by %g",
					gpu ? "gpu" : "cpu", copies, diff);
			engine_free(w, N / copies);
		}
}

/* hp__phys_times() gives hp__phys_time() of each point to the bit, on
 * real workloads (padded channels, fused relus) and multi-GPU rows. */
HP_TEST(estimate_phys_times_equal_phys_time)
{
	static const char *spec =
	    "{\"input\":[3,16,16],\"classes\":10,\"layers\":["
	    "{\"type\":\"conv\",\"filters\":8,\"kernel\":3,\"stride\":1,"
	    "\"pad\":1},{\"type\":\"bn\"},{\"type\":\"relu\"},"
	    "{\"type\":\"pool\",\"op\":\"max\",\"kernel\":2,\"stride\":2},"
	    "{\"type\":\"conv\",\"filters\":24,\"kernel\":3,\"stride\":1,"
	    "\"pad\":1},{\"type\":\"relu\"},{\"type\":\"fc\",\"units\":10}]}";
	struct hp_workload w[4];
	struct hp__fitpt pts[16];
	struct hp_error err = {0};
	double th[HP__NTH], sc[3] = {0.2, -0.1, 0.4}, t[16];

	for (int b = 0; b < 4; b++) {
		struct hp_graph *g = hp_spec_parse(spec, strlen(spec), &err);
		ASSERT(g);
		ASSERT_EQ_INT(
		    hp_workload_from_graph(g, 1 + 7 * b, NULL, 0, &w[b], &err),
		    0);
		hp_graph_free(g);
	}
	hp__phys_prior(true, th);
	for (int j = 0; j < HP__NTH; j++)
		th[j] += 0.3 * sin(j);
	for (int i = 0; i < 16; i++) {
		memset(&pts[i], 0, sizeof(pts[i]));
		pts[i].w = &w[i % 4];
		pts[i].d = i < 8 ? cpu_spec : gpu_spec(i % 3);
		pts[i].d.chan_block = i < 4 ? 16 : i < 8 ? 8 : 1;
		pts[i].d.fuse_bn_relu = i < 8;
		pts[i].src = i < 8 ? 0 : i % 4;
		pts[i].ndev = i >= 12 ? 8 : 1;
		pts[i].dev = i < 8 ? -1 : i % 3;
		pts[i].t = 1;
	}
	ASSERT_EQ_INT(hp__phys_times(pts, 16, th, 3, sc, t, NULL), 0);
	for (int i = 0; i < 16; i++) {
		struct hp__dev_spec d = pts[i].d;
		double ref;
		if (pts[i].dev >= 0)
			d.compute_scale = exp(sc[pts[i].dev]);
		ref = hp__phys_time(th, &d, pts[i].w, pts[i].src, pts[i].ndev,
				    NULL);
		if (fabs(t[i] / ref - 1) > 1e-12)
			HP_FAIL("point %d: %.17g, hp__phys_time %.17g", i, t[i],
				ref);
	}
	for (int b = 0; b < 4; b++)
		hp_workload_release(&w[b]);
}

/* The quantile sorts with qsort now: the same values as the insertion
 * sort it replaced, on ties and unsorted input. */
HP_TEST(estimate_quantile_matches_insertion_sort)
{
	double v[101], ref[101];

	for (int n = 1; n <= 101; n += 25) {
		for (int i = 0; i < n; i++)
			v[i] = ref[i] = floor(10 * urand()) / 3;
		for (int a = 1; a < n; a++) {
			double x = ref[a];
			int b = a - 1;
			while (b >= 0 && ref[b] > x) {
				ref[b + 1] = ref[b];
				b--;
			}
			ref[b + 1] = x;
		}
		for (int q = 0; q <= 10; q++) {
			double pos = q / 10.0 * (n - 1), want;
			int i = (int)pos;
			want = i >= n - 1
				   ? ref[n - 1]
				   : ref[i] + (pos - i) * (ref[i + 1] - ref[i]);
			ASSERT(hp__quantile(v, n, q / 10.0) == want);
		}
	}
}

/* --- bad input: rows, datasets given twice, the output file ------------ */

static struct hp_profile_row small_rows[64];
static int nsmall;

static int keep_row(const struct hp_profile_row *r, int line, void *ud,
		    struct hp_error *err)
{
	(void)line;
	(void)err;
	(void)ud;
	ASSERT(nsmall < 64);
	small_rows[nsmall++] = *r;
	return 0;
}

/* tests/data/estimate/cpu-small.csv (45 rows) into small_rows. */
static void read_small(void)
{
	struct hp_error err = {0};
	int64_t torn;

	nsmall = 0;
	if (hp_dataset_read(hp_test_path("tests/data/estimate/cpu-small.csv"),
			    keep_row, NULL, &torn, &err))
		HP_FAIL("cpu-small.csv: %s", err.msg);
	ASSERT_EQ_INT(nsmall, 45);
}

/* Write small_rows to path as a dataset. */
static void write_rows(const char *path)
{
	struct hp_buf b;
	FILE *f = fopen(path, "w");

	ASSERT(f);
	hp_buf_init(&b, 1u << 24);
	ASSERT_EQ_INT(
	    hp_buf_add(&b, hp_dataset_header(), strlen(hp_dataset_header())),
	    0);
	ASSERT_EQ_INT(hp_buf_add(&b, "\n", 1), 0);
	for (int i = 0; i < nsmall; i++)
		ASSERT_EQ_INT(hp_dataset_format_row(&small_rows[i], &b), 0);
	ASSERT(fwrite(b.data, 1, b.len, f) == b.len);
	ASSERT(fclose(f) == 0);
	hp_buf_release(&b);
}

/* A row with a value outside its physical range is refused naming the
 * file, its line and the column, or skipped and counted; rows of a busy
 * host are still left out quietly. */
HP_TEST(estimate_bad_rows_refused_or_skipped)
{
	static const struct {
		const char *col;
		double step, mem_scale, power;
		int64_t batch;
	} cases[] = {
	    {"step_time_s", 0, 1, NAN, 16},
	    {"step_time_s", -0.5, 1, NAN, 16},
	    {"step_time_s", 1e308, 1, NAN, 16},
	    {"batch", 0.01, 1, NAN, 0},
	    {"peak_mem_bytes", 0.01, -1, NAN, 16},
	    {"power_w", 0.01, 1, -3, 16},
	};
	struct hp_catalog *cat = test_catalog();
	const char *dir = hp_test_tmpdir("hp-test-badrows-");
	char path[128];
	struct hp_fit_options o = {0};
	const char *ds[1] = {path};

	snprintf(path, sizeof(path), "%s/x.csv", dir);
	o.datasets = ds;
	o.ndatasets = 1;
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct hp_fit_report rep;
		struct hp_error err = {0};
		struct hp__set set;
		char want[160];
		read_small();
		/* data row 16: line 17 after the header */
		small_rows[15].step_time_s = cases[k].step;
		small_rows[15].batch = cases[k].batch;
		small_rows[15].peak_mem_bytes =
		    (int64_t)(cases[k].mem_scale *
			      (double)small_rows[15].peak_mem_bytes);
		small_rows[15].power_w = cases[k].power;
		small_rows[3].cpu_pressure = 0.4; /* busy: not bad */
		write_rows(path);
		o.skip_bad_rows = false;
		o.report = NULL;
		ASSERT_EQ_INT(hp__set_load(&set, &o, cat, &err), HP_EINVAL);
		snprintf(want, sizeof(want),
			 "'%s' line 17: column '%s': ", path, cases[k].col);
		if (strncmp(err.msg, want, strlen(want)))
			HP_FAIL("case %zu: '%s', expected '%s...'", k, err.msg,
				want);
		o.skip_bad_rows = true;
		o.report = &rep;
		ASSERT_EQ_INT(hp__set_load(&set, &o, cat, &err), 0);
		ASSERT_EQ_INT(rep.bad_rows_skipped, 1);
		ASSERT_EQ_INT(rep.profile_rows, 43); /* 45 - bad - busy */
		ASSERT_EQ_INT(set.n, 43);
		ASSERT(strstr(rep.first_bad, "line 17") &&
		       strstr(rep.first_bad, cases[k].col));
		hp__set_release(&set);
	}
	unlink(path);
	rmdir(dir);
	hp_catalog_free(cat);
}

/* The same dataset twice counts each row twice: refused, whether by the
 * same name, another name of the same file, or a copy. */
HP_TEST(estimate_dataset_given_twice_refused)
{
	struct hp_catalog *cat = test_catalog();
	const char *dir = hp_test_tmpdir("hp-test-twice-");
	char a[128], b[128], c[128];
	const char *pairs[3][2] = {{a, a}, {a, b}, {a, c}};
	const char *why[3] = {"same file", "same file", "same content"};

	snprintf(a, sizeof(a), "%s/a.csv", dir);
	snprintf(b, sizeof(b), "%s/b.csv", dir);
	snprintf(c, sizeof(c), "%s/c.csv", dir);
	read_small();
	write_rows(a);
	write_rows(c);
	ASSERT(link(a, b) == 0);
	for (int k = 0; k < 3; k++) {
		struct hp_fit_options o = {0};
		struct hp_error err = {0};
		struct hp__set set;
		o.datasets = pairs[k];
		o.ndatasets = 2;
		ASSERT_EQ_INT(hp__set_load(&set, &o, cat, &err), HP_EINVAL);
		if (!strstr(err.msg, why[k]) || !strstr(err.msg, pairs[k][0]) ||
		    !strstr(err.msg, pairs[k][1]))
			HP_FAIL("case %d: '%s'", k, err.msg);
	}
	/* one row more: different content, both count */
	{
		struct hp_fit_options o = {0};
		struct hp_error err = {0};
		struct hp__set set;
		const char *ds[2] = {a, c};
		nsmall--;
		write_rows(c);
		o.datasets = ds;
		o.ndatasets = 2;
		ASSERT_EQ_INT(hp__set_load(&set, &o, cat, &err), 0);
		ASSERT_EQ_INT(set.profile_rows, 89);
		hp__set_release(&set);
	}
	unlink(a);
	unlink(b);
	unlink(c);
	rmdir(dir);
	hp_catalog_free(cat);
}

/* The output is checked before a fit (a missing directory gives the
 * system's reason, a directory is refused), written whole through a
 * temporary file that is renamed or removed, never left behind. */
HP_TEST(estimate_save_checked_first_and_atomic)
{
	struct hp_catalog *cat = test_catalog();
	struct hp_estimator_file f;
	const char *dir = hp_test_tmpdir("hp-test-save-");
	char path[128], tmp[sizeof(f.af.tmp)];
	struct hp_error err = {0};
	struct hp_estimator *est, *back;
	struct hp__set set;
	DIR *d;
	struct dirent *e;
	int files = 0;

	ASSERT_EQ_INT(
	    hp_estimator_save_open(&f, "/nonexistent-hp/x.json", &err), HP_EIO);
	ASSERT_STR_EQ(err.msg, "cannot write '/nonexistent-hp/x.json': No "
			       "such file or directory");
	ASSERT_EQ_INT(hp_estimator_save_open(&f, dir, &err), HP_EINVAL);
	ASSERT(strstr(err.msg, "Is a directory"));
	snprintf(path, sizeof(path), "%s/est.json", dir);
	ASSERT_EQ_INT(hp_estimator_save_open(&f, path, &err), 0);
	ASSERT(access(f.af.tmp, F_OK) == 0 && access(path, F_OK) != 0);
	snprintf(tmp, sizeof(tmp), "%s", f.af.tmp);
	hp_estimator_save_abort(&f);
	ASSERT(access(tmp, F_OK) != 0);
	synth_set(&set, cat, 40, NULL, 0, 0);
	est = hp__fit_set(&set, NULL, cat, false, 1, NULL, &err);
	ASSERT(est);
	ASSERT_EQ_INT(hp_estimator_save(est, path, &err), 0);
	ASSERT((back = hp_estimator_load(path, &err)));
	/* only est.json is left in the directory */
	ASSERT((d = opendir(dir)));
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			ASSERT_STR_EQ(e->d_name, "est.json");
			files++;
		}
	closedir(d);
	ASSERT_EQ_INT(files, 1);
	hp_estimator_free(back);
	hp_estimator_free(est);
	hp__set_release(&set);
	unlink(path);
	rmdir(dir);
	hp_catalog_free(cat);
}

/* The fit reports progress: solver runs done of a total that is reached
 * at the end. */
struct prog_seen {
	int64_t calls, last_done, last_total;
	bool monotone;
};

static void on_progress(const char *stage, int64_t done, int64_t total,
			void *ud)
{
	struct prog_seen *p = ud;

	ASSERT(stage && *stage);
	if (total > 0) {
		p->monotone &= done >= p->last_done;
		p->last_done = done;
		p->last_total = total;
	}
	p->calls++;
}

HP_TEST(estimate_fit_reports_progress)
{
	struct hp_catalog *cat = test_catalog();
	struct hp_fit_options o = {0};
	struct hp_error err = {0};
	struct prog_seen seen = {0, 0, 0, true};
	const char *ds[1] = {hp_test_path("tests/data/estimate/cpu-small.csv")};
	struct hp_estimator *est;

	o.datasets = ds;
	o.ndatasets = 1;
	o.progress = on_progress;
	o.progress_ud = &seen;
	est = hp_estimator_fit(&o, cat, &err);
	ASSERT(est);
	/* one CPU host: the fit and 5 folds */
	ASSERT_EQ_INT(seen.last_total, 6);
	ASSERT_EQ_INT(seen.last_done, 6);
	ASSERT(seen.monotone);
	hp_estimator_free(est);
	hp_catalog_free(cat);
}

/* The estimator text of a fit without its creation time. */
static char *dump_without_time(const struct hp_estimator *est)
{
	char *s = hp_estimator_dumps(est), *p;

	ASSERT(s);
	p = strstr(s, "\"created\"");
	ASSERT(p);
	for (p += 9; *p && *p != ','; p++)
		*p = ' ';
	/* the provenance line carries the time too */
	p = strstr(s, "\"fitted ");
	if (p)
		for (p += 8; *p && *p != ' '; p++)
			*p = '_';
	return s;
}

/* The folds run on threads: the fit and the validation are the same for
 * any thread count, to the bit (CPU folds, GPU folds and types left out
 * each a task; results gathered in task order). */
HP_TEST(estimate_fit_same_for_any_thread_count)
{
	struct hp_catalog *cat = test_catalog();
	const char *ds[1] = {hp_test_path("tests/data/estimate/cpu-small.csv")};
	char pub[1024], models[1024], *text[3];
	const int threads[3] = {1, 2, 5};
	struct hp_validation v[3] = {0};

	snprintf(pub, sizeof(pub), "%s", hp_test_path("data/measurements"));
	snprintf(models, sizeof(models), "%s", hp_test_path("data/models"));
	for (int k = 0; k < 3; k++) {
		struct hp_fit_options o = {0};
		struct hp_error err = {0};
		struct hp_estimator *est;
		o.datasets = ds;
		o.ndatasets = 1;
		o.public_dir = pub;
		o.models_dir = models;
		o.threads = threads[k];
		est = hp_estimator_fit(&o, cat, &err);
		if (!est)
			HP_FAIL("fit with %d threads: %s", threads[k], err.msg);
		text[k] = dump_without_time(est);
		hp_estimator_free(est);
		o.public_dir = NULL;
		if (hp_estimator_validate(&o, cat, 3, &v[k], &err))
			HP_FAIL("validate with %d threads: %s", threads[k],
				err.msg);
	}
	for (int k = 1; k < 3; k++) {
		ASSERT_STR_EQ(text[k], text[0]);
		ASSERT_EQ_INT(v[k].n, v[0].n);
		for (int i = 0; i < v[0].n; i++) {
			ASSERT_EQ_INT(v[k].rows[i].n, v[0].rows[i].n);
			ASSERT(v[k].rows[i].mape == v[0].rows[i].mape ||
			       (isnan(v[k].rows[i].mape) &&
				isnan(v[0].rows[i].mape)));
			ASSERT(v[k].rows[i].worst == v[0].rows[i].worst ||
			       isnan(v[0].rows[i].worst));
		}
	}
	for (int k = 0; k < 3; k++) {
		free(text[k]);
		hp_validation_release(&v[k]);
	}
	hp_catalog_free(cat);
}

/* --- the yardstick: times relative to the host's speed ---------------- */

/* Rows with ref_time_s have their times scaled to the device's median
 * reference time (t x median / ref_row), checked against the hand
 * computation; rows without one keep theirs; the fitted estimator keeps
 * the reference speed through a save and load, files without it still
 * load, and a prediction rescales by a new reference time. */
HP_TEST(estimate_ref_scaling_by_hand)
{
	struct hp_catalog *cat = test_catalog();
	const char *dir = hp_test_tmpdir("hp-test-ref-");
	char path[128];
	const char *ds[1] = {path};
	struct hp_fit_options o = {0};
	struct hp_error err = {0};
	struct hp__set set;
	struct hp_estimator *est, *back;
	char *text, *p;

	snprintf(path, sizeof(path), "%s/x.csv", dir);
	read_small();
	/* 15 rows at 2 ms, 14 at 3 ms, 15 at 4 ms, one without: median 3 */
	for (int i = 0; i < nsmall; i++) {
		small_rows[i].ref_time_s = 0.002 * (1 + 0.5 * (i % 3));
		small_rows[i].time_conv_s = 0.0001 * (i + 1);
	}
	small_rows[7].ref_time_s = NAN;
	write_rows(path);
	o.datasets = ds;
	o.ndatasets = 1;
	ASSERT_EQ_INT(hp__set_load(&set, &o, cat, &err), 0);
	ASSERT_EQ_INT(set.n, 45);
	for (int i = 0; i < 45; i++) {
		const struct hp__sample *s = &set.s[i];
		double want = i == 7 ? small_rows[i].step_time_s
				     : small_rows[i].step_time_s * 0.003 /
					   small_rows[i].ref_time_s;
		ASSERT_NEAR(s->t_abs, small_rows[i].step_time_s, 1e-15);
		ASSERT_NEAR(s->t, want, 1e-12 * want);
		ASSERT_NEAR(s->tcls[HP_EST_CONV],
			    want / small_rows[i].step_time_s * 0.0001 * (i + 1),
			    1e-12);
		if (i == 7)
			ASSERT(isnan(s->ref_fit_s));
		else
			ASSERT_NEAR(s->ref_fit_s, 0.003, 1e-15);
	}
	hp__set_release(&set);
	/* --absolute: the times as measured */
	o.absolute_times = true;
	ASSERT_EQ_INT(hp__set_load(&set, &o, cat, &err), 0);
	for (int i = 0; i < 45; i++)
		ASSERT_NEAR(set.s[i].t, small_rows[i].step_time_s, 1e-15);
	hp__set_release(&set);
	o.absolute_times = false;

	o.no_intervals = true;
	est = hp_estimator_fit(&o, cat, &err);
	if (!est)
		HP_FAIL("fit: %s", err.msg);
	ASSERT_NEAR(hp_estimator_ref_time_s(est, "cpu"), 0.003, 1e-15);
	ASSERT_EQ_INT(hp_estimator_ref_time_s(est, "v100") == 0, 1);
	snprintf(path, sizeof(path), "%s/est.json", dir);
	ASSERT_EQ_INT(hp_estimator_save(est, path, &err), 0);
	back = hp_estimator_load(path, &err);
	ASSERT(back);
	ASSERT_NEAR(hp_estimator_ref_time_s(back, "cpu"), 0.003, 1e-12);
	hp_estimator_free(back);
	/* a file written before the field: loads, reference not known */
	{
		size_t len;
		ASSERT_EQ_INT(hp_read_file(path, 1u << 24, &text, &len, &err),
			      0);
		p = strstr(text, "\"ref_time_s\"");
		ASSERT(p);
		memcpy(p, "\"ref_time_X\"", 12); /* unknown keys are ignored */
		back = hp_estimator_loads(text, len, &err);
		if (!back)
			HP_FAIL("old file: %s", err.msg);
		ASSERT_EQ_INT(hp_estimator_ref_time_s(back, "cpu") == 0, 1);
		hp_estimator_free(back);
		free(text);
	}
	hp_estimator_free(est);
	/* 100 ms at 3 ms per reference step; the host now takes 3.6 ms */
	ASSERT_NEAR(hp_est_rescale_ref(0.1, 0.003, 0.0036), 0.12, 1e-15);
	ASSERT_NEAR(hp_est_rescale_ref(0.1, 0, 0.0036), 0.1, 0);
	ASSERT_NEAR(hp_est_rescale_ref(0.1, 0.003, NAN), 0.1, 0);
	unlink(path);
	snprintf(path, sizeof(path), "%s/x.csv", dir);
	unlink(path);
	rmdir(dir);
	hp_catalog_free(cat);
}

/* The noise floor on a small synthetic set, by hand: one configuration
 * measured three times (1.0, 1.1, 0.9 s, each at a yardstick that moved
 * with it), one measured once. */
HP_TEST(estimate_to_ref_speed_by_hand)
{
	/* four measurements, the third without a yardstick; the second's
	 * thread ran half its wall time (t is wall x share, as calibrate
	 * passes it): the yardsticks' run times are 1, 1 and 4 ms, median 1 */
	double wall[4] = {2, 4, 6, 8}, ref[4] = {1, 2, NAN, 4},
	       share[4] = {1, 0.5, 1, 1}, t[4] = {2, 2, 6, 8}, cls[8];
	double t2[2] = {1, 1};

	for (int i = 0; i < 4; i++) {
		cls[2 * i] = 0.25 * t[i];
		cls[2 * i + 1] = 0.75 * t[i];
	}
	ASSERT_NEAR(hp_est_to_ref_speed(4, wall, ref, share, t, cls, 2), 1, 0);
	/* wall x 1 / ref: 2, 2, (6 unchanged), 2; the class times follow */
	ASSERT_NEAR(t[0], 2, 1e-15);
	ASSERT_NEAR(t[1], 2, 1e-15);
	ASSERT_NEAR(t[2], 6, 0);
	ASSERT_NEAR(t[3], 2, 1e-15);
	ASSERT_NEAR(cls[6], 0.5, 1e-15);
	ASSERT_NEAR(cls[7], 1.5, 1e-15);
	ASSERT_NEAR(cls[4], 1.5, 0);
	/* an even count and no shares: the median of 1 and 3 ms is 2 */
	ASSERT_NEAR(hp_est_to_ref_speed(2, (double[]){1, 1}, (double[]){1, 3},
					NULL, t2, NULL, 0),
		    2, 0);
	ASSERT_NEAR(t2[0], 2, 1e-15);
	ASSERT_NEAR(t2[1], 2.0 / 3, 1e-15);
	/* no yardstick at all: nothing changes */
	t2[0] = 5;
	ASSERT(isnan(hp_est_to_ref_speed(1, (double[]){5}, (double[]){NAN},
					 NULL, t2, NULL, 0)));
	ASSERT_NEAR(t2[0], 5, 0);
}

HP_TEST(estimate_noise_floor_by_hand)
{
	struct hp__sample s[5];
	struct hp__set set = {0};
	double a, r;
	const double t[5] = {1.0, 2.0, 1.1, 0.9, 3.0};
	const uint64_t h[5] = {7, 8, 7, 7, 9};

	memset(s, 0, sizeof(s));
	for (int i = 0; i < 5; i++) {
		s[i].src = HP__SRC_PROFILE;
		s[i].cfg_hash = h[i];
		s[i].t = s[i].t_abs = t[i];
		s[i].ref_row_s = 0.01 * t[i];
	}
	s[4].src = HP__SRC_GAVEL; /* public rows have no repeats */
	s[4].cfg_hash = 7;
	set.s = s;
	set.n = 5;
	/* each with the next: 200|1-1.1|/2.1, 200|1.1-0.9|/2.0 */
	ASSERT_EQ_INT(hp__noise_floor(&set, NULL, &a, &r), 2);
	ASSERT_NEAR(a, 0.5 * (200 * 0.1 / 2.1 + 200 * 0.2 / 2.0), 1e-12);
	ASSERT_NEAR(r, 0, 1e-12);
	/* the last repeat without the yardstick: one relative pair */
	s[3].ref_row_s = NAN;
	s[2].ref_row_s = 0.01 * 1.0; /* relative 1.1 against 1.0 */
	ASSERT_EQ_INT(hp__noise_floor(&set, NULL, &a, &r), 2);
	ASSERT_NEAR(a, 0.5 * (200 * 0.1 / 2.1 + 200 * 0.2 / 2.0), 1e-12);
	ASSERT_NEAR(r, 200 * 0.1 / 2.1, 1e-12);
	/* nothing measured twice: not measured */
	s[2].cfg_hash = 10;
	s[3].cfg_hash = 11;
	ASSERT_EQ_INT(hp__noise_floor(&set, NULL, &a, &r), 0);
	ASSERT(isnan(a) && isnan(r));
	/* ... nor when the file was given twice: a row again (the same time
	 * to the last digit) is no repeat; counted, the floor read 0% */
	s[1] = s[0];
	s[2] = s[3];
	s[4] = s[0];
	s[4].cfg_hash = s[0].cfg_hash;
	ASSERT_EQ_INT(hp__noise_floor(&set, NULL, &a, &r), 0);
	ASSERT(isnan(a) && isnan(r));
}
