/*
 * auth.c - who a bearer token is.  The store verifies a token (its
 * SHA-256 looked up, compared in constant time); this keeps, for a few
 * seconds, what it said about recently seen tokens, keyed by their
 * SHA-256, so a busy client does not cost a database read per request.
 * The token's text is never kept: it is hashed, handed to the store in a
 * local buffer, and that buffer is wiped.  A revocation through this
 * server flushes the cache at once; one made by another process on the
 * same database takes effect within HD_AUTH_TTL_S.
 */
#include <stdlib.h>
#include <string.h>

#include "hetpoold.h"

#define HD_AUTH_SLOTS 256
#define HD_AUTH_TTL_S 10.0

struct slot {
	bool used;
	char digest[65];
	int64_t id;
	enum hd_role role;
	char name[64];
	double expires; /* hp_now_s() */
};

struct hd_auth {
	pthread_rwlock_t lk;
	struct hp_store *store;
	struct slot slots[HD_AUTH_SLOTS];
};

struct hd_auth *hd_auth_new(struct hp_store *s)
{
	struct hd_auth *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	pthread_rwlock_init(&a->lk, NULL);
	a->store = s;
	return a;
}

void hd_auth_free(struct hd_auth *a)
{
	if (!a)
		return;
	pthread_rwlock_destroy(&a->lk);
	free(a);
}

static unsigned slot_of(const char *digest)
{
	unsigned v = 0;

	for (int i = 0; i < 4; i++)
		v = v * 16 + (unsigned)(digest[i] <= '9'
					    ? digest[i] - '0'
					    : digest[i] - 'a' + 10);
	return v % HD_AUTH_SLOTS;
}

int hd_auth_verify(struct hd_auth *a, const char *tok, size_t len,
		   struct hd_who *who)
{
	struct hp_store_token t = {0};
	char digest[65], text[HP_API_MAX_TOKEN + 1];
	struct slot *sl;
	double now = hp_now_s();
	int rc;

	memset(who, 0, sizeof(*who));
	if (len > HP_API_MAX_TOKEN)
		return HP_ENOENT;
	hp_api_token_digest(tok, len, digest);
	sl = &a->slots[slot_of(digest)];
	pthread_rwlock_rdlock(&a->lk);
	if (sl->used && now < sl->expires &&
	    hp_api_ct_equal(sl->digest, digest, 64)) {
		who->known = true;
		who->token_id = sl->id;
		who->role = sl->role;
		memcpy(who->name, sl->name, sizeof(who->name));
		pthread_rwlock_unlock(&a->lk);
		return 0;
	}
	pthread_rwlock_unlock(&a->lk);

	memcpy(text, tok, len);
	text[len] = '\0';
	rc = hp_store_token_verify(a->store, text, &t, NULL);
	explicit_bzero(text, sizeof(text));
	if (rc)
		return HP_ENOENT;
	who->known = true;
	who->token_id = t.id;
	who->role = (enum hd_role)t.role;
	snprintf(who->name, sizeof(who->name), "%s", t.name ? t.name : "");
	hp_store_token_release(&t);

	pthread_rwlock_wrlock(&a->lk);
	sl->used = true;
	memcpy(sl->digest, digest, sizeof(digest));
	sl->id = who->token_id;
	sl->role = who->role;
	memcpy(sl->name, who->name, sizeof(sl->name));
	sl->expires = now + HD_AUTH_TTL_S;
	pthread_rwlock_unlock(&a->lk);
	return 0;
}

void hd_auth_flush(struct hd_auth *a)
{
	pthread_rwlock_wrlock(&a->lk);
	memset(a->slots, 0, sizeof(a->slots));
	pthread_rwlock_unlock(&a->lk);
}
