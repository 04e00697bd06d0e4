/*
 * metrics.c - GET /metrics in the Prometheus text format (version
 * 0.0.4): requests and their latencies by route, method and status
 * (counted with atomics by the threads that answer them), connections,
 * and at each scrape the pool's devices by type and state, jobs by
 * state, the queue, and predicted against measured step times of the
 * jobs that finished.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hetpoold.h"

static const int codes[] = {200, 201, 202, 204, 400, 401, 403, 404, 405,
			    408, 409, 413, 415, 422, 429, 500, 503, 0};
#define NCODES ((int)(sizeof(codes) / sizeof(codes[0])))
static const double buckets[] = {0.0005, 0.001, 0.0025, 0.005, 0.01,
				 0.025,	 0.05,	0.1,	0.25,  0.5,
				 1,	 2.5,	5,	10};
#define NBUCKETS ((int)(sizeof(buckets) / sizeof(buckets[0])))

struct route_stats {
	atomic_ulong by_code[NCODES]; /* last: any other status */
	atomic_ulong bucket[NBUCKETS + 1];
	atomic_ulong sum_ns;
	atomic_ulong count;
};

struct hd_metrics {
	int nroutes;
	struct route_stats *routes; /* nroutes + 1: the last, no route */
	atomic_long conns;
	atomic_ulong conns_total;
	atomic_ulong slow_closed;
};

struct hd_metrics *hd_metrics_new(int nroutes)
{
	struct hd_metrics *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->nroutes = nroutes;
	if (!(m->routes = calloc((size_t)nroutes + 1, sizeof(*m->routes)))) {
		free(m);
		return NULL;
	}
	return m;
}

void hd_metrics_free(struct hd_metrics *m)
{
	if (!m)
		return;
	free(m->routes);
	free(m);
}

void hd_metrics_request(struct hd_metrics *m, int route, const char *method,
			int status, double seconds)
{
	struct route_stats *r;
	int c = NCODES - 1, b = NBUCKETS;

	(void)method; /* a route has one method */
	if (!m)
		return;
	r = &m->routes[route < 0 || route >= m->nroutes ? m->nroutes : route];
	for (int i = 0; i < NCODES - 1; i++)
		if (codes[i] == status) {
			c = i;
			break;
		}
	for (int i = 0; i < NBUCKETS; i++)
		if (seconds <= buckets[i]) {
			b = i;
			break;
		}
	atomic_fetch_add_explicit(&r->by_code[c], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&r->bucket[b], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(
	    &r->sum_ns, (unsigned long)(seconds > 0 ? seconds * 1e9 : 0),
	    memory_order_relaxed);
	atomic_fetch_add_explicit(&r->count, 1, memory_order_relaxed);
}

void hd_metrics_conn(struct hd_metrics *m, int delta)
{
	if (!m)
		return;
	atomic_fetch_add(&m->conns, delta);
	if (delta > 0)
		atomic_fetch_add(&m->conns_total, 1);
}

void hd_metrics_slow_client(struct hd_metrics *m)
{
	if (m)
		atomic_fetch_add(&m->slow_closed, 1);
}

/* A label value with \, " and newlines escaped (the format's rule). */
static const char *lv(const char *s, char *buf, size_t n)
{
	size_t k = 0;

	for (; *s && k + 3 < n; s++) {
		if (*s == '\\' || *s == '"') {
			buf[k++] = '\\';
			buf[k++] = *s;
		} else if (*s == '\n') {
			buf[k++] = '\\';
			buf[k++] = 'n';
		} else {
			buf[k++] = *s;
		}
	}
	buf[k] = '\0';
	return buf;
}

static void help(struct hp_buf *b, const char *name, const char *type,
		 const char *text)
{
	hp_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, text, name,
		      type);
}

static void requests(struct hd_metrics *m, struct hp_buf *b)
{
	char rt[160];

	help(b, "hetpoold_http_requests_total", "counter",
	     "Requests answered, by route, method and status code "
	     "(code=\"other\" for the rest; route=\"none\" when no route "
	     "matched).");
	for (int i = 0; i <= m->nroutes; i++) {
		const char *route =
		    i < m->nroutes ? hd_routes[i].pattern : "none";
		const char *method =
		    i < m->nroutes ? hd_routes[i].method : "any";
		for (int c = 0; c < NCODES; c++) {
			unsigned long v = atomic_load(&m->routes[i].by_code[c]);
			if (!v)
				continue;
			lv(route, rt, sizeof(rt));
			if (codes[c])
				hp_buf_printf(b,
					      "hetpoold_http_requests_total{"
					      "route=\"%s\",method=\"%s\","
					      "code=\"%d\"} %lu\n",
					      rt, method, codes[c], v);
			else
				hp_buf_printf(b,
					      "hetpoold_http_requests_total{"
					      "route=\"%s\",method=\"%s\","
					      "code=\"other\"} %lu\n",
					      rt, method, v);
		}
	}
	help(b, "hetpoold_http_request_duration_seconds", "histogram",
	     "Time from a request's headers to its answer, by route.");
	for (int i = 0; i <= m->nroutes; i++) {
		const struct route_stats *r = &m->routes[i];
		unsigned long n = atomic_load(&r->count), cum = 0;
		const char *route =
		    i < m->nroutes ? hd_routes[i].pattern : "none";
		const char *method =
		    i < m->nroutes ? hd_routes[i].method : "any";
		if (!n)
			continue;
		lv(route, rt, sizeof(rt));
		for (int k = 0; k < NBUCKETS; k++) {
			cum += atomic_load(&r->bucket[k]);
			hp_buf_printf(b,
				      "hetpoold_http_request_duration_seconds_"
				      "bucket{route=\"%s\",method=\"%s\","
				      "le=\"%g\"} %lu\n",
				      rt, method, buckets[k], cum);
		}
		cum += atomic_load(&r->bucket[NBUCKETS]);
		hp_buf_printf(b,
			      "hetpoold_http_request_duration_seconds_bucket{"
			      "route=\"%s\",method=\"%s\",le=\"+Inf\"} %lu\n",
			      rt, method, cum);
		hp_buf_printf(b,
			      "hetpoold_http_request_duration_seconds_sum{"
			      "route=\"%s\",method=\"%s\"} %.9f\n",
			      rt, method, atomic_load(&r->sum_ns) / 1e9);
		hp_buf_printf(b,
			      "hetpoold_http_request_duration_seconds_count{"
			      "route=\"%s\",method=\"%s\"} %lu\n",
			      rt, method, cum);
	}
}

/* Predicted against measured step times of the jobs that finished. */
static void step_times(struct hd *d, struct hp_buf *b)
{
	static const double ratio_b[] = {0.5,  0.67, 0.8, 0.9, 1.1,
					 1.25, 1.5,  2,	  4};
	enum { NR = sizeof(ratio_b) / sizeof(ratio_b[0]) };
	unsigned long rb[NR + 1] = {0}, n = 0, nboth = 0;
	double sp = 0, sm = 0, rs = 0;
	int64_t after = 0;

	for (;;) {
		struct hp_store_measurement *ms = NULL;
		int k = 0;
		if (hp_store_measurement_list(d->store, HP_MEAS_JOB, after,
					      1000, &ms, &k, NULL) ||
		    k == 0) {
			hp_store_measurement_list_free(ms, k);
			break;
		}
		for (int i = 0; i < k; i++) {
			const struct hp_store_measurement *x = &ms[i];
			after = x->id;
			n++;
			sm += x->step_time_s;
			if (isfinite(x->predicted_step_time_s) &&
			    x->predicted_step_time_s > 0) {
				double r =
				    x->step_time_s / x->predicted_step_time_s;
				int j = NR;
				for (int q = 0; q < NR; q++)
					if (r <= ratio_b[q]) {
						j = q;
						break;
					}
				rb[j]++;
				rs += r;
				nboth++;
				sp += x->predicted_step_time_s;
			}
		}
		hp_store_measurement_list_free(ms, k);
		if (k < 1000)
			break;
	}
	help(b, "hetpoold_job_step_time_measured_seconds", "summary",
	     "Measured step time (median) of the jobs that finished.");
	hp_buf_printf(b,
		      "hetpoold_job_step_time_measured_seconds_sum %.9g\n"
		      "hetpoold_job_step_time_measured_seconds_count %lu\n",
		      sm, n);
	help(b, "hetpoold_job_step_time_predicted_seconds", "summary",
	     "Predicted step time of the jobs that finished (those with a "
	     "prediction).");
	hp_buf_printf(b,
		      "hetpoold_job_step_time_predicted_seconds_sum %.9g\n"
		      "hetpoold_job_step_time_predicted_seconds_count %lu\n",
		      sp, nboth);
	help(b, "hetpoold_job_step_time_ratio", "histogram",
	     "Measured over predicted step time of the jobs that finished.");
	{
		unsigned long cum = 0;
		for (int q = 0; q < NR; q++) {
			cum += rb[q];
			hp_buf_printf(
			    b,
			    "hetpoold_job_step_time_ratio_bucket{le=\"%g\"} "
			    "%lu\n",
			    ratio_b[q], cum);
		}
		cum += rb[NR];
		hp_buf_printf(b,
			      "hetpoold_job_step_time_ratio_bucket{le=\"+Inf\"}"
			      " %lu\nhetpoold_job_step_time_ratio_sum %.9g\n"
			      "hetpoold_job_step_time_ratio_count %lu\n",
			      cum, rs, cum);
	}
}

static void pool_and_jobs(struct hd *d, struct hp_buf *b)
{
	struct hp_store_metrics sm = {0};
	struct hp_error err = {0};
	char t[64];

	if (hp_store_metrics(d->store, &sm, &err)) {
		hd_log(HP_LOG_ERROR, "metrics: reading the store", "error",
		       "s:", err.msg, NULL);
		help(b, "hetpoold_store_up", "gauge",
		     "Whether the store could be read for this scrape.");
		hp_buf_printf(b, "hetpoold_store_up 0\n");
		return;
	}
	help(b, "hetpoold_store_up", "gauge",
	     "Whether the store could be read for this scrape.");
	hp_buf_printf(b, "hetpoold_store_up 1\n");
	help(b, "hetpoold_store_writable", "gauge",
	     "0 once a write failed for want of storage (disk full, a "
	     "read-only database) until one succeeds.");
	hp_buf_printf(b, "hetpoold_store_writable %d\n",
		      hp_store_writable(d->store, NULL, 0) ? 1 : 0);
	help(b, "hetpoold_devices", "gauge",
	     "Devices of the pool by type and state (free, allocated, "
	     "drained, reserved).");
	for (int i = 0; i < sm.ntypes; i++) {
		const struct hp_store_type_count *c = &sm.types[i];
		lv(c->type, t, sizeof(t));
		hp_buf_printf(
		    b,
		    "hetpoold_devices{type=\"%s\",state=\"free\"} %d\n"
		    "hetpoold_devices{type=\"%s\",state=\"allocated\"} %d\n"
		    "hetpoold_devices{type=\"%s\",state=\"drained\"} %d\n"
		    "hetpoold_devices{type=\"%s\",state=\"reserved\"} %d\n",
		    t, c->free, t, c->allocated, t, c->drained, t, c->reserved);
	}
	help(b, "hetpoold_jobs", "gauge", "Jobs by state.");
	for (int s = 0; s <= HP_JOB_CANCELLED; s++)
		hp_buf_printf(b, "hetpoold_jobs{state=\"%s\"} %ld\n",
			      hp_job_state_name((enum hp_job_state)s),
			      sm.jobs[s]);
	help(b, "hetpoold_queue_length", "gauge", "Jobs waiting for devices.");
	hp_buf_printf(b, "hetpoold_queue_length %ld\n", sm.queue_len);
	help(b, "hetpoold_nodes", "gauge", "Nodes registered.");
	hp_buf_printf(b, "hetpoold_nodes %d\n", sm.nodes);
	help(b, "hetpoold_nodes_drained", "gauge", "Nodes drained.");
	hp_buf_printf(b, "hetpoold_nodes_drained %d\n", sm.nodes_drained);
	help(b, "hetpoold_models", "gauge", "Models stored.");
	hp_buf_printf(b, "hetpoold_models %ld\n", sm.models);
	help(b, "hetpoold_measurements", "gauge", "Measurements stored.");
	hp_buf_printf(b, "hetpoold_measurements %ld\n", sm.measurements);
	help(b, "hetpoold_tokens_active", "gauge", "Tokens in force.");
	hp_buf_printf(b, "hetpoold_tokens_active %ld\n", sm.tokens_active);
	hp_store_metrics_release(&sm);
}

char *hd_metrics_render(struct hd *d)
{
	struct hd_metrics *m = d->metrics;
	struct hp_buf b;
	const struct hp_snap *snap;

	hp_buf_init(&b, 16u << 20);
	help(&b, "hetpoold_info", "gauge", "hetpoold's version.");
	hp_buf_printf(&b, "hetpoold_info{version=\"%s\"} 1\n", hp_version());
	help(&b, "hetpoold_start_time_seconds", "gauge",
	     "When hetpoold started (Unix time).");
	hp_buf_printf(&b, "hetpoold_start_time_seconds %.3f\n", d->started_s);
	requests(m, &b);
	help(&b, "hetpoold_connections", "gauge", "Connections open now.");
	hp_buf_printf(&b, "hetpoold_connections %ld\n",
		      (long)atomic_load(&m->conns));
	help(&b, "hetpoold_connections_total", "counter",
	     "Connections accepted.");
	hp_buf_printf(&b, "hetpoold_connections_total %lu\n",
		      atomic_load(&m->conns_total));
	help(&b, "hetpoold_slow_connections_closed_total", "counter",
	     "Connections closed because the client took longer than the "
	     "request timeout to send its request.");
	hp_buf_printf(&b, "hetpoold_slow_connections_closed_total %lu\n",
		      atomic_load(&m->slow_closed));
	snap = hp_ctx_acquire(d->ctx);
	help(&b, "hetpoold_estimator_version", "gauge",
	     "Version of the estimator in use (1 at start, one more per "
	     "refit).");
	hp_buf_printf(&b, "hetpoold_estimator_version %llu\n",
		      (unsigned long long)hp_snap_version(snap));
	hp_snap_release(snap);
	pool_and_jobs(d, &b);
	step_times(d, &b);
	return hp_buf_detach(&b);
}
