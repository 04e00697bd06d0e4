/*
 * dataset.c - the profiler's dataset: one CSV row per measured
 * configuration, columns documented in docs/dataset.md.  One table of
 * columns drives both the writer and the reader.
 */
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hetpool/perf.h"
#include "util/banned.h"

enum col_type { C_STR, C_I64, C_INT, C_F64 };

struct col {
	const char *name;
	enum col_type type;
	size_t off;
	size_t size;   /* strings: buffer size */
	bool optional; /* older datasets lack it: not measured (NaN) */
};

/* clang-format off */
#define S(f) {#f, C_STR, offsetof(struct hp_profile_row, f), \
	       sizeof(((struct hp_profile_row *)0)->f)}
#define I(f) {#f, C_I64, offsetof(struct hp_profile_row, f), 0}
#define N(f) {#f, C_INT, offsetof(struct hp_profile_row, f), 0}
#define F(f) {#f, C_F64, offsetof(struct hp_profile_row, f), 0}
#define O(f) {#f, C_F64, offsetof(struct hp_profile_row, f), 0, true}
#define OI(f) {#f, C_INT, offsetof(struct hp_profile_row, f), 0, true}

static const struct col cols[] = {
	S(config_id), S(family), N(conv_layers), I(filters), N(fc_layers),
	I(fc_width), I(input_size), I(batch), I(params), I(macs_per_sample),
	F(flops_fwd), F(flops_bwd), I(activations_bytes), S(device),
	S(device_name), S(backend), S(host), S(driver), N(threads),
	S(optimizer), F(step_time_s), F(step_time_cv), F(step_time_min_s),
	F(step_time_p90_s), O(time_conv_s), O(time_fc_s), O(time_other_s),
	O(time_loss_s), O(cpu_pressure), OI(attempts), O(ref_time_s), O(ref_time_cv),
	OI(ref_steps), O(host_isa_gflops), O(host_sgemm_gflops),
	O(host_triad_gbs), O(host_cache_bytes), N(steps), N(warmup_steps), I(peak_mem_bytes),
	I(peak_rss_bytes), F(energy_per_step_j), F(power_w), S(energy_source),
	S(timestamp), S(hetpool_version), S(spec_json),
};
/* clang-format on */
#define NCOLS ((int)(sizeof(cols) / sizeof(cols[0])))

/* The header line, built once (threads may ask for it at once). */
static char header[2048];
static pthread_once_t header_once = PTHREAD_ONCE_INIT;

static void header_build(void)
{
	size_t off = 0;

	for (int i = 0; i < NCOLS && off < sizeof(header); i++)
		off += (size_t)snprintf(header + off, sizeof(header) - off,
					"%s%s", i ? "," : "", cols[i].name);
}

const char *hp_dataset_header(void)
{
	pthread_once(&header_once, header_build);
	return header;
}

int hp_dataset_format_row(const struct hp_profile_row *r, struct hp_buf *b)
{
	const char *base = (const char *)r;
	int rc = 0;

	for (int i = 0; i < NCOLS && !rc; i++) {
		const void *p = base + cols[i].off;
		char num[64];

		if (i && (rc = hp_buf_add(b, ",", 1)))
			break;
		switch (cols[i].type) {
		case C_STR:
			rc = hp_csv_add_field(b, p);
			break;
		case C_I64:
			snprintf(num, sizeof(num), "%lld",
				 (long long)*(const int64_t *)p);
			rc = hp_buf_adds(b, num);
			break;
		case C_INT:
			snprintf(num, sizeof(num), "%d", *(const int *)p);
			rc = hp_buf_adds(b, num);
			break;
		case C_F64: {
			double d = *(const double *)p;
			/* Not measured is an empty field, never a number. */
			if (isfinite(d)) {
				snprintf(num, sizeof(num), "%.9g", d);
				rc = hp_buf_adds(b, num);
			}
			break;
		}
		}
	}
	return rc ? rc : hp_buf_add(b, "\n", 1);
}

static int parse_field(const struct col *c, const char *s,
		       struct hp_profile_row *r)
{
	char *base = (char *)r;
	void *p = base + c->off;
	int64_t v;
	double d;

	switch (c->type) {
	case C_STR:
		if (strlen(s) >= c->size)
			return HP_ERANGE;
		memcpy(p, s, strlen(s) + 1);
		return 0;
	case C_I64:
		if (hp_parse_i64(s, INT64_MIN, INT64_MAX, &v))
			return HP_EINVAL;
		*(int64_t *)p = v;
		return 0;
	case C_INT:
		if (hp_parse_i64(s, -2147483647, 2147483647, &v))
			return HP_EINVAL;
		*(int *)p = (int)v;
		return 0;
	case C_F64:
		if (!*s) {
			*(double *)p = NAN;
			return 0;
		}
		if (hp_parse_double(s, &d))
			return HP_EINVAL;
		*(double *)p = d;
		return 0;
	}
	return HP_EINTERNAL;
}

/*
 * Whether the record hp_csv_next() just read (rc) is a row cut short by a
 * kill: the file's last record, without its newline, with an open quote,
 * fewer fields than the header, or a spec_json (spec_col, the last column
 * the profiler writes) that is not a whole JSON text: a cut just after
 * the first of a doubled quote reads as a closed field.  A complete last
 * row without its newline is a row.
 */
static bool torn_tail(const struct hp_csv *csv, const char *text, size_t len,
		      int rc, int want_fields, int spec_col)
{
	json_t *j;

	if (len == 0 || text[len - 1] == '\n' || csv->p < csv->end)
		return false;
	if (rc == HP_EPARSE) /* the unterminated quote at the end */
		return true;
	if (rc != 1)
		return false;
	if (csv->nfields < want_fields)
		return true;
	if (spec_col < 0 || spec_col >= csv->nfields ||
	    !csv->fields[spec_col][0])
		return false;
	j = json_loads(csv->fields[spec_col], 0, NULL);
	json_decref(j);
	return j == NULL;
}

int hp_dataset_read(const char *path, hp_dataset_row_fn fn, void *ud,
		    int64_t *torn_bytes, struct hp_error *err)
{
	char *text;
	size_t len;
	int rc;

	if (torn_bytes)
		*torn_bytes = 0;
	if ((rc = hp_read_file(path, 1u << 30, &text, &len, err)))
		return rc;
	rc = hp_dataset_parse(text, len, fn, ud, torn_bytes, err);
	free(text);
	return rc;
}

int hp_dataset_parse(const char *text, size_t len, hp_dataset_row_fn fn,
		     void *ud, int64_t *torn_bytes, struct hp_error *err)
{
	int map[NCOLS], rc, header_fields, spec_col;
	struct hp_csv csv;
	struct hp_profile_row *row = NULL;

	if (torn_bytes)
		*torn_bytes = 0;
	hp_csv_init(&csv, text, len);
	rc = hp_csv_next(&csv, err);
	if (rc <= 0) {
		if (rc == 0)
			rc = hp_error_set(err, HP_EPARSE, "empty dataset");
		goto out;
	}
	if ((rc = hp_csv_header_check(&csv, err)))
		goto out;
	header_fields = csv.nfields;
	spec_col = hp_csv_index(&csv, "spec_json");
	for (int i = 0; i < NCOLS; i++) {
		map[i] = hp_csv_index(&csv, cols[i].name);
		if (map[i] < 0 && !cols[i].optional) {
			rc = hp_error_set(err, HP_EPARSE,
					  "line 1: no column '%s' (not a "
					  "hetpool dataset?)",
					  cols[i].name);
			goto out;
		}
	}
	row = malloc(sizeof(*row));
	if (!row) {
		rc = hp_error_set(err, HP_ENOMEM, "out of memory");
		goto out;
	}
	for (;;) {
		const char *start = csv.p;
		struct hp_error cerr = {0};
		rc = hp_csv_next(&csv, &cerr);
		if (torn_tail(&csv, text, len, rc, header_fields, spec_col)) {
			/* Leave it out; the caller may cut it. */
			if (torn_bytes)
				*torn_bytes = (int64_t)(text + len - start);
			rc = 0;
			break;
		}
		if (rc <= 0) {
			if (rc < 0)
				*err = cerr;
			break;
		}
		if ((rc = hp_csv_fields_check(&csv, header_fields, err)))
			goto out;
		memset(row, 0, sizeof(*row));
		for (int i = 0; i < NCOLS; i++) {
			if (map[i] < 0) { /* optional: not in this file */
				if (cols[i].type == C_F64)
					*(double *)((char *)row + cols[i].off) =
					    NAN;
				continue;
			}
			if (map[i] >= csv.nfields) {
				rc = hp_error_set(
				    err, HP_EPARSE,
				    "line %d: %d fields, expected "
				    "%d",
				    csv.line, csv.nfields, header_fields);
				goto out;
			}
			if (parse_field(&cols[i], csv.fields[map[i]], row)) {
				rc = hp_error_set(
				    err, HP_EPARSE,
				    "line %d: bad value '%.40s' in "
				    "column '%s'",
				    csv.line, csv.fields[map[i]], cols[i].name);
				goto out;
			}
		}
		if (err) {
			err->code = 0;
			err->msg[0] = '\0';
		}
		if ((rc = fn(row, csv.line, ud, err)) < 0) {
			if (!err || !err->msg[0])
				hp_error_set(err, rc, "line %d: %s", csv.line,
					     hp_strerror(rc));
			else
				hp_error_prefix(err, "line %d", csv.line);
			if (err)
				err->code = rc;
			goto out;
		}
	}
out:
	free(row);
	hp_csv_release(&csv);
	return rc < 0 ? rc : 0;
}
