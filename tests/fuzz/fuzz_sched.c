/*
 * fuzz_sched.c - libFuzzer target for what schedulers answer about a job:
 * squeue and sacct lines (for job "12"), and kubectl's JSON list.  Any
 * bytes parse or fail cleanly; the counts add up to the components seen
 * and always map to one of the six job states.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/deploy/deploy_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void slurm(const char *text, bool sacct)
{
	struct hp__slurm_state st;
	struct hp_error err = {0};
	char reason[256];
	int rc = sacct ? hp__slurm_parse_sacct(text, "12", &st, &err)
		       : hp__slurm_parse_squeue(text, "12", &st, &err);
	enum hp_job_state s;

	if (rc) {
		if (rc != HP_EPARSE)
			abort();
		return;
	}
	if (st.pending + st.running + st.completed + st.failed + st.cancelled !=
	    st.ncomps)
		abort();
	if (!st.ncomps)
		return;
	s = hp__slurm_job_state(&st, reason, sizeof(reason));
	if ((unsigned)s > HP_JOB_CANCELLED || hp_str_has_control(reason))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	enum hp_job_state s;
	char reason[256];

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	slurm(text, false);
	slurm(text, true);
	if (hp__k8s_parse_status(text, size, "20261130-121501-3fa2", &s, reason,
				 sizeof(reason), NULL) == 0 &&
	    ((unsigned)s > HP_JOB_CANCELLED || hp_str_has_control(reason)))
		abort();
	free(text);
	return 0;
}
