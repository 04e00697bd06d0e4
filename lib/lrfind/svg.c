/*
 * svg.c - draw a range test as a standalone SVG document, written by hand
 * (no plotting library): the raw and smoothed loss against the rate on a
 * log axis, the polynomial and logarithmic fits, the interval shaded, the
 * suggestion and the divergence marked, the smoothed accuracy on a
 * right-hand axis, ticks, labels and a legend.  Text from outside (the
 * title) is escaped; no number written is ever NaN.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hetpool/lrfind.h"
#include "lrfind/lrfind_int.h"
#include "util/banned.h"

/* Canvas and plot area, in SVG user units (pixels). */
enum { W = 860, H = 520, ML = 72, MR = 72, MT = 48, MB = 64 };
#define PW (W - ML - MR)
#define PH (H - MT - MB)

static const char C_RAW[] = "#b0b0b0", C_SMOOTH[] = "#1f77b4",
		  C_POLY[] = "#ff7f0e", C_LOG[] = "#2ca02c",
		  C_SUGG[] = "#d62728", C_DIV[] = "#8c564b",
		  C_ACC[] = "#9467bd", C_BAND[] = "#2ca02c",
		  C_RISE[] = "#7f7f7f";

struct svg {
	struct hp_buf *b;
	int rc;		/* first error */
	double x0, x1;	/* log10(lr) at the left and right edges */
	double y0, y1;	/* loss at the bottom and top */
	double acc_top; /* accuracy at the top (1 or 100) */
};

static void out(struct svg *g, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void out(struct svg *g, const char *fmt, ...)
{
	va_list ap;

	if (g->rc)
		return;
	va_start(ap, fmt);
	g->rc = hp_buf_vprintf(g->b, fmt, ap);
	va_end(ap);
}

/* Coordinates, clamped so that a wild value cannot make a wild number. */
static double clampc(double v)
{
	return v < -1e4 ? -1e4 : v > 1e4 ? 1e4 : v;
}

static double px(const struct svg *g, double x)
{
	return clampc(ML + (x - g->x0) / (g->x1 - g->x0) * PW);
}

static double py(const struct svg *g, double y)
{
	return clampc(MT + PH - (y - g->y0) / (g->y1 - g->y0) * PH);
}

static double pacc(const struct svg *g, double a)
{
	return clampc(MT + PH - a / g->acc_top * PH);
}

int hp__lrfind_xml_text(struct hp_buf *b, const char *s)
{
	size_t n = strlen(s) * 4 + 1;
	char *esc = malloc(n);
	int rc = 0;

	if (!esc)
		return HP_ENOMEM;
	hp_str_escape(s, esc, n);
	for (const char *p = esc; *p && !rc; p++) {
		const unsigned char *u = (const unsigned char *)p;

		switch (*p) {
		case '&':
			rc = hp_buf_adds(b, "&amp;");
			break;
		case '<':
			rc = hp_buf_adds(b, "&lt;");
			break;
		case '>':
			rc = hp_buf_adds(b, "&gt;");
			break;
		case '"':
			rc = hp_buf_adds(b, "&quot;");
			break;
		case '\'':
			rc = hp_buf_adds(b, "&apos;");
			break;
		default:
			/* U+FFFE and U+FFFF are UTF-8 but not XML. */
			if (u[0] == 0xef && u[1] == 0xbf &&
			    (u[2] == 0xbe || u[2] == 0xbf)) {
				rc = hp_buf_adds(b, "?");
				p += 2;
			} else {
				rc = hp_buf_add(b, p, 1);
			}
		}
	}
	free(esc);
	return rc;
}

static void text(struct svg *g, double x, double y, const char *anchor,
		 const char *extra, const char *s)
{
	out(g, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\"%s>", x, y,
	    anchor, extra);
	if (!g->rc)
		g->rc = hp__lrfind_xml_text(g->b, s);
	out(g, "</text>\n");
}

/* A rate for a tick label: 0.01..100 plainly, else as 1e-5. */
static void fmt_lr(double lr, char *buf, size_t n)
{
	double e = log10(lr);

	if (lr >= 0.01 && lr <= 100)
		snprintf(buf, n, "%g", lr);
	else if (fabs(e - round(e)) < 1e-9)
		snprintf(buf, n, "1e%d", (int)round(e));
	else
		snprintf(buf, n, "%.0e", lr);
}

/* A round step (1, 2 or 5 times a power of ten) for about n ticks. */
static double nice_step(double span, int n)
{
	double raw = span / n, p = pow(10, floor(log10(raw))), f = raw / p;

	return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * p;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Polyline through points (x = log10 lr, y), broken at non-finite ones. */
struct line {
	struct svg *g;
	const char *color;
	const char *extra; /* more attributes: width, dashes */
	bool acc;	   /* y is accuracy (right-hand axis) */
	bool open;
};

static void line_point(struct line *l, double x, double y)
{
	struct svg *g = l->g;

	if (!isfinite(x) || !isfinite(y)) {
		if (l->open)
			out(g, "\"/>\n");
		l->open = false;
		return;
	}
	if (!l->open)
		out(g, "<polyline fill=\"none\" stroke=\"%s\" %s points=\"",
		    l->color, l->extra);
	out(g, "%s%.1f,%.1f", l->open ? " " : "", px(g, x),
	    l->acc ? pacc(g, y) : py(g, y));
	l->open = true;
}

static void line_end(struct line *l)
{
	if (l->open)
		out(l->g, "\"/>\n");
	l->open = false;
}

/*
 * The raw loss: every step when they fit the width, else per pixel column
 * its lowest and highest loss in the order they came (an envelope).
 */
static void raw_loss(struct svg *g, const struct hp_lrfind_series *s)
{
	struct line l = {g, C_RAW, "stroke-width=\"1\"", false, false};
	int col = -1, imin = -1, imax = -1;

	if (s->n <= 2 * PW) {
		for (int i = 0; i < s->n; i++)
			line_point(&l, log10(s->pts[i].lr), s->pts[i].loss);
		line_end(&l);
		return;
	}
	for (int i = 0; i <= s->n; i++) {
		int c = i < s->n ? (int)px(g, log10(s->pts[i].lr)) : -2;

		if (c != col && imin >= 0) {
			int a = imin < imax ? imin : imax,
			    b = imin < imax ? imax : imin;
			line_point(&l, log10(s->pts[a].lr), s->pts[a].loss);
			if (b != a)
				line_point(&l, log10(s->pts[b].lr),
					   s->pts[b].loss);
			imin = imax = -1;
		}
		if (i == s->n)
			break;
		col = c;
		if (!isfinite(s->pts[i].loss)) {
			line_point(&l, NAN, NAN);
			continue;
		}
		if (imin < 0 || s->pts[i].loss < s->pts[imin].loss)
			imin = i;
		if (imax < 0 || s->pts[i].loss > s->pts[imax].loss)
			imax = i;
	}
	line_end(&l);
}

static void axes(struct svg *g)
{
	double step, ylo, first;
	char lbl[32];

	/* Loss ticks and horizontal grid. */
	step = nice_step(g->y1 - g->y0, 6);
	first = ceil(g->y0 / step) * step;
	for (double y = first; y <= g->y1 + 1e-9 * step; y += step) {
		double v = fabs(y) < 1e-12 * step ? 0 : y;
		out(g,
		    "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" "
		    "stroke=\"#e6e6e6\"/>\n",
		    ML, py(g, v), ML + PW, py(g, v));
		out(g,
		    "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" "
		    "stroke=\"#000\"/>\n",
		    ML - 5, py(g, v), ML, py(g, v));
		snprintf(lbl, sizeof(lbl), "%g", v);
		text(g, ML - 8, py(g, v) + 4, "end", "", lbl);
	}
	/* Rate ticks: each decade labelled, 2..9 minor; a range shorter
	 * than two decades also labels 2 and 5. */
	ylo = MT + PH;
	for (int k = (int)floor(g->x0); k <= (int)ceil(g->x1); k++)
		for (int m = 1; m <= 9; m++) {
			double x = k + log10(m);
			bool major = m == 1, label = major;

			if (x < g->x0 - 1e-9 || x > g->x1 + 1e-9)
				continue;
			if (g->x1 - g->x0 < 2 && (m == 2 || m == 5))
				label = true;
			if (g->x1 - g->x0 > 8 && !major)
				continue;
			out(g,
			    "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
			    "y2=\"%.1f\" stroke=\"#000\"/>\n",
			    px(g, x), ylo, px(g, x), ylo + (major ? 6 : 3));
			if (major)
				out(g,
				    "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" "
				    "y2=\"%.1f\" stroke=\"#e6e6e6\"/>\n",
				    px(g, x), MT, px(g, x), ylo);
			if (label) {
				fmt_lr(pow(10, x), lbl, sizeof(lbl));
				text(g, px(g, x), ylo + 20, "middle", "", lbl);
			}
		}
	out(g,
	    "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" "
	    "stroke=\"#000\"/>\n",
	    ML, MT, PW, PH);
	text(g, ML + PW / 2.0, H - 18, "middle", "",
	     "learning rate (log scale)");
	out(g,
	    "<text x=\"18\" y=\"%.1f\" text-anchor=\"middle\" "
	    "transform=\"rotate(-90 18 %.1f)\">loss</text>\n",
	    MT + PH / 2.0, MT + PH / 2.0);
}

static void acc_axis(struct svg *g)
{
	char lbl[32];

	for (int i = 0; i <= 4; i++) {
		double a = g->acc_top * i / 4;
		out(g,
		    "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" "
		    "stroke=\"%s\"/>\n",
		    ML + PW, pacc(g, a), ML + PW + 5, pacc(g, a), C_ACC);
		snprintf(lbl, sizeof(lbl), "%g", a);
		text(g, ML + PW + 8, pacc(g, a) + 4, "start",
		     " fill=\"#9467bd\"", lbl);
	}
	out(g,
	    "<text x=\"%d\" y=\"%.1f\" text-anchor=\"middle\" "
	    "fill=\"%s\" transform=\"rotate(90 %d %.1f)\">accuracy "
	    "(smoothed)</text>\n",
	    W - 16, MT + PH / 2.0, C_ACC, W - 16, MT + PH / 2.0);
}

/* Vertical marker at a rate, with a label at the top of the plot. */
static void marker(struct svg *g, double lr, const char *color,
		   const char *dash, const char *label, int row)
{
	double x;

	if (!(lr > 0) || !isfinite(lr))
		return;
	x = px(g, log10(lr));
	out(g,
	    "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"%s\" "
	    "stroke-width=\"1.5\"%s/>\n",
	    x, MT, x, MT + PH, color, dash);
	/* The label on the side with room. */
	if (x > ML + PW * 0.6)
		text(g, x - 4, MT + 14 + 14 * row, "end", " font-size=\"11\"",
		     label);
	else
		text(g, x + 4, MT + 14 + 14 * row, "start", " font-size=\"11\"",
		     label);
}

static void legend(struct svg *g, const struct hp_lrfind_result *r,
		   bool have_fits)
{
	char items[8][96];
	const char *colors[8];
	int widths[8], n = 0, x = ML + PW - 232, y = MT + 54;

#define ITEM(col, width, ...)                                                  \
	do {                                                                   \
		colors[n] = col;                                               \
		widths[n] = width;                                             \
		snprintf(items[n], sizeof(items[n]), __VA_ARGS__);             \
		n++;                                                           \
	} while (0)
	ITEM(C_RAW, 2, "loss per step");
	ITEM(C_SMOOTH, 2, "smoothed loss (%s)",
	     hp_lrfind_smoother_name(r->smoother));
	if (have_fits) {
		ITEM(C_POLY, 2, "polynomial fit, degree %d", r->poly.degree);
		ITEM(C_LOG, 2, "log fit: %.3g %s %.3g ln(lr)", r->logfit.a,
		     r->logfit.b < 0 ? "-" : "+", fabs(r->logfit.b));
		ITEM(C_BAND, 8, "interval %.3g .. %.3g", r->low.lr, r->high.lr);
		ITEM(C_SUGG, 2, "suggested lr %.3g", r->suggested.lr);
	}
	if (r->smooth_acc)
		ITEM(C_ACC, 2, "accuracy (smoothed)");
#undef ITEM
	out(g,
	    "<rect x=\"%d\" y=\"%d\" width=\"226\" height=\"%d\" fill=\"#fff\" "
	    "fill-opacity=\"0.85\" stroke=\"#ccc\"/>\n",
	    x - 6, y - 12, 16 * n + 6);
	for (int i = 0; i < n; i++) {
		out(g,
		    "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
		    "stroke=\"%s\" "
		    "stroke-width=\"%d\" stroke-opacity=\"%s\"/>\n",
		    x, y + 16 * i - 4, x + 18, y + 16 * i - 4, colors[i],
		    widths[i], widths[i] > 2 ? "0.3" : "1");
		text(g, x + 24, y + 16 * i, "start", " font-size=\"11\"",
		     items[i]);
	}
}

/*
 * The loss range shown: from the lowest loss before the divergence to a
 * third above the smoothed plateau over the fit, so that the blow-up runs
 * off the top (clipped) instead of flattening the rest.  Without fits: up
 * to the 95th percentile of the raw loss.
 */
static int loss_range(struct svg *g, const struct hp_lrfind_series *s,
		      const struct hp_lrfind_result *r)
{
	double lo = INFINITY, hi = -INFINITY;
	int m = r->analysed > 0 ? r->analysed : s->n;

	for (int i = 0; i < m; i++) {
		if (isfinite(s->pts[i].loss) && s->pts[i].loss < lo)
			lo = s->pts[i].loss;
		if (r->smooth && i < r->analysed && r->smooth[i] < lo)
			lo = r->smooth[i];
	}
	if (r->smooth && r->fit_end > r->fit_start) {
		for (int i = 0; i < r->fit_end; i++)
			if (r->smooth[i] > hi)
				hi = r->smooth[i];
		hi += 0.35 * (fmin(hi, 1e300) - fmax(lo, -1e300));
	} else {
		double *v = malloc((size_t)m * sizeof(*v));
		int k = 0;

		if (!v)
			return HP_ENOMEM;
		for (int i = 0; i < m; i++)
			if (isfinite(s->pts[i].loss))
				v[k++] = s->pts[i].loss;
		if (k > 0) {
			qsort(v, (size_t)k, sizeof(*v), cmp_double);
			hi = v[(int)(0.95 * (k - 1))];
		}
		free(v);
	}
	if (!isfinite(lo) || !isfinite(hi)) {
		lo = 0;
		hi = 1;
	}
	/* Losses past 1e300 are drawn at it, so the widening below and the
	 * pixel scale stay finite.  A flat range (flat to a part in 1e9: a
	 * range of 1e-10 is a curve when the losses are 1e-9) is widened by
	 * half a unit, or by the loss itself when that is smaller, or for
	 * large losses by a part in a thousand (2e85 + 0.5 is 2e85). */
	lo = fmin(fmax(lo, -1e300), 1e300);
	hi = fmin(fmax(hi, -1e300), 1e300);
	if (hi - lo <= 1e-9 * fmax(fabs(hi), fabs(lo))) {
		double top = fmax(fabs(hi), fabs(lo));
		double d = fmax(fmin(0.5, top), 1e-3 * top);
		if (!(d > 0))
			d = 0.5;
		lo -= d;
		hi += d;
	}
	g->y0 = lo - 0.05 * (hi - lo);
	g->y1 = hi;
	return 0;
}

/* A smooth series over steps [from, to) as one polyline, at most about
 * two points per pixel column. */
static void series_line(struct svg *g, const struct hp_lrfind_series *s,
			const double *v, int from, int to, const char *color,
			const char *extra, bool acc)
{
	struct line l = {g, color, extra, acc, false};
	int stride = (to - from) / (2 * PW) + 1;

	for (int i = from; i < to; i += stride)
		line_point(&l, log10(s->pts[i].lr), v[i]);
	if (to > from && (to - 1 - from) % stride)
		line_point(&l, log10(s->pts[to - 1].lr), v[to - 1]);
	line_end(&l);
}

int hp_lrfind_svg(const struct hp_lrfind_series *s,
		  const struct hp_lrfind_result *r,
		  const struct hp_lrfind_run *run, struct hp_buf *out_buf,
		  struct hp_error *err)
{
	struct svg g = {out_buf, 0};
	bool have_fits = r->poly.degree > 0 && r->poly.scale > 0 &&
			 isfinite(r->suggested.lr);
	const char *title = run && run->title ? run->title : NULL;
	char lbl[96];

	if (s->n < 1)
		return hp_error_set(err, HP_EINVAL, "no steps to plot");
	g.x0 = log10(s->pts[0].lr);
	g.x1 = log10(s->pts[s->n - 1].lr);
	if (!(g.x1 - g.x0 > 1e-9)) {
		g.x0 -= 0.5;
		g.x1 += 0.5;
	}
	if ((g.rc = loss_range(&g, s, r)))
		return hp_error_set(err, g.rc, "out of memory");
	g.acc_top = 1;
	if (r->smooth_acc)
		for (int i = 0; i < r->analysed; i++)
			if (r->smooth_acc[i] > 1.0001)
				g.acc_top = 100;

	out(&g,
	    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	    "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
	    "height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" "
	    "font-size=\"12\">\n",
	    W, H, W, H);
	out(&g, "<title>");
	if (!g.rc)
		g.rc = hp__lrfind_xml_text(g.b, title ? title
						      : "learning-rate range "
							"test");
	out(&g, "</title>\n");
	out(&g,
	    "<rect width=\"%d\" height=\"%d\" fill=\"#fff\"/>\n"
	    "<defs><clipPath id=\"plot\"><rect x=\"%d\" y=\"%d\" "
	    "width=\"%d\" height=\"%d\"/></clipPath></defs>\n",
	    W, H, ML, MT, PW, PH);
	if (have_fits)
		out(&g,
		    "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" "
		    "fill=\"%s\" fill-opacity=\"0.15\"/>\n",
		    px(&g, log10(r->low.lr)), MT,
		    px(&g, log10(r->high.lr)) - px(&g, log10(r->low.lr)), PH,
		    C_BAND);
	axes(&g);
	out(&g, "<g clip-path=\"url(#plot)\">\n");
	raw_loss(&g, s);
	if (r->smooth)
		series_line(&g, s, r->smooth, 0, r->analysed, C_SMOOTH,
			    "stroke-width=\"2\"", false);
	if (have_fits) {
		struct line l = {&g, C_POLY,
				 "stroke-width=\"2\" stroke-dasharray=\"6 4\"",
				 false, false};
		double xa = r->poly.center - r->poly.scale,
		       xb = r->poly.center + r->poly.scale;
		for (int k = 0; k <= 200; k++) {
			double x = xa + (xb - xa) * k / 200;
			line_point(&l, x,
				   hp_lrfind_poly_eval(&r->poly, pow(10, x)));
		}
		line_end(&l);
		l.color = C_LOG;
		l.extra = "stroke-width=\"2\" stroke-dasharray=\"2 3\"";
		xa = log10(r->logfit.lr_lo);
		xb = log10(r->logfit.lr_hi);
		for (int k = 0; k <= 50; k++) {
			double x = xa + (xb - xa) * k / 50;
			line_point(&l, x,
				   r->logfit.a + r->logfit.b * x * log(10));
		}
		line_end(&l);
		/* The floor the log fit meets at the knee. */
		l.color = C_LOG;
		l.extra = "stroke-width=\"1\" stroke-dasharray=\"1 3\"";
		line_point(&l, xa, r->loss_floor);
		line_point(&l, log10(r->high.lr), r->loss_floor);
		line_end(&l);
	}
	if (r->smooth_acc)
		series_line(&g, s, r->smooth_acc, 0, r->analysed, C_ACC,
			    "stroke-width=\"1.2\" stroke-opacity=\"0.8\"",
			    true);
	if (have_fits) {
		double x = log10(r->suggested.lr);
		double y = hp_lrfind_poly_eval(&r->poly, r->suggested.lr);
		if (isfinite(y))
			out(&g,
			    "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" "
			    "fill=\"%s\"/>\n",
			    px(&g, x), py(&g, y), C_SUGG);
	}
	out(&g, "</g>\n");
	if (have_fits) {
		snprintf(lbl, sizeof(lbl), "suggested %.3g", r->suggested.lr);
		marker(&g, r->suggested.lr, C_SUGG, "", lbl, 0);
	}
	/* Where the loss first rose beyond noise, when it fell lower again
	 * later: the interval ends before it. */
	if (have_fits && r->rise_idx >= 0 && r->rise_idx < s->n &&
	    r->lr_smooth_min > r->lr_first_min)
		marker(&g, s->pts[r->rise_idx].lr, C_RISE,
		       " stroke-dasharray=\"1 3\"", "loss rises", 2);
	if (r->diverged_at >= 0) {
		snprintf(lbl, sizeof(lbl), "diverged (step %lld)",
			 (long long)s->pts[r->diverged_at].step);
		marker(&g, s->pts[r->diverged_at].lr, C_DIV,
		       " stroke-dasharray=\"4 3\"", lbl, 1);
	}
	if (r->smooth_acc)
		acc_axis(&g);
	legend(&g, r, have_fits);
	text(&g, W / 2.0, 28, "middle", " font-size=\"15\"",
	     title ? title : "learning-rate range test");
	out(&g, "</svg>\n");
	if (g.rc)
		return hp_error_set(err, g.rc, "writing the plot: %s",
				    hp_strerror(g.rc));
	return 0;
}
