/*
 * hetpoold.h - what the parts of hetpoold share: the server's state, the
 * route table and its handlers, answers, authentication, metrics,
 * structured logs and the scheduler.  hetpoold is a thin program over
 * libhetpool (ctx, store, deploy, api): HTTP in server.c, one file per
 * group of routes (h_*.c), the jobs' life in sched.c.
 */
#ifndef HETPOOLD_H
#define HETPOOLD_H

#include <jansson.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hetpool/api.h"
#include "hetpool/ctx.h"
#include "hetpool/deploy.h"
#include "hetpool/store.h"
#include "hetpool/util.h"

/* ---- configuration (main.c) */

struct hd_config {
	char listen_host[256];
	int port;
	const char *db;
	const char *pool; /* loaded at start, or NULL */
	bool register_self;
	const char *tls_cert, *tls_key;
	bool insecure;
	const char *jobs_dir; /* absolute */
	const char *data_dir; /* models and refit files; absolute */
	const char *catalog, *estimator;
	const char *hetpool; /* the CLI program the job's helpers run as */
	const char *trainer;
	enum hp_backend backend;
	bool no_apply;		/* kubernetes: write the manifests only */
	const char *k8s_volume; /* kubernetes: the outputs' claim; NULL: none */
	int threads;
	int max_connections;
	double idle_timeout_s;
	double request_timeout_s;
	size_t max_body;     /* JSON bodies */
	size_t max_upload;   /* models, measurements */
	double poll_s;	     /* how often running jobs are looked at */
	double keep_ended_s; /* ended jobs older than this are removed, with
				their folders; 0: kept for ever */
	double shutdown_grace_s;
	enum hp_log_level log_level;
	bool no_sync;
	const char *web_dir; /* the dashboard's files (absolute), or NULL */
};

/* ---- roles and who asks */

enum hd_role {
	HD_PUBLIC = -1, /* no token needed */
	HD_READER = 0,	/* = HP_ROLE_READER */
	HD_USER = 1,
	HD_ADMIN = 2,
};

struct hd_who {
	bool known;
	int64_t token_id;
	enum hd_role role;
	char name[64];
};

/* ---- requests and answers */

struct hd;
struct hd_req;

struct hd_resp {
	int status;
	char *body; /* owned (free()) */
	size_t len;
	const char *ctype;
	char location[128];
	const char *allow;
	const char *www_auth;
	const char *xname; /* one more header, or NULL */
	char xvalue[64];
	const char *cache_control; /* NULL: no-store */
	const char *encoding;	   /* Content-Encoding, or NULL */
	bool web;		   /* a dashboard file: CSP and its kin */
};

typedef void (*hd_handler)(struct hd *d, struct hd_req *r, struct hd_resp *out);

/* Body kinds a route takes. */
enum hd_body {
	HD_BODY_NONE = 0, /* a body is refused */
	HD_BODY_JSON,	  /* application/json, at most max_body */
	HD_BODY_JSON_OPT, /* the same, or none */
	HD_BODY_JSON_BIG, /* application/json, at most max_upload */
	HD_BODY_MODEL,	  /* application/json or application/octet-stream
			     (ONNX), at most max_upload */
	HD_BODY_CSV,	  /* text/csv, at most max_upload */
};

struct hd_route {
	const char *method;
	const char *pattern; /* "/v1/jobs/{id}": {x} is one path segment */
	enum hd_role role;
	enum hd_body body;
	hd_handler fn;
	const char *summary; /* for --routes */
};

extern const struct hd_route hd_routes[];
extern const int hd_nroutes;

#define HD_MAX_PARAMS 2
#define HD_PARAM_MAX 128

struct hd_conn; /* a connection (server.c) */

struct hd_req {
	const struct hd_route *route;
	int route_index;
	struct MHD_Connection *mc;
	char method[8];
	const char *url;
	char params[HD_MAX_PARAMS][HD_PARAM_MAX];
	int nparams;
	struct hp_buf body;
	const char *ctype; /* the request's Content-Type */
	struct hd_who who;
	double t0; /* hp_now_s() at the first call */
	struct hd_conn *conn;
	unsigned long long id; /* X-Request-Id, and in the log's lines */
	bool answered;	       /* a response was queued */
	bool too_big;	       /* the body passed the route's limit */
	size_t dropped;
	int status;
};

/* The value of a query argument, or NULL. */
const char *hd_query(struct hd_req *r, const char *key);

/* Answers: each replaces what out held. */
void hd_json(struct hd_resp *out, int status, json_t *o); /* steals o */
void hd_text(struct hd_resp *out, int status, const char *ctype, char *body,
	     size_t len); /* takes body */
void hd_problem(struct hd_resp *out, int status, const char *type,
		const char *field, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
void hd_problem_from(struct hd_resp *out, const struct hp_api_problem *pb);
/* A library error as a problem: HP_ENOENT 404, HP_EBUSY/HP_EEXIST/
 * HP_ESTATE 409, HP_EINVAL/HP_EPARSE/HP_ERANGE 422 (the body was well
 * formed but cannot be done), else 500 (logged, not shown). */
void hd_problem_err(struct hd_resp *out, const struct hp_error *err);

/* JSON helpers: a string that may be NULL (null then), a number that may
 * be NaN (null then), an embedded JSON text (null when NULL or bad). */
json_t *hd_jstr(const char *s);
json_t *hd_jnum(double v);
json_t *hd_jtext(const char *text);

/* ---- authentication (auth.c) */

struct hd_auth;
struct hd_auth *hd_auth_new(struct hp_store *s);
void hd_auth_free(struct hd_auth *a);
/* Who the token is: 0, or HP_ENOENT (unknown or revoked). */
int hd_auth_verify(struct hd_auth *a, const char *tok, size_t len,
		   struct hd_who *who);
/* Forget what was verified (after a revocation). */
void hd_auth_flush(struct hd_auth *a);

/* ---- metrics (metrics.c) */

struct hd_metrics;
struct hd_metrics *hd_metrics_new(int nroutes);
void hd_metrics_free(struct hd_metrics *m);
/* One request: its route (-1: none matched), method, status, seconds. */
void hd_metrics_request(struct hd_metrics *m, int route, const char *method,
			int status, double seconds);
void hd_metrics_conn(struct hd_metrics *m, int delta);
void hd_metrics_slow_client(struct hd_metrics *m);
/* The Prometheus text exposition (the caller frees it). */
char *hd_metrics_render(struct hd *d);

/* ---- structured logs (log.c): one JSON object per line on stderr */

void hd_log_init(enum hp_log_level max);
/* msg, then key/value pairs ending with NULL: "key", "s:text",
 * "key", "i:12" ... The value's first two characters give its kind: s:
 * string, i: integer, f: number, b: true/false. */
void hd_log(enum hp_log_level level, const char *msg, ...);
bool hd_log_enabled(enum hp_log_level level);
/* The request this thread serves now (0: none): each log line written on
 * the thread carries it as request_id. */
void hd_log_set_request(unsigned long long id);

/* ---- caches of what recommendations read (cache.c) */

/* A model analysed at batch 1, shared by requests. */
struct hd_model {
	atomic_long refs;
	int64_t id;
	struct hp_workload w1;
	char *name;
};
void hd_model_put(struct hd_model *m);
/* The model with its workload (the cache's, or analysed now): 0, or
 * HP_ENOENT / the analysis's error. */
int hd_model_get(struct hd *d, int64_t id, struct hd_model **out,
		 struct hp_error *err);
void hd_model_forget(struct hd *d, int64_t id);
/* A spec analysed at batch 1 into out (hp_workload_release()). */
int hd_spec_workload(const char *spec, struct hp_workload *out,
		     struct hp_error *err);

/* The pool as the store has it now, shared by requests until a change. */
struct hd_pool {
	atomic_long refs;
	uint64_t gen;
	struct hp_pool *pool;
};
int hd_pool_get(struct hd *d, struct hd_pool **out, struct hp_error *err);
void hd_pool_put(struct hd_pool *p);
/* Something changed devices or nodes: the next reader reloads. */
void hd_pool_changed(struct hd *d);

/* The JSON documents of jobs (GET /v1/jobs/ID): a copy of the one kept
 * (the caller frees it), or NULL.  hd_jobdoc_gen() before reading the job
 * from the store; hd_jobdoc_put() keeps the document only when no job was
 * written meanwhile.  Every write to a job in this server is followed by
 * hd_job_changed(). */
uint64_t hd_jobdoc_gen(void);
char *hd_jobdoc_get(int64_t id, size_t *len);
void hd_jobdoc_put(int64_t id, const char *text, size_t len, bool ended,
		   uint64_t gen);
void hd_job_changed(int64_t id);
/* Remove an ended job: its folder (hp_deploy_remove()), then its row.
 * owner: 0 any, else the job must be theirs (HP_ENOENT).  HP_ESTATE while
 * it has not ended. */
int hd_job_remove(struct hd *d, int64_t id, int64_t owner,
		  struct hp_error *err);
void hd_jobdoc_clear(void);
/* Keep no documents (--no-cache: every GET reads the store). */
void hd_jobdoc_disable(void);

/* ---- the scheduler (sched.c) */

struct hd_sched;
int hd_sched_start(struct hd *d, struct hp_error *err);
void hd_sched_stop(struct hd *d);
/* Wake it: a job was added, cancelled, or devices changed. */
void hd_sched_kick(struct hd *d);
/*
 * Plan and queue or start a job described by j (already validated),
 * owned by who: the job is committed before this returns 0, with its id
 * in *id.  HP_EINVAL etc. with err for a job that can never run here (the
 * answer is 422).
 */
int hd_sched_submit(struct hd *d, const struct hp_api_job *j,
		    const struct hd_who *who, int64_t *id,
		    struct hp_error *err);
/* Append the job as the API shows it (JSON text) to out: 0 or HP_ENOMEM /
 * HP_ETOOBIG. */
int hd_job_render(struct hd *d, const struct hp_store_job *j,
		  struct hp_buf *out);
/* Recommend for j on the pool free now (or, all, every device not
 * drained): 0 with res filled (hp_rec_result_release()) and *pool the
 * pool used (hd_pool_put()). */
int hd_recommend(struct hd *d, const struct hp_api_job *j,
		 struct hp_rec_result *res, struct hd_pool **pool,
		 struct hp_error *err);

/* ---- the server's state */

struct hd_refit {
	pthread_mutex_t mu;
	bool running;
	double started_s, ended_s;
	char error[256];
	uint64_t version; /* the context's version it produced */
	pthread_t thread;
	bool joinable;
};

struct hd {
	struct hd_config cfg;
	struct MHD_Daemon *mhd;
	struct hp_store *store;
	struct hp_ctx *ctx;
	struct hp_deploy *deploy;
	struct hd_auth *auth;
	struct hd_metrics *metrics;
	struct hd_sched *sched;
	atomic_bool stopping;
	atomic_long inflight;
	double started_s; /* Unix time */
	/* caches */
	pthread_mutex_t cache_mu;
	struct hd_model *models[64];
	atomic_uint_fast64_t pool_gen;
	struct hd_pool *pool_cache;
	struct hd_refit refit;
	char self_name[HP_NAME_MAX]; /* this host's node name */
};

/* The server (server.c): the address and TLS files checked and read
 * first (before anything is opened), then the listening. */
int hd_server_prepare(struct hd *d, struct hp_error *err);
int hd_server_start(struct hd *d, struct hp_error *err);
/* The port it listens on (for --listen HOST:0). */
int hd_server_port(struct hd *d);
/* Stop accepting, let requests in flight finish (up to grace), stop. */
void hd_server_stop(struct hd *d);

/* The OpenAPI document (openapi.c, generated from daemon/openapi.json). */
extern const unsigned char hd_openapi_json[];
extern const size_t hd_openapi_json_len;

/* Handlers (h_*.c). */
void hd_h_healthz(struct hd *, struct hd_req *, struct hd_resp *);
void hd_h_metrics(struct hd *, struct hd_req *, struct hd_resp *);
void hd_h_openapi(struct hd *, struct hd_req *, struct hd_resp *);
void hd_h_whoami(struct hd *, struct hd_req *, struct hd_resp *);
void hd_h_nodes_list(struct hd *, struct hd_req *, struct hd_resp *);
void hd_h_nodes_add(struct hd *, struct hd_req *, struct hd_resp *);
void hd_h_node_get(struct hd *, struct hd_req *, struct hd_resp *);
void hd_h_node_patch(struct hd *, struct hd_req *, struct hd_resp *);
void hd_h_node_delete(struct hd *, struct hd_req *, struct hd_resp *);
void hd_h_pool_get(struct hd *, struct hd_req *, struct hd_resp *);
void hd_h_pool_load(struct hd *, struct hd_req *, struct hd_resp *);
/* The first node of p whose name cannot be a host name (the backends
 * reach nodes by it), with why in msg; -1 when every name is one.  For
 * POST /v1/nodes, POST /v1/pool and --pool. */
int hd_pool_bad_name(const struct hp_pool *p, char *msg, size_t n);
void hd_h_models_list(struct hd *, struct hd_req *, struct hd_resp *);
void hd_h_models_add(struct hd *, struct hd_req *, struct hd_resp *);
void hd_h_model_get(struct hd *, struct hd_req *, struct hd_resp *);
void hd_h_model_delete(struct hd *, struct hd_req *, struct hd_resp *);
void hd_h_recommend(struct hd *, struct hd_req *, struct hd_resp *);
void hd_h_jobs_list(struct hd *, struct hd_req *, struct hd_resp *);
void hd_h_jobs_submit(struct hd *, struct hd_req *, struct hd_resp *);
void hd_h_job_get(struct hd *, struct hd_req *, struct hd_resp *);
void hd_h_job_cancel(struct hd *, struct hd_req *, struct hd_resp *);
void hd_h_job_delete(struct hd *, struct hd_req *, struct hd_resp *);
void hd_h_job_logs(struct hd *, struct hd_req *, struct hd_resp *);
void hd_h_job_metrics(struct hd *, struct hd_req *, struct hd_resp *);
void hd_h_job_results(struct hd *, struct hd_req *, struct hd_resp *);
void hd_h_job_lrfind(struct hd *, struct hd_req *, struct hd_resp *);
void hd_h_meas_list(struct hd *, struct hd_req *, struct hd_resp *);
void hd_h_meas_add(struct hd *, struct hd_req *, struct hd_resp *);
void hd_h_estimator(struct hd *, struct hd_req *, struct hd_resp *);
void hd_h_refit(struct hd *, struct hd_req *, struct hd_resp *);
void hd_h_tokens_list(struct hd *, struct hd_req *, struct hd_resp *);
void hd_h_tokens_add(struct hd *, struct hd_req *, struct hd_resp *);
void hd_h_token_revoke(struct hd *, struct hd_req *, struct hd_resp *);
void hd_h_datasets_list(struct hd *, struct hd_req *, struct hd_resp *);
void hd_h_datasets_add(struct hd *, struct hd_req *, struct hd_resp *);
void hd_h_dataset_delete(struct hd *, struct hd_req *, struct hd_resp *);

/* ---- the dashboard (web.c) */

/* Whether a GET of url is the dashboard's ("/", "/index.html",
 * "/assets/..."): such paths are served by hd_web_serve, without a token. */
bool hd_web_path(const char *url);
/* Answer a GET of a dashboard path from cfg.web_dir. */
void hd_web_serve(struct hd *d, struct hd_req *r, struct hd_resp *out);

/* Stop the refit thread, if any (h_admin.c). */
void hd_refit_join(struct hd *d);

#endif
