/*
 * opt.h - the commands' options, declared once: each command has a table
 * of its options (name, kind, where the value goes in the command's own
 * struct, the range or the words it takes), and one parser reads argv
 * with it, so every command says the same thing about the same mistake:
 *
 *   hetpool: CMD: --opt 'X': give a whole number from A to B
 *   hetpool: CMD: --opt 'X': give a number from A to B
 *   hetpool: CMD: --opt 'X': give a, b or c
 *   hetpool: CMD: unknown option '--x'; see 'hetpool CMD --help'
 *   hetpool: CMD: --opt needs a value; see 'hetpool CMD --help'
 *
 * --help (and -h) print the command's help text; `hetpool _check-help`
 * checks every help text against its table (each option named in it,
 * nothing named that the table lacks).
 */
#ifndef HP_CLI_OPT_H
#define HP_CLI_OPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hetpool/model.h"

enum cli_opt_kind {
	CLI_FLAG,     /* bool, set true */
	CLI_STR,      /* const char *: the argument itself */
	CLI_INT,      /* int or int64_t (by the field's size), in [min, max] */
	CLI_NUM,      /* double in [min, max] (min_open: above min) */
	CLI_WORD,     /* int: the value of one of words[] */
	CLI_DURATION, /* double seconds (hp_parse_duration(): 90m, 2h, ...) */
	CLI_DIMS,     /* struct cli_dims: "3x224x224" */
	CLI_LIST,     /* struct cli_list: the arguments of a repeated option */
};

/* A word an option takes and the value it stands for; hidden words (an
 * alias) are accepted but not listed in the error. */
struct cli_word {
	const char *word;
	int value;
	bool hidden;
};

struct cli_dims {
	int64_t d[HP_MAX_RANK];
	int rank; /* 0: not given */
};

#define CLI_LIST_MAX 64
struct cli_list {
	const char *v[CLI_LIST_MAX];
	int n;
};

struct cli_opt {
	const char *name; /* without "--" */
	enum cli_opt_kind kind;
	size_t off;  /* of the field in the command's struct */
	size_t size; /* of the field (CLI_INT: int or int64_t) */
	int64_t imin, imax;
	double min, max;
	bool min_open;
	const struct cli_word *words; /* ends with {NULL} */
	char short_name;	      /* e.g. 'f' for -f, or 0 */
};

/* Table entries: T is the command's struct, f the field. */
#define CLI_OPT_FLAG(n, T, f)                                                  \
	{                                                                      \
		.name = (n), .kind = CLI_FLAG, .off = offsetof(T, f),          \
		.size = sizeof(((T *)0)->f)                                    \
	}
#define CLI_OPT_STR(n, T, f)                                                   \
	{                                                                      \
		.name = (n), .kind = CLI_STR, .off = offsetof(T, f),           \
		.size = sizeof(((T *)0)->f)                                    \
	}
#define CLI_OPT_INT(n, T, f, lo, hi)                                           \
	{                                                                      \
		.name = (n), .kind = CLI_INT, .off = offsetof(T, f),           \
		.size = sizeof(((T *)0)->f), .imin = (lo), .imax = (hi)        \
	}
#define CLI_OPT_NUM(n, T, f, lo, hi)                                           \
	{                                                                      \
		.name = (n), .kind = CLI_NUM, .off = offsetof(T, f),           \
		.size = sizeof(((T *)0)->f), .min = (lo), .max = (hi)          \
	}
#define CLI_OPT_NUM_ABOVE(n, T, f, lo, hi)                                     \
	{                                                                      \
		.name = (n), .kind = CLI_NUM, .off = offsetof(T, f),           \
		.size = sizeof(((T *)0)->f), .min = (lo), .max = (hi),         \
		.min_open = true                                               \
	}
#define CLI_OPT_WORD(n, T, f, w)                                               \
	{                                                                      \
		.name = (n), .kind = CLI_WORD, .off = offsetof(T, f),          \
		.size = sizeof(((T *)0)->f), .words = (w)                      \
	}
#define CLI_OPT_DURATION(n, T, f)                                              \
	{                                                                      \
		.name = (n), .kind = CLI_DURATION, .off = offsetof(T, f),      \
		.size = sizeof(((T *)0)->f)                                    \
	}
#define CLI_OPT_DIMS(n, T, f)                                                  \
	{                                                                      \
		.name = (n), .kind = CLI_DIMS, .off = offsetof(T, f),          \
		.size = sizeof(((T *)0)->f)                                    \
	}
#define CLI_OPT_LIST(n, T, f)                                                  \
	{                                                                      \
		.name = (n), .kind = CLI_LIST, .off = offsetof(T, f),          \
		.size = sizeof(((T *)0)->f)                                    \
	}
#define CLI_OPT_END                                                            \
	{                                                                      \
		.name = NULL                                                   \
	}

/* One command: its name, what runs it, its help and its options. */
struct cli_cmd {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *help;
	const struct cli_opt *opts; /* ends with CLI_OPT_END; NULL: none */
	/* Options end at the first argument (what follows "--" or the
	 * first argument is the command's: lr-find's trainer arguments). */
	bool stop_at_arg;
	bool hidden; /* the job's own steps: no help, not listed */
	/* Options of other programs the help names (sbatch's, the
	 * trainer's), space-separated, without "--". */
	const char *foreign;
};

/*
 * Parse argv (argv[0] the command's name) into args by cmd's table.
 * Returns 0 with the arguments that are not options from argv[*first]
 * (getopt's order: options and arguments may mix), -1 after printing the
 * help (exit 0), or the exit status after printing one error line.
 */
int cli_parse(const struct cli_cmd *cmd, int argc, char **argv, void *args,
	      int *first);
/* The same, with bit i of *seen set when option i of the table was
 * given. */
int cli_parse_seen(const struct cli_cmd *cmd, int argc, char **argv, void *args,
		   int *first, uint64_t *seen);

/* The commands (main.c), NULL-terminated, and one by name. */
extern const struct cli_cmd *const cli_cmds[];
const struct cli_cmd *cli_cmd_find(const char *name);

/* Check each command's help against its table, and that the program's
 * usage lists each command; the mismatches on stderr, how many. */
int cli_check_help(const char *usage);
/* The same for one command against a usage text. */
int cli_check_cmd_help(const struct cli_cmd *c, const char *usage);

#endif
