/*
 * launch.c - the launch file (JOBDIR/launch.json): the commands a job
 * runs, as argv arrays (the staging step, the launcher the supervisor
 * starts, the trainer each rank execs) and what each rank gets (node,
 * device, CUDA_VISIBLE_DEVICES, CPUs, threads).  The job's helpers read
 * it on whatever node they run, so it is checked like outside input.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deploy/deploy_int.h"
#include "util/banned.h"

#define LAUNCH_MAX_BYTES (8u << 20)
#define ARGV_MAX 4096

void hp__launch_release(struct hp__launch *l)
{
	if (!l)
		return;
	hp__argv_free(l->stage_argv);
	hp__argv_free(l->launcher);
	hp__argv_free(l->trainer);
	for (int i = 0; l->ranks && i < l->nranks; i++) {
		free(l->ranks[i].cpus);
		hp__argv_free(l->ranks[i].gpu_models);
	}
	free(l->ranks);
	free(l->comps);
	memset(l, 0, sizeof(*l));
}

static json_t *argv_json(char *const *v)
{
	json_t *a;

	if (!v)
		return json_null();
	a = json_array();
	for (int i = 0; v[i]; i++)
		json_array_append_new(a, json_string(v[i]));
	return a;
}

json_t *hp__launch_json(const struct hp__launch *l)
{
	json_t *o = json_object(), *ranks = json_array(), *comps = json_array();

	json_object_set_new(o, "version", json_integer(1));
	json_object_set_new(o, "id", json_string(l->id));
	json_object_set_new(o, "backend",
			    json_string(hp_backend_name(l->backend)));
	json_object_set_new(o, "jobdir", json_string(l->jobdir));
	json_object_set_new(o, "hetpool", json_string(l->hetpool));
	json_object_set_new(o, "stage",
			    l->stage_manifest[0]
				? json_pack("{s:s, s:s, s:o}", "manifest",
					    l->stage_manifest, "dest",
					    l->stage_dest, "argv",
					    argv_json(l->stage_argv))
				: json_null());
	json_object_set_new(o, "launcher", argv_json(l->launcher));
	json_object_set_new(o, "trainer", argv_json(l->trainer));
	json_object_set_new(o, "devices_arg", json_integer(l->ndev_arg));
	json_object_set_new(o, "cpu_fallback", json_boolean(l->cpu_fallback));
	json_object_set_new(o, "grace_s", json_real(l->grace_s));
	json_object_set_new(o, "linger_s", json_real(l->linger_s));
	json_object_set_new(o, "squeue", json_string(l->squeue));
	json_object_set_new(o, "slurm_mpi", json_string(l->slurm_mpi));
	for (int i = 0; i < l->nranks; i++) {
		const struct hp__launch_rank *r = &l->ranks[i];
		json_t *cpus = json_array();
		for (int k = 0; k < r->ncpus; k++)
			json_array_append_new(cpus, json_integer(r->cpus[k]));
		json_array_append_new(
		    ranks,
		    json_pack(
			"{s:i, s:s, s:s, s:s, s:i, s:i, s:i, s:I, s:s, "
			"s:o, s:i, s:s}",
			"rank", i, "node", r->node, "type", r->type, "device",
			r->gpu ? "cuda" : "cpu", "component", r->comp,
			"local_rank", r->local_rank, "gpu_index", r->gpu_index,
			"local_batch", (json_int_t)r->local_batch,
			"cuda_visible_devices", r->cuda, "cpus",
			r->cpus ? cpus : json_null(), "threads", r->threads,
			"net_transport", hp_net_transport_name(r->transport)));
		if (!r->cpus)
			json_decref(cpus);
		if (r->gpu_models)
			json_object_set_new(json_array_get(ranks, (size_t)i),
					    "gpu_models",
					    argv_json(r->gpu_models));
	}
	for (int i = 0; i < l->ncomps; i++) {
		const struct hp__launch_comp *c = &l->comps[i];
		json_t *x =
		    json_pack("{s:s, s:s, s:b, s:i, s:i, s:i, s:i}", "type",
			      c->type, "gres", c->gres, "gpu", c->gpu,
			      "per_node", c->per_node, "nodes", c->nnodes,
			      "first_rank", c->first_rank, "ranks", c->nranks);
		if (x && c->mem_mib > 0)
			json_object_set_new(x, "mem_mib",
					    json_integer(c->mem_mib));
		json_array_append_new(comps, x);
	}
	json_object_set_new(o, "ranks", ranks);
	json_object_set_new(o, "components", comps);
	return o;
}

static char **argv_parse(json_t *a, bool *ok)
{
	struct hp__argv v = {0};
	size_t n = json_array_size(a);

	if (!a || json_is_null(a))
		return NULL;
	if (!json_is_array(a) || n == 0 || n > ARGV_MAX) {
		*ok = false;
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		json_t *s = json_array_get(a, i);
		if (!json_is_string(s) ||
		    strlen(json_string_value(s)) != json_string_length(s)) {
			*ok = false;
			break;
		}
		hp__argv_add(&v, json_string_value(s));
	}
	if (!*ok || v.oom) {
		*ok = false;
		hp__argv_free(hp__argv_take(&v));
		return NULL;
	}
	return hp__argv_take(&v);
}

static bool str_into(json_t *o, const char *key, char *out, size_t n,
		     bool required)
{
	json_t *x = json_object_get(o, key);

	out[0] = '\0';
	if (!x || json_is_null(x))
		return !required;
	if (!json_is_string(x) || json_string_length(x) >= n ||
	    strlen(json_string_value(x)) != json_string_length(x) ||
	    hp_str_has_control(json_string_value(x)))
		return false;
	memcpy(out, json_string_value(x), json_string_length(x) + 1);
	return true;
}

static bool int_into(json_t *o, const char *key, int64_t lo, int64_t hi,
		     int64_t *out)
{
	json_t *x = json_object_get(o, key);

	if (!json_is_integer(x) || json_integer_value(x) < lo ||
	    json_integer_value(x) > hi)
		return false;
	*out = json_integer_value(x);
	return true;
}

static int parse_rank(json_t *r, struct hp__launch_rank *x)
{
	json_t *cpus = json_object_get(r, "cpus");
	char dev[8], net[8];
	int64_t v;

	if (!json_is_object(r) ||
	    !str_into(r, "node", x->node, sizeof(x->node), true) ||
	    !str_into(r, "type", x->type, sizeof(x->type), true) ||
	    !str_into(r, "device", dev, sizeof(dev), true) ||
	    !str_into(r, "cuda_visible_devices", x->cuda, sizeof(x->cuda),
		      true))
		return -1;
	if (strcmp(dev, "cpu") && strcmp(dev, "cuda"))
		return -1;
	x->gpu = !strcmp(dev, "cuda");
	/* optional: a job written before it has none */
	if (!str_into(r, "net_transport", net, sizeof(net), false) ||
	    (net[0] && hp_net_transport_parse(net, &x->transport)))
		return -1;
	if (!int_into(r, "component", 0, HP_PLAN_MAX_GROUPS, &v))
		return -1;
	x->comp = (int)v;
	if (!int_into(r, "local_rank", 0, HP_PLAN_MAX_RANKS, &v))
		return -1;
	x->local_rank = (int)v;
	if (!int_into(r, "gpu_index", 0, HP_PLAN_MAX_RANKS, &v))
		return -1;
	x->gpu_index = (int)v;
	if (!int_into(r, "local_batch", 1, (int64_t)1 << 24, &x->local_batch))
		return -1;
	if (!int_into(r, "threads", 0, 4096, &v))
		return -1;
	x->threads = (int)v;
	{
		/* optional: only the mpi backend's GPU ranks have it */
		bool ok = true;
		x->gpu_models =
		    argv_parse(json_object_get(r, "gpu_models"), &ok);
		if (!ok)
			return -1;
	}
	if (cpus && !json_is_null(cpus)) {
		size_t n = json_array_size(cpus);
		if (!json_is_array(cpus) || n == 0 || n > 4096)
			return -1;
		if (!(x->cpus = calloc(n, sizeof(*x->cpus))))
			return -1;
		x->ncpus = (int)n;
		for (size_t i = 0; i < n; i++) {
			json_t *c = json_array_get(cpus, i);
			if (!json_is_integer(c) || json_integer_value(c) < 0 ||
			    json_integer_value(c) >= 4096)
				return -1;
			x->cpus[i] = (int)json_integer_value(c);
		}
	}
	return 0;
}

int hp__launch_parse(const char *text, size_t len, struct hp__launch *out,
		     struct hp_error *err)
{
	json_error_t je;
	json_t *o, *stage, *ranks, *comps;
	char buf[32];
	int64_t v;
	bool ok = true;
	const char *bad = NULL;

	memset(out, 0, sizeof(*out));
	if (!(o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je)))
		return hp_error_set(err, HP_EPARSE, "launch file: line %d: %s",
				    je.line, je.text);
	if (!json_is_object(o)) {
		bad = "not an object";
		goto out;
	}
	if (!str_into(o, "id", out->id, sizeof(out->id), true) ||
	    !hp_job_id_valid(out->id)) {
		bad = "'id'";
		goto out;
	}
	if (!str_into(o, "backend", buf, sizeof(buf), true) ||
	    hp_backend_parse(buf, &out->backend)) {
		bad = "'backend'";
		goto out;
	}
	if (!str_into(o, "jobdir", out->jobdir, sizeof(out->jobdir), true) ||
	    !hp__path_ok(out->jobdir) ||
	    !str_into(o, "hetpool", out->hetpool, sizeof(out->hetpool), true) ||
	    !hp__path_ok(out->hetpool)) {
		bad = "'jobdir' or 'hetpool'";
		goto out;
	}
	if (!str_into(o, "slurm_mpi", out->slurm_mpi, sizeof(out->slurm_mpi),
		      false)) {
		bad = "'slurm_mpi'";
		goto out;
	}
	stage = json_object_get(o, "stage");
	if (stage && !json_is_null(stage)) {
		if (!json_is_object(stage) ||
		    !str_into(stage, "manifest", out->stage_manifest,
			      sizeof(out->stage_manifest), true) ||
		    !hp__path_ok(out->stage_manifest) ||
		    !str_into(stage, "dest", out->stage_dest,
			      sizeof(out->stage_dest), true) ||
		    !hp__path_ok(out->stage_dest)) {
			bad = "'stage'";
			goto out;
		}
		out->stage_argv =
		    argv_parse(json_object_get(stage, "argv"), &ok);
	}
	out->launcher = argv_parse(json_object_get(o, "launcher"), &ok);
	out->trainer = argv_parse(json_object_get(o, "trainer"), &ok);
	if (!ok || !out->trainer) {
		bad = "an argv";
		goto out;
	}
	if (!int_into(o, "devices_arg", 0, ARGV_MAX, &v)) {
		bad = "'devices_arg'";
		goto out;
	}
	out->ndev_arg = (int)v;
	for (int i = 0; i <= out->ndev_arg; i++)
		if (!out->trainer[i]) {
			bad = "'devices_arg'";
			goto out;
		}
	out->cpu_fallback = json_is_true(json_object_get(o, "cpu_fallback"));
	out->grace_s = json_is_number(json_object_get(o, "grace_s"))
			   ? json_number_value(json_object_get(o, "grace_s"))
			   : 10;
	if (!(out->grace_s >= 0 && out->grace_s <= 3600)) {
		bad = "'grace_s'";
		goto out;
	}
	out->linger_s = json_is_number(json_object_get(o, "linger_s"))
			    ? json_number_value(json_object_get(o, "linger_s"))
			    : 10;
	if (!(out->linger_s > 0 && out->linger_s <= 3600)) {
		bad = "'linger_s'";
		goto out;
	}
	if (!str_into(o, "squeue", out->squeue, sizeof(out->squeue), false)) {
		bad = "'squeue'";
		goto out;
	}
	if (!out->squeue[0])
		snprintf(out->squeue, sizeof(out->squeue), "squeue");
	ranks = json_object_get(o, "ranks");
	if (!json_is_array(ranks) || json_array_size(ranks) == 0 ||
	    json_array_size(ranks) > HP_PLAN_MAX_RANKS) {
		bad = "'ranks'";
		goto out;
	}
	out->ranks = calloc(json_array_size(ranks), sizeof(*out->ranks));
	if (!out->ranks) {
		bad = "'ranks' (out of memory)";
		goto out;
	}
	for (size_t i = 0; i < json_array_size(ranks); i++) {
		out->nranks = (int)i + 1;
		if (parse_rank(json_array_get(ranks, i), &out->ranks[i])) {
			bad = "a rank";
			goto out;
		}
	}
	comps = json_object_get(o, "components");
	if (!json_is_array(comps) || json_array_size(comps) == 0 ||
	    json_array_size(comps) > HP_PLAN_MAX_GROUPS) {
		bad = "'components'";
		goto out;
	}
	out->comps = calloc(json_array_size(comps), sizeof(*out->comps));
	if (!out->comps) {
		bad = "'components' (out of memory)";
		goto out;
	}
	for (size_t i = 0; i < json_array_size(comps); i++) {
		json_t *c = json_array_get(comps, i);
		struct hp__launch_comp *x = &out->comps[i];
		int64_t a, b, e, f;
		if (!json_is_object(c) ||
		    !str_into(c, "type", x->type, sizeof(x->type), true) ||
		    !str_into(c, "gres", x->gres, sizeof(x->gres), false) ||
		    !int_into(c, "per_node", 1, HP_PLAN_MAX_RANKS, &a) ||
		    !int_into(c, "nodes", 1, HP_PLAN_MAX_RANKS, &b) ||
		    !int_into(c, "first_rank", 0, out->nranks - 1, &e) ||
		    !int_into(c, "ranks", 1, out->nranks - e, &f)) {
			bad = "a component";
			goto out;
		}
		x->gpu = json_is_true(json_object_get(c, "gpu"));
		x->mem_mib = 0;
		if (json_object_get(c, "mem_mib") &&
		    !int_into(c, "mem_mib", 1, (int64_t)1 << 40, &x->mem_mib)) {
			bad = "a component's 'mem_mib'";
			goto out;
		}
		x->per_node = (int)a;
		x->nnodes = (int)b;
		x->first_rank = (int)e;
		x->nranks = (int)f;
		out->ncomps = (int)i + 1;
	}
	for (int i = 0; i < out->nranks; i++)
		if (out->ranks[i].comp >= out->ncomps) {
			bad = "a rank's component";
			goto out;
		}
out:
	json_decref(o);
	if (bad) {
		hp__launch_release(out);
		return hp_error_set(err, HP_EPARSE, "launch file: %s is bad",
				    bad);
	}
	return 0;
}

int hp__launch_load(const char *jobdir, struct hp__launch *out,
		    struct hp_error *err)
{
	char path[HP_DEPLOY_PATH_MAX + 32], *text;
	size_t len;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = hp__path(path, sizeof(path), err, "%s/%s", jobdir,
			   HP_LAUNCH_FILE)))
		return rc;
	if ((rc = hp_read_file(path, LAUNCH_MAX_BYTES, &text, &len, err)))
		return rc;
	rc = hp__launch_parse(text, len, out, err);
	free(text);
	if (rc)
		hp_error_prefix(err, "'%s'", path);
	return rc;
}
