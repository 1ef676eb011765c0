//! The `opendla` DRM ioctl ABI: structures and request numbers.
//!
//! Mirrors `kmd/port/linux/include/nvdla_ioctl.h` of NVIDIA's `nvdla/sw`. Every structure is
//! `#[repr(C)]` with its padding spelled out as a named field, and its size is asserted at
//! compile time: the size is part of the ioctl request number, so a layout change would
//! silently produce a different (and unknown to the kernel) request.
//!
//! Pointers inside the structures (`SubmitArgs::tasks`, `SubmitTask::address_list`) are user
//! virtual addresses carried in a `u64`, as the kernel ABI requires on every architecture.
//!
//! Fields documented as "reserved, must be zero" MUST be written as zero by callers; our KMD
//! rejects nonzero values with `EINVAL` (upstream ignores them, so zero is always safe).

use core::mem::size_of;

/// One entry of a task's address list: a buffer and a byte offset inside it.
///
/// The kernel translates it to the device address `iova(buffer) + offset`. Upstream's
/// runtime names the buffer by the file descriptor of its PRIME export (`NvDlaSubmit` puts
/// the dma-buf fd in `handle`) and opendla.ko resolves it as one
/// (`drm_gem_prime_fd_to_handle`), so that is what [`crate::linux`] sends. Our kernel module
/// takes such an fd, or a GEM handle that is not one; the in-process KMD takes GEM handles.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct NvdlaMemHandle {
    /// The buffer: its dma-buf file descriptor (upstream's convention), or its GEM handle
    /// as returned by [`DRM_IOCTL_NVDLA_GEM_CREATE`] where the kernel accepts one.
    pub handle: u32,
    /// Padding to align `offset`; reserved, must be zero.
    pub reserved: u32,
    /// Byte offset from the start of the buffer; MUST be smaller than the buffer size.
    pub offset: u64,
}
const _: () = assert!(size_of::<NvdlaMemHandle>() == 16);

/// Maximum number of entries in one task's address list (`NVDLA_MAX_BUFFERS_PER_TASK`).
pub const MAX_BUFFERS_PER_TASK: u32 = 6144;
/// `SubmitTask::timeout` value meaning "wait forever" (`NVDLA_NO_TIMEOUT`).
pub const NO_TIMEOUT: u32 = 0xffff_ffff;
/// Maximum number of tasks in one submit (`NVDLA_MAX_TASKS_PER_SUBMIT`).
pub const MAX_TASKS_PER_SUBMIT: u16 = 24;
/// `SubmitArgs::flags` bit: submit all tasks or none (`NVDLA_SUBMIT_FLAGS_ATOMIC`).
///
/// Upstream defines the bit but its kernel module never reads `flags`.
pub const SUBMIT_FLAGS_ATOMIC: u16 = 1 << 0;
/// All `SubmitArgs::flags` bits that have a meaning; the others are reserved, must be zero.
pub const SUBMIT_FLAGS_KNOWN: u16 = SUBMIT_FLAGS_ATOMIC;

/// One DLA task of a submit (`struct nvdla_ioctl_submit_task`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct SubmitTask {
    /// Number of [`NvdlaMemHandle`] entries at `address_list`; at most
    /// [`MAX_BUFFERS_PER_TASK`]. Entry 0 is the network descriptor.
    pub num_addresses: u32,
    /// Completion timeout; [`NO_TIMEOUT`] waits forever. Upstream's header comments this field
    /// as "reserved" and its kernel module ignores it; the unit is driver defined (our KMD:
    /// milliseconds).
    pub timeout: u32,
    /// User pointer to an array of `num_addresses` [`NvdlaMemHandle`].
    pub address_list: u64,
}
const _: () = assert!(size_of::<SubmitTask>() == 16);

/// Argument of [`DRM_IOCTL_NVDLA_SUBMIT`] (`struct nvdla_submit_args`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct SubmitArgs {
    /// User pointer to an array of `num_tasks` [`SubmitTask`].
    pub tasks: u64,
    /// Number of tasks; at most [`MAX_TASKS_PER_SUBMIT`].
    pub num_tasks: u16,
    /// Submit flags: [`SUBMIT_FLAGS_ATOMIC`]; other bits reserved, must be zero.
    pub flags: u16,
    /// Version of the task structure; upstream only knows version 0, so it MUST be zero.
    pub version: u32,
}
const _: () = assert!(size_of::<SubmitArgs>() == 16);

/// Argument of [`DRM_IOCTL_NVDLA_GEM_CREATE`] (`struct nvdla_gem_create_args`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct GemCreateArgs {
    /// Out: the new buffer's handle (nonzero), written by the kernel.
    pub handle: u32,
    /// In: implementation-specific flags; none are defined, so reserved, must be zero.
    pub flags: u32,
    /// In: size of the buffer in bytes; MUST be nonzero. The kernel rounds it up to pages.
    pub size: u64,
}
const _: () = assert!(size_of::<GemCreateArgs>() == 16);

/// Argument of [`DRM_IOCTL_NVDLA_GEM_MMAP`] (`struct nvdla_gem_map_offset_args`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct GemMapOffsetArgs {
    /// In: handle of the buffer to map.
    pub handle: u32,
    /// Padding to align `offset`; reserved, must be zero.
    pub reserved: u32,
    /// Out: the offset to pass to `mmap(2)` on the DRM file descriptor.
    pub offset: u64,
}
const _: () = assert!(size_of::<GemMapOffsetArgs>() == 16);

/// Argument of [`DRM_IOCTL_NVDLA_GEM_DESTROY`] (`struct nvdla_gem_destroy_args`).
///
/// Only 4 bytes long: there is no padding, and the request number encodes size 4.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct GemDestroyArgs {
    /// In: handle of the buffer to release.
    pub handle: u32,
}
const _: () = assert!(size_of::<GemDestroyArgs>() == 4);

/// DRM's ioctl type letter (`DRM_IOCTL_BASE`).
pub const DRM_IOCTL_BASE: u8 = b'd';
/// First ioctl number available to drivers (`DRM_COMMAND_BASE`).
pub const DRM_COMMAND_BASE: u8 = 0x40;

/// Driver-relative command number of SUBMIT (`DRM_NVDLA_SUBMIT`).
pub const DRM_NVDLA_SUBMIT: u8 = 0x00;
/// Driver-relative command number of GEM_CREATE (`DRM_NVDLA_GEM_CREATE`).
pub const DRM_NVDLA_GEM_CREATE: u8 = 0x01;
/// Driver-relative command number of GEM_MMAP (`DRM_NVDLA_GEM_MMAP`).
pub const DRM_NVDLA_GEM_MMAP: u8 = 0x02;
/// Driver-relative command number of GEM_DESTROY (`DRM_NVDLA_GEM_DESTROY`).
pub const DRM_NVDLA_GEM_DESTROY: u8 = 0x03;

// The generic Linux `_IOC` encoding (asm-generic/ioctl.h, used by x86, arm, arm64, riscv):
// bits 0..8 number, 8..16 type, 16..30 size, 30..32 direction.
const IOC_NRSHIFT: u32 = 0;
const IOC_TYPESHIFT: u32 = 8;
const IOC_SIZESHIFT: u32 = 16;
const IOC_DIRSHIFT: u32 = 30;
const IOC_SIZEBITS: u32 = 14;
const IOC_WRITE: u32 = 1;
const IOC_READ: u32 = 2;

/// Linux `_IOC(dir, type, nr, size)` for the asm-generic encoding.
///
/// Panics at compile time (when used in a `const`) if `size` does not fit in 14 bits.
pub const fn ioc(dir: u32, ty: u8, nr: u8, size: usize) -> u32 {
    assert!(size < (1 << IOC_SIZEBITS), "ioctl argument too large");
    (dir << IOC_DIRSHIFT)
        | ((ty as u32) << IOC_TYPESHIFT)
        | ((nr as u32) << IOC_NRSHIFT)
        | ((size as u32) << IOC_SIZESHIFT)
}

/// Linux `DRM_IOWR(DRM_COMMAND_BASE + nr, T)` where `size` is `sizeof(T)`.
pub const fn drm_iowr(nr: u8, size: usize) -> u32 {
    ioc(
        IOC_READ | IOC_WRITE,
        DRM_IOCTL_BASE,
        DRM_COMMAND_BASE + nr,
        size,
    )
}

/// Request number of the SUBMIT ioctl.
pub const DRM_IOCTL_NVDLA_SUBMIT: u32 = drm_iowr(DRM_NVDLA_SUBMIT, size_of::<SubmitArgs>());
/// Request number of the GEM_CREATE ioctl.
pub const DRM_IOCTL_NVDLA_GEM_CREATE: u32 =
    drm_iowr(DRM_NVDLA_GEM_CREATE, size_of::<GemCreateArgs>());
/// Request number of the GEM_MMAP ioctl.
pub const DRM_IOCTL_NVDLA_GEM_MMAP: u32 =
    drm_iowr(DRM_NVDLA_GEM_MMAP, size_of::<GemMapOffsetArgs>());
/// Request number of the GEM_DESTROY ioctl.
pub const DRM_IOCTL_NVDLA_GEM_DESTROY: u32 =
    drm_iowr(DRM_NVDLA_GEM_DESTROY, size_of::<GemDestroyArgs>());

/// Argument of the DRM core's `DRM_IOCTL_PRIME_HANDLE_TO_FD` (`struct drm_prime_handle`):
/// exports a GEM object as a dma-buf file descriptor.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DrmPrimeHandle {
    /// In: the GEM handle.
    pub handle: u32,
    /// In: `DRM_CLOEXEC` (= `O_CLOEXEC`) and/or `DRM_RDWR` (= `O_RDWR`).
    pub flags: u32,
    /// Out: the dma-buf file descriptor.
    pub fd: i32,
}
const _: () = assert!(size_of::<DrmPrimeHandle>() == 12);

/// Request number of `DRM_IOCTL_PRIME_HANDLE_TO_FD` (`DRM_IOWR(0x2d, struct drm_prime_handle)`).
pub const DRM_IOCTL_PRIME_HANDLE_TO_FD: u32 = ioc(
    IOC_READ | IOC_WRITE,
    DRM_IOCTL_BASE,
    0x2d,
    size_of::<DrmPrimeHandle>(),
);

impl From<NvdlaMemHandle> for nvdla_kmd::submit::MemHandle {
    /// The KMD's view of an address-list entry copied from user memory (reserved field kept,
    /// so the KMD can reject it when nonzero).
    fn from(m: NvdlaMemHandle) -> Self {
        Self {
            handle: m.handle,
            reserved: m.reserved,
            offset: m.offset,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::mem::{align_of, offset_of};

    #[test]
    fn kmd_limits_agree_with_uapi() {
        use nvdla_kmd::submit as k;
        assert_eq!(k::MAX_TASKS_PER_SUBMIT, usize::from(MAX_TASKS_PER_SUBMIT));
        assert_eq!(k::MAX_BUFFERS_PER_TASK, MAX_BUFFERS_PER_TASK as usize);
        assert_eq!(k::SUBMIT_FLAGS_KNOWN, SUBMIT_FLAGS_KNOWN);
        let m = NvdlaMemHandle {
            handle: 5,
            reserved: 1,
            offset: 9,
        };
        let k: k::MemHandle = m.into();
        assert_eq!((k.handle, k.reserved, k.offset), (5, 1, 9));
    }

    /// Values printed by a C program that includes upstream `nvdla_ioctl.h` after
    /// `<linux/ioctl.h>` with `DRM_IOWR`/`DRM_COMMAND_BASE` defined as in `<drm/drm.h>`
    /// (gcc 12, x86_64 Linux UAPI headers): computed independently of this module.
    #[test]
    fn request_numbers_match_c_header() {
        assert_eq!(DRM_IOCTL_NVDLA_SUBMIT, 0xc010_6440);
        assert_eq!(DRM_IOCTL_NVDLA_GEM_CREATE, 0xc010_6441);
        assert_eq!(DRM_IOCTL_NVDLA_GEM_MMAP, 0xc010_6442);
        assert_eq!(DRM_IOCTL_NVDLA_GEM_DESTROY, 0xc004_6443);
        // drm.h: DRM_IOWR(0x2d, struct drm_prime_handle).
        assert_eq!(DRM_IOCTL_PRIME_HANDLE_TO_FD, 0xc00c_642d);
    }

    #[test]
    fn layouts_match_c_header() {
        assert_eq!(offset_of!(NvdlaMemHandle, handle), 0);
        assert_eq!(offset_of!(NvdlaMemHandle, reserved), 4);
        assert_eq!(offset_of!(NvdlaMemHandle, offset), 8);
        assert_eq!(offset_of!(SubmitTask, num_addresses), 0);
        assert_eq!(offset_of!(SubmitTask, timeout), 4);
        assert_eq!(offset_of!(SubmitTask, address_list), 8);
        // From the same C program: tasks 0, num_tasks 8, flags 10, version 12.
        assert_eq!(offset_of!(SubmitArgs, tasks), 0);
        assert_eq!(offset_of!(SubmitArgs, num_tasks), 8);
        assert_eq!(offset_of!(SubmitArgs, flags), 10);
        assert_eq!(offset_of!(SubmitArgs, version), 12);
        assert_eq!(offset_of!(GemCreateArgs, handle), 0);
        assert_eq!(offset_of!(GemCreateArgs, flags), 4);
        assert_eq!(offset_of!(GemCreateArgs, size), 8);
        assert_eq!(offset_of!(GemMapOffsetArgs, offset), 8);
        assert_eq!(align_of::<GemDestroyArgs>(), 4);
    }

    #[test]
    fn ioc_fields_decode() {
        let n = DRM_IOCTL_NVDLA_GEM_MMAP;
        assert_eq!(n >> 30, 3, "read|write");
        assert_eq!((n >> 16) & 0x3fff, 16, "size");
        assert_eq!((n >> 8) & 0xff, u32::from(b'd'));
        assert_eq!(n & 0xff, 0x42);
    }

    #[test]
    fn constants() {
        assert_eq!(MAX_BUFFERS_PER_TASK, 6144);
        assert_eq!(MAX_TASKS_PER_SUBMIT, 24);
        assert_eq!(NO_TIMEOUT, u32::MAX);
        assert_eq!(SUBMIT_FLAGS_ATOMIC, 1);
    }
}
