/*
 * pool.h - a pool of nodes that training jobs can run on: each node's
 * devices (catalog type, count, how many are free), its CPU cores and
 * memory, the bandwidth between its devices and to the network, its
 * network latency and the node's own power draw.  The pool file is JSON
 * (docs/recommender.md, data/pools/sample.json).
 *
 * Ownership: hp_pool_parse() / hp_pool_load() return a pool the caller
 * frees with hp_pool_free(); the nodes, names and device lists inside
 * belong to the pool.
 */
#ifndef HETPOOL_POOL_H
#define HETPOOL_POOL_H

#include <stdbool.h>
#include <stddef.h>

#include "hetpool/device.h"
#include "hetpool/util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest pool file read (bytes), most nodes, most devices of a kind on a
 * node, most device kinds on a node. */
#define HP_POOL_MAX_BYTES (64u << 20)
#define HP_POOL_MAX_NODES 100000
#define HP_POOL_MAX_DEVICES 4096
#define HP_POOL_MAX_KINDS 64

/*
 * How a node's all-reduce traffic crosses the network, which decides how
 * much of the line rate it gets (docs/estimator.md, "Transports"):
 * - HP_NET_TCP: MPI over TCP, as hetpool-train's CPU ranks run (measured
 *   here);
 * - HP_NET_SOCKET: NCCL's socket transport (Ethernet without RDMA);
 * - HP_NET_RDMA: InfiniBand or RoCE with NCCL's IB transport;
 * - HP_NET_AUTO: not said: HP_NET_SOCKET for a node with a GPU,
 *   HP_NET_TCP for a CPU-only node (hp_pool_node_transport()).
 */
enum hp_net_transport {
	HP_NET_AUTO = 0,
	HP_NET_TCP,
	HP_NET_SOCKET,
	HP_NET_RDMA,
};

/* "auto", "tcp", "socket", "rdma". */
const char *hp_net_transport_name(enum hp_net_transport t);
/* Parse one of the names above; 0, or HP_EINVAL for anything else (*out
 * is then left alone). */
int hp_net_transport_parse(const char *s, enum hp_net_transport *out);
/* The names as an error message lists them. */
#define HP_NET_TRANSPORT_CHOICES "\"auto\", \"tcp\", \"socket\" or \"rdma\""

/* One kind of device on a node. */
struct hp_pool_dev {
	char type[32]; /* the catalog's id (aliases are resolved) */
	int count;     /* installed */
	int free;      /* not taken by other jobs: 0..count */
};

struct hp_pool_node {
	char *name;
	struct hp_pool_dev *devs;
	int ndevs;
	int cpu_cores;
	double memory_gb;      /* host memory, 10^9 bytes */
	double intra_bw_gbps;  /* between the node's devices (NVLink, PCIe),
				  10^9 bits/s per direction */
	double net_bw_gbps;    /* node to network, 10^9 bits/s */
	double net_latency_us; /* node to network, one hop */
	double base_power_w;   /* the node's own draw (CPUs, memory, fans,
				  NICs) while a job uses it */
	enum hp_net_transport net_transport; /* "net_transport", optional */
};

struct hp_pool {
	struct hp_pool_node *nodes;
	int n;
	char *path; /* the file it came from ("" for memory) */
};

/*
 * Parse a pool from JSON text: {"nodes": [{"name", "devices": [{"type",
 * "count", "free"}], "cpu_cores", "memory_gb", "intra_bw_gbps",
 * "net_bw_gbps", "net_latency_us", "base_power_w", "net_transport"},
 * ...]}.  "free" defaults to "count", "net_transport" (one of
 * hp_net_transport_name()'s names) to "auto"; every other field is
 * required; unknown keys are
 * ignored.  Each number must lie in its range (docs/recommender.md); a
 * node name or device type holding a control character is refused (names
 * are identifiers).  With cat, device types must be catalog ids or
 * aliases and are stored as ids; without, names are kept as written.  Bad
 * input is refused with HP_EPARSE and a lowercase message naming the file
 * (path; "pool" alone when path is NULL or ""), the node and the key,
 * e.g. "pool 'p.json': node 'n3': 'net_bw_gbps' = -1 is out of range
 * [0.001, 10000]".  The result is the caller's (hp_pool_free()); NULL on
 * failure.
 */
struct hp_pool *hp_pool_parse(const char *text, size_t len, const char *path,
			      const struct hp_catalog *cat,
			      struct hp_error *err);
/* Read and parse a pool file; NULL with err set on failure. */
struct hp_pool *hp_pool_load(const char *path, const struct hp_catalog *cat,
			     struct hp_error *err);
/* Free a pool; NULL is a no-op. */
void hp_pool_free(struct hp_pool *p);

/* t, with HP_NET_AUTO resolved for a node that has a GPU (HP_NET_SOCKET)
 * or only CPUs (HP_NET_TCP). */
enum hp_net_transport hp_net_transport_resolve(enum hp_net_transport t,
					       bool has_gpu);
/* The node's transport with HP_NET_AUTO resolved: HP_NET_SOCKET when a
 * device of the node is not a CPU (cat: the catalog, to tell; without
 * it, a type named "cpu" or starting "cpu-" is a CPU), else HP_NET_TCP. */
enum hp_net_transport hp_pool_node_transport(const struct hp_pool_node *nd,
					     const struct hp_catalog *cat);

/* Free devices of a type over the whole pool. */
long hp_pool_free_of(const struct hp_pool *p, const char *type);

#ifdef __cplusplus
}
#endif
#endif /* HETPOOL_POOL_H */
