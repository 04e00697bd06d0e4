/*
 * cmd_run.c - `hetpool run`: launch a plan (the JSON of `hetpool
 * recommend`, or a model from which the recommender makes one) through a
 * backend (local, mpi, slurm, kubernetes) and print the job's id.
 */
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "deploy_cli.h"
#include "est_cli.h"
#include "hetpool/deploy.h"
#include "hetpool/pool.h"
#include "hetpool/recommend.h"

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
    "plan's)\n"
    "  --lr X              learning rate at the reference batch (default: "
    "the\n"
    "                      trainer's); the plan's rule scales it\n"
    "  --lr-rule R         linear, sqrt or none (default: the plan's)\n"
    "  --ref-batch N       the batch X was tuned at (default: the plan's)\n"
    "  --warmup-steps N    (default: the plan's)\n"
    "  --optimizer O       sgd or adam (default: the trainer's)\n"
    "  --seed S, --checkpoint-every N, --max-seconds S, --resume\n"
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
    "                      mpi and slurm, /tmp/hetpool-stage)\n"
    "  --no-cpu-fallback   a GPU rank on a node without an NVIDIA driver "
    "fails\n"
    "                      (default: it trains on the CPU, and says so)\n"
    "  --host-gpus T,...   local: this host's GPUs by CUDA index "
    "(default:\n"
    "                      detected from /proc/driver/nvidia)\n"
    "  --partition P, --account A, --time T   slurm\n"
    "  --gres-map T=G,...  slurm: plan type to GRES type (default the "
    "same)\n"
    "  --slurm-mpi M       slurm: srun --mpi (default pmix)\n"
    "  --image I, --namespace N, --k8s-volume CLAIM, --no-apply   "
    "kubernetes\n"
    "  --k8s-flavor F      auto (default), mpijob or indexed\n"
    "  --product-map T=L,...  kubernetes: plan type to the "
    "nvidia.com/gpu.product\n"
    "                      label (default: the catalog's product name)\n"
    "  --wait              wait for the job to end; then exit 0 only if it "
    "succeeded\n"
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

static int bad_count(const char *opt, const char *s, int64_t min, int64_t max,
		     int64_t *out)
{
	if (hp_parse_i64(s, min, max, out))
		return cli_error(EXIT_USAGE,
				 "run: %s '%s': give a whole number from %lld "
				 "to %lld",
				 opt, s, (long long)min, (long long)max);
	return 0;
}

static int bad_real(const char *opt, const char *s, double min, double max,
		    double *out)
{
	if (hp_parse_double(s, out) || !(*out >= min && *out <= max))
		return cli_error(EXIT_USAGE,
				 "run: %s '%s': give a number from %g to %g",
				 opt, s, min, max);
	return 0;
}

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

struct rec_args {
	struct hp_rec_job job;
	const char *pool, *estimator, *catalog, *deadline;
	int ranks;
};

/* Ask the recommender for a plan of model; 0 with *plan filled and
 * *json the recommendation (caller frees), or the exit status. */
static int recommend(const char *model, struct rec_args *a,
		     struct hp_plan *plan, char **json,
		     const struct hp_catalog *cat)
{
	struct hp_error err = {0};
	struct hp_estimator *est = NULL;
	struct hp_pool *pool = NULL;
	struct hp_graph *g = NULL;
	struct hp_workload w = {0};
	struct hp_rec_result res = {0};
	char estbuf[PATH_MAX], *pooltext = NULL;
	const char *estpath = a->estimator;
	int status = EXIT_OK, rc;

	*json = NULL;
	if (a->pool) {
		if (!(pool = hp_pool_load(a->pool, cat, &err))) {
			status = cli_error(EXIT_USAGE, "run: %s", err.msg);
			goto out;
		}
	} else {
		if (!(pooltext = hp_deploy_host_pool(cat, &err)) ||
		    !(pool = hp_pool_parse(pooltext, strlen(pooltext),
					   "this host", cat, &err))) {
			status = cli_error(
			    EXIT_FAIL, "run: this host's pool: %s", err.msg);
			goto out;
		}
	}
	if (!estpath) {
		if (cli_data_path("estimators/default.json", estbuf,
				  sizeof(estbuf))) {
			status = cli_error(
			    EXIT_USAGE, "run: no data/estimators/default.json "
					"found; give --estimator FILE");
			goto out;
		}
		estpath = estbuf;
	}
	if (!(est = hp_estimator_load(estpath, &err))) {
		status =
		    cli_error(cli_status_for(err.code), "run: %s", err.msg);
		goto out;
	}
	if (!(g = hp_model_load(model, &err))) {
		status = cli_error(cli_status_for(err.code), "run: '%s': %s",
				   model, err.msg);
		goto out;
	}
	if ((rc = hp_workload_from_graph(g, 1, NULL, 0, &w, &err))) {
		status = cli_error(cli_status_for(rc), "run: '%s': %s", model,
				   err.msg);
		goto out;
	}
	if ((rc = hp_recommend(est, cat, &w, pool, &a->job, &res, &err))) {
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
	hp_workload_release(&w);
	hp_graph_free(g);
	hp_estimator_free(est);
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

int cmd_run(int argc, char **argv)
{
	enum {
		O_MODEL = 256,
		O_DATA,
		O_STEPS,
		O_EPOCHS,
		O_LR,
		O_LR_RULE,
		O_REF,
		O_WARM,
		O_OPT,
		O_SEED,
		O_CKPT,
		O_MAXS,
		O_RESUME,
		O_THREADS,
		O_POOL,
		O_SAMPLES,
		O_BATCH,
		O_DEADLINE,
		O_DTYPE,
		O_DEVICES,
		O_NODES,
		O_EST,
		O_CAT,
		O_RANKS,
		O_BACKEND,
		O_NAME,
		O_JOBS,
		O_TRAINER,
		O_STAGE,
		O_NOFB,
		O_HOSTGPUS,
		O_PART,
		O_ACCOUNT,
		O_TIME,
		O_GRES,
		O_SMPI,
		O_IMAGE,
		O_NS,
		O_K8SVOL,
		O_NOAPPLY,
		O_FLAVOR,
		O_PRODUCT,
		O_WAIT,
		O_JSON,
	};
	static const struct option opts[] = {
	    {"model", required_argument, NULL, O_MODEL},
	    {"data", required_argument, NULL, O_DATA},
	    {"steps", required_argument, NULL, O_STEPS},
	    {"epochs", required_argument, NULL, O_EPOCHS},
	    {"lr", required_argument, NULL, O_LR},
	    {"lr-rule", required_argument, NULL, O_LR_RULE},
	    {"ref-batch", required_argument, NULL, O_REF},
	    {"warmup-steps", required_argument, NULL, O_WARM},
	    {"optimizer", required_argument, NULL, O_OPT},
	    {"seed", required_argument, NULL, O_SEED},
	    {"checkpoint-every", required_argument, NULL, O_CKPT},
	    {"max-seconds", required_argument, NULL, O_MAXS},
	    {"resume", no_argument, NULL, O_RESUME},
	    {"threads", required_argument, NULL, O_THREADS},
	    {"pool", required_argument, NULL, O_POOL},
	    {"samples", required_argument, NULL, O_SAMPLES},
	    {"batch", required_argument, NULL, O_BATCH},
	    {"deadline", required_argument, NULL, O_DEADLINE},
	    {"device-type", required_argument, NULL, O_DTYPE},
	    {"devices", required_argument, NULL, O_DEVICES},
	    {"nodes", required_argument, NULL, O_NODES},
	    {"estimator", required_argument, NULL, O_EST},
	    {"catalog", required_argument, NULL, O_CAT},
	    {"ranks", required_argument, NULL, O_RANKS},
	    {"backend", required_argument, NULL, O_BACKEND},
	    {"name", required_argument, NULL, O_NAME},
	    {"jobs-dir", required_argument, NULL, O_JOBS},
	    {"trainer", required_argument, NULL, O_TRAINER},
	    {"stage-dir", required_argument, NULL, O_STAGE},
	    {"no-cpu-fallback", no_argument, NULL, O_NOFB},
	    {"host-gpus", required_argument, NULL, O_HOSTGPUS},
	    {"partition", required_argument, NULL, O_PART},
	    {"account", required_argument, NULL, O_ACCOUNT},
	    {"time", required_argument, NULL, O_TIME},
	    {"gres-map", required_argument, NULL, O_GRES},
	    {"slurm-mpi", required_argument, NULL, O_SMPI},
	    {"image", required_argument, NULL, O_IMAGE},
	    {"namespace", required_argument, NULL, O_NS},
	    {"k8s-volume", required_argument, NULL, O_K8SVOL},
	    {"no-apply", no_argument, NULL, O_NOAPPLY},
	    {"k8s-flavor", required_argument, NULL, O_FLAVOR},
	    {"product-map", required_argument, NULL, O_PRODUCT},
	    {"wait", no_argument, NULL, O_WAIT},
	    {"json", no_argument, NULL, O_JSON},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct hp_train_opts t;
	struct hp_submit_opts so;
	struct rec_args ra = {0};
	struct hp_plan plan = {0};
	struct hp_catalog *cat = NULL;
	struct hp_deploy *d = NULL;
	struct hp_error err = {0};
	struct hp_job job = {0};
	char jobs_dir[PATH_MAX], trainer[PATH_MAX], id[HP_JOB_ID_MAX];
	char data[PATH_MAX], stage[PATH_MAX], *plantext = NULL, *rec = NULL;
	const char *jobs = NULL, *trainer_opt = NULL, *catalog = NULL, *input;
	const char *model_opt = NULL;
	size_t planlen = 0;
	int64_t v;
	bool json = false, wait = false, plan_form;
	int c, rc, status = EXIT_OK;

	hp_train_opts_init(&t);
	hp_submit_opts_init(&so);
	ra.job.lr_rule = HP_LR_LINEAR;
	ra.ranks = 1;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case O_MODEL:
			model_opt = optarg;
			break;
		case O_DATA:
			t.data = optarg;
			break;
		case O_STEPS:
			if (bad_count("--steps", optarg, 1, (int64_t)1 << 40,
				      &t.steps))
				return EXIT_USAGE;
			ra.job.steps = t.steps;
			break;
		case O_EPOCHS:
			if (bad_count("--epochs", optarg, 1, 1 << 20,
				      &t.epochs))
				return EXIT_USAGE;
			ra.job.epochs = t.epochs;
			break;
		case O_LR:
			if (bad_real("--lr", optarg, 1e-12, 1e3, &t.lr))
				return EXIT_USAGE;
			break;
		case O_LR_RULE:
			if (hp_lr_rule_parse(optarg, &ra.job.lr_rule))
				return cli_error(EXIT_USAGE,
						 "run: --lr-rule '%s': give "
						 "linear, sqrt or none",
						 optarg);
			t.lr_rule = optarg;
			break;
		case O_REF:
			if (bad_count("--ref-batch", optarg, 1, 1 << 24,
				      &t.ref_batch))
				return EXIT_USAGE;
			ra.job.ref_batch = t.ref_batch;
			break;
		case O_WARM:
			if (bad_count("--warmup-steps", optarg, 0,
				      (int64_t)1 << 40, &t.warmup_steps))
				return EXIT_USAGE;
			break;
		case O_OPT:
			if (strcmp(optarg, "sgd") && strcmp(optarg, "adam"))
				return cli_error(EXIT_USAGE,
						 "run: --optimizer '%s': give "
						 "sgd or adam",
						 optarg);
			t.optimizer = optarg;
			break;
		case O_SEED:
			if (bad_count("--seed", optarg, 0, INT64_MAX / 2,
				      &t.seed))
				return EXIT_USAGE;
			break;
		case O_CKPT:
			if (bad_count("--checkpoint-every", optarg, 1,
				      (int64_t)1 << 40, &t.checkpoint_every))
				return EXIT_USAGE;
			break;
		case O_MAXS:
			if (bad_real("--max-seconds", optarg, 1, 1e9,
				     &t.max_seconds))
				return EXIT_USAGE;
			break;
		case O_RESUME:
			t.resume = true;
			break;
		case O_THREADS:
			if (bad_count("--threads", optarg, 1, 4096, &v))
				return EXIT_USAGE;
			t.threads = (int)v;
			break;
		case O_POOL:
			ra.pool = optarg;
			break;
		case O_SAMPLES:
			if (bad_count("--samples", optarg, 1, (int64_t)1 << 40,
				      &ra.job.samples))
				return EXIT_USAGE;
			break;
		case O_BATCH:
			if (bad_count("--batch", optarg, 1, 1 << 24,
				      &ra.job.batch))
				return EXIT_USAGE;
			break;
		case O_DEADLINE:
			ra.deadline = optarg;
			if (hp_parse_duration(optarg, &ra.job.deadline_s, &err))
				return cli_error(EXIT_USAGE, "run: %s",
						 err.msg);
			break;
		case O_DTYPE:
			ra.job.device_type = optarg;
			break;
		case O_DEVICES:
			if (bad_count("--devices", optarg, 1, 1 << 20, &v))
				return EXIT_USAGE;
			ra.job.ndevices = (int)v;
			break;
		case O_NODES:
			if (bad_count("--nodes", optarg, 1, HP_POOL_MAX_NODES,
				      &v))
				return EXIT_USAGE;
			ra.job.nnodes = (int)v;
			break;
		case O_EST:
			ra.estimator = optarg;
			break;
		case O_CAT:
			catalog = optarg;
			break;
		case O_RANKS:
			if (bad_count("--ranks", optarg, 1, HP_PLAN_MAX_RANKS,
				      &v))
				return EXIT_USAGE;
			ra.ranks = (int)v;
			break;
		case O_BACKEND:
			if (hp_backend_parse(optarg, &so.backend))
				return cli_error(EXIT_USAGE,
						 "run: --backend '%s': give "
						 "local, mpi, slurm or "
						 "kubernetes",
						 optarg);
			break;
		case O_NAME:
			so.name = optarg;
			break;
		case O_JOBS:
			jobs = optarg;
			break;
		case O_TRAINER:
			trainer_opt = optarg;
			break;
		case O_STAGE:
			so.stage_dir = optarg;
			break;
		case O_NOFB:
			so.no_cpu_fallback = true;
			break;
		case O_HOSTGPUS:
			so.host_gpus = optarg;
			break;
		case O_PART:
			so.partition = optarg;
			break;
		case O_ACCOUNT:
			so.account = optarg;
			break;
		case O_TIME:
			so.time_limit = optarg;
			break;
		case O_GRES:
			so.gres_map = optarg;
			break;
		case O_SMPI:
			so.slurm_mpi = optarg;
			break;
		case O_IMAGE:
			so.image = optarg;
			break;
		case O_NS:
			so.k8s_namespace = optarg;
			break;
		case O_K8SVOL:
			so.k8s_volume = optarg;
			break;
		case O_NOAPPLY:
			so.k8s_no_apply = true;
			break;
		case O_FLAVOR:
			if (!strcmp(optarg, "auto"))
				so.k8s_flavor = HP_K8S_AUTO;
			else if (!strcmp(optarg, "mpijob"))
				so.k8s_flavor = HP_K8S_MPIJOB;
			else if (!strcmp(optarg, "indexed"))
				so.k8s_flavor = HP_K8S_INDEXED;
			else
				return cli_error(EXIT_USAGE,
						 "run: --k8s-flavor '%s': give "
						 "auto, mpijob or indexed",
						 optarg);
			break;
		case O_PRODUCT:
			so.product_map = optarg;
			break;
		case O_WAIT:
			wait = true;
			break;
		case O_JSON:
			json = true;
			break;
		case 'h':
			fputs(help, stdout);
			return EXIT_OK;
		default:
			return cli_error(EXIT_USAGE,
					 "run: unknown option or missing value "
					 "'%s'; see 'hetpool run --help'",
					 argv[optind - 1]);
		}
	}
	if (optind != argc - 1)
		return cli_error(EXIT_USAGE,
				 "run: give one PLAN.json or MODEL; see "
				 "'hetpool run --help'");
	input = argv[optind];
	if (access(input, R_OK))
		return cli_error(EXIT_USAGE, "run: cannot read '%s'", input);
	if (!t.data)
		return cli_error(EXIT_USAGE,
				 "run: give --data fashion-mnist, synthetic or "
				 "FOLDER");
	if (t.steps && t.epochs)
		return cli_error(EXIT_USAGE,
				 "run: give --steps or --epochs, not both");
	/* A data folder is passed on as an absolute path. */
	if (strcmp(t.data, "fashion-mnist") && strcmp(t.data, "synthetic")) {
		if (!realpath(t.data, data))
			return cli_error(
			    EXIT_USAGE,
			    "run: --data '%s': give fashion-mnist, "
			    "synthetic or an existing folder",
			    t.data);
		t.data = data;
	}
	if (so.stage_dir && so.stage_dir[0] != '/') {
		char cwd[PATH_MAX];
		if (!getcwd(cwd, sizeof(cwd)) ||
		    snprintf(stage, sizeof(stage), "%s/%s", cwd,
			     so.stage_dir) >= (int)sizeof(stage))
			return cli_error(EXIT_USAGE,
					 "run: --stage-dir path too long");
		so.stage_dir = stage;
	}
	if ((status =
		 deploy_cli_jobs_dir(jobs, "run", jobs_dir, sizeof(jobs_dir))))
		return status;
	if (so.backend != HP_BACKEND_KUBERNETES) {
		deploy_cli_trainer(trainer_opt, trainer, sizeof(trainer));
		if (!trainer[0] || access(trainer, X_OK))
			return cli_error(EXIT_USAGE,
					 "run: no hetpool-train %s%s%s; give "
					 "--trainer PATH",
					 trainer[0] ? "at '"
						    : "found (beside "
						      "hetpool, on "
						      "PATH)",
					 trainer[0] ? trainer : "",
					 trainer[0] ? "'" : "");
		so.trainer = trainer;
	} else {
		so.trainer = trainer_opt;
	}
	plan_form = is_plan(input, &plantext, &planlen);
	if (!(cat = est_cli_catalog(catalog, "run", &status)))
		goto out;
	so.cat = cat;
	if (plan_form) {
		if (!model_opt) {
			status = cli_error(
			    EXIT_USAGE, "run: with a plan, give --model FILE "
					"(the plan does not name the "
					"model)");
			goto out;
		}
		t.model = model_opt;
		if ((rc = hp_plan_parse(plantext, planlen, input, &plan,
					&err))) {
			status = cli_error(EXIT_USAGE, "run: %s", err.msg);
			goto out;
		}
		so.recommendation = plantext;
	} else {
		if (model_opt) {
			status = cli_error(EXIT_USAGE,
					   "run: '%s' is read as the model; "
					   "give --model only with a plan",
					   input);
			goto out;
		}
		t.model = input;
		if (!ra.job.samples && !strcmp(t.data, "fashion-mnist"))
			ra.job.samples = 60000;
		if (!ra.job.samples || !ra.job.batch || !ra.deadline ||
		    (!ra.job.steps && !ra.job.epochs)) {
			status = cli_error(
			    EXIT_USAGE,
			    "run: with a MODEL, give --batch B, --deadline D, "
			    "--epochs E or --steps S, and --samples N (unless "
			    "--data fashion-mnist)");
			goto out;
		}
		if (ra.job.batch > ra.job.samples) {
			status = cli_error(EXIT_USAGE,
					   "run: --batch %lld is more than "
					   "--samples %lld",
					   (long long)ra.job.batch,
					   (long long)ra.job.samples);
			goto out;
		}
		ra.job.front = 0;
		if ((status = recommend(input, &ra, &plan, &rec, cat)))
			goto out;
		so.recommendation = rec;
	}
	if (!(d = deploy_cli_open(jobs_dir, "run", &status)))
		goto out;
	rc = hp_deploy_submit(d, &plan, &t, &so, id, &err);
	if (rc) {
		if (id[0] && json) {
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
	if (wait) {
		if ((status = wait_job(d, id, &job)))
			goto out;
		if (json || job.state == HP_JOB_SUCCEEDED)
			print_job(&job, json);
		status = job.state == HP_JOB_SUCCEEDED
			     ? EXIT_OK
			     : cli_error(EXIT_FAIL, "run: job %s %s%s%s", id,
					 hp_job_state_name(job.state),
					 job.reason[0] ? ": " : "", job.reason);
	} else if (json) {
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
				id, hp_backend_name(so.backend), plan.nranks,
				plan.nranks == 1 ? "" : "s", id);
	}
out:
	hp_job_release(&job);
	hp_deploy_free(d);
	hp_plan_release(&plan);
	hp_catalog_free(cat);
	free(plantext);
	free(rec);
	return status;
}
