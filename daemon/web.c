/*
 * web.c - the dashboard's built files (web/, bundled by the build into
 * BUILD/web), served at "/" without a token: index.html (no-cache, so a
 * new build is seen at once) and the content-hashed files under /assets/
 * (cached for a year, immutable).  Nothing else under the folder is
 * reachable: a name is one path segment of [A-Za-z0-9._-] not starting
 * with a dot, with a known extension, so no "..", no "/", no hidden file.
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

static const struct {
	const char *ext;
	const char *ctype;
} types[] = {
    {".html", "text/html; charset=utf-8"},
    {".js", "text/javascript; charset=utf-8"},
    {".css", "text/css; charset=utf-8"},
    {".svg", "image/svg+xml"},
    {".png", "image/png"},
    {".ico", "image/x-icon"},
    {".json", "application/json"},
    {".txt", "text/plain; charset=utf-8"},
};

bool hd_web_path(const char *url)
{
	return !strcmp(url, "/") || !strcmp(url, "/index.html") ||
	       !strncmp(url, "/assets/", 8);
}

/* A file name we serve: one segment, safe characters, a known type. */
static const char *name_type(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > 128 || name[0] == '.')
		return NULL;
	for (size_t i = 0; i < n; i++) {
		char ch = name[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' ||
		      ch == '-'))
			return NULL;
	}
	if (strstr(name, ".."))
		return NULL;
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		size_t e = strlen(types[i].ext);
		if (n > e && !strcmp(name + n - e, types[i].ext))
			return types[i].ctype;
	}
	return NULL;
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
	const char *url = r->url, *name, *ctype;
	bool asset = !strncmp(url, "/assets/", 8);
	char path[PATH_MAX + 160];
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
	name = asset ? url + 8 : "index.html";
	if (!(ctype = name_type(name))) {
		hd_problem(out, 404, "not-found", NULL, "no such file");
		return;
	}
	if (snprintf(path, sizeof(path), "%s/%s%s", d->cfg.web_dir,
		     asset ? "assets/" : "", name) >= (int)sizeof(path) - 4) {
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
	out->cache_control =
	    asset ? "public, max-age=31536000, immutable" : "no-cache";
}
