/*
 * bench_fit.c - time and peak memory of fitting the estimator on many
 * profile rows.  For each ROWS, a dataset of that many rows is generated
 * into a temporary directory from data/profiles/cpu-default.csv (rows
 * drawn at random, seeded, each step time and per-class time times a
 * log-normal noise of 10%), then fitted with the public GPU measurements
 * as `hetpool fit` does, in a child process whose wall time, CPU time and
 * peak resident memory (getrusage ru_maxrss) are reported.  Goal: 100,000
 * rows in under 10 s and 500 MB.
 *
 * Usage: bench_fit [--distinct] [--keep] [ROWS...]  (default 1000 10000
 * 100000; run from the source tree).  --distinct also draws each row's
 * batch from 1..256 (its times scaled by the batch ratio^0.9): nearly
 * every row is then a configuration of its own, the fit's worst case.
 * --keep leaves the generated datasets (their path is printed).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hetpool/device.h"
#include "hetpool/estimate.h"
#include "hetpool/perf.h"
#include "hetpool/util.h"

#define SOURCE "data/profiles/cpu-default.csv"
#define MAX_SOURCE 4096

static struct hp_profile_row *src;
static int nsrc;

static int keep_row(const struct hp_profile_row *r, int line, void *ud,
		    struct hp_error *err)
{
	(void)line;
	(void)err;
	(void)ud;
	if (nsrc == MAX_SOURCE)
		return 0;
	src[nsrc++] = *r;
	return 0;
}

/* xorshift64 and a normal deviate: the same rows on every run. */
static uint64_t rng = 0x9e3779b97f4a7c15ull;
static double urand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (double)(rng >> 11) / 9007199254740992.0;
}
static double nrand(void)
{
	double u = urand() + 1e-12, v = urand();
	return sqrt(-2 * log(u)) * cos(2 * M_PI * v);
}

/* n rows into path; 0 or -1 (message printed). */
static int generate(const char *path, long n, bool distinct)
{
	FILE *f = fopen(path, "w");
	struct hp_buf b;
	int rc = 0;

	if (!f) {
		fprintf(stderr, "bench_fit: %s: %s\n", path, strerror(errno));
		return -1;
	}
	hp_buf_init(&b, 1u << 20);
	fprintf(f, "%s\n", hp_dataset_header());
	for (long i = 0; i < n && !rc; i++) {
		struct hp_profile_row r = src[(long)(urand() * nsrc) % nsrc];
		double k = exp(0.1 * nrand());
		if (distinct) {
			int64_t batch = 1 + (int64_t)(urand() * 256);
			k *= pow((double)batch / (double)r.batch, 0.9);
			r.peak_mem_bytes =
			    (int64_t)((double)r.peak_mem_bytes * (double)batch /
				      (double)r.batch);
			r.batch = batch;
		}
		r.step_time_s *= k;
		r.time_conv_s *= k;
		r.time_fc_s *= k;
		r.time_other_s *= k;
		hp_buf_reset(&b);
		if (hp_dataset_format_row(&r, &b) ||
		    fwrite(b.data, 1, b.len, f) != b.len)
			rc = -1;
	}
	if (fclose(f) || rc) {
		fprintf(stderr, "bench_fit: cannot write %s\n", path);
		rc = -1;
	}
	hp_buf_release(&b);
	return rc;
}

/* The child: fit as `hetpool fit DATASET --out OUT` does. */
static int fit_child(const char *dataset, const char *out)
{
	struct hp_fit_options o = {0};
	struct hp_fit_report rep = {0};
	struct hp_error err = {0};
	struct hp_catalog *cat = hp_catalog_load("data/devices.csv", &err);
	struct hp_estimator *est;
	struct hp_host host;
	const char *ds[1] = {dataset};

	if (!cat) {
		fprintf(stderr, "bench_fit: %s\n", err.msg);
		return 1;
	}
	if (hp_host_detect(&host, &err))
		fprintf(stderr, "bench_fit: warning: cpu host: %s\n", err.msg);
	for (int i = 0; i < cat->n; i++)
		if (cat->types[i].kind == HP_DEVICE_CPU)
			hp_host_apply(&host, &cat->types[i]);
	o.datasets = ds;
	o.ndatasets = 1;
	o.public_dir = "data/measurements";
	o.models_dir = "data/models";
	o.report = &rep;
	est = hp_estimator_fit(&o, cat, &err);
	if (!est || hp_estimator_save(est, out, &err)) {
		fprintf(stderr, "bench_fit: %s\n", err.msg);
		return 1;
	}
	hp_estimator_free(est);
	hp_catalog_free(cat);
	return rep.profile_rows > 0 ? 0 : 1;
}

/* Fit dataset in a child: wall and CPU seconds, peak RSS (MB). */
static int measure(const char *dataset, const char *out, double *wall,
		   double *cpu, double *rss_mb)
{
	struct rusage ru;
	double t0 = hp_now_s();
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0)
		_exit(fit_child(dataset, out));
	if (wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		return -1;
	*wall = hp_now_s() - t0;
	*cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
	*rss_mb = (double)ru.ru_maxrss * 1024 / 1e6; /* KiB on Linux */
	return 0;
}

int main(int argc, char **argv)
{
	static const long def_rows[] = {1000, 10000, 100000};
	char dir[] = "/tmp/hp-bench-fit-XXXXXX";
	struct hp_error err = {0};
	bool distinct = false, keep = false;
	long rows[16];
	int nrows = 0, rc = 0;
	int64_t torn;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--distinct"))
			distinct = true;
		else if (!strcmp(argv[i], "--keep"))
			keep = true;
		else if (nrows < 16 && strtol(argv[i], NULL, 10) > 0)
			rows[nrows++] = strtol(argv[i], NULL, 10);
		else {
			fprintf(stderr,
				"usage: bench_fit [--distinct] [--keep] "
				"[ROWS...]\n");
			return 2;
		}
	}
	if (!nrows)
		for (int i = 0; i < 3; i++)
			rows[nrows++] = def_rows[i];
	src = calloc(MAX_SOURCE, sizeof(*src));
	if (!src || hp_dataset_read(SOURCE, keep_row, NULL, &torn, &err) ||
	    !nsrc) {
		fprintf(stderr,
			"bench_fit: %s: %s (run from the source tree)\n",
			SOURCE, err.msg);
		return 1;
	}
	if (!mkdtemp(dir)) {
		fprintf(stderr, "bench_fit: mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	printf("%-8s %9s %9s %9s  %s\n", "rows", "wall s", "cpu s", "peak MB",
	       distinct ? "(rows of distinct batches)" : "");
	for (int k = 0; k < nrows; k++) {
		char ds[64], out[64];
		double wall, cpu, rss;
		snprintf(ds, sizeof(ds), "%s/rows-%ld.csv", dir, rows[k]);
		snprintf(out, sizeof(out), "%s/est-%ld.json", dir, rows[k]);
		if (generate(ds, rows[k], distinct) ||
		    measure(ds, out, &wall, &cpu, &rss)) {
			fprintf(stderr, "bench_fit: %ld rows failed\n",
				rows[k]);
			rc = 1;
			break;
		}
		printf("%-8ld %9.2f %9.2f %9.1f  %s\n", rows[k], wall, cpu, rss,
		       rows[k] == 100000 ? (wall < 10 && rss < 500
						? "(goal < 10 s, < 500 MB: "
						  "met)"
						: "(goal < 10 s, < 500 "
						  "MB: NOT met)")
					 : "");
		fflush(stdout);
		unlink(out);
		if (!keep)
			unlink(ds);
	}
	if (keep)
		printf("datasets kept in %s\n", dir);
	else
		rmdir(dir);
	free(src);
	return rc;
}
