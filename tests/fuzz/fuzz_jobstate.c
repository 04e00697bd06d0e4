/*
 * fuzz_jobstate.c - libFuzzer target for a job's own files, read back by
 * every process that follows the job or runs a step of it: the state file
 * (job.json) and the launch file (launch.json).  Any bytes parse or fail
 * cleanly; what parses writes out and reads back the same.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/deploy/deploy_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void job_round_trip(const uint8_t *data, size_t size)
{
	struct hp_error err = {0};
	struct hp_job j, k;
	char *s;

	if (hp_job_parse((const char *)data, size, &j, &err)) {
		if (err.code != HP_ENOMEM &&
		    strncmp(err.msg, "job state", 9) != 0)
			abort();
		return;
	}
	if (!hp_job_id_valid(j.id) || j.nranks_seen > HP_PLAN_MAX_RANKS)
		abort();
	s = hp_job_json(&j);
	if (s) {
		if (hp_job_parse(s, strlen(s), &k, &err) != 0) {
			fprintf(stderr, "job round trip refused: %s\n",
				err.msg);
			abort();
		}
		if (strcmp(k.id, j.id) || k.state != j.state ||
		    k.backend != j.backend || strcmp(k.reason, j.reason) ||
		    k.nranks_seen != j.nranks_seen ||
		    k.exit_status != j.exit_status || k.pid != j.pid)
			abort();
		hp_job_release(&k);
		free(s);
	}
	hp_job_release(&j);
}

static void launch_round_trip(const uint8_t *data, size_t size)
{
	struct hp_error err = {0};
	struct hp__launch l, m;
	json_t *o;
	char *s;

	if (hp__launch_parse((const char *)data, size, &l, &err)) {
		if (err.code != HP_ENOMEM &&
		    strncmp(err.msg, "launch file", 11) != 0)
			abort();
		return;
	}
	for (int r = 0; r < l.nranks; r++)
		if (l.ranks[r].comp >= l.ncomps)
			abort();
	for (int i = 0; i <= l.ndev_arg; i++)
		if (!l.trainer[i])
			abort();
	o = hp__launch_json(&l);
	s = o ? json_dumps(o, 0) : NULL;
	if (s) {
		if (hp__launch_parse(s, strlen(s), &m, &err) != 0) {
			fprintf(stderr, "launch round trip refused: %s\n",
				err.msg);
			abort();
		}
		if (m.nranks != l.nranks || m.ncomps != l.ncomps ||
		    m.ndev_arg != l.ndev_arg || strcmp(m.jobdir, l.jobdir))
			abort();
		hp__launch_release(&m);
	}
	free(s);
	json_decref(o);
	hp__launch_release(&l);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	job_round_trip(data, size);
	launch_round_trip(data, size);
	return 0;
}
