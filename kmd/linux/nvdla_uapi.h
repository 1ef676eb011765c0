/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR BSD-3-Clause */
/*
 * The opendla ioctl ABI as this module implements it: the same request numbers and
 * structure layouts as NVIDIA's opendla.ko (so its nvdla_runtime and ours both work), with
 * the reserved fields defined as "must be zero". Every structure is 8-byte aligned with no
 * implicit padding; the sizes are part of the request numbers and are checked below.
 * The Rust mirror is port/src/uapi.rs.
 */
#ifndef NVDLA_UAPI_H
#define NVDLA_UAPI_H

#include <drm/drm.h>

#define NVDLA_MAX_BUFFERS_PER_TASK 6144
#define NVDLA_MAX_TASKS_PER_SUBMIT 24
#define NVDLA_NO_TIMEOUT 0xffffffffu
#define NVDLA_SUBMIT_FLAGS_ATOMIC (1u << 0)

/* One address-list entry: byte `offset` in buffer `handle`. */
struct nvdla_mem_handle {
	__u32 handle;
	__u32 reserved; /* must be zero */
	__u64 offset;
};

/* One task: entry 0 of the address list is the network descriptor. */
struct nvdla_ioctl_submit_task {
	__u32 num_addresses;
	__u32 timeout; /* milliseconds; NVDLA_NO_TIMEOUT waits until killed */
	__u64 address_list; /* user pointer to num_addresses struct nvdla_mem_handle */
};

struct nvdla_submit_args {
	__u64 tasks; /* user pointer to num_tasks struct nvdla_ioctl_submit_task */
	__u16 num_tasks;
	__u16 flags; /* NVDLA_SUBMIT_FLAGS_*; other bits must be zero */
	__u32 version; /* must be zero */
};

struct nvdla_gem_create_args {
	__u32 handle; /* out */
	__u32 flags; /* must be zero */
	__u64 size;
};

struct nvdla_gem_map_offset_args {
	__u32 handle;
	__u32 reserved; /* must be zero */
	__u64 offset; /* out: pass to mmap(2) on the same file */
};

struct nvdla_gem_destroy_args {
	__u32 handle;
};

#define DRM_NVDLA_SUBMIT 0x00
#define DRM_NVDLA_GEM_CREATE 0x01
#define DRM_NVDLA_GEM_MMAP 0x02
#define DRM_NVDLA_GEM_DESTROY 0x03

#define DRM_IOCTL_NVDLA_SUBMIT \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NVDLA_SUBMIT, struct nvdla_submit_args)
#define DRM_IOCTL_NVDLA_GEM_CREATE \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NVDLA_GEM_CREATE, struct nvdla_gem_create_args)
#define DRM_IOCTL_NVDLA_GEM_MMAP \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NVDLA_GEM_MMAP, struct nvdla_gem_map_offset_args)
#define DRM_IOCTL_NVDLA_GEM_DESTROY \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NVDLA_GEM_DESTROY, struct nvdla_gem_destroy_args)

#endif
