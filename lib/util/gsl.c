/*
 * gsl.c - GSL's error handler turned off once per process (gsl.h).
 */
#include <pthread.h>

#include <gsl/gsl_errno.h>

#include "util/gsl.h"

static void gsl_quiet_once(void)
{
	gsl_set_error_handler_off();
}

void hp__gsl_quiet(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, gsl_quiet_once);
}
