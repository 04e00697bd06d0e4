/*
 * token.c - what the server needs of a token without keeping it: its
 * SHA-256 (the form the store and the server's cache hold) and a
 * comparison whose time does not depend on where two digests differ.
 */
#include <string.h>

#include "hetpool/api.h"
#include "util/sha256.h"

#include "util/banned.h"

void hp_api_token_digest(const char *tok, size_t len, char hex[65])
{
	hp__sha256_hex_of(tok, len, hex);
}

bool hp_api_ct_equal(const void *a, const void *b, size_t n)
{
	const volatile unsigned char *x = a, *y = b;
	unsigned char d = 0;

	for (size_t i = 0; i < n; i++)
		d |= x[i] ^ y[i];
	return d == 0;
}
