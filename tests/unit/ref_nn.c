/*
 * ref_nn.c - the naive double-precision reference net for the engine's
 * tests (see ref_nn.h).  Direct loops, written from the textbook formulas,
 * nothing shared with the engine.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref_nn.h"

/* A pool's output size, counted window by window: window i covers taps
 * i*s - p .. i*s - p + k - 1.  Without ceil mode every tap lies in the
 * padded input; in ceil mode a window is kept while it starts inside the
 * input or its left padding and ends no more than s - 1 past the padded
 * input (ONNX's and PyTorch's ceil((in + 2p - k) / s) + 1, less a last
 * window that would start in the right padding). */
static int64_t pool_size(int64_t in, int64_t k, int64_t s, int64_t p,
			 int ceil_mode)
{
	int64_t o = 0;

	for (int64_t i = 0;; i++) {
		int64_t start = i * s - p, end = start + k; /* past the last */
		if (!ceil_mode ? end > in + p
			       : start >= in || end > in + p + s - 1)
			break;
		o++;
	}
	return o;
}

/* Offset in an h x w plane of tap (u, v) of output (i, j), padded by ph
 * rows and pw columns on each side, the taps d apart (d 1: next to each
 * other), or -1 when the tap falls in the padding. */
static int64_t tapd(int64_t i, int64_t j, int64_t u, int64_t v, int64_t s,
		    int64_t ph, int64_t pw, int64_t d, int64_t h, int64_t w)
{
	int64_t yy = i * s - ph + u * d, xx = j * s - pw + v * d;

	if (yy < 0 || yy >= h || xx < 0 || xx >= w)
		return -1;
	return yy * w + xx;
}

static int64_t tap(int64_t i, int64_t j, int64_t u, int64_t v, int64_t s,
		   int64_t p, int64_t h, int64_t w)
{
	return tapd(i, j, u, v, s, p, p, 1, h, w);
}

/* A conv's padding: top, left, bottom, right. */
struct pads {
	int64_t t, l, b, r;
};

/* Output element q = ((in * o + oc) * oh + i) * ow + j sums the taps
 * r = (icg * kh + u) * kw + v of filter oc over the cg = c / g input
 * channels of its group; a kh x kw kernel whose taps are d apart (it
 * spans d (kh - 1) + 1 rows), padded by p. */
static void gconv_fwd(const double *x, int64_t n, int64_t c, int64_t h,
		      int64_t w, const double *wt, const double *b, int64_t o,
		      int64_t kh, int64_t kw, int64_t s, struct pads p,
		      int64_t d, int64_t g, double *y)
{
	int64_t oh = (h + p.t + p.b - d * (kh - 1) - 1) / s + 1,
		ow = (w + p.l + p.r - d * (kw - 1) - 1) / s + 1;
	int64_t kk = kh * kw, cg = c / g, og = o / g;

	for (int64_t q = 0; q < n * o * oh * ow; q++) {
		int64_t j = q % ow, i = q / ow % oh;
		int64_t oc = q / (ow * oh) % o, in = q / (ow * oh * o);
		int64_t c0 = oc / og * cg;
		double acc = b[oc];
		for (int64_t r = 0; r < cg * kk; r++) {
			int64_t ic = c0 + r / kk, u = r / kw % kh, v = r % kw;
			int64_t t = tapd(i, j, u, v, s, p.t, p.l, d, h, w);
			if (t >= 0)
				acc += x[(in * c + ic) * h * w + t] *
				       wt[oc * cg * kk + r];
		}
		y[q] = acc;
	}
}

void ref_gconv_fwd(const double *x, int64_t n, int64_t c, int64_t h, int64_t w,
		   const double *wt, const double *b, int64_t o, int64_t k,
		   int64_t s, int64_t p, int64_t g, double *y)
{
	gconv_fwd(x, n, c, h, w, wt, b, o, k, k, s, (struct pads){p, p, p, p},
		  1, g, y);
}

static void gconv_bwd(const double *x, int64_t n, int64_t c, int64_t h,
		      int64_t w, const double *wt, int64_t o, int64_t kh,
		      int64_t kw, int64_t s, struct pads p, int64_t d,
		      int64_t g, const double *dy, double *dx, double *dw,
		      double *db)
{
	int64_t oh = (h + p.t + p.b - d * (kh - 1) - 1) / s + 1,
		ow = (w + p.l + p.r - d * (kw - 1) - 1) / s + 1;
	int64_t kk = kh * kw, cg = c / g, og = o / g;

	memset(dx, 0, (size_t)(n * c * h * w) * sizeof(double));
	memset(dw, 0, (size_t)(o * cg * kk) * sizeof(double));
	memset(db, 0, (size_t)o * sizeof(double));
	for (int64_t q = 0; q < n * o * oh * ow; q++) {
		int64_t j = q % ow, i = q / ow % oh;
		int64_t oc = q / (ow * oh) % o, in = q / (ow * oh * o);
		int64_t c0 = oc / og * cg;
		double gq = dy[q];
		db[oc] += gq;
		for (int64_t r = 0; r < cg * kk; r++) {
			int64_t ic = c0 + r / kk, u = r / kw % kh, v = r % kw;
			int64_t t = tapd(i, j, u, v, s, p.t, p.l, d, h, w);
			int64_t xi = (in * c + ic) * h * w + t;
			if (t < 0)
				continue;
			dw[oc * cg * kk + r] += gq * x[xi];
			dx[xi] += gq * wt[oc * cg * kk + r];
		}
	}
}

void ref_gconv_bwd(const double *x, int64_t n, int64_t c, int64_t h, int64_t w,
		   const double *wt, int64_t o, int64_t k, int64_t s, int64_t p,
		   int64_t g, const double *dy, double *dx, double *dw,
		   double *db)
{
	gconv_bwd(x, n, c, h, w, wt, o, k, k, s, (struct pads){p, p, p, p}, 1,
		  g, dy, dx, dw, db);
}

void ref_conv_fwd(const double *x, int64_t n, int64_t c, int64_t h, int64_t w,
		  const double *wt, const double *b, int64_t o, int64_t k,
		  int64_t s, int64_t p, double *y)
{
	ref_gconv_fwd(x, n, c, h, w, wt, b, o, k, s, p, 1, y);
}

void ref_conv_bwd(const double *x, int64_t n, int64_t c, int64_t h, int64_t w,
		  const double *wt, int64_t o, int64_t k, int64_t s, int64_t p,
		  const double *dy, double *dx, double *dw, double *db)
{
	ref_gconv_bwd(x, n, c, h, w, wt, o, k, s, p, 1, dy, dx, dw, db);
}

/* Taps of output (i, j)'s window inside the input. */
static int64_t taps_in(int64_t i, int64_t j, int64_t k, int64_t s, int64_t p,
		       int64_t h, int64_t w)
{
	int64_t m = 0;

	for (int64_t r = 0; r < k * k; r++)
		m += tap(i, j, r / k, r % k, s, p, h, w) >= 0;
	return m;
}

/* Max pool picks the first maximum in the window; padding never wins.
 * Avg pool divides by k*k (padding counted, as PyTorch's default), or with
 * exclude by the taps inside the input. */
void ref_pool_fwd(const double *x, int64_t n, int64_t c, int64_t h, int64_t w,
		  int64_t k, int64_t s, int64_t p, int ceil_mode, int is_max,
		  int exclude, double *y)
{
	int64_t oh = pool_size(h, k, s, p, ceil_mode),
		ow = pool_size(w, k, s, p, ceil_mode);

	for (int64_t q = 0; q < n * c * oh * ow; q++) {
		int64_t j = q % ow, i = q / ow % oh, nc = q / (ow * oh);
		double acc = is_max ? -INFINITY : 0;
		for (int64_t r = 0; r < k * k; r++) {
			int64_t t = tap(i, j, r / k, r % k, s, p, h, w);
			double val;
			if (t < 0)
				continue;
			val = x[nc * h * w + t];
			if (is_max)
				acc = val > acc ? val : acc;
			else
				acc += val;
		}
		y[q] = is_max	 ? acc
		       : exclude ? acc / (double)taps_in(i, j, k, s, p, h, w)
				 : acc / (double)(k * k);
	}
}

void ref_pool_bwd(const double *x, int64_t n, int64_t c, int64_t h, int64_t w,
		  int64_t k, int64_t s, int64_t p, int ceil_mode, int is_max,
		  int exclude, const double *dy, double *dx)
{
	int64_t oh = pool_size(h, k, s, p, ceil_mode),
		ow = pool_size(w, k, s, p, ceil_mode);

	memset(dx, 0, (size_t)(n * c * h * w) * sizeof(double));
	for (int64_t q = 0; q < n * c * oh * ow; q++) {
		int64_t j = q % ow, i = q / ow % oh, nc = q / (ow * oh);
		double best = -INFINITY;
		int64_t arg = -1;
		for (int64_t r = 0; r < k * k; r++) {
			int64_t t = tap(i, j, r / k, r % k, s, p, h, w);
			int64_t xi = nc * h * w + t;
			if (t < 0)
				continue;
			if (!is_max)
				dx[xi] += dy[q] /
					  (double)(exclude ? taps_in(i, j, k, s,
								     p, h, w)
							   : k * k);
			else if (x[xi] > best) {
				best = x[xi];
				arg = xi;
			}
		}
		if (is_max && arg >= 0)
			dx[arg] += dy[q];
	}
}

/* Batch statistics over N, H, W; biased variance. */
static void bn_stats(const double *x, int64_t n, int64_t c, int64_t hw,
		     int64_t ch, double *mean, double *var)
{
	double m = 0, v = 0, cnt = (double)(n * hw);

	for (int64_t in = 0; in < n; in++)
		for (int64_t i = 0; i < hw; i++)
			m += x[(in * c + ch) * hw + i];
	m /= cnt;
	for (int64_t in = 0; in < n; in++)
		for (int64_t i = 0; i < hw; i++) {
			double d = x[(in * c + ch) * hw + i] - m;
			v += d * d;
		}
	*mean = m;
	*var = v / cnt;
}

void ref_bn_fwd(const double *x, int64_t n, int64_t c, int64_t hw,
		const double *g, const double *b, double eps, double *y)
{
	for (int64_t ch = 0; ch < c; ch++) {
		double m, v, is;
		bn_stats(x, n, c, hw, ch, &m, &v);
		is = 1 / sqrt(v + eps);
		for (int64_t in = 0; in < n; in++)
			for (int64_t i = 0; i < hw; i++) {
				int64_t k = (in * c + ch) * hw + i;
				y[k] = g[ch] * (x[k] - m) * is + b[ch];
			}
	}
}

void ref_bn_bwd(const double *x, int64_t n, int64_t c, int64_t hw,
		const double *g, double eps, const double *dy, double *dx,
		double *dg, double *db)
{
	double cnt = (double)(n * hw);

	for (int64_t ch = 0; ch < c; ch++) {
		double m, v, is, sdy = 0, sdyx = 0;
		bn_stats(x, n, c, hw, ch, &m, &v);
		is = 1 / sqrt(v + eps);
		for (int64_t in = 0; in < n; in++)
			for (int64_t i = 0; i < hw; i++) {
				int64_t k = (in * c + ch) * hw + i;
				sdy += dy[k];
				sdyx += dy[k] * (x[k] - m) * is;
			}
		dg[ch] = sdyx;
		db[ch] = sdy;
		for (int64_t in = 0; in < n; in++)
			for (int64_t i = 0; i < hw; i++) {
				int64_t k = (in * c + ch) * hw + i;
				double xh = (x[k] - m) * is;
				dx[k] = g[ch] * is *
					(dy[k] - sdy / cnt - xh * sdyx / cnt);
			}
	}
}

/* Layer norm: at each (sample, position) the c channels' mean and
 * biased variance. */
static void ln_stats(const double *x, int64_t c, int64_t hw, int64_t in,
		     int64_t i, double *mean, double *is, double eps)
{
	double m = 0, v = 0;

	for (int64_t ch = 0; ch < c; ch++)
		m += x[(in * c + ch) * hw + i];
	m /= (double)c;
	for (int64_t ch = 0; ch < c; ch++) {
		double d = x[(in * c + ch) * hw + i] - m;
		v += d * d;
	}
	*mean = m;
	*is = 1 / sqrt(v / (double)c + eps);
}

void ref_ln_fwd(const double *x, int64_t n, int64_t c, int64_t hw,
		const double *g, const double *b, double eps, double *y)
{
	for (int64_t in = 0; in < n; in++)
		for (int64_t i = 0; i < hw; i++) {
			double m, is;
			ln_stats(x, c, hw, in, i, &m, &is, eps);
			for (int64_t ch = 0; ch < c; ch++) {
				int64_t k = (in * c + ch) * hw + i;
				y[k] = g[ch] * (x[k] - m) * is + b[ch];
			}
		}
}

/* dx = is (dxh - mean(dxh) - xh mean(dxh xh)) over the channels, dxh =
 * dy g; dg and db summed over samples and positions. */
void ref_ln_bwd(const double *x, int64_t n, int64_t c, int64_t hw,
		const double *g, double eps, const double *dy, double *dx,
		double *dg, double *db)
{
	for (int64_t ch = 0; ch < c; ch++)
		dg[ch] = db[ch] = 0;
	for (int64_t in = 0; in < n; in++)
		for (int64_t i = 0; i < hw; i++) {
			double m, is, s1 = 0, s2 = 0;
			ln_stats(x, c, hw, in, i, &m, &is, eps);
			for (int64_t ch = 0; ch < c; ch++) {
				int64_t k = (in * c + ch) * hw + i;
				double xh = (x[k] - m) * is;
				s1 += dy[k] * g[ch];
				s2 += dy[k] * g[ch] * xh;
				dg[ch] += dy[k] * xh;
				db[ch] += dy[k];
			}
			for (int64_t ch = 0; ch < c; ch++) {
				int64_t k = (in * c + ch) * hw + i;
				double xh = (x[k] - m) * is;
				dx[k] = is * (dy[k] * g[ch] - s1 / (double)c -
					      xh * s2 / (double)c);
			}
		}
}

/* A group's mean and 1 / sqrt(biased variance + eps) over its k elements
 * (its channels x positions, contiguous in nchw). */
static void gn_stats(const double *x, int64_t k, double eps, double *mean,
		     double *is)
{
	double m = 0, v = 0;

	for (int64_t j = 0; j < k; j++)
		m += x[j];
	m /= (double)k;
	for (int64_t j = 0; j < k; j++)
		v += (x[j] - m) * (x[j] - m);
	*mean = m;
	*is = 1 / sqrt(v / (double)k + eps);
}

void ref_gn_fwd(const double *x, int64_t n, int64_t c, int64_t hw, int64_t g,
		const double *sc, const double *sh, double eps, double *y)
{
	int64_t cg = c / g, k = cg * hw;

	for (int64_t ng = 0; ng < n * g; ng++) {
		double m, is;
		gn_stats(x + ng * k, k, eps, &m, &is);
		for (int64_t j = 0; j < k; j++) {
			int64_t ch = (ng % g) * cg + j / hw;
			y[ng * k + j] =
			    sc[ch] * (x[ng * k + j] - m) * is + sh[ch];
		}
	}
}

/* The chain rule through the variance and the mean, as written out by
 * hand (not the engine's folded form): with dxh = dy sc,
 * dvar = sum dxh (x - m) (-1/2) is^3, dmean = -is sum dxh (the variance's
 * term has sum (x - m) = 0), dx = dxh is + dvar 2 (x - m) / k + dmean / k. */
void ref_gn_bwd(const double *x, int64_t n, int64_t c, int64_t hw, int64_t g,
		const double *sc, double eps, const double *dy, double *dx,
		double *dsc, double *dsh)
{
	int64_t cg = c / g, k = cg * hw;

	for (int64_t ch = 0; ch < c; ch++)
		dsc[ch] = dsh[ch] = 0;
	for (int64_t ng = 0; ng < n * g; ng++) {
		const double *xg = x + ng * k, *dyg = dy + ng * k;
		double m, is, dvar = 0, dmean = 0;
		gn_stats(xg, k, eps, &m, &is);
		for (int64_t j = 0; j < k; j++) {
			int64_t ch = (ng % g) * cg + j / hw;
			double dxh = dyg[j] * sc[ch];
			dvar += dxh * (xg[j] - m) * -0.5 * is * is * is;
			dmean -= dxh * is;
			dsc[ch] += dyg[j] * (xg[j] - m) * is;
			dsh[ch] += dyg[j];
		}
		for (int64_t j = 0; j < k; j++) {
			int64_t ch = (ng % g) * cg + j / hw;
			dx[ng * k + j] = dyg[j] * sc[ch] * is +
					 dvar * 2 * (xg[j] - m) / (double)k +
					 dmean / (double)k;
		}
	}
}

/* gelu: x Phi(x); its derivative Phi(x) + x phi(x). */
static double gelu(double x)
{
	return 0.5 * x * (1 + erf(x / sqrt(2.0)));
}

static double gelu_grad(double x)
{
	return 0.5 * (1 + erf(x / sqrt(2.0))) +
	       x * exp(-0.5 * x * x) / sqrt(2 * M_PI);
}

/* Softmax over the channels at each (sample, position). */
static void softmax_fwd(const double *x, int64_t n, int64_t c, int64_t hw,
			double *y)
{
	for (int64_t q = 0; q < n * hw; q++) {
		const double *xq = x + q / hw * c * hw + q % hw;
		double *yq = y + q / hw * c * hw + q % hw;
		double mx = -INFINITY, sum = 0;
		for (int64_t ch = 0; ch < c; ch++)
			mx = fmax(mx, xq[ch * hw]);
		for (int64_t ch = 0; ch < c; ch++)
			sum += exp(xq[ch * hw] - mx);
		for (int64_t ch = 0; ch < c; ch++)
			yq[ch * hw] = exp(xq[ch * hw] - mx) / sum;
	}
}

/* dx = y * (dy - sum_c dy * y) */
static void softmax_bwd(const double *y, const double *dy, int64_t n, int64_t c,
			int64_t hw, double *dx)
{
	for (int64_t q = 0; q < n * hw; q++) {
		int64_t base = q / hw * c * hw + q % hw;
		double dot = 0;
		for (int64_t ch = 0; ch < c; ch++)
			dot += dy[base + ch * hw] * y[base + ch * hw];
		for (int64_t ch = 0; ch < c; ch++)
			dx[base + ch * hw] =
			    y[base + ch * hw] * (dy[base + ch * hw] - dot);
	}
}

/* Shapes through the spec: sh[i + 1] = C, H, W after layer i, sh[0] the
 * input (C*H*W, 1, 1 once flat). */
struct shape {
	int64_t c, h, w;
};

/* A conv's kernel width and column padding: the spec's kernel_w and
 * pad_w where it says the window is not square (rect), else the height's
 * (written out here rather than through model.h's accessors). */
static int64_t kw_of(const struct hp_spec_layer *L)
{
	return L->rect ? L->kernel_w : L->kernel;
}

static int64_t pw_of(const struct hp_spec_layer *L)
{
	return L->rect ? L->pad_w : L->pad;
}

/* A conv's four pads (asym: the bottom's and right's their own). */
static struct pads pads_of(const struct hp_spec_layer *L)
{
	struct pads p = {L->pad, pw_of(L), L->pad, pw_of(L)};

	if (L->asym) {
		p.b = L->pad_b;
		p.r = L->pad_r;
	}
	return p;
}

/* A conv's dilation (0 in the spec: 1) and the span of a kernel of k taps
 * so dilated. */
static int64_t dil_of(const struct hp_spec_layer *L)
{
	return L->type == HP_LAYER_CONV && L->dilation > 1 ? L->dilation : 1;
}

static int64_t span(const struct hp_spec_layer *L, int64_t k)
{
	return dil_of(L) * (k - 1) + 1;
}

static int in_of(const struct hp_spec_layer *L, int i, int k)
{
	return L->ninputs ? L->inputs[k] : i - 1;
}

static int nin_of(const struct hp_spec_layer *L)
{
	return L->ninputs ? L->ninputs : 1;
}

static int walk(const struct hp_spec *s, struct shape *sh)
{
	sh[0] = (struct shape){s->input[0], s->input[1], s->input[2]};
	for (int i = 0; i < s->nlayers; i++) {
		const struct hp_spec_layer *L = &s->layers[i];
		struct shape a = sh[in_of(L, i, 0) + 1];
		int64_t c = a.c, h = a.h, w = a.w;
		switch (L->type) {
		case HP_LAYER_CONV:
		case HP_LAYER_POOL:
			if (L->asym) {
				struct pads p = pads_of(L);
				h = (h + p.t + p.b - span(L, L->kernel)) /
					L->stride +
				    1;
				w = (w + p.l + p.r - span(L, kw_of(L))) /
					L->stride +
				    1;
				c = L->filters;
				break;
			}
			h = pool_size(h, span(L, L->kernel), L->stride, L->pad,
				      L->ceil_mode);
			w = pool_size(w, span(L, kw_of(L)), L->stride, pw_of(L),
				      L->ceil_mode);
			if (L->type == HP_LAYER_CONV)
				c = L->filters;
			break;
		case HP_LAYER_FC:
			c = L->units;
			h = w = 1;
			break;
		case HP_LAYER_GAP:
			h = w = 1;
			break;
		case HP_LAYER_FLATTEN:
			c = c * h * w;
			h = w = 1;
			break;
		case HP_LAYER_CONCAT:
			for (int k = 1; k < nin_of(L); k++)
				c += sh[in_of(L, i, k) + 1].c;
			break;
		case HP_LAYER_SLICE:
			c = L->channels;
			break;
		default:
			break;
		}
		sh[i + 1] = (struct shape){c, h, w};
	}
	return 0;
}

int ref_nparams(const struct hp_spec *s)
{
	int k = 0;

	for (int i = 0; i < s->nlayers; i++)
		if (s->layers[i].type == HP_LAYER_CONV ||
		    s->layers[i].type == HP_LAYER_BN ||
		    s->layers[i].type == HP_LAYER_LAYERNORM ||
		    s->layers[i].type == HP_LAYER_GROUPNORM ||
		    s->layers[i].type == HP_LAYER_FC)
			k += 2;
		else if (s->layers[i].type == HP_LAYER_PRELU)
			k += 1; /* a weight, no bias */
	return k;
}

static int64_t groups_of(const struct hp_spec_layer *L)
{
	return L->groups > 1 ? L->groups : 1;
}

int64_t ref_param_numel(const struct hp_spec *s, int idx)
{
	struct shape *sh = malloc((size_t)(s->nlayers + 1) * sizeof(*sh));
	int64_t ret = -1;
	int k = 0;

	walk(s, sh);
	for (int i = 0; i < s->nlayers && ret < 0; i++) {
		const struct hp_spec_layer *L = &s->layers[i];
		struct shape a = sh[in_of(L, i, 0) + 1];
		int64_t nw = -1, nb = -1;
		switch (L->type) {
		case HP_LAYER_CONV:
			nw = L->filters * (a.c / groups_of(L)) * L->kernel *
			     kw_of(L);
			nb = L->filters;
			break;
		case HP_LAYER_BN:
		case HP_LAYER_LAYERNORM:
		case HP_LAYER_GROUPNORM:
			nw = nb = a.c;
			break;
		case HP_LAYER_FC:
			nw = L->units * a.c * a.h * a.w;
			nb = L->units;
			break;
		case HP_LAYER_PRELU:
			nw = L->per_channel ? a.c : 1;
			break;
		default:
			break;
		}
		if (nw >= 0) {
			if (k == idx)
				ret = nw;
			else if (nb >= 0 && k + 1 == idx)
				ret = nb;
			k += nb >= 0 ? 2 : 1;
		}
	}
	free(sh);
	return ret;
}

int64_t ref_out_numel(const struct hp_spec *s)
{
	struct shape *sh = malloc((size_t)(s->nlayers + 1) * sizeof(*sh));
	int64_t r;

	walk(s, sh);
	r = sh[s->nlayers].c * sh[s->nlayers].h * sh[s->nlayers].w;
	free(sh);
	return r;
}

static void add_into(double *dst, const double *src, int64_t n)
{
	for (int64_t k = 0; k < n; k++)
		dst[k] += src[k];
}

/* PyTorch's channel_shuffle over n samples of c planes of hw: x viewed as
 * N, g, C/g, H*W; plane (n, u, v) goes to (n, v, u) of the N, C/g, g, H*W
 * transpose, which is the output.  back: the gradient, added from the
 * moved planes back to the grouped ones. */
static void shuffle_planes(const double *from, double *to, int64_t n, int64_t c,
			   int64_t g, int64_t hw, int back)
{
	int64_t cg = c / g;

	for (int64_t in_ = 0; in_ < n; in_++)
		for (int64_t u = 0; u < g; u++)
			for (int64_t v = 0; v < cg; v++) {
				int64_t grouped = ((in_ * g + u) * cg + v) * hw;
				int64_t moved = ((in_ * cg + v) * g + u) * hw;
				if (back)
					add_into(to + grouped, from + moved,
						 hw);
				else
					memcpy(to + moved, from + grouped,
					       (size_t)hw * sizeof(double));
			}
}

double ref_net_run(const struct ref_net *r, const double *x, double *logits,
		   double **dparams, double *dx)
{
	const struct hp_spec *s = r->spec;
	int nl = s->nlayers, pk = 0;
	int64_t n = r->batch;
	struct shape *sh = malloc((size_t)(nl + 1) * sizeof(*sh));
	double **acts = calloc((size_t)nl + 1, sizeof(double *));
	double **grads = calloc((size_t)nl + 1, sizeof(double *));
	int *pidx = calloc((size_t)nl + 1, sizeof(int));
	bool fold_softmax = nl > 0 && s->classes > 0 &&
			    s->layers[nl - 1].type == HP_LAYER_SOFTMAX;
	bool back = dparams || dx;
	double loss = 0;
	int64_t out_n;

	walk(s, sh);
	acts[0] =
	    malloc((size_t)(n * sh[0].c * sh[0].h * sh[0].w) * sizeof(double));
	memcpy(acts[0], x,
	       (size_t)(n * sh[0].c * sh[0].h * sh[0].w) * sizeof(double));
	/* forward: acts[i + 1] is layer i's output */
	for (int i = 0; i < nl; i++) {
		const struct hp_spec_layer *L = &s->layers[i];
		int j0 = in_of(L, i, 0) + 1;
		struct shape a = sh[j0], b = sh[i + 1];
		int64_t na = n * a.c * a.h * a.w, nb = n * b.c * b.h * b.w;
		const double *in = acts[j0];
		double *y = calloc((size_t)nb, sizeof(double));

		pidx[i] = -1;
		acts[i + 1] = y;
		switch (L->type) {
		case HP_LAYER_CONV:
			pidx[i] = pk;
			gconv_fwd(in, n, a.c, a.h, a.w, r->params[pk],
				  r->params[pk + 1], L->filters, L->kernel,
				  kw_of(L), L->stride, pads_of(L), dil_of(L),
				  groups_of(L), y);
			pk += 2;
			break;
		case HP_LAYER_BN:
			pidx[i] = pk;
			ref_bn_fwd(in, n, a.c, a.h * a.w, r->params[pk],
				   r->params[pk + 1], r->bn_eps, y);
			pk += 2;
			break;
		case HP_LAYER_LAYERNORM:
			pidx[i] = pk;
			ref_ln_fwd(in, n, a.c, a.h * a.w, r->params[pk],
				   r->params[pk + 1], L->eps, y);
			pk += 2;
			break;
		case HP_LAYER_GROUPNORM:
			pidx[i] = pk;
			ref_gn_fwd(in, n, a.c, a.h * a.w, L->groups,
				   r->params[pk], r->params[pk + 1], L->eps, y);
			pk += 2;
			break;
		case HP_LAYER_GELU:
			for (int64_t k = 0; k < na; k++)
				y[k] = gelu(in[k]);
			break;
		case HP_LAYER_RELU:
			for (int64_t k = 0; k < na; k++)
				y[k] = in[k] > 0 ? in[k] : 0;
			break;
		case HP_LAYER_CLIP:
			for (int64_t k = 0; k < na; k++)
				y[k] = in[k] < L->lo   ? L->lo
				       : in[k] > L->hi ? L->hi
						       : in[k];
			break;
		case HP_LAYER_SIGMOID:
			for (int64_t k = 0; k < na; k++)
				y[k] = 1 / (1 + exp(-in[k]));
			break;
		case HP_LAYER_TANH:
			for (int64_t k = 0; k < na; k++)
				y[k] = tanh(in[k]);
			break;
		case HP_LAYER_SCALE:
			for (int64_t k = 0; k < na; k++) {
				int64_t ch = (k / (a.h * a.w)) % a.c;
				y[k] = L->nch ? L->chf[ch] * in[k] + L->chs[ch]
					      : L->alpha * in[k] + L->beta;
			}
			break;
		case HP_LAYER_SOFTPLUS:
			for (int64_t k = 0; k < na; k++)
				y[k] = log1p(exp(in[k]));
			break;
		case HP_LAYER_LEAKYRELU:
			for (int64_t k = 0; k < na; k++)
				y[k] = in[k] > 0 ? in[k] : L->alpha * in[k];
			break;
		case HP_LAYER_PRELU: {
			/* slope a[c] (or a[0]) below 0 */
			const double *A = r->params[pk];
			int64_t hw = a.h * a.w;
			pidx[i] = pk;
			for (int64_t k = 0; k < na; k++) {
				double sl =
				    A[L->per_channel ? (k / hw) % a.c : 0];
				y[k] = in[k] > 0 ? in[k] : sl * in[k];
			}
			pk += 1;
			break;
		}
		case HP_LAYER_ELU:
			for (int64_t k = 0; k < na; k++)
				y[k] =
				    in[k] > 0 ? in[k] : L->alpha * expm1(in[k]);
			break;
		case HP_LAYER_HARDSIGMOID:
			for (int64_t k = 0; k < na; k++)
				y[k] = fmin(
				    1, fmax(0, L->alpha * in[k] + L->beta));
			break;
		case HP_LAYER_MUL: {
			/* the second input: the first's shape, or one value
			 * per sample and channel */
			struct shape s2 = sh[in_of(L, i, 1) + 1];
			const double *v = acts[in_of(L, i, 1) + 1];
			int64_t hw = a.h * a.w, per = s2.h * s2.w;
			for (int64_t k = 0; k < na; k++)
				y[k] = in[k] * v[per == 1 ? k / hw : k];
			break;
		}
		case HP_LAYER_POOL:
			ref_pool_fwd(in, n, a.c, a.h, a.w, L->kernel, L->stride,
				     L->pad, L->ceil_mode, L->pool_max,
				     L->pool_exclude || L->ceil_mode, y);
			break;
		case HP_LAYER_GAP:
			for (int64_t q = 0; q < n * a.c; q++) {
				double acc = 0;
				for (int64_t k = 0; k < a.h * a.w; k++)
					acc += in[q * a.h * a.w + k];
				y[q] = acc / (double)(a.h * a.w);
			}
			break;
		case HP_LAYER_FLATTEN:
			memcpy(y, in, (size_t)na * sizeof(double));
			break;
		case HP_LAYER_SLICE:
			/* each sample's planes start .. start + channels - 1 */
			for (int64_t in_ = 0; in_ < n; in_++)
				memcpy(y + in_ * b.c * b.h * b.w,
				       in + (in_ * a.c + L->start) * a.h * a.w,
				       (size_t)(b.c * b.h * b.w) *
					   sizeof(double));
			break;
		case HP_LAYER_SHUFFLE:
			shuffle_planes(in, y, n, a.c, L->groups, a.h * a.w, 0);
			break;
		case HP_LAYER_ADD:
			memcpy(y, in, (size_t)na * sizeof(double));
			for (int k = 1; k < nin_of(L); k++)
				add_into(y, acts[in_of(L, i, k) + 1], na);
			break;
		case HP_LAYER_CONCAT: {
			/* sample by sample, the inputs' C*H*W blocks in turn */
			int64_t off = 0;
			for (int k = 0; k < nin_of(L); k++) {
				struct shape ak = sh[in_of(L, i, k) + 1];
				int64_t blk = ak.c * ak.h * ak.w;
				const double *src = acts[in_of(L, i, k) + 1];
				for (int64_t in_ = 0; in_ < n; in_++)
					memcpy(y + in_ * b.c * b.h * b.w + off,
					       src + in_ * blk,
					       (size_t)blk * sizeof(double));
				off += blk;
			}
			break;
		}
		case HP_LAYER_DROPOUT:
			for (int64_t k = 0; k < na; k++)
				y[k] = in[k] * (r->masks && r->masks[i]
						    ? r->masks[i][k]
						    : 1.0);
			break;
		case HP_LAYER_FC: {
			int64_t fin = a.c * a.h * a.w;
			const double *W = r->params[pk], *B = r->params[pk + 1];
			pidx[i] = pk;
			for (int64_t in_ = 0; in_ < n; in_++)
				for (int64_t u = 0; u < L->units; u++) {
					double acc = B[u];
					for (int64_t j = 0; j < fin; j++)
						acc += W[u * fin + j] *
						       in[in_ * fin + j];
					y[in_ * L->units + u] = acc;
				}
			pk += 2;
			break;
		}
		case HP_LAYER_SOFTMAX:
			if (fold_softmax && i == nl - 1)
				memcpy(y, in, (size_t)na * sizeof(double));
			else
				softmax_fwd(in, n, a.c, a.h * a.w, y);
			break;
		}
	}
	/* loss and its gradient */
	out_n = sh[nl].c * sh[nl].h * sh[nl].w;
	for (int i = 0; i < nl; i++)
		grads[i] = calloc((size_t)(n * sh[i].c * sh[i].h * sh[i].w),
				  sizeof(double));
	grads[nl] = calloc((size_t)(n * out_n), sizeof(double));
	for (int64_t in_ = 0; in_ < n; in_++) {
		const double *z = acts[nl] + in_ * out_n;
		double *g = grads[nl] + in_ * out_n;
		if (s->classes > 0) {
			double mx = -INFINITY, sum = 0, lse;
			for (int64_t j = 0; j < out_n; j++)
				mx = fmax(mx, z[j]);
			for (int64_t j = 0; j < out_n; j++)
				sum += exp(z[j] - mx);
			lse = mx + log(sum);
			loss += lse - z[r->labels[in_]];
			for (int64_t j = 0; j < out_n; j++)
				g[j] = (exp(z[j] - lse) -
					(j == r->labels[in_] ? 1 : 0)) /
				       (double)n;
		} else {
			for (int64_t j = 0; j < out_n; j++) {
				loss += 0.5 * z[j] * z[j];
				g[j] = z[j] / (double)n;
			}
		}
	}
	loss /= (double)n;
	if (logits)
		memcpy(logits, acts[nl], (size_t)(n * out_n) * sizeof(double));
	/* backward: grads[v] is d loss / d acts[v], summed over its readers */
	for (int i = nl - 1; back && i >= 0; i--) {
		const struct hp_spec_layer *L = &s->layers[i];
		int j0 = in_of(L, i, 0) + 1;
		struct shape a = sh[j0], b = sh[i + 1];
		int64_t na = n * a.c * a.h * a.w;
		const double *in = acts[j0], *y = acts[i + 1],
			     *dy = grads[i + 1];
		double *g = calloc((size_t)na, sizeof(double));
		double *dw = NULL, *db = NULL;
		int q = pidx[i];

		if (q >= 0 && dparams) {
			dw = dparams[q];
			db = L->type == HP_LAYER_PRELU ? NULL : dparams[q + 1];
		}
		switch (L->type) {
		case HP_LAYER_CONV: {
			int64_t nw = L->filters * (a.c / groups_of(L)) *
				     L->kernel * kw_of(L);
			double *tw =
			    dw ? dw : malloc((size_t)nw * sizeof(double));
			double *tb =
			    db ? db
			       : malloc((size_t)L->filters * sizeof(double));
			gconv_bwd(in, n, a.c, a.h, a.w, r->params[q],
				  L->filters, L->kernel, kw_of(L), L->stride,
				  pads_of(L), dil_of(L), groups_of(L), dy, g,
				  tw, tb);
			if (!dw)
				free(tw);
			if (!db)
				free(tb);
			break;
		}
		case HP_LAYER_BN: {
			double *tw =
			    dw ? dw : malloc((size_t)a.c * sizeof(double));
			double *tb =
			    db ? db : malloc((size_t)a.c * sizeof(double));
			ref_bn_bwd(in, n, a.c, a.h * a.w, r->params[q],
				   r->bn_eps, dy, g, tw, tb);
			if (!dw)
				free(tw);
			if (!db)
				free(tb);
			break;
		}
		case HP_LAYER_LAYERNORM: {
			double *tw =
			    dw ? dw : malloc((size_t)a.c * sizeof(double));
			double *tb =
			    db ? db : malloc((size_t)a.c * sizeof(double));
			ref_ln_bwd(in, n, a.c, a.h * a.w, r->params[q], L->eps,
				   dy, g, tw, tb);
			if (!dw)
				free(tw);
			if (!db)
				free(tb);
			break;
		}
		case HP_LAYER_GROUPNORM: {
			double *tw =
			    dw ? dw : malloc((size_t)a.c * sizeof(double));
			double *tb =
			    db ? db : malloc((size_t)a.c * sizeof(double));
			ref_gn_bwd(in, n, a.c, a.h * a.w, L->groups,
				   r->params[q], L->eps, dy, g, tw, tb);
			if (!dw)
				free(tw);
			if (!db)
				free(tb);
			break;
		}
		case HP_LAYER_GELU:
			for (int64_t k = 0; k < na; k++)
				g[k] = dy[k] * gelu_grad(in[k]);
			break;
		case HP_LAYER_RELU:
			for (int64_t k = 0; k < na; k++)
				g[k] = in[k] > 0 ? dy[k] : 0;
			break;
		case HP_LAYER_CLIP:
			for (int64_t k = 0; k < na; k++)
				g[k] =
				    in[k] > L->lo && in[k] < L->hi ? dy[k] : 0;
			break;
		case HP_LAYER_SIGMOID:
			for (int64_t k = 0; k < na; k++)
				g[k] = dy[k] * y[k] * (1 - y[k]);
			break;
		case HP_LAYER_TANH:
			/* from the input, not the engine's output form */
			for (int64_t k = 0; k < na; k++) {
				double c = cosh(in[k]);
				g[k] = dy[k] / (c * c);
			}
			break;
		case HP_LAYER_LEAKYRELU:
			for (int64_t k = 0; k < na; k++)
				g[k] = in[k] > 0 ? dy[k] : L->alpha * dy[k];
			break;
		case HP_LAYER_PRELU: {
			const double *A = r->params[q];
			int64_t hw = a.h * a.w, nw = L->per_channel ? a.c : 1;
			double *tw =
			    dw ? dw : malloc((size_t)nw * sizeof(double));
			for (int64_t c = 0; c < nw; c++)
				tw[c] = 0;
			for (int64_t k = 0; k < na; k++) {
				int64_t c = L->per_channel ? (k / hw) % a.c : 0;
				g[k] = in[k] > 0 ? dy[k] : A[c] * dy[k];
				if (in[k] <= 0)
					tw[c] += dy[k] * in[k];
			}
			if (!dw)
				free(tw);
			break;
		}
		case HP_LAYER_SCALE:
			for (int64_t k = 0; k < na; k++)
				g[k] = (L->nch ? L->chf[(k / (a.h * a.w)) % a.c]
					       : L->alpha) *
				       dy[k];
			break;
		case HP_LAYER_SOFTPLUS:
			/* its derivative, the logistic function */
			for (int64_t k = 0; k < na; k++)
				g[k] = dy[k] / (1 + exp(-in[k]));
			break;
		case HP_LAYER_ELU:
			for (int64_t k = 0; k < na; k++)
				g[k] = in[k] > 0
					   ? dy[k]
					   : L->alpha * exp(in[k]) * dy[k];
			break;
		case HP_LAYER_HARDSIGMOID:
			for (int64_t k = 0; k < na; k++) {
				double u = L->alpha * in[k] + L->beta;
				g[k] = u > 0 && u < 1 ? L->alpha * dy[k] : 0;
			}
			break;
		case HP_LAYER_MUL: {
			struct shape s2 = sh[in_of(L, i, 1) + 1];
			const double *v = acts[in_of(L, i, 1) + 1];
			double *g2 = grads[in_of(L, i, 1) + 1];
			int64_t hw = a.h * a.w, per = s2.h * s2.w;
			for (int64_t k = 0; k < na; k++) {
				int64_t m = per == 1 ? k / hw : k;
				g[k] = dy[k] * v[m];
				g2[m] += dy[k] * in[k];
			}
			break;
		}
		case HP_LAYER_POOL:
			ref_pool_bwd(in, n, a.c, a.h, a.w, L->kernel, L->stride,
				     L->pad, L->ceil_mode, L->pool_max,
				     L->pool_exclude || L->ceil_mode, dy, g);
			break;
		case HP_LAYER_GAP:
			for (int64_t k = 0; k < na; k++)
				g[k] =
				    dy[k / (a.h * a.w)] / (double)(a.h * a.w);
			break;
		case HP_LAYER_FLATTEN:
			memcpy(g, dy, (size_t)na * sizeof(double));
			break;
		case HP_LAYER_SLICE:
			for (int64_t in_ = 0; in_ < n; in_++)
				add_into(g + (in_ * a.c + L->start) * a.h * a.w,
					 dy + in_ * b.c * b.h * b.w,
					 b.c * b.h * b.w);
			break;
		case HP_LAYER_SHUFFLE:
			shuffle_planes(dy, g, n, a.c, L->groups, a.h * a.w, 1);
			break;
		case HP_LAYER_ADD:
			memcpy(g, dy, (size_t)na * sizeof(double));
			for (int k = 1; k < nin_of(L); k++)
				add_into(grads[in_of(L, i, k) + 1], dy, na);
			break;
		case HP_LAYER_CONCAT: {
			int64_t off = 0;
			for (int k = 0; k < nin_of(L); k++) {
				struct shape ak = sh[in_of(L, i, k) + 1];
				int64_t blk = ak.c * ak.h * ak.w;
				double *dst = k ? grads[in_of(L, i, k) + 1] : g;
				for (int64_t in_ = 0; in_ < n; in_++)
					add_into(dst + in_ * blk,
						 dy + in_ * b.c * b.h * b.w +
						     off,
						 blk);
				off += blk;
			}
			break;
		}
		case HP_LAYER_DROPOUT:
			for (int64_t k = 0; k < na; k++)
				g[k] = dy[k] * (r->masks && r->masks[i]
						    ? r->masks[i][k]
						    : 1.0);
			break;
		case HP_LAYER_FC: {
			int64_t fin = a.c * a.h * a.w;
			const double *W = r->params[q];
			if (dw) {
				memset(dw, 0,
				       (size_t)(L->units * fin) *
					   sizeof(double));
				memset(db, 0,
				       (size_t)L->units * sizeof(double));
			}
			for (int64_t in_ = 0; in_ < n; in_++)
				for (int64_t u = 0; u < L->units; u++) {
					double gu = dy[in_ * L->units + u];
					if (db)
						db[u] += gu;
					for (int64_t j = 0; j < fin; j++) {
						g[in_ * fin + j] +=
						    gu * W[u * fin + j];
						if (dw)
							dw[u * fin + j] +=
							    gu *
							    in[in_ * fin + j];
					}
				}
			break;
		}
		case HP_LAYER_SOFTMAX:
			if (fold_softmax && i == nl - 1)
				memcpy(g, dy, (size_t)na * sizeof(double));
			else
				softmax_bwd(y, dy, n, a.c, a.h * a.w, g);
			break;
		}
		add_into(grads[j0], g, na);
		free(g);
	}
	if (dx && back)
		memcpy(dx, grads[0],
		       (size_t)(n * sh[0].c * sh[0].h * sh[0].w) *
			   sizeof(double));
	for (int i = 0; i <= nl; i++) {
		free(acts[i]);
		free(grads[i]);
	}
	free(acts);
	free(grads);
	free(pidx);
	free(sh);
	return loss;
}
