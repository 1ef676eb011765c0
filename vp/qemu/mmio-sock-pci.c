/*
 * mmio-sock-pci: a PCI device whose BAR0 is served by another process.
 *
 * Every guest access to BAR0 becomes a message on a UNIX stream socket; reads wait for the
 * answer. The process at the other end raises interrupts (MSI when the guest enabled it,
 * else the legacy INTx pin) by sending a message at any time. Guest RAM is expected to be a
 * shared memory-backend-file, which that process maps itself to perform DMA: there is no DMA
 * message. The device knows nothing about what it bridges; all device semantics live in the
 * process behind the socket.
 *
 * BAR1 is a 4 KiB control page handled here: identification, connection state, and a reset
 * request that is forwarded to the process (so a guest driver can reset the device model).
 *
 * The socket side is shared with the platform device `mmio-sock` (mmio-sock.c, mmio-sock.h).
 * The wire protocol is documented in docs/kernel-module.md of the nvdla-rs repository
 * ("The bridge protocol"). Written for that project; licensed as QEMU (GPL-2.0-or-later).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/module.h"
#include "qemu/error-report.h"
#include "qapi/error.h"
#include "hw/pci/pci.h"
#include "hw/pci/msi.h"
#include "hw/qdev-properties.h"
#include "qom/object.h"
#include "mmio-sock.h"

#define TYPE_MMIO_SOCK_PCI "mmio-sock-pci"
OBJECT_DECLARE_SIMPLE_TYPE(MmioSockState, MMIO_SOCK_PCI)

#define MSP_CTRL_SIZE 0x1000
#define MSP_CTRL_MAGIC 0x4b434f53u /* "SOCK" */

/* Control BAR (BAR1) registers. */
enum {
    MSP_CTRL_ID = 0x00,        /* RO: MSP_CTRL_MAGIC */
    MSP_CTRL_VERSION = 0x04,   /* RO: protocol version */
    MSP_CTRL_STATUS = 0x08,    /* RO: bit 0 connected */
    MSP_CTRL_RESET = 0x0c,     /* WO: write 1 to reset the device model */
    MSP_CTRL_BAR0_SIZE = 0x10, /* RO: low 32 bits of the BAR0 size */
};

struct MmioSockState {
    PCIDevice parent_obj;

    MemoryRegion bar0;
    MemoryRegion ctrl;
    MspConn conn;

    uint64_t bar0_size;
    uint16_t vendor_id;
    uint16_t device_id;
    uint32_t msi_vectors;
};

static void msp_irq(void *opaque, uint64_t vector, uint32_t level)
{
    PCIDevice *pdev = PCI_DEVICE(opaque);

    if (msi_enabled(pdev)) {
        if (level && vector < msi_nr_vectors_allocated(pdev)) {
            msi_notify(pdev, vector);
        }
    } else {
        pci_set_irq(pdev, level != 0);
    }
}

static uint64_t msp_ctrl_read(void *opaque, hwaddr addr, unsigned size)
{
    MmioSockState *s = opaque;

    switch (addr) {
    case MSP_CTRL_ID:
        return MSP_CTRL_MAGIC;
    case MSP_CTRL_VERSION:
        return MSP_PROTOCOL_VERSION;
    case MSP_CTRL_STATUS:
        return s->conn.fd >= 0;
    case MSP_CTRL_BAR0_SIZE:
        return (uint32_t)s->bar0_size;
    default:
        return 0;
    }
}

static void msp_ctrl_write(void *opaque, hwaddr addr, uint64_t val, unsigned size)
{
    MmioSockState *s = opaque;

    if (addr == MSP_CTRL_RESET && (val & 1)) {
        msp_reset_model(&s->conn);
    }
}

static const MemoryRegionOps msp_ctrl_ops = {
    .read = msp_ctrl_read,
    .write = msp_ctrl_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 4, .max_access_size = 4 },
    .impl = { .min_access_size = 4, .max_access_size = 4 },
};

static void msp_realize(PCIDevice *pdev, Error **errp)
{
    MmioSockState *s = MMIO_SOCK_PCI(pdev);

    if (s->bar0_size < 0x1000 || !is_power_of_2(s->bar0_size)) {
        error_setg(errp, "mmio-sock-pci: bar0-size must be a power of two >= 4096");
        return;
    }
    if (s->msi_vectors < 1 || s->msi_vectors > 32 || !is_power_of_2(s->msi_vectors)) {
        error_setg(errp, "mmio-sock-pci: msi-vectors must be 1, 2, 4, 8, 16 or 32");
        return;
    }

    if (!msp_conn_open(&s->conn, s->bar0_size, errp)) {
        return;
    }

    pci_config_set_vendor_id(pdev->config, s->vendor_id);
    pci_config_set_device_id(pdev->config, s->device_id);
    pci_config_set_interrupt_pin(pdev->config, 1);

    memory_region_init_io(&s->bar0, OBJECT(s), &msp_window_ops, &s->conn, "mmio-sock-bar0",
                          s->bar0_size);
    pci_register_bar(pdev, 0, PCI_BASE_ADDRESS_SPACE_MEMORY, &s->bar0);
    memory_region_init_io(&s->ctrl, OBJECT(s), &msp_ctrl_ops, s, "mmio-sock-ctrl",
                          MSP_CTRL_SIZE);
    pci_register_bar(pdev, 1, PCI_BASE_ADDRESS_SPACE_MEMORY, &s->ctrl);

    if (msi_init(pdev, 0, s->msi_vectors, true, false, errp) < 0) {
        return;
    }
}

static void msp_exit(PCIDevice *pdev)
{
    MmioSockState *s = MMIO_SOCK_PCI(pdev);

    msi_uninit(pdev);
    msp_conn_close(&s->conn);
}

static void msp_reset(DeviceState *dev)
{
    MmioSockState *s = MMIO_SOCK_PCI(dev);

    pci_set_irq(PCI_DEVICE(s), 0);
    msp_reset_model(&s->conn);
}

static void msp_instance_init(Object *obj)
{
    msp_conn_init(&MMIO_SOCK_PCI(obj)->conn, TYPE_MMIO_SOCK_PCI, msp_irq, obj);
}

static Property msp_properties[] = {
    DEFINE_PROP_STRING("socket", MmioSockState, conn.socket_path),
    DEFINE_PROP_UINT64("bar0-size", MmioSockState, bar0_size, 0x40000),
    /* 0x1234 is not an assigned vendor; QEMU's own test devices use it too. */
    DEFINE_PROP_UINT16("vendor-id", MmioSockState, vendor_id, 0x1234),
    DEFINE_PROP_UINT16("device-id", MmioSockState, device_id, 0xd1a0),
    DEFINE_PROP_UINT32("msi-vectors", MmioSockState, msi_vectors, 1),
    DEFINE_PROP_END_OF_LIST(),
};

static void msp_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    PCIDeviceClass *k = PCI_DEVICE_CLASS(klass);

    k->realize = msp_realize;
    k->exit = msp_exit;
    k->vendor_id = 0x1234;
    k->device_id = 0xd1a0;
    k->revision = MSP_PROTOCOL_VERSION;
    k->class_id = 0x1200; /* processing accelerator */
    dc->reset = msp_reset;
    dc->desc = "PCI device whose BAR0 is served over a UNIX socket";
    set_bit(DEVICE_CATEGORY_MISC, dc->categories);
    device_class_set_props(dc, msp_properties);
}

static const TypeInfo msp_info = {
    .name = TYPE_MMIO_SOCK_PCI,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(MmioSockState),
    .instance_init = msp_instance_init,
    .class_init = msp_class_init,
    .interfaces = (InterfaceInfo[]) {
        { INTERFACE_CONVENTIONAL_PCI_DEVICE },
        { },
    },
};

static void msp_register_types(void)
{
    type_register_static(&msp_info);
}

type_init(msp_register_types)
