/*
 * catalog.c - the device catalog: parse data/devices.csv into device
 * types, refusing bad input (text that is not a number, a figure outside
 * its physical range, a name with a control character) with
 * PATH:LINE:COLUMN and the device, and resolve a name (id or alias, any
 * case and punctuation) to its type.
 */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hetpool/device.h"
#include "util/banned.h"

#define MAX_TYPES 4096
#define MAX_ALIASES 64
#define KEY_MAX 96

/* The columns a catalog may have; name and kind are required. */
enum col {
	C_NAME,
	C_KIND,
	C_VENDOR,
	C_ARCH,
	C_PRODUCT,
	C_FP32,
	C_TF32,
	C_FP16,
	C_MEM_GB,
	C_MEM_BW,
	C_TDP,
	C_IDLE,
	C_DPB,
	C_ALIASES,
	C_SRC_COMPUTE,
	C_SRC_MEMORY,
	C_SRC_POWER,
	C_SRC_IDLE,
	C__COUNT
};

static const char *const col_names[C__COUNT] = {
    "name",
    "kind",
    "vendor",
    "arch",
    "product",
    "fp32_tflops",
    "tf32_tflops",
    "fp16_tflops",
    "mem_gb",
    "mem_bw_gbs",
    "tdp_w",
    "idle_w",
    "devices_per_board",
    "aliases",
    "src_compute",
    "src_memory",
    "src_power",
    "src_idle",
};

/*
 * The physical range of each figure, per board as the file gives it
 * (before the division by devices_per_board), and whether a GPU row must
 * give it.  The lower bounds are far below any real device but above 0,
 * so that a figure stays positive once divided; the upper bounds are well
 * above the largest board sold today (several times), and low enough that
 * a figure in the wrong unit (MB for GB, GFLOP/s for TFLOP/s) is caught.  An
 * empty figure the GPU does not need is "not known" (NaN), which the estimator
 * treats as unknown, never as 0: no TF32 or fast FP16, no power figure (no
 * energy). A CPU row may leave every figure empty: the host's are detected at
 * run time (lib/device/host.c).  data/devices.md lists the same table.
 */
static const struct {
	double min, max;
	bool gpu_needs;
} ranges[C__COUNT] = {
    [C_FP32] = {0.001, 1000, true},	[C_TF32] = {0.001, 100000, false},
    [C_FP16] = {0.001, 100000, false},	[C_MEM_GB] = {0.001, 16384, true},
    [C_MEM_BW] = {0.001, 100000, true}, [C_TDP] = {1, 10000, false},
    [C_IDLE] = {0, 10000, false},
};

const char *hp_device_kind_name(enum hp_device_kind k)
{
	return k == HP_DEVICE_CPU ? "cpu" : "gpu";
}

/* Lowercase letters and digits of s, the rest dropped; false if the key
 * would not fit or is empty. */
static bool make_key(const char *s, char *key, size_t n)
{
	size_t k = 0;

	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (!isalnum(ch))
			continue;
		if (k + 1 >= n)
			return false;
		key[k++] = (char)tolower(ch);
	}
	key[k] = '\0';
	return k > 0;
}

/* Where a parse is: the text, the record being read and its start. */
struct parser {
	const char *path;
	const char *text, *end;
	const char *rec; /* first byte of the current record */
	int line;	 /* its line */
	const char *dev; /* its device's name once read, for messages */
	struct hp_error *err;
};

/*
 * Line and column (both 1-based) where field k of the current record
 * starts, found by walking the record again with the quoting rules.
 */
static void field_pos(const struct parser *ps, int k, int *line, int *col)
{
	const char *p = ps->rec, *line_start = ps->rec;
	bool quoted = false, at_start = true;
	int ln = ps->line;

	while (k > 0 && p < ps->end) {
		if (quoted) {
			if (*p == '"' && p + 1 < ps->end && p[1] == '"')
				p++;
			else if (*p == '"')
				quoted = false;
			else if (*p == '\n') {
				ln++;
				line_start = p + 1;
			}
		} else if (*p == '\n') {
			break;
		} else if (*p == '"' && at_start) {
			quoted = true;
		} else if (*p == ',') {
			k--;
		}
		at_start = !quoted && *p == ',';
		p++;
	}
	*line = ln;
	*col = (int)(p - line_start) + 1;
}

/*
 * Where the quoting of the current record goes wrong: the opening quote of
 * an unterminated field, or the first character after a closing quote that
 * is not a separator; the record's start if neither.
 */
static void quote_error_pos(const struct parser *ps, int *line, int *col)
{
	const char *p = ps->rec, *ls = ps->rec, *open = NULL, *open_ls = NULL;
	int ln = ps->line, open_ln = 0;
	bool at_start = true;

	*line = ps->line;
	*col = 1;
	while (p < ps->end) {
		if (open) {
			if (*p == '"' && p + 1 < ps->end && p[1] == '"') {
				p += 2;
				continue;
			}
			if (*p == '"') {
				open = NULL;
				p++;
				while (p < ps->end && (*p == ' ' || *p == '\t'))
					p++;
				if (p < ps->end && *p != ',' && *p != '\n' &&
				    *p != '\r') {
					*line = ln;
					*col = (int)(p - ls) + 1;
					return;
				}
				continue;
			}
			if (*p == '\n') {
				ln++;
				ls = p + 1;
			}
			p++;
			continue;
		}
		if (*p == '\n')
			return;
		if (*p == '"' && at_start) {
			open = p;
			open_ls = ls;
			open_ln = ln;
		}
		at_start = *p == ',';
		p++;
	}
	if (open) {
		*line = open_ln;
		*col = (int)(open - open_ls) + 1;
	}
}

/* Fill err with "PATH:LINE:COL: device 'NAME': message" for field k (the
 * device once its name is read); returns HP_EPARSE. */
static int bad_field(const struct parser *ps, int k, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int bad_field(const struct parser *ps, int k, const char *fmt, ...)
{
	char msg[200];
	va_list ap;
	int line, col;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	field_pos(ps, k, &line, &col);
	if (ps->dev)
		return hp_error_set(ps->err, HP_EPARSE,
				    "%s:%d:%d: device '%s': %s", ps->path, line,
				    col, ps->dev, msg);
	return hp_error_set(ps->err, HP_EPARSE, "%s:%d:%d: %s", ps->path, line,
			    col, msg);
}

/* Skip the blank lines hp_csv_next() would skip, to know where the next
 * record starts and on which line. */
static void skip_blank(struct parser *ps, const char *p, int lines_seen)
{
	while (p < ps->end && (*p == '\n' || *p == '\r')) {
		if (*p == '\n')
			lines_seen++;
		p++;
	}
	ps->rec = p;
	ps->line = lines_seen + 1;
}

static void type_release(struct hp_device_type *t)
{
	free(t->src_compute);
	free(t->src_memory);
	free(t->src_power);
	free(t->src_idle);
	for (int i = 0; i < t->naliases; i++)
		free(t->aliases[i]);
	free(t->aliases);
}

void hp_catalog_free(struct hp_catalog *cat)
{
	if (!cat)
		return;
	for (int i = 0; i < cat->n; i++)
		type_release(&cat->types[i]);
	free(cat->types);
	free(cat->path);
	free(cat);
}

static int set_text(const struct parser *ps, int k, const char *col,
		    const char *s, char *dst, size_t n)
{
	size_t len = strlen(s);

	if (len >= n)
		return bad_field(ps, k, "%s: longer than %zu characters", col,
				 n - 1);
	if (hp_str_has_control(s))
		return bad_field(ps, k,
				 "%s holds a control character; names are "
				 "printed, so they may not",
				 col);
	memcpy(dst, s, len + 1);
	return 0;
}

static int set_number(const struct parser *ps, int k, const char *col,
		      const char *s, double *out)
{
	double v;
	int rc;

	if (!*s) {
		*out = NAN;
		return 0;
	}
	rc = hp_parse_double(s, &v);
	if (rc == HP_ERANGE)
		return bad_field(ps, k, "%s: '%.40s' is not a finite number",
				 col, s);
	if (rc || isspace((unsigned char)*s))
		return bad_field(ps, k, "%s: '%.40s' is not a number", col, s);
	*out = v;
	return 0;
}

static int set_source(const struct parser *ps, const char *s, char **dst)
{
	*dst = hp_strdup(s);
	if (!*dst)
		return hp_error_set(ps->err, HP_ENOMEM, "out of memory");
	return 0;
}

/* Split "a|b|c" into the type's aliases. */
static int set_aliases(const struct parser *ps, int k, const char *s,
		       struct hp_device_type *t)
{
	char key[KEY_MAX];

	if (!*s)
		return 0;
	t->aliases = calloc(MAX_ALIASES, sizeof(*t->aliases));
	if (!t->aliases)
		return hp_error_set(ps->err, HP_ENOMEM, "out of memory");
	while (*s) {
		size_t len = strcspn(s, "|");
		while (len && isspace((unsigned char)*s)) {
			s++;
			len--;
		}
		size_t trimmed = len;
		while (trimmed && isspace((unsigned char)s[trimmed - 1]))
			trimmed--;
		if (t->naliases >= MAX_ALIASES)
			return bad_field(ps, k, "aliases: more than %d",
					 MAX_ALIASES);
		char *a = hp_strndup(s, trimmed);
		if (!a)
			return hp_error_set(ps->err, HP_ENOMEM,
					    "out of memory");
		t->aliases[t->naliases++] = a;
		if (hp_str_has_control(a))
			return bad_field(ps, k,
					 "aliases: alias %d holds a control "
					 "character; names are printed, so "
					 "they may not",
					 t->naliases);
		if (!make_key(a, key, sizeof(key)))
			return bad_field(ps, k,
					 "aliases: '%.40s' has no letters or "
					 "digits, or is too long",
					 a);
		s += len;
		if (*s == '|') {
			s++;
			if (!*s)
				return bad_field(ps, k,
						 "aliases: empty alias at the "
						 "end");
		}
	}
	return 0;
}

static bool valid_id(const char *s)
{
	if (!*s || !isalnum((unsigned char)*s))
		return false;
	for (; *s; s++)
		if (!(islower((unsigned char)*s) ||
		      isdigit((unsigned char)*s) || *s == '-'))
			return false;
	return true;
}

/* Which type already uses key (as id or alias), or NULL. */
static const struct hp_device_type *key_owner(const struct hp_catalog *cat,
					      int upto, const char *key)
{
	char k2[KEY_MAX];

	for (int i = 0; i < upto; i++) {
		const struct hp_device_type *t = &cat->types[i];
		if (make_key(t->name, k2, sizeof(k2)) && !strcmp(k2, key))
			return t;
		for (int a = 0; a < t->naliases; a++)
			if (make_key(t->aliases[a], k2, sizeof(k2)) &&
			    !strcmp(k2, key))
				return t;
	}
	return NULL;
}

/* Every name and alias of the last type must be new to the catalog. */
static int check_unique(const struct parser *ps, const struct hp_catalog *cat,
			const int *at)
{
	const struct hp_device_type *t = &cat->types[cat->n - 1], *o;
	char key[KEY_MAX];

	make_key(t->name, key, sizeof(key));
	if ((o = key_owner(cat, cat->n - 1, key)))
		return bad_field(ps, at[C_NAME], "name is already used by '%s'",
				 o->name);
	for (int a = 0; a < t->naliases; a++) {
		make_key(t->aliases[a], key, sizeof(key));
		o = key_owner(cat, cat->n - 1, key);
		for (int b = 0; !o && b < a; b++) {
			char k2[KEY_MAX];
			make_key(t->aliases[b], k2, sizeof(k2));
			if (!strcmp(k2, key))
				o = t;
		}
		if (o && o != t)
			return bad_field(ps, at[C_ALIASES],
					 "alias '%.40s' already names '%s'",
					 t->aliases[a], o->name);
		if (o == t)
			return bad_field(ps, at[C_ALIASES],
					 "alias '%.40s' is given twice",
					 t->aliases[a]);
	}
	return 0;
}

/*
 * Every figure of t (as the file gives it, per board) within its physical
 * range, a GPU's required figures given, idle power at most board power.
 */
static int check_figures(const struct parser *ps, const int *at,
			 double *const *num, const struct hp_device_type *t)
{
	for (int col = 0; col < C__COUNT; col++) {
		double v;
		if (!num[col])
			continue;
		v = *num[col];
		if (isnan(v)) {
			if (t->kind != HP_DEVICE_GPU || !ranges[col].gpu_needs)
				continue;
			if (at[col] < 0)
				return bad_field(ps, 0,
						 "%s: a gpu needs it and the "
						 "header has no such column",
						 col_names[col]);
			return bad_field(ps, at[col],
					 "%s is empty; a gpu needs it",
					 col_names[col]);
		}
		if (v < ranges[col].min || v > ranges[col].max)
			return bad_field(ps, at[col],
					 "%s = %g is out of range [%g, %g]",
					 col_names[col], v, ranges[col].min,
					 ranges[col].max);
	}
	if (t->idle_w > t->tdp_w)
		return bad_field(ps, at[C_IDLE],
				 "idle_w = %g is more than tdp_w = %g: idle "
				 "power cannot exceed board power",
				 t->idle_w, t->tdp_w);
	return 0;
}

static int parse_row(struct parser *ps, const struct hp_csv *c, const int *at,
		     struct hp_device_type *t)
{
	double *num[C__COUNT] = {0};
	char **src[C__COUNT] = {0};
	int rc;

	num[C_FP32] = &t->fp32_tflops;
	num[C_TF32] = &t->tf32_tflops;
	num[C_FP16] = &t->fp16_tflops;
	num[C_MEM_GB] = &t->mem_gb;
	num[C_MEM_BW] = &t->mem_bw_gbs;
	num[C_TDP] = &t->tdp_w;
	num[C_IDLE] = &t->idle_w;
	src[C_SRC_COMPUTE] = &t->src_compute;
	src[C_SRC_MEMORY] = &t->src_memory;
	src[C_SRC_POWER] = &t->src_power;
	src[C_SRC_IDLE] = &t->src_idle;
	t->devices_per_board = 1;
	for (int col = 0; col < C__COUNT; col++) {
		int k = at[col];
		const char *s;
		if (num[col])
			*num[col] = NAN;
		if (k < 0) {
			if (src[col] && (rc = set_source(ps, "", src[col])))
				return rc;
			continue;
		}
		s = c->fields[k];
		if (num[col]) {
			rc = set_number(ps, k, col_names[col], s, num[col]);
		} else if (src[col]) {
			rc = set_source(ps, s, src[col]);
		} else {
			switch (col) {
			case C_NAME:
				if (!valid_id(s))
					return bad_field(
					    ps, k,
					    "name '%.40s': use lowercase "
					    "letters, digits and '-'",
					    s);
				rc = set_text(ps, k, "name", s, t->name,
					      sizeof(t->name));
				ps->dev = t->name;
				break;
			case C_KIND:
				if (!strcmp(s, "gpu"))
					t->kind = HP_DEVICE_GPU;
				else if (!strcmp(s, "cpu"))
					t->kind = HP_DEVICE_CPU;
				else
					return bad_field(ps, k,
							 "kind '%.40s': give "
							 "gpu or cpu",
							 s);
				rc = 0;
				break;
			case C_VENDOR:
				rc = set_text(ps, k, "vendor", s, t->vendor,
					      sizeof(t->vendor));
				break;
			case C_ARCH:
				rc = set_text(ps, k, "arch", s, t->arch,
					      sizeof(t->arch));
				break;
			case C_PRODUCT:
				rc = set_text(ps, k, "product", s, t->product,
					      sizeof(t->product));
				break;
			case C_DPB: {
				int64_t v = 1;
				if (*s && hp_parse_i64(s, 1, 64, &v))
					return bad_field(
					    ps, k,
					    "devices_per_board '%.40s': "
					    "give a whole number from 1 "
					    "to 64",
					    s);
				t->devices_per_board = (int)v;
				rc = 0;
				break;
			}
			case C_ALIASES:
				rc = set_aliases(ps, k, s, t);
				break;
			default:
				rc = 0;
			}
		}
		if (rc)
			return rc;
	}
	if ((rc = check_figures(ps, at, num, t)))
		return rc;
	/* The file holds per-board figures; the type is per device. */
	for (int col = 0; col < C__COUNT; col++)
		if (num[col])
			*num[col] /= t->devices_per_board;
	return 0;
}

static int read_header(struct parser *ps, const struct hp_csv *c, int *at)
{
	for (int i = 0; i < C__COUNT; i++)
		at[i] = -1;
	for (int k = 0; k < c->nfields; k++) {
		int col;
		for (col = 0; col < C__COUNT; col++)
			if (!strcmp(c->fields[k], col_names[col]))
				break;
		if (col == C__COUNT)
			return bad_field(ps, k,
					 "unknown column '%.40s' (see "
					 "data/devices.md)",
					 c->fields[k]);
		if (at[col] >= 0)
			return bad_field(ps, k, "column '%s' appears twice",
					 col_names[col]);
		at[col] = k;
	}
	if (at[C_NAME] < 0 || at[C_KIND] < 0)
		return bad_field(ps, 0,
				 "the header needs the columns 'name' and "
				 "'kind'");
	return 0;
}

/* A NUL byte is not text: name where it is. */
static int check_text(struct parser *ps, const char *text, size_t len)
{
	const char *z = memchr(text, '\0', len);
	const char *ls = text;
	int line = 1;

	if (!z)
		return 0;
	for (const char *p = text; p < z; p++)
		if (*p == '\n') {
			line++;
			ls = p + 1;
		}
	return hp_error_set(ps->err, HP_EPARSE, "%s:%d:%d: NUL byte in text",
			    ps->path, line, (int)(z - ls) + 1);
}

struct hp_catalog *hp_catalog_parse(const char *text, size_t len,
				    const char *path, struct hp_error *err)
{
	struct parser ps = {
	    path ? path : "", text, text + len, text, 1, NULL, err};
	struct hp_catalog *cat;
	struct hp_csv c;
	int at[C__COUNT], rc, alloc = 0;

	if (!text && len)
		return hp_error_set(err, HP_EINVAL, "no text"), NULL;
	if (check_text(&ps, text, len))
		return NULL;
	cat = calloc(1, sizeof(*cat));
	if (!cat || !(cat->path = hp_strdup(ps.path))) {
		free(cat);
		hp_error_set(err, HP_ENOMEM, "out of memory");
		return NULL;
	}
	hp_csv_init(&c, text ? text : "", len);
	skip_blank(&ps, c.p, c.lines_seen);
	rc = hp_csv_next(&c, err);
	if (rc == 0) {
		hp_error_set(err, HP_EPARSE,
			     "%s:1:1: empty file, expected a "
			     "header line",
			     ps.path);
		goto fail;
	}
	if (rc < 0)
		goto csv_fail;
	if (read_header(&ps, &c, at))
		goto fail;
	int nheader = c.nfields;
	for (;;) {
		ps.dev = NULL;
		skip_blank(&ps, c.p, c.lines_seen);
		rc = hp_csv_next(&c, err);
		if (rc == 0)
			break;
		if (rc < 0)
			goto csv_fail;
		if (c.nfields != nheader) {
			bad_field(
			    &ps, c.nfields < nheader ? c.nfields - 1 : nheader,
			    "%d fields, the header has %d", c.nfields, nheader);
			goto fail;
		}
		if (cat->n >= MAX_TYPES) {
			hp_error_set(err, HP_ETOOBIG,
				     "%s:%d:1: more than %d device types",
				     ps.path, ps.line, MAX_TYPES);
			goto fail;
		}
		if (cat->n == alloc) {
			int na = alloc ? alloc * 2 : 32;
			struct hp_device_type *nt =
			    realloc(cat->types, (size_t)na * sizeof(*nt));
			if (!nt) {
				hp_error_set(err, HP_ENOMEM, "out of memory");
				goto fail;
			}
			cat->types = nt;
			alloc = na;
		}
		struct hp_device_type *t = &cat->types[cat->n++];
		memset(t, 0, sizeof(*t));
		if (parse_row(&ps, &c, at, t) || check_unique(&ps, cat, at))
			goto fail;
	}
	if (cat->n == 0) {
		hp_error_set(err, HP_EPARSE,
			     "%s:%d:1: no device types after "
			     "the header",
			     ps.path, ps.line);
		goto fail;
	}
	hp_csv_release(&c);
	return cat;
csv_fail:
	/* hp_csv says "line N: what"; give it the PATH:LINE:COL form. */
	{
		char msg[sizeof(err->msg)];
		const char *m = err ? err->msg : "";
		const char *colon = strstr(m, ": ");
		int code = err ? err->code : rc, line, col;
		snprintf(msg, sizeof(msg), "%s",
			 strncmp(m, "line ", 5) == 0 && colon ? colon + 2 : m);
		quote_error_pos(&ps, &line, &col);
		hp_error_set(err, code, "%s:%d:%d: %s", ps.path, line, col,
			     msg);
	}
fail:
	hp_csv_release(&c);
	hp_catalog_free(cat);
	return NULL;
}

struct hp_catalog *hp_catalog_load(const char *path, struct hp_error *err)
{
	struct hp_catalog *cat;
	char *text;
	size_t len;

	if (hp_read_file(path, HP_CATALOG_MAX_BYTES, &text, &len, err)) {
		hp_error_prefix(err, "'%s'", path);
		return NULL;
	}
	cat = hp_catalog_parse(text, len, path, err);
	free(text);
	return cat;
}

/* Whether name's key is key. */
static bool key_is(const char *name, const char *key)
{
	char k[KEY_MAX];

	return make_key(name, k, sizeof(k)) && !strcmp(k, key);
}

bool hp_device_names_match(const char *a, const char *b)
{
	char ka[KEY_MAX];

	return a && b && make_key(a, ka, sizeof(ka)) && key_is(b, ka);
}

const struct hp_device_type *hp_catalog_find(const struct hp_catalog *cat,
					     const char *name)
{
	char key[KEY_MAX];

	/* the name's key once: pools and datasets look types up per row */
	if (!cat || !name || !make_key(name, key, sizeof(key)))
		return NULL;
	for (int i = 0; i < cat->n; i++)
		if (key_is(cat->types[i].name, key))
			return &cat->types[i];
	for (int i = 0; i < cat->n; i++) {
		const struct hp_device_type *t = &cat->types[i];
		for (int a = 0; a < t->naliases; a++)
			if (key_is(t->aliases[a], key))
				return t;
	}
	return NULL;
}
