/*
 * json.c - an estimator as a versioned JSON document (jansson): the
 * fitted parameters, residual quantiles, memory and power models and the
 * provenance; loading checks every field and names the one that is wrong.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "estimate/estimate_int.h"
#include "util/banned.h"

#define MAX_DEVICES 1024

static const char *const th_names[HP__NTH] = {"log_emax_conv",
					      "log_emax_fc",
					      "log_emax_other",
					      "log_tau_conv_s",
					      "log_tau_fc_s",
					      "log_tau_other_s",
					      "log_mem_eff",
					      "log_step_overhead_s",
					      "kappa_logit",
					      "log_comm_factor",
					      "log_scale_gavel",
					      "log_scale_zeus",
					      "log_overhead_gavel_s",
					      "log_overhead_zeus_s",
					      "log_mem_eff_weights",
					      "log_conv_half_channels",
					      "log_per_sample_gavel_s",
					      "log_per_sample_zeus_s",
					      "log_cache_bytes",
					      "log_cache_speedup",
					      "log_conv_half_pixels",
					      "kappa_amp_logit",
					      "log_maxpool_traffic",
					      "log_conv_half_reduction"};
static const char *const lin_names[HP__LIN_P] = {
    "intercept",   "conv_layers",   "fc_layers", "ln_filters",
    "ln_fc_width", "ln_input_size", "ln_batch"};
static const char *const range_names[5] = {"conv_layers", "fc_layers",
					   "filters", "fc_width", "input_size"};

int hp__th_index(const char *name)
{
	for (int j = 0; name && j < HP__NTH; j++)
		if (!strcmp(th_names[j], name))
			return j;
	return -1;
}

const char *hp__th_name(int j)
{
	return j >= 0 && j < HP__NTH ? th_names[j] : NULL;
}

static json_t *params_json(const double *th)
{
	json_t *o = json_object();
	for (int j = 0; j < HP__NTH; j++)
		json_object_set_new(o, th_names[j], json_real(th[j]));
	return o;
}

static json_t *pair(double a, double b)
{
	return json_pack("[f, f]", a, b);
}

static json_t *est_json(const struct hp_estimator *est)
{
	json_t *o = json_object(), *devs = json_array(), *ds = json_array();
	char buf[sizeof(est->datasets)];
	char *p = buf;

	json_object_set_new(o, "format", json_string("hetpool-estimator"));
	json_object_set_new(o, "version", json_integer(est->version));
	json_object_set_new(o, "family",
			    json_string(hp_est_family_name(est->family)));
	json_object_set_new(o, "created", json_string(est->created));
	snprintf(buf, sizeof(buf), "%s", est->datasets);
	while (*p) {
		size_t n = strcspn(p, ";");
		json_array_append_new(ds, json_stringn(p, n));
		p += n;
		if (*p)
			p++;
	}
	json_object_set_new(o, "provenance",
			    json_pack("{s:s, s:o, s:s, s:i, s:i}", "summary",
				      est->provenance, "datasets", ds,
				      "public_dir", est->public_dir,
				      "profile_rows", est->profile_rows,
				      "public_rows", est->public_rows));
	json_object_set_new(
	    o, "gpu",
	    json_pack("{s:b, s:i, s:o, s:o, s:o}", "fitted", est->has_gpu,
		      "rows", est->gpu_n, "params", params_json(est->gpu_th),
		      "interval_log_measured",
		      pair(est->gpu_q_lo, est->gpu_q_hi),
		      "interval_log_unmeasured",
		      pair(est->gpu_lodo_lo, est->gpu_lodo_hi)));
	json_object_set_new(json_object_get(o, "gpu"), "amp_rows",
			    json_integer(est->gpu_amp_n));
	for (int i = 0; i < est->ndev; i++) {
		const struct hp__dev_fit *d = &est->dev[i];
		json_t *dj = json_pack("{s:s, s:s, s:i, s:f, s:o}", "name",
				       d->name, "kind", d->cpu ? "cpu" : "gpu",
				       "rows", d->n, "log_scale", d->log_scale,
				       "interval_log", pair(d->q_lo, d->q_hi));
		if (d->own_theta) {
			json_object_set_new(dj, "params", params_json(d->th));
			json_object_set_new(dj, "fit_fp32_flops",
					    json_real(d->fit_fp32));
			json_object_set_new(dj, "chan_block",
					    json_integer(d->chan_block));
			if (d->cpu && d->ref_threads > 0)
				json_object_set_new(
				    dj, "host",
				    json_pack("{s:i, s:f, s:f, s:f}", "threads",
					      d->ref_threads, "fp32_flops",
					      d->ref_fp32_meas,
					      "triad_bytes_per_s", d->ref_bw,
					      "cache_bytes", d->ref_cache));
		}
		if (d->ref_time_s > 0)
			json_object_set_new(dj, "ref_time_s",
					    json_real(d->ref_time_s));
		if (d->has_linear) {
			json_t *c = json_object(), *r = json_object();
			for (int j = 0; j < HP__LIN_P; j++)
				json_object_set_new(c, lin_names[j],
						    json_real(d->beta[j]));
			for (int j = 0; j < 5; j++)
				json_object_set_new(
				    r, range_names[j],
				    pair(d->range_lo[j], d->range_hi[j]));
			json_object_set_new(
			    dj, "linear",
			    json_pack("{s:i, s:o, s:o, s:o}", "rows", d->lin_n,
				      "coef", c, "interval_log",
				      pair(d->lin_q_lo, d->lin_q_hi), "range",
				      r));
		}
		json_array_append_new(devs, dj);
	}
	json_object_set_new(o, "devices", devs);
	json_object_set_new(
	    o, "memory",
	    json_pack("{s:f, s:f, s:f, s:f, s:i}", "activation_factor",
		      est->mem_act_factor, "gpu_activation_factor",
		      est->mem_gpu_act_factor, "workspace_bytes",
		      est->mem_workspace_bytes, "cuda_context_bytes",
		      est->mem_cuda_context_bytes, "rows", est->mem_n));
	json_object_set_new(
	    o, "power",
	    json_pack("{s:f, s:i, s:o, s:s}", "gamma", est->power_gamma, "rows",
		      est->power_n, "mape_percent",
		      isnan(est->power_mape) ? json_null()
					     : json_real(est->power_mape),
		      "utilisation", est->power_busy ? "busy" : "flops"));
	return o;
}

char *hp_estimator_dumps(const struct hp_estimator *est)
{
	json_t *o = est_json(est);
	char *s =
	    o ? json_dumps(o, JSON_INDENT(1) | JSON_REAL_PRECISION(17)) : NULL;
	json_decref(o);
	return s;
}

/* --- saving: a temporary file beside the target, renamed over it ----- */

static int cannot_write(struct hp_error *err, int code, const char *path, int e)
{
	return hp_error_set(err, code, "cannot write '%s': %s", path,
			    strerror(e));
}

int hp_estimator_save_open(struct hp_estimator_file *f, const char *path,
			   struct hp_error *err)
{
	struct stat st;
	bool exists = path && *path && stat(path, &st) == 0;
	int rc;

	memset(f, 0, sizeof(*f));
	f->af.fd = -1;
	if (exists && S_ISDIR(st.st_mode))
		return cannot_write(err, HP_EINVAL, path, EISDIR);
	/* created with the umask's mode, or the mode of the file it will
	 * replace */
	if ((rc = hp_atomic_open(&f->af, path, 0666, err)))
		return rc;
	if (exists && S_ISREG(st.st_mode))
		(void)fchmod(f->af.fd, st.st_mode & 07777);
	return 0;
}

void hp_estimator_save_abort(struct hp_estimator_file *f)
{
	hp_atomic_abort(&f->af);
}

int hp_estimator_save_commit(struct hp_estimator_file *f,
			     const struct hp_estimator *est,
			     struct hp_error *err)
{
	char *s = hp_estimator_dumps(est);
	size_t len;
	int rc;

	if (!s) {
		hp_estimator_save_abort(f);
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	}
	len = strlen(s);
	s[len++] = '\n'; /* in place of the NUL: written by length */
	rc = hp_atomic_write(&f->af, s, len, err);
	free(s);
	return rc ? rc : hp_atomic_commit(&f->af, err);
}

int hp_estimator_save(const struct hp_estimator *est, const char *path,
		      struct hp_error *err)
{
	struct hp_estimator_file f;
	int rc = hp_estimator_save_open(&f, path, err);

	return rc ? rc : hp_estimator_save_commit(&f, est, err);
}

/* --- loading ------------------------------------------------------------ */

static int bad(struct hp_error *err, const char *where, const char *what)
{
	return hp_error_set(err, HP_EPARSE, "estimator: '%s': %s", where, what);
}

static int get_num(json_t *o, const char *key, const char *ctx, double lo,
		   double hi, double *out, struct hp_error *err)
{
	json_t *v = json_object_get(o, key);
	char where[128];

	snprintf(where, sizeof(where), "%s%s%s", ctx, *ctx ? "." : "", key);
	if (!json_is_number(v))
		return bad(err, where, "missing or not a number");
	*out = json_number_value(v);
	if (!isfinite(*out) || *out < lo || *out > hi) {
		char m[96];
		snprintf(m, sizeof(m), "%g is outside %g..%g", *out, lo, hi);
		return bad(err, where, m);
	}
	return 0;
}

static int get_int(json_t *o, const char *key, const char *ctx, int *out,
		   struct hp_error *err)
{
	double v;
	int rc = get_num(o, key, ctx, 0, 1e9, &v, err);
	if (!rc)
		*out = (int)v;
	return rc;
}

static int get_pair(json_t *o, const char *key, const char *ctx, double lo,
		    double hi, double *a, double *b, struct hp_error *err)
{
	json_t *v = json_object_get(o, key);
	char where[128];

	snprintf(where, sizeof(where), "%s.%s", ctx, key);
	if (!json_is_array(v) || json_array_size(v) != 2 ||
	    !json_is_number(json_array_get(v, 0)) ||
	    !json_is_number(json_array_get(v, 1)))
		return bad(err, where, "missing or not a pair of numbers");
	*a = json_number_value(json_array_get(v, 0));
	*b = json_number_value(json_array_get(v, 1));
	if (!(*a >= lo && *a <= hi && *b >= lo && *b <= hi && *a <= *b))
		return bad(err, where, "not an ordered pair in range");
	return 0;
}

static int get_params(json_t *o, const char *ctx, double *th,
		      struct hp_error *err)
{
	char where[96];
	json_t *p = json_object_get(o, "params");

	snprintf(where, sizeof(where), "%s.params", ctx);
	if (!json_is_object(p))
		return bad(err, where, "missing or not an object");
	for (int j = 0; j < HP__NTH; j++) {
		int rc;
		/* Files written before mixed precision was modelled have no
		 * kappa_amp_logit, before 2026-12-01 no log_maxpool_traffic
		 * nor log_conv_half_reduction: their defaults
		 * (hp__phys_prior(); the last two turn their terms off). */
		if ((j == HP__TH_KAPPA_AMP || j == HP__TH_IDX ||
		     j == HP__TH_KHALF) &&
		    !json_object_get(p, th_names[j])) {
			double prior[HP__NTH];
			hp__phys_prior(false, prior);
			th[j] = prior[j];
			continue;
		}
		rc = get_num(p, th_names[j], where, -80, 40, &th[j], err);
		if (rc)
			return rc;
	}
	return 0;
}

static int load_device(json_t *dj, int i, struct hp__dev_fit *d,
		       struct hp_error *err)
{
	char ctx[48];
	json_t *v, *lin;
	const char *kind;
	int rc;

	snprintf(ctx, sizeof(ctx), "devices[%d]", i);
	if (!json_is_object(dj))
		return bad(err, ctx, "not an object");
	v = json_object_get(dj, "name");
	if (!json_is_string(v) || json_string_length(v) == 0 ||
	    json_string_length(v) >= sizeof(d->name))
		return bad(err, ctx, "name missing, empty or too long");
	snprintf(d->name, sizeof(d->name), "%s", json_string_value(v));
	kind = json_string_value(json_object_get(dj, "kind"));
	if (!kind || (strcmp(kind, "cpu") && strcmp(kind, "gpu")))
		return bad(err, ctx, "kind must be \"cpu\" or \"gpu\"");
	d->cpu = !strcmp(kind, "cpu");
	if ((rc = get_int(dj, "rows", ctx, &d->n, err)) ||
	    (rc = get_num(dj, "log_scale", ctx, -20, 20, &d->log_scale, err)) ||
	    (rc = get_pair(dj, "interval_log", ctx, -20, 20, &d->q_lo, &d->q_hi,
			   err)))
		return rc;
	if (json_object_get(dj, "params")) {
		if ((rc = get_params(dj, ctx, d->th, err)) ||
		    (rc = get_num(dj, "fit_fp32_flops", ctx, 1e6, 1e19,
				  &d->fit_fp32, err)))
			return rc;
		d->own_theta = true;
		d->chan_block = 1;
		if (json_object_get(dj, "chan_block")) {
			if ((rc = get_int(dj, "chan_block", ctx, &d->chan_block,
					  err)))
				return rc;
			if (d->chan_block < 1 || d->chan_block > 64)
				return bad(err, ctx,
					   "chan_block must be 1 to 64");
		}
		/* the profiled host's figures (optional: older files have
		 * none) */
		v = json_object_get(dj, "host");
		if (d->cpu && v && !json_is_null(v)) {
			if (!json_is_object(v))
				return bad(err, ctx, "host is not an object");
			if ((rc = get_int(v, "threads", ctx, &d->ref_threads,
					  err)) ||
			    (rc = get_num(v, "fp32_flops", ctx, 0, 1e19,
					  &d->ref_fp32_meas, err)) ||
			    (rc = get_num(v, "triad_bytes_per_s", ctx, 0, 1e16,
					  &d->ref_bw, err)) ||
			    (rc = get_num(v, "cache_bytes", ctx, 0, 1e13,
					  &d->ref_cache, err)))
				return rc;
			if (d->ref_threads < 1 || d->ref_threads > 4096)
				return bad(err, ctx,
					   "host threads must be 1 to 4096");
		}
	}
	/* the yardstick's speed; files written before it lack it */
	if (json_object_get(dj, "ref_time_s") &&
	    (rc = get_num(dj, "ref_time_s", ctx, 1e-7, 1e3, &d->ref_time_s,
			  err)))
		return rc;
	lin = json_object_get(dj, "linear");
	if (lin && !json_is_null(lin)) {
		json_t *c, *r;
		char lctx[64];
		snprintf(lctx, sizeof(lctx), "%s.linear", ctx);
		if (!json_is_object(lin))
			return bad(err, lctx, "not an object");
		if ((rc = get_int(lin, "rows", lctx, &d->lin_n, err)) ||
		    (rc = get_pair(lin, "interval_log", lctx, -20, 20,
				   &d->lin_q_lo, &d->lin_q_hi, err)))
			return rc;
		c = json_object_get(lin, "coef");
		r = json_object_get(lin, "range");
		if (!json_is_object(c))
			return bad(err, lctx, "coef missing");
		if (!json_is_object(r))
			return bad(err, lctx, "range missing");
		snprintf(lctx, sizeof(lctx), "%s.linear.coef", ctx);
		for (int j = 0; j < HP__LIN_P; j++)
			if ((rc = get_num(c, lin_names[j], lctx, -1e3, 1e3,
					  &d->beta[j], err)))
				return rc;
		snprintf(lctx, sizeof(lctx), "%s.linear", ctx);
		for (int j = 0; j < 5; j++)
			if ((rc = get_pair(r, range_names[j], lctx, 0, 1e12,
					   &d->range_lo[j], &d->range_hi[j],
					   err)))
				return rc;
		d->has_linear = true;
	}
	return 0;
}

static int load_obj(json_t *o, struct hp_estimator *est, struct hp_error *err)
{
	json_t *v, *gpu, *devs, *mem, *pw, *prov;
	enum hp_est_family fam;
	double ver;
	int rc;
	size_t nd;

	if (!json_is_object(o))
		return bad(err, "(top)", "not a JSON object");
	v = json_object_get(o, "format");
	if (!json_is_string(v) ||
	    strcmp(json_string_value(v), "hetpool-estimator"))
		return bad(err, "format", "not \"hetpool-estimator\"");
	if ((rc = get_num(o, "version", "", 0, 1e6, &ver, err)))
		return rc;
	if ((int)ver != HP_ESTIMATOR_VERSION) {
		char m[96];
		snprintf(m, sizeof(m),
			 "version %g; this hetpool reads version %d: refit "
			 "with 'hetpool fit'",
			 ver, HP_ESTIMATOR_VERSION);
		return bad(err, "version", m);
	}
	est->version = HP_ESTIMATOR_VERSION;
	v = json_object_get(o, "family");
	if (!json_is_string(v) ||
	    hp_est_family_parse(json_string_value(v), &fam) ||
	    fam == HP_EST_ROOFLINE)
		return bad(err, "family", "not \"physical\" or \"linear\"");
	est->family = fam;
	v = json_object_get(o, "created");
	snprintf(est->created, sizeof(est->created), "%s",
		 json_is_string(v) ? json_string_value(v) : "");
	prov = json_object_get(o, "provenance");
	if (json_is_object(prov)) {
		json_t *ds = json_object_get(prov, "datasets");
		size_t off = 0;
		v = json_object_get(prov, "summary");
		snprintf(est->provenance, sizeof(est->provenance), "%s",
			 json_is_string(v) ? json_string_value(v) : "");
		v = json_object_get(prov, "public_dir");
		snprintf(est->public_dir, sizeof(est->public_dir), "%s",
			 json_is_string(v) ? json_string_value(v) : "");
		v = json_object_get(prov, "profile_rows");
		est->profile_rows =
		    json_is_integer(v) ? (int)json_integer_value(v) : 0;
		v = json_object_get(prov, "public_rows");
		est->public_rows =
		    json_is_integer(v) ? (int)json_integer_value(v) : 0;
		for (size_t i = 0;
		     json_is_array(ds) && i < json_array_size(ds) &&
		     off < sizeof(est->datasets);
		     i++) {
			const char *s =
			    json_string_value(json_array_get(ds, i));
			off += (size_t)snprintf(
			    est->datasets + off, sizeof(est->datasets) - off,
			    "%s%s", i ? ";" : "", s ? s : "");
		}
	}
	gpu = json_object_get(o, "gpu");
	if (!json_is_object(gpu))
		return bad(err, "gpu", "missing or not an object");
	est->has_gpu = json_is_true(json_object_get(gpu, "fitted"));
	est->gpu_amp_n = 0;
	if (json_object_get(gpu, "amp_rows") &&
	    (rc = get_int(gpu, "amp_rows", "gpu", &est->gpu_amp_n, err)))
		return rc;
	if ((rc = get_int(gpu, "rows", "gpu", &est->gpu_n, err)) ||
	    (rc = get_params(gpu, "gpu", est->gpu_th, err)) ||
	    (rc = get_pair(gpu, "interval_log_measured", "gpu", -20, 20,
			   &est->gpu_q_lo, &est->gpu_q_hi, err)) ||
	    (rc = get_pair(gpu, "interval_log_unmeasured", "gpu", -20, 20,
			   &est->gpu_lodo_lo, &est->gpu_lodo_hi, err)))
		return rc;
	devs = json_object_get(o, "devices");
	if (!json_is_array(devs))
		return bad(err, "devices", "missing or not an array");
	nd = json_array_size(devs);
	if (nd > MAX_DEVICES)
		return bad(err, "devices", "too many device types");
	est->dev = calloc(nd + 1, sizeof(*est->dev));
	if (!est->dev)
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	for (size_t i = 0; i < nd; i++) {
		if ((rc = load_device(json_array_get(devs, i), (int)i,
				      &est->dev[i], err)))
			return rc;
		if (!est->dev[i].cpu)
			memcpy(est->dev[i].th, est->gpu_th,
			       sizeof(est->gpu_th));
		est->ndev++;
	}
	mem = json_object_get(o, "memory");
	if (!json_is_object(mem))
		return bad(err, "memory", "missing or not an object");
	if ((rc = get_num(mem, "activation_factor", "memory", 0, 100,
			  &est->mem_act_factor, err)) ||
	    (rc = get_num(mem, "gpu_activation_factor", "memory", 0, 100,
			  &est->mem_gpu_act_factor, err)) ||
	    (rc = get_num(mem, "workspace_bytes", "memory", 0, 1e15,
			  &est->mem_workspace_bytes, err)) ||
	    (rc = get_num(mem, "cuda_context_bytes", "memory", 0, 1e12,
			  &est->mem_cuda_context_bytes, err)) ||
	    (rc = get_int(mem, "rows", "memory", &est->mem_n, err)))
		return rc;
	pw = json_object_get(o, "power");
	if (!json_is_object(pw))
		return bad(err, "power", "missing or not an object");
	if ((rc = get_num(pw, "gamma", "power", 0.001, 100, &est->power_gamma,
			  err)) ||
	    (rc = get_int(pw, "rows", "power", &est->power_n, err)))
		return rc;
	v = json_object_get(pw, "mape_percent");
	est->power_mape = json_is_number(v) ? json_number_value(v) : NAN;
	/* "busy": u is the busy share of the step; absent (files before
	 * it) or "flops": FLOP utilisation, as gamma was fitted then */
	v = json_object_get(pw, "utilisation");
	if (v &&
	    !(json_is_string(v) && (!strcmp(json_string_value(v), "busy") ||
				    !strcmp(json_string_value(v), "flops"))))
		return bad(err, "power.utilisation", "not 'busy' or 'flops'");
	est->power_busy = v && !strcmp(json_string_value(v), "busy");
	if (!est->provenance[0])
		snprintf(est->provenance, sizeof(est->provenance), "fitted %s",
			 est->created);
	return 0;
}

struct hp_estimator *hp_estimator_loads(const char *text, size_t len,
					struct hp_error *err)
{
	struct hp_estimator *est;
	json_error_t je;
	json_t *o;

	o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!o) {
		hp_error_set(err, HP_EPARSE,
			     "estimator: not valid JSON: line %d: %s", je.line,
			     je.text);
		return NULL;
	}
	est = calloc(1, sizeof(*est));
	if (!est) {
		json_decref(o);
		hp_error_set(err, HP_ENOMEM, "out of memory");
		return NULL;
	}
	if (load_obj(o, est, err)) {
		hp_estimator_free(est);
		est = NULL;
	}
	json_decref(o);
	return est;
}

struct hp_estimator *hp_estimator_load(const char *path, struct hp_error *err)
{
	struct hp_estimator *est;
	char *text;
	size_t len;

	if (hp_read_file(path, HP_ESTIMATOR_MAX_BYTES, &text, &len, err)) {
		hp_error_prefix(err, "estimator '%s'", path);
		return NULL;
	}
	est = hp_estimator_loads(text, len, err);
	free(text);
	if (!est)
		hp_error_prefix(err, "'%s'", path);
	return est;
}
