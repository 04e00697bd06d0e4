/* cmd_predict.c - `hetpool predict`: a training step's time (with its
 * interval), throughput, peak memory and energy on a device type, from
 * the fitted estimator. */
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "est_cli.h"
#include "hetpool/estimate.h"

static const char help[] =
    "usage: hetpool predict MODEL --device TYPE --batch N [--devices K]\n"
    "                       [--estimator FILE] [--family F] "
    "[--input-shape CxHxW]\n"
    "                       [--catalog FILE] [--json]\n"
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
    "  --estimator FILE  a fitted estimator ('hetpool fit'; default: the "
    "shipped\n"
    "                    data/estimators/default.json)\n"
    "  --family F        physical, linear or roofline (default: the "
    "estimator's)\n"
    "  --input-shape D   the model input's dimensions without the batch, "
    "e.g.\n"
    "                    3x32x32 (default: from the model)\n"
    "  --catalog FILE    device catalog (default: data/devices.csv)\n"
    "  --json            print JSON for scripts\n"
    "\n"
    "examples:\n"
    "  hetpool predict data/models/resnet50.train.onnx --device v100 "
    "--batch 64\n"
    "  hetpool predict cnn.json --device cpu --batch 32 --json | jq "
    ".step_time_s\n"
    "  hetpool predict resnet50.onnx --device a100 --batch 512 --devices "
    "8\n";

static json_t *num(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

static void print_json(const char *model, const struct hp_prediction *p)
{
	json_t *o = json_object();

	json_object_set_new(o, "model", json_string(model));
	json_object_set_new(o, "device", json_string(p->device));
	json_object_set_new(o, "devices", json_integer(p->ndevices));
	json_object_set_new(o, "batch", json_integer(p->batch));
	json_object_set_new(o, "family",
			    json_string(hp_est_family_name(p->family)));
	json_object_set_new(o, "step_time_s", num(p->step_time_s));
	json_object_set_new(o, "step_time_interval_s",
			    json_pack("[o, o]", num(p->step_time_lo_s),
				      num(p->step_time_hi_s)));
	json_object_set_new(o, "samples_per_s", num(p->samples_per_s));
	json_object_set_new(o, "utilisation", num(p->utilisation));
	json_object_set_new(o, "comm_time_s", num(p->comm_time_s));
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
static void print_text(const char *model, const struct hp_prediction *p)
{
	char a[32], b[32], e[1024];

	printf("model        %s\n", cli_esc(model, e, sizeof(e)));
	printf("device       %s x %d, batch %lld (%lld per device)\n",
	       cli_esc(p->device, e, sizeof(e)), p->ndevices,
	       (long long)p->batch, (long long)(p->batch / p->ndevices));
	printf("step time    %.4g s  [%.4g, %.4g] (10th-90th percentile)\n",
	       p->step_time_s, p->step_time_lo_s, p->step_time_hi_s);
	if (p->ndevices > 1)
		printf("             of which %.3g s gradient all-reduce\n",
		       p->comm_time_s);
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

int cmd_predict(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"device", required_argument, NULL, 'd'},
	    {"batch", required_argument, NULL, 'b'},
	    {"devices", required_argument, NULL, 'k'},
	    {"estimator", required_argument, NULL, 'e'},
	    {"family", required_argument, NULL, 'f'},
	    {"input-shape", required_argument, NULL, 's'},
	    {"catalog", required_argument, NULL, 'c'},
	    {"json", no_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct hp_error err = {0};
	struct hp_estimator *est = NULL;
	struct hp_catalog *cat = NULL;
	struct hp_graph *g = NULL;
	struct hp_workload w = {0};
	struct hp_prediction p;
	const char *device = NULL, *estpath = NULL, *catalog = NULL, *model;
	char estbuf[4096];
	int64_t batch = 0, ndev = 1, shape[HP_MAX_RANK];
	int shape_rank = 0, family = -1, c, rc, status = EXIT_OK;
	bool json = false;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "d:b:k:e:f:s:c:jh", opts, NULL)) !=
	       -1) {
		switch (c) {
		case 'd':
			device = optarg;
			break;
		case 'b':
			if (hp_parse_i64(optarg, 1, 1 << 24, &batch))
				return cli_error(EXIT_USAGE,
						 "predict: --batch '%s': give "
						 "a whole number from 1 to %d",
						 optarg, 1 << 24);
			break;
		case 'k':
			if (hp_parse_i64(optarg, 1, 4096, &ndev))
				return cli_error(EXIT_USAGE,
						 "predict: --devices '%s': "
						 "give a whole number from 1 "
						 "to 4096",
						 optarg);
			break;
		case 'e':
			estpath = optarg;
			break;
		case 'f': {
			enum hp_est_family f;
			if (hp_est_family_parse(optarg, &f))
				return cli_error(EXIT_USAGE,
						 "predict: --family '%s': give "
						 "physical, linear or "
						 "roofline",
						 optarg);
			family = (int)f;
			break;
		}
		case 's':
			shape_rank = cli_parse_dims(optarg, shape, HP_MAX_RANK);
			if (shape_rank < 0)
				return cli_error(EXIT_USAGE,
						 "predict: --input-shape '%s': "
						 "give dimensions like "
						 "3x224x224",
						 optarg);
			break;
		case 'c':
			catalog = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			fputs(help, stdout);
			return EXIT_OK;
		default:
			return cli_error(EXIT_USAGE,
					 "predict: unknown option or missing "
					 "value '%s'; see 'hetpool predict "
					 "--help'",
					 argv[optind - 1]);
		}
	}
	if (optind != argc - 1)
		return cli_error(EXIT_USAGE, "predict: give one MODEL file; "
					     "see 'hetpool predict --help'");
	model = argv[optind];
	if (!device)
		return cli_error(EXIT_USAGE,
				 "predict: give --device TYPE (see 'hetpool "
				 "devices')");
	if (!batch)
		return cli_error(EXIT_USAGE, "predict: give --batch N");
	if (batch % ndev)
		return cli_error(EXIT_USAGE,
				 "predict: --batch %lld is not a multiple of "
				 "--devices %lld",
				 (long long)batch, (long long)ndev);
	if (!(cat = est_cli_catalog(catalog, "predict", &status)))
		goto out;
	if (!hp_catalog_find(cat, device)) {
		status = cli_error(EXIT_USAGE,
				   "predict: device type '%s' is not in the "
				   "catalog; see 'hetpool devices'",
				   device);
		goto out;
	}
	if (!estpath) {
		if (cli_data_path("estimators/default.json", estbuf,
				  sizeof(estbuf))) {
			status = cli_error(EXIT_USAGE,
					   "predict: no data/estimators/"
					   "default.json found; give "
					   "--estimator FILE ('hetpool fit')");
			goto out;
		}
		estpath = estbuf;
	}
	if (!(est = hp_estimator_load(estpath, &err))) {
		status =
		    cli_error(cli_status_for(err.code), "predict: %s", err.msg);
		goto out;
	}
	if (!(g = hp_model_load(model, &err))) {
		status = cli_error(cli_status_for(err.code),
				   "predict: '%s': %s", model, err.msg);
		goto out;
	}
	rc = hp_workload_from_graph(g, batch / ndev, shape_rank ? shape : NULL,
				    shape_rank, &w, &err);
	if (rc) {
		status = cli_error(cli_status_for(rc), "predict: '%s': %s",
				   model, err.msg);
		goto out;
	}
	rc = hp_estimator_predict(est, cat, &w, device, (int)ndev, family, &p,
				  &err);
	if (rc) {
		status = cli_error(cli_status_for(rc), "predict: %s", err.msg);
		goto out;
	}
	if (json)
		print_json(model, &p);
	else
		print_text(model, &p);
	if (p.memory_known && !p.fits_in_memory) {
		char a[32], b[32];
		status = cli_error(
		    EXIT_USAGE,
		    "predict: does not fit: %s per device, %s has %s; use "
		    "more devices or a smaller batch",
		    cli_bytes(p.peak_memory_bytes, a, sizeof(a)), p.device,
		    cli_bytes((int64_t)p.device_memory_bytes, b, sizeof(b)));
	}
out:
	hp_workload_release(&w);
	hp_graph_free(g);
	hp_estimator_free(est);
	hp_catalog_free(cat);
	return status;
}
