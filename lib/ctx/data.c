/*
 * data.c - where the programs' shipped data is: $HETPOOL_DATA_DIR, beside
 * the running program, or the source tree libhetpool was built from.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hetpool/ctx.h"
#include "util/banned.h"

/* The source tree: HP_SOURCE_DIR when the build defines it, else the
 * directory above this file's (CMake compiles it by absolute path). */
static void source_dir(char *buf, size_t n)
{
#ifdef HP_SOURCE_DIR
	snprintf(buf, n, "%s", HP_SOURCE_DIR);
#else
	const char *f = __FILE__;
	const char *tail = strstr(f, "/lib/ctx/data.c");
	if (f[0] != '/' || !tail) {
		buf[0] = '\0';
		return;
	}
	snprintf(buf, n, "%.*s", (int)(tail - f), f);
#endif
}

static bool try_path(char *buf, size_t n, const char *dir, const char *sub,
		     const char *name)
{
	if ((size_t)snprintf(buf, n, "%s%s/%s", dir, sub, name) >= n)
		return false;
	return access(buf, R_OK) == 0;
}

int hp_data_path(const char *name, char *buf, size_t n)
{
	static const char *const beside[] = {"/../../data",
					     "/../share/hetpool"};
	const char *env = getenv("HETPOOL_DATA_DIR");
	char exe[4096], src[4096];
	ssize_t len;

	if (env && *env && try_path(buf, n, env, "", name))
		return 0;
	len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (len > 0) {
		char *slash;
		exe[len] = '\0';
		slash = strrchr(exe, '/');
		if (slash) {
			*slash = '\0';
			for (int i = 0; i < 2; i++)
				if (try_path(buf, n, exe, beside[i], name))
					return 0;
		}
	}
	source_dir(src, sizeof(src));
	if (src[0] && try_path(buf, n, src, "/data", name))
		return 0;
	return HP_ENOENT;
}
