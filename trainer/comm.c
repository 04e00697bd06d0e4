/*
 * comm.c - the ranks of a training job talking over MPI (Open MPI): sums,
 * gathers and broadcasts, with counts above INT_MAX sent in pieces.  A
 * process started without a launcher is one rank and never calls MPI, so
 * hetpool-train runs as a plain program too.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#include "trainer.h"
#include "util/banned.h"

/* Environment variables a launcher sets for each process it starts. */
static bool under_launcher(void)
{
	static const char *const vars[] = {
	    "OMPI_COMM_WORLD_SIZE", /* Open MPI's mpirun */
	    "PMIX_RANK",	    /* PMIx: srun --mpi=pmix, prterun */
	    "PMI_RANK",		    /* PMI-1/2: MPICH, srun --mpi=pmi2 */
	    "PMI_SIZE",
	};

	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		if (getenv(vars[i]))
			return true;
	return false;
}

int tr_comm_init(struct tr_comm *c, int *argc, char ***argv, char *msg,
		 size_t n)
{
	MPI_Comm node;

	memset(c, 0, sizeof(*c));
	c->size = c->local_size = 1;
	if (gethostname(c->host, sizeof(c->host) - 1) != 0)
		snprintf(c->host, sizeof(c->host), "localhost");
	if (!under_launcher())
		return 0;
	/* Two TCP connections a peer in place of Open MPI's one: with one,
	 * two ranks that send to each other at once (every step of a ring
	 * or recursive-doubling all-reduce of 2 ranks) took 1.4-2.1x the
	 * time the line rate needs both ways, as if the link were half
	 * duplex; with two, 1.1x (docs/estimator.md, "Validation against
	 * real all-reduces").  3 and 4 ranks, whose connections each carry one
	 * direction, and ranks on one host (shared memory) are unchanged.
	 * A value the user set (mpirun --mca, the environment) stays. */
	setenv("OMPI_MCA_btl_tcp_links", "2", 0);
	if (MPI_Init(argc, argv) != MPI_SUCCESS) {
		snprintf(msg, n, "MPI_Init failed");
		return -1;
	}
	c->mpi = true;
	MPI_Comm_rank(MPI_COMM_WORLD, &c->rank);
	MPI_Comm_size(MPI_COMM_WORLD, &c->size);
	if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, c->rank,
				MPI_INFO_NULL, &node) == MPI_SUCCESS) {
		MPI_Comm_rank(node, &c->local_rank);
		MPI_Comm_size(node, &c->local_size);
		MPI_Comm_free(&node);
	}
	return 0;
}

void tr_comm_finalize(struct tr_comm *c)
{
	if (c->mpi)
		MPI_Finalize();
	c->mpi = false;
}

void tr_comm_abort(struct tr_comm *c, int status)
{
	if (c->mpi && c->size > 1)
		MPI_Abort(MPI_COMM_WORLD, status);
	exit(status);
}

/* MPI counts are ints: pieces of at most 1 << 30 elements. */
#define PIECE ((int64_t)1 << 30)

int tr_allreduce_f32(struct tr_comm *c, float *buf, int64_t n)
{
	if (!c->mpi || c->size == 1)
		return 0;
	for (int64_t o = 0; o < n; o += PIECE) {
		int k = (int)(n - o < PIECE ? n - o : PIECE);
		if (MPI_Allreduce(MPI_IN_PLACE, buf + o, k, MPI_FLOAT, MPI_SUM,
				  MPI_COMM_WORLD) != MPI_SUCCESS)
			return HP_EIO;
	}
	return 0;
}

int tr_allreduce_f64(struct tr_comm *c, double *buf, int n)
{
	if (!c->mpi || c->size == 1)
		return 0;
	return MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_DOUBLE, MPI_SUM,
			     MPI_COMM_WORLD) == MPI_SUCCESS
		   ? 0
		   : HP_EIO;
}

int tr_allreduce_max_int(struct tr_comm *c, int *v)
{
	if (!c->mpi || c->size == 1)
		return 0;
	return MPI_Allreduce(MPI_IN_PLACE, v, 1, MPI_INT, MPI_MAX,
			     MPI_COMM_WORLD) == MPI_SUCCESS
		   ? 0
		   : HP_EIO;
}

int tr_allgather_f64(struct tr_comm *c, const double *mine, int n, double *all)
{
	if (!c->mpi || c->size == 1) {
		memcpy(all, mine, (size_t)n * sizeof(double));
		return 0;
	}
	return MPI_Allgather(mine, n, MPI_DOUBLE, all, n, MPI_DOUBLE,
			     MPI_COMM_WORLD) == MPI_SUCCESS
		   ? 0
		   : HP_EIO;
}

int tr_allgather_bytes(struct tr_comm *c, const void *mine, int n, void *all)
{
	if (!c->mpi || c->size == 1) {
		memcpy(all, mine, (size_t)n);
		return 0;
	}
	return MPI_Allgather(mine, n, MPI_BYTE, all, n, MPI_BYTE,
			     MPI_COMM_WORLD) == MPI_SUCCESS
		   ? 0
		   : HP_EIO;
}

int tr_bcast(struct tr_comm *c, void *buf, int64_t n, int root)
{
	char *p = buf;

	if (!c->mpi || c->size == 1)
		return 0;
	for (int64_t o = 0; o < n; o += PIECE) {
		int k = (int)(n - o < PIECE ? n - o : PIECE);
		if (MPI_Bcast(p + o, k, MPI_BYTE, root, MPI_COMM_WORLD) !=
		    MPI_SUCCESS)
			return HP_EIO;
	}
	return 0;
}
