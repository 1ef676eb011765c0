//! The driver: the four `opendla` operations over one NVDLA.
//!
//! [`Kmd`] owns the buffer objects ([`BoTable`]), the firmware's scheduler and the host
//! services ([`KmdOs`]). Its methods are the ioctls of upstream's `opendla.ko`
//! (`GEM_CREATE`, `GEM_MMAP`, `GEM_DESTROY`, `SUBMIT`), each taking the calling client so
//! that one process can never name another's buffers. A submit is validated whole before
//! anything runs ([`crate::submit::validate`]), its buffers are pinned while it runs (so a
//! concurrent destroy gets `EBUSY` instead of freeing memory the hardware still uses), and
//! its tasks run in order; the first failing task ends the submit.
//!
//! A submit is three steps, so that a host with threads need not hold one lock while a task
//! runs: [`begin_submit`] (validate and pin, on the [`BoTable`]), [`Runner::run`] (the
//! hardware: firmware, host services and the interrupt waits, nothing of the table) and
//! [`end_submit`] (unpin). [`Kmd::into_parts`] hands the two halves out separately; the Linux
//! module guards them with two locks, so closing a file, unmapping or releasing a dma-buf
//! never waits for a running task.

use alloc::boxed::Box;
use core::fmt;

use nvdla_firmware::{Engine, HwConfig};

use crate::bo::{Bo, BoConfig, BoHandle, BoTable, ClientId};
use crate::error::Error;
use crate::fallible;
use crate::job::{self, JobError};
use crate::os::KmdOs;
use crate::submit::{validate, SubmitDesc, SubmitError, ValidatedSubmit};

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

/// The hardware half of a driver: the firmware's scheduler and the host services. It runs
/// validated submits and touches no buffer bookkeeping.
pub struct Runner<O: KmdOs> {
    os: O,
    /// On the heap (it is a few KiB), allocated fallibly.
    engine: Box<[Engine; 1]>,
}

impl<O: KmdOs> Runner<O> {
    /// The host services.
    pub fn os(&self) -> &O {
        &self.os
    }

    /// The host services, mutable.
    pub fn os_mut(&mut self) -> &mut O {
        &mut self.os
    }

    /// The hardware configuration the firmware programs.
    pub fn hw_config(&self) -> &HwConfig {
        self.engine[0].config()
    }

    /// Runs the tasks of a submit prepared by [`begin_submit`], in order, waiting for each;
    /// the first failing task ends it. Allocates nothing on success.
    pub fn run(&mut self, submit: &ValidatedSubmit) -> Result<SubmitReport, SubmitFailure> {
        let mut report = SubmitReport::default();
        for (i, task) in submit.tasks.iter().enumerate() {
            match job::run(
                &mut self.engine[0],
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
                    return Err(SubmitFailure::Task { task: i, error });
                }
            }
        }
        Ok(report)
    }
}

/// SUBMIT, first step: validates `desc` for `client` against `bos` and pins every buffer it
/// uses (so none can be destroyed while it runs). Nothing runs yet; the caller must hand the
/// result to [`end_submit`] whatever happens next.
pub fn begin_submit(
    bos: &mut BoTable,
    client: ClientId,
    desc: &SubmitDesc<'_>,
) -> Result<ValidatedSubmit, SubmitFailure> {
    let submit = validate(bos, client, desc).map_err(SubmitFailure::Rejected)?;
    submit.pin(bos).map_err(SubmitFailure::Pin)?;
    Ok(submit)
}

/// SUBMIT, last step: drops the pins [`begin_submit`] took (a buffer whose owner closed its
/// file meanwhile is freed here). Never allocates, never fails.
pub fn end_submit(bos: &mut BoTable, submit: &ValidatedSubmit) {
    // Cannot fail: the pins were taken by `begin_submit` and nothing else drops them.
    let _ = submit.unpin(bos);
}

/// The kernel-mode driver of one NVDLA.
pub struct Kmd<O: KmdOs> {
    bos: BoTable,
    runner: Runner<O>,
}

impl<O: KmdOs> Kmd<O> {
    /// A driver for hardware `hw` reached through `os`, with the device-address window and
    /// limits of `bos`. Resets the hardware. `EINVAL` if the window is invalid, `ENOMEM` if
    /// the driver's state cannot be allocated.
    pub fn new(mut os: O, hw: HwConfig, bos: BoConfig) -> Result<Self, Error> {
        let bos = BoTable::new(bos)?;
        let engine = fallible::try_box_with(|| Engine::new(hw))?;
        os.reset();
        Ok(Self {
            bos,
            runner: Runner { os, engine },
        })
    }

    /// The two halves: the buffer table (what every ioctl but the run of a submit needs)
    /// and the hardware runner, for a host that guards them separately.
    pub fn into_parts(self) -> (BoTable, Runner<O>) {
        (self.bos, self.runner)
    }

    /// Both halves, mutably.
    pub fn parts_mut(&mut self) -> (&mut BoTable, &mut Runner<O>) {
        (&mut self.bos, &mut self.runner)
    }

    /// The host services (e.g. to reach a hardware model's memory).
    pub fn os(&self) -> &O {
        self.runner.os()
    }

    /// The host services, mutable.
    pub fn os_mut(&mut self) -> &mut O {
        self.runner.os_mut()
    }

    /// The hardware configuration the firmware programs.
    pub fn hw_config(&self) -> &HwConfig {
        self.runner.hw_config()
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
        let submit = begin_submit(&mut self.bos, client, desc)?;
        let result = self.runner.run(&submit);
        end_submit(&mut self.bos, &submit);
        result
    }
}
