"""web.py - the web dashboard served by a real hetpoold.

First how hetpoold serves files, on a folder of its own made here (so this
part needs no node): index.html and hashed assets with their cache
headers, the Content-Security-Policy (no inline script) and nosniff, gzip
twins, HEAD, 405 on other methods, 404 for every path that tries to leave
the folder or reach a hidden or unknown file, the API untouched; a
hetpoold without a dashboard answers "/" with a 404 problem saying how to
build it, and --web-dir without index.html is refused.

Then end to end (web/e2e/dashboard.mjs): the dashboard the build made
(BUILD/web) in Debian's chromium, headless, driven by Playwright
(playwright-core, no bundled browser) against a hetpoold with the sample
pool and this host; skipped, with the reason, when node, chromium or the
built dashboard is missing."""
import gzip
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import hplib  # noqa: E402
from hplib import *  # noqa: E402,F403

SAMPLE = os.path.join(ROOT, "data", "pools", "sample.json")
WEB_BUILT = os.path.normpath(os.path.join(BIN, "..", "web"))
ARTIFACTS = os.path.normpath(os.path.join(BIN, "..", "web-test"))

# ---- serving, on a folder made here
tmp = tempfile.mkdtemp(prefix="hetpool-web-")
web = os.path.join(tmp, "web")
os.makedirs(os.path.join(web, "assets"))
INDEX = "<!doctype html><title>t</title><script type=module src=/assets/app-0123abcd.js></script>"
JS = "console.log('dashboard');\n" * 50
with open(os.path.join(web, "index.html"), "w") as f:
    f.write(INDEX)
with open(os.path.join(web, "assets", "app-0123abcd.js"), "w") as f:
    f.write(JS)
with open(os.path.join(web, "assets", "app-0123abcd.js.gz"), "wb") as f:
    f.write(gzip.compress(JS.encode()))
with open(os.path.join(web, "assets", ".hidden.js"), "w") as f:
    f.write("hidden")
with open(os.path.join(web, "assets", "notes.secret"), "w") as f:
    f.write("SECRET-TYPE")
with open(os.path.join(tmp, "secret.txt"), "w") as f:
    f.write("SECRET-OUTSIDE")

d = Daemon(["--web-dir", web])
try:
    d.start()
    r = d.get("/")
    csp = r.header("Content-Security-Policy") or ""
    check("GET / serves index.html (200, text/html)", r.status == 200 and r.body == INDEX
          and (r.header("Content-Type") or "").startswith("text/html"), r)
    check("index.html is not cached without asking (no-cache)", r.header("Cache-Control") == "no-cache",
          r.header("Cache-Control"))
    check("the CSP allows scripts from this origin only, none inline",
          "script-src 'self'" in csp and "unsafe-inline" not in csp and "unsafe-eval" not in csp
          and "default-src 'none'" in csp and "connect-src 'self'" in csp, csp)
    check("nosniff on the dashboard", r.header("X-Content-Type-Options") == "nosniff", r.headers)
    r2 = d.get("/index.html")
    check("GET /index.html is the same file", r2.status == 200 and r2.body == INDEX, r2)
    r = d.get("/assets/app-0123abcd.js")
    check("a hashed asset: 200, javascript, immutable for a year", r.status == 200 and r.body == JS
          and (r.header("Content-Type") or "").startswith("text/javascript")
          and r.header("Cache-Control") == "public, max-age=31536000, immutable"
          and r.header("Content-Encoding") is None, r.headers)
    c = d.conn()
    c.request("GET", "/assets/app-0123abcd.js", headers={"Accept-Encoding": "gzip, deflate"})
    rr = c.getresponse()
    body = rr.read()
    c.close()
    check("its gzip twin goes to a client that accepts gzip",
          rr.status == 200 and rr.getheader("Content-Encoding") == "gzip"
          and gzip.decompress(body).decode() == JS and "Accept-Encoding" in (rr.getheader("Vary") or ""),
          rr.getheaders())
    r = d.request("HEAD", "/")
    check("HEAD / answers 200 without a body", r.status == 200 and r.body == "", r)
    r = d.post("/", "x", ctype="text/plain")
    check("POST / is 405 with Allow: GET, HEAD", r.status == 405 and r.header("Allow") == "GET, HEAD", r)
    bad = ["/assets/../secret.txt", "/assets/../../secret.txt", "/assets/..%2f..%2fsecret.txt",
           "/assets/%2e%2e/%2e%2e/secret.txt", "/assets/..", "/assets/.hidden.js", "/assets/notes.secret",
           "/assets/", "/assets/missing.js", "/assets//etc/passwd",
           "/assets/%2fetc%2fpasswd", "/../secret.txt", "/index.html/../../secret.txt", "/assets/sub/app.js",
           "/secret.txt", "/web/index.html"]
    got = []
    for p in bad:
        r = d.get(p)
        if r.status != 404 or "SECRET" in r.body or "hidden" == r.body:
            got.append("%s: %d %s" % (p, r.status, r.body[:80]))
    check("no path leaves the folder or reaches a hidden or unknown file (%d paths: 404)" % len(bad),
          not got, "; ".join(got))
    # libmicrohttpd would decode %00 into the path and end the name there;
    # hetpoold keeps it encoded and refuses the path
    got = []
    for p in ("/assets/app-0123abcd.js%00../../secret.txt", "/assets/notes.secret%00.js"):
        r = d.get(p)
        if r.status != 400 or "SECRET" in r.body or r.body == JS:
            got.append("%s: %d %s" % (p, r.status, r.body[:80]))
    check("a NUL in the path is refused (400), not cut short to another file", not got, "; ".join(got))
    r = d.get("/v1/whoami")
    check("the API is untouched (no token: 401)", r.status == 401, r)
    r = d.get("/assets/missing.js")
    check("a missing asset is a 404 problem", r.status == 404
          and (r.header("Content-Type") or "").startswith("application/problem+json"), r)
finally:
    d.cleanup()

# ---- a hetpoold with no dashboard beside it
nb = tempfile.mkdtemp(prefix="hetpool-noweb-")
try:
    os.makedirs(os.path.join(nb, "bin"))
    shutil.copy(HETPOOLD, os.path.join(nb, "bin", "hetpoold"))
    d = Daemon(["--hetpool", os.path.abspath(HETPOOL)], tmp=nb)
    saved = hplib.HETPOOLD
    hplib.HETPOOLD = os.path.join(nb, "bin", "hetpoold")
    try:
        d.start()
        r = d.get("/")
        p = r.json() if r.status == 404 else {}
        check("without a built dashboard, / is a 404 problem saying how to build it",
              r.status == 404 and (r.header("Content-Type") or "").startswith("application/problem+json")
              and "not built" in p.get("detail", "") and "--web-dir" in p.get("detail", ""), r)
        d.stop()
    finally:
        hplib.HETPOOLD = saved
    pr = subprocess.run([HETPOOLD, "--db", os.path.join(nb, "x.db"), "--web-dir", nb],
                        capture_output=True, text=True, timeout=30)
    check("--web-dir without index.html is refused (exit 2, says why)",
          pr.returncode == 2 and "index.html" in pr.stderr and pr.stderr.startswith("hetpoold: "),
          "%d %s" % (pr.returncode, pr.stderr))
finally:
    shutil.rmtree(nb, ignore_errors=True)
    shutil.rmtree(tmp, ignore_errors=True)

# ---- end to end in chromium
node = shutil.which("node")
chromium = shutil.which("chromium") or shutil.which("chromium-browser")
pw = os.path.join(ROOT, "web", "node_modules", "playwright-core")
if not node:
    skip("dashboard end to end", "no node (make deps)")
elif not chromium:
    skip("dashboard end to end", "no chromium (make deps: tools/deps.sh test)")
elif not os.path.isdir(pw):
    skip("dashboard end to end", "no web/node_modules (the build runs npm ci when node is there)")
elif not os.path.exists(os.path.join(WEB_BUILT, "index.html")):
    skip("dashboard end to end", "no dashboard in %s (only the normal build makes it)" % WEB_BUILT)
else:
    d = Daemon(["--pool", SAMPLE, "--register-self", "--poll", "0.2"])
    try:
        d.start()
        user = d.new_token("alice", "user")
        reader = d.new_token("rita", "reader")
        env = dict(os.environ, HP_URL="http://127.0.0.1:%d" % d.port, HP_ADMIN=d.admin,
                   HP_USER=user["token"], HP_READER=reader["token"], HP_CHROMIUM=chromium,
                   HP_ARTIFACTS=ARTIFACTS, HP_ROOT=ROOT)
        pr = subprocess.run([node, os.path.join(ROOT, "web", "e2e", "dashboard.mjs")], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=400)
        out = pr.stdout
        sys.stdout.write(out)
        hplib.failures += sum(1 for ln in out.splitlines() if ln.startswith("FAIL "))
        if pr.returncode != 0 and "FAIL " not in out:
            fail("dashboard end to end", "web/e2e/dashboard.mjs exited %d" % pr.returncode)
        check("no token text in hetpoold's log", user["token"] not in d.log() and d.admin not in d.log())
    finally:
        d.cleanup()

finish()
