/*
 * test_estimate.c - the estimator: the non-linear fit recovers the
 * parameters of data the model itself generated (with noise), the linear
 * fit agrees with a naive normal-equations solve, the roofline is FLOPs /
 * peak, intervals cover most of the truth, an unmeasured device type with
 * twice the peak and bandwidth is predicted faster, save/load gives the
 * same predictions, and bad estimator JSON is refused by name.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estimate/estimate_int.h"
#include "hetpool/estimate.h"
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
	ASSERT(w->cls && w->flops && w->bytes && w->wbytes && w->width);
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
	est = hp__fit_set(&set, NULL, cat, true, NULL, NULL);
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
	est = hp__fit_set(&set, NULL, cat, false, NULL, NULL);
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
	est = hp__fit_set(&set, NULL, cat, true, NULL, NULL);
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
	est = hp__fit_set(&set, NULL, cat, false, NULL, NULL);
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
	est = hp__fit_set(&set, NULL, cat, false, NULL, NULL);
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

HP_TEST(estimate_public_runs_fit_in_memory)
{
	/* Every configuration the public sources ran must be predicted to
	 * fit on its GPU: the memory model's GPU side is checked against
	 * what really ran. */
	struct hp_catalog *cat = test_catalog();
	struct hp_fit_options o = {0};
	struct hp_error err = {0};
	struct hp__set set;
	struct hp_estimator *est;
	char pub[1024], models[1024];
	int checked = 0;

	snprintf(pub, sizeof(pub), "%s", hp_test_path("data/measurements"));
	snprintf(models, sizeof(models), "%s", hp_test_path("data/models"));
	o.public_dir = pub;
	o.models_dir = models;
	if (hp__set_load(&set, &o, cat, &err))
		HP_FAIL("public set: %s", err.msg);
	est = hp__fit_set(&set, NULL, cat, false, NULL, &err);
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
		ASSERT_EQ_INT(hp__predict(est, cat, &set.wl[s->wl], s->device,
					  s->ndev, HP_EST_PHYSICAL, s->src, &p,
					  &err),
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
	ASSERT(checked > 80);
	hp_estimator_free(est);
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
	hp__phys_prior(true, th);
	ASSERT_EQ_INT(hp__phys_fit(pts, N, th, NULL, fr, 0, NULL, 0, NULL), 0);
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
