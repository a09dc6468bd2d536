// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Completion event queues (docs/specs/vhca.rst, "Event and completion
 * queues"): one per completion vector, MSI-X vectors 2 and up.  Each
 * COMPLETION event names an armed CQ whose consumer gets its comp_handler
 * called; the EQ is re-armed through its EQ_DB register in BAR0.
 */

#include <linux/log2.h>

#include "vhca.h"
#include "vhca_verbs.h"

/*
 * A CQ has at most one COMPLETION event outstanding (arming asks for one),
 * so an EQ with an entry per CQ cannot overflow.  Bounded to keep a vector's
 * ring at 64 KiB; past that a lost event costs a wakeup, not a completion.
 */
#define VHCA_CEQ_MIN_LOG_SIZE	6
#define VHCA_CEQ_MAX_LOG_SIZE	12

static const struct vhca_eqe *vhcad_ceq_peek(const struct vhca_ceq *eq)
{
	u32 mask = BIT(eq->log_size) - 1;
	const struct vhca_eqe *entry =
		(const struct vhca_eqe *)eq->buf.kva + (eq->ci & mask);
	u8 owner = ((eq->ci >> eq->log_size) & 1) ^ 1;

	if ((READ_ONCE(entry->owner) & 1) != owner)
		return NULL;
	return entry;
}

static void vhcad_ceq_handle(struct vhca_dev *dev, const struct vhca_eqe *eqe)
{
	u32 cqn = le32_to_cpu(eqe->data[0]);
	struct vhca_cq *cq;

	if (eqe->type != VHCA_EQE_COMPLETION) {
		dev_warn_ratelimited(&dev->pdev->dev,
				     "event type %u on a completion EQ, ignored\n",
				     eqe->type);
		return;
	}

	/* destroy_cq erases the CQ, then waits for this handler to finish. */
	cq = xa_load(&dev->cqs, cqn);
	if (!cq) {
		dev_warn_ratelimited(&dev->pdev->dev,
				     "completion event for CQ %u, which does not exist\n",
				     cqn);
		return;
	}
	if (cq->ibcq.comp_handler)
		cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
}

static irqreturn_t vhcad_ceq_irq(int irq, void *data)
{
	struct vhca_ceq *eq = data;
	struct vhca_dev *dev = eq->dev;
	unsigned int budget = 2 * BIT(eq->log_size);
	const struct vhca_eqe *entry;
	struct vhca_eqe eqe;

	for (;;) {
		while (budget && (entry = vhcad_ceq_peek(eq))) {
			/* Read the entry only after its owner byte. */
			dma_rmb();
			eqe = *entry;
			eq->ci++;
			vhcad_ceq_handle(dev, &eqe);
			budget--;
		}

		vhcad_reg_write(dev, VHCA_REG_EQ_DB(eq->eqn),
				(eq->ci & VHCA_EQ_DB_CI_MASK) | VHCA_EQ_DB_ARM);

		/* As for the async EQ: an event just before the arm. */
		if (!budget || !vhcad_ceq_peek(eq))
			break;
	}

	return IRQ_HANDLED;
}

static int vhcad_ceq_create(struct vhca_dev *dev, struct vhca_ceq *eq,
			    unsigned int index, u8 log_size)
{
	struct pci_dev *pdev = dev->pdev;
	u32 vector = VHCA_VECTOR_FIRST_COMP + index;
	struct vhca_eq_create create = {};
	int err;

	eq->dev = dev;
	eq->ci = 0;
	eq->log_size = log_size;
	eq->irq = pci_irq_vector(pdev, vector);
	snprintf(eq->irq_name, sizeof(eq->irq_name), "vhca-comp%u@pci:%s",
		 index, pci_name(pdev));

	err = vhcad_queue_buf_alloc(dev, &eq->buf,
				    BIT(log_size) * sizeof(struct vhca_eqe));
	if (err)
		return err;

	/* The device may interrupt as soon as the EQ exists. */
	err = request_irq(eq->irq, vhcad_ceq_irq, 0, eq->irq_name, eq);
	if (err) {
		dev_err(&pdev->dev, "cannot request completion interrupt %u: %d\n",
			index, err);
		goto err_free_buf;
	}

	create.pbl_addr = cpu_to_le64(vhcad_pbl_addr(&eq->buf.pbl));
	create.npages = cpu_to_le32(eq->buf.pbl.npages);
	create.log_size = log_size;
	create.vector = cpu_to_le32(vector);
	err = vhcad_cmd_create_eq(dev, &create, &eq->eqn);
	if (err)
		goto err_free_irq;
	if (eq->eqn > VHCA_MAX_COMP_EQS) {
		dev_err(&pdev->dev, "CREATE_EQ returned EQ %u, above %u\n",
			eq->eqn, VHCA_MAX_COMP_EQS);
		vhcad_cmd_destroy(dev, VHCA_CMD_DESTROY_EQ, eq->eqn);
		err = -EIO;
		goto err_free_irq;
	}
	vhcad_queue_buf_created(dev, &eq->buf);
	return 0;

err_free_irq:
	free_irq(eq->irq, eq);
err_free_buf:
	vhcad_queue_buf_free(dev, &eq->buf);
	return err;
}

static void vhcad_ceq_destroy(struct vhca_dev *dev, struct vhca_ceq *eq)
{
	/* Every CQ is gone: the device posts nothing more to this EQ. */
	vhcad_cmd_destroy(dev, VHCA_CMD_DESTROY_EQ, eq->eqn);
	free_irq(eq->irq, eq);
	vhcad_queue_buf_free(dev, &eq->buf);
}

/* One completion EQ for each of the first @count completion vectors. */
int vhcad_ceqs_create(struct vhca_dev *dev, unsigned int count)
{
	u8 log_size = clamp_t(u32, order_base_2(dev->attr.max_cq + 1),
			      VHCA_CEQ_MIN_LOG_SIZE, VHCA_CEQ_MAX_LOG_SIZE);
	unsigned int i;
	int err;

	dev->ceqs = kcalloc(count, sizeof(*dev->ceqs), GFP_KERNEL);
	if (!dev->ceqs)
		return -ENOMEM;

	for (i = 0; i < count; i++) {
		err = vhcad_ceq_create(dev, &dev->ceqs[i], i, log_size);
		if (err)
			goto err_destroy;
	}
	dev->num_ceqs = count;
	return 0;

err_destroy:
	while (i--)
		vhcad_ceq_destroy(dev, &dev->ceqs[i]);
	kfree(dev->ceqs);
	dev->ceqs = NULL;
	return err;
}

void vhcad_ceqs_destroy(struct vhca_dev *dev)
{
	unsigned int i;

	for (i = 0; i < dev->num_ceqs; i++)
		vhcad_ceq_destroy(dev, &dev->ceqs[i]);
	kfree(dev->ceqs);
	dev->ceqs = NULL;
	dev->num_ceqs = 0;
}
