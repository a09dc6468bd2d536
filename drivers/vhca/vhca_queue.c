// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Page lists and queue rings (docs/specs/vhca.rst, "RDMA resources").
 *
 * The device finds every queue and memory region through a page list: an
 * array of u64 page addresses (level 1, at most 4096 entries), or a 4 KiB
 * directory of pages that each hold 512 entries (level 2, memory regions
 * only).  Queues are always on 4 KiB pages.  The device keeps a copy of a
 * queue's list, but reads an MR's list at each access.
 */

#include <linux/dma-mapping.h>
#include <rdma/ib_umem.h>
#include <rdma/iter.h>

#include "vhca.h"

/**
 * vhcad_pbl_alloc - allocate a page list for @npages pages
 * @dev: the device
 * @pbl: the list to set up
 * @npages: pages it describes
 * @allow_level2: whether a list past VHCA_PBL_MAX_L1_ENTRIES may use a
 *	directory (memory regions) or must fail (queues)
 *
 * The entries are one contiguous coherent buffer, so at level 2 its 4 KiB
 * pages are the ones the directory names.
 *
 * Return: 0, -EINVAL if @npages is out of range, or -ENOMEM.
 */
int vhcad_pbl_alloc(struct vhca_dev *dev, struct vhca_pbl *pbl, u32 npages,
		    bool allow_level2)
{
	struct device *dma_dev = &dev->pdev->dev;
	u32 i, dir_entries;

	memset(pbl, 0, sizeof(*pbl));
	if (!npages ||
	    npages > VHCA_PBL_ENTRIES_PER_PAGE * VHCA_PBL_ENTRIES_PER_PAGE ||
	    (!allow_level2 && npages > VHCA_PBL_MAX_L1_ENTRIES))
		return -EINVAL;

	pbl->npages = npages;
	pbl->levels = npages > VHCA_PBL_MAX_L1_ENTRIES ? 2 : 1;
	pbl->entries_size = array_size(npages, sizeof(u64));
	if (pbl->levels == 2)
		pbl->entries_size = ALIGN(pbl->entries_size,
					  VHCA_QUEUE_PAGE_SIZE);
	pbl->entries = dma_alloc_coherent(dma_dev, pbl->entries_size,
					  &pbl->entries_dma, GFP_KERNEL);
	if (!pbl->entries)
		return -ENOMEM;
	if (pbl->levels == 1)
		return 0;

	pbl->dir = dma_alloc_coherent(dma_dev, VHCA_QUEUE_PAGE_SIZE,
				      &pbl->dir_dma, GFP_KERNEL);
	if (!pbl->dir) {
		dma_free_coherent(dma_dev, pbl->entries_size, pbl->entries,
				  pbl->entries_dma);
		pbl->entries = NULL;
		return -ENOMEM;
	}
	dir_entries = DIV_ROUND_UP(npages, VHCA_PBL_ENTRIES_PER_PAGE);
	for (i = 0; i < dir_entries; i++)
		pbl->dir[i] = cpu_to_le64(pbl->entries_dma +
					  (u64)i * VHCA_QUEUE_PAGE_SIZE);
	return 0;
}

void vhcad_pbl_free(struct vhca_dev *dev, struct vhca_pbl *pbl)
{
	struct device *dma_dev = &dev->pdev->dev;

	if (pbl->dir)
		dma_free_coherent(dma_dev, VHCA_QUEUE_PAGE_SIZE, pbl->dir,
				  pbl->dir_dma);
	if (pbl->entries)
		dma_free_coherent(dma_dev, pbl->entries_size, pbl->entries,
				  pbl->entries_dma);
	memset(pbl, 0, sizeof(*pbl));
}

void vhcad_pbl_set(struct vhca_pbl *pbl, u32 index, u64 addr)
{
	pbl->entries[index] = cpu_to_le64(addr);
}

/* What the device's pbl_addr field takes. */
dma_addr_t vhcad_pbl_addr(const struct vhca_pbl *pbl)
{
	return pbl->levels == 2 ? pbl->dir_dma : pbl->entries_dma;
}

/* A ring for a kernel queue: zeroed coherent memory and its page list. */
int vhcad_queue_buf_alloc(struct vhca_dev *dev, struct vhca_queue_buf *buf,
			  size_t size)
{
	struct device *dma_dev = &dev->pdev->dev;
	u32 i, npages;
	int err;

	memset(buf, 0, sizeof(*buf));
	buf->size = ALIGN(size, VHCA_QUEUE_PAGE_SIZE);
	npages = buf->size / VHCA_QUEUE_PAGE_SIZE;

	err = vhcad_pbl_alloc(dev, &buf->pbl, npages, false);
	if (err)
		return err;

	buf->kva = dma_alloc_coherent(dma_dev, buf->size, &buf->dma,
				      GFP_KERNEL);
	if (!buf->kva) {
		vhcad_pbl_free(dev, &buf->pbl);
		return -ENOMEM;
	}
	for (i = 0; i < npages; i++)
		vhcad_pbl_set(&buf->pbl, i,
			      buf->dma + (u64)i * VHCA_QUEUE_PAGE_SIZE);
	return 0;
}

/*
 * The 4-byte, aligned record a user queue shares with the device (a CQ's
 * doorbell record, an SRQ's consumer record), pinned at @addr: *@dma is
 * its bus address, within the first (only) page pinned.
 */
int vhcad_record_pin(struct vhca_dev *dev, u64 addr, struct ib_umem **umem,
		     dma_addr_t *dma)
{
	struct ib_umem *u;

	u = ib_umem_get(&dev->ibdev, addr, sizeof(u32), IB_ACCESS_LOCAL_WRITE);
	if (IS_ERR(u))
		return PTR_ERR(u);
	*umem = u;
	*dma = sg_dma_address(u->sgt_append.sgt.sgl) + ib_umem_offset(u);
	return 0;
}

/*
 * A ring the provider allocated at @addr: page aligned, so each 4 KiB block
 * of the pinned memory is one page of the ring.
 */
int vhcad_queue_buf_pin(struct vhca_dev *dev, struct vhca_queue_buf *buf,
			u64 addr, size_t size)
{
	struct ib_block_iter biter;
	u32 i = 0;
	int err;

	memset(buf, 0, sizeof(*buf));
	if (!IS_ALIGNED(addr, VHCA_QUEUE_PAGE_SIZE))
		return -EINVAL;

	buf->size = size;
	buf->umem = ib_umem_get(&dev->ibdev, addr, size,
				IB_ACCESS_LOCAL_WRITE);
	if (IS_ERR(buf->umem)) {
		err = PTR_ERR(buf->umem);
		buf->umem = NULL;
		return err;
	}

	err = vhcad_pbl_alloc(dev, &buf->pbl,
			      ib_umem_num_dma_blocks(buf->umem,
						     VHCA_QUEUE_PAGE_SIZE),
			      false);
	if (err) {
		ib_umem_release(buf->umem);
		buf->umem = NULL;
		return err;
	}
	rdma_umem_for_each_dma_block(buf->umem, &biter, VHCA_QUEUE_PAGE_SIZE)
		vhcad_pbl_set(&buf->pbl, i++, rdma_block_iter_dma_address(&biter));
	return 0;
}

/*
 * The device reads a queue's page list whole at CREATE and keeps it
 * (docs/specs/vhca.rst, "RDMA resources"): once the queue exists, the list
 * can go.
 */
void vhcad_queue_buf_created(struct vhca_dev *dev, struct vhca_queue_buf *buf)
{
	vhcad_pbl_free(dev, &buf->pbl);
}

void vhcad_queue_buf_free(struct vhca_dev *dev, struct vhca_queue_buf *buf)
{
	if (buf->kva)
		dma_free_coherent(&dev->pdev->dev, buf->size, buf->kva,
				  buf->dma);
	ib_umem_release(buf->umem);
	vhcad_pbl_free(dev, &buf->pbl);
	memset(buf, 0, sizeof(*buf));
}
