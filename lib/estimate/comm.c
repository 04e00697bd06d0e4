/*
 * comm.c - the data-parallel gradient all-reduce: one model of its time,
 * used by the estimator (`predict --devices K --nodes N`) and by the
 * recommender.  Gradients go in buckets (PyTorch DDP's 25 MiB), each
 * bucket all-reduced hierarchically (a ring inside a node, the better of a
 * ring and a tree across nodes), each message paying its latency and
 * overhead, the bandwidth that of the slowest link; a bucket starts when
 * backward has produced its gradients.  docs/estimator.md ("Multi-GPU")
 * gives the formulas and the measurements the constants come from.
 */
#include <math.h>
#include <string.h>

#include "hetpool/estimate.h"
#include "util/banned.h"

static int ceil_log2(int m)
{
	int s = 0;

	while ((1 << s) < m && s < 30)
		s++;
	return s;
}

double hp_comm_intra_s(const struct hp_comm_net *n, double bytes)
{
	int k = n->per_node;

	if (k <= 1 || !(bytes > 0))
		return 0;
	/* Ring reduce-scatter then all-gather: 2 (k-1) steps, each moving
	 * bytes / k over every link at once. */
	return 2.0 * (k - 1) / k * bytes / n->intra_bw_bytes_s +
	       2.0 * (k - 1) * n->intra_msg_s;
}

double hp_comm_inter_s(const struct hp_comm_net *n, double bytes, bool *tree)
{
	int m = n->nodes, s;
	double step, bw, ring, tr;

	if (tree)
		*tree = false;
	if (m <= 1 || !(bytes > 0))
		return 0;
	/* Each step crosses two hops (node, switch, node) and is one message
	 * of software overhead; bytes go at the share of the line rate the
	 * transport achieves (measured: TCP under MPI). */
	step = 2 * n->net_latency_s + n->net_msg_s;
	bw = n->net_bw_bytes_s * n->net_efficiency;
	/* The node's devices each all-reduce their 1/k shard across nodes
	 * at once: the node's link carries the whole bucket either way. */
	ring = 2.0 * (m - 1) / m * bytes / bw + 2.0 * (m - 1) * step;
	/* Tree (recursive doubling): ceil(log2 m) steps, each exchanging
	 * the whole bucket; wins on small buckets over many nodes. */
	s = ceil_log2(m);
	tr = s * (bytes / bw + step);
	if (tr < ring) {
		if (tree)
			*tree = true;
		return tr;
	}
	return ring;
}

void hp_comm_ddp(const struct hp_comm_net *n, double grad_bytes,
		 double backward_s, struct hp_comm_time *out)
{
	double bucket =
	    n->bucket_bytes > 0 ? n->bucket_bytes : HP_COMM_BUCKET_BYTES;
	double done = 0, finish = 0, left;

	memset(out, 0, sizeof(*out));
	if ((n->per_node <= 1 && n->nodes <= 1) || !(grad_bytes > 0))
		return;
	if (!(backward_s > 0)) {
		/* No overlap: whole buckets alike, the last one smaller. */
		double full = floor(grad_bytes / bucket);
		double rem = grad_bytes - full * bucket;
		bool tree = false;

		out->buckets = (int)full + (rem > 0);
		out->intra_s =
		    full * hp_comm_intra_s(n, bucket) + hp_comm_intra_s(n, rem);
		out->inter_s = full * hp_comm_inter_s(n, bucket, &tree);
		out->tree_buckets = tree ? (int)full : 0;
		out->inter_s += hp_comm_inter_s(n, rem, &tree);
		out->tree_buckets += tree && rem > 0;
		out->total_s = out->exposed_s = out->intra_s + out->inter_s;
		return;
	}
	/* Buckets of `bucket` bytes, the last one smaller, all-reduced one
	 * after another; bucket i is ready when backward has produced its
	 * gradients (gradients assumed to come out at an even rate). */
	for (left = grad_bytes; left > 0; left -= bucket) {
		double b = left < bucket ? left : bucket;
		bool tree = false;
		double ti = hp_comm_intra_s(n, b);
		double tx = hp_comm_inter_s(n, b, &tree);
		double ready = backward_s * (done + b) / grad_bytes;

		done += b;
		out->buckets++;
		out->intra_s += ti;
		out->inter_s += tx;
		if (tree)
			out->tree_buckets++;
		finish = (finish > ready ? finish : ready) + ti + tx;
	}
	out->total_s = out->intra_s + out->inter_s;
	out->exposed_s = finish - backward_s;
	if (out->exposed_s < 0)
		out->exposed_s = 0;
}

void hp_comm_net_default(struct hp_comm_net *n, int per_node, int nodes,
			 double intra_bw_bytes_s, double net_bw_gbps,
			 double net_latency_us)
{
	memset(n, 0, sizeof(*n));
	n->per_node = per_node;
	n->nodes = nodes;
	n->intra_bw_bytes_s = intra_bw_bytes_s;
	n->intra_msg_s = HP_COMM_INTRA_MSG_S;
	n->net_bw_bytes_s = net_bw_gbps * 1e9 / 8;
	n->net_latency_s = net_latency_us * 1e-6;
	n->net_msg_s = HP_COMM_NET_MSG_S;
	n->net_efficiency = HP_COMM_NET_EFFICIENCY;
	n->bucket_bytes = HP_COMM_BUCKET_BYTES;
}

/* Each transport's figures (estimate.h), by enum hp_net_transport;
 * HP_NET_AUTO, not resolved, is TCP's. */
static const struct transport_fig {
	double efficiency, msg_s, log_q90;
} transport_figs[] = {
    [HP_NET_AUTO] = {HP_COMM_NET_EFFICIENCY, HP_COMM_NET_MSG_S,
		     HP_COMM_TCP_LOG_Q90},
    [HP_NET_TCP] = {HP_COMM_NET_EFFICIENCY, HP_COMM_NET_MSG_S,
		    HP_COMM_TCP_LOG_Q90},
    [HP_NET_SOCKET] = {HP_COMM_SOCKET_EFFICIENCY, HP_COMM_SOCKET_MSG_S,
		       HP_COMM_SOCKET_LOG_Q90},
    [HP_NET_RDMA] = {HP_COMM_RDMA_EFFICIENCY, HP_COMM_RDMA_MSG_S,
		     HP_COMM_RDMA_LOG_Q90},
};

static const struct transport_fig *fig(enum hp_net_transport t)
{
	if ((int)t < 0 ||
	    (size_t)t >= sizeof(transport_figs) / sizeof(transport_figs[0]))
		t = HP_NET_TCP;
	return &transport_figs[t];
}

void hp_comm_net_transport(struct hp_comm_net *n, enum hp_net_transport t)
{
	n->net_efficiency = fig(t)->efficiency;
	n->net_msg_s = fig(t)->msg_s;
}

double hp_comm_transport_efficiency(enum hp_net_transport t)
{
	return fig(t)->efficiency;
}

double hp_comm_transport_log_q90(enum hp_net_transport t)
{
	return fig(t)->log_q90;
}
