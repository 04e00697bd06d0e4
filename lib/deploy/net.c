/*
 * net.c - the Kubernetes launcher's first step: wait until every worker's
 * sshd accepts a TCP connection, so mpirun does not start before its hosts
 * can take it.  Resolving is not enough: the headless Service publishes
 * the pods' names as soon as they are scheduled (publishNotReadyAddresses),
 * while their init container still stages the data, and one ssh refused
 * then fails the job (the launcher is not retried).
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "deploy/deploy_int.h"
#include "util/banned.h"

/* Most one connection attempt may take. */
#define CONNECT_TIMEOUT_MS 2000
/* Between two rounds of attempts. */
#define RETRY_NS 500000000L

/* Whether a TCP connection to a is accepted now; why (n bytes) says what
 * happened when not. */
static bool connect_one(const struct addrinfo *a, char *why, size_t n)
{
	int fd, e = 0, rc;
	socklen_t elen = sizeof(e);
	struct pollfd p;

	fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    a->ai_protocol);
	if (fd < 0) {
		snprintf(why, n, "socket: %s", strerror(errno));
		return false;
	}
	if (connect(fd, a->ai_addr, a->ai_addrlen) == 0)
		goto done;
	if (errno != EINPROGRESS) {
		e = errno;
		goto done;
	}
	p.fd = fd;
	p.events = POLLOUT;
	rc = poll(&p, 1, CONNECT_TIMEOUT_MS);
	if (rc == 0)
		e = ETIMEDOUT;
	else if (rc < 0)
		e = errno;
	else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &elen))
		e = errno;
done:
	close(fd);
	if (e)
		snprintf(why, n, "%s", strerror(e));
	return e == 0;
}

/* Whether host accepts a TCP connection on port now (any of its
 * addresses); why (n bytes) says what happened when not. */
static bool accepts(const char *host, const char *port, char *why, size_t n)
{
	struct addrinfo hints = {0}, *res = NULL;
	bool ok = false;
	int rc;

	hints.ai_socktype = SOCK_STREAM;
	if ((rc = getaddrinfo(host, port, &hints, &res))) {
		snprintf(why, n, "it does not resolve (%s)", gai_strerror(rc));
		return false;
	}
	for (const struct addrinfo *a = res; a && !ok; a = a->ai_next)
		ok = connect_one(a, why, n);
	freeaddrinfo(res);
	return ok;
}

/* Split a hostfile word, HOST or HOST:PORT, into host and port (the
 * default when it names none); false when the port is not one. */
static bool host_port(const char *word, char *host, size_t hn, char *port,
		      size_t pn)
{
	const char *colon = strchr(word, ':');
	size_t len = strlen(word);
	long v = 0;

	snprintf(port, pn, "%d", HP__K8S_SSH_PORT);
	if (!colon || strchr(colon + 1, ':')) {
		/* no port (or an IPv6 address, which has more colons) */
		if (len >= hn)
			return false;
		memcpy(host, word, len + 1);
		return true;
	}
	if (!colon[1] || colon == word || strlen(colon + 1) > 5)
		return false;
	for (const char *q = colon + 1; *q; q++) {
		if (*q < '0' || *q > '9')
			return false;
		v = v * 10 + (*q - '0');
	}
	if (v < 1 || v > 65535 || (size_t)(colon - word) >= hn)
		return false;
	snprintf(host, hn, "%.*s", (int)(colon - word), word);
	snprintf(port, pn, "%ld", v);
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
		char word[272], host[256], port[8], why[160] = "";
		size_t n = strcspn(p, " \t\n");
		if (n == 0 || n >= sizeof(word) || *p == '#') {
			p += strcspn(p, "\n");
			p += *p != '\0';
			continue;
		}
		memcpy(word, p, n);
		word[n] = '\0';
		if (!host_port(word, host, sizeof(host), port, sizeof(port))) {
			rc = hp_error_set(err, HP_EINVAL,
					  "'%s' in '%s' is not HOST or "
					  "HOST:PORT",
					  word, hostfile);
			free(text);
			return rc;
		}
		while (!accepts(host, port, why, sizeof(why))) {
			struct timespec ts = {0, RETRY_NS};
			if (hp_now_s() > until) {
				rc = hp_error_set(err, HP_EIO,
						  "worker '%s' did not accept "
						  "a connection on port %s "
						  "within %.0f s: %s",
						  host, port, timeout_s, why);
				free(text);
				return rc;
			}
			nanosleep(&ts, NULL);
		}
		p += strcspn(p, "\n");
		p += *p != '\0';
	}
	free(text);
	return 0;
}
