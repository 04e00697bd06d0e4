/*
 * problem.c - problem details (RFC 9457) for the answers to bad requests,
 * and the reason phrases of the statuses the API uses.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hetpool/api.h"

#include "util/banned.h"

int hp_api_fail(struct hp_api_problem *p, int status, const char *type,
		const char *field, const char *fmt, ...)
{
	va_list ap;

	if (!p)
		return HP_EINVAL;
	p->status = status;
	snprintf(p->type, sizeof(p->type), "%s", type ? type : "");
	snprintf(p->field, sizeof(p->field), "%s", field ? field : "");
	va_start(ap, fmt);
	vsnprintf(p->detail, sizeof(p->detail), fmt, ap);
	va_end(ap);
	/* a detail cut short mid-character would not be UTF-8 */
	hp_str_cut_utf8(p->detail);
	hp_str_cut_utf8(p->field);
	return HP_EINVAL;
}

const char *hp_api_status_title(int status)
{
	static const struct {
		int status;
		const char *title;
	} t[] = {
	    {200, "OK"},
	    {201, "Created"},
	    {202, "Accepted"},
	    {204, "No Content"},
	    {400, "Bad Request"},
	    {401, "Unauthorized"},
	    {403, "Forbidden"},
	    {404, "Not Found"},
	    {405, "Method Not Allowed"},
	    {406, "Not Acceptable"},
	    {408, "Request Timeout"},
	    {409, "Conflict"},
	    {411, "Length Required"},
	    {413, "Content Too Large"},
	    {415, "Unsupported Media Type"},
	    {422, "Unprocessable Content"},
	    {429, "Too Many Requests"},
	    {500, "Internal Server Error"},
	    {503, "Service Unavailable"},
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (t[i].status == status)
			return t[i].title;
	return "Error";
}

char *hp_api_problem_json(const struct hp_api_problem *p, const char *instance)
{
	char type[64];
	json_t *o = json_object();
	char *s = NULL;

	if (!o)
		return NULL;
	snprintf(type, sizeof(type), "urn:hetpool:problem:%s",
		 p->type[0] ? p->type : "error");
	/* json_string() refuses bytes that are not UTF-8: such a detail
	 * (a name from a body) is sent escaped. */
	if (json_object_set_new(o, "type", json_string(type)) ||
	    json_object_set_new(o, "title",
				json_string(hp_api_status_title(p->status))) ||
	    json_object_set_new(o, "status", json_integer(p->status)))
		goto out;
	if (json_object_set_new(o, "detail", json_string(p->detail))) {
		char esc[sizeof(p->detail) * 4];
		hp_str_escape(p->detail, esc, sizeof(esc));
		if (json_object_set_new(o, "detail", json_string(esc)))
			goto out;
	}
	if (p->field[0] &&
	    json_object_set_new(o, "field", json_string(p->field))) {
		char esc[sizeof(p->field) * 4];
		hp_str_escape(p->field, esc, sizeof(esc));
		if (json_object_set_new(o, "field", json_string(esc)))
			goto out;
	}
	if (instance &&
	    json_object_set_new(o, "instance", json_string(instance))) {
		/* a path that is not UTF-8 is left out */
		json_object_del(o, "instance");
	}
	s = json_dumps(o, JSON_COMPACT);
out:
	json_decref(o);
	return s;
}
