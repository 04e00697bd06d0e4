/*
 * cmd_devices.c - `hetpool devices`: list the device catalog (GPU types
 * and the local CPU host, detected), or show the types some names denote.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "hetpool/device.h"
#include "opt.h"

static const char help[] =
    "usage: hetpool devices [NAME...] [--json] [--catalog FILE]\n"
    "\n"
    "List the device types hetpool knows: GPUs with their peak FP32, "
    "TF32 and\n"
    "FP16 throughput (dense, TFLOP/s), memory (GB), memory bandwidth "
    "(GB/s),\n"
    "board power and idle power (W), and the local CPU host, detected "
    "now.\n"
    "Figures are per device: a K80 board is two devices.  '~' marks an "
    "estimate\n"
    "(idle power where no figure is published; a CPU's peak FP32 is "
    "cores x GHz\n"
    "x FLOPs per cycle of its vector ISA).  --json gives every figure's "
    "source.\n"
    "\n"
    "  NAME            show only these types; a name is an id (v100, "
    "a100-40,\n"
    "                  h100-sxm, cpu) or an alias, in any case: \"Tesla "
    "V100-SXM2-16GB\",\n"
    "                  \"a100\" (the A100 SXM4 80GB), \"h100\" (the H100 "
    "SXM5)\n"
    "  --json          print JSON (devices with aliases and sources) for "
    "scripts\n"
    "  --catalog FILE  read this catalog instead of the shipped one\n"
    "\n"
    "The shipped catalog is data/devices.csv, looked for in this order:\n"
    "  1. $HETPOOL_DATA_DIR/devices.csv\n"
    "  2. beside the program: BIN/../../data (a build tree), then\n"
    "     BIN/../share/hetpool (an installation)\n"
    "  3. the source tree the program was built from\n"
    "\n"
    "examples:\n"
    "  hetpool devices\n"
    "  hetpool devices v100 \"NVIDIA A100-SXM4-40GB\" cpu\n"
    "  hetpool devices --json | jq '.devices[] | {name, fp16_tflops}'\n";

/* "12.3" or "-" for an unknown figure; "~" in front of an estimate. */
static const char *fig(double v, bool estimate, char *buf, size_t n)
{
	if (isnan(v))
		return "-";
	snprintf(buf, n, "%s%.*f", estimate ? "~" : "",
		 v < 10	   ? 2
		 : v < 100 ? 1
			   : 0,
		 v);
	return buf;
}

static bool is_estimate(const char *src)
{
	return src && !strncmp(src, "estimate", 8);
}

/* Names and sources come from the catalog file (and the host's
 * /proc/cpuinfo): escaped before they reach the terminal. */
static void print_row(const struct hp_device_type *t)
{
	char a[7][32], n[128], pr[256], per[48] = "";
	/* a host's peak is an estimate unless its host file measured it */
	bool est = t->kind == HP_DEVICE_CPU && !t->peaks_measured;

	if (t->devices_per_board > 1)
		snprintf(per, sizeof(per), " (per device; %d per board)",
			 t->devices_per_board);

	printf("%-13s %-4s %7s %7s %7s %6s %6s %5s %5s  %s%s\n",
	       cli_esc(t->name, n, sizeof(n)), hp_device_kind_name(t->kind),
	       fig(t->fp32_tflops, est, a[0], sizeof(a[0])),
	       fig(t->tf32_tflops, false, a[1], sizeof(a[1])),
	       fig(t->fp16_tflops, false, a[2], sizeof(a[2])),
	       fig(t->mem_gb, false, a[3], sizeof(a[3])),
	       fig(t->mem_bw_gbs, false, a[4], sizeof(a[4])),
	       fig(t->tdp_w, false, a[5], sizeof(a[5])),
	       fig(t->idle_w, is_estimate(t->src_idle), a[6], sizeof(a[6])),
	       cli_esc(t->product, pr, sizeof(pr)), per);
}

static void print_header(void)
{
	printf("%-13s %-4s %7s %7s %7s %6s %6s %5s %5s  %s\n", "name", "kind",
	       "fp32", "tf32", "fp16", "mem", "bw", "tdp", "idle", "product");
	printf("%-13s %-4s %7s %7s %7s %6s %6s %5s %5s\n", "", "", "TFLOP/s",
	       "TFLOP/s", "TFLOP/s", "GB", "GB/s", "W", "W");
}

static void print_detail(const struct hp_device_type *t,
			 const struct hp_host *host)
{
	const char *src[4] = {t->src_compute, t->src_memory, t->src_power,
			      t->src_idle};
	static const char *const label[4] = {"compute", "memory", "power",
					     "idle"};
	char e[4096];

	print_row(t);
	if (t->naliases) {
		printf("  aliases:");
		for (int i = 0; i < t->naliases; i++)
			printf("%s %s", i ? "," : "",
			       cli_esc(t->aliases[i], e, sizeof(e)));
		printf("\n");
	}
	if (t->kind == HP_DEVICE_CPU && t->detected)
		printf("  host:    %d logical CPUs, %d physical cores, %.2f "
		       "GHz, %s (%d FP32 FLOPs/cycle/core)\n",
		       host->logical_cpus, host->physical_cores, host->ghz,
		       cli_esc(host->isa, e, sizeof(e)), host->flops_per_cycle);
	/* A source is prose and may hold a quoted line break: escaped. */
	for (int i = 0; i < 4; i++)
		printf("  %s:%*s%s\n", label[i], (int)(8 - strlen(label[i])),
		       "", cli_esc(src[i], e, sizeof(e)));
}

static json_t *num(double v)
{
	return isnan(v) ? json_null() : json_real(v);
}

static json_t *type_json(const struct hp_device_type *t,
			 const struct hp_host *host)
{
	json_t *o = json_object(), *al = json_array(), *src = json_object();

	for (int i = 0; i < t->naliases; i++)
		json_array_append_new(al, json_string(t->aliases[i]));
	json_object_set_new(src, "compute", json_string(t->src_compute));
	json_object_set_new(src, "memory", json_string(t->src_memory));
	json_object_set_new(src, "power", json_string(t->src_power));
	json_object_set_new(src, "idle", json_string(t->src_idle));
	json_object_set_new(o, "name", json_string(t->name));
	json_object_set_new(o, "kind",
			    json_string(hp_device_kind_name(t->kind)));
	json_object_set_new(o, "vendor", json_string(t->vendor));
	json_object_set_new(o, "arch", json_string(t->arch));
	json_object_set_new(o, "product", json_string(t->product));
	json_object_set_new(o, "fp32_tflops", num(t->fp32_tflops));
	json_object_set_new(o, "tf32_tflops", num(t->tf32_tflops));
	json_object_set_new(o, "fp16_tflops", num(t->fp16_tflops));
	json_object_set_new(o, "mem_gb", num(t->mem_gb));
	json_object_set_new(o, "mem_bw_gbs", num(t->mem_bw_gbs));
	json_object_set_new(o, "tdp_w", num(t->tdp_w));
	json_object_set_new(o, "idle_w", num(t->idle_w));
	json_object_set_new(o, "idle_estimated",
			    json_boolean(is_estimate(t->src_idle)));
	json_object_set_new(o, "devices_per_board",
			    json_integer(t->devices_per_board));
	json_object_set_new(o, "aliases", al);
	json_object_set_new(o, "sources", src);
	if (t->kind == HP_DEVICE_CPU && t->detected) {
		json_t *h = json_object();
		json_object_set_new(h, "model", json_string(host->model));
		json_object_set_new(h, "isa", json_string(host->isa));
		json_object_set_new(h, "logical_cpus",
				    json_integer(host->logical_cpus));
		json_object_set_new(h, "physical_cores",
				    json_integer(host->physical_cores));
		json_object_set_new(h, "ghz", num(host->ghz));
		json_object_set_new(h, "flops_per_cycle",
				    json_integer(host->flops_per_cycle));
		json_object_set_new(h, "fp32_estimated",
				    json_boolean(!t->peaks_measured));
		json_object_set_new(o, "host", h);
	}
	return o;
}

struct devices_args {
	bool json;
	const char *catalog;
};

static const struct cli_opt devices_opts[] = {
    CLI_OPT_FLAG("json", struct devices_args, json),
    CLI_OPT_STR("catalog", struct devices_args, catalog),
    CLI_OPT_END,
};

static int cmd_devices(int argc, char **argv)
{
	struct devices_args a = {0};
	const struct hp_device_type **show;
	struct hp_catalog *cat;
	struct hp_host host;
	char path[4096];
	const char *catalog;
	int first, nshow = 0, status = EXIT_OK;

	if ((status = cli_parse(&cli_cmd_devices, argc, argv, &a, &first)))
		return status < 0 ? EXIT_OK : status;
	if (!(cat = cli_load_catalog("devices", a.catalog, &host, &status)))
		return status;
	/* the file read, for the listing's last line */
	catalog = a.catalog;
	if (!catalog && !hp_data_path(HP_DATA_CATALOG, path, sizeof(path)))
		catalog = path;
	if (!catalog)
		catalog = "?";
	show = calloc((size_t)(argc - first + cat->n) + 1, sizeof(*show));
	if (!show) {
		hp_catalog_free(cat);
		return cli_error(EXIT_FAIL, "devices: out of memory");
	}
	for (int i = first; i < argc; i++) {
		const struct hp_device_type *t =
		    cli_find_type("devices", cat, argv[i], &status);
		if (!t)
			goto out;
		show[nshow++] = t;
	}
	bool detail = nshow > 0;
	if (!detail)
		for (int i = 0; i < cat->n; i++)
			show[nshow++] = &cat->types[i];

	if (a.json) {
		json_t *o = json_object(), *arr = json_array();
		for (int i = 0; i < nshow; i++)
			json_array_append_new(arr, type_json(show[i], &host));
		json_object_set_new(o, "catalog", json_string(catalog));
		json_object_set_new(o, "devices", arr);
		if (json_dumpf(o, stdout, JSON_INDENT(2)) != 0)
			status =
			    cli_error(EXIT_FAIL, "devices: cannot write JSON");
		else
			fputc('\n', stdout);
		json_decref(o);
		goto out;
	}
	print_header();
	for (int i = 0; i < nshow; i++) {
		if (detail)
			print_detail(show[i], &host);
		else
			print_row(show[i]);
	}
	if (!detail) {
		char e[4096];
		printf("\n%d device types from %s; '~' marks an estimate; "
		       "'hetpool devices NAME' shows sources\n",
		       cat->n, cli_esc(catalog, e, sizeof(e)));
	}
out:
	free(show);
	hp_catalog_free(cat);
	return status;
}

const struct cli_cmd cli_cmd_devices = {
    .name = "devices",
    .run = cmd_devices,
    .help = help,
    .opts = devices_opts,
};
