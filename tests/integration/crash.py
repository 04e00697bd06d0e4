"""crash.py - SIGKILL hetpoold in the middle of a burst of concurrent
submissions and cancellations, ROUNDS times (default 100; HP_CRASH_ROUNDS
to change), on one database.  After each restart:
  - every job whose submission was answered 2xx is there (in the database
    and through GET /v1/jobs/ID);
  - no device is held by two jobs (checked in the database itself, with
    SQL of its own, not through the store's code);
  - no device is held by a job that does not exist, is queued or has
    ended;
  - every cancel answered 200 left its job cancelled.
The jobs run through the kubernetes backend with --no-apply (manifests
written, nothing started), so the test costs no training: what it tests
is the allocation and the record, which do not depend on the backend.
"""
import json
import os
import random
import sqlite3
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from hplib import *  # noqa: E402,F403

ROUNDS = int(os.environ.get("HP_CRASH_ROUNDS", "100"))
THREADS = int(os.environ.get("HP_CRASH_THREADS", "6"))
SAMPLE = os.path.join(ROOT, "data", "pools", "sample.json")
TYPES = ["t4", "v100", "a100-80", "l4", "h100-sxm"]
rng = random.Random(int(os.environ.get("HP_CRASH_SEED", "12")))

d = Daemon(["--pool", SAMPLE, "--backend", "kubernetes", "--no-apply", "--poll", "0.1",
            "--threads", "4", "--log-level", "warn"])
d.start()
A = d.admin
U = d.new_token("crash", "user")["token"]
d.args = [a for a in d.args if a not in ("--pool", SAMPLE)]

acked = set()         # ids answered 201
cancelled_ok = set()  # ids whose cancel was answered 200
lock = threading.Lock()
stop = threading.Event()


def burst(seed):
    r = random.Random(seed)
    while not stop.is_set():
        try:
            if r.random() < 0.6 or not acked:
                body = {"spec": SPEC, "samples": 60000, "epochs": 1, "batch": 256,
                        "deadline_s": r.choice([600, 3600, 86400]), "data": "synthetic",
                        "constraints": {"device_type": r.choice(TYPES),
                                        "devices": r.choice([1, 2, 4, 8])}}
                x = d.post("/v1/jobs", body, U, timeout=10)
                if x.status == 201:
                    with lock:
                        acked.add(x.json()["id"])
            else:
                with lock:
                    jid = r.choice(sorted(acked))
                x = d.post("/v1/jobs/%d/cancel" % jid, None, U, timeout=10)
                if x.status == 200:
                    with lock:
                        cancelled_ok.add(jid)
        except Exception:  # noqa: BLE001 - the server was killed
            time.sleep(0.01)


def invariants(round_no):
    """What must hold after a restart; a list of what does not."""
    bad = []
    con = sqlite3.connect("file:%s?mode=ro" % d.db, uri=True, timeout=30)
    ids = {row[0] for row in con.execute("SELECT id FROM jobs")}
    lost = acked - ids
    if lost:
        bad.append("jobs answered 201 are gone: %s" % sorted(lost)[:10])
    twice = con.execute(
        "SELECT device_id, count(*) FROM allocations WHERE released_s IS NULL "
        "GROUP BY device_id HAVING count(*) > 1").fetchall()
    twice += con.execute(
        "SELECT node || '/' || type || '/' || idx, count(*) FROM allocations "
        "WHERE released_s IS NULL GROUP BY node, type, idx HAVING count(*) > 1").fetchall()
    if twice:
        bad.append("devices held by two jobs: %s" % twice[:5])
    orphans = con.execute(
        "SELECT a.job_id, j.state FROM allocations a LEFT JOIN jobs j ON j.id = a.job_id "
        "WHERE a.released_s IS NULL AND (j.id IS NULL OR j.state NOT IN ('starting', 'running'))"
    ).fetchall()
    if orphans:
        bad.append("devices held by jobs that do not exist, wait or ended: %s" % orphans[:5])
    not_cancelled = [i for i, s in con.execute("SELECT id, state FROM jobs")
                     if i in cancelled_ok and s != "cancelled"]
    if not_cancelled:
        bad.append("cancels answered 200 but not cancelled: %s" % not_cancelled[:5])
    over = con.execute(
        "SELECT d.type, count(*) FROM allocations a JOIN devices d ON d.id = a.device_id "
        "WHERE a.released_s IS NULL AND (d.reserved = 1) GROUP BY d.type").fetchall()
    if over:
        bad.append("reserved devices allocated: %s" % over)
    con.close()
    for jid in rng.sample(sorted(acked), min(5, len(acked))):
        x = d.get("/v1/jobs/%d" % jid, U)
        if x.status != 200 or x.json()["id"] != jid:
            bad.append("GET /v1/jobs/%d: %r" % (jid, x))
    return bad


t0 = time.time()
failed_rounds = []
for rnd in range(ROUNDS):
    stop.clear()
    ths = [threading.Thread(target=burst, args=(rnd * 100 + i,)) for i in range(THREADS)]
    for t in ths:
        t.start()
    time.sleep(rng.uniform(0.05, 0.5))
    d.kill()  # SIGKILL, mid-burst
    stop.set()
    for t in ths:
        t.join()
    d.start()
    bad = invariants(rnd)
    if bad:
        failed_rounds.append((rnd, bad))
        print("round %d: %s" % (rnd, "; ".join(bad)), flush=True)
elapsed = time.time() - t0
con = sqlite3.connect("file:%s?mode=ro" % d.db, uri=True)
states = dict(con.execute("SELECT state, count(*) FROM jobs GROUP BY state").fetchall())
held = con.execute("SELECT count(*) FROM allocations WHERE released_s IS NULL").fetchone()[0]
failed_jobs = con.execute("SELECT id, reason FROM jobs WHERE state = 'failed'").fetchall()
for jid, reason in failed_jobs[:5]:
    print("crash: job %d failed: %s" % (jid, reason), flush=True)
con.close()
check("every failed job says why", all(r for _, r in failed_jobs), failed_jobs[:5])
# the scheduler's pass and a submission's own start race for a new job; the
# loser must let it be (it once failed a job it had not started: "only a
# queued job starts")
raced = [(j, r) for j, r in failed_jobs if "only a queued job" in (r or "")]
check("no job is failed by losing the race to start it", not raced, raced[:5])
con = sqlite3.connect("file:%s?mode=ro" % d.db, uri=True)
told = con.execute("SELECT id, reason FROM jobs WHERE state = 'cancelled' AND "
                   "(reason IS NULL OR reason NOT LIKE 'cancelled%')").fetchall()
con.close()
# a cancel's "cancelled by NAME" is kept (the backend's "apply the
# manifests" once replaced it: advice to start a cancelled job)
check("every cancelled job says it was cancelled", not told, told[:5])
print("crash: %d SIGKILLs in %.0f s; %d submissions answered 201, %d cancels answered 200; "
      "jobs by state %s; devices held now %d" % (ROUNDS, elapsed, len(acked), len(cancelled_ok),
                                                 json.dumps(states), held), flush=True)
check("%d SIGKILLs mid-burst: every job answered 201 is there, no device held twice "
      "or by a job that does not hold it" % ROUNDS, not failed_rounds, failed_rounds[:3])
check("the bursts did submit and cancel", len(acked) > ROUNDS and len(cancelled_ok) > 0,
      (len(acked), len(cancelled_ok)))
rc = d.stop()
check("after the crashes SIGTERM still stops it cleanly", rc == 0, rc)
d.cleanup()
finish()
