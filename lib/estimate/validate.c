/*
 * validate.c - cross-validation of the estimator's families on the data
 * it fits: k-fold and leave-one-architecture-family-out on the profiles,
 * k-fold and leave-one-GPU-type-out on the public measurements, with the
 * roofline baseline (FLOPs / peak) scored on the same rows.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estimate/estimate_int.h"
#include "util/banned.h"
#include "util/par.h"

void hp_validation_release(struct hp_validation *v)
{
	if (!v)
		return;
	free(v->rows);
	memset(v, 0, sizeof(*v));
}

struct score {
	double *ape;
	int n;
};
/* The families' scores (3), then of the physical family: Lambda's fp32
 * rows, amp rows, Gavel's, Zeus's, the fp32 rows of all sources. */
#define NSCORE 8

static int add_row(struct hp_validation *v, const char *data,
		   enum hp_est_family fam, const char *scheme, struct score *s,
		   const char *note)
{
	struct hp_validation_row *r, *nr;
	double sum = 0, worst = 0;

	nr = realloc(v->rows, (size_t)(v->n + 1) * sizeof(*nr));
	if (!nr)
		return HP_ENOMEM;
	v->rows = nr;
	r = &v->rows[v->n++];
	memset(r, 0, sizeof(*r));
	snprintf(r->data, sizeof(r->data), "%s", data);
	snprintf(r->family, sizeof(r->family), "%s", hp_est_family_name(fam));
	snprintf(r->scheme, sizeof(r->scheme), "%s", scheme);
	snprintf(r->note, sizeof(r->note), "%s", note ? note : "");
	r->n = s->n;
	for (int i = 0; i < s->n; i++) {
		sum += s->ape[i];
		if (s->ape[i] > worst)
			worst = s->ape[i];
	}
	r->mape = s->n ? sum / s->n : NAN;
	r->worst = s->n ? worst : NAN;
	r->median = s->n ? hp__quantile(s->ape, s->n, 0.5) : NAN;
	r->noise_abs = r->noise_rel = NAN;
	return 0;
}

struct hkey {
	uint64_t h;
	int i;
};

static int cmp_hkey(const void *a, const void *b)
{
	const struct hkey *x = a, *y = b;
	if (x->h != y->h)
		return (x->h > y->h) - (x->h < y->h);
	return (x->i > y->i) - (x->i < y->i);
}

int hp__noise_floor(const struct hp__set *set, const bool *in, double *abs_pct,
		    double *rel_pct)
{
	struct hkey *idx = malloc(((size_t)set->n + 1) * sizeof(*idx));
	int n = 0;
	double *da = NULL, *dr = NULL;
	int na = 0, nr = 0, cap = 0;

	*abs_pct = *rel_pct = NAN;
	if (!idx)
		return 0;
	for (int i = 0; i < set->n; i++)
		if ((!in || in[i]) && set->s[i].src == HP__SRC_PROFILE)
			idx[n++] = (struct hkey){set->s[i].cfg_hash, i};
	qsort(idx, (size_t)n, sizeof(*idx), cmp_hkey);
	/* each measurement against the next of its configuration (in the
	 * order measured): linear in the rows, however many repeats */
	for (int g = 0; g < n;) {
		int e = g + 1, k;
		while (e < n && idx[e].h == idx[g].h)
			e++;
		k = e - g;
		if (k > 1) {
			int need = na + k - 1;
			if (need > cap) {
				int nc = need * 2;
				double *pa =
				    realloc(da, (size_t)nc * sizeof(*pa));
				double *pr =
				    pa ? realloc(dr, (size_t)nc * sizeof(*pr))
				       : NULL;
				if (pa)
					da = pa;
				if (!pr)
					goto out;
				dr = pr;
				cap = nc;
			}
			for (int i = g; i + 1 < e; i++) {
				const struct hp__sample *a = &set->s[idx[i].i];
				const struct hp__sample *b =
				    &set->s[idx[i + 1].i];
				double x = a->t_abs, y = b->t_abs;
				/* the same time to the last digit is the same
				 * row twice (a file given twice, rows pasted
				 * again), not a repeat: counted, it would
				 * show a floor of 0% */
				if (x == y)
					continue;
				da[na++] = 200 * fabs(x - y) / (x + y);
				if (isnan(a->ref_row_s) || isnan(b->ref_row_s))
					continue;
				x /= a->ref_row_s;
				y /= b->ref_row_s;
				dr[nr++] = 200 * fabs(x - y) / (x + y);
			}
		}
		g = e;
	}
	if (na)
		*abs_pct = hp__quantile(da, na, 0.5);
	if (nr)
		*rel_pct = hp__quantile(dr, nr, 0.5);
out:
	free(idx);
	free(da);
	free(dr);
	return na;
}

/* The fits of one scheme, each group's a task. */
struct scheme_fits {
	const struct hp__set *set;
	const int *grp;
	const bool *in;
	const struct hp_catalog *cat;
	struct hp__progress *prog;
	struct hp_estimator **est; /* per group; NULL: nothing held out */
	struct hp_error *err;	   /* per group */
};

static int scheme_fit(int g, void *ud)
{
	struct scheme_fits *sf = ud;
	const struct hp__set *set = sf->set;
	bool *use = calloc((size_t)set->n + 1, sizeof(*use)), any = false;

	if (!use)
		return hp_error_set(&sf->err[g], HP_ENOMEM, "out of memory");
	for (int i = 0; i < set->n; i++) {
		use[i] = sf->in[i] && sf->grp[i] != g;
		any |= sf->in[i] && sf->grp[i] == g;
	}
	if (any) {
		sf->est[g] =
		    hp__fit_set(set, use, sf->cat, false, 1, NULL, &sf->err[g]);
		hp__progress_add(sf->prog, 1);
		if (!sf->est[g] && !sf->err[g].code)
			hp_error_set(&sf->err[g], HP_EINTERNAL, "fit failed");
	}
	free(use);
	return sf->err[g].code;
}

/*
 * Score the held-out samples: for each group g of grp[] (-1: not in the
 * scheme), fit on the scheme's other samples (the groups' fits on up to
 * `threads` threads) and predict the group's, in group order.
 */
static int run_scheme(const struct hp__set *set, const int *grp, int ngrp,
		      const bool *in, const struct hp_catalog *cat,
		      struct score sc[NSCORE], int threads,
		      struct hp__progress *prog, struct hp_error *err)
{
	struct scheme_fits sf = {set, grp, in, cat, prog, NULL, NULL};
	int rc = 0;

	sf.est = calloc((size_t)ngrp + 1, sizeof(*sf.est));
	sf.err = calloc((size_t)ngrp + 1, sizeof(*sf.err));
	if (!sf.est || !sf.err) {
		rc = hp_error_set(err, HP_ENOMEM, "out of memory");
		goto out;
	}
	if (hp__par_run(ngrp, threads, scheme_fit, &sf)) {
		for (int g = 0; g < ngrp; g++)
			if (sf.err[g].code) {
				*err = sf.err[g];
				rc = sf.err[g].code;
				break;
			}
		goto out;
	}
	for (int g = 0; g < ngrp; g++) {
		const struct hp_estimator *est = sf.est[g];
		if (!est)
			continue;
		for (int i = 0; i < set->n; i++) {
			const struct hp__sample *s = &set->s[i];
			if (!in[i] || grp[i] != g)
				continue;
			for (int f = 0; f < 3; f++) {
				struct hp_prediction p;
				struct hp_error e2;
				if (hp__predict(est, cat, &set->wl[s->wl],
						s->device, s->ndev, f, s->src,
						s->prec, &p, &e2))
					continue;
				sc[f].ape[sc[f].n++] =
				    100 * fabs(p.step_time_s / s->t - 1);
				/* One setup across many GPU types: the
				 * cleanest test of cross-device transfer. */
				if (f == HP_EST_PHYSICAL &&
				    s->src == HP__SRC_LAMBDA &&
				    s->prec == HP_PREC_FP32)
					sc[3].ape[sc[3].n++] =
					    sc[f].ape[sc[f].n - 1];
				if (f == HP_EST_PHYSICAL &&
				    s->prec == HP_PREC_FP32)
					sc[7].ape[sc[7].n++] =
					    sc[f].ape[sc[f].n - 1];
				/* Mixed precision: the FP16 peak's share is
				 * one shared parameter, learned here from
				 * the other types' amp rows. */
				if (f == HP_EST_PHYSICAL &&
				    s->prec == HP_PREC_AMP)
					sc[4].ape[sc[4].n++] =
					    sc[f].ape[sc[f].n - 1];
				/* Gavel's and Zeus's rows (their setups'
				 * terms are learned from 2-3 types each) */
				if (f == HP_EST_PHYSICAL &&
				    (s->src == HP__SRC_GAVEL ||
				     s->src == HP__SRC_ZEUS)) {
					int k = s->src == HP__SRC_GAVEL ? 5 : 6;
					sc[k].ape[sc[k].n++] =
					    sc[f].ape[sc[f].n - 1];
				}
			}
		}
	}
out:
	for (int g = 0; sf.est && g < ngrp; g++)
		hp_estimator_free(sf.est[g]);
	free(sf.est);
	free(sf.err);
	return rc;
}

/* Mark in[] the rows of data 0 (the profiles: CPU types) or 1 (the
 * public rows: GPU types); how many. */
static int mark_data(const struct hp__set *set, const struct hp_catalog *cat,
		     int data, bool *in)
{
	const struct hp_device_type *t = NULL;
	int nin = 0;

	for (int i = 0; i < set->n; i++) {
		bool cpu;
		if (!t || strcmp(t->name, set->s[i].device))
			t = hp_catalog_find(cat, set->s[i].device);
		cpu = t && t->kind == HP_DEVICE_CPU;
		in[i] = t && (data ? !cpu : cpu);
		nin += in[i];
	}
	return nin;
}

static bool scheme_applies(int data, int scheme)
{
	if (scheme == 1 && data == 1)
		return false; /* 3 models: too few families */
	if (scheme == 2 && data == 0)
		return false; /* one CPU type */
	return true;
}

int hp__kfold_of(const struct hp__set *set, int i, int folds)
{
	uint32_t h = 2166136261u ^ (uint32_t)set->s[i].wl;

	for (const char *p = set->s[i].device; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	h *= 2654435761u;
	return (int)((h >> 7) % (uint32_t)folds);
}

/* Group the rows in[] for scheme (0: k-fold, 1: by architecture family,
 * 2: by device type) into grp[] (-1: not in it); the number of groups. */
static int assign_groups(const struct hp__set *set, const bool *in, int scheme,
			 int folds, int *grp, char (*names)[48])
{
	int ngrp = 0;

	for (int i = 0; i < set->n; i++) {
		const char *key = NULL;
		int g;
		grp[i] = -1;
		if (!in[i])
			continue;
		if (scheme == 0) {
			grp[i] = hp__kfold_of(set, i, folds);
			if (grp[i] + 1 > ngrp)
				ngrp = grp[i] + 1;
			continue;
		}
		key = scheme == 1 ? set->s[i].family : set->s[i].device;
		for (g = ngrp - 1; g >= 0; g--)
			if (!strcmp(names[g], key))
				break;
		if (g < 0) {
			g = ngrp++;
			snprintf(names[g], sizeof(names[0]), "%s", key);
		}
		grp[i] = g;
	}
	return ngrp;
}

/* How many fits validation runs: the groups with rows, every scheme. */
static int64_t count_fits(const struct hp__set *set,
			  const struct hp_catalog *cat, int folds, bool *in,
			  int *grp, char (*names)[48], bool *seen)
{
	int64_t total = 0;

	for (int data = 0; data < 2; data++) {
		if (!mark_data(set, cat, data, in))
			continue;
		for (int scheme = 0; scheme < 3; scheme++) {
			int ngrp;
			if (!scheme_applies(data, scheme))
				continue;
			ngrp =
			    assign_groups(set, in, scheme, folds, grp, names);
			memset(seen, 0, (size_t)ngrp * sizeof(*seen));
			for (int i = 0; i < set->n; i++)
				if (grp[i] >= 0 && !seen[grp[i]]) {
					seen[grp[i]] = true;
					total++;
				}
		}
	}
	return total;
}

int hp_estimator_validate(const struct hp_fit_options *o,
			  const struct hp_catalog *cat, int folds,
			  struct hp_validation *out, struct hp_error *err)
{
	static const char *const scheme_names[3] = {
	    "k-fold", "leave-family-out", "leave-device-out"};
	struct hp__progress prog = {.fn = o->progress,
				    .ud = o->progress_ud,
				    .stage = "validating",
				    .mu = PTHREAD_MUTEX_INITIALIZER};
	struct hp__set set;
	struct score sc[NSCORE] = {0};
	bool *in = NULL, *seen = NULL;
	int *grp = NULL, rc = 0;
	int threads = o->threads > 0 ? o->threads : hp__par_default_threads();
	char(*names)[48] = NULL;
	bool oom = false;

	memset(out, 0, sizeof(*out));
	if (folds < 2 || folds > 100)
		return hp_error_set(err, HP_EINVAL, "%d folds: give 2 to 100",
				    folds);
	if ((rc = hp__set_load(&set, o, cat, err)))
		return rc;
	in = calloc((size_t)set.n + 1, sizeof(*in));
	seen = calloc((size_t)set.n + 1, sizeof(*seen));
	grp = calloc((size_t)set.n + 1, sizeof(*grp));
	names = calloc((size_t)set.n + 1, sizeof(*names));
	for (int f = 0; f < NSCORE; f++) {
		sc[f].ape = calloc((size_t)set.n + 1, sizeof(double));
		if (!sc[f].ape)
			oom = true;
	}
	if (oom || !in || !seen || !grp || !names) {
		rc = hp_error_set(err, HP_ENOMEM, "out of memory");
		goto out;
	}
	for (int i = 0; i < set.nnotes; i++)
		snprintf(out->notes[out->nnotes++], sizeof(out->notes[0]), "%s",
			 set.notes[i]);
	prog.total = count_fits(&set, cat, folds, in, grp, names, seen);

	/* data 0: the profiles (CPU); data 1: the public GPU rows. */
	for (int data = 0; data < 2; data++) {
		const char *dname = data ? "public-gpu" : "cpu-profiles";
		double nabs, nrel;
		int npairs, first_row = out->n;
		if (!mark_data(&set, cat, data, in))
			continue;
		npairs = hp__noise_floor(&set, in, &nabs, &nrel);
		for (int scheme = 0; scheme < 3; scheme++) {
			int ngrp;
			char note[128] = "";
			if (!scheme_applies(data, scheme))
				continue;
			ngrp =
			    assign_groups(&set, in, scheme, folds, grp, names);
			for (int f = 0; f < NSCORE; f++)
				sc[f].n = 0;
			rc = run_scheme(&set, grp, ngrp, in, cat, sc, threads,
					&prog, err);
			if (rc)
				goto out;
			snprintf(note, sizeof(note), "%d %s", ngrp,
				 scheme == 0   ? "folds"
				 : scheme == 1 ? "families"
					       : "device types");
			for (int f = 0; f < 3; f++) {
				if (sc[f].n == 0)
					continue;
				if ((rc = add_row(out, dname, f,
						  scheme_names[scheme], &sc[f],
						  note))) {
					rc = hp_error_set(err, HP_ENOMEM,
							  "out of memory");
					goto out;
				}
			}
			if (data == 1 && scheme == 2 && sc[3].n &&
			    add_row(out, "public-lambda", HP_EST_PHYSICAL,
				    scheme_names[scheme], &sc[3],
				    "Lambda fp32 rows only: one setup, many "
				    "GPU types")) {
				rc = hp_error_set(err, HP_ENOMEM,
						  "out of memory");
				goto out;
			}
			if (data == 1 && scheme == 2 && sc[7].n &&
			    add_row(out, "public-fp32", HP_EST_PHYSICAL,
				    scheme_names[scheme], &sc[7],
				    "the fp32 rows of all sources")) {
				rc = hp_error_set(err, HP_ENOMEM,
						  "out of memory");
				goto out;
			}
			if (data == 1 && scheme == 2 && sc[4].n &&
			    add_row(out, "public-amp", HP_EST_PHYSICAL,
				    scheme_names[scheme], &sc[4],
				    "Lambda's fp16 rows, predicted in amp")) {
				rc = hp_error_set(err, HP_ENOMEM,
						  "out of memory");
				goto out;
			}
			for (int k = 5; data == 1 && scheme == 2 && k < 7; k++)
				if (sc[k].n &&
				    add_row(
					out,
					k == 5 ? "public-gavel" : "public-zeus",
					HP_EST_PHYSICAL, scheme_names[scheme],
					&sc[k], "one source's rows")) {
					rc = hp_error_set(err, HP_ENOMEM,
							  "out of memory");
					goto out;
				}
			if (data == 1 && scheme == 0)
				snprintf(
				    out->notes[out->nnotes < 8 ? out->nnotes++
							       : 7],
				    sizeof(out->notes[0]),
				    "linear family: not scored on the "
				    "public GPU rows (no structural "
				    "variables: they are not generated "
				    "CNNs)");
		}
		/* the noise floor beside every error of this data */
		for (int k = first_row; k < out->n; k++) {
			out->rows[k].noise_abs = nabs;
			out->rows[k].noise_rel = nrel;
			out->rows[k].noise_pairs = npairs;
		}
	}
out:
	free(in);
	free(seen);
	free(grp);
	free(names);
	for (int f = 0; f < NSCORE; f++)
		free(sc[f].ape);
	hp__set_release(&set);
	if (rc)
		hp_validation_release(out);
	return rc;
}
