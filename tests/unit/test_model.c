/*
 * test_model.c - model import, shape propagation and features, checked
 * against independent references: PyTorch's own counts (REFERENCE.csv
 * files made with forward hooks), hand counts, and shapes worked out from
 * the ONNX operator definitions.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "hetpool/model.h"
#include "onnx_build.h"
#include "test.h"

static const char spec_example[] =
    "{\"name\":\"cnn-a\",\"input\":[3,32,32],\"classes\":10,\"layers\":["
    "{\"type\":\"conv\",\"filters\":32,\"kernel\":3,\"stride\":1,\"pad\":1},"
    "{\"type\":\"bn\"},{\"type\":\"relu\"},"
    "{\"type\":\"pool\",\"op\":\"max\",\"kernel\":2,\"stride\":2},"
    "{\"type\":\"dropout\",\"p\":0.5},{\"type\":\"fc\",\"units\":128},"
    "{\"type\":\"relu\"},{\"type\":\"fc\",\"units\":10}]}";

struct ref_row {
	char model[64];
	int64_t params, macs;
};

/* Read a REFERENCE.csv (model,input,trainable_params,forward_macs,...). */
static int read_reference(const char *path, struct ref_row *rows, int max)
{
	FILE *f = fopen(path, "r");
	char line[512];
	int n = 0;

	if (!f)
		return -1;
	if (!fgets(line, sizeof(line), f)) {
		fclose(f);
		return -1;
	}
	while (n < max && fgets(line, sizeof(line), f)) {
		char input[32];
		long long p, m;
		if (sscanf(line, "%63[^,],%31[^,],%lld,%lld", rows[n].model,
			   input, &p, &m) == 4) {
			rows[n].params = p;
			rows[n].macs = m;
			n++;
		}
	}
	fclose(f);
	return n;
}

static struct hp_graph *load(const char *path)
{
	struct hp_error err = {0};
	struct hp_graph *g = hp_model_load(path, &err);

	if (!g)
		HP_FAIL("loading %s: %s", path, err.msg);
	return g;
}

/* Every model of a reference folder: params exact for training exports,
 * MACs within 0.5% for both exports. */
static void check_reference_dir(const char *dir, int min_models)
{
	struct ref_row rows[64];
	char path[8192];
	int n, checked = 0;

	snprintf(path, sizeof(path), "%s/REFERENCE.csv", dir);
	n = read_reference(path, rows, 64);
	ASSERT(n >= min_models);
	for (int i = 0; i < n; i++) {
		/* the opset 13 files, and any later opset's export of the
		 * same model (same counts) */
		static const char *const kinds[] = {
		    "train", "eval", "opset17.train", "opset17.eval"};
		for (int k = 0; k < 4; k++) {
			struct hp_features f;
			struct hp_error err = {0};
			struct hp_graph *g;
			double rel;

			snprintf(path, sizeof(path), "%s/%s.%s.onnx", dir,
				 rows[i].model, kinds[k]);
			if (access(path, R_OK) != 0)
				continue;
			g = load(path);
			if (hp_analyze(g, 1, NULL, 0, &f, &err))
				HP_FAIL("%s: %s", path, err.msg);
			rel = (double)(f.macs_per_sample - rows[i].macs) /
			      (double)rows[i].macs;
			fprintf(stderr,
				"%-40s params %lld (ref %lld) macs %lld "
				"(ref %lld, %+.3f%%) skipped %d\n",
				path + strlen(dir) + 1, (long long)f.params,
				(long long)rows[i].params,
				(long long)f.macs_per_sample,
				(long long)rows[i].macs, rel * 100, f.nskipped);
			if (k % 2 == 0 && f.params != rows[i].params)
				HP_FAIL("%s: params %lld, reference %lld", path,
					(long long)f.params,
					(long long)rows[i].params);
			if (rel > 0.005 || rel < -0.005)
				HP_FAIL("%s: macs %lld off reference %lld by "
					"%.3f%%",
					path, (long long)f.macs_per_sample,
					(long long)rows[i].macs, rel * 100);
			ASSERT_EQ_INT(f.nskipped, 0);
			checked++;
			hp_features_release(&f);
			hp_graph_free(g);
		}
	}
	ASSERT(checked >= 2 * min_models);
}

HP_TEST(model_reference_shared)
{
	const char *dir = hp_test_shared("data/models");
	if (!dir) {
		fprintf(stderr, "shared/data/models not present: skipped\n");
		return;
	}
	check_reference_dir(dir, 5);
}

HP_TEST(model_reference_more_architectures)
{
	const char *dir = hp_test_path("tests/data/models");
	char p[4096];
	snprintf(p, sizeof(p), "%s/REFERENCE.csv", dir);
	if (access(p, R_OK) != 0)
		HP_FAIL("missing %s (tools/gen_test_models.py makes it)", p);
	check_reference_dir(dir, 8);
}

HP_TEST(model_spec_example_counts)
{
	struct hp_error err = {0};
	struct hp_features f;
	struct hp_graph *g =
	    hp_spec_parse(spec_example, strlen(spec_example), &err);

	ASSERT(g);
	ASSERT_EQ_INT(hp_analyze(g, 4, NULL, 0, &f, &err), 0);
	/* By hand: conv 32*3*3*3+32, bn 2*32, fc 8192*128+128, fc 128*10+10. */
	ASSERT_EQ_INT(f.params, 896 + 64 + 1048704 + 1290);
	ASSERT_EQ_INT(f.nontrainable, 64);
	/* MACs: conv 32*32*32*27, fc 8192*128, fc 128*10. */
	ASSERT_EQ_INT(f.macs_per_sample, 884736 + 1048576 + 1280);
	ASSERT_EQ_INT(f.kind_count[HP_KIND_CONV], 1);
	ASSERT_EQ_INT(f.kind_count[HP_KIND_FC], 2);
	ASSERT_EQ_INT(f.kind_count[HP_KIND_NORM], 1);
	ASSERT_EQ_INT(f.kind_count[HP_KIND_POOL], 1);
	ASSERT_EQ_INT(f.kind_count[HP_KIND_ACTIVATION], 2);
	ASSERT_EQ_INT(f.kind_count[HP_KIND_DROPOUT], 1);
	ASSERT_EQ_INT(f.kind_count[HP_KIND_LOSS], 1);
	/* Forward FLOPs of the conv: 2 per MAC plus the bias, batch 4. */
	ASSERT_NEAR(f.layers[0].flops_fwd, 4.0 * (2 * 884736 + 32768), 1e-12);
	/* The first conv's input needs no gradient: no input-gradient work. */
	ASSERT_NEAR(f.layers[0].flops_bwd_input, 0, 0);
	ASSERT_NEAR(f.layers[0].flops_bwd_weight, 4.0 * (2 * 884736 + 32768),
		    1e-12);
	ASSERT_EQ_INT(f.weights_bytes, 4 * f.params);
	ASSERT_EQ_INT(f.adam_state_bytes, 8 * f.params);
	ASSERT_EQ_INT(f.input_bytes, 4 * 3 * 32 * 32 * 4 + 4 * 8);
	ASSERT_EQ_INT(f.conv_layers, 1);
	ASSERT_EQ_INT(f.fc_layers, 2);
	ASSERT_EQ_INT(f.max_filters, 32);
	ASSERT_EQ_INT(f.max_fc_width, 128);
	hp_features_release(&f);
	hp_graph_free(g);
}

/* A net that ends in 4-D (a 1x1 conv to the classes, a global average
 * pooling: no fc) has its C x 1 x 1 outputs as the logits: analysed as
 * the engine trains it, its MACs by hand.  A global pooling alone on a
 * 1-channel input (found by fuzz_spec) too. */
/* A max pool in ceil mode: 8 -> 4 at kernel 3, stride 2 (3 without), in
 * the spec's own shapes and in the analysis of its graph alike. */
HP_TEST(model_spec_pool_ceil_mode)
{
	static const char js[] =
	    "{\"input\":[3,8,8],\"layers\":[{\"type\":\"conv\",\"filters\":4,"
	    "\"kernel\":3,\"pad\":1},{\"type\":\"pool\",\"kernel\":3,"
	    "\"stride\":2,\"ceil_mode\":true},{\"type\":\"fc\",\"units\":2}]}";
	struct hp_error err = {0};
	struct hp_features f;
	struct hp_spec s;
	int64_t sh[3][3];
	struct hp_graph *g = hp_spec_parse(js, strlen(js), &err);

	if (!g)
		HP_FAIL("%s", err.msg);
	ASSERT_EQ_INT(hp_analyze(g, 1, NULL, 0, &f, &err), 0);
	/* conv 3*9*4 + 4; fc over 4 x 4 x 4: 64*2 + 2 (over 3 x 3: 74) */
	ASSERT_EQ_INT(f.params, 112 + 130);
	hp_features_release(&f);
	hp_graph_free(g);
	ASSERT_EQ_INT(hp_spec_parse_only(js, strlen(js), &s, &err), 0);
	ASSERT_EQ_INT(hp_spec_shapes(&s, sh, NULL, &err), 0);
	ASSERT_EQ_INT(sh[1][1], 4);
	ASSERT_EQ_INT(sh[1][2], 4);
	hp_spec_release(&s);
}

/* Spec s (released here) written back as JSON holds each of the needles
 * (a NULL-terminated list). */
static void written_back(struct hp_spec *s, ...)
{
	char *back = hp_spec_to_json(s);
	const char *needle;
	va_list ap;

	ASSERT(back != NULL);
	va_start(ap, s);
	while ((needle = va_arg(ap, const char *)))
		if (!strstr(back, needle))
			HP_FAIL("%s is not in %s", needle, back);
	va_end(ap);
	free(back);
	hp_spec_release(s);
}

HP_TEST(model_spec_slice_and_shuffle)
{
	/* conv to 8 channels, channels 2..5 of them, a shuffle of the 4 in 2
	 * groups, a 1x1 conv, fc: the analysis sees the slice's 4 channels
	 * and the shuffle's Reshape, Transpose and Reshape keep them */
	static const char js[] =
	    "{\"input\":[3,6,6],\"layers\":[{\"type\":\"conv\",\"filters\":8,"
	    "\"kernel\":3,\"pad\":1},{\"type\":\"slice\",\"start\":2,"
	    "\"channels\":4},{\"type\":\"shuffle\",\"groups\":2},{\"type\":"
	    "\"conv\",\"filters\":5,\"kernel\":1},{\"type\":\"fc\",\"units\":"
	    "2}]}";
	struct hp_error err = {0};
	struct hp_features f;
	struct hp_spec s;
	int64_t sh[5][3];
	struct hp_graph *g = hp_spec_parse(js, strlen(js), &err);

	if (!g)
		HP_FAIL("%s", err.msg);
	ASSERT_EQ_INT(hp_analyze(g, 2, NULL, 0, &f, &err), 0);
	/* conv 3*9*8 + 8, conv 4*5 + 5, fc 5*36*2 + 2 */
	ASSERT_EQ_INT(f.params, 224 + 25 + 362);
	/* MACs: 36 pixels x (8*27 + 5*4), and the fc's 180*2 */
	ASSERT_EQ_INT(f.macs_per_sample, 36 * (8 * 27 + 5 * 4) + 360);
	hp_features_release(&f);
	hp_graph_free(g);
	ASSERT_EQ_INT(hp_spec_parse_only(js, strlen(js), &s, &err), 0);
	ASSERT_EQ_INT(hp_spec_shapes(&s, sh, NULL, &err), 0);
	ASSERT_EQ_INT(sh[1][0], 4);
	ASSERT_EQ_INT(sh[2][0], 4);
	ASSERT_EQ_INT(s.layers[1].start, 2);
	ASSERT_EQ_INT(s.layers[2].groups, 2);
	/* the spec round trip keeps both */
	written_back(&s, "{\"type\":\"slice\",\"start\":2,\"channels\":4}",
		     "{\"type\":\"shuffle\",\"groups\":2}", NULL);
}

/* Each of n specs refused by the parser with a message that says
 * why[i]. */
static void specs_refused(const char *const *bad, const char *const *why,
			  size_t n)
{
	struct hp_error err = {0};
	struct hp_spec s;

	for (size_t i = 0; i < n; i++) {
		ASSERT_EQ_INT(
		    hp_spec_parse_only(bad[i], strlen(bad[i]), &s, &err) < 0,
		    1);
		if (!strstr(err.msg, why[i]))
			HP_FAIL("%s: %s", bad[i], err.msg);
	}
}

HP_TEST(model_spec_leakyrelu_tanh_elu)
{
	/* defaults (PyTorch's: 0.01 and 1), the alphas written back, the
	 * analysis's ops with their alphas, bad alphas named */
	static const char js[] =
	    "{\"input\":[1,4,4],\"layers\":[{\"type\":\"conv\",\"filters\":4,"
	    "\"kernel\":3},{\"type\":\"leakyrelu\"},{\"type\":\"tanh\"},"
	    "{\"type\":\"elu\",\"alpha\":0.5},{\"type\":\"fc\",\"units\":3},"
	    "{\"type\":\"leakyrelu\",\"alpha\":0.2},{\"type\":\"elu\"},"
	    "{\"type\":\"softplus\"}]}";
	static const char *const bad[] = {
	    "{\"input\":[1,4,4],\"layers\":[{\"type\":\"leakyrelu\","
	    "\"alpha\":-0.1}]}",
	    "{\"input\":[1,4,4],\"layers\":[{\"type\":\"elu\",\"alpha\":"
	    "\"x\"}]}",
	    "{\"input\":[1,4,4],\"layers\":[{\"type\":\"tanh\",\"alpha\":"
	    "1}]}",
	    "{\"input\":[1,4,4],\"layers\":[{\"type\":\"elu\",\"beta\":"
	    "1}]}"};
	static const char *const why[] = {"\"alpha\" must be in [0, 1e6]",
					  "\"alpha\" must be a finite number",
					  "alpha", "beta"};
	struct hp_error err = {0};
	struct hp_spec s;
	struct hp_graph *g = hp_spec_parse(js, strlen(js), &err);
	int lr = 0, th = 0, el = 0, sp = 0;

	if (!g)
		HP_FAIL("%s", err.msg);
	for (int i = 0; i < g->nnodes; i++) {
		const struct hp_node *n = &g->nodes[i];
		sp += !strcmp(n->op, "Softplus");
		if (!strcmp(n->op, "LeakyRelu")) {
			double a = hp_node_attr_f(n, "alpha", -1);
			ASSERT(fabs(a - (lr ? 0.2 : 0.01)) < 1e-7);
			lr++;
		}
		th += !strcmp(n->op, "Tanh");
		if (!strcmp(n->op, "Elu")) {
			double a = hp_node_attr_f(n, "alpha", -1);
			ASSERT(fabs(a - (el ? 1 : 0.5)) < 1e-7);
			el++;
		}
	}
	ASSERT_EQ_INT(lr, 2);
	ASSERT_EQ_INT(th, 1);
	ASSERT_EQ_INT(el, 2);
	ASSERT_EQ_INT(sp, 1);
	hp_graph_free(g);
	ASSERT_EQ_INT(hp_spec_parse_only(js, strlen(js), &s, &err), 0);
	ASSERT_EQ_INT(s.layers[1].type, HP_LAYER_LEAKYRELU);
	ASSERT(s.layers[1].alpha == 0.01);
	ASSERT_EQ_INT(s.layers[2].type, HP_LAYER_TANH);
	ASSERT(s.layers[6].alpha == 1);
	written_back(&s, "{\"type\":\"tanh\"}",
		     "{\"type\":\"elu\",\"alpha\":0.5}",
		     "{\"type\":\"leakyrelu\",\"alpha\":0.2", NULL);
	specs_refused(bad, why, sizeof(bad) / sizeof(bad[0]));
}

HP_TEST(model_spec_scale)
{
	/* factor x + shift: constants, not parameters (the analysis sees
	 * the Mul and Add an export of x / 255 - 0.5 has); defaults 1 and
	 * 0; a factor of 0 named */
	static const char js[] =
	    "{\"input\":[1,4,4],\"layers\":[{\"type\":\"scale\",\"factor\":"
	    "0.5,\"shift\":-1},{\"type\":\"conv\",\"filters\":2,\"kernel\":3},"
	    "{\"type\":\"scale\",\"shift\":2},{\"type\":\"scale\",\"factor\":"
	    "3},{\"type\":\"fc\",\"units\":3}]}";
	static const char *const bad[] = {
	    "{\"input\":[1,4,4],\"layers\":[{\"type\":\"scale\",\"factor\":"
	    "0}]}",
	    "{\"input\":[1,4,4],\"layers\":[{\"type\":\"scale\",\"alpha\":"
	    "1}]}",
	    "{\"input\":[1,4,4],\"layers\":[{\"type\":\"scale\",\"shift\":"
	    "1e9}]}"};
	static const char *const why[] = {"\"factor\" must not be 0", "alpha",
					  "within +-1e6"};
	struct hp_error err = {0};
	struct hp_features f;
	struct hp_spec s;
	struct hp_graph *g = hp_spec_parse(js, strlen(js), &err);
	int mul = 0, add = 0;

	if (!g)
		HP_FAIL("%s", err.msg);
	for (int i = 0; i < g->nnodes; i++) {
		mul += !strcmp(g->nodes[i].op, "Mul");
		add += !strcmp(g->nodes[i].op, "Add");
	}
	ASSERT_EQ_INT(mul, 2);
	ASSERT_EQ_INT(add, 2);
	ASSERT_EQ_INT(hp_analyze(g, 2, NULL, 0, &f, &err), 0);
	/* conv 1*9*2 + 2, fc 2*2*2*3 + 3: the scales add none */
	ASSERT_EQ_INT(f.params, 20 + 27);
	hp_features_release(&f);
	hp_graph_free(g);
	ASSERT_EQ_INT(hp_spec_parse_only(js, strlen(js), &s, &err), 0);
	ASSERT(s.layers[0].alpha == 0.5 && s.layers[0].beta == -1);
	ASSERT(s.layers[2].alpha == 1 && s.layers[2].beta == 2);
	ASSERT(s.layers[3].alpha == 3 && s.layers[3].beta == 0);
	written_back(&s,
		     "{\"type\":\"scale\",\"factor\":0.5,\"shift\":"
		     "-1.0}",
		     NULL);
	specs_refused(bad, why, sizeof(bad) / sizeof(bad[0]));
}

HP_TEST(model_spec_conv_dilated)
{
	/* a 3x3 conv dilated 2 spans 5x5: 9x9 padded 2 stays 9x9, and the
	 * analysis counts its 9 taps a position, inside the input only; a
	 * span over the padded input, a dilation of 0 and a pool's named */
	static const char js[] =
	    "{\"input\":[1,9,9],\"layers\":[{\"type\":\"conv\",\"filters\":2,"
	    "\"kernel\":3,\"pad\":2,\"dilation\":2},{\"type\":\"fc\","
	    "\"units\":3}]}";
	static const char *const bad[] = {
	    "{\"input\":[1,4,4],\"layers\":[{\"type\":\"conv\",\"filters\":2,"
	    "\"kernel\":3,\"dilation\":2}]}",
	    "{\"input\":[1,9,9],\"layers\":[{\"type\":\"conv\",\"filters\":2,"
	    "\"kernel\":3,\"dilation\":0}]}",
	    "{\"input\":[1,9,9],\"layers\":[{\"type\":\"pool\",\"op\":\"max\","
	    "\"kernel\":2,\"stride\":2,\"dilation\":2}]}"};
	static const char *const why[] = {
	    "kernel 5x5 (dilated) larger than input 4x4", "\"dilation\"",
	    "dilation"};
	struct hp_error err = {0};
	struct hp_features f;
	struct hp_spec s;
	int64_t(*sh)[3];
	struct hp_graph *g = hp_spec_parse(js, strlen(js), &err);

	if (!g)
		HP_FAIL("%s", err.msg);
	ASSERT_EQ_INT(hp_analyze(g, 1, NULL, 0, &f, &err), 0);
	/* conv 9*2 + 2, fc 2*81*3 + 3 */
	ASSERT_EQ_INT(f.params, 20 + 489);
	hp_features_release(&f);
	hp_graph_free(g);
	ASSERT_EQ_INT(hp_spec_parse_only(js, strlen(js), &s, &err), 0);
	sh = calloc(2, sizeof(*sh));
	ASSERT(sh && hp_spec_shapes(&s, sh, NULL, &err) == 0);
	ASSERT_EQ_INT(sh[0][1], 9);
	ASSERT_EQ_INT(sh[0][2], 9);
	free(sh);
	written_back(&s, "\"dilation\":2", NULL);
	specs_refused(bad, why, sizeof(bad) / sizeof(bad[0]));
}

HP_TEST(model_spec_conv_asymmetric_pads)
{
	/* a 3x3 conv at stride 2 on 8x8 padded 0 at the top and left, 1 at
	 * the bottom and right: 4x4 out; the analysis graph's pads say so;
	 * five pads, and a pool's four, named */
	static const char js[] =
	    "{\"input\":[1,8,8],\"layers\":[{\"type\":\"conv\",\"filters\":2,"
	    "\"kernel\":3,\"stride\":2,\"pad\":[0,0,1,1]},{\"type\":\"fc\","
	    "\"units\":3}]}";
	static const char *const bad[] = {
	    "{\"input\":[1,8,8],\"layers\":[{\"type\":\"conv\",\"filters\":2,"
	    "\"kernel\":3,\"pad\":[0,0,1,1,1]}]}",
	    "{\"input\":[1,8,8],\"layers\":[{\"type\":\"pool\",\"op\":\"max\","
	    "\"kernel\":2,\"stride\":2,\"pad\":[0,0,1,1]}]}"};
	static const char *const why[] = {"[top, left, bottom, right]",
					  "\"pad\""};
	struct hp_error err = {0};
	struct hp_spec s;
	int64_t(*sh)[3];
	struct hp_graph *g = hp_spec_parse(js, strlen(js), &err);
	const struct hp_attr *a = NULL;

	if (!g)
		HP_FAIL("%s", err.msg);
	for (int i = 0; i < g->nnodes; i++)
		if (!strcmp(g->nodes[i].op, "Conv"))
			a = hp_node_attr(&g->nodes[i], "pads");
	ASSERT(a && a->n == 4 && a->ints[0] == 0 && a->ints[1] == 0 &&
	       a->ints[2] == 1 && a->ints[3] == 1);
	hp_graph_free(g);
	ASSERT_EQ_INT(hp_spec_parse_only(js, strlen(js), &s, &err), 0);
	ASSERT(s.layers[0].asym && s.layers[0].pad_b == 1);
	sh = calloc(2, sizeof(*sh));
	ASSERT(sh && hp_spec_shapes(&s, sh, NULL, &err) == 0);
	ASSERT_EQ_INT(sh[0][1], 4);
	ASSERT_EQ_INT(sh[0][2], 4);
	free(sh);
	written_back(&s, "\"pad\":[0,0,1,1]", NULL);
	specs_refused(bad, why, sizeof(bad) / sizeof(bad[0]));
}

HP_TEST(model_spec_layernorm_and_gelu)
{
	/* conv to 8 channels, a layer norm (eps 1e-6), gelu, a 1x1 conv, a
	 * layer norm of the fc's flat output: the analysis sees each layer
	 * norm as PyTorch runs it (Transpose to channels-last,
	 * LayerNormalization with a weight and a bias of C, Transpose back;
	 * on flat data the norm alone) */
	static const char js[] =
	    "{\"input\":[3,6,6],\"layers\":[{\"type\":\"conv\",\"filters\":8,"
	    "\"kernel\":3,\"pad\":1},{\"type\":\"layernorm\",\"eps\":1e-6},"
	    "{\"type\":\"gelu\"},{\"type\":\"conv\",\"filters\":5,\"kernel\":"
	    "1},{\"type\":\"fc\",\"units\":4},{\"type\":\"layernorm\"}]}";
	static const char *const bad[] = {
	    "{\"input\":[3,4,4],\"layers\":[{\"type\":\"layernorm\",\"eps\":0}]"
	    "}",
	    "{\"input\":[3,4,4],\"layers\":[{\"type\":\"layernorm\",\"eps\":2}]"
	    "}",
	    "{\"input\":[3,4,4],\"layers\":[{\"type\":\"layernorm\",\"eps\":"
	    "\"x\"}]}",
	    "{\"input\":[3,4,4],\"layers\":[{\"type\":\"layernorm\",\"groups\":"
	    "2}]}",
	    "{\"input\":[3,4,4],\"layers\":[{\"type\":\"gelu\",\"eps\":1}]}"};
	static const char *const why[] = {
	    "\"eps\" must be in (0, 1]", "\"eps\" must be in (0, 1]",
	    "\"eps\" must be a finite number", "groups", "eps"};
	struct hp_error err = {0};
	struct hp_features f;
	struct hp_spec s;
	struct hp_graph *g = hp_spec_parse(js, strlen(js), &err);
	int ln = 0, tr = 0, ge = 0;

	if (!g)
		HP_FAIL("%s", err.msg);
	for (int i = 0; i < g->nnodes; i++) {
		ln += !strcmp(g->nodes[i].op, "LayerNormalization");
		tr += !strcmp(g->nodes[i].op, "Transpose");
		ge += !strcmp(g->nodes[i].op, "Gelu");
	}
	ASSERT_EQ_INT(ln, 2);
	ASSERT_EQ_INT(tr, 2);
	ASSERT_EQ_INT(ge, 1);
	ASSERT_EQ_INT(hp_analyze(g, 2, NULL, 0, &f, &err), 0);
	/* conv 3*9*8 + 8, layer norm 2*8, conv 8*5 + 5, fc 5*36*4 + 4,
	 * layer norm 2*4 */
	ASSERT_EQ_INT(f.params, 224 + 16 + 45 + 724 + 8);
	hp_features_release(&f);
	hp_graph_free(g);
	ASSERT_EQ_INT(hp_spec_parse_only(js, strlen(js), &s, &err), 0);
	ASSERT(fabs(s.layers[1].eps - 1e-6) < 1e-12);
	ASSERT(fabs(s.layers[5].eps - 1e-5) < 1e-12);
	written_back(&s, "{\"type\":\"gelu\"}",
		     "{\"type\":\"layernorm\",\"eps\":", NULL);
	specs_refused(bad, why, sizeof(bad) / sizeof(bad[0]));
}

HP_TEST(model_spec_groupnorm)
{
	/* conv to 8 channels, a group norm of 2 groups (eps 1e-3), an
	 * instance norm (8 groups), a group norm of flat data: the analysis
	 * sees each as ONNX's GroupNormalization, a scale and a bias of C;
	 * bad groups and eps named */
	static const char js[] =
	    "{\"input\":[3,6,6],\"layers\":[{\"type\":\"conv\",\"filters\":8,"
	    "\"kernel\":3,\"pad\":1},{\"type\":\"groupnorm\",\"groups\":2,"
	    "\"eps\":1e-3},{\"type\":\"relu\"},{\"type\":\"groupnorm\","
	    "\"groups\":8},{\"type\":\"fc\",\"units\":6},{\"type\":"
	    "\"groupnorm\",\"groups\":3}]}";
	static const char *const bad[] = {
	    "{\"input\":[8,4,4],\"layers\":[{\"type\":\"groupnorm\"}]}",
	    "{\"input\":[8,4,4],\"layers\":[{\"type\":\"groupnorm\","
	    "\"groups\":0}]}",
	    "{\"input\":[8,4,4],\"layers\":[{\"type\":\"groupnorm\","
	    "\"groups\":3}]}",
	    "{\"input\":[8,4,4],\"layers\":[{\"type\":\"groupnorm\","
	    "\"groups\":2,\"eps\":0}]}",
	    "{\"input\":[8,4,4],\"layers\":[{\"type\":\"groupnorm\","
	    "\"groups\":2,\"alpha\":1}]}"};
	static const char *const why[] = {
	    "missing \"groups\"", "\"groups\" is 0",
	    "3 groups of 8 channels (must divide them)",
	    "\"eps\" must be in (0, 1]", "alpha"};
	struct hp_error err = {0};
	struct hp_features f;
	struct hp_spec s;
	struct hp_graph *g = hp_spec_parse(js, strlen(js), &err);
	int gn = 0;

	if (!g)
		HP_FAIL("%s", err.msg);
	for (int i = 0; i < g->nnodes; i++)
		if (!strcmp(g->nodes[i].op, "GroupNormalization")) {
			int64_t want = gn == 0 ? 2 : gn == 1 ? 8 : 3;
			ASSERT_EQ_INT(
			    hp_node_attr_i(&g->nodes[i], "num_groups", 0),
			    want);
			gn++;
		}
	ASSERT_EQ_INT(gn, 3);
	ASSERT_EQ_INT(hp_analyze(g, 2, NULL, 0, &f, &err), 0);
	/* conv 3*9*8 + 8, two norms 2*8, fc 8*36*6 + 6, norm 2*6 */
	ASSERT_EQ_INT(f.params, 224 + 32 + 1734 + 12);
	hp_features_release(&f);
	hp_graph_free(g);
	ASSERT_EQ_INT(hp_spec_parse_only(js, strlen(js), &s, &err), 0);
	ASSERT_EQ_INT(s.layers[1].groups, 2);
	ASSERT(fabs(s.layers[1].eps - 1e-3) < 1e-12);
	ASSERT(fabs(s.layers[3].eps - 1e-5) < 1e-12);
	written_back(&s,
		     "{\"type\":\"groupnorm\",\"groups\":8,"
		     "\"eps\":",
		     NULL);
	specs_refused(bad, why, sizeof(bad) / sizeof(bad[0]));
}

HP_TEST(model_spec_prelu)
{
	/* one slope by default, one a channel when asked: the analysis's
	 * PRelu with a slope of 1, or of C, 1, 1 on an image and C on flat
	 * data; bad per_channel named */
	static const char js[] =
	    "{\"input\":[3,6,6],\"layers\":[{\"type\":\"conv\",\"filters\":8,"
	    "\"kernel\":3,\"pad\":1},{\"type\":\"prelu\",\"per_channel\":"
	    "true},{\"type\":\"prelu\"},{\"type\":\"fc\",\"units\":6},"
	    "{\"type\":\"prelu\",\"per_channel\":true}]}";
	static const char *const bad[] = {
	    "{\"input\":[8,4,4],\"layers\":[{\"type\":\"prelu\","
	    "\"per_channel\":1}]}",
	    "{\"input\":[8,4,4],\"layers\":[{\"type\":\"prelu\","
	    "\"alpha\":0.25}]}"};
	static const char *const why[] = {
	    "\"per_channel\" must be true or false", "alpha"};
	static const int64_t slope[3][3] = {{3, 8, 1}, {1, 1, 0}, {1, 6, 0}};
	struct hp_error err = {0};
	struct hp_features f;
	struct hp_spec s;
	struct hp_graph *g = hp_spec_parse(js, strlen(js), &err);
	int np = 0;

	if (!g)
		HP_FAIL("%s", err.msg);
	for (int i = 0; i < g->nnodes; i++)
		if (!strcmp(g->nodes[i].op, "PRelu")) {
			const struct hp_tensor *t =
			    &g->tensors[g->nodes[i].inputs[1]];
			ASSERT(np < 3);
			ASSERT_EQ_INT(t->rank, slope[np][0]);
			ASSERT_EQ_INT(t->dims[0], slope[np][1]);
			np++;
		}
	ASSERT_EQ_INT(np, 3);
	ASSERT_EQ_INT(hp_analyze(g, 2, NULL, 0, &f, &err), 0);
	/* conv 3*9*8 + 8, slopes 8 and 1, fc 8*36*6 + 6, slopes 6 */
	ASSERT_EQ_INT(f.params, 224 + 9 + 1734 + 6);
	hp_features_release(&f);
	hp_graph_free(g);
	ASSERT_EQ_INT(hp_spec_parse_only(js, strlen(js), &s, &err), 0);
	ASSERT(s.layers[1].per_channel && !s.layers[2].per_channel);
	written_back(&s, "{\"type\":\"prelu\",\"per_channel\":false}", NULL);
	specs_refused(bad, why, sizeof(bad) / sizeof(bad[0]));
}

HP_TEST(model_spec_scale_per_channel)
{
	/* a factor and a shift per channel: the analysis's Mul and Add of
	 * C, 1, 1 constants, the arrays written back; bad arrays named */
	static const char js[] =
	    "{\"input\":[3,4,4],\"layers\":[{\"type\":\"scale\",\"factor\":"
	    "[2,4,8],\"shift\":[-1,0,1]},{\"type\":\"conv\",\"filters\":2,"
	    "\"kernel\":3}]}";
	static const char *const bad[] = {
	    "{\"input\":[3,4,4],\"layers\":[{\"type\":\"scale\","
	    "\"factor\":[1,2],\"shift\":[0,0,0]}]}",
	    "{\"input\":[3,4,4],\"layers\":[{\"type\":\"scale\","
	    "\"factor\":[1,0,2]}]}",
	    "{\"input\":[3,4,4],\"layers\":[{\"type\":\"scale\","
	    "\"factor\":[1,2,3,4,5]}]}",
	    "{\"input\":[3,4,4],\"layers\":[{\"type\":\"scale\","
	    "\"factor\":[1,2]}]}",
	    "{\"input\":[3,4,4],\"layers\":[{\"type\":\"scale\","
	    "\"factor\":[1,\"a\",2]}]}"};
	static const char *const why[] = {
	    "arrays of the same length", "channel 1", "1 to 4",
	    "2 factors for 3 channels", "channel 1"};
	struct hp_error err = {0};
	struct hp_spec s;
	struct hp_graph *g = hp_spec_parse(js, strlen(js), &err);
	int mul = 0, add = 0;

	if (!g)
		HP_FAIL("%s", err.msg);
	for (int i = 0; i < g->nnodes; i++) {
		const struct hp_node *n = &g->nodes[i];
		if (!strcmp(n->op, "Mul") || !strcmp(n->op, "Add")) {
			const struct hp_tensor *t = &g->tensors[n->inputs[1]];
			ASSERT(t->rank == 3 && t->dims[0] == 3 &&
			       t->nfvals == 3);
			ASSERT(t->fvals[2] == (n->op[0] == 'M' ? 8 : 1));
			mul += n->op[0] == 'M';
			add += n->op[0] == 'A';
		}
	}
	ASSERT(mul == 1 && add == 1);
	hp_graph_free(g);
	ASSERT_EQ_INT(hp_spec_parse_only(js, strlen(js), &s, &err), 0);
	ASSERT(s.layers[0].nch == 3 && s.layers[0].chf[1] == 4 &&
	       s.layers[0].chs[0] == -1);
	written_back(&s,
		     "\"factor\":[2.0,4.0,8.0],\"shift\":[-1.0,"
		     "0.0,1.0]",
		     NULL);
	specs_refused(bad, why, sizeof(bad) / sizeof(bad[0]));
}

HP_TEST(model_spec_conv_rectangular)
{
	/* a 1x7 conv padded 0, 3 on a 3x5x9 input, then a 3x1 padded 1, 0:
	 * the image keeps 5x9 through both */
	static const char js[] =
	    "{\"input\":[3,5,9],\"layers\":[{\"type\":\"conv\",\"filters\":4,"
	    "\"kernel\":[1,7],\"pad\":[0,3]},{\"type\":\"conv\",\"filters\":2,"
	    "\"kernel\":[3,1],\"pad\":[1,0]},{\"type\":\"conv\",\"filters\":"
	    "2,\"kernel\":[3,3],\"pad\":[1,1]}]}";
	struct hp_error err = {0};
	struct hp_features f;
	struct hp_spec s;
	int64_t sh[3][3];
	struct hp_graph *g = hp_spec_parse(js, strlen(js), &err);

	if (!g)
		HP_FAIL("%s", err.msg);
	ASSERT_EQ_INT(hp_analyze(g, 1, NULL, 0, &f, &err), 0);
	/* weights 4*3*7 + 4, 2*4*3 + 2, 2*2*9 + 2; MACs 45 pixels x
	 * (4*21 + 2*12 + 2*18) */
	ASSERT_EQ_INT(f.params, 88 + 26 + 38);
	ASSERT_EQ_INT(f.macs_per_sample, 45 * (84 + 24 + 36));
	hp_features_release(&f);
	hp_graph_free(g);
	ASSERT_EQ_INT(hp_spec_parse_only(js, strlen(js), &s, &err), 0);
	ASSERT_EQ_INT(hp_spec_shapes(&s, sh, NULL, &err), 0);
	ASSERT_EQ_INT(sh[0][1], 5);
	ASSERT_EQ_INT(sh[0][2], 9);
	ASSERT_EQ_INT(sh[1][1], 5);
	ASSERT_EQ_INT(sh[1][2], 9);
	ASSERT(s.layers[0].rect && s.layers[1].rect);
	/* a pair of equal values is the square form */
	ASSERT(!s.layers[2].rect);
	written_back(&s, "\"kernel\":[1,7]", "\"pad\":[1,0]", "\"kernel\":3,",
		     NULL);
}

HP_TEST(model_spec_ending_in_4d_analyses)
{
	static const char allconv[] =
	    "{\"name\":\"allconv\",\"input\":[3,32,32],\"classes\":10,"
	    "\"layers\":[{\"type\":\"conv\",\"filters\":16,\"kernel\":3,"
	    "\"stride\":1,\"pad\":1},{\"type\":\"relu\"},{\"type\":\"conv\","
	    "\"filters\":10,\"kernel\":1,\"stride\":1,\"pad\":0},"
	    "{\"type\":\"gap\"}]}";
	static const char gap[] = "{\"name\":\"dag\",\"input\":[1,8,8],"
				  "\"classes\":1,\"layers\":[{\"type\":"
				  "\"gap\"}]}";
	struct hp_error err = {0};
	struct hp_features f;
	struct hp_graph *g = hp_spec_parse(allconv, strlen(allconv), &err);

	if (!g)
		HP_FAIL("%s", err.msg);
	if (hp_analyze(g, 4, NULL, 0, &f, &err))
		HP_FAIL("%s", err.msg);
	/* conv 16*3*3*3+16, conv 10*16+10 */
	ASSERT_EQ_INT(f.params, 448 + 170);
	/* MACs: 32*32 pixels x (16*27 + 10*16) */
	ASSERT_EQ_INT(f.macs_per_sample, 1024 * (16 * 27 + 10 * 16));
	ASSERT_EQ_INT(f.kind_count[HP_KIND_LOSS], 1);
	hp_features_release(&f);
	hp_graph_free(g);
	g = hp_spec_parse(gap, strlen(gap), &err);
	if (!g)
		HP_FAIL("%s", err.msg);
	if (hp_analyze(g, 2, NULL, 0, &f, &err))
		HP_FAIL("%s", err.msg);
	ASSERT_EQ_INT(f.params, 0);
	hp_features_release(&f);
	hp_graph_free(g);
}

HP_TEST(model_flops_scale_with_batch)
{
	struct hp_graph *g =
	    load(hp_test_path("data/models/resnet18.train.onnx"));
	struct hp_features a, b;
	struct hp_error err = {0};

	ASSERT_EQ_INT(hp_analyze(g, 1, NULL, 0, &a, &err), 0);
	ASSERT_EQ_INT(hp_analyze(g, 8, NULL, 0, &b, &err), 0);
	ASSERT_EQ_INT(a.macs_per_sample, b.macs_per_sample);
	ASSERT_NEAR(b.flops_fwd, 8 * a.flops_fwd, 1e-9);
	ASSERT_EQ_INT(b.activations_bytes, 8 * a.activations_bytes);
	ASSERT_EQ_INT(a.params, b.params);
	/* Forward FLOPs are at least 2 per MAC, and conv dominates. */
	ASSERT(a.flops_fwd >= 2.0 * (double)a.macs_per_sample);
	ASSERT(a.flops_fwd < 2.2 * (double)a.macs_per_sample);
	hp_features_release(&a);
	hp_features_release(&b);
	hp_graph_free(g);
}

HP_TEST(model_input_shape_override)
{
	struct hp_graph *g =
	    load(hp_test_path("data/models/resnet18.train.onnx"));
	struct hp_features a, b;
	struct hp_error err = {0};
	int64_t shape[3] = {3, 448, 448}, bad[2] = {3, 448};

	ASSERT_EQ_INT(hp_analyze(g, 1, NULL, 0, &a, &err), 0);
	ASSERT_EQ_INT(hp_analyze(g, 1, shape, 3, &b, &err), 0);
	/* Convs scale with the area; the fc layer does not (global pool). */
	ASSERT_NEAR((double)(b.macs_per_sample - 512000) /
			(double)(a.macs_per_sample - 512000),
		    4.0, 1e-9);
	ASSERT(hp_analyze(g, 1, bad, 2, &b, &err) == HP_EINVAL);
	hp_features_release(&a);
	hp_graph_free(g);
}

static struct hp_graph *parse_ob(struct ob *b, struct hp_error *err)
{
	size_t len;
	uint8_t *buf = ob_finish(b, &len);
	struct hp_graph *g = hp_onnx_parse(buf, len, err);
	free(buf);
	return g;
}

static const struct hp_tensor *T(const struct hp_graph *g, const char *name)
{
	int i = hp_graph_find_tensor(g, name);
	if (i < 0)
		HP_FAIL("no tensor '%s'", name);
	return &g->tensors[i];
}

#define ASSERT_DIMS(t, ...)                                                    \
	do {                                                                   \
		int64_t want_[] = {__VA_ARGS__};                               \
		int nw_ = (int)(sizeof(want_) / sizeof(want_[0]));             \
		if ((t)->rank != nw_)                                          \
			HP_FAIL("%s: rank %d, expected %d", (t)->name,         \
				(t)->rank, nw_);                               \
		for (int i_ = 0; i_ < nw_; i_++)                               \
			if ((t)->dims[i_] != want_[i_])                        \
				HP_FAIL("%s: dim %d is %lld, expected %lld",   \
					(t)->name, i_,                         \
					(long long)(t)->dims[i_],              \
					(long long)want_[i_]);                 \
	} while (0)

/* A Reshape whose shape comes from Shape -> Gather -> Unsqueeze -> Concat,
 * as exporters write `x.view(x.size(0), -1)`. */
HP_TEST(shape_folds_shape_chain)
{
	struct ob *b = ob_new(13);
	int64_t in[4] = {-1, 8, 4, 4}, zero = 0, minus1 = -1, ax0 = 0;
	struct hp_error err = {0};
	struct hp_features f;
	struct hp_graph *g;
	int n;

	ob_input(b, "x", 4, in);
	ob_node(b, "Shape", "x", "s");
	ob_const_i64(b, "i0", -1, &zero); /* scalar index */
	n = ob_node(b, "Gather", "s,i0", "n");
	ob_attr_i(b, n, "axis", 0);
	ob_init_i64(b, "axes", 1, &ax0);
	ob_node(b, "Unsqueeze", "n,axes", "nu");
	ob_const_i64(b, "m1", 1, &minus1);
	n = ob_node(b, "Concat", "nu,m1", "shape");
	ob_attr_i(b, n, "axis", 0);
	ob_node(b, "Reshape", "x,shape", "y");
	ob_output(b, "y");
	g = parse_ob(b, &err);
	ASSERT(g);
	if (hp_analyze(g, 5, NULL, 0, &f, &err))
		HP_FAIL("%s", err.msg);
	ASSERT_DIMS(T(g, "y"), 5, 128);
	ASSERT_EQ_INT(T(g, "shape")->nival, 2);
	ASSERT_EQ_INT(T(g, "shape")->ival[0], 5);
	ASSERT_EQ_INT(f.nskipped, 0);
	hp_features_release(&f);
	hp_graph_free(g);
}

/* F.pad's pads as PyTorch computes them (nn.ZeroPad2d((0, 1, 0, 1))):
 * (left, right, top, bottom) and zeros for the other axes, Reshape to
 * pairs, a Slice reversing the rows, Transpose, Reshape flat, Cast: the
 * values go through each step, so the Pad's pads are known. */
HP_TEST(shape_folds_pad_pairs)
{
	struct ob *b = ob_new(13);
	int64_t in[4] = {-1, 2, 4, 4}, lrtb[4] = {0, 1, 0, 1}, z[4] = {0},
		pairs[2] = {-1, 2}, flat = -1, st = -1, en = INT64_MIN, ax = 0,
		sp = -1;
	static const int64_t want[8] = {0, 0, 0, 0, 0, 0, 1, 1};
	struct hp_error err = {0};
	struct hp_features f;
	struct hp_graph *g;
	int n;

	ob_input(b, "x", 4, in);
	ob_const_i64(b, "lrtb", 4, lrtb);
	ob_const_i64(b, "zeros", 4, z);
	n = ob_node(b, "Concat", "lrtb,zeros", "c");
	ob_attr_i(b, n, "axis", 0);
	ob_const_i64(b, "pairs", 2, pairs);
	ob_node(b, "Reshape", "c,pairs", "r");
	ob_const_i64(b, "st", 1, &st);
	ob_const_i64(b, "en", 1, &en);
	ob_const_i64(b, "ax", 1, &ax);
	ob_const_i64(b, "sp", 1, &sp);
	ob_node(b, "Slice", "r,st,en,ax,sp", "rev");
	n = ob_node(b, "Transpose", "rev", "t");
	ob_attr_ints(b, n, "perm", 2, (int64_t[]){1, 0});
	ob_const_i64(b, "flat", 1, &flat);
	ob_node(b, "Reshape", "t,flat", "tf");
	ob_attr_i(b, ob_node(b, "Cast", "tf", "pads"), "to", 7);
	ob_node(b, "Pad", "x,pads", "y");
	ob_output(b, "y");
	g = parse_ob(b, &err);
	ASSERT(g);
	if (hp_analyze(g, 3, NULL, 0, &f, &err))
		HP_FAIL("%s", err.msg);
	ASSERT_EQ_INT(T(g, "rev")->nival, 8);
	ASSERT_EQ_INT(T(g, "rev")->ival[0], 0); /* the last pair first */
	ASSERT_EQ_INT(T(g, "pads")->nival, 8);
	for (int i = 0; i < 8; i++)
		ASSERT_EQ_INT(T(g, "pads")->ival[i], want[i]);
	ASSERT_DIMS(T(g, "y"), 3, 2, 5, 5);
	hp_features_release(&f);
	hp_graph_free(g);
}

/* An input normalization inside the model, (x - mean) / std with a mean
 * and a std per channel stored (PyTorch buffers): not parameters, as a
 * stored shift added to a conv's output is. */
HP_TEST(analysis_input_normalization_is_not_trained)
{
	struct ob *b = ob_new(13);
	int64_t in[4] = {-1, 3, 4, 4}, c311[3] = {3, 1, 1}, w[4] = {2, 3, 1, 1},
		c211[3] = {2, 1, 1};
	struct hp_error err = {0};
	struct hp_features f;
	struct hp_graph *g;

	ob_input(b, "x", 4, in);
	ob_init(b, "mean", 3, c311);
	ob_init(b, "std", 3, c311);
	ob_init(b, "w", 4, w);
	ob_init(b, "shift", 3, c211);
	ob_node(b, "Sub", "x,mean", "xc");
	ob_node(b, "Div", "xc,std", "xn");
	ob_node(b, "Conv", "xn,w", "c");
	ob_node(b, "Add", "c,shift", "y");
	ob_output(b, "y");
	g = parse_ob(b, &err);
	ASSERT(g);
	ASSERT_EQ_INT(hp_analyze(g, 2, NULL, 0, &f, &err), 0);
	ASSERT_EQ_INT(f.params, 6 + 2);	  /* the conv's weight, the shift */
	ASSERT_EQ_INT(f.nontrainable, 6); /* the mean and the std */
	hp_features_release(&f);
	hp_graph_free(g);
}

/* A model exported without its parameters (export_params=False): its
 * weights are graph inputs with no initializer; they count as parameters,
 * and the data input stays the one input.  A second input an Add reads is
 * data, and stays an input. */
HP_TEST(onnx_weights_as_graph_inputs)
{
	int64_t in[4] = {-1, 3, 8, 8}, w[4] = {4, 3, 3, 3}, c4[1] = {4},
		fw[2] = {5, 4}, fb[1] = {5}, y2[2] = {-1, 5};
	struct hp_error err = {0};
	struct hp_features f;
	struct hp_graph *g;

	for (int v = 0; v < 2; v++) {
		struct ob *b = ob_new(13);
		int n;
		ob_input(b, "x", 4, in);
		ob_input(b, "w", 4, w);
		ob_input(b, "bias", 1, c4);
		ob_input(b, "g", 1, c4);
		ob_input(b, "be", 1, c4);
		ob_input(b, "m", 1, c4);
		ob_input(b, "va", 1, c4);
		ob_input(b, "fw", 2, fw);
		ob_input(b, "fb", 1, fb);
		if (v)
			ob_input(b, "x2", 2, y2);
		ob_node(b, "Conv", "x,w,bias", "c");
		ob_node(b, "BatchNormalization", "c,g,be,m,va", "bn");
		ob_node(b, "GlobalAveragePool", "bn", "gp");
		n = ob_node(b, "Flatten", "gp", "fl");
		ob_attr_i(b, n, "axis", 1);
		n = ob_node(b, "Gemm", "fl,fw,fb", v ? "z" : "y");
		ob_attr_i(b, n, "transB", 1);
		if (v)
			ob_node(b, "Add", "z,x2", "y");
		ob_output(b, "y");
		g = parse_ob(b, &err);
		if (!g)
			HP_FAIL("%s", err.msg);
		ASSERT_EQ_INT(g->ninputs, v ? 2 : 1);
		ASSERT(!strcmp(g->tensors[g->inputs[0]].name, "x"));
		ASSERT(T(g, "w")->initializer && !T(g, "w")->graph_input);
		if (hp_analyze(g, 2, NULL, 0, &f, &err))
			HP_FAIL("%s", err.msg);
		/* conv 4*27 + 4, bn 2*4 trainable (mean, var not), fc 5*4 + 5
		 */
		ASSERT_EQ_INT(f.params, 112 + 8 + 25);
		hp_features_release(&f);
		hp_graph_free(g);
	}
}

HP_TEST(shape_conv_variants)
{
	struct ob *b = ob_new(13);
	int64_t in[4] = {-1, 8, 15, 15}, w[4] = {16, 2, 3, 3},
		wt[4] = {16, 4, 4, 4}, wd[4] = {8, 1, 3, 3};
	int64_t two[2] = {2, 2}, pads[4] = {1, 1, 1, 1}, dil[2] = {2, 2};
	struct hp_error err = {0};
	struct hp_features f;
	struct hp_graph *g;
	int n;

	ob_input(b, "x", 4, in);
	ob_init(b, "w", 4, w);
	/* Grouped conv, stride 2, SAME_UPPER: ceil(15/2) = 8. */
	n = ob_node(b, "Conv", "x,w", "a");
	ob_attr_i(b, n, "group", 4);
	ob_attr_ints(b, n, "strides", 2, two);
	ob_attr_s(b, n, "auto_pad", "SAME_UPPER");
	/* Depthwise with dilation 2 and pad 1: 15 + 2 - 5 + 1 = 13. */
	ob_init(b, "wd", 4, wd);
	n = ob_node(b, "Conv", "x,wd", "d");
	ob_attr_i(b, n, "group", 8);
	ob_attr_ints(b, n, "dilations", 2, dil);
	ob_attr_ints(b, n, "pads", 4, pads);
	/* Transposed conv: stride 2, k 4, pad 1: 2*(8-1) + 4 - 2 = 16. */
	ob_init(b, "wt", 4, wt);
	n = ob_node(b, "ConvTranspose", "a,wt", "t");
	ob_attr_ints(b, n, "strides", 2, two);
	ob_attr_ints(b, n, "pads", 4, pads);
	/* Max pool with ceil_mode: ceil((16 - 3) / 2) + 1 = 8. */
	n = ob_node(b, "MaxPool", "t", "p");
	ob_attr_ints(b, n, "kernel_shape", 2, (int64_t[]){3, 3});
	ob_attr_ints(b, n, "strides", 2, two);
	ob_attr_i(b, n, "ceil_mode", 1);
	ob_output(b, "p");
	ob_output(b, "d");
	g = parse_ob(b, &err);
	ASSERT(g);
	ASSERT_EQ_INT(hp_analyze(g, 2, NULL, 0, &f, &err), 0);
	ASSERT_DIMS(T(g, "a"), 2, 16, 8, 8);
	ASSERT_DIMS(T(g, "d"), 2, 8, 13, 13);
	ASSERT_DIMS(T(g, "t"), 2, 4, 16, 16);
	ASSERT_DIMS(T(g, "p"), 2, 4, 8, 8);
	/* MACs per sample: grouped conv 16*8*8 * 2*3*3; depthwise 8*13*13*9;
	 * transposed: input elements 16*8*8 x 4*4*4. */
	ASSERT_EQ_INT(f.macs_per_sample,
		      16 * 64 * 18 + 8 * 169 * 9 + 16 * 64 * 64);
	ASSERT_EQ_INT(f.params, 16 * 2 * 9 + 8 * 9 + 16 * 4 * 16);
	hp_features_release(&f);
	hp_graph_free(g);
}

HP_TEST(shape_matmul_attention_and_split)
{
	struct ob *b = ob_new(13);
	int64_t in[3] = {-1, 10, 24}, w[2] = {24, 72}, sp[3] = {24, 24, 24};
	int64_t hd[4] = {0, 10, 3, 8}, perm[4] = {0, 2, 1, 3},
		permk[4] = {0, 2, 3, 1};
	struct hp_error err = {0};
	struct hp_features f;
	struct hp_graph *g;
	int n;

	ob_input(b, "x", 3, in);
	ob_init(b, "wqkv", 2, w);
	ob_node(b, "MatMul", "x,wqkv", "qkv"); /* fc: weight operand */
	ob_init_i64(b, "split", 3, sp);
	n = ob_node(b, "Split", "qkv,split", "q,k,v");
	ob_attr_i(b, n, "axis", -1);
	ob_init_i64(b, "hd", 4, hd);
	ob_node(b, "Reshape", "q,hd", "q4");
	ob_node(b, "Reshape", "k,hd", "k4");
	ob_node(b, "Reshape", "v,hd", "v4");
	n = ob_node(b, "Transpose", "q4", "qt");
	ob_attr_ints(b, n, "perm", 4, perm);
	n = ob_node(b, "Transpose", "k4", "kt");
	ob_attr_ints(b, n, "perm", 4, permk);
	n = ob_node(b, "Transpose", "v4", "vt");
	ob_attr_ints(b, n, "perm", 4, perm);
	ob_node(b, "MatMul", "qt,kt", "s"); /* [B,3,10,10] */
	n = ob_node(b, "Softmax", "s", "a");
	ob_attr_i(b, n, "axis", -1);
	ob_node(b, "MatMul", "a,vt", "o"); /* [B,3,10,8] */
	ob_output(b, "o");
	g = parse_ob(b, &err);
	ASSERT(g);
	ASSERT_EQ_INT(hp_analyze(g, 2, NULL, 0, &f, &err), 0);
	ASSERT_DIMS(T(g, "k"), 2, 10, 24);
	ASSERT_DIMS(T(g, "kt"), 2, 3, 8, 10);
	ASSERT_DIMS(T(g, "s"), 2, 3, 10, 10);
	ASSERT_DIMS(T(g, "o"), 2, 3, 10, 8);
	ASSERT_EQ_INT(f.kind_count[HP_KIND_FC], 1);
	ASSERT_EQ_INT(f.kind_count[HP_KIND_ATTN_MATMUL], 2);
	/* 10*24*72 + 3*10*10*8 + 3*10*8*10 per sample */
	ASSERT_EQ_INT(f.macs_per_sample, 17280 + 2400 + 2400);
	ASSERT_EQ_INT(f.params, 24 * 72);
	hp_features_release(&f);
	hp_graph_free(g);
}

HP_TEST(shape_broadcast_slice_squeeze_pad_resize)
{
	struct ob *b = ob_new(13);
	int64_t in[4] = {-1, 4, 6, 6}, bias[3] = {4, 1, 1};
	int64_t st[1] = {-1}, en[1] = {-100}, ax[1] = {3}, step[1] = {-2};
	int64_t pads[8] = {0, 0, 1, 2, 0, 0, 1, 2}, axes02[2] = {0, 2};
	struct hp_error err = {0};
	struct hp_features f;
	struct hp_graph *g;

	ob_input(b, "x", 4, in);
	ob_init(b, "bias", 3, bias);
	ob_node(b, "Add", "x,bias", "y");
	ob_init_i64(b, "st", 1, st);
	ob_init_i64(b, "en", 1, en);
	ob_init_i64(b, "ax", 1, ax);
	ob_init_i64(b, "step", 1, step);
	ob_node(b, "Slice", "y,st,en,ax,step", "s"); /* 6 -> 3 along W */
	ob_init_i64(b, "pads", 8, pads);
	ob_node(b, "Pad", "s,pads", "p"); /* H 6+2, W 3+4 */
	ob_node(b, "ReduceMean", "p", "r");
	ob_init_i64(b, "axes02", 2, axes02);
	ob_node(b, "Unsqueeze", "x,axes02", "u");
	ob_output(b, "r");
	ob_output(b, "u");
	g = parse_ob(b, &err);
	ASSERT(g);
	ASSERT_EQ_INT(hp_analyze(g, 3, NULL, 0, &f, &err), 0);
	ASSERT_DIMS(T(g, "y"), 3, 4, 6, 6);
	ASSERT_DIMS(T(g, "s"), 3, 4, 6, 3);
	ASSERT_DIMS(T(g, "p"), 3, 4, 8, 7);
	ASSERT_DIMS(T(g, "r"), 1, 1, 1, 1);
	ASSERT_DIMS(T(g, "u"), 1, 3, 1, 4, 6, 6);
	ASSERT_EQ_INT(f.params, 4);
	hp_features_release(&f);
	hp_graph_free(g);
}

HP_TEST(shape_unknown_op_is_skipped_not_fatal)
{
	struct ob *b = ob_new(13);
	int64_t in[2] = {-1, 16}, w[2] = {8, 16};
	struct hp_error err = {0};
	struct hp_features f;
	struct hp_graph *g;
	int n;

	ob_input(b, "x", 2, in);
	ob_node(b, "FancyNewActivation", "x", "a");
	ob_init(b, "w", 2, w);
	n = ob_node(b, "Gemm", "a,w", "y");
	ob_attr_i(b, n, "transB", 1);
	ob_output(b, "y");
	g = parse_ob(b, &err);
	ASSERT(g);
	ASSERT_EQ_INT(hp_analyze(g, 1, NULL, 0, &f, &err), 0);
	ASSERT_EQ_INT(f.nskipped, 1);
	ASSERT_STR_EQ(f.skipped[0], "FancyNewActivation");
	ASSERT_EQ_INT(f.macs_per_sample, 128);
	ASSERT_EQ_INT(f.params, 128);
	ASSERT_EQ_INT(f.kind_count[HP_KIND_OTHER], 1);
	hp_features_release(&f);
	hp_graph_free(g);
}

static int parse_err(struct ob *b, char *msg, size_t n)
{
	struct hp_error err = {0};
	struct hp_graph *g = parse_ob(b, &err);
	struct hp_features f;
	int rc;

	if (!g) {
		snprintf(msg, n, "%s", err.msg);
		return err.code;
	}
	rc = hp_analyze(g, 1, NULL, 0, &f, &err);
	snprintf(msg, n, "%s", err.msg);
	hp_features_release(&f);
	hp_graph_free(g);
	return rc;
}

HP_TEST(bad_graph_cycle)
{
	struct ob *b = ob_new(13);
	int64_t in[2] = {-1, 4};
	char msg[256];

	ob_input(b, "x", 2, in);
	ob_node(b, "Add", "x,c", "a");
	ob_node(b, "Relu", "a", "c");
	ob_output(b, "c");
	ASSERT_EQ_INT(parse_err(b, msg, sizeof(msg)), HP_ECYCLE);
	ASSERT(strstr(msg, "cycle"));
}

HP_TEST(bad_graph_dangling_name)
{
	struct ob *b = ob_new(13);
	int64_t in[2] = {-1, 4};
	char msg[256];

	ob_input(b, "x", 2, in);
	ob_node(b, "Add", "x,nowhere", "a");
	ob_output(b, "a");
	ASSERT_EQ_INT(parse_err(b, msg, sizeof(msg)), HP_EPARSE);
	ASSERT(strstr(msg, "'nowhere'"));
}

HP_TEST(bad_graph_negative_pads_and_overflow)
{
	struct ob *b = ob_new(13);
	int64_t in[4] = {-1, 3, 8, 8}, w[4] = {4, 3, 3, 3};
	int64_t pads[4] = {-1, 0, 0, 0},
		huge[4] = {1 << 20, 1 << 20, 1 << 20, 1 << 20};
	char msg[256];
	int n;

	ob_input(b, "x", 4, in);
	ob_init(b, "w", 4, w);
	n = ob_node(b, "Conv", "x,w", "y");
	ob_attr_ints(b, n, "pads", 4, pads);
	ob_output(b, "y");
	ASSERT_EQ_INT(parse_err(b, msg, sizeof(msg)), HP_ESHAPE);
	ASSERT(strstr(msg, "pad"));

	b = ob_new(13);
	ob_input(b, "x", 4, huge); /* 2^80 elements */
	ob_node(b, "Relu", "x", "y");
	ob_output(b, "y");
	ASSERT_EQ_INT(parse_err(b, msg, sizeof(msg)), HP_ESHAPE);

	b = ob_new(13);
	ob_input(b, "x", 4, in);
	ob_init(b, "w", 4, (int64_t[]){4, 3, 9, 9}); /* kernel > input */
	ob_node(b, "Conv", "x,w", "y");
	ob_output(b, "y");
	ASSERT_EQ_INT(parse_err(b, msg, sizeof(msg)), HP_ESHAPE);
	ASSERT(strstr(msg, "kernel 9 larger"));
}

HP_TEST(bad_onnx_truncated_and_garbage)
{
	struct hp_error err = {0};
	char *data;
	size_t len;
	struct hp_graph *g;
	int fails = 0;

	ASSERT_EQ_INT(
	    hp_read_file(hp_test_path("data/models/resnet18.train.onnx"),
			 1 << 26, &data, &len, &err),
	    0);
	/* Every cut of the file parses or fails cleanly; most fail. */
	for (size_t cut = 0; cut < len; cut += len / 97 + 1) {
		g = hp_onnx_parse(data, cut, &err);
		if (!g) {
			ASSERT(err.msg[0]);
			fails++;
		}
		hp_graph_free(g);
	}
	ASSERT(fails > 50);
	for (size_t i = 0; i < len; i += 7)
		data[i] = (char)(data[i] * 31 + 7);
	g = hp_onnx_parse(data, len, &err);
	hp_graph_free(g);
	free(data);
	ASSERT(!hp_onnx_parse("\x0a\xff\xff\xff\xff\x0f", 6, &err));
	ASSERT(strstr(err.msg, "not a valid ONNX"));
}

HP_TEST(bad_spec_inputs)
{
	static const struct {
		const char *json;
		const char *needle;
	} cases[] = {
	    {"{\"input\":[3,8,8],\"layers\":[{\"type\":\"conv\",\"filters\":4,"
	     "\"kernel\":9}]}",
	     "kernel 9x9 larger"},
	    {"{\"input\":[3,8,8],\"layers\":[{\"type\":\"pool\",\"kernel\":2},"
	     "{\"type\":\"pool\",\"kernel\":2},{\"type\":\"pool\",\"kernel\":2}"
	     ","
	     "{\"type\":\"pool\",\"kernel\":2}]}",
	     "layer 3 (pool)"},
	    {"{\"input\":[3,8,8],\"layers\":[{\"type\":\"conv\",\"filters\":0,"
	     "\"kernel\":3}]}",
	     "\"filters\" is 0"},
	    {"{\"input\":[3,-8,8],\"layers\":[{\"type\":\"relu\"}]}",
	     "\"input\"[1]"},
	    {"{\"input\":[3,8,8],\"layers\":[{\"type\":\"conv\",\"filter\":4,"
	     "\"kernel\":3}]}",
	     "unknown key \"filter\""},
	    {"{\"input\":[3,8,8],\"layers\":[{\"type\":\"lstm\"}]}",
	     "unknown type"},
	    {"{\"input\":[3,8,8],\"classes\":10,\"layers\":[{\"type\":\"fc\","
	     "\"units\":7}]}",
	     "\"classes\" is 10"},
	    {"{\"input\":[3,8,8],\"layers\":[]}", "non-empty"},
	    {"{\"input\":[3,8,8],\"layers\":[{\"type\":\"relu\"}],"
	     "\"layers\":[]}",
	     "invalid JSON"},
	    {"[1,2]", "object"},
	    {"{\"input\":[3,8,8],\"layers\":[{\"type\":\"dropout\",\"p\":1.5}]"
	     "}",
	     "\"p\""},
	    {"{\"input\":[3,8,8],\"layers\":[{\"type\":\"pool\",\"kernel\":3,"
	     "\"ceil_mode\":1}]}",
	     "\"ceil_mode\" must be true or false"},
	    {"{\"input\":[3,8,8],\"layers\":[{\"type\":\"pool\",\"op\":\"avg\","
	     "\"kernel\":3,\"pad\":1,\"ceil_mode\":true}]}",
	     "needs \"count_include_pad\": false"},
	    {"{\"input\":[3,8,8],\"layers\":[{\"type\":\"pool\",\"op\":\"max\","
	     "\"kernel\":3,\"count_include_pad\":false}]}",
	     "on an average pool"},
	    {"{\"input\":[3,8,8],\"layers\":[{\"type\":\"pool\",\"op\":\"avg\","
	     "\"kernel\":3,\"count_include_pad\":0}]}",
	     "is true or false"},
	    {"{\"input\":[3,8,8],\"layers\":[{\"type\":\"hardsigmoid\","
	     "\"alpha\":0}]}",
	     "\"alpha\" must not be 0"},
	    {"{\"input\":[3,8,8],\"layers\":[{\"type\":\"hardsigmoid\","
	     "\"beta\":\"x\"}]}",
	     "\"beta\" must be a finite number"},
	    {"{\"input\":[3,8,8],\"layers\":[{\"type\":\"relu\"},{\"type\":"
	     "\"mul\",\"inputs\":[0]}]}",
	     "needs \"inputs\" with two layers"},
	    /* the second factor: the first's shape or C x 1 x 1 */
	    {"{\"input\":[3,8,8],\"layers\":[{\"type\":\"gap\"},{\"type\":"
	     "\"conv\",\"filters\":4,\"kernel\":1,\"inputs\":[0]},{\"type\":"
	     "\"mul\",\"inputs\":[-1,1]}]}",
	     "layer 2 (mul): input -1 is 3x8x8, input 1 4x1x1"},
	    {"{\"input\":[3,8,8],\"layers\":[{\"type\":\"pool\",\"kernel\":"
	     "2},{\"type\":\"mul\",\"inputs\":[-1,0]}]}",
	     "layer 1 (mul): input -1 is 3x8x8, input 0 3x4x4"},
	    /* a slice inside the input's channels, of an image */
	    {"{\"input\":[3,8,8],\"layers\":[{\"type\":\"slice\","
	     "\"start\":2,\"channels\":2}]}",
	     "layer 0 (slice): channels 2..3 of 3"},
	    {"{\"input\":[3,8,8],\"layers\":[{\"type\":\"slice\","
	     "\"start\":0}]}",
	     "missing \"channels\""},
	    {"{\"input\":[3,8,8],\"layers\":[{\"type\":\"fc\",\"units\":"
	     "4},{\"type\":\"slice\",\"channels\":2}]}",
	     "layer 1 (slice): channels 0..1 of a flat input of 4"},
	    /* a conv's kernel and pad: an integer or [height, width] */
	    {"{\"input\":[3,8,8],\"layers\":[{\"type\":\"conv\",\"filters\":4,"
	     "\"kernel\":[1,7,7]}]}",
	     "\"kernel\" must be an integer or a pair [height, width]"},
	    {"{\"input\":[3,8,8],\"layers\":[{\"type\":\"conv\",\"filters\":4,"
	     "\"kernel\":[0,7]}]}",
	     "\"kernel\"[0] is 0, must be 1..4096"},
	    {"{\"input\":[3,8,8],\"layers\":[{\"type\":\"conv\",\"filters\":4,"
	     "\"kernel\":[1,3],\"pad\":[0,\"1\"]}]}",
	     "\"pad\"[1] must be an integer"},
	    {"{\"input\":[3,8,4],\"layers\":[{\"type\":\"conv\",\"filters\":4,"
	     "\"kernel\":[1,7]}]}",
	     "kernel 1x7 larger than input 8x4"},
	    /* a shuffle's groups: 2 or more, dividing the channels */
	    {"{\"input\":[3,8,8],\"layers\":[{\"type\":\"shuffle\","
	     "\"groups\":1}]}",
	     "\"groups\" is 1, must be 2.."},
	    {"{\"input\":[3,8,8],\"layers\":[{\"type\":\"shuffle\","
	     "\"groups\":2}]}",
	     "layer 0 (shuffle): 2 groups of 3 channels"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct hp_error err = {0};
		struct hp_graph *g =
		    hp_spec_parse(cases[i].json, strlen(cases[i].json), &err);
		if (g)
			HP_FAIL("case %zu parsed", i);
		if (!strstr(err.msg, cases[i].needle))
			HP_FAIL("case %zu: '%s' lacks '%s'", i, err.msg,
				cases[i].needle);
	}
}

HP_TEST(model_json_report_keys)
{
	struct hp_error err = {0};
	struct hp_features f;
	struct hp_graph *g =
	    hp_spec_parse(spec_example, strlen(spec_example), &err);
	struct json_t *j;
	char *s;

	ASSERT(g);
	ASSERT_EQ_INT(hp_analyze(g, 2, NULL, 0, &f, &err), 0);
	j = hp_features_json(g, &f);
	ASSERT(j);
	s = json_dumps(j, JSON_COMPACT);
	ASSERT(s);
	ASSERT(strstr(s, "\"params\":1050954"));
	ASSERT(strstr(s, "\"macs\":1934592"));
	ASSERT(strstr(s, "\"forward\":"));
	ASSERT(strstr(s, "\"backward\":"));
	ASSERT(strstr(s, "\"activations_bytes\":"));
	ASSERT(strstr(s, "\"weights_bytes\":4203816"));
	ASSERT(strstr(s, "\"per_layer\":["));
	ASSERT(strstr(s, "\"skipped_ops\":[]"));
	free(s);
	json_decref(j);
	hp_features_release(&f);
	hp_graph_free(g);
}

HP_TEST(util_buf_cap_and_parse)
{
	struct hp_buf b;
	int64_t v;
	double d;

	hp_buf_init(&b, 8);
	ASSERT_EQ_INT(hp_buf_adds(&b, "12345678"), 0);
	ASSERT_EQ_INT(hp_buf_adds(&b, "9"), HP_ETOOBIG);
	ASSERT_STR_EQ(hp_buf_str(&b), "12345678");
	hp_buf_reset(&b);
	ASSERT_EQ_INT(hp_buf_printf(&b, "%d-%s", 42, "x"), 0);
	ASSERT_STR_EQ(hp_buf_str(&b), "42-x");
	hp_buf_release(&b);
	ASSERT_EQ_INT(hp_parse_i64("12", 0, 100, &v), 0);
	ASSERT_EQ_INT(v, 12);
	ASSERT_EQ_INT(hp_parse_i64("12x", 0, 100, &v), HP_EINVAL);
	ASSERT_EQ_INT(hp_parse_i64("101", 0, 100, &v), HP_ERANGE);
	ASSERT_EQ_INT(hp_parse_i64("99999999999999999999", 0, 100, &v),
		      HP_ERANGE);
	ASSERT_EQ_INT(hp_parse_double("1e400", &d), HP_ERANGE);
	ASSERT_STR_EQ(hp_err_name(HP_ECYCLE), "HP_ECYCLE");
	ASSERT_STR_EQ(hp_strerror(HP_ENOMEM), "out of memory");
}

/* Regressions from review: hostile graphs fail cleanly. */
HP_TEST(bad_graph_hostile_nodes)
{
	int64_t in[4] = {-1, 3, 8, 8}, one = 1, big = INT64_MAX;
	int64_t huge[2] = {(int64_t)1 << 40, (int64_t)1 << 40};
	char msg[256], outs[6 * 5000 + 8];
	struct ob *b;
	size_t o = 0;
	int n;

	/* A Constant whose only output name is empty. */
	b = ob_new(13);
	ob_input(b, "x", 4, in);
	n = ob_node(b, "Constant", "", "");
	ob_attr_i(b, n, "value_int", 1);
	ob_node(b, "Relu", "x", "y");
	ob_output(b, "y");
	ASSERT_EQ_INT(parse_err(b, msg, sizeof(msg)), 0);

	/* A Split into 5000 parts with no sizes. */
	b = ob_new(13);
	ob_input(b, "x", 4, in);
	for (int i = 0; i < 5000; i++)
		o += (size_t)snprintf(outs + o, sizeof(outs) - o, "%ss%d",
				      i ? "," : "", i);
	ob_node(b, "Split", "x", outs);
	ob_output(b, "s0");
	ASSERT_EQ_INT(parse_err(b, msg, sizeof(msg)), HP_ESHAPE);

	/* Add with its first input left empty, second a constant. */
	b = ob_new(13);
	ob_input(b, "x", 4, in);
	ob_init_i64(b, "c", 1, &one);
	ob_node(b, "Add", ",c", "y");
	ob_node(b, "Relu", "x", "z");
	ob_output(b, "z");
	ASSERT(parse_err(b, msg, sizeof(msg)) <= 0);

	/* A pooling window whose dilated size overflows. */
	b = ob_new(13);
	ob_input(b, "x", 4, in);
	n = ob_node(b, "MaxPool", "x", "y");
	ob_attr_ints(b, n, "kernel_shape", 2, huge);
	ob_attr_ints(b, n, "dilations", 2, huge);
	ob_output(b, "y");
	ASSERT_EQ_INT(parse_err(b, msg, sizeof(msg)), HP_ESHAPE);

	/* Slice with the largest step, and Pad with the largest pad. */
	b = ob_new(13);
	ob_input(b, "x", 4, in);
	ob_init_i64(b, "st", 1, (int64_t[]){0});
	ob_init_i64(b, "en", 1, (int64_t[]){8});
	ob_init_i64(b, "ax", 1, (int64_t[]){3});
	ob_init_i64(b, "sp", 1, &big);
	ob_node(b, "Slice", "x,st,en,ax,sp", "y");
	ob_output(b, "y");
	ASSERT_EQ_INT(parse_err(b, msg, sizeof(msg)), 0);
	b = ob_new(13);
	ob_input(b, "x", 4, in);
	ob_init_i64(b, "pads", 8,
		    (int64_t[]){0, 0, 0, INT64_MAX, 0, 0, 0, INT64_MAX});
	ob_node(b, "Pad", "x,pads", "y");
	ob_output(b, "y");
	ASSERT_EQ_INT(parse_err(b, msg, sizeof(msg)), HP_ESHAPE);
}

HP_TEST(bad_onnx_deep_nesting)
{
	/* Attribute -> Graph -> Node -> Attribute -> ... 2000 levels deep:
	 * refused before protobuf-c recurses on it. */
	size_t cap = 64 << 10, len = 0;
	uint8_t *buf = malloc(cap), *tmp = malloc(cap);
	struct hp_error err = {0};

	ASSERT(buf && tmp);
	for (int level = 0; level < 2000 && len + 16 < cap; level++) {
		/* Wrap the current bytes in field 1, wire type 2. */
		size_t l = len, h = 0;
		uint8_t hdr[12];
		hdr[h++] = (uint8_t)((level % 2 ? 7 : 5) << 3 | 2);
		do {
			hdr[h++] =
			    (uint8_t)((l & 0x7f) | (l > 0x7f ? 0x80 : 0));
			l >>= 7;
		} while (l);
		memcpy(tmp, hdr, h);
		memcpy(tmp + h, buf, len);
		len += h;
		memcpy(buf, tmp, len);
	}
	ASSERT(!hp_onnx_parse(buf, len, &err));
	ASSERT(strstr(err.msg, "nested more than"));
	free(buf);
	free(tmp);
}

HP_TEST(model_analyze_twice_matches_fresh)
{
	/* An analysis at batch 64 after one at batch 1 must equal a fresh
	 * analysis at 64 (no values left over from the first). */
	const char *path =
	    hp_test_path("tests/data/models/vit_b_16.train.onnx");
	struct hp_graph *g = load(path), *h = load(path);
	struct hp_features a, b, c;
	struct hp_error err = {0};

	ASSERT_EQ_INT(hp_analyze(g, 1, NULL, 0, &a, &err), 0);
	ASSERT_EQ_INT(hp_analyze(g, 64, NULL, 0, &b, &err), 0);
	ASSERT_EQ_INT(hp_analyze(h, 64, NULL, 0, &c, &err), 0);
	ASSERT_EQ_INT(b.macs_per_sample, c.macs_per_sample);
	ASSERT_NEAR(b.flops_fwd, c.flops_fwd, 1e-12);
	ASSERT_EQ_INT(b.activations_bytes, c.activations_bytes);
	for (int k = 0; k < HP_KIND__COUNT; k++)
		ASSERT_EQ_INT(b.kind_count[k], c.kind_count[k]);
	hp_features_release(&a);
	hp_features_release(&b);
	hp_features_release(&c);
	hp_graph_free(g);
	hp_graph_free(h);
}

HP_TEST(shape_resize_opset10_and_cast_scales)
{
	int64_t in[4] = {-1, 2, 5, 5}, sc[4] = {1, 1, 2, 3};
	struct hp_error err = {0};
	struct hp_features f;
	struct hp_graph *g;
	struct ob *b = ob_new(10);

	/* Resize-10 takes (X, scales); scales made by Cast from int64. */
	ob_input(b, "x", 4, in);
	ob_init_i64(b, "si", 4, sc);
	ob_attr_i(b, ob_node(b, "Cast", "si", "s"), "to", 1);
	ob_node(b, "Resize", "x,s", "y");
	ob_output(b, "y");
	g = parse_ob(b, &err);
	ASSERT(g);
	if (hp_analyze(g, 2, NULL, 0, &f, &err))
		HP_FAIL("%s", err.msg);
	ASSERT_DIMS(T(g, "y"), 2, 2, 10, 15);
	hp_features_release(&f);
	hp_graph_free(g);
}

HP_TEST(model_json_survives_bad_utf8_names)
{
	int64_t in[2] = {-1, 4};
	struct hp_error err = {0};
	struct hp_features f;
	struct hp_graph *g;
	struct json_t *j;
	char *s;
	struct ob *b = ob_new(13);

	ob_input(b, "x", 2, in);
	ob_node(b, "Relu", "x", "y\xff\xfe");
	ob_node(b, "Relu", "y\xff\xfe", "z");
	ob_output(b, "z");
	g = parse_ob(b, &err);
	ASSERT(g);
	free(g->nodes[0].name);
	g->nodes[0].name = strdup("bad\xff name");
	ASSERT_EQ_INT(hp_analyze(g, 1, NULL, 0, &f, &err), 0);
	j = hp_features_json(g, &f);
	s = json_dumps(j, JSON_COMPACT);
	ASSERT(s && strstr(s, "\"bad? name\""));
	free(s);
	json_decref(j);
	hp_features_release(&f);
	hp_graph_free(g);
}

HP_TEST(util_read_file_refuses_fifo)
{
	const char *dir = hp_test_tmpdir("hp_fifo_");
	char path[64];
	struct hp_error err = {0};
	char *data;
	size_t len;

	snprintf(path, sizeof(path), "%s/f", dir);
	ASSERT_EQ_INT(mkfifo(path, 0600), 0);
	ASSERT_EQ_INT(hp_read_file(path, 1024, &data, &len, &err), HP_EINVAL);
	unlink(path);
	rmdir(dir);
}

/* Trust before growth: hostile files that used to be analysed. */

#define ASSERT_MSG(msg, needle)                                                \
	do {                                                                   \
		if (!strstr((msg), (needle)))                                  \
			HP_FAIL("message '%s' lacks '%s'", (msg), (needle));   \
	} while (0)

/* x.reshape(n, 48 + x.size(1) // 0): the Div sits in a folded shape chain
 * that once folded to 48 and analysed. */
HP_TEST(bad_graph_div_by_zero_in_shape_chain)
{
	int64_t in[4] = {-1, 3, 4, 4}, zero = 0, one = 1, k48 = 48, ax0 = 0;
	struct ob *b = ob_new(13);
	char msg[256], want[96];
	int n;

	ob_input(b, "x", 4, in);
	ob_node(b, "Shape", "x", "s");
	ob_const_i64(b, "i0", -1, &zero);
	ob_const_i64(b, "i1", -1, &one);
	ob_const_i64(b, "zero", -1, &zero);
	ob_const_i64(b, "k48", -1, &k48);
	ob_init_i64(b, "axes", 1, &ax0);
	ob_node(b, "Gather", "s,i0", "n");
	ob_node(b, "Gather", "s,i1", "c");
	n = ob_node(b, "Div", "c,zero", "q");
	ob_node(b, "Add", "q,k48", "w");
	ob_node(b, "Unsqueeze", "n,axes", "nu");
	ob_node(b, "Unsqueeze", "w,axes", "wu");
	ob_attr_i(b, ob_node(b, "Concat", "nu,wu", "shape"), "axis", 0);
	ob_node(b, "Reshape", "x,shape", "y");
	ob_output(b, "y");
	ASSERT_EQ_INT(parse_err(b, msg, sizeof(msg)), HP_ESHAPE);
	snprintf(want, sizeof(want),
		 "node 'n%d_Div' (Div): integer division by zero", n);
	ASSERT_MSG(msg, want);
}

/* Folded integer Div and Mod follow ONNX: Div truncates, Mod takes the
 * divisor's sign (the dividend's with fmod=1); a 0 divisor anywhere in a
 * known integer tensor, or INT64_MIN / -1, is refused. */
HP_TEST(shape_integer_div_mod_fold)
{
	int64_t in[2] = {-1, 4}, a[4] = {-7, 7, -7, 7}, d[4] = {3, -3, -3, 3};
	int64_t zero_in[2] = {5, 0}, m1 = -1, lo = INT64_MIN;
	struct hp_error err = {0};
	struct hp_features f;
	struct hp_graph *g;
	struct ob *b = ob_new(13);
	char msg[256];

	ob_input(b, "x", 2, in);
	ob_init_i64(b, "a", 4, a);
	ob_init_i64(b, "d", 4, d);
	ob_node(b, "Div", "a,d", "q");
	ob_node(b, "Mod", "a,d", "m");
	ob_attr_i(b, ob_node(b, "Mod", "a,d", "cm"), "fmod", 1);
	ob_node(b, "Relu", "x", "y");
	ob_output(b, "y");
	ob_output(b, "q");
	ob_output(b, "m");
	ob_output(b, "cm");
	g = parse_ob(b, &err);
	ASSERT(g);
	if (hp_analyze(g, 1, NULL, 0, &f, &err))
		HP_FAIL("%s", err.msg);
	/* numpy: -7 // 3 truncated is -2; np.mod(-7, 3) = 2, fmod = -1. */
	{
		const int64_t q[4] = {-2, -2, 2, 2}, m[4] = {2, -2, -1, 1},
			      cm[4] = {-1, 1, -1, 1};
		for (int i = 0; i < 4; i++) {
			ASSERT_EQ_INT(T(g, "q")->ival[i], q[i]);
			ASSERT_EQ_INT(T(g, "m")->ival[i], m[i]);
			ASSERT_EQ_INT(T(g, "cm")->ival[i], cm[i]);
		}
	}
	hp_features_release(&f);
	hp_graph_free(g);

	/* A 0 in the divisor, the dividend a graph input (not folded). */
	b = ob_new(13);
	ob_input(b, "x", 2, in);
	ob_init_i64(b, "d", 2, zero_in);
	ob_node(b, "Shape", "x", "s");
	ob_node(b, "Mod", "s,d", "m");
	ob_output(b, "m");
	ASSERT_EQ_INT(parse_err(b, msg, sizeof(msg)), HP_ESHAPE);
	ASSERT_MSG(msg, "(Mod): integer division by zero");

	b = ob_new(13);
	ob_input(b, "x", 2, in);
	ob_init_i64(b, "lo", 1, &lo);
	ob_init_i64(b, "m1", 1, &m1);
	ob_node(b, "Div", "lo,m1", "q");
	ob_node(b, "Relu", "x", "y");
	ob_output(b, "y");
	ob_output(b, "q");
	ASSERT_EQ_INT(parse_err(b, msg, sizeof(msg)), HP_ESHAPE);
	ASSERT_MSG(msg, "integer division overflows");
}

/* Split a [B, C, 4] tensor on axis 1 into nout outputs with the given
 * opset, sizes (n >= 0: the 'split' input) and num_outputs (>= 0). */
static int split_case(int64_t opset, int64_t c, int nout, int nsizes,
		      const int64_t *sizes, int64_t num_outputs, char *msg,
		      size_t len)
{
	int64_t in[3] = {-1, c, 4};
	char outs[256];
	size_t o = 0;
	struct ob *b = ob_new(opset);
	int n;

	for (int i = 0; i < nout; i++)
		o += (size_t)snprintf(outs + o, sizeof(outs) - o, "%sy%d",
				      i ? "," : "", i);
	ob_input(b, "x", 3, in);
	if (nsizes >= 0)
		ob_init_i64(b, "sizes", nsizes, sizes);
	n = ob_node(b, "Split", nsizes >= 0 ? "x,sizes" : "x", outs);
	ob_attr_i(b, n, "axis", 1);
	if (num_outputs >= 0)
		ob_attr_i(b, n, "num_outputs", num_outputs);
	ob_output(b, "y0");
	return parse_err(b, msg, len);
}

HP_TEST(bad_graph_split_follows_onnx)
{
	char msg[256];

	/* Equal parts (no sizes, no num_outputs) must divide the axis. */
	ASSERT_EQ_INT(split_case(13, 6, 3, -1, NULL, -1, msg, sizeof(msg)), 0);
	ASSERT_EQ_INT(split_case(13, 3, 5, -1, NULL, -1, msg, sizeof(msg)),
		      HP_ESHAPE);
	ASSERT_MSG(msg, "axis 1's size 3 does not split evenly into 5");
	ASSERT_EQ_INT(split_case(13, 3, 2, -1, NULL, -1, msg, sizeof(msg)),
		      HP_ESHAPE);
	/* num_outputs: ceil parts, the rest (at least 1) to the last. */
	ASSERT_EQ_INT(split_case(18, 7, 3, -1, NULL, 3, msg, sizeof(msg)), 0);
	ASSERT_EQ_INT(split_case(18, 3, 5, -1, NULL, 5, msg, sizeof(msg)),
		      HP_ESHAPE);
	ASSERT_MSG(msg, "num_outputs 5 is more than axis 1's size 3");
	ASSERT_EQ_INT(split_case(18, 6, 4, -1, NULL, 4, msg, sizeof(msg)),
		      HP_ESHAPE);
	ASSERT_MSG(msg, "leaves none for the last");
	ASSERT_EQ_INT(split_case(18, 6, 3, -1, NULL, 2, msg, sizeof(msg)),
		      HP_ESHAPE);
	ASSERT_MSG(msg, "num_outputs 2 does not match its 3 outputs");
	ASSERT_EQ_INT(
	    split_case(18, 6, 2, 2, (int64_t[]){3, 3}, 2, msg, sizeof(msg)),
	    HP_ESHAPE);
	ASSERT_MSG(msg, "both");
	/* Sizes: >= 0 (an empty part is allowed), adding up to the axis. */
	ASSERT_EQ_INT(
	    split_case(13, 6, 3, 3, (int64_t[]){0, 6, 0}, -1, msg, sizeof(msg)),
	    0);
	ASSERT_EQ_INT(
	    split_case(13, 3, 2, 2, (int64_t[]){2, 2}, -1, msg, sizeof(msg)),
	    HP_ESHAPE);
	ASSERT_MSG(msg, "split sizes add up to 4, not axis 1's size 3");
	ASSERT_EQ_INT(
	    split_case(13, 3, 2, 2, (int64_t[]){4, -1}, -1, msg, sizeof(msg)),
	    HP_ESHAPE);
	ASSERT_MSG(msg, "negative split size -1");
	ASSERT_EQ_INT(
	    split_case(13, 3, 3, 2, (int64_t[]){1, 2}, -1, msg, sizeof(msg)),
	    HP_ESHAPE);
	ASSERT_MSG(msg, "2 split sizes for 3 outputs");
}

HP_TEST(shape_split_shapes)
{
	int64_t in[3] = {-1, 7, 4};
	struct hp_error err = {0};
	struct hp_features f;
	struct hp_graph *g;
	struct ob *b = ob_new(18);
	int n;

	ob_input(b, "x", 3, in);
	n = ob_node(b, "Split", "x", "a,b,c");
	ob_attr_i(b, n, "axis", 1);
	ob_attr_i(b, n, "num_outputs", 3);
	ob_output(b, "c");
	g = parse_ob(b, &err);
	ASSERT(g);
	ASSERT_EQ_INT(hp_analyze(g, 2, NULL, 0, &f, &err), 0);
	ASSERT_DIMS(T(g, "a"), 2, 3, 4);
	ASSERT_DIMS(T(g, "b"), 2, 3, 4);
	ASSERT_DIMS(T(g, "c"), 2, 1, 4);
	hp_features_release(&f);
	hp_graph_free(g);

	/* Opset-11 form: sizes as an attribute. */
	b = ob_new(11);
	ob_input(b, "x", 3, in);
	n = ob_node(b, "Split", "x", "a,b");
	ob_attr_i(b, n, "axis", -2);
	ob_attr_ints(b, n, "split", 2, (int64_t[]){5, 2});
	ob_output(b, "b");
	g = parse_ob(b, &err);
	ASSERT(g);
	ASSERT_EQ_INT(hp_analyze(g, 2, NULL, 0, &f, &err), 0);
	ASSERT_DIMS(T(g, "a"), 2, 5, 4);
	ASSERT_DIMS(T(g, "b"), 2, 2, 4);
	hp_features_release(&f);
	hp_graph_free(g);
}

HP_TEST(bad_onnx_auto_pad_and_duplicate_attributes)
{
	int64_t in[4] = {-1, 3, 8, 8}, w[4] = {4, 3, 3, 3}, k[2] = {2, 2};
	static const char *const ok_values[] = {"NOTSET", "SAME_UPPER",
						"SAME_LOWER", "VALID"};
	struct hp_error err = {0};
	struct hp_features f;
	struct hp_graph *g;
	struct ob *b;
	size_t len;
	uint8_t *buf;
	char msg[256];
	int n;

	for (size_t i = 0; i < 4; i++) {
		b = ob_new(13);
		ob_input(b, "x", 4, in);
		ob_init(b, "w", 4, w);
		ob_attr_s(b, ob_node(b, "Conv", "x,w", "y"), "auto_pad",
			  ok_values[i]);
		ob_output(b, "y");
		ASSERT_EQ_INT(parse_err(b, msg, sizeof(msg)), 0);
	}
	/* Refused at load, before any shape is known. */
	b = ob_new(13);
	ob_input(b, "x", 4, in);
	ob_init(b, "w", 4, w);
	ob_attr_s(b, ob_node(b, "Conv", "x,w", "y"), "auto_pad", "SAME_MIDDLE");
	ob_output(b, "y");
	buf = ob_finish(b, &len);
	ASSERT(!hp_onnx_parse(buf, len, &err));
	free(buf);
	ASSERT_EQ_INT(err.code, HP_EPARSE);
	ASSERT_MSG(err.msg, "node 'n0_Conv' (Conv): unknown auto_pad "
			    "'SAME_MIDDLE' (NOTSET, SAME_UPPER, SAME_LOWER or "
			    "VALID)");
	b = ob_new(13);
	ob_input(b, "x", 4, in);
	n = ob_node(b, "AveragePool", "x", "y");
	ob_attr_ints(b, n, "kernel_shape", 2, k);
	ob_attr_s(b, n, "auto_pad", "same_upper"); /* case matters */
	ob_output(b, "y");
	ASSERT_EQ_INT(parse_err(b, msg, sizeof(msg)), HP_EPARSE);
	ASSERT_MSG(msg, "(AveragePool): unknown auto_pad 'same_upper'");
	b = ob_new(13);
	ob_input(b, "x", 4, in);
	n = ob_node(b, "MaxPool", "x", "y");
	ob_attr_ints(b, n, "kernel_shape", 2, k);
	ob_attr_i(b, n, "auto_pad", 1);
	ob_output(b, "y");
	ASSERT_EQ_INT(parse_err(b, msg, sizeof(msg)), HP_EPARSE);
	ASSERT_MSG(msg, "auto_pad is not a string");

	/* A graph made in memory is checked where the window is cut. */
	b = ob_new(13);
	ob_input(b, "x", 4, in);
	n = ob_node(b, "MaxPool", "x", "y");
	ob_attr_ints(b, n, "kernel_shape", 2, k);
	ob_attr_s(b, n, "auto_pad", "VALID");
	ob_output(b, "y");
	g = parse_ob(b, &err);
	ASSERT(g);
	free(g->nodes[0].attrs[1].s);
	g->nodes[0].attrs[1].s = strdup("SAME");
	ASSERT_EQ_INT(hp_analyze(g, 1, NULL, 0, &f, &err), HP_ESHAPE);
	ASSERT_MSG(err.msg, "unknown auto_pad 'SAME'");
	hp_graph_free(g);

	/* Two attributes of one name: which one counts is undefined. */
	b = ob_new(13);
	ob_input(b, "x", 4, in);
	ob_init(b, "w", 4, w);
	n = ob_node(b, "Conv", "x,w", "y");
	ob_attr_ints(b, n, "strides", 2, (int64_t[]){1, 1});
	ob_attr_ints(b, n, "strides", 2, (int64_t[]){2, 2});
	ob_output(b, "y");
	ASSERT_EQ_INT(parse_err(b, msg, sizeof(msg)), HP_EPARSE);
	ASSERT_MSG(msg, "node 'n0_Conv' (Conv): attribute 'strides' is given "
			"twice");
	b = ob_new(13);
	ob_input(b, "x", 4, in);
	n = ob_node(b, "Relu", "x", "y");
	ob_attr_i(b, n, "alpha", 1);
	ob_attr_f(b, n, "alpha", 2);
	ob_output(b, "y");
	ASSERT_EQ_INT(parse_err(b, msg, sizeof(msg)), HP_EPARSE);
	ASSERT_MSG(msg, "attribute 'alpha' is given twice");
	/* Thousands of attributes (a quadratic duplicate check) are not. */
	b = ob_new(13);
	ob_input(b, "x", 4, in);
	n = ob_node(b, "Relu", "x", "y");
	for (int i = 0; i < 1025; i++) {
		char nm[16];
		snprintf(nm, sizeof(nm), "a%d", i);
		ob_attr_i(b, n, nm, i);
	}
	ob_output(b, "y");
	ASSERT_EQ_INT(parse_err(b, msg, sizeof(msg)), HP_ETOOBIG);
	ASSERT_MSG(msg, "1025 attributes (at most 1024)");
}

/* Logits [B, 10] from a Gemm, labels with the given dims, into op. */
static struct ob *loss_model(const char *op, int lrank, const int64_t *ldims)
{
	int64_t in[2] = {-1, 16}, w[2] = {10, 16};
	struct ob *b = ob_new(13);

	ob_input(b, "x", 2, in);
	ob_input(b, "labels", lrank, ldims);
	ob_init(b, "w", 2, w);
	ob_attr_i(b, ob_node(b, "Gemm", "x,w", "logits"), "transB", 1);
	ob_node(b, op, "logits,labels", "loss");
	ob_output(b, "loss");
	return b;
}

HP_TEST(bad_graph_loss_labels_disagree)
{
	static const char *const ops[] = {"SoftmaxCrossEntropyLoss",
					  "NegativeLogLikelihoodLoss"};
	int64_t four = 4, sym = -1, two[2] = {-1, 3};
	struct hp_error err = {0};
	struct hp_features f;
	struct hp_graph *g;
	char msg[256], want[128];

	for (int i = 0; i < 2; i++) {
		/* Labels for 4 samples: right at batch 4, wrong at 8. */
		g = parse_ob(loss_model(ops[i], 1, &four), &err);
		ASSERT(g);
		ASSERT_EQ_INT(hp_analyze(g, 4, NULL, 0, &f, &err), 0);
		ASSERT_EQ_INT(f.kind_count[HP_KIND_LOSS], 1);
		ASSERT_EQ_INT(T(g, "loss")->rank, 0); /* reduction mean */
		ASSERT_EQ_INT(f.nskipped, 0);
		hp_features_release(&f);
		ASSERT_EQ_INT(hp_analyze(g, 8, NULL, 0, &f, &err), HP_ESHAPE);
		snprintf(want, sizeof(want),
			 "node 'n1_%s' (%s): labels have batch 4, scores 8",
			 ops[i], ops[i]);
		ASSERT_MSG(err.msg, want);
		hp_graph_free(g);
		/* Labels that follow the batch are right at any batch. */
		g = parse_ob(loss_model(ops[i], 1, &sym), &err);
		ASSERT(g);
		ASSERT_EQ_INT(hp_analyze(g, 8, NULL, 0, &f, &err), 0);
		hp_features_release(&f);
		hp_graph_free(g);
		/* Labels of rank 2 for scores of rank 2. */
		ASSERT_EQ_INT(
		    parse_err(loss_model(ops[i], 2, two), msg, sizeof(msg)),
		    HP_ESHAPE);
		ASSERT_MSG(msg, "labels have rank 2, scores 2");
	}
	/* Per-position labels [N, d1] for scores [N, C, d1]. */
	for (int d = 5; d <= 6; d++) {
		struct ob *b = ob_new(13);
		int rc;
		ob_input(b, "s", 3, (int64_t[]){-1, 10, 5});
		ob_input(b, "labels", 2, (int64_t[]){-1, d});
		ob_node(b, "SoftmaxCrossEntropyLoss", "s,labels", "loss");
		ob_output(b, "loss");
		rc = parse_err(b, msg, sizeof(msg));
		ASSERT_EQ_INT(rc, d == 5 ? 0 : HP_ESHAPE);
	}
	ASSERT_MSG(msg, "labels' dimension 1 is 6, scores' 2 is 5");
}

HP_TEST(bad_graph_no_nodes)
{
	int64_t in[2] = {-1, 16};
	struct hp_error err = {0};
	struct hp_features f;
	struct hp_graph *g;
	struct ob *b = ob_new(13);
	char msg[256];

	/* The input is the output: once a step time and a recommendation. */
	ob_input(b, "x", 2, in);
	ob_output(b, "x");
	ASSERT_EQ_INT(parse_err(b, msg, sizeof(msg)), HP_EPARSE);
	ASSERT_MSG(msg, "graph has no nodes: nothing to train");
	/* A graph made in memory is refused by the analysis. */
	g = hp_graph_new("empty");
	ASSERT(g);
	ASSERT_EQ_INT(hp_analyze(g, 1, NULL, 0, &f, &err), HP_EINVAL);
	ASSERT_MSG(err.msg, "no nodes: nothing to train");
	hp_graph_free(g);
}

/* Write data to a temporary file and load it as a model. */
static struct hp_graph *load_bytes(const char *data, size_t len,
				   struct hp_error *err)
{
	char path[] = "/tmp/hp_model_XXXXXX";
	int fd = mkstemp(path);
	struct hp_graph *g;

	if (fd < 0 || write(fd, data, len) != (ssize_t)len)
		HP_FAIL("cannot write %s", path);
	close(fd);
	g = hp_model_load(path, err);
	unlink(path);
	return g;
}

HP_TEST(model_load_tells_spec_from_onnx)
{
	char text[sizeof(spec_example) + 16];
	struct hp_error err = {0};
	struct hp_features a, b;
	struct hp_graph *g, *h;
	int n;

	/* A byte order mark (and whitespace after it) is harmless. */
	n = snprintf(text, sizeof(text), "\xef\xbb\xbf \n%s", spec_example);
	g = load_bytes(text, (size_t)n, &err);
	if (!g)
		HP_FAIL("%s", err.msg);
	h = hp_spec_parse(spec_example, strlen(spec_example), &err);
	ASSERT(h);
	ASSERT_EQ_INT(hp_analyze(g, 2, NULL, 0, &a, &err), 0);
	ASSERT_EQ_INT(hp_analyze(h, 2, NULL, 0, &b, &err), 0);
	ASSERT_EQ_INT(a.params, b.params);
	ASSERT_EQ_INT(a.macs_per_sample, b.macs_per_sample);
	hp_features_release(&a);
	hp_features_release(&b);
	hp_graph_free(g);
	hp_graph_free(h);

	/* A top-level array is a spec gone wrong, not a broken ONNX file. */
	n = snprintf(text, sizeof(text), "[%s]", spec_example);
	ASSERT(!load_bytes(text, (size_t)n, &err));
	ASSERT_EQ_INT(err.code, HP_EINVAL);
	ASSERT_MSG(err.msg, "spec: the top level must be an object {...}, "
			    "not an array");
	ASSERT(!load_bytes("\xef\xbb\xbf\t [1]", 8, &err));
	ASSERT_MSG(err.msg, "not an array");
	ASSERT(!load_bytes("\xef\xbb\xbf{\"input\":", 12, &err));
	ASSERT_MSG(err.msg, "invalid JSON");
	/* Bytes that are no JSON are still read as ONNX. */
	ASSERT(!load_bytes("\xef\xbb", 2, &err));
	ASSERT_MSG(err.msg, "not a valid ONNX model");
	ASSERT(!hp_spec_parse("\"cnn\"", 5, &err));
	ASSERT_MSG(err.msg, "invalid JSON");
}
