/* cmd_fit.c - `hetpool fit`: fit the estimator on profiles and public
 * measurements and save it as JSON. */
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "est_cli.h"
#include "hetpool/estimate.h"
#include "opt.h"

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
    "                   data/profiles/*.csv.  Datasets given with no row "
    "to fit\n"
    "                   (a header alone, every row left out) are exit 2\n"
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

struct fit_args {
	const char *out, *catalog;
	int family;
	struct est_cli_sources src;
	bool skip_bad_rows, json;
	int threads;
};

static const struct cli_word fit_family_words[] = {
    {"physical", HP_EST_PHYSICAL},
    {"linear", HP_EST_LINEAR},
    {NULL, 0},
};

static const struct cli_opt fit_opts[] = {
    CLI_OPT_STR("out", struct fit_args, out),
    CLI_OPT_WORD("family", struct fit_args, family, fit_family_words),
    CLI_OPT_STR("public", struct fit_args, src.pub),
    CLI_OPT_FLAG("no-public", struct fit_args, src.no_public),
    CLI_OPT_STR("models", struct fit_args, src.models),
    CLI_OPT_FLAG("skip-bad-rows", struct fit_args, skip_bad_rows),
    CLI_OPT_STR("catalog", struct fit_args, catalog),
    CLI_OPT_FLAG("json", struct fit_args, json),
    CLI_OPT_INT("threads", struct fit_args, threads, 1, 256),
    CLI_OPT_END,
};

static int cmd_fit(int argc, char **argv)
{
	struct fit_args a = {.family = HP_EST_PHYSICAL};
	struct hp_fit_options o = {0};
	struct hp_fit_report report = {0};
	struct hp_error err = {0};
	struct hp_estimator *est = NULL;
	struct hp_catalog *cat = NULL;
	struct hp_estimator_file file;
	struct est_cli_progress prog;
	const char *out;
	char *shipped[64];
	int nshipped = 0, first, status = EXIT_OK;
	bool json, open = false;

	if ((status = cli_parse(&cli_cmd_fit, argc, argv, &a, &first)))
		return status < 0 ? EXIT_OK : status;
	out = a.out;
	json = a.json;
	o.family = (enum hp_est_family)a.family;
	o.skip_bad_rows = a.skip_bad_rows;
	o.threads = a.threads;
	if (!out)
		return cli_error(EXIT_USAGE, "fit: give --out FILE; see "
					     "'hetpool fit --help'");
	if ((status = est_cli_resolve(&a.src, "fit", &o)))
		return status;
	/* Where the estimator goes is known to work before a long fit. */
	if (hp_estimator_save_open(&file, out, &err))
		return cli_error(EXIT_USAGE, "fit: %s", err.msg);
	open = true;
	tmp_path = file.af.tmp;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (first < argc) {
		o.datasets = (const char *const *)&argv[first];
		o.ndatasets = argc - first;
	} else {
		nshipped = est_cli_profiles(shipped, 64);
		o.datasets = (const char *const *)shipped;
		o.ndatasets = nshipped;
	}
	if (!(cat = cli_load_catalog("fit", a.catalog, NULL, &status)))
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
	/* Datasets given that add no row leave a fit of the public
	 * measurements alone, which was written as if fitted on them (an
	 * empty file is refused by the reader; a header alone was not). */
	if (first < argc && report.profile_rows == 0) {
		char what[300], esc[256];
		if (argc - first == 1)
			snprintf(what, sizeof(what), "'%s'",
				 cli_esc(argv[first], esc, sizeof(esc)));
		else
			snprintf(what, sizeof(what), "the %d datasets given",
				 argc - first);
		status = cli_error(
		    EXIT_USAGE, "fit: no profile row to fit in %s: %s", what,
		    report.bad_rows_skipped
			? "every row was bad (--skip-bad-rows left them out)"
			: "a header alone, or every row left out (measured "
			  "on a busy host, or on a device type not in the "
			  "catalog)");
		goto out;
	}
	open = false;
	if (hp_estimator_save_commit(&file, est, &err)) {
		status = cli_error(EXIT_FAIL, "fit: %s", err.msg);
		goto out;
	}
	est_cli_report_skipped("fit", &report);
	for (int i = 0; i < report.nnotes; i++)
		fprintf(stderr, "hetpool: fit: note: %s\n", report.notes[i]);
	if (json) {
		json_t *notes = json_array();
		json_t *j;
		for (int i = 0; i < report.nnotes; i++)
			json_array_append_new(notes,
					      json_string(report.notes[i]));
		j = json_pack(
		    "{s:s, s:s, s:s, s:I, s:I, s:o}", "estimator", out,
		    "family", hp_est_family_name(hp_estimator_family(est)),
		    "provenance", hp_estimator_provenance(est), "profile_rows",
		    (json_int_t)report.profile_rows, "skipped_bad_rows",
		    (json_int_t)report.bad_rows_skipped, "notes", notes);
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

const struct cli_cmd cli_cmd_fit = {
    .name = "fit",
    .run = cmd_fit,
    .help = help,
    .opts = fit_opts,
};
