/*
 * lrfind.h - the learning-rate range test's analysis.  A range test trains
 * for a bounded number of steps while the learning rate rises
 * exponentially and records the loss (and accuracy) of every step; this
 * module reads that series (the trainer's metrics.jsonl), smooths it,
 * finds where the loss diverged, fits a polynomial of log(lr) (degree by
 * k-fold cross-validation) and a logarithmic curve (loss = a + b ln lr)
 * over the descent, and derives a good interval of rates and a suggested
 * rate, each with a sentence saying how it was found.  It also draws the
 * test as SVG.  docs/lr-find.md gives the method and why.
 *
 * Ownership: struct hp_lrfind_series and struct hp_lrfind_result are the
 * caller's (init / release); hp_lrfind_analyse() fills a result whose
 * arrays hp_lrfind_result_release() frees.  hp_lrfind_result_json()
 * returns text the caller frees; hp_lrfind_svg() appends to a caller's
 * buffer.  Nothing here prints; every function is reentrant.
 */
#ifndef HETPOOL_LRFIND_H
#define HETPOOL_LRFIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hetpool/util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most steps one series may hold (a range test has hundreds). */
#define HP_LRFIND_MAX_POINTS 1000000
/* Steps of a range test unless told (six decades: 133 steps a decade;
 * docs/lr-find.md, "How long a test"). */
#define HP_LRFIND_DEFAULT_STEPS 800
/* Highest polynomial degree the cross-validation may choose. */
#define HP_LRFIND_MAX_DEGREE 10

/* One step of a range test. */
struct hp_lrfind_point {
	int64_t step;
	double lr;	 /* > 0, finite */
	double loss;	 /* >= 0; NAN or +-INFINITY where the run diverged */
	double accuracy; /* in [0, 1]; NAN where not recorded */
};

/* The steps of a range test in order of step (learning rate rising). */
struct hp_lrfind_series {
	struct hp_lrfind_point *pts;
	int n, alloc;
	int skipped; /* records read without a "step" (other events) */
};

void hp_lrfind_series_init(struct hp_lrfind_series *s);
void hp_lrfind_series_release(struct hp_lrfind_series *s);
/* Append one step; HP_EINVAL when lr is not finite and positive, when the
 * step does not follow the last one or the rate falls, when the loss is
 * finite and negative (NAN or +-INFINITY is a loss that overflowed), when
 * the accuracy is neither NAN (not recorded) nor in [0, 1]; HP_ETOOBIG
 * past HP_LRFIND_MAX_POINTS. */
int hp_lrfind_series_add(struct hp_lrfind_series *s, int64_t step, double lr,
			 double loss, double accuracy, struct hp_error *err);

/* hp_lrfind_parse_metrics() flags. */
enum {
	/* The text is a file still being written: a last line without its
	 * newline is left unread (its bytes are not counted in *consumed). */
	HP_LRFIND_PARSE_PARTIAL = 1,
};

/*
 * Parse metrics.jsonl text (one JSON object per line) and append its steps
 * to s.  A line is a step when it has "step"; it must then have "lr" (a
 * number > 0) and "loss" (a number >= 0, or null or one of the strings
 * "nan", "inf", "-inf" for a loss that overflowed); "accuracy" (a number
 * from 0 to 1, or null) is optional.  Objects without "step" are counted
 * in s->skipped.  Blank lines are ignored.  name labels errors ("NAME line
 * 12: ...").  *consumed (may be NULL) gets the bytes read, which with
 * HP_LRFIND_PARSE_PARTIAL stop after the last complete line.  first_line
 * is the line number of text's first line (1 for a whole file).  Returns
 * 0 or HP_EPARSE / HP_EINVAL / HP_ETOOBIG / HP_ENOMEM; on error s keeps
 * the steps of the lines before the bad one.
 */
int hp_lrfind_parse_metrics(struct hp_lrfind_series *s, const char *text,
			    size_t len, const char *name, int first_line,
			    unsigned flags, size_t *consumed,
			    struct hp_error *err);

enum hp_lrfind_smoother {
	HP_LRFIND_SMOOTH_MEDIAN = 0, /* centred running median, then a
					centred running mean of the same
					width (the default) */
	HP_LRFIND_SMOOTH_EWMA = 1,   /* exponentially weighted mean with
					bias correction (fastai's) */
};
const char *hp_lrfind_smoother_name(enum hp_lrfind_smoother m);
int hp_lrfind_smoother_parse(const char *s, enum hp_lrfind_smoother *out);

/* Analysis settings; zero fields take the defaults named. */
struct hp_lrfind_options {
	enum hp_lrfind_smoother smoother;
	int window;	       /* median smoother's width in steps, odd; 0:
				  about 4% of the steps, 5..51 */
	double beta;	       /* EWMA factor, (0, 1); 0: 0.98 */
	double diverge_factor; /* diverged when the EWMA loss passes this
				  times its lowest so far; 0: 4 */
	int folds;	       /* cross-validation folds, 2..20; 0: 5 */
	int max_degree;	       /* 1..HP_LRFIND_MAX_DEGREE; 0: 8 */
};

/* The polynomial loss = sum coef[k] t^k, t = (log10(lr) - center) / scale,
 * fitted to the smoothed loss. */
struct hp_lrfind_poly {
	int degree;
	double center, scale;
	double coef[HP_LRFIND_MAX_DEGREE + 1];
	int folds;
	int cv_block; /* neighbouring steps held out together */
	double cv_mse[HP_LRFIND_MAX_DEGREE + 1]; /* held-out mean squared
						    error per degree tried;
						    NAN where not tried */
	double cv_se[HP_LRFIND_MAX_DEGREE + 1];	 /* its standard error
						    across the folds */
	int max_tried;
	double rmse; /* of the final fit on all its points */
};

/* loss = a + b ln(lr), fitted to the smoothed loss over the descent. */
struct hp_lrfind_logfit {
	double a, b;
	double lr_lo, lr_hi; /* the rates it was fitted over */
	int points;
	double r2;
};

/* A rate and how it was found. */
struct hp_lrfind_pick {
	double lr; /* NAN where the rule did not apply */
	char how[320];
};

#define HP_LRFIND_MAX_WARNINGS 4

struct hp_lrfind_result {
	int n;			/* steps in the series */
	int diverged_at;	/* index of the first diverged step, or -1 */
	int analysed;		/* steps smoothed (those before divergence) */
	int fit_start, fit_end; /* steps [fit_start, fit_end) fitted */
	int descent_idx;	/* first step of the final descent: the
				   smoothed loss 10% of the way down from
				   its plateau to its minimum */
	double *smooth;		/* [analysed] smoothed loss */
	double *ewma;		/* [n] bias-corrected EWMA of the loss, NAN
				   from the first non-finite loss on */
	double *smooth_acc;	/* [analysed] smoothed accuracy, or NULL */
	enum hp_lrfind_smoother smoother;
	int window; /* the median smoother's width used */
	double beta, diverge_factor;

	struct hp_lrfind_poly poly;
	struct hp_lrfind_logfit logfit;
	double lr_fit_min;    /* where the polynomial is lowest */
	double loss_floor;    /* the polynomial's lowest loss there */
	double lr_descent;    /* where the descent begins (5% of the drop) */
	double lr_smooth_min; /* where the smoothed loss is lowest */
	int first_min_idx;    /* the smoothed loss's first minimum: its
				 lowest point before it first rises more
				 than twice the noise (the lowest point when
				 it never does) */
	double lr_first_min;  /* the rate there */
	int rise_idx;	      /* the step where that rise was seen, or -1 */
	double noise;	      /* step-to-step noise of the loss: 1.4826 x
				 the median absolute deviation of the raw
				 loss from the smoothed, over the steps
				 analysed */

	/* The interval: low = high / 10 (or the lowest rate fitted), high =
	 * where the polynomial is lowest (the fit ends just past the first
	 * minimum); suggested = the knee, where the log fit meets loss_floor,
	 * kept inside the interval.  The other
	 * rules, for comparison: the polynomial's steepest descent, its
	 * minimum / 10, the knee itself (NAN when the log fit does not
	 * fall). */
	struct hp_lrfind_pick low, high, suggested;
	struct hp_lrfind_pick steepest, min_div10, knee;
	double accuracy_at_suggested; /* smoothed, interpolated; or NAN */

	int nwarnings;
	char warnings[HP_LRFIND_MAX_WARNINGS][256];
};

void hp_lrfind_result_release(struct hp_lrfind_result *r);

/*
 * Analyse a range test.  opt may be NULL (defaults).  Fills r (released
 * by the caller whatever the outcome).  Returns 0, or HP_EINVAL with err
 * saying why the series cannot be analysed (too few steps before the loss
 * diverged, a loss that never falls, rates that do not rise), or
 * HP_ENOMEM / HP_EINTERNAL.
 */
int hp_lrfind_analyse(const struct hp_lrfind_series *s,
		      const struct hp_lrfind_options *opt,
		      struct hp_lrfind_result *r, struct hp_error *err);

/* Evaluate the fitted polynomial at a rate. */
double hp_lrfind_poly_eval(const struct hp_lrfind_poly *p, double lr);

/* What the caller knows about the run, for the JSON and the plot. */
struct hp_lrfind_run {
	const char *title;	 /* plot title (escaped here); may be NULL */
	int64_t steps_requested; /* 0: not known */
	const char *metrics;	 /* path of metrics.jsonl; may be NULL */
	const char *plot;	 /* path of the SVG; may be NULL */
};

/*
 * The result as JSON text (the caller frees it): "suggested_lr",
 * "interval" [low, high], how each was found, the candidates, both fits'
 * coefficients, the steps run and whether the run stopped early.
 * Non-finite numbers are written as null.  NULL on ENOMEM.
 */
char *hp_lrfind_result_json(const struct hp_lrfind_series *s,
			    const struct hp_lrfind_result *r,
			    const struct hp_lrfind_run *run);

/*
 * Append an SVG document to out: raw and smoothed loss against the rate on
 * a log axis, both fits, the interval shaded, the suggestion and the
 * divergence marked, the smoothed accuracy on a right-hand axis when the
 * series has it, axes with ticks and labels.  Text is escaped for XML.
 * Returns 0 or HP_ENOMEM / HP_ETOOBIG (out's cap).
 */
int hp_lrfind_svg(const struct hp_lrfind_series *s,
		  const struct hp_lrfind_result *r,
		  const struct hp_lrfind_run *run, struct hp_buf *out,
		  struct hp_error *err);

#ifdef __cplusplus
}
#endif
#endif /* HETPOOL_LRFIND_H */
