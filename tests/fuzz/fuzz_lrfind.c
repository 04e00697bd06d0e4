/*
 * fuzz_lrfind.c - libFuzzer target for metrics.jsonl, the trainer's
 * per-step lines that `hetpool lr-find` reads: any bytes must parse or
 * fail cleanly with a message naming the file and line; read as a file
 * still being written (a last line without its newline left for later),
 * the bytes consumed end at a newline.  A series that parses is analysed:
 * the analysis succeeds or says why; when it succeeds the interval lies
 * within the rates tried and holds the suggestion; the JSON parses back
 * and the SVG is written without a NaN in it.
 */
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hetpool/lrfind.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_analysis(const struct hp_lrfind_series *s)
{
	struct hp_lrfind_result r;
	struct hp_error err = {0};
	struct hp_lrfind_run run = {.title = "fuzz", .steps_requested = 50};
	struct hp_buf b;
	int rc = hp_lrfind_analyse(s, NULL, &r, &err);

	if (rc) {
		if (rc != HP_EINVAL || !err.msg[0]) {
			fprintf(stderr, "analysis failed with %d '%s'\n", rc,
				err.msg);
			abort();
		}
	} else {
		/* The bounds come back through log10 and pow: a rounding's
		 * width past the rates tried is allowed. */
		double first = s->pts[0].lr * (1 - 1e-9),
		       last = s->pts[s->n - 1].lr * (1 + 1e-9);
		json_t *j;
		char *text;

		if (!(first <= r.low.lr && r.low.lr <= r.suggested.lr &&
		      r.suggested.lr <= r.high.lr && r.high.lr <= last) ||
		    !r.suggested.how[0] || r.poly.degree < 1) {
			fprintf(stderr,
				"interval %g..%g, suggested %g, rates "
				"%g..%g\n",
				r.low.lr, r.high.lr, r.suggested.lr, first,
				last);
			abort();
		}
		text = hp_lrfind_result_json(s, &r, &run);
		if (!text || !(j = json_loads(text, 0, NULL)))
			abort();
		json_decref(j);
		free(text);
	}
	hp_buf_init(&b, 16 << 20);
	if (hp_lrfind_svg(s, &r, &run, &b, &err) ||
	    strstr(hp_buf_str(&b), "nan") || strstr(hp_buf_str(&b), "inf"))
		abort();
	hp_buf_release(&b);
	hp_lrfind_result_release(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hp_lrfind_series s;
	struct hp_error err = {0};
	size_t used = 0;
	int rc;

	hp_lrfind_series_init(&s);
	rc = hp_lrfind_parse_metrics(&s, (const char *)data, size, "fuzz.jsonl",
				     1, HP_LRFIND_PARSE_PARTIAL, &used, &err);
	if (rc == 0 && (used > size || (used > 0 && data[used - 1] != '\n')))
		abort();
	hp_lrfind_series_release(&s);

	hp_lrfind_series_init(&s);
	rc = hp_lrfind_parse_metrics(&s, (const char *)data, size, "fuzz.jsonl",
				     1, 0, &used, &err);
	if (rc) {
		if (rc != HP_ENOMEM &&
		    strncmp(err.msg, "fuzz.jsonl line ", 16) != 0) {
			fprintf(stderr, "error without the line: %s\n",
				err.msg);
			abort();
		}
	} else if (used != size) {
		abort();
	} else if (s.n >= 1 && s.n <= 4000) {
		check_analysis(&s);
	}
	hp_lrfind_series_release(&s);
	return 0;
}
