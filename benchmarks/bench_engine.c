/*
 * bench_engine.c - time the engine's training steps (forward, backward,
 * SGD-momentum or Adam update) on spec files: warm-up, then N timed steps;
 * prints one line per spec with the median step time.  The PyTorch side
 * of the comparison is bench_engine_torch.py (same arguments, same line).
 *
 * A model may also be an ONNX CNN (MODEL.onnx[:BATCH], at -s CxHxW), run
 * as the layers it names.  Each line also gives the step's FLOPs (forward
 * and backward, hetpool analyze's count), the FLOP/s achieved and their
 * fraction of the host's FP32 peak for the threads used, and with -L the
 * seconds per step by layer type (summed over the layers of each).  The
 * peak is the host's measured one (oneDNN's sgemm at those threads): the
 * host file's ('hetpool host --measure --threads N' keeps it), else
 * measured here once (about a second), else the ISA estimate of struct
 * hp_host (physical cores x clock x FLOPs per cycle); peak_source= says
 * which.
 *
 * Usage: bench_engine [-b BATCH] [-t THREADS] [-n STEPS] [-w WARMUP]
 *                     [-s CxHxW] [-L] [--adam] MODEL[:BATCH]...
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hetpool/device.h"
#include "hetpool/engine.h"

static int64_t in_shape[3];
static int layer_times;

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void usage(void)
{
	fprintf(stderr, "usage: bench_engine [-b BATCH] [-t THREADS] "
			"[-n STEPS] [-w WARMUP] [-s CxHxW] [-L] [--adam] "
			"MODEL[:BATCH]...\n");
	exit(2);
}

static int64_t num(const char *s, int64_t min, int64_t max)
{
	int64_t v;

	if (hp_parse_i64(s, min, max, &v))
		usage();
	return v;
}

/* Forward + backward FLOPs of one step, as hetpool analyze counts them. */
static double step_flops(const struct hp_spec *s, int64_t batch)
{
	struct hp_error err = {0};
	struct hp_graph *g = hp_spec_to_graph(s, &err);
	struct hp_features f;
	double v = 0;

	if (g && hp_analyze(g, batch, NULL, 0, &f, &err) == 0) {
		v = f.flops_fwd + f.flops_bwd_input + f.flops_bwd_weight;
		hp_features_release(&f);
	}
	hp_graph_free(g);
	return v;
}

/* The host's FP32 peak for `threads` threads, GFLOP/s, and in *source
 * where it came from (see the top); measured once a process. */
static double host_peak_gflops(int threads, const char **source)
{
	static int done_threads = -1;
	static double peak;
	static const char *src;
	struct hp_host h;
	struct hp_host_file f;
	struct hp_host_peaks pk;
	struct hp_error err = {0};
	char path[4200];
	int cores;

	if (done_threads == threads) {
		*source = src;
		return peak;
	}
	hp_host_detect(&h, &err);
	h.threads = threads;
	h.threads = hp_host_threads(&h);
	if (!hp_host_file_path(NULL, &h, path, sizeof(path), &err) &&
	    !hp_host_file_load(path, &f, &err) && f.peaks.when[0] &&
	    f.peaks.threads == h.threads && f.peaks.fp32_flops > 0) {
		peak = f.peaks.fp32_flops / 1e9;
		src = "measured-host-file";
	} else if (!hp_engine_cpu_peaks(h.threads, 1.0, h.l3_bytes, &pk,
					&err) &&
		   pk.fp32_flops > 0) {
		peak = pk.fp32_flops / 1e9;
		src = "measured-sgemm";
	} else {
		cores = h.physical_cores > 0 ? h.physical_cores : 1;
		peak = h.fp32_gflops / cores *
		       (threads <= 0 || threads > cores ? cores : threads);
		src = "isa-estimate";
	}
	done_threads = threads;
	*source = src;
	return peak;
}

/* Seconds per step by layer type: "layer_times spec=... conv=... ". */
static void print_layer_times(struct hp_engine *e, const struct hp_spec *s)
{
	double sum[HP_LAYER_LAST + 2] = {0};
	double *lt = calloc((size_t)s->nlayers + 1, sizeof(*lt));
	struct hp_error err = {0};
	int steps = 0;

	if (!lt || hp_engine_layer_times(e, lt, s->nlayers + 1, &steps, &err) ||
	    steps < 1) {
		free(lt);
		return;
	}
	for (int i = 0; i < s->nlayers; i++)
		sum[s->layers[i].type] += lt[i];
	sum[HP_LAYER_LAST + 1] = lt[s->nlayers];
	printf("layer_times spec=%s", s->name);
	for (int k = 0; k <= HP_LAYER_LAST; k++)
		if (sum[k] > 0)
			printf(" %s_ms=%.3f",
			       hp_spec_layer_name((enum hp_spec_layer_type)k),
			       sum[k] * 1e3 / steps);
	printf(" loss_ms=%.3f\n", sum[HP_LAYER_LAST + 1] * 1e3 / steps);
	free(lt);
}

/* Returns 0, or 1 when the spec could not be run. */
static int bench_one(const char *arg, int64_t batch, int threads, int steps,
		     int warmup, enum hp_optimizer opt)
{
	struct hp_error err = {0};
	struct hp_engine_opts o;
	struct hp_spec spec;
	struct hp_engine *e;
	char path[4096], *colon, *text;
	size_t len;
	double *t, loss = 0, flops, peak;
	const char *peak_src;

	snprintf(path, sizeof(path), "%s", arg);
	colon = strrchr(path, ':');
	if (colon && strstr(colon, ".json") == NULL) {
		*colon = '\0';
		batch = num(colon + 1, 1, 1 << 20);
	}
	len = strlen(path);
	if (len > 5 && !strcmp(path + len - 5, ".onnx")) {
		struct hp_graph *g = hp_model_load(path, &err);
		const char *base = strrchr(path, '/');
		if (!g || hp_spec_from_graph(g, in_shape[0] ? in_shape : NULL,
					     true, &spec, &err)) {
			fprintf(stderr, "bench_engine: %s: %s\n", path,
				err.msg);
			hp_graph_free(g);
			return 1;
		}
		hp_graph_free(g);
		free(spec.name);
		spec.name = hp_strdup(base ? base + 1 : path);
		if (spec.name)
			spec.name[strcspn(spec.name, ".")] = '\0';
	} else if (hp_read_file(path, 1 << 24, &text, &len, &err)) {
		fprintf(stderr, "bench_engine: %s: %s\n", path, err.msg);
		return 1;
	} else {
		int rc = hp_spec_parse_only(text, len, &spec, &err);
		free(text);
		if (rc) {
			fprintf(stderr, "bench_engine: %s: %s\n", path,
				err.msg);
			return 1;
		}
	}
	hp_engine_opts_init(&o);
	o.threads = threads;
	o.batch = batch;
	o.opt = opt;
	o.layer_times = layer_times;
	if (opt == HP_OPT_ADAM)
		o.lr = 0.001; /* as bench_engine_torch.py */
	e = hp_engine_new(&spec, &o, &err);
	if (!e || hp_engine_fill_synthetic(e, 1, &err)) {
		fprintf(stderr, "bench_engine: %s: %s\n", path, err.msg);
		hp_engine_free(e);
		hp_spec_release(&spec);
		return 1;
	}
	t = calloc((size_t)steps, sizeof(*t));
	for (int i = 0; i < warmup + steps; i++) {
		double t0 = hp_now_s();
		if (hp_engine_step(e, &loss, &err)) {
			fprintf(stderr, "bench_engine: %s: %s\n", path,
				err.msg);
			break;
		}
		if (i >= warmup)
			t[i - warmup] = (hp_now_s() - t0) * 1e3;
	}
	qsort(t, (size_t)steps, sizeof(*t), cmp_double);
	flops = step_flops(&spec, batch);
	peak = host_peak_gflops(threads, &peak_src);
	printf("impl=engine spec=%s batch=%lld threads=%d steps=%d "
	       "median_ms=%.3f min_ms=%.3f peak_mib=%.1f est_mib=%.1f "
	       "loss=%.4f step_gflop=%.3f gflops=%.2f peak_gflops=%.1f "
	       "peak_frac=%.3f peak_source=%s device=\"%s\"\n",
	       spec.name, (long long)batch, threads, steps, t[steps / 2], t[0],
	       (double)hp_engine_peak_bytes(e) / 1048576.0,
	       (double)hp_engine_estimate_bytes(&spec, batch, opt) / 1048576.0,
	       loss, flops / 1e9, flops / 1e6 / t[steps / 2], peak,
	       flops / 1e6 / t[steps / 2] / peak, peak_src,
	       hp_engine_device_desc(e));
	if (layer_times)
		print_layer_times(e, &spec);
	fflush(stdout);
	free(t);
	hp_engine_free(e);
	hp_spec_release(&spec);
	return 0;
}

int main(int argc, char **argv)
{
	int64_t batch = 32;
	int threads = 0, steps = 20, warmup = 5, rc = 0, i;
	enum hp_optimizer opt = HP_OPT_SGD;

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--adam"))
			opt = HP_OPT_ADAM;
		else if (!strcmp(argv[i], "-L"))
			layer_times = 1;
		else if (i + 1 >= argc)
			usage();
		else if (!strcmp(argv[i], "-b"))
			batch = num(argv[++i], 1, 1 << 20);
		else if (!strcmp(argv[i], "-t"))
			threads = (int)num(argv[++i], 1, 4096);
		else if (!strcmp(argv[i], "-n"))
			steps = (int)num(argv[++i], 1, 1 << 20);
		else if (!strcmp(argv[i], "-w"))
			warmup = (int)num(argv[++i], 0, 1 << 20);
		else if (!strcmp(argv[i], "-s")) {
			const char *p = argv[++i];
			char *end;
			for (int k = 0; k < 3; k++) {
				long v = strtol(p, &end, 10);
				if (end == p || v < 1 || v > 65536 ||
				    (k < 2 ? *end != 'x' : *end != '\0'))
					usage();
				in_shape[k] = v;
				p = end + 1;
			}
		} else
			usage();
	}
	if (i == argc)
		usage();
	for (; i < argc; i++)
		rc |= bench_one(argv[i], batch, threads, steps, warmup, opt);
	return rc;
}
