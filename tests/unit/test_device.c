/*
 * test_device.c - the device catalog (the shipped file against datasheet
 * figures, name resolution, refusal of bad input with PATH:LINE:COLUMN)
 * and host detection from fixture /proc text.
 */
#include <math.h>
#include <string.h>

#include "hetpool/device.h"
#include "test.h"

static struct hp_catalog *shipped(void)
{
	struct hp_error err = {0};
	struct hp_catalog *cat =
	    hp_catalog_load(hp_test_path("data/devices.csv"), &err);

	if (!cat)
		HP_FAIL("devices.csv: %s", err.msg);
	return cat;
}

static const struct hp_device_type *need(const struct hp_catalog *cat,
					 const char *name)
{
	const struct hp_device_type *t = hp_catalog_find(cat, name);

	if (!t)
		HP_FAIL("'%s' not in the catalog", name);
	return t;
}

HP_TEST(device_catalog_has_required_types)
{
	static const char *const required[] = {
	    "cpu",	 "k80",	 "p100",    "v100",	"t4",	   "a10",
	    "a40",	 "l4",	 "l40s",    "a100-40",	"a100-80", "h100-sxm",
	    "h100-pcie", "h200", "rtx6000", "rtxa6000",
	};
	struct hp_catalog *cat = shipped();

	ASSERT(cat->n >= 16);
	for (size_t i = 0; i < sizeof(required) / sizeof(*required); i++)
		ASSERT_STR_EQ(need(cat, required[i])->name, required[i]);
	hp_catalog_free(cat);
}

/* Figures from NVIDIA's datasheets, typed in here independently. */
HP_TEST(device_catalog_matches_datasheets)
{
	static const struct {
		const char *name;
		double fp32, fp16, mem_gb, bw, tdp;
	} ref[] = {
	    {"v100", 15.7, 125, 16, 900, 300},
	    {"v100-pcie", 14, 112, 16, 900, 250},
	    {"p100", 9.3, 18.7, 16, 732, 250},
	    {"t4", 8.1, 65, 16, 320, 70},
	    {"a10", 31.2, 125, 24, 600, 150},
	    {"a40", 37.4, 149.7, 48, 696, 300},
	    {"l4", 30.3, 121, 24, 300, 72},
	    {"l40s", 91.6, 362.05, 48, 864, 350},
	    {"a100-40", 19.5, 312, 40, 1555, 400},
	    {"a100-80", 19.5, 312, 80, 2039, 400},
	    {"h100-sxm", 66.9, 989.4, 80, 3350, 700},
	    {"h200", 66.9, 989.4, 141, 4800, 700},
	    {"rtx6000", 16.3, 130.5, 24, 672, 260},
	    /* K80: per device, half the board's 8.74 / 24 / 480 / 300. */
	    {"k80", 4.37, NAN, 12, 240, 150},
	};
	struct hp_catalog *cat = shipped();

	for (size_t i = 0; i < sizeof(ref) / sizeof(*ref); i++) {
		const struct hp_device_type *t = need(cat, ref[i].name);
		ASSERT_NEAR(t->fp32_tflops, ref[i].fp32, 1e-9);
		if (isnan(ref[i].fp16))
			ASSERT(isnan(t->fp16_tflops));
		else
			ASSERT_NEAR(t->fp16_tflops, ref[i].fp16, 1e-9);
		ASSERT_NEAR(t->mem_gb, ref[i].mem_gb, 1e-9);
		ASSERT_NEAR(t->mem_bw_gbs, ref[i].bw, 1e-9);
		ASSERT_NEAR(t->tdp_w, ref[i].tdp, 1e-9);
	}
	ASSERT_EQ_INT(need(cat, "k80")->devices_per_board, 2);
	ASSERT(isnan(need(cat, "v100")->tf32_tflops)); /* Volta: no TF32 */
	hp_catalog_free(cat);
}

/* Every GPU has its figures and a source for each; idle power is either
 * below board power and labelled an estimate, or cited. */
HP_TEST(device_catalog_gpus_complete_and_sourced)
{
	struct hp_catalog *cat = shipped();

	for (int i = 0; i < cat->n; i++) {
		const struct hp_device_type *t = &cat->types[i];
		if (t->kind != HP_DEVICE_GPU) {
			ASSERT(isnan(t->mem_bw_gbs)); /* never guessed */
			continue;
		}
		if (isnan(t->fp32_tflops) || isnan(t->mem_gb) ||
		    isnan(t->mem_bw_gbs) || isnan(t->tdp_w) || isnan(t->idle_w))
			HP_FAIL("%s: a figure is missing", t->name);
		if (!*t->src_compute || !*t->src_memory || !*t->src_power ||
		    !*t->src_idle || !*t->product || !*t->arch)
			HP_FAIL("%s: a source or name is missing", t->name);
		ASSERT(t->idle_w > 0 && t->idle_w < t->tdp_w);
		ASSERT(!strncmp(t->src_idle, "estimate", 8));
		ASSERT(isnan(t->fp16_tflops) ||
		       t->fp16_tflops >= t->fp32_tflops);
	}
	hp_catalog_free(cat);
}

HP_TEST(device_find_ids_and_aliases)
{
	static const struct {
		const char *name, *id;
	} cases[] = {
	    {"v100", "v100"},
	    {"V100", "v100"},
	    {"Tesla V100-SXM2-16GB", "v100"},
	    {"tesla_v100_sxm2_16gb", "v100"},
	    {"Tesla V100-PCIE-16GB", "v100-pcie"},
	    {"a100", "a100-80"},
	    {"A100", "a100-80"},
	    {"NVIDIA A100-SXM4-40GB", "a100-40"},
	    {"A100 80GB PCIe", "a100-pcie-80"},
	    {"h100", "h100-sxm"},
	    {"NVIDIA H100 80GB HBM3", "h100-sxm"},
	    {"H100 PCIe", "h100-pcie"},
	    {"Tesla T4", "t4"},
	    {"Quadro RTX 6000", "rtx6000"},
	    {"RTX A6000", "rtxa6000"},
	    {"RTX 6000 Ada", "rtx6000-ada"},
	    {"CPU", "cpu"},
	    {"host", "cpu"},
	    {"  k80 ", "k80"},
	};
	static const char *const unknown[] = {"", "---", "v101", "a100-81",
					      "gpu"};
	struct hp_catalog *cat = shipped();

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		const struct hp_device_type *t =
		    hp_catalog_find(cat, cases[i].name);
		if (!t || strcmp(t->name, cases[i].id))
			HP_FAIL("'%s' -> %s, expected %s", cases[i].name,
				t ? t->name : "(none)", cases[i].id);
	}
	for (size_t i = 0; i < sizeof(unknown) / sizeof(*unknown); i++)
		if (hp_catalog_find(cat, unknown[i]))
			HP_FAIL("'%s' should resolve to nothing", unknown[i]);
	ASSERT(!hp_catalog_find(NULL, "v100"));
	ASSERT(!hp_catalog_find(cat, NULL));
	hp_catalog_free(cat);
}

static struct hp_catalog *parse(const char *text, struct hp_error *err)
{
	return hp_catalog_parse(text, strlen(text), "t.csv", err);
}

HP_TEST(device_parse_quotes_blank_lines_missing_values)
{
	const char *text = "\r\nname,kind,product,fp32_tflops,mem_gb,"
			   "mem_bw_gbs,tf32_tflops,aliases,src_compute\r\n"
			   "\r\n"
			   "x1,gpu,\"Big, \"\"fast\"\" GPU\",1.5,8,100,,"
			   "\"X One| x_1 \",\"line one\nline two\"\r\n"
			   "x2,cpu,,,2,,,,\n";
	struct hp_error err = {0};
	struct hp_catalog *cat = parse(text, &err);

	if (!cat)
		HP_FAIL("%s", err.msg);
	ASSERT_EQ_INT(cat->n, 2);
	ASSERT_STR_EQ(cat->types[0].product, "Big, \"fast\" GPU");
	ASSERT_NEAR(cat->types[0].fp32_tflops, 1.5, 0);
	ASSERT(isnan(cat->types[0].tf32_tflops)); /* empty: no TF32 */
	ASSERT(isnan(cat->types[0].tdp_w));	  /* column absent */
	ASSERT(isnan(cat->types[0].idle_w));
	/* A source is prose: a quoted line break is kept (and escaped by
	 * whoever prints it). */
	ASSERT_STR_EQ(cat->types[0].src_compute, "line one\nline two");
	ASSERT_STR_EQ(cat->types[0].src_power, "");
	ASSERT_EQ_INT(cat->types[0].naliases, 2);
	ASSERT_STR_EQ(cat->types[0].aliases[1], "x_1");
	ASSERT_EQ_INT(cat->types[1].kind, HP_DEVICE_CPU);
	ASSERT_NEAR(cat->types[1].mem_gb, 2, 0);
	ASSERT(isnan(cat->types[1].fp32_tflops)); /* a host's: detected */
	ASSERT_STR_EQ(hp_catalog_find(cat, "X-ONE")->name, "x1");
	hp_catalog_free(cat);
}

/* A header with every figure, and one GPU row to change. */
#define FIG_HEAD                                                               \
	"name,kind,fp32_tflops,tf32_tflops,fp16_tflops,mem_gb,mem_bw_gbs,"     \
	"tdp_w,idle_w,devices_per_board\n"

HP_TEST(device_parse_refuses_bad_input)
{
	static const struct {
		const char *text, *msg;
	} bad[] = {
	    {"", "t.csv:1:1: empty file"},
	    {"name,kind\n", "t.csv:2:1: no device types after the header"},
	    {"name,kind,fp32\nx,gpu,1\n", "t.csv:1:11: unknown column"},
	    {"name,fp32_tflops\nx,1\n", "needs the columns 'name' and"},
	    {"name,kind,name\nx,gpu,y\n", "t.csv:1:11: column 'name'"},
	    {"name,kind,fp32_tflops,mem_gb,aliases\nx,cpu,abc,,\n",
	     "t.csv:2:7: device 'x': fp32_tflops: 'abc' is not a number"},
	    {"name,kind,fp32_tflops,mem_gb,aliases\nx,cpu,inf,,\n",
	     "t.csv:2:7: device 'x': fp32_tflops: 'inf' is not a finite "
	     "number"},
	    {"name,kind,fp32_tflops,mem_gb,aliases\nx,cpu,nan,,\n",
	     "t.csv:2:7: device 'x': fp32_tflops: 'nan' is not a finite"},
	    {"name,kind,fp32_tflops,mem_gb,aliases\nx,cpu, 1,,\n",
	     "t.csv:2:7: device 'x': fp32_tflops: ' 1' is not a number"},
	    {"name,kind,fp32_tflops,mem_gb,aliases\nx,cpu,1\n",
	     "t.csv:2:7: 3 fields, the header has 5"},
	    {"name,kind,fp32_tflops,mem_gb,aliases\nx,cpu,1,2,a,b\n",
	     "t.csv:2:13: 6 fields, the header has 5"},
	    {"name,kind,fp32_tflops,mem_gb,aliases\nx,tpu,1,2,\n",
	     "t.csv:2:3: device 'x': kind 'tpu': give gpu or cpu"},
	    {"name,kind,fp32_tflops,mem_gb,aliases\nX,cpu,1,2,\n",
	     "t.csv:2:1: name 'X'"},
	    {"name,kind,fp32_tflops,mem_gb,aliases\n,cpu,1,2,\n",
	     "t.csv:2:1: name ''"},
	    {"name,kind,fp32_tflops,mem_gb,aliases\nx,cpu,,,\ny,cpu,,,x\n",
	     "t.csv:3:9: device 'y': alias 'x' already names 'x'"},
	    {"name,kind,fp32_tflops,mem_gb,aliases\nx-1,cpu,,,\nx1,cpu,,,\n",
	     "t.csv:3:1: device 'x1': name is already used by 'x-1'"},
	    {"name,kind,fp32_tflops,mem_gb,aliases\nx,cpu,,,a|A\n",
	     "t.csv:2:9: device 'x': alias 'A' is given twice"},
	    {"name,kind,fp32_tflops,mem_gb,aliases\nx,cpu,,,a||b\n",
	     "t.csv:2:9: device 'x': aliases: '' has no letters"},
	    {"name,kind,fp32_tflops,mem_gb,aliases\nx,cpu,,,a|\n",
	     "t.csv:2:9: device 'x': aliases: empty alias"},
	    {"name,kind,fp32_tflops,mem_gb,aliases\nx,cpu,,,\"a\n\n",
	     "t.csv:2:9: unterminated quoted field"},
	    {"name,kind,fp32_tflops,mem_gb,aliases\nx,cpu,\"1\"2,,\n",
	     "t.csv:2:10: text after a closing quote"},
	    {"name,kind,devices_per_board\nx,cpu,0\n",
	     "t.csv:2:7: device 'x': devices_per_board '0'"},
	    {"name,kind,vendor\nx,cpu,a-very-long-vendor-name\n",
	     "t.csv:2:7: device 'x': vendor: longer than 15"},
	    /* Names are printed: a control character is refused. */
	    {"name,kind,product\nx,cpu,\"a\x1b[31mred\"\n",
	     "t.csv:2:7: device 'x': product holds a control character"},
	    {"name,kind,product\nx,cpu,\"two\nlines\"\n",
	     "t.csv:2:7: device 'x': product holds a control character"},
	    {"name,kind,arch\nx,cpu,a\tb\n",
	     "t.csv:2:7: device 'x': arch holds a control character"},
	    {"name,kind,aliases\nx,cpu,ok|\"b\x1b\"\n",
	     "t.csv:2:7: device 'x': aliases: alias 2 holds a control"},
	    {"name,kind\n\"x\x1b\",cpu\n", "t.csv:2:1: name 'x"},
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		struct hp_error err = {0};
		struct hp_catalog *cat = parse(bad[i].text, &err);
		if (cat)
			HP_FAIL("case %zu parsed: %s", i, bad[i].text);
		if (!strstr(err.msg, bad[i].msg))
			HP_FAIL("case %zu: '%s' lacks '%s'", i, err.msg,
				bad[i].msg);
		ASSERT(err.code == HP_EPARSE || err.code == HP_ETOOBIG);
	}
}

/* Each figure within its physical range: the file, the line, the column,
 * the device and the key in the message, HP_EPARSE. */
HP_TEST(device_parse_refuses_figures_out_of_range)
{
	static const struct {
		const char *text, *msg;
	} bad[] = {
	    /* The bug: memory 0 or empty made any plan "fit". */
	    {FIG_HEAD "v,gpu,15.7,,125,0,900,300,40,1\n",
	     "t.csv:2:17: device 'v': mem_gb = 0 is out of range [0.001, "
	     "16384]"},
	    {FIG_HEAD "v,gpu,15.7,,125,,900,300,40,1\n",
	     "t.csv:2:17: device 'v': mem_gb is empty; a gpu needs it"},
	    {FIG_HEAD "v,gpu,15.7,,125,-16,900,300,40,1\n",
	     "t.csv:2:17: device 'v': mem_gb = -16 is out of range"},
	    {FIG_HEAD "v,gpu,15.7,,125,16384000,900,300,40,1\n",
	     "device 'v': mem_gb = 1.6384e+07 is out of range [0.001, 16384]"},
	    {FIG_HEAD "v,gpu,,,125,16,900,300,40,1\n",
	     "t.csv:2:7: device 'v': fp32_tflops is empty; a gpu needs it"},
	    {FIG_HEAD "v,gpu,0,,125,16,900,300,40,1\n",
	     "t.csv:2:7: device 'v': fp32_tflops = 0 is out of range"},
	    {FIG_HEAD "v,gpu,15700,,125,16,900,300,40,1\n",
	     "device 'v': fp32_tflops = 15700 is out of range [0.001, 1000]"},
	    {FIG_HEAD "v,gpu,15.7,0,125,16,900,300,40,1\n",
	     "t.csv:2:12: device 'v': tf32_tflops = 0 is out of range"},
	    {FIG_HEAD "v,gpu,15.7,,125000,16,900,300,40,1\n",
	     "t.csv:2:13: device 'v': fp16_tflops = 125000 is out of range "
	     "[0.001, 100000]"},
	    {FIG_HEAD "v,gpu,15.7,,125,16,,300,40,1\n",
	     "t.csv:2:20: device 'v': mem_bw_gbs is empty; a gpu needs it"},
	    {FIG_HEAD "v,gpu,15.7,,125,16,0,300,40,1\n",
	     "t.csv:2:20: device 'v': mem_bw_gbs = 0 is out of range"},
	    {FIG_HEAD "v,gpu,15.7,,125,16,900,0,40,1\n",
	     "t.csv:2:24: device 'v': tdp_w = 0 is out of range [1, 10000]"},
	    {FIG_HEAD "v,gpu,15.7,,125,16,900,3e6,40,1\n",
	     "t.csv:2:24: device 'v': tdp_w = 3e+06 is out of range"},
	    {FIG_HEAD "v,gpu,15.7,,125,16,900,300,-1,1\n",
	     "t.csv:2:28: device 'v': idle_w = -1 is out of range [0, 10000]"},
	    {FIG_HEAD "v,gpu,15.7,,125,16,900,300,400,1\n",
	     "t.csv:2:28: device 'v': idle_w = 400 is more than tdp_w = 300"},
	    /* The header lacks a column a GPU needs. */
	    {"name,kind,fp32_tflops,mem_gb\nv,gpu,1,2\n",
	     "t.csv:2:1: device 'v': mem_bw_gbs: a gpu needs it and the "
	     "header has no such column"},
	    /* A CPU row's given figures are checked too. */
	    {FIG_HEAD "c,cpu,,,,0,,,,1\n",
	     "t.csv:2:10: device 'c': mem_gb = 0 is out of range"},
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		struct hp_error err = {0};
		struct hp_catalog *cat = parse(bad[i].text, &err);
		if (cat)
			HP_FAIL("case %zu parsed: %s", i, bad[i].text);
		if (!strstr(err.msg, bad[i].msg))
			HP_FAIL("case %zu: '%s' lacks '%s'", i, err.msg,
				bad[i].msg);
		ASSERT_EQ_INT(err.code, HP_EPARSE);
	}
}

/* The edges of each range are accepted; optional figures may be empty
 * (NaN: not known), and a per-board figure divides per device. */
HP_TEST(device_parse_accepts_range_edges_and_unknowns)
{
	const char *text = FIG_HEAD "lo,gpu,0.001,,,0.001,0.001,1,0,1\n"
				    "hi,gpu,1000,100000,100000,16384,100000,"
				    "10000,10000,64\n"
				    "nopower,gpu,8,,,16,300,,,1\n"
				    "host,cpu,,,,,,,,\n";
	struct hp_error err = {0};
	struct hp_catalog *cat = parse(text, &err);
	const struct hp_device_type *t;

	if (!cat)
		HP_FAIL("%s", err.msg);
	ASSERT_EQ_INT(cat->n, 4);
	t = hp_catalog_find(cat, "hi");
	ASSERT_NEAR(t->mem_gb, 16384.0 / 64, 1e-9);
	ASSERT_NEAR(t->idle_w, t->tdp_w, 0); /* idle = board power: allowed */
	ASSERT(t->mem_gb > 0);
	t = hp_catalog_find(cat, "nopower");
	ASSERT(isnan(t->tdp_w) && isnan(t->idle_w)); /* not known, not 0 */
	t = hp_catalog_find(cat, "host");
	ASSERT(isnan(t->fp32_tflops) && isnan(t->mem_gb));
	hp_catalog_free(cat);
}

HP_TEST(device_parse_refuses_nul_and_missing_file)
{
	static const char text[] = "name,kind\nx,g\0pu\n";
	struct hp_error err = {0};

	ASSERT(!hp_catalog_parse(text, sizeof(text) - 1, "n.csv", &err));
	ASSERT_STR_EQ(err.msg, "n.csv:2:4: NUL byte in text");
	ASSERT(!hp_catalog_load("/nonexistent/devices.csv", &err));
	ASSERT_EQ_INT(err.code, HP_ENOENT);
	ASSERT(strstr(err.msg, "/nonexistent/devices.csv"));
	hp_catalog_free(NULL);
}

static const char cpuinfo_xeon[] =
    "processor\t: 0\nvendor_id\t: GenuineIntel\n"
    "model name\t: Intel(R) Xeon(R) CPU E5-2680 v3 @ 2.50GHz\n"
    "cpu MHz\t\t: 1200.000\nphysical id\t: 0\ncore id\t\t: 0\n"
    "flags\t\t: fpu sse sse2 avx fma avx2\n\n"
    "processor\t: 1\nphysical id\t: 0\ncore id\t\t: 1\n\n"
    "processor\t: 2\nphysical id\t: 1\ncore id\t\t: 0\n\n"
    "processor\t: 3\nphysical id\t: 1\ncore id\t\t: 1\n\n"
    "processor\t: 4\nphysical id\t: 0\ncore id\t\t: 0\n\n"
    "processor\t: 5\nphysical id\t: 0\ncore id\t\t: 1\n\n"
    "processor\t: 6\nphysical id\t: 1\ncore id\t\t: 0\n\n"
    "processor\t: 7\nphysical id\t: 1\ncore id\t\t: 1\n";

HP_TEST(device_host_parse_xeon)
{
	struct hp_host h;

	hp_host_parse(cpuinfo_xeon, "MemTotal:       16384000 kB\n", 8, 0, &h);
	ASSERT_STR_EQ(h.model, "Intel(R) Xeon(R) CPU E5-2680 v3 @ 2.50GHz");
	ASSERT_STR_EQ(h.isa, "avx2");
	ASSERT_EQ_INT(h.logical_cpus, 8);
	ASSERT_EQ_INT(h.physical_cores, 4);
	ASSERT_NEAR(h.ghz, 2.5, 1e-12);
	ASSERT_EQ_INT(h.flops_per_cycle, 32);
	ASSERT_NEAR(h.fp32_gflops, 4 * 2.5 * 32, 1e-12);
	ASSERT_NEAR(h.mem_gb, 16384000.0 * 1024 / 1e9, 1e-12);
	/* A sysfs maximum clock wins over the model name. */
	hp_host_parse(cpuinfo_xeon, NULL, 8, 3300, &h);
	ASSERT_NEAR(h.fp32_gflops, 4 * 3.3 * 32, 1e-9);
	ASSERT(isnan(h.mem_gb));
}

HP_TEST(device_host_parse_other_cpus)
{
	struct hp_host h;

	/* Zen 4: AVX-512 on 256-bit units. */
	hp_host_parse("processor : 0\nvendor_id : AuthenticAMD\n"
		      "model name : AMD EPYC 9654\ncpu MHz : 3700.0\n"
		      "flags : sse2 avx fma avx2 avx512f\n",
		      NULL, 1, 0, &h);
	ASSERT_EQ_INT(h.flops_per_cycle, 32);
	ASSERT_NEAR(h.fp32_gflops, 3.7 * 32, 1e-9);
	/* No x86 flags (aarch64): no estimate rather than a guess. */
	hp_host_parse("processor : 0\nFeatures : fp asimd\n", NULL, 4, 2000,
		      &h);
	ASSERT_STR_EQ(h.isa, "?");
	ASSERT(isnan(h.fp32_gflops));
	ASSERT_EQ_INT(h.logical_cpus, 4);
	hp_host_parse(NULL, NULL, 0, 0, &h);
	ASSERT(isnan(h.fp32_gflops) && isnan(h.mem_gb));
}

HP_TEST(device_host_detect_fills_cpu_type)
{
	struct hp_error err = {0};
	struct hp_catalog *cat = shipped();
	struct hp_device_type *cpu = NULL;
	struct hp_host h;

	ASSERT_EQ_INT(hp_host_detect(&h, &err), 0);
	ASSERT(h.logical_cpus >= 1 && h.physical_cores >= 1);
	ASSERT(h.mem_gb > 0);
	for (int i = 0; i < cat->n; i++)
		if (cat->types[i].kind == HP_DEVICE_CPU)
			cpu = &cat->types[i];
	ASSERT(cpu && isnan(cpu->fp32_tflops) && !cpu->detected);
	hp_host_apply(&h, cpu);
	ASSERT(cpu->detected);
	ASSERT_NEAR(cpu->mem_gb, h.mem_gb, 0);
	ASSERT(isnan(cpu->mem_bw_gbs));
	hp_catalog_free(cat);
}
