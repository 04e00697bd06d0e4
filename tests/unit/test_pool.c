/*
 * test_pool.c - the pool file parser: bad input refused with HP_EPARSE and
 * a message naming the file, the node and the key; every number within
 * its range (both edges accepted, just past them refused); node names and
 * device types with control characters refused without echoing them;
 * aliases resolved, "free" defaulting to "count", unknown keys ignored;
 * "net_transport" absent (auto), each name, a bad one refused, and auto
 * resolved by the node's devices; the shipped sample pool loads.
 */
#include <stdio.h>
#include <string.h>

#include "hetpool/device.h"
#include "hetpool/pool.h"
#include "test.h"

static struct hp_catalog *shipped(void)
{
	struct hp_error err = {0};
	struct hp_catalog *cat =
	    hp_catalog_load(hp_test_path("data/devices.csv"), &err);

	if (!cat)
		HP_FAIL("devices.csv: %s", err.msg);
	return cat;
}

static struct hp_pool *parse(const char *text, const struct hp_catalog *cat,
			     struct hp_error *err)
{
	return hp_pool_parse(text, strlen(text), "t.json", cat, err);
}

/* One node whose number keys are all valid but the one named, which gets
 * the JSON text val (NULL: the key is left out). */
static const char *const keys[] = {"cpu_cores",	     "memory_gb",
				   "intra_bw_gbps",  "net_bw_gbps",
				   "net_latency_us", "base_power_w"};
static const char *const good[] = {"8", "64", "100", "25", "5", "200"};

static void node_text(char *buf, size_t n, const char *key, const char *val)
{
	size_t off = (size_t)snprintf(
	    buf, n,
	    "{\"nodes\": [{\"name\": \"n3\", \"devices\": [{\"type\": "
	    "\"v100\", \"count\": 2}]");
	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		bool this = !strcmp(keys[k], key);
		if (this && !val)
			continue;
		off += (size_t)snprintf(buf + off, n - off, ", \"%s\": %s",
					keys[k], this ? val : good[k]);
	}
	snprintf(buf + off, n - off, "}]}");
}

#define NODE(name, dev, extra)                                                 \
	"{\"name\": \"" name "\", \"devices\": [" dev "], \"cpu_cores\": 8, "  \
	"\"memory_gb\": 64, \"intra_bw_gbps\": 100, \"net_bw_gbps\": 25, "     \
	"\"net_latency_us\": 5, \"base_power_w\": 200" extra "}"

HP_TEST(pool_parse_refuses_bad_input_by_name)
{
	struct {
		const char *text, *msg;
	} bad[] = {
	    {"{\"nodes\": [" NODE(
		 "gpu-07", "{\"type\": \"v100\", \"count\": 2}",
		 "") "," NODE("gpu-07", "{\"type\": \"t4\", \"count\": 1}",
			      "") "]}",
	     "pool 't.json': node 'gpu-07': duplicate name"},
	    {"{\"nodes\": [" NODE("a", "{\"type\": \"tpu9\", \"count\": 2}",
				  "") "]}",
	     "pool 't.json': node 'a': device type 'tpu9' is not in the "
	     "catalog"},
	    {"{\"nodes\": [" NODE("a", "{\"type\": \"v100\", \"count\": -2}",
				  "") "]}",
	     "pool 't.json': node 'a': devices[0]: 'count' = -2 is out of "
	     "range [1, 4096]"},
	    {"{\"nodes\": [" NODE("a", "{\"type\": \"v100\", \"count\": 5000}",
				  "") "]}",
	     "node 'a': devices[0]: 'count' = 5000 is out of range [1, 4096]"},
	    {"{\"nodes\": [" NODE("a", "{\"type\": \"v100\", \"count\": 2.5}",
				  "") "]}",
	     "node 'a': devices[0]: 'count' must be a whole number"},
	    {"{\"nodes\": [" NODE(
		 "a", "{\"type\": \"v100\", \"count\": 2, \"free\": -1}",
		 "") "]}",
	     "node 'a': devices[0]: 'free' = -1 is out of range [0, 4096]"},
	    {"{\"nodes\": [" NODE(
		 "a", "{\"type\": \"v100\", \"count\": 2, \"free\": 3}",
		 "") "]}",
	     "node 'a': devices[0]: 'free' 3 is more than 'count' 2"},
	    {"{\"nodes\": [" NODE(
		 "a",
		 "{\"type\": \"v100\", \"count\": 2}, {\"type\": \"V100\", "
		 "\"count\": 1}",
		 "") "]}",
	     "node 'a': device type 'v100' listed twice"},
	    {"{\"nodes\": [" NODE("a", "{\"count\": 2}", "") "]}",
	     "node 'a': devices[0]: missing 'type'"},
	    {"{\"nodes\": [" NODE("a", "{\"type\": \"\", \"count\": 2}",
				  "") "]}",
	     "node 'a': devices[0]: 'type' must be a non-empty string"},
	    {"{\"nodes\": [" NODE("a", "7", "") "]}",
	     "node 'a': devices[0]: must be an object"},
	    {"{\"nodes\": [{\"name\": \"a\", \"devices\": {}}]}",
	     "node 'a': 'devices' must be an array"},
	    {"{\"nodes\": [{\"name\": \"c\", \"devices\": []}]}",
	     "pool 't.json': node 'c': missing 'cpu_cores'"},
	    {"{\"nodes\": [{\"name\": \"b\", \"devices\": [], \"cpu_cores\": "
	     "8, \"memory_gb\": 64, \"intra_bw_gbps\": 100, \"net_bw_gbps\": "
	     "\"fast\", \"net_latency_us\": 5, \"base_power_w\": 200}]}",
	     "pool 't.json': node 'b': 'net_bw_gbps' must be a number"},
	    {"{\"nodes\": [" NODE("a", "", "") ", {\"devices\": []}]}",
	     "pool 't.json': nodes[1]: missing 'name'"},
	    {"{\"nodes\": [{\"name\": 7}]}",
	     "pool 't.json': nodes[0]: 'name' must be a string of 1 to 63"},
	    {"{\"nodes\": [{\"name\": \"\"}]}",
	     "nodes[0]: 'name' must be a string of 1 to 63"},
	    {"{\"nodes\": [{\"name\": \"0123456789012345678901234567890123456"
	     "789012345678901234567890123\"}]}",
	     "nodes[0]: 'name' must be a string of 1 to 63"},
	    {"{\"nodes\": [3]}", "pool 't.json': nodes[0]: must be an object"},
	    {"{\"nodes\": []}", "pool 't.json': 0 nodes; give 1 to 100000"},
	    {"{\"nodes\": 3}", "pool 't.json': 'nodes' must be an array"},
	    {"{}", "pool 't.json': missing 'nodes'"},
	    {"[1, 2]", "pool 't.json': the top level must be an object"},
	    {"{\"nodes\": [", "pool 't.json': invalid JSON at line 1"},
	    {"{\"nodes\": [], \"nodes\": []}", "pool 't.json': invalid JSON"},
	};
	struct hp_catalog *cat = shipped();
	struct hp_error err = {0};
	struct hp_pool *p;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		p = parse(bad[i].text, cat, &err);
		if (p || !strstr(err.msg, bad[i].msg))
			HP_FAIL("case %zu: got '%s', expected '%s'", i,
				p ? "(parsed)" : err.msg, bad[i].msg);
		ASSERT_EQ_INT(err.code, HP_EPARSE);
	}
	hp_catalog_free(cat);
}

/* Each number key: its two edges parse, just past each edge is refused
 * with the node, the key, the value and the range; a missing key and a
 * string are refused by name. */
HP_TEST(pool_parse_refuses_numbers_out_of_range)
{
	static const struct {
		const char *key, *lo, *hi, *below, *above, *range;
	} r[] = {
	    {"cpu_cores", "1", "65536", "0", "65537", "[1, 65536]"},
	    {"memory_gb", "0.001", "65536", "0", "65537", "[0.001, 65536]"},
	    {"intra_bw_gbps", "0.001", "100000", "0.0009", "100001",
	     "[0.001, 100000]"},
	    {"net_bw_gbps", "0.001", "10000", "-1", "1e7", "[0.001, 10000]"},
	    {"net_latency_us", "0", "100000", "-0.5", "1e6", "[0, 100000]"},
	    {"base_power_w", "0", "100000", "-1", "1e9", "[0, 100000]"},
	};
	struct hp_catalog *cat = shipped();
	struct hp_error err = {0};
	struct hp_pool *p;
	char text[1024], want[160];

	for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++) {
		const char *edge[2] = {r[i].lo, r[i].hi};
		const char *past[2] = {r[i].below, r[i].above};
		for (int e = 0; e < 2; e++) {
			node_text(text, sizeof(text), r[i].key, edge[e]);
			p = parse(text, cat, &err);
			if (!p)
				HP_FAIL("%s = %s refused: %s", r[i].key,
					edge[e], err.msg);
			hp_pool_free(p);
		}
		for (int e = 0; e < 2; e++) {
			double v = strtod(past[e], NULL);
			node_text(text, sizeof(text), r[i].key, past[e]);
			p = parse(text, cat, &err);
			if (!strcmp(r[i].key, "cpu_cores"))
				snprintf(want, sizeof(want),
					 "pool 't.json': node 'n3': '%s' = "
					 "%.0f is out of range %s",
					 r[i].key, v, r[i].range);
			else
				snprintf(want, sizeof(want),
					 "pool 't.json': node 'n3': '%s' = %g "
					 "is out of range %s",
					 r[i].key, v, r[i].range);
			if (p || !strstr(err.msg, want))
				HP_FAIL("%s = %s: got '%s', expected '%s'",
					r[i].key, past[e],
					p ? "(parsed)" : err.msg, want);
			ASSERT_EQ_INT(err.code, HP_EPARSE);
		}
		node_text(text, sizeof(text), r[i].key, NULL);
		p = parse(text, cat, &err);
		snprintf(want, sizeof(want), "node 'n3': missing '%s'",
			 r[i].key);
		if (p || !strstr(err.msg, want))
			HP_FAIL("no %s: got '%s'", r[i].key,
				p ? "(parsed)" : err.msg);
		node_text(text, sizeof(text), r[i].key, "\"1\"");
		p = parse(text, cat, &err);
		snprintf(want, sizeof(want), "node 'n3': '%s' must be a",
			 r[i].key);
		if (p || !strstr(err.msg, want))
			HP_FAIL("%s a string: got '%s'", r[i].key,
				p ? "(parsed)" : err.msg);
	}
	hp_catalog_free(cat);
}

/* A name is an identifier: a line break, an escape byte, a tab or DEL in
 * a node name or a device type is refused, and the message does not carry
 * the character. */
HP_TEST(pool_parse_refuses_control_characters_in_names)
{
	static const struct {
		const char *name, *type, *msg;
	} bad[] = {
	    {"n\\n3", "v100", "nodes[0]: 'name' holds a control character"},
	    {"\\u001b[31mred", "v100",
	     "nodes[0]: 'name' holds a control character"},
	    {"tab\\there", "v100", "nodes[0]: 'name' holds a control"},
	    {"del\\u007f", "v100", "nodes[0]: 'name' holds a control"},
	    {"ok", "v100\\u001b[2J",
	     "node 'ok': devices[0]: 'type' holds a control character"},
	};
	struct hp_catalog *cat = shipped();
	struct hp_error err = {0};
	struct hp_pool *p;
	char text[512];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		for (int with_cat = 0; with_cat < 2; with_cat++) {
			snprintf(text, sizeof(text),
				 "{\"nodes\": [{\"name\": \"%s\", "
				 "\"devices\": [{\"type\": \"%s\", "
				 "\"count\": 1}], \"cpu_cores\": 8, "
				 "\"memory_gb\": 64, \"intra_bw_gbps\": 100, "
				 "\"net_bw_gbps\": 25, \"net_latency_us\": 5, "
				 "\"base_power_w\": 200}]}",
				 bad[i].name, bad[i].type);
			p = parse(text, with_cat ? cat : NULL, &err);
			if (p || !strstr(err.msg, bad[i].msg))
				HP_FAIL("case %zu: got '%s', expected '%s'", i,
					p ? "(parsed)" : err.msg, bad[i].msg);
			ASSERT_EQ_INT(err.code, HP_EPARSE);
			ASSERT(!hp_str_has_control(err.msg));
		}
	/* Other text is a name: spaces, punctuation, UTF-8. */
	p = parse("{\"nodes\": [" NODE("rack 4/gpu-07 \\u00e9",
				       "{\"type\": \"v100\", \"count\": 1}",
				       "") "]}",
		  cat, &err);
	if (!p)
		HP_FAIL("%s", err.msg);
	ASSERT_STR_EQ(p->nodes[0].name, "rack 4/gpu-07 \xc3\xa9");
	hp_pool_free(p);
	hp_catalog_free(cat);
}

/* The file in messages: its path, "pool" alone for text without one, the
 * tail of a long path; an unreadable file is named. */
HP_TEST(pool_messages_name_the_file)
{
	static const char text[] = "{\"nodes\": []}";
	char path[200];
	struct hp_error err = {0};

	ASSERT(!hp_pool_parse(text, strlen(text), NULL, NULL, &err));
	ASSERT_STR_EQ(err.msg, "pool: 0 nodes; give 1 to 100000");
	ASSERT(!hp_pool_parse(text, strlen(text), "", NULL, &err));
	ASSERT_STR_EQ(err.msg, "pool: 0 nodes; give 1 to 100000");
	memset(path, 'd', sizeof(path));
	snprintf(path + 150, sizeof(path) - 150, "/my-pool.json");
	ASSERT(!hp_pool_parse(text, strlen(text), path, NULL, &err));
	ASSERT(!strncmp(err.msg, "pool '...dddd", 13));
	ASSERT(strstr(err.msg, "/my-pool.json': 0 nodes"));
	ASSERT(!hp_pool_load("/nonexistent/p.json", NULL, &err));
	ASSERT_EQ_INT(err.code, HP_ENOENT);
	ASSERT(!strncmp(err.msg, "pool '/nonexistent/p.json'", 26));
}

/* Aliases resolve, free defaults to count, unknown keys are fine, the
 * figures are kept; the sample pool loads. */
HP_TEST(pool_parse_reads_the_format)
{
	struct hp_catalog *cat = shipped();
	struct hp_error err = {0};
	struct hp_pool *p;

	p = parse("{\"nodes\": [" NODE(
		      "a",
		      "{\"type\": \"Tesla V100\", \"count\": 2}, {\"type\": "
		      "\"t4\", \"count\": 4, \"free\": 1}",
		      ", \"rack\": \"r1\"") "]}",
		  cat, &err);
	if (!p)
		HP_FAIL("%s", err.msg);
	ASSERT_EQ_INT(p->n, 1);
	ASSERT_STR_EQ(p->path, "t.json");
	ASSERT_STR_EQ(p->nodes[0].devs[0].type, "v100");
	ASSERT_EQ_INT(p->nodes[0].devs[0].free, 2);
	ASSERT_EQ_INT(p->nodes[0].devs[1].free, 1);
	ASSERT_EQ_INT(hp_pool_free_of(p, "v100"), 2);
	ASSERT_EQ_INT(hp_pool_free_of(p, "t4"), 1);
	ASSERT_EQ_INT(hp_pool_free_of(p, "a10"), 0);
	ASSERT_EQ_INT(p->nodes[0].cpu_cores, 8);
	ASSERT_NEAR(p->nodes[0].net_bw_gbps, 25, 0);
	ASSERT_NEAR(p->nodes[0].base_power_w, 200, 0);
	hp_pool_free(p);
	/* Without a catalog, types are kept as written. */
	p = parse("{\"nodes\": [" NODE(
		      "a", "{\"type\": \"Tesla V100\", \"count\": 2}", "") "]}",
		  NULL, &err);
	ASSERT(p);
	ASSERT_STR_EQ(p->nodes[0].devs[0].type, "Tesla V100");
	hp_pool_free(p);
	p = hp_pool_load(hp_test_path("data/pools/sample.json"), cat, &err);
	if (!p)
		HP_FAIL("%s", err.msg);
	ASSERT_EQ_INT(p->n, 34);
	hp_pool_free(p);
	hp_pool_free(NULL);
	hp_catalog_free(cat);
}

/* "net_transport": absent is auto; each name is read and named back; an
 * unknown name or a value that is not a string is refused by the key. */
/* A pool of node n3 (2 V100s) whose "net_transport" is the JSON value v,
 * into buf. */
static const char *with_transport(char *buf, size_t n, const char *v)
{
	snprintf(buf, n,
		 "{\"nodes\": [" NODE("n3",
				      "{\"type\": \"v100\", \"count\": 2}",
				      ", \"net_transport\": %s") "]}",
		 v);
	return buf;
}

HP_TEST(pool_parse_reads_net_transport)
{
	static const char *const names[] = {"auto", "tcp", "socket", "rdma"};
	static const struct {
		const char *value, *shown;
	} bad[] = {{"\"ib\"", "ib"},	       {"\"\"", ""},
		   {"\"TCP\"", "TCP"},	       {"\"tcp \"", "tcp "},
		   {"1", "(not a string)"},    {"null", "(not a string)"},
		   {"true", "(not a string)"}, {"[\"tcp\"]", "(not a string)"},
		   {"{}", "(not a string)"}};
	char want[160];
	struct hp_catalog *cat = shipped();
	struct hp_error err = {0};
	struct hp_pool *p;
	char text[512], value[32];

	p = parse("{\"nodes\": [" NODE(
		      "a", "{\"type\": \"v100\", \"count\": 2}", "") "]}",
		  cat, &err);
	if (!p)
		HP_FAIL("%s", err.msg);
	ASSERT_EQ_INT(p->nodes[0].net_transport, HP_NET_AUTO);
	hp_pool_free(p);
	for (int t = HP_NET_AUTO; t <= HP_NET_RDMA; t++) {
		enum hp_net_transport back = HP_NET_AUTO;

		ASSERT_STR_EQ(hp_net_transport_name((enum hp_net_transport)t),
			      names[t]);
		ASSERT_EQ_INT(hp_net_transport_parse(names[t], &back), 0);
		ASSERT_EQ_INT(back, t);
		snprintf(value, sizeof(value), "\"%s\"", names[t]);
		p = parse(with_transport(text, sizeof(text), value), cat, &err);
		if (!p)
			HP_FAIL("%s: %s", names[t], err.msg);
		ASSERT_EQ_INT(p->nodes[0].net_transport, t);
		hp_pool_free(p);
	}
	ASSERT_STR_EQ(hp_net_transport_name((enum hp_net_transport)99), "?");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		p = parse(with_transport(text, sizeof(text), bad[i].value), cat,
			  &err);
		if (p)
			HP_FAIL("net_transport %s: parsed", bad[i].value);
		ASSERT_EQ_INT(err.code, HP_EPARSE);
		snprintf(want, sizeof(want),
			 "pool 't.json': node 'n3': 'net_transport' = '%s' is "
			 "not \"auto\", \"tcp\", \"socket\" or \"rdma\"",
			 bad[i].shown);
		ASSERT_STR_EQ(err.msg, want);
	}
	{
		enum hp_net_transport back = HP_NET_RDMA;
		ASSERT_EQ_INT(hp_net_transport_parse("ib", &back), HP_EINVAL);
		ASSERT_EQ_INT(back, HP_NET_RDMA); /* left alone */
	}
	hp_catalog_free(cat);
}

/* hp_pool_node_transport(): auto is socket when a device is not a CPU,
 * tcp for a CPU-only node; a value the node gives is kept. */
HP_TEST(pool_node_transport_resolves_auto)
{
	static const struct {
		const char *devs, *transport; /* transport NULL: absent */
		enum hp_net_transport want;
	} cases[] = {
	    {"{\"type\": \"v100\", \"count\": 2}", NULL, HP_NET_SOCKET},
	    {"{\"type\": \"cpu\", \"count\": 1}", NULL, HP_NET_TCP},
	    {"{\"type\": \"cpu\", \"count\": 1}, {\"type\": \"t4\", "
	     "\"count\": 4}",
	     NULL, HP_NET_SOCKET},
	    {"{\"type\": \"cpu\", \"count\": 1}", "auto", HP_NET_TCP},
	    {"{\"type\": \"v100\", \"count\": 2}", "auto", HP_NET_SOCKET},
	    {"{\"type\": \"v100\", \"count\": 2}", "tcp", HP_NET_TCP},
	    {"{\"type\": \"v100\", \"count\": 2}", "rdma", HP_NET_RDMA},
	    {"{\"type\": \"cpu\", \"count\": 1}", "socket", HP_NET_SOCKET},
	    {"{\"type\": \"cpu\", \"count\": 1}", "rdma", HP_NET_RDMA},
	};
	struct hp_catalog *cat = shipped();
	struct hp_error err = {0};
	char text[512], extra[64];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct hp_pool *p;

		extra[0] = 0;
		if (cases[i].transport)
			snprintf(extra, sizeof(extra),
				 ", \"net_transport\": \"%s\"",
				 cases[i].transport);
		snprintf(text, sizeof(text),
			 "{\"nodes\": [{\"name\": \"a\", \"devices\": [%s], "
			 "\"cpu_cores\": 8, \"memory_gb\": 64, "
			 "\"intra_bw_gbps\": 100, \"net_bw_gbps\": 25, "
			 "\"net_latency_us\": 5, \"base_power_w\": 200%s}]}",
			 cases[i].devs, extra);
		p = parse(text, cat, &err);
		if (!p)
			HP_FAIL("case %zu: %s", i, err.msg);
		if (hp_pool_node_transport(&p->nodes[0], cat) != cases[i].want)
			HP_FAIL("case %zu: %s, expected %s", i,
				hp_net_transport_name(
				    hp_pool_node_transport(&p->nodes[0], cat)),
				hp_net_transport_name(cases[i].want));
		/* The node's own field is what it said. */
		ASSERT_EQ_INT(p->nodes[0].net_transport,
			      cases[i].transport &&
				      strcmp(cases[i].transport, "auto")
				  ? cases[i].want
				  : HP_NET_AUTO);
		hp_pool_free(p);
	}
	/* Without a catalog a type named "cpu" or "cpu-..." is a CPU. */
	{
		struct hp_pool_dev cpu[2] = {{"cpu", 1, 1}, {"cpu-xeon", 2, 2}};
		struct hp_pool_dev gpu[2] = {{"cpu", 1, 1}, {"v100", 2, 2}};
		struct hp_pool_node nd = {.name = "x", .devs = cpu, .ndevs = 2};

		ASSERT_EQ_INT(hp_pool_node_transport(&nd, NULL), HP_NET_TCP);
		nd.devs = gpu;
		ASSERT_EQ_INT(hp_pool_node_transport(&nd, NULL), HP_NET_SOCKET);
		nd.net_transport = HP_NET_TCP;
		ASSERT_EQ_INT(hp_pool_node_transport(&nd, NULL), HP_NET_TCP);
	}
	hp_catalog_free(cat);
}
