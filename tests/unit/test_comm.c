/*
 * test_comm.c - the all-reduce model (lib/estimate/comm.c): bucket by
 * bucket against an event-by-event reference written out again, the
 * textbook ring and recursive-doubling times, the overlap with backward
 * (the last bucket is never hidden), the tree chosen only where it is
 * faster, and `predict --nodes` through the estimator: one node is the
 * plain prediction, a slower network or more nodes cost more, bad node
 * counts are refused by name.
 */
#include <math.h>
#include <string.h>

#include "hetpool/estimate.h"
#include "hetpool/model.h"
#include "test.h"

static void net(struct hp_comm_net *n, int k, int m, double gbps)
{
	hp_comm_net_default(n, k, m, 100e9, gbps, 5);
}

/* A bucket's all-reduce, written out again: ring inside (2 (k-1)
 * messages of b/k), across the better of a ring and recursive doubling. */
static double ref_bucket(const struct hp_comm_net *n, double b)
{
	int k = n->per_node, m = n->nodes, r = 0;
	double t = 0, bw = n->net_bw_bytes_s * n->net_efficiency;
	double step = 2 * n->net_latency_s + n->net_msg_s, ring, tree;

	for (int s = 0; s < 2 * (k - 1); s++)
		t += b / k / n->intra_bw_bytes_s + n->intra_msg_s;
	if (m > 1) {
		ring = 0;
		for (int s = 0; s < 2 * (m - 1); s++)
			ring += b / m / bw + step;
		while ((1 << r) < m)
			r++;
		tree = r * (b / bw + step);
		t += fmin(ring, tree);
	}
	return t;
}

HP_TEST(comm_buckets_match_reference)
{
	static const int ks[] = {1, 2, 4, 8}, ms[] = {1, 2, 3, 4, 16, 64};
	static const double gs[] = {1e3, 1e6, 25 * 1048576.0, 1e8, 4.4e7};

	for (int a = 0; a < 4; a++)
		for (int c = 0; c < 6; c++)
			for (int i = 0; i < 5; i++) {
				struct hp_comm_net n;
				struct hp_comm_time t;
				double ref = 0, left = gs[i];
				int nb = 0;

				net(&n, ks[a], ms[c], 10);
				hp_comm_ddp(&n, gs[i], 0, &t);
				for (; left > 0; left -= 25 * 1048576.0, nb++)
					ref += ref_bucket(
					    &n, fmin(left, 25 * 1048576.0));
				if (ks[a] == 1 && ms[c] == 1)
					ref = 0, nb = 0;
				if (!(fabs(t.total_s - ref) <=
				      1e-12 + 1e-9 * ref))
					HP_FAIL("k %d m %d g %.0f: %g vs %g",
						ks[a], ms[c], gs[i], t.total_s,
						ref);
				ASSERT_EQ_INT(t.buckets, nb);
				ASSERT(t.exposed_s == t.total_s);
			}
}

HP_TEST(comm_textbook_ring_and_doubling)
{
	struct hp_comm_net n;
	double b = 8e6, bw;

	/* No latency, no overhead: a ring of 4 nodes moves 2 x 3/4 of the
	 * message over each link; 2 nodes, recursive doubling one exchange
	 * (equal to the ring's 2 x 1/2: the ring is kept). */
	net(&n, 1, 4, 8);
	n.net_latency_s = n.net_msg_s = 0;
	n.net_efficiency = 1;
	bw = 1e9;
	ASSERT(fabs(hp_comm_inter_s(&n, b, NULL) - 1.5 * b / bw) < 1e-12);
	n.nodes = 2;
	ASSERT(fabs(hp_comm_inter_s(&n, b, NULL) - b / bw) < 1e-12);
	/* Latency-bound: 64 nodes, 4 KB: 6 doubling rounds beat 126 ring
	 * steps. */
	{
		bool tree = false;
		double t;
		net(&n, 1, 64, 10);
		t = hp_comm_inter_s(&n, 4096, &tree);
		ASSERT(tree);
		ASSERT(fabs(t - 6 * (4096 / (1.25e9 * n.net_efficiency) +
				     2 * 5e-6 + n.net_msg_s)) < 1e-12);
		hp_comm_inter_s(&n, 1e9, &tree);
		ASSERT(!tree);
	}
}

HP_TEST(comm_overlap_hides_all_but_the_last_bucket)
{
	struct hp_comm_net n;
	struct hp_comm_time t0, t, tlong;
	double g = 1e8, last, prev;

	net(&n, 4, 4, 10);
	hp_comm_ddp(&n, g, 0, &t0);
	ASSERT_EQ_INT(t0.buckets, 4);
	/* Backward far longer than the all-reduce: only the last bucket
	 * (g - 3 x 25 MiB) is left after it. */
	hp_comm_ddp(&n, g, 100, &tlong);
	last = hp_comm_intra_s(&n, g - 3 * 25 * 1048576.0) +
	       hp_comm_inter_s(&n, g - 3 * 25 * 1048576.0, NULL);
	ASSERT(fabs(tlong.exposed_s - last) < 1e-9);
	ASSERT(fabs(tlong.total_s - t0.total_s) < 1e-12);
	/* More backward never exposes more. */
	prev = t0.exposed_s;
	for (double bw = 0.001; bw < 10; bw *= 1.7) {
		hp_comm_ddp(&n, g, bw, &t);
		ASSERT(t.exposed_s <= prev + 1e-12);
		ASSERT(t.exposed_s >= last - 1e-12);
		prev = t.exposed_s;
	}
}

HP_TEST(comm_predict_nodes)
{
	struct hp_error err = {0};
	struct hp_catalog *cat;
	struct hp_estimator *est;
	struct hp_graph *g;
	struct hp_workload w;
	struct hp_prediction a, b, c, d;

	cat = hp_catalog_load(hp_test_path("data/devices.csv"), &err);
	ASSERT(cat);
	est = hp_estimator_load(hp_test_path("data/estimators/default.json"),
				&err);
	ASSERT(est);
	g = hp_model_load(hp_test_path("data/models/resnet50.train.onnx"),
			  &err);
	if (!g)
		HP_FAIL("%s", err.msg);
	ASSERT_EQ_INT(hp_workload_from_graph(g, 32, NULL, 0, &w, &err), 0);
	ASSERT_EQ_INT(
	    hp_estimator_predict(est, cat, &w, "t4", 16, -1, &a, &err), 0);
	ASSERT_EQ_INT(hp_estimator_predict_nodes(est, cat, &w, "t4", 16, 1, 0,
						 0, -1, &b, &err),
		      0);
	ASSERT(a.step_time_s == b.step_time_s &&
	       a.comm_time_s == b.comm_time_s);
	ASSERT_EQ_INT(hp_estimator_predict_nodes(est, cat, &w, "t4", 16, 4, 50,
						 5, -1, &c, &err),
		      0);
	ASSERT_EQ_INT(hp_estimator_predict_nodes(est, cat, &w, "t4", 16, 4, 6,
						 5, -1, &d, &err),
		      0);
	ASSERT(c.comm_time_s > b.comm_time_s);
	ASSERT(d.comm_time_s > 2 * c.comm_time_s);
	ASSERT(d.step_time_s > c.step_time_s);
	ASSERT_EQ_INT(hp_estimator_predict_nodes(est, cat, &w, "t4", 16, 3, 50,
						 5, -1, &d, &err),
		      HP_EINVAL);
	ASSERT(strstr(err.msg, "3 nodes for 16 devices"));
	ASSERT_EQ_INT(hp_estimator_predict_nodes(est, cat, &w, "t4", 16, 4, 0,
						 5, -1, &d, &err),
		      HP_EINVAL);
	hp_workload_release(&w);
	hp_graph_free(g);
	hp_estimator_free(est);
	hp_catalog_free(cat);
}
