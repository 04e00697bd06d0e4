/*
 * device.h - the device catalog: the CPU hosts and GPU types hetpool
 * plans for, with their peak throughput, memory, bandwidth and power, each
 * figure with its source (data/devices.csv, described in data/devices.md),
 * and detection of the local CPU host.
 *
 * Ownership: hp_catalog_load() / hp_catalog_parse() return a catalog the
 * caller frees with hp_catalog_free(); the device types, strings and
 * aliases inside belong to the catalog.  struct hp_host is caller-owned
 * and holds no heap memory.
 */
#ifndef HETPOOL_DEVICE_H
#define HETPOOL_DEVICE_H

#include <stdbool.h>
#include <stddef.h>

#include "hetpool/util.h"

#ifdef __cplusplus
extern "C" {
#endif

enum hp_device_kind {
	HP_DEVICE_GPU = 0,
	HP_DEVICE_CPU = 1,
};
const char *hp_device_kind_name(enum hp_device_kind k);

/*
 * One device type.  Figures are per device, that is per CUDA device (a
 * K80 board is two): the catalog file holds the datasheet's per-board
 * figures and the loader divides them by devices_per_board.  Tensor rates
 * are dense (no sparsity).  NaN when not known.
 */
struct hp_device_type {
	char name[32]; /* short lowercase id: "v100", "a100-80" */
	enum hp_device_kind kind;
	char vendor[16];    /* "nvidia"; "" for the abstract host */
	char arch[16];	    /* "volta", "ampere", ... */
	char product[64];   /* the product's own name */
	double fp32_tflops; /* peak FP32 (CUDA cores / vector units) */
	double tf32_tflops; /* peak dense TF32 tensor; NaN: no TF32 */
	double fp16_tflops; /* peak dense FP16 (tensor cores where any) */
	double mem_gb;	    /* device memory, 10^9 bytes */
	double mem_bw_gbs;  /* memory bandwidth, 10^9 bytes/s */
	double tdp_w;	    /* board power (thermal design power) */
	double idle_w;	    /* idle power (often an estimate: see src_idle) */
	int devices_per_board;
	/* Where each group of figures comes from; "estimate: ..." marks one
	 * that was not published. */
	char *src_compute, *src_memory, *src_power, *src_idle;
	char **aliases; /* other names that resolve to this type */
	int naliases;
	bool detected; /* kind CPU: the figures were filled from this host */
};

struct hp_catalog {
	struct hp_device_type *types;
	int n;
	char *path; /* the file it came from ("" for memory) */
};

/* Largest catalog file read (bytes). */
#define HP_CATALOG_MAX_BYTES (1u << 20)

/*
 * Parse a catalog from CSV text (see data/devices.md for the columns).
 * path only names the input in messages.  Bad input is refused with
 * HP_EPARSE and a message "PATH:LINE:COLUMN: device 'NAME': what" (LINE
 * and COLUMN 1-based, the column in characters; the device once its name
 * is read): text that is not a number, a figure outside its physical range
 * (data/devices.md: memory, peaks and bandwidth above 0, idle power from 0
 * to board power, upper bounds against wrong units), a GPU without its
 * FP32 peak, memory or bandwidth, a control character in a name, vendor,
 * arch, product or alias.  An empty optional figure is NaN (not known),
 * never 0.  Returns NULL on failure.  The result is owned by the caller:
 * hp_catalog_free().
 */
struct hp_catalog *hp_catalog_parse(const char *text, size_t len,
				    const char *path, struct hp_error *err);
/* Read and parse a catalog file; NULL with err set on failure. */
struct hp_catalog *hp_catalog_load(const char *path, struct hp_error *err);
/* Free a catalog and every type in it; NULL is a no-op. */
void hp_catalog_free(struct hp_catalog *cat);

/*
 * The type a name denotes, or NULL.  Ids and aliases match ignoring case
 * and every character other than letters and digits, so "V100",
 * "Tesla V100-SXM2-16GB" and "tesla_v100_sxm2_16gb" all find v100.
 * Generic names resolve as data/devices.md says ("a100" is the A100 SXM4
 * 80GB, "h100" the H100 SXM5).
 */
const struct hp_device_type *hp_catalog_find(const struct hp_catalog *cat,
					     const char *name);

/*
 * The local host as hetpool sees it.  Peak FP32 is an estimate (physical
 * cores x GHz x FP32 FLOPs per cycle from the ISA); memory bandwidth is
 * not measured and stays NaN.
 */
struct hp_host {
	char model[128];     /* /proc/cpuinfo "model name" */
	char isa[16];	     /* "avx512", "avx2", "avx", "sse2", "?" */
	int logical_cpus;    /* online CPUs (sysconf) */
	int physical_cores;  /* distinct (physical id, core id) pairs */
	double ghz;	     /* peak clock used for the estimate */
	int flops_per_cycle; /* FP32 FLOPs per core per cycle, 0 unknown */
	double fp32_gflops;  /* estimate; NaN when it cannot be made */
	double mem_gb;	     /* MemTotal, 10^9 bytes; NaN unknown */
};

/*
 * Fill h from the text of /proc/cpuinfo and /proc/meminfo (either may be
 * NULL), the online CPU count (<= 0: unknown) and the highest clock in MHz
 * (<= 0: take it from the model name or the "cpu MHz" lines).  Pure: for
 * tests and other hosts' files.
 */
void hp_host_parse(const char *cpuinfo, const char *meminfo, long ncpus,
		   double max_mhz, struct hp_host *h);
/* Detect this host from /proc and sysfs; 0, or HP_EIO if /proc is not
 * readable (h is filled with what could be found). */
int hp_host_detect(struct hp_host *h, struct hp_error *err);
/* Copy a host's figures into a catalog's CPU type and mark it detected. */
void hp_host_apply(const struct hp_host *h, struct hp_device_type *t);

#ifdef __cplusplus
}
#endif
#endif /* HETPOOL_DEVICE_H */
