/*
 * rt_err: gtplan-run's status codes and its one way of reporting an error.
 *
 * A runtime function returns 0 or a negative RT_E* code. The place that
 * finds a problem reports it once with rt_error() (which returns the code,
 * so `return rt_error(RT_EPLAN, "...")` reads naturally) and its callers
 * pass the code up unchanged; only main() decides how the process ends.
 * Foreign errors (MPI, Jansson, kernels) are turned into these codes by the
 * module that wraps the library.
 *
 * Ownership: the messages are printed, not kept; rt_strerror's strings
 * are static.
 */
#ifndef GTPLAN_RT_ERR_H
#define GTPLAN_RT_ERR_H

#define RT_ERRORS(X)                                              \
	X(RT_EUSAGE, -1, "usage error")                           \
	X(RT_EIO, -2, "input/output error")                       \
	X(RT_EPLAN, -3, "the plan cannot be run")                 \
	X(RT_EWORLD, -4, "the MPI world does not match the plan") \
	X(RT_EMPI, -5, "MPI error")                               \
	X(RT_ENOMEM, -6, "out of memory")                         \
	X(RT_EKERNEL, -7, "kernel error")                         \
	X(RT_ETIMEOUT, -8, "a collective timed out")              \
	X(RT_EDEVICE, -9, "device not available")                 \
	X(RT_EPEER, -10, "another rank failed")                   \
	X(RT_ECKPT, -11, "the checkpoint cannot be used")          \
	X(RT_EDIVERGED, -12, "the training diverged")

enum rt_error {
	RT_OK = 0,
#define RT_ENUM(name, val, msg) name = val,
	RT_ERRORS(RT_ENUM)
#undef RT_ENUM
};

const char *rt_strerror(int code);

/* The world rank messages name; -1 (the default) before MPI is up. */
void rt_err_set_rank(int rank);

/* Prints "gtplan-run: rank R: error: MSG" on stderr and returns code. */
int rt_error(int code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* The same, printed by rank 0 only: for errors every rank finds alike
 * (usage, the plan), so that W ranks do not print W copies. */
int rt_error_once(int code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* "gtplan-run: note: MSG" from rank 0 only. */
void rt_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
