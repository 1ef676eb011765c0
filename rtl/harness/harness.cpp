// nvdla-rtl-harness: NVIDIA's nv_small RTL (Verilated `NV_nvdla`) behind the MMIO/DMA socket
// protocol of `mmio-sock` and `nvdla-vp serve --qemu-socket` (docs/kernel-module.md, "The
// bridge protocol"; docs/rtl.md for this program).
//
// The harness listens on a UNIX socket and serves one connection: register reads and writes
// become CSB transactions, the DBB AXI port is answered from a RAM file shared with the
// client (guest physical / device address A at file offset A - ram_base, as QEMU's
// memory-backend-file), and changes of the interrupt line become IRQ messages. A control page
// above the NVDLA's registers (RTL_PAGE) gives the clock-cycle counter, a lockstep mode in
// which the clock advances only while the client waits, and bus statistics.
//
// Build: scripts/rtl (Verilator from Debian, the RTL from ../shared/nvdla-rtl).

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <string>

#include "VNV_nvdla.h"
#include "verilated.h"
#ifdef NVDLA_RTL_DEBUG_CDMA_WT
// A diagnostic build (docs/rtl.md, "The ip1 stall"): rtl/harness/debug-cdma-wt.vlt makes
// CDMA_WT's weight accounting visible.
#include "VNV_nvdla___024root.h"
#endif

static uint64_t sim_time = 0;
double sc_time_stamp() { return (double)sim_time; }

namespace {

int verbose = 0;

void logf(int level, const char *fmt, ...) {
    if (verbose < level) return;
    va_list ap;
    va_start(ap, fmt);
    fputs("nvdla-rtl: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

[[noreturn]] void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("nvdla-rtl: error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

// ---- Bridge protocol (docs/kernel-module.md) ----------------------------------------------

enum : uint32_t {
    HELLO = 0x01,
    READ = 0x02,
    WRITE = 0x03,
    RESET = 0x04,
    READ_REPLY = 0x81,
    RESET_DONE = 0x84,
    IRQ = 0x85,
};
constexpr uint64_t PROTOCOL_VERSION = 1;

struct Msg {
    uint32_t kind = 0;
    uint32_t len = 0;
    uint64_t addr = 0;
    uint64_t value = 0;
};

// Little-endian host assumed (x86_64, aarch64); the message is packed by hand anyway.
void encode(const Msg &m, uint8_t b[24]) {
    memcpy(b, &m.kind, 4);
    memcpy(b + 4, &m.len, 4);
    memcpy(b + 8, &m.addr, 8);
    memcpy(b + 16, &m.value, 8);
}

Msg decode(const uint8_t b[24]) {
    Msg m;
    memcpy(&m.kind, b, 4);
    memcpy(&m.len, b + 4, 4);
    memcpy(&m.addr, b + 8, 8);
    memcpy(&m.value, b + 16, 8);
    return m;
}

// ---- The control page ----------------------------------------------------------------------

// Byte offsets in the register window. The NVDLA's own registers end below 0x20000 on every
// build; the window QEMU's devices declare is 0x40000.
constexpr uint64_t RTL_PAGE = 0x3f000;
enum : uint64_t {
    PAGE_MAGIC = 0x00,         // RO "NVRT" (0x5452564e)
    PAGE_VERSION = 0x04,       // RO 1
    PAGE_CYCLE_LO = 0x08,      // RO clock cycles since the harness started; latches HI
    PAGE_CYCLE_HI = 0x0c,      // RO
    PAGE_MODE = 0x10,          // RW 0 free-running clock, 1 lockstep
    PAGE_WAIT_BUDGET = 0x14,   // RW cycles a WAIT may run (default 1 << 20)
    PAGE_WAIT = 0x18,          // RO lockstep: run until the interrupt line is high (1), the
                               //    budget is spent (0) or the bus stalled (2)
    PAGE_MEM_FAULTS = 0x1c,    // RO AXI accesses outside the RAM file
    PAGE_READ_BEATS = 0x20,    // RO AXI read beats (low 32 bits)
    PAGE_WRITE_BEATS = 0x24,   // RO AXI write beats (low 32 bits)
    PAGE_IDLE_CYCLES = 0x28,   // RO cycles since the last AXI or CSB handshake
    PAGE_STALL_LIMIT = 0x2c,   // RW a WAIT returns 2 after this many cycles without AXI traffic
                               //    while reads are outstanding, or 16 times as many with no
                               //    activity at all (default 1 << 20)
};
constexpr uint32_t PAGE_MAGIC_VALUE = 0x5452564e;

// ---- Memory: the RAM file -----------------------------------------------------------------

struct Ram {
    uint8_t *data = nullptr;
    uint64_t base = 0;
    uint64_t size = 0;
    uint64_t faults = 0;

    // `create_size`: make the file this long when it is shorter (0: it must exist).
    void open_file(const char *path, uint64_t ram_base, uint64_t create_size) {
        int fd = ::open(path, create_size ? O_RDWR | O_CREAT : O_RDWR, 0600);
        if (fd < 0) die("cannot open RAM file %s: %s", path, strerror(errno));
        struct stat st;
        if (fstat(fd, &st) != 0) die("cannot stat %s: %s", path, strerror(errno));
        if ((uint64_t)st.st_size < create_size) {
            if (ftruncate(fd, (off_t)create_size) != 0)
                die("cannot size %s: %s", path, strerror(errno));
            st.st_size = (off_t)create_size;
        }
        if (st.st_size <= 0) die("RAM file %s is empty", path);
        size = (uint64_t)st.st_size;
        void *p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED) die("cannot map %s: %s", path, strerror(errno));
        ::close(fd);
        data = (uint8_t *)p;
        base = ram_base;
    }

    uint8_t *at(uint64_t addr, uint64_t len) {
        if (addr < base || addr - base > size || size - (addr - base) < len) {
            if (faults++ < 16)
                fprintf(stderr, "nvdla-rtl: DMA outside the RAM file at 0x%" PRIx64 " (%" PRIu64
                                " bytes; RAM 0x%" PRIx64 "+0x%" PRIx64 ")\n",
                        addr, len, base, size);
            return nullptr;
        }
        return data + (addr - base);
    }
};

// ---- The DBB AXI port: a memory slave ------------------------------------------------------

constexpr int BEAT = 8;  // nv_small: NVDLA_PRIMARY_MEMIF_WIDTH 64

struct Burst {
    uint8_t id;
    uint64_t addr;
    int beats;
    uint64_t ready_at;  // cycle from which its first beat may be returned
};

// Answers the DBB port from `Ram`. Read bursts return after `latency` cycles, in request order
// (one order across IDs, as a single DRAM controller queue; AXI would allow reordering
// between IDs), one beat per cycle, with RVALID held until RREADY as AXI requires. Writes are
// accepted at once; the response follows the last beat.
struct AxiSlave {
    VNV_nvdla *top;
    Ram *ram;
    int latency = 32;
    int max_reads = 256;  // outstanding read bursts the slave accepts (ARREADY low beyond)

    std::deque<Burst> reads;
    std::deque<Burst> writes;    // address phases awaiting data
    std::deque<uint64_t> wdata;  // data beats awaiting an address phase: data | strobe << 64
    std::deque<uint8_t> wstrb;
    std::deque<std::pair<uint8_t, uint64_t>> bresp;  // (id, ready_at)
    bool r_presenting = false;
    size_t r_current = 0;  // index in `reads` of the burst whose beat is presented
    int last_rid = -1;
    bool interleave = false;
    bool b_presenting = false;
    uint64_t read_beats = 0, write_beats = 0;
    uint64_t last_activity = 0;

    void reset_ports() {
        top->nvdla_core2dbb_ar_arready = 1;
        top->nvdla_core2dbb_aw_awready = 1;
        top->nvdla_core2dbb_w_wready = 1;
        top->nvdla_core2dbb_r_rvalid = 0;
        top->nvdla_core2dbb_b_bvalid = 0;
        reads.clear();
        writes.clear();
        wdata.clear();
        wstrb.clear();
        bresp.clear();
        r_presenting = b_presenting = false;
    }

    // Before the rising edge: the handshakes that this edge completes.
    struct Edge {
        bool ar, aw, w, r, b;
        uint8_t arid, awid, rid;
        uint64_t araddr, awaddr;
        int arlen, awlen;
        uint64_t wdat;
        uint8_t wstb;
    };

    Edge sample() const {
        Edge e{};
        e.ar = top->nvdla_core2dbb_ar_arvalid && top->nvdla_core2dbb_ar_arready;
        e.aw = top->nvdla_core2dbb_aw_awvalid && top->nvdla_core2dbb_aw_awready;
        e.w = top->nvdla_core2dbb_w_wvalid && top->nvdla_core2dbb_w_wready;
        e.r = top->nvdla_core2dbb_r_rvalid && top->nvdla_core2dbb_r_rready;
        e.b = top->nvdla_core2dbb_b_bvalid && top->nvdla_core2dbb_b_bready;
        e.arid = top->nvdla_core2dbb_ar_arid;
        e.rid = top->nvdla_core2dbb_r_rid;
        e.awid = top->nvdla_core2dbb_aw_awid;
        e.araddr = top->nvdla_core2dbb_ar_araddr;
        e.awaddr = top->nvdla_core2dbb_aw_awaddr;
        e.arlen = top->nvdla_core2dbb_ar_arlen;
        e.awlen = top->nvdla_core2dbb_aw_awlen;
        e.wdat = top->nvdla_core2dbb_w_wdata;
        e.wstb = top->nvdla_core2dbb_w_wstrb;
        return e;
    }

    // The burst whose beat goes next: the oldest whose latency has passed (one order for all
    // IDs), or with `interleave`, the oldest of the next ID after the last one served whose
    // latency has passed (AXI keeps order within an ID only, and lets reads of different IDs
    // interleave beat by beat).
    std::deque<Burst>::iterator pick_read(uint64_t cycle) {
        if (reads.empty()) return reads.end();
        if (!interleave) return reads.front().ready_at <= cycle ? reads.begin() : reads.end();
        std::deque<Burst>::iterator best = reads.end();
        int best_rank = 1 << 30;
        uint8_t seen[256] = {0};
        for (auto it = reads.begin(); it != reads.end(); ++it) {
            if (seen[it->id]++) continue;  // only the oldest burst of each ID may go
            if (it->ready_at > cycle) continue;
            int rank = (it->id - last_rid - 1 + 256) % 256;
            if (rank < best_rank) {
                best_rank = rank;
                best = it;
            }
        }
        return best;
    }

    // After the rising edge: update the slave's state and drive its outputs for the next one.
    void commit(const Edge &e, uint64_t cycle) {
        if (e.ar) {
            uint64_t a = e.araddr & ~(uint64_t)(BEAT - 1);
            reads.push_back(Burst{e.arid, a, e.arlen + 1, cycle + (uint64_t)latency});
            logf(3, "(%" PRIu64 ") AR id %u addr %08" PRIx64 " len %d", cycle, e.arid, a,
                 e.arlen + 1);
        }
        if (e.aw) {
            uint64_t a = e.awaddr & ~(uint64_t)(BEAT - 1);
            writes.push_back(Burst{e.awid, a, e.awlen + 1, 0});
            logf(3, "(%" PRIu64 ") AW id %u addr %08" PRIx64 " len %d", cycle, e.awid, a,
                 e.awlen + 1);
        }
        if (e.w) {
            wdata.push_back(e.wdat);
            wstrb.push_back(e.wstb);
        }
        if (e.r) {
            Burst &b = reads[r_current];
            b.addr += BEAT;
            if (--b.beats == 0) reads.erase(reads.begin() + (long)r_current);
            r_presenting = false;
            read_beats++;
            last_rid = e.rid;
        }
        if (e.b) {
            bresp.pop_front();
            b_presenting = false;
        }
        if (e.ar || e.aw || e.w || e.r || e.b) last_activity = cycle;

        // Write data meets its address phase (AXI allows data before the address).
        while (!writes.empty() && !wdata.empty()) {
            Burst &w = writes.front();
            uint64_t d = wdata.front();
            uint8_t s = wstrb.front();
            wdata.pop_front();
            wstrb.pop_front();
            if (uint8_t *p = ram->at(w.addr, BEAT)) {
                for (int i = 0; i < BEAT; i++)
                    if (s >> i & 1) p[i] = (uint8_t)(d >> (8 * i));
            }
            write_beats++;
            w.addr += BEAT;
            if (--w.beats == 0) {
                bresp.emplace_back(w.id, cycle + 2);
                writes.pop_front();
            }
        }

        // Drive R: the next beat once its burst's latency has passed.
        if (!r_presenting) {
            auto next = pick_read(cycle);
            if (next != reads.end()) {
                uint64_t d = 0;
                if (const uint8_t *p = ram->at(next->addr, BEAT)) memcpy(&d, p, BEAT);
                top->nvdla_core2dbb_r_rdata = d;
                top->nvdla_core2dbb_r_rid = next->id;
                top->nvdla_core2dbb_r_rlast = next->beats == 1;
                r_presenting = true;
                r_current = next - reads.begin();
            }
        }
        top->nvdla_core2dbb_r_rvalid = r_presenting;

        if (!b_presenting && !bresp.empty() && bresp.front().second <= cycle) {
            top->nvdla_core2dbb_b_bid = bresp.front().first;
            b_presenting = true;
        }
        top->nvdla_core2dbb_b_bvalid = b_presenting;
        top->nvdla_core2dbb_ar_arready = (int)reads.size() < max_reads;
    }

    void report_cdma_wt() const {
#ifdef NVDLA_RTL_DEBUG_CDMA_WT
#define WT(x) (unsigned long)top->rootp->NV_nvdla__DOT__u_partition_c__DOT__u_NV_NVDLA_cdma__DOT__u_wt__DOT__##x
        fprintf(stderr,
                "nvdla-rtl: CDMA_WT: wt_wr_dmatx_cnt %lu, weight_bank %lu, wt_req_sum %lu "
                "(onfly %lu, stored %lu, avl %lu)\n",
                WT(wt_wr_dmatx_cnt), WT(weight_bank), WT(wt_req_sum), WT(wt_data_onfly),
                WT(wt_data_stored), WT(wt_data_avl));
#undef WT
#endif
    }

    void report() const {
        report_cdma_wt();
        fprintf(stderr,
                "nvdla-rtl: AXI: %zu read bursts outstanding, %zu write bursts awaiting data, "
                "%zu write beats awaiting an address, R %s id %d (rready %d), %" PRIu64
                " read beats, %" PRIu64 " write beats\n",
                reads.size(), writes.size(), wdata.size(),
                r_presenting ? "presenting a beat" : "idle",
                (int)top->nvdla_core2dbb_r_rid, (int)top->nvdla_core2dbb_r_rready, read_beats, write_beats);
        std::map<int, int> per_id;
        for (const Burst &b : reads) per_id[b.id] += b.beats;
        for (auto &kv : per_id)
            fprintf(stderr, "nvdla-rtl:   id %d: %d beats outstanding\n", kv.first, kv.second);
    }
};

// ---- The accelerator ------------------------------------------------------------------------

struct Rtl {
    VNV_nvdla *top;
    AxiSlave axi;
    uint64_t cycle = 0;
    bool line = false;
    uint64_t csb_last = 0;

    // `gating`: the second-level clock gating of the engines (SLCG) as silicon has it. With
    // it, CDMA_WT misses CSC's weight-release pulses once its own clock is gated, and the
    // next layer whose weights exceed the stale count hangs (docs/rtl.md, "The ip1 stall");
    // without it (tmc2slcg_disable_clock_gating tied high) every network runs.
    explicit Rtl(Ram *ram, bool gating) : top(new VNV_nvdla) {
        axi.top = top;
        axi.ram = ram;
        top->global_clk_ovr_on = 0;
        top->tmc2slcg_disable_clock_gating = gating ? 0 : 1;
        top->test_mode = 0;
        top->nvdla_pwrbus_ram_c_pd = 0;
        top->nvdla_pwrbus_ram_ma_pd = 0;
        top->nvdla_pwrbus_ram_mb_pd = 0;
        top->nvdla_pwrbus_ram_p_pd = 0;
        top->nvdla_pwrbus_ram_o_pd = 0;
        top->nvdla_pwrbus_ram_a_pd = 0;
        top->csb2nvdla_valid = 0;
        axi.reset_ports();
    }

    // One clock cycle: handshakes are sampled before the rising edge, the AXI slave updates
    // after it, and the falling edge settles the new inputs.
    void tick() {
        top->eval();
        AxiSlave::Edge e = axi.sample();
        top->dla_core_clk = 1;
        top->dla_csb_clk = 1;
        top->eval();
        sim_time++;
        cycle++;
        axi.commit(e, cycle);
        top->dla_core_clk = 0;
        top->dla_csb_clk = 0;
        top->eval();
        sim_time++;
        line = top->dla_intr;
#ifdef NVDLA_RTL_DEBUG_CDMA_WT
        auto *r = top->rootp;
        if (r->NV_nvdla__DOT__u_partition_c__DOT__u_NV_NVDLA_cdma__DOT__u_wt__DOT__sc_wt_updt) {
            dbg_updts++;
            dbg_entries += r->NV_nvdla__DOT__u_partition_c__DOT__u_NV_NVDLA_cdma__DOT__u_wt__DOT__sc_wt_entries;
        }
        if (r->NV_nvdla__DOT__u_partition_c__DOT__u_NV_NVDLA_csc__DOT__u_sg__DOT__wt_release) dbg_sg_rls++;
        if (r->NV_nvdla__DOT__u_partition_c__DOT__u_NV_NVDLA_csc__DOT__u_wl__DOT__wt_rls) dbg_wl_rls++;
#endif
    }
    uint64_t dbg_updts = 0, dbg_entries = 0, dbg_sg_rls = 0, dbg_wl_rls = 0;

    // Reset as NVIDIA's testbench sequences it: clocks with reset high, 20 cycles with it
    // asserted (low), then time for the RAMs and buffers to clear. Memory is untouched.
    void reset() {
        axi.reset_ports();
        top->csb2nvdla_valid = 0;
        top->dla_reset_rstn = 1;
        top->direct_reset_ = 1;
        for (int i = 0; i < 20; i++) tick();
        top->dla_reset_rstn = 0;
        top->direct_reset_ = 0;
        for (int i = 0; i < 20; i++) tick();
        top->dla_reset_rstn = 1;
        top->direct_reset_ = 1;
        for (int i = 0; i < 8192; i++) tick();
        axi.reset_ports();
    }

    void csb_request(uint32_t word, uint32_t data, bool write) {
        top->csb2nvdla_addr = word;
        top->csb2nvdla_wdat = data;
        top->csb2nvdla_write = write;
        top->csb2nvdla_nposted = 0;
        top->csb2nvdla_valid = 1;
        for (int spins = 0;; spins++) {
            top->eval();
            bool accepted = top->csb2nvdla_ready;
            tick();
            if (accepted) break;
            if (spins > 100000) die("CSB request to 0x%x never accepted", word * 4);
        }
        top->csb2nvdla_valid = 0;
        csb_last = cycle;
    }

    void csb_write(uint32_t offset, uint32_t value) { csb_request(offset >> 2, value, true); }

    uint32_t csb_read(uint32_t offset) {
        csb_request(offset >> 2, 0, false);
        for (int spins = 0; spins < 100000; spins++) {
            if (top->nvdla2csb_valid) {
                uint32_t v = top->nvdla2csb_data;
                tick();
                return v;
            }
            tick();
        }
        die("CSB read of 0x%x never answered", offset);
    }

    uint64_t idle_cycles() const {
        uint64_t last = axi.last_activity > csb_last ? axi.last_activity : csb_last;
        return cycle - last;
    }
};

// ---- The server ------------------------------------------------------------------------------

struct Server {
    Rtl *rtl;
    Ram *ram;
    int fd = -1;
    uint64_t window = 0x40000;
    bool lockstep = false;
    bool sent_line = false;
    uint32_t wait_budget = 1u << 20;
    uint32_t stall_limit = 1u << 20;
    uint32_t cycle_hi_latch = 0;
    uint64_t irqs = 0, reads = 0, writes = 0;

    void send(const Msg &m) {
        uint8_t b[24];
        encode(m, b);
        size_t off = 0;
        while (off < sizeof b) {
            ssize_t n = ::write(fd, b + off, sizeof b - off);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) die("socket write failed: %s", strerror(errno));
            off += (size_t)n;
        }
    }

    // false at end of stream (the client closed the connection).
    bool recv(Msg &m) {
        uint8_t b[24];
        size_t off = 0;
        while (off < sizeof b) {
            ssize_t n = ::read(fd, b + off, sizeof b - off);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) die("socket read failed: %s", strerror(errno));
            if (n == 0) {
                if (off == 0) return false;
                die("truncated message (%zu of 24 bytes)", off);
            }
            off += (size_t)n;
        }
        m = decode(b);
        return true;
    }

    void sync_line() {
        if (rtl->line != sent_line) {
            sent_line = rtl->line;
            if (sent_line) irqs++;
            if (sent_line && verbose >= 2) {
                rtl->axi.report_cdma_wt();
                logf(2, "CSC weight releases: sg %lu, wl %lu; CDMA updates %lu (%lu entries)",
                     (unsigned long)rtl->dbg_sg_rls, (unsigned long)rtl->dbg_wl_rls,
                     (unsigned long)rtl->dbg_updts, (unsigned long)rtl->dbg_entries);
            }
            logf(2, "(%" PRIu64 ") interrupt line %d", rtl->cycle, (int)sent_line);
            send(Msg{IRQ, (uint32_t)sent_line, 0, 0});
        }
    }

    // Lockstep WAIT: run until the line is high, the budget is spent or the bus stalled.
    uint32_t wait() {
        for (uint32_t i = 0; i < wait_budget; i++) {
            if (rtl->line) return 1;
            if (!rtl->axi.reads.empty() && rtl->cycle - rtl->axi.last_activity > stall_limit) {
                fprintf(stderr,
                        "nvdla-rtl: (%" PRIu64 ") bus stalled: no AXI handshake for %" PRIu64
                        " cycles with reads outstanding\n",
                        rtl->cycle, rtl->cycle - rtl->axi.last_activity);
                rtl->axi.report();
                return 2;
            }
            // Idle for long with the line low: whatever is enabled waits for something
            // that will not come (no operation runs this long without touching memory).
            if (rtl->idle_cycles() > (uint64_t)stall_limit * 16) {
                fprintf(stderr,
                        "nvdla-rtl: (%" PRIu64 ") hung: no AXI or CSB activity for %" PRIu64
                        " cycles and no interrupt\n",
                        rtl->cycle, rtl->idle_cycles());
                rtl->axi.report();
                return 2;
            }
            rtl->tick();
        }
        return rtl->line ? 1 : 0;
    }

    uint64_t page_read(uint64_t off) {
        switch (off) {
        case PAGE_MAGIC: return PAGE_MAGIC_VALUE;
        case PAGE_VERSION: return 1;
        case PAGE_CYCLE_LO:
            cycle_hi_latch = (uint32_t)(rtl->cycle >> 32);
            return (uint32_t)rtl->cycle;
        case PAGE_CYCLE_HI: return cycle_hi_latch;
        case PAGE_MODE: return lockstep;
        case PAGE_WAIT_BUDGET: return wait_budget;
        case PAGE_WAIT: {
            uint32_t r = lockstep ? wait() : (uint32_t)rtl->line;
            sync_line();
            return r;
        }
        case PAGE_MEM_FAULTS: return (uint32_t)ram->faults;
        case PAGE_READ_BEATS: return (uint32_t)rtl->axi.read_beats;
        case PAGE_WRITE_BEATS: return (uint32_t)rtl->axi.write_beats;
        case PAGE_IDLE_CYCLES: {
            uint64_t idle = rtl->idle_cycles();
            return idle > 0xffffffffu ? 0xffffffffu : idle;
        }
        case PAGE_STALL_LIMIT: return stall_limit;
        default: return 0;
        }
    }

    void page_write(uint64_t off, uint32_t v) {
        switch (off) {
        case PAGE_MODE:
            lockstep = v & 1;
            logf(1, "clock %s", lockstep ? "in lockstep with the client" : "free-running");
            break;
        case PAGE_WAIT_BUDGET: wait_budget = v; break;
        case PAGE_STALL_LIMIT: stall_limit = v; break;
        default: break;
        }
    }

    uint64_t read(uint64_t addr, uint32_t len) {
        reads++;
        if (len != 4 || addr % 4 != 0 || addr >= window) return len >= 8 ? ~0ull : (1ull << (8 * len)) - 1;
        if (addr >= RTL_PAGE) return page_read(addr - RTL_PAGE);
        return rtl->csb_read((uint32_t)addr);
    }

    void write(uint64_t addr, uint32_t len, uint64_t value) {
        writes++;
        if (len != 4 || addr % 4 != 0 || addr >= window) {
            logf(1, "dropped a %u-byte write at 0x%" PRIx64, len, addr);
            return;
        }
        if (addr >= RTL_PAGE) return page_write(addr - RTL_PAGE, (uint32_t)value);
        rtl->csb_write((uint32_t)addr, (uint32_t)value);
    }

    void serve() {
        Msg m;
        if (!recv(m)) die("client closed before HELLO");
        if (m.kind != HELLO) die("first message is kind 0x%x, not HELLO", m.kind);
        if (m.addr != PROTOCOL_VERSION) die("protocol version %" PRIu64 ", expected 1", m.addr);
        window = m.value;
        logf(1, "connected, window 0x%" PRIx64 " bytes", window);
        for (;;) {
            if (!lockstep) {
                // Free-running: clock while the socket is quiet.
                struct pollfd p = {fd, POLLIN, 0};
                int n = poll(&p, 1, 0);
                if (n == 0) {
                    for (int i = 0; i < 64; i++) rtl->tick();
                    sync_line();
                    continue;
                }
            }
            if (!recv(m)) break;
            switch (m.kind) {
            case READ: {
                uint64_t v = read(m.addr, m.len);
                logf(2, "(%" PRIu64 ") read 0x%" PRIx64 " = 0x%" PRIx64, rtl->cycle, m.addr, v);
                send(Msg{READ_REPLY, m.len, m.addr, v});
                break;
            }
            case WRITE:
                logf(2, "(%" PRIu64 ") write 0x%" PRIx64 " = 0x%" PRIx64, rtl->cycle, m.addr,
                     m.value);
                write(m.addr, m.len, m.value);
                break;
            case RESET:
                logf(1, "(%" PRIu64 ") reset", rtl->cycle);
                rtl->reset();
                send(Msg{RESET_DONE, 0, 0, 0});
                break;
            default: die("unexpected message kind 0x%x", m.kind);
            }
            sync_line();
        }
        logf(1, "client closed: %" PRIu64 " cycles, %" PRIu64 " interrupts, %" PRIu64
                " register reads, %" PRIu64 " writes, %" PRIu64 " read beats, %" PRIu64
                " write beats, %" PRIu64 " memory faults",
             rtl->cycle, irqs, reads, writes, rtl->axi.read_beats, rtl->axi.write_beats,
             ram->faults);
    }
};

void usage() {
    fputs("usage: nvdla-rtl-harness --socket PATH --ram FILE [--ram-base ADDR] [--ram-size N]\n"
          "                         [--latency N]\n"
          "                         [--read-order fifo|interleave] [--clock-gating on|off]\n"
          "                         [--lockstep] [-v]...\n"
          "Serves the nv_small RTL over the bridge protocol on PATH (one connection), with\n"
          "DRAM in FILE at device address ADDR (default 0x80000000); --ram-size creates or\n"
          "extends FILE to N bytes.\n",
          stderr);
}

}  // namespace

int main(int argc, char **argv) {
    const char *socket_path = nullptr, *ram_path = nullptr;
    uint64_t ram_base = 0x80000000ull, ram_size = 0;
    int latency = 32;
    bool lockstep = false, interleave = false, gating = false;
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        auto value = [&]() -> const char * {
            if (i + 1 >= argc) {
                usage();
                die("%s needs a value", a.c_str());
            }
            return argv[++i];
        };
        if (a == "--socket") socket_path = value();
        else if (a == "--ram") ram_path = value();
        else if (a == "--ram-base") ram_base = strtoull(value(), nullptr, 0);
        else if (a == "--ram-size") ram_size = strtoull(value(), nullptr, 0);
        else if (a == "--latency") latency = atoi(value());
        else if (a == "--lockstep") lockstep = true;
        else if (a == "--clock-gating") {
            std::string v = value();
            if (v == "on") gating = true;
            else if (v != "off") die("--clock-gating is on or off");
        } else if (a == "--read-order") {
            std::string v = value();
            if (v == "interleave") interleave = true;
            else if (v != "fifo") die("--read-order is fifo or interleave");
        }
        else if (a == "-v") verbose++;
        else if (a == "-vv") verbose += 2;
        else if (a == "-h" || a == "--help") {
            usage();
            return 0;
        } else {
            usage();
            die("unknown argument %s", a.c_str());
        }
    }
    if (!socket_path || !ram_path) {
        usage();
        return 2;
    }
    if (latency < 1 || latency > 100000) die("--latency must be 1..100000 cycles");
    signal(SIGPIPE, SIG_IGN);

    Ram ram;
    ram.open_file(ram_path, ram_base, ram_size);
    Verilated::commandArgs(argc, argv);
    Rtl rtl(&ram, gating);
    rtl.axi.latency = latency;
    rtl.axi.interleave = interleave;
    rtl.reset();

    int lfd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (lfd < 0) die("socket: %s", strerror(errno));
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    if (strlen(socket_path) >= sizeof sa.sun_path) die("socket path too long");
    strcpy(sa.sun_path, socket_path);
    unlink(socket_path);
    if (bind(lfd, (struct sockaddr *)&sa, sizeof sa) != 0)
        die("bind %s: %s", socket_path, strerror(errno));
    if (listen(lfd, 1) != 0) die("listen: %s", strerror(errno));
    logf(1, "listening on %s (RAM %s at 0x%" PRIx64 ", 0x%" PRIx64 " bytes), reset took %" PRIu64
            " cycles",
         socket_path, ram_path, ram_base, ram.size, rtl.cycle);
    int cfd = accept(lfd, nullptr, nullptr);
    if (cfd < 0) die("accept: %s", strerror(errno));
    ::close(lfd);
    unlink(socket_path);

    Server server;
    server.rtl = &rtl;
    server.ram = &ram;
    server.fd = cfd;
    server.lockstep = lockstep;
    server.serve();
    rtl.top->final();
    delete rtl.top;
    return 0;
}
