"""queue.py - every queued job is tried: a job behind a long queue of jobs
that cannot start starts as soon as devices it can use are free.

Pool: one node of 1 T4, one of 1 A100.  Job X takes the A100, job A the
T4; then 70 jobs for the T4 queue behind A, and job Y for the A100 behind
them.  Cancelling X frees the A100: Y must start.  (Until 3 December the
scheduler tried at most 64 queued jobs a walk, from the head of the queue
each time, so Y waited forever.)  Jobs run through the kubernetes backend
with --no-apply: nothing trains.
"""
import json
import os
import time

from hplib import SPEC, Daemon, check, fail, finish, ok, poll

AHEAD = 70


def node(name, gpu):
    return {"name": name, "devices": [{"type": gpu, "count": 1}],
            "cpu_cores": 8, "memory_gb": 64, "intra_bw_gbps": 32,
            "net_bw_gbps": 10, "net_latency_us": 5, "base_power_w": 200}


d = Daemon(["--backend", "kubernetes", "--no-apply", "--poll", "0.2",
            "--log-level", "warn"])
pool = os.path.join(d.tmp, "two.json")
with open(pool, "w") as f:
    json.dump({"nodes": [node("t4n", "t4"), node("a1n", "a100-80")]}, f)
d.args += ["--pool", pool]
d.start()
A = d.admin


def submit(gpu):
    r = d.post("/v1/jobs", {"spec": SPEC, "data": "synthetic", "samples": 6400,
                            "steps": 20, "batch": 64, "deadline_s": 86400 * 30,
                            "constraints": {"device_type": gpu}}, A)
    if r.status != 201:
        raise RuntimeError("submit %s: %r" % (gpu, r))
    return r.json()["id"]


def state(jid):
    return d.get("/v1/jobs/%d" % jid, A).json()


try:
    x = submit("a100-80")
    a = submit("t4")
    ahead = [submit("t4") for _ in range(AHEAD)]
    y = submit("a100-80")
    # until X and A are placed (a bound, not a speed assertion); Y, behind
    # them, must still be queued then
    poll(lambda: (state(x)["state"], state(a)["state"]),
         lambda s: "queued" not in s, timeout=30)
    check("queue_set_up", state(x)["state"] != "queued" and state(a)["state"] != "queued"
          and state(y)["state"] == "queued",
          "X %s, A %s, Y %s" % (state(x)["state"], state(a)["state"], state(y)["state"]))
    r = d.post("/v1/jobs/%d/cancel" % x, None, A)
    check("queue_cancel_x", r.status in (200, 202), r)
    t0 = time.time()
    j = state(y)
    while j["state"] == "queued" and time.time() - t0 < 30:
        time.sleep(0.3)
        j = state(y)
    check("queue_behind_many_starts", j["state"] != "queued",
          "after %.0f s Y is %s: %s" % (time.time() - t0, j["state"], j.get("reason")))
    left = sum(state(k)["state"] == "queued" for k in ahead)
    check("queue_ahead_still_wait", left == AHEAD, "%d of %d still queued" % (left, AHEAD))
except Exception as e:  # noqa: BLE001
    fail("queue", e)
finally:
    d.cleanup()
finish()
