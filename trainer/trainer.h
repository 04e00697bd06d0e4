/*
 * trainer.h - internals of hetpool-train, the data-parallel trainer: the
 * options main.c parses, the communicator (MPI between ranks, and NCCL for
 * the gradients of GPU ranks where the build has it) and the training loop
 * (loop.c).  Nothing here is part of libhetpool: MPI and NCCL stay out of
 * the library and out of the hetpool CLI.  docs/trainer.md is the design.
 */
#ifndef HP_TRAINER_H
#define HP_TRAINER_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "hetpool/engine.h"
#include "hetpool/train.h"

/* Exit statuses (docs/trainer.md). */
#define TR_EXIT_OK 0
#define TR_EXIT_FAIL 1
#define TR_EXIT_USAGE 2
#define TR_EXIT_CANCELLED 143 /* SIGTERM: 128 + 15, as a shell reports */

#define TR_MAX_RANKS 4096

struct tr_opts {
	const char *model;	/* path of a hetpool spec, or an ONNX CNN */
	int64_t input_shape[3]; /* --input-shape C,H,W for ONNX; 0: its own */
	const char *data;	/* "fashion-mnist", "synthetic" or a folder */
	const char *out;
	const char *devices;	   /* "cpu,cuda,..." or one for all; NULL */
	const char *local_batches; /* NULL: even */
	int64_t batch;
	int64_t steps; /* 0: from epochs */
	double epochs;
	uint64_t seed;
	int threads; /* 0: automatic */
	enum hp_optimizer opt;
	double momentum, weight_decay;
	struct hp_lr_plan lr; /* total_steps and global_batch set later */
	double stop_div;      /* 0: off */
	int64_t eval_every;   /* 0: only at the end */
	int64_t eval_samples; /* 0: the whole test set */
	int64_t ckpt_every;   /* 0: only at the end */
	bool resume;
	bool overwrite; /* start over in a --out that holds a run */
	bool rebalance;
	int rebal_window;
	double rebal_threshold;
	int rebal_memory;   /* windows a rank's speed is averaged over */
	double max_seconds; /* 0: none */
	double stall_s;	    /* --stall-timeout: -1 auto, 0 off */
	bool cpu_fallback;
	int64_t synthetic_samples; /* training samples of --data synthetic */
	const char *estimator, *catalog; /* energy prediction; NULL: shipped */
};

/* ---- the communicator (comm.c) ---- */

struct tr_comm {
	int rank, size;
	int local_rank, local_size; /* among the ranks on this host */
	bool mpi;		    /* MPI_Init was called */
	char host[64];
};

/*
 * Join the job: MPI when a launcher started us (mpirun, srun), else a
 * single rank without MPI.  Returns 0, or -1 with a message in msg.
 */
int tr_comm_init(struct tr_comm *c, int *argc, char ***argv, char *msg,
		 size_t n);
void tr_comm_finalize(struct tr_comm *c);
/* End every rank now (a rank failed mid-run). */
void tr_comm_abort(struct tr_comm *c, int status) __attribute__((noreturn));
/* In place: buf[i] = sum over ranks. */
int tr_allreduce_f32(struct tr_comm *c, float *buf, int64_t n);
int tr_allreduce_f64(struct tr_comm *c, double *buf, int n);
/* The largest v over ranks. */
int tr_allreduce_max_int(struct tr_comm *c, int *v);
/* all gets size * n doubles, rank r's n at all + r * n. */
int tr_allgather_f64(struct tr_comm *c, const double *mine, int n, double *all);
/* all gets size * n bytes, rank r's n at all + r * n. */
int tr_allgather_bytes(struct tr_comm *c, const void *mine, int n, void *all);
int tr_bcast(struct tr_comm *c, void *buf, int64_t n, int root);

/* ---- NCCL between GPU ranks (nccl.c; without NCCL, tr_nccl_available()
 * is false and the trainer reduces over MPI) ---- */

struct tr_nccl;
/* true when the build has NCCL */
bool tr_nccl_available(void);
/* A communicator over all ranks, each on CUDA device `dev`; the unique id
 * goes from rank 0 to the others over MPI.  NULL with err set. */
struct tr_nccl *tr_nccl_new(struct tr_comm *c, int dev, struct hp_error *err);
/* In place on the device: buf = sum over ranks of weight_r * buf_r. */
int tr_nccl_allreduce_weighted(struct tr_nccl *n, void *buf, int64_t count,
			       float weight, void *stream,
			       struct hp_error *err);
void tr_nccl_free(struct tr_nccl *n);

/* ---- the loop (loop.c) ---- */

/* Set by SIGTERM / SIGINT: stop at the next step boundary. */
extern volatile sig_atomic_t tr_stop_signal;

/* Train as o says; returns the exit status. */
int tr_run(const struct tr_opts *o, struct tr_comm *c);

/* ---- the stall watchdog (watchdog.c) ---- */

/* Start watching this rank: stall_s > 0 a fixed limit, < 0 automatic,
 * 0 no watch.  -1 if the thread cannot start. */
int tr_watchdog_start(double stall_s, int rank);
/* A step completed (arms the watch at the first); its wall time. */
void tr_watchdog_step(long long step, double step_s);
/* Progress that is not a step (an evaluation's batch, a checkpoint). */
void tr_watchdog_beat(void);
void tr_watchdog_stop(void);

/* "hetpool-train: " + message, on stderr, escaped, one line. */
void tr_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void tr_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
