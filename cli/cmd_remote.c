/*
 * cmd_remote.c - `hetpool --server URL recommend|run|jobs|status|cancel|
 * remove|logs`: the same verbs as on this machine, answered by a hetpoold
 * (docs/daemon.md): the recommendation on the devices free now in the
 * pool the server keeps, jobs planned, queued and run by it.  The token
 * comes from HETPOOL_TOKEN.
 */
#include <ctype.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "hetpool/recommend.h"
#include "opt.h"
#include "remote.h"

const char cli_remote_usage[] =
    "usage: hetpool --server URL <command> [options]\n"
    "\n"
    "Talk to a hetpoold (the pool as a web service) at URL, e.g.\n"
    "http://127.0.0.1:8080, with the token in HETPOOL_TOKEN (and, for "
    "HTTPS\n"
    "with a certificate the system does not trust, its CA file in\n"
    "HETPOOL_CACERT).\n"
    "\n"
    "commands:\n"
    "  recommend MODEL   the least-energy configuration of the devices "
    "free now\n"
    "  run MODEL         submit a job: the server plans, queues and runs "
    "it\n"
    "  jobs              list the jobs\n"
    "  status ID         a job's state, plan, devices and times\n"
    "  cancel ID         stop a job\n"
    "  remove ID         remove an ended job and its folder\n"
    "  logs ID           a job's log, or its metrics\n"
    "\n"
    "MODEL is a stored model's id, a hetpool spec (JSON, sent with the "
    "request)\n"
    "or an ONNX file (stored on the server first).\n"
    "Run 'hetpool --server URL COMMAND --help' for a command's options.\n";

static const char *server_url;

#define E(s, buf) cli_esc((s), (buf), sizeof(buf))

/* ---- shared */

static const char *jstr(json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));
	return s ? s : "";
}

/* The answer's JSON; NULL after an error line (*status). */
static json_t *answer(const struct remote *rm, struct remote_resp *r,
		      int *status)
{
	json_t *o;

	if (r->status >= 400) {
		*status = remote_fail(rm, r);
		return NULL;
	}
	o = json_loadb(r->body.data ? r->body.data : "", r->body.len, 0, NULL);
	remote_resp_release(r);
	if (!o)
		*status = cli_error(EXIT_FAIL,
				    "%s: the server's answer is not "
				    "JSON",
				    rm->cmd);
	return o;
}

static int do_json(const struct remote *rm, const char *method,
		   const char *path, json_t *body, json_t **out)
{
	struct remote_resp r;
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	int rc, status = 0;

	*out = NULL;
	rc = remote_request(rm, method, path, text ? "application/json" : NULL,
			    text, text ? strlen(text) : 0, &r);
	free(text);
	if (rc)
		return rc;
	if (!(*out = answer(rm, &r, &status)))
		return status;
	return 0;
}

static void print_json(json_t *o)
{
	char *s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);

	if (s)
		puts(s);
	free(s);
}

/* MODEL: a stored model's id, a spec (sent inline), or an ONNX file
 * (stored on the server first): sets "model_id" or "spec" in body. */
static int model_arg(const struct remote *rm, const char *model, json_t *body)
{
	struct hp_error err = {0};
	struct remote_resp r;
	char *text = NULL, path[512], name[64];
	const char *base;
	size_t len, k = 0;
	json_t *spec, *o;
	int64_t id;
	int rc, status = 0;

	if (!hp_parse_i64(model, 1, (int64_t)1 << 53, &id)) {
		json_object_set_new(body, "model_id", json_integer(id));
		return 0;
	}
	if (hp_read_file(model, 64u << 20, &text, &len, &err))
		return cli_error(EXIT_USAGE, "%s: model '%s': %s", rm->cmd,
				 model, err.msg);
	if ((spec = json_loadb(text, len, 0, NULL)) && json_is_object(spec)) {
		free(text);
		json_object_set_new(body, "spec", spec);
		return 0;
	}
	json_decref(spec);
	/* an ONNX file: stored under its file name */
	base = strrchr(model, '/') ? strrchr(model, '/') + 1 : model;
	for (; *base && k < sizeof(name) - 1 && *base != '.'; base++)
		name[k++] = isalnum((unsigned char)*base) || *base == '-' ||
				    *base == '_'
				? *base
				: '-';
	name[k] = '\0';
	snprintf(path, sizeof(path), "/v1/models?name=%s", k ? name : "model");
	rc = remote_request(rm, "POST", path, "application/octet-stream", text,
			    len, &r);
	free(text);
	if (rc)
		return rc;
	if (!(o = answer(rm, &r, &status)))
		return status;
	id = json_integer_value(json_object_get(o, "id"));
	json_decref(o);
	if (isatty(2))
		fprintf(stderr,
			"hetpool: %s stored on the server as model "
			"%lld\n",
			model, (long long)id);
	json_object_set_new(body, "model_id", json_integer(id));
	return 0;
}

/* The job description's options (recommend and run). */
struct desc_args {
	int64_t samples, epochs, steps, batch, ref_batch;
	double deadline_s;
	const char *device_type;
	int devices, nodes, lr_rule, front;
	bool json;
};

static const struct cli_word lr_words[] = {
    {"linear", HP_LR_LINEAR},
    {"sqrt", HP_LR_SQRT},
    {"none", HP_LR_NONE},
    {NULL, 0},
};

static void desc_body(const struct desc_args *a, json_t *o)
{
	json_t *c = json_object();

	if (a->samples)
		json_object_set_new(o, "samples", json_integer(a->samples));
	if (a->epochs)
		json_object_set_new(o, "epochs", json_integer(a->epochs));
	if (a->steps)
		json_object_set_new(o, "steps", json_integer(a->steps));
	if (a->batch)
		json_object_set_new(o, "batch", json_integer(a->batch));
	if (a->deadline_s > 0)
		json_object_set_new(o, "deadline_s", json_real(a->deadline_s));
	if (a->ref_batch)
		json_object_set_new(o, "ref_batch", json_integer(a->ref_batch));
	if (a->lr_rule >= 0)
		json_object_set_new(
		    o, "lr_rule",
		    json_string(hp_lr_rule_name((enum hp_lr_rule)a->lr_rule)));
	if (a->front >= 0)
		json_object_set_new(o, "front", json_integer(a->front));
	if (a->device_type)
		json_object_set_new(c, "device_type",
				    json_string(a->device_type));
	if (a->devices)
		json_object_set_new(c, "devices", json_integer(a->devices));
	if (a->nodes)
		json_object_set_new(c, "nodes", json_integer(a->nodes));
	if (json_object_size(c))
		json_object_set_new(o, "constraints", c);
	else
		json_decref(c);
}

#define DESC_OPTS(T)                                                           \
	CLI_OPT_INT("samples", T, d.samples, 1, (int64_t)1 << 40),             \
	    CLI_OPT_INT("epochs", T, d.epochs, 1, 1 << 20),                    \
	    CLI_OPT_INT("steps", T, d.steps, 1, (int64_t)1 << 40),             \
	    CLI_OPT_INT("batch", T, d.batch, 1, 1 << 24),                      \
	    CLI_OPT_DURATION("deadline", T, d.deadline_s),                     \
	    CLI_OPT_STR("device-type", T, d.device_type),                      \
	    CLI_OPT_INT("devices", T, d.devices, 1, 1 << 20),                  \
	    CLI_OPT_INT("nodes", T, d.nodes, 1, 100000),                       \
	    CLI_OPT_WORD("lr-rule", T, d.lr_rule, lr_words),                   \
	    CLI_OPT_INT("ref-batch", T, d.ref_batch, 1, 1 << 24),              \
	    CLI_OPT_INT("front", T, d.front, 0, HP_REC_FRONT_MAX),             \
	    CLI_OPT_FLAG("json", T, d.json)

/* ---- recommend */

static const char rec_help[] =
    "usage: hetpool --server URL recommend MODEL --samples N (--epochs E | "
    "--steps S)\n"
    "                         --batch B --deadline D [--device-type T] "
    "[--devices K]\n"
    "                         [--nodes M] [--lr-rule R] [--ref-batch R] "
    "[--front K]\n"
    "                         [--json]\n"
    "\n"
    "Ask the server for the configuration of least energy that trains "
    "MODEL by\n"
    "the deadline on the devices free now in its pool: the same answer as\n"
    "'hetpool recommend --json' on that pool.\n"
    "\n"
    "  MODEL             a stored model's id, a hetpool spec (JSON) or an "
    "ONNX\n"
    "                    file (stored on the server first)\n"
    "  --samples N       dataset size in samples\n"
    "  --epochs E        passes over the data, or --steps S\n"
    "  --batch B         global batch\n"
    "  --deadline D      90m, 2h, 1h30m, 45s, 1d or seconds\n"
    "  --device-type T, --devices K, --nodes M   constraints\n"
    "  --lr-rule R       linear (default), sqrt or none; --ref-batch R\n"
    "  --front K         deadlines of the time-energy front (default 5)\n"
    "  --json            print the server's JSON\n"
    "\n"
    "exit status: 0 answered, 1 the server failed or cannot be reached, 2 "
    "the\n"
    "request was refused (bad options, model, token).\n"
    "\n"
    "example:\n"
    "  HETPOOL_TOKEN=... hetpool --server http://127.0.0.1:8080 recommend "
    "3 \\\n"
    "      --samples 60000 --epochs 5 --batch 256 --deadline 1h\n";

struct rec_args {
	struct desc_args d;
};
#define RA struct rec_args
static const struct cli_opt rec_opts[] = {
    DESC_OPTS(RA),
    CLI_OPT_END,
};
#undef RA

static void print_config(json_t *c)
{
	json_t *devs = json_object_get(c, "devices"), *g;
	char a[256], b[64];
	size_t i;

	printf(
	    "  %lld devices on %lld node%s, global batch %lld: %.0f s, "
	    "%.3f kWh\n",
	    (long long)json_integer_value(json_object_get(c, "device_count")),
	    (long long)json_integer_value(json_object_get(c, "nodes")),
	    json_integer_value(json_object_get(c, "nodes")) == 1 ? "" : "s",
	    (long long)json_integer_value(json_object_get(c, "global_batch")),
	    json_number_value(json_object_get(c, "predicted_time_s")),
	    json_number_value(json_object_get(c, "predicted_energy_j")) /
		3.6e6);
	json_array_foreach(devs, i, g) printf(
	    "    %-16s %3lld x %-10s local batch %5lld\n",
	    E(jstr(g, "node"), a),
	    (long long)json_integer_value(json_object_get(g, "count")),
	    E(jstr(g, "type"), b),
	    (long long)json_integer_value(json_object_get(g, "local_batch")));
}

static int cmd_rec(int argc, char **argv)
{
	struct rec_args a = {.d = {.lr_rule = -1, .front = -1}};
	struct remote rm = {server_url, "recommend"};
	json_t *body, *o = NULL;
	char reason[512];
	int first, rc;

	if ((rc = cli_parse(cli_remote_cmds[0], argc, argv, &a, &first)))
		return rc < 0 ? EXIT_OK : rc;
	if (first != argc - 1)
		return cli_error(EXIT_USAGE, "recommend: give one MODEL; see "
					     "'hetpool --server URL recommend "
					     "--help'");
	body = json_object();
	desc_body(&a.d, body);
	if ((rc = model_arg(&rm, argv[first], body)) ||
	    (rc = do_json(&rm, "POST", "/v1/recommendations", body, &o)))
		goto out;
	if (a.d.json) {
		print_json(o);
	} else if (json_is_object(json_object_get(o, "choice"))) {
		printf("%s\n", json_is_true(json_object_get(o, "feasible"))
				   ? "meets the deadline:"
				   : "misses the deadline (fastest):");
		print_config(json_object_get(o, "choice"));
		if (!json_is_true(json_object_get(o, "feasible")))
			printf("%s\n", E(jstr(o, "reason"), reason));
	} else {
		printf("no configuration: %s\n", E(jstr(o, "reason"), reason));
	}
out:
	json_decref(body);
	json_decref(o);
	return rc;
}

/* ---- run */

static const char run_help[] =
    "usage: hetpool --server URL run MODEL --data DATA --batch B --deadline "
    "D\n"
    "                   (--epochs E | --steps S) [--samples N] [options] "
    "[--wait]\n"
    "\n"
    "Submit a job to the server, which plans it with the recommender on "
    "the\n"
    "devices free now, takes them, and runs it through its backend; a job "
    "that\n"
    "cannot start now waits in its queue.  Prints the job's id.\n"
    "\n"
    "  MODEL             a stored model's id, a hetpool spec (JSON) or an "
    "ONNX file\n"
    "  --data DATA       fashion-mnist, synthetic or a dataset registered "
    "on the\n"
    "                    server\n"
    "  --samples N       dataset size (default 60000 with fashion-mnist)\n"
    "  --epochs E, --steps S, --batch B, --deadline D   as for recommend\n"
    "  --device-type T, --devices K, --nodes M   constraints\n"
    "  --lr-rule R, --ref-batch R, --front K\n"
    "  --name NAME       a label\n"
    "  --lr X, --optimizer sgd|adam, --seed S, --warmup-steps N,\n"
    "  --checkpoint-every N, --max-seconds S, --threads N   the trainer's\n"
    "  --stall-timeout D  end the job when no step has completed for D\n"
    "                    (90, 10m; default: the trainer's)\n"
    "  --ranks N         CPU ranks when the plan is the server host's CPU\n"
    "  --wait            wait for the job to end; exit 0 only if it "
    "succeeded\n"
    "  --json            print the job as JSON\n"
    "\n"
    "exit status: 0 submitted (with --wait: succeeded), 1 it failed or the "
    "server\n"
    "cannot be reached, 2 refused (bad options, model, token, a job no "
    "configuration\n"
    "can run).\n"
    "\n"
    "example:\n"
    "  hetpool --server http://127.0.0.1:8080 run cnn.json --data "
    "fashion-mnist \\\n"
    "      --epochs 1 --batch 64 --deadline 1h --wait\n";

struct run_args {
	struct desc_args d;
	const char *data, *name;
	double lr, max_seconds, stall_s;
	int optimizer, threads, ranks;
	int64_t seed, warmup, ckpt;
	bool wait;
};
static const struct cli_word opt_words[] = {
    {"sgd", 0},
    {"adam", 1},
    {NULL, 0},
};
#define RU struct run_args
static const struct cli_opt run_opts[] = {
    DESC_OPTS(RU),
    CLI_OPT_STR("data", RU, data),
    CLI_OPT_STR("name", RU, name),
    CLI_OPT_NUM_ABOVE("lr", RU, lr, 0, 1000),
    CLI_OPT_WORD("optimizer", RU, optimizer, opt_words),
    CLI_OPT_INT("seed", RU, seed, 0, INT64_MAX / 2),
    CLI_OPT_INT("warmup-steps", RU, warmup, 0, (int64_t)1 << 40),
    CLI_OPT_INT("checkpoint-every", RU, ckpt, 1, (int64_t)1 << 40),
    CLI_OPT_NUM("max-seconds", RU, max_seconds, 1, 1e9),
    CLI_OPT_DURATION("stall-timeout", RU, stall_s),
    CLI_OPT_INT("threads", RU, threads, 1, 4096),
    CLI_OPT_INT("ranks", RU, ranks, 1, 4096),
    CLI_OPT_FLAG("wait", RU, wait),
    CLI_OPT_END,
};
#undef RU

static bool terminal(const char *state)
{
	return !strcmp(state, "succeeded") || !strcmp(state, "failed") ||
	       !strcmp(state, "cancelled");
}

static int get_job(const struct remote *rm, const char *id, json_t **out)
{
	char path[128];

	snprintf(path, sizeof(path), "/v1/jobs/%s", id);
	return do_json(rm, "GET", path, NULL, out);
}

static int cmd_run(int argc, char **argv)
{
	struct run_args a = {.d = {.lr_rule = -1, .front = -1},
			     .optimizer = -1,
			     .seed = -1,
			     .warmup = -1};
	struct remote rm = {server_url, "run"};
	json_t *body, *t, *o = NULL;
	char id[32], reason[512];
	int first, rc;

	if ((rc = cli_parse(cli_remote_cmds[1], argc, argv, &a, &first)))
		return rc < 0 ? EXIT_OK : rc;
	if (first != argc - 1)
		return cli_error(EXIT_USAGE, "run: give one MODEL; see "
					     "'hetpool --server URL run "
					     "--help'");
	body = json_object();
	t = json_object();
	desc_body(&a.d, body);
	if (a.data)
		json_object_set_new(body, "data", json_string(a.data));
	if (a.name)
		json_object_set_new(body, "name", json_string(a.name));
	if (a.lr > 0)
		json_object_set_new(t, "lr", json_real(a.lr));
	if (a.optimizer >= 0)
		json_object_set_new(t, "optimizer",
				    json_string(a.optimizer ? "adam" : "sgd"));
	if (a.seed >= 0)
		json_object_set_new(t, "seed", json_integer(a.seed));
	if (a.warmup >= 0)
		json_object_set_new(t, "warmup_steps", json_integer(a.warmup));
	if (a.ckpt)
		json_object_set_new(t, "checkpoint_every",
				    json_integer(a.ckpt));
	if (a.max_seconds > 0)
		json_object_set_new(t, "max_seconds", json_real(a.max_seconds));
	/* (the server refuses one out of range, naming the field) */
	if (a.stall_s > 0)
		json_object_set_new(t, "stall_timeout_s", json_real(a.stall_s));
	if (a.threads)
		json_object_set_new(t, "threads", json_integer(a.threads));
	if (a.ranks)
		json_object_set_new(t, "ranks", json_integer(a.ranks));
	if (json_object_size(t))
		json_object_set(body, "training", t);
	json_decref(t);
	if ((rc = model_arg(&rm, argv[first], body)) ||
	    (rc = do_json(&rm, "POST", "/v1/jobs", body, &o)))
		goto out;
	snprintf(id, sizeof(id), "%lld",
		 (long long)json_integer_value(json_object_get(o, "id")));
	if (!a.wait) {
		if (a.d.json)
			print_json(o);
		else
			printf("%s\n", id);
		if (isatty(2) && !a.d.json)
			fprintf(stderr,
				"hetpool: job %s %s; follow it with "
				"'hetpool --server URL status %s'\n",
				id, jstr(o, "state"), id);
		goto out;
	}
	while (!terminal(jstr(o, "state"))) {
		struct timespec ts = {0, 500000000};
		nanosleep(&ts, NULL);
		json_decref(o);
		if ((rc = get_job(&rm, id, &o)))
			goto out;
	}
	if (a.d.json)
		print_json(o);
	else if (!strcmp(jstr(o, "state"), "succeeded"))
		printf("job %s succeeded\n", id);
	if (strcmp(jstr(o, "state"), "succeeded"))
		rc = cli_error(EXIT_FAIL, "run: job %s %s: %s", id,
			       jstr(o, "state"), E(jstr(o, "reason"), reason));
out:
	json_decref(body);
	json_decref(o);
	return rc;
}

/* ---- jobs, status, cancel, logs */

static const char jobs_help[] =
    "usage: hetpool --server URL jobs [--state S] [--user me|ID] [--limit "
    "N] [--json]\n"
    "\n"
    "List the server's jobs, oldest first: id, state, backend, devices, "
    "age,\n"
    "name, and why a job failed, was cancelled or waits.\n"
    "\n"
    "  --state S   only these states (comma-separated): queued, starting,\n"
    "              running, succeeded, failed, cancelled\n"
    "  --user U    me, or a token id\n"
    "  --limit N   at most N (default 100)\n"
    "  --json      print the server's JSON\n"
    "\n"
    "exit status: 0 listed, 1 the server failed, 2 refused.\n"
    "\n"
    "example:\n"
    "  hetpool --server http://127.0.0.1:8080 jobs --state running,queued\n";

static const char status_help[] =
    "usage: hetpool --server URL status ID [--json]\n"
    "\n"
    "Show a job on the server: its state and why, its devices, its "
    "times, the\n"
    "predicted start and end, and whether its deadline can be met.\n"
    "\n"
    "  --json      print the server's JSON\n"
    "\n"
    "exit status: 0 shown, 1 the server failed, 2 no such job or "
    "refused.\n"
    "\n"
    "example:\n"
    "  hetpool --server http://127.0.0.1:8080 status 12\n";

static const char cancel_help[] =
    "usage: hetpool --server URL cancel ID [--json]\n"
    "\n"
    "Cancel a job on the server (yours, or any with an admin token): a "
    "queued job\n"
    "is cancelled at once, a running one is stopped and ends cancelled.\n"
    "\n"
    "  --json      print the job as JSON\n"
    "\n"
    "exit status: 0 cancelled or being stopped, 1 the server failed, 2 no "
    "such\n"
    "job, it has ended, or refused.\n"
    "\n"
    "example:\n"
    "  hetpool --server http://127.0.0.1:8080 cancel 12\n";

static const char remove_help[] =
    "usage: hetpool --server URL remove ID [--json]\n"
    "\n"
    "Remove an ended job on the server (yours, or any with an admin "
    "token),\n"
    "with its folder: logs, metrics, checkpoints, results.  Its measured "
    "steps\n"
    "stay for the estimator.  A job that has not ended stays: cancel it "
    "first.\n"
    "\n"
    "  --json      print {\"id\": ID, \"removed\": true}\n"
    "\n"
    "exit status: 0 removed, 1 the server failed, 2 no such job, it has "
    "not\n"
    "ended, or refused.\n"
    "\n"
    "example:\n"
    "  hetpool --server http://127.0.0.1:8080 remove 12\n";

static const char logs_help[] =
    "usage: hetpool --server URL logs ID [--rank K] [--metrics] "
    "[--follow]\n"
    "\n"
    "Print a job's log from the server: the launcher's (default) or rank "
    "K's, or\n"
    "with --metrics the trainer's per-step lines (JSON, one per line).\n"
    "\n"
    "  --rank K    rank K's output\n"
    "  --metrics   the trainer's metrics.jsonl instead of a log\n"
    "  --follow    keep printing what is added until the job ends\n"
    "\n"
    "exit status: 0 printed, 1 the server failed, 2 no such job, not "
    "launched yet,\n"
    "or refused.\n"
    "\n"
    "example:\n"
    "  hetpool --server http://127.0.0.1:8080 logs 12 --metrics --follow\n";

struct job_args {
	const char *state, *user;
	int64_t limit, rank;
	bool json, metrics, follow;
};
#define JA struct job_args
static const struct cli_opt jobs_opts[] = {
    CLI_OPT_STR("state", JA, state),
    CLI_OPT_STR("user", JA, user),
    CLI_OPT_INT("limit", JA, limit, 1, 1000),
    CLI_OPT_FLAG("json", JA, json),
    CLI_OPT_END,
};
static const struct cli_opt json_opts[] = {
    CLI_OPT_FLAG("json", JA, json),
    CLI_OPT_END,
};
static const struct cli_opt logs_opts[] = {
    CLI_OPT_INT("rank", JA, rank, 0, 4095),
    CLI_OPT_FLAG("metrics", JA, metrics),
    CLI_OPT_FLAG("follow", JA, follow),
    CLI_OPT_END,
};
#undef JA

/* "?k=v&..." of what is set; values are checked to hold only safe
 * characters (the server checks them too). */
static int query(char *buf, size_t n, const char *k, const char *v)
{
	size_t len = strlen(buf);

	if (!v)
		return 0;
	for (const char *p = v; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != ',' && *p != '-')
			return -1;
	snprintf(buf + len, n - len, "%s%s=%s", len ? "&" : "?", k, v);
	return 0;
}

static const char *age(double t, char *buf, size_t n)
{
	double d = (double)time(NULL) - t;

	if (!(t > 0))
		snprintf(buf, n, "-");
	else if (d < 120)
		snprintf(buf, n, "%.0fs ago", d < 0 ? 0 : d);
	else if (d < 7200)
		snprintf(buf, n, "%.0fm ago", d / 60);
	else
		snprintf(buf, n, "%.0fh ago", d / 3600);
	return buf;
}

static int cmd_jobs(int argc, char **argv)
{
	struct job_args a = {0};
	struct remote rm = {server_url, "jobs"};
	char q[256] = "", path[300], lim[32], ag[32], e1[128], e2[512];
	json_t *o = NULL, *j;
	size_t i;
	int first, rc;

	if ((rc = cli_parse(cli_remote_cmds[2], argc, argv, &a, &first)))
		return rc < 0 ? EXIT_OK : rc;
	if (first != argc)
		return cli_error(EXIT_USAGE, "jobs: takes no argument");
	snprintf(lim, sizeof(lim), "%lld", (long long)a.limit);
	if (query(q, sizeof(q), "state", a.state) ||
	    query(q, sizeof(q), "user", a.user) ||
	    query(q, sizeof(q), "limit", a.limit ? lim : NULL))
		return cli_error(EXIT_USAGE,
				 "jobs: --state and --user take letters, "
				 "digits and commas");
	snprintf(path, sizeof(path), "/v1/jobs%s", q);
	if ((rc = do_json(&rm, "GET", path, NULL, &o)))
		return rc;
	if (a.json) {
		print_json(o);
	} else {
		printf("%-6s %-10s %-10s %7s %-9s %-16s %s\n", "ID", "STATE",
		       "BACKEND", "DEVICES", "AGE", "NAME", "REASON");
		json_array_foreach(json_object_get(o, "jobs"), i, j)
		{
			printf("%-6lld %-10s %-10s %7zu %-9s %-16s %s\n",
			       (long long)json_integer_value(
				   json_object_get(j, "id")),
			       jstr(j, "state"), jstr(j, "backend"),
			       json_array_size(json_object_get(j, "devices")),
			       age(json_number_value(
				       json_object_get(j, "created_s")),
				   ag, sizeof(ag)),
			       E(jstr(j, "name"), e1),
			       E(jstr(j, "reason"), e2));
		}
	}
	json_decref(o);
	return 0;
}

static bool id_ok(const char *s)
{
	int64_t v;
	return !hp_parse_i64(s, 1, (int64_t)1 << 53, &v);
}

static int cmd_status(int argc, char **argv)
{
	struct job_args a = {0};
	struct remote rm = {server_url, "status"};
	json_t *o = NULL, *g, *dl;
	char e[512], ag[32];
	size_t i;
	int first, rc;

	if ((rc = cli_parse(cli_remote_cmds[3], argc, argv, &a, &first)))
		return rc < 0 ? EXIT_OK : rc;
	if (first != argc - 1 || !id_ok(argv[first]))
		return cli_error(EXIT_USAGE, "status: give one job ID (a "
					     "number)");
	if ((rc = get_job(&rm, argv[first], &o)))
		return rc;
	if (a.json) {
		print_json(o);
		json_decref(o);
		return 0;
	}
	printf("job %s %s\n", argv[first], jstr(o, "state"));
	if (*jstr(o, "reason"))
		printf("reason     %s\n", E(jstr(o, "reason"), e));
	printf("backend    %s\n", jstr(o, "backend"));
	printf("created    %s\n",
	       age(json_number_value(json_object_get(o, "created_s")), ag,
		   sizeof(ag)));
	if (json_is_number(json_object_get(o, "started_s")))
		printf("started    %s\n",
		       age(json_number_value(json_object_get(o, "started_s")),
			   ag, sizeof(ag)));
	if (json_is_number(json_object_get(o, "ended_s")))
		printf("ended      %s\n",
		       age(json_number_value(json_object_get(o, "ended_s")), ag,
			   sizeof(ag)));
	dl = json_object_get(o, "deadline");
	if (json_is_boolean(json_object_get(dl, "can_be_met")))
		printf("deadline   %s\n",
		       json_is_true(json_object_get(dl, "can_be_met"))
			   ? "can be met"
			   : "can no longer be met");
	json_array_foreach(json_object_get(o, "devices"), i, g)
	{
		char n1[128], n2[64];
		printf(
		    "device     %s %s #%lld%s\n", E(jstr(g, "node"), n1),
		    E(jstr(g, "type"), n2),
		    (long long)json_integer_value(json_object_get(g, "index")),
		    json_is_true(json_object_get(g, "held")) ? ""
							     : " (released)");
	}
	json_decref(o);
	return 0;
}

static int cmd_cancel(int argc, char **argv)
{
	struct job_args a = {0};
	struct remote rm = {server_url, "cancel"};
	char path[128];
	json_t *o = NULL;
	int first, rc;

	if ((rc = cli_parse(cli_remote_cmds[4], argc, argv, &a, &first)))
		return rc < 0 ? EXIT_OK : rc;
	if (first != argc - 1 || !id_ok(argv[first]))
		return cli_error(EXIT_USAGE, "cancel: give one job ID (a "
					     "number)");
	snprintf(path, sizeof(path), "/v1/jobs/%s/cancel", argv[first]);
	if ((rc = do_json(&rm, "POST", path, NULL, &o)))
		return rc;
	if (a.json)
		print_json(o);
	else
		printf("job %s %s\n", argv[first],
		       !strcmp(jstr(o, "state"), "cancelled") ? "cancelled"
							      : "is being "
								"stopped");
	json_decref(o);
	return 0;
}

static int cmd_remove(int argc, char **argv)
{
	struct job_args a = {0};
	struct remote rm = {server_url, "remove"};
	struct remote_resp r;
	char path[128];
	int first, rc;

	if ((rc = cli_parse(cli_remote_cmds[6], argc, argv, &a, &first)))
		return rc < 0 ? EXIT_OK : rc;
	if (first != argc - 1 || !id_ok(argv[first]))
		return cli_error(EXIT_USAGE, "remove: give one job ID (a "
					     "number)");
	snprintf(path, sizeof(path), "/v1/jobs/%s", argv[first]);
	if ((rc = remote_request(&rm, "DELETE", path, NULL, NULL, 0, &r)))
		return rc;
	if (r.status >= 400)
		return remote_fail(&rm, &r);
	remote_resp_release(&r);
	if (a.json)
		printf("{\"id\": %s, \"removed\": true}\n", argv[first]);
	else
		printf("job %s removed\n", argv[first]);
	return 0;
}

static int cmd_logs(int argc, char **argv)
{
	struct job_args a = {.rank = -1};
	struct remote rm = {server_url, "logs"};
	long long offset = 0;
	int first, rc;

	if ((rc = cli_parse(cli_remote_cmds[5], argc, argv, &a, &first)))
		return rc < 0 ? EXIT_OK : rc;
	if (first != argc - 1 || !id_ok(argv[first]))
		return cli_error(EXIT_USAGE,
				 "logs: give one job ID (a number)");
	if (a.metrics && a.rank >= 0)
		return cli_error(EXIT_USAGE, "logs: give --rank or --metrics, "
					     "not both");
	for (;;) {
		struct remote_resp r;
		char path[256], rank[32] = "";
		bool ended = false;
		json_t *j = NULL;
		if (a.rank >= 0)
			snprintf(rank, sizeof(rank), "&rank=%lld",
				 (long long)a.rank);
		snprintf(path, sizeof(path), "/v1/jobs/%s/%s?offset=%lld%s",
			 argv[first], a.metrics ? "metrics" : "logs", offset,
			 rank);
		if (a.follow) {
			/* the state before the read: a job that has ended
			 * has written all it will */
			if ((rc = get_job(&rm, argv[first], &j)))
				return rc;
			ended = terminal(jstr(j, "state"));
			json_decref(j);
		}
		if ((rc = remote_request(&rm, "GET", path, NULL, NULL, 0, &r)))
			return rc;
		if (r.status == 404 && a.follow && !ended) {
			remote_resp_release(&r); /* nothing written yet */
		} else if (r.status >= 400) {
			return remote_fail(&rm, &r);
		} else {
			fwrite(r.body.data ? r.body.data : "", 1, r.body.len,
			       stdout);
			fflush(stdout);
			offset += (long long)r.body.len;
			remote_resp_release(&r);
		}
		if (!a.follow || ended)
			return 0;
		{
			struct timespec ts = {0, 500000000};
			nanosleep(&ts, NULL);
		}
	}
}

static const struct cli_cmd rc_rec = {.name = "recommend",
				      .foreign = "server",
				      .run = cmd_rec,
				      .help = rec_help,
				      .opts = rec_opts};
static const struct cli_cmd rc_run = {.name = "run",
				      .foreign = "server",
				      .run = cmd_run,
				      .help = run_help,
				      .opts = run_opts};
static const struct cli_cmd rc_jobs = {.name = "jobs",
				       .foreign = "server",
				       .run = cmd_jobs,
				       .help = jobs_help,
				       .opts = jobs_opts};
static const struct cli_cmd rc_status = {.name = "status",
					 .foreign = "server",
					 .run = cmd_status,
					 .help = status_help,
					 .opts = json_opts};
static const struct cli_cmd rc_cancel = {.name = "cancel",
					 .foreign = "server",
					 .run = cmd_cancel,
					 .help = cancel_help,
					 .opts = json_opts};
static const struct cli_cmd rc_logs = {.name = "logs",
				       .foreign = "server",
				       .run = cmd_logs,
				       .help = logs_help,
				       .opts = logs_opts};

static const struct cli_cmd rc_remove = {.name = "remove",
					 .foreign = "server",
					 .run = cmd_remove,
					 .help = remove_help,
					 .opts = json_opts};

/* In this order: the commands above take their tables by index. */
const struct cli_cmd *const cli_remote_cmds[] = {
    &rc_rec,	&rc_run,  &rc_jobs,   &rc_status,
    &rc_cancel, &rc_logs, &rc_remove, NULL,
};

int cli_remote(const char *url, int argc, char **argv)
{
	server_url = url;
	if (strncmp(url, "http://", 7) && strncmp(url, "https://", 8))
		return cli_error(EXIT_USAGE,
				 "--server '%s': give http://HOST:PORT or "
				 "https://HOST:PORT",
				 url);
	if (argc < 1 || !strcmp(argv[0], "--help") || !strcmp(argv[0], "-h")) {
		fputs(cli_remote_usage, argc < 1 ? stderr : stdout);
		return argc < 1 ? EXIT_USAGE : EXIT_OK;
	}
	for (int i = 0; cli_remote_cmds[i]; i++)
		if (!strcmp(cli_remote_cmds[i]->name, argv[0]))
			return cli_remote_cmds[i]->run(argc, argv);
	return cli_error(EXIT_USAGE,
			 "'%s' is not a command the server answers; give "
			 "recommend, run, jobs, status, cancel or logs",
			 argv[0]);
}
