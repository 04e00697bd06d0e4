/*
 * test_host.c - the CPU host as a device type: its description (sockets,
 * vector width, caches from a fake sysfs tree), its host file (key, JSON
 * round trip, refusals, the catalog taking it in), the estimator carrying
 * a CPU fit to it by its figures, and its calibration's fit.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "estimate/estimate_int.h"
#include "hetpool/device.h"
#include "hetpool/estimate.h"
#include "hetpool/model.h"
#include "hetpool/pool.h"
#include "hetpool/recommend.h"
#include "test.h"

static const char cpuinfo_2s[] =
    "processor : 0\nvendor_id : GenuineIntel\n"
    "model name : Intel(R) Xeon(R) Gold 6130 CPU @ 2.10GHz\n"
    "physical id : 0\ncore id : 0\n"
    "flags : sse2 avx fma avx2 avx512f\n\n"
    "processor : 1\nphysical id : 0\ncore id : 1\n\n"
    "processor : 2\nphysical id : 1\ncore id : 0\n\n"
    "processor : 3\nphysical id : 1\ncore id : 1\n";

HP_TEST(host_sockets_vector_width_threads)
{
	struct hp_host h;

	hp_host_parse(cpuinfo_2s, NULL, 4, 0, &h);
	ASSERT_EQ_INT(h.sockets, 2);
	ASSERT_EQ_INT(h.physical_cores, 4);
	ASSERT_EQ_INT(h.vector_bits, 512);
	ASSERT_EQ_INT(h.flops_per_cycle, 64);
	ASSERT_EQ_INT(h.threads, 0);
	ASSERT_EQ_INT(hp_host_threads(&h), 4);
	/* the ISA estimate at the threads used: a share of the cores */
	ASSERT_NEAR(hp_host_fp32_est(&h), 4 * 2.1 * 64 * 1e9, 1e-3);
	h.threads = 1;
	ASSERT_NEAR(hp_host_fp32_est(&h), 2.1 * 64 * 1e9, 1e-3);
	h.threads = 16; /* threads beyond the cores add nothing */
	ASSERT_NEAR(hp_host_fp32_est(&h), 4 * 2.1 * 64 * 1e9, 1e-3);
	hp_host_parse("processor : 0\nflags : sse2 avx fma avx2\n", NULL, 1,
		      3000, &h);
	ASSERT_EQ_INT(h.vector_bits, 256);
	hp_host_parse(NULL, NULL, 0, 0, &h);
	ASSERT_EQ_INT(h.vector_bits, 0);
	ASSERT(isnan(hp_host_fp32_est(&h)));
}

HP_TEST(host_cache_size_parse)
{
	ASSERT_EQ_INT(hp_host_parse_cache_size("32K"), 32768);
	ASSERT_EQ_INT(hp_host_parse_cache_size("32768K\n"), 33554432);
	ASSERT_EQ_INT(hp_host_parse_cache_size("1M"), 1048576);
	ASSERT_EQ_INT(hp_host_parse_cache_size("4096"), 4096);
	ASSERT_EQ_INT(hp_host_parse_cache_size(""), -1);
	ASSERT_EQ_INT(hp_host_parse_cache_size("K"), -1);
	ASSERT_EQ_INT(hp_host_parse_cache_size("12Q"), -1);
	ASSERT_EQ_INT(hp_host_parse_cache_size("-5K"), -1);
	ASSERT_EQ_INT(hp_host_parse_cache_size("99999999999999999999K"), -1);
}

static void put(const char *dir, const char *name, const char *text)
{
	char p[512];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "w");
	if (!f)
		HP_FAIL("cannot write %s", p);
	fputs(text, f);
	fclose(f);
}

/* SYS/devices/system/cpu/cpu0/cache/indexI with these files. */
static void fake_cache(const char *sys, int i, const char *level,
		       const char *type, const char *size, const char *shared)
{
	char d[512];
	const char *parts[] = {"devices", "system", "cpu", "cpu0", "cache"};
	size_t len = (size_t)snprintf(d, sizeof(d), "%s", sys);

	for (int k = 0; k < 5; k++) {
		len +=
		    (size_t)snprintf(d + len, sizeof(d) - len, "/%s", parts[k]);
		mkdir(d, 0755);
	}
	snprintf(d + len, sizeof(d) - len, "/index%d", i);
	mkdir(d, 0755);
	put(d, "level", level);
	put(d, "type", type);
	put(d, "size", size);
	if (shared)
		put(d, "shared_cpu_list", shared);
}

HP_TEST(host_caches_from_fake_sysfs)
{
	const char *sys = hp_test_tmpdir("hp_sysfs_");
	struct hp_host h;

	fake_cache(sys, 0, "1\n", "Data\n", "48K\n", "0,28\n");
	fake_cache(sys, 1, "1\n", "Instruction\n", "32K\n", "0,28\n");
	fake_cache(sys, 2, "2\n", "Unified\n", "2048K\n", "0,28\n");
	fake_cache(sys, 3, "3\n", "Unified\n", "107520K\n", "0-27,56-83\n");
	memset(&h, 0, sizeof(h));
	ASSERT_EQ_INT(hp_host_read_caches(sys, &h), 3);
	ASSERT_EQ_INT(h.l1d_bytes, 48 * 1024);
	ASSERT_EQ_INT(h.l2_bytes, 2048 * 1024);
	ASSERT_EQ_INT(h.l3_bytes, 107520LL * 1024);
	ASSERT_EQ_INT(h.l3_cpus, 56);
	/* a size that is not one is left out, not guessed */
	fake_cache(sys, 2, "2\n", "Unified\n", "lots\n", NULL);
	memset(&h, 0, sizeof(h));
	ASSERT_EQ_INT(hp_host_read_caches(sys, &h), 2);
	ASSERT_EQ_INT(h.l2_bytes, 0);
	/* no tree: nothing found, nothing set */
	memset(&h, 0, sizeof(h));
	ASSERT_EQ_INT(hp_host_read_caches("/nonexistent-hp", &h), 0);
	ASSERT_EQ_INT(h.l3_bytes, 0);
}

static void sample_host(struct hp_host *h)
{
	hp_host_parse("processor : 0\nvendor_id : AuthenticAMD\n"
		      "model name : AMD EPYC 7B13 64-Core Processor\n"
		      "physical id : 0\ncore id : 0\ncpu MHz : 2450.0\n"
		      "flags : sse2 avx fma avx2\n\nprocessor : 1\n"
		      "physical id : 0\ncore id : 1\n",
		      "MemTotal: 24000000 kB\n", 2, 0, h);
	h->l1d_bytes = 32768;
	h->l2_bytes = 524288;
	h->l3_bytes = 33554432;
	h->l3_cpus = 2;
	h->threads = 1;
}

HP_TEST(host_file_key_and_round_trip)
{
	struct hp_error err = {0};
	struct hp_host h;
	struct hp_host_file f, g;
	char *text;

	sample_host(&h);
	hp_host_file_init(&f, &h);
	ASSERT_STR_EQ(f.key, "amd-epyc-7b13-64-core-processor-avx2-t1");
	f.peaks.threads = 1;
	f.peaks.fp32_flops = 81.5e9;
	f.peaks.triad_bw = 9.3e9;
	f.peaks.copy_bw = 11.5e9;
	f.peaks.array_bytes = 134217728;
	snprintf(f.peaks.when, sizeof(f.peaks.when), "2026-11-30T18:00:00Z");
	f.calib.has = true;
	f.calib.n = 22;
	f.calib.threads = 1;
	f.calib.log_scale[0] = 0.25;
	f.calib.log_scale[1] = -0.5;
	f.calib.log_scale[2] = 1.0;
	f.calib.mape_before = 40;
	f.calib.mape_after = 8;
	snprintf(f.calib.when, sizeof(f.calib.when), "2026-11-30T18:01:00Z");
	snprintf(f.calib.estimator, sizeof(f.calib.estimator),
		 "2026-11-30T23:26:52Z");
	snprintf(f.calib.cpu_fit, sizeof(f.calib.cpu_fit), "0123456789abcdef");
	f.calib.nparams = 2;
	snprintf(f.calib.param_names[0], sizeof(f.calib.param_names[0]),
		 "log_emax_conv");
	f.calib.params[0] = -0.5;
	snprintf(f.calib.param_names[1], sizeof(f.calib.param_names[1]),
		 "log_conv_half_reduction");
	f.calib.params[1] = 3.0;
	f.calib.fit_gflops = 78.25;
	f.calib.chan_block = 8;
	f.peaks.loader.decode_s_per_px = 5.75e-9;
	f.peaks.loader.augment_s_per_px = 2e-8;
	f.peaks.loader.jpeg_bits_per_px = 4.75;
	f.peaks.loader.samples = 312;
	text = hp_host_file_json(&f);
	ASSERT(text);
	ASSERT_EQ_INT(
	    hp_host_file_parse(text, strlen(text), "h.json", &g, &err), 0);
	free(text);
	ASSERT_STR_EQ(g.key, f.key);
	ASSERT_STR_EQ(g.host.model, h.model);
	ASSERT_EQ_INT(g.host.threads, 1);
	ASSERT_EQ_INT(g.host.l3_bytes, 33554432);
	ASSERT_EQ_INT(g.host.vector_bits, 256);
	ASSERT_NEAR(g.host.ghz, 2.45, 1e-9);
	ASSERT_NEAR(g.peaks.fp32_flops, 81.5e9, 1);
	ASSERT_NEAR(g.peaks.triad_bw, 9.3e9, 1);
	ASSERT_STR_EQ(g.peaks.when, "2026-11-30T18:00:00Z");
	ASSERT_NEAR(g.peaks.loader.decode_s_per_px, 5.75e-9, 1e-20);
	ASSERT_NEAR(g.peaks.loader.augment_s_per_px, 2e-8, 1e-20);
	ASSERT_NEAR(g.peaks.loader.jpeg_bits_per_px, 4.75, 1e-12);
	ASSERT_EQ_INT(g.peaks.loader.samples, 312);
	/* a sample: 500x375 decoded, 224x224 out */
	ASSERT_NEAR(hp_loader_sample_s(&g.peaks.loader, 187500, 50176),
		    5.75e-9 * 187500 + 2e-8 * 50176, 1e-15);
	ASSERT(g.calib.has);
	ASSERT_EQ_INT(g.calib.n, 22);
	ASSERT_NEAR(g.calib.log_scale[1], -0.5, 1e-9);
	ASSERT(isnan(g.calib.ref_time_s)); /* the yardstick's hook: empty */
	ASSERT_STR_EQ(g.calib.estimator, "2026-11-30T23:26:52Z");
	ASSERT_STR_EQ(g.calib.cpu_fit, "0123456789abcdef");
	/* this host's own fit, by name (the file's order need not be ours) */
	ASSERT_EQ_INT(g.calib.nparams, 2);
	for (int k = 0; k < 2; k++) {
		bool first = !strcmp(g.calib.param_names[k], "log_emax_conv");
		ASSERT(first || !strcmp(g.calib.param_names[k],
					"log_conv_half_reduction"));
		ASSERT_NEAR(g.calib.params[k], first ? -0.5 : 3.0, 1e-9);
	}
	ASSERT_NEAR(g.calib.fit_gflops, 78.25, 1e-9);
	ASSERT_EQ_INT(g.calib.chan_block, 8);
	/* nothing measured: no peaks, no calibration */
	hp_host_file_init(&f, &h);
	text = hp_host_file_json(&f);
	ASSERT(text && !strstr(text, "peaks") && !strstr(text, "calibration"));
	ASSERT_EQ_INT(
	    hp_host_file_parse(text, strlen(text), "h.json", &g, &err), 0);
	free(text);
	ASSERT(!g.peaks.when[0] && !g.calib.has);
	ASSERT(isnan(g.peaks.loader.decode_s_per_px));
	ASSERT(isnan(hp_loader_sample_s(&g.peaks.loader, 1, 1)));
	/* peaks measured before the loader was: read, loader not measured */
	f.peaks.threads = 1;
	f.peaks.fp32_flops = 81.5e9;
	f.peaks.triad_bw = 9.3e9;
	snprintf(f.peaks.when, sizeof(f.peaks.when), "2026-11-30T18:00:00Z");
	text = hp_host_file_json(&f);
	ASSERT(text && strstr(text, "peaks") && !strstr(text, "loader"));
	ASSERT_EQ_INT(
	    hp_host_file_parse(text, strlen(text), "h.json", &g, &err), 0);
	free(text);
	ASSERT(g.peaks.when[0] && isnan(g.peaks.loader.augment_s_per_px));
}

HP_TEST(host_file_refusals)
{
	static const struct {
		const char *text, *want;
	} cases[] = {
	    {"{", "h.json:"},
	    {"[]", "not a JSON object"},
	    {"{\"format\":\"other\"}", "format 'other'"},
	    {"{\"format\":\"hetpool-host\",\"key\":\"k\"}", "'host' missing"},
	    {"{\"format\":\"hetpool-host\",\"key\":\"k\",\"host\":{\"model\":"
	     "\"m\",\"isa\":\"avx2\"}}",
	     "'threads' missing"},
	    {"{\"format\":\"hetpool-host\",\"key\":\"k\",\"host\":{\"model\":"
	     "\"m\\u0007\",\"isa\":\"avx2\",\"threads\":1}}",
	     "control character"},
	    {"{\"format\":\"hetpool-host\",\"key\":\"k\",\"host\":{\"model\":"
	     "\"m\",\"isa\":\"avx2\",\"threads\":1,\"ghz\":-1}}",
	     "'ghz' -1 out of range"},
	    {"{\"format\":\"hetpool-host\",\"key\":\"k\",\"host\":{\"model\":"
	     "\"m\",\"isa\":\"avx2\",\"threads\":1},\"peaks\":{\"threads\":1,"
	     "\"fp32_flops\":1e10,\"when\":\"x\"}}",
	     "'triad_bytes_per_s' missing"},
	    {"{\"format\":\"hetpool-host\",\"key\":\"k\",\"host\":{\"model\":"
	     "\"m\",\"isa\":\"avx2\",\"threads\":1},\"calibration\":{"
	     "\"log_scale_conv_fc_other\":[0,0,9],\"when\":\"x\","
	     "\"configurations\":3}}",
	     "not a number in -5..5"},
	    {"{\"format\":\"hetpool-host\",\"key\":\"k\",\"host\":{\"model\":"
	     "\"m\",\"isa\":\"avx2\",\"threads\":1},\"calibration\":{"
	     "\"log_scale_conv_fc_other\":[0,0],\"when\":\"x\","
	     "\"configurations\":3}}",
	     "of 3 numbers"},
	    {"{\"format\":\"hetpool-host\",\"format\":\"hetpool-host\"}",
	     "h.json:"},
#define CAL_OWN(own)                                                           \
	"{\"format\":\"hetpool-host\",\"key\":\"k\",\"host\":{\"model\":"      \
	"\"m\",\"isa\":\"avx2\",\"threads\":1},\"calibration\":{"              \
	"\"log_scale_conv_fc_other\":[0,0,0],\"when\":\"x\","                  \
	"\"configurations\":3,\"own_fit\":" own "}}"
	    {CAL_OWN("{\"params\":{},\"fit_gflops\":78}"), "1 to 32 numbers"},
	    {CAL_OWN("{\"params\":{\"a\":1}}"), "'fit_gflops' missing"},
	    {CAL_OWN("{\"params\":{\"a\":99},\"fit_gflops\":78}"),
	     "number in -80..40"},
	    {CAL_OWN("{\"params\":{\"a\":\"x\"},\"fit_gflops\":78}"),
	     "number in -80..40"},
	    {CAL_OWN("{\"params\":{\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\":1},"
		     "\"fit_gflops\":78}"),
	     "under 32 characters"},
	    {CAL_OWN("{\"params\":{\"a\":1},\"fit_gflops\":78,"
		     "\"chan_block\":0}"),
	     "'chan_block' is not an integer"},
	    {CAL_OWN("[]"), "'own_fit' needs 'params'"},
#undef CAL_OWN
#define LOADER(l)                                                              \
	"{\"format\":\"hetpool-host\",\"key\":\"k\",\"host\":{\"model\":"      \
	"\"m\",\"isa\":\"avx2\",\"threads\":1},\"peaks\":{\"threads\":1,"      \
	"\"fp32_flops\":1e10,\"triad_bytes_per_s\":1e10,\"when\":\"x\","       \
	"\"loader\":" l "}}"
	    {LOADER("[]"), "'peaks.loader' is not an object"},
	    {LOADER("{\"augment_s_per_px\":1e-8}"),
	     "'decode_s_per_px' missing"},
	    {LOADER("{\"decode_s_per_px\":0,\"augment_s_per_px\":1e-8}"),
	     "'decode_s_per_px' 0 out of range"},
	    {LOADER("{\"decode_s_per_px\":1e-9,\"augment_s_per_px\":1}"),
	     "'augment_s_per_px' 1 out of range"},
#undef LOADER
	};
	struct hp_host_file f;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct hp_error err = {0};
		int rc = hp_host_file_parse(
		    cases[i].text, strlen(cases[i].text), "h.json", &f, &err);
		if (rc != HP_EPARSE || !strstr(err.msg, cases[i].want) ||
		    strncmp(err.msg, "h.json", 6))
			HP_FAIL("case %zu: rc %d, '%s' (want '%s')", i, rc,
				err.msg, cases[i].want);
	}
}

static struct hp_catalog *shipped_catalog(void)
{
	struct hp_error err = {0};
	struct hp_catalog *cat =
	    hp_catalog_load(hp_test_path("data/devices.csv"), &err);

	if (!cat)
		HP_FAIL("catalog: %s", err.msg);
	return cat;
}

static struct hp_device_type *cpu_type(struct hp_catalog *cat)
{
	for (int i = 0; i < cat->n; i++)
		if (cat->types[i].kind == HP_DEVICE_CPU)
			return &cat->types[i];
	HP_FAIL("no cpu type");
	return NULL;
}

HP_TEST(host_file_save_load_apply)
{
	const char *dir = hp_test_tmpdir("hp_state_");
	char path[4200];
	struct hp_error err = {0};
	struct hp_catalog *cat = shipped_catalog();
	struct hp_device_type *t = cpu_type(cat);
	struct hp_host h;
	struct hp_host_file f, g;

	sample_host(&h);
	hp_host_apply(&h, t);
	/* no host file: the type keeps the detected figures, plus the
	 * threads and caches */
	ASSERT_EQ_INT(hp_host_file_apply_catalog(dir, &h, cat, &err), 0);
	ASSERT_EQ_INT(t->threads, 1);
	ASSERT(!t->peaks_measured && !t->calib.has);
	ASSERT_NEAR(t->fp32_est_tflops, 2.45 * 32 / 1000, 1e-9);
	ASSERT_NEAR(t->cache_bytes, 524288.0 + 33554432.0, 0);
	ASSERT(isnan(t->mem_bw_gbs));
	ASSERT_EQ_INT(hp_host_file_path(dir, &h, path, sizeof(path), &err), 0);
	ASSERT(strstr(path, "/hosts/amd-epyc-7b13-64-core-processor-avx2-t1"
			    ".json"));
	ASSERT_EQ_INT(hp_host_file_load(path, &g, &err), HP_ENOENT);
	hp_host_file_init(&f, &h);
	f.peaks.threads = 1;
	f.peaks.fp32_flops = 70e9;
	f.peaks.triad_bw = 10e9;
	snprintf(f.peaks.when, sizeof(f.peaks.when), "2026-11-30T18:00:00Z");
	f.calib.has = true;
	f.calib.n = 5;
	f.calib.threads = 1;
	snprintf(f.calib.when, sizeof(f.calib.when), "2026-11-30T18:01:00Z");
	ASSERT_EQ_INT(hp_host_file_save(path, &f, &err), 0);
	ASSERT_EQ_INT(hp_host_file_load(path, &g, &err), 0);
	ASSERT_NEAR(g.peaks.fp32_flops, 70e9, 1);
	ASSERT_EQ_INT(hp_host_file_apply_catalog(dir, &h, cat, &err), 1);
	ASSERT(t->peaks_measured && t->calib.has);
	ASSERT_NEAR(t->fp32_tflops, 0.07, 1e-12);
	ASSERT_NEAR(t->mem_bw_gbs, 10, 1e-9);
	ASSERT_STR_EQ(t->key, "amd-epyc-7b13-64-core-processor-avx2-t1");
	/* another thread count is another host file: not this one */
	hp_catalog_free(cat);
	cat = shipped_catalog();
	t = cpu_type(cat);
	hp_host_apply(&h, t);
	h.threads = 2;
	ASSERT_EQ_INT(hp_host_file_apply_catalog(dir, &h, cat, &err), 0);
	ASSERT(!t->peaks_measured && !t->calib.has);
	/* another host's file in this one's place (copied, or a folder
	 * shared between machines): an error, left out */
	h.threads = 1;
	{
		struct hp_host other = h;
		snprintf(other.model, sizeof(other.model), "Intel Xeon");
		snprintf(other.isa, sizeof(other.isa), "avx512");
		hp_host_file_init(&f, &other);
		f.peaks.threads = 1;
		f.peaks.fp32_flops = 500e9;
		f.peaks.triad_bw = 50e9;
		snprintf(f.peaks.when, sizeof(f.peaks.when),
			 "2026-12-03T15:00:00Z");
		ASSERT_EQ_INT(hp_host_file_save(path, &f, &err), 0);
	}
	hp_catalog_free(cat);
	cat = shipped_catalog();
	t = cpu_type(cat);
	hp_host_apply(&h, t);
	ASSERT_EQ_INT(hp_host_file_apply_catalog(dir, &h, cat, &err),
		      HP_EINVAL);
	ASSERT(strstr(err.msg, "not this host"));
	ASSERT(!t->peaks_measured);
	/* a malformed file is an error, not silence; either way the
	 * detected figures are in the type (until 3 December they were
	 * not, and predictions lost the carry to this host) */
	put(dir, "hosts/amd-epyc-7b13-64-core-processor-avx2-t1.json", "{");
	ASSERT_EQ_INT(hp_host_file_apply_catalog(dir, &h, cat, &err),
		      HP_EPARSE);
	ASSERT_EQ_INT(t->threads, 1);
	ASSERT_NEAR(t->fp32_est_tflops, 2.45 * 32 / 1000, 1e-9);
	ASSERT_STR_EQ(t->key, "amd-epyc-7b13-64-core-processor-avx2-t1");
	ASSERT(!t->peaks_measured);
	hp_catalog_free(cat);
}

/* The calibration's fit against data made from known factors. */
HP_TEST(host_calib_fit_recovers_factors)
{
	double a[30 * 3], y[30], c[3];
	const double truth[3] = {0.3, -0.2, 0.5};
	uint64_t s = 12345;

	for (int i = 0; i < 30; i++) {
		y[i] = 0;
		for (int k = 0; k < 3; k++) {
			s = s * 6364136223846793005ULL + 1442695040888963407ULL;
			a[i * 3 + k] =
			    1e-3 * (0.1 + (double)(s >> 40) / 16777216.0);
			y[i] += exp(truth[k]) * a[i * 3 + k];
		}
	}
	ASSERT_EQ_INT(hp__host_calib_fit(a, y, 30, 0, c), 0);
	for (int k = 0; k < 3; k++)
		ASSERT_NEAR(c[k], truth[k], 1e-6);
	/* a strong ridge pulls every factor to no correction */
	ASSERT_EQ_INT(hp__host_calib_fit(a, y, 30, 1e6, c), 0);
	for (int k = 0; k < 3; k++)
		ASSERT(fabs(c[k]) < 1e-3);
	/* a class that never takes time is not moved */
	for (int i = 0; i < 30; i++) {
		a[i * 3 + 1] = 0;
		y[i] = 2 * (a[i * 3] + a[i * 3 + 2]);
	}
	ASSERT_EQ_INT(hp__host_calib_fit(a, y, 30, 1, c), 0);
	ASSERT_NEAR(c[1], 0, 1e-12);
	ASSERT_NEAR(c[0], log(2), 0.05);
	ASSERT_NEAR(c[2], log(2), 0.05);
}

static struct hp_estimator *shipped_estimator(void)
{
	struct hp_error err = {0};
	struct hp_estimator *est = hp_estimator_load(
	    hp_test_path("data/estimators/default.json"), &err);

	if (!est)
		HP_FAIL("estimator: %s", err.msg);
	return est;
}

static void spec_workload(const char *spec, int64_t batch,
			  struct hp_workload *w)
{
	struct hp_error err = {0};
	struct hp_graph *g = hp_spec_parse(spec, strlen(spec), &err);

	if (!g)
		HP_FAIL("spec: %s", err.msg);
	if (hp_workload_from_graph(g, batch, NULL, 0, w, &err))
		HP_FAIL("workload: %s", err.msg);
	hp_graph_free(g);
}

static const char spec_k5[] =
    "{\"name\":\"k5\",\"input\":[1,28,28],\"classes\":100,\"layers\":["
    "{\"type\":\"conv\",\"filters\":16,\"kernel\":5,\"stride\":1,\"pad\":2},"
    "{\"type\":\"bn\"},{\"type\":\"relu\"},"
    "{\"type\":\"pool\",\"op\":\"avg\",\"kernel\":2,\"stride\":2},"
    "{\"type\":\"fc\",\"units\":100}]}";

HP_TEST(host_transfer_and_calibration_in_predict)
{
	struct hp_error err = {0};
	struct hp_catalog *cat = shipped_catalog();
	struct hp_estimator *est = shipped_estimator();
	const struct hp__dev_fit *df = hp__est_dev(est, "cpu");
	struct hp_device_type *t = cpu_type(cat);
	struct hp_prediction base, same, fast, cal;
	struct hp_workload w;
	struct hp_host h;

	ASSERT(df && df->own_theta);
	spec_workload(spec_k5, 32, &w);
	/* not a detected host: the fit's own figures */
	t->fp32_tflops = df->fit_fp32 / 1e12;
	ASSERT_EQ_INT(
	    hp_estimator_predict(est, cat, &w, "cpu", 1, -1, &base, &err), 0);
	/* a host measured at the profiled host's figures (its peak, the
	 * nominal bandwidth): carried over, nothing changes but where a
	 * class's fitted rate outruns that peak (efficiency over 1 against
	 * an ISA estimate): no layer runs faster than the measured peak */
	sample_host(&h);
	hp_host_apply(&h, t);
	t->threads = 1;
	t->fp32_est_tflops = 0.05;
	t->peaks_measured = true;
	t->fp32_tflops = df->fit_fp32 / 1e12;
	t->mem_bw_gbs = 20;
	ASSERT_EQ_INT(
	    hp_estimator_predict(est, cat, &w, "cpu", 1, -1, &same, &err), 0);
	ASSERT(same.step_time_s >= base.step_time_s * (1 - 1e-12));
	{
		double th[HP__NTH], emax_max = 0;
		memcpy(th, df->th, sizeof(th));
		for (int k = 0; k < HP_EST_NCLASS; k++)
			emax_max = fmax(emax_max, exp(th[HP__TH_EMAX + k]));
		if (emax_max <= 1)
			ASSERT_NEAR(same.step_time_s, base.step_time_s,
				    1e-12 * base.step_time_s);
		else
			ASSERT(same.step_time_s <= emax_max * base.step_time_s);
	}
	ASSERT(strstr(same.basis, "carried to this host (1 thread) by its "
				  "measured"));
	/* twice the FLOP/s and bandwidth: at most twice as fast (latencies
	 * and the per-step overhead do not scale), and faster */
	t->fp32_tflops *= 2;
	t->mem_bw_gbs *= 2;
	ASSERT_EQ_INT(
	    hp_estimator_predict(est, cat, &w, "cpu", 1, -1, &fast, &err), 0);
	ASSERT(fast.step_time_s < same.step_time_s);
	ASSERT(fast.step_time_s >= same.step_time_s / 2 * (1 - 1e-12));
	/* calibration: every class twice as slow is twice the step */
	t->calib.has = true;
	t->calib.threads = 1;
	t->calib.n = 7;
	snprintf(t->calib.when, sizeof(t->calib.when), "2026-11-30T18:01:00Z");
	for (int k = 0; k < HP_HOST_CALIB_NCLASS; k++)
		t->calib.log_scale[k] = log(2);
	ASSERT_EQ_INT(
	    hp_estimator_predict(est, cat, &w, "cpu", 1, -1, &cal, &err), 0);
	ASSERT_NEAR(cal.step_time_s, 2 * fast.step_time_s,
		    1e-9 * fast.step_time_s);
	ASSERT(strstr(cal.basis, "; calibrated on this host at "
				 "2026-11-30T18:01:00Z from 7 configurations"));
	/* a calibration made at other threads does not apply */
	t->calib.threads = 2;
	ASSERT_EQ_INT(
	    hp_estimator_predict(est, cat, &w, "cpu", 1, -1, &cal, &err), 0);
	ASSERT_NEAR(cal.step_time_s, fast.step_time_s, 0);
	ASSERT(!strstr(cal.basis, "calibrated"));
	/* made against this estimator: applies; against another: not, and
	 * the basis says why */
	t->calib.threads = 1;
	snprintf(t->calib.estimator, sizeof(t->calib.estimator), "%s",
		 est->created);
	ASSERT_EQ_INT(hp_estimator_cpu_fit_id(est, "cpu", t->calib.cpu_fit,
					      sizeof(t->calib.cpu_fit)),
		      0);
	ASSERT_EQ_INT((int)strlen(t->calib.cpu_fit), 16);
	ASSERT_EQ_INT(
	    hp_estimator_predict(est, cat, &w, "cpu", 1, -1, &cal, &err), 0);
	ASSERT_NEAR(cal.step_time_s, 2 * fast.step_time_s,
		    1e-9 * fast.step_time_s);
	snprintf(t->calib.estimator, sizeof(t->calib.estimator),
		 "1999-01-01T00:00:00Z");
	t->calib.cpu_fit[0] ^= 1; /* another fit */
	ASSERT_EQ_INT(
	    hp_estimator_predict(est, cat, &w, "cpu", 1, -1, &cal, &err), 0);
	ASSERT_NEAR(cal.step_time_s, fast.step_time_s, 0);
	ASSERT(strstr(cal.basis, "not calibrated: this host's calibration is "
				 "for another CPU fit (the estimator fitted at "
				 "1999-01-01T00:00:00Z"));
	hp_workload_release(&w);
	hp_estimator_free(est);
	hp_catalog_free(cat);
}

HP_TEST(host_calibrate_host_fits_measured_times)
{
	struct hp_error err = {0};
	struct hp_catalog *cat = shipped_catalog();
	struct hp_estimator *est = shipped_estimator();
	struct hp_device_type *t = cpu_type(cat);
	struct hp_workload w[4];
	const struct hp_workload *wp[4];
	struct hp_prediction p;
	struct hp_host_calib c;
	double y[4];
	struct hp_host h;

	sample_host(&h);
	hp_host_apply(&h, t);
	t->threads = 1;
	t->fp32_est_tflops = 0.078;
	for (int i = 0; i < 4; i++) {
		spec_workload(spec_k5, 8 << i, &w[i]);
		wp[i] = &w[i];
		ASSERT_EQ_INT(hp_estimator_predict(est, cat, &w[i], "cpu", 1,
						   -1, &p, &err),
			      0);
		y[i] = 1.5 * p.step_time_s; /* this host: 1.5x slower */
	}
	ASSERT_EQ_INT(
	    hp_estimator_calibrate_host(est, cat, "cpu", wp, y, 4, 0, &c, &err),
	    0);
	ASSERT(c.has);
	ASSERT_EQ_INT(c.n, 4);
	ASSERT_EQ_INT(c.threads, 1);
	ASSERT_NEAR(c.mape_before, 100.0 / 3, 1e-6);
	ASSERT(c.mape_after < 1e-3);
	snprintf(c.when, sizeof(c.when), "now");
	t->calib = c;
	ASSERT_EQ_INT(
	    hp_estimator_predict(est, cat, &w[2], "cpu", 1, -1, &p, &err), 0);
	ASSERT_NEAR(p.step_time_s, y[2], 1e-5 * y[2]);
	/* exact data: no spread, the fit's own interval stays */
	ASSERT(fabs(c.q_lo) < 1e-5 && fabs(c.q_hi) < 1e-5);
	/* each configuration measured twice, 10% either side: no factor
	 * can fit both, and the calibrated interval is their spread */
	{
		const struct hp_workload *wp2[4] = {&w[0], &w[0], &w[1], &w[1]};
		double y2[4] = {y[0] * 1.1, y[0] / 1.1, y[1] * 1.1, y[1] / 1.1};
		ASSERT_EQ_INT(hp_estimator_calibrate_host(est, cat, "cpu", wp2,
							  y2, 4, 0, &c, &err),
			      0);
	}
	ASSERT(c.q_lo < -0.05 && c.q_hi > 0.05);
	t->calib = c;
	ASSERT_EQ_INT(
	    hp_estimator_predict(est, cat, &w[2], "cpu", 1, -1, &p, &err), 0);
	ASSERT_NEAR(p.step_time_lo_s, p.step_time_s * exp(c.q_lo),
		    1e-9 * p.step_time_s);
	ASSERT_NEAR(p.step_time_hi_s, p.step_time_s * exp(c.q_hi),
		    1e-9 * p.step_time_s);
	/* refusals */
	ASSERT_EQ_INT(hp_estimator_calibrate_host(est, cat, "v100", wp, y, 4, 1,
						  &c, &err),
		      HP_EINVAL);
	ASSERT_EQ_INT(
	    hp_estimator_calibrate_host(est, cat, "cpu", wp, y, 0, 1, &c, &err),
	    HP_EINVAL);
	y[1] = 0;
	ASSERT_EQ_INT(
	    hp_estimator_calibrate_host(est, cat, "cpu", wp, y, 4, 1, &c, &err),
	    HP_EINVAL);
	for (int i = 0; i < 4; i++)
		hp_workload_release(&w[i]);
	hp_estimator_free(est);
	hp_catalog_free(cat);
}

/*
 * With enough configurations and their class times, calibrate fits this
 * host's own physical model: on times made by a known parameter vector
 * on this host (conv half as efficient as the shipped fit, a max
 * pooling's traffic twice as slow, a reduction term) it finds
 * parameters that predict another configuration as that vector does,
 * and predict uses them, saying so; with fewer than HP_HOST_OWN_FIT_MIN,
 * the factors alone.
 */
HP_TEST(host_calibrate_own_fit)
{
	enum { N = 16 };
	static const char spec_max[] =
	    "{\"name\":\"m\",\"input\":[3,32,32],\"classes\":10,\"layers\":["
	    "{\"type\":\"conv\",\"filters\":32,\"kernel\":3,\"stride\":1,"
	    "\"pad\":1},{\"type\":\"relu\"},"
	    "{\"type\":\"pool\",\"op\":\"max\",\"kernel\":2,\"stride\":2},"
	    "{\"type\":\"conv\",\"filters\":64,\"kernel\":1,\"stride\":1,"
	    "\"pad\":0},{\"type\":\"relu\"},"
	    "{\"type\":\"fc\",\"units\":10}]}";
	struct hp_error err = {0};
	struct hp_catalog *cat = shipped_catalog();
	struct hp_estimator *est = shipped_estimator();
	const struct hp__dev_fit *df = hp__est_dev(est, "cpu");
	struct hp_device_type *t = cpu_type(cat);
	struct hp_workload w[N + 1];
	const struct hp_workload *wp[N];
	struct hp__dev_spec d;
	struct hp_prediction p;
	struct hp_host_calib c;
	double y[N], cls[3 * N], truth[HP__NTH], want;
	struct hp_host h;

	sample_host(&h);
	hp_host_apply(&h, t);
	t->threads = 1;
	t->fp32_est_tflops = 0.078;
	snprintf(t->key, sizeof(t->key), "amd-epyc-avx2-t1");
	memcpy(truth, df->th, sizeof(truth));
	truth[HP__TH_EMAX + HP_EST_CONV] += log(0.5);
	truth[HP__TH_IDX] = log(2);
	truth[HP__TH_KHALF] = log(10);
	ASSERT(hp__dev_spec(t, &d));
	d.chan_block = 8;
	ASSERT_NEAR(d.fp32, 0.078e12, 1);
	for (int i = 0; i <= N; i++) {
		spec_workload(i % 2 ? spec_k5 : spec_max, 4 << (i % 5), &w[i]);
		if (i == N)
			break;
		wp[i] = &w[i];
		y[i] = hp__phys_time_cls(truth, &d, &w[i], HP__SRC_PROFILE, 1,
					 NULL, &cls[3 * i]);
	}
	ASSERT_EQ_INT(hp_estimator_calibrate_host_fit(est, cat, "cpu", wp, y,
						      cls, N, 1, &c, &err),
		      0);
	ASSERT(c.has && c.nparams > 0);
	ASSERT_NEAR(c.fit_gflops, 78, 1e-9);
	ASSERT_EQ_INT(c.chan_block, 8);
	ASSERT(c.mape_after < 2);
	snprintf(c.when, sizeof(c.when), "now");
	t->calib = c;
	/* a batch none of the 16 had */
	hp_workload_release(&w[N]);
	spec_workload(spec_max, 48, &w[N]);
	want = hp__phys_time(truth, &d, &w[N], HP__SRC_PROFILE, 1, NULL);
	ASSERT_EQ_INT(
	    hp_estimator_predict(est, cat, &w[N], "cpu", 1, -1, &p, &err), 0);
	ASSERT_NEAR(p.step_time_s / want, 1, 0.03);
	ASSERT(strstr(p.basis, "fitted on this host (1 thread, against its 78 "
			       "GFLOP/s ISA peak); calibrated on this host at "
			       "now from 16 configurations (its own fit)"));
	/* too few configurations, or no class times: the factors alone */
	ASSERT_EQ_INT(hp_estimator_calibrate_host_fit(
			  est, cat, "cpu", wp, y, cls, HP_HOST_OWN_FIT_MIN - 1,
			  1, &c, &err),
		      0);
	ASSERT(c.has && c.nparams == 0);
	ASSERT_EQ_INT(
	    hp_estimator_calibrate_host(est, cat, "cpu", wp, y, N, 1, &c, &err),
	    0);
	ASSERT(c.has && c.nparams == 0);
	for (int i = 0; i <= N; i++)
		hp_workload_release(&w[i]);
	hp_estimator_free(est);
	hp_catalog_free(cat);
}

HP_TEST(host_estimator_keeps_profiled_host_figures)
{
	struct hp_error err = {0};
	struct hp_estimator *est = shipped_estimator(), *back;
	struct hp__dev_fit *df = (struct hp__dev_fit *)hp__est_dev(est, "cpu");
	const struct hp__dev_fit *db;
	char *text;

	/* old files have none */
	ASSERT(df && df->ref_threads == 0 && df->ref_bw == 0);
	df->ref_threads = 2;
	df->ref_fp32_meas = 200e9;
	df->ref_bw = 25e9;
	df->ref_cache = 34e6;
	text = hp_estimator_dumps(est);
	ASSERT(text);
	back = hp_estimator_loads(text, strlen(text), &err);
	free(text);
	if (!back)
		HP_FAIL("reload: %s", err.msg);
	db = hp__est_dev(back, "cpu");
	ASSERT_EQ_INT(db->ref_threads, 2);
	ASSERT_NEAR(db->ref_fp32_meas, 200e9, 1);
	ASSERT_NEAR(db->ref_bw, 25e9, 1);
	ASSERT_NEAR(db->ref_cache, 34e6, 1);
	hp_estimator_free(back);
	hp_estimator_free(est);
}

HP_TEST(host_rapl_from_fake_sysfs)
{
	const char *sys = hp_test_tmpdir("hp_rapl_");
	char d[256];
	double j = -1;

	ASSERT_EQ_INT(hp_host_rapl_energy_j(sys, &j), HP_ENOENT);
	ASSERT_NEAR(j, -1, 0);
	snprintf(d, sizeof(d), "%s/class", sys);
	mkdir(d, 0755);
	snprintf(d, sizeof(d), "%s/class/powercap", sys);
	mkdir(d, 0755);
	/* two packages and a subdomain (core) that is not added again */
	snprintf(d, sizeof(d), "%s/class/powercap/intel-rapl:0", sys);
	mkdir(d, 0755);
	put(d, "energy_uj", "1500000\n");
	snprintf(d, sizeof(d), "%s/class/powercap/intel-rapl:1", sys);
	mkdir(d, 0755);
	put(d, "energy_uj", "2500000\n");
	snprintf(d, sizeof(d), "%s/class/powercap/intel-rapl:0:0", sys);
	mkdir(d, 0755);
	put(d, "energy_uj", "900000000\n");
	ASSERT_EQ_INT(hp_host_rapl_energy_j(sys, &j), 0);
	ASSERT_NEAR(j, 4.0, 1e-12);
}

HP_TEST(host_measured_power_makes_energy_known)
{
	const char *dir = hp_test_tmpdir("hp_state_");
	char path[4200];
	struct hp_error err = {0};
	struct hp_catalog *cat = shipped_catalog();
	struct hp_estimator *est = shipped_estimator();
	struct hp_device_type *t = cpu_type(cat);
	struct hp_prediction p;
	struct hp_workload w;
	struct hp_host h;
	struct hp_host_file f;

	sample_host(&h);
	hp_host_apply(&h, t);
	spec_workload(spec_k5, 32, &w);
	/* no power figure: energy not known (the recommender leaves the
	 * type out) */
	ASSERT_EQ_INT(hp_host_file_apply_catalog(dir, &h, cat, &err), 0);
	ASSERT_EQ_INT(
	    hp_estimator_predict(est, cat, &w, "cpu", 1, -1, &p, &err), 0);
	ASSERT(isnan(p.energy_per_step_j));
	ASSERT(strstr(p.energy_basis, "not known"));
	/* RAPL measured with the peaks: energy from it */
	hp_host_file_init(&f, &h);
	f.peaks.threads = 1;
	f.peaks.fp32_flops = 70e9;
	f.peaks.triad_bw = 10e9;
	f.peaks.power_load_w = 60;
	f.peaks.power_idle_w = 20;
	snprintf(f.peaks.when, sizeof(f.peaks.when), "2026-11-30T18:00:00Z");
	ASSERT_EQ_INT(hp_host_file_path(dir, &h, path, sizeof(path), &err), 0);
	ASSERT_EQ_INT(hp_host_file_save(path, &f, &err), 0);
	ASSERT_EQ_INT(hp_host_file_apply_catalog(dir, &h, cat, &err), 1);
	ASSERT_NEAR(t->tdp_w, 60, 0);
	ASSERT_NEAR(t->idle_w, 20, 0);
	ASSERT_EQ_INT(
	    hp_estimator_predict(est, cat, &w, "cpu", 1, -1, &p, &err), 0);
	ASSERT(p.power_w >= 20 && p.power_w <= 60);
	ASSERT_NEAR(p.energy_per_step_j, p.power_w * p.step_time_s, 1e-12);
	ASSERT(strstr(p.energy_basis, "RAPL at 1 thread"));
	hp_workload_release(&w);
	hp_estimator_free(est);
	hp_catalog_free(cat);
}

/* A CPU-only node is choosable once its host's power is known. */
HP_TEST(host_cpu_only_node_choosable_with_power)
{
	static const char pool_json[] =
	    "{\"nodes\":[{\"name\":\"cpu-01\",\"devices\":[{\"type\":\"cpu\","
	    "\"count\":1,\"free\":1}],\"cpu_cores\":2,\"memory_gb\":16,"
	    "\"intra_bw_gbps\":10,\"net_bw_gbps\":10,\"net_latency_us\":50,"
	    "\"base_power_w\":0}]}";
	const char *dir = hp_test_tmpdir("hp_state_");
	char path[4200];
	struct hp_error err = {0};
	struct hp_catalog *cat = shipped_catalog();
	struct hp_estimator *est = shipped_estimator();
	struct hp_device_type *t = cpu_type(cat);
	struct hp_rec_job job = {0};
	struct hp_rec_result r;
	struct hp_workload w1;
	struct hp_pool *pool;
	struct hp_host h;
	struct hp_host_file f;

	sample_host(&h);
	hp_host_apply(&h, t);
	ASSERT_EQ_INT(hp_host_file_apply_catalog(dir, &h, cat, &err), 0);
	spec_workload(spec_k5, 1, &w1);
	pool = hp_pool_parse(pool_json, strlen(pool_json), "p.json", cat, &err);
	if (!pool)
		HP_FAIL("pool: %s", err.msg);
	job.samples = 6400;
	job.epochs = 1;
	job.batch = 32;
	job.ref_batch = 32;
	job.deadline_s = 3600 * 24;
	ASSERT_EQ_INT(hp_recommend(est, cat, &w1, pool, &job, &r, &err), 0);
	ASSERT(!r.found);
	ASSERT(r.nnotes >= 1 && strstr(r.notes[0], "power not known"));
	hp_rec_result_release(&r);
	hp_pool_free(pool);
	/* the host file's measured power: the same node is chosen */
	hp_host_file_init(&f, &h);
	f.peaks.threads = 1;
	f.peaks.fp32_flops = 70e9;
	f.peaks.triad_bw = 10e9;
	f.peaks.power_load_w = 60;
	f.peaks.power_idle_w = 20;
	snprintf(f.peaks.when, sizeof(f.peaks.when), "2026-11-30T18:00:00Z");
	ASSERT_EQ_INT(hp_host_file_path(dir, &h, path, sizeof(path), &err), 0);
	ASSERT_EQ_INT(hp_host_file_save(path, &f, &err), 0);
	ASSERT_EQ_INT(hp_host_file_apply_catalog(dir, &h, cat, &err), 1);
	pool = hp_pool_parse(pool_json, strlen(pool_json), "p.json", cat, &err);
	ASSERT(pool);
	ASSERT_EQ_INT(hp_recommend(est, cat, &w1, pool, &job, &r, &err), 0);
	if (!r.found)
		HP_FAIL("not found: %s", r.nnotes ? r.notes[0] : "-");
	ASSERT(r.choice.energy_j > 0);
	hp_rec_result_release(&r);
	hp_pool_free(pool);
	hp_workload_release(&w1);
	hp_estimator_free(est);
	hp_catalog_free(cat);
}

/* validate predicts the profiled host's own rows: this host's measured
 * figures and calibration do not move them. */
HP_TEST(host_profile_rows_not_carried)
{
	struct hp_error err = {0};
	struct hp_catalog *cat = shipped_catalog();
	struct hp_estimator *est = shipped_estimator();
	struct hp_device_type *t = cpu_type(cat);
	struct hp_prediction a, b, c;
	struct hp_workload w;
	struct hp_host h;

	sample_host(&h);
	hp_host_apply(&h, t);
	t->threads = 1;
	t->fp32_est_tflops = 0.078;
	spec_workload(spec_k5, 32, &w);
	ASSERT_EQ_INT(hp__predict(est, cat, &w, "cpu", 1, -1, HP__SRC_PROFILE,
				  HP_PREC_FP32, &a, &err),
		      0);
	t->peaks_measured = true;
	t->fp32_tflops = 0.02;
	t->mem_bw_gbs = 3;
	t->calib.has = true;
	t->calib.threads = 1;
	t->calib.log_scale[0] = 1;
	ASSERT_EQ_INT(hp__predict(est, cat, &w, "cpu", 1, -1, HP__SRC_PROFILE,
				  HP_PREC_FP32, &b, &err),
		      0);
	ASSERT_NEAR(b.step_time_s, a.step_time_s, 0);
	/* a user's prediction is carried and calibrated */
	ASSERT_EQ_INT(
	    hp_estimator_predict(est, cat, &w, "cpu", 1, -1, &c, &err), 0);
	ASSERT(c.step_time_s > 1.5 * a.step_time_s);
	hp_workload_release(&w);
	hp_estimator_free(est);
	hp_catalog_free(cat);
}

/* fit keeps the profiled host's figures only when the rows can be from
 * this host (its ISA's channel block) and its peaks are measured. */
HP_TEST(host_fit_records_profiled_host)
{
	struct hp_device_type t;
	struct hp__dev_fit df;

	memset(&t, 0, sizeof(t));
	memset(&df, 0, sizeof(df));
	t.kind = HP_DEVICE_CPU;
	t.detected = true;
	t.threads = 2;
	t.fp32_tflops = 0.1;
	t.mem_bw_gbs = 15;
	t.cache_bytes = 33e6;
	snprintf(t.key, sizeof(t.key), "amd-epyc-avx2-t2");
	hp__cpu_ref_record(&df, &t, 8);
	ASSERT_EQ_INT(df.ref_threads, 0); /* peaks not measured */
	t.peaks_measured = true;
	hp__cpu_ref_record(&df, &t, 16); /* AVX-512 rows: another host */
	ASSERT_EQ_INT(df.ref_threads, 0);
	hp__cpu_ref_record(&df, &t, 8);
	ASSERT_EQ_INT(df.ref_threads, 2);
	ASSERT_NEAR(df.ref_fp32_meas, 1e11, 1);
	ASSERT_NEAR(df.ref_bw, 15e9, 1);
	ASSERT_NEAR(df.ref_cache, 33e6, 0);
}
