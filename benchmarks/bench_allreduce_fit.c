/*
 * bench_allreduce_fit.c - fit the all-reduce model's network constants (the
 * per-message overhead and the payload efficiency of hp_comm_net) on part
 * of the namespace measurements of benchmarks/allreduce_netns.sh and test
 * the model on the rest, out of sample.  Each (ranks, rate, size) is
 * measured with Open MPI's ring and with recursive doubling; the model
 * takes the better of a ring and a tree, so it is compared with the
 * faster of the two.  The constants are fitted by a grid search on the
 * mean |log(predicted / measured)| of the training rows.
 *
 * usage: bench_allreduce_fit FILE.tsv TRAIN_RANKS [MIN_BYTES [MAX_MBPS]]
 *   rows with TRAIN_RANKS ranks fit; rows with other rank counts (more
 *   than 2; see docs/estimator.md for 2) test.  MIN_BYTES (default 0)
 *   leaves smaller messages out of both, MAX_MBPS (default: none) faster
 *   links (where this machine's CPUs, not the link, set the pace).
 * Also: bench_allreduce_fit --predict RANKS RATE_MBPS BYTES (the shipped
 * constants; prints seconds), for tests/cli/allreduce_netns.sh.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hetpool/estimate.h"

struct row {
	int ranks;
	double mbps, bytes, meas_s;
};

static double predict(int ranks, double mbps, double bytes, double msg_s,
		      double eff)
{
	struct hp_comm_net n;

	hp_comm_net_default(&n, 1, ranks, 0, mbps / 1000, 0);
	n.net_msg_s = msg_s;
	n.net_efficiency = eff;
	return hp_comm_inter_s(&n, bytes, NULL);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void report(const char *what, const struct row *r, int n, int train,
		   int min_ranks, double msg_s, double eff)
{
	double *ape = malloc((size_t)n * sizeof(double)), sum = 0;
	int k = 0, within = 0;

	if (!ape)
		exit(1);
	for (int i = 0; i < n; i++) {
		double p, e;
		if ((train >= 0 && (r[i].ranks == train) != (what[0] == 'f')) ||
		    r[i].ranks < min_ranks)
			continue;
		if (train < 0 && r[i].ranks != min_ranks)
			continue;
		p = predict(r[i].ranks, r[i].mbps, r[i].bytes, msg_s, eff);
		e = fabs(p / r[i].meas_s - 1) * 100;
		printf("%s\t%d\t%.0f\t%.0f\t%.4g\t%.4g\t%+.1f%%\n", what,
		       r[i].ranks, r[i].mbps, r[i].bytes, r[i].meas_s, p,
		       (p / r[i].meas_s - 1) * 100);
		ape[k++] = e;
		sum += e;
		within += e <= 25;
	}
	if (k) {
		qsort(ape, (size_t)k, sizeof(*ape), cmp_double);
		printf("# %s: %d rows, MAPE %.1f%%, median %.1f%%, 90th pct "
		       "%.1f%%, worst %.1f%%, within 25%%: %d of %d\n",
		       what, k, sum / k, ape[k / 2], ape[(int)(0.9 * (k - 1))],
		       ape[k - 1], within, k);
	}
	free(ape);
}

int main(int argc, char **argv)
{
	struct row *r = NULL;
	int n = 0, cap = 0, train;
	double min_bytes = 0, max_mbps = INFINITY, best = INFINITY, bmsg = 0,
	       beff = 0;
	FILE *f;
	char alg[32];
	struct row x;
	double lo, hi;

	if (argc == 5 && !strcmp(argv[1], "--predict")) {
		printf("%.6e\n",
		       predict(atoi(argv[2]), atof(argv[3]), atof(argv[4]),
			       HP_COMM_NET_MSG_S, HP_COMM_NET_EFFICIENCY));
		return 0;
	}
	if (argc < 3 || !(f = fopen(argv[1], "r"))) {
		fprintf(stderr,
			"usage: bench_allreduce_fit FILE.tsv TRAIN_RANKS "
			"[MIN_BYTES]\n");
		return 2;
	}
	train = atoi(argv[2]);
	if (argc > 3)
		min_bytes = atof(argv[3]);
	if (argc > 4)
		max_mbps = atof(argv[4]);
	while (fscanf(f, "%d %lf %lf %lf %lf %lf %31s", &x.ranks, &x.mbps,
		      &x.bytes, &x.meas_s, &lo, &hi, alg) == 7) {
		int i;
		if (x.bytes < min_bytes || x.mbps > max_mbps)
			continue;
		/* The faster algorithm of each (ranks, rate, size). */
		for (i = 0; i < n; i++)
			if (r[i].ranks == x.ranks && r[i].mbps == x.mbps &&
			    r[i].bytes == x.bytes)
				break;
		if (i < n) {
			if (x.meas_s < r[i].meas_s)
				r[i].meas_s = x.meas_s;
			continue;
		}
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			r = realloc(r, (size_t)cap * sizeof(*r));
			if (!r)
				return 1;
		}
		r[n++] = x;
	}
	fclose(f);
	/* Grid: overhead 1 us .. 10 ms (log), efficiency 0.2 .. 1. */
	for (int a = 0; a <= 80; a++) {
		double msg = 1e-6 * pow(10, a / 20.0);
		for (int e = 20; e <= 100; e++) {
			double eff = e / 100.0, s = 0;
			int k = 0;
			for (int i = 0; i < n; i++) {
				if (r[i].ranks != train)
					continue;
				s += fabs(log(predict(r[i].ranks, r[i].mbps,
						      r[i].bytes, msg, eff) /
					      r[i].meas_s));
				k++;
			}
			if (k && s / k < best) {
				best = s / k;
				bmsg = msg;
				beff = eff;
			}
		}
	}
	printf("# fitted on %d ranks: net_msg_s %.3g, net_efficiency %.2f "
	       "(mean |log error| %.3f)\n",
	       train, bmsg, beff, best);
	report("fit", r, n, train, 3, bmsg, beff);
	report("test", r, n, train, 3, bmsg, beff);
	report("two-ranks", r, n, -1, 2, bmsg, beff);
	printf("# shipped constants: net_msg_s %.3g, net_efficiency %.2f\n",
	       HP_COMM_NET_MSG_S, HP_COMM_NET_EFFICIENCY);
	report("test-shipped", r, n, train, 3, HP_COMM_NET_MSG_S,
	       HP_COMM_NET_EFFICIENCY);
	free(r);
	return 0;
}
