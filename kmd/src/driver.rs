//! The driver: the four `opendla` operations over one NVDLA.
//!
//! [`Kmd`] owns the buffer objects ([`BoTable`]), the firmware's scheduler and the host
//! services ([`KmdOs`]). Its methods are the ioctls of upstream's `opendla.ko`
//! (`GEM_CREATE`, `GEM_MMAP`, `GEM_DESTROY`, `SUBMIT`), each taking the calling client so
//! that one process can never name another's buffers. A submit is validated whole before
//! anything runs ([`crate::submit::validate`]), its buffers are pinned while it runs (so a
//! concurrent destroy gets `EBUSY` instead of freeing memory the hardware still uses), and
//! its tasks run in order; the first failing task ends the submit.

use alloc::boxed::Box;
use core::fmt;

use nvdla_firmware::{Engine, HwConfig};

use crate::bo::{Bo, BoConfig, BoHandle, BoTable, ClientId};
use crate::error::Error;
use crate::job::{self, JobError};
use crate::os::KmdOs;
use crate::submit::{validate, SubmitDesc, SubmitError};

/// Why a submit failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SubmitFailure {
    /// Refused by validation; nothing ran.
    Rejected(SubmitError),
    /// Task `task` failed; the tasks before it completed, none after it ran.
    Task {
        /// Index of the task in the submit.
        task: usize,
        /// What happened.
        error: JobError,
    },
    /// The buffers could not be pinned (a pin count would overflow); nothing ran.
    Pin(Error),
}

impl SubmitFailure {
    /// The errno-style error the ioctl returns.
    pub fn error(&self) -> Error {
        match self {
            SubmitFailure::Rejected(e) => e.error(),
            SubmitFailure::Task { error, .. } => error.error(),
            SubmitFailure::Pin(e) => *e,
        }
    }
}

impl fmt::Display for SubmitFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SubmitFailure::Rejected(e) => write!(f, "submit rejected: {e}"),
            SubmitFailure::Task { task, error } => write!(f, "task {task}: {error}"),
            SubmitFailure::Pin(e) => write!(f, "cannot pin the submit's buffers: {e}"),
        }
    }
}

/// What a completed submit did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SubmitReport {
    /// Tasks run.
    pub tasks: usize,
    /// Interrupts handled over all tasks.
    pub interrupts: u32,
}

/// The kernel-mode driver of one NVDLA.
pub struct Kmd<O: KmdOs> {
    os: O,
    bos: BoTable,
    engine: Box<Engine>,
}

impl<O: KmdOs> Kmd<O> {
    /// A driver for hardware `hw` reached through `os`, with the device-address window and
    /// limits of `bos`. Resets the hardware. `EINVAL` if the window is invalid.
    pub fn new(mut os: O, hw: HwConfig, bos: BoConfig) -> Result<Self, Error> {
        let bos = BoTable::new(bos)?;
        os.reset();
        Ok(Self {
            os,
            bos,
            engine: Box::new(Engine::new(hw)),
        })
    }

    /// The host services (e.g. to reach a hardware model's memory).
    pub fn os(&self) -> &O {
        &self.os
    }

    /// The host services, mutable.
    pub fn os_mut(&mut self) -> &mut O {
        &mut self.os
    }

    /// The hardware configuration the firmware programs.
    pub fn hw_config(&self) -> &HwConfig {
        self.engine.config()
    }

    /// All live buffer objects.
    pub fn bos(&self) -> &BoTable {
        &self.bos
    }

    /// GEM_CREATE: a buffer of `size` bytes for `client`.
    pub fn gem_create(
        &mut self,
        client: ClientId,
        size: u64,
        flags: u32,
    ) -> Result<BoHandle, Error> {
        self.bos.create(client, size, flags)
    }

    /// GEM_MMAP: the fake offset to pass to `mmap(2)` for `client`'s buffer `handle`.
    pub fn gem_mmap(&self, client: ClientId, handle: u32) -> Result<u64, Error> {
        self.bos.mmap_offset(client, handle)
    }

    /// GEM_DESTROY: frees `client`'s buffer `handle`; `EBUSY` while a task uses it.
    pub fn gem_destroy(&mut self, client: ClientId, handle: u32) -> Result<(), Error> {
        self.bos.destroy(client, handle).map(|_| ())
    }

    /// `client`'s buffer `handle` (size, device address, ...).
    pub fn bo(&self, client: ClientId, handle: u32) -> Result<&Bo, Error> {
        self.bos.lookup(client, handle)
    }

    /// Pins `client`'s buffer `handle` while something other than a submit uses its memory
    /// (on Linux, a user-space mapping): until [`unpin_bo`](Self::unpin_bo), destroying it
    /// answers `EBUSY`, so its memory is never reused under a live mapping.
    pub fn pin_bo(&mut self, client: ClientId, handle: u32) -> Result<(), Error> {
        self.bos.pin(client, handle)
    }

    /// Drops a pin taken by [`pin_bo`](Self::pin_bo).
    pub fn unpin_bo(&mut self, client: ClientId, handle: u32) -> Result<(), Error> {
        self.bos.unpin(client, handle)
    }

    /// Frees every buffer of `client` (its file was closed). Returns how many are still
    /// pinned (mapped or exported): they are freed when their last pin drops.
    pub fn close_client(&mut self, client: ClientId) -> usize {
        self.bos.release_client(client)
    }

    /// SUBMIT: validates `desc` for `client`, then runs its tasks in order and waits for
    /// them.
    pub fn submit(
        &mut self,
        client: ClientId,
        desc: &SubmitDesc<'_>,
    ) -> Result<SubmitReport, SubmitFailure> {
        let submit = validate(&self.bos, client, desc).map_err(SubmitFailure::Rejected)?;
        submit.pin(&mut self.bos).map_err(SubmitFailure::Pin)?;
        let mut report = SubmitReport::default();
        let mut result = Ok(());
        for (i, task) in submit.tasks.iter().enumerate() {
            match job::run(
                &mut self.engine,
                &mut self.os,
                &task.addresses,
                task.timeout,
            ) {
                Ok(n) => {
                    report.tasks += 1;
                    report.interrupts += n;
                }
                Err(error) => {
                    log::warn!("submit: task {i} failed: {error}");
                    result = Err(SubmitFailure::Task { task: i, error });
                    break;
                }
            }
        }
        // Cannot fail: the pins were taken above and nothing else drops them.
        let _ = submit.unpin(&mut self.bos);
        result.map(|()| report)
    }
}
