/*
 * h_pool.c - the pool's routes: nodes (list, register, get, drain or
 * resume, remove) and the pool as a whole (GET: as the recommender sees
 * it now; POST: a pool file loaded in one transaction).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hetpoold.h"

static json_t *node_json(const struct hp_store_node *n)
{
	const struct hp_pool_node *p = &n->pool;
	json_t *o = json_object(), *devs = json_array(), *list = json_array();

	for (int i = 0; i < p->ndevs; i++)
		json_array_append_new(devs, json_pack("{s:s, s:i, s:i}", "type",
						      p->devs[i].type, "count",
						      p->devs[i].count, "free",
						      p->devs[i].free));
	for (int i = 0; i < n->ndevices; i++) {
		const struct hp_store_device *dv = &n->devices[i];
		json_t *x =
		    json_pack("{s:s, s:i, s:s, s:b}", "type", dv->type, "index",
			      dv->index, "state", hp_dev_state_name(dv->state),
			      "drained", dv->drained);
		json_object_set_new(x, "job",
				    dv->job_id ? json_integer(dv->job_id)
					       : json_null());
		json_array_append_new(list, x);
	}
	json_object_set_new(o, "id", json_integer(n->id));
	json_object_set_new(o, "name", hd_jstr(p->name));
	json_object_set_new(o, "state",
			    json_string(n->drained ? "drained" : "active"));
	json_object_set_new(o, "self", json_boolean(n->self));
	json_object_set_new(o, "devices", devs);
	json_object_set_new(o, "device_list", list);
	json_object_set_new(o, "cpu_cores", json_integer(p->cpu_cores));
	json_object_set_new(o, "memory_gb", json_real(p->memory_gb));
	json_object_set_new(o, "intra_bw_gbps", json_real(p->intra_bw_gbps));
	json_object_set_new(o, "net_bw_gbps", json_real(p->net_bw_gbps));
	json_object_set_new(o, "net_latency_us", json_real(p->net_latency_us));
	json_object_set_new(o, "base_power_w", json_real(p->base_power_w));
	json_object_set_new(
	    o, "net_transport",
	    json_string(hp_net_transport_name(p->net_transport)));
	json_object_set_new(o, "info", hd_jtext(n->info));
	json_object_set_new(o, "created_s", json_real(n->created_s));
	json_object_set_new(o, "updated_s", json_real(n->updated_s));
	return o;
}

void hd_h_nodes_list(struct hd *d, struct hd_req *r, struct hd_resp *out)
{
	struct hp_store_node *nodes = NULL;
	struct hp_error err = {0};
	json_t *a;
	int n = 0;

	(void)r;
	if (hp_store_node_list(d->store, &nodes, &n, &err)) {
		hd_problem_err(out, &err);
		return;
	}
	a = json_array();
	for (int i = 0; i < n; i++)
		json_array_append_new(a, node_json(&nodes[i]));
	hp_store_node_list_free(nodes, n);
	hd_json(out, 200, json_pack("{s:o}", "nodes", a));
}

static void answer_node(struct hd *d, const char *name, int status,
			struct hd_resp *out)
{
	struct hp_store_node n = {0};
	struct hp_error err = {0};

	if (hp_store_node_get(d->store, name, &n, &err)) {
		hd_problem_err(out, &err);
		return;
	}
	hd_json(out, status, node_json(&n));
	if (status == 201)
		snprintf(out->location, sizeof(out->location), "/v1/nodes/%s",
			 name);
	hp_store_node_release(&n);
}

/* The body as a pool (one node wrapped as a pool of one): NULL with the
 * answer in out. */
static struct hp_pool *body_pool(struct hd *d, struct hd_req *r, bool one_node,
				 struct hd_resp *out)
{
	struct hp_api_problem pb = {0};
	struct hp_error err = {0};
	struct hp_buf b;
	struct hp_pool *p;
	const struct hp_snap *snap;

	if (hp_api_pool_check(r->body.data, r->body.len, one_node, &pb)) {
		hd_problem_from(out, &pb);
		return NULL;
	}
	hp_buf_init(&b, r->body.len + 64);
	if (one_node)
		hp_buf_printf(&b, "{\"nodes\":[%.*s]}", (int)r->body.len,
			      r->body.data);
	else
		hp_buf_add(&b, r->body.data, r->body.len);
	snap = hp_ctx_acquire(d->ctx);
	p = hp_pool_parse(hp_buf_str(&b), b.len, "body", hp_snap_catalog(snap),
			  &err);
	hp_snap_release(snap);
	hp_buf_release(&b);
	if (!p) {
		if (err.code == HP_ENOMEM)
			hd_problem_err(out, &err);
		else
			hd_problem(out, 400, "invalid-field", NULL, "%s",
				   err.msg);
		return NULL;
	}
	/* No node without devices (the store takes none), none whose name
	 * cannot be a host name: jobs go to these nodes through a backend,
	 * and such a name would be planned on and fail at launch. */
	for (int i = 0; i < p->n; i++)
		if (p->nodes[i].ndevs < 1) {
			/* the store takes none: a 400 naming the field, as the
			 * pool file's other checks give */
			char esc[4 * 64 + 1];
			hp_str_escape(p->nodes[i].name, esc, sizeof(esc));
			hd_problem(out, 400, "invalid-field", "devices",
				   "node '%s': 'devices' is empty; give at "
				   "least one device type and count",
				   esc);
			hp_pool_free(p);
			return NULL;
		}
	{
		char msg[400];
		if (hd_pool_bad_name(p, msg, sizeof(msg)) >= 0) {
			hd_problem(out, 400, "invalid-field", "name", "%s",
				   msg);
			hp_pool_free(p);
			return NULL;
		}
	}
	return p;
}

int hd_pool_bad_name(const struct hp_pool *p, char *msg, size_t n)
{
	for (int i = 0; i < p->n; i++)
		if (!hp_deploy_host_name_ok(p->nodes[i].name)) {
			char esc[4 * 64 + 1];
			hp_str_escape(p->nodes[i].name, esc, sizeof(esc));
			snprintf(msg, n,
				 "node '%s': the name must be its host name, "
				 "which the backends reach it by: letters, "
				 "digits, '.', '_' and '-', not first '.' or "
				 "'-'",
				 esc);
			return i;
		}
	return -1;
}

void hd_h_nodes_add(struct hd *d, struct hd_req *r, struct hd_resp *out)
{
	struct hp_error err = {0};
	struct hp_pool *p = body_pool(d, r, true, out);
	char name[HP_NAME_MAX];

	if (!p)
		return;
	if (p->n != 1) {
		hd_problem(out, 400, "invalid-field", NULL, "give one node");
		hp_pool_free(p);
		return;
	}
	snprintf(name, sizeof(name), "%s", p->nodes[0].name);
	if (hp_store_node_put(d->store, &p->nodes[0], NULL, false, NULL,
			      &err)) {
		hp_pool_free(p);
		hd_problem_err(out, &err);
		return;
	}
	hp_pool_free(p);
	hd_pool_changed(d);
	hd_sched_kick(d);
	hd_log(HP_LOG_INFO, "node registered", "node", "s:", name, "who",
	       "s:", r->who.name, NULL);
	answer_node(d, name, 201, out);
}

void hd_h_node_get(struct hd *d, struct hd_req *r, struct hd_resp *out)
{
	answer_node(d, r->params[0], 200, out);
}

void hd_h_node_patch(struct hd *d, struct hd_req *r, struct hd_resp *out)
{
	struct hp_api_problem pb = {0};
	struct hp_error err = {0};
	bool drained;

	if (hp_api_node_patch_parse(r->body.data, r->body.len, &drained, &pb)) {
		hd_problem_from(out, &pb);
		return;
	}
	if (hp_store_node_drain(d->store, r->params[0], drained, &err)) {
		hd_problem_err(out, &err);
		return;
	}
	hd_pool_changed(d);
	hd_sched_kick(d);
	hd_log(HP_LOG_INFO, drained ? "node drained" : "node resumed", "node",
	       "s:", r->params[0], "who", "s:", r->who.name, NULL);
	answer_node(d, r->params[0], 200, out);
}

void hd_h_node_delete(struct hd *d, struct hd_req *r, struct hd_resp *out)
{
	struct hp_error err = {0};

	if (hp_store_node_remove(d->store, r->params[0], &err)) {
		hd_problem_err(out, &err);
		return;
	}
	hd_pool_changed(d);
	hd_log(HP_LOG_INFO, "node removed", "node", "s:", r->params[0], "who",
	       "s:", r->who.name, NULL);
	hd_text(out, 204, NULL, NULL, 0);
}

void hd_h_pool_get(struct hd *d, struct hd_req *r, struct hd_resp *out)
{
	struct hd_pool *hp = NULL;
	struct hp_error err = {0};
	json_t *nodes;

	(void)r;
	if (hd_pool_get(d, &hp, &err)) {
		hd_problem_err(out, &err);
		return;
	}
	nodes = json_array();
	for (int i = 0; i < hp->pool->n; i++) {
		const struct hp_pool_node *n = &hp->pool->nodes[i];
		json_t *devs = json_array();
		for (int k = 0; k < n->ndevs; k++)
			json_array_append_new(
			    devs, json_pack("{s:s, s:i, s:i}", "type",
					    n->devs[k].type, "count",
					    n->devs[k].count, "free",
					    n->devs[k].free));
		json_array_append_new(
		    nodes,
		    json_pack("{s:o, s:o, s:i, s:f, s:f, s:f, s:f, s:f, s:s}",
			      "name", hd_jstr(n->name), "devices", devs,
			      "cpu_cores", n->cpu_cores, "memory_gb",
			      n->memory_gb, "intra_bw_gbps", n->intra_bw_gbps,
			      "net_bw_gbps", n->net_bw_gbps, "net_latency_us",
			      n->net_latency_us, "base_power_w",
			      n->base_power_w, "net_transport",
			      hp_net_transport_name(n->net_transport)));
	}
	hd_pool_put(hp);
	hd_json(out, 200, json_pack("{s:o}", "nodes", nodes));
}

void hd_h_pool_load(struct hd *d, struct hd_req *r, struct hd_resp *out)
{
	struct hp_error err = {0};
	const char *rep = hd_query(r, "replace");
	bool replace = rep && !strcmp(rep, "true");
	struct hp_pool *p;
	int n;

	if (rep && strcmp(rep, "true") && strcmp(rep, "false")) {
		hd_problem(out, 400, "invalid-field", "replace",
			   "'replace' must be true or false");
		return;
	}
	if (!(p = body_pool(d, r, false, out)))
		return;
	n = p->n;
	if (hp_store_pool_load(d->store, p, replace, &err)) {
		hp_pool_free(p);
		hd_problem_err(out, &err);
		return;
	}
	hp_pool_free(p);
	hd_pool_changed(d);
	hd_sched_kick(d);
	hd_log(HP_LOG_INFO, "pool loaded", "nodes", "i:", (long long)n,
	       "replace", "b:", (long long)replace, "who", "s:", r->who.name,
	       NULL);
	hd_json(out, 200,
		json_pack("{s:i, s:b}", "nodes", n, "replaced", replace));
}
