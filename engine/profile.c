/*
 * profile.c - time a configuration's training steps on a device: warm-up,
 * then timed steps until the median is stable or the time is up; record
 * the median, spread, memory, energy (only where measured) and who ran it.
 * Interleaved with the steps, on the same threads, a fixed reference
 * workload (the yardstick) is timed too, so that a row carries the host's
 * speed at the time it was measured (ref_time_s, docs/dataset.md).
 */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <dirent.h>
#include <time.h>
#include <unistd.h>

#include "hetpool/profile.h"
#include "util/banned.h"

void hp_profile_opts_init(struct hp_profile_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->device = "cpu";
	o->opt = HP_OPT_SGD;
	o->warmup_steps = 3;
	o->warmup_s = 0.2;
	o->min_steps = 10;
	o->max_steps = 500;
	o->max_seconds = 4.0;
	o->stable_rel = 0.01;
	o->max_pressure = 0.05;
	o->retries = 3;
	o->seed = 1;
	o->reference = true;
	o->ref_share = 0.03;
}

/*
 * The yardstick: the training step of a fixed small CNN (the sweep's
 * c2-k16-f2-w128-s32 with batch norm: two 3x3 convolutions, batch norm,
 * ReLU, max pooling, two fully connected layers; about 56 MFLOP a step
 * at batch 8), whatever the configuration.  Never change it: rows
 * measured with another yardstick would not compare.
 */
#define REF_BATCH 8
#define REF_MAX 512

static struct hp_engine *ref_new(const struct hp_profile_opts *o)
{
	struct hp_engine_opts eo;
	struct hp_engine *e;
	struct hp_spec sp;
	struct hp_error err = {0};

	if (hp_sweep_make_spec(2, 16, 2, 128, 32, 3, 10, true, 0, &sp, &err))
		return NULL;
	hp_engine_opts_init(&eo);
	eo.device = o->device;
	eo.threads = o->threads;
	eo.batch = REF_BATCH;
	eo.opt = HP_OPT_SGD;
	eo.seed = 1;
	e = hp_engine_new(&sp, &eo, &err);
	hp_spec_release(&sp);
	if (e && hp_engine_fill_synthetic(e, 1, &err)) {
		hp_engine_free(e);
		e = NULL;
	}
	return e;
}

static double median_of(const double *v, int n, double *tmp);

int hp_profile_ref_time(const struct hp_profile_opts *o, double seconds,
			double *ref_s, double *cv, struct hp_error *err)
{
	struct hp_engine *ref;
	double *rt = NULL, *tmp = NULL, t0, sum = 0, sum2 = 0;
	int n = 0, rc = 0;

	if (!(seconds > 0 && seconds < 3600))
		return hp_error_set(err, HP_EINVAL,
				    "reference time: %g seconds: give more "
				    "than 0",
				    seconds);
	if (!(ref = ref_new(o)))
		return hp_error_set(err, HP_EDEVICE,
				    "reference step: cannot build it on '%s'",
				    o->device ? o->device : "cpu");
	rt = malloc(REF_MAX * sizeof(*rt));
	tmp = malloc(REF_MAX * sizeof(*tmp));
	if (!rt || !tmp) {
		rc = hp_error_set(err, HP_ENOMEM, "out of memory");
		goto out;
	}
	for (int i = 0; i < 3 && !rc; i++)
		rc = hp_engine_step(ref, NULL, err);
	t0 = hp_now_s();
	while (!rc && n < REF_MAX && (n < 7 || hp_now_s() - t0 < seconds)) {
		double s0 = hp_now_s();
		if (o->stop && *o->stop) {
			rc = hp_error_set(err, HP_ECANCELED, "interrupted");
			break;
		}
		if ((rc = hp_engine_step(ref, NULL, err)))
			break;
		rt[n] = hp_now_s() - s0;
		sum += rt[n];
		sum2 += rt[n] * rt[n];
		n++;
	}
	if (!rc) {
		*ref_s = median_of(rt, n, tmp);
		if (cv)
			*cv = sqrt(fmax(0, (sum2 - sum * sum / n) / (n - 1))) /
			      (sum / n);
	}
out:
	free(rt);
	free(tmp);
	hp_engine_free(ref);
	return rc;
}

/*
 * Nanoseconds this process's threads have spent runnable but waiting for
 * a CPU (the run-queue delay of /proc/self/task/<tid>/schedstat, summed
 * over threads); -1 where the kernel does not report it.
 */
static long long own_wait_ns(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	long long sum = 0;
	bool any = false;

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		char path[64];
		unsigned long long run, wait;
		FILE *f;
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%.20s/schedstat",
			 de->d_name);
		if (!(f = fopen(path, "r")))
			continue;
		if (fscanf(f, "%llu %llu", &run, &wait) == 2) {
			sum += (long long)wait;
			any = true;
		}
		fclose(f);
	}
	closedir(d);
	return any ? sum : -1;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median_of(const double *v, int n, double *tmp)
{
	memcpy(tmp, v, (size_t)n * sizeof(*v));
	qsort(tmp, (size_t)n, sizeof(*tmp), cmp_double);
	return n % 2 ? tmp[n / 2] : 0.5 * (tmp[n / 2 - 1] + tmp[n / 2]);
}

static void cpu_model(char *out, size_t n)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[512];

	snprintf(out, n, "unknown CPU");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "model name", 10)) {
			char *p = strchr(line, ':');
			if (p) {
				p++;
				while (*p == ' ')
					p++;
				p[strcspn(p, "\n")] = '\0';
				snprintf(out, n, "%s", p);
			}
			break;
		}
	}
	fclose(f);
}

static void fill_identity(struct hp_profile_row *r, const struct hp_engine *e,
			  const struct hp_profile_opts *o)
{
	time_t now = time(NULL);
	struct hp_engine_device_info di;

	snprintf(r->device, sizeof(r->device), "%s",
		 strncmp(o->device, "cuda", 4) ? "cpu" : o->device);
	if (hp_engine_device_info(e, &di) == 0 && di.name[0])
		snprintf(r->device_name, sizeof(r->device_name), "%s", di.name);
	else
		cpu_model(r->device_name, sizeof(r->device_name));
	snprintf(r->backend, sizeof(r->backend), "%s",
		 hp_engine_device_desc(e));
	if (gethostname(r->host, sizeof(r->host)) != 0)
		snprintf(r->host, sizeof(r->host), "unknown");
	r->host[sizeof(r->host) - 1] = '\0';
	r->driver[0] = '\0';
	if (hp_engine_device_info(e, &di) == 0)
		snprintf(r->driver, sizeof(r->driver), "%s", di.driver);
	snprintf(r->optimizer, sizeof(r->optimizer), "%s",
		 o->opt == HP_OPT_ADAM ? "adam" : "sgd");
	hp_utc_iso8601(now, r->timestamp, sizeof(r->timestamp));
	snprintf(r->hetpool_version, sizeof(r->hetpool_version), "%s",
		 hp_version());
}

static int fill_features(const struct hp_sweep_config *c,
			 struct hp_profile_row *r, struct hp_error *err)
{
	struct hp_graph *g = hp_spec_to_graph(&c->spec, err);
	struct hp_features f;
	char *json;
	int rc;

	if (!g)
		return err ? err->code : HP_ENOMEM;
	rc = hp_analyze(g, c->batch, NULL, 0, &f, err);
	hp_graph_free(g);
	if (rc)
		return rc;
	r->params = f.params;
	r->macs_per_sample = f.macs_per_sample;
	r->flops_fwd = f.flops_fwd;
	r->flops_bwd = f.flops_bwd_input + f.flops_bwd_weight;
	r->activations_bytes = f.activations_bytes;
	hp_features_release(&f);
	json = hp_spec_to_json(&c->spec);
	if (!json)
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	if (strlen(json) >= sizeof(r->spec_json)) {
		size_t n = strlen(json);
		free(json);
		return hp_error_set(err, HP_ETOOBIG,
				    "the spec's JSON (%zu bytes) is longer "
				    "than a profile row holds (%zu)",
				    n, sizeof(r->spec_json) - 1);
	}
	memcpy(r->spec_json, json, strlen(json) + 1);
	free(json);
	return 0;
}

/* Seconds of the layer times lt (hp_engine_layer_times) per class: conv,
 * fully connected, other layers, the loss. */
static void class_sums(const struct hp_spec *s, const double *lt, double *c)
{
	c[0] = c[1] = c[2] = 0;
	for (int i = 0; i < s->nlayers; i++) {
		int k = s->layers[i].type == HP_LAYER_CONV ? 0
			: s->layers[i].type == HP_LAYER_FC ? 1
							   : 2;
		c[k] += lt[i];
	}
	c[3] = lt[s->nlayers];
}

int hp_profile_config(const struct hp_sweep_config *c,
		      const struct hp_profile_opts *o, struct hp_profile_row *r,
		      struct hp_error *err)
{
	struct hp_engine_opts eo;
	struct hp_engine *e = NULL;
	double *t = NULL, *tmp = NULL, t0, sum = 0, sum2 = 0, mean, elapsed;
	struct rusage ru;
	uint64_t mj0 = 0, mj1 = 0;
	bool energy, split;
	/* per timed step: seconds per class (split); the running sums */
	double *cls[4] = {NULL}, *lt = NULL, c0[4], c1[4];
	/* the yardstick: its engine, its step times, its time per step */
	struct hp_engine *ref = NULL;
	double *rt = NULL, ref_unit = 0;
	int steps, n = 0, nref = 0, attempt = 0, rc;
	long long w0, w1;
	int nthr = o->threads > 0 ? o->threads : omp_get_num_procs();

	memset(r, 0, sizeof(*r));
	snprintf(r->config_id, sizeof(r->config_id), "%s", c->id);
	snprintf(r->family, sizeof(r->family), "%s", c->family);
	r->batch = c->batch;
	r->conv_layers = c->conv_layers;
	r->filters = c->filters;
	r->fc_layers = c->fc_layers;
	r->fc_width = c->fc_width;
	r->input_size = c->input_size;
	r->energy_per_step_j = NAN;
	r->time_conv_s = r->time_fc_s = r->time_other_s = r->time_loss_s = NAN;
	r->power_w = NAN;
	r->cpu_pressure = NAN;
	r->ref_time_s = r->ref_time_cv = NAN;
	r->host_isa_gflops = r->host_sgemm_gflops = NAN;
	r->host_triad_gbs = r->host_cache_bytes = NAN;
	snprintf(r->energy_source, sizeof(r->energy_source), "not measured");
	if ((rc = fill_features(c, r, err)))
		return rc;

	hp_engine_opts_init(&eo);
	eo.device = o->device;
	eo.threads = o->threads;
	eo.batch = c->batch;
	eo.opt = o->opt;
	eo.seed = o->seed;
	eo.max_bytes = o->max_bytes;
	eo.layer_times = true;
	e = hp_engine_new(&c->spec, &eo, err);
	if (!e)
		return err ? err->code : HP_ENOMEM;
	t = malloc((size_t)o->max_steps * sizeof(*t));
	/* tmp sorts the step times, then the yardstick's */
	tmp = malloc((size_t)(o->max_steps > REF_MAX ? o->max_steps : REF_MAX) *
		     sizeof(*tmp));
	lt = calloc((size_t)c->spec.nlayers + 1, sizeof(*lt));
	for (int k = 0; k < 4; k++)
		cls[k] = malloc((size_t)o->max_steps * sizeof(*cls[k]));
	rt = malloc(REF_MAX * sizeof(*rt));
	if (!t || !tmp || !lt || !rt || !cls[0] || !cls[1] || !cls[2] ||
	    !cls[3]) {
		rc = hp_error_set(err, HP_ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = hp_engine_fill_synthetic(e, o->seed, err)))
		goto out;
	/* Warm-up: JIT, caches, first-touch of memory, clock ramp-up. */
	t0 = hp_now_s();
	for (int i = 0; i < o->warmup_steps || hp_now_s() - t0 < o->warmup_s;
	     i++) {
		if (o->stop && *o->stop) {
			rc = hp_error_set(err, HP_ECANCELED, "interrupted");
			goto out;
		}
		if ((rc = hp_engine_step(e, NULL, err)))
			goto out;
		r->warmup_steps = i + 1;
		if (i >= 1000)
			break;
	}
	/* The yardstick, warmed up the same way; a row without it (it could
	 * not be built) still has its absolute times. */
	if (o->reference && (ref = ref_new(o)) != NULL) {
		for (int i = 0; i < 3; i++) {
			double s0 = hp_now_s();
			if (hp_engine_step(ref, NULL, NULL)) {
				hp_engine_free(ref);
				ref = NULL;
				break;
			}
			s0 = hp_now_s() - s0;
			ref_unit = i == 0 || s0 < ref_unit ? s0 : ref_unit;
		}
	}
	/* Energy over the timed steps, where the device counts it (NVML);
	 * the steps are synchronous, so the counter brackets their work. */
again:
	n = 0;
	nref = 0;
	sum = sum2 = 0;
	w0 = own_wait_ns();
	energy = hp_engine_energy_mj(e, &mj0) == 0;
	hp_engine_layer_times_reset(e);
	/* the sums start at 0 after the reset */
	split = hp_engine_layer_times(e, lt, c->spec.nlayers + 1, &steps,
				      NULL) == 0;
	c0[0] = c0[1] = c0[2] = c0[3] = 0;
	t0 = hp_now_s();
	while (n < o->max_steps) {
		double s = hp_now_s();
		if (o->stop && *o->stop) {
			rc = hp_error_set(err, HP_ECANCELED, "interrupted");
			goto out;
		}
		if ((rc = hp_engine_step(e, NULL, err)))
			goto out;
		t[n] = hp_now_s() - s;
		if (split) {
			/* this step's share of each class */
			hp_engine_layer_times(e, lt, c->spec.nlayers + 1,
					      &steps, NULL);
			class_sums(&c->spec, lt, c1);
			for (int k = 0; k < 4; k++) {
				cls[k][n] = c1[k] - c0[k];
				c0[k] = c1[k];
			}
		}
		sum += t[n];
		sum2 += t[n] * t[n];
		n++;
		/* The yardstick, right after: as many of its steps (counted
		 * at their median time, so that one stalled step does not
		 * starve the rest) as keep its share near ref_share, and one
		 * after each of the first 7 steps. */
		while (ref && nref < REF_MAX &&
		       ((nref < n && nref < 7) ||
			nref * ref_unit < o->ref_share * sum)) {
			double s0 = hp_now_s();
			if (hp_engine_step(ref, NULL, NULL)) {
				hp_engine_free(ref);
				ref = NULL;
				nref = 0;
				break;
			}
			rt[nref++] = hp_now_s() - s0;
			/* its current time: the median so far */
			if (nref % 4 == 3)
				ref_unit = median_of(rt, nref, tmp);
		}
		if (n >= o->min_steps) {
			double m = median_of(t, n, tmp);
			double var = (sum2 - sum * sum / n) / (n - 1);
			double se = 1.2533 * sqrt(var > 0 ? var : 0) / sqrt(n);
			if (se <= o->stable_rel * m)
				break;
			if (hp_now_s() - t0 >= o->max_seconds)
				break;
		}
	}
	elapsed = hp_now_s() - t0;
	/* Our threads waiting for a CPU while we measured (other work on
	 * the host took their cores): the times are not the device's. */
	w1 = own_wait_ns();
	r->cpu_pressure = w0 >= 0 && w1 >= w0 && elapsed > 0 && nthr > 0
			      ? (double)(w1 - w0) / (elapsed * 1e9 * nthr)
			      : NAN;
	if (r->cpu_pressure > o->max_pressure && attempt < o->retries) {
		struct timespec pause = {0, 200000000L * (attempt + 1)};
		attempt++;
		nanosleep(&pause, NULL);
		goto again;
	}
	r->attempts = attempt + 1;
	if (energy && hp_engine_energy_mj(e, &mj1) == 0 && mj1 > mj0 &&
	    elapsed > 0) {
		double j = (double)(mj1 - mj0) / 1000.0;
		r->energy_per_step_j = j / n;
		r->power_w = j / elapsed;
		snprintf(r->energy_source, sizeof(r->energy_source), "nvml");
	}
	/* Medians, like the step time: robust to a step the host stalled. */
	r->time_conv_s = split ? median_of(cls[0], n, tmp) : NAN;
	r->time_fc_s = split ? median_of(cls[1], n, tmp) : NAN;
	r->time_other_s = split ? median_of(cls[2], n, tmp) : NAN;
	r->time_loss_s = split ? median_of(cls[3], n, tmp) : NAN;
	mean = sum / n;
	r->steps = n;
	r->step_time_s = median_of(t, n, tmp);
	r->step_time_min_s = tmp[0];
	r->step_time_p90_s = tmp[(int)(0.9 * (n - 1))];
	r->step_time_cv =
	    n > 1 ? sqrt(fmax(0, (sum2 - sum * sum / n) / (n - 1))) / mean : 0;
	if (ref && nref > 0) {
		double rs = 0, rs2 = 0, rm;
		for (int i = 0; i < nref; i++) {
			rs += rt[i];
			rs2 += rt[i] * rt[i];
		}
		rm = rs / nref;
		r->ref_time_s = median_of(rt, nref, tmp);
		r->ref_time_cv =
		    nref > 1
			? sqrt(fmax(0, (rs2 - rs * rs / nref) / (nref - 1))) /
			      rm
			: 0;
		r->ref_steps = nref;
	}
	r->peak_mem_bytes = (int64_t)hp_engine_peak_bytes(e);
	if (getrusage(RUSAGE_SELF, &ru) == 0)
		r->peak_rss_bytes = (int64_t)ru.ru_maxrss * 1024;
	r->threads = o->threads > 0 ? o->threads : omp_get_num_procs();
	fill_identity(r, e, o);
	rc = 0;
out:
	free(t);
	free(tmp);
	free(lt);
	free(rt);
	for (int k = 0; k < 4; k++)
		free(cls[k]);
	hp_engine_free(ref);
	hp_engine_free(e);
	return rc;
}
