/*
 * net.c - the Kubernetes launcher's first step: wait until the workers'
 * host names resolve (their headless Service publishes them as the pods
 * come up), so mpirun does not start before its hosts exist.
 */
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "deploy/deploy_int.h"
#include "util/banned.h"

static bool resolves(const char *host)
{
	struct addrinfo hints = {0}, *res = NULL;

	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(host, NULL, &hints, &res))
		return false;
	freeaddrinfo(res);
	return true;
}

int hp_deploy_wait_hosts(const char *hostfile, double timeout_s,
			 struct hp_error *err)
{
	double until = hp_now_s() + timeout_s;
	char *text, *p;
	size_t len;
	int rc;

	if ((rc = hp_read_file(hostfile, 16u << 20, &text, &len, err)))
		return rc;
	for (p = text; *p;) {
		char host[256];
		size_t n = strcspn(p, " \t\n");
		if (n == 0 || n >= sizeof(host)) {
			p += n + (p[n] != '\0');
			continue;
		}
		memcpy(host, p, n);
		host[n] = '\0';
		while (!resolves(host)) {
			struct timespec ts = {0, 500000000};
			if (hp_now_s() > until) {
				free(text);
				return hp_error_set(err, HP_EIO,
						    "host '%s' did not resolve "
						    "within %.0f s",
						    host, timeout_s);
			}
			nanosleep(&ts, NULL);
		}
		p += strcspn(p, "\n");
		if (*p)
			p++;
	}
	free(text);
	return 0;
}
