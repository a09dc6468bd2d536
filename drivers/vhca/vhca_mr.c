// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Memory regions (docs/specs/vhca.rst, "Memory regions"): a kernel DMA MR
 * maps iova to bus addresses one to one; a user MR is its pinned pages in
 * a page list of the largest page size that fits the region.  lkey and rkey
 * are the same key, index << 8 | tag.
 */

#include <linux/random.h>
#include <rdma/ib_umem.h>
#include <rdma/iter.h>

#include "vhca.h"
#include "vhca_verbs.h"

#define VHCA_MR_ACCESS	(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | \
			 IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC)

static_assert(IB_ACCESS_LOCAL_WRITE == VHCA_ACCESS_LOCAL_WRITE);
static_assert(IB_ACCESS_REMOTE_WRITE == VHCA_ACCESS_REMOTE_WRITE);
static_assert(IB_ACCESS_REMOTE_READ == VHCA_ACCESS_REMOTE_READ);
static_assert(IB_ACCESS_REMOTE_ATOMIC == VHCA_ACCESS_REMOTE_ATOMIC);

/*
 * The device keys an MR by index and 8-bit tag, and gives a new MR the
 * lowest free index, so an index comes back as soon as its MR is
 * destroyed.  A key held from the earlier MR at that index must not name
 * the new one (IBTA 10.6.3).  A plain counter repeats a tag after exactly
 * 256 registrations, a pattern a remote peer holding a stale R_Key can
 * count on; a random tag alone repeats the previous one 1 time in 256.
 * So each tag is the previous one plus a random step of 1..255: the next
 * MR never gets the tag just used, and no one outside can predict which
 * registration brings a tag back.  The device also pins each message to
 * the MR its first packet was checked against, whatever the tag.
 */
static u32 vhcad_next_key_tag(struct vhca_dev *dev)
{
	u32 step = 1 + get_random_u32_below(255);

	return (u32)atomic_add_return(step, &dev->mr_key_tag) & 0xff;
}

/* Access flags the device enforces; the optional ones may be ignored. */
static int vhcad_mr_access(int access)
{
	if (access & ~(VHCA_MR_ACCESS | IB_ACCESS_OPTIONAL))
		return -EOPNOTSUPP;
	return access & VHCA_MR_ACCESS;
}

static int vhcad_mr_create(struct vhca_dev *dev, struct vhca_mr *mr,
			   struct vhca_mr_create *create)
{
	u32 key;
	int err;

	create->key_tag = cpu_to_le32(vhcad_next_key_tag(dev));
	err = vhcad_cmd_create_mr(dev, create, &key);
	if (err)
		return err;

	mr->ibmr.lkey = key;
	mr->ibmr.rkey = key;
	return 0;
}

struct ib_mr *vhcad_get_dma_mr(struct ib_pd *ibpd, int access)
{
	struct vhca_dev *dev = to_vhca_dev(ibpd->device);
	struct vhca_mr_create create = {};
	struct vhca_mr *mr;
	int err;

	err = vhcad_mr_access(access);
	if (err < 0)
		return ERR_PTR(err);

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);

	/* All of the bus address space: iova 0, length 2^64 - 1. */
	create.pdn = cpu_to_le32(to_vhca_pd(ibpd)->pdn);
	create.access = cpu_to_le32(err);
	create.length = cpu_to_le64(U64_MAX);
	create.flags = cpu_to_le16(VHCA_MR_PHYS);
	err = vhcad_mr_create(dev, mr, &create);
	if (err) {
		kfree(mr);
		return ERR_PTR(err);
	}
	return &mr->ibmr;
}

struct ib_mr *vhcad_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				u64 virt_addr, int access,
				struct ib_udata *udata)
{
	struct vhca_dev *dev = to_vhca_dev(ibpd->device);
	struct vhca_mr_create create = {};
	struct ib_block_iter biter;
	unsigned long page_size;
	struct vhca_mr *mr;
	size_t npages;
	u32 i = 0;
	int err;

	if (udata->inlen && !ib_is_udata_cleared(udata, 0, udata->inlen))
		return ERR_PTR(-EINVAL);
	err = vhcad_mr_access(access);
	if (err < 0)
		return ERR_PTR(err);
	create.access = cpu_to_le32(err);

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);

	mr->umem = ib_umem_get(ibpd->device, start, length, access);
	if (IS_ERR(mr->umem)) {
		err = PTR_ERR(mr->umem);
		goto err_free;
	}

	/* The device takes pages of 4 KiB .. 1 GiB (page_size_cap). */
	page_size = ib_umem_find_best_pgsz(mr->umem, dev->attr.page_size_cap,
					   virt_addr);
	if (!page_size) {
		err = -EINVAL;
		goto err_release;
	}
	npages = ib_umem_num_dma_blocks(mr->umem, page_size);
	if (npages > VHCA_PBL_ENTRIES_PER_PAGE * VHCA_PBL_ENTRIES_PER_PAGE) {
		err = -EINVAL;
		goto err_release;
	}

	err = vhcad_pbl_alloc(dev, &mr->pbl, npages, true);
	if (err)
		goto err_release;
	rdma_umem_for_each_dma_block(mr->umem, &biter, page_size)
		vhcad_pbl_set(&mr->pbl, i++, rdma_block_iter_dma_address(&biter));

	create.pdn = cpu_to_le32(to_vhca_pd(ibpd)->pdn);
	create.iova = cpu_to_le64(virt_addr);
	create.length = cpu_to_le64(length);
	create.pbl_addr = cpu_to_le64(vhcad_pbl_addr(&mr->pbl));
	create.npages = cpu_to_le32(npages);
	create.page_shift = order_base_2(page_size);
	create.pbl_levels = mr->pbl.levels;
	create.offset = cpu_to_le32(ib_umem_dma_offset(mr->umem, page_size));
	err = vhcad_mr_create(dev, mr, &create);
	if (err)
		goto err_free_pbl;
	/* The RDMA core sets these on registration, not on rereg. */
	mr->ibmr.iova = virt_addr;
	mr->ibmr.length = length;
	mr->access = access;
	return &mr->ibmr;

err_free_pbl:
	vhcad_pbl_free(dev, &mr->pbl);
err_release:
	ib_umem_release(mr->umem);
err_free:
	kfree(mr);
	return ERR_PTR(err);
}

/*
 * The device has no command that changes an MR: a reregistered MR is a
 * new one, with its pages pinned anew and keys of its own (the verb's
 * Reregister Memory Region returns the L_Key and R_Key, which may
 * change).  The RDMA core gives the verbs object the new MR, destroys the
 * old one after it, and returns the new keys (ib_uverbs_rereg_mr()), as
 * for efa and rxe.  What @flags does not change comes from the old
 * registration.
 */
struct ib_mr *vhcad_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				  u64 length, u64 virt_addr, int access,
				  struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct vhca_mr *mr = to_vhca_mr(ibmr);

	if (!mr->umem)
		return ERR_PTR(-EINVAL);
	if (!(flags & IB_MR_REREG_TRANS)) {
		start = mr->umem->address;
		length = mr->umem->length;
		virt_addr = ibmr->iova;
	}
	if (!(flags & IB_MR_REREG_ACCESS))
		access = mr->access;
	if (!(flags & IB_MR_REREG_PD))
		ibpd = ibmr->pd;
	return vhcad_reg_user_mr(ibpd, start, length, virt_addr, access, udata);
}

int vhcad_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct vhca_dev *dev = to_vhca_dev(ibmr->device);
	struct vhca_mr *mr = to_vhca_mr(ibmr);
	int err;

	/* IBTA 10.6.7.2: the device fails every later access, in flight too. */
	err = vhcad_cmd_destroy(dev, VHCA_CMD_DESTROY_MR, ibmr->lkey);
	if (err)
		return err;

	vhcad_pbl_free(dev, &mr->pbl);
	ib_umem_release(mr->umem);
	kfree(mr);
	return 0;
}
