/*
 * k8s.c - the kubernetes backend: the plan as manifests (one JSON List,
 * JOBDIR/k8s/manifests.json; kubectl takes JSON as it takes YAML), applied
 * with kubectl when a cluster is configured, otherwise only written (the
 * job then stays queued and says so).
 *
 * Workers request nvidia.com/gpu (their node's device count), CPU and
 * memory, select nodes by the GPU product label nvidia.com/gpu.product
 * (tolerating the nvidia.com/gpu taint); each stages the data in an init
 * container (`hetpool _stage`, checksums verified) into a pod-local
 * emptyDir, and is ready once its sshd answers.  One component (every
 * worker alike) becomes a Kubeflow MPIJob (kubeflow.org/v2beta1, its
 * launcher made once the workers are ready); mixed types become one
 * Indexed Job per component plus a headless Service that names their
 * pods, and a launcher Job that first waits for every worker's sshd.
 * Either way the launcher runs mpirun with one app context per rank: its
 * host, its CUDA_VISIBLE_DEVICES and the trainer's argv with every rank's
 * local batch.  The outputs need a claim (--k8s-volume): a job without
 * one is written, never applied.  The image must hold hetpool,
 * hetpool-train, Open MPI and sshd (as the MPI operator's images do).
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "deploy/deploy_int.h"
#include "util/banned.h"

/* Paths inside the pods. */
#define POD_JOB "/hetpool/job"
#define POD_DATA "/hetpool/data"
#define POD_OUT "/hetpool/out"
/* Most bytes of model a ConfigMap carries (its limit is 1 MiB). */
#define K8S_MODEL_MAX (900u << 10)
/* Most ranks one mpirun command line names. */
#define K8S_MAX_RANKS 1024
/* Most bytes of the launcher's command: it repeats the trainer's arguments
 * (the local batches and devices of every rank) once per rank, so it grows
 * with the square of the ranks, and it must fit an object (etcd's limit is
 * 1.5 MiB) and an exec (ARG_MAX, 2 MiB with the environment). */
#define K8S_ARGV_MAX (1u << 20)
/* What a worker pod requests besides its GPUs, per rank: the trainer's
 * threads (--threads), else K8S_CPU_PER_RANK cores (the plan does not know
 * its nodes' cores), and memory: what hp__comp_mem_mib() says for a CPU
 * rank whose plan gives its predicted memory, else K8S_MEM_GI_PER_RANK
 * GiB (a GPU rank's model lives on its GPU).  The launcher (mpirun)
 * K8S_LAUNCHER_CPU and K8S_LAUNCHER_MEM. */
#define K8S_CPU_PER_RANK 2
#define K8S_MEM_GI_PER_RANK 4
#define K8S_LAUNCHER_CPU "500m"
#define K8S_LAUNCHER_MEM "512Mi"
/* Most seconds --k8s-worker-wait takes: a week. */
#define K8S_WORKER_WAIT_MAX (7 * 86400.0)
/* How a reason that says the state could not be read begins (the next
 * read that works drops it). */
#define K8S_READ_FAILED "state not read from the cluster"

static bool mpijob(const struct hp__submit *s)
{
	if (s->opts->k8s_flavor == HP_K8S_MPIJOB)
		return true;
	if (s->opts->k8s_flavor == HP_K8S_INDEXED)
		return false;
	return s->plan->ncomps == 1;
}

/* The nvidia.com/gpu.product label of a type: the map's, else the name
 * the driver gives the GPU as GPU feature discovery writes it (spaces to
 * '-': "NVIDIA A100-PCIE-40GB" -> "NVIDIA-A100-PCIE-40GB"), else the type.
 * The driver's name is the catalog's first alias in the driver's form
 * (it begins with the brand: "NVIDIA ", "Tesla ", "Quadro ", "GeForce "),
 * else its product name: the datasheet's name ("NVIDIA A100 PCIe 40GB")
 * is not the label ("NVIDIA-A100-PCIE-40GB"; an H100 SXM5 is
 * "NVIDIA-H100-80GB-HBM3"), and a selector that no node has leaves the
 * pods pending for ever. */
static const char *driver_name(const struct hp_device_type *t)
{
	static const char *const brands[] = {"NVIDIA ", "Tesla ", "Quadro ",
					     "GeForce "};

	for (int i = 0; i < t->naliases; i++)
		for (size_t b = 0; b < sizeof(brands) / sizeof(brands[0]); b++)
			if (!strncmp(t->aliases[i], brands[b],
				     strlen(brands[b])))
				return t->aliases[i];
	return t->product;
}

static int product_label(const struct hp__submit *s, const char *type,
			 char *out, size_t n, struct hp_error *err)
{
	const struct hp_device_type *t;
	char src[96];
	size_t k = 0;
	int rc;

	if ((rc = hp__map_get(s->opts->product_map, type, out, n, "product map",
			      err)))
		return rc;
	if (strcmp(out, type) || !s->opts->cat)
		return 0;
	/* a type the catalog does not know has no known label: its own name
	 * would select no node, and the pods would wait for ever */
	if (!(t = hp_catalog_find(s->opts->cat, type)))
		return hp_error_set(err, HP_EINVAL,
				    "GPU type '%s' is not in the device "
				    "catalog, so its node label "
				    "(nvidia.com/gpu.product) is not known: "
				    "give --product-map %s=LABEL",
				    type, type);
	if (!t->product[0])
		return 0;
	snprintf(src, sizeof(src), "%s", driver_name(t));
	for (const char *p = src; *p && *p != '(' && k + 1 < n; p++) {
		char c = *p;
		if (c == ' ')
			c = '-';
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.')
			out[k++] = c;
	}
	while (k > 0 && !((out[k - 1] >= 'a' && out[k - 1] <= 'z') ||
			  (out[k - 1] >= 'A' && out[k - 1] <= 'Z') ||
			  (out[k - 1] >= '0' && out[k - 1] <= '9')))
		k--;
	out[k] = '\0';
	if (!k)
		snprintf(out, n, "%s", type);
	return 0;
}

/* Whether name is a Kubernetes object name: a DNS-1123 label (a
 * namespace: at most 63 characters) or subdomain (a claim: 253, dots
 * too) of lowercase letters, digits and '-' that starts and ends with a
 * letter or digit.  The error names the first thing wrong. */
static int k8s_name_check(const char *what, const char *name, size_t max,
			  bool dots, struct hp_error *err)
{
	const char *allowed = dots ? "lowercase letters, digits, '-' and '.'"
				   : "lowercase letters, digits and '-'";
	size_t n = strlen(name);

	if (n == 0)
		return hp_error_set(err, HP_EINVAL, "%s is empty: give %s",
				    what, allowed);
	if (n > max)
		return hp_error_set(err, HP_EINVAL,
				    "%s '%.24s...' is %zu characters; "
				    "Kubernetes takes at most %zu",
				    what, name, n, max);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)name[i];
		if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    c == '-' || (dots && c == '.'))
			continue;
		if (c > ' ' && c < 0x7f)
			return hp_error_set(err, HP_EINVAL,
					    "%s '%s': '%c' (character %zu) "
					    "is not allowed; give %s",
					    what, name, c, i + 1, allowed);
		return hp_error_set(err, HP_EINVAL,
				    "%s: byte 0x%02x (character %zu) is not "
				    "allowed; give %s",
				    what, c, i + 1, allowed);
	}
	/* every character is one of those above */
	if (strchr("-.", name[0]) || strchr("-.", name[n - 1]))
		return hp_error_set(err, HP_EINVAL,
				    "%s '%s' must start and end with a "
				    "letter or digit",
				    what, name);
	return 0;
}

static bool have_cluster(struct hp_deploy *d);

static int k8s_check(struct hp__submit *s, struct hp_error *err)
{
	const struct hp_submit_opts *o = s->opts;
	char label[HP_NAME_MAX];
	struct stat st;
	int rc;

	if (s->plan->nranks > K8S_MAX_RANKS)
		return hp_error_set(err, HP_EINVAL,
				    "%d ranks: the kubernetes backend takes at "
				    "most %d",
				    s->plan->nranks, K8S_MAX_RANKS);
	if (o->k8s_flavor == HP_K8S_MPIJOB && s->plan->ncomps > 1)
		return hp_error_set(err, HP_EINVAL,
				    "an MPIJob has one kind of worker; this "
				    "plan has %d (mixed types or device "
				    "counts): use Indexed Jobs",
				    s->plan->ncomps);
	if (o->k8s_namespace &&
	    (rc =
		 k8s_name_check("namespace", o->k8s_namespace, 63, false, err)))
		return rc;
	if (o->k8s_volume && (rc = k8s_name_check("volume claim", o->k8s_volume,
						  253, true, err)))
		return rc;
	if (o->k8s_worker_wait_s != 0 &&
	    !(o->k8s_worker_wait_s >= 1 &&
	      o->k8s_worker_wait_s <= K8S_WORKER_WAIT_MAX))
		return hp_error_set(err, HP_EINVAL,
				    "worker wait %g s: give 1 to %.0f seconds",
				    o->k8s_worker_wait_s, K8S_WORKER_WAIT_MAX);
	if (o->image &&
	    (!*o->image || strlen(o->image) > 255 || strpbrk(o->image, " \t") ||
	     hp_str_has_control(o->image)))
		return hp_error_set(err, HP_EINVAL,
				    "image '%s' is not an image "
				    "reference",
				    o->image);
	for (int c = 0; c < s->plan->ncomps; c++)
		if (s->plan->comps[c].gpu &&
		    (rc = product_label(s, s->plan->comps[c].type, label,
					sizeof(label), err)))
			return rc;
	if (stat(s->train->model, &st) == 0 && st.st_size > K8S_MODEL_MAX)
		return hp_error_set(err, HP_EINVAL,
				    "model '%s' is %lld bytes; a ConfigMap "
				    "carries at most %u",
				    s->train->model, (long long)st.st_size,
				    K8S_MODEL_MAX);
	/* Without a claim, rank 0 writes the results, checkpoint and
	 * metrics into an emptyDir of its worker pod, which goes when the
	 * launcher ends (the workers are deleted then): a job applied so
	 * would train and lose what it made.  Written only, it may still be
	 * edited and applied by hand (its reason says so). */
	if (!o->k8s_volume && !o->k8s_no_apply && have_cluster(s->d))
		return hp_error_set(err, HP_EINVAL,
				    "no --k8s-volume: the job's outputs "
				    "(results, checkpoint, metrics) would be "
				    "lost with its pods; give --k8s-volume "
				    "CLAIM (a ReadWriteMany "
				    "PersistentVolumeClaim), or --no-apply to "
				    "only write the manifests");
	return 0;
}

static char *base64(const unsigned char *p, size_t n)
{
	static const char a[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char *out = malloc((n + 2) / 3 * 4 + 1), *q = out;

	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned)p[i] << 16 |
			     (i + 1 < n ? (unsigned)p[i + 1] << 8 : 0) |
			     (i + 2 < n ? p[i + 2] : 0);
		*q++ = a[v >> 18 & 63];
		*q++ = a[v >> 12 & 63];
		*q++ = i + 1 < n ? a[v >> 6 & 63] : '=';
		*q++ = i + 2 < n ? a[v & 63] : '=';
	}
	*q = '\0';
	return out;
}

/* The hosts of rank r's pod, as the launcher's mpirun names it. */
static void pod_host(const struct hp__submit *s, const char *name,
		     const char *ns, int r, char *out, size_t n)
{
	const struct hp_plan *p = s->plan;
	const struct hp_plan_rank *x = &p->ranks[r];
	const struct hp_plan_comp *c = &p->comps[x->comp];
	int index = (r - c->first_rank) / c->per_node;

	if (mpijob(s))
		/* kubeflow/mpi-operator v2beta1: NAME-worker-I.NAME.NS.svc */
		snprintf(out, n, "%s-worker-%d.%s.%s.svc", name, index, name,
			 ns);
	else
		snprintf(out, n, "%s-c%d-%d.%s", name, x->comp, index, name);
}

static json_t *labels(const struct hp__submit *s)
{
	return json_pack("{s:s, s:s}", "app.kubernetes.io/managed-by",
			 "hetpool", "hetpool.io/job", s->job->id);
}

/* The job's labels and its role: "worker" or "launcher". */
static json_t *role_labels(const struct hp__submit *s, const char *role)
{
	return json_pack("{s:s, s:s, s:s}", "app.kubernetes.io/managed-by",
			 "hetpool", "hetpool.io/job", s->job->id,
			 "hetpool.io/role", role);
}

/* The job's mounts; on a claim (--k8s-volume) its outputs go to a folder
 * of the job's own (out_sub, its id): jobs on one claim would otherwise
 * write into each other's out/ (and the trainer refuses a folder holding
 * another run). */
static json_t *mounts(bool data, bool out, const char *sub)
{
	json_t *m = json_array();

	json_array_append_new(m,
			      json_pack("{s:s, s:s, s:b}", "name", "job",
					"mountPath", POD_JOB, "readOnly", 1));
	if (data)
		json_array_append_new(m, json_pack("{s:s, s:s}", "name", "data",
						   "mountPath", POD_DATA));
	if (out && sub)
		json_array_append_new(m, json_pack("{s:s, s:s, s:s}", "name",
						   "out", "mountPath", POD_OUT,
						   "subPath", sub));
	else if (out)
		json_array_append_new(m, json_pack("{s:s, s:s}", "name", "out",
						   "mountPath", POD_OUT));
	return m;
}

static const char *out_sub(const struct hp__submit *s)
{
	return s->opts->k8s_volume ? s->job->id : NULL;
}

static json_t *volumes(const struct hp__submit *s, const char *name)
{
	char cm[128];
	json_t *out;

	snprintf(cm, sizeof(cm), "%s-job", name);
	if (s->opts->k8s_volume)
		out = json_pack("{s:s, s:{s:s}}", "name", "out",
				"persistentVolumeClaim", "claimName",
				s->opts->k8s_volume);
	else
		out = json_pack("{s:s, s:{}}", "name", "out", "emptyDir");
	return json_pack("[{s:s, s:{s:s}}, {s:s, s:{}}, o]", "name", "job",
			 "configMap", "name", cm, "name", "data", "emptyDir",
			 out);
}

/* The pod template of component c's workers. */
static json_t *worker_pod(const struct hp__submit *s, const char *name, int c,
			  const char *image, struct hp_error *err)
{
	const struct hp_plan *p = s->plan;
	const struct hp_plan_comp *pc = &p->comps[c];
	const struct hp__launch *l = &s->launch;
	json_t *spec, *ctr, *init = json_array(), *ann, *env;
	struct hp_buf lb;
	char label[HP_NAME_MAX];

	hp_buf_init(&lb, 1u << 20);
	for (int r = pc->first_rank; r < pc->first_rank + pc->nranks; r++) {
		bool first_of_pod = (r - pc->first_rank) % pc->per_node == 0;
		hp_buf_printf(&lb, "%s%lld",
			      r == pc->first_rank ? ""
			      : first_of_pod	  ? ";"
						  : ",",
			      (long long)p->ranks[r].local_batch);
	}
	env = json_pack("[{s:s, s:s}, {s:s, s:s}, {s:s, s:s}]", "name",
			"HETPOOL_JOB_ID", "value", s->job->id, "name",
			"HETPOOL_COMPONENT", "value", pc->type, "name",
			"HETPOOL_LOCAL_BATCHES", "value", hp_buf_str(&lb));
	{
		char per[16];
		snprintf(per, sizeof(per), "%d", pc->per_node);
		/* annotation values are strings */
		ann = json_pack("{s:s, s:s, s:s}", "hetpool.io/local-batches",
				hp_buf_str(&lb), "hetpool.io/ranks-per-pod",
				per, "hetpool.io/device-type", pc->type);
	}
	hp_buf_release(&lb);
	/* ready once sshd takes connections: what an MPIJob's
	 * launcherCreationPolicy waits for */
	ctr = json_pack("{s:s, s:s, s:[s, s], s:o, s:o, s:{s:{s:i}, s:i, s:i}}",
			"name", "worker", "image", image, "command",
			"/usr/sbin/sshd", "-De", "env", env, "volumeMounts",
			mounts(true, true, out_sub(s)), "readinessProbe",
			"tcpSocket", "port", HP__K8S_SSH_PORT, "periodSeconds",
			2, "timeoutSeconds", 2);
	{
		int cpus = s->train->threads > 0 ? s->train->threads
						 : K8S_CPU_PER_RANK;
		char cpu[32], mem[32];
		json_t *req;
		snprintf(cpu, sizeof(cpu), "%d", cpus * pc->per_node);
		int64_t mib = hp__comp_mem_mib(pc);
		if (mib > 0)
			snprintf(mem, sizeof(mem), "%lldMi",
				 (long long)mib * pc->per_node);
		else
			snprintf(mem, sizeof(mem), "%dGi",
				 K8S_MEM_GI_PER_RANK * pc->per_node);
		req = json_pack("{s:s, s:s}", "cpu", cpu, "memory", mem);
		if (pc->gpu)
			json_object_set_new(req, "nvidia.com/gpu",
					    json_integer(pc->per_node));
		json_object_set_new(ctr, "resources",
				    json_pack("{s:o}", "requests", req));
		if (pc->gpu)
			json_object_set_new(
			    json_object_get(ctr, "resources"), "limits",
			    json_pack("{s:i}", "nvidia.com/gpu", pc->per_node));
	}
	if (l->stage_manifest[0])
		json_array_append_new(
		    init,
		    json_pack("{s:s, s:s, s:[s, s, s, s], s:o}", "name",
			      "stage", "image", image, "command", "hetpool",
			      "_stage", POD_JOB "/stage.json", l->stage_dest,
			      "volumeMounts", mounts(true, false, NULL)));
	spec = json_pack("{s:[o], s:o, s:o}", "containers", ctr,
			 "initContainers", init, "volumes", volumes(s, name));
	if (pc->gpu) {
		if (product_label(s, pc->type, label, sizeof(label), err)) {
			json_decref(spec);
			json_decref(ann);
			return NULL;
		}
		json_object_set_new(
		    spec, "nodeSelector",
		    json_pack("{s:s}", "nvidia.com/gpu.product", label));
		/* GPU nodes are often tainted so that only pods asking for
		 * GPUs land there (the GPU operator's, the clouds' node
		 * pools) */
		json_object_set_new(
		    spec, "tolerations",
		    json_pack("[{s:s, s:s, s:s}]", "key", "nvidia.com/gpu",
			      "operator", "Exists", "effect", "NoSchedule"));
	}
	return json_pack("{s:{s:o, s:o}, s:o}", "metadata", "labels",
			 role_labels(s, "worker"), "annotations", ann, "spec",
			 spec);
}

/* mpirun with one app context per rank: its pod, its GPU, the trainer. */
static char **launcher_argv(const struct hp__submit *s, const char *name,
			    const char *ns)
{
	const struct hp__launch *l = &s->launch;
	struct hp__argv a = {0};
	char host[256];

	hp__argv_add(&a, "mpirun");
	hp__argv_add(&a, "--allow-run-as-root");
	if (!mpijob(s)) {
		hp__argv_add(&a, "--hostfile");
		hp__argv_add(&a, POD_JOB "/hostfile");
	}
	hp__argv_add(&a, "--bind-to");
	hp__argv_add(&a, "none");
	hp__argv_add(&a, "--output-filename");
	hp__argv_add(&a, POD_OUT "/logs");
	hp__argv_add(&a, "-x");
	hp__argv_add(&a, "CUDA_DEVICE_ORDER=PCI_BUS_ID");
	for (int r = 0; r < l->nranks; r++) {
		const struct hp__launch_rank *x = &l->ranks[r];
		if (r)
			hp__argv_add(&a, ":");
		pod_host(s, name, ns, r, host, sizeof(host));
		hp__argv_add(&a, "-np");
		hp__argv_add(&a, "1");
		hp__argv_add(&a, "--host");
		hp__argv_add(&a, host);
		hp__argv_add(&a, "-x");
		hp__argv_addf(&a, "CUDA_VISIBLE_DEVICES=%s",
			      x->gpu ? x->cuda : "");
		for (int i = 0; l->trainer[i]; i++)
			hp__argv_add(&a, l->trainer[i]);
	}
	return hp__argv_take(&a);
}

static json_t *argv_array(char **v)
{
	json_t *a = json_array();

	for (int i = 0; v && v[i]; i++)
		json_array_append_new(a, json_string(v[i]));
	return a;
}

json_t *hp__k8s_manifests(const struct hp__submit *s, struct hp_error *err)
{
	const struct hp_plan *p = s->plan;
	const struct hp__launch *l = &s->launch;
	const char *image = s->opts->image ? s->opts->image : "hetpool:latest";
	const char *ns =
	    s->opts->k8s_namespace ? s->opts->k8s_namespace : "default";
	char name[64], cm[80], path[HP_DEPLOY_PATH_MAX + 64];
	json_t *items = json_array(), *data = json_object(),
	       *bin = json_object();
	json_t *launcher_ctr, *launcher_pod, *list = NULL;
	char **largv = NULL, *text = NULL;
	size_t len;
	struct hp_buf hf;

	snprintf(name, sizeof(name), "hetpool-%s", s->job->id);
	snprintf(cm, sizeof(cm), "%s-job", name);
	/* The ConfigMap: the model, the plan, the data manifest, the
	 * hostfile of the Indexed Jobs' pods. */
	for (int i = 0; i < 3; i++) {
		const char *file =
		    i == 0   ? (strstr(s->train->model, ".onnx") ? "model.onnx"
								 : "model.json")
		    : i == 1 ? HP_PLAN_FILE
			     : HP_STAGE_FILE;
		if (i == 2 && !l->stage_manifest[0])
			continue;
		snprintf(path, sizeof(path), "%s/%s", s->job->dir, file);
		if (hp_read_file(path, K8S_MODEL_MAX, &text, &len, err))
			goto fail;
		if (i == 0 && !strcmp(file, "model.onnx")) {
			char *b = base64((unsigned char *)text, len);
			if (!b) {
				hp_error_set(err, HP_ENOMEM, "out of memory");
				goto fail;
			}
			json_object_set_new(bin, file, json_string(b));
			free(b);
		} else {
			json_object_set_new(data, file,
					    json_stringn(text, len));
		}
		free(text);
		text = NULL;
	}
	hp_buf_init(&hf, 16u << 20);
	for (int c = 0; c < p->ncomps; c++)
		for (int i = 0; i < p->comps[c].nnodes; i++)
			hp_buf_printf(&hf, "%s-c%d-%d.%s slots=%d\n", name, c,
				      i, name, p->comps[c].per_node);
	if (!mpijob(s))
		json_object_set_new(data, "hostfile",
				    json_string(hp_buf_str(&hf)));
	hp_buf_release(&hf);
	json_array_append_new(
	    items, json_pack("{s:s, s:s, s:{s:s, s:s, s:o}, s:o, s:o}",
			     "apiVersion", "v1", "kind", "ConfigMap",
			     "metadata", "name", cm, "namespace", ns, "labels",
			     labels(s), "data", data, "binaryData", bin));
	data = bin = NULL;
	if (!(largv = launcher_argv(s, name, ns))) {
		hp_error_set(err, HP_ENOMEM, "out of memory");
		goto fail;
	}
	{
		size_t bytes = 0;
		for (int i = 0; largv[i]; i++)
			bytes += strlen(largv[i]) + 1;
		if (bytes > K8S_ARGV_MAX) {
			hp_error_set(err, HP_EINVAL,
				     "%d ranks: the launcher's mpirun command "
				     "would be %.1f MiB (one app context per "
				     "rank, each with every rank's batch), "
				     "over the %u MiB a Kubernetes object and "
				     "an exec hold: use fewer ranks, or the "
				     "mpi or slurm backend",
				     s->plan->nranks, (double)bytes / 1048576.0,
				     K8S_ARGV_MAX >> 20);
			goto fail;
		}
	}
	launcher_ctr = json_pack(
	    "{s:s, s:s, s:o, s:o, s:{s:{s:s, s:s}}}", "name", "launcher",
	    "image", image, "command", argv_array(largv), "volumeMounts",
	    mounts(false, true, out_sub(s)), "resources", "requests", "cpu",
	    K8S_LAUNCHER_CPU, "memory", K8S_LAUNCHER_MEM);
	if (!mpijob(s))
		/* Open MPI cuts host names at the first '.' unless told not
		 * to, and the workers' names (POD.SERVICE) only resolve
		 * whole; the MPI operator sets this for its own launchers.
		 * Variables, not --mca flags: a version that does not know
		 * one ignores it (4.x reads the first, 5.x the second). */
		json_object_set_new(
		    launcher_ctr, "env",
		    json_pack("[{s:s, s:s}, {s:s, s:s}]", "name",
			      "OMPI_MCA_orte_keep_fqdn_hostnames", "value", "1",
			      "name", "PRTE_MCA_prte_keep_fqdn_hostnames",
			      "value", "1"));
	if (mpijob(s)) {
		json_t *w = worker_pod(s, name, 0, image, err);
		if (!w)
			goto fail;
		launcher_pod =
		    json_pack("{s:{s:o}, s:{s:[o], s:s, s:o}}", "metadata",
			      "labels", role_labels(s, "launcher"), "spec",
			      "containers", launcher_ctr, "restartPolicy",
			      "Never", "volumes", volumes(s, name));
		/* The Launcher's replica-level restartPolicy (default
		 * OnFailure) overrides its pod template's: Never, as
		 * backoffLimit 0 means.  The launcher is made once every
		 * worker is ready (sshd answers its readiness probe). */
		json_array_append_new(
		    items,
		    json_pack("{s:s, s:s, s:{s:s, s:s, s:o}, s:{s:i, s:s, "
			      "s:{s:s, s:i}, s:{s:{s:i, s:s, s:o}, s:{s:i, "
			      "s:o}}}}",
			      "apiVersion", "kubeflow.org/v2beta1", "kind",
			      "MPIJob", "metadata", "name", name, "namespace",
			      ns, "labels", labels(s), "spec", "slotsPerWorker",
			      p->comps[0].per_node, "launcherCreationPolicy",
			      "WaitForWorkersReady", "runPolicy",
			      "cleanPodPolicy", "Running", "backoffLimit", 0,
			      "mpiReplicaSpecs", "Launcher", "replicas", 1,
			      "restartPolicy", "Never", "template",
			      launcher_pod, "Worker", "replicas",
			      p->comps[0].nnodes, "template", w));
	} else {
		double wait_s = s->opts->k8s_worker_wait_s > 0
				    ? s->opts->k8s_worker_wait_s
				    : HP_K8S_WORKER_WAIT_S;
		char wait[32];
		json_t *init;
		snprintf(wait, sizeof(wait), "%.0f", wait_s);
		init =
		    json_pack("[{s:s, s:s, s:[s, s, s, s], s:o}]", "name",
			      "wait-hosts", "image", image, "command",
			      "hetpool", "_wait-hosts", POD_JOB "/hostfile",
			      wait, "volumeMounts", mounts(false, false, NULL));
		json_array_append_new(
		    items,
		    json_pack("{s:s, s:s, s:{s:s, s:s, s:o}, s:{s:s, s:b, "
			      "s:o, s:[{s:s, s:i}]}}",
			      "apiVersion", "v1", "kind", "Service", "metadata",
			      "name", name, "namespace", ns, "labels",
			      labels(s), "spec", "clusterIP", "None",
			      "publishNotReadyAddresses", 1, "selector",
			      labels(s), "ports", "name", "ssh", "port",
			      HP__K8S_SSH_PORT));
		for (int c = 0; c < p->ncomps; c++) {
			json_t *w = worker_pod(s, name, c, image, err);
			char jn[96];
			if (!w) {
				json_decref(launcher_ctr);
				json_decref(init);
				goto fail;
			}
			json_object_set_new(json_object_get(w, "spec"),
					    "subdomain", json_string(name));
			json_object_set_new(json_object_get(w, "spec"),
					    "restartPolicy",
					    json_string("Never"));
			snprintf(jn, sizeof(jn), "%s-c%d", name, c);
			json_array_append_new(
			    items,
			    json_pack("{s:s, s:s, s:{s:s, s:s, s:o}, s:{s:s, "
				      "s:i, s:i, s:i, s:o}}",
				      "apiVersion", "batch/v1", "kind", "Job",
				      "metadata", "name", jn, "namespace", ns,
				      "labels", role_labels(s, "worker"),
				      "spec", "completionMode", "Indexed",
				      "completions", p->comps[c].nnodes,
				      "parallelism", p->comps[c].nnodes,
				      "backoffLimit", 0, "template", w));
		}
		launcher_pod = json_pack(
		    "{s:{s:o}, s:{s:s, s:[o], s:o, s:s, s:o}}", "metadata",
		    "labels", role_labels(s, "launcher"), "spec", "subdomain",
		    name, "containers", launcher_ctr, "initContainers", init,
		    "restartPolicy", "Never", "volumes", volumes(s, name));
		{
			char jn[96];
			snprintf(jn, sizeof(jn), "%s-launcher", name);
			json_array_append_new(
			    items,
			    json_pack("{s:s, s:s, s:{s:s, s:s, s:o}, s:{s:i, "
				      "s:o}}",
				      "apiVersion", "batch/v1", "kind", "Job",
				      "metadata", "name", jn, "namespace", ns,
				      "labels", role_labels(s, "launcher"),
				      "spec", "backoffLimit", 0, "template",
				      launcher_pod));
		}
	}
	list = json_pack("{s:s, s:s, s:o}", "apiVersion", "v1", "kind", "List",
			 "items", items);
	items = NULL;
	if (!list)
		hp_error_set(err, HP_ENOMEM, "out of memory");
fail:
	free(text);
	hp__argv_free(largv);
	json_decref(items);
	json_decref(data);
	json_decref(bin);
	return list;
}

static int k8s_prepare(struct hp__submit *s, struct hp_error *err)
{
	struct hp__launch *l = &s->launch;
	char path[HP_DEPLOY_PATH_MAX + 64];
	const char *ext = strstr(s->train->model, ".onnx") ? "onnx" : "json";
	char model[64];
	json_t *list;
	int rc;

	for (int r = 0; r < l->nranks; r++)
		if (l->ranks[r].gpu)
			snprintf(l->ranks[r].cuda, sizeof(l->ranks[r].cuda),
				 "%d", l->ranks[r].gpu_index);
	snprintf(model, sizeof(model), POD_JOB "/model.%s", ext);
	if ((rc = hp__trainer_argv(
		 s, s->opts->trainer ? s->opts->trainer : "hetpool-train",
		 model, l->stage_manifest[0] ? l->stage_dest : "synthetic",
		 POD_OUT, l, err)))
		return rc;
	if (!(list = hp__k8s_manifests(s, err)))
		return err->code ? err->code : HP_ENOMEM;
	if ((rc = hp__path(path, sizeof(path), err, "%s/k8s", s->job->dir)) ||
	    (rc = hp_mkdirs(path, 0755, err)) ||
	    (rc = hp__path(path, sizeof(path), err, "%s/k8s/manifests.json",
			   s->job->dir))) {
		json_decref(list);
		return rc;
	}
	rc = hp__write_json(path, list, err);
	json_decref(list);
	return rc;
}

struct applied {
	bool applied;
	const char *ns;
	const char *why_not; /* when not applied */
	bool volume;	     /* the outputs go to a claim */
};

static void set_applied(struct hp_job *j, void *ud)
{
	const struct applied *a = ud;

	j->applied = a->applied;
	snprintf(j->k8s_namespace, sizeof(j->k8s_namespace), "%s", a->ns);
	if (!a->applied)
		snprintf(j->reason, sizeof(j->reason),
			 "manifests written to k8s/manifests.json, not "
			 "applied (%s): apply them with 'kubectl apply -f "
			 "%.300s/k8s/manifests.json'%s",
			 a->why_not, j->dir,
			 a->volume ? ""
				   : " (its outputs are in an emptyDir, lost "
				     "with the pods: give --k8s-volume)");
}

/* Whether kubectl has a cluster to talk to: a current context. */
static bool have_cluster(struct hp_deploy *d)
{
	char *argv[] = {d->kubectl, "config", "current-context", NULL};
	struct hp_buf out;
	int status = -1;
	bool ok;

	hp_buf_init(&out, 1u << 16);
	ok = !hp__run(argv, d->cmd_timeout_s, &out, NULL, &status, NULL) &&
	     status == 0 && out.len > 0;
	hp_buf_release(&out);
	return ok;
}

/* After a failed apply: delete whatever of the manifests it made; when
 * that fails too, the error (apply's reason first) says so and how to do
 * it by hand.  What kubectl said in full is in k8s/apply.log. */
static void unapply(struct hp_deploy *d, const char *path, struct hp_error *err)
{
	char *argv[] = {
	    d->kubectl,		  "delete",	  "-f", (char *)path,
	    "--ignore-not-found", "--wait=false", NULL};
	int status = -1;
	char m[sizeof(err->msg)];
	const char *p = strstr(err->msg, ": ");

	if (!hp__run(argv, d->cmd_timeout_s, NULL, NULL, &status, NULL) &&
	    status == 0)
		return;
	snprintf(m, sizeof(m), "%s", p ? p + 2 : err->msg);
	hp_error_set(err, err->code,
		     "kubectl apply failed, and so did deleting what it may "
		     "have made: run 'kubectl delete -f k8s/manifests.json' "
		     "in the job's folder (all kubectl said: k8s/apply.log): "
		     "%s",
		     m);
	hp_str_cut_utf8(err->msg);
}

static int k8s_start(struct hp__submit *s, struct hp_error *err)
{
	char path[HP_DEPLOY_PATH_MAX + 64], line[300];
	char *argv[] = {s->d->kubectl, "apply", "-f", path, NULL};
	struct applied a = {
	    false, s->opts->k8s_namespace ? s->opts->k8s_namespace : "default",
	    s->opts->k8s_no_apply
		? "--no-apply was given"
		: "no Kubernetes cluster is configured for kubectl",
	    s->opts->k8s_volume != NULL};
	struct hp_buf eout;
	int status, rc;

	if ((rc = hp__path(path, sizeof(path), err, "%s/k8s/manifests.json",
			   s->job->dir)))
		return rc;
	if (!s->opts->k8s_no_apply && have_cluster(s->d)) {
		hp_buf_init(&eout, 1u << 20);
		rc = hp__run(argv, s->d->cmd_timeout_s, NULL, &eout, &status,
			     err);
		if (!rc && status != 0)
			rc = hp_error_set(err, HP_EIO,
					  "kubectl apply refused the job: %s",
					  hp__last_line(hp_buf_str(&eout), line,
							sizeof(line)));
		if (rc) {
			/* the whole of what it said, which a reason cuts (or
			 * why it could not run) */
			char log[HP_DEPLOY_PATH_MAX + 64];
			const char *t = eout.len ? hp_buf_str(&eout) : err->msg;
			if (!hp__path(log, sizeof(log), NULL,
				      "%s/k8s/apply.log", s->job->dir))
				hp_write_file_atomic(log, t, strlen(t), 0644,
						     NULL);
		}
		hp_buf_release(&eout);
		if (rc) {
			/* kubectl goes on past an object it cannot make:
			 * what it did make (workers asking for GPUs) must
			 * not outlive the failed job */
			unapply(s->d, path, err);
			return rc;
		}
		a.applied = true;
	}
	return hp__job_update(s->job->dir, -1, NULL, set_applied, &a, NULL,
			      err);
}

int hp__k8s_parse_status(const char *text, size_t len, const char *id,
			 enum hp_job_state *state, char *reason, size_t n,
			 struct hp_error *err)
{
	json_t *o = json_loadb(text, len, 0, NULL), *items;
	int active = 0, failed = 0, succeeded = 0, seen = 0;
	char launcher[96];

	*state = HP_JOB_QUEUED;
	reason[0] = '\0';
	items = json_object_get(o, "items");
	if (!json_is_array(items)) {
		json_decref(o);
		return hp_error_set(err, HP_EPARSE,
				    "kubectl output is not a list of objects");
	}
	snprintf(launcher, sizeof(launcher), "hetpool-%s-launcher", id);
	for (size_t i = 0; i < json_array_size(items); i++) {
		json_t *it = json_array_get(items, i);
		const char *kind =
		    json_string_value(json_object_get(it, "kind"));
		const char *nm = json_string_value(
		    json_object_get(json_object_get(it, "metadata"), "name"));
		json_t *status = json_object_get(it, "status");
		if (!kind || !nm)
			continue;
		if (!strcmp(kind, "Job") && !strcmp(nm, launcher)) {
			seen++;
			active += json_integer_value(
				      json_object_get(status, "active")) > 0;
			succeeded += json_integer_value(json_object_get(
					 status, "succeeded")) > 0;
			failed += json_integer_value(
				      json_object_get(status, "failed")) > 0;
		} else if (!strcmp(kind, "MPIJob")) {
			json_t *conds = json_object_get(status, "conditions");
			seen++;
			for (size_t k = 0; k < json_array_size(conds); k++) {
				json_t *c = json_array_get(conds, k);
				const char *t = json_string_value(
				    json_object_get(c, "type"));
				const char *v = json_string_value(
				    json_object_get(c, "status"));
				const char *m = json_string_value(
				    json_object_get(c, "message"));
				if (!t || !v || strcmp(v, "True"))
					continue;
				if (!strcmp(t, "Succeeded"))
					succeeded++;
				else if (!strcmp(t, "Failed")) {
					failed++;
					if (m && !hp_str_has_control(m))
						snprintf(reason, n,
							 "MPIJob failed: %s",
							 m);
				} else if (!strcmp(t, "Running"))
					active++;
			}
		}
	}
	json_decref(o);
	if (!seen)
		return 0;
	if (failed) {
		*state = HP_JOB_FAILED;
		if (!reason[0])
			snprintf(reason, n,
				 "the launcher failed (kubectl logs "
				 "job/%s)",
				 launcher);
	} else if (succeeded) {
		*state = HP_JOB_SUCCEEDED;
	} else if (active) {
		*state = HP_JOB_RUNNING;
	}
	return 0;
}

/* Whether the job's manifests hold an MPIJob (else Indexed Jobs); false
 * with why set when they cannot be read. */
static bool job_is_mpijob(const struct hp_job *job, bool *mpi, char *why,
			  size_t n)
{
	char path[HP_DEPLOY_PATH_MAX + 64];
	struct hp_error e = {0};
	json_t *o, *items;

	*mpi = false;
	if (hp__path(path, sizeof(path), &e, "%s/k8s/manifests.json",
		     job->dir) ||
	    !(o = hp__read_json(path, 64u << 20, &e))) {
		snprintf(why, n, "%s", e.msg);
		return false;
	}
	items = json_object_get(o, "items");
	for (size_t i = 0; i < json_array_size(items); i++) {
		const char *kind = json_string_value(
		    json_object_get(json_array_get(items, i), "kind"));
		if (kind && !strcmp(kind, "MPIJob"))
			*mpi = true;
	}
	json_decref(o);
	return true;
}

/* A job's reason: what ud says (the state could not be read), or, when
 * ud is NULL, none in place of an earlier such one. */
static void set_read(struct hp_job *j, void *ud)
{
	const char *why = ud;

	if (hp_job_state_terminal(j->state))
		return; /* ended meanwhile (cancelled): its reason stays */
	if (why)
		snprintf(j->reason, sizeof(j->reason), "%s", why);
	else if (!strncmp(j->reason, K8S_READ_FAILED, strlen(K8S_READ_FAILED)))
		j->reason[0] = '\0';
}

/* Ask kubectl for the job's objects: only the kinds it has (a cluster
 * without the MPI operator refuses a list that names MPIJobs as a whole).
 * When that fails, the state stays as it was and the reason says why. */
static int k8s_refresh(struct hp_deploy *d, struct hp_job *job,
		       struct hp_error *err)
{
	char sel[64], why[300], line[256], msg[sizeof(job->reason)];
	bool mpi;
	char *argv[] = {
	    d->kubectl, "get", "jobs.batch", "-n",   job->k8s_namespace,
	    "-l",	sel,   "-o",	     "json", NULL};
	struct hp_buf out, eout;
	struct hp_error rerr = {0};
	enum hp_job_state st = HP_JOB_QUEUED;
	char reason[256] = "";
	int status = -1, rc;

	if (!job->applied)
		return 0;
	if (!job_is_mpijob(job, &mpi, why, sizeof(why))) {
		snprintf(msg, sizeof(msg),
			 K8S_READ_FAILED " (the last known is shown): cannot "
					 "tell what to ask for: %s",
			 why);
		goto failed;
	}
	if (mpi)
		argv[2] = "mpijobs.kubeflow.org";
	snprintf(sel, sizeof(sel), "hetpool.io/job=%s", job->id);
	hp_buf_init(&out, HP_CMD_OUT_MAX);
	hp_buf_init(&eout, 1u << 20);
	rc = hp__run(argv, d->cmd_timeout_s, &out, &eout, &status, &rerr);
	if (rc)
		snprintf(why, sizeof(why), "%s", rerr.msg);
	else if (status != 0)
		snprintf(why, sizeof(why), "exited %d: %s", status,
			 hp__last_line(hp_buf_str(&eout), line, sizeof(line)));
	else if ((rc =
		      hp__k8s_parse_status(hp_buf_str(&out), out.len, job->id,
					   &st, reason, sizeof(reason), &rerr)))
		snprintf(why, sizeof(why), "%s", rerr.msg);
	hp_buf_release(&out);
	hp_buf_release(&eout);
	if (rc || status != 0) {
		snprintf(msg, sizeof(msg),
			 K8S_READ_FAILED " (the last known is shown): kubectl "
					 "get %s: %s",
			 argv[2], why);
		goto failed;
	}
	if (st == HP_JOB_QUEUED) {
		/* only an earlier failure to read can go */
		if (strncmp(job->reason, K8S_READ_FAILED,
			    strlen(K8S_READ_FAILED)))
			return 0;
		return hp__job_update(job->dir, -1, NULL, set_read, NULL, NULL,
				      err);
	}
	if (hp_job_state_terminal(st) && !mpi) {
		/* The launcher has ended: the workers (sshd, waiting) go, so
		 * their GPUs are free.  An MPIJob cleans up by itself. */
		char wsel[96];
		char *del[] = {d->kubectl, "delete",	       "jobs.batch",
			       "-n",	   job->k8s_namespace, "-l",
			       wsel,	   "--wait=false",     NULL};
		snprintf(wsel, sizeof(wsel),
			 "hetpool.io/job=%s,hetpool.io/role=worker", job->id);
		hp__run(del, d->cmd_timeout_s, NULL, NULL, &status, NULL);
	}
	return hp__job_update(job->dir, st, reason, set_read, NULL, NULL, err);
failed:
	hp_str_cut_utf8(msg);
	if (!strcmp(job->reason, msg))
		return 0;
	return hp__job_update(job->dir, -1, NULL, set_read, msg, NULL, err);
}

static void mark_cancel(struct hp_job *j, void *ud)
{
	(void)ud;
	j->cancel_requested = true;
}

static int k8s_cancel(struct hp_deploy *d, struct hp_job *job,
		      struct hp_error *err)
{
	char path[HP_DEPLOY_PATH_MAX + 64], line[300];
	char *argv[] = {d->kubectl,	      "delete",	      "-f", path,
			"--ignore-not-found", "--wait=false", NULL};
	struct hp_buf eout;
	int status, rc;

	if (job->applied) {
		if ((rc = hp__path(path, sizeof(path), err,
				   "%s/k8s/manifests.json", job->dir)))
			return rc;
		hp_buf_init(&eout, 1u << 20);
		rc = hp__run(argv, d->cmd_timeout_s, NULL, &eout, &status, err);
		if (!rc && status != 0)
			rc = hp_error_set(err, HP_EIO,
					  "kubectl delete failed: %s",
					  hp__last_line(hp_buf_str(&eout), line,
							sizeof(line)));
		hp_buf_release(&eout);
		if (rc)
			return rc;
	}
	return hp__job_update(job->dir, HP_JOB_CANCELLED, "cancelled",
			      mark_cancel, NULL, NULL, err);
}

int hp_deploy_k8s_logs_argv(const struct hp_deploy *d, const struct hp_job *j,
			    bool follow, char ***argv, struct hp_error *err)
{
	struct hp__argv a = {0};

	*argv = NULL;
	if (j->backend != HP_BACKEND_KUBERNETES)
		return hp_error_set(err, HP_EINVAL,
				    "job %s is not a Kubernetes job", j->id);
	if (!j->applied && hp_job_state_terminal(j->state))
		return hp_error_set(err, HP_ESTATE,
				    "job %s %s before any pod ran, so there is "
				    "no log%s%s",
				    j->id, hp_job_state_name(j->state),
				    j->reason[0] ? ": " : "", j->reason);
	if (!j->applied)
		return hp_error_set(err, HP_ESTATE,
				    "job %s's manifests were written, not "
				    "applied: no pod has run, so there is no "
				    "log (apply them with 'kubectl apply -f "
				    "%.300s/k8s/manifests.json')",
				    j->id, j->dir);
	hp__argv_add(&a, d->kubectl);
	hp__argv_add(&a, "logs");
	hp__argv_add(&a, "-n");
	hp__argv_add(&a, j->k8s_namespace[0] ? j->k8s_namespace : "default");
	hp__argv_add(&a, "-l");
	hp__argv_addf(&a, "hetpool.io/job=%s,hetpool.io/role=launcher", j->id);
	hp__argv_add(&a, "--tail=-1");
	if (follow)
		hp__argv_add(&a, "-f");
	if (!(*argv = hp__argv_take(&a)))
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	return 0;
}

void hp_deploy_argv_free(char **argv)
{
	hp__argv_free(argv);
}

const struct hp__backend_ops hp__backend_k8s = {
    .name = "kubernetes",
    .check = k8s_check,
    .prepare = k8s_prepare,
    .start = k8s_start,
    .refresh = k8s_refresh,
    .cancel = k8s_cancel,
};
