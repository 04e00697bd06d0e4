/*
 * routes.c - every route hetpoold serves: method, path (a {name} is one
 * path segment), the least role it needs, the body it takes, the
 * handler.  docs/daemon.md and daemon/openapi.json describe the same
 * routes; tests/integration/openapi.py checks they agree with this table
 * (`hetpoold --routes` prints it).
 */
#include "hetpoold.h"

#define R(m, p, role, body, fn, what)                                          \
	{                                                                      \
		m, p, role, body, fn, what                                     \
	}

const struct hd_route hd_routes[] = {
    R("GET", "/healthz", HD_PUBLIC, HD_BODY_NONE, hd_h_healthz, "liveness"),
    R("GET", "/metrics", HD_PUBLIC, HD_BODY_NONE, hd_h_metrics,
      "Prometheus metrics"),
    R("GET", "/v1/openapi.json", HD_PUBLIC, HD_BODY_NONE, hd_h_openapi,
      "this API's OpenAPI 3 document"),
    R("GET", "/v1/whoami", HD_READER, HD_BODY_NONE, hd_h_whoami,
      "the token's name and role"),
    R("GET", "/v1/nodes", HD_READER, HD_BODY_NONE, hd_h_nodes_list,
      "list the nodes and their devices"),
    R("POST", "/v1/nodes", HD_ADMIN, HD_BODY_JSON, hd_h_nodes_add,
      "register (or update) a node"),
    R("GET", "/v1/nodes/{name}", HD_READER, HD_BODY_NONE, hd_h_node_get,
      "a node"),
    R("PATCH", "/v1/nodes/{name}", HD_ADMIN, HD_BODY_JSON, hd_h_node_patch,
      "drain or resume a node"),
    R("DELETE", "/v1/nodes/{name}", HD_ADMIN, HD_BODY_NONE, hd_h_node_delete,
      "remove a node"),
    R("GET", "/v1/pool", HD_READER, HD_BODY_NONE, hd_h_pool_get,
      "the pool as the recommender sees it now"),
    R("POST", "/v1/pool", HD_ADMIN, HD_BODY_JSON_BIG, hd_h_pool_load,
      "load a pool file"),
    R("GET", "/v1/models", HD_READER, HD_BODY_NONE, hd_h_models_list,
      "list the models"),
    R("POST", "/v1/models", HD_USER, HD_BODY_MODEL, hd_h_models_add,
      "store a model (ONNX or spec)"),
    R("GET", "/v1/models/{id}", HD_READER, HD_BODY_NONE, hd_h_model_get,
      "a model and its features"),
    R("DELETE", "/v1/models/{id}", HD_USER, HD_BODY_NONE, hd_h_model_delete,
      "remove a model (its owner, or an admin)"),
    R("POST", "/v1/recommendations", HD_READER, HD_BODY_JSON, hd_h_recommend,
      "recommend a configuration on the devices free now"),
    R("GET", "/v1/jobs", HD_READER, HD_BODY_NONE, hd_h_jobs_list,
      "list jobs (by state, user)"),
    R("POST", "/v1/jobs", HD_USER, HD_BODY_JSON, hd_h_jobs_submit,
      "submit a job"),
    R("GET", "/v1/jobs/{id}", HD_READER, HD_BODY_NONE, hd_h_job_get, "a job"),
    R("POST", "/v1/jobs/{id}/cancel", HD_USER, HD_BODY_NONE, hd_h_job_cancel,
      "cancel a job (its owner, or an admin)"),
    R("DELETE", "/v1/jobs/{id}", HD_USER, HD_BODY_NONE, hd_h_job_delete,
      "remove an ended job and its folder (its owner, or an admin)"),
    R("GET", "/v1/jobs/{id}/logs", HD_READER, HD_BODY_NONE, hd_h_job_logs,
      "a job's logs (the launcher's, or a rank's)"),
    R("GET", "/v1/jobs/{id}/metrics", HD_READER, HD_BODY_NONE, hd_h_job_metrics,
      "the trainer's per-step lines"),
    R("GET", "/v1/jobs/{id}/results", HD_READER, HD_BODY_NONE, hd_h_job_results,
      "the trainer's results"),
    R("GET", "/v1/jobs/{id}/lr-find", HD_READER, HD_BODY_NONE, hd_h_job_lrfind,
      "a range test's steps, fitted curves, interval and suggested rate"),
    R("GET", "/v1/measurements", HD_READER, HD_BODY_NONE, hd_h_meas_list,
      "list measurements"),
    R("POST", "/v1/measurements", HD_USER, HD_BODY_CSV, hd_h_meas_add,
      "add profiler rows (CSV)"),
    R("GET", "/v1/estimator", HD_READER, HD_BODY_NONE, hd_h_estimator,
      "the estimator in use: what it was fitted on, its errors"),
    R("POST", "/v1/estimator/refit", HD_ADMIN, HD_BODY_JSON_OPT, hd_h_refit,
      "refit the estimator and swap it in"),
    R("GET", "/v1/tokens", HD_ADMIN, HD_BODY_NONE, hd_h_tokens_list,
      "list tokens (never their text)"),
    R("POST", "/v1/tokens", HD_ADMIN, HD_BODY_JSON, hd_h_tokens_add,
      "create a token"),
    R("DELETE", "/v1/tokens/{id}", HD_ADMIN, HD_BODY_NONE, hd_h_token_revoke,
      "revoke a token"),
    R("GET", "/v1/datasets", HD_READER, HD_BODY_NONE, hd_h_datasets_list,
      "list registered datasets"),
    R("POST", "/v1/datasets", HD_ADMIN, HD_BODY_JSON, hd_h_datasets_add,
      "register a dataset folder on the server"),
    R("DELETE", "/v1/datasets/{name}", HD_ADMIN, HD_BODY_NONE,
      hd_h_dataset_delete, "forget a dataset"),
};

const int hd_nroutes = (int)(sizeof(hd_routes) / sizeof(hd_routes[0]));
