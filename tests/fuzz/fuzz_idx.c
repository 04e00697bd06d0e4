/*
 * fuzz_idx.c - libFuzzer target for the IDX reader (lib/train/idx.c): any
 * bytes, gzipped or not, must parse or fail cleanly, and what parses must
 * hold exactly the elements its dimensions promise; a file of unsigned
 * bytes that parses as images and labels must make a dataset or fail
 * cleanly too.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hetpool/train.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hp_error err = {0};
	struct hp_idx x;
	int64_t n = 1;

	if (hp_idx_parse(data, size, &x, &err) != 0) {
		if (x.data || !err.msg[0] || strchr(err.msg, '\n'))
			abort(); /* a failure leaves nothing and says why */
		return 0;
	}
	for (int i = 0; i < x.rank; i++)
		n *= x.dims[i];
	if (n != x.count || !x.data || x.elem_bytes < 1)
		abort();
	/* touch every byte: ASan catches a short buffer */
	{
		unsigned s = 0;
		for (int64_t i = 0; i < x.count * x.elem_bytes; i++)
			s += ((const unsigned char *)x.data)[i];
		if (s == 0xffffffffu && x.count == 1)
			abort(); /* one byte cannot sum to that */
	}
	if (x.type == 0x08 && x.rank == 1) {
		/* the file as labels of images made to match */
		struct hp_idx im = {.type = 0x08,
				    .rank = 3,
				    .dims = {x.dims[0], 2, 2},
				    .count = x.dims[0] * 4,
				    .elem_bytes = 1};
		struct hp_dataset d;
		if (x.dims[0] <= 4096 &&
		    (im.data = calloc((size_t)im.count, 1))) {
			if (hp_dataset_from_idx(&im, &x, &d, &err) == 0) {
				if (d.n != x.dims[0] || d.classes < 1 ||
				    d.classes > 256)
					abort();
				hp_dataset_release(&d);
			}
			free(im.data);
		}
	}
	hp_idx_release(&x);
	return 0;
}
