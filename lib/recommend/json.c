/*
 * json.c - a recommendation as JSON (jansson): the choice, the
 * time-energy front and the rejected alternatives, each configuration
 * with its devices per node, local batches, gradient weights, learning
 * rate scale, and step time, job time and energy with their intervals.
 */
#include <jansson.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>

#include "recommend/recommend_int.h"
#include "util/banned.h"

static json_t *num(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

/* Bytes as a whole number; null when not known. */
static json_t *bytes(double v)
{
	return isfinite(v) && v >= 0 && v < 9.2e18
		   ? json_integer((json_int_t)ceil(v))
		   : json_null();
}

static json_t *interval(double lo, double hi)
{
	json_t *a = json_array();
	json_array_append_new(a, num(lo));
	json_array_append_new(a, num(hi));
	return a;
}

static json_t *config_json(const struct hp_rec_config *c,
			   const struct hp_rec_job *job,
			   const struct hp_pool *pool)
{
	json_t *o = json_object(), *devs = json_array(), *types = json_array();
	int64_t ref = job->ref_batch > 0 ? job->ref_batch : c->global_batch;

	for (int i = 0; i < c->ngroups; i++) {
		const struct hp_rec_group *g = &c->groups[i];
		json_t *d = json_object();
		json_object_set_new(d, "node",
				    json_string(pool->nodes[g->node].name));
		json_object_set_new(d, "type", json_string(g->type));
		json_object_set_new(d, "count", json_integer(g->count));
		json_object_set_new(d, "local_batch",
				    json_integer(g->local_batch));
		json_object_set_new(d, "grad_weight", num(g->grad_weight));
		/* the node's network as the recommender costed it, for the
		 * launcher (NCCL) */
		json_object_set_new(
		    d, "net_transport",
		    json_string(hp_net_transport_name(g->transport)));
		/* what each device's training needs, for the backends'
		 * memory requests */
		json_object_set_new(d, "memory_bytes", bytes(g->memory_bytes));
		json_array_append_new(devs, d);
	}
	for (int j = 0; j < c->ntypes; j++) {
		const struct hp_rec_type *t = &c->types[j];
		json_t *d = json_object();
		json_object_set_new(d, "type", json_string(t->type));
		json_object_set_new(d, "count", json_integer(t->count));
		json_object_set_new(d, "batch", json_integer(t->batch));
		json_object_set_new(d, "local_batch_max",
				    json_integer(t->local_max));
		json_object_set_new(d, "step_time_s", num(t->step_time_s));
		json_object_set_new(d, "power_w", num(t->power_w));
		json_object_set_new(d, "memory_bytes", bytes(t->memory_bytes));
		json_array_append_new(types, d);
	}
	json_object_set_new(o, "devices", devs);
	json_object_set_new(o, "types", types);
	json_object_set_new(o, "device_count", json_integer(c->ndevices));
	json_object_set_new(o, "nodes", json_integer(c->nnodes));
	json_object_set_new(o, "global_batch", json_integer(c->global_batch));
	json_object_set_new(o, "lr_scale", num(c->lr_scale));
	json_object_set_new(
	    o, "lr",
	    json_pack("{s:s, s:I, s:o, s:I, s:s}", "rule",
		      hp_lr_rule_name(job->lr_rule), "ref_batch",
		      (json_int_t)ref, "scale", num(c->lr_scale),
		      "warmup_steps", (json_int_t)c->warmup_steps, "warmup",
		      c->warmup_steps > 0 ? "linear from lr to lr x scale"
					  : "none"));
	json_object_set_new(o, "steps", json_integer(c->steps));
	json_object_set_new(o, "compute_time_s", num(c->compute_time_s));
	json_object_set_new(o, "comm_time_s", num(c->comm_time_s));
	json_object_set_new(o, "intra_comm_time_s", num(c->intra_time_s));
	json_object_set_new(o, "inter_comm_time_s", num(c->inter_time_s));
	json_object_set_new(o, "step_time_s", num(c->step_time_s));
	json_object_set_new(o, "step_time_interval_s",
			    interval(c->step_time_lo_s, c->step_time_hi_s));
	json_object_set_new(o, "startup_s", num(c->startup_s));
	json_object_set_new(o, "predicted_time_s", num(c->time_s));
	json_object_set_new(o, "predicted_time_interval_s",
			    interval(c->time_lo_s, c->time_hi_s));
	json_object_set_new(o, "power_w", num(c->power_w));
	json_object_set_new(o, "predicted_energy_j", num(c->energy_j));
	json_object_set_new(o, "predicted_energy_interval_j",
			    interval(c->energy_lo_j, c->energy_hi_j));
	json_object_set_new(o, "meets_deadline",
			    json_boolean(c->meets_deadline));
	json_object_set_new(o, "judged_time_s", num(c->time_judged_s));
	json_object_set_new(o, "deadline_probability",
			    num(c->deadline_probability));
	return o;
}

char *hp_rec_result_json(const struct hp_rec_result *r,
			 const struct hp_rec_job *job,
			 const struct hp_pool *pool)
{
	return hp_rec_result_json_ex(r, job, pool, 0);
}

char *hp_rec_result_json_ex(const struct hp_rec_result *r,
			    const struct hp_rec_job *job,
			    const struct hp_pool *pool, unsigned flags)
{
	json_t *o = json_object(), *pa = json_array(), *rj = json_array();
	json_t *notes = json_array();
	char *s;

	json_object_set_new(o, "feasible", json_boolean(r->feasible));
	json_object_set_new(
	    o, "reason", r->reason[0] ? json_string(r->reason) : json_null());
	json_object_set_new(o, "deadline_s", num(r->deadline_s));
	json_object_set_new(o, "confidence", num(r->confidence));
	json_object_set_new(o, "deadline_probability",
			    r->found ? num(r->choice.deadline_probability)
				     : json_null());
	json_object_set_new(o, "samples", json_integer(job->samples));
	/* null: the input pipeline was not modelled */
	json_object_set_new(o, "input_samples_per_s_per_core",
			    job->input_sample_s > 0
				? json_real(1 / job->input_sample_s)
				: json_null());
	{
		int64_t bs[HP_REC_MAX_BATCHES];
		int nb = hp_rec_batches(job, bs);
		json_t *ba = json_array();
		for (int i = 0; i < nb; i++)
			json_array_append_new(ba, json_integer(bs[i]));
		json_object_set_new(o, "batches_searched", ba);
	}
	if (r->found) {
		json_object_set_new(o, "steps", json_integer(r->choice.steps));
		json_object_set_new(o, "startup_s", num(r->choice.startup_s));
		json_object_set_new(o, "comm_time_s",
				    num(r->choice.comm_time_s));
	}
	json_object_set_new(o, "choice",
			    r->found ? config_json(&r->choice, job, pool)
				     : json_null());
	for (int i = 0; i < r->npareto; i++)
		json_array_append_new(pa,
				      config_json(&r->pareto[i], job, pool));
	json_object_set_new(o, "pareto", pa);
	json_object_set_new(o, "pareto_exact", json_boolean(r->pareto_exact));
	for (int i = 0; i < r->nrejected; i++) {
		const struct hp_rec_reject *x = &r->rejected[i];
		json_t *e = x->cfg.ngroups ? config_json(&x->cfg, job, pool)
					   : json_object();
		json_object_set_new(e, "what", json_string(x->what));
		json_object_set_new(e, "reason", json_string(x->reason));
		json_array_append_new(rj, e);
	}
	json_object_set_new(o, "rejected", rj);
	for (int i = 0; i < r->nnotes; i++)
		json_array_append_new(notes, json_string(r->notes[i]));
	json_object_set_new(o, "notes", notes);
	json_object_set_new(
	    o, "model",
	    json_pack("{s:f, s:f, s:f, s:f, s:s, s:s}", "startup_s",
		      HP_REC_STARTUP_S, "startup_per_node_s",
		      HP_REC_STARTUP_NODE_S, "comm_overlap", HP_REC_OVERLAP,
		      "intra_latency_us", HP_REC_INTRA_LATENCY_S * 1e6,
		      "all_reduce",
		      "DDP buckets of 25 MiB, each hierarchical: a ring "
		      "within each node over intra_bw, then across nodes "
		      "the better of ring and tree over the slowest node's "
		      "net_bw and latency; not overlapped with backward",
		      "energy",
		      "device power at its utilisation x time + base power "
		      "of each used node x time; idle devices on a used "
		      "node stay free and are not charged"));
	json_object_set_new(json_object_get(o, "model"), "deadline",
			    json_string("judged on the confidence quantile of "
					"the predicted time (log errors a "
					"split normal: the point its median, "
					"the interval its 10th-90th "
					"percentiles)"));
	json_object_set_new(json_object_get(o, "model"), "comm_log_q90",
			    json_real(r->comm_log_q90 > 0
					  ? r->comm_log_q90
					  : HP_REC_COMM_LOG_Q90));
	json_object_set_new(o, "evaluated", json_integer(r->evaluated));
	s = json_dumps(o, flags & HP_REC_JSON_COMPACT ? JSON_COMPACT
						      : JSON_INDENT(2));
	json_decref(o);
	return s;
}
