/*
 * data.c - the samples the estimator fits on: every row of the profiler's
 * datasets, re-analysed from its spec into a workload, and the public GPU
 * measurements of models we can analyse (ResNet-50, ResNet-18 at CIFAR
 * size, ShuffleNetV2 at CIFAR size), with notes on what was left out.
 */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
	s->ref_row_s = s->ref_fit_s = NAN;
	s->host_isa = s->host_sgemm = s->host_triad = s->host_cache = NAN;
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

/*
 * Workloads already analysed from the profiles: (spec_json, batch) -> its
 * index in the set, so that rows of one configuration share one analysis
 * (a service refitting from every finished job sees the same
 * configurations again and again).
 */
struct wl_index {
	struct wl_slot {
		uint64_t hash;
		char *spec; /* NULL: empty slot */
		int64_t batch;
		int wl;
	} * slot;
	size_t nslot, n;
};

static uint64_t spec_hash(const char *s, int64_t batch)
{
	uint64_t h = 1469598103934665603ull ^ (uint64_t)batch;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h ^ h >> 31;
}

static void wl_index_release(struct wl_index *x)
{
	for (size_t i = 0; i < x->nslot; i++)
		free(x->slot[i].spec);
	free(x->slot);
	memset(x, 0, sizeof(*x));
}

static struct wl_slot *wl_index_find(struct wl_index *x, const char *spec,
				     int64_t batch, uint64_t h)
{
	size_t s = (size_t)h & (x->nslot - 1);

	for (; x->slot[s].spec; s = (s + 1) & (x->nslot - 1))
		if (x->slot[s].hash == h && x->slot[s].batch == batch &&
		    !strcmp(x->slot[s].spec, spec))
			break;
	return &x->slot[s];
}

/* Room for one more entry (the table at most half full); 0 or ENOMEM. */
static int wl_index_reserve(struct wl_index *x)
{
	struct wl_index nx = {0};

	if (2 * (x->n + 1) <= x->nslot)
		return 0;
	nx.nslot = x->nslot ? 2 * x->nslot : 256;
	nx.slot = calloc(nx.nslot, sizeof(*nx.slot));
	if (!nx.slot)
		return HP_ENOMEM;
	for (size_t i = 0; i < x->nslot; i++)
		if (x->slot[i].spec)
			*wl_index_find(&nx, x->slot[i].spec, x->slot[i].batch,
				       x->slot[i].hash) = x->slot[i];
	nx.n = x->n;
	free(x->slot);
	*x = nx;
	return 0;
}

struct prof_ctx {
	struct hp__set *set;
	const struct hp_catalog *cat;
	const struct hp_fit_options *o;
	const char *path;
	struct wl_index *wls;
	int rows, unknown, busy;
	int hostless;	/* CPU rows without their host's peak */
	int64_t record; /* data rows read so far */
	int line;	/* the line of the row being read */
	int64_t bad;	/* bad rows skipped */
	char why[192];	/* "column 'step_time_s': 0 is not a step time ..." */
};

static void prof_why(struct prof_ctx *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void prof_why(struct prof_ctx *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->why, sizeof(c->why), fmt, ap);
	va_end(ap);
}

/* Whether r's values are physical; if not, why in c->why. */
static bool row_ok(const struct hp_profile_row *r, struct prof_ctx *c)
{
	static const struct {
		const char *name;
		size_t off;
	} cls_cols[] = {
	    {"time_conv_s", offsetof(struct hp_profile_row, time_conv_s)},
	    {"time_fc_s", offsetof(struct hp_profile_row, time_fc_s)},
	    {"time_other_s", offsetof(struct hp_profile_row, time_other_s)},
	};
	const double tmax = HP_FIT_MAX_STEP_TIME_S;

	if (isnan(r->step_time_s)) {
		prof_why(c, "column 'step_time_s': empty is not a step time");
		return false;
	}
	if (!(r->step_time_s > 0 && r->step_time_s < tmax)) {
		prof_why(c,
			 "column 'step_time_s': %g is not a step time (must "
			 "be > 0 and under %g s)",
			 r->step_time_s, tmax);
		return false;
	}
	if (r->batch < 1 || r->batch > HP_FIT_MAX_BATCH) {
		prof_why(c,
			 "column 'batch': %lld is not a batch size (must be "
			 "1 to %lld)",
			 (long long)r->batch, (long long)HP_FIT_MAX_BATCH);
		return false;
	}
	if (r->peak_mem_bytes < 0 ||
	    r->peak_mem_bytes > HP_FIT_MAX_PEAK_MEM_BYTES) {
		prof_why(c,
			 "column 'peak_mem_bytes': %lld is not a memory size "
			 "(must be 0, not measured, to 2^50 bytes)",
			 (long long)r->peak_mem_bytes);
		return false;
	}
	for (size_t k = 0; k < sizeof(cls_cols) / sizeof(cls_cols[0]); k++) {
		double v;
		memcpy(&v, (const char *)r + cls_cols[k].off, sizeof(v));
		if (!isnan(v) && !(v >= 0 && v < tmax)) {
			prof_why(c,
				 "column '%s': %g is not a time (must be "
				 "empty, not measured, or 0 to under %g s)",
				 cls_cols[k].name, v, tmax);
			return false;
		}
	}
	if (!isnan(r->power_w) &&
	    !(r->power_w > 0 && r->power_w < HP_FIT_MAX_POWER_W)) {
		prof_why(c,
			 "column 'power_w': %g is not a power (must be empty, "
			 "not measured, or > 0 and under %g W)",
			 r->power_w, HP_FIT_MAX_POWER_W);
		return false;
	}
	if (!isnan(r->ref_time_s) &&
	    !(r->ref_time_s > 0 && r->ref_time_s < tmax)) {
		prof_why(c,
			 "column 'ref_time_s': %g is not a time (must be "
			 "empty, not measured, or > 0 and under %g s)",
			 r->ref_time_s, tmax);
		return false;
	}
	if (!isnan(r->cpu_pressure) && !(r->cpu_pressure >= 0)) {
		prof_why(c,
			 "column 'cpu_pressure': %g is not a share of time "
			 "(must be empty, not measured, or >= 0)",
			 r->cpu_pressure);
		return false;
	}
	return true;
}

/* A bad row: skipped and counted, or the read stopped (HP_EINVAL, err
 * saying why). */
static int bad_row(struct prof_ctx *c, struct hp_error *err)
{
	struct hp_fit_report *rep = c->o->report;

	if (!c->o->skip_bad_rows)
		return hp_error_set(err, HP_EINVAL, "%s", c->why);
	if (rep && rep->bad_rows_skipped == 0)
		snprintf(rep->first_bad, sizeof(rep->first_bad),
			 "'%s' line %d: %s", c->path, c->line, c->why);
	if (rep)
		rep->bad_rows_skipped++;
	c->bad++;
	return 0;
}

/* The workload of r's configuration, analysed once per (spec, batch):
 * its index, or a negative code (why says what went wrong). */
static int row_workload(struct prof_ctx *c, const struct hp_profile_row *r)
{
	struct hp_spec spec;
	struct hp_graph *g;
	struct hp_error e = {0};
	struct wl_slot *sl;
	uint64_t h = spec_hash(r->spec_json, r->batch);
	int wl, rc;

	if (wl_index_reserve(c->wls))
		return HP_ENOMEM;
	sl = wl_index_find(c->wls, r->spec_json, r->batch, h);
	if (sl->spec)
		return sl->wl;
	rc = hp_spec_parse_only(r->spec_json, strlen(r->spec_json), &spec, &e);
	if (rc) {
		prof_why(c, "column 'spec_json': %s", e.msg);
		return rc;
	}
	g = hp_spec_to_graph(&spec, &e);
	hp_spec_release(&spec);
	if (!g) {
		prof_why(c, "column 'spec_json': %s", e.msg);
		return e.code ? e.code : HP_EINVAL;
	}
	if ((wl = add_wl(c->set)) < 0) {
		hp_graph_free(g);
		return HP_ENOMEM;
	}
	rc = hp_workload_from_graph(g, r->batch, NULL, 0, &c->set->wl[wl], &e);
	hp_graph_free(g);
	if (rc) {
		c->set->nwl--;
		prof_why(c, "column 'spec_json': at batch %lld: %s",
			 (long long)r->batch, e.msg);
		return rc;
	}
	if (!(sl->spec = strdup(r->spec_json))) {
		/* the workload stays, unindexed */
		return wl;
	}
	sl->hash = h;
	sl->batch = r->batch;
	sl->wl = wl;
	c->wls->n++;
	return wl;
}

/* What makes two rows repeats of one measurement: the configuration, on
 * the same host, device, threads and optimizer. */
static uint64_t cfg_hash(const struct hp_profile_row *r)
{
	const char *parts[4] = {r->config_id, r->host, r->device, r->optimizer};
	uint64_t h = 1469598103934665603ull ^ (uint64_t)r->threads;

	for (int k = 0; k < 4; k++)
		for (const char *p = parts[k];; p++) {
			h = (h ^ (unsigned char)*p) * 1099511628211ull;
			if (!*p)
				break;
		}
	return h;
}

static int prof_row(const struct hp_profile_row *r, int line, void *ud,
		    struct hp_error *err)
{
	struct prof_ctx *c = ud;
	struct hp__sample *s;
	const struct hp_device_type *t;
	int wl;

	c->record++;
	c->line = line;
	if (c->o->progress && c->record % 4096 == 0) {
		char stage[96];
		snprintf(stage, sizeof(stage), "reading '%.80s'", c->path);
		c->o->progress(stage, c->record, 0, c->o->progress_ud);
	}
	if (!row_ok(r, c))
		return bad_row(c, err);
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
		c->unknown++;
		return 0;
	}
	if ((wl = row_workload(c, r)) < 0) {
		if (wl == HP_ENOMEM)
			return hp_error_set(err, HP_ENOMEM, "out of memory");
		return bad_row(c, err);
	}
	if (!(s = add_sample(c->set)))
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	snprintf(s->device, sizeof(s->device), "%s", t->name);
	snprintf(s->family, sizeof(s->family), "%s", r->family);
	s->src = HP__SRC_PROFILE;
	s->wl = wl;
	s->t = s->t_abs = r->step_time_s;
	s->ref_row_s =
	    r->ref_time_s > 0 && r->ref_time_s < 1e3 ? r->ref_time_s : NAN;
	s->cfg_hash = cfg_hash(r);
	s->power_w = r->power_w;
	s->peak_mem_bytes = r->peak_mem_bytes;
	s->structural = r->conv_layers > 0;
	s->chan_block = hp__chan_block(r->backend);
	s->tcls[HP_EST_CONV] = r->time_conv_s;
	s->tcls[HP_EST_FC] = r->time_fc_s;
	s->tcls[HP_EST_OTHER] = r->time_other_s;
	s->host_isa = r->host_isa_gflops > 0 ? r->host_isa_gflops * 1e9 : NAN;
	s->host_sgemm =
	    r->host_sgemm_gflops > 0 ? r->host_sgemm_gflops * 1e9 : NAN;
	s->host_triad = r->host_triad_gbs > 0 ? r->host_triad_gbs * 1e9 : NAN;
	s->host_cache = r->host_cache_bytes > 0 ? r->host_cache_bytes : NAN;
	s->threads = r->threads;
	if (t->kind == HP_DEVICE_CPU && !(s->host_isa > 0))
		c->hostless++;
	c->rows++;
	return 0;
}

/* Read one profile dataset into set. */
static int read_profiles(struct hp__set *set, const struct hp_fit_options *o,
			 const struct hp_catalog *cat, const char *path,
			 struct wl_index *wls, struct hp_error *err)
{
	struct prof_ctx c = {0};
	int64_t torn = 0;
	int rc;

	c.set = set;
	c.cat = cat;
	c.o = o;
	c.path = path;
	c.wls = wls;
	rc = hp_dataset_read(path, prof_row, &c, &torn, err);
	if (rc) {
		char why[sizeof(err->msg)];
		memcpy(why, err->msg, sizeof(why));
		/* "'x.csv' line 3: ...", as for the rows refused here */
		return hp_error_set(err, rc, "'%s'%s%s", path,
				    strncmp(why, "line ", 5) ? ": " : " ", why);
	}
	set->profile_rows += c.rows;
	note(set, "profiles: %d rows from %s", c.rows, path);
	if (c.unknown)
		note(set,
		     "profiles: %d rows of %s on device types not in the "
		     "catalog left out",
		     c.unknown, path);
	if (c.hostless)
		note(set,
		     "profiles: %d CPU rows of %s do not say which host "
		     "measured them (no host_isa_gflops: an older hetpool): "
		     "their times are taken as this host's",
		     c.hostless, path);
	if (c.busy)
		note(set,
		     "profiles: %d rows of %s measured on a busy host "
		     "(cpu_pressure over %.2f) left out",
		     c.busy, path, HP__MAX_CPU_PRESSURE);
	if (c.bad)
		note(set, "profiles: %lld bad row%s of %s skipped",
		     (long long)c.bad, c.bad == 1 ? "" : "s", path);
	if (torn)
		note(set,
		     "profiles: the last line of %s is cut short (an "
		     "interrupted profile: 'hetpool profile --resume' goes "
		     "on): left out",
		     path);
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
    /* Gavel's cifar10 job is the CIFAR variant (3x3 stride-1 stem, no
     * max-pool: 555 M MACs per sample), not torchvision's network. */
    {"gavel", "ResNet-18", NULL, "resnet18-cifar", "resnet18_cifar.train.onnx",
     32},
    {"zeus", "resnet50", "imagenet", "resnet50", "resnet50.train.onnx", 0},
    /* Zeus's CIFAR ShuffleNetV2 has a stride-1 stem and no max-pool: its
     * stages see 32x32, 16x16, 8x8 and 4x4 maps at a 32x32 input, as
     * torchvision's network does at 128x128 (stride-4 stem).  No ONNX of
     * the CIFAR variant here: torchvision's at 128x128 stands for it
     * (the same stages; a 4x larger stem and a 1000-class classifier:
     * a few % of its FLOPs), not at 32x32 (16x too few FLOPs). */
    {"zeus", "shufflenetv2", "cifar100", "shufflenetv2-cifar",
     "shufflenet_v2_x1_0.train.onnx", 128},
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
	int n_amp = 0;
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
		/* fp16: Lambda's mixed-precision runs, fitted as amp where
		 * their batch size is known */
		if (m->fp16 && m->batch < 1) {
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
		s->prec = m->fp16 ? HP_PREC_AMP : HP_PREC_FP32;
		set->public_rows++;
		n_amp += m->fp16;
	}
	note(set,
	     "public: %d rows of ResNet-50, ResNet-18 and ShuffleNetV2 "
	     "(their CIFAR variants) used, %d of them amp (Lambda fp16)",
	     set->public_rows, n_amp);
	if (n_other)
		note(set,
		     "public: %d rows of models with no ONNX here left out: "
		     "%.140s",
		     n_other, other);
	if (n_fp16)
		note(set,
		     "public: %d fp16 (mixed precision) rows without a "
		     "batch size left out",
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

/* Whether files a and b hold the same bytes (sizes already equal). */
static bool same_bytes(const char *a, const char *b)
{
	FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
	char ba[65536], bb[65536];
	bool same = fa && fb;

	while (same) {
		size_t na = fread(ba, 1, sizeof(ba), fa);
		size_t nb = fread(bb, 1, sizeof(bb), fb);
		if (na != nb || memcmp(ba, bb, na))
			same = false;
		if (na < sizeof(ba))
			break;
	}
	if (same && (ferror(fa) || ferror(fb)))
		same = false;
	if (fa)
		fclose(fa);
	if (fb)
		fclose(fb);
	return same;
}

/*
 * A dataset given twice would count each of its rows twice: the same
 * file under two names (same device and inode), or two files with the
 * same bytes (a copy).  Paths that cannot be read are left to the reader.
 */
static int check_distinct(const struct hp_fit_options *o, struct hp_error *err)
{
	for (int i = 0; i < o->ndatasets; i++) {
		struct stat si;
		if (stat(o->datasets[i], &si) || !S_ISREG(si.st_mode))
			continue;
		for (int j = 0; j < i; j++) {
			struct stat sj;
			if (stat(o->datasets[j], &sj) || !S_ISREG(sj.st_mode))
				continue;
			if (si.st_dev == sj.st_dev && si.st_ino == sj.st_ino)
				return hp_error_set(
				    err, HP_EINVAL,
				    "'%s' and '%s' are the same file: its rows "
				    "would count twice",
				    o->datasets[j], o->datasets[i]);
			if (si.st_size == sj.st_size &&
			    same_bytes(o->datasets[j], o->datasets[i]))
				return hp_error_set(
				    err, HP_EINVAL,
				    "'%s' and '%s' have the same content: its "
				    "rows would count twice",
				    o->datasets[j], o->datasets[i]);
		}
	}
	return 0;
}

/*
 * Times relative to the yardstick: per device type, the median ref_time_s
 * of its profile rows is its reference speed; every row that carries one
 * has its times scaled to that speed (t x median / ref_row), so a row
 * measured while the host ran 30% slow counts as if measured at the
 * host's usual speed.  Rows without one keep their absolute times.
 */
static int scale_to_ref(struct hp__set *set)
{
	double *v = malloc(((size_t)set->n + 1) * sizeof(*v));

	if (!v)
		return HP_ENOMEM;
	/* the profile rows come in runs of one device, runs may repeat */
	for (int i = 0; i < set->n; i++) {
		const char *dev = set->s[i].device;
		int nv = 0;
		double med;
		if (set->s[i].src != HP__SRC_PROFILE ||
		    !isnan(set->s[i].ref_fit_s) || isnan(set->s[i].ref_row_s))
			continue;
		for (int j = i; j < set->n; j++)
			if (set->s[j].src == HP__SRC_PROFILE &&
			    !strcmp(set->s[j].device, dev) &&
			    !isnan(set->s[j].ref_row_s))
				v[nv++] = set->s[j].ref_row_s;
		med = hp__quantile(v, nv, 0.5);
		for (int j = i; j < set->n; j++) {
			struct hp__sample *s = &set->s[j];
			double f;
			if (s->src != HP__SRC_PROFILE ||
			    strcmp(s->device, dev) || isnan(s->ref_row_s))
				continue;
			f = med / s->ref_row_s;
			s->ref_fit_s = med;
			s->t = s->t_abs * f;
			for (int k = 0; k < HP_EST_NCLASS; k++)
				s->tcls[k] *= f; /* NaN stays NaN */
		}
	}
	free(v);
	return 0;
}

double hp_estimator_ref_time_s(const struct hp_estimator *est,
			       const char *device)
{
	for (int i = 0; est && device && i < est->ndev; i++)
		if (!strcmp(est->dev[i].name, device))
			return est->dev[i].ref_time_s;
	return 0;
}

double hp_est_to_ref_speed(int n, const double *wall_s, const double *ref_s,
			   const double *share, double *t, double *cls,
			   int ncls)
{
	double *v = malloc(((size_t)(n > 0 ? n : 0) + 1) * sizeof(*v)), med;
	int nv = 0;

	if (!v)
		return NAN;
	for (int i = 0; i < n; i++)
		if (ref_s[i] > 0) {
			double sh = share ? share[i] : 1;
			v[nv++] = ref_s[i] * (sh > 0 && sh <= 1 ? sh : 1);
		}
	if (nv == 0) {
		free(v);
		return NAN;
	}
	med = hp__quantile(v, nv, 0.5);
	free(v);
	for (int i = 0; i < n; i++) {
		double now;
		if (!(ref_s[i] > 0) || !(wall_s[i] > 0))
			continue;
		now = wall_s[i] * med / ref_s[i];
		for (int k = 0; cls && t[i] > 0 && k < ncls; k++)
			cls[i * ncls + k] *= now / t[i];
		t[i] = now;
	}
	return med;
}

double hp_est_median(const double *v, int n)
{
	double *c = malloc(((size_t)(n > 0 ? n : 0) + 1) * sizeof(*c)), m;
	int k = 0;

	if (!c)
		return NAN;
	for (int i = 0; i < n; i++)
		if (isfinite(v[i]))
			c[k++] = v[i];
	m = k ? hp__quantile(c, k, 0.5) : NAN;
	free(c);
	return m;
}

double hp_est_rescale_ref(double t_s, double ref_fit_s, double ref_now_s)
{
	if (!(ref_fit_s > 0) || !(ref_now_s > 0) || !isfinite(ref_fit_s) ||
	    !isfinite(ref_now_s))
		return t_s;
	return t_s * ref_now_s / ref_fit_s;
}

int hp__set_load(struct hp__set *set, const struct hp_fit_options *o,
		 const struct hp_catalog *cat, struct hp_error *err)
{
	struct wl_index wls = {0};
	int rc;

	memset(set, 0, sizeof(*set));
	if (o->report)
		memset(o->report, 0, sizeof(*o->report));
	if ((rc = check_distinct(o, err)))
		return rc;
	for (int i = 0; i < o->ndatasets; i++) {
		rc = read_profiles(set, o, cat, o->datasets[i], &wls, err);
		if (rc) {
			wl_index_release(&wls);
			hp__set_release(set);
			return rc;
		}
	}
	wl_index_release(&wls);
	if (!o->absolute_times && (rc = scale_to_ref(set)))
		return hp_error_set(err, rc, "out of memory");
	if (o->report)
		o->report->profile_rows = set->profile_rows;
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
