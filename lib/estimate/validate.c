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
	return 0;
}

/*
 * Score the held-out samples: for each group g of grp[] (-1: not in the
 * scheme), fit on the scheme's other samples and predict the group's.
 */
static int run_scheme(const struct hp__set *set, const int *grp, int ngrp,
		      const bool *in, const struct hp_catalog *cat,
		      struct score sc[4], struct hp_error *err)
{
	bool *use = calloc((size_t)set->n + 1, sizeof(*use));
	int rc = 0;

	if (!use)
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	for (int g = 0; g < ngrp; g++) {
		struct hp_estimator *est;
		bool any = false;
		for (int i = 0; i < set->n; i++) {
			use[i] = in[i] && grp[i] != g;
			any |= in[i] && grp[i] == g;
		}
		if (!any)
			continue;
		est = hp__fit_set(set, use, cat, false, err);
		if (!est) {
			rc = err->code ? err->code : HP_EINTERNAL;
			break;
		}
		for (int i = 0; i < set->n; i++) {
			const struct hp__sample *s = &set->s[i];
			if (!in[i] || grp[i] != g)
				continue;
			for (int f = 0; f < 3; f++) {
				struct hp_prediction p;
				struct hp_error e2;
				if (hp__predict(est, cat, &set->wl[s->wl],
						s->device, s->ndev, f, s->src,
						&p, &e2))
					continue;
				sc[f].ape[sc[f].n++] =
				    100 * fabs(p.step_time_s / s->t - 1);
				/* One setup across many GPU types: the
				 * cleanest test of cross-device transfer. */
				if (f == HP_EST_PHYSICAL &&
				    s->src == HP__SRC_LAMBDA)
					sc[3].ape[sc[3].n++] =
					    sc[f].ape[sc[f].n - 1];
			}
		}
		hp_estimator_free(est);
	}
	free(use);
	return rc;
}

int hp_estimator_validate(const struct hp_fit_options *o,
			  const struct hp_catalog *cat, int folds,
			  struct hp_validation *out, struct hp_error *err)
{
	static const char *const scheme_names[3] = {
	    "k-fold", "leave-family-out", "leave-device-out"};
	struct hp__set set;
	struct score sc[4] = {0};
	bool *in = NULL;
	int *grp = NULL, rc = 0;
	char(*names)[48] = NULL;
	bool oom = false;

	memset(out, 0, sizeof(*out));
	if (folds < 2 || folds > 100)
		return hp_error_set(err, HP_EINVAL, "%d folds: give 2 to 100",
				    folds);
	if ((rc = hp__set_load(&set, o, cat, err)))
		return rc;
	in = calloc((size_t)set.n + 1, sizeof(*in));
	grp = calloc((size_t)set.n + 1, sizeof(*grp));
	names = calloc((size_t)set.n + 1, sizeof(*names));
	for (int f = 0; f < 4; f++) {
		sc[f].ape = calloc((size_t)set.n + 1, sizeof(double));
		if (!sc[f].ape)
			oom = true;
	}
	if (oom || !in || !grp || !names) {
		rc = hp_error_set(err, HP_ENOMEM, "out of memory");
		goto out;
	}
	for (int i = 0; i < set.nnotes; i++)
		snprintf(out->notes[out->nnotes++], sizeof(out->notes[0]), "%s",
			 set.notes[i]);

	/* data 0: the profiles (CPU); data 1: the public GPU rows. */
	for (int data = 0; data < 2; data++) {
		const char *dname = data ? "public-gpu" : "cpu-profiles";
		int nin = 0;
		for (int i = 0; i < set.n; i++) {
			const struct hp_device_type *t =
			    hp_catalog_find(cat, set.s[i].device);
			bool cpu = t && t->kind == HP_DEVICE_CPU;
			in[i] = t && (data ? !cpu : cpu);
			nin += in[i];
		}
		if (!nin)
			continue;
		for (int scheme = 0; scheme < 3; scheme++) {
			int ngrp = 0;
			char note[128] = "";
			if (scheme == 1 && data == 1)
				continue; /* 3 models: too few families */
			if (scheme == 2 && data == 0)
				continue; /* one CPU type */
			for (int i = 0; i < set.n; i++) {
				const char *key = NULL;
				int g;
				grp[i] = -1;
				if (!in[i])
					continue;
				if (scheme == 0) {
					grp[i] =
					    (int)(((uint32_t)i * 2654435761u >>
						   7) %
						  (uint32_t)folds);
					if (grp[i] + 1 > ngrp)
						ngrp = grp[i] + 1;
					continue;
				}
				key = scheme == 1 ? set.s[i].family
						  : set.s[i].device;
				for (g = 0; g < ngrp; g++)
					if (!strcmp(names[g], key))
						break;
				if (g == ngrp)
					snprintf(names[ngrp++],
						 sizeof(names[0]), "%s", key);
				grp[i] = g;
			}
			for (int f = 0; f < 4; f++)
				sc[f].n = 0;
			rc = run_scheme(&set, grp, ngrp, in, cat, sc, err);
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
				    "Lambda rows only: one setup, many GPU "
				    "types")) {
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
	}
out:
	free(in);
	free(grp);
	free(names);
	for (int f = 0; f < 4; f++)
		free(sc[f].ape);
	hp__set_release(&set);
	if (rc)
		hp_validation_release(out);
	return rc;
}
