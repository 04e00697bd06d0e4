/*
 * loader.c - what one CPU core of this host spends preparing a training
 * sample the way an ImageNet-style input pipeline does: decode a JPEG
 * (libjpeg-turbo), take a random-resized crop to the model's input
 * (bilinear), flip it half the time, and convert it to normalized float
 * CHW.  The two parts are timed apart, per pixel, so a sample of any source
 * and input size can be costed: decode per source pixel, the rest per
 * input pixel.  The GPU estimate uses them to cap a step at what the
 * host's cores can feed (docs/estimator.md, "The input pipeline").
 */
#include <math.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* after stdio.h: jpeglib.h uses FILE and size_t */
#include <jpeglib.h>

#include "hetpool/device.h"
#include "hetpool/engine.h"
#include "util/banned.h"

static double thread_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A 64-bit mix (splitmix64's finalizer): the image's noise. */
static uint64_t mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* Lattice noise in [0, 1) at (x, y) with cells of `cell` pixels,
 * bilinear between the lattice's values. */
static double lattice(int x, int y, int cell, uint64_t seed)
{
	int cx = x / cell, cy = y / cell;
	double fx = (double)(x % cell) / cell, fy = (double)(y % cell) / cell;
	double v[4];

	for (int k = 0; k < 4; k++) {
		uint64_t h = mix(seed ^ ((uint64_t)(cx + (k & 1)) << 32) ^
				 (uint64_t)(cy + (k >> 1)));
		v[k] = (double)(h >> 11) / 9007199254740992.0;
	}
	return (v[0] * (1 - fx) + v[1] * fx) * (1 - fy) +
	       (v[2] * (1 - fx) + v[3] * fx) * fy;
}

/*
 * A photograph's stand-in: colour gradients, structure at 64, 16 and 4
 * pixels and pixel noise.  At quality 90 it compresses to about 4.8 bits
 * a pixel, as ImageNet's training JPEGs do on average (about 110 KB for
 * about 180,000 pixels); the decode's cost follows the entropy.
 */
static void synth_image(unsigned char *rgb, int w, int h)
{
	for (int y = 0; y < h; y++)
		for (int x = 0; x < w; x++)
			for (int c = 0; c < 3; c++) {
				uint64_t s = 0x9e3779b97f4a7c15ULL * (c + 1);
				double v = 60.0 * x / w + 50.0 * y / h +
					   70 * lattice(x, y, 64, s) +
					   50 * lattice(x, y, 16, s + 1) +
					   45 * lattice(x, y, 4, s + 2) +
					   84 * lattice(x, y, 1, s + 3);
				rgb[((size_t)y * w + x) * 3 + c] =
				    (unsigned char)(v > 255 ? 255 : v);
			}
}

struct jerr {
	struct jpeg_error_mgr pub;
	jmp_buf jb;
};

static void on_error(j_common_ptr cinfo)
{
	struct jerr *e = (struct jerr *)cinfo->err;

	longjmp(e->jb, 1);
}

static void no_message(j_common_ptr cinfo)
{
	(void)cinfo;
}

/* libjpeg's errors as a jump back to the caller's setjmp, silent. */
static struct jpeg_error_mgr *quiet_errors(struct jerr *e)
{
	jpeg_std_error(&e->pub);
	e->pub.error_exit = on_error;
	e->pub.output_message = no_message;
	return &e->pub;
}

/* Encode rgb (w x h) at quality q into *out (malloc'd by libjpeg). */
static int encode(const unsigned char *rgb, int w, int h, int q,
		  unsigned char **out, unsigned long *size)
{
	struct jpeg_compress_struct c;
	struct jerr e;

	c.err = quiet_errors(&e);
	if (setjmp(e.jb)) {
		jpeg_destroy_compress(&c);
		return -1;
	}
	jpeg_create_compress(&c);
	jpeg_mem_dest(&c, out, size);
	c.image_width = (JDIMENSION)w;
	c.image_height = (JDIMENSION)h;
	c.input_components = 3;
	c.in_color_space = JCS_RGB;
	jpeg_set_defaults(&c);
	jpeg_set_quality(&c, q, TRUE);
	jpeg_start_compress(&c, TRUE);
	while (c.next_scanline < c.image_height) {
		JSAMPROW row =
		    (JSAMPROW)(rgb + (size_t)c.next_scanline * (size_t)w * 3);
		jpeg_write_scanlines(&c, &row, 1);
	}
	jpeg_finish_compress(&c);
	jpeg_destroy_compress(&c);
	return 0;
}

/* Decode jpg into rgb (w x h x 3, preallocated). */
static int decode(const unsigned char *jpg, unsigned long size,
		  unsigned char *rgb, int w, int h)
{
	struct jpeg_decompress_struct d;
	struct jerr e;

	d.err = quiet_errors(&e);
	if (setjmp(e.jb)) {
		jpeg_destroy_decompress(&d);
		return -1;
	}
	jpeg_create_decompress(&d);
	jpeg_mem_src(&d, jpg, size);
	jpeg_read_header(&d, TRUE);
	d.out_color_space = JCS_RGB;
	jpeg_start_decompress(&d);
	if ((int)d.output_width != w || (int)d.output_height != h ||
	    d.output_components != 3) {
		jpeg_destroy_decompress(&d);
		return -1;
	}
	while (d.output_scanline < d.output_height) {
		JSAMPROW row =
		    (JSAMPROW)(rgb + (size_t)d.output_scanline * (size_t)w * 3);
		jpeg_read_scanlines(&d, &row, 1);
	}
	jpeg_finish_decompress(&d);
	jpeg_destroy_decompress(&d);
	return 0;
}

/*
 * torchvision's RandomResizedCrop (scale 0.08-1, aspect 3/4-4/3, the
 * whole image after 10 misses), bilinear to oh x ow, flipped when the
 * draw says, then ToTensor and Normalize: float CHW, (x / 255 - mean) /
 * std per channel.
 */
static void augment(const unsigned char *rgb, int w, int h, float *out, int oh,
		    int ow, uint64_t *rng)
{
	static const float mean[3] = {0.485f, 0.456f, 0.406f};
	static const float inv_std[3] = {1 / 0.229f, 1 / 0.224f, 1 / 0.225f};
	double area = (double)w * h, cw = w, ch = h, x0 = 0, y0 = 0;
	bool flip;

	for (int t = 0; t < 10; t++) {
		double u1, u2, u3, u4, s, r, tw, th;
		*rng = mix(*rng + 1);
		u1 = (double)(*rng >> 11) / 9007199254740992.0;
		*rng = mix(*rng + 1);
		u2 = (double)(*rng >> 11) / 9007199254740992.0;
		s = 0.08 + 0.92 * u1;
		r = exp(log(0.75) + (log(4.0 / 3) - log(0.75)) * u2);
		tw = sqrt(area * s * r);
		th = sqrt(area * s / r);
		if (tw <= w && th <= h) {
			*rng = mix(*rng + 1);
			u3 = (double)(*rng >> 11) / 9007199254740992.0;
			*rng = mix(*rng + 1);
			u4 = (double)(*rng >> 11) / 9007199254740992.0;
			cw = tw;
			ch = th;
			x0 = (w - tw) * u3;
			y0 = (h - th) * u4;
			break;
		}
	}
	*rng = mix(*rng + 1);
	flip = *rng & 1;
	for (int oy = 0; oy < oh; oy++) {
		double sy = y0 + (oy + 0.5) * ch / oh - 0.5;
		int iy = (int)floor(sy);
		double fy = sy - iy;
		int y1 = iy < 0 ? 0 : iy >= h ? h - 1 : iy;
		int y2 = iy + 1 < 0 ? 0 : iy + 1 >= h ? h - 1 : iy + 1;
		for (int ox = 0; ox < ow; ox++) {
			double sx = x0 + (ox + 0.5) * cw / ow - 0.5;
			int ix = (int)floor(sx);
			double fx = sx - ix;
			int x1 = ix < 0 ? 0 : ix >= w ? w - 1 : ix;
			int x2 = ix + 1 < 0 ? 0 : ix + 1 >= w ? w - 1 : ix + 1;
			int dx = flip ? ow - 1 - ox : ox;
			for (int c = 0; c < 3; c++) {
				const unsigned char *p = rgb + c;
				double v =
				    (p[((size_t)y1 * w + x1) * 3] * (1 - fx) +
				     p[((size_t)y1 * w + x2) * 3] * fx) *
					(1 - fy) +
				    (p[((size_t)y2 * w + x1) * 3] * (1 - fx) +
				     p[((size_t)y2 * w + x2) * 3] * fx) *
					fy;
				out[((size_t)c * oh + oy) * ow + dx] =
				    ((float)v / 255.0f - mean[c]) * inv_std[c];
			}
		}
	}
}

int hp_engine_loader_cost(double seconds, struct hp_loader_cost *out,
			  struct hp_error *err)
{
	const int w = HP_LOADER_SRC_W, h = HP_LOADER_SRC_H;
	const int oh = HP_LOADER_OUT_HW, ow = HP_LOADER_OUT_HW;
	unsigned char *rgb = NULL, *jpg = NULL, *back = NULL;
	unsigned long size = 0;
	float *img = NULL;
	double best_dec = INFINITY, best_aug = INFINITY, t_end;
	uint64_t rng = 42;
	volatile float sink = 0;
	int rc = 0, runs = 0;

	if (!(seconds > 0 && seconds <= 600))
		return hp_error_set(err, HP_EINVAL,
				    "seconds %g out of range (0, 600]",
				    seconds);
	rgb = malloc((size_t)w * h * 3);
	back = malloc((size_t)w * h * 3);
	img = malloc((size_t)3 * oh * ow * sizeof(*img));
	if (!rgb || !back || !img) {
		rc = hp_error_set(err, HP_ENOMEM, "out of memory");
		goto out;
	}
	synth_image(rgb, w, h);
	if (encode(rgb, w, h, HP_LOADER_QUALITY, &jpg, &size)) {
		rc = hp_error_set(err, HP_EDEVICE, "libjpeg cannot encode");
		goto out;
	}
	/* batches of 8 samples, the best batch's time per sample; the
	 * thread's CPU time, not the wall's: a thread waiting for a CPU on
	 * a shared host does no decoding */
	t_end = thread_s() + seconds;
	while (runs < 3 || thread_s() < t_end) {
		double t0 = thread_s(), t1, t2;
		for (int k = 0; k < 8; k++)
			if (decode(jpg, size, back, w, h)) {
				rc = hp_error_set(err, HP_EDEVICE,
						  "libjpeg cannot decode its "
						  "own image");
				goto out;
			}
		t1 = thread_s();
		for (int k = 0; k < 8; k++) {
			augment(back, w, h, img, oh, ow, &rng);
			sink += img[k];
		}
		t2 = thread_s();
		if ((t1 - t0) / 8 < best_dec)
			best_dec = (t1 - t0) / 8;
		if ((t2 - t1) / 8 < best_aug)
			best_aug = (t2 - t1) / 8;
		runs++;
		if (runs > 100000)
			break;
	}
	(void)sink;
	memset(out, 0, sizeof(*out));
	out->decode_s_per_px = best_dec / ((double)w * h);
	out->augment_s_per_px = best_aug / ((double)oh * ow);
	out->jpeg_bits_per_px = 8.0 * (double)size / ((double)w * h);
	out->samples = runs * 8;
out:
	free(jpg);
	free(rgb);
	free(back);
	free(img);
	return rc;
}
