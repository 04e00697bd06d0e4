#!/usr/bin/env bash
# run-daemon.sh - `make run`: hetpoold in the foreground on
# 127.0.0.1:8080 with the sample pool and this host, after saying what to
# try; Ctrl-C (or SIGTERM) stops it cleanly.  The admin token is
# HETPOOL_ADMIN_TOKEN when set, else one made once and kept (mode 600) in
# RUN_DIR/admin-token; it is never printed.
#   tools/run-daemon.sh BUILD_DIR RUN_DIR [LISTEN]
set -eu
build=${1:-build}
dir=${2:-$build/run}
listen=${3:-127.0.0.1:8080}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
mkdir -p "$dir"
chmod 700 "$dir"
if [ -z "${HETPOOL_ADMIN_TOKEN:-}" ]; then
	if [ ! -s "$dir/admin-token" ]; then
		(umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$dir/admin-token")
	fi
	HETPOOL_ADMIN_TOKEN=$(cat "$dir/admin-token")
	tokfile="$dir/admin-token"
else
	tokfile=""
fi
export HETPOOL_ADMIN_TOKEN
url="http://$listen"
spec=tests/data/train/cnn.json
[ -f data/models/fmnist-cnn.json ] && spec=data/models/fmnist-cnn.json
cat <<EOT
hetpoold on $url: the sample pool (data/pools/sample.json, 34 nodes) and
this host, jobs through the local backend (this host's CPU); database
$dir/hetpool.db, jobs under $dir/hetpool.db.d/jobs.  Ctrl-C stops it.

Try, in another terminal:
EOT
if [ -n "$tokfile" ]; then
	echo "  export HETPOOL_TOKEN=\$(cat $tokfile)"
else
	echo "  export HETPOOL_TOKEN=\$HETPOOL_ADMIN_TOKEN"
fi
if [ -f "$build/web/index.html" ]; then
	echo "  open $url/ in a browser: the dashboard (sign in with that token)"
else
	echo "  (the web dashboard is not built: it needs node and npm, 'make deps')"
fi
cat <<EOT
  curl -s $url/healthz
  curl -s -H "Authorization: Bearer \$HETPOOL_TOKEN" $url/v1/pool | python3 -m json.tool | head -20
  $build/bin/hetpool --server $url recommend data/models/resnet50.train.onnx \\
      --samples 1281167 --epochs 1 --batch 256 --deadline 1h
  $build/bin/hetpool --server $url run $spec --data fashion-mnist \\
      --epochs 1 --batch 64 --deadline 1h --max-seconds 30 --wait
  $build/bin/hetpool --server $url jobs
  $build/bin/hetpool --server $url logs 1 --metrics | tail -3
  curl -s $url/metrics | grep ^hetpoold_devices
  curl -s $url/v1/openapi.json | python3 -m json.tool | less    # the API; docs/daemon.md

EOT
exec "$build/bin/hetpoold" --listen "$listen" --db "$dir/hetpool.db" \
	--pool data/pools/sample.json --register-self
