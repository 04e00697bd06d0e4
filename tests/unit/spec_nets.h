/*
 * spec_nets.h - hetpool JSON specs written inline in the engine's tests:
 * one macro per layer (string literals, concatenated by the compiler) and
 * the nets that test_engine.c (the CPU backend) and test_engine_gpu.c (the
 * CUDA backend) both check, so both backends are held to the same nets.
 */
#ifndef HP_TEST_SPEC_NETS_H
#define HP_TEST_SPEC_NETS_H

#define NET(input, classes, layers)                                            \
	"{\"name\":\"t\",\"input\":" input ",\"classes\":" #classes            \
	",\"layers\":[" layers "]}"
#define CONV(f, k, s, p)                                                       \
	"{\"type\":\"conv\",\"filters\":" #f ",\"kernel\":" #k                 \
	",\"stride\":" #s ",\"pad\":" #p "}"
#define POOL(op, k, s, p)                                                      \
	"{\"type\":\"pool\",\"op\":\"" op "\",\"kernel\":" #k                  \
	",\"stride\":" #s ",\"pad\":" #p "}"
/* a max pool in ceil mode */
#define POOLC(k, s, p)                                                         \
	"{\"type\":\"pool\",\"op\":\"max\",\"kernel\":" #k ",\"stride\":" #s   \
	",\"pad\":" #p ",\"ceil_mode\":true}"
/* an average pool with its padding left out (count_include_pad false),
 * and in ceil mode (c: true or false) */
#define POOLX(k, s, p, c)                                                      \
	"{\"type\":\"pool\",\"op\":\"avg\",\"kernel\":" #k ",\"stride\":" #s   \
	",\"pad\":" #p ",\"count_include_pad\":false,\"ceil_mode\":" #c "}"
#define FC(u) "{\"type\":\"fc\",\"units\":" #u "}"
#define BN "{\"type\":\"bn\"}"
#define RELU "{\"type\":\"relu\"}"
#define SOFTMAX "{\"type\":\"softmax\"}"
#define DROPOUT(p) "{\"type\":\"dropout\",\"p\":" #p "}"
/* DAG specs: layers that name their inputs ("in" is the JSON list). */
#define IN(l) ",\"inputs\":[" l "]"
#define CONVI(f, k, s, p, in)                                                  \
	"{\"type\":\"conv\",\"filters\":" #f ",\"kernel\":" #k                 \
	",\"stride\":" #s ",\"pad\":" #p IN(in) "}"
#define GCONV(f, k, s, p, g)                                                   \
	"{\"type\":\"conv\",\"filters\":" #f ",\"kernel\":" #k                 \
	",\"stride\":" #s ",\"pad\":" #p ",\"groups\":" #g "}"
#define ADD(in) "{\"type\":\"add\"" IN(in) "}"
#define CONCAT(in) "{\"type\":\"concat\"" IN(in) "}"
#define CLIP(lo, hi) "{\"type\":\"clip\",\"min\":" #lo ",\"max\":" #hi "}"
#define GAP "{\"type\":\"gap\"}"
#define SIGMOID "{\"type\":\"sigmoid\"}"
#define HARDSIGMOID(a, b)                                                      \
	"{\"type\":\"hardsigmoid\",\"alpha\":" #a ",\"beta\":" #b "}"
#define MUL(in) "{\"type\":\"mul\"" IN(in) "}"
/* EfficientNet's forms: SiLU (x * sigmoid(x)) after a bn, and a
 * squeeze-and-excitation gate (global pool, 1x1 convs, sigmoid) that
 * scales the channels of the block it reads */
#define SE_NET                                                                 \
	NET("[3,6,6]", 3,                                                      \
	    CONV(8, 3, 1, 1) "," BN "," SIGMOID "," MUL(                       \
		"1,2") "," GAP                                                 \
		       "," CONV(4, 1, 1, 0) "," RELU "," CONV(                 \
			   8, 1, 1, 0) "," SIGMOID "," MUL("3,8") "," FC(3))
#define FLATTEN "{\"type\":\"flatten\"}"
/* a dilated conv: taps d apart; g groups */
#define DCONV(f, k, s, p, d, g)                                                \
	"{\"type\":\"conv\",\"filters\":" #f ",\"kernel\":" #k                 \
	",\"stride\":" #s ",\"pad\":" #p ",\"dilation\":" #d ",\"groups\":" #g \
	"}"
/* a conv padded unlike on the sides: top, left, bottom, right; g groups */
#define APCONV(f, kh, kw, s, pt, pl, pb, pr, g)                                \
	"{\"type\":\"conv\",\"filters\":" #f ",\"kernel\":[" #kh "," #kw       \
	"],\"stride\":" #s ",\"pad\":[" #pt "," #pl "," #pb "," #pr            \
	"],\"groups\":" #g "}"
/* Inception's non-square convs: a kh x kw kernel, ph and pw pads; g
 * groups */
#define RCONV(f, kh, kw, s, ph, pw, g)                                         \
	"{\"type\":\"conv\",\"filters\":" #f ",\"kernel\":[" #kh "," #kw       \
	"],\"stride\":" #s ",\"pad\":[" #ph "," #pw "],\"groups\":" #g "}"
/* ShuffleNet's forms: a slice of the channels, a channel shuffle */
#define SLICE(start, ch, in)                                                   \
	"{\"type\":\"slice\",\"start\":" #start ",\"channels\":" #ch IN(in) "}"
#define SHUFFLE(g) "{\"type\":\"shuffle\",\"groups\":" #g "}"
#define SHUFFLEI(g, in) "{\"type\":\"shuffle\",\"groups\":" #g IN(in) "}"
/* ConvNeXt's forms: a layer norm over the channels, gelu */
#define LN "{\"type\":\"layernorm\"}"
#define LNE(eps) "{\"type\":\"layernorm\",\"eps\":" #eps "}"
#define LNI(in) "{\"type\":\"layernorm\"" IN(in) "}"
#define PRELU "{\"type\":\"prelu\"}"
#define PRELUC "{\"type\":\"prelu\",\"per_channel\":true}"
#define GN(g) "{\"type\":\"groupnorm\",\"groups\":" #g "}"
#define GNE(g, eps)                                                            \
	"{\"type\":\"groupnorm\",\"groups\":" #g ",\"eps\":" #eps "}"
#define GNI(g, in) "{\"type\":\"groupnorm\",\"groups\":" #g IN(in) "}"
#define GELU "{\"type\":\"gelu\"}"
/* other activations users write: leaky relu, tanh, elu */
#define LEAKY(a) "{\"type\":\"leakyrelu\",\"alpha\":" #a "}"
#define TANH "{\"type\":\"tanh\"}"
#define SOFTPLUS "{\"type\":\"softplus\"}"
#define ELU(a) "{\"type\":\"elu\",\"alpha\":" #a "}"
/* a model's constant arithmetic: factor x + shift */
#define SCALE(f, s) "{\"type\":\"scale\",\"factor\":" #f ",\"shift\":" #s "}"
#define SCALEI(f, s, in)                                                       \
	"{\"type\":\"scale\",\"factor\":" #f ",\"shift\":" #s IN(in) "}"
/* a ConvNeXt block on 16 channels: depthwise 7x7, layer norm, 1x1 conv
 * to 4x the channels, gelu, 1x1 conv back, the residual sum */
#define CONVNEXT_BLOCK_NET                                                     \
	NET("[3,8,8]", 3,                                                      \
	    CONV(16, 4, 4, 0) "," LNE(1e-6) "," GCONV(                         \
		16, 7, 1, 3,                                                   \
		16) "," LN                                                     \
		    "," CONV(64, 1, 1, 0) "," GELU "," CONV(                   \
			16, 1, 1, 0) "," ADD("1,6") "," GAP "," LN "," FC(3))
/* A ShuffleNetV2 unit of stride 1: the input's channels halved by two
 * slices, one half through 1x1, depthwise 3x3 and 1x1 convs, the halves
 * concatenated and shuffled in 2 groups (8 channels: the halves fall
 * inside the CPU's channel blocks, so the slices read a plain copy) */
#define SHUFFLE_UNIT_NET                                                          \
	NET("[3,5,5]", 3,                                                         \
	    CONV(8, 3, 1, 1) "," SLICE(0, 4, "0") "," SLICE(4, 4, "0") "," CONVI( \
		4, 1, 1, 0,                                                       \
		"2") "," BN "," RELU                                              \
		     "," GCONV(4, 3, 1, 1, 4) "," BN "," CONVI(                   \
			 4, 1, 1, 0,                                              \
			 "7") "," CONCAT("1,8") "," SHUFFLE(2) "," FC(3))

/* A stem, a block with a strided projection shortcut, an identity block
 * (conv -> bn -> relu -> conv -> bn -> add with the block input: the
 * stem's relu output and the first add's relu output are each read twice,
 * so their gradients are summed), gap, flatten, fc. */
#define RESIDUAL_NET                                                           \
	NET("[4,6,6]", 5,                                                      \
	    CONV(8, 3, 1,                                                      \
		 1) "," BN "," RELU                                            \
		    "," CONVI(8, 3, 2, 1, "2") "," BN "," RELU "," CONV(       \
			8, 3, 1,                                               \
			1) "," BN                                              \
			   "," CONVI(8, 1, 2, 0, "2") "," BN "," ADD(          \
			       "7,9") "," RELU                                 \
				      "," CONV(8, 3, 1, 1) "," BN "," ADD(     \
					  "13,11") "," RELU "," GAP            \
						   "," FLATTEN "," FC(5))

/* An inception-like fork: three branches and the network input itself
 * concatenated (channel counts off the 16-blocking), so the input's
 * gradient has two readers. */
#define CONCAT_NET                                                             \
	NET("[3,6,6]", 3,                                                      \
	    CONV(6, 3, 1, 1) "," RELU "," CONVI(5, 1, 1, 0, "1") "," CONVI(    \
		7, 3, 1, 1,                                                    \
		"1") ","                                                       \
		     "{\"type\":\"pool\",\"op\":\"max\",\"kernel\":3,"         \
		     "\"stride\":1,\"pad\":1,\"inputs\":[1]}"                  \
		     "," CONCAT("2,3,4,-1") "," BN "," RELU "," POOL(          \
			 "avg", 2, 2, 0) "," FC(3))

/* MobileNetV2's pieces: ReLU6 in place, a depthwise conv, a pointwise
 * one, a residual add reading the first ReLU6's output (its gradient a
 * sum, then clipped in place), gap, flatten, dropout and fc. */
#define MOBILENET_BLOCK(input)                                                 \
	NET(input, 10,                                                         \
	    CONV(16, 3, 2, 1) "," BN "," CLIP(0, 6) "," GCONV(                 \
		16, 3, 1, 1,                                                   \
		16) "," BN                                                     \
		    "," CLIP(0, 6) "," CONV(16, 1, 1, 0) "," BN "," ADD(       \
			"2,7") "," CONV(24, 1, 1,                              \
					0) "," BN "," GAP "," FLATTEN          \
					   "," DROPOUT(0.2) "," FC(10))

#endif
