/*
 * ckpt.c - the checkpoint file: named float tensors and a JSON object of
 * the run's state, with a CRC-32, written atomically (temporary file,
 * fsync, rename, fsync of the folder) and read back with every size
 * checked.  The format is in include/hetpool/train.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <zlib.h>

#include "hetpool/train.h"
#include "util/banned.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "checkpoints are written in the host's byte order: little-endian only"
#endif

#define MAGIC "HPCKPT1\n"
#define MAGIC_LEN 8
#define NAME_MAX_LEN 255

uint64_t hp_fnv1a64(const void *p, size_t n, uint64_t h)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

void hp_ckpt_init(struct hp_ckpt *c)
{
	memset(c, 0, sizeof(*c));
}

void hp_ckpt_release(struct hp_ckpt *c)
{
	if (!c)
		return;
	for (int i = 0; i < c->n; i++) {
		free(c->t[i].name);
		if (!c->block) /* else the tensors are in it */
			free(c->t[i].data);
	}
	free(c->t);
	free(c->block);
	json_decref(c->meta);
	memset(c, 0, sizeof(*c));
}

int hp_ckpt_add(struct hp_ckpt *c, const char *name, int64_t numel,
		const float *data)
{
	struct hp_ckpt_tensor *t;

	if (!name || numel < 0 || c->n >= HP_CKPT_MAX_TENSORS || c->block)
		return HP_EINVAL;
	if (c->n == c->alloc) {
		int na = c->alloc ? 2 * c->alloc : 16;
		struct hp_ckpt_tensor *v =
		    realloc(c->t, (size_t)na * sizeof(*v));
		if (!v)
			return HP_ENOMEM;
		c->t = v;
		c->alloc = na;
	}
	t = &c->t[c->n];
	t->name = hp_strdup(name);
	t->numel = numel;
	/* without data: declared, its floats filled at the write */
	t->data =
	    data ? malloc(numel ? (size_t)numel * sizeof(float) : 1) : NULL;
	if (!t->name || (data && !t->data)) {
		free(t->name);
		free(t->data);
		return HP_ENOMEM;
	}
	if (data && numel)
		memcpy(t->data, data, (size_t)numel * sizeof(float));
	c->n++;
	return 0;
}

const struct hp_ckpt_tensor *hp_ckpt_find(const struct hp_ckpt *c,
					  const char *name)
{
	for (int i = 0; i < c->n; i++)
		if (!strcmp(c->t[i].name, name))
			return &c->t[i];
	return NULL;
}

static char *header_json(const struct hp_ckpt *c)
{
	json_t *h = json_object(), *ts = json_array();
	char *s = NULL;
	bool ok = h && ts;

	ok = ok && !json_object_set_new(h, "format",
					json_string("hetpool-checkpoint"));
	ok = ok && !json_object_set_new(h, "version", json_integer(1));
	ok = ok &&
	     !json_object_set(h, "meta", c->meta ? c->meta : json_object());
	for (int i = 0; ok && i < c->n; i++)
		ok = !json_array_append_new(
		    ts, json_pack("{s:s, s:I}", "name", c->t[i].name, "numel",
				  (json_int_t)c->t[i].numel));
	ok = ok && !json_object_set(h, "tensors", ts);
	if (ok)
		s = json_dumps(h, JSON_COMPACT | JSON_ENSURE_ASCII);
	json_decref(ts);
	json_decref(h);
	return s;
}

/* Write n bytes into the temporary, updating the CRC. */
static int put(struct hp_atomic_file *af, const void *p, size_t n, uLong *crc,
	       struct hp_error *err)
{
	*crc = crc32_z(*crc, p, n);
	return hp_atomic_write(af, p, n, err);
}

int hp_ckpt_write(const char *path, const struct hp_ckpt *c,
		  struct hp_error *err)
{
	return hp_ckpt_write_from(path, c, NULL, NULL, err);
}

int hp_ckpt_write_from(const char *path, const struct hp_ckpt *c,
		       hp_ckpt_fill_fn fill, void *ctx, struct hp_error *err)
{
	struct hp_atomic_file af;
	char *hdr;
	float *buf = NULL;
	int64_t most = 0;
	uint64_t hlen;
	uint32_t crc32le;
	uLong crc = crc32(0, NULL, 0);
	int rc;

	/* one buffer, as large as the largest tensor to fill */
	for (int i = 0; i < c->n; i++)
		if (!c->t[i].data && c->t[i].numel > most)
			most = c->t[i].numel;
	if (most && !fill)
		return hp_error_set(err, HP_EINVAL,
				    "checkpoint tensor without data and "
				    "nothing to fill it");
	if (most && !(buf = malloc((size_t)most * sizeof(*buf))))
		return hp_error_set(err, HP_ENOMEM,
				    "out of memory (checkpoint buffer of "
				    "%lld floats)",
				    (long long)most);
	if (!(hdr = header_json(c))) {
		free(buf);
		return hp_error_set(err, HP_ENOMEM,
				    "out of memory (checkpoint header)");
	}
	if ((rc = hp_atomic_open(&af, path, 0644, err))) {
		free(hdr);
		free(buf);
		return rc;
	}
	hlen = strlen(hdr);
	rc = put(&af, MAGIC, MAGIC_LEN, &crc, err);
	if (!rc)
		rc = put(&af, &hlen, 8, &crc, err);
	if (!rc)
		rc = put(&af, hdr, hlen, &crc, err);
	for (int i = 0; !rc && i < c->n; i++) {
		const float *d = c->t[i].data;
		if (!d && c->t[i].numel) {
			if ((rc = fill(ctx, i, buf, err))) {
				hp_atomic_abort(&af);
				break;
			}
			d = buf;
		}
		if (c->t[i].numel)
			rc = put(&af, d, (size_t)c->t[i].numel * sizeof(float),
				 &crc, err);
	}
	crc32le = (uint32_t)crc;
	if (!rc)
		rc = put(&af, &crc32le, 4, &crc, err);
	free(hdr);
	free(buf);
	/* a failed put has removed the temporary already */
	return rc ? rc : hp_atomic_commit(&af, err);
}

static int bad(struct hp_error *err, const char *what)
{
	return hp_error_set(err, HP_EPARSE, "not a valid checkpoint: %s", what);
}

/* hp_ckpt_parse(); with own (buf, writable), the floats are moved to the
 * 16-byte boundary at or before where they start (over the header's end,
 * read by then) and the tensors point there: out owns buf */
static int parse(const void *buf, size_t len, struct hp_ckpt *out,
		 unsigned char *own, struct hp_error *err)
{
	const unsigned char *p = buf;
	uint64_t hlen;
	uint32_t want;
	json_t *h = NULL, *ts, *fmt, *ver, *meta;
	json_error_t je;
	const unsigned char *data;
	unsigned char *to = NULL;
	uint64_t data_bytes, need = 0;
	size_t nt;
	int rc = 0;

	hp_ckpt_init(out);
	if (len < MAGIC_LEN + 8 + 4 || memcmp(p, MAGIC, MAGIC_LEN))
		return bad(err, "no HPCKPT1 magic");
	memcpy(&hlen, p + MAGIC_LEN, 8);
	if (hlen > HP_CKPT_MAX_HEADER || hlen > len - (MAGIC_LEN + 8 + 4))
		return bad(err, "header length out of range");
	memcpy(&want, p + len - 4, 4);
	if ((uint32_t)crc32_z(crc32(0, NULL, 0), p, len - 4) != want)
		return bad(err, "checksum mismatch (a damaged or cut file)");
	h = json_loadb((const char *)p + MAGIC_LEN + 8, (size_t)hlen,
		       JSON_REJECT_DUPLICATES, &je);
	if (!h || !json_is_object(h)) {
		rc = bad(err, "header is not a JSON object");
		goto done;
	}
	fmt = json_object_get(h, "format");
	ver = json_object_get(h, "version");
	meta = json_object_get(h, "meta");
	ts = json_object_get(h, "tensors");
	if (!json_is_string(fmt) ||
	    strcmp(json_string_value(fmt), "hetpool-checkpoint")) {
		rc = bad(err, "format is not \"hetpool-checkpoint\"");
		goto done;
	}
	if (!json_is_integer(ver) || json_integer_value(ver) != 1) {
		rc = hp_error_set(err, HP_EUNSUPP,
				  "checkpoint version is not 1 (written by "
				  "another hetpool?)");
		goto done;
	}
	if (!json_is_object(meta) || !json_is_array(ts)) {
		rc = bad(err, "header lacks \"meta\" or \"tensors\"");
		goto done;
	}
	nt = json_array_size(ts);
	if (nt > HP_CKPT_MAX_TENSORS) {
		rc = bad(err, "too many tensors");
		goto done;
	}
	data = p + MAGIC_LEN + 8 + hlen;
	data_bytes = len - 4 - (MAGIC_LEN + 8 + hlen);
	for (size_t i = 0; i < nt; i++) {
		json_t *t = json_array_get(ts, i);
		json_t *name = json_object_get(t, "name");
		json_t *numel = json_object_get(t, "numel");
		const char *nm;
		json_int_t n;
		if (!json_is_string(name) || !json_is_integer(numel)) {
			rc = bad(err, "a tensor lacks \"name\" or \"numel\"");
			goto done;
		}
		nm = json_string_value(name);
		n = json_integer_value(numel);
		if (!*nm || strlen(nm) > NAME_MAX_LEN ||
		    strlen(nm) != json_string_length(name) ||
		    hp_str_has_control(nm)) {
			rc = bad(err, "a tensor name is empty, too long or "
				      "holds control characters");
			goto done;
		}
		if (n < 0 || (uint64_t)n > data_bytes / 4 ||
		    need + (uint64_t)n * 4 > data_bytes) {
			rc = bad(err, "tensor sizes exceed the data");
			goto done;
		}
		need += (uint64_t)n * 4;
	}
	if (need != data_bytes) {
		rc = bad(err, "tensor sizes disagree with the data");
		goto done;
	}
	if (own) { /* the floats where they will stay, aligned */
		to = own + ((size_t)(data - p) & ~(size_t)15);
		memmove(to, data, (size_t)data_bytes);
	}
	/* in place the tensors are declared, and pointed into own once all
	 * are (a failure leaves nothing of own in out) */
	for (size_t i = 0; i < nt; i++) {
		json_t *t = json_array_get(ts, i);
		int64_t n = json_integer_value(json_object_get(t, "numel"));
		rc = hp_ckpt_add(
		    out, json_string_value(json_object_get(t, "name")), n,
		    own ? NULL : (const float *)(const void *)data);
		if (rc) {
			rc = hp_error_set(err, rc, "out of memory");
			goto done;
		}
		data += n * 4;
	}
	for (int i = 0; own && i < out->n; i++) {
		out->t[i].data = (float *)(void *)to;
		to += out->t[i].numel * 4;
	}
	out->block = own;
	out->meta = json_incref(meta);
done:
	json_decref(h);
	return rc;
}

int hp_ckpt_parse(const void *buf, size_t len, struct hp_ckpt *out,
		  struct hp_error *err)
{
	return parse(buf, len, out, NULL, err);
}

int hp_ckpt_parse_in_place(void *buf, size_t len, struct hp_ckpt *out,
			   struct hp_error *err)
{
	return parse(buf, len, out, buf, err);
}

int hp_ckpt_read(const char *path, struct hp_ckpt *out, struct hp_error *err)
{
	char *buf = NULL;
	size_t len = 0;
	int rc;

	hp_ckpt_init(out);
	rc = hp_read_file(path, (size_t)1 << 40, &buf, &len, err);
	if (rc)
		return rc;
	rc = hp_ckpt_parse_in_place(buf, len, out, err);
	if (rc)
		free(buf);
	return rc;
}
