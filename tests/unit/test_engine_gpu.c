/*
 * test_engine_gpu.c - the CUDA backend: against the naive reference in
 * ref_nn.c (forward values, parameter and input gradients per layer type),
 * against the CPU backend (same initial parameters, same dropout masks
 * where both index them alike, the same parameters after SGD and Adam
 * steps), a net that must learn, and the NVML energy counter.  Without a
 * GPU (or in a build without the CUDA backend) those tests are skipped
 * (counted as such, never as passed); the refusal and the NVML loader's "not
 * there" path run everywhere.
 *
 * Run on a GPU machine: build/bin/hp_unit engine_gpu
 */
#ifdef HP_HAVE_ENGINE

#include <unistd.h>

#include "../../engine/nvml.h"
#include "hetpool/engine.h"
#include "ref_nn.h"
#include "test.h"

#define NET(input, classes, layers)                                            \
	"{\"name\":\"t\",\"input\":" input ",\"classes\":" #classes            \
	",\"layers\":[" layers "]}"
#define CONV(f, k, s, p)                                                       \
	"{\"type\":\"conv\",\"filters\":" #f ",\"kernel\":" #k                 \
	",\"stride\":" #s ",\"pad\":" #p "}"
#define POOL(op, k, s, p)                                                      \
	"{\"type\":\"pool\",\"op\":\"" op "\",\"kernel\":" #k                  \
	",\"stride\":" #s ",\"pad\":" #p "}"
#define FC(u) "{\"type\":\"fc\",\"units\":" #u "}"
#define BN "{\"type\":\"bn\"}"
#define RELU "{\"type\":\"relu\"}"
#define SOFTMAX "{\"type\":\"softmax\"}"
#define DROPOUT(p) "{\"type\":\"dropout\",\"p\":" #p "}"

static void parse(const char *js, struct hp_spec *s)
{
	struct hp_error err = {0};

	if (hp_spec_parse_only(js, strlen(js), s, &err))
		HP_FAIL("spec: %s", err.msg);
}

static double urand(uint64_t *st)
{
	*st = *st * 6364136223846793005ull + 1442695040888963407ull;
	return (double)(*st >> 11) * 0x1.0p-53;
}

/* Is there a CUDA device 0 for this build?  The test is skipped (HP_SKIP:
 * the process ends) when not. */
static bool have_gpu(void)
{
	struct hp_engine_opts o;
	struct hp_error err = {0};
	struct hp_spec s;
	struct hp_engine *e;

	parse(NET("[1,2,2]", 2, FC(2)), &s);
	hp_engine_opts_init(&o);
	o.device = "cuda:0";
	o.batch = 1;
	e = hp_engine_new(&s, &o, &err);
	hp_spec_release(&s);
	if (!e) {
		if (err.code != HP_EDEVICE)
			HP_FAIL("cuda:0: %s", err.msg);
		HP_SKIP("no GPU: %s", err.msg);
	}
	hp_engine_free(e);
	return true;
}

static struct hp_engine *open_on(const char *dev, const struct hp_spec *s,
				 struct hp_engine_opts *o)
{
	struct hp_error err = {0};
	struct hp_engine *e;

	o->device = dev;
	e = hp_engine_new(s, o, &err);
	if (!e)
		HP_FAIL("hp_engine_new(%s): %s", dev, err.msg);
	return e;
}

static double rel_err(const float *a, const double *b, int64_t n, double floor)
{
	double d = 0, sc = floor;

	for (int64_t i = 0; i < n; i++) {
		d = fmax(d, fabs((double)a[i] - b[i]));
		sc = fmax(sc, fabs(b[i]));
	}
	return d / sc;
}

static double max_abs(const double *v, int64_t n)
{
	double m = 0;

	for (int64_t i = 0; i < n; i++)
		m = fmax(m, fabs(v[i]));
	return m;
}

/* Input elements of every layer (for dropout masks). */
static void layer_in_elems(const struct hp_spec *s, int64_t n, int64_t *out)
{
	int64_t c = s->input[0], h = s->input[1], w = s->input[2];

	for (int i = 0; i < s->nlayers; i++) {
		const struct hp_spec_layer *L = &s->layers[i];
		out[i] = n * c * h * w;
		if (L->type == HP_LAYER_CONV || L->type == HP_LAYER_POOL) {
			h = (h + 2 * L->pad - L->kernel) / L->stride + 1;
			w = (w + 2 * L->pad - L->kernel) / L->stride + 1;
			if (L->type == HP_LAYER_CONV)
				c = L->filters;
		} else if (L->type == HP_LAYER_FC) {
			c = L->units;
			h = w = 1;
		}
	}
}

/*
 * The GPU engine vs the reference on spec js at batch n: logits, loss,
 * every parameter gradient and the input gradient (as test_engine.c's
 * check_net, against the GPU's own dropout masks).
 */
static void check_gpu_net(const char *js, int64_t n, double tol)
{
	struct hp_engine_opts o;
	struct hp_error err = {0};
	struct hp_spec s;
	struct hp_engine *e;
	struct ref_net r;
	int64_t nx, no, odims[4], *in_el;
	int np;
	float *x, *buf;
	double *xd, **p, **dp, *dx, *logits, **masks, loss_e, loss_r, gmax = 0;
	int32_t *lab;
	uint64_t st = 42;

	if (!have_gpu())
		return;
	parse(js, &s);
	hp_engine_opts_init(&o);
	o.input_grad = true;
	o.seed = 7;
	o.batch = n;
	e = open_on("cuda:0", &s, &o);
	nx = n * s.input[0] * s.input[1] * s.input[2];
	x = malloc((size_t)nx * sizeof(*x));
	xd = malloc((size_t)nx * sizeof(*xd));
	lab = calloc((size_t)n, sizeof(*lab));
	for (int64_t i = 0; i < nx; i++)
		xd[i] = x[i] = (float)(2 * urand(&st) - 1);
	for (int64_t i = 0; i < n && s.classes > 0; i++)
		lab[i] = (int32_t)(urand(&st) * (double)s.classes);
	ASSERT(hp_engine_set_input(e, x, lab, &err) == 0);
	np = hp_engine_param_count(e);
	ASSERT_EQ_INT(np, ref_nparams(&s));
	p = calloc((size_t)np, sizeof(*p));
	dp = calloc((size_t)np, sizeof(*dp));
	for (int i = 0; i < np; i++) {
		int64_t m = ref_param_numel(&s, i);
		float *t = malloc((size_t)m * sizeof(*t));
		ASSERT(hp_engine_param_get(e, i, t, &err) == 0);
		p[i] = malloc((size_t)m * sizeof(double));
		dp[i] = malloc((size_t)m * sizeof(double));
		for (int64_t j = 0; j < m; j++)
			p[i][j] = t[j];
		free(t);
	}
	if (hp_engine_forward(e, &loss_e, &err) || hp_engine_backward(e, &err))
		HP_FAIL("step: %s", err.msg);

	in_el = calloc((size_t)s.nlayers + 1, sizeof(*in_el));
	masks = calloc((size_t)s.nlayers + 1, sizeof(*masks));
	layer_in_elems(&s, n, in_el);
	for (int i = 0; i < s.nlayers; i++) {
		const struct hp_spec_layer *L = &s.layers[i];
		int64_t kept = 0;
		float *t;
		if (L->type != HP_LAYER_DROPOUT)
			continue;
		t = malloc((size_t)in_el[i] * sizeof(*t));
		ASSERT(hp_engine_dropout_mask_get(e, i, t, &err) == 0);
		masks[i] = malloc((size_t)in_el[i] * sizeof(double));
		for (int64_t j = 0; j < in_el[i]; j++) {
			masks[i][j] = t[j];
			ASSERT(t[j] == 0 || fabs(t[j] * (1 - L->p) - 1) < 1e-6);
			kept += t[j] != 0;
		}
		if (L->p > 0 && in_el[i] >= 64)
			ASSERT(kept > 0 && kept < in_el[i]);
		free(t);
	}
	r = (struct ref_net){&s, n, o.bn_eps, p, (const double *const *)masks,
			     lab};
	no = hp_engine_output_dims(e, odims);
	ASSERT_EQ_INT(no, n * ref_out_numel(&s));
	logits = malloc((size_t)no * sizeof(double));
	dx = malloc((size_t)nx * sizeof(double));
	loss_r = ref_net_run(&r, xd, logits, dp, dx);
	ASSERT(isfinite(loss_r));

	buf = malloc((size_t)(no > nx ? no : nx) * sizeof(float));
	ASSERT(hp_engine_output_get(e, buf, &err) == 0);
	if (rel_err(buf, logits, no, 1e-3) > 1e-4)
		HP_FAIL("logits differ: rel err %g",
			rel_err(buf, logits, no, 1e-3));
	ASSERT_NEAR(loss_e, loss_r, 1e-4);
	for (int i = 0; i < np; i++)
		gmax = fmax(gmax, max_abs(dp[i], ref_param_numel(&s, i)));
	for (int i = 0; i < np; i++) {
		struct hp_engine_param pi;
		float *g = malloc((size_t)ref_param_numel(&s, i) * sizeof(*g));
		double d;
		hp_engine_param_info(e, i, &pi);
		ASSERT(hp_engine_grad_get(e, i, g, &err) == 0);
		d = rel_err(g, dp[i], pi.numel, fmax(1e-2 * gmax, 1e-4));
		if (d > tol)
			HP_FAIL("gradient of %s differs: rel err %g", pi.name,
				d);
		free(g);
	}
	ASSERT(hp_engine_input_grad_get(e, buf, &err) == 0);
	if (rel_err(buf, dx, nx, 1e-5) > tol)
		HP_FAIL("input gradient differs: rel err %g",
			rel_err(buf, dx, nx, 1e-5));

	for (int i = 0; i < np; i++) {
		free(p[i]);
		free(dp[i]);
	}
	for (int i = 0; i < s.nlayers; i++)
		free(masks[i]);
	free(masks);
	free(in_el);
	free(p);
	free(dp);
	free(dx);
	free(logits);
	free(buf);
	free(x);
	free(xd);
	free(lab);
	hp_engine_free(e);
	hp_spec_release(&s);
}

HP_TEST(engine_gpu_conv)
{
	check_gpu_net(NET("[3,6,6]", 3, CONV(4, 3, 1, 1) "," FC(3)), 4, 2e-3);
}

HP_TEST(engine_gpu_conv_strided)
{
	check_gpu_net(
	    NET("[3,7,7]", 3, CONV(5, 3, 2, 0) "," CONV(17, 2, 1, 1) "," FC(3)),
	    3, 2e-3);
}

HP_TEST(engine_gpu_bn)
{
	check_gpu_net(NET("[3,5,5]", 3, CONV(4, 3, 1, 1) "," BN "," FC(3)), 4,
		      2e-3);
}

HP_TEST(engine_gpu_bn_input)
{
	/* bn on the input: its input gradient goes to scratch unless asked;
	 * here it is asked (input_grad) */
	check_gpu_net(NET("[3,4,4]", 3, BN "," FC(3)), 4, 2e-3);
}

HP_TEST(engine_gpu_bn_relu_fused)
{
	check_gpu_net(
	    NET("[2,5,5]", 3, CONV(4, 3, 1, 1) "," BN "," RELU "," FC(3)), 4,
	    2e-3);
}

HP_TEST(engine_gpu_relu)
{
	check_gpu_net(NET("[2,5,5]", 3, CONV(4, 3, 1, 1) "," RELU "," FC(3)), 3,
		      2e-3);
}

HP_TEST(engine_gpu_pool_max)
{
	check_gpu_net(NET("[2,6,6]", 3,
			  CONV(4, 3, 1, 1) "," POOL("max", 3, 2, 1) "," FC(3)),
		      3, 2e-3);
}

HP_TEST(engine_gpu_pool_avg)
{
	/* padding counts in the average, as on the CPU */
	check_gpu_net(NET("[2,6,6]", 3,
			  CONV(4, 3, 1, 1) "," POOL("avg", 3, 2, 1) "," FC(3)),
		      3, 2e-3);
}

HP_TEST(engine_gpu_pool_max_then_inplace)
{
	/* max pool, then relu and dropout in place on its output: the
	 * backward must still find the maxima */
	check_gpu_net(NET("[2,8,8]", 3,
			  CONV(4, 3, 1, 1) "," POOL(
			      "max", 2, 2, 0) "," RELU
					      "," DROPOUT(0.3) "," FC(3)),
		      4, 2e-3);
}

HP_TEST(engine_gpu_dropout)
{
	check_gpu_net(NET("[2,6,6]", 3,
			  CONV(4, 3, 1, 1) "," DROPOUT(0.4) "," FC(
			      8) "," DROPOUT(0.5) "," FC(3)),
		      4, 2e-3);
}

HP_TEST(engine_gpu_fc_softmax)
{
	check_gpu_net(NET("[2,3,3]", 4,
			  FC(7) "," RELU "," FC(5) "," SOFTMAX
						   "," FC(4) "," SOFTMAX),
		      5, 2e-3);
}

HP_TEST(engine_gpu_no_loss_layer)
{
	/* no classes: 0.5 sum(y^2) / batch */
	check_gpu_net(NET("[2,4,4]", 0, CONV(3, 3, 1, 0) "," FC(5)), 3, 2e-3);
}

/* CPU and GPU engines from the same seed start from the same parameters
 * and stay together through a few optimizer steps. */
static void check_vs_cpu(enum hp_optimizer opt)
{
	struct hp_engine_opts o;
	struct hp_error err = {0};
	struct hp_spec s;
	struct hp_engine *c, *g;
	const int64_t n = 8;
	float x[8 * 2 * 6 * 6];
	int32_t lab[8];
	uint64_t st = 5;
	double lc, lg;

	if (!have_gpu())
		return;
	parse(NET("[2,6,6]", 4,
		  CONV(6, 3, 1, 1) "," BN "," RELU "," POOL(
		      "max", 2, 2, 0) "," FC(16) "," RELU "," FC(4)),
	      &s);
	hp_engine_opts_init(&o);
	o.batch = n;
	o.opt = opt;
	o.lr = opt == HP_OPT_ADAM ? 1e-3 : 0.05;
	o.weight_decay = 1e-4;
	o.threads = 1;
	o.seed = 11;
	c = open_on("cpu", &s, &o);
	g = open_on("cuda:0", &s, &o);
	ASSERT(strstr(hp_engine_device_desc(g), "cuda:0"));
	ASSERT(strstr(hp_engine_device_desc(g), "cuDNN"));
	printf("%s\n", hp_engine_device_desc(g));
	for (int step = 0; step < 3; step++) {
		for (size_t i = 0; i < sizeof(x) / sizeof(x[0]); i++)
			x[i] = (float)(2 * urand(&st) - 1);
		for (int i = 0; i < n; i++)
			lab[i] = (int32_t)(urand(&st) * 4);
		ASSERT(hp_engine_set_input(c, x, lab, &err) == 0);
		ASSERT(hp_engine_set_input(g, x, lab, &err) == 0);
		if (hp_engine_step(c, &lc, &err) ||
		    hp_engine_step(g, &lg, &err))
			HP_FAIL("step: %s", err.msg);
		ASSERT_NEAR(lg, lc, 1e-4);
	}
	for (int i = 0; i < hp_engine_param_count(c); i++) {
		struct hp_engine_param pi;
		float *a, *b;
		double d = 0, sc = 1e-3;
		hp_engine_param_info(c, i, &pi);
		a = malloc((size_t)pi.numel * sizeof(*a));
		b = malloc((size_t)pi.numel * sizeof(*b));
		ASSERT(hp_engine_param_get(c, i, a, &err) == 0);
		ASSERT(hp_engine_param_get(g, i, b, &err) == 0);
		for (int64_t j = 0; j < pi.numel; j++) {
			d = fmax(d, fabs((double)a[j] - b[j]));
			sc = fmax(sc, fabs((double)a[j]));
		}
		if (d / sc > 1e-3)
			HP_FAIL("%s after 3 steps: cpu and gpu differ by %g "
				"(rel)",
				pi.name, d / sc);
		free(a);
		free(b);
	}
	hp_engine_free(c);
	hp_engine_free(g);
	hp_spec_release(&s);
}

HP_TEST(engine_gpu_sgd_vs_cpu)
{
	check_vs_cpu(HP_OPT_SGD);
}

HP_TEST(engine_gpu_adam_vs_cpu)
{
	check_vs_cpu(HP_OPT_ADAM);
}

HP_TEST(engine_gpu_update_formula)
{
	/* one SGD step from a zero momentum: w1 = w0 - lr (g + wd w0) */
	struct hp_engine_opts o;
	struct hp_error err = {0};
	struct hp_spec s;
	struct hp_engine *e;
	float x[4 * 3 * 4 * 4];
	int32_t lab[4] = {0, 1, 2, 1};
	uint64_t st = 9;

	if (!have_gpu())
		return;
	parse(NET("[3,4,4]", 3, CONV(2, 3, 1, 1) "," BN "," FC(3)), &s);
	hp_engine_opts_init(&o);
	o.batch = 4;
	o.lr = 0.1;
	o.weight_decay = 0.01;
	e = open_on("cuda:0", &s, &o);
	for (size_t i = 0; i < sizeof(x) / sizeof(x[0]); i++)
		x[i] = (float)(2 * urand(&st) - 1);
	ASSERT(hp_engine_set_input(e, x, lab, &err) == 0);
	{
		double l;
		ASSERT(hp_engine_forward(e, &l, &err) == 0);
		ASSERT(hp_engine_backward(e, &err) == 0);
	}
	{
		int np = hp_engine_param_count(e);
		float *w0[16], *g[16];
		ASSERT(np <= 16);
		for (int i = 0; i < np; i++) {
			struct hp_engine_param pi;
			hp_engine_param_info(e, i, &pi);
			w0[i] = malloc((size_t)pi.numel * sizeof(float));
			g[i] = malloc((size_t)pi.numel * sizeof(float));
			ASSERT(hp_engine_param_get(e, i, w0[i], &err) == 0);
			ASSERT(hp_engine_grad_get(e, i, g[i], &err) == 0);
		}
		ASSERT(hp_engine_update(e, &err) == 0);
		for (int i = 0; i < np; i++) {
			struct hp_engine_param pi;
			float *w1;
			hp_engine_param_info(e, i, &pi);
			w1 = malloc((size_t)pi.numel * sizeof(float));
			ASSERT(hp_engine_param_get(e, i, w1, &err) == 0);
			for (int64_t j = 0; j < pi.numel; j++)
				ASSERT_NEAR(w1[j],
					    w0[i][j] - 0.1 * (g[i][j] +
							      0.01 * w0[i][j]),
					    1e-6);
			free(w1);
			free(w0[i]);
			free(g[i]);
		}
	}
	hp_engine_free(e);
	hp_spec_release(&s);
}

HP_TEST(engine_gpu_dropout_mask_matches_cpu)
{
	/* after an fc both backends hold the activation as plain [N][C],
	 * and draw the same mask element for element */
	struct hp_engine_opts o;
	struct hp_error err = {0};
	struct hp_spec s;
	struct hp_engine *c, *g;
	float x[6 * 12], mc[6 * 32], mg[6 * 32];
	int32_t lab[6] = {0, 1, 2, 0, 1, 2};
	double l;

	if (!have_gpu())
		return;
	parse(NET("[3,2,2]", 3, FC(32) "," DROPOUT(0.5) "," FC(3)), &s);
	hp_engine_opts_init(&o);
	o.batch = 6;
	o.threads = 1;
	c = open_on("cpu", &s, &o);
	g = open_on("cuda:0", &s, &o);
	for (int i = 0; i < 6 * 12; i++)
		x[i] = (float)i / 72.0f;
	ASSERT(hp_engine_set_input(c, x, lab, &err) == 0);
	ASSERT(hp_engine_set_input(g, x, lab, &err) == 0);
	for (int k = 0; k < 2; k++) {
		ASSERT(hp_engine_forward(c, &l, &err) == 0);
		ASSERT(hp_engine_forward(g, &l, &err) == 0);
		ASSERT(hp_engine_dropout_mask_get(c, 1, mc, &err) == 0);
		ASSERT(hp_engine_dropout_mask_get(g, 1, mg, &err) == 0);
		ASSERT(memcmp(mc, mg, sizeof(mc)) == 0);
	}
	hp_engine_free(c);
	hp_engine_free(g);
	hp_spec_release(&s);
}

/* The quadrant task of test_engine.c: the class is the brightest one. */
HP_TEST(engine_gpu_loss_falls)
{
	struct hp_engine_opts o;
	struct hp_error err = {0};
	struct hp_spec s;
	struct hp_engine *e;
	float x[32 * 64];
	int32_t lab[32];
	double first = 0, last = 0, loss;
	uint64_t st = 2024;

	if (!have_gpu())
		return;
	parse(NET("[1,8,8]", 4,
		  CONV(8, 3, 1, 1) "," BN "," RELU "," POOL(
		      "max", 2, 2,
		      0) "," CONV(8, 3, 1, 1) "," RELU "," POOL("avg", 2, 2,
								0) "," FC(4)),
	      &s);
	hp_engine_opts_init(&o);
	o.batch = 32;
	o.lr = 0.05;
	o.seed = 3;
	e = open_on("cuda:0", &s, &o);
	for (int step = 0; step < 100; step++) {
		for (int i = 0; i < 32; i++) {
			int q = (int)(urand(&st) * 4);
			lab[i] = q;
			for (int y = 0; y < 8; y++)
				for (int xx = 0; xx < 8; xx++) {
					int in = (y >= 4) * 2 + (xx >= 4);
					x[(i * 8 + y) * 8 + xx] =
					    (float)(0.5 * (2 * urand(&st) - 1) +
						    (in == q ? 0.7 : 0));
				}
		}
		ASSERT(hp_engine_set_input(e, x, lab, &err) == 0);
		ASSERT(hp_engine_step(e, &loss, &err) == 0);
		ASSERT(isfinite(loss));
		if (step < 10)
			first += loss / 10;
		if (step >= 90)
			last += loss / 10;
	}
	if (!(last < 0.5 * first))
		HP_FAIL("loss went from %g to %g", first, last);
	hp_engine_free(e);
	hp_spec_release(&s);
}

HP_TEST(engine_gpu_energy)
{
	/* NVML's counter moves while the GPU works; the CPU says unsupported */
	struct hp_engine_opts o;
	struct hp_error err = {0};
	struct hp_spec s;
	struct hp_engine *e;
	struct hp_engine_device_info di;
	uint64_t mj0 = 0, mj1 = 0;
	double t0;
	int rc;

	parse(
	    NET("[3,32,32]", 10, CONV(32, 3, 1, 1) "," BN "," RELU "," FC(10)),
	    &s);
	hp_engine_opts_init(&o);
	o.batch = 64;
	o.threads = 1;
	e = open_on("cpu", &s, &o);
	ASSERT_EQ_INT(hp_engine_energy_mj(e, &mj0), HP_EUNSUPP);
	ASSERT_EQ_INT(hp_engine_device_info(e, &di), HP_EUNSUPP);
	hp_engine_free(e);
	if (!have_gpu()) {
		hp_spec_release(&s);
		return;
	}
	e = open_on("cuda:0", &s, &o);
	ASSERT(hp_engine_device_info(e, &di) == 0);
	ASSERT(di.name[0]);
	printf("gpu '%s', driver '%s'\n", di.name, di.driver);
	ASSERT(hp_engine_fill_synthetic(e, 1, &err) == 0);
	rc = hp_engine_energy_mj(e, &mj0);
	if (rc == HP_EUNSUPP) {
		printf("note: energy not checked: no NVML on this GPU "
		       "machine\n");
	} else {
		ASSERT_EQ_INT(rc, 0);
		t0 = hp_now_s();
		while (hp_now_s() - t0 < 1.0)
			ASSERT(hp_engine_step(e, NULL, &err) == 0);
		ASSERT(hp_engine_energy_mj(e, &mj1) == 0);
		printf("%.3f J in 1 s\n", (double)(mj1 - mj0) / 1000);
		ASSERT(mj1 > mj0);
		/* under 2 kW for a second of one GPU */
		ASSERT(mj1 - mj0 < 2000000);
	}
	hp_engine_free(e);
	hp_spec_release(&s);
}

/* These two run everywhere: the refusal and the NVML loader. */
HP_TEST(engine_gpu_refused_without_device)
{
	struct hp_engine_opts o;
	struct hp_error err = {0};
	struct hp_spec s;

	parse(NET("[3,6,6]", 3, CONV(4, 3, 1, 1) "," FC(3)), &s);
	hp_engine_opts_init(&o);
	/* no machine has 1024 GPUs: refused in every build */
	o.device = "cuda:1023";
	ASSERT(hp_engine_new(&s, &o, &err) == NULL);
	ASSERT_EQ_INT(err.code, HP_EDEVICE);
	ASSERT(strstr(err.msg, "CUDA"));
#ifdef HP_HAVE_CUDA
	ASSERT(strstr(err.msg, "no CUDA device 1023"));
#endif
	/* device 0 where there is none (this CI): HP_EDEVICE, said clearly */
	o.device = "cuda:0";
	memset(&err, 0, sizeof(err));
	{
		struct hp_engine *e = hp_engine_new(&s, &o, &err);
		if (e) {
			printf("cuda:0 present: %s\n",
			       hp_engine_device_desc(e));
			hp_engine_free(e);
		} else {
			ASSERT_EQ_INT(err.code, HP_EDEVICE);
			ASSERT(strstr(err.msg, "CUDA"));
			printf("cuda:0 refused: %s\n", err.msg);
		}
	}
	/* and the CPU still works in the same process afterwards */
	o.device = "cpu";
	o.batch = 2;
	{
		struct hp_engine *e = hp_engine_new(&s, &o, &err);
		double l;
		ASSERT(e);
		ASSERT(hp_engine_fill_synthetic(e, 1, &err) == 0);
		ASSERT(hp_engine_step(e, &l, &err) == 0);
		ASSERT(isfinite(l));
		hp_engine_free(e);
	}
	hp_spec_release(&s);
}

HP_TEST(engine_gpu_nvml_loader)
{
	struct hp_error err = {0};
	struct hp__nvml *n = (struct hp__nvml *)&err; /* must be reset */
	uint64_t mj;
	int rc;

	/* a library that is not there: unsupported, cleanly */
	rc = hp__nvml_open("libnvidia-ml-hetpool-absent.so.1", NULL, 0, &n,
			   &err);
	ASSERT_EQ_INT(rc, HP_EUNSUPP);
	ASSERT(n == NULL);
	ASSERT(strstr(err.msg, "unable to load"));
	ASSERT_EQ_INT(hp__nvml_energy_mj(NULL, &mj), HP_EUNSUPP);
	ASSERT_STR_EQ(hp__nvml_name(NULL), "");
	hp__nvml_close(NULL);
	/* a library without NVML's symbols (libm is always there) */
	rc = hp__nvml_open("libm.so.6", NULL, 0, &n, &err);
	ASSERT_EQ_INT(rc, HP_EUNSUPP);
	ASSERT(n == NULL);
	/* the real name: absent on CI, present on GPU machines */
	rc = hp__nvml_open(NULL, NULL, 0, &n, &err);
	if (rc == 0) {
		printf("nvml: '%s', driver '%s', energy by %s\n",
		       hp__nvml_name(n), hp__nvml_driver(n),
		       hp__nvml_energy_method(n));
		rc = hp__nvml_energy_mj(n, &mj);
		ASSERT(rc == 0 || rc == HP_EUNSUPP);
		hp__nvml_close(n);
	} else {
		ASSERT_EQ_INT(rc, HP_EUNSUPP);
		printf("nvml unavailable: %s\n", err.msg);
	}
}
#endif /* HP_HAVE_ENGINE */
