/*
 * store.h - the system of record of a pool served by hetpoold: nodes and
 * their devices (free, allocated to a job, drained, reserved), which job
 * holds which device, the models users uploaded, jobs and their states,
 * access tokens (hashes only), measurements a refit needs, registered
 * datasets and the estimator versions fitted from them.  One SQLite
 * database file (WAL), schema versioned by numbered migrations
 * (docs/store.md has the schema and why the guarantees hold).
 *
 * Guarantees:
 *   - A call that returns 0 after writing has committed: with the default
 *     options (synchronous=FULL) the write survives a crash of the process
 *     or of the machine at any later moment.
 *   - A device is never allocated to two jobs: the database itself refuses
 *     it (a unique index on the live allocation rows), and allocation runs
 *     in one IMMEDIATE transaction that takes all the devices asked for or
 *     none.
 *   - A job that reaches a terminal state (succeeded, failed, cancelled)
 *     releases its devices in the same transaction (a trigger), and never
 *     leaves that state (a trigger refuses it).  hp_store_recover(), called
 *     at start, releases whatever a job that has ended, or is queued, still
 *     holds and lists the jobs that were starting or running.
 *   - A database written by a newer hetpool (schema version above
 *     HP_STORE_SCHEMA_VERSION) is refused, never altered.
 *
 * Threads: one struct hp_store may be used by any number of threads at
 * once.  It keeps a small pool of SQLite connections (multi-thread mode,
 * one connection used by one thread at a time, its prepared statements
 * cached); a call borrows one for its duration and gives it back.  Reads
 * never wait for writers (WAL); writers wait for each other at most
 * busy_timeout_s (then HP_EBUSY).  No lock is held across a call.  Several
 * processes may open the same file (tests do); one hetpoold per file is
 * the intended use.
 *
 * Errors: functions return 0 or a negative enum hp_err, with err (may be
 * NULL) holding a one-line lowercase message: HP_EINVAL bad argument,
 * HP_ENOENT no such node/job/model/token/..., HP_EEXIST a name already
 * taken, HP_EBUSY a device taken or a node in use (or the database locked
 * past the timeout), HP_ESTATE a state change that is not allowed,
 * HP_EUNSUPP a database newer than this code, HP_EIO the file or SQLite
 * failed, HP_ENOMEM.  Nothing here prints or exits.
 *
 * Ownership: hp_store_open() returns a handle the caller closes with
 * hp_store_close() once no thread uses it.  Every struct a function fills
 * is the caller's; its strings are heap copies released with the
 * struct's *_release() (lists: *_list_free(), which releases each element
 * and frees the array).  Strings passed in are copied; the caller keeps
 * them.  Times are Unix time in seconds (wall clock, double); 0 means
 * "not yet" or "none".  Measured numbers that were not measured are NaN.
 */
#ifndef HETPOOL_STORE_H
#define HETPOOL_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hetpool/deploy.h"
#include "hetpool/device.h"
#include "hetpool/pool.h"
#include "hetpool/util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The schema this code reads and writes (PRAGMA user_version). */
#define HP_STORE_SCHEMA_VERSION 5

/* ---- opening */

struct hp_store_options {
	int max_connections;   /* connections kept for threads (default 8);
				  a call waits when all are busy */
	double busy_timeout_s; /* how long a writer waits for another
				  (default 10) */
	bool no_sync;	       /* synchronous=NORMAL: a commit survives the
				  process's crash but may be lost with the
				  machine's (default off: FULL) */
	bool read_only;	       /* open without writing (no migration; a
				  database older than the code is refused) */
};

struct hp_store;

/*
 * Open (create when missing) the database at path, migrate it to
 * HP_STORE_SCHEMA_VERSION (each migration in its own transaction,
 * recorded in the schema_migrations table), turn WAL and foreign keys on.
 * o may be NULL (defaults).  NULL with err set: HP_EUNSUPP "database
 * 'PATH' has schema version N; this hetpool (V) knows versions up to M: use
 * a newer hetpool", HP_EINVAL when it is another program's SQLite
 * database ("... is not a hetpool store"), HP_EIO when the file cannot be
 * opened or is not a database.
 */
struct hp_store *hp_store_open(const char *path,
			       const struct hp_store_options *o,
			       struct hp_error *err);
/*
 * Whether the store's storage takes writes: false (why filled, n bytes)
 * when the last write failed for want of it (disk full, or the file
 * became read-only: HP_ESTORAGE) and none has succeeded since.  Cheap:
 * no I/O.
 */
bool hp_store_writable(struct hp_store *s, char *why, size_t n);
/* A write that changes nothing (the schema version set again), to learn
 * whether storage takes writes again: 0, or HP_ESTORAGE and the like.
 * After a full disk it is not tried until the database's filesystem has
 * 8 MiB free again (HP_ESTORAGE saying how much it has). */
int hp_store_probe_write(struct hp_store *s, struct hp_error *err);

/* Close every connection (the WAL is checkpointed); NULL is a no-op. No
 * call may be in flight. */
void hp_store_close(struct hp_store *s);
/* The path it was opened with. */
const char *hp_store_path(const struct hp_store *s);
/* The schema version of an existing database file without opening it as a
 * store (0: an empty file), or a negative code (HP_EIO: missing or not a
 * database). */
int hp_store_file_version(const char *path, struct hp_error *err);

/* ---- nodes and devices */

enum hp_dev_state {
	HP_DEV_FREE = 0,
	HP_DEV_ALLOCATED = 1, /* held by a job (job_id) */
	HP_DEV_DRAINED = 2,   /* the device or its node is drained: no new
				 job gets it */
	HP_DEV_RESERVED = 3,  /* taken outside hetpool (a pool file's
				 "free" below "count") */
};
const char *hp_dev_state_name(enum hp_dev_state s);

/* One device: the index is its ordinal among the node's devices of that
 * type (the CUDA ordinal for a GPU), 0..count-1. */
struct hp_store_device {
	char type[HP_TYPE_MAX];
	int index;
	enum hp_dev_state state; /* allocated wins over drained and
				    reserved */
	bool drained;		 /* the device itself (not its node) */
	int64_t job_id;		 /* HP_DEV_ALLOCATED: the job; else 0 */
};

struct hp_store_node {
	int64_t id;
	struct hp_pool_node pool; /* name, devices by type (count; free as
				     hp_store_pool() counts it), links,
				     transport, power: as the pool file
				     has them */
	bool drained;
	bool self;  /* this host's own registration */
	char *info; /* JSON text given at registration (this host's
		       detected figures), or NULL */
	struct hp_store_device *devices; /* every device, by type then
					    index */
	int ndevices;
	double created_s, updated_s;
};
void hp_store_node_release(struct hp_store_node *n);
void hp_store_node_list_free(struct hp_store_node *nodes, int n);

/*
 * Register a node, or update the node of that name: its figures, and its
 * devices to n->devs (a type's count may grow; it may shrink, or a type
 * go, only where no device that would go is allocated: else HP_EBUSY and
 * nothing changes).  A type's count - free devices (the highest indices
 * not allocated) are marked reserved, the others not.  Checks: name 1-63
 * bytes without control characters, 1-HP_POOL_MAX_KINDS distinct types of
 * 1-HP_POOL_MAX_DEVICES devices, free within 0..count, cpu_cores 1 or
 * more, memory and bandwidths finite and above 0, latency and power
 * finite and not negative, net_transport one of enum hp_net_transport
 * (parse the node with hp_pool_parse() and the catalog first for the pool
 * file's ranges and type names).  info: JSON text or NULL.  self: this is
 * the host hetpoold runs on (at most one node is; making another one self
 * clears the flag on the old one).  Drained flags are kept across an
 * update; so are the self flag and info when info is NULL and self false
 * (an operator's update of the host's own node).  *id (may be NULL) gets
 * the node's id.
 */
int hp_store_node_put(struct hp_store *s, const struct hp_pool_node *n,
		      const char *info, bool self, int64_t *id,
		      struct hp_error *err);
/* Remove a node and its devices: HP_EBUSY when one is allocated,
 * HP_ENOENT when there is no such node. */
int hp_store_node_remove(struct hp_store *s, const char *name,
			 struct hp_error *err);
/* Drain (no new job gets its devices; jobs holding them keep them) or
 * resume a node. */
int hp_store_node_drain(struct hp_store *s, const char *name, bool drained,
			struct hp_error *err);
/* Drain or resume one device of a node. */
int hp_store_device_drain(struct hp_store *s, const char *node,
			  const char *type, int index, bool drained,
			  struct hp_error *err);
/* One node by name (HP_ENOENT), or every node in the order registered. */
int hp_store_node_get(struct hp_store *s, const char *name,
		      struct hp_store_node *out, struct hp_error *err);
int hp_store_node_list(struct hp_store *s, struct hp_store_node **out, int *n,
		       struct hp_error *err);
/* The node registered with self set: HP_ENOENT when none is. */
int hp_store_node_self(struct hp_store *s, struct hp_store_node *out,
		       struct hp_error *err);

/*
 * Load a pool (parsed from a pool file with the catalog) in one
 * transaction: every node put as hp_store_node_put() does, not self (a
 * node already registered keeps its self flag and info).
 * With replace, nodes not in the pool are removed (HP_EBUSY, and nothing
 * changes, when one of them holds an allocated device).
 */
int hp_store_pool_load(struct hp_store *s, const struct hp_pool *p,
		       bool replace, struct hp_error *err);
/*
 * The pool as the recommender sees it now, the same struct the pool file
 * parser makes: the nodes in the order registered, on each its types in
 * the order given, count every device of the type, free those neither
 * allocated, drained (nor on a drained node) nor reserved.  One read
 * transaction, so the counts are consistent with each other.  The caller
 * frees it (hp_pool_free()); path is "".  A store without nodes gives a
 * pool with n == 0.  NULL with err set on failure.
 */
struct hp_pool *hp_store_pool(struct hp_store *s, struct hp_error *err);

/* ---- models */

enum hp_model_kind {
	HP_MODEL_ONNX = 0,
	HP_MODEL_SPEC = 1, /* a hetpool spec (JSON) */
};
const char *hp_model_kind_name(enum hp_model_kind k);

struct hp_store_model {
	int64_t id;
	char *name;
	enum hp_model_kind kind;
	char sha256[65]; /* of the bytes, lowercase hex */
	int64_t size;	 /* bytes */
	char *features;	 /* the analysed features (JSON text), or NULL */
	int64_t owner;	 /* token id of the uploader; 0 none */
	double created_s;
	void *data; /* the bytes, when asked for (hp_store_model_get's
		       with_data); else NULL */
};
void hp_store_model_release(struct hp_store_model *m);
void hp_store_model_list_free(struct hp_store_model *m, int n);

/* Store a model's bytes (len 1 to INT32_MAX) with its name (1-255 bytes,
 * no control characters) and analysed features (JSON text or NULL); the
 * SHA-256 is computed here.  owner: a token id or 0 (HP_ENOENT when no
 * such token).  *id (may be NULL) gets its id. */
int hp_store_model_add(struct hp_store *s, const char *name,
		       enum hp_model_kind kind, const void *data, size_t len,
		       const char *features, int64_t owner, int64_t *id,
		       struct hp_error *err);
/* A model by id (HP_ENOENT); its bytes too when with_data. */
int hp_store_model_get(struct hp_store *s, int64_t id, bool with_data,
		       struct hp_store_model *out, struct hp_error *err);
/* Every model, without its bytes, oldest first. */
int hp_store_model_list(struct hp_store *s, struct hp_store_model **out, int *n,
			struct hp_error *err);
/* Remove a model: HP_EBUSY while a job refers to it. */
int hp_store_model_remove(struct hp_store *s, int64_t id, struct hp_error *err);

/* ---- jobs */

/* What a submission carries; strings are copied. */
struct hp_store_job_new {
	int64_t owner;		 /* token id that submits it; 0 none */
	const char *name;	 /* the user's label, or NULL */
	const char *description; /* the job description as accepted (JSON
				    text; required) */
	int64_t model_id;	 /* a stored model, or 0 (spec inline) */
	const char *data;	 /* dataset name (required) */
	const char *settings;	 /* training settings (JSON text) or NULL */
	enum hp_backend backend;
	double deadline_at_s;	     /* must end by; 0 none */
	double predicted_start_at_s; /* 0 unknown */
	double predicted_end_at_s;   /* 0 unknown */
	const char *plan;	     /* the recommendation (JSON) or NULL */
	const char *reason;	     /* why it waits, or NULL */
};

struct hp_store_job {
	int64_t id;
	int64_t owner;
	char *name; /* NULL when none */
	enum hp_job_state state;
	char *reason; /* why it failed, was cancelled or waits; NULL */
	char *description;
	int64_t model_id;
	char *data;
	char *settings; /* NULL when none */
	enum hp_backend backend;
	char *plan; /* NULL when none */
	double deadline_at_s;
	double predicted_start_at_s, predicted_end_at_s;
	double created_s, updated_s, started_s, ended_s;
	bool cancel_requested;
	char *deploy_id;  /* lib/deploy's job id, NULL until launched */
	char *deploy_dir; /* its job directory, NULL until launched */
	int ndevices;	  /* devices it holds now */
};
void hp_store_job_release(struct hp_store_job *j);
void hp_store_job_list_free(struct hp_store_job *jobs, int n);

/* Add a job, queued; 0 only once committed.  *id gets its id (ids are
 * never reused). */
int hp_store_job_add(struct hp_store *s, const struct hp_store_job_new *in,
		     int64_t *id, struct hp_error *err);
/* A job by id: HP_ENOENT when there is none. */
int hp_store_job_get(struct hp_store *s, int64_t id, struct hp_store_job *out,
		     struct hp_error *err);

/* Which jobs to list.  Zero-filled: every job, oldest first. */
struct hp_store_job_filter {
	unsigned states;  /* bit (1u << state) per state wanted; 0 all */
	int64_t owner;	  /* 0 any */
	int64_t after_id; /* paging: ids above (oldest first) or below
			     (newest first) this one; 0 from the start */
	int limit;	  /* most returned; 0 no limit */
	bool newest_first;
};
int hp_store_job_list(struct hp_store *s, const struct hp_store_job_filter *f,
		      struct hp_store_job **out, int *n, struct hp_error *err);
/* The queue: queued jobs in the order they start (by id). */
int hp_store_queue(struct hp_store *s, struct hp_store_job **out, int *n,
		   struct hp_error *err);

/* Fields hp_store_job_update() writes (bits of patch.fields). */
enum {
	HP_JOB_F_PLAN = 1u << 0,
	HP_JOB_F_REASON = 1u << 1,
	HP_JOB_F_PREDICTED = 1u << 2, /* predicted start and end */
	HP_JOB_F_DEPLOY = 1u << 3,    /* deploy_id and deploy_dir */
	HP_JOB_F_BACKEND = 1u << 4,
};
struct hp_store_job_patch {
	unsigned fields;
	const char *plan, *reason, *deploy_id, *deploy_dir; /* NULL clears */
	double predicted_start_at_s, predicted_end_at_s;
	enum hp_backend backend;
};
/* Write the fields named in p->fields (any state; the reason only while
 * the job has not ended: an ended job's reason is the one its end gave). */
int hp_store_job_update(struct hp_store *s, int64_t id,
			const struct hp_store_job_patch *p,
			struct hp_error *err);

/*
 * Move a job to state `to` with a reason (NULL keeps the old one).
 * Allowed: queued -> starting, failed, cancelled; starting -> queued
 * (back in the queue: its devices are released), running, failed,
 * cancelled; running -> succeeded, failed, cancelled.  Anything else,
 * and any move out of a terminal state, is HP_ESTATE with a message
 * naming both states; nothing changes.  Entering starting requires
 * devices (hp_store_job_start() does both at once); entering running
 * sets started_s, a terminal state ended_s and releases every device in
 * the same transaction.
 */
int hp_store_job_transition(struct hp_store *s, int64_t id,
			    enum hp_job_state to, const char *reason,
			    struct hp_error *err);

/* Devices of one type on one node wanted by a job. */
struct hp_store_devreq {
	const char *node;
	const char *type;
	int count; /* >= 1 */
	int index; /* -1: any free ones (lowest indices first); >= 0:
		      exactly that device (count must be 1) */
};
/* A device a job holds or held. */
struct hp_store_alloc {
	int64_t job_id;
	char node[HP_NAME_MAX];
	char type[HP_TYPE_MAX];
	int index;
	double allocated_s, released_s; /* released_s 0: still held */
};
void hp_store_alloc_list_free(struct hp_store_alloc *a, int n);

/*
 * Give job the devices asked for, in one IMMEDIATE transaction: all of
 * them or none.  The job must be queued or starting (HP_ESTATE); each
 * node and type must exist (HP_ENOENT); HP_EBUSY when a device asked for
 * is allocated (also to this job), drained, reserved or on a drained node,
 * or a node has fewer free devices of the type than asked.  *out / *nout
 * (both may be NULL) get what was allocated.
 */
int hp_store_allocate(struct hp_store *s, int64_t job,
		      const struct hp_store_devreq *req, int nreq,
		      struct hp_store_alloc **out, int *nout,
		      struct hp_error *err);
/* Release every device job holds (none held is not an error). *n (may
 * be NULL) gets how many were released. */
int hp_store_release(struct hp_store *s, int64_t job, int *n,
		     struct hp_error *err);
/*
 * Start a queued job: allocate as hp_store_allocate() and move it to
 * starting, with its plan (NULL keeps the one it has), in one
 * transaction; nothing changes on failure.
 */
int hp_store_job_start(struct hp_store *s, int64_t job,
		       const struct hp_store_devreq *req, int nreq,
		       const char *plan, struct hp_store_alloc **out, int *nout,
		       struct hp_error *err);
/*
 * Cancel a job.  Queued: cancelled at once (*state gets
 * HP_JOB_CANCELLED).  Starting or running: cancel_requested is set and
 * the state stays (*state gets it); the caller stops the backend and then
 * moves the job to cancelled.  Ended: HP_ESTATE.  owner non-zero: the job
 * must be that owner's (else HP_ENOENT, as if it did not exist).  state
 * may be NULL.
 */
int hp_store_job_cancel(struct hp_store *s, int64_t id, int64_t owner,
			const char *reason, enum hp_job_state *state,
			struct hp_error *err);
/*
 * Remove an ended job's row (its allocations with it; its measurements
 * stay, no longer tied to a job).  owner: 0 any, else the job must be
 * theirs (HP_ENOENT otherwise, as for no such job).  HP_ESTATE while it
 * has not ended.  Its folder is the caller's to remove (deploy_dir).
 */
int hp_store_job_remove(struct hp_store *s, int64_t id, int64_t owner,
			struct hp_error *err);
/* The ids (at most max, into ids) of jobs that ended before before_s,
 * oldest first: what a retention policy removes. */
int hp_store_jobs_ended_before(struct hp_store *s, double before_s, int max,
			       int64_t *ids, int *n, struct hp_error *err);
/* The devices a job holds (live_only) or ever held, in allocation order. */
int hp_store_job_devices(struct hp_store *s, int64_t job, bool live_only,
			 struct hp_store_alloc **out, int *n,
			 struct hp_error *err);

/* What hp_store_recover() did and found. */
struct hp_store_recovery {
	int released;		     /* allocations released: of jobs that
					ended, were queued or are missing */
	struct hp_store_job *active; /* jobs starting or running: re-attach
					to them or move them to failed */
	int nactive;
};
void hp_store_recovery_release(struct hp_store_recovery *r);
/*
 * Call once at start, before serving: in one transaction, release every
 * live allocation whose job is missing, has ended or is queued, then list
 * the jobs that were starting or running.
 */
int hp_store_recover(struct hp_store *s, struct hp_store_recovery *out,
		     struct hp_error *err);

/* ---- tokens */

enum hp_role {
	HP_ROLE_READER = 0,
	HP_ROLE_USER = 1,
	HP_ROLE_ADMIN = 2,
};
const char *hp_role_name(enum hp_role r);
int hp_role_parse(const char *s, enum hp_role *out);

/* A token's text: "hpt_" and 64 lowercase hex digits (256 random bits). */
#define HP_TOKEN_LEN 68
/* Shortest token text hp_store_token_ensure() accepts. */
#define HP_TOKEN_MIN_LEN 16

struct hp_store_token {
	int64_t id;
	char *name;
	enum hp_role role;
	double created_s;
	double revoked_s;   /* 0: in force */
	double last_used_s; /* 0: never (updated at most once a minute) */
};
void hp_store_token_release(struct hp_store_token *t);
void hp_store_token_list_free(struct hp_store_token *t, int n);

/*
 * Make a token: 256 bits from getrandom(), written as text into token
 * (HP_TOKEN_LEN + 1 bytes, NUL-terminated).  Only its SHA-256 is stored;
 * the text is shown to the caller once and cannot be recovered.  name:
 * 1-63 bytes, no control characters; names need not be unique.  *id may
 * be NULL.
 */
int hp_store_token_create(struct hp_store *s, const char *name,
			  enum hp_role role, char token[HP_TOKEN_LEN + 1],
			  int64_t *id, struct hp_error *err);
/*
 * Make sure a token given from outside (HETPOOL_ADMIN_TOKEN) exists with
 * this name and role: added when its hash is not stored, its role and
 * name set when it is; HP_ESTATE when it was revoked; HP_EINVAL when
 * shorter than HP_TOKEN_MIN_LEN.
 */
int hp_store_token_ensure(struct hp_store *s, const char *name,
			  enum hp_role role, const char *token, int64_t *id,
			  struct hp_error *err);
/*
 * Who a token is: its SHA-256 is looked up, and the stored hash compared
 * with it in constant time.  HP_ENOENT "unknown or revoked token" (the
 * same for both).  out may be NULL.
 */
int hp_store_token_verify(struct hp_store *s, const char *token,
			  struct hp_store_token *out, struct hp_error *err);
int hp_store_token_list(struct hp_store *s, struct hp_store_token **out, int *n,
			struct hp_error *err);
/* Revoke a token (at once, for every later verify): HP_ENOENT when there
 * is none; revoking twice is not an error. */
int hp_store_token_revoke(struct hp_store *s, int64_t id, struct hp_error *err);

/* ---- measurements */

enum hp_meas_kind {
	HP_MEAS_PROFILE = 0, /* a profiler row (docs/dataset.md) */
	HP_MEAS_JOB = 1,     /* a finished job's measured step */
};

struct hp_store_measurement {
	int64_t id;
	enum hp_meas_kind kind;
	int64_t job_id;	    /* HP_MEAS_JOB: the job; else 0 */
	char *device_type;  /* catalog id ("cpu" for a CPU host) */
	int ndevices;	    /* devices the step ran on (1 for a profile) */
	int64_t batch;	    /* samples per step per device */
	double step_time_s; /* measured (median) */
	double predicted_step_time_s; /* what the estimator said; NaN */
	double energy_per_step_j;     /* NaN: not measured */
	double power_w;		      /* NaN: not measured */
	/* HP_MEAS_PROFILE: the CSV row as a JSON object {column: text};
	   HP_MEAS_JOB: the job's configuration (JSON), e.g. the plan */
	char *config;
	char *source; /* where it came from (a file name, "job 12"), NULL */
	double created_s;
};
void hp_store_measurement_release(struct hp_store_measurement *m);
void hp_store_measurement_list_free(struct hp_store_measurement *m, int n);

/* Add one measurement (id, created_s are ignored); *id may be NULL.
 * HP_EINVAL unless device_type and config are given, ndevices and batch
 * are 1 or more, step_time_s is above 0 and an HP_MEAS_JOB names its job
 * (HP_ENOENT when there is no such job). */
int hp_store_measurement_add(struct hp_store *s,
			     const struct hp_store_measurement *m, int64_t *id,
			     struct hp_error *err);
/*
 * Add every row of a profiler CSV (docs/dataset.md; header line first) as
 * HP_MEAS_PROFILE, in one transaction: all rows or none.  Each row needs
 * device, batch and step_time_s (energy_per_step_j and power_w empty: not
 * measured); a bad row is HP_EPARSE naming its line.  source names the
 * input in messages and in the rows.  *added may be NULL.
 */
int hp_store_measurement_import_csv(struct hp_store *s, const char *text,
				    size_t len, const char *source, int *added,
				    struct hp_error *err);
/* Measurements of a kind (kind < 0: all) with ids above after_id, oldest
 * first, at most limit (0: no limit). */
int hp_store_measurement_list(struct hp_store *s, int kind, int64_t after_id,
			      int limit, struct hp_store_measurement **out,
			      int *n, struct hp_error *err);
/*
 * Write the profile measurements as a profiler CSV (docs/dataset.md) to
 * out, for hp_estimator_fit(): the columns are those of the rows in the
 * order first seen.  *rows (may be NULL) gets how many rows were written;
 * with none, out is left empty (no header).
 */
int hp_store_dataset_csv(struct hp_store *s, struct hp_buf *out, int *rows,
			 struct hp_error *err);

/* ---- datasets the trainer can read, by name */

struct hp_store_dataset {
	int64_t id;
	char *name;   /* 1-63 bytes of [A-Za-z0-9._-] */
	char *path;   /* absolute */
	char *sha256; /* of the data as registered, or NULL */
	int64_t size; /* bytes, or -1 unknown */
	double created_s;
};
void hp_store_dataset_release(struct hp_store_dataset *d);
void hp_store_dataset_list_free(struct hp_store_dataset *d, int n);
/* Register a dataset (HP_EEXIST when the name is taken). */
int hp_store_dataset_add(struct hp_store *s, const struct hp_store_dataset *d,
			 int64_t *id, struct hp_error *err);
int hp_store_dataset_get(struct hp_store *s, const char *name,
			 struct hp_store_dataset *out, struct hp_error *err);
int hp_store_dataset_list(struct hp_store *s, struct hp_store_dataset **out,
			  int *n, struct hp_error *err);
int hp_store_dataset_remove(struct hp_store *s, const char *name,
			    struct hp_error *err);

/* ---- estimator versions */

struct hp_store_estimator {
	int64_t id;
	char *body;	  /* the estimator file (JSON text) */
	char *fitted_on;  /* what it was fitted on (JSON text), or NULL */
	char *validation; /* validation errors (JSON text), or NULL */
	char *provenance; /* hp_estimator's provenance line, or NULL */
	int64_t measurements_upto; /* the highest measurement id it saw */
	double created_s;
};
void hp_store_estimator_release(struct hp_store_estimator *e);
void hp_store_estimator_list_free(struct hp_store_estimator *e, int n);
/* Record a fitted estimator (id, created_s ignored); the newest is the
 * current one. */
int hp_store_estimator_add(struct hp_store *s,
			   const struct hp_store_estimator *e, int64_t *id,
			   struct hp_error *err);
/* The newest one: HP_ENOENT when none was recorded. */
int hp_store_estimator_current(struct hp_store *s,
			       struct hp_store_estimator *out,
			       struct hp_error *err);
/* Every version, newest first, without their bodies (body NULL). */
int hp_store_estimator_list(struct hp_store *s, struct hp_store_estimator **out,
			    int *n, struct hp_error *err);

/* ---- metrics */

/* Devices of one type over the pool, by state (drained includes devices
 * on drained nodes; allocated wins). */
struct hp_store_type_count {
	char type[HP_TYPE_MAX];
	int total, free, allocated, drained, reserved;
};
struct hp_store_metrics {
	struct hp_store_type_count *types; /* by type name */
	int ntypes;
	long jobs[HP_JOB_CANCELLED + 1]; /* by enum hp_job_state */
	long queue_len;			 /* jobs[HP_JOB_QUEUED] */
	int nodes, nodes_drained;
	long measurements, models, tokens_active;
};
void hp_store_metrics_release(struct hp_store_metrics *m);
/* Every count from one read transaction. */
int hp_store_metrics(struct hp_store *s, struct hp_store_metrics *out,
		     struct hp_error *err);

#ifdef __cplusplus
}
#endif
#endif /* HETPOOL_STORE_H */
