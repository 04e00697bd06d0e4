#!/usr/bin/env bash
# onnx_engine.sh - ONNX CNNs in the engine: `hetpool profile MODEL.onnx`
# measures ResNet-18's architecture at a small input (one dataset row) and
# writes the spec it ran, as it does GoogLeNet, SqueezeNet, DenseNet-121,
# MNASNet, EfficientNet-B0 and RegNetY (ceil-mode pools, wide concats,
# ReduceMean, SiLU, squeeze-and-excitation); an ONNX file with ops the engine
# does not run is
# refused with exit 2 naming them; hetpool-train trains ResNet-18 on
# Fashion-MNIST at 1x28x28 for a few steps.
. "$(dirname "$0")/lib.sh"
ROOT=${HP_ROOT:?}
R18=$ROOT/data/models/resnet18.train.onnx
SHUF=$ROOT/data/models/shufflenet_v2_x1_0.train.onnx
TRAIN=$HP_BIN/hetpool-train
PY=/usr/bin/python3

if ! "$HP" profile --help 2>&1 | grep -q -- "--input-shape"; then
	echo "skip onnx_engine: no engine in this build"
	exit 0
fi

# ---- profile ----
"$HP" profile "$R18" --batch 2 --input-shape 3x32x32 --threads 1 \
	--max-seconds 0.5 --retries 0 --out "$TMP/r18.csv" \
	--save-spec "$TMP/r18.json" --json >"$TMP/out" 2>"$TMP/err"
rc=$?
if [ $rc -eq 0 ]; then ok profile_onnx; else fail profile_onnx "exit $rc: $(cat "$TMP/err")"; fi
if [ "$(grep -c . "$TMP/r18.csv")" -eq 2 ] && grep -q 'spec:resnet18' "$TMP/r18.csv"; then
	ok profile_onnx_row
else
	fail profile_onnx_row "$(cat "$TMP/r18.csv")"
fi
# the spec it ran: 8 residual adds, 20 convs (3 projections), 1000 classes
if "$PY" - "$TMP/r18.json" <<'PY'; then ok profile_onnx_spec; else fail profile_onnx_spec "$(head -c 300 "$TMP/r18.json")"; fi
import json, sys
d = json.load(open(sys.argv[1]))
t = [l['type'] for l in d['layers']]
sys.exit(0 if (t.count('add'), t.count('conv'), d['classes'], d['input']) == (8, 20, 1000, [3, 32, 32]) else 1)
PY
# the spec is a model that predict reads
expect_status predict_saved_spec 0 "$HP" predict "$TMP/r18.json" --batch 2 --device cpu
# torchvision's other forms: GoogLeNet's and SqueezeNet's max pools in ceil
# mode, DenseNet's Concat of one input and of up to 25, MNASNet's
# ReduceMean, EfficientNet's SiLU (Sigmoid and Mul), MobileNetV3's
# hardswish (HardSigmoid and Mul) and the squeeze-and-excitation gates of
# EfficientNet, RegNetY and MobileNetV3; each runs, and
# the spec it ran says so (counted by hand from torchvision's definitions:
# GoogLeNet 4 stem pools and one in each of its 9 inception blocks,
# SqueezeNet 3; DenseNet-121's third block ends in a Concat of its input
# and 24 layers; EfficientNet-B0 49 SiLUs and 16 gates, RegNetY-400MF 16
# gates, MobileNetV3-small 28 hardsigmoids, 19 in hardswishes and 9 in
# gates): ceil-mode pools, widest concat, (hard) sigmoids, muls
TV=$ROOT/tests/data/models
for case in "googlenet 13 4 0 0" "squeezenet1_0 3 2 0 0" "densenet121 0 25 0 0" \
	"mnasnet0_5 0 0 0 0" "efficientnet_b0 0 0 65 65" "regnet_y_400mf 0 0 16 16" \
	"mobilenet_v3_small 0 0 28 28" "shufflenet_v2_x1_0 0 2 0 0"; do
	set -- $case
	"$HP" profile "$TV/$1.train.onnx" --batch 2 --input-shape 3x32x32 --threads 1 \
		--max-seconds 0.3 --retries 0 --out "$TMP/$1.csv" \
		--save-spec "$TMP/$1.json" >/dev/null 2>"$TMP/err"
	rc=$?
	if [ $rc -eq 0 ]; then ok "profile_onnx_$1"; else fail "profile_onnx_$1" "exit $rc: $(cat "$TMP/err")"; fi
	if "$PY" - "$TMP/$1.json" "$2" "$3" "$4" "$5" <<'PY'; then ok "profile_onnx_$1_spec"; else fail "profile_onnx_$1_spec" "$(head -c 300 "$TMP/$1.json")"; fi
import json, sys
d = json.load(open(sys.argv[1]))
L = d['layers']
got = (sum(1 for l in L if l.get('ceil_mode')),
       max([len(l.get('inputs', [])) for l in L if l['type'] == 'concat'] or [0]),
       sum(l['type'] in ('sigmoid', 'hardsigmoid') for l in L),
       sum(l['type'] == 'mul' for l in L),
       sum(l['type'] == 'gap' for l in L) >= 1, d['classes'])
sys.exit(0 if got == tuple(int(a) for a in sys.argv[2:6]) + (True, 1000) else 1)
PY
done
# ShuffleNetV2's halves and shuffles (torchvision's stages of 4, 8 and 4
# units: each unit shuffles its output in 2 groups; the 13 of stride 1
# split their input in two halves by Slices, 58, 116 and 232 channels)
if "$PY" - "$TMP/shufflenet_v2_x1_0.json" <<'PY'; then ok profile_onnx_shufflenet_forms; else fail profile_onnx_shufflenet_forms "$(head -c 300 "$TMP/shufflenet_v2_x1_0.json")"; fi
import json, sys
L = json.load(open(sys.argv[1]))['layers']
sl = [l for l in L if l['type'] == 'slice']
sh = [l for l in L if l['type'] == 'shuffle']
halves = sorted({(l['start'], l['channels']) for l in sl})
sys.exit(0 if (len(sl), len(sh), {l['groups'] for l in sh}) == (26, 16, {2}) and
         halves == [(0, 58), (0, 116), (0, 232), (58, 58), (116, 116), (232, 232)] else 1)
PY
# Inception v3 (at its smallest input, 75x75): the 1x7, 7x1, 1x3 and 3x1
# convs (4 InceptionC blocks of 6, InceptionD's 2, 2 InceptionE blocks of
# 4: 34) and the average pools whose padding PyTorch exports as a Pad of
# zeros (3 InceptionA, 4 InceptionC and 2 InceptionE blocks: 9)
expect_status profile_onnx_inception 0 "$HP" profile "$TV/inception_v3.train.onnx" --batch 2 \
	--input-shape 3x75x75 --threads 1 --max-seconds 0.3 --retries 0 --out "$TMP/inc.csv" \
	--save-spec "$TMP/inc.json"
if "$PY" - "$TMP/inc.json" <<'PY'; then ok profile_onnx_inception_forms; else fail profile_onnx_inception_forms "$(head -c 300 "$TMP/inc.json")"; fi
import json, sys
L = json.load(open(sys.argv[1]))['layers']
rect = sorted({tuple(l['kernel']) for l in L if isinstance(l.get('kernel'), list)})
n_rect = sum(isinstance(l.get('kernel'), list) for l in L)
padded = sum(l['type'] == 'pool' and l['op'] == 'avg' and l['pad'] == 1 for l in L)
sys.exit(0 if (n_rect, rect, padded) == (34, [(1, 3), (1, 7), (3, 1), (7, 1)], 9) else 1)
PY
# the data folder's copy of it (Zeus's model) runs too
expect_status profile_onnx_shufflenet_data 0 "$HP" profile "$SHUF" --batch 2 --input-shape 3x32x32 \
	--threads 1 --max-seconds 0.3 --retries 0 --out "$TMP/s.csv"
# ConvNeXt-T: its layer norms over the channels (channels-last, as ops),
# MatMuls (1x1 convs), gelus (as ops) and layer scales (folded into the
# convs) run; counted from torchvision's definition: 23 layer norms (stem,
# 18 blocks, 3 downsamplings, head), 18 gelus, 58 convs (stem, 18
# depthwise, 36 MatMuls, 3 downsamplings), 18 residual adds
expect_status profile_onnx_convnext 0 "$HP" profile "$TV/convnext_tiny.train.onnx" --batch 2 \
	--input-shape 3x32x32 --threads 1 --max-seconds 0.3 --retries 0 --out "$TMP/cnx.csv" \
	--save-spec "$TMP/cnx.json"
if "$PY" - "$TMP/cnx.json" <<'PY'; then ok profile_onnx_convnext_forms; else fail profile_onnx_convnext_forms "$(head -c 300 "$TMP/cnx.json")"; fi
import json, sys
t = [l['type'] for l in json.load(open(sys.argv[1]))['layers']]
sys.exit(0 if [t.count(k) for k in ('layernorm', 'gelu', 'conv', 'add')] == [23, 18, 58, 18] else 1)
PY
# the same models exported at opset 17 (torch's LayerNormalization and
# HardSwish ops, one op each where opset 13 writes several) run as the same
# networks: the specs they ran are the opset 13 files' (mobilenet_v3_small's
# saved above at the same input)
for m in convnext_tiny:cnx mobilenet_v3_small:mobilenet_v3_small; do
	n=${m%%:*} ref=${m#*:}
	"$HP" profile "$TV/$n.opset17.train.onnx" --batch 2 --input-shape 3x32x32 --threads 1 \
		--max-seconds 0.3 --retries 0 --out "$TMP/$n.17.csv" \
		--save-spec "$TMP/$n.17.json" >/dev/null 2>"$TMP/err"
	rc=$?
	if [ $rc -eq 0 ]; then ok "profile_onnx_opset17_$n"; else fail "profile_onnx_opset17_$n" "exit $rc: $(cat "$TMP/err")"; fi
	if cmp -s "$TMP/$ref.json" "$TMP/$n.17.json"; then
		ok "profile_onnx_opset17_${n}_same_spec"
	else
		fail "profile_onnx_opset17_${n}_same_spec" "$(diff "$TMP/$ref.json" "$TMP/$n.17.json" | head -c 300)"
	fi
done
# models as users write and export them (tests/data/onnx/USER.csv, from
# tools/gen_user_models.py): each converts, the analysis counts PyTorch's
# parameters, and the spec has the layers its form becomes: log_softmax
# (the loss's: no layer), tanh, x / 255 (one scale), input normalization and
# a branch * 0.2 (scales), LeakyReLU, ELU, AdaptiveMaxPool2d(1) (a max pool
# of the map), dilated convs, Mish (softplus, tanh, mul), GELU on flat
# data, opset 9's ceil-mode pools (GoogLeNet's 4 of stride 2), the
# parameters as graph inputs (ResNet-18's 20 convs), GroupNorm's five ops
# (one groupnorm layer each), InstanceNorm2d (a group per channel), PReLU
# (a slope per channel, and one shared), nn.ZeroPad2d before convs (their
# padding, one-sided too) and x.amax((2, 3)) (a max pool of the map),
# global pooling as squeeze(-1).squeeze(-1), mean(3).mean(2) and sum((2, 3)),
# (x - mean) / std per channel on the input (one scale, per channel)
UD=$ROOT/tests/data/onnx
while IFS=, read -r f inp params _; do
	[ "$f" = file ] && continue
	n=${f%.onnx}
	shape=$inp
	[ "$n" = user_googlenet_opset9 ] && shape=3x64x64
	got=$("$HP" analyze "$UD/$f" --json 2>/dev/null | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["params"])')
	if [ "$got" = "$params" ]; then ok "analyze_$n"; else fail "analyze_$n" "params $got, PyTorch's $params"; fi
	"$HP" profile "$UD/$f" --batch 2 --input-shape "$shape" --threads 1 --max-seconds 0.2 \
		--retries 0 --out "$TMP/$n.csv" --save-spec "$TMP/$n.json" --json >"$TMP/$n.out" \
		2>"$TMP/$n.err"
	rc=$?
	if [ $rc -eq 0 ]; then ok "profile_$n"; else fail "profile_$n" "exit $rc: $(cat "$TMP/$n.err")"; fi
done <"$UD/USER.csv"
# what the conversion took otherwise than the file writes is said, on stderr
# and in the JSON: the MNIST example's log_softmax, GoogLeNet's end pads
if grep -q "note: the final LogSoftmax over the classes is the loss's own" "$TMP/user_mnist_example.err" &&
	"$PY" -c 'import json,sys; n=json.load(open(sys.argv[1]))["notes"]; sys.exit(0 if len(n) == 1 and "LogSoftmax" in n[0] else 1)' \
		"$TMP/user_mnist_example.out" &&
	grep -q "note: 4 max pools padded longer at the ends taken in ceil mode" "$TMP/user_googlenet_opset9.err" &&
	"$PY" -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))["notes"] == [] else 1)' \
		"$TMP/user_lenet_tanh.out" &&
	"$PY" -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))["notes"] == [] else 1)' \
		"$TMP/user_groupnorm.out" &&
	grep -q "note: 1 group norm without a scale and shift trains with them" "$TMP/user_instancenorm.err" &&
	grep -q "note: 1 instance norm without a scale and shift trains with them" "$TMP/user_instancenorm.err"; then
	ok profile_user_notes
else
	fail profile_user_notes "$(cat "$TMP/user_mnist_example.err" "$TMP/user_googlenet_opset9.err" "$TMP/user_instancenorm.err")"
fi
if "$PY" - "$TMP" <<'PY'; then ok profile_user_forms; else fail profile_user_forms "see above"; fi
import collections, json, sys
def spec(n):
    d = json.load(open("%s/%s.json" % (sys.argv[1], n)))
    return d, collections.Counter(l["type"] for l in d["layers"]), d["layers"]
bad = []
def want(n, ok):
    if not ok:
        bad.append(n)
d, c, L = spec("user_mnist_example")
want("mnist", c["softmax"] == 0 and c["fc"] == 2 and d["classes"] == 10)
d, c, L = spec("user_lenet_tanh")
want("lenet", c["tanh"] == 4 and c["relu"] == 0)
d, c, L = spec("user_dqn")
want("dqn", c["scale"] == 1 and L[0]["type"] == "scale" and abs(L[0]["factor"] * 255 - 1) < 1e-6)
d, c, L = spec("user_leaky_elu")
pools = [l for l in L if l["type"] == "pool"]
want("leaky_elu", (c["scale"], c["leakyrelu"], c["elu"], c["add"]) == (2, 1, 1, 1) and
     abs(L[0]["factor"] - 4) < 1e-6 and abs(L[0]["shift"] + 2) < 1e-6 and
     pools and pools[0]["op"] == "max" and pools[0]["kernel"] == 32)
d, c, L = spec("user_dilated_mish")
want("dilated_mish", [l.get("dilation", 1) for l in L if l["type"] == "conv"] == [1, 2, 4] and
     (c["softplus"], c["tanh"], c["mul"], c["gelu"]) == (3, 2, 2, 1))
d, c, L = spec("user_googlenet_opset9")
want("googlenet_opset9", sum(1 for l in L if l.get("ceil_mode")) == 4 and c["concat"] == 9)
d, c, L = spec("user_resnet18_noparams")
want("resnet18_noparams", (c["conv"], c["add"]) == (20, 8))
d, c, L = spec("user_groupnorm")
want("groupnorm", [l["groups"] for l in L if l["type"] == "groupnorm"] == [8, 8, 8, 32] and
     c["add"] == 1 and c["scale"] == 0 and c["mul"] == 0)
d, c, L = spec("user_prelu")
want("prelu", [l["per_channel"] for l in L if l["type"] == "prelu"] == [True, True, False] and
     c["bn"] == 2)
d, c, L = spec("user_zeropad")
convs = [l for l in L if l["type"] == "conv"]
want("zeropad", [x.get("pad") for x in convs] == [1, [0, 0, 1, 1]] and
     c["pool"] == 1 and [l for l in L if l["type"] == "pool"][0]["op"] == "max")
d, c, L = spec("user_pool_forms")
want("pool_forms", c["gap"] == 3 and c["concat"] == 1 and c["scale"] == 2)
d, c, L = spec("user_input_norm")
want("input_norm", L[0]["type"] == "scale" and len(L[0]["factor"]) == 3 and
     abs(L[0]["factor"][0] * 0.229 - 1) < 1e-6 and abs(L[0]["shift"][2] + 0.406 / 0.225) < 1e-6)
d, c, L = spec("user_instancenorm")
want("instancenorm", [l["groups"] for l in L if l["type"] == "groupnorm"] == [16, 16, 4] and
     c["scale"] == 0 and c["leakyrelu"] == 1)
if bad:
    print("forms not as expected: " + ", ".join(bad))
sys.exit(1 if bad else 0)
PY
# a 3-channel model at a 1-channel --input-shape (Fashion-MNIST): the sizes
# after the first conv are the model's own, so the forms that read them (a
# group norm's Reshape to its groups) still convert
"$HP" profile "$UD/user_groupnorm.onnx" --batch 2 --input-shape 1x28x28 --threads 1 \
	--max-seconds 0.2 --retries 0 --out "$TMP/gn1.csv" --save-spec "$TMP/gn1.json" \
	>/dev/null 2>"$TMP/err"
rc=$?
if [ $rc -eq 0 ] && "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["input"] == [1, 28, 28] and sum(l["type"] == "groupnorm" for l in d["layers"]) == 4 else 1)' "$TMP/gn1.json"; then
	ok profile_onnx_other_input_channels
else
	fail profile_onnx_other_input_channels "exit $rc: $(cat "$TMP/err")"
fi
# an input normalized per channel inside the model ((x - mean) / std of 3
# values) at a 1-channel --input-shape: their means on the one channel,
# said so (it was refused as "does not run Sub")
"$HP" profile "$UD/user_input_norm.onnx" --batch 2 --input-shape 1x28x28 --threads 1 \
	--max-seconds 0.2 --retries 0 --out "$TMP/in1.csv" --save-spec "$TMP/in1.json" \
	>/dev/null 2>"$TMP/err"
rc=$?
if [ $rc -eq 0 ] && "$PY" -c '
import json, sys
d = json.load(open(sys.argv[1])); L = d["layers"][0]
m, s = (0.485 + 0.456 + 0.406) / 3, (0.229 + 0.224 + 0.225) / 3
sys.exit(0 if d["input"] == [1, 28, 28] and L["type"] == "scale" and abs(L["factor"] * s - 1) < 1e-5
         and abs(L["shift"] + m / s) < 1e-5 else 1)' "$TMP/in1.json"; then
	ok profile_onnx_input_norm_other_channels
else
	fail profile_onnx_input_norm_other_channels "exit $rc: $(cat "$TMP/err") $(head -c 300 "$TMP/in1.json")"
fi
# ViT's attention (a Concat of the class token along the sequence) does not
expect_status profile_onnx_unsupported 2 "$HP" profile "$TV/vit_b_16.train.onnx" --batch 2 \
	--input-shape 3x32x32 --out "$TMP/s.csv"
expect_err profile_onnx_unsupported_says "Concat.*only activations along the channels"
# every op the engine does not run is named at once
expect_status profile_onnx_unrun_ops 2 "$HP" profile "$ROOT/tests/data/onnx/lrn_selu.onnx" \
	--batch 2 --out "$TMP/s.csv"
expect_err profile_onnx_unrun_ops_says "does not run these ops: LRN, Selu"
expect_status profile_onnx_shape 2 "$HP" profile "$R18" --batch 2 --input-shape 3x32 --out "$TMP/s.csv"
expect_status profile_shape_without_model 2 "$HP" profile --sweep default --input-shape 3x32x32 --list

# ---- train ----
if [ ! -x "$TRAIN" ]; then
	echo "skip train_onnx: no $TRAIN"
elif ! dpkg -L dataset-fashion-mnist 2>/dev/null | grep -q train-images-idx3-ubyte.gz; then
	echo "skip train_onnx: the Debian package dataset-fashion-mnist is not installed"
else
	"$TRAIN" --model "$R18" --input-shape 1x28x28 --data fashion-mnist --batch 16 \
		--steps 4 --lr 0.02 --threads 2 --eval-samples 64 --out "$TMP/tr" 2>"$TMP/err"
	rc=$?
	if [ $rc -eq 0 ]; then ok train_onnx; else fail train_onnx "exit $rc: $(cat "$TMP/err")"; fi
	if "$PY" - "$TMP/tr/metrics.jsonl" "$TMP/tr/results.json" <<'PY'; then ok train_onnx_metrics; else fail train_onnx_metrics "$(cat "$TMP/tr/results.json")"; fi
import json, math, sys
s = [json.loads(l) for l in open(sys.argv[1])]
s = [x for x in s if 'step' in x]
j = json.load(open(sys.argv[2]))
sys.exit(0 if len(s) == 4 and all(math.isfinite(x['loss']) for x in s)
         and j['state'] == 'completed' and j['steps'] == 4 else 1)
PY
	# PyTorch's MNIST example as exported (its log_softmax the loss's)
	# learns Fashion-MNIST: well above chance (10%) in 60 steps
	"$TRAIN" --model "$ROOT/tests/data/onnx/user_mnist_example.onnx" --data fashion-mnist \
		--batch 32 --steps 60 --lr 0.05 --threads 2 --eval-samples 500 --out "$TMP/trm" \
		2>"$TMP/err"
	rc=$?
	acc=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["test_accuracy"])' \
		"$TMP/trm/results.json" 2>/dev/null)
	if [ $rc -eq 0 ] && "$PY" -c 'import sys; sys.exit(0 if float(sys.argv[1]) > 0.4 else 1)' "${acc:-0}"; then
		ok train_onnx_user_mnist_example
	else
		fail train_onnx_user_mnist_example "exit $rc, test accuracy ${acc:-none}: $(cat "$TMP/err")"
	fi
	# at another input size its Gemm reads what the layers give (the
	# engine makes its own weights), and the final LogSoftmax is still
	# the loss's, though shape inference lost the Gemm's output there
	"$TRAIN" --model "$ROOT/tests/data/onnx/user_mnist_example.onnx" --input-shape 1x20x20 \
		--data synthetic --synthetic-samples 256 --batch 8 --steps 2 --threads 1 --eval-samples 16 \
		--out "$TMP/trm20" 2>"$TMP/err"
	rc=$?
	[ $rc -eq 0 ] && ok train_onnx_other_input_shape ||
		fail train_onnx_other_input_shape "exit $rc: $(cat "$TMP/err")"
	# a model that scales its own input is told what data it gets (the
	# trainer standardizes every model's pixels)
	printf '%s\n' '{"input":[1,28,28],"classes":10,"layers":[{"type":"scale","factor":0.0039215686},{"type":"conv","filters":4,"kernel":3},{"type":"relu"},{"type":"fc","units":10}]}' >"$TMP/scaled.json"
	"$TRAIN" --model "$TMP/scaled.json" --data fashion-mnist --batch 8 --steps 2 --threads 1 \
		--eval-samples 16 --out "$TMP/trs" 2>"$TMP/err"
	if grep -q "note: the model scales its input (0.00392157 x + 0): the pixels it gets are standardized already" "$TMP/err"; then
		ok train_scaled_input_note
	else
		fail train_scaled_input_note "$(cat "$TMP/err")"
	fi
	expect_status train_onnx_shape 2 "$TRAIN" --model "$R18" --input-shape 1x28 \
		--data fashion-mnist --batch 16 --steps 1 --out "$TMP/tr2"
	# at its own 3x224x224 on Fashion-MNIST: the message says how to train it
	expect_status train_onnx_data_shape 2 "$TRAIN" --model "$R18" \
		--data fashion-mnist --batch 4 --steps 1 --out "$TMP/tr2"
	expect_err train_onnx_data_shape_says "samples are 1x28x28, the model's input is 3x224x224; --input-shape 1x28x28 trains"
	# one step of a small test model (tests/data/onnx/MODEL.onnx) on
	# synthetic data: NAME STATUS MODEL [ARGS...]
	onnx_step() {
		local name=$1 want=$2 m=$3
		shift 3
		expect_status "$name" "$want" "$TRAIN" --model "$HP_ROOT/tests/data/onnx/$m.onnx" "$@" \
			--data synthetic --batch 2 --steps 1 --out "$TMP/tr-$name"
	}
	# a graph with a cycle is bad input (exit 2), like any other the
	# converter refuses
	onnx_step train_onnx_cycle 2 cycle
	expect_err train_onnx_cycle_says "graph has a cycle through node 'Add_h'"
	# a Conv its own weight contradicts is refused, not trained as
	# another conv; at a 1-channel --input-shape too (the first conv
	# takes the data's channels, checked against the file's)
	for m in "kernel_mismatch:kernel_shape 5x5, the weight's kernel 3x3" \
		"channels_mismatch:its input has 3 channels, the weight takes 7 in each of 1 groups" \
		"group_mismatch:its input has 3 channels, the weight takes 3 in each of 2 groups"; do
		for shape in "" 1x8x8; do
			onnx_step "train_onnx_conv_${m%%:*}${shape:+_$shape}" 2 "conv_${m%%:*}" ${shape:+--input-shape $shape}
			expect_err "train_onnx_conv_${m%%:*}${shape:+_$shape}_says" "node Conv_c \(Conv\): ${m#*:}"
		done
	done
	# a Concat's axis may count from the end: -3 of N,C,H,W is the
	# channels
	onnx_step train_onnx_concat_neg_axis 0 concat_neg_axis
	# a flat input is not an image batch, whatever --input-shape says
	for shape in "" 1x8x8; do
		onnx_step "train_onnx_flat_input${shape:+_$shape}" 2 flat_input ${shape:+--input-shape $shape}
		expect_err "train_onnx_flat_input${shape:+_$shape}_says" "input input has 2 dimensions, not 4: .*cannot add dimensions"
	done
	# a map output (segmentation) trains as its elements' classes, and
	# says so
	onnx_step train_onnx_seg_map 0 seg_map
	expect_err train_onnx_seg_map_says "note: the output 4x8x8 is a map, not one score a class: trained as 256 classes"
	# a Reshape to 3-D that is not a group norm's is named as what it is
	onnx_step train_onnx_reshape_3d 2 reshape_3d
	expect_err train_onnx_reshape_3d_says "Reshape \(to 3-D, not followed by a group norm's InstanceNormalization\)"
fi
