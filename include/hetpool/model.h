/*
 * model.h - a neural network as hetpool sees it: one graph type that both
 * importers (ONNX and the hetpool JSON spec) produce, shape propagation
 * over it, and the quantified features (parameters, MACs, FLOPs, memory,
 * layer kinds) that the estimator and the recommender consume.
 *
 * Ownership: hp_model_load*() return a graph the caller frees with
 * hp_graph_free(); hp_analyze() fills a caller-owned struct hp_features,
 * released with hp_features_release().  Strings inside a graph belong to
 * the graph.
 */
#ifndef HETPOOL_MODEL_H
#define HETPOOL_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hetpool/util.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HP_MAX_RANK 8

/* Element types, numbered as ONNX's TensorProto.DataType. */
enum hp_dtype {
	HP_DT_UNDEFINED = 0,
	HP_DT_FLOAT = 1,
	HP_DT_UINT8 = 2,
	HP_DT_INT8 = 3,
	HP_DT_UINT16 = 4,
	HP_DT_INT16 = 5,
	HP_DT_INT32 = 6,
	HP_DT_INT64 = 7,
	HP_DT_STRING = 8,
	HP_DT_BOOL = 9,
	HP_DT_FLOAT16 = 10,
	HP_DT_DOUBLE = 11,
	HP_DT_UINT32 = 12,
	HP_DT_UINT64 = 13,
	HP_DT_BFLOAT16 = 16,
};
/* Bytes per element (0 for strings and unknown types). */
int hp_dtype_size(int dtype);

/*
 * A tensor (an edge of the graph).  dims[i] < 0 means unknown; a symbolic
 * batch dimension of a graph input is marked in batch_axis and takes the
 * batch size when shapes are propagated.
 */
struct hp_tensor {
	char *name;
	int dtype;
	int rank; /* -1: rank unknown */
	int64_t dims[HP_MAX_RANK];
	int batch_axis;	  /* graph inputs: the symbolic axis, else -1 */
	bool initializer; /* a stored weight or constant */
	bool graph_input; /* fed at run time (not an initializer) */
	int producer;	  /* index of the node that writes it, or -1 */
	/* Small integer constant value, when known (shape arithmetic). */
	int64_t *ival;
	int64_t nival; /* elements in ival; -1: value not known */
	/* Small float constant value, when known (Resize scales). */
	double *fvals;
	int64_t nfvals; /* -1: not known */
};

enum hp_attr_type {
	HP_ATTR_FLOAT = 1,
	HP_ATTR_INT = 2,
	HP_ATTR_STRING = 3,
	HP_ATTR_TENSOR = 4,
	HP_ATTR_FLOATS = 6,
	HP_ATTR_INTS = 7,
	HP_ATTR_OTHER = 99,
};

struct hp_attr {
	char *name;
	int type;
	int64_t i;
	double f;
	char *s;	/* strings, NUL-terminated */
	int64_t *ints;	/* INTS */
	double *floats; /* FLOATS */
	size_t n;	/* elements in ints/floats */
	int tensor;	/* TENSOR: index of a constant tensor, else -1 */
};

struct hp_node {
	char *name;
	char *op;    /* ONNX op type, e.g. "Conv" */
	int *inputs; /* tensor indices; -1 for an omitted optional input */
	int ninputs;
	int *outputs;
	int noutputs;
	struct hp_attr *attrs;
	int nattrs;
};

struct hp_graph {
	char *name;
	char *source;  /* file it came from, for messages */
	int64_t opset; /* default-domain opset; 0 if unknown */
	struct hp_tensor *tensors;
	int ntensors, atensors;
	struct hp_node *nodes;
	int nnodes, anodes;
	int *inputs; /* graph inputs (not initializers) */
	int ninputs;
	int *outputs;
	int noutputs;
	int *name_index; /* internal: open-addressing index of tensor names */
	int name_index_cap;
};

/* Limits that keep hostile files from costing memory or time. */
#define HP_MODEL_MAX_FILE_BYTES (512u << 20)
#define HP_MODEL_MAX_NODES 200000
#define HP_MODEL_MAX_DIM ((int64_t)1 << 40)
#define HP_MODEL_MAX_ELEMS ((int64_t)1 << 50)
#define HP_MODEL_MAX_CONST_ELEMS 4096

/* Graph construction (used by the importers; exposed for tests). */
struct hp_graph *hp_graph_new(const char *name);
void hp_graph_free(struct hp_graph *g);
/* Index of the tensor called name, creating an unknown one if absent;
 * negative error code on ENOMEM. */
int hp_graph_tensor(struct hp_graph *g, const char *name);
int hp_graph_find_tensor(const struct hp_graph *g, const char *name);
/* Append a node; returns its index or a negative code.  The node's
 * inputs/outputs arrays are copied. */
int hp_graph_add_node(struct hp_graph *g, const char *name, const char *op,
		      const int *inputs, int ninputs, const int *outputs,
		      int noutputs);
/* Attribute helpers on a node; add returns a pointer owned by the node. */
struct hp_attr *hp_node_add_attr(struct hp_node *n, const char *name, int type);
const struct hp_attr *hp_node_attr(const struct hp_node *n, const char *name);
int64_t hp_node_attr_i(const struct hp_node *n, const char *name, int64_t def);
double hp_node_attr_f(const struct hp_node *n, const char *name, double def);
const char *hp_node_attr_s(const struct hp_node *n, const char *name,
			   const char *def);

/* Set a tensor's integer constant value (copied). */
int hp_tensor_set_ival(struct hp_tensor *t, const int64_t *v, int64_t n);
int hp_tensor_set_fvals(struct hp_tensor *t, const double *v, int64_t n);
/* Elements of a tensor with known shape; -1 if unknown (or no tensor),
 * overflow-checked. */
int64_t hp_tensor_numel(const struct hp_tensor *t);

/*
 * Importers.  Each refuses bad input with a one-line message in err that
 * names what is wrong; err->msg does not include the file name (callers
 * prefix it).  hp_model_load() picks the importer from the content: a
 * spec is JSON text ('{' or '[' after an optional UTF-8 byte order mark and
 * whitespace), anything else is read as ONNX protobuf.  hp_spec_parse()
 * skips a byte order mark.
 */
struct hp_graph *hp_model_load(const char *path, struct hp_error *err);
struct hp_graph *hp_onnx_parse(const void *data, size_t len,
			       struct hp_error *err);
struct hp_graph *hp_spec_parse(const char *json, size_t len,
			       struct hp_error *err);

/* hp_spec_parse() also keeps the spec in this form (the engine builds nets
 * from it). */
enum hp_spec_layer_type {
	HP_LAYER_CONV,
	HP_LAYER_BN,
	HP_LAYER_RELU,
	HP_LAYER_POOL,
	HP_LAYER_DROPOUT,
	HP_LAYER_FC,
	HP_LAYER_SOFTMAX,
	HP_LAYER_CLIP,	      /* min(max(x, lo), hi); ReLU6 is 0..6 */
	HP_LAYER_GAP,	      /* global average pooling: N,C,H,W -> N,C,1,1 */
	HP_LAYER_ADD,	      /* elementwise sum of its inputs (residual) */
	HP_LAYER_CONCAT,      /* its inputs stacked along the channels */
	HP_LAYER_FLATTEN,     /* N,C,H,W -> N,C*H*W (no work) */
	HP_LAYER_SIGMOID,     /* 1 / (1 + exp(-x)) */
	HP_LAYER_MUL,	      /* the product of two inputs, the second of the
				 first's shape or C,1,1 (a squeeze-and-excitation
				 gate, broadcast over H and W) */
	HP_LAYER_HARDSIGMOID, /* min(1, max(0, alpha x + beta)) */
	HP_LAYER_SLICE,	      /* channels start .. start + channels - 1 of its
				 input (a ShuffleNet block's halves) */
	HP_LAYER_SHUFFLE,     /* channel shuffle in `groups` groups: N, g,
				 C/g, H, W transposed to N, C/g, g, H, W */
	HP_LAYER_LAYERNORM,   /* each position's C channels normalized to
				 mean 0, variance 1 (eps added), then
				 scaled and shifted by learned C-vectors
				 (ConvNeXt's LayerNorm in channels-last) */
	HP_LAYER_GELU,	      /* x * Phi(x), Phi the normal CDF (erf form) */
	HP_LAYER_LEAKYRELU,   /* x for x > 0, else alpha x (alpha >= 0) */
	HP_LAYER_TANH,	      /* tanh(x) */
	HP_LAYER_ELU,	      /* x for x > 0, else alpha (exp(x) - 1) */
	HP_LAYER_SCALE,	      /* alpha x + beta, constants (x / 255, x * 0.5) */
	HP_LAYER_SOFTPLUS,    /* log(1 + exp(x)) (Mish is x tanh(softplus)) */
	HP_LAYER_GROUPNORM,   /* each sample's channels in `groups` groups,
				 each group (its channels and positions)
				 normalized to mean 0, variance 1 (eps
				 added), then scaled and shifted per
				 channel; groups = channels is an instance
				 norm.  Independent of the batch. */
	HP_LAYER_PRELU,	      /* x for x > 0, else a x, a learned: one a, or
				 one a channel (per_channel) */
};
/* The last layer type (for tables indexed by type). */
#define HP_LAYER_LAST HP_LAYER_PRELU
/* A layer type's name in specs ("conv", "bn", ...); "?" for a value out of
 * range. */
const char *hp_spec_layer_name(enum hp_spec_layer_type t);
/* Inputs one layer may name (add, concat). */
#define HP_SPEC_MAX_INPUTS 64
/* Channels a scale layer may have a factor and shift for. */
#define HP_SPEC_SCALE_CH 4
/* Notes a converted spec carries (struct hp_spec). */
#define HP_SPEC_MAX_NOTES 5
struct hp_spec_layer {
	enum hp_spec_layer_type type;
	int64_t filters, kernel, stride,
	    pad;	   /* conv; pool uses kernel/stride/pad */
	bool pool_max;	   /* pool: max (true) or avg */
	bool per_channel;  /* prelu: a slope for each channel (else one) */
	bool pool_exclude; /* avg pool: the padding (and a ceil-mode last
			      window's overhang) left out of the average:
			      PyTorch's count_include_pad=False */
	bool ceil_mode;	   /* max pool: output sizes rounded up (ONNX and
			      PyTorch ceil_mode): a last window that runs past
			      the input, as long as it starts inside it */
	int64_t units;	   /* fc */
	double p;	   /* dropout */
	int64_t groups;	   /* conv: 0 or 1 dense; filters and input channels
			      divide by it (depthwise: groups == channels);
			      shuffle: the groups, 2 or more, dividing the
			      channels; groupnorm: the groups, dividing the
			      channels */
	int64_t start, channels; /* slice */
	/* conv: a kernel that is not square, or pads that differ between
	 * the axes (Inception's 1x7 and 7x1): kernel and pad are the
	 * height's, kernel_w and pad_w the width's (hp_spec_kernel_w(),
	 * hp_spec_pad_w()); false: both axes kernel and pad. */
	bool rect;
	int64_t kernel_w, pad_w;
	/* conv (rect too): pads that differ between the sides of an axis
	 * (PyTorch's and Keras's "same" for even spans): pad and pad_w the
	 * top's and left's, pad_b and pad_r the bottom's and right's
	 * (hp_spec_pad_b(), hp_spec_pad_r()) */
	bool asym;
	int64_t pad_b, pad_r;
	/* conv: the kernel's taps this far apart on both axes (0 or 1:
	 * next to each other; 2: a 3x3 kernel spans 5x5) */
	int64_t dilation;
	double lo, hi;	    /* clip */
	double alpha, beta; /* hardsigmoid, scale; alpha: leakyrelu, elu */
	/* scale: a factor and a shift per channel in place of alpha and beta
	 * (nch of them, 1 to HP_SPEC_SCALE_CH: an image's input
	 * normalization, (x - mean) / std with a mean and std per channel);
	 * 0: alpha and beta */
	int nch;
	double chf[HP_SPEC_SCALE_CH], chs[HP_SPEC_SCALE_CH];
	double eps; /* layernorm: added to the variance */
	/* The layers whose outputs this one reads (indices of earlier
	 * layers; -1: the network input).  ninputs 0: the previous layer's
	 * output (the network input for layer 0), as in a plain chain. */
	int ninputs;
	int inputs[HP_SPEC_MAX_INPUTS];
};
/* A conv's or pool's kernel width and left/right padding. */
static inline int64_t hp_spec_kernel_w(const struct hp_spec_layer *L)
{
	return L->rect ? L->kernel_w : L->kernel;
}
static inline int64_t hp_spec_pad_w(const struct hp_spec_layer *L)
{
	return L->rect ? L->pad_w : L->pad;
}
/* A conv's bottom and right padding. */
static inline int64_t hp_spec_pad_b(const struct hp_spec_layer *L)
{
	return L->asym ? L->pad_b : L->pad;
}
static inline int64_t hp_spec_pad_r(const struct hp_spec_layer *L)
{
	return L->asym ? L->pad_r : hp_spec_pad_w(L);
}
/* A conv's dilation (1: none). */
static inline int64_t hp_spec_dilation(const struct hp_spec_layer *L)
{
	return L->dilation > 1 ? L->dilation : 1;
}
struct hp_spec {
	char *name;
	int64_t input[3]; /* C, H, W */
	int64_t classes;  /* 0: no loss layer */
	struct hp_spec_layer *layers;
	int nlayers;
	/* hp_spec_from_graph(): what the conversion took otherwise than the
	 * file writes it (a final softmax as the loss's, layer scales folded
	 * into convs).  Not part of the spec's JSON. */
	char notes[HP_SPEC_MAX_NOTES][160];
	int nnotes;
};
/* Parse a spec without building a graph; release with hp_spec_release(). */
int hp_spec_parse_only(const char *json, size_t len, struct hp_spec *out,
		       struct hp_error *err);
void hp_spec_release(struct hp_spec *s);
/* The spec as compact JSON that hp_spec_parse_only() reads back; caller
 * frees; NULL on ENOMEM. */
char *hp_spec_to_json(const struct hp_spec *s);

/*
 * Shapes through a spec (a DAG: see hp_spec_layer.inputs): out[i] gets C,
 * H, W of layer i's output (C*H*W, 1, 1 after fc and flatten), flat[i]
 * (may be NULL) whether it is flat.  Refuses, naming the layer, what does
 * not fit: inputs that are not earlier layers, add of unequal shapes,
 * concat of unequal images, a conv after a flat layer, groups that do not
 * divide the channels, a layer whose output nothing reads (but the last).
 */
int hp_spec_shapes(const struct hp_spec *s, int64_t (*out)[3], bool *flat,
		   struct hp_error *err);

/*
 * The engine's spec of an ONNX CNN (the graph of hp_onnx_parse()) at input
 * C,H,W (input_shape NULL: the graph's own; an N, H, W, C input's too):
 * the ops and the forms of several ops that README's "model spec" lists
 * (convs, norms, activations, pools, residual sums, concats, channel
 * slices and shuffles, ConvNeXt's and Keras's forms, a final softmax).
 * The ops it does not run are refused together, HP_EUNSUPP naming them.
 * The weights are not read (the engine initializes its own).  with_loss:
 * "classes" is the last layer's output size (softmax cross-entropy), else
 * 0.  out->notes says what was taken otherwise than the file writes.
 * Release with hp_spec_release().
 */
int hp_spec_from_graph(struct hp_graph *g, const int64_t *input_shape,
		       bool with_loss, struct hp_spec *out,
		       struct hp_error *err);

/*
 * The spec the trainer trains, from a model file's bytes: a hetpool spec
 * (JSON: it begins with '{', '[' or a UTF-8 BOM), or an ONNX CNN converted
 * with its loss (hp_spec_from_graph()) at input_shape (NULL: its own; a
 * spec takes none, HP_EINVAL).  Refuses a model without "classes" (at
 * least 2): the trainer trains classifiers.  Release with
 * hp_spec_release().  (hetpool-train, and hetpoold before it accepts a
 * job.)
 */
int hp_spec_for_training(const void *data, size_t len,
			 const int64_t *input_shape, struct hp_spec *out,
			 struct hp_error *err);

/* Build the graph of a parsed spec. */
struct hp_graph *hp_spec_to_graph(const struct hp_spec *s,
				  struct hp_error *err);

/*
 * Shape propagation at a batch size, without relying on value_info: fills
 * every tensor's rank/dims and folds small integer constants (Shape ->
 * Gather -> Unsqueeze -> Concat chains).  input_shape (may be NULL)
 * overrides the non-batch dims of the first graph input.  Unknown ops are
 * recorded in skipped (the caller's array of HP_MAX_SKIPPED names).
 */
int hp_shape_infer(struct hp_graph *g, int64_t batch,
		   const int64_t *input_shape, int input_rank,
		   struct hp_error *err);

/* Layer kinds counted in the report. */
#define HP_KIND_MAP(X)                                                         \
	X(CONV, "conv")                                                        \
	X(FC, "fc")                                                            \
	X(ATTN_MATMUL, "attention_matmul")                                     \
	X(NORM, "norm")                                                        \
	X(POOL, "pool")                                                        \
	X(ACTIVATION, "activation")                                            \
	X(ELEMENTWISE, "elementwise")                                          \
	X(SOFTMAX, "softmax")                                                  \
	X(DROPOUT, "dropout")                                                  \
	X(LOSS, "loss")                                                        \
	X(RESHAPE, "reshape")                                                  \
	X(CONCAT_SPLIT, "concat_split")                                        \
	X(RESIZE, "resize")                                                    \
	X(REDUCE, "reduce")                                                    \
	X(CONSTANT, "constant")                                                \
	X(OTHER, "other")

enum hp_kind {
#define HP_KIND_ENUM(name, str) HP_KIND_##name,
	HP_KIND_MAP(HP_KIND_ENUM)
#undef HP_KIND_ENUM
	    HP_KIND__COUNT
};
const char *hp_kind_name(enum hp_kind k);

/* One row of the per-layer table. */
struct hp_layer_stats {
	int node; /* index into graph->nodes */
	enum hp_kind kind;
	int64_t params;	  /* trainable parameters first used here */
	int64_t macs;	  /* forward multiply-accumulates, whole batch
			     (the report gives them per sample) */
	double flops_fwd; /* whole batch */
	double flops_bwd_input;
	double flops_bwd_weight;
	int64_t act_bytes; /* output bytes kept for backward, whole batch */
	int64_t out_dims[HP_MAX_RANK];
	int out_rank;
};

struct hp_features {
	int64_t batch;
	int64_t params;		   /* trainable parameters */
	int64_t nontrainable;	   /* e.g. BatchNorm running statistics */
	int64_t macs_per_sample;   /* Conv/ConvTranspose/Gemm/MatMul only */
	double flops_fwd;	   /* whole batch, all ops */
	double flops_bwd_input;	   /* whole batch */
	double flops_bwd_weight;   /* whole batch */
	int64_t activations_bytes; /* kept for backward, whole batch */
	int64_t input_bytes;	   /* one batch of model input */
	int64_t weights_bytes;
	int64_t gradients_bytes;
	int64_t buffers_bytes;	  /* non-trainable state (running stats) */
	int64_t sgd_state_bytes;  /* momentum buffer */
	int64_t adam_state_bytes; /* two moments */
	int64_t peak_act_bytes;	  /* largest single activation tensor */
	int kind_count[HP_KIND__COUNT];
	/* Structure for the estimator's baseline regression. */
	int conv_layers, fc_layers;
	int64_t max_filters, max_fc_width, input_hw;
	struct hp_layer_stats *layers; /* one per node, in topological order */
	int nlayers;
	char **skipped; /* op types that were not understood (unique) */
	int nskipped;
};

/*
 * Propagate shapes at batch and compute features.  The graph is updated in
 * place (shapes).  Returns 0 or a negative code with err set.
 */
int hp_analyze(struct hp_graph *g, int64_t batch, const int64_t *input_shape,
	       int input_rank, struct hp_features *out, struct hp_error *err);
void hp_features_release(struct hp_features *f);

/*
 * The analysis as JSON (jansson): params, macs, flops {forward, backward,
 * backward_input, backward_weight}, memory {...}, layers (counts by kind),
 * per_layer [...], skipped_ops [...].  New reference owned by the caller
 * (json_decref); NULL on ENOMEM.
 */
struct json_t;
struct json_t *hp_features_json(const struct hp_graph *g,
				const struct hp_features *f);

/* Memory for training with an optimizer: "sgd" (momentum) or "adam". */
int64_t hp_features_train_bytes(const struct hp_features *f, bool adam);

#ifdef __cplusplus
}
#endif
#endif /* HETPOOL_MODEL_H */
