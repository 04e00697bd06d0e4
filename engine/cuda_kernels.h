/*
 * cuda_kernels.h - the few element-wise kernels the CUDA backend needs
 * beyond cuDNN and cuBLAS (dropout with the CPU backend's random stream,
 * the loss and its gradient, the optimizer updates), in cuda_kernels.cu.
 * Each launches on stream and returns the launch's cudaError_t as an int
 * (0: launched); none synchronizes.  Internal to engine/cuda.c.
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
/* out[i] = a[i] * b[i]; out may be a. */
int hp__cu_mul(const float *a, const float *b, float *out, int64_t n,
	       cudaStream_t s);
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
