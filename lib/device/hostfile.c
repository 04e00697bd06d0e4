/*
 * hostfile.c - the host file: one JSON file per host and thread count in
 * the state folder (STATE/hosts/KEY.json) holding the host's description,
 * its measured peaks and its calibration, and how the catalog's CPU type
 * takes them in, so that every program predicts for this host from what
 * was measured here without being told.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hetpool/device.h"
#include "util/banned.h"

#define HOST_FILE_MAX_BYTES (1u << 20)
#define HOST_FILE_FORMAT "hetpool-host"

void hp_host_key(const struct hp_host *h, char *buf, size_t n)
{
	char tmp[256];
	size_t k = 0;
	bool dash = true; /* no leading dash */

	snprintf(tmp, sizeof(tmp), "%s %s t%d", h->model, h->isa,
		 hp_host_threads(h));
	for (const char *p = tmp; *p && k + 1 < n; p++) {
		char c = *p;
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
			buf[k++] = c;
			dash = false;
		} else if (!dash) {
			buf[k++] = '-';
			dash = true;
		}
	}
	while (k > 0 && buf[k - 1] == '-')
		k--;
	if (n)
		buf[k < n ? k : n - 1] = '\0';
}

int hp_state_dir(char *buf, size_t n, struct hp_error *err)
{
	const char *v = getenv("HETPOOL_STATE_DIR");
	int len;

	if (v && *v)
		len = snprintf(buf, n, "%s", v);
	else if ((v = getenv("XDG_STATE_HOME")) && *v)
		len = snprintf(buf, n, "%s/hetpool", v);
	else if ((v = getenv("HOME")) && *v)
		len = snprintf(buf, n, "%s/.local/state/hetpool", v);
	else
		return hp_error_set(err, HP_ENOENT,
				    "no state folder: set HETPOOL_STATE_DIR "
				    "(or XDG_STATE_HOME, HOME)");
	if (len < 0 || (size_t)len >= n)
		return hp_error_set(err, HP_ETOOBIG, "state folder too long");
	return 0;
}

int hp_host_file_path(const char *state, const struct hp_host *h, char *buf,
		      size_t n, struct hp_error *err)
{
	char dir[4096], key[160];
	int len, rc;

	if (!state) {
		if ((rc = hp_state_dir(dir, sizeof(dir), err)))
			return rc;
		state = dir;
	}
	hp_host_key(h, key, sizeof(key));
	len = snprintf(buf, n, "%s/hosts/%s.json", state, key);
	if (len < 0 || (size_t)len >= n)
		return hp_error_set(err, HP_ETOOBIG, "host file path too long");
	return 0;
}

void hp_host_file_init(struct hp_host_file *f, const struct hp_host *h)
{
	memset(f, 0, sizeof(*f));
	f->host = *h;
	f->host.threads = hp_host_threads(h);
	hp_host_key(&f->host, f->key, sizeof(f->key));
	f->peaks.fp32_flops = f->peaks.triad_bw = f->peaks.copy_bw = NAN;
	f->peaks.array_bytes = NAN;
	f->peaks.power_load_w = f->peaks.power_idle_w = NAN;
	f->peaks.loader.decode_s_per_px = f->peaks.loader.augment_s_per_px =
	    f->peaks.loader.jpeg_bits_per_px = NAN;
	f->calib.ref_time_s = NAN;
}

/* NaN as JSON null. */
static json_t *num(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

char *hp_host_file_json(const struct hp_host_file *f)
{
	const struct hp_host *h = &f->host;
	const struct hp_host_calib *c = &f->calib;
	json_t *root = json_object(), *hj = json_object(), *pj, *cj;
	char *out;

	if (!root || !hj)
		goto fail;
	json_object_set_new(root, "format", json_string(HOST_FILE_FORMAT));
	json_object_set_new(root, "version", json_integer(1));
	json_object_set_new(root, "key", json_string(f->key));
	json_object_set_new(hj, "model", json_string(h->model));
	json_object_set_new(hj, "isa", json_string(h->isa));
	json_object_set_new(hj, "vector_bits", json_integer(h->vector_bits));
	json_object_set_new(hj, "threads", json_integer(h->threads));
	json_object_set_new(hj, "logical_cpus", json_integer(h->logical_cpus));
	json_object_set_new(hj, "physical_cores",
			    json_integer(h->physical_cores));
	json_object_set_new(hj, "sockets", json_integer(h->sockets));
	json_object_set_new(hj, "ghz", num(h->ghz));
	json_object_set_new(hj, "flops_per_cycle",
			    json_integer(h->flops_per_cycle));
	json_object_set_new(hj, "fp32_gflops_est", num(h->fp32_gflops));
	json_object_set_new(hj, "mem_gb", num(h->mem_gb));
	json_object_set_new(hj, "l1d_bytes", json_integer(h->l1d_bytes));
	json_object_set_new(hj, "l2_bytes", json_integer(h->l2_bytes));
	json_object_set_new(hj, "l3_bytes", json_integer(h->l3_bytes));
	json_object_set_new(hj, "l3_cpus", json_integer(h->l3_cpus));
	json_object_set_new(root, "host", hj);
	if (f->peaks.when[0]) {
		if (!(pj = json_object()))
			goto fail;
		json_object_set_new(pj, "threads",
				    json_integer(f->peaks.threads));
		json_object_set_new(pj, "fp32_flops", num(f->peaks.fp32_flops));
		json_object_set_new(pj, "triad_bytes_per_s",
				    num(f->peaks.triad_bw));
		json_object_set_new(pj, "memcpy_bytes_per_s",
				    num(f->peaks.copy_bw));
		json_object_set_new(pj, "array_bytes",
				    num(f->peaks.array_bytes));
		json_object_set_new(pj, "power_load_w",
				    num(f->peaks.power_load_w));
		json_object_set_new(pj, "power_idle_w",
				    num(f->peaks.power_idle_w));
		if (f->peaks.loader.decode_s_per_px > 0) {
			const struct hp_loader_cost *l = &f->peaks.loader;
			json_t *lj = json_pack(
			    "{s:f, s:f, s:f, s:i, s:i, s:i, s:i, s:I}",
			    "decode_s_per_px", l->decode_s_per_px,
			    "augment_s_per_px", l->augment_s_per_px,
			    "jpeg_bits_per_px", l->jpeg_bits_per_px, "src_w",
			    HP_LOADER_SRC_W, "src_h", HP_LOADER_SRC_H,
			    "quality", HP_LOADER_QUALITY, "out_hw",
			    HP_LOADER_OUT_HW, "samples",
			    (json_int_t)l->samples);
			if (!lj)
				goto fail;
			json_object_set_new(pj, "loader", lj);
		}
		json_object_set_new(pj, "when", json_string(f->peaks.when));
		json_object_set_new(root, "peaks", pj);
	}
	if (c->has) {
		json_t *ls = json_array();
		if (!(cj = json_object()) || !ls) {
			json_decref(ls);
			goto fail;
		}
		for (int k = 0; k < HP_HOST_CALIB_NCLASS; k++)
			json_array_append_new(ls, json_real(c->log_scale[k]));
		json_object_set_new(cj, "when", json_string(c->when));
		json_object_set_new(cj, "configurations", json_integer(c->n));
		json_object_set_new(cj, "threads", json_integer(c->threads));
		json_object_set_new(cj, "log_scale_conv_fc_other", ls);
		json_object_set_new(cj, "mape_before_pct", num(c->mape_before));
		json_object_set_new(cj, "mape_after_pct", num(c->mape_after));
		json_object_set_new(cj, "ref_time_s", num(c->ref_time_s));
		if (c->estimator[0])
			json_object_set_new(cj, "estimator",
					    json_string(c->estimator));
		if (c->cpu_fit[0])
			json_object_set_new(cj, "cpu_fit",
					    json_string(c->cpu_fit));
		json_object_set_new(cj, "interval_log_lo", json_real(c->q_lo));
		json_object_set_new(cj, "interval_log_hi", json_real(c->q_hi));
		if (c->nparams > 0) {
			json_t *oj = json_object(), *pj2 = json_object();
			if (!oj || !pj2) {
				json_decref(oj);
				json_decref(pj2);
				json_decref(cj);
				goto fail;
			}
			for (int k = 0; k < c->nparams; k++)
				json_object_set_new(pj2, c->param_names[k],
						    json_real(c->params[k]));
			json_object_set_new(oj, "fit_gflops",
					    json_real(c->fit_gflops));
			json_object_set_new(oj, "chan_block",
					    json_integer(c->chan_block));
			json_object_set_new(oj, "params", pj2);
			json_object_set_new(cj, "own_fit", oj);
		}
		json_object_set_new(root, "calibration", cj);
	}
	out = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
	json_decref(root);
	return out;
fail:
	json_decref(root);
	json_decref(hj);
	return NULL;
}

/* A number field (null: NaN) within [lo, hi]; absent: NaN when optional. */
static int get_num(json_t *o, const char *key, const char *path, double lo,
		   double hi, bool need, double *out, struct hp_error *err)
{
	json_t *v = json_object_get(o, key);

	*out = NAN;
	if (!v || json_is_null(v)) {
		if (need)
			return hp_error_set(err, HP_EPARSE, "%s: '%s' missing",
					    path, key);
		return 0;
	}
	if (!json_is_number(v))
		return hp_error_set(err, HP_EPARSE, "%s: '%s' is not a number",
				    path, key);
	*out = json_number_value(v);
	if (!(*out >= lo && *out <= hi))
		return hp_error_set(err, HP_EPARSE,
				    "%s: '%s' %g out of range %g..%g", path,
				    key, *out, lo, hi);
	return 0;
}

static int get_int(json_t *o, const char *key, const char *path, int64_t lo,
		   int64_t hi, int64_t *out, struct hp_error *err)
{
	json_t *v = json_object_get(o, key);

	*out = 0;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < lo ||
	    json_integer_value(v) > hi)
		return hp_error_set(err, HP_EPARSE,
				    "%s: '%s' is not an integer in %lld..%lld",
				    path, key, (long long)lo, (long long)hi);
	*out = json_integer_value(v);
	return 0;
}

/* calibration.own_fit (optional): this host's own fit's parameters by
 * name, its peak and channel block. */
static int get_own_fit(json_t *oj, const char *path, struct hp_host_calib *c,
		       struct hp_error *err)
{
	json_t *pj, *v;
	const char *name;
	int64_t cb;
	int rc;

	c->nparams = 0;
	if (!oj || json_is_null(oj))
		return 0;
	pj = json_object_get(oj, "params");
	if (!json_is_object(oj) || !json_is_object(pj) ||
	    json_object_size(pj) < 1 ||
	    json_object_size(pj) > HP_HOST_CALIB_MAXPARAMS)
		return hp_error_set(err, HP_EPARSE,
				    "%s: calibration 'own_fit' needs 'params': "
				    "an object of 1 to %d numbers",
				    path, HP_HOST_CALIB_MAXPARAMS);
	if ((rc = get_num(oj, "fit_gflops", path, 1e-3, 1e7, true,
			  &c->fit_gflops, err)) ||
	    (rc = get_int(oj, "chan_block", path, 1, 64, &cb, err)))
		return rc;
	c->chan_block = cb > 0 ? (int)cb : 1;
	json_object_foreach(pj, name, v)
	{
		double x = json_number_value(v);
		if (strlen(name) >= sizeof(c->param_names[0]) ||
		    !json_is_number(v) || !(x >= -80 && x <= 40))
			return hp_error_set(
			    err, HP_EPARSE,
			    "%s: calibration parameter %d is not a name of "
			    "under %zu characters with a number in -80..40",
			    path, c->nparams + 1, sizeof(c->param_names[0]));
		snprintf(c->param_names[c->nparams], sizeof(c->param_names[0]),
			 "%s", name);
		c->params[c->nparams++] = x;
	}
	return 0;
}

static int get_str(json_t *o, const char *key, const char *path, char *buf,
		   size_t n, struct hp_error *err)
{
	json_t *v = json_object_get(o, key);
	const char *s;

	if (!v)
		return hp_error_set(err, HP_EPARSE, "%s: '%s' missing", path,
				    key);
	if (!json_is_string(v))
		return hp_error_set(err, HP_EPARSE, "%s: '%s' is not a string",
				    path, key);
	s = json_string_value(v);
	if (strlen(s) >= n)
		return hp_error_set(err, HP_EPARSE, "%s: '%s' too long", path,
				    key);
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return hp_error_set(err, HP_EPARSE,
					    "%s: '%s' has a control character",
					    path, key);
	snprintf(buf, n, "%s", s);
	return 0;
}

/* peaks.loader: absent or null, not measured (files before it). */
static int parse_loader(json_t *lj, const char *path, struct hp_loader_cost *l,
			struct hp_error *err)
{
	int64_t n;
	int rc;

	if (!lj || json_is_null(lj))
		return 0;
	if (!json_is_object(lj))
		return hp_error_set(err, HP_EPARSE,
				    "%s: 'peaks.loader' is not an object",
				    path);
	if ((rc = get_num(lj, "decode_s_per_px", path, 1e-13, 1e-3, true,
			  &l->decode_s_per_px, err)) ||
	    (rc = get_num(lj, "augment_s_per_px", path, 1e-13, 1e-3, true,
			  &l->augment_s_per_px, err)) ||
	    (rc = get_num(lj, "jpeg_bits_per_px", path, 0, 64, false,
			  &l->jpeg_bits_per_px, err)) ||
	    (rc = get_int(lj, "samples", path, 0, INT32_MAX, &n, err)))
		return rc;
	l->samples = (int)n;
	return 0;
}

static int parse_host(json_t *hj, const char *path, struct hp_host *h,
		      struct hp_error *err)
{
	int64_t v;
	int rc;

	if (!json_is_object(hj))
		return hp_error_set(err, HP_EPARSE, "%s: 'host' missing", path);
	if ((rc =
		 get_str(hj, "model", path, h->model, sizeof(h->model), err)) ||
	    (rc = get_str(hj, "isa", path, h->isa, sizeof(h->isa), err)))
		return rc;
#define INT_FIELD(name, hi)                                                    \
	do {                                                                   \
		if ((rc = get_int(hj, #name, path, 0, hi, &v, err)))           \
			return rc;                                             \
		h->name = (int)v;                                              \
	} while (0)
	INT_FIELD(vector_bits, 4096);
	INT_FIELD(threads, 4096);
	INT_FIELD(logical_cpus, 65536);
	INT_FIELD(physical_cores, 65536);
	INT_FIELD(sockets, 4096);
	INT_FIELD(flops_per_cycle, 4096);
	INT_FIELD(l3_cpus, 65536);
#undef INT_FIELD
	if ((rc = get_int(hj, "l1d_bytes", path, 0, (int64_t)1 << 40,
			  &h->l1d_bytes, err)) ||
	    (rc = get_int(hj, "l2_bytes", path, 0, (int64_t)1 << 40,
			  &h->l2_bytes, err)) ||
	    (rc = get_int(hj, "l3_bytes", path, 0, (int64_t)1 << 40,
			  &h->l3_bytes, err)) ||
	    (rc = get_num(hj, "ghz", path, 0.01, 100, false, &h->ghz, err)) ||
	    (rc = get_num(hj, "fp32_gflops_est", path, 1e-3, 1e9, false,
			  &h->fp32_gflops, err)) ||
	    (rc = get_num(hj, "mem_gb", path, 1e-6, 1e9, false, &h->mem_gb,
			  err)))
		return rc;
	if (h->threads < 1)
		return hp_error_set(err, HP_EPARSE,
				    "%s: 'threads' missing or 0", path);
	return 0;
}

int hp_host_file_parse(const char *text, size_t len, const char *path,
		       struct hp_host_file *f, struct hp_error *err)
{
	json_error_t je;
	json_t *root, *pj, *cj;
	char fmt[32];
	int rc = 0;
	int64_t v;

	memset(f, 0, sizeof(*f));
	f->peaks.fp32_flops = f->peaks.triad_bw = f->peaks.copy_bw = NAN;
	f->peaks.array_bytes = NAN;
	f->peaks.power_load_w = f->peaks.power_idle_w = NAN;
	f->peaks.loader.decode_s_per_px = f->peaks.loader.augment_s_per_px =
	    f->peaks.loader.jpeg_bits_per_px = NAN;
	f->calib.ref_time_s = NAN;
	if (len > HOST_FILE_MAX_BYTES)
		return hp_error_set(err, HP_ETOOBIG, "%s: larger than %u bytes",
				    path, HOST_FILE_MAX_BYTES);
	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!root)
		return hp_error_set(err, HP_EPARSE, "%s:%d:%d: %s", path,
				    je.line, je.column, je.text);
	if (!json_is_object(root)) {
		rc =
		    hp_error_set(err, HP_EPARSE, "%s: not a JSON object", path);
		goto out;
	}
	if ((rc = get_str(root, "format", path, fmt, sizeof(fmt), err)))
		goto out;
	if (strcmp(fmt, HOST_FILE_FORMAT)) {
		rc = hp_error_set(err, HP_EPARSE,
				  "%s: format '%s', not '" HOST_FILE_FORMAT "'",
				  path, fmt);
		goto out;
	}
	if ((rc = get_str(root, "key", path, f->key, sizeof(f->key), err)) ||
	    (rc = parse_host(json_object_get(root, "host"), path, &f->host,
			     err)))
		goto out;
	pj = json_object_get(root, "peaks");
	if (pj && !json_is_null(pj)) {
		if (!json_is_object(pj)) {
			rc = hp_error_set(err, HP_EPARSE,
					  "%s: 'peaks' is not an object", path);
			goto out;
		}
		if ((rc = get_int(pj, "threads", path, 1, 4096, &v, err)) ||
		    (rc = get_num(pj, "fp32_flops", path, 1e6, 1e18, true,
				  &f->peaks.fp32_flops, err)) ||
		    (rc = get_num(pj, "triad_bytes_per_s", path, 1e6, 1e15,
				  true, &f->peaks.triad_bw, err)) ||
		    (rc = get_num(pj, "memcpy_bytes_per_s", path, 1e6, 1e15,
				  false, &f->peaks.copy_bw, err)) ||
		    (rc = get_num(pj, "array_bytes", path, 1, 1e15, false,
				  &f->peaks.array_bytes, err)) ||
		    (rc = get_num(pj, "power_load_w", path, 1e-3, 1e5, false,
				  &f->peaks.power_load_w, err)) ||
		    (rc = get_num(pj, "power_idle_w", path, 0, 1e5, false,
				  &f->peaks.power_idle_w, err)) ||
		    (rc = get_str(pj, "when", path, f->peaks.when,
				  sizeof(f->peaks.when), err)))
			goto out;
		f->peaks.threads = (int)v;
		if ((rc = parse_loader(json_object_get(pj, "loader"), path,
				       &f->peaks.loader, err)))
			goto out;
		if (v < 1) {
			rc = hp_error_set(err, HP_EPARSE,
					  "%s: peaks without 'threads'", path);
			goto out;
		}
		if (!f->peaks.when[0]) {
			rc = hp_error_set(err, HP_EPARSE,
					  "%s: peaks without 'when'", path);
			goto out;
		}
	}
	cj = json_object_get(root, "calibration");
	if (cj && !json_is_null(cj)) {
		json_t *ls = json_object_get(cj, "log_scale_conv_fc_other");
		struct hp_host_calib *c = &f->calib;
		if (!json_is_object(cj) || !json_is_array(ls) ||
		    json_array_size(ls) != HP_HOST_CALIB_NCLASS) {
			rc = hp_error_set(err, HP_EPARSE,
					  "%s: 'calibration' needs "
					  "'log_scale_conv_fc_other' of %d "
					  "numbers",
					  path, HP_HOST_CALIB_NCLASS);
			goto out;
		}
		for (int k = 0; k < HP_HOST_CALIB_NCLASS; k++) {
			json_t *x = json_array_get(ls, (size_t)k);
			c->log_scale[k] = json_number_value(x);
			if (!json_is_number(x) ||
			    !(fabs(c->log_scale[k]) <= 5)) {
				rc = hp_error_set(err, HP_EPARSE,
						  "%s: calibration scale %d "
						  "not a number in -5..5",
						  path, k);
				goto out;
			}
		}
		if ((rc = get_str(cj, "when", path, c->when, sizeof(c->when),
				  err)) ||
		    (rc = get_int(cj, "configurations", path, 1, 1000000, &v,
				  err)))
			goto out;
		c->n = (int)v;
		if ((rc = get_int(cj, "threads", path, 0, 4096, &v, err)) ||
		    (rc = get_num(cj, "mape_before_pct", path, 0, 1e6, false,
				  &c->mape_before, err)) ||
		    (rc = get_num(cj, "mape_after_pct", path, 0, 1e6, false,
				  &c->mape_after, err)) ||
		    (rc = get_num(cj, "ref_time_s", path, 1e-12, 1e6, false,
				  &c->ref_time_s, err)) ||
		    (rc = get_num(cj, "interval_log_lo", path, -5, 5, false,
				  &c->q_lo, err)) ||
		    (rc = get_num(cj, "interval_log_hi", path, -5, 5, false,
				  &c->q_hi, err)))
			goto out;
		if (isnan(c->q_lo) || isnan(c->q_hi) || c->q_lo > c->q_hi)
			c->q_lo = c->q_hi = 0;
		/* the estimator it corrects (optional: older files) */
		if ((json_object_get(cj, "estimator") &&
		     (rc = get_str(cj, "estimator", path, c->estimator,
				   sizeof(c->estimator), err))) ||
		    (json_object_get(cj, "cpu_fit") &&
		     (rc = get_str(cj, "cpu_fit", path, c->cpu_fit,
				   sizeof(c->cpu_fit), err))))
			goto out;
		c->threads = (int)v;
		if ((rc = get_own_fit(json_object_get(cj, "own_fit"), path, c,
				      err)))
			goto out;
		if (c->n < 1) {
			rc = hp_error_set(err, HP_EPARSE,
					  "%s: calibration without "
					  "'configurations'",
					  path);
			goto out;
		}
		c->has = true;
	}
out:
	json_decref(root);
	return rc;
}

/* What to do with a host file that cannot be used: it is this host's
 * cache of its measurements, remade on demand. */
#define MOVE_AWAY                                                              \
	"move the file away: 'hetpool host --measure' and 'hetpool "           \
	"calibrate' make a new one"

int hp_host_file_load(const char *path, struct hp_host_file *f,
		      struct hp_error *err)
{
	char *text;
	size_t len;
	int rc;

	if (access(path, F_OK))
		return hp_error_set(err, HP_ENOENT, "no host file '%s'", path);
	if ((rc = hp_read_file(path, HOST_FILE_MAX_BYTES, &text, &len, err)))
		return rc;
	rc = hp_host_file_parse(text, len, path, f, err);
	free(text);
	if (rc && rc != HP_ENOMEM) {
		size_t n = err ? strlen(err->msg) : 0;
		if (err && n + 1 < sizeof(err->msg))
			snprintf(err->msg + n, sizeof(err->msg) - n, " (%s)",
				 MOVE_AWAY);
	}
	return rc;
}

/* mkdir -p of the folder that holds path. */
static int make_parents(const char *path, struct hp_error *err)
{
	char dir[4096], *slash;

	if (snprintf(dir, sizeof(dir), "%s", path) >= (int)sizeof(dir))
		return hp_error_set(err, HP_ETOOBIG, "path too long");
	if (!(slash = strrchr(dir, '/')) || slash == dir)
		return 0;
	*slash = '\0';
	return hp_mkdirs(dir, 0755, err);
}

int hp_host_file_save(const char *path, const struct hp_host_file *f,
		      struct hp_error *err)
{
	struct hp_atomic_file out;
	char *text = hp_host_file_json(f);
	int rc;

	if (!text)
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	if (!(rc = make_parents(path, err)) &&
	    !(rc = hp_atomic_open(&out, path, 0666, err)) &&
	    !(rc = hp_atomic_write(&out, text, strlen(text), err)) &&
	    !(rc = hp_atomic_write(&out, "\n", 1, err)))
		rc = hp_atomic_commit(&out, err);
	free(text);
	return rc;
}

int hp_host_file_apply_catalog(const char *state, const struct hp_host *h,
			       struct hp_catalog *cat, struct hp_error *err)
{
	struct hp_host_file f;
	struct hp_host hh = *h;
	char path[4200];
	bool have;
	int rc;
	double cache;

	hh.threads = hp_host_threads(h);
	/* the caches a layer's working set can stay in: cpu0's L2 and L3
	 * (one figure of the same kind on every host, for ratios) */
	cache = (double)hh.l2_bytes + (double)hh.l3_bytes;
	if ((rc = hp_host_file_path(state, &hh, path, sizeof(path), err)))
		return rc == HP_ENOENT ? 0 : rc;
	rc = hp_host_file_load(path, &f, err);
	if (!rc) {
		/* written for this host?  A file copied or renamed into place,
		 * or from another machine that shares this folder, holds
		 * another CPU's measurements */
		char want[sizeof(f.key)];
		hp_host_key(&hh, want, sizeof(want));
		if (strcmp(f.key, want) || strcmp(f.host.isa, hh.isa) ||
		    strcmp(f.host.model, hh.model))
			rc = hp_error_set(
			    err, HP_EINVAL,
			    "%s was written for '%s' (%.60s, %s), not this "
			    "host ('%s'): left out (%s)",
			    path, f.key, f.host.model, f.host.isa, want,
			    MOVE_AWAY);
	}
	/* a file that cannot be read or parsed, or another host's: the
	 * detected figures stay, all of them (until 3 December the threads,
	 * cores, caches and key were left unset too, and predictions lost
	 * the carry to this host: 2x off); the error is still returned for
	 * the caller to warn */
	have = rc == 0;
	for (int i = 0; i < cat->n; i++) {
		struct hp_device_type *t = &cat->types[i];
		if (t->kind != HP_DEVICE_CPU || !t->detected)
			continue;
		t->threads = hh.threads;
		t->physical_cores = hh.physical_cores;
		t->cache_bytes = cache > 0 ? cache : NAN;
		t->fp32_est_tflops = hp_host_fp32_est(&hh) / 1e12;
		hp_host_key(&hh, t->key, sizeof(t->key));
		if (!have)
			continue;
		if (f.peaks.when[0] && f.peaks.threads == hh.threads) {
			t->fp32_tflops = f.peaks.fp32_flops / 1e12;
			t->mem_bw_gbs = f.peaks.triad_bw / 1e9;
			t->peaks_measured = true;
			snprintf(t->peaks_when, sizeof(t->peaks_when), "%s",
				 f.peaks.when);
			/* measured package power: the power model's board
			 * power (under load) and idle */
			if (f.peaks.power_load_w > 0 &&
			    f.peaks.power_idle_w >= 0 &&
			    f.peaks.power_idle_w <= f.peaks.power_load_w) {
				t->tdp_w = f.peaks.power_load_w;
				t->idle_w = f.peaks.power_idle_w;
				snprintf(t->power_basis, sizeof(t->power_basis),
					 "RAPL at %d thread%s, %s", hh.threads,
					 hh.threads == 1 ? "" : "s",
					 f.peaks.when);
			}
		}
		if (f.calib.has)
			t->calib = f.calib;
	}
	if (rc && rc != HP_ENOENT)
		return rc;
	return have ? 1 : 0;
}
