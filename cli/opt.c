/* opt.c - the commands' shared option parser (opt.h). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "hetpool/recommend.h"
#include "opt.h"

/* Most options one command has. */
#define CLI_MAX_OPTS 64

/* "a, b or c" of the words an option lists. */
static void word_list(const struct cli_word *w, char *buf, size_t n)
{
	int total = 0, k = 0;
	size_t off = 0;

	for (int i = 0; w[i].word; i++)
		total += !w[i].hidden;
	buf[0] = '\0';
	for (int i = 0; w[i].word && off < n; i++) {
		if (w[i].hidden)
			continue;
		off += (size_t)snprintf(buf + off, n - off, "%s%s",
					k == 0		 ? ""
					: k == total - 1 ? " or "
							 : ", ",
					w[i].word);
		k++;
	}
}

/* Store the value of option o from s into args; 0 or the exit status
 * after one error line. */
static int store(const char *cmd, const struct cli_opt *o, const char *s,
		 void *args)
{
	void *p = (char *)args + o->off;
	struct hp_error err = {0};
	int64_t v;
	double d;
	char buf[256];

	switch (o->kind) {
	case CLI_FLAG:
		*(bool *)p = true;
		return 0;
	case CLI_STR:
		*(const char **)p = s;
		return 0;
	case CLI_INT:
		if (!cli_plain_number(s) || strpbrk(s, ".eE") ||
		    hp_parse_i64(s, o->imin, o->imax, &v))
			return cli_error(EXIT_USAGE,
					 "%s: --%s '%s': give a whole number "
					 "from %lld to %lld",
					 cmd, o->name, s, (long long)o->imin,
					 (long long)o->imax);
		if (o->size == sizeof(int))
			*(int *)p = (int)v;
		else
			*(int64_t *)p = v;
		return 0;
	case CLI_NUM:
		if (!cli_plain_number(s) || hp_parse_double(s, &d) ||
		    !(o->min_open ? d > o->min : d >= o->min) || !(d <= o->max))
			return cli_error(EXIT_USAGE,
					 o->min_open
					     ? "%s: --%s '%s': give a number "
					       "more than %g and at most %g"
					     : "%s: --%s '%s': give a number "
					       "from %g to %g",
					 cmd, o->name, s, o->min, o->max);
		*(double *)p = d;
		return 0;
	case CLI_WORD:
		for (int i = 0; o->words[i].word; i++)
			if (!strcmp(s, o->words[i].word)) {
				*(int *)p = o->words[i].value;
				return 0;
			}
		word_list(o->words, buf, sizeof(buf));
		return cli_error(EXIT_USAGE, "%s: --%s '%s': give %s", cmd,
				 o->name, s, buf);
	case CLI_DURATION:
		if (hp_parse_duration(s, (double *)p, &err))
			return cli_error(EXIT_USAGE, "%s: --%s %s", cmd,
					 o->name, err.msg);
		return 0;
	case CLI_DIMS: {
		struct cli_dims *dm = p;
		int r = cli_parse_dims(s, dm->d, HP_MAX_RANK);
		if (r < 0)
			return cli_error(EXIT_USAGE,
					 "%s: --%s '%s': give dimensions like "
					 "3x224x224",
					 cmd, o->name, s);
		dm->rank = r;
		return 0;
	}
	case CLI_LIST: {
		struct cli_list *l = p;
		if (l->n == CLI_LIST_MAX)
			return cli_error(EXIT_USAGE, "%s: at most %d --%s", cmd,
					 CLI_LIST_MAX, o->name);
		l->v[l->n++] = s;
		return 0;
	}
	}
	return cli_error(EXIT_FAIL, "%s: --%s: unknown option kind", cmd,
			 o->name);
}

int cli_parse(const struct cli_cmd *cmd, int argc, char **argv, void *args,
	      int *first)
{
	return cli_parse_seen(cmd, argc, argv, args, first, NULL);
}

int cli_parse_seen(const struct cli_cmd *cmd, int argc, char **argv, void *args,
		   int *first, uint64_t *seen)
{
	struct option lo[CLI_MAX_OPTS + 2];
	char shortopts[CLI_MAX_OPTS + 8];
	size_t ns = 0;
	int n = 0, c, rc;

	if (cmd->stop_at_arg)
		shortopts[ns++] = '+';
	shortopts[ns++] = ':';
	shortopts[ns++] = 'h';
	for (const struct cli_opt *o = cmd->opts; o && o->name; o++) {
		if (n == CLI_MAX_OPTS)
			return cli_error(EXIT_FAIL, "%s: too many options",
					 cmd->name);
		lo[n] = (struct option){o->name,
					o->kind == CLI_FLAG ? no_argument
							    : required_argument,
					NULL, 256 + n};
		if (o->short_name)
			shortopts[ns++] = o->short_name;
		n++;
	}
	lo[n++] = (struct option){"help", no_argument, NULL, 'h'};
	lo[n] = (struct option){NULL, 0, NULL, 0};
	shortopts[ns] = '\0';
	if (seen)
		*seen = 0;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, shortopts, lo, NULL)) != -1) {
		const struct cli_opt *o = NULL;
		if (c == 'h') {
			fputs(cmd->help, stdout);
			return -1;
		}
		if (c == '?') {
			if (optopt && optopt < 256)
				return cli_error(
				    EXIT_USAGE,
				    "%s: unknown option '-%c'; see "
				    "'hetpool %s --help'",
				    cmd->name, optopt, cmd->name);
			return cli_error(EXIT_USAGE,
					 "%s: unknown option '%s'; see "
					 "'hetpool %s --help'",
					 cmd->name, argv[optind - 1],
					 cmd->name);
		}
		if (c == ':')
			return cli_error(EXIT_USAGE,
					 "%s: %s needs a value; see 'hetpool "
					 "%s --help'",
					 cmd->name, argv[optind - 1],
					 cmd->name);
		if (c >= 256)
			o = &cmd->opts[c - 256];
		else
			for (const struct cli_opt *x = cmd->opts; x && x->name;
			     x++)
				if (x->short_name == c)
					o = x;
		if (!o)
			return cli_error(EXIT_USAGE,
					 "%s: unknown option '-%c'; see "
					 "'hetpool %s --help'",
					 cmd->name, c, cmd->name);
		if ((rc = store(cmd->name, o, optarg, args)))
			return rc;
		if (seen)
			*seen |= (uint64_t)1 << (o - cmd->opts);
	}
	*first = optind;
	return 0;
}

const struct cli_cmd *cli_cmd_find(const char *name)
{
	for (int i = 0; cli_cmds[i]; i++)
		if (!strcmp(cli_cmds[i]->name, name))
			return cli_cmds[i];
	return NULL;
}

/* Whether text names --name (not as the start of a longer option). */
static bool names_opt(const char *text, const char *name)
{
	size_t len = strlen(name);

	for (const char *p = strstr(text, "--"); p; p = strstr(p + 2, "--"))
		if (!strncmp(p + 2, name, len) &&
		    !strchr("abcdefghijklmnopqrstuvwxyz0123456789-",
			    p[2 + len] ? p[2 + len] : ' '))
			return true;
	return false;
}

static bool in_table(const struct cli_cmd *c, const char *name, size_t len)
{
	if (len == 4 && !strncmp(name, "help", 4))
		return true;
	for (const char *f = c->foreign; f && *f;) {
		size_t fl = strcspn(f, " ");
		if (fl == len && !strncmp(f, name, len))
			return true;
		f += fl + (f[fl] == ' ');
	}
	for (const struct cli_opt *o = c->opts; o && o->name; o++)
		if (strlen(o->name) == len && !strncmp(o->name, name, len))
			return true;
	return false;
}

int cli_check_cmd_help(const struct cli_cmd *c, const char *usage)
{
	char want[64];
	int bad = 0;

	snprintf(want, sizeof(want), "\n  %s ", c->name);
	if (!strstr(usage, want)) {
		fprintf(stderr, "usage: lacks '%s'\n", c->name);
		bad++;
	}
	for (const struct cli_opt *o = c->opts; o && o->name; o++)
		if (!names_opt(c->help, o->name)) {
			fprintf(stderr, "%s: help lacks --%s\n", c->name,
				o->name);
			bad++;
		}
	for (const char *p = strstr(c->help, "--"); p;
	     p = strstr(p + 2, "--")) {
		size_t len = strspn(p + 2, "abcdefghijklmnopqrstuvwxyz"
					   "0123456789-");
		if (len && !in_table(c, p + 2, len)) {
			fprintf(stderr,
				"%s: help names --%.*s, not an option\n",
				c->name, (int)len, p + 2);
			bad++;
		}
		p += len;
	}
	return bad;
}

int cli_check_help(const char *usage)
{
	int bad = 0;

	for (int i = 0; cli_cmds[i]; i++)
		if (!cli_cmds[i]->hidden)
			bad += cli_check_cmd_help(cli_cmds[i], usage);
	return bad;
}
