/* misc.c - logging sink, checked number parsing, strings, clock. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hetpool/util.h"
#include "util/banned.h"

static hp_log_fn log_fn;
static void *log_ud;
static enum hp_log_level log_max = HP_LOG_WARN;

void hp_log_set(hp_log_fn fn, void *ud, enum hp_log_level max_level)
{
	log_fn = fn;
	log_ud = ud;
	log_max = max_level;
}

void hp_log(enum hp_log_level level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (!log_fn || level > log_max)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_fn(level, msg, log_ud);
}

const char *hp_log_level_name(enum hp_log_level level)
{
	static const char *names[] = {"error", "warning", "info", "debug"};
	return (unsigned)level < 4 ? names[level] : "log";
}

int hp_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out)
{
	char *end;
	long long v;

	if (!s || !*s)
		return HP_EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (end == s || *end != '\0')
		return HP_EINVAL;
	if (errno == ERANGE || v < min || v > max)
		return HP_ERANGE;
	*out = v;
	return 0;
}

int hp_parse_double(const char *s, double *out)
{
	char *end;
	double v;

	if (!s || !*s)
		return HP_EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end != '\0')
		return HP_EINVAL;
	if (errno == ERANGE || !isfinite(v))
		return HP_ERANGE;
	*out = v;
	return 0;
}

const char *hp_version(void)
{
	return HP_VERSION;
}

static bool is_control(unsigned char c)
{
	return c < 0x20 || c == 0x7f;
}

const char *hp_str_escape(const char *src, char *dst, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;

	if (!n)
		return dst;
	for (const unsigned char *p = (const unsigned char *)src; src && *p;
	     p++) {
		char e[4];
		size_t k = 0;
		if (!is_control(*p)) {
			e[k++] = (char)*p;
		} else if (*p == '\n' || *p == '\r' || *p == '\t') {
			e[k++] = '\\';
			e[k++] = *p == '\n' ? 'n' : *p == '\r' ? 'r' : 't';
		} else {
			e[k++] = '\\';
			e[k++] = 'x';
			e[k++] = hex[*p >> 4];
			e[k++] = hex[*p & 15];
		}
		if (o + k >= n)
			break;
		memcpy(dst + o, e, k);
		o += k;
	}
	dst[o] = '\0';
	return dst;
}

bool hp_str_has_control(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; s && *p; p++)
		if (is_control(*p))
			return true;
	return false;
}

char *hp_strndup(const char *s, size_t n)
{
	char *p = malloc(n + 1);

	if (!p)
		return NULL;
	if (n)
		memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *hp_strdup(const char *s)
{
	return hp_strndup(s, strlen(s));
}

double hp_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
