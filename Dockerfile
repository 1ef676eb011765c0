# nvdla-rs in a container: nvdla-runtime, nvdla-compiler, nvdla-loadable, nvdla-vp, and the
# full-system platform (QEMU with the mmio-sock-pci bridge, Debian's arm64 kernel, nvdla.ko,
# a static aarch64 nvdla-runtime) behind the `vp-linux` command. See docs/docker.md.
#
#   docker build -t nvdla-rs .                        # JOBS: parallel compile jobs (default 1)
#   docker run --rm -v "$PWD":/data nvdla-rs nvdla-runtime --loadable /data/x.nvdla --image /data/y.jpg
#   docker run -it nvdla-rs vp-linux                  # a shell in the aarch64 guest
#
# The builder stage runs the project's own scripts (scripts/build-qemu, build-kmod,
# cross-aarch64, docker-guest); the runtime stage holds no compiler.

# ---- builder ---------------------------------------------------------------------------
FROM debian:bookworm AS builder
ARG JOBS=1
# 1.87 or newer; pinned for reproducible builds (and because a channel may lack a target).
ARG RUST_TOOLCHAIN=1.95.0
ENV DEBIAN_FRONTEND=noninteractive \
    RUSTUP_HOME=/usr/local/rustup CARGO_HOME=/usr/local/cargo \
    PATH=/usr/local/cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    CARGO_BUILD_JOBS=${JOBS} NVDLA_JOBS=${JOBS} NVDLA_CACHE=/cache
# Everything the scripts would otherwise install themselves: the C toolchains (host and
# aarch64), QEMU's build dependencies, kbuild's tools, apt source/deb handling.
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends \
        ca-certificates curl build-essential pkg-config bc flex bison kmod \
        gcc-aarch64-linux-gnu binutils-aarch64-linux-gnu libc6-dev-arm64-cross \
        ninja-build meson libglib2.0-dev libpixman-1-dev libfdt-dev python3 python3-venv \
        dpkg-dev xz-utils cpio file >/dev/null \
    && rm -rf /var/lib/apt/lists/*
# QEMU 7.2 with the bridge first: it depends only on these three files (and no Rust), so
# source changes elsewhere and toolchain changes keep this (the longest) layer cached.
WORKDIR /src
COPY scripts/debian-apt scripts/build-qemu scripts/
COPY vp/qemu/mmio-sock-pci.c vp/qemu/mmio-sock.c vp/qemu/mmio-sock.h vp/qemu/virt-mmio-sock.patch vp/qemu/
RUN qemu=$(scripts/build-qemu) && install -D -m755 -s "$qemu" /out/prebuilt/qemu-system-aarch64 \
    && rm -rf "$NVDLA_CACHE/qemu-src" "$NVDLA_CACHE/qemu-build" "$NVDLA_CACHE/apt/archives"/*.deb

# Behind a TLS-intercepting proxy: its CA certificates (PEM text; scripts/docker-test passes
# the host's /usr/local/share/ca-certificates/*.crt). Builder stage only.
ARG EXTRA_CA_CERTS=
RUN if [ -n "$EXTRA_CA_CERTS" ]; then \
        printf '%s\n' "$EXTRA_CA_CERTS" | awk '/BEGIN CERTIFICATE/ { n++ } n { print > \
            ("/usr/local/share/ca-certificates/docker-build-extra-" n ".crt") }' \
        && update-ca-certificates >/dev/null; fi
# Debian's rustc is too old (the workspace needs 1.87): rustup.
RUN curl -sSfo /tmp/rustup-init \
        https://static.rust-lang.org/rustup/dist/x86_64-unknown-linux-gnu/rustup-init \
    && chmod +x /tmp/rustup-init && /tmp/rustup-init -y -q --profile minimal \
        --default-toolchain "$RUST_TOOLCHAIN" \
        --target aarch64-unknown-linux-gnu --target aarch64-unknown-none-softfloat \
    && rm /tmp/rustup-init && rustc --version \
    && rustup target list --installed | grep -qx aarch64-unknown-none-softfloat

# The workspace (only what cargo and the build scripts read; the docker-* helpers and the
# test scripts go straight to the runtime stage, so editing them rebuilds nothing here).
COPY Cargo.toml Cargo.lock ./
COPY hw hw
COPY compiler compiler
COPY loadable-format loadable-format
COPY emu emu
COPY baremetal baremetal
COPY firmware firmware
COPY kmd kmd
COPY port port
COPY umd umd
COPY vp vp
COPY capi capi
COPY python python
COPY examples/c examples/c
COPY scripts/docker-stage scripts/build-kmod scripts/cross-aarch64 scripts/docker-guest scripts/capi \
    scripts/python scripts/
# Everything the runtime stage takes, into /out (scripts/docker-stage, which `scripts/docker-test
# --prebuilt` runs on the host): the host binaries; libnvdla.so, nvdla.h, nvdla.pc and
# examples/c/classify built against them with cc and pkg-config; the Python wheel (maturin from
# PyPI, in a throwaway venv); nvdla.ko, the static aarch64 nvdla-runtime and examples/c/classify
# on the static board libnvdla, the ioctl test, Debian's arm64 kernel and busybox.
RUN NVDLA_PYTHON_VENV=/tmp/venv scripts/docker-stage /out \
    && rm -rf /tmp/venv "$NVDLA_CACHE/apt" "$NVDLA_CACHE/kernel" "$NVDLA_CACHE/guest" target

# ---- runtime ---------------------------------------------------------------------------
FROM debian:bookworm
ENV DEBIAN_FRONTEND=noninteractive
# QEMU's shared libraries, the tools scripts/vp-linux packs an initramfs with, and Python
# with numpy for the nvdla package.
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends \
        libglib2.0-0 libpixman-1-0 libfdt1 zlib1g cpio gzip xz-utils file \
        python3 python3-numpy >/dev/null \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin
COPY --from=builder /out/bin/ /usr/local/bin/
# The C API (/usr/local/lib/libnvdla.so, /usr/local/include/nvdla.h, pkg-config nvdla), its
# example as nvdla-classify, and the Python package: the wheel unpacked where Debian's
# python3 looks (it has no entry points or scripts, so unpacking is all pip would do).
COPY --from=builder /out/capi/ /usr/local/
COPY --from=builder /out/wheels/ /opt/nvdla/wheels/
COPY docs/api.md /usr/local/share/doc/nvdla/
COPY examples/c/classify.c /usr/local/share/doc/nvdla/examples/c/
RUN ldconfig && python3 -m zipfile -e /opt/nvdla/wheels/nvdla-*.whl \
        "$(python3 -c 'import sysconfig; print(sysconfig.get_path("platlib"))')" \
    && python3 -c 'import nvdla'

COPY --from=builder /out/prebuilt/ /opt/nvdla/prebuilt/
COPY --from=builder /out/guest/ /opt/nvdla/cache/guest/
# The project's test scripts, unchanged, run by nvdla-script/vp-linux against the prebuilt
# artifacts (scripts/docker-stubs stands in for their build steps).
COPY scripts/vp-linux scripts/regression scripts/networks scripts/debian-apt /opt/nvdla/scripts/
COPY kmd/linux/test/nvdla-ioctl-test.c /opt/nvdla/kmd/linux/test/
COPY scripts/docker-stubs /opt/nvdla/docker-stubs
COPY scripts/docker-vp-linux /usr/local/bin/vp-linux
COPY scripts/docker-script /usr/local/bin/nvdla-script
RUN /opt/nvdla/docker-stubs install
WORKDIR /data
CMD ["nvdla-runtime", "--help"]
