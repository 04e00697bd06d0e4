/*
 * test_engine_gpu.c - the CUDA backend: against the naive reference in
 * ref_nn.c (forward values, parameter and input gradients per layer type,
 * the DAG layers and grouped convolutions included, and activations read
 * by several layers, whose gradients are summed), against the CPU backend
 * (same initial parameters, same dropout masks where both index them
 * alike, the same gradients on whole ONNX models, the same parameters
 * after SGD and Adam steps), a net that must learn, and the NVML energy
 * counter.  Without a
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
#include "spec_nets.h"
#include "test.h"

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

/* Input elements of every layer (for dropout masks), from the spec's
 * shapes: a layer's first input, or the network input. */
static void layer_in_elems(const struct hp_spec *s, int64_t n, int64_t *out)
{
	struct hp_error err = {0};
	int64_t(*sh)[3] = calloc((size_t)s->nlayers + 1, sizeof(*sh));

	ASSERT(sh != NULL);
	if (hp_spec_shapes(s, sh, NULL, &err))
		HP_FAIL("shapes: %s", err.msg);
	for (int i = 0; i < s->nlayers; i++) {
		const struct hp_spec_layer *L = &s->layers[i];
		int j = L->ninputs ? L->inputs[0] : i - 1;
		const int64_t *in = j < 0 ? s->input : sh[j];
		out[i] = n * in[0] * in[1] * in[2];
	}
	free(sh);
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

/* A GPU engine is bounded by the device's free memory, not by the host's
 * RAM (until 3 December it was refused at 80% of the host's RAM, which on
 * a host with less RAM than its GPU left part of the GPU unusable): a net
 * over both is refused naming the device. */
HP_TEST(engine_gpu_limit_is_the_devices)
{
	struct hp_engine_opts o;
	struct hp_error err = {0};
	struct hp_spec s;
	char js[4096];
	size_t n;

	have_gpu();
	/* 48 fc layers of 1024 (and the classifier) at batch 2^20: 4 GiB an
	 * activation (2^30 floats, each tensor inside int32 sizes), about
	 * 200 GiB in all */
	n = (size_t)snprintf(js, sizeof(js),
			     "{\"name\": \"wide\", \"input\": [1, 32, 32], "
			     "\"classes\": 10, \"layers\": [");
	for (int i = 0; i < 48; i++)
		n += (size_t)snprintf(js + n, sizeof(js) - n, "%s%s",
				      i ? ", " : "", FC(1024));
	snprintf(js + n, sizeof(js) - n, ", %s]}", FC(10));
	parse(js, &s);
	hp_engine_opts_init(&o);
	o.device = "cuda:0";
	o.batch = 1 << 20;
	ASSERT(!hp_engine_new(&s, &o, &err));
	ASSERT_EQ_INT(err.code, HP_ETOOBIG);
	if (!strstr(err.msg, "free on cuda:0"))
		HP_FAIL("refused, but not for the device's memory: %s",
			err.msg);
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

/* The layers beyond the chains, each against the reference. */

HP_TEST(engine_gpu_grouped_conv)
{
	/* groups of 2 on the input (its gradient through a grouped backward
	 * data), then strided with 3 input and 4 output channels a group */
	check_gpu_net(
	    NET("[4,6,6]", 3,
		GCONV(6, 3, 1, 1, 2) "," GCONV(8, 3, 2, 1, 2) "," FC(3)),
	    3, 2e-3);
}

HP_TEST(engine_gpu_depthwise_conv)
{
	/* depthwise (groups == channels), then depthwise with two filters a
	 * channel and stride 2 */
	check_gpu_net(
	    NET("[3,7,7]", 3,
		CONV(6, 3, 1, 1) "," GCONV(
		    6, 3, 1, 1, 6) "," BN "," RELU
				   "," GCONV(12, 3, 2, 1, 6) "," FC(3)),
	    3, 2e-3);
}

HP_TEST(engine_gpu_clip)
{
	/* ReLU6 in place after bn; a clip whose top is reached, in place
	 * after a conv; one in place after a max pool (whose backward must
	 * still find the maxima) */
	check_gpu_net(
	    NET("[3,6,6]", 3,
		CONV(6, 3, 1,
		     1) "," BN
			"," CLIP(0, 6) "," CONV(6, 3, 1, 1) "," CLIP(
			    0, 0.5) "," POOL("max", 2, 2,
					     0) "," CLIP(-0.2, 0.3) "," FC(3)),
	    4, 2e-3);
	/* on the network input: not in place, its gradient is the input's */
	check_gpu_net(
	    NET("[2,5,5]", 3, CLIP(-0.5, 0.5) "," CONV(4, 3, 1, 1) "," FC(3)),
	    3, 2e-3);
}

HP_TEST(engine_gpu_gap)
{
	/* planes of 81 elements: more than a warp's lanes, not a multiple */
	check_gpu_net(
	    NET("[3,9,9]", 3, CONV(5, 3, 1, 1) "," GAP "," FLATTEN "," FC(3)),
	    4, 2e-3);
	/* fc straight on gap's N x C x 1 x 1 */
	check_gpu_net(NET("[2,4,4]", 3, CONV(6, 3, 1, 1) "," GAP "," FC(3)), 3,
		      2e-3);
}

HP_TEST(engine_gpu_residual_block)
{
	/* as test_engine.c's: a stem, a block with a strided projection
	 * shortcut, an identity block (conv -> bn -> relu -> conv -> bn ->
	 * add with the block input); the stem's relu output and the first
	 * add's relu output are each read twice, so their gradients are
	 * sums */
	check_gpu_net(RESIDUAL_NET, 4, 2e-3);
}

HP_TEST(engine_gpu_concat)
{
	/* as test_engine.c's: three branches and the network input itself
	 * concatenated, so the input's gradient has two readers */
	check_gpu_net(CONCAT_NET, 3, 2e-3);
}

HP_TEST(engine_gpu_gradient_sums)
{
	/* conv 0's output is read by ten layers: relu, bn, max pool,
	 * dropout, softmax, clip, a depthwise and a plain conv, gap, and a
	 * concat.  Backward, the concat (the last reader) writes its
	 * gradient and every other layer adds to it, so each backward path
	 * of the backend runs with beta = 1 / acc once; the second gap's
	 * output is read by two fc layers, so an fc's input gradient is
	 * added too. */
	check_gpu_net(
	    NET("[3,6,6]", 3,
		CONV(
		    4, 3, 1,
		    1) "," /* 0 */
		       "{\"type\":\"relu\"" IN(
			   "0") "}," /* 1 */
				"{\"type\":\"bn\"" IN(
				    "0") "}," /* 2 */
					 "{\"type\":\"pool\",\"op\":\"max\","
					 "\"kernel\":3," /* 3 */
					 "\"stride\":1,\"pad\":1" IN(
					     "0") "},"
						  "{\"type\":\"dropout\",\"p\":"
						  "0.3" IN(
						      "0") "}," /* 4 */
							   "{\"type\":"
							   "\"softmax\"" IN(
							       "0") "}," /* 5 */
								    "{\"type\":"
								    "\"clip\","
								    "\"min\":-"
								    "0.3,"
								    "\"max\":0."
								    "3" IN(/* 6
									    */
									   "0") "},"
										"{\"type\":\"conv\",\"filters\":4,\"kernel\":3," /* 7 */
										"\"stride\":1,\"pad\":1,\"groups\":4" IN("0") "}," CONVI(
										    4,
										    1,
										    1,
										    0,
										    "0") "," /* 8 */
											 "{\"type\":\"gap\"" IN(
											     "0") "}," /* 9 */
		ADD("1,2,3,4,5,6,7,8") ","			   /* 10 */
		CONCAT("10,0") ","				   /* 11 */
		GAP ","						   /* 12 */
		FC(8) ","					   /* 13 */
		      "{\"type\":\"fc\",\"units\":8" IN("12") "}," /* 14 */
		ADD("13,14") ","				   /* 15 */
			     "{\"type\":\"fc\",\"units\":8" IN(
				 "9") "}," /* 16 */
		ADD("15,16") ","	   /* 17 */
		FC(3)),			   /* 18 */
	    3, 2e-3);
}

HP_TEST(engine_gpu_same_input_twice)
{
	/* one activation given twice to an add and to a concat: both slots'
	 * gradients are summed (the plan's acc[] order, descending) */
	check_gpu_net(
	    NET("[2,4,4]", 3, CONV(3, 3, 1, 1) "," ADD("0,0") "," FC(3)), 3,
	    2e-3);
	check_gpu_net(
	    NET("[2,4,4]", 3, CONV(3, 3, 1, 1) "," CONCAT("-1,0,-1") "," FC(3)),
	    3, 2e-3);
}

HP_TEST(engine_gpu_mobilenet_block)
{
	/* MobileNetV2's pieces (test_engine.c's estimate net): ReLU6 in
	 * place, a depthwise conv, a pointwise one, a residual add reading
	 * the first ReLU6's output (so its gradient is a sum, then clipped
	 * in place), gap, flatten, dropout in place and fc */
	check_gpu_net(MOBILENET_BLOCK("[3,16,16]"), 4, 2e-3);
}

/* A batch of n random inputs in [-1, 1) and labels for spec s. */
static float *random_batch(const struct hp_spec *s, int64_t n, uint64_t *st,
			   int32_t *lab)
{
	int64_t nx = n * s->input[0] * s->input[1] * s->input[2];
	float *x = malloc((size_t)nx * sizeof(*x));

	ASSERT(x != NULL);
	for (int64_t i = 0; i < nx; i++)
		x[i] = (float)(2 * urand(st) - 1);
	for (int64_t i = 0; i < n; i++)
		lab[i] = (int32_t)(urand(st) *
				   (double)(s->classes > 0 ? s->classes : 1));
	return x;
}

/* CPU and GPU engines from the same seed start from the same parameters
 * and stay together through a few optimizer steps on spec s. */
static void check_vs_cpu(const struct hp_spec *s, int64_t n,
			 enum hp_optimizer opt)
{
	struct hp_engine_opts o;
	struct hp_error err = {0};
	struct hp_engine *c, *g;
	int32_t *lab = calloc((size_t)n, sizeof(*lab));
	uint64_t st = 5;
	double lc, lg;

	hp_engine_opts_init(&o);
	o.batch = n;
	o.opt = opt;
	o.lr = opt == HP_OPT_ADAM ? 1e-3 : 0.05;
	o.weight_decay = 1e-4;
	o.threads = 1;
	o.seed = 11;
	c = open_on("cpu", s, &o);
	g = open_on("cuda:0", s, &o);
	ASSERT(strstr(hp_engine_device_desc(g), "cuda:0"));
	ASSERT(strstr(hp_engine_device_desc(g), "cuDNN"));
	printf("%s\n", hp_engine_device_desc(g));
	for (int step = 0; step < 3; step++) {
		float *x = random_batch(s, n, &st, lab);
		ASSERT(hp_engine_set_input(c, x, lab, &err) == 0);
		ASSERT(hp_engine_set_input(g, x, lab, &err) == 0);
		free(x);
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
	free(lab);
	hp_engine_free(c);
	hp_engine_free(g);
}

static const char chain_net[] = NET(
    "[2,6,6]", 4,
    CONV(6, 3, 1, 1) "," BN "," RELU
		     "," POOL("max", 2, 2, 0) "," FC(16) "," RELU "," FC(4));

HP_TEST(engine_gpu_sgd_vs_cpu)
{
	struct hp_spec s;

	if (!have_gpu())
		return;
	parse(chain_net, &s);
	check_vs_cpu(&s, 8, HP_OPT_SGD);
	hp_spec_release(&s);
}

HP_TEST(engine_gpu_adam_vs_cpu)
{
	struct hp_spec s;

	if (!have_gpu())
		return;
	parse(chain_net, &s);
	check_vs_cpu(&s, 8, HP_OPT_ADAM);
	hp_spec_release(&s);
}

/* The largest |a - b| over the largest |a| (at least floor). */
static double max_rel_diff(const float *a, const float *b, int64_t n,
			   double floor)
{
	double d = 0, sc = floor;

	for (int64_t j = 0; j < n; j++) {
		d = fmax(d, fabs((double)a[j] - b[j]));
		sc = fmax(sc, fabs((double)a[j]));
	}
	return d / sc;
}

/*
 * One forward and backward of spec s at batch n on both backends from the
 * same parameters and input: the loss, every parameter gradient and the
 * input gradient agree within tol, relative to the largest gradient (as
 * check_gpu_net does against the reference).
 */
static void check_grads_vs_cpu(const struct hp_spec *s, int64_t n, double tol)
{
	struct hp_engine_opts o;
	struct hp_error err = {0};
	struct hp_engine *e[2];
	int32_t *lab = calloc((size_t)n, sizeof(*lab));
	int64_t nx = n * s->input[0] * s->input[1] * s->input[2];
	uint64_t st = 17;
	float *x = random_batch(s, n, &st, lab), *a, *b;
	double loss[2], gmax = 0, d;
	int np;

	hp_engine_opts_init(&o);
	o.batch = n;
	o.input_grad = true;
	o.seed = 23;
	e[0] = open_on("cpu", s, &o);
	e[1] = open_on("cuda:0", s, &o);
	for (int k = 0; k < 2; k++) {
		ASSERT(hp_engine_set_input(e[k], x, lab, &err) == 0);
		if (hp_engine_forward(e[k], &loss[k], &err) ||
		    hp_engine_backward(e[k], &err))
			HP_FAIL("%s step: %s", k ? "gpu" : "cpu", err.msg);
	}
	ASSERT(isfinite(loss[0]));
	if (!(fabs(loss[1] - loss[0]) <= 1e-4 * fmax(1, fabs(loss[0]))))
		HP_FAIL("loss: cpu %.9g, gpu %.9g", loss[0], loss[1]);
	np = hp_engine_param_count(e[0]);
	ASSERT_EQ_INT(hp_engine_param_count(e[1]), np);
	/* the largest gradient element on the CPU sets the scale */
	for (int i = 0; i < np; i++) {
		struct hp_engine_param pi;
		hp_engine_param_info(e[0], i, &pi);
		a = malloc((size_t)pi.numel * sizeof(*a));
		ASSERT(hp_engine_grad_get(e[0], i, a, &err) == 0);
		for (int64_t j = 0; j < pi.numel; j++)
			gmax = fmax(gmax, fabs((double)a[j]));
		free(a);
	}
	ASSERT(gmax > 0);
	for (int i = 0; i < np; i++) {
		struct hp_engine_param pi;
		double dm;
		hp_engine_param_info(e[0], i, &pi);
		a = malloc((size_t)pi.numel * sizeof(*a));
		b = malloc((size_t)pi.numel * sizeof(*b));
		ASSERT(hp_engine_grad_get(e[0], i, a, &err) == 0);
		ASSERT(hp_engine_grad_get(e[1], i, b, &err) == 0);
		dm = max_rel_diff(a, b, pi.numel, 1e-2 * gmax);
		if (dm > tol)
			HP_FAIL("gradient of %s: cpu and gpu differ by %g "
				"(rel)",
				pi.name, dm);
		free(a);
		free(b);
	}
	a = malloc((size_t)nx * sizeof(*a));
	b = malloc((size_t)nx * sizeof(*b));
	ASSERT(hp_engine_input_grad_get(e[0], a, &err) == 0);
	ASSERT(hp_engine_input_grad_get(e[1], b, &err) == 0);
	d = max_rel_diff(a, b, nx, 1e-6);
	if (d > tol)
		HP_FAIL("input gradient: cpu and gpu differ by %g (rel)", d);
	printf("net '%s' at batch %lld: loss %.6f, gpu within %g of cpu\n",
	       s->name ? s->name : "", (long long)n, loss[0], tol);
	free(a);
	free(b);
	free(x);
	free(lab);
	hp_engine_free(e[0]);
	hp_engine_free(e[1]);
}

HP_TEST(engine_gpu_dag_vs_cpu)
{
	/* DAG nets through SGD and Adam steps: the same parameters after */
	static const char *const nets[] = {MOBILENET_BLOCK("[3,16,16]"),
					   RESIDUAL_NET};
	struct hp_spec s;

	if (!have_gpu())
		return;
	for (size_t i = 0; i < sizeof(nets) / sizeof(nets[0]); i++) {
		parse(nets[i], &s);
		check_vs_cpu(&s, 6, HP_OPT_SGD);
		check_vs_cpu(&s, 6, HP_OPT_ADAM);
		check_grads_vs_cpu(&s, 6, 2e-3);
		hp_spec_release(&s);
	}
}

HP_TEST(engine_gpu_onnx_vs_cpu)
{
	/* whole ONNX models of the repository: ResNet-18 (residual adds, a
	 * gradient summed at every block input) and ResNeXt-50 (grouped
	 * convolutions, 32 groups), at 64x64 so the last stage's batch norm
	 * still sees 4 values a channel per sample; gradients against the
	 * CPU backend's (both FP32; the tolerance is looser than against the
	 * reference for 50 layers of differently ordered sums, far below
	 * what a wrong index or a lost gradient gives) */
	static const char *const models[] = {
	    "data/models/resnet18.train.onnx",
	    "tests/data/models/resnext50_32x4d.train.onnx"};
	int64_t shape[3] = {3, 64, 64};

	if (!have_gpu())
		return;
	for (size_t i = 0; i < sizeof(models) / sizeof(models[0]); i++) {
		struct hp_error err = {0};
		struct hp_spec s;
		struct hp_graph *g =
		    hp_model_load(hp_test_path(models[i]), &err);
		if (!g)
			HP_FAIL("%s: %s", models[i], err.msg);
		if (hp_spec_from_graph(g, shape, true, &s, &err))
			HP_FAIL("%s: %s", models[i], err.msg);
		hp_graph_free(g);
		check_grads_vs_cpu(&s, 4, 1e-2);
		hp_spec_release(&s);
	}
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
