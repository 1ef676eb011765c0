//! Printed reports of what a device measured.

use std::fmt::Write as _;

use nvdla_port::device::{DeviceTimings, OpCost};

/// The per-operation cycle table of a run: one line per hardware operation in the order the
/// firmware enabled it, then the totals. From the RTL (`--device rtl`) the cycles are
/// measured; from the in-process model (`--profile`) they are its estimates, with each
/// operation's MAC utilization, memory traffic and long pole.
pub fn timings_table(t: &DeviceTimings) -> String {
    let mut s = String::new();
    let modelled = t.ops.iter().any(|o| o.cost.is_some());
    let _ = write!(
        s,
        "{} per operation (enable to done interrupt):\n  {:>4}  {:<6} {:>5} {:>12} {:>12} {:>10}",
        if t.modelled {
            "modelled cycles (nvdla-vp's cycle model)"
        } else {
            "hardware cycles"
        },
        "#",
        "engine",
        "group",
        "enabled",
        "done",
        "cycles"
    );
    if modelled {
        let _ = write!(
            s,
            " {:>6} {:>10} {:>10} {:<6}  shape",
            "MAC%", "DRAM B", "CVSRAM B", "pole"
        );
    }
    s.push('\n');
    for (i, op) in t.ops.iter().enumerate() {
        let done = op.done.map_or_else(|| "-".to_string(), |d| d.to_string());
        let cycles = op
            .cycles()
            .map_or_else(|| "-".to_string(), |c| c.to_string());
        let _ = write!(
            s,
            "  {i:>4}  {:<6} {:>5} {:>12} {done:>12} {cycles:>10}",
            op.engine, op.group, op.enabled
        );
        if let Some(c) = &op.cost {
            let _ = write!(
                s,
                " {:>6} {:>10} {:>10} {:<6}  {}",
                utilization(c).map_or_else(|| "-".to_string(), |u| format!("{:.1}", u * 100.0)),
                c.dram_bytes,
                c.sram_bytes,
                c.pole,
                c.shape
            );
        }
        s.push('\n');
    }
    let busy: u64 = t.ops.iter().filter_map(|o| o.cycles()).sum();
    let _ = writeln!(
        s,
        "{} total: {} cycles from submit to last interrupt ({} operations, {} cycles \
         summed over them); memory: {} bytes read, {} bytes written",
        if t.modelled { "modelled" } else { "hardware" },
        t.total_cycles,
        t.ops.len(),
        busy,
        t.bytes_read,
        t.bytes_written
    );
    if modelled {
        let macs: u64 = t
            .ops
            .iter()
            .filter_map(|o| o.cost.as_ref())
            .map(|c| c.macs)
            .sum();
        let peak = t
            .ops
            .iter()
            .filter_map(|o| o.cost.as_ref())
            .map(|c| c.peak_macs_per_cycle)
            .max()
            .unwrap_or(0);
        if peak > 0 && t.total_cycles > 0 {
            let _ = writeln!(
                s,
                "modelled MAC utilization: {macs} multiply-adds in {} cycles of a {peak}-MAC \
                 array: {:.1} %",
                t.total_cycles,
                macs as f64 * 100.0 / (peak as f64 * t.total_cycles as f64)
            );
        }
    }
    s
}

/// Multiply-adds done over those the MAC array could do in the operation's cycles.
fn utilization(c: &OpCost) -> Option<f64> {
    let cycles = c.end.saturating_sub(c.start);
    (c.peak_macs_per_cycle > 0 && cycles > 0)
        .then(|| c.macs as f64 / (c.peak_macs_per_cycle as f64 * cycles as f64))
}

fn json_string(s: &str) -> String {
    let mut o = String::from("\"");
    for ch in s.chars() {
        match ch {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// The run as a Chrome trace-event JSON timeline (Perfetto, `chrome://tracing`): one
/// track per engine, one slice per operation from its start (the model's; the RTL's
/// enable) to its done interrupt. Times are in microseconds at a 1 GHz clock (1 cycle =
/// 1 ns), counted from the first operation's enable.
pub fn chrome_trace(t: &DeviceTimings) -> String {
    let engines: Vec<&str> = {
        let mut v: Vec<&str> = Vec::new();
        for o in &t.ops {
            if !v.contains(&o.engine) {
                v.push(o.engine);
            }
        }
        // The pipeline's order: convolution, then the engines after it.
        const ORDER: [&str; 6] = ["conv", "sdp", "pdp", "cdp", "rubik", "bdma"];
        v.sort_by_key(|e| ORDER.iter().position(|o| o == e).unwrap_or(ORDER.len()));
        v
    };
    let origin = t.ops.iter().map(|o| o.enabled).min().unwrap_or(0);
    let us = |c: u64| c.saturating_sub(origin) as f64 / 1000.0;
    let mut events: Vec<String> = Vec::new();
    let source = if t.modelled {
        "nvdla-vp cycle model"
    } else {
        "hardware"
    };
    events.push(format!(
        "{{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"args\":{{\"name\":{}}}}}",
        json_string(&format!("NVDLA ({source})"))
    ));
    for (i, e) in engines.iter().enumerate() {
        events.push(format!(
            "{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":{},\"args\":{{\"name\":{}}}}}",
            i + 1,
            json_string(e)
        ));
        events.push(format!(
            "{{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":1,\"tid\":{},\"args\":{{\"sort_index\":{i}}}}}",
            i + 1
        ));
    }
    for (i, o) in t.ops.iter().enumerate() {
        let Some(done) = o.done else { continue };
        let start = o.cost.as_ref().map_or(o.enabled, |c| c.start);
        let tid = engines.iter().position(|e| *e == o.engine).unwrap_or(0) + 1;
        let mut args = format!(
            "\"operation\":{i},\"group\":{},\"enabled\":{},\"done\":{done},\"cycles\":{}",
            o.group,
            o.enabled,
            done.saturating_sub(o.enabled)
        );
        if let Some(c) = &o.cost {
            let _ = write!(
                args,
                ",\"macs\":{},\"compute_cycles\":{},\"memory_cycles\":{},\"dram_bytes\":{},\"cvsram_bytes\":{},\"pole\":{},\"shape\":{}",
                c.macs,
                c.compute_cycles,
                c.memory_cycles,
                c.dram_bytes,
                c.sram_bytes,
                json_string(c.pole),
                json_string(&c.shape)
            );
        }
        events.push(format!(
            "{{\"name\":{},\"cat\":{},\"ph\":\"X\",\"pid\":1,\"tid\":{tid},\"ts\":{:.3},\"dur\":{:.3},\"args\":{{{args}}}}}",
            json_string(&format!("{} #{i}", o.engine)),
            json_string(o.engine),
            us(start),
            us(done) - us(start)
        ));
    }
    format!(
        "{{\"displayTimeUnit\":\"ns\",\"otherData\":{{\"total_cycles\":{},\"bytes_read\":{},\"bytes_written\":{},\"modelled\":{}}},\"traceEvents\":[\n{}\n]}}\n",
        t.total_cycles,
        t.bytes_read,
        t.bytes_written,
        t.modelled,
        events.join(",\n")
    )
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
                    cost: None,
                },
                OpTiming {
                    engine: "pdp",
                    group: 1,
                    enabled: 1200,
                    done: None,
                    cost: None,
                },
            ],
            total_cycles: 1500,
            bytes_read: 64,
            bytes_written: 32,
            modelled: false,
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

    #[test]
    fn modelled_table_and_timeline_carry_each_operations_cost() {
        let cost = OpCost {
            start: 100,
            end: 1100,
            shape: "3x3/1 8>8 16x16".into(),
            macs: 64 * 1000,
            peak_macs_per_cycle: 64,
            compute_cycles: 1000,
            memory_cycles: 300,
            dram_bytes: 2048,
            sram_bytes: 0,
            pole: "MAC",
        };
        let t = DeviceTimings {
            ops: vec![
                OpTiming {
                    engine: "sdp",
                    group: 0,
                    enabled: 90,
                    done: Some(1130),
                    cost: None,
                },
                OpTiming {
                    engine: "conv",
                    group: 0,
                    enabled: 100,
                    done: Some(1120),
                    cost: Some(cost),
                },
            ],
            total_cycles: 1200,
            bytes_read: 2048,
            bytes_written: 0,
            modelled: true,
        };
        let table = timings_table(&t);
        assert!(table.starts_with("modelled cycles"), "{table}");
        // 64 000 MACs in 1 000 cycles of a 64-MAC array.
        assert!(table.contains("100.0"), "{table}");
        assert!(table.contains("3x3/1 8>8 16x16"), "{table}");
        let json = chrome_trace(&t);
        assert_eq!(json.matches("\"ph\":\"X\"").count(), 2, "{json}");
        assert!(json.contains("\"pole\":\"MAC\""), "{json}");
        // Tracks in the pipeline's order: conv first.
        let conv = json.find("\"name\":\"conv\"").unwrap();
        let sdp = json.find("\"name\":\"sdp\"").unwrap();
        assert!(conv < sdp, "{json}");
        assert!(json.contains("\"total_cycles\":1200"), "{json}");
    }
}
