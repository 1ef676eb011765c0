/*
 * mmio-sock: the socket side shared by the bridge devices (mmio-sock.c, the platform device
 * `mmio-sock`; mmio-sock-pci.c, the PCI device `mmio-sock-pci`). One connection to the process
 * that serves a device's registers; the wire protocol is documented in docs/kernel-module.md
 * of the nvdla-rs repository ("The bridge protocol").
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_MISC_MMIO_SOCK_H
#define HW_MISC_MMIO_SOCK_H

#include "exec/memory.h"

#define MSP_PROTOCOL_VERSION 1

typedef struct MspConn {
    int fd;
    char *socket_path;  /* the device's `socket` property */
    const char *name;   /* the device type, for messages */
    /* An IRQ message: interrupt `vector` at `level`. */
    void (*irq)(void *opaque, uint64_t vector, uint32_t level);
    void *opaque;
} MspConn;

/* Sets up an unconnected connection (from instance_init). */
void msp_conn_init(MspConn *c, const char *name,
                   void (*irq)(void *opaque, uint64_t vector, uint32_t level), void *opaque);
/* Connects to c->socket_path and sends HELLO announcing a register window of `size` bytes. */
bool msp_conn_open(MspConn *c, uint64_t size, Error **errp);
void msp_conn_close(MspConn *c);
/* RESET / RESET_DONE round trip (nothing when disconnected). */
void msp_reset_model(MspConn *c);

/* Ops of the register window; the opaque pointer is the MspConn. */
extern const MemoryRegionOps msp_window_ops;

#endif
