/*
 * fuzz_catalog.c - libFuzzer target for the device catalog (CSV): any
 * bytes must parse or fail cleanly with a PATH:LINE:COLUMN message; a
 * catalog that parses must resolve each of its own ids and aliases.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hetpool/device.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hp_error err = {0};
	struct hp_catalog *cat =
	    hp_catalog_parse((const char *)data, size, "fuzz.csv", &err);

	if (!cat) {
		if (err.code != HP_ENOMEM &&
		    strncmp(err.msg, "fuzz.csv:", 9) != 0) {
			fprintf(stderr, "error without a position: %s\n",
				err.msg);
			abort();
		}
		return 0;
	}
	for (int i = 0; i < cat->n; i++) {
		const struct hp_device_type *t = &cat->types[i];
		if (hp_catalog_find(cat, t->name) != t)
			abort();
		for (int a = 0; a < t->naliases; a++)
			if (hp_catalog_find(cat, t->aliases[a]) != t)
				abort();
	}
	hp_catalog_free(cat);
	return 0;
}
