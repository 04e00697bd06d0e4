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
	hp_buf_release(&c->rec);
	memset(c, 0, sizeof(*c));
}

int hp_csv_next(struct hp_csv *c, struct hp_error *err)
{
	size_t *offs = NULL;
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
	offs = malloc(CSV_MAX_FIELDS * sizeof(*offs));
	if (!offs)
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	while (more) {
		if (nf >= CSV_MAX_FIELDS) {
			rc = hp_error_set(err, HP_ETOOBIG,
					  "line %d: more than %d fields",
					  start_line, CSV_MAX_FIELDS);
			goto out;
		}
		offs[nf++] = c->rec.len;
		if (c->p < c->end && *c->p == '"') {
			c->p++;
			for (;;) {
				if (c->p >= c->end) {
					rc = hp_error_set(
					    err, HP_EPARSE,
					    "line %d: unterminated "
					    "quoted field",
					    start_line);
					goto out;
				}
				if (*c->p == '"') {
					if (c->p + 1 < c->end &&
					    c->p[1] == '"') {
						rc = hp_buf_add(&c->rec, "\"",
								1);
						c->p += 2;
					} else {
						c->p++;
						break;
					}
				} else {
					if (*c->p == '\n')
						c->lines_seen++;
					rc = hp_buf_add(&c->rec, c->p, 1);
					c->p++;
				}
				if (rc)
					goto nomem;
			}
			/* After the closing quote: a separator or the end. */
			while (c->p < c->end && *c->p != ',' && *c->p != '\n' &&
			       *c->p != '\r') {
				if (*c->p != ' ' && *c->p != '\t') {
					rc = hp_error_set(
					    err, HP_EPARSE,
					    "line %d: text after a "
					    "closing quote",
					    start_line);
					goto out;
				}
				c->p++;
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
		if (!f)
			goto nomem;
		c->fields = f;
		c->afields = nf;
	}
	for (int i = 0; i < nf; i++)
		c->fields[i] = c->rec.data + offs[i];
	c->nfields = nf;
	free(offs);
	c->line = start_line;
	return 1;
nomem:
	rc = hp_error_set(err, rc == HP_ETOOBIG ? HP_ETOOBIG : HP_ENOMEM,
			  "line %d: record too large or out of memory",
			  start_line);
out:
	free(offs);
	return rc;
}

int hp_csv_index(const struct hp_csv *c, const char *name)
{
	for (int i = 0; i < c->nfields; i++)
		if (strcmp(c->fields[i], name) == 0)
			return i;
	return -1;
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
