/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The boundary between the C glue (nvdla_drv.c) and the Rust driver core (rust/, linked in
 * as nvdla_rs.o). Rust -> C: the nvdla_glue_* services. C -> Rust: the nvdla_rs_* driver
 * operations, called in process context with the device's state lock held (the hardware lock
 * for nvdla_rs_submit_run); they return 0 or a negative errno. The Rust side is
 * rust/src/{os,ffi,rt,alloc_shim}.rs.
 */
#ifndef NVDLA_GLUE_H
#define NVDLA_GLUE_H

#include <linux/types.h>
#include "nvdla_uapi.h"

struct nvdla_rs;
struct nvdla_rs_submit;

/* Hardware configurations (nvdla_rs_new's hw). */
enum nvdla_hw {
	NVDLA_HW_NV_FULL = 0,
	NVDLA_HW_NV_SMALL = 1,
	NVDLA_HW_NV_LARGE = 2,
	NVDLA_HW_NV_MEDIUM_1024_FULL = 3,
	NVDLA_HW_NV_MEDIUM_512 = 4,
	NVDLA_HW_NV_SMALL_256 = 5,
	NVDLA_HW_NV_SMALL_256_FULL = 6,
};

/* A task after copy_from_user. */
struct nvdla_rs_task {
	u32 num_addresses;
	u32 timeout;
	const struct nvdla_mem_handle *addresses;
};

/* Rust -> C. `ctx` is the struct nvdla_device * given to nvdla_rs_new. */
int nvdla_glue_reg_read(void *ctx, u32 offset, u32 *value);
int nvdla_glue_reg_write(void *ctx, u32 offset, u32 value);
int nvdla_glue_mem_read(void *ctx, u64 addr, u8 *buf, size_t len);
int nvdla_glue_mem_write(void *ctx, u64 addr, const u8 *buf, size_t len);
u64 nvdla_glue_now_ms(void *ctx);
/* 1: interrupt; 0: deadline passed; -EINTR: the waiting task was killed. */
int nvdla_glue_wait_irq(void *ctx, u64 deadline_ms, bool forever);
void nvdla_glue_reset(void *ctx);
void *nvdla_glue_alloc(size_t size, size_t align);
void nvdla_glue_free(void *ptr);
/* level: 1 error, 2 warn, 3 info, 4 debug, 5 trace (the log crate's numbering). */
void nvdla_glue_log(u32 level, const u8 *msg, size_t len);
void __noreturn nvdla_glue_panic(const u8 *msg, size_t len);

/* C -> Rust. */
struct nvdla_rs *nvdla_rs_new(void *ctx, u32 hw, u64 iova_base, u64 iova_size,
			      u64 max_bo_size, bool debug, u32 *intr_status);
void nvdla_rs_free(struct nvdla_rs *rs);
int nvdla_rs_gem_create(struct nvdla_rs *rs, u32 client, u64 size, u32 flags, u32 *handle,
			u64 *iova, u64 *len);
int nvdla_rs_gem_mmap(struct nvdla_rs *rs, u32 client, u32 handle, u64 *offset);
int nvdla_rs_gem_destroy(struct nvdla_rs *rs, u32 client, u32 handle);
int nvdla_rs_mmap_lookup(struct nvdla_rs *rs, u32 client, u64 offset, u32 *handle, u64 *iova,
			 u64 *len);
int nvdla_rs_mmap_release(struct nvdla_rs *rs, u32 client, u32 handle);
u32 nvdla_rs_close_client(struct nvdla_rs *rs, u32 client);
int nvdla_rs_check_submit(u16 num_tasks, u16 flags, u32 version);
int nvdla_rs_check_task(u32 task, u32 num_addresses);
/* A submit in three steps: prepare and finish with the state lock, run with the hardware
 * lock only. finish must follow a successful prepare whatever run did; rs may be NULL there
 * (device gone). */
int nvdla_rs_submit_prepare(struct nvdla_rs *rs, u32 client, const struct nvdla_rs_task *tasks,
			    u16 num_tasks, u16 flags, u32 version, struct nvdla_rs_submit **out);
int nvdla_rs_submit_run(struct nvdla_rs *rs, const struct nvdla_rs_submit *submit);
void nvdla_rs_submit_finish(struct nvdla_rs *rs, struct nvdla_rs_submit *submit);

#endif
