/*
 * util.h - basics shared by every hetpool module: error codes and the
 * error context, a growable string buffer with a size cap, files read
 * whole and replaced atomically, logging, and checked number parsing.
 *
 * Ownership: a function that returns heap memory says so; the caller frees
 * it with the matching *_free / *_release.  Nothing here prints to stdout.
 */
#ifndef HETPOOL_UTIL_H
#define HETPOOL_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * One table generates enum hp_err, hp_strerror() and hp_err_name().
 * Codes are negative; 0 is success.
 */
#define HP_ERRNO_MAP(X)                                                        \
	X(EINVAL, -1, "invalid argument")                                      \
	X(ENOMEM, -2, "out of memory")                                         \
	X(EIO, -3, "input/output error")                                       \
	X(ENOENT, -4, "no such file or object")                                \
	X(EPARSE, -5, "malformed input")                                       \
	X(ERANGE, -6, "value out of range")                                    \
	X(EUNSUPP, -7, "not supported")                                        \
	X(ESHAPE, -8, "shape error")                                           \
	X(ECYCLE, -9, "graph has a cycle")                                     \
	X(ETOOBIG, -10, "input too large")                                     \
	X(EDEVICE, -11, "device unavailable")                                  \
	X(EINTERNAL, -12, "internal error")                                    \
	X(ECANCELED, -13, "canceled")                                          \
	X(EEXIST, -14, "already exists")                                       \
	X(EBUSY, -15, "resource busy")                                         \
	X(ESTATE, -16, "not allowed in this state")                            \
	X(ESTORAGE, -17, "storage full or read-only")

enum hp_err {
	HP_OK = 0,
#define HP_ERR_ENUM(name, val, msg) HP_##name = (val),
	HP_ERRNO_MAP(HP_ERR_ENUM)
#undef HP_ERR_ENUM
};

/* Static message for a code ("unknown error" for codes not in the table). */
const char *hp_strerror(int code);
/* Static name for a code, e.g. "HP_EINVAL". */
const char *hp_err_name(int code);

/* Caller-owned error context: the code and a one-line message. */
struct hp_error {
	int code;
	char msg[256];
};

/*
 * Fill err (may be NULL) with code and a printf-style message, and return
 * code, so callers can write `return hp_error_set(err, HP_EINVAL, ...)`.
 */
int hp_error_set(struct hp_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Prefix the message already in err with "PREFIX: " (keeps the code). */
void hp_error_prefix(struct hp_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void hp_error_clear(struct hp_error *err);

/*
 * Growable, always NUL-terminated byte buffer with a size cap (like curl's
 * dynbuf).  hp_buf_init() sets the cap; an append that would pass it fails
 * with HP_ETOOBIG and leaves the buffer as it was.
 */
struct hp_buf {
	char *data; /* NUL-terminated; NULL until the first append */
	size_t len;
	size_t alloc;
	size_t cap; /* most bytes it may hold, the NUL excluded */
};

void hp_buf_init(struct hp_buf *b, size_t cap);
void hp_buf_release(struct hp_buf *b);
void hp_buf_reset(struct hp_buf *b);
int hp_buf_add(struct hp_buf *b, const void *p, size_t n);
int hp_buf_adds(struct hp_buf *b, const char *s);
int hp_buf_printf(struct hp_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int hp_buf_vprintf(struct hp_buf *b, const char *fmt, va_list ap);
/* The contents ("" for an empty buffer; never NULL). */
const char *hp_buf_str(const struct hp_buf *b);
/* Hand the data to the caller (free() it); the buffer is reset. */
char *hp_buf_detach(struct hp_buf *b);

/*
 * Read a whole file into a new buffer of at most max_bytes; a larger file
 * is refused with HP_ETOOBIG before it is read.  On success *out is owned
 * by the caller (free()) and NUL-terminated past *len.
 */
int hp_read_file(const char *path, size_t max_bytes, char **out, size_t *len,
		 struct hp_error *err);

/*
 * mkdir -p: path and the folders above it that are missing, each made with
 * mode (the umask applies); one that is there is fine.  Failing, the error
 * names the folder that could not be made and the system's reason
 * ("cannot make folder 'A/B': Permission denied", HP_EIO; a path too long
 * or empty is HP_ERANGE), and errno is mkdir's.  It does not check that
 * path ends up a folder (a file of that name is "there").
 */
int hp_mkdirs(const char *path, int mode, struct hp_error *err);

/*
 * Replace a file whole.  hp_atomic_open() creates a temporary file beside
 * path ("PATH.tmp.PID.N", new, close-on-exec, created with mode as open(2)
 * takes it, so the umask applies); the caller writes into fd, directly or
 * through hp_atomic_write(); hp_atomic_commit() flushes it to disk, renames
 * it over path and flushes the directory, so a reader or a crash sees the
 * old file or the new one, never part of one.  hp_atomic_abort() removes
 * the temporary.  A failing open, write or commit removes the temporary
 * itself and leaves path as it was; the error names path and the system's
 * reason ("cannot write 'PATH': No such file or directory", HP_EIO; a name
 * too long is HP_EINVAL).  Commit and abort end the struct's use; abort
 * may be called again, or after a failure, and does nothing.  No state is
 * shared between calls: safe from many threads, also on one path.
 */
struct hp_atomic_file {
	int fd;		     /* write here; -1 once closed */
	char path[4096];     /* the target */
	char tmp[4096 + 48]; /* the temporary; "" once renamed or removed */
};
int hp_atomic_open(struct hp_atomic_file *af, const char *path, int mode,
		   struct hp_error *err);
int hp_atomic_write(struct hp_atomic_file *af, const void *data, size_t len,
		    struct hp_error *err);
int hp_atomic_commit(struct hp_atomic_file *af, struct hp_error *err);
void hp_atomic_abort(struct hp_atomic_file *af);
/* All of it in one call: path holds the len bytes of data, or is as it was. */
int hp_write_file_atomic(const char *path, const void *data, size_t len,
			 int mode, struct hp_error *err);

/* Logging: the library never prints; the program installs a sink. */
enum hp_log_level {
	HP_LOG_ERROR = 0,
	HP_LOG_WARN = 1,
	HP_LOG_INFO = 2,
	HP_LOG_DEBUG = 3,
};
typedef void (*hp_log_fn)(enum hp_log_level level, const char *msg, void *ud);
/* Install a sink (NULL: drop messages) and the most verbose level it gets.
 * Safe to call while other threads log; the sink may be called from any
 * thread the library runs on, so it must be thread-safe itself. */
void hp_log_set(hp_log_fn fn, void *ud, enum hp_log_level max_level);
void hp_log(enum hp_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
const char *hp_log_level_name(enum hp_log_level level);

/*
 * Checked number parsing: the whole string must be a number in range.
 * Return 0 or HP_EINVAL / HP_ERANGE.
 */
int hp_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out);
int hp_parse_double(const char *s, double *out);

/* Overflow-checked arithmetic on sizes; false on overflow. */
static inline bool hp_mul_i64(int64_t a, int64_t b, int64_t *out)
{
	return !__builtin_mul_overflow(a, b, out);
}
static inline bool hp_add_i64(int64_t a, int64_t b, int64_t *out)
{
	return !__builtin_add_overflow(a, b, out);
}
/* The elements of a tensor of these dims: their product; -1 for a
 * negative rank or dim (not known) or a product past int64. */
static inline int64_t hp_dims_numel(const int64_t *dims, int rank)
{
	int64_t n = 1;

	if (rank < 0)
		return -1;
	for (int i = 0; i < rank; i++)
		if (dims[i] < 0 || !hp_mul_i64(n, dims[i], &n))
			return -1;
	return n;
}

/*
 * Copy src into dst (n bytes, NUL-terminated, cut short to fit) with its
 * control characters escaped: "\n", "\r", "\t", and "\xHH" for the
 * other bytes below 0x20, 0x7f, the bytes of a C1 control (U+0080-U+009F)
 * and bytes that are not well-formed UTF-8.  Names read from files go
 * through it before they reach a terminal, so a message stays on one line
 * and cannot drive the terminal.  Other UTF-8 passes as it is.  Returns
 * dst.
 */
const char *hp_str_escape(const char *src, char *dst, size_t n);
/* True when s holds bytes hp_str_escape() would escape. */
bool hp_str_has_control(const char *s);
/*
 * Drop the bytes of a UTF-8 sequence that s ends in the middle of, as
 * snprintf() leaves one when it cuts a message short: a message cut to
 * fit its buffer stays UTF-8 (JSON writers refuse it otherwise, and a
 * terminal shows garbage).  Returns s.
 */
char *hp_str_cut_utf8(char *s);

/* Duplicate n bytes of s into a NUL-terminated string; NULL on ENOMEM. */
char *hp_strndup(const char *s, size_t n);
char *hp_strdup(const char *s);

/*
 * Make room for one more element in the array *arr of *cap elements of
 * size bytes, n of them used: when n == *cap the array is doubled (first
 * elements when empty).  0, or HP_ENOMEM with *arr and *cap unchanged.
 */
int hp_grow(void *arr, int *cap, int n, size_t size, int first);

/*
 * CSV (RFC 4180: quoted fields, doubled quotes, CRLF or LF).  A reader
 * walks a caller-owned text one record at a time; fields are returned as
 * NUL-terminated strings owned by the reader, valid until the next call.
 */
struct hp_csv {
	const char *p, *end;
	int line;	/* line where the record last read starts (1-based) */
	int lines_seen; /* internal */
	char **fields;
	int nfields, afields;
	struct hp_buf rec; /* unescaped fields, each NUL-terminated */
	size_t *offs;	   /* internal: field offsets into rec */
	int aoffs;
};
void hp_csv_init(struct hp_csv *c, const char *text, size_t len);
void hp_csv_release(struct hp_csv *c);
/* Read the next record: 1 if one was read, 0 at the end, or a negative code
 * (HP_EPARSE: an unterminated quote) with err naming the line. */
int hp_csv_next(struct hp_csv *c, struct hp_error *err);
/* Index of a header field by name in the current record, or -1. */
int hp_csv_index(const struct hp_csv *c, const char *name);
/* A header record must name each column once and none empty: 0, or
 * HP_EPARSE naming the field (a second column of the same name would
 * silently shadow the first). */
int hp_csv_header_check(const struct hp_csv *c, struct hp_error *err);
/* A data record must have the header's nheader fields (one with more or
 * fewer was cut or joined: a missing field would be read as the next
 * column's value): 0, or HP_EPARSE "line N: X fields; the header has Y". */
int hp_csv_fields_check(const struct hp_csv *c, int nheader,
			struct hp_error *err);
/* Append s to b as one CSV field (quoted when it needs to be). */
int hp_csv_add_field(struct hp_buf *b, const char *s);

/* The version of hetpool, e.g. "0.1.0" (HP_VERSION). */
#define HP_VERSION "0.1.0"
const char *hp_version(void);

/* Monotonic clock in seconds. */
double hp_now_s(void);
/* Time t in UTC as ISO 8601, "2026-12-02T08:26:24Z", into buf (21 bytes
 * or more; a smaller one gets ""). */
void hp_utc_iso8601(time_t t, char *buf, size_t n);

#ifdef __cplusplus
}
#endif
#endif /* HETPOOL_UTIL_H */
