/*
 * host.c - the local CPU host: model, cores, clock and memory from /proc
 * and sysfs, and an estimate of its peak FP32 throughput (physical cores x
 * GHz x FP32 FLOPs per cycle that its widest vector ISA allows).  Memory
 * bandwidth is never guessed: it stays NaN until measured.
 */
#define _GNU_SOURCE
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hetpool/device.h"
#include "util/banned.h"

#define PROC_MAX_BYTES (8u << 20)

/* The value of "key : value" lines, one per call; *pos carries on. */
static bool next_value(const char *text, const char *key, const char **pos,
		       char *out, size_t n)
{
	size_t klen = strlen(key);
	const char *p = *pos ? *pos : text;

	while (p && *p) {
		const char *eol = strchr(p, '\n');
		const char *end = eol ? eol : p + strlen(p);
		if (!strncmp(p, key, klen) &&
		    (p[klen] == ' ' || p[klen] == '\t' || p[klen] == ':')) {
			const char *v = memchr(p, ':', (size_t)(end - p));
			if (v) {
				v++;
				while (v < end && (*v == ' ' || *v == '\t'))
					v++;
				size_t len = (size_t)(end - v);
				if (len >= n)
					len = n - 1;
				memcpy(out, v, len);
				out[len] = '\0';
				*pos = eol ? eol + 1 : end;
				return true;
			}
		}
		p = eol ? eol + 1 : NULL;
	}
	*pos = NULL;
	return false;
}

/* Copy s into dst of n bytes, cut short if it must be. */
static void copy_str(char *dst, size_t n, const char *s)
{
	size_t len = strnlen(s, n - 1);

	memcpy(dst, s, len);
	dst[len] = '\0';
}

static bool has_flag(const char *flags, const char *flag)
{
	size_t n = strlen(flag);

	for (const char *p = flags; (p = strstr(p, flag)); p += n)
		if ((p == flags || p[-1] == ' ') && (p[n] == ' ' || !p[n]))
			return true;
	return false;
}

/* "... CPU @ 2.20GHz" in the model name: the base clock, or 0. */
static double model_ghz(const char *model)
{
	const char *at = strstr(model, "@ ");
	char buf[32];
	size_t len;
	double v;

	if (!at)
		return 0;
	at += 2;
	len = strspn(at, "0123456789.");
	if (!len || len >= sizeof(buf) || strncmp(at + len, "GHz", 3))
		return 0;
	memcpy(buf, at, len);
	buf[len] = '\0';
	return hp_parse_double(buf, &v) == 0 && v > 0 && v < 10 ? v : 0;
}

void hp_host_parse(const char *cpuinfo, const char *meminfo, long ncpus,
		   double max_mhz, struct hp_host *h)
{
	char val[4096];
	const char *pos = NULL;
	double mhz = 0;
	int64_t pairs[1024][2], sock[256];
	int npairs = 0, nproc = 0, nsock = 0;
	bool amd_256bit_fma = false;

	memset(h, 0, sizeof(*h));
	h->fp32_gflops = NAN;
	h->mem_gb = NAN;
	h->ghz = NAN;
	snprintf(h->isa, sizeof(h->isa), "?");
	snprintf(h->model, sizeof(h->model), "unknown CPU");
	if (cpuinfo) {
		if (next_value(cpuinfo, "model name", &pos, val, sizeof(val)))
			copy_str(h->model, sizeof(h->model), val);
		pos = NULL;
		if (next_value(cpuinfo, "flags", &pos, val, sizeof(val))) {
			if (has_flag(val, "avx512f"))
				snprintf(h->isa, sizeof(h->isa), "avx512");
			else if (has_flag(val, "avx2") && has_flag(val, "fma"))
				snprintf(h->isa, sizeof(h->isa), "avx2");
			else if (has_flag(val, "avx"))
				snprintf(h->isa, sizeof(h->isa), "avx");
			else if (has_flag(val, "sse2"))
				snprintf(h->isa, sizeof(h->isa), "sse2");
			amd_256bit_fma =
			    !has_flag(val, "avx512_vp2intersect") &&
			    strstr(cpuinfo, "AuthenticAMD") != NULL;
		}
		/* Physical cores: distinct (physical id, core id) pairs. */
		const char *pp = NULL, *cp = NULL;
		char pid[32], cid[32];
		for (pos = NULL;
		     next_value(cpuinfo, "processor", &pos, val, sizeof(val));)
			nproc++;
		while (
		    next_value(cpuinfo, "physical id", &pp, pid, sizeof(pid)) &&
		    next_value(cpuinfo, "core id", &cp, cid, sizeof(cid))) {
			int64_t a, b;
			bool seen = false;
			if (hp_parse_i64(pid, 0, INT32_MAX, &a) ||
			    hp_parse_i64(cid, 0, INT32_MAX, &b))
				break;
			for (int i = 0; i < npairs && !seen; i++)
				seen = pairs[i][0] == a && pairs[i][1] == b;
			if (!seen && npairs < 1024) {
				pairs[npairs][0] = a;
				pairs[npairs][1] = b;
				npairs++;
			}
			seen = false;
			for (int i = 0; i < nsock && !seen; i++)
				seen = sock[i] == a;
			if (!seen && nsock < 256)
				sock[nsock++] = a;
		}
		for (pos = NULL;
		     next_value(cpuinfo, "cpu MHz", &pos, val, sizeof(val));) {
			double v;
			if (hp_parse_double(val, &v) == 0 && v > mhz)
				mhz = v;
		}
	}
	h->logical_cpus = ncpus > 0 ? (int)ncpus : nproc;
	h->physical_cores = npairs > 0 ? npairs : h->logical_cpus;
	h->sockets = nsock;
	if (!strcmp(h->isa, "avx512"))
		h->vector_bits = 512;
	else if (!strcmp(h->isa, "avx2") || !strcmp(h->isa, "avx"))
		h->vector_bits = 256;
	else if (!strcmp(h->isa, "sse2"))
		h->vector_bits = 128;
	if (max_mhz > 0)
		h->ghz = max_mhz / 1000;
	else if (model_ghz(h->model) > 0)
		h->ghz = model_ghz(h->model);
	else if (mhz > 0)
		h->ghz = mhz / 1000;
	/*
	 * FP32 FLOPs per core per cycle: two FMA units of the widest vector
	 * (AVX-512: 2 x 16 lanes x 2; AVX2+FMA: 2 x 8 x 2; AVX: add and
	 * multiply ports, 8 lanes each; SSE2: 4 lanes each).  Parts with one
	 * 512-bit FMA unit reach half the AVX-512 figure, and so does AMD Zen
	 * 4, which runs AVX-512 on two 256-bit FMA units (Zen 5, the first
	 * AMD core with avx512_vp2intersect, has full-width units).
	 */
	if (!strcmp(h->isa, "avx512") && amd_256bit_fma)
		h->flops_per_cycle = 32;
	else if (!strcmp(h->isa, "avx512"))
		h->flops_per_cycle = 64;
	else if (!strcmp(h->isa, "avx2"))
		h->flops_per_cycle = 32;
	else if (!strcmp(h->isa, "avx"))
		h->flops_per_cycle = 16;
	else if (!strcmp(h->isa, "sse2"))
		h->flops_per_cycle = 8;
	if (h->flops_per_cycle && h->physical_cores > 0 && h->ghz > 0)
		h->fp32_gflops =
		    h->physical_cores * h->ghz * h->flops_per_cycle;
	if (meminfo) {
		int64_t kb;
		char *sp;
		pos = NULL;
		if (next_value(meminfo, "MemTotal", &pos, val, sizeof(val))) {
			sp = strchr(val, ' ');
			if (sp)
				*sp = '\0';
			if (hp_parse_i64(val, 1, INT64_MAX / 1024, &kb) == 0)
				h->mem_gb = (double)kb * 1024 / 1e9;
		}
	}
}

/* The CPUs this process may run on (its affinity mask), else the ones
 * online. */
static long usable_cpus(void)
{
	cpu_set_t set;

	if (!sched_getaffinity(0, sizeof(set), &set) && CPU_COUNT(&set) > 0)
		return CPU_COUNT(&set);
	return sysconf(_SC_NPROCESSORS_ONLN);
}

/* Read a small /proc or sysfs file (their size reads as 0, so read to the
 * end); NULL if it is not there. */
static char *slurp(const char *path)
{
	struct hp_buf b;
	char chunk[4096];
	size_t n;
	FILE *f = fopen(path, "r");

	if (!f)
		return NULL;
	hp_buf_init(&b, PROC_MAX_BYTES);
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		if (hp_buf_add(&b, chunk, n))
			break;
	if (ferror(f) || !feof(f) || hp_buf_add(&b, "", 0)) {
		fclose(f);
		hp_buf_release(&b);
		return NULL;
	}
	fclose(f);
	return hp_buf_detach(&b);
}

int hp_host_detect(struct hp_host *h, struct hp_error *err)
{
	char *cpuinfo = slurp("/proc/cpuinfo");
	char *meminfo = slurp("/proc/meminfo");
	char *maxf = slurp("/sys/devices/system/cpu/cpu0/cpufreq/"
			   "cpuinfo_max_freq");
	double khz = 0;

	if (maxf) {
		maxf[strcspn(maxf, "\n")] = '\0';
		if (hp_parse_double(maxf, &khz) || khz <= 0)
			khz = 0;
	}
	/* the CPUs this process may use (taskset, a container's or Slurm's
	 * CPU set), not all the host has: the threads used by default */
	hp_host_parse(cpuinfo, meminfo, usable_cpus(), khz / 1000, h);
	hp_host_read_caches("/sys", h);
	free(maxf);
	free(meminfo);
	if (!cpuinfo)
		return hp_error_set(err, HP_EIO,
				    "unable to read '/proc/cpuinfo'");
	free(cpuinfo);
	return 0;
}

int hp_host_threads(const struct hp_host *h)
{
	if (h->threads > 0)
		return h->threads;
	return h->logical_cpus > 0 ? h->logical_cpus : 1;
}

double hp_host_fp32_est(const struct hp_host *h)
{
	int t = hp_host_threads(h), cores = h->physical_cores;

	if (!(h->fp32_gflops > 0) || cores < 1)
		return NAN;
	return h->fp32_gflops * 1e9 * (t < cores ? t : cores) / cores;
}

double hp_loader_sample_s(const struct hp_loader_cost *c, double src_px,
			  double out_px)
{
	if (!c || !(c->decode_s_per_px > 0) || !(c->augment_s_per_px > 0) ||
	    !(src_px >= 0) || !(out_px >= 0))
		return NAN;
	return c->decode_s_per_px * src_px + c->augment_s_per_px * out_px;
}

int64_t hp_host_parse_cache_size(const char *s)
{
	char buf[32];
	size_t len = strspn(s, "0123456789");
	int64_t v, mult = 1;
	const char *u = s + len;

	if (!len || len >= sizeof(buf))
		return -1;
	if (*u == 'K')
		mult = 1024, u++;
	else if (*u == 'M')
		mult = 1048576, u++;
	else if (*u == 'G')
		mult = 1073741824, u++;
	if (*u == '\n')
		u++;
	if (*u)
		return -1;
	memcpy(buf, s, len);
	buf[len] = '\0';
	if (hp_parse_i64(buf, 0, INT64_MAX / mult, &v))
		return -1;
	return v * mult;
}

/* The CPUs in a cpu list "0-3,8,10-11"; 0 when it is not one. */
static int count_cpu_list(const char *s)
{
	int n = 0;

	while (*s && *s != '\n') {
		char *end;
		long a = strtol(s, &end, 10), b = a;
		if (end == s || a < 0)
			return 0;
		s = end;
		if (*s == '-') {
			b = strtol(s + 1, &end, 10);
			if (end == s + 1 || b < a)
				return 0;
			s = end;
		}
		if (b - a > 65536)
			return 0;
		n += (int)(b - a + 1);
		if (*s == ',')
			s++;
		else if (*s && *s != '\n')
			return 0;
	}
	return n;
}

int hp_host_read_caches(const char *sys, struct hp_host *h)
{
	int found = 0;

	for (int i = 0; i < 16; i++) {
		char path[4096], *lv, *ty, *sz, *sh;
		int64_t level, bytes;
		bool present;
		int n = snprintf(path, sizeof(path),
				 "%s/devices/system/cpu/cpu0/cache/index%d/",
				 sys, i);
		size_t end = (size_t)n;
		if (n < 0 || end + 32 >= sizeof(path))
			break;
		snprintf(path + end, sizeof(path) - end, "level");
		lv = slurp(path);
		snprintf(path + end, sizeof(path) - end, "type");
		ty = slurp(path);
		snprintf(path + end, sizeof(path) - end, "size");
		sz = slurp(path);
		snprintf(path + end, sizeof(path) - end, "shared_cpu_list");
		sh = slurp(path);
		present = lv != NULL;
		if (lv && ty && sz) {
			lv[strcspn(lv, "\n")] = '\0';
			ty[strcspn(ty, "\n")] = '\0';
			bytes = hp_host_parse_cache_size(sz);
			if (!hp_parse_i64(lv, 1, 4, &level) && bytes > 0 &&
			    strcmp(ty, "Instruction")) {
				found++;
				if (level == 1)
					h->l1d_bytes = bytes;
				else if (level == 2)
					h->l2_bytes = bytes;
				else if (level == 3) {
					h->l3_bytes = bytes;
					h->l3_cpus =
					    sh ? count_cpu_list(sh) : 0;
				}
			}
		}
		free(lv);
		free(ty);
		free(sz);
		free(sh);
		if (!present)
			break;
	}
	return found;
}

int hp_host_rapl_energy_j(const char *sys, double *joules)
{
	double sum = 0;
	int found = 0;

	for (int i = 0; i < 64; i++) {
		char path[4096], *v;
		double uj;
		snprintf(path, sizeof(path),
			 "%s/class/powercap/intel-rapl:%d/energy_uj", sys, i);
		if (!(v = slurp(path)))
			continue;
		v[strcspn(v, "\n")] = '\0';
		if (!hp_parse_double(v, &uj) && uj >= 0) {
			sum += uj * 1e-6;
			found++;
		}
		free(v);
	}
	if (!found)
		return HP_ENOENT;
	*joules = sum;
	return 0;
}

void hp_host_apply(const struct hp_host *h, struct hp_device_type *t)
{
	copy_str(t->product, sizeof(t->product), h->model);
	t->fp32_tflops = h->fp32_gflops / 1000;
	t->tf32_tflops = NAN;
	/* FP16 arithmetic on CPUs runs at best at the FP32 rate for
	 * training (AVX512-FP16 aside); not claimed. */
	t->fp16_tflops = NAN;
	t->mem_gb = h->mem_gb;
	t->mem_bw_gbs = NAN;
	t->detected = true;
}
