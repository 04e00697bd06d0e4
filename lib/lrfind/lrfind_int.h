/*
 * lrfind_int.h - internals of the range-test analysis, shared by its
 * files and its unit tests (which check each piece against a naive
 * reference).
 */
#ifndef HP_LRFIND_INT_H
#define HP_LRFIND_INT_H

#include "hetpool/lrfind.h"

/* Bias-corrected EWMA (fastai's smooth loss): v_i = beta v_{i-1} +
 * (1 - beta) y_i, out_i = v_i / (1 - beta^(i+1)); NAN from the first
 * non-finite y on. */
void hp__lrfind_ewma(const double *y, int n, double beta, double *out);

/* Centred running median of odd width w; near the ends the window is cut
 * to the points there are (the lower median of an even count), so that a
 * spike at the first or last step is outvoted like any other.  HP_ENOMEM
 * or 0. */
int hp__lrfind_median(const double *y, int n, int w, double *out);

/* Centred running mean of odd width w; near the ends the window shrinks
 * symmetrically (to 1 at the first and last point), so that a straight
 * line comes out unchanged. */
void hp__lrfind_mean(const double *y, int n, int w, double *out);

/* Least-squares polynomial of the given degree through (t, y): coef[0..d]
 * (gsl_multifit_linear); *rss (may be NULL) the residual sum of squares. */
int hp__lrfind_polyfit(const double *t, const double *y, int n, int degree,
		       double *coef, double *rss, struct hp_error *err);

/* Polynomial and its derivative at t (Horner). */
double hp__lrfind_poly_t(const double *coef, int degree, double t);
double hp__lrfind_dpoly_t(const double *coef, int degree, double t);

/*
 * Choose the degree (1..max_degree) by k-fold cross-validation and the
 * one-standard-error rule, then fit it on all points.  The folds deal
 * blocks of `block` neighbouring points round robin (point i in fold
 * (i / block) mod k; block 1 interleaves single points).  Fills p's
 * degree, coef, folds, cv_block, cv_mse, cv_se, max_tried and rmse
 * (center and scale are the caller's).
 */
int hp__lrfind_cv_poly(const double *t, const double *y, int n, int folds,
		       int block, int max_degree, struct hp_lrfind_poly *p,
		       struct hp_error *err);

/* loss = a + b ln(lr) by least squares (gsl_multifit_linear) over n >= 3
 * points; fills a, b, r2, points, lr_lo, lr_hi. */
int hp__lrfind_logfit(const double *lr, const double *y, int n,
		      struct hp_lrfind_logfit *out, struct hp_error *err);

/* Append s to b escaped for XML text and attributes (&<>"'); control
 * characters and bytes that are not UTF-8 first go through
 * hp_str_escape(), since XML cannot hold them even escaped. */
int hp__lrfind_xml_text(struct hp_buf *b, const char *s);

#endif
