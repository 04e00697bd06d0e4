/*
 * models.c - uploaded models: the bytes (kept in their own table, so a
 * list never reads them), their SHA-256, the analysed features, who
 * uploaded them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_int.h"
#include "util/banned.h"
#include "util/sha256.h"

int hp_store_model_add(struct hp_store *s, const char *name,
		       enum hp_model_kind kind, const void *data, size_t len,
		       const char *features, int64_t owner, int64_t *id,
		       struct hp_error *err)
{
	static const char sql_model[] =
	    "INSERT INTO models (name, kind, sha256, size, features, owner, "
	    "created_s) VALUES (?, ?, ?, ?, ?, ?, ?)";
	static const char sql_data[] =
	    "INSERT INTO model_data (model_id, data) VALUES (?, ?)";
	static const char sql_owner[] = "SELECT 1 FROM tokens WHERE id = ?";
	struct hp__conn *c;
	sqlite3_stmt *st;
	char hash[65];
	int64_t mid;
	int rc;

	if (!name || !*name || strlen(name) > 255 || hp_str_has_control(name))
		return hp_error_set(err, HP_EINVAL,
				    "model name must be 1 to 255 bytes without "
				    "control characters");
	if (kind != HP_MODEL_ONNX && kind != HP_MODEL_SPEC)
		return hp_error_set(err, HP_EINVAL, "model kind %d unknown",
				    (int)kind);
	if (!data || len == 0 || len > (size_t)INT32_MAX)
		return hp_error_set(err, HP_EINVAL,
				    "model '%s': %zu bytes; give 1 to %d", name,
				    len, INT32_MAX);
	hp__sha256_hex_of(data, len, hash);
	if (!(c = hp__conn_get(s, err)))
		return err ? err->code : HP_EIO;
	if ((rc = hp__begin(c, true, err)))
		goto out;
	if (owner) {
		if (!(st = hp__stmt(c, sql_owner, err))) {
			rc = err ? err->code : HP_EIO;
			goto out;
		}
		sqlite3_bind_int64(st, 1, owner);
		rc = sqlite3_step(st);
		hp__stmt_done(st);
		if (rc == SQLITE_DONE) {
			rc = hp_error_set(err, HP_ENOENT, "no token %lld",
					  (long long)owner);
			goto out;
		}
		if (rc != SQLITE_ROW) {
			rc = hp__dberr(c, rc, "model", err);
			goto out;
		}
	}
	if (!(st = hp__stmt(c, sql_model, err))) {
		rc = err ? err->code : HP_EIO;
		goto out;
	}
	hp__bind_text(st, 1, name);
	hp__bind_text(st, 2, hp_model_kind_name(kind));
	hp__bind_text(st, 3, hash);
	sqlite3_bind_int64(st, 4, (sqlite3_int64)len);
	hp__bind_text(st, 5, features);
	if (owner)
		sqlite3_bind_int64(st, 6, owner);
	sqlite3_bind_double(st, 7, hp__store_now());
	if ((rc = hp__step_done(c, st, "model", NULL, err)))
		goto out;
	mid = sqlite3_last_insert_rowid(c->db);
	if (!(st = hp__stmt(c, sql_data, err))) {
		rc = err ? err->code : HP_EIO;
		goto out;
	}
	sqlite3_bind_int64(st, 1, mid);
	sqlite3_bind_blob(st, 2, data, (int)len, SQLITE_STATIC);
	if ((rc = hp__step_done(c, st, "model", NULL, err)))
		goto out;
	if ((rc = hp__commit(c, err)))
		goto out;
	if (id)
		*id = mid;
out:
	hp__conn_put(s, c);
	return rc;
}

#define MODEL_COLS "id, name, kind, sha256, size, features, owner, created_s"

static int model_row(sqlite3_stmt *st, struct hp_store_model *m)
{
	memset(m, 0, sizeof(*m));
	m->id = sqlite3_column_int64(st, 0);
	m->kind =
	    strcmp(hp__col_text(st, 2), "spec") ? HP_MODEL_ONNX : HP_MODEL_SPEC;
	snprintf(m->sha256, sizeof(m->sha256), "%s", hp__col_text(st, 3));
	m->size = sqlite3_column_int64(st, 4);
	m->owner = sqlite3_column_int64(st, 6);
	m->created_s = hp__col_time(st, 7);
	if (hp__col_dup(st, 1, &m->name) || hp__col_dup(st, 5, &m->features))
		return HP_ENOMEM;
	return 0;
}

int hp_store_model_get(struct hp_store *s, int64_t id, bool with_data,
		       struct hp_store_model *out, struct hp_error *err)
{
	static const char sql[] =
	    "SELECT " MODEL_COLS " FROM models WHERE id = ?";
	static const char sql_data[] =
	    "SELECT data FROM model_data WHERE model_id = ?";
	struct hp__conn *c;
	sqlite3_stmt *st;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!(c = hp__conn_get(s, err)))
		return err ? err->code : HP_EIO;
	if ((rc = hp__begin(c, false, err)))
		goto out;
	if (!(st = hp__stmt(c, sql, err))) {
		rc = err ? err->code : HP_EIO;
		goto out;
	}
	sqlite3_bind_int64(st, 1, id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		rc = model_row(st, out)
			 ? hp_error_set(err, HP_ENOMEM, "out of memory")
			 : 0;
	else if (rc == SQLITE_DONE)
		rc = hp_error_set(err, HP_ENOENT, "no model %lld",
				  (long long)id);
	else
		rc = hp__dberr(c, rc, "model", err);
	hp__stmt_done(st);
	if (rc || !with_data)
		goto out;
	if (!(st = hp__stmt(c, sql_data, err))) {
		rc = err ? err->code : HP_EIO;
		goto out;
	}
	sqlite3_bind_int64(st, 1, id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		const void *b = sqlite3_column_blob(st, 0);
		int n = sqlite3_column_bytes(st, 0);

		/* One byte more, so that a spec's text is NUL-terminated. */
		out->data = malloc((size_t)n + 1);
		if (!out->data) {
			rc = hp_error_set(err, HP_ENOMEM, "out of memory");
		} else {
			if (n)
				memcpy(out->data, b, (size_t)n);
			((char *)out->data)[n] = '\0';
			out->size = n;
			rc = 0;
		}
	} else if (rc == SQLITE_DONE) {
		rc = hp_error_set(err, HP_EIO, "model %lld: its bytes are gone",
				  (long long)id);
	} else {
		rc = hp__dberr(c, rc, "model", err);
	}
	hp__stmt_done(st);
out:
	hp__conn_put(s, c);
	if (rc)
		hp_store_model_release(out);
	return rc;
}

int hp_store_model_list(struct hp_store *s, struct hp_store_model **out, int *n,
			struct hp_error *err)
{
	static const char sql[] =
	    "SELECT " MODEL_COLS " FROM models ORDER BY id";
	struct hp_store_model *a = NULL;
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
		if (hp_grow(&a, &cap, na, sizeof(*a), 16)) {
			rc = HP_ENOMEM;
			break;
		}
		if ((rc = model_row(st, &a[na++])))
			break;
	}
	hp__stmt_done(st);
	if (rc == HP_ENOMEM)
		rc = hp_error_set(err, HP_ENOMEM, "out of memory");
	else if (rc != SQLITE_DONE)
		rc = hp__dberr(c, rc, "models", err);
	else
		rc = 0;
out:
	hp__conn_put(s, c);
	if (rc) {
		hp_store_model_list_free(a, na);
		return rc;
	}
	*out = a;
	*n = na;
	return 0;
}

int hp_store_model_remove(struct hp_store *s, int64_t id, struct hp_error *err)
{
	/* Ended jobs let it go (their folders hold their own copy); a job
	 * that has not ended keeps it, through the foreign key.  One
	 * transaction: no job can start between the two. */
	static const char sql_let_go[] =
	    "UPDATE jobs SET model_id = NULL WHERE model_id = ? AND state IN "
	    "('succeeded', 'failed', 'cancelled')";
	static const char sql[] = "DELETE FROM models WHERE id = ?";
	struct hp__conn *c;
	int rc, src = SQLITE_OK;

	if (!(c = hp__conn_get(s, err)))
		return err ? err->code : HP_EIO;
	if ((rc = hp__begin(c, true, err)) ||
	    (rc = hp__step_id(c, sql_let_go, id, "model", NULL, err)))
		goto out;
	rc = hp__step_id(c, sql, id, "model", &src, err);
	if (rc && (src & 0xff) == SQLITE_CONSTRAINT)
		rc = hp_error_set(err, HP_EBUSY,
				  "model %lld: jobs that have not ended use it "
				  "(cancel them, or wait for them to end)",
				  (long long)id);
	else if (!rc && sqlite3_changes(c->db) == 0)
		rc = hp_error_set(err, HP_ENOENT, "no model %lld",
				  (long long)id);
	if (!rc)
		rc = hp__commit(c, err);
out:
	hp__conn_put(s, c);
	return rc;
}
