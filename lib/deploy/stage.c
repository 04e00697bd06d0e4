/*
 * stage.c - data staging, a step of every plan that reads a dataset: at
 * submit time the dataset's files are found (the Debian package
 * dataset-fashion-mnist through dpkg-query, or a folder the user names)
 * and checksummed into a manifest (JOBDIR/stage.json); before the workers
 * start, each node copies them into a node-local folder and verifies every
 * copy against the manifest.  The folder is named after the manifest's own
 * checksum, so jobs on the same data share one verified copy.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "deploy/deploy_int.h"
#include "util/banned.h"

const char *const hp__idx_names[4] = {
    "train-images-idx3-ubyte",
    "train-labels-idx1-ubyte",
    "t10k-images-idx3-ubyte",
    "t10k-labels-idx1-ubyte",
};

/* Most files a manifest may name. */
#define STAGE_MAX_FILES 16

static bool is_file(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

/* In the text of `dpkg-query -L`, the installed path of name (or
 * name.gz); false when it is not there. */
static bool find_listed(const char *list, const char *name, char *out, size_t n)
{
	const char *p = list;
	char gz[64];

	snprintf(gz, sizeof(gz), "%s.gz", name);
	while (*p) {
		const char *end = strchr(p, '\n');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char line[HP_DEPLOY_PATH_MAX];
		if (len < sizeof(line)) {
			memcpy(line, p, len);
			line[len] = '\0';
			if ((!strcmp(base_name(line), name) ||
			     !strcmp(base_name(line), gz)) &&
			    is_file(line)) {
				snprintf(out, n, "%s", line);
				return true;
			}
		}
		p = end ? end + 1 : p + len;
	}
	return false;
}

static int locate(struct hp_deploy *d, const char *data,
		  char src[4][HP_DEPLOY_PATH_MAX], struct hp_error *err)
{
	if (!strcmp(data, "fashion-mnist")) {
		char *argv[] = {d->dpkg_query, "-L", "dataset-fashion-mnist",
				NULL};
		struct hp_buf out, eout;
		char line[256];
		int status, rc;

		hp_buf_init(&out, HP_CMD_OUT_MAX);
		hp_buf_init(&eout, HP_CMD_OUT_MAX);
		rc = hp__run(argv, d->cmd_timeout_s, &out, &eout, &status, err);
		if (!rc && status != 0)
			rc = hp_error_set(
			    err, HP_EINVAL,
			    "fashion-mnist: the Debian package "
			    "dataset-fashion-mnist is not installed (%s: %s); "
			    "install it or give --data FOLDER",
			    d->dpkg_query,
			    hp__last_line(hp_buf_str(&eout), line,
					  sizeof(line)));
		for (int i = 0; !rc && i < 4; i++)
			if (!find_listed(hp_buf_str(&out), hp__idx_names[i],
					 src[i], HP_DEPLOY_PATH_MAX))
				rc = hp_error_set(
				    err, HP_EINVAL,
				    "fashion-mnist: dataset-fashion-mnist "
				    "installed no '%s' (nor '%s.gz')",
				    hp__idx_names[i], hp__idx_names[i]);
		hp_buf_release(&out);
		hp_buf_release(&eout);
		return rc;
	}
	if (!hp__path_ok(data))
		return hp_error_set(err, HP_EINVAL,
				    "--data '%s': give fashion-mnist, "
				    "synthetic, or the absolute path of a "
				    "folder holding the four Fashion-MNIST "
				    "IDX files",
				    data);
	for (int i = 0; i < 4; i++) {
		if (hp__path(src[i], HP_DEPLOY_PATH_MAX, err, "%s/%s", data,
			     hp__idx_names[i]))
			return HP_EINVAL;
		if (is_file(src[i]))
			continue;
		if (hp__path(src[i], HP_DEPLOY_PATH_MAX, err, "%s/%s.gz", data,
			     hp__idx_names[i]))
			return HP_EINVAL;
		if (!is_file(src[i]))
			return hp_error_set(err, HP_EINVAL,
					    "--data '%s': no '%s' (nor "
					    "'%s.gz') in it",
					    data, hp__idx_names[i],
					    hp__idx_names[i]);
	}
	return 0;
}

int hp__stage_manifest(struct hp_deploy *d, const char *data,
		       const char *jobdir, const char *dest_root, bool *staged,
		       char *dest, size_t ndest, struct hp_error *err)
{
	char src[4][HP_DEPLOY_PATH_MAX], hex[65], mhex[65],
	    path[HP_DEPLOY_PATH_MAX];
	struct hp__sha256 m;
	json_t *o, *files;
	int rc;

	*staged = false;
	dest[0] = '\0';
	if (!strcmp(data, "synthetic"))
		return 0;
	if ((rc = locate(d, data, src, err)))
		return rc;
	o = json_object();
	files = json_array();
	json_object_set_new(o, "version", json_integer(1));
	json_object_set_new(o, "data", json_string(data));
	hp__sha256_init(&m);
	for (int i = 0; i < 4; i++) {
		int64_t size;
		if ((rc = hp__sha256_file(src[i], hex, &size, err)))
			goto out;
		hp__sha256_add(&m, base_name(src[i]),
			       strlen(base_name(src[i])));
		hp__sha256_add(&m, " ", 1);
		hp__sha256_add(&m, hex, 64);
		hp__sha256_add(&m, "\n", 1);
		json_array_append_new(
		    files, json_pack("{s:s, s:s, s:I, s:s}", "name",
				     base_name(src[i]), "source", src[i],
				     "size", (json_int_t)size, "sha256", hex));
	}
	hp__sha256_hex(&m, mhex);
	mhex[16] = '\0';
	if ((rc = hp__path(dest, ndest, err, "%s/%s", dest_root, mhex)))
		goto out;
	json_object_set_new(o, "files", files);
	files = NULL;
	json_object_set_new(o, "dest", json_string(dest));
	if ((rc = hp__path(path, sizeof(path), err, "%s/%s", jobdir,
			   HP_STAGE_FILE)))
		goto out;
	rc = hp__write_json(path, o, err);
	*staged = rc == 0;
out:
	json_decref(files);
	json_decref(o);
	return rc;
}

struct mfile {
	char name[64];
	char source[HP_DEPLOY_PATH_MAX];
	char sha256[65];
	int64_t size;
};

static bool hex64(const char *s)
{
	if (strlen(s) != 64)
		return false;
	for (int i = 0; i < 64; i++)
		if (!strchr("0123456789abcdef", s[i]))
			return false;
	return true;
}

static bool file_name_ok(const char *s)
{
	return hp__name_ok(s) && strcmp(s, ".lock") != 0;
}

static int read_manifest(const char *path, struct mfile *f, int *n,
			 struct hp_error *err)
{
	json_t *o = hp__read_json(path, 1u << 20, err), *files;
	int rc = 0;

	if (!o)
		return HP_EPARSE;
	files = json_object_get(o, "files");
	if (!json_is_object(o) || !json_is_array(files) ||
	    json_array_size(files) == 0 ||
	    json_array_size(files) > STAGE_MAX_FILES) {
		rc = hp_error_set(err, HP_EPARSE,
				  "'%s': 'files' is not a list of 1 to %d "
				  "files",
				  path, STAGE_MAX_FILES);
		goto out;
	}
	*n = (int)json_array_size(files);
	for (int i = 0; i < *n; i++) {
		json_t *x = json_array_get(files, i);
		const char *name =
		    json_string_value(json_object_get(x, "name"));
		const char *src =
		    json_string_value(json_object_get(x, "source"));
		const char *sha =
		    json_string_value(json_object_get(x, "sha256"));
		json_t *size = json_object_get(x, "size");
		if (!name || !src || !sha || !json_is_integer(size) ||
		    !file_name_ok(name) || strlen(name) >= sizeof(f[i].name) ||
		    !hp__path_ok(src) || !hex64(sha) ||
		    json_integer_value(size) < 0) {
			rc = hp_error_set(err, HP_EPARSE,
					  "'%s': files[%d] is not a name, an "
					  "absolute source path, a size and a "
					  "SHA-256",
					  path, i);
			goto out;
		}
		snprintf(f[i].name, sizeof(f[i].name), "%s", name);
		snprintf(f[i].source, sizeof(f[i].source), "%s", src);
		snprintf(f[i].sha256, sizeof(f[i].sha256), "%s", sha);
		f[i].size = json_integer_value(size);
	}
out:
	json_decref(o);
	return rc;
}

static bool stopped(volatile sig_atomic_t *stop)
{
	return stop && *stop;
}

static int stop_error(struct hp_error *err)
{
	return hp_error_set(err, HP_ECANCELED, "staging was stopped");
}

/* src's bytes into the temporary of af (may be NULL: read only), their
 * SHA-256 into hex (may be NULL); HP_ECANCELED as soon as *stop is set
 * (stop may be NULL). */
static int copy_hashed(const char *src, struct hp_atomic_file *af, char hex[65],
		       volatile sig_atomic_t *stop, struct hp_error *err)
{
	char buf[1 << 16];
	struct hp__sha256 h;
	int in, rc = 0;

	if ((in = open(src, O_RDONLY | O_CLOEXEC)) < 0)
		return hp_error_set(err, HP_EIO, "cannot read '%s': %s", src,
				    strerror(errno));
	hp__sha256_init(&h);
	for (;;) {
		ssize_t r;
		if (stopped(stop)) {
			rc = stop_error(err);
			break;
		}
		r = read(in, buf, sizeof(buf));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = hp_error_set(err, HP_EIO, "cannot read '%s': %s",
					  src, strerror(errno));
			break;
		}
		if (r == 0 ||
		    (af && (rc = hp_atomic_write(af, buf, (size_t)r, err))))
			break;
		if (hex)
			hp__sha256_add(&h, buf, (size_t)r);
	}
	close(in);
	if (!rc && hex)
		hp__sha256_hex(&h, hex);
	return rc;
}

/* src's bytes into the temporary of af (hp_atomic_write() removes it
 * when a write fails). */
int hp__copy_into(const char *src, struct hp_atomic_file *af,
		  struct hp_error *err)
{
	return copy_hashed(src, af, NULL, NULL, err);
}

/* Whether name is a temporary of hp_atomic_open() ("NAME.tmp.PID.N"). */
static bool is_temporary(const char *name)
{
	const char *t = strstr(name, ".tmp."), *p;

	if (!t || t == name)
		return false;
	p = t + 5;
	if (*p < '0' || *p > '9')
		return false;
	while (*p >= '0' && *p <= '9')
		p++;
	if (*p++ != '.' || *p < '0' || *p > '9')
		return false;
	while (*p >= '0' && *p <= '9')
		p++;
	return *p == '\0';
}

/* With dest's lock held, remove the temporaries in it: only a stager
 * holding the lock writes one, so each is a dead stager's (killed
 * mid-copy), a file as big as the dataset's that nothing else removes. */
static void remove_temporaries(const char *dest)
{
	int dfd = open(dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct dirent *e;
	DIR *d;

	if (dfd < 0)
		return;
	if (!(d = fdopendir(dfd))) {
		close(dfd);
		return;
	}
	while ((e = readdir(d)))
		if (is_temporary(e->d_name))
			unlinkat(dirfd(d), e->d_name, 0);
	closedir(d);
}

static void nap(void)
{
	struct timespec ts = {0, 50 * 1000 * 1000};

	nanosleep(&ts, NULL);
}

/*
 * The staging folder must be this user's and not writable by others, and
 * its parent this user's or root's: a folder someone else made first
 * (another user's run, or one laid in wait in /tmp) could have its copies
 * swapped under the workers.  A parent root owns may be open to all (a
 * pod's emptyDir is 0777; /tmp is sticky).
 */
static int stage_dir_ours(const char *dest, struct hp_error *err)
{
	char parent[HP_DEPLOY_PATH_MAX];
	struct stat st;
	uid_t me = geteuid();
	char *slash;

	if (lstat(dest, &st))
		return hp_error_set(err, HP_EIO, "cannot read '%s': %s", dest,
				    strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return hp_error_set(err, HP_EINVAL,
				    "staging folder '%s' is not a folder (a "
				    "link?): give --stage-dir another",
				    dest);
	if (st.st_uid != me)
		return hp_error_set(err, HP_EINVAL,
				    "staging folder '%s' belongs to uid %u, "
				    "not to this user (uid %u): give "
				    "--stage-dir a folder of your own",
				    dest, (unsigned)st.st_uid, (unsigned)me);
	if (st.st_mode & 022)
		return hp_error_set(err, HP_EINVAL,
				    "staging folder '%s' may be written by "
				    "others (mode %04o): chmod go-w it, or "
				    "give --stage-dir another",
				    dest, (unsigned)(st.st_mode & 07777));
	snprintf(parent, sizeof(parent), "%s", dest);
	slash = strrchr(parent, '/');
	if (!slash || slash == parent)
		return 0;
	*slash = '\0';
	if (stat(parent, &st))
		return hp_error_set(err, HP_EIO, "cannot read '%s': %s", parent,
				    strerror(errno));
	if (st.st_uid != me && st.st_uid != 0)
		return hp_error_set(
		    err, HP_EINVAL,
		    "staging root '%s' (uid %u, mode %04o) lets another user "
		    "replace the copies in it: give --stage-dir a folder of "
		    "your own",
		    parent, (unsigned)st.st_uid,
		    (unsigned)(st.st_mode & 07777));
	return 0;
}

int hp_deploy_stage_stoppable(const char *manifest, const char *dest,
			      volatile sig_atomic_t *stop, struct hp_error *err)
{
	struct mfile files[STAGE_MAX_FILES];
	char path[HP_DEPLOY_PATH_MAX + 80];
	struct hp_atomic_file af;
	char hex[65];
	int n = 0, rc, fd;

	if (!hp__path_ok(dest))
		return hp_error_set(err, HP_EINVAL,
				    "staging folder '%s' is not an absolute "
				    "path",
				    dest);
	if ((rc = read_manifest(manifest, files, &n, err)))
		return rc;
	if ((rc = hp_mkdirs(dest, 0755, err)) ||
	    (rc = stage_dir_ours(dest, err)))
		return rc;
	/* Several ranks of one node may stage at once: one copies, the
	 * others find its verified copy. */
	if ((rc = hp__path(path, sizeof(path), err, "%s/.lock", dest)))
		return rc;
	if ((fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644)) < 0)
		return hp_error_set(err, HP_EIO, "cannot open '%s': %s", path,
				    strerror(errno));
	/* (another job may hold it for as long as its copy takes) */
	while (flock(fd, stop ? LOCK_EX | LOCK_NB : LOCK_EX) &&
	       (errno == EINTR || errno == EWOULDBLOCK)) {
		if (stopped(stop)) {
			close(fd);
			return stop_error(err);
		}
		if (errno == EWOULDBLOCK)
			nap();
	}
	remove_temporaries(dest);
	for (int i = 0; i < n && !rc; i++) {
		snprintf(path, sizeof(path), "%s/%s", dest, files[i].name);
		if (is_file(path) &&
		    !copy_hashed(path, NULL, hex, stop, NULL) &&
		    !strcmp(hex, files[i].sha256))
			continue; /* a verified copy is there */
		if (stopped(stop)) {
			rc = stop_error(err);
			break;
		}
		/* copied beside (hashed as it goes: the bytes written),
		 * verified, then renamed over: a reader (or a crash) never
		 * sees part of a file */
		if ((rc = hp_atomic_open(&af, path, 0644, err)))
			break;
		if ((rc = copy_hashed(files[i].source, &af, hex, stop, err))) {
			hp_atomic_abort(&af);
			break;
		}
		if (strcmp(hex, files[i].sha256)) {
			hp_atomic_abort(&af);
			rc =
			    hp_error_set(err, HP_EIO,
					 "staging '%s': the copy's SHA-256 "
					 "is %.16s..., the manifest's "
					 "%.16s... (the source changed "
					 "since the job was submitted, or "
					 "the copy is damaged)",
					 files[i].source, hex, files[i].sha256);
			break;
		}
		if ((rc = hp_atomic_commit(&af, err)))
			break;
	}
	close(fd);
	return rc;
}

int hp_deploy_stage(const char *manifest, const char *dest,
		    struct hp_error *err)
{
	return hp_deploy_stage_stoppable(manifest, dest, NULL, err);
}
