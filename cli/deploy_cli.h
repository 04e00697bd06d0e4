/* deploy_cli.h - what the job commands (run, jobs, status, logs, cancel
 * and the job's own helpers) share: where jobs live, the deploy context,
 * the programs a job runs. */
#ifndef HP_DEPLOY_CLI_H
#define HP_DEPLOY_CLI_H

#include <stddef.h>

#include "hetpool/deploy.h"

/*
 * The jobs folder: --jobs-dir (given, or NULL), else $HETPOOL_JOBS_DIR,
 * else $XDG_STATE_HOME/hetpool/jobs, else ~/.local/state/hetpool/jobs;
 * made absolute.  0, or the exit status after one error line.
 */
int deploy_cli_jobs_dir(const char *given, const char *cmd, char *buf,
			size_t n);
/* A context on the jobs folder; NULL after one error line (*status is the
 * exit status then). */
struct hp_deploy *deploy_cli_open(const char *jobs_dir, const char *cmd,
				  int *status);
/* This program's absolute path (/proc/self/exe); 0 or -1. */
int deploy_cli_self(char *buf, size_t n);
/* Why path is not a program to run ("no such file", "a folder, not an
 * executable file", ...), or NULL when it is a regular executable file:
 * access(X_OK) alone passes a folder. */
const char *deploy_cli_not_program(const char *path);
/* The trainer: --trainer, else $HETPOOL_TRAINER, else hetpool-train
 * beside this program, else on PATH (the first there that is a regular
 * executable file); "" when there is none. */
void deploy_cli_trainer(const char *given, char *buf, size_t n);
/* How long ago Unix time t was, for people ("5s ago", "3h ago"; "-"
 * for 0). */
const char *deploy_cli_age(double t, char *buf, size_t n);

/* The job as JSON for --json: the state file's keys and "dir" (the
 * caller frees it; NULL on ENOMEM). */
char *deploy_cli_job_json(const struct hp_job *j);

#endif
