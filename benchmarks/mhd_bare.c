/*
 * mhd_bare.c - the load benchmark's peer: a bare libmicrohttpd JSON
 * endpoint, set up as hetpoold is (internal polling thread, epoll, a
 * thread pool, the two-phase handler that keeps connections alive) but
 * doing nothing else: no routing, no token, no database, no log.  Every
 * GET answers the JSON object read from BODY.json at start, serialised by
 * jansson per request; with --static, serialised once and served from one
 * response kept for the life of the process (the fastest libmicrohttpd
 * serves a document: the strictest peer for a cached answer).
 *
 *   hp_mhd_bare PORT THREADS BODY.json [--static]
 */
#include <jansson.h>
#include <microhttpd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *body;
static struct MHD_Response *fixed; /* --static */

static enum MHD_Result handler(void *cls, struct MHD_Connection *c,
			       const char *url, const char *method,
			       const char *version, const char *upload,
			       size_t *upload_size, void **con_cls)
{
	static int first;
	struct MHD_Response *r;
	enum MHD_Result rc;
	char *s;

	(void)cls;
	(void)url;
	(void)method;
	(void)version;
	(void)upload;
	if (!*con_cls) {
		*con_cls = &first;
		return MHD_YES;
	}
	*upload_size = 0;
	if (fixed)
		return MHD_queue_response(c, 200, fixed);
	if (!(s = json_dumps(body, JSON_COMPACT)))
		return MHD_NO;
	r = MHD_create_response_from_buffer(strlen(s), s,
					    MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(r, "Content-Type", "application/json");
	rc = MHD_queue_response(c, 200, r);
	MHD_destroy_response(r);
	return rc;
}

int main(int argc, char **argv)
{
	struct MHD_Daemon *d;
	json_error_t je;
	sigset_t s;
	int sig;

	if (argc != 4 && !(argc == 5 && !strcmp(argv[4], "--static"))) {
		fprintf(
		    stderr,
		    "usage: hp_mhd_bare PORT THREADS BODY.json [--static]\n");
		return 2;
	}
	if (!(body = json_load_file(argv[3], 0, &je))) {
		fprintf(stderr, "hp_mhd_bare: %s: %s\n", argv[3], je.text);
		return 2;
	}
	if (argc == 5) {
		char *doc = json_dumps(body, JSON_COMPACT);
		if (!doc || !(fixed = MHD_create_response_from_buffer(
				  strlen(doc), doc, MHD_RESPMEM_MUST_FREE))) {
			fprintf(stderr, "hp_mhd_bare: out of memory\n");
			return 1;
		}
		MHD_add_response_header(fixed, "Content-Type",
					"application/json");
	}
	sigemptyset(&s);
	sigaddset(&s, SIGTERM);
	sigaddset(&s, SIGINT);
	pthread_sigmask(SIG_BLOCK, &s, NULL);
	d = MHD_start_daemon(
	    MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL,
	    (uint16_t)strtol(argv[1], NULL, 10), NULL, NULL, handler, NULL,
	    MHD_OPTION_THREAD_POOL_SIZE, (unsigned)strtol(argv[2], NULL, 10),
	    MHD_OPTION_CONNECTION_LIMIT, 1024u, MHD_OPTION_END);
	if (!d) {
		fprintf(stderr, "hp_mhd_bare: cannot listen on %s\n", argv[1]);
		return 1;
	}
	sigwait(&s, &sig);
	MHD_stop_daemon(d);
	if (fixed)
		MHD_destroy_response(fixed);
	json_decref(body);
	return 0;
}
