/*
 * allreduce_mpi.c - time MPI_Allreduce (sum) of float buffers from
 * MIN_BYTES to MAX_BYTES (x4 each step), REPEATS times each after one
 * warm-up, every call between barriers and timed as the slowest rank saw
 * it.  Rank 0 prints one line per size: "bytes ranks median_s min_s
 * max_s".  Run by benchmarks/allreduce_netns.sh with one rank per network
 * namespace; any mpirun will do.
 *
 * usage: allreduce_mpi MIN_BYTES MAX_BYTES REPEATS
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static long parse_long(const char *s, long lo, long hi)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (end == s || *end || v < lo || v > hi)
		return -1;
	return v;
}

int main(int argc, char **argv)
{
	long lo, hi, reps;
	int rank, size;
	float *in, *out;
	double *t;

	/* Open MPI's TCP links per peer as hetpool-train sets them
	 * (trainer/comm.c); OMPI_MCA_btl_tcp_links in the environment or
	 * mpirun --mca overrides it. */
	setenv("OMPI_MCA_btl_tcp_links", "2", 0);
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (argc != 4 || (lo = parse_long(argv[1], 4, 1L << 30)) < 0 ||
	    (hi = parse_long(argv[2], lo, 1L << 30)) < 0 ||
	    (reps = parse_long(argv[3], 1, 1000)) < 0) {
		if (!rank)
			fprintf(stderr, "usage: allreduce_mpi MIN_BYTES "
					"MAX_BYTES REPEATS\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	in = malloc((size_t)hi);
	out = malloc((size_t)hi);
	t = malloc((size_t)reps * sizeof(*t));
	if (!in || !out || !t)
		MPI_Abort(MPI_COMM_WORLD, 1);
	for (long i = 0; i < hi / 4; i++)
		in[i] = (float)(rank + 1) * 0.5f + (float)(i % 7);
	for (long b = lo; b <= hi; b *= 4) {
		int n = (int)(b / 4);
		for (long r = -1; r < reps; r++) {
			double t0, dt, mx;
			MPI_Barrier(MPI_COMM_WORLD);
			t0 = MPI_Wtime();
			MPI_Allreduce(in, out, n, MPI_FLOAT, MPI_SUM,
				      MPI_COMM_WORLD);
			dt = MPI_Wtime() - t0;
			MPI_Allreduce(&dt, &mx, 1, MPI_DOUBLE, MPI_MAX,
				      MPI_COMM_WORLD);
			if (r >= 0)
				t[r] = mx;
		}
		/* The sum is checked: every rank adds (rank + 1) / 2. */
		{
			float want = (float)size * (float)(size + 1) / 4.0f +
				     (float)size * (float)((n - 1) % 7);
			if (out[n - 1] < want - 0.01f * want ||
			    out[n - 1] > want + 0.01f * want) {
				fprintf(stderr,
					"allreduce_mpi: wrong sum %g, "
					"want %g\n",
					out[n - 1], want);
				MPI_Abort(MPI_COMM_WORLD, 1);
			}
		}
		if (!rank) {
			qsort(t, (size_t)reps, sizeof(*t), cmp_double);
			printf("%ld %d %.6e %.6e %.6e\n", b, size,
			       reps % 2 ? t[reps / 2]
					: (t[reps / 2 - 1] + t[reps / 2]) / 2,
			       t[0], t[reps - 1]);
			fflush(stdout);
		}
	}
	free(in);
	free(out);
	free(t);
	MPI_Finalize();
	return 0;
}
