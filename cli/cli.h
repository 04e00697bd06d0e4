/* cli.h - shared pieces of the hetpool command-line program. */
#ifndef HP_CLI_H
#define HP_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hetpool/util.h"

/* Exit statuses: 0 success, 1 a failure while working, 2 bad usage or
 * bad input. */
enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };

/* Print "hetpool: <msg>" to stderr, control characters escaped (one line
 * whatever the names in it hold); returns status. */
int cli_error(int status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* s with its control characters escaped into buf (hp_str_escape): for
 * names from files printed in tables.  Returns buf. */
const char *cli_esc(const char *s, char *buf, size_t n);
/* Exit status for a library error code: 2 for bad input, else 1. */
int cli_status_for(int code);

/* Parse "3x224x224" into dims (at most max); returns count or -1. */
int cli_parse_dims(const char *s, int64_t *dims, int max);
/* Format a byte count as "12.3 MiB". */
const char *cli_bytes(int64_t b, char *buf, int len);
/* Format a count as "4.09 G". */
const char *cli_si(double v, char *buf, int len);

/* Find a file the program ships under data/ ($HETPOOL_DATA_DIR, beside
 * the program, the source tree); 0 with its path in buf, or -1. */
int cli_data_path(const char *name, char *buf, size_t n);

int cmd_analyze(int argc, char **argv);
int cmd_devices(int argc, char **argv);
int cmd_profile(int argc, char **argv);
int cmd_fit(int argc, char **argv);
int cmd_predict(int argc, char **argv);
int cmd_validate(int argc, char **argv);
int cmd_recommend(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_jobs(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_logs(int argc, char **argv);
int cmd_cancel(int argc, char **argv);
int cmd_lr_find(int argc, char **argv);
/* The job's own steps (_supervise, _rank, _stage, _slurm-batch,
 * _wait-hosts), run by its launchers; argv[0] names the step. */
int cmd_helper(int argc, char **argv);

#endif
