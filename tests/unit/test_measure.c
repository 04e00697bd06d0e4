/*
 * test_measure.c - the public measurements loader, checked against the
 * raw CSV files read here independently (a naive comma split: the shipped
 * files have no quoting): counts, values, the outlier rule, and the
 * mapping of every GPU name in the public files to a catalog id.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hetpool/device.h"
#include "hetpool/measure.h"
#include "test.h"

#define M_DIR "data/measurements"

/* A CSV file as a grid of strings; row 0 is the header. */
struct raw {
	char **cell;
	int nrows, ncols;
};

static struct raw raw_read(const char *rel)
{
	struct raw r = {0};
	char line[8192];
	FILE *f = fopen(hp_test_path(rel), "r");
	int alloc = 0;

	if (!f)
		HP_FAIL("cannot open %s", rel);
	while (fgets(line, sizeof(line), f)) {
		char *p = line, *tok;
		int c = 0;
		line[strcspn(line, "\r\n")] = '\0';
		if (!*line)
			continue;
		if (r.nrows == 0) {
			r.ncols = 1;
			for (char *q = line; *q; q++)
				r.ncols += *q == ',';
		}
		if (r.nrows + 1 > alloc) {
			alloc = alloc ? alloc * 2 : 64;
			r.cell =
			    realloc(r.cell, sizeof(char *) * (size_t)alloc *
						(size_t)r.ncols);
		}
		while ((tok = strsep(&p, ",")) != NULL) {
			if (c >= r.ncols)
				HP_FAIL("%s: ragged row %d", rel, r.nrows);
			r.cell[r.nrows * r.ncols + c++] = strdup(tok);
		}
		if (c != r.ncols)
			HP_FAIL("%s: ragged row %d", rel, r.nrows);
		r.nrows++;
	}
	fclose(f);
	return r;
}

static const char *cell(const struct raw *r, int row, int col)
{
	return r->cell[row * r->ncols + col];
}

static int col_of(const struct raw *r, const char *name)
{
	for (int c = 0; c < r->ncols; c++)
		if (!strcmp(cell(r, 0, c), name))
			return c;
	HP_FAIL("no column %s", name);
}

static bool lambda_meta(const char *h)
{
	return !strcmp(h, "name_gpu") || !strcmp(h, "num_gpu") ||
	       !strcmp(h, "watt") || !strcmp(h, "price");
}

static struct hp_catalog *catalog(void)
{
	struct hp_error err = {0};
	struct hp_catalog *cat =
	    hp_catalog_load(hp_test_path("data/devices.csv"), &err);

	if (!cat)
		HP_FAIL("%s", err.msg);
	return cat;
}

static const char *const lambda_files[] = {
    M_DIR "/lambda/pytorch-train-throughput-fp32.csv",
    M_DIR "/lambda/pytorch-train-throughput-fp16.csv",
    M_DIR "/lambda/pytorch-train-bs-fp32.csv",
};

/* Every GPU name the public files use resolves to a catalog type. */
HP_TEST(measure_every_public_gpu_maps_to_catalog)
{
	struct hp_catalog *cat = catalog();
	struct raw g =
	    raw_read(M_DIR "/gavel/simulation_throughputs_isolated.csv");
	static const char *const zeus[] = {"v100", "p100", "rtx6000"};
	int n;

	for (size_t f = 0; f < 3; f++) {
		struct raw r = raw_read(lambda_files[f]);
		int kn = col_of(&r, "name_gpu"), kg = col_of(&r, "num_gpu");
		for (int i = 1; i < r.nrows; i++) {
			const char *name = cell(&r, i, kn);
			if (!hp_measure_device(cat, "lambda", name, &n))
				HP_FAIL("lambda GPU '%s' maps to nothing",
					name);
			if (n != (int)strtod(cell(&r, i, kg), NULL))
				HP_FAIL("'%s': %d GPUs, file says %s", name, n,
					cell(&r, i, kg));
		}
	}
	for (int c = 2; c < g.ncols; c++) {
		char gpu[64];
		snprintf(gpu, sizeof(gpu), "%.*s",
			 (int)strcspn(cell(&g, 0, c), "_"), cell(&g, 0, c));
		if (!hp_measure_device(cat, "gavel", gpu, NULL))
			HP_FAIL("gavel GPU '%s' maps to nothing", gpu);
	}
	for (size_t i = 0; i < 3; i++)
		if (!hp_measure_device(cat, "zeus", zeus[i], NULL))
			HP_FAIL("zeus GPU '%s' maps to nothing", zeus[i]);
	hp_catalog_free(cat);
}

HP_TEST(measure_gpu_names_resolve_as_documented)
{
	static const struct {
		const char *source, *name, *id;
		int n;
	} cases[] = {
	    {"lambda", "LambdaCloud 4xV100 16GB", "v100", 4},
	    {"lambda", "LambdaCloud 2x V100 16GB", "v100", 2},
	    {"lambda", "Dell 8x H100 80GB SXM5", "h100-sxm", 8},
	    {"lambda", "1CC H100 80GB SXM5", "h100-sxm", 1},
	    {"lambda", "8x H100 80GB PCIe Gen5", "h100-pcie", 8},
	    {"lambda", "Lambda Cloud A100 40GB PCIe", "a100-pcie-40", 1},
	    {"lambda", "LambdaCloud A100 40GB PCIe", "a100-pcie-40", 1},
	    {"lambda", "A100 80GB SXM4", "a100-80", 1},
	    {"lambda", "2x A100 80GB PCIe", "a100-pcie-80", 2},
	    {"lambda", "Ada A6000", "rtx6000-ada", 1},
	    {"lambda", "RTX 6000 Ada", "rtx6000-ada", 1},
	    {"lambda", "RTX A6000", "rtxa6000", 1},
	    {"lambda", "Quadro RTX 8000", "rtx8000", 1},
	    {"lambda", "LambdaCloud A10", "a10", 1},
	    {"gavel", "v100", "v100", 1},
	    {"gavel", "k80", "k80", 1},
	    {"zeus", "v100", "v100-pcie", 1},
	    {"zeus", "p100", "p100", 1},
	    {"zeus", "rtx6000", "rtx6000", 1},
	    {NULL, "v100", "v100", 1},
	};
	struct hp_catalog *cat = catalog();

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		int n = -1;
		const struct hp_device_type *t =
		    hp_measure_device(cat, cases[i].source, cases[i].name, &n);
		if (!t || strcmp(t->name, cases[i].id) || n != cases[i].n)
			HP_FAIL("'%s' -> %s x%d, expected %s x%d",
				cases[i].name, t ? t->name : "(none)", n,
				cases[i].id, cases[i].n);
	}
	ASSERT(!hp_measure_device(cat, "lambda", "0x V100", NULL));
	ASSERT(!hp_measure_device(cat, "lambda", "Dell Foo 9000", NULL));
	hp_catalog_free(cat);
}

static struct hp_measure_set load_lambda(const struct hp_catalog *cat)
{
	struct hp_error err = {0};
	struct hp_measure_set s;

	hp_measure_set_init(&s);
	if (hp_measure_load_lambda(&s, cat, hp_test_path(M_DIR "/lambda"),
				   &err))
		HP_FAIL("%s", err.msg);
	return s;
}

static const struct hp_measurement *find(const struct hp_measure_set *s,
					 const char *src, const char *system,
					 const char *model, bool fp16)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->v[i].source, src) &&
		    !strcmp(s->v[i].system, system) &&
		    !strcmp(s->v[i].model, model) && s->v[i].fp16 == fp16)
			return &s->v[i];
	return NULL;
}

HP_TEST(measure_lambda_counts_values_and_outliers)
{
	struct hp_catalog *cat = catalog();
	struct hp_measure_set s = load_lambda(cat);
	struct raw bs = raw_read(lambda_files[2]);
	size_t cells = 0, zeros = 0, huge = 0;

	for (int f = 0; f < 2; f++) {
		struct raw r = raw_read(lambda_files[f]);
		int kn = col_of(&r, "name_gpu");
		for (int i = 1; i < r.nrows; i++)
			for (int c = 0; c < r.ncols; c++) {
				double v;
				if (lambda_meta(cell(&r, 0, c)))
					continue;
				v = strtod(cell(&r, i, c), NULL);
				if (v == 0) {
					zeros++;
					continue;
				}
				cells++;
				/* Every ~1e9+ NCF cell must be dropped;
				 * every other cell kept as it is. */
				const struct hp_measurement *m =
				    find(&s, "lambda", cell(&r, i, kn),
					 cell(&r, 0, c), f == 1);
				if (v > 1e9) {
					huge++;
					ASSERT_STR_EQ(cell(&r, 0, c), "ncf");
					if (m)
						HP_FAIL("kept %s %s %g",
							cell(&r, i, kn),
							cell(&r, 0, c), v);
				} else if (m) {
					ASSERT_NEAR(m->samples_per_s, v, 0);
				}
			}
	}
	ASSERT_EQ_INT(huge, 14); /* 7 fp32 + 7 fp16 NCF cells */
	ASSERT_EQ_INT(s.n + s.nrejected, cells);
	ASSERT_EQ_INT(s.nskipped, zeros);
	ASSERT_EQ_INT(s.nrejected, huge); /* exactly those, no others */

	/* The rule itself: no kept cell beyond 2x linear scaling of the
	 * best single-GPU figure. */
	for (size_t i = 0; i < s.n; i++) {
		const struct hp_measurement *m = &s.v[i];
		double best = 0;
		for (size_t j = 0; m->ndevices > 1 && j < s.n; j++) {
			const struct hp_measurement *o = &s.v[j];
			if (o->ndevices == 1 && o->fp16 == m->fp16 &&
			    !strcmp(o->model, m->model) &&
			    !strcmp(o->device, m->device) &&
			    o->samples_per_s > best)
				best = o->samples_per_s;
		}
		ASSERT(m->ndevices == 1 ||
		       m->samples_per_s / m->ndevices <= 2 * best);
	}

	/* A cell and its global batch, from the raw files. */
	const struct hp_measurement *m =
	    find(&s, "lambda", "LambdaCloud 4xV100 16GB", "resnet50", false);
	ASSERT(m);
	ASSERT_STR_EQ(m->device, "v100");
	ASSERT_EQ_INT(m->ndevices, 4);
	for (int i = 1; i < bs.nrows; i++)
		if (!strcmp(cell(&bs, i, 0), "LambdaCloud 4xV100 16GB"))
			ASSERT_EQ_INT(
			    m->batch,
			    (int64_t)strtod(
				cell(&bs, i, col_of(&bs, "resnet50")), NULL));
	ASSERT(m->batch > 0);
	ASSERT_NEAR(m->step_time_s, (double)m->batch / m->samples_per_s, 1e-12);
	ASSERT(isnan(m->power_w)); /* "watt" is nominal, not measured */
	/* fp16 cells take their batch from pytorch-train-bs-fp16.csv (1,024
	 * on 4 V100s, twice the fp32 run's 512). */
	m = find(&s, "lambda", "LambdaCloud 4xV100 16GB", "resnet50", true);
	ASSERT(m && m->fp16);
	ASSERT_EQ_INT(m->batch, 1024);
	ASSERT_NEAR(m->step_time_s, 1024 / m->samples_per_s, 1e-12);
	/* ... and the systems that file lacks have none: batch 0. */
	m = find(&s, "lambda", "LambdaCloud A10", "resnet50", true);
	ASSERT(m && m->fp16 && m->batch == 0 && isnan(m->step_time_s));
	/* Rows of systems the batch-size file lacks keep batch 0. */
	m = find(&s, "lambda", "LambdaCloud A10", "resnet50", false);
	ASSERT(m && m->batch == 0);
	hp_measure_set_release(&s);
	hp_catalog_free(cat);
}

HP_TEST(measure_gavel_counts_and_values)
{
	struct hp_catalog *cat = catalog();
	struct raw r =
	    raw_read(M_DIR "/gavel/simulation_throughputs_isolated.csv");
	struct hp_error err = {0};
	struct hp_measure_set s;
	size_t want = 0, zeros = 0;
	int kv = col_of(&r, "v100"), kn = col_of(&r, "num_gpus");

	hp_measure_set_init(&s);
	ASSERT_EQ_INT(
	    hp_measure_load_gavel(
		&s, cat,
		hp_test_path(M_DIR
			     "/gavel/simulation_throughputs_isolated.csv"),
		&err),
	    0);
	for (int i = 1; i < r.nrows; i++)
		for (int c = 2; c < r.ncols; c++) {
			bool spread = strstr(cell(&r, 0, c), "_uncons");
			if (spread && !strcmp(cell(&r, i, kn), "1"))
				continue;
			if (strtod(cell(&r, i, c), NULL) == 0)
				zeros++;
			else
				want++;
		}
	ASSERT_EQ_INT(s.n, want);
	ASSERT_EQ_INT(s.nskipped, zeros);
	for (int i = 1; i < r.nrows; i++) {
		if (strcmp(cell(&r, i, 0), "ResNet-50 (batch size 64)") ||
		    strcmp(cell(&r, i, kn), "1"))
			continue;
		double steps = strtod(cell(&r, i, kv), NULL);
		for (size_t j = 0; j < s.n; j++) {
			const struct hp_measurement *m = &s.v[j];
			if (strcmp(m->model, "ResNet-50") || m->batch != 64 ||
			    strcmp(m->system, "v100") || m->ndevices != 1)
				continue;
			ASSERT_STR_EQ(m->device, "v100");
			ASSERT_STR_EQ(m->dataset, "imagenet");
			ASSERT_NEAR(m->step_time_s, 1 / steps, 1e-12);
			ASSERT_NEAR(m->samples_per_s, 64 * steps, 1e-9);
			want = 0;
		}
	}
	ASSERT_EQ_INT(want, 0);
	/* Multi-GPU: the global batch is per worker x GPUs. */
	for (size_t j = 0; j < s.n; j++)
		if (!strcmp(s.v[j].model, "ResNet-18") && s.v[j].ndevices == 4)
			ASSERT(s.v[j].batch % 4 == 0 && s.v[j].batch >= 64);
	hp_measure_set_release(&s);
	hp_catalog_free(cat);
}

HP_TEST(measure_zeus_counts_defaults_and_energy)
{
	static const struct {
		const char *gpu, *id;
		double max_limit;
	} files[] = {
	    {"v100", "v100-pcie", 250},
	    {"p100", "p100", 250},
	    {"rtx6000", "rtx6000", 260},
	};
	struct hp_catalog *cat = catalog();

	for (size_t f = 0; f < 3; f++) {
		char rel[128];
		struct hp_error err = {0};
		struct hp_measure_set s;
		size_t defaults = 0, got_defaults = 0;
		snprintf(rel, sizeof(rel), M_DIR "/zeus/summary_power_%s.csv",
			 files[f].gpu);
		struct raw r = raw_read(rel);
		int kl = col_of(&r, "power_limit");
		hp_measure_set_init(&s);
		if (hp_measure_load_zeus(&s, cat, hp_test_path(rel), NULL,
					 &err))
			HP_FAIL("%s", err.msg);
		ASSERT_EQ_INT(s.n, r.nrows - 1);
		for (int i = 1; i < r.nrows; i++)
			defaults +=
			    strtod(cell(&r, i, kl), NULL) == files[f].max_limit;
		for (size_t j = 0; j < s.n; j++) {
			const struct hp_measurement *m = &s.v[j];
			ASSERT_STR_EQ(m->device, files[f].id);
			got_defaults += m->default_power;
			ASSERT(m->default_power ==
			       (m->power_limit_w == files[f].max_limit));
			ASSERT(m->power_w > 0 && m->epoch_time_s > 0);
		}
		ASSERT(defaults > 0);
		ASSERT_EQ_INT(got_defaults, defaults);
		/* Row 1 of the raw file, value by value. */
		const struct hp_measurement *m = &s.v[0];
		ASSERT_STR_EQ(m->dataset, cell(&r, 1, col_of(&r, "dataset")));
		ASSERT_STR_EQ(m->model, cell(&r, 1, col_of(&r, "network")));
		ASSERT_NEAR(
		    m->epoch_time_s,
		    strtod(cell(&r, 1, col_of(&r, "time_per_epoch")), NULL), 0);
		ASSERT_NEAR(
		    m->power_w,
		    strtod(cell(&r, 1, col_of(&r, "average_power")), NULL), 0);
		/* Energy where the dataset size is known. */
		for (size_t j = 0; j < s.n; j++) {
			m = &s.v[j];
			if (!strcmp(m->dataset, "imagenet"))
				ASSERT_NEAR(m->energy_j_per_sample,
					    m->power_w * m->epoch_time_s /
						1281167,
					    1e-12);
			else if (!strcmp(m->dataset, "cifar100"))
				ASSERT_NEAR(m->samples_per_s,
					    50000 / m->epoch_time_s, 1e-12);
			else
				ASSERT(isnan(m->samples_per_s) &&
				       isnan(m->energy_j_per_sample));
		}
		hp_measure_set_release(&s);
	}
	hp_catalog_free(cat);
}

HP_TEST(measure_load_dir_is_the_sum)
{
	struct hp_catalog *cat = catalog();
	struct hp_error err = {0};
	struct hp_measure_set all, s;
	size_t n = 0;

	hp_measure_set_init(&all);
	ASSERT_EQ_INT(hp_measure_load_dir(&all, cat, hp_test_path(M_DIR), &err),
		      0);
	s = load_lambda(cat);
	n += s.n;
	hp_measure_set_release(&s);
	hp_measure_set_init(&s);
	ASSERT_EQ_INT(
	    hp_measure_load_gavel(
		&s, cat,
		hp_test_path(M_DIR
			     "/gavel/simulation_throughputs_isolated.csv"),
		&err),
	    0);
	static const char *const z[] = {"p100", "rtx6000", "v100"};
	for (int i = 0; i < 3; i++) {
		char rel[128];
		snprintf(rel, sizeof(rel), M_DIR "/zeus/summary_power_%s.csv",
			 z[i]);
		ASSERT_EQ_INT(hp_measure_load_zeus(&s, cat, hp_test_path(rel),
						   NULL, &err),
			      0);
	}
	n += s.n;
	ASSERT_EQ_INT(all.n, n);
	hp_measure_set_release(&s);
	hp_measure_set_release(&all);
	ASSERT(hp_measure_load_dir(&all, cat, "/nonexistent", &err) ==
	       HP_ENOENT);
	hp_catalog_free(cat);
}

/* Write text to NAME in a fresh folder (Zeus takes the GPU from the name). */
static const char *tmp_dir;

static const char *write_tmp(const char *name, const char *text)
{
	static char path[256];
	FILE *f;

	if (!tmp_dir)
		tmp_dir = hp_test_tmpdir("hp_measure_");
	snprintf(path, sizeof(path), "%s/%s", tmp_dir, name);
	f = fopen(path, "w");
	if (!f)
		HP_FAIL("cannot write %s", path);
	fputs(text, f);
	fclose(f);
	return path;
}

HP_TEST(measure_bad_files_name_file_and_line)
{
	struct hp_catalog *cat = catalog();
	struct hp_error err = {0};
	struct hp_measure_set s;
	const char *p;

	hp_measure_set_init(&s);
	p = write_tmp("summary_power_v100.csv",
		      "dataset,network,batch_size,optimizer,power_limit,"
		      "time_per_epoch,average_power\n"
		      "imagenet,resnet50,256,adam,250,100,200\n"
		      "imagenet,resnet50,256,adam,250,abc,200\n");
	ASSERT_EQ_INT(hp_measure_load_zeus(&s, cat, p, NULL, &err), HP_EPARSE);
	ASSERT(strstr(err.msg, "summary_power_v100.csv:3:"));
	ASSERT_EQ_INT(s.n, 0); /* nothing half-loaded */
	unlink(p);
	p = write_tmp("summary_power_tpu.csv",
		      "dataset,network,batch_size,optimizer,power_limit,"
		      "time_per_epoch,average_power\n");
	ASSERT_EQ_INT(hp_measure_load_zeus(&s, cat, p, NULL, &err), HP_ENOENT);
	ASSERT(strstr(err.msg, "'tpu' is not in the device catalog"));
	unlink(p);
	p = write_tmp("gavel.csv", "model,num_gpus,v100\n"
				   "ResNet-18 (batch size x),1,2.0\n");
	ASSERT_EQ_INT(hp_measure_load_gavel(&s, cat, p, &err), HP_EPARSE);
	ASSERT(strstr(err.msg, "gavel.csv:2:"));
	unlink(p);
	p = write_tmp("gavel.csv", "model,num_gpus,tpu\nA3C,1,2.0\n");
	ASSERT_EQ_INT(hp_measure_load_gavel(&s, cat, p, &err), HP_ENOENT);
	unlink(p);
	ASSERT_EQ_INT(s.n, 0);
	rmdir(tmp_dir);
	hp_measure_set_release(&s);
	hp_catalog_free(cat);
}
