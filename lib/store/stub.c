/*
 * stub.c - the store's API before its implementation lands: every call
 * fails with HP_EUNSUPP, so programs written against store.h link.
 */
#include <stdlib.h>

#include "hetpool/store.h"
#include "util/banned.h"

struct hp_store {
	char *path;
};

void hp_store_close(struct hp_store *s)
{
	if (!s)
		return;
	free(s->path);
	free(s);
}

const char *hp_store_path(const struct hp_store *s)
{
	return s->path;
}

struct hp_store *hp_store_open(const char *path,
			       const struct hp_store_options *o,
			       struct hp_error *err)
{
	(void)path;
	(void)o;
	(void)err;
	hp_error_set(err, HP_EUNSUPP, "hp_store_open: not implemented yet");
	return NULL;
}

int hp_store_file_version(const char *path, struct hp_error *err)
{
	(void)path;
	(void)err;
	return hp_error_set(err, HP_EUNSUPP,
			    "hp_store_file_version: not implemented yet");
}

int hp_store_node_put(struct hp_store *s, const struct hp_pool_node *n,
		      const char *info, bool self, int64_t *id,
		      struct hp_error *err)
{
	(void)s;
	(void)n;
	(void)info;
	(void)self;
	(void)id;
	(void)err;
	return hp_error_set(err, HP_EUNSUPP,
			    "hp_store_node_put: not implemented yet");
}

int hp_store_node_remove(struct hp_store *s, const char *name,
			 struct hp_error *err)
{
	(void)s;
	(void)name;
	(void)err;
	return hp_error_set(err, HP_EUNSUPP,
			    "hp_store_node_remove: not implemented yet");
}

int hp_store_node_drain(struct hp_store *s, const char *name, bool drained,
			struct hp_error *err)
{
	(void)s;
	(void)name;
	(void)drained;
	(void)err;
	return hp_error_set(err, HP_EUNSUPP,
			    "hp_store_node_drain: not implemented yet");
}

int hp_store_device_drain(struct hp_store *s, const char *node,
			  const char *type, int index, bool drained,
			  struct hp_error *err)
{
	(void)s;
	(void)node;
	(void)type;
	(void)index;
	(void)drained;
	(void)err;
	return hp_error_set(err, HP_EUNSUPP,
			    "hp_store_device_drain: not implemented yet");
}

int hp_store_node_get(struct hp_store *s, const char *name,
		      struct hp_store_node *out, struct hp_error *err)
{
	(void)s;
	(void)name;
	(void)out;
	(void)err;
	return hp_error_set(err, HP_EUNSUPP,
			    "hp_store_node_get: not implemented yet");
}

int hp_store_node_list(struct hp_store *s, struct hp_store_node **out, int *n,
		       struct hp_error *err)
{
	(void)s;
	(void)out;
	(void)n;
	(void)err;
	return hp_error_set(err, HP_EUNSUPP,
			    "hp_store_node_list: not implemented yet");
}

int hp_store_node_self(struct hp_store *s, struct hp_store_node *out,
		       struct hp_error *err)
{
	(void)s;
	(void)out;
	(void)err;
	return hp_error_set(err, HP_EUNSUPP,
			    "hp_store_node_self: not implemented yet");
}

int hp_store_pool_load(struct hp_store *s, const struct hp_pool *p,
		       bool replace, struct hp_error *err)
{
	(void)s;
	(void)p;
	(void)replace;
	(void)err;
	return hp_error_set(err, HP_EUNSUPP,
			    "hp_store_pool_load: not implemented yet");
}

struct hp_pool *hp_store_pool(struct hp_store *s, struct hp_error *err)
{
	(void)s;
	(void)err;
	hp_error_set(err, HP_EUNSUPP, "hp_store_pool: not implemented yet");
	return NULL;
}

int hp_store_model_add(struct hp_store *s, const char *name,
		       enum hp_model_kind kind, const void *data, size_t len,
		       const char *features, int64_t owner, int64_t *id,
		       struct hp_error *err)
{
	(void)s;
	(void)name;
	(void)kind;
	(void)data;
	(void)len;
	(void)features;
	(void)owner;
	(void)id;
	(void)err;
	return hp_error_set(err, HP_EUNSUPP,
			    "hp_store_model_add: not implemented yet");
}

int hp_store_model_get(struct hp_store *s, int64_t id, bool with_data,
		       struct hp_store_model *out, struct hp_error *err)
{
	(void)s;
	(void)id;
	(void)with_data;
	(void)out;
	(void)err;
	return hp_error_set(err, HP_EUNSUPP,
			    "hp_store_model_get: not implemented yet");
}

int hp_store_model_list(struct hp_store *s, struct hp_store_model **out, int *n,
			struct hp_error *err)
{
	(void)s;
	(void)out;
	(void)n;
	(void)err;
	return hp_error_set(err, HP_EUNSUPP,
			    "hp_store_model_list: not implemented yet");
}

int hp_store_model_remove(struct hp_store *s, int64_t id, struct hp_error *err)
{
	(void)s;
	(void)id;
	(void)err;
	return hp_error_set(err, HP_EUNSUPP,
			    "hp_store_model_remove: not implemented yet");
}

int hp_store_job_add(struct hp_store *s, const struct hp_store_job_new *in,
		     int64_t *id, struct hp_error *err)
{
	(void)s;
	(void)in;
	(void)id;
	(void)err;
	return hp_error_set(err, HP_EUNSUPP,
			    "hp_store_job_add: not implemented yet");
}

int hp_store_job_get(struct hp_store *s, int64_t id, struct hp_store_job *out,
		     struct hp_error *err)
{
	(void)s;
	(void)id;
	(void)out;
	(void)err;
	return hp_error_set(err, HP_EUNSUPP,
			    "hp_store_job_get: not implemented yet");
}

int hp_store_job_list(struct hp_store *s, const struct hp_store_job_filter *f,
		      struct hp_store_job **out, int *n, struct hp_error *err)
{
	(void)s;
	(void)f;
	(void)out;
	(void)n;
	(void)err;
	return hp_error_set(err, HP_EUNSUPP,
			    "hp_store_job_list: not implemented yet");
}

int hp_store_queue(struct hp_store *s, struct hp_store_job **out, int *n,
		   struct hp_error *err)
{
	(void)s;
	(void)out;
	(void)n;
	(void)err;
	return hp_error_set(err, HP_EUNSUPP,
			    "hp_store_queue: not implemented yet");
}

int hp_store_job_update(struct hp_store *s, int64_t id,
			const struct hp_store_job_patch *p,
			struct hp_error *err)
{
	(void)s;
	(void)id;
	(void)p;
	(void)err;
	return hp_error_set(err, HP_EUNSUPP,
			    "hp_store_job_update: not implemented yet");
}

int hp_store_job_transition(struct hp_store *s, int64_t id,
			    enum hp_job_state to, const char *reason,
			    struct hp_error *err)
{
	(void)s;
	(void)id;
	(void)to;
	(void)reason;
	(void)err;
	return hp_error_set(err, HP_EUNSUPP,
			    "hp_store_job_transition: not implemented yet");
}

int hp_store_allocate(struct hp_store *s, int64_t job,
		      const struct hp_store_devreq *req, int nreq,
		      struct hp_store_alloc **out, int *nout,
		      struct hp_error *err)
{
	(void)s;
	(void)job;
	(void)req;
	(void)nreq;
	(void)out;
	(void)nout;
	(void)err;
	return hp_error_set(err, HP_EUNSUPP,
			    "hp_store_allocate: not implemented yet");
}

int hp_store_job_start(struct hp_store *s, int64_t job,
		       const struct hp_store_devreq *req, int nreq,
		       const char *plan, struct hp_store_alloc **out, int *nout,
		       struct hp_error *err)
{
	(void)s;
	(void)job;
	(void)req;
	(void)nreq;
	(void)plan;
	(void)out;
	(void)nout;
	(void)err;
	return hp_error_set(err, HP_EUNSUPP,
			    "hp_store_job_start: not implemented yet");
}

int hp_store_job_cancel(struct hp_store *s, int64_t id, int64_t owner,
			const char *reason, enum hp_job_state *state,
			struct hp_error *err)
{
	(void)s;
	(void)id;
	(void)owner;
	(void)reason;
	(void)state;
	(void)err;
	return hp_error_set(err, HP_EUNSUPP,
			    "hp_store_job_cancel: not implemented yet");
}

int hp_store_job_devices(struct hp_store *s, int64_t job, bool live_only,
			 struct hp_store_alloc **out, int *n,
			 struct hp_error *err)
{
	(void)s;
	(void)job;
	(void)live_only;
	(void)out;
	(void)n;
	(void)err;
	return hp_error_set(err, HP_EUNSUPP,
			    "hp_store_job_devices: not implemented yet");
}

int hp_store_recover(struct hp_store *s, struct hp_store_recovery *out,
		     struct hp_error *err)
{
	(void)s;
	(void)out;
	(void)err;
	return hp_error_set(err, HP_EUNSUPP,
			    "hp_store_recover: not implemented yet");
}

int hp_store_token_create(struct hp_store *s, const char *name,
			  enum hp_role role, char token[HP_TOKEN_LEN + 1],
			  int64_t *id, struct hp_error *err)
{
	(void)s;
	(void)name;
	(void)role;
	(void)token;
	(void)id;
	(void)err;
	return hp_error_set(err, HP_EUNSUPP,
			    "hp_store_token_create: not implemented yet");
}

int hp_store_token_ensure(struct hp_store *s, const char *name,
			  enum hp_role role, const char *token, int64_t *id,
			  struct hp_error *err)
{
	(void)s;
	(void)name;
	(void)role;
	(void)token;
	(void)id;
	(void)err;
	return hp_error_set(err, HP_EUNSUPP,
			    "hp_store_token_ensure: not implemented yet");
}

int hp_store_token_verify(struct hp_store *s, const char *token,
			  struct hp_store_token *out, struct hp_error *err)
{
	(void)s;
	(void)token;
	(void)out;
	(void)err;
	return hp_error_set(err, HP_EUNSUPP,
			    "hp_store_token_verify: not implemented yet");
}

int hp_store_token_list(struct hp_store *s, struct hp_store_token **out, int *n,
			struct hp_error *err)
{
	(void)s;
	(void)out;
	(void)n;
	(void)err;
	return hp_error_set(err, HP_EUNSUPP,
			    "hp_store_token_list: not implemented yet");
}

int hp_store_token_revoke(struct hp_store *s, int64_t id, struct hp_error *err)
{
	(void)s;
	(void)id;
	(void)err;
	return hp_error_set(err, HP_EUNSUPP,
			    "hp_store_token_revoke: not implemented yet");
}

int hp_store_measurement_add(struct hp_store *s,
			     const struct hp_store_measurement *m, int64_t *id,
			     struct hp_error *err)
{
	(void)s;
	(void)m;
	(void)id;
	(void)err;
	return hp_error_set(err, HP_EUNSUPP,
			    "hp_store_measurement_add: not implemented yet");
}

int hp_store_measurement_import_csv(struct hp_store *s, const char *text,
				    size_t len, const char *source, int *added,
				    struct hp_error *err)
{
	(void)s;
	(void)text;
	(void)len;
	(void)source;
	(void)added;
	(void)err;
	return hp_error_set(
	    err, HP_EUNSUPP,
	    "hp_store_measurement_import_csv: not implemented yet");
}

int hp_store_measurement_list(struct hp_store *s, int kind, int64_t after_id,
			      int limit, struct hp_store_measurement **out,
			      int *n, struct hp_error *err)
{
	(void)s;
	(void)kind;
	(void)after_id;
	(void)limit;
	(void)out;
	(void)n;
	(void)err;
	return hp_error_set(err, HP_EUNSUPP,
			    "hp_store_measurement_list: not implemented yet");
}

int hp_store_dataset_csv(struct hp_store *s, struct hp_buf *out, int *rows,
			 struct hp_error *err)
{
	(void)s;
	(void)out;
	(void)rows;
	(void)err;
	return hp_error_set(err, HP_EUNSUPP,
			    "hp_store_dataset_csv: not implemented yet");
}

int hp_store_dataset_add(struct hp_store *s, const struct hp_store_dataset *d,
			 int64_t *id, struct hp_error *err)
{
	(void)s;
	(void)d;
	(void)id;
	(void)err;
	return hp_error_set(err, HP_EUNSUPP,
			    "hp_store_dataset_add: not implemented yet");
}

int hp_store_dataset_get(struct hp_store *s, const char *name,
			 struct hp_store_dataset *out, struct hp_error *err)
{
	(void)s;
	(void)name;
	(void)out;
	(void)err;
	return hp_error_set(err, HP_EUNSUPP,
			    "hp_store_dataset_get: not implemented yet");
}

int hp_store_dataset_list(struct hp_store *s, struct hp_store_dataset **out,
			  int *n, struct hp_error *err)
{
	(void)s;
	(void)out;
	(void)n;
	(void)err;
	return hp_error_set(err, HP_EUNSUPP,
			    "hp_store_dataset_list: not implemented yet");
}

int hp_store_dataset_remove(struct hp_store *s, const char *name,
			    struct hp_error *err)
{
	(void)s;
	(void)name;
	(void)err;
	return hp_error_set(err, HP_EUNSUPP,
			    "hp_store_dataset_remove: not implemented yet");
}

int hp_store_estimator_add(struct hp_store *s,
			   const struct hp_store_estimator *e, int64_t *id,
			   struct hp_error *err)
{
	(void)s;
	(void)e;
	(void)id;
	(void)err;
	return hp_error_set(err, HP_EUNSUPP,
			    "hp_store_estimator_add: not implemented yet");
}

int hp_store_estimator_current(struct hp_store *s,
			       struct hp_store_estimator *out,
			       struct hp_error *err)
{
	(void)s;
	(void)out;
	(void)err;
	return hp_error_set(err, HP_EUNSUPP,
			    "hp_store_estimator_current: not implemented yet");
}

int hp_store_estimator_list(struct hp_store *s, struct hp_store_estimator **out,
			    int *n, struct hp_error *err)
{
	(void)s;
	(void)out;
	(void)n;
	(void)err;
	return hp_error_set(err, HP_EUNSUPP,
			    "hp_store_estimator_list: not implemented yet");
}

int hp_store_metrics(struct hp_store *s, struct hp_store_metrics *out,
		     struct hp_error *err)
{
	(void)s;
	(void)out;
	(void)err;
	return hp_error_set(err, HP_EUNSUPP,
			    "hp_store_metrics: not implemented yet");
}
