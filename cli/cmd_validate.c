/* cmd_validate.c - `hetpool validate`: cross-validate the estimator's
 * families and the roofline baseline on the shipped data. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "est_cli.h"
#include "hetpool/estimate.h"
#include "opt.h"

static const char help[] =
    "usage: hetpool validate [--profiles FILE]... [--public DIR | "
    "--no-public]\n"
    "                        [--folds K] [--models DIR] [--skip-bad-rows] "
    "[--threads N]\n"
    "                        [--catalog FILE] [--absolute] [--json]\n"
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
    "  --absolute       score the profiles' absolute step times (default:\n"
    "                   rows that carry the profiler's yardstick, "
    "ref_time_s,\n"
    "                   are scaled to their device's reference speed "
    "first)\n"
    "  --json           print JSON for scripts\n"
    "\n"
    "Beside every error, the noise floor: the median absolute percentage\n"
    "difference between two measurements of the same configuration (the "
    "repeats\n"
    "of 'hetpool profile', see its help), of the absolute times and, where "
    "the\n"
    "rows carry the yardstick, of the times relative to it; 'not "
    "measured' where\n"
    "no configuration was measured twice.  An error near the floor is as "
    "good as\n"
    "the measurements allow.\n"
    "\n"
    "Progress is shown on stderr when stderr is a terminal.\n"
    "\n"
    "examples:\n"
    "  hetpool validate\n"
    "  hetpool validate --profiles my-host.csv --no-public --folds 10\n";

struct validate_args {
	struct cli_list profiles;
	struct est_cli_sources src;
	int64_t folds;
	bool skip_bad_rows, json, absolute;
	const char *catalog;
	int threads;
};

static const struct cli_opt validate_opts[] = {
    CLI_OPT_LIST("profiles", struct validate_args, profiles),
    CLI_OPT_STR("public", struct validate_args, src.pub),
    CLI_OPT_FLAG("no-public", struct validate_args, src.no_public),
    CLI_OPT_INT("folds", struct validate_args, folds, 2, 100),
    CLI_OPT_STR("models", struct validate_args, src.models),
    CLI_OPT_FLAG("skip-bad-rows", struct validate_args, skip_bad_rows),
    CLI_OPT_STR("catalog", struct validate_args, catalog),
    CLI_OPT_FLAG("json", struct validate_args, json),
    CLI_OPT_FLAG("absolute", struct validate_args, absolute),
    CLI_OPT_INT("threads", struct validate_args, threads, 1, 256),
    CLI_OPT_END,
};

static int cmd_validate(int argc, char **argv)
{
	struct validate_args a = {.folds = 5};
	struct hp_fit_options o = {0};
	struct hp_fit_report report = {0};
	struct est_cli_progress prog;
	struct hp_error err = {0};
	struct hp_validation v = {0};
	struct hp_catalog *cat = NULL;
	char *shipped[64];
	const char **profiles = a.profiles.v;
	int nprof, nshipped = 0, first, rc, status = EXIT_OK;
	bool json;

	if ((status = cli_parse(&cli_cmd_validate, argc, argv, &a, &first)))
		return status < 0 ? EXIT_OK : status;
	nprof = a.profiles.n;
	json = a.json;
	o.skip_bad_rows = a.skip_bad_rows;
	o.absolute_times = a.absolute;
	o.threads = a.threads;
	if (first < argc)
		return cli_error(EXIT_USAGE,
				 "validate: unexpected '%s'; give profiles "
				 "with --profiles FILE",
				 argv[first]);
	if ((status = est_cli_resolve(&a.src, "validate", &o)))
		return status;
	if (!nprof) {
		nshipped = est_cli_profiles(shipped, 64);
		nprof = nshipped;
		profiles = (const char **)shipped;
	}
	o.datasets = (const char *const *)profiles;
	o.ndatasets = nprof;
	if (!(cat = cli_load_catalog("validate", a.catalog, NULL, &status)))
		goto out;
	est_cli_progress_init(&prog, "validate");
	o.progress = est_cli_progress;
	o.progress_ud = &prog;
	o.report = &report;
	rc = hp_estimator_validate(&o, cat, (int)a.folds, &v, &err);
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
			json_t *jr = json_pack(
			    "{s:s, s:s, s:s, s:i, s:f, s:f, s:f, "
			    "s:s}",
			    "data", r->data, "family", r->family, "scheme",
			    r->scheme, "n", r->n, "mape_percent", r->mape,
			    "median_percent", r->median, "worst_percent",
			    r->worst, "note", r->note);
			/* null: not measured */
			json_object_set_new(
			    jr, "noise_floor",
			    json_pack(
				"{s:o, s:o, s:i}", "abs_percent",
				isnan(r->noise_abs) ? json_null()
						    : json_real(r->noise_abs),
				"rel_percent",
				isnan(r->noise_rel) ? json_null()
						    : json_real(r->noise_rel),
				"pairs", r->noise_pairs));
			json_array_append_new(rows, jr);
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
	printf("%-13s %-9s %-17s %5s %8s %8s %8s  %-24s %s\n", "data", "family",
	       "scheme", "n", "MAPE%", "median%", "worst%",
	       "noise floor abs/rel%", "note");
	for (int i = 0; i < v.n; i++) {
		const struct hp_validation_row *r = &v.rows[i];
		char noise[64];
		if (isnan(r->noise_abs))
			snprintf(noise, sizeof(noise), "not measured");
		else if (isnan(r->noise_rel))
			snprintf(noise, sizeof(noise), "%.1f/not measured",
				 r->noise_abs);
		else
			snprintf(noise, sizeof(noise), "%.1f/%.1f",
				 r->noise_abs, r->noise_rel);
		printf("%-13s %-9s %-17s %5d %8.1f %8.1f %8.1f  %-24s %s\n",
		       r->data, r->family, r->scheme, r->n, r->mape, r->median,
		       r->worst, noise, r->note);
	}
	printf("\nnoise floor: the median absolute difference between "
	       "repeats of a configuration, absolute times / relative to "
	       "the yardstick; not measured: no configuration measured "
	       "twice (hetpool profile --repeat N)\n");
	if (v.nnotes)
		printf("\n");
	for (int i = 0; i < v.nnotes; i++)
		printf("note: %s\n", v.notes[i]);
out:
	for (int i = 0; i < nshipped; i++)
		free(shipped[i]);
	hp_validation_release(&v);
	hp_catalog_free(cat);
	return status;
}

const struct cli_cmd cli_cmd_validate = {
    .name = "validate",
    .run = cmd_validate,
    .help = help,
    .opts = validate_opts,
};
