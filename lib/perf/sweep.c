/*
 * sweep.c - families of customized CNNs to measure: the cartesian product
 * of the design's variables (optionally sampled), plus explicit spec
 * files, each at every batch size of the sweep; and the built-in named
 * sweeps ("default", "wide", "calibrate").
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hetpool/perf.h"
#include "util/banned.h"

#define SWEEP_MAX_VALUES 64
#define SWEEP_MAX_CONFIGS 100000

/*
 * The default CPU sweep: a grid of 4 x 5 x 3 x 3 x 4 x 4 = 2,880
 * configurations from which 360 are drawn (seeded), so that every value of
 * every variable appears many times while the whole sweep fits in about 20
 * minutes on a 2-core machine (about 11 measured).
 */
static const char default_sweep[] =
    "{\"conv_layers\": [1, 2, 3, 4],"
    " \"filters\": [8, 16, 32, 48, 64],"
    " \"fc_layers\": [1, 2, 3],"
    " \"fc_width\": [64, 256, 1024],"
    " \"input_size\": [16, 32, 48, 64],"
    " \"batch\": [8, 16, 32, 64],"
    " \"channels\": 3, \"classes\": 10, \"bn\": true, \"dropout\": 0,"
    " \"sample\": 360, \"seed\": 20261130}";

/*
 * "wide": the whole design space users write (kernels 1-7, strides 1 and
 * 2, max and average pooling, 1 and 3 input channels, batch norm on and
 * off, dropout, 10 and 100 classes) over the default sweep's structural
 * variables: 589,824 combinations, 400 drawn, to profile and validate
 * outside the default sweep's grid; then 60 with grouped convs (2 or
 * more channels a group) and residual blocks over the same variables,
 * and 40 depthwise-separable ones (kernels 3, 5 and 7).
 */
static const char wide_sweep[] =
    "[{\"conv_layers\": [1, 2, 3, 4],"
    " \"filters\": [8, 16, 32, 64],"
    " \"fc_layers\": [1, 2, 3],"
    " \"fc_width\": [64, 256, 1024],"
    " \"input_size\": [16, 32, 48, 64],"
    " \"batch\": [8, 16, 32, 64],"
    " \"kernel\": [1, 3, 5, 7], \"stride\": [1, 2],"
    " \"pool\": [\"max\", \"avg\"], \"channels\": [1, 3],"
    " \"bn\": [true, false], \"dropout\": [0, 0.5],"
    " \"classes\": [10, 100],"
    " \"sample\": 400, \"seed\": 20261214},"
    " {\"conv_layers\": [1, 2, 3, 4],"
    " \"filters\": [16, 32, 64],"
    " \"fc_layers\": [1, 2, 3],"
    " \"fc_width\": [256],"
    " \"input_size\": [16, 32, 48, 64],"
    " \"batch\": [8, 16, 32, 64],"
    " \"kernel\": [1, 3, 5, 7], \"stride\": [1, 2],"
    " \"pool\": [\"max\", \"avg\"], \"channels\": [1, 3],"
    " \"bn\": [true, false],"
    " \"groups\": [1, 2, 4, 8], \"residual\": [false, true],"
    " \"sample\": 60, \"seed\": 20261201},"
    " {\"conv_layers\": [2, 3, 4],"
    " \"filters\": [16, 32, 64],"
    " \"fc_layers\": [1, 2],"
    " \"fc_width\": [64, 256, 1024],"
    " \"input_size\": [16, 32, 48, 64],"
    " \"batch\": [8, 16, 32, 64],"
    " \"kernel\": [3, 5, 7], \"stride\": [1, 2],"
    " \"pool\": [\"max\", \"avg\"],"
    " \"channels\": [1, 3], \"bn\": [true, false],"
    " \"groups\": [1, 2, 4], \"separable\": true,"
    " \"residual\": [false, true],"
    " \"sample\": 40, \"seed\": 20261202}]";

/*
 * "calibrate": 24 configurations drawn from a small grid that spans every
 * variable at sizes that take a few seconds each on 2 cores, and 6 deeper
 * nets of 3x3 convs whose maps come down to 2x2-4x4 (where a conv's
 * padding is most of its taps, and the spatial efficiency lowest, as in
 * real networks at small inputs): a quick profile of a new host (hetpool
 * calibrate).
 */
static const char calibrate_sweep[] =
    "[{\"conv_layers\": [1, 2, 3],"
    " \"filters\": [16, 32, 64],"
    " \"fc_layers\": [1, 2],"
    " \"fc_width\": [256],"
    " \"input_size\": [32, 48],"
    " \"batch\": [16, 32],"
    " \"kernel\": [1, 3, 5, 7], \"stride\": [1, 2],"
    " \"pool\": [\"max\", \"avg\"], \"channels\": [1, 3],"
    " \"bn\": [true, false], \"dropout\": [0, 0.5],"
    " \"classes\": [10, 100],"
    " \"sample\": 24, \"seed\": 20261215},"
    " {\"conv_layers\": [3, 4],"
    " \"filters\": [32, 64, 128],"
    " \"fc_layers\": [1],"
    " \"fc_width\": [256],"
    " \"input_size\": [16, 32],"
    " \"batch\": [16, 32],"
    " \"kernel\": [3], \"stride\": [1],"
    " \"pool\": [\"max\"], \"channels\": [3],"
    " \"bn\": [true],"
    " \"sample\": 6, \"seed\": 20261216}]";

const char *hp_sweep_default_json(void)
{
	return default_sweep;
}

const char *hp_sweep_named_json(const char *name)
{
	if (!name)
		return NULL;
	if (!strcmp(name, "default"))
		return default_sweep;
	if (!strcmp(name, "wide"))
		return wide_sweep;
	if (!strcmp(name, "calibrate"))
		return calibrate_sweep;
	return NULL;
}

void hp_sweep_vars_init(struct hp_sweep_vars *v)
{
	memset(v, 0, sizeof(*v));
	v->conv_layers = 2;
	v->filters = 32;
	v->fc_layers = 1;
	v->fc_width = 128;
	v->input_size = 32;
	v->channels = 3;
	v->classes = 10;
	v->bn = true;
	v->dropout = 0;
	v->kernel = 3;
	v->stride = 1;
	v->pool_avg = false;
	v->groups = 1;
	v->separable = false;
	v->residual = false;
}

void hp_sweep_release(struct hp_sweep *s)
{
	if (!s)
		return;
	for (int i = 0; i < s->n; i++)
		hp_spec_release(&s->configs[i].spec);
	free(s->configs);
	memset(s, 0, sizeof(*s));
}

static int add_layer(struct hp_spec *s, struct hp_spec_layer L)
{
	struct hp_spec_layer *p =
	    realloc(s->layers, (size_t)(s->nlayers + 1) * sizeof(*p));

	if (!p)
		return HP_ENOMEM;
	s->layers = p;
	s->layers[s->nlayers++] = L;
	return 0;
}

/*
 * One conv unit of a generated CNN into s: conv (kernel, stride), batch
 * norm if v->bn, relu unless last_relu is false (a residual block's second
 * half: its relu comes after the sum).  on_filters: the unit reads
 * `filters` channels (not the image), so it takes the grouped or the
 * depthwise-separable form: a depthwise conv (one group per channel)
 * with its bn and relu, then a 1x1 pointwise conv in v->groups groups;
 * else v->groups groups on the conv itself.  The first layer of a net
 * reads the image and is always dense.
 */
static int conv_unit(struct hp_spec *s, const struct hp_sweep_vars *v,
		     bool on_filters, int stride, bool last_relu)
{
	struct hp_spec_layer L = {0};
	int rc;

	L.type = HP_LAYER_CONV;
	L.filters = v->filters;
	L.kernel = v->kernel;
	L.stride = stride;
	L.pad = v->kernel / 2; /* "same" at stride 1 */
	L.groups = on_filters ? (v->separable ? v->filters : v->groups) : 1;
	if (L.groups == 1)
		L.groups = 0;
	if ((rc = add_layer(s, L)))
		return rc;
	if (on_filters && v->separable) {
		if (v->bn && (rc = add_layer(s, (struct hp_spec_layer){
						    .type = HP_LAYER_BN})))
			return rc;
		if ((rc = add_layer(
			 s, (struct hp_spec_layer){.type = HP_LAYER_RELU})))
			return rc;
		L = (struct hp_spec_layer){.type = HP_LAYER_CONV,
					   .filters = v->filters,
					   .kernel = 1,
					   .stride = 1,
					   .groups =
					       v->groups > 1 ? v->groups : 0};
		if ((rc = add_layer(s, L)))
			return rc;
	}
	if (v->bn &&
	    (rc = add_layer(s, (struct hp_spec_layer){.type = HP_LAYER_BN})))
		return rc;
	if (last_relu &&
	    (rc = add_layer(s, (struct hp_spec_layer){.type = HP_LAYER_RELU})))
		return rc;
	return 0;
}

int hp_sweep_make_spec(int conv_layers, int64_t filters, int fc_layers,
		       int64_t fc_width, int64_t input_size, int64_t channels,
		       int64_t classes, bool bn, double dropout,
		       struct hp_spec *out, struct hp_error *err)
{
	struct hp_sweep_vars v;

	hp_sweep_vars_init(&v);
	v.conv_layers = conv_layers;
	v.filters = filters;
	v.fc_layers = fc_layers;
	v.fc_width = fc_width;
	v.input_size = input_size;
	v.channels = channels;
	v.classes = classes;
	v.bn = bn;
	v.dropout = dropout;
	return hp_sweep_make_spec_vars(&v, out, err);
}

int hp_sweep_make_spec_vars(const struct hp_sweep_vars *v, struct hp_spec *out,
			    struct hp_error *err)
{
	const int conv_layers = v->conv_layers, fc_layers = v->fc_layers;
	const int64_t filters = v->filters, fc_width = v->fc_width,
		      input_size = v->input_size, channels = v->channels,
		      classes = v->classes;
	const double dropout = v->dropout;
	int64_t size = input_size;
	char name[128];
	size_t nl;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	if (conv_layers < 0 || conv_layers > 64 || fc_layers < 1 ||
	    fc_layers > 64 || filters < 1 || fc_width < 1 || input_size < 1 ||
	    channels < 1 || classes < 1 || v->kernel < 1 || v->kernel > 15 ||
	    v->kernel % 2 == 0 || v->stride < 1 || v->stride > 4 ||
	    !(dropout >= 0 && dropout < 1) || v->groups < 1)
		return hp_error_set(err, HP_EINVAL,
				    "sweep variables out of range: conv_layers "
				    "0..64, fc_layers 1..64, sizes 1 or more, "
				    "kernel odd 1..15, stride 1..4, dropout "
				    "in [0, 1), groups 1 or more");
	if (filters % v->groups)
		return hp_error_set(err, HP_EINVAL,
				    "groups %lld do not divide filters %lld: "
				    "give groups that divide every filter "
				    "count of the sweep",
				    (long long)v->groups, (long long)filters);
	/* The default sweep's names stay as they were: the new variables
	 * appear only off their defaults. */
	snprintf(name, sizeof(name), "cnn-c%d-k%lld-f%d-w%lld-s%lld",
		 conv_layers, (long long)filters, fc_layers,
		 (long long)fc_width, (long long)input_size);
	nl = strlen(name);
	if (v->kernel != 3)
		nl += (size_t)snprintf(name + nl, sizeof(name) - nl, "-ks%d",
				       v->kernel);
	if (v->stride != 1)
		nl += (size_t)snprintf(name + nl, sizeof(name) - nl, "-st%d",
				       v->stride);
	if (v->pool_avg)
		nl += (size_t)snprintf(name + nl, sizeof(name) - nl, "-avg");
	if (v->groups > 1)
		nl += (size_t)snprintf(name + nl, sizeof(name) - nl, "-g%lld",
				       (long long)v->groups);
	if (v->separable)
		nl += (size_t)snprintf(name + nl, sizeof(name) - nl, "-sep");
	if (v->residual)
		snprintf(name + nl, sizeof(name) - nl, "-res");
	out->name = hp_strdup(name);
	if (!out->name)
		goto nomem;
	out->input[0] = channels;
	out->input[1] = out->input[2] = input_size;
	out->classes = classes;
	for (int i = 0; i < conv_layers; i++) {
		struct hp_spec_layer L;
		int unit_out;
		/* The first layer reads the image (1 or 3 channels): a dense
		 * conv; the layers after it read `filters` channels. */
		if ((rc = conv_unit(out, v, i > 0, v->stride, true)))
			goto nomem;
		size = (size - 1) / v->stride + 1;
		if (v->residual) {
			/* A basic block's second half on the same kind of
			 * conv at stride 1, summed with the first half's
			 * output (the identity shortcut), then relu. */
			unit_out = out->nlayers - 1;
			if ((rc = conv_unit(out, v, true, 1, false)))
				goto nomem;
			L = (struct hp_spec_layer){.type = HP_LAYER_ADD,
						   .ninputs = 2};
			L.inputs[0] = unit_out;
			L.inputs[1] = out->nlayers - 1;
			if ((rc = add_layer(out, L)))
				goto nomem;
			L = (struct hp_spec_layer){.type = HP_LAYER_RELU};
			if ((rc = add_layer(out, L)))
				goto nomem;
		}
		if (size >= 8) {
			L = (struct hp_spec_layer){.type = HP_LAYER_POOL,
						   .kernel = 2,
						   .stride = 2,
						   .pool_max = !v->pool_avg};
			if ((rc = add_layer(out, L)))
				goto nomem;
			size /= 2;
		}
	}
	for (int i = 0; i + 1 < fc_layers; i++) {
		struct hp_spec_layer L = {.type = HP_LAYER_FC,
					  .units = fc_width};
		if ((rc = add_layer(out, L)))
			goto nomem;
		L = (struct hp_spec_layer){.type = HP_LAYER_RELU};
		if ((rc = add_layer(out, L)))
			goto nomem;
		if (dropout > 0) {
			L = (struct hp_spec_layer){.type = HP_LAYER_DROPOUT,
						   .p = dropout};
			if ((rc = add_layer(out, L)))
				goto nomem;
		}
	}
	{
		struct hp_spec_layer L = {.type = HP_LAYER_FC,
					  .units = classes};
		if ((rc = add_layer(out, L)))
			goto nomem;
	}
	return 0;
nomem:
	hp_spec_release(out);
	return hp_error_set(err, HP_ENOMEM, "out of memory");
}

/* A list of at most cap integers (or a single integer) from key into v
 * (room for cap), with defaults. */
static int int_list_n(json_t *root, const char *key, int64_t def, int64_t min,
		      int64_t max, int64_t *v, int cap, int *n,
		      struct hp_error *err)
{
	json_t *a = json_object_get(root, key);

	if (!a) {
		v[0] = def;
		*n = 1;
		return 0;
	}
	if (json_is_integer(a)) {
		v[0] = json_integer_value(a);
		*n = 1;
	} else if (json_is_array(a) && json_array_size(a) > 0 &&
		   json_array_size(a) <= (size_t)cap) {
		*n = (int)json_array_size(a);
		for (int i = 0; i < *n; i++) {
			json_t *x = json_array_get(a, (size_t)i);
			if (!json_is_integer(x))
				return hp_error_set(err, HP_EINVAL,
						    "\"%s\"[%d] must be an "
						    "integer",
						    key, i);
			v[i] = json_integer_value(x);
		}
	} else {
		return cap == 1 ? hp_error_set(err, HP_EINVAL,
					       "\"%s\" takes one integer", key)
				: hp_error_set(err, HP_EINVAL,
					       "\"%s\" must be an integer or a "
					       "list of 1 to %d integers",
					       key, cap);
	}
	for (int i = 0; i < *n; i++)
		if (v[i] < min || v[i] > max)
			return hp_error_set(err, HP_ERANGE,
					    "\"%s\" value %lld out of range "
					    "%lld..%lld",
					    key, (long long)v[i],
					    (long long)min, (long long)max);
	return 0;
}

static int int_list(json_t *root, const char *key, int64_t def, int64_t min,
		    int64_t max, int64_t *v, int *n, struct hp_error *err)
{
	return int_list_n(root, key, def, min, max, v, SWEEP_MAX_VALUES, n,
			  err);
}

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

static int push(struct hp_sweep *s, int *cap, struct hp_sweep_config *c,
		struct hp_error *err)
{
	if (s->n >= SWEEP_MAX_CONFIGS) {
		hp_spec_release(&c->spec);
		return hp_error_set(err, HP_ETOOBIG,
				    "sweep has more than %d configurations",
				    SWEEP_MAX_CONFIGS);
	}
	if (s->n == *cap) {
		int nc = *cap ? *cap * 2 : 64;
		struct hp_sweep_config *p =
		    realloc(s->configs, (size_t)nc * sizeof(*p));
		if (!p) {
			hp_spec_release(&c->spec);
			return hp_error_set(err, HP_ENOMEM, "out of memory");
		}
		s->configs = p;
		*cap = nc;
	}
	s->configs[s->n++] = *c;
	return 0;
}

void hp_sweep_spec_ids(const struct hp_spec *sp, int64_t batch,
		       struct hp_sweep_config *c)
{
	char safe[41], *json = hp_spec_to_json(sp);
	uint32_t h = 2166136261u; /* FNV-1a of the spec's JSON */
	size_t i = 0;

	for (const char *p = json ? json : ""; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	free(json);
	/* Names are the user's: keep ids plain ASCII (CSV, JSON, shells). */
	for (const char *p = sp->name ? sp->name : "spec";
	     *p && i + 1 < sizeof(safe); p++) {
		char ch = *p;
		bool ok = (ch >= 'a' && ch <= 'z') ||
			  (ch >= 'A' && ch <= 'Z') ||
			  (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' ||
			  ch == '.';
		safe[i++] = ok ? ch : '_';
	}
	safe[i] = '\0';
	snprintf(c->id, sizeof(c->id), "spec:%s-%08x:b%lld", safe, h,
		 (long long)batch);
	snprintf(c->family, sizeof(c->family), "spec:%.24s", safe);
}

static int add_spec_files(json_t *root, const char *base_dir,
			  const int64_t *batch, int nb, struct hp_sweep *s,
			  int *cap, struct hp_error *err)
{
	json_t *specs = json_object_get(root, "specs");
	size_t i;
	json_t *v;

	if (!specs)
		return 0;
	if (!json_is_array(specs))
		return hp_error_set(err, HP_EINVAL,
				    "\"specs\" must be a list of file names");
	json_array_foreach(specs, i, v)
	{
		char path[4096], *text;
		size_t len;
		struct hp_spec sp;
		int rc;

		if (!json_is_string(v))
			return hp_error_set(
			    err, HP_EINVAL,
			    "\"specs\"[%zu] must be a file name", i);
		if (json_string_value(v)[0] == '/' || !base_dir)
			snprintf(path, sizeof(path), "%s",
				 json_string_value(v));
		else
			snprintf(path, sizeof(path), "%s/%s", base_dir,
				 json_string_value(v));
		rc = hp_read_file(path, 16u << 20, &text, &len, err);
		if (rc) {
			hp_error_prefix(err, "spec '%s'", path);
			return rc;
		}
		rc = hp_spec_parse_only(text, len, &sp, err);
		free(text);
		if (rc) {
			hp_error_prefix(err, "spec '%s'", path);
			return rc;
		}
		for (int b = 0; b < nb; b++) {
			struct hp_sweep_config c = {0};
			char *j = hp_spec_to_json(&sp);
			struct hp_error e2;
			if (!j ||
			    hp_spec_parse_only(j, strlen(j), &c.spec, &e2)) {
				free(j);
				hp_spec_release(&sp);
				return hp_error_set(err, HP_ENOMEM,
						    "out of memory");
			}
			free(j);
			hp_sweep_spec_ids(&sp, batch[b], &c);
			c.batch = batch[b];
			c.input_size = sp.input[1];
			if ((rc = push(s, cap, &c, err))) {
				hp_spec_release(&sp);
				return rc;
			}
		}
		hp_spec_release(&sp);
	}
	return 0;
}

/* A list of booleans (or one) from key: 0 and v, n. */
static int bool_list(json_t *root, const char *key, bool def, bool *v, int *n,
		     struct hp_error *err)
{
	json_t *a = json_object_get(root, key);

	*n = 1;
	v[0] = def;
	if (!a)
		return 0;
	if (json_is_boolean(a)) {
		v[0] = json_is_true(a);
		return 0;
	}
	if (!json_is_array(a) || json_array_size(a) < 1 ||
	    json_array_size(a) > 2)
		return hp_error_set(err, HP_EINVAL,
				    "\"%s\" must be true, false or a list of "
				    "them",
				    key);
	*n = (int)json_array_size(a);
	for (int i = 0; i < *n; i++) {
		json_t *x = json_array_get(a, (size_t)i);
		if (!json_is_boolean(x))
			return hp_error_set(err, HP_EINVAL,
					    "\"%s\"[%d] must be true or false",
					    key, i);
		v[i] = json_is_true(x);
	}
	return 0;
}

/* "dropout": a number in [0, 1) or a list of them. */
static int dropout_list(json_t *root, double *v, int *n, struct hp_error *err)
{
	json_t *a = json_object_get(root, "dropout");

	*n = 1;
	v[0] = 0;
	if (!a)
		return 0;
	if (json_is_array(a)) {
		if (json_array_size(a) < 1 ||
		    json_array_size(a) > SWEEP_MAX_VALUES)
			return hp_error_set(err, HP_EINVAL,
					    "\"dropout\" must be a number or a "
					    "list of 1 to %d numbers",
					    SWEEP_MAX_VALUES);
		*n = (int)json_array_size(a);
	}
	for (int i = 0; i < *n; i++) {
		json_t *x = json_is_array(a) ? json_array_get(a, (size_t)i) : a;
		v[i] = json_number_value(x);
		if (!json_is_number(x) || !(v[i] >= 0 && v[i] < 1))
			return hp_error_set(err, HP_ERANGE,
					    "\"dropout\" must be in [0, 1)");
	}
	return 0;
}

/* "pool": "max" or "avg", or a list of them: v[i] is true for "avg". */
static int pool_list(json_t *root, bool *v, int *n, struct hp_error *err)
{
	json_t *a = json_object_get(root, "pool");

	*n = 1;
	v[0] = false;
	if (!a)
		return 0;
	if (json_is_array(a)) {
		if (json_array_size(a) < 1 || json_array_size(a) > 2)
			return hp_error_set(err, HP_EINVAL,
					    "\"pool\" must be \"max\", \"avg\" "
					    "or a list of them");
		*n = (int)json_array_size(a);
	}
	for (int i = 0; i < *n; i++) {
		json_t *x = json_is_array(a) ? json_array_get(a, (size_t)i) : a;
		const char *t = json_string_value(x);
		if (!t || (strcmp(t, "max") && strcmp(t, "avg")))
			return hp_error_set(err, HP_EINVAL,
					    "\"pool\" must be \"max\", \"avg\" "
					    "or a list of them");
		v[i] = !strcmp(t, "avg");
	}
	return 0;
}

/* The grid's variables, from the outermost to the innermost: the default
 * sweep's six vary innermost (in the order they always had), so a sweep
 * that leaves the new ones at one value draws and orders exactly the
 * configurations it drew before. */
enum {
	V_RESIDUAL,
	V_SEPARABLE,
	V_GROUPS,
	V_CLASSES,
	V_DROPOUT,
	V_BN,
	V_CHANNELS,
	V_POOL,
	V_STRIDE,
	V_KERNEL,
	V_CONV,
	V_FILTERS,
	V_FCL,
	V_FCW,
	V_INPUT,
	V_BATCH,
	NV
};

/* One sweep object's configurations, appended to s. */
static int sweep_object(json_t *root, const char *base_dir, struct hp_sweep *s,
			int *cap, struct hp_error *err)
{
	static const char *const keys[] = {
	    "conv_layers", "filters",  "fc_layers", "fc_width", "input_size",
	    "batch",	   "channels", "classes",   "bn",	"dropout",
	    "sample",	   "seed",     "specs",	    "kernel",	"stride",
	    "pool",	   "groups",   "separable", "residual", NULL};
	int64_t iv[NV][SWEEP_MAX_VALUES];
	double dr[SWEEP_MAX_VALUES];
	bool bnv[2], poolv[2], sepv[2], resv[2];
	int nv[NV], rc;
	int64_t sample, seed;
	int nsa, nse;
	bool grid;
	json_t *v;
	const char *key;

	if (!json_is_object(root))
		return hp_error_set(err, HP_EINVAL,
				    "a sweep is a JSON object (or a list of "
				    "them)");
	json_object_foreach(root, key, v)
	{
		bool ok = false;
		for (int i = 0; keys[i]; i++)
			ok |= !strcmp(key, keys[i]);
		if (!ok)
			return hp_error_set(err, HP_EINVAL,
					    "unknown key \"%s\" in sweep", key);
	}
	grid = json_object_get(root, "conv_layers") ||
	       json_object_get(root, "filters") ||
	       !json_object_get(root, "specs");
	if ((rc = int_list(root, "conv_layers", 2, 0, 64, iv[V_CONV],
			   &nv[V_CONV], err)) ||
	    (rc = int_list(root, "filters", 32, 1, 4096, iv[V_FILTERS],
			   &nv[V_FILTERS], err)) ||
	    (rc = int_list(root, "fc_layers", 1, 1, 64, iv[V_FCL], &nv[V_FCL],
			   err)) ||
	    (rc = int_list(root, "fc_width", 128, 1, 1 << 20, iv[V_FCW],
			   &nv[V_FCW], err)) ||
	    (rc = int_list(root, "input_size", 32, 1, 4096, iv[V_INPUT],
			   &nv[V_INPUT], err)) ||
	    (rc = int_list(root, "batch", 32, 1, 1 << 20, iv[V_BATCH],
			   &nv[V_BATCH], err)) ||
	    (rc = int_list(root, "channels", 3, 1, 4096, iv[V_CHANNELS],
			   &nv[V_CHANNELS], err)) ||
	    (rc = int_list(root, "classes", 10, 1, 1 << 20, iv[V_CLASSES],
			   &nv[V_CLASSES], err)) ||
	    (rc = int_list(root, "kernel", 3, 1, 15, iv[V_KERNEL],
			   &nv[V_KERNEL], err)) ||
	    (rc = int_list(root, "stride", 1, 1, 4, iv[V_STRIDE], &nv[V_STRIDE],
			   err)) ||
	    (rc = int_list(root, "groups", 1, 1, 4096, iv[V_GROUPS],
			   &nv[V_GROUPS], err)) ||
	    (rc = bool_list(root, "separable", false, sepv, &nv[V_SEPARABLE],
			    err)) ||
	    (rc = bool_list(root, "residual", false, resv, &nv[V_RESIDUAL],
			    err)) ||
	    (rc = int_list_n(root, "sample", 0, 0, SWEEP_MAX_CONFIGS, &sample,
			     1, &nsa, err)) ||
	    (rc = int_list_n(root, "seed", 1, 0, INT64_MAX, &seed, 1, &nse,
			     err)) ||
	    (rc = bool_list(root, "bn", true, bnv, &nv[V_BN], err)) ||
	    (rc = dropout_list(root, dr, &nv[V_DROPOUT], err)) ||
	    (rc = pool_list(root, poolv, &nv[V_POOL], err)))
		goto out;
	if (nsa != 1 || nse != 1) {
		rc = hp_error_set(err, HP_EINVAL,
				  "\"sample\" and \"seed\" take one value");
		goto out;
	}
	for (int i = 0; i < nv[V_KERNEL]; i++)
		if (iv[V_KERNEL][i] % 2 == 0) {
			rc = hp_error_set(err, HP_EINVAL,
					  "\"kernel\" value %lld is even: give "
					  "odd sizes (1, 3, 5, 7)",
					  (long long)iv[V_KERNEL][i]);
			goto out;
		}
	if (grid) {
		int64_t total = 1, keep;
		uint64_t rng = (uint64_t)seed;
		int64_t *pick;

		/* 11 lists of up to 64 would overflow: stop past the cap */
		for (int d = 0; d < NV && total <= 10 * SWEEP_MAX_CONFIGS; d++)
			total *= nv[d];
		keep = sample > 0 && sample < total ? sample : total;
		if (total > 10 * SWEEP_MAX_CONFIGS) {
			rc = hp_error_set(err, HP_ETOOBIG,
					  "sweep grid has %lld combinations; "
					  "use \"sample\" or fewer values",
					  (long long)total);
			goto out;
		}
		if (keep > SWEEP_MAX_CONFIGS) {
			rc = hp_error_set(err, HP_ETOOBIG,
					  "sweep has more than %d "
					  "configurations",
					  SWEEP_MAX_CONFIGS);
			goto out;
		}
		pick = malloc((size_t)total * sizeof(*pick));
		if (!pick) {
			rc = hp_error_set(err, HP_ENOMEM, "out of memory");
			goto out;
		}
		for (int64_t i = 0; i < total; i++)
			pick[i] = i;
		/* Partial Fisher-Yates, then back to grid order. */
		if (keep < total) {
			for (int64_t i = 0; i < keep; i++) {
				int64_t j =
				    i + (int64_t)(splitmix(&rng) %
						  (uint64_t)(total - i));
				int64_t t = pick[i];
				pick[i] = pick[j];
				pick[j] = t;
			}
			qsort(pick, (size_t)keep, sizeof(*pick), cmp_i64);
		}
		for (int64_t k = 0; k < keep; k++) {
			int64_t x = pick[k];
			struct hp_sweep_config c = {0};
			struct hp_sweep_vars sv;
			int at[NV];
			for (int d = NV - 1; d >= 0; d--) {
				at[d] = (int)(x % nv[d]);
				x /= nv[d];
			}
			hp_sweep_vars_init(&sv);
			sv.conv_layers = (int)iv[V_CONV][at[V_CONV]];
			sv.filters = iv[V_FILTERS][at[V_FILTERS]];
			sv.fc_layers = (int)iv[V_FCL][at[V_FCL]];
			sv.fc_width = iv[V_FCW][at[V_FCW]];
			sv.input_size = iv[V_INPUT][at[V_INPUT]];
			sv.channels = iv[V_CHANNELS][at[V_CHANNELS]];
			sv.classes = iv[V_CLASSES][at[V_CLASSES]];
			sv.kernel = (int)iv[V_KERNEL][at[V_KERNEL]];
			sv.stride = (int)iv[V_STRIDE][at[V_STRIDE]];
			sv.bn = bnv[at[V_BN]];
			sv.dropout = dr[at[V_DROPOUT]];
			sv.pool_avg = poolv[at[V_POOL]];
			sv.groups = iv[V_GROUPS][at[V_GROUPS]];
			sv.separable = sepv[at[V_SEPARABLE]];
			sv.residual = resv[at[V_RESIDUAL]];
			c.conv_layers = sv.conv_layers;
			c.filters = sv.filters;
			c.fc_layers = sv.fc_layers;
			c.fc_width = sv.fc_width;
			c.input_size = sv.input_size;
			c.batch = iv[V_BATCH][at[V_BATCH]];
			c.vars = sv;
			rc = hp_sweep_make_spec_vars(&sv, &c.spec, err);
			if (rc) {
				free(pick);
				goto out;
			}
			{
				/* Variables off their defaults go in the id. */
				char extra[64] = "";
				size_t o = 0;
				if (sv.channels != 3)
					o += (size_t)snprintf(
					    extra + o, sizeof(extra) - o,
					    "-ch%lld", (long long)sv.channels);
				if (sv.classes != 10)
					o += (size_t)snprintf(
					    extra + o, sizeof(extra) - o,
					    "-n%lld", (long long)sv.classes);
				if (sv.dropout > 0)
					snprintf(extra + o, sizeof(extra) - o,
						 "-d%g", sv.dropout);
				if (snprintf(c.id, sizeof(c.id), "%s-b%lld%s%s",
					     c.spec.name, (long long)c.batch,
					     sv.bn ? "" : "-nobn",
					     extra) >= (int)sizeof(c.id)) {
					/* a cut id could name two nets */
					rc = hp_error_set(
					    err, HP_EINVAL,
					    "configuration %s-b%lld...: its "
					    "id would be longer than %zu "
					    "characters; give smaller values",
					    c.spec.name, (long long)c.batch,
					    sizeof(c.id) - 1);
					hp_spec_release(&c.spec);
					free(pick);
					goto out;
				}
			}
			snprintf(c.family, sizeof(c.family), "c%d-f%d",
				 c.conv_layers, c.fc_layers);
			if ((rc = push(s, cap, &c, err))) {
				free(pick);
				goto out;
			}
		}
		free(pick);
	}
	rc = add_spec_files(root, base_dir, iv[V_BATCH], nv[V_BATCH], s, cap,
			    err);
out:
	return rc;
}

/* Sort key of the union's duplicate check. */
struct id_at {
	const char *id;
	int at;
};

static int cmp_id_at(const void *a, const void *b)
{
	const struct id_at *x = a, *y = b;
	int c = strcmp(x->id, y->id);
	return c ? c : (x->at > y->at) - (x->at < y->at);
}

/* Keep the first of configurations with the same id, in order. */
static int drop_duplicates(struct hp_sweep *s, struct hp_error *err)
{
	struct id_at *k;
	bool *dup;
	int n = 0;

	if (s->n < 2)
		return 0;
	k = malloc((size_t)s->n * sizeof(*k));
	dup = calloc((size_t)s->n, sizeof(*dup));
	if (!k || !dup) {
		free(k);
		free(dup);
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	}
	for (int i = 0; i < s->n; i++)
		k[i] = (struct id_at){s->configs[i].id, i};
	qsort(k, (size_t)s->n, sizeof(*k), cmp_id_at);
	for (int i = 1; i < s->n; i++)
		if (!strcmp(k[i].id, k[i - 1].id))
			dup[k[i].at] = true;
	for (int i = 0; i < s->n; i++) {
		if (dup[i])
			hp_spec_release(&s->configs[i].spec);
		else
			s->configs[n++] = s->configs[i];
	}
	s->n = n;
	free(k);
	free(dup);
	return 0;
}

/* Most sweeps in a list (a union). */
#define SWEEP_MAX_PARTS 16

int hp_sweep_parse(const char *text, size_t len, const char *base_dir,
		   struct hp_sweep *s, struct hp_error *err)
{
	json_error_t jerr;
	json_t *root;
	int cap = 0, rc = 0;

	memset(s, 0, sizeof(*s));
	if (!text) {
		text = default_sweep;
		len = strlen(default_sweep);
	} else {
		/* a built-in sweep by its name */
		char name[16];
		if (len < sizeof(name)) {
			memcpy(name, text, len);
			name[len] = '\0';
			if (hp_sweep_named_json(name)) {
				text = hp_sweep_named_json(name);
				len = strlen(text);
			}
		}
	}
	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return hp_error_set(err, HP_EPARSE,
				    "invalid JSON at line %d column %d: %s",
				    jerr.line, jerr.column, jerr.text);
	if (json_is_array(root)) {
		size_t n = json_array_size(root);
		if (n < 1 || n > SWEEP_MAX_PARTS)
			rc = hp_error_set(err, HP_EINVAL,
					  "a list of sweeps holds 1 to %d "
					  "sweep objects, not %zu",
					  SWEEP_MAX_PARTS, n);
		for (size_t i = 0; !rc && i < n; i++)
			if ((rc = sweep_object(json_array_get(root, i),
					       base_dir, s, &cap, err)))
				hp_error_prefix(err, "sweep [%zu]", i);
		if (!rc)
			rc = drop_duplicates(s, err);
	} else {
		rc = sweep_object(root, base_dir, s, &cap, err);
	}
	json_decref(root);
	if (rc)
		hp_sweep_release(s);
	return rc;
}

int hp_sweep_default(struct hp_sweep *out, struct hp_error *err)
{
	return hp_sweep_parse(NULL, 0, NULL, out, err);
}
