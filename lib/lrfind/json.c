/*
 * json.c - a range test's analysis as JSON (`hetpool lr-find --json` and
 * DIR/lr-find.json): the suggestion and the interval with how each was
 * found, the candidates, both fits, and what the run did.
 */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>

#include "hetpool/lrfind.h"
#include "util/banned.h"

/* A number, or null where it is not finite (JSON has no NaN). */
static json_t *num(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

/* Set key to v, taking v; false when v is NULL (out of memory). */
static bool put(json_t *o, const char *key, json_t *v)
{
	return v && json_object_set_new(o, key, v) == 0;
}

static json_t *pick_json(const struct hp_lrfind_pick *p)
{
	json_t *o = json_object();

	if (o && put(o, "lr", num(p->lr)) && put(o, "how", json_string(p->how)))
		return o;
	json_decref(o);
	return NULL;
}

static json_t *poly_json(const struct hp_lrfind_poly *p)
{
	json_t *o = json_object(), *c = json_array(), *cv = json_array(),
	       *se = json_array();
	bool ok = o && c && cv && se;

	for (int k = 0; ok && k <= p->degree; k++)
		ok = json_array_append_new(c, num(p->coef[k])) == 0;
	/* Index d of cv_mse is degree d; degree 0 is not tried. */
	for (int d = 0; ok && d <= p->max_tried; d++)
		ok = json_array_append_new(cv, num(p->cv_mse[d])) == 0 &&
		     json_array_append_new(se, num(p->cv_se[d])) == 0;
	ok = ok && put(o, "degree", json_integer(p->degree)) &&
	     put(o, "variable",
		 json_string("t = (log10(lr) - center) / scale")) &&
	     put(o, "formula", json_string("loss = sum coefficients[k] t^k")) &&
	     put(o, "center", num(p->center)) &&
	     put(o, "scale", num(p->scale)) &&
	     put(o, "coefficients", json_incref(c)) &&
	     put(o, "cv_folds", json_integer(p->folds)) &&
	     put(o, "cv_block", json_integer(p->cv_block)) &&
	     put(o, "cv_mse_by_degree", json_incref(cv)) &&
	     put(o, "cv_se_by_degree", json_incref(se)) &&
	     put(o, "rmse", num(p->rmse));
	json_decref(c);
	json_decref(cv);
	json_decref(se);
	if (ok)
		return o;
	json_decref(o);
	return NULL;
}

static json_t *logfit_json(const struct hp_lrfind_logfit *f)
{
	json_t *o = json_object();

	if (o && put(o, "formula", json_string("loss = a + b ln(lr)")) &&
	    put(o, "a", num(f->a)) && put(o, "b", num(f->b)) &&
	    put(o, "lr_range",
		json_pack("[o, o]", num(f->lr_lo), num(f->lr_hi))) &&
	    put(o, "points", json_integer(f->points)) &&
	    put(o, "r2", num(f->r2)))
		return o;
	json_decref(o);
	return NULL;
}

/* A path as given; one that is not UTF-8 (JSON strings must be) with its
 * odd bytes escaped. */
static json_t *str_or_null(const char *s)
{
	char esc[4096];
	json_t *v;

	if (!s)
		return json_null();
	if ((v = json_string(s)))
		return v;
	return json_string(hp_str_escape(s, esc, sizeof(esc)));
}

char *hp_lrfind_result_json(const struct hp_lrfind_series *s,
			    const struct hp_lrfind_result *r,
			    const struct hp_lrfind_run *run)
{
	static const struct hp_lrfind_run none = {0};
	const struct hp_lrfind_point *div =
	    r->diverged_at >= 0 ? &s->pts[r->diverged_at] : NULL;
	const struct hp_lrfind_point *rise =
	    r->rise_idx >= 0 ? &s->pts[r->rise_idx] : NULL;
	json_t *o = json_object(), *warn = json_array();
	char *text = NULL;
	bool stopped, ok = o && warn;

	if (!run)
		run = &none;
	stopped =
	    div || (run->steps_requested > 0 && s->n < run->steps_requested);
	for (int i = 0; ok && i < r->nwarnings; i++)
		ok = json_array_append_new(warn, json_string(r->warnings[i])) ==
		     0;
	ok = ok && put(o, "suggested_lr", num(r->suggested.lr)) &&
	     put(o, "suggested_how", json_string(r->suggested.how)) &&
	     put(o, "interval",
		 json_pack("[o, o]", num(r->low.lr), num(r->high.lr))) &&
	     put(o, "interval_how",
		 json_pack("{s:s, s:s}", "low", r->low.how, "high",
			   r->high.how)) &&
	     put(o, "candidates",
		 json_pack("{s:o, s:o, s:o}", "steepest",
			   pick_json(&r->steepest), "minimum_div10",
			   pick_json(&r->min_div10), "knee",
			   pick_json(&r->knee))) &&
	     put(o, "steps_run", json_integer(s->n)) &&
	     put(o, "steps_requested",
		 run->steps_requested > 0 ? json_integer(run->steps_requested)
					  : json_null()) &&
	     put(o, "stopped_early", json_boolean(stopped)) &&
	     put(o, "diverged", json_boolean(div != NULL)) &&
	     put(o, "diverged_at_step",
		 div ? json_integer(div->step) : json_null()) &&
	     put(o, "diverged_at_lr", div ? num(div->lr) : json_null()) &&
	     put(o, "lr_range",
		 json_pack("[o, o]", num(s->pts[0].lr),
			   num(s->pts[s->n - 1].lr))) &&
	     put(o, "steps_analysed", json_integer(r->analysed)) &&
	     put(o, "steps_fitted", json_integer(r->fit_end - r->fit_start)) &&
	     put(o, "fit_lr_range",
		 json_pack("[o, o]", num(s->pts[r->fit_start].lr),
			   num(s->pts[r->fit_end - 1].lr))) &&
	     put(o, "smoothing",
		 json_pack("{s:s, s:i, s:o, s:o}", "method",
			   hp_lrfind_smoother_name(r->smoother), "window",
			   r->window, "ewma_beta", num(r->beta),
			   "divergence_factor", num(r->diverge_factor))) &&
	     put(o, "polynomial", poly_json(&r->poly)) &&
	     put(o, "log_fit", logfit_json(&r->logfit)) &&
	     put(o, "lr_fit_minimum", num(r->lr_fit_min)) &&
	     put(o, "loss_floor", num(r->loss_floor)) &&
	     put(o, "lr_smoothed_minimum", num(r->lr_smooth_min)) &&
	     put(o, "lr_first_minimum", num(r->lr_first_min)) &&
	     put(o, "lr_loss_rises", rise ? num(rise->lr) : json_null()) &&
	     put(o, "lr_descent_begins", num(r->lr_descent)) &&
	     put(o, "loss_noise", num(r->noise)) &&
	     put(o, "accuracy_at_suggested", num(r->accuracy_at_suggested)) &&
	     put(o, "warnings", json_incref(warn)) &&
	     put(o, "metrics", str_or_null(run->metrics)) &&
	     put(o, "plot", str_or_null(run->plot));
	if (ok)
		text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(warn);
	json_decref(o);
	return text;
}
