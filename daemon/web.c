/*
 * web.c - the dashboard's built files (web/, bundled by the build into
 * BUILD/web), served at "/" without a token: index.html (no-cache, so a
 * new build is seen at once) and the content-hashed files under /assets/
 * (cached for a year, immutable).  Nothing else under the folder is
 * reachable: hp_api_web_file() (lib/api, fuzzed) takes a name of one path
 * segment of [A-Za-z0-9._-] not starting with a dot, without "..", with a
 * known extension: no "/", no way up, no hidden file.
 * A file with a ".gz" twin (made by the build) is sent gzipped to a
 * client that accepts it.  Every answer carries a Content-Security-Policy
 * that allows scripts from this origin only (no inline script) and
 * connections to this origin only (the dashboard talks to /v1 alone).
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "hetpoold.h"

#define WEB_MAX_FILE (16u << 20)

bool hd_web_path(const char *url)
{
	return !strcmp(url, "/") || !strcmp(url, "/index.html") ||
	       !strncmp(url, "/assets/", 8);
}

static bool accepts_gzip(struct hd_req *r)
{
	const char *ae = MHD_lookup_connection_value(
	    r->mc, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT_ENCODING);

	/* "gzip" listed, and not refused with q=0 (rare; treated as no) */
	return ae && strstr(ae, "gzip") && !strstr(ae, "gzip;q=0");
}

void hd_web_serve(struct hd *d, struct hd_req *r, struct hd_resp *out)
{
	char rel[HP_API_WEB_NAME_MAX + 16], path[PATH_MAX + 160];
	const char *ctype = hp_api_web_file(r->url, rel, sizeof(rel));
	struct hp_error err = {0};
	char *body = NULL;
	size_t len = 0;

	out->web = true;
	if (!d->cfg.web_dir) {
		hd_problem(out, 404, "not-found", NULL,
			   "the dashboard is not built: build it with 'make' "
			   "(it needs node and npm: 'make deps'), or start "
			   "hetpoold with --web-dir DIR; the API is at /v1 "
			   "(/v1/openapi.json)");
		return;
	}
	/* rel is one of our names (hp_api_web_file): no way out of the
	 * folder */
	if (!ctype || snprintf(path, sizeof(path), "%s/%s", d->cfg.web_dir,
			       rel) >= (int)sizeof(path) - 4) {
		hd_problem(out, 404, "not-found", NULL, "no such file");
		return;
	}
	if (accepts_gzip(r)) {
		size_t n = strlen(path);
		memcpy(path + n, ".gz", 4);
		if (!hp_read_file(path, WEB_MAX_FILE, &body, &len, &err))
			out->encoding = "gzip";
		path[n] = '\0';
	}
	if (!body && hp_read_file(path, WEB_MAX_FILE, &body, &len, &err)) {
		hd_problem(out, 404, "not-found", NULL, "no such file");
		return;
	}
	hd_text(out, 200, ctype, body, len);
	out->cache_control = strncmp(rel, "assets/", 7)
				 ? "no-cache"
				 : "public, max-age=31536000, immutable";
}
