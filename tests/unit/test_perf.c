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
	/* "sample" and "seed" hold one value: a list is refused by name, not
	 * written past the one (found by fuzz_sweep, an overflow under
	 * ASan) */
	static const char seeds[] = "{\"seed\":[1,2,3,4,5,6,7,8]}";
	ASSERT(hp_sweep_parse(seeds, strlen(seeds), NULL, &s, &err) < 0);
	ASSERT(strstr(err.msg, "\"seed\" takes one integer"));
	ASSERT(hp_sweep_parse("{\"sample\":[5,6]}", 16, NULL, &s, &err) < 0);
	ASSERT(strstr(err.msg, "\"sample\" takes one integer"));
	ASSERT_EQ_INT(hp_sweep_parse("{\"seed\":[7]}", 12, NULL, &s, &err), 0);
	hp_sweep_release(&s);
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
	/* optional: count rows whose config_id and spec_json are in these */
	char (*ud_ids)[96];
	char (*ud_specs)[2048];
	int ud_n, *ud_found;
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
	for (int i = 0; i < c->ud_n; i++)
		if (!strcmp(c->ud_ids[i], r->config_id) &&
		    !strcmp(c->ud_specs[i], r->spec_json)) {
			(*c->ud_found)++;
			break;
		}
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

	/* a row with a field more or less than the header is refused by
	 * its count (until 3 December an extra field passed, and a missing
	 * one read the next column's value: "bad value 'cpu' in column
	 * 'activations_bytes'") */
	for (int extra = 0; extra < 2; extra++) {
		size_t head;
		hp_buf_init(&b, 1 << 20);
		ASSERT_EQ_INT(hp_buf_adds(&b, hp_dataset_header()), 0);
		ASSERT_EQ_INT(hp_buf_add(&b, "\n", 1), 0);
		head = b.len;
		ASSERT_EQ_INT(hp_dataset_format_row(&r, &b), 0);
		if (extra) { /* one more field at the end */
			b.data[b.len - 1] = ',';
			ASSERT_EQ_INT(hp_buf_adds(&b, "x\n"), 0);
		} else { /* the first field ("cfg-1,") gone */
			ASSERT(!memcmp(b.data + head, "cfg-1,", 6));
			memmove(b.data + head, b.data + head + 6,
				b.len - head - 6);
			b.len -= 6;
		}
		f = fopen(path, "w");
		ASSERT(f);
		fwrite(b.data, 1, b.len, f);
		fclose(f);
		ASSERT(hp_dataset_read(path, on_row, &col, &torn, &err) < 0);
		if (!strstr(err.msg, "line 2:") ||
		    !strstr(err.msg, "fields; the header has"))
			HP_FAIL("extra %d: %s", extra, err.msg);
		hp_buf_release(&b);
	}

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
/* The host figures of a CPU row go out and come back; a field left empty
 * (not measured) reads as NaN, and a file without the columns too. */
HP_TEST(dataset_host_columns_round_trip)
{
	static struct hp_profile_row r;
	struct collect col = {0};
	struct hp_error err = {0};
	struct hp_buf b;
	const char *h = hp_dataset_header();

	ASSERT(strstr(h, ",host_isa_gflops,host_sgemm_gflops,host_triad_gbs,"
			 "host_cache_bytes,"));
	memset(&r, 0, sizeof(r));
	snprintf(r.config_id, sizeof(r.config_id), "cfg-h");
	snprintf(r.spec_json, sizeof(r.spec_json), "{}");
	r.batch = 4;
	r.step_time_s = 0.01;
	r.ref_time_s = r.ref_time_cv = NAN;
	r.host_isa_gflops = 268.293376;
	r.host_sgemm_gflops = NAN;
	r.host_triad_gbs = 19.75;
	r.host_cache_bytes = 34078720;
	hp_buf_init(&b, 1 << 16);
	ASSERT_EQ_INT(hp_buf_adds(&b, h), 0);
	ASSERT_EQ_INT(hp_buf_add(&b, "\n", 1), 0);
	ASSERT_EQ_INT(hp_dataset_format_row(&r, &b), 0);
	ASSERT_EQ_INT(hp_dataset_parse(b.data, b.len, on_row, &col, NULL, &err),
		      0);
	ASSERT_EQ_INT(col.n, 1);
	ASSERT_NEAR(col.first.host_isa_gflops, 268.293376, 1e-6);
	ASSERT(isnan(col.first.host_sgemm_gflops));
	ASSERT_NEAR(col.first.host_triad_gbs, 19.75, 1e-9);
	ASSERT_NEAR(col.first.host_cache_bytes, 34078720, 0.5);
	hp_buf_release(&b);
}

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

/* The default sweep is the one the shipped profile was measured on: the
 * same 360 ids (data/profiles/cpu-default.csv) and the same specs, whatever
 * variables the generator gained. */
HP_TEST(sweep_default_unchanged_against_shipped_profile)
{
	struct hp_sweep s;
	struct hp_error err = {0};
	struct collect col = {0};
	static char ids[400][96], specs[400][2048];
	int n = 0, found = 0;

	ASSERT_EQ_INT(hp_sweep_default(&s, &err), 0);
	ASSERT_EQ_INT(s.n, 360);
	for (int i = 0; i < s.n; i++) {
		char *j = hp_spec_to_json(&s.configs[i].spec);
		ASSERT(j && strlen(j) < sizeof(specs[0]));
		snprintf(ids[n], sizeof(ids[0]), "%s", s.configs[i].id);
		snprintf(specs[n++], sizeof(specs[0]), "%s", j);
		free(j);
	}
	hp_sweep_release(&s);
	col.ud_ids = ids;
	col.ud_specs = specs;
	col.ud_n = n;
	col.ud_found = &found;
	if (hp_dataset_read(hp_test_path("data/profiles/cpu-default.csv"),
			    on_row, &col, NULL, &err))
		HP_FAIL("cpu-default.csv: %s", err.msg);
	ASSERT_EQ_INT(col.n, 360);
	ASSERT_EQ_INT(found, 360);
}

/* Configuration i of s is a CNN that analyses (some MACs), and its id is
 * none of the earlier configurations'. */
static void config_analyses(const struct hp_sweep *s, int i)
{
	const struct hp_sweep_config *c = &s->configs[i];
	struct hp_error err = {0};
	struct hp_graph *gr = hp_spec_to_graph(&c->spec, &err);
	struct hp_features f;

	if (!gr)
		HP_FAIL("%s: %s", c->id, err.msg);
	ASSERT_EQ_INT(hp_analyze(gr, c->batch, NULL, 0, &f, &err), 0);
	ASSERT(f.macs_per_sample > 0);
	hp_features_release(&f);
	hp_graph_free(gr);
	for (int j = 0; j < i; j++)
		ASSERT(strcmp(c->id, s->configs[j].id));
}

/* The new variables: kernel, stride, pooling, channels, classes, batch
 * norm and dropout reach the spec and the id; bad values are refused. */
HP_TEST(sweep_wider_design_space)
{
	struct hp_sweep s;
	struct hp_error err = {0};
	const char *g =
	    "{\"conv_layers\":[2],\"filters\":[8],\"fc_layers\":[2],"
	    "\"input_size\":[32],\"batch\":[4],\"kernel\":[1,5],\"stride\":2,"
	    "\"pool\":[\"max\",\"avg\"],\"channels\":[1],\"classes\":[100],"
	    "\"bn\":[false],\"dropout\":[0.5]}";
	static const char *const bad[] = {
	    "{\"kernel\":[2]}",	   "{\"kernel\":[17]}",
	    "{\"stride\":[0]}",	   "{\"pool\":\"min\"}",
	    "{\"bn\":\"yes\"}",	   "{\"bn\":[true,1]}",
	    "{\"dropout\":[0,1]}", "{\"dropout\":\"x\"}",
	    "{\"channels\":[0]}",  "{\"pool\":[\"max\",\"avg\",\"max\"]}",
	};

	ASSERT_EQ_INT(hp_sweep_parse(g, strlen(g), NULL, &s, &err), 0);
	ASSERT_EQ_INT(s.n, 4);
	for (int i = 0; i < s.n; i++) {
		const struct hp_sweep_config *c = &s.configs[i];
		const struct hp_spec *sp = &c->spec;
		int conv = 0, pool = 0, bn = 0, drop = 0;
		ASSERT_EQ_INT(sp->input[0], 1);
		ASSERT_EQ_INT(sp->classes, 100);
		for (int k = 0; k < sp->nlayers; k++) {
			const struct hp_spec_layer *L = &sp->layers[k];
			if (L->type == HP_LAYER_CONV) {
				ASSERT_EQ_INT(L->kernel, c->vars.kernel);
				ASSERT_EQ_INT(L->stride, 2);
				ASSERT_EQ_INT(L->pad, c->vars.kernel / 2);
				conv++;
			}
			if (L->type == HP_LAYER_POOL) {
				ASSERT_EQ_INT(L->pool_max, !c->vars.pool_avg);
				pool++;
			}
			bn += L->type == HP_LAYER_BN;
			drop += L->type == HP_LAYER_DROPOUT;
		}
		/* 32 -> conv/2 16 -> pool 8 -> conv/2 4: one pool */
		ASSERT_EQ_INT(conv, 2);
		ASSERT_EQ_INT(pool, 1);
		ASSERT_EQ_INT(bn, 0);
		ASSERT_EQ_INT(drop, 1);
		ASSERT(strstr(c->id, "-st2") &&
		       strstr(c->id, "-nobn-ch1-n100-d0.5"));
		ASSERT(!!strstr(c->id, "-avg") == c->vars.pool_avg);
		ASSERT(!!strstr(c->id, "-ks1") == (c->vars.kernel == 1));
		ASSERT(!!strstr(c->id, "-ks5") == (c->vars.kernel == 5));
		config_analyses(&s, i);
	}
	hp_sweep_release(&s);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (hp_sweep_parse(bad[i], strlen(bad[i]), NULL, &s, &err) == 0)
			HP_FAIL("accepted %s", bad[i]);
	{
		/* 11 lists of 64 values: 64^11 combinations would overflow a
		 * 64-bit count; refused as too many */
		static const char *const keys[] = {
		    "conv_layers", "filters", "fc_layers", "fc_width",
		    "input_size",  "batch",   "channels",  "classes",
		    "kernel",	   "stride",  "dropout"};
		struct hp_buf b;
		hp_buf_init(&b, 1 << 20);
		ASSERT_EQ_INT(hp_buf_adds(&b, "{"), 0);
		for (int k = 0; k < 11; k++) {
			ASSERT_EQ_INT(hp_buf_adds(&b, k ? ",\"" : "\""), 0);
			ASSERT_EQ_INT(hp_buf_adds(&b, keys[k]), 0);
			ASSERT_EQ_INT(hp_buf_adds(&b, "\":["), 0);
			for (int i = 0; i < 64; i++)
				ASSERT_EQ_INT(
				    hp_buf_adds(&b, k == 10 ? (i ? ",0" : "0")
							    : (i ? ",1" : "1")),
				    0);
			ASSERT_EQ_INT(hp_buf_adds(&b, "]"), 0);
		}
		ASSERT_EQ_INT(hp_buf_adds(&b, "}"), 0);
		ASSERT_EQ_INT(hp_sweep_parse(b.data, b.len, NULL, &s, &err),
			      HP_ETOOBIG);
		ASSERT(strstr(err.msg, "combinations"));
		hp_buf_release(&b);
	}
}

/* Grouped, depthwise-separable and residual convs: the layers each
 * combination makes (counted by hand), their groups, the id's suffixes,
 * every spec analysing; bad values refused. */
HP_TEST(sweep_groups_separable_residual)
{
	struct hp_sweep s;
	struct hp_error err = {0};
	const char *g =
	    "{\"conv_layers\":[2],\"filters\":[16],\"fc_layers\":[1],"
	    "\"input_size\":[16],\"batch\":[4],\"groups\":[1,4],"
	    "\"separable\":[false,true],\"residual\":[false,true]}";
	static const char *const bad[] = {
	    "{\"filters\":[32],\"groups\":[3]}",
	    "{\"groups\":[0]}",
	    "{\"separable\":\"yes\"}",
	    "{\"residual\":[true,1]}",
	};

	ASSERT_EQ_INT(hp_sweep_parse(g, strlen(g), NULL, &s, &err), 0);
	ASSERT_EQ_INT(s.n, 8);
	for (int i = 0; i < s.n; i++) {
		const struct hp_sweep_config *c = &s.configs[i];
		const struct hp_spec *sp = &c->spec;
		const bool sep = c->vars.separable, res = c->vars.residual;
		const int64_t G = c->vars.groups;
		int conv = 0, dw = 0, grouped = 0, add = 0;
		for (int k = 0; k < sp->nlayers; k++) {
			const struct hp_spec_layer *L = &sp->layers[k];
			if (L->type == HP_LAYER_CONV) {
				conv++;
				dw += L->groups == 16;
				grouped += L->groups == 4;
				if (k == 0)
					ASSERT(L->groups <= 1);
				if (L->groups == 16)
					ASSERT_EQ_INT(L->kernel, 3);
			}
			if (L->type == HP_LAYER_ADD) {
				add++;
				ASSERT_EQ_INT(L->ninputs, 2);
				ASSERT(L->inputs[0] < L->inputs[1] &&
				       L->inputs[1] == k - 1);
			}
		}
		/* per conv layer i: a unit of 2 convs (depthwise and
		 * pointwise) when separable and past the image, else 1;
		 * residual adds a second unit past the image */
		{
			int unit = sep ? 2 : 1;
			int want = 1 + unit + (res ? 2 * unit : 0);
			ASSERT_EQ_INT(conv, want);
			ASSERT_EQ_INT(dw, sep ? (res ? 3 : 1) : 0);
			ASSERT_EQ_INT(grouped, G == 4 ? (res ? 3 : 1) : 0);
		}
		ASSERT_EQ_INT(add, res ? 2 : 0);
		ASSERT(!!strstr(c->id, "-g4") == (G == 4));
		ASSERT(!!strstr(c->id, "-sep") == sep);
		ASSERT(!!strstr(c->id, "-res") == res);
		config_analyses(&s, i);
	}
	hp_sweep_release(&s);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (hp_sweep_parse(bad[i], strlen(bad[i]), NULL, &s, &err) == 0)
			HP_FAIL("accepted %s", bad[i]);
	ASSERT_EQ_INT(hp_sweep_parse(bad[0], strlen(bad[0]), NULL, &s, &err),
		      HP_EINVAL);
	ASSERT(strstr(err.msg, "groups 3 do not divide filters 32"));
	{
		/* every variable at a long value: an id past its 95
		 * characters is refused, not cut (two nets could share a
		 * cut one) */
		const char *big =
		    "{\"conv_layers\":[64],\"filters\":[4096],"
		    "\"fc_layers\":[64],\"fc_width\":[1048576],"
		    "\"input_size\":[4096],\"batch\":[1048576],"
		    "\"kernel\":[15],\"stride\":[4],\"pool\":\"avg\","
		    "\"channels\":[4096],\"classes\":[1048576],"
		    "\"bn\":false,\"dropout\":[0.123456],"
		    "\"groups\":[4096],\"separable\":true,"
		    "\"residual\":true}";
		ASSERT_EQ_INT(hp_sweep_parse(big, strlen(big), NULL, &s, &err),
			      HP_EINVAL);
		ASSERT(strstr(err.msg, "longer than 95 characters"));
	}
}

/* A list of sweeps is their union in order, a configuration drawn twice
 * kept once; an empty list, a list of 17 and a list of non-objects are
 * refused, the error naming the part. */
HP_TEST(sweep_list_is_a_union)
{
	struct hp_sweep a, u;
	struct hp_error err = {0};
	const char *one = "{\"conv_layers\":[1,2],\"filters\":[8],"
			  "\"batch\":[4]}";
	const char *two = "{\"conv_layers\":[2,3],\"filters\":[8],"
			  "\"batch\":[4]}";
	char list[512], many[2048];
	size_t o = 0;

	ASSERT_EQ_INT(hp_sweep_parse(one, strlen(one), NULL, &a, &err), 0);
	ASSERT_EQ_INT(a.n, 2);
	snprintf(list, sizeof(list), "[%s, %s, %s]", one, two, one);
	ASSERT_EQ_INT(hp_sweep_parse(list, strlen(list), NULL, &u, &err), 0);
	ASSERT_EQ_INT(u.n, 3); /* c1, c2, c3: c2 and the repeat dropped */
	ASSERT_STR_EQ(u.configs[0].id, a.configs[0].id);
	ASSERT_STR_EQ(u.configs[1].id, a.configs[1].id);
	ASSERT(strstr(u.configs[2].id, "cnn-c3-"));
	hp_sweep_release(&a);
	hp_sweep_release(&u);
	ASSERT_EQ_INT(hp_sweep_parse("[]", 2, NULL, &u, &err), HP_EINVAL);
	ASSERT_EQ_INT(hp_sweep_parse("[1]", 3, NULL, &u, &err), HP_EINVAL);
	ASSERT(strstr(err.msg, "sweep [0]"));
	snprintf(list, sizeof(list), "[%s, {\"kernel\":[2]}]", one);
	ASSERT_EQ_INT(hp_sweep_parse(list, strlen(list), NULL, &u, &err),
		      HP_EINVAL);
	ASSERT(strstr(err.msg, "sweep [1]") && strstr(err.msg, "even"));
	ASSERT_EQ_INT(u.n, 0);
	o += (size_t)snprintf(many + o, sizeof(many) - o, "[");
	for (int i = 0; i < 17; i++)
		o += (size_t)snprintf(many + o, sizeof(many) - o, "%s%s",
				      i ? "," : "", one);
	snprintf(many + o, sizeof(many) - o, "]");
	ASSERT_EQ_INT(hp_sweep_parse(many, strlen(many), NULL, &u, &err),
		      HP_EINVAL);
	ASSERT(strstr(err.msg, "1 to 16"));
}

/* The named sweeps: sizes, every variable's values present, unique ids,
 * every spec analyses. */
HP_TEST(sweep_named_wide_and_calibrate)
{
	static const struct {
		const char *name;
		int n;
	} cases[] = {{"wide", 500}, {"calibrate", 30}, {"default", 360}};

	ASSERT(!hp_sweep_named_json("nope"));
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct hp_sweep s;
		struct hp_error err = {0};
		int ks[16] = {0}, st[5] = {0}, avg = 0, nobn = 0, ch1 = 0,
		    n100 = 0, grp = 0, sep = 0, res = 0;
		const char *name = cases[k].name;
		ASSERT(hp_sweep_named_json(name));
		ASSERT_EQ_INT(
		    hp_sweep_parse(name, strlen(name), NULL, &s, &err), 0);
		ASSERT_EQ_INT(s.n, cases[k].n);
		for (int i = 0; i < s.n; i++) {
			const struct hp_sweep_config *c = &s.configs[i];
			config_analyses(&s, i);
			ks[c->vars.kernel]++;
			st[c->vars.stride]++;
			avg += c->vars.pool_avg;
			nobn += !c->vars.bn;
			ch1 += c->vars.channels == 1;
			n100 += c->vars.classes == 100;
			grp += c->vars.groups > 1;
			sep += c->vars.separable;
			res += c->vars.residual;
		}
		if (strcmp(name, "default")) {
			/* every value of every new variable is there */
			ASSERT(ks[1] && ks[3] && ks[5] && ks[7]);
			ASSERT(st[1] && st[2]);
			ASSERT(avg && avg < s.n && nobn && nobn < s.n);
			ASSERT(ch1 && ch1 < s.n && n100 && n100 < s.n);
			/* wide: the first part's draw is the one it always
			 * was, the first 400 plain convs; then 100 with
			 * groups, separable and residual convs.  calibrate:
			 * plain convs (docs/profiler.md says why) */
			if (k == 0)
				ASSERT(grp >= 4 && sep >= 4 && res >= 4);
			else
				ASSERT(!grp && !sep && !res);
			for (int i = 0; i < cases[k].n - (k ? 0 : 100); i++) {
				const struct hp_sweep_vars *v =
				    &s.configs[i].vars;
				ASSERT(v->groups == 1 && !v->separable &&
				       !v->residual);
			}
		} else {
			ASSERT_EQ_INT(ks[3], 360);
			ASSERT(!avg && !nobn && !ch1 && !n100);
			ASSERT(!grp && !sep && !res);
		}
		hp_sweep_release(&s);
	}
}

#ifdef HP_HAVE_ENGINE
#include "hetpool/profile.h"

/* The yardstick alone (for hetpool calibrate): a median and a spread from
 * at least 7 steps; bad durations refused.  No speed is asserted. */
HP_TEST(profile_ref_time_measures_the_yardstick)
{
	struct hp_profile_opts o;
	struct hp_error err = {0};
	double ref = 0, cv = -1;

	hp_profile_opts_init(&o);
	o.threads = 1;
	ASSERT(o.reference && o.ref_share > 0 && o.ref_share < 0.1);
	ASSERT_EQ_INT(hp_profile_ref_time(&o, 0.05, &ref, &cv, &err), 0);
	ASSERT(ref > 0 && ref < 10 && isfinite(ref));
	ASSERT(cv >= 0 && isfinite(cv));
	ASSERT_EQ_INT(hp_profile_ref_time(&o, 0, &ref, NULL, &err), HP_EINVAL);
	ASSERT(strstr(err.msg, "seconds"));
	ASSERT_EQ_INT(hp_profile_ref_time(&o, NAN, &ref, NULL, &err),
		      HP_EINVAL);
}
#endif
