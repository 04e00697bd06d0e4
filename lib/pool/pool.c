/*
 * pool.c - parse and validate a pool file (JSON, jansson): nodes with
 * their devices, links and base power, each number within its physical
 * range, names free of control characters.  Every error names the file,
 * the node and the key; nothing here prints.
 */
#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
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

static const char *const transport_names[] = {"auto", "tcp", "socket", "rdma"};

const char *hp_net_transport_name(enum hp_net_transport t)
{
	if ((int)t < 0 ||
	    (size_t)t >= sizeof(transport_names) / sizeof(transport_names[0]))
		return "?";
	return transport_names[t];
}

int hp_net_transport_parse(const char *s, enum hp_net_transport *out)
{
	for (size_t i = 0;
	     i < sizeof(transport_names) / sizeof(transport_names[0]); i++)
		if (!strcmp(s, transport_names[i])) {
			*out = (enum hp_net_transport)i;
			return 0;
		}
	return HP_EINVAL;
}

static bool dev_is_cpu(const char *type, const struct hp_catalog *cat)
{
	const struct hp_device_type *t =
	    cat ? hp_catalog_find(cat, type) : NULL;

	if (t)
		return t->kind == HP_DEVICE_CPU;
	return !strcmp(type, "cpu") || !strncmp(type, "cpu-", 4);
}

enum hp_net_transport hp_net_transport_resolve(enum hp_net_transport t,
					       bool has_gpu)
{
	if (t != HP_NET_AUTO)
		return t;
	return has_gpu ? HP_NET_SOCKET : HP_NET_TCP;
}

enum hp_net_transport hp_pool_node_transport(const struct hp_pool_node *nd,
					     const struct hp_catalog *cat)
{
	bool gpu = false;

	for (int d = 0; d < nd->ndevs && !gpu; d++)
		gpu = !dev_is_cpu(nd->devs[d].type, cat);
	return hp_net_transport_resolve(nd->net_transport, gpu);
}

/* Where a parse is, for messages: the file, the node being read. */
struct ctx {
	char file[112];	  /* "pool 'PATH'", or "pool" for text */
	const char *node; /* the node's name once read and checked */
	size_t idx;	  /* its index in "nodes" */
	struct hp_error *err;
};

/*
 * Fill err with "pool 'PATH': node 'NAME': message" (before the name is
 * known, "nodes[I]: " instead of the node; nothing between the file and
 * the message when whole is set); returns HP_EPARSE.
 */
static int bad(const struct ctx *c, bool whole, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int bad(const struct ctx *c, bool whole, const char *fmt, ...)
{
	char msg[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (whole)
		return hp_error_set(c->err, HP_EPARSE, "%s: %s", c->file, msg);
	if (c->node)
		return hp_error_set(c->err, HP_EPARSE, "%s: node '%s': %s",
				    c->file, c->node, msg);
	return hp_error_set(c->err, HP_EPARSE, "%s: nodes[%zu]: %s", c->file,
			    c->idx, msg);
}

/*
 * The physical range of each number of a node (docs/recommender.md, "The
 * pool file"): the lower bounds keep the model's divisions finite, the
 * upper ones are several times the largest hardware sold today and low
 * enough to catch a figure in the wrong unit (Mbit/s for Gbit/s, ns for
 * us).
 */
static const struct num_key {
	const char *key;
	double min, max;
	size_t off; /* of the double in struct hp_pool_node */
} num_keys[] = {
    {"memory_gb", 0.001, 65536, offsetof(struct hp_pool_node, memory_gb)},
    {"intra_bw_gbps", 0.001, 100000,
     offsetof(struct hp_pool_node, intra_bw_gbps)},
    {"net_bw_gbps", 0.001, 10000, offsetof(struct hp_pool_node, net_bw_gbps)},
    {"net_latency_us", 0, 100000,
     offsetof(struct hp_pool_node, net_latency_us)},
    {"base_power_w", 0, 100000, offsetof(struct hp_pool_node, base_power_w)},
};

/* A number field: required, within its range. */
static int get_num(const struct ctx *c, json_t *o, const struct num_key *k,
		   struct hp_pool_node *nd)
{
	json_t *v = json_object_get(o, k->key);
	double x;

	if (!v)
		return bad(c, false, "missing '%s'", k->key);
	if (!json_is_number(v))
		return bad(c, false, "'%s' must be a number", k->key);
	x = json_number_value(v);
	if (!(x >= k->min && x <= k->max))
		return bad(c, false, "'%s' = %g is out of range [%g, %g]",
			   k->key, x, k->min, k->max);
	memcpy((char *)nd + k->off, &x, sizeof(x));
	return 0;
}

/* An integer field in [min, max] (where: "devices[0]: " or ""); def when
 * absent and def >= min. */
static int get_int(const struct ctx *c, json_t *o, const char *where,
		   const char *key, long long min, long long max, long long def,
		   long long *out)
{
	json_t *v = json_object_get(o, key);
	long long x;

	if (!v) {
		if (def >= min) {
			*out = def;
			return 0;
		}
		return bad(c, false, "%smissing '%s'", where, key);
	}
	if (!json_is_integer(v))
		return bad(c, false, "%s'%s' must be a whole number", where,
			   key);
	x = json_integer_value(v);
	if (x < min || x > max)
		return bad(c, false,
			   "%s'%s' = %lld is out of range [%lld, %lld]", where,
			   key, x, min, max);
	*out = x;
	return 0;
}

static int parse_devices(const struct ctx *c, json_t *jn,
			 struct hp_pool_node *nd, const struct hp_catalog *cat)
{
	json_t *ja = json_object_get(jn, "devices");
	size_t n;

	if (!ja)
		return bad(c, false, "missing 'devices'");
	if (!json_is_array(ja))
		return bad(c, false, "'devices' must be an array");
	n = json_array_size(ja);
	if (n > HP_POOL_MAX_KINDS)
		return bad(c, false, "%zu device kinds; at most %d", n,
			   HP_POOL_MAX_KINDS);
	nd->devs = calloc(n ? n : 1, sizeof(*nd->devs));
	if (!nd->devs)
		return hp_error_set(c->err, HP_ENOMEM, "out of memory");
	for (size_t k = 0; k < n; k++) {
		json_t *jd = json_array_get(ja, k), *jt;
		struct hp_pool_dev *d = &nd->devs[k];
		const char *tname;
		char where[48];
		long long count, fr;
		int rc;

		snprintf(where, sizeof(where), "devices[%zu]: ", k);
		if (!json_is_object(jd))
			return bad(c, false, "%smust be an object", where);
		jt = json_object_get(jd, "type");
		if (!jt)
			return bad(c, false, "%smissing 'type'", where);
		if (!json_is_string(jt) || !*json_string_value(jt))
			return bad(c, false,
				   "%s'type' must be a non-empty string",
				   where);
		tname = json_string_value(jt);
		if (hp_str_has_control(tname))
			return bad(c, false,
				   "%s'type' holds a control character", where);
		if (cat) {
			const struct hp_device_type *t =
			    hp_catalog_find(cat, tname);
			if (!t)
				return bad(c, false,
					   "device type '%.40s' is not in the "
					   "catalog",
					   tname);
			tname = t->name;
		}
		if (strlen(tname) >= sizeof(d->type))
			return bad(c, false, "device type '%.40s' is too long",
				   tname);
		for (size_t q = 0; q < k; q++)
			if (!strcmp(nd->devs[q].type, tname))
				return bad(c, false,
					   "device type '%s' listed twice",
					   tname);
		rc = get_int(c, jd, where, "count", 1, HP_POOL_MAX_DEVICES, -1,
			     &count);
		if (rc)
			return rc;
		rc = get_int(c, jd, where, "free", 0, HP_POOL_MAX_DEVICES,
			     count, &fr);
		if (rc)
			return rc;
		if (fr > count)
			return bad(c, false,
				   "%s'free' %lld is more than 'count' %lld",
				   where, fr, count);
		snprintf(d->type, sizeof(d->type), "%s", tname);
		d->count = (int)count;
		d->free = (int)fr;
		nd->ndevs++;
	}
	return 0;
}

/* "net_transport": optional, one of the names; "auto" when absent. */
static int get_transport(const struct ctx *c, json_t *jn,
			 struct hp_pool_node *nd)
{
	json_t *v = json_object_get(jn, "net_transport");
	char esc[64];

	nd->net_transport = HP_NET_AUTO;
	if (!v)
		return 0;
	if (json_is_string(v) &&
	    !hp_net_transport_parse(json_string_value(v), &nd->net_transport))
		return 0;
	return bad(c, false,
		   "'net_transport' = '%s' is not " HP_NET_TRANSPORT_CHOICES,
		   json_is_string(v)
		       ? hp_str_escape(json_string_value(v), esc, sizeof(esc))
		       : "(not a string)");
}

static int parse_node(struct ctx *c, json_t *jn, struct hp_pool_node *nd,
		      const struct hp_catalog *cat)
{
	json_t *jname;
	long long cores;
	int rc;

	if (!json_is_object(jn))
		return bad(c, false, "must be an object");
	jname = json_object_get(jn, "name");
	if (!jname)
		return bad(c, false, "missing 'name'");
	if (!json_is_string(jname) || !*json_string_value(jname) ||
	    json_string_length(jname) > 63)
		return bad(c, false,
			   "'name' must be a string of 1 to 63 bytes");
	/* A name is an identifier, printed in tables and messages: a line
	 * break or an escape byte in it is refused, not escaped. */
	if (hp_str_has_control(json_string_value(jname)))
		return bad(c, false,
			   "'name' holds a control character; node names "
			   "are identifiers");
	nd->name = hp_strdup(json_string_value(jname));
	if (!nd->name)
		return hp_error_set(c->err, HP_ENOMEM, "out of memory");
	c->node = nd->name;
	if ((rc = parse_devices(c, jn, nd, cat)))
		return rc;
	if ((rc = get_int(c, jn, "", "cpu_cores", 1, 65536, -1, &cores)))
		return rc;
	nd->cpu_cores = (int)cores;
	for (size_t k = 0; k < sizeof(num_keys) / sizeof(num_keys[0]); k++)
		if ((rc = get_num(c, jn, &num_keys[k], nd)))
			return rc;
	return get_transport(c, jn, nd);
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
	struct ctx c = {.err = err};
	size_t plen = path ? strlen(path) : 0;
	json_error_t je;
	json_t *root, *jnodes;
	size_t n;

	/* A long path keeps its tail, where the file's name is. */
	if (!plen)
		snprintf(c.file, sizeof(c.file), "pool");
	else if (plen <= 80)
		snprintf(c.file, sizeof(c.file), "pool '%s'", path);
	else
		snprintf(c.file, sizeof(c.file), "pool '...%s'",
			 path + plen - 77);
	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!root) {
		bad(&c, true, "invalid JSON at line %d column %d: %s", je.line,
		    je.column, je.text);
		return NULL;
	}
	if (!json_is_object(root)) {
		bad(&c, true, "the top level must be an object with 'nodes'");
		goto fail;
	}
	jnodes = json_object_get(root, "nodes");
	if (!jnodes || !json_is_array(jnodes)) {
		bad(&c, true, "%s",
		    jnodes ? "'nodes' must be an array" : "missing 'nodes'");
		goto fail;
	}
	n = json_array_size(jnodes);
	if (n == 0 || n > HP_POOL_MAX_NODES) {
		bad(&c, true, "%zu nodes; give 1 to %d", n, HP_POOL_MAX_NODES);
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
		c.node = NULL;
		c.idx = i;
		if (parse_node(&c, json_array_get(jnodes, i), &p->nodes[i],
			       cat))
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
			c.node = sorted[i]->name;
			bad(&c, false, "duplicate name");
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
