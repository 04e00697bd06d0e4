/*
 * fuzz_api_http.c - libFuzzer target for the pieces of a request
 * hetpoold reads itself (lib/api/http.c): the Authorization header's
 * bearer token, Content-Type media types, ids and names from paths, the
 * dashboard's file names.  A token found lies inside the header and holds
 * only token68 characters; an id is 1..2^53 and prints back as the same
 * text; a valid name is 1-63 bytes of [A-Za-z0-9._-]; a dashboard file is
 * index.html or assets/ and one segment of those bytes, never ".."; a
 * path decoded (hp_api_unescape) is never longer and holds no NUL.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hetpool/api.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1), back[32];
	const char *tok;
	size_t n;
	int64_t id;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	if (hp_api_bearer(s, &tok, &n) == 0) {
		if (tok < s || tok + n > s + strlen(s) || n == 0 ||
		    n > HP_API_MAX_TOKEN)
			abort();
		for (size_t i = 0; i < n; i++)
			if (!isalnum((unsigned char)tok[i]) &&
			    !strchr("-._~+/=", tok[i]))
				abort();
	}
	(void)hp_api_media_is(s, "application/json");
	(void)hp_api_media_is(s, "text/csv");
	if (hp_api_parse_id(s, &id) == 0) {
		if (id < 1 || id > HP_API_MAX_ID)
			abort();
		snprintf(back, sizeof(back), "%lld", (long long)id);
		if (strcmp(back, s))
			abort();
	}
	if (hp_api_name_valid(s)) {
		n = strlen(s);
		if (n < 1 || n > 63)
			abort();
		for (size_t i = 0; i < n; i++)
			if (!isalnum((unsigned char)s[i]) &&
			    !strchr("._-", s[i]))
				abort();
	}
	{
		char rel[HP_API_WEB_NAME_MAX + 16];
		if (hp_api_web_file(s, rel, sizeof(rel))) {
			const char *name = rel + 7;
			if (strcmp(rel, "index.html") &&
			    (strncmp(rel, "assets/", 7) || !*name ||
			     *name == '.' || strstr(name, "..") ||
			     strlen(name) > HP_API_WEB_NAME_MAX))
				abort();
			if (strcmp(rel, "index.html"))
				for (const char *c = name; *c; c++)
					if (!isalnum((unsigned char)*c) &&
					    !strchr("._-", *c))
						abort();
		} else if (rel[0]) {
			abort();
		}
	}
	{
		/* decoded in place: never longer, its length returned, and
		 * a NUL only where the input had one */
		size_t in = strlen(s), out = hp_api_unescape(s);
		if (out > in || strlen(s) != out)
			abort();
	}
	free(s);
	return 0;
}
