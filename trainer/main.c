/*
 * main.c - hetpool-train: the command line of the data-parallel trainer.
 * Parses and checks the options (bad usage: one line, exit 2, before any
 * MPI), joins the job, installs the SIGTERM handler and runs the loop.
 */
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trainer.h"
#include "util/banned.h"

static const char usage[] =
    "usage: [mpirun -np R] hetpool-train --model SPEC --data "
    "fashion-mnist|synthetic|DIR\n"
    "           --batch B --out DIR [options]\n"
    "\n"
    "Trains a model given as a hetpool spec with hetpool's engine,\n"
    "data-parallel over MPI ranks (or as one process without mpirun).\n"
    "Every step draws one global batch of B samples from a seeded shuffle;\n"
    "rank r trains on its contiguous slice (its local batch), and the\n"
    "gradients are summed weighted by local / global, so an uneven split\n"
    "makes the update one worker would make on the whole batch.  Writes\n"
    "DIR/metrics.jsonl (a line per step), DIR/checkpoint and\n"
    "DIR/results.json.  See docs/trainer.md.\n"
    "\n"
    "the job:\n"
    "  --model SPEC             a hetpool model spec (JSON) with \"classes\",\n"
    "                           or an ONNX CNN (its layers; the engine\n"
    "                           makes its own weights; classes: its outputs)\n"
    "  --input-shape CxHxW      the ONNX model's input (default: its own),\n"
    "                           e.g. 1x28x28 for Fashion-MNIST\n"
    "  --data NAME              fashion-mnist (the Debian package\n"
    "                           dataset-fashion-mnist), synthetic (random\n"
    "                           samples of the model's input shape), or a\n"
    "                           folder with train-/t10k-{images-idx3,\n"
    "                           labels-idx1}-ubyte[.gz]\n"
    "  --batch B                global batch (samples per step, all ranks)\n"
    "  --local-batches b1,...   each rank's share; sums to B (default: even)\n"
    "  --steps N | --epochs E   length of the run (default: --epochs 1)\n"
    "  --out DIR                where metrics, checkpoint and results go\n"
    "  --seed S                 weights, shuffle and dropout (default 1)\n"
    "\n"
    "devices:\n"
    "  --devices d1,...         per rank: cpu, cuda (cuda:0 of the rank's\n"
    "                           CUDA_VISIBLE_DEVICES) or cuda:K, or one\n"
    "                           for all (default cpu)\n"
    "  --threads N              CPU threads per rank (default: the cores\n"
    "                           the rank is bound to, else the host's cores\n"
    "                           / its ranks)\n"
    "  --cpu-fallback on|off    a cuda rank without a usable GPU, or given a\n"
    "                           layer the CUDA backend lacks, runs on the\n"
    "                           CPU, said in the results (default on)\n"
    "\n"
    "optimizer and learning rate:\n"
    "  --optimizer sgd|adam     SGD with momentum or Adam (default sgd)\n"
    "  --momentum M             default 0.9\n"
    "  --weight-decay W         L2 added to the gradient (default 0)\n"
    "  --lr X                   learning rate (at --ref-batch; default 0.01)\n"
    "  --lr-rule none|linear|sqrt  scale X by B/ref or sqrt(B/ref)\n"
    "                           (default none)\n"
    "  --ref-batch N            the batch X was tuned for\n"
    "  --warmup-steps N         ramp linearly to the rate over N steps\n"
    "                           (default 0)\n"
    "  --lr-schedule constant|step|cosine|exp-ramp  (default constant)\n"
    "  --lr-step-every N --lr-gamma G   step: x G every N steps (G 0.1)\n"
    "  --lr-min X --lr-max Y    cosine: down to X; exp-ramp: from X up to Y\n"
    "                           exponentially over the run (lr-find)\n"
    "  --stop-on-divergence F   stop once the smoothed loss exceeds F x its\n"
    "                           minimum (lr-find uses 4; default off)\n"
    "\n"
    "evaluation, checkpoints, time:\n"
    "  --eval-every N           test-set evaluation every N steps (and at\n"
    "                           the end, always; default: at the end only)\n"
    "  --eval-samples N         evaluate on the first N test samples\n"
    "                           (default: all)\n"
    "  --checkpoint-every N     a checkpoint every N steps (and at the end;\n"
    "                           default: at the end only)\n"
    "  --resume                 continue from DIR/checkpoint\n"
    "  --overwrite              start over in a DIR that holds an earlier\n"
    "                           run (without it, or --resume, such a DIR\n"
    "                           is refused: nothing is lost by mistake)\n"
    "  --max-seconds S          stop cleanly after S seconds of training\n"
    "  --stall-timeout S|auto|off  end the run when no step has completed\n"
    "                           for S seconds (a rank stopped or hung holds\n"
    "                           the others for ever); auto (the default):\n"
    "                           the larger of 600 s and 20 x the slowest\n"
    "                           step, from the first step on\n"
    "\n"
    "balance:\n"
    "  --rebalance on|off       re-split the local batches in proportion to\n"
    "                           measured throughput when the ranks' step\n"
    "                           times differ (default on)\n"
    "  --rebalance-window N     steps per measurement (default 20)\n"
    "  --rebalance-threshold T  re-split when slowest / fastest - 1 > T\n"
    "                           (default 0.05)\n"
    "  --rebalance-memory M     windows each rank's speed is averaged over\n"
    "                           (default 4; 1: the last window alone)\n"
    "\n"
    "other:\n"
    "  --synthetic-samples N    training samples of --data synthetic\n"
    "                           (default 16384; the test set has 2048)\n"
    "  --catalog FILE --estimator FILE  for the energy predicted where a\n"
    "                           device does not measure it (default: the\n"
    "                           shipped data/)\n"
    "  --help, --version\n"
    "\n"
    "Exit status: 0 done (also when stopped by divergence or --max-seconds;\n"
    "see results.json), 1 a failure while training, 2 bad usage or input,\n"
    "143 cancelled by SIGTERM (a checkpoint and the results are written).\n"
    "\n"
    "examples:\n"
    "  hetpool-train --model cnn.json --data fashion-mnist --batch 64 \\\n"
    "      --epochs 1 --lr 0.05 --out run1\n"
    "  mpirun -np 2 hetpool-train --model cnn.json --data synthetic \\\n"
    "      --batch 64 --local-batches 48,16 --steps 200 --out run2\n"
    "  mpirun -np 2 hetpool-train --model cnn.json --data fashion-mnist \\\n"
    "      --batch 64 --steps 2000 --checkpoint-every 100 --out run3 "
    "--resume\n";

/* Rank from the launcher's environment, to print usage errors once. */
static int launcher_rank(void)
{
	static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK",
					   "PMI_RANK"};
	int64_t r;

	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		const char *v = getenv(vars[i]);
		if (v && !hp_parse_i64(v, 0, INT32_MAX, &r))
			return (int)r;
	}
	return 0;
}

static int usage_error(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	if (launcher_rank() != 0)
		return TR_EXIT_USAGE;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	tr_error("%s", buf);
	return TR_EXIT_USAGE;
}

static int num_i64(const char *opt, const char *s, int64_t lo, int64_t hi,
		   int64_t *out)
{
	if (hp_parse_i64(s, lo, hi, out))
		return usage_error("--%s: '%.40s' is not a whole number in "
				   "%lld..%lld",
				   opt, s, (long long)lo, (long long)hi);
	return 0;
}

static int num_f64(const char *opt, const char *s, double lo, double hi,
		   double *out)
{
	if (hp_parse_double(s, out) || !isfinite(*out) || *out < lo ||
	    *out > hi)
		return usage_error("--%s: '%.40s' is not a number in %g..%g",
				   opt, s, lo, hi);
	return 0;
}

static int on_off(const char *opt, const char *s, bool *out)
{
	if (!strcmp(s, "on"))
		*out = true;
	else if (!strcmp(s, "off"))
		*out = false;
	else
		return usage_error("--%s: '%.40s' is not on or off", opt, s);
	return 0;
}

/* A file or folder named on the command line: an empty name names none
 * (--out "" failed later as "cannot create '': File name too long"). */
static int path_arg(const char *opt, const char *s, const char **out)
{
	if (!*s)
		return usage_error("--%s: empty path", opt);
	*out = s;
	return 0;
}

enum {
	O_MODEL = 256,
	O_INSHAPE,
	O_DATA,
	O_BATCH,
	O_LOCAL,
	O_STEPS,
	O_EPOCHS,
	O_LR,
	O_SEED,
	O_OUT,
	O_DEVICES,
	O_THREADS,
	O_OPT,
	O_MOMENTUM,
	O_WD,
	O_RULE,
	O_REF,
	O_WARMUP,
	O_SCHED,
	O_STEP_EVERY,
	O_GAMMA,
	O_LR_MIN,
	O_LR_MAX,
	O_DIV,
	O_EVAL_EVERY,
	O_EVAL_SAMPLES,
	O_CKPT_EVERY,
	O_RESUME,
	O_OVERWRITE,
	O_REBAL,
	O_REBAL_WIN,
	O_REBAL_THR,
	O_REBAL_MEM,
	O_MAX_S,
	O_STALL,
	O_FALLBACK,
	O_SYNTH,
	O_CATALOG,
	O_ESTIMATOR,
	O_HELP,
	O_VERSION,
};

static const struct option longopts[] = {
    {"model", required_argument, NULL, O_MODEL},
    {"input-shape", required_argument, NULL, O_INSHAPE},
    {"data", required_argument, NULL, O_DATA},
    {"batch", required_argument, NULL, O_BATCH},
    {"local-batches", required_argument, NULL, O_LOCAL},
    {"steps", required_argument, NULL, O_STEPS},
    {"epochs", required_argument, NULL, O_EPOCHS},
    {"lr", required_argument, NULL, O_LR},
    {"seed", required_argument, NULL, O_SEED},
    {"out", required_argument, NULL, O_OUT},
    {"devices", required_argument, NULL, O_DEVICES},
    {"threads", required_argument, NULL, O_THREADS},
    {"optimizer", required_argument, NULL, O_OPT},
    {"momentum", required_argument, NULL, O_MOMENTUM},
    {"weight-decay", required_argument, NULL, O_WD},
    {"lr-rule", required_argument, NULL, O_RULE},
    {"ref-batch", required_argument, NULL, O_REF},
    {"warmup-steps", required_argument, NULL, O_WARMUP},
    {"lr-schedule", required_argument, NULL, O_SCHED},
    {"lr-step-every", required_argument, NULL, O_STEP_EVERY},
    {"lr-gamma", required_argument, NULL, O_GAMMA},
    {"lr-min", required_argument, NULL, O_LR_MIN},
    {"lr-max", required_argument, NULL, O_LR_MAX},
    {"stop-on-divergence", required_argument, NULL, O_DIV},
    {"eval-every", required_argument, NULL, O_EVAL_EVERY},
    {"eval-samples", required_argument, NULL, O_EVAL_SAMPLES},
    {"checkpoint-every", required_argument, NULL, O_CKPT_EVERY},
    {"resume", no_argument, NULL, O_RESUME},
    {"overwrite", no_argument, NULL, O_OVERWRITE},
    {"rebalance", required_argument, NULL, O_REBAL},
    {"rebalance-window", required_argument, NULL, O_REBAL_WIN},
    {"rebalance-threshold", required_argument, NULL, O_REBAL_THR},
    {"rebalance-memory", required_argument, NULL, O_REBAL_MEM},
    {"max-seconds", required_argument, NULL, O_MAX_S},
    {"stall-timeout", required_argument, NULL, O_STALL},
    {"cpu-fallback", required_argument, NULL, O_FALLBACK},
    {"synthetic-samples", required_argument, NULL, O_SYNTH},
    {"catalog", required_argument, NULL, O_CATALOG},
    {"estimator", required_argument, NULL, O_ESTIMATOR},
    {"help", no_argument, NULL, O_HELP},
    {"version", no_argument, NULL, O_VERSION},
    {NULL, 0, NULL, 0},
};

#define BIG ((int64_t)1 << 40)

static int parse(int argc, char **argv, struct tr_opts *o)
{
	int ch, rc = 0;
	int64_t v;
	double d;
	bool have_steps = false, have_epochs = false;

	memset(o, 0, sizeof(*o));
	hp_lr_plan_init(&o->lr);
	o->epochs = 1;
	o->seed = 1;
	o->opt = HP_OPT_SGD;
	o->momentum = 0.9;
	o->rebalance = true;
	o->rebal_window = 20;
	o->rebal_threshold = 0.05;
	o->rebal_memory = HP_REBALANCE_MEMORY;
	o->cpu_fallback = true;
	o->synthetic_samples = HP_SYNTHETIC_SAMPLES;
	o->stall_s = -1;
	opterr = 0;
	while (!rc &&
	       (ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		const char *name =
		    optind > 0 && optind <= argc ? argv[optind - 1] : "?";
		switch (ch) {
		case O_MODEL:
			rc = path_arg("model", optarg, &o->model);
			break;
		case O_INSHAPE: {
			const char *q = optarg;
			char *end;
			for (int k = 0; k < 3 && !rc; k++) {
				long v = strtol(q, &end, 10);
				if (end == q || v < 1 || v > 65536 ||
				    (k < 2 ? *end != 'x' : *end != '\0'))
					rc = usage_error(
					    "--input-shape: give CxHxW, e.g. "
					    "1x28x28");
				o->input_shape[k] = v;
				q = end + 1;
			}
			break;
		}
		case O_DATA:
			o->data = optarg;
			break;
		case O_BATCH:
			rc = num_i64("batch", optarg, 1, (int64_t)1 << 31,
				     &o->batch);
			break;
		case O_LOCAL:
			o->local_batches = optarg;
			break;
		case O_STEPS:
			rc = num_i64("steps", optarg, 1, BIG, &o->steps);
			have_steps = true;
			break;
		case O_EPOCHS:
			rc = num_f64("epochs", optarg, 1e-9, 1e9, &o->epochs);
			have_epochs = true;
			break;
		case O_LR:
			rc = num_f64("lr", optarg, 0, 1e6, &o->lr.lr);
			break;
		case O_SEED:
			rc = num_i64("seed", optarg, 0, INT64_MAX, &v);
			o->seed = (uint64_t)v;
			break;
		case O_OUT:
			rc = path_arg("out", optarg, &o->out);
			break;
		case O_DEVICES:
			o->devices = optarg;
			break;
		case O_THREADS:
			rc = num_i64("threads", optarg, 1, 4096, &v);
			o->threads = (int)v;
			break;
		case O_OPT:
			if (!strcmp(optarg, "sgd"))
				o->opt = HP_OPT_SGD;
			else if (!strcmp(optarg, "adam"))
				o->opt = HP_OPT_ADAM;
			else
				rc = usage_error("--optimizer: '%.40s' is not "
						 "sgd or adam",
						 optarg);
			break;
		case O_MOMENTUM:
			rc = num_f64("momentum", optarg, 0, 0.999999,
				     &o->momentum);
			break;
		case O_WD:
			rc = num_f64("weight-decay", optarg, 0, 1e3,
				     &o->weight_decay);
			break;
		case O_RULE:
			if (hp_lr_rule_parse(optarg, &o->lr.rule))
				rc = usage_error("--lr-rule: '%.40s' is not "
						 "none, linear or sqrt",
						 optarg);
			break;
		case O_REF:
			rc = num_i64("ref-batch", optarg, 1, (int64_t)1 << 31,
				     &o->lr.ref_batch);
			break;
		case O_WARMUP:
			rc = num_i64("warmup-steps", optarg, 0, BIG,
				     &o->lr.warmup_steps);
			break;
		case O_SCHED:
			if (hp_lr_sched_parse(optarg, &o->lr.sched))
				rc = usage_error("--lr-schedule: '%.40s' is "
						 "not constant, step, cosine "
						 "or exp-ramp",
						 optarg);
			break;
		case O_STEP_EVERY:
			rc = num_i64("lr-step-every", optarg, 1, BIG,
				     &o->lr.step_every);
			break;
		case O_GAMMA:
			rc = num_f64("lr-gamma", optarg, 1e-9, 1e3,
				     &o->lr.gamma);
			break;
		case O_LR_MIN:
			rc = num_f64("lr-min", optarg, 0, 1e6, &o->lr.lr_min);
			break;
		case O_LR_MAX:
			rc = num_f64("lr-max", optarg, 0, 1e6, &o->lr.lr_max);
			break;
		case O_DIV:
			rc = num_f64("stop-on-divergence", optarg, 1, 1e9,
				     &o->stop_div);
			break;
		case O_EVAL_EVERY:
			rc = num_i64("eval-every", optarg, 1, BIG,
				     &o->eval_every);
			break;
		case O_EVAL_SAMPLES:
			rc = num_i64("eval-samples", optarg, 1, BIG,
				     &o->eval_samples);
			break;
		case O_CKPT_EVERY:
			rc = num_i64("checkpoint-every", optarg, 1, BIG,
				     &o->ckpt_every);
			break;
		case O_RESUME:
			o->resume = true;
			break;
		case O_OVERWRITE:
			o->overwrite = true;
			break;
		case O_REBAL:
			rc = on_off("rebalance", optarg, &o->rebalance);
			break;
		case O_REBAL_WIN:
			rc = num_i64("rebalance-window", optarg, 3, 100000, &v);
			o->rebal_window = (int)v;
			break;
		case O_REBAL_THR:
			rc = num_f64("rebalance-threshold", optarg, 0, 100,
				     &o->rebal_threshold);
			break;
		case O_REBAL_MEM:
			rc = num_i64("rebalance-memory", optarg, 1, 1000, &v);
			o->rebal_memory = (int)v;
			break;
		case O_MAX_S:
			rc = num_f64("max-seconds", optarg, 1e-3, 1e9, &d);
			o->max_seconds = d;
			break;
		case O_STALL:
			if (!strcmp(optarg, "auto"))
				o->stall_s = -1;
			else if (!strcmp(optarg, "off"))
				o->stall_s = 0;
			else if (hp_parse_double(optarg, &o->stall_s) ||
				 !isfinite(o->stall_s) || o->stall_s < 1 ||
				 o->stall_s > 1e9)
				rc = usage_error("--stall-timeout: '%.40s' is "
						 "not seconds in 1..1e9, auto "
						 "or off",
						 optarg);
			break;
		case O_FALLBACK:
			rc = on_off("cpu-fallback", optarg, &o->cpu_fallback);
			break;
		case O_SYNTH:
			rc = num_i64("synthetic-samples", optarg, 1,
				     (int64_t)1 << 30, &o->synthetic_samples);
			break;
		case O_CATALOG:
			rc = path_arg("catalog", optarg, &o->catalog);
			break;
		case O_ESTIMATOR:
			rc = path_arg("estimator", optarg, &o->estimator);
			break;
		case O_HELP:
			if (launcher_rank() == 0)
				fputs(usage, stdout);
			exit(0);
		case O_VERSION:
			if (launcher_rank() == 0)
				printf("hetpool-train %s\n", hp_version());
			exit(0);
		default:
			if (optopt == O_RESUME || optopt == O_OVERWRITE ||
			    optopt == O_HELP || optopt == O_VERSION)
				rc = usage_error("option '%.40s' takes no "
						 "value",
						 name);
			else if (optopt >= O_MODEL)
				rc = usage_error("option '%.40s' needs a value",
						 name);
			else
				rc = usage_error("unknown option '%.40s' "
						 "(see --help)",
						 name);
		}
	}
	if (rc)
		return rc;
	if (optind < argc)
		return usage_error("unexpected argument '%.40s' (see --help)",
				   argv[optind]);
	if (!o->model || !o->data || !o->batch || !o->out)
		return usage_error("--model, --data, --batch and --out are "
				   "required (see --help)");
	if (have_steps && have_epochs)
		return usage_error("give --steps or --epochs, not both");
	if (o->resume && o->overwrite)
		return usage_error("give --resume or --overwrite, not both");
	if (o->lr.sched == HP_LR_EXP_RAMP &&
	    !(o->lr.lr_min > 0 && o->lr.lr_max > o->lr.lr_min))
		return usage_error("--lr-schedule exp-ramp needs 0 < --lr-min "
				   "< --lr-max");
	if (o->lr.sched != HP_LR_EXP_RAMP && !(o->lr.lr > 0))
		return usage_error("--lr must be positive");
	if (o->lr.rule != HP_LR_NONE && !o->lr.ref_batch)
		return usage_error("--lr-rule %s needs --ref-batch N",
				   hp_lr_rule_name(o->lr.rule));
	if (o->lr.sched == HP_LR_STEP && !o->lr.step_every)
		return usage_error("--lr-schedule step needs --lr-step-every "
				   "N");
	return 0;
}

static void on_signal(int sig)
{
	(void)sig;
	tr_stop_signal = 1;
}

int main(int argc, char **argv)
{
	struct tr_opts o;
	struct tr_comm c;
	struct sigaction sa;
	char msg[256];
	int rc = parse(argc, argv, &o);

	if (rc)
		return rc;
	if (tr_comm_init(&c, &argc, &argv, msg, sizeof(msg))) {
		tr_error("%s", msg);
		return TR_EXIT_FAIL;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	rc = tr_run(&o, &c);
	tr_comm_finalize(&c);
	return rc;
}
