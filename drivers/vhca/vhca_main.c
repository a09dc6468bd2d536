// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vhca PCI driver: bring the function up (BARs, MSI-X, reset, admin queue
 * and async EQ), then register its net_device and its ib_device; on an
 * InfiniBand port (VHCA_CAP_IB) the ib_device alone.
 */

#include <linux/etherdevice.h>
#include <linux/iopoll.h>
#include <linux/module.h>
#include <linux/unaligned.h>

#include "vhca.h"

MODULE_DESCRIPTION("vhca virtual RoCEv2 HCA driver");
MODULE_LICENSE("Dual BSD/GPL");

/* How long the device may take to report READY after CTRL.ENABLE. */
#define VHCA_ENABLE_TIMEOUT_US	100000

static const struct pci_device_id vhcad_pci_table[] = {
	{ PCI_DEVICE(VHCA_PCI_VENDOR_ID, VHCA_PCI_DEVICE_ID) },
	{ }
};
MODULE_DEVICE_TABLE(pci, vhcad_pci_table);

/* fw_version is major << 32 | minor << 16 | subminor. */
void vhcad_fw_version_str(struct vhca_dev *dev, char *str, size_t len)
{
	u64 fw = dev->attr.fw_version;

	snprintf(str, len, "%u.%u.%u", (u32)(fw >> 32), (u32)(fw >> 16) & 0xffff,
		 (u32)fw & 0xffff);
}

/* Returns the device to its power-on state; no DMA once this returns. */
static void vhcad_reset(struct vhca_dev *dev)
{
	vhcad_reg_write(dev, VHCA_REG_CTRL, VHCA_CTRL_RESET);
	/* Flush the posted write. */
	vhcad_reg_read(dev, VHCA_REG_STATUS);
}

/*
 * What lasts as long as the driver is bound to the function: its PCI
 * resources (device-managed) and the device instance on top of them.  A
 * PCI reset replaces the instance (vhcad_reset_prepare/vhcad_reset_done).
 */
struct vhca_pci {
	void __iomem *regs;	/* BAR0 */
	struct vhca_dev *dev;	/* NULL after a reset the device failed */
};

/* Enable the function and map BAR0, once per binding. */
static int vhcad_pci_init(struct pci_dev *pdev, struct vhca_pci *fn)
{
	struct device *d = &pdev->dev;
	int err;

	err = pcim_enable_device(pdev);
	if (err) {
		dev_err(d, "cannot enable the PCI device: %d\n", err);
		return err;
	}

	err = pcim_request_all_regions(pdev, DRV_MODULE_NAME);
	if (err) {
		dev_err(d, "cannot claim the PCI BARs: %d\n", err);
		return err;
	}

	if (!(pci_resource_flags(pdev, VHCA_BAR_CTRL) & IORESOURCE_MEM) ||
	    pci_resource_len(pdev, VHCA_BAR_CTRL) < VHCA_CTRL_BAR_SIZE ||
	    !(pci_resource_flags(pdev, VHCA_BAR_DOORBELL) & IORESOURCE_MEM)) {
		dev_err(d, "BAR0 or BAR2 is missing or too small\n");
		return -ENODEV;
	}

	fn->regs = pcim_iomap(pdev, VHCA_BAR_CTRL, VHCA_CTRL_BAR_SIZE);
	if (!fn->regs) {
		dev_err(d, "cannot map BAR0\n");
		return -ENOMEM;
	}

	err = dma_set_mask_and_coherent(d, DMA_BIT_MASK(64));
	if (err) {
		dev_err(d, "no usable 64-bit DMA: %d\n", err);
		return err;
	}

	pci_set_master(pdev);
	return 0;
}

/* Check that this is a device the driver knows. */
static int vhcad_check_device(struct vhca_dev *dev)
{
	struct pci_dev *pdev = dev->pdev;
	struct device *d = &pdev->dev;
	u32 magic, version;

	magic = vhcad_reg_read(dev, VHCA_REG_MAGIC);
	if (magic != VHCA_MAGIC) {
		dev_err(d, "MAGIC reads 0x%08x, not 0x%08x: not a vhca device\n",
			magic, VHCA_MAGIC);
		return -ENODEV;
	}

	version = vhcad_reg_read(dev, VHCA_REG_VERSION);
	if (version >> 16 != VHCA_VERSION_MAJOR) {
		dev_err(d, "device interface version %u.%u is not supported (driver: %u.x)\n",
			version >> 16, version & 0xffff, VHCA_VERSION_MAJOR);
		return -ENODEV;
	}

	dev->caps = vhcad_reg_read(dev, VHCA_REG_CAPS);
	/* An InfiniBand port comes alone: no Ethernet function, no RoCE. */
	if (dev->caps & VHCA_CAP_IB) {
		if (dev->caps != VHCA_CAP_IB) {
			dev_err(d, "device has an InfiniBand port and other functions (CAPS 0x%x)\n",
				dev->caps);
			return -ENODEV;
		}
	} else if (!(dev->caps & VHCA_CAP_ETH)) {
		dev_err(d, "device has no Ethernet function (CAPS 0x%x)\n",
			dev->caps);
		return -ENODEV;
	}

	dev->num_db_pages = vhcad_reg_read(dev, VHCA_REG_NUM_DB_PAGES);
	if ((u64)dev->num_db_pages * VHCA_DB_PAGE_SIZE >
	    pci_resource_len(pdev, VHCA_BAR_DOORBELL)) {
		dev_err(d, "BAR2 is smaller than its %u doorbell pages\n",
			dev->num_db_pages);
		return -ENODEV;
	}
	dev->db_bar_start = pci_resource_start(pdev, VHCA_BAR_DOORBELL);
	return 0;
}

static int vhcad_alloc_vectors(struct vhca_dev *dev)
{
	struct pci_dev *pdev = dev->pdev;
	u32 available, wanted;
	int nvec;

	available = vhcad_reg_read(dev, VHCA_REG_NUM_VECTORS);
	/* Async EQ and Ethernet, then one completion vector per CPU. */
	wanted = min_t(u32, available,
		       VHCA_VECTOR_FIRST_COMP + num_online_cpus());

	nvec = pci_alloc_irq_vectors(pdev, VHCA_MIN_VECTORS,
				     max_t(u32, wanted, VHCA_MIN_VECTORS),
				     PCI_IRQ_MSIX);
	if (nvec < 0) {
		dev_err(&pdev->dev,
			"cannot allocate %u MSI-X vectors (device has %u): %d\n",
			VHCA_MIN_VECTORS, available, nvec);
		return nvec;
	}

	dev->num_vectors = nvec;
	return 0;
}

static int vhcad_enable(struct vhca_dev *dev)
{
	u32 status;
	int err;

	vhcad_reg_write(dev, VHCA_REG_CTRL, VHCA_CTRL_ENABLE);
	err = readl_poll_timeout(dev->regs + VHCA_REG_STATUS, status,
				 status & VHCA_STATUS_READY, 10,
				 VHCA_ENABLE_TIMEOUT_US);
	if (err) {
		dev_err(&dev->pdev->dev,
			"device not ready after enable (STATUS 0x%x, ERROR %u)\n",
			status, vhcad_reg_read(dev, VHCA_REG_ERROR));
		return -EIO;
	}
	return 0;
}

/*
 * Reset the device (a previous driver may have left it running), then
 * start its admin queue and async event queue.
 */
static int vhcad_hw_init(struct vhca_dev *dev)
{
	int err;

	vhcad_reset(dev);

	err = vhcad_alloc_vectors(dev);
	if (err)
		return err;

	err = vhcad_aeq_create(dev);
	if (err)
		goto err_free_vectors;

	err = vhcad_admin_create(dev);
	if (err)
		goto err_destroy_aeq;

	err = vhcad_enable(dev);
	if (err)
		goto err_reset;
	return 0;

err_reset:
	vhcad_reset(dev);
	vhcad_admin_destroy(dev);
err_destroy_aeq:
	vhcad_aeq_destroy(dev);
err_free_vectors:
	pci_free_irq_vectors(dev->pdev);
	return err;
}

static void vhcad_hw_fini(struct vhca_dev *dev)
{
	vhcad_reset(dev);
	vhcad_admin_destroy(dev);
	vhcad_aeq_destroy(dev);
	pci_free_irq_vectors(dev->pdev);
}

/*
 * The spec has no register for the permanent MAC; QUERY_DEVICE gives the
 * node GUID, which is its EUI-64 (the MAC with ff:fe inserted in the middle
 * and the universal/local bit flipped).  Invert that mapping.
 */
static int vhcad_mac_from_node_guid(struct vhca_dev *dev, u64 guid, u8 *mac)
{
	u8 eui[8];

	put_unaligned_be64(guid, eui);
	mac[0] = eui[0] ^ 0x02;
	mac[1] = eui[1];
	mac[2] = eui[2];
	mac[3] = eui[5];
	mac[4] = eui[6];
	mac[5] = eui[7];

	if (eui[3] != 0xff || eui[4] != 0xfe || !is_valid_ether_addr(mac)) {
		dev_err(&dev->pdev->dev,
			"node GUID %016llx is not the EUI-64 of a unicast MAC\n",
			guid);
		return -EIO;
	}
	return 0;
}

static int vhcad_query_attributes(struct vhca_dev *dev)
{
	int err;

	err = vhcad_cmd_query_device(dev, &dev->attr);
	if (err)
		return err;

	/* An InfiniBand port has GUIDs but no MAC. */
	if (vhcad_is_ib(dev))
		return 0;
	return vhcad_mac_from_node_guid(dev, dev->attr.node_guid,
					dev->perm_addr);
}

/*
 * Bring the device up and register its net_device and ib_device: at probe
 * and again after a PCI reset.
 */
static int vhcad_dev_start(struct pci_dev *pdev, struct vhca_pci *fn)
{
	struct vhca_dev *dev;
	int err;

	dev = ib_alloc_device(vhca_dev, ibdev);
	if (!dev)
		return -ENOMEM;

	dev->pdev = pdev;
	dev->regs = fn->regs;
	spin_lock_init(&dev->counter_lock);
	vhcad_link_init(dev);

	err = vhcad_check_device(dev);
	if (err)
		goto err_dealloc;

	err = vhcad_hw_init(dev);
	if (err)
		goto err_dealloc;

	err = vhcad_query_attributes(dev);
	if (err)
		goto err_hw_fini;

	err = vhcad_cc_init(dev);
	if (err)
		goto err_hw_fini;

	if (!vhcad_is_ib(dev)) {
		err = vhcad_netdev_create(dev);
		if (err)
			goto err_cc_fini;
	}

	if (dev->caps & (VHCA_CAP_ROCE | VHCA_CAP_IB)) {
		err = vhcad_ib_register(dev);
		if (err)
			goto err_netdev_destroy;
	} else {
		dev_info(&pdev->dev, "device has no RoCE engine: Ethernet only\n");
	}

	fn->dev = dev;
	return 0;

err_netdev_destroy:
	if (!vhcad_is_ib(dev))
		vhcad_netdev_destroy(dev);
err_cc_fini:
	vhcad_cc_fini(dev);
err_hw_fini:
	vhcad_hw_fini(dev);
err_dealloc:
	vhcad_link_fini(dev);
	ib_dealloc_device(&dev->ibdev);
	return err;
}

/*
 * Unregister the ib_device and net_device and stop the device; no DMA
 * once this returns.  User contexts still open are disassociated by the
 * RDMA core: their processes get IB_EVENT_DEVICE_FATAL.
 */
static void vhcad_dev_stop(struct vhca_pci *fn)
{
	struct vhca_dev *dev = fn->dev;

	if (!dev)
		return;
	fn->dev = NULL;

	if (dev->caps & (VHCA_CAP_ROCE | VHCA_CAP_IB))
		vhcad_ib_unregister(dev);
	if (!vhcad_is_ib(dev))
		vhcad_netdev_destroy(dev);
	vhcad_cc_fini(dev);
	vhcad_hw_fini(dev);
	vhcad_link_fini(dev);
	ib_dealloc_device(&dev->ibdev);
}

static int vhcad_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct vhca_pci *fn;
	int err;

	fn = devm_kzalloc(&pdev->dev, sizeof(*fn), GFP_KERNEL);
	if (!fn)
		return -ENOMEM;
	pci_set_drvdata(pdev, fn);

	/* The PCI resources are device-managed: released on any failure. */
	err = vhcad_pci_init(pdev, fn);
	if (err)
		return err;

	return vhcad_dev_start(pdev, fn);
}

static void vhcad_remove(struct pci_dev *pdev)
{
	vhcad_dev_stop(pci_get_drvdata(pdev));
}

/*
 * A function reset (FLR or another method, through sysfs "reset" or
 * VFIO) returns the device to its power-on state and loses every queue
 * and resource.  Take the device down first, as a remove would, while it
 * still answers the admin commands that destroy the resources; bring it
 * up afresh once the PCI core has restored the config space.  The
 * ib_device and net_device are new ones: users reopen the device and
 * configure the interface again, as after a rebind.
 */
static void vhcad_reset_prepare(struct pci_dev *pdev)
{
	dev_info(&pdev->dev, "function reset: taking the device down\n");
	vhcad_dev_stop(pci_get_drvdata(pdev));
}

static void vhcad_reset_done(struct pci_dev *pdev)
{
	struct vhca_pci *fn = pci_get_drvdata(pdev);
	int err;

	err = vhcad_dev_start(pdev, fn);
	if (err)
		dev_err(&pdev->dev,
			"device did not come back after the function reset: %d; rebind the driver\n",
			err);
}

static const struct pci_error_handlers vhcad_err_handlers = {
	.reset_prepare = vhcad_reset_prepare,
	.reset_done = vhcad_reset_done,
};

static struct pci_driver vhcad_pci_driver = {
	.name = DRV_MODULE_NAME,
	.id_table = vhcad_pci_table,
	.probe = vhcad_probe,
	.remove = vhcad_remove,
	.err_handler = &vhcad_err_handlers,
};

module_pci_driver(vhcad_pci_driver);
