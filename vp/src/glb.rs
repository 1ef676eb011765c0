//! GLB interrupt logic.
//!
//! `S_INTR_STATUS` holds one done bit per engine and ping-pong group (same positions in
//! v1 and v2: SDP 0/1, CDP 2/3, PDP 4/5, BDMA 6/7, RUBIK 8/9, CDMA_DAT 16/17,
//! CDMA_WT 18/19, CACC 20/21). Software clears a bit by writing 1 to it (write-1-to-clear);
//! `S_INTR_SET` sets bits by software for testing; a bit set in `S_INTR_MASK` keeps that
//! status from asserting the interrupt line, but the status bit itself is still recorded
//! (hwarch, "Interrupt"). The line is level: it stays high while any unmasked bit is set.

/// Interrupt sources, each with two bits (group 0 and group 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IntrSource {
    /// SDP layer done.
    Sdp,
    /// CDP layer done.
    Cdp,
    /// PDP layer done.
    Pdp,
    /// BDMA group done.
    Bdma,
    /// RUBIK layer done.
    Rubik,
    /// CDMA feature data loaded.
    CdmaDat,
    /// CDMA weights loaded.
    CdmaWt,
    /// CACC layer done.
    Cacc,
}

impl IntrSource {
    /// Bit of group 0; group 1 is the next bit.
    pub fn bit(self) -> u32 {
        match self {
            IntrSource::Sdp => 0,
            IntrSource::Cdp => 2,
            IntrSource::Pdp => 4,
            IntrSource::Bdma => 6,
            IntrSource::Rubik => 8,
            IntrSource::CdmaDat => 16,
            IntrSource::CdmaWt => 18,
            IntrSource::Cacc => 20,
        }
    }

    /// Parses a trace source name such as `SDP_0`, `cdma_dat_0`, `RUBIK`.
    pub fn from_trace_name(s: &str) -> Option<Self> {
        let up = s.to_ascii_uppercase();
        let base = match up.rsplit_once('_') {
            Some((head, tail)) if tail.chars().all(|c| c.is_ascii_digit()) => head.to_string(),
            _ => up,
        };
        Some(match base.as_str() {
            "SDP" => IntrSource::Sdp,
            "CDP" => IntrSource::Cdp,
            "PDP" => IntrSource::Pdp,
            "BDMA" => IntrSource::Bdma,
            "RUBIK" | "RBK" => IntrSource::Rubik,
            "CDMA_DAT" => IntrSource::CdmaDat,
            "CDMA_WT" => IntrSource::CdmaWt,
            "CACC" => IntrSource::Cacc,
            _ => return None,
        })
    }
}

/// Bits that exist in `S_INTR_*`.
pub const INTR_BITS: u32 = 0x003f_03ff;

/// GLB interrupt state.
#[derive(Debug, Clone, Default)]
pub struct Glb {
    status: u32,
    mask: u32,
}

impl Glb {
    /// Records a done event of `src` for `group`.
    pub fn raise(&mut self, src: IntrSource, group: usize) {
        self.status |= 1 << (src.bit() + (group as u32 & 1));
    }

    /// `S_INTR_STATUS` value.
    pub fn status(&self) -> u32 {
        self.status
    }

    /// `S_INTR_MASK` value.
    pub fn mask(&self) -> u32 {
        self.mask
    }

    /// Write to `S_INTR_MASK`.
    pub fn write_mask(&mut self, v: u32) {
        self.mask = v & INTR_BITS;
    }

    /// Write to `S_INTR_SET`: software-raised status bits.
    pub fn write_set(&mut self, v: u32) {
        self.status |= v & INTR_BITS;
    }

    /// Write to `S_INTR_STATUS`: write-1-to-clear.
    pub fn write_status(&mut self, v: u32) {
        self.status &= !v;
    }

    /// Level of the interrupt line.
    pub fn irq_pending(&self) -> bool {
        self.status & !self.mask != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn w1c_and_mask() {
        let mut g = Glb::default();
        g.raise(IntrSource::Bdma, 0);
        g.raise(IntrSource::Pdp, 1);
        assert_eq!(g.status(), 0x40 | 0x20);
        g.write_mask(0x40);
        assert!(g.irq_pending());
        g.write_status(0x20);
        assert!(!g.irq_pending());
        assert_eq!(g.status(), 0x40);
        g.write_mask(0);
        assert!(g.irq_pending());
        g.write_status(0xffff_ffff);
        assert!(!g.irq_pending());
        g.write_set(0x1_0000);
        assert_eq!(g.status(), 0x1_0000);
    }

    #[test]
    fn trace_names() {
        assert_eq!(IntrSource::from_trace_name("SDP_0"), Some(IntrSource::Sdp));
        assert_eq!(
            IntrSource::from_trace_name("cdma_dat_0"),
            Some(IntrSource::CdmaDat)
        );
        assert_eq!(
            IntrSource::from_trace_name("CACC_0"),
            Some(IntrSource::Cacc)
        );
        assert_eq!(IntrSource::from_trace_name("XYZ_0"), None);
    }
}
