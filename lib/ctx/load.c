/*
 * load.c - the loading sequence the programs share: catalog (with this
 * host applied), estimator, model and its workload, pool; the shipped
 * files when no path is given; one wording for each error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hetpool/ctx.h"
#include "util/banned.h"

/* The shipped file name into buf, or HP_ENOENT naming where it was
 * looked for. */
static int shipped(const char *name, char *buf, size_t n, struct hp_error *err)
{
	if (!hp_data_path(name, buf, n))
		return 0;
	return hp_error_set(err, HP_ENOENT,
			    "no data/%s found ($HETPOOL_DATA_DIR, beside the "
			    "program, the source tree)",
			    name);
}

int hp_ctx_threads(void)
{
	const char *v = getenv("HETPOOL_THREADS");
	int64_t n;

	if (v && *v && !hp_parse_i64(v, 1, 4096, &n))
		return (int)n;
	return 0;
}

struct hp_catalog *hp_ctx_load_catalog(const char *path, struct hp_host *host,
				       struct hp_error *err)
{
	return hp_ctx_load_catalog_at(path, 0, host, err);
}

struct hp_catalog *hp_ctx_load_catalog_at(const char *path, int threads,
					  struct hp_host *host,
					  struct hp_error *err)
{
	struct hp_error e2 = {0};
	struct hp_catalog *cat;
	struct hp_host h;
	char buf[4096];

	if (!path) {
		if (shipped(HP_DATA_CATALOG, buf, sizeof(buf), err))
			return NULL;
		path = buf;
	}
	if (!(cat = hp_catalog_load(path, err)))
		return NULL;
	if (hp_host_detect(&h, &e2))
		hp_log(HP_LOG_WARN, "cpu host: %s", e2.msg);
	for (int i = 0; i < cat->n; i++)
		if (cat->types[i].kind == HP_DEVICE_CPU)
			hp_host_apply(&h, &cat->types[i]);
	/* this host's file at the threads used: measured peaks and its
	 * calibration (none: the detected figures stay) */
	h.threads = threads > 0 ? threads : hp_ctx_threads();
	/* more threads than this process may run on share those CPUs: the
	 * prediction (and the host file: peaks, calibration) is at those */
	if (h.threads > 0 && h.logical_cpus > 0 && h.threads > h.logical_cpus) {
		hp_log(HP_LOG_WARN,
		       "cpu host: %d threads asked, but this process may run "
		       "on %d CPUs: predicting at %d threads",
		       h.threads, h.logical_cpus, h.logical_cpus);
		h.threads = h.logical_cpus;
	}
	e2.code = 0;
	if (hp_host_file_apply_catalog(NULL, &h, cat, &e2) < 0)
		hp_log(HP_LOG_WARN, "cpu host: %s", e2.msg);
	if (host)
		*host = h;
	return cat;
}

struct hp_estimator *hp_ctx_load_estimator(const char *path,
					   struct hp_error *err)
{
	char buf[4096];

	if (!path) {
		if (shipped(HP_DATA_ESTIMATOR, buf, sizeof(buf), err))
			return NULL;
		path = buf;
	}
	return hp_estimator_load(path, err);
}

struct hp_graph *hp_ctx_load_graph(const char *path, struct hp_error *err)
{
	struct hp_error e2 = {0};
	struct hp_graph *g = hp_model_load(path, &e2);

	if (!g)
		hp_error_set(err, e2.code ? e2.code : HP_EINVAL,
			     "model '%s': %s", path, e2.msg);
	return g;
}

int hp_ctx_load_model(const char *path, int64_t batch,
		      const int64_t *input_shape, int input_rank,
		      struct hp_model_input *out, struct hp_error *err)
{
	struct hp_error e2 = {0};
	int rc;

	memset(out, 0, sizeof(*out));
	if (!(out->graph = hp_model_load(path, &e2)))
		return hp_error_set(err, e2.code ? e2.code : HP_EINVAL,
				    "model '%s': %s", path, e2.msg);
	rc = hp_workload_from_graph(out->graph, batch,
				    input_rank ? input_shape : NULL, input_rank,
				    &out->workload, &e2);
	if (rc) {
		hp_model_input_release(out);
		return hp_error_set(err, rc, "model '%s': %s", path, e2.msg);
	}
	return 0;
}

void hp_model_input_release(struct hp_model_input *m)
{
	if (!m)
		return;
	hp_workload_release(&m->workload);
	hp_graph_free(m->graph);
	memset(m, 0, sizeof(*m));
}

struct hp_pool *hp_ctx_load_pool(const char *path, const struct hp_catalog *cat,
				 struct hp_error *err)
{
	return hp_pool_load(path, cat, err);
}

const struct hp_device_type *hp_ctx_find_type(const struct hp_catalog *cat,
					      const char *name,
					      struct hp_error *err)
{
	const struct hp_device_type *t = hp_catalog_find(cat, name);

	if (!t)
		hp_error_set(err, HP_EINVAL,
			     "device type '%s' is not in the catalog",
			     name ? name : "");
	return t;
}
