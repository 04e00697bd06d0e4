/*
 * job.c - the job side of a recommendation: deadlines as durations
 * ("1h30m"), the learning-rate rules and their names.
 */
#include <ctype.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hetpool/recommend.h"
#include "util/banned.h"

const char *hp_lr_rule_name(enum hp_lr_rule r)
{
	switch (r) {
	case HP_LR_LINEAR:
		return "linear";
	case HP_LR_SQRT:
		return "sqrt";
	case HP_LR_NONE:
		return "none";
	}
	return "?";
}

int hp_lr_rule_parse(const char *s, enum hp_lr_rule *out)
{
	for (int r = HP_LR_LINEAR; r <= HP_LR_NONE; r++)
		if (s && !strcmp(s, hp_lr_rule_name((enum hp_lr_rule)r))) {
			*out = (enum hp_lr_rule)r;
			return 0;
		}
	return HP_EINVAL;
}

#define MAX_DURATION_S (10 * 365.0 * 86400)

int hp_parse_duration(const char *s, double *seconds, struct hp_error *err)
{
	static const char units[] = "dhms";
	static const double mult[] = {86400, 3600, 60, 1};
	const char *p = s;
	double total = 0;
	int last = -1;

	if (!s || !*s)
		return hp_error_set(err, HP_EINVAL,
				    "'': give a duration like 90m, "
				    "2h, 1h30m or seconds");
	if (strlen(s) > 64)
		return hp_error_set(err, HP_EINVAL, "'%.20s...': too long", s);
	while (*p) {
		char num[40];
		size_t len = 0;
		double v;
		const char *u;
		int ui;

		while (isdigit((unsigned char)p[len]) || p[len] == '.')
			len++;
		if (len == 0 || len >= sizeof(num))
			return hp_error_set(err, HP_EINVAL,
					    "'%s': give a duration "
					    "like 90m, 2h, 1h30m or seconds",
					    s);
		memcpy(num, p, len);
		num[len] = '\0';
		if (hp_parse_double(num, &v) || !(v >= 0))
			return hp_error_set(err, HP_EINVAL,
					    "'%s': '%s' is not a "
					    "number",
					    s, num);
		p += len;
		if (!*p) {
			if (last >= 0)
				return hp_error_set(err, HP_EINVAL,
						    "'%s': a unit "
						    "(d, h, m, s) must follow "
						    "'%s'",
						    s, num);
			ui = 3; /* plain seconds */
		} else {
			u = strchr(units, *p);
			if (!u || !*u)
				return hp_error_set(err, HP_EINVAL,
						    "'%s': unknown "
						    "unit '%c' (give d, h, m "
						    "or s)",
						    s, *p);
			ui = (int)(u - units);
			p++;
		}
		if (ui <= last)
			return hp_error_set(err, HP_EINVAL,
					    "'%s': units must come "
					    "once each, largest first",
					    s);
		last = ui;
		if (v > MAX_DURATION_S / mult[ui])
			return hp_error_set(err, HP_ERANGE,
					    "'%s': longer than 10 "
					    "years",
					    s);
		total += v * mult[ui];
	}
	if (total > MAX_DURATION_S)
		return hp_error_set(err, HP_ERANGE,
				    "'%s': longer than 10 years", s);
	if (!(total > 0))
		return hp_error_set(err, HP_EINVAL,
				    "'%s': must be more than zero", s);
	*seconds = total;
	return 0;
}
