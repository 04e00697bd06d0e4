/*
 * bench_engine.c - time the engine's training steps (forward, backward,
 * SGD-momentum or Adam update) on spec files: warm-up, then N timed steps;
 * prints one line per spec with the median step time.  The PyTorch side
 * of the comparison is bench_engine_torch.py (same arguments, same line).
 *
 * Usage: bench_engine [-b BATCH] [-t THREADS] [-n STEPS] [-w WARMUP]
 *                     [--adam] SPEC.json[:BATCH]...
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hetpool/engine.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: bench_engine [-b BATCH] [-t THREADS] "
		"[-n STEPS] [-w WARMUP] [--adam] SPEC.json[:BATCH]...\n");
	exit(2);
}

static int64_t num(const char *s, int64_t min, int64_t max)
{
	int64_t v;

	if (hp_parse_i64(s, min, max, &v))
		usage();
	return v;
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
	double *t, loss = 0;

	snprintf(path, sizeof(path), "%s", arg);
	colon = strrchr(path, ':');
	if (colon && strstr(colon, ".json") == NULL) {
		*colon = '\0';
		batch = num(colon + 1, 1, 1 << 20);
	}
	if (hp_read_file(path, 1 << 24, &text, &len, &err)) {
		fprintf(stderr, "bench_engine: %s: %s\n", path, err.msg);
		return 1;
	}
	if (hp_spec_parse_only(text, len, &spec, &err)) {
		fprintf(stderr, "bench_engine: %s: %s\n", path, err.msg);
		free(text);
		return 1;
	}
	free(text);
	hp_engine_opts_init(&o);
	o.threads = threads;
	o.batch = batch;
	o.opt = opt;
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
	printf("impl=engine spec=%s batch=%lld threads=%d steps=%d "
	       "median_ms=%.3f min_ms=%.3f peak_mib=%.1f est_mib=%.1f "
	       "loss=%.4f device=\"%s\"\n",
	       spec.name, (long long)batch, threads, steps, t[steps / 2], t[0],
	       (double)hp_engine_peak_bytes(e) / 1048576.0,
	       (double)hp_engine_estimate_bytes(&spec, batch, opt) / 1048576.0,
	       loss, hp_engine_device_desc(e));
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
		else
			usage();
	}
	if (i == argc)
		usage();
	for (; i < argc; i++)
		rc |= bench_one(argv[i], batch, threads, steps, warmup, opt);
	return rc;
}
