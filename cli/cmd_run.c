/*
 * cmd_run.c - `hetpool run`: launch a plan (the JSON of `hetpool
 * recommend`, or a model from which the recommender makes one) through a
 * backend (local, mpi, slurm, kubernetes) and print the job's id.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "deploy_cli.h"
#include "hetpool/deploy.h"
#include "hetpool/pool.h"
#include "hetpool/recommend.h"
#include "hetpool/train.h"
#include "opt.h"

static const char help[] =
    "usage: hetpool run PLAN.json --model MODEL --data DATA [options]\n"
    "       hetpool run MODEL --data DATA --batch B --deadline D [--pool "
    "POOL.json]\n"
    "                   [--samples N] (--epochs E | --steps S) "
    "[options]\n"
    "\n"
    "Launch a training job and print its id.  PLAN.json is the JSON of\n"
    "'hetpool recommend --json' (its choice: devices per node, local "
    "batches,\n"
    "learning-rate rule); or give a MODEL and the job, and run asks the\n"
    "recommender for the plan, on --pool or on this host alone.  The job "
    "gets\n"
    "a folder under the jobs folder: the plan, the launch commands, logs "
    "per\n"
    "rank, the trainer's metrics, checkpoints and results, and its "
    "state.\n"
    "Before the workers start, the data is copied to a node-local folder "
    "and\n"
    "its SHA-256 checksums verified.  Follow it with 'hetpool status ID',\n"
    "'hetpool logs ID', 'hetpool jobs'; stop it with 'hetpool cancel ID'.\n"
    "\n"
    "backends (--backend, default local):\n"
    "  local        processes on this host, each rank pinned to its CPUs "
    "and\n"
    "               its GPU (CUDA_VISIBLE_DEVICES); the plan must be for "
    "this\n"
    "               host; more than one rank runs under mpirun\n"
    "  mpi          mpirun over a hostfile of the plan's nodes (host "
    "names)\n"
    "  slurm        sbatch: --gres=gpu:TYPE:N per node, a heterogeneous "
    "job\n"
    "               (one component per type) for mixed types; srun "
    "--mpi=pmix\n"
    "  kubernetes   manifests (MPIJob, or Indexed Jobs and a headless "
    "Service)\n"
    "               applied with kubectl when it has a cluster, else "
    "written\n"
    "\n"
    "what to train:\n"
    "  --model FILE        model spec (JSON) or ONNX file (with PLAN.json)\n"
    "  --data DATA         fashion-mnist (the Debian package "
    "dataset-fashion-mnist),\n"
    "                      synthetic, or a folder holding the four "
    "Fashion-MNIST\n"
    "                      IDX files (plain or .gz)\n"
    "  --steps S           training steps, or --epochs E (default: the "
    "plan's;\n"
    "                      with a MODEL, E passes over --samples N: "
    "ceil(N/B) steps each)\n"
    "  --lr X              learning rate at the reference batch (default: "
    "the\n"
    "                      trainer's); the plan's rule scales it\n"
    "  --lr-rule R         linear, sqrt or none (default: the plan's)\n"
    "  --ref-batch N       the batch X was tuned at (default: the plan's)\n"
    "  --warmup-steps N    (default: the plan's)\n"
    "  --optimizer O       sgd or adam (default: the trainer's)\n"
    "  --seed S, --checkpoint-every N, --max-seconds S\n"
    "  --stall-timeout D   end the job when no step has completed for D\n"
    "                      (90, 10m; a rank stopped or hung holds the\n"
    "                      others; default: the trainer's, the larger of\n"
    "                      10 minutes and 20 x the slowest step)\n"
    "  --resume-from ID    continue job ID (ended, with a checkpoint): its\n"
    "                      checkpoint starts this job's out/ (same model,\n"
    "                      data, plan and seed; --steps may extend it).\n"
    "                      --resume alone is refused: a new job's out/\n"
    "                      is empty\n"
    "  --threads N         per rank (default: local, the rank's CPUs)\n"
    "\n"
    "a plan from a model (MODEL form; as 'hetpool recommend'):\n"
    "  --pool FILE         the pool (default: this host alone)\n"
    "  --samples N         dataset size (default 60000 with fashion-mnist)\n"
    "  --batch B           global batch\n"
    "  --deadline D        90m, 2h, 1d or seconds\n"
    "  --device-type T, --devices K, --nodes M, --estimator FILE, "
    "--catalog FILE\n"
    "  --ranks N           on a host whose CPU the recommender cannot "
    "choose\n"
    "                      (no power figure), train on its CPU with N "
    "ranks\n"
    "                      (default 1), said so\n"
    "\n"
    "where and how:\n"
    "  --backend B         local, mpi, slurm or kubernetes\n"
    "  --name NAME         a label for the job\n"
    "  --jobs-dir DIR      default $HETPOOL_JOBS_DIR, else "
    "$XDG_STATE_HOME/hetpool/jobs,\n"
    "                      else ~/.local/state/hetpool/jobs\n"
    "  --trainer PATH      hetpool-train (default $HETPOOL_TRAINER, else "
    "beside\n"
    "                      hetpool, else on PATH)\n"
    "  --stage-dir DIR     node-local staging root (default: local, "
    "JOBS/.stage;\n"
    "                      mpi and slurm, /tmp/hetpool-stage-UID)\n"
    "  --no-cpu-fallback   a GPU rank on a node without an NVIDIA driver "
    "(or whose\n"
    "                      GPUs CUDA_VISIBLE_DEVICES hides) fails (default: "
    "it\n"
    "                      trains on the CPU, and says so)\n"
    "  --host-gpus T,...   local: this host's GPUs by CUDA index "
    "(default:\n"
    "                      detected from /proc/driver/nvidia)\n"
    "  --partition P, --account A, --time T   slurm\n"
    "  --deadline D        slurm (with a PLAN.json too): the job must end "
    "within D;\n"
    "                      sbatch --deadline, and --time from the plan's "
    "predicted\n"
    "                      time x 1.5 (at least 10 minutes, no later than "
    "D)\n"
    "  --gres-map T=G,...  slurm: plan type to GRES type (default the "
    "same)\n"
    "  --slurm-mpi M       slurm: srun --mpi (default pmix)\n"
    "  --image I, --namespace N, --k8s-volume CLAIM, --no-apply   "
    "kubernetes\n"
    "                      (a cluster gets the job only with --k8s-volume, "
    "where its\n"
    "                      outputs go; else give --no-apply)\n"
    "  --k8s-flavor F      auto (default), mpijob or indexed\n"
    "  --k8s-worker-wait S kubernetes, Indexed Jobs: seconds the launcher "
    "waits for\n"
    "                      every worker's sshd (default 3600)\n"
    "  --product-map T=L,...  kubernetes: plan type to the "
    "nvidia.com/gpu.product\n"
    "                      label (default: the catalog's product name)\n"
    "  --wait              wait for the job to end; then exit 0 only if it "
    "succeeded\n"
    "                      (a Kubernetes job whose manifests were not "
    "applied:\n"
    "                      exit 1 at once, saying so; with --no-apply: "
    "refused,\n"
    "                      exit 2)\n"
    "  --json              print JSON ({\"id\", \"state\", \"backend\", "
    "\"dir\"})\n"
    "\n"
    "exit status: 0 the job was started (with --wait: it succeeded), 1 it "
    "failed\n"
    "(a backend refused it, or with --wait it did not succeed; the job "
    "stays,\n"
    "failed, with the reason), 2 bad input (options, plan, model, data).\n"
    "\n"
    "examples:\n"
    "  hetpool recommend cnn.json --pool pool.json --samples 60000 "
    "--epochs 5 \\\n"
    "      --batch 256 --deadline 1h --json > plan.json\n"
    "  hetpool run plan.json --model cnn.json --data fashion-mnist "
    "--backend slurm\n"
    "  hetpool run cnn.json --data fashion-mnist --epochs 1 --batch 64 "
    "--deadline 1h\n"
    "  hetpool run plan.json --model cnn.json --data synthetic --steps 100 "
    "\\\n"
    "      --backend kubernetes --image registry/hetpool:0.1 --no-apply\n";

/* Whether file is a plan (recommend's JSON, or a configuration) rather
 * than a model. */
static bool is_plan(const char *file, char **text, size_t *len)
{
	struct hp_error err = {0};
	size_t n = strlen(file);

	*text = NULL;
	if (n > 5 && !strcmp(file + n - 5, ".onnx"))
		return false;
	if (hp_read_file(file, HP_PLAN_MAX_BYTES, text, len, &err))
		return false;
	if (strstr(*text, "\"choice\"") ||
	    (strstr(*text, "\"devices\"") && !strstr(*text, "\"layers\"")))
		return true;
	free(*text);
	*text = NULL;
	return false;
}

/*
 * A global batch larger than the training samples it is drawn from: the
 * trainer refuses it at its start, after the job has waited for its
 * devices, so run refuses it before any job is made.  batch_what names the
 * batch ("--batch", a plan's field), samples_what where the count comes
 * from; samples 0 is not known.  0, or exit 2 after one line.
 */
static int check_batch(int64_t batch, const char *batch_what, int64_t samples,
		       const char *samples_what)
{
	if (samples <= 0 || batch <= samples)
		return EXIT_OK;
	return cli_error(EXIT_USAGE,
			 "run: %s %lld is more than the %lld training samples "
			 "%s",
			 batch_what, (long long)batch, (long long)samples,
			 samples_what);
}

struct rec_args {
	struct hp_rec_job job;
	const char *pool;
	int ranks;
};

/* Ask the recommender for a plan of model; 0 with *plan filled and
 * *json the recommendation (caller frees), or the exit status. */
static int recommend(const char *model, struct rec_args *a,
		     struct hp_plan *plan, char **json,
		     const struct hp_snap *snap)
{
	const struct hp_catalog *cat = hp_snap_catalog(snap);
	struct hp_error err = {0};
	struct hp_pool *pool = NULL;
	struct hp_model_input mi = {0};
	struct hp_rec_result res = {0};
	char *pooltext = NULL;
	int status = EXIT_OK, rc;

	*json = NULL;
	if (a->pool) {
		if (!(pool = cli_load_pool("run", a->pool, cat, &status)))
			goto out;
	} else {
		if (!(pooltext = hp_deploy_host_pool(cat, &err)) ||
		    !(pool = hp_pool_parse(pooltext, strlen(pooltext),
					   "this host", cat, &err))) {
			status = cli_error(
			    EXIT_FAIL, "run: this host's pool: %s", err.msg);
			goto out;
		}
	}
	if ((status = cli_load_model("run", model, 1, NULL, 0, &mi)))
		goto out;
	if ((rc = hp_recommend(hp_snap_estimator(snap), cat, &mi.workload, pool,
			       &a->job, &res, &err))) {
		status = cli_error(cli_status_for(rc), "run: %s", err.msg);
		goto out;
	}
	if (res.found) {
		if (!res.feasible)
			hp_log(HP_LOG_WARN,
			       "run: no configuration meets the deadline; "
			       "running the fastest: %s",
			       res.reason);
		if (!(*json = hp_rec_result_json(&res, &a->job, pool))) {
			status = cli_error(EXIT_FAIL, "run: out of memory");
			goto out;
		}
		if ((rc =
			 hp_plan_parse(*json, strlen(*json), NULL, plan, &err)))
			status = cli_error(EXIT_FAIL, "run: %s", err.msg);
	} else if (!a->pool) {
		/* This host's CPU has no power figure, so the recommender
		 * cannot weigh it; run on it anyway, and say so. */
		hp_log(HP_LOG_WARN,
		       "run: the recommender found no configuration on this "
		       "host (%s); training on its CPU with %d rank%s, the "
		       "batch split evenly",
		       res.reason, a->ranks, a->ranks == 1 ? "" : "s");
		if ((rc = hp_plan_cpu_host(pool->nodes[0].name, a->ranks,
					   a->job.batch, plan, &err))) {
			status =
			    cli_error(cli_status_for(rc), "run: %s", err.msg);
			goto out;
		}
		if (a->job.steps)
			plan->steps = a->job.steps;
	} else {
		status = cli_error(EXIT_FAIL,
				   "run: the recommender found no "
				   "configuration: %s",
				   res.reason);
	}
out:
	if (status) {
		free(*json);
		*json = NULL;
	}
	hp_rec_result_release(&res);
	hp_model_input_release(&mi);
	hp_pool_free(pool);
	free(pooltext);
	return status;
}

/* Wait for the job to end (with progress on a terminal); its final
 * state into *job. */
static int wait_job(struct hp_deploy *d, const char *id, struct hp_job *job)
{
	struct hp_error err = {0};
	bool tty = isatty(2);
	enum hp_job_state last = (enum hp_job_state) - 1;

	for (;;) {
		struct timespec ts = {0, 200000000};
		if (hp_deploy_status(d, id, true, job, &err))
			return cli_error(cli_status_for(err.code), "run: %s",
					 err.msg);
		if (tty && job->state != last)
			fprintf(stderr, "hetpool: job %s: %s\n", id,
				hp_job_state_name(job->state));
		last = job->state;
		if (hp_job_state_terminal(job->state))
			return 0;
		/* manifests written, not applied (no cluster): nothing will
		 * ever move it; the caller says so with its reason */
		if (job->backend == HP_BACKEND_KUBERNETES && !job->applied)
			return 0;
		hp_job_release(job);
		nanosleep(&ts, NULL);
	}
}

static void print_job(const struct hp_job *j, bool json)
{
	char esc[1024];

	if (json) {
		char *s = deploy_cli_job_json(j);
		if (s)
			puts(s);
		free(s);
		return;
	}
	printf("job %s %s", j->id, hp_job_state_name(j->state));
	if (j->reason[0])
		printf(": %s", cli_esc(j->reason, esc, sizeof(esc)));
	printf("\n");
	if (j->results)
		printf("results: %s/out/results.json\n",
		       cli_esc(j->dir, esc, sizeof(esc)));
}

struct run_args {
	struct hp_train_opts t;
	struct hp_submit_opts so;
	struct rec_args ra;
	const char *model, *estimator, *catalog, *jobs, *trainer;
	int lr_rule, optimizer, backend, flavor;
	bool json, wait;
};

static const struct cli_word rule_words[] = {
    {"linear", HP_LR_LINEAR},
    {"sqrt", HP_LR_SQRT},
    {"none", HP_LR_NONE},
    {NULL, 0},
};
static const char *const optimizers[] = {"sgd", "adam"};
static const struct cli_word optimizer_words[] = {
    {"sgd", 0},
    {"adam", 1},
    {NULL, 0},
};
static const struct cli_word backend_words[] = {
    {"local", HP_BACKEND_LOCAL},	  {"mpi", HP_BACKEND_MPI},
    {"slurm", HP_BACKEND_SLURM},	  {"kubernetes", HP_BACKEND_KUBERNETES},
    {"k8s", HP_BACKEND_KUBERNETES, true}, {NULL, 0},
};
static const struct cli_word flavor_words[] = {
    {"auto", HP_K8S_AUTO},
    {"mpijob", HP_K8S_MPIJOB},
    {"indexed", HP_K8S_INDEXED},
    {NULL, 0},
};

#define RA struct run_args
static const struct cli_opt run_opts[] = {
    CLI_OPT_STR("model", RA, model),
    CLI_OPT_STR("data", RA, t.data),
    CLI_OPT_INT("steps", RA, t.steps, 1, (int64_t)1 << 40),
    CLI_OPT_INT("epochs", RA, t.epochs, 1, 1 << 20),
    CLI_OPT_NUM("lr", RA, t.lr, 1e-12, 1e3),
    CLI_OPT_WORD("lr-rule", RA, lr_rule, rule_words),
    CLI_OPT_INT("ref-batch", RA, t.ref_batch, 1, 1 << 24),
    CLI_OPT_INT("warmup-steps", RA, t.warmup_steps, 0, (int64_t)1 << 40),
    CLI_OPT_WORD("optimizer", RA, optimizer, optimizer_words),
    CLI_OPT_INT("seed", RA, t.seed, 0, INT64_MAX / 2),
    CLI_OPT_INT("checkpoint-every", RA, t.checkpoint_every, 1,
		(int64_t)1 << 40),
    CLI_OPT_NUM("max-seconds", RA, t.max_seconds, 1, 1e9),
    CLI_OPT_DURATION("stall-timeout", RA, t.stall_timeout_s),
    CLI_OPT_FLAG("resume", RA, t.resume),
    CLI_OPT_STR("resume-from", RA, t.resume_from),
    CLI_OPT_INT("threads", RA, t.threads, 1, 4096),
    CLI_OPT_STR("pool", RA, ra.pool),
    CLI_OPT_INT("samples", RA, ra.job.samples, 1, (int64_t)1 << 40),
    CLI_OPT_INT("batch", RA, ra.job.batch, 1, 1 << 24),
    CLI_OPT_DURATION("deadline", RA, ra.job.deadline_s),
    CLI_OPT_STR("device-type", RA, ra.job.device_type),
    CLI_OPT_INT("devices", RA, ra.job.ndevices, 1, 1 << 20),
    CLI_OPT_INT("nodes", RA, ra.job.nnodes, 1, HP_POOL_MAX_NODES),
    CLI_OPT_STR("estimator", RA, estimator),
    CLI_OPT_STR("catalog", RA, catalog),
    CLI_OPT_INT("ranks", RA, ra.ranks, 1, HP_PLAN_MAX_RANKS),
    CLI_OPT_WORD("backend", RA, backend, backend_words),
    CLI_OPT_STR("name", RA, so.name),
    CLI_OPT_STR("jobs-dir", RA, jobs),
    CLI_OPT_STR("trainer", RA, trainer),
    CLI_OPT_STR("stage-dir", RA, so.stage_dir),
    CLI_OPT_FLAG("no-cpu-fallback", RA, so.no_cpu_fallback),
    CLI_OPT_STR("host-gpus", RA, so.host_gpus),
    CLI_OPT_STR("partition", RA, so.partition),
    CLI_OPT_STR("account", RA, so.account),
    CLI_OPT_STR("time", RA, so.time_limit),
    CLI_OPT_STR("gres-map", RA, so.gres_map),
    CLI_OPT_STR("slurm-mpi", RA, so.slurm_mpi),
    CLI_OPT_STR("image", RA, so.image),
    CLI_OPT_STR("namespace", RA, so.k8s_namespace),
    CLI_OPT_STR("k8s-volume", RA, so.k8s_volume),
    CLI_OPT_FLAG("no-apply", RA, so.k8s_no_apply),
    CLI_OPT_WORD("k8s-flavor", RA, flavor, flavor_words),
    CLI_OPT_NUM("k8s-worker-wait", RA, so.k8s_worker_wait_s, 1, 7 * 86400),
    CLI_OPT_STR("product-map", RA, so.product_map),
    CLI_OPT_FLAG("wait", RA, wait),
    CLI_OPT_FLAG("json", RA, json),
    CLI_OPT_END,
};
#undef RA

static int cmd_run(int argc, char **argv)
{
	struct run_args a = {
	    .lr_rule = -1, .optimizer = -1, .backend = -1, .flavor = -1};
	struct hp_train_opts *t = &a.t;
	struct hp_submit_opts *so = &a.so;
	struct rec_args *ra = &a.ra;
	struct hp_plan plan = {0};
	struct hp_ctx *ctx = NULL;
	const struct hp_snap *snap = NULL;
	struct hp_deploy *d = NULL;
	struct hp_error err = {0};
	struct hp_job job = {0};
	char jobs_dir[PATH_MAX], trainer[PATH_MAX], id[HP_JOB_ID_MAX];
	char data[PATH_MAX], stage[PATH_MAX], *plantext = NULL, *rec = NULL;
	char what[PATH_MAX + 32], data_what[PATH_MAX + 16];
	int64_t nsamples;
	const char *input;
	size_t planlen = 0;
	bool plan_form;
	int first, rc, status = EXIT_OK;

	hp_train_opts_init(t);
	hp_submit_opts_init(so);
	ra->job.lr_rule = HP_LR_LINEAR;
	ra->ranks = 1;
	if ((rc = cli_parse(&cli_cmd_run, argc, argv, &a, &first)))
		return rc < 0 ? EXIT_OK : rc;
	/* What the recommender and the trainer both take. */
	ra->job.steps = t->steps;
	ra->job.epochs = t->epochs;
	ra->job.ref_batch = t->ref_batch;
	if (a.lr_rule >= 0) {
		ra->job.lr_rule = (enum hp_lr_rule)a.lr_rule;
		t->lr_rule = hp_lr_rule_name(ra->job.lr_rule);
	}
	if (a.optimizer >= 0)
		t->optimizer = optimizers[a.optimizer];
	if (a.backend >= 0)
		so->backend = (enum hp_backend)a.backend;
	if (a.flavor >= 0)
		so->k8s_flavor = (enum hp_k8s_flavor)a.flavor;
	if (t->stall_timeout_s != 0 &&
	    !(t->stall_timeout_s >= 1 && t->stall_timeout_s <= 1e9))
		return cli_error(EXIT_USAGE,
				 "run: --stall-timeout: give 1 s to 1e9 s "
				 "(got %g s)",
				 t->stall_timeout_s);
	/* the deadline runs from now (Slurm's --deadline is a time) */
	if (ra->job.deadline_s > 0)
		so->deadline_at_s = (double)time(NULL) + ra->job.deadline_s;
	if (first != argc - 1)
		return cli_error(EXIT_USAGE,
				 "run: give one PLAN.json or MODEL; see "
				 "'hetpool run --help'");
	input = argv[first];
	if (access(input, R_OK))
		return cli_error(EXIT_USAGE, "run: cannot read '%s'", input);
	if (!t->data)
		return cli_error(EXIT_USAGE,
				 "run: give --data fashion-mnist, synthetic or "
				 "FOLDER");
	if (t->steps && t->epochs)
		return cli_error(EXIT_USAGE,
				 "run: give --steps or --epochs, not both");
	if (t->resume && !t->resume_from)
		return cli_error(EXIT_USAGE,
				 "run: --resume alone has nothing to resume (a "
				 "new job's out/ is empty): give --resume-from "
				 "ID, the job to continue");
	/* A data folder is passed on as an absolute path. */
	if (strcmp(t->data, "fashion-mnist") && strcmp(t->data, "synthetic")) {
		if (!realpath(t->data, data))
			return cli_error(
			    EXIT_USAGE,
			    "run: --data '%s': give fashion-mnist, "
			    "synthetic or an existing folder",
			    t->data);
		t->data = data;
	}
	if (a.wait && so->k8s_no_apply)
		return cli_error(EXIT_USAGE,
				 "run: --wait with --no-apply: a job whose "
				 "manifests are only written never runs here; "
				 "drop one of them");
	if (so->stage_dir && so->stage_dir[0] != '/') {
		char cwd[PATH_MAX];
		if (!getcwd(cwd, sizeof(cwd)) ||
		    snprintf(stage, sizeof(stage), "%s/%s", cwd,
			     so->stage_dir) >= (int)sizeof(stage))
			return cli_error(EXIT_USAGE,
					 "run: --stage-dir path too long");
		so->stage_dir = stage;
	}
	if ((status = deploy_cli_jobs_dir(a.jobs, "run", jobs_dir,
					  sizeof(jobs_dir))))
		return status;
	if (so->backend != HP_BACKEND_KUBERNETES) {
		const char *why;
		deploy_cli_trainer(a.trainer, trainer, sizeof(trainer));
		if (!trainer[0])
			return cli_error(EXIT_USAGE,
					 "run: no hetpool-train found (beside "
					 "hetpool, on PATH); give --trainer "
					 "PATH");
		if ((why = deploy_cli_not_program(trainer)))
			return cli_error(EXIT_USAGE,
					 "run: no hetpool-train at '%s' (%s); "
					 "give --trainer PATH",
					 trainer, why);
		so->trainer = trainer;
	} else {
		so->trainer = a.trainer;
	}
	/* what the global batch is drawn from, as the trainer will find
	 * it */
	nsamples = hp_train_data_samples(t->data);
	snprintf(data_what, sizeof(data_what), "of --data %s", t->data);
	plan_form = is_plan(input, &plantext, &planlen);
	/* the estimator only to make a plan */
	if (!(ctx = cli_load_ctx("run", a.catalog, a.estimator, !plan_form,
				 &status)))
		goto out;
	snap = hp_ctx_acquire(ctx);
	so->cat = hp_snap_catalog(snap);
	if (plan_form) {
		if (!a.model) {
			status = cli_error(
			    EXIT_USAGE, "run: with a plan, give --model FILE "
					"(the plan does not name the "
					"model)");
			goto out;
		}
		t->model = a.model;
		if ((rc = hp_plan_parse(plantext, planlen, input, &plan,
					&err))) {
			status = cli_error(EXIT_USAGE, "run: %s", err.msg);
			goto out;
		}
		snprintf(what, sizeof(what), "'%s': global_batch", input);
		if ((status = check_batch(plan.global_batch, what, nsamples,
					  data_what)))
			goto out;
		/* the model before any job: a bad one would otherwise cost a
		 * queue wait and an allocation before its ranks refuse it */
		{
			struct hp_graph *g =
			    cli_load_graph("run", a.model, &status);
			if (!g)
				goto out;
			hp_graph_free(g);
		}
		so->recommendation = plantext;
	} else {
		if (a.model) {
			status =
			    cli_error(EXIT_USAGE,
				      "run: '%s' is not a plan (a JSON "
				      "object with \"choice\" or "
				      "\"devices\"), so it is read as the "
				      "model; give --model only with a plan",
				      input);
			goto out;
		}
		t->model = input;
		if (!ra->job.samples && !strcmp(t->data, "fashion-mnist"))
			ra->job.samples = 60000;
		if (!ra->job.samples || !ra->job.batch ||
		    !(ra->job.deadline_s > 0) ||
		    (!ra->job.steps && !ra->job.epochs)) {
			/* name what is missing: the recommender plans the
			 * job from all four */
			char miss[160] = "";
			size_t m = 0;
			const char *what[4] = {
			    ra->job.batch ? NULL : "--batch B",
			    ra->job.deadline_s > 0 ? NULL : "--deadline D",
			    ra->job.steps || ra->job.epochs
				? NULL
				: "--epochs E or --steps S",
			    ra->job.samples ? NULL
					    : "--samples N (the data's size)"};
			for (int i = 0; i < 4; i++)
				if (what[i])
					m += (size_t)snprintf(
					    miss + m, sizeof(miss) - m, "%s%s",
					    m ? "; " : "", what[i]);
			status = cli_error(
			    EXIT_USAGE,
			    "run: with a MODEL, the recommender plans the job "
			    "from --batch, --deadline, --epochs or --steps, "
			    "and --samples (known for --data fashion-mnist); "
			    "missing: %s",
			    miss);
			goto out;
		}
		if ((status =
			 check_batch(ra->job.batch, "--batch", ra->job.samples,
				     "that --samples gives")) ||
		    (status = check_batch(ra->job.batch, "--batch", nsamples,
					  data_what)))
			goto out;
		ra->job.front = 0;
		if ((status = recommend(input, ra, &plan, &rec, snap)))
			goto out;
		so->recommendation = rec;
		/* the work planned is E passes over N samples: the trainer
		 * gets those steps, not E epochs of its own data set (16384
		 * synthetic samples, 60000 images), which is other work
		 * than the deadline was judged on */
		if (t->epochs) {
			t->steps = (ra->job.samples + ra->job.batch - 1) /
				   ra->job.batch * t->epochs;
			t->epochs = 0;
			plan.steps = t->steps;
		}
	}
	if (!(d = deploy_cli_open(jobs_dir, "run", &status)))
		goto out;
	rc = hp_deploy_submit(d, &plan, t, so, id, &err);
	if (rc) {
		if (id[0] && a.json) {
			/* the job exists, failed: scripts get it and its id */
			struct hp_error e2 = {0};
			if (!hp_deploy_status(d, id, false, &job, &e2))
				print_job(&job, true);
		}
		if (id[0])
			status = cli_error(EXIT_FAIL, "run: job %s failed: %s",
					   id, err.msg);
		else
			status =
			    cli_error(cli_status_for(rc), "run: %s", err.msg);
		goto out;
	}
	if (a.wait) {
		if ((status = wait_job(d, id, &job)))
			goto out;
		if (a.json || job.state == HP_JOB_SUCCEEDED)
			print_job(&job, a.json);
		status = job.state == HP_JOB_SUCCEEDED
			     ? EXIT_OK
			     : cli_error(EXIT_FAIL, "run: job %s %s%s%s", id,
					 hp_job_state_name(job.state),
					 job.reason[0] ? ": " : "", job.reason);
	} else if (a.json) {
		if (hp_deploy_status(d, id, false, &job, &err))
			status = cli_error(EXIT_FAIL, "run: %s", err.msg);
		else
			print_job(&job, true);
	} else {
		printf("%s\n", id);
		if (isatty(2))
			fprintf(stderr,
				"hetpool: job %s started (%s, %d rank%s); "
				"follow it with 'hetpool status %s'\n",
				id, hp_backend_name(so->backend), plan.nranks,
				plan.nranks == 1 ? "" : "s", id);
	}
out:
	hp_job_release(&job);
	hp_deploy_free(d);
	hp_plan_release(&plan);
	hp_snap_release(snap);
	hp_ctx_free(ctx);
	free(plantext);
	free(rec);
	return status;
}

const struct cli_cmd cli_cmd_run = {
    .name = "run",
    .run = cmd_run,
    .help = help,
    .opts = run_opts,
    .foreign = "gres mpi", /* sbatch's, srun's */
};
