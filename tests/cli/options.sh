#!/usr/bin/env bash
# The commands' options come from one table per command read by one parser
# (cli/opt.c), and their files from one loader (libhetpool's ctx.h): the
# same mistake gets the same words from every command, every help text
# names exactly the options of its table, and every command takes --help.
. "$(dirname "$0")/lib.sh"
M=$HP_ROOT/data/models/resnet18.train.onnx
POOL=$HP_ROOT/data/pools/sample.json

expect_status check_help 0 "$HP" _check-help
grep -q 'help texts and option tables agree' "$TMP/out" && ok check_help_says ||
	fail check_help_says "$(cat "$TMP/out")"

for c in analyze profile devices fit predict validate recommend run jobs status logs cancel lr-find; do
	expect_status "help_$c" 0 "$HP" "$c" --help
	grep -q "^usage: hetpool $c" "$TMP/out" && ok "help_${c}_usage" || fail "help_${c}_usage" "$(head -2 "$TMP/out")"
	expect_status "unknown_$c" 2 "$HP" "$c" --no-such-option
	expect_err "unknown_${c}_says" "^hetpool: $c: unknown option '--no-such-option'; see 'hetpool $c --help'\$"
done

# A whole number out of range or not a number, the same words everywhere.
# expect_int NAME WANT CMD...: exit 2 and exactly the line WANT.
expect_line() {
	local name=$1 want=$2
	shift 2
	expect_status "$name" 2 "$@" || return
	[ "$(cat "$TMP/err")" = "$want" ] && ok "${name}_says" || fail "${name}_says" "'$(cat "$TMP/err")', expected '$want'"
}
expect_line int_analyze "hetpool: analyze: --batch 'x': give a whole number from 1 to 16777216" "$HP" analyze "$M" --batch x
expect_line int_predict "hetpool: predict: --batch '0': give a whole number from 1 to 16777216" "$HP" predict "$M" --device v100 --batch 0
expect_line int_recommend "hetpool: recommend: --devices '-1': give a whole number from 1 to 1048576" "$HP" recommend "$M" --devices -1
expect_line int_profile "hetpool: profile: --limit '0': give a whole number from 1 to 1073741824" "$HP" profile --sweep default --limit 0
expect_line int_fit "hetpool: fit: --threads '999': give a whole number from 1 to 256" "$HP" fit --threads 999
expect_line int_validate "hetpool: validate: --folds '1': give a whole number from 2 to 100" "$HP" validate --folds 1
expect_line int_run "hetpool: run: --ranks '0': give a whole number from 1 to 4096" "$HP" run --ranks 0
expect_line int_lr_find "hetpool: lr-find: --steps '5': give a whole number from 10 to 1000000" "$HP" lr-find --steps 5
expect_line num_run "hetpool: run: --lr 'fast': give a number from 1e-12 to 1000" "$HP" run --lr fast
expect_line num_profile "hetpool: profile: --max-pressure '2': give a number from 0 to 1" "$HP" profile --max-pressure 2
expect_line num_above_profile "hetpool: profile: --max-seconds '0': give a number more than 0 and at most 3600" "$HP" profile --max-seconds 0
expect_line word_predict "hetpool: predict: --family 'best': give physical, linear or roofline" "$HP" predict "$M" --family best
# HETPOOL_THREADS that is no thread count was passed over by the library
# (every CPU prediction then made at the CPUs' count) until 3 December
for v in abc 0 5000 2x; do
	expect_line "env_threads_$v" "hetpool: HETPOOL_THREADS='$v' is not a thread count in 1..4096; set one, or unset it for the CPUs this process may run on" env HETPOOL_THREADS=$v "$HP" predict "$M" --device cpu
done
expect_status env_threads_ok 0 env HETPOOL_THREADS=1 "$HP" predict "$M" --device cpu --batch 8
expect_status env_threads_empty 0 env HETPOOL_THREADS= "$HP" predict "$M" --device cpu --batch 8
expect_line word_fit "hetpool: fit: --family 'roofline': give physical or linear" "$HP" fit --family roofline
expect_line word_run "hetpool: run: --backend 'ssh': give local, mpi, slurm or kubernetes" "$HP" run --backend ssh
expect_line word_recommend "hetpool: recommend: --lr-rule 'cubic': give linear, sqrt or none" "$HP" recommend "$M" --lr-rule cubic
expect_line dims_predict "hetpool: predict: --input-shape '3x': give dimensions like 3x224x224" "$HP" predict "$M" --input-shape 3x
# Numbers as people write them: no '+', blanks or hex, which strtoll and
# strtod would also take (until 3 December --batch +8 was 8 and
# --link-gbps 0x19 was 25)
expect_line int_plus "hetpool: predict: --batch '+8': give a whole number from 1 to 16777216" "$HP" predict "$M" --batch +8
expect_line int_blank "hetpool: predict: --batch ' 8': give a whole number from 1 to 16777216" "$HP" predict "$M" --batch ' 8'
expect_line int_hex "hetpool: predict: --batch '0x10': give a whole number from 1 to 16777216" "$HP" predict "$M" --batch 0x10
expect_line num_hex "hetpool: predict: --link-gbps '0x19': give a number more than 0 and at most 100000" "$HP" predict "$M" --link-gbps 0x19
expect_line dims_blank "hetpool: predict: --input-shape '3x224x 224': give dimensions like 3x224x224" "$HP" predict "$M" --input-shape '3x224x 224'
expect_line value_missing "hetpool: predict: --batch needs a value; see 'hetpool predict --help'" "$HP" predict "$M" --batch
# An alias is taken (k8s for kubernetes) though not listed.
expect_line word_alias "hetpool: run: give one PLAN.json or MODEL; see 'hetpool run --help'" "$HP" run --backend k8s
expect_line logs_short_follow "hetpool: logs: give one job ID; see 'hetpool logs --help'" "$HP" logs -f

# One wording for a model that cannot be read, whichever command reads it.
for c in analyze predict recommend lr-find; do
	case $c in
	analyze) args=("$TMP/nope.onnx") ;;
	predict) args=("$TMP/nope.onnx" --device v100 --batch 8) ;;
	recommend) args=("$TMP/nope.onnx" --pool "$POOL" --samples 100 --epochs 1 --batch 8 --deadline 1h) ;;
	lr-find) args=(--model "$TMP/nope.onnx" --out "$TMP/lr" --data synthetic) ;;
	esac
	expect_line "model_$c" "hetpool: $c: model '$TMP/nope.onnx': cannot open: No such file or directory" "$HP" "$c" "${args[@]}"
done
# And for an unknown device type.
expect_line type_predict "hetpool: predict: device type 'tpu9' is not in the catalog; see 'hetpool devices'" "$HP" predict "$M" --device tpu9 --batch 8
expect_line type_devices "hetpool: devices: device type 'tpu9' is not in the catalog; see 'hetpool devices'" "$HP" devices tpu9
expect_line type_recommend "hetpool: recommend: device type 'tpu9' is not in the catalog; see 'hetpool devices'" "$HP" recommend "$M" --pool "$POOL" --samples 100 --epochs 1 --batch 8 --deadline 1h --device-type tpu9
# A catalog that cannot be read.
for c in devices predict; do
	case $c in
	devices) args=() ;;
	predict) args=("$M" --device v100 --batch 8) ;;
	esac
	expect_line "catalog_$c" "hetpool: $c: '$TMP/nope.csv': cannot open: No such file or directory" "$HP" "$c" "${args[@]}" --catalog "$TMP/nope.csv"
done
