/* cmd_predict.c - `hetpool predict`: a training step's time (with its
 * interval), throughput, peak memory and energy on a device type, from
 * the fitted estimator. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "hetpool/estimate.h"
#include "opt.h"

static const char help[] =
    "usage: hetpool predict MODEL --device TYPE --batch N [--devices K]\n"
    "                       [--nodes M [--link-gbps X] "
    "[--link-latency-us L]]\n"
    "                       [--estimator FILE] [--family F] "
    "[--input-shape CxHxW]\n"
    "                       [--precision P] [--catalog FILE] [--threads "
    "N] [--json]\n"
    "                       [--input-cores C [--input-rate R | "
    "--input-source-px P]]\n"
    "\n"
    "Predict one training step (forward, backward, SGD update) of MODEL "
    "on\n"
    "K devices of TYPE working data-parallel on a global batch of N: "
    "step time\n"
    "with an interval (10th-90th percentile of the fit's "
    "cross-validated\n"
    "errors, wider for a type never measured), samples/s, power and "
    "energy per\n"
    "step, and peak memory per device.  A plan that does not fit in the "
    "device's\n"
    "memory is refused (exit 2).  GPU types without measurements are "
    "predicted\n"
    "from their catalog specs and what was learned on the others.\n"
    "\n"
    "  MODEL             an ONNX file (.onnx) or a hetpool JSON spec\n"
    "  --device TYPE     a catalog id or alias: cpu, v100, a100, l4 "
    "('hetpool devices')\n"
    "  --batch N         global batch size (a multiple of K)\n"
    "  --devices K       devices working together (default 1); adds "
    "the gradient\n"
    "                    all-reduce over NVLink or PCIe\n"
    "  --nodes M         nodes the K devices are spread over, K/M each "
    "(default 1);\n"
    "                    the all-reduce then also crosses the network\n"
    "  --link-gbps X     each node's network link, Gbit/s line rate "
    "(default 25);\n"
    "                    give what the link truly carries (over TCP, "
    "often far less)\n"
    "  --link-latency-us L  one network hop, microseconds (default 5)\n"
    "  --link-transport T  how the all-reduce crosses the network: tcp "
    "(MPI, as\n"
    "                    hetpool-train's CPU ranks), socket (NCCL over "
    "Ethernet),\n"
    "                    rdma (NCCL over InfiniBand or RoCE); default "
    "auto:\n"
    "                    socket for a GPU, tcp for a CPU. Each gets its "
    "share of\n"
    "                    the line rate from measured figures "
    "(docs/estimator.md)\n"
    "  --input-cores C   the host CPU cores that prepare each GPU's "
    "samples (its\n"
    "                    data-loader workers): the step cannot be shorter "
    "than\n"
    "                    what they feed (decode, augmentation); default: "
    "not\n"
    "                    modelled\n"
    "  --input-rate R    samples/s one core prepares (default: this host's "
    "JPEG\n"
    "                    pipeline as 'hetpool host --measure' measured it, "
    "at the\n"
    "                    model's input size)\n"
    "  --input-source-px P  pixels of a stored image decoded for a sample "
    "(default\n"
    "                    187500, 500x375: about ImageNet's average)\n"
    "  --estimator FILE  a fitted estimator ('hetpool fit'; default: the "
    "shipped\n"
    "                    data/estimators/default.json)\n"
    "  --family F        physical, linear or roofline (default: the "
    "estimator's)\n"
    "  --input-shape D   the model input's dimensions without the batch, "
    "e.g.\n"
    "                    3x32x32 (default: from the model)\n"
    "  --precision P     fp32, tf32 or amp (default fp32: PyTorch's "
    "default, where\n"
    "                    cuDNN already uses TF32 for convolutions on "
    "Ampere and\n"
    "                    later); tf32: TF32 everywhere, at the TF32 "
    "peak; amp:\n"
    "                    mixed precision (FP16 tensor cores, FP16 "
    "activations)\n"
    "  --catalog FILE    device catalog (default: data/devices.csv)\n"
    "  --threads N       cpu: the threads the step runs on (default: "
    "$HETPOOL_THREADS,\n"
    "                    else its CPUs); this host's measured peaks and "
    "its\n"
    "                    calibration at N threads apply ('hetpool host')\n"
    "  --json            print JSON for scripts\n"
    "\n"
    "examples:\n"
    "  hetpool predict data/models/resnet50.train.onnx --device v100 "
    "--batch 64\n"
    "  hetpool predict cnn.json --device cpu --batch 32 --json | jq "
    ".step_time_s\n"
    "  hetpool predict resnet50.onnx --device a100 --batch 512 --devices "
    "8\n"
    "  hetpool predict data/models/resnet50.train.onnx --device a100 "
    "--batch 256 \\\n"
    "      --precision amp\n"
    "  hetpool predict resnet18.onnx --device t4 --batch 1024 --devices 16 "
    "--nodes 4 \\\n"
    "      --link-gbps 6\n"
    "  hetpool predict data/models/resnet50.train.onnx --device a40 "
    "--batch 256 \\\n"
    "      --input-cores 4          # 4 loader cores per GPU: input-bound?\n"
    "                               # (after hetpool host --measure, or with\n"
    "                               # --input-rate R)\n";

static json_t *num(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

/* The input pipeline's figures (--input-cores): the cores a device has,
 * one core's seconds a sample, and what that rests on. */
struct input_pipe {
	double cores;
	double sample_s;
	char basis[160];
};

static void print_json(const char *model, const struct hp_prediction *p,
		       int nodes, double link_gbps, const struct input_pipe *ip)
{
	json_t *o = json_object();

	json_object_set_new(o, "model", json_string(model));
	json_object_set_new(o, "device", json_string(p->device));
	json_object_set_new(o, "devices", json_integer(p->ndevices));
	json_object_set_new(o, "nodes", json_integer(nodes));
	json_object_set_new(o, "link_gbps",
			    nodes > 1 ? json_real(link_gbps) : json_null());
	json_object_set_new(
	    o, "link_transport",
	    nodes > 1 ? json_string(hp_net_transport_name(p->net_transport))
		      : json_null());
	json_object_set_new(o, "batch", json_integer(p->batch));
	json_object_set_new(o, "family",
			    json_string(hp_est_family_name(p->family)));
	json_object_set_new(o, "precision",
			    json_string(hp_precision_name(p->precision)));
	json_object_set_new(o, "step_time_s", num(p->step_time_s));
	json_object_set_new(o, "step_time_interval_s",
			    json_pack("[o, o]", num(p->step_time_lo_s),
				      num(p->step_time_hi_s)));
	json_object_set_new(o, "samples_per_s", num(p->samples_per_s));
	json_object_set_new(o, "utilisation", num(p->utilisation));
	json_object_set_new(o, "comm_time_s", num(p->comm_time_s));
	/* null: the family has no layers (linear, roofline) */
	json_object_set_new(
	    o, "class_time_s",
	    isfinite(p->class_time_s[HP_EST_CONV])
		? json_pack("{s:o, s:o, s:o}", "conv",
			    num(p->class_time_s[HP_EST_CONV]), "fc",
			    num(p->class_time_s[HP_EST_FC]), "other",
			    num(p->class_time_s[HP_EST_OTHER]))
		: json_null());
	/* null: not modelled (no --input-cores, or a CPU device, whose
	 * cores compute too: the basis says so) */
	json_object_set_new(
	    o, "input_pipeline",
	    ip->cores > 0 && isfinite(p->input_time_s)
		? json_pack("{s:f, s:f, s:f, s:o, s:o, s:s}", "cores",
			    ip->cores, "samples_per_s_per_core",
			    1 / ip->sample_s, "ceiling_samples_per_s",
			    ip->cores / ip->sample_s * p->ndevices, "time_s",
			    num(p->input_time_s), "bound",
			    json_boolean(p->input_bound), "basis", ip->basis)
		: json_null());
	json_object_set_new(o, "power_w", num(p->power_w));
	json_object_set_new(o, "energy_per_step_j", num(p->energy_per_step_j));
	json_object_set_new(o, "peak_memory_bytes",
			    json_integer(p->peak_memory_bytes));
	json_object_set_new(o, "device_memory_bytes",
			    num(p->device_memory_bytes));
	/* null: the device's memory is not known */
	json_object_set_new(o, "fits_in_memory",
			    p->memory_known ? json_boolean(p->fits_in_memory)
					    : json_null());
	json_object_set_new(o, "measured", json_boolean(p->measured));
	json_object_set_new(o, "basis",
			    json_pack("{s:s, s:s, s:s}", "step_time", p->basis,
				      "energy", p->energy_basis, "memory",
				      p->memory_basis));
	json_dumpf(o, stdout, JSON_INDENT(2));
	fputc('\n', stdout);
	json_decref(o);
}

/* The model's path and the catalog's names come from outside: escaped
 * before they reach the terminal. */
static void print_text(const char *model, const struct hp_prediction *p,
		       int nodes, double link_gbps, const struct input_pipe *ip)
{
	char a[32], b[32], e[1024];

	printf("model        %s\n", cli_esc(model, e, sizeof(e)));
	printf("device       %s x %d, batch %lld (%lld per device), %s\n",
	       cli_esc(p->device, e, sizeof(e)), p->ndevices,
	       (long long)p->batch, (long long)(p->batch / p->ndevices),
	       hp_precision_name(p->precision));
	printf("step time    %.4g s  [%.4g, %.4g] (10th-90th percentile)\n",
	       p->step_time_s, p->step_time_lo_s, p->step_time_hi_s);
	if (nodes > 1)
		printf("nodes        %d, %d devices each, %.4g Gbit/s links "
		       "(%s: %.0f%% of the line rate)\n",
		       nodes, p->ndevices / nodes, link_gbps,
		       hp_net_transport_name(p->net_transport),
		       100 * hp_comm_transport_efficiency(p->net_transport));
	if (p->ndevices > 1)
		printf("             of which %.3g s gradient all-reduce (the "
		       "part backward does not hide)\n",
		       p->comm_time_s);
	if (isfinite(p->class_time_s[HP_EST_CONV]))
		printf(
		    "layers       conv %.3g s, fully connected %.3g s, other "
		    "%.3g s (per device; the rest is overhead)\n",
		    p->class_time_s[HP_EST_CONV], p->class_time_s[HP_EST_FC],
		    p->class_time_s[HP_EST_OTHER]);
	if (ip->cores > 0 && isfinite(p->input_time_s))
		printf(
		    "input        %.4g samples/s a device from %g cores (%s): "
		    "%s\n",
		    ip->cores / ip->sample_s, ip->cores, ip->basis,
		    p->input_bound ? "caps the step" : "keeps up");
	else if (ip->cores > 0)
		printf("input        not modelled on a CPU device\n");
	printf("throughput   %.4g samples/s, utilisation %.1f%% of peak\n",
	       p->samples_per_s, 100 * p->utilisation);
	if (isfinite(p->power_w))
		printf("energy       %.4g J per step at %.0f W per device\n",
		       p->energy_per_step_j, p->power_w);
	else
		printf("energy       unknown\n");
	printf("memory       %s per device",
	       cli_bytes(p->peak_memory_bytes, a, sizeof(a)));
	if (isfinite(p->device_memory_bytes))
		printf(" of %s: %s\n",
		       cli_bytes((int64_t)p->device_memory_bytes, b, sizeof(b)),
		       p->fits_in_memory ? "fits" : "DOES NOT FIT");
	else
		printf(" (the device's memory is not known)\n");
	printf("basis        %s (%s family)\n", cli_esc(p->basis, e, sizeof(e)),
	       hp_est_family_name(p->family));
	printf("             energy: %s\n",
	       cli_esc(p->energy_basis, e, sizeof(e)));
	printf("             memory: %s\n",
	       cli_esc(p->memory_basis, e, sizeof(e)));
}

struct predict_args {
	const char *device, *estimator, *catalog;
	int64_t batch, ndevices;
	int64_t nodes;
	double link_gbps, link_latency_us;
	int link_transport;
	double input_cores, input_rate, input_source_px;
	int family; /* -1: the estimator's */
	int precision;
	int threads; /* cpu; 0: $HETPOOL_THREADS or the CPUs it may run on */
	struct cli_dims shape;
	bool json;
};

static const struct cli_word family_words[] = {
    {"physical", HP_EST_PHYSICAL},
    {"linear", HP_EST_LINEAR},
    {"roofline", HP_EST_ROOFLINE},
    {NULL, 0},
};

static const struct cli_word precision_words[] = {
    {"fp32", HP_PREC_FP32},
    {"tf32", HP_PREC_TF32},
    {"amp", HP_PREC_AMP},
    {NULL, 0},
};

static const struct cli_word transport_words[] = {
    {"auto", HP_NET_AUTO}, {"tcp", HP_NET_TCP}, {"socket", HP_NET_SOCKET},
    {"rdma", HP_NET_RDMA}, {NULL, 0},
};

static const struct cli_opt predict_opts[] = {
    CLI_OPT_STR("device", struct predict_args, device),
    CLI_OPT_INT("batch", struct predict_args, batch, 1, 1 << 24),
    CLI_OPT_INT("devices", struct predict_args, ndevices, 1, 4096),
    CLI_OPT_INT("nodes", struct predict_args, nodes, 1, 4096),
    CLI_OPT_NUM_ABOVE("link-gbps", struct predict_args, link_gbps, 0, 1e5),
    CLI_OPT_NUM("link-latency-us", struct predict_args, link_latency_us, 0,
		1e6),
    CLI_OPT_WORD("link-transport", struct predict_args, link_transport,
		 transport_words),
    CLI_OPT_NUM_ABOVE("input-cores", struct predict_args, input_cores, 0, 4096),
    CLI_OPT_NUM_ABOVE("input-rate", struct predict_args, input_rate, 0, 1e9),
    CLI_OPT_NUM_ABOVE("input-source-px", struct predict_args, input_source_px,
		      0, 1e9),
    CLI_OPT_STR("estimator", struct predict_args, estimator),
    CLI_OPT_WORD("family", struct predict_args, family, family_words),
    CLI_OPT_DIMS("input-shape", struct predict_args, shape),
    CLI_OPT_WORD("precision", struct predict_args, precision, precision_words),
    CLI_OPT_STR("catalog", struct predict_args, catalog),
    CLI_OPT_FLAG("json", struct predict_args, json),
    CLI_OPT_INT("threads", struct predict_args, threads, 1, 4096),
    CLI_OPT_END,
};

static int cmd_predict(int argc, char **argv)
{
	struct predict_args a = {.ndevices = 1,
				 .nodes = 1,
				 .link_gbps = 25,
				 .link_latency_us = 5,
				 .family = -1};
	struct hp_error err = {0};
	struct hp_ctx *ctx = NULL;
	const struct hp_snap *snap = NULL;
	const struct hp_catalog *cat;
	struct hp_model_input mi = {0};
	struct hp_prediction p;
	struct input_pipe ip = {0};
	const char *model;
	int first, rc, status = EXIT_OK;

	if ((rc = cli_parse(&cli_cmd_predict, argc, argv, &a, &first)))
		return rc < 0 ? EXIT_OK : rc;
	if (first != argc - 1)
		return cli_error(EXIT_USAGE, "predict: give one MODEL file; "
					     "see 'hetpool predict --help'");
	model = argv[first];
	if (!a.device)
		return cli_error(EXIT_USAGE,
				 "predict: give --device TYPE (see 'hetpool "
				 "devices')");
	if (!a.batch)
		return cli_error(EXIT_USAGE, "predict: give --batch N");
	if (a.batch % a.ndevices)
		return cli_error(EXIT_USAGE,
				 "predict: --batch %lld is not a multiple of "
				 "--devices %lld",
				 (long long)a.batch, (long long)a.ndevices);
	if (a.nodes > a.ndevices || a.ndevices % a.nodes)
		return cli_error(EXIT_USAGE,
				 "predict: --devices %lld cannot be spread "
				 "evenly over --nodes %lld",
				 (long long)a.ndevices, (long long)a.nodes);
	if ((a.input_rate > 0 || a.input_source_px > 0) && !a.input_cores)
		return cli_error(EXIT_USAGE,
				 "predict: --input-rate and --input-source-px "
				 "describe the input pipeline: give "
				 "--input-cores C too");
	if (a.input_rate > 0 && a.input_source_px > 0)
		return cli_error(EXIT_USAGE,
				 "predict: --input-source-px costs this host's "
				 "measured pipeline; --input-rate replaces it: "
				 "give one");
	if (a.threads) {
		/* the catalog's cpu type is this host at these threads */
		char tb[16];
		snprintf(tb, sizeof(tb), "%d", a.threads);
		setenv("HETPOOL_THREADS", tb, 1);
	}
	if (!(ctx = cli_load_ctx("predict", a.catalog, a.estimator, true,
				 &status)))
		goto out;
	snap = hp_ctx_acquire(ctx);
	cat = hp_snap_catalog(snap);
	if (!cli_find_type("predict", cat, a.device, &status))
		goto out;
	if ((status = cli_load_model("predict", model, a.batch / a.ndevices,
				     a.shape.d, a.shape.rank, &mi)))
		goto out;
	if (a.input_cores > 0 &&
	    (status =
		 cli_input_sample_s("predict", a.input_rate, a.input_source_px,
				    mi.workload.input_size, &ip.sample_s,
				    ip.basis, sizeof(ip.basis))))
		goto out;
	ip.cores = a.input_cores;
	{
		struct hp_predict_opts po;
		hp_predict_opts_init(&po);
		po.input_cores = a.input_cores;
		po.input_sample_s = a.input_cores > 0 ? ip.sample_s : 0;
		po.family = a.family;
		po.precision = (enum hp_precision)a.precision;
		po.nodes = (int)a.nodes;
		po.net_gbps = a.link_gbps;
		po.net_latency_us = a.link_latency_us;
		po.net_transport = (enum hp_net_transport)a.link_transport;
		rc = hp_estimator_predict_opts(hp_snap_estimator(snap), cat,
					       &mi.workload, a.device,
					       (int)a.ndevices, &po, &p, &err);
	}
	if (rc) {
		status = cli_error(cli_status_for(rc), "predict: %s", err.msg);
		goto out;
	}
	if (a.json)
		print_json(model, &p, (int)a.nodes, a.link_gbps, &ip);
	else
		print_text(model, &p, (int)a.nodes, a.link_gbps, &ip);
	if (p.memory_known && !p.fits_in_memory) {
		char b1[32], b2[32];
		status = cli_error(
		    EXIT_USAGE,
		    "predict: does not fit: %s per device, %s has %s; use "
		    "more devices or a smaller batch",
		    cli_bytes(p.peak_memory_bytes, b1, sizeof(b1)), p.device,
		    cli_bytes((int64_t)p.device_memory_bytes, b2, sizeof(b2)));
	}
out:
	hp_model_input_release(&mi);
	hp_snap_release(snap);
	hp_ctx_free(ctx);
	return status;
}

const struct cli_cmd cli_cmd_predict = {
    .name = "predict",
    .run = cmd_predict,
    .help = help,
    .opts = predict_opts,
    .foreign = "measure", /* 'hetpool host --measure' */
};
