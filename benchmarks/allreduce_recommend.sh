#!/bin/sh
# allreduce_recommend.sh - do the recommender's deadlines hold when the
# plans run?  A cluster of M "nodes" (network namespaces of this machine,
# one CPU rank each, links shaped by tc to RATE Mbit/s:
# benchmarks/allreduce_netns.inc), a model whose step is mostly its
# gradient all-reduce (a wide MLP on 28x28 inputs: 5.8 M parameters,
# 23 MB of gradients), `hetpool recommend --nodes M` at deadlines of
# start-up + 0.8x to 20x the point prediction of its steps (0.8, 0.9, 1,
# 1.1, 1.25, 1.5, 2, 5, 20), at confidence 0.9 (the default) and
# 0.5, and the plan trained for real by hetpool-train under mpirun across
# the namespaces (Open MPI's ring all-reduce, as NCCL's; one thread per
# rank).  The measured job time is the trained steps' wall time (from the
# start of the first step to the end of the last, metrics.jsonl) plus the
# recommender's start-up allowance: start-up (MPI, data, evaluation) is
# not what is checked here.
#
# usage: benchmarks/allreduce_recommend.sh [-B BIN] [-r "200 1000"]
#            [-m "2 3"] [-b "24 96"] [-s STEPS] [-o OUT.tsv]
#   -B  folder of hetpool and hetpool-train   (default build/bin)
#   -r  link rates, Mbit/s                    (default "200 1000")
#   -m  node counts                           (default "2 3")
#   -b  global batches                        (default "24 96")
#   -s  steps per run                         (default 10)
#   -o  output, one row per (run, deadline, confidence): rate nodes batch
#       deadline_s confidence feasible predicted_s judged_s probability
#       measured_s meets, then the run's median step_s and all-reduce_s
#       (the slowest rank's) and the predicted compute_s and comm_s of a
#       step (default: stdout); a summary goes to stderr
# The CPU's power is a stand-in (65 W, idle 10 W, in a copy of the
# catalog): the recommender needs one to choose on energy, and nothing
# here depends on it.  Needs root, iproute2, tc, mpirun, python3.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
bin=$root/build/bin
rates="200 1000"
nodes="2 3"
batches="24 96"
steps=10
out=
while getopts B:r:m:b:s:o: o; do
	case $o in
	B) bin=$(cd "$OPTARG" && pwd) ;;
	r) rates=$OPTARG ;;
	m) nodes=$OPTARG ;;
	b) batches=$OPTARG ;;
	s) steps=$OPTARG ;;
	o) out=$OPTARG ;;
	*) echo "usage: $0 [-B BIN] [-r MBPS] [-m NODES] [-b BATCHES] [-s STEPS] [-o OUT]" >&2
	   exit 2 ;;
	esac
done
NETNS_WHAT=allreduce_recommend
. "$here/allreduce_netns.inc"
[ -x "$bin/hetpool" ] && [ -x "$bin/hetpool-train" ] ||
	skip "no hetpool and hetpool-train in $bin"
n0=0
for m in $nodes; do [ "$m" -gt $n0 ] && n0=$m; done
netns_up $n0

# 5.8 M parameters: 23.3 MB of gradients (tests/cli/allreduce_netns.sh's too)
model=$root/tests/data/train/wide-mlp.json
python3 - "$root/data/devices.csv" "$tmp/devices.csv" <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
for r in rows:
    if r["name"] == "cpu":
        r["tdp_w"], r["idle_w"] = "65", "10"
        r["src_power"] = r["src_idle"] = "stand-in for allreduce_recommend.sh"
w = csv.DictWriter(open(sys.argv[2], "w", newline=""), fieldnames=rows[0].keys())
w.writeheader()
w.writerows(rows)
EOF
: >"$tmp/rows"
ring="--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm 4"
for rate in $rates; do
	netns_shape "$rate" || skip "tc tbf refused rate ${rate}mbit"
	for m in $nodes; do
		python3 - "$tmp/pool.json" "$m" "$rate" <<'EOF'
import json, sys
m, rate = int(sys.argv[2]), float(sys.argv[3])
json.dump({"nodes": [{"name": f"n{i}", "devices": [{"type": "cpu", "count": 1}],
    "cpu_cores": 2, "memory_gb": 4, "intra_bw_gbps": 100,
    "net_bw_gbps": rate / 1000, "net_latency_us": 0, "base_power_w": 0}
    for i in range(m)]}, open(sys.argv[1], "w"))
EOF
		for b in $batches; do
			rec() { # deadline confidence
				"$bin/hetpool" recommend "$model" \
					--pool "$tmp/pool.json" --catalog "$tmp/devices.csv" \
					--samples $((b * steps)) --steps "$steps" --batch "$b" \
					--nodes "$m" --devices "$m" --front 0 \
					--deadline "$1" --confidence "$2" --json
			}
			rec 864000 0.9 >"$tmp/ref.json" ||
				{ echo "allreduce_recommend: recommend failed" >&2; exit 1; }
			locals=$(python3 -c "
import json, sys
c = json.load(open(sys.argv[1]))['choice']
lb = []
for g in c['devices']:
    lb += [str(g['local_batch'])] * g['count']
print(','.join(lb))" "$tmp/ref.json")
			rm -rf "$tmp/run"
			echo "allreduce_recommend: $m nodes at $rate Mbit/s, batch $b ($locals), $steps steps" >&2
			NETNS_MCA="$ring" netns_mpirun "$m" "$bin/hetpool-train \
				--model $model --data synthetic --batch $b \
				--local-batches $locals --steps $steps --threads 1 \
				--eval-samples 64 --out $tmp/run" >"$tmp/train.out" 2>&1 ||
				{ echo "allreduce_recommend: training failed" >&2
				  tail -20 "$tmp/train.out" >&2; exit 1; }
			for f in 0.8 0.9 1.0 1.1 1.25 1.5 2 5 20; do
				for conf in 0.9 0.5; do
					dl=$(python3 -c "
import json, sys
c = json.load(open(sys.argv[1]))['choice']
print(round(c['startup_s'] + $f * (c['predicted_time_s'] - c['startup_s']), 3))" "$tmp/ref.json")
					rec "$dl" "$conf" >"$tmp/r.json" || exit 1
					python3 - "$tmp/r.json" "$tmp/run/metrics.jsonl" "$rate" "$m" "$b" "$conf" >>"$tmp/rows" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
m = [json.loads(l) for l in open(sys.argv[2])]
m = [x for x in m if "step_s" in x]
c = r["choice"]
# the steps: from the start of the first to the end of the last
meas = m[-1]["elapsed_s"] - (m[0]["elapsed_s"] - m[0]["step_s"]) + c["startup_s"]
def med(v):
    v = sorted(v)
    return v[len(v) // 2]
ar = med([max(x["rank_allreduce_s"]) for x in m[1:]])
st = med([x["step_s"] for x in m[1:]])
print("\t".join(str(x) for x in (sys.argv[3], sys.argv[4], sys.argv[5],
    r["deadline_s"], sys.argv[6], int(r["feasible"]),
    round(c["predicted_time_s"], 3), round(c["judged_time_s"], 3),
    round(c["deadline_probability"], 4), round(meas, 3),
    int(meas <= r["deadline_s"]), round(st, 4), round(ar, 4),
    round(c["compute_time_s"], 4), round(c["comm_time_s"], 4))))
EOF
				done
			done
		done
	done
done
if [ -n "$out" ]; then cp "$tmp/rows" "$out"; else cat "$tmp/rows"; fi
python3 - "$tmp/rows" >&2 <<'EOF'
import sys
rows = [l.split("\t") for l in open(sys.argv[1]).read().split("\n") if l]
for conf in ("0.9", "0.5"):
    f = [r for r in rows if r[4] == conf and r[5] == "1"]
    met = sum(int(r[10]) for r in f)
    print(f"confidence {conf}: {len(f)} feasible recommendations, "
          f"{met} met their deadline when run ({100 * met / max(len(f), 1):.0f}%)")
runs = {}
for r in rows:
    if r[4] == "0.9":
        runs.setdefault((r[0], r[1], r[2]), r)
for k, r in sorted(runs.items()):
    print(f"  {k[1]} nodes at {k[0]} Mbit/s, batch {k[2]}: job predicted {r[6]} s, "
          f"judged (0.9) {r[7]} s, measured {r[9]} s; a step: predicted "
          f"{r[13]} s compute + {r[14]} s all-reduce, measured median "
          f"{r[11]} s of which {r[12]} s all-reduce")
EOF
