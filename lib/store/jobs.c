/*
 * jobs.c - jobs and what they hold: submission, reads and lists, the
 * queue, state transitions with their checks, allocation of devices in
 * one IMMEDIATE transaction (all or none), release, cancel, and the
 * recovery run at start.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_int.h"
#include "util/banned.h"

const char *hp__state_sql(enum hp_job_state s)
{
	return hp_job_state_name(s);
}

int hp__state_from_sql(const char *s, enum hp_job_state *out)
{
	return hp_job_state_parse(s, out);
}

/* A state as stored, or HP_EIO for text the schema's CHECK should have
 * kept out. */
static int col_state(sqlite3_stmt *st, int i, enum hp_job_state *out,
		     struct hp_error *err)
{
	const char *t = hp__col_text(st, i);

	if (hp__state_from_sql(t, out))
		return hp_error_set(err, HP_EIO, "job state '%.32s' unknown",
				    t);
	return 0;
}

int hp__job_read(sqlite3_stmt *st, struct hp_store_job *out,
		 struct hp_error *err)
{
	struct hp_store_job j = {0};
	const char *backend;
	int rc;

	j.id = sqlite3_column_int64(st, 0);
	j.owner = sqlite3_column_int64(st, 1);
	if ((rc = col_state(st, 3, &j.state, err)))
		return rc;
	backend = hp__col_text(st, 9);
	if (hp_backend_parse(backend, &j.backend))
		return hp_error_set(err, HP_EIO, "job %lld: backend '%.32s'",
				    (long long)j.id, backend);
	j.model_id = sqlite3_column_int64(st, 6);
	j.deadline_at_s = hp__col_time(st, 11);
	j.predicted_start_at_s = hp__col_time(st, 12);
	j.predicted_end_at_s = hp__col_time(st, 13);
	j.created_s = hp__col_time(st, 14);
	j.updated_s = hp__col_time(st, 15);
	j.started_s = hp__col_time(st, 16);
	j.ended_s = hp__col_time(st, 17);
	j.cancel_requested = sqlite3_column_int(st, 18) != 0;
	j.ndevices = sqlite3_column_int(st, 21);
	if (hp__col_dup(st, 2, &j.name) || hp__col_dup(st, 4, &j.reason) ||
	    hp__col_dup(st, 5, &j.description) || hp__col_dup(st, 7, &j.data) ||
	    hp__col_dup(st, 8, &j.settings) || hp__col_dup(st, 10, &j.plan) ||
	    hp__col_dup(st, 19, &j.deploy_id) ||
	    hp__col_dup(st, 20, &j.deploy_dir)) {
		hp_store_job_release(&j);
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	}
	*out = j;
	return 0;
}

/* The state of job id inside a transaction: 0, HP_ENOENT, or an error;
 * *owner (may be NULL) gets its owner. */
static int job_state(struct hp__conn *c, int64_t id, int64_t owner,
		     enum hp_job_state *state, struct hp_error *err)
{
	static const char sql[] = "SELECT state, owner FROM jobs WHERE id = ?";
	sqlite3_stmt *st = hp__stmt(c, sql, err);
	int rc;

	if (!st)
		return err ? err->code : HP_EIO;
	sqlite3_bind_int64(st, 1, id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && owner && sqlite3_column_int64(st, 1) != owner) {
		/* someone else's job is no job of theirs */
		rc = hp_error_set(err, HP_ENOENT, "no job %lld", (long long)id);
	} else if (rc == SQLITE_ROW) {
		rc = col_state(st, 0, state, err);
	} else if (rc == SQLITE_DONE) {
		rc = hp_error_set(err, HP_ENOENT, "no job %lld", (long long)id);
	} else {
		rc = hp__dberr(c, rc, "job", err);
	}
	hp__stmt_done(st);
	return rc;
}

/* Whether a row exists for a query with one integer parameter. */
static int exists_id(struct hp__conn *c, const char *sql, int64_t id, bool *yes,
		     struct hp_error *err)
{
	sqlite3_stmt *st = hp__stmt(c, sql, err);
	int rc;

	if (!st)
		return err ? err->code : HP_EIO;
	sqlite3_bind_int64(st, 1, id);
	rc = sqlite3_step(st);
	*yes = rc == SQLITE_ROW;
	rc = rc == SQLITE_ROW || rc == SQLITE_DONE
		 ? 0
		 : hp__dberr(c, rc, "lookup", err);
	hp__stmt_done(st);
	return rc;
}

static const char sql_token_exists[] = "SELECT 1 FROM tokens WHERE id = ?";
static const char sql_model_exists[] = "SELECT 1 FROM models WHERE id = ?";
static const char sql_dataset_exists[] =
    "SELECT 1 FROM datasets WHERE name = ?";

int hp_store_job_add(struct hp_store *s, const struct hp_store_job_new *in,
		     int64_t *id, struct hp_error *err)
{
	static const char sql[] =
	    "INSERT INTO jobs (owner, name, state, reason, description, "
	    "model_id, data, settings, backend, plan, deadline_at_s, "
	    "predicted_start_at_s, predicted_end_at_s, created_s, updated_s) "
	    "VALUES (?, ?, 'queued', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
	struct hp__conn *c;
	sqlite3_stmt *st;
	double now = hp__store_now();
	bool yes;
	int rc;

	if (!in || !in->description || !*in->description)
		return hp_error_set(err, HP_EINVAL, "job: no description");
	if (!in->data || !*in->data)
		return hp_error_set(err, HP_EINVAL, "job: no data");
	if ((unsigned)in->backend >= HP_BACKEND_COUNT)
		return hp_error_set(err, HP_EINVAL, "job: backend %d unknown",
				    (int)in->backend);
	if (in->owner < 0 || in->model_id < 0)
		return hp_error_set(err, HP_EINVAL, "job: negative id");
	if (!(c = hp__conn_get(s, err)))
		return err ? err->code : HP_EIO;
	if ((rc = hp__begin(c, true, err)))
		goto out;
	if (in->owner) {
		if ((rc = exists_id(c, sql_token_exists, in->owner, &yes, err)))
			goto out;
		if (!yes) {
			rc = hp_error_set(err, HP_ENOENT, "no token %lld",
					  (long long)in->owner);
			goto out;
		}
	}
	if (in->model_id) {
		if ((rc = exists_id(c, sql_model_exists, in->model_id, &yes,
				    err)))
			goto out;
		if (!yes) {
			rc = hp_error_set(err, HP_ENOENT, "no model %lld",
					  (long long)in->model_id);
			goto out;
		}
	}
	if (strcmp(in->data, "fashion-mnist") &&
	    strcmp(in->data, "synthetic")) {
		/* a registered dataset, in the same transaction as the
		 * insert: one removed meanwhile (the caller checked it before
		 * planning) is not left to fail the job at its launch */
		sqlite3_stmt *q = hp__stmt(c, sql_dataset_exists, err);
		if (!q) {
			rc = err ? err->code : HP_EIO;
			goto out;
		}
		hp__bind_text(q, 1, in->data);
		rc = sqlite3_step(q);
		yes = rc == SQLITE_ROW;
		rc = rc == SQLITE_ROW || rc == SQLITE_DONE
			 ? 0
			 : hp__dberr(c, rc, "lookup", err);
		hp__stmt_done(q);
		if (rc)
			goto out;
		if (!yes) {
			rc = hp_error_set(err, HP_EINVAL,
					  "data '%s' is not fashion-mnist, "
					  "synthetic or a registered dataset",
					  in->data);
			goto out;
		}
	}
	if (!(st = hp__stmt(c, sql, err))) {
		rc = err ? err->code : HP_EIO;
		goto out;
	}
	if (in->owner)
		sqlite3_bind_int64(st, 1, in->owner);
	hp__bind_text(st, 2, in->name);
	hp__bind_text(st, 3, in->reason);
	hp__bind_text(st, 4, in->description);
	if (in->model_id)
		sqlite3_bind_int64(st, 5, in->model_id);
	hp__bind_text(st, 6, in->data);
	hp__bind_text(st, 7, in->settings);
	hp__bind_text(st, 8, hp_backend_name(in->backend));
	hp__bind_text(st, 9, in->plan);
	hp__bind_time(st, 10, in->deadline_at_s);
	hp__bind_time(st, 11, in->predicted_start_at_s);
	hp__bind_time(st, 12, in->predicted_end_at_s);
	sqlite3_bind_double(st, 13, now);
	sqlite3_bind_double(st, 14, now);
	if ((rc = hp__step_done(c, st, "job", NULL, err)))
		goto out;
	if (id)
		*id = sqlite3_last_insert_rowid(c->db);
	rc = hp__commit(c, err);
out:
	hp__conn_put(s, c);
	return rc;
}

static const char sql_job_get[] =
    "SELECT " HP__JOB_COLS " FROM jobs j WHERE j.id = ?";

/* Read job id on an open connection. */
static int job_get(struct hp__conn *c, int64_t id, struct hp_store_job *out,
		   struct hp_error *err)
{
	sqlite3_stmt *st = hp__stmt(c, sql_job_get, err);
	int rc;

	if (!st)
		return err ? err->code : HP_EIO;
	sqlite3_bind_int64(st, 1, id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		rc = hp__job_read(st, out, err);
	else if (rc == SQLITE_DONE)
		rc = hp_error_set(err, HP_ENOENT, "no job %lld", (long long)id);
	else
		rc = hp__dberr(c, rc, "job", err);
	hp__stmt_done(st);
	return rc;
}

int hp_store_job_get(struct hp_store *s, int64_t id, struct hp_store_job *out,
		     struct hp_error *err)
{
	struct hp__conn *c = hp__conn_get(s, err);
	int rc;

	memset(out, 0, sizeof(*out));
	if (!c)
		return err ? err->code : HP_EIO;
	rc = job_get(c, id, out, err);
	hp__conn_put(s, c);
	return rc;
}

/* Step st and read every row as a job into a new array. */
static int read_jobs(struct hp__conn *c, sqlite3_stmt *st,
		     struct hp_store_job **out, int *n, struct hp_error *err)
{
	struct hp_store_job *a = NULL;
	int na = 0, cap = 0, rc;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (hp_grow(&a, &cap, na, sizeof(*a), 16)) {
			rc = hp_error_set(err, HP_ENOMEM, "out of memory");
			goto fail;
		}
		if ((rc = hp__job_read(st, &a[na], err)))
			goto fail;
		na++;
	}
	if (rc != SQLITE_DONE) {
		rc = hp__dberr(c, rc, "jobs", err);
		goto fail;
	}
	hp__stmt_done(st);
	*out = a;
	*n = na;
	return 0;
fail:
	hp__stmt_done(st);
	hp_store_job_list_free(a, na);
	return rc;
}

/*
 * One statement per order, with and without a filter on the states; the
 * filters are parameters (?1 the owner, ?2 the paging id, ?3 the limit,
 * ?4 to ?9 the states, NULL in the slots not used), never text joined
 * into the SQL.  `state IN (...)` lets SQLite read the jobs_state index
 * rather than the whole table: the scheduler asks for the started jobs
 * at every poll.
 */
#define JOB_LIST_SEL "SELECT " HP__JOB_COLS " FROM jobs j WHERE "
#define JOB_LIST_STATES "j.state IN (?4, ?5, ?6, ?7, ?8, ?9) AND "
#define JOB_LIST_REST(cmp, order)                                              \
	"(?1 = 0 OR j.owner = ?1) AND (?2 = 0 OR j.id " cmp " ?2) ORDER BY "   \
	"j.id" order " LIMIT ?3"
#define JOB_LIST_SLOTS (HP_JOB_CANCELLED + 1)

const char *hp__job_list_sql(bool newest_first, bool by_state)
{
	static const char *const sql[2][2] = {
	    {JOB_LIST_SEL JOB_LIST_REST(">", ""),
	     JOB_LIST_SEL JOB_LIST_STATES JOB_LIST_REST(">", "")},
	    {JOB_LIST_SEL JOB_LIST_REST("<", " DESC"),
	     JOB_LIST_SEL JOB_LIST_STATES JOB_LIST_REST("<", " DESC")},
	};

	return sql[newest_first][by_state];
}

int hp_store_job_list(struct hp_store *s, const struct hp_store_job_filter *f,
		      struct hp_store_job **out, int *n, struct hp_error *err)
{
	struct hp_store_job_filter none = {0};
	struct hp__conn *c;
	sqlite3_stmt *st;
	int rc, slot = 4;

	*out = NULL;
	*n = 0;
	if (!f)
		f = &none;
	if (f->limit < 0)
		return hp_error_set(err, HP_EINVAL, "jobs: negative limit");
	if (!(c = hp__conn_get(s, err)))
		return err ? err->code : HP_EIO;
	st =
	    hp__stmt(c, hp__job_list_sql(f->newest_first, f->states != 0), err);
	if (!st) {
		rc = err ? err->code : HP_EIO;
		goto out;
	}
	sqlite3_bind_int64(st, 1, f->owner);
	sqlite3_bind_int64(st, 2, f->after_id);
	sqlite3_bind_int64(st, 3, f->limit ? f->limit : -1);
	for (int i = 0; f->states && i < JOB_LIST_SLOTS; i++)
		if (f->states & 1u << i)
			hp__bind_text(st, slot++,
				      hp__state_sql((enum hp_job_state)i));
	/* the slots left stay NULL: `state IN (NULL)` matches nothing */
	rc = read_jobs(c, st, out, n, err);
out:
	hp__conn_put(s, c);
	return rc;
}

int hp_store_queue(struct hp_store *s, struct hp_store_job **out, int *n,
		   struct hp_error *err)
{
	static const char sql[] =
	    "SELECT " HP__JOB_COLS " FROM jobs j WHERE j.state = 'queued' "
	    "ORDER BY j.id";
	struct hp__conn *c;
	sqlite3_stmt *st;
	int rc;

	*out = NULL;
	*n = 0;
	if (!(c = hp__conn_get(s, err)))
		return err ? err->code : HP_EIO;
	if (!(st = hp__stmt(c, sql, err)))
		rc = err ? err->code : HP_EIO;
	else
		rc = read_jobs(c, st, out, n, err);
	hp__conn_put(s, c);
	return rc;
}

int hp_store_job_update(struct hp_store *s, int64_t id,
			const struct hp_store_job_patch *p,
			struct hp_error *err)
{
	/* Each field is written when its flag (?1) has the bit; the reason
	 * only while the job has not ended and no cancel was asked for: the
	 * one its end or the cancel gave it (a cancel's "cancelled by NAME",
	 * a failure's why) is final, whatever a scheduler pass that read the
	 * job before writes after ("waiting for devices", or a backend's
	 * "apply the manifests", over a cancelled job's reason). */
	static const char sql[] =
	    "UPDATE jobs SET"
	    " plan = CASE WHEN ?1 & 1 THEN ?2 ELSE plan END,"
	    " reason = CASE WHEN ?1 & 2 AND state IN ('queued', 'starting',"
	    "  'running') AND NOT cancel_requested THEN ?3 ELSE reason END,"
	    " predicted_start_at_s = CASE WHEN ?1 & 4 THEN ?4"
	    "  ELSE predicted_start_at_s END,"
	    " predicted_end_at_s = CASE WHEN ?1 & 4 THEN ?5"
	    "  ELSE predicted_end_at_s END,"
	    " deploy_id = CASE WHEN ?1 & 8 THEN ?6 ELSE deploy_id END,"
	    " deploy_dir = CASE WHEN ?1 & 8 THEN ?7 ELSE deploy_dir END,"
	    " backend = CASE WHEN ?1 & 16 THEN ?8 ELSE backend END,"
	    " updated_s = ?9 WHERE id = ?10";
	struct hp__conn *c;
	sqlite3_stmt *st;
	int rc;

	if (!p || p->fields & ~0x1fu)
		return hp_error_set(err, HP_EINVAL, "job %lld: bad patch",
				    (long long)id);
	if (p->fields & HP_JOB_F_BACKEND &&
	    (unsigned)p->backend >= HP_BACKEND_COUNT)
		return hp_error_set(err, HP_EINVAL, "job: backend %d unknown",
				    (int)p->backend);
	if (!(c = hp__conn_get(s, err)))
		return err ? err->code : HP_EIO;
	if (!(st = hp__stmt(c, sql, err))) {
		rc = err ? err->code : HP_EIO;
		goto out;
	}
	sqlite3_bind_int(st, 1, (int)p->fields);
	hp__bind_text(st, 2, p->plan);
	hp__bind_text(st, 3, p->reason);
	hp__bind_time(st, 4, p->predicted_start_at_s);
	hp__bind_time(st, 5, p->predicted_end_at_s);
	hp__bind_text(st, 6, p->deploy_id);
	hp__bind_text(st, 7, p->deploy_dir);
	hp__bind_text(st, 8, hp_backend_name(p->backend));
	sqlite3_bind_double(st, 9, hp__store_now());
	sqlite3_bind_int64(st, 10, id);
	if ((rc = hp__step_done(c, st, "job", NULL, err)))
		goto out;
	if (sqlite3_changes(c->db) == 0)
		rc = hp_error_set(err, HP_ENOENT, "no job %lld", (long long)id);
out:
	hp__conn_put(s, c);
	return rc;
}

/* Whether a job may move from a to b (docs/store.md, "Job states"). */
static bool transition_ok(enum hp_job_state a, enum hp_job_state b)
{
	switch (a) {
	case HP_JOB_QUEUED:
		return b == HP_JOB_STARTING || b == HP_JOB_FAILED ||
		       b == HP_JOB_CANCELLED;
	case HP_JOB_STARTING:
		return b == HP_JOB_QUEUED || b == HP_JOB_RUNNING ||
		       b == HP_JOB_FAILED || b == HP_JOB_CANCELLED;
	case HP_JOB_RUNNING:
		return b == HP_JOB_SUCCEEDED || b == HP_JOB_FAILED ||
		       b == HP_JOB_CANCELLED;
	default:
		return false;
	}
}

/* Live allocations of a job, in a transaction. */
static int held_count(struct hp__conn *c, int64_t job, int *n,
		      struct hp_error *err)
{
	static const char sql[] = "SELECT count(*) FROM allocations WHERE "
				  "job_id = ? AND released_s IS NULL";
	sqlite3_stmt *st = hp__stmt(c, sql, err);
	int rc;

	if (!st)
		return err ? err->code : HP_EIO;
	sqlite3_bind_int64(st, 1, job);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*n = sqlite3_column_int(st, 0);
		rc = 0;
	} else {
		rc = hp__dberr(c, rc, "allocations", err);
	}
	hp__stmt_done(st);
	return rc;
}

/* Move job id to state `to` in the open transaction, with a reason and
 * a plan (NULL keeps either); the caller has checked the move, the
 * triggers check it again. */
static int set_state(struct hp__conn *c, int64_t id, enum hp_job_state to,
		     const char *reason, const char *plan, struct hp_error *err)
{
	static const char sql[] =
	    "UPDATE jobs SET state = ?1, reason = coalesce(?2, reason),"
	    " plan = coalesce(?3, plan), updated_s = ?4,"
	    " started_s = CASE WHEN ?1 = 'running' THEN ?4 ELSE started_s END,"
	    " ended_s = CASE WHEN ?1 IN ('succeeded', 'failed', 'cancelled')"
	    "  THEN ?4 ELSE ended_s END WHERE id = ?5";
	sqlite3_stmt *st = hp__stmt(c, sql, err);
	int rc, src;

	if (!st)
		return err ? err->code : HP_EIO;
	hp__bind_text(st, 1, hp__state_sql(to));
	hp__bind_text(st, 2, reason);
	hp__bind_text(st, 3, plan);
	sqlite3_bind_double(st, 4, hp__store_now());
	sqlite3_bind_int64(st, 5, id);
	rc = hp__step_done(c, st, "job", &src, err);
	if (rc && (src & 0xff) == SQLITE_CONSTRAINT)
		rc = hp_error_set(err, HP_ESTATE, "job %lld has ended",
				  (long long)id);
	return rc;
}

int hp_store_job_transition(struct hp_store *s, int64_t id,
			    enum hp_job_state to, const char *reason,
			    struct hp_error *err)
{
	struct hp__conn *c;
	enum hp_job_state from;
	int rc, held = 0;

	if ((unsigned)to > HP_JOB_CANCELLED)
		return hp_error_set(err, HP_EINVAL, "job state %d unknown",
				    (int)to);
	if (!(c = hp__conn_get(s, err)))
		return err ? err->code : HP_EIO;
	if ((rc = hp__begin(c, true, err)) ||
	    (rc = job_state(c, id, 0, &from, err)))
		goto out;
	if (!transition_ok(from, to)) {
		rc = hp_error_set(err, HP_ESTATE, "job %lld is %s: it %s %s",
				  (long long)id, hp_job_state_name(from),
				  hp_job_state_terminal(from)
				      ? "has ended and cannot become"
				      : "cannot become",
				  hp_job_state_name(to));
		goto out;
	}
	if (to == HP_JOB_STARTING) {
		if ((rc = held_count(c, id, &held, err)))
			goto out;
		if (held == 0) {
			rc = hp_error_set(err, HP_ESTATE,
					  "job %lld holds no devices: it "
					  "cannot become starting",
					  (long long)id);
			goto out;
		}
	}
	if ((rc = set_state(c, id, to, reason, NULL, err)))
		goto out;
	rc = hp__commit(c, err);
out:
	hp__conn_put(s, c);
	return rc;
}

/* ---- allocation */

/* The node's id and drained flag: HP_ENOENT when there is no node. */
static int node_lookup(struct hp__conn *c, const char *name, int64_t *id,
		       bool *drained, struct hp_error *err)
{
	static const char sql[] =
	    "SELECT id, drained FROM nodes WHERE name = ?";
	sqlite3_stmt *st = hp__stmt(c, sql, err);
	int rc;

	if (!st)
		return err ? err->code : HP_EIO;
	hp__bind_text(st, 1, name);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*id = sqlite3_column_int64(st, 0);
		*drained = sqlite3_column_int(st, 1) != 0;
		rc = 0;
	} else if (rc == SQLITE_DONE) {
		rc = hp_error_set(err, HP_ENOENT, "no node '%s'", name);
	} else {
		rc = hp__dberr(c, rc, "node", err);
	}
	hp__stmt_done(st);
	return rc;
}

/* Append one allocation to a growing list: 0 or HP_ENOMEM. */
static int push_alloc(struct hp_store_alloc **a, int *n, int *cap, int64_t job,
		      const char *node, const char *type, int idx, double t)
{
	if (*n == *cap) {
		int nc = *cap ? 2 * *cap : 8;
		struct hp_store_alloc *b =
		    realloc(*a, (size_t)nc * sizeof(**a));
		if (!b)
			return HP_ENOMEM;
		*a = b;
		*cap = nc;
	}
	memset(&(*a)[*n], 0, sizeof(**a));
	(*a)[*n].job_id = job;
	snprintf((*a)[*n].node, sizeof((*a)[*n].node), "%s", node);
	snprintf((*a)[*n].type, sizeof((*a)[*n].type), "%s", type);
	(*a)[*n].index = idx;
	(*a)[*n].allocated_s = t;
	(*n)++;
	return 0;
}

/* Give one request's devices to job, inside the open IMMEDIATE
 * transaction. */
static int alloc_one(struct hp__conn *c, int64_t job,
		     const struct hp_store_devreq *r, double now,
		     struct hp_store_alloc **a, int *na, int *cap,
		     struct hp_error *err)
{
	static const char sql_pick[] =
	    "SELECT d.id, d.idx, d.drained, d.reserved, EXISTS (SELECT 1 "
	    "FROM allocations a WHERE a.device_id = d.id AND a.released_s IS "
	    "NULL) FROM devices d WHERE d.node_id = ?1 AND d.type = ?2 AND "
	    "(?3 < 0 OR d.idx = ?3) ORDER BY d.idx";
	static const char sql_ins[] =
	    "INSERT INTO allocations (job_id, device_id, node, type, idx, "
	    "allocated_s) VALUES (?, ?, ?, ?, ?, ?)";
	int64_t node_id = 0, ids[HP_POOL_MAX_DEVICES];
	int idxs[HP_POOL_MAX_DEVICES];
	int got = 0, seen = 0, rc, src;
	bool drained = false;
	sqlite3_stmt *st;

	if (!r->node || !r->type || r->count < 1 ||
	    r->count > HP_POOL_MAX_DEVICES || r->index < -1 ||
	    (r->index >= 0 && r->count != 1))
		return hp_error_set(err, HP_EINVAL,
				    "allocate: bad request (node, type, count "
				    "1-%d, index -1 or one device)",
				    HP_POOL_MAX_DEVICES);
	if ((rc = node_lookup(c, r->node, &node_id, &drained, err)))
		return rc;
	if (drained)
		return hp_error_set(err, HP_EBUSY, "node '%s' is drained",
				    r->node);
	if (!(st = hp__stmt(c, sql_pick, err)))
		return err ? err->code : HP_EIO;
	sqlite3_bind_int64(st, 1, node_id);
	hp__bind_text(st, 2, r->type);
	sqlite3_bind_int(st, 3, r->index);
	while (got < r->count && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		seen++;
		if (sqlite3_column_int(st, 2) || sqlite3_column_int(st, 3) ||
		    sqlite3_column_int(st, 4))
			continue;
		ids[got] = sqlite3_column_int64(st, 0);
		idxs[got] = sqlite3_column_int(st, 1);
		got++;
	}
	if (got < r->count && rc != SQLITE_DONE) {
		rc = hp__dberr(c, rc, "devices", err);
		hp__stmt_done(st);
		return rc;
	}
	hp__stmt_done(st);
	if (!seen)
		return r->index >= 0
			   ? hp_error_set(err, HP_ENOENT,
					  "node '%s' has no %s device %d",
					  r->node, r->type, r->index)
			   : hp_error_set(err, HP_ENOENT,
					  "node '%s' has no %s devices",
					  r->node, r->type);
	if (got < r->count)
		return r->index >= 0
			   ? hp_error_set(err, HP_EBUSY,
					  "node '%s': %s device %d is not free",
					  r->node, r->type, r->index)
			   : hp_error_set(err, HP_EBUSY,
					  "node '%s': %d %s devices asked for, "
					  "%d free",
					  r->node, r->count, r->type, got);
	for (int i = 0; i < got; i++) {
		if (!(st = hp__stmt(c, sql_ins, err)))
			return err ? err->code : HP_EIO;
		sqlite3_bind_int64(st, 1, job);
		sqlite3_bind_int64(st, 2, ids[i]);
		hp__bind_text(st, 3, r->node);
		hp__bind_text(st, 4, r->type);
		sqlite3_bind_int(st, 5, idxs[i]);
		sqlite3_bind_double(st, 6, now);
		rc = hp__step_done(c, st, "allocate", &src, err);
		/* The unique index or the trigger: taken or unavailable
		 * (cannot happen inside the IMMEDIATE transaction after the
		 * check above, but the database has the last word). */
		if (rc && (src & 0xff) == SQLITE_CONSTRAINT)
			return hp_error_set(err, HP_EBUSY,
					    "node '%s': %s device %d is not "
					    "free",
					    r->node, r->type, idxs[i]);
		if (rc)
			return rc;
		if (a &&
		    push_alloc(a, na, cap, job, r->node, r->type, idxs[i], now))
			return hp_error_set(err, HP_ENOMEM, "out of memory");
	}
	return 0;
}

/* Allocate every request, inside the open transaction; job must be
 * queued or starting. */
static int alloc_all(struct hp__conn *c, int64_t job,
		     const struct hp_store_devreq *req, int nreq,
		     enum hp_job_state *state, struct hp_store_alloc **a,
		     int *na, struct hp_error *err)
{
	double now = hp__store_now();
	int cap = 0, rc;

	if (!req || nreq < 1)
		return hp_error_set(err, HP_EINVAL, "allocate: no devices");
	if ((rc = job_state(c, job, 0, state, err)))
		return rc;
	if (*state != HP_JOB_QUEUED && *state != HP_JOB_STARTING)
		return hp_error_set(err, HP_ESTATE,
				    "job %lld is %s: only a queued or starting "
				    "job gets devices",
				    (long long)job, hp_job_state_name(*state));
	for (int i = 0; i < nreq; i++)
		if ((rc = alloc_one(c, job, &req[i], now, a, na, &cap, err)))
			return rc;
	return 0;
}

static int allocate(struct hp_store *s, int64_t job,
		    const struct hp_store_devreq *req, int nreq, bool start,
		    const char *plan, struct hp_store_alloc **out, int *nout,
		    struct hp_error *err)
{
	struct hp_store_alloc *a = NULL;
	enum hp_job_state state;
	struct hp__conn *c;
	int na = 0, rc;

	if (out)
		*out = NULL;
	if (nout)
		*nout = 0;
	if (!(c = hp__conn_get(s, err)))
		return err ? err->code : HP_EIO;
	if ((rc = hp__begin(c, true, err)))
		goto out;
	if ((rc = alloc_all(c, job, req, nreq, &state, out ? &a : NULL, &na,
			    err)))
		goto out;
	if (start) {
		if (state != HP_JOB_QUEUED) {
			rc = hp_error_set(err, HP_ESTATE,
					  "job %lld is %s: only a queued job "
					  "starts",
					  (long long)job,
					  hp_job_state_name(state));
			goto out;
		}
		if ((rc = set_state(c, job, HP_JOB_STARTING, NULL, plan, err)))
			goto out;
	}
	if ((rc = hp__commit(c, err)))
		goto out;
	if (out) {
		*out = a;
		a = NULL;
	}
	if (nout)
		*nout = na;
out:
	free(a);
	hp__conn_put(s, c);
	return rc;
}

int hp_store_allocate(struct hp_store *s, int64_t job,
		      const struct hp_store_devreq *req, int nreq,
		      struct hp_store_alloc **out, int *nout,
		      struct hp_error *err)
{
	return allocate(s, job, req, nreq, false, NULL, out, nout, err);
}

int hp_store_job_start(struct hp_store *s, int64_t job,
		       const struct hp_store_devreq *req, int nreq,
		       const char *plan, struct hp_store_alloc **out, int *nout,
		       struct hp_error *err)
{
	return allocate(s, job, req, nreq, true, plan, out, nout, err);
}

int hp_store_release(struct hp_store *s, int64_t job, int *n,
		     struct hp_error *err)
{
	static const char sql[] = "UPDATE allocations SET released_s = ? "
				  "WHERE job_id = ? AND released_s IS NULL";
	enum hp_job_state state;
	struct hp__conn *c;
	sqlite3_stmt *st;
	int rc;

	if (n)
		*n = 0;
	if (!(c = hp__conn_get(s, err)))
		return err ? err->code : HP_EIO;
	if ((rc = hp__begin(c, true, err)) ||
	    (rc = job_state(c, job, 0, &state, err)))
		goto out;
	if (!(st = hp__stmt(c, sql, err))) {
		rc = err ? err->code : HP_EIO;
		goto out;
	}
	sqlite3_bind_double(st, 1, hp__store_now());
	sqlite3_bind_int64(st, 2, job);
	if ((rc = hp__step_done(c, st, "release", NULL, err)))
		goto out;
	if (n)
		*n = sqlite3_changes(c->db);
	rc = hp__commit(c, err);
out:
	hp__conn_put(s, c);
	return rc;
}

int hp_store_job_cancel(struct hp_store *s, int64_t id, int64_t owner,
			const char *reason, enum hp_job_state *state,
			struct hp_error *err)
{
	static const char sql_req[] =
	    "UPDATE jobs SET cancel_requested = 1, reason = coalesce(?, "
	    "reason), updated_s = ? WHERE id = ?";
	enum hp_job_state st_now;
	struct hp__conn *c;
	sqlite3_stmt *st;
	int rc;

	if (!(c = hp__conn_get(s, err)))
		return err ? err->code : HP_EIO;
	if ((rc = hp__begin(c, true, err)) ||
	    (rc = job_state(c, id, owner, &st_now, err)))
		goto out;
	if (hp_job_state_terminal(st_now)) {
		rc = hp_error_set(err, HP_ESTATE,
				  "job %lld has ended (%s): nothing to cancel",
				  (long long)id, hp_job_state_name(st_now));
		goto out;
	}
	if (st_now == HP_JOB_QUEUED) {
		if ((rc =
			 set_state(c, id, HP_JOB_CANCELLED, reason, NULL, err)))
			goto out;
		st_now = HP_JOB_CANCELLED;
	} else {
		if (!(st = hp__stmt(c, sql_req, err))) {
			rc = err ? err->code : HP_EIO;
			goto out;
		}
		hp__bind_text(st, 1, reason);
		sqlite3_bind_double(st, 2, hp__store_now());
		sqlite3_bind_int64(st, 3, id);
		if ((rc = hp__step_done(c, st, "cancel", NULL, err)))
			goto out;
	}
	if ((rc = hp__commit(c, err)))
		goto out;
	if (state)
		*state = st_now;
out:
	hp__conn_put(s, c);
	return rc;
}

int hp_store_job_remove(struct hp_store *s, int64_t id, int64_t owner,
			struct hp_error *err)
{
	static const char sql_meas[] =
	    "UPDATE measurements SET job_id = NULL WHERE job_id = ?";
	static const char sql_del[] = "DELETE FROM jobs WHERE id = ?";
	enum hp_job_state st_now;
	struct hp__conn *c;
	int rc;

	if (!(c = hp__conn_get(s, err)))
		return err ? err->code : HP_EIO;
	if ((rc = hp__begin(c, true, err)) ||
	    (rc = job_state(c, id, owner, &st_now, err)))
		goto out;
	if (!hp_job_state_terminal(st_now)) {
		rc = hp_error_set(err, HP_ESTATE,
				  "job %lld is %s: cancel it, and remove it "
				  "once it has ended",
				  (long long)id, hp_job_state_name(st_now));
		goto out;
	}
	/* its measurements stay for the estimator, no longer tied to it;
	 * its allocations go with it (ON DELETE CASCADE) */
	if (!(rc = hp__step_id(c, sql_meas, id, "job's measurements", NULL,
			       err)) &&
	    !(rc = hp__step_id(c, sql_del, id, "remove job", NULL, err)))
		rc = hp__commit(c, err);
out:
	hp__conn_put(s, c);
	return rc;
}

int hp_store_jobs_ended_before(struct hp_store *s, double before_s, int max,
			       int64_t *ids, int *n, struct hp_error *err)
{
	static const char sql[] =
	    "SELECT id FROM jobs WHERE state IN ('succeeded', 'failed', "
	    "'cancelled') AND coalesce(ended_s, updated_s) < ?1 ORDER BY id "
	    "LIMIT ?2";
	struct hp__conn *c;
	sqlite3_stmt *st;
	int rc;

	*n = 0;
	if (!(c = hp__conn_get(s, err)))
		return err ? err->code : HP_EIO;
	if (!(st = hp__stmt(c, sql, err))) {
		rc = err ? err->code : HP_EIO;
		goto out;
	}
	sqlite3_bind_double(st, 1, before_s);
	sqlite3_bind_int(st, 2, max);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW && *n < max)
		ids[(*n)++] = sqlite3_column_int64(st, 0);
	rc = rc == SQLITE_DONE || rc == SQLITE_ROW
		 ? 0
		 : hp__dberr(c, rc, "ended jobs", err);
	hp__stmt_done(st);
out:
	hp__conn_put(s, c);
	return rc;
}

int hp_store_job_devices(struct hp_store *s, int64_t job, bool live_only,
			 struct hp_store_alloc **out, int *n,
			 struct hp_error *err)
{
	static const char sql[] =
	    "SELECT node, type, idx, allocated_s, released_s FROM allocations "
	    "WHERE job_id = ?1 AND (?2 = 0 OR released_s IS NULL) ORDER BY id";
	struct hp_store_alloc *a = NULL;
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
	sqlite3_bind_int64(st, 1, job);
	sqlite3_bind_int(st, 2, live_only);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (push_alloc(&a, &na, &cap, job, hp__col_text(st, 0),
			       hp__col_text(st, 1), sqlite3_column_int(st, 2),
			       hp__col_time(st, 3))) {
			rc = hp_error_set(err, HP_ENOMEM, "out of memory");
			hp__stmt_done(st);
			goto out;
		}
		a[na - 1].released_s = hp__col_time(st, 4);
	}
	rc = rc == SQLITE_DONE ? 0 : hp__dberr(c, rc, "allocations", err);
	hp__stmt_done(st);
	if (!rc) {
		*out = a;
		*n = na;
		a = NULL;
	}
out:
	free(a);
	hp__conn_put(s, c);
	return rc;
}

int hp_store_recover(struct hp_store *s, struct hp_store_recovery *out,
		     struct hp_error *err)
{
	static const char sql_release[] =
	    "UPDATE allocations SET released_s = ?1 WHERE released_s IS NULL "
	    "AND (device_id IS NULL OR NOT EXISTS (SELECT 1 FROM jobs j WHERE "
	    "j.id = allocations.job_id AND j.state IN ('starting', "
	    "'running')))";
	static const char sql_active[] =
	    "SELECT " HP__JOB_COLS " FROM jobs j WHERE j.state IN "
	    "('starting', 'running') ORDER BY j.id";
	struct hp__conn *c;
	sqlite3_stmt *st;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!(c = hp__conn_get(s, err)))
		return err ? err->code : HP_EIO;
	if ((rc = hp__begin(c, true, err)))
		goto out;
	if (!(st = hp__stmt(c, sql_release, err))) {
		rc = err ? err->code : HP_EIO;
		goto out;
	}
	sqlite3_bind_double(st, 1, hp__store_now());
	if ((rc = hp__step_done(c, st, "recover", NULL, err)))
		goto out;
	out->released = sqlite3_changes(c->db);
	if (!(st = hp__stmt(c, sql_active, err))) {
		rc = err ? err->code : HP_EIO;
		goto out;
	}
	if ((rc = read_jobs(c, st, &out->active, &out->nactive, err)))
		goto out;
	if ((rc = hp__commit(c, err)))
		hp_store_recovery_release(out);
out:
	hp__conn_put(s, c);
	return rc;
}
