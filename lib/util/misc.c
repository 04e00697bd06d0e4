/* misc.c - logging sink, checked number parsing, strings, clock. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hetpool/util.h"
#include "util/banned.h"

/* The sink: set by the program (usually once, at start-up) while other
 * threads may be logging, so it is read and written under a lock; the
 * sink itself is called outside it. */
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static hp_log_fn log_fn;
static void *log_ud;
static enum hp_log_level log_max = HP_LOG_WARN;

void hp_log_set(hp_log_fn fn, void *ud, enum hp_log_level max_level)
{
	pthread_mutex_lock(&log_mu);
	log_fn = fn;
	log_ud = ud;
	log_max = max_level;
	pthread_mutex_unlock(&log_mu);
}

void hp_log(enum hp_log_level level, const char *fmt, ...)
{
	char msg[1024];
	hp_log_fn fn;
	void *ud;
	va_list ap;

	pthread_mutex_lock(&log_mu);
	fn = level <= log_max ? log_fn : NULL;
	ud = log_ud;
	pthread_mutex_unlock(&log_mu);
	if (!fn)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fn(level, msg, ud);
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

/*
 * Length of the well-formed UTF-8 sequence at p (1-4) that is not a C1
 * control character (U+0080-U+009F: some terminals take U+009B as CSI),
 * or 0: such bytes, and bytes of no valid sequence (which 8-bit terminals
 * may take as C1 controls), are escaped one by one.
 */
static int utf8_ok(const unsigned char *p)
{
	int n;
	uint32_t cp;

	if (*p < 0x80)
		return 1;
	if (*p >= 0xc2 && *p <= 0xdf)
		n = 2, cp = *p & 0x1f;
	else if (*p >= 0xe0 && *p <= 0xef)
		n = 3, cp = *p & 0x0f;
	else if (*p >= 0xf0 && *p <= 0xf4)
		n = 4, cp = *p & 0x07;
	else
		return 0;
	for (int i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) ||
	    (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || (cp >= 0x80 && cp <= 0x9f))
		return 0;
	return n;
}

static bool is_control(unsigned char c)
{
	return c < 0x20 || c == 0x7f;
}

const char *hp_str_escape(const char *src, char *dst, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)src;
	size_t o = 0;

	if (!n)
		return dst;
	while (src && *p) {
		char e[4];
		int k = 0, u = utf8_ok(p);
		if (u > 1) {
			if (o + (size_t)u >= n)
				break;
			memcpy(dst + o, p, (size_t)u);
			o += (size_t)u;
			p += u;
			continue;
		}
		if (u == 1 && !is_control(*p)) {
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
		if (o + (size_t)k >= n)
			break;
		memcpy(dst + o, e, (size_t)k);
		o += (size_t)k;
		p++;
	}
	dst[o] = '\0';
	return dst;
}

bool hp_str_has_control(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (s && *p) {
		int u = utf8_ok(p);
		if (u == 0 || (u == 1 && is_control(*p)))
			return true;
		p += u;
	}
	return false;
}

char *hp_str_cut_utf8(char *s)
{
	size_t n = s ? strlen(s) : 0, i = n;
	unsigned char c;
	size_t want;

	/* back over at most 3 continuation bytes to the sequence's lead */
	while (i > 0 && n - i < 3 && ((unsigned char)s[i - 1] & 0xc0) == 0x80)
		i--;
	if (i == 0)
		return s;
	c = (unsigned char)s[i - 1];
	if (c < 0xc0)
		return s; /* ASCII, or stray continuation bytes: not cut */
	want = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
	if (n - (i - 1) < want)
		s[i - 1] = '\0';
	return s;
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

int hp_grow(void *arr, int *cap, int n, size_t size, int first)
{
	void *a, *b;
	int nc;

	if (n < *cap)
		return 0;
	if (*cap > INT_MAX / 2)
		return HP_ENOMEM;
	nc = *cap ? 2 * *cap : first;
	/* arr points at a pointer of some object type: read and written by
	 * its bytes, not through a void ** */
	memcpy(&a, arr, sizeof(a));
	if (!(b = realloc(a, (size_t)nc * size)))
		return HP_ENOMEM;
	memcpy(arr, &b, sizeof(b));
	*cap = nc;
	return 0;
}

void hp_utc_iso8601(time_t t, char *buf, size_t n)
{
	struct tm tm;

	if (!n)
		return;
	if (!gmtime_r(&t, &tm) || !strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm))
		buf[0] = '\0';
}

double hp_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
