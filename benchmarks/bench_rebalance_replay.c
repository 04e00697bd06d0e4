/*
 * bench_rebalance_replay.c - the run-time rebalancer's settings compared on
 * recorded runs.  A live comparison of two settings on this VM needs tens
 * of runs each before the machine's drift averages out; a replay puts every
 * setting through the same recorded drift, so the comparison is paired.
 *
 *   bench_rebalance_replay [--measure N] SETTING... -- METRICS.jsonl...
 *
 * SETTING: "window=20,memory=4,z=2,jump=0.333" (any subset; the rest are
 * the trainer's defaults; "default" alone is all of them).  Each trace is a
 * hetpool-train metrics.jsonl (benchmarks/bench_rebalance.sh keeps its runs'
 * with BENCH_KEEP=DIR).  From every step the replay takes each rank's time
 * per sample (its compute time / its local batch), starts from the even
 * split, and feeds the rebalancer the times the ranks would have taken at
 * the split it holds; a re-split takes effect at the next step.  Over the
 * last N steps (150) it reports, per setting:
 *   - the spread (max / min - 1 of the ranks' median times) at the final
 *     split, over the steps since the last re-split (over all N when fewer
 *     than 20 follow it), as bench_rebalance.sh judges a live run, and the
 *     runs within 5%;
 *   - the throughput against each step's ideal (the sum of the ranks' own
 *     speeds: what a split chosen afresh at every step with hindsight would
 *     reach);
 *   - the re-splits, and, against the first setting, the runs where the
 *     spread is lower and higher.
 * What a replay cannot show: on a shared core a rank's time per sample moves
 * with its share of the work (it waits, and the scheduler credits it), so a
 * trace recorded at one split is not exactly the run another split would
 * have made.  The replay ranks settings on the same drift; the live
 * benchmark says how well the chosen one does.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hetpool/train.h"

#define MAX_SETTINGS 32
#define MAX_RANKS 16
#define MAX_TRACES 4096
#define MIN_AFTER 20

struct setting {
	const char *text;
	int window, memory;
	double z, jump;
};

struct trace {
	const char *path;
	int ranks, steps;
	int64_t global;	    /* the first step's local batches, summed */
	double *per_sample; /* steps x ranks */
};

struct outcome {
	double spread, efficiency;
	int resplits;
};

static int parse_setting(const char *s, struct setting *st)
{
	char buf[256], *save = NULL;

	st->text = s;
	st->window = 20;
	st->memory = HP_REBALANCE_MEMORY;
	st->z = HP_REBALANCE_Z;
	st->jump = HP_REBALANCE_JUMP;
	if (!strcmp(s, "default"))
		return 0;
	if (strlen(s) >= sizeof(buf))
		return -1;
	strcpy(buf, s);
	for (char *kv = strtok_r(buf, ",", &save); kv;
	     kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '='), *end;
		double v;
		if (!eq)
			return -1;
		*eq = 0;
		v = strtod(eq + 1, &end);
		if (end == eq + 1 || *end || !(v > 0) || v > 1e6)
			return -1;
		if (!strcmp(kv, "window") && v >= 3 && v == floor(v))
			st->window = (int)v;
		else if (!strcmp(kv, "memory") && v == floor(v))
			st->memory = (int)v;
		else if (!strcmp(kv, "z"))
			st->z = v;
		else if (!strcmp(kv, "jump"))
			st->jump = v;
		else
			return -1;
	}
	return 0;
}

/* The steps of a metrics.jsonl (lines with rank_step_s and local_batches;
 * a line of another rank count is passed over); -1 when it has none, -2
 * when it cannot be opened. */
static int read_trace(const char *path, struct trace *t)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0, have = 0;

	memset(t, 0, sizeof(*t));
	t->path = path;
	if (!f)
		return -2;
	while (getline(&line, &cap, f) > 0) {
		json_t *o = json_loads(line, 0, NULL);
		json_t *ts = json_object_get(o, "rank_step_s"),
		       *lb = json_object_get(o, "local_batches");
		size_t n = json_array_size(ts);
		if (n >= 2 && n <= MAX_RANKS && json_array_size(lb) == n &&
		    (!t->ranks || (size_t)t->ranks == n)) {
			double row[MAX_RANKS];
			int64_t sum = 0;
			int ok = 1;
			for (size_t r = 0; r < n; r++) {
				double s = json_number_value(
					   json_array_get(ts, r)),
				       b = (double)json_integer_value(
					   json_array_get(lb, r));
				row[r] = s / b;
				sum += (int64_t)b;
				ok = ok && row[r] > 0 && isfinite(row[r]);
			}
			if (ok) {
				if ((size_t)(t->steps + 1) * n > have) {
					double *p;
					have = have ? 2 * have : 1024;
					p = realloc(t->per_sample,
						    have * sizeof(*p));
					if (!p)
						break;
					t->per_sample = p;
				}
				if (!t->steps)
					t->global = sum;
				t->ranks = (int)n;
				memcpy(t->per_sample + (size_t)t->steps * n,
				       row, n * sizeof(*row));
				t->steps++;
			}
		}
		json_decref(o);
	}
	free(line);
	fclose(f);
	return t->steps > 0 ? 0 : -1;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int replay(const struct trace *t, const struct setting *st, int measure,
		  struct outcome *out)
{
	int64_t global = t->global;
	struct hp_rebalance rb;
	int64_t local[MAX_RANKS], nl[MAX_RANKS];
	double *col, med[MAX_RANKS], thr = 0, ideal = 0;
	int R = t->ranks, n = t->steps, last = 0, from;

	if (hp_rebalance_init(&rb, R, st->window, 0.05, 2))
		return -1;
	rb.memory = st->memory;
	rb.z = st->z;
	rb.jump = st->jump;
	hp_split_even(global, R, local);
	out->resplits = 0;
	for (int s = 0; s < n; s++) {
		const double *p = t->per_sample + (size_t)s * (size_t)R;
		double step[MAX_RANKS], slowest = 0, own = 0;
		for (int r = 0; r < R; r++) {
			step[r] = p[r] * (double)local[r];
			slowest = fmax(slowest, step[r]);
			own += 1 / p[r];
		}
		if (s >= n - measure) {
			thr += (double)global / slowest;
			ideal += own;
		}
		if (hp_rebalance_add(&rb, step, local, global, 1, med, nl) ==
		    HP_REBALANCE_RESPLIT) {
			memcpy(local, nl, (size_t)R * sizeof(*nl));
			hp_rebalance_reset(&rb);
			last = s + 1;
			out->resplits++;
		}
	}
	hp_rebalance_release(&rb);
	from = last > n - measure ? last : n - measure;
	if (n - from < MIN_AFTER)
		from = n - measure;
	col = malloc((size_t)(n - from) * sizeof(*col));
	if (!col)
		return -1;
	for (int r = 0; r < R; r++) {
		for (int s = from; s < n; s++)
			col[s - from] =
			    t->per_sample[(size_t)s * (size_t)R + (size_t)r] *
			    (double)local[r];
		med[r] = median(col, n - from);
	}
	free(col);
	out->spread = hp_time_spread(med, R);
	out->efficiency = thr / ideal;
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: bench_rebalance_replay [--measure N] "
			"SETTING... -- METRICS.jsonl...\n"
			"  SETTING: default, or "
			"window=W,memory=M,z=Z,jump=J (any of them)\n");
	return 2;
}

int main(int argc, char **argv)
{
	static struct setting st[MAX_SETTINGS];
	static struct trace tr[MAX_TRACES];
	struct outcome *res;
	int ns = 0, nt = 0, measure = 150, a = 1;

	if (a + 1 < argc && !strcmp(argv[a], "--measure")) {
		char *end;
		long v = strtol(argv[a + 1], &end, 10);
		if (*end || v < MIN_AFTER || v > 100000) {
			fprintf(stderr,
				"--measure: '%s' is not a step count "
				"in [20, 100000]\n",
				argv[a + 1]);
			return 2;
		}
		measure = (int)v;
		a += 2;
	}
	for (; a < argc && strcmp(argv[a], "--"); a++) {
		if (ns == MAX_SETTINGS || parse_setting(argv[a], &st[ns])) {
			fprintf(stderr, "setting '%s': not understood\n",
				argv[a]);
			return usage();
		}
		ns++;
	}
	if (!ns || a >= argc)
		return usage();
	for (a++; a < argc && nt < MAX_TRACES; a++) {
		int rc = read_trace(argv[a], &tr[nt]);
		if (rc == -2 || tr[nt].steps < measure + 40) {
			if (rc == -2)
				fprintf(stderr, "skip %s: cannot be read\n",
					argv[a]);
			else
				fprintf(stderr,
					"skip %s: fewer than %d steps\n",
					argv[a], measure + 40);
			free(tr[nt].per_sample);
			continue;
		}
		nt++;
	}
	if (!nt) {
		fprintf(stderr, "no usable trace\n");
		return 2;
	}
	res = calloc((size_t)ns * (size_t)nt, sizeof(*res));
	if (!res)
		return 1;
	for (int i = 0; i < ns; i++)
		for (int k = 0; k < nt; k++)
			if (replay(&tr[k], &st[i], measure,
				   &res[(size_t)i * (size_t)nt + (size_t)k]))
				return 1;
	printf("%d traces, the last %d steps of each\n", nt, measure);
	printf("%-44s %8s %9s %10s %9s %7s %6s\n", "setting", "spread",
	       "within 5%", "throughput", "re-splits", "lower", "higher");
	for (int i = 0; i < ns; i++) {
		double sp[MAX_TRACES], eff = 0, rs = 0;
		int within = 0, lower = 0, higher = 0;
		for (int k = 0; k < nt; k++) {
			const struct outcome
			    *o = &res[(size_t)i * (size_t)nt + (size_t)k],
			    *b = &res[k];
			sp[k] = o->spread;
			within += o->spread <= 0.05;
			eff += o->efficiency / nt;
			rs += (double)o->resplits / nt;
			lower += o->spread < b->spread - 1e-9;
			higher += o->spread > b->spread + 1e-9;
		}
		printf("%-44s %7.1f%% %5d/%-3d %9.2f%% %9.1f %7d %6d\n",
		       st[i].text, 100 * median(sp, nt), within, nt, 100 * eff,
		       rs, lower, higher);
	}
	printf("spread: median over the traces; throughput: mean, against "
	       "each step's ideal; lower / higher: traces whose spread is "
	       "below / above the first setting's\n");
	for (int k = 0; k < nt; k++)
		free(tr[k].per_sample);
	free(res);
	return 0;
}
