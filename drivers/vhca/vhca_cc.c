// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * RoCE congestion control's knobs and counters (docs/specs/vhca.rst,
 * "Congestion control"): a devlink instance per Ethernet device whose
 * runtime parameters are the device's SET_CC configuration, and the
 * congestion counters QUERY_CC returns, for the RDMA port's hw_counters
 * and ethtool -S.
 *
 *   devlink dev param set pci/0000:00:03.0 name roce_ecn_tx value true \
 *           cmode runtime
 *   devlink dev param set pci/0000:00:03.0 name rp_time_reset value 300 \
 *           cmode runtime
 *
 * devlink is the kernel's place for a device's own configuration (the
 * issue asks for no private files; mlx5 keeps the same settings in
 * sysfs ecn/ and debugfs cc_params/).  The parameters carry mlx5's names
 * and units (vhca_cc_param_name()); the three switches are booleans:
 * roce_ecn_tx (send RoCE ECN-capable), roce_np_enable (answer CE marks
 * with CNPs), roce_rp_enable (DCQCN: react to CNPs).  The device checks
 * each value's range; a refused set changes nothing and says which
 * parameter the device refused.
 *
 * The InfiniBand port has no RoCE congestion control: no devlink
 * parameters and no counters there.
 */

#include <net/devlink.h>

#include "vhca.h"

enum {
	VHCA_DEVLINK_PARAM_ECN_TX = DEVLINK_PARAM_GENERIC_ID_MAX + 1,
	VHCA_DEVLINK_PARAM_NP_ENABLE,
	VHCA_DEVLINK_PARAM_RP_ENABLE,
	/* Then one per enum vhca_cc_param, in its order. */
	VHCA_DEVLINK_PARAM_CC_FIRST,
};

#define VHCA_DEVLINK_FLAGS	3
#define VHCA_DEVLINK_PARAMS	(VHCA_DEVLINK_FLAGS + VHCA_CC_PARAM_MAX)

static const struct {
	const char *name;
	u32 flag;
} vhcad_cc_flags[VHCA_DEVLINK_FLAGS] = {
	{ "roce_ecn_tx", VHCA_CC_ECN_TX },
	{ "roce_np_enable", VHCA_CC_NP },
	{ "roce_rp_enable", VHCA_CC_RP },
};

struct vhca_devlink {
	struct vhca_dev *dev;
};

static struct vhca_dev *vhcad_devlink_dev(struct devlink *devlink)
{
	struct vhca_devlink *priv = devlink_priv(devlink);

	return priv->dev;
}

int vhcad_cmd_query_cc(struct vhca_dev *dev, struct vhca_cc_query *query)
{
	memset(query, 0, sizeof(*query));
	return vhcad_admin_exec_mbox(dev, VHCA_CMD_QUERY_CC, query,
				     sizeof(*query), NULL, 0);
}

/*
 * The VHCA_CC_STATS_NUM counters into @values: congestion's in enum
 * vhca_cc_counter order, then PFC's, counter by counter, priority 0..7
 * in each (vhcad_cc_stat_name()).
 */
int vhcad_cc_read_counters(struct vhca_dev *dev, u64 *values)
{
	struct vhca_cc_query *query;
	unsigned int i;
	int err;

	query = kmalloc(sizeof(*query), GFP_KERNEL);
	if (!query)
		return -ENOMEM;
	err = vhcad_cmd_query_cc(dev, query);
	for (i = 0; i < VHCA_CC_CNT_MAX; i++)
		values[i] = err ? 0 : le64_to_cpu(query->counters[i]);
	for (i = 0; i < VHCA_PFC_STATS_NUM; i++)
		values[VHCA_CC_CNT_MAX + i] = err ? 0 :
			le64_to_cpu(query->pfc[i / VHCA_PFC_PRIORITIES]
					      [i % VHCA_PFC_PRIORITIES]);
	kfree(query);
	return err;
}

/* mlx5's names: np_cnp_sent ..., then rx_prio0_pause ... */
const char *vhcad_cc_stat_name(struct vhca_dev *dev, unsigned int i)
{
	if (i < VHCA_CC_CNT_MAX)
		return vhca_cc_counter_name(i);
	return dev->pfc_names[(i - VHCA_CC_CNT_MAX) % VHCA_PFC_STATS_NUM];
}

/*
 * PFC frames sent (requests) and received (indications) per priority:
 * two rows of the counters vhcad_cc_read_counters() reads.
 */
int vhcad_cc_query_pfc(struct vhca_dev *dev, u64 *tx_pause, u64 *rx_pause)
{
	u64 values[VHCA_CC_STATS_NUM];
	const u64 *pfc = &values[VHCA_CC_CNT_MAX];
	int err;

	err = vhcad_cc_read_counters(dev, values);
	memcpy(tx_pause, &pfc[VHCA_PFC_CNT_TX_PAUSE * VHCA_PFC_PRIORITIES],
	       VHCA_PFC_PRIORITIES * sizeof(*tx_pause));
	memcpy(rx_pause, &pfc[VHCA_PFC_CNT_RX_PAUSE * VHCA_PFC_PRIORITIES],
	       VHCA_PFC_PRIORITIES * sizeof(*rx_pause));
	return err;
}

static int vhcad_cc_param_get(struct devlink *devlink, u32 id,
			      struct devlink_param_gset_ctx *ctx)
{
	struct vhca_dev *dev = vhcad_devlink_dev(devlink);

	mutex_lock(&dev->cc_lock);
	if (id < VHCA_DEVLINK_PARAM_CC_FIRST)
		ctx->val.vbool = le32_to_cpu(dev->cc.flags) &
			vhcad_cc_flags[id - VHCA_DEVLINK_PARAM_ECN_TX].flag;
	else
		ctx->val.vu32 = le32_to_cpu(dev->cc.params[id -
						VHCA_DEVLINK_PARAM_CC_FIRST]);
	mutex_unlock(&dev->cc_lock);
	return 0;
}

/* SET_CC with one value changed; the cached copy only if it took. */
static int vhcad_cc_param_set(struct devlink *devlink, u32 id,
			      struct devlink_param_gset_ctx *ctx,
			      struct netlink_ext_ack *extack)
{
	struct vhca_dev *dev = vhcad_devlink_dev(devlink);
	struct vhca_cc_config *want;
	u32 flags;
	int err;

	want = kmalloc(sizeof(*want), GFP_KERNEL);
	if (!want)
		return -ENOMEM;

	mutex_lock(&dev->cc_lock);
	*want = dev->cc;
	if (id < VHCA_DEVLINK_PARAM_CC_FIRST) {
		flags = le32_to_cpu(want->flags) &
			~vhcad_cc_flags[id - VHCA_DEVLINK_PARAM_ECN_TX].flag;
		if (ctx->val.vbool)
			flags |= vhcad_cc_flags[id -
						VHCA_DEVLINK_PARAM_ECN_TX].flag;
		want->flags = cpu_to_le32(flags);
	} else {
		want->params[id - VHCA_DEVLINK_PARAM_CC_FIRST] =
			cpu_to_le32(ctx->val.vu32);
	}
	err = vhcad_admin_exec_mbox(dev, VHCA_CMD_SET_CC, want, sizeof(*want),
				    NULL, 0);
	if (!err)
		dev->cc = *want;
	mutex_unlock(&dev->cc_lock);
	kfree(want);

	if (err == -EINVAL)
		NL_SET_ERR_MSG_MOD(extack,
				   "the device refused the value: out of the parameter's range (docs/specs/vhca.rst, Congestion control)");
	return err;
}

/*
 * SET_CC with PFC on for the priorities in @enable, the rest of the
 * configuration as it is; the cached copy only if the device took it.
 */
int vhcad_cc_set_pfc(struct vhca_dev *dev, u8 enable)
{
	struct vhca_cc_config *want;
	int err;

	if (!dev->has_cc)
		return -EOPNOTSUPP;
	want = kmalloc(sizeof(*want), GFP_KERNEL);
	if (!want)
		return -ENOMEM;
	mutex_lock(&dev->cc_lock);
	*want = dev->cc;
	want->pfc_enable = enable;
	err = vhcad_admin_exec_mbox(dev, VHCA_CMD_SET_CC, want, sizeof(*want),
				    NULL, 0);
	if (!err)
		dev->cc = *want;
	mutex_unlock(&dev->cc_lock);
	kfree(want);
	return err;
}

static const struct devlink_ops vhcad_devlink_ops = {
};

static void vhcad_cc_fill_params(struct devlink_param *params)
{
	unsigned int i;

	for (i = 0; i < VHCA_DEVLINK_PARAMS; i++) {
		struct devlink_param *p = &params[i];

		p->supported_cmodes = BIT(DEVLINK_PARAM_CMODE_RUNTIME);
		p->get = vhcad_cc_param_get;
		p->set = vhcad_cc_param_set;
		if (i < VHCA_DEVLINK_FLAGS) {
			p->id = VHCA_DEVLINK_PARAM_ECN_TX + i;
			p->name = vhcad_cc_flags[i].name;
			p->type = DEVLINK_PARAM_TYPE_BOOL;
		} else {
			p->id = VHCA_DEVLINK_PARAM_CC_FIRST + i -
				VHCA_DEVLINK_FLAGS;
			p->name = vhca_cc_param_name(i - VHCA_DEVLINK_FLAGS);
			p->type = DEVLINK_PARAM_TYPE_U32;
		}
	}
}

/*
 * Read the device's configuration (every switch off, the parameters at
 * their defaults after a reset) and register the devlink instance with
 * its parameters.  A device without congestion control (an IB port, or
 * one that refuses QUERY_CC) gets none, and that is not an error.
 */
int vhcad_cc_init(struct vhca_dev *dev)
{
	struct vhca_devlink *priv;
	struct vhca_cc_query *query;
	struct devlink *devlink;
	unsigned int i;
	int err;

	mutex_init(&dev->cc_lock);
	if (vhcad_is_ib(dev))
		return 0;

	query = kmalloc(sizeof(*query), GFP_KERNEL);
	if (!query)
		return -ENOMEM;
	err = vhcad_cmd_query_cc(dev, query);
	if (!err)
		dev->cc = query->config;
	kfree(query);
	if (err) {
		dev_info(&dev->pdev->dev,
			 "device has no RoCE congestion control (QUERY_CC: %d)\n",
			 err);
		return 0;
	}

	for (i = 0; i < VHCA_PFC_STATS_NUM; i++)
		snprintf(dev->pfc_names[i], sizeof(dev->pfc_names[i]),
			 vhca_pfc_counter_name(i / VHCA_PFC_PRIORITIES),
			 i % VHCA_PFC_PRIORITIES);

	dev->cc_params = kcalloc(VHCA_DEVLINK_PARAMS,
				 sizeof(*dev->cc_params), GFP_KERNEL);
	if (!dev->cc_params)
		return -ENOMEM;
	vhcad_cc_fill_params(dev->cc_params);

	devlink = devlink_alloc(&vhcad_devlink_ops, sizeof(*priv),
				&dev->pdev->dev);
	if (!devlink) {
		err = -ENOMEM;
		goto err_free_params;
	}
	priv = devlink_priv(devlink);
	priv->dev = dev;

	err = devlink_params_register(devlink, dev->cc_params,
				      VHCA_DEVLINK_PARAMS);
	if (err)
		goto err_free_devlink;
	devlink_register(devlink);
	dev->devlink = devlink;
	dev->has_cc = true;
	return 0;

err_free_devlink:
	devlink_free(devlink);
err_free_params:
	kfree(dev->cc_params);
	dev->cc_params = NULL;
	return err;
}

void vhcad_cc_fini(struct vhca_dev *dev)
{
	if (dev->devlink) {
		devlink_unregister(dev->devlink);
		devlink_params_unregister(dev->devlink, dev->cc_params,
					  VHCA_DEVLINK_PARAMS);
		devlink_free(dev->devlink);
		dev->devlink = NULL;
	}
	kfree(dev->cc_params);
	dev->cc_params = NULL;
	dev->has_cc = false;
}
