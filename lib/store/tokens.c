/*
 * tokens.c - access tokens: 256 random bits shown once, stored only as
 * their SHA-256; a presented token is hashed, looked up by its hash and
 * the stored hash compared with it in constant time; revocation at once.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "store/store_int.h"
#include "util/banned.h"
#include "util/sha256.h"

/* How often last_used_s is written (a write per request would serialise
 * every reader behind the write lock). */
#define LAST_USED_EVERY_S 60.0

/* 0 when the 64-byte hex strings are equal; time independent of where
 * they differ. */
static int ct_diff(const char *a, const char *b)
{
	unsigned char d = 0;

	for (int i = 0; i < 64; i++)
		d |= (unsigned char)(a[i] ^ b[i]);
	return d;
}

static int random_bytes(unsigned char *p, size_t n, struct hp_error *err)
{
	while (n > 0) {
		ssize_t r = getrandom(p, n, 0);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return hp_error_set(err, HP_EIO, "getrandom: %s",
					    strerror(errno));
		}
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

static int role_check(enum hp_role role, struct hp_error *err)
{
	if ((unsigned)role > HP_ROLE_ADMIN)
		return hp_error_set(err, HP_EINVAL, "role %d unknown",
				    (int)role);
	return 0;
}

static int token_insert(struct hp__conn *c, const char *name, enum hp_role role,
			const char *hash, int64_t *id, struct hp_error *err)
{
	static const char sql[] = "INSERT INTO tokens (name, role, hash, "
				  "created_s) VALUES (?, ?, ?, ?)";
	sqlite3_stmt *st = hp__stmt(c, sql, err);
	int rc;

	if (!st)
		return err ? err->code : HP_EIO;
	hp__bind_text(st, 1, name);
	hp__bind_text(st, 2, hp_role_name(role));
	hp__bind_text(st, 3, hash);
	sqlite3_bind_double(st, 4, hp__store_now());
	if ((rc = hp__step_done(c, st, "token", NULL, err)))
		return rc;
	if (id)
		*id = sqlite3_last_insert_rowid(c->db);
	return 0;
}

int hp_store_token_create(struct hp_store *s, const char *name,
			  enum hp_role role, char token[HP_TOKEN_LEN + 1],
			  int64_t *id, struct hp_error *err)
{
	static const char digits[] = "0123456789abcdef";
	unsigned char raw[32];
	char hash[65];
	struct hp__conn *c;
	int rc;

	token[0] = '\0';
	if (!hp__store_name_ok(name))
		return hp_error_set(err, HP_EINVAL,
				    "token name must be 1 to 63 bytes without "
				    "control characters");
	if ((rc = role_check(role, err)) ||
	    (rc = random_bytes(raw, sizeof(raw), err)))
		return rc;
	memcpy(token, "hpt_", 4);
	for (int i = 0; i < 32; i++) {
		token[4 + 2 * i] = digits[raw[i] >> 4];
		token[5 + 2 * i] = digits[raw[i] & 15];
	}
	token[HP_TOKEN_LEN] = '\0';
	memset(raw, 0, sizeof(raw));
	hp__sha256_hex_of(token, HP_TOKEN_LEN, hash);
	if (!(c = hp__conn_get(s, err))) {
		rc = err ? err->code : HP_EIO;
		goto fail;
	}
	rc = token_insert(c, name, role, hash, id, err);
	hp__conn_put(s, c);
	if (!rc)
		return 0;
fail:
	memset(token, 0, HP_TOKEN_LEN + 1);
	return rc;
}

int hp_store_token_ensure(struct hp_store *s, const char *name,
			  enum hp_role role, const char *token, int64_t *id,
			  struct hp_error *err)
{
	static const char sql_find[] =
	    "SELECT id, revoked_s IS NOT NULL, hash FROM tokens WHERE hash = ?";
	static const char sql_set[] =
	    "UPDATE tokens SET name = ?, role = ? WHERE id = ?";
	struct hp__conn *c;
	sqlite3_stmt *st;
	char hash[65];
	int64_t tid = 0;
	bool revoked = false;
	int rc;

	if (!token || strlen(token) < HP_TOKEN_MIN_LEN)
		return hp_error_set(err, HP_EINVAL,
				    "a token must be at least %d characters",
				    HP_TOKEN_MIN_LEN);
	if (!hp__store_name_ok(name))
		return hp_error_set(err, HP_EINVAL,
				    "token name must be 1 to 63 bytes without "
				    "control characters");
	if ((rc = role_check(role, err)))
		return rc;
	hp__sha256_hex_of(token, strlen(token), hash);
	if (!(c = hp__conn_get(s, err)))
		return err ? err->code : HP_EIO;
	if ((rc = hp__begin(c, true, err)))
		goto out;
	if (!(st = hp__stmt(c, sql_find, err))) {
		rc = err ? err->code : HP_EIO;
		goto out;
	}
	hp__bind_text(st, 1, hash);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		tid = sqlite3_column_int64(st, 0);
		revoked = sqlite3_column_int(st, 1) != 0;
		rc = 0;
	} else if (rc == SQLITE_DONE) {
		rc = 0;
	} else {
		rc = hp__dberr(c, rc, "token", err);
	}
	hp__stmt_done(st);
	if (rc)
		goto out;
	if (revoked) {
		rc = hp_error_set(err, HP_ESTATE,
				  "token '%s' was revoked: give another one",
				  name);
		goto out;
	}
	if (tid) {
		if (!(st = hp__stmt(c, sql_set, err))) {
			rc = err ? err->code : HP_EIO;
			goto out;
		}
		hp__bind_text(st, 1, name);
		hp__bind_text(st, 2, hp_role_name(role));
		sqlite3_bind_int64(st, 3, tid);
		if ((rc = hp__step_done(c, st, "token", NULL, err)))
			goto out;
	} else if ((rc = token_insert(c, name, role, hash, &tid, err))) {
		goto out;
	}
	if ((rc = hp__commit(c, err)))
		goto out;
	if (id)
		*id = tid;
out:
	hp__conn_put(s, c);
	return rc;
}

#define TOKEN_COLS "id, name, role, created_s, revoked_s, last_used_s"

static int token_row(sqlite3_stmt *st, struct hp_store_token *t)
{
	memset(t, 0, sizeof(*t));
	t->id = sqlite3_column_int64(st, 0);
	if (hp_role_parse(hp__col_text(st, 2), &t->role))
		t->role = HP_ROLE_READER;
	t->created_s = hp__col_time(st, 3);
	t->revoked_s = hp__col_time(st, 4);
	t->last_used_s = hp__col_time(st, 5);
	return hp__col_dup(st, 1, &t->name);
}

int hp_store_token_verify(struct hp_store *s, const char *token,
			  struct hp_store_token *out, struct hp_error *err)
{
	static const char sql[] =
	    "SELECT " TOKEN_COLS ", hash FROM tokens WHERE hash = ?";
	static const char sql_used[] =
	    "UPDATE tokens SET last_used_s = ? WHERE id = ?";
	struct hp_store_token t = {0};
	struct hp__conn *c;
	sqlite3_stmt *st;
	char hash[65];
	bool ok = false;
	int rc;

	if (out)
		memset(out, 0, sizeof(*out));
	if (!token || !*token || strlen(token) > 4096)
		return hp_error_set(err, HP_ENOENT, "unknown or revoked token");
	hp__sha256_hex_of(token, strlen(token), hash);
	if (!(c = hp__conn_get(s, err)))
		return err ? err->code : HP_EIO;
	if (!(st = hp__stmt(c, sql, err))) {
		rc = err ? err->code : HP_EIO;
		goto out;
	}
	hp__bind_text(st, 1, hash);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		const char *stored = hp__col_text(st, 6);

		ok = strlen(stored) == 64 && !ct_diff(stored, hash);
		rc = ok ? token_row(st, &t) : 0;
		if (rc)
			rc = hp_error_set(err, HP_ENOMEM, "out of memory");
	} else if (rc == SQLITE_DONE) {
		rc = 0;
	} else {
		rc = hp__dberr(c, rc, "token", err);
	}
	hp__stmt_done(st);
	if (rc)
		goto out;
	if (!ok || t.revoked_s != 0) {
		rc = hp_error_set(err, HP_ENOENT, "unknown or revoked token");
		goto out;
	}
	/* Best effort: a busy database does not refuse the token. */
	if (hp__store_now() - t.last_used_s > LAST_USED_EVERY_S &&
	    (st = hp__stmt(c, sql_used, NULL))) {
		sqlite3_bind_double(st, 1, hp__store_now());
		sqlite3_bind_int64(st, 2, t.id);
		hp__step_done(c, st, "token", NULL, NULL);
	}
out:
	hp__conn_put(s, c);
	if (!rc && out)
		*out = t;
	else
		hp_store_token_release(&t);
	return rc;
}

int hp_store_token_list(struct hp_store *s, struct hp_store_token **out, int *n,
			struct hp_error *err)
{
	static const char sql[] =
	    "SELECT " TOKEN_COLS " FROM tokens ORDER BY id";
	struct hp_store_token *a = NULL;
	int na = 0, cap = 0, rc;
	struct hp__conn *c;
	sqlite3_stmt *st;

	*out = NULL;
	*n = 0;
	if (!(c = hp__conn_get(s, err)))
		return err ? err->code : HP_EIO;
	if (!(st = hp__stmt(c, sql, err))) {
		rc = err ? err->code : HP_EIO;
		goto out;
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (hp_grow(&a, &cap, na, sizeof(*a), 16)) {
			rc = HP_ENOMEM;
			break;
		}
		rc = token_row(st, &a[na++]);
		if (rc)
			break;
	}
	hp__stmt_done(st);
	if (rc == HP_ENOMEM)
		rc = hp_error_set(err, HP_ENOMEM, "out of memory");
	else if (rc != SQLITE_DONE)
		rc = hp__dberr(c, rc, "tokens", err);
	else
		rc = 0;
out:
	hp__conn_put(s, c);
	if (rc) {
		hp_store_token_list_free(a, na);
		return rc;
	}
	*out = a;
	*n = na;
	return 0;
}

int hp_store_token_revoke(struct hp_store *s, int64_t id, struct hp_error *err)
{
	static const char sql[] = "UPDATE tokens SET revoked_s = "
				  "coalesce(revoked_s, ?) WHERE id = ?";
	struct hp__conn *c;
	sqlite3_stmt *st;
	int rc;

	if (!(c = hp__conn_get(s, err)))
		return err ? err->code : HP_EIO;
	if (!(st = hp__stmt(c, sql, err))) {
		rc = err ? err->code : HP_EIO;
		goto out;
	}
	sqlite3_bind_double(st, 1, hp__store_now());
	sqlite3_bind_int64(st, 2, id);
	if (!(rc = hp__step_done(c, st, "token", NULL, err)) &&
	    sqlite3_changes(c->db) == 0)
		rc = hp_error_set(err, HP_ENOENT, "no token %lld",
				  (long long)id);
out:
	hp__conn_put(s, c);
	return rc;
}
