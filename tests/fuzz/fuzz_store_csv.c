/*
 * fuzz_store_csv.c - libFuzzer target for the store's measurement import
 * (a profiler CSV posted to hetpoold): any bytes are imported whole or
 * refused whole with a message; what was imported comes back out as a
 * dataset CSV that imports again to the same number of rows.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hetpool/store.h"
#include "store/store_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct hp_store *store;
static char path[64];

static void cleanup(void)
{
	char p[80];

	hp_store_close(store);
	unlink(path);
	snprintf(p, sizeof(p), "%s-wal", path);
	unlink(p);
	snprintf(p, sizeof(p), "%s-shm", path);
	unlink(p);
}

/* Count the rows and empty the table for the next input. */
static long count_and_clear(void)
{
	struct hp_error err = {0};
	struct hp__conn *c = hp__conn_get(store, &err);
	sqlite3_stmt *st;
	long n = -1;

	if (!c)
		abort();
	if (sqlite3_prepare_v2(c->db, "SELECT count(*) FROM measurements", -1,
			       &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	if (hp__exec(c, "DELETE FROM measurements", &err))
		abort();
	hp__conn_put(store, c);
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hp_store_options o = {.no_sync = true, .max_connections = 1};
	struct hp_error err = {0};
	struct hp_buf out;
	int added = -1, again = -1, rows = -1, rc;

	if (!store) {
		int fd;
		snprintf(path, sizeof(path), "/tmp/fuzz-store.XXXXXX");
		fd = mkstemp(path);
		if (fd < 0)
			abort();
		close(fd);
		unlink(path);
		store = hp_store_open(path, &o, &err);
		if (!store)
			abort();
		atexit(cleanup);
	}
	rc = hp_store_measurement_import_csv(store, (const char *)data, size,
					     "fuzz", &added, &err);
	if (rc < 0) {
		if (!err.msg[0] || count_and_clear() != 0)
			abort();
		return 0;
	}
	if (count_and_clear() != added)
		abort();
	if (added == 0)
		return 0;
	/* Back out, and in again. */
	rc = hp_store_measurement_import_csv(store, (const char *)data, size,
					     "fuzz", &added, &err);
	if (rc)
		abort();
	hp_buf_init(&out, 1u << 30);
	if (hp_store_dataset_csv(store, &out, &rows, &err) || rows != added)
		abort();
	count_and_clear();
	if (hp_store_measurement_import_csv(store, hp_buf_str(&out), out.len,
					    "again", &again, &err) ||
	    again != added)
		abort();
	count_and_clear();
	hp_buf_release(&out);
	return 0;
}
