#!/bin/sh
# Install the Debian 12 packages a make target needs, and only those that
# are missing: a machine that has them all pays one dpkg-query and nothing
# else (no apt-get update, no network).  Called by make for build, test,
# run, asan, fuzz and bench, and by `make deps` for everything.
#
#   tools/deps.sh GROUP...      install what GROUP needs (root, or via sudo)
#   tools/deps.sh --list GROUP  print GROUP's packages, one per line
#   tools/deps.sh --missing GROUP...  print what is missing, install nothing
#
# Groups: build (compile libhetpool, the CLI and tests, bundle the web
# dashboard), run (make run and make demo: the build and the
# Fashion-MNIST the demo trains on), test (run the suite),
# ci (sanitizers, fuzzers, format check), bench (benchmarks and the
# PyTorch peer), all.  HP_NO_DEPS=1 skips the check (a packager who
# provides the libraries another way).
set -eu

pkgs_build="build-essential cmake ninja-build pkg-config libjansson-dev \
libprotobuf-c-dev protobuf-c-compiler libonnx-dev libdnnl-dev libgsl-dev \
libsqlite3-dev libmicrohttpd-dev libcurl4-openssl-dev libopenmpi-dev openmpi-bin \
zlib1g-dev libjpeg62-turbo-dev"
# node and npm build the web dashboard: Debian's, only when the commands
# are missing (a node from elsewhere, such as nodesource's, carries its
# own npm, which Debian's npm package would conflict with).
pkgs_node=""
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	pkgs_node="nodejs npm"
fi
pkgs_build="$pkgs_build $pkgs_node"
pkgs_run="dataset-fashion-mnist"
pkgs_test="python3 dataset-fashion-mnist slurm-wlm munge openssl prometheus chromium"
pkgs_ci="clang libclang-rt-14-dev clang-format valgrind debootstrap"
# libopenblas0-pthread: Debian's torch does its Linear and MatMul products
# through the system BLAS, which is the reference one without it (the
# PyTorch peer of make bench would be about 20x slow on those layers)
pkgs_bench="python3 python3-onnx python3-torch python3-torchvision python3-numpy \
libopenblas0-pthread dataset-fashion-mnist wrk prometheus chromium"

group_pkgs() {
	case "$1" in
	build) echo "$pkgs_build" ;;
	run) echo "$pkgs_build $pkgs_run" ;;
	test) echo "$pkgs_build $pkgs_test" ;;
	ci) echo "$pkgs_build $pkgs_test $pkgs_ci" ;;
	bench) echo "$pkgs_build $pkgs_bench" ;;
	all) echo "$pkgs_build $pkgs_test $pkgs_ci $pkgs_bench" ;;
	*)
		echo "tools/deps.sh: unknown group '$1' (build, run, test, ci, bench, all)" >&2
		exit 2
		;;
	esac
}

missing() {
	want=""
	for g in "$@"; do want="$want $(group_pkgs "$g")"; done
	for p in $(echo "$want" | tr ' ' '\n' | sort -u); do
		s=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
		[ "$s" = installed ] || echo "$p"
	done
}

mode=install
case "${1:-}" in
--list)
	shift
	group_pkgs "${1:-all}" | tr ' ' '\n' | sort -u
	exit 0
	;;
--missing)
	shift
	mode=missing
	;;
esac
[ $# -gt 0 ] || set -- all

if ! command -v dpkg-query >/dev/null 2>&1; then
	echo "tools/deps.sh: no dpkg-query: not a Debian system; install the packages of 'tools/deps.sh --list all' yourself and set HP_NO_DEPS=1" >&2
	exit 1
fi
need=$(missing "$@" | tr '\n' ' ')
need=${need% }
if [ "$mode" = missing ]; then
	[ -z "$need" ] || echo "$need" | tr ' ' '\n'
	exit 0
fi
[ -n "$need" ] || exit 0
[ "${HP_NO_DEPS:-0}" = 1 ] && exit 0

if [ "$(id -u)" = 0 ]; then
	sudo=""
elif command -v sudo >/dev/null 2>&1; then
	sudo="sudo"
else
	echo "tools/deps.sh: missing packages: $need; run 'make deps' as root (no sudo here)" >&2
	exit 1
fi
echo "tools/deps.sh: installing $need" >&2
$sudo apt-get update -qq
# shellcheck disable=SC2086
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $need
