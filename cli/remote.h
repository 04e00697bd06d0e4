/* remote.h - `hetpool --server URL COMMAND`: the verbs that talk to a
 * hetpoold (recommend, run, jobs, status, cancel, logs) and their HTTP
 * client (remote_http.c, libcurl). */
#ifndef HP_CLI_REMOTE_H
#define HP_CLI_REMOTE_H

#include <stdbool.h>
#include <stddef.h>

#include "hetpool/util.h"

struct remote {
	const char *url; /* http(s)://host:port */
	const char *cmd; /* for messages */
};

struct remote_resp {
	long status;
	struct hp_buf body;
	char ctype[128];
	long long x_size; /* X-Size, or -1 */
};

/* One request; 0 with out filled (any HTTP status: the caller checks
 * it; remote_resp_release()), or the exit status after one error line
 * when the server cannot be reached. */
int remote_request(const struct remote *rm, const char *method,
		   const char *path, const char *ctype, const void *body,
		   size_t len, struct remote_resp *out);
/* One error line from the server's problem details; releases r; the exit
 * status (2 for what the request got wrong, 1 for the server's
 * failures). */
int remote_fail(const struct remote *rm, struct remote_resp *r);
void remote_resp_release(struct remote_resp *r);

/* Run `hetpool --server URL COMMAND ...` (argv[0] is COMMAND). */
int cli_remote(const char *url, int argc, char **argv);
/* The remote commands, for the help check. */
extern const struct cli_cmd *const cli_remote_cmds[];
extern const char cli_remote_usage[];

#endif
