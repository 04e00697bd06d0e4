/*
 * fuzz_plan.c - libFuzzer target for plan files (the JSON of `hetpool
 * recommend`, or one configuration): any bytes parse or fail cleanly with
 * a message that starts "plan"; a plan that parses has ranks that add up
 * to its global batch, each component's ranks together and within its
 * devices per node, valid names, and reads back the same from its groups.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/deploy/deploy_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct hp_plan *p)
{
	int64_t sum = 0;

	if (p->nranks < 1 || p->nranks > HP_PLAN_MAX_RANKS || p->ncomps < 1 ||
	    p->nnodes < 1)
		abort();
	for (int i = 0; i < p->nnodes; i++)
		if (!hp__name_ok(p->nodes[i].name))
			abort();
	for (int r = 0; r < p->nranks; r++) {
		const struct hp_plan_rank *x = &p->ranks[r];
		const struct hp_plan_comp *c = &p->comps[x->comp];
		sum += x->local_batch;
		if (x->comp < 0 || x->comp >= p->ncomps || x->node < 0 ||
		    x->node >= p->nnodes || x->group < 0 ||
		    x->group >= p->ngroups)
			abort();
		if (r < c->first_rank || r >= c->first_rank + c->nranks ||
		    x->gpu_index >= c->per_node ||
		    x->local_rank >= p->nodes[x->node].nranks ||
		    x->local_batch != p->groups[x->group].local_batch ||
		    !hp__type_ok(p->groups[x->group].type))
			abort();
	}
	if (sum != p->global_batch)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hp_error err = {0};
	struct hp_plan p, q;
	json_t *devs, *o;
	char *text;

	if (hp_plan_parse((const char *)data, size, "fuzz.json", &p, &err)) {
		if (err.code != HP_ENOMEM && strncmp(err.msg, "plan", 4) != 0) {
			fprintf(stderr, "error without 'plan': %s\n", err.msg);
			abort();
		}
		return 0;
	}
	check(&p);
	/* Its groups, written as a configuration, read back the same. */
	devs = json_array();
	for (int i = 0; i < p.ngroups; i++)
		json_array_append_new(
		    devs, json_pack("{s:s, s:s, s:i, s:I}", "node",
				    p.groups[i].node, "type", p.groups[i].type,
				    "count", p.groups[i].count, "local_batch",
				    (json_int_t)p.groups[i].local_batch));
	o = json_pack("{s:o, s:I}", "devices", devs, "global_batch",
		      (json_int_t)p.global_batch);
	text = json_dumps(o, 0);
	if (text && hp_plan_parse(text, strlen(text), NULL, &q, &err) == 0) {
		if (q.nranks != p.nranks || q.ncomps != p.ncomps ||
		    q.global_batch != p.global_batch)
			abort();
		for (int r = 0; r < p.nranks; r++)
			if (q.ranks[r].local_batch != p.ranks[r].local_batch ||
			    q.ranks[r].comp != p.ranks[r].comp)
				abort();
		hp_plan_release(&q);
	} else if (text && err.code != HP_ENOMEM) {
		fprintf(stderr, "round trip refused: %s\n", err.msg);
		abort();
	}
	free(text);
	json_decref(o);
	free(hp_plan_json(&p));
	hp_plan_release(&p);
	return 0;
}
