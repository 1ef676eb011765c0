//! Printed reports of what a device measured.

use std::fmt::Write as _;

use nvdla_port::device::DeviceTimings;

/// The per-operation cycle table a timing device (`--device rtl`) reports after a run: one
/// line per hardware operation in the order the firmware enabled it, then the totals.
pub fn timings_table(t: &DeviceTimings) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "hardware cycles per operation (enable to done interrupt):\n  {:>4}  {:<6} {:>5} {:>12} {:>12} {:>10}",
        "#", "engine", "group", "enabled", "done", "cycles"
    );
    for (i, op) in t.ops.iter().enumerate() {
        let done = op.done.map_or_else(|| "-".to_string(), |d| d.to_string());
        let cycles = op
            .cycles()
            .map_or_else(|| "-".to_string(), |c| c.to_string());
        let _ = writeln!(
            s,
            "  {i:>4}  {:<6} {:>5} {:>12} {done:>12} {cycles:>10}",
            op.engine, op.group, op.enabled
        );
    }
    let busy: u64 = t.ops.iter().filter_map(|o| o.cycles()).sum();
    let _ = writeln!(
        s,
        "hardware total: {} cycles from submit to last interrupt ({} operations, {} cycles \
         summed over them); memory: {} bytes read, {} bytes written",
        t.total_cycles,
        t.ops.len(),
        busy,
        t.bytes_read,
        t.bytes_written
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use nvdla_port::device::OpTiming;

    #[test]
    fn table_lists_each_operation_and_the_totals() {
        let t = DeviceTimings {
            ops: vec![
                OpTiming {
                    engine: "conv",
                    group: 0,
                    enabled: 100,
                    done: Some(1100),
                },
                OpTiming {
                    engine: "pdp",
                    group: 1,
                    enabled: 1200,
                    done: None,
                },
            ],
            total_cycles: 1500,
            bytes_read: 64,
            bytes_written: 32,
        };
        let s = timings_table(&t);
        assert!(s.contains("conv"), "{s}");
        assert!(s.lines().any(|l| l.trim_end().ends_with("1000")), "{s}");
        assert!(
            s.contains("1500 cycles from submit to last interrupt (2 operations, 1000 cycles"),
            "{s}"
        );
        assert!(s.contains("64 bytes read, 32 bytes written"), "{s}");
    }
}
