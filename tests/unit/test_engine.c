/*
 * test_engine.c - the training-step engine against the naive reference in
 * ref_nn.c: forward values and gradients (parameters and input) per layer
 * type, the reference's gradients against central finite differences, the
 * optimizer updates against their formulas, a net that must learn a
 * synthetic task, and the refusals (too big, no CUDA backend, bad specs).
 */
#ifdef HP_HAVE_ENGINE

#include <omp.h>
#include <stdarg.h>
#include <sys/resource.h>

#include "hetpool/device.h"
#include "hetpool/engine.h"
#include "hetpool/profile.h"
#include "onnx_build.h"
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

/* An engine on a tiny net, its input and a double copy of everything. */
struct fx {
	struct hp_spec s;
	struct hp_engine *e;
	int64_t n, nx;
	float *x;
	double *xd;
	int32_t *lab;
	int np;
	double **p;
	int64_t *pn;
};

static void fx_open(struct fx *f, const char *js, int64_t n,
		    struct hp_engine_opts *o)
{
	struct hp_error err = {0};
	uint64_t st = 42;

	memset(f, 0, sizeof(*f));
	parse(js, &f->s);
	f->n = o->batch = n;
	f->e = hp_engine_new(&f->s, o, &err);
	if (!f->e)
		HP_FAIL("hp_engine_new: %s", err.msg);
	f->nx = n * f->s.input[0] * f->s.input[1] * f->s.input[2];
	f->x = malloc((size_t)f->nx * sizeof(float));
	f->xd = malloc((size_t)f->nx * sizeof(double));
	f->lab = calloc((size_t)n, sizeof(int32_t));
	for (int64_t i = 0; i < f->nx; i++) {
		f->x[i] = (float)(2 * urand(&st) - 1);
		f->xd[i] = f->x[i];
	}
	for (int64_t i = 0; i < n && f->s.classes > 0; i++)
		f->lab[i] = (int32_t)(urand(&st) * (double)f->s.classes);
	ASSERT(hp_engine_set_input(f->e, f->x, f->lab, &err) == 0);
	f->np = hp_engine_param_count(f->e);
	ASSERT_EQ_INT(f->np, ref_nparams(&f->s));
	f->p = calloc((size_t)f->np, sizeof(double *));
	f->pn = calloc((size_t)f->np, sizeof(int64_t));
	for (int i = 0; i < f->np; i++) {
		struct hp_engine_param pi;
		float *tmp;
		ASSERT(hp_engine_param_info(f->e, i, &pi) == 0);
		ASSERT_EQ_INT(pi.numel, ref_param_numel(&f->s, i));
		f->pn[i] = pi.numel;
		f->p[i] = malloc((size_t)pi.numel * sizeof(double));
		tmp = malloc((size_t)pi.numel * sizeof(float));
		ASSERT(hp_engine_param_get(f->e, i, tmp, &err) == 0);
		/* a layer or group norm's scale and shift start at 1 and
		 * 0, which would hide one taken for the other: other
		 * values */
		if (f->s.layers[pi.layer].type == HP_LAYER_LAYERNORM ||
		    f->s.layers[pi.layer].type == HP_LAYER_GROUPNORM) {
			for (int64_t j = 0; j < pi.numel; j++)
				tmp[j] = (float)((i & 1) ? urand(&st) - 0.5
							 : urand(&st) + 0.5);
			ASSERT(hp_engine_param_set(f->e, i, tmp, &err) == 0);
		}
		for (int64_t j = 0; j < pi.numel; j++)
			f->p[i][j] = tmp[j];
		free(tmp);
	}
}

static void fx_close(struct fx *f)
{
	for (int i = 0; i < f->np; i++)
		free(f->p[i]);
	free(f->p);
	free(f->pn);
	free(f->x);
	free(f->xd);
	free(f->lab);
	hp_engine_free(f->e);
	hp_spec_release(&f->s);
}

/* max |a - b| over max(max |b|, floor): an error relative to the scale
 * (the floor keeps gradients that should be 0, like a conv bias before bn,
 * from measuring float noise). */
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

/* Central differences of the reference loss at a few elements of v. */
static void check_fd(const struct ref_net *r, const double *x, double *v,
		     int64_t nv, const double *g, const char *what)
{
	const double h = 1e-6;
	double scale = fmax(max_abs(g, nv), 1e-4);
	int64_t step = nv > 7 ? nv / 7 : 1;

	for (int64_t j = 0; j < nv; j += step) {
		double keep = v[j], lp, lm, fd;
		v[j] = keep + h;
		lp = ref_net_run(r, x, NULL, NULL, NULL);
		v[j] = keep - h;
		lm = ref_net_run(r, x, NULL, NULL, NULL);
		v[j] = keep;
		fd = (lp - lm) / (2 * h);
		if (!(fabs(fd - g[j]) <= 1e-5 * scale + 1e-8))
			HP_FAIL("%s[%lld]: finite difference %.9g, analytic "
				"%.9g",
				what, (long long)j, fd, g[j]);
	}
}

/*
 * Engine vs reference on the spec js at batch n: logits, loss, every
 * parameter gradient and the input gradient; then the reference's
 * gradients vs finite differences.
 */
static void check_net_tol(const char *js, int64_t n, int threads, double tol)
{
	struct hp_engine_opts o;
	struct hp_error err = {0};
	struct fx f;
	struct ref_net r;
	double **dp, *dx, *logits, **masks, loss_e, loss_r, gmax = 0;
	int64_t odims[4], no;
	float *buf;

	hp_engine_opts_init(&o);
	o.threads = threads;
	o.input_grad = true;
	o.seed = 7;
	fx_open(&f, js, n, &o);
	ASSERT(hp_engine_forward(f.e, &loss_e, &err) == 0);
	ASSERT(hp_engine_backward(f.e, &err) == 0);

	masks = calloc((size_t)f.s.nlayers + 1, sizeof(double *));
	{
		/* the dropout masks the engine drew, per input element */
		int64_t(*sh)[3] = calloc((size_t)f.s.nlayers + 1, sizeof(*sh));
		ASSERT(hp_spec_shapes(&f.s, sh, NULL, &err) == 0);
		for (int i = 0; i < f.s.nlayers; i++) {
			const struct hp_spec_layer *L = &f.s.layers[i];
			int j = L->ninputs ? L->inputs[0] : i - 1;
			const int64_t *in = j < 0 ? f.s.input : sh[j];
			if (L->type == HP_LAYER_DROPOUT) {
				int64_t m = n * in[0] * in[1] * in[2], kept = 0;
				float *t = malloc((size_t)m * sizeof(float));
				ASSERT(hp_engine_dropout_mask_get(f.e, i, t,
								  &err) == 0);
				masks[i] = malloc((size_t)m * sizeof(double));
				for (int64_t k = 0; k < m; k++) {
					masks[i][k] = t[k];
					ASSERT(t[k] == 0 ||
					       fabs(t[k] * (1 - L->p) - 1) <
						   1e-6);
					kept += t[k] != 0;
				}
				if (L->p > 0 && m >= 64)
					ASSERT(kept > 0 && kept < m);
				free(t);
			}
		}
		free(sh);
	}
	r = (struct ref_net){
	    &f.s, n, o.bn_eps, f.p, (const double *const *)masks, f.lab};
	no = hp_engine_output_dims(f.e, odims);
	ASSERT_EQ_INT(no, n * ref_out_numel(&f.s));
	logits = malloc((size_t)no * sizeof(double));
	dp = calloc((size_t)f.np, sizeof(double *));
	for (int i = 0; i < f.np; i++)
		dp[i] = malloc((size_t)f.pn[i] * sizeof(double));
	dx = malloc((size_t)f.nx * sizeof(double));
	loss_r = ref_net_run(&r, f.xd, logits, dp, dx);
	ASSERT(isfinite(loss_r));

	/* forward */
	buf = malloc((size_t)(no > f.nx ? no : f.nx) * sizeof(float));
	ASSERT(hp_engine_output_get(f.e, buf, &err) == 0);
	if (rel_err(buf, logits, no, 1e-3) > 1e-4)
		HP_FAIL("logits differ: rel err %g",
			rel_err(buf, logits, no, 1e-3));
	ASSERT_NEAR(loss_e, loss_r, 1e-4);

	/* gradients, against the largest of them all */
	for (int i = 0; i < f.np; i++)
		gmax = fmax(gmax, max_abs(dp[i], f.pn[i]));
	for (int i = 0; i < f.np; i++) {
		struct hp_engine_param pi;
		float *g = malloc((size_t)f.pn[i] * sizeof(float));
		double e;
		hp_engine_param_info(f.e, i, &pi);
		ASSERT(hp_engine_grad_get(f.e, i, g, &err) == 0);
		e = rel_err(g, dp[i], f.pn[i], fmax(1e-2 * gmax, 1e-4));
		if (e > tol)
			HP_FAIL("gradient of %s differs: rel err %g", pi.name,
				e);
		free(g);
	}
	ASSERT(hp_engine_input_grad_get(f.e, buf, &err) == 0);
	if (rel_err(buf, dx, f.nx, 1e-5) > tol)
		HP_FAIL("input gradient differs: rel err %g",
			rel_err(buf, dx, f.nx, 1e-5));

	/* the reference against finite differences */
	for (int i = 0; i < f.np; i++)
		check_fd(&r, f.xd, f.p[i], f.pn[i], dp[i], "param");
	check_fd(&r, f.xd, f.xd, f.nx, dx, "input");

	for (int i = 0; i < f.np; i++)
		free(dp[i]);
	for (int i = 0; i < f.s.nlayers; i++)
		free(masks[i]);
	free(masks);
	free(dp);
	free(dx);
	free(logits);
	free(buf);
	fx_close(&f);
}

static void check_net(const char *js, int64_t n, int threads)
{
	check_net_tol(js, n, threads, 2e-3);
}

HP_TEST(engine_conv)
{
	check_net(NET("[3,6,6]", 3, CONV(4, 3, 1, 1) "," FC(3)), 4, 2);
}

HP_TEST(engine_conv_strided)
{
	/* stride 2 without padding, then a conv with a backward-data pass
	 * that is not the first layer, and a wide one (blocked layouts) */
	check_net(
	    NET("[3,7,7]", 3, CONV(5, 3, 2, 0) "," CONV(17, 2, 1, 1) "," FC(3)),
	    3, 2);
}

HP_TEST(engine_bn)
{
	check_net(NET("[3,5,5]", 3, CONV(4, 3, 1, 1) "," BN "," FC(3)), 4, 2);
}

HP_TEST(engine_bn_input_and_fc)
{
	/* bn straight on the plain input, and bn on a 2-d fc output */
	check_net(NET("[2,4,4]", 3, BN "," FC(6) "," BN "," FC(3)), 5, 1);
}

HP_TEST(engine_bn_relu_fused)
{
	check_net(NET("[3,5,5]", 3, CONV(4, 3, 1, 1) "," BN "," RELU "," FC(3)),
		  4, 2);
}

HP_TEST(engine_relu)
{
	check_net(NET("[3,5,5]", 3, CONV(4, 3, 1, 1) "," RELU "," FC(3)), 4, 2);
	/* relu on the input itself (not in place) */
	check_net(NET("[2,3,3]", 3, RELU "," FC(3)), 4, 1);
}

HP_TEST(engine_pool_max)
{
	check_net(NET("[3,6,6]", 3,
		      CONV(4, 3, 1, 1) "," POOL("max", 2, 2, 0) "," FC(3)),
		  4, 2);
	check_net(NET("[3,7,7]", 3,
		      CONV(4, 3, 1, 1) "," POOL("max", 3, 2, 1) "," FC(3)),
		  3, 2);
}

HP_TEST(engine_pool_max_ceil)
{
	/* ceil mode: 6 -> 3 at k3 s2 (2 without), 7 -> 4 at k2 s2 (3), 7
	 * -> 4 at k3 s2 p1 (the same as without) */
	check_net(
	    NET("[3,6,6]", 3, CONV(4, 3, 1, 1) "," POOLC(3, 2, 0) "," FC(3)), 4,
	    2);
	check_net(NET("[3,7,7]", 3,
		      CONV(4, 3, 1,
			   1) "," POOLC(2, 2, 0) "," POOLC(3, 2, 1) "," FC(3)),
		  3, 2);
}

HP_TEST(engine_pool_avg)
{
	check_net(NET("[3,7,7]", 3,
		      CONV(4, 3, 1, 1) "," POOL("avg", 3, 2, 1) "," FC(3)),
		  3, 2);
	check_net(NET("[3,6,6]", 3,
		      CONV(4, 3, 1, 0) "," POOL("avg", 2, 2, 0) "," FC(3)),
		  4, 2);
}

HP_TEST(engine_pool_avg_exclude_and_ceil)
{
	/* PyTorch's count_include_pad=False: the border windows average
	 * their taps inside the input; in ceil mode the last window's
	 * overhang is left out too, padded (7 -> 4 at k3 s2 p1) or not (7
	 * -> 4 at k2 s2: ResNet-D's downsampling), which with no padding is
	 * also what PyTorch's default divides by */
	check_net(NET("[3,7,7]", 3,
		      CONV(4, 3, 1, 1) "," POOLX(3, 2, 1, false) "," FC(3)),
		  3, 2);
	check_net(NET("[3,7,7]", 3,
		      CONV(4, 3, 1, 1) "," POOLX(3, 2, 1, true) "," FC(3)),
		  3, 2);
	check_net(NET("[3,7,7]", 3,
		      CONV(4, 3, 1,
			   1) ","
			      "{\"type\":\"pool\",\"op\":\"avg\",\"kernel\":2,"
			      "\"stride\":2,\"ceil_mode\":true}," FC(3)),
		  3, 1);
}

HP_TEST(engine_dropout)
{
	check_net(
	    NET("[3,6,6]", 3, CONV(4, 3, 1, 1) "," DROPOUT(0.5) "," FC(3)), 4,
	    2);
	/* dropout right on the input (not in place), and p = 0 */
	check_net(
	    NET("[2,4,4]", 3, DROPOUT(0.3) "," FC(5) "," DROPOUT(0) "," FC(3)),
	    4, 1);
}

HP_TEST(engine_dropout_masks_change)
{
	struct hp_engine_opts o;
	struct hp_error err = {0};
	struct fx f;
	float *m1, *m2;
	int64_t n = 8 * 2 * 4 * 4, same = 0, kept = 0;
	double loss;

	hp_engine_opts_init(&o);
	o.threads = 1;
	fx_open(&f, NET("[2,4,4]", 3, DROPOUT(0.5) "," FC(3)), 8, &o);
	m1 = malloc((size_t)n * sizeof(float));
	m2 = malloc((size_t)n * sizeof(float));
	ASSERT(hp_engine_forward(f.e, &loss, &err) == 0);
	ASSERT(hp_engine_dropout_mask_get(f.e, 0, m1, &err) == 0);
	ASSERT(hp_engine_forward(f.e, &loss, &err) == 0);
	ASSERT(hp_engine_dropout_mask_get(f.e, 0, m2, &err) == 0);
	for (int64_t i = 0; i < n; i++) {
		same += m1[i] == m2[i];
		kept += m1[i] != 0;
	}
	ASSERT(same < n);
	/* about half kept: 256 draws, 6 sigma is 48 */
	ASSERT(kept > 128 - 48 && kept < 128 + 48);
	ASSERT(hp_engine_dropout_mask_get(f.e, 1, m2, &err) == HP_EINVAL);
	free(m1);
	free(m2);
	fx_close(&f);
}

HP_TEST(engine_fc)
{
	/* fc straight on a 4-d input (implicit flatten), then fc on 2-d */
	check_net(NET("[3,4,4]", 3, FC(5) "," RELU "," FC(3)), 4, 2);
	/* flatten of a blocked conv output with channels not a multiple of
	 * the block */
	check_net(NET("[3,5,5]", 4, CONV(6, 3, 1, 1) "," FC(4)), 3, 2);
}

HP_TEST(engine_softmax)
{
	/* a softmax inside the net, and the last one taken by the loss */
	check_net(NET("[3,4,4]", 3, FC(5) "," SOFTMAX "," FC(3)), 4, 2);
	check_net(NET("[3,4,4]", 3, FC(3) "," SOFTMAX), 4, 2);
	/* softmax over the channels of a conv output */
	check_net(NET("[3,4,4]", 3, CONV(4, 3, 1, 1) "," SOFTMAX "," FC(3)), 2,
		  2);
}

HP_TEST(engine_no_loss_layer)
{
	/* without "classes" the loss is 0.5 sum(y^2) / batch */
	check_net(NET("[3,5,5]", 0, CONV(4, 3, 1, 1) "," RELU "," FC(6)), 3, 2);
}

HP_TEST(engine_small_net)
{
	check_net(NET("[3,8,8]", 5,
		      CONV(8, 3, 1, 1) "," BN "," RELU "," POOL(
			  "max", 2, 2,
			  0) "," CONV(16, 3, 1,
				      1) "," RELU
					 "," POOL("avg", 2, 2, 0) "," DROPOUT(
					     0.25) "," FC(12) "," RELU
							      "," FC(5)),
		  6, 2);
}

/* Append printf-style text to a fixed buffer. */
static void cat(char *buf, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void cat(char *buf, size_t size, const char *fmt, ...)
{
	size_t len = strlen(buf);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf + len, size - len, fmt, ap);
	va_end(ap);
}

/* Random small nets (layouts, odd sizes, paddings), each checked as
 * above. */
HP_TEST(engine_random_nets)
{
	uint64_t st = 99;

	for (int t = 0; t < 12; t++) {
		char js[2048] = "";
		int64_t c = 1 + (int64_t)(urand(&st) * 4);
		int64_t hw = 4 + (int64_t)(urand(&st) * 6), units;
		int blocks = 1 + (int)(urand(&st) * 2);
		cat(js, sizeof(js),
		    "{\"input\":[%lld,%lld,%lld],\"classes\":", (long long)c,
		    (long long)hw, (long long)hw);
		units = 2 + (int64_t)(urand(&st) * 4);
		cat(js, sizeof(js), "%lld,\"layers\":[", (long long)units);
		for (int b = 0; b < blocks; b++) {
			int64_t k = 1 + (int64_t)(urand(&st) * 3);
			int64_t str = 1 + (int64_t)(urand(&st) * 2);
			int64_t pad =
			    (int64_t)(urand(&st) * (double)(k / 2 + 1));
			int64_t f = 1 + (int64_t)(urand(&st) * 20);
			if (k > hw + 2 * pad)
				break;
			hw = (hw + 2 * pad - k) / str + 1;
			cat(js, sizeof(js),
			    "%s" CONV(% lld, % lld, % lld, % lld), b ? "," : "",
			    (long long)f, (long long)k, (long long)str,
			    (long long)pad);
			if (urand(&st) < 0.5)
				cat(js, sizeof(js), "," BN);
			if (urand(&st) < 0.7)
				cat(js, sizeof(js), "," RELU);
			if (hw >= 3 && urand(&st) < 0.6) {
				int64_t pk = 2 + (int64_t)(urand(&st) * 2);
				int64_t pp = (int64_t)(urand(&st) *
						       (double)(pk / 2 + 1));
				hw = (hw + 2 * pp - pk) / pk + 1;
				cat(js, sizeof(js),
				    ",{\"type\":\"pool\",\"op\":\"%s\","
				    "\"kernel\":%lld,\"pad\":%lld}",
				    urand(&st) < 0.5 ? "max" : "avg",
				    (long long)pk, (long long)pp);
			}
		}
		if (urand(&st) < 0.4)
			cat(js, sizeof(js), "," DROPOUT(0.4));
		if (urand(&st) < 0.5)
			cat(js, sizeof(js), "," FC(7) "," RELU);
		cat(js, sizeof(js), ",{\"type\":\"fc\",\"units\":%lld}%s]}",
		    (long long)units, urand(&st) < 0.3 ? "," SOFTMAX : "");
		fprintf(stderr, "net %d: %s\n", t, js);
		/* float32 through bn over few values loses more digits */
		check_net_tol(js, 3 + (int64_t)(urand(&st) * 4), 1 + t % 2,
			      1e-2);
	}
}

/*
 * Without opts.input_grad the layers before the first parameter skip their
 * backward (bn writes its input gradient over its output gradient, conv
 * skips backward-data): the parameter gradients must not change.
 */
static void check_same_grads(const char *js, int64_t n)
{
	struct hp_engine_opts o;
	struct hp_error err = {0};
	struct fx a, b;
	double loss;

	hp_engine_opts_init(&o);
	o.threads = 1;
	o.input_grad = true;
	fx_open(&a, js, n, &o);
	o.input_grad = false;
	fx_open(&b, js, n, &o);
	ASSERT(hp_engine_forward(a.e, &loss, &err) == 0);
	ASSERT(hp_engine_backward(a.e, &err) == 0);
	ASSERT(hp_engine_forward(b.e, &loss, &err) == 0);
	ASSERT(hp_engine_backward(b.e, &err) == 0);
	for (int i = 0; i < a.np; i++) {
		float *ga = malloc((size_t)a.pn[i] * sizeof(float));
		float *gb = malloc((size_t)a.pn[i] * sizeof(float));
		double *gd = malloc((size_t)a.pn[i] * sizeof(double));
		ASSERT(hp_engine_grad_get(a.e, i, ga, &err) == 0);
		ASSERT(hp_engine_grad_get(b.e, i, gb, &err) == 0);
		for (int64_t j = 0; j < a.pn[i]; j++)
			gd[j] = ga[j];
		ASSERT(rel_err(gb, gd, a.pn[i], 1e-6) < 1e-5);
		free(ga);
		free(gb);
		free(gd);
	}
	fx_close(&a);
	fx_close(&b);
}

HP_TEST(engine_no_input_grad)
{
	check_same_grads(NET("[3,6,6]", 3,
			     BN "," RELU "," CONV(4, 3, 1, 1) "," BN "," FC(3)),
			 4);
	check_same_grads(NET("[3,6,6]", 3,
			     DROPOUT(0) "," POOL("max", 2, 2, 0) "," CONV(
				 4, 3, 1, 1) "," SOFTMAX "," FC(3)),
			 4);
}

/* Parameters as doubles, all tensors concatenated. */
static double *all_params(struct hp_engine *e, int grad, int64_t *total)
{
	struct hp_error err = {0};
	int np = hp_engine_param_count(e);
	int64_t n = 0, k = 0;
	double *v;

	for (int i = 0; i < np; i++) {
		struct hp_engine_param pi;
		hp_engine_param_info(e, i, &pi);
		n += pi.numel;
	}
	v = malloc((size_t)n * sizeof(double));
	for (int i = 0; i < np; i++) {
		struct hp_engine_param pi;
		float *t;
		hp_engine_param_info(e, i, &pi);
		t = malloc((size_t)pi.numel * sizeof(float));
		if (grad)
			ASSERT(hp_engine_grad_get(e, i, t, &err) == 0);
		else
			ASSERT(hp_engine_param_get(e, i, t, &err) == 0);
		for (int64_t j = 0; j < pi.numel; j++)
			v[k++] = t[j];
		free(t);
	}
	*total = n;
	return v;
}

/* Two steps of the optimizer against its formula (PyTorch's). */
static void check_optimizer(enum hp_optimizer opt)
{
	struct hp_engine_opts o;
	struct hp_error err = {0};
	struct fx f;
	double *w, *g, *w1, *m, *v, loss;
	int64_t n;

	hp_engine_opts_init(&o);
	o.threads = 2;
	o.opt = opt;
	o.lr = 0.05;
	o.momentum = 0.8;
	o.beta1 = 0.85;
	o.beta2 = 0.99;
	o.eps = 1e-6;
	o.weight_decay = 0.01;
	fx_open(&f,
		NET("[3,6,6]", 3,
		    CONV(8, 3, 1, 1) "," BN "," RELU
				     "," POOL("max", 2, 2, 0) "," FC(3)),
		4, &o);
	w = all_params(f.e, 0, &n);
	m = calloc((size_t)n, sizeof(double));
	v = calloc((size_t)n, sizeof(double));
	for (int t = 1; t <= 2; t++) {
		ASSERT(hp_engine_forward(f.e, &loss, &err) == 0);
		ASSERT(hp_engine_backward(f.e, &err) == 0);
		g = all_params(f.e, 1, &n);
		ASSERT(hp_engine_update(f.e, &err) == 0);
		w1 = all_params(f.e, 0, &n);
		for (int64_t i = 0; i < n; i++) {
			double d = g[i] + o.weight_decay * w[i], want;
			if (opt == HP_OPT_SGD) {
				m[i] = o.momentum * m[i] + d;
				want = w[i] - o.lr * m[i];
			} else {
				double bc1 = 1 - pow(o.beta1, t);
				double bc2 = 1 - pow(o.beta2, t);
				m[i] = o.beta1 * m[i] + (1 - o.beta1) * d;
				v[i] = o.beta2 * v[i] + (1 - o.beta2) * d * d;
				want =
				    w[i] - o.lr / bc1 * m[i] /
					       (sqrt(v[i]) / sqrt(bc2) + o.eps);
			}
			ASSERT_NEAR(w1[i], want, 2e-5);
		}
		/* the update moved the weights */
		ASSERT(fabs(w1[0] - w[0]) > 0);
		free(w);
		free(g);
		w = w1;
	}
	free(w);
	free(m);
	free(v);
	fx_close(&f);
}

HP_TEST(engine_sgd_momentum)
{
	check_optimizer(HP_OPT_SGD);
}

HP_TEST(engine_adam)
{
	check_optimizer(HP_OPT_ADAM);
}

/* A batch of the quadrant task: the class is the brightest quadrant. */
static void quadrant_batch(uint64_t *st, int64_t n, float *x, int32_t *lab)
{
	for (int64_t i = 0; i < n; i++) {
		int q = (int)(urand(st) * 4);
		lab[i] = q;
		for (int y = 0; y < 8; y++)
			for (int xx = 0; xx < 8; xx++) {
				int in = (y >= 4) * 2 + (xx >= 4);
				x[(i * 8 + y) * 8 + xx] =
				    (float)(0.5 * (2 * urand(st) - 1) +
					    (in == q ? 0.7 : 0));
			}
	}
}

HP_TEST(engine_loss_falls)
{
	struct hp_engine_opts o;
	struct hp_error err = {0};
	struct hp_spec s;
	struct hp_engine *e;
	const int64_t n = 32;
	float x[32 * 64];
	int32_t lab[32];
	double first = 0, last = 0, loss;
	uint64_t st = 2024;

	parse(NET("[1,8,8]", 4,
		  CONV(8, 3, 1, 1) "," BN "," RELU "," POOL(
		      "max", 2, 2,
		      0) "," CONV(8, 3, 1, 1) "," RELU "," POOL("avg", 2, 2,
								0) "," FC(4)),
	      &s);
	hp_engine_opts_init(&o);
	o.threads = 1;
	o.batch = n;
	o.lr = 0.05;
	o.seed = 3;
	e = hp_engine_new(&s, &o, &err);
	ASSERT(e);
	for (int step = 0; step < 100; step++) {
		quadrant_batch(&st, n, x, lab);
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

/* The engine runs on its own threads without changing the caller's:
 * the calling thread's OpenMP thread count is what it was after create,
 * step, infer, the gradients' copy, a parameter read and free (it was
 * left at the engine's). */
HP_TEST(engine_keeps_callers_omp_threads)
{
	struct hp_spec s;
	struct hp_engine_opts o;
	struct hp_engine *e;
	struct hp_error err = {0};
	float x[4 * 64], *g, w[8 * 9];
	int32_t lab[4] = {0, 1, 2, 3};
	double loss;
	uint64_t st = 7;

	parse(NET("[1,8,8]", 4,
		  CONV(8, 3, 1, 1) "," RELU "," POOL("max", 2, 2, 0) "," FC(4)),
	      &s);
	quadrant_batch(&st, 4, x, lab);
	omp_set_num_threads(3);
	hp_engine_opts_init(&o);
	o.threads = 1;
	o.batch = 4;
	e = hp_engine_new(&s, &o, &err);
	ASSERT(e);
	ASSERT_EQ_INT(omp_get_max_threads(), 3);
	ASSERT(hp_engine_set_input(e, x, lab, &err) == 0);
	ASSERT(hp_engine_step(e, &loss, &err) == 0);
	ASSERT_EQ_INT(omp_get_max_threads(), 3);
	ASSERT(hp_engine_infer(e, &loss, &err) == 0);
	ASSERT_EQ_INT(omp_get_max_threads(), 3);
	g = calloc((size_t)hp_engine_param_elems(e), sizeof(*g));
	ASSERT(g);
	ASSERT(hp_engine_grads_get(e, g, &err) == 0);
	ASSERT_EQ_INT(omp_get_max_threads(), 3);
	ASSERT(hp_engine_param_get(e, 0, w, &err) == 0);
	ASSERT_EQ_INT(omp_get_max_threads(), 3);
	free(g);
	hp_engine_free(e);
	ASSERT_EQ_INT(omp_get_max_threads(), 3);
	hp_spec_release(&s);
}

static long maxrss_kb(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

HP_TEST(engine_too_big)
{
	struct hp_engine_opts o;
	struct hp_error err = {0};
	struct hp_spec s;
	long rss0;
	int64_t est;

	parse(NET("[3,64,64]", 10,
		  CONV(64, 3, 1, 1) "," BN "," RELU
				    "," POOL("max", 2, 2, 0) "," FC(10)),
	      &s);
	hp_engine_opts_init(&o);
	rss0 = maxrss_kb();
	/* a limit set by the caller */
	o.batch = 64;
	o.max_bytes = 16u << 20;
	ASSERT(hp_engine_new(&s, &o, &err) == NULL);
	ASSERT_EQ_INT(err.code, HP_ETOOBIG);
	ASSERT(strstr(err.msg, "MiB"));
	/* the default limit (80% of RAM) against a batch of 2^30 */
	o.max_bytes = 0;
	o.batch = (int64_t)1 << 30;
	est = hp_engine_estimate_bytes(&s, o.batch, HP_OPT_SGD);
	ASSERT(est > ((int64_t)1 << 40));
	ASSERT(hp_engine_new(&s, &o, &err) == NULL);
	ASSERT_EQ_INT(err.code, HP_ETOOBIG);
	/* a batch that overflows */
	o.batch = (int64_t)1 << 40;
	ASSERT(hp_engine_new(&s, &o, &err) == NULL);
	ASSERT(err.code == HP_ERANGE || err.code == HP_ETOOBIG);
	/* refused before anything large was allocated */
	ASSERT(maxrss_kb() - rss0 < 64 * 1024);
	hp_spec_release(&s);
}

/* splitmix64, as engine.h documents the initial weights' stream */
static uint64_t mix64(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

HP_TEST(engine_init_values_in_place)
{
	/* The initial weights whatever layout oneDNN stores them in (the
	 * conv's and the wide fc's are blocked, the biases plain): uniform
	 * on +-1/sqrt(fan in) from the seed's stream, in parameter order,
	 * batch norm 1 and 0.  They are made in the engine's own buffers:
	 * the process grows by no more than the engine counts (a copy of
	 * the 128 MiB fc weight, made and freed, did before). */
	struct hp_engine_opts o;
	struct hp_error err = {0};
	struct hp_spec s;
	struct hp_engine *e;
	long rss0;
	uint64_t st;
	float *v;
	size_t peak;

	parse(NET("[16,16,16]", 10,
		  CONV(16, 3, 1, 1) "," BN "," RELU "," FC(8192) "," RELU
								 "," FC(10)),
	      &s);
	hp_engine_opts_init(&o);
	o.threads = 1;
	o.batch = 2;
	o.seed = 11;
	rss0 = maxrss_kb();
	e = hp_engine_new(&s, &o, &err);
	if (!e)
		HP_FAIL("%s", err.msg);
	peak = hp_engine_peak_bytes(e);
	/* an eighth more for ASan's shadow of what the engine allocates */
	if (maxrss_kb() - rss0 > (long)(peak / 1024 * 9 / 8) + 32 * 1024)
		HP_FAIL("the process grew %ld KiB, the engine counts %zu",
			maxrss_kb() - rss0, peak / 1024);
	st = mix64(o.seed ^ 0x5eedull);
	for (int i = 0; i < hp_engine_param_count(e); i++) {
		struct hp_engine_param pi, w;
		ASSERT(hp_engine_param_info(e, i, &pi) == 0);
		ASSERT(hp_engine_param_info(e, pi.slot ? i - 1 : i, &w) == 0);
		v = malloc((size_t)pi.numel * sizeof(*v));
		ASSERT(v && hp_engine_param_get(e, i, v, &err) == 0);
		bool bn = s.layers[pi.layer].type == HP_LAYER_BN;
		double bound = 1 / sqrt((double)(w.numel / w.dims[0]));
		for (int64_t j = 0; j < pi.numel; j++) {
			float want;
			if (bn) {
				want = pi.slot ? 0.0f : 1.0f;
			} else {
				st += 0x9e3779b97f4a7c15ull;
				want = (float)((2 * ((double)(mix64(st) >> 11) *
						     0x1.0p-53) -
						1) *
					       bound);
			}
			if (v[j] != want)
				HP_FAIL("%s[%lld] = %.9g, want %.9g", pi.name,
					(long long)j, v[j], want);
		}
		free(v);
	}
	hp_engine_free(e);
	hp_spec_release(&s);
}

HP_TEST(engine_estimate_vs_peak)
{
	struct hp_engine_opts o;
	struct hp_error err = {0};
	struct hp_spec s;
	struct hp_engine *e;
	int64_t est;
	size_t peak;

	parse(NET("[3,32,32]", 10,
		  CONV(32, 3, 1, 1) "," BN "," RELU "," POOL(
		      "max", 2, 2,
		      0) "," CONV(64, 3, 1,
				  1) "," RELU
				     "," POOL("avg", 2, 2, 0) "," DROPOUT(
					 0.5) "," FC(128) "," RELU "," FC(10)),
	      &s);
	hp_engine_opts_init(&o);
	o.threads = 1;
	o.batch = 16;
	o.opt = HP_OPT_ADAM;
	e = hp_engine_new(&s, &o, &err);
	ASSERT(e);
	est = hp_engine_estimate_bytes(&s, 16, HP_OPT_ADAM);
	peak = hp_engine_peak_bytes(e);
	ASSERT(peak > 0);
	/* activations alone: 16 * 32*32*32 floats * 2 (value, gradient) */
	ASSERT(peak > (size_t)16 * 32 * 32 * 32 * 4 * 2);
	if (!((double)est > 0.7 * (double)peak &&
	      (double)est < 1.5 * (double)peak))
		HP_FAIL("estimate %lld, allocated %zu", (long long)est, peak);
	ASSERT(strstr(hp_engine_device_desc(e), "oneDNN"));
	ASSERT(strstr(hp_engine_device_desc(e), "1 thread"));
	hp_engine_free(e);
	hp_spec_release(&s);
}

HP_TEST(engine_cuda_refused)
{
	struct hp_engine_opts o;
	struct hp_error err = {0};
	struct hp_spec s;

	parse(NET("[3,6,6]", 3, CONV(4, 3, 1, 1) "," FC(3)), &s);
	hp_engine_opts_init(&o);
	/* no backend in this build, or no such device: see test_engine_gpu.c */
	o.device = "cuda:1023";
	ASSERT(hp_engine_new(&s, &o, &err) == NULL);
	ASSERT_EQ_INT(err.code, HP_EDEVICE);
	ASSERT(strstr(err.msg, "CUDA"));
	o.device = "tpu";
	ASSERT(hp_engine_new(&s, &o, &err) == NULL);
	ASSERT_EQ_INT(err.code, HP_EINVAL);
	o.device = "cuda:x";
	ASSERT(hp_engine_new(&s, &o, &err) == NULL);
	ASSERT_EQ_INT(err.code, HP_EINVAL);
	hp_spec_release(&s);
}

HP_TEST(engine_bad_input)
{
	struct hp_engine_opts o;
	struct hp_error err = {0};
	struct hp_spec s;
	struct hp_spec_layer L[2];
	struct hp_engine *e;
	float x[2 * 3 * 6 * 6] = {0};
	int32_t lab[2] = {0, 3};
	double loss;

	hp_engine_opts_init(&o);
	/* a spec built by hand, past the parser's checks */
	memset(&s, 0, sizeof(s));
	memset(L, 0, sizeof(L));
	s.input[0] = 3;
	s.input[1] = s.input[2] = 6;
	s.classes = 3;
	s.layers = L;
	s.nlayers = 2;
	L[0].type = HP_LAYER_CONV;
	L[0].filters = 4;
	L[0].kernel = 0;
	L[0].stride = 1;
	L[1].type = HP_LAYER_FC;
	L[1].units = 3;
	ASSERT(hp_engine_new(&s, &o, &err) == NULL);
	ASSERT_EQ_INT(err.code, HP_EINVAL);
	L[0].kernel = 9;
	ASSERT(hp_engine_new(&s, &o, &err) == NULL);
	ASSERT_EQ_INT(err.code, HP_ESHAPE);
	L[0].kernel = 3;
	L[1].units = 4; /* classes is 3 */
	ASSERT(hp_engine_new(&s, &o, &err) == NULL);
	ASSERT_EQ_INT(err.code, HP_ESHAPE);
	L[1].units = 3;
	L[0].type = HP_LAYER_RELU;
	L[1].type = HP_LAYER_SOFTMAX;
	s.classes = 0;
	ASSERT(hp_engine_new(&s, &o, &err) == NULL);
	ASSERT_EQ_INT(err.code, HP_EINVAL);
	L[0].type = HP_LAYER_CONV;
	L[1].type = HP_LAYER_FC;
	s.classes = 3;
	o.batch = 0;
	ASSERT(hp_engine_new(&s, &o, &err) == NULL);
	ASSERT_EQ_INT(err.code, HP_ERANGE);
	o.batch = 2;
	o.lr = -1;
	ASSERT(hp_engine_new(&s, &o, &err) == NULL);
	ASSERT_EQ_INT(err.code, HP_ERANGE);
	o.lr = 0.01;
	o.threads = 1;
	e = hp_engine_new(&s, &o, &err);
	ASSERT(e);
	/* labels out of range; backward before forward */
	ASSERT_EQ_INT(hp_engine_set_input(e, x, lab, &err), HP_ERANGE);
	ASSERT_EQ_INT(hp_engine_backward(e, &err), HP_EINVAL);
	lab[1] = 2;
	ASSERT(hp_engine_set_input(e, x, lab, &err) == 0);
	ASSERT(hp_engine_step(e, &loss, &err) == 0);
	ASSERT_NEAR(loss, log(3.0), 0.2);
	ASSERT_EQ_INT(hp_engine_input_grad_get(e, x, &err), HP_EINVAL);
	hp_engine_free(e);
	hp_engine_free(NULL);
}

#endif /* HP_HAVE_ENGINE */

/* Layer times: every layer and the loss get time, the parts add up to the
 * measured steps, a reset clears them, and they need opts.layer_times. */
HP_TEST(engine_layer_times)
{
	struct hp_engine_opts o;
	struct hp_error err = {0};
	struct hp_spec s;
	struct hp_engine *e;
	double lt[16], sum = 0, t0, wall;
	int steps = -1;

	parse(NET("[3,24,24]", 10,
		  CONV(16, 3, 1, 1) "," BN "," RELU "," POOL(
		      "max", 2, 2, 0) "," FC(64) "," RELU "," FC(10)),
	      &s);
	ASSERT_EQ_INT(s.nlayers, 7);
	hp_engine_opts_init(&o);
	o.threads = 1;
	o.batch = 8;
	e = hp_engine_new(&s, &o, &err);
	ASSERT(e);
	ASSERT_EQ_INT(hp_engine_layer_times(e, lt, 8, &steps, &err), HP_EINVAL);
	hp_engine_free(e);

	o.layer_times = true;
	e = hp_engine_new(&s, &o, &err);
	ASSERT(e);
	ASSERT_EQ_INT(hp_engine_fill_synthetic(e, 1, &err), 0);
	ASSERT_EQ_INT(hp_engine_step(e, NULL, &err), 0);
	hp_engine_layer_times_reset(e);
	ASSERT_EQ_INT(hp_engine_layer_times(e, lt, 8, &steps, &err), 0);
	ASSERT_EQ_INT(steps, 0);
	for (int i = 0; i < 8; i++)
		ASSERT(lt[i] == 0);
	/* The layers' times are within the steps' wall time, always, and
	 * most of it: a time slice lost between two layers (3-4 ms on a
	 * loaded machine, against 1-8 ms for these 5 steps) counts in the
	 * wall time and in no layer, so the lower bound gets 5 tries; a layer
	 * missing from the timing fails them all. */
	for (int attempt = 0; attempt < 5; attempt++) {
		hp_engine_layer_times_reset(e);
		t0 = hp_now_s();
		for (int i = 0; i < 5; i++)
			ASSERT_EQ_INT(hp_engine_step(e, NULL, &err), 0);
		wall = hp_now_s() - t0;
		ASSERT_EQ_INT(hp_engine_layer_times(e, lt, 8, &steps, &err), 0);
		ASSERT_EQ_INT(steps, 5);
		/* conv, bn, pool, both fc and the loss do work every step
		 * (the relu after bn is fused into it and may take no time) */
		ASSERT(lt[0] > 0 && lt[1] > 0 && lt[3] > 0 && lt[4] > 0 &&
		       lt[6] > 0);
		ASSERT(lt[7] > 0);
		sum = 0;
		for (int i = 0; i < 8; i++) {
			ASSERT(lt[i] >= 0);
			sum += lt[i];
		}
		if (!(sum <= wall))
			HP_FAIL("layer times add up to %g s, more than the "
				"steps' %g s",
				sum, wall);
		if (sum > 0.5 * wall)
			break;
	}
	if (!(sum > 0.5 * wall))
		HP_FAIL("layer times add up to %g s of %g s, 5 times", sum,
			wall);
	hp_engine_free(e);
	hp_spec_release(&s);
}

HP_TEST(engine_residual_block)
{
	/* a stem, a block with a strided projection shortcut, an identity
	 * block (the stem's relu output and the first add's relu output are
	 * each read twice: their gradients are summed), gap, flatten, fc */
	check_net(RESIDUAL_NET, 4, 2);
}

HP_TEST(engine_depthwise_relu6)
{
	/* MobileNet's pieces: ReLU6 (and a clip whose top is reached),
	 * depthwise and grouped convolutions, a pointwise conv, gap, then
	 * dropout and fc on the flat features */
	check_net(
	    NET("[3,8,8]", 4,
		CONV(8, 3, 2, 1) "," BN "," CLIP(0, 6) "," GCONV(
		    8, 3, 1, 1,
		    8) "," BN
		       "," CLIP(0, 0.5) "," CONV(16, 1, 1, 0) "," BN "," GCONV(
			   16, 3, 1, 1, 4) "," GAP "," FLATTEN
					   "," DROPOUT(0.2) "," FC(4)),
	    4, 2);
}

HP_TEST(engine_depthwise_own_weight_gradient)
{
	/* depthwise convs whose weight gradient oneDNN 2.6 would do as a
	 * GEMM per channel, done by the engine's own loop (cpu_dnnl.c,
	 * dw_wgrad): 5x5 at stride 1 and 2 (pad 2, and pad 1 with columns
	 * the kernel never reaches), 3x3 on a 2x2 map, and 7x7 over a map
	 * smaller than the kernel; 1 and 2 threads */
	for (int t = 1; t <= 2; t++) {
		check_net(
		    NET("[3,9,9]", 4,
			CONV(20, 1, 1, 0) "," GCONV(
			    20, 5, 1, 2,
			    20) "," BN "," RELU
				"," GCONV(20, 5, 2, 1, 20) "," GCONV(
				    20, 3, 2, 1, 20) "," GCONV(20, 3, 1, 1,
							       20) "," FC(4)),
		    3, t);
		check_net(
		    NET("[16,3,3]", 3,
			CONV(16, 1, 1, 0) "," GCONV(16, 7, 1, 3, 16) "," FC(3)),
		    2, t);
	}
}

HP_TEST(engine_grouped_conv_channels_last)
{
	/* a grouped conv of several channels a group runs channels-last
	 * (cpu_dnnl.c): its bn, relu and max pool take that layout, a
	 * dense conv after it another, the residual add a third; the
	 * gradients still match the reference */
	check_net(
	    NET("[3,8,8]", 4,
		CONV(8, 3, 1, 1) "," BN "," RELU "," GCONV(
		    8, 3, 1, 1,
		    2) "," BN "," RELU
		       "," POOL("max", 2, 2, 0) "," CONV(8, 3, 1, 1) "," ADD(
			   "6,7") "," GCONV(12, 1, 1, 0, 4) "," BN "," FC(4)),
	    4, 2);
}

HP_TEST(engine_concat)
{
	/* an inception-like fork: three branches and the network input
	 * itself concatenated (channel counts off the 16-blocking), so the
	 * input's gradient has two readers */
	check_net(CONCAT_NET, 3, 2);
}

HP_TEST(engine_sigmoid_and_mul)
{
	/* SiLU and a squeeze-and-excitation gate (b broadcast over the
	 * image: its gradient summed over it), and a square (one input
	 * twice: both slots' gradients summed) */
	check_net(SE_NET, 3, 2);
	check_net(NET("[2,4,4]", 3, CONV(3, 3, 1, 1) "," MUL("0,0") "," FC(3)),
		  3, 2);
	/* MobileNetV3's hardswish, x * hardsigmoid(x) at alpha 1/6, and a
	 * hardsigmoid gate */
	check_net(NET("[2,5,5]", 3,
		      CONV(4, 3, 1, 1) "," HARDSIGMOID(0.1666667, 0.5) "," MUL(
			  "0,1") "," GAP
				 "," CONV(4, 1, 1, 0) "," HARDSIGMOID(
				     0.2, 0.5) "," MUL("2,5") "," FC(3)),
		  3, 2);
}

HP_TEST(engine_slice_and_shuffle)
{
	/* a ShuffleNetV2 unit: slices off the channel blocks (through a
	 * plain copy), both halves of one input (its gradient written by
	 * one slice and added to by the other) */
	check_net(SHUFFLE_UNIT_NET, 3, 2);
	/* slices on whole blocks of 16 (views of the blocked layout, also
	 * whole blocks of 8 under AVX2), a slice that leaves channels out
	 * (their gradient is zero), and slices of the plain network input */
	check_net(
	    NET("[3,4,4]", 3,
		CONV(48, 3, 1, 1) "," SLICE(16, 32, "0") "," SLICE(
		    0, 16,
		    "0") "," CONVI(16, 1, 1, 0,
				   "1") "," ADD("2,3") "," SLICE(3, 9,
								 "4") "," FC(3)),
	    3, 2);
	check_net(NET("[3,4,4]", 3,
		      SLICE(1, 2, "-1") "," CONV(4, 3, 1, 1) "," SLICE(
			  0, 1, "-1") "," CONVI(4, 3, 1, 1,
						"2") "," ADD("1,3") "," FC(3)),
		  3, 2);
	/* shuffles of 3 and 4 groups, one whose input has a second reader,
	 * and one of a blocked layout with padded channels (24 of 32) */
	check_net(NET("[2,4,4]", 3,
		      CONV(6, 3, 1, 1) "," SHUFFLE(3) "," ADD("0,1") "," CONV(
			  24, 1, 1, 0) "," SHUFFLE(4) "," FC(3)),
		  3, 2);
}

HP_TEST(engine_layernorm_and_gelu)
{
	/* ConvNeXt's block: a layer norm of a blocked conv output (through
	 * nhwc), the 1x1 convs and gelu, a layer norm after the pooling */
	check_net(CONVNEXT_BLOCK_NET, 3, 2);
	/* a layer norm of the plain network input, of a 2-d fc output (no
	 * reorder), of an input with a second reader; gelu on flat data */
	check_net(NET("[5,3,3]", 3,
		      LN "," CONV(20, 3, 1, 1) "," LNI("1") "," ADD(
			  "1,2") "," FC(8) "," LNE(1e-3) "," GELU "," FC(3)),
		  4, 2);
	/* one thread, a single channel's norm (the output is the shift) */
	check_net(NET("[3,4,4]", 3,
		      CONV(1, 3, 1, 1) "," LN "," GELU
				       "," CONV(4, 1, 1, 0) "," GELU "," FC(3)),
		  2, 1);
}

HP_TEST(engine_groupnorm)
{
	/* after a blocked conv (reordered to nchw and back), relu in place
	 * on its output, after a pooling; instance norm (groups = channels)
	 * and one group (a layer norm over channels and positions) */
	check_net(
	    NET("[3,6,6]", 3,
		CONV(8, 3, 1, 1) "," GN(
		    4) "," RELU
		       "," POOL("max", 2, 2, 0) "," CONV(16, 3, 1, 1) "," GN(
			   16) "," GELU "," GNE(1, 1e-3) "," FC(3)),
	    4, 2);
	/* of the network input, of an input with a second reader (its
	 * gradient added to the other's), on flat data; one thread */
	check_net(NET("[4,3,3]", 3,
		      GN(2) "," CONV(6, 3, 1, 1) "," GNI(3, "1") "," ADD(
			  "1,2") "," FC(8) "," GN(2) "," FC(3)),
		  3, 1);
}

HP_TEST(engine_prelu)
{
	/* a slope a channel after a blocked conv and after a bn (its relu
	 * not fused: prelu is not one), a shared one after a pooling and on
	 * flat data, a dropout after it; one of the network input itself
	 * with a second reader */
	check_net(
	    NET("[3,6,6]", 3,
		CONV(8, 3, 1, 1) "," PRELUC "," CONV(
		    8, 3, 1, 1) "," BN "," PRELUC
				"," POOL("max", 2, 2, 0) "," PRELU "," DROPOUT(
				    0.3) "," FC(8) "," PRELU "," FC(3)),
	    4, 2);
	check_net(NET("[2,4,4]", 3,
		      PRELUC "," CONV(2, 3, 1, 1) "," ADD("0,1") "," FC(
			  6) "," PRELUC "," FC(3)),
		  3, 1);
}

HP_TEST(engine_leakyrelu_tanh_elu)
{
	/* each after a bn, a conv and an fc; each followed by a dropout,
	 * which must not run in place (their gradients come from their
	 * outputs, which it would scale) and by a relu */
	check_net(NET("[3,6,6]", 3,
		      CONV(8, 3, 1,
			   1) "," BN
			      "," LEAKY(0.1) "," POOL("max", 2, 2, 0) "," CONV(
				  16, 3, 1, 1) "," TANH
					       "," DROPOUT(0.3) "," FC(
						   8) "," ELU(1.0) "," FC(3)),
		  4, 2);
	check_net(
	    NET("[2,5,5]", 3,
		CONV(6, 3, 1, 1) "," ELU(0.5) "," DROPOUT(0.5) "," CONV(
		    6, 3, 1,
		    1) "," LEAKY(0) "," RELU
				    "," CONV(
					4, 1, 1,
					0) "," TANH "," RELU
					   "," FC(6) "," LEAKY(0.3) "," DROPOUT(
					       0.2) "," FC(3)),
	    3, 1);
}

HP_TEST(engine_softplus_and_mish)
{
	/* softplus alone, and Mish (x tanh(softplus(x))) as PyTorch
	 * exports it, on an image and on flat data */
	check_net(
	    NET("[3,5,5]", 3,
		CONV(8, 3, 1, 1) "," SOFTPLUS "," TANH "," MUL("0,2") "," CONV(
		    4, 3, 1, 1) "," SOFTPLUS
				"," FC(6) "," SOFTPLUS "," TANH
					  "," MUL("6,8") "," FC(3)),
	    3, 2);
}

HP_TEST(engine_scale)
{
	/* the input scaled (x / 255 - 0.5), a residual branch times 0.2, a
	 * negated shift on flat data */
	check_net(NET("[3,5,5]", 3,
		      SCALE(0.0039215686, -0.5) "," CONV(
			  8, 3, 1,
			  1) "," RELU
			     "," CONV(8, 3, 1, 1) "," SCALE(0.2, 0) "," ADD(
				 "2,4") "," FC(6) "," SCALE(-1, 0.5) "," FC(3)),
		  4, 2);
	/* a factor and a shift per channel: the input normalized as
	 * torchvision's (x - mean) / std, and after a blocked conv of 3
	 * channels (reordered to nchw and back); one thread */
	check_net(NET("[3,5,5]", 3,
		      "{\"type\":\"scale\",\"factor\":[4.367,4.464,4.444],"
		      "\"shift\":[-2.118,-2.036,-1.804]}," CONV(
			  3, 3, 1,
			  1) ","
			     "{\"type\":\"scale\",\"factor\":[0.5,-2,3]}," RELU
			     "," FC(3)),
		  4, 1);
}

HP_TEST(engine_conv_dilated)
{
	/* a 3x3 conv dilated 2 padded 2 (the image kept), one strided and
	 * dilated 3, a depthwise one dilated 2 (not the engine's own
	 * depthwise weight gradient, which has no dilation), a grouped 2x2
	 * dilated 2 without padding */
	check_net(NET("[3,9,9]", 3,
		      DCONV(8, 3, 1, 2, 2,
			    1) "," RELU
			       "," DCONV(8, 3, 2, 1, 3, 1) "," DCONV(
				   8, 3, 1, 2, 2, 8) "," DCONV(4, 2, 1, 0, 2,
							       2) "," FC(3)),
		  3, 2);
	/* one thread, a dilated conv of the network input whose span is
	 * the whole image */
	check_net(NET("[2,5,5]", 3, DCONV(4, 3, 1, 0, 2, 1) "," FC(3)), 2, 1);
}

HP_TEST(engine_conv_asymmetric_pads)
{
	/* "same" padding of even spans: 0 at the top and left, 1 at the
	 * bottom and right (a 2x2 kernel at stride 1, a 3x3 at stride 2 on
	 * an even map), then more at the top than the bottom, on a grouped
	 * and a non-square kernel */
	check_net(NET("[3,8,8]", 3,
		      APCONV(6, 2, 2, 1, 0, 0, 1, 1, 1) "," RELU "," APCONV(
			  6, 3, 3, 2, 0, 0, 1, 1,
			  1) "," APCONV(6, 3, 1, 1, 2, 0, 0, 0, 3) "," FC(3)),
		  3, 2);
}

HP_TEST(engine_conv_rectangular)
{
	/* Inception's 1x7 then 7x1 (pads 0,3 and 3,0) on a non-square
	 * image, a strided 3x1, a grouped 1x3 and a depthwise 1x5 (oneDNN's
	 * own weight gradient, not the square depthwise one's) */
	check_net(NET("[3,9,8]", 3,
		      RCONV(8, 1, 7, 1, 0, 3,
			    1) "," BN "," RELU
			       "," RCONV(8, 7, 1, 1, 3, 0, 1) "," RCONV(
				   8, 3, 1, 2, 1, 0,
				   1) "," RCONV(8, 1, 3, 1, 0, 1,
						2) "," RCONV(8, 1, 5, 1, 0, 2,
							     8) "," FC(3)),
		  3, 2);
	/* unequal pads on a square kernel, and no padding on one axis */
	check_net(NET("[2,6,6]", 3,
		      RCONV(4, 3, 3, 1, 1, 0, 1) "," RCONV(4, 2, 3, 1, 0, 1,
							   1) "," FC(3)),
		  3, 2);
}

HP_TEST(engine_concat_blocked)
{
	/* channels in whole blocks of 16 (a DenseNet's): the output and its
	 * gradient's views are blocked; the input twice, as DenseNet reads
	 * each layer's output in every later concat of its block */
	check_net(NET("[3,5,5]", 3,
		      CONV(16, 3, 1, 1) "," CONVI(32, 1, 1, 0, "0") "," CONCAT(
			  "0,1") "," BN "," RELU
				 "," CONVI(16, 1, 1, 0, "4") "," CONCAT(
				     "0,1,5") "," BN "," FC(3)),
		  3, 2);
}

HP_TEST(engine_same_input_twice)
{
	/* one activation given twice to an add and to a concat (the input
	 * twice around a conv's output): both slots' gradients are summed;
	 * the concat's backward must take its slots in the plan's acc[]
	 * order (descending), or the last slot's write loses the others */
	check_net(NET("[2,4,4]", 3, CONV(3, 3, 1, 1) "," ADD("0,0") "," FC(3)),
		  3, 2);
	check_net(
	    NET("[2,4,4]", 3, CONV(3, 3, 1, 1) "," CONCAT("-1,0,-1") "," FC(3)),
	    3, 2);
}

HP_TEST(engine_avg_pool_padded)
{
	/* average pooling with padding (PyTorch's count_include_pad) and an
	 * add of three inputs */
	check_net(
	    NET("[2,7,7]", 3,
		CONV(4, 3, 1, 1) "," POOL("avg", 3, 2, 1) "," RELU "," CONV(
		    4, 1, 1, 0) "," ADD("1,2,3") "," POOL("avg", 2, 1,
							  0) "," FC(3)),
	    3, 2);
}

HP_TEST(engine_dag_refused)
{
	struct hp_spec s;
	struct hp_error err = {0};
	static const char *const bad[] = {
	    /* add of unequal shapes */
	    NET("[3,6,6]", 0,
		CONV(4, 3, 1, 1) "," CONV(5, 3, 1, 1) "," ADD("0,1")),
	    /* an output nobody reads */
	    NET("[3,6,6]", 0, CONV(4, 3, 1, 1) "," CONVI(4, 3, 1, 1, "-1")),
	    /* a later layer as input */
	    NET("[3,6,6]", 0, CONVI(4, 3, 1, 1, "1") "," CONV(4, 3, 1, 1)),
	    /* groups that do not divide the channels */
	    NET("[3,6,6]", 0, GCONV(4, 3, 1, 1, 2)),
	    /* add with one input */
	    NET("[3,6,6]", 0, CONV(4, 3, 1, 1) "," ADD("0")),
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (hp_spec_parse_only(bad[i], strlen(bad[i]), &s, &err) == 0)
			HP_FAIL("spec %zu accepted", i);
		ASSERT(err.msg[0] != 0);
	}
}

HP_TEST(engine_dag_json_round_trip)
{
	const char *js = NET(
	    "[3,8,8]", 4,
	    CONV(8, 3, 2, 1) "," CLIP(0, 6) "," GCONV(8, 3, 1, 1, 8) "," ADD(
		"0,2") "," CONCAT("3,1") "," GAP "," FLATTEN "," FC(4));
	struct hp_spec a, b;
	struct hp_error err = {0};
	char *out;

	parse(js, &a);
	out = hp_spec_to_json(&a);
	ASSERT(out != NULL);
	parse(out, &b);
	ASSERT_EQ_INT(a.nlayers, b.nlayers);
	for (int i = 0; i < a.nlayers; i++) {
		ASSERT_EQ_INT(a.layers[i].type, b.layers[i].type);
		ASSERT_EQ_INT(a.layers[i].ninputs, b.layers[i].ninputs);
		ASSERT_EQ_INT(a.layers[i].groups, b.layers[i].groups);
		for (int k = 0; k < a.layers[i].ninputs; k++)
			ASSERT_EQ_INT(a.layers[i].inputs[k],
				      b.layers[i].inputs[k]);
	}
	ASSERT(b.layers[1].hi == 6);
	/* the graph of a DAG spec analyses */
	{
		struct hp_graph *g = hp_spec_parse(js, strlen(js), &err);
		struct hp_features f;
		ASSERT(g != NULL);
		ASSERT(hp_analyze(g, 2, NULL, 0, &f, &err) == 0);
		/* conv 3->8 k3 on 4x4 out, depthwise 8 k3, fc 16->4 */
		ASSERT_EQ_INT(f.macs_per_sample,
			      8 * 3 * 9 * 16 + 8 * 9 * 16 + 16 * 4);
		ASSERT_EQ_INT(f.nskipped, 0);
		hp_features_release(&f);
		hp_graph_free(g);
	}
	free(out);
	hp_spec_release(&a);
	hp_spec_release(&b);
}

/* The spec of an ONNX model (buf, freed here) at input shape, which the
 * converter must accept. */
/* Whether one of a converted spec's notes says needle. */
static bool has_note(const struct hp_spec *s, const char *needle)
{
	for (int i = 0; i < s->nnotes; i++)
		if (strstr(s->notes[i], needle))
			return true;
	return false;
}

static void onnx_converted(uint8_t *buf, size_t len, const int64_t *shape,
			   struct hp_spec *s)
{
	struct hp_error err = {0};
	struct hp_graph *g = hp_onnx_parse(buf, len, &err);

	free(buf);
	if (!g)
		HP_FAIL("hp_onnx_parse: %s", err.msg);
	if (hp_spec_from_graph(g, shape, true, s, &err))
		HP_FAIL("hp_spec_from_graph: %s", err.msg);
	hp_graph_free(g);
}

/* A converted spec of exactly n layers, of the types want[]. */
static void expect_layers(const struct hp_spec *s,
			  const enum hp_spec_layer_type *want, int n)
{
	ASSERT_EQ_INT(s->nlayers, n);
	for (int i = 0; i < n; i++)
		if (s->layers[i].type != want[i])
			HP_FAIL("layer %d is %s, not %s", i,
				hp_spec_layer_name(s->layers[i].type),
				hp_spec_layer_name(want[i]));
}

/* An ONNX model (buf, freed here) that the converter must refuse, saying
 * needle; variant names it in a failure. */
static void onnx_refused(uint8_t *buf, size_t len, const int64_t *shape,
			 const char *needle, int variant)
{
	struct hp_error err = {0};
	struct hp_spec s;
	struct hp_graph *g = hp_onnx_parse(buf, len, &err);

	free(buf);
	ASSERT(g != NULL);
	ASSERT_EQ_INT(hp_spec_from_graph(g, shape, true, &s, &err), HP_EUNSUPP);
	if (!strstr(err.msg, needle))
		HP_FAIL("variant %d: %s", variant, err.msg);
	hp_graph_free(g);
}

/* A converted spec (released here) through check_net(): the engine
 * against the reference against finite differences.  Returns its JSON
 * (caller frees). */
static char *check_spec_net(struct hp_spec *s)
{
	char *js = hp_spec_to_json(s);

	ASSERT(js != NULL);
	hp_spec_release(s);
	check_net(js, 3, 2);
	return js;
}

/* A small ResNet-like CNN as an ONNX file, as torchvision exports one. */
static uint8_t *small_onnx(size_t *len, bool bad_op)
{
	struct ob *b = ob_new(13);
	int64_t in[4] = {-1, 3, 16, 16}, w1[4] = {8, 3, 3, 3},
		w2[4] = {8, 1, 3, 3}, c8[1] = {8}, fw[2] = {5, 8}, fb[1] = {5};
	int64_t k3[2] = {3, 3}, s1[2] = {1, 1}, s2[2] = {2, 2},
		p1[4] = {1, 1, 1, 1};
	int n;

	ob_input(b, "x", 4, in);
	ob_init(b, "w1", 4, w1);
	ob_init(b, "w2", 4, w2);
	ob_init(b, "fw", 2, fw);
	ob_init(b, "fb", 1, fb);
	ob_init(b, "g", 1, c8);
	ob_init(b, "be", 1, c8);
	ob_init(b, "m", 1, c8);
	ob_init(b, "v", 1, c8);
	n = ob_node(b, "Conv", "x,w1", "c1");
	ob_attr_ints(b, n, "kernel_shape", 2, k3);
	ob_attr_ints(b, n, "strides", 2, s2);
	ob_attr_ints(b, n, "pads", 4, p1);
	ob_node(b, "BatchNormalization", "c1,g,be,m,v", "b1");
	ob_node(b, "Relu", "b1", "r1");
	n = ob_node(b, "MaxPool", "r1", "p1");
	ob_attr_ints(b, n, "kernel_shape", 2, k3);
	ob_attr_ints(b, n, "strides", 2, s1);
	ob_attr_ints(b, n, "pads", 4, p1);
	n = ob_node(b, "Conv", "p1,w2", "c2");
	ob_attr_ints(b, n, "kernel_shape", 2, k3);
	ob_attr_ints(b, n, "pads", 4, p1);
	ob_attr_i(b, n, "group", 8);
	ob_node(b, bad_op ? "Selu" : "Clip", "c2", "a2");
	ob_node(b, "Add", "a2,p1", "s");
	ob_classifier(b, "s");
	return ob_finish(b, len);
}

HP_TEST(engine_onnx_net)
{
	struct hp_error err = {0};
	struct hp_spec s;
	struct hp_graph *g;
	size_t len;
	uint8_t *buf = small_onnx(&len, false);
	int64_t shape[3] = {3, 12, 12};

	onnx_converted(buf, len, shape, &s);
	ASSERT_EQ_INT(s.input[1], 12);
	ASSERT_EQ_INT(s.classes, 5);
	ASSERT_EQ_INT(s.nlayers, 10);
	ASSERT_EQ_INT(s.layers[4].groups, 8);
	ASSERT_EQ_INT(s.layers[6].type, HP_LAYER_ADD);
	ASSERT_EQ_INT(s.layers[6].inputs[1], 3);
	free(check_spec_net(&s));

	/* an op the engine does not run is named */
	buf = small_onnx(&len, true);
	g = hp_onnx_parse(buf, len, &err);
	free(buf);
	ASSERT(g != NULL);
	ASSERT(hp_spec_from_graph(g, NULL, true, &s, &err) == HP_EUNSUPP);
	if (!strstr(err.msg, "Selu"))
		HP_FAIL("message without the op: %s", err.msg);
	hp_graph_free(g);

	/* a graph named in bytes that are not UTF-8 ("caf\xe9" in Latin-1):
	 * the spec's name is escaped, so its JSON (and the trainer's
	 * checkpoint) can be written ("out of memory" before) */
	buf = small_onnx(&len, false);
	g = hp_onnx_parse(buf, len, &err);
	free(buf);
	ASSERT(g != NULL);
	free(g->name);
	ASSERT((g->name = strdup("caf\xe9")) != NULL);
	ASSERT_EQ_INT(hp_spec_from_graph(g, shape, true, &s, &err), 0);
	ASSERT_STR_EQ(s.name, "caf\\xe9");
	{
		char *js = hp_spec_to_json(&s);
		ASSERT(js != NULL);
		free(js);
	}
	hp_spec_release(&s);
	hp_graph_free(g);

	/* a Conv without kernel_shape (ONNX lets the weight say it): the
	 * weight's 3 x 3, padded "same" by auto_pad; 5 x 5 out of 5 x 5 */
	{
		struct ob *b = ob_new(13);
		int64_t in[4] = {-1, 3, 5, 5}, w[4] = {4, 3, 3, 3},
			fw[2] = {2, 4}, fb[1] = {2};
		int k;
		ob_input(b, "x", 4, in);
		ob_init(b, "w", 4, w);
		ob_init(b, "fw", 2, fw);
		ob_init(b, "fb", 1, fb);
		k = ob_node(b, "Conv", "x,w", "c");
		ob_attr_s(b, k, "auto_pad", "SAME_UPPER");
		ob_classifier(b, "c");
		buf = ob_finish(b, &len);
		onnx_converted(buf, len, NULL, &s);
		ASSERT_EQ_INT(s.layers[0].type, HP_LAYER_CONV);
		ASSERT_EQ_INT(s.layers[0].kernel, 3);
		ASSERT_EQ_INT(s.layers[0].pad, 1);
		free(check_spec_net(&s));
	}
}

/*
 * The forms torchvision's exports take beyond ResNets: GoogLeNet's and
 * SqueezeNet's max pools in ceil mode, DenseNet's Concat of one input and
 * of many (24 in its third block), the Pad of zeros PyTorch puts before an
 * average pool, and MNASNet's x.mean([2, 3]) as ReduceMean.  variant: 0
 * as described, 1 an average pool in ceil mode, 2 a Pad of ones, 3 a
 * ReduceMean over the channels.
 */
static uint8_t *torchvision_forms_onnx(size_t *len, int variant)
{
	struct ob *b = ob_new(13);
	int64_t in[4] = {-1, 3, 9, 9}, w1[4] = {6, 3, 3, 3},
		wa[4] = {3, 6, 1, 1}, fw[2] = {4, 30}, fb[1] = {4};
	int64_t k3[2] = {3, 3}, k2[2] = {2, 2}, s2[2] = {2, 2},
		p1[4] = {1, 1, 1, 1}, zero[8] = {0},
		ones[8] = {0, 0, 1, 1, 0, 0, 1, 1}, hw[2] = {2, 3}, ch[1] = {1};
	int n;

	ob_input(b, "x", 4, in);
	ob_init(b, "w1", 4, w1);
	ob_init(b, "wa", 4, wa);
	ob_init(b, "wb", 4, wa);
	ob_init(b, "fw", 2, fw);
	ob_init(b, "fb", 1, fb);
	n = ob_node(b, "Conv", "x,w1", "c1");
	ob_attr_ints(b, n, "kernel_shape", 2, k3);
	ob_attr_ints(b, n, "pads", 4, p1);
	/* 9 -> 5 in ceil mode (4 without) */
	n = ob_node(b, variant == 1 ? "AveragePool" : "MaxPool", "c1", "p1");
	ob_attr_ints(b, n, "kernel_shape", 2, k2);
	ob_attr_ints(b, n, "strides", 2, s2);
	ob_attr_i(b, n, "ceil_mode", 1);
	ob_node(b, "Concat", "p1", "cat1");
	ob_attr_i(b, n + 1, "axis", 1);
	ob_const_i64(b, "pads", 8, variant == 2 ? ones : zero);
	ob_node(b, "Pad", "cat1,pads", "pd");
	n = ob_node(b, "Conv", "pd,wa", "ca");
	ob_attr_ints(b, n, "kernel_shape", 2, (int64_t[]){1, 1});
	n = ob_node(b, "Conv", "pd,wb", "cb");
	ob_attr_ints(b, n, "kernel_shape", 2, (int64_t[]){1, 1});
	/* ten inputs, each branch five times: 30 channels */
	n = ob_node(b, "Concat", "ca,cb,ca,cb,ca,cb,ca,cb,ca,cb", "cat");
	ob_attr_i(b, n, "axis", 1);
	n = ob_node(b, "ReduceMean", "cat", "rm");
	ob_attr_ints(b, n, "axes", variant == 3 ? 1 : 2,
		     variant == 3 ? ch : hw);
	ob_attr_i(b, n, "keepdims", 0);
	n = ob_node(b, "Gemm", "rm,fw,fb", "y");
	ob_attr_i(b, n, "transB", 1);
	ob_output(b, "y");
	return ob_finish(b, len);
}

HP_TEST(engine_onnx_torchvision_forms)
{
	static const char *const refused[] = {NULL, NULL, NULL,
					      "ReduceMean (not over H and W)"};
	struct hp_error err = {0};
	struct hp_spec s;
	size_t len;
	uint8_t *buf = torchvision_forms_onnx(&len, 0);
	int64_t shape[3] = {3, 9, 9}, (*sh)[3];
	char *js;

	onnx_converted(buf, len, shape, &s);
	/* conv, pool, conv, conv, concat, gap, fc: the one-input Concat
	 * and the Pad of zeros pass their input through */
	ASSERT_EQ_INT(s.nlayers, 7);
	ASSERT(s.layers[1].ceil_mode && s.layers[1].pool_max);
	ASSERT_EQ_INT(s.layers[2].ninputs, 0); /* the pool before it */
	ASSERT_EQ_INT(s.layers[3].ninputs, 1);
	ASSERT_EQ_INT(s.layers[3].inputs[0], 1);
	ASSERT_EQ_INT(s.layers[4].type, HP_LAYER_CONCAT);
	ASSERT_EQ_INT(s.layers[4].ninputs, 10);
	ASSERT_EQ_INT(s.layers[5].type, HP_LAYER_GAP);
	sh = calloc((size_t)s.nlayers, sizeof(*sh));
	ASSERT(sh && hp_spec_shapes(&s, sh, NULL, &err) == 0);
	ASSERT_EQ_INT(sh[1][1], 5);
	ASSERT_EQ_INT(sh[4][0], 30);
	free(sh);
	js = check_spec_net(&s);
	ASSERT(strstr(js, "\"ceil_mode\":true"));
	free(js);
	for (int v = 1; v < 4; v++) {
		if (!refused[v])
			continue;
		buf = torchvision_forms_onnx(&len, v);
		onnx_refused(buf, len, shape, refused[v], v);
	}
	/* an average pool in ceil mode (no padding: its last window's
	 * overhang left out, as PyTorch's divisor does) */
	buf = torchvision_forms_onnx(&len, 1);
	onnx_converted(buf, len, shape, &s);
	ASSERT(s.layers[1].ceil_mode && !s.layers[1].pool_max &&
	       !s.layers[1].pool_exclude);
	free(check_spec_net(&s));
	/* a Pad of one zero a side before the 1x1 convs: their padding */
	buf = torchvision_forms_onnx(&len, 2);
	onnx_converted(buf, len, shape, &s);
	ASSERT_EQ_INT(s.nlayers, 7);
	ASSERT(s.layers[2].type == HP_LAYER_CONV && s.layers[2].pad == 1 &&
	       s.layers[3].pad == 1 && !s.layers[2].rect);
	free(check_spec_net(&s));
}

/* EfficientNet's block as torchvision exports it: SiLU as Sigmoid and
 * Mul, and a squeeze-and-excitation gate whose Mul has the broadcast
 * scale first (scale * input); by_const: a Mul by a constant instead. */
static uint8_t *se_onnx(size_t *len, bool by_const)
{
	struct ob *b = ob_new(13);
	int64_t in[4] = {-1, 3, 6, 6}, w1[4] = {8, 3, 3, 3},
		w2[4] = {4, 8, 1, 1}, w3[4] = {8, 4, 1, 1}, fw[2] = {3, 8},
		fb[1] = {3}, one[1] = {1}, k3[2] = {3, 3}, k1[2] = {1, 1},
		p1[4] = {1, 1, 1, 1};
	int n;

	ob_input(b, "x", 4, in);
	ob_init(b, "w1", 4, w1);
	ob_init(b, "w2", 4, w2);
	ob_init(b, "w3", 4, w3);
	ob_init(b, "fw", 2, fw);
	ob_init(b, "fb", 1, fb);
	ob_init(b, "two", 1, one);
	n = ob_node(b, "Conv", "x,w1", "c1");
	ob_attr_ints(b, n, "kernel_shape", 2, k3);
	ob_attr_ints(b, n, "pads", 4, p1);
	ob_node(b, "Sigmoid", "c1", "s1");
	ob_node(b, "Mul", by_const ? "c1,two" : "c1,s1", "silu");
	ob_node(b, "GlobalAveragePool", "silu", "sq");
	n = ob_node(b, "Conv", "sq,w2", "e1");
	ob_attr_ints(b, n, "kernel_shape", 2, k1);
	ob_node(b, "Relu", "e1", "e2");
	n = ob_node(b, "Conv", "e2,w3", "e3");
	ob_attr_ints(b, n, "kernel_shape", 2, k1);
	ob_node(b, "Sigmoid", "e3", "scale");
	ob_node(b, "Mul", "scale,silu", "se");
	ob_classifier(b, "se");
	return ob_finish(b, len);
}

HP_TEST(engine_onnx_squeeze_excitation)
{
	struct hp_spec s;
	size_t len;
	uint8_t *buf = se_onnx(&len, false);
	int64_t shape[3] = {3, 6, 6};

	onnx_converted(buf, len, shape, &s);
	/* conv, sigmoid, mul, gap, conv, relu, conv, sigmoid, mul, gap,
	 * flatten, fc */
	ASSERT_EQ_INT(s.nlayers, 12);
	ASSERT_EQ_INT(s.layers[2].type, HP_LAYER_MUL);
	ASSERT_EQ_INT(s.layers[8].type, HP_LAYER_MUL);
	/* the image first, the scale (C x 1 x 1) second */
	ASSERT_EQ_INT(s.layers[8].inputs[0], 2);
	ASSERT_EQ_INT(s.layers[8].inputs[1], 7);
	free(check_spec_net(&s));
	buf = se_onnx(&len, true);
	onnx_refused(buf, len, shape, "Mul (by a constant)", 1);
}

/* MobileNetV3's hardswish after a conv: opset 14's HardSwish op, or (op13)
 * the HardSigmoid (alpha 1/6) and Mul that opset 13 exports. */
static uint8_t *hardswish_onnx(size_t *len, bool op13)
{
	struct ob *b = ob_new(op13 ? 13 : 14);
	int64_t in[4] = {-1, 3, 6, 6}, w1[4] = {8, 3, 3, 3}, fw[2] = {3, 8},
		fb[1] = {3};
	int n;

	ob_input(b, "x", 4, in);
	ob_init(b, "w1", 4, w1);
	ob_init(b, "fw", 2, fw);
	ob_init(b, "fb", 1, fb);
	ob_conv(b, "x,w1", "c1", 3, 1);
	if (op13) {
		n = ob_node(b, "HardSigmoid", "c1", "hs");
		ob_attr_f(b, n, "alpha", 1.0f / 6);
		ob_attr_f(b, n, "beta", 0.5f);
		ob_node(b, "Mul", "c1,hs", "hw");
	} else {
		ob_node(b, "HardSwish", "c1", "hw");
	}
	ob_classifier(b, "hw");
	return ob_finish(b, len);
}

HP_TEST(engine_onnx_hardswish_forms)
{
	/* one HardSwish op: a hardsigmoid of x and x times it, the spec
	 * opset 13's two ops give, run against the reference */
	struct hp_spec s, s13;
	size_t len;
	int64_t shape[3] = {3, 6, 6};
	char *js, *js13;
	uint8_t *buf = hardswish_onnx(&len, false);

	onnx_converted(buf, len, shape, &s);
	buf = hardswish_onnx(&len, true);
	onnx_converted(buf, len, shape, &s13);
	/* conv, hardsigmoid, mul, gap, flatten, fc */
	ASSERT_EQ_INT(s.nlayers, 6);
	ASSERT_EQ_INT(s.layers[1].type, HP_LAYER_HARDSIGMOID);
	ASSERT(fabs(s.layers[1].alpha - 1.0 / 6) < 1e-7);
	ASSERT(s.layers[1].beta == 0.5);
	ASSERT_EQ_INT(s.layers[2].type, HP_LAYER_MUL);
	ASSERT_EQ_INT(s.layers[2].ninputs, 2);
	ASSERT_EQ_INT(s.layers[2].inputs[0], 0);
	ASSERT_EQ_INT(s.layers[2].inputs[1], 1);
	js13 = hp_spec_to_json(&s13);
	hp_spec_release(&s13);
	js = check_spec_net(&s);
	if (strcmp(js, js13))
		HP_FAIL("HardSwish: %s\nagainst opset 13's %s", js, js13);
	free(js);
	free(js13);
}

/* A conv net whose output is the classes' probabilities: variant 0, no
 * softmax (the logits); 1, Softmax; 2, LogSoftmax (PyTorch's MNIST
 * example); 3, a Softmax an fc reads; 4, a Softmax over the batch. */
static uint8_t *softmax_onnx(size_t *len, int variant)
{
	struct ob *b = ob_new(13);
	int64_t in[4] = {-1, 1, 6, 6}, w1[4] = {4, 1, 3, 3}, fw[2] = {3, 4},
		fb[1] = {3}, f2[2] = {3, 3};
	int n;

	ob_input(b, "x", 4, in);
	ob_init(b, "w1", 4, w1);
	ob_init(b, "fw", 2, fw);
	ob_init(b, "fb", 1, fb);
	ob_init(b, "f2", 2, f2);
	ob_conv(b, "x,w1", "c1", 3, 0);
	ob_node(b, "Relu", "c1", "r1");
	ob_node(b, "GlobalAveragePool", "r1", "gp");
	n = ob_node(b, "Flatten", "gp", "fl");
	ob_attr_i(b, n, "axis", 1);
	n = ob_node(b, "Gemm", "fl,fw,fb", variant ? "z" : "y");
	ob_attr_i(b, n, "transB", 1);
	if (variant) {
		n = ob_node(b, variant == 2 ? "LogSoftmax" : "Softmax", "z",
			    variant == 3 ? "p" : "y");
		ob_attr_i(b, n, "axis", variant == 4 ? 0 : 1);
	}
	if (variant == 3) {
		n = ob_node(b, "Gemm", "p,f2", "y");
		ob_attr_i(b, n, "transB", 1);
	}
	ob_output(b, "y");
	return ob_finish(b, len);
}

HP_TEST(engine_onnx_softmax_output)
{
	/* a final (log-)softmax over the classes is the loss's: the spec is
	 * the logits' net; anywhere else it is an op the engine does not
	 * run */
	struct hp_spec s;
	size_t len;
	int64_t shape[3] = {1, 6, 6};
	uint8_t *buf = softmax_onnx(&len, 0);
	char *js0;

	onnx_converted(buf, len, shape, &s);
	ASSERT_EQ_INT(s.nlayers, 5);
	ASSERT_EQ_INT(s.classes, 3);
	js0 = hp_spec_to_json(&s);
	hp_spec_release(&s);
	ASSERT_EQ_INT(s.nnotes, 0);
	for (int v = 1; v <= 2; v++) {
		char *js;
		buf = softmax_onnx(&len, v);
		onnx_converted(buf, len, shape, &s);
		/* the notes say what was taken as the loss's */
		ASSERT(has_note(&s,
				v == 2 ? "final LogSoftmax" : "final Softmax"));
		js = v == 2 ? check_spec_net(&s) : hp_spec_to_json(&s);
		if (v != 2)
			hp_spec_release(&s);
		if (strcmp(js, js0))
			HP_FAIL("variant %d: %s\nagainst %s", v, js, js0);
		free(js);
	}
	free(js0);
	buf = softmax_onnx(&len, 3);
	onnx_refused(buf, len, shape, "run these ops: Softmax", 3);
	buf = softmax_onnx(&len, 4);
	onnx_refused(buf, len, shape, "run these ops: Softmax", 4);
}

/* LeakyRelu (alpha 0.2, or neg: -0.1), Tanh, Elu (ONNX's default alpha)
 * after convs, and Mish as exported (Softplus, Tanh, Mul). */
static uint8_t *activations_onnx(size_t *len, bool neg)
{
	struct ob *b = ob_new(13);
	int64_t in[4] = {-1, 2, 5, 5}, w1[4] = {6, 2, 3, 3},
		w2[4] = {6, 6, 3, 3}, fw[2] = {3, 6}, fb[1] = {3};
	int n;

	ob_input(b, "x", 4, in);
	ob_init(b, "w1", 4, w1);
	ob_init(b, "w2", 4, w2);
	ob_init(b, "fw", 2, fw);
	ob_init(b, "fb", 1, fb);
	ob_conv(b, "x,w1", "c1", 3, 1);
	n = ob_node(b, "LeakyRelu", "c1", "a1");
	ob_attr_f(b, n, "alpha", neg ? -0.1f : 0.2f);
	ob_node(b, "Tanh", "a1", "a2");
	ob_conv(b, "a2,w2", "c2", 3, 1);
	ob_node(b, "Elu", "c2", "a3");
	ob_node(b, "Softplus", "a3", "sp");
	ob_node(b, "Tanh", "sp", "th");
	ob_node(b, "Mul", "a3,th", "mish");
	ob_classifier(b, "mish");
	return ob_finish(b, len);
}

HP_TEST(engine_onnx_activations)
{
	struct hp_spec s;
	size_t len;
	int64_t shape[3] = {2, 5, 5};
	uint8_t *buf = activations_onnx(&len, false);

	onnx_converted(buf, len, shape, &s);
	/* conv, leakyrelu, tanh, conv, elu, softplus, tanh, mul, gap,
	 * flatten, fc */
	ASSERT_EQ_INT(s.nlayers, 11);
	ASSERT_EQ_INT(s.layers[5].type, HP_LAYER_SOFTPLUS);
	ASSERT_EQ_INT(s.layers[7].type, HP_LAYER_MUL);
	ASSERT_EQ_INT(s.layers[7].inputs[0], 4);
	ASSERT_EQ_INT(s.layers[7].inputs[1], 6);
	ASSERT_EQ_INT(s.layers[1].type, HP_LAYER_LEAKYRELU);
	ASSERT(fabs(s.layers[1].alpha - 0.2) < 1e-7);
	ASSERT_EQ_INT(s.layers[2].type, HP_LAYER_TANH);
	ASSERT_EQ_INT(s.layers[4].type, HP_LAYER_ELU);
	ASSERT(s.layers[4].alpha == 1);
	free(check_spec_net(&s));
	buf = activations_onnx(&len, true);
	onnx_refused(buf, len, shape, "(LeakyRelu): alpha -0.1", 1);
}

/* A max pool 3x3 / 2 on a 6x6 map with its ceil mode written as pads one
 * longer at the ends (PyTorch at opset 9; "same" padding): variant 0; 1,
 * the longer pads first; 2, an average pool so padded; 3, three longer (a
 * 4x4 output: more than ceil mode's). */
static uint8_t *end_pads_onnx(size_t *len, int variant)
{
	struct ob *b = ob_new(9);
	int64_t in[4] = {-1, 2, 6, 6}, w1[4] = {4, 2, 3, 3}, fw[2] = {3, 4},
		fb[1] = {3}, k3[2] = {3, 3}, s2[2] = {2, 2},
		pe[4] = {0, 0, 1, 1}, pb[4] = {1, 1, 0, 0},
		p3[4] = {0, 0, 3, 3};
	int n;

	ob_input(b, "x", 4, in);
	ob_init(b, "w1", 4, w1);
	ob_init(b, "fw", 2, fw);
	ob_init(b, "fb", 1, fb);
	ob_conv(b, "x,w1", "c1", 3, 1);
	n = ob_node(b, variant == 2 ? "AveragePool" : "MaxPool", "c1", "p1");
	ob_attr_ints(b, n, "kernel_shape", 2, k3);
	ob_attr_ints(b, n, "strides", 2, s2);
	ob_attr_ints(b, n, "pads", 4,
		     variant == 1   ? pb
		     : variant == 3 ? p3
				    : pe);
	ob_classifier(b, "p1");
	return ob_finish(b, len);
}

HP_TEST(engine_onnx_maxpool_end_pads)
{
	struct hp_spec s;
	size_t len;
	int64_t shape[3] = {2, 6, 6};
	uint8_t *buf = end_pads_onnx(&len, 0);

	onnx_converted(buf, len, shape, &s);
	/* conv, pool (ceil mode, no padding: 3x3 out), gap, flatten, fc */
	ASSERT_EQ_INT(s.layers[1].type, HP_LAYER_POOL);
	ASSERT(s.layers[1].ceil_mode && s.layers[1].pool_max);
	ASSERT_EQ_INT(s.layers[1].pad, 0);
	ASSERT(has_note(&s, "1 max pool padded longer at the end "
			    "taken in ceil mode"));
	{
		struct hp_error err = {0};
		int64_t(*sh)[3] = calloc((size_t)s.nlayers, sizeof(*sh));
		ASSERT(sh && hp_spec_shapes(&s, sh, NULL, &err) == 0);
		ASSERT_EQ_INT(sh[1][1], 3);
		ASSERT_EQ_INT(sh[1][2], 3);
		free(sh);
	}
	free(check_spec_net(&s));
	for (int v = 1; v <= 3; v++) {
		buf = end_pads_onnx(&len, v);
		onnx_refused(buf, len, shape, "only equal pads", v);
	}
}

/* adaptive_max_pool2d(x, 1) after a conv: GlobalMaxPool of a 5x5 map (or
 * a 5x4 one: wide); with amax, x.amax((2, 3)) (ReduceMax over H and W,
 * without keepdims: no Flatten), or over the width alone when also wide */
static uint8_t *gmp_onnx(size_t *len, bool wide, bool amax)
{
	struct ob *b = ob_new(13);
	int64_t in[4] = {-1, 2, 5, wide ? 4 : 5}, w1[4] = {4, 2, 3, 3},
		fw[2] = {3, 4}, fb[1] = {3};
	int n;

	ob_input(b, "x", 4, in);
	ob_init(b, "w1", 4, w1);
	ob_init(b, "fw", 2, fw);
	ob_init(b, "fb", 1, fb);
	ob_conv(b, "x,w1", "c1", 3, 1);
	if (amax) {
		n = ob_node(b, "ReduceMax", "c1", "fl");
		ob_attr_ints(b, n, "axes", wide ? 1 : 2,
			     wide ? (int64_t[]){3} : (int64_t[]){2, 3});
		ob_attr_i(b, n, "keepdims", 0);
	} else {
		ob_node(b, "GlobalMaxPool", "c1", "g1");
		n = ob_node(b, "Flatten", "g1", "fl");
		ob_attr_i(b, n, "axis", 1);
	}
	n = ob_node(b, "Gemm", "fl,fw,fb", "y");
	ob_attr_i(b, n, "transB", 1);
	ob_output(b, "y");
	return ob_finish(b, len);
}

HP_TEST(engine_onnx_global_max_pool)
{
	struct hp_spec s;
	size_t len;
	int64_t shape[3] = {2, 5, 5}, wide[3] = {2, 5, 4};
	uint8_t *buf = gmp_onnx(&len, false, false);

	onnx_converted(buf, len, shape, &s);
	/* conv, max pool 5x5 / 5, flatten, fc */
	ASSERT_EQ_INT(s.nlayers, 4);
	ASSERT_EQ_INT(s.layers[1].type, HP_LAYER_POOL);
	ASSERT(s.layers[1].pool_max);
	ASSERT_EQ_INT(s.layers[1].kernel, 5);
	ASSERT_EQ_INT(s.layers[1].stride, 5);
	free(check_spec_net(&s));
	buf = gmp_onnx(&len, true, false);
	onnx_refused(buf, len, wide, "(GlobalMaxPool): only of a square map",
		     1);
	/* x.amax((2, 3)): the same pool, the fc reading it flat */
	buf = gmp_onnx(&len, false, true);
	onnx_converted(buf, len, shape, &s);
	ASSERT_EQ_INT(s.nlayers, 3);
	ASSERT(s.layers[1].type == HP_LAYER_POOL && s.layers[1].pool_max &&
	       s.layers[1].kernel == 5);
	ASSERT_EQ_INT(s.layers[2].type, HP_LAYER_FC);
	free(check_spec_net(&s));
	buf = gmp_onnx(&len, true, true);
	onnx_refused(buf, len, wide, "ReduceMax (not over H and W)", 2);
}

/* Global pooling as hand-written code spells it, before a Gemm:
 * variant 0, x.mean(3).mean(2); 1, x.mean(3) then a Relu; 2, a Squeeze of
 * the size-1 axes after a GlobalAveragePool; 3, a Squeeze of the channels
 * (of a 1-channel map); 4, x.sum((2, 3)). */
static uint8_t *pool_forms_onnx(size_t *len, int variant)
{
	struct ob *b = ob_new(13);
	int64_t in[4] = {-1, 2, 4, 4}, w1[4] = {variant == 3 ? 1 : 4, 2, 3, 3},
		fw[2] = {3, 4}, fb[1] = {3};
	int n;

	ob_input(b, "x", 4, in);
	ob_init(b, "w1", 4, w1);
	ob_init(b, "fw", 2, fw);
	ob_init(b, "fb", 1, fb);
	ob_conv(b, "x,w1", "c1", 3, 1);
	if (variant <= 1) {
		n = ob_node(b, "ReduceMean", "c1", "m3");
		ob_attr_ints(b, n, "axes", 1, (int64_t[]){3});
		ob_attr_i(b, n, "keepdims", 0);
		if (variant == 1) {
			ob_node(b, "Relu", "m3", "fl");
		} else {
			n = ob_node(b, "ReduceMean", "m3", "fl");
			ob_attr_ints(b, n, "axes", 1, (int64_t[]){-1});
			ob_attr_i(b, n, "keepdims", 0);
		}
	} else if (variant <= 3) {
		ob_node(b, variant == 2 ? "GlobalAveragePool" : "Relu", "c1",
			"g1");
		n = ob_node(b, "Squeeze", variant == 2 ? "g1,ax23" : "g1,ax1",
			    "fl");
		ob_const_i64(b, "ax23", 2, (int64_t[]){2, 3});
		ob_const_i64(b, "ax1", 1, (int64_t[]){1});
	} else {
		n = ob_node(b, "ReduceSum", "c1,ax23", "fl");
		ob_const_i64(b, "ax23", 2, (int64_t[]){2, 3});
		ob_attr_i(b, n, "keepdims", 0);
	}
	n = ob_node(b, "Gemm", "fl,fw,fb", "y");
	ob_attr_i(b, n, "transB", 1);
	ob_output(b, "y");
	return ob_finish(b, len);
}

HP_TEST(engine_onnx_pool_forms)
{
	static const enum hp_spec_layer_type
	    mean[] = {HP_LAYER_CONV, HP_LAYER_GAP, HP_LAYER_FC},
	    squeeze[] = {HP_LAYER_CONV, HP_LAYER_GAP, HP_LAYER_FLATTEN,
			 HP_LAYER_FC},
	    sum[] = {HP_LAYER_CONV, HP_LAYER_GAP, HP_LAYER_SCALE, HP_LAYER_FC};
	struct hp_spec s;
	size_t len;
	int64_t shape[3] = {2, 4, 4};
	uint8_t *buf = pool_forms_onnx(&len, 0);

	onnx_converted(buf, len, shape, &s);
	expect_layers(&s, mean, 3);
	free(check_spec_net(&s));
	buf = pool_forms_onnx(&len, 1);
	onnx_refused(buf, len, shape, "ReduceMean (not over H and W)", 1);
	buf = pool_forms_onnx(&len, 2);
	onnx_converted(buf, len, shape, &s);
	expect_layers(&s, squeeze, 4);
	free(check_spec_net(&s));
	buf = pool_forms_onnx(&len, 3);
	onnx_refused(buf, len, shape, "Squeeze (not of H or W of size 1)", 3);
	buf = pool_forms_onnx(&len, 4);
	onnx_converted(buf, len, shape, &s);
	expect_layers(&s, sum, 4);
	ASSERT(fabs(s.layers[2].alpha - 16) < 1e-12);
	free(check_spec_net(&s));
}

/* A model's constant arithmetic as PyTorch exports it: the input
 * (x / 255 - 0.5) / 0.5 (three ops, one layer), a residual branch times
 * 0.2, 1 - x of the sum; variant 1: a Div of a constant by the data
 * (not affine); 2: an Add of a stored vector in place of the Mul */
static uint8_t *scale_onnx(size_t *len, int variant)
{
	struct ob *b = ob_new(13);
	int64_t in[4] = {-1, 2, 5, 5}, w1[4] = {4, 2, 3, 3},
		w2[4] = {4, 4, 3, 3}, fw[2] = {3, 4}, fb[1] = {3},
		c4[3] = {4, 1, 1};

	ob_input(b, "x", 4, in);
	ob_init(b, "w1", 4, w1);
	ob_init(b, "w2", 4, w2);
	ob_init(b, "fw", 2, fw);
	ob_init(b, "fb", 1, fb);
	ob_init(b, "vec", 3, c4);
	ob_const_f32(b, "k255", 255.0f);
	ob_const_f32(b, "half", 0.5f);
	ob_const_f32(b, "fifth", 0.2f);
	ob_const_f32(b, "one", 1.0f);
	ob_node(b, "Div", variant == 1 ? "k255,x" : "x,k255", "s1");
	ob_node(b, "Sub", "s1,half", "s2");
	ob_node(b, "Div", "s2,half", "s3");
	ob_conv(b, "s3,w1", "c1", 3, 1);
	ob_node(b, "Relu", "c1", "r1");
	ob_conv(b, "r1,w2", "c2", 3, 1);
	ob_node(b, variant == 2 ? "Add" : "Mul",
		variant == 2 ? "c2,vec" : "c2,fifth", "m2");
	ob_node(b, "Add", "m2,r1", "sum");
	ob_node(b, "Sub", "one,sum", "neg");
	ob_classifier(b, "neg");
	return ob_finish(b, len);
}

HP_TEST(engine_onnx_scale)
{
	struct hp_spec s;
	size_t len;
	int64_t shape[3] = {2, 5, 5};
	uint8_t *buf = scale_onnx(&len, 0);

	onnx_converted(buf, len, shape, &s);
	/* scale, conv, relu, conv, scale, add, scale, gap, flatten, fc */
	ASSERT_EQ_INT(s.nlayers, 10);
	ASSERT_EQ_INT(s.layers[0].type, HP_LAYER_SCALE);
	/* ((x / 255) - 0.5) / 0.5 = x / 127.5 - 1 */
	ASSERT(fabs(s.layers[0].alpha - 1 / 127.5) < 1e-9);
	ASSERT(fabs(s.layers[0].beta + 1) < 1e-9);
	ASSERT_EQ_INT(s.layers[4].type, HP_LAYER_SCALE);
	ASSERT(fabs(s.layers[4].alpha - 0.2) < 1e-7 && s.layers[4].beta == 0);
	ASSERT_EQ_INT(s.layers[5].inputs[1], 2);
	ASSERT_EQ_INT(s.layers[6].type, HP_LAYER_SCALE);
	ASSERT(s.layers[6].alpha == -1 && s.layers[6].beta == 1);
	free(check_spec_net(&s));
	buf = scale_onnx(&len, 1);
	onnx_refused(buf, len, shape, "run these ops: Div", 1);
	buf = scale_onnx(&len, 2);
	onnx_refused(buf, len, shape, "Add (of a constant)", 2);
}

/* A 3x3 conv dilated 2 (padded 2) and a max pool: variant 1, the conv
 * dilated 2 and 1 (not alike); 2, the pool dilated. */
static uint8_t *dilated_onnx(size_t *len, int variant)
{
	struct ob *b = ob_new(13);
	int64_t in[4] = {-1, 2, 8, 8}, w1[4] = {4, 2, 3, 3}, fw[2] = {3, 4},
		fb[1] = {3}, k2[2] = {2, 2}, d2[2] = {2, 2}, d21[2] = {2, 1};
	int n;

	ob_input(b, "x", 4, in);
	ob_init(b, "w1", 4, w1);
	ob_init(b, "fw", 2, fw);
	ob_init(b, "fb", 1, fb);
	n = ob_conv(b, "x,w1", "c1", 3, 2);
	ob_attr_ints(b, n, "dilations", 2, variant == 1 ? d21 : d2);
	n = ob_node(b, "MaxPool", "c1", "p1");
	ob_attr_ints(b, n, "kernel_shape", 2, k2);
	ob_attr_ints(b, n, "strides", 2, k2);
	if (variant == 2)
		ob_attr_ints(b, n, "dilations", 2, d2);
	ob_classifier(b, "p1");
	return ob_finish(b, len);
}

HP_TEST(engine_onnx_dilated)
{
	struct hp_spec s;
	size_t len;
	int64_t shape[3] = {2, 8, 8};
	uint8_t *buf = dilated_onnx(&len, 0);
	char *js;

	onnx_converted(buf, len, shape, &s);
	ASSERT_EQ_INT(s.layers[0].type, HP_LAYER_CONV);
	ASSERT_EQ_INT(s.layers[0].dilation, 2);
	ASSERT_EQ_INT(s.layers[0].pad, 2);
	js = check_spec_net(&s);
	ASSERT(strstr(js, "\"dilation\":2"));
	free(js);
	buf = dilated_onnx(&len, 1);
	onnx_refused(buf, len, shape, "dilation only alike on both axes", 1);
	buf = dilated_onnx(&len, 2);
	onnx_refused(buf, len, shape, "dilation is for convs only", 2);
}

/* A Keras CNN as tf2onnx writes it: an N, H, W, C input and a Transpose
 * to N, C, H, W, Conv, Relu, MaxPool, a Transpose back and a Reshape to
 * 2-D (Keras flattens channels last), Dense as MatMul and Add, Softmax.
 * variant 1: the Transpose after the input read by a Relu too (the input
 * used as N, H, W, C); 2: the flatten's Reshape to 3-D; 3: the input
 * rescaled (x / 255, Keras's Rescaling) before its Transpose; 4: the conv
 * padded "same" (auto_pad SAME_UPPER: 1 a side); 5: the same at stride 2
 * (1 in all: none at the top and left, 1 at the bottom and right); 6: an
 * Identity between the input and its Transpose; 7: the Reshape to
 * (-1, 18), half a sample's 36 features a row (twice the rows: not a
 * flatten). */
static uint8_t *keras_onnx(size_t *len, int variant)
{
	struct ob *b = ob_new(13);
	int64_t in[4] = {-1, 8, 8, 1}, w1[4] = {4, 1, 3, 3}, c4[1] = {4},
		d1[2] = {36, 8}, c8[1] = {8}, d2[2] = {8, 3}, c3[1] = {3},
		k2[2] = {2, 2}, to_nchw[4] = {0, 3, 1, 2},
		to_nhwc[4] = {0, 2, 3, 1}, flat[2] = {-1, 36},
		flat3[3] = {-1, 4, 9}, flat4[2] = {-1, 64}, flat5[2] = {-1, 16},
		flat7[2] = {-1, 18}, s2[2] = {2, 2};
	int n;

	ob_input(b, "x", 4, in);
	ob_init(b, "w1", 4, w1);
	ob_init(b, "b1", 1, c4);
	if (variant == 4 || variant == 5)
		d1[0] = variant == 4 ? 64 : 16;
	if (variant == 7)
		d1[0] = 18;
	ob_init(b, "dw1", 2, d1);
	ob_init(b, "db1", 1, c8);
	ob_init(b, "dw2", 2, d2);
	ob_init(b, "db2", 1, c3);
	ob_init_i64(b, "shape", variant == 2 ? 3 : 2,
		    variant == 2   ? flat3
		    : variant == 4 ? flat4
		    : variant == 5 ? flat5
		    : variant == 7 ? flat7
				   : flat);
	if (variant == 3) {
		ob_const_f32(b, "k255", 255.0f);
		ob_node(b, "Div", "x,k255", "xs");
	}
	if (variant == 6)
		ob_node(b, "Identity", "x", "xs");
	n = ob_node(b, "Transpose", variant == 3 || variant == 6 ? "xs" : "x",
		    "t0");
	ob_attr_ints(b, n, "perm", 4, to_nchw);
	if (variant == 1)
		ob_node(b, "Relu", "x", "unused");
	n = ob_conv(b, "t0,w1,b1", "c1", 3, 0);
	if (variant == 4 || variant == 5)
		ob_attr_s(b, n, "auto_pad", "SAME_UPPER");
	if (variant == 5)
		ob_attr_ints(b, n, "strides", 2, s2);
	ob_node(b, "Relu", "c1", "r1");
	n = ob_node(b, "MaxPool", "r1", "p1");
	ob_attr_ints(b, n, "kernel_shape", 2, k2);
	ob_attr_ints(b, n, "strides", 2, k2);
	n = ob_node(b, "Transpose", "p1", "t1");
	ob_attr_ints(b, n, "perm", 4, to_nhwc);
	ob_node(b, "Reshape", "t1,shape", "f1");
	ob_node(b, "MatMul", "f1,dw1", "m1");
	ob_node(b, "Add", "m1,db1", "a1");
	ob_node(b, "Relu", "a1", "a2");
	ob_node(b, "MatMul", "a2,dw2", "m2");
	ob_node(b, "Add", "m2,db2", "z");
	n = ob_node(b, "Softmax", "z", "y");
	ob_attr_i(b, n, "axis", -1);
	ob_output(b, "y");
	return ob_finish(b, len);
}

HP_TEST(engine_onnx_keras_nhwc)
{
	struct hp_spec s;
	struct hp_error err = {0};
	size_t len;
	int64_t shape[3] = {1, 8, 8};
	uint8_t *buf = keras_onnx(&len, 0);
	struct hp_graph *g;
	struct hp_features f;
	char *js;

	/* without --input-shape: the file's 8 x 8 x 1 is C 1, H 8, W 8 */
	onnx_converted(buf, len, NULL, &s);
	ASSERT_EQ_INT(s.input[0], 1);
	ASSERT_EQ_INT(s.input[1], 8);
	ASSERT_EQ_INT(s.input[2], 8);
	/* conv, relu, pool, flatten, fc, relu, fc */
	ASSERT_EQ_INT(s.nlayers, 7);
	ASSERT_EQ_INT(s.layers[3].type, HP_LAYER_FLATTEN);
	ASSERT_EQ_INT(s.layers[4].type, HP_LAYER_FC);
	ASSERT_EQ_INT(s.layers[4].units, 8);
	ASSERT_EQ_INT(s.classes, 3);
	ASSERT(has_note(&s, "the input is N, H, W, C") &&
	       has_note(&s, "channels-last data flattened") &&
	       has_note(&s, "final Softmax"));
	free(check_spec_net(&s));
	/* --input-shape 1x8x8 (C x H x W) means the same here, and to the
	 * analysis, which counts Keras's parameters */
	buf = keras_onnx(&len, 0);
	onnx_converted(buf, len, shape, &s);
	ASSERT_EQ_INT(s.input[0], 1);
	ASSERT_EQ_INT(s.input[1], 8);
	hp_spec_release(&s);
	buf = keras_onnx(&len, 0);
	g = hp_onnx_parse(buf, len, &err);
	free(buf);
	ASSERT(g != NULL);
	ASSERT_EQ_INT(hp_analyze(g, 2, shape, 3, &f, &err), 0);
	/* conv 9*4 + 4, dense 36*8 + 8, dense 8*3 + 3; the input's width
	 * (not its channel count) */
	ASSERT_EQ_INT(f.params, 40 + 296 + 27);
	ASSERT_EQ_INT(f.input_hw, 8);
	hp_features_release(&f);
	hp_graph_free(g);
	/* rescaled first: a scale layer on the N, H, W, C data */
	buf = keras_onnx(&len, 3);
	onnx_converted(buf, len, shape, &s);
	ASSERT_EQ_INT(s.nlayers, 8);
	ASSERT_EQ_INT(s.layers[0].type, HP_LAYER_SCALE);
	ASSERT(fabs(s.layers[0].alpha * 255 - 1) < 1e-9);
	ASSERT_EQ_INT(s.input[0], 1);
	ASSERT_EQ_INT(s.input[2], 8);
	hp_spec_release(&s);
	/* "same" padding: 1 a side, the 8 x 8 kept */
	buf = keras_onnx(&len, 4);
	onnx_converted(buf, len, shape, &s);
	ASSERT_EQ_INT(s.layers[0].pad, 1);
	ASSERT_EQ_INT(s.layers[3].type, HP_LAYER_FLATTEN);
	free(check_spec_net(&s));
	/* at stride 2: 4 x 4 out, the one row and column of padding at the
	 * bottom and right */
	buf = keras_onnx(&len, 5);
	onnx_converted(buf, len, shape, &s);
	ASSERT(s.layers[0].asym && s.layers[0].rect);
	ASSERT_EQ_INT(s.layers[0].pad, 0);
	ASSERT_EQ_INT(s.layers[0].pad_w, 0);
	ASSERT_EQ_INT(s.layers[0].pad_b, 1);
	ASSERT_EQ_INT(s.layers[0].pad_r, 1);
	js = check_spec_net(&s);
	ASSERT(strstr(js, "\"pad\":[0,0,1,1]"));
	free(js);
	buf = keras_onnx(&len, 6);
	onnx_converted(buf, len, shape, &s);
	ASSERT_EQ_INT(s.nlayers, 7);
	ASSERT(has_note(&s, "the input is N, H, W, C"));
	hp_spec_release(&s);
	buf = keras_onnx(&len, 1);
	onnx_refused(buf, len, NULL, "does not run these ops: Transpose", 1);
	buf = keras_onnx(&len, 2);
	onnx_refused(buf, len, NULL, "Reshape (of channels-last data)", 2);
	buf = keras_onnx(&len, 7);
	onnx_refused(buf, len, NULL, "Reshape (not keeping the batch)", 7);
}

/* ShuffleNetV2's stride-1 unit as torchvision exports it: the channels
 * halved by two Slices (torch.chunk), one half through a 1x1 conv, a relu
 * and a depthwise 3x3 conv, the halves concatenated and shuffled by
 * Reshape (N, 2, C/2, H, W), Transpose (0, 2, 1, 3, 4) and Reshape back.
 * variant 1: a Transpose of other axes; 2: a Slice of every other
 * channel (step 2); 3: the halves by a Split (as other exporters write
 * torch.chunk); 4: a Split along the height. */
static uint8_t *shuffle_onnx(size_t *len, int variant)
{
	struct ob *b = ob_new(13);
	int64_t in[4] = {-1, 3, 6, 6}, w1[4] = {8, 3, 3, 3},
		w2[4] = {4, 4, 1, 1}, wd[4] = {4, 1, 3, 3}, fw[2] = {3, 8},
		fb[1] = {3}, k3[2] = {3, 3}, k1[2] = {1, 1},
		p1[4] = {1, 1, 1, 1}, s5[5] = {0, 2, 4, 6, 6},
		s4[4] = {0, 8, 6, 6}, perm[5] = {0, 2, 1, 3, 4},
		perm_other[5] = {0, 1, 2, 4, 3};
	int n;

	ob_input(b, "x", 4, in);
	ob_init(b, "w1", 4, w1);
	ob_init(b, "w2", 4, w2);
	ob_init(b, "wd", 4, wd);
	ob_init(b, "fw", 2, fw);
	ob_init(b, "fb", 1, fb);
	ob_const_i64(b, "zero", 1, (int64_t[]){0});
	ob_const_i64(b, "four", 1, (int64_t[]){4});
	ob_const_i64(b, "eight", 1, (int64_t[]){8});
	ob_const_i64(b, "axis1", 1, (int64_t[]){1});
	ob_const_i64(b, "step", 1, (int64_t[]){variant == 2 ? 2 : 1});
	ob_const_i64(b, "s5", 5, s5);
	ob_const_i64(b, "s4", 4, s4);
	n = ob_node(b, "Conv", "x,w1", "c1");
	ob_attr_ints(b, n, "kernel_shape", 2, k3);
	ob_attr_ints(b, n, "pads", 4, p1);
	if (variant >= 3) {
		/* the halves by one Split (opset 13: sizes as an input) */
		ob_const_i64(b, "sizes", 2, (int64_t[]){4, 4});
		n = ob_node(b, "Split", "c1,sizes", "x1,x2");
		ob_attr_i(b, n, "axis", variant == 4 ? 2 : 1);
	} else {
		ob_node(b, "Slice", "c1,zero,four,axis1,step", "x1");
		ob_node(b, "Slice", "c1,four,eight,axis1", "x2");
	}
	n = ob_node(b, "Conv", "x2,w2", "b1");
	ob_attr_ints(b, n, "kernel_shape", 2, k1);
	ob_node(b, "Relu", "b1", "b2");
	n = ob_node(b, "Conv", "b2,wd", "b3");
	ob_attr_ints(b, n, "kernel_shape", 2, k3);
	ob_attr_ints(b, n, "pads", 4, p1);
	ob_attr_i(b, n, "group", 4);
	n = ob_node(b, "Concat", "x1,b3", "cat");
	ob_attr_i(b, n, "axis", 1);
	ob_node(b, "Reshape", "cat,s5", "g5");
	n = ob_node(b, "Transpose", "g5", "t5");
	ob_attr_ints(b, n, "perm", 5, variant == 1 ? perm_other : perm);
	ob_node(b, "Reshape", "t5,s4", "shuf");
	ob_classifier(b, "shuf");
	return ob_finish(b, len);
}

HP_TEST(engine_onnx_shufflenet_unit)
{
	static const char *const refused[] = {
	    NULL, "Transpose", "(Slice): only a range", NULL,
	    "(Split): only of an image batch's channels"};
	struct hp_spec s;
	size_t len;
	uint8_t *buf = shuffle_onnx(&len, 0);
	int64_t shape[3] = {3, 6, 6};
	char *js;

	onnx_converted(buf, len, shape, &s);
	/* conv, slice, slice, conv, relu, conv, concat, shuffle, gap,
	 * flatten, fc */
	ASSERT_EQ_INT(s.nlayers, 11);
	ASSERT_EQ_INT(s.layers[1].type, HP_LAYER_SLICE);
	ASSERT_EQ_INT(s.layers[1].start, 0);
	ASSERT_EQ_INT(s.layers[1].channels, 4);
	ASSERT_EQ_INT(s.layers[2].type, HP_LAYER_SLICE);
	ASSERT_EQ_INT(s.layers[2].start, 4);
	ASSERT_EQ_INT(s.layers[2].inputs[0], 0);
	ASSERT_EQ_INT(s.layers[5].groups, 4);
	ASSERT_EQ_INT(s.layers[6].inputs[0], 1);
	ASSERT_EQ_INT(s.layers[7].type, HP_LAYER_SHUFFLE);
	ASSERT_EQ_INT(s.layers[7].groups, 2);
	js = check_spec_net(&s);
	/* the Split form gives the same spec */
	buf = shuffle_onnx(&len, 3);
	onnx_converted(buf, len, shape, &s);
	{
		char *js3 = hp_spec_to_json(&s);
		ASSERT(js3 != NULL);
		if (strcmp(js, js3))
			HP_FAIL("Split: %s\nSlices: %s", js3, js);
		free(js3);
	}
	hp_spec_release(&s);
	free(js);
	for (int v = 1; v < 5; v++) {
		if (!refused[v])
			continue;
		buf = shuffle_onnx(&len, v);
		onnx_refused(buf, len, shape, refused[v], v);
	}
}

/* Inception's forms as torchvision exports them: a 1x7 conv (pads 0, 3)
 * and a 7x1 (3, 0), and an average pool with padding as a Pad of zeros
 * and the pool.  variant 1: a max pool after the Pad; 2: a Pad of ones;
 * 3: a Pad on one side only. */
static uint8_t *inception_onnx(size_t *len, int variant)
{
	struct ob *b = ob_new(13);
	int64_t in[4] = {-1, 3, 7, 7}, w1[4] = {4, 3, 1, 7},
		w2[4] = {5, 4, 7, 1}, fw[2] = {3, 5}, fb[1] = {3},
		k3[2] = {3, 3}, one[2] = {1, 1};
	int64_t pads[8] = {0, 0, 1, 1, 0, 0, 1, 1},
		pads_one_side[8] = {0, 0, 1, 1, 0, 0, 0, 0};
	int n;

	ob_input(b, "x", 4, in);
	ob_init(b, "w1", 4, w1);
	ob_init(b, "w2", 4, w2);
	ob_init(b, "fw", 2, fw);
	ob_init(b, "fb", 1, fb);
	ob_const_i64(b, "pads", 8, variant == 3 ? pads_one_side : pads);
	ob_const_f32(b, "value", variant == 2 ? 1.0f : 0.0f);
	n = ob_node(b, "Conv", "x,w1", "c1");
	ob_attr_ints(b, n, "kernel_shape", 2, (int64_t[]){1, 7});
	ob_attr_ints(b, n, "pads", 4, (int64_t[]){0, 3, 0, 3});
	n = ob_node(b, "Conv", "c1,w2", "c2");
	ob_attr_ints(b, n, "kernel_shape", 2, (int64_t[]){7, 1});
	ob_attr_ints(b, n, "pads", 4, (int64_t[]){3, 0, 3, 0});
	n = ob_node(b, "Pad", "c2,pads,value", "pd");
	ob_attr_s(b, n, "mode", "constant");
	n = ob_node(b, variant == 1 ? "MaxPool" : "AveragePool", "pd", "ap");
	ob_attr_ints(b, n, "kernel_shape", 2, k3);
	ob_attr_ints(b, n, "strides", 2, one);
	ob_classifier(b, "ap");
	return ob_finish(b, len);
}

HP_TEST(engine_onnx_inception_forms)
{
	struct hp_spec s;
	size_t len;
	uint8_t *buf = inception_onnx(&len, 0);
	int64_t shape[3] = {3, 7, 7};
	char *js;

	onnx_converted(buf, len, shape, &s);
	/* conv 1x7, conv 7x1, avg pool (the Pad's 1 its padding), gap,
	 * flatten, fc */
	ASSERT_EQ_INT(s.nlayers, 6);
	ASSERT(s.layers[0].rect && s.layers[0].kernel == 1 &&
	       s.layers[0].kernel_w == 7 && s.layers[0].pad == 0 &&
	       s.layers[0].pad_w == 3);
	ASSERT(s.layers[1].rect && s.layers[1].kernel == 7 &&
	       s.layers[1].kernel_w == 1 && s.layers[1].pad == 3 &&
	       s.layers[1].pad_w == 0);
	ASSERT_EQ_INT(s.layers[2].type, HP_LAYER_POOL);
	ASSERT(!s.layers[2].pool_max);
	ASSERT_EQ_INT(s.layers[2].pad, 1);
	js = check_spec_net(&s);
	ASSERT(strstr(js, "\"kernel\":[1,7]") && strstr(js, "\"pad\":[0,3]"));
	free(js);
	for (int v = 1; v < 4; v++) {
		static const char *const why[4] = {
		    NULL, "Pad (of zeros, before an op that does not take it",
		    "Pad (not of zeros)",
		    "Pad (of zeros, unlike on the sides of a pool)"};
		buf = inception_onnx(&len, v);
		onnx_refused(buf, len, shape, why[v], v);
	}
}

/* A spec from an ONNX file of the repository at input shape chw. */
static void onnx_spec(const char *rel, int64_t c, int64_t hw, struct hp_spec *s)
{
	struct hp_error err = {0};
	int64_t shape[3] = {c, hw, hw};
	struct hp_graph *g = hp_model_load(hp_test_path(rel), &err);

	if (!g)
		HP_FAIL("%s: %s", rel, err.msg);
	if (hp_spec_from_graph(g, shape, true, s, &err))
		HP_FAIL("%s: %s", rel, err.msg);
	hp_graph_free(g);
}

HP_TEST(engine_estimate_matches_allocated)
{
	/* hp_engine_estimate_bytes() against the bytes the engine then
	 * allocated (hp_engine_peak_bytes(): every buffer it allocates,
	 * scratchpad included), for nets that exercise each kind of
	 * buffer: residual adds (gradients summed through buffers of their
	 * own), depthwise and grouped convs, concat, max pooling's
	 * workspace, batch norm's statistics, dropout's masks, the convs'
	 * scratchpads (sized for the threads), weights reordered for the
	 * backward pass, Adam's second moments */
	static const struct {
		const char *onnx; /* or NULL: spec is the JSON */
		const char *spec;
		int64_t hw, batch;
		enum hp_optimizer opt;
	} nets[] = {
	    {"data/models/resnet18.train.onnx", NULL, 32, 4, HP_OPT_SGD},
	    {"data/models/resnet50.train.onnx", NULL, 32, 2, HP_OPT_ADAM},
	    {"data/models/vgg11.train.onnx", NULL, 32, 2, HP_OPT_SGD},
	    {"tests/data/models/resnext50_32x4d.train.onnx", NULL, 32, 2,
	     HP_OPT_SGD},
	    /* a MobileNetV2 block: depthwise conv, ReLU6, a residual add */
	    {NULL, MOBILENET_BLOCK("[3,32,32]"), 0, 8, HP_OPT_ADAM},
	    {NULL,
	     NET("[3,24,24]", 3,
		 CONV(6, 3, 1, 1) "," RELU "," CONVI(5, 1, 1, 0, "1") "," CONVI(
		     7, 3, 1, 1,
		     "1") "," CONCAT("2,3,1") "," BN "," RELU
					      "," POOL("max", 2, 2,
						       0) "," FC(3)),
	     0, 8, HP_OPT_SGD},
	};
	static const char *files[] = {"tests/data/train/cnn.json",
				      "tests/data/train/cnn_bn.json",
				      "data/models/fmnist-cnn.json"};
	enum {
		NNETS = sizeof(nets) / sizeof(nets[0]),
		NFILES = sizeof(files) / sizeof(files[0])
	};
	struct hp_spec s[NNETS + NFILES];
	int64_t est[NNETS + NFILES], batch[NNETS + NFILES];
	enum hp_optimizer opt[NNETS + NFILES];
	double sum = 0;
	long rss0;

	for (int i = 0; i < NNETS + NFILES; i++) {
		struct hp_error err = {0};
		char *text;
		size_t len;
		if (i < NNETS && nets[i].onnx) {
			onnx_spec(nets[i].onnx, 3, nets[i].hw, &s[i]);
		} else if (i < NNETS) {
			parse(nets[i].spec, &s[i]);
		} else {
			if (hp_read_file(hp_test_path(files[i - NNETS]),
					 1 << 20, &text, &len, &err))
				HP_FAIL("%s", err.msg);
			if (hp_spec_parse_only(text, len, &s[i], &err))
				HP_FAIL("%s: %s", files[i - NNETS], err.msg);
			free(text);
		}
		batch[i] = i < NNETS ? nets[i].batch : 16;
		opt[i] = i < NNETS ? nets[i].opt : HP_OPT_SGD;
	}
	/* every estimate first: none allocates what it counts */
	rss0 = maxrss_kb();
	for (int i = 0; i < NNETS + NFILES; i++) {
		est[i] = hp_engine_estimate_bytes(&s[i], batch[i], opt[i]);
		ASSERT(est[i] > 0);
		sum += (double)est[i];
	}
	ASSERT(sum > 1e9);
	if ((double)(maxrss_kb() - rss0) * 1024 > 0.1 * sum)
		HP_FAIL("estimating %.0f MiB grew the process by %ld KiB",
			sum / 1048576, maxrss_kb() - rss0);
	for (int i = 0; i < NNETS + NFILES; i++) {
		struct hp_engine_opts o;
		struct hp_error err = {0};
		struct hp_engine *e;
		double peak;
		hp_engine_opts_init(&o);
		o.batch = batch[i];
		o.opt = opt[i];
		e = hp_engine_new(&s[i], &o, &err);
		if (!e)
			HP_FAIL("net %d: %s", i, err.msg);
		peak = (double)hp_engine_peak_bytes(e);
		/* never below what is allocated; at most 10% above */
		if (!((double)est[i] >= peak && (double)est[i] <= 1.1 * peak))
			HP_FAIL("net %d (%s): estimate %.2f MiB, allocated "
				"%.2f MiB",
				i, s[i].name ? s[i].name : "",
				est[i] / 1048576.0, peak / 1048576.0);
		hp_engine_free(e);
		hp_spec_release(&s[i]);
	}
}

HP_TEST(engine_sample_too_big)
{
	/* A sample of more than 2^31-1 elements is refused before oneDNN
	 * sees it: its inner product counts a sample's inputs in an int
	 * (2^32 of them died of SIGFPE inside it, 46341^2 gave a smaller
	 * estimate than 46340^2).  ResNet-50 at batch 512 is still
	 * estimated. */
	static const char *const big[] = {
	    NET("[1,65536,65536]", 10, FC(10)),
	    NET("[16,16384,16384]", 10, FC(10)),
	    NET("[1,4096,1048576]", 10, FC(10)),
	    NET("[1,46341,46341]", 10, FC(10)),
	    /* a layer's output over it */
	    NET("[1,32768,32768]", 0, CONV(2, 1, 1, 0)),
	};
	struct hp_engine_opts o;
	struct hp_spec s;
	int64_t est;

	for (size_t i = 0; i < sizeof(big) / sizeof(big[0]); i++) {
		struct hp_error err = {0};
		parse(big[i], &s);
		hp_engine_opts_init(&o);
		o.batch = 1;
		o.threads = 1;
		ASSERT(hp_engine_new(&s, &o, &err) == NULL);
		ASSERT_EQ_INT(err.code, HP_ETOOBIG);
		ASSERT(strstr(err.msg, "too large"));
		ASSERT(strstr(err.msg, "2147483647"));
		ASSERT(strstr(err.msg, i < 4 ? "input" : "layer 0 (conv)"));
		ASSERT_EQ_INT(hp_engine_estimate_bytes(&s, 1, HP_OPT_SGD),
			      HP_ETOOBIG);
		hp_spec_release(&s);
	}
	/* just under the limit: estimated (oneDNN's own count) */
	parse(NET("[1,65536,32767]", 10, FC(10)), &s);
	ASSERT(hp_engine_estimate_bytes(&s, 1, HP_OPT_SGD) > (int64_t)8 << 30);
	hp_spec_release(&s);
	onnx_spec("data/models/resnet50.train.onnx", 3, 224, &s);
	est = hp_engine_estimate_bytes(&s, 512, HP_OPT_SGD);
	ASSERT(est > (int64_t)20 << 30);
	hp_spec_release(&s);
}

HP_TEST(engine_loader_cost_measures)
{
	/* One core's JPEG input pipeline: the fixed test image compresses
	 * to about ImageNet's 4.8 bits a pixel; every figure finite and in
	 * what any CPU of the last two decades does; bad budgets refused. */
	struct hp_loader_cost c;
	struct hp_error err = {0};
	double s;

	ASSERT_EQ_INT(hp_engine_loader_cost(0.2, &c, &err), 0);
	ASSERT(c.jpeg_bits_per_px > 3 && c.jpeg_bits_per_px < 7);
	ASSERT(c.decode_s_per_px > 1e-10 && c.decode_s_per_px < 1e-6);
	ASSERT(c.augment_s_per_px > 1e-10 && c.augment_s_per_px < 1e-5);
	ASSERT(c.samples >= 24);
	s = hp_loader_sample_s(&c, HP_LOADER_SRC_W * HP_LOADER_SRC_H,
			       HP_LOADER_OUT_HW * HP_LOADER_OUT_HW);
	ASSERT(s > 1e-5 && s < 1);
	ASSERT_EQ_INT(hp_engine_loader_cost(0, &c, &err), HP_EINVAL);
	ASSERT_EQ_INT(hp_engine_loader_cost(NAN, &c, &err), HP_EINVAL);
}

/* A layer norm over the channels as PyTorch exports nn.LayerNorm on
 * channels-last data at opset 13: in -> out, pow2 the exponent (2). */
static void ob_layernorm(struct ob *b, const char *in, const char *out,
			 const char *w, const char *bias, const char *pfx,
			 const char *pow2)
{
	char nm[10][32];
	int n;

	if (!strcmp(pow2, "op")) {
		/* opset 17's one op */
		char s[80];
		snprintf(s, sizeof(s), "%s,%s,%s", in, w, bias);
		n = ob_node(b, "LayerNormalization", s, out);
		ob_attr_i(b, n, "axis", -1);
		ob_attr_f(b, n, "epsilon", 1e-6f);
		return;
	}
	for (int k = 0; k < 10; k++)
		snprintf(nm[k], sizeof(nm[k]), "%s%d", pfx, k);
	n = ob_node(b, "ReduceMean", in, nm[0]);
	ob_attr_ints(b, n, "axes", 1, (int64_t[]){-1});
	{
		char s[80];
		snprintf(s, sizeof(s), "%s,%s", in, nm[0]);
		ob_node(b, "Sub", s, nm[1]);
		snprintf(s, sizeof(s), "%s,%s", nm[1], pow2);
		ob_node(b, "Pow", s, nm[2]);
		n = ob_node(b, "ReduceMean", nm[2], nm[3]);
		ob_attr_ints(b, n, "axes", 1, (int64_t[]){-1});
		snprintf(s, sizeof(s), "%s,eps", nm[3]);
		ob_node(b, "Add", s, nm[4]);
		ob_node(b, "Sqrt", nm[4], nm[5]);
		snprintf(s, sizeof(s), "%s,%s", nm[1], nm[5]);
		ob_node(b, "Div", s, nm[6]);
		snprintf(s, sizeof(s), "%s,%s", nm[6], w);
		ob_node(b, "Mul", s, nm[7]);
		snprintf(s, sizeof(s), "%s,%s", nm[7], bias);
		ob_node(b, "Add", s, out);
	}
}

/* ConvNeXt's stem and block as torchvision exports them (opset 13): a
 * strided conv, LayerNorm2d (Transpose to channels-last, the layer norm's
 * ops, Transpose back), a depthwise conv, Transpose, layer norm, MatMul
 * and bias Add, gelu's Div, Erf, Add, Mul, Mul, MatMul and Add,
 * Transpose back, the layer scale's Mul and the residual Add.  variant
 * 1: the variance of a cube (Pow 3); 2: a ReduceMean over the width of
 * channels-last data; 3: a conv of channels-last data; 4: a layer scale
 * on a conv output that the residual reads too; 5: gelu's last Mul by
 * 0.6.  Newer opsets' single ops: 6, LayerNormalization (opset 17); 7,
 * those and Gelu (opset 20); 8, Gelu's tanh form; 9, a LayerNormalization
 * over the width of NCHW data. */
static uint8_t *convnext_onnx(size_t *len, int variant)
{
	struct ob *b = ob_new(variant >= 7 ? 20 : variant == 6 ? 17 : 13);
	int64_t in[4] = {-1, 3, 8, 8}, w0[4] = {8, 3, 2, 2},
		wd[4] = {8, 1, 3, 3}, c8[1] = {8}, c32[1] = {32},
		m1[2] = {8, 32}, m2[2] = {32, 8}, ls[3] = {8, 1, 1},
		fw[2] = {3, 8}, fb[1] = {3}, k2[2] = {2, 2}, k3[2] = {3, 3},
		p1[4] = {1, 1, 1, 1}, to_cl[4] = {0, 2, 3, 1},
		from_cl[4] = {0, 3, 1, 2};
	int n;

	ob_input(b, "x", 4, in);
	ob_init(b, "w0", 4, w0);
	ob_init(b, "wd", 4, wd);
	ob_init(b, "lw0", 1, c8);
	ob_init(b, "lb0", 1, c8);
	ob_init(b, "lw1", 1, c8);
	ob_init(b, "lb1", 1, c8);
	ob_init(b, "m1", 2, m1);
	ob_init(b, "mb1", 1, c32);
	ob_init(b, "m2", 2, m2);
	ob_init(b, "mb2", 1, c8);
	ob_init(b, "ls", 3, ls);
	ob_init(b, "fw", 2, fw);
	ob_init(b, "fb", 1, fb);
	ob_const_f32(b, "two", 2.0f);
	ob_const_f32(b, "three", 3.0f);
	ob_const_f32(b, "eps", 1e-6f);
	ob_const_f32(b, "sqrt2", 1.4142135f);
	ob_const_f32(b, "one", 1.0f);
	ob_const_f32(b, "half", variant == 5 ? 0.6f : 0.5f);
	n = ob_node(b, "Conv", "x,w0", "c0");
	ob_attr_ints(b, n, "kernel_shape", 2, k2);
	ob_attr_ints(b, n, "strides", 2, k2);
	n = ob_node(b, "Transpose", "c0", "t0");
	ob_attr_ints(b, n, "perm", 4, to_cl);
	ob_layernorm(b, "t0", "n0", "lw0", "lb0", "ln0_",
		     variant == 1   ? "three"
		     : variant >= 6 ? "op"
				    : "two");
	n = ob_node(b, "Transpose", "n0", "x1");
	ob_attr_ints(b, n, "perm", 4, from_cl);
	n = ob_node(b, "Conv", "x1,wd", "d0");
	ob_attr_ints(b, n, "kernel_shape", 2, k3);
	ob_attr_ints(b, n, "pads", 4, p1);
	ob_attr_i(b, n, "group", 8);
	n = ob_node(b, "Transpose", "d0", "d1");
	ob_attr_ints(b, n, "perm", 4, to_cl);
	if (variant == 2) {
		n = ob_node(b, "ReduceMean", "d1", "bad");
		ob_attr_ints(b, n, "axes", 1, (int64_t[]){2});
		ob_layernorm(b, "bad", "n1", "lw1", "lb1", "ln1_", "two");
	} else if (variant == 3) {
		n = ob_node(b, "Conv", "d1,wd", "bad");
		ob_attr_ints(b, n, "kernel_shape", 2, k3);
		ob_attr_ints(b, n, "pads", 4, p1);
		ob_attr_i(b, n, "group", 8);
		ob_layernorm(b, "bad", "n1", "lw1", "lb1", "ln1_", "two");
	} else if (variant == 9) {
		/* the layer norm over the width of the NCHW data */
		n = ob_node(b, "LayerNormalization", "d0,lw1,lb1", "n1");
		ob_attr_i(b, n, "axis", -1);
	} else {
		ob_layernorm(b, "d1", "n1", "lw1", "lb1", "ln1_",
			     variant >= 6 ? "op" : "two");
	}
	ob_node(b, "MatMul", "n1,m1", "mm1");
	ob_node(b, "Add", "mb1,mm1", "h1");
	if (variant == 7 || variant == 8) {
		n = ob_node(b, "Gelu", "h1", "g5");
		if (variant == 8)
			ob_attr_s(b, n, "approximate", "tanh");
	} else {
		ob_node(b, "Div", "h1,sqrt2", "g1");
		ob_node(b, "Erf", "g1", "g2");
		ob_node(b, "Add", "g2,one", "g3");
		ob_node(b, "Mul", "h1,g3", "g4");
		ob_node(b, "Mul", "g4,half", "g5");
	}
	ob_node(b, "MatMul", "g5,m2", "mm2");
	ob_node(b, "Add", "mb2,mm2", "h2");
	n = ob_node(b, "Transpose", "h2", "h3");
	ob_attr_ints(b, n, "perm", 4, from_cl);
	ob_node(b, "Mul", "ls,h3", "h4");
	ob_node(b, "Add", variant == 4 ? "h4,h3" : "h4,x1", "y0");
	ob_classifier(b, "y0");
	return ob_finish(b, len);
}

HP_TEST(engine_onnx_convnext_forms)
{
	static const char *const refused[] = {
	    NULL,
	    "Pow (of channels-last data)",
	    "ReduceMean (of channels-last data)",
	    "Conv (of channels-last data)",
	    "Mul (by a constant)",
	    "Mul (of channels-last data)",
	    NULL,
	    NULL,
	    "Gelu (tanh approximation)",
	    "LayerNormalization"};
	struct hp_spec s;
	size_t len;
	uint8_t *buf = convnext_onnx(&len, 0);
	int64_t shape[3] = {3, 8, 8};
	static const enum hp_spec_layer_type want[] = {
	    HP_LAYER_CONV,	HP_LAYER_LAYERNORM, HP_LAYER_CONV,
	    HP_LAYER_LAYERNORM, HP_LAYER_CONV,	    HP_LAYER_GELU,
	    HP_LAYER_CONV,	HP_LAYER_ADD,	    HP_LAYER_GAP,
	    HP_LAYER_FLATTEN,	HP_LAYER_FC};

	onnx_converted(buf, len, shape, &s);
	expect_layers(&s, want, 11);
	/* the layer norms' eps, the MatMuls' 1x1 convs, the residual */
	ASSERT(fabs(s.layers[1].eps - 1e-6) < 1e-9);
	ASSERT_EQ_INT(s.layers[2].groups, 8);
	ASSERT_EQ_INT(s.layers[4].filters, 32);
	ASSERT_EQ_INT(s.layers[4].kernel, 1);
	ASSERT_EQ_INT(s.layers[6].filters, 8);
	ASSERT_EQ_INT(s.layers[7].inputs[0], 6);
	ASSERT_EQ_INT(s.layers[7].inputs[1], 1);
	ASSERT(has_note(&s, "1 layer scale folded into the conv before it"));
	{
		/* the newer opsets' single ops convert to the same spec */
		char *js = hp_spec_to_json(&s);
		for (int v = 6; v <= 7; v++) {
			struct hp_spec s2;
			char *js2;
			buf = convnext_onnx(&len, v);
			onnx_converted(buf, len, shape, &s2);
			js2 = hp_spec_to_json(&s2);
			if (strcmp(js, js2))
				HP_FAIL("variant %d: %s\nagainst %s", v, js2,
					js);
			free(js2);
			hp_spec_release(&s2);
		}
		free(js);
	}
	free(check_spec_net(&s));
	for (int v = 1; v < 10; v++) {
		if (!refused[v])
			continue;
		buf = convnext_onnx(&len, v);
		onnx_refused(buf, len, shape, refused[v], v);
	}
}

/*
 * Group and instance norms as exported: PyTorch's nn.GroupNorm(2, 8) at
 * opset 13 (Reshape to N, 2, -1; InstanceNormalization with constant 1
 * and 0; Reshape back to its input's Shape; Mul and Add of stored C, 1, 1
 * weights), then nn.InstanceNorm2d(8, affine=True) (stored scale and
 * bias), then opset 21's GroupNormalization (4 groups).  Variants: 1, the
 * InstanceNormalization's scale 2 (not a group norm); 2, the Reshape to
 * groups also read by a relu; 3, opset 18's scale per group; 4, the
 * instance norm's scale and bias constant 1 and 0 (affine=False: a note).
 */
static uint8_t *groupnorm_onnx(size_t *len, int variant)
{
	struct ob *b = ob_new(variant == 3 ? 18 : 21);
	int64_t in[4] = {-1, 3, 6, 6}, w0[4] = {8, 3, 3, 3}, c8[1] = {8},
		c4[1] = {4}, c831[3] = {8, 1, 1}, fw[2] = {3, 8}, fb[1] = {3};
	int n;

	ob_input(b, "x", 4, in);
	ob_init(b, "w0", 4, w0);
	ob_init(b, "gw", 3, c831);
	ob_init(b, "gb", 3, c831);
	ob_init(b, "iw", 1, c8);
	ob_init(b, "ib", 1, c8);
	ob_init(b, "nw", 1, variant == 3 ? c4 : c8);
	ob_init(b, "nb", 1, variant == 3 ? c4 : c8);
	ob_init(b, "fw", 2, fw);
	ob_init(b, "fb", 1, fb);
	ob_init_i64(b, "grp", 3, (int64_t[3]){0, 2, -1});
	ob_const_f32v(b, "ones", 2, variant == 1 ? 2.0f : 1.0f);
	ob_const_f32v(b, "zeros", 2, 0.0f);
	ob_const_f32v(b, "ones8", 8, 1.0f);
	ob_const_f32v(b, "zeros8", 8, 0.0f);
	ob_conv(b, "x,w0", "c0", 3, 1);
	ob_node(b, "Reshape", "c0,grp", "r0");
	if (variant == 2)
		ob_node(b, "Relu", "r0", "r0b");
	n = ob_node(b, "InstanceNormalization", "r0,ones,zeros", "i0");
	ob_attr_f(b, n, "epsilon", 1e-3f);
	ob_node(b, "Shape", "c0", "s0");
	ob_node(b, "Reshape", "i0,s0", "r1");
	ob_node(b, "Mul", "r1,gw", "m0");
	ob_node(b, "Add", "m0,gb", "a0");
	ob_node(b, "Relu", "a0", "h0");
	ob_node(b, "InstanceNormalization",
		variant == 4 ? "h0,ones8,zeros8" : "h0,iw,ib", "h1");
	n = ob_node(b, "GroupNormalization", "h1,nw,nb", "h2");
	ob_attr_i(b, n, "num_groups", 4);
	ob_classifier(b, variant == 2 ? "r0b" : "h2");
	return ob_finish(b, len);
}

HP_TEST(engine_onnx_groupnorm_forms)
{
	static const char *const refused[] = {NULL, "InstanceNormalization",
					      "InstanceNormalization",
					      "GroupNormalization (a scale "
					      "per group: opset 18)"};
	struct hp_spec s;
	size_t len;
	uint8_t *buf = groupnorm_onnx(&len, 0);
	int64_t shape[3] = {3, 6, 6};
	static const enum hp_spec_layer_type want[] = {
	    HP_LAYER_CONV,	HP_LAYER_GROUPNORM, HP_LAYER_RELU,
	    HP_LAYER_GROUPNORM, HP_LAYER_GROUPNORM, HP_LAYER_GAP,
	    HP_LAYER_FLATTEN,	HP_LAYER_FC};

	onnx_converted(buf, len, shape, &s);
	expect_layers(&s, want, 8);
	ASSERT_EQ_INT(s.layers[1].groups, 2);
	ASSERT(fabs(s.layers[1].eps - 1e-3) < 1e-9);
	ASSERT_EQ_INT(s.layers[3].groups, 8);
	ASSERT(fabs(s.layers[3].eps - 1e-5) < 1e-9);
	ASSERT_EQ_INT(s.layers[4].groups, 4);
	ASSERT_EQ_INT(s.nnotes, 0);
	free(check_spec_net(&s));
	for (int v = 1; v <= 3; v++) {
		buf = groupnorm_onnx(&len, v);
		onnx_refused(buf, len, shape, refused[v], v);
	}
	buf = groupnorm_onnx(&len, 4);
	onnx_converted(buf, len, shape, &s);
	ASSERT_EQ_INT(s.layers[3].type, HP_LAYER_GROUPNORM);
	ASSERT(has_note(&s, "1 instance norm without a scale and shift"));
	hp_spec_release(&s);
}

/* PRelu as exported: nn.PReLU(8)'s slope of 8, 1, 1 on an image, then
 * nn.PReLU()'s one slope on the fc's flat output.  Variants: 1, a slope of
 * 8 on the image (it would broadcast along the width); 2, a slope that an
 * op computes. */
static uint8_t *prelu_onnx(size_t *len, int variant)
{
	struct ob *b = ob_new(13);
	int64_t in[4] = {-1, 3, 8, 8}, w0[4] = {8, 3, 3, 3},
		c811[3] = {8, 1, 1}, c8[1] = {8}, one[1] = {1}, hw[2] = {5, 8},
		hb[1] = {5}, fw[2] = {3, 5}, fb[1] = {3};
	int n;

	ob_input(b, "x", 4, in);
	ob_init(b, "w0", 4, w0);
	ob_init(b, "a0", variant == 1 ? 1 : 3, variant == 1 ? c8 : c811);
	ob_init(b, "a1", 1, one);
	ob_init(b, "hw", 2, hw);
	ob_init(b, "hb", 1, hb);
	ob_init(b, "fw", 2, fw);
	ob_init(b, "fb", 1, fb);
	ob_conv(b, "x,w0", "c0", 3, 1);
	if (variant == 2) {
		ob_node(b, "ReduceMean", "c0", "am");
		ob_node(b, "PRelu", "c0,am", "p0");
	} else {
		ob_node(b, "PRelu", "c0,a0", "p0");
	}
	ob_node(b, "GlobalAveragePool", "p0", "gp");
	ob_node(b, "Flatten", "gp", "fl");
	n = ob_node(b, "Gemm", "fl,hw,hb", "h");
	ob_attr_i(b, n, "transB", 1);
	ob_node(b, "PRelu", "h,a1", "h1");
	n = ob_node(b, "Gemm", "h1,fw,fb", "y");
	ob_attr_i(b, n, "transB", 1);
	ob_output(b, "y");
	return ob_finish(b, len);
}

HP_TEST(engine_onnx_prelu_forms)
{
	struct hp_spec s;
	size_t len;
	uint8_t *buf = prelu_onnx(&len, 0);
	int64_t shape[3] = {3, 8, 8};

	onnx_converted(buf, len, shape, &s);
	ASSERT_EQ_INT(s.nlayers, 7);
	ASSERT_EQ_INT(s.layers[1].type, HP_LAYER_PRELU);
	ASSERT(s.layers[1].per_channel);
	ASSERT_EQ_INT(s.layers[5].type, HP_LAYER_PRELU);
	ASSERT(!s.layers[5].per_channel);
	free(check_spec_net(&s));
	buf = prelu_onnx(&len, 1);
	onnx_refused(buf, len, shape, "PRelu (a slope not per channel)", 1);
	buf = prelu_onnx(&len, 2);
	onnx_refused(buf, len, shape, "PRelu (of a computed slope)", 2);
}

/* The update applies the gradients hp_engine_grads_set() gave (an
 * all-reduce's), every parameter's: set to zeros, one SGD step with no
 * momentum yet changes nothing; set to the engine's own, the step is the
 * one without the round trip. */
static void check_grads_set_applied(const char *js, int64_t n)
{
	struct hp_engine_opts o;
	struct hp_error err = {0};
	struct fx f, g;
	double loss;
	int64_t ne;
	float *flat, *a, *b;

	hp_engine_opts_init(&o);
	o.threads = 2;
	o.seed = 3;
	fx_open(&f, js, n, &o);
	fx_open(&g, js, n, &o);
	ne = hp_engine_param_elems(f.e);
	flat = calloc((size_t)ne, sizeof(float));
	ASSERT(hp_engine_forward(f.e, &loss, &err) == 0);
	ASSERT(hp_engine_backward(f.e, &err) == 0);
	ASSERT(hp_engine_grads_set(f.e, flat, &err) == 0);
	ASSERT(hp_engine_update(f.e, &err) == 0);
	for (int i = 0; i < f.np; i++) {
		a = malloc((size_t)f.pn[i] * sizeof(float));
		ASSERT(hp_engine_param_get(f.e, i, a, &err) == 0);
		for (int64_t j = 0; j < f.pn[i]; j++)
			if (a[j] != (float)f.p[i][j])
				HP_FAIL("parameter %d moved by a zero gradient "
					"(element %lld: %g to %g)",
					i, (long long)j, f.p[i][j], a[j]);
		free(a);
	}
	/* the engine's own gradients through the flat copy */
	ASSERT(hp_engine_forward(g.e, &loss, &err) == 0);
	ASSERT(hp_engine_backward(g.e, &err) == 0);
	ASSERT(hp_engine_grads_get(g.e, flat, &err) == 0);
	ASSERT(hp_engine_grads_set(g.e, flat, &err) == 0);
	ASSERT(hp_engine_update(g.e, &err) == 0);
	{
		struct fx h;
		fx_open(&h, js, n, &o);
		ASSERT(hp_engine_forward(h.e, &loss, &err) == 0);
		ASSERT(hp_engine_backward(h.e, &err) == 0);
		ASSERT(hp_engine_update(h.e, &err) == 0);
		for (int i = 0; i < g.np; i++) {
			a = malloc((size_t)g.pn[i] * sizeof(float));
			b = malloc((size_t)g.pn[i] * sizeof(float));
			ASSERT(hp_engine_param_get(g.e, i, a, &err) == 0);
			ASSERT(hp_engine_param_get(h.e, i, b, &err) == 0);
			if (memcmp(a, b, (size_t)g.pn[i] * sizeof(float)))
				HP_FAIL("parameter %d: the round trip of the "
					"gradients changed the update",
					i);
			free(a);
			free(b);
		}
		fx_close(&h);
	}
	free(flat);
	fx_close(&f);
	fx_close(&g);
}

HP_TEST(engine_grads_set_is_what_update_applies)
{
	check_grads_set_applied(CONVNEXT_BLOCK_NET, 3);
	check_grads_set_applied(
	    NET("[1,28,28]", 10,
		CONV(16, 4, 4, 0) "," GCONV(16, 7, 1, 3, 16) "," LN "," CONV(
		    64, 1, 1, 0) "," FC(10)),
	    4);
	check_grads_set_applied(SE_NET, 3);
}

HP_TEST(engine_calibrate_refuses_bad_options)
{
	/* before anything is measured or written, each bad option is
	 * refused with the one message that gives the options' ranges; the
	 * result is empty (its release a no-op) */
	struct hp_calibrate_opts o;
	struct hp_calibrate_result r;
	struct hp_error err = {0};

	for (int k = 0; k < 4; k++) {
		hp_calibrate_opts_init(&o);
		ASSERT(o.seconds == 150 && o.ridge == 1 &&
		       o.max_pressure == 0.5 && !o.threads);
		if (k == 0)
			o.seconds = 0;
		else if (k == 1)
			o.ridge = -1;
		else if (k == 2)
			o.max_pressure = NAN;
		else
			o.threads = -2;
		ASSERT_EQ_INT(hp_calibrate_host(&o, &r, &err), HP_EINVAL);
		ASSERT(strstr(err.msg, "seconds must be above 0"));
		ASSERT(r.npoints == 0 && !r.points && !r.meas);
		hp_calibrate_result_release(&r);
	}
}
