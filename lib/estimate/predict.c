/*
 * predict.c - predict a training step's time (with its interval), memory
 * and energy from a fitted estimator, for a workload on a device type of
 * the catalog; GPU types without measurements come from their specs.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "estimate/estimate_int.h"
#include "util/banned.h"

static const char *const lin_names[5] = {"conv_layers", "fc_layers", "filters",
					 "fc_width", "input_size"};

int hp__predict(const struct hp_estimator *est, const struct hp_catalog *cat,
		const struct hp_workload *w, const char *device, int ndevices,
		int family, int src, struct hp_prediction *out,
		struct hp_error *err)
{
	const struct hp_device_type *t;
	const struct hp__dev_fit *df;
	const double *th;
	struct hp__dev_spec d;
	double step, comm = 0, qlo, qhi, peak, util, mem;
	double th_cpu[HP__NTH];
	char carried[160] = "";
	bool calibrated = false;
	enum hp_est_family fam;

	memset(out, 0, sizeof(*out));
	if (!device || !(t = hp_catalog_find(cat, device)))
		return hp_error_set(err, HP_ENOENT,
				    "device type '%s' is not in the catalog",
				    device ? device : "");
	if (ndevices < 1 || ndevices > 4096)
		return hp_error_set(err, HP_EINVAL,
				    "%d devices: give 1 to 4096", ndevices);
	if (!w || w->batch < 1)
		return hp_error_set(err, HP_EINVAL, "batch must be at least 1");
	fam = family < 0 ? est->family : (enum hp_est_family)family;
	df = hp__est_dev(est, t->name);
	hp__dev_spec(t, &d);
	if (d.cpu && !(d.fp32 > 0) && df && df->own_theta)
		d.fp32 = df->fit_fp32;
	if (d.cpu && df && df->own_theta && df->chan_block > 1)
		d.chan_block = df->chan_block;
	if (!(d.fp32 > 0) || !(d.bw > 0))
		return hp_error_set(err, HP_EUNSUPP,
				    "device type '%s': no peak FP32 or "
				    "bandwidth in the catalog",
				    t->name);
	snprintf(out->device, sizeof(out->device), "%s", t->name);
	out->ndevices = ndevices;
	out->batch = w->batch * ndevices;
	out->family = fam;
	out->measured = df && df->n > 0;

	if (d.cpu) {
		if (!df || !df->own_theta)
			return hp_error_set(
			    err, HP_EUNSUPP,
			    "no measurements of '%s' in the estimator: fit it "
			    "on a profile of this host ('hetpool profile', "
			    "'hetpool fit')",
			    t->name);
		/* this host from its figures (threads, peaks, caches); a
		 * profile row (validate) was measured on the profiled host
		 * itself: its own figures, as in the fit */
		if (src != HP__SRC_PROFILE) {
			hp__cpu_transfer(df, t, &d, th_cpu, carried,
					 sizeof(carried));
			th = th_cpu;
			calibrated =
			    t->calib.has && t->calib.threads == t->threads;
		} else {
			th = df->th;
		}
	} else {
		if (!est->has_gpu)
			return hp_error_set(err, HP_EUNSUPP,
					    "the estimator has no GPU model: "
					    "fit it with the public "
					    "measurements");
		th = est->gpu_th;
	}

	switch (fam) {
	case HP_EST_PHYSICAL:
		if (calibrated) {
			double cls[HP_EST_NCLASS];
			step = hp__phys_time_cls(th, &d, w, src, ndevices,
						 &comm, cls);
			step = hp__cpu_calibrated(&t->calib, step - comm, cls) +
			       comm;
		} else {
			step = hp__phys_time(th, &d, w, src, ndevices, &comm);
		}
		if (!d.cpu && df)
			step *= exp(df->log_scale);
		if (d.cpu || out->measured) {
			qlo = d.cpu ? df->q_lo : est->gpu_q_lo;
			qhi = d.cpu ? df->q_hi : est->gpu_q_hi;
			/* calibrated: the spread of the calibration's rows */
			if (calibrated && t->calib.q_lo < t->calib.q_hi) {
				qlo = t->calib.q_lo;
				qhi = t->calib.q_hi;
			}
		} else {
			qlo = est->gpu_lodo_lo;
			qhi = est->gpu_lodo_hi;
		}
		if (d.cpu) {
			int len = snprintf(out->basis, sizeof(out->basis),
					   "physical model fitted on %d rows "
					   "of %s%s%s",
					   df->n, t->name,
					   carried[0] ? ", " : "", carried);
			if (calibrated && len > 0 &&
			    (size_t)len < sizeof(out->basis))
				snprintf(out->basis + len,
					 sizeof(out->basis) - (size_t)len,
					 "; calibrated on this host at %s "
					 "from %d configurations",
					 t->calib.when, t->calib.n);
		} else if (out->measured)
			snprintf(out->basis, sizeof(out->basis),
				 "physical model fitted on %d GPU rows, %d of "
				 "them of %s",
				 est->gpu_n, df->n, t->name);
		else
			snprintf(out->basis, sizeof(out->basis),
				 "cross-device from specs (%.1f TFLOP/s FP32, "
				 "%.0f GB/s) and %d GPU rows of other types; "
				 "no measurements of %s",
				 d.fp32 / 1e12, d.bw / 1e9, est->gpu_n,
				 t->name);
		break;
	case HP_EST_LINEAR: {
		double x[HP__LIN_P], v[5], y = 0;
		if (!df || !df->has_linear)
			return hp_error_set(
			    err, HP_EUNSUPP,
			    "the linear family has no fit for '%s' (it needs "
			    "profiles of generated CNNs on that type); use "
			    "the physical family",
			    t->name);
		v[0] = w->conv_layers;
		v[1] = w->fc_layers;
		v[2] = (double)w->filters;
		v[3] = (double)w->fc_width;
		v[4] = (double)w->input_size;
		for (int j = 0; j < 5; j++)
			if (v[j] < df->range_lo[j] || v[j] > df->range_hi[j])
				return hp_error_set(
				    err, HP_EUNSUPP,
				    "the linear family cannot apply: %s %.0f "
				    "is outside its fitted range %.0f-%.0f "
				    "(it covers the generated CNNs only); use "
				    "the physical family",
				    lin_names[j], v[j], df->range_lo[j],
				    df->range_hi[j]);
		hp__linear_x(w, x);
		for (int j = 0; j < HP__LIN_P; j++)
			y += df->beta[j] * x[j];
		step = exp(y);
		if (ndevices > 1) {
			hp__phys_time(th, &d, w, src, ndevices, &comm);
			step += comm;
		}
		qlo = df->lin_q_lo;
		qhi = df->lin_q_hi;
		snprintf(out->basis, sizeof(out->basis),
			 "linear regression on %d rows of %s", df->lin_n,
			 t->name);
		break;
	}
	case HP_EST_ROOFLINE:
	default:
		step = w->flops_total / d.fp32;
		qlo = qhi = 0;
		snprintf(out->basis, sizeof(out->basis),
			 "roofline: FLOPs / peak FP32 (no fit)");
		break;
	}
	if (!(step > 0) || !isfinite(step))
		return hp_error_set(err, HP_EINTERNAL,
				    "the model gave no step time");
	out->step_time_s = step;
	out->comm_time_s = comm;
	out->step_time_lo_s = step * exp(qlo < 0 ? qlo : 0);
	out->step_time_hi_s = step * exp(qhi > 0 ? qhi : 0);
	out->samples_per_s = (double)out->batch / step;
	peak = hp__peak(th, &d);
	util = w->flops_total / (step * peak);
	out->utilisation = util > 1 ? 1 : util;

	/* Power and energy. */
	out->power_w = hp__power_w(t, out->utilisation, est->power_gamma);
	if (isnan(out->power_w)) {
		out->energy_per_step_j = NAN;
		snprintf(out->energy_basis, sizeof(out->energy_basis),
			 "not known: %s power is not measured and the "
			 "catalog has no board power (TDP) for it",
			 d.cpu ? "this CPU's" : "the device's");
	} else {
		out->energy_per_step_j = out->power_w * ndevices * step;
		if (d.cpu && t->power_basis[0])
			snprintf(out->energy_basis, sizeof(out->energy_basis),
				 "this host's package power (%.64s): %.0f W "
				 "loaded, %.0f W idle",
				 t->power_basis, t->tdp_w, t->idle_w);
		else if (d.cpu)
			snprintf(out->energy_basis, sizeof(out->energy_basis),
				 "not measured; modelled from TDP %.0f W and "
				 "idle %.0f W",
				 t->tdp_w, t->idle_w);
		else if (est->power_n)
			snprintf(out->energy_basis, sizeof(out->energy_basis),
				 "modelled: idle + (board power - idle) x "
				 "utilisation^%.2f, calibrated on %d rows of "
				 "measured power (Zeus)",
				 est->power_gamma, est->power_n);
		else
			snprintf(out->energy_basis, sizeof(out->energy_basis),
				 "modelled from board and idle power, "
				 "utilisation^%.2f (not calibrated: no "
				 "measured power in the data)",
				 est->power_gamma);
	}

	/* Memory per device. */
	mem = (double)w->state_bytes + (double)w->input_bytes +
	      (d.cpu ? est->mem_act_factor : est->mem_gpu_act_factor) *
		  (double)w->activations_bytes +
	      est->mem_workspace_bytes;
	if (!d.cpu)
		mem += est->mem_cuda_context_bytes;
	out->peak_memory_bytes = (int64_t)mem;
	out->device_memory_bytes = t->mem_gb > 0 ? t->mem_gb * 1e9 : NAN;
	/* a device whose memory is not known is not said to fit */
	out->memory_known = !isnan(out->device_memory_bytes);
	out->fits_in_memory =
	    out->memory_known && mem <= out->device_memory_bytes;
	snprintf(out->memory_basis, sizeof(out->memory_basis),
		 "weights, gradients, momentum + %.2f x activations + %.0f "
		 "MiB%s; calibrated on %d profile rows",
		 d.cpu ? est->mem_act_factor : est->mem_gpu_act_factor,
		 est->mem_workspace_bytes / 1048576,
		 d.cpu ? "" : " + CUDA context", est->mem_n);
	return 0;
}

int hp_estimator_predict(const struct hp_estimator *est,
			 const struct hp_catalog *cat,
			 const struct hp_workload *w, const char *device,
			 int ndevices, int family, struct hp_prediction *out,
			 struct hp_error *err)
{
	if (!est || !cat)
		return hp_error_set(err, HP_EINVAL, "no estimator or catalog");
	if (family > HP_EST_ROOFLINE)
		return hp_error_set(err, HP_EINVAL, "unknown family %d",
				    family);
	return hp__predict(est, cat, w, device, ndevices, family,
			   HP__SRC_LAMBDA, out, err);
}
