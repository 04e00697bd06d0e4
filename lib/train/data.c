/*
 * data.c - classification datasets in memory: from IDX files (a folder in
 * the Fashion-MNIST layout) or synthetic, and batches gathered from them
 * as the engine's normalized floats.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hetpool/train.h"
#include "util/banned.h"

/* splitmix64: the stream the shuffle and the synthetic data draw from. */
static uint64_t mix64(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

int hp_dataset_from_idx(const struct hp_idx *images,
			const struct hp_idx *labels, struct hp_dataset *out,
			struct hp_error *err)
{
	int64_t n, px, total;

	memset(out, 0, sizeof(*out));
	if (images->type != 0x08 || labels->type != 0x08)
		return hp_error_set(err, HP_EPARSE,
				    "images and labels must be unsigned bytes "
				    "(IDX type 0x08), not 0x%02x and 0x%02x",
				    images->type, labels->type);
	if (images->rank != 3 && images->rank != 4)
		return hp_error_set(err, HP_EPARSE,
				    "images have rank %d, not 3 (N x H x W) "
				    "or 4 (N x C x H x W)",
				    images->rank);
	if (labels->rank != 1)
		return hp_error_set(err, HP_EPARSE,
				    "labels have rank %d, not 1", labels->rank);
	n = images->dims[0];
	if (labels->dims[0] != n)
		return hp_error_set(err, HP_EPARSE,
				    "%lld images but %lld labels", (long long)n,
				    (long long)labels->dims[0]);
	out->shape[0] = images->rank == 4 ? images->dims[1] : 1;
	out->shape[1] = images->dims[images->rank - 2];
	out->shape[2] = images->dims[images->rank - 1];
	px = out->shape[0] * out->shape[1] * out->shape[2];
	if (!hp_mul_i64(n, px, &total) ||
	    (uint64_t)total > HP_DATASET_MAX_BYTES)
		return hp_error_set(err, HP_ETOOBIG,
				    "dataset larger than %zu bytes",
				    HP_DATASET_MAX_BYTES);
	out->x = malloc((size_t)total);
	out->y = malloc((size_t)(n ? n : 1) * sizeof(*out->y));
	if (!out->x || !out->y) {
		hp_dataset_release(out);
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	}
	memcpy(out->x, images->data, (size_t)total);
	out->n = n;
	for (int64_t i = 0; i < n; i++) {
		out->y[i] = ((const uint8_t *)labels->data)[i];
		if (out->y[i] + 1 > out->classes)
			out->classes = out->y[i] + 1;
	}
	out->mean = 0;
	out->std = 1;
	return 0;
}

/* dir/name or dir/name.gz, whichever exists (the plain one first); one
 * that cannot be read is found, and its loading says why. */
static int find_file(const char *dir, const char *name, char *buf, size_t n)
{
	static const char *const ext[2] = {"", ".gz"};

	for (int i = 0; i < 2; i++) {
		if ((size_t)snprintf(buf, n, "%s/%s%s", dir, name, ext[i]) >= n)
			return -1;
		if (access(buf, F_OK) == 0)
			return 0;
	}
	return -1;
}

int hp_dataset_load_dir(const char *dir, const char *prefix,
			struct hp_dataset *out, struct hp_error *err)
{
	struct hp_idx im = {0}, lab = {0};
	char ipath[4096], lpath[4096], iname[64], lname[64];
	int rc;

	memset(out, 0, sizeof(*out));
	snprintf(iname, sizeof(iname), "%s-images-idx3-ubyte", prefix);
	snprintf(lname, sizeof(lname), "%s-labels-idx1-ubyte", prefix);
	if (find_file(dir, iname, ipath, sizeof(ipath)))
		return hp_error_set(err, HP_ENOENT, "no %s or %s.gz in '%s'",
				    iname, iname, dir);
	if (find_file(dir, lname, lpath, sizeof(lpath)))
		return hp_error_set(err, HP_ENOENT, "no %s or %s.gz in '%s'",
				    lname, lname, dir);
	rc = hp_idx_load(ipath, &im, err);
	if (rc) {
		hp_error_prefix(err, "%s", strrchr(ipath, '/') + 1);
		return rc;
	}
	rc = hp_idx_load(lpath, &lab, err);
	if (rc) {
		hp_error_prefix(err, "%s", strrchr(lpath, '/') + 1);
		goto done;
	}
	rc = hp_dataset_from_idx(&im, &lab, out, err);
	if (rc)
		hp_error_prefix(err, "%s", prefix);
done:
	hp_idx_release(&im);
	hp_idx_release(&lab);
	return rc;
}

int64_t hp_train_data_samples(const char *data)
{
	struct hp_error err = {0};
	struct hp_idx x = {0};
	char path[4096];
	int64_t n;

	if (!strcmp(data, "fashion-mnist"))
		return HP_FASHION_MNIST_SAMPLES;
	if (!strcmp(data, "synthetic"))
		return HP_SYNTHETIC_SAMPLES;
	if (find_file(data, "train-labels-idx1-ubyte", path, sizeof(path)) ||
	    hp_idx_load(path, &x, &err))
		return 0;
	n = x.rank >= 1 ? x.dims[0] : 0;
	hp_idx_release(&x);
	return n;
}

/* Pixel k of the classes' patterns, laid end to end: dark or bright. */
static uint8_t class_pixel(uint64_t seed, uint64_t k)
{
	return (mix64(seed ^ 0x5107ull ^ mix64(k)) >> 63) ? 170 : 86;
}

int hp_dataset_synthetic(int64_t n, const int64_t shape[3], int64_t classes,
			 uint64_t seed, int split, struct hp_dataset *out,
			 struct hp_error *err)
{
	int64_t px, total;
	uint8_t *proto = NULL;
	bool store;

	memset(out, 0, sizeof(*out));
	if (n < 1 || shape[0] < 1 || shape[1] < 1 || shape[2] < 1)
		return hp_error_set(err, HP_EINVAL,
				    "synthetic data: sizes must be positive");
	if (classes < 1 || classes > HP_DATASET_MAX_CLASSES)
		return hp_error_set(err, HP_EINVAL,
				    "synthetic data: %lld classes: give 1 to "
				    "%d",
				    (long long)classes, HP_DATASET_MAX_CLASSES);
	if (!hp_mul_i64(shape[0], shape[1], &px) ||
	    !hp_mul_i64(px, shape[2], &px) || !hp_mul_i64(n, px, &total) ||
	    (uint64_t)total > HP_DATASET_MAX_BYTES)
		return hp_error_set(
		    err, HP_ETOOBIG,
		    "synthetic data: %lld samples of %lldx%lldx%lld are more "
		    "than the %.0f GiB a data set holds",
		    (long long)n, (long long)shape[0], (long long)shape[1],
		    (long long)shape[2],
		    (double)HP_DATASET_MAX_BYTES / (1024.0 * 1024 * 1024));
	store = classes * px <= ((int64_t)1 << 26);
	out->x = malloc((size_t)total);
	out->y = malloc((size_t)n * sizeof(*out->y));
	/* each class: a random pattern of dark and bright pixels, stored
	 * while the patterns take at most 64 MB, else computed per pixel
	 * (1,000 classes at 3x224x224 would take 150 MB) */
	if (store) {
		proto = malloc((size_t)(classes * px));
		for (int64_t k = 0; proto && k < classes * px; k++)
			proto[k] = class_pixel(seed, (uint64_t)k);
	}
	if (!out->x || !out->y || (store && !proto)) {
		free(proto);
		hp_dataset_release(out);
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	}
	for (int64_t i = 0; i < n; i++) {
		uint64_t s =
		    mix64(seed ^ mix64(((uint64_t)split << 48) ^ (uint64_t)i));
		int64_t c = (int64_t)((s >> 11) % (uint64_t)classes);
		uint8_t *xi = out->x + i * px;
		out->y[i] = (uint16_t)c;
		for (int64_t j = 0; j < px; j++) {
			uint64_t k = (uint64_t)(c * px + j);
			int pk = proto ? proto[k] : class_pixel(seed, k);
			/* noise: a sum of two uniforms in -64..64 */
			uint64_t r = mix64(s + (uint64_t)j);
			int v = pk + (int)(r & 63) + (int)((r >> 8) & 63) - 63;
			xi[j] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
		}
	}
	free(proto);
	out->n = n;
	memcpy(out->shape, shape, sizeof(out->shape));
	out->classes = classes;
	out->mean = 0;
	out->std = 1;
	return 0;
}

void hp_dataset_release(struct hp_dataset *d)
{
	if (!d)
		return;
	free(d->x);
	free(d->y);
	memset(d, 0, sizeof(*d));
}

void hp_dataset_stats(struct hp_dataset *d)
{
	int64_t total = d->n * d->shape[0] * d->shape[1] * d->shape[2];
	double s = 0, s2 = 0, var;
	uint64_t hist[256] = {0};

	for (int64_t i = 0; i < total; i++)
		hist[d->x[i]]++;
	for (int v = 0; v < 256; v++) {
		double f = v / 255.0;
		s += (double)hist[v] * f;
		s2 += (double)hist[v] * f * f;
	}
	d->mean = total ? s / (double)total : 0;
	var = total ? s2 / (double)total - d->mean * d->mean : 0;
	d->std = var > 1e-12 ? sqrt(var) : 1;
}

void hp_dataset_gather(const struct hp_dataset *d, const int64_t *idx,
		       int64_t n, float *x, int32_t *labels)
{
	int64_t px = d->shape[0] * d->shape[1] * d->shape[2];
	float lut[256];

	for (int v = 0; v < 256; v++)
		lut[v] = (float)((v / 255.0 - d->mean) / d->std);
	for (int64_t i = 0; i < n; i++) {
		const uint8_t *src = d->x + idx[i] * px;
		float *dst = x + i * px;
		for (int64_t j = 0; j < px; j++)
			dst[j] = lut[src[j]];
		labels[i] = d->y[idx[i]];
	}
}

void hp_shuffle(int64_t n, uint64_t seed, int64_t epoch, int64_t *perm)
{
	uint64_t st = mix64(seed ^ mix64(0x53485546ull ^ (uint64_t)epoch));

	for (int64_t i = 0; i < n; i++)
		perm[i] = i;
	for (int64_t i = n - 1; i > 0; i--) {
		/* an unbiased draw in 0..i (Lemire's method with rejection) */
		uint64_t bound = (uint64_t)i + 1, r, lo;
		unsigned __int128 m;
		do {
			st += 0x9e3779b97f4a7c15ull;
			r = mix64(st);
			m = (unsigned __int128)r * bound;
			lo = (uint64_t)m;
		} while (lo < (0 - bound) % bound);
		{
			int64_t j = (int64_t)(m >> 64), t = perm[i];
			perm[i] = perm[j];
			perm[j] = t;
		}
	}
}
