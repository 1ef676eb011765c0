// SPDX-License-Identifier: BSD-3-Clause
/*
 * In-guest smoke test of nvdla.ko's ioctls: the buffer lifecycle, PRIME export and malformed
 * requests.
 * Every malformed request must fail with the documented errno (and never oops the kernel).
 * Built static for aarch64 by vp/qemu/smoke-test; prints one line per check and a summary.
 *
 *   nvdla-ioctl-test [--no-submit] [/dev/dri/renderD128]
 *
 * --no-submit leaves out the submits: only open, create, mmap/munmap, destroy, PRIME export
 * and dma-buf release, close. scripts/vp-linux runs it so while another process's task hangs
 * in the driver: none of these may wait for that task.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../nvdla_uapi.h"

static int failures, checks;
/* --no-submit: nothing that needs the hardware (see the header). */
static int nosubmit;

static int xioctl(int fd, unsigned long req, void *arg)
{
	return ioctl(fd, req, arg) ? -errno : 0;
}

static void expect(const char *what, int got, int want)
{
	checks++;
	if (got == want) {
		printf("ok   %-48s %d\n", what, got);
	} else {
		printf("FAIL %-48s got %d (%s), want %d\n", what, got, strerror(-got), want);
		failures++;
	}
}

static int create(int fd, uint64_t size, uint32_t flags, uint32_t *handle)
{
	struct nvdla_gem_create_args a = { .size = size, .flags = flags };
	int r = xioctl(fd, DRM_IOCTL_NVDLA_GEM_CREATE, &a);

	if (!r && handle)
		*handle = a.handle;
	return r;
}

static int destroy(int fd, uint32_t handle)
{
	struct nvdla_gem_destroy_args a = { .handle = handle };

	return xioctl(fd, DRM_IOCTL_NVDLA_GEM_DESTROY, &a);
}

static int submit1(int fd, struct nvdla_mem_handle *list, uint32_t n, uint32_t timeout,
		   uint16_t flags, uint32_t version)
{
	struct nvdla_ioctl_submit_task t = {
		.num_addresses = n, .timeout = timeout, .address_list = (uintptr_t)list,
	};
	struct nvdla_submit_args s = {
		.tasks = (uintptr_t)&t, .num_tasks = 1, .flags = flags, .version = version,
	};

	return xioctl(fd, DRM_IOCTL_NVDLA_SUBMIT, &s);
}

static int prime_export(int fd, uint32_t handle, uint32_t flags, int *out)
{
	struct drm_prime_handle a = { .handle = handle, .flags = flags, .fd = -1 };
	int r = xioctl(fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &a);

	if (!r && out)
		*out = a.fd;
	return r;
}

/*
 * PRIME: a buffer exported as a dma-buf shows the same bytes through the dma-buf's own
 * mapping, stays pinned while exported, and outlives the DRM file that created it.
 * Closes fd.
 */
static void prime_checks(int fd)
{
	struct nvdla_gem_map_offset_args mo = { 0 };
	unsigned char *gem, *dbuf;
	uint32_t h = 0;
	int dfd = -1, i, same = 1;

	expect("GEM_CREATE 8192 (PRIME)", create(fd, 8192, 0, &h), 0);
	mo.handle = h;
	expect("GEM_MMAP (PRIME)", xioctl(fd, DRM_IOCTL_NVDLA_GEM_MMAP, &mo), 0);
	gem = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, mo.offset);
	expect("mmap (PRIME)", gem == MAP_FAILED ? -errno : 0, 0);
	if (gem == MAP_FAILED) {
		close(fd);
		return;
	}
	for (i = 0; i < 8192; i++)
		gem[i] = (unsigned char)(i * 7 + 3);
	expect("PRIME_HANDLE_TO_FD unknown handle", prime_export(fd, 999, DRM_CLOEXEC, NULL),
	       -ENOENT);
	expect("PRIME_HANDLE_TO_FD unknown flag", prime_export(fd, h, 0x10, NULL), -EINVAL);
	expect("PRIME_HANDLE_TO_FD", prime_export(fd, h, DRM_CLOEXEC | DRM_RDWR, &dfd), 0);
	if (dfd < 0) {
		munmap(gem, 8192);
		close(fd);
		return;
	}
	expect("dma-buf size (lseek END)", (int)lseek(dfd, 0, SEEK_END), 8192);
	dbuf = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, dfd, 0);
	expect("mmap dma-buf", dbuf == MAP_FAILED ? -errno : 0, 0);
	expect("mmap dma-buf past its end", mmap(NULL, 3 * 4096, PROT_READ, MAP_SHARED, dfd, 0) ==
	       MAP_FAILED ? -errno : 0, -EINVAL);
	expect("GEM_DESTROY while exported", destroy(fd, h), -EBUSY);
	if (!nosubmit) {
		/* Upstream's convention: the address list names the buffer by its dma-buf fd
		 * (the buffer holds no descriptor, so the submit fails past the lookup). */
		struct nvdla_mem_handle l = { .handle = (uint32_t)dfd, .reserved = 0xdead };
		int fd2 = open("/dev/dri/renderD128", O_RDWR), dfd2 = -1;
		uint32_t h3 = 0;
		int r = submit1(fd, &l, 1, 1000, 0, 0);

		checks++;
		printf("%s %-48s %d (%s)\n", r && r != -ENOENT ? "ok  " : "FAIL",
		       "SUBMIT by dma-buf fd finds the buffer", r, strerror(-r));
		failures += !(r && r != -ENOENT);
		if (fd2 >= 0 && !create(fd2, 4096, 0, &h3) && !prime_export(fd2, h3, 0, &dfd2)) {
			l.handle = (uint32_t)dfd2;
			expect("SUBMIT by another file's dma-buf fd", submit1(fd, &l, 1, 1000, 0, 0),
			       -ENOENT);
			close(dfd2);
		}
		if (fd2 >= 0)
			close(fd2);
	}
	munmap(gem, 8192);
	if (dbuf != MAP_FAILED) {
		for (i = 0; i < 8192; i++)
			same &= dbuf[i] == (unsigned char)(i * 7 + 3);
		expect("dma-buf shows the buffer's bytes", same ? 0 : -EIO, 0);
		/* The exporting file goes away; the dma-buf keeps the buffer alive. */
		close(fd);
		dbuf[100] = 0x42;
		expect("dma-buf usable after its DRM file closed", dbuf[100] == 0x42 &&
		       dbuf[101] == (unsigned char)(101 * 7 + 3) ? 0 : -EIO, 0);
		munmap(dbuf, 8192);
	} else {
		close(fd);
	}
	close(dfd);
}

int main(int argc, char **argv)
{
	const char *path;
	struct nvdla_gem_map_offset_args mo = { 0 };
	struct nvdla_submit_args s = { 0 };
	struct nvdla_mem_handle list[2];
	uint32_t h = 0, h2 = 0;
	unsigned char *p;
	int fd, i, zero = 1;

	nosubmit = argc > 1 && !strcmp(argv[1], "--no-submit");
	path = argc > 1 + nosubmit ? argv[1 + nosubmit] : "/dev/dri/renderD128";

	/* Line-buffered even into a file: a test stuck in the driver shows how far it got. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	fd = open(path, O_RDWR);
	if (fd < 0) {
		perror(path);
		return 1;
	}

	expect("GEM_CREATE 4096", create(fd, 4096, 0, &h), 0);
	expect("GEM_CREATE flags=1", create(fd, 4096, 1, NULL), -EINVAL);
	expect("GEM_CREATE size=0", create(fd, 0, 0, NULL), -EINVAL);
	expect("GEM_CREATE size=2^63", create(fd, 1ull << 63, 0, NULL), -E2BIG);

	mo.handle = h;
	expect("GEM_MMAP", xioctl(fd, DRM_IOCTL_NVDLA_GEM_MMAP, &mo), 0);
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, mo.offset);
	expect("mmap", p == MAP_FAILED ? -errno : 0, 0);
	if (p != MAP_FAILED) {
		for (i = 0; i < 4096; i++)
			zero &= p[i] == 0;
		expect("new buffer reads as zeros", zero ? 0 : -EIO, 0);
		memset(p, 0xa5, 4096);
		expect("GEM_DESTROY while mapped", destroy(fd, h), -EBUSY);
		munmap(p, 4096);
	}
	expect("mmap past the buffer", mmap(NULL, 8192, PROT_READ, MAP_SHARED, fd, mo.offset) ==
	       MAP_FAILED ? -errno : 0, -EINVAL);
	mo.handle = 999;
	expect("GEM_MMAP unknown handle", xioctl(fd, DRM_IOCTL_NVDLA_GEM_MMAP, &mo), -ENOENT);
	mo.handle = h;
	mo.reserved = 1;
	expect("GEM_MMAP reserved!=0", xioctl(fd, DRM_IOCTL_NVDLA_GEM_MMAP, &mo), -EINVAL);

	/* Submits: header, counts, handles, offsets, then garbage descriptors. */
	if (nosubmit)
		goto no_submit;
	expect("SUBMIT num_tasks=0", xioctl(fd, DRM_IOCTL_NVDLA_SUBMIT, &s), -EINVAL);
	list[0] = (struct nvdla_mem_handle){ .handle = h, .offset = 0 };
	expect("SUBMIT version=1", submit1(fd, list, 1, 1000, 0, 1), -EINVAL);
	expect("SUBMIT unknown flag", submit1(fd, list, 1, 1000, 0x8000, 0), -EINVAL);
	expect("SUBMIT 0 addresses", submit1(fd, list, 0, 1000, 0, 0), -EINVAL);
	expect("SUBMIT 6145 addresses", submit1(fd, list, 6145, 1000, 0, 0), -E2BIG);
	expect("SUBMIT bad list pointer", submit1(fd, (void *)8, 1, 1000, 0, 0), -EFAULT);
	list[0].handle = 999;
	expect("SUBMIT unknown handle", submit1(fd, list, 1, 1000, 0, 0), -ENOENT);
	list[0].handle = h;
	list[0].offset = 4096;
	expect("SUBMIT offset past buffer", submit1(fd, list, 1, 1000, 0, 0), -EINVAL);
	list[0].offset = 0;
	/* The buffer holds 0xa5 bytes: a garbage network descriptor. */
	{
		int r = submit1(fd, list, 1, 1000, 0, 0);

		checks++;
		printf("%s %-48s %d (%s)\n", r ? "ok  " : "FAIL", "SUBMIT garbage descriptor fails",
		       r, strerror(-r));
		failures += r == 0;
	}

no_submit:
	expect("GEM_CREATE second", create(fd, 1 << 20, 0, &h2), 0);
	expect("GEM_DESTROY", destroy(fd, h), 0);
	expect("GEM_DESTROY again", destroy(fd, h), -ENOENT);
	/* h2 is left for close() to free. */
	close(fd);

	fd = open(path, O_RDWR);
	if (fd < 0) {
		perror(path);
		return 1;
	}
	prime_checks(fd);

	printf("nvdla-ioctl-test: %d checks, %d failures\n", checks, failures);
	return failures != 0;
}
