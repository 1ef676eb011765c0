#!/usr/bin/env python3
"""A stand-in for the device model behind QEMU's mmio-sock-pci bridge: a plain register file.

It proves the bridge without any NVDLA semantics: BAR0 reads return what was written (offset 0
holds a fixed identification word), a reset request clears the file, and interrupts can be
raised on demand. Protocol: docs/kernel-module.md, "The bridge protocol".

  fake-host.py SOCKET [--ram FILE] [--irq-on-reset N] [--preset OFF=VALUE]...
               [--expect-ram-marker TEXT]

--irq-on-reset N: one second after the N-th reset request (QEMU resets the device at power-on,
  a driver resets it when probing), set GLB S_INTR_STATUS (offset 0x0c in NVDLA v1's map, so
  the nvdla.ko handler claims it) and raise interrupt vector 0, to show MSI delivery end to end.
--preset OFF=VALUE: a 32-bit register value restored at every reset (e.g. a status register a
  driver polls).
--ram / --expect-ram-marker: the guest RAM file QEMU shares (memory-backend-file, share=on);
  at exit, report whether TEXT (e.g. a word of the kernel command line) is found in it, which
  shows the host process sees guest memory directly (the DMA path).
Prints one line per event on stdout and a summary at exit.
"""
import argparse
import mmap
import os
import socket
import struct
import sys
import threading
import time

MSG = struct.Struct("<IIQQ")
HELLO, READ, WRITE, RESET = 0x01, 0x02, 0x03, 0x04
READ_REPLY, RESET_DONE, IRQ = 0x81, 0x84, 0x85
ID_WORD = 0x0D1A0001
INTR_STATUS = 0x0C  # GLB S_INTR_STATUS (NVDLA v1), write-1-to-clear


class RegisterFile:
    def __init__(self, size):
        self.size = size
        self.mem = bytearray(size)
        self.reset()

    def reset(self):
        self.mem[:] = bytes(self.size)
        self.mem[0:4] = struct.pack("<I", ID_WORD)

    def read(self, addr, length):
        if addr + length > self.size:
            return (1 << (8 * length)) - 1
        return int.from_bytes(self.mem[addr:addr + length], "little")

    def write(self, addr, length, value):
        if addr + length > self.size:
            return
        if addr == INTR_STATUS and length == 4:
            value = self.read(addr, 4) & ~value  # write-1-to-clear
        self.mem[addr:addr + length] = (value & ((1 << (8 * length)) - 1)).to_bytes(length, "little")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("socket")
    ap.add_argument("--ram")
    ap.add_argument("--irq-on-reset", type=int)
    ap.add_argument("--preset", action="append", default=[])
    ap.add_argument("--expect-ram-marker")
    args = ap.parse_args()

    if os.path.exists(args.socket):
        os.unlink(args.socket)
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(args.socket)
    srv.listen(1)
    print(f"fake-host: listening on {args.socket}", flush=True)
    conn, _ = srv.accept()
    send_lock = threading.Lock()
    stats = {"reads": 0, "writes": 0, "resets": 0, "irqs": 0}
    regs = None

    def send(kind, length=0, addr=0, value=0):
        with send_lock:
            conn.sendall(MSG.pack(kind, length, addr, value))

    presets = [tuple(int(x, 0) for x in p.split("=", 1)) for p in args.preset]

    def reset(regs):
        regs.reset()
        for off, val in presets:
            regs.mem[off:off + 4] = struct.pack("<I", val)

    def irq_later(delay):
        time.sleep(delay)
        regs.mem[INTR_STATUS:INTR_STATUS + 4] = struct.pack("<I", 1)
        stats["irqs"] += 1
        print("fake-host: raising interrupt vector 0", flush=True)
        try:
            send(IRQ, 1, 0, 1)
        except OSError:
            pass  # QEMU is gone

    buf = b""
    while True:
        try:
            chunk = conn.recv(4096)
        except ConnectionResetError:  # QEMU exited with an unread message of ours
            chunk = b""
        if not chunk:
            break
        buf += chunk
        while len(buf) >= MSG.size:
            kind, length, addr, value = MSG.unpack_from(buf)
            buf = buf[MSG.size:]
            if kind == HELLO:
                regs = RegisterFile(value)
                reset(regs)
                print(f"fake-host: hello, protocol {addr}, BAR0 {value:#x} bytes", flush=True)
            elif kind == READ:
                v = regs.read(addr, length)
                stats["reads"] += 1
                print(f"fake-host: read  {addr:#07x}/{length} -> {v:#x}", flush=True)
                send(READ_REPLY, length, addr, v)
            elif kind == WRITE:
                regs.write(addr, length, value)
                stats["writes"] += 1
                print(f"fake-host: write {addr:#07x}/{length} <- {value:#x}", flush=True)
            elif kind == RESET:
                if regs:
                    reset(regs)
                stats["resets"] += 1
                print("fake-host: reset", flush=True)
                send(RESET_DONE)
                if stats["resets"] == args.irq_on_reset:
                    threading.Thread(target=irq_later, args=(1.0,), daemon=True).start()
            else:
                print(f"fake-host: unknown message {kind:#x}", flush=True)
    print("fake-host: summary " + " ".join(f"{k}={v}" for k, v in stats.items()), flush=True)
    if args.ram and args.expect_ram_marker:
        with open(args.ram, "rb") as f, mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as m:
            found = m.find(args.expect_ram_marker.encode()) >= 0
        print(f"fake-host: guest RAM marker {'found' if found else 'NOT found'}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
