/*
 * meas.c - what a refit needs: measurements (profiler rows, kept whole as
 * {column: text} so they can be written back as a dataset CSV, and
 * finished jobs' measured steps with their configuration), the datasets
 * registered by name, and the estimator versions fitted from them.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_int.h"
#include "util/banned.h"

static const char *const meas_kinds[] = {"profile", "job"};

static int meas_insert(struct hp__conn *c, const struct hp_store_measurement *m,
		       int64_t *id, struct hp_error *err)
{
	static const char sql[] =
	    "INSERT INTO measurements (kind, job_id, device_type, ndevices, "
	    "batch, step_time_s, predicted_step_time_s, energy_per_step_j, "
	    "power_w, config, source, created_s) VALUES (?, ?, ?, ?, ?, ?, ?, "
	    "?, ?, ?, ?, ?)";
	sqlite3_stmt *st;
	int rc, src;

	if ((unsigned)m->kind > HP_MEAS_JOB || !m->device_type ||
	    !*m->device_type || hp_str_has_control(m->device_type) ||
	    strlen(m->device_type) >= HP_TYPE_MAX * 4 || !m->config ||
	    m->ndevices < 1 || m->batch < 1 ||
	    !(isfinite(m->step_time_s) && m->step_time_s > 0) ||
	    (m->kind == HP_MEAS_JOB && m->job_id <= 0))
		return hp_error_set(err, HP_EINVAL,
				    "measurement: needs a kind, a device type, "
				    "a configuration, devices and batch of 1 "
				    "or more, a step time above 0 (and a job "
				    "for a job's)");
	if (!(st = hp__stmt(c, sql, err)))
		return err ? err->code : HP_EIO;
	hp__bind_text(st, 1, meas_kinds[m->kind]);
	if (m->job_id)
		sqlite3_bind_int64(st, 2, m->job_id);
	hp__bind_text(st, 3, m->device_type);
	sqlite3_bind_int(st, 4, m->ndevices);
	sqlite3_bind_int64(st, 5, m->batch);
	sqlite3_bind_double(st, 6, m->step_time_s);
	hp__bind_num(st, 7, m->predicted_step_time_s);
	hp__bind_num(st, 8, m->energy_per_step_j);
	hp__bind_num(st, 9, m->power_w);
	hp__bind_text(st, 10, m->config);
	hp__bind_text(st, 11, m->source);
	sqlite3_bind_double(st, 12, hp__store_now());
	rc = hp__step_done(c, st, "measurement", &src, err);
	if (rc && src == SQLITE_CONSTRAINT_FOREIGNKEY)
		return hp_error_set(err, HP_ENOENT, "no job %lld",
				    (long long)m->job_id);
	if (!rc && id)
		*id = sqlite3_last_insert_rowid(c->db);
	return rc;
}

int hp_store_measurement_add(struct hp_store *s,
			     const struct hp_store_measurement *m, int64_t *id,
			     struct hp_error *err)
{
	struct hp__conn *c;
	int rc;

	if (!m)
		return hp_error_set(err, HP_EINVAL, "no measurement");
	if (!(c = hp__conn_get(s, err)))
		return err ? err->code : HP_EIO;
	rc = meas_insert(c, m, id, err);
	hp__conn_put(s, c);
	return rc;
}

/* A number field of a CSV row: NaN when empty; HP_EPARSE when not a
 * number. */
static int csv_num(const struct hp_csv *csv, int i, double *out)
{
	const char *t = i >= 0 && i < csv->nfields ? csv->fields[i] : "";

	*out = NAN;
	if (!*t)
		return 0;
	return hp_parse_double(t, out) ? HP_EPARSE : 0;
}

int hp_store_measurement_import_csv(struct hp_store *s, const char *text,
				    size_t len, const char *source, int *added,
				    struct hp_error *err)
{
	struct hp_store_measurement m = {.kind = HP_MEAS_PROFILE,
					 .ndevices = 1,
					 .predicted_step_time_s = NAN};
	const char *src = source && *source ? source : "csv";
	char **cols = NULL;
	int ncols = 0, i_dev, i_name, i_batch, i_step, i_energy, i_power;
	int rows = 0, rc;
	struct hp__conn *c = NULL;
	struct hp_csv csv;

	if (added)
		*added = 0;
	if (!text)
		return hp_error_set(err, HP_EINVAL, "no CSV");
	hp_csv_init(&csv, text, len);
	if ((rc = hp_csv_next(&csv, err)) <= 0) {
		if (rc == 0)
			rc = hp_error_set(err, HP_EPARSE, "no header line");
		goto fail;
	}
	if ((rc = hp_csv_header_check(&csv, err)))
		goto fail;
	i_dev = hp_csv_index(&csv, "device");
	i_name = hp_csv_index(&csv, "device_name");
	i_batch = hp_csv_index(&csv, "batch");
	i_step = hp_csv_index(&csv, "step_time_s");
	i_energy = hp_csv_index(&csv, "energy_per_step_j");
	i_power = hp_csv_index(&csv, "power_w");
	if (i_dev < 0 || i_batch < 0 || i_step < 0) {
		rc = hp_error_set(err, HP_EPARSE,
				  "the header needs device, batch and "
				  "step_time_s (docs/dataset.md)");
		goto fail;
	}
	ncols = csv.nfields;
	cols = calloc((size_t)ncols, sizeof(*cols));
	if (!cols) {
		rc = hp_error_set(err, HP_ENOMEM, "out of memory");
		goto fail;
	}
	for (int i = 0; i < ncols; i++)
		if (!(cols[i] = hp_strdup(csv.fields[i]))) {
			rc = hp_error_set(err, HP_ENOMEM, "out of memory");
			goto fail;
		}
	if (!(c = hp__conn_get(s, err))) {
		rc = err ? err->code : HP_EIO;
		goto fail;
	}
	if ((rc = hp__begin(c, true, err)))
		goto fail;
	while ((rc = hp_csv_next(&csv, err)) == 1) {
		const char *dev, *dname;
		json_t *row;
		int64_t batch;
		char *cfg;

		if (csv.nfields == 1 && !*csv.fields[0])
			continue; /* a blank line */
		if ((rc = hp_csv_fields_check(&csv, ncols, err)))
			goto fail;
		dev = csv.fields[i_dev];
		dname = i_name >= 0 ? csv.fields[i_name] : "";
		if (!*dev ||
		    hp_parse_i64(csv.fields[i_batch], 1, INT32_MAX, &batch) ||
		    csv_num(&csv, i_step, &m.step_time_s) ||
		    !(m.step_time_s > 0) ||
		    csv_num(&csv, i_energy, &m.energy_per_step_j) ||
		    csv_num(&csv, i_power, &m.power_w)) {
			rc = hp_error_set(err, HP_EPARSE,
					  "line %d: device, batch (1 or more) "
					  "and step_time_s (above 0) are "
					  "needed; energy_per_step_j and "
					  "power_w are numbers or empty",
					  csv.line);
			goto fail;
		}
		m.batch = batch;
		/* A GPU row's device is the "cuda:K" it ran on: its type is
		 * the GPU's name. */
		m.device_type =
		    (char *)(strcmp(dev, "cpu") && *dname ? dname : dev);
		if (!(row = json_object())) {
			rc = hp_error_set(err, HP_ENOMEM, "out of memory");
			goto fail;
		}
		cfg = NULL;
		for (int i = 0; i < ncols; i++) {
			json_t *v = json_string(csv.fields[i]);
			if (!v || json_object_set_new(row, cols[i], v))
				break;
			if (i == ncols - 1)
				cfg = json_dumps(row, JSON_COMPACT);
		}
		json_decref(row);
		if (!cfg) {
			rc = hp_error_set(err, HP_EPARSE,
					  "line %d: not UTF-8 text", csv.line);
			goto fail;
		}
		m.config = cfg;
		m.source = (char *)src;
		rc = meas_insert(c, &m, NULL, err);
		free(cfg);
		if (rc) {
			hp_error_prefix(err, "line %d", csv.line);
			goto fail;
		}
		rows++;
	}
	if (rc < 0)
		goto fail;
	if ((rc = hp__commit(c, err)))
		goto fail;
	if (added)
		*added = rows;
	rc = 0;
fail:
	if (c)
		hp__conn_put(s, c);
	for (int i = 0; cols && i < ncols; i++)
		free(cols[i]);
	free(cols);
	hp_csv_release(&csv);
	if (rc)
		hp_error_prefix(err, "measurements '%s'", src);
	return rc;
}

#define MEAS_COLS                                                              \
	"id, kind, job_id, device_type, ndevices, batch, step_time_s, "        \
	"predicted_step_time_s, energy_per_step_j, power_w, config, source, "  \
	"created_s"

static int meas_row(sqlite3_stmt *st, struct hp_store_measurement *m)
{
	memset(m, 0, sizeof(*m));
	m->id = sqlite3_column_int64(st, 0);
	m->kind =
	    strcmp(hp__col_text(st, 1), "job") ? HP_MEAS_PROFILE : HP_MEAS_JOB;
	m->job_id = sqlite3_column_int64(st, 2);
	m->ndevices = sqlite3_column_int(st, 4);
	m->batch = sqlite3_column_int64(st, 5);
	m->step_time_s = hp__col_num(st, 6);
	m->predicted_step_time_s = hp__col_num(st, 7);
	m->energy_per_step_j = hp__col_num(st, 8);
	m->power_w = hp__col_num(st, 9);
	m->created_s = hp__col_time(st, 12);
	if (hp__col_dup(st, 3, &m->device_type) ||
	    hp__col_dup(st, 10, &m->config) || hp__col_dup(st, 11, &m->source))
		return HP_ENOMEM;
	return 0;
}

int hp_store_measurement_list(struct hp_store *s, int kind, int64_t after_id,
			      int limit, struct hp_store_measurement **out,
			      int *n, struct hp_error *err)
{
	static const char sql[] =
	    "SELECT " MEAS_COLS " FROM measurements WHERE (?1 IS NULL OR "
	    "kind = ?1) AND id > ?2 ORDER BY id LIMIT ?3";
	struct hp_store_measurement *a = NULL;
	int na = 0, cap = 0, rc;
	struct hp__conn *c;
	sqlite3_stmt *st;

	*out = NULL;
	*n = 0;
	if (kind > HP_MEAS_JOB || limit < 0)
		return hp_error_set(err, HP_EINVAL,
				    "measurements: bad kind or limit");
	if (!(c = hp__conn_get(s, err)))
		return err ? err->code : HP_EIO;
	if (!(st = hp__stmt(c, sql, err))) {
		rc = err ? err->code : HP_EIO;
		goto out;
	}
	hp__bind_text(st, 1, kind >= 0 ? meas_kinds[kind] : NULL);
	sqlite3_bind_int64(st, 2, after_id);
	sqlite3_bind_int64(st, 3, limit ? limit : -1);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (hp_grow(&a, &cap, na, sizeof(*a), 64)) {
			rc = HP_ENOMEM;
			break;
		}
		if ((rc = meas_row(st, &a[na++])))
			break;
	}
	hp__stmt_done(st);
	if (rc == HP_ENOMEM)
		rc = hp_error_set(err, HP_ENOMEM, "out of memory");
	else if (rc != SQLITE_DONE)
		rc = hp__dberr(c, rc, "measurements", err);
	else
		rc = 0;
out:
	hp__conn_put(s, c);
	if (rc) {
		hp_store_measurement_list_free(a, na);
		return rc;
	}
	*out = a;
	*n = na;
	return 0;
}

int hp_store_dataset_csv(struct hp_store *s, struct hp_buf *out, int *rows,
			 struct hp_error *err)
{
	static const char sql[] = "SELECT config FROM measurements WHERE kind "
				  "= 'profile' ORDER BY id";
	json_t *cols = NULL, *all = NULL;
	struct hp__conn *c;
	sqlite3_stmt *st;
	int rc, nrows = 0;

	if (rows)
		*rows = 0;
	if (!(cols = json_array()) || !(all = json_array())) {
		rc = hp_error_set(err, HP_ENOMEM, "out of memory");
		goto fail_nc;
	}
	if (!(c = hp__conn_get(s, err))) {
		rc = err ? err->code : HP_EIO;
		goto fail_nc;
	}
	if (!(st = hp__stmt(c, sql, err))) {
		rc = err ? err->code : HP_EIO;
		goto fail;
	}
	/* First the rows and the union of their columns, in the order
	 * first seen; then the CSV. */
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		json_t *row = json_loads(hp__col_text(st, 0), 0, NULL);
		const char *k;
		json_t *v;

		if (!json_is_object(row)) {
			json_decref(row);
			continue; /* a row not written by the import */
		}
		json_object_foreach(row, k, v)
		{
			size_t i, nc = json_array_size(cols);
			for (i = 0; i < nc; i++)
				if (!strcmp(json_string_value(
						json_array_get(cols, i)),
					    k))
					break;
			if (i == nc)
				json_array_append_new(cols, json_string(k));
		}
		json_array_append_new(all, row);
	}
	hp__stmt_done(st);
	if (rc != SQLITE_DONE) {
		rc = hp__dberr(c, rc, "measurements", err);
		goto fail;
	}
	rc = 0;
	if (json_array_size(all) == 0)
		goto fail;
	for (size_t i = 0; !rc && i < json_array_size(cols); i++) {
		if (i)
			rc = hp_buf_add(out, ",", 1);
		if (!rc)
			rc = hp_csv_add_field(
			    out, json_string_value(json_array_get(cols, i)));
	}
	if (!rc)
		rc = hp_buf_add(out, "\n", 1);
	for (size_t r = 0; !rc && r < json_array_size(all); r++) {
		json_t *row = json_array_get(all, r);
		for (size_t i = 0; !rc && i < json_array_size(cols); i++) {
			json_t *v = json_object_get(
			    row, json_string_value(json_array_get(cols, i)));
			if (i)
				rc = hp_buf_add(out, ",", 1);
			if (!rc)
				rc = hp_csv_add_field(out,
						      json_is_string(v)
							  ? json_string_value(v)
							  : "");
		}
		if (!rc)
			rc = hp_buf_add(out, "\n", 1);
		nrows++;
	}
	if (rc)
		rc = hp_error_set(err, rc, "dataset CSV: %s", hp_strerror(rc));
	else if (rows)
		*rows = nrows;
fail:
	hp__conn_put(s, c);
fail_nc:
	json_decref(cols);
	json_decref(all);
	return rc;
}

/* ---- datasets */

/* A dataset name: 1-63 bytes of [A-Za-z0-9._-]. */
static bool dataset_name_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n < 1 || n > 63)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '.' ||
		      s[i] == '_' || s[i] == '-'))
			return false;
	return true;
}

int hp_store_dataset_add(struct hp_store *s, const struct hp_store_dataset *d,
			 int64_t *id, struct hp_error *err)
{
	static const char sql[] = "INSERT INTO datasets (name, path, sha256, "
				  "size, created_s) VALUES (?, ?, ?, ?, ?)";
	struct hp__conn *c;
	sqlite3_stmt *st;
	int rc, src;

	if (!d || !dataset_name_ok(d->name))
		return hp_error_set(err, HP_EINVAL,
				    "a dataset name is 1 to 63 characters of "
				    "A-Z, a-z, 0-9, '.', '_' and '-'");
	if (!d->path || d->path[0] != '/' || hp_str_has_control(d->path))
		return hp_error_set(err, HP_EINVAL,
				    "dataset '%s': the path must be absolute",
				    d->name);
	if (!(c = hp__conn_get(s, err)))
		return err ? err->code : HP_EIO;
	if (!(st = hp__stmt(c, sql, err))) {
		rc = err ? err->code : HP_EIO;
		goto out;
	}
	hp__bind_text(st, 1, d->name);
	hp__bind_text(st, 2, d->path);
	hp__bind_text(st, 3, d->sha256);
	if (d->size >= 0)
		sqlite3_bind_int64(st, 4, d->size);
	sqlite3_bind_double(st, 5, hp__store_now());
	rc = hp__step_done(c, st, "dataset", &src, err);
	if (rc && src == SQLITE_CONSTRAINT_UNIQUE)
		rc = hp_error_set(err, HP_EEXIST, "dataset '%s' exists",
				  d->name);
	if (!rc && id)
		*id = sqlite3_last_insert_rowid(c->db);
out:
	hp__conn_put(s, c);
	return rc;
}

#define DATASET_COLS "id, name, path, sha256, size, created_s"

static int dataset_row(sqlite3_stmt *st, struct hp_store_dataset *d)
{
	memset(d, 0, sizeof(*d));
	d->id = sqlite3_column_int64(st, 0);
	d->size = sqlite3_column_type(st, 4) == SQLITE_NULL
		      ? -1
		      : sqlite3_column_int64(st, 4);
	d->created_s = hp__col_time(st, 5);
	if (hp__col_dup(st, 1, &d->name) || hp__col_dup(st, 2, &d->path) ||
	    hp__col_dup(st, 3, &d->sha256))
		return HP_ENOMEM;
	return 0;
}

/* Rows of a dataset query with at most one text parameter. */
static int read_datasets(struct hp_store *s, const char *sql, const char *arg,
			 struct hp_store_dataset **out, int *n,
			 struct hp_error *err)
{
	struct hp_store_dataset *a = NULL;
	int na = 0, cap = 0, rc;
	struct hp__conn *c;
	sqlite3_stmt *st;

	*out = NULL;
	*n = 0;
	if (!(c = hp__conn_get(s, err)))
		return err ? err->code : HP_EIO;
	if (!(st = hp__stmt(c, sql, err))) {
		rc = err ? err->code : HP_EIO;
		goto out;
	}
	if (arg)
		hp__bind_text(st, 1, arg);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (hp_grow(&a, &cap, na, sizeof(*a), 16)) {
			rc = HP_ENOMEM;
			break;
		}
		if ((rc = dataset_row(st, &a[na++])))
			break;
	}
	hp__stmt_done(st);
	if (rc == HP_ENOMEM)
		rc = hp_error_set(err, HP_ENOMEM, "out of memory");
	else if (rc != SQLITE_DONE)
		rc = hp__dberr(c, rc, "datasets", err);
	else
		rc = 0;
out:
	hp__conn_put(s, c);
	if (rc) {
		hp_store_dataset_list_free(a, na);
		return rc;
	}
	*out = a;
	*n = na;
	return 0;
}

int hp_store_dataset_get(struct hp_store *s, const char *name,
			 struct hp_store_dataset *out, struct hp_error *err)
{
	static const char sql[] =
	    "SELECT " DATASET_COLS " FROM datasets WHERE name = ?";
	struct hp_store_dataset *a;
	int n, rc;

	memset(out, 0, sizeof(*out));
	if (!name)
		return hp_error_set(err, HP_EINVAL, "no dataset name");
	if ((rc = read_datasets(s, sql, name, &a, &n, err)))
		return rc;
	if (n == 0) {
		free(a);
		return hp_error_set(err, HP_ENOENT, "no dataset '%s'", name);
	}
	*out = a[0];
	free(a);
	return 0;
}

int hp_store_dataset_list(struct hp_store *s, struct hp_store_dataset **out,
			  int *n, struct hp_error *err)
{
	static const char sql[] =
	    "SELECT " DATASET_COLS " FROM datasets ORDER BY name";

	return read_datasets(s, sql, NULL, out, n, err);
}

int hp_store_dataset_remove(struct hp_store *s, const char *name,
			    struct hp_error *err)
{
	/* not while a job that has not ended reads it (it would fail at its
	 * launch); one statement, so no job can come between the look and
	 * the delete */
	static const char sql[] =
	    "DELETE FROM datasets WHERE name = ?1 AND NOT EXISTS (SELECT 1 "
	    "FROM jobs WHERE data = ?1 AND state IN ('queued', 'starting', "
	    "'running'))";
	static const char exists[] = "SELECT 1 FROM datasets WHERE name = ?";
	struct hp__conn *c;
	sqlite3_stmt *st;
	int rc;

	if (!name)
		return hp_error_set(err, HP_EINVAL, "no dataset name");
	if (!(c = hp__conn_get(s, err)))
		return err ? err->code : HP_EIO;
	if (!(st = hp__stmt(c, sql, err))) {
		rc = err ? err->code : HP_EIO;
		goto out;
	}
	hp__bind_text(st, 1, name);
	if ((rc = hp__step_done(c, st, "dataset", NULL, err)) ||
	    sqlite3_changes(c->db) > 0)
		goto out;
	if (!(st = hp__stmt(c, exists, err))) {
		rc = err ? err->code : HP_EIO;
		goto out;
	}
	hp__bind_text(st, 1, name);
	rc = sqlite3_step(st);
	hp__stmt_done(st);
	rc = rc == SQLITE_ROW
		 ? hp_error_set(err, HP_EBUSY,
				"dataset '%s': jobs that have not ended use "
				"it (cancel them, or wait for them to end)",
				name)
	     : rc == SQLITE_DONE
		 ? hp_error_set(err, HP_ENOENT, "no dataset '%s'", name)
		 : hp_error_set(err, HP_EIO,
				"dataset '%s': the store could not be read "
				"(SQLite %d)",
				name, rc);
out:
	hp__conn_put(s, c);
	return rc;
}

/* ---- estimator versions */

int hp_store_estimator_add(struct hp_store *s,
			   const struct hp_store_estimator *e, int64_t *id,
			   struct hp_error *err)
{
	static const char sql[] =
	    "INSERT INTO estimators (body, fitted_on, validation, provenance, "
	    "measurements_upto, created_s) VALUES (?, ?, ?, ?, ?, ?)";
	struct hp__conn *c;
	sqlite3_stmt *st;
	int rc;

	if (!e || !e->body || !*e->body)
		return hp_error_set(err, HP_EINVAL, "estimator: no body");
	if (!(c = hp__conn_get(s, err)))
		return err ? err->code : HP_EIO;
	if (!(st = hp__stmt(c, sql, err))) {
		rc = err ? err->code : HP_EIO;
		goto out;
	}
	hp__bind_text(st, 1, e->body);
	hp__bind_text(st, 2, e->fitted_on);
	hp__bind_text(st, 3, e->validation);
	hp__bind_text(st, 4, e->provenance);
	sqlite3_bind_int64(st, 5, e->measurements_upto);
	sqlite3_bind_double(st, 6, hp__store_now());
	if (!(rc = hp__step_done(c, st, "estimator", NULL, err)) && id)
		*id = sqlite3_last_insert_rowid(c->db);
out:
	hp__conn_put(s, c);
	return rc;
}

/* The estimator at the row; column 1 is its body (NULL where the query
 * leaves it out). */
static int estimator_row(sqlite3_stmt *st, struct hp_store_estimator *e)
{
	memset(e, 0, sizeof(*e));
	e->id = sqlite3_column_int64(st, 0);
	e->measurements_upto = sqlite3_column_int64(st, 5);
	e->created_s = hp__col_time(st, 6);
	if (hp__col_dup(st, 1, &e->body) || hp__col_dup(st, 2, &e->fitted_on) ||
	    hp__col_dup(st, 3, &e->validation) ||
	    hp__col_dup(st, 4, &e->provenance))
		return HP_ENOMEM;
	return 0;
}

static int read_estimators(struct hp_store *s, const char *sql,
			   struct hp_store_estimator **out, int *n,
			   struct hp_error *err)
{
	struct hp_store_estimator *a = NULL;
	int na = 0, cap = 0, rc;
	struct hp__conn *c;
	sqlite3_stmt *st;

	*out = NULL;
	*n = 0;
	if (!(c = hp__conn_get(s, err)))
		return err ? err->code : HP_EIO;
	if (!(st = hp__stmt(c, sql, err))) {
		rc = err ? err->code : HP_EIO;
		goto out;
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (hp_grow(&a, &cap, na, sizeof(*a), 8)) {
			rc = HP_ENOMEM;
			break;
		}
		if ((rc = estimator_row(st, &a[na++])))
			break;
	}
	hp__stmt_done(st);
	if (rc == HP_ENOMEM)
		rc = hp_error_set(err, HP_ENOMEM, "out of memory");
	else if (rc != SQLITE_DONE)
		rc = hp__dberr(c, rc, "estimators", err);
	else
		rc = 0;
out:
	hp__conn_put(s, c);
	if (rc) {
		hp_store_estimator_list_free(a, na);
		return rc;
	}
	*out = a;
	*n = na;
	return 0;
}

int hp_store_estimator_current(struct hp_store *s,
			       struct hp_store_estimator *out,
			       struct hp_error *err)
{
	static const char sql[] =
	    "SELECT id, body, fitted_on, validation, provenance, "
	    "measurements_upto, created_s FROM estimators ORDER BY id DESC "
	    "LIMIT 1";
	struct hp_store_estimator *a;
	int n, rc;

	memset(out, 0, sizeof(*out));
	if ((rc = read_estimators(s, sql, &a, &n, err)))
		return rc;
	if (n == 0) {
		free(a);
		return hp_error_set(err, HP_ENOENT,
				    "no estimator has been fitted here");
	}
	*out = a[0];
	free(a);
	return 0;
}

int hp_store_estimator_list(struct hp_store *s, struct hp_store_estimator **out,
			    int *n, struct hp_error *err)
{
	static const char sql[] =
	    "SELECT id, NULL, fitted_on, validation, provenance, "
	    "measurements_upto, created_s FROM estimators ORDER BY id DESC";

	return read_estimators(s, sql, out, n, err);
}
