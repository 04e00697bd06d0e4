/*
 * fuzz_host_file.c - libFuzzer target for the host file (JSON in the
 * state folder): any bytes must parse or fail cleanly with a message that
 * names the file; a file that parses must hold figures in their ranges,
 * strings without control characters, and write back to JSON that parses
 * to the same figures.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hetpool/device.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_str(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20) {
			fprintf(stderr, "control character kept\n");
			abort();
		}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hp_error err = {0};
	struct hp_host_file f, g;
	char *text;

	if (hp_host_file_parse((const char *)data, size, "fuzz.json", &f,
			       &err)) {
		if (err.code != HP_ENOMEM && err.code != HP_ETOOBIG &&
		    strncmp(err.msg, "fuzz.json", 9) != 0) {
			fprintf(stderr, "error without the file: %s\n",
				err.msg);
			abort();
		}
		return 0;
	}
	check_str(f.key);
	check_str(f.host.model);
	check_str(f.host.isa);
	check_str(f.peaks.when);
	check_str(f.calib.when);
	if (f.host.threads < 1 || (f.calib.has && f.calib.n < 1) ||
	    (f.peaks.when[0] &&
	     !(f.peaks.triad_bw > 0 && f.peaks.fp32_flops > 0))) {
		fprintf(stderr, "figure out of range kept\n");
		abort();
	}
	for (int k = 0; k < HP_HOST_CALIB_NCLASS; k++)
		if (f.calib.has && !(fabs(f.calib.log_scale[k]) <= 5)) {
			fprintf(stderr, "calibration factor out of range\n");
			abort();
		}
	text = hp_host_file_json(&f);
	if (!text)
		return 0;
	if (hp_host_file_parse(text, strlen(text), "back.json", &g, &err)) {
		fprintf(stderr, "written file does not parse: %s\n", err.msg);
		abort();
	}
	if (g.host.threads != f.host.threads || g.calib.has != f.calib.has ||
	    strcmp(g.host.model, f.host.model) || g.calib.n != f.calib.n) {
		fprintf(stderr, "round trip changed the file\n");
		abort();
	}
	free(text);
	return 0;
}
