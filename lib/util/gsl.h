/*
 * gsl.h - internal: GSL's process-wide error handler.
 */
#ifndef HP_UTIL_GSL_H
#define HP_UTIL_GSL_H

/*
 * Turn GSL's error handler (which aborts the process) off, once per
 * process and safely from many threads: the library's fits read GSL's
 * return codes instead.  GSL's handler is one global, so this replaces
 * any handler the program installed before its first fit.
 */
void hp__gsl_quiet(void);

#endif
