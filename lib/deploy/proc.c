/*
 * proc.c - outside commands as argv arrays: run one and keep its output
 * (with a time limit), start one in the background with its output in a
 * log, tell whether a process is still the one that was started.  Only
 * posix_spawn, so it is safe from a program with many threads; every
 * descriptor made here is close-on-exec, so no other command inherits it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "deploy/deploy_int.h"
#include "util/banned.h"

extern char **environ;

void hp__argv_add(struct hp__argv *a, const char *s)
{
	char *c;

	if (a->oom)
		return;
	if (a->n + 2 > a->alloc) {
		int na = a->alloc ? 2 * a->alloc : 16;
		char **nv = realloc(a->v, (size_t)na * sizeof(*nv));
		if (!nv) {
			a->oom = true;
			return;
		}
		a->v = nv;
		a->alloc = na;
	}
	if (!(c = hp_strdup(s))) {
		a->oom = true;
		return;
	}
	a->v[a->n++] = c;
	a->v[a->n] = NULL;
}

void hp__argv_addf(struct hp__argv *a, const char *fmt, ...)
{
	char buf[HP_DEPLOY_PATH_MAX + 256];
	va_list ap;
	int k;

	va_start(ap, fmt);
	k = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (k < 0 || (size_t)k >= sizeof(buf)) {
		a->oom = true;
		return;
	}
	hp__argv_add(a, buf);
}

void hp__argv_free(char **v)
{
	if (!v)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}

char **hp__argv_take(struct hp__argv *a)
{
	char **v = a->v;

	if (a->oom || !v) {
		hp__argv_free(v);
		v = NULL;
	}
	a->v = NULL;
	a->n = a->alloc = 0;
	a->oom = false;
	return v;
}

char **hp__argv_dup(char *const v[])
{
	struct hp__argv a = {0};

	for (int i = 0; v && v[i]; i++)
		hp__argv_add(&a, v[i]);
	return hp__argv_take(&a);
}

const char *hp__argv_str(char *const argv[], char *buf, size_t n)
{
	size_t off = 0;

	buf[0] = '\0';
	for (int i = 0; argv && argv[i] && off + 1 < n; i++) {
		int k =
		    snprintf(buf + off, n - off, "%s%s", i ? " " : "", argv[i]);
		if (k < 0)
			break;
		off += (size_t)k;
	}
	if (off >= n && n > 4)
		memcpy(buf + n - 4, "...", 4);
	return buf;
}

const char *hp__last_line(const char *text, char *buf, size_t n)
{
	const char *end = text + strlen(text), *start;
	char line[512];
	size_t len;

	while (end > text && (end[-1] == '\n' || end[-1] == '\r' ||
			      end[-1] == ' ' || end[-1] == '\t'))
		end--;
	start = end;
	while (start > text && start[-1] != '\n')
		start--;
	len = (size_t)(end - start);
	if (len >= sizeof(line))
		len = sizeof(line) - 1;
	memcpy(line, start, len);
	line[len] = '\0';
	return hp_str_escape(line, buf, n);
}

/* Whether a line is a frame of a launcher's message box ("-----"), or
 * blank. */
static bool is_rule(const char *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != '-' && p[i] != '=' && p[i] != ' ' && p[i] != '\t' &&
		    p[i] != '\r')
			return false;
	return true;
}

/* Whether line p[0..len) holds s. */
static bool line_has(const char *p, size_t len, const char *s)
{
	return memmem(p, len, s, strlen(s)) != NULL;
}

/* The trainer's own error line (not a warning or a note). */
static bool trainer_error(const char *p, size_t len)
{
	return len > 15 && !strncmp(p, "hetpool-train: ", 15) &&
	       !(len >= 22 && !strncmp(p, "hetpool-train: warning", 22)) &&
	       !(len >= 19 && !strncmp(p, "hetpool-train: note", 19));
}

/* The error of hetpool's own step on a node ("hetpool: _stage: ...",
 * _rank's, _supervise's: they print nothing else). */
static bool step_error(const char *p, size_t len)
{
	return len > 10 && !strncmp(p, "hetpool: _", 10);
}

/*
 * A line ending in ':' introduces what follows (Open MPI's "A call to
 * mkdir was unable to create the desired directory:", then, after a blank
 * line, "Directory: ..." and "Error: ..."): the next lines with text, up
 * to two, go on after it, their runs of blanks made one.
 */
static void add_continuation(char *line, size_t cap, const char *next)
{
	size_t at = strlen(line), len;
	int taken = 0, skipped = 0;

	if (at == 0 || line[at - 1] != ':')
		return;
	for (const char *p = next; *p && taken < 2;
	     p += len + (p[len] == '\n')) {
		len = strcspn(p, "\n");
		if (is_rule(p, len)) {
			if (taken || ++skipped > 2)
				break;
			continue;
		}
		for (size_t i = 0; i < len && at + 2 < cap; i++) {
			bool blank =
			    p[i] == ' ' || p[i] == '\t' || p[i] == '\r';
			if (blank && (line[at - 1] == ' '))
				continue;
			line[at++] = blank ? ' ' : p[i];
		}
		while (at > 0 && line[at - 1] == ' ')
			at--;
		if (at + 2 < cap)
			line[at++] = ' ';
		line[at] = '\0';
		taken++;
	}
	while (at > 0 && line[at - 1] == ' ')
		line[--at] = '\0';
}

const char *hp__telling_line(const char *text, char *buf, size_t n)
{
	static const char *const marks[] = {
	    "error",	    "Error",	    "ERROR",	 "Could not",
	    "could not",    "refused",	    "not found", "Permission denied",
	    "No such",	    "cannot",	    "unable",	 "unrecognized",
	    "Unrecognized", "No space left"};
	const char *p = text, *last = NULL, *mark = NULL, *own = NULL, *nl;
	size_t last_len = 0, mark_len = 0, own_len = 0, len;
	char line[512];

	/* the trainer's error (or a node step's) first (Open MPI's
	 * start-up warnings, "unable to open ... cannot open shared
	 * object", land in every rank's log), then the first line that
	 * reads as an error, then the last that is not a message box's
	 * frame */
	for (; *p; p += len + (p[len] == '\n')) {
		len = strcspn(p, "\n");
		if (is_rule(p, len))
			continue;
		last = p;
		last_len = len;
		if (!own && (trainer_error(p, len) || step_error(p, len))) {
			own = p;
			own_len = len;
		}
		for (size_t k = 0;
		     !mark && k < sizeof(marks) / sizeof(marks[0]); k++)
			if (line_has(p, len, marks[k]) &&
			    !(len > 15 && !strncmp(p, "hetpool-train: ", 15))) {
				mark = p;
				mark_len = len;
			}
	}
	if (own) {
		last = own;
		last_len = own_len;
	} else if (mark) {
		last = mark;
		last_len = mark_len;
	}
	if (!last) {
		if (n)
			buf[0] = '\0';
		return buf;
	}
	/* a line ended "\r\n" (ssh's, through mpirun) keeps no "\r" */
	while (last_len > 0 &&
	       (last[last_len - 1] == '\r' || last[last_len - 1] == ' ' ||
		last[last_len - 1] == '\t'))
		last_len--;
	if (last_len >= sizeof(line))
		last_len = sizeof(line) - 1;
	memcpy(line, last, last_len);
	line[last_len] = '\0';
	nl = strchr(last, '\n');
	add_continuation(line, sizeof(line), nl ? nl + 1 : "");
	return hp_str_escape(line, buf, n);
}

/* The telling line of the log at path into line; false (line "") when
 * it cannot be read. */
static bool log_line(const char *path, char *line, size_t n)
{
	char *text;
	size_t len;

	line[0] = '\0';
	if (hp_read_file(path, 4u << 20, &text, &len, NULL))
		return false;
	hp__telling_line(text, line, n);
	free(text);
	return true;
}

bool hp__log_says(const char *path, char *line, size_t n)
{
	return log_line(path, line, n) && (trainer_error(line, strlen(line)) ||
					   step_error(line, strlen(line)));
}

/*
 * A rank reads the data from the staged copy (JOBS/.stage/HASH), which
 * the user never named: in its line, that copy's folder becomes the folder
 * the user gave (--data DIR, in the job's stage.json).  The copy was
 * checked against the originals' checksums, so what it says of the copy it
 * says of them.
 */
static void unstage(const char *jobdir, char *line, size_t n)
{
	char path[HP_DEPLOY_PATH_MAX + 64], *at;
	const char *data, *dest;
	json_t *m;
	size_t dl;

	snprintf(path, sizeof(path), "%s/%s", jobdir, HP_STAGE_FILE);
	if (!(m = hp__read_json(path, 1u << 20, NULL)))
		return;
	data = json_string_value(json_object_get(m, "data"));
	dest = json_string_value(json_object_get(m, "dest"));
	if (data && dest && data[0] == '/' && (dl = strlen(dest)) > 1 &&
	    (at = strstr(line, dest)) &&
	    (at[dl] == '\0' || at[dl] == '/' || at[dl] == ':' ||
	     at[dl] == ' ')) {
		char rest[1024];
		snprintf(rest, sizeof(rest), "%s", at + dl);
		snprintf(at, n - (size_t)(at - line), "%s%s", data, rest);
	}
	json_decref(m);
}

bool hp__rank_says(const char *jobdir, int k, char *line, size_t n)
{
	char path[HP_DEPLOY_PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s/logs/rank-%d.log", jobdir, k);
	if (!log_line(path, line, n) || !trainer_error(line, strlen(line))) {
		/* no error of the trainer's ("hetpool: rank 1: starting ..."
		 * is none): nothing to quote */
		if (n)
			line[0] = '\0';
		return false;
	}
	unstage(jobdir, line, n);
	return true;
}

static double now_s(void)
{
	return hp_now_s();
}

static void keep(struct hp_buf *b, const char *p, size_t n)
{
	if (!b || b->len >= HP_CMD_OUT_MAX)
		return;
	if (b->len + n > HP_CMD_OUT_MAX)
		n = HP_CMD_OUT_MAX - b->len;
	hp_buf_add(b, p, n);
}

/* The default disposition and an empty mask for every signal a parent
 * may have changed, so the child starts clean. */
static void clean_signals(posix_spawnattr_t *at, short *flags)
{
	sigset_t all, none;

	sigfillset(&all);
	sigdelset(&all, SIGKILL);
	sigdelset(&all, SIGSTOP);
	sigemptyset(&none);
	posix_spawnattr_setsigdefault(at, &all);
	posix_spawnattr_setsigmask(at, &none);
	*flags |= POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK;
}

int hp__run(char *const argv[], double timeout_s, struct hp_buf *out,
	    struct hp_buf *errout, int *status, struct hp_error *err)
{
	int po[2] = {-1, -1}, pe[2] = {-1, -1}, rc, ws = 0;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	short flags = 0;
	pid_t pid, w;
	double deadline = now_s() + (timeout_s > 0 ? timeout_s : 60);
	bool timed_out = false;
	char line[512];

	*status = -1;
	if (pipe2(po, O_CLOEXEC) || pipe2(pe, O_CLOEXEC)) {
		rc = hp_error_set(err, HP_EIO, "cannot make a pipe: %s",
				  strerror(errno));
		goto fail_pipe;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&at);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, po[1], 1);
	posix_spawn_file_actions_adddup2(&fa, pe[1], 2);
	clean_signals(&at, &flags);
	/* its own process group: a command that runs too long is stopped
	 * with whatever it started (a grandchild would otherwise live on,
	 * and hold the pipes open) */
	flags |= POSIX_SPAWN_SETPGROUP;
	posix_spawnattr_setpgroup(&at, 0);
	posix_spawnattr_setflags(&at, flags);
	rc = posix_spawnp(&pid, argv[0], &fa, &at, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	close(po[1]);
	close(pe[1]);
	po[1] = pe[1] = -1;
	if (rc) {
		rc = hp_error_set(err, HP_EIO, "cannot run '%s': %s", argv[0],
				  strerror(rc));
		goto fail_pipe;
	}
	for (int open_fds = 2; open_fds > 0;) {
		struct pollfd pf[2] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}};
		double left = deadline - now_s();
		char buf[8192];
		int k;

		if (left <= 0) {
			timed_out = true;
			kill(-pid, SIGKILL);
			break;
		}
		k = poll(pf, 2, (int)(left * 1000) + 1);
		if (k < 0 && errno != EINTR)
			break;
		for (int i = 0; i < 2 && k > 0; i++) {
			ssize_t r;
			if (!pf[i].revents || pf[i].fd < 0)
				continue;
			r = read(pf[i].fd, buf, sizeof(buf));
			if (r > 0) {
				keep(i ? errout : out, buf, (size_t)r);
			} else if (r == 0 || errno != EINTR) {
				close(pf[i].fd);
				if (i)
					pe[0] = -1;
				else
					po[0] = -1;
				open_fds--;
			}
		}
		/* poll() ignores a closed (negative) descriptor */
	}
	while ((w = waitpid(pid, &ws, 0)) < 0 && errno == EINTR)
		;
	if (po[0] >= 0)
		close(po[0]);
	if (pe[0] >= 0)
		close(pe[0]);
	if (w < 0) /* a SIGCHLD handler of the program reaped it first */
		return hp_error_set(err, HP_EIO,
				    "lost the exit status of '%s': %s", argv[0],
				    strerror(errno));
	if (timed_out)
		return hp_error_set(err, HP_EIO,
				    "'%s' took more than %.0f s and was "
				    "stopped",
				    hp__argv_str(argv, line, sizeof(line)),
				    timeout_s);
	*status = WIFEXITED(ws) ? WEXITSTATUS(ws)
				: 128 + (WIFSIGNALED(ws) ? WTERMSIG(ws) : 0);
	return 0;
fail_pipe:
	for (int i = 0; i < 2; i++) {
		if (po[i] >= 0)
			close(po[i]);
		if (pe[i] >= 0)
			close(pe[i]);
	}
	return rc;
}

int hp__spawn(char *const argv[], const char *log, bool session, pid_t *pid,
	      struct hp_error *err)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	short flags = 0;
	int rc;

	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&at);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, log,
					 O_WRONLY | O_CREAT | O_APPEND, 0644);
	posix_spawn_file_actions_adddup2(&fa, 1, 2);
	clean_signals(&at, &flags);
	if (session) {
		flags |= POSIX_SPAWN_SETSID;
	} else {
		flags |= POSIX_SPAWN_SETPGROUP;
		posix_spawnattr_setpgroup(&at, 0);
	}
	posix_spawnattr_setflags(&at, flags);
	rc = posix_spawnp(pid, argv[0], &fa, &at, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	if (rc)
		return hp_error_set(err, HP_EIO, "cannot run '%s': %s", argv[0],
				    strerror(rc));
	return 0;
}

unsigned long long hp__proc_start(long pid)
{
	char path[64], buf[1024], *p;
	unsigned long long start = 0;
	size_t n;
	FILE *f;

	if (pid <= 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	if (!(f = fopen(path, "re")))
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* "pid (comm) S ppid ...": comm may hold anything, so count the
	 * fields after its last ')'; state is field 3, starttime 22. */
	if (!(p = strrchr(buf, ')')))
		return 0;
	p++;
	for (int field = 3; field <= 22; field++) {
		char *tok;
		while (*p == ' ')
			p++;
		tok = p;
		while (*p && *p != ' ')
			p++;
		if (tok == p)
			return 0;
		if (field == 3 && (*tok == 'Z' || *tok == 'X'))
			return 0;
		if (field == 22)
			start = strtoull(tok, NULL, 10);
	}
	return start;
}

bool hp__proc_alive(long pid, unsigned long long start)
{
	unsigned long long s = hp__proc_start(pid);

	/* no start time recorded is no way to tell: not ours (a pid alone
	 * may since name any process) */
	return s != 0 && start != 0 && s == start;
}
