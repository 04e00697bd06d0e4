"""recovery.py - a restart of hetpoold with jobs running: a job whose
supervisor outlived hetpoold is followed again (re-attached: it can be
cancelled and ends cancelled); one whose supervisor died while hetpoold
was down ends failed with the reason, its devices released; a queued job
waits through the restart and starts when the CPU frees up."""
import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from hplib import *  # noqa: E402,F403

if not os.access(os.path.join(BIN, "hetpool-train"), os.X_OK):
    skip("recovery", "no hetpool-train in " + BIN)
    finish()
d = Daemon(["--register-self", "--poll", "0.2"])
d.start()
A = d.admin
long_job = {"spec": SPEC, "samples": 2048, "steps": 1000000, "batch": 32, "deadline_s": 3600,
            "data": "synthetic", "training": {"threads": 1}}
j1 = d.post("/v1/jobs", long_job, A).json()
j2 = d.post("/v1/jobs", dict(long_job, steps=30, name="waits"), A).json()
check("a running job and a queued one", j1["state"] in ("starting", "running") and j2["state"] == "queued",
      (j1["state"], j2["state"]))
d.wait_job(j1["id"], A, states=("running",), timeout=60)
d.kill()
d.start()
j = d.get("/v1/jobs/%d" % j1["id"], A).json()
check("after SIGKILL and a restart the running job is followed again", j["state"] == "running", j)
q = d.get("/v1/jobs/%d" % j2["id"], A).json()
check("the queued job is still queued", q["state"] == "queued", q)
r = d.post("/v1/jobs/%d/cancel" % j1["id"], None, A)
j = d.wait_job(j1["id"], A, timeout=60)
check("the re-attached job can be stopped: it ends cancelled", r.status == 202 and j["state"] == "cancelled", j)
e2 = d.wait_job(j2["id"], A, timeout=120)
check("the queued job started once the CPU freed up, and ended", e2["state"] == "succeeded", e2)

# ---- a restart with another --jobs-dir: a running job whose folder is
# still there is left alone (its trainer runs on), never failed
j5 = d.post("/v1/jobs", long_job, A).json()
j = d.wait_job(j5["id"], A, states=("running",), timeout=60)
check("a long job runs", j and j["state"] == "running", j)
d.stop()
base_args = list(d.args)
other = os.path.join(d.tmp, "other-jobs")
d.args = base_args + ["--jobs-dir", other]
d.start()
# until a poll of hetpoold's has seen the job (its reason says why it is
# left alone; a bound, not a speed assertion), then a second more (five
# polls at --poll 0.2) so that a log line said again would be there
j = poll(lambda: d.get("/v1/jobs/%d" % j5["id"], A).json(),
         lambda x: "still there" in (x.get("reason") or ""), timeout=30)
time.sleep(1)
j = d.get("/v1/jobs/%d" % j5["id"], A).json()
check("under another --jobs-dir a running job whose folder is still there stays running, its devices held",
      j["state"] == "running" and all(x["held"] for x in j["devices"]), j)
check("its reason says why it is left alone", "still there" in (j.get("reason") or ""), j.get("reason"))
errs = [x for x in d.log_lines() if x.get("level") == "error" and "jobs folder" in x.get("msg", "")
        and x.get("job") == j5["id"]]
check("the log says it once, as an error", len(errs) == 1, errs)
d.stop()
d.args = base_args
d.start()
t0 = time.time()
while time.time() - t0 < 10:
    j = d.get("/v1/jobs/%d" % j5["id"], A).json()
    if not j.get("reason"):
        break
    time.sleep(0.2)
check("back under its jobs folder it is followed again (the reason cleared)",
      j["state"] == "running" and not j.get("reason"), j)
r = d.post("/v1/jobs/%d/cancel" % j5["id"], None, A)
j = d.wait_job(j5["id"], A, timeout=60)
check("and it can be cancelled", j["state"] == "cancelled", j)

j3 = d.post("/v1/jobs", long_job, A).json()
j = d.wait_job(j3["id"], A, states=("running",), timeout=60)
d.kill()
state = json.load(open(os.path.join(j["deployment"]["dir"], "job.json")))
pid = state.get("pid")
killed = []
try:
    os.kill(pid, signal.SIGKILL)  # the job's supervisor, started by hetpoold
    killed.append(pid)
except (TypeError, ProcessLookupError):
    pass
# its rank would go on alone: stop it too, as a crashed machine would
for k in range(j["plan"].get("ranks", 1) if isinstance(j.get("plan"), dict) else 1):
    try:
        rec = json.load(open(os.path.join(j["deployment"]["dir"], "logs", "rank-%d.json" % k)))
        os.kill(rec["pid"], signal.SIGKILL)
        killed.append(rec["pid"])
    except (OSError, ValueError, KeyError):
        pass
time.sleep(0.5)
d.start()
j = d.wait_job(j3["id"], A, timeout=60)
check("a job whose supervisor died while hetpoold was down ends failed with the reason",
      killed and j["state"] == "failed" and "supervisor" in (j["reason"] or ""), (killed, j))
check("its devices are released", all(not x["held"] for x in j["devices"]), j["devices"])
p = d.get("/v1/pool", A).json()
cpu = [x for n in p["nodes"] for x in n["devices"] if x["type"] == "cpu"]
check("the CPU is free again", cpu and cpu[0]["free"] == cpu[0]["count"], cpu)
check("SIGTERM stops it cleanly", d.stop() == 0)

# ---- --keep-ended: a job that ended goes, with its folder, once its time
# is up (here 3 s); a job still running stays
d.args = ["--register-self", "--poll", "0.2", "--keep-ended", str(3.0 / 86400)]
d.start()
jk = d.post("/v1/jobs", dict(long_job, steps=20, name="kept-3s"), A).json()
ek = d.wait_job(jk["id"], A, timeout=120)
folder = (ek.get("deployment") or {}).get("dir") or ""
check("the short job ended, its folder there", ek["state"] == "succeeded" and os.path.isdir(folder), ek)
jr = d.post("/v1/jobs", long_job, A).json()
d.wait_job(jr["id"], A, states=("running",), timeout=60)
gone = False
for _ in range(150):
    if d.get("/v1/jobs/%d" % jk["id"], A).status == 404:
        gone = True
        break
    time.sleep(0.1)
check("--keep-ended removes an ended job once its time is up", gone and not os.path.exists(folder), folder)
check("the log says so", any(x.get("msg") == "retention: job removed" and x.get("job") == jk["id"]
                             for x in d.log_lines()))
time.sleep(4)
check("a running job is not removed", d.get("/v1/jobs/%d" % jr["id"], A).json()["state"] == "running")
d.post("/v1/jobs/%d/cancel" % jr["id"], None, A)
d.wait_job(jr["id"], A, timeout=60)
check("SIGTERM stops it cleanly (retention)", d.stop() == 0)
d.cleanup()
finish()
