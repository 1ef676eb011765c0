//! The bare-metal NVDLA runner on QEMU's aarch64 `virt` board.
//!
//! No OS, no heap: boots on CPU 0 at EL1, runs the network image that was placed at
//! `NVDLA_IMAGE_BASE` (QEMU's loader device, a debugger or a boot loader put it there),
//! reports each task on the PL011 console, writes every output tensor to the host as
//! `output-<i>.bin` through semihosting, and exits QEMU with status 0 (or 1 on failure).
//!
//! The accelerator is QEMU's `mmio-sock` platform device, the hardware model behind it
//! (`nvdla-vp serve --qemu-socket`); its registers are at [`NVDLA_BASE`]. Everything
//! board-specific is in this file: the boot code, the console, the generic timer as the
//! runner's [`Platform`], and semihosting. See docs/porting.md, "Bare metal".
#![no_std]
#![no_main]

use core::fmt::Write;

use embedded_hal::delay::DelayNs;
use nvdla_baremetal::{Csb, DmaRegion, Platform, Runner};

/// Physical address of NVDLA's register aperture: the first device on virt's platform bus.
const NVDLA_BASE: usize = 0x0c00_0000;
/// Bytes of the aperture (the bridge's MMIO region).
const NVDLA_APERTURE: usize = 0x4_0000;
/// QEMU virt's PL011 UART.
const UART_BASE: usize = 0x0900_0000;

core::arch::global_asm!(
    r#"
    .section .text.boot, "ax"
    .global _start
_start:
    mrs     x0, mpidr_el1
    and     x0, x0, #0xff
    cbz     x0, 2f
1:  wfe
    b       1b
2:  ldr     x0, =__stack_top
    mov     sp, x0
    // Paint the stack, so that main can report how much of it the run used.
    ldr     x1, =__stack_bottom
    ldr     x2, =0x5354414b5354414b
6:  cmp     x1, x0
    b.hs    7f
    str     x2, [x1], #8
    b       6b
7:
    // FP/SIMD at EL1 and EL0 (CPACR_EL1.FPEN = 0b11): the EMU computes in f32.
    mov     x0, #(3 << 20)
    msr     cpacr_el1, x0
    isb
    ldr     x0, =__bss_start
    ldr     x1, =__bss_end
3:  cmp     x0, x1
    b.hs    4f
    str     xzr, [x0], #8
    b       3b
4:  bl      main
5:  wfe
    b       5b
"#
);

extern "C" {
    static NVDLA_IMAGE_BASE: u8;
    static NVDLA_IMAGE_SIZE: u8;
    static __stack_bottom: u8;
    static __stack_top: u8;
}

/// The paint the boot code fills the stack with.
const STACK_PAINT: u64 = 0x5354_414b_5354_414b;

/// Bytes of stack used so far: from the top down to the deepest word that lost its paint.
fn stack_used() -> usize {
    let (bottom, top) = (
        core::ptr::addr_of!(__stack_bottom) as usize,
        core::ptr::addr_of!(__stack_top) as usize,
    );
    let mut p = bottom;
    // SAFETY: `bottom..top` is the stack region the linker script reserves, 8-byte
    // aligned; words below the current stack pointer are read, never written.
    while p < top && unsafe { core::ptr::read_volatile(p as *const u64) } == STACK_PAINT {
        p += 8;
    }
    top - p
}

/// The PL011 console (transmit only).
struct Uart;

impl Write for Uart {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        for b in s.bytes() {
            let dr = UART_BASE as *mut u32;
            // SAFETY: the PL011's data (0x00) and flag (0x18) registers on QEMU virt; the
            // busy-wait on TXFF (bit 5) keeps the FIFO from overflowing.
            unsafe {
                while core::ptr::read_volatile((UART_BASE + 0x18) as *const u32) & (1 << 5) != 0 {}
                core::ptr::write_volatile(dr, u32::from(b));
            }
        }
        Ok(())
    }
}

/// The ARM generic timer, as the runner's clock and delay.
struct GenericTimer {
    hz: u64,
}

impl GenericTimer {
    fn new() -> Self {
        let hz: u64;
        // SAFETY: reading CNTFRQ_EL0 has no side effects.
        unsafe { core::arch::asm!("mrs {}, cntfrq_el0", out(reg) hz) };
        GenericTimer { hz: hz.max(1) }
    }

    fn ticks(&self) -> u64 {
        let t: u64;
        // SAFETY: reading the virtual counter has no side effects.
        unsafe { core::arch::asm!("isb", "mrs {}, cntvct_el0", out(reg) t) };
        t
    }
}

impl DelayNs for GenericTimer {
    fn delay_ns(&mut self, ns: u32) {
        let end = self.ticks() + (u64::from(ns) * self.hz).div_ceil(1_000_000_000);
        while self.ticks() < end {
            core::hint::spin_loop();
        }
    }
}

impl Platform for GenericTimer {
    fn now_us(&mut self) -> u64 {
        let t = self.ticks();
        t / self.hz * 1_000_000 + t % self.hz * 1_000_000 / self.hz
    }
}

/// ARM semihosting (QEMU `-semihosting-config enable=on,target=native`).
mod semihosting {
    const SYS_OPEN: usize = 0x01;
    const SYS_CLOSE: usize = 0x02;
    const SYS_WRITE: usize = 0x05;
    const SYS_EXIT: usize = 0x18;
    /// `ADP_Stopped_ApplicationExit`: the program ended, with the status in the subcode.
    const APPLICATION_EXIT: usize = 0x20026;
    /// `SYS_OPEN` mode `"wb"`.
    const MODE_WB: usize = 5;

    fn call(op: usize, params: &[usize]) -> isize {
        let r: isize;
        // SAFETY: the semihosting trap (`hlt #0xf000` on AArch64) reads the parameter
        // block, which lives for the call, and returns its result in x0.
        unsafe {
            core::arch::asm!("hlt #0xf000", inout("x0") op as isize => r, in("x1") params.as_ptr(),
                options(nostack))
        };
        r
    }

    /// Opens `name` (NUL-terminated) on the host for writing.
    pub fn create(name: &[u8]) -> Option<usize> {
        let h = call(SYS_OPEN, &[name.as_ptr() as usize, MODE_WB, name.len() - 1]);
        (h >= 0).then_some(h as usize)
    }

    /// Writes `data`; true if all of it was written.
    pub fn write(handle: usize, data: &[u8]) -> bool {
        call(SYS_WRITE, &[handle, data.as_ptr() as usize, data.len()]) == 0
    }

    /// Closes a handle.
    pub fn close(handle: usize) {
        call(SYS_CLOSE, &[handle]);
    }

    /// Ends the program with `status`.
    pub fn exit(status: usize) -> ! {
        call(SYS_EXIT, &[APPLICATION_EXIT, status]);
        loop {
            core::hint::spin_loop();
        }
    }
}

/// Writes `len` bytes at physical `addr` of the image to host file `output-<i>.bin`.
fn save_output(mem: &DmaRegion, i: u32, addr: u64, len: u64) -> bool {
    let mut name = *b"output-000.bin\0";
    name[7] = b'0' + (i / 100 % 10) as u8;
    name[8] = b'0' + (i / 10 % 10) as u8;
    name[9] = b'0' + (i % 10) as u8;
    let Some(h) = semihosting::create(&name) else {
        return false;
    };
    let mut chunk = [0u8; 4096];
    let mut done = 0u64;
    let mut ok = true;
    while ok && done < len {
        let n = (len - done).min(chunk.len() as u64) as usize;
        ok = mem.read(addr + done, &mut chunk[..n]).is_ok() && semihosting::write(h, &chunk[..n]);
        done += n as u64;
    }
    semihosting::close(h);
    ok
}

#[no_mangle]
extern "C" fn main() -> ! {
    let mut out = Uart;
    // The linker script defines these symbols; only their addresses are used.
    let (base, size) = (
        core::ptr::addr_of!(NVDLA_IMAGE_BASE) as usize,
        core::ptr::addr_of!(NVDLA_IMAGE_SIZE) as usize,
    );
    let _ = writeln!(out, "nvdla-baremetal: image region {base:#x}, {size} bytes");
    // SAFETY: NVDLA_BASE is the mmio-sock device's region on this board, nothing else maps
    // it; the image region is reserved by the linker script (the program stays out of it),
    // and QEMU's memory is coherent with the model's DMA.
    let (csb, mem) = unsafe {
        (
            Csb::new(NVDLA_BASE, NVDLA_APERTURE),
            DmaRegion::new(base as u64, base as *mut u8, size),
        )
    };
    let timer = GenericTimer::new();
    let mut runner: Runner<Csb<'_>, GenericTimer> = match Runner::new(csb, mem, timer) {
        Ok(r) => r,
        Err(e) => {
            let _ = writeln!(out, "nvdla-baremetal: FAIL: {e}");
            semihosting::exit(1);
        }
    };
    let h = *runner.header();
    let _ = writeln!(
        out,
        "nvdla-baremetal: {} task(s), {} output(s), image {} bytes, build {}",
        h.task_count, h.output_count, h.size, h.build
    );
    let start = runner.platform().now_us();
    let result = runner.run(|i, r| {
        let _ = writeln!(
            Uart,
            "nvdla-baremetal: task {i} ({:?}) done in {} us, {} interrupt(s)",
            r.interface, r.micros, r.interrupts
        );
    });
    let micros = runner.platform().now_us() - start;
    if let Err(e) = result {
        let _ = writeln!(out, "nvdla-baremetal: FAIL: {e}");
        semihosting::exit(1);
    }
    let _ = writeln!(
        out,
        "nvdla-baremetal: network done in {micros} us, stack used {} bytes",
        stack_used()
    );
    for i in 0..h.output_count {
        let saved = match runner.output(i) {
            Ok(t) => save_output(runner.memory(), i, t.addr, t.size),
            Err(_) => false,
        };
        if !saved {
            let _ = writeln!(out, "nvdla-baremetal: FAIL: cannot write output {i}");
            semihosting::exit(1);
        }
    }
    let _ = writeln!(out, "nvdla-baremetal: PASS");
    semihosting::exit(0);
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    let _ = writeln!(Uart, "nvdla-baremetal: PANIC: {info}");
    semihosting::exit(101);
}
