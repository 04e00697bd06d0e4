/* cli.h - shared pieces of the hetpool command-line program. */
#ifndef HP_CLI_H
#define HP_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hetpool/ctx.h"
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

/* Whether s is a number as people write one on a command line: digits,
 * with a leading '-', a '.' and an exponent; no blanks, '+' or hex (which
 * strtod and strtoll would also take). */
bool cli_plain_number(const char *s);
/* Parse "3x224x224" into dims (at most max); returns count or -1. */
int cli_parse_dims(const char *s, int64_t *dims, int max);
/* Format a byte count as "12.3 MiB". */
const char *cli_bytes(int64_t b, char *buf, int len);
/* Format a count as "4.09 G". */
const char *cli_si(double v, char *buf, int len);

/* Find a file the program ships under data/ (hp_data_path()); 0 with its
 * path in buf, or -1. */
int cli_data_path(const char *name, char *buf, size_t n);

/*
 * The loading sequence (ctx.h) for a command: each prints one line,
 * "hetpool: CMD: " and the library's message (plus what to give instead
 * when a shipped file is missing: "; give --catalog FILE", or a device
 * type is unknown: "; see 'hetpool devices'"), and gives the exit status
 * in *status (cli_load_model() returns it).  NULL paths: the shipped
 * files.
 */
struct hp_ctx *cli_load_ctx(const char *cmd, const char *catalog,
			    const char *estimator, bool with_estimator,
			    int *status);
/* The hint for a library error about a missing shipped file ("; give
 * --estimator FILE ('hetpool fit')"), else "". */
const char *cli_load_hint(const struct hp_error *err);
struct hp_catalog *cli_load_catalog(const char *cmd, const char *catalog,
				    struct hp_host *host, int *status);
struct hp_graph *cli_load_graph(const char *cmd, const char *path, int *status);
int cli_load_model(const char *cmd, const char *path, int64_t batch,
		   const int64_t *shape, int rank, struct hp_model_input *out);
struct hp_pool *cli_load_pool(const char *cmd, const char *path,
			      const struct hp_catalog *cat, int *status);
const struct hp_device_type *cli_find_type(const char *cmd,
					   const struct hp_catalog *cat,
					   const char *name, int *status);
/*
 * One core's input pipeline for a model of input_hw x input_hw pixels:
 * CPU seconds a sample (*sample_s) from a rate the user gives
 * (rate > 0: 1 / rate), else from this host's measured JPEG pipeline
 * (the host file of the threads used, else the one-thread file:
 * 'hetpool host --measure') decoding src_px source pixels (<= 0: 500 x
 * 375); basis (n bytes; NULL with n 0) says which.  0, or the exit
 * status after one error line
 * (nothing measured, no image input).
 */
int cli_input_sample_s(const char *cmd, double rate, double src_px,
		       int64_t input_hw, double *sample_s, char *basis,
		       size_t n);

/* The commands, each with its options (opt.h). */
struct cli_cmd;
extern const struct cli_cmd cli_cmd_analyze, cli_cmd_devices, cli_cmd_profile,
    cli_cmd_fit, cli_cmd_predict, cli_cmd_validate, cli_cmd_recommend,
    cli_cmd_run, cli_cmd_jobs, cli_cmd_status, cli_cmd_logs, cli_cmd_cancel,
    cli_cmd_remove, cli_cmd_lr_find;
extern const struct cli_cmd cli_cmd_host, cli_cmd_calibrate;
/* The job's own steps (_supervise, _rank, _stage, _slurm-batch,
 * _wait-hosts), run by its launchers; argv[0] names the step. */
int cmd_helper(int argc, char **argv);

#endif
