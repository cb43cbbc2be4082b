/*
 * rt_ckpt: sharded checkpoints of the runtime model (see rt_ckpt.h): the
 * collective save and load and the piece files; the index and its
 * metadata.json are rt_ckpt_index's.
 */
#include "rt_ckpt.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_ckpt_dir.h"
#include "rt_ckpt_index.h"
#include "rt_ckpt_int.h"
#include "rt_err.h"

/* Per tensor, what a rank tells rank 0 of its piece: present, r0, c0, nr,
 * nc, byte offset, checksum; then one trailing slot: its file's bytes, or
 * -1 when it wrote no file. */
#define CK_SLOT 7

/* Every rank's status, so that all stop together (see rt_main's agree). */
static int agree(int rc)
{
	int all = coll_mpi_agree(rc);

	return rc ? rc : all ? RT_EPEER : 0;
}

/* FNV-1a 64 of data continued from h (RT_CKPT_FNV_OFFSET to start): a
 * piece read in parts sums like one read whole. */
static uint64_t fnv1a64(uint64_t h, const void *data, size_t n)
{
	const unsigned char *b = data;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* Floats of a piece read at a time at load (4 MiB): what a load holds past
 * the host copies rt_limits counts, however large the pieces. */
#define CK_CHUNK (1LL << 20)

/* ---- save ------------------------------------------------------------- */

static int host_arrays(struct rt_model *m, float *h[RT_CKPT_NGROUPS],
		       int download)
{
	long long n = m->n_shard + m->n_rep;
	float *dev[RT_CKPT_NGROUPS] = { m->param, m->adam_m, m->adam_v };

	/* what is still pending completes under the watchdog, not in the
	 * downloads' device waits */
	if (download)
		RCHECK(coll_wait_last(m->c));
	for (int g = 0; g < RT_CKPT_NGROUPS; g++) {
		h[g] = calloc((size_t)(n > 0 ? n : 1), sizeof(float));
		if (!h[g])
			return rt_error(RT_ENOMEM, "out of memory");
		if (download)
			KCHECK(kern_download(m->k, h[g], dev[g],
					     (size_t)n * sizeof(float)));
	}
	return 0;
}

/* Writes this rank's pieces to dir/shard-RANK.bin (dir is the save's .tmp
 * directory: nothing names it yet), fsyncs it, and describes the pieces in
 * slots (CK_SLOT per tensor, then the file's bytes). */
static int write_pieces(const char *dir, int rank,
			const struct rt_ckpt_tensor *t, int nt,
			float *const h[RT_CKPT_NGROUPS], long long *slots)
{
	char name[32];
	char *path = NULL;
	FILE *f = NULL;
	long long bytes = 0;
	int rc = 0, any = 0;

	for (int i = 0; i < nt; i++)
		any |= t[i].writer && t[i].nr > 0;
	slots[(long long)nt * CK_SLOT] = -1;
	if (!any)
		return 0;
	snprintf(name, sizeof(name), "shard-%05d.bin", rank);
	if (!(path = rt_ckpt_index_path(dir, name)))
		return rt_error(RT_ENOMEM, "out of memory");
	if (!(f = fopen(path, "wb"))) {
		rc = rt_error(RT_EIO, "--save: cannot write '%s': %s", path,
			      strerror(errno));
		goto out;
	}
	for (int i = 0; i < nt; i++) {
		const float *src = h[t[i].group] + t[i].off;
		long long n = t[i].nr * t[i].nc, *s = slots + i * CK_SLOT;

		if (!t[i].writer || !t[i].nr)
			continue;
		if (fwrite(src, sizeof(float), (size_t)n, f) != (size_t)n) {
			rc = rt_error(RT_EIO, "--save: write error in '%s'",
				      path);
			goto out;
		}
		s[0] = 1;
		s[1] = t[i].r0;
		s[2] = t[i].c0;
		s[3] = t[i].nr;
		s[4] = t[i].nc;
		s[5] = bytes;
		s[6] = (long long)fnv1a64(RT_CKPT_FNV_OFFSET, src,
					  (size_t)n * sizeof(float));
		bytes += n * (long long)sizeof(float);
	}
	rc = rt_ckpt_dir_fsync_file(f) | fclose(f);
	f = NULL;
	if (rc)
		rc = rt_error(RT_EIO, "--save: cannot write '%s': %s", path,
			      strerror(errno));
	slots[(long long)nt * CK_SLOT] = bytes;
out:
	if (f)
		fclose(f);
	free(path);
	return rc;
}

/* Rank 0: the index from every rank's slots. */
static int gathered_index(struct rt_ckpt_index *x, const long long *all,
			  int world, long long per)
{
	const long long nt = x->nt;
	int *file_of = calloc((size_t)world, sizeof(int));

	x->f = calloc((size_t)world, sizeof(*x->f));
	x->pc = calloc((size_t)(world * nt), sizeof(*x->pc));
	if (!file_of || !x->f || !x->pc) {
		free(file_of);
		return rt_error(RT_ENOMEM, "out of memory");
	}
	for (int r = 0; r < world; r++) {
		long long bytes = all[r * per + nt * CK_SLOT];

		file_of[r] = -1;
		if (bytes < 0)
			continue;
		file_of[r] = x->nf;
		snprintf(x->f[x->nf].name, sizeof(x->f[0].name),
			 "shard-%05d.bin", r);
		x->f[x->nf].rank = r;
		x->f[x->nf++].bytes = bytes;
	}
	for (int i = 0; i < nt; i++)
		for (int r = 0; r < world; r++) {
			const long long *s = all + r * per + i * CK_SLOT;
			struct rt_ckpt_piece *q = &x->pc[x->np];

			if (s[0] != 1 || file_of[r] < 0)
				continue;
			q->tensor = i;
			q->file = file_of[r];
			q->r0 = s[1];
			q->c0 = s[2];
			q->nr = s[3];
			q->nc = s[4];
			q->byte_off = s[5];
			q->hash = (uint64_t)s[6];
			x->np++;
		}
	free(file_of);
	return 0;
}

/* Rank 0: validates the pieces and writes metadata.json into the save's
 * .tmp directory `dir`, fsynced; `top` is --save's DIR (messages). */
static int write_meta(const struct rt_model *m, const struct rt_plan *p,
		      const char *top, const char *dir,
		      struct rt_ckpt_index *x)
{
	char why[RT_CKPT_WHY];
	char *path = rt_ckpt_index_path(dir, RT_CKPT_META);
	FILE *f = NULL;
	int rc = 0;

	if (!path)
		return rt_error(RT_ENOMEM, "out of memory");
	if (rt_ckpt_index_validate(x, why)) {
		rc = rt_error(RT_ECKPT, "--save %s: checkpoint validation: %s; "
			      "nothing published, so %s is unchanged", top,
			      why, top);
		goto out;
	}
	if (!(f = fopen(path, "w")) || rt_ckpt_index_dump(x, m, p, f) ||
	    rt_ckpt_dir_fsync_file(f)) {
		rc = rt_error(RT_EIO, "--save: cannot write '%s': %s", path,
			      strerror(errno));
		goto out;
	}
	rc = fclose(f);
	f = NULL;
	if (rc)
		rc = rt_error(RT_EIO, "--save: cannot write '%s': %s", path,
			      strerror(errno));
out:
	if (f)
		fclose(f);
	free(path);
	return rc;
}

int rt_ckpt_save(struct rt_model *m, const struct rt_plan *p,
		 const char *dir, int keep)
{
	struct rt_ckpt_index x;
	float *h[RT_CKPT_NGROUPS] = { NULL, NULL, NULL };
	long long *mine = NULL, *all = NULL, per;
	char *tmp = rt_ckpt_dir_tmp(dir, m->step), *final = NULL;
	int rank = coll_rank(m->c, RT_K_WORLD), rc;

	memset(&x, 0, sizeof(x));
	coll_set_call(m->c, "save", m->step);
	rc = tmp ? rt_ckpt_index_init(&x, m, p) :
	     rt_error(RT_ENOMEM, "out of memory");
	if (!rc && rank == 0)
		rc = rt_ckpt_dir_begin(dir, m->step);
	if ((rc = agree(rc)))
		goto out;
	per = (long long)x.nt * CK_SLOT + 1;
	mine = calloc((size_t)per, sizeof(long long));
	if (rank == 0)
		all = calloc((size_t)(per * p->world), sizeof(long long));
	if (!mine || (rank == 0 && !all))
		rc = rt_error(RT_ENOMEM, "out of memory");
	if (!rc)
		rc = host_arrays(m, h, 1);
	if (!rc)
		rc = write_pieces(tmp, rank, x.t, x.nt, h, mine);
	if ((rc = agree(rc)))
		goto out;
	rc = coll_gather_i64(m->c, RT_K_WORLD, "ckpt.pieces", mine, all, per,
			     0);
	if (!rc && rank == 0)
		rc = gathered_index(&x, all, p->world, per);
	if (!rc && rank == 0)
		rc = write_meta(m, p, dir, tmp, &x);
	if (!rc && rank == 0)
		rc = rt_ckpt_dir_publish(dir, m->step, keep, &final);
	if (!(rc = agree(rc)))
		rt_note("checkpoint of step %lld saved to %s (%d files, %lld "
			"pieces)", m->step, final ? final : dir, x.nf, x.np);
out:
	for (int g = 0; g < RT_CKPT_NGROUPS; g++)
		free(h[g]);
	free(mine);
	free(all);
	free(tmp);
	free(final);
	rt_ckpt_index_release(&x);
	return rc;
}

/* ---- load --------------------------------------------------------------- */

int rt_ckpt_piece_copy(FILE *f, const struct rt_ckpt_piece *q,
		       const struct rt_ckpt_tensor *t, float *buf,
		       long long chunk, float *dst, uint64_t *sum)
{
	long long n = q->nr * q->nc;
	/* the rows of the piece (its own numbers) and the columns (the
	 * tensor's) that t's region holds */
	long long r_lo = (t->r0 > q->r0 ? t->r0 : q->r0) - q->r0;
	long long r_hi = (t->r0 + t->nr < q->r0 + q->nr ? t->r0 + t->nr :
			  q->r0 + q->nr) - q->r0;
	long long c_lo = t->c0 > q->c0 ? t->c0 : q->c0;
	long long c_hi = t->c0 + t->nc < q->c0 + q->nc ? t->c0 + t->nc :
			 q->c0 + q->nc;

	for (long long e = 0; e < n; e += chunk) {
		long long m = n - e < chunk ? n - e : chunk;
		long long pr = e / q->nc, last = (e + m - 1) / q->nc;

		if (fread(buf, sizeof(float), (size_t)m, f) != (size_t)m)
			return -1;
		*sum = fnv1a64(*sum, buf, (size_t)m * sizeof(float));
		pr = pr > r_lo ? pr : r_lo;
		last = last < r_hi - 1 ? last : r_hi - 1;
		for (; pr <= last && c_lo < c_hi; pr++) {
			/* row pr's elements in buf, as the tensor's columns */
			long long a = pr * q->nc > e ? pr * q->nc : e;
			long long b = (pr + 1) * q->nc < e + m ?
				      (pr + 1) * q->nc : e + m;
			long long lo = q->c0 + a - pr * q->nc;
			long long hi = q->c0 + b - pr * q->nc;

			lo = lo > c_lo ? lo : c_lo;
			hi = hi < c_hi ? hi : c_hi;
			if (lo < hi)
				memcpy(dst + (q->r0 + pr - t->r0) * t->nc +
				       (lo - t->c0),
				       buf + pr * q->nc + (lo - q->c0) - e,
				       (size_t)(hi - lo) * sizeof(float));
		}
	}
	return 0;
}

/* Copies into t's region (in dst) the part that piece q covers, read from
 * its file (opened once, its size checked) and checked against its sum.
 * Each piece is read once per rank (it belongs to one tensor, of which the
 * rank holds one region), and whole: its sum covers all of it. It is read
 * in parts of CK_CHUNK floats, so the load's memory does not grow with the
 * pieces (a 1-rank checkpoint read on many ranks is one piece a tensor);
 * a part copied before the sum is found wrong is never used: the load
 * fails, and nothing is uploaded. */
static int read_overlap(const char *dir, const struct rt_ckpt_index *x,
			const struct rt_ckpt_piece *q,
			const struct rt_ckpt_tensor *t, FILE **fp, float *dst,
			long long *covered)
{
	const struct rt_ckpt_file *cf = &x->f[q->file];
	long long r_lo = q->r0 > t->r0 ? q->r0 : t->r0;
	long long r_hi = q->r0 + q->nr < t->r0 + t->nr ? q->r0 + q->nr :
			 t->r0 + t->nr;
	long long c_lo = q->c0 > t->c0 ? q->c0 : t->c0;
	long long c_hi = q->c0 + q->nc < t->c0 + t->nc ? q->c0 + q->nc :
			 t->c0 + t->nc;
	long long n = q->nr * q->nc;
	float *buf;
	uint64_t sum = RT_CKPT_FNV_OFFSET;
	char a[48];

	if (r_lo >= r_hi || c_lo >= c_hi)
		return 0;
	if (!fp[q->file]) {
		char *path = rt_ckpt_index_path(dir, cf->name), why[128];
		long size = -1;

		if (!path)
			return rt_error(RT_ENOMEM, "out of memory");
		fp[q->file] = rt_ckpt_dir_open_regular(path, why, sizeof(why));
		free(path);
		if (!fp[q->file])
			return rt_error(RT_ECKPT, "--load %s: piece file %s: "
					"%s: the checkpoint is incomplete; "
					"copy every file of the save, or save "
					"again", dir, cf->name, why);
		if (!fseek(fp[q->file], 0, SEEK_END))
			size = ftell(fp[q->file]);
		if (size != cf->bytes)
			return rt_error(RT_ECKPT, "--load %s: piece file %s is "
					"%ld bytes, %s says %lld: truncated or "
					"replaced; save again", dir, cf->name,
					size, RT_CKPT_META, cf->bytes);
	}
	if (!(buf = malloc((size_t)(n < CK_CHUNK ? n : CK_CHUNK) *
			   sizeof(float))))
		return rt_error(RT_ENOMEM, "out of memory");
	if (fseek(fp[q->file], (long)q->byte_off, SEEK_SET) ||
	    rt_ckpt_piece_copy(fp[q->file], q, t, buf, CK_CHUNK, dst, &sum))
		n = -1;
	free(buf);
	if (n < 0)
		return rt_error(RT_ECKPT, "--load %s: cannot read the piece of "
				"%s at byte %lld of %s", dir, t->key,
				q->byte_off, cf->name);
	if (sum != q->hash)
		return rt_error(RT_ECKPT, "--load %s: the piece of %s at %s in "
				"%s (byte %lld) has checksum %016llx, %s says "
				"%016llx: the file is corrupt; save again", dir,
				t->key,
				rt_ckpt_index_at(t, q->r0, q->c0, a, 48),
				cf->name, q->byte_off, (unsigned long long)sum,
				RT_CKPT_META, (unsigned long long)q->hash);
	*covered += (r_hi - r_lo) * (c_hi - c_lo);
	return 0;
}

/* This rank's regions of every tensor from the pieces that overlap them. */
static int fill(const char *dir, const struct rt_ckpt_index *x,
		float *h[RT_CKPT_NGROUPS])
{
	FILE **fp = calloc((size_t)(x->nf ? x->nf : 1), sizeof(FILE *));
	long long k = 0;
	int rc = 0;

	if (!fp)
		return rt_error(RT_ENOMEM, "out of memory");
	for (int i = 0; i < x->nt && !rc; i++) {
		const struct rt_ckpt_tensor *t = &x->t[i];
		long long covered = 0;

		for (; k < x->np && x->pc[k].tensor == i && !rc; k++)
			rc = read_overlap(dir, x, &x->pc[k], t, fp,
					  h[t->group] + t->off, &covered);
		if (!rc && covered != t->nr * t->nc)
			rc = rt_error(RT_ECKPT, "--load %s: the pieces of %s "
				      "cover %lld of this rank's %lld elements",
				      dir, t->key, covered, t->nr * t->nc);
	}
	for (int i = 0; i < x->nf; i++)
		if (fp[i])
			fclose(fp[i]);
	free(fp);
	return rc;
}

int rt_ckpt_load(struct rt_model *m, const struct rt_plan *p,
		 const char *top)
{
	struct rt_ckpt_index x;
	float *h[RT_CKPT_NGROUPS] = { NULL, NULL, NULL };
	float *dev[RT_CKPT_NGROUPS] = { m->param, m->adam_m, m->adam_v };
	size_t bytes = (size_t)(m->n_shard + m->n_rep) * sizeof(float);
	long long step = 0;
	char *dir = NULL;
	int rc;

	memset(&x, 0, sizeof(x));
	m->param16_ok = 0; /* the weights are about to change */
	rc = rt_ckpt_dir_resolve(top, &dir);
	if (!rc)
		rc = rt_ckpt_index_init(&x, m, p);
	if (!rc)
		rc = rt_ckpt_index_load(&x, m, dir, &step);
	if (!rc)
		rc = host_arrays(m, h, 0);
	if (!rc)
		rc = fill(dir, &x, h);
	for (int g = 0; g < RT_CKPT_NGROUPS && !rc; g++) {
		int krc = kern_upload(m->k, dev[g], h[g], bytes);

		if (krc) /* with the kernel's reason (a CUDA status) */
			rc = rt_kcheck(krc, "--load: kern_upload of the "
				       "checkpoint's values", __FILE__,
				       __LINE__);
	}
	if (!rc)
		m->step = step;
	rc = agree(rc);
	for (int g = 0; g < RT_CKPT_NGROUPS; g++)
		free(h[g]);
	free(dir);
	rt_ckpt_index_release(&x);
	return rc;
}
