//! A device whose KMD and firmware run in the runtime's process: [`HostedDevice`] over any
//! [`HostedOs`], the hardware behind the register bus (the in-process model, `vp`; NVIDIA's
//! RTL behind the harness, `rtl`).
//!
//! Each buffer has a host copy that [`Device::map_buffer`] hands out; [`Device::submit`]
//! writes the host copies of the buffers a submit names into device memory before it runs
//! and reads them back after, which gives exactly the visibility the [`Device`] contract asks
//! of a mapping. Where the OS logs the device's writes ([`HostedOs::logs_writes`], the
//! model), only the buffers mapped since they were last synchronised go in, and only those
//! the device wrote come back: a network's weights cross once, not twice per run.

use std::collections::{BTreeMap, BTreeSet};

use nvdla_kmd::bo::{BoConfig, ClientId};
use nvdla_kmd::submit::{MemHandle, SubmitDesc, TaskDesc, SUBMIT_VERSION};
use nvdla_kmd::{Kmd, KmdOs, SubmitFailure};

use crate::device::{BufferHandle, Device, DeviceError, DeviceTimings, Operation, Task};

/// The hardware side of a [`HostedDevice`]: a [`KmdOs`] with hooks for what a hosted device
/// reports beyond the KMD's own.
pub trait HostedOs: KmdOs {
    /// Called before a buffer's host copy `bytes` is written to device address `addr`.
    fn before_load(&mut self, _addr: u64, _bytes: &[u8]) {}

    /// More about a failed submit than the KMD says (for example why no interrupt came).
    fn diagnosis(&self, _failure: &SubmitFailure) -> Option<String> {
        None
    }

    /// What the hardware timed during the last submit, if it times anything.
    fn take_timings(&mut self) -> Option<DeviceTimings> {
        None
    }

    /// Keep a timeline for [`HostedOs::take_timings`] (a model that estimates cycles).
    fn set_profiling(&mut self, _on: bool) {}

    /// The memory timing a model that estimates cycles assumes.
    fn set_memory_timing(&mut self, _t: &crate::device::MemoryTiming) {}

    /// Whether this OS records the device memory written ([`HostedOs::start_write_log`])
    /// and keeps device memory from one submit to the next: then a buffer's host copy is
    /// written to the device only when the host may have changed it, and read back only
    /// when the device wrote it. Otherwise every buffer a submit names goes both ways.
    fn logs_writes(&self) -> bool {
        false
    }

    /// Starts recording the device memory written (by the hardware's DMA and the
    /// firmware), forgetting what was recorded before.
    fn start_write_log(&mut self) {}

    /// The device address ranges `[start, end)` written since
    /// [`HostedOs::start_write_log`] (`None`: unknown, everything may have been).
    fn take_write_log(&mut self) -> Option<Vec<(u64, u64)>> {
        None
    }
}

/// The driver's account of a failed submit, with the hardware's diagnosis.
pub(crate) fn failure_detail<O: HostedOs>(kmd: &Kmd<O>, failure: &SubmitFailure) -> String {
    let mut detail = failure.to_string();
    if let Some(more) = kmd.os().diagnosis(failure) {
        detail.push_str("; ");
        detail.push_str(&more);
    }
    detail
}

/// An in-process NVDLA: [`Kmd`] + firmware + the hardware behind `O`, as a [`Device`].
pub struct HostedDevice<O: HostedOs> {
    pub(crate) kmd: Kmd<O>,
    /// Host copies of the live buffers, by handle.
    buffers: BTreeMap<u32, Vec<u8>>,
    /// Buffers whose host copy equals device memory (only when the OS
    /// [`HostedOs::logs_writes`]): not mapped since they were last synchronised.
    synced: BTreeSet<u32>,
    timings: Option<DeviceTimings>,
}

/// The only client of an in-process device.
pub(crate) const CLIENT: ClientId = ClientId(1);

impl<O: HostedOs> HostedDevice<O> {
    /// A device over `os` with the firmware configured for `firmware` and buffers placed by
    /// `bo`.
    pub fn with_os(
        os: O,
        firmware: nvdla_firmware::HwConfig,
        bo: BoConfig,
    ) -> Result<Self, DeviceError> {
        let kmd = Kmd::new(os, firmware, bo)
            .map_err(|e| DeviceError::from_kmd(Operation::CreateBuffer, e))?;
        Ok(Self {
            kmd,
            buffers: BTreeMap::new(),
            synced: BTreeSet::new(),
            timings: None,
        })
    }

    /// The device address and size of buffer `handle`.
    pub fn buffer_region(&self, handle: BufferHandle) -> Option<(u64, u64)> {
        let bo = self.kmd.bo(CLIENT, handle.get()).ok()?;
        Some((bo.iova.0, bo.size))
    }

    /// The driver (e.g. to inspect its buffers or the hardware).
    pub fn kmd(&self) -> &Kmd<O> {
        &self.kmd
    }

    /// The driver, mutable (device memory may change through it: every buffer is
    /// written to the device again at the next submit).
    pub fn kmd_mut(&mut self) -> &mut Kmd<O> {
        self.synced.clear();
        &mut self.kmd
    }

    /// Copies the host copies of `handles` into device memory (`to_device`) or back.
    /// Into the device: those the host may have changed (every one unless the OS
    /// [`HostedOs::logs_writes`]). Back: those overlapping `written` (every one when
    /// `None`).
    fn sync(
        &mut self,
        handles: &[u32],
        to_device: bool,
        written: Option<&[(u64, u64)]>,
    ) -> Result<(), DeviceError> {
        let io = |_| DeviceError::new(Operation::Submit, nvdla_kmd::Error::Io);
        let logs = self.kmd.os().logs_writes();
        for &h in handles {
            let bo = *self
                .kmd
                .bo(CLIENT, h)
                .map_err(|e| DeviceError::from_kmd(Operation::Submit, e))?;
            let Some(host) = self.buffers.get_mut(&h) else {
                continue;
            };
            if to_device && self.synced.contains(&h) {
                continue;
            }
            let end = bo.iova.0.saturating_add(host.len() as u64);
            if !to_device
                && written.is_some_and(|w| !w.iter().any(|&(s, e)| s < end && bo.iova.0 < e))
            {
                continue;
            }
            if logs {
                self.synced.insert(h);
            }
            let os = self.kmd.os_mut();
            let addr = nvdla_firmware::hw::DeviceAddr(bo.iova.0);
            if to_device {
                os.before_load(bo.iova.0, host);
                os.mem_write(addr, host).map_err(io)?;
            } else {
                os.mem_read(addr, host).map_err(io)?;
            }
        }
        Ok(())
    }
}

impl<O: HostedOs> Device for HostedDevice<O> {
    fn create_buffer(&mut self, size: u64) -> Result<BufferHandle, DeviceError> {
        let op = Operation::CreateBuffer;
        let h = self
            .kmd
            .gem_create(CLIENT, size, 0)
            .map_err(|e| DeviceError::from_kmd(op, e))?;
        let host = usize::try_from(size)
            .ok()
            .and_then(|n| {
                let mut v = Vec::new();
                v.try_reserve_exact(n).ok()?;
                v.resize(n, 0);
                Some(v)
            })
            .ok_or(DeviceError::new(op, nvdla_kmd::Error::NoMemory));
        let host = match host {
            Ok(v) => v,
            Err(e) => {
                let _ = self.kmd.gem_destroy(CLIENT, h.get());
                return Err(e);
            }
        };
        self.buffers.insert(h.get(), host);
        BufferHandle::new(h.get()).ok_or(DeviceError::new(op, nvdla_kmd::Error::Io))
    }

    fn create_sram_buffer(&mut self, size: u64) -> Result<BufferHandle, DeviceError> {
        let op = Operation::CreateBuffer;
        // No host copy: the engines alone use it, so a submit has nothing to sync.
        let h = self
            .kmd
            .gem_create(CLIENT, size, nvdla_kmd::bo::BO_FLAG_CVSRAM)
            .map_err(|e| {
                let e = DeviceError::from_kmd(op, e);
                if self.kmd.bos().config().cvsram.is_none() {
                    e.with_detail("this device has no CV-SRAM")
                } else {
                    e
                }
            })?;
        BufferHandle::new(h.get()).ok_or(DeviceError::new(op, nvdla_kmd::Error::Io))
    }

    fn map_buffer(&mut self, handle: BufferHandle) -> Result<&mut [u8], DeviceError> {
        let op = Operation::MapBuffer;
        // The caller may write the host copy from here on.
        self.synced.remove(&handle.get());
        self.kmd
            .gem_mmap(CLIENT, handle.get())
            .map_err(|e| DeviceError::from_kmd(op, e))?;
        if self.kmd.bo(CLIENT, handle.get()).is_ok_and(|bo| bo.cvsram) {
            return Err(DeviceError::new(op, nvdla_kmd::Error::Invalid)
                .with_detail("a CV-SRAM buffer has no host mapping"));
        }
        self.buffers
            .get_mut(&handle.get())
            .map(Vec::as_mut_slice)
            .ok_or(DeviceError::new(op, nvdla_kmd::Error::NoEntry))
    }

    fn destroy_buffer(&mut self, handle: BufferHandle) -> Result<(), DeviceError> {
        self.kmd
            .gem_destroy(CLIENT, handle.get())
            .map_err(|e| DeviceError::from_kmd(Operation::DestroyBuffer, e))?;
        self.buffers.remove(&handle.get());
        self.synced.remove(&handle.get());
        Ok(())
    }

    fn submit(&mut self, tasks: &[Task<'_>]) -> Result<(), DeviceError> {
        let op = Operation::Submit;
        let lists: Vec<Vec<MemHandle>> = tasks
            .iter()
            .map(|t| {
                t.addresses
                    .iter()
                    .map(|a| MemHandle {
                        handle: a.handle.get(),
                        reserved: 0,
                        offset: a.offset,
                    })
                    .collect()
            })
            .collect();
        let descs: Vec<TaskDesc<'_>> = tasks
            .iter()
            .zip(&lists)
            .map(|(t, l)| TaskDesc {
                timeout: t.timeout.to_uapi(),
                addresses: l,
            })
            .collect();
        let desc = SubmitDesc {
            flags: 0,
            version: SUBMIT_VERSION,
            tasks: &descs,
        };
        let mut used: Vec<u32> = lists.iter().flatten().map(|a| a.handle).collect();
        used.sort_unstable();
        used.dedup();
        // Unknown handles are left for the KMD to reject with its own error.
        used.retain(|h| self.buffers.contains_key(h));
        self.sync(&used, true, None)?;
        let logs = self.kmd.os().logs_writes();
        if logs {
            self.kmd.os_mut().start_write_log();
        }
        let result = self.kmd.submit(CLIENT, &desc);
        let written = if logs {
            self.kmd.os_mut().take_write_log()
        } else {
            None
        };
        self.sync(&used, false, written.as_deref())?;
        if let Some(t) = self.kmd.os_mut().take_timings() {
            // Several submits (a network with CPU partitions) add up until taken.
            match &mut self.timings {
                Some(all) => {
                    all.ops.extend(t.ops);
                    all.total_cycles += t.total_cycles;
                    all.bytes_read += t.bytes_read;
                    all.bytes_written += t.bytes_written;
                }
                None => self.timings = Some(t),
            }
        }
        match result {
            Ok(report) => {
                log::debug!(
                    "submit done: {} task(s), {} interrupt(s)",
                    report.tasks,
                    report.interrupts
                );
                Ok(())
            }
            Err(failure) => Err(DeviceError::new(op, failure.error())
                .with_detail(failure_detail(&self.kmd, &failure))),
        }
    }

    fn take_timings(&mut self) -> Option<DeviceTimings> {
        self.timings.take()
    }

    fn set_profiling(&mut self, on: bool) {
        self.kmd.os_mut().set_profiling(on);
    }

    fn set_memory_timing(&mut self, t: &crate::device::MemoryTiming) {
        self.kmd.os_mut().set_memory_timing(t);
    }
}
