/*
 * cmd_jobs.c - following jobs: `hetpool jobs`, `status ID`, `logs ID`,
 * `cancel ID`; and the job's own steps, run by its launchers on its nodes
 * (not for people, so not in the usage): `_supervise JOBDIR`, `_rank
 * JOBDIR`, `_stage MANIFEST DEST`, `_slurm-batch SCRIPT` (the interpreter
 * of a Slurm batch script) and `_wait-hosts HOSTFILE SECONDS`.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "deploy_cli.h"
#include "hetpool/deploy.h"
#include "opt.h"

extern char **environ;

static const char jobs_help[] =
    "usage: hetpool jobs [--state S] [--jobs-dir DIR] [--json]\n"
    "\n"
    "List the jobs, oldest first: id, state, backend, ranks, age, model "
    "and,\n"
    "for a job that failed, was cancelled or waits, why.  A job that has "
    "not\n"
    "ended is first brought up to date from its backend (its supervisor, "
    "squeue\n"
    "and sacct, kubectl).\n"
    "\n"
    "  --state S       only jobs in state S: queued, starting, running, "
    "succeeded,\n"
    "                  failed, cancelled\n"
    "  --jobs-dir DIR  default $HETPOOL_JOBS_DIR, else "
    "$XDG_STATE_HOME/hetpool/jobs,\n"
    "                  else ~/.local/state/hetpool/jobs\n"
    "  --json          print a JSON array of the jobs\n"
    "\n"
    "exit status: 0 listed, 1 the jobs folder cannot be read (or a job's\n"
    "job.json is damaged: that job is named on stderr and the rest are\n"
    "listed), 2 bad options.\n"
    "\n"
    "examples:\n"
    "  hetpool jobs\n"
    "  hetpool jobs --state running --json | jq -r '.[].id'\n";

static const char status_help[] =
    "usage: hetpool status ID [--jobs-dir DIR] [--json]\n"
    "\n"
    "Show a job: its state (queued, starting, running, succeeded, failed,\n"
    "cancelled) and why, its backend and handle (pid, Slurm job id, "
    "namespace),\n"
    "its times, and once it has ended the trainer's results and the "
    "device each\n"
    "rank ran on.  A job that has not ended is first brought up to date "
    "from\n"
    "its backend.\n"
    "\n"
    "  --jobs-dir DIR  as for 'hetpool jobs'\n"
    "  --json          print the job as JSON (the state file's keys, and "
    "\"dir\")\n"
    "\n"
    "exit status: 0 shown, 1 it cannot be read, 2 no such job or bad "
    "options.\n"
    "\n"
    "example:\n"
    "  hetpool status 20261130-121501-3fa2 --json | jq .state\n";

static const char logs_help[] =
    "usage: hetpool logs ID [--rank K | --rank all | --launcher] "
    "[--follow]\n"
    "                       [--jobs-dir DIR]\n"
    "\n"
    "Print a job's logs: a rank's output (default rank 0), every rank's "
    "one\n"
    "after another (--rank all), or the launcher's (the supervisor, "
    "mpirun, the\n"
    "Slurm batch step).  On a terminal, control characters are escaped.\n"
    "\n"
    "  --rank K        rank K's output (logs/rank-K.log)\n"
    "  --launcher      the launcher's output (logs/launcher.log)\n"
    "  --follow        keep printing what is added until the job ends\n"
    "  --jobs-dir DIR  as for 'hetpool jobs'\n"
    "\n"
    "exit status: 0 printed, 1 it cannot be read, 2 no such job, rank or "
    "log.\n"
    "\n"
    "examples:\n"
    "  hetpool logs 20261130-121501-3fa2 --rank 1\n"
    "  hetpool logs 20261130-121501-3fa2 --follow\n";

static const char cancel_help[] =
    "usage: hetpool cancel ID [--jobs-dir DIR] [--json]\n"
    "\n"
    "Stop a job: its workers get SIGTERM, so the trainers stop at a step\n"
    "boundary (SIGKILL after 10 s); Slurm jobs are scancel'ed, Kubernetes "
    "ones\n"
    "deleted.  It ends cancelled, its devices released.\n"
    "\n"
    "  --jobs-dir DIR  as for 'hetpool jobs'\n"
    "  --json          print the job as JSON afterwards\n"
    "\n"
    "exit status: 0 cancelled, 1 the backend could not be told, 2 no such "
    "job,\n"
    "or it has already ended.\n"
    "\n"
    "example:\n"
    "  hetpool cancel 20261130-121501-3fa2\n";

static const char remove_help[] =
    "usage: hetpool remove ID [--jobs-dir DIR] [--json]\n"
    "\n"
    "Remove a job that has ended, with its folder: plan, logs, metrics,\n"
    "checkpoints and results.  A job that has not ended stays: cancel it\n"
    "first.  (A hetpoold removes its jobs on DELETE /v1/jobs/ID, and all "
    "of\n"
    "them a while after they ended when it is started so: "
    "docs/daemon.md.)\n"
    "\n"
    "  --jobs-dir DIR  as for 'hetpool jobs'\n"
    "  --json          print {\"id\": ID, \"removed\": true}\n"
    "\n"
    "exit status: 0 removed, 1 the folder could not be removed, 2 no such "
    "job,\n"
    "or it has not ended.\n"
    "\n"
    "example:\n"
    "  hetpool remove 20261130-121501-3fa2\n";

/* Options the follow-up commands share. */
struct fopts {
	const char *jobs, *state, *rank;
	bool json, launcher, follow;
};

#define FO struct fopts
static const struct cli_opt jobs_opts[] = {
    CLI_OPT_STR("state", FO, state),
    CLI_OPT_STR("jobs-dir", FO, jobs),
    CLI_OPT_FLAG("json", FO, json),
    CLI_OPT_END,
};
static const struct cli_opt status_opts[] = {
    CLI_OPT_STR("jobs-dir", FO, jobs),
    CLI_OPT_FLAG("json", FO, json),
    CLI_OPT_END,
};
static const struct cli_opt logs_opts[] = {
    CLI_OPT_STR("rank", FO, rank),
    CLI_OPT_FLAG("launcher", FO, launcher),
    {.name = "follow",
     .kind = CLI_FLAG,
     .off = offsetof(FO, follow),
     .size = sizeof(bool),
     .short_name = 'f'},
    CLI_OPT_STR("jobs-dir", FO, jobs),
    CLI_OPT_END,
};
#undef FO

/* Parse a follow-up command's options; 0 (its arguments from optind),
 * -1 after printing help, or the exit status of a bad option. */
static int parse(int argc, char **argv, const struct cli_cmd *cmd,
		 struct fopts *o)
{
	int first;

	return cli_parse(cmd, argc, argv, o, &first);
}

static struct hp_deploy *open_jobs(const struct fopts *o, const char *cmd,
				   int *status)
{
	char dir[PATH_MAX];

	if ((*status = deploy_cli_jobs_dir(o->jobs, cmd, dir, sizeof(dir))))
		return NULL;
	return deploy_cli_open(dir, cmd, status);
}

/* The exit status for a job that cannot be read: 2 for no such job (a
 * wrong id), 1 for one whose job.json is damaged or cannot be asked
 * about (as --help says). */
static int job_read_status(int rc)
{
	return rc == HP_ENOENT	 ? EXIT_USAGE
	       : rc == HP_EPARSE ? EXIT_FAIL
				 : cli_status_for(rc);
}

static int one_id(int argc, char **argv, const char *cmd, const char **id)
{
	if (optind != argc - 1)
		return cli_error(EXIT_USAGE,
				 "%s: give one job ID; see 'hetpool "
				 "%s --help'",
				 cmd, cmd);
	*id = argv[optind];
	if (!hp_job_id_valid(*id))
		return cli_error(EXIT_USAGE,
				 "%s: '%s' is not a job id (letters a-z, "
				 "digits and '-')",
				 cmd, *id);
	return 0;
}

/* A job folder whose job.json is damaged: said on stderr, the list goes
 * on, and the command ends with status 1 (as ls does for what it could
 * not read). */
static void damaged_job(const char *id, const char *why, void *ud)
{
	int *status = ud;

	fprintf(stderr, "hetpool: jobs: job %s is left out: %s\n", id, why);
	*status = EXIT_FAIL;
}

static int cmd_jobs(int argc, char **argv)
{
	struct fopts o = {0};
	struct hp_error err = {0};
	struct hp_deploy *d;
	struct hp_job *jobs = NULL;
	enum hp_job_state want = HP_JOB_QUEUED;
	int n = 0, status = EXIT_OK, rc;

	if ((rc = parse(argc, argv, &cli_cmd_jobs, &o)))
		return rc < 0 ? EXIT_OK : rc;
	if (optind != argc)
		return cli_error(EXIT_USAGE, "jobs: takes no arguments; see "
					     "'hetpool jobs --help'");
	if (o.state && hp_job_state_parse(o.state, &want))
		return cli_error(EXIT_USAGE,
				 "jobs: --state '%s': give queued, starting, "
				 "running, succeeded, failed or cancelled",
				 o.state);
	if (!(d = open_jobs(&o, "jobs", &status)))
		return status;
	if ((rc = hp_deploy_list(d, true, &jobs, &n, damaged_job, &status,
				 &err))) {
		status = cli_error(cli_status_for(rc), "jobs: %s", err.msg);
		goto out;
	}
	if (o.json)
		printf("[");
	else
		printf("%-22s %-10s %-10s %5s  %-9s %-16s %s\n", "ID", "STATE",
		       "BACKEND", "RANKS", "CREATED", "MODEL", "REASON");
	for (int i = 0, shown = 0; i < n; i++) {
		const struct hp_job *j = &jobs[i];
		char age[32], m[256], r[600];
		if (o.state && j->state != want)
			continue;
		if (o.json) {
			char *s = deploy_cli_job_json(j);
			printf("%s%s", shown ? ",\n" : "\n", s ? s : "null");
			free(s);
		} else {
			printf("%-22s %-10s %-10s %5d  %-9s %-16s %s\n", j->id,
			       hp_job_state_name(j->state),
			       hp_backend_name(j->backend), j->nranks,
			       deploy_cli_age(j->created_s, age, sizeof(age)),
			       cli_esc(j->model, m, sizeof(m)),
			       cli_esc(j->reason, r, sizeof(r)));
		}
		shown++;
	}
	if (o.json)
		printf("\n]\n");
out:
	hp_job_list_free(jobs, n);
	hp_deploy_free(d);
	return status;
}

static void print_status(const struct hp_job *j)
{
	char a[32], b[1024];

	printf("id         %s\n", j->id);
	if (j->name[0])
		printf("name       %s\n", cli_esc(j->name, b, sizeof(b)));
	printf("state      %s\n", hp_job_state_name(j->state));
	if (j->reason[0])
		printf("reason     %s\n", cli_esc(j->reason, b, sizeof(b)));
	printf("backend    %s", hp_backend_name(j->backend));
	if (j->slurm_id[0])
		printf(" (Slurm job %s)", j->slurm_id);
	else if (j->backend == HP_BACKEND_KUBERNETES && !j->k8s_namespace[0])
		printf(" (not applied)"); /* the apply failed */
	else if (j->backend == HP_BACKEND_KUBERNETES)
		printf(" (namespace %s, %s)", j->k8s_namespace,
		       j->applied ? "applied" : "not applied");
	else if (j->pid)
		printf(" (supervisor pid %ld)", j->pid);
	printf("\n");
	printf("ranks      %d\n", j->nranks);
	printf("model      %s\n", cli_esc(j->model, b, sizeof(b)));
	printf("data       %s\n", cli_esc(j->data, b, sizeof(b)));
	printf("created    %s\n", deploy_cli_age(j->created_s, a, sizeof(a)));
	if (j->started_s)
		printf("started    %s\n",
		       deploy_cli_age(j->started_s, a, sizeof(a)));
	if (j->ended_s)
		printf("ended      %s (ran %.1f s)\n",
		       deploy_cli_age(j->ended_s, a, sizeof(a)),
		       j->started_s ? j->ended_s - j->started_s : 0.0);
	if (j->exit_status >= 0)
		printf("exit       %d\n", j->exit_status);
	printf("folder     %s\n", cli_esc(j->dir, b, sizeof(b)));
	for (int i = 0; i < j->nranks_seen; i++) {
		const struct hp_job_rank *r = &j->ranks[i];
		char h[256], nd[256], c[128], note[600];
		printf("rank %-5d %s on %s (host %s), "
		       "CUDA_VISIBLE_DEVICES=%s%s%s\n",
		       r->rank, r->device, cli_esc(r->node, nd, sizeof(nd)),
		       cli_esc(r->host, h, sizeof(h)),
		       cli_esc(r->cuda_visible_devices, c, sizeof(c)),
		       r->note[0] ? ": " : "",
		       cli_esc(r->note, note, sizeof(note)));
	}
	if (j->results)
		printf("results    %s\n", cli_esc(j->results, b, sizeof(b)));
}

static int cmd_status(int argc, char **argv)
{
	struct fopts o = {0};
	struct hp_error err = {0};
	struct hp_deploy *d;
	struct hp_job j = {0};
	const char *id;
	int status = EXIT_OK, rc;

	if ((rc = parse(argc, argv, &cli_cmd_status, &o)))
		return rc < 0 ? EXIT_OK : rc;
	if ((rc = one_id(argc, argv, "status", &id)))
		return rc;
	if (!(d = open_jobs(&o, "status", &status)))
		return status;
	if ((rc = hp_deploy_status(d, id, true, &j, &err))) {
		status = cli_error(job_read_status(rc), "status: %s", err.msg);
		goto out;
	}
	if (o.json) {
		char *s = deploy_cli_job_json(&j);
		if (!s)
			status = cli_error(EXIT_FAIL, "status: out of memory");
		else
			puts(s);
		free(s);
	} else {
		print_status(&j);
	}
out:
	hp_job_release(&j);
	hp_deploy_free(d);
	return status;
}

static int cmd_cancel(int argc, char **argv)
{
	struct fopts o = {0};
	struct hp_error err = {0};
	struct hp_deploy *d;
	struct hp_job j = {0};
	const char *id;
	int status = EXIT_OK, rc;

	if ((rc = parse(argc, argv, &cli_cmd_cancel, &o)))
		return rc < 0 ? EXIT_OK : rc;
	if ((rc = one_id(argc, argv, "cancel", &id)))
		return rc;
	if (!(d = open_jobs(&o, "cancel", &status)))
		return status;
	if ((rc = hp_deploy_cancel(d, id, &err))) {
		status = cli_error(
		    rc == HP_ENOENT || rc == HP_EINVAL ? EXIT_USAGE : EXIT_FAIL,
		    "cancel: %s", err.msg);
		goto out;
	}
	if (hp_deploy_status(d, id, false, &j, &err)) {
		status = cli_error(EXIT_FAIL, "cancel: %s", err.msg);
		goto out;
	}
	if (o.json) {
		char *s = deploy_cli_job_json(&j);
		if (s)
			puts(s);
		free(s);
	} else {
		printf("job %s %s\n", j.id, hp_job_state_name(j.state));
	}
out:
	hp_job_release(&j);
	hp_deploy_free(d);
	return status;
}

static int cmd_remove(int argc, char **argv)
{
	struct fopts o = {0};
	struct hp_error err = {0};
	struct hp_deploy *d;
	const char *id;
	int status = EXIT_OK, rc;

	if ((rc = parse(argc, argv, &cli_cmd_remove, &o)))
		return rc < 0 ? EXIT_OK : rc;
	if ((rc = one_id(argc, argv, "remove", &id)))
		return rc;
	if (!(d = open_jobs(&o, "remove", &status)))
		return status;
	if ((rc = hp_deploy_remove(d, id, &err))) {
		status = cli_error(rc == HP_ENOENT || rc == HP_ESTATE ||
					   rc == HP_EINVAL
				       ? EXIT_USAGE
				       : EXIT_FAIL,
				   "remove: %s", err.msg);
		goto out;
	}
	if (o.json)
		printf("{\"id\": \"%s\", \"removed\": true}\n", id);
	else
		printf("job %s removed\n", id);
out:
	hp_deploy_free(d);
	return status;
}

/* Print the bytes of fd from *off on (escaped on a terminal); false when
 * writing fails. */
static bool pump(int fd, off_t *off, bool tty)
{
	char buf[65536];
	ssize_t r;

	while ((r = pread(fd, buf, sizeof(buf) - 1, *off)) > 0) {
		*off += r;
		if (tty) {
			/* line by line, so an escape cannot drive the
			 * terminal; newlines stay */
			char *p = buf, esc[4 * sizeof(buf)];
			buf[r] = '\0';
			for (ssize_t i = 0; i < r; i++)
				if (buf[i] == '\0')
					buf[i] = ' ';
			while (*p) {
				char *nl = strchr(p, '\n');
				if (nl)
					*nl = '\0';
				fputs(cli_esc(p, esc, sizeof(esc)), stdout);
				if (nl)
					fputc('\n', stdout);
				p = nl ? nl + 1 : p + strlen(p);
			}
		} else if (fwrite(buf, 1, (size_t)r, stdout) != (size_t)r) {
			return false;
		}
	}
	return !ferror(stdout);
}

/* A Kubernetes job's log is its launcher pod's: kubectl prints it (and
 * follows it with --follow, ending when the pod does). */
static int k8s_logs(struct hp_deploy *d, const struct hp_job *j, bool follow)
{
	struct hp_error err = {0};
	char **av;
	pid_t pid;
	int rc, st = 0;

	fflush(stdout);
	if ((rc = hp_deploy_k8s_logs_argv(d, j, follow, &av, &err)))
		return cli_error(rc == HP_ESTATE ? EXIT_USAGE : EXIT_FAIL,
				 "logs: %s", err.msg);
	rc = posix_spawnp(&pid, av[0], NULL, NULL, av, environ);
	if (rc) {
		cli_error(EXIT_FAIL, "logs: cannot run '%s': %s", av[0],
			  strerror(rc));
		hp_deploy_argv_free(av);
		return EXIT_FAIL;
	}
	hp_deploy_argv_free(av);
	while ((rc = waitpid(pid, &st, 0)) < 0 && errno == EINTR)
		;
	return rc == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? EXIT_OK
								  : EXIT_FAIL;
}

/* Whether the rank whose log is (or was) at log ran: the job succeeded,
 * the trainer wrote its results, or the rank left its record beside the
 * log (logs/rank-K.json). */
static bool rank_ran(const struct hp_job *j, const char *log)
{
	char rec[PATH_MAX];
	size_t n = strlen(log);

	if (j->state == HP_JOB_SUCCEEDED || j->results)
		return true;
	if (n < 4 || strcmp(log + n - 4, ".log") ||
	    (size_t)snprintf(rec, sizeof(rec), "%.*s.json", (int)(n - 4),
			     log) >= sizeof(rec))
		return false;
	return access(rec, F_OK) == 0;
}

static int cmd_logs(int argc, char **argv)
{
	struct fopts o = {0};
	struct hp_error err = {0};
	struct hp_deploy *d;
	struct hp_job j = {0};
	const char *id;
	char path[PATH_MAX];
	int64_t rank = 0;
	int status = EXIT_OK, rc, first = 0, last = 0;
	bool all = false, tty = isatty(1);
	int fds[HP_PLAN_MAX_RANKS + 1];
	off_t offs[HP_PLAN_MAX_RANKS + 1];
	int nf = 0;

	if ((rc = parse(argc, argv, &cli_cmd_logs, &o)))
		return rc < 0 ? EXIT_OK : rc;
	if ((rc = one_id(argc, argv, "logs", &id)))
		return rc;
	if (o.rank && o.launcher)
		return cli_error(EXIT_USAGE,
				 "logs: give --rank or --launcher, not both");
	if (o.rank && !strcmp(o.rank, "all"))
		all = true;
	else if (o.rank &&
		 hp_parse_i64(o.rank, 0, HP_PLAN_MAX_RANKS - 1, &rank))
		return cli_error(EXIT_USAGE,
				 "logs: --rank '%s': give a rank (0, 1, ...) "
				 "or all",
				 o.rank);
	if (!(d = open_jobs(&o, "logs", &status)))
		return status;
	if ((rc = hp_deploy_status(d, id, false, &j, &err))) {
		status = cli_error(job_read_status(rc), "logs: %s", err.msg);
		goto out;
	}
	if (!o.launcher && rank >= j.nranks) {
		status = cli_error(
		    EXIT_USAGE, "logs: job %s has %d rank%s (0 to %d)", id,
		    j.nranks, j.nranks == 1 ? "" : "s", j.nranks - 1);
		goto out;
	}
	if (j.backend == HP_BACKEND_KUBERNETES) {
		status = k8s_logs(d, &j, o.follow);
		goto out;
	}
	if (o.launcher) {
		first = last = -1;
	} else if (all) {
		first = 0;
		last = j.nranks - 1;
	} else {
		first = last = (int)rank;
	}
	for (int k = first; k <= last; k++) {
		if (hp_deploy_log_path(d, id, k, path, sizeof(path), &err)) {
			status = cli_error(EXIT_FAIL, "logs: %s", err.msg);
			goto out;
		}
		fds[nf] = open(path, O_RDONLY | O_CLOEXEC);
		offs[nf] = 0;
		if (fds[nf] < 0 && !o.follow && !all) {
			bool ended = hp_job_state_terminal(j.state);
			status = cli_error(
			    EXIT_USAGE, "logs: no %s log %sfor job %s (%s)%s",
			    k < 0 ? "launcher" : "rank", ended ? "" : "yet ",
			    id, hp_job_state_name(j.state),
			    !ended || k < 0 ? ""
			    : rank_ran(&j, path)
				? ": the rank ran, but its log is gone"
				: ": it ended before the rank started; see "
				  "its launcher's log (--launcher)");
			goto out;
		}
		nf++;
	}
	if (all && !o.follow) {
		int open_logs = 0;
		for (int i = 0; i < nf; i++)
			open_logs += fds[i] >= 0;
		if (!open_logs) {
			status = cli_error(
			    EXIT_USAGE,
			    "logs: no rank log %sfor job %s (%s): the log of "
			    "none of its %d rank%s is there",
			    hp_job_state_terminal(j.state) ? "" : "yet ", id,
			    hp_job_state_name(j.state), j.nranks,
			    j.nranks == 1 ? "" : "s");
			goto out;
		}
	}
	for (;;) {
		bool ended;
		for (int i = 0; i < nf; i++) {
			if (fds[i] < 0) {
				int k = first + i;
				hp_deploy_log_path(d, id, k, path, sizeof(path),
						   NULL);
				fds[i] = open(path, O_RDONLY | O_CLOEXEC);
				if (fds[i] < 0)
					continue;
			}
			if (all && !o.follow)
				printf("==> rank %d <==\n", first + i);
			if (!pump(fds[i], &offs[i], tty)) {
				status = EXIT_FAIL;
				goto out;
			}
		}
		fflush(stdout);
		if (!o.follow)
			break;
		hp_job_release(&j);
		if (hp_deploy_status(d, id, true, &j, &err)) {
			status = cli_error(EXIT_FAIL, "logs: %s", err.msg);
			goto out;
		}
		ended = hp_job_state_terminal(j.state);
		if (ended) {
			/* what was written before the end */
			for (int i = 0; i < nf; i++)
				if (fds[i] >= 0 && !pump(fds[i], &offs[i], tty))
					status = EXIT_FAIL;
			break;
		}
		{
			/* each look may ask the backend (squeue, kubectl) */
			struct timespec ts = {0, 500000000};
			nanosleep(&ts, NULL);
		}
	}
out:
	for (int i = 0; i < nf; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	hp_job_release(&j);
	hp_deploy_free(d);
	return status;
}

/* ---- the job's own steps */

static volatile sig_atomic_t stop_flag;

static void on_term(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static void catch_term(void)
{
	struct sigaction sa = {0};

	sa.sa_handler = on_term;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
}

/* `_supervise JOBDIR`: fork the supervisor, exit once it is recorded. */
static int supervise(const char *jobdir)
{
	struct hp_error err = {0};
	int p[2];
	pid_t pid;
	struct pollfd pf;
	char c;

	if (pipe(p))
		return cli_error(EXIT_FAIL, "_supervise: pipe: %s",
				 strerror(errno));
	pid = fork();
	if (pid < 0)
		return cli_error(EXIT_FAIL, "_supervise: fork: %s",
				 strerror(errno));
	if (pid == 0) {
		close(p[0]);
		catch_term();
		if (hp_deploy_supervise(jobdir, p[1], &stop_flag, &err)) {
			cli_error(EXIT_FAIL, "_supervise: %s", err.msg);
			_exit(EXIT_FAIL);
		}
		fflush(stdout);
		_exit(EXIT_OK);
	}
	close(p[1]);
	pf.fd = p[0];
	pf.events = POLLIN;
	if (poll(&pf, 1, 60000) == 1 && read(p[0], &c, 1) == 1)
		return EXIT_OK;
	return cli_error(EXIT_FAIL, "_supervise: the supervisor did not record "
				    "itself");
}

/* `_rank JOBDIR`: become the trainer of this rank. */
static int rank_exec(const char *jobdir)
{
	struct hp_rank_exec x;
	struct hp_error err = {0};
	int fd;

	if (hp_deploy_rank_prepare(jobdir, &x, &err))
		return cli_error(cli_status_for(err.code), "_rank: %s",
				 err.msg);
	fd = open(x.log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0) {
		cli_error(EXIT_FAIL, "_rank: cannot open '%s': %s", x.log,
			  strerror(errno));
		hp_rank_exec_release(&x);
		return EXIT_FAIL;
	}
	fflush(stdout);
	fflush(stderr);
	dup2(fd, 1);
	dup2(fd, 2);
	close(fd);
	if (x.ncpus) {
		cpu_set_t set;
		CPU_ZERO(&set);
		for (int i = 0; i < x.ncpus; i++)
			if (x.cpus[i] >= 0 && x.cpus[i] < CPU_SETSIZE)
				CPU_SET(x.cpus[i], &set);
		if (sched_setaffinity(0, sizeof(set), &set))
			fprintf(stderr,
				"hetpool: warning: rank %d: cannot pin to its "
				"CPUs: %s\n",
				x.rank, strerror(errno));
	}
	for (char **e = x.env; e && *e; e++) {
		char *eq = strchr(*e, '=');
		*eq = '\0';
		setenv(*e, eq + 1, 1);
		*eq = '=';
	}
	fprintf(stderr, "hetpool: rank %d: starting %s\n", x.rank, x.argv[0]);
	fflush(stderr);
	execvp(x.argv[0], x.argv);
	fprintf(stderr, "hetpool: rank %d: cannot run '%s': %s\n", x.rank,
		x.argv[0], strerror(errno));
	hp_rank_exec_release(&x);
	return 127;
}

const struct cli_cmd cli_cmd_jobs = {
    .name = "jobs", .run = cmd_jobs, .help = jobs_help, .opts = jobs_opts};
const struct cli_cmd cli_cmd_status = {.name = "status",
				       .run = cmd_status,
				       .help = status_help,
				       .opts = status_opts};
const struct cli_cmd cli_cmd_logs = {
    .name = "logs", .run = cmd_logs, .help = logs_help, .opts = logs_opts};
const struct cli_cmd cli_cmd_cancel = {.name = "cancel",
				       .run = cmd_cancel,
				       .help = cancel_help,
				       .opts = status_opts};
const struct cli_cmd cli_cmd_remove = {.name = "remove",
				       .run = cmd_remove,
				       .help = remove_help,
				       .opts = status_opts};

int cmd_helper(int argc, char **argv)
{
	struct hp_error err = {0};
	const char *cmd = argv[0];

	if (!strcmp(cmd, "_supervise") && argc == 2)
		return supervise(argv[1]);
	if (!strcmp(cmd, "_rank") && argc == 2)
		return rank_exec(argv[1]);
	if (!strcmp(cmd, "_stage") && argc == 3) {
		/* a cancel (mpirun and srun pass SIGTERM on) stops the copy
		 * and removes its temporary */
		catch_term();
		if (hp_deploy_stage_stoppable(argv[1], argv[2], &stop_flag,
					      &err))
			return cli_error(err.code == HP_ECANCELED
					     ? EXIT_FAIL
					     : cli_status_for(err.code),
					 "_stage: %s", err.msg);
		return EXIT_OK;
	}
	if (!strcmp(cmd, "_slurm-batch") && argc == 2) {
		int code = 1;
		catch_term();
		if (hp_deploy_slurm_batch(argv[1], &stop_flag, &code, &err))
			return cli_error(EXIT_FAIL, "_slurm-batch: %s",
					 err.msg);
		return code;
	}
	if (!strcmp(cmd, "_wait-hosts") && argc == 3) {
		double s;
		if (hp_parse_double(argv[2], &s) || s <= 0)
			return cli_error(EXIT_USAGE,
					 "_wait-hosts: '%s' is not seconds",
					 argv[2]);
		if (hp_deploy_wait_hosts(argv[1], s, &err))
			return cli_error(EXIT_FAIL, "_wait-hosts: %s", err.msg);
		return EXIT_OK;
	}
	return cli_error(EXIT_USAGE,
			 "%s: a step of a job, run by its launcher (wrong "
			 "arguments)",
			 cmd);
}
