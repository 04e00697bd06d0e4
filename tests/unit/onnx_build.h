/*
 * onnx_build.h - build small ONNX models in tests with protobuf-c, so that
 * importer and shape tests (cycles, dangling names, odd ops) need no
 * Python or checked-in binaries.
 */
#ifndef HP_ONNX_BUILD_H
#define HP_ONNX_BUILD_H

#include <stddef.h>
#include <stdint.h>

struct ob; /* a model under construction */

struct ob *ob_new(int64_t opset);
/* Graph input of float type; dims < 0 are symbolic ("batch"). */
void ob_input(struct ob *b, const char *name, int rank, const int64_t *dims);
/* Float initializer with dims (no data, like the stripped files). */
void ob_init(struct ob *b, const char *name, int rank, const int64_t *dims);
/* int64 initializer with values. */
void ob_init_i64(struct ob *b, const char *name, int n, const int64_t *v);
/* Node with comma-separated inputs/outputs ("" for none, "x,,y" leaves an
 * optional input empty).  Returns an index for ob_attr_* calls. */
int ob_node(struct ob *b, const char *op, const char *inputs,
	    const char *outputs);
void ob_attr_i(struct ob *b, int node, const char *name, int64_t v);
void ob_attr_f(struct ob *b, int node, const char *name, float v);
void ob_attr_s(struct ob *b, int node, const char *name, const char *v);
void ob_attr_ints(struct ob *b, int node, const char *name, int n,
		  const int64_t *v);
/* A Conv node: a k x k kernel, pad on every side (0: no pads attribute).
 * Returns its index for more attributes (strides, group, dilations). */
int ob_conv(struct ob *b, const char *inputs, const char *output, int64_t k,
	    int64_t pad);
/* Constant node output with int64 values; n < 0 makes a scalar of v[0]. */
void ob_const_i64(struct ob *b, const char *output, int n, const int64_t *v);
/* A Constant node: a float scalar. */
void ob_const_f32(struct ob *b, const char *output, float v);
/* A Constant node: a float vector of n values, all v. */
void ob_const_f32v(struct ob *b, const char *output, int n, float v);
void ob_output(struct ob *b, const char *name);
/* A CNN's classifier head on activation `in`: global average pool,
 * Flatten, Gemm with the initializers "fw" and "fb" (transB), graph
 * output "y". */
void ob_classifier(struct ob *b, const char *in);
/* Serialize; *len gets the size; caller frees the result.  Frees b. */
uint8_t *ob_finish(struct ob *b, size_t *len);

#endif
