/* cmd_fit.c - `hetpool fit`: fit the estimator on profiles and public
 * measurements and save it as JSON. */
#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "est_cli.h"
#include "hetpool/estimate.h"

static const char help[] =
    "usage: hetpool fit [DATASET...] --out FILE [--family physical|linear]\n"
    "                   [--public DIR | --no-public] [--models DIR]\n"
    "                   [--skip-bad-rows] [--threads N] [--catalog FILE] "
    "[--json]\n"
    "\n"
    "Fit the estimator of step time, peak memory and energy, and save "
    "it for\n"
    "'hetpool predict'.  Both families are fitted; --family picks the "
    "one\n"
    "predictions use:\n"
    "  physical  per layer, FLOPs against the device's peak at an "
    "efficiency that\n"
    "            grows with the layer's size, and memory traffic against "
    "its\n"
    "            bandwidth, plus a per-step overhead (the default)\n"
    "  linear    least squares of log step time on the structural "
    "variables\n"
    "            (conv layers, filters, FC layers, FC width, input size, "
    "batch);\n"
    "            only for the generated CNNs it was fitted on\n"
    "\n"
    "  DATASET          a profiler CSV ('hetpool profile'); default: the "
    "shipped\n"
    "                   data/profiles/*.csv\n"
    "  --out FILE       where to write the estimator (JSON; checked before "
    "the fit,\n"
    "                   written whole or not at all)\n"
    "  --public DIR     public GPU measurements (default: the shipped\n"
    "                   data/measurements); --no-public: none\n"
    "  --models DIR     ONNX models the public rows are analysed from\n"
    "                   (default: the shipped data/models)\n"
    "  --skip-bad-rows  leave out profile rows with a value outside its "
    "physical\n"
    "                   range (a step time of 0, a negative peak memory, "
    "...) and\n"
    "                   count them; without it such a row is an error "
    "naming its\n"
    "                   file, line and column\n"
    "  --catalog FILE   device catalog (default: data/devices.csv)\n"
    "  --threads N      threads for the fits that do not depend on each "
    "other\n"
    "                   (default: the CPUs this process may use; the "
    "result is\n"
    "                   the same for any count)\n"
    "  --json           print a JSON summary instead of text\n"
    "\n"
    "A fit of more than a couple of seconds shows its progress on stderr "
    "when\n"
    "stderr is a terminal.\n"
    "\n"
    "examples:\n"
    "  hetpool fit data/profiles/cpu-default.csv --out est.json\n"
    "  hetpool fit my-host.csv --no-public --family linear --out lin.json\n";

/* The temporary file of the estimator being written: removed when the
 * fit is interrupted (SIGINT, SIGTERM). */
static const char *volatile tmp_path;

static void on_signal(int sig)
{
	const char *p = tmp_path;

	if (p)
		unlink(p);
	signal(sig, SIG_DFL);
	raise(sig);
}

int cmd_fit(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"out", required_argument, NULL, 'o'},
	    {"family", required_argument, NULL, 'f'},
	    {"public", required_argument, NULL, 'p'},
	    {"no-public", no_argument, NULL, 'P'},
	    {"models", required_argument, NULL, 'm'},
	    {"skip-bad-rows", no_argument, NULL, 's'},
	    {"catalog", required_argument, NULL, 'c'},
	    {"json", no_argument, NULL, 'j'},
	    {"threads", required_argument, NULL, 't'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct hp_fit_options o = {0};
	struct hp_fit_report report = {0};
	struct hp_error err = {0};
	struct hp_estimator *est = NULL;
	struct hp_catalog *cat = NULL;
	struct hp_estimator_file file;
	struct est_cli_progress prog;
	const char *out = NULL, *catalog = NULL;
	struct est_cli_sources src = {0};
	char *shipped[64];
	int nshipped = 0, c, status = EXIT_OK;
	bool json = false, open = false;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "o:f:p:Pm:sc:jt:h", opts, NULL)) !=
	       -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 'f':
			if (hp_est_family_parse(optarg, &o.family) ||
			    o.family == HP_EST_ROOFLINE)
				return cli_error(EXIT_USAGE,
						 "fit: --family '%s': give "
						 "physical or linear",
						 optarg);
			break;
		case 'p':
			src.pub = optarg;
			break;
		case 'P':
			src.no_public = true;
			break;
		case 'm':
			src.models = optarg;
			break;
		case 's':
			o.skip_bad_rows = true;
			break;
		case 'c':
			catalog = optarg;
			break;
		case 't': {
			int64_t v;
			if (hp_parse_i64(optarg, 1, 256, &v))
				return cli_error(EXIT_USAGE,
						 "%s: --threads '%s': give a "
						 "whole number from 1 to 256",
						 "fit", optarg);
			o.threads = (int)v;
			break;
		}
		case 'j':
			json = true;
			break;
		case 'h':
			fputs(help, stdout);
			return EXIT_OK;
		default:
			return cli_error(EXIT_USAGE,
					 "fit: unknown option or missing "
					 "value '%s'; see 'hetpool fit "
					 "--help'",
					 argv[optind - 1]);
		}
	}
	if (!out)
		return cli_error(EXIT_USAGE, "fit: give --out FILE; see "
					     "'hetpool fit --help'");
	if ((status = est_cli_resolve(&src, "fit", &o)))
		return status;
	/* Where the estimator goes is known to work before a long fit. */
	if (hp_estimator_save_open(&file, out, &err))
		return cli_error(EXIT_USAGE, "fit: %s", err.msg);
	open = true;
	tmp_path = file.tmp;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (optind < argc) {
		o.datasets = (const char *const *)&argv[optind];
		o.ndatasets = argc - optind;
	} else {
		nshipped = est_cli_profiles(shipped, 64);
		o.datasets = (const char *const *)shipped;
		o.ndatasets = nshipped;
	}
	if (!(cat = est_cli_catalog(catalog, "fit", &status)))
		goto out;
	est_cli_progress_init(&prog, "fit");
	o.progress = est_cli_progress;
	o.progress_ud = &prog;
	o.report = &report;
	est = hp_estimator_fit(&o, cat, &err);
	est_cli_progress_end(&prog);
	if (!est) {
		status =
		    cli_error(cli_status_for(err.code), "fit: %s", err.msg);
		goto out;
	}
	open = false;
	if (hp_estimator_save_commit(&file, est, &err)) {
		status = cli_error(EXIT_FAIL, "fit: %s", err.msg);
		goto out;
	}
	est_cli_report_skipped("fit", &report);
	if (json) {
		json_t *j = json_pack(
		    "{s:s, s:s, s:s, s:I, s:I}", "estimator", out, "family",
		    hp_est_family_name(hp_estimator_family(est)), "provenance",
		    hp_estimator_provenance(est), "profile_rows",
		    (json_int_t)report.profile_rows, "skipped_bad_rows",
		    (json_int_t)report.bad_rows_skipped);
		json_dumpf(j, stdout, JSON_INDENT(2));
		fputc('\n', stdout);
		json_decref(j);
	} else {
		printf("wrote %s (%s family): %s\n", out,
		       hp_est_family_name(hp_estimator_family(est)),
		       hp_estimator_provenance(est));
	}
out:
	if (open)
		hp_estimator_save_abort(&file);
	tmp_path = NULL;
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	for (int i = 0; i < nshipped; i++)
		free(shipped[i]);
	hp_estimator_free(est);
	hp_catalog_free(cat);
	return status;
}
