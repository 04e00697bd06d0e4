/* est_cli.h - helpers shared by the estimator's commands (fit, predict,
 * validate): the catalog with this host applied, shipped data paths. */
#ifndef HP_EST_CLI_H
#define HP_EST_CLI_H

#include <stddef.h>

#include "hetpool/device.h"

/* Load the catalog (catalog NULL: the shipped one) and fill its CPU type
 * from this host.  NULL after printing one error line; *status is the exit
 * status then. */
struct hp_catalog *est_cli_catalog(const char *catalog, const char *cmd,
				   int *status);
/* The shipped profiles: the .csv files in data/profiles, sorted; returns how
 * many paths were put in paths[] (each malloc'ed), at most max. */
int est_cli_profiles(char **paths, int max);

#endif
