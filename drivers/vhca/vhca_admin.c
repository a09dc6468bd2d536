// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Admin queue (docs/specs/vhca.rst, "Admin queue"): a ring of 64-byte
 * commands in coherent memory that the device executes in order.  The
 * device writes each command's output with done = 1 last and announces it
 * with a CMD_DONE event on the async EQ, whose interrupt wakes the waiter
 * of that slot.  Commands are issued one at a time.
 */

#include <linux/dma-mapping.h>

#include "vhca.h"

#define VHCA_ADMQ_ENTRIES	BIT(VHCA_ADMQ_LOG_SIZE)

/*
 * Buffer for commands that exchange data by DMA: QUERY_DEVICE's answer
 * (256 bytes) and the mailboxes of the RDMA resource commands.
 */
#define VHCA_ADMIN_DMA_BUF_SIZE	PAGE_SIZE
static_assert(sizeof(struct vhca_device_attr) <= VHCA_ADMIN_DMA_BUF_SIZE);
static_assert(sizeof(struct vhca_qp_attr) <= VHCA_ADMIN_DMA_BUF_SIZE);
static_assert(sizeof(struct vhca_rx_filter) <= VHCA_ADMIN_DMA_BUF_SIZE);
static_assert(sizeof(struct vhca_mad_ifc) <= VHCA_ADMIN_DMA_BUF_SIZE);

static int vhcad_admin_status_to_errno(u8 status)
{
	switch (status) {
	case VHCA_ST_OK:
		return 0;
	case VHCA_ST_BAD_OPCODE:
		return -EOPNOTSUPP;
	case VHCA_ST_BAD_PARAM:
	case VHCA_ST_BAD_STATE:
		return -EINVAL;
	case VHCA_ST_BAD_INDEX:
		return -ERANGE;
	case VHCA_ST_BAD_ADDR:
		return -EFAULT;
	case VHCA_ST_NO_RESOURCES:
		return -ENOSPC;
	case VHCA_ST_BUSY:
		return -EBUSY;
	default:
		return -EIO;
	}
}

int vhcad_admin_create(struct vhca_dev *dev)
{
	struct vhca_admin_queue *admq = &dev->admq;
	struct device *dma_dev = &dev->pdev->dev;
	unsigned int i;

	admq->slots = kcalloc(VHCA_ADMQ_ENTRIES, sizeof(*admq->slots),
			      GFP_KERNEL);
	if (!admq->slots)
		return -ENOMEM;
	for (i = 0; i < VHCA_ADMQ_ENTRIES; i++)
		init_completion(&admq->slots[i].done);

	admq->ring = dma_alloc_coherent(dma_dev,
					VHCA_ADMQ_ENTRIES * sizeof(*admq->ring),
					&admq->ring_dma, GFP_KERNEL);
	if (!admq->ring)
		goto err_free_slots;

	admq->dma_buf = dma_alloc_coherent(dma_dev, VHCA_ADMIN_DMA_BUF_SIZE,
					   &admq->dma_buf_dma, GFP_KERNEL);
	if (!admq->dma_buf)
		goto err_free_ring;

	spin_lock_init(&admq->slot_lock);
	mutex_init(&admq->lock);
	admq->pi = 0;
	admq->next_token = 1;

	vhcad_reg_write64(dev, VHCA_REG_ADMQ_BASE_LO, admq->ring_dma);
	vhcad_reg_write(dev, VHCA_REG_ADMQ_LOG_SIZE, VHCA_ADMQ_LOG_SIZE);
	return 0;

err_free_ring:
	dma_free_coherent(dma_dev, VHCA_ADMQ_ENTRIES * sizeof(*admq->ring),
			  admq->ring, admq->ring_dma);
err_free_slots:
	kfree(admq->slots);
	return -ENOMEM;
}

/* Called once the device is reset: it no longer reads or writes the ring. */
void vhcad_admin_destroy(struct vhca_dev *dev)
{
	struct vhca_admin_queue *admq = &dev->admq;
	struct device *dma_dev = &dev->pdev->dev;

	mutex_destroy(&admq->lock);
	dma_free_coherent(dma_dev, VHCA_ADMIN_DMA_BUF_SIZE, admq->dma_buf,
			  admq->dma_buf_dma);
	dma_free_coherent(dma_dev, VHCA_ADMQ_ENTRIES * sizeof(*admq->ring),
			  admq->ring, admq->ring_dma);
	kfree(admq->slots);
}

/* CMD_DONE event, from the async EQ interrupt. */
void vhcad_admin_complete(struct vhca_dev *dev, u32 slot_index, u32 token)
{
	struct vhca_admin_queue *admq = &dev->admq;
	struct vhca_admin_slot *slot;
	bool expected = false;

	if (slot_index >= VHCA_ADMQ_ENTRIES) {
		dev_warn_ratelimited(&dev->pdev->dev,
				     "CMD_DONE event for slot %u of a %lu-entry admin queue, ignored\n",
				     slot_index, VHCA_ADMQ_ENTRIES);
		return;
	}

	slot = &admq->slots[slot_index];
	spin_lock(&admq->slot_lock);
	if (slot->waiting && slot->token == token) {
		complete(&slot->done);
		expected = true;
	}
	spin_unlock(&admq->slot_lock);

	/* A command that already timed out completes late: nobody waits. */
	if (!expected)
		dev_warn_ratelimited(&dev->pdev->dev,
				     "CMD_DONE event for slot %u token %u matches no waiting command, ignored\n",
				     slot_index, token);
}

static int vhcad_admin_submit(struct vhca_dev *dev, u16 opcode, const void *in,
			      size_t in_len, void *out, size_t out_len)
{
	struct vhca_admin_queue *admq = &dev->admq;
	u32 index = admq->pi & (VHCA_ADMQ_ENTRIES - 1);
	struct vhca_admin_slot *slot = &admq->slots[index];
	struct vhca_admin_cmd *cmd = &admq->ring[index];
	u32 token = admq->next_token++;
	unsigned long left;
	u8 status;
	int err;

	lockdep_assert_held(&admq->lock);

	memset(cmd, 0, sizeof(*cmd));
	cmd->opcode = cpu_to_le16(opcode);
	cmd->token = cpu_to_le32(token);
	if (in_len)
		memcpy(cmd->in, in, in_len);

	spin_lock_irq(&admq->slot_lock);
	reinit_completion(&slot->done);
	slot->token = token;
	slot->waiting = true;
	spin_unlock_irq(&admq->slot_lock);

	/* writel() orders the entry in memory before the doorbell. */
	admq->pi++;
	vhcad_reg_write(dev, VHCA_REG_ADMQ_PI, admq->pi);

	left = wait_for_completion_timeout(&slot->done,
					   msecs_to_jiffies(VHCA_ADMIN_TIMEOUT_MS));

	spin_lock_irq(&admq->slot_lock);
	slot->waiting = false;
	spin_unlock_irq(&admq->slot_lock);

	/*
	 * done is the authority: the device still completes the command when
	 * the AEQ overflowed and its CMD_DONE event was dropped.
	 */
	if (!READ_ONCE(cmd->done)) {
		if (left) {
			dev_err(&dev->pdev->dev,
				"admin command %s (0x%02x): CMD_DONE event for an entry that is not done\n",
				vhca_admin_opcode_name(opcode), opcode);
			return -EIO;
		}
		dev_err(&dev->pdev->dev,
			"admin command %s (0x%02x) timed out after %u ms\n",
			vhca_admin_opcode_name(opcode), opcode,
			VHCA_ADMIN_TIMEOUT_MS);
		return -ETIMEDOUT;
	}
	if (!left)
		dev_warn_ratelimited(&dev->pdev->dev,
				     "admin command %s completed without a CMD_DONE event\n",
				     vhca_admin_opcode_name(opcode));

	/* Read the output only after done, which the device writes last. */
	dma_rmb();
	status = READ_ONCE(cmd->status);
	err = vhcad_admin_status_to_errno(status);
	if (err) {
		dev_err_ratelimited(&dev->pdev->dev,
				    "admin command %s failed: status %s (0x%02x), syndrome 0x%x\n",
				    vhca_admin_opcode_name(opcode),
				    vhca_admin_status_name(status), status,
				    le32_to_cpu(cmd->syndrome));
		return err;
	}

	if (out_len)
		memcpy(out, cmd->out, out_len);
	return 0;
}

/**
 * vhcad_admin_exec - run one admin command and wait for it
 * @dev: the device
 * @opcode: enum vhca_admin_opcode
 * @in: command input, copied to the entry's in[] (rest zeroed)
 * @in_len: bytes at @in
 * @out: where to copy the entry's out[] on success, or NULL
 * @out_len: bytes to copy to @out
 *
 * Sleeps.  Logs one line on failure.
 *
 * Return: 0, the errno for the device's status, or -ETIMEDOUT.
 */
int vhcad_admin_exec(struct vhca_dev *dev, u16 opcode, const void *in,
		     size_t in_len, void *out, size_t out_len)
{
	struct vhca_admin_queue *admq = &dev->admq;
	int err;

	if (WARN_ON(in_len > sizeof_field(struct vhca_admin_cmd, in) ||
		    out_len > sizeof_field(struct vhca_admin_cmd, out)))
		return -EINVAL;

	mutex_lock(&admq->lock);
	err = vhcad_admin_submit(dev, opcode, in, in_len, out, out_len);
	mutex_unlock(&admq->lock);
	return err;
}

/**
 * vhcad_admin_exec_dma - run an admin command that returns data by DMA
 * @dev: the device
 * @opcode: enum vhca_admin_opcode taking a struct vhca_cmd_dma_in
 * @buf: where to copy what the device wrote
 * @len: bytes to copy to @buf
 *
 * The device writes into a buffer the admin queue owns for its lifetime,
 * so a command that times out can never write into freed memory.
 *
 * Return: as vhcad_admin_exec().
 */
int vhcad_admin_exec_dma(struct vhca_dev *dev, u16 opcode, void *buf,
			 size_t len)
{
	struct vhca_admin_queue *admq = &dev->admq;
	struct vhca_cmd_dma_in in = {
		.addr = cpu_to_le64(admq->dma_buf_dma),
		.len = cpu_to_le32(VHCA_ADMIN_DMA_BUF_SIZE),
	};
	int err;

	if (WARN_ON(len > VHCA_ADMIN_DMA_BUF_SIZE))
		return -EINVAL;

	mutex_lock(&admq->lock);
	memset(admq->dma_buf, 0, VHCA_ADMIN_DMA_BUF_SIZE);
	err = vhcad_admin_submit(dev, opcode, &in, sizeof(in), NULL, 0);
	if (!err)
		memcpy(buf, admq->dma_buf, len);
	mutex_unlock(&admq->lock);
	return err;
}

/**
 * vhcad_admin_exec_mbox - run an RDMA resource command with a mailbox
 * @dev: the device
 * @opcode: enum vhca_admin_opcode taking a mailbox (struct vhca_cmd_dma_in)
 * @mbox: the command's structure, in device byte order; on success it holds
 *	what the device left in the mailbox (MODIFY_QP and QUERY_QP write
 *	their output back)
 * @len: bytes at @mbox
 * @out: where to copy the entry's out[] on success, or NULL
 * @out_len: bytes to copy to @out
 *
 * The mailbox is the admin queue's own DMA buffer, as for
 * vhcad_admin_exec_dma(), so a late device write never lands in freed memory.
 *
 * Return: as vhcad_admin_exec().
 */
int vhcad_admin_exec_mbox(struct vhca_dev *dev, u16 opcode, void *mbox,
			  size_t len, void *out, size_t out_len)
{
	struct vhca_admin_queue *admq = &dev->admq;
	struct vhca_cmd_dma_in in = {
		.addr = cpu_to_le64(admq->dma_buf_dma),
		.len = cpu_to_le32(len),
	};
	int err;

	if (WARN_ON(len > VHCA_ADMIN_DMA_BUF_SIZE ||
		    out_len > sizeof_field(struct vhca_admin_cmd, out)))
		return -EINVAL;

	mutex_lock(&admq->lock);
	memcpy(admq->dma_buf, mbox, len);
	err = vhcad_admin_submit(dev, opcode, &in, sizeof(in), out, out_len);
	if (!err)
		memcpy(mbox, admq->dma_buf, len);
	mutex_unlock(&admq->lock);
	return err;
}
