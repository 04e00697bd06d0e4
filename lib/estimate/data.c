/*
 * data.c - the samples the estimator fits on: every row of the profiler's
 * datasets, re-analysed from its spec into a workload, and the public GPU
 * measurements of models we can analyse (ResNet-50, ResNet-18 at CIFAR
 * size, ShuffleNetV2 at CIFAR size), with notes on what was left out.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estimate/estimate_int.h"
#include "hetpool/measure.h"
#include "hetpool/perf.h"
#include "util/banned.h"

void hp__set_release(struct hp__set *set)
{
	for (int i = 0; i < set->nwl; i++)
		hp_workload_release(&set->wl[i]);
	free(set->wl);
	free(set->s);
	memset(set, 0, sizeof(*set));
}

static struct hp__sample *add_sample(struct hp__set *set)
{
	struct hp__sample *s;

	if (set->n == set->alloc) {
		int na = set->alloc ? set->alloc * 2 : 256;
		struct hp__sample *ns =
		    realloc(set->s, (size_t)na * sizeof(*ns));
		if (!ns)
			return NULL;
		set->s = ns;
		set->alloc = na;
	}
	s = &set->s[set->n++];
	memset(s, 0, sizeof(*s));
	s->ndev = 1;
	s->power_w = NAN;
	for (int k = 0; k < HP_EST_NCLASS; k++)
		s->tcls[k] = NAN;
	return s;
}

/* A new workload slot; -1 on ENOMEM. */
static int add_wl(struct hp__set *set)
{
	if (set->nwl == set->awl) {
		int na = set->awl ? set->awl * 2 : 64;
		struct hp_workload *nw =
		    realloc(set->wl, (size_t)na * sizeof(*nw));
		if (!nw)
			return -1;
		set->wl = nw;
		set->awl = na;
	}
	memset(&set->wl[set->nwl], 0, sizeof(set->wl[0]));
	return set->nwl++;
}

static void note(struct hp__set *set, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void note(struct hp__set *set, const char *fmt, ...)
{
	va_list ap;

	if (set->nnotes >= 8)
		return;
	va_start(ap, fmt);
	vsnprintf(set->notes[set->nnotes++], sizeof(set->notes[0]), fmt, ap);
	va_end(ap);
}

struct prof_ctx {
	struct hp__set *set;
	const struct hp_catalog *cat;
	const char *path;
	struct hp_error *err;
	int rows, skipped, busy;
};

static int prof_row(const struct hp_profile_row *r, void *ud)
{
	struct prof_ctx *c = ud;
	struct hp_spec spec;
	struct hp_graph *g;
	struct hp__sample *s;
	const struct hp_device_type *t;
	int wl, rc;

	if (!(r->step_time_s > 0) || r->batch < 1) {
		c->skipped++;
		return 0;
	}
	/* Measured while other tasks fought for the CPUs: not the device's
	 * time (the profiler warned and recorded it). */
	if (r->cpu_pressure > HP__MAX_CPU_PRESSURE) {
		c->busy++;
		return 0;
	}
	if (!strncmp(r->device, "cuda", 4))
		t = hp_measure_device(c->cat, NULL, r->device_name, NULL);
	else
		t = hp_catalog_find(c->cat, r->device);
	if (!t) {
		c->skipped++;
		return 0;
	}
	rc = hp_spec_parse_only(r->spec_json, strlen(r->spec_json), &spec,
				c->err);
	if (rc) {
		hp_error_prefix(c->err, "%s: row '%s': spec_json", c->path,
				r->config_id);
		return rc;
	}
	g = hp_spec_to_graph(&spec, c->err);
	hp_spec_release(&spec);
	if (!g) {
		hp_error_prefix(c->err, "%s: row '%s'", c->path, r->config_id);
		return c->err->code ? c->err->code : HP_EINVAL;
	}
	if ((wl = add_wl(c->set)) < 0) {
		hp_graph_free(g);
		return hp_error_set(c->err, HP_ENOMEM, "out of memory");
	}
	rc = hp_workload_from_graph(g, r->batch, NULL, 0, &c->set->wl[wl],
				    c->err);
	hp_graph_free(g);
	if (rc) {
		c->set->nwl--;
		hp_error_prefix(c->err, "%s: row '%s'", c->path, r->config_id);
		return rc;
	}
	if (!(s = add_sample(c->set)))
		return hp_error_set(c->err, HP_ENOMEM, "out of memory");
	snprintf(s->device, sizeof(s->device), "%s", t->name);
	snprintf(s->family, sizeof(s->family), "%s", r->family);
	s->src = HP__SRC_PROFILE;
	s->wl = wl;
	s->t = r->step_time_s;
	s->cv = r->step_time_cv;
	s->power_w = r->power_w;
	s->peak_mem_bytes = r->peak_mem_bytes;
	s->structural = r->conv_layers > 0;
	s->chan_block = hp__chan_block(r->backend);
	s->tcls[HP_EST_CONV] = r->time_conv_s;
	s->tcls[HP_EST_FC] = r->time_fc_s;
	s->tcls[HP_EST_OTHER] = r->time_other_s;
	c->rows++;
	return 0;
}

/* The models of the public measurements we can analyse. */
static const struct pub_model {
	const char *source, *model, *dataset; /* dataset NULL: any */
	const char *family, *file;
	int64_t hw; /* input height and width; 0: the model's own */
} pub_models[] = {
    {"lambda", "resnet50", NULL, "resnet50", "resnet50.train.onnx", 0},
    {"gavel", "ResNet-50", NULL, "resnet50", "resnet50.train.onnx", 0},
    {"gavel", "ResNet-18", NULL, "resnet18-cifar", "resnet18.train.onnx", 32},
    {"zeus", "resnet50", "imagenet", "resnet50", "resnet50.train.onnx", 0},
    {"zeus", "shufflenetv2", "cifar100", "shufflenetv2-cifar",
     "shufflenet_v2_x1_0.train.onnx", 32},
};
#define NPUB ((int)(sizeof(pub_models) / sizeof(pub_models[0])))

/* Workloads already analysed: (model, per-device batch) -> index. */
struct wl_key {
	int model;
	int64_t batch;
	int wl;
};

static int src_of(const char *s)
{
	if (!strcmp(s, "lambda"))
		return HP__SRC_LAMBDA;
	if (!strcmp(s, "gavel"))
		return HP__SRC_GAVEL;
	if (!strcmp(s, "zeus"))
		return HP__SRC_ZEUS;
	return -1;
}

static int load_public(struct hp__set *set, const struct hp_fit_options *o,
		       const struct hp_catalog *cat, struct hp_error *err)
{
	struct hp_measure_set ms;
	struct hp_graph *graphs[NPUB] = {0};
	struct wl_key *keys = NULL;
	int nkeys = 0, akeys = 0, rc;
	int n_fp16 = 0, n_other = 0, n_gavel_multi = 0, n_nobatch = 0;
	char other[160] = "";

	hp_measure_set_init(&ms);
	rc = hp_measure_load_dir(&ms, cat, o->public_dir, err);
	if (rc)
		goto out;
	for (size_t i = 0; i < ms.n; i++) {
		const struct hp_measurement *m = &ms.v[i];
		const struct pub_model *pm = NULL;
		struct hp__sample *s;
		int64_t per;
		int mi = -1, wl = -1, src = src_of(m->source);

		for (int k = 0; k < NPUB; k++)
			if (!strcmp(pub_models[k].source, m->source) &&
			    !strcmp(pub_models[k].model, m->model) &&
			    (!pub_models[k].dataset ||
			     !strcmp(pub_models[k].dataset, m->dataset))) {
				pm = &pub_models[k];
				mi = k;
			}
		if (!pm || src < 0) {
			if (!strstr(other, m->model) &&
			    strlen(other) + strlen(m->model) + 3 <
				sizeof(other))
				snprintf(other + strlen(other),
					 sizeof(other) - strlen(other), "%s%s",
					 other[0] ? ", " : "", m->model);
			n_other++;
			continue;
		}
		if (m->fp16) {
			n_fp16++;
			continue;
		}
		if (!m->default_power)
			continue; /* power-capped Zeus runs */
		if (src == HP__SRC_GAVEL && m->ndevices > 1) {
			n_gavel_multi++;
			continue;
		}
		if (m->batch < 1 || !(m->step_time_s > 0) ||
		    m->batch % m->ndevices) {
			n_nobatch++;
			continue;
		}
		per = m->batch / m->ndevices;
		for (int k = 0; k < nkeys; k++)
			if (keys[k].model == mi && keys[k].batch == per)
				wl = keys[k].wl;
		if (wl < 0) {
			int64_t shape[3] = {3, pm->hw, pm->hw};
			if (!graphs[mi]) {
				char path[1024];
				snprintf(path, sizeof(path), "%s/%s",
					 o->models_dir ? o->models_dir : ".",
					 pm->file);
				graphs[mi] = hp_model_load(path, err);
				if (!graphs[mi]) {
					hp_error_prefix(err, "'%s'", path);
					rc = err->code ? err->code : HP_EIO;
					goto out;
				}
			}
			if ((wl = add_wl(set)) < 0) {
				rc = hp_error_set(err, HP_ENOMEM,
						  "out of memory");
				goto out;
			}
			rc = hp_workload_from_graph(
			    graphs[mi], per, pm->hw ? shape : NULL,
			    pm->hw ? 3 : 0, &set->wl[wl], err);
			if (rc) {
				set->nwl--;
				goto out;
			}
			if (nkeys == akeys) {
				int na = akeys ? akeys * 2 : 32;
				struct wl_key *nk =
				    realloc(keys, (size_t)na * sizeof(*nk));
				if (!nk) {
					rc = hp_error_set(err, HP_ENOMEM,
							  "out of memory");
					goto out;
				}
				keys = nk;
				akeys = na;
			}
			keys[nkeys].model = mi;
			keys[nkeys].batch = per;
			keys[nkeys++].wl = wl;
		}
		if (!(s = add_sample(set))) {
			rc = hp_error_set(err, HP_ENOMEM, "out of memory");
			goto out;
		}
		snprintf(s->device, sizeof(s->device), "%s", m->device);
		snprintf(s->family, sizeof(s->family), "%s", pm->family);
		s->src = src;
		s->ndev = m->ndevices;
		s->wl = wl;
		s->t = m->step_time_s;
		s->power_w = m->power_w;
		set->public_rows++;
	}
	note(set,
	     "public: %d fp32 rows of ResNet-50, ResNet-18 (CIFAR, 32x32) "
	     "and ShuffleNetV2 (CIFAR, 32x32) used",
	     set->public_rows);
	if (n_other)
		note(set,
		     "public: %d rows of models with no ONNX here left out: "
		     "%.140s",
		     n_other, other);
	if (n_fp16)
		note(set,
		     "public: %d fp16 (mixed precision) rows left out: the "
		     "models are fp32",
		     n_fp16);
	if (n_gavel_multi)
		note(set,
		     "public: %d Gavel multi-GPU rows left out (their steps/s "
		     "do not scale like one step of the global batch)",
		     n_gavel_multi);
	if (n_nobatch)
		note(set,
		     "public: %d rows without a usable batch size left out",
		     n_nobatch);
out:
	for (int k = 0; k < NPUB; k++)
		hp_graph_free(graphs[k]);
	free(keys);
	hp_measure_set_release(&ms);
	return rc;
}

int hp__set_load(struct hp__set *set, const struct hp_fit_options *o,
		 const struct hp_catalog *cat, struct hp_error *err)
{
	int rc;

	memset(set, 0, sizeof(*set));
	for (int i = 0; i < o->ndatasets; i++) {
		struct prof_ctx c = {set, cat, o->datasets[i], err, 0, 0, 0};
		int64_t torn = 0;
		rc = hp_dataset_read(o->datasets[i], prof_row, &c, &torn, err);
		if (rc) {
			hp__set_release(set);
			return rc;
		}
		set->profile_rows += c.rows;
		note(set, "profiles: %d rows from %s%s", c.rows, o->datasets[i],
		     c.skipped ? " (some rows without a step time or a known "
				 "device left out)"
			       : "");
		if (c.busy)
			note(set,
			     "profiles: %d rows of %s measured on a busy host "
			     "(cpu_pressure over %.2f) left out",
			     c.busy, o->datasets[i], HP__MAX_CPU_PRESSURE);
	}
	if (o->public_dir) {
		rc = load_public(set, o, cat, err);
		if (rc) {
			hp__set_release(set);
			return rc;
		}
	}
	if (set->n == 0) {
		hp__set_release(set);
		return hp_error_set(err, HP_EINVAL,
				    "no measurements to fit: give a profile "
				    "dataset or the public measurements");
	}
	return 0;
}
