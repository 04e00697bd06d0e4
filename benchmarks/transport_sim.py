#!/usr/bin/env python3
"""transport_sim.py - what the network transport does to the recommender's
choices, by simulation (no GPU or NCCL runs here).

The issue's T4 cluster: 16 nodes of 4 T4s on 50 Gbit/s Ethernet, whose
measured steps implied about 6 Gbit/s of effective bandwidth a link. This
asks `hetpool recommend` for the CIFAR ResNet-18 at global batches 256 to
2,048 and deadlines from the tightest to 20x looser, twice: with the pool
saying nothing of its transport (auto: NCCL over sockets on a GPU node,
0.43 of the line rate) and with `net_transport: tcp` (MPI's 0.90, what
every pool got before transports). Each choice is then costed on a
"truth" pool whose links carry 6 Gbit/s (net_bw_gbps 6.67 at TCP's 0.90)
with the same estimator for compute, at the point (confidence 0.5): the
only thing that differs from the recommender's own view is the network.
It is a simulation: the truth's compute is the estimator's, not a
measurement. Prints, per variant, how many choices meet their deadline
under the truth and how many nodes they use.

Usage: benchmarks/transport_sim.py [BUILD_DIR]    (about a minute)
"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build")
HP = os.path.join(BUILD, "bin", "hetpool")
MODEL = os.path.join(ROOT, "data", "models", "resnet18_cifar.train.onnx")
SAMPLES, EPOCHS = 50000, 10
BATCHES = (256, 512, 1024, 2048)
LOOSE = (1.0, 1.03, 1.1, 1.2, 1.4, 2, 4, 8, 20)
NODES = 16


def pool(path, gbps, transport):
    nodes = []
    for i in range(NODES):
        n = {"name": "t4-%02d" % i,
             "devices": [{"type": "t4", "count": 4}],
             "cpu_cores": 32, "memory_gb": 256, "intra_bw_gbps": 128,
             "net_bw_gbps": gbps, "net_latency_us": 10,
             "base_power_w": 350}
        if transport:
            n["net_transport"] = transport
        nodes.append(n)
    with open(path, "w") as f:
        json.dump({"nodes": nodes}, f)


def recommend(pool_path, batch, deadline, *extra):
    r = subprocess.run(
        [HP, "recommend", MODEL, "--pool", pool_path, "--samples",
         str(SAMPLES), "--epochs", str(EPOCHS), "--batch", str(batch),
         "--deadline", "%.3f" % deadline, "--device-type", "t4",
         "--max-mix", "1", "--front", "0", "--json", *extra],
        capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("recommend failed: " + r.stderr.strip())
    return json.loads(r.stdout)


def verdict(x):
    v = "met" if x["truth"] <= x["deadline"] else "MISSED"
    return v + ("" if x["feasible"] else " [infeasible]")


def main():
    if not os.access(HP, os.X_OK):
        print("skip transport_sim: no %s" % HP)
        return
    tmp = tempfile.mkdtemp()
    p_auto, p_tcp, p_truth = (os.path.join(tmp, n) for n in
                              ("auto.json", "tcp.json", "truth.json"))
    pool(p_auto, 50, None)
    pool(p_tcp, 50, "tcp")
    pool(p_truth, 6 / 0.9, "tcp")
    res = {"auto": [], "tcp": []}
    for b in BATCHES:
        # the tightest deadline: the fastest the old view predicts
        fast = recommend(p_tcp, b, 1)["choice"]["judged_time_s"]
        for k in LOOSE:
            dl = fast * k
            for name, p in (("auto", p_auto), ("tcp", p_tcp)):
                rr = recommend(p, b, dl)
                c = rr["choice"]
                devs, nodes = c["device_count"], c["nodes"]
                t = recommend(p_truth, b, 3e8, "--devices", str(devs),
                              "--nodes", str(nodes), "--confidence",
                              "0.5")["choice"]
                res[name].append(dict(batch=b, k=k, deadline=dl, devs=devs,
                                      feasible=rr["feasible"],
                                      nodes=nodes,
                                      judged=c["judged_time_s"],
                                      truth=t["predicted_time_s"],
                                      energy=t["predicted_energy_j"]))
    print("CIFAR ResNet-18, %d samples x %d epochs, 16 nodes of 4 T4s at 50 "
          "Gbit/s; truth: 6 Gbit/s a link" % (SAMPLES, EPOCHS))
    print("%5s %6s | %-28s | %-28s" % ("batch", "x fast", "auto (sockets): devs/nodes truth/deadline",
                                      "tcp (before): devs/nodes truth/deadline"))
    for i in range(len(res["auto"])):
        a, t = res["auto"][i], res["tcp"][i]
        print("%5d %6.2f | %5d/%-3d %6.2f %-12s | %5d/%-3d %6.2f %-12s" % (
            a["batch"], a["k"], a["devs"], a["nodes"], a["truth"] / a["deadline"],
            verdict(a), t["devs"], t["nodes"], t["truth"] / t["deadline"],
            verdict(t)))
    for name in ("auto", "tcp"):
        r = res[name]
        met = sum(x["truth"] <= x["deadline"] for x in r)
        said = [x for x in r if x["feasible"]]
        held = sum(x["truth"] <= x["deadline"] for x in said)
        multi = sum(x["nodes"] > 1 for x in r)
        print("%-4s: %d of %d choices meet their deadline under the truth; of the "
              "%d said to meet it (at the 90th percentile), %d do; %d choices on "
              "more than one node" % (name, met, len(r), len(said), held, multi))


if __name__ == "__main__":
    main()
