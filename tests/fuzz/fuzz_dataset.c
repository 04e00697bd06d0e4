/*
 * fuzz_dataset.c - libFuzzer target for profile datasets (CSV): any bytes
 * must parse or fail cleanly with a message; every row handed out has
 * NUL-terminated strings; a torn tail is reported within the input and
 * only when the input does not end in a newline.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hetpool/perf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int on_row(const struct hp_profile_row *r, int line, void *ud,
		  struct hp_error *err)
{
	(void)err;
	if (line < 2)
		abort();
	size_t *n = ud;

	if (!memchr(r->config_id, 0, sizeof(r->config_id)) ||
	    !memchr(r->spec_json, 0, sizeof(r->spec_json)) ||
	    !memchr(r->device, 0, sizeof(r->device)))
		abort();
	(*n)++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hp_error err = {0};
	int64_t torn = -1;
	size_t rows = 0;
	int rc;

	rc = hp_dataset_parse((const char *)data, size, on_row, &rows, &torn,
			      &err);
	if (rc < 0 && !err.msg[0])
		abort();
	if (rc == 0 && (torn < 0 || (size_t)torn > size))
		abort();
	if (rc == 0 && torn > 0 && data[size - 1] == '\n')
		abort();
	return 0;
}
