/*
 * ctx.h - one way in for the programs (the hetpool command, the hetpoold
 * service): the device catalog, with this host's figures applied, and the
 * estimator, loaded once and shared read-only by any number of threads; a
 * refit swapped in atomically while they work; and the loading sequence
 * every command repeats (catalog, estimator, model and its workload, pool)
 * as functions with one wording for each error.
 *
 * Versions: a context holds its current snapshot (catalog + estimator).
 * hp_ctx_acquire() hands out a counted reference to it; a swap
 * (hp_ctx_swap_estimator(), hp_ctx_refit()) installs a new snapshot under
 * a mutex, and a reader keeps the one it acquired, whole and unchanged,
 * until it lets go with hp_snap_release(); the last reference frees it.
 * Nothing in a snapshot changes after it is made, so readers need no
 * lock while they use it.
 *
 * Ownership: hp_ctx_new() returns a context the caller frees with
 * hp_ctx_free() once no thread calls it (snapshots still held stay valid
 * until released).  The catalog and estimator of a snapshot belong to it.
 * The loaders return what the caller frees (hp_catalog_free(),
 * hp_estimator_free(), hp_graph_free(), hp_model_input_release(),
 * hp_pool_free()).
 */
#ifndef HETPOOL_CTX_H
#define HETPOOL_CTX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hetpool/device.h"
#include "hetpool/estimate.h"
#include "hetpool/model.h"
#include "hetpool/pool.h"
#include "hetpool/recommend.h"
#include "hetpool/util.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A file the programs ship under data/ (name relative to it, e.g.
 * "devices.csv", "estimators/default.json"): looked for in
 * $HETPOOL_DATA_DIR, beside the running program (BIN/../../data, a build
 * tree; BIN/../share/hetpool, an installation), then in the source tree
 * libhetpool was built from.  0 with its path in buf, or HP_ENOENT.  Only
 * the loaders below call it, and only for a path not given.
 */
int hp_data_path(const char *name, char *buf, size_t n);

/* The shipped files the loaders fall back to. */
#define HP_DATA_CATALOG "devices.csv"
#define HP_DATA_ESTIMATOR "estimators/default.json"

/* The CPU threads predictions are for: $HETPOOL_THREADS (1..4096), else
 * 0 (all of the host's CPUs, as the engine's default). */
int hp_ctx_threads(void);
/*
 * The catalog at path (NULL: the shipped one) with this host's figures in
 * its CPU types (hp_host_detect(); a host that cannot be read is logged as
 * a warning and the catalog's own figures stay).  host, when not NULL,
 * gets what was detected.  NULL with err set: HP_ENOENT "no
 * data/devices.csv found (...)" when path is NULL and nothing is shipped,
 * else the catalog parser's message, which names the file.
 */
struct hp_catalog *hp_ctx_load_catalog(const char *path, struct hp_host *host,
				       struct hp_error *err);
/* The same for predictions at threads CPU threads (0: hp_ctx_threads()),
 * this host's file at those threads applied. */
struct hp_catalog *hp_ctx_load_catalog_at(const char *path, int threads,
					  struct hp_host *host,
					  struct hp_error *err);
/* The estimator at path (NULL: the shipped default).  NULL with err set:
 * HP_ENOENT "no data/estimators/default.json found (...)" when path is
 * NULL and nothing is shipped, else "estimator 'PATH': ...". */
struct hp_estimator *hp_ctx_load_estimator(const char *path,
					   struct hp_error *err);
/* A model file (ONNX or hetpool spec); NULL with err set: "model 'PATH':
 * ...". */
struct hp_graph *hp_ctx_load_graph(const char *path, struct hp_error *err);

/* A model and its workload at one per-device batch. */
struct hp_model_input {
	struct hp_graph *graph;
	struct hp_workload workload;
};
/*
 * Load the model at path and analyse it at batch (per device;
 * input_shape as hp_workload_from_graph(), rank 0: from the model) into
 * out; errors "model 'PATH': ...".  0, or the error code with out empty.
 */
int hp_ctx_load_model(const char *path, int64_t batch,
		      const int64_t *input_shape, int input_rank,
		      struct hp_model_input *out, struct hp_error *err);
void hp_model_input_release(struct hp_model_input *m);

/* The pool file at path against cat; NULL with err set (the pool
 * parser's message, "pool 'PATH': ..."). */
struct hp_pool *hp_ctx_load_pool(const char *path, const struct hp_catalog *cat,
				 struct hp_error *err);

/* The catalog's type called name (an id or alias); NULL with err set:
 * HP_EINVAL "device type 'NAME' is not in the catalog". */
const struct hp_device_type *hp_ctx_find_type(const struct hp_catalog *cat,
					      const char *name,
					      struct hp_error *err);

/* What a context loads. */
struct hp_ctx_options {
	const char *catalog;   /* path, or NULL: the shipped catalog */
	const char *estimator; /* path, or NULL: the shipped estimator */
	bool no_estimator;     /* the catalog alone (fit, validate) */
};

struct hp_ctx;
struct hp_snap;

/* Load the catalog and (unless o->no_estimator) the estimator; NULL with
 * err set as the loaders above say. */
struct hp_ctx *hp_ctx_new(const struct hp_ctx_options *o, struct hp_error *err);
/* Drop the context's own reference; NULL is a no-op. */
void hp_ctx_free(struct hp_ctx *ctx);

/* The current snapshot, counted: the caller hands it back with
 * hp_snap_release().  Never NULL. */
const struct hp_snap *hp_ctx_acquire(struct hp_ctx *ctx);
void hp_snap_release(const struct hp_snap *s);
const struct hp_catalog *hp_snap_catalog(const struct hp_snap *s);
/* NULL when the context was made without one (and none swapped in). */
const struct hp_estimator *hp_snap_estimator(const struct hp_snap *s);
/* 1 for the first snapshot, one more for each swap. */
uint64_t hp_snap_version(const struct hp_snap *s);

/*
 * Swap est in (the context takes it, whatever the result): readers that
 * acquire from now on get it with the same catalog; readers holding the
 * previous snapshot keep it.  The new version into *version (may be
 * NULL).  0, or HP_ENOMEM (est freed, nothing swapped).
 */
int hp_ctx_swap_estimator(struct hp_ctx *ctx, struct hp_estimator *est,
			  uint64_t *version, struct hp_error *err);
/*
 * Fit an estimator on o against the context's catalog (the snapshot
 * current when the fit starts) and swap it in: readers go on with the
 * old one while it fits.  0, or the fit's error with nothing swapped.
 */
int hp_ctx_refit(struct hp_ctx *ctx, const struct hp_fit_options *o,
		 uint64_t *version, struct hp_error *err);

/* hp_estimator_predict() and hp_recommend() on the current snapshot
 * (acquired for the call).  HP_EINVAL when it has no estimator. */
int hp_ctx_predict(struct hp_ctx *ctx, const struct hp_workload *w,
		   const char *device, int ndevices, int family,
		   struct hp_prediction *out, struct hp_error *err);
int hp_ctx_recommend(struct hp_ctx *ctx, const struct hp_workload *w1,
		     const struct hp_pool *pool, const struct hp_rec_job *job,
		     struct hp_rec_result *out, struct hp_error *err);

#ifdef __cplusplus
}
#endif
#endif /* HETPOOL_CTX_H */
