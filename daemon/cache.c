/*
 * cache.c - what every recommendation reads, kept between requests: the
 * stored models analysed at batch 1 (a model never changes once stored),
 * and the pool as the store has it, reloaded only after something
 * changed devices or nodes (every such write in this server bumps a
 * generation after it commits).  Entries are counted: a request holds
 * its own reference, so an entry replaced meanwhile stays whole until
 * the request lets go.  The lock covers only the lookup, never the
 * analysis, the database or the search.
 */
#include <stdlib.h>
#include <string.h>

#include "hetpoold.h"

#define NMODELS ((int)(sizeof(((struct hd *)0)->models) / sizeof(void *)))

void hd_model_put(struct hd_model *m)
{
	if (m && atomic_fetch_sub(&m->refs, 1) == 1) {
		hp_workload_release(&m->w1);
		free(m->name);
		free(m);
	}
}

int hd_spec_workload(const char *spec, struct hp_workload *out,
		     struct hp_error *err)
{
	struct hp_graph *g = hp_spec_parse(spec, strlen(spec), err);
	int rc;

	if (!g)
		return err->code ? err->code : HP_EINVAL;
	rc = hp_workload_from_graph(g, 1, NULL, 0, out, err);
	hp_graph_free(g);
	return rc;
}

static int analyse(struct hd *d, int64_t id, struct hd_model **out,
		   struct hp_error *err)
{
	struct hp_store_model sm = {0};
	struct hp_graph *g;
	struct hd_model *m;
	int rc;

	if ((rc = hp_store_model_get(d->store, id, true, &sm, err)))
		return rc;
	g = sm.kind == HP_MODEL_ONNX
		? hp_onnx_parse(sm.data, (size_t)sm.size, err)
		: hp_spec_parse(sm.data, (size_t)sm.size, err);
	if (!g) {
		hp_error_prefix(err, "model %lld", (long long)id);
		rc = err->code ? err->code : HP_EINVAL;
		goto out;
	}
	if (!(m = calloc(1, sizeof(*m)))) {
		hp_graph_free(g);
		rc = hp_error_set(err, HP_ENOMEM, "out of memory");
		goto out;
	}
	atomic_init(&m->refs, 1);
	m->id = id;
	m->name = hp_strdup(sm.name ? sm.name : "");
	rc = hp_workload_from_graph(g, 1, NULL, 0, &m->w1, err);
	hp_graph_free(g);
	if (rc) {
		hp_error_prefix(err, "model %lld", (long long)id);
		free(m->name);
		free(m);
		goto out;
	}
	*out = m;
out:
	hp_store_model_release(&sm);
	return rc;
}

int hd_model_get(struct hd *d, int64_t id, struct hd_model **out,
		 struct hp_error *err)
{
	struct hd_model *m = NULL, *old = NULL;
	int rc;

	pthread_mutex_lock(&d->cache_mu);
	for (int i = 0; i < NMODELS; i++)
		if (d->models[i] && d->models[i]->id == id) {
			m = d->models[i];
			atomic_fetch_add(&m->refs, 1);
			break;
		}
	pthread_mutex_unlock(&d->cache_mu);
	if (m) {
		*out = m;
		return 0;
	}
	if ((rc = analyse(d, id, &m, err)))
		return rc;
	pthread_mutex_lock(&d->cache_mu);
	{
		/* a free slot, else the one the id hashes to */
		int slot = (int)((uint64_t)id % NMODELS);
		for (int i = 0; i < NMODELS; i++)
			if (!d->models[i]) {
				slot = i;
				break;
			}
		old = d->models[slot];
		d->models[slot] = m;
		atomic_fetch_add(&m->refs, 1); /* the cache's */
	}
	pthread_mutex_unlock(&d->cache_mu);
	hd_model_put(old);
	*out = m;
	return 0;
}

void hd_model_forget(struct hd *d, int64_t id)
{
	struct hd_model *old = NULL;

	pthread_mutex_lock(&d->cache_mu);
	for (int i = 0; i < NMODELS; i++)
		if (d->models[i] && d->models[i]->id == id) {
			old = d->models[i];
			d->models[i] = NULL;
		}
	pthread_mutex_unlock(&d->cache_mu);
	hd_model_put(old);
}

void hd_pool_put(struct hd_pool *p)
{
	if (p && atomic_fetch_sub(&p->refs, 1) == 1) {
		hp_pool_free(p->pool);
		free(p);
	}
}

int hd_pool_get(struct hd *d, struct hd_pool **out, struct hp_error *err)
{
	uint64_t gen = atomic_load(&d->pool_gen);
	struct hd_pool *p = NULL, *old = NULL;

	pthread_mutex_lock(&d->cache_mu);
	if (d->pool_cache && d->pool_cache->gen == gen) {
		p = d->pool_cache;
		atomic_fetch_add(&p->refs, 1);
	}
	pthread_mutex_unlock(&d->cache_mu);
	if (p) {
		*out = p;
		return 0;
	}
	if (!(p = calloc(1, sizeof(*p))))
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	if (!(p->pool = hp_store_pool(d->store, err))) {
		free(p);
		return err->code ? err->code : HP_EIO;
	}
	p->gen = gen;
	atomic_init(&p->refs, 1);
	pthread_mutex_lock(&d->cache_mu);
	if (!d->pool_cache || d->pool_cache->gen <= gen) {
		old = d->pool_cache;
		d->pool_cache = p;
		atomic_fetch_add(&p->refs, 1);
	}
	pthread_mutex_unlock(&d->cache_mu);
	hd_pool_put(old);
	*out = p;
	return 0;
}

void hd_pool_changed(struct hd *d)
{
	atomic_fetch_add(&d->pool_gen, 1);
}

/* ---- job documents */

#define HD_JOBDOC_TTL_S 1.0

struct hd_jobdoc {
	int64_t id;
	char *text;
	size_t len;
	double expires; /* hp_now_s(); 0: never (an ended job) */
};

#define NJOBDOCS 1024
static struct hd_jobdoc jobdocs[NJOBDOCS];
static pthread_rwlock_t jobdocs_lk = PTHREAD_RWLOCK_INITIALIZER;
static atomic_uint_fast64_t jobdocs_gen;
static bool jobdocs_off;

void hd_jobdoc_disable(void)
{
	jobdocs_off = true;
}

uint64_t hd_jobdoc_gen(void)
{
	return atomic_load(&jobdocs_gen);
}

char *hd_jobdoc_get(int64_t id, size_t *len)
{
	struct hd_jobdoc *e = &jobdocs[(uint64_t)id % NJOBDOCS];
	char *copy = NULL;

	if (jobdocs_off)
		return NULL;
	pthread_rwlock_rdlock(&jobdocs_lk);
	if (e->id == id && e->text &&
	    (e->expires == 0 || hp_now_s() < e->expires) &&
	    (copy = malloc(e->len + 1))) {
		memcpy(copy, e->text, e->len + 1);
		*len = e->len;
	}
	pthread_rwlock_unlock(&jobdocs_lk);
	return copy;
}

void hd_jobdoc_put(int64_t id, const char *text, size_t len, bool ended,
		   uint64_t gen)
{
	struct hd_jobdoc *e = &jobdocs[(uint64_t)id % NJOBDOCS];
	char *copy;

	if (jobdocs_off || !(copy = malloc(len + 1)))
		return;
	memcpy(copy, text, len);
	copy[len] = '\0';
	pthread_rwlock_wrlock(&jobdocs_lk);
	/* a write since the document was read from the store: it may be
	 * stale, so it is not kept */
	if (atomic_load(&jobdocs_gen) != gen) {
		pthread_rwlock_unlock(&jobdocs_lk);
		free(copy);
		return;
	}
	free(e->text);
	e->id = id;
	e->text = copy;
	e->len = len;
	e->expires = ended ? 0 : hp_now_s() + HD_JOBDOC_TTL_S;
	pthread_rwlock_unlock(&jobdocs_lk);
}

void hd_job_changed(int64_t id)
{
	struct hd_jobdoc *e = &jobdocs[(uint64_t)id % NJOBDOCS];

	pthread_rwlock_wrlock(&jobdocs_lk);
	atomic_fetch_add(&jobdocs_gen, 1);
	if (e->id == id) {
		free(e->text);
		e->text = NULL;
		e->id = 0;
	}
	pthread_rwlock_unlock(&jobdocs_lk);
}

void hd_jobdoc_clear(void)
{
	pthread_rwlock_wrlock(&jobdocs_lk);
	atomic_fetch_add(&jobdocs_gen, 1);
	for (int i = 0; i < NJOBDOCS; i++) {
		free(jobdocs[i].text);
		jobdocs[i].text = NULL;
		jobdocs[i].id = 0;
	}
	pthread_rwlock_unlock(&jobdocs_lk);
}
