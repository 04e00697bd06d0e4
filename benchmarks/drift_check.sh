#!/usr/bin/env bash
# drift_check.sh - does the profiler's yardstick (ref_time_s, a fixed
# reference step timed between a configuration's steps) make measurements
# survive drift?  Measures the same few configurations in ROUNDS rounds
# (`hetpool profile --repeat`), with drift made on purpose: in every other
# round a hog runs pinned to core 0.  (Not niced: with the kernel's
# autogroup a niced hog in its own session takes its share anyway.)
#   MODE=share      the profiler's threads use every core, core 0
#                   included: the hog takes CPU time from one of them
#                   (run-queue pressure, which cpu_pressure also shows)
#   MODE=neighbour  the profiler runs 1 thread pinned to core 1, the hog
#                   on core 0: no run-queue pressure, only what a
#                   neighbour shares (caches, memory bandwidth, a
#                   hyperthread's core), the drift no counter shows
# Reports, per configuration and as medians over them, the spread over
# the rounds of the absolute step time and of the time relative to the
# yardstick (step_time_s / ref_time_s), and the hog/quiet ratio of each.
#
# Usage: benchmarks/drift_check.sh [BUILD_DIR [OUT_DIR]]
# Environment (defaults in brackets):
#   MODE      share or neighbour [share]
#   HOG_KIND  loop (a shell busy loop) or mem (dd streaming 64 MiB blocks
#             through memory) [loop]
#   ROUNDS    rounds over the configurations [6]; even rounds have the hog
#   HOG       1: the hog in even rounds; 0: no hog, the host's own drift [1]
#   THREADS   --threads of the profiler [all cores; 1 in neighbour mode]
#   SECONDS_PER  --max-seconds per configuration [1]
#   SWEEP     a sweep file or built-in name [4 configurations, below]
#   VALIDATE  1: then `hetpool validate --no-public --folds 3` on the rows
#             (cpu_pressure blanked, so that busy rows count), on times
#             relative to the yardstick and --absolute, with the noise
#             floor (e.g. SWEEP=calibrate ROUNDS=3 MODE=neighbour) [0]
# A few minutes with the defaults on the project's 2-core VM (longer while
# the hog runs: a 2-thread step waits for its descheduled thread).
set -u
build=${1:-build}
outdir=${2:-$(mktemp -d)}
mode=${MODE:-share}
kind=${HOG_KIND:-loop}
rounds=${ROUNDS:-6}
hog=${HOG:-1}
secs=${SECONDS_PER:-1}
pin=
case $mode in
share) threads=${THREADS:-$(nproc)} ;;
neighbour)
	threads=${THREADS:-1}
	pin="taskset -c 1"
	;;
*)
	echo "drift_check: MODE is share or neighbour" >&2
	exit 2
	;;
esac
case $kind in
loop) hogcmd='while :; do :; done' ;;
mem) hogcmd='while :; do dd if=/dev/zero of=/dev/null bs=64M count=1000 2>/dev/null; done' ;;
*)
	echo "drift_check: HOG_KIND is loop or mem" >&2
	exit 2
	;;
esac
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
hp=$build/bin/hetpool
[ -x "$hp" ] || {
	echo "drift_check: no $hp (build first)" >&2
	exit 1
}
if ! command -v taskset >/dev/null || [ "$(nproc)" -lt 2 ]; then
	echo "skip drift_check: needs taskset and 2 cores to pin the hog" >&2
	exit 0
fi
mkdir -p "$outdir"
sweep=$outdir/drift_sweep.json
csv=$outdir/drift.csv
rm -f "$csv"
# Four configurations: conv-heavy and light, few and many filters.
echo '{"conv_layers":[1,3],"filters":[16,64],"fc_layers":[2],"fc_width":[512],"input_size":[32],"batch":[16]}' >"$sweep"
[ -n "${SWEEP:-}" ] && sweep=$SWEEP
hog_pid=
stop_hog() {
	# the hog's shell is its process group's leader (set -m below)
	[ -n "$hog_pid" ] && kill -- -"$hog_pid" 2>/dev/null && wait "$hog_pid" 2>/dev/null
	hog_pid=
}
trap stop_hog EXIT
for r in $(seq 1 "$rounds"); do
	if [ "$hog" = 1 ] && [ $((r % 2)) = 0 ]; then
		set -m
		taskset -c 0 sh -c "$hogcmd" &
		hog_pid=$!
		set +m
		echo "round $r: $kind hog on core 0 (pid $hog_pid), $mode mode"
	else
		echo "round $r: no hog"
	fi
	# Busy rows are kept (--max-pressure 1): the drift is the point.
	$pin "$hp" profile --sweep "$sweep" --out "$csv" --repeat "$r" --resume \
		--threads "$threads" --max-seconds "$secs" --max-pressure 1 \
		--retries 0 >/dev/null || exit 1
	stop_hog
done
echo "mode $mode, hog $kind, $threads threads, $(nproc) cores, load average: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$csv" "$hog" <<'PY'
import csv, statistics as st, sys
rows = list(csv.DictReader(open(sys.argv[1])))
hog = sys.argv[2] == "1"
by = {}
for i, r in enumerate(rows):
    by.setdefault(r["config_id"], []).append(r)
def spread(v):  # (max - min) / median, and the median absolute deviation / median
    m = st.median(v)
    return (max(v) - min(v)) / m, st.median(abs(x - m) for x in v) / m
print("%-28s %9s %9s  %9s %9s  %9s %9s" % ("config", "abs rng%", "rel rng%", "abs MAD%", "rel MAD%",
      "abs h/q", "rel h/q"))
S = {k: [] for k in ("ar", "rr", "am", "rm", "ah", "rh")}
for cid, rs in by.items():
    t = [float(r["step_time_s"]) for r in rs]
    if any(r["ref_time_s"] == "" for r in rs):
        print("%s: no ref_time_s (not measured)" % cid)
        continue
    rel = [float(r["step_time_s"]) / float(r["ref_time_s"]) for r in rs]
    ar, am = spread(t)
    rr, rm = spread(rel)
    # rounds are in order: odd rounds (index 1, 3, ...) had the hog
    q = [i for i in range(len(rs)) if i % 2 == 0]
    h = [i for i in range(len(rs)) if i % 2 == 1]
    ah = st.median(t[i] for i in h) / st.median(t[i] for i in q) if hog and h else float("nan")
    rh = st.median(rel[i] for i in h) / st.median(rel[i] for i in q) if hog and h else float("nan")
    for k, v in zip(("ar", "rr", "am", "rm", "ah", "rh"), (ar, rr, am, rm, ah, rh)):
        S[k].append(v)
    print("%-28s %9.1f %9.1f  %9.1f %9.1f  %9.2f %9.2f" % (cid, 100 * ar, 100 * rr, 100 * am, 100 * rm, ah, rh))
if S["ar"]:
    print("%-28s %9.1f %9.1f  %9.1f %9.1f  %9.2f %9.2f" % (
        "median over configurations", 100 * st.median(S["ar"]), 100 * st.median(S["rr"]),
        100 * st.median(S["am"]), 100 * st.median(S["rm"]), st.median(S["ah"]), st.median(S["rh"])))
ref = [float(r["ref_time_s"]) for r in rows if r["ref_time_s"]]
print("rounds %d, rows %d; ref_time_s median %.3f ms (range %.3f-%.3f ms)" % (
    max(len(v) for v in by.values()), len(rows), 1e3 * st.median(ref), 1e3 * min(ref), 1e3 * max(ref)))
print("rng%: (max - min) / median over the rounds; MAD%: median absolute deviation / median;")
print("h/q: median with the hog / median without it (1.00: the drift is gone)")
PY
echo "dataset: $csv"
if [ "${VALIDATE:-0}" = 1 ]; then
	python3 - "$csv" "$outdir/drift_nopressure.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
w = csv.DictWriter(open(sys.argv[2], "w", newline=""), fieldnames=list(rows[0]))
w.writeheader()
for r in rows:
    r["cpu_pressure"] = ""
    w.writerow(r)
PY
	for m in "" --absolute; do
		echo "-- hetpool validate --no-public --folds 3 $m"
		"$hp" validate --profiles "$outdir/drift_nopressure.csv" --no-public --folds 3 $m | grep -v '^$'
	done
fi
