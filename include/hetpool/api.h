/*
 * api.h - the hetpoold HTTP API's requests and errors, without HTTP: the
 * strict readers of every request body (the job description of
 * POST /v1/recommendations and POST /v1/jobs, tokens, node changes,
 * models, refits), the small pieces of a request the server reads
 * (Authorization: Bearer, Content-Type, ids and numbers in paths and
 * queries), and problem details (RFC 9457, application/problem+json) for
 * the answers to bad requests.  docs/daemon.md is the API reference.
 *
 * Strict means: a body is one JSON object (UTF-8, no duplicate keys, at
 * most HP_API_MAX_DEPTH deep); a key the route does not know is refused
 * by name; each value has its type (an integer is a JSON integer, not
 * 3.0) and its range; required keys are there and exclusive ones are not
 * given together.  A refused body fills a struct hp_api_problem with the
 * HTTP status to answer (400 for malformed or invalid bodies), a short
 * type ("malformed-json", "unknown-field", "missing-field",
 * "invalid-field", "conflicting-fields"), the field's path
 * ("constraints.devices") and one lowercase line saying what is wrong.
 *
 * Nothing here links libmicrohttpd, so the fuzz build (lib/ only) covers
 * every reader (tests/fuzz/fuzz_api_body.c, fuzz_api_http.c).
 *
 * Ownership: each *_parse() fills a caller-owned struct (released with
 * its *_release(); left empty on failure); functions returning char *
 * return text the caller frees.
 */
#ifndef HETPOOL_API_H
#define HETPOOL_API_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hetpool/recommend.h"
#include "hetpool/util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest JSON request body by default (hetpoold --max-body sets its own,
 * at most HP_API_BODY_CAP, the most the parsers take), deepest nesting a
 * body may have. */
#define HP_API_MAX_BODY (1u << 20)
#define HP_API_BODY_CAP (1u << 30)
#define HP_API_MAX_DEPTH 32
/* Largest id in a path (JSON numbers are exact up to 2^53). */
#define HP_API_MAX_ID ((int64_t)1 << 53)

/* ---- problem details */

struct hp_api_problem {
	int status;	  /* HTTP status: 4xx, or 5xx */
	char type[32];	  /* short name, e.g. "unknown-field" */
	char field[96];	  /* the field's path, or "" */
	char detail[320]; /* one lowercase line */
};

/*
 * Fill p (may be NULL) and return HP_EINVAL, so a reader can write
 * `return hp_api_fail(p, 400, "invalid-field", "batch", "...")`.  field
 * may be NULL.
 */
int hp_api_fail(struct hp_api_problem *p, int status, const char *type,
		const char *field, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* The reason phrase of an HTTP status ("Not Found"); "Error" if unknown. */
const char *hp_api_status_title(int status);
/*
 * The problem as application/problem+json text: {"type":
 * "urn:hetpool:problem:TYPE", "title": the status's reason phrase,
 * "status", "detail", "field" (when set), "instance" (when given: the
 * request's path)}.  Control characters in the detail are escaped by the
 * JSON encoder.  NULL on ENOMEM.
 */
char *hp_api_problem_json(const struct hp_api_problem *p, const char *instance);

/* ---- the job description (recommendations and jobs) */

enum hp_api_body {
	HP_API_RECOMMENDATION = 0, /* POST /v1/recommendations */
	HP_API_JOB = 1,		   /* POST /v1/jobs: + data, name, training */
};

/* Optional training settings of a job ("training": {...}); unset fields
 * are 0 (seed and warmup_steps -1). */
struct hp_api_training {
	double lr;		  /* (0, 1000] */
	char optimizer[8];	  /* "sgd", "adam" or "" */
	int64_t seed;		  /* >= 0, or -1 */
	int64_t warmup_steps;	  /* >= 0, or -1 */
	int64_t checkpoint_every; /* steps */
	double max_seconds;
	double stall_timeout_s; /* 0: the trainer's automatic limit */
	int threads;		/* per rank */
	int ranks;		/* CPU ranks when the plan is this host's CPU */
	/* "lr_range": {"lr_min", "lr_max"}: the job is a learning-rate range
	 * test (the rate rises exponentially from lr_min to lr_max over its
	 * steps, and it stops when the loss diverges); 0 0: an ordinary
	 * training run */
	double lr_range_min, lr_range_max;
};

/* Most bytes of an inline spec. */
#define HP_API_MAX_SPEC (256u << 10)

struct hp_api_job {
	int64_t model_id; /* a stored model, or 0 with spec */
	char *spec;	  /* the inline spec as compact JSON (owned), or NULL */
	int64_t samples;
	int64_t epochs, steps; /* exactly one is set */
	int64_t batch;	       /* global batch */
	double deadline_s;
	enum hp_lr_rule lr_rule; /* default linear */
	int64_t ref_batch;	 /* 0: batch */
	int front;		 /* 0, 2..HP_REC_FRONT_MAX; default 5 */
	double confidence;	 /* the quantile the deadline is judged on; 0:
				    the recommender's default */
	double input_rate;	 /* samples/s one host core prepares (the input
				    pipeline's ceiling); 0: not modelled */
	/* "constraints" */
	char device_type[32]; /* "" any */
	int devices;	      /* 0 any */
	int nodes;	      /* 0 any */
	/* jobs only */
	char data[64]; /* "fashion-mnist", "synthetic" or a dataset name */
	char name[64]; /* a label, or "" */
	struct hp_api_training training;
};

/*
 * Read a job description: {"model_id": ID} or {"spec": {...}} (one of
 * them), "samples", "epochs" or "steps" (one of them), "batch",
 * "deadline_s", and optionally "lr_rule", "ref_batch", "front",
 * "confidence" (0 < c < 1), "input_rate" (samples/s one host core
 * prepares: the input pipeline's ceiling, 0 < r <= 1e9),
 * "constraints": {"device_type", "devices", "nodes"}; for jobs also
 * "data" (required; [A-Za-z0-9._-], 1-63 characters), "name" and
 * "training": {"lr", "optimizer", "seed", "warmup_steps",
 * "checkpoint_every", "max_seconds", "threads", "ranks",
 * "lr_range": {"lr_min", "lr_max"}} (a range test: 0 < lr_min < lr_max
 * <= 1000, at least a factor 10 apart; no "lr" with it).  The spec is
 * checked with hp_spec_parse_only() (its message, under the field
 * "spec").  A batch larger than samples, or a ref_batch without a batch,
 * is refused.  0, or HP_EINVAL with pb filled (HP_ENOMEM: pb says 500).
 */
int hp_api_job_parse(const char *body, size_t len, enum hp_api_body kind,
		     struct hp_api_job *out, struct hp_api_problem *pb);
void hp_api_job_release(struct hp_api_job *j);
/* What was accepted, as JSON text in the request's own keys (only the
 * keys given or defaulted); hp_api_job_parse() reads it back the same.
 * NULL on ENOMEM. */
char *hp_api_job_json(const struct hp_api_job *j, enum hp_api_body kind);
/* The recommender's job for j (device_type points into j). */
void hp_api_job_rec(const struct hp_api_job *j, struct hp_rec_job *out);

/* ---- the other bodies */

/* POST /v1/tokens: {"name": 1-63 bytes, no control characters, "role":
 * "admin" | "user" | "reader"}. */
struct hp_api_token_req {
	char name[64];
	char role[8];
};
int hp_api_token_parse(const char *body, size_t len,
		       struct hp_api_token_req *out, struct hp_api_problem *pb);

/* PATCH /v1/nodes/NAME: {"state": "drained" | "active"}. */
int hp_api_node_patch_parse(const char *body, size_t len, bool *drained,
			    struct hp_api_problem *pb);

/*
 * POST /v1/nodes (one node) and POST /v1/pool (a pool file): the keys the
 * pool file knows, and no others, at every level ({"nodes": [...]}, each
 * node's, each device's); one_node: the body is a single node object.
 * "net_transport" must be one of hp_net_transport_name()'s names (the
 * problem names the field and the names); the other values are left to
 * hp_pool_parse() (ranges, catalog types).  0 or HP_EINVAL with pb.
 */
int hp_api_pool_check(const char *body, size_t len, bool one_node,
		      struct hp_api_problem *pb);

/* POST /v1/models with a JSON body: {"name": label, "spec": {...}}. */
struct hp_api_model_req {
	char name[64];
	char *spec; /* compact JSON (owned) */
};
int hp_api_model_parse(const char *body, size_t len,
		       struct hp_api_model_req *out, struct hp_api_problem *pb);
void hp_api_model_release(struct hp_api_model_req *m);

/* POST /v1/estimator/refit: {} or {"validate": bool (default true),
 * "family": "physical" | "linear"}. */
struct hp_api_refit_req {
	bool validate;
	char family[16]; /* "" the current estimator's */
};
int hp_api_refit_parse(const char *body, size_t len,
		       struct hp_api_refit_req *out, struct hp_api_problem *pb);

/* POST /v1/datasets: {"name": label, "path": an absolute folder path on
 * the server (1-1023 bytes, no control characters, no ".." segment)}. */
struct hp_api_dataset_req {
	char name[64];
	char path[1024];
};
int hp_api_dataset_parse(const char *body, size_t len,
			 struct hp_api_dataset_req *out,
			 struct hp_api_problem *pb);

/* ---- pieces of a request */

/*
 * The token of an Authorization header "Bearer TOKEN" (the scheme's case
 * ignored, one or more spaces, TOKEN of the RFC 6750 token68 characters,
 * 1-HP_API_MAX_TOKEN bytes): 0 with *tok and *len pointing into header,
 * or HP_EINVAL (missing, another scheme, bad characters).
 */
#define HP_API_MAX_TOKEN 256
int hp_api_bearer(const char *header, const char **tok, size_t *len);
/* Whether a bearer header can carry tok: 1-HP_API_MAX_TOKEN bytes of the
 * token68 characters (A-Z a-z 0-9 - . _ ~ + /, then = padding). */
bool hp_api_token_ok(const char *tok);
/* Whether a Content-Type header names the media type want (its case
 * ignored; parameters such as "; charset=utf-8" allowed; for JSON only a
 * charset of utf-8). */
bool hp_api_media_is(const char *content_type, const char *want);
/* A decimal id 1..HP_API_MAX_ID with no sign, blank or leading zero: 0
 * with *out, or HP_EINVAL. */
int hp_api_parse_id(const char *s, int64_t *out);
/* A name in a path or query (a node, a dataset, a label): 1-63 bytes of
 * [A-Za-z0-9._-]. */
bool hp_api_name_valid(const char *s);
/*
 * Decode a path or query value in place (libmicrohttpd's unescape
 * callback): each %HH to its byte, anything else (a lone %, %G1) as it is,
 * except %00, which stays the three characters "%00": decoded, a NUL would
 * end the string there (/v1/jobs/1%00x would name job 1).  Returns the new
 * length, strlen(s) afterwards; the result is never longer.
 */
size_t hp_api_unescape(char *s);

/*
 * The dashboard's file for a request path (hetpoold serves them at "/"):
 * "/" and "/index.html" are "index.html"; "/assets/NAME" is "assets/NAME"
 * when NAME is one segment of 1-128 bytes of [A-Za-z0-9._-], not starting
 * with a dot, without "..", ending in a known extension.  Returns the
 * file's media type (a static string) with its path relative to the
 * dashboard's folder in rel, or NULL (no such file: 404) with rel empty.
 */
#define HP_API_WEB_NAME_MAX 128
const char *hp_api_web_file(const char *path, char *rel, size_t n);

/* The SHA-256 of a token's text, as 64 lowercase hex digits. */
void hp_api_token_digest(const char *tok, size_t len, char hex[65]);
/* Whether n bytes of a and b are equal, in a time that does not depend
 * on where they differ. */
bool hp_api_ct_equal(const void *a, const void *b, size_t n);

#ifdef __cplusplus
}
#endif
#endif /* HETPOOL_API_H */
