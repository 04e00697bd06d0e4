/* est_cli.c - helpers shared by `hetpool fit`, `predict` and `validate`. */
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "est_cli.h"

int est_cli_resolve(struct est_cli_sources *s, const char *cmd,
		    struct hp_fit_options *o)
{
	if (s->pub && s->no_public)
		return cli_error(EXIT_USAGE,
				 "%s: give --public DIR or --no-public, not "
				 "both",
				 cmd);
	if (!s->no_public && !s->pub) {
		if (cli_data_path("measurements", s->pubbuf, sizeof(s->pubbuf)))
			return cli_error(EXIT_USAGE,
					 "%s: no data/measurements found; "
					 "give --public DIR or --no-public",
					 cmd);
		s->pub = s->pubbuf;
	}
	if (!s->models &&
	    !cli_data_path("models", s->modbuf, sizeof(s->modbuf)))
		s->models = s->modbuf;
	o->public_dir = s->no_public ? NULL : s->pub;
	o->models_dir = s->models;
	return 0;
}

int est_cli_profiles(char **paths, int max)
{
	char dir[4096], pat[4200];
	glob_t g;
	int n = 0;

	if (cli_data_path("profiles", dir, sizeof(dir)))
		return 0;
	snprintf(pat, sizeof(pat), "%s/*.csv", dir);
	if (glob(pat, 0, NULL, &g))
		return 0;
	for (size_t i = 0; i < g.gl_pathc && n < max; i++) {
		paths[n] = strdup(g.gl_pathv[i]);
		if (paths[n])
			n++;
	}
	globfree(&g);
	return n;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void est_cli_progress_init(struct est_cli_progress *p, const char *cmd)
{
	memset(p, 0, sizeof(*p));
	p->cmd = cmd;
	p->tty = isatty(STDERR_FILENO) == 1;
	p->start_s = now_s();
}

void est_cli_progress(const char *stage, int64_t done, int64_t total, void *ud)
{
	struct est_cli_progress *p = ud;
	char esc[256];
	double t;

	if (!p->tty)
		return;
	t = now_s();
	if (t - p->start_s < 2 || t - p->last_s < 0.25)
		return;
	p->last_s = t;
	p->shown = true;
	cli_esc(stage, esc, sizeof(esc));
	if (total > 0)
		fprintf(stderr,
			"\rhetpool: %s: %s %lld/%lld (%d%%), %.0f s\033[K",
			p->cmd, esc, (long long)done, (long long)total,
			(int)(100 * done / total), t - p->start_s);
	else
		fprintf(stderr, "\rhetpool: %s: %s: %lld rows, %.0f s\033[K",
			p->cmd, esc, (long long)done, t - p->start_s);
	fflush(stderr);
}

void est_cli_progress_end(struct est_cli_progress *p)
{
	if (p->shown)
		fputs("\r\033[K", stderr);
	p->shown = false;
}

void est_cli_report_skipped(const char *cmd, const struct hp_fit_report *r)
{
	if (r->bad_rows_skipped > 0)
		hp_log(HP_LOG_WARN,
		       "%s: skipped %lld bad row%s (--skip-bad-rows); the "
		       "first: %s",
		       cmd, (long long)r->bad_rows_skipped,
		       r->bad_rows_skipped == 1 ? "" : "s", r->first_bad);
}
