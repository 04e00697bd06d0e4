"""hplib.py - helpers for the integration tests: start a real hetpoold on
loopback with a temporary SQLite file, talk to it over HTTP (the standard
library's http.client, and raw sockets for what a well-behaved client
would not do), and print one line per check: "ok NAME", "FAIL NAME: why"
or "skip NAME: why" (tests/run.sh counts them).
"""
import http.client
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time

# The suite's CLI and integration tests plan for a CPU-only host; GPU runs
# are benchmarks/gpu_check.sh's.  Every hetpoold and hetpool started from
# here (--register-self, jobs, their ranks) sees this host's GPUs hidden.
os.environ["CUDA_VISIBLE_DEVICES"] = ""

ROOT = os.environ.get("HP_ROOT") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("HP_BIN") or os.path.join(ROOT, "build", "bin")
HETPOOLD = os.path.join(BIN, "hetpoold")
HETPOOL = os.path.join(BIN, "hetpool")

failures = 0


def ok(name):
    print("ok   " + name, flush=True)


def fail(name, why):
    global failures
    failures += 1
    print("FAIL %s: %s" % (name, str(why).replace("\n", " ")[:600]), flush=True)


def skip(name, why):
    print("skip %s: %s" % (name, why), flush=True)


def check(name, cond, why=""):
    if cond:
        ok(name)
    else:
        fail(name, why or "condition false")
    return cond


def poll(get, until, timeout=30, every=0.2):
    """get() every `every` seconds until until(value) holds or `timeout`
    seconds have passed; returns the last value (the caller checks it).
    A bound on a wait for a state, not an assertion of speed: a slow host
    (AddressSanitizer, other tests beside) only waits longer."""
    t0 = time.time()
    while True:
        v = get()
        if until(v) or time.time() - t0 >= timeout:
            return v
        time.sleep(every)


def token_text():
    return "it-" + os.urandom(24).hex()


SPEC = {"name": "tiny", "input": [1, 28, 28], "classes": 10, "layers": [
    {"type": "conv", "filters": 4, "kernel": 3, "stride": 1, "pad": 1},
    {"type": "relu"}, {"type": "fc", "units": 10}]}


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    def json(self):
        return json.loads(self.body)

    def header(self, name):
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return None

    def __repr__(self):
        return "%d %s" % (self.status, self.body[:300])


class Daemon:
    """A hetpoold of its own: temp folder, database, port file, log."""

    def __init__(self, args=(), admin=None, env=None, tmp=None, tls=None):
        self.tmp = tmp or tempfile.mkdtemp(prefix="hetpoold-it-")
        self.db = os.path.join(self.tmp, "pool.db")
        self.log_path = os.path.join(self.tmp, "hetpoold.log")
        self.admin = admin if admin is not None else token_text()
        self.args = list(args)
        self.extra_env = env or {}
        self.proc = None
        self.port = None
        self.tls = tls  # CA file to trust: https

    def start(self, wait=30):
        pf = os.path.join(self.tmp, "port")
        if os.path.exists(pf):
            os.unlink(pf)
        env = dict(os.environ)
        env.pop("HETPOOL_ADMIN_TOKEN", None)
        if self.admin:
            env["HETPOOL_ADMIN_TOKEN"] = self.admin
        env.update(self.extra_env)
        args = [HETPOOLD, "--db", self.db, "--listen", "127.0.0.1:0",
                "--port-file", pf] + self.args
        self.logf = open(self.log_path, "ab")
        self.proc = subprocess.Popen(args, stdout=self.logf,
                                     stderr=self.logf, env=env)
        t0 = time.time()
        while time.time() - t0 < wait:
            if os.path.exists(pf):
                with open(pf) as f:
                    txt = f.read().strip()
                if txt:
                    self.port = int(txt)
                    return self
            if self.proc.poll() is not None:
                raise RuntimeError("hetpoold exited %d: %s" % (
                    self.proc.returncode, self.log()[-800:]))
            time.sleep(0.05)
        raise RuntimeError("hetpoold did not start: " + self.log()[-800:])

    def log(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def log_lines(self):
        out = []
        for line in self.log().splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                out.append({"raw": line})
        return out

    def stop(self, sig=signal.SIGTERM, timeout=30):
        if not self.proc:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.logf.close()
        rc = self.proc.returncode
        self.proc = None
        return rc

    def kill(self):
        return self.stop(signal.SIGKILL)

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)

    # ---- HTTP

    def conn(self, timeout=60):
        if self.tls:
            ctx = ssl.create_default_context(cafile=self.tls)
            return http.client.HTTPSConnection("127.0.0.1", self.port,
                                               timeout=timeout, context=ctx)
        return http.client.HTTPConnection("127.0.0.1", self.port,
                                          timeout=timeout)

    def request(self, method, path, body=None, token=None, ctype=None,
                headers=None, timeout=60):
        c = self.conn(timeout)
        h = dict(headers or {})
        if token:
            h["Authorization"] = "Bearer " + token
        if body is not None and not isinstance(body, (bytes, str)):
            body = json.dumps(body)
            ctype = ctype or "application/json"
        if isinstance(body, str):
            body = body.encode()
        if ctype:
            h["Content-Type"] = ctype
        c.request(method, path, body=body, headers=h)
        r = c.getresponse()
        data = r.read()
        c.close()
        return Response(r.status, r.getheaders(), data.decode("utf-8", "replace"))

    def get(self, path, token=None, **kw):
        return self.request("GET", path, token=token, **kw)

    def post(self, path, body=None, token=None, **kw):
        return self.request("POST", path, body=body, token=token, **kw)

    def new_token(self, name, role):
        r = self.post("/v1/tokens", {"name": name, "role": role}, self.admin)
        if r.status != 201:
            raise RuntimeError("token: %r" % r)
        return r.json()

    def wait_job(self, jid, token, states=("succeeded", "failed", "cancelled"),
                 timeout=120):
        t0 = time.time()
        j = None
        while time.time() - t0 < timeout:
            r = self.get("/v1/jobs/%d" % jid, token)
            if r.status == 200:
                j = r.json()
                if j["state"] in states:
                    return j
            time.sleep(0.2)
        return j


def raw_socket(port, timeout=10):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    return s


def finish():
    sys.exit(1 if failures else 0)
