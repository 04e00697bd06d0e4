/* model_int.h - internals shared by the model module's files. */
#ifndef HP_MODEL_INT_H
#define HP_MODEL_INT_H

#include "hetpool/model.h"

/*
 * Topological order of g's nodes into order[nnodes] (caller's array).
 * HP_ECYCLE, with a node on the cycle named in err, if there is none.
 */
int hp__graph_topo(const struct hp_graph *g, int *order, struct hp_error *err);

/*
 * Whether graph input t is an image batch laid out N, H, W, C (as Keras
 * models exported by tf2onnx take it): 4-D, and read only by Transposes
 * to N, C, H, W (perm 0, 3, 1, 2), directly or through up to 3 ops of
 * arithmetic with a scalar (Rescaling) or Identity.  Its --input-shape CxHxW
 * then fills its dims as H, W, C.
 */
bool hp__input_nhwc(const struct hp_graph *g, int t);

/* Shape of one node from its inputs' shapes; fills outputs.  Returns 0,
 * 1 if the op is not known (outputs guessed from the first input), 2 if
 * an input's shape is not known, or a negative code with err set. */
int hp__shape_node(struct hp_graph *g, struct hp_node *n, struct hp_error *err);

/* One ONNX op that hetpool knows (the table is in shape.c). */
struct hp__op {
	const char *name; /* op type, e.g. "Conv" */
	/* Its shape rule, returning as hp__shape_node() does. */
	int (*shape)(struct hp_graph *g, struct hp_node *n,
		     struct hp_error *err);
	enum hp_kind kind; /* what it is counted as */
	int act_flops;	   /* activations: forward FLOPs per element */
};

/* The row of op type name, or NULL for an op hetpool does not know. */
const struct hp__op *hp__op_find(const char *name);

/* Length of a UTF-8 byte order mark at the start of p[0..n): 3 or 0. */
size_t hp__utf8_bom_len(const char *p, size_t n);

/* True for the auto_pad values ONNX defines: NOTSET, SAME_UPPER,
 * SAME_LOWER and VALID. */
bool hp__auto_pad_known(const char *s);

/*
 * The output size of one spatial axis of a conv's or pool's window (ONNX's
 * and PyTorch's rules) into *out_sz: in_sz in, a kernel of k taps dil
 * apart, stride s, *pb and *pe padding before and after (auto_pad
 * SAME_UPPER or SAME_LOWER sets them, VALID zeroes them), ceil_mode
 * rounding up (a last window starts inside the input or its left
 * padding).  -1 when no window fits.
 */
int hp__window_out(int64_t in_sz, int64_t k, int64_t s, int64_t dil,
		   int64_t *pb, int64_t *pe, const char *auto_pad,
		   bool ceil_mode, int64_t *out_sz);

/* True for tensors whose values are stored weights (float initializers,
 * directly or through Identity). */
bool hp__is_weight(const struct hp_graph *g, int t);

#endif
