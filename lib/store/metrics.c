/*
 * metrics.c - the counts /metrics serves: devices by type and state, jobs
 * by state, the queue, nodes, models, measurements, tokens in force; all
 * from one read transaction.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_int.h"
#include "util/banned.h"

int hp_store_metrics(struct hp_store *s, struct hp_store_metrics *out,
		     struct hp_error *err)
{
	/* Each device once, in its state: allocated wins over drained
	 * (itself or its node), drained over reserved. */
	static const char sql_devs[] =
	    "SELECT d.type, count(*),"
	    " sum(a.job_id IS NOT NULL),"
	    " sum(a.job_id IS NULL AND (d.drained OR n.drained)),"
	    " sum(a.job_id IS NULL AND NOT d.drained AND NOT n.drained AND"
	    "  d.reserved) "
	    "FROM devices d JOIN nodes n ON n.id = d.node_id LEFT JOIN "
	    "allocations a ON a.device_id = d.id AND a.released_s IS NULL "
	    "GROUP BY d.type ORDER BY d.type";
	static const char sql_jobs[] =
	    "SELECT state, count(*) FROM jobs GROUP BY state";
	static const char sql_counts[] =
	    "SELECT (SELECT count(*) FROM nodes), (SELECT count(*) FROM nodes "
	    "WHERE drained), (SELECT count(*) FROM measurements), (SELECT "
	    "count(*) FROM models), (SELECT count(*) FROM tokens WHERE "
	    "revoked_s IS NULL)";
	struct hp__conn *c;
	sqlite3_stmt *st;
	int cap = 0, rc;

	memset(out, 0, sizeof(*out));
	if (!(c = hp__conn_get(s, err)))
		return err ? err->code : HP_EIO;
	if ((rc = hp__begin(c, false, err)))
		goto out;
	if (!(st = hp__stmt(c, sql_devs, err))) {
		rc = err ? err->code : HP_EIO;
		goto out;
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct hp_store_type_count *t;

		if (hp_grow(&out->types, &cap, out->ntypes, sizeof(*t), 8)) {
			rc = HP_ENOMEM;
			break;
		}
		t = &out->types[out->ntypes++];
		memset(t, 0, sizeof(*t));
		snprintf(t->type, sizeof(t->type), "%s", hp__col_text(st, 0));
		t->total = sqlite3_column_int(st, 1);
		t->allocated = sqlite3_column_int(st, 2);
		t->drained = sqlite3_column_int(st, 3);
		t->reserved = sqlite3_column_int(st, 4);
		t->free = t->total - t->allocated - t->drained - t->reserved;
	}
	hp__stmt_done(st);
	if (rc == HP_ENOMEM) {
		rc = hp_error_set(err, HP_ENOMEM, "out of memory");
		goto out;
	}
	if (rc != SQLITE_DONE) {
		rc = hp__dberr(c, rc, "metrics", err);
		goto out;
	}
	if (!(st = hp__stmt(c, sql_jobs, err))) {
		rc = err ? err->code : HP_EIO;
		goto out;
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		enum hp_job_state js;

		if (!hp__state_from_sql(hp__col_text(st, 0), &js))
			out->jobs[js] = sqlite3_column_int64(st, 1);
	}
	hp__stmt_done(st);
	if (rc != SQLITE_DONE) {
		rc = hp__dberr(c, rc, "metrics", err);
		goto out;
	}
	out->queue_len = out->jobs[HP_JOB_QUEUED];
	if (!(st = hp__stmt(c, sql_counts, err))) {
		rc = err ? err->code : HP_EIO;
		goto out;
	}
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		out->nodes = sqlite3_column_int(st, 0);
		out->nodes_drained = sqlite3_column_int(st, 1);
		out->measurements = sqlite3_column_int64(st, 2);
		out->models = sqlite3_column_int64(st, 3);
		out->tokens_active = sqlite3_column_int64(st, 4);
		rc = 0;
	} else {
		rc = hp__dberr(c, rc, "metrics", err);
	}
	hp__stmt_done(st);
	if (!rc)
		rc = hp__commit(c, err);
out:
	hp__conn_put(s, c);
	if (rc)
		hp_store_metrics_release(out);
	return rc;
}
