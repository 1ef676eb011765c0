//! Logging to the kernel log and the panic path.
//!
//! `log` records of the driver core and the firmware become `printk` lines (prefixed by the
//! glue with the device name). A panic is formatted the same way and handed to
//! `nvdla_glue_panic`, which does not return: it logs the message, marks every device dead
//! (later ioctls fail with `EIO`) and `BUG()`s the calling task; the kernel itself survives
//! unless it is configured to panic on oops.

use core::fmt::{self, Write};
use core::sync::atomic::{AtomicU8, Ordering};

use log::{Level, LevelFilter, Log, Metadata, Record};

extern "C" {
    fn nvdla_glue_log(level: u32, msg: *const u8, len: usize);
    fn nvdla_glue_panic(msg: *const u8, len: usize) -> !;
}

/// A fixed buffer that silently truncates: log lines must never allocate or fail.
struct LineBuf {
    buf: [u8; 256],
    len: usize,
}

impl LineBuf {
    const fn new() -> Self {
        Self {
            buf: [0; 256],
            len: 0,
        }
    }

    fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl Write for LineBuf {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let room = self.buf.len() - self.len;
        let n = s.len().min(room);
        self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}

struct KernelLog;

/// The most verbose level logged, as a `log::LevelFilter` discriminant.
static MAX_LEVEL: AtomicU8 = AtomicU8::new(3); // Info

impl Log for KernelLog {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        (metadata.level() as u8) <= MAX_LEVEL.load(Ordering::Relaxed)
    }

    fn log(&self, record: &Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let mut line = LineBuf::new();
        let _ = write!(line, "{}", record.args());
        let bytes = line.as_bytes();
        // SAFETY: `bytes` is a valid slice for the duration of the call; the glue copies it
        // into the kernel log and keeps no pointer.
        unsafe { nvdla_glue_log(record.level() as u32, bytes.as_ptr(), bytes.len()) };
    }

    fn flush(&self) {}
}

static LOGGER: KernelLog = KernelLog;

/// Installs the kernel logger (idempotent) with `debug` deciding whether debug and trace
/// records are printed.
pub fn init_logging(debug: bool) {
    let level = if debug {
        LevelFilter::Trace
    } else {
        LevelFilter::Info
    };
    MAX_LEVEL.store(level as u8, Ordering::Relaxed);
    // A second device finds the logger installed; that is fine.
    let _ = log::set_logger(&LOGGER);
    log::set_max_level(level);
}

/// Logs at `level` through the kernel logger (for messages of this crate's own).
pub fn log_line(level: Level, args: fmt::Arguments<'_>) {
    let mut line = LineBuf::new();
    let _ = line.write_fmt(args);
    let bytes = line.as_bytes();
    // SAFETY: as in `KernelLog::log`.
    unsafe { nvdla_glue_log(level as u32, bytes.as_ptr(), bytes.len()) };
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    let mut line = LineBuf::new();
    let _ = write!(line, "{info}");
    let bytes = line.as_bytes();
    // SAFETY: `bytes` is valid for the call; `nvdla_glue_panic` never returns.
    unsafe { nvdla_glue_panic(bytes.as_ptr(), bytes.len()) }
}
