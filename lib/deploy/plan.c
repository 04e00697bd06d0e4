/*
 * plan.c - the plan a job runs: read from the recommender's JSON (its
 * choice, or one configuration of it), checked (names, counts, batches
 * that add up), and laid out as ranks: one per device, grouped into
 * components (the nodes holding the same number of devices of one type),
 * ordered by component, node and device.  That order is the one Slurm
 * gives the tasks of a heterogeneous step, and every backend uses it, so
 * rank K's local batch is the K-th of the trainer's --local-batches.
 */
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deploy/deploy_int.h"
#include "util/banned.h"

void hp_plan_release(struct hp_plan *p)
{
	if (!p)
		return;
	free(p->groups);
	free(p->nodes);
	free(p->comps);
	free(p->ranks);
	memset(p, 0, sizeof(*p));
}

struct pctx {
	char file[160];
	struct hp_error *err;
};

static int bad(const struct pctx *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int bad(const struct pctx *c, const char *fmt, ...)
{
	char msg[220];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return hp_error_set(c->err, HP_EPARSE, "%s: %s", c->file, msg);
}

/* An integer field in [lo, hi]; absent: 1 (and *v untouched) when
 * optional, an error when not. */
static int get_int(const struct pctx *c, json_t *o, const char *where,
		   const char *key, int64_t lo, int64_t hi, bool optional,
		   int64_t *v)
{
	json_t *x = json_object_get(o, key);

	if (!x || json_is_null(x)) {
		if (optional)
			return 1;
		return bad(c, "%s: '%s' is missing", where, key);
	}
	if (json_is_real(x) &&
	    json_real_value(x) == floor(json_real_value(x)) &&
	    fabs(json_real_value(x)) < 9e15) {
		*v = (int64_t)json_real_value(x);
	} else if (json_is_integer(x)) {
		*v = json_integer_value(x);
	} else {
		return bad(c, "%s: '%s' is not a whole number", where, key);
	}
	if (*v < lo || *v > hi)
		return bad(c, "%s: '%s' = %lld is out of range [%lld, %lld]",
			   where, key, (long long)*v, (long long)lo,
			   (long long)hi);
	return 0;
}

static int get_num(const struct pctx *c, json_t *o, const char *where,
		   const char *key, double lo, double hi, double *v)
{
	json_t *x = json_object_get(o, key);

	if (!x || json_is_null(x))
		return 1;
	if (!json_is_number(x))
		return bad(c, "%s: '%s' is not a number", where, key);
	*v = json_number_value(x);
	if (!isfinite(*v) || *v < lo || *v > hi)
		return bad(c, "%s: '%s' = %g is out of range [%g, %g]", where,
			   key, *v, lo, hi);
	return 0;
}

static int get_str(const struct pctx *c, json_t *o, const char *where,
		   const char *key, bool (*ok)(const char *), const char *what,
		   char *out, size_t n)
{
	json_t *x = json_object_get(o, key);
	char esc[160];

	if (!x)
		return bad(c, "%s: '%s' is missing", where, key);
	if (!json_is_string(x))
		return bad(c, "%s: '%s' is not a string", where, key);
	if (strlen(json_string_value(x)) != json_string_length(x) ||
	    !ok(json_string_value(x)))
		return bad(
		    c, "%s: '%s' = '%s' is not %s", where, key,
		    hp_str_escape(json_string_value(x), esc, sizeof(esc)),
		    what);
	snprintf(out, n, "%s", json_string_value(x));
	return 0;
}

/* A group's optional "net_transport": one of the pool's names. */
static int get_transport(const struct pctx *c, json_t *o, const char *where,
			 enum hp_net_transport *out)
{
	json_t *x = json_object_get(o, "net_transport");
	char esc[64];

	*out = HP_NET_AUTO;
	if (!x)
		return 0;
	if (!json_is_string(x) ||
	    strlen(json_string_value(x)) != json_string_length(x) ||
	    hp_net_transport_parse(json_string_value(x), out))
		return bad(
		    c,
		    "%s: 'net_transport' = '%s' is "
		    "not " HP_NET_TRANSPORT_CHOICES,
		    where,
		    json_is_string(x)
			? hp_str_escape(json_string_value(x), esc, sizeof(esc))
			: "(not a string)");
	return 0;
}

static bool rule_ok(const char *s)
{
	return !strcmp(s, "linear") || !strcmp(s, "sqrt") || !strcmp(s, "none");
}

/* Lay the groups out as nodes, components and ranks. */
static int layout(struct hp_plan *p, struct hp_error *err)
{
	int *nt = NULL; /* per group: devices of its type on its node */
	int *gnode = NULL, r = 0, total = 0;

	for (int g = 0; g < p->ngroups; g++)
		total += p->groups[g].count; /* bounded by the caller */
	p->nodes = calloc((size_t)p->ngroups, sizeof(*p->nodes));
	p->comps = calloc((size_t)p->ngroups, sizeof(*p->comps));
	p->ranks = calloc((size_t)total, sizeof(*p->ranks));
	nt = calloc((size_t)p->ngroups, sizeof(*nt));
	gnode = calloc((size_t)p->ngroups, sizeof(*gnode));
	if (!p->nodes || !p->comps || !p->ranks || !nt || !gnode) {
		free(nt);
		free(gnode);
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	}
	for (int g = 0; g < p->ngroups; g++) {
		const struct hp_plan_group *x = &p->groups[g];
		int k;
		for (k = 0; k < p->nnodes; k++)
			if (!strcmp(p->nodes[k].name, x->node))
				break;
		if (k == p->nnodes)
			snprintf(p->nodes[p->nnodes++].name, HP_NAME_MAX, "%s",
				 x->node);
		if (x->transport != HP_NET_AUTO)
			p->nodes[k].transport = x->transport;
		gnode[g] = k;
	}
	for (int g = 0; g < p->ngroups; g++)
		for (int h = 0; h < p->ngroups; h++)
			if (gnode[g] == gnode[h] &&
			    !strcmp(p->groups[g].type, p->groups[h].type))
				nt[g] += p->groups[h].count;
	/* Components: (type, devices per node), in order of first sight. */
	for (int g = 0; g < p->ngroups; g++) {
		int c;
		for (c = 0; c < p->ncomps; c++)
			if (!strcmp(p->comps[c].type, p->groups[g].type) &&
			    p->comps[c].per_node == nt[g])
				break;
		if (c == p->ncomps) {
			struct hp_plan_comp *pc = &p->comps[p->ncomps++];
			snprintf(pc->type, sizeof(pc->type), "%s",
				 p->groups[g].type);
			pc->per_node = nt[g];
			pc->gpu = strcmp(pc->type, "cpu") != 0;
			pc->memory_bytes = p->groups[g].memory_bytes;
		} else if (!(p->groups[g].memory_bytes <=
			     p->comps[c].memory_bytes)) {
			/* the larger, or NaN when either is not known */
			p->comps[c].memory_bytes =
			    isnan(p->comps[c].memory_bytes)
				? NAN
				: p->groups[g].memory_bytes;
		}
	}
	for (int c = 0; c < p->ncomps; c++) {
		struct hp_plan_comp *pc = &p->comps[c];
		pc->first_rank = r;
		for (int k = 0; k < p->nnodes; k++) {
			int idx = 0;
			bool here = false;
			for (int g = 0; g < p->ngroups; g++) {
				const struct hp_plan_group *x = &p->groups[g];
				if (gnode[g] != k ||
				    strcmp(x->type, pc->type) ||
				    nt[g] != pc->per_node)
					continue;
				here = true;
				for (int i = 0; i < x->count; i++) {
					struct hp_plan_rank *pr =
					    &p->ranks[r++];
					pr->group = g;
					pr->node = k;
					pr->comp = c;
					pr->gpu = pc->gpu;
					pr->gpu_index = idx++;
					pr->local_batch = x->local_batch;
					pr->grad_weight =
					    (double)x->local_batch /
					    (double)p->global_batch;
				}
			}
			if (here)
				pc->nnodes++;
		}
		pc->nranks = r - pc->first_rank;
	}
	p->nranks = r;
	for (int k = 0; k < p->nnodes; k++) {
		int lr = 0;
		for (int i = 0; i < r; i++)
			if (p->ranks[i].node == k)
				p->ranks[i].local_rank = lr++;
		p->nodes[k].nranks = lr;
	}
	free(nt);
	free(gnode);
	return 0;
}

/* The configuration object: "devices", "global_batch", "lr", "steps". */
static int parse_config(const struct pctx *c, json_t *cfg, const char *where,
			struct hp_plan *p)
{
	json_t *devs = json_object_get(cfg, "devices"), *lr;
	char w[96];
	int64_t sum = 0, total = 0, v;
	int rc;
	size_t n;

	if (!json_is_array(devs))
		return bad(c, "%s: 'devices' is %s", where,
			   devs ? "not an array" : "missing");
	n = json_array_size(devs);
	if (n == 0)
		return bad(c, "%s: 'devices' is empty: nothing to run", where);
	if (n > HP_PLAN_MAX_GROUPS)
		return bad(c, "%s: %zu device groups, more than %d", where, n,
			   HP_PLAN_MAX_GROUPS);
	p->groups = calloc(n, sizeof(*p->groups));
	if (!p->groups)
		return hp_error_set(c->err, HP_ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		json_t *g = json_array_get(devs, i);
		struct hp_plan_group *x = &p->groups[i];
		snprintf(w, sizeof(w), "%s.devices[%zu]", where, i);
		if (!json_is_object(g))
			return bad(c, "%s: not an object", w);
		if ((rc = get_str(c, g, w, "node", hp__name_ok,
				  "a host name (letters, digits, '-', '.', "
				  "'_'; 1-63)",
				  x->node, sizeof(x->node))) ||
		    (rc = get_str(c, g, w, "type", hp__type_ok,
				  "a device type (lowercase letters, digits, "
				  "'-', '.', '_')",
				  x->type, sizeof(x->type))))
			return rc;
		if ((rc = get_int(c, g, w, "count", 1, HP_PLAN_MAX_RANKS, false,
				  &v)))
			return rc;
		x->count = (int)v;
		if ((rc = get_int(c, g, w, "local_batch", 1, (int64_t)1 << 24,
				  false, &x->local_batch)))
			return rc;
		x->grad_weight = NAN;
		if ((rc = get_num(c, g, w, "grad_weight", 0, 1,
				  &x->grad_weight)) < 0)
			return rc;
		if ((rc = get_transport(c, g, w, &x->transport)))
			return rc;
		x->memory_bytes = NAN;
		if ((rc = get_num(c, g, w, "memory_bytes", 0,
				  HP_PLAN_MAX_MEMORY, &x->memory_bytes)) < 0)
			return rc;
		total += x->count;
		if (total > HP_PLAN_MAX_RANKS)
			return bad(c, "%s: more than %d devices", where,
				   HP_PLAN_MAX_RANKS);
		sum += x->local_batch * x->count;
		p->ngroups = (int)i + 1;
	}
	rc = get_int(c, cfg, where, "global_batch", 1, (int64_t)1 << 40, true,
		     &p->global_batch);
	if (rc < 0)
		return rc;
	if (rc == 1)
		p->global_batch = sum;
	else if (p->global_batch != sum)
		return bad(c,
			   "%s: the local batches add up to %lld, not the "
			   "global batch %lld",
			   where, (long long)sum, (long long)p->global_batch);
	for (int i = 0; i < p->ngroups; i++) {
		double gw =
		    (double)p->groups[i].local_batch / (double)p->global_batch;
		if (isfinite(p->groups[i].grad_weight) &&
		    fabs(p->groups[i].grad_weight - gw) > 1e-6)
			return bad(c,
				   "%s.devices[%d]: 'grad_weight' %g is not "
				   "local_batch / global_batch = %g",
				   where, i, p->groups[i].grad_weight, gw);
		p->groups[i].grad_weight = gw;
	}
	if ((rc = get_int(c, cfg, where, "steps", 1, (int64_t)1 << 40, true,
			  &p->steps)) < 0)
		return rc;
	p->lr_scale = 1;
	if ((rc = get_num(c, cfg, where, "lr_scale", 1e-6, 1e6, &p->lr_scale)) <
	    0)
		return rc;
	p->predicted_time_s = NAN;
	if ((rc = get_num(c, cfg, where, "predicted_time_s", 0, 1e12,
			  &p->predicted_time_s)) < 0)
		return rc;
	if (json_is_boolean(json_object_get(cfg, "meets_deadline")))
		p->feasible =
		    json_is_true(json_object_get(cfg, "meets_deadline"));
	snprintf(p->lr_rule, sizeof(p->lr_rule), "none");
	lr = json_object_get(cfg, "lr");
	if (lr && !json_is_null(lr)) {
		snprintf(w, sizeof(w), "%s.lr", where);
		if (!json_is_object(lr))
			return bad(c, "%s: not an object", w);
		if (json_object_get(lr, "rule") &&
		    (rc = get_str(c, lr, w, "rule", rule_ok,
				  "linear, sqrt or none", p->lr_rule,
				  sizeof(p->lr_rule))))
			return rc;
		if ((rc = get_int(c, lr, w, "ref_batch", 1, (int64_t)1 << 31,
				  true, &p->ref_batch)) < 0 ||
		    (rc = get_int(c, lr, w, "warmup_steps", 0, (int64_t)1 << 40,
				  true, &p->warmup_steps)) < 0)
			return rc;
	}
	/* one node, one network */
	for (int i = 0; i < p->ngroups; i++)
		for (int j = 0; j < i; j++)
			if (!strcmp(p->groups[i].node, p->groups[j].node) &&
			    p->groups[i].transport != p->groups[j].transport &&
			    p->groups[i].transport != HP_NET_AUTO &&
			    p->groups[j].transport != HP_NET_AUTO)
				return bad(c,
					   "%s.devices[%d]: 'net_transport' "
					   "'%s' differs from devices[%d]'s "
					   "'%s' on the same node '%s'",
					   where, i,
					   hp_net_transport_name(
					       p->groups[i].transport),
					   j,
					   hp_net_transport_name(
					       p->groups[j].transport),
					   p->groups[i].node);
	return layout(p, c->err);
}

int hp_plan_parse(const char *text, size_t len, const char *path,
		  struct hp_plan *out, struct hp_error *err)
{
	struct pctx c = {.err = err};
	json_error_t je;
	json_t *root, *cfg;
	int rc;

	memset(out, 0, sizeof(*out));
	if (path && *path) {
		char esc[128];
		snprintf(c.file, sizeof(c.file), "plan '%s'",
			 hp_str_escape(path, esc, sizeof(esc)));
	} else {
		snprintf(c.file, sizeof(c.file), "plan");
	}
	if (len > HP_PLAN_MAX_BYTES)
		return bad(&c, "larger than %u bytes", HP_PLAN_MAX_BYTES);
	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!root)
		return bad(&c, "line %d: %s", je.line, je.text);
	if (!json_is_object(root)) {
		rc = bad(&c, "not a JSON object");
		goto out;
	}
	cfg = json_object_get(root, "choice");
	if (cfg) {
		json_t *reason = json_object_get(root, "reason");
		if (!json_is_object(cfg)) {
			char esc[200];
			rc = bad(&c, "the recommendation has no choice: %s",
				 json_is_string(reason)
				     ? hp_str_escape(json_string_value(reason),
						     esc, sizeof(esc))
				     : "no reason given");
			goto out;
		}
		rc = parse_config(&c, cfg, "choice", out);
		if (!rc && json_is_boolean(json_object_get(root, "feasible")))
			out->feasible =
			    json_is_true(json_object_get(root, "feasible"));
	} else if (json_object_get(root, "devices")) {
		rc = parse_config(&c, root, "plan", out);
	} else {
		rc = bad(&c, "neither a recommendation ('choice') nor a "
			     "configuration ('devices'): give the JSON of "
			     "'hetpool recommend --json'");
	}
out:
	json_decref(root);
	if (rc)
		hp_plan_release(out);
	return rc;
}

int hp_plan_load(const char *path, struct hp_plan *out, struct hp_error *err)
{
	char *text;
	size_t len;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = hp_read_file(path, HP_PLAN_MAX_BYTES, &text, &len, err)))
		return rc;
	rc = hp_plan_parse(text, len, path, out, err);
	free(text);
	return rc;
}

int hp_plan_cpu_host(const char *node, int nranks, int64_t global_batch,
		     struct hp_plan *out, struct hp_error *err)
{
	int64_t base, extra;

	memset(out, 0, sizeof(*out));
	if (!hp__name_ok(node))
		return hp_error_set(err, HP_EINVAL, "'%s' is not a host name",
				    node);
	if (nranks < 1 || nranks > HP_PLAN_MAX_RANKS)
		return hp_error_set(err, HP_EINVAL, "%d ranks: give 1 to %d",
				    nranks, HP_PLAN_MAX_RANKS);
	if (global_batch < nranks)
		return hp_error_set(err, HP_EINVAL,
				    "a global batch of %lld cannot be split "
				    "over %d ranks",
				    (long long)global_batch, nranks);
	base = global_batch / nranks;
	extra = global_batch % nranks;
	out->groups = calloc(2, sizeof(*out->groups));
	if (!out->groups)
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	for (int k = 0; k < 2; k++) {
		int count = k == 0 ? (int)extra : nranks - (int)extra;
		struct hp_plan_group *g;
		if (!count)
			continue;
		g = &out->groups[out->ngroups++];
		snprintf(g->node, sizeof(g->node), "%s", node);
		snprintf(g->type, sizeof(g->type), "cpu");
		g->count = count;
		g->local_batch = k == 0 ? base + 1 : base;
		g->grad_weight = (double)g->local_batch / (double)global_batch;
		g->memory_bytes = NAN;
	}
	out->global_batch = global_batch;
	out->lr_scale = 1;
	out->predicted_time_s = NAN;
	snprintf(out->lr_rule, sizeof(out->lr_rule), "none");
	if (layout(out, err)) {
		hp_plan_release(out);
		return HP_ENOMEM;
	}
	return 0;
}

char *hp_plan_json(const struct hp_plan *p)
{
	json_t *o = json_object(), *groups = json_array(),
	       *nodes = json_array();
	json_t *comps = json_array(), *ranks = json_array();
	char *s;

	for (int i = 0; i < p->ngroups; i++) {
		json_t *g = json_pack(
		    "{s:s, s:s, s:i, s:I, s:f, s:s}", "node", p->groups[i].node,
		    "type", p->groups[i].type, "count", p->groups[i].count,
		    "local_batch", (json_int_t)p->groups[i].local_batch,
		    "grad_weight", p->groups[i].grad_weight, "net_transport",
		    hp_net_transport_name(p->groups[i].transport));
		if (g && isfinite(p->groups[i].memory_bytes))
			json_object_set_new(
			    g, "memory_bytes",
			    json_integer(
				(json_int_t)p->groups[i].memory_bytes));
		json_array_append_new(groups, g);
	}
	for (int i = 0; i < p->nnodes; i++)
		json_array_append_new(
		    nodes,
		    json_pack("{s:s, s:i, s:s}", "name", p->nodes[i].name,
			      "ranks", p->nodes[i].nranks, "net_transport",
			      hp_net_transport_name(p->nodes[i].transport)));
	for (int i = 0; i < p->ncomps; i++)
		json_array_append_new(
		    comps,
		    json_pack("{s:s, s:s, s:i, s:i, s:i, s:i}", "type",
			      p->comps[i].type, "device",
			      p->comps[i].gpu ? "cuda" : "cpu", "per_node",
			      p->comps[i].per_node, "nodes", p->comps[i].nnodes,
			      "first_rank", p->comps[i].first_rank, "ranks",
			      p->comps[i].nranks));
	for (int i = 0; i < p->nranks; i++) {
		const struct hp_plan_rank *r = &p->ranks[i];
		json_array_append_new(
		    ranks,
		    json_pack("{s:i, s:s, s:s, s:s, s:I, s:f, s:i, s:i, s:i}",
			      "rank", i, "node", p->nodes[r->node].name, "type",
			      p->groups[r->group].type, "device",
			      r->gpu ? "cuda" : "cpu", "local_batch",
			      (json_int_t)r->local_batch, "grad_weight",
			      r->grad_weight, "component", r->comp,
			      "local_rank", r->local_rank, "gpu_index",
			      r->gpu_index));
	}
	json_object_set_new(o, "global_batch", json_integer(p->global_batch));
	json_object_set_new(o, "steps",
			    p->steps ? json_integer(p->steps) : json_null());
	json_object_set_new(
	    o, "lr",
	    json_pack("{s:s, s:f, s:o, s:I}", "rule", p->lr_rule, "scale",
		      p->lr_scale, "ref_batch",
		      p->ref_batch ? json_integer(p->ref_batch) : json_null(),
		      "warmup_steps", (json_int_t)p->warmup_steps));
	json_object_set_new(o, "feasible", json_boolean(p->feasible));
	json_object_set_new(o, "predicted_time_s",
			    isfinite(p->predicted_time_s)
				? json_real(p->predicted_time_s)
				: json_null());
	json_object_set_new(o, "groups", groups);
	json_object_set_new(o, "nodes", nodes);
	json_object_set_new(o, "components", comps);
	json_object_set_new(o, "ranks", ranks);
	s = json_dumps(o, JSON_INDENT(2));
	json_decref(o);
	return s;
}
