/*
 * rank.c - what one rank of a job starts as (`hetpool _rank JOBDIR`, run
 * by the launcher on the rank's node just before the trainer): which rank
 * it is (from the launcher's environment), its device (the GPU the plan
 * or Slurm gives it, or the CPU, said so, on a node without an NVIDIA
 * driver or whose GPUs CUDA_VISIBLE_DEVICES hides), its CPUs and threads,
 * its log; recorded in logs/rank-K.json.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "deploy/deploy_int.h"
#include "util/banned.h"

void hp_rank_exec_release(struct hp_rank_exec *x)
{
	if (!x)
		return;
	hp__argv_free(x->argv);
	hp__argv_free(x->env);
	free(x->cpus);
	memset(x, 0, sizeof(*x));
}

/* The first of the variables that is set, as a number in [0, max). */
static int env_index(const char *const names[], int max, const char **which)
{
	for (int i = 0; names[i]; i++) {
		const char *v = getenv(names[i]);
		int64_t k;
		if (!v)
			continue;
		*which = names[i];
		if (hp_parse_i64(v, 0, max - 1, &k))
			return -2;
		return (int)k;
	}
	return -1;
}

/* Element k of a comma-separated list into out (the whole list when it has
 * fewer elements). */
static void list_elem(const char *list, int k, char *out, size_t n)
{
	const char *p = list;

	for (int i = 0; i < k && p; i++) {
		p = strchr(p, ',');
		if (p)
			p++;
	}
	if (!p || !*p) {
		snprintf(out, n, "%s", list);
		return;
	}
	snprintf(out, n, "%.*s", (int)strcspn(p, ","), p);
}

/*
 * mpi: the CUDA index of the gpu_index-th GPU of the rank's type among
 * this node's GPUs, in bus order (CUDA_DEVICE_ORDER=PCI_BUS_ID below), into
 * cuda.  The plan's index stays where the driver lists no GPU (the driver
 * check decides then), and where the node's GPUs are all of one model that
 * none of the type's names matches (a name the catalog does not know); a
 * node without enough GPUs of the type is an error naming what it has.
 */
static int gpu_on_node(const struct hp__launch_rank *x, int k, const char *host,
		       char *cuda, size_t n, struct hp_error *err)
{
	struct hp__gpu g[64];
	int ng = hp__gpus_detect(g, 64), at, have;
	bool one_model = true;
	char list[256] = "";
	size_t used = 0;

	if (ng == 0)
		return 0;
	if ((at = hp__gpu_pick(g, ng, x->gpu_models, x->gpu_index, &have)) >=
	    0) {
		snprintf(cuda, n, "%d", at);
		return 0;
	}
	for (int i = 1; i < ng; i++)
		one_model &= !strcmp(g[i].model, g[0].model);
	if (!have && one_model && x->gpu_index < ng)
		return 0;
	for (int i = 0; i < ng && used + 1 < sizeof(list); i++) {
		int w = snprintf(list + used, sizeof(list) - used, "%s%s",
				 i ? ", " : "", g[i].model);
		if (w < 0)
			break;
		used += (size_t)w;
	}
	return hp_error_set(err, HP_EDEVICE,
			    "rank %d: the plan gives it %s GPU #%d "
			    "(counting from 0) of node '%s', which has %d of "
			    "that type among its %d GPU%s (bus order: %s)",
			    k, x->type, x->gpu_index, host, have, ng,
			    ng == 1 ? "" : "s", list);
}

int hp_deploy_rank_prepare(const char *jobdir, struct hp_rank_exec *out,
			   struct hp_error *err)
{
	static const char *const rank_vars[] = {"OMPI_COMM_WORLD_RANK",
						"PMIX_RANK", "SLURM_PROCID",
						"HETPOOL_RANK", NULL};
	static const char *const local_vars[] = {
	    "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK", NULL};
	struct hp__launch l;
	struct hp__argv argv = {0}, env = {0};
	const struct hp__launch_rank *x;
	const char *which = "", *given, *node;
	char host[HP_NAME_MAX], cuda[64], note[320] = "",
					  path[HP_DEPLOY_PATH_MAX + 64];
	bool use_cpu, any_gpu, fallback, has_threads = false, multi = false;
	bool hidden, no_gpu;
	enum hp_net_transport net;
	const char *ib_disable;
	int k, rc;
	json_t *rec, *cpus;

	memset(out, 0, sizeof(*out));
	if ((rc = hp__launch_load(jobdir, &l, err)))
		return rc;
	k = env_index(rank_vars, l.nranks, &which);
	if (k == -1 && l.nranks == 1)
		k = 0;
	if (k < 0) {
		rc = hp_error_set(err, HP_EINVAL,
				  k == -1
				      ? "no rank in the environment (%s"
					"HETPOOL_RANK, OMPI_COMM_WORLD_RANK, "
					"PMIX_RANK or SLURM_PROCID)"
				      : "%s is not a rank of this %d-rank job",
				  k == -1 ? "" : which, l.nranks);
		goto out;
	}
	x = &l.ranks[k];
	hp__hostname(host, sizeof(host));
	/* CUDA_VISIBLE_DEVICES that leaves CUDA no device (the user's, or
	 * Slurm's "NoDevFiles"): this node's GPUs are hidden, and a GPU rank
	 * takes the path of a node without a driver, whatever GPU the plan
	 * gives it. */
	given = getenv("CUDA_VISIBLE_DEVICES");
	hidden = hp__cuda_hides_all(given);
	cuda[0] = '\0';
	if (x->gpu && hidden) {
		/* stays "": the trainer sees no GPU either */
	} else if (x->gpu && strcmp(x->cuda, "-")) {
		snprintf(cuda, sizeof(cuda), "%s", x->cuda);
		if (x->gpu_models &&
		    (rc = gpu_on_node(x, k, host, cuda, sizeof(cuda), err)))
			goto out;
	} else if (x->gpu && given && *given && strlen(given) < sizeof(cuda)) {
		/* Slurm gave this task's component its GPUs on this node: the
		 * task takes the one at its local index. */
		int li = env_index(local_vars, 1 << 16, &which);
		if (li < 0)
			li = 0;
		list_elem(given, li, cuda, sizeof(cuda));
	} else if (x->gpu) {
		snprintf(note, sizeof(note),
			 "no CUDA_VISIBLE_DEVICES from the launcher");
	}
	use_cpu = !x->gpu;
	any_gpu = false;
	for (int r = 0; r < l.nranks; r++)
		any_gpu |= l.ranks[r].gpu;
	no_gpu = hidden || !hp__nvidia_driver();
	fallback = any_gpu && l.cpu_fallback && no_gpu;
	if (x->gpu && no_gpu) {
		if (!l.cpu_fallback) {
			rc = hp_error_set(
			    err, HP_EDEVICE,
			    hidden ? "rank %d: the plan gives it a %s GPU but "
				     "CUDA_VISIBLE_DEVICES hides every GPU of "
				     "node '%s'"
				   : "rank %d: the plan gives it a %s GPU but "
				     "node '%s' has no NVIDIA driver",
			    k, x->type, host);
			goto out;
		}
		use_cpu = true;
		if (hidden)
			snprintf(
			    note, sizeof(note),
			    "planned for GPU type %s; CUDA_VISIBLE_DEVICES "
			    "hides every GPU of host '%s', so it trained "
			    "on the CPU",
			    x->type, host);
		else
			snprintf(note, sizeof(note),
				 "planned for GPU type %s "
				 "(CUDA_VISIBLE_DEVICES=%s); host '%s' has no "
				 "NVIDIA driver, so it trained on the CPU",
				 x->type, cuda[0] ? cuda : "none", host);
	}
	for (int i = 0; l.trainer[i]; i++) {
		if (i == l.ndev_arg && fallback) {
			/* The whole world must agree on the devices: on a node
			 * without a driver every rank, CPU ranks too, is told
			 * that every rank trains on the CPU (meant for machines
			 * without GPUs: tests, CI). */
			struct hp_buf b;
			hp_buf_init(&b, 1u << 20);
			for (int r = 0; r < l.nranks; r++)
				hp_buf_adds(&b, r ? ",cpu" : "cpu");
			hp__argv_add(&argv, hp_buf_str(&b));
			hp_buf_release(&b);
			continue;
		}
		if (!strcmp(l.trainer[i], "--threads"))
			has_threads = true;
		hp__argv_add(&argv, l.trainer[i]);
	}
	if (x->threads > 0 && !has_threads) {
		hp__argv_add(&argv, "--threads");
		hp__argv_addf(&argv, "%d", x->threads);
	}
	{
		/* Slurm requeued the job (a node failed; its batch step runs
		 * again on the same out/): go on from the last checkpoint,
		 * or from step 0 where none was written yet */
		const char *rq = getenv("SLURM_RESTART_COUNT");
		int64_t n = 0;
		bool has_resume = false;
		for (int i = 0; l.trainer[i]; i++)
			has_resume |= !strcmp(l.trainer[i], "--resume");
		if (rq && !hp_parse_i64(rq, 0, INT32_MAX, &n) && n > 0 &&
		    !has_resume)
			hp__argv_add(&argv, "--resume");
	}
	/* A CPU rank sees no GPU; a GPU rank its own (also when it falls
	 * back to the CPU for want of a driver: the variable stays what it
	 * was given), or none where its GPUs are hidden. */
	hp__argv_addf(&env, "CUDA_VISIBLE_DEVICES=%s", x->gpu ? cuda : "");
	hp__argv_add(&env, "CUDA_DEVICE_ORDER=PCI_BUS_ID");
	hp__argv_addf(&env, "HETPOOL_JOB_ID=%s", l.id);
	hp__argv_addf(&env, "HETPOOL_RANK=%d", k);
	/* NCCL between nodes goes over the network the pool names: without
	 * RDMA there (socket, tcp) its InfiniBand transport is turned off,
	 * so that NCCL does not take an RDMA device the pool says is not the
	 * training network.  Only for GPU ranks of a job on more than one
	 * node, and never over a value the launcher's environment has. */
	net = hp_net_transport_resolve(x->transport, x->gpu);
	for (int r = 0; r < l.nranks; r++)
		multi |= strcmp(l.ranks[r].node, x->node) != 0;
	if (x->gpu && multi && (net == HP_NET_SOCKET || net == HP_NET_TCP) &&
	    !getenv("NCCL_IB_DISABLE")) {
		hp__argv_add(&env, "NCCL_IB_DISABLE=1");
		ib_disable = "1";
	} else {
		ib_disable = getenv("NCCL_IB_DISABLE");
	}
	if (x->threads > 0)
		hp__argv_addf(&env, "OMP_NUM_THREADS=%d", x->threads);
	out->rank = k;
	out->argv = hp__argv_take(&argv);
	out->env = hp__argv_take(&env);
	if (!out->argv || !out->env) {
		rc = hp_error_set(err, HP_ENOMEM, "out of memory");
		goto out;
	}
	if (x->ncpus) {
		if (!(out->cpus = calloc((size_t)x->ncpus, sizeof(int)))) {
			rc = hp_error_set(err, HP_ENOMEM, "out of memory");
			goto out;
		}
		memcpy(out->cpus, x->cpus, (size_t)x->ncpus * sizeof(int));
		out->ncpus = x->ncpus;
	}
	if ((rc = hp__path(out->log, sizeof(out->log), err,
			   "%s/logs/rank-%d.log", l.jobdir, k)) ||
	    (rc = hp__path(path, sizeof(path), err, "%s/logs/rank-%d.json",
			   l.jobdir, k)))
		goto out;
	cpus = json_array();
	for (int i = 0; i < x->ncpus; i++)
		json_array_append_new(cpus, json_integer(x->cpus[i]));
	node = getenv("SLURMD_NODENAME");
	if (!node || !hp__name_ok(node))
		node = x->node;
	rec = json_pack(
	    "{s:i, s:s, s:s, s:I, s:I, s:s, s:s, s:s, s:s, s:s, s:o, s:i}",
	    "rank", k, "host", host, "node", node, "pid", (json_int_t)getpid(),
	    "pid_start", (json_int_t)hp__proc_start((long)getpid()), "type",
	    x->type, "requested", x->gpu ? "cuda" : "cpu", "device",
	    use_cpu ? "cpu" : "cuda", "cuda_visible_devices", cuda, "note",
	    note, "cpus", cpus, "threads", x->threads);
	if (!rec) {
		rc = hp_error_set(err, HP_ENOMEM, "out of memory");
		goto out;
	}
	json_object_set_new(rec, "net_transport",
			    json_string(hp_net_transport_name(net)));
	json_object_set_new(rec, "nccl_ib_disable",
			    ib_disable && !hp_str_has_control(ib_disable)
				? json_string(ib_disable)
				: json_null());
	/* Under Slurm, the GPUs its step got on this node (for audits). */
	if ((given = getenv("SLURM_STEP_GPUS")) && !hp_str_has_control(given))
		json_object_set_new(rec, "slurm_step_gpus", json_string(given));
	rc = hp__write_json(path, rec, err);
	json_decref(rec);
out:
	hp__argv_free(hp__argv_take(&argv));
	hp__argv_free(hp__argv_take(&env));
	if (rc)
		hp_rank_exec_release(out);
	hp__launch_release(&l);
	return rc;
}
