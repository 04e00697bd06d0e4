/*
 * h_ops.c - the operations routes: GET /healthz, GET /metrics, GET
 * /v1/openapi.json (no token), GET /v1/whoami.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hetpoold.h"

/* GET /healthz: 200 while the store takes writes; 503 with the reason
 * once a write failed for want of storage (disk full, the database
 * read-only) and a probe write still fails.  No I/O while all is well. */
void hd_h_healthz(struct hd *d, struct hd_req *r, struct hd_resp *out)
{
	struct hp_error err = {0};
	struct timespec ts;
	char why[200];
	bool ok = hp_store_writable(d->store, why, sizeof(why));

	(void)r;
	if (!ok && hp_store_probe_write(d->store, &err) == 0)
		ok = true;
	else if (!ok && err.code != HP_ESTORAGE)
		snprintf(why, sizeof(why), "%.190s", err.msg);
	clock_gettime(CLOCK_REALTIME, &ts);
	hd_json(out, ok ? 200 : 503,
		json_pack("{s:s, s:s, s:f, s:s*}", "status",
			  ok ? "ok" : "unavailable", "version", hp_version(),
			  "uptime_s",
			  (double)ts.tv_sec + ts.tv_nsec / 1e9 - d->started_s,
			  "reason", ok ? NULL : why));
}

void hd_h_metrics(struct hd *d, struct hd_req *r, struct hd_resp *out)
{
	char *s = hd_metrics_render(d);

	(void)r;
	if (!s) {
		hd_problem(out, 500, "internal", NULL, "out of memory");
		return;
	}
	hd_text(out, 200, "text/plain; version=0.0.4; charset=utf-8", s,
		strlen(s));
}

void hd_h_openapi(struct hd *d, struct hd_req *r, struct hd_resp *out)
{
	char *s = malloc(hd_openapi_json_len);

	(void)d;
	(void)r;
	if (!s) {
		hd_problem(out, 500, "internal", NULL, "out of memory");
		return;
	}
	memcpy(s, hd_openapi_json, hd_openapi_json_len);
	hd_text(out, 200, "application/json", s, hd_openapi_json_len);
}

void hd_h_whoami(struct hd *d, struct hd_req *r, struct hd_resp *out)
{
	static const char *const roles[] = {"reader", "user", "admin"};

	(void)d;
	hd_json(out, 200,
		json_pack("{s:I, s:s, s:s}", "token_id",
			  (json_int_t)r->who.token_id, "name", r->who.name,
			  "role", roles[r->who.role]));
}
