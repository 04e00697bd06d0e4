"""tls.py - HTTPS (a self-signed certificate made by openssl here), and
the rule that a non-loopback address needs TLS unless --insecure."""
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from hplib import *  # noqa: E402,F403

if not shutil.which("openssl"):
    skip("tls", "no openssl to make a certificate")
    finish()
tmp = tempfile.mkdtemp(prefix="hetpoold-tls-")
cert, key = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
                "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1",
                "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)

d = Daemon(["--tls-cert", cert, "--tls-key", key], tls=cert)
d.start()
r = d.get("/healthz")
check("HTTPS with the given certificate", r.status == 200 and r.json()["status"] == "ok", r)
r = d.get("/v1/whoami", d.admin)
check("a token over HTTPS", r.status == 200 and r.json()["role"] == "admin", r)
try:
    ctx = ssl.create_default_context()  # the system's CAs: not this one
    import http.client
    c = http.client.HTTPSConnection("127.0.0.1", d.port, timeout=10, context=ctx)
    c.request("GET", "/healthz")
    c.getresponse()
    fail("a client that does not trust the certificate is refused", "it was answered")
except ssl.SSLError:
    ok("a client that does not trust the certificate is refused")
s = raw_socket(d.port)
s.settimeout(5)
s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
try:
    data = s.recv(100)
except Exception:  # noqa: BLE001
    data = b""
s.close()
check("plain HTTP to the TLS port gets no HTTP answer", not data.startswith(b"HTTP/1.1 200"), data[:40])
# the local backend with no node of this host: the start warns, and a
# job is refused saying what to do (it said "the pool has no devices")
r = d.post("/v1/jobs", {"spec": SPEC, "samples": 2048, "steps": 5, "batch": 32, "deadline_s": 3600,
                        "data": "synthetic"}, d.admin)
check("a job for the local backend with no node of this host: 422 saying --register-self",
      r.status == 422 and "--register-self" in r.json().get("detail", ""), r)
check("and the start warned", any(x.get("level") == "warning" and "--register-self" in x.get("msg", "")
                                  for x in d.log_lines()))
check("TLS: SIGTERM stops it cleanly", d.stop() == 0)
d.cleanup()


def start_rc(args, admin=None):
    p = subprocess.run([HETPOOLD, "--db", os.path.join(tmp, "x.db")] + args,
                       capture_output=True, text=True, timeout=30,
                       env=dict(os.environ, HETPOOL_ADMIN_TOKEN=admin or token_text()))
    return p.returncode, p.stderr


rc, err = start_rc(["--listen"])
check("an option without its value is named so (exit 2)",
      rc == 2 and "--listen needs a value" in err and len(err.strip().splitlines()) == 1, (rc, err))
# an admin token no Authorization header could carry would lock the
# operator out: refused at start (until 3 December it was taken)
for bad, why in (("correct-horse!battery#staple", "'!' and '#'"), ("a" * 300, "300 bytes")):
    rc, err = start_rc(["--listen", "127.0.0.1:0"], admin=bad)
    check("an admin token of %s is refused at start" % why,
          rc == 2 and "HETPOOL_ADMIN_TOKEN: an HTTP bearer token cannot carry it" in err
          and len(err.strip().splitlines()) == 1, (rc, err[-300:]))


# a database that is missing while its own jobs folder holds jobs (deleted,
# or --db names the wrong file) is not made afresh: those jobs would be
# lost to it (until 3 December an empty database was made)
os.makedirs(os.path.join(tmp, "gone.db.d", "jobs", "20260101-000000-abcd"))
p = subprocess.run([HETPOOLD, "--db", os.path.join(tmp, "gone.db"), "--listen", "127.0.0.1:0"],
                   capture_output=True, text=True, timeout=30,
                   env=dict(os.environ, HETPOOL_ADMIN_TOKEN=token_text()))
check("a missing database whose jobs folder holds jobs is refused (exit 2)",
      p.returncode == 2 and "is missing, but its jobs folder" in p.stderr and "holds 1 job:" in p.stderr
      and len(p.stderr.strip().splitlines()) == 1 and not os.path.exists(os.path.join(tmp, "gone.db")),
      (p.returncode, p.stderr))

rc, err = start_rc(["--listen", "0.0.0.0:0"])
check("a non-loopback address without TLS is refused (exit 2)",
      rc == 2 and "not a loopback address" in err and len(err.strip().splitlines()) == 1, (rc, err))
rc, err = start_rc(["--tls-cert", cert])
check("--tls-cert without --tls-key is refused", rc == 2 and "together" in err, (rc, err))
rc, err = start_rc(["--listen", "127.0.0.1:0", "--tls-cert", cert + ".missing", "--tls-key", key])
check("a missing certificate file is refused", rc != 0 and "missing" in err, (rc, err))
rc, err = start_rc(["--listen", "nohost:1"])
check("--listen without a port number is refused", rc == 2, (rc, err))
for args, name in ((["--insecure"], "with --insecure"), (["--tls-cert", cert, "--tls-key", key], "with TLS")):
    d = Daemon(args, tmp=tempfile.mkdtemp(prefix="hetpoold-tls-"))
    d.args = ["--listen", "0.0.0.0:0"] + args
    # Daemon.start() puts --listen 127.0.0.1:0 first; the later one wins
    try:
        d.start()
        lines = [x for x in d.log_lines() if x.get("msg") == "listening"]
        check("a non-loopback address starts " + name, lines and lines[0]["host"] == "0.0.0.0", lines)
    except RuntimeError as e:
        fail("a non-loopback address starts " + name, e)
    d.cleanup()
shutil.rmtree(tmp, ignore_errors=True)
finish()
