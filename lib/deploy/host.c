/*
 * host.c - this host as the local backend sees it: its NVIDIA GPUs (from
 * the driver's /proc files, in PCI bus order, which is how CUDA numbers
 * them when CUDA_DEVICE_ORDER=PCI_BUS_ID; none when CUDA_VISIBLE_DEVICES
 * hides them all) and the CPUs this process may use, split among ranks
 * for pinning.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "deploy/deploy_int.h"
#include "hetpool/pool.h"
#include "util/banned.h"

/* The value after "Key:" on a line of text, trimmed. */
static bool field(const char *text, const char *key, char *out, size_t n)
{
	size_t klen = strlen(key);

	for (const char *p = text; p && *p;) {
		const char *end = strchr(p, '\n');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len > klen && !strncmp(p, key, klen) && p[klen] == ':') {
			const char *v = p + klen + 1, *e = p + len;
			size_t vl;
			while (v < e && (*v == ' ' || *v == '\t'))
				v++;
			while (e > v &&
			       (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
				e--;
			vl = (size_t)(e - v);
			if (vl == 0 || vl >= n)
				return false;
			memcpy(out, v, vl);
			out[vl] = '\0';
			return !hp_str_has_control(out);
		}
		p = end ? end + 1 : NULL;
	}
	return false;
}

int hp__gpu_parse_info(const char *text, struct hp__gpu *out)
{
	memset(out, 0, sizeof(*out));
	if (!field(text, "Model", out->model, sizeof(out->model)) ||
	    !field(text, "Bus Location", out->bus, sizeof(out->bus)))
		return HP_EPARSE;
	return 0;
}

static int by_bus(const void *a, const void *b)
{
	return strcmp(((const struct hp__gpu *)a)->bus,
		      ((const struct hp__gpu *)b)->bus);
}

/* One entry of CUDA_VISIBLE_DEVICES names a device: an index (digits) or
 * a UUID ("GPU-...", "MIG-..."), blanks around it aside. */
static bool cuda_entry_ok(const char *p, size_t len)
{
	while (len && (*p == ' ' || *p == '\t')) {
		p++;
		len--;
	}
	while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
		len--;
	if (len > 4 && (!strncmp(p, "GPU-", 4) || !strncmp(p, "MIG-", 4)))
		return true;
	if (!len)
		return false;
	for (size_t i = 0; i < len; i++)
		if (p[i] < '0' || p[i] > '9')
			return false;
	return true;
}

bool hp__cuda_hides_all(const char *value)
{
	if (!value)
		return false;
	return !cuda_entry_ok(value, strcspn(value, ","));
}

int hp__gpus_detect(struct hp__gpu *out, int max)
{
	const char *root = "/proc/driver/nvidia/gpus";
	DIR *dir;
	struct dirent *e;
	int n = 0;

	/* Hidden from CUDA, hidden from hetpool.  A list that names devices
	 * is not applied to /proc's list: CUDA numbers them in its own
	 * order (fastest first) unless CUDA_DEVICE_ORDER=PCI_BUS_ID, so an
	 * index here need not be the GPU at that place in bus order. */
	if (hp__cuda_hides_all(getenv("CUDA_VISIBLE_DEVICES")))
		return 0;
	if (!(dir = opendir(root)))
		return 0;
	while ((e = readdir(dir)) && n < max) {
		char path[512], *text;
		size_t len;
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s/information", root,
			 e->d_name);
		if (hp_read_file(path, 1u << 16, &text, &len, NULL))
			continue;
		if (!hp__gpu_parse_info(text, &out[n]))
			n++;
		free(text);
	}
	closedir(dir);
	qsort(out, (size_t)n, sizeof(*out), by_bus);
	return n;
}

int hp__gpu_pick(const struct hp__gpu *gpus, int n, char *const *models,
		 int index, int *matches)
{
	int seen = 0, at = -1;

	for (int i = 0; i < n; i++)
		for (int m = 0; models && models[m]; m++)
			if (hp_device_names_match(gpus[i].model, models[m])) {
				if (seen++ == index)
					at = i;
				break;
			}
	if (matches)
		*matches = seen;
	return at;
}

/* The first line of the file at the formatted path, in out; false when it
 * cannot be read or does not fit. */
__attribute__((format(printf, 3, 4))) static bool sys_line(char *out, size_t n,
							   const char *fmt, ...)
{
	char path[4096], *text;
	size_t len;
	va_list ap;
	int k;
	bool ok;

	va_start(ap, fmt);
	k = vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	if (k < 0 || (size_t)k >= sizeof(path) ||
	    hp_read_file(path, 4096, &text, &len, NULL))
		return false;
	text[strcspn(text, "\n")] = '\0';
	ok = (size_t)snprintf(out, n, "%s", text) < n;
	free(text);
	return ok;
}

void hp__net_detect(const char *sys_root, struct hp__net *out)
{
	char dir[1024], ports[1400], line[256];
	DIR *d, *pd;
	struct dirent *e, *p;

	memset(out, 0, sizeof(*out));
	snprintf(dir, sizeof(dir), "%s/class/infiniband", sys_root);
	for (d = opendir(dir); d && (e = readdir(d));) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(ports, sizeof(ports), "%s/%s/ports", dir, e->d_name);
		for (pd = opendir(ports); pd && (p = readdir(pd));) {
			double g = 0;
			if (p->d_name[0] == '.' ||
			    !sys_line(line, sizeof(line), "%s/%s/state", ports,
				      p->d_name) ||
			    !strstr(line, "ACTIVE"))
				continue;
			/* "100 Gb/sec (4X EDR)" */
			if (sys_line(line, sizeof(line), "%s/%s/rate", ports,
				     p->d_name))
				g = strtod(line, NULL);
			if (!isfinite(g) || g < 0)
				g = 0;
			if (!out->rdma || g > out->rdma_gbps) {
				out->rdma_gbps = g;
				snprintf(out->rdma_dev, sizeof(out->rdma_dev),
					 "%.63s", e->d_name);
			}
			out->rdma = true;
		}
		if (pd)
			closedir(pd);
	}
	if (d)
		closedir(d);
	snprintf(dir, sizeof(dir), "%s/class/net", sys_root);
	for (d = opendir(dir); d && (e = readdir(d));) {
		char dev[1400];
		double gbps;
		if (e->d_name[0] == '.' || !strcmp(e->d_name, "lo"))
			continue;
		/* a physical interface has a device behind it */
		snprintf(dev, sizeof(dev), "%s/%s/device", dir, e->d_name);
		if (access(dev, F_OK) ||
		    !sys_line(line, sizeof(line), "%s/%s/operstate", dir,
			      e->d_name) ||
		    strcmp(line, "up") ||
		    !sys_line(line, sizeof(line), "%s/%s/speed", dir,
			      e->d_name))
			continue;
		gbps = strtod(line, NULL) / 1000; /* Mbit/s; -1: not known */
		if (isfinite(gbps) && gbps > out->eth_gbps) {
			out->eth_gbps = gbps;
			snprintf(out->eth_if, sizeof(out->eth_if), "%.63s",
				 e->d_name);
		}
	}
	if (d)
		closedir(d);
}

bool hp__nvidia_driver(void)
{
	return access("/proc/driver/nvidia/version", R_OK) == 0;
}

int hp__cpus_allowed(int *cpus, int max)
{
	cpu_set_t set;
	int n = 0;

	if (sched_getaffinity(0, sizeof(set), &set)) {
		long k = sysconf(_SC_NPROCESSORS_ONLN);
		for (int i = 0; i < k && n < max; i++)
			cpus[n++] = i;
		return n;
	}
	for (int i = 0; i < CPU_SETSIZE && n < max; i++)
		if (CPU_ISSET(i, &set))
			cpus[n++] = i;
	return n;
}

void hp__cpus_split(int ncpus, int nranks, int *first, int *count)
{
	if (nranks >= ncpus) {
		for (int k = 0; k < nranks; k++) {
			first[k] = ncpus > 0 ? k % ncpus : 0;
			count[k] = ncpus > 0 ? 1 : 0;
		}
		return;
	}
	for (int k = 0, at = 0; k < nranks; k++) {
		count[k] = ncpus / nranks + (k < ncpus % nranks);
		first[k] = at;
		at += count[k];
	}
}

char *hp_deploy_host_pool(const struct hp_catalog *cat, struct hp_error *err)
{
	struct hp__gpu g[64];
	struct hp_host h;
	char name[HP_NAME_MAX], *s;
	json_t *devs = json_array(), *node, *root;
	int n = hp__gpus_detect(g, 64);
	struct hp__net net;
	double gbps;

	hp_host_detect(&h, NULL);
	hp__hostname(name, sizeof(name));
	if (!hp__name_ok(name))
		snprintf(name, sizeof(name), "localhost");
	json_array_append_new(
	    devs, json_pack("{s:s, s:i}", "type", "cpu", "count", 1));
	for (int i = 0; i < n; i++) {
		const struct hp_device_type *t =
		    cat ? hp_catalog_find(cat, g[i].model) : NULL;
		json_t *d = NULL;
		size_t k;
		if (!t)
			continue;
		json_array_foreach(devs, k, d)
		{
			if (!strcmp(
				json_string_value(json_object_get(d, "type")),
				t->name))
				break;
		}
		if (k < json_array_size(devs))
			json_object_set_new(
			    d, "count",
			    json_integer(json_integer_value(
					     json_object_get(d, "count")) +
					 1));
		else
			json_array_append_new(devs,
					      json_pack("{s:s, s:i}", "type",
							t->name, "count", 1));
	}
	/* The network from sysfs: an active RDMA port makes the transport
	 * "rdma" at that port's rate; else "auto" (socket with a GPU, tcp
	 * without) at the fastest Ethernet link that is up; else 10 Gbit/s,
	 * not known. */
	hp__net_detect("/sys", &net);
	gbps = net.rdma && net.rdma_gbps > 0 ? net.rdma_gbps
	       : net.eth_gbps > 0	     ? net.eth_gbps
					     : 10.0;
	node = json_pack(
	    "{s:s, s:o, s:i, s:f, s:f, s:f, s:f, s:f, s:s}", "name", name,
	    "devices", devs, "cpu_cores",
	    h.physical_cores > 0 ? h.physical_cores
				 : (h.logical_cpus > 0 ? h.logical_cpus : 1),
	    "memory_gb", h.mem_gb > 0.001 ? h.mem_gb : 1.0, "intra_bw_gbps",
	    128.0, "net_bw_gbps", gbps, "net_latency_us", 10.0, "base_power_w",
	    0.0, "net_transport",
	    hp_net_transport_name(net.rdma ? HP_NET_RDMA : HP_NET_AUTO));
	root = json_pack("{s:[o]}", "nodes", node);
	s = root ? json_dumps(root, JSON_INDENT(1)) : NULL;
	json_decref(root);
	if (!s)
		hp_error_set(err, HP_ENOMEM, "out of memory");
	return s;
}
