/*
 * remote_http.c - the HTTP side of `hetpool --server URL ...`: one request
 * to hetpoold with libcurl, the token from HETPOOL_TOKEN as a bearer
 * header (never printed), HETPOOL_CACERT for a server whose certificate
 * the system does not trust, and the server's problem details turned
 * into one error line.
 */
#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "remote.h"

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
	struct hp_buf *b = ud;

	return hp_buf_add(b, p, size * n) ? 0 : size * n;
}

static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
	struct remote_resp *r = ud;
	size_t len = size * n;

	if (len > 7 && !strncasecmp(p, "X-Size:", 7)) {
		char v[32];
		size_t k = len - 7 < sizeof(v) - 1 ? len - 7 : sizeof(v) - 1;
		memcpy(v, p + 7, k);
		v[k] = '\0';
		r->x_size = strtoll(v, NULL, 10);
	}
	return len;
}

int remote_request(const struct remote *rm, const char *method,
		   const char *path, const char *ctype, const void *body,
		   size_t len, struct remote_resp *out)
{
	const char *tok = getenv("HETPOOL_TOKEN");
	const char *ca = getenv("HETPOOL_CACERT");
	struct curl_slist *h = NULL;
	char url[2048], auth[512], ct[128], errbuf[CURL_ERROR_SIZE] = "";
	CURL *c;
	CURLcode rc;
	size_t n = strlen(rm->url);

	memset(out, 0, sizeof(*out));
	out->x_size = -1;
	hp_buf_init(&out->body, 256u << 20);
	while (n && rm->url[n - 1] == '/')
		n--;
	snprintf(url, sizeof(url), "%.*s%s", (int)n, rm->url, path);
	if (!(c = curl_easy_init()))
		return cli_error(EXIT_FAIL, "%s: cannot start libcurl",
				 rm->cmd);
	if (tok && *tok) {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", tok);
		h = curl_slist_append(h, auth);
		explicit_bzero(auth, sizeof(auth));
	}
	if (ctype) {
		snprintf(ct, sizeof(ct), "Content-Type: %s", ctype);
		h = curl_slist_append(h, ct);
	}
	h = curl_slist_append(h, "Expect:"); /* no 100-continue round trip */
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 600L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &out->body);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, out);
	if (ca && *ca)
		curl_easy_setopt(c, CURLOPT_CAINFO, ca);
	if (body) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE,
				 (curl_off_t)len);
	} else if (!strcmp(method, "POST")) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)0);
	}
	rc = curl_easy_perform(c);
	if (rc == CURLE_OK) {
		char *type = NULL;
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &out->status);
		curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &type);
		snprintf(out->ctype, sizeof(out->ctype), "%s",
			 type ? type : "");
	}
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	if (rc != CURLE_OK) {
		hp_buf_release(&out->body);
		return cli_error(
		    EXIT_FAIL, "%s: cannot reach the server at %s: %s", rm->cmd,
		    rm->url, errbuf[0] ? errbuf : curl_easy_strerror(rc));
	}
	return 0;
}

int remote_fail(const struct remote *rm, struct remote_resp *r)
{
	json_t *o =
	    json_loadb(r->body.data ? r->body.data : "", r->body.len, 0, NULL);
	const char *detail = json_string_value(json_object_get(o, "detail"));
	int status = r->status >= 500 || r->status == 408 || r->status == 429
			 ? EXIT_FAIL
			 : EXIT_USAGE;

	cli_error(status, "%s: %s (HTTP %ld)%s", rm->cmd,
		  detail ? detail : "the server refused the request", r->status,
		  r->status == 401 ? "; set HETPOOL_TOKEN to a token the "
				     "server knows"
				   : "");
	json_decref(o);
	hp_buf_release(&r->body);
	return status;
}

void remote_resp_release(struct remote_resp *r)
{
	hp_buf_release(&r->body);
}
