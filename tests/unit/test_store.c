/*
 * test_store.c - lib/store, each test on its own database file under
 * /tmp: migrations from an empty file and from every older version (the
 * data kept, the schema the same as a fresh one), a newer or foreign
 * database refused; the pool built from the store against the pool
 * file's own parse; each node's network transport kept (and 'auto' for
 * rows written before it was stored, a name it does not know refused on
 * read); nodes updated and removed only where no device held would go;
 * allocation all or none, and the database's own refusals (raw SQL: a
 * second live allocation of a device, a job leaving a terminal state);
 * the state machine, every pair of states; 8 threads racing for the
 * same devices (a device is never held twice, every success recorded); a
 * child SIGKILLed mid-transaction and mid-burst
 * (every committed job there after, the invariants hold after recovery);
 * tokens (never stored as text, hashes checked against the FIPS vectors,
 * revoked at once); models, measurements (a profiler CSV in and back out
 * byte for byte), datasets, estimator versions, metrics.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hetpool/device.h"
#include "hetpool/pool.h"
#include "hetpool/store.h"
#include "store/store_int.h"
#include "test.h"
#include "util/sha256.h"

/* ---- helpers */

/* A fresh folder and database path for one test (each test is its own
 * process: the folder is removed by rm_db() at the end). */
static const char *g_dir;
static char g_db[320];

static const char *tmp_db(void)
{
	g_dir = hp_test_tmpdir("hp-store-test.");
	snprintf(g_db, sizeof(g_db), "%s/store.db", g_dir);
	return g_db;
}

static void rm_db(void)
{
	char p[400];
	const char *sfx[] = {"", "-wal", "-shm", "-journal"};

	for (size_t i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++) {
		snprintf(p, sizeof(p), "%s%s", g_db, sfx[i]);
		unlink(p);
	}
	rmdir(g_dir);
}

static struct hp_store *open_ok(const char *path)
{
	struct hp_error err = {0};
	struct hp_store *s = hp_store_open(path, NULL, &err);

	if (!s)
		HP_FAIL("open '%s': %s", path, err.msg);
	return s;
}

/* One integer from SQL run on a connection of its own (an independent
 * look at the file). */
/* The first column of sql's first row on the connection db (-1: none). */
static long long q1_on(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st = NULL;
	long long v = -1;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		HP_FAIL("prepare '%s': %s", sql, sqlite3_errmsg(db));
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

static long long q1(const char *path, const char *sql)
{
	sqlite3 *db = NULL;
	long long v;

	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) !=
	    SQLITE_OK)
		HP_FAIL("sqlite open %s", path);
	v = q1_on(db, sql);
	sqlite3_close(db);
	return v;
}

/* Run SQL on a connection of its own; SQLite's result code. */
static int raw_exec(const char *path, const char *sql, bool fk)
{
	sqlite3 *db = NULL;
	int rc;

	if (sqlite3_open_v2(path, &db,
			    SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
			    NULL) != SQLITE_OK)
		HP_FAIL("sqlite open %s", path);
	sqlite3_busy_timeout(db, 10000);
	sqlite3_exec(
	    db, fk ? "PRAGMA foreign_keys = ON" : "PRAGMA foreign_keys = OFF",
	    NULL, NULL, NULL);
	rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
	sqlite3_close(db);
	return rc;
}

static struct hp_pool *pool_of(const char *json)
{
	struct hp_error err = {0};
	struct hp_pool *p = hp_pool_parse(json, strlen(json), NULL, NULL, &err);

	if (!p)
		HP_FAIL("pool: %s", err.msg);
	return p;
}

#define NODE_JSON(name, devs)                                                  \
	"{\"name\": \"" name "\", \"devices\": [" devs                         \
	"], \"cpu_cores\": 16, "                                               \
	"\"memory_gb\": 64, \"intra_bw_gbps\": 300, \"net_bw_gbps\": 100, "    \
	"\"net_latency_us\": 5, \"base_power_w\": 300}"

/* Two nodes: n1 with 4 v100 and 1 cpu, n2 with 4 t4. */
static const char two_nodes[] = "{\"nodes\": [" NODE_JSON(
    "n1", "{\"type\": \"v100\", \"count\": 4}, {\"type\": \"cpu\", "
	  "\"count\": 1}") ", " NODE_JSON("n2", "{\"type\": \"t4\", "
						"\"count\": 4}") "]}";

static void load_pool(struct hp_store *s, const char *json)
{
	struct hp_pool *p = pool_of(json);
	struct hp_error err = {0};

	if (hp_store_pool_load(s, p, false, &err))
		HP_FAIL("pool load: %s", err.msg);
	hp_pool_free(p);
}

static int64_t add_job(struct hp_store *s, int64_t owner)
{
	struct hp_store_job_new in = {
	    .owner = owner,
	    .description = "{\"spec\": {}, \"samples\": 100}",
	    .data = "synthetic",
	};
	struct hp_error err = {0};
	int64_t id = 0;

	if (hp_store_job_add(s, &in, &id, &err))
		HP_FAIL("job add: %s", err.msg);
	ASSERT(id > 0);
	return id;
}

static void start_job(struct hp_store *s, int64_t job, const char *node,
		      const char *type, int count)
{
	struct hp_store_devreq r = {node, type, count, -1};
	struct hp_error err = {0};

	if (hp_store_job_start(s, job, &r, 1, NULL, NULL, NULL, &err))
		HP_FAIL("start job %lld: %s", (long long)job, err.msg);
}

static void transition_ok(struct hp_store *s, int64_t job, enum hp_job_state to)
{
	struct hp_error err = {0};

	if (hp_store_job_transition(s, job, to, NULL, &err))
		HP_FAIL("job %lld -> %s: %s", (long long)job,
			hp_job_state_name(to), err.msg);
}

static int free_of(struct hp_store *s, const char *type)
{
	struct hp_error err = {0};
	struct hp_pool *p = hp_store_pool(s, &err);
	long n;

	if (!p)
		HP_FAIL("pool: %s", err.msg);
	n = hp_pool_free_of(p, type);
	hp_pool_free(p);
	return (int)n;
}

/* The invariants every database must keep, read with plain SQL: no device
 * held twice, nothing held by a job that has ended or does not exist, no
 * held allocation without its device, and SQLite's own checks. */
static void check_invariants(const char *path)
{
	ASSERT_EQ_INT(q1(path, "SELECT count(*) FROM (SELECT device_id FROM "
			       "allocations WHERE released_s IS NULL GROUP BY "
			       "device_id HAVING count(*) > 1)"),
		      0);
	ASSERT_EQ_INT(
	    q1(path, "SELECT count(*) FROM allocations a WHERE released_s IS "
		     "NULL AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = "
		     "a.job_id AND j.state IN ('queued', 'starting', "
		     "'running'))"),
	    0);
	ASSERT_EQ_INT(q1(path, "SELECT count(*) FROM allocations WHERE "
			       "released_s IS NULL AND device_id IS NULL"),
		      0);
	ASSERT_EQ_INT(q1(path, "SELECT count(*) FROM pragma_foreign_key_check"),
		      0);
	ASSERT_EQ_INT(q1(path, "SELECT count(*) FROM pragma_integrity_check "
			       "WHERE integrity_check <> 'ok'"),
		      0);
}

/* ---- opening and migrations */

HP_TEST(store_open_creates_the_schema_with_wal_and_foreign_keys)
{
	const char *path = tmp_db();
	struct hp_store *s = open_ok(path);
	struct hp_error err = {0};

	ASSERT_EQ_INT(hp_store_file_version(path, &err),
		      HP_STORE_SCHEMA_VERSION);
	ASSERT_EQ_INT(q1(path, "PRAGMA user_version"), HP_STORE_SCHEMA_VERSION);
	ASSERT_EQ_INT(q1(path, "SELECT count(*) FROM schema_migrations"),
		      HP_STORE_SCHEMA_VERSION);
	ASSERT_EQ_INT(q1(path, "SELECT max(version) FROM schema_migrations"),
		      HP_STORE_SCHEMA_VERSION);
	ASSERT_EQ_INT(q1(path, "PRAGMA application_id"), HP__STORE_APP_ID);
	ASSERT_STR_EQ(hp_store_path(s), path);
	{
		sqlite3 *db;
		sqlite3_stmt *st;

		ASSERT(sqlite3_open(path, &db) == SQLITE_OK);
		ASSERT(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st,
					  NULL) == SQLITE_OK);
		ASSERT(sqlite3_step(st) == SQLITE_ROW);
		ASSERT_STR_EQ((const char *)sqlite3_column_text(st, 0), "wal");
		sqlite3_finalize(st);
		sqlite3_close(db);
	}
	/* Foreign keys are on in the store's connections: a job of a
	 * missing owner is refused. */
	{
		struct hp_store_job_new in = {
		    .owner = 77, .description = "{}", .data = "synthetic"};
		ASSERT_EQ_INT(hp_store_job_add(s, &in, NULL, &err), HP_ENOENT);
	}
	hp_store_close(s);
	/* Opening again changes nothing. */
	s = open_ok(path);
	ASSERT_EQ_INT(q1(path, "SELECT count(*) FROM schema_migrations"),
		      HP_STORE_SCHEMA_VERSION);
	hp_store_close(s);
	rm_db();
}

/* The schema as SQLite holds it, one string, sorted by name. */
static char *schema_text(const char *path)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	struct hp_buf b;

	hp_buf_init(&b, 1 << 20);
	ASSERT(sqlite3_open(path, &db) == SQLITE_OK);
	ASSERT(sqlite3_prepare_v2(db,
				  "SELECT type, name, sql FROM sqlite_master "
				  "ORDER BY type, name",
				  -1, &st, NULL) == SQLITE_OK);
	while (sqlite3_step(st) == SQLITE_ROW)
		hp_buf_printf(&b, "%s %s %s\n", sqlite3_column_text(st, 0),
			      sqlite3_column_text(st, 1),
			      sqlite3_column_text(st, 2)
				  ? (const char *)sqlite3_column_text(st, 2)
				  : "");
	sqlite3_finalize(st);
	sqlite3_close(db);
	return hp_buf_detach(&b);
}

/* Rows valid at schema version v, written with plain SQL as that
 * version's code would have. */
static void fill_version(sqlite3 *db, int v)
{
	char *msg = NULL;
	char sql[1024];
	char hash[65];

	if (v < 1)
		return;
	hp__sha256_hex_of("old-token-0123456789", 20, hash);
	snprintf(
	    sql, sizeof(sql),
	    "INSERT INTO tokens (name, role, hash, created_s) VALUES "
	    "('old', 'user', '%s', 1);"
	    "INSERT INTO nodes (name, cpu_cores, memory_gb, intra_bw_gbps, "
	    "net_bw_gbps, net_latency_us, base_power_w, created_s, "
	    "updated_s) VALUES ('old-node', 8, 32, 100, 10, 5, 100, 1, 1);"
	    "INSERT INTO devices (node_id, type, idx, kind_pos) VALUES "
	    "(1, 'v100', 0, 0), (1, 'v100', 1, 0);"
	    "INSERT INTO jobs (owner, state, description, data, backend, "
	    "created_s, updated_s) VALUES (1, 'queued', '{}', "
	    "'synthetic', 'local', 1, 1);"
	    "INSERT INTO allocations (job_id, device_id, node, type, idx, "
	    "allocated_s) VALUES (1, 1, 'old-node', 'v100', 0, 1);",
	    hash);
	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
		HP_FAIL("fill v1: %s", msg);
	if (v >= 2 &&
	    sqlite3_exec(db,
			 "INSERT INTO models (name, kind, sha256, size, "
			 "created_s) VALUES ('m', 'spec', "
			 "'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb41"
			 "0ff61f20015ad', 3, 1);"
			 "INSERT INTO model_data VALUES (1, 'abc');"
			 "UPDATE jobs SET model_id = 1;"
			 "INSERT INTO datasets (name, path, created_s) VALUES "
			 "('d', '/data/d', 1);",
			 NULL, NULL, &msg) != SQLITE_OK)
		HP_FAIL("fill v2: %s", msg);
	if (v >= 3 &&
	    sqlite3_exec(db,
			 "INSERT INTO measurements (kind, job_id, device_type, "
			 "ndevices, batch, step_time_s, config, created_s) "
			 "VALUES ('job', 1, 'v100', 1, 32, 0.5, '{}', 1);"
			 "INSERT INTO estimators (body, created_s) VALUES "
			 "('{\"old\": 1}', 1);",
			 NULL, NULL, &msg) != SQLITE_OK)
		HP_FAIL("fill v3: %s", msg);
}

static int migrated_said;

static void count_migrated(enum hp_log_level level, const char *msg, void *ud)
{
	(void)level;
	(void)ud;
	if (strstr(msg, "migrated to schema version"))
		migrated_said++;
}

HP_TEST(store_migrates_from_empty_and_from_each_older_version)
{
	const char *path = tmp_db();
	char *fresh;

	/* The schema a new file gets. */
	hp_store_close(open_ok(path));
	fresh = schema_text(path);
	rm_db();

	for (int v = 0; v < HP_STORE_SCHEMA_VERSION; v++) {
		struct hp_error err = {0};
		struct hp_store_token tok;
		struct hp_store_node node;
		struct hp_store_job job;
		struct hp_store *s;
		sqlite3 *db;
		char *now;

		path = tmp_db();
		ASSERT(sqlite3_open(path, &db) == SQLITE_OK);
		if (v > 0 && hp__store_migrate(db, path, v, &err))
			HP_FAIL("migrate to %d: %s", v, err.msg);
		ASSERT_EQ_INT(q1(path, "PRAGMA user_version"), v);
		fill_version(db, v);
		sqlite3_close(db);

		migrated_said = 0;
		hp_log_set(count_migrated, NULL, HP_LOG_INFO);
		s = open_ok(path);
		hp_log_set(NULL, NULL, HP_LOG_WARN);
		/* an older file's upgrade is said, once a version; a new
		 * file's making is not */
		ASSERT_EQ_INT(migrated_said,
			      v >= 1 ? HP_STORE_SCHEMA_VERSION - v : 0);
		ASSERT_EQ_INT(hp_store_file_version(path, &err),
			      HP_STORE_SCHEMA_VERSION);
		now = schema_text(path);
		ASSERT_STR_EQ(now, fresh);
		free(now);
		ASSERT_EQ_INT(q1(path, "SELECT group_concat(version) FROM "
				       "(SELECT version FROM schema_migrations "
				       "ORDER BY version)") > 0,
			      1);
		ASSERT_EQ_INT(
		    q1(path, "SELECT count(*) FROM schema_migrations"),
		    HP_STORE_SCHEMA_VERSION);
		if (v >= 1) {
			/* What the old version wrote reads through the API. */
			if (hp_store_job_get(s, 1, &job, &err))
				HP_FAIL("v%d job: %s", v, err.msg);
			ASSERT_EQ_INT(job.state, HP_JOB_QUEUED);
			ASSERT_EQ_INT(job.ndevices, 1);
			ASSERT_EQ_INT(job.owner, 1);
			ASSERT_EQ_INT(job.model_id, v >= 2 ? 1 : 0);
			hp_store_job_release(&job);
			if (hp_store_node_get(s, "old-node", &node, &err))
				HP_FAIL("v%d node: %s", v, err.msg);
			ASSERT_EQ_INT(node.ndevices, 2);
			ASSERT_EQ_INT(node.devices[0].state, HP_DEV_ALLOCATED);
			ASSERT_EQ_INT(node.devices[1].state, HP_DEV_FREE);
			/* Version 5 gave the rows there 'auto'. */
			ASSERT_EQ_INT(node.pool.net_transport, HP_NET_AUTO);
			hp_store_node_release(&node);
			ASSERT_EQ_INT(q1(path, "SELECT count(*) FROM nodes "
					       "WHERE net_transport = 'auto'"),
				      1);
			if (hp_store_token_verify(s, "old-token-0123456789",
						  &tok, &err))
				HP_FAIL("v%d token: %s", v, err.msg);
			ASSERT_EQ_INT(tok.role, HP_ROLE_USER);
			hp_store_token_release(&tok);
			/* The triggers of version 1 hold after the
			 * migration: the job ends, its device is free. */
			ASSERT_EQ_INT(
			    hp_store_job_cancel(s, 1, 0, "old", NULL, &err), 0);
			ASSERT_EQ_INT(free_of(s, "v100"), 2);
		}
		if (v >= 2) {
			struct hp_store_model m;
			ASSERT_EQ_INT(hp_store_model_get(s, 1, true, &m, &err),
				      0);
			ASSERT_EQ_INT(m.size, 3);
			ASSERT(!memcmp(m.data, "abc", 3));
			hp_store_model_release(&m);
		}
		if (v >= 3) {
			struct hp_store_measurement *ml;
			struct hp_store_estimator est;
			int nm;
			ASSERT_EQ_INT(hp_store_measurement_list(
					  s, HP_MEAS_JOB, 0, 0, &ml, &nm, &err),
				      0);
			ASSERT_EQ_INT(nm, 1);
			ASSERT(ml[0].step_time_s == 0.5);
			ASSERT(isnan(ml[0].energy_per_step_j));
			hp_store_measurement_list_free(ml, nm);
			ASSERT_EQ_INT(hp_store_estimator_current(s, &est, &err),
				      0);
			ASSERT_STR_EQ(est.body, "{\"old\": 1}");
			hp_store_estimator_release(&est);
		}
		/* And the newest tables work. */
		{
			struct hp_store_measurement me = {
			    .kind = HP_MEAS_PROFILE,
			    .device_type = "cpu",
			    .ndevices = 1,
			    .batch = 8,
			    .step_time_s = 0.1,
			    .predicted_step_time_s = NAN,
			    .energy_per_step_j = NAN,
			    .power_w = NAN,
			    .config = "{}"};
			ASSERT_EQ_INT(
			    hp_store_measurement_add(s, &me, NULL, &err), 0);
		}
		check_invariants(path);
		hp_store_close(s);
		rm_db();
	}
	free(fresh);
}

HP_TEST(store_refuses_a_newer_database_and_leaves_it_alone)
{
	const char *path = tmp_db();
	struct hp_store_options ro = {.read_only = true};
	struct hp_error err = {0};
	char want[80];

	hp_store_close(open_ok(path));
	ASSERT_EQ_INT(raw_exec(path, "PRAGMA user_version = 99", true),
		      SQLITE_OK);
	ASSERT(hp_store_open(path, NULL, &err) == NULL);
	ASSERT_EQ_INT(err.code, HP_EUNSUPP);
	ASSERT(strstr(err.msg, "schema version 99"));
	snprintf(want, sizeof(want), "versions up to %d",
		 HP_STORE_SCHEMA_VERSION);
	ASSERT(strstr(err.msg, want));
	ASSERT(strstr(err.msg, path));
	ASSERT_EQ_INT(q1(path, "PRAGMA user_version"), 99);
	ASSERT_EQ_INT(q1(path, "SELECT count(*) FROM schema_migrations"),
		      HP_STORE_SCHEMA_VERSION);
	memset(&err, 0, sizeof(err));
	ASSERT(hp_store_open(path, &ro, &err) == NULL);
	ASSERT_EQ_INT(err.code, HP_EUNSUPP);
	ASSERT_EQ_INT(hp_store_file_version(path, &err), 99);
	rm_db();
}

HP_TEST(store_refuses_a_file_that_is_not_a_store)
{
	const char *path = tmp_db();
	struct hp_error err = {0};
	FILE *f;

	/* Another program's database. */
	ASSERT_EQ_INT(raw_exec(path, "CREATE TABLE t (x)", true), SQLITE_OK);
	ASSERT(hp_store_open(path, NULL, &err) == NULL);
	ASSERT_EQ_INT(err.code, HP_EINVAL);
	ASSERT(strstr(err.msg, "not a hetpool store"));
	ASSERT_EQ_INT(q1(path, "SELECT count(*) FROM sqlite_master"), 1);
	rm_db();
	/* Not a database at all. */
	path = tmp_db();
	f = fopen(path, "w");
	ASSERT(f);
	for (int i = 0; i < 200; i++)
		fputs("this is not a database file\n", f);
	fclose(f);
	memset(&err, 0, sizeof(err));
	ASSERT(hp_store_open(path, NULL, &err) == NULL);
	ASSERT_EQ_INT(err.code, HP_EIO);
	ASSERT(strstr(err.msg, path));
	/* And no path. */
	ASSERT(hp_store_open("", NULL, &err) == NULL);
	ASSERT_EQ_INT(err.code, HP_EINVAL);
	rm_db();
}

/* The file's SHA-256 (hex). */
static void file_sha(const char *path, char hex[65])
{
	struct hp_error err = {0};
	char *text = NULL;
	size_t len = 0;

	if (hp_read_file(path, 1 << 26, &text, &len, &err))
		HP_FAIL("read '%s': %s", path, err.msg);
	hp__sha256_hex_of(text, len, hex);
	free(text);
}

/* docs/store.md: a newer or foreign file is refused before anything
 * writes to it: a rollback-journal file is not switched to WAL. */
HP_TEST(store_refusal_leaves_a_rollback_journal_file_byte_for_byte)
{
	const char *path = tmp_db();
	struct hp_error err = {0};
	char before[65], after[65];

	hp_store_close(open_ok(path));
	ASSERT_EQ_INT(raw_exec(path,
			       "PRAGMA journal_mode = DELETE;"
			       "PRAGMA user_version = 99",
			       true),
		      SQLITE_OK);
	file_sha(path, before);
	ASSERT(hp_store_open(path, NULL, &err) == NULL);
	ASSERT_EQ_INT(err.code, HP_EUNSUPP);
	file_sha(path, after);
	ASSERT_STR_EQ(after, before);
	rm_db();
	/* another program's file, in rollback mode (SQLite's default) */
	path = tmp_db();
	ASSERT_EQ_INT(raw_exec(path, "CREATE TABLE t (x)", true), SQLITE_OK);
	file_sha(path, before);
	memset(&err, 0, sizeof(err));
	ASSERT(hp_store_open(path, NULL, &err) == NULL);
	ASSERT_EQ_INT(err.code, HP_EINVAL);
	file_sha(path, after);
	ASSERT_STR_EQ(after, before);
	rm_db();
}

/* The scheduler lists the started jobs at every poll: filtered by state,
 * the list reads the jobs_state index, never the whole table. */
HP_TEST(store_job_list_by_state_uses_the_state_index)
{
	const char *path = tmp_db();

	hp_store_close(open_ok(path));
	for (int newest = 0; newest < 2; newest++) {
		char sql[2048], plan[1024] = "";
		sqlite3 *db = NULL;
		sqlite3_stmt *st = NULL;

		snprintf(sql, sizeof(sql), "EXPLAIN QUERY PLAN %s",
			 hp__job_list_sql(newest, true));
		ASSERT(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) ==
		       SQLITE_OK);
		ASSERT(sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK);
		while (sqlite3_step(st) == SQLITE_ROW) {
			size_t l = strlen(plan);
			snprintf(plan + l, sizeof(plan) - l, "%s; ",
				 (const char *)sqlite3_column_text(st, 3));
		}
		sqlite3_finalize(st);
		sqlite3_close(db);
		if (!strstr(plan, "USING INDEX jobs_state") &&
		    !strstr(plan, "USING COVERING INDEX jobs_state"))
			HP_FAIL("order %d: plan '%s' does not use jobs_state",
				newest, plan);
	}
	rm_db();
}

/* ---- nodes and the pool */

static void pools_equal(const struct hp_pool *a, const struct hp_pool *b)
{
	ASSERT_EQ_INT(a->n, b->n);
	for (int i = 0; i < a->n; i++) {
		const struct hp_pool_node *x = &a->nodes[i], *y = &b->nodes[i];

		ASSERT_STR_EQ(x->name, y->name);
		ASSERT_EQ_INT(x->ndevs, y->ndevs);
		for (int d = 0; d < x->ndevs; d++) {
			ASSERT_STR_EQ(x->devs[d].type, y->devs[d].type);
			ASSERT_EQ_INT(x->devs[d].count, y->devs[d].count);
			ASSERT_EQ_INT(x->devs[d].free, y->devs[d].free);
		}
		ASSERT_EQ_INT(x->cpu_cores, y->cpu_cores);
		ASSERT(x->memory_gb == y->memory_gb);
		ASSERT(x->intra_bw_gbps == y->intra_bw_gbps);
		ASSERT(x->net_bw_gbps == y->net_bw_gbps);
		ASSERT(x->net_latency_us == y->net_latency_us);
		ASSERT(x->base_power_w == y->base_power_w);
		ASSERT_EQ_INT(x->net_transport, y->net_transport);
	}
}

HP_TEST(store_pool_equals_the_pool_file_and_follows_allocations)
{
	const char *path = tmp_db();
	struct hp_error err = {0};
	struct hp_catalog *cat =
	    hp_catalog_load(hp_test_path("data/devices.csv"), &err);
	struct hp_pool *file, *mem;
	struct hp_store *s;
	struct hp_store_metrics m;
	int64_t job;
	long total = 0, free0;

	if (!cat)
		HP_FAIL("catalog: %s", err.msg);
	file = hp_pool_load(hp_test_path("data/pools/sample.json"), cat, &err);
	if (!file)
		HP_FAIL("sample pool: %s", err.msg);
	s = open_ok(path);
	/* An empty store is an empty pool. */
	mem = hp_store_pool(s, &err);
	ASSERT(mem && mem->n == 0);
	hp_pool_free(mem);

	ASSERT_EQ_INT(hp_store_pool_load(s, file, false, &err), 0);
	mem = hp_store_pool(s, &err);
	if (!mem)
		HP_FAIL("pool: %s", err.msg);
	pools_equal(mem, file);
	hp_pool_free(mem);
	/* Loading it again changes nothing (the sample has nodes with
	 * devices reserved outside hetpool: free below count). */
	ASSERT_EQ_INT(hp_store_pool_load(s, file, true, &err), 0);
	mem = hp_store_pool(s, &err);
	pools_equal(mem, file);
	hp_pool_free(mem);
	ASSERT_EQ_INT(hp_store_metrics(s, &m, &err), 0);
	for (int i = 0; i < m.ntypes; i++) {
		ASSERT_EQ_INT(m.types[i].total,
			      m.types[i].free + m.types[i].allocated +
				  m.types[i].drained + m.types[i].reserved);
		ASSERT_EQ_INT(m.types[i].free,
			      hp_pool_free_of(file, m.types[i].type));
		total += m.types[i].total;
	}
	ASSERT(total > 0);
	ASSERT_EQ_INT(m.nodes, file->n);
	hp_store_metrics_release(&m);

	/* Allocations and drained nodes take devices out of the pool. */
	free0 = hp_pool_free_of(file, file->nodes[0].devs[0].type);
	ASSERT(free0 >= 3);
	job = add_job(s, 0);
	start_job(s, job, file->nodes[0].name, file->nodes[0].devs[0].type, 3);
	ASSERT_EQ_INT(free_of(s, file->nodes[0].devs[0].type), free0 - 3);
	ASSERT_EQ_INT(hp_store_node_drain(s, file->nodes[0].name, true, &err),
		      0);
	mem = hp_store_pool(s, &err);
	ASSERT_STR_EQ(mem->nodes[0].name, file->nodes[0].name);
	for (int d = 0; d < mem->nodes[0].ndevs; d++) {
		ASSERT_EQ_INT(mem->nodes[0].devs[d].free, 0);
		ASSERT_EQ_INT(mem->nodes[0].devs[d].count,
			      file->nodes[0].devs[d].count);
	}
	hp_pool_free(mem);
	ASSERT_EQ_INT(hp_store_node_drain(s, file->nodes[0].name, false, &err),
		      0);
	/* The pool is kept between calls: a change made past this handle
	 * (another process, plain SQL) is seen all the same. */
	ASSERT_EQ_INT(free_of(s, file->nodes[0].devs[0].type), free0 - 3);
	ASSERT_EQ_INT(raw_exec(path, "UPDATE nodes SET drained = 1", true),
		      SQLITE_OK);
	ASSERT_EQ_INT(free_of(s, file->nodes[0].devs[0].type), 0);
	ASSERT_EQ_INT(raw_exec(path, "UPDATE nodes SET drained = 0", true),
		      SQLITE_OK);
	ASSERT_EQ_INT(free_of(s, file->nodes[0].devs[0].type), free0 - 3);
	transition_ok(s, job, HP_JOB_RUNNING);
	transition_ok(s, job, HP_JOB_SUCCEEDED);
	mem = hp_store_pool(s, &err);
	pools_equal(mem, file);
	hp_pool_free(mem);
	check_invariants(path);
	hp_store_close(s);
	hp_pool_free(file);
	hp_catalog_free(cat);
	rm_db();
}

/* Each transport goes in and comes back out of every read (one node, the
 * list, the pool); an update changes it; a pool file's is kept; a value
 * outside the enum is refused on write, and a name the code does not know,
 * written past it, is an error on read (HP_EIO naming the node), not a
 * guess. */
HP_TEST(store_node_net_transport_round_trips)
{
	static const char *const names[] = {"auto", "tcp", "socket", "rdma"};
	const char *path = tmp_db();
	struct hp_store *s = open_ok(path);
	struct hp_error err = {0};
	struct hp_pool *p = pool_of(two_nodes), *mem;
	struct hp_pool_node n1 = p->nodes[0];
	struct hp_store_node got, *list;
	int n;

	for (int t = HP_NET_AUTO; t <= HP_NET_RDMA; t++) {
		char sql[128];

		n1.net_transport = (enum hp_net_transport)t;
		ASSERT_EQ_INT(
		    hp_store_node_put(s, &n1, NULL, false, NULL, &err), 0);
		snprintf(sql, sizeof(sql),
			 "SELECT count(*) FROM nodes WHERE name = 'n1' AND "
			 "net_transport = '%s'",
			 names[t]);
		ASSERT_EQ_INT(q1(path, sql), 1);
		ASSERT_EQ_INT(hp_store_node_get(s, "n1", &got, &err), 0);
		ASSERT_EQ_INT(got.pool.net_transport, t);
		hp_store_node_release(&got);
		ASSERT_EQ_INT(hp_store_node_list(s, &list, &n, &err), 0);
		ASSERT_EQ_INT(n, 1);
		ASSERT_EQ_INT(list[0].pool.net_transport, t);
		hp_store_node_list_free(list, n);
		mem = hp_store_pool(s, &err);
		if (!mem)
			HP_FAIL("pool: %s", err.msg);
		ASSERT_EQ_INT(mem->n, 1);
		ASSERT_EQ_INT(mem->nodes[0].net_transport, t);
		hp_pool_free(mem);
	}
	/* The self node too (its own query). */
	ASSERT_EQ_INT(hp_store_node_put(s, &n1, "{}", true, NULL, &err), 0);
	ASSERT_EQ_INT(hp_store_node_self(s, &got, &err), 0);
	ASSERT_EQ_INT(got.pool.net_transport, HP_NET_RDMA);
	hp_store_node_release(&got);
	/* A pool file's transports are kept, and loading it again over the
	 * registered nodes updates them. */
	{
		static const char text[] =
		    "{\"nodes\": [{\"name\": \"n1\", \"devices\": [{\"type\": "
		    "\"v100\", \"count\": 4}], \"cpu_cores\": 16, "
		    "\"memory_gb\": 64, \"intra_bw_gbps\": 300, "
		    "\"net_bw_gbps\": 100, \"net_latency_us\": 5, "
		    "\"base_power_w\": 300}, "
		    "{\"name\": \"n3\", \"devices\": [{\"type\": \"cpu\", "
		    "\"count\": 1}], \"cpu_cores\": 4, \"memory_gb\": 8, "
		    "\"intra_bw_gbps\": 10, \"net_bw_gbps\": 10, "
		    "\"net_latency_us\": 50, \"base_power_w\": 0, "
		    "\"net_transport\": \"tcp\"}]}";
		struct hp_pool *f = pool_of(text);

		ASSERT_EQ_INT(f->nodes[0].net_transport, HP_NET_AUTO);
		ASSERT_EQ_INT(hp_store_pool_load(s, f, true, &err), 0);
		mem = hp_store_pool(s, &err);
		if (!mem)
			HP_FAIL("pool: %s", err.msg);
		pools_equal(mem, f);
		hp_pool_free(mem);
		hp_pool_free(f);
	}
	/* Outside the enum: refused, nothing written. */
	n1.net_transport = (enum hp_net_transport)(HP_NET_RDMA + 1);
	ASSERT_EQ_INT(hp_store_node_put(s, &n1, NULL, false, NULL, &err),
		      HP_EINVAL);
	ASSERT(strstr(err.msg, "node 'n1': net_transport 4"));
	n1.net_transport = (enum hp_net_transport) - 1;
	ASSERT_EQ_INT(hp_store_node_put(s, &n1, NULL, false, NULL, &err),
		      HP_EINVAL);
	{
		struct hp_pool one = {.nodes = &n1, .n = 1, .path = ""};
		ASSERT_EQ_INT(hp_store_pool_load(s, &one, false, &err),
			      HP_EINVAL);
	}
	ASSERT_EQ_INT(q1(path, "SELECT count(*) FROM nodes WHERE name = 'n1' "
			       "AND net_transport = 'auto'"),
		      1);
	/* A name this code does not know (a newer hetpool's, or plain
	 * SQL's) fails each read by name. */
	ASSERT_EQ_INT(raw_exec(path,
			       "UPDATE nodes SET net_transport = 'ib\n' "
			       "WHERE name = 'n3'",
			       true),
		      SQLITE_OK);
	memset(&err, 0, sizeof(err));
	ASSERT_EQ_INT(hp_store_node_get(s, "n3", &got, &err), HP_EIO);
	ASSERT_STR_EQ(err.msg, "node 'n3': net_transport 'ib\\n' unknown");
	ASSERT(got.pool.name == NULL);
	ASSERT_EQ_INT(hp_store_node_list(s, &list, &n, &err), HP_EIO);
	ASSERT(list == NULL && n == 0);
	ASSERT(strstr(err.msg, "node 'n3'"));
	memset(&err, 0, sizeof(err));
	ASSERT(hp_store_pool(s, &err) == NULL);
	ASSERT_EQ_INT(err.code, HP_EIO);
	ASSERT_STR_EQ(err.msg, "node 'n3': net_transport 'ib\\n' unknown");
	/* The other node still reads; a known name makes n3 read again. */
	ASSERT_EQ_INT(hp_store_node_get(s, "n1", &got, &err), 0);
	hp_store_node_release(&got);
	ASSERT_EQ_INT(raw_exec(path,
			       "UPDATE nodes SET net_transport = 'rdma' "
			       "WHERE name = 'n3'",
			       true),
		      SQLITE_OK);
	ASSERT_EQ_INT(hp_store_node_get(s, "n3", &got, &err), 0);
	ASSERT_EQ_INT(got.pool.net_transport, HP_NET_RDMA);
	hp_store_node_release(&got);
	check_invariants(path);
	hp_store_close(s);
	hp_pool_free(p);
	rm_db();
}

HP_TEST(store_node_update_and_remove_keep_held_devices)
{
	const char *path = tmp_db();
	struct hp_store *s = open_ok(path);
	struct hp_error err = {0};
	struct hp_pool *p = pool_of(two_nodes);
	struct hp_pool_node n1 = p->nodes[0];
	struct hp_pool_dev devs[2];
	struct hp_store_node got;
	struct hp_store_alloc *a;
	int64_t id1 = 0, id2 = 0, job;
	int na;

	ASSERT_EQ_INT(hp_store_node_put(s, &p->nodes[0], "{\"host\": 1}", true,
					&id1, &err),
		      0);
	ASSERT_EQ_INT(
	    hp_store_node_put(s, &p->nodes[1], NULL, false, &id2, &err), 0);
	ASSERT(id1 > 0 && id2 > id1);
	ASSERT_EQ_INT(hp_store_node_self(s, &got, &err), 0);
	ASSERT_STR_EQ(got.pool.name, "n1");
	ASSERT_STR_EQ(got.info, "{\"host\": 1}");
	ASSERT_EQ_INT(got.ndevices, 5);
	ASSERT_STR_EQ(got.devices[0].type, "v100");
	ASSERT_EQ_INT(got.devices[3].index, 3);
	ASSERT_STR_EQ(got.devices[4].type, "cpu");
	hp_store_node_release(&got);

	/* Job holds v100 1 and 2 (asked by index). */
	job = add_job(s, 0);
	{
		struct hp_store_devreq r[2] = {{"n1", "v100", 1, 2},
					       {"n1", "v100", 1, 1}};
		ASSERT_EQ_INT(hp_store_job_start(s, job, r, 2, "{\"p\": 1}", &a,
						 &na, &err),
			      0);
		ASSERT_EQ_INT(na, 2);
		ASSERT_EQ_INT(a[0].index, 2);
		ASSERT_EQ_INT(a[1].index, 1);
		hp_store_alloc_list_free(a, na);
	}
	/* Shrinking below a held device is refused, and changes nothing. */
	memcpy(devs, n1.devs, sizeof(devs));
	n1.devs = devs;
	devs[0].count = 2;
	devs[0].free = 2;
	ASSERT_EQ_INT(hp_store_node_put(s, &n1, NULL, false, NULL, &err),
		      HP_EBUSY);
	ASSERT(strstr(err.msg, "n1"));
	ASSERT_EQ_INT(free_of(s, "v100"), 2);
	/* Dropping a type that is held is refused too. */
	n1.ndevs = 1;
	devs[0] = devs[1]; /* cpu only */
	ASSERT_EQ_INT(hp_store_node_put(s, &n1, NULL, false, NULL, &err),
		      HP_EBUSY);
	/* Growing is fine; reserve 1 of 6 (the highest index not held). */
	memcpy(devs, p->nodes[0].devs, sizeof(devs));
	n1.ndevs = 2;
	devs[0].count = 6;
	devs[0].free = 5;
	n1.cpu_cores = 32;
	ASSERT_EQ_INT(hp_store_node_put(s, &n1, NULL, true, NULL, &err), 0);
	ASSERT_EQ_INT(hp_store_node_get(s, "n1", &got, &err), 0);
	ASSERT_EQ_INT(got.pool.cpu_cores, 32);
	ASSERT_EQ_INT(got.pool.devs[0].count, 6);
	ASSERT_EQ_INT(got.pool.devs[0].free, 3); /* 6 - 2 held - 1 reserved */
	ASSERT_EQ_INT(got.devices[5].state, HP_DEV_RESERVED);
	ASSERT_EQ_INT(got.devices[2].state, HP_DEV_ALLOCATED);
	ASSERT_EQ_INT(got.devices[2].job_id, job);
	ASSERT(got.info == NULL); /* replaced by the update */
	ASSERT(got.self);
	hp_store_node_release(&got);
	/* An update without info or self (an operator's POST /v1/nodes of
	 * the host's own node) keeps both; until 3 December it cleared
	 * them, and the local backend then found no node to run on. */
	ASSERT_EQ_INT(
	    hp_store_node_put(s, &n1, "{\"cpu\": \"x\"}", true, NULL, &err), 0);
	n1.cpu_cores = 24;
	ASSERT_EQ_INT(hp_store_node_put(s, &n1, NULL, false, NULL, &err), 0);
	ASSERT_EQ_INT(hp_store_node_get(s, "n1", &got, &err), 0);
	ASSERT_EQ_INT(got.pool.cpu_cores, 24);
	ASSERT(got.self);
	ASSERT(got.info && strstr(got.info, "\"cpu\""));
	hp_store_node_release(&got);
	n1.cpu_cores = 32;
	/* Remove is refused while held; the pool load with replace too. */
	ASSERT_EQ_INT(hp_store_node_remove(s, "n1", &err), HP_EBUSY);
	{
		struct hp_pool *only2 = pool_of(
		    "{\"nodes\": [" NODE_JSON("n2", "{\"type\": \"t4\", "
						    "\"count\": 4}") "]}");
		ASSERT_EQ_INT(hp_store_pool_load(s, only2, true, &err),
			      HP_EBUSY);
		ASSERT_EQ_INT(hp_store_node_get(s, "n1", &got, &err), 0);
		hp_store_node_release(&got);
		/* Making n2 self moves the flag. */
		ASSERT_EQ_INT(hp_store_node_put(s, &only2->nodes[0], NULL, true,
						NULL, &err),
			      0);
		ASSERT_EQ_INT(hp_store_node_self(s, &got, &err), 0);
		ASSERT_STR_EQ(got.pool.name, "n2");
		hp_store_node_release(&got);
		ASSERT_EQ_INT(q1(path, "SELECT count(*) FROM nodes WHERE self"),
			      1);
		transition_ok(s, job, HP_JOB_FAILED);
		ASSERT_EQ_INT(hp_store_pool_load(s, only2, true, &err), 0);
		ASSERT_EQ_INT(hp_store_node_get(s, "n1", &got, &err),
			      HP_ENOENT);
		/* The pool load kept n2's self flag. */
		ASSERT_EQ_INT(hp_store_node_self(s, &got, &err), 0);
		hp_store_node_release(&got);
		hp_pool_free(only2);
	}
	/* The job's history outlives the node. */
	ASSERT_EQ_INT(hp_store_job_devices(s, job, false, &a, &na, &err), 0);
	ASSERT_EQ_INT(na, 2);
	ASSERT_STR_EQ(a[0].node, "n1");
	ASSERT(a[0].released_s > 0);
	hp_store_alloc_list_free(a, na);
	ASSERT_EQ_INT(hp_store_node_remove(s, "n1", &err), HP_ENOENT);
	ASSERT_EQ_INT(hp_store_node_remove(s, "n2", &err), 0);
	/* Bad nodes are refused by name. */
	n1.name = "bad\nname";
	ASSERT_EQ_INT(hp_store_node_put(s, &n1, NULL, false, NULL, &err),
		      HP_EINVAL);
	n1.name = "ok";
	n1.memory_gb = NAN;
	ASSERT_EQ_INT(hp_store_node_put(s, &n1, NULL, false, NULL, &err),
		      HP_EINVAL);
	check_invariants(path);
	hp_store_close(s);
	hp_pool_free(p);
	rm_db();
}

/* ---- allocation */

HP_TEST(store_allocation_is_all_or_none)
{
	const char *path = tmp_db();
	struct hp_store *s = open_ok(path);
	struct hp_error err = {0};
	struct hp_store_job j;
	int64_t a, b;

	load_pool(s, two_nodes);
	a = add_job(s, 0);
	b = add_job(s, 0);
	/* n2 has 4 t4: asking for 5 fails and takes nothing on n1. */
	{
		struct hp_store_devreq r[2] = {{"n1", "v100", 2, -1},
					       {"n2", "t4", 5, -1}};
		ASSERT_EQ_INT(
		    hp_store_job_start(s, a, r, 2, NULL, NULL, NULL, &err),
		    HP_EBUSY);
		ASSERT(strstr(err.msg, "5 t4 devices asked for, 4 free"));
	}
	ASSERT_EQ_INT(free_of(s, "v100"), 4);
	ASSERT_EQ_INT(hp_store_job_get(s, a, &j, &err), 0);
	ASSERT_EQ_INT(j.state, HP_JOB_QUEUED);
	ASSERT_EQ_INT(j.ndevices, 0);
	hp_store_job_release(&j);
	/* Unknown node or type. */
	{
		struct hp_store_devreq r = {"n9", "v100", 1, -1};
		ASSERT_EQ_INT(hp_store_allocate(s, a, &r, 1, NULL, NULL, &err),
			      HP_ENOENT);
		r.node = "n1";
		r.type = "a100";
		ASSERT_EQ_INT(hp_store_allocate(s, a, &r, 1, NULL, NULL, &err),
			      HP_ENOENT);
		r.type = "v100";
		r.index = 7;
		ASSERT_EQ_INT(hp_store_allocate(s, a, &r, 1, NULL, NULL, &err),
			      HP_ENOENT);
		r.count = 2;
		r.index = 0;
		ASSERT_EQ_INT(hp_store_allocate(s, a, &r, 1, NULL, NULL, &err),
			      HP_EINVAL);
	}
	/* a takes v100 0-2; b asks for 2 and one is left. */
	start_job(s, a, "n1", "v100", 3);
	{
		struct hp_store_devreq r = {"n1", "v100", 2, -1};
		ASSERT_EQ_INT(
		    hp_store_job_start(s, b, &r, 1, NULL, NULL, NULL, &err),
		    HP_EBUSY);
		r.count = 1;
		r.index = 1; /* a holds it */
		ASSERT_EQ_INT(
		    hp_store_job_start(s, b, &r, 1, NULL, NULL, NULL, &err),
		    HP_EBUSY);
		/* Drained device, drained node. */
		ASSERT_EQ_INT(
		    hp_store_device_drain(s, "n1", "v100", 3, true, &err), 0);
		r.index = 3;
		ASSERT_EQ_INT(
		    hp_store_job_start(s, b, &r, 1, NULL, NULL, NULL, &err),
		    HP_EBUSY);
		ASSERT_EQ_INT(
		    hp_store_device_drain(s, "n1", "v100", 3, false, &err), 0);
		ASSERT_EQ_INT(hp_store_node_drain(s, "n1", true, &err), 0);
		ASSERT_EQ_INT(
		    hp_store_job_start(s, b, &r, 1, NULL, NULL, NULL, &err),
		    HP_EBUSY);
		ASSERT(strstr(err.msg, "drained"));
		ASSERT_EQ_INT(hp_store_node_drain(s, "n1", false, &err), 0);
		ASSERT_EQ_INT(
		    hp_store_job_start(s, b, &r, 1, NULL, NULL, NULL, &err), 0);
	}
	ASSERT_EQ_INT(free_of(s, "v100"), 0);
	/* The same request twice in one call takes distinct devices. */
	{
		int64_t c = add_job(s, 0);
		struct hp_store_devreq r[2] = {{"n2", "t4", 2, -1},
					       {"n2", "t4", 2, -1}};
		struct hp_store_alloc *al;
		int nal;

		ASSERT_EQ_INT(hp_store_allocate(s, c, r, 2, &al, &nal, &err),
			      0);
		ASSERT_EQ_INT(nal, 4);
		for (int i = 0; i < 4; i++)
			ASSERT_EQ_INT(al[i].index, i);
		hp_store_alloc_list_free(al, nal);
		ASSERT_EQ_INT(free_of(s, "t4"), 0);
		{
			int n;
			ASSERT_EQ_INT(hp_store_release(s, c, &n, &err), 0);
			ASSERT_EQ_INT(n, 4);
		}
		ASSERT_EQ_INT(free_of(s, "t4"), 4);
	}
	/* A job that ended gets nothing. */
	transition_ok(s, b, HP_JOB_CANCELLED);
	{
		struct hp_store_devreq r = {"n1", "v100", 1, -1};
		ASSERT_EQ_INT(hp_store_allocate(s, b, &r, 1, NULL, NULL, &err),
			      HP_ESTATE);
	}
	ASSERT_EQ_INT(free_of(s, "v100"), 1);
	check_invariants(path);
	hp_store_close(s);
	rm_db();
}

HP_TEST(store_database_itself_refuses_double_allocation_and_reopening)
{
	const char *path = tmp_db();
	struct hp_store *s = open_ok(path);
	int64_t a, b;
	char sql[400];

	load_pool(s, two_nodes);
	a = add_job(s, 0);
	b = add_job(s, 0);
	start_job(s, a, "n1", "v100", 1); /* device 0 of n1 */
	hp_store_close(s);
	/* Plain SQL, past the library: a second live row for the device. */
	snprintf(sql, sizeof(sql),
		 "INSERT INTO allocations (job_id, device_id, node, type, "
		 "idx, allocated_s) SELECT %lld, device_id, node, type, idx, 2 "
		 "FROM allocations WHERE job_id = %lld",
		 (long long)b, (long long)a);
	ASSERT_EQ_INT(raw_exec(path, sql, true), SQLITE_CONSTRAINT);
	/* A job that has ended does not start again. */
	snprintf(sql, sizeof(sql),
		 "UPDATE jobs SET state = 'failed', updated_s = 3 WHERE id = "
		 "%lld",
		 (long long)a);
	ASSERT_EQ_INT(raw_exec(path, sql, true), SQLITE_OK);
	ASSERT_EQ_INT(q1(path, "SELECT count(*) FROM allocations WHERE "
			       "released_s IS NULL"),
		      0); /* the trigger released it */
	snprintf(sql, sizeof(sql),
		 "UPDATE jobs SET state = 'running' WHERE id = %lld",
		 (long long)a);
	ASSERT_EQ_INT(raw_exec(path, sql, true), SQLITE_CONSTRAINT);
	/* Nor does its released allocation come back, nor does it get a new
	 * one. */
	ASSERT_EQ_INT(
	    raw_exec(path, "UPDATE allocations SET released_s = NULL", true),
	    SQLITE_CONSTRAINT);
	snprintf(sql, sizeof(sql),
		 "INSERT INTO allocations (job_id, device_id, node, type, "
		 "idx, allocated_s) VALUES (%lld, 2, 'n1', 'v100', 1, 4)",
		 (long long)a);
	ASSERT_EQ_INT(raw_exec(path, sql, true), SQLITE_CONSTRAINT);
	/* A held device cannot be deleted. */
	snprintf(sql, sizeof(sql),
		 "INSERT INTO allocations (job_id, device_id, node, type, "
		 "idx, allocated_s) VALUES (%lld, 2, 'n1', 'v100', 1, 4)",
		 (long long)b);
	ASSERT_EQ_INT(raw_exec(path, sql, true), SQLITE_OK);
	ASSERT_EQ_INT(
	    raw_exec(path, "DELETE FROM nodes WHERE name = 'n1'", true),
	    SQLITE_CONSTRAINT);
	check_invariants(path);
	rm_db();
}

/* ---- the state machine */

/* Drive a new job to state st along allowed moves. */
static int64_t job_in(struct hp_store *s, enum hp_job_state st)
{
	int64_t j = add_job(s, 0);

	if (st == HP_JOB_QUEUED)
		return j;
	if (st == HP_JOB_CANCELLED || st == HP_JOB_FAILED) {
		transition_ok(s, j, st);
		return j;
	}
	start_job(s, j, "n2", "t4", 1);
	if (st == HP_JOB_STARTING)
		return j;
	transition_ok(s, j, HP_JOB_RUNNING);
	if (st == HP_JOB_SUCCEEDED)
		transition_ok(s, j, HP_JOB_SUCCEEDED);
	return j;
}

HP_TEST(store_state_machine_allows_only_its_moves)
{
	/* allowed[from][to], docs/store.md. */
	static const bool allowed[6][6] = {
	    /* queued   */ {0, 1, 0, 0, 1, 1},
	    /* starting */ {1, 0, 1, 0, 1, 1},
	    /* running  */ {0, 0, 0, 1, 1, 1},
	    /* ended    */ {0},
	    {0},
	    {0},
	};
	const char *path = tmp_db();
	struct hp_store *s = open_ok(path);
	struct hp_error err = {0};
	int checked = 0;

	load_pool(s, two_nodes);
	for (int from = 0; from < 6; from++)
		for (int to = 0; to < 6; to++) {
			int64_t j = job_in(s, (enum hp_job_state)from);
			struct hp_store_job got;
			int rc;

			/* Going to starting by transition needs devices. */
			if (from == HP_JOB_QUEUED && to == HP_JOB_STARTING) {
				struct hp_store_devreq r = {"n2", "t4", 1, -1};
				ASSERT_EQ_INT(
				    hp_store_job_transition(
					s, j, HP_JOB_STARTING, NULL, &err),
				    HP_ESTATE);
				ASSERT(strstr(err.msg, "holds no devices"));
				ASSERT_EQ_INT(hp_store_allocate(s, j, &r, 1,
								NULL, NULL,
								&err),
					      0);
			}
			rc = hp_store_job_transition(
			    s, j, (enum hp_job_state)to, "why", &err);
			if (allowed[from][to] != (rc == 0))
				HP_FAIL("%s -> %s: %d (%s)",
					hp_job_state_name(from),
					hp_job_state_name(to), rc, err.msg);
			if (rc) {
				ASSERT_EQ_INT(rc, HP_ESTATE);
				ASSERT(
				    strstr(err.msg, hp_job_state_name(from)));
			}
			ASSERT_EQ_INT(hp_store_job_get(s, j, &got, &err), 0);
			ASSERT_EQ_INT(got.state, rc ? from : to);
			if (!rc) {
				ASSERT_STR_EQ(got.reason, "why");
				if (hp_job_state_terminal(
					(enum hp_job_state)to) ||
				    to == HP_JOB_QUEUED)
					ASSERT_EQ_INT(got.ndevices, 0);
				if (hp_job_state_terminal(
					(enum hp_job_state)to))
					ASSERT(got.ended_s >= got.created_s);
				if (to == HP_JOB_RUNNING)
					ASSERT(got.started_s > 0);
			}
			/* Clean up what it holds. */
			if (!hp_job_state_terminal(got.state))
				hp_store_job_cancel(s, j, 0, NULL, NULL, NULL);
			if (got.state != HP_JOB_QUEUED)
				hp_store_release(s, j, NULL, NULL);
			hp_store_job_release(&got);
			checked++;
		}
	ASSERT_EQ_INT(checked, 36);
	ASSERT_EQ_INT(
	    hp_store_job_transition(s, 9999, HP_JOB_RUNNING, NULL, &err),
	    HP_ENOENT);
	check_invariants(path);
	hp_store_close(s);
	rm_db();
}

HP_TEST(store_cancel_by_state_and_owner)
{
	const char *path = tmp_db();
	struct hp_store *s = open_ok(path);
	struct hp_error err = {0};
	char tok[HP_TOKEN_LEN + 1];
	enum hp_job_state st;
	struct hp_store_job j;
	int64_t alice, bob, q, r;

	load_pool(s, two_nodes);
	ASSERT_EQ_INT(
	    hp_store_token_create(s, "alice", HP_ROLE_USER, tok, &alice, &err),
	    0);
	ASSERT_EQ_INT(
	    hp_store_token_create(s, "bob", HP_ROLE_USER, tok, &bob, &err), 0);
	q = add_job(s, alice);
	r = add_job(s, alice);
	start_job(s, r, "n1", "v100", 2);
	transition_ok(s, r, HP_JOB_RUNNING);
	/* Bob cannot see Alice's job. */
	ASSERT_EQ_INT(hp_store_job_cancel(s, q, bob, NULL, &st, &err),
		      HP_ENOENT);
	/* Queued: cancelled at once. */
	ASSERT_EQ_INT(
	    hp_store_job_cancel(s, q, alice, "changed my mind", &st, &err), 0);
	ASSERT_EQ_INT(st, HP_JOB_CANCELLED);
	/* Running: asked, the caller stops it. */
	ASSERT_EQ_INT(hp_store_job_cancel(s, r, 0, "admin", &st, &err), 0);
	ASSERT_EQ_INT(st, HP_JOB_RUNNING);
	ASSERT_EQ_INT(hp_store_job_get(s, r, &j, &err), 0);
	ASSERT(j.cancel_requested);
	ASSERT_EQ_INT(j.ndevices, 2);
	ASSERT_STR_EQ(j.reason, "admin");
	hp_store_job_release(&j);
	transition_ok(s, r, HP_JOB_CANCELLED);
	ASSERT_EQ_INT(free_of(s, "v100"), 4);
	/* Ended: nothing to cancel. */
	ASSERT_EQ_INT(hp_store_job_cancel(s, r, 0, NULL, &st, &err), HP_ESTATE);
	ASSERT_EQ_INT(hp_store_job_cancel(s, 4242, 0, NULL, &st, &err),
		      HP_ENOENT);
	hp_store_close(s);
	rm_db();
}

HP_TEST(store_jobs_listed_by_state_owner_and_page_and_updated)
{
	const char *path = tmp_db();
	struct hp_store *s = open_ok(path);
	struct hp_error err = {0};
	char tok[HP_TOKEN_LEN + 1];
	struct hp_store_job *l, j;
	int64_t u1, u2, ids[10];
	int n;

	load_pool(s, two_nodes);
	ASSERT_EQ_INT(
	    hp_store_token_create(s, "u1", HP_ROLE_USER, tok, &u1, &err), 0);
	ASSERT_EQ_INT(
	    hp_store_token_create(s, "u2", HP_ROLE_USER, tok, &u2, &err), 0);
	for (int i = 0; i < 10; i++)
		ids[i] = add_job(s, i % 2 ? u2 : u1);
	start_job(s, ids[3], "n2", "t4", 1);
	transition_ok(s, ids[3], HP_JOB_RUNNING);
	transition_ok(s, ids[5], HP_JOB_FAILED);

	ASSERT_EQ_INT(hp_store_job_list(s, NULL, &l, &n, &err), 0);
	ASSERT_EQ_INT(n, 10);
	for (int i = 0; i < 10; i++)
		ASSERT_EQ_INT(l[i].id, ids[i]);
	hp_store_job_list_free(l, n);
	{
		struct hp_store_job_filter f = {.states = 1u << HP_JOB_QUEUED,
						.owner = u2};
		ASSERT_EQ_INT(hp_store_job_list(s, &f, &l, &n, &err), 0);
		ASSERT_EQ_INT(n, 3); /* 1, 7, 9 */
		ASSERT_EQ_INT(l[0].id, ids[1]);
		ASSERT_EQ_INT(l[2].id, ids[9]);
		hp_store_job_list_free(l, n);
		f.states |= 1u << HP_JOB_RUNNING | 1u << HP_JOB_FAILED;
		ASSERT_EQ_INT(hp_store_job_list(s, &f, &l, &n, &err), 0);
		ASSERT_EQ_INT(n, 5);
		hp_store_job_list_free(l, n);
	}
	{
		struct hp_store_job_filter f = {.newest_first = true,
						.limit = 4};
		ASSERT_EQ_INT(hp_store_job_list(s, &f, &l, &n, &err), 0);
		ASSERT_EQ_INT(n, 4);
		ASSERT_EQ_INT(l[0].id, ids[9]);
		ASSERT_EQ_INT(l[3].id, ids[6]);
		f.after_id = l[3].id;
		hp_store_job_list_free(l, n);
		ASSERT_EQ_INT(hp_store_job_list(s, &f, &l, &n, &err), 0);
		ASSERT_EQ_INT(n, 4);
		ASSERT_EQ_INT(l[0].id, ids[5]);
		hp_store_job_list_free(l, n);
	}
	ASSERT_EQ_INT(hp_store_queue(s, &l, &n, &err), 0);
	ASSERT_EQ_INT(n, 8);
	ASSERT_EQ_INT(l[0].id, ids[0]);
	ASSERT_EQ_INT(l[3].id, ids[4]);
	hp_store_job_list_free(l, n);
	/* Updates write only the fields named. */
	{
		struct hp_store_job_patch p = {.fields = HP_JOB_F_DEPLOY |
							 HP_JOB_F_PREDICTED,
					       .deploy_id = "j-7",
					       .deploy_dir = "/tmp/jobs/j-7",
					       .predicted_start_at_s = 1000,
					       .predicted_end_at_s = 2000,
					       .plan = "ignored"};
		ASSERT_EQ_INT(hp_store_job_update(s, ids[0], &p, &err), 0);
		ASSERT_EQ_INT(hp_store_job_get(s, ids[0], &j, &err), 0);
		ASSERT_STR_EQ(j.deploy_id, "j-7");
		ASSERT_STR_EQ(j.deploy_dir, "/tmp/jobs/j-7");
		ASSERT(j.predicted_start_at_s == 1000);
		ASSERT(j.predicted_end_at_s == 2000);
		ASSERT(j.plan == NULL);
		ASSERT_STR_EQ(j.data, "synthetic");
		ASSERT_EQ_INT(j.backend, HP_BACKEND_LOCAL);
		hp_store_job_release(&j);
		p.fields = HP_JOB_F_BACKEND;
		p.backend = HP_BACKEND_SLURM;
		ASSERT_EQ_INT(hp_store_job_update(s, ids[0], &p, &err), 0);
		ASSERT_EQ_INT(hp_store_job_get(s, ids[0], &j, &err), 0);
		ASSERT_EQ_INT(j.backend, HP_BACKEND_SLURM);
		ASSERT_STR_EQ(j.deploy_id, "j-7");
		hp_store_job_release(&j);
		ASSERT_EQ_INT(hp_store_job_update(s, 999, &p, &err), HP_ENOENT);
		/* an ended job's reason is final */
		ASSERT_EQ_INT(
		    hp_store_job_transition(s, ids[1], HP_JOB_CANCELLED,
					    "cancelled by alice", &err),
		    0);
		p.fields = HP_JOB_F_REASON;
		p.reason = "waiting for devices";
		ASSERT_EQ_INT(hp_store_job_update(s, ids[1], &p, &err), 0);
		ASSERT_EQ_INT(hp_store_job_get(s, ids[1], &j, &err), 0);
		ASSERT_STR_EQ(j.reason, "cancelled by alice");
		hp_store_job_release(&j);
		/* and so is a running job's once a cancel was asked for: a
		 * pass that read the job before the cancel does not replace
		 * "cancelled by NAME" with the backend's waiting reason */
		{
			enum hp_job_state now;
			ASSERT_EQ_INT(hp_store_job_cancel(s, ids[3], 0,
							  "cancelled by bob",
							  &now, &err),
				      0);
			ASSERT_EQ_INT(now, HP_JOB_RUNNING);
		}
		p.reason = "apply the manifests";
		ASSERT_EQ_INT(hp_store_job_update(s, ids[3], &p, &err), 0);
		ASSERT_EQ_INT(hp_store_job_get(s, ids[3], &j, &err), 0);
		ASSERT_STR_EQ(j.reason, "cancelled by bob");
		ASSERT(j.cancel_requested);
		hp_store_job_release(&j);
	}
	/* A description is required. */
	{
		struct hp_store_job_new in = {.data = "x"};
		ASSERT_EQ_INT(hp_store_job_add(s, &in, NULL, &err), HP_EINVAL);
	}
	ASSERT_EQ_INT(hp_store_job_get(s, 999, &j, &err), HP_ENOENT);
	hp_store_close(s);
	rm_db();
}

/* ---- threads */

#define RACE_THREADS 8
#define RACE_ITERS 60

struct race {
	struct hp_store *s;
	int t;
	/* holder[i]: the job that believes it holds v100 i, or 0. */
	_Atomic int64_t *holder;
	atomic_int *stop;
	int64_t won[RACE_ITERS];
	int nwon, nlost;
	char fail[400];
};

static void *race_thread(void *arg)
{
	struct race *r = arg;
	struct hp_error err = {0};

	for (int it = 0; it < RACE_ITERS; it++) {
		struct hp_store_job_new in = {.description = "{}",
					      .data = "synthetic"};
		/* Even threads ask for any 2, odd ones for one by index. */
		struct hp_store_devreq q = {"n1", "v100", 2, -1};
		struct hp_store_alloc *a = NULL;
		int64_t job;
		int na = 0, rc;

		if (r->t % 2) {
			q.count = 1;
			q.index = (r->t + it) % 4;
		}
		if (hp_store_job_add(r->s, &in, &job, &err))
			goto fail;
		rc = hp_store_job_start(r->s, job, &q, 1, NULL, &a, &na, &err);
		if (rc == HP_EBUSY) {
			r->nlost++;
			if (hp_store_job_transition(r->s, job, HP_JOB_CANCELLED,
						    "busy", &err))
				goto fail;
			continue;
		}
		if (rc)
			goto fail;
		for (int i = 0; i < na; i++) {
			int64_t zero = 0;
			if (!atomic_compare_exchange_strong(
				&r->holder[a[i].index], &zero, job)) {
				snprintf(r->fail, sizeof(r->fail),
					 "device %d given to job %lld while "
					 "job %lld holds it",
					 a[i].index, (long long)job,
					 (long long)zero);
				hp_store_alloc_list_free(a, na);
				return NULL;
			}
		}
		r->won[r->nwon++] = job;
		sched_yield();
		for (int i = 0; i < na; i++)
			atomic_store(&r->holder[a[i].index], 0);
		hp_store_alloc_list_free(a, na);
		if (hp_store_job_transition(r->s, job, HP_JOB_RUNNING, NULL,
					    &err) ||
		    hp_store_job_transition(
			r->s, job, it % 3 ? HP_JOB_SUCCEEDED : HP_JOB_FAILED,
			NULL, &err))
			goto fail;
	}
	return NULL;
fail:
	snprintf(r->fail, sizeof(r->fail), "thread %d: %s", r->t, err.msg);
	return NULL;
}

/* Reads while the writers race: the pool's counts stay within bounds. */
static void *race_reader(void *arg)
{
	struct race *r = arg;
	struct hp_error err = {0};

	while (!atomic_load(r->stop)) {
		struct hp_pool *p = hp_store_pool(r->s, &err);
		struct hp_store_metrics m;
		long f;

		if (!p) {
			snprintf(r->fail, sizeof(r->fail), "reader: %s",
				 err.msg);
			return NULL;
		}
		f = hp_pool_free_of(p, "v100");
		hp_pool_free(p);
		if (f < 0 || f > 4) {
			snprintf(r->fail, sizeof(r->fail), "%ld free v100", f);
			return NULL;
		}
		if (hp_store_metrics(r->s, &m, &err)) {
			snprintf(r->fail, sizeof(r->fail), "metrics: %s",
				 err.msg);
			return NULL;
		}
		for (int i = 0; i < m.ntypes; i++)
			if (m.types[i].allocated + m.types[i].free !=
			    m.types[i].total)
				snprintf(r->fail, sizeof(r->fail),
					 "%s: %d allocated + %d free != %d",
					 m.types[i].type, m.types[i].allocated,
					 m.types[i].free, m.types[i].total);
		hp_store_metrics_release(&m);
	}
	return NULL;
}

HP_TEST(store_allocation_race_8_threads_never_double_allocates)
{
	const char *path = tmp_db();
	struct hp_store_options o = {.max_connections = 6, .no_sync = true};
	struct hp_error err = {0};
	struct hp_store *s = hp_store_open(path, &o, &err);
	static struct race r[RACE_THREADS + 1];
	pthread_t th[RACE_THREADS + 1];
	_Atomic int64_t holder[4] = {0};
	atomic_int stop = 0;
	int won = 0, lost = 0;

	if (!s)
		HP_FAIL("open: %s", err.msg);
	load_pool(s, two_nodes);
	for (int t = 0; t <= RACE_THREADS; t++) {
		r[t] = (struct race){
		    .s = s, .t = t, .holder = holder, .stop = &stop};
		if (pthread_create(&th[t], NULL,
				   t < RACE_THREADS ? race_thread : race_reader,
				   &r[t]))
			HP_FAIL("pthread_create");
	}
	for (int t = 0; t < RACE_THREADS; t++)
		pthread_join(th[t], NULL);
	atomic_store(&stop, 1);
	pthread_join(th[RACE_THREADS], NULL);
	for (int t = 0; t <= RACE_THREADS; t++)
		if (r[t].fail[0])
			HP_FAIL("%s", r[t].fail);
	/* Every success is recorded with its devices, all released now. */
	for (int t = 0; t < RACE_THREADS; t++) {
		for (int i = 0; i < r[t].nwon; i++) {
			struct hp_store_alloc *a;
			int na;

			ASSERT_EQ_INT(hp_store_job_devices(
					  s, r[t].won[i], false, &a, &na, &err),
				      0);
			ASSERT_EQ_INT(na, t % 2 ? 1 : 2);
			for (int k = 0; k < na; k++)
				ASSERT(a[k].released_s >= a[k].allocated_s);
			hp_store_alloc_list_free(a, na);
		}
		won += r[t].nwon;
		lost += r[t].nlost;
	}
	ASSERT_EQ_INT(won + lost, RACE_THREADS * RACE_ITERS);
	ASSERT(won > 0);
	ASSERT_EQ_INT(
	    q1(path, "SELECT count(DISTINCT job_id) FROM allocations"), won);
	ASSERT_EQ_INT(q1(path, "SELECT count(*) FROM jobs WHERE state = "
			       "'cancelled'"),
		      lost);
	ASSERT_EQ_INT(q1(path, "SELECT count(*) FROM allocations WHERE "
			       "released_s IS NULL"),
		      0);
	ASSERT_EQ_INT(free_of(s, "v100"), 4);
	printf("  %d starts won, %d refused busy\n", won, lost);
	check_invariants(path);
	hp_store_close(s);
	rm_db();
}

/* ---- crashes */

/* The child: 4 threads submit jobs and start, end or cancel them, each id
 * written to fd once its submission returned (committed), until killed. */
struct burst {
	struct hp_store *s;
	int fd, t;
};

static void *burst_thread(void *arg)
{
	struct burst *b = arg;
	struct hp_error err = {0};

	for (unsigned it = 0;; it++) {
		struct hp_store_job_new in = {.description = "{\"burst\": 1}",
					      .data = "synthetic"};
		struct hp_store_devreq q = {b->t % 2 ? "n2" : "n1",
					    b->t % 2 ? "t4" : "v100",
					    1 + (int)(it % 2), -1};
		int64_t job;
		int rc;

		if (hp_store_job_add(b->s, &in, &job, &err))
			_exit(3);
		if (write(b->fd, &job, sizeof(job)) != sizeof(job))
			_exit(4);
		rc = hp_store_job_start(b->s, job, &q, 1, NULL, NULL, NULL,
					&err);
		if (rc && rc != HP_EBUSY)
			_exit(5);
		switch (it % 4) {
		case 0: /* left running: recovery lists it */
			if (!rc)
				hp_store_job_transition(
				    b->s, job, HP_JOB_RUNNING, NULL, NULL);
			break;
		case 1: /* left queued or starting */
			break;
		case 2:
			hp_store_job_cancel(b->s, job, 0, "burst", NULL, NULL);
			if (!rc)
				hp_store_job_transition(
				    b->s, job, HP_JOB_CANCELLED, NULL, NULL);
			break;
		default:
			if (!rc) {
				hp_store_job_transition(
				    b->s, job, HP_JOB_RUNNING, NULL, NULL);
				hp_store_job_transition(
				    b->s, job, HP_JOB_SUCCEEDED, NULL, NULL);
			}
		}
	}
	return NULL;
}

static void burst_child(const char *path, int fd)
{
	struct hp_error err = {0};
	struct hp_store *s = hp_store_open(path, NULL, &err);
	struct burst b[4];
	pthread_t th[4];
	struct hp_store_recovery rec;

	if (!s)
		_exit(2);
	/* Each start after a kill first recovers, as hetpoold does: a
	 * running job left over is failed, so its devices come back. */
	if (hp_store_recover(s, &rec, &err))
		_exit(6);
	for (int i = 0; i < rec.nactive; i++)
		hp_store_job_transition(s, rec.active[i].id, HP_JOB_FAILED,
					"restarted", NULL);
	hp_store_recovery_release(&rec);
	for (int t = 0; t < 4; t++) {
		b[t] = (struct burst){s, fd, t};
		pthread_create(&th[t], NULL, burst_thread, &b[t]);
	}
	for (;;)
		pause();
}

HP_TEST(store_sigkill_during_a_burst_loses_no_committed_job)
{
	const char *path = tmp_db();
	int64_t *seen = NULL;
	size_t nseen = 0, cap = 0;
	struct hp_store *s = open_ok(path);
	struct hp_error err = {0};
	int rounds = 25;

	load_pool(s, two_nodes);
	hp_store_close(s);
	srand(12345);
	for (int round = 0; round < rounds; round++) {
		int fds[2], st;
		pid_t pid;
		struct timespec ts;

		ASSERT(pipe(fds) == 0);
		pid = fork();
		ASSERT(pid >= 0);
		if (pid == 0) {
			close(fds[0]);
			burst_child(path, fds[1]);
		}
		close(fds[1]);
		/* Once the burst is under way (its first job committed),
		 * 0 to 100 ms more: commits take about 7 ms each (an fsync
		 * on this VM), so the kill lands among them, in any one. */
		{
			int64_t id;
			if (read(fds[0], &id, sizeof(id)) != sizeof(id))
				HP_FAIL("round %d: the child reported nothing",
					round);
			if (nseen == cap) {
				cap = cap ? 2 * cap : 1024;
				seen = realloc(seen, cap * sizeof(*seen));
				ASSERT(seen);
			}
			seen[nseen++] = id;
		}
		ts.tv_sec = 0;
		ts.tv_nsec = (rand() % 100) * 1000000L;
		nanosleep(&ts, NULL);
		kill(pid, SIGKILL);
		ASSERT(waitpid(pid, &st, 0) == pid);
		if (!(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL))
			HP_FAIL("round %d: the child ended by itself (%d)",
				round, st);
		for (;;) {
			int64_t id;
			ssize_t n = read(fds[0], &id, sizeof(id));
			if (n == 0)
				break;
			ASSERT(n == sizeof(id));
			if (nseen == cap) {
				cap = cap ? 2 * cap : 1024;
				seen = realloc(seen, cap * sizeof(*seen));
				ASSERT(seen);
			}
			seen[nseen++] = id;
		}
		close(fds[0]);
		/* After each kill: the file's invariants, before recovery. */
		check_invariants(path);
	}
	s = open_ok(path);
	{
		struct hp_store_recovery rec;
		struct hp_store_job *l;
		int n;

		ASSERT_EQ_INT(hp_store_recover(s, &rec, &err), 0);
		hp_store_recovery_release(&rec);
		check_invariants(path);
		/* Every job whose submission returned is there. */
		for (size_t i = 0; i < nseen; i++) {
			struct hp_store_job j;
			if (hp_store_job_get(s, seen[i], &j, &err))
				HP_FAIL("job %lld committed, then lost: %s",
					(long long)seen[i], err.msg);
			hp_store_job_release(&j);
		}
		ASSERT(nseen >= (size_t)rounds);
		/* Queued jobs hold nothing after recovery. */
		ASSERT_EQ_INT(hp_store_queue(s, &l, &n, &err), 0);
		for (int i = 0; i < n; i++)
			ASSERT_EQ_INT(l[i].ndevices, 0);
		hp_store_job_list_free(l, n);
		printf("  %d kills, %zu committed jobs all there\n", rounds,
		       nseen);
	}
	free(seen);
	hp_store_close(s);
	rm_db();
}

HP_TEST(store_sigkill_mid_transaction_leaves_nothing_half_done)
{
	const char *path = tmp_db();
	struct hp_store *s = open_ok(path);
	struct hp_error err = {0};
	int64_t held;
	int fds[2], st;
	pid_t pid;
	char c;

	load_pool(s, two_nodes);
	held = add_job(s, 0);
	start_job(s, held, "n1", "v100", 1);
	hp_store_close(s);
	ASSERT(pipe(fds) == 0);
	pid = fork();
	ASSERT(pid >= 0);
	if (pid == 0) {
		/* Inside the store's own write transaction: a job, its
		 * devices, a token, then the end of the process. */
		struct hp_store *cs = hp_store_open(path, NULL, &err);
		struct hp__conn *cc;
		int64_t j = 0;

		if (!cs || !(cc = hp__conn_get(cs, &err)))
			_exit(2);
		if (hp__begin(cc, true, &err) ||
		    hp__exec(cc,
			     "INSERT INTO jobs (state, description, data, "
			     "backend, created_s, updated_s) VALUES ('queued', "
			     "'{}', 'half', 'local', 1, 1);",
			     &err))
			_exit(3);
		j = sqlite3_last_insert_rowid(cc->db);
		{
			char sql[300];
			snprintf(sql, sizeof(sql),
				 "INSERT INTO allocations (job_id, device_id, "
				 "node, type, idx, allocated_s) SELECT %lld, "
				 "id, 'n2', 't4', idx, 1 FROM devices WHERE "
				 "type = 't4'; UPDATE jobs SET state = "
				 "'starting' WHERE id = %lld; UPDATE jobs SET "
				 "state = 'failed', updated_s = 2 WHERE id = 1",
				 (long long)j, (long long)j);
			if (hp__exec(cc, sql, &err))
				_exit(4);
		}
		if (write(fds[1], "k", 1) != 1)
			_exit(5);
		raise(SIGKILL);
		_exit(6);
	}
	close(fds[1]);
	ASSERT(read(fds[0], &c, 1) == 1);
	ASSERT(waitpid(pid, &st, 0) == pid);
	ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	close(fds[0]);
	/* Nothing of the transaction is there; what was committed before
	 * is; and the write lock died with the process. */
	ASSERT_EQ_INT(q1(path, "SELECT count(*) FROM jobs WHERE data = 'half'"),
		      0);
	ASSERT_EQ_INT(q1(path, "SELECT count(*) FROM allocations WHERE type "
			       "= 't4'"),
		      0);
	s = open_ok(path);
	{
		struct hp_store_job j;
		ASSERT_EQ_INT(hp_store_job_get(s, held, &j, &err), 0);
		ASSERT_EQ_INT(j.state, HP_JOB_STARTING);
		ASSERT_EQ_INT(j.ndevices, 1);
		hp_store_job_release(&j);
	}
	ASSERT_EQ_INT(free_of(s, "t4"), 4);
	ASSERT(add_job(s, 0) > held);
	check_invariants(path);
	hp_store_close(s);
	rm_db();
}

HP_TEST(store_recover_releases_what_ended_or_waits_and_lists_the_active)
{
	const char *path = tmp_db();
	struct hp_store *s = open_ok(path);
	struct hp_error err = {0};
	struct hp_store_recovery rec;
	int64_t run, start, wait;
	char sql[300];

	load_pool(s, two_nodes);
	run = add_job(s, 0);
	start = add_job(s, 0);
	wait = add_job(s, 0);
	start_job(s, run, "n1", "v100", 2);
	transition_ok(s, run, HP_JOB_RUNNING);
	start_job(s, start, "n2", "t4", 1);
	{
		struct hp_store_devreq r = {"n2", "t4", 2, -1};
		ASSERT_EQ_INT(
		    hp_store_allocate(s, wait, &r, 1, NULL, NULL, &err), 0);
	}
	hp_store_close(s);
	/* Damage only a crash of an older version, or a hand, could do:
	 * a device held by a job that is not there (foreign keys off). */
	snprintf(sql, sizeof(sql),
		 "INSERT INTO allocations (job_id, device_id, node, type, "
		 "idx, allocated_s) VALUES (777, (SELECT id FROM devices "
		 "WHERE type = 't4' AND idx = 3), 'n2', 't4', 3, 1)");
	ASSERT_EQ_INT(raw_exec(path, sql, false), SQLITE_OK);
	ASSERT_EQ_INT(free_of(s = open_ok(path), "t4"), 0);

	ASSERT_EQ_INT(hp_store_recover(s, &rec, &err), 0);
	ASSERT_EQ_INT(rec.released, 3); /* wait's 2 and the missing job's */
	ASSERT_EQ_INT(rec.nactive, 2);
	ASSERT_EQ_INT(rec.active[0].id, run);
	ASSERT_EQ_INT(rec.active[0].state, HP_JOB_RUNNING);
	ASSERT_EQ_INT(rec.active[1].id, start);
	ASSERT_EQ_INT(rec.active[1].ndevices, 1);
	hp_store_recovery_release(&rec);
	ASSERT_EQ_INT(free_of(s, "t4"), 3);
	ASSERT_EQ_INT(free_of(s, "v100"), 2);
	/* The daemon fails what it cannot re-attach: devices come back. */
	ASSERT_EQ_INT(hp_store_job_transition(s, start, HP_JOB_FAILED,
					      "hetpoold restarted", &err),
		      0);
	ASSERT_EQ_INT(free_of(s, "t4"), 4);
	/* A second recovery finds nothing more to release. */
	ASSERT_EQ_INT(hp_store_recover(s, &rec, &err), 0);
	ASSERT_EQ_INT(rec.released, 0);
	ASSERT_EQ_INT(rec.nactive, 1);
	hp_store_recovery_release(&rec);
	hp_store_close(s);
	/* Foreign keys were off for the damage: the check sees that row,
	 * released now, and nothing else. */
	ASSERT_EQ_INT(q1(path, "SELECT count(*) FROM allocations WHERE "
			       "released_s IS NULL"),
		      2);
	rm_db();
}

/* ---- tokens */

/* Whether the bytes of s occur in the file at path. */
static bool file_holds(const char *path, const char *s)
{
	char *text;
	size_t len;
	bool found;

	if (hp_read_file(path, 1u << 30, &text, &len, NULL))
		return false;
	found = false;
	for (size_t i = 0; !found && i + strlen(s) <= len; i++)
		found = !memcmp(text + i, s, strlen(s));
	free(text);
	return found;
}

HP_TEST(store_tokens_are_stored_as_hashes_and_revoked_at_once)
{
	const char *path = tmp_db();
	struct hp_store *s = open_ok(path);
	struct hp_error err = {0};
	char tok[HP_TOKEN_LEN + 1], tok2[HP_TOKEN_LEN + 1], wal[400], hex[65];
	struct hp_store_token t, *l;
	int64_t id, id2, admin;
	int n;

	/* The hash against FIPS 180-2's vector. */
	hp__sha256_hex_of("abc", 3, hex);
	ASSERT_STR_EQ(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb41"
			   "0ff61f20015ad");
	ASSERT_EQ_INT(
	    hp_store_token_create(s, "ci", HP_ROLE_USER, tok, &id, &err), 0);
	ASSERT_EQ_INT(strlen(tok), HP_TOKEN_LEN);
	ASSERT(!strncmp(tok, "hpt_", 4));
	for (int i = 4; i < HP_TOKEN_LEN; i++)
		ASSERT(strchr("0123456789abcdef", tok[i]));
	ASSERT_EQ_INT(
	    hp_store_token_create(s, "ci", HP_ROLE_READER, tok2, &id2, &err),
	    0);
	ASSERT(strcmp(tok, tok2));
	ASSERT(id2 != id);
	/* Verified by its hash; the role and name come back. */
	ASSERT_EQ_INT(hp_store_token_verify(s, tok, &t, &err), 0);
	ASSERT_EQ_INT(t.id, id);
	ASSERT_EQ_INT(t.role, HP_ROLE_USER);
	ASSERT_STR_EQ(t.name, "ci");
	ASSERT(t.revoked_s == 0);
	hp_store_token_release(&t);
	/* The stored hash is the SHA-256 of the text; the text itself is
	 * nowhere in the files. */
	{
		char sql[200];
		hp__sha256_hex_of(tok, strlen(tok), hex);
		snprintf(sql, sizeof(sql),
			 "SELECT count(*) FROM tokens WHERE hash = '%s' AND id "
			 "= %lld",
			 hex, (long long)id);
		ASSERT_EQ_INT(q1(path, sql), 1);
	}
	snprintf(wal, sizeof(wal), "%s-wal", path);
	ASSERT(file_holds(wal, hex) || file_holds(path, hex));
	ASSERT(!file_holds(path, tok + 4) && !file_holds(wal, tok + 4));
	/* One character off, empty, NULL, huge: unknown. */
	{
		char bad[HP_TOKEN_LEN + 1];
		char *huge = malloc(10000);
		memcpy(bad, tok, sizeof(bad));
		bad[HP_TOKEN_LEN - 1] =
		    bad[HP_TOKEN_LEN - 1] == 'a' ? 'b' : 'a';
		ASSERT_EQ_INT(hp_store_token_verify(s, bad, &t, &err),
			      HP_ENOENT);
		ASSERT_EQ_INT(hp_store_token_verify(s, "", NULL, &err),
			      HP_ENOENT);
		ASSERT_EQ_INT(hp_store_token_verify(s, NULL, NULL, &err),
			      HP_ENOENT);
		memset(huge, 'a', 9999);
		huge[9999] = '\0';
		ASSERT_EQ_INT(hp_store_token_verify(s, huge, NULL, &err),
			      HP_ENOENT);
		free(huge);
	}
	/* Revoked: refused at once, with the same message as unknown. */
	ASSERT_EQ_INT(hp_store_token_revoke(s, id, &err), 0);
	ASSERT_EQ_INT(hp_store_token_revoke(s, id, &err), 0);
	ASSERT_EQ_INT(hp_store_token_verify(s, tok, &t, &err), HP_ENOENT);
	ASSERT_STR_EQ(err.msg, "unknown or revoked token");
	ASSERT_EQ_INT(hp_store_token_verify(s, tok2, NULL, &err), 0);
	ASSERT_EQ_INT(hp_store_token_revoke(s, 999, &err), HP_ENOENT);
	/* The admin token from outside: added once, found again, its role
	 * set; too short refused; once revoked, refused. */
	ASSERT_EQ_INT(hp_store_token_ensure(s, "admin", HP_ROLE_ADMIN,
					    "correct horse battery staple",
					    &admin, &err),
		      0);
	ASSERT_EQ_INT(hp_store_token_ensure(s, "root", HP_ROLE_ADMIN,
					    "correct horse battery staple",
					    &id2, &err),
		      0);
	ASSERT_EQ_INT(id2, admin);
	ASSERT_EQ_INT(
	    hp_store_token_verify(s, "correct horse battery staple", &t, &err),
	    0);
	ASSERT_EQ_INT(t.role, HP_ROLE_ADMIN);
	ASSERT_STR_EQ(t.name, "root");
	hp_store_token_release(&t);
	ASSERT_EQ_INT(hp_store_token_ensure(s, "admin", HP_ROLE_ADMIN, "short",
					    NULL, &err),
		      HP_EINVAL);
	ASSERT_EQ_INT(hp_store_token_revoke(s, admin, &err), 0);
	ASSERT_EQ_INT(hp_store_token_ensure(s, "admin", HP_ROLE_ADMIN,
					    "correct horse battery staple",
					    NULL, &err),
		      HP_ESTATE);
	ASSERT_EQ_INT(hp_store_token_list(s, &l, &n, &err), 0);
	ASSERT_EQ_INT(n, 3);
	ASSERT(l[0].revoked_s > 0 && l[1].revoked_s == 0 && l[2].revoked_s > 0);
	hp_store_token_list_free(l, n);
	{
		enum hp_role r;
		ASSERT_EQ_INT(hp_role_parse("admin", &r), 0);
		ASSERT_EQ_INT(r, HP_ROLE_ADMIN);
		ASSERT_EQ_INT(hp_role_parse("root", &r), HP_EINVAL);
		ASSERT_EQ_INT(hp_store_token_create(s, "x", (enum hp_role)7,
						    tok, NULL, &err),
			      HP_EINVAL);
		ASSERT_EQ_INT(tok[0], '\0');
	}
	hp_store_close(s);
	rm_db();
}

/* ---- models, measurements, datasets, estimators */

HP_TEST(store_models_keep_their_bytes_and_hash)
{
	const char *path = tmp_db();
	struct hp_store *s = open_ok(path);
	struct hp_error err = {0};
	struct hp_store_model m, *l;
	char *bytes, hex[65];
	size_t len;
	int64_t id, id2, job;
	int n;

	if (hp_read_file(hp_test_path("data/models/resnet50.train.onnx"),
			 1u << 30, &bytes, &len, &err))
		HP_FAIL("%s", err.msg);
	hp__sha256_hex_of(bytes, len, hex);
	ASSERT_EQ_INT(
	    hp_store_model_add(s, "resnet50.train.onnx", HP_MODEL_ONNX, bytes,
			       len, "{\"params\": 25557032}", 0, &id, &err),
	    0);
	ASSERT_EQ_INT(hp_store_model_add(s, "tiny", HP_MODEL_SPEC, "{}", 2,
					 NULL, 0, &id2, &err),
		      0);
	ASSERT_EQ_INT(hp_store_model_get(s, id, true, &m, &err), 0);
	ASSERT_EQ_INT(m.size, (long long)len);
	ASSERT(!memcmp(m.data, bytes, len));
	ASSERT_STR_EQ(m.sha256, hex);
	ASSERT_STR_EQ(m.features, "{\"params\": 25557032}");
	ASSERT_EQ_INT(m.kind, HP_MODEL_ONNX);
	hp_store_model_release(&m);
	ASSERT_EQ_INT(hp_store_model_list(s, &l, &n, &err), 0);
	ASSERT_EQ_INT(n, 2);
	ASSERT(l[0].data == NULL);
	ASSERT_STR_EQ(l[1].name, "tiny");
	ASSERT_STR_EQ(l[1].sha256, "44136fa355b3678a1146ad16f7e8649e94fb4fc21f"
				   "e77e8310c060f61caaff8a");
	hp_store_model_list_free(l, n);
	/* A job refers to the model: it stays. */
	{
		struct hp_store_job_new in = {
		    .description = "{}", .data = "synthetic", .model_id = id};
		ASSERT_EQ_INT(hp_store_job_add(s, &in, &job, &err), 0);
		in.model_id = 999;
		ASSERT_EQ_INT(hp_store_job_add(s, &in, NULL, &err), HP_ENOENT);
	}
	ASSERT_EQ_INT(hp_store_model_remove(s, id, &err), HP_EBUSY);
	ASSERT(strstr(err.msg, "jobs that have not ended use it"));
	ASSERT_EQ_INT(hp_store_model_remove(s, id2, &err), 0);
	ASSERT_EQ_INT(hp_store_model_get(s, id2, false, &m, &err), HP_ENOENT);
	ASSERT_EQ_INT(q1(path, "SELECT count(*) FROM model_data"), 1);
	/* once the job has ended, the model may go (until 3 December an
	 * ended job held it for ever); the job stays, without it */
	transition_ok(s, job, HP_JOB_CANCELLED);
	ASSERT_EQ_INT(hp_store_model_remove(s, id, &err), 0);
	ASSERT_EQ_INT(hp_store_model_get(s, id, false, &m, &err), HP_ENOENT);
	ASSERT_EQ_INT(q1(path, "SELECT count(*) FROM model_data"), 0);
	ASSERT_EQ_INT(q1(path, "SELECT count(*) FROM jobs WHERE model_id IS "
			       "NULL"),
		      1);
	ASSERT_EQ_INT(hp_store_model_add(s, "empty", HP_MODEL_SPEC, "", 0, NULL,
					 0, NULL, &err),
		      HP_EINVAL);
	free(bytes);
	hp_store_close(s);
	rm_db();
}

HP_TEST(store_measurements_profiler_csv_in_and_out_byte_for_byte)
{
	const char *path = tmp_db();
	const char *csv_path = hp_test_path("data/profiles/cpu-default.csv");
	struct hp_store *s = open_ok(path);
	struct hp_error err = {0};
	struct hp_store_measurement *l, jm = {0};
	struct hp_buf out;
	char *text;
	size_t len;
	int added, rows, n, lines = 0;
	int64_t job;

	if (hp_read_file(csv_path, 1u << 30, &text, &len, &err))
		HP_FAIL("%s", err.msg);
	for (size_t i = 0; i < len; i++)
		lines += text[i] == '\n';
	ASSERT_EQ_INT(hp_store_measurement_import_csv(
			  s, text, len, "cpu-default.csv", &added, &err),
		      0);
	ASSERT_EQ_INT(added, lines - 1);
	hp_buf_init(&out, 1u << 30);
	ASSERT_EQ_INT(hp_store_dataset_csv(s, &out, &rows, &err), 0);
	ASSERT_EQ_INT(rows, added);
	ASSERT_EQ_INT(out.len, len);
	ASSERT(!memcmp(out.data, text, len));
	hp_buf_release(&out);
	/* A finished job's measured step. */
	job = add_job(s, 0);
	jm = (struct hp_store_measurement){.kind = HP_MEAS_JOB,
					   .job_id = job,
					   .device_type = "v100",
					   .ndevices = 4,
					   .batch = 64,
					   .step_time_s = 0.25,
					   .predicted_step_time_s = 0.2,
					   .energy_per_step_j = NAN,
					   .power_w = NAN,
					   .config = "{\"plan\": 1}",
					   .source = "job"};
	ASSERT_EQ_INT(hp_store_measurement_add(s, &jm, NULL, &err), 0);
	jm.job_id = 4242;
	ASSERT_EQ_INT(hp_store_measurement_add(s, &jm, NULL, &err), HP_ENOENT);
	jm.step_time_s = 0;
	ASSERT_EQ_INT(hp_store_measurement_add(s, &jm, NULL, &err), HP_EINVAL);
	ASSERT_EQ_INT(
	    hp_store_measurement_list(s, HP_MEAS_JOB, 0, 0, &l, &n, &err), 0);
	ASSERT_EQ_INT(n, 1);
	ASSERT_EQ_INT(l[0].job_id, job);
	ASSERT(isnan(l[0].energy_per_step_j));
	ASSERT(l[0].predicted_step_time_s == 0.2);
	hp_store_measurement_list_free(l, n);
	ASSERT_EQ_INT(
	    hp_store_measurement_list(s, HP_MEAS_PROFILE, 0, 5, &l, &n, &err),
	    0);
	ASSERT_EQ_INT(n, 5);
	ASSERT_STR_EQ(l[0].device_type, "cpu");
	ASSERT(l[0].batch >= 1 && l[0].step_time_s > 0);
	ASSERT(isnan(l[0].energy_per_step_j)); /* empty: not measured */
	hp_store_measurement_list_free(l, n);
	/* A bad row refuses the whole file. */
	{
		const char bad[] = "device,batch,step_time_s\ncpu,8,0.1\ncpu,"
				   "x,0.1\n";
		ASSERT_EQ_INT(hp_store_measurement_import_csv(
				  s, bad, strlen(bad), "bad.csv", &added, &err),
			      HP_EPARSE);
		ASSERT(strstr(err.msg, "bad.csv"));
		ASSERT(strstr(err.msg, "line 3"));
		ASSERT_EQ_INT(q1(path,
				 "SELECT count(*) FROM measurements WHERE "
				 "source = 'bad.csv'"),
			      0);
	}
	/* A column named twice would shadow the first in the stored row
	 * (found by fuzz_store_csv): refused. */
	{
		const char dup[] = "device,batch,step_time_s,step_time_s\n"
				   "cpu,8,0.1,\n";
		ASSERT_EQ_INT(hp_store_measurement_import_csv(
				  s, dup, strlen(dup), "dup.csv", &added, &err),
			      HP_EPARSE);
		ASSERT(strstr(err.msg, "'step_time_s'"));
		ASSERT(strstr(err.msg, "twice"));
	}
	{
		struct hp_store_metrics m;
		ASSERT_EQ_INT(hp_store_metrics(s, &m, &err), 0);
		ASSERT_EQ_INT(m.measurements, lines - 1 + 1);
		ASSERT_EQ_INT(m.jobs[HP_JOB_QUEUED], 1);
		ASSERT_EQ_INT(m.queue_len, 1);
		hp_store_metrics_release(&m);
	}
	free(text);
	hp_store_close(s);
	rm_db();
}

HP_TEST(store_datasets_and_estimator_versions)
{
	const char *path = tmp_db();
	struct hp_store *s = open_ok(path);
	struct hp_error err = {0};
	struct hp_store_dataset d = {.name = "mnist-local",
				     .path = "/data/mnist",
				     .size = 1234},
				*dl;
	struct hp_store_estimator e = {0}, cur, *el;
	int n;

	ASSERT_EQ_INT(hp_store_dataset_add(s, &d, NULL, &err), 0);
	ASSERT_EQ_INT(hp_store_dataset_add(s, &d, NULL, &err), HP_EEXIST);
	d.name = "../etc";
	ASSERT_EQ_INT(hp_store_dataset_add(s, &d, NULL, &err), HP_EINVAL);
	d.name = "rel";
	d.path = "relative/path";
	ASSERT_EQ_INT(hp_store_dataset_add(s, &d, NULL, &err), HP_EINVAL);
	{
		struct hp_store_dataset got;
		ASSERT_EQ_INT(
		    hp_store_dataset_get(s, "mnist-local", &got, &err), 0);
		ASSERT_STR_EQ(got.path, "/data/mnist");
		ASSERT_EQ_INT(got.size, 1234);
		ASSERT(got.sha256 == NULL);
		hp_store_dataset_release(&got);
	}
	ASSERT_EQ_INT(hp_store_dataset_list(s, &dl, &n, &err), 0);
	ASSERT_EQ_INT(n, 1);
	hp_store_dataset_list_free(dl, n);
	{
		/* a job reads it: not removed until the job has ended; a
		 * job on a dataset that is not registered is not added */
		struct hp_store_job_new in = {.description = "{}",
					      .data = "mnist-local"};
		int64_t jid = 0;
		ASSERT_EQ_INT(hp_store_job_add(s, &in, &jid, &err), 0);
		ASSERT_EQ_INT(hp_store_dataset_remove(s, "mnist-local", &err),
			      HP_EBUSY);
		ASSERT(strstr(err.msg, "not ended") != NULL);
		ASSERT_EQ_INT(hp_store_job_transition(s, jid, HP_JOB_CANCELLED,
						      "cancelled", &err),
			      0);
		in.data = "never-registered";
		ASSERT_EQ_INT(hp_store_job_add(s, &in, &jid, &err), HP_EINVAL);
		ASSERT(strstr(err.msg, "never-registered") != NULL);
	}
	ASSERT_EQ_INT(hp_store_dataset_remove(s, "mnist-local", &err), 0);
	ASSERT_EQ_INT(hp_store_dataset_remove(s, "mnist-local", &err),
		      HP_ENOENT);

	ASSERT_EQ_INT(hp_store_estimator_current(s, &cur, &err), HP_ENOENT);
	e.body = "{\"v\": 1}";
	e.fitted_on = "{\"rows\": 10}";
	e.measurements_upto = 10;
	ASSERT_EQ_INT(hp_store_estimator_add(s, &e, NULL, &err), 0);
	e.body = "{\"v\": 2}";
	e.validation = "{\"mape\": 0.1}";
	e.measurements_upto = 20;
	ASSERT_EQ_INT(hp_store_estimator_add(s, &e, NULL, &err), 0);
	ASSERT_EQ_INT(hp_store_estimator_current(s, &cur, &err), 0);
	ASSERT_STR_EQ(cur.body, "{\"v\": 2}");
	ASSERT_STR_EQ(cur.validation, "{\"mape\": 0.1}");
	ASSERT_EQ_INT(cur.measurements_upto, 20);
	hp_store_estimator_release(&cur);
	ASSERT_EQ_INT(hp_store_estimator_list(s, &el, &n, &err), 0);
	ASSERT_EQ_INT(n, 2);
	ASSERT(el[0].body == NULL);
	ASSERT_EQ_INT(el[0].measurements_upto, 20);
	ASSERT(el[1].validation == NULL);
	hp_store_estimator_list_free(el, n);
	hp_store_close(s);
	rm_db();
}

HP_TEST(store_metrics_count_devices_by_state)
{
	const char *path = tmp_db();
	struct hp_store *s = open_ok(path);
	struct hp_error err = {0};
	struct hp_store_metrics m;
	int64_t j;

	load_pool(s, "{\"nodes\": [" NODE_JSON(
			 "a", "{\"type\": \"v100\", \"count\": 4, \"free\": "
			      "3}") ", " NODE_JSON("b", "{\"type\": \"v100\", "
							"\"count\": 2}") "]}");
	j = add_job(s, 0);
	start_job(s, j, "a", "v100", 2);
	ASSERT_EQ_INT(hp_store_node_drain(s, "b", true, &err), 0);
	ASSERT_EQ_INT(hp_store_device_drain(s, "a", "v100", 2, true, &err), 0);
	ASSERT_EQ_INT(hp_store_metrics(s, &m, &err), 0);
	ASSERT_EQ_INT(m.ntypes, 1);
	ASSERT_STR_EQ(m.types[0].type, "v100");
	ASSERT_EQ_INT(m.types[0].total, 6);
	ASSERT_EQ_INT(m.types[0].allocated, 2);
	ASSERT_EQ_INT(m.types[0].drained, 3); /* b's two, a's device 2 */
	ASSERT_EQ_INT(m.types[0].reserved, 1);
	ASSERT_EQ_INT(m.types[0].free, 0);
	ASSERT_EQ_INT(m.nodes, 2);
	ASSERT_EQ_INT(m.nodes_drained, 1);
	ASSERT_EQ_INT(m.jobs[HP_JOB_STARTING], 1);
	ASSERT_EQ_INT(m.queue_len, 0);
	hp_store_metrics_release(&m);
	{
		struct hp_store_node nd;
		ASSERT_EQ_INT(hp_store_node_get(s, "a", &nd, &err), 0);
		ASSERT_EQ_INT(nd.devices[0].state, HP_DEV_ALLOCATED);
		ASSERT_EQ_INT(nd.devices[2].state, HP_DEV_DRAINED);
		ASSERT(nd.devices[2].drained);
		ASSERT_EQ_INT(nd.devices[3].state, HP_DEV_RESERVED);
		ASSERT_STR_EQ(hp_dev_state_name(nd.devices[3].state),
			      "reserved");
		hp_store_node_release(&nd);
	}
	hp_store_close(s);
	rm_db();
}

HP_TEST(store_processes_opening_a_new_file_at_once_migrate_it_once)
{
	const char *path = tmp_db();
	pid_t pids[6];
	int fds[2];
	char go[6];

	/* The children wait on a pipe, so that they open at once. */
	ASSERT(pipe(fds) == 0);
	for (int i = 0; i < 6; i++) {
		pids[i] = fork();
		ASSERT(pids[i] >= 0);
		if (pids[i] == 0) {
			struct hp_error err = {0};
			struct hp_store *s;
			char c;

			close(fds[1]);
			if (read(fds[0], &c, 1) != 1)
				_exit(2);
			s = hp_store_open(path, NULL, &err);
			if (!s) {
				fprintf(stderr, "child %d: %s\n", i, err.msg);
				_exit(3);
			}
			if (add_job(s, 0) <= 0)
				_exit(4);
			hp_store_close(s);
			_exit(0);
		}
	}
	close(fds[0]);
	memset(go, 'g', sizeof(go));
	ASSERT(write(fds[1], go, sizeof(go)) == sizeof(go));
	close(fds[1]);
	for (int i = 0; i < 6; i++) {
		int st;
		ASSERT(waitpid(pids[i], &st, 0) == pids[i]);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			HP_FAIL("child %d ended with %d", i, st);
	}
	ASSERT_EQ_INT(q1(path, "SELECT count(*) FROM schema_migrations"),
		      HP_STORE_SCHEMA_VERSION);
	ASSERT_EQ_INT(q1(path, "PRAGMA user_version"), HP_STORE_SCHEMA_VERSION);
	ASSERT_EQ_INT(q1(path, "SELECT count(*) FROM jobs"), 6);
	check_invariants(path);
	rm_db();
}

/* A write that fails for want of storage (SQLITE_FULL: here the
 * connection's max_page_count, as a full disk gives it) is HP_ESTORAGE,
 * and the store says it does not take writes, with why, until a write
 * succeeds again (a probe that changes nothing, or any other). */
HP_TEST(store_full_disk_is_storage_and_recovers)
{
	const char *path = tmp_db();
	struct hp_store_options o = {.max_connections = 1, .no_sync = true};
	struct hp_store *s;
	struct hp_error err = {0};
	struct hp__conn *c;
	static char blob[1 << 20];
	char why[200], sql[64];

	ASSERT((s = hp_store_open(path, &o, &err)));
	ASSERT(hp_store_writable(s, why, sizeof(why)));
	ASSERT_EQ_INT(hp_store_probe_write(s, &err), 0);
	/* the one connection may grow the file by no page */
	ASSERT((c = hp__conn_get(s, &err)));
	snprintf(sql, sizeof(sql), "PRAGMA max_page_count = %lld;",
		 q1_on(c->db, "PRAGMA page_count"));
	ASSERT_EQ_INT(sqlite3_exec(c->db, sql, NULL, NULL, NULL), SQLITE_OK);
	hp__conn_put(s, c);
	memset(blob, 7, sizeof(blob));
	ASSERT_EQ_INT(hp_store_model_add(s, "big", HP_MODEL_SPEC, blob,
					 sizeof(blob), NULL, 0, NULL, &err),
		      HP_ESTORAGE);
	ASSERT(strstr(err.msg, "disk full"));
	ASSERT(!hp_store_writable(s, why, sizeof(why)));
	ASSERT(strstr(why, "disk full"));
	/* room again: the probe's write goes through and clears it */
	ASSERT((c = hp__conn_get(s, &err)));
	ASSERT_EQ_INT(sqlite3_exec(c->db, "PRAGMA max_page_count = 1073741823;",
				   NULL, NULL, NULL),
		      SQLITE_OK);
	hp__conn_put(s, c);
	ASSERT(!hp_store_writable(s, NULL, 0));
	ASSERT_EQ_INT(hp_store_probe_write(s, &err), 0);
	ASSERT(hp_store_writable(s, NULL, 0));
	ASSERT_EQ_INT(hp_store_model_add(s, "big", HP_MODEL_SPEC, blob,
					 sizeof(blob), NULL, 0, NULL, &err),
		      0);
	hp_store_close(s);
}

/* Each connection keeps the WAL under 64 MiB once checkpointed. */
HP_TEST(store_wal_size_is_bounded)
{
	const char *path = tmp_db();
	struct hp_store *s = open_ok(path);
	struct hp_error err = {0};
	struct hp__conn *c;

	ASSERT((c = hp__conn_get(s, &err)));
	ASSERT_EQ_INT(q1_on(c->db, "PRAGMA journal_size_limit"), 67108864);
	hp__conn_put(s, c);
	hp_store_close(s);
}
