/*
 * test_util.c - lib/util: escaping names for a terminal (hp_str_escape),
 * against escapes written out by hand; cutting a message short without
 * leaving half a character (hp_str_cut_utf8); growing arrays (hp_grow).
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hetpool/util.h"
#include "test.h"

static const char *esc(const char *s)
{
	static char buf[256];
	return hp_str_escape(s, buf, sizeof(buf));
}

HP_TEST(util_escape_controls_and_c1)
{
	char small[6];

	ASSERT_STR_EQ(esc("plain name-1.onnx"), "plain name-1.onnx");
	ASSERT_STR_EQ(esc("a\nb\rc\td"), "a\\nb\\rc\\td");
	ASSERT_STR_EQ(esc("x\033[31my"), "x\\x1b[31my");
	ASSERT_STR_EQ(esc("del\177"), "del\\x7f");
	/* UTF-8 passes; C1 controls (U+009B, CSI) and broken bytes do not */
	ASSERT_STR_EQ(esc("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
		      "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
	ASSERT_STR_EQ(esc("a\xc2\x9b"
			  "2Jb"),
		      "a\\xc2\\x9b2Jb");
	ASSERT_STR_EQ(esc("\x9b"
			  "2J"),
		      "\\x9b2J");
	ASSERT_STR_EQ(esc("\xc3"), "\\xc3");	      /* cut sequence */
	ASSERT_STR_EQ(esc("\xc0\xaf"), "\\xc0\\xaf"); /* overlong */
	ASSERT_STR_EQ(esc("\xed\xa0\x80"), "\\xed\\xa0\\x80"); /* surrogate */
	ASSERT(!hp_str_has_control("caf\xc3\xa9"));
	ASSERT(hp_str_has_control("a\xc2\x85"));
	ASSERT(hp_str_has_control("a\n"));
	/* cut short, never in the middle of an escape, always terminated */
	ASSERT_STR_EQ(hp_str_escape("ab\ncd", small, sizeof(small)), "ab\\nc");
	ASSERT_STR_EQ(hp_str_escape("abcd\033", small, sizeof(small)), "abcd");
	ASSERT_STR_EQ(hp_str_escape(NULL, small, sizeof(small)), "");
}

/* s cut by hp_str_cut_utf8, in a copy */
static const char *cut(const char *s)
{
	static char buf[64];
	snprintf(buf, sizeof(buf), "%s", s);
	return hp_str_cut_utf8(buf);
}

HP_TEST(util_cut_utf8_drops_half_characters)
{
	/* whole sequences of 1 to 4 bytes stay */
	ASSERT_STR_EQ(cut("abc"), "abc");
	ASSERT_STR_EQ(cut("caf\xc3\xa9"), "caf\xc3\xa9");
	ASSERT_STR_EQ(cut("\xe2\x82\xac"), "\xe2\x82\xac");
	ASSERT_STR_EQ(cut("x\xf0\x9f\x98\x80"), "x\xf0\x9f\x98\x80");
	/* a sequence cut after its 1st, 2nd or 3rd byte goes */
	ASSERT_STR_EQ(cut("caf\xc3"), "caf");
	ASSERT_STR_EQ(cut("e\xe2"), "e");
	ASSERT_STR_EQ(cut("e\xe2\x82"), "e");
	ASSERT_STR_EQ(cut("x\xf0\x9f\x98"), "x");
	ASSERT_STR_EQ(cut("\xf0\x9f"), "");
	/* bytes that are no cut sequence are left to hp_str_escape */
	ASSERT_STR_EQ(cut("a\x80\x80\x80\x80"), "a\x80\x80\x80\x80");
	ASSERT_STR_EQ(cut(""), "");
	ASSERT(hp_str_cut_utf8(NULL) == NULL);
	/* snprintf cutting "\xc3\xa9" x 10 at every length: the result is
	 * always the longest run of whole characters */
	for (size_t n = 1; n <= 21; n++) {
		char buf[32];
		snprintf(
		    buf, n, "%s",
		    "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
		    "\xc3\xa9\xc3\xa9\xc3\xa9");
		hp_str_cut_utf8(buf);
		ASSERT_EQ_INT(strlen(buf), (n - 1) / 2 * 2);
		ASSERT(!hp_str_has_control(buf));
	}
}

HP_TEST(util_grow_doubles_and_keeps_elements)
{
	int64_t *a = NULL;
	int cap = 0, n;

	/* 1000 appends: every element kept, capacity 4, 8, ... 1024 */
	for (n = 0; n < 1000; n++) {
		ASSERT(hp_grow(&a, &cap, n, sizeof(*a), 4) == 0);
		ASSERT(cap > n);
		a[n] = (int64_t)n * 7;
	}
	ASSERT(cap == 1024);
	for (int i = 0; i < n; i++)
		ASSERT(a[i] == (int64_t)i * 7);
	/* room left: nothing moves */
	int64_t *before = a;
	ASSERT(hp_grow(&a, &cap, 1000, sizeof(*a), 4) == 0);
	ASSERT(a == before && cap == 1024);
	/* a capacity that cannot double is refused, the array kept */
	int huge = INT_MAX / 2 + 1;
	ASSERT(hp_grow(&a, &huge, huge, sizeof(*a), 4) == HP_ENOMEM);
	ASSERT(a == before && huge == INT_MAX / 2 + 1);
	free(a);
}

HP_TEST(util_utc_iso8601)
{
	/* against date -u -d @T; a buffer too small for it gets "" */
	char b[32], small[8];

	hp_utc_iso8601(0, b, sizeof(b));
	ASSERT_STR_EQ(b, "1970-01-01T00:00:00Z");
	hp_utc_iso8601(1796198400, b, sizeof(b));
	ASSERT_STR_EQ(b, "2026-12-02T08:00:00Z");
	hp_utc_iso8601(1796198400, small, sizeof(small));
	ASSERT_STR_EQ(small, "");
}
