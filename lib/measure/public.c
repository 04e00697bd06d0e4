/*
 * public.c - read the public training measurements (Lambda, Gavel, Zeus)
 * into struct hp_measurement records, mapping each source's GPU names to
 * catalog ids and dropping cells that cannot be right.
 */
#include <ctype.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hetpool/measure.h"
#include "util/banned.h"

#define MEASURE_MAX_BYTES (16u << 20)
/* A multi-GPU cell above this many times linear scaling of the best
 * single-GPU figure is not a measurement. */
#define LAMBDA_MAX_SCALING 2.0

void hp_measure_set_init(struct hp_measure_set *s)
{
	memset(s, 0, sizeof(*s));
}

void hp_measure_set_release(struct hp_measure_set *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}

/* A new record with every figure unknown; NULL on ENOMEM. */
static struct hp_measurement *add(struct hp_measure_set *s, const char *src)
{
	struct hp_measurement *m;

	if (s->n == s->alloc) {
		size_t na = s->alloc ? s->alloc * 2 : 256;
		struct hp_measurement *nv = realloc(s->v, na * sizeof(*nv));
		if (!nv)
			return NULL;
		s->v = nv;
		s->alloc = na;
	}
	m = &s->v[s->n++];
	memset(m, 0, sizeof(*m));
	snprintf(m->source, sizeof(m->source), "%s", src);
	m->ndevices = 1;
	m->samples_per_s = NAN;
	m->step_time_s = NAN;
	m->epoch_time_s = NAN;
	m->power_w = NAN;
	m->power_limit_w = NAN;
	m->energy_j_per_sample = NAN;
	m->default_power = true;
	m->consolidated = true;
	return m;
}

/* Copy at most n-1 bytes of s into dst (a shorter name is fine for a
 * label; the catalog id always fits). */
static void copy(char *dst, size_t n, const char *s)
{
	size_t len = strnlen(s, n - 1);

	memcpy(dst, s, len);
	dst[len] = '\0';
}

/* What is known of a source's hardware beyond its GPU's name. */
static const struct {
	const char *source, *name, *id;
} source_gpus[] = {
    /* Zeus's V100 power-limit sweep tops out at 250 W: the PCIe card
     * (the SXM2 module's limit is 300 W). */
    {"zeus", "v100", "v100-pcie"},
};

static const char *const system_vendors[] = {
    "LambdaCloud ", "Lambda Cloud ", "Dell ", "SMC ", "1CC ",
};

const struct hp_device_type *hp_measure_device(const struct hp_catalog *cat,
					       const char *source,
					       const char *name, int *ndevices)
{
	const char *p = name;
	int n = 1;

	if (ndevices)
		*ndevices = 1;
	if (!cat || !name)
		return NULL;
	while (isspace((unsigned char)*p))
		p++;
	for (size_t i = 0; i < sizeof(system_vendors) / sizeof(*system_vendors);
	     i++) {
		size_t len = strlen(system_vendors[i]);
		if (!strncmp(p, system_vendors[i], len)) {
			p += len;
			break;
		}
	}
	/* "2x A100", "4xV100": a GPU count. */
	if (isdigit((unsigned char)*p)) {
		size_t d = strspn(p, "0123456789");
		if (d <= 3 && (p[d] == 'x' || p[d] == 'X')) {
			n = 0;
			for (size_t i = 0; i < d; i++)
				n = n * 10 + (p[i] - '0');
			p += d + 1;
			while (*p == ' ')
				p++;
			if (n < 1)
				return NULL;
		}
	}
	if (ndevices)
		*ndevices = n;
	const struct hp_device_type *t = hp_catalog_find(cat, p);
	for (size_t i = 0;
	     t && source && i < sizeof(source_gpus) / sizeof(*source_gpus); i++)
		if (!strcmp(source, source_gpus[i].source) &&
		    t == hp_catalog_find(cat, source_gpus[i].name))
			return hp_catalog_find(cat, source_gpus[i].id);
	return t;
}

/* One CSV file being read: its text, reader and name for messages. */
struct file {
	const char *path;
	char *text;
	struct hp_csv c;
};

static int file_open(struct file *f, const char *path, struct hp_error *err)
{
	size_t len;

	memset(f, 0, sizeof(*f));
	f->path = path;
	if (hp_read_file(path, MEASURE_MAX_BYTES, &f->text, &len, err)) {
		hp_error_prefix(err, "'%s'", path);
		return err ? err->code : HP_EIO;
	}
	hp_csv_init(&f->c, f->text, len);
	return 0;
}

static void file_close(struct file *f)
{
	hp_csv_release(&f->c);
	free(f->text);
	f->text = NULL;
}

/* Next record: 1, 0 at the end, or an error naming the file. */
static int file_next(struct file *f, struct hp_error *err)
{
	int rc = hp_csv_next(&f->c, err);

	if (rc < 0)
		hp_error_prefix(err, "%s", f->path);
	return rc;
}

static int file_header(struct file *f, struct hp_error *err)
{
	int rc = file_next(f, err);

	if (rc == 0)
		return hp_error_set(err, HP_EPARSE, "%s: empty file", f->path);
	return rc < 0 ? rc : 0;
}

/* A non-negative number in field k; empty is NaN. */
static int number(struct file *f, int k, double *out, struct hp_error *err)
{
	const char *s = f->c.fields[k];
	double v;

	if (!*s) {
		*out = NAN;
		return 0;
	}
	if (hp_parse_double(s, &v) || v < 0)
		return hp_error_set(err, HP_EPARSE,
				    "%s:%d: field %d: '%.40s' is not a "
				    "non-negative number",
				    f->path, f->c.line, k + 1, s);
	*out = v;
	return 0;
}

static int need_col(struct file *f, const char *name, int *k,
		    struct hp_error *err)
{
	*k = hp_csv_index(&f->c, name);
	if (*k < 0)
		return hp_error_set(err, HP_EPARSE, "%s:1: no column '%s'",
				    f->path, name);
	return 0;
}

static int unknown_gpu(const struct file *f, const char *name,
		       struct hp_error *err)
{
	return hp_error_set(err, HP_ENOENT,
			    "%s:%d: GPU '%.60s' is not in the device catalog "
			    "(add it or an alias to data/devices.csv)",
			    f->path, f->c.line, name);
}

/* --- Lambda ------------------------------------------------------------ */

static bool lambda_meta(const char *col)
{
	return !strcmp(col, "name_gpu") || !strcmp(col, "num_gpu") ||
	       !strcmp(col, "watt") || !strcmp(col, "price");
}

/* Global batch sizes by (GPU type, GPU count, model). */
struct lambda_bs {
	const struct hp_device_type *type;
	int ndevices;
	char model[64];
	int64_t batch;
};

static int read_lambda_bs(const struct hp_catalog *cat, const char *path,
			  struct lambda_bs **out, size_t *nout,
			  struct hp_error *err)
{
	struct file f;
	struct lambda_bs *v = NULL;
	size_t n = 0, alloc = 0;
	char header[64][64];
	int nh, kname, rc;

	if ((rc = file_open(&f, path, err)))
		return rc;
	if ((rc = file_header(&f, err)) ||
	    (rc = need_col(&f, "name_gpu", &kname, err)))
		goto out;
	nh = f.c.nfields < 64 ? f.c.nfields : 64;
	for (int k = 0; k < nh; k++)
		copy(header[k], sizeof(header[k]), f.c.fields[k]);
	while ((rc = file_next(&f, err)) == 1) {
		int nd;
		const struct hp_device_type *t;
		if (f.c.nfields != nh) {
			rc = hp_error_set(err, HP_EPARSE,
					  "%s:%d: %d fields, the header has "
					  "%d",
					  f.path, f.c.line, f.c.nfields, nh);
			goto out;
		}
		t = hp_measure_device(cat, "lambda", f.c.fields[kname], &nd);
		if (!t) {
			rc = unknown_gpu(&f, f.c.fields[kname], err);
			goto out;
		}
		for (int k = 0; k < nh; k++) {
			double b;
			if (lambda_meta(header[k]))
				continue;
			if ((rc = number(&f, k, &b, err)))
				goto out;
			if (!(b >= 1) || b > 1e9 || b != floor(b))
				continue;
			if (n == alloc) {
				size_t na = alloc ? alloc * 2 : 128;
				struct lambda_bs *nv =
				    realloc(v, na * sizeof(*nv));
				if (!nv) {
					rc = hp_error_set(err, HP_ENOMEM,
							  "out of memory");
					goto out;
				}
				v = nv;
				alloc = na;
			}
			v[n].type = t;
			v[n].ndevices = nd;
			copy(v[n].model, sizeof(v[n].model), header[k]);
			v[n].batch = (int64_t)b;
			n++;
		}
	}
out:
	file_close(&f);
	if (rc < 0) {
		free(v);
		return rc;
	}
	*out = v;
	*nout = n;
	return 0;
}

static int64_t lambda_batch(const struct lambda_bs *bs, size_t n,
			    const struct hp_device_type *t, int nd,
			    const char *model)
{
	for (size_t i = 0; i < n; i++)
		if (bs[i].type == t && bs[i].ndevices == nd &&
		    !strcmp(bs[i].model, model))
			return bs[i].batch;
	return 0;
}

static int read_lambda(struct hp_measure_set *s, const struct hp_catalog *cat,
		       const char *path, bool fp16, const struct lambda_bs *bs,
		       size_t nbs, struct hp_error *err)
{
	struct file f;
	char header[64][64];
	int nh, kname, knum, rc;

	if ((rc = file_open(&f, path, err)))
		return rc;
	if ((rc = file_header(&f, err)) ||
	    (rc = need_col(&f, "name_gpu", &kname, err)) ||
	    (rc = need_col(&f, "num_gpu", &knum, err)))
		goto out;
	if (f.c.nfields > 64) {
		rc = hp_error_set(err, HP_EPARSE, "%s:1: more than 64 columns",
				  f.path);
		goto out;
	}
	nh = f.c.nfields;
	for (int k = 0; k < nh; k++)
		copy(header[k], sizeof(header[k]), f.c.fields[k]);
	while ((rc = file_next(&f, err)) == 1) {
		const char *name;
		const struct hp_device_type *t;
		double num;
		int nd;
		if (f.c.nfields != nh) {
			rc = hp_error_set(err, HP_EPARSE,
					  "%s:%d: %d fields, the header has "
					  "%d",
					  f.path, f.c.line, f.c.nfields, nh);
			goto out;
		}
		name = f.c.fields[kname];
		t = hp_measure_device(cat, "lambda", name, &nd);
		if (!t) {
			rc = unknown_gpu(&f, name, err);
			goto out;
		}
		if ((rc = number(&f, knum, &num, err)))
			goto out;
		if (!(num >= 1 && num <= 1024 && num == floor(num)) ||
		    (int)num != nd) {
			rc = hp_error_set(err, HP_EPARSE,
					  "%s:%d: num_gpu '%s' does not match "
					  "the name '%.60s'",
					  f.path, f.c.line, f.c.fields[knum],
					  name);
			goto out;
		}
		for (int k = 0; k < nh; k++) {
			struct hp_measurement *m;
			double v;
			if (lambda_meta(header[k]))
				continue;
			if ((rc = number(&f, k, &v, err)))
				goto out;
			if (!(v > 0)) {
				s->nskipped++; /* 0.0: not run */
				continue;
			}
			if (!(m = add(s, "lambda"))) {
				rc = hp_error_set(err, HP_ENOMEM,
						  "out of memory");
				goto out;
			}
			copy(m->model, sizeof(m->model), header[k]);
			copy(m->device, sizeof(m->device), t->name);
			copy(m->system, sizeof(m->system), name);
			m->ndevices = nd;
			m->fp16 = fp16;
			m->samples_per_s = v;
			m->batch = lambda_batch(bs, nbs, t, nd, header[k]);
			if (m->batch > 0)
				m->step_time_s = (double)m->batch / v;
		}
	}
out:
	file_close(&f);
	return rc < 0 ? rc : 0;
}

/* Drop multi-GPU cells beyond LAMBDA_MAX_SCALING x linear scaling of the
 * best single-GPU figure of the same model, precision and GPU type. */
static void lambda_outliers(struct hp_measure_set *s, size_t from)
{
	size_t w = from;

	for (size_t i = from; i < s->n; i++) {
		const struct hp_measurement *m = &s->v[i];
		double best = 0;
		for (size_t j = from; m->ndevices > 1 && j < s->n; j++) {
			const struct hp_measurement *o = &s->v[j];
			if (o->ndevices == 1 && o->fp16 == m->fp16 &&
			    !strcmp(o->model, m->model) &&
			    !strcmp(o->device, m->device) &&
			    o->samples_per_s > best)
				best = o->samples_per_s;
		}
		if (best > 0 && m->samples_per_s / m->ndevices >
				    LAMBDA_MAX_SCALING * best) {
			hp_log(HP_LOG_INFO,
			       "lambda: dropped '%s' %s %s: %.4g samples/s per "
			       "GPU is %.1fx the best single-GPU figure "
			       "(%.4g); more than %.0fx linear scaling is not "
			       "a measurement",
			       m->system, m->model, m->fp16 ? "fp16" : "fp32",
			       m->samples_per_s / m->ndevices,
			       m->samples_per_s / m->ndevices / best, best,
			       LAMBDA_MAX_SCALING);
			s->nrejected++;
			continue;
		}
		if (w != i)
			s->v[w] = s->v[i];
		w++;
	}
	s->n = w;
}

static int join(char *buf, size_t n, const char *dir, const char *name,
		struct hp_error *err)
{
	if ((size_t)snprintf(buf, n, "%s/%s", dir, name) >= n)
		return hp_error_set(err, HP_ERANGE, "path '%.60s/%s' too long",
				    dir, name);
	return 0;
}

int hp_measure_load_lambda(struct hp_measure_set *s,
			   const struct hp_catalog *cat, const char *dir,
			   struct hp_error *err)
{
	char path[4096];
	struct lambda_bs *bs = NULL;
	size_t nbs = 0, from = s->n;
	int rc;

	if ((rc = join(path, sizeof(path), dir, "pytorch-train-bs-fp32.csv",
		       err)) ||
	    (rc = read_lambda_bs(cat, path, &bs, &nbs, err)))
		return rc;
	if (!(rc = join(path, sizeof(path), dir,
			"pytorch-train-throughput-fp32.csv", err)))
		rc = read_lambda(s, cat, path, false, bs, nbs, err);
	/* The fp16 runs' batch sizes (upstream's pytorch-train-bs-fp16.csv):
	 * optional, without it fp16 rows have no batch. */
	if (!rc &&
	    !(rc = join(path, sizeof(path), dir, "pytorch-train-bs-fp16.csv",
			err)) &&
	    access(path, R_OK) == 0) {
		free(bs);
		bs = NULL;
		nbs = 0;
		rc = read_lambda_bs(cat, path, &bs, &nbs, err);
	} else if (!rc) {
		free(bs);
		bs = NULL;
		nbs = 0;
	}
	if (!rc && !(rc = join(path, sizeof(path), dir,
			       "pytorch-train-throughput-fp16.csv", err)))
		rc = read_lambda(s, cat, path, true, bs, nbs, err);
	free(bs);
	if (rc) {
		s->n = from;
		return rc;
	}
	lambda_outliers(s, from);
	return 0;
}

/* --- Gavel ------------------------------------------------------------- */

static const struct {
	const char *model, *dataset;
} gavel_datasets[] = {
    /* From Gavel's scheduler/job_table.py. */
    {"ResNet-18", "cifar10"},	  {"ResNet-50", "imagenet"},
    {"Transformer", "multi30k"},  {"LM", "wikitext2"},
    {"Recommendation", "ml-20m"}, {"A3C", "pong"},
    {"CycleGAN", "monet2photo"},
};

/* "ResNet-18 (batch size 128)" -> "ResNet-18", 128; 0 when not stated. */
static int gavel_model(const char *s, char *model, size_t n, int64_t *batch)
{
	const char *paren = strstr(s, " (batch size ");
	size_t len = paren ? (size_t)(paren - s) : strlen(s);
	char num[24];

	*batch = 0;
	if (len >= n || len == 0)
		return HP_EPARSE;
	memcpy(model, s, len);
	model[len] = '\0';
	if (!paren)
		return 0;
	paren += strlen(" (batch size ");
	len = strspn(paren, "0123456789");
	if (!len || len >= sizeof(num) || strcmp(paren + len, ")"))
		return HP_EPARSE;
	memcpy(num, paren, len);
	num[len] = '\0';
	return hp_parse_i64(num, 1, (int64_t)1 << 30, batch);
}

int hp_measure_load_gavel(struct hp_measure_set *s,
			  const struct hp_catalog *cat, const char *path,
			  struct hp_error *err)
{
	struct file f;
	const struct hp_device_type *types[64] = {0};
	char colname[64][32];
	bool spread[64] = {0};
	size_t from = s->n;
	int kmodel, knum, nh, rc;

	if ((rc = file_open(&f, path, err)))
		return rc;
	if ((rc = file_header(&f, err)) ||
	    (rc = need_col(&f, "model", &kmodel, err)) ||
	    (rc = need_col(&f, "num_gpus", &knum, err)))
		goto out;
	nh = f.c.nfields;
	if (nh > 64) {
		rc = hp_error_set(err, HP_EPARSE, "%s:1: more than 64 columns",
				  f.path);
		goto out;
	}
	for (int k = 0; k < nh; k++) {
		char gpu[32];
		const char *col = f.c.fields[k];
		size_t len = strcspn(col, "_");
		if (k == kmodel || k == knum)
			continue;
		if (len >= sizeof(gpu)) {
			rc = unknown_gpu(&f, col, err);
			goto out;
		}
		memcpy(gpu, col, len);
		gpu[len] = '\0';
		if (col[len] && strcmp(col + len, "_unconsolidated")) {
			rc = hp_error_set(err, HP_EPARSE,
					  "%s:1: column '%.40s': expected GPU "
					  "or GPU_unconsolidated",
					  f.path, col);
			goto out;
		}
		spread[k] = col[len] != '\0';
		copy(colname[k], sizeof(colname[k]), col);
		if (!(types[k] = hp_measure_device(cat, "gavel", gpu, NULL))) {
			rc = unknown_gpu(&f, gpu, err);
			goto out;
		}
	}
	while ((rc = file_next(&f, err)) == 1) {
		char model[64];
		int64_t batch, nd;
		if (f.c.nfields != nh) {
			rc = hp_error_set(err, HP_EPARSE,
					  "%s:%d: %d fields, the header has "
					  "%d",
					  f.path, f.c.line, f.c.nfields, nh);
			goto out;
		}
		if (gavel_model(f.c.fields[kmodel], model, sizeof(model),
				&batch) ||
		    hp_parse_i64(f.c.fields[knum], 1, 1024, &nd)) {
			rc = hp_error_set(err, HP_EPARSE,
					  "%s:%d: expected 'MODEL (batch size "
					  "N)' and a GPU count",
					  f.path, f.c.line);
			goto out;
		}
		for (int k = 0; k < nh; k++) {
			struct hp_measurement *m;
			double steps;
			if (!types[k] || (spread[k] && nd == 1))
				continue; /* one GPU is never spread */
			if ((rc = number(&f, k, &steps, err)))
				goto out;
			if (!(steps > 0)) {
				s->nskipped++; /* 0.0: infeasible */
				continue;
			}
			if (!(m = add(s, "gavel"))) {
				rc = hp_error_set(err, HP_ENOMEM,
						  "out of memory");
				goto out;
			}
			copy(m->model, sizeof(m->model), model);
			for (size_t i = 0; i < sizeof(gavel_datasets) /
						   sizeof(*gavel_datasets);
			     i++)
				if (!strcmp(model, gavel_datasets[i].model))
					copy(m->dataset, sizeof(m->dataset),
					     gavel_datasets[i].dataset);
			copy(m->device, sizeof(m->device), types[k]->name);
			copy(m->system, sizeof(m->system), colname[k]);
			m->ndevices = (int)nd;
			m->consolidated = !spread[k];
			m->batch = batch * nd;
			m->step_time_s = 1 / steps;
			if (batch > 0)
				m->samples_per_s = steps * (double)m->batch;
		}
	}
out:
	file_close(&f);
	if (rc < 0)
		s->n = from;
	return rc < 0 ? rc : 0;
}

/* --- Zeus -------------------------------------------------------------- */

/* Training samples per epoch of the datasets whose size is certain. */
static const struct {
	const char *dataset;
	double samples;
} zeus_sizes[] = {
    {"cifar100", 50000},   /* CIFAR-100 training split */
    {"imagenet", 1281167}, /* ILSVRC-2012 training split */
};

int hp_measure_load_zeus(struct hp_measure_set *s, const struct hp_catalog *cat,
			 const char *path, const char *gpu,
			 struct hp_error *err)
{
	char gpubuf[32];
	const struct hp_device_type *t;
	struct file f;
	size_t from = s->n;
	double max_limit = 0;
	int k[7], rc;
	static const char *const cols[7] = {
	    "dataset",	   "network",	     "batch_size",    "optimizer",
	    "power_limit", "time_per_epoch", "average_power",
	};

	if (!gpu) {
		const char *base = strrchr(path, '/');
		const char *pre = "summary_power_";
		size_t len;
		base = base ? base + 1 : path;
		len = strlen(base);
		if (strncmp(base, pre, strlen(pre)) || len < strlen(pre) + 5 ||
		    strcmp(base + len - 4, ".csv") ||
		    len - strlen(pre) - 4 >= sizeof(gpubuf))
			return hp_error_set(err, HP_EINVAL,
					    "%s: name the GPU (file is not "
					    "summary_power_GPU.csv)",
					    path);
		memcpy(gpubuf, base + strlen(pre), len - strlen(pre) - 4);
		gpubuf[len - strlen(pre) - 4] = '\0';
		gpu = gpubuf;
	}
	if ((rc = file_open(&f, path, err)))
		return rc;
	if (!(t = hp_measure_device(cat, "zeus", gpu, NULL))) {
		rc = unknown_gpu(&f, gpu, err);
		goto out;
	}
	if ((rc = file_header(&f, err)))
		goto out;
	for (int i = 0; i < 7; i++)
		if ((rc = need_col(&f, cols[i], &k[i], err)))
			goto out;
	int nh = f.c.nfields;
	while ((rc = file_next(&f, err)) == 1) {
		struct hp_measurement *m;
		double limit, epoch, power;
		int64_t batch;
		if (f.c.nfields != nh) {
			rc = hp_error_set(err, HP_EPARSE,
					  "%s:%d: %d fields, the header has "
					  "%d",
					  f.path, f.c.line, f.c.nfields, nh);
			goto out;
		}
		if ((rc = number(&f, k[4], &limit, err)) ||
		    (rc = number(&f, k[5], &epoch, err)) ||
		    (rc = number(&f, k[6], &power, err)))
			goto out;
		if (hp_parse_i64(f.c.fields[k[2]], 1, (int64_t)1 << 30,
				 &batch)) {
			rc = hp_error_set(err, HP_EPARSE,
					  "%s:%d: batch_size '%.40s' is not a "
					  "whole number",
					  f.path, f.c.line, f.c.fields[k[2]]);
			goto out;
		}
		if (!(epoch > 0) || !(power > 0) || !(limit > 0)) {
			s->nskipped++;
			continue;
		}
		if (!(m = add(s, "zeus"))) {
			rc = hp_error_set(err, HP_ENOMEM, "out of memory");
			goto out;
		}
		copy(m->model, sizeof(m->model), f.c.fields[k[1]]);
		copy(m->dataset, sizeof(m->dataset), f.c.fields[k[0]]);
		copy(m->optimizer, sizeof(m->optimizer), f.c.fields[k[3]]);
		copy(m->device, sizeof(m->device), t->name);
		copy(m->system, sizeof(m->system), gpu);
		m->batch = batch;
		m->power_limit_w = limit;
		m->epoch_time_s = epoch;
		m->power_w = power;
		for (size_t i = 0; i < sizeof(zeus_sizes) / sizeof(*zeus_sizes);
		     i++)
			if (!strcmp(m->dataset, zeus_sizes[i].dataset)) {
				m->samples_per_s =
				    zeus_sizes[i].samples / epoch;
				m->step_time_s =
				    (double)batch / m->samples_per_s;
				m->energy_j_per_sample =
				    power / m->samples_per_s;
			}
		if (limit > max_limit)
			max_limit = limit;
	}
	for (size_t i = from; i < s->n; i++)
		s->v[i].default_power = s->v[i].power_limit_w == max_limit;
out:
	file_close(&f);
	if (rc < 0)
		s->n = from;
	return rc < 0 ? rc : 0;
}

/* --- All of them ------------------------------------------------------- */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int hp_measure_load_dir(struct hp_measure_set *s, const struct hp_catalog *cat,
			const char *dir, struct hp_error *err)
{
	char path[4096], file[4096];
	char *names[64];
	int nnames = 0, found = 0, rc = 0;
	DIR *d;
	struct dirent *e;

	if ((rc = join(path, sizeof(path), dir, "lambda", err)))
		return rc;
	if (!join(file, sizeof(file), path, "pytorch-train-bs-fp32.csv",
		  NULL) &&
	    access(file, R_OK) == 0) {
		if ((rc = hp_measure_load_lambda(s, cat, path, err)))
			return rc;
		found++;
	}
	if ((rc = join(path, sizeof(path), dir,
		       "gavel/simulation_throughputs_isolated.csv", err)))
		return rc;
	if (access(path, R_OK) == 0) {
		if ((rc = hp_measure_load_gavel(s, cat, path, err)))
			return rc;
		found++;
	}
	if ((rc = join(path, sizeof(path), dir, "zeus", err)))
		return rc;
	if ((d = opendir(path))) {
		while ((e = readdir(d)) && nnames < 64) {
			size_t len = strlen(e->d_name);
			if (strncmp(e->d_name, "summary_power_", 14) ||
			    len < 5 || strcmp(e->d_name + len - 4, ".csv"))
				continue;
			if (!(names[nnames] = hp_strdup(e->d_name))) {
				rc = hp_error_set(err, HP_ENOMEM,
						  "out of memory");
				break;
			}
			nnames++;
		}
		closedir(d);
		qsort(names, (size_t)nnames, sizeof(*names), cmp_str);
		for (int i = 0; !rc && i < nnames; i++) {
			if (!(rc = join(file, sizeof(file), path, names[i],
					err)))
				rc = hp_measure_load_zeus(s, cat, file, NULL,
							  err);
			found++;
		}
		for (int i = 0; i < nnames; i++)
			free(names[i]);
		if (rc)
			return rc;
	}
	if (!found)
		return hp_error_set(err, HP_ENOENT,
				    "%s: no lambda/, gavel/ or zeus/ "
				    "measurements",
				    dir);
	return 0;
}
