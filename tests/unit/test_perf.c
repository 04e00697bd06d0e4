/*
 * test_perf.c - sweeps, the CSV reader and the dataset format.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hetpool/perf.h"
#include "test.h"

HP_TEST(sweep_default_has_360_valid_unique_configs)
{
	struct hp_sweep s;
	struct hp_error err = {0};
	int vals[6][8] = {{0}};

	ASSERT_EQ_INT(hp_sweep_default(&s, &err), 0);
	ASSERT_EQ_INT(s.n, 360);
	for (int i = 0; i < s.n; i++) {
		struct hp_sweep_config *c = &s.configs[i];
		char *json = hp_spec_to_json(&c->spec);
		struct hp_spec back;
		struct hp_graph *g;
		struct hp_features f;

		for (int j = 0; j < i; j++)
			if (!strcmp(c->id, s.configs[j].id))
				HP_FAIL("duplicate id %s", c->id);
		/* The spec survives a JSON round trip and analyses. */
		ASSERT(json);
		ASSERT_EQ_INT(
		    hp_spec_parse_only(json, strlen(json), &back, &err), 0);
		ASSERT_EQ_INT(back.nlayers, c->spec.nlayers);
		g = hp_spec_to_graph(&back, &err);
		ASSERT(g);
		ASSERT_EQ_INT(hp_analyze(g, c->batch, NULL, 0, &f, &err), 0);
		ASSERT_EQ_INT(f.conv_layers, c->conv_layers);
		ASSERT_EQ_INT(f.fc_layers, c->fc_layers);
		if (c->conv_layers)
			ASSERT_EQ_INT(f.max_filters, c->filters);
		hp_features_release(&f);
		hp_graph_free(g);
		hp_spec_release(&back);
		free(json);
		vals[0][c->conv_layers - 1]++;
		vals[1][c->fc_layers - 1]++;
	}
	/* Every value of the grid is represented. */
	for (int k = 0; k < 4; k++)
		ASSERT(vals[0][k] > 50);
	for (int k = 0; k < 3; k++)
		ASSERT(vals[1][k] > 50);
	hp_sweep_release(&s);
}

HP_TEST(sweep_grid_sample_and_errors)
{
	struct hp_sweep s, s2;
	struct hp_error err = {0};
	const char *grid = "{\"conv_layers\":[1,2],\"filters\":[4,8,16],"
			   "\"batch\":[2,4],\"input_size\":16}";
	const char *sample = "{\"conv_layers\":[1,2],\"filters\":[4,8,16],"
			     "\"batch\":[2,4],\"sample\":5,\"seed\":7}";

	ASSERT_EQ_INT(hp_sweep_parse(grid, strlen(grid), NULL, &s, &err), 0);
	ASSERT_EQ_INT(s.n, 12);
	hp_sweep_release(&s);
	ASSERT_EQ_INT(hp_sweep_parse(sample, strlen(sample), NULL, &s, &err),
		      0);
	ASSERT_EQ_INT(hp_sweep_parse(sample, strlen(sample), NULL, &s2, &err),
		      0);
	ASSERT_EQ_INT(s.n, 5);
	for (int i = 0; i < 5; i++) /* the seed makes it repeatable */
		ASSERT_STR_EQ(s.configs[i].id, s2.configs[i].id);
	hp_sweep_release(&s);
	hp_sweep_release(&s2);
	ASSERT(hp_sweep_parse("{\"filterz\":[1]}", 15, NULL, &s, &err) < 0);
	ASSERT(strstr(err.msg, "filterz"));
	ASSERT(hp_sweep_parse("{\"batch\":[0]}", 13, NULL, &s, &err) < 0);
	ASSERT(strstr(err.msg, "batch"));
	ASSERT(hp_sweep_parse("{\"specs\":[\"/nonexistent.json\"]}", 31, NULL,
			      &s, &err) < 0);
	ASSERT(strstr(err.msg, "nonexistent"));
}

HP_TEST(csv_reader_quotes_and_lines)
{
	const char *text = "a,b,c\n1,\"x,y\",\"say \"\"hi\"\"\"\n\n"
			   "2,\"two\nlines\",\r\n3,,z";
	struct hp_csv c;
	struct hp_error err = {0};
	struct hp_buf b;

	hp_csv_init(&c, text, strlen(text));
	ASSERT_EQ_INT(hp_csv_next(&c, &err), 1);
	ASSERT_EQ_INT(c.nfields, 3);
	ASSERT_EQ_INT(hp_csv_index(&c, "c"), 2);
	ASSERT_EQ_INT(hp_csv_next(&c, &err), 1);
	ASSERT_STR_EQ(c.fields[1], "x,y");
	ASSERT_STR_EQ(c.fields[2], "say \"hi\"");
	ASSERT_EQ_INT(hp_csv_next(&c, &err), 1);
	ASSERT_EQ_INT(c.line, 4);
	ASSERT_STR_EQ(c.fields[1], "two\nlines");
	ASSERT_STR_EQ(c.fields[2], "");
	ASSERT_EQ_INT(hp_csv_next(&c, &err), 1);
	ASSERT_EQ_INT(c.line, 6);
	ASSERT_STR_EQ(c.fields[2], "z");
	ASSERT_EQ_INT(hp_csv_next(&c, &err), 0);
	hp_csv_release(&c);

	ASSERT_EQ_INT(hp_csv_header_check(&c, &err), 0);
	hp_csv_release(&c);

	hp_csv_init(&c, "a,b,a\n", 6);
	ASSERT_EQ_INT(hp_csv_next(&c, &err), 1);
	ASSERT_EQ_INT(hp_csv_header_check(&c, &err), HP_EPARSE);
	ASSERT(strstr(err.msg, "'a'") && strstr(err.msg, "fields 1 and 3"));
	hp_csv_release(&c);
	hp_csv_init(&c, "a,,b\n", 5);
	ASSERT_EQ_INT(hp_csv_next(&c, &err), 1);
	ASSERT_EQ_INT(hp_csv_header_check(&c, &err), HP_EPARSE);
	ASSERT(strstr(err.msg, "field 2 is empty"));
	hp_csv_release(&c);

	hp_csv_init(&c, "a,\"open", 7);
	ASSERT_EQ_INT(hp_csv_next(&c, &err), HP_EPARSE);
	ASSERT(strstr(err.msg, "line 1"));
	hp_csv_release(&c);

	hp_buf_init(&b, 1024);
	ASSERT_EQ_INT(hp_csv_add_field(&b, "plain"), 0);
	ASSERT_EQ_INT(hp_csv_add_field(&b, "a,\"b\""), 0);
	ASSERT_STR_EQ(hp_buf_str(&b), "plain\"a,\"\"b\"\"\"");
	hp_buf_release(&b);
}

struct collect {
	int n;
	struct hp_profile_row first, last;
};

static int on_row(const struct hp_profile_row *r, int line, void *ud,
		  struct hp_error *err)
{
	(void)line;
	(void)err;
	struct collect *c = ud;
	if (++c->n == 1)
		c->first = *r;
	c->last = *r;
	return 0;
}

HP_TEST(dataset_round_trip_and_torn_line)
{
	static struct hp_profile_row r;
	struct collect col = {0};
	struct hp_error err = {0};
	char path[] = "/tmp/hp_dataset_XXXXXX";
	int fd = mkstemp(path);
	struct hp_buf b;
	int64_t torn;
	FILE *f;

	ASSERT(fd >= 0);
	close(fd);
	memset(&r, 0, sizeof(r));
	snprintf(r.config_id, sizeof(r.config_id), "cfg-1");
	snprintf(r.spec_json, sizeof(r.spec_json), "{\"a\":\"b,c\"}");
	snprintf(r.device, sizeof(r.device), "cpu");
	snprintf(r.backend, sizeof(r.backend), "cpu: oneDNN, 2 threads");
	r.batch = 32;
	r.step_time_s = 0.0123456789;
	r.energy_per_step_j = NAN; /* not measured */
	r.power_w = 250.5;
	r.peak_mem_bytes = 1ll << 40;

	hp_buf_init(&b, 1 << 20);
	ASSERT_EQ_INT(hp_buf_adds(&b, hp_dataset_header()), 0);
	ASSERT_EQ_INT(hp_buf_add(&b, "\n", 1), 0);
	ASSERT_EQ_INT(hp_dataset_format_row(&r, &b), 0);
	ASSERT_EQ_INT(hp_dataset_format_row(&r, &b), 0);
	/* A kill in the middle of the third row. */
	ASSERT_EQ_INT(hp_buf_adds(&b, "cfg-3,fam,1,2"), 0);
	f = fopen(path, "w");
	ASSERT(f);
	fwrite(b.data, 1, b.len, f);
	fclose(f);
	ASSERT_EQ_INT(hp_dataset_read(path, on_row, &col, &torn, &err), 0);
	ASSERT_EQ_INT(col.n, 2);
	ASSERT_EQ_INT(torn, 13);
	ASSERT_STR_EQ(col.last.spec_json, "{\"a\":\"b,c\"}");
	ASSERT_STR_EQ(col.last.backend, "cpu: oneDNN, 2 threads");
	ASSERT_NEAR(col.last.step_time_s, 0.0123456789, 1e-8);
	ASSERT(isnan(col.last.energy_per_step_j));
	ASSERT_NEAR(col.last.power_w, 250.5, 1e-12);
	ASSERT_EQ_INT(col.last.peak_mem_bytes, 1ll << 40);
	hp_buf_release(&b);

	f = fopen(path, "w");
	fputs("not,a,dataset\n1,2,3\n", f);
	fclose(f);
	ASSERT(hp_dataset_read(path, on_row, &col, &torn, &err) < 0);
	ASSERT(strstr(err.msg, "no column"));
	unlink(path);
}

/* The last row of a file that lacks its final newline is a row when it is
 * complete, and torn (left out, its bytes reported) only when it is not:
 * an open quote or fewer fields than the header. */
HP_TEST(dataset_last_row_without_newline)
{
	static struct hp_profile_row r;
	struct hp_error err = {0};
	char path[] = "/tmp/hp_dataset_XXXXXX";
	int fd = mkstemp(path);
	struct hp_buf b;
	size_t row2;
	int64_t torn;
	FILE *f;

	ASSERT(fd >= 0);
	close(fd);
	memset(&r, 0, sizeof(r));
	snprintf(r.config_id, sizeof(r.config_id), "cfg-1");
	snprintf(r.spec_json, sizeof(r.spec_json), "{\"a\":\"b,c\"}");
	r.batch = 8;
	r.step_time_s = 0.5;
	hp_buf_init(&b, 1 << 20);
	ASSERT_EQ_INT(hp_buf_adds(&b, hp_dataset_header()), 0);
	ASSERT_EQ_INT(hp_buf_add(&b, "\n", 1), 0);
	ASSERT_EQ_INT(hp_dataset_format_row(&r, &b), 0);
	row2 = b.len;
	snprintf(r.config_id, sizeof(r.config_id), "cfg-2");
	ASSERT_EQ_INT(hp_dataset_format_row(&r, &b), 0);

	/* Complete, newline missing: kept. */
	f = fopen(path, "w");
	ASSERT(f);
	fwrite(b.data, 1, b.len - 1, f);
	fclose(f);
	struct collect col = {0};
	ASSERT_EQ_INT(hp_dataset_read(path, on_row, &col, &torn, &err), 0);
	ASSERT_EQ_INT(col.n, 2);
	ASSERT_EQ_INT(torn, 0);
	ASSERT_STR_EQ(col.last.config_id, "cfg-2");
	ASSERT_STR_EQ(col.last.spec_json, "{\"a\":\"b,c\"}");

	/* Cut inside the quoted last field: an open quote (cut 3 bytes:
	 * inside a doubled quote), or a quote that reads as closing but a
	 * spec that is not whole JSON (cut 4): torn either way. */
	for (size_t cut = 3; cut <= 4; cut++) {
		f = fopen(path, "w");
		fwrite(b.data, 1, b.len - cut, f);
		fclose(f);
		memset(&col, 0, sizeof(col));
		ASSERT_EQ_INT(hp_dataset_read(path, on_row, &col, &torn, &err),
			      0);
		ASSERT_EQ_INT(col.n, 1);
		ASSERT_EQ_INT(torn, (int64_t)(b.len - cut - row2));
	}

	/* Cut between fields: fewer fields than the header, torn. */
	f = fopen(path, "w");
	fwrite(b.data, 1, row2 + 10, f);
	fclose(f);
	memset(&col, 0, sizeof(col));
	ASSERT_EQ_INT(hp_dataset_read(path, on_row, &col, &torn, &err), 0);
	ASSERT_EQ_INT(col.n, 1);
	ASSERT_EQ_INT(torn, 10);

	/* Fewer fields on a line that ends in its newline: not a kill but a
	 * broken file, refused. */
	f = fopen(path, "w");
	fwrite(b.data, 1, row2, f);
	fputs("cfg-3,fam,1\n", f);
	fclose(f);
	memset(&col, 0, sizeof(col));
	ASSERT(hp_dataset_read(path, on_row, &col, &torn, &err) < 0);
	ASSERT(strstr(err.msg, "line 3"));
	hp_buf_release(&b);
	unlink(path);
}

/* The yardstick's columns: written and read back when measured, empty when
 * not; a dataset written before they existed reads as not measured. */
HP_TEST(dataset_ref_columns_round_trip_and_old_files)
{
	static struct hp_profile_row r;
	struct collect col = {0};
	struct hp_error err = {0};
	struct hp_buf b, old;
	const char *h = hp_dataset_header(), *p;

	ASSERT(strstr(h, ",ref_time_s,ref_time_cv,ref_steps,"));
	memset(&r, 0, sizeof(r));
	snprintf(r.config_id, sizeof(r.config_id), "cfg-1");
	snprintf(r.spec_json, sizeof(r.spec_json), "{}");
	r.batch = 8;
	r.step_time_s = 0.25;
	r.ref_time_s = 0.00212345678;
	r.ref_time_cv = 0.031;
	r.ref_steps = 17;
	hp_buf_init(&b, 1 << 20);
	ASSERT_EQ_INT(hp_buf_adds(&b, h), 0);
	ASSERT_EQ_INT(hp_buf_add(&b, "\n", 1), 0);
	ASSERT_EQ_INT(hp_dataset_format_row(&r, &b), 0);
	r.ref_time_s = r.ref_time_cv = NAN; /* not measured */
	r.ref_steps = 0;
	ASSERT_EQ_INT(hp_dataset_format_row(&r, &b), 0);
	ASSERT_EQ_INT(hp_dataset_parse(b.data, b.len, on_row, &col, NULL, &err),
		      0);
	ASSERT_EQ_INT(col.n, 2);
	ASSERT_NEAR(col.first.ref_time_s, 0.00212345678, 1e-14);
	ASSERT_NEAR(col.first.ref_time_cv, 0.031, 1e-12);
	ASSERT_EQ_INT(col.first.ref_steps, 17);
	ASSERT(isnan(col.last.ref_time_s) && isnan(col.last.ref_time_cv));
	ASSERT_EQ_INT(col.last.ref_steps, 0);

	/* The same text without the three columns: an older dataset (these
	 * rows have no comma inside a field). */
	hp_buf_init(&old, 1 << 20);
	for (p = b.data; p < b.data + b.len;) {
		const char *nl = memchr(p, '\n', (size_t)(b.data + b.len - p));
		int field = 0, skip = 0;
		/* the columns' place in the header */
		for (const char *q = h; q < strstr(h, ",ref_time_s,"); q++)
			skip += *q == ',';
		skip++;
		for (const char *q = p; q <= nl; q++) {
			if (field < skip || field > skip + 2)
				ASSERT_EQ_INT(hp_buf_add(&old, q, 1), 0);
			field += *q == ',';
		}
		p = nl + 1;
	}
	ASSERT(!strstr(hp_buf_str(&old), "ref_"));
	memset(&col, 0, sizeof(col));
	ASSERT_EQ_INT(
	    hp_dataset_parse(old.data, old.len, on_row, &col, NULL, &err), 0);
	ASSERT_EQ_INT(col.n, 2);
	ASSERT_NEAR(col.first.step_time_s, 0.25, 1e-12);
	ASSERT(isnan(col.first.ref_time_s) && isnan(col.first.ref_time_cv));
	ASSERT_EQ_INT(col.first.ref_steps, 0);
	hp_buf_release(&old);
	hp_buf_release(&b);
}
