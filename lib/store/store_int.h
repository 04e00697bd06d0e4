/*
 * store_int.h - internal to lib/store: the handle, its pool of SQLite
 * connections with their cached prepared statements, transactions, the
 * mapping of SQLite's result codes to hp_err, and column readers.
 */
#ifndef HP_STORE_INT_H
#define HP_STORE_INT_H

#include <pthread.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>

#include "hetpool/store.h"

/* 'HPST': PRAGMA application_id of a hetpool store. */
#define HP__STORE_APP_ID 0x48505354

/* Most statements one connection caches (open addressing by the SQL
 * text's address: every statement is a static string). */
#define HP__STMT_SLOTS 256

struct hp__conn {
	sqlite3 *db;
	struct hp_store *owner;
	struct {
		const char *sql;
		sqlite3_stmt *st;
	} cache[HP__STMT_SLOTS];
	struct hp__conn *next; /* in the idle list */
};

/* After a full disk the store counts as writable again only once its
 * filesystem has this much free. */
#define HP__STORE_ROOM_BYTES (8 << 20)

struct hp_store {
	char *path;
	struct hp_store_options o;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct hp__conn *idle; /* connections not in use */
	int nopen;	       /* connections open (idle or lent) */
	/* The pool hp_store_pool() last built, and the pool_version it was
	 * built at (under mu). */
	struct hp_pool *pool_cache;
	int64_t pool_cache_v;
	/* The last write failed for want of storage (SQLITE_FULL,
	 * SQLITE_READONLY) and none has succeeded since: storage_why says
	 * how (under mu; storage_bad is read without it too). */
	_Atomic bool storage_bad;
	bool storage_full;	    /* the disk, not the file (storage_mu) */
	pthread_mutex_t storage_mu; /* for storage_why, storage_full */
	char storage_why[200];
};

/* Borrow a connection (waits while all max_connections are lent); NULL
 * with err set when a new one cannot be opened. */
struct hp__conn *hp__conn_get(struct hp_store *s, struct hp_error *err);
/* Give it back.  A transaction still open on it is rolled back. */
void hp__conn_put(struct hp_store *s, struct hp__conn *c);

/*
 * The prepared statement for sql (a string with static storage: the cache
 * is keyed by its address), reset and with no bindings; NULL with err
 * set.  Reset it when done (hp__stmt_done()), so that it holds no read
 * snapshot.
 */
sqlite3_stmt *hp__stmt(struct hp__conn *c, const char *sql,
		       struct hp_error *err);
static inline void hp__stmt_done(sqlite3_stmt *st)
{
	if (st) {
		sqlite3_reset(st);
		sqlite3_clear_bindings(st);
	}
}

/* BEGIN IMMEDIATE (write) or a deferred BEGIN (a consistent read). */
int hp__begin(struct hp__conn *c, bool write, struct hp_error *err);
int hp__commit(struct hp__conn *c, struct hp_error *err);
/* Roll back when a transaction is open; never fails. */
void hp__rollback(struct hp__conn *c);

/*
 * An error from SQLite as an hp_err with "WHAT: sqlite's message":
 * HP_EBUSY (busy or locked past the timeout), HP_ENOMEM, HP_EIO (I/O, full
 * disk, corrupt file, anything else); constraint failures are HP_EINVAL
 * unless the caller maps them first.
 */
int hp__dberr(struct hp__conn *c, int rc, const char *what,
	      struct hp_error *err);
/* Run SQL without results (migrations, pragmas, BEGIN/COMMIT). */
int hp__exec(struct hp__conn *c, const char *sql, struct hp_error *err);

/* Step a statement that returns no row (INSERT/UPDATE/DELETE): 0, or the
 * mapped error.  rc_out (may be NULL) gets SQLite's own code. */
int hp__step_done(struct hp__conn *c, sqlite3_stmt *st, const char *what,
		  int *rc_out, struct hp_error *err);

/* hp__stmt(sql), its one parameter bound to id, hp__step_done(): a
 * statement that returns no row and takes a row's id. */
int hp__step_id(struct hp__conn *c, const char *sql, int64_t id,
		const char *what, int *rc_out, struct hp_error *err);

/* Bind a string, or NULL when s is NULL. */
int hp__bind_text(sqlite3_stmt *st, int i, const char *s);
/* Bind a double, or NULL when it is 0 (times: none) or not finite. */
int hp__bind_time(sqlite3_stmt *st, int i, double t);
/* Bind a double, or NULL when it is NaN. */
int hp__bind_num(sqlite3_stmt *st, int i, double x);

/* A column as a heap string (NULL for SQL NULL): 0 or HP_ENOMEM. */
int hp__col_dup(sqlite3_stmt *st, int i, char **out);
/* A column as text ("" for NULL), valid until the next step. */
const char *hp__col_text(sqlite3_stmt *st, int i);
/* A column as a double: 0 for NULL (times). */
double hp__col_time(sqlite3_stmt *st, int i);
/* A column as a double: NaN for NULL. */
double hp__col_num(sqlite3_stmt *st, int i);

/* Wall clock, Unix seconds. */
double hp__store_now(void);

/*
 * Migrate an open database to version upto (0 < upto <=
 * HP_STORE_SCHEMA_VERSION), each step in its own IMMEDIATE transaction;
 * HP_EUNSUPP when it is already newer than the code.  Tests use it to
 * make databases of older versions.
 */
int hp__store_migrate(sqlite3 *db, const char *path, int upto,
		      struct hp_error *err);

/* The job state and backend as stored (their names) and back. */
const char *hp__state_sql(enum hp_job_state s);
/* hp_store_job_list()'s statement (static text): by_state filters with
 * `state IN (?4, ..., ?9)` so that the jobs_state index serves it. */
const char *hp__job_list_sql(bool newest_first, bool by_state);
int hp__state_from_sql(const char *s, enum hp_job_state *out);

/* Read the job at the statement's current row (the columns of
 * HP__JOB_COLS, from column 0) into out. */
#define HP__JOB_COLS                                                           \
	"j.id, j.owner, j.name, j.state, j.reason, j.description, "            \
	"j.model_id, j.data, j.settings, j.backend, j.plan, j.deadline_at_s, " \
	"j.predicted_start_at_s, j.predicted_end_at_s, j.created_s, "          \
	"j.updated_s, j.started_s, j.ended_s, j.cancel_requested, "            \
	"j.deploy_id, j.deploy_dir, "                                          \
	"(SELECT count(*) FROM allocations a WHERE a.job_id = j.id AND "       \
	"a.released_s IS NULL)"
int hp__job_read(sqlite3_stmt *st, struct hp_store_job *out,
		 struct hp_error *err);

/* Check a name: 1-63 bytes without control characters. */
bool hp__store_name_ok(const char *s);

#endif
