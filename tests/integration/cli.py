"""cli.py - `hetpool --server URL recommend|run|jobs|status|cancel|remove|logs`
against a real hetpoold: the same recommendation as the API, a job run to
its end, listed, shown, its metrics printed, cancels, and the errors
(unknown job, bad token, no server, bad URL) as one line with exit 2 or
1."""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from hplib import *  # noqa: E402,F403

SAMPLE = os.path.join(ROOT, "data", "pools", "sample.json")
d = Daemon(["--pool", SAMPLE, "--register-self", "--poll", "0.2"])
d.start()
url = "http://127.0.0.1:%d" % d.port
U = d.new_token("erin", "user")["token"]


def hp(*args, token=U, timeout=300):
    env = dict(os.environ, HETPOOL_TOKEN=token)
    env.pop("HETPOOL_ADMIN_TOKEN", None)
    return subprocess.run([HETPOOL, "--server", url] + list(args), capture_output=True,
                          text=True, env=env, timeout=timeout)


def one_error(name, p, status, pattern):
    lines = p.stderr.strip().splitlines()
    check(name, p.returncode == status and len(lines) == 1 and pattern in lines[0],
          "exit %d, stderr %r" % (p.returncode, p.stderr))


r18 = os.path.join(ROOT, "data", "models", "resnet18.train.onnx")
p = hp("recommend", r18, "--samples", "60000", "--epochs", "1", "--batch", "256",
       "--deadline", "1h", "--json")
cli = json.loads(p.stdout) if p.returncode == 0 else {}
mid = [m for m in d.get("/v1/models", U).json()["models"] if m["name"] == "resnet18"]
check("recommend with an ONNX file stores it and answers", p.returncode == 0 and cli.get("feasible") and mid, p.stderr)
if mid:
    api = d.post("/v1/recommendations", {"model_id": mid[0]["id"], "samples": 60000, "epochs": 1,
                                         "batch": 256, "deadline_s": 3600}, U).json()
    check("recommend --json is the API's answer", api["choice"] == cli.get("choice"), "")
    p = hp("recommend", str(mid[0]["id"]), "--samples", "60000", "--epochs", "1", "--batch", "256",
           "--deadline", "1h")
    check("recommend by model id, for a person", p.returncode == 0 and "meets the deadline" in p.stdout, p)
spec = os.path.join(d.tmp, "spec.json")
with open(spec, "w") as f:
    json.dump(SPEC, f)
if os.access(os.path.join(BIN, "hetpool-train"), os.X_OK):
    p = hp("run", spec, "--data", "synthetic", "--samples", "1000", "--steps", "20", "--batch", "32",
           "--deadline", "10m", "--threads", "1", "--wait")
    check("run --wait: a job runs to its end (exit 0)", p.returncode == 0 and "succeeded" in p.stdout, p)
    p = hp("jobs", "--json")
    jobs = json.loads(p.stdout)["jobs"] if p.returncode == 0 else []
    jid = jobs[-1]["id"] if jobs else 0
    check("jobs --json lists it", p.returncode == 0 and jobs and jobs[-1]["state"] == "succeeded", p)
    p = hp("jobs", "--state", "succeeded")
    check("jobs, for a person", p.returncode == 0 and ("%d " % jid) in p.stdout and "succeeded" in p.stdout, p)
    p = hp("status", str(jid))
    check("status", p.returncode == 0 and p.stdout.startswith("job %d succeeded" % jid), p)
    p = hp("logs", str(jid), "--metrics")
    lines = [json.loads(x) for x in p.stdout.splitlines() if x.strip()]
    check("logs --metrics prints the trainer's lines", p.returncode == 0 and
          len([x for x in lines if "step" in x]) == 20, p.stdout[:200])
    p = hp("logs", str(jid), "--rank", "0")
    check("logs --rank 0", p.returncode == 0 and len(p.stdout) > 0, p)
    one_error("cancelling an ended job: one line, exit 2", hp("cancel", str(jid)), 2, "has ended")
    p = hp("run", spec, "--data", "synthetic", "--samples", "1000", "--steps", "100000", "--batch", "32",
           "--deadline", "10m", "--threads", "1")
    jid2 = p.stdout.strip()
    check("run prints the job's id", p.returncode == 0 and jid2.isdigit(), p)
    d.wait_job(int(jid2), U, states=("running",), timeout=60)
    p = hp("cancel", jid2)
    check("cancel a running job", p.returncode == 0 and "being stopped" in p.stdout, p)
    j = d.wait_job(int(jid2), U, timeout=60)
    check("it ends cancelled", j and j["state"] == "cancelled" and "cancelled by erin" in (j["reason"] or ""), j)
    p = hp("remove", jid2, "--json")
    check("remove an ended job", p.returncode == 0 and json.loads(p.stdout) == {"id": int(jid2), "removed": True}, p)
    one_error("it is gone", hp("status", jid2), 2, "no job " + jid2)
    one_error("removing it again: one line, exit 2", hp("remove", jid2), 2, "no job " + jid2)
else:
    skip("run --wait: a job runs to its end", "no hetpool-train in " + BIN)
one_error("an unknown job: one line, exit 2", hp("status", "4242"), 2, "no job 4242")
one_error("a bad token: one line, exit 2", hp("jobs", token="not-a-token-123"), 2, "HETPOOL_TOKEN")
one_error("a job id that is not a number", hp("status", "abc"), 2, "job ID")
one_error("a refused job: the server's reason", hp("run", spec, "--data", "synthetic", "--samples", "1000",
                                                   "--steps", "20", "--batch", "32", "--deadline", "10m",
                                                   "--device-type", "h100-sxm"), 2, "no configuration")
one_error("an option the command lacks", hp("jobs", "--color"), 2, "unknown option")
p = subprocess.run([HETPOOL, "--server", "http://127.0.0.1:1", "jobs"], capture_output=True, text=True)
one_error("no server there: exit 1", p, 1, "cannot reach the server")
p = subprocess.run([HETPOOL, "--server", "ftp://x", "jobs"], capture_output=True, text=True)
one_error("a URL that is not http(s)", p, 2, "http://")
p = subprocess.run([HETPOOL, "--server", url, "--help"], capture_output=True, text=True)
check("--server URL --help lists the commands", p.returncode == 0 and "recommend" in p.stdout and "logs" in p.stdout, p)
check("the token is not in hetpoold's log", U not in d.log())
d.cleanup()
finish()
