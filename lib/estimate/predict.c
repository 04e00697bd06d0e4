/*
 * predict.c - predict a training step's time (with its interval), memory
 * and energy from a fitted estimator, for a workload on a device type of
 * the catalog; GPU types without measurements come from their specs.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "estimate/estimate_int.h"
#include "util/banned.h"

static const char *const lin_names[5] = {"conv_layers", "fc_layers", "filters",
					 "fc_width", "input_size"};

/* Across nodes: how many, and each node's network link. */
struct net {
	int nodes;
	double gbps, latency_us;
	enum hp_net_transport transport; /* HP_NET_AUTO: by the device */
	/* the input pipeline: cores per device, one core's s a sample
	 * (either 0: not modelled) */
	double input_cores, input_sample_s;
};

/*
 * The input pipeline's ceiling (docs/estimator.md, "The input pipeline"):
 * a GPU's step cannot be shorter than the time its host cores take to
 * prepare its share of the batch; the loader's workers prefetch, so the
 * two overlap and the step is the longer.  On a CPU device the loader
 * shares the cores that compute: not modelled.
 */
static void input_ceiling(const struct net *net, int64_t per_device, bool cpu,
			  double *step, struct hp_prediction *out)
{
	double in_s =
		   (double)per_device * net->input_sample_s / net->input_cores,
	       rate = net->input_cores / net->input_sample_s;
	size_t l = strlen(out->basis);

	if (cpu) {
		snprintf(out->basis + l, sizeof(out->basis) - l,
			 "; input pipeline not modelled on a CPU device (its "
			 "cores compute too)");
		return;
	}
	out->input_time_s = in_s;
	out->input_bound = in_s > *step;
	snprintf(out->basis + l, sizeof(out->basis) - l,
		 "; input pipeline: %.0f samples/s a device (%g cores), %s",
		 rate, net->input_cores,
		 out->input_bound ? "which caps the step" : "enough");
	if (!out->input_bound)
		return;
	*step = in_s;
	if (out->step_time_lo_s < in_s)
		out->step_time_lo_s = in_s;
	if (out->step_time_hi_s < in_s)
		out->step_time_hi_s = in_s;
}

/* Append to a basis of len characters so far (len < 0 or past the end:
 * nothing), cut at its end. */
static void cat_basis(char *basis, int len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void cat_basis(char *basis, int len, const char *fmt, ...)
{
	size_t n = sizeof(((struct hp_prediction *)0)->basis);
	va_list ap;

	if (len < 0 || (size_t)len >= n)
		return;
	va_start(ap, fmt);
	vsnprintf(basis + len, n - (size_t)len, fmt, ap);
	va_end(ap);
}

/* ", at the host's speed then (...)" for a calibration whose times were
 * scaled to the profiler's yardstick (hetpool calibrate), else "". */
static const char *speed_then(const struct hp_host_calib *c, char *buf,
			      size_t n)
{
	if (!(c->ref_time_s > 0))
		return "";
	snprintf(buf, n,
		 ", at the host's speed then (the profiler's yardstick at "
		 "%.3f ms)",
		 1e3 * c->ref_time_s);
	return buf;
}

static int predict_net(const struct hp_estimator *est,
		       const struct hp_catalog *cat,
		       const struct hp_workload *w, const char *device,
		       int ndevices, const struct net *net, int family, int src,
		       int prec, struct hp_prediction *out,
		       struct hp_error *err)
{
	const struct hp_device_type *t;
	const struct hp__dev_fit *df;
	const double *th;
	struct hp__dev_spec d;
	double step, comm = 0, qlo, qhi, peak, util, mem;
	double th_cpu[HP__NTH];
	char carried[160] = "", speed[96];
	bool calibrated = false, other_est = false, own = false;
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
	if (net->nodes < 1 || net->nodes > ndevices || ndevices % net->nodes)
		return hp_error_set(err, HP_EINVAL,
				    "%d nodes for %d devices: give a node "
				    "count that divides the devices",
				    net->nodes, ndevices);
	if (net->nodes > 1 &&
	    (!(net->gbps > 0) || !isfinite(net->gbps) ||
	     !(net->latency_us >= 0) || !isfinite(net->latency_us)))
		return hp_error_set(err, HP_EINVAL,
				    "network link: give a bandwidth above 0 "
				    "and a latency of 0 or more");
	fam = family < 0 ? est->family : (enum hp_est_family)family;
	df = hp__est_dev(est, t->name);
	hp__dev_spec(t, &d);
	d.nodes = net->nodes;
	d.net_gbps = net->gbps;
	d.net_latency_us = net->latency_us;
	d.net_transport = hp_net_transport_resolve(net->transport, !d.cpu);
	if (d.cpu && !(d.fp32 > 0) && df && df->own_theta)
		d.fp32 = df->fit_fp32;
	if (d.cpu && df && df->own_theta && df->chan_block > 1)
		d.chan_block = df->chan_block;
	if (!(d.fp32 > 0) || !(d.bw > 0))
		return hp_error_set(err, HP_EUNSUPP,
				    "device type '%s': no peak FP32 or "
				    "bandwidth in the catalog",
				    t->name);
	if (prec < HP_PREC_FP32 || prec > HP_PREC_AMP)
		return hp_error_set(err, HP_EINVAL, "unknown precision %d",
				    prec);
	if (d.cpu && prec != HP_PREC_FP32)
		return hp_error_set(err, HP_EUNSUPP,
				    "precision %s: only fp32 is modelled on a "
				    "CPU",
				    hp_precision_name(prec));
	/* (GeForce cards' TF32 rate is their FP32 one: allowed, at it) */
	if (prec == HP_PREC_TF32 && !(t->tf32_tflops > 0))
		return hp_error_set(err, HP_EUNSUPP,
				    "precision tf32: device type '%s' has no "
				    "TF32 tensor cores in the catalog",
				    t->name);
	d.prec = prec;
	snprintf(out->device, sizeof(out->device), "%s", t->name);
	out->ndevices = ndevices;
	out->batch = w->batch * ndevices;
	out->family = fam;
	out->measured = df && df->n > 0;
	out->precision = prec;

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
		 * itself: its own figures and peak, as in the fit, whatever
		 * host validate runs on */
		if (src != HP__SRC_PROFILE) {
			hp__cpu_transfer(df, t, &d, th_cpu, carried,
					 sizeof(carried));
			th = th_cpu;
			calibrated =
			    t->calib.has && t->calib.threads == t->threads;
			/* the factors correct one CPU fit's predictions */
			if (calibrated && t->calib.cpu_fit[0]) {
				char id[24];
				hp_estimator_cpu_fit_id(est, t->name, id,
							sizeof(id));
				other_est = strcmp(t->calib.cpu_fit, id) != 0;
			}
			calibrated = calibrated && !other_est;
			/* this host's own fit on its calibration: its
			 * parameters at its own peak, nothing carried */
			if (calibrated && t->calib.nparams > 0 &&
			    t->calib.fit_gflops > 0) {
				own = true;
				for (int k = 0; k < t->calib.nparams; k++) {
					/* calibrate writes them in the
					 * parameters' order: a search only
					 * for a file written otherwise */
					const char *nm =
					    t->calib.param_names[k];
					const char *own = hp__th_name(k);
					int j = own && !strcmp(nm, own)
						    ? k
						    : hp__th_index(nm);
					if (j >= 0)
						th_cpu[j] = t->calib.params[k];
				}
				d.fp32 = t->calib.fit_gflops * 1e9;
				d.bw = HP__CPU_NOMINAL_BW;
				/* d.cap, from the transfer above: the
				 * measured sgemm, as the fit saw it */
				if (t->calib.chan_block > 0)
					d.chan_block = t->calib.chan_block;
			}
		} else {
			th = df->th;
			d.fp32 = df->fit_fp32;
		}
	} else {
		if (!est->has_gpu)
			return hp_error_set(err, HP_EUNSUPP,
					    "the estimator has no GPU model: "
					    "fit it with the public "
					    "measurements");
		th = est->gpu_th;
	}

	for (int k = 0; k < HP_EST_NCLASS; k++)
		out->class_time_s[k] = NAN;
	switch (fam) {
	case HP_EST_PHYSICAL: {
		double cls[HP_EST_NCLASS];
		/* the type's correction scales its compute, not the
		 * all-reduce over links that are not the device's */
		if (!d.cpu && df)
			d.compute_scale = exp(df->log_scale);
		step = hp__phys_time_cls(th, &d, w, src, ndevices, &comm, cls);
		if (calibrated && !own) {
			step = hp__cpu_calibrated(&t->calib, step - comm, cls) +
			       comm;
			for (int k = 0; k < HP_EST_NCLASS; k++)
				cls[k] *= hp__cpu_calib_factor(&t->calib, k);
		}
		for (int k = 0; k < HP_EST_NCLASS; k++)
			out->class_time_s[k] = cls[k];
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
		if (d.cpu && own) {
			int len = snprintf(
			    out->basis, sizeof(out->basis),
			    "physical model fitted on this host (%d "
			    "thread%s, against its %.0f GFLOP/s ISA "
			    "peak); calibrated on this host at %s from %d "
			    "configurations (its own fit)",
			    t->threads, t->threads == 1 ? "" : "s",
			    t->calib.fit_gflops, t->calib.when, t->calib.n);
			cat_basis(out->basis, len, "%s",
				  speed_then(&t->calib, speed, sizeof(speed)));
		} else if (d.cpu) {
			int len = snprintf(out->basis, sizeof(out->basis),
					   "physical model fitted on %d rows "
					   "of %s%s%s",
					   df->n, t->name,
					   carried[0] ? ", " : "", carried);
			if (calibrated && len > 0 &&
			    (size_t)len < sizeof(out->basis))
				cat_basis(out->basis, len,
					  "; calibrated on this host at %s "
					  "from %d configurations%s",
					  t->calib.when, t->calib.n,
					  speed_then(&t->calib, speed,
						     sizeof(speed)));
			else if (other_est && len > 0 &&
				 (size_t)len < sizeof(out->basis))
				snprintf(out->basis + len,
					 sizeof(out->basis) - (size_t)len,
					 "; not calibrated: this host's "
					 "calibration is for another CPU fit "
					 "(the estimator fitted at %s; "
					 "'hetpool calibrate --estimator FILE' "
					 "for this one)",
					 t->calib.estimator);
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
		if (!d.cpu && prec == HP_PREC_AMP) {
			size_t l = strlen(out->basis);
			if (est->gpu_amp_n)
				snprintf(out->basis + l, sizeof(out->basis) - l,
					 "; amp: share of the FP16 peak "
					 "fitted on %d amp rows",
					 est->gpu_amp_n);
			else
				snprintf(out->basis + l, sizeof(out->basis) - l,
					 "; amp: no amp rows in the fit (a "
					 "default share of the FP16 peak)");
		} else if (!d.cpu && prec == HP_PREC_TF32) {
			size_t l = strlen(out->basis);
			snprintf(out->basis + l, sizeof(out->basis) - l,
				 "; tf32: the TF32 peak (no tf32 rows "
				 "measured)");
		}
		break;
	}
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
		/* the precision's nominal peak */
		step = w->flops_total / (prec == HP_PREC_TF32 ? d.tf32
					 : prec == HP_PREC_AMP && d.fp16 > 0
					     ? d.fp16
					     : d.fp32);
		qlo = qhi = 0;
		snprintf(out->basis, sizeof(out->basis),
			 "roofline: FLOPs / peak %s (no fit)",
			 prec == HP_PREC_TF32  ? "TF32"
			 : prec == HP_PREC_AMP ? "FP16"
					       : "FP32");
		break;
	}
	if (!(step > 0) || !isfinite(step))
		return hp_error_set(err, HP_EINTERNAL,
				    "the model gave no step time");
	out->step_time_lo_s = step * exp(qlo < 0 ? qlo : 0);
	out->step_time_hi_s = step * exp(qhi > 0 ? qhi : 0);
	if (d.nodes > 1 && comm > 0 && comm < step) {
		/* The all-reduce across nodes has its transport's spread. */
		double cq = hp_comm_transport_log_q90(d.net_transport);
		out->step_time_lo_s =
		    (step - comm) * exp(qlo < 0 ? qlo : 0) + comm * exp(-cq);
		out->step_time_hi_s =
		    (step - comm) * exp(qhi > 0 ? qhi : 0) + comm * exp(cq);
	}
	out->input_time_s = NAN;
	if (net->input_cores > 0 && net->input_sample_s > 0)
		input_ceiling(net, w->batch, d.cpu, &step, out);
	out->step_time_s = step;
	out->comm_time_s = comm;
	out->net_transport = d.nodes > 1 ? d.net_transport : HP_NET_AUTO;
	out->samples_per_s = (double)out->batch / step;
	peak = hp__peak(th, &d);
	util = w->flops_total / (step * peak);
	out->utilisation = util > 1 ? 1 : util;

	/* Power and energy: a GPU's power follows the share of the step it
	 * runs kernels (estimators fitted before that: FLOP utilisation). */
	if (!d.cpu && est->power_busy) {
		/* d carries the type's correction (compute_scale) */
		double busy = hp__busy_time(th, &d, w);
		out->power_w = hp__power_w(t, busy < step ? busy / step : 1,
					   est->power_gamma);
	} else {
		out->power_w =
		    hp__power_w(t, out->utilisation, est->power_gamma);
		/* a CPU's board power (TDP) is all its cores busy: a step
		 * on fewer threads than the host's cores draws the idle
		 * power and its threads' share of the rest (power measured
		 * by RAPL at these threads is theirs already) */
		if (d.cpu && !t->power_basis[0] && t->threads > 0 &&
		    t->physical_cores > 0 && t->threads < t->physical_cores &&
		    isfinite(out->power_w))
			out->power_w = t->idle_w + (out->power_w - t->idle_w) *
						       (double)t->threads /
						       t->physical_cores;
	}
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
				 "%s^%.2f, calibrated on %d rows of "
				 "measured power (Zeus)",
				 est->power_busy ? "busy share" : "utilisation",
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
		  (double)w->activations_bytes *
		  (prec == HP_PREC_AMP ? 0.5 : 1) +
	      est->mem_workspace_bytes;
	/* amp: saved activations in FP16, and an FP16 copy of the weights
	 * beside the FP32 master weights */
	if (prec == HP_PREC_AMP)
		mem += 2.0 * (double)w->params;
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

int hp__predict(const struct hp_estimator *est, const struct hp_catalog *cat,
		const struct hp_workload *w, const char *device, int ndevices,
		int family, int src, int prec, struct hp_prediction *out,
		struct hp_error *err)
{
	struct net one = {1, 0, 0};

	return predict_net(est, cat, w, device, ndevices, &one, family, src,
			   prec, out, err);
}

void hp_predict_opts_init(struct hp_predict_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->family = -1;
	o->precision = HP_PREC_FP32;
	o->nodes = 1;
}

int hp_estimator_predict_opts(const struct hp_estimator *est,
			      const struct hp_catalog *cat,
			      const struct hp_workload *w, const char *device,
			      int ndevices, const struct hp_predict_opts *o,
			      struct hp_prediction *out, struct hp_error *err)
{
	struct hp_predict_opts def;
	struct net n;

	if (!o) {
		hp_predict_opts_init(&def);
		o = &def;
	}
	if (!est || !cat)
		return hp_error_set(err, HP_EINVAL, "no estimator or catalog");
	if (o->family > HP_EST_ROOFLINE)
		return hp_error_set(err, HP_EINVAL, "unknown family %d",
				    o->family);
	if (o->input_cores < 0 || o->input_sample_s < 0 ||
	    !isfinite(o->input_cores) || !isfinite(o->input_sample_s))
		return hp_error_set(err, HP_EINVAL,
				    "input pipeline: cores %g, %g s a sample: "
				    "give figures from 0 up",
				    o->input_cores, o->input_sample_s);
	if ((int)o->net_transport < HP_NET_AUTO ||
	    o->net_transport > HP_NET_RDMA)
		return hp_error_set(err, HP_EINVAL, "unknown transport %d",
				    (int)o->net_transport);
	n = (struct net){o->nodes > 0 ? o->nodes : 1,
			 o->net_gbps,
			 o->net_latency_us,
			 o->net_transport,
			 o->input_cores,
			 o->input_sample_s};
	return predict_net(est, cat, w, device, ndevices, &n, o->family,
			   HP__SRC_LAMBDA, (int)o->precision, out, err);
}

int hp_estimator_predict_nodes(const struct hp_estimator *est,
			       const struct hp_catalog *cat,
			       const struct hp_workload *w, const char *device,
			       int ndevices, int nodes, double net_gbps,
			       double net_latency_us, int family,
			       struct hp_prediction *out, struct hp_error *err)
{
	struct hp_predict_opts o;

	hp_predict_opts_init(&o);
	o.family = family;
	o.nodes = nodes;
	o.net_gbps = net_gbps;
	o.net_latency_us = net_latency_us;
	if (nodes < 1)
		return hp_error_set(err, HP_EINVAL, "%d nodes: give 1 or more",
				    nodes);
	return hp_estimator_predict_opts(est, cat, w, device, ndevices, &o, out,
					 err);
}

int hp_estimator_predict(const struct hp_estimator *est,
			 const struct hp_catalog *cat,
			 const struct hp_workload *w, const char *device,
			 int ndevices, int family, struct hp_prediction *out,
			 struct hp_error *err)
{
	struct hp_predict_opts o;

	hp_predict_opts_init(&o);
	o.family = family;
	return hp_estimator_predict_opts(est, cat, w, device, ndevices, &o, out,
					 err);
}

int hp_estimator_predict_prec(const struct hp_estimator *est,
			      const struct hp_catalog *cat,
			      const struct hp_workload *w, const char *device,
			      int ndevices, int family,
			      enum hp_precision precision,
			      struct hp_prediction *out, struct hp_error *err)
{
	struct hp_predict_opts o;

	hp_predict_opts_init(&o);
	o.family = family;
	o.precision = precision;
	return hp_estimator_predict_opts(est, cat, w, device, ndevices, &o, out,
					 err);
}
