#!/usr/bin/env bash
# The front door, checked: README's two commands, `make run` and `make
# test`, on a pristine Debian 12 root that has only the build tools
# (debootstrap bookworm + build-essential), with this checkout copied in.
# Nothing else is installed first: the make targets must install what they
# need themselves.  Runs as root (chroot, mounts); CI runs it (.ci/run).
#
#   tests/fresh/run.sh [ROOT_DIR]   (default: a new folder under /var/tmp)
#
# Keeps the root when HP_FRESH_KEEP=1 (a second run reuses it only if
# you pass it, with its packages already there: not a fresh check).
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
shared=${HP_SHARED_DIR:-$src/../shared}
root=${1:-$(mktemp -d /var/tmp/hetpool-fresh.XXXXXX)}
log=${HP_FRESH_LOG:-$root.log}

if [ "$(id -u)" != 0 ]; then
	echo "skip fresh_root: needs root (chroot and mounts)"
	exit 0
fi
# A container without CAP_SYS_ADMIN cannot mount or chroot: say so.
probe=$(mktemp -d)
if ! mount -t tmpfs -o size=1m hp-fresh-probe "$probe" 2>/dev/null; then
	rmdir "$probe"
	[ -n "${1:-}" ] || rmdir "$root"
	echo "skip fresh_root: cannot mount here (a container without CAP_SYS_ADMIN?)"
	exit 0
fi
umount "$probe" && rmdir "$probe"
if ! command -v debootstrap >/dev/null; then
	echo "FAIL fresh_root: no debootstrap: run 'make deps' (tools/deps.sh ci)"
	exit 1
fi

cleanup() {
	for m in sys/fs/cgroup dev/shm dev/pts dev proc sys; do
		mountpoint -q "$root/$m" && umount -l "$root/$m"
	done
	if [ "${HP_FRESH_KEEP:-0}" != 1 ]; then
		rm -rf --one-file-system "$root"
	fi
}
trap cleanup EXIT

# The host's mirror, so the check runs wherever the host's apt does.
mirror=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n 1)
mirror=${mirror:-http://deb.debian.org/debian}
t0=$(date +%s)
# mktemp -d makes the folder 0700: as the root's / that would keep every
# user but root out of everything (munge's postinst runs as munge, apt's
# downloads as _apt); a real / is 0755
chmod 755 "$root"
if [ ! -x "$root/usr/bin/make" ]; then
	echo "== debootstrap bookworm (+ build-essential) into $root from $mirror"
	debootstrap --variant=minbase --include=build-essential bookworm "$root" "$mirror" >"$log" 2>&1 ||
		{ echo "FAIL fresh_root: debootstrap failed: see $log"; tail -n 5 "$log"; exit 1; }
fi
cp /etc/apt/sources.list.d/debian.sources "$root/etc/apt/sources.list.d/" 2>/dev/null &&
	rm -f "$root/etc/apt/sources.list" || true
cp /etc/resolv.conf "$root/etc/resolv.conf"
# A host whose HTTPS goes through a proxy with a CA of its own tells node
# so (NODE_EXTRA_CA_CERTS); npm ci in the root (the dashboard's build)
# needs the same trust, or it fails on the registry's certificate.
node_ca=""
if [ -n "${NODE_EXTRA_CA_CERTS:-}" ] && [ -r "$NODE_EXTRA_CA_CERTS" ]; then
	mkdir -p "$root/etc/ssl"
	cp "$NODE_EXTRA_CA_CERTS" "$root/etc/ssl/node-extra-ca.crt"
	node_ca="NODE_EXTRA_CA_CERTS=/etc/ssl/node-extra-ca.crt"
fi
# An installed Debian has an /etc/hosts (localhost, its own name);
# debootstrap writes none.
[ -e "$root/etc/hosts" ] || cp /etc/hosts "$root/etc/hosts"

# This checkout as a clean clone would have it (tracked files and what git
# does not ignore), and the shared reference data beside it.
mkdir -p "$root/work/hetpool"
(cd "$src" && git ls-files -z --cached --others --exclude-standard |
	tar --null -T - -cf -) | tar -C "$root/work/hetpool" -xf -
if [ -d "$shared" ]; then
	mkdir -p "$root/work/shared"
	cp -a "$shared/." "$root/work/shared/"
fi
for m in proc sys dev dev/pts; do
	mount --bind "/$m" "$root/$m"
done
# A booted Debian has a tmpfs on /dev/shm (Open MPI's shared memory); the
# bind of /dev above does not bring the host's.
mount -t tmpfs -o mode=1777,size=1g shm-fresh "$root/dev/shm"
# and its cgroup filesystem (slurmd needs it), which the bind of /sys
# leaves behind
if mountpoint -q /sys/fs/cgroup; then
	mount --rbind /sys/fs/cgroup "$root/sys/fs/cgroup"
fi

echo "== in the fresh root: make run (until /healthz answers, then Ctrl-C), make demo, make test"
# make run serves in the foreground until Ctrl-C: it is started in the
# background, asked for /healthz (perl, which build-essential brings) and
# sent SIGINT; it must then exit 0, having closed its database.
cat >"$root/tmp/front-door.sh" <<'EOS'
set -u
cd /work/hetpool
setsid make run RUN_LISTEN=127.0.0.1:18080 >/tmp/make-run.log 2>&1 &
pid=$!
ok=0
for i in $(seq 1 3600); do
	if perl -MIO::Socket::INET -e '$s=IO::Socket::INET->new("127.0.0.1:18080") or exit 1;
		print $s "GET /healthz HTTP/1.0\r\n\r\n"; $r=join("",<$s>); exit($r=~m{^HTTP/1\.[01] 200} ? 0 : 1)' 2>/dev/null; then
		ok=1; break
	fi
	kill -0 $pid 2>/dev/null || break
	sleep 1
done
cat /tmp/make-run.log
# Ctrl-C: SIGINT to make's process group (setsid made it its own)
kill -INT -- -$pid 2>/dev/null || true
wait $pid; rc=$?
[ $ok = 1 ] || { echo "FAIL make run: /healthz never answered"; exit 1; }
# make itself reports the interrupt (130), as on a terminal; hetpoold
# must have stopped cleanly under it
[ $rc = 0 ] || [ $rc = 130 ] || { echo "FAIL make run: exited $rc after Ctrl-C"; exit 1; }
grep -q 'database is closed' /tmp/make-run.log || { echo "FAIL make run: no clean stop"; exit 1; }
echo "ok make run: served /healthz, stopped cleanly on Ctrl-C"
make demo RUN_SECONDS=10 && make test
EOS
rc=0
chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	HOME=/root LANG=C.UTF-8 ${node_ca:+"$node_ca"} /bin/bash /tmp/front-door.sh \
	>"$log.make" 2>&1 || rc=$?
tail -n 4 "$log.make"
secs=$(($(date +%s) - t0))
if [ $rc -ne 0 ]; then
	echo "FAIL fresh_root: make run, make demo, make test exited $rc after ${secs}s; log: $log.make"
	grep -E '^FAIL|rror' "$log.make" | head -n 20
	exit 1
fi
last=$(tail -n 1 "$log.make")
if ! echo "$last" | grep -qE '^[0-9]+ passed, 0 failed$'; then
	echo "FAIL fresh_root: the suite did not end with 'N passed, 0 failed': $last"
	exit 1
fi
echo "ok   fresh_root: make run, make demo and make test on a fresh Debian 12 root (${secs}s): $last"
