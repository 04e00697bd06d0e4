/*
 * cmd_lr_find.c - `hetpool lr-find`: the learning-rate range test.  Runs
 * hetpool-train with the rate rising exponentially (posix_spawn, an argv
 * array), shows its progress by following DIR/metrics.jsonl, then
 * analyses the steps (lib/lrfind) and writes DIR/lr-find.svg and
 * DIR/lr-find.json.  --from DIR analyses an earlier run instead.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
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
#include "hetpool/lrfind.h"
#include "hetpool/model.h"
#include "opt.h"

extern char **environ;

/* Largest metrics.jsonl read (a range test writes a few hundred lines). */
#define METRICS_MAX_BYTES ((size_t)256 << 20)
/* Most arguments passed through to the trainer after "--". */
#define MAX_PASS 64

static const char help[] =
    "usage: hetpool lr-find --model SPEC --out DIR [--data fashion-mnist]\n"
    "                       [--steps N] [--lr-min X --lr-max Y] [--batch "
    "B]\n"
    "                       [--seed S] [--threads N] [--trainer PATH] "
    "[--json]\n"
    "                       [analysis options] [-- TRAINER-ARGS...]\n"
    "       hetpool lr-find --from DIR [--out DIR2] [--json] [analysis "
    "options]\n"
    "\n"
    "Find a good learning rate with a range test: train for a bounded "
    "number of\n"
    "steps while the rate rises exponentially from --lr-min to --lr-max, "
    "stopping\n"
    "early when the loss diverges, then read the loss of every step, "
    "smooth it,\n"
    "fit a polynomial of log(lr) (degree by cross-validation) and a "
    "logarithmic\n"
    "curve over the descent, and report an interval of good rates and a "
    "suggested\n"
    "rate, each with how it was found (docs/lr-find.md).  Writes "
    "DIR/lr-find.svg\n"
    "(the plot) and DIR/lr-find.json; the trainer's own output goes to\n"
    "DIR/trainer.log, its steps to DIR/metrics.jsonl.  DIR's files of an "
    "earlier\n"
    "test are replaced.\n"
    "\n"
    "The interval runs from a decade below the fitted polynomial's minimum "
    "to that\n"
    "minimum; the suggestion is the knee, where the log fit of the descent "
    "meets\n"
    "the polynomial's floor.  Run the test with the model, batch and "
    "optimizer\n"
    "the training will use.\n"
    "\n"
    "  --model SPEC      the model to train: a hetpool model spec (JSON) or "
    "ONNX\n"
    "  --data D          fashion-mnist (default), synthetic, or a "
    "folder; passed\n"
    "                    to the trainer\n"
    "  --steps N         steps of the test (default 800: 133 a decade, "
    "slow enough\n"
    "                    for the network to settle at each rate; "
    "docs/lr-find.md)\n"
    "  --lr-min X        rate of the first step (default 1e-5)\n"
    "  --lr-max Y        rate of the last step (default 10)\n"
    "  --batch B         global batch (default 64)\n"
    "  --seed S          seed of the shuffle and the weights (default 1)\n"
    "  --threads N       CPU threads the trainer uses (default: its "
    "own)\n"
    "  --out DIR         the test's folder (made if missing)\n"
    "  --from DIR        analyse DIR/metrics.jsonl of an earlier run, "
    "train\n"
    "                    nothing; the plot and JSON go to DIR, or to "
    "--out\n"
    "  --trainer PATH    the hetpool-train to run (default: "
    "$HETPOOL_TRAIN, else\n"
    "                    $HETPOOL_TRAINER as run uses, else the one "
    "beside\n"
    "                    this hetpool)\n"
    "  --json            print the analysis as JSON instead of text\n"
    "  -- TRAINER-ARGS   everything after -- goes to hetpool-train as it "
    "is\n"
    "                    (e.g. -- --optimizer adam), but for the "
    "trainer\n"
    "                    options the test sets itself (the model, "
    "batch,\n"
    "                    steps, rates, seed, folder: exit 2)\n"
    "\n"
    "analysis options:\n"
    "  --smooth M        median (default): a centred running median, then "
    "mean;\n"
    "                    ewma: fastai's exponentially weighted mean "
    "(lags)\n"
    "  --window W        the median smoother's width in steps, odd "
    "(default:\n"
    "                    about 4% of the steps, 5 to 51)\n"
    "  --diverge F       the loss has diverged when its EWMA passes F "
    "times its\n"
    "                    lowest (default 4; the trainer stops there "
    "too)\n"
    "  --max-degree D    highest polynomial degree tried (1-10, default "
    "8)\n"
    "\n"
    "exit status: 0 a suggestion; 1 the trainer failed or is missing, or "
    "a file\n"
    "could not be written; 2 bad input (options, the model, a "
    "metrics.jsonl that\n"
    "does not parse or has a row the fit cannot use: a negative loss, an "
    "accuracy\n"
    "outside 0-1, a rate not above 0; a loss that never falls, steps "
    "that are\n"
    "not a range test's).\n"
    "\n"
    "examples:\n"
    "  hetpool lr-find --model cnn.json --data fashion-mnist --out "
    "runs/lr\n"
    "  hetpool lr-find --model cnn.json --steps 300 --lr-min 1e-6 --out "
    "runs/lr --json\n"
    "  hetpool lr-find --from runs/lr --smooth ewma --out runs/lr-ewma\n";

struct lr_find {
	const char *model, *data, *out, *from, *trainer;
	int64_t steps, batch, seed, threads;
	double lr_min, lr_max;
	struct hp_lrfind_options opt;
	int smooth; /* -1: not given */
	bool json;
	char **pass; /* after "--" */
	int npass;
};

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

/* dir/name into buf; false when it does not fit. */
static bool join(char *buf, size_t n, const char *dir, const char *name)
{
	return (size_t)snprintf(buf, n, "%s/%s", dir, name) < n;
}

static const struct cli_word smooth_words[] = {
    {"median", HP_LRFIND_SMOOTH_MEDIAN},
    {"ewma", HP_LRFIND_SMOOTH_EWMA},
    {NULL, 0},
};

/* The training options come first in the table (--from takes none). */
#define LA struct lr_find
static const struct cli_opt lr_find_opts[] = {
    CLI_OPT_STR("model", LA, model),
    CLI_OPT_STR("data", LA, data),
    CLI_OPT_INT("steps", LA, steps, 10, HP_LRFIND_MAX_POINTS),
    CLI_OPT_NUM("lr-min", LA, lr_min, 1e-12, 1e6),
    CLI_OPT_NUM("lr-max", LA, lr_max, 1e-12, 1e6),
    CLI_OPT_INT("batch", LA, batch, 1, 1 << 20),
    CLI_OPT_INT("seed", LA, seed, 0, INT64_MAX),
    CLI_OPT_INT("threads", LA, threads, 1, 4096),
    CLI_OPT_STR("out", LA, out),
    CLI_OPT_STR("from", LA, from),
    CLI_OPT_STR("trainer", LA, trainer),
    CLI_OPT_FLAG("json", LA, json),
    CLI_OPT_WORD("smooth", LA, smooth, smooth_words),
    CLI_OPT_INT("window", LA, opt.window, 1, 10001),
    CLI_OPT_NUM("diverge", LA, opt.diverge_factor, 1.01, 1e6),
    CLI_OPT_INT("max-degree", LA, opt.max_degree, 1, HP_LRFIND_MAX_DEGREE),
    CLI_OPT_END,
};
#undef LA
/* Bits of the training options: --model to --threads. */
#define TRAINING_OPTS ((uint64_t)0xff)

/*
 * The trainer options the range test gives itself: passed again after
 * '--' they would win (the trainer takes the last), and the test would
 * write into another folder (another run's, replaced by it), train
 * another model or batch than the plot says, or not ramp the rate.  NULL
 * when arg is none of them; else what to do instead, and *name the
 * option it names.
 */
static const char *owned_option(const char *arg, const char **name)
{
	static const struct {
		const char *name, *instead;
	} own[] = {
	    {"--out", "give it as 'hetpool lr-find --out DIR'"},
	    {"--model", "give it as 'hetpool lr-find --model SPEC'"},
	    {"--data", "give it as 'hetpool lr-find --data D'"},
	    {"--batch", "give it as 'hetpool lr-find --batch B'"},
	    {"--steps", "give it as 'hetpool lr-find --steps N'"},
	    {"--epochs", "the test's length is 'hetpool lr-find --steps N'"},
	    {"--seed", "give it as 'hetpool lr-find --seed S'"},
	    {"--threads", "give it as 'hetpool lr-find --threads N'"},
	    {"--lr", "the test's rates run from --lr-min to --lr-max"},
	    {"--lr-min", "give it as 'hetpool lr-find --lr-min X'"},
	    {"--lr-max", "give it as 'hetpool lr-find --lr-max Y'"},
	    {"--lr-schedule", "the range test's schedule is its ramp"},
	    {"--stop-on-divergence",
	     "give it as 'hetpool lr-find --diverge F'"},
	};
	/* the name before any '=': the trainer's getopt_long takes
	 * --name=value, and any abbreviation that names one option */
	size_t n = strcspn(arg, "=");

	if (n < 3 || strncmp(arg, "--", 2) != 0)
		return NULL;
	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
		if (n <= strlen(own[i].name) && !strncmp(arg, own[i].name, n)) {
			*name = own[i].name;
			return own[i].instead;
		}
	return NULL;
}

static int parse_args(int argc, char **argv, struct lr_find *a)
{
	uint64_t seen;
	int first, rc;

	a->data = "fashion-mnist";
	a->steps = HP_LRFIND_DEFAULT_STEPS;
	a->batch = 64;
	a->seed = 1;
	a->lr_min = 1e-5;
	a->lr_max = 10;
	a->smooth = -1;
	/* Options stop at the first argument, so that only "--" can start
	 * the trainer's arguments. */
	if ((rc = cli_parse_seen(&cli_cmd_lr_find, argc, argv, a, &first,
				 &seen)))
		return rc;
	if (a->smooth >= 0)
		a->opt.smoother = (enum hp_lrfind_smoother)a->smooth;
	if (a->opt.window && a->opt.window % 2 == 0)
		return cli_error(EXIT_USAGE,
				 "lr-find: --window %d: give an odd number of "
				 "steps",
				 a->opt.window);
	if (first < argc) {
		if (strcmp(argv[first - 1], "--") != 0)
			return cli_error(EXIT_USAGE,
					 "lr-find: unexpected argument '%s'; "
					 "trainer arguments go after '--'",
					 argv[first]);
		if (argc - first > MAX_PASS)
			return cli_error(EXIT_USAGE,
					 "lr-find: %d trainer arguments after "
					 "'--': at most %d",
					 argc - first, MAX_PASS);
		a->pass = argv + first;
		a->npass = argc - first;
		for (int i = 0; i < a->npass; i++) {
			const char *name = NULL,
				   *own = owned_option(a->pass[i], &name);
			if (own)
				return cli_error(
				    EXIT_USAGE,
				    "lr-find: '%.60s' after '--' is %s, an "
				    "option the range test sets itself: %s",
				    a->pass[i], name, own);
		}
	}
	if (a->from) {
		if ((seen & TRAINING_OPTS) || a->trainer || a->npass)
			return cli_error(
			    EXIT_USAGE,
			    "lr-find: --from analyses an earlier "
			    "run: it takes no training options "
			    "(--model, --data, --steps, --lr-*, "
			    "--batch, --seed, --threads, --trainer, "
			    "--)");
		return 0;
	}
	if (!a->model)
		return cli_error(EXIT_USAGE, "lr-find: give --model SPEC (or "
					     "--from DIR); see 'hetpool "
					     "lr-find --help'");
	if (!a->out)
		return cli_error(EXIT_USAGE, "lr-find: give --out DIR; see "
					     "'hetpool lr-find --help'");
	if (!(a->lr_max > a->lr_min))
		return cli_error(EXIT_USAGE,
				 "lr-find: --lr-max %g is not above --lr-min "
				 "%g",
				 a->lr_max, a->lr_min);
	if (strcmp(a->data, "fashion-mnist") && strcmp(a->data, "synthetic")) {
		struct stat st;
		if (stat(a->data, &st) || !S_ISDIR(st.st_mode))
			return cli_error(EXIT_USAGE,
					 "lr-find: --data '%s': give "
					 "fashion-mnist, synthetic or a folder",
					 a->data);
	}
	return 0;
}

/* The model must load before a trainer is started for it. */
static int check_model(const char *path)
{
	int status = EXIT_OK;
	struct hp_graph *g = cli_load_graph("lr-find", path, &status);

	hp_graph_free(g);
	return status;
}

/* The trainer: --trainer, $HETPOOL_TRAIN, $HETPOOL_TRAINER (the name
 * `hetpool run` and hetpoold read), or hetpool-train beside this
 * program. */
static int find_trainer(const char *given, char *buf, size_t n)
{
	const char *env = getenv("HETPOOL_TRAIN"), *name = "HETPOOL_TRAIN";
	char exe[4096];
	ssize_t len;
	char *slash;

	if (!env || !*env) {
		env = getenv("HETPOOL_TRAINER");
		name = "HETPOOL_TRAINER";
	}

	if (given || (env && *env)) {
		const char *p = given ? given : env;
		struct stat st;
		if (stat(p, &st) || !S_ISREG(st.st_mode) || access(p, X_OK))
			return cli_error(EXIT_USAGE,
					 "lr-find: trainer '%s' (%s) is not an "
					 "executable file",
					 p, given ? "--trainer" : name);
		snprintf(buf, n, "%s", p);
		return 0;
	}
	len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (len <= 0)
		return cli_error(EXIT_FAIL, "lr-find: cannot find this "
					    "program's folder; give --trainer "
					    "PATH");
	exe[len] = '\0';
	if ((slash = strrchr(exe, '/')))
		*slash = '\0';
	if (!join(buf, n, exe, "hetpool-train") || access(buf, X_OK))
		return cli_error(EXIT_FAIL,
				 "lr-find: no hetpool-train beside this "
				 "hetpool (in '%s'); build it, or give "
				 "--trainer PATH or set HETPOOL_TRAIN",
				 exe);
	return 0;
}

/* --out made (mkdir -p) and a folder; bad input, exit 2, when it cannot
 * be. */
static int out_folder(const char *path)
{
	struct stat st;

	if (!*path)
		return cli_error(EXIT_USAGE, "lr-find: --out is empty");
	if (hp_mkdirs(path, 0777, NULL))
		return cli_error(EXIT_USAGE,
				 "lr-find: cannot make --out '%s': %s", path,
				 strerror(errno));
	if (stat(path, &st) || !S_ISDIR(st.st_mode))
		return cli_error(EXIT_USAGE,
				 "lr-find: --out '%s' is not a folder", path);
	if (access(path, W_OK | X_OK))
		return cli_error(EXIT_USAGE,
				 "lr-find: --out '%s' is not writable: %s",
				 path, strerror(errno));
	return 0;
}

/* Following metrics.jsonl while the trainer writes it. */
struct tail {
	off_t off;
	int line;
	struct hp_lrfind_series s;
};

/* Index of the last '\n' in p[0..n), which holds one. */
static size_t last_newline(const char *p, size_t n)
{
	while (n > 0 && p[n - 1] != '\n')
		n--;
	return n - 1;
}

/* Read the complete lines added since the last call; bad lines are left
 * for the final read to report. */
static void tail_poll(struct tail *t, const char *path)
{
	char buf[1 << 16];
	struct hp_error err = {0};
	FILE *f = fopen(path, "r");
	size_t n, used;

	if (!f)
		return;
	while (fseeko(f, t->off, SEEK_SET) == 0 &&
	       (n = fread(buf, 1, sizeof(buf), f)) > 0) {
		const char *nl = memchr(buf, '\n', n);
		if (!nl) {
			if (n == sizeof(buf)) /* a huge line: skip it */
				t->off += (off_t)n;
			break;
		}
		if (hp_lrfind_parse_metrics(&t->s, buf, n, "metrics.jsonl",
					    t->line, HP_LRFIND_PARSE_PARTIAL,
					    &used, &err))
			used = last_newline(buf, n) + 1;
		for (size_t i = 0; i < used; i++)
			t->line += buf[i] == '\n';
		t->off += (off_t)used;
		if (used < sizeof(buf) / 2)
			break;
	}
	fclose(f);
}

static void progress(const struct tail *t, int64_t steps, double t0)
{
	const struct hp_lrfind_point *p;
	double elapsed = hp_now_s() - t0;
	char eta[32] = "--";
	int width = 24, fill;

	if (!t->s.n)
		return;
	p = &t->s.pts[t->s.n - 1];
	fill = (int)(width * (p->step < steps ? p->step : steps) / steps);
	if (p->step > 0 && p->step < steps)
		snprintf(eta, sizeof(eta), "%.0fs",
			 elapsed / (double)p->step * (double)(steps - p->step));
	fprintf(stderr, "\r[");
	for (int k = 0; k < width; k++)
		fputc(k < fill ? '=' : (k == fill ? '>' : ' '), stderr);
	fprintf(stderr, "] step %lld/%lld  lr %.3g  loss %.4g  ETA %s   ",
		(long long)p->step, (long long)steps, p->lr, p->loss, eta);
	fflush(stderr);
}

/* The last line of the trainer's log (for the error message). */
static void last_line(const char *path, char *buf, size_t n)
{
	char *text = NULL, *end, *start;
	size_t len = 0;

	buf[0] = '\0';
	if (hp_read_file(path, 64 << 20, &text, &len, NULL))
		return;
	end = text + len;
	while (end > text && (end[-1] == '\n' || end[-1] == '\r'))
		end--;
	*end = '\0';
	for (start = end; start > text && start[-1] != '\n'; start--)
		;
	snprintf(buf, n, "%s", start);
	free(text);
}

/* In DIR: the folder is a range test's (lr-find made it), which a new
 * test may replace. */
#define LRF_MARKER ".lr-find"

/* Run the trainer; 0 when it ran to its end (its steps are in
 * DIR/metrics.jsonl), else the exit status to return. */
static int run_trainer(const struct lr_find *a, const char *trainer)
{
	char s_steps[32], s_batch[32], s_seed[32], s_threads[32], s_min[32],
	    s_max[32], s_div[32], log_path[4096], metrics[4096], msg[512];
	const char *argv[40 + MAX_PASS];
	posix_spawn_file_actions_t fa;
	struct sigaction sa = {0}, old_int, old_term;
	struct tail t = {0, 1, {0}};
	bool tty = isatty(STDERR_FILENO);
	double t0 = hp_now_s(), last_poll = 0;
	int argc = 0, st = 0, rc, status = EXIT_OK;
	bool resume = false, overwrite = false;
	char marker[4096], p[4096];
	pid_t pid;

	if (!join(log_path, sizeof(log_path), a->out, "trainer.log") ||
	    !join(metrics, sizeof(metrics), a->out, "metrics.jsonl"))
		return cli_error(EXIT_USAGE, "lr-find: --out '%s' is too long",
				 a->out);
	snprintf(s_steps, sizeof(s_steps), "%lld", (long long)a->steps);
	snprintf(s_batch, sizeof(s_batch), "%lld", (long long)a->batch);
	snprintf(s_seed, sizeof(s_seed), "%lld", (long long)a->seed);
	snprintf(s_threads, sizeof(s_threads), "%lld", (long long)a->threads);
	snprintf(s_min, sizeof(s_min), "%.17g", a->lr_min);
	snprintf(s_max, sizeof(s_max), "%.17g", a->lr_max);
	snprintf(s_div, sizeof(s_div), "%.17g",
		 a->opt.diverge_factor > 0 ? a->opt.diverge_factor : 4);
	argv[argc++] = trainer;
	argv[argc++] = "--model";
	argv[argc++] = a->model;
	argv[argc++] = "--data";
	argv[argc++] = a->data;
	argv[argc++] = "--batch";
	argv[argc++] = s_batch;
	argv[argc++] = "--steps";
	argv[argc++] = s_steps;
	argv[argc++] = "--lr-schedule";
	argv[argc++] = "exp-ramp";
	argv[argc++] = "--lr-min";
	argv[argc++] = s_min;
	argv[argc++] = "--lr-max";
	argv[argc++] = s_max;
	argv[argc++] = "--stop-on-divergence";
	argv[argc++] = s_div;
	argv[argc++] = "--seed";
	argv[argc++] = s_seed;
	if (a->threads) {
		argv[argc++] = "--threads";
		argv[argc++] = s_threads;
	}
	/* An earlier range test in DIR (its marker says so: only a range
	 * test writes it) is replaced; a training run's folder is not a
	 * range test's to replace, unless the trainer is told so after --.
	 * An lr-find.json does not make a folder a range test's: --from
	 * writes one into a training run's folder, which the next test
	 * then replaced, checkpoint and all. */
	for (int i = 0; i < a->npass; i++) {
		resume |= !strcmp(a->pass[i], "--resume");
		overwrite |= !strcmp(a->pass[i], "--overwrite");
	}
	if (!join(marker, sizeof(marker), a->out, LRF_MARKER))
		return cli_error(EXIT_USAGE, "lr-find: --out '%s' is too long",
				 a->out);
	if (access(marker, F_OK) == 0) {
		if (!resume && !overwrite)
			argv[argc++] = "--overwrite";
	} else if (!overwrite) {
		static const char *const run[] = {"checkpoint", "results.json",
						  "metrics.jsonl"};
		for (size_t i = 0; i < sizeof(run) / sizeof(run[0]); i++) {
			if (join(p, sizeof(p), a->out, run[i]) &&
			    access(p, F_OK) == 0)
				return cli_error(
				    EXIT_USAGE,
				    "lr-find: --out '%s' holds a training "
				    "run (%s), not a range test: give the "
				    "range test a folder of its own (or "
				    "'-- --overwrite' to replace the run)",
				    a->out, run[i]);
		}
	}
	{
		int fd = open(marker, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0)
			return cli_error(EXIT_FAIL,
					 "lr-find: cannot write '%s': %s",
					 marker, strerror(errno));
		close(fd);
	}
	argv[argc++] = "--out";
	argv[argc++] = a->out;
	for (int i = 0; i < a->npass; i++)
		argv[argc++] = a->pass[i];
	argv[argc] = NULL;

	/* An earlier test's steps and results must not be read as this
	 * one's (should this one fail, no old suggestion is left); a run
	 * resumed (-- --resume) goes on from its steps. */
	if (!resume)
		unlink(metrics);
	for (int i = 0; i < 2; i++)
		if (join(p, sizeof(p), a->out,
			 i ? "lr-find.svg" : "lr-find.json"))
			unlink(p);
	if (posix_spawn_file_actions_init(&fa))
		return cli_error(EXIT_FAIL, "lr-find: out of memory");
	posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null",
					 O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, log_path,
					 O_WRONLY | O_CREAT | O_TRUNC, 0644);
	posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	rc =
	    posix_spawn(&pid, trainer, &fa, NULL, (char *const *)argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc) {
		status = cli_error(EXIT_FAIL, "lr-find: cannot start '%s': %s",
				   trainer, strerror(rc));
		goto out;
	}
	for (;;) {
		pid_t w = waitpid(pid, &st, WNOHANG);
		struct timespec nap = {0, 100 * 1000 * 1000};

		if (w == pid)
			break;
		if (w < 0 && errno != EINTR) {
			status = cli_error(EXIT_FAIL,
					   "lr-find: waiting for the trainer: "
					   "%s",
					   strerror(errno));
			goto out;
		}
		if (stop_signal) {
			/* The trainer shares the terminal and got a Ctrl-C
			 * too; a TERM sent to hetpool alone is passed on. */
			kill(pid, SIGTERM);
			waitpid(pid, &st, 0);
			if (tty)
				fputc('\n', stderr);
			status = cli_error(EXIT_FAIL,
					   "lr-find: interrupted; the steps so "
					   "far are in %s",
					   metrics);
			goto out;
		}
		if (tty && hp_now_s() - last_poll > 0.5) {
			tail_poll(&t, metrics);
			progress(&t, a->steps, t0);
			last_poll = hp_now_s();
		}
		nanosleep(&nap, NULL);
	}
	if (tty) {
		tail_poll(&t, metrics);
		progress(&t, a->steps, t0);
		fputc('\n', stderr);
	}
	if (WIFSIGNALED(st)) {
		status = cli_error(EXIT_FAIL,
				   "lr-find: hetpool-train was killed by "
				   "signal %d; its log: %s",
				   WTERMSIG(st), log_path);
	} else if (WEXITSTATUS(st) != 0) {
		/* the trainer's bad input (the model, an option after --)
		 * is this command's */
		last_line(log_path, msg, sizeof(msg));
		status = cli_error(
		    WEXITSTATUS(st) == EXIT_USAGE ? EXIT_USAGE : EXIT_FAIL,
		    "lr-find: hetpool-train failed (exit %d): "
		    "%s; its log: %s",
		    WEXITSTATUS(st), msg[0] ? msg : "no output", log_path);
	}
out:
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	hp_lrfind_series_release(&t.s);
	return status;
}

static void print_pick(const char *label, const struct hp_lrfind_pick *p)
{
	printf("%-14s %-10.3g %s\n", label, p->lr, p->how);
}

static void print_text(const struct hp_lrfind_series *s,
		       const struct hp_lrfind_result *r, int64_t requested,
		       const char *svg, const char *json)
{
	const struct hp_lrfind_point *last = &s->pts[s->n - 1];

	printf("range test     %d steps, lr %.3g to %.3g", s->n, s->pts[0].lr,
	       last->lr);
	if (r->diverged_at >= 0)
		printf("; the loss diverged at step %lld (lr %.3g)",
		       (long long)s->pts[r->diverged_at].step,
		       s->pts[r->diverged_at].lr);
	else if (requested > 0 && s->n < requested)
		printf("; stopped early (%lld steps asked)",
		       (long long)requested);
	printf("\n");
	printf("smoothing      %s", hp_lrfind_smoother_name(r->smoother));
	if (r->smoother == HP_LRFIND_SMOOTH_MEDIAN)
		printf(" of %d steps, then mean", r->window);
	printf("; loss noise %.3g per step\n", r->noise);
	printf("polynomial     degree %d of log10(lr) (%d-fold CV), rmse "
	       "%.3g, over lr %.3g to %.3g\n",
	       r->poly.degree, r->poly.folds, r->poly.rmse,
	       s->pts[r->fit_start].lr, s->pts[r->fit_end - 1].lr);
	printf("log fit        loss = %.4g %s %.4g ln(lr) over lr %.3g to "
	       "%.3g (R^2 %.3f)\n",
	       r->logfit.a, r->logfit.b < 0 ? "-" : "+", fabs(r->logfit.b),
	       r->logfit.lr_lo, r->logfit.lr_hi, r->logfit.r2);
	printf("\n");
	printf("interval       %.3g to %.3g\n", r->low.lr, r->high.lr);
	printf("  low          %s\n", r->low.how);
	printf("  high         %s\n", r->high.how);
	printf("suggested lr   %.3g\n", r->suggested.lr);
	printf("  how          %s\n", r->suggested.how);
	if (isfinite(r->accuracy_at_suggested))
		printf("  accuracy     %.3g there (smoothed, during the "
		       "test)\n",
		       r->accuracy_at_suggested);
	printf("\ncandidates\n");
	print_pick("  steepest", &r->steepest);
	print_pick("  minimum/10", &r->min_div10);
	print_pick("  knee", &r->knee);
	for (int i = 0; i < r->nwarnings; i++)
		printf("warning: %s\n", r->warnings[i]);
	printf("\nplot: %s\njson: %s\n", svg, json);
}

/* Analyse dir/metrics.jsonl; write the plot and the JSON into out_dir. */
static int analyse(const struct lr_find *a, const char *dir,
		   const char *out_dir, int64_t requested)
{
	char metrics[4096], svg[4096], jpath[4096], title[512], esc[4096];
	struct hp_lrfind_series s;
	struct hp_lrfind_result r;
	struct hp_error err = {0}, aerr = {0};
	struct hp_lrfind_run run = {0};
	struct hp_buf b;
	char *text = NULL, *json = NULL;
	size_t len = 0;
	int status = EXIT_OK, arc, rc;

	hp_lrfind_series_init(&s);
	memset(&r, 0, sizeof(r));
	hp_buf_init(&b, 64 << 20);
	if (!join(metrics, sizeof(metrics), dir, "metrics.jsonl") ||
	    !join(svg, sizeof(svg), out_dir, "lr-find.svg") ||
	    !join(jpath, sizeof(jpath), out_dir, "lr-find.json")) {
		status =
		    cli_error(EXIT_USAGE, "lr-find: '%s' is too long", dir);
		goto out;
	}
	if ((rc =
		 hp_read_file(metrics, METRICS_MAX_BYTES, &text, &len, &err))) {
		status =
		    cli_error(a->from ? cli_status_for(rc) : EXIT_FAIL,
			      "lr-find: '%s': %s%s", metrics, err.msg,
			      a->from ? "" : " (the trainer wrote no steps)");
		goto out;
	}
	if ((rc = hp_lrfind_parse_metrics(&s, text, len, metrics, 1, 0, NULL,
					  &err))) {
		status = cli_error(cli_status_for(rc), "lr-find: %s", err.msg);
		goto out;
	}
	if (s.n == 0) {
		status = cli_error(a->from ? EXIT_USAGE : EXIT_FAIL,
				   "lr-find: %s holds no steps", metrics);
		goto out;
	}
	if (a->model) {
		const char *base = strrchr(a->model, '/');
		snprintf(title, sizeof(title),
			 "lr-find: %.400s, batch %lld, %d steps",
			 base ? base + 1 : a->model, (long long)a->batch, s.n);
	} else {
		snprintf(title, sizeof(title), "lr-find: %.400s", metrics);
	}
	run.title = title;
	run.steps_requested = requested;
	run.metrics = metrics;
	run.plot = svg;
	arc = hp_lrfind_analyse(&s, &a->opt, &r, &aerr);
	/* The plot is written even when the analysis fails: the raw loss
	 * shows why. */
	if (arc) {
		hp_lrfind_result_release(&r);
		memset(&r, 0, sizeof(r));
		r.diverged_at = -1;
	}
	if (hp_lrfind_svg(&s, &r, &run, &b, &err)) {
		status = cli_error(EXIT_FAIL, "lr-find: cannot write '%s': %s",
				   svg, err.msg);
		goto out;
	}
	/* replaced whole: a reader never sees half a file */
	if (hp_write_file_atomic(svg, hp_buf_str(&b), b.len, 0644, &err)) {
		status = cli_error(EXIT_FAIL, "lr-find: %s", err.msg);
		goto out;
	}
	if (arc) {
		/* the plot is this series' now: an earlier analysis's
		 * suggestion beside it would be read as this one's */
		bool stale = unlink(jpath) == 0;
		status = cli_error(cli_status_for(arc),
				   "lr-find: %s: %s (the plot: %s%s)", metrics,
				   aerr.msg, svg,
				   stale ? "; the earlier lr-find.json there "
					   "is removed"
					 : "");
		goto out;
	}
	if (!(json = hp_lrfind_result_json(&s, &r, &run))) {
		status = cli_error(EXIT_FAIL, "lr-find: out of memory");
		goto out;
	}
	hp_buf_reset(&b);
	if ((rc = hp_buf_printf(&b, "%s\n", json))) {
		status = cli_error(EXIT_FAIL, "lr-find: out of memory");
		goto out;
	}
	if (hp_write_file_atomic(jpath, hp_buf_str(&b), b.len, 0644, &err)) {
		status = cli_error(EXIT_FAIL, "lr-find: %s", err.msg);
		goto out;
	}
	if (a->json) {
		fputs(hp_buf_str(&b), stdout);
	} else {
		char jesc[4096];
		print_text(&s, &r, requested, cli_esc(svg, esc, sizeof(esc)),
			   cli_esc(jpath, jesc, sizeof(jesc)));
	}
out:
	free(text);
	free(json);
	hp_buf_release(&b);
	hp_lrfind_result_release(&r);
	hp_lrfind_series_release(&s);
	return status;
}

static int cmd_lr_find(int argc, char **argv)
{
	struct lr_find a = {0};
	char trainer[4096];
	int rc;

	if ((rc = parse_args(argc, argv, &a)))
		return rc < 0 ? EXIT_OK : rc;
	if (a.from) {
		struct stat st;
		if (stat(a.from, &st) || !S_ISDIR(st.st_mode))
			return cli_error(EXIT_USAGE,
					 "lr-find: --from '%s' is not a folder",
					 a.from);
		if (a.out && (rc = out_folder(a.out)))
			return rc;
		return analyse(&a, a.from, a.out ? a.out : a.from, 0);
	}
	if ((rc = check_model(a.model)) ||
	    (rc = find_trainer(a.trainer, trainer, sizeof(trainer))))
		return rc;
	if ((rc = out_folder(a.out)))
		return rc;
	if ((rc = run_trainer(&a, trainer)))
		return rc;
	return analyse(&a, a.out, a.out, a.steps);
}

const struct cli_cmd cli_cmd_lr_find = {
    .name = "lr-find",
    .run = cmd_lr_find,
    .help = help,
    .opts = lr_find_opts,
    .stop_at_arg = true,
    .foreign = "optimizer", /* the trainer's */
};
