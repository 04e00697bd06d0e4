/*
 * ctx.c - the shared context: snapshots of catalog + estimator counted by
 * their readers, the current one swapped under a mutex.  A reader takes
 * the mutex only to count itself in (a pointer read and an increment);
 * the last reference to a snapshot frees it, whichever thread lets go.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "hetpool/ctx.h"
#include "util/banned.h"

/* The catalog, shared by the snapshots of one context. */
struct cat_ref {
	atomic_long refs;
	struct hp_catalog *cat;
};

struct hp_snap {
	atomic_long refs;
	uint64_t version;
	struct cat_ref *cat;
	struct hp_estimator *est; /* may be NULL */
};

struct hp_ctx {
	pthread_mutex_t mu;
	struct hp_snap *cur; /* the context's reference */
};

static void cat_ref_put(struct cat_ref *c)
{
	if (c &&
	    atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) == 1) {
		hp_catalog_free(c->cat);
		free(c);
	}
}

/* A snapshot of cat (one more reference) and est (taken), counted once
 * for the caller; NULL on ENOMEM (est freed). */
static struct hp_snap *snap_new(struct cat_ref *cat, struct hp_estimator *est,
				uint64_t version)
{
	struct hp_snap *s = malloc(sizeof(*s));

	if (!s) {
		hp_estimator_free(est);
		return NULL;
	}
	atomic_init(&s->refs, 1);
	s->version = version;
	s->cat = cat;
	atomic_fetch_add_explicit(&cat->refs, 1, memory_order_relaxed);
	s->est = est;
	return s;
}

void hp_snap_release(const struct hp_snap *cs)
{
	struct hp_snap *s = (struct hp_snap *)cs;

	if (s &&
	    atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) == 1) {
		hp_estimator_free(s->est);
		cat_ref_put(s->cat);
		free(s);
	}
}

struct hp_ctx *hp_ctx_new(const struct hp_ctx_options *o, struct hp_error *err)
{
	struct hp_ctx_options none = {0};
	struct hp_estimator *est = NULL;
	struct cat_ref *cat;
	struct hp_ctx *ctx;

	if (!o)
		o = &none;
	if (!(cat = calloc(1, sizeof(*cat))) ||
	    !(ctx = calloc(1, sizeof(*ctx)))) {
		free(cat);
		hp_error_set(err, HP_ENOMEM, "out of memory");
		return NULL;
	}
	atomic_init(&cat->refs, 1);
	if (!(cat->cat = hp_ctx_load_catalog(o->catalog, NULL, err)) ||
	    (!o->no_estimator &&
	     !(est = hp_ctx_load_estimator(o->estimator, err))))
		goto fail;
	if (!(ctx->cur = snap_new(cat, est, 1))) {
		hp_error_set(err, HP_ENOMEM, "out of memory");
		goto fail;
	}
	cat_ref_put(cat); /* the snapshot holds it */
	if (pthread_mutex_init(&ctx->mu, NULL)) {
		hp_snap_release(ctx->cur);
		free(ctx);
		hp_error_set(err, HP_ENOMEM, "cannot make a mutex");
		return NULL;
	}
	return ctx;
fail:
	cat_ref_put(cat);
	free(ctx);
	return NULL;
}

void hp_ctx_free(struct hp_ctx *ctx)
{
	if (!ctx)
		return;
	hp_snap_release(ctx->cur);
	pthread_mutex_destroy(&ctx->mu);
	free(ctx);
}

const struct hp_snap *hp_ctx_acquire(struct hp_ctx *ctx)
{
	struct hp_snap *s;

	pthread_mutex_lock(&ctx->mu);
	s = ctx->cur;
	atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
	pthread_mutex_unlock(&ctx->mu);
	return s;
}

const struct hp_catalog *hp_snap_catalog(const struct hp_snap *s)
{
	return s->cat->cat;
}

const struct hp_estimator *hp_snap_estimator(const struct hp_snap *s)
{
	return s->est;
}

uint64_t hp_snap_version(const struct hp_snap *s)
{
	return s->version;
}

int hp_ctx_swap_estimator(struct hp_ctx *ctx, struct hp_estimator *est,
			  uint64_t *version, struct hp_error *err)
{
	struct hp_snap *old, *s;

	if (!est)
		return hp_error_set(err, HP_EINVAL, "no estimator to swap in");
	pthread_mutex_lock(&ctx->mu);
	old = ctx->cur;
	s = snap_new(old->cat, est, old->version + 1);
	if (s)
		ctx->cur = s;
	pthread_mutex_unlock(&ctx->mu);
	if (!s)
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	if (version)
		*version = s->version;
	/* Readers that acquired it keep it until they let go. */
	hp_snap_release(old);
	return 0;
}

int hp_ctx_refit(struct hp_ctx *ctx, const struct hp_fit_options *o,
		 uint64_t *version, struct hp_error *err)
{
	const struct hp_snap *s = hp_ctx_acquire(ctx);
	struct hp_error e2 = {0};
	struct hp_estimator *est = hp_estimator_fit(o, hp_snap_catalog(s), &e2);

	hp_snap_release(s);
	if (!est)
		return hp_error_set(err, e2.code ? e2.code : HP_EINVAL, "%s",
				    e2.msg);
	return hp_ctx_swap_estimator(ctx, est, version, err);
}

int hp_ctx_predict(struct hp_ctx *ctx, const struct hp_workload *w,
		   const char *device, int ndevices, int family,
		   struct hp_prediction *out, struct hp_error *err)
{
	const struct hp_snap *s = hp_ctx_acquire(ctx);
	int rc;

	if (!s->est)
		rc = hp_error_set(err, HP_EINVAL, "no estimator loaded");
	else
		rc = hp_estimator_predict(s->est, hp_snap_catalog(s), w, device,
					  ndevices, family, out, err);
	hp_snap_release(s);
	return rc;
}

int hp_ctx_recommend(struct hp_ctx *ctx, const struct hp_workload *w1,
		     const struct hp_pool *pool, const struct hp_rec_job *job,
		     struct hp_rec_result *out, struct hp_error *err)
{
	const struct hp_snap *s = hp_ctx_acquire(ctx);
	int rc;

	if (!s->est) {
		memset(out, 0, sizeof(*out));
		rc = hp_error_set(err, HP_EINVAL, "no estimator loaded");
	} else {
		rc = hp_recommend(s->est, hp_snap_catalog(s), w1, pool, job,
				  out, err);
	}
	hp_snap_release(s);
	return rc;
}
