/*
 * server.c - hetpoold's HTTP side over libmicrohttpd: the listening
 * socket (loopback unless told otherwise, TLS when given a certificate),
 * the connection cap and timeouts, the two-phase request handler (the
 * response is queued on the call after the headers, which keeps
 * connections alive), routing by method and path, authentication and
 * roles, body limits and media types, and answers (JSON, problem+json).
 *
 * Slow clients: MHD closes a connection idle for idle_timeout_s; on top,
 * a reaper thread closes (shutdown(2)) any connection that has spent
 * request_timeout_s waiting for a client's request (its headers, its
 * body, or the next request on a kept-alive connection), so a client
 * that trickles bytes cannot hold a connection for long.  MHD reports a
 * connection's end before it closes the socket, and the reaper works
 * under the same lock, so it never touches a socket that was closed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "hetpoold.h"

/* ---- connections and the reaper */

enum conn_state {
	CONN_WAIT = 0, /* waiting for a request's headers */
	CONN_BODY = 1, /* reading a request's body */
	CONN_BUSY = 2, /* handling it or sending the answer */
};

struct hd_conn {
	struct hd_conn *prev, *next;
	int fd;
	enum conn_state state;
	double since; /* when it entered the state (hp_now_s) */
	bool shut;
};

static pthread_mutex_t conns_mu = PTHREAD_MUTEX_INITIALIZER;
static struct hd_conn *conns;
static pthread_t reaper;
static bool reaper_running;
static pthread_mutex_t reaper_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t reaper_cv = PTHREAD_COND_INITIALIZER;
static bool reaper_stop;

static void conn_set(struct hd_conn *c, enum conn_state s)
{
	if (!c)
		return;
	pthread_mutex_lock(&conns_mu);
	c->state = s;
	c->since = hp_now_s();
	pthread_mutex_unlock(&conns_mu);
}

static void notify_conn(void *cls, struct MHD_Connection *mc,
			void **socket_context,
			enum MHD_ConnectionNotificationCode code)
{
	struct hd *d = cls;
	struct hd_conn *c;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(
		    mc, MHD_CONNECTION_INFO_CONNECTION_FD);
		if (!(c = calloc(1, sizeof(*c))))
			return;
		c->fd = ci ? ci->connect_fd : -1;
		c->state = CONN_WAIT;
		c->since = hp_now_s();
		pthread_mutex_lock(&conns_mu);
		c->next = conns;
		if (conns)
			conns->prev = c;
		conns = c;
		pthread_mutex_unlock(&conns_mu);
		*socket_context = c;
		hd_metrics_conn(d->metrics, 1);
		return;
	}
	if (!(c = *socket_context))
		return;
	pthread_mutex_lock(&conns_mu);
	if (c->prev)
		c->prev->next = c->next;
	else
		conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	pthread_mutex_unlock(&conns_mu);
	free(c);
	*socket_context = NULL;
	hd_metrics_conn(d->metrics, -1);
}

static void *reaper_main(void *arg)
{
	struct hd *d = arg;

	pthread_mutex_lock(&reaper_mu);
	while (!reaper_stop) {
		struct timespec ts;
		double now = hp_now_s();
		int shut = 0;

		pthread_mutex_lock(&conns_mu);
		for (struct hd_conn *c = conns; c; c = c->next)
			if (!c->shut && c->fd >= 0 && c->state != CONN_BUSY &&
			    now - c->since > d->cfg.request_timeout_s) {
				shutdown(c->fd, SHUT_RDWR);
				c->shut = true;
				shut++;
			}
		pthread_mutex_unlock(&conns_mu);
		for (int i = 0; i < shut; i++)
			hd_metrics_slow_client(d->metrics);
		if (shut)
			hd_log(HP_LOG_INFO, "closed slow connections", "count",
			       "i:", (long long)shut, "timeout_s",
			       "f:", d->cfg.request_timeout_s, NULL);
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 250000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&reaper_cv, &reaper_mu, &ts);
	}
	pthread_mutex_unlock(&reaper_mu);
	return NULL;
}

/* ---- answers */

void hd_json(struct hd_resp *out, int status, json_t *o)
{
	free(out->body);
	out->body = NULL;
	out->status = status;
	out->ctype = "application/json";
	if (o)
		out->body = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (!out->body) {
		/* out of memory: a fixed answer */
		out->status = 500;
		out->ctype = "application/problem+json";
		out->body = NULL;
	}
	out->len = out->body ? strlen(out->body) : 0;
}

void hd_text(struct hd_resp *out, int status, const char *ctype, char *body,
	     size_t len)
{
	free(out->body);
	out->status = status;
	out->ctype = ctype;
	out->body = body;
	out->len = len;
}

void hd_problem_from(struct hd_resp *out, const struct hp_api_problem *pb)
{
	free(out->body);
	out->status = pb->status;
	out->ctype = "application/problem+json";
	out->body = hp_api_problem_json(pb, NULL);
	out->len = out->body ? strlen(out->body) : 0;
	if (pb->status == 401)
		out->www_auth = "Bearer realm=\"hetpoold\"";
}

void hd_problem(struct hd_resp *out, int status, const char *type,
		const char *field, const char *fmt, ...)
{
	struct hp_api_problem pb = {0};
	va_list ap;

	pb.status = status;
	snprintf(pb.type, sizeof(pb.type), "%s", type);
	snprintf(pb.field, sizeof(pb.field), "%s", field ? field : "");
	va_start(ap, fmt);
	vsnprintf(pb.detail, sizeof(pb.detail), fmt, ap);
	va_end(ap);
	hd_problem_from(out, &pb);
}

void hd_problem_err(struct hd_resp *out, const struct hp_error *err)
{
	switch (err->code) {
	case HP_ENOENT:
		hd_problem(out, 404, "not-found", NULL, "%s", err->msg);
		break;
	case HP_EBUSY:
	case HP_EEXIST:
	case HP_ESTATE:
		hd_problem(out, 409, "conflict", NULL, "%s", err->msg);
		break;
	case HP_EINVAL:
	case HP_EPARSE:
	case HP_ERANGE:
	case HP_ESHAPE:
	case HP_ECYCLE:
	case HP_EUNSUPP:
	case HP_ETOOBIG:
		hd_problem(out, 422, "unprocessable", NULL, "%s", err->msg);
		break;
	case HP_ESTORAGE:
		/* disk full or a read-only database: the operator's to fix,
		 * and worth a retry after (GET /healthz says when) */
		hd_log(HP_LOG_ERROR, "storage cannot be written", "error",
		       "s:", err->msg, NULL);
		hd_problem(out, 503, "storage", NULL,
			   "the server cannot store anything now (%s); try "
			   "again later",
			   err->msg);
		break;
	default:
		hd_log(HP_LOG_ERROR, "internal error", "error", "s:", err->msg,
		       "code", "s:", hp_err_name(err->code), NULL);
		hd_problem(out, 500, "internal", NULL,
			   "the server failed (%s); see its log",
			   hp_err_name(err->code));
	}
}

json_t *hd_jstr(const char *s)
{
	json_t *v = s ? json_string(s) : json_null();

	if (!v && s) {
		char esc[1024];
		v = json_string(hp_str_escape(s, esc, sizeof(esc)));
	}
	return v ? v : json_null();
}

json_t *hd_jnum(double v)
{
	return v == v && v - v == 0 ? json_real(v) : json_null();
}

json_t *hd_jtext(const char *text)
{
	json_t *v = text ? json_loads(text, JSON_DECODE_ANY, NULL) : NULL;

	return v ? v : json_null();
}

const char *hd_query(struct hd_req *r, const char *key)
{
	return MHD_lookup_connection_value(r->mc, MHD_GET_ARGUMENT_KIND, key);
}

/* ---- routing */

/* Match url against pattern; params get the {x} segments. */
static bool match(const char *pattern, const char *url, struct hd_req *r)
{
	const char *p = pattern, *u = url;
	int np = 0;

	while (*p && *u) {
		if (*p == '{') {
			const char *pe = strchr(p, '}');
			size_t n = strcspn(u, "/");
			if (!pe || n == 0 || n >= HD_PARAM_MAX ||
			    np >= HD_MAX_PARAMS)
				return false;
			if (r) {
				memcpy(r->params[np], u, n);
				r->params[np][n] = '\0';
			}
			np++;
			p = pe + 1;
			u += n;
			continue;
		}
		if (*p != *u)
			return false;
		p++;
		u++;
	}
	if (*p || *u)
		return false;
	if (r)
		r->nparams = np;
	return true;
}

/* The route for method and url: its index, -1 none, -2 the path exists
 * with other methods (allow gets them). */
static int route_find(const char *method, const char *url, struct hd_req *r,
		      char *allow, size_t n)
{
	bool path = false;
	size_t k = 0;

	allow[0] = '\0';
	if (!strcmp(method, "HEAD"))
		method = "GET";
	for (int i = 0; i < hd_nroutes; i++) {
		if (!match(hd_routes[i].pattern, url, NULL))
			continue;
		if (!strcmp(hd_routes[i].method, method)) {
			match(hd_routes[i].pattern, url, r);
			return i;
		}
		path = true;
		if (!strstr(allow, hd_routes[i].method))
			k += (size_t)snprintf(allow + k, n - k, "%s%s",
					      k ? ", " : "",
					      hd_routes[i].method);
	}
	return path ? -2 : -1;
}

/* ---- the request handler */

static enum MHD_Result queue(struct hd *d, struct hd_req *r,
			     struct hd_resp *out)
{
	struct MHD_Response *resp;
	enum MHD_Result rc;

	(void)d;
	if (!out->body && out->status >= 400) {
		/* a problem that could not be built (out of memory) */
		static const char fallback[] =
		    "{\"type\":\"urn:hetpool:problem:internal\",\"title\":"
		    "\"Internal Server Error\",\"status\":500}";
		out->status = 500;
		out->ctype = "application/problem+json";
		resp = MHD_create_response_from_buffer(sizeof(fallback) - 1,
						       (void *)fallback,
						       MHD_RESPMEM_PERSISTENT);
	} else {
		resp = MHD_create_response_from_buffer(
		    out->len, out->body ? out->body : (void *)"",
		    out->body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
		if (resp)
			out->body = NULL; /* MHD owns it now */
	}
	free(out->body);
	out->body = NULL;
	if (!resp)
		return MHD_NO;
	if (out->ctype)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
					out->ctype);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL,
				out->cache_control ? out->cache_control
						   : "no-store");
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	if (out->encoding)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_ENCODING,
					out->encoding);
	if (out->web) {
		/* the dashboard: scripts, styles and connections from this
		 * origin only; no inline script, no framing */
		MHD_add_response_header(
		    resp, "Content-Security-Policy",
		    "default-src 'none'; script-src 'self'; style-src 'self'; "
		    "img-src 'self' data:; connect-src 'self'; "
		    "base-uri 'none'; form-action 'none'; "
		    "frame-ancestors 'none'");
		MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
		MHD_add_response_header(resp, MHD_HTTP_HEADER_VARY,
					"Accept-Encoding");
	}
	if (out->location[0])
		MHD_add_response_header(resp, MHD_HTTP_HEADER_LOCATION,
					out->location);
	if (out->allow)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW,
					out->allow);
	if (out->xname)
		MHD_add_response_header(resp, out->xname, out->xvalue);
	if (out->www_auth)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
					out->www_auth);
	{
		char id[24];
		snprintf(id, sizeof(id), "%llu", r->id);
		MHD_add_response_header(resp, "X-Request-Id", id);
	}
	if (atomic_load(&d->stopping))
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION,
					"close");
	rc = MHD_queue_response(r->mc, (unsigned)out->status, resp);
	MHD_destroy_response(resp);
	r->answered = true;
	r->status = out->status;
	conn_set(r->conn, CONN_BUSY);
	return rc;
}

static enum MHD_Result answer_problem(struct hd *d, struct hd_req *r,
				      int status, const char *type,
				      const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static enum MHD_Result answer_problem(struct hd *d, struct hd_req *r,
				      int status, const char *type,
				      const char *fmt, ...)
{
	struct hp_api_problem pb = {0};
	struct hd_resp out = {0};
	va_list ap;

	pb.status = status;
	snprintf(pb.type, sizeof(pb.type), "%s", type);
	va_start(ap, fmt);
	vsnprintf(pb.detail, sizeof(pb.detail), fmt, ap);
	va_end(ap);
	hd_problem_from(&out, &pb);
	return queue(d, r, &out);
}

static const char *header(struct hd_req *r, const char *name)
{
	return MHD_lookup_connection_value(r->mc, MHD_HEADER_KIND, name);
}

/* Who asks, and whether the route lets them: 0, or the answer queued. */
static int authorize(struct hd *d, struct hd_req *r, enum MHD_Result *res)
{
	const struct hd_route *rt = r->route;
	const char *h = header(r, MHD_HTTP_HEADER_AUTHORIZATION), *tok;
	static const char *const roles[] = {"reader", "user", "admin"};
	struct hd_resp out = {0};
	size_t len;

	if (rt->role == HD_PUBLIC)
		return 0;
	if (!h) {
		hd_problem(&out, 401, "unauthorized", NULL,
			   "give a token: 'Authorization: Bearer TOKEN'");
		*res = queue(d, r, &out);
		return -1;
	}
	if (hp_api_bearer(h, &tok, &len)) {
		hd_problem(&out, 401, "unauthorized", NULL,
			   "the Authorization header must be 'Bearer TOKEN'");
		*res = queue(d, r, &out);
		return -1;
	}
	if (hd_auth_verify(d->auth, tok, len, &r->who)) {
		hd_problem(&out, 401, "unauthorized", NULL,
			   "unknown or revoked token");
		*res = queue(d, r, &out);
		return -1;
	}
	if (r->who.role < rt->role) {
		hd_problem(&out, 403, "forbidden", NULL,
			   "%s %s needs the %s role; token '%s' has %s",
			   rt->method, rt->pattern, roles[rt->role],
			   r->who.name, roles[r->who.role]);
		*res = queue(d, r, &out);
		return -1;
	}
	return 0;
}

/* The body's media type and length fit the route: 0, or the answer
 * queued. */
static int check_body(struct hd *d, struct hd_req *r, enum MHD_Result *res)
{
	const struct hd_route *rt = r->route;
	const char *cl = header(r, MHD_HTTP_HEADER_CONTENT_LENGTH);
	const char *te = header(r, MHD_HTTP_HEADER_TRANSFER_ENCODING);
	bool has = (cl && strcmp(cl, "0")) || te;
	size_t max = rt->body == HD_BODY_MODEL || rt->body == HD_BODY_CSV ||
			     rt->body == HD_BODY_JSON_BIG
			 ? d->cfg.max_upload
			 : d->cfg.max_body;
	int64_t n = 0;

	r->ctype = header(r, MHD_HTTP_HEADER_CONTENT_TYPE);
	if (rt->body == HD_BODY_NONE) {
		if (has) {
			*res = answer_problem(d, r, 400, "unexpected-body",
					      "%s %s takes no body", rt->method,
					      rt->pattern);
			return -1;
		}
		return 0;
	}
	if (cl && (hp_parse_i64(cl, 0, INT64_MAX, &n) || (uint64_t)n > max)) {
		*res = answer_problem(d, r, 413, "body-too-large",
				      "the body is %s bytes; %s %s takes at "
				      "most %zu",
				      cl, rt->method, rt->pattern, max);
		return -1;
	}
	if (!has) {
		if (rt->body == HD_BODY_JSON_OPT)
			return 0;
		*res = answer_problem(d, r, 400, "missing-body",
				      "%s %s needs a body", rt->method,
				      rt->pattern);
		return -1;
	}
	switch (rt->body) {
	case HD_BODY_JSON:
	case HD_BODY_JSON_OPT:
	case HD_BODY_JSON_BIG:
		if (hp_api_media_is(r->ctype, "application/json"))
			break;
		*res = answer_problem(d, r, 415, "unsupported-media-type",
				      "send the body as application/json");
		return -1;
	case HD_BODY_MODEL:
		if (hp_api_media_is(r->ctype, "application/json") ||
		    hp_api_media_is(r->ctype, "application/octet-stream"))
			break;
		*res = answer_problem(d, r, 415, "unsupported-media-type",
				      "send a spec as application/json or "
				      "an ONNX file as "
				      "application/octet-stream");
		return -1;
	case HD_BODY_CSV:
		if (hp_api_media_is(r->ctype, "text/csv"))
			break;
		*res = answer_problem(d, r, 415, "unsupported-media-type",
				      "send profiler rows as text/csv");
		return -1;
	default:
		break;
	}
	hp_buf_init(&r->body, max);
	return 0;
}

static _Atomic unsigned long long next_request_id;

static enum MHD_Result first_call(struct hd *d, struct MHD_Connection *mc,
				  const char *url, const char *method,
				  void **con_cls)
{
	struct hd_req *r = calloc(1, sizeof(*r));
	const union MHD_ConnectionInfo *ci;
	enum MHD_Result res = MHD_YES;
	char allow[64];
	int i;

	if (!r)
		return MHD_NO;
	*con_cls = r;
	atomic_fetch_add(&d->inflight, 1);
	/* the request's id: in its response (X-Request-Id) and in every log
	 * line written while it is served */
	r->id = atomic_fetch_add(&next_request_id, 1) + 1;
	hd_log_set_request(r->id);
	r->t0 = hp_now_s();
	r->mc = mc;
	r->url = url;
	r->route_index = -1;
	snprintf(r->method, sizeof(r->method), "%s", method);
	hp_buf_init(&r->body, 0);
	ci = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	r->conn = ci ? ci->socket_context : NULL;
	conn_set(r->conn, CONN_BODY);
	if (atomic_load(&d->stopping))
		return answer_problem(d, r, 503, "shutting-down",
				      "the server is shutting down");
	if (strstr(url, "%00"))
		return answer_problem(d, r, 400, "bad-path",
				      "the path holds an encoded NUL (%%00): "
				      "no resource is named so");
	if (hd_web_path(url)) {
		struct hd_resp out = {0};
		if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
			hd_problem(&out, 405, "method-not-allowed", NULL,
				   "%s is not allowed here; allowed: GET, HEAD",
				   r->method);
			out.allow = "GET, HEAD";
		} else {
			hd_web_serve(d, r, &out);
		}
		return queue(d, r, &out);
	}
	i = route_find(method, url, r, allow, sizeof(allow));
	if (i == -1)
		return answer_problem(d, r, 404, "not-found",
				      "no such resource; see "
				      "/v1/openapi.json");
	if (i == -2) {
		struct hd_resp out = {0};
		hd_problem(&out, 405, "method-not-allowed", NULL,
			   "%s is not allowed here; allowed: %s", r->method,
			   allow);
		out.allow = allow;
		return queue(d, r, &out);
	}
	r->route = &hd_routes[i];
	r->route_index = i;
	if (authorize(d, r, &res) || check_body(d, r, &res))
		return res;
	return MHD_YES;
}

static enum MHD_Result access_cb(void *cls, struct MHD_Connection *mc,
				 const char *url, const char *method,
				 const char *version, const char *upload_data,
				 size_t *upload_size, void **con_cls)
{
	struct hd *d = cls;
	struct hd_req *r = *con_cls;
	struct hd_resp out = {0};

	(void)version;
	if (!r)
		return first_call(d, mc, url, method, con_cls);
	hd_log_set_request(r->id);
	if (*upload_size) {
		size_t n = *upload_size;
		*upload_size = 0;
		if (r->answered)
			return MHD_YES; /* the rest is dropped */
		if (r->too_big) {
			/* MHD answers only once the body is in: what comes
			 * is dropped, up to a bound past which the client is
			 * cut off */
			r->dropped += n;
			return r->dropped > 4 * r->body.cap + (1u << 20)
				   ? MHD_NO
				   : MHD_YES;
		}
		if (hp_buf_add(&r->body, upload_data, n)) {
			r->too_big = true;
			r->dropped = n;
		}
		return MHD_YES;
	}
	if (r->answered)
		return MHD_YES;
	if (r->too_big)
		return answer_problem(d, r, 413, "body-too-large",
				      "the body is over %zu bytes, the most "
				      "%s %s takes",
				      r->body.cap, r->route->method,
				      r->route->pattern);
	conn_set(r->conn, CONN_BUSY);
	r->route->fn(d, r, &out);
	if (!out.status)
		hd_problem(&out, 500, "internal", NULL, "no answer was made");
	return queue(d, r, &out);
}

static void completed_cb(void *cls, struct MHD_Connection *mc, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct hd *d = cls;
	struct hd_req *r = *con_cls;
	double dt;

	(void)mc;
	if (!r)
		return;
	hd_log_set_request(r->id);
	dt = hp_now_s() - r->t0;
	hd_metrics_request(d->metrics, r->route_index, r->method,
			   r->answered ? r->status : 0, dt);
	if (!r->answered || r->status >= 400 || strcmp(r->method, "GET")
		? hd_log_enabled(HP_LOG_INFO)
		: hd_log_enabled(HP_LOG_DEBUG)) {
		enum hp_log_level lv =
		    !r->answered || r->status >= 400 || strcmp(r->method, "GET")
			? HP_LOG_INFO
			: HP_LOG_DEBUG;
		char path[256];
		hp_str_escape(r->url ? r->url : "", path, sizeof(path));
		hd_log(lv, "request", "method", "s:", r->method, "path",
		       "s:", path, "route",
		       "s:", r->route ? r->route->pattern : "", "status",
		       "i:", (long long)(r->answered ? r->status : 0), "ms",
		       "f:", dt * 1e3, "who",
		       "s:", r->who.known ? r->who.name : "", "completed", "b:",
		       (long long)(toe == MHD_REQUEST_TERMINATED_COMPLETED_OK),
		       NULL);
	}
	hd_log_set_request(0);
	hp_buf_release(&r->body);
	conn_set(r->conn, CONN_WAIT);
	free(r);
	*con_cls = NULL;
	atomic_fetch_sub(&d->inflight, 1);
}

/* libmicrohttpd's unescaping of the path and the query's values: its own
 * but for %00, kept encoded (hp_api_unescape()), which first_call()
 * refuses in a path and no query value accepts. */
static size_t unescape_cb(void *cls, struct MHD_Connection *mc, char *s)
{
	(void)cls;
	(void)mc;
	return hp_api_unescape(s);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[512];
	size_t n;

	(void)cls;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
		msg[--n] = '\0';
	hd_log(HP_LOG_WARN, "libmicrohttpd", "detail", "s:", msg, NULL);
}

/* ---- start and stop */

static bool loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)sa;
		return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)sa;
		return IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
	}
	return false;
}

static int read_pem(const char *opt, const char *path, char **out,
		    struct hp_error *err)
{
	size_t len;
	int rc = hp_read_file(path, 1u << 20, out, &len, err);

	if (rc)
		hp_error_prefix(err, "%s '%s'", opt, path);
	return rc;
}

static char *tls_key, *tls_cert;
static struct sockaddr_storage listen_addr;

int hd_server_prepare(struct hd *d, struct hp_error *err)
{
	const struct hd_config *c = &d->cfg;
	struct addrinfo hints = {0}, *ai = NULL;
	char port[16];
	int rc;

	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE;
	snprintf(port, sizeof(port), "%d", c->port);
	if ((rc = getaddrinfo(c->listen_host, port, &hints, &ai)) || !ai)
		return hp_error_set(err, HP_EINVAL,
				    "--listen '%s': cannot resolve it: %s",
				    c->listen_host, gai_strerror(rc));
	memcpy(&listen_addr, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(ai);
	if (!loopback((struct sockaddr *)&listen_addr) && !c->tls_cert &&
	    !c->insecure)
		return hp_error_set(err, HP_EINVAL,
				    "--listen '%s' is not a loopback address: "
				    "tokens would cross the network in clear; "
				    "give --tls-cert and --tls-key, or "
				    "--insecure",
				    c->listen_host);
	if (c->tls_cert) {
		if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
			return hp_error_set(err, HP_EUNSUPP,
					    "this libmicrohttpd has no TLS");
		if ((rc = read_pem("--tls-key", c->tls_key, &tls_key, err)) ||
		    (rc = read_pem("--tls-cert", c->tls_cert, &tls_cert, err)))
			return rc;
	}
	return 0;
}

int hd_server_start(struct hd *d, struct hp_error *err)
{
	const struct hd_config *c = &d->cfg;
	struct sockaddr_storage ss = listen_addr;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
			 MHD_USE_ERROR_LOG | MHD_USE_ITC;

	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	if (c->tls_cert)
		flags |= MHD_USE_TLS;
	{
		struct MHD_OptionItem o[] = {
		    /* first, so that MHD's own messages come here too */
		    {MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mhd_log, d},
		    {MHD_OPTION_UNESCAPE_CALLBACK, (intptr_t)unescape_cb, NULL},
		    {MHD_OPTION_SOCK_ADDR, 0, &ss},
		    {MHD_OPTION_THREAD_POOL_SIZE, c->threads, NULL},
		    {MHD_OPTION_CONNECTION_LIMIT, c->max_connections, NULL},
		    {MHD_OPTION_CONNECTION_TIMEOUT,
		     (intptr_t)(c->idle_timeout_s < 1 ? 1 : c->idle_timeout_s),
		     NULL},
		    {MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024, NULL},
		    {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)completed_cb, d},
		    {MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)notify_conn, d},
		    /* the TLS pair, or the end of the list */
		    {c->tls_cert ? MHD_OPTION_HTTPS_MEM_KEY : MHD_OPTION_END, 0,
		     tls_key},
		    {MHD_OPTION_HTTPS_MEM_CERT, 0, tls_cert},
		    {MHD_OPTION_END, 0, NULL},
		};
		d->mhd = MHD_start_daemon(flags, 0, NULL, NULL, access_cb, d,
					  MHD_OPTION_ARRAY, o, MHD_OPTION_END);
	}
	if (!d->mhd)
		return hp_error_set(err, HP_EIO,
				    "cannot listen on %s:%d (in use, or not "
				    "this host's address; see the log)",
				    c->listen_host, c->port);
	reaper_stop = false;
	if (pthread_create(&reaper, NULL, reaper_main, d) == 0)
		reaper_running = true;
	return 0;
}

int hd_server_port(struct hd *d)
{
	const union MHD_DaemonInfo *di =
	    MHD_get_daemon_info(d->mhd, MHD_DAEMON_INFO_BIND_PORT);

	return di ? di->port : -1;
}

void hd_server_stop(struct hd *d)
{
	double t0 = hp_now_s();
	MHD_socket ls;

	if (!d->mhd)
		return;
	atomic_store(&d->stopping, true);
	/* no new connections; requests in flight finish (up to the grace
	 * time) */
	ls = MHD_quiesce_daemon(d->mhd);
	while (atomic_load(&d->inflight) > 0 &&
	       hp_now_s() - t0 < d->cfg.shutdown_grace_s) {
		struct timespec ts = {0, 20000000};
		nanosleep(&ts, NULL);
	}
	MHD_stop_daemon(d->mhd);
	d->mhd = NULL;
	/* MHD's threads may use the listening socket until they stop */
	if (ls != MHD_INVALID_SOCKET)
		close(ls);
	if (reaper_running) {
		pthread_mutex_lock(&reaper_mu);
		reaper_stop = true;
		pthread_cond_signal(&reaper_cv);
		pthread_mutex_unlock(&reaper_mu);
		pthread_join(reaper, NULL);
		reaper_running = false;
	}
	free(tls_key);
	free(tls_cert);
	tls_key = tls_cert = NULL;
}
