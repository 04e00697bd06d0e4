/*
 * peak.c - this host's measured CPU peaks, the figures that carry the
 * estimator from the host that was profiled to this one: FP32 FLOP/s of
 * a compute-bound oneDNN sgemm and the memory bandwidth of a STREAM triad
 * (with a memcpy beside it as an independent check), at the threads the
 * engine uses; and one core's input pipeline (loader.c).
 */
#include <dnnl.h>
#include <math.h>
#include <stdbool.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hetpool/device.h"
#include "hetpool/engine.h"
#include "util/banned.h"

#define GEMM_N 1024
#define MIN_ARRAY_BYTES (64.0 * 1048576)

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The process's CPU time, s. */
static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/*
 * A run's time: its wall time, or the CPU time its threads got (over the
 * threads) when that is less: on a host shared with other work, a thread
 * waits for a CPU part of the wall time, and the peak is the hardware's
 * speed while it runs.
 */
static double run_s(double wall0, double cpu0, int threads)
{
	/* the CPU time over the threads that can run at once (more threads
	 * than this process's CPUs share them: dividing by all of them made
	 * the time too short, the peak too high by that ratio) */
	int procs = omp_get_num_procs(),
	    par = procs > 0 && procs < threads ? procs : threads;
	double wall = now_s() - wall0, cpu = (cpu_s() - cpu0) / par;

	return cpu > 0 && cpu < wall ? cpu : wall;
}

static int gemm_peak(int threads, double seconds, double *flops,
		     double *power_w, struct hp_error *err)
{
	size_t n = (size_t)GEMM_N * GEMM_N;
	float *a = malloc(n * sizeof(*a)), *b = malloc(n * sizeof(*b));
	float *c = malloc(n * sizeof(*c));
	double best = INFINITY, t_end, t_start, e0 = 0, e1 = 0;
	int rc = 0, runs = 0;
	bool e0_ok;

	if (!a || !b || !c) {
		rc = hp_error_set(err, HP_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		a[i] = (float)(i % 7) * 0.125f;
		b[i] = (float)(i % 5) * 0.25f;
		c[i] = 0;
	}
	omp_set_num_threads(threads);
	/* one untimed call: oneDNN picks and builds its kernel */
	if (dnnl_sgemm('N', 'N', GEMM_N, GEMM_N, GEMM_N, 1.0f, a, GEMM_N, b,
		       GEMM_N, 0.0f, c, GEMM_N) != dnnl_success) {
		rc = hp_error_set(err, HP_EDEVICE, "oneDNN sgemm failed");
		goto out;
	}
	t_end = now_s() + seconds;
	e0_ok = !hp_host_rapl_energy_j("/sys", &e0);
	t_start = now_s();
	while (runs < 3 || now_s() < t_end) {
		double t0 = now_s(), c0 = cpu_s(), dt;
		dnnl_sgemm('N', 'N', GEMM_N, GEMM_N, GEMM_N, 1.0f, a, GEMM_N, b,
			   GEMM_N, 0.0f, c, GEMM_N);
		dt = run_s(t0, c0, threads);
		if (dt < best)
			best = dt;
		runs++;
	}
	*flops = 2.0 * GEMM_N * GEMM_N * GEMM_N / best;
	/* package power under this load, where RAPL is readable (a
	 * counter that wrapped reads as not measured) */
	if (e0_ok && !hp_host_rapl_energy_j("/sys", &e1) && e1 > e0)
		*power_w = (e1 - e0) / (now_s() - t_start);
out:
	free(a);
	free(b);
	free(c);
	return rc;
}

static int stream_peak(int threads, double seconds, int64_t l3_bytes,
		       struct hp_host_peaks *out, struct hp_error *err)
{
	double bytes = 4.0 * (double)(l3_bytes > 0 ? l3_bytes : 0);
	size_t n;
	double *a, *b, *c, best_triad = INFINITY, best_copy = INFINITY;
	double t_end;
	const double s = 3.0;
	int rc = 0, runs = 0;

	if (bytes < MIN_ARRAY_BYTES)
		bytes = MIN_ARRAY_BYTES;
	if (bytes > 4.0 * 1073741824)
		bytes = 4.0 * 1073741824;
	n = (size_t)(bytes / sizeof(double));
	a = malloc(n * sizeof(*a));
	b = malloc(n * sizeof(*b));
	c = malloc(n * sizeof(*c));
	if (!a || !b || !c) {
		rc = hp_error_set(err, HP_ENOMEM, "out of memory");
		goto out;
	}
	/* first touch by the threads that will use each page */
#pragma omp parallel for num_threads(threads) schedule(static)
	for (size_t i = 0; i < n; i++) {
		a[i] = 0;
		b[i] = 1;
		c[i] = 2;
	}
	t_end = now_s() + seconds;
	while (runs < 3 || now_s() < t_end) {
		double t0 = now_s(), c0 = cpu_s(), dt;
#pragma omp parallel for num_threads(threads) schedule(static)
		for (size_t i = 0; i < n; i++)
			a[i] = b[i] + s * c[i];
		dt = run_s(t0, c0, threads);
		if (dt < best_triad)
			best_triad = dt;
		if (!(a[n / 2] == 1 + s * 2)) {
			rc = hp_error_set(err, HP_EINTERNAL,
					  "triad gave %g, not %g", a[n / 2],
					  1 + s * 2);
			goto out;
		}
		t0 = now_s();
		c0 = cpu_s();
#pragma omp parallel num_threads(threads)
		{
			int id = omp_get_thread_num(),
			    nt = omp_get_num_threads();
			size_t lo = n * (size_t)id / (size_t)nt;
			size_t hi = n * (size_t)(id + 1) / (size_t)nt;
			memcpy(a + lo, b + lo, (hi - lo) * sizeof(*a));
		}
		dt = run_s(t0, c0, threads);
		if (dt < best_copy)
			best_copy = dt;
		runs++;
	}
	/* the last copy left b in a: a check the compiler must keep */
	if (!(a[n / 2] == 1 && a[n - 1] == 1)) {
		rc = hp_error_set(err, HP_EINTERNAL, "copy gave %g, not 1",
				  a[n / 2]);
		goto out;
	}
	out->triad_bw = 3.0 * (double)n * sizeof(double) / best_triad;
	out->copy_bw = 2.0 * (double)n * sizeof(double) / best_copy;
	out->array_bytes = (double)n * sizeof(double);
out:
	free(a);
	free(b);
	free(c);
	return rc;
}

/* Package power with this process asleep for half a second (RAPL); left
 * NaN where it cannot be read. */
static void idle_power(double *power_w)
{
	struct timespec half = {0, 500000000};
	double e0, e1, t0;

	if (hp_host_rapl_energy_j("/sys", &e0))
		return;
	t0 = now_s();
	nanosleep(&half, NULL);
	if (!hp_host_rapl_energy_j("/sys", &e1) && e1 > e0)
		*power_w = (e1 - e0) / (now_s() - t0);
}

int hp_engine_cpu_peaks(int threads, double seconds, int64_t l3_bytes,
			struct hp_host_peaks *out, struct hp_error *err)
{
	struct hp_host_peaks p;
	time_t t = time(NULL);
	int rc;

	if (threads < 0 || threads > 4096)
		return hp_error_set(err, HP_EINVAL,
				    "threads %d out of range 0..4096", threads);
	if (!(seconds > 0 && seconds <= 600))
		return hp_error_set(err, HP_EINVAL,
				    "seconds %g out of range (0, 600]",
				    seconds);
	if (threads == 0)
		threads = omp_get_num_procs();
	memset(&p, 0, sizeof(p));
	p.threads = threads;
	p.fp32_flops = p.triad_bw = p.copy_bw = p.array_bytes = NAN;
	p.power_load_w = p.power_idle_w = NAN;
	p.loader.decode_s_per_px = p.loader.augment_s_per_px =
	    p.loader.jpeg_bits_per_px = NAN;
	idle_power(&p.power_idle_w);
	if ((rc = gemm_peak(threads, seconds, &p.fp32_flops, &p.power_load_w,
			    err)) ||
	    (rc = stream_peak(threads, seconds, l3_bytes, &p, err)))
		return rc;
	/* one core's input pipeline: the figures stay NaN (not measured)
	 * where libjpeg fails, the peaks are still good */
	if (hp_engine_loader_cost(seconds / 2, &p.loader, NULL)) {
		p.loader.decode_s_per_px = p.loader.augment_s_per_px = NAN;
		p.loader.jpeg_bits_per_px = NAN;
	}
	hp_utc_iso8601(t, p.when, sizeof(p.when));
	*out = p;
	return 0;
}
