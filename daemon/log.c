/*
 * log.c - structured logs: one JSON object per line on stderr ({"ts",
 * "level", "msg", then the event's own keys}), written with one write(2)
 * so lines from many threads never interleave.  The library's messages
 * (hp_log) come through the same sink.  Nothing logged ever holds a
 * token: the server logs who (the token's name), never the header.
 */
#include <jansson.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "hetpoold.h"

static atomic_int max_level = HP_LOG_INFO;

bool hd_log_enabled(enum hp_log_level level)
{
	return (int)level <=
	       atomic_load_explicit(&max_level, memory_order_relaxed);
}

static _Thread_local unsigned long long cur_request;

void hd_log_set_request(unsigned long long id)
{
	cur_request = id;
}

static void emit(json_t *o)
{
	char *s = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
	size_t n;

	if (!s)
		return;
	n = strlen(s);
	s[n] = '\n'; /* the NUL goes; the length is known */
	(void)!write(2, s, n + 1);
	free(s);
}

static json_t *head(enum hp_log_level level, const char *msg)
{
	struct timeval tv;
	struct tm tm;
	char ts[64], esc[1024];
	json_t *o = json_object();

	if (!o)
		return NULL;
	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	snprintf(ts, sizeof(ts), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		 tm.tm_min, tm.tm_sec, (int)(tv.tv_usec / 1000) % 1000);
	json_object_set_new(o, "ts", json_string(ts));
	json_object_set_new(o, "level", json_string(hp_log_level_name(level)));
	if (cur_request)
		json_object_set_new(o, "request_id",
				    json_integer((json_int_t)cur_request));
	/* json_string() refuses bytes that are not UTF-8 */
	if (json_object_set_new(o, "msg", json_string(msg)))
		json_object_set_new(
		    o, "msg",
		    json_string(hp_str_escape(msg, esc, sizeof(esc))));
	return o;
}

void hd_log(enum hp_log_level level, const char *msg, ...)
{
	va_list ap;
	json_t *o;
	const char *key;

	if (!hd_log_enabled(level) || !(o = head(level, msg)))
		return;
	va_start(ap, msg);
	while ((key = va_arg(ap, const char *))) {
		const char *kind = va_arg(ap, const char *);
		json_t *v = NULL;
		char esc[1024];
		if (!strcmp(kind, "s:")) {
			const char *s = va_arg(ap, const char *);
			v = json_string(s ? s : "");
			if (!v)
				v = json_string(
				    hp_str_escape(s, esc, sizeof(esc)));
		} else if (!strcmp(kind, "i:")) {
			v = json_integer(va_arg(ap, long long));
		} else if (!strcmp(kind, "f:")) {
			double x = va_arg(ap, double);
			v = x == x && x - x == 0 ? json_real(x) : json_null();
		} else if (!strcmp(kind, "b:")) {
			v = json_boolean(va_arg(ap, long long));
		} else {
			break; /* a caller's mistake: stop reading */
		}
		json_object_set_new(o, key, v ? v : json_null());
	}
	va_end(ap);
	emit(o);
	json_decref(o);
}

/* The library's messages (hp_log). */
static void lib_sink(enum hp_log_level level, const char *msg, void *ud)
{
	json_t *o;

	(void)ud;
	if (!(o = head(level, msg)))
		return;
	json_object_set_new(o, "source", json_string("libhetpool"));
	emit(o);
	json_decref(o);
}

void hd_log_init(enum hp_log_level max)
{
	atomic_store(&max_level, (int)max);
	hp_log_set(lib_sink, NULL, max);
}
