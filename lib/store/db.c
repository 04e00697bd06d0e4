/*
 * db.c - opening a store: the SQLite connections (WAL, foreign keys,
 * busy timeout, synchronous), the pool threads borrow them from, the
 * prepared statement cache, transactions, error mapping, and the schema
 * migrations, numbered, applied in order and recorded.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>

#include "store/store_int.h"
#include "util/banned.h"

/*
 * The migrations: migrations[k] takes the schema from version k to k + 1.
 * Never edit one that has shipped: add the next.  docs/store.md explains
 * each table.
 */
static const struct migration {
	const char *what;
	const char *sql;
} migrations[HP_STORE_SCHEMA_VERSION] = {
    {"nodes, devices, tokens, jobs and allocations",
     "CREATE TABLE schema_migrations ("
     " version INTEGER PRIMARY KEY,"
     " description TEXT NOT NULL,"
     " applied_s REAL NOT NULL);"

     "CREATE TABLE nodes ("
     " id INTEGER PRIMARY KEY AUTOINCREMENT,"
     " name TEXT NOT NULL UNIQUE,"
     " cpu_cores INTEGER NOT NULL CHECK (cpu_cores >= 1),"
     " memory_gb REAL NOT NULL,"
     " intra_bw_gbps REAL NOT NULL,"
     " net_bw_gbps REAL NOT NULL,"
     " net_latency_us REAL NOT NULL,"
     " base_power_w REAL NOT NULL,"
     " drained INTEGER NOT NULL DEFAULT 0 CHECK (drained IN (0, 1)),"
     " self INTEGER NOT NULL DEFAULT 0 CHECK (self IN (0, 1)),"
     " info TEXT,"
     " created_s REAL NOT NULL,"
     " updated_s REAL NOT NULL);"
     "CREATE UNIQUE INDEX nodes_one_self ON nodes (self) WHERE self = 1;"

     "CREATE TABLE devices ("
     " id INTEGER PRIMARY KEY,"
     " node_id INTEGER NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,"
     " type TEXT NOT NULL,"
     " idx INTEGER NOT NULL CHECK (idx >= 0),"
     " kind_pos INTEGER NOT NULL,"
     " drained INTEGER NOT NULL DEFAULT 0 CHECK (drained IN (0, 1)),"
     " reserved INTEGER NOT NULL DEFAULT 0 CHECK (reserved IN (0, 1)),"
     " UNIQUE (node_id, type, idx));"

     "CREATE TABLE tokens ("
     " id INTEGER PRIMARY KEY AUTOINCREMENT,"
     " name TEXT NOT NULL,"
     " role TEXT NOT NULL CHECK (role IN ('reader', 'user', 'admin')),"
     " hash TEXT NOT NULL UNIQUE CHECK (length(hash) = 64),"
     " created_s REAL NOT NULL,"
     " revoked_s REAL,"
     " last_used_s REAL);"

     "CREATE TABLE jobs ("
     " id INTEGER PRIMARY KEY AUTOINCREMENT,"
     " owner INTEGER REFERENCES tokens (id),"
     " name TEXT,"
     " state TEXT NOT NULL CHECK (state IN ('queued', 'starting',"
     "  'running', 'succeeded', 'failed', 'cancelled')),"
     " reason TEXT,"
     " description TEXT NOT NULL,"
     " data TEXT NOT NULL,"
     " settings TEXT,"
     " backend TEXT NOT NULL,"
     " plan TEXT,"
     " deadline_at_s REAL,"
     " predicted_start_at_s REAL,"
     " predicted_end_at_s REAL,"
     " created_s REAL NOT NULL,"
     " updated_s REAL NOT NULL,"
     " started_s REAL,"
     " ended_s REAL,"
     " cancel_requested INTEGER NOT NULL DEFAULT 0,"
     " deploy_id TEXT,"
     " deploy_dir TEXT);"
     "CREATE INDEX jobs_state ON jobs (state, id);"
     "CREATE INDEX jobs_owner ON jobs (owner, id);"

     /* One row per device a job was given; released_s NULL while held.
      * The partial unique index is the guarantee that no device is held
      * by two jobs.  node/type/idx keep the history readable after the
      * device is gone (device_id then NULL). */
     "CREATE TABLE allocations ("
     " id INTEGER PRIMARY KEY,"
     " job_id INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,"
     " device_id INTEGER REFERENCES devices (id) ON DELETE SET NULL,"
     " node TEXT NOT NULL,"
     " type TEXT NOT NULL,"
     " idx INTEGER NOT NULL,"
     " allocated_s REAL NOT NULL,"
     " released_s REAL);"
     "CREATE UNIQUE INDEX allocations_live ON allocations (device_id)"
     " WHERE released_s IS NULL;"
     "CREATE INDEX allocations_job ON allocations (job_id, released_s);"

     /* A job that has ended stays ended. */
     "CREATE TRIGGER jobs_final BEFORE UPDATE OF state ON jobs"
     " WHEN OLD.state IN ('succeeded', 'failed', 'cancelled')"
     "  AND NEW.state <> OLD.state "
     "BEGIN SELECT RAISE(ABORT, 'hp: job has ended'); END;"
     /* Ending, or going back to the queue, releases every device. */
     "CREATE TRIGGER jobs_release AFTER UPDATE OF state ON jobs"
     " WHEN NEW.state <> OLD.state AND NEW.state IN ('queued',"
     "  'succeeded', 'failed', 'cancelled') "
     "BEGIN UPDATE allocations SET released_s = NEW.updated_s"
     "  WHERE job_id = NEW.id AND released_s IS NULL; END;"
     /* No device goes to a job that is not waiting or running, nor a
      * drained or reserved one, nor one on a drained node. */
     "CREATE TRIGGER allocations_check BEFORE INSERT ON allocations "
     "BEGIN"
     " SELECT RAISE(ABORT, 'hp: job has ended') WHERE"
     "  (SELECT state FROM jobs WHERE id = NEW.job_id)"
     "  IN ('succeeded', 'failed', 'cancelled');"
     " SELECT RAISE(ABORT, 'hp: device unavailable') WHERE"
     "  NEW.released_s IS NULL AND (NEW.device_id IS NULL OR EXISTS"
     "  (SELECT 1 FROM devices d JOIN nodes n ON n.id = d.node_id"
     "   WHERE d.id = NEW.device_id AND (d.drained OR d.reserved OR"
     "   n.drained)));"
     "END;"
     /* A released allocation stays released (its device may only go,
      * the foreign key's SET NULL when a node is removed). */
     "CREATE TRIGGER allocations_final BEFORE UPDATE ON allocations"
     " WHEN OLD.released_s IS NOT NULL AND (NEW.released_s IS NOT"
     "  OLD.released_s OR NEW.job_id IS NOT OLD.job_id OR (NEW.device_id"
     "  IS NOT NULL AND NEW.device_id IS NOT OLD.device_id)) "
     "BEGIN SELECT RAISE(ABORT, 'hp: allocation was released'); END;"
     /* A device a job holds cannot be removed. */
     "CREATE TRIGGER devices_held BEFORE DELETE ON devices"
     " WHEN EXISTS (SELECT 1 FROM allocations WHERE device_id = OLD.id"
     "  AND released_s IS NULL) "
     "BEGIN SELECT RAISE(ABORT, 'hp: device is allocated'); END;"},

    {"models (bytes apart) and datasets; jobs refer to a model",
     "CREATE TABLE models ("
     " id INTEGER PRIMARY KEY AUTOINCREMENT,"
     " name TEXT NOT NULL,"
     " kind TEXT NOT NULL CHECK (kind IN ('onnx', 'spec')),"
     " sha256 TEXT NOT NULL CHECK (length(sha256) = 64),"
     " size INTEGER NOT NULL CHECK (size >= 1),"
     " features TEXT,"
     " owner INTEGER REFERENCES tokens (id),"
     " created_s REAL NOT NULL);"
     "CREATE INDEX models_sha256 ON models (sha256);"
     "CREATE TABLE model_data ("
     " model_id INTEGER PRIMARY KEY REFERENCES models (id)"
     "  ON DELETE CASCADE,"
     " data BLOB NOT NULL);"
     "ALTER TABLE jobs ADD COLUMN model_id INTEGER REFERENCES models (id);"
     "CREATE INDEX jobs_model ON jobs (model_id);"

     "CREATE TABLE datasets ("
     " id INTEGER PRIMARY KEY AUTOINCREMENT,"
     " name TEXT NOT NULL UNIQUE,"
     " path TEXT NOT NULL,"
     " sha256 TEXT,"
     " size INTEGER,"
     " created_s REAL NOT NULL);"},

    {"measurements and estimator versions",
     "CREATE TABLE measurements ("
     " id INTEGER PRIMARY KEY AUTOINCREMENT,"
     " kind TEXT NOT NULL CHECK (kind IN ('profile', 'job')),"
     " job_id INTEGER REFERENCES jobs (id),"
     " device_type TEXT NOT NULL,"
     " ndevices INTEGER NOT NULL CHECK (ndevices >= 1),"
     " batch INTEGER NOT NULL CHECK (batch >= 1),"
     " step_time_s REAL NOT NULL CHECK (step_time_s > 0),"
     " predicted_step_time_s REAL,"
     " energy_per_step_j REAL,"
     " power_w REAL,"
     " config TEXT NOT NULL,"
     " source TEXT,"
     " created_s REAL NOT NULL);"
     "CREATE INDEX measurements_kind ON measurements (kind, id);"
     "CREATE INDEX measurements_job ON measurements (job_id);"
     "CREATE TABLE estimators ("
     " id INTEGER PRIMARY KEY AUTOINCREMENT,"
     " body TEXT NOT NULL,"
     " fitted_on TEXT,"
     " validation TEXT,"
     " provenance TEXT,"
     " measurements_upto INTEGER NOT NULL DEFAULT 0,"
     " created_s REAL NOT NULL);"},

    /* hp_store_pool() keeps the pool it built with the version it was
     * built at, and builds it again only when the version moved: every
     * change to a node, a device or an allocation moves it. */
    {"a version of the pool, moved by every change to its rows",
     "CREATE TABLE pool_version ("
     " id INTEGER PRIMARY KEY CHECK (id = 1),"
     " v INTEGER NOT NULL);"
     "INSERT INTO pool_version VALUES (1, 0);"
     "CREATE TRIGGER nodes_insert_v AFTER INSERT ON nodes "
     "BEGIN UPDATE pool_version SET v = v + 1; END;"
     "CREATE TRIGGER nodes_update_v AFTER UPDATE ON nodes "
     "BEGIN UPDATE pool_version SET v = v + 1; END;"
     "CREATE TRIGGER nodes_delete_v AFTER DELETE ON nodes "
     "BEGIN UPDATE pool_version SET v = v + 1; END;"
     "CREATE TRIGGER devices_insert_v AFTER INSERT ON devices "
     "BEGIN UPDATE pool_version SET v = v + 1; END;"
     "CREATE TRIGGER devices_update_v AFTER UPDATE ON devices "
     "BEGIN UPDATE pool_version SET v = v + 1; END;"
     "CREATE TRIGGER devices_delete_v AFTER DELETE ON devices "
     "BEGIN UPDATE pool_version SET v = v + 1; END;"
     "CREATE TRIGGER allocations_insert_v AFTER INSERT ON allocations "
     "BEGIN UPDATE pool_version SET v = v + 1; END;"
     "CREATE TRIGGER allocations_update_v AFTER UPDATE ON allocations "
     "BEGIN UPDATE pool_version SET v = v + 1; END;"
     "CREATE TRIGGER allocations_delete_v AFTER DELETE ON allocations "
     "BEGIN UPDATE pool_version SET v = v + 1; END;"},

    /* The pool file's "net_transport" (hp_net_transport_name()); rows of
     * older versions get 'auto'.  No CHECK: a name added later needs no
     * rebuild of the table; the code checks what it writes and reads. */
    {"a node's network transport (auto, tcp, socket or rdma)",
     "ALTER TABLE nodes ADD COLUMN"
     " net_transport TEXT NOT NULL DEFAULT 'auto';"},
};

double hp__store_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

bool hp__store_name_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	return n >= 1 && n <= 63 && !hp_str_has_control(s);
}

int hp__dberr(struct hp__conn *c, int rc, const char *what,
	      struct hp_error *err)
{
	const char *msg = c && c->db ? sqlite3_errmsg(c->db) : "";
	int prim = rc & 0xff;

	if (!msg || !*msg)
		msg = sqlite3_errstr(rc);
	if ((prim == SQLITE_FULL || prim == SQLITE_READONLY) && c && c->owner) {
		struct hp_store *s = c->owner;
		pthread_mutex_lock(&s->storage_mu);
		snprintf(s->storage_why, sizeof(s->storage_why), "%s (%s)",
			 prim == SQLITE_FULL ? "disk full"
					     : "the database cannot be written",
			 msg);
		s->storage_full = prim == SQLITE_FULL;
		s->storage_bad = true;
		pthread_mutex_unlock(&s->storage_mu);
	}
	switch (prim) {
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return hp_error_set(err, HP_EBUSY, "%s: database is busy (%s)",
				    what, msg);
	case SQLITE_NOMEM:
		return hp_error_set(err, HP_ENOMEM, "%s: out of memory", what);
	case SQLITE_CONSTRAINT:
		return hp_error_set(err, HP_EINVAL, "%s: %s", what, msg);
	case SQLITE_FULL:
		return hp_error_set(err, HP_ESTORAGE, "%s: disk full (%s)",
				    what, msg);
	case SQLITE_READONLY:
		return hp_error_set(err, HP_ESTORAGE,
				    "%s: the database cannot be written (%s)",
				    what, msg);
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB:
		return hp_error_set(err, HP_EIO,
				    "%s: the database file is damaged or not a "
				    "database (%s)",
				    what, msg);
	default:
		return hp_error_set(err, HP_EIO, "%s: %s", what, msg);
	}
}

int hp__exec(struct hp__conn *c, const char *sql, struct hp_error *err)
{
	int rc = sqlite3_exec(c->db, sql, NULL, NULL, NULL);

	return rc == SQLITE_OK ? 0 : hp__dberr(c, rc, "database", err);
}

int hp__begin(struct hp__conn *c, bool write, struct hp_error *err)
{
	return hp__exec(c, write ? "BEGIN IMMEDIATE" : "BEGIN", err);
}

int hp__commit(struct hp__conn *c, struct hp_error *err)
{
	int rc = sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL);

	if (rc == SQLITE_OK) {
		if (c->owner && c->owner->storage_bad)
			c->owner->storage_bad = false;
		return 0;
	}
	rc = hp__dberr(c, rc, "commit", err);
	hp__rollback(c);
	return rc;
}

void hp__rollback(struct hp__conn *c)
{
	if (!sqlite3_get_autocommit(c->db))
		sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
}

static size_t slot_of(const char *sql)
{
	uintptr_t h = (uintptr_t)sql;

	h ^= h >> 17;
	h *= 0x9e3779b97f4a7c15ull;
	return (size_t)(h >> 24) % HP__STMT_SLOTS;
}

sqlite3_stmt *hp__stmt(struct hp__conn *c, const char *sql,
		       struct hp_error *err)
{
	size_t k = slot_of(sql);
	sqlite3_stmt *st = NULL;
	int rc;

	for (size_t probe = 0; probe < HP__STMT_SLOTS; probe++) {
		size_t i = (k + probe) % HP__STMT_SLOTS;
		if (c->cache[i].sql == sql) {
			st = c->cache[i].st;
			sqlite3_reset(st);
			sqlite3_clear_bindings(st);
			return st;
		}
		if (!c->cache[i].sql) {
			rc = sqlite3_prepare_v3(c->db, sql, -1,
						SQLITE_PREPARE_PERSISTENT, &st,
						NULL);
			if (rc != SQLITE_OK) {
				hp__dberr(c, rc, "prepare", err);
				sqlite3_finalize(st);
				return NULL;
			}
			c->cache[i].sql = sql;
			c->cache[i].st = st;
			return st;
		}
	}
	hp_error_set(err, HP_EINTERNAL, "store: statement cache full");
	return NULL;
}

int hp__step_done(struct hp__conn *c, sqlite3_stmt *st, const char *what,
		  int *rc_out, struct hp_error *err)
{
	int rc = sqlite3_step(st);

	if (rc_out)
		*rc_out = rc;
	if (rc == SQLITE_DONE || rc == SQLITE_ROW) {
		hp__stmt_done(st);
		return 0;
	}
	rc = hp__dberr(c, rc, what, err);
	hp__stmt_done(st);
	return rc;
}

int hp__step_id(struct hp__conn *c, const char *sql, int64_t id,
		const char *what, int *rc_out, struct hp_error *err)
{
	sqlite3_stmt *st = hp__stmt(c, sql, err);

	if (!st)
		return err ? err->code : HP_EIO;
	sqlite3_bind_int64(st, 1, id);
	return hp__step_done(c, st, what, rc_out, err);
}

int hp__bind_text(sqlite3_stmt *st, int i, const char *s)
{
	if (!s)
		return sqlite3_bind_null(st, i);
	return sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
}

int hp__bind_time(sqlite3_stmt *st, int i, double t)
{
	if (t == 0 || !isfinite(t))
		return sqlite3_bind_null(st, i);
	return sqlite3_bind_double(st, i, t);
}

int hp__bind_num(sqlite3_stmt *st, int i, double x)
{
	if (!isfinite(x))
		return sqlite3_bind_null(st, i);
	return sqlite3_bind_double(st, i, x);
}

int hp__col_dup(sqlite3_stmt *st, int i, char **out)
{
	const unsigned char *t;
	int n;

	*out = NULL;
	if (sqlite3_column_type(st, i) == SQLITE_NULL)
		return 0;
	t = sqlite3_column_text(st, i);
	n = sqlite3_column_bytes(st, i);
	if (!t)
		return HP_ENOMEM;
	*out = hp_strndup((const char *)t, (size_t)n);
	return *out ? 0 : HP_ENOMEM;
}

const char *hp__col_text(sqlite3_stmt *st, int i)
{
	const unsigned char *t = sqlite3_column_text(st, i);

	return t ? (const char *)t : "";
}

double hp__col_time(sqlite3_stmt *st, int i)
{
	if (sqlite3_column_type(st, i) == SQLITE_NULL)
		return 0;
	return sqlite3_column_double(st, i);
}

double hp__col_num(sqlite3_stmt *st, int i)
{
	if (sqlite3_column_type(st, i) == SQLITE_NULL)
		return NAN;
	return sqlite3_column_double(st, i);
}

/* ---- connections */

static void conn_close(struct hp__conn *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < HP__STMT_SLOTS; i++)
		sqlite3_finalize(c->cache[i].st);
	sqlite3_close_v2(c->db);
	free(c);
}

/* One integer from a pragma or query without parameters. */
static int query_int(sqlite3 *db, const char *sql, long long *out)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);

	if (rc == SQLITE_OK) {
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW) {
			*out = sqlite3_column_int64(st, 0);
			rc = SQLITE_OK;
		}
	}
	sqlite3_finalize(st);
	return rc;
}

/*
 * Turn WAL on (it persists in the file; the first connection of a handle
 * does it).  Switching a new file's journal needs an exclusive lock, and
 * SQLite answers SQLITE_BUSY at once, without its busy handler, when
 * another process holds any: try again until busy_timeout_s has passed.
 */
static int set_wal(struct hp__conn *c, const struct hp_store *s,
		   struct hp_error *err)
{
	double deadline = hp__store_now() + s->o.busy_timeout_s;
	char mode[16] = "";
	int rc;

	for (;;) {
		sqlite3_stmt *st = NULL;

		rc = sqlite3_prepare_v2(c->db, "PRAGMA journal_mode = WAL", -1,
					&st, NULL);
		if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW)
			snprintf(mode, sizeof(mode), "%s",
				 (const char *)sqlite3_column_text(st, 0));
		sqlite3_finalize(st);
		if (rc == SQLITE_ROW)
			break;
		if ((rc & 0xff) != SQLITE_BUSY || hp__store_now() > deadline)
			return hp__dberr(c, rc, "journal mode", err);
		{
			struct timespec ts = {0, 5 * 1000000L};
			nanosleep(&ts, NULL);
		}
	}
	if (strcmp(mode, "wal"))
		return hp_error_set(err, HP_EIO,
				    "database '%s': cannot use WAL (journal "
				    "mode '%s')",
				    s->path, mode);
	return 0;
}

static struct hp__conn *conn_open(struct hp_store *s, struct hp_error *err)
{
	struct hp__conn *c = calloc(1, sizeof(*c));
	int flags = SQLITE_OPEN_NOMUTEX;
	char pragmas[224];
	long long fk = 0;
	int rc;

	if (!c) {
		hp_error_set(err, HP_ENOMEM, "out of memory");
		return NULL;
	}
	flags |= s->o.read_only ? SQLITE_OPEN_READONLY
				: SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
	rc = sqlite3_open_v2(s->path, &c->db, flags, NULL);
	if (rc != SQLITE_OK) {
		hp__dberr(c, rc, "open", err);
		goto fail;
	}
	/* SQLite opens a write-protected file read-only without a word:
	 * every write would then fail */
	if (!s->o.read_only && sqlite3_db_readonly(c->db, "main") == 1) {
		hp_error_set(err, HP_ESTORAGE,
			     "the file can only be read (it, its folder or "
			     "its filesystem is write-protected): make it "
			     "writable");
		goto fail;
	}
	c->owner = s;
	sqlite3_extended_result_codes(c->db, 1);
	sqlite3_busy_timeout(c->db, (int)(s->o.busy_timeout_s * 1000));
	/* Large enough for a store of a few thousand jobs to stay in memory;
	 * defensive: no schema object may run untrusted SQL functions; the
	 * WAL cut back to 64 MiB after a checkpoint (it stayed at its
	 * largest, 12 MiB beside a 1 MiB database after a burst). */
	snprintf(pragmas, sizeof(pragmas),
		 "PRAGMA foreign_keys = ON; PRAGMA synchronous = %s;"
		 "PRAGMA trusted_schema = OFF; PRAGMA cache_size = -8192;"
		 "PRAGMA journal_size_limit = 67108864;",
		 s->o.no_sync ? "NORMAL" : "FULL");
	if ((rc = hp__exec(c, pragmas, err)))
		goto fail;
	if (query_int(c->db, "PRAGMA foreign_keys", &fk) != SQLITE_OK ||
	    fk != 1) {
		hp_error_set(err, HP_EUNSUPP,
			     "sqlite was built without foreign keys");
		goto fail;
	}
	return c;
fail:
	conn_close(c);
	return NULL;
}

struct hp__conn *hp__conn_get(struct hp_store *s, struct hp_error *err)
{
	struct hp__conn *c;

	pthread_mutex_lock(&s->mu);
	while (!s->idle && s->nopen >= s->o.max_connections)
		pthread_cond_wait(&s->cv, &s->mu);
	if ((c = s->idle)) {
		s->idle = c->next;
		c->next = NULL;
		pthread_mutex_unlock(&s->mu);
		return c;
	}
	s->nopen++;
	pthread_mutex_unlock(&s->mu);
	c = conn_open(s, err);
	if (!c) {
		pthread_mutex_lock(&s->mu);
		s->nopen--;
		pthread_cond_signal(&s->cv);
		pthread_mutex_unlock(&s->mu);
		hp_error_prefix(err, "database '%s'", s->path);
	}
	return c;
}

void hp__conn_put(struct hp_store *s, struct hp__conn *c)
{
	if (!c)
		return;
	hp__rollback(c);
	pthread_mutex_lock(&s->mu);
	c->next = s->idle;
	s->idle = c;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

/* ---- migrations */

/* HP_EUNSUPP for a newer store, HP_EINVAL for another program's file. */
static int refuse(const char *path, long long v, long long app, long long nobj,
		  struct hp_error *err)
{
	if (v > HP_STORE_SCHEMA_VERSION)
		return hp_error_set(
		    err, HP_EUNSUPP,
		    "database '%s' has schema version %lld; this hetpool (%s) "
		    "knows versions up to %d: use a newer hetpool",
		    path, v, HP_VERSION, HP_STORE_SCHEMA_VERSION);
	if (app != HP__STORE_APP_ID && (v != 0 || nobj != 0))
		return hp_error_set(err, HP_EINVAL,
				    "database '%s' is not a hetpool store (it "
				    "holds other tables)",
				    path);
	return 0;
}

/*
 * Refuse a newer or foreign file before anything writes to it (turning
 * WAL on rewrites its header): reads only.  hp__store_migrate() checks
 * again inside its write transaction.
 */
static int check_before_writing(struct hp__conn *c, const char *path,
				struct hp_error *err)
{
	long long v = 0, app = 0, nobj = 0;
	int rc;

	if ((rc = query_int(c->db, "PRAGMA user_version", &v)) ||
	    (rc = query_int(c->db, "PRAGMA application_id", &app)) ||
	    (rc = query_int(c->db, "SELECT count(*) FROM sqlite_master",
			    &nobj))) {
		rc = hp__dberr(c, rc, "schema version", err);
		hp_error_prefix(err, "database '%s'", path);
		return rc;
	}
	return refuse(path, v, app, nobj, err);
}

int hp__store_migrate(sqlite3 *db, const char *path, int upto,
		      struct hp_error *err)
{
	struct hp__conn tmp = {.db = db};
	long long v = 0, app = 0, nobj = 0;
	char sql[160];
	int rc, was_empty = -1; /* a new file: its migrations go unsaid */

	if (upto < 1 || upto > HP_STORE_SCHEMA_VERSION)
		return hp_error_set(err, HP_EINVAL,
				    "schema version %d: give 1 to %d", upto,
				    HP_STORE_SCHEMA_VERSION);
	for (;;) {
		if ((rc = hp__exec(&tmp, "BEGIN IMMEDIATE", err)))
			goto fail_msg;
		/* Read inside the write transaction: a second process
		 * migrating at once waits, then sees the new version. */
		if ((rc = query_int(db, "PRAGMA user_version", &v)) ||
		    (rc = query_int(db, "PRAGMA application_id", &app)) ||
		    (rc = query_int(db, "SELECT count(*) FROM sqlite_master",
				    &nobj))) {
			rc = hp__dberr(&tmp, rc, "schema version", err);
			goto fail;
		}
		if ((rc = refuse(path, v, app, nobj, err)))
			goto fail;
		if (was_empty < 0)
			was_empty = nobj == 0;
		if (v >= upto) {
			hp__rollback(&tmp);
			return 0;
		}
		rc = sqlite3_exec(db, migrations[v].sql, NULL, NULL, NULL);
		if (rc != SQLITE_OK) {
			rc = hp__dberr(&tmp, rc, "migration", err);
			hp_error_prefix(err, "migration %lld to %lld", v,
					v + 1);
			goto fail;
		}
		snprintf(sql, sizeof(sql),
			 "INSERT INTO schema_migrations VALUES (%lld, ?, ?);"
			 "PRAGMA user_version = %lld;"
			 "PRAGMA application_id = %d;",
			 v + 1, v + 1, HP__STORE_APP_ID);
		{
			sqlite3_stmt *st = NULL;
			const char *tail = sql;

			/* The first statement has parameters; the pragmas
			 * (numbers made here, no user data) follow. */
			rc = sqlite3_prepare_v2(db, sql, -1, &st, &tail);
			if (rc == SQLITE_OK) {
				sqlite3_bind_text(st, 1, migrations[v].what, -1,
						  SQLITE_STATIC);
				sqlite3_bind_double(st, 2, hp__store_now());
				rc = sqlite3_step(st);
				rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
			}
			sqlite3_finalize(st);
			if (rc == SQLITE_OK)
				rc = sqlite3_exec(db, tail, NULL, NULL, NULL);
			if (rc != SQLITE_OK) {
				rc = hp__dberr(&tmp, rc, "migration", err);
				goto fail;
			}
		}
		if ((rc = hp__exec(&tmp, "COMMIT", err)))
			goto fail;
		/* said once, in the program's log: a migration cannot be
		 * undone (docs/store.md, "Backup and restore") */
		if (!was_empty)
			hp_log(HP_LOG_INFO,
			       "store: database '%s' migrated to schema "
			       "version %lld (%s)",
			       path, v + 1, migrations[v].what);
	}
fail:
	hp__rollback(&tmp);
fail_msg:
	if (rc != HP_EUNSUPP && rc != HP_EINVAL)
		hp_error_prefix(err, "database '%s'", path);
	return rc;
}

int hp_store_file_version(const char *path, struct hp_error *err)
{
	sqlite3 *db = NULL;
	long long v = 0;
	int rc;

	if (!path || !*path)
		return hp_error_set(err, HP_EINVAL, "no database path");
	rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL);
	if (rc == SQLITE_OK)
		rc = query_int(db, "PRAGMA user_version", &v);
	if (rc != SQLITE_OK) {
		struct hp__conn tmp = {.db = db};
		rc = hp__dberr(&tmp, rc, "database", err);
		hp_error_prefix(err, "'%s'", path);
		sqlite3_close_v2(db);
		return rc;
	}
	sqlite3_close_v2(db);
	return v > 0x7fffffff ? 0x7fffffff : (int)v;
}

/* ---- the handle */

struct hp_store *hp_store_open(const char *path,
			       const struct hp_store_options *o,
			       struct hp_error *err)
{
	struct hp_store *s;
	struct hp__conn *c = NULL;
	long long v = 0;
	int rc;

	if (!path || !*path) {
		hp_error_set(err, HP_EINVAL, "no database path");
		return NULL;
	}
	if (!sqlite3_threadsafe()) {
		hp_error_set(err, HP_EUNSUPP,
			     "sqlite was built without thread support");
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s || !(s->path = hp_strdup(path))) {
		free(s);
		hp_error_set(err, HP_ENOMEM, "out of memory");
		return NULL;
	}
	if (o)
		s->o = *o;
	if (s->o.max_connections <= 0)
		s->o.max_connections = 8;
	if (!(s->o.busy_timeout_s > 0))
		s->o.busy_timeout_s = 10;
	if (s->o.busy_timeout_s > 3600)
		s->o.busy_timeout_s = 3600;
	pthread_mutex_init(&s->mu, NULL);
	pthread_mutex_init(&s->storage_mu, NULL);
	pthread_cond_init(&s->cv, NULL);

	c = conn_open(s, err);
	if (!c) {
		hp_error_prefix(err, "database '%s'", path);
		goto fail;
	}
	if (!s->o.read_only) {
		if (check_before_writing(c, path, err))
			goto fail;
		if (set_wal(c, s, err)) {
			hp_error_prefix(err, "database '%s'", path);
			goto fail;
		}
		if (hp__store_migrate(c->db, path, HP_STORE_SCHEMA_VERSION,
				      err))
			goto fail;
	} else {
		rc = query_int(c->db, "PRAGMA user_version", &v);
		if (rc != SQLITE_OK) {
			hp__dberr(c, rc, "schema version", err);
			hp_error_prefix(err, "database '%s'", path);
			goto fail;
		}
		if (v != HP_STORE_SCHEMA_VERSION) {
			hp_error_set(err,
				     v > HP_STORE_SCHEMA_VERSION ? HP_EUNSUPP
								 : HP_EINVAL,
				     "database '%s' has schema version %lld; "
				     "this hetpool (%s) reads version %d "
				     "(open it writable to migrate it)",
				     path, v, HP_VERSION,
				     HP_STORE_SCHEMA_VERSION);
			goto fail;
		}
	}
	s->nopen = 1;
	s->idle = c;
	return s;
fail:
	conn_close(c);
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
	pthread_mutex_destroy(&s->storage_mu);
	free(s->path);
	free(s);
	return NULL;
}

void hp_store_close(struct hp_store *s)
{
	if (!s)
		return;
	while (s->idle) {
		struct hp__conn *c = s->idle;
		s->idle = c->next;
		conn_close(c);
	}
	hp_pool_free(s->pool_cache);
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
	pthread_mutex_destroy(&s->storage_mu);
	free(s->path);
	free(s);
}

bool hp_store_writable(struct hp_store *s, char *why, size_t n)
{
	if (!s->storage_bad)
		return true;
	pthread_mutex_lock(&s->storage_mu);
	if (n)
		snprintf(why, n, "%s", s->storage_why);
	pthread_mutex_unlock(&s->storage_mu);
	return false;
}

/* After a full disk, whether its filesystem has room again: at least
 * HP__STORE_ROOM_BYTES free (a few bytes free take a probe's write, not
 * an upload's). */
static int room_again(struct hp_store *s, struct hp_error *err)
{
	char dir[4096];
	const char *slash = strrchr(s->path, '/');
	struct statvfs v;
	double free_b;
	bool full;

	pthread_mutex_lock(&s->storage_mu);
	full = s->storage_bad && s->storage_full;
	pthread_mutex_unlock(&s->storage_mu);
	if (!full)
		return 0;
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s",
			 (int)(slash == s->path ? 1 : slash - s->path),
			 s->path);
	if (statvfs(dir, &v))
		return 0; /* cannot say: let the probe tell */
	free_b = (double)v.f_bavail * (double)v.f_frsize;
	if (free_b < HP__STORE_ROOM_BYTES)
		return hp_error_set(err, HP_ESTORAGE,
				    "disk full: %.1f MiB free in '%s', under "
				    "the %d MiB the store waits for",
				    free_b / 1048576, dir,
				    HP__STORE_ROOM_BYTES >> 20);
	return 0;
}

int hp_store_probe_write(struct hp_store *s, struct hp_error *err)
{
	struct hp__conn *c;
	long long v = 0;
	char sql[64];
	int rc;

	if (s->o.read_only)
		return hp_error_set(err, HP_ESTATE, "the store is read-only");
	if ((rc = room_again(s, err)))
		return rc;
	if (!(c = hp__conn_get(s, err)))
		return err->code;
	/* a write that changes nothing: the schema version, set again */
	if ((rc = query_int(c->db, "PRAGMA user_version", &v)) != SQLITE_OK) {
		rc = hp__dberr(c, rc, "probe", err);
	} else {
		snprintf(sql, sizeof(sql), "PRAGMA user_version = %lld;", v);
		if (!(rc = hp__begin(c, true, err)) &&
		    !(rc = hp__exec(c, sql, err)))
			rc = hp__commit(c, err);
		else if (rc)
			hp__rollback(c);
	}
	hp__conn_put(s, c);
	return rc;
}

const char *hp_store_path(const struct hp_store *s)
{
	return s->path;
}
