//! Submit validation and address-list translation.
//!
//! A submit is up to [`MAX_TASKS_PER_SUBMIT`] DLA tasks; each task is an address list of
//! (buffer handle, byte offset) pairs whose entry 0 is the network descriptor. Nothing in it
//! is trusted. [`validate`] checks, cheapest first over the whole submit so that a bad submit
//! costs as little as possible and fails the same way every time:
//!
//! 1. fields and counts: at least one and at most [`MAX_TASKS_PER_SUBMIT`] tasks, only known
//!    flag bits, version 0, each task with 1..=[`MAX_BUFFERS_PER_TASK`] addresses, every
//!    reserved field zero (`EINVAL`, or `E2BIG` for a count above its limit);
//! 2. handles: every handle exists and belongs to the submitting client (`ENOENT`);
//! 3. offsets: every offset is inside its buffer (`EINVAL`).
//!
//! Only then is each entry translated to `iova(buffer) + offset`, the device address the
//! firmware patches into descriptors.

use alloc::vec::Vec;
use core::fmt;

use crate::bo::{BoTable, ClientId};
use crate::error::Error;
use crate::fallible;
use nvdla_firmware::hw::Region;

/// Most tasks in one submit (`NVDLA_MAX_TASKS_PER_SUBMIT`).
pub const MAX_TASKS_PER_SUBMIT: usize = 24;
/// Most entries in one task's address list (`NVDLA_MAX_BUFFERS_PER_TASK`).
pub const MAX_BUFFERS_PER_TASK: usize = 6144;
/// Submit flag: all tasks or none (`NVDLA_SUBMIT_FLAGS_ATOMIC`).
pub const SUBMIT_FLAGS_ATOMIC: u16 = 1;
/// Flag bits with a meaning; all others are reserved and MUST be zero.
pub const SUBMIT_FLAGS_KNOWN: u16 = SUBMIT_FLAGS_ATOMIC;
/// The only task-structure version defined.
pub const SUBMIT_VERSION: u32 = 0;

/// One address-list entry as user space wrote it (`struct nvdla_mem_handle`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MemHandle {
    /// Buffer handle.
    pub handle: u32,
    /// Reserved, must be zero.
    pub reserved: u32,
    /// Byte offset in the buffer.
    pub offset: u64,
}

/// One task as user space described it, after its address list was copied in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskDesc<'a> {
    /// Timeout in milliseconds; `u32::MAX` waits forever.
    pub timeout: u32,
    /// The address list.
    pub addresses: &'a [MemHandle],
}

/// A submit as user space described it (`struct nvdla_submit_args`), tasks copied in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubmitDesc<'a> {
    /// Flags ([`SUBMIT_FLAGS_ATOMIC`]).
    pub flags: u16,
    /// Task structure version, must be [`SUBMIT_VERSION`].
    pub version: u32,
    /// The tasks.
    pub tasks: &'a [TaskDesc<'a>],
}

/// Why a submit was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Reason {
    /// No task at all.
    NoTasks,
    /// More than [`MAX_TASKS_PER_SUBMIT`] tasks.
    TooManyTasks,
    /// A flag bit outside [`SUBMIT_FLAGS_KNOWN`].
    UnknownFlags,
    /// `version` is not [`SUBMIT_VERSION`].
    BadVersion,
    /// A task with an empty address list (no network descriptor).
    NoAddresses,
    /// A task with more than [`MAX_BUFFERS_PER_TASK`] addresses.
    TooManyAddresses,
    /// A reserved field is nonzero.
    ReservedNonZero,
    /// A handle that does not exist or belongs to another client.
    UnknownHandle,
    /// An offset at or past the end of its buffer.
    OffsetOutOfRange,
    /// `iova + offset` overflows (cannot happen with a sane window; checked anyway).
    AddressOverflow,
    /// The kernel could not allocate the translated submit (`ENOMEM`).
    NoMemory,
}

impl Reason {
    /// The errno class of this reason.
    pub const fn error(self) -> Error {
        match self {
            Reason::TooManyTasks | Reason::TooManyAddresses => Error::TooBig,
            Reason::UnknownHandle => Error::NoEntry,
            Reason::AddressOverflow => Error::Overflow,
            Reason::NoMemory => Error::NoMemory,
            Reason::NoTasks
            | Reason::UnknownFlags
            | Reason::BadVersion
            | Reason::NoAddresses
            | Reason::ReservedNonZero
            | Reason::OffsetOutOfRange => Error::Invalid,
        }
    }
}

/// A rejected submit: the reason and where in the submit it was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SubmitError {
    /// What is wrong.
    pub reason: Reason,
    /// Index of the offending task, if the problem is in one.
    pub task: Option<usize>,
    /// Index of the offending address-list entry, if the problem is in one.
    pub entry: Option<usize>,
}

impl SubmitError {
    const fn whole(reason: Reason) -> Self {
        Self {
            reason,
            task: None,
            entry: None,
        }
    }

    /// The errno-style error.
    pub const fn error(&self) -> Error {
        self.reason.error()
    }

    /// The positive Linux errno.
    pub const fn errno(&self) -> i32 {
        self.reason.error().errno()
    }
}

impl fmt::Display for SubmitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "submit rejected ({}): {:?}",
            self.error().name(),
            self.reason
        )?;
        if let Some(t) = self.task {
            write!(f, " in task {t}")?;
        }
        if let Some(e) = self.entry {
            write!(f, " at address-list entry {e}")?;
        }
        Ok(())
    }
}

impl From<SubmitError> for Error {
    fn from(e: SubmitError) -> Error {
        e.error()
    }
}

/// The header checks, usable before the tasks are copied from user memory: task count,
/// flags and version.
pub fn check_header(num_tasks: usize, flags: u16, version: u32) -> Result<(), SubmitError> {
    if num_tasks == 0 {
        return Err(SubmitError::whole(Reason::NoTasks));
    }
    if num_tasks > MAX_TASKS_PER_SUBMIT {
        return Err(SubmitError::whole(Reason::TooManyTasks));
    }
    if flags & !SUBMIT_FLAGS_KNOWN != 0 {
        return Err(SubmitError::whole(Reason::UnknownFlags));
    }
    if version != SUBMIT_VERSION {
        return Err(SubmitError::whole(Reason::BadVersion));
    }
    Ok(())
}

/// The per-task count check, usable before its address list is copied from user memory.
pub fn check_task_count(task: usize, num_addresses: usize) -> Result<(), SubmitError> {
    let reason = if num_addresses == 0 {
        Reason::NoAddresses
    } else if num_addresses > MAX_BUFFERS_PER_TASK {
        Reason::TooManyAddresses
    } else {
        return Ok(());
    };
    Err(SubmitError {
        reason,
        task: Some(task),
        entry: None,
    })
}

/// A task that passed validation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidatedTask {
    /// Timeout in milliseconds (`u32::MAX`: none).
    pub timeout: u32,
    /// Every address-list entry, in order: its device address and the bytes from there to
    /// the end of its buffer.
    pub addresses: Vec<Region>,
    /// The distinct buffer handles the task uses, sorted.
    pub buffers: Vec<u32>,
}

/// A submit that passed validation, for one client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidatedSubmit {
    /// The submitting client.
    pub client: ClientId,
    /// Flags of the submit.
    pub flags: u16,
    /// The tasks, in order.
    pub tasks: Vec<ValidatedTask>,
    /// The distinct buffer handles of all tasks, sorted (what [`pin`](Self::pin) pins).
    all_buffers: Vec<u32>,
}

fn reject(reason: Reason, task: usize, entry: usize) -> SubmitError {
    let e = SubmitError {
        reason,
        task: Some(task),
        entry: Some(entry),
    };
    log::debug!("{e}");
    e
}

/// Validates `desc` for `client` against the buffers in `table` and translates every
/// address-list entry (see the module documentation for the order of checks). Allocates
/// fallibly: out of memory is [`Reason::NoMemory`].
pub fn validate(
    table: &BoTable,
    client: ClientId,
    desc: &SubmitDesc<'_>,
) -> Result<ValidatedSubmit, SubmitError> {
    // 1. Fields and counts.
    check_header(desc.tasks.len(), desc.flags, desc.version).inspect_err(|e| {
        log::debug!("{e}");
    })?;
    for (t, task) in desc.tasks.iter().enumerate() {
        check_task_count(t, task.addresses.len()).inspect_err(|e| log::debug!("{e}"))?;
    }
    for (t, task) in desc.tasks.iter().enumerate() {
        if let Some(i) = task.addresses.iter().position(|a| a.reserved != 0) {
            return Err(reject(Reason::ReservedNonZero, t, i));
        }
    }
    // 2. Handles.
    for (t, task) in desc.tasks.iter().enumerate() {
        for (i, a) in task.addresses.iter().enumerate() {
            if table.lookup(client, a.handle).is_err() {
                return Err(reject(Reason::UnknownHandle, t, i));
            }
        }
    }
    // 3. Offsets, and translation.
    let oom = |_| SubmitError::whole(Reason::NoMemory);
    let mut tasks = fallible::vec_with_capacity(desc.tasks.len()).map_err(oom)?;
    let total: usize = desc.tasks.iter().map(|t| t.addresses.len()).sum();
    let mut all_buffers = fallible::vec_with_capacity(total).map_err(oom)?;
    for (t, task) in desc.tasks.iter().enumerate() {
        let mut addresses = fallible::vec_with_capacity(task.addresses.len()).map_err(oom)?;
        let mut buffers = fallible::vec_with_capacity(task.addresses.len()).map_err(oom)?;
        for (i, a) in task.addresses.iter().enumerate() {
            let bo = table
                .lookup(client, a.handle)
                .map_err(|_| reject(Reason::UnknownHandle, t, i))?;
            if a.offset >= bo.size {
                return Err(reject(Reason::OffsetOutOfRange, t, i));
            }
            let addr = bo
                .iova
                .checked_add(a.offset)
                .ok_or_else(|| reject(Reason::AddressOverflow, t, i))?;
            addresses.push(Region {
                addr,
                len: bo.size - a.offset,
            });
            buffers.push(a.handle);
        }
        buffers.sort_unstable();
        buffers.dedup();
        all_buffers.extend_from_slice(&buffers);
        tasks.push(ValidatedTask {
            timeout: task.timeout,
            addresses,
            buffers,
        });
    }
    all_buffers.sort_unstable();
    all_buffers.dedup();
    Ok(ValidatedSubmit {
        client,
        flags: desc.flags,
        tasks,
        all_buffers,
    })
}

impl ValidatedSubmit {
    /// Distinct handles used by any task, sorted.
    pub fn buffers(&self) -> &[u32] {
        &self.all_buffers
    }

    /// Pins every buffer the submit uses (call before starting it). On failure nothing stays
    /// pinned.
    pub fn pin(&self, table: &mut BoTable) -> Result<(), Error> {
        let bufs = self.buffers();
        for (n, &h) in bufs.iter().enumerate() {
            if let Err(e) = table.pin(self.client, h) {
                for &done in &bufs[..n] {
                    // Undo the pins taken so far; they cannot fail, we just took them.
                    let _ = table.unpin(self.client, done);
                }
                return Err(e);
            }
        }
        Ok(())
    }

    /// Drops the pins taken by [`pin`](Self::pin) (call when the submit has ended).
    pub fn unpin(&self, table: &mut BoTable) -> Result<(), Error> {
        let mut result = Ok(());
        for &h in self.buffers() {
            if let Err(e) = table.unpin(self.client, h) {
                result = Err(e);
            }
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bo::BoConfig;
    use crate::iova::DeviceAddr;
    use alloc::vec;

    const A: ClientId = ClientId(1);
    const B: ClientId = ClientId(2);

    fn table() -> (BoTable, u32, u32) {
        let mut t = BoTable::new(BoConfig::default()).unwrap();
        let a = t.create(A, 0x100, 0).unwrap().get();
        let b = t.create(B, 0x100, 0).unwrap().get();
        (t, a, b)
    }

    fn mh(handle: u32, offset: u64) -> MemHandle {
        MemHandle {
            handle,
            reserved: 0,
            offset,
        }
    }

    fn one_task<'a>(addresses: &'a [MemHandle]) -> [TaskDesc<'a>; 1] {
        [TaskDesc {
            timeout: u32::MAX,
            addresses,
        }]
    }

    fn run(
        t: &BoTable,
        flags: u16,
        version: u32,
        tasks: &[TaskDesc<'_>],
    ) -> Result<ValidatedSubmit, SubmitError> {
        validate(
            t,
            A,
            &SubmitDesc {
                flags,
                version,
                tasks,
            },
        )
    }

    #[test]
    fn translates() {
        let (t, a, _) = table();
        let bo = *t.lookup(A, a).unwrap();
        let list = [mh(a, 0), mh(a, 0xff), mh(a, 0x10)];
        let v = run(&t, SUBMIT_FLAGS_ATOMIC, 0, &one_task(&list)).unwrap();
        assert_eq!(v.tasks.len(), 1);
        assert_eq!(
            v.tasks[0].addresses,
            vec![
                Region {
                    addr: bo.iova,
                    len: bo.size
                },
                Region {
                    addr: DeviceAddr(bo.iova.0 + 0xff),
                    len: bo.size - 0xff
                },
                Region {
                    addr: DeviceAddr(bo.iova.0 + 0x10),
                    len: bo.size - 0x10
                },
            ]
        );
        assert_eq!(v.tasks[0].buffers, vec![a]);
        assert_eq!(v.tasks[0].timeout, u32::MAX);
    }

    #[test]
    fn header_rejections() {
        let (t, a, _) = table();
        let list = [mh(a, 0)];
        let err = |r: Result<ValidatedSubmit, SubmitError>| r.unwrap_err();
        let e = err(run(&t, 0, 0, &[]));
        assert_eq!((e.reason, e.errno()), (Reason::NoTasks, 22));
        let many = [TaskDesc {
            timeout: 0,
            addresses: &list,
        }; MAX_TASKS_PER_SUBMIT + 1];
        let e = err(run(&t, 0, 0, &many));
        assert_eq!((e.reason, e.errno()), (Reason::TooManyTasks, 7));
        assert!(run(&t, 0, 0, &many[..MAX_TASKS_PER_SUBMIT]).is_ok());
        let e = err(run(&t, 2, 0, &one_task(&list)));
        assert_eq!((e.reason, e.errno()), (Reason::UnknownFlags, 22));
        let e = err(run(&t, 0x8000, 0, &one_task(&list)));
        assert_eq!(e.reason, Reason::UnknownFlags);
        let e = err(run(&t, 0, 1, &one_task(&list)));
        assert_eq!((e.reason, e.errno()), (Reason::BadVersion, 22));
    }

    #[test]
    fn task_rejections() {
        let (t, a, _) = table();
        let e = run(&t, 0, 0, &one_task(&[])).unwrap_err();
        assert_eq!(
            (e.reason, e.task, e.errno()),
            (Reason::NoAddresses, Some(0), 22)
        );
        let big = vec![mh(a, 0); MAX_BUFFERS_PER_TASK + 1];
        let e = run(&t, 0, 0, &one_task(&big)).unwrap_err();
        assert_eq!((e.reason, e.errno()), (Reason::TooManyAddresses, 7));
        assert!(run(&t, 0, 0, &one_task(&big[..MAX_BUFFERS_PER_TASK])).is_ok());
        let mut list = [mh(a, 0), mh(a, 0)];
        list[1].reserved = 1;
        let e = run(&t, 0, 0, &one_task(&list)).unwrap_err();
        assert_eq!(
            (e.reason, e.task, e.entry, e.errno()),
            (Reason::ReservedNonZero, Some(0), Some(1), 22)
        );
    }

    #[test]
    fn handle_rejections() {
        let (t, a, b) = table();
        for bad in [0, b, 9999] {
            let list = [mh(a, 0), mh(bad, 0)];
            let e = run(&t, 0, 0, &one_task(&list)).unwrap_err();
            assert_eq!(
                (e.reason, e.entry, e.errno()),
                (Reason::UnknownHandle, Some(1), 2),
                "handle {bad}"
            );
        }
    }

    #[test]
    fn offset_rejections() {
        let (t, a, _) = table();
        for off in [0x100, 0x1000, u64::MAX] {
            let list = [mh(a, off)];
            let e = run(&t, 0, 0, &one_task(&list)).unwrap_err();
            assert_eq!(
                (e.reason, e.errno()),
                (Reason::OffsetOutOfRange, 22),
                "offset {off:#x}"
            );
        }
    }

    #[test]
    fn cheapest_check_wins() {
        let (t, a, b) = table();
        // Task 0 has a bad offset, task 1 a foreign handle, task 2 a reserved field:
        // the reserved field (a field check) is reported, then the handle, then the offset.
        let t0 = [mh(a, 0x100)];
        let t1 = [mh(b, 0)];
        let mut t2 = [mh(a, 0)];
        t2[0].reserved = 5;
        let all = [
            TaskDesc {
                timeout: 0,
                addresses: &t0,
            },
            TaskDesc {
                timeout: 0,
                addresses: &t1,
            },
            TaskDesc {
                timeout: 0,
                addresses: &t2,
            },
        ];
        let e = run(&t, 0, 0, &all).unwrap_err();
        assert_eq!((e.reason, e.task), (Reason::ReservedNonZero, Some(2)));
        let e = run(&t, 0, 0, &all[..2]).unwrap_err();
        assert_eq!((e.reason, e.task), (Reason::UnknownHandle, Some(1)));
        let e = run(&t, 0, 0, &all[..1]).unwrap_err();
        assert_eq!((e.reason, e.task), (Reason::OffsetOutOfRange, Some(0)));
        // Header problems beat everything.
        let e = run(&t, 4, 0, &all).unwrap_err();
        assert_eq!(e.reason, Reason::UnknownFlags);
    }

    #[test]
    fn pin_blocks_destroy_until_unpinned() {
        let (mut t, a, _) = table();
        let a2 = t.create(A, 8, 0).unwrap().get();
        let list = [mh(a, 0), mh(a2, 4), mh(a, 8)];
        let v = run(&t, 0, 0, &one_task(&list)).unwrap();
        assert_eq!(v.buffers(), [a, a2]);
        v.pin(&mut t).unwrap();
        assert_eq!(
            t.lookup(A, a).unwrap().pin_count,
            1,
            "pinned once per submit"
        );
        assert_eq!(t.destroy(A, a2).unwrap_err(), Error::Busy);
        v.unpin(&mut t).unwrap();
        t.destroy(A, a2).unwrap();
        assert_eq!(v.pin(&mut t).unwrap_err(), Error::NoEntry);
        assert_eq!(t.lookup(A, a).unwrap().pin_count, 0, "rolled back");
    }

    #[test]
    fn error_display_has_context() {
        let e = SubmitError {
            reason: Reason::UnknownHandle,
            task: Some(3),
            entry: Some(17),
        };
        assert_eq!(
            alloc::format!("{e}"),
            "submit rejected (ENOENT): UnknownHandle in task 3 at address-list entry 17"
        );
        assert_eq!(Error::from(e), Error::NoEntry);
    }
}
