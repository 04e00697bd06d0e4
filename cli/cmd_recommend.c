/* cmd_recommend.c - `hetpool recommend`: the least-energy configuration of
 * a pool's free devices that trains a model by a deadline, and how to run
 * it (local batches, gradient weights, learning rate). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "hetpool/pool.h"
#include "hetpool/recommend.h"
#include "opt.h"

static const char help[] =
    "usage: hetpool recommend MODEL --pool POOL.json --samples N\n"
    "                         (--epochs E | --steps S)\n"
    "                         (--batch B | --batch-min B1 --batch-max B2)\n"
    "                         --deadline D [--device-type T] [--devices K]\n"
    "                         [--nodes M] [--lr-rule linear|sqrt|none]\n"
    "                         [--ref-batch R] [--max-mix 1|2] [--front K]\n"
    "                         [--estimator FILE] [--catalog FILE]\n"
    "                         [--input-shape CxHxW] [--input-rate R|measured\n"
    "                         [--input-source-px P]] [--json] [--explain]\n"
    "\n"
    "Recommend the configuration of least energy over the pool's free "
    "devices\n"
    "that trains MODEL by the deadline: which devices on which nodes, the "
    "local\n"
    "batch of each (they sum to the global batch and equalise the types' "
    "step\n"
    "times), the gradient weights and the learning-rate scale.  When no\n"
    "configuration meets the deadline, the fastest is given with its time.\n"
    "Configurations: one device type, or a pair of types (mixed), any "
    "count,\n"
    "any packing onto nodes with free devices, one type per node.  The "
    "model of\n"
    "time and energy is in docs/recommender.md.\n"
    "\n"
    "  MODEL             an ONNX file (.onnx) or a hetpool JSON spec\n"
    "  --pool FILE       the pool (JSON; see data/pools/sample.json)\n"
    "  --samples N       dataset size in samples\n"
    "  --epochs E        passes over the data (steps = ceil(N / B) x E)\n"
    "  --steps S         or training steps\n"
    "  --batch B         global batch\n"
    "  --batch-min/-max  or bounds: each power of two within is searched "
    "(there\n"
    "                    must be one) and the best kept\n"
    "  --deadline D      wall clock: 90m, 2h, 1h30m, 45s, 1d or seconds\n"
    "  --confidence P    judge the deadline on this quantile of the "
    "predicted\n"
    "                    time (default 0.9: the job ends in time 9 times "
    "in 10;\n"
    "                    0.5: on the point prediction)\n"
    "  --device-type T   only this catalog type\n"
    "  --devices K       exactly K devices\n"
    "  --nodes M         exactly M nodes\n"
    "  --lr-rule R       linear (default: lr x B / R), sqrt, or none\n"
    "  --ref-batch R     the batch the learning rate was tuned at "
    "(default: B)\n"
    "  --max-mix N       1: one type per job; 2 (default): pairs too\n"
    "  --front K         the time-energy front, exact, at K deadlines from "
    "the\n"
    "                    fastest to the least energy (default 5; 2-16; 0: "
    "only\n"
    "                    the configurations the search costed, fastest)\n"
    "  --input-rate R    the input pipeline: samples/s one host core "
    "prepares\n"
    "                    (decode, augmentation), or 'measured': this "
    "host's JPEG\n"
    "                    pipeline ('hetpool host --measure'); a GPU's step "
    "is then\n"
    "                    at least its local batch / (R x the cores a "
    "device has\n"
    "                    on its node: the pool's cpu_cores over its "
    "devices)\n"
    "  --input-source-px P  with 'measured': pixels of a stored image "
    "(default\n"
    "                    187500, 500x375)\n"
    "  --estimator FILE  default data/estimators/default.json\n"
    "  --catalog FILE    device catalog (default: data/devices.csv)\n"
    "  --json            print JSON for scripts\n"
    "  --explain         print the plan and the reasoning for a person\n"
    "\n"
    "exit status: 0 a recommendation was made (read 'feasible': false when "
    "no\n"
    "configuration meets the deadline or the constraints cannot be met; "
    "then\n"
    "the fastest configuration, if any, is given), 1 a failure while "
    "working,\n"
    "2 bad input (options, model, pool file).\n"
    "\n"
    "examples:\n"
    "  hetpool recommend data/models/resnet50.train.onnx --pool "
    "data/pools/sample.json \\\n"
    "      --samples 1281167 --epochs 1 --batch 256 --deadline 2h "
    "--explain\n"
    "  hetpool recommend resnet50.onnx --pool pool.json --samples 50000 "
    "--steps 2000 \\\n"
    "      --batch-min 128 --batch-max 1024 --deadline 45m --json\n";

static const char *dur(double s, char *buf, size_t n)
{
	if (!isfinite(s))
		snprintf(buf, n, "?");
	else if (s < 120)
		snprintf(buf, n, "%.1f s", s);
	else if (s < 7200)
		snprintf(buf, n, "%.1f min", s / 60);
	else
		snprintf(buf, n, "%.2f h", s / 3600);
	return buf;
}

static const char *energy(double j, char *buf, size_t n)
{
	if (!isfinite(j))
		snprintf(buf, n, "?");
	else
		snprintf(buf, n, "%.2f kWh", j / 3.6e6);
	return buf;
}

/*
 * Names and reasons come from files (the pool's node names, the catalog's
 * types, the estimator's messages): escaped before they reach the
 * terminal, whatever the loaders let through.  E(s, buf) escapes s into
 * the char array buf.
 */
#define E(s, buf) cli_esc((s), (buf), sizeof(buf))

static void print_config(const struct hp_rec_config *c,
			 const struct hp_pool *pool, bool groups)
{
	char a[32], b[32], d[32], e[32], f[32], h[32], n1[256], n2[256];

	printf("  ");
	for (int j = 0; j < c->ntypes; j++)
		printf("%s%d x %s", j ? " + " : "", c->types[j].count,
		       E(c->types[j].type, n1));
	printf(" on %d node%s, global batch %lld: %s [%s, %s], %s [%s, %s]\n",
	       c->nnodes, c->nnodes == 1 ? "" : "s", (long long)c->global_batch,
	       dur(c->time_s, a, sizeof(a)), dur(c->time_lo_s, b, sizeof(b)),
	       dur(c->time_hi_s, d, sizeof(d)),
	       energy(c->energy_j, e, sizeof(e)),
	       energy(c->energy_lo_j, f, sizeof(f)),
	       energy(c->energy_hi_j, h, sizeof(h)));
	if (!groups)
		return;
	for (int i = 0; i < c->ngroups; i++)
		printf("    %-16s %3d x %-10s local batch %5lld  grad weight "
		       "%.4g\n",
		       E(pool->nodes[c->groups[i].node].name, n1),
		       c->groups[i].count, E(c->groups[i].type, n2),
		       (long long)c->groups[i].local_batch,
		       c->groups[i].grad_weight);
}

/* With batch bounds: the global batches searched, and the one kept. */
static void print_batches(const struct hp_rec_result *r,
			  const struct hp_rec_job *job, const char *label)
{
	int64_t bs[HP_REC_MAX_BATCHES];
	int nb = hp_rec_batches(job, bs);

	if (job->batch)
		return;
	printf("%ssearched ", label);
	for (int i = 0; i < nb; i++)
		printf("%s%lld", i ? ", " : "", (long long)bs[i]);
	printf(" (the powers of two in [%lld, %lld])",
	       (long long)job->batch_min, (long long)job->batch_max);
	if (r->found)
		printf("; kept %lld", (long long)r->choice.global_batch);
	printf("\n");
}

/* How the chosen configuration's all-reduce crosses the network: each
 * transport its used nodes take, with its share of the line rate. */
static void print_transports(const struct hp_rec_config *c,
			     const struct hp_pool *pool,
			     const struct hp_catalog *cat, double log_q90)
{
	bool seen[HP_NET_RDMA + 1] = {false};
	int n = 0;

	if (c->nnodes < 2)
		return;
	for (int i = 0; i < c->ngroups; i++) {
		int node = c->groups[i].node;
		if (node >= 0 && node < pool->n)
			seen[hp_pool_node_transport(&pool->nodes[node], cat)] =
			    true;
	}
	printf("             (across nodes: ");
	for (int t = HP_NET_TCP; t <= HP_NET_RDMA; t++) {
		if (!seen[t])
			continue;
		printf("%s%s, %.0f%% of the line rate", n++ ? "; " : "",
		       t == HP_NET_TCP	    ? "MPI over TCP"
		       : t == HP_NET_SOCKET ? "NCCL over sockets"
					    : "NCCL over RDMA",
		       100 * hp_comm_transport_efficiency(
				 (enum hp_net_transport)t));
	}
	printf("; its 90th percentile %.2fx the point: docs/estimator.md, "
	       "\"Transports\")\n",
	       exp(log_q90));
}

static void print_explain(const struct hp_rec_result *r,
			  const struct hp_rec_job *job,
			  const struct hp_pool *pool,
			  const struct hp_catalog *cat)
{
	const struct hp_rec_config *c = &r->choice;
	char a[32], b[32], n1[256], n2[1024];
	int64_t ref;

	printf("deadline     %s\n", dur(r->deadline_s, a, sizeof(a)));
	print_batches(r, job, "batches      ");
	if (!r->found) {
		printf("no configuration: %s\n", E(r->reason, n2));
		return;
	}
	printf("%s\n", r->feasible ? "choice       least energy that meets "
				     "the deadline"
				   : "choice       none meets the deadline; "
				     "the fastest:");
	print_config(c, pool, true);
	printf("per type     ");
	for (int j = 0; j < c->ntypes; j++)
		printf("%s%s: %lld samples, local batch <= %lld, step %.4g s, "
		       "%.0f W",
		       j ? "\n             " : "", E(c->types[j].type, n1),
		       (long long)c->types[j].batch,
		       (long long)c->types[j].local_max,
		       c->types[j].step_time_s, c->types[j].power_w);
	printf("\n");
	printf("step         %.4g s [%.4g, %.4g] = compute %.4g s + "
	       "all-reduce %.4g s\n",
	       c->step_time_s, c->step_time_lo_s, c->step_time_hi_s,
	       c->compute_time_s, c->comm_time_s);
	printf("             (all-reduce: %.3g s within nodes, %.3g s across; "
	       "not overlapped with backward)\n",
	       c->intra_time_s, c->inter_time_s);
	print_transports(c, pool, cat, r->comm_log_q90);
	printf("job          %lld steps x step + start-up %.0f s "
	       "(%.0f s + %.0f s per node) = %s\n",
	       (long long)c->steps, c->startup_s, HP_REC_STARTUP_S,
	       HP_REC_STARTUP_NODE_S, dur(c->time_s, a, sizeof(a)));
	printf("deadline     judged on the %.0fth percentile: %s; holds with "
	       "probability %.0f%%\n",
	       100 * r->confidence, dur(c->time_judged_s, a, sizeof(a)),
	       100 * c->deadline_probability);
	printf("energy       %.0f W (devices at their utilisation + each "
	       "used node's base) x time = %s\n",
	       c->power_w, energy(c->energy_j, b, sizeof(b)));
	printf("             idle devices on used nodes stay free for other "
	       "jobs and are not charged\n");
	ref = job->ref_batch > 0 ? job->ref_batch : c->global_batch;
	printf("gradients    each device's gradient weighted by local / "
	       "global batch, so\n             the update equals one device's "
	       "at batch %lld\n",
	       (long long)c->global_batch);
	printf("lr           %s rule: lr x %.4g (batch %lld vs reference "
	       "%lld)",
	       hp_lr_rule_name(job->lr_rule), c->lr_scale,
	       (long long)c->global_batch, (long long)ref);
	if (c->warmup_steps > 0)
		printf(", linear warm-up over the first %lld steps",
		       (long long)c->warmup_steps);
	printf("\n");
	if (!r->feasible)
		printf("why          %s\n", E(r->reason, n2));
	if (r->npareto > 1) {
		printf("time-energy front (%d, %s):\n", r->npareto,
		       r->pareto_exact
			   ? "each the least energy at its judged time"
			   : "of the configurations costed");
		for (int i = 0; i < r->npareto; i++)
			print_config(&r->pareto[i], pool, false);
	}
	if (r->nrejected) {
		printf("alternatives:\n");
		for (int i = 0; i < r->nrejected; i++)
			printf("  %-22s %s\n", E(r->rejected[i].what, n1),
			       E(r->rejected[i].reason, n2));
	}
	for (int i = 0; i < r->nnotes; i++)
		printf("note         %s\n", E(r->notes[i], n2));
}

static void print_short(const struct hp_rec_result *r,
			const struct hp_rec_job *job,
			const struct hp_pool *pool)
{
	char n2[1024];

	print_batches(r, job, "global batches ");
	if (!r->found) {
		printf("no configuration: %s\n", E(r->reason, n2));
		return;
	}
	printf("%s\n", r->feasible ? "meets the deadline:"
				   : "misses the deadline (fastest):");
	print_config(&r->choice, pool, true);
	printf("deadline holds with probability %.0f%% (judged on the %.0fth "
	       "percentile of the predicted time)\n",
	       100 * r->choice.deadline_probability, 100 * r->confidence);
	printf("lr x %.4g", r->choice.lr_scale);
	if (r->choice.warmup_steps)
		printf(", warm-up %lld steps",
		       (long long)r->choice.warmup_steps);
	printf("\n");
	if (!r->feasible)
		printf("%s\n", E(r->reason, n2));
}

struct recommend_args {
	struct hp_rec_job job;
	const char *pool, *estimator, *catalog;
	int lr_rule;
	struct cli_dims shape;
	const char *input_rate; /* R, or "measured" */
	double input_source_px;
	bool json, explain;
};

static const struct cli_word lr_rule_words[] = {
    {"linear", HP_LR_LINEAR},
    {"sqrt", HP_LR_SQRT},
    {"none", HP_LR_NONE},
    {NULL, 0},
};

#define RA struct recommend_args
static const struct cli_opt recommend_opts[] = {
    CLI_OPT_STR("pool", RA, pool),
    CLI_OPT_INT("samples", RA, job.samples, 1, (int64_t)1 << 40),
    CLI_OPT_INT("epochs", RA, job.epochs, 1, 1 << 20),
    CLI_OPT_INT("steps", RA, job.steps, 1, (int64_t)1 << 40),
    CLI_OPT_INT("batch", RA, job.batch, 1, 1 << 24),
    CLI_OPT_INT("batch-min", RA, job.batch_min, 1, 1 << 24),
    CLI_OPT_INT("batch-max", RA, job.batch_max, 1, 1 << 24),
    CLI_OPT_DURATION("deadline", RA, job.deadline_s),
    CLI_OPT_NUM_ABOVE("confidence", RA, job.confidence, 0, 0.999999),
    CLI_OPT_STR("device-type", RA, job.device_type),
    CLI_OPT_INT("devices", RA, job.ndevices, 1, 1 << 20),
    CLI_OPT_INT("nodes", RA, job.nnodes, 1, HP_POOL_MAX_NODES),
    CLI_OPT_WORD("lr-rule", RA, lr_rule, lr_rule_words),
    CLI_OPT_INT("ref-batch", RA, job.ref_batch, 1, 1 << 24),
    CLI_OPT_INT("max-mix", RA, job.max_mix, 1, HP_REC_MAX_MIX),
    CLI_OPT_INT("front", RA, job.front, 0, HP_REC_FRONT_MAX),
    CLI_OPT_STR("estimator", RA, estimator),
    CLI_OPT_STR("catalog", RA, catalog),
    CLI_OPT_DIMS("input-shape", RA, shape),
    CLI_OPT_STR("input-rate", RA, input_rate),
    CLI_OPT_NUM_ABOVE("input-source-px", RA, input_source_px, 0, 1e9),
    CLI_OPT_FLAG("json", RA, json),
    CLI_OPT_FLAG("explain", RA, explain),
    CLI_OPT_END,
};
#undef RA

/* What the options do not say alone; 0 or the exit status after one
 * error line. */
static int check_job(const struct hp_rec_job *job, bool json, bool explain)
{
	int64_t bs[HP_REC_MAX_BATCHES];

	if (job->front == 1)
		return cli_error(EXIT_USAGE,
				 "recommend: --front 1: give 0, or 2 to %d "
				 "deadlines (the fastest and the least "
				 "energy at least)",
				 HP_REC_FRONT_MAX);
	if (!job->samples)
		return cli_error(EXIT_USAGE, "recommend: give --samples N");
	if (!job->epochs == !job->steps)
		return cli_error(EXIT_USAGE,
				 "recommend: give --epochs E or --steps S "
				 "(one of them)");
	if (job->batch && (job->batch_min || job->batch_max))
		return cli_error(EXIT_USAGE,
				 "recommend: give --batch or --batch-min/"
				 "--batch-max, not both");
	if (!job->batch && (!job->batch_min || !job->batch_max))
		return cli_error(EXIT_USAGE,
				 "recommend: give --batch B, or both "
				 "--batch-min and --batch-max");
	if (!job->batch && job->batch_min > job->batch_max)
		return cli_error(EXIT_USAGE,
				 "recommend: --batch-min %lld is more than "
				 "--batch-max %lld",
				 (long long)job->batch_min,
				 (long long)job->batch_max);
	if (!job->batch && !hp_rec_batches(job, bs)) {
		int64_t lo = 1;
		while (lo <= job->batch_min / 2)
			lo *= 2;
		return cli_error(EXIT_USAGE,
				 "recommend: --batch-min %lld --batch-max %lld "
				 "hold no power of two, and only the powers "
				 "of two within are searched (the nearest are "
				 "%lld and %lld); widen the bounds or give "
				 "--batch B",
				 (long long)job->batch_min,
				 (long long)job->batch_max, (long long)lo,
				 (long long)lo * 2);
	}
	if ((job->batch ? job->batch : job->batch_max) > job->samples)
		return cli_error(
		    EXIT_USAGE,
		    "recommend: %s %lld is more than --samples "
		    "%lld: a step would take more samples than "
		    "the data holds",
		    job->batch ? "--batch" : "--batch-max",
		    (long long)(job->batch ? job->batch : job->batch_max),
		    (long long)job->samples);
	if (json && explain)
		return cli_error(EXIT_USAGE,
				 "recommend: give --json or --explain, not "
				 "both");
	if (!(job->deadline_s > 0))
		return cli_error(EXIT_USAGE, "recommend: give --deadline D");
	return 0;
}

static int cmd_recommend(int argc, char **argv)
{
	struct recommend_args a = {.lr_rule = HP_LR_LINEAR};
	struct hp_error err = {0};
	struct hp_ctx *ctx = NULL;
	const struct hp_snap *snap = NULL;
	struct hp_pool *pool = NULL;
	struct hp_model_input mi = {0};
	struct hp_rec_result res = {0};
	const char *model;
	int first, rc, status = EXIT_OK;

	a.job.front = 5;
	if ((rc = cli_parse(&cli_cmd_recommend, argc, argv, &a, &first)))
		return rc < 0 ? EXIT_OK : rc;
	a.job.lr_rule = (enum hp_lr_rule)a.lr_rule;
	if (first != argc - 1)
		return cli_error(EXIT_USAGE, "recommend: give one MODEL file; "
					     "see 'hetpool recommend --help'");
	model = argv[first];
	if (!a.pool)
		return cli_error(EXIT_USAGE, "recommend: give --pool FILE");
	if ((status = check_job(&a.job, a.json, a.explain)))
		return status;
	if (!(ctx = cli_load_ctx("recommend", a.catalog, a.estimator, true,
				 &status)))
		goto out;
	snap = hp_ctx_acquire(ctx);
	if (a.job.device_type &&
	    !cli_find_type("recommend", hp_snap_catalog(snap),
			   a.job.device_type, &status))
		goto out;
	if (!(pool = cli_load_pool("recommend", a.pool, hp_snap_catalog(snap),
				   &status)))
		goto out;
	if ((status = cli_load_model("recommend", model, 1, a.shape.d,
				     a.shape.rank, &mi)))
		goto out;
	if (a.input_rate) {
		/* a rate, or "measured": this host's JPEG pipeline at the
		 * model's input size */
		double rate = 0;
		if (strcmp(a.input_rate, "measured")) {
			if (!cli_plain_number(a.input_rate) ||
			    hp_parse_double(a.input_rate, &rate) ||
			    !(rate > 0)) {
				char e[64];
				status = cli_error(
				    EXIT_USAGE,
				    "recommend: --input-rate '%s': give "
				    "samples/s a core (a number above 0) or "
				    "'measured'",
				    cli_esc(a.input_rate, e, sizeof(e)));
				goto out;
			}
			if (a.input_source_px > 0) {
				status = cli_error(
				    EXIT_USAGE,
				    "recommend: --input-source-px costs this "
				    "host's measured pipeline; give "
				    "--input-rate measured with it");
				goto out;
			}
		}
		if ((status = cli_input_sample_s(
			 "recommend", rate, a.input_source_px,
			 mi.workload.input_size, &a.job.input_sample_s, NULL,
			 0)))
			goto out;
	} else if (a.input_source_px > 0) {
		status = cli_error(EXIT_USAGE,
				   "recommend: --input-source-px describes the "
				   "input pipeline: give --input-rate measured "
				   "too");
		goto out;
	}
	rc = hp_recommend(hp_snap_estimator(snap), hp_snap_catalog(snap),
			  &mi.workload, pool, &a.job, &res, &err);
	if (rc) {
		status =
		    cli_error(cli_status_for(rc), "recommend: %s", err.msg);
		goto out;
	}
	if (a.json) {
		char *s = hp_rec_result_json(&res, &a.job, pool);
		if (!s) {
			status = cli_error(EXIT_FAIL, "recommend: out of "
						      "memory");
			goto out;
		}
		puts(s);
		free(s);
	} else if (a.explain) {
		print_explain(&res, &a.job, pool, hp_snap_catalog(snap));
	} else {
		print_short(&res, &a.job, pool);
	}
out:
	hp_rec_result_release(&res);
	hp_model_input_release(&mi);
	hp_pool_free(pool);
	hp_snap_release(snap);
	hp_ctx_free(ctx);
	return status;
}

const struct cli_cmd cli_cmd_recommend = {
    .name = "recommend",
    .run = cmd_recommend,
    .help = help,
    .opts = recommend_opts,
    .foreign = "measure", /* 'hetpool host --measure' */
};
