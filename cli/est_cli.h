/* est_cli.h - helpers shared by the estimator's commands (fit, predict,
 * validate): the catalog with this host applied, shipped data paths. */
#ifndef HP_EST_CLI_H
#define HP_EST_CLI_H

#include <stdbool.h>
#include <stddef.h>

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

/* Load the catalog (catalog NULL: the shipped one) and fill its CPU type
 * from this host.  NULL after printing one error line; *status is the exit
 * status then. */
struct hp_catalog *est_cli_catalog(const char *catalog, const char *cmd,
				   int *status);
/* The shipped profiles: the .csv files in data/profiles, sorted; returns how
 * many paths were put in paths[] (each malloc'ed), at most max. */
int est_cli_profiles(char **paths, int max);

#endif
