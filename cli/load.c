/*
 * load.c - the loading sequence of the commands (libhetpool's ctx.h) with
 * one wording for each error: "hetpool: CMD: " and the library's message,
 * and, when a shipped file is missing or a name unknown, what to give
 * instead.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* What to give when the shipped file named in msg is missing. */
const char *cli_load_hint(const struct hp_error *err)
{
	if (err->code != HP_ENOENT)
		return "";
	if (strstr(err->msg, "data/" HP_DATA_CATALOG " found"))
		return "; give --catalog FILE";
	if (strstr(err->msg, "data/" HP_DATA_ESTIMATOR " found"))
		return "; give --estimator FILE ('hetpool fit')";
	return "";
}

struct hp_ctx *cli_load_ctx(const char *cmd, const char *catalog,
			    const char *estimator, bool with_estimator,
			    int *status)
{
	struct hp_ctx_options o = {catalog, estimator, !with_estimator};
	struct hp_error err = {0};
	struct hp_ctx *ctx = hp_ctx_new(&o, &err);

	if (!ctx)
		*status = cli_error(cli_status_for(err.code), "%s: %s%s", cmd,
				    err.msg, cli_load_hint(&err));
	return ctx;
}

struct hp_catalog *cli_load_catalog(const char *cmd, const char *catalog,
				    struct hp_host *host, int *status)
{
	struct hp_error err = {0};
	struct hp_catalog *cat = hp_ctx_load_catalog(catalog, host, &err);

	if (!cat)
		*status = cli_error(cli_status_for(err.code), "%s: %s%s", cmd,
				    err.msg, cli_load_hint(&err));
	return cat;
}

struct hp_graph *cli_load_graph(const char *cmd, const char *path, int *status)
{
	struct hp_error err = {0};
	struct hp_graph *g = hp_ctx_load_graph(path, &err);

	if (!g)
		*status =
		    cli_error(cli_status_for(err.code), "%s: %s", cmd, err.msg);
	return g;
}

int cli_load_model(const char *cmd, const char *path, int64_t batch,
		   const int64_t *shape, int rank, struct hp_model_input *out)
{
	struct hp_error err = {0};
	int rc = hp_ctx_load_model(path, batch, shape, rank, out, &err);

	if (rc)
		return cli_error(cli_status_for(rc), "%s: %s", cmd, err.msg);
	return 0;
}

struct hp_pool *cli_load_pool(const char *cmd, const char *path,
			      const struct hp_catalog *cat, int *status)
{
	struct hp_error err = {0};
	struct hp_pool *pool = hp_ctx_load_pool(path, cat, &err);

	/* A pool file that cannot be read is bad input, like one that
	 * cannot be parsed. */
	if (!pool)
		*status =
		    cli_error(err.code == HP_ENOMEM ? EXIT_FAIL : EXIT_USAGE,
			      "%s: %s", cmd, err.msg);
	return pool;
}

const struct hp_device_type *cli_find_type(const char *cmd,
					   const struct hp_catalog *cat,
					   const char *name, int *status)
{
	struct hp_error err = {0};
	const struct hp_device_type *t = hp_ctx_find_type(cat, name, &err);

	if (!t)
		*status = cli_error(EXIT_USAGE, "%s: %s; see 'hetpool devices'",
				    cmd, err.msg);
	return t;
}

int cli_input_sample_s(const char *cmd, double rate, double src_px,
		       int64_t input_hw, double *sample_s, char *basis,
		       size_t n)
{
	struct hp_error err = {0};
	struct hp_host h;
	struct hp_host_file f;
	char path[4200];
	bool have = false;

	if (rate > 0) {
		*sample_s = 1 / rate;
		if (n)
			snprintf(basis, n,
				 "%.4g samples/s a core (--input-rate)", rate);
		return 0;
	}
	if (!(src_px > 0))
		src_px = (double)HP_LOADER_SRC_W * HP_LOADER_SRC_H;
	/* one core's figure: in the host file of the threads used, else in
	 * the one-thread file ('hetpool host --measure --threads 1') */
	if (!hp_host_detect(&h, &err))
		for (int k = 0; k < 2 && !have; k++) {
			h.threads = k == 0 ? hp_ctx_threads() : 1;
			have = !hp_host_file_path(NULL, &h, path, sizeof(path),
						  &err) &&
			       !hp_host_file_load(path, &f, &err) &&
			       f.peaks.loader.decode_s_per_px > 0;
		}
	if (!have)
		return cli_error(EXIT_USAGE,
				 "%s: the input pipeline needs one core's "
				 "rate: give --input-rate R (samples/s a "
				 "core), or measure this host's JPEG pipeline "
				 "with 'hetpool host --measure'",
				 cmd);
	if (!(input_hw > 0))
		return cli_error(EXIT_USAGE,
				 "%s: the model's input has no image size: "
				 "give --input-rate R",
				 cmd);
	*sample_s = hp_loader_sample_s(&f.peaks.loader, src_px,
				       (double)input_hw * (double)input_hw);
	if (n)
		snprintf(
		    basis, n,
		    "this host's JPEG pipeline, measured %s: decode %.0f px, "
		    "crop to %lldx%lld, flip, normalize",
		    f.peaks.when, src_px, (long long)input_hw,
		    (long long)input_hw);
	return 0;
}
