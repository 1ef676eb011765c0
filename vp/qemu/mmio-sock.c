/*
 * mmio-sock: a platform (sysbus) device whose MMIO region is served by another process, and
 * the socket code it shares with mmio-sock-pci.
 *
 * Every guest access to the region becomes a message on a UNIX stream socket; reads wait for
 * the answer. The process at the other end drives the device's one interrupt line (level) by
 * sending a message at any time. Guest RAM is expected to be a shared memory-backend-file,
 * which that process maps itself to perform DMA: there is no DMA message. The device knows
 * nothing about what it bridges; all device semantics live in the process behind the socket.
 *
 * On the `virt` board it is instantiated with `-device mmio-sock,socket=PATH` and lands on the
 * platform bus (the first dynamic device: MMIO 0x0c000000, SPI 112); hw/core/sysbus-fdt.c
 * describes it in the device tree (the `compatible` property, default "nvidia,nvdla-sock").
 * A device (system) reset resets the model; there is no guest-side reset request.
 *
 * The wire protocol is documented in docs/kernel-module.md of the nvdla-rs repository
 * ("The bridge protocol"). Written for that project; licensed as QEMU (GPL-2.0-or-later).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/module.h"
#include "qemu/sockets.h"
#include "qemu/main-loop.h"
#include "qemu/error-report.h"
#include "qapi/error.h"
#include "hw/irq.h"
#include "hw/sysbus.h"
#include "hw/qdev-properties.h"
#include "qom/object.h"
#include "mmio-sock.h"

/* Message kinds, device -> process. */
enum {
    MSP_HELLO = 0x01,
    MSP_READ = 0x02,
    MSP_WRITE = 0x03,
    MSP_RESET = 0x04,
};
/* Message kinds, process -> device. */
enum {
    MSP_READ_REPLY = 0x81,
    MSP_RESET_DONE = 0x84,
    MSP_IRQ = 0x85,
};

/* One message: 24 bytes, little-endian. */
typedef struct QEMU_PACKED MspMsg {
    uint32_t kind;
    uint32_t len;   /* access size in bytes (1, 2, 4, 8); IRQ: level */
    uint64_t addr;  /* offset in the window; IRQ: vector */
    uint64_t value; /* written or read value; HELLO: window size */
} MspMsg;

/* ---- the connection (shared with mmio-sock-pci) ------------------------------------- */

void msp_conn_init(MspConn *c, const char *name,
                   void (*irq)(void *opaque, uint64_t vector, uint32_t level), void *opaque)
{
    c->fd = -1;
    c->name = name;
    c->irq = irq;
    c->opaque = opaque;
}

static void msp_disconnect(MspConn *c, const char *why)
{
    if (c->fd < 0) {
        return;
    }
    error_report("%s: %s: %s; the window now reads as all ones", c->name, c->socket_path, why);
    qemu_set_fd_handler(c->fd, NULL, NULL, NULL);
    close(c->fd);
    c->fd = -1;
}

static bool msp_send(MspConn *c, uint32_t kind, uint32_t len, uint64_t addr, uint64_t value)
{
    MspMsg m = {
        .kind = cpu_to_le32(kind),
        .len = cpu_to_le32(len),
        .addr = cpu_to_le64(addr),
        .value = cpu_to_le64(value),
    };

    if (c->fd < 0) {
        return false;
    }
    if (qemu_write_full(c->fd, &m, sizeof(m)) != sizeof(m)) {
        msp_disconnect(c, "write failed");
        return false;
    }
    return true;
}

static bool msp_recv(MspConn *c, MspMsg *m)
{
    size_t got = 0;

    while (got < sizeof(*m)) {
        ssize_t n = read(c->fd, (uint8_t *)m + got, sizeof(*m) - got);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            msp_disconnect(c, n == 0 ? "peer closed the socket" : "read failed");
            return false;
        }
        got += n;
    }
    m->kind = le32_to_cpu(m->kind);
    m->len = le32_to_cpu(m->len);
    m->addr = le64_to_cpu(m->addr);
    m->value = le64_to_cpu(m->value);
    return true;
}

/*
 * Waits for a reply of kind `want`, handling interrupt messages that arrive first (the
 * process may raise an interrupt just before answering).
 */
static bool msp_wait_reply(MspConn *c, uint32_t want, MspMsg *m)
{
    while (msp_recv(c, m)) {
        if (m->kind == want) {
            return true;
        }
        if (m->kind == MSP_IRQ) {
            c->irq(c->opaque, m->addr, m->len);
            continue;
        }
        msp_disconnect(c, "unexpected message");
    }
    return false;
}

/*
 * Called from the main loop when the socket is readable: the process sent something
 * unprompted. The vCPU thread may have consumed the data in the meantime (it reads replies
 * synchronously, holding the BQL that this handler waits for), so only read a message that is
 * entirely there; blocking here would hang the whole machine.
 */
static void msp_fd_read(void *opaque)
{
    MspConn *c = opaque;
    MspMsg m;
    ssize_t n;

    n = recv(c->fd, &m, sizeof(m), MSG_PEEK | MSG_DONTWAIT);
    if (n == 0) {
        msp_disconnect(c, "peer closed the socket");
        return;
    }
    if (n < (ssize_t)sizeof(m)) {
        return; /* nothing, or a partial message: wait for the rest */
    }
    if (!msp_recv(c, &m)) {
        return;
    }
    if (m.kind == MSP_IRQ) {
        c->irq(c->opaque, m.addr, m.len);
    } else {
        msp_disconnect(c, "unexpected unprompted message");
    }
}

bool msp_conn_open(MspConn *c, uint64_t size, Error **errp)
{
    if (!c->socket_path) {
        error_setg(errp, "%s: the 'socket' property is required", c->name);
        return false;
    }
    c->fd = unix_connect(c->socket_path, errp);
    if (c->fd < 0) {
        return false;
    }
    if (!msp_send(c, MSP_HELLO, 0, MSP_PROTOCOL_VERSION, size)) {
        error_setg(errp, "%s: cannot greet the process at %s", c->name, c->socket_path);
        return false;
    }
    qemu_set_fd_handler(c->fd, msp_fd_read, NULL, c);
    return true;
}

void msp_conn_close(MspConn *c)
{
    if (c->fd >= 0) {
        qemu_set_fd_handler(c->fd, NULL, NULL, NULL);
        close(c->fd);
        c->fd = -1;
    }
}

void msp_reset_model(MspConn *c)
{
    MspMsg m;

    if (msp_send(c, MSP_RESET, 0, 0, 0)) {
        msp_wait_reply(c, MSP_RESET_DONE, &m);
    }
}

static uint64_t msp_window_read(void *opaque, hwaddr addr, unsigned size)
{
    MspConn *c = opaque;
    MspMsg m;

    if (!msp_send(c, MSP_READ, size, addr, 0) || !msp_wait_reply(c, MSP_READ_REPLY, &m)) {
        return ~0ULL;
    }
    return m.value;
}

static void msp_window_write(void *opaque, hwaddr addr, uint64_t val, unsigned size)
{
    msp_send(opaque, MSP_WRITE, size, addr, val);
}

const MemoryRegionOps msp_window_ops = {
    .read = msp_window_read,
    .write = msp_window_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 1, .max_access_size = 8 },
    .impl = { .min_access_size = 1, .max_access_size = 8 },
};

/* ---- the platform device ------------------------------------------------------------- */

#define TYPE_MMIO_SOCK "mmio-sock"
OBJECT_DECLARE_SIMPLE_TYPE(MmioSockSysState, MMIO_SOCK)

struct MmioSockSysState {
    SysBusDevice parent_obj;

    MemoryRegion mmio;
    qemu_irq irq;
    MspConn conn;
    uint64_t size;
    char *compatible; /* for the device-tree node (hw/core/sysbus-fdt.c) */
};

/* One level-triggered line: every vector drives it. */
static void mss_irq(void *opaque, uint64_t vector, uint32_t level)
{
    MmioSockSysState *s = opaque;

    qemu_set_irq(s->irq, level != 0);
}

static void mss_realize(DeviceState *dev, Error **errp)
{
    MmioSockSysState *s = MMIO_SOCK(dev);

    if (s->size < 0x1000 || !is_power_of_2(s->size)) {
        error_setg(errp, "mmio-sock: size must be a power of two >= 4096");
        return;
    }
    if (!msp_conn_open(&s->conn, s->size, errp)) {
        return;
    }
    memory_region_init_io(&s->mmio, OBJECT(s), &msp_window_ops, &s->conn, "mmio-sock",
                          s->size);
    sysbus_init_mmio(SYS_BUS_DEVICE(s), &s->mmio);
}

static void mss_unrealize(DeviceState *dev)
{
    msp_conn_close(&MMIO_SOCK(dev)->conn);
}

static void mss_reset(DeviceState *dev)
{
    MmioSockSysState *s = MMIO_SOCK(dev);

    qemu_set_irq(s->irq, 0);
    msp_reset_model(&s->conn);
}

static void mss_instance_init(Object *obj)
{
    MmioSockSysState *s = MMIO_SOCK(obj);

    msp_conn_init(&s->conn, TYPE_MMIO_SOCK, mss_irq, s);
    sysbus_init_irq(SYS_BUS_DEVICE(s), &s->irq);
}

static Property mss_properties[] = {
    DEFINE_PROP_STRING("socket", MmioSockSysState, conn.socket_path),
    DEFINE_PROP_UINT64("size", MmioSockSysState, size, 0x40000),
    DEFINE_PROP_STRING("compatible", MmioSockSysState, compatible),
    DEFINE_PROP_END_OF_LIST(),
};

static void mss_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);

    dc->realize = mss_realize;
    dc->unrealize = mss_unrealize;
    dc->reset = mss_reset;
    dc->desc = "Platform device whose MMIO region is served over a UNIX socket";
    dc->user_creatable = true;
    set_bit(DEVICE_CATEGORY_MISC, dc->categories);
    device_class_set_props(dc, mss_properties);
}

static const TypeInfo mss_info = {
    .name = TYPE_MMIO_SOCK,
    .parent = TYPE_SYS_BUS_DEVICE,
    .instance_size = sizeof(MmioSockSysState),
    .instance_init = mss_instance_init,
    .class_init = mss_class_init,
};

static void mss_register_types(void)
{
    type_register_static(&mss_info);
}

type_init(mss_register_types)
