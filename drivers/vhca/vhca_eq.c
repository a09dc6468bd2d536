// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Async event queue, EQ 0 on MSI-X vector 0 (docs/specs/vhca.rst, "Async
 * event queue"): CMD_DONE events wake admin commands, PORT_CHANGE and
 * (IB port) PORT_MGMT events schedule the link work (vhca_link.c),
 * CQ_ERROR, QP_EVENT and SRQ_EVENT events go to the consumers of those
 * objects.
 */

#include <linux/dma-mapping.h>

#include "vhca.h"

#define VHCA_AEQ_ENTRIES	BIT(VHCA_AEQ_LOG_SIZE)
#define VHCA_AEQ_RING_SIZE	(VHCA_AEQ_ENTRIES * sizeof(struct vhca_eqe))

/*
 * The next entry, if the device has written it.  The device writes the
 * owner byte of each entry last, with the parity of its pass over the ring:
 * 1 on the first pass, 0 on the second, and so on.
 */
static const struct vhca_eqe *vhcad_aeq_peek(const struct vhca_eq *eq)
{
	const struct vhca_eqe *entry = &eq->ring[eq->ci & (VHCA_AEQ_ENTRIES - 1)];
	u8 owner = ((eq->ci >> VHCA_AEQ_LOG_SIZE) & 1) ^ 1;

	if ((READ_ONCE(entry->owner) & 1) != owner)
		return NULL;
	return entry;
}

static void vhcad_aeq_handle(struct vhca_dev *dev, const struct vhca_eqe *eqe)
{
	switch (eqe->type) {
	case VHCA_EQE_CMD_DONE:
		vhcad_admin_complete(dev, le32_to_cpu(eqe->data[0]),
				     le32_to_cpu(eqe->data[1]));
		break;
	case VHCA_EQE_PORT_CHANGE:
		/* STATUS.LINK_UP is read in process context. */
		schedule_work(&dev->link_work);
		break;
	case VHCA_EQE_PORT_MGMT:
		vhcad_link_port_mgmt(dev, eqe->subtype);
		break;
	case VHCA_EQE_CQ_ERROR:
		vhcad_ib_cq_event(dev, le32_to_cpu(eqe->data[0]));
		break;
	case VHCA_EQE_QP_EVENT:
		vhcad_ib_qp_event(dev, le32_to_cpu(eqe->data[0]),
				  eqe->subtype);
		break;
	case VHCA_EQE_SRQ_EVENT:
		vhcad_ib_srq_event(dev, le32_to_cpu(eqe->data[0]),
				   eqe->subtype);
		break;
	default:
		dev_warn_ratelimited(&dev->pdev->dev,
				     "unknown async event type %u, ignored\n",
				     eqe->type);
		break;
	}
}

static irqreturn_t vhcad_aeq_irq(int irq, void *data)
{
	struct vhca_dev *dev = data;
	struct vhca_eq *eq = &dev->aeq;
	/* Bounds the time spent here if the device keeps producing. */
	unsigned int budget = 2 * VHCA_AEQ_ENTRIES;
	const struct vhca_eqe *entry;
	struct vhca_eqe eqe;

	for (;;) {
		while (budget && (entry = vhcad_aeq_peek(eq))) {
			/* Read the entry only after its owner byte. */
			dma_rmb();
			eqe = *entry;
			eq->ci++;
			vhcad_aeq_handle(dev, &eqe);
			budget--;
		}

		vhcad_reg_write(dev, VHCA_REG_AEQ_DB,
				(eq->ci & VHCA_EQ_DB_CI_MASK) | VHCA_EQ_DB_ARM);

		/*
		 * The device interrupts only for events it writes while the EQ
		 * is armed: one written just before the arm needs another look.
		 */
		if (!budget || !vhcad_aeq_peek(eq))
			break;
	}

	return IRQ_HANDLED;
}

/*
 * Allocate the ring, program its registers and install the interrupt
 * handler.  CTRL.ENABLE, written later, starts the EQ and arms it.
 */
int vhcad_aeq_create(struct vhca_dev *dev)
{
	struct vhca_eq *eq = &dev->aeq;
	struct pci_dev *pdev = dev->pdev;
	int err;

	eq->ring = dma_alloc_coherent(&pdev->dev, VHCA_AEQ_RING_SIZE,
				      &eq->ring_dma, GFP_KERNEL);
	if (!eq->ring)
		return -ENOMEM;
	eq->ci = 0;

	snprintf(eq->irq_name, sizeof(eq->irq_name), "vhca-async@pci:%s",
		 pci_name(pdev));
	err = request_irq(pci_irq_vector(pdev, VHCA_VECTOR_ASYNC),
			  vhcad_aeq_irq, 0, eq->irq_name, dev);
	if (err) {
		dev_err(&pdev->dev, "cannot request the async event interrupt: %d\n",
			err);
		dma_free_coherent(&pdev->dev, VHCA_AEQ_RING_SIZE, eq->ring,
				  eq->ring_dma);
		return err;
	}

	vhcad_reg_write64(dev, VHCA_REG_AEQ_BASE_LO, eq->ring_dma);
	vhcad_reg_write(dev, VHCA_REG_AEQ_LOG_SIZE, VHCA_AEQ_LOG_SIZE);
	return 0;
}

/* Called once the device is reset: no more events or interrupts. */
void vhcad_aeq_destroy(struct vhca_dev *dev)
{
	struct vhca_eq *eq = &dev->aeq;
	struct pci_dev *pdev = dev->pdev;

	free_irq(pci_irq_vector(pdev, VHCA_VECTOR_ASYNC), dev);
	dma_free_coherent(&pdev->dev, VHCA_AEQ_RING_SIZE, eq->ring,
			  eq->ring_dma);
}
