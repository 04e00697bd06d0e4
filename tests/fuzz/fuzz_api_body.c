/*
 * fuzz_api_body.c - libFuzzer target for hetpoold's request bodies
 * (lib/api): the first byte picks the reader (job description for
 * recommendations or jobs, token, node change, pool or node, model,
 * refit, dataset), the rest is the body.  Any bytes must be read or refused
 * cleanly: a refusal has a 4xx status (500 only for out of memory), a
 * type and a one-line detail without control characters; an accepted
 * job description holds every field in its range and its JSON form reads
 * back to the same JSON.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hetpool/api.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_problem(const struct hp_api_problem *pb)
{
	char *s;

	if (pb->status == 500 && !strcmp(pb->type, "internal"))
		return;
	if (pb->status < 400 || pb->status > 499 || !pb->type[0] ||
	    !pb->detail[0] || hp_str_has_control(pb->detail) ||
	    strchr(pb->detail, '\n'))
		abort();
	if (!(s = hp_api_problem_json(pb, "/v1/x")))
		abort();
	free(s);
}

static void check_job(const struct hp_api_job *j, enum hp_api_body kind)
{
	struct hp_api_job k;
	struct hp_api_problem pb = {0};
	char *s1, *s2;

	if (!j->model_id == !j->spec || j->samples < 1 || j->batch < 1 ||
	    j->batch > j->samples || !j->epochs == !j->steps ||
	    !(j->deadline_s > 0) || j->front == 1 || j->front < 0 ||
	    j->front > HP_REC_FRONT_MAX || j->devices < 0 || j->nodes < 0 ||
	    !(j->input_rate >= 0 && j->input_rate <= 1e9))
		abort();
	if (kind == HP_API_JOB && !hp_api_name_valid(j->data))
		abort();
	if (!(s1 = hp_api_job_json(j, kind)))
		return;
	if (hp_api_job_parse(s1, strlen(s1), kind, &k, &pb)) {
		fprintf(stderr, "own JSON refused: %s: %s\n", s1, pb.detail);
		abort();
	}
	s2 = hp_api_job_json(&k, kind);
	if (s2 && strcmp(s1, s2))
		abort();
	free(s1);
	free(s2);
	hp_api_job_release(&k);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hp_api_problem pb = {0};
	const char *body = (const char *)data + 1;
	size_t len;
	int rc;

	if (size < 1)
		return 0;
	len = size - 1;
	switch (data[0] % 8) {
	case 0:
	case 1: {
		enum hp_api_body kind =
		    data[0] % 8 ? HP_API_JOB : HP_API_RECOMMENDATION;
		struct hp_api_job j;
		if ((rc = hp_api_job_parse(body, len, kind, &j, &pb)) == 0) {
			check_job(&j, kind);
			hp_api_job_release(&j);
		}
		break;
	}
	case 2: {
		struct hp_api_token_req t;
		if ((rc = hp_api_token_parse(body, len, &t, &pb)) == 0 &&
		    (!t.name[0] || hp_str_has_control(t.name) ||
		     (strcmp(t.role, "admin") && strcmp(t.role, "user") &&
		      strcmp(t.role, "reader"))))
			abort();
		break;
	}
	case 3: {
		bool drained;
		rc = hp_api_node_patch_parse(body, len, &drained, &pb);
		break;
	}
	case 4:
	case 5:
		rc = hp_api_pool_check(body, len, data[0] % 8 == 5, &pb);
		break;
	case 6: {
		struct hp_api_model_req m;
		if ((rc = hp_api_model_parse(body, len, &m, &pb)) == 0) {
			if (!m.spec || !hp_api_name_valid(m.name))
				abort();
			hp_api_model_release(&m);
		}
		break;
	}
	default:
		if (data[0] & 0x80) {
			struct hp_api_dataset_req ds;
			if ((rc = hp_api_dataset_parse(body, len, &ds, &pb)) ==
				0 &&
			    (ds.path[0] != '/' || !hp_api_name_valid(ds.name) ||
			     strstr(ds.path, "/../")))
				abort();
		} else {
			struct hp_api_refit_req r;
			rc = hp_api_refit_parse(body, len, &r, &pb);
		}
		break;
	}
	if (rc)
		check_problem(&pb);
	return 0;
}
