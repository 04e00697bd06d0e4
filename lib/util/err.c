/* err.c - error codes, messages and the caller-owned error context. */
#include <stdio.h>
#include <string.h>

#include "hetpool/util.h"
#include "util/banned.h"

const char *hp_strerror(int code)
{
	switch (code) {
	case HP_OK:
		return "success";
#define HP_ERR_MSG(name, val, msg)                                             \
	case HP_##name:                                                        \
		return msg;
		HP_ERRNO_MAP(HP_ERR_MSG)
#undef HP_ERR_MSG
	}
	return "unknown error";
}

const char *hp_err_name(int code)
{
	switch (code) {
	case HP_OK:
		return "HP_OK";
#define HP_ERR_NAME(name, val, msg)                                            \
	case HP_##name:                                                        \
		return "HP_" #name;
		HP_ERRNO_MAP(HP_ERR_NAME)
#undef HP_ERR_NAME
	}
	return "HP_EUNKNOWN";
}

int hp_error_set(struct hp_error *err, int code, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return code;
	err->code = code;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	hp_str_cut_utf8(err->msg);
	return code;
}

void hp_error_prefix(struct hp_error *err, const char *fmt, ...)
{
	char old[sizeof(err->msg)];
	va_list ap;
	int n;

	if (!err)
		return;
	memcpy(old, err->msg, sizeof(old));
	va_start(ap, fmt);
	n = vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(err->msg) - 2)
		return;
	err->msg[n] = ':';
	err->msg[n + 1] = ' ';
	memcpy(err->msg + n + 2, old, sizeof(err->msg) - (size_t)n - 2);
	err->msg[sizeof(err->msg) - 1] = '\0';
	hp_str_cut_utf8(err->msg);
}

void hp_error_clear(struct hp_error *err)
{
	if (err) {
		err->code = 0;
		err->msg[0] = '\0';
	}
}
