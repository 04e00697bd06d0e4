/*
 * main.c - hetpoold: options, start-up (the context, the store, the first
 * admin token from HETPOOL_ADMIN_TOKEN, the pool file, this host, the
 * deployment context, the scheduler, the server), and a clean stop on
 * SIGTERM or SIGINT: no new connections, requests in flight finish, the
 * scheduler stops, the database is closed.  Jobs keep running (their
 * supervisors are processes of their own) and are followed again at the
 * next start.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hetpoold.h"

static const char usage[] =
    "usage: hetpoold --db PATH [--listen HOST:PORT] [--pool POOL.json]\n"
    "                [--register-self] [--tls-cert FILE --tls-key FILE]\n"
    "                [--insecure] [--backend B] [options]\n"
    "\n"
    "The pool as a web service: an HTTP JSON API (docs/daemon.md; the "
    "OpenAPI\n"
    "document is served at /v1/openapi.json) over a SQLite store that "
    "holds\n"
    "the pool's nodes and devices, what is allocated to which job, "
    "models,\n"
    "measurements, jobs and tokens.  Jobs are planned by the "
    "recommender on\n"
    "the devices free now, given their devices in one transaction, and "
    "run\n"
    "through the deployment backend; what cannot start waits in the "
    "queue.\n"
    "\n"
    "  --db PATH            the SQLite database (made when missing)\n"
    "  --listen HOST:PORT   where to listen (default 127.0.0.1:8080; port "
    "0: any\n"
    "                       free port, said in the log and --port-file)\n"
    "  --pool FILE          load this pool file at start (nodes added or\n"
    "                       updated; none removed)\n"
    "  --register-self      register this host with its detected devices\n"
    "  --tls-cert FILE      serve HTTPS with this certificate (PEM) ...\n"
    "  --tls-key FILE       ... and key (PEM)\n"
    "  --insecure           allow a non-loopback address without TLS\n"
    "  --backend B          local (default: this host only), mpi, slurm "
    "or\n"
    "                       kubernetes\n"
    "  --no-apply           kubernetes: write the manifests, do not apply "
    "them\n"
    "  --k8s-volume CLAIM   kubernetes: the PersistentVolumeClaim the jobs' "
    "outputs\n"
    "                       go to (a cluster gets jobs only with one)\n"
    "  --jobs-dir DIR       job folders (default: DB.d/jobs)\n"
    "  --data-dir DIR       model files and refit data (default: "
    "DB.d/data)\n"
    "  --hetpool PATH       the hetpool program the jobs' helpers run as\n"
    "                       (default: beside hetpoold)\n"
    "  --trainer PATH       hetpool-train (default $HETPOOL_TRAINER, "
    "else beside\n"
    "                       hetpoold)\n"
    "  --catalog FILE       device catalog (default data/devices.csv)\n"
    "  --estimator FILE     estimator (default: the last refit stored, "
    "else\n"
    "                       data/estimators/default.json)\n"
    "  --threads N          request threads (default: the CPUs, at least "
    "2)\n"
    "  --max-connections N  connections at once (default 256)\n"
    "  --idle-timeout S     close a connection idle this long (default "
    "30)\n"
    "  --request-timeout S  close a connection whose client takes longer "
    "to send\n"
    "                       a request (default 30)\n"
    "  --max-body BYTES     largest JSON body (default 1048576)\n"
    "  --max-upload BYTES   largest model, CSV or pool upload (default "
    "67108864)\n"
    "  --poll S             how often started jobs are looked at (default "
    "1)\n"
    "  --keep-ended D       remove jobs (and their folders) D days after "
    "they\n"
    "                       ended (default 0: keep them; DELETE "
    "/v1/jobs/ID removes\n"
    "                       one)\n"
    "  --port-file FILE     write the port listened on once listening\n"
    "  --log-level L        error, warn, info (default) or debug\n"
    "  --no-sync            the store commits with synchronous=NORMAL "
    "(faster;\n"
    "                       a machine crash may lose the last commits)\n"
    "  --no-cache           read every job from the store for GET "
    "/v1/jobs/ID (by\n"
    "                       default a job's document is kept until it "
    "changes;\n"
    "                       for measurements)\n"
    "  --web-dir DIR        the dashboard's built files, served at / "
    "(default:\n"
    "                       ../web beside hetpoold, as the build makes "
    "it)\n"
    "  --routes             print the routes and exit\n"
    "  --version            print the version and exit\n"
    "\n"
    "environment: HETPOOL_ADMIN_TOKEN (16 to 256 of A-Z a-z 0-9 - . _ ~ + "
    "/)\n"
    "makes sure an admin token with that text exists; it is removed from "
    "the\n"
    "environment before anything starts.  Tokens are stored only as "
    "SHA-256\n"
    "hashes.\n"
    "\n"
    "examples:\n"
    "  HETPOOL_ADMIN_TOKEN=$(openssl rand -hex 32) hetpoold --db pool.db "
    "\\\n"
    "      --pool data/pools/sample.json --register-self\n"
    "  hetpoold --db /var/lib/hetpool/pool.db --listen 0.0.0.0:8443 \\\n"
    "      --tls-cert cert.pem --tls-key key.pem --backend slurm\n";

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
	char msg[1024], esc[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "hetpoold: %s\n", hp_str_escape(msg, esc, sizeof(esc)));
	return 2;
}

static int num(const char *opt, const char *s, double lo, double hi,
	       double *out)
{
	if (hp_parse_double(s, out) || !(*out >= lo) || *out > hi)
		return fail("%s '%s': give a number from %g to %g", opt, s, lo,
			    hi);
	return 0;
}

/* "HOST:PORT", "[V6]:PORT" */
static int parse_listen(const char *s, struct hd_config *c)
{
	const char *colon = strrchr(s, ':');
	int64_t port;
	size_t n;

	if (!colon || hp_parse_i64(colon + 1, 0, 65535, &port))
		return fail("--listen '%s': give HOST:PORT", s);
	n = (size_t)(colon - s);
	if (n >= 2 && s[0] == '[' && s[n - 1] == ']') {
		s++;
		n -= 2;
	}
	if (n == 0 || n >= sizeof(c->listen_host))
		return fail("--listen '%s': give HOST:PORT", s);
	memcpy(c->listen_host, s, n);
	c->listen_host[n] = '\0';
	c->port = (int)port;
	return 0;
}

/* dir of /proc/self/exe + name, when it exists. */
static void beside_self(const char *name, char *buf, size_t n)
{
	char self[PATH_MAX], *slash;
	ssize_t k = readlink("/proc/self/exe", self, sizeof(self) - 1);

	buf[0] = '\0';
	if (k <= 0)
		return;
	self[k] = '\0';
	if (!(slash = strrchr(self, '/')))
		return;
	*slash = '\0';
	if (snprintf(buf, n, "%s/%s", self, name) >= (int)n ||
	    access(buf, X_OK))
		buf[0] = '\0';
}

static char *absolute(const char *p)
{
	char cwd[PATH_MAX], buf[PATH_MAX * 2];

	if (p[0] == '/')
		return hp_strdup(p);
	if (!getcwd(cwd, sizeof(cwd)))
		return NULL;
	if (snprintf(buf, sizeof(buf), "%s/%s", cwd, p) >= (int)sizeof(buf))
		return NULL;
	return hp_strdup(buf);
}

enum {
	O_DB = 256,
	O_LISTEN,
	O_POOL,
	O_SELF,
	O_CERT,
	O_KEY,
	O_INSECURE,
	O_BACKEND,
	O_NOAPPLY,
	O_K8S_VOLUME,
	O_JOBS,
	O_DATA,
	O_HETPOOL,
	O_TRAINER,
	O_CATALOG,
	O_ESTIMATOR,
	O_THREADS,
	O_MAXCONN,
	O_IDLE,
	O_REQTO,
	O_MAXBODY,
	O_MAXUP,
	O_POLL,
	O_KEEP_ENDED,
	O_PORTFILE,
	O_LOGLEVEL,
	O_NOSYNC,
	O_NOCACHE,
	O_WEBDIR,
	O_ROUTES,
	O_VERSION,
	O_HELP,
};

static const struct option longopts[] = {
    {"db", required_argument, NULL, O_DB},
    {"listen", required_argument, NULL, O_LISTEN},
    {"pool", required_argument, NULL, O_POOL},
    {"register-self", no_argument, NULL, O_SELF},
    {"tls-cert", required_argument, NULL, O_CERT},
    {"tls-key", required_argument, NULL, O_KEY},
    {"insecure", no_argument, NULL, O_INSECURE},
    {"backend", required_argument, NULL, O_BACKEND},
    {"no-apply", no_argument, NULL, O_NOAPPLY},
    {"k8s-volume", required_argument, NULL, O_K8S_VOLUME},
    {"jobs-dir", required_argument, NULL, O_JOBS},
    {"data-dir", required_argument, NULL, O_DATA},
    {"hetpool", required_argument, NULL, O_HETPOOL},
    {"trainer", required_argument, NULL, O_TRAINER},
    {"catalog", required_argument, NULL, O_CATALOG},
    {"estimator", required_argument, NULL, O_ESTIMATOR},
    {"threads", required_argument, NULL, O_THREADS},
    {"max-connections", required_argument, NULL, O_MAXCONN},
    {"idle-timeout", required_argument, NULL, O_IDLE},
    {"request-timeout", required_argument, NULL, O_REQTO},
    {"max-body", required_argument, NULL, O_MAXBODY},
    {"max-upload", required_argument, NULL, O_MAXUP},
    {"poll", required_argument, NULL, O_POLL},
    {"keep-ended", required_argument, NULL, O_KEEP_ENDED},
    {"port-file", required_argument, NULL, O_PORTFILE},
    {"log-level", required_argument, NULL, O_LOGLEVEL},
    {"no-sync", no_argument, NULL, O_NOSYNC},
    {"no-cache", no_argument, NULL, O_NOCACHE},
    {"web-dir", required_argument, NULL, O_WEBDIR},
    {"routes", no_argument, NULL, O_ROUTES},
    {"version", no_argument, NULL, O_VERSION},
    {"help", no_argument, NULL, O_HELP},
    {NULL, 0, NULL, 0},
};

static const char *port_file;

static int parse_args(int argc, char **argv, struct hd_config *c)
{
	static const char *const levels[] = {"error", "warn", "info", "debug"};
	double v;
	int o, rc;

	snprintf(c->listen_host, sizeof(c->listen_host), "127.0.0.1");
	c->port = 8080;
	c->backend = HP_BACKEND_LOCAL;
	c->threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (c->threads < 2)
		c->threads = 2;
	c->max_connections = 256;
	c->idle_timeout_s = 30;
	c->request_timeout_s = 30;
	c->max_body = HP_API_MAX_BODY;
	c->max_upload = 64u << 20;
	c->poll_s = 1;
	c->shutdown_grace_s = 10;
	c->log_level = HP_LOG_INFO;
	opterr = 0;
	while ((o = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
		rc = 0;
		switch (o) {
		case O_DB:
			c->db = optarg;
			break;
		case O_LISTEN:
			rc = parse_listen(optarg, c);
			break;
		case O_POOL:
			c->pool = optarg;
			break;
		case O_SELF:
			c->register_self = true;
			break;
		case O_CERT:
			c->tls_cert = optarg;
			break;
		case O_KEY:
			c->tls_key = optarg;
			break;
		case O_INSECURE:
			c->insecure = true;
			break;
		case O_BACKEND:
			if (hp_backend_parse(optarg, &c->backend))
				rc = fail("--backend '%s': give local, mpi, "
					  "slurm or kubernetes",
					  optarg);
			break;
		case O_NOAPPLY:
			c->no_apply = true;
			break;
		case O_K8S_VOLUME:
			c->k8s_volume = optarg;
			break;
		case O_JOBS:
			c->jobs_dir = optarg;
			break;
		case O_DATA:
			c->data_dir = optarg;
			break;
		case O_HETPOOL:
			c->hetpool = optarg;
			break;
		case O_TRAINER:
			c->trainer = optarg;
			break;
		case O_CATALOG:
			c->catalog = optarg;
			break;
		case O_ESTIMATOR:
			c->estimator = optarg;
			break;
		case O_THREADS:
			if (!(rc = num("--threads", optarg, 1, 256, &v)))
				c->threads = (int)v;
			break;
		case O_MAXCONN:
			if (!(rc = num("--max-connections", optarg, 1, 100000,
				       &v)))
				c->max_connections = (int)v;
			break;
		case O_IDLE:
			rc = num("--idle-timeout", optarg, 1, 86400,
				 &c->idle_timeout_s);
			break;
		case O_REQTO:
			rc = num("--request-timeout", optarg, 0.1, 86400,
				 &c->request_timeout_s);
			break;
		case O_MAXBODY:
			if (!(rc = num("--max-body", optarg, 1024,
				       HP_API_BODY_CAP, &v)))
				c->max_body = (size_t)v;
			break;
		case O_MAXUP:
			if (!(rc = num("--max-upload", optarg, 1024,
				       (double)(1u << 31), &v)))
				c->max_upload = (size_t)v;
			break;
		case O_POLL:
			rc = num("--poll", optarg, 0.05, 3600, &c->poll_s);
			break;
		case O_KEEP_ENDED:
			rc = num("--keep-ended", optarg, 0, 36500,
				 &c->keep_ended_s);
			c->keep_ended_s *= 86400;
			break;
		case O_PORTFILE:
			port_file = optarg;
			break;
		case O_LOGLEVEL:
			rc = -1;
			for (int i = 0; i < 4; i++)
				if (!strcmp(optarg, levels[i])) {
					c->log_level = (enum hp_log_level)i;
					rc = 0;
				}
			if (rc)
				rc = fail("--log-level '%s': give error, warn, "
					  "info or debug",
					  optarg);
			break;
		case O_NOSYNC:
			c->no_sync = true;
			break;
		case O_NOCACHE:
			hd_jobdoc_disable();
			break;
		case O_WEBDIR:
			c->web_dir = optarg;
			break;
		case O_ROUTES:
			for (int i = 0; i < hd_nroutes; i++) {
				static const char *const roles[] = {
				    "reader", "user", "admin"};
				printf("%-6s %-28s %-6s %s\n",
				       hd_routes[i].method,
				       hd_routes[i].pattern,
				       hd_routes[i].role == HD_PUBLIC
					   ? "-"
					   : roles[hd_routes[i].role],
				       hd_routes[i].summary);
			}
			return -1;
		case O_VERSION:
			printf("hetpoold %s\n", hp_version());
			return -1;
		case O_HELP:
			fputs(usage, stdout);
			return -1;
		case ':':
			return fail("%s needs a value; see 'hetpoold --help'",
				    argv[optind - 1]);
		default:
			return fail("unknown option '%s'; see 'hetpoold "
				    "--help'",
				    argv[optind - 1]);
		}
		if (rc)
			return rc;
	}
	if (optind < argc)
		return fail("unexpected argument '%s'; see 'hetpoold --help'",
			    argv[optind]);
	if (!c->db)
		return fail("give --db PATH (the SQLite database)");
	if (!c->tls_cert != !c->tls_key)
		return fail("give --tls-cert and --tls-key together");
	return 0;
}

/* The first admin token, from the environment; the variable is removed
 * so that no job process inherits it. */
static int admin_token(struct hd *d)
{
	const char *env = getenv("HETPOOL_ADMIN_TOKEN");
	struct hp_error err = {0};
	char *tok;
	int64_t id;
	int rc;

	if (!env) {
		struct hp_store_token *ts = NULL;
		int n = 0, active = 0;
		if (!hp_store_token_list(d->store, &ts, &n, NULL))
			for (int i = 0; i < n; i++)
				active += ts[i].revoked_s <= 0;
		hp_store_token_list_free(ts, n);
		if (!active)
			hd_log(HP_LOG_WARN,
			       "no token in force: every route but /healthz, "
			       "/metrics and /v1/openapi.json will answer "
			       "401; set HETPOOL_ADMIN_TOKEN",
			       NULL);
		return 0;
	}
	/* one no request could present would lock the operator out */
	if (!hp_api_token_ok(env))
		return fail("HETPOOL_ADMIN_TOKEN: an HTTP bearer token cannot "
			    "carry it; give 16-%d of the characters A-Z a-z "
			    "0-9 - . _ ~ + / (e.g. openssl rand -hex 32)",
			    HP_API_MAX_TOKEN);
	if (!(tok = hp_strdup(env)))
		return fail("out of memory");
	unsetenv("HETPOOL_ADMIN_TOKEN");
	rc = hp_store_token_ensure(d->store, "admin", HP_ROLE_ADMIN, tok, &id,
				   &err);
	explicit_bzero(tok, strlen(tok));
	free(tok);
	if (rc)
		return fail("HETPOOL_ADMIN_TOKEN: %s", err.msg);
	hd_log(HP_LOG_INFO, "admin token from HETPOOL_ADMIN_TOKEN", "token_id",
	       "i:", (long long)id, NULL);
	return 0;
}

static int load_pool(struct hd *d)
{
	struct hp_error err = {0};
	const struct hp_snap *snap = hp_ctx_acquire(d->ctx);
	struct hp_pool *p =
	    hp_ctx_load_pool(d->cfg.pool, hp_snap_catalog(snap), &err);
	int rc = 0;

	hp_snap_release(snap);
	if (!p)
		return fail("--pool: %s", err.msg);
	{
		char msg[400];
		if (hd_pool_bad_name(p, msg, sizeof(msg)) >= 0) {
			rc = fail("--pool '%s': %s", d->cfg.pool, msg);
			hp_pool_free(p);
			return rc;
		}
	}
	if (hp_store_pool_load(d->store, p, false, &err))
		rc = fail("--pool '%s': %s", d->cfg.pool, err.msg);
	else
		hd_log(HP_LOG_INFO, "pool loaded", "file", "s:", d->cfg.pool,
		       "nodes", "i:", (long long)p->n, NULL);
	hp_pool_free(p);
	return rc;
}

static int register_self(struct hd *d)
{
	struct hp_error err = {0};
	const struct hp_snap *snap = hp_ctx_acquire(d->ctx);
	char *text = hp_deploy_host_pool(hp_snap_catalog(snap), &err);
	struct hp_pool *p = NULL;
	int rc = 0;

	if (text)
		p = hp_pool_parse(text, strlen(text), "this host",
				  hp_snap_catalog(snap), &err);
	hp_snap_release(snap);
	if (!p || p->n != 1) {
		rc = fail("--register-self: %s", err.msg);
		goto out;
	}
	if (hp_store_node_put(d->store, &p->nodes[0], text, true, NULL, &err))
		rc = fail("--register-self: %s", err.msg);
	else
		hd_log(HP_LOG_INFO, "this host registered", "node",
		       "s:", p->nodes[0].name, "device_kinds",
		       "i:", (long long)p->nodes[0].ndevs, NULL);
out:
	hp_pool_free(p);
	free(text);
	return rc;
}

/* The estimator of the last refit, unless one is given. */
static void stored_estimator(struct hd *d)
{
	struct hp_store_estimator se = {0};
	struct hp_error err = {0};
	struct hp_estimator *est;

	if (d->cfg.estimator ||
	    hp_store_estimator_current(d->store, &se, NULL) || !se.body)
		goto out;
	if (!(est = hp_estimator_loads(se.body, strlen(se.body), &err))) {
		hd_log(HP_LOG_WARN,
		       "the stored estimator cannot be read; using the "
		       "shipped one",
		       "error", "s:", err.msg, NULL);
		goto out;
	}
	if (!hp_ctx_swap_estimator(d->ctx, est, NULL, &err))
		hd_log(HP_LOG_INFO, "estimator of the last refit in use",
		       "stored_id", "i:", (long long)se.id, NULL);
out:
	hp_store_estimator_release(&se);
}

static char *dirs[5]; /* what was allocated for the config */

/* The dashboard's folder: --web-dir (which must hold index.html), else
 * ../web beside hetpoold when it holds one (the build's BUILD/web), else
 * none: "/" then answers how to build it. */
static int find_web_dir(struct hd_config *c)
{
	char self[PATH_MAX], buf[PATH_MAX + 32], *slash;
	ssize_t k;

	if (c->web_dir) {
		snprintf(buf, sizeof(buf), "%s/index.html", c->web_dir);
		if (access(buf, R_OK))
			return fail(
			    "--web-dir '%s': no index.html there (build "
			    "the dashboard with 'make')",
			    c->web_dir);
		if (!(c->web_dir = dirs[4] = absolute(c->web_dir)))
			return fail("out of memory");
		return 0;
	}
	k = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (k <= 0)
		return 0;
	self[k] = '\0';
	if (!(slash = strrchr(self, '/')))
		return 0;
	*slash = '\0';
	snprintf(buf, sizeof(buf), "%s/../web/index.html", self);
	if (access(buf, R_OK))
		return 0;
	snprintf(buf, sizeof(buf), "%s/../web", self);
	if (!(c->web_dir = dirs[4] = realpath(buf, NULL)))
		return fail("out of memory");
	return 0;
}

/* DB.d, when this run made it (removed again if the store is refused) */
static char state_dir[PATH_MAX + 8];
static bool made_state_dir;

/*
 * One hetpoold per database: an exclusive flock on DB.d/lock, held until
 * the process ends (the descriptor is close-on-exec: no job's supervisor
 * keeps it).  The file holds the holder's PID for a second one to name.
 */
static int lock_db(const char *db)
{
	char path[PATH_MAX + 16], text[32];
	struct stat st;
	int64_t pid = 0;
	ssize_t k;
	int fd;

	snprintf(state_dir, sizeof(state_dir), "%s.d", db);
	if (stat(state_dir, &st)) {
		if (hp_mkdirs(state_dir, 0700, NULL))
			return fail("cannot make '%s': %s", state_dir,
				    strerror(errno));
		made_state_dir = true;
	}
	snprintf(path, sizeof(path), "%s/lock", state_dir);
	if ((fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0)
		return fail("cannot open '%s': %s", path, strerror(errno));
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		if (errno != EWOULDBLOCK) {
			int e = errno;
			close(fd);
			return fail("cannot lock '%s': %s", path, strerror(e));
		}
		k = pread(fd, text, sizeof(text) - 1, 0);
		text[k > 0 ? k : 0] = '\0';
		text[strcspn(text, "\n")] = '\0';
		close(fd);
		if (!hp_parse_i64(text, 1, INT32_MAX, &pid))
			return fail("database '%s' is in use by another "
				    "hetpoold (pid %lld): one hetpoold per "
				    "database",
				    db, (long long)pid);
		return fail("database '%s' is in use by another hetpoold (it "
			    "holds '%s'): one hetpoold per database",
			    db, path);
	}
	k = snprintf(text, sizeof(text), "%lld\n", (long long)getpid());
	if (ftruncate(fd, 0) || pwrite(fd, text, (size_t)k, 0) != k)
		hd_log(HP_LOG_WARN, "cannot write the lock file", "path",
		       "s:", path, "error", "s:", strerror(errno), NULL);
	return 0; /* fd stays open: the lock lives with the process */
}

/* A refused store leaves no DB.d behind that this run made. */
static void unmake_state_dir(void)
{
	char path[PATH_MAX + 16];

	if (!made_state_dir)
		return;
	snprintf(path, sizeof(path), "%s/lock", state_dir);
	unlink(path);
	rmdir(state_dir);
}

/* The jobs and data folders, made once the store has opened. */
static int make_dirs(const struct hd_config *c)
{
	char buf[PATH_MAX + 32];

	snprintf(buf, sizeof(buf), "%s/models", c->data_dir);
	if (hp_mkdirs(c->jobs_dir, 0700, NULL) || hp_mkdirs(buf, 0700, NULL))
		return fail("cannot make '%s' or '%s': %s", c->jobs_dir, buf,
			    strerror(errno));
	return 0;
}

/*
 * A database that is missing while its own jobs folder (DB.d/jobs) holds
 * jobs was deleted, or --db names the wrong file (a typo, a volume not
 * mounted): starting would make an empty one and leave those jobs
 * unknown.  Refused; the jobs folder given by --jobs-dir may be shared
 * (the CLI's), so only the default one counts.
 */
static int missing_db(const char *db, const char *jobs, bool jobs_default)
{
	struct stat st;
	struct dirent *e;
	DIR *dir;
	int n = 0;

	if (!jobs_default || !stat(db, &st) || errno != ENOENT ||
	    !(dir = opendir(jobs)))
		return 0;
	while ((e = readdir(dir)))
		n += hp_job_id_valid(e->d_name);
	closedir(dir);
	if (!n)
		return 0;
	return fail("database '%s' is missing, but its jobs folder '%s' "
		    "holds %d job%s: restore the database (docs/store.md, "
		    "\"Backup and restore\"), or move that folder away to "
		    "start an empty one",
		    db, jobs, n, n == 1 ? "" : "s");
}

static int prepare(struct hd *d)
{
	struct hd_config *c = &d->cfg;
	char buf[PATH_MAX + 32], hp[PATH_MAX], tr[PATH_MAX];
	bool jobs_default = !c->jobs_dir;
	char *db;

	if (!(db = absolute(c->db)))
		return fail("--db '%s': path too long", c->db);
	dirs[0] = db;
	snprintf(buf, sizeof(buf), "%s.d/jobs", db);
	dirs[1] = absolute(c->jobs_dir ? c->jobs_dir : buf);
	snprintf(buf, sizeof(buf), "%s.d/data", db);
	dirs[2] = absolute(c->data_dir ? c->data_dir : buf);
	if (!dirs[1] || !dirs[2])
		return fail("out of memory");
	c->jobs_dir = dirs[1];
	c->data_dir = dirs[2];
	if (!c->hetpool) {
		beside_self("hetpool", hp, sizeof(hp));
		if (!hp[0])
			return fail("no hetpool program beside hetpoold; give "
				    "--hetpool PATH");
		c->hetpool = dirs[3] = hp_strdup(hp);
	}
	if (find_web_dir(c))
		return 2; /* said */
	if (!c->trainer) {
		const char *env = getenv("HETPOOL_TRAINER");
		if (env && *env) {
			c->trainer = env;
		} else {
			beside_self("hetpool-train", tr, sizeof(tr));
			c->trainer = tr[0] ? hp_strdup(tr) : "hetpool-train";
		}
	}
	if (missing_db(db, c->jobs_dir, jobs_default))
		return 2; /* said */
	return lock_db(db);
}

int main(int argc, char **argv)
{
	static struct hd d;
	struct hp_ctx_options co = {0};
	struct hp_store_options so = {0};
	struct hp_deploy_config dc = {0};
	struct hp_store_node self = {0};
	struct hp_error err = {0};
	sigset_t sigs;
	int rc, sig = 0;

	if ((rc = parse_args(argc, argv, &d.cfg)))
		return rc < 0 ? 0 : rc;
	hd_log_init(d.cfg.log_level);
	/* Signals go to the main thread alone (sigwait); every thread made
	 * from here on inherits the mask. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);
	if ((rc = prepare(&d)))
		return rc;
	{
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		d.started_s = (double)ts.tv_sec + ts.tv_nsec / 1e9;
	}
	pthread_mutex_init(&d.cache_mu, NULL);
	pthread_mutex_init(&d.refit.mu, NULL);
	if (hd_server_prepare(&d, &err)) {
		unmake_state_dir();
		return fail("%s", err.msg);
	}
	co.catalog = d.cfg.catalog;
	co.estimator = d.cfg.estimator;
	if (!(d.ctx = hp_ctx_new(&co, &err))) {
		unmake_state_dir();
		return fail("%s", err.msg);
	}
	so.max_connections = d.cfg.threads + 4;
	so.no_sync = d.cfg.no_sync;
	{
		/* the database and its -wal and -shm files hold the tokens'
		 * hashes and the uploaded models: the owner's alone */
		mode_t old = umask(077);
		d.store = hp_store_open(dirs[0], &so, &err);
		umask(old);
	}
	if (!d.store) {
		unmake_state_dir();
		rc = fail("%s", err.msg);
		goto out;
	}
	if ((rc = make_dirs(&d.cfg)))
		goto out;
	if ((rc = admin_token(&d)))
		goto out;
	stored_estimator(&d);
	if (d.cfg.pool && (rc = load_pool(&d)))
		goto out;
	if (d.cfg.register_self && (rc = register_self(&d)))
		goto out;
	if (!hp_store_node_self(d.store, &self, NULL)) {
		snprintf(d.self_name, sizeof(d.self_name), "%s",
			 self.pool.name);
		hp_store_node_release(&self);
	} else if (d.cfg.backend == HP_BACKEND_LOCAL) {
		hd_log(HP_LOG_WARN,
		       "the local backend runs jobs on this host's node, and "
		       "none is registered: no job can start (give "
		       "--register-self, or another --backend)",
		       NULL);
	}
	dc.jobs_dir = d.cfg.jobs_dir;
	dc.hetpool = d.cfg.hetpool;
	if (!(d.deploy = hp_deploy_new(&dc, &err))) {
		rc = fail("%s", err.msg);
		goto out;
	}
	if (!(d.auth = hd_auth_new(d.store)) ||
	    !(d.metrics = hd_metrics_new(hd_nroutes))) {
		rc = fail("out of memory");
		goto out;
	}
	if (hd_sched_start(&d, &err)) {
		rc = fail("%s", err.msg);
		goto out;
	}
	if (hd_server_start(&d, &err)) {
		rc = fail("%s", err.msg);
		goto out;
	}
	{
		int port = hd_server_port(&d);
		hd_log(HP_LOG_INFO, "listening", "version", "s:", hp_version(),
		       "host", "s:", d.cfg.listen_host, "port",
		       "i:", (long long)port, "tls",
		       "b:", (long long)(d.cfg.tls_cert != NULL), "db",
		       "s:", dirs[0], "backend",
		       "s:", hp_backend_name(d.cfg.backend), "self",
		       "s:", d.self_name, "threads",
		       "i:", (long long)d.cfg.threads, "web_dir",
		       "s:", d.cfg.web_dir ? d.cfg.web_dir : "", NULL);
		if (port_file) {
			/* whole, so a script polling it never reads half */
			struct hp_error perr = {0};
			char text[16];
			int n = snprintf(text, sizeof(text), "%d\n", port);
			if (hp_write_file_atomic(port_file, text, (size_t)n,
						 0666, &perr))
				hd_log(HP_LOG_WARN,
				       "cannot write the port file", "error",
				       "s:", perr.msg, NULL);
		}
	}
	for (;;) {
		if (sigwait(&sigs, &sig))
			continue;
		if (sig == SIGTERM || sig == SIGINT)
			break;
		hd_log(HP_LOG_INFO, "SIGHUP ignored", NULL);
	}
	hd_log(HP_LOG_INFO, "stopping", "signal",
	       "s:", sig == SIGTERM ? "SIGTERM" : "SIGINT", "in_flight",
	       "i:", (long long)atomic_load(&d.inflight), NULL);
	rc = 0;
out:
	hd_server_stop(&d);
	hd_sched_stop(&d);
	pthread_mutex_lock(&d.refit.mu);
	if (d.refit.running)
		hd_log(HP_LOG_INFO, "waiting for the refit to end", NULL);
	pthread_mutex_unlock(&d.refit.mu);
	hd_refit_join(&d);
	for (int i = 0; i < (int)(sizeof(d.models) / sizeof(d.models[0])); i++)
		hd_model_put(d.models[i]);
	hd_pool_put(d.pool_cache);
	hd_auth_free(d.auth);
	hd_metrics_free(d.metrics);
	hp_deploy_free(d.deploy);
	hp_store_close(d.store);
	hp_ctx_free(d.ctx);
	if (!rc)
		hd_log(HP_LOG_INFO, "stopped: the database is closed", NULL);
	for (int i = 0; i < 5; i++)
		free(dirs[i]);
	return rc;
}
