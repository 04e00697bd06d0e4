/*
 * test_train.c - the trainer's pure parts (lib/train: IDX files and gzip,
 * datasets, the shuffle, the split and the rebalancer, learning-rate
 * schedules, checkpoints, metrics lines) against hand-made files and
 * formulas worked by hand, and the engine calls the trainer adds
 * (flat gradients, the training state, inference, dropout's sample offset)
 * against the engine's own per-tensor calls and a direct computation.
 */
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <jansson.h>
#include <zlib.h>

#include "hetpool/train.h"
#include "test.h"

/* ---- helpers ---- */

static const char *tmpdir(void)
{
	return hp_test_tmpdir("hp_train_");
}

/* An IDX file of unsigned bytes: rank and dims, then data. */
static size_t idx_make(unsigned char *buf, int rank, const uint32_t *dims,
		       const unsigned char *data, size_t n)
{
	size_t o = 4;

	buf[0] = buf[1] = 0;
	buf[2] = 0x08;
	buf[3] = (unsigned char)rank;
	for (int i = 0; i < rank; i++) {
		buf[o++] = (unsigned char)(dims[i] >> 24);
		buf[o++] = (unsigned char)(dims[i] >> 16);
		buf[o++] = (unsigned char)(dims[i] >> 8);
		buf[o++] = (unsigned char)dims[i];
	}
	memcpy(buf + o, data, n);
	return o + n;
}

/* gzip (one member) of in, with zlib's deflate. */
static size_t gz(const unsigned char *in, size_t n, unsigned char *out,
		 size_t cap)
{
	z_stream z;

	memset(&z, 0, sizeof(z));
	ASSERT(deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8,
			    Z_DEFAULT_STRATEGY) == Z_OK);
	z.next_in = (Bytef *)(uintptr_t)in;
	z.avail_in = (uInt)n;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	ASSERT(deflate(&z, Z_FINISH) == Z_STREAM_END);
	n = z.total_out;
	deflateEnd(&z);
	return n;
}

static void write_file(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");

	ASSERT(f);
	ASSERT(fwrite(p, 1, n, f) == n);
	fclose(f);
}

/* ---- IDX ---- */

HP_TEST(train_idx_plain_and_gzip)
{
	unsigned char px[2 * 3 * 4], buf[256], zbuf[512], two[1024];
	uint32_t dims[3] = {2, 3, 4};
	struct hp_idx x;
	struct hp_error err = {0};
	size_t n, zn;

	for (int i = 0; i < 24; i++)
		px[i] = (unsigned char)(i * 7);
	n = idx_make(buf, 3, dims, px, sizeof(px));
	ASSERT(hp_idx_parse(buf, n, &x, &err) == 0);
	ASSERT_EQ_INT(x.type, 0x08);
	ASSERT_EQ_INT(x.rank, 3);
	ASSERT_EQ_INT(x.dims[0], 2);
	ASSERT_EQ_INT(x.dims[2], 4);
	ASSERT_EQ_INT(x.count, 24);
	ASSERT(!memcmp(x.data, px, 24));
	hp_idx_release(&x);

	zn = gz(buf, n, zbuf, sizeof(zbuf));
	ASSERT(zbuf[0] == 0x1f && zbuf[1] == 0x8b);
	ASSERT(hp_idx_parse(zbuf, zn, &x, &err) == 0);
	ASSERT_EQ_INT(x.count, 24);
	ASSERT(!memcmp(x.data, px, 24));
	hp_idx_release(&x);

	/* two gzip members are one stream (gzip -c a b > c) */
	{
		size_t h = n / 2;
		size_t z1 = gz(buf, h, two, sizeof(two));
		size_t z2 = gz(buf + h, n - h, two + z1, sizeof(two) - z1);
		ASSERT(hp_idx_parse(two, z1 + z2, &x, &err) == 0);
		ASSERT(!memcmp(x.data, px, 24));
		hp_idx_release(&x);
	}
	/* a cut gzip file */
	ASSERT(hp_idx_parse(zbuf, zn - 5, &x, &err) == HP_EPARSE);
	ASSERT(strstr(err.msg, "gzip"));
}

HP_TEST(train_idx_refusals)
{
	unsigned char px[6] = {1, 2, 3, 4, 5, 6}, buf[64], bad[64];
	uint32_t dims[2] = {2, 3};
	struct hp_idx x;
	struct hp_error err = {0};
	size_t n = idx_make(buf, 2, dims, px, 6);

	ASSERT(hp_idx_parse(buf, n, &x, &err) == 0);
	hp_idx_release(&x);
	ASSERT(hp_idx_parse(buf, 3, &x, &err) == HP_EPARSE);
	ASSERT(strstr(err.msg, "magic"));
	ASSERT(hp_idx_parse(buf, n - 1, &x, &err) == HP_EPARSE);
	ASSERT(strstr(err.msg, "truncated"));
	memcpy(bad, buf, n);
	bad[n] = 9;
	ASSERT(hp_idx_parse(bad, n + 1, &x, &err) == HP_EPARSE);
	ASSERT(strstr(err.msg, "6 bytes of data, the file has 7"));
	memcpy(bad, buf, n);
	bad[0] = 1;
	ASSERT(hp_idx_parse(bad, n, &x, &err) == HP_EPARSE);
	memcpy(bad, buf, n);
	bad[2] = 0x07;
	ASSERT(hp_idx_parse(bad, n, &x, &err) == HP_EPARSE);
	ASSERT(strstr(err.msg, "type 0x07"));
	memcpy(bad, buf, n);
	bad[3] = 0;
	ASSERT(hp_idx_parse(bad, n, &x, &err) == HP_EPARSE);
	ASSERT(strstr(err.msg, "rank 0"));
	memcpy(bad, buf, n);
	bad[7] = 0; /* first dimension 0 */
	ASSERT(hp_idx_parse(bad, n, &x, &err) == HP_EPARSE);
	ASSERT(strstr(err.msg, "dimension 0 is 0"));
	/* dimensions whose product is huge are refused before any allocation */
	memcpy(bad, buf, n);
	memset(bad + 4, 0x7f, 8);
	ASSERT(hp_idx_parse(bad, n, &x, &err) == HP_ETOOBIG);
	ASSERT(x.data == NULL);
}

/* ---- datasets ---- */

HP_TEST(train_dataset_dir_and_gather)
{
	const char *d = tmpdir();
	char p[256];
	unsigned char px[3 * 2 * 2], lab[3] = {2, 0, 1}, buf[128], zb[256];
	uint32_t di[3] = {3, 2, 2}, dl[1] = {3};
	struct hp_dataset ds;
	struct hp_error err = {0};
	int64_t idx[2] = {2, 0};
	float x[8];
	int32_t y[2];
	size_t n;

	for (int i = 0; i < 12; i++)
		px[i] = (unsigned char)(i * 20);
	n = idx_make(buf, 3, di, px, 12);
	snprintf(p, sizeof(p), "%s/train-images-idx3-ubyte", d);
	write_file(p, buf, n);
	/* the labels gzipped: both forms are found */
	n = idx_make(buf, 1, dl, lab, 3);
	n = gz(buf, n, zb, sizeof(zb));
	snprintf(p, sizeof(p), "%s/train-labels-idx1-ubyte.gz", d);
	write_file(p, zb, n);

	ASSERT(hp_dataset_load_dir(d, "t10k", &ds, &err) == HP_ENOENT);
	ASSERT(strstr(err.msg, "t10k-images-idx3-ubyte"));
	ASSERT(hp_dataset_load_dir(d, "train", &ds, &err) == 0);
	ASSERT_EQ_INT(ds.n, 3);
	/* what a global batch is checked against: the labels' count (the
	 * gzipped file), the trainer's own data's, 0 where none is found */
	ASSERT_EQ_INT(hp_train_data_samples(d), 3);
	ASSERT_EQ_INT(hp_train_data_samples("synthetic"), HP_SYNTHETIC_SAMPLES);
	ASSERT_EQ_INT(hp_train_data_samples("fashion-mnist"), 60000);
	ASSERT_EQ_INT(hp_train_data_samples("/nonexistent/folder"), 0);
	ASSERT_EQ_INT(ds.shape[0], 1);
	ASSERT_EQ_INT(ds.shape[1], 2);
	ASSERT_EQ_INT(ds.classes, 3);
	hp_dataset_stats(&ds);
	{
		/* mean and population std of i * 20 / 255, i = 0..11 */
		double m = 0, v = 0;
		for (int i = 0; i < 12; i++)
			m += i * 20 / 255.0 / 12;
		for (int i = 0; i < 12; i++)
			v += pow(i * 20 / 255.0 - m, 2) / 12;
		ASSERT_NEAR(ds.mean, m, 1e-12);
		ASSERT_NEAR(ds.std, sqrt(v), 1e-12);
	}
	hp_dataset_gather(&ds, idx, 2, x, y);
	ASSERT_EQ_INT(y[0], 1);
	ASSERT_EQ_INT(y[1], 2);
	ASSERT_NEAR(x[0], (8 * 20 / 255.0 - ds.mean) / ds.std, 1e-6);
	ASSERT_NEAR(x[7], (3 * 20 / 255.0 - ds.mean) / ds.std, 1e-6);
	hp_dataset_release(&ds);

	/* counts that disagree */
	n = idx_make(buf, 1, (uint32_t[]){2}, lab, 2);
	write_file(p, buf, n); /* a plain file under the .gz name */
	ASSERT(hp_dataset_load_dir(d, "train", &ds, &err) == HP_EPARSE);
	ASSERT(strstr(err.msg, "3 images but 2 labels"));
}

HP_TEST(train_dataset_synthetic)
{
	struct hp_dataset a, b, t;
	struct hp_error err = {0};
	int64_t shape[3] = {3, 4, 5};
	int seen[4] = {0};

	ASSERT(hp_dataset_synthetic(200, shape, 4, 9, 0, &a, &err) == 0);
	ASSERT(hp_dataset_synthetic(200, shape, 4, 9, 0, &b, &err) == 0);
	ASSERT(hp_dataset_synthetic(200, shape, 4, 9, 1, &t, &err) == 0);
	ASSERT(!memcmp(a.x, b.x, 200 * 60) &&
	       !memcmp(a.y, b.y, 200 * sizeof(*a.y)));
	ASSERT(memcmp(a.x, t.x, 200 * 60) != 0);
	for (int i = 0; i < 200; i++) {
		ASSERT(a.y[i] < 4);
		seen[a.y[i]]++;
	}
	for (int k = 0; k < 4; k++)
		ASSERT(seen[k] > 20);
	/* a sample is nearer its own class's mean than another's */
	{
		double mean[4][60] = {{0}}, right = 0;
		int cnt[4] = {0};
		for (int i = 0; i < 200; i++) {
			cnt[a.y[i]]++;
			for (int j = 0; j < 60; j++)
				mean[a.y[i]][j] += a.x[i * 60 + j];
		}
		for (int k = 0; k < 4; k++)
			for (int j = 0; j < 60; j++)
				mean[k][j] /= cnt[k];
		for (int i = 0; i < 200; i++) {
			int best = 0;
			double bd = 1e300;
			for (int k = 0; k < 4; k++) {
				double dd = 0;
				for (int j = 0; j < 60; j++)
					dd += pow(t.x[i * 60 + j] - mean[k][j],
						  2);
				if (dd < bd) {
					bd = dd;
					best = k;
				}
			}
			right += best == t.y[i];
		}
		ASSERT(right > 190);
	}
	hp_dataset_release(&a);
	hp_dataset_release(&b);
	hp_dataset_release(&t);
	ASSERT(hp_dataset_synthetic(0, shape, 4, 9, 0, &a, &err) == HP_EINVAL);
	/* an ImageNet model's 1,000 classes: labels past a byte */
	{
		int64_t big = 0;
		ASSERT(hp_dataset_synthetic(4000, shape, 1000, 9, 0, &a,
					    &err) == 0);
		for (int64_t i = 0; i < a.n; i++) {
			ASSERT(a.y[i] < 1000);
			big += a.y[i] >= 256;
		}
		ASSERT(big > 2000);
		hp_dataset_release(&a);
	}
	/* patterns past 64 MB (1,000 classes at 3x150x150) are computed per
	 * pixel, not stored: the same data each time */
	{
		int64_t big_shape[3] = {3, 150, 150};
		struct hp_dataset c;
		ASSERT(hp_dataset_synthetic(4, big_shape, 1000, 9, 0, &a,
					    &err) == 0);
		ASSERT(hp_dataset_synthetic(4, big_shape, 1000, 9, 0, &c,
					    &err) == 0);
		ASSERT(!memcmp(a.x, c.x, 4 * 3 * 150 * 150));
		ASSERT(!memcmp(a.y, c.y, 4 * sizeof(*a.y)));
		hp_dataset_release(&a);
		hp_dataset_release(&c);
	}
	ASSERT(hp_dataset_synthetic(10, shape, HP_DATASET_MAX_CLASSES + 1, 9, 0,
				    &a, &err) == HP_EINVAL);
	ASSERT_STR_EQ(err.msg,
		      "synthetic data: 65537 classes: give 1 to 65536");
	{
		/* past the 4 GiB a data set holds: the samples and their
		 * shape named; sample i is the same in a smaller set (the
		 * trainer makes the test set only as large as it reads) */
		int64_t huge[3] = {3, 1024, 1024};
		struct hp_dataset b;
		ASSERT(hp_dataset_synthetic(2048, huge, 10, 9, 1, &a, &err) ==
		       HP_ETOOBIG);
		ASSERT_STR_EQ(err.msg,
			      "synthetic data: 2048 samples of 3x1024x1024 are "
			      "more than the 4 GiB a data set holds");
		ASSERT(hp_dataset_synthetic(8, shape, 10, 9, 1, &a, &err) == 0);
		ASSERT(hp_dataset_synthetic(3, shape, 10, 9, 1, &b, &err) == 0);
		ASSERT(!memcmp(a.x, b.x,
			       (size_t)(3 * shape[0] * shape[1] * shape[2])));
		ASSERT(!memcmp(a.y, b.y, 3 * sizeof(*a.y)));
		hp_dataset_release(&a);
		hp_dataset_release(&b);
	}
}

/* ---- shuffle and split ---- */

HP_TEST(train_shuffle)
{
	int64_t p[1000], q[1000];
	int seen[1000] = {0}, first[5] = {0};

	hp_shuffle(1000, 7, 3, p);
	for (int i = 0; i < 1000; i++) {
		ASSERT(p[i] >= 0 && p[i] < 1000);
		seen[p[i]]++;
	}
	for (int i = 0; i < 1000; i++)
		ASSERT_EQ_INT(seen[i], 1);
	hp_shuffle(1000, 7, 3, q);
	ASSERT(!memcmp(p, q, sizeof(p)));
	hp_shuffle(1000, 7, 4, q);
	ASSERT(memcmp(p, q, sizeof(p)) != 0);
	hp_shuffle(1000, 8, 3, q);
	ASSERT(memcmp(p, q, sizeof(p)) != 0);
	/* uniform: each of 5 items leads 1/5 of 20000 shuffles (5 sigma) */
	for (int s = 0; s < 20000; s++) {
		hp_shuffle(5, (uint64_t)s, 0, p);
		first[p[0]]++;
	}
	for (int k = 0; k < 5; k++)
		ASSERT(abs(first[k] - 4000) < 5 * 57);
}

HP_TEST(train_split)
{
	int64_t l[4], off[4];
	struct hp_error err = {0};
	double w[3] = {2, 1, 1}, w2[2] = {1, 1e-9};

	hp_split_even(10, 4, l);
	ASSERT(l[0] == 3 && l[1] == 3 && l[2] == 2 && l[3] == 2);
	hp_split_offsets(l, 4, off);
	ASSERT(off[0] == 0 && off[1] == 3 && off[2] == 6 && off[3] == 8);
	ASSERT(hp_split_proportional(64, 3, w, 1, l) == 0);
	ASSERT(l[0] == 32 && l[1] == 16 && l[2] == 16);
	/* 10 over 2:1:1 is 5, 2.5, 2.5: the tie goes to the lower rank */
	ASSERT(hp_split_proportional(10, 3, w, 0, l) == 0);
	ASSERT(l[0] == 5 && l[1] == 3 && l[2] == 2);
	/* the floor holds even for a vanishing weight */
	ASSERT(hp_split_proportional(64, 2, w2, 4, l) == 0);
	ASSERT(l[0] == 60 && l[1] == 4);
	ASSERT(hp_split_proportional(7, 2, w2, 4, l) == HP_EINVAL);
	w2[1] = -1;
	ASSERT(hp_split_proportional(64, 2, w2, 1, l) == HP_EINVAL);
	/* every split of 1..40 over 1..4 ranks: sums, and within one of the
	 * exact share (largest remainder) */
	for (int64_t g = 4; g <= 40; g++)
		for (int r = 1; r <= 3; r++) {
			double ww[3] = {1.5, 0.7, 3.1}, sw = 0;
			int64_t sum = 0;
			for (int i = 0; i < r; i++)
				sw += ww[i];
			ASSERT(hp_split_proportional(g, r, ww, 0, l) == 0);
			for (int i = 0; i < r; i++) {
				double ex = (double)g * ww[i] / sw;
				sum += l[i];
				ASSERT(fabs((double)l[i] - ex) < 1);
			}
			ASSERT_EQ_INT(sum, g);
		}
	ASSERT(hp_split_parse("24,8", 2, 32, l, &err) == 0);
	ASSERT(l[0] == 24 && l[1] == 8);
	ASSERT(hp_split_parse("24,9", 2, 32, l, &err) == HP_EINVAL);
	ASSERT(strstr(err.msg, "sum to 33"));
	ASSERT(hp_split_parse("24", 2, 32, l, &err) == HP_EINVAL);
	ASSERT(strstr(err.msg, "1 items for 2 ranks"));
	ASSERT(hp_split_parse("16,8,8", 2, 32, l, &err) == HP_EINVAL);
	ASSERT(hp_split_parse("32,0", 2, 32, l, &err) == HP_EINVAL);
	ASSERT(hp_split_parse("a,b", 2, 32, l, &err) == HP_EINVAL);
	ASSERT(hp_split_parse("16,,16", 2, 32, l, &err) == HP_EINVAL);
}

HP_TEST(train_rebalance)
{
	struct hp_rebalance rb;
	int64_t local[2] = {32, 32}, nl[2];
	double med[2], t[2];
	enum hp_rebalance_verdict v = HP_REBALANCE_WAIT;
	int steps = 0;

	ASSERT(hp_rebalance_init(&rb, 2, 5, 0.05, 2) == 0);
	/* rank 1 takes 2 ms a sample, rank 0 1 ms; one outlier each */
	while (v == HP_REBALANCE_WAIT) {
		t[0] = 0.032 * (steps == 3 ? 10 : 1);
		t[1] = 0.064 * (steps == 4 ? 0.1 : 1);
		v = hp_rebalance_add(&rb, t, local, 64, 1, med, nl);
		steps++;
	}
	/* 2 settling steps, then a window of 5 */
	ASSERT_EQ_INT(steps, 7);
	ASSERT_EQ_INT(v, HP_REBALANCE_RESPLIT);
	ASSERT_NEAR(med[0], 0.032, 1e-12);
	ASSERT_NEAR(med[1], 0.064, 1e-12);
	/* throughputs 1000 and 500 samples/s: 64 as 43 + 21 */
	ASSERT(nl[0] == 43 && nl[1] == 21);
	local[0] = nl[0];
	local[1] = nl[1];
	hp_rebalance_reset(&rb);
	/* balanced within 5%: nothing more */
	steps = 0;
	do {
		t[0] = 0.043;
		t[1] = 0.042 * 1.04;
		v = hp_rebalance_add(&rb, t, local, 64, 1, med, nl);
		steps++;
	} while (v == HP_REBALANCE_WAIT);
	ASSERT_EQ_INT(steps, 7);
	ASSERT_EQ_INT(v, HP_REBALANCE_BALANCED);
	/* unbalanced, but no integer split is better: balanced */
	local[0] = 1;
	local[1] = 1;
	for (int i = 0; i < 5; i++) {
		t[0] = 0.001;
		t[1] = 0.0011;
		v = hp_rebalance_add(&rb, t, local, 2, 1, med, nl);
	}
	ASSERT_EQ_INT(v, HP_REBALANCE_BALANCED);
	hp_rebalance_release(&rb);
	t[0] = 1;
	t[1] = 1.5;
	ASSERT_NEAR(hp_time_spread(t, 2), 0.5, 1e-12);
}

/* Noise does not throw the split back and forth: steps 20% either way
 * around each rank's true speed settle the split at the true balance and
 * leave it there, and a real change (a rank twice as slow) is followed at
 * once. */
static double noise_step(uint64_t *state)
{
	*state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
	return 0.8 + 0.4 * (double)(*state >> 11) / 9007199254740992.0;
}

HP_TEST(train_rebalance_averages_windows)
{
	struct hp_rebalance rb;
	int64_t local[2] = {40, 24}, nl[2];
	double med[2], t[2];
	uint64_t state = 42;
	int resplits = 0;

	ASSERT(hp_rebalance_init(&rb, 2, 10, 0.05, 2) == 0);
	/* true times per sample: 1 ms and 2 ms (ideal split 43:21) */
	for (int s = 0; s < 600; s++) {
		t[0] = 0.001 * (double)local[0] * noise_step(&state);
		t[1] = 0.002 * (double)local[1] * noise_step(&state);
		if (hp_rebalance_add(&rb, t, local, 64, 1, med, nl) ==
		    HP_REBALANCE_RESPLIT) {
			resplits++;
			local[0] = nl[0];
			local[1] = nl[1];
			hp_rebalance_reset(&rb);
		}
	}
	/* a one-window rule re-splits on the noise again and again */
	ASSERT(resplits >= 1 && resplits <= 3);
	ASSERT(local[0] >= 42 && local[0] <= 44);
	/* rank 1 becomes twice as slow: followed within a window or two */
	resplits = 0;
	for (int s = 0; s < 40; s++) {
		t[0] = 0.001 * (double)local[0] * noise_step(&state);
		t[1] = 0.004 * (double)local[1] * noise_step(&state);
		if (hp_rebalance_add(&rb, t, local, 64, 1, med, nl) ==
		    HP_REBALANCE_RESPLIT) {
			resplits++;
			local[0] = nl[0];
			local[1] = nl[1];
			hp_rebalance_reset(&rb);
		}
	}
	/* 1 ms and 4 ms a sample: 51:13 */
	ASSERT(resplits >= 1);
	ASSERT(local[0] >= 50 && local[0] <= 52);
	hp_rebalance_release(&rb);
}

/* A window over the threshold whose better split gains less than half of
 * it is left alone: 10% apart in one window, but the averaged speeds say
 * the split is within 1 sample of the best. */
HP_TEST(train_rebalance_small_gain_kept)
{
	struct hp_rebalance rb;
	int64_t local[2] = {50, 50}, nl[2];
	double med[2], t[2];
	enum hp_rebalance_verdict v;

	ASSERT(hp_rebalance_init(&rb, 2, 1, 0.05, 0) == 0);
	for (int w = 0; w < 3; w++) {
		t[0] = 0.050;
		t[1] = 0.050;
		ASSERT_EQ_INT(hp_rebalance_add(&rb, t, local, 100, 1, med, nl),
			      HP_REBALANCE_BALANCED);
	}
	t[0] = 0.050;
	t[1] = 0.055; /* 10% over: the average moves by a quarter of it */
	v = hp_rebalance_add(&rb, t, local, 100, 1, med, nl);
	ASSERT_NEAR(med[1] / med[0] - 1, 0.10, 1e-9);
	ASSERT_EQ_INT(v, HP_REBALANCE_BALANCED);
	/* a lasting 10%: followed once the average has it */
	for (int w = 0; w < 4 && v != HP_REBALANCE_RESPLIT; w++)
		v = hp_rebalance_add(&rb, t, local, 100, 1, med, nl);
	ASSERT_EQ_INT(v, HP_REBALANCE_RESPLIT);
	ASSERT(nl[0] == 52 && nl[1] == 48);
	hp_rebalance_release(&rb);
}

/* A gap over the threshold that the window's own noise explains is not
 * acted on; a lasting gap of the same look is, once the windows at that
 * split add up to the evidence. */
HP_TEST(train_rebalance_waits_out_noise)
{
	struct hp_rebalance rb;
	int64_t local[2] = {50, 50}, nl[2];
	double med[2], t[2];
	enum hp_rebalance_verdict v = HP_REBALANCE_WAIT;
	int step = 0, windows = 0;

	ASSERT(hp_rebalance_init(&rb, 2, 10, 0.05, 0) == 0);
	/* rank 0: 0.85 and 1.15 in turn (median 1.0, each window median
	 * uncertain by 1.2533 x 1.4826 x 0.15 / sqrt(10) = 8.8%); rank 1 in
	 * its first 10 steps 0.92 and 1.22 (median 1.07: 7% over, which
	 * the one-window rule would re-split 52:48), then 0.78 and 1.08 */
	for (; step < 40; step++) {
		bool odd = step % 2;
		t[0] = odd ? 1.15 : 0.85;
		t[1] = step < 10 ? (odd ? 1.22 : 0.92) : (odd ? 1.08 : 0.78);
		v = hp_rebalance_add(&rb, t, local, 100, 1, med, nl);
		if (step == 9) {
			ASSERT_NEAR(med[1], 1.07, 1e-12);
			ASSERT_NEAR(rb.err2[0], 0.08814 * 0.08814, 1e-6);
		}
		ASSERT(v != HP_REBALANCE_RESPLIT);
	}
	ASSERT_EQ_INT(v, HP_REBALANCE_BALANCED);
	/* rank 1 12% slower, with the same noise: followed once the
	 * windows' evidence is in, at the 6th (the gap, 0.113 in logs, is
	 * then beyond 2 x 8.8% x sqrt(2) x sqrt(sum of squared weights)) */
	v = HP_REBALANCE_WAIT;
	for (step = 0; step < 200 && v != HP_REBALANCE_RESPLIT; step++) {
		bool odd = step % 2;
		t[0] = odd ? 1.15 : 0.85;
		t[1] = odd ? 1.27 : 0.97;
		v = hp_rebalance_add(&rb, t, local, 100, 1, med, nl);
		windows += v != HP_REBALANCE_WAIT;
	}
	ASSERT_EQ_INT(v, HP_REBALANCE_RESPLIT);
	ASSERT(windows >= 4 && windows <= 8);
	ASSERT_NEAR(med[1], 1.12, 1e-12);
	ASSERT(nl[0] > 50 && nl[1] < 50);
	hp_rebalance_release(&rb);
}

/* The settings are fields with the header's defaults; z is the one the
 * significance test reads (a z no gap can pass keeps any split). */
HP_TEST(train_rebalance_settings_are_fields)
{
	struct hp_rebalance rb;
	int64_t local[2] = {50, 50}, nl[2];
	double med[2], t[2];
	int resplits = 0;

	ASSERT(hp_rebalance_init(&rb, 2, 10, 0.05, 0) == 0);
	ASSERT_EQ_INT(rb.memory, HP_REBALANCE_MEMORY);
	ASSERT_NEAR(rb.jump, HP_REBALANCE_JUMP, 0);
	ASSERT_NEAR(rb.z, HP_REBALANCE_Z, 0);
	for (int pass = 0; pass < 2; pass++) {
		hp_rebalance_release(&rb);
		ASSERT(hp_rebalance_init(&rb, 2, 10, 0.05, 0) == 0);
		rb.z = pass ? 1e9 : rb.z;
		resplits = 0;
		for (int step = 0; step < 200; step++) {
			bool odd = step % 2;
			t[0] = odd ? 1.15 : 0.85;
			t[1] = odd ? 1.27 : 0.97; /* 12% slower, for good */
			resplits +=
			    hp_rebalance_add(&rb, t, local, 100, 1, med, nl) ==
			    HP_REBALANCE_RESPLIT;
		}
		/* the default z follows it; one no gap can pass does not */
		ASSERT_EQ_INT(resplits > 0, pass == 0);
	}
	hp_rebalance_release(&rb);
}

/* ---- learning rate ---- */

HP_TEST(train_lr)
{
	struct hp_lr_plan p;
	struct hp_error err = {0};
	enum hp_lr_sched s;

	hp_lr_plan_init(&p);
	p.lr = 0.1;
	p.global_batch = 1024;
	p.ref_batch = 256;
	p.total_steps = 100;
	ASSERT(hp_lr_plan_check(&p, &err) == 0);
	ASSERT_NEAR(hp_lr_at(&p, 50), 0.1, 1e-15);
	p.rule = HP_LR_LINEAR;
	ASSERT_NEAR(hp_lr_peak(&p), 0.4, 1e-15);
	p.rule = HP_LR_SQRT;
	ASSERT_NEAR(hp_lr_peak(&p), 0.2, 1e-15);
	/* warm-up: 0.2 * (s + 1) / 10, then the peak */
	p.warmup_steps = 10;
	ASSERT_NEAR(hp_lr_at(&p, 0), 0.02, 1e-15);
	ASSERT_NEAR(hp_lr_at(&p, 4), 0.1, 1e-15);
	ASSERT_NEAR(hp_lr_at(&p, 9), 0.2, 1e-15);
	ASSERT_NEAR(hp_lr_at(&p, 10), 0.2, 1e-15);
	/* step: x 0.5 every 30 steps after the warm-up */
	p.sched = HP_LR_STEP;
	p.step_every = 30;
	p.gamma = 0.5;
	ASSERT_NEAR(hp_lr_at(&p, 39), 0.2, 1e-15);
	ASSERT_NEAR(hp_lr_at(&p, 40), 0.1, 1e-15);
	ASSERT_NEAR(hp_lr_at(&p, 69), 0.1, 1e-15);
	ASSERT_NEAR(hp_lr_at(&p, 70), 0.05, 1e-15);
	ASSERT_NEAR(hp_lr_at(&p, 99), 0.05, 1e-15);
	/* cosine over the 90 steps after the warm-up (PyTorch's
	 * CosineAnnealingLR, T_max 90): the middle is halfway */
	p.sched = HP_LR_COSINE;
	p.lr_min = 0.02;
	ASSERT_NEAR(hp_lr_at(&p, 10), 0.2, 1e-15);
	ASSERT_NEAR(hp_lr_at(&p, 55), 0.11, 1e-12);
	ASSERT_NEAR(hp_lr_at(&p, 25), 0.02 + 0.18 * 0.5 * (1 + cos(M_PI / 6)),
		    1e-12);
	ASSERT(hp_lr_at(&p, 99) > 0.02 && hp_lr_at(&p, 99) < 0.0201);
	/* exp-ramp: 1e-4 to 1 over 101 steps, x 10 every 25 */
	p.sched = HP_LR_EXP_RAMP;
	p.lr_min = 1e-4;
	p.lr_max = 1;
	p.total_steps = 101;
	ASSERT_NEAR(hp_lr_at(&p, 0) / 1e-4, 1, 1e-12);
	ASSERT_NEAR(hp_lr_at(&p, 25) / 1e-3, 1, 1e-12);
	ASSERT_NEAR(hp_lr_at(&p, 100), 1, 1e-12);
	ASSERT(hp_lr_plan_check(&p, &err) == 0);
	/* a range whose ratio overflows a double (1e-303 to 1e6): each rate
	 * finite, rising, the middle at the geometric mean */
	p.lr_min = 1e-303;
	p.lr_max = 1e6;
	p.total_steps = 3;
	ASSERT(isfinite(hp_lr_at(&p, 1)) && hp_lr_at(&p, 1) > 1e-303);
	ASSERT_NEAR(log10(hp_lr_at(&p, 1)), (-303.0 + 6.0) / 2, 1e-9);
	ASSERT(hp_lr_at(&p, 2) == 1e6);
	p.lr_min = 1e-4;
	p.lr_max = 1;
	p.total_steps = 101;
	p.lr_max = 1e-5;
	ASSERT(hp_lr_plan_check(&p, &err) == HP_ERANGE);
	ASSERT(strstr(err.msg, "exp-ramp"));
	hp_lr_plan_init(&p);
	p.rule = HP_LR_LINEAR;
	ASSERT(hp_lr_plan_check(&p, &err) == HP_ERANGE);
	ASSERT(strstr(err.msg, "--ref-batch"));
	ASSERT(hp_lr_sched_parse("cosine", &s) == 0 && s == HP_LR_COSINE);
	ASSERT(hp_lr_sched_parse("exp-ramp", &s) == 0 && s == HP_LR_EXP_RAMP);
	ASSERT(hp_lr_sched_parse("warm", &s) == HP_EINVAL);
	ASSERT_STR_EQ(hp_lr_sched_name(HP_LR_STEP), "step");
}

/* ---- checkpoints ---- */

HP_TEST(train_checkpoint_roundtrip)
{
	const char *d = tmpdir();
	char path[128];
	float a[5] = {1.5f, -2, 0, 3e-39f, 1e30f}, b[1] = {NAN};
	struct hp_ckpt c, r;
	struct hp_error err = {0};
	struct stat st;
	DIR *dir;
	struct dirent *de;
	int files = 0;

	hp_ckpt_init(&c);
	c.meta = json_pack("{s:I, s:f}", "step", (json_int_t)42, "x", 0.1);
	ASSERT(hp_ckpt_add(&c, "conv0.weight", 5, a) == 0);
	ASSERT(hp_ckpt_add(&c, "conv0.bias", 1, b) == 0);
	ASSERT(hp_ckpt_add(&c, "empty", 0, NULL) == 0);
	snprintf(path, sizeof(path), "%s/ck", d);
	ASSERT(hp_ckpt_write(path, &c, &err) == 0);
	/* written twice: the second replaces the first, no temporary left */
	ASSERT(hp_ckpt_write(path, &c, &err) == 0);
	dir = opendir(d);
	while ((de = readdir(dir)))
		files += de->d_name[0] != '.';
	closedir(dir);
	ASSERT_EQ_INT(files, 1);
	ASSERT(hp_ckpt_read(path, &r, &err) == 0);
	ASSERT_EQ_INT(r.n, 3);
	ASSERT_STR_EQ(r.t[0].name, "conv0.weight");
	ASSERT(!memcmp(r.t[0].data, a, sizeof(a)));
	ASSERT(!memcmp(r.t[1].data, b, sizeof(b)));
	ASSERT_EQ_INT(r.t[2].numel, 0);
	ASSERT(hp_ckpt_find(&r, "conv0.bias") == &r.t[1]);
	ASSERT(hp_ckpt_find(&r, "nope") == NULL);
	ASSERT_EQ_INT(json_integer_value(json_object_get(r.meta, "step")), 42);
	ASSERT(json_real_value(json_object_get(r.meta, "x")) == 0.1);
	hp_ckpt_release(&r);

	/* damaged: one byte flipped, cut short, another magic */
	{
		char *buf;
		size_t len;
		ASSERT(hp_read_file(path, 1 << 20, &buf, &len, &err) == 0);
		buf[len / 2] ^= 1;
		ASSERT(hp_ckpt_parse(buf, len, &r, &err) == HP_EPARSE);
		ASSERT(strstr(err.msg, "checksum"));
		hp_ckpt_release(&r);
		buf[len / 2] ^= 1;
		ASSERT(hp_ckpt_parse(buf, len - 1, &r, &err) == HP_EPARSE);
		hp_ckpt_release(&r);
		buf[0] = 'X';
		ASSERT(hp_ckpt_parse(buf, len, &r, &err) == HP_EPARSE);
		ASSERT(strstr(err.msg, "magic"));
		hp_ckpt_release(&r);
		free(buf);
	}
	ASSERT(stat(path, &st) == 0);
	hp_ckpt_release(&c);
	/* a folder that does not exist: an error, nothing written */
	hp_ckpt_init(&c);
	ASSERT(hp_ckpt_write("/nonexistent/dir/ck", &c, &err) == HP_EIO);
	hp_ckpt_release(&c);
}

/* write_from's fill: tensor i is i + 1, i + 2, ...; tensor 2 fails when
 * *ctx says so */
static int fill_seq(void *ctx, int i, float *buf, struct hp_error *err)
{
	static const int64_t numel[] = {7, 3, 5};

	if (i == 2 && *(int *)ctx)
		return hp_error_set(err, HP_EIO, "fill %d failed", i);
	for (int64_t j = 0; j < numel[i]; j++)
		buf[j] = (float)(i + 1 + j);
	return 0;
}

HP_TEST(train_checkpoint_write_from_fills)
{
	/* tensors declared without data, filled as they are written, make
	 * the same file as tensors added with their data; a fill that fails
	 * leaves the old file whole and no temporary */
	const char *d = tmpdir();
	char p1[128], p2[128], *b1, *b2;
	size_t l1, l2;
	float v0[7], v1[3], v2[5];
	struct hp_ckpt c, f;
	struct hp_error err = {0};
	int fail = 0, files = 0;
	DIR *dir;
	struct dirent *de;

	for (int j = 0; j < 7; j++)
		v0[j] = (float)(1 + j), v1[j % 3] = (float)(2 + j % 3),
		v2[j % 5] = (float)(3 + j % 5);
	hp_ckpt_init(&c);
	hp_ckpt_init(&f);
	c.meta = json_pack("{s:I}", "step", (json_int_t)9);
	f.meta = json_incref(c.meta);
	ASSERT(hp_ckpt_add(&c, "a", 7, v0) == 0);
	ASSERT(hp_ckpt_add(&c, "b", 3, v1) == 0);
	ASSERT(hp_ckpt_add(&c, "c", 5, v2) == 0);
	ASSERT(hp_ckpt_add(&f, "a", 7, NULL) == 0);
	ASSERT(hp_ckpt_add(&f, "b", 3, v1) == 0); /* data and fills mix */
	ASSERT(hp_ckpt_add(&f, "c", 5, NULL) == 0);
	ASSERT(f.t[0].data == NULL && f.t[1].data != NULL);
	snprintf(p1, sizeof(p1), "%s/with", d);
	snprintf(p2, sizeof(p2), "%s/filled", d);
	ASSERT(hp_ckpt_write(p1, &c, &err) == 0);
	ASSERT(hp_ckpt_write_from(p2, &f, fill_seq, &fail, &err) == 0);
	ASSERT(hp_read_file(p1, 1 << 20, &b1, &l1, &err) == 0);
	ASSERT(hp_read_file(p2, 1 << 20, &b2, &l2, &err) == 0);
	ASSERT_EQ_INT(l1, l2);
	ASSERT(!memcmp(b1, b2, l1));
	free(b2);
	/* nothing to fill with: refused, nothing written */
	ASSERT(hp_ckpt_write(p2, &f, &err) == HP_EINVAL);
	fail = 1;
	ASSERT(hp_ckpt_write_from(p2, &f, fill_seq, &fail, &err) == HP_EIO);
	ASSERT(strstr(err.msg, "fill 2 failed"));
	ASSERT(hp_read_file(p2, 1 << 20, &b2, &l2, &err) == 0);
	ASSERT(l1 == l2 && !memcmp(b1, b2, l1));
	free(b1);
	free(b2);
	dir = opendir(d);
	while ((de = readdir(dir)))
		files += de->d_name[0] != '.';
	closedir(dir);
	ASSERT_EQ_INT(files, 2);
	hp_ckpt_release(&c);
	hp_ckpt_release(&f);
}

/* A checkpoint whose header lies about the sizes, with a right CRC. */
HP_TEST(train_checkpoint_sizes_checked)
{
	const char *hdr = "{\"format\":\"hetpool-checkpoint\",\"version\":1,"
			  "\"meta\":{},\"tensors\":[{\"name\":\"w\",\"numel\":"
			  "3}]}";
	unsigned char buf[512];
	uint64_t hl = strlen(hdr);
	uint32_t crc;
	size_t n = 0;
	struct hp_ckpt r;
	struct hp_error err = {0};
	float data[2] = {1, 2};

	memcpy(buf, "HPCKPT1\n", 8);
	memcpy(buf + 8, &hl, 8);
	memcpy(buf + 16, hdr, hl);
	n = 16 + hl;
	memcpy(buf + n, data, sizeof(data)); /* 2 floats, not 3 */
	n += sizeof(data);
	crc = (uint32_t)crc32(0, buf, (uInt)n);
	memcpy(buf + n, &crc, 4);
	ASSERT(hp_ckpt_parse(buf, n + 4, &r, &err) == HP_EPARSE);
	ASSERT(strstr(err.msg, "exceed"));
	hp_ckpt_release(&r);
}

HP_TEST(train_fnv1a64)
{
	/* the published FNV-1a 64 test vectors */
	ASSERT(hp_fnv1a64("", 0, HP_FNV1A64_INIT) == 0xcbf29ce484222325ull);
	ASSERT(hp_fnv1a64("a", 1, HP_FNV1A64_INIT) == 0xaf63dc4c8601ec8cull);
	ASSERT(hp_fnv1a64("foobar", 6, HP_FNV1A64_INIT) ==
	       0x85944171f73967e8ull);
}

/* ---- metrics ---- */

HP_TEST(train_metrics)
{
	int64_t local[2] = {24, 8};
	double ss[2] = {0.5, 0.25}, as[2] = {0.001, NAN};
	struct hp_step_record r = {
	    .step = 3,
	    .epoch = 0,
	    .loss = 2.25,
	    .accuracy = 0.5,
	    .lr = 0.1,
	    .ranks = 2,
	    .local = local,
	    .step_s = ss,
	    .allreduce_s = as,
	    .wall_step_s = 0.6,
	    .samples_per_s = 32 / 0.6,
	    .elapsed_s = 9,
	};
	char *s = hp_step_record_json(&r), path[128];
	const char *d = tmpdir();
	json_error_t je;
	json_t *o = json_loads(s, 0, &je);
	struct hp_error err = {0};
	struct stat st0, st1;
	char *buf;
	size_t len;

	ASSERT(o && !strchr(s, '\n'));
	ASSERT_EQ_INT(json_integer_value(json_object_get(o, "step")), 3);
	ASSERT(json_real_value(json_object_get(o, "loss")) == 2.25);
	ASSERT_EQ_INT(json_integer_value(json_array_get(
			  json_object_get(o, "local_batches"), 1)),
		      8);
	ASSERT(json_real_value(json_array_get(json_object_get(o, "rank_step_s"),
					      0)) == 0.5);
	ASSERT(json_is_null(
	    json_array_get(json_object_get(o, "rank_allreduce_s"), 1)));
	json_decref(o);
	free(s);

	snprintf(path, sizeof(path), "%s/m.jsonl", d);
	ASSERT(hp_metrics_truncate(path, 5, &err) == 0); /* no file */
	write_file(path,
		   "{\"step\":1}\n{\"step\":2}\n{\"event\":\"rebalance\","
		   "\"at_step\":2}\n{\"step\":3}\n{\"ste",
		   73);
	ASSERT(stat(path, &st0) == 0);
	ASSERT(hp_metrics_truncate(path, 2, &err) == 0);
	ASSERT(hp_read_file(path, 1 << 20, &buf, &len, &err) == 0);
	ASSERT_STR_EQ(buf, "{\"step\":1}\n{\"step\":2}\n{\"event\":"
			   "\"rebalance\",\"at_step\":2}\n");
	free(buf);
	/* cut in place (the same file: a copy needs room a full disk lacks) */
	ASSERT(stat(path, &st1) == 0);
	ASSERT(st0.st_ino == st1.st_ino);
	/* a pipe or device has nothing to cut */
	ASSERT(hp_metrics_truncate("/dev/null", 2, &err) == 0);
}

/* ---- the engine's calls for the trainer ---- */

#ifdef HP_HAVE_ENGINE
#include "hetpool/engine.h"

static const char *conv_net =
    "{\"input\":[3,6,6],\"classes\":5,\"layers\":["
    "{\"type\":\"conv\",\"filters\":8,\"kernel\":3,\"pad\":1},"
    "{\"type\":\"bn\"},{\"type\":\"relu\"},"
    "{\"type\":\"dropout\",\"p\":0.3},"
    "{\"type\":\"pool\",\"op\":\"max\",\"kernel\":2,\"stride\":2},"
    "{\"type\":\"fc\",\"units\":12},{\"type\":\"relu\"},"
    "{\"type\":\"dropout\",\"p\":0.5},{\"type\":\"fc\",\"units\":5}]}";

static const char *plain_net =
    "{\"input\":[3,6,6],\"classes\":5,\"layers\":["
    "{\"type\":\"conv\",\"filters\":8,\"kernel\":3,\"pad\":1},"
    "{\"type\":\"relu\"},"
    "{\"type\":\"pool\",\"op\":\"max\",\"kernel\":2,\"stride\":2},"
    "{\"type\":\"fc\",\"units\":12},{\"type\":\"relu\"},"
    "{\"type\":\"fc\",\"units\":5}]}";

static struct hp_engine *eng(const char *js, int64_t batch,
			     enum hp_optimizer opt, uint64_t seed,
			     struct hp_spec *s)
{
	struct hp_engine_opts o;
	struct hp_error err = {0};
	struct hp_engine *e;

	if (hp_spec_parse_only(js, strlen(js), s, &err))
		HP_FAIL("spec: %s", err.msg);
	hp_engine_opts_init(&o);
	o.threads = 1;
	o.batch = batch;
	o.opt = opt;
	o.seed = seed;
	o.lr = 0.05;
	e = hp_engine_new(s, &o, &err);
	if (!e)
		HP_FAIL("engine: %s", err.msg);
	return e;
}

static void batch_of(int64_t n, int64_t first, float *x, int32_t *y)
{
	/* sample i of a fixed global batch, whatever the split */
	for (int64_t i = 0; i < n; i++) {
		uint64_t st = (uint64_t)(first + i) * 2654435761u + 1;
		for (int j = 0; j < 108; j++) {
			st = st * 6364136223846793005ull +
			     1442695040888963407ull;
			x[i * 108 + j] =
			    (float)((double)(st >> 11) * 0x1.0p-53 * 2 - 1);
		}
		y[i] = (int32_t)((first + i) % 5);
	}
}

HP_TEST(train_engine_flat_grads)
{
	struct hp_spec s;
	struct hp_engine *e = eng(conv_net, 4, HP_OPT_SGD, 3, &s);
	struct hp_error err = {0};
	int64_t n = hp_engine_param_elems(e), o = 0;
	float *flat = malloc((size_t)n * sizeof(float)), *g, *back;
	float x[4 * 108];
	int32_t y[4];

	batch_of(4, 0, x, y);
	ASSERT(hp_engine_set_input(e, x, y, &err) == 0);
	ASSERT(hp_engine_forward(e, NULL, &err) == 0);
	ASSERT(hp_engine_backward(e, &err) == 0);
	ASSERT(hp_engine_grads_get(e, flat, &err) == 0);
	for (int i = 0; i < hp_engine_param_count(e); i++) {
		struct hp_engine_param pi;
		hp_engine_param_info(e, i, &pi);
		g = malloc((size_t)pi.numel * sizeof(float));
		ASSERT(hp_engine_grad_get(e, i, g, &err) == 0);
		ASSERT(!memcmp(g, flat + o, (size_t)pi.numel * sizeof(float)));
		o += pi.numel;
		free(g);
	}
	ASSERT_EQ_INT(o, n);
	/* set then get: the same bits, through the engine's layouts */
	for (int64_t i = 0; i < n; i++)
		flat[i] = (float)i * 0.25f - 3;
	ASSERT(hp_engine_grads_set(e, flat, &err) == 0);
	back = malloc((size_t)n * sizeof(float));
	ASSERT(hp_engine_grads_get(e, back, &err) == 0);
	ASSERT(!memcmp(back, flat, (size_t)n * sizeof(float)));
	{
		void *p, *st;
		int64_t nf;
		ASSERT(hp_engine_grads_device(e, &p, &nf, &st) == HP_EUNSUPP);
	}
	free(back);
	free(flat);
	hp_engine_free(e);
	hp_spec_release(&s);
}

/*
 * The trainer's core identity: ranks at batches 6 and 2 whose gradients
 * are summed with weights 6/8 and 2/8 get the gradient of one engine on
 * the whole batch of 8 (a net without batch norm or dropout).
 */
HP_TEST(train_engine_weighted_split)
{
	struct hp_spec s1, s2, s3;
	struct hp_engine *a = eng(plain_net, 8, HP_OPT_SGD, 5, &s1);
	struct hp_engine *b = eng(plain_net, 6, HP_OPT_SGD, 5, &s2);
	struct hp_engine *c = eng(plain_net, 2, HP_OPT_SGD, 5, &s3);
	struct hp_error err = {0};
	int64_t n = hp_engine_param_elems(a);
	float *ga = malloc((size_t)n * 4), *gb = malloc((size_t)n * 4),
	      *gc = malloc((size_t)n * 4);
	float x[8 * 108];
	int32_t y[8];
	double la, lb, lc, worst = 0;

	batch_of(8, 0, x, y);
	ASSERT(hp_engine_set_input(a, x, y, &err) == 0);
	ASSERT(hp_engine_set_input(b, x, y, &err) == 0);
	ASSERT(hp_engine_set_input(c, x + 6 * 108, y + 6, &err) == 0);
	ASSERT(hp_engine_forward(a, &la, &err) == 0);
	ASSERT(hp_engine_forward(b, &lb, &err) == 0);
	ASSERT(hp_engine_forward(c, &lc, &err) == 0);
	ASSERT_NEAR(la, (6 * lb + 2 * lc) / 8, 1e-6);
	ASSERT(hp_engine_backward(a, &err) == 0 &&
	       hp_engine_backward(b, &err) == 0 &&
	       hp_engine_backward(c, &err) == 0);
	ASSERT(hp_engine_grads_get(a, ga, &err) == 0 &&
	       hp_engine_grads_get(b, gb, &err) == 0 &&
	       hp_engine_grads_get(c, gc, &err) == 0);
	for (int64_t i = 0; i < n; i++) {
		double want = ga[i], got = 0.75 * gb[i] + 0.25 * gc[i];
		double d =
		    fabs(got - want) / (fabs(want) > 1e-3 ? fabs(want) : 1e-3);
		worst = d > worst ? d : worst;
	}
	ASSERT(worst < 1e-4);
	free(ga);
	free(gb);
	free(gc);
	hp_engine_free(a);
	hp_engine_free(b);
	hp_engine_free(c);
	hp_spec_release(&s1);
	hp_spec_release(&s2);
	hp_spec_release(&s3);
}

/* Every state tensor of e, concatenated. */
static float *state_of(struct hp_engine *e, int64_t *total)
{
	struct hp_error err = {0};
	int64_t n = 0, o = 0;
	float *v;

	for (int k = 0; k < hp_engine_state_count(e); k++) {
		struct hp_engine_state_info si;
		hp_engine_state_info(e, k, &si);
		n += si.numel;
	}
	v = malloc((size_t)n * sizeof(float));
	for (int k = 0; k < hp_engine_state_count(e); k++) {
		struct hp_engine_state_info si;
		hp_engine_state_info(e, k, &si);
		ASSERT(hp_engine_state_get(e, k, v + o, &err) == 0);
		o += si.numel;
	}
	*total = n;
	return v;
}

static void state_to(struct hp_engine *e, const float *v)
{
	struct hp_error err = {0};
	int64_t o = 0;

	for (int k = 0; k < hp_engine_state_count(e); k++) {
		struct hp_engine_state_info si;
		hp_engine_state_info(e, k, &si);
		ASSERT(hp_engine_state_set(e, k, v + o, &err) == 0);
		o += si.numel;
	}
}

/*
 * A run moved to another engine (after 3 steps of Adam on a net with
 * batch norm and dropout) continues bit for bit; the state also survives
 * an engine at another batch (where layouts may differ).
 */
HP_TEST(train_engine_state_moves)
{
	struct hp_spec s1, s2, s3;
	struct hp_engine *a = eng(conv_net, 8, HP_OPT_ADAM, 1, &s1);
	struct hp_engine *b = eng(conv_net, 8, HP_OPT_ADAM, 1, &s2);
	struct hp_engine *c = eng(conv_net, 3, HP_OPT_ADAM, 7, &s3);
	struct hp_error err = {0};
	struct hp_engine_counters cn, cb;
	float x[8 * 108], *st, *sa, *sb, *sc;
	int32_t y[8];
	int64_t n, n2;
	double la, lb;
	bool names = true;

	/* names: parameters, Adam's two moments each, bn running stats */
	ASSERT_EQ_INT(hp_engine_state_count(a),
		      3 * hp_engine_param_count(a) + 2);
	for (int k = 0; k < hp_engine_state_count(a); k++) {
		struct hp_engine_state_info si;
		hp_engine_state_info(a, k, &si);
		if (k == hp_engine_param_count(a))
			names =
			    names && !strcmp(si.name, "conv0.weight.exp_avg");
		if (k == hp_engine_state_count(a) - 1)
			names = names && !strcmp(si.name, "bn1.running_var");
	}
	ASSERT(names);
	for (int s = 0; s < 3; s++) {
		batch_of(8, 8 * s, x, y);
		ASSERT(hp_engine_set_input(a, x, y, &err) == 0);
		ASSERT(hp_engine_step(a, NULL, &err) == 0);
	}
	/* b (same seed: dropout's stream is the seed's) wanders elsewhere */
	for (int s = 0; s < 5; s++) {
		batch_of(8, 1000 + 8 * s, x, y);
		ASSERT(hp_engine_set_input(b, x, y, &err) == 0);
		ASSERT(hp_engine_step(b, NULL, &err) == 0);
	}
	st = state_of(a, &n);
	hp_engine_counters_get(a, &cn);
	ASSERT_EQ_INT(cn.updates, 3);
	ASSERT_EQ_INT(cn.forwards, 3);
	state_to(b, st);
	ASSERT(hp_engine_counters_set(b, &cn) == 0);
	hp_engine_counters_get(b, &cb);
	ASSERT_EQ_INT(cb.forwards, 3);
	batch_of(8, 24, x, y);
	ASSERT(hp_engine_set_input(a, x, y, &err) == 0);
	ASSERT(hp_engine_set_input(b, x, y, &err) == 0);
	ASSERT(hp_engine_step(a, &la, &err) == 0);
	ASSERT(hp_engine_step(b, &lb, &err) == 0);
	ASSERT(la == lb);
	sa = state_of(a, &n);
	sb = state_of(b, &n);
	ASSERT(!memcmp(sa, sb, (size_t)n * sizeof(float)));
	/* a batch of 3: state in, the same state out */
	state_to(c, st);
	sc = state_of(c, &n2);
	ASSERT_EQ_INT(n2, n);
	ASSERT(!memcmp(sc, st, (size_t)n * sizeof(float)));
	free(st);
	free(sa);
	free(sb);
	free(sc);
	hp_engine_free(a);
	hp_engine_free(b);
	hp_engine_free(c);
	hp_spec_release(&s1);
	hp_spec_release(&s2);
	hp_spec_release(&s3);
}

/*
 * Inference: batch norm normalizes with the running statistics and
 * dropout passes everything, checked against a direct computation of
 * bn -> fc in double; it leaves the counters alone and a backward after
 * it is refused.
 */
HP_TEST(train_engine_infer)
{
	const char *js = "{\"input\":[2,2,2],\"classes\":3,\"layers\":["
			 "{\"type\":\"bn\"},{\"type\":\"dropout\",\"p\":0.5},"
			 "{\"type\":\"fc\",\"units\":3}]}";
	struct hp_spec s;
	struct hp_engine *e = eng(js, 2, HP_OPT_SGD, 4, &s);
	struct hp_error err = {0};
	struct hp_engine_counters cn;
	float x[16], out[6], out2[6], gamma[2] = {1.5f, 0.5f},
				      beta[2] = {0.1f, -0.2f};
	float rm[2] = {0.3f, -0.1f}, rv[2] = {2.0f, 0.5f}, w[3 * 8], b[3];
	int32_t y[2] = {0, 2};
	double loss;

	for (int i = 0; i < 16; i++)
		x[i] = (float)(i % 5) * 0.4f - 0.7f;
	ASSERT(hp_engine_param_set(e, 0, gamma, &err) == 0);
	ASSERT(hp_engine_param_set(e, 1, beta, &err) == 0);
	ASSERT(hp_engine_param_get(e, 2, w, &err) == 0);
	ASSERT(hp_engine_param_get(e, 3, b, &err) == 0);
	/* state tensors: 4 parameters, 4 momenta, then mean and var */
	ASSERT(hp_engine_state_set(e, 8, rm, &err) == 0);
	ASSERT(hp_engine_state_set(e, 9, rv, &err) == 0);
	ASSERT(hp_engine_set_input(e, x, y, &err) == 0);
	ASSERT(hp_engine_infer(e, &loss, &err) == 0);
	ASSERT(hp_engine_output_get(e, out, &err) == 0);
	for (int n = 0; n < 2; n++) {
		double h[8], ls = 0, mx = -1e300, z[3];
		for (int c = 0; c < 2; c++)
			for (int p = 0; p < 4; p++)
				h[c * 4 + p] = (x[n * 8 + c * 4 + p] - rm[c]) /
						   sqrt(rv[c] + 1e-5) *
						   gamma[c] +
					       beta[c];
		for (int u = 0; u < 3; u++) {
			z[u] = b[u];
			for (int i = 0; i < 8; i++)
				z[u] += w[u * 8 + i] * h[i];
			ASSERT_NEAR(out[n * 3 + u], z[u], 1e-5);
			mx = z[u] > mx ? z[u] : mx;
		}
		for (int u = 0; u < 3; u++)
			ls += exp(z[u] - mx);
		(void)ls;
	}
	ASSERT(hp_engine_infer(e, NULL, &err) == 0);
	ASSERT(hp_engine_output_get(e, out2, &err) == 0);
	ASSERT(!memcmp(out, out2, sizeof(out)));
	hp_engine_counters_get(e, &cn);
	ASSERT_EQ_INT(cn.forwards, 0);
	ASSERT(hp_engine_backward(e, &err) == HP_EINVAL);
	/* the running statistics were not touched by inference */
	{
		float m2[2];
		ASSERT(hp_engine_state_get(e, 8, m2, &err) == 0);
		ASSERT(!memcmp(m2, rm, sizeof(rm)));
	}
	hp_engine_free(e);
	hp_spec_release(&s);
}

/*
 * Dropout's sample offset: engines at batches 3 and 1 (offset 3) draw the
 * masks an engine at batch 4 draws for the same samples, after a conv
 * (the engine's blocked layout) and after an fc.
 */
HP_TEST(train_engine_dropout_offset)
{
	struct hp_spec s1, s2, s3;
	struct hp_engine *a = eng(conv_net, 4, HP_OPT_SGD, 2, &s1);
	struct hp_engine *b = eng(conv_net, 3, HP_OPT_SGD, 2, &s2);
	struct hp_engine *c = eng(conv_net, 1, HP_OPT_SGD, 2, &s3);
	struct hp_error err = {0};
	float x[4 * 108];
	int32_t y[4];
	const int layers[2] = {3, 7};
	const int64_t per[2] = {8 * 6 * 6, 12};

	batch_of(4, 0, x, y);
	ASSERT(hp_engine_set_input(a, x, y, &err) == 0);
	ASSERT(hp_engine_set_input(b, x, y, &err) == 0);
	ASSERT(hp_engine_set_input(c, x + 3 * 108, y + 3, &err) == 0);
	hp_engine_set_sample_offset(c, 3);
	for (int s = 0; s < 2; s++) {
		ASSERT(hp_engine_forward(a, NULL, &err) == 0);
		ASSERT(hp_engine_forward(b, NULL, &err) == 0);
		ASSERT(hp_engine_forward(c, NULL, &err) == 0);
		for (int l = 0; l < 2; l++) {
			float *ma = malloc((size_t)(4 * per[l]) * 4);
			float *mb = malloc((size_t)(3 * per[l]) * 4);
			float *mc = malloc((size_t)per[l] * 4);
			int kept = 0;
			ASSERT(hp_engine_dropout_mask_get(a, layers[l], ma,
							  &err) == 0);
			ASSERT(hp_engine_dropout_mask_get(b, layers[l], mb,
							  &err) == 0);
			ASSERT(hp_engine_dropout_mask_get(c, layers[l], mc,
							  &err) == 0);
			ASSERT(!memcmp(ma, mb, (size_t)(3 * per[l]) * 4));
			ASSERT(
			    !memcmp(ma + 3 * per[l], mc, (size_t)per[l] * 4));
			for (int64_t i = 0; i < 4 * per[l]; i++)
				kept += ma[i] != 0;
			ASSERT(kept > 0 && kept < 4 * per[l]);
			free(ma);
			free(mb);
			free(mc);
		}
	}
	hp_engine_free(a);
	hp_engine_free(b);
	hp_engine_free(c);
	hp_spec_release(&s1);
	hp_spec_release(&s2);
	hp_spec_release(&s3);
}

#endif /* HP_HAVE_ENGINE */
