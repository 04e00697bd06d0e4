/*
 * nvml.c - the few NVML calls the engine needs (energy, GPU name, driver
 * version), declared here and resolved with dlopen()/dlsym() at run time:
 * no NVML header or link-time library is needed, and a machine without
 * the NVIDIA driver just reports energy as unsupported.
 */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvml.h"
#include "util/banned.h"

/* From NVML's nvml.h (ABI stable across driver versions). */
typedef int nvmlReturn_t; /* NVML_SUCCESS = 0 */
typedef struct nvmlDevice_st *nvmlDevice_t;
#define NVML_SUCCESS 0

struct hp__nvml {
	void *lib;
	nvmlDevice_t dev;
	bool inited;
	bool counter; /* nvmlDeviceGetTotalEnergyConsumption works */
	/* power-sample fallback */
	bool have_last;
	double last_s;
	unsigned last_mw;
	double acc_mj;
	char name[96];
	char driver[80];
	nvmlReturn_t (*shutdown)(void);
	nvmlReturn_t (*total_energy)(nvmlDevice_t, unsigned long long *);
	nvmlReturn_t (*power)(nvmlDevice_t, unsigned int *);
	const char *(*errstr)(nvmlReturn_t);
};

/* dlsym() into a function pointer without a cast between object and
 * function pointers. */
static bool sym(void *lib, const char *name, void *fnp, size_t size)
{
	void *s = dlsym(lib, name);

	if (!s)
		return false;
	memcpy(fnp, &s, size);
	return true;
}
#define SYM(lib, name, fn) sym(lib, name, &(fn), sizeof(fn))

static const char *nv_err(const struct hp__nvml *n, nvmlReturn_t r)
{
	static _Thread_local char buf[32];

	if (n->errstr)
		return n->errstr(r);
	snprintf(buf, sizeof(buf), "nvml error %d", r);
	return buf;
}

int hp__nvml_open(const char *lib, const char *pci_bus_id, int index,
		  struct hp__nvml **out, struct hp_error *err)
{
	struct hp__nvml *n;
	nvmlReturn_t (*init)(void) = NULL;
	nvmlReturn_t (*by_pci)(const char *, nvmlDevice_t *) = NULL;
	nvmlReturn_t (*drv)(char *, unsigned int) = NULL;
	nvmlReturn_t (*name)(nvmlDevice_t, char *, unsigned int) = NULL;
	unsigned long long e0;
	unsigned int mw;
	nvmlReturn_t r;
	int rc;

	*out = NULL;
	if (!lib)
		lib = "libnvidia-ml.so.1";
	n = calloc(1, sizeof(*n));
	if (!n)
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	n->lib = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!n->lib) {
		const char *why = dlerror();
		rc = hp_error_set(err, HP_EUNSUPP,
				  "nvml: unable to load '%s': %s", lib,
				  why ? why : "unknown error");
		goto fail;
	}
	SYM(n->lib, "nvmlErrorString", n->errstr);
	if (!SYM(n->lib, "nvmlInit_v2", init) ||
	    !SYM(n->lib, "nvmlShutdown", n->shutdown)) {
		rc = hp_error_set(err, HP_EUNSUPP,
				  "nvml: '%s' lacks nvmlInit_v2", lib);
		goto fail;
	}
	SYM(n->lib, "nvmlDeviceGetHandleByPciBusId_v2", by_pci);
	SYM(n->lib, "nvmlSystemGetDriverVersion", drv);
	SYM(n->lib, "nvmlDeviceGetName", name);
	SYM(n->lib, "nvmlDeviceGetTotalEnergyConsumption", n->total_energy);
	SYM(n->lib, "nvmlDeviceGetPowerUsage", n->power);
	if ((r = init()) != NVML_SUCCESS) {
		rc = hp_error_set(err, HP_EUNSUPP, "nvml: init: %s",
				  nv_err(n, r));
		goto fail;
	}
	n->inited = true;
	/* By PCI bus id only: NVML's index is not CUDA's ordinal (NVML
	 * ignores CUDA_VISIBLE_DEVICES, and CUDA orders fastest first
	 * unless CUDA_DEVICE_ORDER=PCI_BUS_ID), so an index would read
	 * another GPU's energy.  Not known: energy is not measured. */
	if (!pci_bus_id || !by_pci) {
		rc = hp_error_set(err, HP_EUNSUPP,
				  "nvml: CUDA device %d's PCI bus id is not "
				  "known: which GPU it is cannot be told",
				  index);
		goto fail;
	}
	if ((r = by_pci(pci_bus_id, &n->dev)) != NVML_SUCCESS) {
		rc = hp_error_set(err, HP_EUNSUPP,
				  "nvml: no device at PCI bus id %s (CUDA "
				  "device %d): %s",
				  pci_bus_id, index, nv_err(n, r));
		goto fail;
	}
	if (drv && drv(n->driver, sizeof(n->driver)) != NVML_SUCCESS)
		n->driver[0] = '\0';
	if (name && name(n->dev, n->name, sizeof(n->name)) != NVML_SUCCESS)
		n->name[0] = '\0';
	n->driver[sizeof(n->driver) - 1] = n->name[sizeof(n->name) - 1] = '\0';
	n->counter =
	    n->total_energy && n->total_energy(n->dev, &e0) == NVML_SUCCESS;
	if (!n->counter && !(n->power && n->power(n->dev, &mw) == NVML_SUCCESS))
		n->power = NULL;
	*out = n;
	return 0;
fail:
	hp__nvml_close(n);
	return rc;
}

void hp__nvml_close(struct hp__nvml *n)
{
	if (!n)
		return;
	if (n->inited && n->shutdown)
		n->shutdown();
	if (n->lib)
		dlclose(n->lib);
	free(n);
}

int hp__nvml_energy_mj(struct hp__nvml *n, uint64_t *mj)
{
	unsigned long long e;
	unsigned int mw;
	double now;

	if (!n)
		return HP_EUNSUPP;
	if (n->counter) {
		if (n->total_energy(n->dev, &e) != NVML_SUCCESS)
			return HP_EIO;
		*mj = (uint64_t)e;
		return 0;
	}
	if (!n->power)
		return HP_EUNSUPP;
	if (n->power(n->dev, &mw) != NVML_SUCCESS)
		return HP_EIO;
	now = hp_now_s();
	if (n->have_last)
		n->acc_mj +=
		    0.5 * (double)(mw + n->last_mw) * (now - n->last_s);
	n->have_last = true;
	n->last_s = now;
	n->last_mw = mw;
	*mj = (uint64_t)n->acc_mj;
	return 0;
}

const char *hp__nvml_name(const struct hp__nvml *n)
{
	return n ? n->name : "";
}

const char *hp__nvml_driver(const struct hp__nvml *n)
{
	return n ? n->driver : "";
}

const char *hp__nvml_energy_method(const struct hp__nvml *n)
{
	return !n	    ? "none"
	       : n->counter ? "counter"
	       : n->power   ? "power samples"
			    : "none";
}
