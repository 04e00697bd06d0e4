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
#include <stdint.h>

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
 * This host's corrections of its CPU predictions (hetpool calibrate): a
 * log factor on each layer class's predicted time (conv, fc, other; the
 * per-step overhead goes with other), fitted on n configurations profiled
 * here, pulled to 0 (no correction) by a ridge.
 */
#define HP_HOST_CALIB_NCLASS 3
#define HP_HOST_CALIB_MAXPARAMS 32
struct hp_host_calib {
	bool has;
	char when[32]; /* UTC, ISO 8601 */
	int n;	       /* configurations it was fitted on */
	int threads;   /* threads they ran at */
	double log_scale[HP_HOST_CALIB_NCLASS];
	double mape_before, mape_after; /* % on those configurations */
	/* log(measured / calibrated) on them, 10th and 90th percentiles:
	 * the interval of a calibrated prediction (0 0: not known) */
	double q_lo, q_hi;
	/* The profiler's yardstick (a fixed reference step's time, profile
	 * column ref_time_s): its median over the calibration's rows, s,
	 * the host's speed the calibration's times were scaled to and its
	 * predictions hold at (hp_est_rescale_ref() with a yardstick timed
	 * later gives them at that speed).  NaN: not measured. */
	double ref_time_s;
	/* What the factors correct: the CPU fit's identity (a hash of its
	 * parameters, hp_estimator_cpu_fit_id()) and, for people, the fit
	 * time of the estimator that held it.  Predictions from another CPU
	 * fit leave the factors out.  "": older host files, applied to any. */
	char cpu_fit[24];
	char estimator[32];
	/* This host's own fit of the physical model on the calibration's
	 * configurations (hetpool calibrate since 2026-12-01): parameters
	 * by the estimator file's names, against fit_gflops (this host's
	 * ISA peak at these threads, as a profile of it would record) with
	 * channel blocks of chan_block.  Predictions use it in place of the
	 * carried fit and the factors.  nparams 0: older files (the
	 * factors alone). */
	int nparams;
	char param_names[HP_HOST_CALIB_MAXPARAMS][32];
	double params[HP_HOST_CALIB_MAXPARAMS];
	double fit_gflops;
	int chan_block;
};

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
	/* Kind CPU, detected: this host as its predictions use it (0 or NaN
	 * when not known).  fp32_tflops and mem_bw_gbs hold the measured
	 * peaks at these threads when peaks_measured. */
	int threads;		/* threads used */
	int physical_cores;	/* of the host */
	double cache_bytes;	/* L2 + L3 of cpu0, bytes */
	double fp32_est_tflops; /* ISA estimate at the threads used */
	bool peaks_measured;
	char peaks_when[32];
	struct hp_host_calib calib;
	char key[160]; /* its host file's key; "" none */
	/* where tdp_w and idle_w of a host come from when measured ("RAPL
	 * at 1 thread, 2026-11-30T18:00:00Z"); "" when not */
	char power_basis[96];
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
/* Whether two device names are the same name by hp_catalog_find()'s rule
 * (case and every character but letters and digits ignored). */
bool hp_device_names_match(const char *a, const char *b);

/*
 * The local host as hetpool sees it.  Peak FP32 is an estimate (physical
 * cores x GHz x FP32 FLOPs per cycle from the ISA); memory bandwidth is
 * not measured here (see struct hp_host_peaks: the engine measures it).
 */
struct hp_host {
	char model[128];     /* /proc/cpuinfo "model name" */
	char isa[16];	     /* "avx512", "avx2", "avx", "sse2", "?" */
	int vector_bits;     /* width of that ISA's vectors; 0 unknown */
	int logical_cpus;    /* online CPUs (sysconf) */
	int physical_cores;  /* distinct (physical id, core id) pairs */
	int sockets;	     /* distinct physical ids; 0 unknown */
	int threads;	     /* threads used (the engine's); 0: all CPUs */
	double ghz;	     /* peak clock used for the estimate */
	int flops_per_cycle; /* FP32 FLOPs per core per cycle, 0 unknown */
	double fp32_gflops;  /* estimate, all cores; NaN when unknown */
	double mem_gb;	     /* MemTotal, 10^9 bytes; NaN unknown */
	/* Caches as one core sees them (cpu0), bytes; 0 unknown.  l3_cpus:
	 * the CPUs sharing that L3 (0 unknown). */
	int64_t l1d_bytes, l2_bytes, l3_bytes;
	int l3_cpus;
};

/*
 * What one core spends preparing a sample as an ImageNet-style input
 * pipeline does (the engine measures it: hp_engine_loader_cost()): decode
 * a JPEG, then a random-resized crop to the model's input, a flip and the
 * conversion to normalized floats.  Measured on a HP_LOADER_SRC_W x
 * HP_LOADER_SRC_H image of camera-like entropy at quality
 * HP_LOADER_QUALITY, cropped to HP_LOADER_OUT_HW square; NaN: not
 * measured.
 */
#define HP_LOADER_SRC_W 500
#define HP_LOADER_SRC_H 375
#define HP_LOADER_QUALITY 90
#define HP_LOADER_OUT_HW 224
struct hp_loader_cost {
	double decode_s_per_px;	 /* CPU s per source pixel decoded */
	double augment_s_per_px; /* CPU s per input pixel (3 channels) */
	double jpeg_bits_per_px; /* the test image's compressed size */
	int samples;		 /* samples timed */
};
/* One core's CPU seconds for a sample: decode src_px source pixels, then
 * crop and convert to out_px input pixels.  NaN when c is not measured. */
double hp_loader_sample_s(const struct hp_loader_cost *c, double src_px,
			  double out_px);

/*
 * A host's measured peaks at one thread count (the engine measures them:
 * hp_engine_cpu_peaks()); NaN: not measured.
 */
struct hp_host_peaks {
	int threads;	    /* threads they were measured at */
	double fp32_flops;  /* FP32 FLOP/s, oneDNN sgemm, best of runs */
	double triad_bw;    /* STREAM triad, bytes/s (24 bytes an element) */
	double copy_bw;	    /* memcpy, bytes/s (read + write counted) */
	double array_bytes; /* each triad array's size */
	/* CPU package power from RAPL (all packages), W; NaN: not readable.
	 * Under the sgemm at these threads, and idle (the process asleep). */
	double power_load_w, power_idle_w;
	/* one core's input pipeline (NaN figures: not measured; files
	 * written before it lack it) */
	struct hp_loader_cost loader;
	char when[32]; /* UTC, ISO 8601; "" not measured */
};

/* The threads h's figures are for: h->threads, else its logical CPUs
 * (at least 1). */
int hp_host_threads(const struct hp_host *h);
/*
 * Peak FP32 estimate at the threads used (FLOP/s): the ISA's FLOPs per
 * cycle x GHz x the physical cores those threads occupy (threads beyond
 * the cores add nothing).  NaN when it cannot be made.
 */
double hp_host_fp32_est(const struct hp_host *h);

/*
 * Fill h from the text of /proc/cpuinfo and /proc/meminfo (either may be
 * NULL), the online CPU count (<= 0: unknown) and the highest clock in MHz
 * (<= 0: take it from the model name or the "cpu MHz" lines).  Pure: for
 * tests and other hosts' files.
 */
void hp_host_parse(const char *cpuinfo, const char *meminfo, long ncpus,
		   double max_mhz, struct hp_host *h);
/*
 * Parse a sysfs cache size ("32K", "512K", "32768K", "1M", "4096") into
 * bytes; -1 when it is not one.
 */
int64_t hp_host_parse_cache_size(const char *s);
/*
 * Read the caches of cpu0 under the sysfs root sys (normally "/sys":
 * SYS/devices/system/cpu/cpu0/cache/indexN/{level,type,size,
 * shared_cpu_list}) into h's l1d/l2/l3 fields; the others are left.
 * Tests hand a fake tree.  Returns how many cache levels were found.
 */
int hp_host_read_caches(const char *sys, struct hp_host *h);
/*
 * The CPU packages' energy counter from RAPL under the sysfs root sys
 * (normally "/sys": SYS/class/powercap/intel-rapl:N/energy_uj, the
 * packages only, not their subdomains), summed, in joules.  0, or
 * HP_ENOENT when none is readable (no RAPL, or not allowed: recent
 * kernels let only root read it).
 */
int hp_host_rapl_energy_j(const char *sys, double *joules);
/* Detect this host from /proc and sysfs; 0, or HP_EIO if /proc is not
 * readable (h is filled with what could be found).  h->threads is 0. */
int hp_host_detect(struct hp_host *h, struct hp_error *err);
/* Copy a host's figures into a catalog's CPU type and mark it detected. */
void hp_host_apply(const struct hp_host *h, struct hp_device_type *t);

/*
 * A host file: what hetpool knows of one host at one thread count, kept
 * in STATE/hosts/KEY.json (STATE: $HETPOOL_STATE_DIR, else
 * $XDG_STATE_HOME/hetpool, else ~/.local/state/hetpool).
 */
struct hp_host_file {
	char key[160];
	struct hp_host host;
	struct hp_host_peaks peaks; /* peaks.when "": not measured */
	struct hp_host_calib calib;
};

/* The host file's key for h at its threads: model name, ISA and threads
 * in lowercase letters, digits and '-' ("amd-epyc-avx2-t1"). */
void hp_host_key(const struct hp_host *h, char *buf, size_t n);
/* The state folder into buf (see struct hp_host_file); HP_ENOENT when
 * neither variable nor $HOME is set, HP_ETOOBIG when it does not fit. */
int hp_state_dir(char *buf, size_t n, struct hp_error *err);
/* STATE/hosts/KEY.json for h (state: a state folder, NULL: the default). */
int hp_host_file_path(const char *state, const struct hp_host *h, char *buf,
		      size_t n, struct hp_error *err);
/* An empty host file for h: its key and description, nothing measured. */
void hp_host_file_init(struct hp_host_file *f, const struct hp_host *h);
/*
 * Parse a host file's JSON text; path only names it in messages.
 * HP_EPARSE "PATH: what" for malformed JSON, a missing or mistyped field,
 * a figure out of range.
 */
int hp_host_file_parse(const char *text, size_t len, const char *path,
		       struct hp_host_file *f, struct hp_error *err);
/* Read one; HP_ENOENT when there is none. */
int hp_host_file_load(const char *path, struct hp_host_file *f,
		      struct hp_error *err);
/* The JSON text of f (caller frees); NULL on HP_ENOMEM. */
char *hp_host_file_json(const struct hp_host_file *f);
/* Write f to path (its folders made, replaced atomically). */
int hp_host_file_save(const char *path, const struct hp_host_file *f,
		      struct hp_error *err);
/*
 * Put what the host file for this host at h->threads knows into the
 * catalog's CPU types (after hp_host_apply()): threads, caches, measured
 * peaks, calibration.  state: NULL for the default folder.  No host file
 * is no error (0: the types keep the detected figures); 1 when one was
 * applied; a negative code for an unreadable or malformed file (the
 * detected figures are in the types all the same).
 */
int hp_host_file_apply_catalog(const char *state, const struct hp_host *h,
			       struct hp_catalog *cat, struct hp_error *err);

#ifdef __cplusplus
}
#endif
#endif /* HETPOOL_DEVICE_H */
