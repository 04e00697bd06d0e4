/*
 * front.c - the time-energy front: of the configurations a search costed
 * (each faster one using more energy), or exact, from searches of one
 * session at deadlines from the fastest to the least energy.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "recommend/search_int.h"
#include "util/banned.h"

int hp__rec_config_copy(struct hp_rec_config *d, const struct hp_rec_config *s)
{
	*d = *s;
	d->groups =
	    malloc((size_t)(s->ngroups ? s->ngroups : 1) * sizeof(*d->groups));
	if (!d->groups)
		return HP_ENOMEM;
	memcpy(d->groups, s->groups, (size_t)s->ngroups * sizeof(*d->groups));
	return 0;
}

static int cmp_cfg_time(const void *a, const void *b)
{
	const struct hp_rec_config *x = a, *y = b;
	if (x->time_s != y->time_s)
		return x->time_s < y->time_s ? -1 : 1;
	return (x->energy_j > y->energy_j) - (x->energy_j < y->energy_j);
}

int hp__rec_set_front(struct hp_rec_result *out, struct hp_rec_config *cfgs,
		      int n)
{
	struct hp_rec_config *pa;
	double emin = INFINITY;
	int np = 0;

	if (n > 0)
		qsort(cfgs, (size_t)n, sizeof(*cfgs), cmp_cfg_time);
	pa = calloc((size_t)n + 1, sizeof(*pa));
	if (!pa)
		return HP_ENOMEM;
	/* A configuration stays if it uses less energy than every faster
	 * one (the same time and energy once). */
	for (int i = 0; i < n; i++) {
		if (!(cfgs[i].energy_j < emin))
			continue;
		emin = cfgs[i].energy_j;
		if (hp__rec_config_copy(&pa[np], &cfgs[i])) {
			while (np > 0)
				hp_rec_config_release(&pa[--np]);
			free(pa);
			return HP_ENOMEM;
		}
		np++;
	}
	for (int i = 0; i < out->npareto; i++)
		hp_rec_config_release(&out->pareto[i]);
	free(out->pareto);
	out->pareto = pa;
	out->npareto = np;
	return 0;
}

/*
 * The exact time-energy front of the chosen global batch at k deadlines:
 * the fastest configuration (a search nothing can meet), the least
 * energy with no deadline, and k - 2 deadlines spaced geometrically
 * between their times; each point is the least energy at its deadline
 * (the search is exact), so none is dominated by any configuration of
 * the pool.  With the choice, sorted by time, dominated repeats dropped.
 * Replaces out->pareto; 0 or HP_ENOMEM.
 */
int hp__rec_front(struct hp__rec_session *S, int k, struct hp_rec_result *out,
		  struct hp_error *err)
{
	struct hp_rec_config *pts = calloc((size_t)k + 1, sizeof(*pts));
	double tfast = 0, tslow = 0;
	int np = 0, rc = 0;

	if (!pts)
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	/* When nothing met the deadline, the choice is the fastest. */
	if (!out->feasible)
		tfast = out->choice.time_s;
	for (int i = out->feasible ? 0 : 1; i < k && !rc; i++) {
		struct hp_rec_result r;
		double d;
		/* 0: the fastest; 1: the least energy; then between. */
		if (i == 0)
			d = 1e-9;
		else if (i == 1)
			d = 1e15;
		else if (tslow > tfast)
			d = tfast *
			    pow(tslow / tfast, (double)(i - 1) / (k - 1));
		else
			break;
		if ((rc = hp__rec_session_search(S, d, &r, err)))
			break;
		if (r.found && (i == 0 || r.feasible)) {
			pts[np++] = r.choice;
			memset(&r.choice, 0, sizeof(r.choice));
			if (i == 0)
				tfast = pts[np - 1].time_s;
			else if (i == 1)
				tslow = pts[np - 1].time_s;
		}
		hp_rec_result_release(&r);
	}
	if (rc)
		goto out;
	if (out->choice.groups &&
	    hp__rec_config_copy(&pts[np++], &out->choice)) {
		rc = hp_error_set(err, HP_ENOMEM, "out of memory");
		goto out;
	}
	if (hp__rec_set_front(out, pts, np)) {
		rc = hp_error_set(err, HP_ENOMEM, "out of memory");
		goto out;
	}
	out->pareto_exact = true;
out:
	for (int i = 0; i < np; i++)
		hp_rec_config_release(&pts[i]);
	free(pts);
	return rc;
}
