//! A bare-metal image holding the firmware's scheduler behind an `extern "C"` hardware
//! interface, so that the linker keeps exactly the code a port would use. Only for size
//! measurement: it is never run.
#![no_std]
#![no_main]

use core::mem::MaybeUninit;

use nvdla_firmware::hw::{DeviceAddr, Hw, Region};
use nvdla_firmware::{nvdla_hw, Engine, HwConfig, HwError, Progress};

extern "C" {
    fn port_reg_read(offset: u32) -> u32;
    fn port_reg_write(offset: u32, value: u32);
    fn port_mem_read(addr: u64, buf: *mut u8, len: usize) -> i32;
    fn port_mem_write(addr: u64, data: *const u8, len: usize) -> i32;
    fn port_address(index: u16, addr: *mut u64, len: *mut u64) -> i32;
}

struct PortHw;

impl Hw for PortHw {
    fn reg_read(&mut self, offset: u32) -> Result<u32, HwError> {
        // SAFETY: a plain C function provided by the port; no pointers involved.
        Ok(unsafe { port_reg_read(offset) })
    }
    fn reg_write(&mut self, offset: u32, value: u32) -> Result<(), HwError> {
        // SAFETY: as above.
        unsafe { port_reg_write(offset, value) };
        Ok(())
    }
    fn mem_read(&mut self, addr: DeviceAddr, buf: &mut [u8]) -> Result<(), HwError> {
        // SAFETY: `buf` is valid for `buf.len()` bytes of writes.
        match unsafe { port_mem_read(addr.0, buf.as_mut_ptr(), buf.len()) } {
            0 => Ok(()),
            _ => Err(HwError::MemoryFault {
                addr,
                len: buf.len(),
            }),
        }
    }
    fn mem_write(&mut self, addr: DeviceAddr, data: &[u8]) -> Result<(), HwError> {
        // SAFETY: `data` is valid for `data.len()` bytes of reads.
        match unsafe { port_mem_write(addr.0, data.as_ptr(), data.len()) } {
            0 => Ok(()),
            _ => Err(HwError::MemoryFault {
                addr,
                len: data.len(),
            }),
        }
    }
    fn address(&self, index: u16) -> Result<Region, HwError> {
        let (mut a, mut l) = (0u64, 0u64);
        // SAFETY: both pointers are to live locals.
        match unsafe { port_address(index, &mut a, &mut l) } {
            0 => Ok(Region {
                addr: DeviceAddr(a),
                len: l,
            }),
            _ => Err(HwError::AddressIndex { index, count: 0 }),
        }
    }
}

/// The engine, in zero-initialised RAM (`.bss`): a port places it as it likes; an
/// `Option<Engine>` initialiser would put its 2.8 KB in `.data`, costing flash as well.
static mut ENGINE: MaybeUninit<Engine> = MaybeUninit::uninit();
static mut STARTED: bool = false;

/// Starts a task (0: running, 1: done, -1: error, -2: no such configuration).
#[no_mangle]
pub extern "C" fn nvdla_execute_task(config: u32) -> i32 {
    // `config` indexes the compiled-in builds (all seven: 0 nv_full, 1 nv_large, ...).
    let Some(build) = nvdla_hw::ALL.get(config as usize) else {
        return -2;
    };
    let cfg = HwConfig::new(build);
    // SAFETY: single-threaded bare-metal entry points; no reentrancy. `write` initialises
    // the engine before `STARTED` says so.
    let engine = unsafe {
        let e = (*core::ptr::addr_of_mut!(ENGINE)).write(Engine::new(cfg));
        STARTED = true;
        e
    };
    code(engine.execute_task(&mut PortHw))
}

/// Handles the NVDLA interrupt (0: running, 1: done, -1: error).
#[no_mangle]
pub extern "C" fn nvdla_interrupt() -> i32 {
    // SAFETY: as above; the engine is initialised once `STARTED` is set.
    if !unsafe { STARTED } {
        return -1;
    }
    let engine = unsafe { (*core::ptr::addr_of_mut!(ENGINE)).assume_init_mut() };
    code(engine.handle_interrupt(&mut PortHw))
}

fn code(r: Result<Progress, nvdla_firmware::Error>) -> i32 {
    match r {
        Ok(Progress::Running) => 0,
        Ok(Progress::Done) => 1,
        Err(_) => -1,
    }
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    loop {}
}
