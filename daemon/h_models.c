/*
 * h_models.c - models: an ONNX file (application/octet-stream, its label
 * in ?name=) or a hetpool spec ({"name", "spec"}), analysed at batch 1
 * before it is stored (a model that cannot be analysed is refused with
 * the analyser's message), stored with its features.
 */
#include <stdlib.h>
#include <string.h>

#include "hetpoold.h"

static json_t *model_json(const struct hp_store_model *m)
{
	json_t *o = json_object();

	json_object_set_new(o, "id", json_integer(m->id));
	json_object_set_new(o, "name", hd_jstr(m->name));
	json_object_set_new(o, "kind",
			    json_string(hp_model_kind_name(m->kind)));
	json_object_set_new(o, "sha256", json_string(m->sha256));
	json_object_set_new(o, "size", json_integer(m->size));
	json_object_set_new(o, "owner",
			    m->owner ? json_integer(m->owner) : json_null());
	json_object_set_new(o, "created_s", json_real(m->created_s));
	json_object_set_new(o, "features", hd_jtext(m->features));
	return o;
}

void hd_h_models_list(struct hd *d, struct hd_req *r, struct hd_resp *out)
{
	struct hp_store_model *ms = NULL;
	struct hp_error err = {0};
	json_t *a;
	int n = 0;

	(void)r;
	if (hp_store_model_list(d->store, &ms, &n, &err)) {
		hd_problem_err(out, &err);
		return;
	}
	a = json_array();
	for (int i = 0; i < n; i++) {
		json_t *o = model_json(&ms[i]);
		json_object_del(o, "features");
		json_array_append_new(a, o);
	}
	hp_store_model_list_free(ms, n);
	hd_json(out, 200, json_pack("{s:o}", "models", a));
}

/* Analyse a model at batch 1: its features as JSON text (without the
 * per-layer table), or NULL with err. */
static char *analyse(struct hp_graph *g, struct hp_error *err)
{
	struct hp_features f = {0};
	struct hp_workload w = {0};
	json_t *o;
	char *s;

	if (hp_analyze(g, 1, NULL, 0, &f, err))
		return NULL;
	o = hp_features_json(g, &f);
	hp_features_release(&f);
	if (!o) {
		hp_error_set(err, HP_ENOMEM, "out of memory");
		return NULL;
	}
	json_object_del(o, "per_layer");
	/* what recommendations will do with it */
	if (hp_workload_from_graph(g, 1, NULL, 0, &w, err)) {
		json_decref(o);
		return NULL;
	}
	hp_workload_release(&w);
	s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (!s)
		hp_error_set(err, HP_ENOMEM, "out of memory");
	return s;
}

void hd_h_models_add(struct hd *d, struct hd_req *r, struct hd_resp *out)
{
	struct hp_api_model_req mr = {0};
	struct hp_api_problem pb = {0};
	struct hp_store_model m = {0};
	struct hp_error err = {0};
	struct hp_graph *g = NULL;
	enum hp_model_kind kind;
	const char *name, *data;
	char *features = NULL;
	size_t len;
	int64_t id;

	if (hp_api_media_is(r->ctype, "application/octet-stream")) {
		name = hd_query(r, "name");
		if (!hp_api_name_valid(name)) {
			hd_problem(out, 400, "invalid-field", "name",
				   "give the model's label as ?name=LABEL: 1 "
				   "to 63 letters, digits, '.', '_' or '-'");
			return;
		}
		if (r->body.len == 0) {
			hd_problem(out, 400, "missing-body", NULL,
				   "send the ONNX file as the body");
			return;
		}
		kind = HP_MODEL_ONNX;
		data = r->body.data;
		len = r->body.len;
		g = hp_onnx_parse(data, len, &err);
	} else {
		if (hp_api_model_parse(r->body.data, r->body.len, &mr, &pb)) {
			hd_problem_from(out, &pb);
			return;
		}
		kind = HP_MODEL_SPEC;
		name = mr.name;
		data = mr.spec;
		len = strlen(mr.spec);
		g = hp_spec_parse(data, len, &err);
	}
	if (!g || !(features = analyse(g, &err))) {
		if (err.code == HP_ENOMEM)
			hd_problem_err(out, &err);
		else
			hd_problem(out, 422, "unprocessable-model", NULL,
				   "the model cannot be analysed: %s", err.msg);
		goto out;
	}
	if (hp_store_model_add(d->store, name, kind, data, len, features,
			       r->who.token_id, &id, &err) ||
	    hp_store_model_get(d->store, id, false, &m, &err)) {
		hd_problem_err(out, &err);
		goto out;
	}
	hd_log(HP_LOG_INFO, "model stored", "model", "i:", (long long)id,
	       "kind", "s:", hp_model_kind_name(kind), "bytes",
	       "i:", (long long)len, "who", "s:", r->who.name, NULL);
	hd_json(out, 201, model_json(&m));
	snprintf(out->location, sizeof(out->location), "/v1/models/%lld",
		 (long long)id);
out:
	hp_store_model_release(&m);
	hp_graph_free(g);
	free(features);
	hp_api_model_release(&mr);
}

static bool path_id(struct hd_req *r, int64_t *id, struct hd_resp *out,
		    const char *what)
{
	if (hp_api_parse_id(r->params[0], id)) {
		hd_problem(out, 404, "not-found", NULL, "no %s '%s'", what,
			   r->params[0]);
		return false;
	}
	return true;
}

void hd_h_model_get(struct hd *d, struct hd_req *r, struct hd_resp *out)
{
	struct hp_store_model m = {0};
	struct hp_error err = {0};
	int64_t id;

	if (!path_id(r, &id, out, "model"))
		return;
	if (hp_store_model_get(d->store, id, false, &m, &err)) {
		hd_problem_err(out, &err);
		return;
	}
	hd_json(out, 200, model_json(&m));
	hp_store_model_release(&m);
}

void hd_h_model_delete(struct hd *d, struct hd_req *r, struct hd_resp *out)
{
	struct hp_store_model m = {0};
	struct hp_error err = {0};
	int64_t id;

	if (!path_id(r, &id, out, "model"))
		return;
	if (hp_store_model_get(d->store, id, false, &m, &err)) {
		hd_problem_err(out, &err);
		return;
	}
	if (r->who.role != HD_ADMIN && m.owner != r->who.token_id) {
		hp_store_model_release(&m);
		hd_problem(out, 403, "forbidden", NULL,
			   "model %lld is not yours; an admin may remove it",
			   (long long)id);
		return;
	}
	hp_store_model_release(&m);
	if (hp_store_model_remove(d->store, id, &err)) {
		hd_problem_err(out, &err);
		return;
	}
	hd_model_forget(d, id);
	hd_text(out, 204, NULL, NULL, 0);
}
