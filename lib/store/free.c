/*
 * free.c - the store's names (device states, roles, model kinds) and the
 * release functions of the structs it fills.
 */
#include <stdlib.h>
#include <string.h>

#include "hetpool/store.h"
#include "util/banned.h"

const char *hp_dev_state_name(enum hp_dev_state s)
{
	switch (s) {
	case HP_DEV_FREE:
		return "free";
	case HP_DEV_ALLOCATED:
		return "allocated";
	case HP_DEV_DRAINED:
		return "drained";
	case HP_DEV_RESERVED:
		return "reserved";
	}
	return "?";
}

const char *hp_model_kind_name(enum hp_model_kind k)
{
	switch (k) {
	case HP_MODEL_ONNX:
		return "onnx";
	case HP_MODEL_SPEC:
		return "spec";
	}
	return "?";
}

static const char *const role_names[] = {"reader", "user", "admin"};

const char *hp_role_name(enum hp_role r)
{
	if ((unsigned)r < sizeof(role_names) / sizeof(role_names[0]))
		return role_names[r];
	return "?";
}

int hp_role_parse(const char *s, enum hp_role *out)
{
	for (int i = 0; i < (int)(sizeof(role_names) / sizeof(role_names[0]));
	     i++)
		if (s && !strcmp(s, role_names[i])) {
			*out = (enum hp_role)i;
			return 0;
		}
	return HP_EINVAL;
}

void hp_store_node_release(struct hp_store_node *n)
{
	if (!n)
		return;
	free(n->pool.name);
	free(n->pool.devs);
	free(n->info);
	free(n->devices);
	memset(n, 0, sizeof(*n));
}

void hp_store_node_list_free(struct hp_store_node *nodes, int n)
{
	for (int i = 0; nodes && i < n; i++)
		hp_store_node_release(&nodes[i]);
	free(nodes);
}

void hp_store_model_release(struct hp_store_model *m)
{
	if (!m)
		return;
	free(m->name);
	free(m->features);
	free(m->data);
	memset(m, 0, sizeof(*m));
}

void hp_store_model_list_free(struct hp_store_model *m, int n)
{
	for (int i = 0; m && i < n; i++)
		hp_store_model_release(&m[i]);
	free(m);
}

void hp_store_job_release(struct hp_store_job *j)
{
	if (!j)
		return;
	free(j->name);
	free(j->reason);
	free(j->description);
	free(j->data);
	free(j->settings);
	free(j->plan);
	free(j->deploy_id);
	free(j->deploy_dir);
	memset(j, 0, sizeof(*j));
}

void hp_store_job_list_free(struct hp_store_job *jobs, int n)
{
	for (int i = 0; jobs && i < n; i++)
		hp_store_job_release(&jobs[i]);
	free(jobs);
}

void hp_store_alloc_list_free(struct hp_store_alloc *a, int n)
{
	(void)n;
	free(a);
}

void hp_store_recovery_release(struct hp_store_recovery *r)
{
	if (!r)
		return;
	hp_store_job_list_free(r->active, r->nactive);
	memset(r, 0, sizeof(*r));
}

void hp_store_token_release(struct hp_store_token *t)
{
	if (!t)
		return;
	free(t->name);
	memset(t, 0, sizeof(*t));
}

void hp_store_token_list_free(struct hp_store_token *t, int n)
{
	for (int i = 0; t && i < n; i++)
		hp_store_token_release(&t[i]);
	free(t);
}

void hp_store_measurement_release(struct hp_store_measurement *m)
{
	if (!m)
		return;
	free(m->device_type);
	free(m->config);
	free(m->source);
	memset(m, 0, sizeof(*m));
}

void hp_store_measurement_list_free(struct hp_store_measurement *m, int n)
{
	for (int i = 0; m && i < n; i++)
		hp_store_measurement_release(&m[i]);
	free(m);
}

void hp_store_dataset_release(struct hp_store_dataset *d)
{
	if (!d)
		return;
	free(d->name);
	free(d->path);
	free(d->sha256);
	memset(d, 0, sizeof(*d));
}

void hp_store_dataset_list_free(struct hp_store_dataset *d, int n)
{
	for (int i = 0; d && i < n; i++)
		hp_store_dataset_release(&d[i]);
	free(d);
}

void hp_store_estimator_release(struct hp_store_estimator *e)
{
	if (!e)
		return;
	free(e->body);
	free(e->fitted_on);
	free(e->validation);
	free(e->provenance);
	memset(e, 0, sizeof(*e));
}

void hp_store_estimator_list_free(struct hp_store_estimator *e, int n)
{
	for (int i = 0; e && i < n; i++)
		hp_store_estimator_release(&e[i]);
	free(e);
}

void hp_store_metrics_release(struct hp_store_metrics *m)
{
	if (!m)
		return;
	free(m->types);
	memset(m, 0, sizeof(*m));
}
