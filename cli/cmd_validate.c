/* cmd_validate.c - `hetpool validate`: cross-validate the estimator's
 * families and the roofline baseline on the shipped data. */
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
    "usage: hetpool validate [--profiles FILE]... [--public DIR | "
    "--no-public]\n"
    "                        [--folds K] [--models DIR] [--skip-bad-rows] "
    "[--threads N]\n"
    "                        [--catalog FILE] [--json]\n"
    "\n"
    "Refit the estimator's families on parts of the data and score "
    "their\n"
    "predictions of the rest: mean absolute percentage error (MAPE), "
    "median\n"
    "and worst case, for\n"
    "  physical   the default family (per layer compute and memory "
    "time)\n"
    "  linear     least squares on the structural variables (profiles "
    "only)\n"
    "  roofline   FLOPs / peak FP32, no fit: the baseline to beat\n"
    "under three schemes:\n"
    "  k-fold            K random folds of the rows\n"
    "  leave-family-out  each architecture family (cL-fK) predicted "
    "from\n"
    "                    the others (the profiles)\n"
    "  leave-device-out  each GPU type predicted from the others and its "
    "specs\n"
    "                    (the public measurements)\n"
    "\n"
    "  --profiles FILE  a profiler CSV (repeatable; default: the shipped\n"
    "                   data/profiles/*.csv)\n"
    "  --public DIR     public GPU measurements (default: the shipped\n"
    "                   data/measurements); --no-public: none\n"
    "  --folds K        folds of the k-fold scheme (default 5)\n"
    "  --models DIR     ONNX models of the public rows (default: "
    "data/models)\n"
    "  --skip-bad-rows  leave out profile rows with a value outside its "
    "physical\n"
    "                   range and count them (default: such a row is an "
    "error)\n"
    "  --catalog FILE   device catalog (default: data/devices.csv)\n"
    "  --threads N      threads for the fits that do not depend on each "
    "other\n"
    "                   (default: the CPUs this process may use; the "
    "result is\n"
    "                   the same for any count)\n"
    "  --json           print JSON for scripts\n"
    "\n"
    "Progress is shown on stderr when stderr is a terminal.\n"
    "\n"
    "examples:\n"
    "  hetpool validate\n"
    "  hetpool validate --profiles my-host.csv --no-public --folds 10\n";

int cmd_validate(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"profiles", required_argument, NULL, 'd'},
	    {"public", required_argument, NULL, 'p'},
	    {"no-public", no_argument, NULL, 'P'},
	    {"folds", required_argument, NULL, 'k'},
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
	struct est_cli_progress prog;
	struct hp_error err = {0};
	struct hp_validation v = {0};
	struct hp_catalog *cat = NULL;
	const char *catalog = NULL;
	struct est_cli_sources src = {0};
	char *profiles[64];
	int nprof = 0, nshipped = 0, c, rc, status = EXIT_OK;
	int64_t folds = 5;
	bool json = false;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "d:p:Pk:m:sc:jt:h", opts, NULL)) !=
	       -1) {
		switch (c) {
		case 'd':
			if (nprof == 64)
				return cli_error(EXIT_USAGE,
						 "validate: at most 64 "
						 "--profiles");
			profiles[nprof++] = optarg;
			break;
		case 'p':
			src.pub = optarg;
			break;
		case 'P':
			src.no_public = true;
			break;
		case 'k':
			if (hp_parse_i64(optarg, 2, 100, &folds))
				return cli_error(EXIT_USAGE,
						 "validate: --folds '%s': give "
						 "a whole number from 2 to 100",
						 optarg);
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
						 "validate", optarg);
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
					 "validate: unknown option or missing "
					 "value '%s'; see 'hetpool validate "
					 "--help'",
					 argv[optind - 1]);
		}
	}
	if (optind < argc)
		return cli_error(EXIT_USAGE,
				 "validate: unexpected '%s'; give profiles "
				 "with --profiles FILE",
				 argv[optind]);
	if ((status = est_cli_resolve(&src, "validate", &o)))
		return status;
	if (!nprof) {
		nshipped = est_cli_profiles(profiles, 64);
		nprof = nshipped;
	}
	o.datasets = (const char *const *)profiles;
	o.ndatasets = nprof;
	if (!(cat = est_cli_catalog(catalog, "validate", &status)))
		goto out;
	est_cli_progress_init(&prog, "validate");
	o.progress = est_cli_progress;
	o.progress_ud = &prog;
	o.report = &report;
	rc = hp_estimator_validate(&o, cat, (int)folds, &v, &err);
	est_cli_progress_end(&prog);
	if (rc) {
		status = cli_error(cli_status_for(err.code), "validate: %s",
				   err.msg);
		goto out;
	}
	est_cli_report_skipped("validate", &report);
	if (json) {
		json_t *j = json_object(), *rows = json_array(),
		       *notes = json_array();
		for (int i = 0; i < v.n; i++) {
			const struct hp_validation_row *r = &v.rows[i];
			json_array_append_new(
			    rows,
			    json_pack("{s:s, s:s, s:s, s:i, s:f, s:f, s:f, "
				      "s:s}",
				      "data", r->data, "family", r->family,
				      "scheme", r->scheme, "n", r->n,
				      "mape_percent", r->mape, "median_percent",
				      r->median, "worst_percent", r->worst,
				      "note", r->note));
		}
		for (int i = 0; i < v.nnotes; i++)
			json_array_append_new(notes, json_string(v.notes[i]));
		json_object_set_new(j, "rows", rows);
		json_object_set_new(j, "notes", notes);
		json_object_set_new(j, "profile_rows",
				    json_integer(report.profile_rows));
		json_object_set_new(j, "skipped_bad_rows",
				    json_integer(report.bad_rows_skipped));
		json_dumpf(j, stdout, JSON_INDENT(2));
		fputc('\n', stdout);
		json_decref(j);
		goto out;
	}
	printf("%-13s %-9s %-17s %5s %8s %8s %8s  %s\n", "data", "family",
	       "scheme", "n", "MAPE%", "median%", "worst%", "note");
	for (int i = 0; i < v.n; i++) {
		const struct hp_validation_row *r = &v.rows[i];
		printf("%-13s %-9s %-17s %5d %8.1f %8.1f %8.1f  %s\n", r->data,
		       r->family, r->scheme, r->n, r->mape, r->median, r->worst,
		       r->note);
	}
	if (v.nnotes)
		printf("\n");
	for (int i = 0; i < v.nnotes; i++)
		printf("note: %s\n", v.notes[i]);
out:
	for (int i = 0; i < nshipped; i++)
		free(profiles[i]);
	hp_validation_release(&v);
	hp_catalog_free(cat);
	return status;
}
