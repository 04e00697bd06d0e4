/*
 * idx.c - IDX data files (MNIST's format), gzipped or not, read into
 * memory with every size checked against the bytes present.
 */
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "hetpool/train.h"
#include "util/banned.h"

/* Largest dimension accepted (the element count is checked as well). */
#define IDX_MAX_DIM ((int64_t)1 << 31)

int hp_gunzip(const void *in, size_t len, size_t max_out, void **out,
	      size_t *out_len, struct hp_error *err)
{
	z_stream z;
	unsigned char *buf = NULL;
	size_t alloc = 0, have = 0;
	const unsigned char *p = in;
	int zr, rc = 0;

	*out = NULL;
	*out_len = 0;
	memset(&z, 0, sizeof(z));
	/* 16 + MAX_WBITS: gzip headers only */
	if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
		return hp_error_set(err, HP_ENOMEM, "out of memory (zlib)");
	z.next_in = (Bytef *)(uintptr_t)p;
	for (;;) {
		size_t left = len - (size_t)(z.next_in - p);
		if (have == alloc) {
			size_t na = alloc ? alloc * 2 : 1 << 16;
			unsigned char *nb;
			if (alloc >= max_out + 1) {
				rc = hp_error_set(err, HP_ETOOBIG,
						  "gzip data inflates to more "
						  "than %zu bytes",
						  max_out);
				goto done;
			}
			if (na > max_out + 1)
				na = max_out + 1;
			nb = realloc(buf, na);
			if (!nb) {
				rc = hp_error_set(err, HP_ENOMEM,
						  "out of memory");
				goto done;
			}
			buf = nb;
			alloc = na;
		}
		z.avail_in = left > UINT32_MAX ? UINT32_MAX : (uInt)left;
		z.next_out = buf + have;
		z.avail_out =
		    (uInt)((alloc - have) > UINT32_MAX ? UINT32_MAX
						       : alloc - have);
		{
			uInt before = z.avail_out;
			zr = inflate(&z, Z_NO_FLUSH);
			have += before - z.avail_out;
		}
		if (have > max_out) {
			rc = hp_error_set(err, HP_ETOOBIG,
					  "gzip data inflates to more than "
					  "%zu bytes",
					  max_out);
			goto done;
		}
		if (zr == Z_STREAM_END) {
			/* another member may follow (concatenated gzip) */
			if ((size_t)(z.next_in - p) < len) {
				if (inflateReset(&z) != Z_OK) {
					rc = hp_error_set(err, HP_EPARSE,
							  "bad gzip data");
					goto done;
				}
				continue;
			}
			break;
		}
		if (zr == Z_BUF_ERROR && (size_t)(z.next_in - p) >= len) {
			rc = hp_error_set(err, HP_EPARSE,
					  "gzip data ends early (truncated)");
			goto done;
		}
		if (zr != Z_OK && zr != Z_BUF_ERROR) {
			rc = hp_error_set(err, HP_EPARSE, "bad gzip data: %s",
					  z.msg ? z.msg : "inflate failed");
			goto done;
		}
	}
	*out = buf;
	*out_len = have;
	buf = NULL;
done:
	inflateEnd(&z);
	free(buf);
	return rc;
}

static int elem_bytes(int type)
{
	switch (type) {
	case 0x08:
	case 0x09:
		return 1;
	case 0x0B:
		return 2;
	case 0x0C:
	case 0x0D:
		return 4;
	case 0x0E:
		return 8;
	default:
		return 0;
	}
}

static int parse_raw(const unsigned char *p, size_t len, struct hp_idx *out,
		     struct hp_error *err)
{
	size_t head;
	int64_t count = 1, bytes;

	if (len < 4)
		return hp_error_set(err, HP_EPARSE,
				    "not an IDX file: %zu bytes, shorter than "
				    "its 4-byte magic",
				    len);
	if (p[0] != 0 || p[1] != 0)
		return hp_error_set(err, HP_EPARSE,
				    "not an IDX file: the magic starts with "
				    "0x%02x%02x, not 0x0000",
				    p[0], p[1]);
	out->type = p[2];
	out->elem_bytes = elem_bytes(p[2]);
	if (!out->elem_bytes)
		return hp_error_set(err, HP_EPARSE,
				    "IDX element type 0x%02x unknown", p[2]);
	out->rank = p[3];
	if (out->rank < 1 || out->rank > HP_IDX_MAX_RANK)
		return hp_error_set(err, HP_EPARSE,
				    "IDX rank %d out of range 1..%d", p[3],
				    HP_IDX_MAX_RANK);
	head = 4 + 4 * (size_t)out->rank;
	if (len < head)
		return hp_error_set(err, HP_EPARSE,
				    "IDX file ends inside its dimensions");
	for (int i = 0; i < out->rank; i++) {
		const unsigned char *d = p + 4 + 4 * i;
		int64_t v = ((int64_t)d[0] << 24) | ((int64_t)d[1] << 16) |
			    ((int64_t)d[2] << 8) | d[3];
		if (v < 1 || v > IDX_MAX_DIM)
			return hp_error_set(
			    err, HP_EPARSE,
			    "IDX dimension %d is %lld (must be "
			    "positive; the magic 0x0000%02x%02x "
			    "says %d dimensions)",
			    i, (long long)v, p[2], p[3], out->rank);
		out->dims[i] = v;
		if (!hp_mul_i64(count, v, &count) ||
		    count > (int64_t)HP_IDX_MAX_BYTES)
			return hp_error_set(err, HP_ETOOBIG,
					    "IDX data larger than %zu bytes",
					    HP_IDX_MAX_BYTES);
	}
	bytes = count * out->elem_bytes;
	if (bytes > (int64_t)HP_IDX_MAX_BYTES)
		return hp_error_set(err, HP_ETOOBIG,
				    "IDX data larger than %zu bytes",
				    HP_IDX_MAX_BYTES);
	if ((uint64_t)(len - head) != (uint64_t)bytes)
		return hp_error_set(err, HP_EPARSE,
				    "IDX dimensions say %lld bytes of data, "
				    "the file has %zu%s",
				    (long long)bytes, len - head,
				    (uint64_t)(len - head) < (uint64_t)bytes
					? " (truncated)"
					: "");
	out->count = count;
	out->data = malloc((size_t)bytes ? (size_t)bytes : 1);
	if (!out->data)
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	memcpy(out->data, p + head, (size_t)bytes);
	return 0;
}

int hp_idx_parse(const void *buf, size_t len, struct hp_idx *out,
		 struct hp_error *err)
{
	const unsigned char *p = buf;
	void *plain = NULL;
	size_t plen = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!buf && len)
		return hp_error_set(err, HP_EINVAL, "no data");
	if (len >= 2 && p[0] == 0x1f && p[1] == 0x8b) {
		/* the header and dimensions fit in 4 + 4 * rank bytes */
		rc = hp_gunzip(buf, len, HP_IDX_MAX_BYTES + 4 + 4 * 255, &plain,
			       &plen, err);
		if (rc)
			return rc;
		rc = parse_raw(plain, plen, out, err);
		free(plain);
	} else {
		rc = parse_raw(p, len, out, err);
	}
	if (rc)
		hp_idx_release(out);
	return rc;
}

int hp_idx_load(const char *path, struct hp_idx *out, struct hp_error *err)
{
	char *buf = NULL;
	size_t len = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = hp_read_file(path, HP_IDX_MAX_BYTES, &buf, &len, err);
	if (rc)
		return rc;
	rc = hp_idx_parse(buf, len, out, err);
	free(buf);
	return rc;
}

void hp_idx_release(struct hp_idx *x)
{
	if (!x)
		return;
	free(x->data);
	memset(x, 0, sizeof(*x));
}
