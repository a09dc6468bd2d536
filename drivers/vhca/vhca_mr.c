// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Memory regions (docs/specs/vhca.rst, "Memory regions"): a kernel DMA MR
 * maps iova to bus addresses one to one; a user MR is its pinned pages in
 * a page list of the largest page size that fits the region; a kernel
 * fast-register MR gets its pages from IB_WR_REG_MR work requests, through
 * a page list map_mr_sg fills.  lkey and rkey are the same key,
 * index << 8 | tag.
 */

#include <linux/random.h>
#include <rdma/ib_umem.h>
#include <rdma/iter.h>

#include "vhca.h"
#include "vhca_verbs.h"

/* No FLUSH_PERSISTENT: the device does not offer persistence. */
#define VHCA_MR_ACCESS	(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | \
			 IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC | \
			 IB_ACCESS_FLUSH_GLOBAL)

static_assert(IB_ACCESS_LOCAL_WRITE == VHCA_ACCESS_LOCAL_WRITE);
static_assert(IB_ACCESS_REMOTE_WRITE == VHCA_ACCESS_REMOTE_WRITE);
static_assert(IB_ACCESS_REMOTE_READ == VHCA_ACCESS_REMOTE_READ);
static_assert(IB_ACCESS_REMOTE_ATOMIC == VHCA_ACCESS_REMOTE_ATOMIC);
static_assert(IB_ACCESS_FLUSH_GLOBAL == VHCA_ACCESS_FLUSH_GLOBAL);
static_assert(IB_ACCESS_FLUSH_PERSISTENT == VHCA_ACCESS_FLUSH_PERSISTENT);

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
/*
 * Held by every CREATE_MR and ALLOC_MW (windows take their index from the
 * MR table) and by rereg from its DESTROY_MR to its CREATE_MR at the same
 * index, so that no new MR or window takes the index between.
 */
static DEFINE_MUTEX(vhcad_mr_index_lock);

static u32 vhcad_next_key_tag(struct vhca_dev *dev)
{
	u32 step = 1 + get_random_u32_below(255);

	return (u32)atomic_add_return(step, &dev->mr_key_tag) & 0xff;
}

/*
 * Access flags the device enforces; the optional ones may be ignored.
 * MW_BIND only where the device has memory windows (IBTA 10.6.7.2.1: an
 * MR without it cannot have windows bound to it).
 */
static int vhcad_mr_access(struct vhca_dev *dev, int access)
{
	int supported = VHCA_MR_ACCESS;

	if (dev->attr.max_mw)
		supported |= IB_ACCESS_MW_BIND;
	if (access & ~(supported | IB_ACCESS_OPTIONAL))
		return -EOPNOTSUPP;
	return access & supported;
}

/**
 * vhcad_alloc_mw_key - ALLOC_MW under the MR table's index lock
 * @dev: the device
 * @pdn: the window's PD
 * @type: VHCA_MW_TYPE_1 or VHCA_MW_TYPE_2
 * @key: the window's first key, on success
 *
 * A window takes the lowest free index of the MR table, and a key tag
 * drawn as an MR's is, for the same reason: a stale key held from an
 * earlier MR or window at that index must not name this one.
 *
 * Return: 0 or the errno of the command's status.
 */
int vhcad_alloc_mw_key(struct vhca_dev *dev, u32 pdn, u8 type, u32 *key)
{
	u32 tag = vhcad_next_key_tag(dev);
	int err;

	mutex_lock(&vhcad_mr_index_lock);
	err = vhcad_cmd_alloc_mw(dev, pdn, type, tag, key);
	mutex_unlock(&vhcad_mr_index_lock);
	return err;
}

/*
 * DESTROY_MR, which fails BUSY while memory windows are bound to the MR
 * (docs/specs/vhca.rst, "Memory windows"); rxe refuses it the same way.
 */
static int vhcad_destroy_mr_cmd(struct vhca_dev *dev, u32 key)
{
	int err = vhcad_cmd_destroy(dev, VHCA_CMD_DESTROY_MR, key);

	if (err == -EBUSY)
		dev_warn_ratelimited(&dev->pdev->dev,
				     "MR 0x%x still has memory windows bound: unbind, invalidate or deallocate them first\n",
				     key);
	return err;
}

static int vhcad_mr_create(struct vhca_dev *dev, struct vhca_mr *mr,
			   struct vhca_mr_create *create)
{
	u32 key;
	int err;

	create->key_tag = cpu_to_le32(vhcad_next_key_tag(dev));
	mutex_lock(&vhcad_mr_index_lock);
	err = vhcad_cmd_create_mr(dev, create, &key);
	mutex_unlock(&vhcad_mr_index_lock);
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

	err = vhcad_mr_access(dev, access);
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

/*
 * Pin [@start, @start + @length) and write its page list: what CREATE_MR
 * needs of a user MR, but for the PD and the key tag.
 */
static int vhcad_umem_map(struct vhca_dev *dev, u64 start, u64 length,
			  u64 virt_addr, int access, struct ib_umem **umemp,
			  struct vhca_pbl *pbl, struct vhca_mr_create *create)
{
	struct ib_block_iter biter;
	unsigned long page_size;
	struct ib_umem *umem;
	size_t npages;
	u32 i = 0;
	int err;

	err = vhcad_mr_access(dev, access);
	if (err < 0)
		return err;
	create->access = cpu_to_le32(err);

	umem = ib_umem_get(&dev->ibdev, start, length, access);
	if (IS_ERR(umem))
		return PTR_ERR(umem);

	/* The device takes pages of 4 KiB .. 1 GiB (page_size_cap). */
	page_size = ib_umem_find_best_pgsz(umem, dev->attr.page_size_cap,
					   virt_addr);
	if (!page_size) {
		err = -EINVAL;
		goto err_release;
	}
	npages = ib_umem_num_dma_blocks(umem, page_size);
	if (npages > VHCA_PBL_ENTRIES_PER_PAGE * VHCA_PBL_ENTRIES_PER_PAGE) {
		err = -EINVAL;
		goto err_release;
	}

	err = vhcad_pbl_alloc(dev, pbl, npages, true);
	if (err)
		goto err_release;
	rdma_umem_for_each_dma_block(umem, &biter, page_size)
		vhcad_pbl_set(pbl, i++, rdma_block_iter_dma_address(&biter));

	create->iova = cpu_to_le64(virt_addr);
	create->length = cpu_to_le64(length);
	create->pbl_addr = cpu_to_le64(vhcad_pbl_addr(pbl));
	create->npages = cpu_to_le32(npages);
	create->page_shift = order_base_2(page_size);
	create->pbl_levels = pbl->levels;
	create->offset = cpu_to_le32(ib_umem_dma_offset(umem, page_size));
	*umemp = umem;
	return 0;

err_release:
	ib_umem_release(umem);
	return err;
}

struct ib_mr *vhcad_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				u64 virt_addr, int access,
				struct ib_udata *udata)
{
	struct vhca_dev *dev = to_vhca_dev(ibpd->device);
	struct vhca_mr_create create = {};
	struct vhca_mr *mr;
	int err;

	if (udata->inlen && !ib_is_udata_cleared(udata, 0, udata->inlen))
		return ERR_PTR(-EINVAL);

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);

	err = vhcad_umem_map(dev, start, length, virt_addr, access,
			     &mr->umem, &mr->pbl, &create);
	if (err)
		goto err_free;

	create.pdn = cpu_to_le32(to_vhca_pd(ibpd)->pdn);
	err = vhcad_mr_create(dev, mr, &create);
	if (err)
		goto err_unmap;
	/* The RDMA core sets these on registration, not on rereg. */
	mr->ibmr.iova = virt_addr;
	mr->ibmr.length = length;
	mr->access = access;
	return &mr->ibmr;

err_unmap:
	vhcad_pbl_free(dev, &mr->pbl);
	ib_umem_release(mr->umem);
err_free:
	kfree(mr);
	return ERR_PTR(err);
}

/*
 * Reregister in place, keeping the L_Key and R_Key as mlx5 does: the
 * device has no command that changes an MR, so this destroys the device
 * MR and creates the new one at the same index with the same key tag
 * (VHCA_MR_AT_INDEX).  Returning NULL tells ib_uverbs_rereg_mr() that
 * @ibmr stays the verbs object; it then sets pd, iova and length itself.
 * The new pages are pinned first, so a bad range fails with the old
 * registration intact; once the old device MR is gone, a failure leaves
 * the MR invalid, which the Reregister Memory Region verb allows
 * (IBTA 11.2.8), and only Deregister is left to do with it.  A message
 * in flight against the old registration does not land in the new one:
 * the device gives every created MR a new generation.
 */
struct ib_mr *vhcad_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				  u64 length, u64 virt_addr, int access,
				  struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct vhca_dev *dev = to_vhca_dev(ibmr->device);
	struct vhca_mr *mr = to_vhca_mr(ibmr);
	struct vhca_mr_create create = {};
	struct ib_umem *umem;
	struct vhca_pbl pbl = {};
	u32 key = ibmr->lkey;
	u32 new_key;
	int err;

	if (!mr->umem || mr->invalid)
		return ERR_PTR(-EINVAL);
	if (udata->inlen && !ib_is_udata_cleared(udata, 0, udata->inlen))
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

	err = vhcad_umem_map(dev, start, length, virt_addr, access, &umem,
			     &pbl, &create);
	if (err)
		return ERR_PTR(err);
	create.pdn = cpu_to_le32(to_vhca_pd(ibpd)->pdn);
	create.flags = cpu_to_le16(VHCA_MR_AT_INDEX);
	create.mrn = cpu_to_le32(key >> 8);
	create.key_tag = cpu_to_le32(key & 0xff);

	/* No other CREATE_MR may take the index between the two commands. */
	mutex_lock(&vhcad_mr_index_lock);
	err = vhcad_destroy_mr_cmd(dev, key);
	if (err) {
		mutex_unlock(&vhcad_mr_index_lock);
		goto err_unmap;
	}
	err = vhcad_cmd_create_mr(dev, &create, &new_key);
	mutex_unlock(&vhcad_mr_index_lock);

	/* The old pages are no longer the device's either way. */
	vhcad_pbl_free(dev, &mr->pbl);
	ib_umem_release(mr->umem);
	mr->pbl = pbl;
	mr->umem = umem;
	if (err) {
		mr->invalid = true;
		return ERR_PTR(err);
	}
	mr->access = access;
	return NULL;

err_unmap:
	vhcad_pbl_free(dev, &pbl);
	ib_umem_release(umem);
	return ERR_PTR(err);
}

/**
 * vhcad_alloc_mr - allocate a fast-register MR (IB_MR_TYPE_MEM_REG)
 * @ibpd: its protection domain, a kernel one
 * @mr_type: only IB_MR_TYPE_MEM_REG
 * @max_num_sg: most pages one registration maps, 1..512
 *
 * The device makes the MR free: it maps nothing until an IB_WR_REG_MR
 * names it (IBTA 10.6.3.2).  Its page list, one coherent level 1 list of
 * @max_num_sg entries, stays with the MR: map_mr_sg writes it, the device
 * reads it at the REG_MR and at each access while the MR is valid.  User
 * PDs get none: a REG_MR names guest physical pages, which no user QP
 * may do.
 *
 * Return: the MR, or an ERR_PTR.
 */
struct ib_mr *vhcad_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type mr_type,
			     u32 max_num_sg)
{
	struct vhca_dev *dev = to_vhca_dev(ibpd->device);
	struct vhca_mr_create create = {};
	struct vhca_mr *mr;
	int err;

	if (mr_type != IB_MR_TYPE_MEM_REG || ibpd->uobject)
		return ERR_PTR(-EOPNOTSUPP);
	if (!max_num_sg || max_num_sg > VHCA_FAST_REG_MAX_PAGES)
		return ERR_PTR(-EINVAL);

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	err = vhcad_pbl_alloc(dev, &mr->pbl, max_num_sg, false);
	if (err)
		goto err_free;

	create.pdn = cpu_to_le32(to_vhca_pd(ibpd)->pdn);
	create.npages = cpu_to_le32(max_num_sg);
	create.flags = cpu_to_le16(VHCA_MR_FAST_REG);
	err = vhcad_mr_create(dev, mr, &create);
	if (err)
		goto err_pbl;
	mr->fast_reg = true;
	return &mr->ibmr;

err_pbl:
	vhcad_pbl_free(dev, &mr->pbl);
err_free:
	kfree(mr);
	return ERR_PTR(err);
}

static int vhcad_set_page(struct ib_mr *ibmr, u64 addr)
{
	struct vhca_mr *mr = to_vhca_mr(ibmr);

	if (mr->npages >= mr->pbl.npages)
		return -ENOMEM;
	vhcad_pbl_set(&mr->pbl, mr->npages++, addr);
	return 0;
}

/*
 * The pages of @sg, in ibmr->page_size blocks, into the MR's page list:
 * what the next IB_WR_REG_MR registers.  The ULP calls it only while the
 * MR is free, so the device is not reading the list.
 */
int vhcad_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		    unsigned int *sg_offset)
{
	struct vhca_mr *mr = to_vhca_mr(ibmr);

	if (!mr->fast_reg)
		return -EINVAL;
	mr->npages = 0;
	return ib_sg_to_pages(ibmr, sg, sg_nents, sg_offset, vhcad_set_page);
}

/**
 * vhcad_set_reg_mr_wqe - the registration of an IB_WR_REG_MR work request
 * @wqe: the send WQE, opcode set, its SGE area to fill
 * @reg: the work request
 *
 * The new key (reg->key, the MR's index with the tag the ULP chose through
 * ib_update_fast_reg_key()), and the iova, length, page size and pages
 * map_mr_sg gave the MR.
 *
 * Return: 0, or -EINVAL for a request the device would refuse anyway.
 */
int vhcad_set_reg_mr_wqe(struct vhca_send_wqe *wqe,
			 const struct ib_reg_wr *reg)
{
	struct vhca_dev *dev = to_vhca_dev(reg->mr->device);
	struct vhca_mr *mr = to_vhca_mr(reg->mr);
	int access = vhcad_mr_access(dev, reg->access);

	if (!mr->fast_reg || !mr->npages || access < 0 ||
	    (reg->key >> 8) != (mr->ibmr.lkey >> 8) ||
	    !is_power_of_2(mr->ibmr.page_size))
		return -EINVAL;

	memset(wqe->sge, 0, sizeof(wqe->sge));
	wqe->imm_or_inv = cpu_to_le32(reg->key);
	wqe->mr_iova = cpu_to_le64(mr->ibmr.iova);
	wqe->mr_length = cpu_to_le64(mr->ibmr.length);
	wqe->mr_pbl_addr = cpu_to_le64(vhcad_pbl_addr(&mr->pbl));
	wqe->mr_npages = cpu_to_le32(mr->npages);
	wqe->mr_access = cpu_to_le32(access);
	wqe->mr_page_shift = ilog2(mr->ibmr.page_size);
	return 0;
}

int vhcad_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct vhca_dev *dev = to_vhca_dev(ibmr->device);
	struct vhca_mr *mr = to_vhca_mr(ibmr);
	int err;

	/*
	 * IBTA 10.6.7.2: the device fails every later access, in flight too.
	 * An MR a failed rereg left invalid has no device MR any more.  A
	 * fast-register MR's key may carry a tag its last REG_MR never gave
	 * the device (it was flushed): the device names it by index.
	 */
	if (!mr->invalid) {
		err = vhcad_destroy_mr_cmd(dev, ibmr->lkey);
		if (err)
			return err;
	}

	vhcad_pbl_free(dev, &mr->pbl);
	ib_umem_release(mr->umem);
	kfree(mr);
	return 0;
}
