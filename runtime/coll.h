/*
 * coll: MPI for gtplan-run: start-up, one communicator per group kind of the
 * plan, and the collectives the model issues, recorded and timed.
 *
 * MPI stays inside this module: no MPI type or error code passes its
 * boundary (MPICHECK in coll.c turns an MPI error into RT_EMPI with the
 * call, file and line). Every collective takes the group kind it runs over;
 * the communicator is the caller's group of that kind in the plan, built
 * with MPI_Comm_split(color = the group's index, key = the rank's place)
 * and checked against the plan's member list.
 *
 * Semantics hold for every group size; a group of one rank issues nothing
 * (copies stand in for the data movement) and is not recorded, as NCCL
 * programs skip one-rank groups. Counts are elements as NCCL counts them:
 * all-gather and gather take the count each rank sends, reduce-scatter the
 * count each rank receives, all-reduce the buffer's.
 *
 * Record (--record): one JSON line per collective issued, keys sorted:
 * bytes, call, coll ("all-gather", "reduce-scatter", "all-reduce", "gather",
 * "barrier"), count, dtype, group (the kind), group_index, op ("sum",
 * "max" or null), rank, seq (per rank, from 0), step, what (a label).
 *
 * Timeout (--timeout S > 0): each collective is issued non-blocking and
 * polled; one that has not completed after S seconds is reported (rank,
 * call, step, collective number, kind, group members) and returns
 * RT_ETIMEOUT; the caller then aborts the job (coll_mpi_abort).
 */
#ifndef GTPLAN_COLL_H
#define GTPLAN_COLL_H

#include "rt_plan.h"

enum coll_op { COLL_SUM, COLL_MAX };

struct coll;

struct coll_opts {
	double timeout_s;        /* <= 0: wait forever */
	const char *record_path; /* NULL: no record; "{rank}" is replaced by
				    the rank, else ".<rank>" is appended */
};

/* MPI start-up with errors returned, not fatal. Sets *rank and *size. */
int coll_mpi_init(int *argc, char ***argv, int *rank, int *size);
/* Every rank passes its status; all get the lowest (0 when all are 0), so
 * that the ranks stop together when one of them failed. */
int coll_mpi_agree(int status);
void coll_mpi_finalize(void);
/* Ends every rank of the job (after a failure only some ranks saw). */
void coll_mpi_abort(int exit_code);
/* MPI's library version, one line. */
const char *coll_mpi_version(void);

/* Builds the communicators of every kind in p (p->me is this rank) and
 * opens the record. Returns 0 or a negative RT_E* code. */
int coll_new(struct coll **out, const struct rt_plan *p,
	     const struct coll_opts *o);
void coll_free(struct coll *c);

/* The call and step the next collectives belong to (records, reports).
 * `call` must stay valid until the next coll_set_call. */
void coll_set_call(struct coll *c, const char *call, long long step);

/* This rank's place in its group of kind k. */
int coll_rank(const struct coll *c, enum rt_kind k);

/* recv = the members' `send` blocks of `count` floats, in group order. */
int coll_all_gather(struct coll *c, enum rt_kind k, const char *what,
		    const float *send, float *recv, long long count);
/* recv = block `rank` of the sum over members of send (n x count). */
int coll_reduce_scatter(struct coll *c, enum rt_kind k, const char *what,
			const float *send, float *recv, long long count);
/* buf = op over members of buf, in place. */
int coll_all_reduce(struct coll *c, enum rt_kind k, const char *what,
		    float *buf, long long count, enum coll_op op);
int coll_all_reduce_d(struct coll *c, enum rt_kind k, const char *what,
		      double *buf, long long count, enum coll_op op);
/* recv (on the member at place root only) = the members' send blocks. */
int coll_gather(struct coll *c, enum rt_kind k, const char *what,
		const float *send, float *recv, long long count, int root);
/* The same for host integers (never staged): recv (root only) = the
 * members' `count` long longs, in group order. */
int coll_gather_i64(struct coll *c, enum rt_kind k, const char *what,
		    const long long *send, long long *recv, long long count,
		    int root);
int coll_barrier(struct coll *c, enum rt_kind k, const char *what);

/* --device cuda with MPI host staging: after this, the float collectives
 * above take device pointers of dev (kern_download to a host buffer, the
 * MPI collective, kern_upload); a group of one copies on the device. The
 * fp64 all-reduce and the barrier stay on the host. dev must outlive c. */
struct kern_ctx;
void coll_set_staging(struct coll *c, struct kern_ctx *dev);
/* This rank's place among the ranks of its host, and their number. */
int coll_local_rank(int *local, int *nlocal);

#endif
