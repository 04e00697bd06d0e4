/*
 * main.c - the hetpool command: dispatch to subcommands, install the
 * library's log sink (stderr), map errors to exit statuses, and make sure
 * what was printed reached its destination.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "opt.h"
#include "remote.h"

static const char usage[] =
    "usage: hetpool <command> [options]\n"
    "\n"
    "Pool a data centre's mixed CPU and GPU servers for deep-learning "
    "training.\n"
    "\n"
    "commands:\n"
    "  analyze MODEL     quantify a model (ONNX or hetpool JSON spec): "
    "params,\n"
    "                    MACs, FLOPs, training memory, layer kinds\n"
    "  profile           measure customized CNNs' training steps on a "
    "device into\n"
    "                    a dataset (one configuration, or a sweep)\n"
    "  devices [NAME...] list the device catalog: GPU types and this "
    "host, with\n"
    "                    peak throughput, memory, bandwidth and power\n"
    "  fit DATASET...    fit the estimator of step time, memory and "
    "energy\n"
    "  predict MODEL     predict a training step on a device type "
    "(time with\n"
    "                    its interval, throughput, memory, energy)\n"
    "  validate          cross-validate the estimator against the "
    "roofline\n"
    "  recommend MODEL   the least-energy configuration of a pool's free "
    "devices\n"
    "                    that meets a deadline, and how to run it there\n"
    "  run PLAN|MODEL    launch a training job (local, mpi, slurm, "
    "kubernetes)\n"
    "  jobs              list the jobs and their states\n"
    "  status ID         a job's state, results and devices\n"
    "  logs ID           a job's logs, per rank\n"
    "  cancel ID         stop a job\n"
    "  remove ID         remove an ended job and its folder\n"
    "  lr-find           learning-rate range test: train with a rising "
    "rate, report\n"
    "                    a good interval and a suggested rate, plot it\n"
    "  host              this host as a device type: cores, ISA, caches, "
    "measured\n"
    "                    peaks (--measure) and calibration\n"
    "  calibrate         profile a few configurations here and fit this "
    "host's\n"
    "                    corrections (at most 3 minutes)\n"
    "  help [COMMAND]    show help for a command\n"
    "\n"
    "  --server URL COMMAND ...\n"
    "                    ask a hetpoold instead (recommend, run, jobs, "
    "status,\n"
    "                    cancel, remove, logs; token in HETPOOL_TOKEN): "
    "see "
    "'hetpool\n"
    "                    --server URL --help'\n"
    "  --version         print hetpool's version\n"
    "\n"
    "Run 'hetpool COMMAND --help' for a command's options.\n";

/* One line on stderr: names that came from files may hold control
 * characters, escaped here so the line stays one line. */
static void print_line(const char *prefix, const char *msg)
{
	char esc[4096];

	fprintf(stderr, "hetpool: %s%s\n", prefix,
		hp_str_escape(msg, esc, sizeof(esc)));
}

int cli_error(int status, const char *fmt, ...)
{
	char msg[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	print_line("", msg);
	return status;
}

const char *cli_esc(const char *s, char *buf, size_t n)
{
	return hp_str_escape(s, buf, n);
}

int cli_status_for(int code)
{
	switch (code) {
	case HP_ENOMEM:
	case HP_EIO:
	case HP_EINTERNAL:
	case HP_EDEVICE:
		return EXIT_FAIL;
	default:
		return EXIT_USAGE;
	}
}

bool cli_plain_number(const char *s)
{
	const char *p = s;

	if (*p == '-')
		p++;
	if (!((*p >= '0' && *p <= '9') ||
	      (*p == '.' && p[1] >= '0' && p[1] <= '9')))
		return false;
	for (; *p; p++)
		if (!((*p >= '0' && *p <= '9') || *p == '.' || *p == 'e' ||
		      *p == 'E' ||
		      ((*p == '-' || *p == '+') && p > s &&
		       (p[-1] == 'e' || p[-1] == 'E'))))
			return false;
	return true;
}

int cli_parse_dims(const char *s, int64_t *dims, int max)
{
	int n = 0;
	const char *p = s;

	while (*p) {
		char part[32];
		size_t len = strcspn(p, "x,");
		if (len == 0 || len >= sizeof(part) || n >= max)
			return -1;
		memcpy(part, p, len);
		part[len] = '\0';
		if (!cli_plain_number(part) ||
		    hp_parse_i64(part, 1, (int64_t)1 << 30, &dims[n]))
			return -1;
		n++;
		p += len;
		if (*p) {
			p++;
			if (!*p)
				return -1;
		}
	}
	return n > 0 ? n : -1;
}

const char *cli_bytes(int64_t b, char *buf, int len)
{
	static const char *const u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
	double v = (double)b;
	int i = 0;

	while (v >= 1024 && i < 5) {
		v /= 1024;
		i++;
	}
	snprintf(buf, (size_t)len, i ? "%.1f %s" : "%.0f %s", v, u[i]);
	return buf;
}

const char *cli_si(double v, char *buf, int len)
{
	static const char *const u[] = {"", "K", "M", "G", "T", "P", "E"};
	int i = 0;

	while (v >= 1000 && i < 6) {
		v /= 1000;
		i++;
	}
	snprintf(buf, (size_t)len, i ? "%.2f %s" : "%.0f%s", v, u[i]);
	return buf;
}

static void log_stderr(enum hp_log_level level, const char *msg, void *ud)
{
	char prefix[32];

	(void)ud;
	snprintf(prefix, sizeof(prefix), "%s: ", hp_log_level_name(level));
	print_line(prefix, msg);
}

/*
 * What a command printed is only written when stdout is flushed and
 * closed: a full disk or a closed pipe shows up here, not at printf.  A
 * command that succeeded but whose output was lost fails.
 */
static int finish_output(int status)
{
	int failed = fflush(stdout) != 0 || ferror(stdout);
	int e = errno;

	if (fclose(stdout) != 0 && !failed) {
		failed = 1;
		e = errno;
	}
	if (failed) {
		cli_error(EXIT_FAIL, "cannot write the output: %s",
			  e ? strerror(e) : "write error");
		if (status == EXIT_OK)
			status = EXIT_FAIL;
	}
	return status;
}

int cli_data_path(const char *name, char *buf, size_t n)
{
	return hp_data_path(name, buf, n) ? -1 : 0;
}

static int check_help(int argc, char **argv);

/* The job's own steps, run by its launchers, and the help check: not for
 * people, so neither listed nor with help. */
#define HIDDEN(n, fn)                                                          \
	{                                                                      \
		.name = (n), .run = (fn), .help = "", .hidden = true           \
	}
static const struct cli_cmd helper_cmds[] = {
    HIDDEN("_supervise", cmd_helper),  HIDDEN("_rank", cmd_helper),
    HIDDEN("_stage", cmd_helper),      HIDDEN("_slurm-batch", cmd_helper),
    HIDDEN("_wait-hosts", cmd_helper), HIDDEN("_check-help", check_help),
};

/* Every command, in the order of the usage. */
/* clang-format off */
const struct cli_cmd *const cli_cmds[] = {
    &cli_cmd_analyze, &cli_cmd_profile,	 &cli_cmd_devices,   &cli_cmd_fit,
    &cli_cmd_predict, &cli_cmd_validate, &cli_cmd_recommend, &cli_cmd_run,
    &cli_cmd_jobs,    &cli_cmd_status,	 &cli_cmd_logs,	     &cli_cmd_cancel, &cli_cmd_remove,
    &cli_cmd_lr_find, &helper_cmds[0],	 &helper_cmds[1],    &helper_cmds[2],
    &helper_cmds[3],  &helper_cmds[4],	 &helper_cmds[5],
    &cli_cmd_host,    &cli_cmd_calibrate, NULL,
};
/* clang-format on */

/* `hetpool _check-help`: each command's help names its options, the
 * usage names each command (tests/cli/options.sh). */
static int check_help(int argc, char **argv)
{
	int bad;

	(void)argc;
	(void)argv;
	bad = cli_check_help(usage);
	for (int i = 0; cli_remote_cmds[i]; i++)
		bad += cli_check_cmd_help(cli_remote_cmds[i], cli_remote_usage);
	if (bad)
		return cli_error(EXIT_FAIL,
				 "%d mismatches between the help texts and "
				 "the option tables",
				 bad);
	printf("help texts and option tables agree\n");
	return EXIT_OK;
}

static int dispatch(const char *name, int argc, char **argv)
{
	const struct cli_cmd *c = cli_cmd_find(name);

	if (!c)
		return cli_error(EXIT_USAGE,
				 "'%s' is not a command; see 'hetpool --help'",
				 name);
	return c->run(argc, argv);
}

/*
 * The library reads HETPOOL_THREADS where it is set and a thread count
 * (1..4096), and passes over any other value: a typo there would make
 * every prediction at the CPUs' count, silently.  Said once, here.
 */
static int check_env(void)
{
	const char *v = getenv("HETPOOL_THREADS");
	int64_t n;
	char esc[64];

	if (v && *v && hp_parse_i64(v, 1, 4096, &n)) {
		cli_error(EXIT_USAGE,
			  "HETPOOL_THREADS='%s' is not a thread count in "
			  "1..4096; set one, or unset it for the CPUs this "
			  "process may run on",
			  cli_esc(v, esc, sizeof(esc)));
		return -1;
	}
	return 0;
}

static int run(int argc, char **argv)
{
	char *help_args[3] = {NULL, "--help", NULL};
	const char *cmd;

	if (argc < 2) {
		fputs(usage, stderr);
		return EXIT_USAGE;
	}
	cmd = argv[1];
	if (!strcmp(cmd, "--server") || !strncmp(cmd, "--server=", 9)) {
		/* hetpool --server URL COMMAND ...: a hetpoold answers */
		bool eq = cmd[8] == '=';
		if (!eq && argc < 3)
			return cli_error(EXIT_USAGE,
					 "--server needs a URL; see "
					 "'hetpool --help'");
		return cli_remote(eq ? cmd + 9 : argv[2], argc - (eq ? 2 : 3),
				  argv + (eq ? 2 : 3));
	}
	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
		fputs(usage, stdout);
		return EXIT_OK;
	}
	if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
		printf("hetpool %s\n", hp_version());
		return EXIT_OK;
	}
	if (!strcmp(cmd, "help")) {
		if (argc == 2) {
			fputs(usage, stdout);
			return EXIT_OK;
		}
		help_args[0] = argv[2];
		return dispatch(argv[2], 2, help_args);
	}
	if (check_env())
		return EXIT_USAGE;
	return dispatch(cmd, argc - 1, argv + 1);
}

int main(int argc, char **argv)
{
	hp_log_set(log_stderr, NULL,
		   getenv("HETPOOL_DEBUG") ? HP_LOG_DEBUG : HP_LOG_WARN);
	return finish_output(run(argc, argv));
}
