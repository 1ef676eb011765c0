// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * nvdla.ko: the Linux glue of the Rust NVDLA driver.
 *
 * This file only does what needs Linux: it binds to an NVDLA (a device-tree platform device
 * with upstream opendla's compatible strings, or the virtual platform's PCI bridge), maps
 * its registers, takes its interrupt, allocates the coherent DMA memory every buffer object
 * lives in, and exposes the opendla ioctls on a DRM render node. Every decision (buffer
 * handles and ownership, submit validation, running tasks through the firmware scheduler,
 * timeouts and reset, diagnosis) is in the Rust core (rust/, nvdla_glue.h).
 *
 * Locking: two mutexes per device, one per half of the Rust core. `lock` (the state lock)
 * guards the buffer table: every ioctl, mmap, close, munmap and dma-buf release takes it for
 * a short, non-blocking call and never while waiting for the hardware. `hw_lock` guards the
 * hardware runner: a submit validates and pins its buffers under `lock`, drops it, runs its
 * tasks under `hw_lock` (the hardware runs one task at a time), then unpins under `lock`. So
 * a hung or long task delays only other submits; closing a file, unmapping a buffer or
 * releasing a dma-buf, from any process, never waits for it. Lock order: hw_lock, then lock
 * (only device removal holds both). Ioctls take `lock` interruptibly and `hw_lock`
 * interruptibly (-ERESTARTSYS, nothing has run yet); the interrupt wait is killable (a task
 * without a timeout, with timeout_ms=0, cannot make its process unkillable; a kill abandons
 * the task with EINTR); release paths take `lock` uninterruptibly, which is fine because it
 * is only ever held briefly.
 *
 * Timeouts: a task's own timeout wins; a task without one (0 or 0xffffffff) gets the
 * timeout_ms module parameter (default 30 s; 0: wait forever, killably).
 *
 * Allocation: the Rust core allocates fallibly (ENOMEM, never a panic). The fail_alloc
 * parameter injects a failure into its Nth allocation from now, to test exactly that.
 *
 * Interrupts: the NVDLA's GLB interrupt is level-triggered and its status is cleared by the
 * firmware in process context, so the hard handler masks the line (disable_irq_nosync) and
 * wakes the waiter; the next wait, the end of the submit, or a reset unmasks it.
 *
 * PRIME: DRM_IOCTL_PRIME_HANDLE_TO_FD exports a buffer object as a dma-buf (one contiguous
 * range of the region; importers get a one-entry sg_table, user space can mmap the fd). The
 * export pins the buffer like a mapping does; if the owner's file closes first the buffer
 * lives on, invisible, until the dma-buf's last reference goes.
 *
 * Memory: one dma_alloc_coherent() region per device (size: the mem_mb parameter; on a
 * board, a reserved-memory node attached to the NVDLA node is used when present). Buffer
 * objects are ranges of it, so a buffer's device address is the region's DMA address plus
 * its offset. Only direct-mapped DMA (no IOMMU between the NVDLA and memory) is supported.
 */

#include <linux/module.h>
#include <linux/version.h>
#include <linux/platform_device.h>
#include <linux/pci.h>
#include <linux/of.h>
#include <linux/of_reserved_mem.h>
#include <linux/property.h>
#include <linux/interrupt.h>
#include <linux/dma-mapping.h>
#include <linux/reset.h>
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/idr.h>
#include <linux/kref.h>
#include <linux/wait.h>
#include <linux/ktime.h>
#include <linux/delay.h>
#include <linux/uaccess.h>
#include <linux/dma-buf.h>

#include <drm/drm_device.h>
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_ioctl.h>

#include "nvdla_glue.h"

#define DRIVER_NAME "nvdla"
#define DRIVER_DESC "NVDLA deep learning accelerator (Rust driver core)"

/* PCI identity of the virtual platform's bridge (vp/qemu/mmio-sock-pci.c). */
#define NVDLA_VP_PCI_VENDOR 0x1234
#define NVDLA_VP_PCI_DEVICE 0xd1a0
/* The bridge's control BAR: write 1 at this offset to reset the device model. */
#define NVDLA_VP_CTRL_BAR 1
#define NVDLA_VP_CTRL_ID 0x00
#define NVDLA_VP_CTRL_ID_MAGIC 0x4b434f53u
#define NVDLA_VP_CTRL_RESET 0x0c

static unsigned int mem_mb = 32;
module_param(mem_mb, uint, 0444);
MODULE_PARM_DESC(mem_mb, "MiB of DMA memory per device for buffer objects (default 32)");

static bool debug;
module_param(debug, bool, 0444);
MODULE_PARM_DESC(debug, "Log the driver core's debug messages");

static unsigned int timeout_ms = 30000;
module_param(timeout_ms, uint, 0644);
MODULE_PARM_DESC(timeout_ms, "Timeout in ms of a task that sets none (0 or 0xffffffff in the submit); "
			     "0: such tasks wait until done or killed (default 30000)");

/* Fault injection (tests): writable at run time under /sys/module/nvdla/parameters. */
static int fail_alloc;
module_param(fail_alloc, int, 0644);
MODULE_PARM_DESC(fail_alloc, "Test: the Nth allocation of the driver core from now fails (0: off); "
			     "counts down to 0");

static bool inject_hang;
module_param(inject_hang, bool, 0644);
MODULE_PARM_DESC(inject_hang, "Test: ignore the device's interrupts, so every running task hangs "
			      "until its timeout or a kill");

static char *vp_hw = "nv_full";
module_param(vp_hw, charp, 0444);
MODULE_PARM_DESC(vp_hw, "Hardware configuration behind the PCI bridge: nv_full, nv_small, nv_large, "
			 "nv_medium_1024_full, nv_medium_512, nv_small_256, nv_small_256_full");

/* Set when the Rust core panicked: its state can no longer be trusted. */
static bool nvdla_poisoned;

/* Live allocations of the Rust core; nonzero at module exit is a leak (reported). */
static atomic_long_t nvdla_live_allocs = ATOMIC_LONG_INIT(0);

enum {
	NVDLA_IRQ_MASKED, /* bit in irq_flags: the handler disabled the line */
};

struct nvdla_device {
	struct drm_device drm;
	struct device *dev;

	void __iomem *regs;
	resource_size_t regs_size;
	void __iomem *ctrl; /* PCI bridge control page, or NULL */
	struct reset_control *rst; /* optional reset line (device tree), or NULL */

	int irq;
	unsigned long irq_flags;
	atomic_t irq_pending;
	wait_queue_head_t irq_wq;
	u32 intr_status; /* offset of GLB S_INTR_STATUS, from the core */

	void *mem_cpu;
	dma_addr_t mem_dma;
	size_t mem_size;

	struct mutex lock; /* state lock: the buffer table half of the core, and rs itself */
	struct mutex hw_lock; /* the hardware runner half; taken before lock */
	struct nvdla_rs *rs; /* written with both locks held; read with either */
	u32 hw;
	struct ida clients;
};

struct nvdla_file {
	u32 client;
};

/* A user mapping of one buffer object; holds the buffer's pin until the last VMA closes. */
struct nvdla_mapping {
	struct kref ref;
	struct nvdla_device *nd;
	u32 client;
	u32 handle;
};

static inline struct nvdla_device *to_nvdla(struct drm_device *drm)
{
	return container_of(drm, struct nvdla_device, drm);
}

/* ---- services for the Rust core (nvdla_glue_*) ---- */

int nvdla_glue_reg_read(void *ctx, u32 offset, u32 *value)
{
	struct nvdla_device *nd = ctx;

	if (offset > nd->regs_size || nd->regs_size - offset < 4)
		return -EINVAL;
	*value = readl(nd->regs + offset);
	/*
	 * The firmware polls some registers up to POLL_LIMIT times; over the virtual platform's
	 * bridge each read is a socket round trip, so a poll can last seconds. Always process
	 * context here (the IRQ handler reads the registers directly).
	 */
	cond_resched();
	return 0;
}

int nvdla_glue_reg_write(void *ctx, u32 offset, u32 value)
{
	struct nvdla_device *nd = ctx;

	if (offset > nd->regs_size || nd->regs_size - offset < 4)
		return -EINVAL;
	writel(value, nd->regs + offset);
	return 0;
}

/* The CPU address of device range [addr, addr + len), or NULL if it is not all ours. */
static void *nvdla_mem_ptr(struct nvdla_device *nd, u64 addr, size_t len)
{
	u64 off;

	if (addr < nd->mem_dma)
		return NULL;
	off = addr - nd->mem_dma;
	if (off > nd->mem_size || len > nd->mem_size - off)
		return NULL;
	return (u8 *)nd->mem_cpu + off;
}

int nvdla_glue_mem_read(void *ctx, u64 addr, u8 *buf, size_t len)
{
	void *p = nvdla_mem_ptr(ctx, addr, len);

	if (!p)
		return -EFAULT;
	memcpy(buf, p, len);
	return 0;
}

int nvdla_glue_mem_write(void *ctx, u64 addr, const u8 *buf, size_t len)
{
	void *p = nvdla_mem_ptr(ctx, addr, len);

	if (!p)
		return -EFAULT;
	memcpy(p, buf, len);
	return 0;
}

u64 nvdla_glue_now_ms(void *ctx)
{
	return div_u64(ktime_get_ns(), NSEC_PER_MSEC);
}

static void nvdla_irq_unmask(struct nvdla_device *nd)
{
	if (test_and_clear_bit(NVDLA_IRQ_MASKED, &nd->irq_flags))
		enable_irq(nd->irq);
}

/* The interrupt has arrived (or, with inject_hang, never does). */
static bool nvdla_irq_seen(struct nvdla_device *nd)
{
	return !READ_ONCE(inject_hang) && atomic_read(&nd->irq_pending);
}

/*
 * 1: interrupt; 0: the deadline passed; -EINTR: a fatal signal (the wait is killable, so a
 * task without a timeout cannot make its process unkillable).
 */
int nvdla_glue_wait_irq(void *ctx, u64 deadline_ms, bool forever)
{
	struct nvdla_device *nd = ctx;
	long ret;

	/* A status bit set while the line was masked may not produce a new MSI edge. */
	if (!READ_ONCE(inject_hang) && nd->intr_status + 4 <= nd->regs_size &&
	    readl(nd->regs + nd->intr_status))
		return 1;
	nvdla_irq_unmask(nd);
	if (forever) {
		if (wait_event_killable(nd->irq_wq, nvdla_irq_seen(nd)))
			return -EINTR;
	} else {
		u64 now = nvdla_glue_now_ms(nd);
		u64 left = deadline_ms > now ? deadline_ms - now : 0;
		unsigned long timeout = msecs_to_jiffies(min_t(u64, left, INT_MAX));

		ret = wait_event_killable_timeout(nd->irq_wq, nvdla_irq_seen(nd), timeout);
		if (ret < 0)
			return -EINTR;
		if (ret == 0 && !nvdla_irq_seen(nd))
			return 0;
	}
	atomic_set(&nd->irq_pending, 0);
	return 1;
}

void nvdla_glue_reset(void *ctx)
{
	struct nvdla_device *nd = ctx;

	if (nd->ctrl) {
		writel(1, nd->ctrl + NVDLA_VP_CTRL_RESET);
	} else if (nd->rst) {
		reset_control_assert(nd->rst);
		udelay(10);
		reset_control_deassert(nd->rst);
	}
	/* Without a reset line the firmware's own cleanup (groups released) is all we have. */
	atomic_set(&nd->irq_pending, 0);
	nvdla_irq_unmask(nd);
}

void *nvdla_glue_alloc(size_t size, size_t align)
{
	/*
	 * kmalloc aligns power-of-two sizes naturally and everything to ARCH_KMALLOC_MINALIGN;
	 * vmalloc (kvmalloc's fallback) to pages.
	 */
	void *p;
	int n;

	/* Fault injection: the allocation that brings fail_alloc from 1 to 0 fails. */
	for (n = READ_ONCE(fail_alloc); n > 0; n = READ_ONCE(fail_alloc)) {
		if (cmpxchg(&fail_alloc, n, n - 1) != n)
			continue;
		if (n == 1) {
			pr_info(DRIVER_NAME ": injected allocation failure (%zu bytes)\n", size);
			return NULL;
		}
		break;
	}
	if (align > PAGE_SIZE)
		return NULL;
	if (align > ARCH_KMALLOC_MINALIGN)
		size = roundup_pow_of_two(max(size, align));
	p = kvmalloc(size, GFP_KERNEL);
	if (p)
		atomic_long_inc(&nvdla_live_allocs);
	return p;
}

void nvdla_glue_free(void *ptr)
{
	if (ptr)
		atomic_long_dec(&nvdla_live_allocs);
	kvfree(ptr);
}

void nvdla_glue_log(u32 level, const u8 *msg, size_t len)
{
	int n = (int)min_t(size_t, len, 512);

	switch (level) {
	case 1:
		pr_err(DRIVER_NAME ": %.*s\n", n, msg);
		break;
	case 2:
		pr_warn(DRIVER_NAME ": %.*s\n", n, msg);
		break;
	case 3:
		pr_info(DRIVER_NAME ": %.*s\n", n, msg);
		break;
	default:
		pr_debug(DRIVER_NAME ": %.*s\n", n, msg);
		/* pr_debug is compiled out without DYNAMIC_DEBUG; the debug parameter wins. */
		if (debug)
			pr_info(DRIVER_NAME ": %.*s\n", n, msg);
		break;
	}
}

void __noreturn nvdla_glue_panic(const u8 *msg, size_t len)
{
	WRITE_ONCE(nvdla_poisoned, true);
	pr_crit(DRIVER_NAME ": driver core panicked: %.*s\n", (int)min_t(size_t, len, 512), msg);
	pr_crit(DRIVER_NAME ": the device is disabled until the module is reloaded\n");
	BUG();
}

/* ---- interrupt ---- */

static irqreturn_t nvdla_irq(int irq, void *data)
{
	struct nvdla_device *nd = data;

	/* Shared legacy line: not ours if nothing is pending in the NVDLA. */
	if (nd->intr_status + 4 <= nd->regs_size && !readl(nd->regs + nd->intr_status))
		return IRQ_NONE;
	if (!test_and_set_bit(NVDLA_IRQ_MASKED, &nd->irq_flags))
		disable_irq_nosync(irq);
	atomic_set(&nd->irq_pending, 1);
	wake_up(&nd->irq_wq);
	return IRQ_HANDLED;
}

/* ---- ioctls ---- */

static int nvdla_lock(struct nvdla_device *nd)
{
	if (READ_ONCE(nvdla_poisoned))
		return -EIO;
	if (mutex_lock_interruptible(&nd->lock))
		return -ERESTARTSYS;
	if (!nd->rs) {
		mutex_unlock(&nd->lock);
		return -ENODEV;
	}
	return 0;
}

static int nvdla_ioctl_gem_create(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct nvdla_device *nd = to_nvdla(drm);
	struct nvdla_file *nf = file->driver_priv;
	struct nvdla_gem_create_args *args = data;
	u32 handle;
	u64 iova, len;
	void *p;
	int ret;

	ret = nvdla_lock(nd);
	if (ret)
		return ret;
	ret = nvdla_rs_gem_create(nd->rs, nf->client, args->size, args->flags, &handle, &iova,
				  &len);
	if (!ret) {
		/* Buffers are zero-filled: no stale data of a previous owner leaks. */
		p = nvdla_mem_ptr(nd, iova, len);
		if (p) {
			memset(p, 0, len);
			args->handle = handle;
		} else {
			nvdla_rs_gem_destroy(nd->rs, nf->client, handle);
			ret = -ENOMEM;
		}
	}
	mutex_unlock(&nd->lock);
	return ret;
}

static int nvdla_ioctl_gem_mmap(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct nvdla_device *nd = to_nvdla(drm);
	struct nvdla_file *nf = file->driver_priv;
	struct nvdla_gem_map_offset_args *args = data;
	u64 offset;
	int ret;

	if (args->reserved)
		return -EINVAL;
	ret = nvdla_lock(nd);
	if (ret)
		return ret;
	ret = nvdla_rs_gem_mmap(nd->rs, nf->client, args->handle, &offset);
	if (!ret)
		args->offset = offset;
	mutex_unlock(&nd->lock);
	return ret;
}

static int nvdla_ioctl_gem_destroy(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct nvdla_device *nd = to_nvdla(drm);
	struct nvdla_file *nf = file->driver_priv;
	struct nvdla_gem_destroy_args *args = data;
	int ret;

	ret = nvdla_lock(nd);
	if (ret)
		return ret;
	ret = nvdla_rs_gem_destroy(nd->rs, nf->client, args->handle);
	mutex_unlock(&nd->lock);
	return ret;
}

/* One exported buffer object; holds its pin and a device reference until released. */
struct nvdla_export {
	struct nvdla_device *nd;
	u32 client;
	u32 handle;
	u64 iova;
	u64 len;
};

static const struct dma_buf_ops nvdla_dmabuf_ops;

/*
 * Address-list handles as upstream's runtime passes them: upstream's nvdla_runtime exports
 * every buffer with PRIME and puts the dma-buf fd in the list (opendla.ko turns it back into
 * a GEM handle), and leaves `reserved` uninitialised. So an entry naming an open dma-buf fd of
 * this device, exported through this DRM file, is taken as that buffer (the dma-buf is held
 * until the submit ends); any other value is a GEM handle. `reserved` is ignored.
 */
static int nvdla_resolve_addresses(struct nvdla_file *nf, struct nvdla_mem_handle *list,
				   u32 n, struct dma_buf **held, u32 *nheld)
{
	struct nvdla_export *ex;
	struct dma_buf *buf;
	u32 i;

	for (i = 0; i < n; i++) {
		list[i].reserved = 0;
		if (list[i].handle > INT_MAX)
			continue;
		buf = dma_buf_get((int)list[i].handle);
		if (IS_ERR(buf))
			continue;
		ex = buf->priv;
		if (buf->ops != &nvdla_dmabuf_ops || ex->client != nf->client) {
			dma_buf_put(buf);
			if (buf->ops == &nvdla_dmabuf_ops)
				return -ENOENT; /* another client's buffer */
			continue;
		}
		list[i].handle = ex->handle;
		held[(*nheld)++] = buf;
	}
	return 0;
}

static int nvdla_ioctl_submit(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct nvdla_device *nd = to_nvdla(drm);
	struct nvdla_file *nf = file->driver_priv;
	struct nvdla_submit_args *args = data;
	struct nvdla_ioctl_submit_task *utasks;
	struct nvdla_rs_task *tasks;
	struct nvdla_mem_handle *list;
	struct dma_buf **held = NULL;
	struct nvdla_rs_submit *prepared = NULL;
	u32 default_timeout = READ_ONCE(timeout_ms);
	unsigned int i, copied = 0;
	u32 nheld = 0, total = 0;
	int ret;

	/* Cheapest first: header fields, then each count, before copying anything big. */
	ret = nvdla_rs_check_submit(args->num_tasks, args->flags, args->version);
	if (ret)
		return ret;

	utasks = kvmalloc_array(args->num_tasks, sizeof(*utasks), GFP_KERNEL);
	tasks = kvcalloc(args->num_tasks, sizeof(*tasks), GFP_KERNEL);
	if (!utasks || !tasks) {
		ret = -ENOMEM;
		goto free_tasks;
	}
	if (copy_from_user(utasks, u64_to_user_ptr(args->tasks),
			   array_size(args->num_tasks, sizeof(*utasks)))) {
		ret = -EFAULT;
		goto free_tasks;
	}
	for (i = 0; i < args->num_tasks; i++) {
		ret = nvdla_rs_check_task(i, utasks[i].num_addresses);
		if (ret)
			goto free_tasks;
		total += utasks[i].num_addresses;
	}
	held = kvmalloc_array(total, sizeof(*held), GFP_KERNEL);
	if (!held) {
		ret = -ENOMEM;
		goto free_tasks;
	}
	for (i = 0; i < args->num_tasks; i++) {
		/* Counts were checked above. */
		list = kvmalloc_array(utasks[i].num_addresses, sizeof(*list), GFP_KERNEL);
		if (!list) {
			ret = -ENOMEM;
			goto free_lists;
		}
		tasks[i].addresses = list;
		tasks[i].num_addresses = utasks[i].num_addresses;
		/*
		 * Upstream's runtime never sets the timeout (0 in every submit, from an
		 * uninitialised stack array) and opendla.ko ignores it: 0 means none here, as
		 * 0xffffffff does; such a task gets the timeout_ms parameter (0: none, the wait
		 * is killable).
		 */
		tasks[i].timeout = utasks[i].timeout;
		if (!tasks[i].timeout || tasks[i].timeout == 0xffffffffu)
			tasks[i].timeout = default_timeout ? default_timeout : 0xffffffffu;
		copied = i + 1;
		if (copy_from_user(list, u64_to_user_ptr(utasks[i].address_list),
				   array_size(utasks[i].num_addresses, sizeof(*list)))) {
			ret = -EFAULT;
			goto free_lists;
		}
		ret = nvdla_resolve_addresses(nf, list, utasks[i].num_addresses, held, &nheld);
		if (ret)
			goto free_lists;
	}

	/* 1. Validate and pin (state lock, short). */
	ret = nvdla_lock(nd);
	if (ret)
		goto free_lists;
	ret = nvdla_rs_submit_prepare(nd->rs, nf->client, tasks, args->num_tasks, args->flags,
				      args->version, &prepared);
	mutex_unlock(&nd->lock);
	if (ret)
		goto free_lists;

	/*
	 * 2. Run (hardware lock only): other clients' ioctls, closes, munmaps and dma-buf
	 * releases proceed meanwhile. Waiting for the hardware lock is interruptible (nothing
	 * has run: the ioctl restarts); the interrupt wait inside is killable.
	 */
	if (mutex_lock_interruptible(&nd->hw_lock)) {
		ret = -ERESTARTSYS;
	} else {
		ret = nvdla_rs_submit_run(nd->rs, prepared);
		/* The last interrupt of the submit left the line masked. */
		nvdla_irq_unmask(nd);
		mutex_unlock(&nd->hw_lock);
	}

	/* 3. Unpin (state lock; uninterruptible, but it is only ever held briefly). */
	mutex_lock(&nd->lock);
	nvdla_rs_submit_finish(nd->rs, prepared);
	mutex_unlock(&nd->lock);

free_lists:
	for (i = 0; i < copied; i++)
		kvfree(tasks[i].addresses);
free_tasks:
	while (nheld)
		dma_buf_put(held[--nheld]);
	kvfree(held);
	kvfree(tasks);
	kvfree(utasks);
	return ret;
}

static const struct drm_ioctl_desc nvdla_ioctls[] = {
	DRM_IOCTL_DEF_DRV(NVDLA_SUBMIT, nvdla_ioctl_submit, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(NVDLA_GEM_CREATE, nvdla_ioctl_gem_create, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(NVDLA_GEM_MMAP, nvdla_ioctl_gem_mmap, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(NVDLA_GEM_DESTROY, nvdla_ioctl_gem_destroy, DRM_RENDER_ALLOW),
};

/* ---- PRIME export ---- */

static struct sg_table *nvdla_dmabuf_map(struct dma_buf_attachment *at,
					 enum dma_data_direction dir)
{
	struct nvdla_export *ex = at->dmabuf->priv;
	struct nvdla_device *nd = ex->nd;
	struct sg_table *sgt;
	int ret;

	sgt = kzalloc(sizeof(*sgt), GFP_KERNEL);
	if (!sgt)
		return ERR_PTR(-ENOMEM);
	/* The buffer's pages, as the region's allocator sees them; then for the importer. */
	ret = dma_get_sgtable(nd->dev, sgt, nvdla_mem_ptr(nd, ex->iova, ex->len), ex->iova,
			      ex->len);
	if (ret)
		goto free;
	ret = dma_map_sgtable(at->dev, sgt, dir, 0);
	if (ret)
		goto free_table;
	return sgt;

free_table:
	sg_free_table(sgt);
free:
	kfree(sgt);
	return ERR_PTR(ret);
}

static void nvdla_dmabuf_unmap(struct dma_buf_attachment *at, struct sg_table *sgt,
			       enum dma_data_direction dir)
{
	dma_unmap_sgtable(at->dev, sgt, dir, 0);
	sg_free_table(sgt);
	kfree(sgt);
}

static void nvdla_dmabuf_release(struct dma_buf *buf)
{
	struct nvdla_export *ex = buf->priv;
	struct nvdla_device *nd = ex->nd;

	mutex_lock(&nd->lock);
	if (nd->rs)
		nvdla_rs_mmap_release(nd->rs, ex->client, ex->handle);
	mutex_unlock(&nd->lock);
	drm_dev_put(&nd->drm);
	kfree(ex);
}

static int nvdla_dmabuf_mmap(struct dma_buf *buf, struct vm_area_struct *vma)
{
	struct nvdla_export *ex = buf->priv;
	struct nvdla_device *nd = ex->nd;
	u64 off = (u64)vma->vm_pgoff << PAGE_SHIFT;
	unsigned long size = vma->vm_end - vma->vm_start;

	if (off > ex->len || size > ex->len - off)
		return -EINVAL;
	/* As nvdla_mmap: the whole region, at the buffer's page offset inside it. */
	vma->vm_pgoff += (ex->iova - nd->mem_dma) >> PAGE_SHIFT;
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
#else
	vma->vm_flags |= VM_DONTEXPAND | VM_DONTDUMP;
#endif
	return dma_mmap_coherent(nd->dev, vma, nd->mem_cpu, nd->mem_dma, nd->mem_size);
}

#if LINUX_VERSION_CODE >= KERNEL_VERSION(5, 18, 0)
static int nvdla_dmabuf_vmap(struct dma_buf *buf, struct iosys_map *map)
{
	struct nvdla_export *ex = buf->priv;

	/* Coherent memory has a kernel mapping already. */
	iosys_map_set_vaddr(map, nvdla_mem_ptr(ex->nd, ex->iova, ex->len));
	return 0;
}
#endif

static const struct dma_buf_ops nvdla_dmabuf_ops = {
	.map_dma_buf = nvdla_dmabuf_map,
	.unmap_dma_buf = nvdla_dmabuf_unmap,
	.release = nvdla_dmabuf_release,
	.mmap = nvdla_dmabuf_mmap,
#if LINUX_VERSION_CODE >= KERNEL_VERSION(5, 18, 0)
	.vmap = nvdla_dmabuf_vmap,
#endif
};

/*
 * DRM_IOCTL_PRIME_HANDLE_TO_FD (the DRM core checked flags: DRM_CLOEXEC | DRM_RDWR). Each
 * call makes a new dma-buf; the buffer stays pinned (GEM_DESTROY answers EBUSY) until every
 * dma-buf of it is released.
 */
static int nvdla_prime_handle_to_fd(struct drm_device *drm, struct drm_file *file,
				    u32 handle, u32 flags, int *prime_fd)
{
	struct nvdla_device *nd = to_nvdla(drm);
	struct nvdla_file *nf = file->driver_priv;
	DEFINE_DMA_BUF_EXPORT_INFO(info);
	struct nvdla_export *ex;
	struct dma_buf *buf;
	u64 offset;
	int ret, fd;

	ex = kzalloc(sizeof(*ex), GFP_KERNEL);
	if (!ex)
		return -ENOMEM;
	ret = nvdla_lock(nd);
	if (ret)
		goto free;
	/* The buffer's mmap offset names it for the pinning lookup. */
	ret = nvdla_rs_gem_mmap(nd->rs, nf->client, handle, &offset);
	if (!ret)
		ret = nvdla_rs_mmap_lookup(nd->rs, nf->client, offset, &ex->handle, &ex->iova,
					   &ex->len);
	mutex_unlock(&nd->lock);
	if (ret)
		goto free;
	ex->nd = nd;
	ex->client = nf->client;
	if (!nvdla_mem_ptr(nd, ex->iova, ex->len) || !PAGE_ALIGNED(ex->iova)) {
		ret = -EINVAL;
		goto unpin;
	}

	info.ops = &nvdla_dmabuf_ops;
	info.size = ex->len;
	info.flags = flags & DRM_RDWR ? O_RDWR : O_RDONLY;
	info.priv = ex;
	drm_dev_get(&nd->drm);
	buf = dma_buf_export(&info);
	if (IS_ERR(buf)) {
		drm_dev_put(&nd->drm);
		ret = PTR_ERR(buf);
		goto unpin;
	}
	/* From here the dma-buf owns ex: its release drops the pin and the reference. */
	fd = dma_buf_fd(buf, flags & DRM_CLOEXEC ? O_CLOEXEC : 0);
	if (fd < 0) {
		dma_buf_put(buf);
		return fd;
	}
	*prime_fd = fd;
	return 0;

unpin:
	mutex_lock(&nd->lock);
	if (nd->rs)
		nvdla_rs_mmap_release(nd->rs, nf->client, ex->handle);
	mutex_unlock(&nd->lock);
free:
	kfree(ex);
	return ret;
}

/* ---- files and mappings ---- */

static int nvdla_open(struct drm_device *drm, struct drm_file *file)
{
	struct nvdla_device *nd = to_nvdla(drm);
	struct nvdla_file *nf;
	int id;

	nf = kzalloc(sizeof(*nf), GFP_KERNEL);
	if (!nf)
		return -ENOMEM;
	id = ida_alloc_min(&nd->clients, 1, GFP_KERNEL);
	if (id < 0) {
		kfree(nf);
		return id;
	}
	nf->client = id;
	file->driver_priv = nf;
	return 0;
}

static void nvdla_postclose(struct drm_device *drm, struct drm_file *file)
{
	struct nvdla_device *nd = to_nvdla(drm);
	struct nvdla_file *nf = file->driver_priv;
	u32 busy = 0;

	/*
	 * Not interruptible: the client's buffers must be freed. Prompt even while another
	 * client's task hangs: the state lock is never held across a wait.
	 */
	mutex_lock(&nd->lock);
	if (nd->rs)
		busy = nvdla_rs_close_client(nd->rs, nf->client);
	mutex_unlock(&nd->lock);
	if (busy)
		dev_dbg(nd->dev, "client %u closed; %u buffers stay until unmapped or released\n",
			nf->client, busy);
	ida_free(&nd->clients, nf->client);
	kfree(nf);
}

static void nvdla_mapping_release(struct kref *ref)
{
	struct nvdla_mapping *m = container_of(ref, struct nvdla_mapping, ref);
	struct nvdla_device *nd = m->nd;

	mutex_lock(&nd->lock);
	if (nd->rs)
		nvdla_rs_mmap_release(nd->rs, m->client, m->handle);
	mutex_unlock(&nd->lock);
	drm_dev_put(&nd->drm);
	kfree(m);
}

static void nvdla_vm_open(struct vm_area_struct *vma)
{
	struct nvdla_mapping *m = vma->vm_private_data;

	kref_get(&m->ref);
}

static void nvdla_vm_close(struct vm_area_struct *vma)
{
	struct nvdla_mapping *m = vma->vm_private_data;

	kref_put(&m->ref, nvdla_mapping_release);
}

static const struct vm_operations_struct nvdla_vm_ops = {
	.open = nvdla_vm_open,
	.close = nvdla_vm_close,
};

static int nvdla_mmap(struct file *filp, struct vm_area_struct *vma)
{
	struct drm_file *file = filp->private_data;
	struct nvdla_device *nd = to_nvdla(file->minor->dev);
	struct nvdla_file *nf = file->driver_priv;
	struct nvdla_mapping *m;
	u64 offset = (u64)vma->vm_pgoff << PAGE_SHIFT;
	unsigned long size = vma->vm_end - vma->vm_start;
	u32 handle;
	u64 iova, len;
	int ret;

	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m)
		return -ENOMEM;
	ret = nvdla_lock(nd);
	if (ret)
		goto free;
	/* Pins the buffer: destroying it while mapped answers EBUSY. */
	ret = nvdla_rs_mmap_lookup(nd->rs, nf->client, offset, &handle, &iova, &len);
	mutex_unlock(&nd->lock);
	if (ret)
		goto free;
	kref_init(&m->ref);
	m->nd = nd;
	m->client = nf->client;
	m->handle = handle;
	drm_dev_get(&nd->drm);

	if (size > len || !nvdla_mem_ptr(nd, iova, len)) {
		ret = -EINVAL;
		goto unpin;
	}
	/* Map through the whole region, with the buffer's page offset inside it. */
	vma->vm_pgoff = (iova - nd->mem_dma) >> PAGE_SHIFT;
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
#else
	vma->vm_flags |= VM_DONTEXPAND | VM_DONTDUMP;
#endif
	ret = dma_mmap_coherent(nd->dev, vma, nd->mem_cpu, nd->mem_dma, nd->mem_size);
	if (ret)
		goto unpin;
	vma->vm_private_data = m;
	vma->vm_ops = &nvdla_vm_ops;
	return 0;

unpin:
	kref_put(&m->ref, nvdla_mapping_release);
	return ret;
free:
	kfree(m);
	return ret;
}

static const struct file_operations nvdla_fops = {
	.owner = THIS_MODULE,
	.open = drm_open,
	.release = drm_release,
	.unlocked_ioctl = drm_ioctl,
	.compat_ioctl = drm_compat_ioctl,
	.poll = drm_poll,
	.read = drm_read,
	.llseek = noop_llseek,
	.mmap = nvdla_mmap,
#ifdef FOP_UNSIGNED_OFFSET
	/* 6.12+: drm_open refuses files whose offsets may be negative (our mmap offsets
	 * are above 4 GiB). */
	.fop_flags = FOP_UNSIGNED_OFFSET,
#endif
};

static const struct drm_driver nvdla_drm_driver = {
	.driver_features = DRIVER_RENDER,
	.open = nvdla_open,
	.prime_handle_to_fd = nvdla_prime_handle_to_fd,
	.postclose = nvdla_postclose,
	.ioctls = nvdla_ioctls,
	.num_ioctls = ARRAY_SIZE(nvdla_ioctls),
	.fops = &nvdla_fops,
	.name = DRIVER_NAME,
	.desc = DRIVER_DESC,
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 14, 0)
	.date = "20261123",
#endif
	.major = 1,
	.minor = 0,
};

/* ---- device setup shared by both buses ---- */

static struct nvdla_device *nvdla_alloc(struct device *dev)
{
	struct nvdla_device *nd;

	nd = devm_drm_dev_alloc(dev, &nvdla_drm_driver, struct nvdla_device, drm);
	if (IS_ERR(nd))
		return nd;
	nd->dev = dev;
	nd->irq = -1;
	mutex_init(&nd->lock);
	mutex_init(&nd->hw_lock);
	init_waitqueue_head(&nd->irq_wq);
	ida_init(&nd->clients);
	return nd;
}

static const char *const nvdla_hw_names[] = {
	[NVDLA_HW_NV_FULL] = "nv_full",
	[NVDLA_HW_NV_SMALL] = "nv_small",
	[NVDLA_HW_NV_LARGE] = "nv_large",
	[NVDLA_HW_NV_MEDIUM_1024_FULL] = "nv_medium_1024_full",
	[NVDLA_HW_NV_MEDIUM_512] = "nv_medium_512",
	[NVDLA_HW_NV_SMALL_256] = "nv_small_256",
	[NVDLA_HW_NV_SMALL_256_FULL] = "nv_small_256_full",
};

static int nvdla_start(struct nvdla_device *nd, unsigned long irqflags)
{
	struct device *dev = nd->dev;
	int ret;

	nd->mem_size = (size_t)mem_mb << 20;
	nd->mem_cpu = dmam_alloc_coherent(dev, nd->mem_size, &nd->mem_dma, GFP_KERNEL);
	if (!nd->mem_cpu) {
		dev_err(dev, "cannot allocate %u MiB of DMA memory (mem_mb; CMA size)\n", mem_mb);
		return -ENOMEM;
	}

	/* Resets the hardware. */
	nd->rs = nvdla_rs_new(nd, nd->hw, nd->mem_dma, nd->mem_size, nd->mem_size, debug,
			      &nd->intr_status);
	if (!nd->rs)
		return -EINVAL;

	ret = devm_request_irq(dev, nd->irq, nvdla_irq, irqflags, DRIVER_NAME, nd);
	if (ret) {
		dev_err(dev, "cannot request IRQ %d: %d\n", nd->irq, ret);
		goto free_rs;
	}

	ret = drm_dev_register(&nd->drm, 0);
	if (ret)
		goto free_rs;

	dev_info(dev, "%s, registers %pa bytes, IRQ %d, %u MiB DMA memory at %pad\n",
		 nvdla_hw_names[nd->hw], &nd->regs_size, nd->irq, mem_mb, &nd->mem_dma);
	return 0;

free_rs:
	nvdla_rs_free(nd->rs);
	nd->rs = NULL;
	return ret;
}

static void nvdla_stop(struct nvdla_device *nd)
{
	drm_dev_unregister(&nd->drm);
	/* Waits for a running task (bounded by its timeout, or a kill of its submitter). */
	mutex_lock(&nd->hw_lock);
	mutex_lock(&nd->lock);
	nvdla_rs_free(nd->rs);
	nd->rs = NULL;
	mutex_unlock(&nd->lock);
	mutex_unlock(&nd->hw_lock);
	nvdla_irq_unmask(nd);
}

/* ---- device tree ---- */

static const u32 nvdla_hw_full = NVDLA_HW_NV_FULL;
static const u32 nvdla_hw_small = NVDLA_HW_NV_SMALL;
static const u32 nvdla_hw_large = NVDLA_HW_NV_LARGE;
static const u32 nvdla_hw_medium_1024_full = NVDLA_HW_NV_MEDIUM_1024_FULL;
static const u32 nvdla_hw_medium_512 = NVDLA_HW_NV_MEDIUM_512;
static const u32 nvdla_hw_small_256 = NVDLA_HW_NV_SMALL_256;
static const u32 nvdla_hw_small_256_full = NVDLA_HW_NV_SMALL_256_FULL;

/*
 * The compatible strings of upstream's opendla.ko, so existing device trees keep working,
 * then one per other published build (nvidia,<build name>).
 */
static const struct of_device_id nvdla_of_match[] = {
	{ .compatible = "nvidia,nvdla_os_initial", .data = &nvdla_hw_full },
	{ .compatible = "nvidia,nv_small", .data = &nvdla_hw_small },
	{ .compatible = "nvidia,nv_large", .data = &nvdla_hw_large },
	{ .compatible = "nvidia,nv_full", .data = &nvdla_hw_full },
	{ .compatible = "nvidia,nv_medium_1024_full", .data = &nvdla_hw_medium_1024_full },
	{ .compatible = "nvidia,nv_medium_512", .data = &nvdla_hw_medium_512 },
	{ .compatible = "nvidia,nv_small_256", .data = &nvdla_hw_small_256 },
	{ .compatible = "nvidia,nv_small_256_full", .data = &nvdla_hw_small_256_full },
	{},
};
MODULE_DEVICE_TABLE(of, nvdla_of_match);

static void nvdla_release_reserved_mem(void *data)
{
	of_reserved_mem_device_release(data);
}

static int nvdla_platform_probe(struct platform_device *pdev)
{
	struct device *dev = &pdev->dev;
	const u32 *hw = device_get_match_data(dev);
	struct nvdla_device *nd;
	struct resource *res;
	int ret;

	if (!hw)
		return -ENODEV;
	nd = nvdla_alloc(dev);
	if (IS_ERR(nd))
		return PTR_ERR(nd);
	nd->hw = *hw;

	res = platform_get_resource(pdev, IORESOURCE_MEM, 0);
	nd->regs = devm_ioremap_resource(dev, res);
	if (IS_ERR(nd->regs))
		return PTR_ERR(nd->regs);
	nd->regs_size = resource_size(res);

	nd->irq = platform_get_irq(pdev, 0);
	if (nd->irq < 0)
		return nd->irq;

	nd->rst = devm_reset_control_get_optional_exclusive(dev, NULL);
	if (IS_ERR(nd->rst))
		return dev_err_probe(dev, PTR_ERR(nd->rst), "reset line\n");

	/* A memory-region phandle on the node: buffers come from that carve-out. */
	ret = of_reserved_mem_device_init(dev);
	if (!ret) {
		ret = devm_add_action_or_reset(dev, nvdla_release_reserved_mem, dev);
		if (ret)
			return ret;
	} else if (ret != -ENODEV) {
		return dev_err_probe(dev, ret, "reserved memory\n");
	}

	platform_set_drvdata(pdev, nd);
	return nvdla_start(nd, 0);
}

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 11, 0)
static void nvdla_platform_remove(struct platform_device *pdev)
{
	nvdla_stop(platform_get_drvdata(pdev));
}
#else
static int nvdla_platform_remove(struct platform_device *pdev)
{
	nvdla_stop(platform_get_drvdata(pdev));
	return 0;
}
#endif

static struct platform_driver nvdla_platform_driver = {
	.probe = nvdla_platform_probe,
	.remove = nvdla_platform_remove,
	.driver = {
		.name = DRIVER_NAME,
		.of_match_table = nvdla_of_match,
	},
};

/* ---- PCI (the virtual platform's bridge) ---- */

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 8, 0)
#define NVDLA_PCI_IRQ_TYPES (PCI_IRQ_MSI | PCI_IRQ_INTX)
#else
#define NVDLA_PCI_IRQ_TYPES (PCI_IRQ_MSI | PCI_IRQ_LEGACY)
#endif

static int nvdla_pci_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct device *dev = &pdev->dev;
	struct nvdla_device *nd;
	int bars = BIT(0), ret, i;

	ret = pcim_enable_device(pdev);
	if (ret)
		return ret;
	if (pci_resource_len(pdev, NVDLA_VP_CTRL_BAR))
		bars |= BIT(NVDLA_VP_CTRL_BAR);
	ret = pcim_iomap_regions(pdev, bars, DRIVER_NAME);
	if (ret)
		return ret;

	nd = nvdla_alloc(dev);
	if (IS_ERR(nd))
		return PTR_ERR(nd);
	nd->regs = pcim_iomap_table(pdev)[0];
	nd->regs_size = pci_resource_len(pdev, 0);
	if (bars & BIT(NVDLA_VP_CTRL_BAR)) {
		void __iomem *ctrl = pcim_iomap_table(pdev)[NVDLA_VP_CTRL_BAR];

		if (readl(ctrl + NVDLA_VP_CTRL_ID) == NVDLA_VP_CTRL_ID_MAGIC)
			nd->ctrl = ctrl;
	}

	nd->hw = NVDLA_HW_NV_FULL;
	for (i = 0; i < ARRAY_SIZE(nvdla_hw_names); i++)
		if (sysfs_streq(vp_hw, nvdla_hw_names[i]))
			nd->hw = i;

	/* Without bus mastering the bridge's MSI writes (and DMA) are dropped. */
	pci_set_master(pdev);
	ret = dma_set_mask_and_coherent(dev, DMA_BIT_MASK(64));
	if (ret)
		ret = dma_set_mask_and_coherent(dev, DMA_BIT_MASK(32));
	if (ret)
		return ret;

	ret = pci_alloc_irq_vectors(pdev, 1, 1, NVDLA_PCI_IRQ_TYPES);
	if (ret < 0)
		return ret;
	nd->irq = pci_irq_vector(pdev, 0);

	pci_set_drvdata(pdev, nd);
	/* The IRQ, the vectors (pcim) and the mappings are released by devres. */
	return nvdla_start(nd, pdev->msi_enabled ? 0 : IRQF_SHARED);
}

static void nvdla_pci_remove(struct pci_dev *pdev)
{
	nvdla_stop(pci_get_drvdata(pdev));
}

static const struct pci_device_id nvdla_pci_ids[] = {
	{ PCI_DEVICE(NVDLA_VP_PCI_VENDOR, NVDLA_VP_PCI_DEVICE) },
	{},
};
MODULE_DEVICE_TABLE(pci, nvdla_pci_ids);

static struct pci_driver nvdla_pci_driver = {
	.name = DRIVER_NAME,
	.id_table = nvdla_pci_ids,
	.probe = nvdla_pci_probe,
	.remove = nvdla_pci_remove,
};

/* ---- module ---- */

static int __init nvdla_init(void)
{
	int ret;

	if (!mem_mb || mem_mb > 4096) {
		pr_err(DRIVER_NAME ": mem_mb must be 1..4096\n");
		return -EINVAL;
	}
	ret = platform_driver_register(&nvdla_platform_driver);
	if (ret)
		return ret;
	ret = pci_register_driver(&nvdla_pci_driver);
	if (ret)
		platform_driver_unregister(&nvdla_platform_driver);
	return ret;
}

static void __exit nvdla_exit(void)
{
	long live;

	pci_unregister_driver(&nvdla_pci_driver);
	platform_driver_unregister(&nvdla_platform_driver);
	live = atomic_long_read(&nvdla_live_allocs);
	if (live)
		pr_err(DRIVER_NAME ": leak: %ld allocations of the driver core not freed\n", live);
}

module_init(nvdla_init);
module_exit(nvdla_exit);

MODULE_DESCRIPTION(DRIVER_DESC);
MODULE_LICENSE("Dual BSD/GPL");
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 13, 0)
MODULE_IMPORT_NS("DMA_BUF");
#else
MODULE_IMPORT_NS(DMA_BUF);
#endif
