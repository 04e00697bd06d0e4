/*
 * cuda_kernels.cu - element-wise kernels of the CUDA backend (see
 * cuda_kernels.h): dropout drawing the same masks as the CPU backend, clip
 * and global average pooling, the copies of add and concat, the loss and
 * its gradient on the device, and the optimizer updates, all in the
 * formulas engine/cpu_dnnl.c uses (oneDNN's for clip and pooling).
 */
#include <math.h>

#include "cuda_kernels.h"

#define THREADS 256

/* Grid for n elements with a grid-stride loop. */
static unsigned blocks_for(int64_t n)
{
	int64_t b = (n + THREADS - 1) / THREADS;
	return (unsigned)(b < 1 ? 1 : b > 65535 ? 65535 : b);
}

static int launched(void)
{
	return (int)cudaGetLastError();
}

/* splitmix64's mixer: the same as hp__rng_mix() in engine_int.h. */
__device__ static uint64_t mix(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

#define FOR_EACH(i, n)                                                         \
	for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;       \
	     i < (n); i += (int64_t)blockDim.x * gridDim.x)

__global__ static void k_dropout_fwd(const float *x, float *y, float *m,
				     int64_t n, uint64_t key, uint32_t thr,
				     float scale)
{
	FOR_EACH(i, n)
	{
		uint32_t u = (uint32_t)(mix(key + (uint64_t)i) >> 40);
		float mi = u >= thr ? scale : 0.0f;
		m[i] = mi;
		y[i] = x[i] * mi;
	}
}

__global__ static void k_mul(const float *a, const float *b, float *out,
			     int64_t n, int acc)
{
	FOR_EACH(i, n)
	{
		float v = a[i] * b[i];
		out[i] = acc ? out[i] + v : v;
	}
}

/* oneDNN's clip_v2: max first, then min */
__global__ static void k_clip_fwd(const float *x, float *y, int64_t n,
				  float lo, float hi)
{
	FOR_EACH(i, n)
	{
		float v = x[i] > lo ? x[i] : lo;
		y[i] = v < hi ? v : hi;
	}
}

/* oneDNN's clip_v2_use_dst_for_bwd: the gradient passes strictly inside */
__global__ static void k_clip_bwd(const float *y, const float *dy, float *dx,
				  int64_t n, float lo, float hi, int acc)
{
	FOR_EACH(i, n)
	{
		float v = lo < y[i] && y[i] < hi ? dy[i] : 0.0f;
		dx[i] = acc ? dx[i] + v : v;
	}
}

/* One warp per plane: its lanes sum strided elements (coalesced), then
 * reduce by shuffles.  Every lane of a warp runs the same rows (blockDim
 * is a multiple of 32), so the full mask is right. */
__global__ static void k_gap_fwd(const float *x, float *y, int64_t rows,
				 int64_t hw)
{
	int lane = threadIdx.x & 31;
	int64_t warp = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
	int64_t nwarps = ((int64_t)gridDim.x * blockDim.x) >> 5;

	for (int64_t r = warp; r < rows; r += nwarps) {
		const float *xr = x + r * hw;
		float acc = 0.0f;
		for (int64_t j = lane; j < hw; j += 32)
			acc += xr[j];
		for (int o = 16; o > 0; o /= 2)
			acc += __shfl_down_sync(0xffffffffu, acc, o);
		if (lane == 0)
			y[r] = acc / (float)hw;
	}
}

__global__ static void k_gap_bwd(const float *dy, float *dx, int64_t n,
				 int64_t hw, int acc)
{
	FOR_EACH(i, n)
	{
		float v = dy[i / hw] / (float)hw;
		dx[i] = acc ? dx[i] + v : v;
	}
}

__global__ static void k_copy2d(const float *src, int64_t spitch, float *dst,
				int64_t dpitch, int64_t width, int64_t n,
				int acc)
{
	FOR_EACH(i, n)
	{
		int64_t r = i / width, c = i - r * width;
		float v = src[r * spitch + c];
		float *d = dst + r * dpitch + c;
		*d = acc ? *d + v : v;
	}
}

__global__ static void k_fill(float *out, float v, int64_t n)
{
	FOR_EACH(i, n)
	out[i] = v;
}

/* One block per sample; double precision like the CPU backend. */
__global__ static void k_loss(const float *z, const int32_t *lab, float *g,
			      double *loss, int64_t k, double inv)
{
	__shared__ double red[THREADS];
	const float *zi = z + (int64_t)blockIdx.x * k;
	float *gi = g ? g + (int64_t)blockIdx.x * k : NULL;
	int t = threadIdx.x;
	double acc;

	if (!lab) {
		acc = 0;
		for (int64_t j = t; j < k; j += THREADS) {
			acc += 0.5 * (double)zi[j] * zi[j];
			if (gi)
				gi[j] = (float)(zi[j] * inv);
		}
		red[t] = acc;
		__syncthreads();
		for (int s = THREADS / 2; s > 0; s /= 2) {
			if (t < s)
				red[t] += red[t + s];
			__syncthreads();
		}
		if (t == 0)
			loss[blockIdx.x] = red[0];
		return;
	}
	acc = -INFINITY;
	for (int64_t j = t; j < k; j += THREADS)
		acc = fmax(acc, (double)zi[j]);
	red[t] = acc;
	__syncthreads();
	for (int s = THREADS / 2; s > 0; s /= 2) {
		if (t < s)
			red[t] = fmax(red[t], red[t + s]);
		__syncthreads();
	}
	double mx = red[0];
	__syncthreads();
	acc = 0;
	for (int64_t j = t; j < k; j += THREADS)
		acc += exp((double)zi[j] - mx);
	red[t] = acc;
	__syncthreads();
	for (int s = THREADS / 2; s > 0; s /= 2) {
		if (t < s)
			red[t] += red[t + s];
		__syncthreads();
	}
	double lse = mx + log(red[0]);
	int32_t y = lab[blockIdx.x];
	for (int64_t j = t; gi && j < k; j += THREADS)
		gi[j] = (float)((exp((double)zi[j] - lse) - (j == y ? 1 : 0)) *
				inv);
	if (t == 0)
		loss[blockIdx.x] = lse - zi[y];
}

/*
 * The updates round every operation on its own, in the CPU backend's
 * order (cpu_update: gcc, ISO C, no contraction): nvcc would otherwise
 * fuse multiply-adds (--fmad is on by default), and a job whose ranks
 * mix CPU and GPU would see its ranks' states differ from the second
 * step on, which the trainer's checkpoint refuses.
 */
__global__ static void k_sgd(float *w, const float *g, float *m, int64_t n,
			     float lr, float wd, float mu)
{
	FOR_EACH(i, n)
	{
		float d = __fadd_rn(g[i], __fmul_rn(wd, w[i]));
		m[i] = __fadd_rn(__fmul_rn(mu, m[i]), d);
		w[i] = __fsub_rn(w[i], __fmul_rn(lr, m[i]));
	}
}

__global__ static void k_adam(float *w, const float *g, float *m, float *v,
			      int64_t n, float step, float rbc2, float b1,
			      float b2, float eps, float wd)
{
	float c1 = __fsub_rn(1.0f, b1), c2 = __fsub_rn(1.0f, b2);

	FOR_EACH(i, n)
	{
		float d = __fadd_rn(g[i], __fmul_rn(wd, w[i]));
		m[i] = __fadd_rn(__fmul_rn(b1, m[i]), __fmul_rn(c1, d));
		v[i] = __fadd_rn(__fmul_rn(b2, v[i]),
				 __fmul_rn(__fmul_rn(c2, d), d));
		w[i] = __fsub_rn(
		    w[i],
		    __fdiv_rn(__fmul_rn(step, m[i]),
			      __fadd_rn(__fmul_rn(__fsqrt_rn(v[i]), rbc2),
					eps)));
	}
}

extern "C" int hp__cu_dropout_fwd(const float *x, float *y, float *m, int64_t n,
				  uint64_t key, uint32_t thr, float scale,
				  cudaStream_t s)
{
	k_dropout_fwd<<<blocks_for(n), THREADS, 0, s>>>(x, y, m, n, key, thr,
							scale);
	return launched();
}

extern "C" int hp__cu_mul(const float *a, const float *b, float *out, int64_t n,
			  int acc, cudaStream_t s)
{
	k_mul<<<blocks_for(n), THREADS, 0, s>>>(a, b, out, n, acc);
	return launched();
}

extern "C" int hp__cu_clip_fwd(const float *x, float *y, int64_t n, float lo,
			       float hi, cudaStream_t s)
{
	k_clip_fwd<<<blocks_for(n), THREADS, 0, s>>>(x, y, n, lo, hi);
	return launched();
}

extern "C" int hp__cu_clip_bwd(const float *y, const float *dy, float *dx,
			       int64_t n, float lo, float hi, int acc,
			       cudaStream_t s)
{
	k_clip_bwd<<<blocks_for(n), THREADS, 0, s>>>(y, dy, dx, n, lo, hi, acc);
	return launched();
}

extern "C" int hp__cu_gap_fwd(const float *x, float *y, int64_t rows,
			      int64_t hw, cudaStream_t s)
{
	if (rows < 1 || hw < 1)
		return (int)cudaErrorInvalidValue;
	k_gap_fwd<<<blocks_for(rows * 32), THREADS, 0, s>>>(x, y, rows, hw);
	return launched();
}

extern "C" int hp__cu_gap_bwd(const float *dy, float *dx, int64_t rows,
			      int64_t hw, int acc, cudaStream_t s)
{
	if (rows < 1 || hw < 1)
		return (int)cudaErrorInvalidValue;
	k_gap_bwd<<<blocks_for(rows * hw), THREADS, 0, s>>>(dy, dx, rows * hw,
							    hw, acc);
	return launched();
}

extern "C" int hp__cu_copy2d(const float *src, int64_t spitch, float *dst,
			     int64_t dpitch, int64_t width, int64_t rows,
			     int acc, cudaStream_t s)
{
	if (rows < 1 || width < 1)
		return (int)cudaErrorInvalidValue;
	k_copy2d<<<blocks_for(rows * width), THREADS, 0, s>>>(
	    src, spitch, dst, dpitch, width, rows * width, acc);
	return launched();
}

extern "C" int hp__cu_fill(float *out, float v, int64_t n, cudaStream_t s)
{
	k_fill<<<blocks_for(n), THREADS, 0, s>>>(out, v, n);
	return launched();
}

extern "C" int hp__cu_loss(const float *z, const int32_t *lab, float *g,
			   double *loss, int64_t n, int64_t k, cudaStream_t s)
{
	if (n < 1 || n > 0x7fffffff)
		return (int)cudaErrorInvalidValue;
	k_loss<<<(unsigned)n, THREADS, 0, s>>>(z, lab, g, loss, k,
					       1.0 / (double)n);
	return launched();
}

extern "C" int hp__cu_sgd(float *w, const float *g, float *m, int64_t n,
			  float lr, float wd, float mu, cudaStream_t s)
{
	k_sgd<<<blocks_for(n), THREADS, 0, s>>>(w, g, m, n, lr, wd, mu);
	return launched();
}

extern "C" int hp__cu_adam(float *w, const float *g, float *m, float *v,
			   int64_t n, float step, float rbc2, float b1,
			   float b2, float eps, float wd, cudaStream_t s)
{
	k_adam<<<blocks_for(n), THREADS, 0, s>>>(w, g, m, v, n, step, rbc2, b1,
						 b2, eps, wd);
	return launched();
}
