/*
 * nvml.h - GPU energy, name and driver version from NVML, loaded at run
 * time with dlopen("libnvidia-ml.so.1"): the CUDA toolkit ships no NVML
 * header or stub, and a binary must start on machines without a driver.
 * Internal to the engine (and its tests).
 */
#ifndef HP_NVML_H
#define HP_NVML_H

#include <stdint.h>

#include "hetpool/util.h"

struct hp__nvml;

/*
 * Load NVML from lib (NULL: "libnvidia-ml.so.1") and find the GPU by its
 * PCI bus id ("0000:3b:00.0", from cudaDeviceGetPCIBusId), else by index.
 * Returns HP_EUNSUPP with err set when NVML or the device is not there;
 * on success *out is the caller's, freed with hp__nvml_close().
 */
int hp__nvml_open(const char *lib, const char *pci_bus_id, int index,
		  struct hp__nvml **out, struct hp_error *err);
/* NULL is a no-op. */
void hp__nvml_close(struct hp__nvml *n);
/*
 * Energy the device has used, in millijoules: NVML's total energy counter
 * (Volta and newer), else power samples integrated between calls (a
 * trapezoid per pair of calls: coarse).  HP_EUNSUPP when neither works.
 */
int hp__nvml_energy_mj(struct hp__nvml *n, uint64_t *mj);
/* "NVIDIA H200", "570.86.15"; "" when NVML did not say.  Owned by n. */
const char *hp__nvml_name(const struct hp__nvml *n);
const char *hp__nvml_driver(const struct hp__nvml *n);
/* "counter" or "power samples": how hp__nvml_energy_mj() measures. */
const char *hp__nvml_energy_method(const struct hp__nvml *n);

#endif /* HP_NVML_H */
