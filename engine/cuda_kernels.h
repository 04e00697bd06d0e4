/*
 * cuda_kernels.h - the few element-wise kernels the CUDA backend needs
 * beyond cuDNN and cuBLAS (dropout with the CPU backend's random stream,
 * clip, global average pooling, the copies of add and concat, the loss and
 * its gradient, the optimizer updates), in cuda_kernels.cu.  Each launches
 * on stream and returns the launch's cudaError_t as an int (0: launched);
 * none synchronizes.  Internal to engine/cuda.c.
 *
 * acc: a gradient's destination is added to (acc != 0: another reader of
 * the same activation wrote it before) or written over (acc == 0, and then
 * it is never read, so it may hold anything).
 */
#ifndef HP_CUDA_KERNELS_H
#define HP_CUDA_KERNELS_H

#include <stdint.h>

#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

/* m[i] = (splitmix(key + i) >> 40) >= thr ? scale : 0; y[i] = x[i] * m[i].
 * y may be x. */
int hp__cu_dropout_fwd(const float *x, float *y, float *m, int64_t n,
		       uint64_t key, uint32_t thr, float scale, cudaStream_t s);
/* out[i] = a[i] * b[i] (+ out[i] when acc); out may be a when !acc. */
int hp__cu_mul(const float *a, const float *b, float *out, int64_t n, int acc,
	       cudaStream_t s);
/* y[i] = min(max(x[i], lo), hi); y may be x. */
int hp__cu_clip_fwd(const float *x, float *y, int64_t n, float lo, float hi,
		    cudaStream_t s);
/* dx[i] = lo < y[i] < hi ? dy[i] : 0 (+ dx[i] when acc), from clip's
 * output y (inside the bounds exactly where its input was); dx may be dy
 * when !acc. */
int hp__cu_clip_bwd(const float *y, const float *dy, float *dx, int64_t n,
		    float lo, float hi, int acc, cudaStream_t s);
/* Global average pooling of rows (N * C) planes of hw elements each:
 * y[r] = sum_j x[r * hw + j] / hw. */
int hp__cu_gap_fwd(const float *x, float *y, int64_t rows, int64_t hw,
		   cudaStream_t s);
/* Its backward: dx[r * hw + j] = dy[r] / hw (+ dx[r * hw + j] when acc). */
int hp__cu_gap_bwd(const float *dy, float *dx, int64_t rows, int64_t hw,
		   int acc, cudaStream_t s);
/* For r < rows and c < width (elements): dst[r * dpitch + c] = src[r *
 * spitch + c] (+ dst[...] when acc); src and dst must not overlap.  One
 * row is a flat copy (add); N rows place or take a sample's channel block
 * (concat). */
int hp__cu_copy2d(const float *src, int64_t spitch, float *dst, int64_t dpitch,
		  int64_t width, int64_t rows, int acc, cudaStream_t s);
/* out[i] = v */
int hp__cu_fill(float *out, float v, int64_t n, cudaStream_t s);
/*
 * Per sample i of z (n rows of k): with labels, loss[i] = logsumexp(z_i) -
 * z_i[lab[i]] and g_i = (softmax(z_i) - onehot) / n; without (lab NULL),
 * loss[i] = 0.5 sum z_i^2 and g_i = z_i / n.  g may be NULL.
 */
int hp__cu_loss(const float *z, const int32_t *lab, float *g, double *loss,
		int64_t n, int64_t k, cudaStream_t s);
/* SGD with momentum, no dampening (PyTorch): d = g + wd w; m = mu m + d;
 * w -= lr m. */
int hp__cu_sgd(float *w, const float *g, float *m, int64_t n, float lr,
	       float wd, float mu, cudaStream_t s);
/* Adam (PyTorch): d = g + wd w; m = b1 m + (1-b1) d; v = b2 v + (1-b2) d^2;
 * w -= step m / (sqrt(v) rbc2 + eps), step = lr / (1 - b1^t),
 * rbc2 = 1 / sqrt(1 - b2^t). */
int hp__cu_adam(float *w, const float *g, float *m, float *v, int64_t n,
		float step, float rbc2, float b1, float b2, float eps, float wd,
		cudaStream_t s);

#ifdef __cplusplus
}
#endif
#endif /* HP_CUDA_KERNELS_H */
