/*
 * sha256.h - internal: SHA-256 (FIPS 180-4), for the checksums of staged
 * data (lib/deploy) and the store's content hashes and token hashes
 * (lib/store).
 */
#ifndef HP_UTIL_SHA256_H
#define HP_UTIL_SHA256_H

#include <stddef.h>
#include <stdint.h>

struct hp__sha256 {
	uint32_t h[8];
	uint64_t len;
	unsigned char buf[64];
	size_t nbuf;
};
void hp__sha256_init(struct hp__sha256 *s);
void hp__sha256_add(struct hp__sha256 *s, const void *data, size_t n);
/* Finish: the digest as 64 lowercase hex digits and a NUL. */
void hp__sha256_hex(struct hp__sha256 *s, char hex[65]);
/* The SHA-256 of n bytes as hex, in one call. */
void hp__sha256_hex_of(const void *data, size_t n, char hex[65]);

#endif
