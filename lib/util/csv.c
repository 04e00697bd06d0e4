/* csv.c - a small RFC 4180 reader and field writer (datasets, catalogs). */
#include <stdlib.h>
#include <string.h>

#include "hetpool/util.h"
#include "util/banned.h"

#define CSV_MAX_FIELDS 4096
#define CSV_MAX_RECORD (16u << 20)

void hp_csv_init(struct hp_csv *c, const char *text, size_t len)
{
	memset(c, 0, sizeof(*c));
	c->p = text;
	c->end = text + len;
	hp_buf_init(&c->rec, CSV_MAX_RECORD);
}

void hp_csv_release(struct hp_csv *c)
{
	free(c->fields);
	free(c->offs);
	hp_buf_release(&c->rec);
	memset(c, 0, sizeof(*c));
}

/* Room for field n's offset (the array grows by doubling, kept across
 * records). */
static int reserve_field(struct hp_csv *c, int n)
{
	size_t *o;
	int na;

	if (n < c->aoffs)
		return 0;
	na = c->aoffs ? c->aoffs * 2 : 64;
	if (na > CSV_MAX_FIELDS)
		na = CSV_MAX_FIELDS;
	o = realloc(c->offs, (size_t)na * sizeof(*o));
	if (!o)
		return HP_ENOMEM;
	c->offs = o;
	c->aoffs = na;
	return 0;
}

/* Count the newlines in [s, e). */
static int count_lines(const char *s, const char *e)
{
	int n = 0;

	while ((s = memchr(s, '\n', (size_t)(e - s))) != NULL) {
		n++;
		s++;
	}
	return n;
}

/* A quoted field at c->p (past its opening quote) into c->rec: runs
 * between quotes are copied whole, a doubled quote gives one. */
static int quoted_field(struct hp_csv *c, int start_line, struct hp_error *err)
{
	for (;;) {
		const char *q = memchr(c->p, '"', (size_t)(c->end - c->p));
		const char *run_end = q ? q : c->end;
		int rc;
		c->lines_seen += count_lines(c->p, run_end);
		if ((rc = hp_buf_add(&c->rec, c->p, (size_t)(run_end - c->p))))
			return rc;
		c->p = run_end;
		if (!q)
			return hp_error_set(
			    err, HP_EPARSE,
			    "line %d: unterminated quoted field", start_line);
		if (q + 1 < c->end && q[1] == '"') {
			if ((rc = hp_buf_add(&c->rec, "\"", 1)))
				return rc;
			c->p = q + 2;
			continue;
		}
		c->p = q + 1;
		/* After the closing quote: a separator or the end. */
		while (c->p < c->end && *c->p != ',' && *c->p != '\n' &&
		       *c->p != '\r') {
			if (*c->p != ' ' && *c->p != '\t')
				return hp_error_set(err, HP_EPARSE,
						    "line %d: text after a "
						    "closing quote",
						    start_line);
			c->p++;
		}
		return 0;
	}
}

int hp_csv_next(struct hp_csv *c, struct hp_error *err)
{
	int nf = 0, rc = 0, start_line;
	bool more = true;

	/* Skip blank lines between records. */
	while (c->p < c->end && (*c->p == '\n' || *c->p == '\r')) {
		if (*c->p == '\n')
			c->lines_seen++;
		c->p++;
	}
	if (c->p >= c->end)
		return 0;
	start_line = ++c->lines_seen;
	hp_buf_reset(&c->rec);
	while (more) {
		if (nf >= CSV_MAX_FIELDS)
			return hp_error_set(err, HP_ETOOBIG,
					    "line %d: more than %d fields",
					    start_line, CSV_MAX_FIELDS);
		if ((rc = reserve_field(c, nf)))
			goto nomem;
		c->offs[nf++] = c->rec.len;
		if (c->p < c->end && *c->p == '"') {
			c->p++;
			if ((rc = quoted_field(c, start_line, err))) {
				if (rc == HP_ENOMEM || rc == HP_ETOOBIG)
					goto nomem;
				return rc;
			}
		} else {
			const char *s = c->p;
			while (c->p < c->end && *c->p != ',' && *c->p != '\n' &&
			       *c->p != '\r')
				c->p++;
			if ((rc = hp_buf_add(&c->rec, s, (size_t)(c->p - s))))
				goto nomem;
		}
		if ((rc = hp_buf_add(&c->rec, "", 1)))
			goto nomem;
		if (c->p < c->end && *c->p == ',') {
			c->p++;
		} else {
			more = false;
			if (c->p < c->end && *c->p == '\r')
				c->p++;
			if (c->p < c->end && *c->p == '\n')
				c->p++;
		}
	}
	if (nf > c->afields) {
		char **f = realloc(c->fields, (size_t)nf * sizeof(*f));
		if (!f) {
			rc = HP_ENOMEM;
			goto nomem;
		}
		c->fields = f;
		c->afields = nf;
	}
	for (int i = 0; i < nf; i++)
		c->fields[i] = c->rec.data + c->offs[i];
	c->nfields = nf;
	c->line = start_line;
	return 1;
nomem:
	return hp_error_set(err, rc == HP_ETOOBIG ? HP_ETOOBIG : HP_ENOMEM,
			    "line %d: record too large or out of memory",
			    start_line);
}

int hp_csv_index(const struct hp_csv *c, const char *name)
{
	for (int i = 0; i < c->nfields; i++)
		if (strcmp(c->fields[i], name) == 0)
			return i;
	return -1;
}

int hp_csv_header_check(const struct hp_csv *c, struct hp_error *err)
{
	for (int i = 0; i < c->nfields; i++) {
		if (!*c->fields[i])
			return hp_error_set(err, HP_EPARSE,
					    "line %d: header field %d is empty",
					    c->line, i + 1);
		for (int j = 0; j < i; j++)
			if (strcmp(c->fields[i], c->fields[j]) == 0)
				return hp_error_set(
				    err, HP_EPARSE,
				    "line %d: column '%.64s' is in the header "
				    "twice (fields %d and %d)",
				    c->line, c->fields[i], j + 1, i + 1);
	}
	return 0;
}

int hp_csv_fields_check(const struct hp_csv *c, int nheader,
			struct hp_error *err)
{
	if (c->nfields == nheader)
		return 0;
	return hp_error_set(err, HP_EPARSE,
			    "line %d: %d fields; the header has %d", c->line,
			    c->nfields, nheader);
}

int hp_csv_add_field(struct hp_buf *b, const char *s)
{
	int rc;

	if (!strpbrk(s, ",\"\r\n"))
		return hp_buf_adds(b, s);
	if ((rc = hp_buf_add(b, "\"", 1)))
		return rc;
	for (; *s; s++) {
		if (*s == '"' && (rc = hp_buf_add(b, "\"", 1)))
			return rc;
		if ((rc = hp_buf_add(b, s, 1)))
			return rc;
	}
	return hp_buf_add(b, "\"", 1);
}
