/* deploy_cli.c - helpers shared by the job commands: the jobs folder, the
 * deploy context, this program's path, the trainer's. */
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "deploy_cli.h"

int deploy_cli_self(char *buf, size_t n)
{
	ssize_t k = readlink("/proc/self/exe", buf, n - 1);

	if (k <= 0 || (size_t)k >= n - 1)
		return -1;
	buf[k] = '\0';
	return 0;
}

int deploy_cli_jobs_dir(const char *given, const char *cmd, char *buf, size_t n)
{
	const char *env = getenv("HETPOOL_JOBS_DIR");
	const char *xdg = getenv("XDG_STATE_HOME");
	const char *home = getenv("HOME");
	char cwd[PATH_MAX];
	int k;

	if (given && *given)
		k = snprintf(buf, n, "%s", given);
	else if (env && *env)
		k = snprintf(buf, n, "%s", env);
	else if (xdg && *xdg == '/')
		k = snprintf(buf, n, "%s/hetpool/jobs", xdg);
	else if (home && *home == '/')
		k = snprintf(buf, n, "%s/.local/state/hetpool/jobs", home);
	else
		return cli_error(EXIT_USAGE,
				 "%s: no jobs folder: give --jobs-dir DIR or "
				 "set HETPOOL_JOBS_DIR (HOME is not set)",
				 cmd);
	if (k < 0 || (size_t)k >= n)
		return cli_error(EXIT_USAGE, "%s: jobs folder path too long",
				 cmd);
	if (buf[0] != '/') {
		char rel[PATH_MAX];
		if (!getcwd(cwd, sizeof(cwd)))
			return cli_error(EXIT_FAIL,
					 "%s: cannot tell the current folder",
					 cmd);
		snprintf(rel, sizeof(rel), "%s", buf);
		k = snprintf(buf, n, "%s/%s", cwd, rel);
		if (k < 0 || (size_t)k >= n)
			return cli_error(EXIT_USAGE,
					 "%s: jobs folder path too long", cmd);
	}
	/* "a/b/" and "a/./b" read the same as "a/b" */
	for (size_t len = strlen(buf); len > 1 && buf[len - 1] == '/';)
		buf[--len] = '\0';
	/* "../jobs" from a folder: the path it names, as the folder (or,
	 * not made yet, the one above it) resolves; the library refuses a
	 * path with ".." in it */
	if (strstr(buf, "/../") || strstr(buf, "/./") ||
	    (strlen(buf) >= 3 && !strcmp(buf + strlen(buf) - 3, "/..")) ||
	    (strlen(buf) >= 2 && !strcmp(buf + strlen(buf) - 2, "/."))) {
		char real[PATH_MAX], up[PATH_MAX], *slash;
		if (realpath(buf, real)) {
			k = snprintf(buf, n, "%s", real);
		} else if (snprintf(up, sizeof(up), "%s", buf) <
			       (int)sizeof(up) &&
			   (slash = strrchr(up, '/')) && slash != up &&
			   strcmp(slash, "/..") && strcmp(slash, "/.")) {
			*slash = '\0';
			if (realpath(up, real))
				k = snprintf(buf, n, "%s%s%s", real,
					     strcmp(real, "/") ? "/" : "",
					     slash + 1);
		}
		if (k < 0 || (size_t)k >= n)
			return cli_error(EXIT_USAGE,
					 "%s: jobs folder path too long", cmd);
	}
	return 0;
}

struct hp_deploy *deploy_cli_open(const char *jobs_dir, const char *cmd,
				  int *status)
{
	struct hp_deploy_config cfg = {0};
	struct hp_error err = {0};
	struct hp_deploy *d;
	char self[PATH_MAX];

	if (deploy_cli_self(self, sizeof(self))) {
		*status = cli_error(EXIT_FAIL,
				    "%s: cannot find this program's path "
				    "(/proc/self/exe)",
				    cmd);
		return NULL;
	}
	cfg.jobs_dir = jobs_dir;
	cfg.hetpool = self;
	if (!(d = hp_deploy_new(&cfg, &err)))
		*status =
		    cli_error(cli_status_for(err.code), "%s: %s", cmd, err.msg);
	return d;
}

const char *deploy_cli_not_program(const char *path)
{
	struct stat st;

	if (stat(path, &st))
		return "no such file";
	if (S_ISDIR(st.st_mode))
		return "a folder, not an executable file";
	if (!S_ISREG(st.st_mode))
		return "not a regular file";
	if (access(path, X_OK))
		return "not executable";
	return NULL;
}

void deploy_cli_trainer(const char *given, char *buf, size_t n)
{
	const char *env = getenv("HETPOOL_TRAINER");
	const char *path = getenv("PATH");
	char self[PATH_MAX], *slash;

	buf[0] = '\0';
	if (given && *given) {
		if (given[0] == '/' || !realpath(given, self))
			snprintf(buf, n, "%s", given);
		else
			snprintf(buf, n, "%s", self);
		return;
	}
	if (env && *env) {
		snprintf(buf, n, "%s", env);
		return;
	}
	if (!deploy_cli_self(self, sizeof(self)) &&
	    (slash = strrchr(self, '/'))) {
		*slash = '\0';
		snprintf(buf, n, "%s/hetpool-train", self);
		if (!deploy_cli_not_program(buf))
			return;
	}
	buf[0] = '\0';
	for (const char *p = path ? path : ""; *p;) {
		const char *end = strchr(p, ':');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		int k = snprintf(buf, n, "%.*s/hetpool-train", (int)len, p);
		if (len && *p == '/' && k > 0 && (size_t)k < n &&
		    !deploy_cli_not_program(buf))
			return;
		p = end ? end + 1 : p + len;
	}
	buf[0] = '\0';
}

const char *deploy_cli_age(double t, char *buf, size_t n)
{
	double now = (double)time(NULL), d = now - t;

	if (t <= 0)
		snprintf(buf, n, "-");
	else if (d < 120)
		snprintf(buf, n, "%.0fs ago", d < 0 ? 0 : d);
	else if (d < 7200)
		snprintf(buf, n, "%.0fm ago", d / 60);
	else if (d < 172800)
		snprintf(buf, n, "%.0fh ago", d / 3600);
	else
		snprintf(buf, n, "%.0fd ago", d / 86400);
	return buf;
}

char *deploy_cli_job_json(const struct hp_job *j)
{
	char *s = hp_job_json(j), *out = NULL;
	json_t *o = s ? json_loads(s, 0, NULL) : NULL;

	if (o) {
		json_object_set_new(o, "dir", json_string(j->dir));
		out = json_dumps(o, JSON_INDENT(2));
	}
	json_decref(o);
	free(s);
	return out;
}
