/* est_cli.h - helpers shared by the estimator's commands (fit, validate):
 * where the data is read from, shipped data paths, progress. */
#ifndef HP_EST_CLI_H
#define HP_EST_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hetpool/device.h"
#include "hetpool/estimate.h"

/* Where fit and validate read from: --public DIR, --no-public, --models DIR
 * as given (NULL when not), resolved to the shipped data by default. */
struct est_cli_sources {
	const char *pub, *models;
	bool no_public;
	char pubbuf[4096], modbuf[4096];
};
/* Set o->public_dir and o->models_dir from s.  0, or the exit status after
 * printing one error line (both --public and --no-public; no shipped
 * measurements and no --no-public). */
int est_cli_resolve(struct est_cli_sources *s, const char *cmd,
		    struct hp_fit_options *o);

/* The shipped profiles: the .csv files in data/profiles, sorted; returns how
 * many paths were put in paths[] (each malloc'ed), at most max. */
int est_cli_profiles(char **paths, int max);

/*
 * Progress of a long fit or validation on stderr: only when stderr is a
 * terminal (a log or a pipe gets nothing: one error line stays one line),
 * only after the first 2 seconds, at most 4 times a second, as one line
 * rewritten in place.  est_cli_progress() is the library's callback (ud:
 * the struct); est_cli_progress_end() clears the line before anything
 * else is printed.
 */
struct est_cli_progress {
	const char *cmd;
	bool tty, shown;
	double start_s, last_s;
};
void est_cli_progress_init(struct est_cli_progress *p, const char *cmd);
void est_cli_progress(const char *stage, int64_t done, int64_t total, void *ud);
void est_cli_progress_end(struct est_cli_progress *p);

/* A warning line on stderr when bad rows were skipped (--skip-bad-rows):
 * how many, and the first. */
void est_cli_report_skipped(const char *cmd, const struct hp_fit_report *r);

#endif
