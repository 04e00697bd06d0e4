/*
 * cmd_host.c - `hetpool host`: this host as a device type (model, cores
 * and threads used, clock, vector ISA and width, caches, memory), its
 * measured peaks (oneDNN sgemm FLOP/s, STREAM triad bandwidth, one
 * core's JPEG input pipeline) and its calibration, kept in its host file
 * in the state folder.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "hetpool/device.h"
#include "hetpool/engine.h"
#include "opt.h"

static const char help[] =
    "usage: hetpool host [--measure] [--threads N] [--seconds S] [--json]\n"
    "\n"
    "Show this host as hetpool predicts for it: CPU model, sockets, "
    "physical\n"
    "cores, logical CPUs and the threads used, clock, vector ISA and its "
    "width,\n"
    "L1d/L2/L3 cache sizes (sysfs), memory, the ISA's peak FP32 estimate, "
    "and\n"
    "what its host file holds: measured peaks and the calibration "
    "('hetpool\n"
    "calibrate').  --measure measures the peaks now, at the threads used, "
    "and\n"
    "saves them: FP32 FLOP/s of a compute-bound oneDNN sgemm (1024^3) and "
    "the\n"
    "memory bandwidth of a STREAM triad on arrays far larger than the L3 "
    "(a\n"
    "memcpy beside it), each the best of its runs in S seconds.  "
    "Predictions\n"
    "for the cpu type (predict, recommend, hetpoold) use them: the "
    "estimator's\n"
    "CPU fit is carried from the profiled host to this one by these "
    "figures.\n"
    "It also times one core's JPEG input pipeline (decode a 500x375 "
    "image,\n"
    "crop it to 224x224, flip, normalize): 'predict --input-cores' caps "
    "a GPU's\n"
    "step at what the host's cores can feed it.\n"
    "\n"
    "  --measure     measure the peaks and save them in the host file\n"
    "  --threads N   the threads used (default: $HETPOOL_THREADS, else "
    "the CPUs it may run on);\n"
    "                each thread count has its own host file\n"
    "  --seconds S   seconds per measured figure (default 2)\n"
    "  --json        print the host file's JSON for scripts\n"
    "\n"
    "The host file is STATE/hosts/KEY.json, KEY from the model name, ISA "
    "and\n"
    "threads (amd-epyc-avx2-t1); STATE is $HETPOOL_STATE_DIR, else\n"
    "$XDG_STATE_HOME/hetpool, else ~/.local/state/hetpool.  Predictions "
    "use\n"
    "the host file of $HETPOOL_THREADS (or its CPUs; 'predict --threads "
    "N').\n"
    "\n"
    "examples:\n"
    "  hetpool host\n"
    "  hetpool host --measure --threads 1\n"
    "  hetpool host --threads 1 --json | jq .peaks\n";

struct host_args {
	bool measure, json;
	int threads;
	double seconds;
};

static const struct cli_opt host_opts[] = {
    CLI_OPT_FLAG("measure", struct host_args, measure),
    CLI_OPT_FLAG("json", struct host_args, json),
    CLI_OPT_INT("threads", struct host_args, threads, 1, 4096),
    CLI_OPT_NUM_ABOVE("seconds", struct host_args, seconds, 0, 600),
    CLI_OPT_END,
};

static const char *kib(int64_t b, char *buf, size_t n)
{
	if (b <= 0)
		snprintf(buf, n, "-");
	else if (b >= 1048576 && b % 1048576 == 0)
		snprintf(buf, n, "%lld MiB", (long long)(b / 1048576));
	else
		snprintf(buf, n, "%lld KiB", (long long)(b / 1024));
	return buf;
}

static void print_text(const struct hp_host_file *f, const char *path)
{
	const struct hp_host *h = &f->host;
	char e[512], c1[32], c2[32], c3[32];
	double est = hp_host_fp32_est(h);

	printf("host %s\n", cli_esc(f->key, e, sizeof(e)));
	printf("  model:    %s\n", cli_esc(h->model, e, sizeof(e)));
	printf("  cpus:     %d socket%s, %d physical cores, %d logical CPUs; "
	       "%d thread%s used\n",
	       h->sockets, h->sockets == 1 ? "" : "s", h->physical_cores,
	       h->logical_cpus, h->threads, h->threads == 1 ? "" : "s");
	printf("  clock:    %.2f GHz\n", h->ghz);
	printf("  vectors:  %s, %d bits (%d FP32 FLOPs/cycle/core)\n",
	       cli_esc(h->isa, e, sizeof(e)), h->vector_bits,
	       h->flops_per_cycle);
	printf("  caches:   L1d %s, L2 %s, L3 %s (L3 shared by %d CPUs)\n",
	       kib(h->l1d_bytes, c1, sizeof(c1)),
	       kib(h->l2_bytes, c2, sizeof(c2)),
	       kib(h->l3_bytes, c3, sizeof(c3)), h->l3_cpus);
	printf("  memory:   %.1f GB\n", h->mem_gb);
	printf("  fp32:     ~%.1f GFLOP/s at %d thread%s (ISA estimate)\n",
	       est / 1e9, h->threads, h->threads == 1 ? "" : "s");
	if (f->peaks.when[0])
		printf(
		    "  measured: %.1f GFLOP/s FP32 (oneDNN sgemm), %.2f GB/s "
		    "triad, %.2f GB/s memcpy, at %d thread%s, %s\n",
		    f->peaks.fp32_flops / 1e9, f->peaks.triad_bw / 1e9,
		    f->peaks.copy_bw / 1e9, f->peaks.threads,
		    f->peaks.threads == 1 ? "" : "s", f->peaks.when);
	if (f->peaks.when[0] && f->peaks.loader.decode_s_per_px > 0)
		printf("  input:    one core decodes a %dx%d JPEG in %.3f ms "
		       "and crops it to %dx%d in %.3f ms: %.0f samples/s\n",
		       HP_LOADER_SRC_W, HP_LOADER_SRC_H,
		       1e3 * f->peaks.loader.decode_s_per_px * HP_LOADER_SRC_W *
			   HP_LOADER_SRC_H,
		       HP_LOADER_OUT_HW, HP_LOADER_OUT_HW,
		       1e3 * f->peaks.loader.augment_s_per_px *
			   HP_LOADER_OUT_HW * HP_LOADER_OUT_HW,
		       1 / hp_loader_sample_s(
			       &f->peaks.loader,
			       (double)HP_LOADER_SRC_W * HP_LOADER_SRC_H,
			       (double)HP_LOADER_OUT_HW * HP_LOADER_OUT_HW));
	if (!f->peaks.when[0])
		printf("  measured: not measured ('hetpool host --measure "
		       "--threads %d')\n",
		       h->threads);
	if (f->calib.has && f->calib.nparams > 0)
		printf("  calibration: %s from %d configurations, this host's "
		       "own fit (against its %.0f GFLOP/s ISA peak), MAPE "
		       "%.1f%% -> %.1f%%\n",
		       f->calib.when, f->calib.n, f->calib.fit_gflops,
		       f->calib.mape_before, f->calib.mape_after);
	else if (f->calib.has)
		printf("  calibration: %s from %d configurations, factors "
		       "conv %.3f fc %.3f other %.3f, MAPE %.1f%% -> %.1f%%\n",
		       f->calib.when, f->calib.n, exp(f->calib.log_scale[0]),
		       exp(f->calib.log_scale[1]), exp(f->calib.log_scale[2]),
		       f->calib.mape_before, f->calib.mape_after);
	if (f->calib.has && f->calib.ref_time_s > 0)
		printf("               at the host's speed then: the "
		       "profiler's yardstick step took %.3f ms\n",
		       1e3 * f->calib.ref_time_s);
	if (f->calib.has && f->calib.estimator[0])
		printf("               for the estimator fitted at %s\n",
		       cli_esc(f->calib.estimator, e, sizeof(e)));
	else if (!f->calib.has)
		printf("  calibration: none ('hetpool calibrate --threads "
		       "%d')\n",
		       h->threads);
	printf("  file:     %s\n", cli_esc(path, e, sizeof(e)));
}

static int cmd_host(int argc, char **argv)
{
	struct host_args a = {.seconds = 2};
	struct hp_error err = {0};
	struct hp_host h;
	struct hp_host_file f, old;
	char path[4200];
	int first, status, rc;

	if ((status = cli_parse(&cli_cmd_host, argc, argv, &a, &first)))
		return status < 0 ? EXIT_OK : status;
	if (first < argc)
		return cli_error(EXIT_USAGE, "host: unexpected argument '%s'",
				 argv[first]);
	if (hp_host_detect(&h, &err))
		return cli_error(EXIT_FAIL, "host: %s", err.msg);
	h.threads = a.threads ? a.threads : hp_ctx_threads();
	h.threads = hp_host_threads(&h);
	hp_host_file_init(&f, &h);
	if ((rc = hp_host_file_path(NULL, &f.host, path, sizeof(path), &err)))
		return cli_error(cli_status_for(rc), "host: %s", err.msg);
	rc = hp_host_file_load(path, &old, &err);
	if (rc && rc != HP_ENOENT)
		return cli_error(EXIT_FAIL, "host: %s", err.msg);
	if (!rc) {
		f.peaks = old.peaks;
		f.calib = old.calib;
	}
	if (a.measure) {
		if (isatty(STDERR_FILENO))
			fprintf(stderr,
				"measuring FP32 FLOP/s, triad bandwidth and "
				"the JPEG pipeline at %d thread%s (about %.0f "
				"s)...\n",
				h.threads, h.threads == 1 ? "" : "s",
				2.5 * a.seconds + 1);
		if ((rc = hp_engine_cpu_peaks(h.threads, a.seconds, h.l3_bytes,
					      &f.peaks, &err)))
			return cli_error(EXIT_FAIL, "host: %s", err.msg);
		if ((rc = hp_host_file_save(path, &f, &err)))
			return cli_error(EXIT_FAIL, "host: %s", err.msg);
	}
	if (a.json) {
		char *s = hp_host_file_json(&f);
		if (!s)
			return cli_error(EXIT_FAIL, "host: out of memory");
		printf("%s\n", s);
		free(s);
		return EXIT_OK;
	}
	print_text(&f, path);
	return EXIT_OK;
}

const struct cli_cmd cli_cmd_host = {
    .name = "host",
    .run = cmd_host,
    .help = help,
    .opts = host_opts,
    .foreign = "input-cores", /* 'predict --input-cores' */
};
