/*
 * main.c - the hetpool command: dispatch to subcommands, install the
 * library's log sink (stderr), and map errors to exit statuses.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

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
    "  help [COMMAND]    show help for a command\n"
    "\n"
    "Run 'hetpool COMMAND --help' for a command's options.\n";

int cli_error(int status, const char *fmt, ...)
{
	va_list ap;

	fputs("hetpool: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return status;
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
		if (hp_parse_i64(part, 1, (int64_t)1 << 30, &dims[n]))
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
	(void)ud;
	fprintf(stderr, "hetpool: %s: %s\n", hp_log_level_name(level), msg);
}

int main(int argc, char **argv)
{
	char *help_args[3] = {NULL, "--help", NULL};
	const char *cmd;

	hp_log_set(log_stderr, NULL,
		   getenv("HETPOOL_DEBUG") ? HP_LOG_DEBUG : HP_LOG_WARN);
	if (argc < 2) {
		fputs(usage, stderr);
		return EXIT_USAGE;
	}
	cmd = argv[1];
	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
		fputs(usage, stdout);
		return EXIT_OK;
	}
	if (!strcmp(cmd, "help")) {
		if (argc > 2) {
			help_args[0] = argv[2];
			argv = help_args;
			argc = 2;
			cmd = argv[0];
			goto dispatch;
		}
		fputs(usage, stdout);
		return EXIT_OK;
	}
	argc--;
	argv++;
dispatch:
	if (!strcmp(cmd, "analyze"))
		return cmd_analyze(argc, argv);
	if (!strcmp(cmd, "devices"))
		return cmd_devices(argc, argv);
	if (!strcmp(cmd, "profile"))
		return cmd_profile(argc, argv);
	if (!strcmp(cmd, "fit"))
		return cmd_fit(argc, argv);
	if (!strcmp(cmd, "predict"))
		return cmd_predict(argc, argv);
	if (!strcmp(cmd, "validate"))
		return cmd_validate(argc, argv);
	if (!strcmp(cmd, "recommend"))
		return cmd_recommend(argc, argv);
	return cli_error(EXIT_USAGE,
			 "'%s' is not a command; see 'hetpool --help'", cmd);
}
