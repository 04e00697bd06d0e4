/*
 * loop.c - the training loop of hetpool-train.  Every rank holds the whole
 * model (an engine at its local batch) and the whole dataset; each step
 * draws one global batch from the seeded shuffle, each rank trains on its
 * contiguous slice, and the gradients are summed weighted by each rank's
 * share (local / global), so the update is the one a single worker would
 * make on the whole global batch.  Around that: the learning-rate
 * schedule, run-time rebalancing of the split, checkpoints, evaluation,
 * metrics and results.  docs/trainer.md is the design.
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "hetpool/ctx.h"
#include "hetpool/device.h"
#include "hetpool/estimate.h"
#include "hetpool/model.h"
#include "trainer.h"
#include "util/banned.h"

extern char **environ;

volatile sig_atomic_t tr_stop_signal;

/* Per-rank figures exchanged after every step. */
enum {
	CTL_COMPUTE_S,
	CTL_ALLREDUCE_S,
	CTL_LOSS_SUM, /* loss x local batch */
	CTL_CORRECT,
	CTL_FLAGS,
	CTL_N
};
#define FLAG_SIGNAL 1
#define FLAG_TIME 2

/* The smoothing of the loss for --stop-on-divergence (fastai's). */
#define LOSS_BETA 0.98

/* Synthetic data: test samples, and the seed of the data (not the run's:
 * runs with different seeds see the same data). */
#define SYNTH_TEST 2048
#define SYNTH_SEED 0x5eedda7aull

struct tr_run {
	const struct tr_opts *o;
	struct tr_comm *c;
	int R, r;
	/* model and data */
	struct hp_spec spec;
	uint64_t model_hash;
	uint64_t data_hash; /* of the training set: a staged copy matches */
	struct hp_dataset train, test;
	char data_desc[4200];
	bool has_bn;
	/* the split */
	int64_t B, *local, *off, min_local;
	int64_t spe, total;
	/* the engine */
	struct hp_engine_opts eo;
	struct hp_engine *e;
	char device[16];
	int cuda_index;
	char note[320]; /* why a cuda rank runs on the CPU */
	struct tr_nccl *nccl;
	/* buffers */
	float *x, *logits, *flat;
	int32_t *y;
	int64_t *perm, perm_epoch, *idx;
	int64_t nparam_elems, nbn_elems;
	int *bn_k; /* state tensors of the running statistics */
	int nbn_k;
	/* state */
	int64_t step, start_step;
	double t0, wall_before, energy_before_j;
	double loss_avg, loss_min;
	int64_t loss_n;
	uint64_t energy0_mj;
	bool energy_ok;
	struct hp_rebalance rb;
	int rebalances;
	json_t *pending; /* a rebalance event awaiting its "after" times */
	double last_spread;
	FILE *metrics;
	double *ctl, *all;
	double sum_step_s;
	int64_t steps_run;
	const char *stop_reason;
	bool cancelled;
	double test_loss, test_acc;
	int64_t test_n;
	bool evaluated;
};

static void vmsg(const char *kind, const char *fmt, va_list ap)
{
	char raw[1024], esc[2048];

	vsnprintf(raw, sizeof(raw), fmt, ap);
	hp_str_escape(raw, esc, sizeof(esc));
	fprintf(stderr, "hetpool-train: %s%s\n", kind, esc);
}

void tr_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("", fmt, ap);
	va_end(ap);
}

void tr_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("warning: ", fmt, ap);
	va_end(ap);
}

static void tr_note(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("note: ", fmt, ap);
	va_end(ap);
}

static char *path_in(const struct tr_run *t, const char *name)
{
	size_t n = strlen(t->o->out) + strlen(name) + 2;
	char *p = malloc(n);

	if (p)
		snprintf(p, n, "%s/%s", t->o->out, name);
	return p;
}

/* ---- data ---------------------------------------------------------- */

/* The folder dpkg says holds the package's train-images file. */
static int dpkg_data_dir(const char *pkg, const char *file, char *dir, size_t n)
{
	char *argv[] = {"dpkg", "-L", (char *)(uintptr_t)pkg, NULL};
	posix_spawn_file_actions_t fa;
	int fd[2], status, found = -1;
	pid_t pid;
	FILE *f;
	char line[4096];
	size_t fl = strlen(file);

	if (pipe(fd))
		return -1;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fd[1], 1);
	posix_spawn_file_actions_addclose(&fa, fd[0]);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	if (posix_spawnp(&pid, "dpkg", &fa, NULL, argv, environ)) {
		posix_spawn_file_actions_destroy(&fa);
		close(fd[0]);
		close(fd[1]);
		return -2; /* no dpkg to ask */
	}
	posix_spawn_file_actions_destroy(&fa);
	close(fd[1]);
	f = fdopen(fd[0], "r");
	while (f && fgets(line, sizeof(line), f)) {
		size_t l = strcspn(line, "\n");
		line[l] = '\0';
		if (found && l > fl + 1 && line[l - fl - 1] == '/' &&
		    !strcmp(line + l - fl, file)) {
			snprintf(dir, n, "%.*s", (int)(l - fl - 1), line);
			found = 0;
		}
	}
	if (f)
		fclose(f);
	else
		close(fd[0]);
	waitpid(pid, &status, 0);
	return found;
}

static int load_data(struct tr_run *t, struct hp_error *err)
{
	const char *d = t->o->data;
	char dir[4096];
	bool from_pkg = false;
	int rc;

	if (!strcmp(d, "synthetic")) {
		int64_t cls = t->spec.classes;
		/* the test set is what the evaluation reads: --eval-samples
		 * of it when fewer (sample i is the same whatever the size) */
		int64_t ntest =
		    t->o->eval_samples > 0 && t->o->eval_samples < SYNTH_TEST
			? t->o->eval_samples
			: SYNTH_TEST;
		rc =
		    hp_dataset_synthetic(t->o->synthetic_samples, t->spec.input,
					 cls, SYNTH_SEED, 0, &t->train, err);
		if (rc) {
			hp_error_prefix(err, "--synthetic-samples %lld",
					(long long)t->o->synthetic_samples);
			return rc;
		}
		rc = hp_dataset_synthetic(ntest, t->spec.input, cls, SYNTH_SEED,
					  1, &t->test, err);
		if (rc) {
			hp_error_prefix(err,
					"the test set (--eval-samples %lld)",
					(long long)ntest);
			return rc;
		}
		snprintf(t->data_desc, sizeof(t->data_desc),
			 "synthetic: %lld training and %lld test samples",
			 (long long)t->o->synthetic_samples, (long long)ntest);
	} else {
		if (!strcmp(d, "fashion-mnist")) {
			int dr = dpkg_data_dir("dataset-fashion-mnist",
					       "train-images-idx3-ubyte.gz",
					       dir, sizeof(dir));
			if (dr == -2)
				return hp_error_set(
				    err, HP_EINVAL,
				    "--data fashion-mnist: cannot run dpkg "
				    "(not on PATH?) to find the files of the "
				    "Debian package dataset-fashion-mnist; "
				    "give --data DIR, the folder of its IDX "
				    "files");
			from_pkg = true;
			if (dr)
				return hp_error_set(
				    err, HP_ENOENT,
				    "--data fashion-mnist: the Debian package "
				    "dataset-fashion-mnist is not installed "
				    "(dpkg -L finds no train-images-idx3-ubyte."
				    "gz); apt-get install "
				    "dataset-fashion-mnist "
				    "or give --data DIR");
		} else {
			struct stat st;
			if (stat(d, &st) || !S_ISDIR(st.st_mode))
				return hp_error_set(
				    err, HP_EINVAL,
				    "--data '%s': not fashion-mnist, synthetic "
				    "or a folder",
				    d);
			snprintf(dir, sizeof(dir), "%s", d);
		}
		rc = hp_dataset_load_dir(dir, "train", &t->train, err);
		if (!rc)
			rc = hp_dataset_load_dir(dir, "t10k", &t->test, err);
		if (rc == HP_ENOENT && from_pkg) {
			size_t l = strlen(err->msg);
			snprintf(err->msg + l, sizeof(err->msg) - l,
				 " (dpkg lists it: the package's files are "
				 "gone; apt-get install --reinstall "
				 "dataset-fashion-mnist, or give --data DIR)");
		}
		if (rc) {
			hp_error_prefix(err, "--data %s", d);
			return rc;
		}
		snprintf(t->data_desc, sizeof(t->data_desc), "%s (%s)", d, dir);
	}
	for (int k = 0; k < 2; k++) {
		const struct hp_dataset *ds = k ? &t->test : &t->train;
		size_t ml = strlen(t->o->model);
		/* an ONNX model (not a .json spec) trains at the data's
		 * shape when told it */
		bool onnx = ml < 5 || strcmp(t->o->model + ml - 5, ".json");
		char hint[160] = "";
		if (onnx)
			snprintf(hint, sizeof(hint),
				 "; --input-shape %lldx%lldx%lld trains an "
				 "ONNX model at the data's",
				 (long long)ds->shape[0],
				 (long long)ds->shape[1],
				 (long long)ds->shape[2]);
		if (memcmp(ds->shape, t->spec.input, sizeof(t->spec.input)))
			return hp_error_set(
			    err, HP_ESHAPE,
			    "the data's %s samples are %lldx%lldx%lld, the "
			    "model's input is %lldx%lldx%lld%s",
			    k ? "test" : "training", (long long)ds->shape[0],
			    (long long)ds->shape[1], (long long)ds->shape[2],
			    (long long)t->spec.input[0],
			    (long long)t->spec.input[1],
			    (long long)t->spec.input[2], hint);
	}
	for (int k = 0; k < 2; k++) {
		const struct hp_dataset *ds = k ? &t->test : &t->train;
		if (ds->classes > t->spec.classes)
			return hp_error_set(
			    err, HP_ESHAPE,
			    "--data %s: the %s labels go up to %lld (%lld "
			    "classes), the model has %lld",
			    t->o->data, k ? "test" : "training",
			    (long long)ds->classes - 1, (long long)ds->classes,
			    (long long)t->spec.classes);
	}
	t->data_hash =
	    hp_fnv1a64(t->train.x,
		       (size_t)(t->train.n * t->train.shape[0] *
				t->train.shape[1] * t->train.shape[2]),
		       HP_FNV1A64_INIT);
	/* the labels a byte each while they fit in one (as they were stored
	 * before labels took two: a checkpoint's data_hash stays valid),
	 * else two, little-endian */
	for (int64_t i = 0; i < t->train.n; i++) {
		uint8_t b[2] = {(uint8_t)(t->train.y[i] & 0xff),
				(uint8_t)(t->train.y[i] >> 8)};
		t->data_hash =
		    hp_fnv1a64(b, t->train.classes > 256 ? 2 : 1, t->data_hash);
	}
	hp_dataset_stats(&t->train);
	t->test.mean = t->train.mean;
	t->test.std = t->train.std;
	return 0;
}

/* ---- the engine ---------------------------------------------------- */

/* "cpu", "cuda" or "cuda:K" of rank r in the --devices list. */
static int rank_device(const struct tr_run *t, char *dev, size_t n,
		       struct hp_error *err)
{
	const char *s = t->o->devices, *p;
	int i = 0;
	size_t len;
	int64_t k;

	snprintf(dev, n, "cpu");
	if (!s)
		return 0;
	p = s;
	if (strchr(s, ',')) {
		int items = 1;
		for (const char *q = s; *q; q++)
			items += *q == ',';
		if (items != t->R)
			return hp_error_set(err, HP_EINVAL,
					    "--devices lists %d devices for %d "
					    "ranks (give one per rank, or one "
					    "for all)",
					    items, t->R);
		while (i < t->r && (p = strchr(p, ',')))
			p++, i++;
		if (!p)
			return hp_error_set(err, HP_EINVAL,
					    "--devices lists fewer devices "
					    "than the %d ranks",
					    t->R);
	}
	len = strcspn(p, ",");
	if (len >= n)
		return hp_error_set(err, HP_EINVAL, "--devices: '%.*s' unknown",
				    (int)(len > 32 ? 32 : len), p);
	snprintf(dev, n, "%.*s", (int)len, p);
	if (!strcmp(dev, "cpu") || !strcmp(dev, "cuda"))
		return 0;
	if (!strncmp(dev, "cuda:", 5) && !hp_parse_i64(dev + 5, 0, 1023, &k))
		return 0;
	return hp_error_set(err, HP_EINVAL,
			    "--devices: '%s' is not cpu, cuda or cuda:K", dev);
}

/* Threads: as given, else the cores this rank is bound to when the
 * launcher bound it, else the host's cores shared by its ranks. */
static int auto_threads(const struct tr_run *t)
{
	cpu_set_t set;
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	int bound = 0;

	if (t->o->threads > 0)
		return t->o->threads;
	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		bound = CPU_COUNT(&set);
	if (online < 1)
		online = 1;
	if (bound > 0 && bound < online)
		return bound;
	return (int)(online / t->c->local_size > 0 ? online / t->c->local_size
						   : 1);
}

static struct hp_engine *engine_at(struct tr_run *t, int64_t batch,
				   struct hp_error *err)
{
	t->eo.batch = batch;
	return hp_engine_new(&t->spec, &t->eo, err);
}

/* The training state (every tensor and the counters) held on the host
 * while the engine is rebuilt. */
struct held_state {
	float **v;
	int n;
	struct hp_engine_counters cn;
};

static void held_release(struct held_state *h)
{
	for (int k = 0; h->v && k < h->n; k++)
		free(h->v[k]);
	free(h->v);
	memset(h, 0, sizeof(*h));
}

static int hold_state(struct hp_engine *e, struct held_state *h,
		      struct hp_error *err)
{
	int n = hp_engine_state_count(e);

	memset(h, 0, sizeof(*h));
	if (!(h->v = calloc((size_t)(n ? n : 1), sizeof(*h->v))))
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	h->n = n;
	for (int k = 0; k < n; k++) {
		struct hp_engine_state_info si;
		hp_engine_state_info(e, k, &si);
		if (!(h->v[k] = malloc((size_t)(si.numel ? si.numel : 1) *
				       sizeof(float))))
			return hp_error_set(err, HP_ENOMEM, "out of memory");
		if (hp_engine_state_get(e, k, h->v[k], err))
			return err->code ? err->code : HP_EINTERNAL;
	}
	hp_engine_counters_get(e, &h->cn);
	return 0;
}

static int put_state(struct hp_engine *e, const struct held_state *h,
		     struct hp_error *err)
{
	for (int k = 0; k < h->n; k++)
		if (hp_engine_state_set(e, k, h->v[k], err))
			return err->code ? err->code : HP_EINTERNAL;
	if (hp_engine_counters_set(e, &h->cn))
		return hp_error_set(err, HP_EINTERNAL,
				    "the optimizer's step counters did not "
				    "carry over to the rebuilt engine");
	return 0;
}

/*
 * This rank's engine at a new local batch, the state carried over.  One
 * engine at a time: on a GPU the old and the new one together need not
 * fit its memory, so the state waits on the host in between.  A new batch
 * that does not fit leaves the engine at the old one, its state kept, and
 * says so.
 */
static int rebuild(struct tr_run *t, int64_t batch, struct hp_error *err)
{
	struct held_state h;
	int64_t was = t->eo.batch;
	int rc;

	if (batch == was && t->e)
		return 0;
	if ((rc = hold_state(t->e, &h, err))) {
		held_release(&h);
		return rc;
	}
	hp_engine_free(t->e);
	if (!(t->e = engine_at(t, batch, err))) {
		struct hp_error back = {0};
		rc = err->code ? err->code : HP_EINTERNAL;
		hp_error_prefix(err, "rank %d on %s at local batch %lld", t->r,
				t->device, (long long)batch);
		if ((t->e = engine_at(t, was, &back)) &&
		    put_state(t->e, &h, &back)) {
			hp_engine_free(t->e);
			t->e = NULL;
		}
		held_release(&h);
		return rc;
	}
	rc = put_state(t->e, &h, err);
	held_release(&h);
	return rc;
}

static int open_engine(struct tr_run *t, struct hp_error *err)
{
	int64_t k = 0;

	hp_engine_opts_init(&t->eo);
	t->eo.device = t->device;
	t->eo.threads = auto_threads(t);
	t->eo.opt = t->o->opt;
	t->eo.momentum = t->o->momentum;
	t->eo.weight_decay = t->o->weight_decay;
	t->eo.seed = t->o->seed;
	t->eo.lr = 0; /* the plan's, once the data sets the steps */
	if (!strncmp(t->device, "cuda:", 5))
		hp_parse_i64(t->device + 5, 0, 1023, &k);
	t->cuda_index = (int)k;
	t->e = engine_at(t, t->local[t->r], err);
	if (!t->e && !strncmp(t->device, "cuda", 4) && t->o->cpu_fallback &&
	    (err->code == HP_EDEVICE || err->code == HP_EINTERNAL ||
	     err->code == HP_EUNSUPP)) {
		snprintf(
		    t->note, sizeof(t->note),
		    "%.15s requested, not usable here (%.250s): ran on the "
		    "CPU",
		    t->device, err->msg);
		tr_warn("rank %d: %s", t->r, t->note);
		hp_error_clear(err);
		snprintf(t->device, sizeof(t->device), "cpu");
		t->eo.device = t->device;
		t->e = engine_at(t, t->local[t->r], err);
	}
	if (!t->e && err->code == HP_ETOOBIG) {
		size_t n;
		hp_error_prefix(err, "rank %d on %s", t->r, t->device);
		n = strlen(err->msg);
		/* a sample too large for the engine: no batch helps */
		if (!strstr(err->msg, "elements a sample"))
			snprintf(err->msg + n, sizeof(err->msg) - n,
				 "; give a smaller --batch, or more ranks to "
				 "share it");
	}
	return t->e ? 0 : (err->code ? err->code : HP_EINTERNAL);
}

/* ---- the gradient all-reduce ---------------------------------------- */

/* The flat buffer the gradients and running statistics go through (this
 * rank's own: no other rank is asked). */
static int setup_flat(struct tr_run *t, struct hp_error *err)
{
	int nb = 0;

	t->nparam_elems = hp_engine_param_elems(t->e);
	for (int k = 0; k < hp_engine_state_count(t->e); k++) {
		struct hp_engine_state_info si;
		hp_engine_state_info(t->e, k, &si);
		if (si.param < 0) {
			nb++;
			t->nbn_elems += si.numel;
		}
	}
	t->has_bn = nb > 0;
	t->bn_k = calloc((size_t)nb + 1, sizeof(*t->bn_k));
	if (!t->bn_k)
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	for (int k = 0; k < hp_engine_state_count(t->e); k++) {
		struct hp_engine_state_info si;
		hp_engine_state_info(t->e, k, &si);
		if (si.param < 0)
			t->bn_k[t->nbn_k++] = k;
	}
	t->flat = malloc((size_t)(t->nparam_elems + t->nbn_elems + 1) *
			 sizeof(float));
	if (!t->flat)
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	return 0;
}

/*
 * NCCL when every rank is a GPU and the build has it, else MPI.  Every
 * rank calls it, and only once all have set up (agree()): a rank that
 * failed before it would leave the others waiting in its collective.
 */
static int setup_transport(struct tr_run *t, struct hp_error *err)
{
	int not_gpu = strncmp(t->device, "cuda", 4) != 0;

	if (t->R < 2)
		return 0;
	if (tr_allreduce_max_int(t->c, &not_gpu))
		return hp_error_set(err, HP_EIO, "MPI all-reduce failed");
	if (!not_gpu && tr_nccl_available()) {
		t->nccl = tr_nccl_new(t->c, t->cuda_index, err);
		if (!t->nccl)
			return err->code ? err->code : HP_EDEVICE;
	}
	return 0;
}

/*
 * Sum every rank's gradients weighted by its share, in place in the
 * engine, and average the batch norms' running statistics the same way
 * (so every rank holds the same state).
 */
static int reduce(struct tr_run *t, struct hp_error *err)
{
	float w = (float)((double)t->local[t->r] / (double)t->B);
	int64_t n = t->nparam_elems, o = 0;
	int rc;

	if (t->R < 2)
		return 0;
	if (t->nccl) {
		void *dev, *stream;
		int64_t nf;
		if ((rc = hp_engine_grads_device(t->e, &dev, &nf, &stream)))
			return hp_error_set(err, rc,
					    "the engine gives no device "
					    "gradients");
		if ((rc = tr_nccl_allreduce_weighted(t->nccl, dev, nf, w,
						     stream, err)))
			return rc;
		n = 0; /* only the running statistics go over MPI */
	} else if ((rc = hp_engine_grads_get(t->e, t->flat, err))) {
		return rc;
	}
	for (int i = 0; i < t->nbn_k; i++) {
		struct hp_engine_state_info si;
		hp_engine_state_info(t->e, t->bn_k[i], &si);
		if ((rc = hp_engine_state_get(t->e, t->bn_k[i], t->flat + n + o,
					      err)))
			return rc;
		o += si.numel;
	}
	for (int64_t i = 0; i < n + o; i++)
		t->flat[i] *= w;
	if (tr_allreduce_f32(t->c, t->flat, n + o))
		return hp_error_set(err, HP_EIO, "MPI all-reduce failed");
	if (n && (rc = hp_engine_grads_set(t->e, t->flat, err)))
		return rc;
	o = 0;
	for (int i = 0; i < t->nbn_k; i++) {
		struct hp_engine_state_info si;
		hp_engine_state_info(t->e, t->bn_k[i], &si);
		if ((rc = hp_engine_state_set(t->e, t->bn_k[i], t->flat + n + o,
					      err)))
			return rc;
		o += si.numel;
	}
	return 0;
}

/* ---- hashes, checkpoints ------------------------------------------- */

/* FNV-1a of the parameters (weights_only) or of the whole state. */
static int state_hash(struct tr_run *t, bool weights_only, uint64_t *h,
		      struct hp_error *err)
{
	int n = hp_engine_state_count(t->e), rc;

	*h = HP_FNV1A64_INIT;
	for (int k = 0; k < n; k++) {
		struct hp_engine_state_info si;
		float *buf;
		hp_engine_state_info(t->e, k, &si);
		if (weights_only && k >= hp_engine_param_count(t->e))
			break;
		buf = malloc((size_t)(si.numel ? si.numel : 1) * sizeof(*buf));
		if (!buf)
			return hp_error_set(err, HP_ENOMEM, "out of memory");
		rc = hp_engine_state_get(t->e, k, buf, err);
		if (!rc)
			*h = hp_fnv1a64(buf, (size_t)si.numel * sizeof(*buf),
					*h);
		free(buf);
		if (rc)
			return rc;
	}
	return 0;
}

static json_t *i64_array(const int64_t *v, int n)
{
	json_t *a = json_array();

	for (int i = 0; a && i < n; i++)
		json_array_append_new(a, json_integer(v[i]));
	return a;
}

static double wall_total(const struct tr_run *t)
{
	return t->wall_before + (hp_now_s() - t->t0);
}

static int energy_j(struct tr_run *t, double *j)
{
	uint64_t mj;

	if (!t->energy_ok || hp_engine_energy_mj(t->e, &mj))
		return -1;
	*j = (double)(mj - t->energy0_mj) / 1000.0;
	return 0;
}

/* hp_ckpt_write_from()'s fill: the engine's state tensor i */
static int state_fill(void *e, int i, float *buf, struct hp_error *err)
{
	tr_watchdog_beat(); /* a large state takes a while to write */
	return hp_engine_state_get(e, i, buf, err);
}

/*
 * A checkpoint after step t->step: every rank checks its weights against
 * rank 0's (they must be the same bits), then rank 0 writes the file.
 */
static int checkpoint(struct tr_run *t, struct hp_error *err)
{
	struct hp_ckpt ck;
	uint64_t h;
	double mine[2], *all;
	int rc, bad = 0;
	char *path;
	double ej = 0;

	tr_watchdog_beat();
	if ((rc = state_hash(t, false, &h, err)))
		return rc;
	mine[0] = (double)(h >> 32);
	mine[1] = (double)(h & 0xffffffffu);
	all = calloc((size_t)t->R * 2, sizeof(*all));
	if (!all)
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	rc = tr_allgather_f64(t->c, mine, 2, all);
	for (int r = 1; !rc && r < t->R; r++)
		if (all[2 * r] != all[0] || all[2 * r + 1] != all[1])
			bad = r;
	free(all);
	if (rc)
		return hp_error_set(err, HP_EIO, "MPI all-gather failed");
	if (bad)
		return hp_error_set(err, HP_EINTERNAL,
				    "rank %d's training state differs from "
				    "rank 0's at step %lld",
				    bad, (long long)t->step);
	if (t->r != 0)
		return 0;
	hp_ckpt_init(&ck);
	ck.meta = json_pack(
	    "{s:I, s:I, s:i, s:I, s:o, s:I, s:s, s:s, s:s, s:{s:f, s:I, s:f}, "
	    "s:f, s:f, s:i}",
	    "step", (json_int_t)t->step, "epoch",
	    (json_int_t)(t->spe ? t->step / t->spe : 0), "ranks", t->R,
	    "global_batch", (json_int_t)t->B, "local_batches",
	    i64_array(t->local, t->R), "seed", (json_int_t)t->o->seed,
	    "optimizer", t->o->opt == HP_OPT_ADAM ? "adam" : "sgd", "model",
	    t->spec.name ? t->spec.name : "", "data", t->o->data, "loss_ema",
	    "avg", t->loss_avg, "n", (json_int_t)t->loss_n, "min",
	    isfinite(t->loss_min) ? t->loss_min : -1.0, "wall_s", wall_total(t),
	    "energy_j", t->energy_before_j + (energy_j(t, &ej) ? 0 : ej),
	    "rebalances", t->rebalances);
	if (ck.meta) {
		struct hp_engine_counters cn;
		hp_engine_counters_get(t->e, &cn);
		json_object_set_new(ck.meta, "updates",
				    json_integer((json_int_t)cn.updates));
		json_object_set_new(ck.meta, "forwards",
				    json_integer((json_int_t)cn.forwards));
		json_object_set_new(ck.meta, "momentum",
				    json_real(t->o->momentum));
		json_object_set_new(ck.meta, "weight_decay",
				    json_real(t->o->weight_decay));
	}
	if (ck.meta) {
		char hx[24];
		snprintf(hx, sizeof(hx), "%016llx",
			 (unsigned long long)t->model_hash);
		json_object_set_new(ck.meta, "model_hash", json_string(hx));
		snprintf(hx, sizeof(hx), "%016llx",
			 (unsigned long long)t->data_hash);
		json_object_set_new(ck.meta, "data_hash", json_string(hx));
	}
	rc = ck.meta ? 0 : HP_ENOMEM;
	/* declared here, each tensor's floats got from the engine as it
	 * is written: VGG16's state copied whole was 1.1 GB more */
	for (int k = 0; !rc && k < hp_engine_state_count(t->e); k++) {
		struct hp_engine_state_info si;
		hp_engine_state_info(t->e, k, &si);
		rc = hp_ckpt_add(&ck, si.name, si.numel, NULL);
	}
	if (rc == HP_ENOMEM)
		hp_error_set(err, rc, "out of memory");
	path = path_in(t, "checkpoint");
	if (!rc && !path)
		rc = hp_error_set(err, HP_ENOMEM, "out of memory");
	if (!rc)
		rc = hp_ckpt_write_from(path, &ck, state_fill, t->e, err);
	free(path);
	hp_ckpt_release(&ck);
	return rc;
}

static int64_t meta_int(json_t *m, const char *k, int64_t def)
{
	json_t *v = json_object_get(m, k);

	return json_is_integer(v) ? (int64_t)json_integer_value(v) : def;
}

/*
 * The figures of a checkpoint's meta the run goes on from, in range (its
 * CRC says the bytes are the ones written, not that a hand or another
 * program wrote sense): the step within this run, a split of the global
 * batch, counters that count.
 */
static int check_meta(const struct tr_run *t, json_t *m, struct hp_error *err)
{
	json_t *step = json_object_get(m, "step"),
	       *lb = json_object_get(m, "local_batches");
	int64_t sum = 0;
	static const char *const counts[] = {"updates", "forwards",
					     "rebalances"};
	/* the time and energy spent before, added to this run's */
	static const char *const sums[] = {"wall_s", "energy_j"};

	if (!json_is_integer(step) || json_integer_value(step) < 0)
		return hp_error_set(err, HP_EINVAL,
				    "the checkpoint's \"step\" is not a "
				    "count of steps: the file is damaged");
	if (json_integer_value(step) > t->total)
		return hp_error_set(
		    err, HP_EINVAL,
		    "the checkpoint in '%s' is at step %lld, past this run's "
		    "%lld steps: give more --steps (or --epochs) to go on",
		    t->o->out, (long long)json_integer_value(step),
		    (long long)t->total);
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		json_t *c = json_object_get(m, counts[i]);
		if (c && (!json_is_integer(c) || json_integer_value(c) < 0))
			return hp_error_set(err, HP_EINVAL,
					    "the checkpoint's \"%s\" is not "
					    "a count: the file is damaged",
					    counts[i]);
	}
	/* a re-split follows a step: never more of them than steps */
	if (meta_int(m, "rebalances", 0) > json_integer_value(step) ||
	    meta_int(m, "rebalances", 0) > INT_MAX)
		return hp_error_set(err, HP_EINVAL,
				    "the checkpoint's \"rebalances\" is more "
				    "than its %lld steps: the file is damaged",
				    (long long)json_integer_value(step));
	for (size_t i = 0; i < sizeof(sums) / sizeof(sums[0]); i++) {
		json_t *c = json_object_get(m, sums[i]);
		if (c &&
		    (!json_is_number(c) || !isfinite(json_number_value(c)) ||
		     json_number_value(c) < 0))
			return hp_error_set(err, HP_EINVAL,
					    "the checkpoint's \"%s\" is not "
					    "a finite amount >= 0: the file is "
					    "damaged",
					    sums[i]);
	}
	if (!lb)
		return 0; /* the split planned */
	for (int r = 0; r < t->R && json_array_size(lb) == (size_t)t->R; r++) {
		json_t *b = json_array_get(lb, r);
		if (!json_is_integer(b) || json_integer_value(b) < 1 ||
		    json_integer_value(b) > t->B) {
			sum = -1;
			break;
		}
		sum += json_integer_value(b);
	}
	if (sum != t->B)
		return hp_error_set(err, HP_EINVAL,
				    "the checkpoint's \"local_batches\" is "
				    "not a split of the global batch %lld "
				    "among %d rank%s: the file is damaged",
				    (long long)t->B, t->R, t->R > 1 ? "s" : "");
	return 0;
}

/* --resume: rank 0 reads the checkpoint and sends its bytes to all. */
static int resume(struct tr_run *t, struct hp_error *err)
{
	char *path = path_in(t, "checkpoint"), *buf = NULL;
	size_t len = 0;
	int64_t n = 0;
	struct hp_ckpt ck;
	json_t *m, *lb, *v;
	int rc = 0, missing = 0;
	const char *s;
	char hx[24];

	hp_ckpt_init(&ck);
	if (!path) {
		/* the other ranks are in the broadcasts below: end them all */
		tr_error("rank %d: --resume: out of memory", t->r);
		tr_comm_abort(t->c, TR_EXIT_FAIL);
	}
	if (t->r == 0) {
		rc = hp_read_file(path, (size_t)1 << 40, &buf, &len, err);
		if (rc == HP_ENOENT) {
			missing = 1;
			rc = 0;
		} else if (rc) {
			hp_error_prefix(err, "%s", path);
		}
		n = rc ? -1 : (int64_t)len;
	}
	if (tr_bcast(t->c, &missing, sizeof(missing), 0) ||
	    tr_bcast(t->c, &n, sizeof(n), 0)) {
		rc = hp_error_set(err, HP_EIO, "MPI broadcast failed");
		goto done;
	}
	if (missing) {
		if (t->r == 0)
			tr_warn("--resume: no checkpoint in '%s': starting at "
				"step 0",
				t->o->out);
		goto done;
	}
	if (n < 0) {
		if (t->r != 0)
			rc = hp_error_set(err, HP_EIO,
					  "rank 0 could not read the "
					  "checkpoint");
		goto done;
	}
	if (t->r != 0 && !(buf = malloc((size_t)n + 1))) {
		/* rank 0 is in the broadcast below: end them all */
		tr_error("rank %d: --resume: out of memory for the %lld-byte "
			 "checkpoint",
			 t->r, (long long)n);
		tr_comm_abort(t->c, TR_EXIT_FAIL);
	}
	if (tr_bcast(t->c, buf, n, 0)) {
		rc = hp_error_set(err, HP_EIO, "MPI broadcast failed");
		goto done;
	}
	/* in place: a second copy of the floats was the checkpoint's size
	 * again (1.1 GB for VGG16) on top of the engine */
	if ((rc = hp_ckpt_parse_in_place(buf, (size_t)n, &ck, err))) {
		hp_error_prefix(err, "%s", path);
		goto done;
	}
	buf = NULL; /* ck's */
	m = ck.meta;
	snprintf(hx, sizeof(hx), "%016llx", (unsigned long long)t->model_hash);
	s = json_string_value(json_object_get(m, "model_hash"));
	if (!s || strcmp(s, hx)) {
		rc = hp_error_set(err, HP_EINVAL,
				  "the checkpoint in '%s' is of another model",
				  t->o->out);
		goto done;
	}
	if (meta_int(m, "ranks", -1) != t->R ||
	    meta_int(m, "global_batch", -1) != t->B) {
		rc = hp_error_set(
		    err, HP_EINVAL,
		    "the checkpoint was written by %lld ranks at global batch "
		    "%lld; this run has %d ranks at %lld",
		    (long long)meta_int(m, "ranks", -1),
		    (long long)meta_int(m, "global_batch", -1), t->R,
		    (long long)t->B);
		goto done;
	}
	s = json_string_value(json_object_get(m, "optimizer"));
	if (!s || strcmp(s, t->o->opt == HP_OPT_ADAM ? "adam" : "sgd") ||
	    meta_int(m, "seed", -1) != (int64_t)t->o->seed) {
		rc = hp_error_set(err, HP_EINVAL,
				  "the checkpoint was written with another "
				  "optimizer or --seed");
		goto done;
	}
	/* the optimizer's settings (checkpoints since 2 December say them) */
	{
		const struct {
			const char *key, *opt;
			double now;
			bool used;
		} set[] = {{"momentum", "--momentum", t->o->momentum,
			    t->o->opt == HP_OPT_SGD},
			   {"weight_decay", "--weight-decay",
			    t->o->weight_decay, true}};
		for (size_t k = 0; k < sizeof(set) / sizeof(set[0]); k++)
			if (set[k].used &&
			    (v = json_object_get(m, set[k].key)) &&
			    json_number_value(v) != set[k].now) {
				rc = hp_error_set(
				    err, HP_EINVAL,
				    "the checkpoint was written with %s %g; "
				    "this run has %g",
				    set[k].opt, json_number_value(v),
				    set[k].now);
				goto done;
			}
	}
	if ((rc = check_meta(t, m, err)))
		goto done;
	/* the data by content: a copy staged elsewhere is the same data */
	snprintf(hx, sizeof(hx), "%016llx", (unsigned long long)t->data_hash);
	s = json_string_value(json_object_get(m, "data_hash"));
	if (!s || strcmp(s, hx)) {
		s = json_string_value(json_object_get(m, "data"));
		rc = hp_error_set(err, HP_EINVAL,
				  "the checkpoint was trained on other data "
				  "(--data %.200s)",
				  s ? s : "?");
		goto done;
	}
	/* the split in force when it was written (rebalancing moves it) */
	lb = json_object_get(m, "local_batches");
	for (int r = 0; lb && r < t->R; r++)
		t->local[r] = json_integer_value(json_array_get(lb, r));
	hp_split_offsets(t->local, t->R, t->off);
	if ((rc = rebuild(t, t->local[t->r], err)))
		goto done;
	for (int k = 0; k < hp_engine_state_count(t->e); k++) {
		struct hp_engine_state_info si;
		const struct hp_ckpt_tensor *ct;
		hp_engine_state_info(t->e, k, &si);
		ct = hp_ckpt_find(&ck, si.name);
		if (!ct || ct->numel != si.numel) {
			rc = hp_error_set(err, HP_EINVAL,
					  "the checkpoint lacks tensor '%s' "
					  "or its size differs",
					  si.name);
			goto done;
		}
		if ((rc = hp_engine_state_set(t->e, k, ct->data, err)))
			goto done;
	}
	{
		struct hp_engine_counters cn;
		json_t *le = json_object_get(m, "loss_ema");
		t->step = t->start_step = meta_int(m, "step", 0);
		cn.updates = meta_int(m, "updates", t->step);
		cn.forwards = (uint64_t)meta_int(m, "forwards", t->step);
		hp_engine_counters_set(t->e, &cn);
		t->loss_avg = json_number_value(json_object_get(le, "avg"));
		t->loss_n = meta_int(le, "n", 0);
		t->loss_min = json_number_value(json_object_get(le, "min"));
		if (t->loss_min < 0)
			t->loss_min = INFINITY;
		t->wall_before =
		    json_number_value(json_object_get(m, "wall_s"));
		t->energy_before_j =
		    json_number_value(json_object_get(m, "energy_j"));
		t->rebalances = (int)meta_int(m, "rebalances", 0);
	}
done:
	hp_ckpt_release(&ck);
	free(buf);
	free(path);
	return rc;
}

/* ---- evaluation ---------------------------------------------------- */

/*
 * One sample's cross-entropy and whether its top class is the label.  A
 * sample with a logit that is not finite (a diverged net) predicts
 * nothing: it is not counted correct, and its loss is NaN (the run's
 * test loss is then reported as null).  Counted by the comparisons, a
 * NaN row would "predict" class 0 and a diverged net would score 1/k.
 */
static void score(const float *z, int64_t k, int32_t label, double *loss,
		  int64_t *correct)
{
	double mx = z[0], s = 0;
	int64_t arg = 0;

	for (int64_t j = 0; j < k; j++)
		if (!isfinite(z[j])) {
			*loss += NAN;
			return;
		}
	for (int64_t j = 1; j < k; j++)
		if (z[j] > mx) {
			mx = z[j];
			arg = j;
		}
	for (int64_t j = 0; j < k; j++)
		s += exp((double)z[j] - mx);
	*loss += mx + log(s) - z[label];
	*correct += arg == label;
}

/* The test set (or its first eval_samples), split over the ranks. */
static int evaluate(struct tr_run *t, struct hp_error *err)
{
	int64_t n = t->test.n, b = t->local[t->r], k = t->spec.classes;
	int64_t share[TR_MAX_RANKS], first[TR_MAX_RANKS], correct = 0;
	double w[TR_MAX_RANKS], sums[2] = {0, 0}, loss = 0;
	int rc;

	if (t->o->eval_samples > 0 && t->o->eval_samples < n)
		n = t->o->eval_samples;
	for (int r = 0; r < t->R; r++)
		w[r] = (double)t->local[r];
	if (hp_split_proportional(n, t->R, w, 0, share))
		hp_split_even(n, t->R, share);
	hp_split_offsets(share, t->R, first);
	for (int64_t i = 0; i < share[t->r]; i += b) {
		int64_t m = share[t->r] - i < b ? share[t->r] - i : b;
		for (int64_t j = 0; j < b; j++)
			t->idx[j] = first[t->r] + i + (j < m ? j : m - 1);
		hp_dataset_gather(&t->test, t->idx, b, t->x, t->y);
		if ((rc = hp_engine_set_input(t->e, t->x, t->y, err)) ||
		    (rc = hp_engine_infer(t->e, NULL, err)) ||
		    (rc = hp_engine_output_get(t->e, t->logits, err)))
			return rc;
		for (int64_t j = 0; j < m; j++)
			score(t->logits + j * k, k, t->y[j], &loss, &correct);
		tr_watchdog_beat();
	}
	sums[0] = loss;
	sums[1] = (double)correct;
	if (tr_allreduce_f64(t->c, sums, 2))
		return hp_error_set(err, HP_EIO, "MPI all-reduce failed");
	t->test_n = n;
	t->test_loss = sums[0] / (double)n;
	t->test_acc = sums[1] / (double)n;
	t->evaluated = true;
	return 0;
}

/* ---- metrics ------------------------------------------------------- */

/*
 * One line of metrics.jsonl, flushed.  A line that cannot be written (a
 * full disk) ends the run as a checkpoint that cannot be written does:
 * training on while the record of it is lost would end in a run that
 * looks whole and is not.
 */
static void metrics_line(struct tr_run *t, const char *s)
{
	if (t->r != 0 || !t->metrics || !s)
		return;
	errno = 0;
	if (fputs(s, t->metrics) == EOF || fputc('\n', t->metrics) == EOF ||
	    fflush(t->metrics) == EOF || ferror(t->metrics)) {
		tr_error("cannot write '%s/metrics.jsonl' at step %lld: %s",
			 t->o->out, (long long)t->step,
			 errno ? strerror(errno) : "write error");
		tr_comm_abort(t->c, TR_EXIT_FAIL);
	}
}

/* An evaluation's line; a diverged net's loss is not finite: null (jansson
 * makes no number of a NaN, and the whole line would be lost). */
static json_t *eval_event(const struct tr_run *t)
{
	return json_pack("{s:s, s:I, s:o, s:f}", "event", "eval", "at_step",
			 (json_int_t)t->step, "test_loss",
			 isfinite(t->test_loss) ? json_real(t->test_loss)
						: json_null(),
			 "test_accuracy", t->test_acc);
}

static void metrics_json(struct tr_run *t, json_t *o)
{
	char *s;

	if (!o)
		return;
	s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER |
			      JSON_REAL_PRECISION(9));
	metrics_line(t, s);
	free(s);
	json_decref(o);
}

static json_t *f64_array(const double *v, int n)
{
	json_t *a = json_array();

	for (int i = 0; a && i < n; i++)
		json_array_append_new(a, json_real(v[i]));
	return a;
}

/*
 * A re-split's event line is written once the window after it has been
 * measured (med: its medians; NULL: the run ended first), so one line holds
 * the times before and after.
 */
static void finish_event(struct tr_run *t, const double *med)
{
	json_object_set_new(t->pending, "rank_step_s_after",
			    med ? f64_array(med, t->R) : json_null());
	json_object_set_new(t->pending, "spread_after",
			    med ? json_real(hp_time_spread(med, t->R))
				: json_null());
	json_object_set_new(t->pending, "measured_at_step",
			    med ? json_integer((json_int_t)t->step)
				: json_null());
	metrics_json(t, t->pending); /* takes the reference */
	t->pending = NULL;
}

/* ---- one step ------------------------------------------------------ */

static int64_t count_correct(const float *z, const int32_t *y, int64_t n,
			     int64_t k)
{
	int64_t c = 0;

	for (int64_t i = 0; i < n; i++) {
		const float *zi = z + i * k;
		int64_t arg = 0;
		for (int64_t j = 1; j < k; j++)
			if (zi[j] > zi[arg])
				arg = j;
		c += arg == y[i];
	}
	return c;
}

static int train_step(struct tr_run *t, struct hp_error *err)
{
	int64_t epoch = t->step / t->spe, pos = t->step % t->spe;
	int64_t b = t->local[t->r];
	double ts, tc, ta, loss = 0, lr;
	int rc;

	if (epoch != t->perm_epoch) {
		hp_shuffle(t->train.n, t->o->seed, epoch, t->perm);
		t->perm_epoch = epoch;
	}
	ts = hp_now_s();
	hp_dataset_gather(&t->train, t->perm + pos * t->B + t->off[t->r], b,
			  t->x, t->y);
	hp_engine_set_sample_offset(t->e, t->off[t->r]);
	if ((rc = hp_engine_set_input(t->e, t->x, t->y, err)) ||
	    (rc = hp_engine_forward(t->e, &loss, err)) ||
	    (rc = hp_engine_output_get(t->e, t->logits, err)) ||
	    (rc = hp_engine_backward(t->e, err)))
		return rc;
	tc = hp_now_s();
	if ((rc = reduce(t, err)))
		return rc;
	ta = hp_now_s();
	lr = hp_lr_at(&t->o->lr, t->step);
	hp_engine_set_lr(t->e, lr);
	if ((rc = hp_engine_update(t->e, err)))
		return rc;
	t->ctl[CTL_COMPUTE_S] = tc - ts;
	t->ctl[CTL_ALLREDUCE_S] = ta - tc;
	t->ctl[CTL_LOSS_SUM] = loss * (double)b;
	t->ctl[CTL_CORRECT] =
	    (double)count_correct(t->logits, t->y, b, t->spec.classes);
	t->ctl[CTL_FLAGS] =
	    (tr_stop_signal ? FLAG_SIGNAL : 0) |
	    (t->o->max_seconds > 0 && hp_now_s() - t->t0 >= t->o->max_seconds
		 ? FLAG_TIME
		 : 0);
	if (tr_allgather_f64(t->c, t->ctl, CTL_N, t->all))
		return hp_error_set(err, HP_EIO, "MPI all-gather failed");
	t->step++;
	{
		double step_s[TR_MAX_RANKS], ar_s[TR_MAX_RANKS];
		double lsum = 0, csum = 0, gl, wall;
		int flags = 0;
		struct hp_step_record rec;
		char *line;
		for (int r = 0; r < t->R; r++) {
			const double *a = t->all + r * CTL_N;
			step_s[r] = a[CTL_COMPUTE_S];
			ar_s[r] = a[CTL_ALLREDUCE_S];
			lsum += a[CTL_LOSS_SUM];
			csum += a[CTL_CORRECT];
			flags |= (int)a[CTL_FLAGS];
		}
		gl = lsum / (double)t->B;
		wall = hp_now_s() - ts;
		t->sum_step_s += wall;
		t->steps_run++;
		tr_watchdog_step((long long)t->step, wall);
		rec = (struct hp_step_record){
		    .step = t->step,
		    .epoch = epoch,
		    .loss = gl,
		    .accuracy = csum / (double)t->B,
		    .lr = lr,
		    .ranks = t->R,
		    .local = t->local,
		    .step_s = step_s,
		    .allreduce_s = ar_s,
		    .wall_step_s = wall,
		    .samples_per_s = (double)t->B / wall,
		    .elapsed_s = wall_total(t),
		};
		if (t->r == 0) {
			line = hp_step_record_json(&rec);
			metrics_line(t, line);
			free(line);
		}
		/* stopping */
		if (!isfinite(gl)) {
			t->stop_reason = "diverged: the loss is not finite";
		} else {
			double sm;
			t->loss_n++;
			t->loss_avg =
			    LOSS_BETA * t->loss_avg + (1 - LOSS_BETA) * gl;
			sm = t->loss_avg /
			     (1 - pow(LOSS_BETA, (double)t->loss_n));
			if (sm < t->loss_min)
				t->loss_min = sm;
			if (t->o->stop_div > 0 &&
			    sm > t->o->stop_div * t->loss_min)
				t->stop_reason =
				    "diverged: the smoothed loss passed "
				    "--stop-on-divergence x its minimum";
		}
		if (flags & FLAG_SIGNAL) {
			t->stop_reason = "cancelled (SIGTERM)";
			t->cancelled = true;
		} else if ((flags & FLAG_TIME) && !t->stop_reason) {
			t->stop_reason = "the --max-seconds budget ran out";
		}
		if (t->o->rebalance && t->R > 1) {
			double med[TR_MAX_RANKS];
			int64_t nl[TR_MAX_RANKS];
			enum hp_rebalance_verdict v =
			    hp_rebalance_add(&t->rb, step_s, t->local, t->B,
					     t->min_local, med, nl);
			if (v != HP_REBALANCE_WAIT) {
				t->last_spread = hp_time_spread(med, t->R);
				if (t->pending)
					finish_event(t, med);
			}
			if (v == HP_REBALANCE_RESPLIT && !t->stop_reason) {
				double pred[TR_MAX_RANKS];
				for (int r = 0; r < t->R; r++)
					pred[r] = med[r] * (double)nl[r] /
						  (double)t->local[r];
				t->pending = json_pack(
				    "{s:s, s:I, s:o, s:o, s:o, s:f, s:o}",
				    "event", "rebalance", "at_step",
				    (json_int_t)t->step, "local_batches_before",
				    i64_array(t->local, t->R),
				    "local_batches_after", i64_array(nl, t->R),
				    "rank_step_s_before", f64_array(med, t->R),
				    "spread_before", hp_time_spread(med, t->R),
				    "rank_step_s_predicted",
				    f64_array(pred, t->R));
				memcpy(t->local, nl,
				       (size_t)t->R * sizeof(*nl));
				hp_split_offsets(t->local, t->R, t->off);
				if ((rc = rebuild(t, t->local[t->r], err)))
					return rc;
				hp_rebalance_reset(&t->rb);
				t->rebalances++;
			}
		}
	}
	return 0;
}

/* ---- energy -------------------------------------------------------- */

/* Where the shipped data is: $HETPOOL_DATA_DIR, beside the program (a
 * build tree or an installation), the source tree. */
static int data_path(const char *name, char *buf, size_t n)
{
	static const char *const beside[] = {"/../../data",
					     "/../share/hetpool"};
	const char *env = getenv("HETPOOL_DATA_DIR");
	char exe[4096];
	ssize_t len;

	if (env && *env && (size_t)snprintf(buf, n, "%s/%s", env, name) < n &&
	    !access(buf, R_OK))
		return 0;
	len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (len > 0) {
		char *slash;
		exe[len] = '\0';
		slash = strrchr(exe, '/');
		if (slash) {
			*slash = '\0';
			for (int i = 0; i < 2; i++)
				if ((size_t)snprintf(buf, n, "%s%s/%s", exe,
						     beside[i], name) < n &&
				    !access(buf, R_OK))
					return 0;
		}
	}
#ifdef HP_SOURCE_DIR
	if ((size_t)snprintf(buf, n, "%s/data/%s", HP_SOURCE_DIR, name) < n &&
	    !access(buf, R_OK))
		return 0;
#endif
	return -1;
}

/*
 * This rank's energy when its device does not measure it: the estimator's
 * power for its device at its threads and (last) local batch, as `hetpool
 * predict --threads T` gives it, times the time its steps took (their
 * measured mean times the steps run, over resumes; the predicted step time
 * when this process ran none).  *idle_j is the part of it that is the
 * device's idle power, which ranks sharing a host must count once (the
 * caller's business).  NaN with why in basis when it cannot say.
 */
static double predict_energy(struct tr_run *t, double *idle_j, char *basis,
			     size_t n)
{
	char cpath[4096], epath[4096];
	struct hp_error err = {0};
	struct hp_catalog *cat = NULL;
	struct hp_estimator *est = NULL;
	struct hp_graph *g = NULL;
	struct hp_workload w = {0};
	struct hp_prediction p;
	struct hp_engine_device_info di;
	const struct hp_device_type *type;
	const char *dev = "cpu";
	double j = NAN, step_s;

	*idle_j = 0;
	if ((!t->o->catalog &&
	     data_path("devices.csv", cpath, sizeof(cpath))) ||
	    (!t->o->estimator &&
	     data_path("estimators/default.json", epath, sizeof(epath)))) {
		snprintf(basis, n, "no device catalog or estimator found");
		return NAN;
	}
	/* the cpu type is this host at the rank's threads, with its host
	 * file's peaks and calibration, as predict and recommend see it */
	cat = hp_ctx_load_catalog_at(t->o->catalog ? t->o->catalog : cpath,
				     t->eo.threads, NULL, &err);
	est = cat ? hp_estimator_load(t->o->estimator ? t->o->estimator : epath,
				      &err)
		  : NULL;
	if (!cat || !est) {
		snprintf(basis, n, "the estimator could not be loaded: %.100s",
			 err.msg);
		goto done;
	}
	if (strcmp(t->device, "cpu") && !hp_engine_device_info(t->e, &di) &&
	    hp_catalog_find(cat, di.name))
		dev = di.name;
	g = hp_spec_to_graph(&t->spec, &err);
	if (!g ||
	    hp_workload_from_graph(g, t->local[t->r], NULL, 0, &w, &err) ||
	    hp_estimator_predict(est, cat, &w, dev, 1, -1, &p, &err)) {
		snprintf(basis, n, "no prediction: %.120s", err.msg);
		goto done;
	}
	if (!isfinite(p.energy_per_step_j) || !isfinite(p.power_w)) {
		snprintf(basis, n, "%.150s", p.energy_basis);
		goto done;
	}
	step_s = t->steps_run > 0 ? t->sum_step_s / (double)t->steps_run
				  : p.step_time_s;
	j = p.power_w * step_s * (double)t->step;
	type = hp_catalog_find(cat, dev);
	if (!strcmp(dev, "cpu") && type && type->idle_w >= 0 &&
	    type->idle_w <= p.power_w)
		*idle_j = type->idle_w * step_s * (double)t->step;
	snprintf(basis, n, "%.150s", p.energy_basis);
done:
	hp_workload_release(&w);
	hp_graph_free(g);
	hp_estimator_free(est);
	hp_catalog_free(cat);
	return j;
}

/* An explicit --catalog or --estimator that does not load is bad input,
 * said before the training, not in results.json after it. */
static void check_energy_files(struct tr_run *t, struct hp_error *err)
{
	struct hp_catalog *cat = NULL;
	struct hp_estimator *est = NULL;

	if (t->o->catalog && !(cat = hp_catalog_load(t->o->catalog, err))) {
		hp_error_prefix(err, "--catalog");
		if (err->code == HP_EIO)
			err->code = HP_EINVAL;
	} else if (t->o->estimator &&
		   !(est = hp_estimator_load(t->o->estimator, err))) {
		hp_error_prefix(err, "--estimator");
		if (err->code == HP_EIO)
			err->code = HP_EINVAL;
	}
	hp_estimator_free(est);
	hp_catalog_free(cat);
}

/* ---- results ------------------------------------------------------- */

/* What each rank ran on, gathered for results.json. */
struct devrec {
	char device[16];
	char host[64];
	char desc[160];
	char note[320];
	int threads;
};

/*
 * Ranks whose energy is predicted on the CPU of one host each counted the
 * host's idle power over the run; the host draws it once.  Each keeps its
 * own busy part and a share of the host's idle energy (the largest of
 * theirs) in proportion to its threads.  all: per rank {kind, energy_j,
 * basis length, idle_j}.
 */
static void share_idle(double *all, const struct devrec *d, int R)
{
	for (int r = 0; r < R; r++) {
		double idle = 0, thr = 0;
		int k = 0;

		if (all[4 * r + 3] <= 0)
			continue;
		for (int q = 0; q < R; q++)
			if (all[4 * q + 3] > 0 &&
			    !strcmp(d[q].host, d[r].host)) {
				idle = fmax(idle, all[4 * q + 3]);
				thr += d[q].threads > 0 ? d[q].threads : 1;
				k++;
			}
		if (k > 1)
			all[4 * r + 1] +=
			    idle * (d[r].threads > 0 ? d[r].threads : 1) / thr -
			    all[4 * r + 3];
	}
	/* the shares are taken from the idle figures, all read above */
}

static int write_results(struct tr_run *t, const char *state,
			 struct hp_error *err)
{
	struct devrec me, *drec = NULL;
	char basis[200] = "", hx[32], sx[32], *path, *text;
	double ej = NAN, idle_j = 0, mine[4], *all = NULL;
	int kind; /* 0 measured, 1 predicted, 2 not measured */
	uint64_t wh = 0, sh = 0;
	json_t *o = NULL, *devs, *ren;
	int rc = 0, worst = 0;
	double total_j = 0, now;

	if (energy_j(t, &ej) == 0) {
		kind = 0;
		ej += t->energy_before_j;
	} else {
		ej = predict_energy(t, &idle_j, basis, sizeof(basis));
		kind = isfinite(ej) ? 1 : 2;
	}
	mine[0] = kind;
	mine[1] = isfinite(ej) ? ej : 0;
	mine[2] = (double)strlen(basis);
	mine[3] = isfinite(ej) ? idle_j : 0;
	memset(&me, 0, sizeof(me));
	snprintf(me.device, sizeof(me.device), "%s", t->device);
	snprintf(me.desc, sizeof(me.desc), "%s", hp_engine_device_desc(t->e));
	snprintf(me.host, sizeof(me.host), "%s", t->c->host);
	snprintf(me.note, sizeof(me.note), "%s", t->note);
	me.threads = t->eo.threads;
	all = calloc((size_t)t->R * 4, sizeof(*all));
	drec = calloc((size_t)t->R, sizeof(*drec));
	if (!all || !drec) {
		free(all);
		free(drec);
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	}
	if (tr_allgather_f64(t->c, mine, 4, all) ||
	    tr_allgather_bytes(t->c, &me, (int)sizeof(me), drec)) {
		free(all);
		free(drec);
		return hp_error_set(err, HP_EIO, "MPI all-gather failed");
	}
	if ((rc = state_hash(t, true, &wh, err)) ||
	    (rc = state_hash(t, false, &sh, err)))
		goto done;
	if (t->r != 0)
		goto done;
	snprintf(hx, sizeof(hx), "%016llx", (unsigned long long)wh);
	snprintf(sx, sizeof(sx), "%016llx", (unsigned long long)sh);
	devs = json_array();
	ren = json_array();
	share_idle(all, drec, t->R);
	for (int r = 0; r < t->R; r++) {
		int k = (int)all[4 * r];
		worst = k > worst ? k : worst;
		total_j += all[4 * r + 1];
		json_array_append_new(ren, k == 2 ? json_null()
						  : json_real(all[4 * r + 1]));
	}
	for (int r = 0; r < t->R; r++) {
		const struct devrec *d = &drec[r];
		json_array_append_new(
		    devs, json_pack("{s:i, s:s, s:s, s:s, s:i, s:s*}", "rank",
				    r, "device", d->device, "desc", d->desc,
				    "host", d->host, "threads", d->threads,
				    "note", d->note[0] ? d->note : NULL));
	}
	now = hp_now_s(); /* one reading: wall_s <= wall_s_total */
	o = json_pack(
	    "{s:s, s:b, s:o, s:o, s:o, s:o, s:I, s:f, s:I, s:o, s:f, s:f, "
	    "s:f, s:o, s:s, s:o, s:o, s:i, s:i, s:s, s:s, s:s, s:s, s:o, "
	    "s:o, s:s}",
	    "state", state, "stopped_early", t->stop_reason != NULL,
	    "stop_reason",
	    t->stop_reason ? json_string(t->stop_reason) : json_null(),
	    "test_accuracy",
	    t->evaluated ? json_real(t->test_acc) : json_null(), "test_loss",
	    t->evaluated && isfinite(t->test_loss) ? json_real(t->test_loss)
						   : json_null(),
	    "test_samples",
	    t->evaluated ? json_integer((json_int_t)t->test_n) : json_null(),
	    "steps", (json_int_t)t->step, "epochs",
	    t->spe ? (double)t->step / (double)t->spe : 0.0, "global_batch",
	    (json_int_t)t->B, "local_batches", i64_array(t->local, t->R),
	    "wall_s", now - t->t0, "wall_s_total",
	    t->wall_before + (now - t->t0), "samples_per_s",
	    t->sum_step_s > 0
		? (double)t->steps_run * (double)t->B / t->sum_step_s
		: 0.0,
	    "energy_j", worst == 2 ? json_null() : json_real(total_j),
	    "energy_basis",
	    worst == 0	 ? "measured (NVML)"
	    : worst == 1 ? "predicted (hetpool estimator)"
			 : "not measured",
	    "rank_energy_j", ren, "devices", devs, "ranks", t->R, "rebalances",
	    t->rebalances, "weights_hash", hx, "state_hash", sx, "model",
	    t->spec.name ? t->spec.name : "", "data", t->data_desc,
	    "resumed_from_step",
	    t->start_step > 0 ? json_integer(t->start_step) : json_null(),
	    "last_rank_step_spread",
	    t->rebalances || t->last_spread > 0 ? json_real(t->last_spread)
						: json_null(),
	    "hetpool_version", hp_version());
	if (!o) {
		rc = hp_error_set(err, HP_ENOMEM, "out of memory (results)");
		goto done;
	}
	if (basis[0] && worst != 0)
		json_object_set_new(o, "energy_note", json_string(basis));
	path = path_in(t, "results.json");
	text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER |
				 JSON_REAL_PRECISION(9));
	if (!path || !text)
		rc = hp_error_set(err, HP_ENOMEM, "out of memory (results)");
	else
		rc = hp_write_file_atomic(path, text, strlen(text), 0666, err);
	free(path);
	free(text);
done:
	json_decref(o);
	free(all);
	free(drec);
	return rc;
}

/* ---- the run ------------------------------------------------------- */

static int load_model(struct tr_run *t, struct hp_error *err)
{
	char *buf = NULL, *js;
	size_t len = 0;
	int rc =
	    hp_read_file(t->o->model, HP_MODEL_MAX_FILE_BYTES, &buf, &len, err);

	if (rc)
		return rc;
	/* a spec, or an ONNX CNN's layers at --input-shape */
	rc = hp_spec_for_training(
	    buf, len, t->o->input_shape[0] ? t->o->input_shape : NULL, &t->spec,
	    err);
	free(buf);
	if (rc)
		return rc;
	/* what an ONNX conversion took otherwise than the file writes
	 * (rank 0 says it once) */
	for (int i = 0; !t->r && i < t->spec.nnotes; i++)
		tr_note("%s", t->spec.notes[i]);
	/* a model that scales its own input (x / 255) gets the data the
	 * trainer gives every model, standardized already */
	for (int i = 0; t->r == 0 && strcmp(t->o->data, "synthetic") &&
			i < t->spec.nlayers;
	     i++) {
		const struct hp_spec_layer *L = &t->spec.layers[i];
		if (L->type == HP_LAYER_SCALE &&
		    (L->ninputs ? L->inputs[0] : i - 1) == -1)
			tr_note("the model scales its input (%g x + %g%s): "
				"the pixels it gets are standardized already "
				"((x / 255 - mean) / std of the training "
				"set), not 0 to 255",
				L->nch ? L->chf[0] : L->alpha,
				L->nch ? L->chs[0] : L->beta,
				L->nch ? " on the first channel" : "");
	}
	js = hp_spec_to_json(&t->spec);
	if (!js)
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	t->model_hash = hp_fnv1a64(js, strlen(js), HP_FNV1A64_INIT);
	free(js);
	return 0;
}

static int batch_over_samples(int64_t batch, int64_t n, struct hp_error *err)
{
	return hp_error_set(err, HP_EINVAL,
			    "--batch %lld is larger than the %lld training "
			    "samples",
			    (long long)batch, (long long)n);
}

/* The split of the global batch, before the model's engine is built (so
 * that a net too large for this device is refused before any data is
 * read or made). */
static int plan_split(struct tr_run *t, struct hp_error *err)
{
	const struct tr_opts *o = t->o;
	int rc;

	t->B = o->batch;
	if (t->B < t->R)
		return hp_error_set(err, HP_EINVAL,
				    "--batch %lld is smaller than the %d ranks",
				    (long long)t->B, t->R);
	if (!strcmp(o->data, "synthetic") && o->synthetic_samples > 0 &&
	    t->B > o->synthetic_samples)
		return batch_over_samples(t->B, o->synthetic_samples, err);
	if (o->local_batches) {
		rc =
		    hp_split_parse(o->local_batches, t->R, t->B, t->local, err);
		if (rc) {
			hp_error_prefix(err, "--local-batches");
			return rc;
		}
	} else {
		hp_split_even(t->B, t->R, t->local);
	}
	hp_split_offsets(t->local, t->R, t->off);
	return 0;
}

/* Steps from --steps or --epochs and the learning-rate plan, once the
 * data is there. */
static int plan_steps(struct tr_run *t, struct hp_lr_plan *lr,
		      struct hp_error *err)
{
	const struct tr_opts *o = t->o;
	int rc;

	t->spe = t->train.n / t->B;
	if (t->spe < 1)
		return batch_over_samples(t->B, t->train.n, err);
	if (o->steps > 0) {
		t->total = o->steps;
	} else {
		/* E epochs of spe steps; a product a rounding away from a
		 * whole number is that number (2.2 x 25 is 55.000000000000007,
		 * 55 steps, not 56), else a partial epoch counts as a step */
		double x = o->epochs * (double)t->spe, whole = nearbyint(x);
		t->total =
		    (int64_t)(fabs(x - whole) <= 1e-9 * fmax(1, x) ? whole
								   : ceil(x));
	}
	if (t->total < 1)
		t->total = 1;
	*lr = o->lr;
	lr->global_batch = t->B;
	lr->total_steps = t->total;
	rc = hp_lr_plan_check(lr, err);
	/* allowed (a run cut short, to be resumed with more steps), but
	 * likely a mistake: said */
	if (!rc && t->r == 0 && lr->warmup_steps > t->total)
		tr_warn("--warmup-steps %lld is longer than the run's %lld "
			"steps: the rate ends at %g, never reaching its %g",
			(long long)lr->warmup_steps, (long long)t->total,
			hp_lr_at(lr, t->total - 1),
			hp_lr_at(lr, lr->warmup_steps - 1));
	return rc;
}

static int alloc_buffers(struct tr_run *t, struct hp_error *err)
{
	int64_t px = t->spec.input[0] * t->spec.input[1] * t->spec.input[2];

	t->x = malloc((size_t)(t->B * px) * sizeof(float));
	t->y = malloc((size_t)t->B * sizeof(int32_t));
	t->logits = malloc((size_t)(t->B * t->spec.classes) * sizeof(float));
	t->idx = malloc((size_t)t->B * sizeof(int64_t));
	t->perm = malloc((size_t)t->train.n * sizeof(int64_t));
	t->ctl = calloc(CTL_N, sizeof(double));
	t->all = calloc((size_t)t->R * CTL_N, sizeof(double));
	if (!t->x || !t->y || !t->logits || !t->idx || !t->perm || !t->ctl ||
	    !t->all)
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	t->perm_epoch = -1;
	return 0;
}

static void release(struct tr_run *t)
{
	hp_engine_free(t->e);
	tr_nccl_free(t->nccl);
	hp_dataset_release(&t->train);
	hp_dataset_release(&t->test);
	hp_spec_release(&t->spec);
	hp_rebalance_release(&t->rb);
	json_decref(t->pending);
	if (t->metrics)
		fclose(t->metrics);
	free(t->local);
	free(t->off);
	free(t->x);
	free(t->y);
	free(t->logits);
	free(t->idx);
	free(t->perm);
	free(t->flat);
	free(t->bn_k);
	free(t->ctl);
	free(t->all);
}

/*
 * Every rank's verdict on a phase of the set-up: the worst status over
 * the ranks.  Only the lowest failing rank prints its message (msg), so
 * an error all ranks meet is said once.
 */
static int agree(struct tr_run *t, int status, const char *msg)
{
	int s = status, who = status ? -t->r : -TR_MAX_RANKS - 1;

	if (tr_allreduce_max_int(t->c, &s) || tr_allreduce_max_int(t->c, &who))
		return TR_EXIT_FAIL;
	if (status && -who == t->r && msg) {
		if (t->r == 0)
			tr_error("%s", msg);
		else
			tr_error("rank %d: %s", t->r, msg);
	}
	return s;
}

/*
 * What every rank must be given alike, a line an option: "--name value",
 * or "--name #" + a hash where the value is long (the model and the data
 * by content, so that a staged copy in another folder is the same).
 * --threads, --out, --catalog, --estimator and --cpu-fallback may differ
 * (the deployment gives each rank its threads).
 */
#define OPTS_TEXT 1024
static void options_text(const struct tr_run *t, char *buf, size_t n)
{
	const struct tr_opts *o = t->o;
	const struct hp_lr_plan *l = &o->lr;
	const char *lb = o->local_batches ? o->local_batches : "";
	const char *dv = o->devices ? o->devices : "";

	memset(buf, 0, n);
	snprintf(
	    buf, n,
	    "--model #%016llx\n--data #%016llx\n--batch %lld\n"
	    "--local-batches #%016llx\n--steps %lld\n--epochs %.17g\n"
	    "--seed %llu\n--devices #%016llx\n--optimizer %d\n"
	    "--momentum %.17g\n--weight-decay %.17g\n--lr %.17g\n"
	    "--lr-rule %d\n--ref-batch %lld\n--warmup-steps %lld\n"
	    "--lr-schedule %d\n--lr-step-every %lld\n--lr-gamma %.17g\n"
	    "--lr-min %.17g\n--lr-max %.17g\n--stop-on-divergence %.17g\n"
	    "--eval-every %lld\n--eval-samples %lld\n"
	    "--checkpoint-every %lld\n--resume %d\n--overwrite %d\n"
	    "--rebalance %d\n--rebalance-window %d\n"
	    "--rebalance-threshold %.17g\n--rebalance-memory %d\n"
	    "--max-seconds %.17g\n",
	    (unsigned long long)t->model_hash, (unsigned long long)t->data_hash,
	    (long long)o->batch,
	    (unsigned long long)hp_fnv1a64(lb, strlen(lb), HP_FNV1A64_INIT),
	    (long long)o->steps, o->epochs, (unsigned long long)o->seed,
	    (unsigned long long)hp_fnv1a64(dv, strlen(dv), HP_FNV1A64_INIT),
	    (int)o->opt, o->momentum, o->weight_decay, l->lr, (int)l->rule,
	    (long long)l->ref_batch, (long long)l->warmup_steps, (int)l->sched,
	    (long long)l->step_every, l->gamma, l->lr_min, l->lr_max,
	    o->stop_div, (long long)o->eval_every, (long long)o->eval_samples,
	    (long long)o->ckpt_every, (int)o->resume, (int)o->overwrite,
	    (int)o->rebalance, o->rebal_window, o->rebal_threshold,
	    o->rebal_memory, o->max_seconds);
}

/* Every rank's options against rank 0's: the first that differs, named
 * (a launcher given per-rank arguments by mistake would otherwise train
 * a silently different run, or hang in a collective only some call). */
static int same_options(struct tr_run *t, struct hp_error *err)
{
	char mine[OPTS_TEXT], *all;
	int rc = 0;

	if (t->R < 2)
		return 0;
	options_text(t, mine, sizeof(mine));
	all = malloc((size_t)t->R * OPTS_TEXT);
	if (!all)
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	if (tr_allgather_bytes(t->c, mine, OPTS_TEXT, all)) {
		free(all);
		return hp_error_set(err, HP_EIO, "MPI all-gather failed");
	}
	for (int r = 1; !rc && r < t->R; r++) {
		const char *a = all, *b = all + (size_t)r * OPTS_TEXT;
		while (*a && !rc) {
			size_t la = strcspn(a, "\n"), lb = strcspn(b, "\n"),
			       k = strcspn(a, " ");
			if (la != lb || memcmp(a, b, la)) {
				if (a[k + 1] == '#')
					rc = hp_error_set(
					    err, HP_EINVAL,
					    "rank %d was given another %.*s "
					    "than rank 0: every rank needs "
					    "the same options (only --threads, "
					    "--out, --catalog, --estimator and "
					    "--cpu-fallback may differ)",
					    r, (int)k, a);
				else
					rc = hp_error_set(
					    err, HP_EINVAL,
					    "rank %d was given %.*s %.*s, "
					    "rank 0 %.*s: every rank needs "
					    "the same options (only --threads, "
					    "--out, --catalog, --estimator and "
					    "--cpu-fallback may differ)",
					    r, (int)k, a, (int)(lb - k - 1),
					    b + k + 1, (int)(la - k - 1),
					    a + k + 1);
			}
			a += la + (a[la] != '\0');
			b += lb + (b[lb] != '\0');
		}
	}
	free(all);
	return rc;
}

/*
 * Whether the last line of metrics file path is the evaluation at step
 * (a run resumed at its end, whose results.json was not written, has
 * listed it already).
 */
static bool eval_listed(const char *path, int64_t step)
{
	struct hp_error e = {0};
	char *buf = NULL;
	size_t len = 0, i;
	json_t *j;
	bool yes;

	if (hp_read_file(path, (size_t)1 << 32, &buf, &len, &e) || len < 2 ||
	    buf[len - 1] != '\n') {
		free(buf);
		return false;
	}
	for (i = len - 1; i > 0 && buf[i - 1] != '\n'; i--)
		;
	j = json_loadb(buf + i, len - i, 0, NULL);
	yes = json_is_string(json_object_get(j, "event")) &&
	      !strcmp(json_string_value(json_object_get(j, "event")), "eval") &&
	      json_integer_value(json_object_get(j, "at_step")) == step;
	json_decref(j);
	free(buf);
	return yes;
}

/*
 * The state a finished run's results.json in folder out names
 * ("completed", or "stopped" early by the run itself), or NULL: none, or
 * one of a run that did not finish.  Static storage.
 */
static const char *finished_run(const char *out)
{
	static char state[16];
	char p[4200];
	json_t *j;
	const char *s;

	if ((size_t)snprintf(p, sizeof(p), "%s/results.json", out) >= sizeof(p))
		return NULL;
	j = json_load_file(p, 0, NULL);
	s = json_string_value(json_object_get(j, "state"));
	state[0] = '\0';
	if (s && (!strcmp(s, "completed") || !strcmp(s, "stopped")))
		snprintf(state, sizeof(state), "%s", s);
	json_decref(j);
	return state[0] ? state : NULL;
}

/*
 * --out: made if missing (its parents too); a folder this process can
 * write; and, unless --resume or --overwrite says what to do with it, not
 * the folder of an earlier run (its checkpoint, metrics and results would
 * be replaced).  --resume without a checkpoint starts at step 0: it goes
 * on for a job killed before its first checkpoint (a requeue runs the same
 * command), not over a finished run's metrics and results.
 */
static int out_dir(const struct tr_opts *o, struct hp_error *err)
{
	struct stat st;
	char p[4200];

	if (hp_mkdirs(o->out, 0755, NULL))
		return hp_error_set(err, HP_EINVAL,
				    "--out: cannot create '%s': %s", o->out,
				    strerror(errno));
	if (stat(o->out, &st) || !S_ISDIR(st.st_mode))
		return hp_error_set(err, HP_EINVAL,
				    "--out '%s' is not a folder", o->out);
	if (access(o->out, W_OK | X_OK))
		return hp_error_set(err, HP_EINVAL,
				    "--out '%s' is not writable: %s", o->out,
				    strerror(errno));
	if (o->resume) {
		const char *fin;
		if ((size_t)snprintf(p, sizeof(p), "%s/checkpoint", o->out) >=
			sizeof(p) ||
		    !stat(p, &st) || errno != ENOENT ||
		    !(fin = finished_run(o->out)))
			return 0;
		return hp_error_set(err, HP_EINVAL,
				    "--out '%s' holds an earlier run "
				    "(results.json, %s) and no checkpoint to "
				    "resume: --overwrite starts over, or give "
				    "another --out",
				    o->out, fin);
	}
	for (int i = 0; i < 3; i++) {
		static const char *const f[] = {"checkpoint", "results.json",
						"metrics.jsonl"};
		if ((size_t)snprintf(p, sizeof(p), "%s/%s", o->out, f[i]) >=
		    sizeof(p))
			continue;
		if (o->overwrite) {
			/* gone before this run writes anything: a run that
			 * dies before its first checkpoint must not leave
			 * the old checkpoint beside its new metrics */
			if (unlink(p) && errno != ENOENT)
				return hp_error_set(err, HP_EINVAL,
						    "--overwrite: cannot "
						    "remove '%s': %s",
						    p, strerror(errno));
			continue;
		}
		if (!stat(p, &st) && (i < 2 || st.st_size > 0))
			return hp_error_set(
			    err, HP_EINVAL,
			    "--out '%s' holds an earlier run (%s): --resume "
			    "continues it, --overwrite starts over, or give "
			    "another --out",
			    o->out, f[i]);
	}
	return 0;
}

/* Temporary files a killed run left (checkpoint.tmp.PID and the like). */
static void remove_stale(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char p[4200];

	while (d && (de = readdir(d))) {
		if (strncmp(de->d_name, "checkpoint.tmp.", 15) &&
		    strncmp(de->d_name, "metrics.jsonl.tmp.", 18) &&
		    strncmp(de->d_name, "results.json.tmp", 16))
			continue;
		if ((size_t)snprintf(p, sizeof(p), "%s/%s", dir, de->d_name) <
		    sizeof(p))
			unlink(p);
	}
	if (d)
		closedir(d);
}

static int status_of(int code)
{
	switch (code) {
	case HP_EINVAL:
	case HP_EPARSE:
	case HP_ERANGE:
	case HP_ENOENT:
	case HP_ESHAPE:
	case HP_EUNSUPP:
	case HP_ETOOBIG:
	case HP_ECYCLE:
		return TR_EXIT_USAGE;
	default:
		return TR_EXIT_FAIL;
	}
}

static void progress(const struct tr_run *t)
{
	static double last;
	double now = hp_now_s();

	if (t->r != 0 || !isatty(2) || (now - last < 0.5 && t->step < t->total))
		return;
	last = now;
	fprintf(stderr, "\rstep %lld/%lld  loss %.4f  %.0f samples/s   ",
		(long long)t->step, (long long)t->total,
		t->loss_n
		    ? t->loss_avg / (1 - pow(LOSS_BETA, (double)t->loss_n))
		    : NAN,
		t->sum_step_s > 0
		    ? (double)t->steps_run * (double)t->B / t->sum_step_s
		    : 0.0);
	if (t->step >= t->total)
		fputc('\n', stderr);
}

int tr_run(const struct tr_opts *o, struct tr_comm *c)
{
	struct tr_run t;
	struct hp_error err = {0};
	struct hp_lr_plan lr;
	struct tr_opts o2 = *o;
	int status = 0, rc = 0;
	int64_t last_ckpt = -1;
	char *mpath = NULL;
	bool eval_done = false; /* the last evaluation is listed */

	memset(&t, 0, sizeof(t));
	t.o = &o2;
	t.c = c;
	t.R = c->size;
	t.r = c->rank;
	t.loss_min = INFINITY;
	t.t0 = hp_now_s();
	t.local = calloc((size_t)t.R, sizeof(*t.local));
	t.off = calloc((size_t)t.R, sizeof(*t.off));
	if (t.R > TR_MAX_RANKS || !t.local || !t.off) {
		err.code = HP_ERANGE;
		snprintf(err.msg, sizeof(err.msg), "at most %d ranks",
			 TR_MAX_RANKS);
	}
	/* set-up: every rank does it; all must succeed */
	if (!err.code && (rc = load_model(&t, &err)))
		hp_error_prefix(&err, "--model %s", o->model);
	if (!err.code)
		rc = rank_device(&t, t.device, sizeof(t.device), &err);
	if (!err.code)
		rc = plan_split(&t, &err);
	/* the engine before the data: a net this device cannot hold is
	 * refused before seconds go into reading or making samples */
	if (!err.code)
		rc = open_engine(&t, &err); /* its message names the device */
	if (!err.code)
		rc = load_data(&t, &err);
	if (!err.code && (rc = plan_steps(&t, &lr, &err)) == 0) {
		o2.lr = lr;
		t.eo.lr = hp_lr_at(&o2.lr, 0);
		hp_engine_set_lr(t.e, t.eo.lr);
	}
	if (!err.code && (rc = alloc_buffers(&t, &err)) == 0 &&
	    (rc = setup_flat(&t, &err)) == 0)
		rc = hp_rebalance_init(&t.rb, t.R, o->rebal_window,
				       o->rebal_threshold, 2);
	if (!err.code && !rc && o->rebal_memory > 0)
		t.rb.memory = o->rebal_memory;
	if (!err.code && rc)
		hp_error_set(&err, rc, "rebalancing: bad window or threshold");
	if (!err.code)
		check_energy_files(&t, &err);
	status = err.code ? status_of(err.code) : 0;
	if ((status = agree(&t, status, err.msg)))
		goto out;
	/* what needs every rank: only once all have set up */
	if ((rc = same_options(&t, &err)) == 0)
		rc = setup_transport(&t, &err);
	status = rc ? status_of(rc) : 0;
	if ((status = agree(&t, status, err.msg)))
		goto out;
	t.min_local = t.has_bn ? (t.B / t.R < 8 ? t.B / t.R : 8) : 1;
	if (t.min_local < 1)
		t.min_local = 1;
	if (t.r == 0 && (rc = out_dir(o, &err)))
		status = status_of(rc);
	if ((status = agree(&t, status, err.msg)))
		goto out;
	if (t.r == 0)
		remove_stale(o->out);
	if (o->resume && (rc = resume(&t, &err))) {
		hp_error_prefix(&err, "--resume");
		status = status_of(rc);
	}
	if ((status = agree(&t, status, err.msg)))
		goto out;
	if (t.r == 0 && o->resume) {
		/* the earlier results go before this run trains: a kill
		 * would leave them saying the run completed */
		char *rpath = path_in(&t, "results.json");
		if (rpath && unlink(rpath) && errno != ENOENT) {
			hp_error_set(
			    &err, HP_EIO,
			    "--resume: cannot remove the earlier '%s': "
			    "%s",
			    rpath, strerror(errno));
			status = TR_EXIT_FAIL;
		}
		free(rpath);
	}
	if (t.r == 0 && !status) {
		mpath = path_in(&t, "metrics.jsonl");
		/* the steps after the checkpoint go, or the run does not
		 * start: appended to, they would be listed twice */
		if (t.start_step > 0 && mpath &&
		    (rc = hp_metrics_truncate(mpath, t.start_step, &err))) {
			hp_error_prefix(&err, "--resume");
			status = TR_EXIT_FAIL;
			t.metrics = NULL;
		} else {
			eval_done = t.start_step > 0 &&
				    t.start_step >= t.total &&
				    eval_listed(mpath, t.start_step);
			t.metrics =
			    mpath ? fopen(mpath, t.start_step > 0 ? "ab" : "wb")
				  : NULL;
		}
		if (!t.metrics && !status) {
			hp_error_set(&err, HP_EIO,
				     "cannot write '%s/metrics.jsonl': %s",
				     o->out, strerror(errno));
			status = TR_EXIT_FAIL;
		}
	}
	if ((status = agree(&t, status, err.msg)))
		goto out;
	if (hp_engine_energy_mj(t.e, &t.energy0_mj) == 0)
		t.energy_ok = true;
	t.loss_min = t.start_step > 0 ? t.loss_min : INFINITY;
	if (tr_watchdog_start(o->stall_s, t.r))
		tr_warn("rank %d: the stall watchdog could not start: a "
			"stopped rank will hold the run until it is cancelled",
			t.r);

	while (t.step < t.total) {
		if ((rc = train_step(&t, &err))) {
			tr_error("rank %d, step %lld: %s", t.r,
				 (long long)t.step + 1, err.msg);
			tr_comm_abort(c, TR_EXIT_FAIL);
		}
		progress(&t);
		if (t.stop_reason)
			break;
		if (o->ckpt_every > 0 && t.step % o->ckpt_every == 0) {
			if ((rc = checkpoint(&t, &err))) {
				tr_error("checkpoint at step %lld: %s",
					 (long long)t.step, err.msg);
				tr_comm_abort(c, TR_EXIT_FAIL);
			}
			last_ckpt = t.step;
		}
		if (o->eval_every > 0 && t.step % o->eval_every == 0 &&
		    t.step < t.total) {
			if ((rc = evaluate(&t, &err))) {
				tr_error("evaluation: %s", err.msg);
				tr_comm_abort(c, TR_EXIT_FAIL);
			}
			metrics_json(&t, eval_event(&t));
		}
	}
	/* the end: a checkpoint, the evaluation, the results */
	if (t.pending)
		finish_event(&t, NULL);
	if (last_ckpt != t.step && (rc = checkpoint(&t, &err))) {
		tr_error("checkpoint at step %lld: %s", (long long)t.step,
			 err.msg);
		tr_comm_abort(c, TR_EXIT_FAIL);
	}
	if (!t.cancelled && (rc = evaluate(&t, &err))) {
		tr_error("evaluation: %s", err.msg);
		tr_comm_abort(c, TR_EXIT_FAIL);
	}
	if (t.evaluated && !eval_done)
		metrics_json(&t, eval_event(&t));
	if ((rc = write_results(&t,
				t.cancelled	? "cancelled"
				: t.stop_reason ? "stopped"
						: "completed",
				&err))) {
		tr_error("%s", err.msg);
		status = TR_EXIT_FAIL;
	}
	if (!status && t.cancelled)
		status = TR_EXIT_CANCELLED;
	if (t.r == 0 && t.stop_reason && !t.cancelled)
		tr_warn("stopped at step %lld: %s", (long long)t.step,
			t.stop_reason);
	else if (t.r == 0 && t.cancelled)
		tr_error("cancelled at step %lld: checkpoint and results "
			 "written",
			 (long long)t.step);
out:
	tr_watchdog_stop();
	free(mpath);
	release(&t);
	return status;
}
