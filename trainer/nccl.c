/*
 * nccl.c - the gradient all-reduce between GPU ranks on NCCL: each rank's
 * gradient arena is multiplied by its share of the global batch and
 * summed in one ncclAllReduce (a pre-multiplied sum, NCCL >= 2.11), on the
 * engine's own stream.  MPI carries the ncclUniqueId from rank 0.  Built
 * only where the CUDA toolkit has NCCL (HP_HAVE_NCCL); elsewhere the functions
 * below say it is not there and the trainer reduces over MPI.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trainer.h"

#ifdef HP_HAVE_NCCL

#include <cuda_runtime.h>
#include <nccl.h>

#include "util/banned.h"

struct tr_nccl {
	ncclComm_t comm;
	int dev;
};

bool tr_nccl_available(void)
{
	return true;
}

/*
 * Every rank goes through the same collectives whatever fails on it (a
 * rank that returned before them would leave the others waiting in them
 * for ever): each sets itself up (memory, its device; rank 0 the unique
 * id), all learn whether any failed, and only then is the id broadcast
 * and the communicator made.
 */
struct tr_nccl *tr_nccl_new(struct tr_comm *c, int dev, struct hp_error *err)
{
	struct tr_nccl *n = calloc(1, sizeof(*n));
	ncclUniqueId id;
	ncclResult_t nr;
	int failed = 0;

	memset(&id, 0, sizeof(id));
	if (!n) {
		hp_error_set(err, HP_ENOMEM, "out of memory");
		failed = 1;
	} else if (cudaSetDevice(dev) != cudaSuccess) {
		hp_error_set(err, HP_EDEVICE, "cudaSetDevice(%d) failed", dev);
		failed = 1;
	} else if (c->rank == 0 && (nr = ncclGetUniqueId(&id)) != ncclSuccess) {
		hp_error_set(err, HP_EDEVICE, "ncclGetUniqueId: %s",
			     ncclGetErrorString(nr));
		failed = 1;
	} else {
		n->dev = dev;
	}
	/* every rank learns whether any rank failed */
	if (tr_allreduce_max_int(c, &failed)) {
		hp_error_set(err, HP_EIO, "NCCL set-up: MPI all-reduce failed");
		failed = 1;
	} else if (failed && !err->code) {
		hp_error_set(err, HP_EDEVICE,
			     "NCCL set-up failed on another rank (see its "
			     "message)");
	}
	if (failed || tr_bcast(c, &id, sizeof(id), 0)) {
		if (!failed)
			hp_error_set(err, HP_EIO,
				     "NCCL set-up: MPI broadcast failed");
		free(n);
		return NULL;
	}
	nr = ncclCommInitRank(&n->comm, c->size, id, c->rank);
	if (nr != ncclSuccess) {
		hp_error_set(err, HP_EDEVICE, "ncclCommInitRank: %s",
			     ncclGetErrorString(nr));
		free(n);
		return NULL;
	}
	return n;
}

int tr_nccl_allreduce_weighted(struct tr_nccl *n, void *buf, int64_t count,
			       float weight, void *stream, struct hp_error *err)
{
	ncclRedOp_t op;
	ncclResult_t nr;
	cudaError_t ce;

	if (cudaSetDevice(n->dev) != cudaSuccess)
		return hp_error_set(err, HP_EDEVICE, "cudaSetDevice failed");
	nr = ncclRedOpCreatePreMulSum(&op, &weight, ncclFloat,
				      ncclScalarHostImmediate, n->comm);
	if (nr != ncclSuccess)
		return hp_error_set(err, HP_EDEVICE,
				    "ncclRedOpCreatePreMulSum: %s",
				    ncclGetErrorString(nr));
	nr = ncclAllReduce(buf, buf, (size_t)count, ncclFloat, op, n->comm,
			   (cudaStream_t)stream);
	ncclRedOpDestroy(op, n->comm);
	if (nr != ncclSuccess)
		return hp_error_set(err, HP_EDEVICE, "ncclAllReduce: %s",
				    ncclGetErrorString(nr));
	ce = cudaStreamSynchronize((cudaStream_t)stream);
	if (ce != cudaSuccess)
		return hp_error_set(err, HP_EDEVICE, "NCCL all-reduce: %s",
				    cudaGetErrorString(ce));
	return 0;
}

void tr_nccl_free(struct tr_nccl *n)
{
	if (!n)
		return;
	ncclCommDestroy(n->comm);
	free(n);
}

#else /* no NCCL in this build */

bool tr_nccl_available(void)
{
	return false;
}

struct tr_nccl *tr_nccl_new(struct tr_comm *c, int dev, struct hp_error *err)
{
	(void)c;
	(void)dev;
	hp_error_set(err, HP_EUNSUPP, "this build has no NCCL");
	return NULL;
}

int tr_nccl_allreduce_weighted(struct tr_nccl *n, void *buf, int64_t count,
			       float weight, void *stream, struct hp_error *err)
{
	(void)n;
	(void)buf;
	(void)count;
	(void)weight;
	(void)stream;
	return hp_error_set(err, HP_EUNSUPP, "this build has no NCCL");
}

void tr_nccl_free(struct tr_nccl *n)
{
	(void)n;
}

#endif
