#!/usr/bin/env bash
# bench_daemon.sh - hetpoold under load (wrk, loopback), side by side in
# one run, interleaved round by round so the machine's drift hits both
# sides alike:
#   1. GET /v1/jobs/ID against a bare libmicrohttpd JSON endpoint serving
#      the same document (build/bin/hp_mhd_bare: serialised per request,
#      and --static: one response made at start, the fastest it serves),
#      and the same route with --no-cache (every request reads the store);
#      goal: >= 80% of the bare endpoint's requests/s;
#   2. POST /v1/recommendations on the sample pool against the same
#      recommendations computed in-process by the library on the same
#      cores (bench_rec_rate);  goal: >= 80% of the in-process rate.
# Each wrk run reports requests/s, latency percentiles, errors (socket
# errors and non-2xx answers: the goal is none) and hetpoold's resident
# memory before and after (the goal: flat).  Then promtool checks
# /metrics.
#
#   benchmarks/bench_daemon.sh [BUILD_DIR]
# BENCH_DAEMON_SECONDS (default 60) per run, BENCH_DAEMON_ROUNDS (default
# 2), BENCH_THREADS (default 2) server threads and wrk threads,
# BENCH_CONNECTIONS (default 32), BENCH_DAEMON_PARTS (default "get post":
# which comparisons to run).
set -u
build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
secs=${BENCH_DAEMON_SECONDS:-60}
rounds=${BENCH_DAEMON_ROUNDS:-2}
threads=${BENCH_THREADS:-2}
conns=${BENCH_CONNECTIONS:-32}
parts=${BENCH_DAEMON_PARTS:-get post}
bin="$build/bin"
for x in hetpoold hp_mhd_bare bench_rec_rate hetpool; do
	[ -x "$bin/$x" ] || { echo "skip bench_daemon: no $bin/$x"; exit 0; }
done
command -v wrk >/dev/null || { echo "skip bench_daemon: no wrk (Debian package wrk)"; exit 0; }

tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

tok=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
auth="Authorization: Bearer $tok"

# start_daemon NAME ARGS...: a hetpoold on a port of its own; its pid and
# port in DPID and DPORT
start_daemon() {
	local name=$1
	shift
	rm -f "$tmp/$name.port"
	HETPOOL_ADMIN_TOKEN=$tok "$bin/hetpoold" --db "$tmp/$name.db" --listen 127.0.0.1:0 \
		--port-file "$tmp/$name.port" --threads "$threads" --log-level warn \
		--pool data/pools/sample.json --register-self "$@" 2>>"$tmp/$name.log" &
	DPID=$!
	pids+=("$DPID")
	for _ in $(seq 100); do
		[ -s "$tmp/$name.port" ] && break
		sleep 0.1
	done
	DPORT=$(cat "$tmp/$name.port")
}

rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }

# wrk_run LABEL PID URL [wrk args...]: one run, one line
wrk_run() {
	local label=$1 pid=$2 url=$3
	shift 3
	local before after out
	before=$(rss_kb "$pid")
	out=$(wrk -t"$threads" -c"$conns" -d"${secs}s" --latency "$@" "$url" 2>&1)
	after=$(rss_kb "$pid")
	local rps p50 p90 p99 sockerr non2xx
	rps=$(echo "$out" | awk '/^Requests\/sec/ {print $2}')
	p50=$(echo "$out" | awk '$1 == "50%" {print $2}')
	p90=$(echo "$out" | awk '$1 == "90%" {print $2}')
	p99=$(echo "$out" | awk '$1 == "99%" {print $2}')
	sockerr=$(echo "$out" | awk '/Socket errors/ {s = 0; for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+,?$/) s += $i; print s}')
	non2xx=$(echo "$out" | awk '/Non-2xx/ {print $NF}')
	printf "%-34s %10s req/s  p50 %8s  p90 %8s  p99 %8s  errors %s+%s  RSS %s -> %s kB\n" \
		"$label" "${rps:-?}" "${p50:-?}" "${p90:-?}" "${p99:-?}" "${sockerr:-0}" "${non2xx:-0}" \
		"$before" "$after"
	echo "$label ${rps:-0}" >>"$tmp/rates"
}

# ---- 1. GET /v1/jobs/ID
echo "-- GET /v1/jobs/ID vs a bare libmicrohttpd JSON endpoint ($threads threads, wrk -t$threads -c$conns, ${secs}s each, $rounds rounds)"
start_daemon jobs --poll 0.2
JPID=$DPID
JPORT=$DPORT
spec='{"name":"c","input":[1,28,28],"classes":10,"layers":[{"type":"conv","filters":4,"kernel":3,"stride":1,"pad":1},{"type":"relu"},{"type":"fc","units":10}]}'
if [ -x "$bin/hetpool-train" ]; then
	body="{\"spec\":$spec,\"samples\":1000,\"steps\":20,\"batch\":32,\"deadline_s\":600,\"data\":\"synthetic\",\"training\":{\"threads\":1}}"
else
	body="{\"spec\":$spec,\"samples\":1000,\"steps\":20,\"batch\":32,\"deadline_s\":600,\"data\":\"synthetic\",\"constraints\":{\"device_type\":\"cpu\"}}"
fi
curl -s -H "$auth" -H 'Content-Type: application/json' -d "$body" "http://127.0.0.1:$JPORT/v1/jobs" >"$tmp/job0.json"
id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$tmp/job0.json")
for _ in $(seq 300); do
	curl -s -H "$auth" "http://127.0.0.1:$JPORT/v1/jobs/$id" >"$tmp/job.json"
	grep -q '"state":"\(succeeded\|failed\|cancelled\)"' "$tmp/job.json" && break
	sleep 0.2
done
echo "   the job: $(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print("id", j["id"], j["state"] + ",", len(open(sys.argv[1]).read()), "bytes")' "$tmp/job.json")"
start_daemon nocache --no-cache
NPID=$DPID
NPORT=$DPORT
# the same job in the second database: its document is the one measured
curl -s -H "$auth" -H 'Content-Type: application/json' -d "$body" "http://127.0.0.1:$NPORT/v1/jobs" >/dev/null
for _ in $(seq 300); do
	curl -s -H "$auth" "http://127.0.0.1:$NPORT/v1/jobs/$id" | grep -q '"state":"\(succeeded\|failed\|cancelled\)"' && break
	sleep 0.2
done
bare_port=$((20000 + RANDOM % 20000))
"$bin/hp_mhd_bare" "$bare_port" "$threads" "$tmp/job.json" &
BPID=$!
pids+=("$BPID")
static_port=$((bare_port + 1))
"$bin/hp_mhd_bare" "$static_port" "$threads" "$tmp/job.json" --static &
SPID=$!
pids+=("$SPID")
sleep 0.5
# warm-up, so the first measured run starts with the caches as the others
wrk -t"$threads" -c"$conns" -d3s "http://127.0.0.1:$bare_port/" >/dev/null 2>&1
wrk -t"$threads" -c"$conns" -d3s "http://127.0.0.1:$static_port/" >/dev/null 2>&1
wrk -t"$threads" -c"$conns" -d3s -H "$auth" "http://127.0.0.1:$JPORT/v1/jobs/$id" >/dev/null 2>&1
wrk -t"$threads" -c"$conns" -d3s -H "$auth" "http://127.0.0.1:$NPORT/v1/jobs/$id" >/dev/null 2>&1
for r in $(seq "$rounds"); do
	wrk_run "bare libmicrohttpd, static (round $r)" "$SPID" "http://127.0.0.1:$static_port/"
	wrk_run "bare libmicrohttpd (round $r)" "$BPID" "http://127.0.0.1:$bare_port/"
	wrk_run "hetpoold GET /v1/jobs/ID (round $r)" "$JPID" "http://127.0.0.1:$JPORT/v1/jobs/$id" -H "$auth"
	wrk_run "  ... --no-cache (round $r)" "$NPID" "http://127.0.0.1:$NPORT/v1/jobs/$id" -H "$auth"
done
kill "$BPID" "$SPID" "$NPID"

# ---- 2. POST /v1/recommendations
case " $parts " in *" post "*) ;; *) skip_post=1 ;; esac
if [ -z "${skip_post:-}" ]; then
echo
echo "-- POST /v1/recommendations (ResNet-50, one ImageNet epoch at batch 256 in 1 h, the sample pool) vs in-process hp_ctx_recommend(), $threads threads, ${secs}s each"
mid=$(curl -s -H "$auth" -H 'Content-Type: application/octet-stream' --data-binary @data/models/resnet50.train.onnx \
	"http://127.0.0.1:$JPORT/v1/models?name=resnet50" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
curl -s -H "$auth" "http://127.0.0.1:$JPORT/v1/pool" >"$tmp/pool.json"
rec="{\"model_id\":$mid,\"samples\":1281167,\"epochs\":1,\"batch\":256,\"deadline_s\":3600}"
cat >"$tmp/rec.lua" <<EOF
wrk.method = "POST"
wrk.body = '$rec'
wrk.headers["Content-Type"] = "application/json"
EOF
curl -s -H "$auth" -H 'Content-Type: application/json' -d "$rec" "http://127.0.0.1:$JPORT/v1/recommendations" >"$tmp/rec.json"
echo "   the answer: $(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); c=r["choice"]; print(c["device_count"], "x", "+".join(t["type"] for t in c["types"]), "feasible" if r["feasible"] else "infeasible,", len(open(sys.argv[1]).read()), "bytes")' "$tmp/rec.json")"
for r in $(seq "$rounds"); do
	"$bin/bench_rec_rate" "$tmp/pool.json" data/models/resnet50.train.onnx "$threads" "$secs" 1281167 1 256 3600 |
		sed "s/^/in-process (round $r): /" | tee -a "$tmp/inproc"
	wrk_run "hetpoold POST /v1/recommendations (round $r)" "$JPID" \
		"http://127.0.0.1:$JPORT/v1/recommendations" -H "$auth" -s "$tmp/rec.lua"
done
fi

# ---- the ratios (medians over the rounds)
echo
touch "$tmp/inproc"
python3 - "$tmp/rates" "$tmp/inproc" <<'PY'
import re, statistics, sys
rates = {}
for line in open(sys.argv[1]):
    label, v = line.rsplit(" ", 1)
    key = re.sub(r" \(round \d+\)", "", label).strip()
    rates.setdefault(key, []).append(float(v))
inproc = [float(m.group(1)) for m in re.finditer(r"recommendations, ([0-9.]+)/s", open(sys.argv[2]).read())]
med = lambda xs: statistics.median(xs) if xs else float("nan")
bare = med(rates.get("bare libmicrohttpd", []))
static = med(rates.get("bare libmicrohttpd, static", []))
get = med(rates.get("hetpoold GET /v1/jobs/ID", []))
nocache = med(rates.get("... --no-cache", []))
post = med(rates.get("hetpoold POST /v1/recommendations", []))
ip = med(inproc)
def spread(xs):
    return "%.0f-%.0f" % (min(xs), max(xs)) if xs else "?"
print("GET /v1/jobs/ID: %.0f req/s (rounds %s) = %.0f%% of the bare endpoint's %.0f (%s); goal >= 80%%"
      % (get, spread(rates.get("hetpoold GET /v1/jobs/ID", [])), 100 * get / bare, bare, spread(rates.get("bare libmicrohttpd", []))))
print("   = %.0f%% of the bare endpoint serving one response made at start (%.0f, %s): the strictest peer"
      % (100 * get / static, static, spread(rates.get("bare libmicrohttpd, static", []))))
print("   with --no-cache (the store read each time): %.0f req/s = %.0f%% of bare, %.0f%% of static"
      % (nocache, 100 * nocache / bare, 100 * nocache / static))
if inproc:
  print("POST /v1/recommendations: %.1f req/s (rounds %s) = %.0f%% of the in-process %.1f/s (%s); goal >= 80%%"
      % (post, spread(rates.get("hetpoold POST /v1/recommendations", [])), 100 * post / ip, ip, spread(inproc)))
PY

# ---- /metrics as Prometheus reads it
if command -v promtool >/dev/null; then
	curl -s "http://127.0.0.1:$JPORT/metrics" >"$tmp/metrics.txt"
	if promtool check metrics <"$tmp/metrics.txt" >"$tmp/promtool.out" 2>&1; then
		echo "promtool check metrics: accepted ($(grep -vc '^#' "$tmp/metrics.txt") samples)"
	else
		echo "promtool check metrics: REFUSED: $(head -5 "$tmp/promtool.out")"
	fi
else
	echo "promtool check metrics: not run (no promtool; Debian package prometheus)"
fi
