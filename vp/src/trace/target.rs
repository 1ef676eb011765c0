//! What a trace player drives: [`TraceTarget`].
//!
//! The players ([`super::cfg::run`], [`super::txn::run`]) program registers over the CSB,
//! load and check memory as the host, and wait for done interrupts. The model ([`Vp`])
//! implements the trait here; `nvdla-vp-cli` implements it for NVIDIA's RTL behind its
//! harness (`nvdla-vp trace --device rtl`).

use crate::config::HwConfig;
use crate::glb::IntrSource;
use crate::regs::Block;
use crate::vp::Vp;

/// A platform a trace test runs on.
///
/// Register names resolve in the model's register map of [`TraceTarget::config`]
/// ([`Vp::lookup`]), whatever the target. Done events are counted per [`IntrSource`], as
/// the model records them ([`Vp::events`]): a `.cfg` `intr_notify` takes the next one of
/// its source.
pub trait TraceTarget {
    /// The build the test runs on (named in messages).
    fn config(&self) -> &HwConfig;

    /// CSB byte address of register `reg` of block `block` (`NVDLA_<BLOCK>.<REG>_0` in
    /// traces), as [`Vp::lookup`] finds it for [`TraceTarget::config`].
    fn lookup(&self, block: &str, reg: &str) -> Option<u32>;

    /// 32-bit CSB read at byte address `addr`.
    fn csb_read(&mut self, addr: u32) -> u32;

    /// 32-bit CSB write at byte address `addr`.
    fn csb_write(&mut self, addr: u32, value: u32);

    /// A testbench poll (`.cfg` `poll_reg_equal`): reads `addr` until it reads `want` or
    /// the target gives up, and returns the last value read. The default reads once: the
    /// model completes work when observed, so one read decides.
    fn csb_poll(&mut self, addr: u32, want: u32) -> u32 {
        let _ = want;
        self.csb_read(addr)
    }

    /// Writes memory as the host does (trace loads and initialisations); the error says
    /// why the range cannot be written (e.g. outside the target's memory).
    fn host_write(&mut self, addr: u64, data: &[u8]) -> Result<(), String>;

    /// Reads memory as the host does (trace checks); the error says why the range cannot
    /// be read.
    fn host_read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), String>;

    /// Done events observed so far: of `src`, or of every source when `None`. Observing
    /// may let time pass, as on the model (enabled work completes first).
    fn event_count(&mut self, src: Option<IntrSource>) -> usize;

    /// Waits until more than `seen` done events of `src` have been observed, and says
    /// whether they were (when not, [`TraceTarget::fault_note`] may say why). The default
    /// waits no longer than [`TraceTarget::event_count`] does.
    fn wait_event(&mut self, src: IntrSource, seen: usize) -> bool {
        self.event_count(Some(src)) > seen
    }

    /// Level of the interrupt line, after letting time pass (an `input.txn` `wait`).
    fn irq_pending(&mut self) -> bool;

    /// Lets enabled work complete (before memory is checked).
    fn run_pending(&mut self);

    /// Why the target cannot be trusted at the end of a test (an engine fault, a lost
    /// connection), as a failure message; `None` when nothing went wrong.
    fn fault_message(&mut self) -> Option<String>;

    /// A note appended to a failure message: a fault, or what is still waiting to run;
    /// empty when there is nothing to add. Starts with a space when not empty.
    fn fault_note(&mut self) -> String;
}

impl TraceTarget for Vp {
    fn config(&self) -> &HwConfig {
        Vp::config(self)
    }

    fn lookup(&self, block: &str, reg: &str) -> Option<u32> {
        Vp::lookup(self, block, reg)
    }

    fn csb_read(&mut self, addr: u32) -> u32 {
        Vp::csb_read(self, addr)
    }

    fn csb_write(&mut self, addr: u32, value: u32) {
        Vp::csb_write(self, addr, value)
    }

    fn host_write(&mut self, addr: u64, data: &[u8]) -> Result<(), String> {
        self.mem.host_write(addr, data).map_err(|e| e.to_string())
    }

    fn host_read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), String> {
        self.mem.host_read(addr, buf).map_err(|e| e.to_string())
    }

    fn event_count(&mut self, src: Option<IntrSource>) -> usize {
        let ev = self.events();
        match src {
            Some(s) => ev.iter().filter(|(s2, _)| *s2 == s).count(),
            None => ev.len(),
        }
    }

    fn irq_pending(&mut self) -> bool {
        Vp::irq_pending(self)
    }

    fn run_pending(&mut self) {
        Vp::run_pending(self)
    }

    fn fault_message(&mut self) -> Option<String> {
        self.fault()
            .map(|f| format!("engine fault: {}: {}", f.block, f.error))
    }

    fn fault_note(&mut self) -> String {
        if let Some(f) = self.fault() {
            return format!(" (engine fault: {}: {})", f.block, f.error);
        }
        let pending = self.pending_blocks();
        if pending.is_empty() {
            return String::new();
        }
        let names: Vec<&str> = pending.iter().map(|b| b.name()).collect();
        let conv = pending.iter().any(|b| {
            matches!(
                b,
                Block::Cdma | Block::Csc | Block::CmacA | Block::CmacB | Block::Cacc
            )
        });
        format!(
            " (enabled, not run: {}{})",
            names.join(", "),
            if conv {
                "; a convolution layer runs when CDMA, CSC, CMAC_A, CMAC_B, CACC and a \
                 flying SDP group are all enabled"
            } else {
                ""
            }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{self, Checks, Observed, Outcome, TestCase};
    use std::path::{Path, PathBuf};

    /// Another target: the model behind the trait's required methods only (the optional
    /// ones keep their defaults), as a target outside this crate would be.
    struct Delegate(Vp);

    impl TraceTarget for Delegate {
        fn config(&self) -> &HwConfig {
            self.0.config()
        }
        fn lookup(&self, block: &str, reg: &str) -> Option<u32> {
            self.0.lookup(block, reg)
        }
        fn csb_read(&mut self, addr: u32) -> u32 {
            self.0.csb_read(addr)
        }
        fn csb_write(&mut self, addr: u32, value: u32) {
            self.0.csb_write(addr, value)
        }
        fn host_write(&mut self, addr: u64, data: &[u8]) -> Result<(), String> {
            TraceTarget::host_write(&mut self.0, addr, data)
        }
        fn host_read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), String> {
            TraceTarget::host_read(&mut self.0, addr, buf)
        }
        fn event_count(&mut self, src: Option<IntrSource>) -> usize {
            TraceTarget::event_count(&mut self.0, src)
        }
        fn irq_pending(&mut self) -> bool {
            self.0.irq_pending()
        }
        fn run_pending(&mut self) {
            self.0.run_pending()
        }
        fn fault_message(&mut self) -> Option<String> {
            TraceTarget::fault_message(&mut self.0)
        }
        fn fault_note(&mut self) -> String {
            TraceTarget::fault_note(&mut self.0)
        }
    }

    fn shared(rel: &str) -> Option<PathBuf> {
        let p = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../shared/nvdla-hw-traces")
            .join(rel);
        if p.exists() {
            Some(p)
        } else {
            eprintln!("skipping: {} not found", p.display());
            None
        }
    }

    fn file(t: &TestCase) -> &Path {
        match &t.kind {
            trace::TestKind::Txn(f) | trace::TestKind::Cfg(f) => f,
        }
    }

    /// One test on the model three ways: `run_test`, `run_on` with every check recorded
    /// (going on after failures or not) and `run_on` through [`Delegate`]: the same
    /// outcome and the same observations.
    fn same_everywhere(t: &TestCase) -> (Outcome, Checks) {
        let cfg = trace::infer_config(file(t));
        let want = trace::run_test(t, cfg, &trace::Options::default()).unwrap();
        let mut stop = Checks::default();
        let a = trace::run_on(t, &mut Vp::new(cfg), &mut stop).unwrap();
        let mut go = Checks::keep_going();
        let b = trace::run_on(t, &mut Vp::new(cfg), &mut go).unwrap();
        let mut other = Checks::keep_going();
        let c = trace::run_on(t, &mut Delegate(Vp::new(cfg)), &mut other).unwrap();
        assert_eq!(a, want, "{}", t.name);
        assert_eq!(b, want, "{}", t.name);
        assert_eq!(c, want, "{}", t.name);
        assert_eq!(go, other, "{}", t.name);
        (want, go)
    }

    #[test]
    fn model_through_the_trait() {
        for rel in ["v2-sample/nv_small", "v1-nv_full/sdp_relu_int16"] {
            let Some(dir) = shared(rel) else { continue };
            for t in trace::discover(&dir).unwrap() {
                let (o, checks) = same_everywhere(&t);
                assert_eq!(o, Outcome::Pass, "{}", t.name);
                assert!(checks.completed, "{}", t.name);
                assert!(!checks.records.is_empty(), "{}", t.name);
                assert!(checks.records.iter().all(|r| r.matched), "{}", t.name);
            }
        }
    }

    /// A wrong golden CRC: the same failure whether the run stops there or goes on, and
    /// the record holds the CRC the model computed.
    #[test]
    fn failed_check_recorded() {
        let Some(src) = shared("v2-sample/nv_small/pdp_8x8x64_2x2_ave_int8_0") else {
            return;
        };
        // The configuration is inferred from the path.
        let dir = std::env::temp_dir()
            .join(format!("nvdla-vp-target-{}", std::process::id()))
            .join("nv_small");
        std::fs::create_dir_all(&dir).unwrap();
        for e in std::fs::read_dir(&src).unwrap() {
            let p = e.unwrap().path();
            let mut bytes = std::fs::read(&p).unwrap();
            if p.extension().is_some_and(|x| x == "cfg") {
                let text = String::from_utf8(bytes).unwrap();
                assert!(text.contains("0xbad56856"));
                bytes = text.replace("0xbad56856", "0x12345678").into_bytes();
            }
            std::fs::write(dir.join(p.file_name().unwrap()), bytes).unwrap();
        }
        let tests = trace::discover(&dir).unwrap();
        let (o, checks) = same_everywhere(&tests[0]);
        let _ = std::fs::remove_dir_all(dir.parent().unwrap());
        assert!(
            matches!(&o, Outcome::Fail(m) if m.contains("got 0xbad56856, expected 0x12345678")),
            "{o:?}"
        );
        assert!(checks.completed);
        assert_eq!(checks.records.len(), 1);
        assert_eq!(checks.records[0].observed, Observed::Crc(0xbad5_6856));
        assert!(!checks.records[0].matched);
    }
}
