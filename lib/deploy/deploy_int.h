/*
 * deploy_int.h - internals of lib/deploy shared by its files: the context,
 * the backends' ops table (one struct of function pointers each backend
 * fills, as curl's vtls backends do), the launch file the job's helpers
 * read, outside commands, files written atomically, the job lock, the
 * state file, SHA-256, and the pure parsers the tests and fuzzers reach.
 */
#ifndef HP_DEPLOY_INT_H
#define HP_DEPLOY_INT_H

#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "hetpool/deploy.h"
#include "util/sha256.h"

struct hp_deploy {
	char jobs_dir[HP_DEPLOY_PATH_MAX];
	char hetpool[HP_DEPLOY_PATH_MAX];
	char *mpirun, *sbatch, *squeue, *sacct, *scancel, *kubectl, *dpkg_query;
	double grace_s, cmd_timeout_s, linger_s;
};

/* Files of a job directory. */
#define HP_JOB_FILE "job.json"
#define HP_JOB_LOCK "job.lock"
#define HP_PLAN_FILE "plan.json"
#define HP_LAUNCH_FILE "launch.json"
#define HP_STAGE_FILE "stage.json"
#define HP_LAUNCHER_LOG "logs/launcher.log"

/* ---- the launch file (JOBDIR/launch.json): what the helpers run */

struct hp__launch_rank {
	char node[HP_NAME_MAX];
	char type[HP_TYPE_MAX];
	bool gpu;
	int comp, local_rank, gpu_index;
	int64_t local_batch;
	char cuda[64];	   /* CUDA_VISIBLE_DEVICES the plan gives it (local);
			      "" for CPU ranks; "-" when the node decides */
	char **gpu_models; /* mpi: the names its GPU type goes by (the
			      catalog's name and aliases), so that the node
			      finds the gpu_index-th GPU of that type among
			      its own; NULL: cuda as it is */
	int *cpus;	   /* local: CPUs to pin it to; NULL otherwise */
	int ncpus;
	int threads;			 /* 0: the trainer's default */
	enum hp_net_transport transport; /* its node's, as the plan says */
};

struct hp__launch_comp {
	char type[HP_TYPE_MAX];
	char gres[HP_TYPE_MAX]; /* Slurm GRES type; "" for CPU */
	bool gpu;
	int per_node, nnodes, first_rank, nranks;
	int64_t mem_mib; /* host memory a rank asks for; 0: the site's
			    default (hp__comp_mem_mib()) */
};

/* Host memory (MiB) one rank of a CPU component asks a cluster for: its
 * predicted peak (the plan's memory_bytes) with a quarter over it (the
 * estimator's memory errors, a re-split that moves samples to the rank),
 * and HP__HOST_MEM_MIB for what the trainer holds besides (the dataset,
 * its libraries, MPI).  0 for a GPU component (its model lives on the
 * GPU) or one whose plan does not say. */
#define HP__MEM_MARGIN 1.25
#define HP__HOST_MEM_MIB 1024
int64_t hp__comp_mem_mib(const struct hp_plan_comp *pc);

struct hp__launch {
	char id[HP_JOB_ID_MAX];
	enum hp_backend backend;
	char jobdir[HP_DEPLOY_PATH_MAX];
	char hetpool[HP_DEPLOY_PATH_MAX];
	char **stage_argv; /* run once before the workers; NULL: none (or
			      in-process for local) */
	char stage_manifest[HP_DEPLOY_PATH_MAX]; /* "" when no staging */
	char stage_dest[HP_DEPLOY_PATH_MAX];
	char **launcher; /* what the supervisor starts */
	char **trainer;	 /* what each rank execs */
	int ndev_arg;	 /* index in trainer of the --devices value */
	bool cpu_fallback;
	double grace_s;
	/* a launcher still running this long after every rank has ended is
	 * stuck (hp_deploy_config.linger_s); one still running this long
	 * times RESULTS_LINGER after the trainer wrote its results, ranks
	 * elsewhere unseen, too */
	double linger_s;
	char squeue[HP_DEPLOY_PATH_MAX]; /* for the Slurm batch step */
	struct hp__launch_rank *ranks;
	int nranks;
	struct hp__launch_comp *comps;
	int ncomps;
	char slurm_mpi[16];
};

void hp__launch_release(struct hp__launch *l);
/* Parse launch.json's text; HP_EPARSE on anything out of place. */
int hp__launch_parse(const char *text, size_t len, struct hp__launch *out,
		     struct hp_error *err);
int hp__launch_load(const char *jobdir, struct hp__launch *out,
		    struct hp_error *err);
json_t *hp__launch_json(const struct hp__launch *l);

/* ---- backends */

/* Everything a backend needs at submit time. */
struct hp__submit {
	struct hp_deploy *d;
	const struct hp_plan *plan;
	const struct hp_train_opts *train;
	const struct hp_submit_opts *opts;
	struct hp_job *job;	  /* the state, written by the caller */
	struct hp__launch launch; /* filled by the backend's prepare */
};

struct hp__backend_ops {
	const char *name;
	/* Check the plan and options fit the backend: HP_EINVAL with a
	 * message when not (nothing written yet). */
	int (*check)(struct hp__submit *s, struct hp_error *err);
	/* Fill s->launch and write the backend's own files into the job
	 * directory (hostfile, batch script, manifests). */
	int (*prepare)(struct hp__submit *s, struct hp_error *err);
	/* Start the job; record its handle (pid, Slurm id) in s->job. */
	int (*start)(struct hp__submit *s, struct hp_error *err);
	/* Bring a job that has not ended up to date (called with no lock
	 * held; state changes go through hp__job_update()). */
	int (*refresh)(struct hp_deploy *d, struct hp_job *job,
		       struct hp_error *err);
	/* Stop it; the job ends cancelled. */
	int (*cancel)(struct hp_deploy *d, struct hp_job *job,
		      struct hp_error *err);
};

/* Shared by the backends (deploy.c): the trainer's argv (into
 * l->trainer, its --devices index into l->ndev_arg), the launch file's
 * common parts, writing it. */
int hp__trainer_argv(const struct hp__submit *s, const char *trainer,
		     const char *model, const char *data, const char *out,
		     struct hp__launch *l, struct hp_error *err);
int hp__launch_fill(struct hp__submit *s, struct hp_error *err);
int hp__launch_write(struct hp__submit *s, struct hp_error *err);
/* The full path of program name on PATH (or name itself when it holds a
 * '/'), into buf; false when there is none. */
bool hp__which(const char *name, char *buf, size_t n);

extern const struct hp__backend_ops hp__backend_local;
extern const struct hp__backend_ops hp__backend_mpi;
extern const struct hp__backend_ops hp__backend_slurm;
extern const struct hp__backend_ops hp__backend_k8s;
const struct hp__backend_ops *hp__backend(enum hp_backend b);

/* Shared by local and mpi: the supervisor's backend parts. */
int hp__super_start(struct hp__submit *s, struct hp_error *err);
int hp__super_refresh(struct hp_deploy *d, struct hp_job *job,
		      struct hp_error *err);
int hp__super_cancel(struct hp_deploy *d, struct hp_job *job,
		     struct hp_error *err);

/* How a job's launcher (mpirun, srun) ended, as its waiters see it. */
struct hp__run_end {
	int status;	   /* its exit status, or 128 + the signal */
	bool stuck;	   /* it outlived its ranks and was stopped */
	double after_s;	   /* then: how long it was given */
	const char *after; /* then: after what */
};
/* A launcher is also stuck when it runs this many times linger_s after
 * the trainer wrote its results (ranks elsewhere, not seen end). */
#define HP_RESULTS_LINGER 6

/* ---- outside commands */

/* Most bytes of a command's output kept (each stream). */
#define HP_CMD_OUT_MAX (4u << 20)

/*
 * Run argv (argv[0] found on PATH) with stdin from /dev/null, wait at most
 * timeout_s, and keep its stdout in out and stderr in errout (either may
 * be NULL; capped at HP_CMD_OUT_MAX).  *status gets the exit status, or
 * 128 + the signal.  Thread-safe.  HP_EIO when it cannot start, HP_EIO
 * when it runs over timeout_s (then it is killed).
 */
int hp__run(char *const argv[], double timeout_s, struct hp_buf *out,
	    struct hp_buf *errout, int *status, struct hp_error *err);
/*
 * Start argv in a session of its own with stdin /dev/null and stdout and
 * stderr appended to log; *pid gets its pid.  pgroup: a new process group
 * instead of a session (so the caller can signal it with its children).
 */
int hp__spawn(char *const argv[], const char *log, bool session, pid_t *pid,
	      struct hp_error *err);
/* The start time of process pid (clock ticks since boot), 0 when it is not
 * running (absent or a zombie). */
unsigned long long hp__proc_start(long pid);
/* True when pid runs and started at start (a reused pid is not it); a
 * start of 0 (none recorded) is never it. */
bool hp__proc_alive(long pid, unsigned long long start);
/* argv as one line for messages ("mpirun -np 2 ..."), cut to n. */
const char *hp__argv_str(char *const argv[], char *buf, size_t n);
/* The last non-empty line of text (for reasons), escaped, into buf. */
const char *hp__last_line(const char *text, char *buf, size_t n);
/* src's bytes into the temporary of af (hp_atomic_write() removes it
 * when a write fails). */
int hp__copy_into(const char *src, struct hp_atomic_file *af,
		  struct hp_error *err);
/* The line of a log that says what went wrong: the first that reads as an
 * error (the trainer's "hetpool-train: ..." but not its warnings and
 * notes, or one with "error", "Could not", "refused", ...), else the last
 * that is not a message box's frame ("-----") or blank. */
const char *hp__telling_line(const char *text, char *buf, size_t n);
/* Rank k's log's telling line into line; true when it is the trainer's
 * error (not a warning or a note), else line is left empty.  The launcher names
 * the first rank to exit, which need not be the one that said why: the
 * trainer's ranks agree on a set-up failure and only the lowest failing one
 * prints it. */
bool hp__rank_says(const char *jobdir, int k, char *line, size_t n);
/* The telling line of the log at path into line ("" when it cannot be
 * read); true when it is hetpool's own error: the trainer's, or a node
 * step's ("hetpool: _stage: ..."). */
bool hp__log_says(const char *path, char *line, size_t n);

/* A NULL-terminated argv built by appending (strings are copied). */
struct hp__argv {
	char **v;
	int n, alloc;
	bool oom;
};
void hp__argv_add(struct hp__argv *a, const char *s);
void hp__argv_addf(struct hp__argv *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Hand over the array (NULL after an allocation failed). */
char **hp__argv_take(struct hp__argv *a);
void hp__argv_free(char **v);
char **hp__argv_dup(char *const v[]);

/* ---- files */

/* json_dumps(o) written atomically with hp_write_file_atomic() (o is not
 * consumed). */
int hp__write_json(const char *path, const json_t *o, struct hp_error *err);
/* snprintf into buf, HP_ERANGE (with err) when it does not fit. */
int hp__path(char *buf, size_t n, struct hp_error *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Take the job's lock (flock on DIR/job.lock); returns the fd to pass to
 * hp__unlock(), or a negative code. */
int hp__lock(const char *jobdir, struct hp_error *err);
void hp__unlock(int fd);
/* Read a whole JSON file (at most max bytes). */
json_t *hp__read_json(const char *path, size_t max, struct hp_error *err);

/* ---- the state file */

int hp__job_load(const char *jobdir, struct hp_job *out, struct hp_error *err);
/* Write job->dir/job.json atomically (call with the lock held). */
int hp__job_save(const struct hp_job *job, struct hp_error *err);
/*
 * Move the job in dir to state (with reason; NULL keeps it) under its
 * lock, unless it is already there or further (a terminal state is
 * final; states only move forward).  fn (may be NULL) changes other
 * fields first, on the freshly loaded job.  out (may be NULL) gets the
 * job as saved.  Returns 0 (also when nothing changed).
 */
int hp__job_update(const char *jobdir, int state, const char *reason,
		   void (*fn)(struct hp_job *, void *), void *ud,
		   struct hp_job *out, struct hp_error *err);
/* Read the trainer's results and what each rank ran on into the job (a
 * results file too big to keep whole loses its per-rank lists). */
void hp__job_collect(struct hp_job *job);
/* The "state" of the trainer's JOBDIR/out/results.json ("completed",
 * "stopped", "cancelled"; "" when it has none) into buf, and its
 * "stop_reason" ("" when null) into why (may be NULL); false when there is
 * no readable results file. */
bool hp__results_state(const char *jobdir, char *buf, size_t n, char *why,
		       size_t wn);
/*
 * The outcome of a job whose launcher (argv0: "mpirun", "srun", a path)
 * was stopped because it did not exit after_s seconds after `after`
 * ("every rank had ended"): from the trainer's results file, succeeded
 * (completed, or stopped early), cancelled (the trainer stopped on a
 * SIGTERM) or failed (no results); reason (n bytes) says so.
 */
enum hp_job_state hp__stuck_outcome(const char *jobdir, const char *argv0,
				    double after_s, const char *after,
				    char *reason, size_t n);
/* Whether moving from a to b goes forward. */
bool hp__state_forward(enum hp_job_state a, enum hp_job_state b);
double hp__wall_now(void);

/* ---- SHA-256 */

/* (the hash itself is in util/sha256.h) */
/* The SHA-256 of a file and its size. */
int hp__sha256_file(const char *path, char hex[65], int64_t *size,
		    struct hp_error *err);

/* ---- staging */

/*
 * Write JOBDIR/stage.json for data ("fashion-mnist": the files the Debian
 * package dataset-fashion-mnist installed, found with dpkg-query; a
 * folder: its four Fashion-MNIST IDX files; "synthetic": nothing to
 * stage, *staged false).  dest_root/HASH (HASH: the first 16 hex digits of
 * the manifest's own checksum) is where the nodes put it: into dest.
 */
int hp__stage_manifest(struct hp_deploy *d, const char *data,
		       const char *jobdir, const char *dest_root, bool *staged,
		       char *dest, size_t ndest, struct hp_error *err);
/* The four files, by the names the trainer looks for. */
extern const char *const hp__idx_names[4];

/* ---- the local host */

struct hp__gpu {
	char model[64]; /* "Tesla T4" */
	char bus[32];	/* "0000:3b:00.0" */
};
/* Parse one /proc/driver/nvidia/gpus/BUS/information text. */
int hp__gpu_parse_info(const char *text, struct hp__gpu *out);
/*
 * Whether a CUDA_VISIBLE_DEVICES of this value (NULL: unset) leaves CUDA
 * no device: set and empty, or its first entry not an index or a UUID
 * ("-1", "none", Slurm's "NoDevFiles"; CUDA stops at the first entry that
 * is not a device).  The way a user hides this host's GPUs from hetpool.
 */
bool hp__cuda_hides_all(const char *value);
/* This host's NVIDIA GPUs in PCI bus order (the order CUDA numbers them
 * with CUDA_DEVICE_ORDER=PCI_BUS_ID); returns how many (at most max).
 * None when CUDA_VISIBLE_DEVICES hides them all (hp__cuda_hides_all());
 * a list of devices in it is not applied (CUDA's own order may differ
 * from the bus order). */
int hp__gpus_detect(struct hp__gpu *out, int max);
/*
 * The CUDA index (the place in gpus[], bus order) of the index-th GPU
 * (from 0) whose model matches one of models (NULL-terminated names, by
 * hp_device_names_match()); -1 when there are not that many.  *matches
 * (may be NULL): how many match.
 */
int hp__gpu_pick(const struct hp__gpu *gpus, int n, char *const *models,
		 int index, int *matches);
/*
 * This host's network as sysfs shows it (sys_root: "/sys", or a copy of
 * its layout for tests).  rdma: an InfiniBand or RoCE port is ACTIVE
 * (class/infiniband/DEV/ports/P/state), rdma_gbps the fastest such port's
 * rate ("100 Gb/sec (4X EDR)"); eth_gbps the fastest physical interface
 * that is up (class/net/IF with a device link, operstate "up", speed in
 * Mbit/s; virtual and loopback ones and a speed of -1 are left out).  A
 * figure not found is 0.
 */
struct hp__net {
	bool rdma;
	double rdma_gbps, eth_gbps;
	char rdma_dev[64], eth_if[64];
};
void hp__net_detect(const char *sys_root, struct hp__net *out);
/* Whether an NVIDIA driver is loaded here. */
bool hp__nvidia_driver(void);
/* The CPUs this process may run on, ascending; returns how many. */
int hp__cpus_allowed(int *cpus, int max);
/*
 * Split cpus (ncpus) among nranks ranks: rank k gets a contiguous share
 * (the first ranks one more when it does not divide); with more ranks
 * than CPUs, rank k gets CPU k mod ncpus.  first[k], count[k] index cpus.
 */
void hp__cpus_split(int ncpus, int nranks, int *first, int *count);

/* ---- names */

/* A host name label: [A-Za-z0-9._-], 1..63, not starting with '-' or '.'. */
bool hp__name_ok(const char *s);
/* A device type: [a-z0-9._-], 1..31, starting with a letter or digit. */
bool hp__type_ok(const char *s);
/* A path the job may use: absolute, no control characters, no "..". */
bool hp__path_ok(const char *s);
/* Look key up in a map "a=b,c=d" (validated: names as hp__type_ok or
 * label characters); copies the value or key itself when absent.
 * HP_EINVAL for a malformed map. */
int hp__map_get(const char *map, const char *key, char *out, size_t n,
		const char *what, struct hp_error *err);
/* This host's name (short), "localhost" when it has none. */
void hp__hostname(char *buf, size_t n);

/* ---- slurm */

/* What squeue or sacct say about a job's components, summed up. */
struct hp__slurm_state {
	int ncomps; /* components seen */
	int pending, running, completed, failed, cancelled;
	char first_bad[64]; /* the first failed component's state */
	char reason[128];   /* its reason, or the pending reason */
	int exit_code;	    /* the first non-zero exit code seen, else 0 */
};
/*
 * Parse `squeue -h -t all -j ID -o %i|%T|%r` or `sacct -n -P -o
 * JobID,State,ExitCode` output for job id (its lines "ID", "ID+K",
 * "ID.batch"... ; other jobs' lines are ignored).  Returns 0 with the
 * counts (ncomps 0 when the job is not there), HP_EPARSE on a line that
 * is not of that form.
 */
int hp__slurm_parse_squeue(const char *text, const char *id,
			   struct hp__slurm_state *st, struct hp_error *err);
int hp__slurm_parse_sacct(const char *text, const char *id,
			  struct hp__slurm_state *st, struct hp_error *err);
/* The job state a summed-up Slurm state means (queued while anything is
 * pending, ...); reason filled for failed and queued. */
enum hp_job_state hp__slurm_job_state(const struct hp__slurm_state *st,
				      char *reason, size_t n);
/* The batch script for a job (the text sbatch gets). */
char *hp__slurm_script(const struct hp__submit *s, struct hp_error *err);
/* --time's margin over the predicted duration (the estimator's error,
 * staging, the ranks' start), and the least --time it gives (s). */
#define HP__SLURM_TIME_FACTOR 1.5
#define HP__SLURM_TIME_LEAST_S 600.0
/*
 * The time limit (sbatch --time, minutes) of a job with a deadline
 * window_s from now whose training is predicted to take predicted_s:
 * HP__SLURM_TIME_FACTOR x predicted_s, at least HP__SLURM_TIME_LEAST_S,
 * rounded up to a minute, and no longer than the window (rounded down, at
 * least 1).  0, none, without a deadline (window_s <= 0) or a prediction
 * (NaN): the site's limits apply.  No --time-min: Slurm's backfill may
 * start a job at its --time-min, which would take the margin away.
 */
int64_t hp__slurm_time_limit_min(double predicted_s, double window_s);

/* ---- kubernetes */

/* The port the workers' sshd listens on: the headless Service's, and what
 * hp_deploy_wait_hosts() knocks on. */
#define HP__K8S_SSH_PORT 22

/* The manifests (a JSON list of objects, kind "List") for a job. */
json_t *hp__k8s_manifests(const struct hp__submit *s, struct hp_error *err);
/* From `kubectl get jobs.batch -l hetpool.io/job=ID -o json` (Indexed
 * Jobs) or `kubectl get mpijobs.kubeflow.org ...` (an MPIJob), the job's
 * state (queued when nothing says more) and a reason. */
int hp__k8s_parse_status(const char *text, size_t len, const char *id,
			 enum hp_job_state *state, char *reason, size_t n,
			 struct hp_error *err);

#endif
