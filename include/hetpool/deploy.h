/*
 * deploy.h - run a plan and follow it: one directory per job (the plan,
 * the launch commands as argv arrays, logs per rank, the trainer's
 * metrics, checkpoints and results, the job's state), data staging (copy
 * and checksum the dataset into a node-local folder before the workers
 * start), and four backends behind one ops table: local (processes on
 * this host, pinned), mpi (mpirun over a hostfile), slurm (sbatch, a
 * heterogeneous job for mixed GPU types, squeue and sacct, scancel) and
 * kubernetes (manifests, applied with kubectl when a cluster is set).
 * docs/deploy.md describes the job directory, the states and the backends.
 *
 * A job's state is one of queued, starting, running, succeeded, failed,
 * cancelled; it only moves forward, and a terminal state is final.  The
 * state file is replaced atomically under the job's lock (flock on
 * JOBDIR/job.lock), so threads and processes may act on jobs at once.
 *
 * Thread safety: a struct hp_deploy is read-only once made and may be
 * shared by threads.  Nothing here prints or exits; outside commands run
 * as argv arrays through posix_spawn, never through a shell.
 *
 * Ownership: hp_plan_parse() fills a plan the caller releases with
 * hp_plan_release(); hp_deploy_new() returns a context freed with
 * hp_deploy_free(); hp_deploy_status() and hp_deploy_list() fill jobs
 * released with hp_job_release() (hp_job_list_free() for a list);
 * functions returning char * return text the caller frees.
 */
#ifndef HETPOOL_DEPLOY_H
#define HETPOOL_DEPLOY_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hetpool/device.h"
#include "hetpool/pool.h"
#include "hetpool/util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest plan file read, most ranks and device groups in a plan. */
#define HP_PLAN_MAX_BYTES (16u << 20)
/* Most a plan's memory_bytes may say (1 PB: a typo's guard, not a
 * device's). */
#define HP_PLAN_MAX_MEMORY 1e15
#define HP_PLAN_MAX_RANKS 4096
#define HP_PLAN_MAX_GROUPS 4096
/* Longest node name (a host name label), device type, job id. */
#define HP_NAME_MAX 64
/* Whether a node name can be a backend's host name (mpirun's hostfile,
 * Slurm's node list, Kubernetes' node): 1 to HP_NAME_MAX - 1 letters,
 * digits, '.', '_' and '-', not first '.' or '-'. */
bool hp_deploy_host_name_ok(const char *name);
#define HP_TYPE_MAX 32
#define HP_JOB_ID_MAX 32
/* Longest path the job directories may have (jobs folder + id + file). */
#define HP_DEPLOY_PATH_MAX 1024

/* ---- the plan */

/* Devices of one type on one node, all at one local batch (one element of
 * the recommender's "devices"). */
struct hp_plan_group {
	char node[HP_NAME_MAX];
	char type[HP_TYPE_MAX]; /* "cpu" is a CPU host; any other, a GPU */
	int count;
	int64_t local_batch;
	double grad_weight; /* local_batch / global_batch */
	/* its node's network ("net_transport", optional: the recommender
	 * writes the pool's, resolved); HP_NET_AUTO when not said */
	enum hp_net_transport transport;
	/* "memory_bytes" (optional): the predicted peak memory of each of
	 * its devices at local_batch, as the recommender writes it; NaN
	 * when not given */
	double memory_bytes;
};

/* One node of the plan, in order of first appearance. */
struct hp_plan_node {
	char name[HP_NAME_MAX];
	int nranks;
	enum hp_net_transport transport; /* its groups'; they must agree */
};

/*
 * One component: the nodes that hold the same number of devices of one
 * type.  A Slurm job has one component per element (a heterogeneous job
 * when there are more), a Kubernetes job one set of workers.
 */
struct hp_plan_comp {
	char type[HP_TYPE_MAX];
	bool gpu;
	int per_node; /* ranks (devices) on each of its nodes */
	int nnodes;
	int first_rank, nranks; /* its ranks are contiguous */
	/* the most memory_bytes of its groups: what one of its ranks needs
	 * on its device; NaN when a group does not say */
	double memory_bytes;
};

/* One rank: one device.  Ranks are ordered by component, then node, then
 * device (the order Slurm gives a heterogeneous step's tasks). */
struct hp_plan_rank {
	int group;	/* index in groups */
	int node;	/* index in nodes */
	int comp;	/* index in comps */
	int local_rank; /* among the ranks on its node */
	int gpu_index;	/* GPU ranks: among its node's ranks of its type */
	bool gpu;
	int64_t local_batch;
	double grad_weight;
};

struct hp_plan {
	struct hp_plan_group *groups;
	int ngroups;
	struct hp_plan_node *nodes;
	int nnodes;
	struct hp_plan_comp *comps;
	int ncomps;
	struct hp_plan_rank *ranks;
	int nranks;
	int64_t global_batch;
	int64_t steps;	   /* the plan's training steps; 0 when not given */
	double lr_scale;   /* 1 when not given */
	char lr_rule[8];   /* "linear", "sqrt" or "none" */
	int64_t ref_batch; /* 0 when not given */
	int64_t warmup_steps;
	bool feasible; /* the recommender said it meets the deadline */
	double predicted_time_s; /* NaN when not given */
};

/*
 * Parse a plan: the JSON of `hetpool recommend --json` (its "choice"), or
 * one configuration object of it (a "pareto" element: "devices",
 * "global_batch", "lr", ...).  Each group's node is a host name label
 * (letters, digits, '-', '.', '_'; 1-63 characters), its type a device
 * id (lowercase letters, digits, '-', '.', '_'), count and local_batch
 * positive; the local batches must add up to global_batch (when given);
 * at most HP_PLAN_MAX_RANKS ranks.  A recommendation without a choice is
 * refused with its reason.  Bad input: HP_EPARSE with a message naming
 * the file (path; "plan" when NULL) and the field.  out is the caller's
 * (hp_plan_release()), left empty on failure.
 */
int hp_plan_parse(const char *text, size_t len, const char *path,
		  struct hp_plan *out, struct hp_error *err);
/* Read and parse a plan file (at most HP_PLAN_MAX_BYTES). */
int hp_plan_load(const char *path, struct hp_plan *out, struct hp_error *err);
/*
 * A plan of this host's CPU only: nranks CPU ranks on node, the global
 * batch split as evenly as it goes (the first ranks take one more).  For
 * a host whose CPU the recommender cannot choose (its power is not known).
 */
int hp_plan_cpu_host(const char *node, int nranks, int64_t global_batch,
		     struct hp_plan *out, struct hp_error *err);
void hp_plan_release(struct hp_plan *p);
/* The plan as JSON text (the caller frees it); NULL on ENOMEM. */
char *hp_plan_json(const struct hp_plan *p);

/*
 * A pool of this host alone, as pool JSON text (hp_pool_parse(); the
 * caller frees it): one node named after the host (its short name), its
 * CPU as one "cpu" device, its NVIDIA GPUs (from the driver's /proc
 * files; none when CUDA_VISIBLE_DEVICES hides them all) as the catalog's
 * types (a GPU the catalog does not know is left out), its cores and memory.
 * Its network from sysfs: with an ACTIVE InfiniBand or RoCE port
 * (/sys/class/infiniband) the transport is "rdma" at the fastest such port's
 * rate; otherwise "auto" (hp_pool_node_transport(): socket with a GPU, tcp
 * without) at the fastest physical Ethernet link that is up
 * (/sys/class/net/IF/speed), else 10 Gbit/s.  Not known, and so fixed: PCIe 3
 * x16 inside, 10 us a message, a base power of 0 W (not counted).
 */
char *hp_deploy_host_pool(const struct hp_catalog *cat, struct hp_error *err);

/* ---- jobs */

enum hp_job_state {
	HP_JOB_QUEUED = 0,
	HP_JOB_STARTING = 1, /* staging the data, starting the workers */
	HP_JOB_RUNNING = 2,
	HP_JOB_SUCCEEDED = 3,
	HP_JOB_FAILED = 4,
	HP_JOB_CANCELLED = 5,
};
const char *hp_job_state_name(enum hp_job_state s);
int hp_job_state_parse(const char *s, enum hp_job_state *out);
bool hp_job_state_terminal(enum hp_job_state s);

enum hp_backend {
	HP_BACKEND_LOCAL = 0,
	HP_BACKEND_MPI = 1,
	HP_BACKEND_SLURM = 2,
	HP_BACKEND_KUBERNETES = 3,
};
#define HP_BACKEND_COUNT 4
const char *hp_backend_name(enum hp_backend b);
int hp_backend_parse(const char *s, enum hp_backend *out);

/* What one rank ran on, as its launcher recorded it (logs/rank-K.json). */
struct hp_job_rank {
	int rank;
	char host[HP_NAME_MAX]; /* the host it ran on */
	char node[HP_NAME_MAX]; /* the Slurm node (or the plan's node) */
	char device[8];		/* "cpu" or "cuda" */
	char requested[8];	/* what the plan asked for */
	char cuda_visible_devices[64];
	char note[320]; /* why device differs from requested, or "" */
	long pid;
};

/* A job as its state file (JOBDIR/job.json) holds it. */
struct hp_job {
	char id[HP_JOB_ID_MAX];
	char dir[HP_DEPLOY_PATH_MAX];
	char name[HP_NAME_MAX]; /* the user's label, or "" */
	enum hp_backend backend;
	enum hp_job_state state;
	char reason[512]; /* why it failed, was cancelled or waits */
	double created_s, started_s, ended_s; /* Unix time; 0: not yet */
	int nranks;
	char model[256]; /* the model file's name */
	char data[256];	 /* "fashion-mnist", "synthetic" or the folder */
	bool cancel_requested;
	int exit_status; /* the launcher's exit status; -1 unknown */
	/* local, mpi: the supervisor process (and its start time, in clock
	 * ticks since boot, so a reused pid is not taken for it) */
	long pid;
	unsigned long long pid_start;
	/* slurm */
	char slurm_id[32];
	/* kubernetes */
	bool applied;
	char k8s_namespace[HP_NAME_MAX];
	/* when it ended: the trainer's results.json (JSON text, owned; NULL
	 * when none) and what each rank ran on */
	char *results;
	struct hp_job_rank *ranks;
	int nranks_seen;
};

void hp_job_release(struct hp_job *j);
void hp_job_list_free(struct hp_job *jobs, int n);
/*
 * Parse a state file's text into out (the caller's; hp_job_release()).
 * Unknown keys are ignored, bad values refused with HP_EPARSE.
 */
int hp_job_parse(const char *text, size_t len, struct hp_job *out,
		 struct hp_error *err);
/* The job as JSON text (the state file's keys); NULL on ENOMEM. */
char *hp_job_json(const struct hp_job *j);
/* A job id is 1-31 characters of [a-z0-9-], starting with a letter or
 * digit: true when id is one. */
bool hp_job_id_valid(const char *id);

/* ---- submitting and following jobs */

/* What the program that makes the context provides. */
struct hp_deploy_config {
	const char *jobs_dir; /* where job directories live (made if
				 missing) */
	const char *hetpool;  /* absolute path of the hetpool program: the
				 job's helpers run as `hetpool _supervise`,
				 `_rank`, `_stage` and `_slurm-batch` */
	/* outside programs; NULL: the name, found on PATH */
	const char *mpirun, *sbatch, *squeue, *sacct, *scancel, *kubectl,
	    *dpkg_query;
	double grace_s;	      /* cancel: SIGTERM, then SIGKILL after this
				 (default 10) */
	double linger_s;      /* a launcher (mpirun, srun) still running
				 this long after every rank has ended is
				 stuck: it is stopped and the job finished
				 from the trainer's results (default 10) */
	double cmd_timeout_s; /* most an outside command may take (60) */
};

struct hp_deploy;

/* A context; NULL with err set when a path is missing or unusable. */
struct hp_deploy *hp_deploy_new(const struct hp_deploy_config *cfg,
				struct hp_error *err);
void hp_deploy_free(struct hp_deploy *d);
/* The jobs folder (absolute). */
const char *hp_deploy_jobs_dir(const struct hp_deploy *d);

/* Trainer settings; zero (NULL) leaves a setting to the plan or to the
 * trainer's default. */
struct hp_train_opts {
	const char *model;     /* model file (spec JSON or ONNX): copied into
				  the job directory */
	const char *data;      /* "fashion-mnist", "synthetic", or a folder
				  holding the four Fashion-MNIST IDX files */
	int64_t steps, epochs; /* neither: the plan's steps */
	double lr;	       /* base rate at the reference batch */
	const char *lr_rule;   /* NULL: the plan's */
	int64_t ref_batch;     /* 0: the plan's */
	int64_t warmup_steps;  /* -1: the plan's */
	const char *optimizer; /* "sgd", "adam" */
	int64_t seed;	       /* -1: the trainer's */
	int64_t checkpoint_every;
	double max_seconds;
	/* hetpool-train --stall-timeout: the run ends when no step has
	 * completed for this long (s, 1..1e9); 0: the trainer's automatic
	 * limit (docs/trainer.md) */
	double stall_timeout_s;
	int threads; /* per rank; 0: the rank's share of its cores (local) */
	bool resume;
	/* A job id: its out/checkpoint (and metrics.jsonl) start this job's
	 * out/ and the trainer resumes from it (the trainer checks that the
	 * model, data, ranks, global batch, optimizer and seed match).  The
	 * job must have ended and have a checkpoint; not for Kubernetes,
	 * whose checkpoints are on its volume claim.  NULL: none. */
	const char *resume_from;
	/* > 0: a learning-rate range test instead of training: the rate
	 * rises exponentially from lr_range_min to lr_range_max over the
	 * steps and the run stops once the loss diverges (hetpool-train
	 * --lr-schedule exp-ramp --stop-on-divergence; lr is not used) */
	double lr_range_min, lr_range_max;
};
/* The defaults: everything unset (warmup_steps and seed -1). */
void hp_train_opts_init(struct hp_train_opts *t);

/* The Kubernetes launcher's default wait for its workers (seconds). */
#define HP_K8S_WORKER_WAIT_S 3600

enum hp_k8s_flavor {
	HP_K8S_AUTO = 0,    /* MPIJob when every worker is alike, else
			       Indexed Jobs */
	HP_K8S_MPIJOB = 1,  /* Kubeflow MPIJob (kubeflow.org/v2beta1) */
	HP_K8S_INDEXED = 2, /* Indexed Jobs + a headless Service */
};

struct hp_submit_opts {
	enum hp_backend backend;
	const char *name;      /* a label ([A-Za-z0-9._-], <= 63), or NULL */
	const char *trainer;   /* hetpool-train: must exist here for local,
				  mpi and slurm; the image's for kubernetes */
	const char *stage_dir; /* node-local staging root; NULL: the jobs
				  folder's .stage (local),
				  /tmp/hetpool-stage-UID (mpi, slurm),
				  /hetpool/data (kubernetes) */
	bool no_cpu_fallback;  /* a GPU rank on a node without an NVIDIA
				  driver, or whose GPUs CUDA_VISIBLE_DEVICES
				  hides, fails instead of training on the
				  CPU */
	const char *recommendation;   /* the recommender's JSON, kept as
					 JOBDIR/recommendation.json; or NULL */
	const struct hp_catalog *cat; /* product names for kubernetes; or
					 NULL */
	/* local: GPUs of this host, as "TYPE" per CUDA index in PCI bus
	 * order ("t4,t4"); NULL: detected (/proc/driver/nvidia) */
	const char *host_gpus;
	/* slurm */
	const char *partition, *account, *time_limit;
	const char *slurm_mpi; /* srun --mpi= (default pmix) */
	/* slurm: when the job must have ended, in Unix time (s); 0: no
	 * deadline.  sbatch gets --deadline (Slurm removes a job that
	 * cannot end by then) and, when time_limit is not given and the
	 * plan predicts the training's duration, a --time of that with a
	 * margin, ending no later (docs/deploy.md) */
	double deadline_at_s;
	const char *gres_map; /* "a100-80=a100,t4=tesla_t4": plan type to
				 GRES type (default: the same name) */
	/* kubernetes */
	const char *image; /* container image with hetpool, hetpool-train
			      and sshd (default hetpool:latest) */
	const char *k8s_namespace; /* default "default" */
	enum hp_k8s_flavor k8s_flavor;
	const char *product_map; /* "t4=Tesla-T4": plan type to the
				    nvidia.com/gpu.product label */
	const char *k8s_volume;	 /* a PersistentVolumeClaim (ReadWriteMany)
				    for the outputs; NULL: an emptyDir in
				    the pods, lost with them, so a job
				    without one is only written, never
				    applied (HP_EINVAL) */
	bool k8s_no_apply;	 /* write the manifests only */
	/* Indexed Jobs: how long the launcher waits for every worker's sshd
	 * to accept connections (pods waiting for GPUs or an image pull);
	 * 0: HP_K8S_WORKER_WAIT_S */
	double k8s_worker_wait_s;
};
void hp_submit_opts_init(struct hp_submit_opts *o);

/*
 * Submit a plan: make the job directory (complete before it appears under
 * its id), stage-manifest the data (checksums), write the plan, the model
 * and the backend's launch files, and start it.  The job's id is copied
 * into id (HP_JOB_ID_MAX bytes) as soon as the job exists, also when the
 * backend then fails: that job is left failed with the reason, its devices
 * released.  Returns 0, or a negative code with err set (bad options and
 * a plan the backend cannot run: HP_EINVAL, with id left "").
 */
int hp_deploy_submit(struct hp_deploy *d, const struct hp_plan *plan,
		     const struct hp_train_opts *train,
		     const struct hp_submit_opts *opts, char *id,
		     struct hp_error *err);

/*
 * A job's state into out (the caller's; hp_job_release()).  With refresh,
 * a job that has not ended is first brought up to date from its backend
 * (its supervisor, squeue and sacct, kubectl).  HP_ENOENT when there is no
 * such job.
 */
int hp_deploy_status(struct hp_deploy *d, const char *id, bool refresh,
		     struct hp_job *out, struct hp_error *err);
/*
 * A Kubernetes job's output is in its pods, not its folder: the kubectl
 * command (an argv array, NULL-terminated; hp_deploy_argv_free()) that
 * prints its launcher pod's log, which holds mpirun's and the ranks'
 * output, following it with follow.  HP_ESTATE for a job whose manifests
 * were written and not applied (no pod ran), HP_EINVAL for a job of
 * another backend.
 */
int hp_deploy_k8s_logs_argv(const struct hp_deploy *d, const struct hp_job *j,
			    bool follow, char ***argv, struct hp_error *err);
void hp_deploy_argv_free(char **argv);
/*
 * Every job, oldest first, into a new array (hp_job_list_free()).  A folder
 * without a state file is not a job (or one still being made) and is
 * passed over; one whose state file cannot be read or parsed is left out
 * of the list and, when damaged is not NULL, reported to it (the job's id
 * and why), so that a caller can say so rather than lose the job silently.
 */
typedef void hp_deploy_damaged_fn(const char *id, const char *why, void *ud);
int hp_deploy_list(struct hp_deploy *d, bool refresh, struct hp_job **out,
		   int *n, hp_deploy_damaged_fn *damaged, void *ud,
		   struct hp_error *err);
/*
 * Cancel a job: the backend is told to stop it (SIGTERM to its workers,
 * which stop at a step boundary; SIGKILL after grace_s; scancel; kubectl
 * delete) and the job ends cancelled once its processes are gone.  A job
 * that has already ended: HP_EINVAL naming its state.
 */
int hp_deploy_cancel(struct hp_deploy *d, const char *id, struct hp_error *err);

/*
 * Remove an ended job's folder and everything in it (logs, metrics,
 * checkpoints, results): HP_ESTATE while it has not ended, HP_ENOENT
 * when there is no such job.  The folder leaves the listing at once (it
 * is renamed, then removed).
 */
int hp_deploy_remove(struct hp_deploy *d, const char *id, struct hp_error *err);

/* Path of a job's file (rank >= 0: that rank's log; -1: the launcher's
 * log) into buf; HP_ERANGE when it does not fit. */
int hp_deploy_log_path(const struct hp_deploy *d, const char *id, int rank,
		       char *buf, size_t n, struct hp_error *err);

/* ---- the job's own steps (run by `hetpool _...` on the job's nodes) */

/*
 * Supervise a local or mpi job (the body of `hetpool _supervise JOBDIR`,
 * a process of its own): record itself, stage the data, start the
 * workers, wait, and record the outcome.  ready_fd (or -1) gets one byte
 * and is closed once the supervisor is recorded in the state file; *stop
 * turning non-zero (a SIGTERM handler) stops the workers: SIGTERM, then
 * SIGKILL after the grace time.  Returns 0 when the outcome was recorded.
 */
int hp_deploy_supervise(const char *jobdir, int ready_fd,
			volatile sig_atomic_t *stop, struct hp_error *err);

/*
 * Stage a dataset (the body of `hetpool _stage MANIFEST DEST`): copy each
 * file the manifest names into DEST (made if missing) unless a copy is
 * already there, and verify every copy's SHA-256 against the manifest.
 * Safe to run by several processes on one node at once (they take turns on
 * DEST/.lock).  A file whose copy does not match: HP_EIO naming it.
 */
int hp_deploy_stage(const char *manifest, const char *dest,
		    struct hp_error *err);
/*
 * hp_deploy_stage() that stops as soon as *stop turns non-zero (stop may
 * be NULL: never), whether it waits for another stager's lock on DEST or
 * copies or checksums a file: the file's temporary is removed and it
 * returns HP_ECANCELED.  *stop is read between reads of at most 64 KiB.
 * The library installs no signal handler: a program that wants SIGTERM
 * to stop staging sets the flag from its own (`hetpool _stage` does).
 */
int hp_deploy_stage_stoppable(const char *manifest, const char *dest,
			      volatile sig_atomic_t *stop,
			      struct hp_error *err);

/* How one rank is to be started (hp_deploy_rank_prepare()). */
struct hp_rank_exec {
	int rank;
	char **argv; /* the trainer's argv, NULL-terminated (owned) */
	char **env;  /* "NAME=VALUE" to set, NULL-terminated (owned) */
	int *cpus;   /* CPUs to pin it to (owned), or NULL */
	int ncpus;
	char log[HP_DEPLOY_PATH_MAX]; /* where its stdout and stderr go */
};
/*
 * Prepare this process to become rank K of the job in jobdir (the body of
 * `hetpool _rank JOBDIR`): K from the environment (OMPI_COMM_WORLD_RANK,
 * PMIX_RANK, SLURM_PROCID, HETPOOL_RANK; 0 for a one-rank job), the
 * rank's device (CUDA_VISIBLE_DEVICES from the plan, or the one Slurm gave
 * this task; the CPU, said so, when the node has no NVIDIA driver or
 * CUDA_VISIBLE_DEVICES hides every GPU), CPUs
 * and threads; writes JOBDIR/logs/rank-K.json.  environ is read, not changed.
 * out is the caller's (hp_rank_exec_release()).
 */
int hp_deploy_rank_prepare(const char *jobdir, struct hp_rank_exec *out,
			   struct hp_error *err);
void hp_rank_exec_release(struct hp_rank_exec *x);

/*
 * Run a Slurm batch job (the body of `hetpool _slurm-batch SCRIPT`, the
 * interpreter of the job's batch script): record the job starting, stage
 * the data on every node (srun per component), record it running, and run
 * the ranks (one srun over every component).  *exit_status gets the
 * status to exit with.
 */
int hp_deploy_slurm_batch(const char *script, volatile sig_atomic_t *stop,
			  int *exit_status, struct hp_error *err);

/*
 * Wait until every host named in a hostfile (each line's first word: HOST,
 * or HOST:PORT) accepts a TCP connection on its port (default 22, the
 * workers' sshd), not only resolves (the body of `hetpool _wait-hosts
 * HOSTFILE SECONDS`, the Kubernetes launcher's first step): HP_EIO naming
 * the first that does not within timeout_s, and what it last answered.
 */
int hp_deploy_wait_hosts(const char *hostfile, double timeout_s,
			 struct hp_error *err);

#ifdef __cplusplus
}
#endif
#endif /* HETPOOL_DEPLOY_H */
