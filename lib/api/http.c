/*
 * http.c - the small pieces of an HTTP request hetpoold reads itself: the
 * bearer token of the Authorization header, the media type of
 * Content-Type, ids and names in paths and queries, and which of the
 * dashboard's files a path names.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "hetpool/api.h"

#include "util/banned.h"

/* RFC 6750's b64token: ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/",
 * then "=" padding. */
static bool token68(const char *s, size_t n)
{
	size_t i = 0;

	while (i < n &&
	       (isalnum((unsigned char)s[i]) || strchr("-._~+/", s[i])))
		i++;
	if (i == 0)
		return false;
	while (i < n && s[i] == '=')
		i++;
	return i == n;
}

bool hp_api_token_ok(const char *tok)
{
	size_t n = tok ? strlen(tok) : 0;

	return n > 0 && n <= HP_API_MAX_TOKEN && token68(tok, n);
}

int hp_api_bearer(const char *header, const char **tok, size_t *len)
{
	const char *p;
	size_t n;

	if (!header || strncasecmp(header, "bearer", 6) != 0 ||
	    (header[6] != ' ' && header[6] != '\t'))
		return HP_EINVAL;
	p = header + 6;
	while (*p == ' ' || *p == '\t')
		p++;
	n = strlen(p);
	/* trailing blanks are not part of the token */
	while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
		n--;
	if (n == 0 || n > HP_API_MAX_TOKEN || !token68(p, n))
		return HP_EINVAL;
	*tok = p;
	*len = n;
	return 0;
}

bool hp_api_media_is(const char *ct, const char *want)
{
	size_t n = strlen(want);
	const char *p;

	if (!ct)
		return false;
	while (*ct == ' ' || *ct == '\t')
		ct++;
	if (strncasecmp(ct, want, n) != 0)
		return false;
	p = ct + n;
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p == '\0')
		return true;
	if (*p != ';')
		return false;
	/* parameters: for JSON, only charset=utf-8 (RFC 8259 allows no
	 * other) */
	for (p++; *p;) {
		char name[32], value[32];
		size_t k;
		while (*p == ' ' || *p == '\t')
			p++;
		k = strcspn(p, "=;");
		if (k == 0 || k >= sizeof(name) || p[k] != '=')
			return false;
		memcpy(name, p, k);
		name[k] = '\0';
		while (k && (name[k - 1] == ' ' || name[k - 1] == '\t'))
			name[--k] = '\0';
		p += strcspn(p, "=") + 1;
		k = strcspn(p, ";");
		if (k >= sizeof(value))
			return false;
		memcpy(value, p, k);
		value[k] = '\0';
		while (k && (value[k - 1] == ' ' || value[k - 1] == '\t'))
			value[--k] = '\0';
		if (k >= 2 && value[0] == '"' && value[k - 1] == '"') {
			memmove(value, value + 1, k - 2);
			value[k - 2] = '\0';
		}
		if (!strcasecmp(name, "charset") && strcasecmp(value, "utf-8"))
			return false;
		p += strcspn(p, ";");
		if (*p == ';')
			p++;
	}
	return true;
}

int hp_api_parse_id(const char *s, int64_t *out)
{
	int64_t v = 0;

	if (!s || *s < '1' || *s > '9')
		return HP_EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return HP_EINVAL;
		v = v * 10 + (*s - '0');
		if (v > HP_API_MAX_ID)
			return HP_EINVAL;
	}
	*out = v;
	return 0;
}

bool hp_api_name_valid(const char *s)
{
	size_t n = 0;

	if (!s)
		return false;
	for (; s[n]; n++)
		if (!isalnum((unsigned char)s[n]) && !strchr("._-", s[n]))
			return false;
	return n >= 1 && n <= 63;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

size_t hp_api_unescape(char *s)
{
	char *w = s;

	for (const char *p = s; *p; p++) {
		int hi, lo;
		if (*p == '%' && (hi = hexval((unsigned char)p[1])) >= 0 &&
		    (lo = hexval((unsigned char)p[2])) >= 0 && (hi | lo)) {
			*w++ = (char)(hi * 16 + lo);
			p += 2;
		} else {
			*w++ = *p;
		}
	}
	*w = '\0';
	return (size_t)(w - s);
}

static const struct {
	const char *ext;
	const char *type;
} web_types[] = {
    {".html", "text/html; charset=utf-8"},
    {".js", "text/javascript; charset=utf-8"},
    {".css", "text/css; charset=utf-8"},
    {".svg", "image/svg+xml"},
    {".png", "image/png"},
    {".ico", "image/x-icon"},
    {".json", "application/json"},
    {".txt", "text/plain; charset=utf-8"},
};

const char *hp_api_web_file(const char *path, char *rel, size_t n)
{
	const char *name;
	size_t len;

	if (n)
		rel[0] = '\0';
	if (!path || n < sizeof("assets/") + HP_API_WEB_NAME_MAX)
		return NULL;
	if (!strcmp(path, "/") || !strcmp(path, "/index.html")) {
		snprintf(rel, n, "index.html");
		return web_types[0].type;
	}
	if (strncmp(path, "/assets/", 8))
		return NULL;
	name = path + 8;
	len = strlen(name);
	if (len == 0 || len > HP_API_WEB_NAME_MAX || name[0] == '.' ||
	    strstr(name, ".."))
		return NULL;
	for (size_t i = 0; i < len; i++)
		if (!isalnum((unsigned char)name[i]) && !strchr("._-", name[i]))
			return NULL;
	for (size_t i = 0; i < sizeof(web_types) / sizeof(web_types[0]); i++) {
		size_t e = strlen(web_types[i].ext);
		if (len > e && !strcmp(name + len - e, web_types[i].ext)) {
			snprintf(rel, n, "assets/%s", name);
			return web_types[i].type;
		}
	}
	return NULL;
}
