// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * User contexts (docs/specs/vhca.rst, "Doorbell pages"): each one owns a
 * 4 KiB doorbell page in BAR2 that the device hands out with ALLOC_UCTX and
 * the driver maps into the process through an rdma_user_mmap_entry.
 */

#include "vhca-abi.h"

#include "vhca.h"
#include "vhca_verbs.h"

struct vhca_user_mmap_entry {
	struct rdma_user_mmap_entry rdma_entry;
	phys_addr_t address;
};

static struct vhca_ucontext *to_vhca_ucontext(struct ib_ucontext *ibucontext)
{
	return container_of(ibucontext, struct vhca_ucontext, ibucontext);
}

static struct vhca_user_mmap_entry *
to_vhca_mmap_entry(struct rdma_user_mmap_entry *rdma_entry)
{
	return container_of(rdma_entry, struct vhca_user_mmap_entry, rdma_entry);
}

int vhcad_alloc_ucontext(struct ib_ucontext *ibucontext, struct ib_udata *udata)
{
	struct vhca_ucontext *uctx = to_vhca_ucontext(ibucontext);
	struct vhca_dev *dev = to_vhca_dev(ibucontext->device);
	struct vhca_alloc_ucontext_resp resp = {};
	struct vhca_user_mmap_entry *entry;
	int err;

	/* No request is defined; refuse input we would silently ignore. */
	if (udata->inlen && !ib_is_udata_cleared(udata, 0, udata->inlen))
		return -EINVAL;

	/*
	 * A page is the unit of protection: with pages larger than a
	 * doorbell page, one mapping would reach other contexts' doorbells.
	 */
	if (PAGE_SIZE != VHCA_DB_PAGE_SIZE)
		return -EOPNOTSUPP;

	err = vhcad_cmd_alloc_uctx(dev, &uctx->db_page);
	if (err)
		return err;

	if (uctx->db_page >= dev->num_db_pages) {
		dev_err_ratelimited(&dev->pdev->dev,
				    "ALLOC_UCTX returned doorbell page %u of %u\n",
				    uctx->db_page, dev->num_db_pages);
		return -EIO;
	}

	entry = kzalloc(sizeof(*entry), GFP_KERNEL);
	if (!entry) {
		err = -ENOMEM;
		goto err_dealloc;
	}
	entry->address = dev->db_bar_start +
			 (phys_addr_t)uctx->db_page * VHCA_DB_PAGE_SIZE;

	err = rdma_user_mmap_entry_insert(ibucontext, &entry->rdma_entry,
					  VHCA_DB_PAGE_SIZE);
	if (err) {
		kfree(entry);
		goto err_dealloc;
	}
	uctx->db_entry = &entry->rdma_entry;

	resp.db_page = uctx->db_page;
	resp.db_page_size = VHCA_DB_PAGE_SIZE;
	resp.db_mmap_offset = rdma_user_mmap_get_offset(uctx->db_entry);
	err = ib_copy_to_udata(udata, &resp, min(sizeof(resp), udata->outlen));
	if (err)
		goto err_remove_entry;
	return 0;

err_remove_entry:
	rdma_user_mmap_entry_remove(uctx->db_entry);
err_dealloc:
	vhcad_cmd_dealloc_uctx(dev, uctx->db_page);
	return err;
}

/*
 * Called once every mapping of the context is gone, so the page can go
 * back to the device for the next context.
 */
void vhcad_dealloc_ucontext(struct ib_ucontext *ibucontext)
{
	struct vhca_ucontext *uctx = to_vhca_ucontext(ibucontext);

	rdma_user_mmap_entry_remove(uctx->db_entry);
	vhcad_cmd_dealloc_uctx(to_vhca_dev(ibucontext->device), uctx->db_page);
}

/*
 * The device is going away (rmmod, unbind, PCI reset) while the process
 * still holds the context.  Before this the RDMA core has zapped every
 * mapping made with rdma_user_mmap_io() (the doorbell page: later
 * accesses land in a zero page, not in BAR2), and after it the core
 * destroys the context's QPs, CQs and MRs, unpinning their user rings,
 * and reports IB_EVENT_DEVICE_FATAL to the process.  The user rings are
 * the process's own memory: nothing else of the device is mapped, so
 * there is nothing left to revoke here (as with mlx5).  Having this
 * callback is what lets the core unregister the device without waiting
 * for the process to close its context.
 */
void vhcad_disassociate_ucontext(struct ib_ucontext *ibucontext)
{
}

int vhcad_mmap(struct ib_ucontext *ibucontext, struct vm_area_struct *vma)
{
	struct rdma_user_mmap_entry *rdma_entry;
	struct vhca_user_mmap_entry *entry;
	int err;

	/* Checks the offset and that the length is exactly the entry's. */
	rdma_entry = rdma_user_mmap_entry_get(ibucontext, vma);
	if (!rdma_entry)
		return -EINVAL;
	entry = to_vhca_mmap_entry(rdma_entry);

	/* Doorbells must reach the device in order and at once: uncached. */
	err = rdma_user_mmap_io(ibucontext, vma, PHYS_PFN(entry->address),
				rdma_entry->npages * PAGE_SIZE,
				pgprot_noncached(vma->vm_page_prot),
				rdma_entry);
	rdma_user_mmap_entry_put(rdma_entry);
	return err;
}

void vhcad_mmap_free(struct rdma_user_mmap_entry *rdma_entry)
{
	kfree(to_vhca_mmap_entry(rdma_entry));
}
