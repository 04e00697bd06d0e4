"""limits.py - what a client that does not behave meets: a client that
trickles its headers or its body, or sends nothing, is cut off after
--request-timeout (well before MHD's idle timeout, which trickled bytes
keep resetting), while other clients are served; the connection cap;
oversized headers and chunked bodies; many clients at once."""
import json
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from hplib import *  # noqa: E402,F403


def closed_within(s, send_every, payload, limit):
    """Trickle payload one byte per send_every seconds until the server
    closes the connection; seconds it took, or None if it did not within
    limit."""
    t0 = time.time()
    i = 0
    s.settimeout(send_every)
    while time.time() - t0 < limit:
        try:
            if i < len(payload):
                s.send(payload[i:i + 1])
                i += 1
            data = s.recv(4096)
            if data == b"":
                return time.time() - t0
            if data.startswith(b"HTTP/1.1 408") or data.startswith(b"HTTP/1.1 4"):
                # an answer then the close is fine too
                continue
        except socket.timeout:
            continue
        except (ConnectionResetError, BrokenPipeError):
            return time.time() - t0
    return None


d = Daemon(["--request-timeout", "2", "--idle-timeout", "20", "--threads", "2",
            "--max-connections", "64"])
d.start()
A = d.admin

# ---- slow clients
s = raw_socket(d.port)
s.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
t = closed_within(s, 0.3, b"X-Slow: " + b"a" * 200, 10)
s.close()
check("a client trickling its headers is cut off after the request timeout",
      t is not None and t < 5, t)

s = raw_socket(d.port)
s.send(("POST /v1/recommendations HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
        "Content-Type: application/json\r\nContent-Length: 500\r\n\r\n{" % A).encode())
t = closed_within(s, 0.3, b" " * 400, 10)
s.close()
check("a client trickling its body is cut off after the request timeout",
      t is not None and t < 5, t)

s = raw_socket(d.port)
t = closed_within(s, 0.3, b"", 10)
s.close()
check("a connection that sends nothing is closed after the request timeout",
      t is not None and t < 5, t)

# while slow clients trickle, others are served
slow = []
for _ in range(6):
    x = raw_socket(d.port)
    x.send(b"GET /healthz HTTP/1.1\r\n")
    slow.append(x)
t0 = time.time()
r = d.get("/healthz")
check("others are served while slow clients trickle", r.status == 200 and time.time() - t0 < 1.0,
      time.time() - t0)
for x in slow:
    x.close()
m = d.get("/metrics").body
n = [l for l in m.splitlines() if l.startswith("hetpoold_slow_connections_closed_total ")]
check("slow connections closed are counted", n and int(n[0].split()[1]) >= 3, n)

# ---- headers too large
s = raw_socket(d.port)
s.settimeout(10)
try:
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"b" * 200000 + b"\r\n\r\n")
    data = s.recv(4096)
except (ConnectionResetError, BrokenPipeError):
    data = b""
s.close()
check("headers too large are refused (431, or the connection closed)",
      data == b"" or data.startswith(b"HTTP/1.1 431") or data.startswith(b"HTTP/1.1 413"), data[:80])
check("the server is fine afterwards", d.get("/healthz").status == 200)

# ---- a chunked body over the limit
s = raw_socket(d.port)
s.settimeout(10)
head = ("POST /v1/recommendations HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
        "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" % A).encode()
data = b""
try:
    s.sendall(head)
    chunk = b"x" * 65536
    for _ in range(24):  # 1.5 MiB, over the 1 MiB limit
        s.sendall(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
        # the answer comes before the body ends: read it as it comes
        s.setblocking(False)
        try:
            data += s.recv(4096)
        except BlockingIOError:
            pass
        s.setblocking(True)
        if data:
            break
    if not data:
        s.sendall(b"0\r\n\r\n")
        data = s.recv(4096)
except (ConnectionResetError, BrokenPipeError, socket.timeout):
    pass
s.close()
check("a chunked body over the limit is refused (413)", data.startswith(b"HTTP/1.1 413"), data[:120])
s = raw_socket(d.port)
s.settimeout(10)
try:
    s.sendall(head)
    for _ in range(200):  # 12.5 MiB: more than the server reads
        s.sendall(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
    cut = False
except (ConnectionResetError, BrokenPipeError):
    cut = True
s.close()
check("a chunked body far over the limit is cut off", cut)
check("the server is fine afterwards (2)", d.get("/healthz").status == 200)

# ---- many clients at once
results = []
lock = threading.Lock()


def worker(path, token, body=None):
    try:
        r = d.post(path, body, token) if body else d.get(path, token)
        with lock:
            results.append((r.status, r.body))
    except Exception as e:  # noqa: BLE001
        with lock:
            results.append((0, str(e)))


ths = [threading.Thread(target=worker, args=("/v1/whoami", A)) for _ in range(64)]
for t in ths:
    t.start()
for t in ths:
    t.join()
check("64 clients at once are all answered", len(results) == 64 and all(s == 200 for s, _ in results),
      [x for x in results if x[0] != 200][:3])

d.post("/v1/pool", json.load(open(os.path.join(ROOT, "data", "pools", "sample.json"))), A)
rec = {"spec": SPEC, "samples": 60000, "epochs": 2, "batch": 256, "deadline_s": 900}
results.clear()
ths = [threading.Thread(target=worker, args=("/v1/recommendations", A, rec)) for _ in range(16)]
for t in ths:
    t.start()
for t in ths:
    t.join()
bodies = {b for _, b in results}
check("16 recommendations at once give one answer", len(results) == 16 and
      all(s == 200 for s, _ in results) and len(bodies) == 1, [x[:1] for x in results])
d.cleanup()

# ---- --max-body above the default (1 MiB) is the limit (until 3 December
# the body parsers refused anything over 1 MiB whatever it said)
d = Daemon(["--max-body", str(4 << 20)])
d.start()
pad = b"{" + b" " * (2 << 20) + b'"name": "big", "role": "reader"}'
r = d.post("/v1/tokens", pad, d.admin, ctype="application/json")
check("a 2 MiB body under --max-body 4 MiB is read", r.status == 201, r)
s = raw_socket(d.port)
s.settimeout(10)
s.sendall(("POST /v1/tokens HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
           "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % (d.admin, 5 << 20)).encode())
head = s.recv(65536).decode("utf-8", "replace")
s.close()
check("a 5 MiB body over it is refused (413)", head.startswith("HTTP/1.1 413") and "body-too-large" in head,
      head[:200])
d.cleanup()

# ---- the connection cap
d = Daemon(["--max-connections", "8", "--threads", "2", "--request-timeout", "60"])
d.start()
held = [raw_socket(d.port) for _ in range(8)]
time.sleep(0.5)
extra = raw_socket(d.port)
extra.settimeout(1.5)
extra.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
try:
    data = extra.recv(4096)
except socket.timeout:
    data = None
except ConnectionResetError:
    data = b""
check("past the connection cap a new connection is not served", not data, data)
m = None
for h in held:
    h.close()
time.sleep(0.3)
if data is None:
    extra.settimeout(5)
    try:
        data = extra.recv(4096)
    except (socket.timeout, ConnectionResetError):
        data = b""
    check("it is served once connections free up", data.startswith(b"HTTP/1.1 200"), data[:60])
extra.close()
check("new connections are served after the cap frees", d.get("/healthz").status == 200)
d.cleanup()

# ---- storage that runs out: the database on a 1 MiB tmpfs of the test's
# own, filled with uploads.  A write that finds no room answers 503
# "storage" (it was a bare 500), /healthz says 503 with the reason (it
# said 200), and once there is room again both recover.
def storage_full():
    if os.geteuid() != 0:
        return skip("storage_full", "not root: cannot mount a small tmpfs")
    mnt = tempfile.mkdtemp(prefix="hetpoold-full-")
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", mnt],
                      capture_output=True).returncode != 0:
        os.rmdir(mnt)
        return skip("storage_full", "mount -t tmpfs failed here")
    d = Daemon(["--max-body", "4194304"], tmp=mnt)
    try:
        d.start()
        U = d.new_token("filler", "user")["token"]
        with open(os.path.join(ROOT, "data", "models", "shufflenet_v2_x1_0.train.onnx"), "rb") as f:
            onnx = f.read()
        r = None
        for k in range(12):
            r = d.request("POST", "/v1/models?name=m%d" % k, onnx, U, ctype="application/octet-stream")
            if r.status != 201:
                break
        check("a write with no room left is 503 storage",
              r is not None and r.status == 503 and r.json().get("type", "").endswith("storage")
              and "disk full" in r.json().get("detail", ""), r)
        h = d.get("/healthz")
        check("/healthz says 503 with the reason while storage is full",
              h.status == 503 and h.json()["status"] == "unavailable"
              and "disk full" in h.json().get("reason", ""), h)
        m = d.get("/metrics").body
        check("the metrics say the store is not writable", "hetpoold_store_writable 0" in m,
              [l for l in m.splitlines() if "writable" in l])
        subprocess.run(["mount", "-o", "remount,size=16m", mnt], check=True)
        h = d.get("/healthz")
        check("/healthz is 200 again once there is room", h.status == 200 and h.json()["status"] == "ok", h)
        r = d.request("POST", "/v1/models?name=again", onnx, U, ctype="application/octet-stream")
        check("writes go through again", r.status == 201, r)
    finally:
        d.stop()
        subprocess.run(["umount", mnt])
        os.rmdir(mnt)

storage_full()
finish()
