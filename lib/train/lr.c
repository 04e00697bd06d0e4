/*
 * lr.c - the learning rate of each step: a scaling rule from a reference
 * batch (linear or square root), a linear warm-up, and a schedule
 * (constant, step, cosine, or the range test's exponential ramp).
 */
#include <math.h>
#include <string.h>

#include "hetpool/train.h"
#include "util/banned.h"

static const char *const sched_names[] = {"constant", "step", "cosine",
					  "exp-ramp"};

void hp_lr_plan_init(struct hp_lr_plan *p)
{
	memset(p, 0, sizeof(*p));
	p->lr = 0.01;
	p->rule = HP_LR_NONE;
	p->sched = HP_LR_CONSTANT;
	p->gamma = 0.1;
	p->total_steps = 1;
	p->global_batch = 1;
	p->ref_batch = 0;
}

const char *hp_lr_sched_name(enum hp_lr_sched s)
{
	return (unsigned)s <= HP_LR_EXP_RAMP ? sched_names[s] : "?";
}

int hp_lr_sched_parse(const char *s, enum hp_lr_sched *out)
{
	for (int i = 0; i <= HP_LR_EXP_RAMP; i++)
		if (s && !strcmp(s, sched_names[i])) {
			*out = (enum hp_lr_sched)i;
			return 0;
		}
	return HP_EINVAL;
}

int hp_lr_plan_check(const struct hp_lr_plan *p, struct hp_error *err)
{
	if (p->total_steps < 1)
		return hp_error_set(err, HP_ERANGE, "the run has no steps");
	if (p->global_batch < 1)
		return hp_error_set(err, HP_ERANGE, "--batch must be positive");
	if (p->sched == HP_LR_EXP_RAMP) {
		if (!(p->lr_min > 0) || !(p->lr_max > p->lr_min) ||
		    !isfinite(p->lr_max))
			return hp_error_set(err, HP_ERANGE,
					    "exp-ramp needs 0 < --lr-min < "
					    "--lr-max (got %g and %g)",
					    p->lr_min, p->lr_max);
		return 0;
	}
	if (!(p->lr > 0) || !isfinite(p->lr))
		return hp_error_set(err, HP_ERANGE,
				    "--lr must be positive (got %g)", p->lr);
	if (p->rule != HP_LR_NONE && p->ref_batch < 1)
		return hp_error_set(err, HP_ERANGE,
				    "--lr-rule %s needs --ref-batch N",
				    hp_lr_rule_name(p->rule));
	if (p->warmup_steps < 0)
		return hp_error_set(err, HP_ERANGE,
				    "--warmup-steps must not be negative");
	if (p->sched == HP_LR_STEP &&
	    (p->step_every < 1 || !(p->gamma > 0) || !isfinite(p->gamma)))
		return hp_error_set(err, HP_ERANGE,
				    "the step schedule needs --lr-step-every "
				    "N >= 1 and --lr-gamma G > 0");
	if (p->sched == HP_LR_COSINE &&
	    (!(p->lr_min >= 0) || !(p->lr_min < hp_lr_peak(p))))
		return hp_error_set(err, HP_ERANGE,
				    "the cosine schedule needs 0 <= --lr-min "
				    "< the peak rate %g",
				    hp_lr_peak(p));
	return 0;
}

double hp_lr_peak(const struct hp_lr_plan *p)
{
	double ratio = p->ref_batch > 0
			   ? (double)p->global_batch / (double)p->ref_batch
			   : 1;

	switch (p->rule) {
	case HP_LR_LINEAR:
		return p->lr * ratio;
	case HP_LR_SQRT:
		return p->lr * sqrt(ratio);
	default:
		return p->lr;
	}
}

double hp_lr_at(const struct hp_lr_plan *p, int64_t step)
{
	double peak = hp_lr_peak(p);
	int64_t t, span;

	if (p->sched == HP_LR_EXP_RAMP) {
		double f = p->total_steps > 1
			       ? (double)step / (double)(p->total_steps - 1)
			       : 0;
		/* in logs: lr_max / lr_min overflows for a range such as
		 * 1e-303 to 1e6 */
		if (f >= 1)
			return p->lr_max;
		return exp(log(p->lr_min) +
			   f * (log(p->lr_max) - log(p->lr_min)));
	}
	if (step < p->warmup_steps)
		return peak * (double)(step + 1) / (double)p->warmup_steps;
	t = step - p->warmup_steps;
	span = p->total_steps - p->warmup_steps;
	switch (p->sched) {
	case HP_LR_STEP:
		return peak * pow(p->gamma, (double)(t / p->step_every));
	case HP_LR_COSINE:
		/* PyTorch's CosineAnnealingLR with T_max = span */
		if (span < 1)
			return peak;
		return p->lr_min +
		       (peak - p->lr_min) * 0.5 *
			   (1 + cos(M_PI * (double)t / (double)span));
	default:
		return peak;
	}
}
