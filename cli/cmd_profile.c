/*
 * cmd_profile.c - `hetpool profile`: measure one configuration or a whole
 * sweep of customized CNNs on a device into a dataset CSV, appended row by
 * row so that an interrupted sweep leaves a valid file and --resume goes
 * on where it stopped.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <libgen.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "hetpool/profile.h"
#include "opt.h"

static const char help[] =
    "usage: hetpool profile --spec SPEC.json --batch N [options]\n"
    "       hetpool profile MODEL.onnx --batch N [--input-shape CxHxW] "
    "[options]\n"
    "       hetpool profile --sweep SWEEP.json|default|wide|calibrate "
    "[options]\n"
    "\n"
    "Measure training steps of customized CNNs on a device and append one "
    "row per\n"
    "configuration to a dataset CSV (columns: docs/dataset.md).  Each "
    "configuration\n"
    "is warmed up, then stepped until its median step time is stable or "
    "the time\n"
    "budget is spent.  Energy is recorded where the device reports it "
    "(NVML on\n"
    "GPUs); on a CPU without counters it is left empty: not measured.\n"
    "\n"
    "  --spec FILE         one model spec (JSON) ...\n"
    "  MODEL               ... or an ONNX CNN (or a spec), run by the "
    "engine as the\n"
    "                      layers it names (its weights are not read)\n"
    "  --input-shape DIMS  the model input without the batch, e.g. "
    "3x64x64\n"
    "                      (default: the model's own)\n"
    "  --save-spec FILE    write the spec the engine runs (JSON; "
    "'hetpool predict'\n"
    "                      reads it)\n"
    "  --batch N           ... at this batch size\n"
    "  --sweep FILE        a sweep of ranges (see docs/profiler.md; a JSON "
    "list of\n"
    "                      sweeps is their union), or 'default'\n"
    "                      for the built-in CPU sweep (360 configurations),\n"
    "                      'wide' (500 drawn from every variable: kernels,\n"
    "                      strides, pooling, channels, batch norm, dropout,\n"
    "                      classes, groups, separable and residual convs)\n"
    "                      or 'calibrate' (30 quick ones)\n"
    "  --device DEV        cpu (default) or cuda:K\n"
    "  --out FILE          the dataset CSV (default: profile.csv)\n"
    "  --resume            continue a dataset: skip configurations it "
    "holds\n"
    "  --threads N         CPU threads (default: all cores)\n"
    "  --optimizer OPT     sgd (momentum, default) or adam\n"
    "  --max-seconds S     timed stepping per configuration (default 4)\n"
    "  --max-pressure F    measure a configuration again when its threads\n"
    "                      waited for a CPU (other work on the host) more\n"
    "                      than this share of the time (default 0.05)\n"
    "  --retries N         ... at most N more times (default 3, 0: never)\n"
    "  --limit N           profile at most N configurations of the sweep\n"
    "  --repeat N          measure each configuration N times (default 1),\n"
    "                      in N rounds over the sweep; rows keep their\n"
    "                      config_id, and 'hetpool validate' reads the\n"
    "                      noise floor from them\n"
    "  --list              print the sweep's configurations and stop\n"
    "  --json              print a JSON summary on stdout\n"
    "\n"
    "A progress bar with ETA shows on a terminal.  Ctrl-C stops after "
    "the\n"
    "configuration being measured is abandoned; the file stays valid.\n"
    "\n"
    "examples:\n"
    "  hetpool profile --spec cnn.json --batch 32 --out cnn.csv\n"
    "  hetpool profile resnet18.train.onnx --batch 16 --input-shape "
    "3x64x64\n"
    "  hetpool profile --sweep default --out data/profiles/cpu.csv\n"
    "  hetpool profile --sweep default --out data/profiles/cpu.csv "
    "--resume\n"
    "  hetpool profile --sweep calibrate --repeat 3 --out noise.csv\n";

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

struct done_set {
	char (*ids)[96];
	int n, cap;
	const char *device;
	const char *optimizer;
};

static int collect_done(const struct hp_profile_row *r, int line, void *ud,
			struct hp_error *err)
{
	(void)line;
	(void)err;
	struct done_set *d = ud;

	if (strcmp(r->device, d->device) || strcmp(r->optimizer, d->optimizer))
		return 0;
	if (d->n == d->cap) {
		int nc = d->cap ? d->cap * 2 : 256;
		void *p = realloc(d->ids, (size_t)nc * sizeof(*d->ids));
		if (!p)
			return HP_ENOMEM;
		d->ids = p;
		d->cap = nc;
	}
	memcpy(d->ids[d->n++], r->config_id, sizeof(d->ids[0]));
	return 0;
}

/* How many rows the dataset holds for id (rounds of --repeat done). */
static int done_count(const struct done_set *d, const char *id)
{
	int k = 0;

	for (int i = 0; i < d->n; i++)
		k += !strcmp(d->ids[i], id);
	return k;
}

/* Write all of buf with one write() where the kernel allows, then fsync:
 * a kill leaves at worst a torn last line, which --resume cuts. */
static int append_line(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t w = write(fd, buf, len);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		buf += w;
		len -= (size_t)w;
	}
	return fsync(fd);
}

static void fmt_eta(double s, char *buf, size_t n)
{
	if (s < 0 || !isfinite(s))
		snprintf(buf, n, "--");
	else if (s >= 3600)
		snprintf(buf, n, "%dh%02dm", (int)(s / 3600),
			 (int)(s / 60) % 60);
	else
		snprintf(buf, n, "%dm%02ds", (int)(s / 60), (int)s % 60);
}

static void progress(int i, int n, const char *id, double elapsed, bool tty)
{
	char eta[32], esc[256];
	int width = 28, fill;

	if (!tty)
		return;
	fill = n ? width * i / n : width;
	fmt_eta(i ? elapsed / i * (n - i) : -1, eta, sizeof(eta));
	fprintf(stderr, "\r[");
	for (int k = 0; k < width; k++)
		fputc(k < fill ? '=' : (k == fill ? '>' : ' '), stderr);
	fprintf(stderr, "] %d/%d ETA %s  %-40.40s", i, n, eta,
		cli_esc(id, esc, sizeof(esc)));
	fflush(stderr);
}

static char *dir_of(const char *path)
{
	char *copy = strdup(path), *d;

	if (!copy)
		return NULL;
	d = strdup(dirname(copy));
	free(copy);
	return d;
}

/* Whether the dataset at path starts with the header this build writes
 * (rows appended to a file with other columns would not line up). */
static bool same_header(const char *path)
{
	const char *h = hp_dataset_header();
	size_t n = strlen(h);
	char *line = malloc(n + 2);
	FILE *f = fopen(path, "r");
	bool same = false;

	if (line && f && fread(line, 1, n + 1, f) == n + 1)
		same =
		    !memcmp(line, h, n) && (line[n] == '\n' || line[n] == '\r');
	if (f)
		fclose(f);
	free(line);
	return same;
}

/* A new dataset at path, created when its first row is ready (a profile
 * that fails leaves no file behind), with the header; 0 and *fd, or the
 * exit status after one error line. */
static int create_dataset(const char *path, int *fd)
{
	const char *h = hp_dataset_header();
	size_t n = strlen(h);
	char *text = malloc(n + 1);

	if (!text)
		return cli_error(EXIT_FAIL, "out of memory");
	memcpy(text, h, n);
	text[n] = '\n';
	*fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_EXCL, 0644);
	if (*fd < 0 || append_line(*fd, text, n + 1)) {
		int e = errno;
		free(text);
		if (*fd >= 0) {
			close(*fd);
			*fd = -1;
			unlink(path);
		}
		return cli_error(EXIT_FAIL, "cannot write '%s': %s", path,
				 strerror(e));
	}
	free(text);
	return 0;
}

/* The last byte of the file at fd, or -1 (empty, unreadable). */
static int last_byte(int fd)
{
	unsigned char c;
	off_t end = lseek(fd, 0, SEEK_END);

	if (end <= 0 || pread(fd, &c, 1, end - 1) != 1)
		return -1;
	return c;
}

/*
 * Get the dataset at out ready for appending: a new one is checked for a
 * place to go now and created with the first row (*fd stays -1); an
 * existing one must be resumed, is read for what it holds (into done),
 * has a torn last row cut and a missing final newline added, and is
 * opened into *fd.  0, or the exit status after one error line.
 */
static int open_dataset(const char *out, bool resume, struct done_set *done,
			int *fd)
{
	struct hp_error err = {0};
	int64_t torn = 0;
	struct stat st;

	*fd = -1;
	if (stat(out, &st) != 0) {
		char *dir;
		int status = 0;
		if (errno != ENOENT)
			return cli_error(EXIT_USAGE, "--out '%s': %s", out,
					 strerror(errno));
		if (!(dir = dir_of(out)))
			return cli_error(EXIT_FAIL, "out of memory");
		if (access(dir, W_OK | X_OK) != 0)
			status = cli_error(EXIT_USAGE,
					   "--out '%s': cannot create a file "
					   "in '%s': %s",
					   out, dir, strerror(errno));
		free(dir);
		return status;
	}
	if (S_ISDIR(st.st_mode))
		return cli_error(EXIT_USAGE,
				 "--out '%s' is a directory: give a file "
				 "name, such as '%s/profile.csv'",
				 out, out);
	if (!resume)
		return cli_error(EXIT_USAGE,
				 "'%s' exists: add --resume to continue "
				 "it, or choose another --out",
				 out);
	if (st.st_size > 0) {
		if (!same_header(out))
			return cli_error(EXIT_USAGE,
					 "'%s' has other columns than this "
					 "hetpool writes (an older "
					 "version's?): choose another --out",
					 out);
		if (hp_dataset_read(out, collect_done, done, &torn, &err))
			return cli_error(cli_status_for(err.code), "'%s': %s",
					 out, err.msg);
		if (torn > 0) {
			if (truncate(out, st.st_size - torn) != 0)
				return cli_error(EXIT_FAIL,
						 "'%s': cannot cut the torn "
						 "last row: %s",
						 out, strerror(errno));
			cli_error(EXIT_OK,
				  "'%s': cut a torn last row (%lld bytes) "
				  "left by an interrupted run",
				  out, (long long)torn);
		}
	}
	*fd = open(out, O_RDWR | O_APPEND);
	if (*fd < 0)
		return cli_error(EXIT_USAGE, "cannot open '%s': %s", out,
				 strerror(errno));
	if (last_byte(*fd) == -1 && st.st_size == 0) {
		/* an empty file: the header goes first */
		const char *h = hp_dataset_header();
		if (append_line(*fd, h, strlen(h)) || append_line(*fd, "\n", 1))
			return cli_error(EXIT_FAIL, "cannot write '%s': %s",
					 out, strerror(errno));
	} else if (last_byte(*fd) != '\n') {
		/* a complete last row without its newline: add it */
		if (append_line(*fd, "\n", 1))
			return cli_error(EXIT_FAIL, "cannot write '%s': %s",
					 out, strerror(errno));
	}
	return 0;
}

/* This host's figures at the threads the profile runs on, for the rows'
 * host_* columns (a fit made elsewhere then knows the host the times
 * belong to): the ISA peak estimate, and the measured peaks when its host
 * file has them ('hetpool host --measure'); NaN what is not known. */
struct host_figs {
	double isa_gflops, sgemm_gflops, triad_gbs, cache_bytes;
};

static void host_figures(int threads, struct host_figs *f)
{
	struct hp_error err = {0};
	struct hp_host h;
	struct hp_host_file hf;
	char path[4200];
	double v;

	f->isa_gflops = f->sgemm_gflops = f->triad_gbs = f->cache_bytes = NAN;
	if (hp_host_detect(&h, &err))
		return;
	h.threads = threads > 0 ? threads : 0;
	h.threads = hp_host_threads(&h);
	v = hp_host_fp32_est(&h);
	if (v > 0)
		f->isa_gflops = v / 1e9;
	v = (double)h.l2_bytes + (double)h.l3_bytes;
	if (v > 0)
		f->cache_bytes = v;
	if (hp_host_file_path(NULL, &h, path, sizeof(path), &err) ||
	    hp_host_file_load(path, &hf, &err))
		return;
	if (hf.peaks.when[0] && hf.peaks.threads == h.threads &&
	    hf.peaks.fp32_flops > 0 && hf.peaks.triad_bw > 0) {
		f->sgemm_gflops = hf.peaks.fp32_flops / 1e9;
		f->triad_gbs = hf.peaks.triad_bw / 1e9;
	}
}

struct profile_args {
	const char *spec, *sweep, *out;
	struct cli_dims shape; /* --input-shape, with a model */
	const char *save_spec; /* --save-spec: the model's spec, as run */
	int64_t batch, limit, repeat;
	struct hp_profile_opts po;
	int optimizer;
	bool resume, list, json;
};

static const struct cli_word optimizer_words[] = {
    {"sgd", HP_OPT_SGD},
    {"adam", HP_OPT_ADAM},
    {NULL, 0},
};

#define PA struct profile_args
static const struct cli_opt profile_opts[] = {
    CLI_OPT_STR("spec", PA, spec),
    CLI_OPT_DIMS("input-shape", PA, shape),
    CLI_OPT_STR("save-spec", PA, save_spec),
    CLI_OPT_INT("batch", PA, batch, 1, 1 << 20),
    CLI_OPT_STR("sweep", PA, sweep),
    CLI_OPT_STR("device", PA, po.device),
    CLI_OPT_STR("out", PA, out),
    CLI_OPT_FLAG("resume", PA, resume),
    CLI_OPT_INT("threads", PA, po.threads, 1, 4096),
    CLI_OPT_WORD("optimizer", PA, optimizer, optimizer_words),
    CLI_OPT_NUM_ABOVE("max-seconds", PA, po.max_seconds, 0, 3600),
    CLI_OPT_INT("limit", PA, limit, 1, 1 << 30),
    CLI_OPT_INT("repeat", PA, repeat, 1, 1000),
    CLI_OPT_NUM("max-pressure", PA, po.max_pressure, 0, 1),
    CLI_OPT_INT("retries", PA, po.retries, 0, 100),
    CLI_OPT_FLAG("list", PA, list),
    CLI_OPT_FLAG("json", PA, json),
    CLI_OPT_END,
};
#undef PA

/*
 * The spec of a model file: a spec (JSON) as it is, an ONNX CNN converted
 * at the input shape (NULL: its own), named after the file.
 */
static int load_model_spec(const char *path, const struct cli_dims *shape,
			   struct hp_spec *s, struct hp_error *err)
{
	struct hp_graph *g;
	const char *base = strrchr(path, '/');
	char name[64];
	int rc;

	if (shape->rank && shape->rank != 3)
		return hp_error_set(err, HP_EINVAL,
				    "--input-shape must be CxHxW");
	{
		/* a spec is taken as it is, at --input-shape when given (as
		 * analyze and predict take it; until 3 December it was
		 * ignored here) */
		char *text;
		size_t len, i = 0;
		if (hp_read_file(path, 16u << 20, &text, &len, err) == 0) {
			while (i < len && strchr(" \t\r\n", text[i]))
				i++;
			if (i < len && text[i] == '{') {
				rc = hp_spec_parse_only(text, len, s, err);
				free(text);
				if (!rc && shape->rank == 3)
					for (int k = 0; k < 3; k++)
						s->input[k] = shape->d[k];
				return rc;
			}
			free(text);
		}
	}
	g = hp_model_load(path, err);
	if (!g)
		return err->code ? err->code : HP_EINVAL;
	rc = hp_spec_from_graph(g, shape->rank ? shape->d : NULL, true, s, err);
	hp_graph_free(g);
	if (rc)
		return rc;
	/* "resnet18.train.onnx" -> "resnet18" */
	snprintf(name, sizeof(name), "%s", base ? base + 1 : path);
	name[strcspn(name, ".")] = '\0';
	free(s->name);
	s->name = hp_strdup(name[0] ? name : "model");
	return s->name ? 0 : hp_error_set(err, HP_ENOMEM, "out of memory");
}

static int cmd_profile(int argc, char **argv)
{
	struct profile_args a = {
	    .out = "profile.csv", .optimizer = -1, .repeat = 1};
	const char *spec_path, *sweep_arg, *out, *model_path = NULL;
	int64_t batch, limit;
	bool resume, list, json;
	bool tty = isatty(STDERR_FILENO);
	struct hp_profile_opts po;
	struct hp_error err = {0};
	struct hp_sweep sw = {0};
	struct done_set done = {0};
	struct hp_profile_row *row = NULL;
	struct hp_buf line;
	struct host_figs hfig = {NAN, NAN, NAN, NAN};
	int c, rc = EXIT_OK, fd = -1, measured = 0, skipped = 0, failed = 0;
	double t0;

	hp_profile_opts_init(&a.po);
	if ((rc = cli_parse(&cli_cmd_profile, argc, argv, &a, &c)))
		return rc < 0 ? EXIT_OK : rc;
	po = a.po;
	if (a.optimizer >= 0)
		po.opt = (enum hp_optimizer)a.optimizer;
	spec_path = a.spec;
	sweep_arg = a.sweep;
	out = a.out;
	batch = a.batch;
	limit = a.limit;
	resume = a.resume;
	list = a.list;
	json = a.json;
	if (strcmp(po.device, "cpu") && strncmp(po.device, "cuda:", 5))
		return cli_error(EXIT_USAGE,
				 "profile: --device '%s': give cpu or cuda:K",
				 po.device);
	if (c < argc && !spec_path && !sweep_arg)
		model_path = argv[c++];
	if (c != argc)
		return cli_error(EXIT_USAGE,
				 "profile: unexpected argument '%s'", argv[c]);
	if (a.shape.rank && !model_path)
		return cli_error(EXIT_USAGE,
				 "profile: --input-shape goes with a MODEL "
				 "file");
	if (model_path) {
		if (!batch)
			return cli_error(EXIT_USAGE,
					 "profile: MODEL needs --batch N");
		sw.configs = calloc(1, sizeof(*sw.configs));
		if (!sw.configs)
			return cli_error(EXIT_FAIL, "out of memory");
		if (load_model_spec(model_path, &a.shape, &sw.configs[0].spec,
				    &err)) {
			free(sw.configs);
			return cli_error(cli_status_for(err.code), "'%s': %s",
					 model_path, err.msg);
		}
		sw.n = 1;
		/* what the conversion took otherwise than the file writes */
		for (int i = 0; i < sw.configs[0].spec.nnotes; i++) {
			char e[512];
			fprintf(
			    stderr, "hetpool: profile: note: %s\n",
			    cli_esc(sw.configs[0].spec.notes[i], e, sizeof(e)));
		}
		hp_sweep_spec_ids(&sw.configs[0].spec, batch, &sw.configs[0]);
		sw.configs[0].batch = batch;
		sw.configs[0].input_size = sw.configs[0].spec.input[1];
		spec_path = model_path;
		if (a.save_spec) {
			char *js = hp_spec_to_json(&sw.configs[0].spec);
			FILE *f = js ? fopen(a.save_spec, "w") : NULL;
			bool ok = f && fputs(js, f) >= 0 && fputc('\n', f) >= 0;
			if (f && fclose(f))
				ok = false;
			free(js);
			if (!ok) {
				hp_sweep_release(&sw);
				return cli_error(EXIT_FAIL, "cannot write '%s'",
						 a.save_spec);
			}
		}
	} else if (!!spec_path == !!sweep_arg)
		return cli_error(EXIT_USAGE,
				 "profile: give --spec FILE --batch N, or "
				 "--sweep FILE|default");
	if (spec_path && !batch)
		return cli_error(EXIT_USAGE, "profile: --spec needs --batch N");

	/* The configurations to measure. */
	if (model_path) {
		/* loaded above */
	} else if (spec_path) {
		char *text;
		size_t len;
		if (hp_read_file(spec_path, 16u << 20, &text, &len, &err) ||
		    (sw.configs = calloc(1, sizeof(*sw.configs))) == NULL ||
		    hp_spec_parse_only(text, len, &sw.configs[0].spec, &err)) {
			if (!err.code)
				hp_error_set(&err, HP_ENOMEM, "out of memory");
			free(text);
			free(sw.configs);
			return cli_error(cli_status_for(err.code), "'%s': %s",
					 spec_path, err.msg);
		}
		free(text);
		sw.n = 1;
		hp_sweep_spec_ids(&sw.configs[0].spec, batch, &sw.configs[0]);
		sw.configs[0].batch = batch;
		sw.configs[0].input_size = sw.configs[0].spec.input[1];
	} else if (hp_sweep_named_json(sweep_arg)) {
		/* a built-in sweep: default, wide, calibrate */
		if (hp_sweep_parse(sweep_arg, strlen(sweep_arg), NULL, &sw,
				   &err))
			return cli_error(EXIT_FAIL, "%s sweep: %s", sweep_arg,
					 err.msg);
	} else {
		char *text, *dir;
		size_t len;
		if (hp_read_file(sweep_arg, 16u << 20, &text, &len, &err))
			return cli_error(cli_status_for(err.code), "'%s': %s",
					 sweep_arg, err.msg);
		dir = dir_of(sweep_arg);
		rc = hp_sweep_parse(text, len, dir, &sw, &err);
		free(text);
		free(dir);
		if (rc)
			return cli_error(cli_status_for(rc), "'%s': %s",
					 sweep_arg, err.msg);
	}
	if (list) {
		for (int i = 0; i < sw.n; i++) {
			char id[256], fam[256];
			printf("%s\t%s\tbatch=%lld\n",
			       cli_esc(sw.configs[i].id, id, sizeof(id)),
			       cli_esc(sw.configs[i].family, fam, sizeof(fam)),
			       (long long)sw.configs[i].batch);
		}
		hp_sweep_release(&sw);
		return EXIT_OK;
	}

	/* The dataset: new, or resumed (a torn last line is cut off). */
	done.device = strncmp(po.device, "cuda", 4) ? "cpu" : po.device;
	done.optimizer = po.opt == HP_OPT_ADAM ? "adam" : "sgd";
	hp_buf_init(&line, 1u << 20);
	if ((rc = open_dataset(out, resume, &done, &fd)))
		goto out;

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	po.stop = &stop_flag;
	if (!strcmp(done.device, "cpu"))
		host_figures(po.threads, &hfig);
	row = malloc(sizeof(*row));
	if (!row) {
		rc = cli_error(EXIT_FAIL, "out of memory");
		goto out;
	}
	{
		int pending = 0, k = 0, round = 0, i = 0;
		for (int j = 0; j < sw.n; j++) {
			int d = done_count(&done, sw.configs[j].id);
			skipped += d < a.repeat ? d : (int)a.repeat;
			pending += d < a.repeat ? (int)a.repeat - d : 0;
		}
		if (limit && pending > limit)
			pending = (int)limit;
		t0 = hp_now_s();
		/* Round by round: repeats of a configuration lie minutes
		 * apart, as the drift they are to show does. */
		for (; round < a.repeat && k < pending;
		     i = (i + 1) % sw.n, round += i == 0) {
			const struct hp_sweep_config *cfg = &sw.configs[i];
			if (done_count(&done, cfg->id) > round)
				continue;
			progress(k, pending, cfg->id, hp_now_s() - t0, tty);
			hp_error_clear(&err);
			int prc = hp_profile_config(cfg, &po, row, &err);
			k++;
			if (prc == HP_ECANCELED || stop_flag) {
				if (tty)
					fputc('\n', stderr);
				cli_error(
				    EXIT_OK,
				    "interrupted: %d of %d "
				    "configurations are in '%s'; continue "
				    "with --resume",
				    measured, pending, out);
				rc = 130;
				goto out;
			}
			if ((prc == HP_ETOOBIG || prc == HP_EINVAL ||
			     prc == HP_ESHAPE) &&
			    !spec_path) {
				if (tty)
					fputc('\n', stderr);
				cli_error(EXIT_OK, "skipped %s: %s", cfg->id,
					  err.msg);
				failed++;
				continue;
			}
			if (prc) {
				if (tty)
					fputc('\n', stderr);
				rc = cli_error(cli_status_for(prc), "%s: %s",
					       cfg->id, err.msg);
				goto out;
			}
			if (row->cpu_pressure > po.max_pressure) {
				if (tty)
					fputc('\n', stderr);
				cli_error(EXIT_OK,
					  "warning: %s: the host was "
					  "busy (the profiler's threads waited "
					  "for a CPU %.0f%% of the time, %d "
					  "attempts); its times are kept with "
					  "cpu_pressure %.2f, which 'hetpool "
					  "fit' leaves out",
					  cfg->id, 100 * row->cpu_pressure,
					  row->attempts, row->cpu_pressure);
			}
			if (!strcmp(row->device, "cpu")) {
				row->host_isa_gflops = hfig.isa_gflops;
				row->host_sgemm_gflops = hfig.sgemm_gflops;
				row->host_triad_gbs = hfig.triad_gbs;
				row->host_cache_bytes = hfig.cache_bytes;
			}
			hp_buf_reset(&line);
			if ((prc = hp_dataset_format_row(row, &line))) {
				rc = cli_error(EXIT_FAIL,
					       "%s: cannot format its row: %s",
					       cfg->id, hp_strerror(prc));
				goto out;
			}
			if (fd < 0 && (rc = create_dataset(out, &fd)))
				goto out;
			if (append_line(fd, line.data, line.len)) {
				rc = cli_error(EXIT_FAIL,
					       "cannot write '%s': %s", out,
					       strerror(errno));
				goto out;
			}
			if (collect_done(row, 0, &done, &err)) {
				rc = cli_error(EXIT_FAIL, "out of memory");
				goto out;
			}
			measured++;
		}
		progress(pending, pending, "done", hp_now_s() - t0, tty);
		if (tty)
			fputc('\n', stderr);
	}
	if (json) {
		json_t *j =
		    json_pack("{s:s, s:i, s:i, s:i, s:f}", "out", out,
			      "measured", measured, "already_done", skipped,
			      "skipped", failed, "seconds", hp_now_s() - t0);
		if (model_path) {
			/* the conversion's notes, a string each */
			json_t *nts = json_array();
			for (int i = 0; sw.configs && sw.n > 0 &&
					i < sw.configs[0].spec.nnotes;
			     i++)
				json_array_append_new(
				    nts,
				    json_string(sw.configs[0].spec.notes[i]));
			json_object_set_new(j, "notes", nts);
		}
		if (spec_path && measured == 1)
			json_object_set_new(
			    j, "result",
			    json_pack("{s:s, s:I, s:f, s:f, s:i, s:I, s:s, "
				      "s:s}",
				      "config_id", row->config_id, "batch",
				      (json_int_t)row->batch, "step_time_s",
				      row->step_time_s, "step_time_cv",
				      row->step_time_cv, "steps", row->steps,
				      "peak_mem_bytes",
				      (json_int_t)row->peak_mem_bytes,
				      "backend", row->backend, "energy_source",
				      row->energy_source));
		json_dumpf(j, stdout, JSON_INDENT(2));
		fputc('\n', stdout);
		json_decref(j);
	} else if (spec_path && measured == 1) {
		char id[256];
		printf("%s  batch %lld  median step %.3f ms  cv %.1f%%  "
		       "steps %d  memory %.1f MiB  energy %s\n",
		       cli_esc(row->config_id, id, sizeof(id)),
		       (long long)row->batch, row->step_time_s * 1e3,
		       row->step_time_cv * 100, row->steps,
		       (double)row->peak_mem_bytes / 1048576.0,
		       row->energy_source);
	} else {
		printf("profiled %d configurations into '%s' (%d already "
		       "there, %d skipped) in %.0f s\n",
		       measured, out, skipped, failed, hp_now_s() - t0);
	}
out:
	if (fd >= 0)
		close(fd);
	hp_buf_release(&line);
	free(row);
	free(done.ids);
	hp_sweep_release(&sw);
	return rc;
}

const struct cli_cmd cli_cmd_profile = {
    .name = "profile",
    .run = cmd_profile,
    .help = help,
    .opts = profile_opts,
};
