/*
 * nodes.c - nodes and their devices: register or update (devices added,
 * removed only when not held, reserved from a pool file's "free"), drain
 * and resume, remove, read; a pool file loaded in one transaction; and
 * the pool as the recommender wants it (struct hp_pool), built from the
 * free devices now.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_int.h"
#include "util/banned.h"

/* Check a node as hp_store_node_put() documents. */
static int node_check(const struct hp_pool_node *n, struct hp_error *err)
{
	const char *name = n && n->name ? n->name : "";

	if (!n || !hp__store_name_ok(n->name))
		return hp_error_set(err, HP_EINVAL,
				    "node name must be 1 to 63 bytes without "
				    "control characters");
	if (n->ndevs < 1 || n->ndevs > HP_POOL_MAX_KINDS || !n->devs)
		return hp_error_set(err, HP_EINVAL,
				    "node '%s': %d device kinds; give 1 to %d",
				    name, n->ndevs, HP_POOL_MAX_KINDS);
	if (n->cpu_cores < 1)
		return hp_error_set(err, HP_EINVAL,
				    "node '%s': cpu_cores %d; at least 1", name,
				    n->cpu_cores);
	if (!(isfinite(n->memory_gb) && n->memory_gb > 0) ||
	    !(isfinite(n->intra_bw_gbps) && n->intra_bw_gbps > 0) ||
	    !(isfinite(n->net_bw_gbps) && n->net_bw_gbps > 0) ||
	    !(isfinite(n->net_latency_us) && n->net_latency_us >= 0) ||
	    !(isfinite(n->base_power_w) && n->base_power_w >= 0))
		return hp_error_set(err, HP_EINVAL,
				    "node '%s': memory and bandwidths must be "
				    "above 0, latency and power 0 or more",
				    name);
	if ((int)n->net_transport < HP_NET_AUTO ||
	    (int)n->net_transport > HP_NET_RDMA)
		return hp_error_set(err, HP_EINVAL,
				    "node '%s': net_transport %d is not auto, "
				    "tcp, socket or rdma",
				    name, (int)n->net_transport);
	for (int k = 0; k < n->ndevs; k++) {
		const struct hp_pool_dev *d = &n->devs[k];
		size_t tl = strnlen(d->type, sizeof(d->type));

		if (tl == 0 || tl >= sizeof(d->type) ||
		    hp_str_has_control(d->type))
			return hp_error_set(err, HP_EINVAL,
					    "node '%s': devices[%d]: bad type",
					    name, k);
		if (d->count < 1 || d->count > HP_POOL_MAX_DEVICES ||
		    d->free < 0 || d->free > d->count)
			return hp_error_set(err, HP_EINVAL,
					    "node '%s': %s: count %d, free %d; "
					    "count 1 to %d, free 0 to count",
					    name, d->type, d->count, d->free,
					    HP_POOL_MAX_DEVICES);
		for (int q = 0; q < k; q++)
			if (!strcmp(n->devs[q].type, d->type))
				return hp_error_set(err, HP_EINVAL,
						    "node '%s': device type "
						    "'%s' listed twice",
						    name, d->type);
	}
	return 0;
}

/* A statement failure where a trigger or constraint refuses to remove a
 * held device is HP_EBUSY. */
static int busy_if_held(int rc, int src, const char *node, struct hp_error *err)
{
	if (rc && (src & 0xff) == SQLITE_CONSTRAINT)
		return hp_error_set(err, HP_EBUSY,
				    "node '%s': a device that would go is "
				    "allocated to a job",
				    node);
	return rc;
}

/* Make the devices of one type on the node match d, at position pos. */
static int put_type(struct hp__conn *c, int64_t node_id, const char *node,
		    const struct hp_pool_dev *d, int pos, struct hp_error *err)
{
	static const char sql_del[] =
	    "DELETE FROM devices WHERE node_id = ? AND type = ? AND idx >= ?";
	static const char sql_ins[] =
	    "INSERT OR IGNORE INTO devices (node_id, type, idx, kind_pos) "
	    "VALUES (?, ?, ?, ?)";
	static const char sql_pos[] =
	    "UPDATE devices SET kind_pos = ?3, reserved = 0 WHERE node_id = ?1 "
	    "AND type = ?2";
	/* The highest indices not held by a job are reserved. */
	static const char sql_res[] =
	    "UPDATE devices SET reserved = 1 WHERE id IN (SELECT d.id FROM "
	    "devices d WHERE d.node_id = ?1 AND d.type = ?2 AND NOT EXISTS "
	    "(SELECT 1 FROM allocations a WHERE a.device_id = d.id AND "
	    "a.released_s IS NULL) ORDER BY d.idx DESC LIMIT ?3)";
	sqlite3_stmt *st;
	int rc, src;

	if (!(st = hp__stmt(c, sql_del, err)))
		return err ? err->code : HP_EIO;
	sqlite3_bind_int64(st, 1, node_id);
	hp__bind_text(st, 2, d->type);
	sqlite3_bind_int(st, 3, d->count);
	rc = hp__step_done(c, st, "devices", &src, err);
	if ((rc = busy_if_held(rc, src, node, err)))
		return rc;
	for (int i = 0; i < d->count; i++) {
		if (!(st = hp__stmt(c, sql_ins, err)))
			return err ? err->code : HP_EIO;
		sqlite3_bind_int64(st, 1, node_id);
		hp__bind_text(st, 2, d->type);
		sqlite3_bind_int(st, 3, i);
		sqlite3_bind_int(st, 4, pos);
		if ((rc = hp__step_done(c, st, "devices", NULL, err)))
			return rc;
	}
	if (!(st = hp__stmt(c, sql_pos, err)))
		return err ? err->code : HP_EIO;
	sqlite3_bind_int64(st, 1, node_id);
	hp__bind_text(st, 2, d->type);
	sqlite3_bind_int(st, 3, pos);
	if ((rc = hp__step_done(c, st, "devices", NULL, err)))
		return rc;
	if (d->count > d->free) {
		if (!(st = hp__stmt(c, sql_res, err)))
			return err ? err->code : HP_EIO;
		sqlite3_bind_int64(st, 1, node_id);
		hp__bind_text(st, 2, d->type);
		sqlite3_bind_int(st, 3, d->count - d->free);
		if ((rc = hp__step_done(c, st, "devices", NULL, err)))
			return rc;
	}
	return 0;
}

/* Remove the node's devices of types not in n. */
static int drop_other_types(struct hp__conn *c, int64_t node_id,
			    const struct hp_pool_node *n, struct hp_error *err)
{
	static const char sql_types[] =
	    "SELECT DISTINCT type FROM devices WHERE node_id = ?";
	static const char sql_del[] =
	    "DELETE FROM devices WHERE node_id = ? AND type = ?";
	char gone[HP_POOL_MAX_KINDS][HP_TYPE_MAX];
	int ngone = 0, rc, src;
	sqlite3_stmt *st;

	if (!(st = hp__stmt(c, sql_types, err)))
		return err ? err->code : HP_EIO;
	sqlite3_bind_int64(st, 1, node_id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *t = hp__col_text(st, 0);
		bool keep = false;

		for (int k = 0; k < n->ndevs && !keep; k++)
			keep = !strcmp(n->devs[k].type, t);
		if (!keep && ngone < HP_POOL_MAX_KINDS)
			snprintf(gone[ngone++], HP_TYPE_MAX, "%s", t);
	}
	rc = rc == SQLITE_DONE ? 0 : hp__dberr(c, rc, "devices", err);
	hp__stmt_done(st);
	for (int i = 0; !rc && i < ngone; i++) {
		if (!(st = hp__stmt(c, sql_del, err)))
			return err ? err->code : HP_EIO;
		sqlite3_bind_int64(st, 1, node_id);
		hp__bind_text(st, 2, gone[i]);
		rc = hp__step_done(c, st, "devices", &src, err);
		rc = busy_if_held(rc, src, n->name, err);
	}
	return rc;
}

/*
 * Put one node inside the open IMMEDIATE transaction.  keep_meta: an
 * existing node keeps its self flag and info (a pool file loaded over the
 * registered nodes).
 */
static int node_put_tx(struct hp__conn *c, const struct hp_pool_node *n,
		       const char *info, bool self, bool keep_meta, int64_t *id,
		       struct hp_error *err)
{
	static const char sql_unself[] =
	    "UPDATE nodes SET self = 0 WHERE self = 1 AND name <> ?";
	static const char sql_upsert[] =
	    "INSERT INTO nodes (name, cpu_cores, memory_gb, intra_bw_gbps, "
	    "net_bw_gbps, net_latency_us, base_power_w, self, info, created_s, "
	    "updated_s, net_transport) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, "
	    "?9, ?10, ?10, ?12) "
	    "ON CONFLICT (name) DO UPDATE SET cpu_cores = excluded.cpu_cores, "
	    "memory_gb = excluded.memory_gb, "
	    "intra_bw_gbps = excluded.intra_bw_gbps, "
	    "net_bw_gbps = excluded.net_bw_gbps, "
	    "net_latency_us = excluded.net_latency_us, "
	    "base_power_w = excluded.base_power_w, "
	    "net_transport = excluded.net_transport, "
	    "self = CASE WHEN ?11 THEN self ELSE excluded.self END, "
	    "info = CASE WHEN ?11 THEN info ELSE excluded.info END, "
	    "updated_s = excluded.updated_s RETURNING id";
	sqlite3_stmt *st;
	int64_t node_id = 0;
	int rc;

	if ((rc = node_check(n, err)))
		return rc;
	if (self) {
		if (!(st = hp__stmt(c, sql_unself, err)))
			return err ? err->code : HP_EIO;
		hp__bind_text(st, 1, n->name);
		if ((rc = hp__step_done(c, st, "node", NULL, err)))
			return rc;
	}
	if (!(st = hp__stmt(c, sql_upsert, err)))
		return err ? err->code : HP_EIO;
	hp__bind_text(st, 1, n->name);
	sqlite3_bind_int(st, 2, n->cpu_cores);
	sqlite3_bind_double(st, 3, n->memory_gb);
	sqlite3_bind_double(st, 4, n->intra_bw_gbps);
	sqlite3_bind_double(st, 5, n->net_bw_gbps);
	sqlite3_bind_double(st, 6, n->net_latency_us);
	sqlite3_bind_double(st, 7, n->base_power_w);
	sqlite3_bind_int(st, 8, self);
	hp__bind_text(st, 9, info);
	sqlite3_bind_double(st, 10, hp__store_now());
	sqlite3_bind_int(st, 11, keep_meta);
	hp__bind_text(st, 12, hp_net_transport_name(n->net_transport));
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		node_id = sqlite3_column_int64(st, 0);
		rc = sqlite3_step(st);
	}
	rc = rc == SQLITE_DONE ? 0 : hp__dberr(c, rc, "node", err);
	hp__stmt_done(st);
	if (rc)
		return rc;
	for (int k = 0; k < n->ndevs; k++)
		if ((rc = put_type(c, node_id, n->name, &n->devs[k], k, err)))
			return rc;
	if ((rc = drop_other_types(c, node_id, n, err)))
		return rc;
	if (id)
		*id = node_id;
	return 0;
}

int hp_store_node_put(struct hp_store *s, const struct hp_pool_node *n,
		      const char *info, bool self, int64_t *id,
		      struct hp_error *err)
{
	struct hp__conn *c;
	int rc;

	if ((rc = node_check(n, err)))
		return rc;
	if (!(c = hp__conn_get(s, err)))
		return err ? err->code : HP_EIO;
	if (!(rc = hp__begin(c, true, err)) &&
	    !(rc = node_put_tx(c, n, info, self, !self && !info, id, err)))
		rc = hp__commit(c, err);
	hp__conn_put(s, c);
	return rc;
}

/* Remove a node inside the open transaction. */
static int node_remove_tx(struct hp__conn *c, const char *name,
			  struct hp_error *err)
{
	static const char sql[] = "DELETE FROM nodes WHERE name = ?";
	sqlite3_stmt *st = hp__stmt(c, sql, err);
	int rc, src;

	if (!st)
		return err ? err->code : HP_EIO;
	hp__bind_text(st, 1, name);
	rc = hp__step_done(c, st, "node", &src, err);
	if (rc && (src & 0xff) == SQLITE_CONSTRAINT)
		return hp_error_set(err, HP_EBUSY,
				    "node '%s' has devices allocated to jobs",
				    name);
	if (!rc && sqlite3_changes(c->db) == 0)
		rc = hp_error_set(err, HP_ENOENT, "no node '%s'", name);
	return rc;
}

int hp_store_node_remove(struct hp_store *s, const char *name,
			 struct hp_error *err)
{
	struct hp__conn *c;
	int rc;

	if (!name)
		return hp_error_set(err, HP_EINVAL, "no node name");
	if (!(c = hp__conn_get(s, err)))
		return err ? err->code : HP_EIO;
	if (!(rc = hp__begin(c, true, err)) &&
	    !(rc = node_remove_tx(c, name, err)))
		rc = hp__commit(c, err);
	hp__conn_put(s, c);
	return rc;
}

int hp_store_node_drain(struct hp_store *s, const char *name, bool drained,
			struct hp_error *err)
{
	static const char sql[] =
	    "UPDATE nodes SET drained = ?, updated_s = ? WHERE name = ?";
	struct hp__conn *c;
	sqlite3_stmt *st;
	int rc;

	if (!name)
		return hp_error_set(err, HP_EINVAL, "no node name");
	if (!(c = hp__conn_get(s, err)))
		return err ? err->code : HP_EIO;
	if (!(st = hp__stmt(c, sql, err))) {
		rc = err ? err->code : HP_EIO;
		goto out;
	}
	sqlite3_bind_int(st, 1, drained);
	sqlite3_bind_double(st, 2, hp__store_now());
	hp__bind_text(st, 3, name);
	if (!(rc = hp__step_done(c, st, "node", NULL, err)) &&
	    sqlite3_changes(c->db) == 0)
		rc = hp_error_set(err, HP_ENOENT, "no node '%s'", name);
out:
	hp__conn_put(s, c);
	return rc;
}

int hp_store_device_drain(struct hp_store *s, const char *node,
			  const char *type, int index, bool drained,
			  struct hp_error *err)
{
	static const char sql[] =
	    "UPDATE devices SET drained = ?1 WHERE node_id = (SELECT id FROM "
	    "nodes WHERE name = ?2) AND type = ?3 AND idx = ?4";
	struct hp__conn *c;
	sqlite3_stmt *st;
	int rc;

	if (!node || !type)
		return hp_error_set(err, HP_EINVAL, "no node or device type");
	if (!(c = hp__conn_get(s, err)))
		return err ? err->code : HP_EIO;
	if (!(st = hp__stmt(c, sql, err))) {
		rc = err ? err->code : HP_EIO;
		goto out;
	}
	sqlite3_bind_int(st, 1, drained);
	hp__bind_text(st, 2, node);
	hp__bind_text(st, 3, type);
	sqlite3_bind_int(st, 4, index);
	if (!(rc = hp__step_done(c, st, "device", NULL, err)) &&
	    sqlite3_changes(c->db) == 0)
		rc = hp_error_set(err, HP_ENOENT,
				  "node '%s' has no %s device %d", node, type,
				  index);
out:
	hp__conn_put(s, c);
	return rc;
}

/* ---- reading nodes */

#define NODE_COLS                                                              \
	"id, name, cpu_cores, memory_gb, intra_bw_gbps, net_bw_gbps, "         \
	"net_latency_us, base_power_w, drained, self, info, created_s, "       \
	"updated_s, net_transport"

/* The transport stored in column i of node name, or HP_EIO for a name
 * this code does not know (written by hand, or by a newer hetpool). */
static int col_transport(sqlite3_stmt *st, int i, const char *name,
			 enum hp_net_transport *out, struct hp_error *err)
{
	const char *t = hp__col_text(st, i);
	char esc[40];

	if (!hp_net_transport_parse(t, out))
		return 0;
	hp_str_escape(t, esc, sizeof(esc));
	return hp_error_set(err, HP_EIO,
			    "node '%s': net_transport '%s' unknown", name, esc);
}

/* The node at the statement's row (NODE_COLS), without devices: HP_ENOMEM
 * (err not set), or HP_EIO (err set) for a row this code cannot read. */
static int node_row(sqlite3_stmt *st, struct hp_store_node *n,
		    struct hp_error *err)
{
	memset(n, 0, sizeof(*n));
	n->id = sqlite3_column_int64(st, 0);
	n->pool.cpu_cores = sqlite3_column_int(st, 2);
	n->pool.memory_gb = sqlite3_column_double(st, 3);
	n->pool.intra_bw_gbps = sqlite3_column_double(st, 4);
	n->pool.net_bw_gbps = sqlite3_column_double(st, 5);
	n->pool.net_latency_us = sqlite3_column_double(st, 6);
	n->pool.base_power_w = sqlite3_column_double(st, 7);
	n->drained = sqlite3_column_int(st, 8) != 0;
	n->self = sqlite3_column_int(st, 9) != 0;
	n->created_s = hp__col_time(st, 11);
	n->updated_s = hp__col_time(st, 12);
	if (hp__col_dup(st, 1, &n->pool.name) || hp__col_dup(st, 10, &n->info))
		return HP_ENOMEM;
	return col_transport(st, 13, n->pool.name ? n->pool.name : "",
			     &n->pool.net_transport, err);
}

/* Read the devices of node n (its id set) inside the open transaction:
 * each one, and the per-type counts of n->pool. */
static int node_devices(struct hp__conn *c, struct hp_store_node *n,
			struct hp_error *err)
{
	static const char sql[] =
	    "SELECT d.type, d.idx, d.drained, d.reserved, a.job_id FROM "
	    "devices d LEFT JOIN allocations a ON a.device_id = d.id AND "
	    "a.released_s IS NULL WHERE d.node_id = ? ORDER BY d.kind_pos, "
	    "d.idx";
	sqlite3_stmt *st = hp__stmt(c, sql, err);
	int cap = 0, rc;

	if (!st)
		return err ? err->code : HP_EIO;
	sqlite3_bind_int64(st, 1, n->id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct hp_store_device *d;
		struct hp_pool_dev *pd;
		const char *type = hp__col_text(st, 0);

		if (hp_grow(&n->devices, &cap, n->ndevices, sizeof(*n->devices),
			    8))
			goto nomem;
		d = &n->devices[n->ndevices++];
		memset(d, 0, sizeof(*d));
		snprintf(d->type, sizeof(d->type), "%s", type);
		d->index = sqlite3_column_int(st, 1);
		d->drained = sqlite3_column_int(st, 2) != 0;
		d->job_id = sqlite3_column_int64(st, 4);
		if (d->job_id)
			d->state = HP_DEV_ALLOCATED;
		else if (d->drained || n->drained)
			d->state = HP_DEV_DRAINED;
		else if (sqlite3_column_int(st, 3))
			d->state = HP_DEV_RESERVED;
		else
			d->state = HP_DEV_FREE;
		/* Rows come grouped by type. */
		pd = n->pool.ndevs ? &n->pool.devs[n->pool.ndevs - 1] : NULL;
		if (!pd || strcmp(pd->type, d->type)) {
			void *b =
			    realloc(n->pool.devs, (size_t)(n->pool.ndevs + 1) *
						      sizeof(*n->pool.devs));
			if (!b)
				goto nomem;
			n->pool.devs = b;
			pd = &n->pool.devs[n->pool.ndevs++];
			memset(pd, 0, sizeof(*pd));
			snprintf(pd->type, sizeof(pd->type), "%s", d->type);
		}
		pd->count++;
		pd->free += d->state == HP_DEV_FREE;
	}
	rc = rc == SQLITE_DONE ? 0 : hp__dberr(c, rc, "devices", err);
	hp__stmt_done(st);
	return rc;
nomem:
	hp__stmt_done(st);
	return hp_error_set(err, HP_ENOMEM, "out of memory");
}

/* Nodes of a query (NODE_COLS, with at most one text parameter) with
 * their devices, in one read transaction. */
static int read_nodes(struct hp_store *s, const char *sql, const char *arg,
		      struct hp_store_node **out, int *n, struct hp_error *err)
{
	struct hp_store_node *a = NULL;
	int na = 0, cap = 0, rc;
	struct hp__conn *c;
	sqlite3_stmt *st;

	*out = NULL;
	*n = 0;
	if (!(c = hp__conn_get(s, err)))
		return err ? err->code : HP_EIO;
	if ((rc = hp__begin(c, false, err)))
		goto out;
	if (!(st = hp__stmt(c, sql, err))) {
		rc = err ? err->code : HP_EIO;
		goto out;
	}
	if (arg)
		hp__bind_text(st, 1, arg);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (hp_grow(&a, &cap, na, sizeof(*a), 16)) {
			rc = HP_ENOMEM;
			break;
		}
		rc = node_row(st, &a[na], err);
		na++;
		if (rc)
			break;
	}
	if (rc == HP_ENOMEM)
		rc = hp_error_set(err, HP_ENOMEM, "out of memory");
	else if (rc == SQLITE_DONE)
		rc = 0;
	else if (rc != HP_EIO) /* HP_EIO: node_row() said why */
		rc = hp__dberr(c, rc, "nodes", err);
	hp__stmt_done(st);
	for (int i = 0; !rc && i < na; i++)
		rc = node_devices(c, &a[i], err);
	if (!rc)
		rc = hp__commit(c, err);
out:
	hp__conn_put(s, c);
	if (rc) {
		hp_store_node_list_free(a, na);
		return rc;
	}
	*out = a;
	*n = na;
	return 0;
}

static int one_node(struct hp_store *s, const char *sql, const char *arg,
		    const char *what, struct hp_store_node *out,
		    struct hp_error *err)
{
	struct hp_store_node *a;
	int n, rc;

	memset(out, 0, sizeof(*out));
	if ((rc = read_nodes(s, sql, arg, &a, &n, err)))
		return rc;
	if (n == 0) {
		free(a);
		return arg ? hp_error_set(err, HP_ENOENT, "no node '%s'", arg)
			   : hp_error_set(err, HP_ENOENT, "%s", what);
	}
	*out = a[0];
	for (int i = 1; i < n; i++)
		hp_store_node_release(&a[i]);
	free(a);
	return 0;
}

int hp_store_node_get(struct hp_store *s, const char *name,
		      struct hp_store_node *out, struct hp_error *err)
{
	static const char sql[] =
	    "SELECT " NODE_COLS " FROM nodes WHERE name = ?";

	if (!name) {
		memset(out, 0, sizeof(*out));
		return hp_error_set(err, HP_EINVAL, "no node name");
	}
	return one_node(s, sql, name, NULL, out, err);
}

int hp_store_node_self(struct hp_store *s, struct hp_store_node *out,
		       struct hp_error *err)
{
	static const char sql[] =
	    "SELECT " NODE_COLS " FROM nodes WHERE self = 1";

	return one_node(s, sql, NULL, "this host is not registered", out, err);
}

int hp_store_node_list(struct hp_store *s, struct hp_store_node **out, int *n,
		       struct hp_error *err)
{
	static const char sql[] = "SELECT " NODE_COLS " FROM nodes ORDER BY id";

	return read_nodes(s, sql, NULL, out, n, err);
}

/* ---- the pool */

int hp_store_pool_load(struct hp_store *s, const struct hp_pool *p,
		       bool replace, struct hp_error *err)
{
	static const char sql_names[] = "SELECT name FROM nodes ORDER BY id";
	struct hp__conn *c;
	sqlite3_stmt *st;
	char **gone = NULL;
	int ngone = 0, cap = 0, rc;

	if (!p || p->n < 0 || (p->n > 0 && !p->nodes))
		return hp_error_set(err, HP_EINVAL, "no pool");
	for (int i = 0; i < p->n; i++)
		if ((rc = node_check(&p->nodes[i], err)))
			return rc;
	if (!(c = hp__conn_get(s, err)))
		return err ? err->code : HP_EIO;
	if ((rc = hp__begin(c, true, err)))
		goto out;
	for (int i = 0; i < p->n; i++)
		if ((rc = node_put_tx(c, &p->nodes[i], NULL, false, true, NULL,
				      err)))
			goto out;
	if (replace) {
		if (!(st = hp__stmt(c, sql_names, err))) {
			rc = err ? err->code : HP_EIO;
			goto out;
		}
		while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			const char *name = hp__col_text(st, 0);
			bool keep = false;

			for (int i = 0; i < p->n && !keep; i++)
				keep = !strcmp(p->nodes[i].name, name);
			if (keep)
				continue;
			if (hp_grow(&gone, &cap, ngone, sizeof(*gone), 8)) {
				rc = HP_ENOMEM;
				break;
			}
			if (!(gone[ngone] = hp_strdup(name))) {
				rc = HP_ENOMEM;
				break;
			}
			ngone++;
		}
		hp__stmt_done(st);
		if (rc == HP_ENOMEM) {
			rc = hp_error_set(err, HP_ENOMEM, "out of memory");
			goto out;
		}
		if (rc != SQLITE_DONE) {
			rc = hp__dberr(c, rc, "nodes", err);
			goto out;
		}
		rc = 0;
		for (int i = 0; i < ngone; i++)
			if ((rc = node_remove_tx(c, gone[i], err)))
				goto out;
	}
	rc = hp__commit(c, err);
out:
	for (int i = 0; i < ngone; i++)
		free(gone[i]);
	free(gone);
	hp__conn_put(s, c);
	if (rc && p->path && *p->path)
		hp_error_prefix(err, "pool '%s'", p->path);
	return rc;
}

/* Build the pool inside the open read transaction on c. */
static struct hp_pool *pool_build(struct hp__conn *c, struct hp_error *err)
{
	static const char sql_nodes[] =
	    "SELECT id, name, cpu_cores, memory_gb, intra_bw_gbps, "
	    "net_bw_gbps, net_latency_us, base_power_w, drained, "
	    "net_transport FROM nodes ORDER BY id";
	static const char sql_devs[] =
	    "SELECT d.node_id, d.type, count(*), sum(NOT d.drained AND NOT "
	    "d.reserved AND a.id IS NULL) FROM devices d LEFT JOIN "
	    "allocations a ON a.device_id = d.id AND a.released_s IS NULL "
	    "GROUP BY d.node_id, d.type ORDER BY d.node_id, min(d.kind_pos)";
	struct hp_pool *p = calloc(1, sizeof(*p));
	int64_t *ids = NULL;
	int cap = 0, rc, k = 0;
	sqlite3_stmt *st;
	bool *drained = NULL;

	if (!p || !(p->path = hp_strdup(""))) {
		hp_error_set(err, HP_ENOMEM, "out of memory");
		goto fail;
	}
	if (!(st = hp__stmt(c, sql_nodes, err)))
		goto fail;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct hp_pool_node *nd;

		if (p->n == cap) {
			int nc = cap ? 2 * cap : 16;
			void *b1 = realloc(p->nodes, (size_t)nc * sizeof(*nd));
			if (b1)
				p->nodes = b1;
			void *b2 = realloc(ids, (size_t)nc * sizeof(*ids));
			if (b2)
				ids = b2;
			void *b3 =
			    realloc(drained, (size_t)nc * sizeof(*drained));
			if (b3)
				drained = b3;
			if (!b1 || !b2 || !b3) {
				rc = HP_ENOMEM;
				break;
			}
			cap = nc;
		}
		nd = &p->nodes[p->n];
		memset(nd, 0, sizeof(*nd));
		ids[p->n] = sqlite3_column_int64(st, 0);
		p->n++;
		if (hp__col_dup(st, 1, &nd->name)) {
			rc = HP_ENOMEM;
			break;
		}
		nd->cpu_cores = sqlite3_column_int(st, 2);
		nd->memory_gb = sqlite3_column_double(st, 3);
		nd->intra_bw_gbps = sqlite3_column_double(st, 4);
		nd->net_bw_gbps = sqlite3_column_double(st, 5);
		nd->net_latency_us = sqlite3_column_double(st, 6);
		nd->base_power_w = sqlite3_column_double(st, 7);
		drained[p->n - 1] = sqlite3_column_int(st, 8) != 0;
		if ((rc = col_transport(st, 9, nd->name, &nd->net_transport,
					err)))
			break;
	}
	hp__stmt_done(st);
	if (rc == HP_ENOMEM) {
		hp_error_set(err, HP_ENOMEM, "out of memory");
		goto fail;
	}
	if (rc == HP_EIO)
		goto fail; /* col_transport() said why */
	if (rc != SQLITE_DONE) {
		hp__dberr(c, rc, "nodes", err);
		goto fail;
	}
	if (!(st = hp__stmt(c, sql_devs, err)))
		goto fail;
	/* Both are ordered by node id: walk them together. */
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t nid = sqlite3_column_int64(st, 0);
		struct hp_pool_node *nd;
		struct hp_pool_dev *d;
		void *b;

		while (k < p->n && ids[k] < nid)
			k++;
		if (k == p->n || ids[k] != nid)
			continue; /* cannot happen: foreign key */
		nd = &p->nodes[k];
		b = realloc(nd->devs, (size_t)(nd->ndevs + 1) * sizeof(*d));
		if (!b) {
			rc = HP_ENOMEM;
			break;
		}
		nd->devs = b;
		d = &nd->devs[nd->ndevs++];
		memset(d, 0, sizeof(*d));
		snprintf(d->type, sizeof(d->type), "%s", hp__col_text(st, 1));
		d->count = sqlite3_column_int(st, 2);
		d->free = drained[k] ? 0 : sqlite3_column_int(st, 3);
	}
	hp__stmt_done(st);
	if (rc == HP_ENOMEM) {
		hp_error_set(err, HP_ENOMEM, "out of memory");
		goto fail;
	}
	if (rc != SQLITE_DONE) {
		hp__dberr(c, rc, "devices", err);
		goto fail;
	}
	free(ids);
	free(drained);
	return p;
fail:
	free(ids);
	free(drained);
	hp_pool_free(p);
	return NULL;
}

/* A deep copy of a pool; NULL on ENOMEM. */
static struct hp_pool *pool_dup(const struct hp_pool *a)
{
	struct hp_pool *p = calloc(1, sizeof(*p));

	if (!p || !(p->path = hp_strdup(a->path)) ||
	    !(p->nodes = calloc(a->n ? (size_t)a->n : 1, sizeof(*p->nodes))))
		goto fail;
	for (int i = 0; i < a->n; i++) {
		const struct hp_pool_node *x = &a->nodes[i];
		struct hp_pool_node *y = &p->nodes[i];

		*y = *x;
		y->name = NULL;
		y->devs = NULL;
		p->n++;
		if (!(y->name = hp_strdup(x->name)) ||
		    !(y->devs = malloc((size_t)(x->ndevs ? x->ndevs : 1) *
				       sizeof(*y->devs))))
			goto fail;
		if (x->ndevs)
			memcpy(y->devs, x->devs,
			       (size_t)x->ndevs * sizeof(*y->devs));
	}
	return p;
fail:
	hp_pool_free(p);
	return NULL;
}

struct hp_pool *hp_store_pool(struct hp_store *s, struct hp_error *err)
{
	static const char sql_v[] = "SELECT v FROM pool_version";
	struct hp_pool *p = NULL, *copy;
	struct hp__conn *c;
	sqlite3_stmt *st;
	int64_t v = -1;
	int rc;

	if (!(c = hp__conn_get(s, err)))
		return NULL;
	/* The version and, when it moved, the pool, in one snapshot. */
	if (hp__begin(c, false, err) || !(st = hp__stmt(c, sql_v, err)))
		goto out;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	else
		hp__dberr(c, rc, "pool version", err);
	hp__stmt_done(st);
	if (v < 0)
		goto out;
	pthread_mutex_lock(&s->mu);
	if (s->pool_cache && s->pool_cache_v == v) {
		p = pool_dup(s->pool_cache);
		pthread_mutex_unlock(&s->mu);
		if (!p)
			hp_error_set(err, HP_ENOMEM, "out of memory");
		goto out;
	}
	pthread_mutex_unlock(&s->mu);
	if (!(p = pool_build(c, err)))
		goto out;
	if (hp__commit(c, err)) {
		hp_pool_free(p);
		p = NULL;
		goto out;
	}
	/* Keep the newest; a cache that cannot be made is no error. */
	copy = pool_dup(p);
	pthread_mutex_lock(&s->mu);
	if (copy && (!s->pool_cache || s->pool_cache_v < v)) {
		hp_pool_free(s->pool_cache);
		s->pool_cache = copy;
		s->pool_cache_v = v;
		copy = NULL;
	}
	pthread_mutex_unlock(&s->mu);
	hp_pool_free(copy);
out:
	hp__conn_put(s, c);
	return p;
}
