/*
 * pool.c - parse and validate a pool file (JSON, jansson): nodes with
 * their devices, links and base power.  Every error names the node and
 * the field; nothing here prints.
 */
#include <jansson.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hetpool/pool.h"
#include "util/banned.h"

void hp_pool_free(struct hp_pool *p)
{
	if (!p)
		return;
	for (int i = 0; i < p->n; i++) {
		free(p->nodes[i].name);
		free(p->nodes[i].devs);
	}
	free(p->nodes);
	free(p->path);
	free(p);
}

long hp_pool_free_of(const struct hp_pool *p, const char *type)
{
	long n = 0;

	for (int i = 0; i < p->n; i++)
		for (int d = 0; d < p->nodes[i].ndevs; d++)
			if (!strcmp(p->nodes[i].devs[d].type, type))
				n += p->nodes[i].devs[d].free;
	return n;
}

/* A number field: required, finite, at least min. */
static int get_num(json_t *o, const char *node, const char *key, double min,
		   double *out, struct hp_error *err)
{
	json_t *v = json_object_get(o, key);
	double x;

	if (!v)
		return hp_error_set(err, HP_EPARSE,
				    "pool: node '%s': missing '%s'", node, key);
	if (!json_is_number(v))
		return hp_error_set(err, HP_EPARSE,
				    "pool: node '%s': '%s' must be a number",
				    node, key);
	x = json_number_value(v);
	if (!isfinite(x) || x < min)
		return hp_error_set(err, HP_EPARSE,
				    "pool: node '%s': '%s' is %g; give at "
				    "least %g",
				    node, key, x, min);
	*out = x;
	return 0;
}

/* An integer field in [min, max]; def when absent and def >= min. */
static int get_int(json_t *o, const char *node, const char *where,
		   const char *key, long long min, long long max, long long def,
		   long long *out, struct hp_error *err)
{
	json_t *v = json_object_get(o, key);
	long long x;

	if (!v) {
		if (def >= min) {
			*out = def;
			return 0;
		}
		return hp_error_set(err, HP_EPARSE,
				    "pool: node '%s': %smissing '%s'", node,
				    where, key);
	}
	if (!json_is_integer(v))
		return hp_error_set(err, HP_EPARSE,
				    "pool: node '%s': %s'%s' must be a whole "
				    "number",
				    node, where, key);
	x = json_integer_value(v);
	if (x < min || x > max)
		return hp_error_set(err, HP_EPARSE,
				    "pool: node '%s': %s'%s' is %lld; give "
				    "%lld to %lld",
				    node, where, key, x, min, max);
	*out = x;
	return 0;
}

static int parse_devices(json_t *jn, struct hp_pool_node *nd,
			 const struct hp_catalog *cat, struct hp_error *err)
{
	json_t *ja = json_object_get(jn, "devices");
	size_t n;

	if (!ja)
		return hp_error_set(err, HP_EPARSE,
				    "pool: node '%s': missing 'devices'",
				    nd->name);
	if (!json_is_array(ja))
		return hp_error_set(err, HP_EPARSE,
				    "pool: node '%s': 'devices' must be an "
				    "array",
				    nd->name);
	n = json_array_size(ja);
	if (n > 64)
		return hp_error_set(err, HP_EPARSE,
				    "pool: node '%s': %zu device kinds; at "
				    "most 64",
				    nd->name, n);
	nd->devs = calloc(n ? n : 1, sizeof(*nd->devs));
	if (!nd->devs)
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	for (size_t k = 0; k < n; k++) {
		json_t *jd = json_array_get(ja, k), *jt;
		struct hp_pool_dev *d = &nd->devs[k];
		const char *tname;
		char where[48];
		long long count, fr;
		int rc;

		snprintf(where, sizeof(where), "devices[%zu]: ", k);
		if (!json_is_object(jd))
			return hp_error_set(err, HP_EPARSE,
					    "pool: node '%s': %smust be an "
					    "object",
					    nd->name, where);
		jt = json_object_get(jd, "type");
		if (!jt)
			return hp_error_set(err, HP_EPARSE,
					    "pool: node '%s': %smissing 'type'",
					    nd->name, where);
		if (!json_is_string(jt) || !*json_string_value(jt))
			return hp_error_set(err, HP_EPARSE,
					    "pool: node '%s': %s'type' must be "
					    "a non-empty string",
					    nd->name, where);
		tname = json_string_value(jt);
		if (cat) {
			const struct hp_device_type *t =
			    hp_catalog_find(cat, tname);
			if (!t)
				return hp_error_set(
				    err, HP_EPARSE,
				    "pool: node '%s': device type '%.40s' is "
				    "not in the catalog",
				    nd->name, tname);
			tname = t->name;
		}
		if (strlen(tname) >= sizeof(d->type))
			return hp_error_set(err, HP_EPARSE,
					    "pool: node '%s': device type "
					    "'%.40s' is too long",
					    nd->name, tname);
		for (size_t q = 0; q < k; q++)
			if (!strcmp(nd->devs[q].type, tname))
				return hp_error_set(
				    err, HP_EPARSE,
				    "pool: node '%s': device type '%s' listed "
				    "twice",
				    nd->name, tname);
		rc = get_int(jd, nd->name, where, "count", 1,
			     HP_POOL_MAX_DEVICES, -1, &count, err);
		if (rc)
			return rc;
		rc = get_int(jd, nd->name, where, "free", 0,
			     HP_POOL_MAX_DEVICES, count, &fr, err);
		if (rc)
			return rc;
		if (fr > count)
			return hp_error_set(err, HP_EPARSE,
					    "pool: node '%s': %s'free' %lld is "
					    "more than 'count' %lld",
					    nd->name, where, fr, count);
		snprintf(d->type, sizeof(d->type), "%s", tname);
		d->count = (int)count;
		d->free = (int)fr;
		nd->ndevs++;
	}
	return 0;
}

static int parse_node(json_t *jn, size_t idx, struct hp_pool_node *nd,
		      const struct hp_catalog *cat, struct hp_error *err)
{
	json_t *jname;
	long long cores;
	int rc;

	if (!json_is_object(jn))
		return hp_error_set(err, HP_EPARSE,
				    "pool: nodes[%zu] must be an object", idx);
	jname = json_object_get(jn, "name");
	if (!jname)
		return hp_error_set(err, HP_EPARSE,
				    "pool: nodes[%zu]: missing 'name'", idx);
	if (!json_is_string(jname) || !*json_string_value(jname) ||
	    json_string_length(jname) > 63)
		return hp_error_set(err, HP_EPARSE,
				    "pool: nodes[%zu]: 'name' must be a "
				    "string of 1 to 63 characters",
				    idx);
	nd->name = hp_strdup(json_string_value(jname));
	if (!nd->name)
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	if ((rc = parse_devices(jn, nd, cat, err)))
		return rc;
	if ((rc = get_int(jn, nd->name, "", "cpu_cores", 0, 1 << 20, -1, &cores,
			  err)))
		return rc;
	nd->cpu_cores = (int)cores;
	if ((rc = get_num(jn, nd->name, "memory_gb", 0, &nd->memory_gb, err)) ||
	    (rc = get_num(jn, nd->name, "intra_bw_gbps", 1e-3,
			  &nd->intra_bw_gbps, err)) ||
	    (rc = get_num(jn, nd->name, "net_bw_gbps", 1e-3, &nd->net_bw_gbps,
			  err)) ||
	    (rc = get_num(jn, nd->name, "net_latency_us", 0,
			  &nd->net_latency_us, err)) ||
	    (rc = get_num(jn, nd->name, "base_power_w", 0, &nd->base_power_w,
			  err)))
		return rc;
	if (nd->intra_bw_gbps > 1e6 || nd->net_bw_gbps > 1e6 ||
	    nd->net_latency_us > 1e6 || nd->base_power_w > 1e6 ||
	    nd->memory_gb > 1e9)
		return hp_error_set(err, HP_EPARSE,
				    "pool: node '%s': a figure is out of "
				    "range (bandwidths, latency and power at "
				    "most 10^6)",
				    nd->name);
	return 0;
}

static int cmp_name(const void *a, const void *b)
{
	const struct hp_pool_node *const *x = a, *const *y = b;
	return strcmp((*x)->name, (*y)->name);
}

struct hp_pool *hp_pool_parse(const char *text, size_t len, const char *path,
			      const struct hp_catalog *cat,
			      struct hp_error *err)
{
	struct hp_pool *p = NULL;
	struct hp_pool_node **sorted = NULL;
	json_error_t je;
	json_t *root, *jnodes;
	size_t n;

	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!root) {
		hp_error_set(err, HP_EPARSE, "pool: %s:%d:%d: %s",
			     path ? path : "", je.line, je.column, je.text);
		return NULL;
	}
	if (!json_is_object(root)) {
		hp_error_set(err, HP_EPARSE,
			     "pool: the top level must be an "
			     "object with 'nodes'");
		goto fail;
	}
	jnodes = json_object_get(root, "nodes");
	if (!jnodes || !json_is_array(jnodes)) {
		hp_error_set(err, HP_EPARSE,
			     jnodes ? "pool: 'nodes' must be an array"
				    : "pool: missing 'nodes'");
		goto fail;
	}
	n = json_array_size(jnodes);
	if (n == 0 || n > HP_POOL_MAX_NODES) {
		hp_error_set(err, HP_EPARSE, "pool: %zu nodes; give 1 to %d", n,
			     HP_POOL_MAX_NODES);
		goto fail;
	}
	p = calloc(1, sizeof(*p));
	if (!p || !(p->nodes = calloc(n, sizeof(*p->nodes))) ||
	    !(p->path = hp_strdup(path ? path : ""))) {
		hp_error_set(err, HP_ENOMEM, "out of memory");
		goto fail;
	}
	for (size_t i = 0; i < n; i++) {
		p->n++;
		if (parse_node(json_array_get(jnodes, i), i, &p->nodes[i], cat,
			       err))
			goto fail;
	}
	sorted = malloc(n * sizeof(*sorted));
	if (!sorted) {
		hp_error_set(err, HP_ENOMEM, "out of memory");
		goto fail;
	}
	for (size_t i = 0; i < n; i++)
		sorted[i] = &p->nodes[i];
	qsort(sorted, n, sizeof(*sorted), cmp_name);
	for (size_t i = 1; i < n; i++)
		if (!strcmp(sorted[i]->name, sorted[i - 1]->name)) {
			hp_error_set(err, HP_EPARSE,
				     "pool: node '%s': duplicate name",
				     sorted[i]->name);
			goto fail;
		}
	free(sorted);
	json_decref(root);
	return p;
fail:
	free(sorted);
	hp_pool_free(p);
	json_decref(root);
	return NULL;
}

struct hp_pool *hp_pool_load(const char *path, const struct hp_catalog *cat,
			     struct hp_error *err)
{
	struct hp_pool *p;
	char *text;
	size_t len;

	if (hp_read_file(path, HP_POOL_MAX_BYTES, &text, &len, err)) {
		hp_error_prefix(err, "pool '%s'", path);
		return NULL;
	}
	p = hp_pool_parse(text, len, path, cat, err);
	free(text);
	return p;
}
