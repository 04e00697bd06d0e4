/*
 * fuzz_checkpoint.c - libFuzzer target for the checkpoint reader
 * (lib/train/ckpt.c): any bytes must parse or fail cleanly.  Inputs that
 * start with the magic and carry a right CRC-32 are the interesting ones,
 * so the target also tries each input with its CRC recomputed.  What
 * parses must parse the same in place (hp_ckpt_parse_in_place(), the
 * floats moved within the buffer), and fail alike.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "hetpool/train.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void try_one(const uint8_t *data, size_t size)
{
	struct hp_error err = {0}, err2 = {0};
	struct hp_ckpt c, d;
	int64_t total = 0;
	uint8_t *copy = malloc(size ? size : 1);
	int rc, rc2;

	if (!copy)
		return;
	memcpy(copy, data, size);
	rc = hp_ckpt_parse(data, size, &c, &err);
	rc2 = hp_ckpt_parse_in_place(copy, size, &d, &err2);
	if (rc != rc2 || (rc && strcmp(err.msg, err2.msg)))
		abort();
	if (rc) {
		if (c.n || c.meta || !err.msg[0] || d.n || d.meta || d.block)
			abort();
		hp_ckpt_release(&c);
		hp_ckpt_release(&d);
		free(copy);
		return;
	}
	if (d.block != copy || d.n != c.n)
		abort();
	for (int i = 0; i < c.n; i++)
		if (strcmp(c.t[i].name, d.t[i].name) ||
		    c.t[i].numel != d.t[i].numel ||
		    ((uintptr_t)d.t[i].data & 3) ||
		    memcmp(c.t[i].data, d.t[i].data, (size_t)c.t[i].numel * 4))
			abort();
	hp_ckpt_release(&d); /* frees copy */
	for (int i = 0; i < c.n; i++) {
		if (!c.t[i].name[0] || c.t[i].numel < 0)
			abort();
		total += c.t[i].numel;
	}
	if ((uint64_t)total * 4 > size)
		abort();
	hp_ckpt_release(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *fixed;

	try_one(data, size);
	if (size < 20 || size > (1u << 20))
		return 0;
	fixed = malloc(size);
	if (!fixed)
		return 0;
	memcpy(fixed, data, size);
	{
		uint32_t crc = (uint32_t)crc32(0, fixed, (uInt)(size - 4));
		memcpy(fixed + size - 4, &crc, 4);
	}
	try_one(fixed, size);
	free(fixed);
	return 0;
}
