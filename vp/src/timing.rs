//! The cycle model: when each operation would start and end on silicon, and why.
//!
//! The model computes each operation at once; this module gives it a clock. Software's
//! register accesses take CSB cycles ([`TimingParams::csb_write_cycles`],
//! [`TimingParams::csb_read_cycles`]). An enabled operation starts when its engine is free
//! (an engine runs its two register groups in turn) and lasts:
//!
//! - a direct convolution: the schedule of the nv_small RTL's pipeline ([`conv_cycles`]:
//!   the input loaded first, then stripes of MAC packages, CACC's one-stripe delivery to
//!   the flying SDP, weights arriving by kernel group);
//! - any other operation: `max(compute, memory) + fixed`, where compute is the elements an
//!   SDP, PDP or CDP processes divided by the build's `*_THROUGHPUT`, memory the bytes its
//!   DMAs moved (per interface, from the model's access log) at the interface's bandwidth
//!   ([`TimingParams`]), and fixed its fill and drain ([`FIXED`]).
//!
//! The constants were measured on NVIDIA's nv_small RTL with our harness
//! (docs/performance.md). Its done interrupts arrive at its end, and [`crate::Vp`] delivers
//! them in that order, advancing the clock to each when software waits for the line: the
//! firmware then runs the schedule it would run on silicon, engines overlapping as it
//! enables them. The per-operation records ([`TimedOp`]) say which bound was the long pole,
//! as NVIDIA's performance estimator names them (MAC, DRAM, CVSRAM).

use std::collections::{BTreeMap, HashMap};

use crate::config::HwConfig;
use crate::engines::{conv, Precision};
use crate::glb::IntrSource;
use crate::mem::{Access, RamType};
use crate::regs::{ids, Block, Reg, RegFile};

/// Memory and register-bus timing the model assumes. Defaults: [`TimingParams::for_config`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimingParams {
    /// DRAM (MCIF) bytes per cycle.
    pub dram_bytes_per_cycle: f64,
    /// DRAM read latency in cycles.
    pub dram_latency: u64,
    /// CVSRAM (CVIF) bytes per cycle (0: the build has none).
    pub sram_bytes_per_cycle: f64,
    /// CVSRAM read latency in cycles.
    pub sram_latency: u64,
    /// Cycles one CSB register write takes on average (posted: a few are queued while
    /// the bus retires them).
    pub csb_write_cycles: f64,
    /// Cycles one CSB register read takes (a round trip).
    pub csb_read_cycles: f64,
}

impl TimingParams {
    /// The defaults for `cfg`: each memory interface moves its full data width per cycle
    /// (`PRIMARY_MEMIF_WIDTH`, `SECONDARY_MEMIF_WIDTH`) after 32 cycles of latency, and a
    /// CSB write takes 2.25 cycles on average (four are queued at a cycle each, then the
    /// fifth waits 6) and a read 19: what our RTL harness does (docs/rtl.md), so that on
    /// nv_small the model and the RTL see the same memory and bus.
    pub fn for_config(cfg: &HwConfig) -> Self {
        let m = cfg.hw.memif;
        Self {
            dram_bytes_per_cycle: f64::from(m.primary_width) / 8.0,
            dram_latency: 32,
            sram_bytes_per_cycle: f64::from(m.secondary_width) / 8.0,
            sram_latency: 32,
            csb_write_cycles: 2.25,
            csb_read_cycles: 19.0,
        }
    }
}

/// A timeline track: the engines an operation occupies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Track {
    /// The convolution pipeline (CDMA, CSC, CMAC, CACC).
    Conv,
    /// SDP.
    Sdp,
    /// PDP.
    Pdp,
    /// CDP.
    Cdp,
    /// RUBIK.
    Rubik,
    /// BDMA.
    Bdma,
}

impl Track {
    /// Every track, in timeline order.
    pub const ALL: [Track; 6] = [
        Track::Conv,
        Track::Sdp,
        Track::Pdp,
        Track::Cdp,
        Track::Rubik,
        Track::Bdma,
    ];

    /// Its name: `conv`, `sdp`, `pdp`, `cdp`, `rubik`, `bdma`.
    pub const fn name(self) -> &'static str {
        match self {
            Track::Conv => "conv",
            Track::Sdp => "sdp",
            Track::Pdp => "pdp",
            Track::Cdp => "cdp",
            Track::Rubik => "rubik",
            Track::Bdma => "bdma",
        }
    }

    fn index(self) -> usize {
        self as usize
    }

    /// The track of a block's operations (`None`: a block that only serves another).
    pub fn of_block(b: Block) -> Option<Track> {
        Some(match b {
            Block::Cdma | Block::Csc | Block::CmacA | Block::CmacB | Block::Cacc => Track::Conv,
            Block::Sdp | Block::SdpRdma => Track::Sdp,
            Block::Pdp | Block::PdpRdma => Track::Pdp,
            Block::Cdp | Block::CdpRdma => Track::Cdp,
            Block::Rubik => Track::Rubik,
            Block::Bdma => Track::Bdma,
            _ => return None,
        })
    }

    fn of_source(s: IntrSource) -> Track {
        match s {
            IntrSource::Sdp => Track::Sdp,
            IntrSource::Cdp => Track::Cdp,
            IntrSource::Pdp => Track::Pdp,
            IntrSource::Bdma => Track::Bdma,
            IntrSource::Rubik => Track::Rubik,
            IntrSource::CdmaDat | IntrSource::CdmaWt | IntrSource::Cacc => Track::Conv,
        }
    }

    /// The block whose `D_OP_ENABLE` starts the track's operation.
    fn trigger(self) -> Block {
        match self {
            Track::Conv => Block::Cdma,
            Track::Sdp => Block::Sdp,
            Track::Pdp => Block::Pdp,
            Track::Cdp => Block::Cdp,
            Track::Rubik => Block::Rubik,
            Track::Bdma => Block::Bdma,
        }
    }
}

/// Cycles an operation other than a direct convolution takes besides its compute and its
/// memory traffic: the pipeline's fill and drain. Measured on NVIDIA's nv_small RTL with our
/// harness (docs/performance.md): a standalone SDP or a PDP takes about 100 more than its
/// elements. The convolution's entry serves only registers [`conv_cycles`] cannot decode.
pub const FIXED: [(Track, u64); 6] = [
    (Track::Conv, 1100),
    (Track::Sdp, 100),
    (Track::Pdp, 100),
    (Track::Cdp, 100),
    (Track::Rubik, 100),
    (Track::Bdma, 100),
];

/// Operations a timeline keeps until it is taken ([`CycleModel::take_ops`]).
pub const MAX_TIMED_OPS: usize = 1 << 16;

/// Cycles a flying SDP (fed by CACC) takes after the convolution's end: its last
/// writes.
pub const FLYING_SDP_TAIL: u64 = 20;

/// A convolution's constants (nv_small, int8). Found by reading the nv_small RTL and timing
/// its handshakes (CSC `sg`, CACC delivery buffer, CMAC shadow weights), then checked on
/// single convolutions swept over channels, kernels, kernel size and output size
/// (docs/performance.md, "Convolution").
pub mod conv_rates {
    /// Cycles from CDMA's enable to its first memory request, besides the memory latency.
    pub const START: f64 = 58.0;
    /// Cycles from the last input atom to the first MAC package.
    pub const FIRST_PACKAGE: f64 = 11.0;
    /// Cycles from a stripe's last package to CACC's first delivery of it.
    pub const TO_DELIVERY: f64 = 37.0;
    /// Cycles to add to the pipeline's CDMA-enable-to-last-delivery for the enable-to-done
    /// the profiler reports (its cycle count is read after the enable's CSB write; the
    /// done interrupt then takes its way through GLB): fitted over the sweep.
    pub const MEASURED: f64 = -40.0;
    /// Output pixels of a stripe (the packages that share one weight load).
    pub const STRIPE: u64 = 16;
    /// Accumulator entries (pixels of one kernel group) CACC's delivery buffer holds: CSC
    /// may run one stripe ahead of the delivery to SDP and no more.
    pub const CREDITS: u64 = 16;
    /// Cycles per input atom while data and weights share the read port (one beat per
    /// cycle, granted in turn).
    pub const SHARED_PORT: f64 = 2.0;
    /// Cycles per input atom of CDMA's feature loading alone, by the channel surfaces of a
    /// 4-surface chunk (1, 2, 3, 4): its response staging stalls as the surfaces grow.
    pub const DATA_RATE: [f64; 4] = [1.0, 1.03, 1.19, 1.27];
}

/// The stripes of `pixels` output pixels: 16 at a time, and the tail as CSC cuts it (a
/// remainder between 17 and 31 takes 8 first).
fn stripes(pixels: u64) -> impl Iterator<Item = u64> {
    let mut done = 0;
    std::iter::from_fn(move || {
        if done >= pixels {
            return None;
        }
        let left = pixels - done;
        let s = if left >= 2 * conv_rates::STRIPE {
            conv_rates::STRIPE
        } else if left <= conv_rates::STRIPE {
            left
        } else {
            conv_rates::STRIPE / 2
        };
        done += s;
        Some(s)
    })
}

/// Cycles per input atom of CDMA's feature loading with `surfaces` channel surfaces.
fn data_rate(surfaces: u64) -> f64 {
    use conv_rates::DATA_RATE;
    let s = surfaces.max(1);
    let (full, rem) = (s / 4, (s % 4) as usize);
    let rem_rate = if rem == 0 { 0.0 } else { DATA_RATE[rem - 1] };
    (full as f64 * 4.0 * DATA_RATE[3] + rem as f64 * rem_rate) / s as f64
}

/// Cycles of a direct convolution (CDMA enable to CACC done) and what bounds it.
///
/// The schedule of the nv_small RTL (docs/performance.md, "Convolution"):
/// - CSC starts no MAC package before CDMA has the whole input cube in CBUF; until then
///   input and weights share the read port, a beat each in turn.
/// - The output pixels are cut into stripes of 16; a package is one kernel position of one
///   atomic-C channel group over a stripe, `max(stripe, atomic K)` cycles (the next
///   package's weights load into CMAC's shadow registers one kernel per cycle meanwhile).
/// - CACC delivers a stripe to the flying SDP one element per cycle with an idle cycle
///   after each pixel's atomic-K elements, and its buffer holds one stripe: the last
///   package of a stripe waits until the previous stripe is delivered.
/// - A kernel group's weights must have arrived before its first package; weights beyond
///   the CBUF banks given to them wait until CSC releases an earlier group's.
pub fn conv_cycles(c: &ConvWork, p: &TimingParams, sdp_throughput: u32) -> (u64, Pole) {
    use conv_rates::*;
    let rate = |sram: bool| {
        if sram {
            (p.sram_bytes_per_cycle.max(1.0), p.sram_latency)
        } else {
            (p.dram_bytes_per_cycle.max(1.0), p.dram_latency)
        }
    };
    let (data_beat, data_latency) = rate(c.data_in_sram);
    let (beat, weight_latency) = rate(c.weights_in_sram);
    // Data and weights through one interface share its read port (measured on the RTL);
    // through two (one of them CV-SRAM) they stream side by side.
    let one_port = c.data_in_sram == c.weights_in_sram;
    let groups = c.kernel_groups.max(1);
    let packages = c.weight_blocks_per_group.max(1);
    let ak = c.group_kernels.max(1);
    let package = |s: u64| (s.max(ak) * packages) as f64;
    // Delivery of one pixel of one kernel group: its elements at the SDP's rate, then an
    // idle cycle.
    let per_entry = (ak as f64 / f64::from(sdp_throughput.max(1))).ceil() + 1.0;
    let d = (c.data_bytes as f64 / data_beat).ceil();
    let wb = (c.weight_bytes as f64 / beat).ceil();
    let start = START + weight_latency as f64;
    let shared = if one_port { wb.min(d) } else { 0.0 };
    let t_data = START
        + data_latency as f64
        + SHARED_PORT * shared
        + data_rate(c.data_surfaces) * (d - shared);
    // Weight beats by group (the last may hold fewer kernels), and when each has arrived.
    let group_beats: Vec<f64> = (0..groups)
        .map(|g| {
            let k = ak.min(c.kernels.saturating_sub(g * ak)).max(1);
            wb * k as f64 / c.kernels.max(1) as f64
        })
        .collect();
    let arrival = |x: f64| {
        start
            + if !one_port {
                x
            } else if x <= d {
                SHARED_PORT * x
            } else {
                SHARED_PORT * d + (x - d)
            }
    };
    let mut ready: Vec<f64> = Vec::with_capacity(groups as usize);
    let mut cum = 0.0;
    for b in &group_beats {
        cum += b;
        ready.push(arrival(cum));
    }
    let capacity = (c.weight_capacity_bytes as f64 / beat).max(1.0);
    let mut released: Vec<f64> = vec![0.0; groups as usize];
    let mut t = t_data + FIRST_PACKAGE;
    // Delivery of the units in flight: (delivery start, entries, entries before it).
    let mut inflight: std::collections::VecDeque<(f64, u64, u64)> = Default::default();
    let mut entries_before = 0u64;
    let mut delivery_end = 0.0f64;
    let (mut mac_bound, mut delivery_bound, mut weight_wait) = (0.0, 0.0, 0.0);
    for g in 0..groups {
        let gi = g as usize;
        // Weights past the banks' capacity wait for earlier groups' release.
        let resident: f64 = group_beats[..=gi].iter().sum();
        if resident > capacity {
            let (mut freed, mut j, mut when) = (0.0, 0usize, 0.0f64);
            while resident - freed > capacity && j < gi {
                freed += group_beats[j];
                when = released[j];
                j += 1;
            }
            let r = when + group_beats[gi] + 20.0;
            if r > ready[gi] {
                let shift = r - ready[gi];
                for x in ready.iter_mut().skip(gi) {
                    *x += shift;
                }
            }
        }
        if g > 0 && ready[gi] + FIRST_PACKAGE > t {
            weight_wait += ready[gi] + FIRST_PACKAGE - t;
        }
        t = t.max(ready[gi] + FIRST_PACKAGE);
        for s in stripes(c.out_pixels.max(1)) {
            let first = t;
            let mut last = first + package(s) - s.max(ak) as f64;
            // The buffer must have room for this stripe: entries of earlier stripes
            // returned (each one cycle after its last element).
            let outstanding = entries_before;
            let room = CREDITS.saturating_sub(s);
            if outstanding > room {
                let m = outstanding - room; // entries that must have returned
                while let Some(&(ds, n, before)) = inflight.front() {
                    if before + n < m {
                        inflight.pop_front();
                        continue;
                    }
                    let k = m - before; // the k-th entry of this unit (1-based)
                    last = last.max(ds + per_entry * k as f64 + 1.0);
                    break;
                }
            }
            let ds = (last + TO_DELIVERY).max(delivery_end);
            inflight.push_back((ds, s, entries_before));
            entries_before += s;
            delivery_end = ds + per_entry * s as f64;
            mac_bound += package(s);
            delivery_bound += per_entry * s as f64;
            t = last + s.max(ak) as f64;
        }
        released[gi] = t;
    }
    let cycles = delivery_end - 1.0 + MEASURED;
    let pole = if t_data + weight_wait > mac_bound.max(delivery_bound) {
        Pole::Dram
    } else if delivery_bound > mac_bound {
        Pole::Engine
    } else {
        Pole::Mac
    };
    (cycles.round().max(0.0) as u64, pole)
}

fn fixed(t: Track) -> u64 {
    FIXED.iter().find(|(k, _)| *k == t).map_or(0, |(_, c)| *c)
}

/// What an operation computes, decoded from its registers before it runs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Work {
    /// Its shape, for people: `3x3/2 8>16 24x96` (kernel/stride, channels, output size) or
    /// `WxHxC` of the cube an engine processes.
    pub shape: String,
    /// Multiply-adds (convolutions).
    pub macs: u64,
    /// Cycles of its engine's datapath at full rate (MAC array or `*_THROUGHPUT`).
    pub compute_cycles: u64,
    /// Multiply-adds the MAC array does per cycle at the operation's precision.
    pub peak_macs_per_cycle: u64,
    /// A convolution's schedule (`None` for the other engines).
    pub conv: Option<ConvWork>,
}

/// How a direct convolution runs: CDMA loads the input cube, then for each group of
/// atomic-K kernels the MAC array works through every output pixel, kernel position and
/// atomic-C channel group while the kernels' weights stream in and CACC hands the previous
/// group's outputs to the flying SDP ([`conv_cycles`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ConvWork {
    /// Kernel groups (`ceil(K / atomic K)`).
    pub kernel_groups: u64,
    /// MAC cycles of one kernel group.
    pub mac_cycles_per_group: u64,
    /// Weight blocks (one kernel position of one atomic-C channel group of the group's
    /// kernels) of one kernel group: the MAC array loads each in atomic-K cycles and uses
    /// it for a stripe of output pixels.
    pub weight_blocks_per_group: u64,
    /// Output pixels (width x height x batches).
    pub out_pixels: u64,
    /// Kernels per group.
    pub group_kernels: u64,
    /// Kernels.
    pub kernels: u64,
    /// Bytes of the input cube.
    pub data_bytes: u64,
    /// Channel surfaces of the input cube (memory atoms per pixel).
    pub data_surfaces: u64,
    /// Bytes of the CBUF banks given to the weights.
    pub weight_capacity_bytes: u64,
    /// Bytes of all the weights.
    pub weight_bytes: u64,
    /// The input cube is read through CVIF (CV-SRAM) instead of MCIF.
    pub data_in_sram: bool,
    /// The weights are read through CVIF.
    pub weights_in_sram: bool,
}

/// What bounded an operation, as NVIDIA's estimator names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pole {
    /// The MAC array (a convolution's compute).
    Mac,
    /// An SDP, PDP or CDP datapath's throughput.
    Engine,
    /// DRAM bandwidth.
    Dram,
    /// CVSRAM bandwidth.
    Cvsram,
    /// Neither: the fixed pipeline cycles dominate.
    Fixed,
}

impl Pole {
    /// `MAC`, `engine`, `DRAM`, `CVSRAM` or `fixed`.
    pub const fn name(self) -> &'static str {
        match self {
            Pole::Mac => "MAC",
            Pole::Engine => "engine",
            Pole::Dram => "DRAM",
            Pole::Cvsram => "CVSRAM",
            Pole::Fixed => "fixed",
        }
    }
}

/// One operation on the timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct TimedOp {
    /// Its track.
    pub track: Track,
    /// Register group.
    pub group: usize,
    /// Cycle of its `D_OP_ENABLE` write.
    pub enabled: u64,
    /// Cycle it started (its engine free and enabled).
    pub start: u64,
    /// Cycle of its done interrupt.
    pub end: u64,
    /// Cycle of the status read in which software first saw all its done bits.
    pub seen: Option<u64>,
    /// Its shape ([`Work::shape`]).
    pub shape: String,
    /// Multiply-adds.
    pub macs: u64,
    /// Multiply-adds per cycle at full rate (0: not a convolution).
    pub peak_macs_per_cycle: u64,
    /// Datapath cycles at full rate.
    pub compute_cycles: u64,
    /// Cycles its memory traffic takes at the interfaces' bandwidth.
    pub memory_cycles: u64,
    /// DRAM bytes read.
    pub dram_read: u64,
    /// DRAM bytes written.
    pub dram_write: u64,
    /// CVSRAM bytes read.
    pub sram_read: u64,
    /// CVSRAM bytes written.
    pub sram_write: u64,
    /// What bounded it.
    pub pole: Pole,
    /// Done bits not seen yet.
    outstanding: Vec<(IntrSource, usize)>,
}

/// The clock and the timeline (part of [`crate::Vp`]).
#[derive(Debug, Clone)]
pub struct CycleModel {
    params: TimingParams,
    sdp_throughput: u32,
    now: u64,
    /// Fractional cycles of register accesses not yet added to `now`.
    bus: f64,
    busy_until: [u64; 6],
    enables: HashMap<(Block, usize), u64>,
    ops: Vec<TimedOp>,
}

/// Bytes of `log` by memory and direction: (DRAM read, DRAM write, SRAM read, SRAM write).
fn traffic(log: &[Access]) -> [u64; 4] {
    let mut t = [0u64; 4];
    for a in log {
        let i = match (a.ram, a.write) {
            (RamType::Dram, false) => 0,
            (RamType::Dram, true) => 1,
            (RamType::Sram, false) => 2,
            (RamType::Sram, true) => 3,
        };
        t[i] += a.end.saturating_sub(a.start);
    }
    t
}

impl CycleModel {
    /// A model of `cfg` at cycle 0 with `params`.
    pub fn new(cfg: &HwConfig, params: TimingParams) -> Self {
        Self {
            params,
            sdp_throughput: cfg.hw.throughput.sdp_bs,
            now: 0,
            bus: 0.0,
            busy_until: [0; 6],
            enables: HashMap::new(),
            ops: Vec::new(),
        }
    }

    /// The memory and bus timing in use.
    pub fn params(&self) -> &TimingParams {
        &self.params
    }

    /// Replaces the memory and bus timing.
    pub fn set_params(&mut self, p: TimingParams) {
        self.params = p;
    }

    /// The current cycle.
    pub fn now(&self) -> u64 {
        self.now
    }

    /// A CSB access happened (a write, or a read).
    pub fn csb(&mut self, write: bool) {
        self.bus += if write {
            self.params.csb_write_cycles
        } else {
            self.params.csb_read_cycles
        };
        let whole = self.bus.floor();
        self.now += whole as u64;
        self.bus -= whole;
    }

    /// Software waited until cycle `t` (an interrupt).
    pub fn advance_to(&mut self, t: u64) {
        self.now = self.now.max(t);
    }

    /// `block`'s group `group` was enabled now.
    pub fn enabled(&mut self, block: Block, group: usize) {
        self.enables.insert((block, group), self.now);
    }

    fn enable_time(&self, block: Block, group: usize) -> u64 {
        self.enables
            .get(&(block, group))
            .copied()
            .unwrap_or(self.now)
    }

    fn memory_cycles(&self, t: [u64; 4]) -> (u64, u64) {
        let cyc = |bytes: u64, bw: f64, lat: u64| {
            if bytes == 0 || bw <= 0.0 {
                0
            } else {
                (bytes as f64 / bw).ceil() as u64 + lat
            }
        };
        let p = &self.params;
        (
            cyc(t[0] + t[1], p.dram_bytes_per_cycle, p.dram_latency),
            cyc(t[2] + t[3], p.sram_bytes_per_cycle, p.sram_latency),
        )
    }

    /// An operation ran: `work` of each track it occupied (the first started it, in
    /// register group `group`), with the memory accesses `log` and the done interrupts
    /// `dones`. Returns the cycle of each done interrupt, in the order of `dones`.
    pub fn ran(
        &mut self,
        work: &[(Track, Work)],
        group: usize,
        log: &[Access],
        dones: &[(IntrSource, usize)],
    ) -> Vec<u64> {
        let Some(lead) = work.first().map(|(t, _)| *t) else {
            return vec![self.now; dones.len()];
        };
        let t = traffic(log);
        let (dram, sram) = self.memory_cycles(t);
        let memory = dram.max(sram);
        let enabled = self.enable_time(lead.trigger(), group);
        // Every track it occupies must be free (a fused SDP waits for its own previous
        // group too).
        // It starts when its own engine is free; the engines it feeds on the fly take
        // its output only when they are done with their previous operation.
        let start = enabled.max(self.busy_until[lead.index()]);
        let compute = work
            .iter()
            .map(|(_, w)| w.compute_cycles)
            .max()
            .unwrap_or(0);
        let conv = work.first().and_then(|(_, w)| w.conv);
        let (cycles, pole) = match conv {
            Some(c) => conv_cycles(&c, &self.params, self.sdp_throughput),
            None => {
                let pole = if compute >= memory {
                    if compute == 0 {
                        Pole::Fixed
                    } else if lead == Track::Conv {
                        Pole::Mac
                    } else {
                        Pole::Engine
                    }
                } else if dram >= sram {
                    Pole::Dram
                } else {
                    Pole::Cvsram
                };
                (compute.max(memory) + fixed(lead), pole)
            }
        };
        let end = start + cycles;
        let mut ends: HashMap<Track, u64> = HashMap::new();
        for (i, (track, w)) in work.iter().enumerate() {
            let track = *track;
            // Tracks fed on the fly end after the one feeding them (and after their own
            // previous operation).
            let e = if i == 0 {
                end
            } else {
                end.max(self.busy_until[track.index()]) + FLYING_SDP_TAIL * i as u64
            };
            ends.insert(track, e);
            self.busy_until[track.index()] = e;
            let group_of = |k: Track| {
                dones
                    .iter()
                    .find(|(s, _)| Track::of_source(*s) == k)
                    .map_or(group, |(_, g)| *g)
            };
            let g = group_of(track);
            self.ops.push(TimedOp {
                track,
                group: g,
                enabled: if i == 0 {
                    enabled
                } else {
                    self.enable_time(track.trigger(), g)
                },
                start,
                end: e,
                seen: None,
                shape: w.shape.clone(),
                macs: w.macs,
                peak_macs_per_cycle: w.peak_macs_per_cycle,
                compute_cycles: w.compute_cycles,
                memory_cycles: memory,
                dram_read: if i == 0 { t[0] } else { 0 },
                dram_write: if i == 0 { t[1] } else { 0 },
                sram_read: if i == 0 { t[2] } else { 0 },
                sram_write: if i == 0 { t[3] } else { 0 },
                pole,
                outstanding: dones
                    .iter()
                    .copied()
                    .filter(|(s, _)| Track::of_source(*s) == track)
                    .collect(),
            });
        }
        // A platform nobody takes the timeline from (a long-running server) keeps the
        // latest operations only.
        if self.ops.len() > MAX_TIMED_OPS {
            self.ops.drain(..MAX_TIMED_OPS / 2);
        }
        dones
            .iter()
            .map(|(s, _)| {
                let track = Track::of_source(*s);
                ends.get(&track).copied().unwrap_or(end)
            })
            .collect()
    }

    /// Software read GLB status `status` (at the current cycle): operations whose done
    /// bits are all seen are over.
    pub fn status_read(&mut self, status: u32) {
        let now = self.now;
        for op in self
            .ops
            .iter_mut()
            .rev()
            .take(64)
            .filter(|o| o.seen.is_none())
        {
            op.outstanding
                .retain(|(src, g)| status & (1u32 << (src.bit() + *g as u32)) == 0);
            if op.outstanding.is_empty() {
                op.seen = Some(now);
            }
        }
    }

    /// The operations timed since the last call, in the order they ran.
    pub fn take_ops(&mut self) -> Vec<TimedOp> {
        std::mem::take(&mut self.ops)
    }

    /// The operations timed so far.
    pub fn ops(&self) -> &[TimedOp] {
        &self.ops
    }
}

/// Bytes per element of the input precision in a `D_DATA_FORMAT`-like register (bits 1:0:
/// 0 int8, else 16-bit).
fn element_bytes(file: &RegFile, reg: Reg) -> usize {
    if file.cur(reg) & 3 == 0 {
        1
    } else {
        2
    }
}

/// What the operation `trigger` starts would compute, from its consumer groups'
/// registers: the tracks it occupies (the first leads; `to_pdp`: its SDP feeds the PDP on
/// the fly) and each one's work. Registers that do not decode give no work (the run then
/// faults).
pub(crate) fn work_of(
    cfg: &HwConfig,
    files: &BTreeMap<Block, RegFile>,
    trigger: Block,
    to_pdp: bool,
) -> Vec<(Track, Work)> {
    let f = files;
    let t = cfg.hw.throughput;
    let per = |elements: usize, rate: u32, shape: String| Work {
        shape,
        macs: 0,
        compute_cycles: (elements as u64).div_ceil(u64::from(rate.max(1))),
        peak_macs_per_cycle: 0,
        conv: None,
    };
    // Channels padded to whole memory atoms of precision `bytes`.
    let atom = cfg.hw.memory_atomic as usize;
    let padded = |c: usize, bytes: usize| c.next_multiple_of((atom / bytes.max(1)).max(1));
    let dims = |file: Block, w: Reg, h: Reg, c: Reg| {
        f.get(&file).map_or((0, 0, 0), |r| {
            let d = |n: Reg| (r.cur(n) & 0x1fff) as usize + 1;
            (d(w), d(h), d(c))
        })
    };
    let sdp_work = || {
        let (w, h, c) = dims(
            Block::Sdp,
            ids::sdp::D_DATA_CUBE_WIDTH,
            ids::sdp::D_DATA_CUBE_HEIGHT,
            ids::sdp::D_DATA_CUBE_CHANNEL,
        );
        // Whole memory atoms of the input precision pass through (a cube of 3
        // channels takes as long as one of 8 on nv_small).
        let bytes = element_bytes(&f[&Block::Sdp], ids::sdp::D_DATA_FORMAT);
        per(w * h * padded(c, bytes), t.sdp_bs, format!("{w}x{h}x{c}"))
    };
    let pdp_work = || {
        let (w, h, c) = dims(
            Block::Pdp,
            ids::pdp::D_DATA_CUBE_IN_WIDTH,
            ids::pdp::D_DATA_CUBE_IN_HEIGHT,
            ids::pdp::D_DATA_CUBE_IN_CHANNEL,
        );
        let pdp = &f[&Block::Pdp];
        let bytes = element_bytes(pdp, ids::pdp::D_DATA_FORMAT);
        use ids::pdp::D_POOLING_KERNEL_CFG as K;
        let kernel = pdp.field(K, K::KERNEL_WIDTH) as usize + 1;
        let stride = pdp.field(K, K::KERNEL_STRIDE_WIDTH) as usize + 1;
        let kernel_h = pdp.field(K, K::KERNEL_HEIGHT) + 1;
        let stride_h = pdp.field(K, K::KERNEL_STRIDE_HEIGHT) + 1;
        use ids::pdp::D_OPERATION_MODE_CFG as M;
        let strips = pdp.field(ids::pdp::D_OPERATION_MODE_CFG, M::SPLIT_NUM) as usize + 1;
        let out_w = (pdp.cur(ids::pdp::D_DATA_CUBE_OUT_WIDTH) & 0x1fff) as usize + 1;
        // The outputs a line of the PDP's buffer holds, where the build's geometry is
        // known (nv_small's, from its RTL).
        let lines = nvdla_hw::Config::pdp_buffered_lines(kernel_h, stride_h);
        let cap = cfg
            .hw
            .pdp_line_pixels(lines, bytes as u32)
            .map(|v| v as usize);
        // More than 4 windows overlapping a column (kernel width over 4 strides, and as
        // many output columns) cost windows-1 more cycles per input line and channel
        // when one strip holds more outputs than the buffer's line (measured on the
        // nv_small RTL: kernels 5 to 8 at stride 1, NVIDIA's 8x8 pooling trace); a
        // pooling whose line fits pays nothing (SPP's 5x5 and 7x7 over 13 and 16
        // columns), one split into strips pays for the strips below instead
        // (docs/performance.md).
        let windows = kernel.div_ceil(stride).min(out_w);
        let overfull = strips == 1 && cap.is_none_or(|cap| out_w > cap);
        let mut extra = if windows > 4 && overfull {
            (windows - 1) * h * padded(c, bytes)
        } else {
            0
        };
        // A width split into strips reads the columns its windows share across each
        // strip boundary once per strip (kernel - stride columns; measured on the
        // nv_small RTL with NVIDIA's split traces, docs/performance.md).
        extra += (strips - 1) * kernel.saturating_sub(stride) * h * padded(c, bytes);
        // Each line of top padding costs a line of the input's width plus one, two fewer
        // per strip boundary, where the geometry is known: for every memory atom of
        // channels, or once for a single line under a window of 3 lines or more; at a
        // vertical stride of 2, nothing measurable (measured on the nv_small RTL,
        // docs/performance.md: kernels 2 to 7 at stride 1 padded by 1 to 3 over 8 to 32
        // channels and 13 to 32 columns; at stride 2, kernels 3 and 5 padded by 1 and 2
        // cost 26 cycles whatever the width and channels; NVIDIA's 8x8 trace at stride 3
        // padded by 6 pays as at stride 1).
        if cap.is_some() && stride_h != 2 {
            use ids::pdp::D_POOLING_PADDING_CFG as P;
            let top = pdp.field(P, P::PAD_TOP) as usize;
            let channels = if top == 1 && kernel_h >= 3 {
                padded(1, bytes)
            } else {
                padded(c, bytes)
            };
            extra += top * (w + 1).saturating_sub(2 * (strips - 1)) * channels;
        }
        per(
            w * h * padded(c, bytes) + extra,
            t.pdp,
            format!("{w}x{h}x{c} k{kernel}/{stride}"),
        )
    };
    match trigger {
        Block::Cdma => {
            let layer = conv::Layer::decode(
                cfg,
                &f[&Block::Cdma],
                &f[&Block::Csc],
                [&f[&Block::CmacA], &f[&Block::CmacB]],
                &f[&Block::Cacc],
            );
            let conv = layer.map_or(Work::default(), |l| {
                let ac = cfg.hw.atomic_c.max(1) as u64;
                // 16-bit precisions use the MAC cells in pairs (hwarch, "Convolution
                // MAC"): half the kernels per cycle.
                let ak = match l.prec {
                    Precision::Int8 => cfg.hw.atomic_k,
                    _ => cfg.hw.atomic_k / 2,
                }
                .max(1) as u64;
                let g = l.geom;
                let (ow, oh, k) = (g.out_w as u64, g.out_h as u64, g.k as u64);
                let b = l.batches.max(1) as u64;
                let macs = b * ow * oh * k * (g.r * g.s * g.in_c) as u64;
                let groups = k.div_ceil(ak).max(1);
                let cycles = match l.wino {
                    // F(2x2, 3x3): 16 products per channel, kernel and 2x2 outputs
                    // instead of 36 (hwarch, "Winograd").
                    Some(w) => {
                        let wg = w.geom;
                        b * (wg.out_w * wg.out_h) as u64
                            * 4
                            * (wg.in_c as u64).div_ceil(4 * ac)
                            * (wg.k as u64).div_ceil(ak)
                    }
                    None => {
                        let rows = g.r.div_ceil(g.y_ext.max(1)) as u64;
                        b * ow
                            * oh
                            * rows
                            * g.s as u64
                            * (g.in_c as u64).div_ceil(g.lanes.max(1) as u64).max(1)
                            * k.div_ceil(ak)
                    }
                };
                Work {
                    shape: format!(
                        "{}x{}/{} {}>{} {}x{}{}",
                        g.s,
                        g.r,
                        g.sx,
                        g.in_c,
                        g.k,
                        g.out_w,
                        g.out_h,
                        if l.wino.is_some() { " wino" } else { "" }
                    ),
                    macs,
                    compute_cycles: cycles,
                    peak_macs_per_cycle: ac * ak,
                    conv: Some(ConvWork {
                        kernel_groups: groups,
                        mac_cycles_per_group: cycles / groups,
                        weight_blocks_per_group: (cycles / groups)
                            .checked_div(b * ow * oh)
                            .unwrap_or(0),
                        out_pixels: b * ow * oh,
                        group_kernels: ak,
                        kernels: k,
                        data_bytes: (b * l.cdma_w as u64 * l.cdma_h as u64)
                            * (l.cdma_c as u64 * u64::from(l.prec.bytes()))
                                .next_multiple_of(u64::from(l.atom.max(1))),
                        // Compressed: the stored elements, the mask and the group
                        // sizes all come from memory.
                        weight_bytes: l.weight_bytes
                            + if l.compressed {
                                l.wmb_bytes + 4 * k.div_ceil(ak.max(1))
                            } else {
                                0
                            },
                        data_surfaces: (l.cdma_c as u64 * u64::from(l.prec.bytes()))
                            .div_ceil(u64::from(l.atom.max(1))),
                        weight_capacity_bytes: u64::from(l.weight_banks)
                            * conv::cbuf_entries_per_bank(cfg)
                            * u64::from(conv::cbuf_entry_bytes(cfg)),
                        data_in_sram: l.dain_ram == RamType::Sram,
                        weights_in_sram: l.weight_ram == RamType::Sram,
                    }),
                }
            });
            let mut v = vec![(Track::Conv, conv), (Track::Sdp, sdp_work())];
            if to_pdp {
                v.push((Track::Pdp, pdp_work()));
            }
            v
        }
        Block::Sdp => {
            let mut v = vec![(Track::Sdp, sdp_work())];
            if to_pdp {
                v.push((Track::Pdp, pdp_work()));
            }
            v
        }
        Block::Pdp => vec![(Track::Pdp, pdp_work())],
        Block::Cdp => {
            let (w, h, c) = dims(
                Block::CdpRdma,
                ids::cdp_rdma::D_DATA_CUBE_WIDTH,
                ids::cdp_rdma::D_DATA_CUBE_HEIGHT,
                ids::cdp_rdma::D_DATA_CUBE_CHANNEL,
            );
            let bytes = element_bytes(&f[&Block::Cdp], ids::cdp::D_DATA_FORMAT);
            vec![(
                Track::Cdp,
                per(w * h * padded(c, bytes), t.cdp, format!("{w}x{h}x{c}")),
            )]
        }
        Block::Rubik => vec![(Track::Rubik, Work::default())],
        Block::Bdma => vec![(Track::Bdma, Work::default())],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> TimingParams {
        TimingParams {
            dram_bytes_per_cycle: 8.0,
            dram_latency: 32,
            sram_bytes_per_cycle: 0.0,
            sram_latency: 0,
            csb_write_cycles: 2.25,
            csb_read_cycles: 19.0,
        }
    }

    fn read(start: u64, end: u64) -> Access {
        Access {
            ram: RamType::Dram,
            start,
            end,
            write: false,
        }
    }

    #[test]
    fn compute_bound_convolution_with_its_flying_sdp() {
        let mut m = CycleModel::new(
            &HwConfig::new(nvdla_hw::Config::by_name("nv_small").unwrap()),
            params(),
        );
        m.csb(true);
        m.enabled(Block::Sdp, 0);
        m.csb(true);
        m.enabled(Block::Cdma, 0);
        let work = [
            (
                Track::Conv,
                Work {
                    shape: String::new(),
                    macs: 64 * 1000,
                    compute_cycles: 1000,
                    peak_macs_per_cycle: 64,
                    conv: None,
                },
            ),
            (Track::Sdp, Work::default()),
        ];
        let ends = m.ran(
            &work,
            0,
            &[read(0, 800)],
            &[(IntrSource::Cacc, 0), (IntrSource::Sdp, 0)],
        );
        // Enabled at cycle 4 (two writes of 2.25); 1000 MAC cycles beat 800 / 8 + 32
        // memory cycles.
        assert_eq!(
            ends,
            vec![4 + 1000 + 1100, 4 + 1000 + 1100 + FLYING_SDP_TAIL]
        );
        let ops = m.ops();
        assert_eq!(ops[0].pole, Pole::Mac);
        assert_eq!(ops[0].dram_read, 800);
        assert_eq!(ops[1].track, Track::Sdp);
        assert_eq!(ops[1].enabled, 2);
    }

    fn nv_small() -> HwConfig {
        HwConfig::new(nvdla_hw::Config::by_name("nv_small").unwrap())
    }

    /// A convolution of `c` input and `k` output channels, `r`x`r` kernel, `w`x`h` input
    /// and output (padded), int8 on nv_small.
    fn conv(c: u64, k: u64, r: u64, w: u64, h: u64) -> ConvWork {
        let cs = c.div_ceil(8);
        ConvWork {
            kernel_groups: k.div_ceil(8),
            mac_cycles_per_group: w * h * r * r * cs,
            weight_blocks_per_group: r * r * cs,
            out_pixels: w * h,
            group_kernels: 8,
            kernels: k,
            data_bytes: w * h * cs * 8,
            data_surfaces: cs,
            weight_bytes: k * r * r * cs * 8,
            weight_capacity_bytes: 16 * 4096,
            data_in_sram: false,
            weights_in_sram: false,
        }
    }

    /// The input cube in CV-SRAM: its loading no longer shares the DRAM port with the
    /// weights, and moves at the secondary interface's width.
    #[test]
    fn input_in_sram_loads_beside_the_weights() {
        let mut p = TimingParams::for_config(&nv_small());
        p.sram_bytes_per_cycle = 64.0;
        let dram = conv(128, 8, 1, 16, 16);
        let sram = ConvWork {
            data_in_sram: true,
            ..dram
        };
        let (a, pole_a) = conv_cycles(&dram, &p, 1);
        let (b, _) = conv_cycles(&sram, &p, 1);
        assert_eq!(pole_a, Pole::Dram);
        // 32 KiB of input: 4 096 beats of 8 bytes shared with the weights, against 512
        // of 64 bytes beside them.
        assert!(b + 3_000 < a, "{b} vs {a}");
        // Weights in SRAM too: one port again, at its width.
        let both = ConvWork {
            weights_in_sram: true,
            ..sram
        };
        assert!(conv_cycles(&both, &p, 1).0 <= a);
    }

    /// The schedule against cycles NVIDIA's nv_small RTL took (enable to done, measured
    /// with `nvdla-runtime --device rtl --timeline`; docs/performance.md): within 2 %.
    #[test]
    fn convolution_cycles_match_the_rtl() {
        let p = TimingParams::for_config(&nv_small());
        for (c, k, r, w, h, rtl, pole) in [
            (8, 8, 1, 16, 16, 3290, Pole::Engine),
            (128, 8, 1, 16, 16, 9706, Pole::Dram),
            (128, 64, 1, 16, 16, 39028, Pole::Mac),
            (64, 64, 3, 16, 16, 151828, Pole::Mac),
            (8, 8, 1, 96, 24, 28642, Pole::Engine),
            (512, 64, 1, 1, 1, 4818, Pole::Mac),
        ] {
            let (cycles, got) = conv_cycles(&conv(c, k, r, w, h), &p, 1);
            let err = (cycles as f64 - rtl as f64).abs() / rtl as f64;
            assert!(err < 0.02, "{c}>{k} {r}x{r} {w}x{h}: {cycles} vs {rtl}");
            assert_eq!(got, pole, "{c}>{k} {r}x{r} {w}x{h}");
        }
    }

    #[test]
    fn stripes_cut_the_tail_as_csc_does() {
        assert_eq!(stripes(40).collect::<Vec<_>>(), vec![16, 8, 16]);
        assert_eq!(stripes(33).collect::<Vec<_>>(), vec![16, 8, 9]);
        assert_eq!(stripes(1).collect::<Vec<_>>(), vec![1]);
    }

    #[test]
    fn memory_bound_and_engines_in_turn() {
        let mut m = CycleModel::new(
            &HwConfig::new(nvdla_hw::Config::by_name("nv_small").unwrap()),
            params(),
        );
        m.enabled(Block::Pdp, 0);
        let w = [(
            Track::Pdp,
            Work {
                shape: String::new(),
                macs: 0,
                compute_cycles: 10,
                peak_macs_per_cycle: 0,
                conv: None,
            },
        )];
        let e0 = m.ran(&w, 0, &[read(0, 8000)], &[(IntrSource::Pdp, 0)]);
        assert_eq!(e0, vec![1000 + 32 + 100]);
        assert_eq!(m.ops()[0].pole, Pole::Dram);
        // The second group waits for the first.
        m.enabled(Block::Pdp, 1);
        let e1 = m.ran(&w, 1, &[], &[(IntrSource::Pdp, 1)]);
        assert_eq!(e1, vec![e0[0] + 10 + 100]);
        // Seen by a status read with both bits.
        m.advance_to(e1[0]);
        m.status_read(0xffff_ffff);
        assert_eq!(m.ops()[1].seen, Some(e1[0]));
    }

    /// The PDP's compute cycles for a `w x 9 x c` int8 pooling with a 3-line window at
    /// vertical stride `stride_h`, padded by `top` lines at the top.
    fn pdp_cycles(c: u32, w: u32, stride_h: u32, top: u32) -> u64 {
        let cfg = HwConfig::new(nvdla_hw::Config::by_name("nv_small").unwrap());
        let def = crate::regs::blocks(cfg.version())
            .iter()
            .find(|d| d.unit == Block::Pdp)
            .unwrap();
        let mut pdp = RegFile::new(cfg.version(), def);
        use ids::pdp as r;
        pdp.set_group(0, r::D_DATA_CUBE_IN_WIDTH, w - 1);
        pdp.set_group(0, r::D_DATA_CUBE_IN_HEIGHT, 8);
        pdp.set_group(0, r::D_DATA_CUBE_IN_CHANNEL, c - 1);
        pdp.set_group(0, r::D_DATA_CUBE_OUT_WIDTH, w - 1);
        // Kernel 3x3 (fields hold size - 1), horizontal stride 1.
        pdp.set_group(0, r::D_POOLING_KERNEL_CFG, 0x202 | (stride_h - 1) << 20);
        pdp.set_group(0, r::D_POOLING_PADDING_CFG, top << 4 | 1);
        let files = BTreeMap::from([(Block::Pdp, pdp)]);
        work_of(&cfg, &files, Block::Pdp, false)[0].1.compute_cycles
    }

    #[test]
    fn pdp_top_padding_costs_as_on_the_rtl() {
        let t = u64::from(nv_small().hw.throughput.pdp);
        // Stride 1: a line of the width plus one per padding line, per atom of 8
        // channels; a single line once (measured on the RTL: 136 cycles over 16 columns
        // whatever the channels, 272 and 528 for two lines over 8 and 16 channels).
        for c in [8, 16, 32] {
            assert_eq!(
                pdp_cycles(c, 16, 1, 1) - pdp_cycles(c, 16, 1, 0),
                17 * 8 / t
            );
            assert_eq!(
                pdp_cycles(c, 16, 1, 2) - pdp_cycles(c, 16, 1, 0),
                2 * 17 * u64::from(c) / t
            );
            // Stride 2: nothing measurable (26 cycles on the RTL at any width).
            assert_eq!(pdp_cycles(c, 24, 2, 2), pdp_cycles(c, 24, 2, 0));
            assert!(pdp_cycles(c, 24, 3, 2) > pdp_cycles(c, 24, 3, 0));
        }
    }
}
