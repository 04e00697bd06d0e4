/*
 * test_deploy.c - lib/deploy: SHA-256 against the FIPS 180 vectors and
 * sha256sum; plans read from the recommender's own JSON (the ranks add
 * up to its choice) and refused by name when bad; the rank order Slurm
 * gives a heterogeneous step; the state file (round trip, forward-only
 * states, many processes and threads updating one job under its lock);
 * squeue, sacct and kubectl output; staging (copies verified, a damaged
 * copy repaired, a changed source refused, several stagers at once);
 * outside commands (output, status, time limit); which
 * CUDA_VISIBLE_DEVICES hides this host's GPUs; what a rank starts as;
 * submitting from many threads at once; a backend that refuses leaves the
 * job failed with the reason; a vanished supervisor is noticed; a
 * launcher (mpirun, srun) that does not exit after its ranks is stopped
 * and the job finished from the trainer's results.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "deploy/deploy_int.h"
#include "hetpool/deploy.h"
#include "hetpool/estimate.h"
#include "hetpool/pool.h"
#include "hetpool/recommend.h"
#include "test.h"

/* A fresh folder for one test (the runner removes it when it ends). */
static const char *tmpdir(void)
{
	return hp_test_tmpdir("hp-deploy-test.");
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f || fputs(text, f) < 0 || fclose(f))
		HP_FAIL("cannot write %s", path);
}

static void rm_rf(const char *dir)
{
	char *argv[] = {"rm", "-rf", (char *)dir, NULL};
	int st;

	hp__run(argv, 30, NULL, NULL, &st, NULL);
}

static const char *sha_hex(const void *p, size_t n)
{
	static char hex[65];
	struct hp__sha256 s;

	hp__sha256_init(&s);
	hp__sha256_add(&s, p, n);
	hp__sha256_hex(&s, hex);
	return hex;
}

/* FIPS 180-2, appendix B (and the one-million 'a' message). */
HP_TEST(deploy_sha256_fips_vectors)
{
	char *m = malloc(1000000);

	ASSERT_STR_EQ(sha_hex("", 0), "e3b0c44298fc1c149afbf4c8996fb92427ae41e"
				      "4649b934ca495991b7852b855");
	ASSERT_STR_EQ(sha_hex("abc", 3), "ba7816bf8f01cfea414140de5dae2223b00"
					 "361a396177a9cb410ff61f20015ad");
	ASSERT_STR_EQ(
	    sha_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
		    56),
	    "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	memset(m, 'a', 1000000);
	ASSERT_STR_EQ(sha_hex(m, 1000000), "cdc76e5c9914fb9281a1c7e284d73e67f1"
					   "809a48a497200e046d39ccc7112cd0");
	/* the same digest whatever the pieces it is fed in */
	for (size_t cut = 1; cut < 200; cut += 7) {
		struct hp__sha256 s;
		char hex[65];
		hp__sha256_init(&s);
		for (size_t off = 0; off < 1000000; off += cut)
			hp__sha256_add(&s, m + off,
				       off + cut > 1000000 ? 1000000 - off
							   : cut);
		hp__sha256_hex(&s, hex);
		ASSERT_STR_EQ(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a49"
				   "7200e046d39ccc7112cd0");
	}
	free(m);
}

HP_TEST(deploy_sha256_file_matches_sha256sum)
{
	const char *dir = tmpdir();
	char path[512], hex[65], *argv[] = {"sha256sum", path, NULL};
	struct hp_buf out;
	int64_t size;
	int st;
	FILE *f;

	snprintf(path, sizeof(path), "%s/data", dir);
	f = fopen(path, "w");
	for (int i = 0; i < 300000; i++)
		fputc((int)(((unsigned)i * 7919u + (unsigned)i / 13u) & 0xffu),
		      f);
	fclose(f);
	hp_buf_init(&out, 1 << 16);
	if (hp__run(argv, 30, &out, NULL, &st, NULL) || st != 0)
		HP_SKIP("no sha256sum here");
	ASSERT_EQ_INT(hp__sha256_file(path, hex, &size, NULL), 0);
	ASSERT_EQ_INT(size, 300000);
	ASSERT(!strncmp(hp_buf_str(&out), hex, 64));
	hp_buf_release(&out);
	rm_rf(dir);
}

/* The recommender's own JSON, from a real search on the sample pool. */
/* What a failed job's reason quotes of a log: the line that says what
 * went wrong, not the last (mpirun ends in a box of dashes and advice). */
HP_TEST(deploy_telling_line_of_a_log)
{
	char buf[300];
	const char *mpirun =
	    "ssh: Could not resolve hostname n1: Name or service not known\n"
	    "------------------------------------------------------------\n"
	    "ORTE was unable to reliably start one or more daemons.\n"
	    "* not finding the required libraries and/or binaries on\n"
	    "------------------------------------------------------------\n";
	const char *rank =
	    "hetpool-train: warning: rank 0: cuda not usable\n"
	    "hetpool-train: rank 1: --devices: 'gpu' is not cpu\n"
	    "step 3/10\n";

	ASSERT_STR_EQ(hp__telling_line(mpirun, buf, sizeof(buf)),
		      "ssh: Could not resolve hostname n1: Name or service "
		      "not known");
	ASSERT_STR_EQ(hp__telling_line(rank, buf, sizeof(buf)),
		      "hetpool-train: rank 1: --devices: 'gpu' is not cpu");
	ASSERT_STR_EQ(
	    hp__telling_line("starting\nstep 1\n-----\n\n", buf, sizeof(buf)),
	    "step 1");
	/* the trainer's error before a library's start-up warning */
	ASSERT_STR_EQ(
	    hp__telling_line("mca_base_component_repository_open: unable to "
			     "open mca_btl_openib: cannot open shared "
			     "object file\nhetpool-train: warning: x\n"
			     "hetpool-train: --model m.json: bad\nstep 1\n",
			     buf, sizeof(buf)),
	    "hetpool-train: --model m.json: bad");
	ASSERT_STR_EQ(hp__telling_line("-----\n", buf, sizeof(buf)), "");
	/* ssh's "\r\n" through mpirun: no "\r" in the reason */
	ASSERT_STR_EQ(hp__telling_line("ssh: Could not resolve hostname n1: "
				       "Name or service not known\r\n",
				       buf, sizeof(buf)),
		      "ssh: Could not resolve hostname n1: Name or service "
		      "not known");
	ASSERT_STR_EQ(hp__telling_line("", buf, sizeof(buf)), "");
	/* a line ending in ':' goes on with what it introduces (Open MPI's
	 * TMPDIR box: the folder and the error were cut off until 3
	 * December) */
	ASSERT_STR_EQ(
	    hp__telling_line(
		"-----------------------------------------------\n"
		"A call to mkdir was unable to create the desired "
		"directory:\n\n"
		"    Directory: /ro/ompi.vm.65534\n"
		"    Error:     Permission denied\n\n"
		"Please check to ensure you have adequate permissions\n"
		"-----------------------------------------------\n",
		buf, sizeof(buf)),
	    "A call to mkdir was unable to create the desired directory: "
	    "Directory: /ro/ompi.vm.65534 Error: Permission denied");
	/* another MPI's launcher: its first complaint, not its last */
	ASSERT_STR_EQ(hp__telling_line("[mpiexec@vm] match_arg: unrecognized "
				       "argument allow-run-as-root\n"
				       "[mpiexec@vm] HYDU_parse_array: "
				       "argument matching returned error\n",
				       buf, sizeof(buf)),
		      "[mpiexec@vm] match_arg: unrecognized argument "
		      "allow-run-as-root");
	/* a node step's own error before mpirun's box about its exit */
	ASSERT_STR_EQ(hp__telling_line("hetpool: _stage: staging root '/s' "
				       "lets another user replace it\n"
				       "-----\nmpirun detected that one or "
				       "more processes exited\n"
				       "  Exit code:    2\n-----\n",
				       buf, sizeof(buf)),
		      "hetpool: _stage: staging root '/s' lets another user "
		      "replace it");
}

HP_TEST(deploy_plan_from_recommend_json)
{
	struct hp_error err = {0};
	struct hp_catalog *cat =
	    hp_catalog_load(hp_test_path("data/devices.csv"), &err);
	struct hp_estimator *est = hp_estimator_load(
	    hp_test_path("data/estimators/default.json"), &err);
	struct hp_pool *pool =
	    hp_pool_load(hp_test_path("data/pools/sample.json"), cat, &err);
	struct hp_graph *g = hp_model_load(
	    hp_test_path("data/models/resnet18.train.onnx"), &err);
	struct hp_workload w = {0};
	struct hp_rec_result res = {0};
	struct hp_plan p;
	char *json;
	/* deadlines tight and loose: single-type and mixed choices */
	const double deadlines[] = {600, 1800, 7200, 86400};

	ASSERT(cat && est && pool && g);
	ASSERT_EQ_INT(hp_workload_from_graph(g, 1, NULL, 0, &w, &err), 0);
	for (int k = 0; k < 4; k++) {
		struct hp_rec_job job = {.samples = 1281167,
					 .epochs = 1,
					 .batch = 512,
					 .ref_batch = 256,
					 .deadline_s = deadlines[k],
					 .front = 3};
		int64_t sum = 0;
		ASSERT_EQ_INT(
		    hp_recommend(est, cat, &w, pool, &job, &res, &err), 0);
		ASSERT(res.found);
		json = hp_rec_result_json(&res, &job, pool);
		ASSERT_EQ_INT(hp_plan_parse(json, strlen(json), NULL, &p, &err),
			      0);
		ASSERT_EQ_INT(p.global_batch, res.choice.global_batch);
		ASSERT_EQ_INT(p.steps, res.choice.steps);
		ASSERT_EQ_INT(p.nranks, res.choice.ndevices);
		ASSERT_EQ_INT(p.nnodes, res.choice.nnodes);
		ASSERT_NEAR(p.lr_scale, res.choice.lr_scale, 1e-9);
		ASSERT_EQ_INT(p.ref_batch, 256);
		for (int r = 0; r < p.nranks; r++) {
			const struct hp_plan_rank *x = &p.ranks[r];
			sum += x->local_batch;
			ASSERT_EQ_INT(x->local_batch,
				      res.choice.groups[x->group].local_batch);
			ASSERT_STR_EQ(
			    p.nodes[x->node].name,
			    pool->nodes[res.choice.groups[x->group].node].name);
			/* components hold their ranks contiguously */
			ASSERT(r >= p.comps[x->comp].first_rank &&
			       r < p.comps[x->comp].first_rank +
				       p.comps[x->comp].nranks);
			ASSERT(x->gpu_index < p.comps[x->comp].per_node);
		}
		ASSERT_EQ_INT(sum, p.global_batch);
		ASSERT_EQ_INT(p.ncomps >= res.choice.ntypes, 1);
		hp_plan_release(&p);
		free(json);
		hp_rec_result_release(&res);
	}
	hp_workload_release(&w);
	hp_graph_free(g);
	hp_pool_free(pool);
	hp_estimator_free(est);
	hp_catalog_free(cat);
}

HP_TEST(deploy_plan_rank_order_is_slurms)
{
	/* t4 x2 on a and c, a100 x1 on b, cpu x1 on a, and a t4 x1 on d */
	const char *text =
	    "{\"devices\": ["
	    "{\"node\": \"a\", \"type\": \"t4\", \"count\": 2, "
	    "\"local_batch\": 10},"
	    "{\"node\": \"b\", \"type\": \"a100\", \"count\": 1, "
	    "\"local_batch\": 30},"
	    "{\"node\": \"c\", \"type\": \"t4\", \"count\": 2, "
	    "\"local_batch\": 11},"
	    "{\"node\": \"a\", \"type\": \"cpu\", \"count\": 1, "
	    "\"local_batch\": 2},"
	    "{\"node\": \"d\", \"type\": \"t4\", \"count\": 1, "
	    "\"local_batch\": 9}],"
	    "\"global_batch\": 83}";
	struct hp_plan p;
	struct hp_error err = {0};
	/* component, node and batch of each rank, in Slurm's order: the
	 * components in order of first sight, each one's nodes in order */
	const struct {
		int comp;
		const char *node;
		int64_t batch;
		int gpu_index, local_rank;
	} want[] = {
	    {0, "a", 10, 0, 0}, {0, "a", 10, 1, 1}, {0, "c", 11, 0, 0},
	    {0, "c", 11, 1, 1}, {1, "b", 30, 0, 0}, {2, "a", 2, 0, 2},
	    {3, "d", 9, 0, 0},
	};

	ASSERT_EQ_INT(hp_plan_parse(text, strlen(text), "p.json", &p, &err), 0);
	ASSERT_EQ_INT(p.nranks, 7);
	ASSERT_EQ_INT(p.ncomps, 4);
	ASSERT_STR_EQ(p.comps[0].type, "t4");
	ASSERT_EQ_INT(p.comps[0].per_node, 2);
	ASSERT_EQ_INT(p.comps[0].nnodes, 2);
	ASSERT_STR_EQ(p.comps[3].type, "t4");
	ASSERT_EQ_INT(p.comps[3].per_node, 1);
	ASSERT(!p.comps[2].gpu && p.comps[0].gpu);
	for (int r = 0; r < 7; r++) {
		ASSERT_EQ_INT(p.ranks[r].comp, want[r].comp);
		ASSERT_STR_EQ(p.nodes[p.ranks[r].node].name, want[r].node);
		ASSERT_EQ_INT(p.ranks[r].local_batch, want[r].batch);
		ASSERT_EQ_INT(p.ranks[r].gpu_index, want[r].gpu_index);
		ASSERT_EQ_INT(p.ranks[r].local_rank, want[r].local_rank);
		ASSERT_NEAR(p.ranks[r].grad_weight, want[r].batch / 83.0,
			    1e-12);
	}
	ASSERT_EQ_INT(p.nodes[0].nranks, 3); /* a: 2 x t4 + cpu */
	hp_plan_release(&p);
}

HP_TEST(deploy_plan_refuses_bad_input_by_name)
{
	static const struct {
		const char *text, *want;
	} cases[] = {
	    {"not json", "plan 'p.json': line 1"},
	    {"[1]", "not a JSON object"},
	    {"{\"x\": 1}", "give the JSON of 'hetpool recommend --json'"},
	    {"{\"choice\": null, \"reason\": \"cpu: power not known\"}",
	     "no choice: cpu: power not known"},
	    {"{\"devices\": []}", "'devices' is empty"},
	    {"{\"devices\": {}}", "'devices' is not an array"},
	    {"{\"devices\": [{\"node\": \"a b\", \"type\": \"t4\", \"count\": "
	     "1, \"local_batch\": 1}]}",
	     "plan.devices[0]: 'node' = 'a b' is not a host name"},
	    {"{\"devices\": [{\"node\": \"a\\nb\", \"type\": \"t4\", "
	     "\"count\": 1, \"local_batch\": 1}]}",
	     "'a\\nb' is not a host name"},
	    {"{\"devices\": [{\"node\": \"a\", \"type\": \"T4\", \"count\": "
	     "1, \"local_batch\": 1}]}",
	     "'type' = 'T4' is not a device type"},
	    {"{\"devices\": [{\"node\": \"a\", \"type\": \"t4\", \"count\": "
	     "0, \"local_batch\": 1}]}",
	     "'count' = 0 is out of range"},
	    {"{\"devices\": [{\"node\": \"a\", \"type\": \"t4\", \"count\": "
	     "1, \"local_batch\": -3}]}",
	     "'local_batch' = -3 is out of range"},
	    {"{\"devices\": [{\"node\": \"a\", \"type\": \"t4\", \"count\": "
	     "1.5, \"local_batch\": 1}]}",
	     "'count' is not a whole number"},
	    {"{\"devices\": [{\"node\": \"a\", \"type\": \"t4\", \"count\": "
	     "2, \"local_batch\": 8}], \"global_batch\": 17}",
	     "add up to 16, not the global batch 17"},
	    {"{\"devices\": [{\"node\": \"a\", \"type\": \"t4\", \"count\": "
	     "2, \"local_batch\": 8, \"grad_weight\": 0.9}]}",
	     "'grad_weight' 0.9 is not local_batch / global_batch"},
	    {"{\"devices\": [{\"node\": \"a\", \"type\": \"t4\", \"count\": "
	     "4000, \"local_batch\": 8}, {\"node\": \"b\", \"type\": \"t4\", "
	     "\"count\": 4000, \"local_batch\": 8}]}",
	     "more than 4096 devices"},
	    {"{\"devices\": [{\"node\": \"a\", \"type\": \"t4\", \"count\": "
	     "1, \"local_batch\": 8}], \"lr\": {\"rule\": \"cubic\"}}",
	     "'rule' = 'cubic' is not linear, sqrt or none"},
	    {"{\"devices\": [{\"node\": \"a\", \"type\": \"t4\", \"count\": "
	     "1, \"local_batch\": 8, \"node\": \"b\"}]}",
	     "duplicate"},
	    {"{\"devices\": [{\"node\": \"a\", \"type\": \"t4\", \"count\": "
	     "1, \"local_batch\": 8, \"net_transport\": \"ib\"}]}",
	     "plan.devices[0]: 'net_transport' = 'ib' is not \"auto\", "
	     "\"tcp\", \"socket\" or \"rdma\""},
	    {"{\"devices\": [{\"node\": \"a\", \"type\": \"t4\", \"count\": "
	     "1, \"local_batch\": 8, \"net_transport\": 3}]}",
	     "'net_transport' = '(not a string)'"},
	    {"{\"devices\": [{\"node\": \"a\", \"type\": \"t4\", \"count\": "
	     "1, \"local_batch\": 8, \"net_transport\": \"rdma\"}, "
	     "{\"node\": \"a\", \"type\": \"cpu\", \"count\": 1, "
	     "\"local_batch\": 8, \"net_transport\": \"socket\"}]}",
	     "plan.devices[1]: 'net_transport' 'socket' differs from "
	     "devices[0]'s 'rdma' on the same node 'a'"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct hp_plan p;
		struct hp_error err = {0};
		int rc = hp_plan_parse(cases[i].text, strlen(cases[i].text),
				       "p.json", &p, &err);
		if (rc != HP_EPARSE || !strstr(err.msg, cases[i].want))
			HP_FAIL("case %zu: rc %d, message '%s' lacks '%s'", i,
				rc, err.msg, cases[i].want);
		ASSERT(p.nranks == 0 && p.ranks == NULL);
	}
}

HP_TEST(deploy_plan_cpu_host_splits_evenly)
{
	struct hp_plan p;
	struct hp_error err = {0};

	for (int n = 1; n <= 7; n++)
		for (int64_t b = n; b <= 40; b += 3) {
			int64_t sum = 0, lo = b, hi = 0;
			ASSERT_EQ_INT(hp_plan_cpu_host("vm", n, b, &p, &err),
				      0);
			ASSERT_EQ_INT(p.nranks, n);
			for (int r = 0; r < n; r++) {
				sum += p.ranks[r].local_batch;
				lo = p.ranks[r].local_batch < lo
					 ? p.ranks[r].local_batch
					 : lo;
				hi = p.ranks[r].local_batch > hi
					 ? p.ranks[r].local_batch
					 : hi;
				ASSERT(!p.ranks[r].gpu);
			}
			ASSERT_EQ_INT(sum, b);
			ASSERT(hi - lo <= 1);
			hp_plan_release(&p);
		}
	ASSERT_EQ_INT(hp_plan_cpu_host("vm", 4, 3, &p, &err), HP_EINVAL);
	ASSERT_EQ_INT(hp_plan_cpu_host("a b", 1, 3, &p, &err), HP_EINVAL);
}

HP_TEST(deploy_job_state_round_trip)
{
	struct hp_job j = {0}, k;
	struct hp_error err = {0};
	char *s;

	snprintf(j.id, sizeof(j.id), "20261130-121501-3fa2");
	snprintf(j.name, sizeof(j.name), "exp-1");
	j.backend = HP_BACKEND_SLURM;
	j.state = HP_JOB_FAILED;
	snprintf(j.reason, sizeof(j.reason), "rank 2 exited with status 3");
	j.created_s = 1796041000.5;
	j.started_s = 1796041001.25;
	j.ended_s = 1796041009;
	j.nranks = 3;
	j.exit_status = 3;
	snprintf(j.slurm_id, sizeof(j.slurm_id), "42");
	j.cancel_requested = true;
	j.results = hp_strdup("{\"steps\":5,\"test_accuracy\":0.8}");
	j.ranks = calloc(1, sizeof(*j.ranks));
	j.nranks_seen = 1;
	snprintf(j.ranks[0].host, sizeof(j.ranks[0].host), "vm");
	snprintf(j.ranks[0].device, sizeof(j.ranks[0].device), "cpu");
	snprintf(j.ranks[0].cuda_visible_devices,
		 sizeof(j.ranks[0].cuda_visible_devices), "1");
	s = hp_job_json(&j);
	ASSERT_EQ_INT(hp_job_parse(s, strlen(s), &k, &err), 0);
	ASSERT_STR_EQ(k.id, j.id);
	ASSERT_STR_EQ(k.name, "exp-1");
	ASSERT_EQ_INT(k.backend, HP_BACKEND_SLURM);
	ASSERT_EQ_INT(k.state, HP_JOB_FAILED);
	ASSERT_STR_EQ(k.reason, j.reason);
	ASSERT_NEAR(k.started_s, j.started_s, 1e-9);
	ASSERT_EQ_INT(k.exit_status, 3);
	ASSERT_STR_EQ(k.slurm_id, "42");
	ASSERT(k.cancel_requested);
	ASSERT(strstr(k.results, "\"test_accuracy\":0.8"));
	ASSERT_EQ_INT(k.nranks_seen, 1);
	ASSERT_STR_EQ(k.ranks[0].cuda_visible_devices, "1");
	hp_job_release(&k);
	free(s);
	hp_job_release(&j);
	/* refused by name */
	{
		const char *bad = "{\"id\": \"../x\", \"state\": \"queued\", "
				  "\"backend\": \"local\"}";
		ASSERT_EQ_INT(hp_job_parse(bad, strlen(bad), &k, &err),
			      HP_EPARSE);
	}
	ASSERT(strstr(err.msg, "'id'"));
	{
		const char *bad = "{\"id\": \"a\", \"state\": \"done\", "
				  "\"backend\": \"local\"}";
		ASSERT_EQ_INT(hp_job_parse(bad, strlen(bad), &k, &err),
			      HP_EPARSE);
	}
	ASSERT(strstr(err.msg, "'state'"));
}

HP_TEST(deploy_states_only_move_forward)
{
	const enum hp_job_state all[] = {HP_JOB_QUEUED,	 HP_JOB_STARTING,
					 HP_JOB_RUNNING, HP_JOB_SUCCEEDED,
					 HP_JOB_FAILED,	 HP_JOB_CANCELLED};

	for (int a = 0; a < 6; a++)
		for (int b = 0; b < 6; b++) {
			bool fwd = hp__state_forward(all[a], all[b]);
			bool want = !hp_job_state_terminal(all[a]) &&
				    (hp_job_state_terminal(all[b]) || b > a);
			if (fwd != want)
				HP_FAIL("%s -> %s: %d",
					hp_job_state_name(all[a]),
					hp_job_state_name(all[b]), fwd);
		}
	for (int a = 0; a < 6; a++) {
		enum hp_job_state s;
		ASSERT_EQ_INT(hp_job_state_parse(hp_job_state_name(all[a]), &s),
			      0);
		ASSERT_EQ_INT(s, all[a]);
	}
}

static void bump(struct hp_job *j, void *ud)
{
	(void)ud;
	j->exit_status = j->exit_status < 0 ? 1 : j->exit_status + 1;
}

struct bumper {
	const char *dir;
	int n;
};

static void *bump_thread(void *p)
{
	const struct bumper *b = p;

	for (int i = 0; i < b->n; i++)
		if (hp__job_update(b->dir, -1, NULL, bump, NULL, NULL, NULL))
			HP_FAIL("update failed");
	return NULL;
}

/* 4 processes x 4 threads x 50 read-modify-writes: none is lost, and a
 * reader never sees a torn file. */
HP_TEST(deploy_job_update_under_lock_loses_nothing)
{
	const char *dir = tmpdir();
	struct hp_job j = {0}, k;
	struct hp_error err = {0};
	pid_t kids[4];

	snprintf(j.id, sizeof(j.id), "lock-test");
	snprintf(j.dir, sizeof(j.dir), "%s", dir);
	j.exit_status = -1;
	ASSERT_EQ_INT(hp__job_save(&j, &err), 0);
	for (int p = 0; p < 4; p++) {
		kids[p] = fork();
		if (kids[p] == 0) {
			pthread_t t[4];
			struct bumper b = {dir, 50};
			for (int i = 0; i < 4; i++)
				pthread_create(&t[i], NULL, bump_thread, &b);
			for (int i = 0; i < 4; i++)
				pthread_join(t[i], NULL);
			_exit(0);
		}
	}
	for (int i = 0; i < 200; i++) {
		/* readers take no lock: a rename is atomic */
		ASSERT_EQ_INT(hp__job_load(dir, &k, &err), 0);
		hp_job_release(&k);
	}
	for (int p = 0; p < 4; p++) {
		int st;
		waitpid(kids[p], &st, 0);
		ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	ASSERT_EQ_INT(hp__job_load(dir, &k, &err), 0);
	ASSERT_EQ_INT(k.exit_status, 4 * 4 * 50);
	/* a terminal state is final */
	ASSERT_EQ_INT(hp__job_update(dir, HP_JOB_CANCELLED, "cancelled", NULL,
				     NULL, NULL, &err),
		      0);
	ASSERT_EQ_INT(
	    hp__job_update(dir, HP_JOB_SUCCEEDED, "", NULL, NULL, &k, &err), 0);
	ASSERT_EQ_INT(k.state, HP_JOB_CANCELLED);
	ASSERT_STR_EQ(k.reason, "cancelled");
	ASSERT(k.ended_s > 0);
	hp_job_release(&k);
	rm_rf(dir);
}

HP_TEST(deploy_slurm_output_parsed)
{
	struct hp__slurm_state st;
	struct hp_error err = {0};
	char reason[256];

	ASSERT_EQ_INT(hp__slurm_parse_squeue("7+0|PENDING|Resources\n"
					     "7+1|PENDING|Resources\n"
					     "70|RUNNING|None\n",
					     "7", &st, &err),
		      0);
	ASSERT_EQ_INT(st.ncomps, 2);
	ASSERT_EQ_INT(hp__slurm_job_state(&st, reason, sizeof(reason)),
		      HP_JOB_QUEUED);
	ASSERT(strstr(reason, "Resources"));
	ASSERT_EQ_INT(hp__slurm_parse_squeue("9+0|RUNNING|None\n"
					     "9+1|COMPLETING|None\n",
					     "9", &st, &err),
		      0);
	ASSERT_EQ_INT(hp__slurm_job_state(&st, reason, sizeof(reason)),
		      HP_JOB_STARTING);
	ASSERT_EQ_INT(hp__slurm_parse_squeue("9+0|COMPLETED|None\n"
					     "9+1|FAILED|NonZeroExitCode\n",
					     "9", &st, &err),
		      0);
	ASSERT_EQ_INT(hp__slurm_job_state(&st, reason, sizeof(reason)),
		      HP_JOB_FAILED);
	ASSERT_STR_EQ(reason, "Slurm: FAILED (NonZeroExitCode)");
	ASSERT_EQ_INT(hp__slurm_parse_squeue("", "9", &st, &err), 0);
	ASSERT_EQ_INT(st.ncomps, 0);
	/* sacct: steps and other jobs are not components */
	ASSERT_EQ_INT(hp__slurm_parse_sacct("12|COMPLETED|0:0\n"
					    "12.batch|COMPLETED|0:0\n"
					    "12.0|FAILED|1:0\n"
					    "123|FAILED|2:0\n",
					    "12", &st, &err),
		      0);
	ASSERT_EQ_INT(st.ncomps, 1);
	ASSERT_EQ_INT(hp__slurm_job_state(&st, reason, sizeof(reason)),
		      HP_JOB_SUCCEEDED);
	ASSERT_EQ_INT(hp__slurm_parse_sacct("12+0|CANCELLED by 0|0:15\n"
					    "12+1|TIMEOUT|0:0\n",
					    "12", &st, &err),
		      0);
	ASSERT_EQ_INT(hp__slurm_job_state(&st, reason, sizeof(reason)),
		      HP_JOB_FAILED);
	ASSERT(strstr(reason, "TIMEOUT"));
	ASSERT_EQ_INT(
	    hp__slurm_parse_sacct("12|CANCELLED by 0|0:15\n", "12", &st, &err),
	    0);
	ASSERT_EQ_INT(hp__slurm_job_state(&st, reason, sizeof(reason)),
		      HP_JOB_CANCELLED);
	ASSERT_EQ_INT(hp__slurm_parse_squeue("garbage\n", "9", &st, &err),
		      HP_EPARSE);
	/* a last line of only "\r" ends the text (it once looped) */
	ASSERT_EQ_INT(
	    hp__slurm_parse_squeue("9|RUNNING|None\n\r", "9", &st, &err), 0);
	ASSERT_EQ_INT(st.ncomps, 1);
	ASSERT_EQ_INT(
	    hp__slurm_parse_sacct("12|COMPLETED|zero\n", "12", &st, &err),
	    HP_EPARSE);
	ASSERT_EQ_INT(hp__slurm_parse_squeue("9|RUN;NING|x\n", "9", &st, &err),
		      HP_EPARSE);
}

HP_TEST(deploy_kubectl_status_parsed)
{
	const char *id = "20261130-121501-3fa2";
	const char *running =
	    "{\"items\": [{\"kind\": \"Job\", \"metadata\": {\"name\": "
	    "\"hetpool-20261130-121501-3fa2-c0\"}, \"status\": {\"active\": "
	    "2}}, {\"kind\": \"Job\", \"metadata\": {\"name\": "
	    "\"hetpool-20261130-121501-3fa2-launcher\"}, \"status\": "
	    "{\"active\": 1}}]}";
	const char *failed =
	    "{\"items\": [{\"kind\": \"MPIJob\", \"metadata\": {\"name\": "
	    "\"hetpool-20261130-121501-3fa2\"}, \"status\": {\"conditions\": "
	    "[{\"type\": \"Created\", \"status\": \"True\"}, {\"type\": "
	    "\"Failed\", \"status\": \"True\", \"message\": \"launcher "
	    "exited 1\"}]}}]}";
	enum hp_job_state st;
	char reason[256];
	struct hp_error err = {0};

	ASSERT_EQ_INT(hp__k8s_parse_status(running, strlen(running), id, &st,
					   reason, sizeof(reason), &err),
		      0);
	ASSERT_EQ_INT(st, HP_JOB_RUNNING);
	ASSERT_EQ_INT(hp__k8s_parse_status(failed, strlen(failed), id, &st,
					   reason, sizeof(reason), &err),
		      0);
	ASSERT_EQ_INT(st, HP_JOB_FAILED);
	ASSERT(strstr(reason, "launcher exited 1"));
	ASSERT_EQ_INT(hp__k8s_parse_status("{\"items\": []}", 13, id, &st,
					   reason, sizeof(reason), &err),
		      0);
	ASSERT_EQ_INT(st, HP_JOB_QUEUED);
	ASSERT_EQ_INT(hp__k8s_parse_status("[]", 2, id, &st, reason,
					   sizeof(reason), &err),
		      HP_EPARSE);
}

HP_TEST(deploy_host_facts)
{
	struct hp__gpu g;
	int first[8], count[8];

	ASSERT_EQ_INT(hp__gpu_parse_info("Model: \t\t Tesla T4\n"
					 "IRQ:   \t\t 46\n"
					 "GPU UUID: \t GPU-1234\n"
					 "Bus Location: \t 0000:3b:00.0\n"
					 "Device Minor: \t 0\n",
					 &g),
		      0);
	ASSERT_STR_EQ(g.model, "Tesla T4");
	ASSERT_STR_EQ(g.bus, "0000:3b:00.0");
	ASSERT_EQ_INT(hp__gpu_parse_info("IRQ: 46\n", &g), HP_EPARSE);
	/* fewer ranks than CPUs: contiguous, disjoint, all used */
	hp__cpus_split(7, 3, first, count);
	ASSERT(first[0] == 0 && count[0] == 3 && first[1] == 3 &&
	       count[1] == 2 && first[2] == 5 && count[2] == 2);
	/* more ranks than CPUs: one each, round robin */
	hp__cpus_split(2, 5, first, count);
	for (int k = 0; k < 5; k++)
		ASSERT(first[k] == k % 2 && count[k] == 1);
}

/* CUDA_VISIBLE_DEVICES hides every GPU when CUDA would see none: set and
 * empty, or a first entry that is not an index or a UUID (CUDA stops at
 * the first invalid entry); a list of devices hides nothing here. */
HP_TEST(deploy_cuda_visible_devices_hides)
{
	static const char *const hides[] = {
	    "",		  " ",	  "\t",	 "-1",	 "-1,0",   "none",
	    "NoDevFiles", ",0",	  "abc", "0x1",	 "1.5",	   "GPU-",
	    "gpu-abc",	  " , 0", "-0",	 "MIG-", "void,1", NULL};
	static const char *const shows[] = {
	    "0",	  "1",
	    "0,1",	  "3,-1",
	    " 0",	  "0 ",
	    "12,x",	  "GPU-8d3c2f1e-4b5a-11ee-9c4d-0242ac120002",
	    "GPU-8d3c,0", "MIG-5c2a1f0e-7d3b-5a4c-8e2f-1b0a9c8d7e6f",
	    NULL};
	struct hp__gpu g[4];

	ASSERT(!hp__cuda_hides_all(NULL));
	for (int i = 0; hides[i]; i++)
		if (!hp__cuda_hides_all(hides[i]))
			HP_FAIL("'%s' should hide every GPU", hides[i]);
	for (int i = 0; shows[i]; i++)
		if (hp__cuda_hides_all(shows[i]))
			HP_FAIL("'%s' should hide no GPU", shows[i]);
	/* what hetpool sees of this host, whatever its GPUs */
	setenv("CUDA_VISIBLE_DEVICES", "", 1);
	ASSERT_EQ_INT(hp__gpus_detect(g, 4), 0);
	{
		struct hp_error err = {0};
		struct hp_catalog *cat =
		    hp_catalog_load(hp_test_path("data/devices.csv"), &err);
		char *text = cat ? hp_deploy_host_pool(cat, &err) : NULL;
		json_t *o = text ? json_loads(text, 0, NULL) : NULL;
		json_t *devs = json_object_get(
		    json_array_get(json_object_get(o, "nodes"), 0), "devices");
		ASSERT(o && json_array_size(devs) == 1);
		ASSERT_STR_EQ(json_string_value(json_object_get(
				  json_array_get(devs, 0), "type")),
			      "cpu");
		json_decref(o);
		free(text);
		hp_catalog_free(cat);
	}
	unsetenv("CUDA_VISIBLE_DEVICES");
}

/* mkdir -p for a test tree */
static void mkdirs(const char *root, const char *rel)
{
	char path[1024];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (char *p = path + strlen(root) + 1; *p; p++)
		if (*p == '/') {
			*p = '\0';
			mkdir(path, 0755);
			*p = '/';
		}
	mkdir(path, 0755);
}

static void put(const char *root, const char *rel, const char *text)
{
	char path[1024];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	write_file(path, text);
}

/* The network as a copy of sysfs's layout shows it: the fastest physical
 * Ethernet link that is up, virtual, loopback, down and unknown-speed
 * ones left out; an RDMA port counts only when ACTIVE. */
HP_TEST(deploy_host_network)
{
	const char *root = tmpdir();
	struct hp__net net;

	hp__net_detect("/nonexistent", &net);
	ASSERT(!net.rdma && net.eth_gbps == 0 && net.rdma_gbps == 0);
	mkdirs(root, "class/net/lo");
	put(root, "class/net/lo/operstate", "unknown\n");
	mkdirs(root, "class/net/eth0/device");
	put(root, "class/net/eth0/operstate", "up\n");
	put(root, "class/net/eth0/speed", "25000\n");
	mkdirs(root, "class/net/eth1/device");
	put(root, "class/net/eth1/operstate", "down\n");
	put(root, "class/net/eth1/speed", "100000\n");
	mkdirs(root, "class/net/eth2/device");
	put(root, "class/net/eth2/operstate", "up\n");
	put(root, "class/net/eth2/speed", "-1\n");
	mkdirs(root, "class/net/veth9"); /* virtual: no device */
	put(root, "class/net/veth9/operstate", "up\n");
	put(root, "class/net/veth9/speed", "400000\n");
	mkdirs(root, "class/infiniband/mlx5_0/ports/1");
	put(root, "class/infiniband/mlx5_0/ports/1/state", "1: DOWN\n");
	put(root, "class/infiniband/mlx5_0/ports/1/rate",
	    "200 Gb/sec (4X HDR)\n");
	hp__net_detect(root, &net);
	ASSERT(!net.rdma);
	ASSERT_NEAR(net.eth_gbps, 25.0, 1e-12);
	ASSERT_STR_EQ(net.eth_if, "eth0");
	mkdirs(root, "class/infiniband/mlx5_1/ports/1");
	put(root, "class/infiniband/mlx5_1/ports/1/state", "4: ACTIVE\n");
	put(root, "class/infiniband/mlx5_1/ports/1/rate",
	    "100 Gb/sec (4X EDR)\n");
	hp__net_detect(root, &net);
	ASSERT(net.rdma);
	ASSERT_NEAR(net.rdma_gbps, 100.0, 1e-12);
	ASSERT_STR_EQ(net.rdma_dev, "mlx5_1");
}

HP_TEST(deploy_names_and_maps)
{
	char out[64];
	struct hp_error err = {0};

	ASSERT(hp__name_ok("hp-a100") && hp__name_ok("n1.example.org"));
	ASSERT(!hp__name_ok("") && !hp__name_ok("-x") && !hp__name_ok("a b") &&
	       !hp__name_ok("a;rm") && !hp__name_ok("a\x1b[31m"));
	ASSERT(hp__type_ok("a100-80") && !hp__type_ok("A100") &&
	       !hp__type_ok("-t4"));
	ASSERT(hp__path_ok("/tmp/x") && !hp__path_ok("tmp/x") &&
	       !hp__path_ok("/tmp/../etc") && !hp__path_ok("/a\nb") &&
	       hp__path_ok("/tmp/a..b"));
	ASSERT(hp_job_id_valid("20261130-121501-3fa2") &&
	       !hp_job_id_valid("../etc") && !hp_job_id_valid("-x") &&
	       !hp_job_id_valid("Abc"));
	ASSERT_EQ_INT(hp__map_get("a100-80=a100,t4=tesla_t4", "t4", out,
				  sizeof(out), "map", &err),
		      0);
	ASSERT_STR_EQ(out, "tesla_t4");
	ASSERT_EQ_INT(
	    hp__map_get("a100-80=a100", "v100", out, sizeof(out), "map", &err),
	    0);
	ASSERT_STR_EQ(out, "v100");
	ASSERT_EQ_INT(hp__map_get(NULL, "v100", out, sizeof(out), "map", &err),
		      0);
	ASSERT_EQ_INT(hp__map_get("t4", "t4", out, sizeof(out), "map", &err),
		      HP_EINVAL);
	ASSERT_EQ_INT(
	    hp__map_get("t4=a b", "t4", out, sizeof(out), "map", &err),
	    HP_EINVAL);
}

HP_TEST(deploy_outside_commands)
{
	char *echo[] = {"echo", "hello", NULL};
	char *cat[] = {"cat", "/nonexistent/file", NULL};
	char *sleep5[] = {"sleep", "5", NULL};
	char *none[] = {"/nonexistent/program", NULL};
	struct hp_buf out, eout;
	struct hp_error err = {0};
	int st;
	double t0;

	hp_buf_init(&out, 1 << 16);
	hp_buf_init(&eout, 1 << 16);
	ASSERT_EQ_INT(hp__run(echo, 10, &out, &eout, &st, &err), 0);
	ASSERT_EQ_INT(st, 0);
	ASSERT_STR_EQ(hp_buf_str(&out), "hello\n");
	hp_buf_reset(&out);
	ASSERT_EQ_INT(hp__run(cat, 10, &out, &eout, &st, &err), 0);
	ASSERT(st != 0 && strstr(hp_buf_str(&eout), "nonexistent"));
	t0 = hp_now_s();
	ASSERT_EQ_INT(hp__run(sleep5, 0.3, &out, NULL, &st, &err), HP_EIO);
	ASSERT(strstr(err.msg, "took more than"));
	ASSERT(hp_now_s() - t0 < 3);
	ASSERT_EQ_INT(hp__run(none, 10, &out, NULL, &st, &err), HP_EIO);
	ASSERT(strstr(err.msg, "cannot run"));
	hp_buf_release(&out);
	hp_buf_release(&eout);
}

/* Four small files named as Fashion-MNIST's, in dir. */
static void fake_dataset(const char *dir)
{
	for (int i = 0; i < 4; i++) {
		char path[1024], text[64];
		snprintf(path, sizeof(path), "%s/%s", dir, hp__idx_names[i]);
		snprintf(text, sizeof(text), "file %d of a fake dataset\n", i);
		write_file(path, text);
	}
}

static struct hp_deploy *context(const char *jobs)
{
	struct hp_deploy_config cfg = {.jobs_dir = jobs,
				       .hetpool = "/bin/true"};
	struct hp_error err = {0};
	struct hp_deploy *d = hp_deploy_new(&cfg, &err);

	if (!d)
		HP_FAIL("hp_deploy_new: %s", err.msg);
	return d;
}

HP_TEST(deploy_stage_copies_and_verifies)
{
	const char *dir = tmpdir();
	char src[512], jobs[512], manifest[600], dest[1024], path[1200];
	char hex[65];
	struct hp_deploy *d;
	struct hp_error err = {0};
	bool staged;
	pid_t kids[4];

	snprintf(src, sizeof(src), "%s/src", dir);
	snprintf(jobs, sizeof(jobs), "%s/jobs", dir);
	mkdir(src, 0755);
	fake_dataset(src);
	d = context(jobs);
	ASSERT_EQ_INT(hp__stage_manifest(d, src, jobs, "/nonexistent-root",
					 &staged, dest, sizeof(dest), &err),
		      0);
	ASSERT(staged && !strncmp(dest, "/nonexistent-root/", 18));
	snprintf(manifest, sizeof(manifest), "%s/stage.json", jobs);
	snprintf(dest, sizeof(dest), "%s/node-local", dir);
	/* four stagers at once on one node: all succeed, one copy */
	for (int p = 0; p < 4; p++)
		if ((kids[p] = fork()) == 0)
			_exit(hp_deploy_stage(manifest, dest, NULL) ? 1 : 0);
	for (int p = 0; p < 4; p++) {
		int st;
		waitpid(kids[p], &st, 0);
		ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	for (int i = 0; i < 4; i++) {
		char want[65];
		snprintf(path, sizeof(path), "%s/%s", src, hp__idx_names[i]);
		ASSERT_EQ_INT(hp__sha256_file(path, want, NULL, &err), 0);
		snprintf(path, sizeof(path), "%s/%s", dest, hp__idx_names[i]);
		ASSERT_EQ_INT(hp__sha256_file(path, hex, NULL, &err), 0);
		ASSERT_STR_EQ(hex, want);
	}
	/* a damaged copy is found and copied again */
	snprintf(path, sizeof(path), "%s/%s", dest, hp__idx_names[1]);
	write_file(path, "damaged\n");
	ASSERT_EQ_INT(hp_deploy_stage(manifest, dest, &err), 0);
	ASSERT_EQ_INT(hp__sha256_file(path, hex, NULL, &err), 0);
	ASSERT(strcmp(hex, sha_hex("damaged\n", 8)));
	/* a source changed since submission is refused, copy left out */
	snprintf(path, sizeof(path), "%s/%s", src, hp__idx_names[2]);
	write_file(path, "changed\n");
	snprintf(dest, sizeof(dest), "%s/elsewhere", dir);
	ASSERT_EQ_INT(hp_deploy_stage(manifest, dest, &err), HP_EIO);
	ASSERT(strstr(err.msg, "SHA-256") && strstr(err.msg, "changed"));
	snprintf(path, sizeof(path), "%s/%s", dest, hp__idx_names[2]);
	ASSERT(access(path, F_OK) != 0);
	{
		/* ... and no temporary copy left behind */
		DIR *dp = opendir(dest);
		struct dirent *de;
		ASSERT(dp);
		while ((de = readdir(dp)))
			if (strstr(de->d_name, ".tmp"))
				HP_FAIL("left behind: %s", de->d_name);
		closedir(dp);
	}
	/* a folder without the files is refused by name */
	ASSERT_EQ_INT(hp__stage_manifest(d, dir, jobs, "/r", &staged, dest,
					 sizeof(dest), &err),
		      HP_EINVAL);
	ASSERT(strstr(err.msg, "train-images-idx3-ubyte"));
	/* a staging folder others may write in, or another user's, or
	 * under a root another user owns, is refused before any copy: its
	 * files could be swapped under the workers */
	snprintf(dest, sizeof(dest), "%s/open", dir);
	mkdir(dest, 0755);
	chmod(dest, 0777);
	ASSERT_EQ_INT(hp_deploy_stage(manifest, dest, &err), HP_EINVAL);
	ASSERT(strstr(err.msg, "may be written by others (mode 0777)"));
	/* a root of this user's open to all (a pod's emptyDir is 0777) */
	snprintf(path, sizeof(path), "%s/openroot", dir);
	mkdir(path, 0755);
	chmod(path, 0777);
	snprintf(dest, sizeof(dest), "%s/openroot/x", dir);
	ASSERT(hp_deploy_stage(manifest, dest, &err) != HP_EINVAL ||
	       !strstr(err.msg, "staging"));
	if (geteuid() == 0) {
		snprintf(dest, sizeof(dest), "%s/theirs", dir);
		mkdir(dest, 0755);
		ASSERT_EQ_INT(chown(dest, 65534, 65534), 0);
		ASSERT_EQ_INT(hp_deploy_stage(manifest, dest, &err), HP_EINVAL);
		ASSERT(strstr(err.msg, "belongs to uid 65534"));
		ASSERT_EQ_INT(chown(path, 65534, 65534), 0);
		snprintf(dest, sizeof(dest), "%s/openroot/y", dir);
		ASSERT_EQ_INT(hp_deploy_stage(manifest, dest, &err), HP_EINVAL);
		ASSERT(strstr(err.msg, "lets another user replace"));
	}
	hp_deploy_free(d);
	rm_rf(dir);
}

/* A stager copying from a FIFO, which the test feeds. */
struct feeder {
	char src[600], dest[600];
	volatile sig_atomic_t *stop;
	bool saw_copy; /* a temporary held the first chunk when stop was
			  set */
};

/* The temporary's size in dest (-1: none there). */
static long long temp_size(const char *dest)
{
	DIR *dp = opendir(dest);
	struct dirent *de;
	long long size = -1;

	while (dp && (de = readdir(dp)))
		if (strstr(de->d_name, ".tmp.")) {
			char path[1300];
			struct stat st;
			snprintf(path, sizeof(path), "%s/%s", dest, de->d_name);
			if (!stat(path, &st))
				size = (long long)st.st_size;
		}
	if (dp)
		closedir(dp);
	return size;
}

/* Write a chunk, wait (bounded: 10 s) until the copy holds it, set the
 * stop flag, write another chunk (the stager sees the flag once its read
 * returns), close. */
static void *feed_thread(void *p)
{
	struct feeder *f = p;
	static char chunk[4096];
	int fd = open(f->src, O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	if (write(fd, chunk, sizeof(chunk)) != (ssize_t)sizeof(chunk))
		HP_FAIL("write: %s", strerror(errno));
	for (int i = 0; i < 10000 && !f->saw_copy; i++) {
		struct timespec ts = {0, 1000000};
		f->saw_copy = temp_size(f->dest) >= (long long)sizeof(chunk);
		if (!f->saw_copy)
			nanosleep(&ts, NULL);
	}
	*f->stop = 1;
	(void)!write(fd, chunk, sizeof(chunk));
	close(fd);
	return NULL;
}

/* Staging stops as soon as its flag is set (hetpool _stage sets it on
 * SIGTERM), in the middle of a file: HP_ECANCELED, the temporary removed,
 * no copy made. */
HP_TEST(deploy_stage_stops_mid_copy)
{
	const char *dir = tmpdir();
	static volatile sig_atomic_t stop;
	struct feeder f = {.stop = &stop};
	struct hp_error err = {0};
	char manifest[600], text[2048], path[700];
	pthread_t t;

	snprintf(f.src, sizeof(f.src), "%s/train-images-idx3-ubyte", dir);
	snprintf(f.dest, sizeof(f.dest), "%s/dest", dir);
	snprintf(manifest, sizeof(manifest), "%s/stage.json", dir);
	ASSERT_EQ_INT(mkfifo(f.src, 0600), 0);
	snprintf(text, sizeof(text),
		 "{\"version\": 1, \"files\": [{\"name\": "
		 "\"train-images-idx3-ubyte\", \"source\": \"%s\", "
		 "\"size\": 8192, \"sha256\": \"%s\"}]}\n",
		 f.src, sha_hex("", 0));
	write_file(manifest, text);
	pthread_create(&t, NULL, feed_thread, &f);
	ASSERT_EQ_INT(hp_deploy_stage_stoppable(manifest, f.dest, &stop, &err),
		      HP_ECANCELED);
	pthread_join(t, NULL);
	ASSERT(f.saw_copy);
	ASSERT(strstr(err.msg, "staging was stopped"));
	ASSERT_EQ_INT((int)temp_size(f.dest), -1);
	snprintf(path, sizeof(path), "%s/train-images-idx3-ubyte", f.dest);
	ASSERT(access(path, F_OK) != 0);
	rm_rf(dir);
}

/* The model, plan and options a submission test uses. */
struct sub {
	char dir[256], jobs[512], model[512];
	struct hp_plan plan;
	struct hp_train_opts t;
	struct hp_submit_opts o;
};

static void sub_init(struct sub *s, const char *plan_json)
{
	struct hp_error err = {0};

	snprintf(s->dir, sizeof(s->dir), "%s", tmpdir());
	snprintf(s->jobs, sizeof(s->jobs), "%s/jobs", s->dir);
	snprintf(s->model, sizeof(s->model), "%s/model.json", s->dir);
	write_file(s->model, "{\"name\": \"m\", \"input\": [1, 28, 28], "
			     "\"classes\": 10, \"layers\": [{\"type\": \"fc\", "
			     "\"units\": 10}]}\n");
	if (hp_plan_parse(plan_json, strlen(plan_json), NULL, &s->plan, &err))
		HP_FAIL("plan: %s", err.msg);
	hp_train_opts_init(&s->t);
	s->t.model = s->model;
	s->t.data = "synthetic";
	s->t.steps = 3;
	hp_submit_opts_init(&s->o);
}

static const char *mixed_plan =
    "{\"choice\": {\"devices\": [{\"node\": \"n1\", \"type\": \"a100\", "
    "\"count\": 2, \"local_batch\": 12}, {\"node\": \"n2\", \"type\": "
    "\"t4\", \"count\": 1, \"local_batch\": 8}], \"global_batch\": 32, "
    "\"steps\": 4}}";

struct submitter {
	struct hp_deploy *d;
	struct sub *s;
	char ids[5][HP_JOB_ID_MAX];
};

static void *submit_thread(void *p)
{
	struct submitter *x = p;

	for (int i = 0; i < 5; i++) {
		struct hp_error err = {0};
		struct hp_job *jobs;
		int n;
		if (hp_deploy_submit(x->d, &x->s->plan, &x->s->t, &x->s->o,
				     x->ids[i], &err))
			HP_FAIL("submit: %s", err.msg);
		if (hp_deploy_list(x->d, true, &jobs, &n, NULL, NULL, &err))
			HP_FAIL("list: %s", err.msg);
		hp_job_list_free(jobs, n);
	}
	return NULL;
}

/* Eight threads submitting at once (kubernetes, not applied: nothing
 * runs): forty jobs, forty ids, forty complete job folders. */
HP_TEST(deploy_submit_from_many_threads)
{
	struct sub s;
	struct hp_deploy *d;
	struct submitter x[8];
	pthread_t t[8];
	struct hp_job *jobs;
	struct hp_error err = {0};
	int n;

	sub_init(&s, mixed_plan);
	s.o.backend = HP_BACKEND_KUBERNETES;
	s.o.k8s_no_apply = true;
	d = context(s.jobs);
	for (int i = 0; i < 8; i++) {
		x[i].d = d;
		x[i].s = &s;
		pthread_create(&t[i], NULL, submit_thread, &x[i]);
	}
	for (int i = 0; i < 8; i++)
		pthread_join(t[i], NULL);
	ASSERT_EQ_INT(hp_deploy_list(d, true, &jobs, &n, NULL, NULL, &err), 0);
	ASSERT_EQ_INT(n, 40);
	for (int i = 0; i < n; i++) {
		char path[1200];
		ASSERT_EQ_INT(jobs[i].state, HP_JOB_QUEUED);
		ASSERT(strstr(jobs[i].reason, "not applied"));
		ASSERT_EQ_INT(jobs[i].nranks, 3);
		snprintf(path, sizeof(path), "%s/k8s/manifests.json",
			 jobs[i].dir);
		ASSERT(access(path, R_OK) == 0);
		for (int k = 0; k < i; k++)
			ASSERT(strcmp(jobs[i].id, jobs[k].id));
	}
	hp_job_list_free(jobs, n);
	/* no half-made folder is left behind */
	{
		char *argv[] = {"find",	 s.jobs,   "-maxdepth", "1",
				"-name", ".new-*", NULL};
		struct hp_buf out;
		int st;
		hp_buf_init(&out, 1 << 16);
		ASSERT_EQ_INT(hp__run(argv, 10, &out, NULL, &st, &err), 0);
		ASSERT_STR_EQ(hp_buf_str(&out), "");
		hp_buf_release(&out);
	}
	hp_deploy_free(d);
	hp_plan_release(&s.plan);
	rm_rf(s.dir);
}

/* sbatch refuses: the job exists, failed, with sbatch's reason. */
HP_TEST(deploy_backend_refusal_leaves_job_failed)
{
	struct sub s;
	struct hp_deploy_config cfg = {0};
	struct hp_deploy *d;
	struct hp_error err = {0};
	struct hp_job j;
	char id[HP_JOB_ID_MAX];

	sub_init(&s, mixed_plan);
	cfg.jobs_dir = s.jobs;
	cfg.hetpool = "/bin/true";
	cfg.sbatch = "/bin/false";
	d = hp_deploy_new(&cfg, &err);
	ASSERT(d);
	s.o.backend = HP_BACKEND_SLURM;
	s.o.trainer = "/bin/true";
	ASSERT_EQ_INT(hp_deploy_submit(d, &s.plan, &s.t, &s.o, id, &err),
		      HP_EIO);
	ASSERT(id[0]);
	ASSERT(strstr(err.msg, "sbatch refused the job"));
	ASSERT_EQ_INT(hp_deploy_status(d, id, true, &j, &err), 0);
	ASSERT_EQ_INT(j.state, HP_JOB_FAILED);
	ASSERT(strstr(j.reason, "sbatch refused the job"));
	hp_job_release(&j);
	/* bad options: no job is made */
	s.o.gres_map = "a100";
	ASSERT_EQ_INT(hp_deploy_submit(d, &s.plan, &s.t, &s.o, id, &err),
		      HP_EINVAL);
	ASSERT_STR_EQ(id, "");
	ASSERT(strstr(err.msg, "GRES map 'a100'"));
	/* a range test upside down, or with a fixed rate too */
	s.o.gres_map = NULL;
	s.t.lr_range_min = 1;
	s.t.lr_range_max = 0.1;
	ASSERT_EQ_INT(hp_deploy_submit(d, &s.plan, &s.t, &s.o, id, &err),
		      HP_EINVAL);
	ASSERT_STR_EQ(id, "");
	ASSERT(strstr(err.msg, "lr_min < lr_max"));
	s.t.lr_range_max = 100;
	s.t.lr = 0.1;
	ASSERT_EQ_INT(hp_deploy_submit(d, &s.plan, &s.t, &s.o, id, &err),
		      HP_EINVAL);
	ASSERT(strstr(err.msg, "no lr"));
	/* a trainer that is a folder (access(X_OK) passes one), a deadline
	 * that has passed or is no time */
	s.t.lr = s.t.lr_range_min = s.t.lr_range_max = 0;
	s.o.trainer = s.dir;
	ASSERT_EQ_INT(hp_deploy_submit(d, &s.plan, &s.t, &s.o, id, &err),
		      HP_EINVAL);
	ASSERT_STR_EQ(id, "");
	ASSERT(strstr(err.msg, "no hetpool-train at") &&
	       strstr(err.msg, "executable file"));
	s.o.trainer = "/bin/true";
	s.o.deadline_at_s = (double)time(NULL) - 10;
	ASSERT_EQ_INT(hp_deploy_submit(d, &s.plan, &s.t, &s.o, id, &err),
		      HP_EINVAL);
	ASSERT_STR_EQ(id, "");
	ASSERT(strstr(err.msg, "has passed"));
	s.o.deadline_at_s = NAN;
	ASSERT_EQ_INT(hp_deploy_submit(d, &s.plan, &s.t, &s.o, id, &err),
		      HP_EINVAL);
	ASSERT(strstr(err.msg, "not a Unix time"));
	hp_deploy_free(d);
	hp_plan_release(&s.plan);
	rm_rf(s.dir);
}

/* sbatch's --time for a deadline: 1.5 x the prediction, at least 10
 * minutes, rounded up, and no longer than the time to the deadline
 * (rounded down, at least a minute); none without a deadline or a
 * prediction.  The minutes worked by hand. */
HP_TEST(deploy_slurm_time_limit)
{
	static const struct {
		double predicted_s, window_s;
		int64_t want_min;
	} cases[] = {
	    {1200, 7200, 30},		      /* 1800 s */
	    {1201, 7200, 31},		      /* 1801.5 s, rounded up */
	    {600, 7200, 15},  {12, 7200, 10}, /* the least, 600 s */
	    {1200, 1259, 20}, /* the window, 20.98 min, rounded down */
	    {1200, 30, 1},    /* under a minute to go: 1 */
	    {1200, 0, 0},     /* no deadline */
	    {0, 7200, 0},     /* no prediction */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		ASSERT_EQ_INT((int)hp__slurm_time_limit_min(
				  cases[i].predicted_s, cases[i].window_s),
			      (int)cases[i].want_min);
	ASSERT_EQ_INT((int)hp__slurm_time_limit_min(NAN, 7200), 0);
}

/* What rank 1 of a Slurm job starts as: its GPU is the one at its local
 * index among those Slurm gave its component; with no NVIDIA driver it
 * trains on the CPU, said so, and every rank is told so. */
HP_TEST(deploy_rank_prepare_slurm_rank)
{
	struct sub s;
	struct hp_deploy_config cfg = {0};
	struct hp_deploy *d;
	struct hp_error err = {0};
	struct hp_rank_exec x;
	char id[HP_JOB_ID_MAX], jobdir[1024], path[1200];
	bool driver = hp__nvidia_driver();
	json_t *rec;

	sub_init(&s, mixed_plan);
	cfg.jobs_dir = s.jobs;
	cfg.hetpool = "/bin/true";
	cfg.sbatch = "/bin/echo"; /* "--parsable PATH": not a job id */
	d = hp_deploy_new(&cfg, &err);
	s.o.backend = HP_BACKEND_SLURM;
	s.o.trainer = "/bin/true";
	ASSERT_EQ_INT(hp_deploy_submit(d, &s.plan, &s.t, &s.o, id, &err),
		      HP_EIO);
	ASSERT(strstr(err.msg, "not a job id"));
	snprintf(jobdir, sizeof(jobdir), "%s/%s", s.jobs, id);
	setenv("SLURM_PROCID", "1", 1);
	setenv("SLURM_LOCALID", "1", 1);
	setenv("CUDA_VISIBLE_DEVICES", "0,1", 1);
	setenv("SLURMD_NODENAME", "hp-a100", 1);
	ASSERT_EQ_INT(hp_deploy_rank_prepare(jobdir, &x, &err), 0);
	ASSERT_EQ_INT(x.rank, 1);
	ASSERT_STR_EQ(x.argv[0], "/bin/true");
	{
		bool saw = false;
		for (int i = 0; x.argv[i]; i++)
			if (!strcmp(x.argv[i], "--devices")) {
				ASSERT_STR_EQ(x.argv[i + 1],
					      driver ? "cuda,cuda,cuda"
						     : "cpu,cpu,cpu");
				saw = true;
			}
		ASSERT(saw);
	}
	ASSERT_STR_EQ(x.env[0], "CUDA_VISIBLE_DEVICES=1");
	snprintf(path, sizeof(path), "%s/logs/rank-1.log", jobdir);
	ASSERT_STR_EQ(x.log, path);
	hp_rank_exec_release(&x);
	snprintf(path, sizeof(path), "%s/logs/rank-1.json", jobdir);
	rec = hp__read_json(path, 1 << 16, &err);
	ASSERT(rec);
	ASSERT_STR_EQ(json_string_value(json_object_get(rec, "node")),
		      "hp-a100");
	ASSERT_STR_EQ(
	    json_string_value(json_object_get(rec, "cuda_visible_devices")),
	    "1");
	ASSERT_STR_EQ(json_string_value(json_object_get(rec, "device")),
		      driver ? "cuda" : "cpu");
	if (!driver)
		ASSERT(strstr(json_string_value(json_object_get(rec, "note")),
			      "no NVIDIA driver"));
	json_decref(rec);
	/* a rank the job does not have */
	setenv("SLURM_PROCID", "3", 1);
	ASSERT_EQ_INT(hp_deploy_rank_prepare(jobdir, &x, &err), HP_EINVAL);
	ASSERT(strstr(err.msg, "SLURM_PROCID is not a rank of this 3-rank "
			       "job"));
	hp_deploy_free(d);
	hp_plan_release(&s.plan);
	rm_rf(s.dir);
}

/* A job whose launch stops short (Slurm: sbatch, /bin/echo, answers no
 * job id; mpi: the supervisor, /bin/true, records nothing): the submission
 * fails after launch.json is written, and the job's folder stays for
 * hp_deploy_rank_prepare() and the tests to read.  cat: the submission's
 * catalog (may be NULL). */
static void short_job(const char *plan, enum hp_backend backend,
		      bool no_cpu_fallback, const struct hp_catalog *cat,
		      char *jobdir, size_t n, struct sub *s,
		      struct hp_deploy **d)
{
	struct hp_deploy_config cfg = {0};
	struct hp_error err = {0};
	char id[HP_JOB_ID_MAX];

	sub_init(s, plan);
	cfg.jobs_dir = s->jobs;
	cfg.hetpool = "/bin/true";
	cfg.sbatch = "/bin/echo";
	cfg.mpirun = "/bin/true";
	*d = hp_deploy_new(&cfg, &err);
	s->o.backend = backend;
	s->o.trainer = "/bin/true";
	s->o.no_cpu_fallback = no_cpu_fallback;
	s->o.cat = cat;
	ASSERT_EQ_INT(hp_deploy_submit(*d, &s->plan, &s->t, &s->o, id, &err),
		      HP_EIO);
	snprintf(jobdir, n, "%s/%s", s->jobs, id);
}

static void slurm_job(const char *plan, bool no_cpu_fallback, char *jobdir,
		      size_t n, struct sub *s, struct hp_deploy **d)
{
	short_job(plan, HP_BACKEND_SLURM, no_cpu_fallback, NULL, jobdir, n, s,
		  d);
}

/* The value after flag in argv, or NULL. */
static const char *arg_after(char *const *argv, const char *flag)
{
	for (int i = 0; argv[i]; i++)
		if (!strcmp(argv[i], flag))
			return argv[i + 1];
	return NULL;
}

/* A GPU rank on a node whose GPUs CUDA_VISIBLE_DEVICES hides takes the
 * path of a node without a driver, driver or not: the CPU, said so, every
 * rank told so, and the trainer sees no GPU; with --no-cpu-fallback, an
 * error naming the variable. */
HP_TEST(deploy_rank_prepare_hidden_gpus)
{
	struct sub s;
	struct hp_deploy *d;
	struct hp_error err = {0};
	struct hp_rank_exec x;
	char jobdir[1024], path[1200];
	const char *note, *devices;
	json_t *rec;

	slurm_job(mixed_plan, false, jobdir, sizeof(jobdir), &s, &d);
	setenv("SLURM_PROCID", "2", 1);
	setenv("SLURM_LOCALID", "0", 1);
	setenv("CUDA_VISIBLE_DEVICES", "NoDevFiles", 1);
	unsetenv("SLURMD_NODENAME");
	ASSERT_EQ_INT(hp_deploy_rank_prepare(jobdir, &x, &err), 0);
	ASSERT_EQ_INT(x.rank, 2);
	devices = arg_after(x.argv, "--devices");
	ASSERT(devices);
	ASSERT_STR_EQ(devices, "cpu,cpu,cpu");
	ASSERT_STR_EQ(x.env[0], "CUDA_VISIBLE_DEVICES=");
	hp_rank_exec_release(&x);
	snprintf(path, sizeof(path), "%s/logs/rank-2.json", jobdir);
	rec = hp__read_json(path, 1 << 16, &err);
	ASSERT(rec);
	ASSERT_STR_EQ(json_string_value(json_object_get(rec, "requested")),
		      "cuda");
	ASSERT_STR_EQ(json_string_value(json_object_get(rec, "device")), "cpu");
	ASSERT_STR_EQ(
	    json_string_value(json_object_get(rec, "cuda_visible_devices")),
	    "");
	note = json_string_value(json_object_get(rec, "note"));
	ASSERT(note &&
	       strstr(note, "planned for GPU type t4; "
			    "CUDA_VISIBLE_DEVICES hides every GPU") &&
	       strstr(note, "so it trained on the CPU"));
	json_decref(rec);
	/* a list of devices hides nothing: the rank takes the one at its
	 * local index (on the CPU only where there is no driver) */
	setenv("CUDA_VISIBLE_DEVICES", "3", 1);
	ASSERT_EQ_INT(hp_deploy_rank_prepare(jobdir, &x, &err), 0);
	ASSERT_STR_EQ(x.env[0], "CUDA_VISIBLE_DEVICES=3");
	hp_rank_exec_release(&x);
	hp_deploy_free(d);
	hp_plan_release(&s.plan);
	rm_rf(s.dir);

	/* --no-cpu-fallback: the rank fails, naming the variable */
	slurm_job(mixed_plan, true, jobdir, sizeof(jobdir), &s, &d);
	setenv("SLURM_PROCID", "0", 1);
	setenv("CUDA_VISIBLE_DEVICES", "-1", 1);
	ASSERT_EQ_INT(hp_deploy_rank_prepare(jobdir, &x, &err), HP_EDEVICE);
	ASSERT(strstr(err.msg, "rank 0: the plan gives it a a100 GPU but "
			       "CUDA_VISIBLE_DEVICES hides every GPU of node"));
	unsetenv("CUDA_VISIBLE_DEVICES");
	unsetenv("SLURM_PROCID");
	unsetenv("SLURM_LOCALID");
	hp_deploy_free(d);
	hp_plan_release(&s.plan);
	rm_rf(s.dir);
}

/* The mpi backend on a node with GPUs of two types: the plan numbers each
 * rank's GPU within its type (both 0 here), so the node must find it among
 * its own GPUs by the type's names, in bus order; launch.json carries the
 * names, and hp__gpu_pick() does the finding. */
HP_TEST(deploy_mpi_gpu_of_its_type_on_a_mixed_node)
{
	static const char *two_types =
	    "{\"choice\": {\"devices\": [{\"node\": \"n1\", \"type\": "
	    "\"a100\", \"count\": 1, \"local_batch\": 12}, {\"node\": "
	    "\"n1\", \"type\": \"t4\", \"count\": 2, \"local_batch\": 10}], "
	    "\"global_batch\": 32, \"steps\": 4}}";
	struct hp__gpu bus[4] = {{"Tesla T4", "0000:3b:00.0"},
				 {"NVIDIA A100-SXM4-80GB", "0000:5e:00.0"},
				 {"Tesla T4", "0000:86:00.0"},
				 {"NVIDIA GeForce RTX 4090", "0000:af:00.0"}};
	struct sub s;
	struct hp_deploy *d;
	struct hp_error err = {0};
	struct hp_catalog *cat =
	    hp_catalog_load(hp_test_path("data/devices.csv"), &err);
	struct hp__launch l;
	char jobdir[1024];
	int a100 = -1, t4[2] = {-1, -1}, nt4 = 0;

	ASSERT(cat);
	short_job(two_types, HP_BACKEND_MPI, false, cat, jobdir, sizeof(jobdir),
		  &s, &d);
	ASSERT_EQ_INT(hp__launch_load(jobdir, &l, &err), 0);
	ASSERT_EQ_INT(l.nranks, 3);
	for (int r = 0; r < l.nranks; r++) {
		const struct hp__launch_rank *x = &l.ranks[r];
		ASSERT(x->gpu && x->gpu_models);
		if (!strcmp(x->type, "a100"))
			a100 = r;
		else if (nt4 < 2)
			t4[nt4++] = r;
		/* the names of its own type only */
		for (int m = 0; x->gpu_models[m]; m++)
			ASSERT(hp_catalog_find(cat, x->gpu_models[m]) ==
			       hp_catalog_find(cat, x->type));
	}
	ASSERT(a100 >= 0 && nt4 == 2);
	/* the plan's numbers: the a100 and the first t4 are both GPU 0 of
	 * their type */
	ASSERT_EQ_INT(l.ranks[a100].gpu_index, 0);
	ASSERT_EQ_INT(l.ranks[t4[0]].gpu_index, 0);
	ASSERT_EQ_INT(l.ranks[t4[1]].gpu_index, 1);
	/* the node's: T4, A100, T4, a GPU of no planned type */
	ASSERT_EQ_INT(hp__gpu_pick(bus, 4, l.ranks[a100].gpu_models, 0, NULL),
		      1);
	ASSERT_EQ_INT(hp__gpu_pick(bus, 4, l.ranks[t4[0]].gpu_models, 0, NULL),
		      0);
	ASSERT_EQ_INT(hp__gpu_pick(bus, 4, l.ranks[t4[1]].gpu_models, 1, NULL),
		      2);
	{
		int have = -1;
		ASSERT_EQ_INT(
		    hp__gpu_pick(bus, 4, l.ranks[t4[1]].gpu_models, 2, &have),
		    -1);
		ASSERT_EQ_INT(have, 2); /* the two T4s */
	}
	ASSERT_EQ_INT(hp__gpu_pick(bus, 4, l.ranks[a100].gpu_models, 1, NULL),
		      -1);
	ASSERT_EQ_INT(hp__gpu_pick(bus, 0, l.ranks[a100].gpu_models, 0, NULL),
		      -1);
	hp__launch_release(&l);
	hp_deploy_free(d);
	hp_plan_release(&s.plan);
	hp_catalog_free(cat);
	rm_rf(s.dir);
}

/* The network the plan gives a node reaches its ranks: a GPU rank of a job
 * on more than one node, over sockets, runs with NCCL's InfiniBand
 * transport off, unless the launcher's environment says otherwise; a CPU
 * rank, an RDMA node or a one-node job is left to NCCL. */
static bool env_has(char **env, const char *kv)
{
	for (int i = 0; env && env[i]; i++)
		if (!strcmp(env[i], kv))
			return true;
	return false;
}

static bool env_has_key(char **env, const char *key)
{
	size_t n = strlen(key);

	for (int i = 0; env && env[i]; i++)
		if (!strncmp(env[i], key, n) && env[i][n] == '=')
			return true;
	return false;
}

HP_TEST(deploy_rank_network_from_plan)
{
	static const char *two_nodes =
	    "{\"choice\": {\"devices\": [{\"node\": \"n1\", \"type\": "
	    "\"a100\", \"count\": 1, \"local_batch\": 8, \"net_transport\": "
	    "\"socket\"}, {\"node\": \"n2\", \"type\": \"a100\", \"count\": "
	    "1, \"local_batch\": 8, \"net_transport\": \"rdma\"}], "
	    "\"global_batch\": 16, \"steps\": 4}}";
	static const char *one_node =
	    "{\"choice\": {\"devices\": [{\"node\": \"n1\", \"type\": "
	    "\"a100\", \"count\": 2, \"local_batch\": 8, \"net_transport\": "
	    "\"socket\"}], \"global_batch\": 16, \"steps\": 4}}";
	struct sub s;
	struct hp_deploy *d;
	struct hp_error err = {0};
	struct hp_rank_exec x;
	char jobdir[1024], path[1200];
	json_t *rec;

	unsetenv("NCCL_IB_DISABLE");
	unsetenv("SLURM_LOCALID");
	setenv("CUDA_VISIBLE_DEVICES", "0", 1);
	slurm_job(two_nodes, false, jobdir, sizeof(jobdir), &s, &d);
	ASSERT(s.plan.nnodes == 2 &&
	       s.plan.nodes[0].transport == HP_NET_SOCKET);
	{
		/* the job's plan.json says it, per node */
		char *pj = hp_plan_json(&s.plan);
		json_t *o = json_loads(pj, 0, NULL);
		json_t *nodes = json_object_get(o, "nodes");
		ASSERT_STR_EQ(json_string_value(json_object_get(
				  json_array_get(nodes, 1), "net_transport")),
			      "rdma");
		json_decref(o);
		free(pj);
	}
	/* rank 0 on n1, sockets: InfiniBand off */
	setenv("SLURM_PROCID", "0", 1);
	ASSERT_EQ_INT(hp_deploy_rank_prepare(jobdir, &x, &err), 0);
	ASSERT(env_has(x.env, "NCCL_IB_DISABLE=1"));
	hp_rank_exec_release(&x);
	snprintf(path, sizeof(path), "%s/logs/rank-0.json", jobdir);
	rec = hp__read_json(path, 1 << 16, &err);
	ASSERT(rec);
	ASSERT_STR_EQ(json_string_value(json_object_get(rec, "net_transport")),
		      "socket");
	ASSERT_STR_EQ(
	    json_string_value(json_object_get(rec, "nccl_ib_disable")), "1");
	json_decref(rec);
	/* rank 1 on n2, RDMA: left to NCCL */
	setenv("SLURM_PROCID", "1", 1);
	ASSERT_EQ_INT(hp_deploy_rank_prepare(jobdir, &x, &err), 0);
	ASSERT(!env_has_key(x.env, "NCCL_IB_DISABLE"));
	hp_rank_exec_release(&x);
	/* the launcher's own setting wins */
	setenv("NCCL_IB_DISABLE", "0", 1);
	setenv("SLURM_PROCID", "0", 1);
	ASSERT_EQ_INT(hp_deploy_rank_prepare(jobdir, &x, &err), 0);
	ASSERT(!env_has_key(x.env, "NCCL_IB_DISABLE"));
	hp_rank_exec_release(&x);
	rec = hp__read_json(path, 1 << 16, &err);
	ASSERT(rec);
	ASSERT_STR_EQ(
	    json_string_value(json_object_get(rec, "nccl_ib_disable")), "0");
	json_decref(rec);
	unsetenv("NCCL_IB_DISABLE");
	hp_deploy_free(d);
	hp_plan_release(&s.plan);
	rm_rf(s.dir);
	/* one node: NCCL does not use the network */
	slurm_job(one_node, false, jobdir, sizeof(jobdir), &s, &d);
	setenv("SLURM_PROCID", "1", 1);
	ASSERT_EQ_INT(hp_deploy_rank_prepare(jobdir, &x, &err), 0);
	ASSERT(!env_has_key(x.env, "NCCL_IB_DISABLE"));
	hp_rank_exec_release(&x);
	hp_deploy_free(d);
	hp_plan_release(&s.plan);
	rm_rf(s.dir);
}

/* A local job whose supervisor is gone is failed at the next look, with
 * the reason. */
HP_TEST(deploy_vanished_supervisor_is_noticed)
{
	const char *dir = tmpdir();
	char jobs[512], jobdir[600];
	struct hp_deploy *d;
	struct hp_job j = {0}, k;
	struct hp_error err = {0};
	pid_t pid = fork();
	int st;

	if (pid == 0)
		_exit(0);
	waitpid(pid, &st, 0); /* pid is now no process of ours */
	snprintf(jobs, sizeof(jobs), "%s/jobs", dir);
	d = context(jobs);
	snprintf(jobdir, sizeof(jobdir), "%s/gone", jobs);
	mkdir(jobdir, 0755);
	snprintf(j.id, sizeof(j.id), "gone");
	snprintf(j.dir, sizeof(j.dir), "%s", jobdir);
	j.state = HP_JOB_RUNNING;
	j.backend = HP_BACKEND_LOCAL;
	j.created_s = hp__wall_now();
	j.pid = pid;
	j.pid_start = 12345;
	j.exit_status = -1;
	ASSERT_EQ_INT(hp__job_save(&j, &err), 0);
	ASSERT_EQ_INT(hp_deploy_status(d, "gone", true, &k, &err), 0);
	ASSERT_EQ_INT(k.state, HP_JOB_FAILED);
	ASSERT(strstr(k.reason, "supervisor"));
	hp_job_release(&k);
	/* a rank that said why (its supervisor could not record it: a full
	 * disk) has its line in the reason */
	snprintf(jobdir, sizeof(jobdir), "%s/full", jobs);
	mkdir(jobdir, 0755);
	{
		char logs[700];
		snprintf(logs, sizeof(logs), "%s/logs", jobdir);
		mkdir(logs, 0755);
		snprintf(logs, sizeof(logs), "%s/logs/rank-0.log", jobdir);
		write_file(logs, "step 1499\nhetpool-train: checkpoint at step "
				 "1500: cannot write 'c': No space left on "
				 "device\n");
	}
	snprintf(j.id, sizeof(j.id), "full");
	snprintf(j.dir, sizeof(j.dir), "%s", jobdir);
	j.nranks = 1;
	ASSERT_EQ_INT(hp__job_save(&j, &err), 0);
	ASSERT_EQ_INT(hp_deploy_status(d, "full", true, &k, &err), 0);
	ASSERT_EQ_INT(k.state, HP_JOB_FAILED);
	ASSERT(strstr(k.reason, "supervisor") &&
	       strstr(k.reason, "a rank said: hetpool-train: checkpoint at "
				"step 1500: cannot write 'c': No space left"));
	hp_job_release(&k);
	ASSERT_EQ_INT(hp_deploy_status(d, "nope", true, &k, &err), HP_ENOENT);
	ASSERT_EQ_INT(hp_deploy_status(d, "../x", true, &k, &err), HP_EINVAL);
	hp_deploy_free(d);
	rm_rf(dir);
}

/* ---- a launcher that does not exit once its ranks have ended */

/* A job folder whose launch file runs launcher (1 rank, linger_s 0.3,
 * grace 1 s, squeue as given), rank 0 recorded on this host as the pid of
 * a process that has ended, and, with results, the trainer's results
 * file in the given state. */
static void stuck_job(const char *jobdir, const char *backend,
		      const char *launcher, const char *squeue,
		      const char *results)
{
	char path[1200], host[HP_NAME_MAX], text[4096];
	struct hp_job j = {0};
	struct hp_error err = {0};
	pid_t pid = fork();
	int st;

	if (pid == 0)
		_exit(0);
	waitpid(pid, &st, 0);
	hp__hostname(host, sizeof(host));
	snprintf(path, sizeof(path), "%s/logs", jobdir);
	ASSERT_EQ_INT(hp_mkdirs(path, 0755, &err), 0);
	snprintf(path, sizeof(path), "%s/out", jobdir);
	ASSERT_EQ_INT(hp_mkdirs(path, 0755, &err), 0);
	snprintf(
	    text, sizeof(text),
	    "{\"version\": 1, \"id\": \"stuck\", \"backend\": \"%s\", "
	    "\"jobdir\": \"%s\", \"hetpool\": \"/bin/true\", "
	    "\"stage\": null, \"launcher\": %s, "
	    "\"trainer\": [\"/bin/true\", \"--devices\", \"cpu\"], "
	    "\"devices_arg\": 2, \"cpu_fallback\": true, "
	    "\"grace_s\": 1, \"linger_s\": 0.3, \"squeue\": \"%s\", "
	    "\"ranks\": [{\"rank\": 0, \"node\": \"n\", \"type\": \"cpu\", "
	    "\"device\": \"cpu\", \"component\": 0, \"local_rank\": 0, "
	    "\"gpu_index\": 0, \"local_batch\": 8, "
	    "\"cuda_visible_devices\": \"\", \"cpus\": null, "
	    "\"threads\": 1}], "
	    "\"components\": [{\"type\": \"cpu\", \"gres\": \"\", "
	    "\"gpu\": false, \"per_node\": 1, \"nodes\": 1, "
	    "\"first_rank\": 0, \"ranks\": 1}]}",
	    backend, jobdir, launcher, squeue);
	snprintf(path, sizeof(path), "%s/launch.json", jobdir);
	write_file(path, text);
	snprintf(
	    text, sizeof(text),
	    "{\"rank\": 0, \"host\": \"%s\", \"node\": \"n\", \"pid\": %d, "
	    "\"pid_start\": 1, \"type\": \"cpu\", \"requested\": \"cpu\", "
	    "\"device\": \"cpu\", \"cuda_visible_devices\": \"\", "
	    "\"note\": \"\", \"cpus\": [], \"threads\": 1}",
	    host, (int)pid);
	snprintf(path, sizeof(path), "%s/logs/rank-0.json", jobdir);
	write_file(path, text);
	if (results) {
		snprintf(text, sizeof(text),
			 "{\"state\": \"%s\", \"test_accuracy\": 0.5, "
			 "\"steps\": 3, \"wall_s\": 1.0}",
			 results);
		snprintf(path, sizeof(path), "%s/out/results.json", jobdir);
		write_file(path, text);
	}
	snprintf(j.id, sizeof(j.id), "stuck");
	snprintf(j.dir, sizeof(j.dir), "%s", jobdir);
	j.state = HP_JOB_QUEUED;
	j.backend =
	    strcmp(backend, "slurm") ? HP_BACKEND_LOCAL : HP_BACKEND_SLURM;
	j.created_s = hp__wall_now();
	j.nranks = 1;
	j.exit_status = -1;
	ASSERT_EQ_INT(hp__job_save(&j, &err), 0);
}

/* The supervisor stops a launcher that outlives its ranks and finishes
 * the job from the trainer's results: succeeded when they are complete,
 * failed when there are none; a launcher that exits is waited for. */
HP_TEST(deploy_stuck_launcher_is_stopped)
{
	const char *dir = tmpdir();
	static const struct {
		const char *launcher, *results;
		enum hp_job_state state;
		const char *reason;
	} cases[] = {
	    {"[\"/bin/sleep\", \"600\"]", "completed", HP_JOB_SUCCEEDED,
	     "sleep did not exit within 0.3 s after every rank had ended"},
	    {"[\"/bin/sleep\", \"600\"]", NULL, HP_JOB_FAILED,
	     "the trainer wrote no results"},
	    {"[\"/bin/sleep\", \"600\"]", "cancelled", HP_JOB_CANCELLED,
	     "stopped on a SIGTERM"},
	    {"[\"/bin/true\"]", "stopped", HP_JOB_SUCCEEDED,
	     "the trainer stopped early"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char jobdir[600];
		struct hp_job j;
		struct hp_error err = {0};
		volatile sig_atomic_t stop = 0;
		double t0 = hp_now_s();

		snprintf(jobdir, sizeof(jobdir), "%s/j%zu", dir, i);
		stuck_job(jobdir, "local", cases[i].launcher, "squeue",
			  cases[i].results);
		ASSERT_EQ_INT(hp_deploy_supervise(jobdir, -1, &stop, &err), 0);
		/* linger 0.3 s, looked at every 1 s: stopped within seconds */
		ASSERT(hp_now_s() - t0 < 10);
		ASSERT_EQ_INT(hp__job_load(jobdir, &j, &err), 0);
		ASSERT_EQ_INT(j.state, cases[i].state);
		ASSERT(strstr(j.reason, cases[i].reason));
		hp_job_release(&j);
	}
	rm_rf(dir);
}

/* The Slurm batch step stops an srun that outlives its job steps (Slurm
 * 22.05's hang after a heterogeneous PMIx step): squeue (here a script
 * that lists only the batch step, and records how it was asked) says the
 * steps are gone; the job succeeds from the trainer's results. */
HP_TEST(deploy_stuck_srun_is_stopped)
{
	const char *dir = tmpdir();
	char jobdir[600], squeue[700], args[700], script[700], text[1200];
	struct hp_job j;
	struct hp_error err = {0};
	volatile sig_atomic_t stop = 0;
	int status = -1;
	double t0;
	char *got;
	size_t len;

	snprintf(jobdir, sizeof(jobdir), "%s/j", dir);
	snprintf(squeue, sizeof(squeue), "%s/squeue", dir);
	snprintf(args, sizeof(args), "%s/squeue.args", dir);
	snprintf(text, sizeof(text),
		 "#!/bin/sh\necho \"$*\" >>%s\necho 4242.batch\n", args);
	write_file(squeue, text);
	chmod(squeue, 0755);
	stuck_job(jobdir, "slurm", "[\"/bin/sleep\", \"600\"]", squeue,
		  "completed");
	snprintf(script, sizeof(script), "%s/job.sbatch", jobdir);
	snprintf(text, sizeof(text),
		 "#!/bin/true _slurm-batch\n# hetpool-job: %s\n", jobdir);
	write_file(script, text);
	unsetenv("SLURM_JOB_ID_HET_GROUP_0");
	setenv("SLURM_JOB_ID", "4242", 1);
	t0 = hp_now_s();
	ASSERT_EQ_INT(hp_deploy_slurm_batch(script, &stop, &status, &err), 0);
	ASSERT(hp_now_s() - t0 < 15);
	ASSERT_EQ_INT(status, 0);
	ASSERT_EQ_INT(hp__job_load(jobdir, &j, &err), 0);
	ASSERT_EQ_INT(j.state, HP_JOB_SUCCEEDED);
	ASSERT(strstr(j.reason, "sleep did not exit"));
	ASSERT(strstr(j.reason, "after its job steps had ended"));
	hp_job_release(&j);
	ASSERT_EQ_INT(hp_read_file(args, 1 << 16, &got, &len, &err), 0);
	ASSERT(strstr(got, "-h -s -j 4242 -o %i"));
	free(got);
	rm_rf(dir);
}

/* A started Slurm job that squeue shows pending again was requeued (a
 * node failed): it stays running, and its reason says it waits and why;
 * running again, the reason goes (until 3 December it said nothing). */
HP_TEST(deploy_slurm_requeued_job_says_it_waits)
{
	const char *dir = tmpdir();
	char jobs[512], jobdir[600], squeue[700], state[700], text[1400];
	struct hp_deploy_config cfg = {.hetpool = "/bin/true"};
	struct hp_deploy *d;
	struct hp_job j = {0}, k;
	struct hp_error err = {0};

	snprintf(jobs, sizeof(jobs), "%s/jobs", dir);
	snprintf(squeue, sizeof(squeue), "%s/squeue", dir);
	snprintf(state, sizeof(state), "%s/state", dir);
	snprintf(text, sizeof(text), "#!/bin/sh\ncat %s\n", state);
	write_file(squeue, text);
	chmod(squeue, 0755);
	write_file(state, "4242|PENDING|BeginTime\n");
	cfg.jobs_dir = jobs;
	cfg.squeue = squeue;
	ASSERT((d = hp_deploy_new(&cfg, &err)));
	snprintf(jobdir, sizeof(jobdir), "%s/rq", jobs);
	mkdir(jobdir, 0755);
	snprintf(j.id, sizeof(j.id), "rq");
	snprintf(j.dir, sizeof(j.dir), "%s", jobdir);
	snprintf(j.slurm_id, sizeof(j.slurm_id), "4242");
	j.state = HP_JOB_RUNNING;
	j.backend = HP_BACKEND_SLURM;
	j.created_s = j.started_s = hp__wall_now();
	j.exit_status = -1;
	ASSERT_EQ_INT(hp__job_save(&j, &err), 0);
	ASSERT_EQ_INT(hp_deploy_status(d, "rq", true, &k, &err), 0);
	ASSERT_EQ_INT(k.state, HP_JOB_RUNNING);
	ASSERT(strstr(k.reason, "Slurm requeued it") &&
	       strstr(k.reason, "BeginTime"));
	hp_job_release(&k);
	write_file(state, "4242|RUNNING|None\n");
	ASSERT_EQ_INT(hp_deploy_status(d, "rq", true, &k, &err), 0);
	ASSERT_EQ_INT(k.state, HP_JOB_RUNNING);
	ASSERT(!strstr(k.reason, "requeued"));
	hp_job_release(&k);
	hp_deploy_free(d);
	rm_rf(dir);
}
