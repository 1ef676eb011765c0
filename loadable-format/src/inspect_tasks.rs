//! Per-task descriptor summaries for `inspect`: the DLA1 or EMU1 network
//! descriptor at address-list entry 0, and the operations and surfaces it
//! names, decoded from the blobs that fill those buffers.
//!
//! Nothing here trusts the descriptors: a bad index or a short blob becomes
//! an `"error"` entry in the summary, never a panic.

use crate::codec::Descriptor;
use crate::dla::{self, CommonOpDesc, DataCube, Layout, OpDesc, OpType, SurfaceDesc};
use crate::emu;
use crate::loadable::{Blob, Loadable, TaskListEntry};
use crate::schema::Interface;
use serde_json::{json, Value};

/// The blob filling the buffer at index `idx` of the task's address list.
fn blob_at<'a>(l: &Loadable<'a>, t: &TaskListEntry<'a>, idx: i32) -> Result<Blob<'a>, String> {
    let addr = usize::try_from(idx)
        .ok()
        .and_then(|i| t.address_list().get(i))
        .ok_or_else(|| format!("address-list index {idx} is outside the task's address list"))?;
    l.blob_at_address(addr)
        .ok_or_else(|| format!("address {addr} (index {idx}) is not filled from a blob"))
}

fn err(e: impl core::fmt::Display) -> Value {
    json!({ "error": e.to_string() })
}

/// Describe the descriptors a task's address list points at.
pub fn describe_task(l: &Loadable<'_>, t: &TaskListEntry<'_>) -> Value {
    let body = match t.interface() {
        Interface::DLA1 => describe_dla(l, t),
        Interface::EMU1 => describe_emu(l, t),
        Interface::NONE => Ok(json!({})),
    };
    let mut v = body.unwrap_or_else(err);
    v["task"] = json!(t.id());
    v["interface"] = json!(t.interface().name());
    v
}

fn cube(c: &DataCube) -> Value {
    json!(format!(
        "{} addr[{}]+{} size={} {}x{}x{} line={} surf={} plane={}",
        match c.mem_type {
            0 => "MC",
            1 => "CV",
            2 => "HW",
            _ => "?",
        },
        c.address,
        c.offset,
        c.size,
        c.width,
        c.height,
        c.channel,
        c.line_stride,
        c.surf_stride,
        c.plane_stride
    ))
}

fn precision(p: u8) -> String {
    dla::Precision::try_from(p)
        .map(|p| format!("{p:?}"))
        .unwrap_or_else(|_| format!("?{p}"))
}

fn describe_op(op: &OpDesc) -> Value {
    match op {
        OpDesc::Bdma(b) => json!({"num_transfers": b.num_transfers}),
        OpDesc::Conv(c) => json!({
            "conv_mode": c.conv_mode,
            "precision": format!("{}->{}", precision(c.in_precision), precision(c.out_precision)),
            "input_csc": format!("{}x{}x{}", c.input_width_csc, c.input_height_csc, c.input_channel_csc),
            "kernel": format!("{}x{}x{}", c.kernel_width_csc, c.kernel_height_csc, c.kernel_channel_csc),
            "stride": format!("{}x{}", c.conv_stride_x, c.conv_stride_y),
            "pad": format!("l{} r{} t{} b{}", c.pad_x_left, c.pad_x_right, c.pad_y_top, c.pad_y_bottom),
            "dilation": format!("{}x{}", c.dilation_x, c.dilation_y),
            "batch": c.batch,
            "data_format": c.data_format,
            "weight_format": c.weight_format,
            "banks": format!("data {} weight {}", c.data_bank, c.weight_bank),
        }),
        OpDesc::Sdp(s) => {
            let unit = |o: &dla::SdpOp| {
                if o.enable == 0 {
                    "off".to_string()
                } else {
                    format!(
                        "type={} alu={} mode={} act={} alu_operand={} mul_operand={} shift={}",
                        o.op_type,
                        o.alu_type,
                        o.mode,
                        o.act,
                        o.alu_operand,
                        o.mul_operand,
                        o.shift_value
                    )
                }
            };
            json!({
                "precision": format!("{}->{}", precision(s.src_precision), precision(s.dst_precision)),
                "lut_index": s.lut_index,
                "conv_mode": s.conv_mode,
                "batch_num": s.batch_num,
                "x1": unit(&s.x1_op),
                "x2": unit(&s.x2_op),
                "y": unit(&s.y_op),
            })
        }
        OpDesc::Pdp(p) => json!({
            "precision": precision(p.precision),
            "pool_mode": p.pool_mode,
            "pool": format!("{}x{}", p.pool_width as u32 + 1, p.pool_height as u32 + 1),
            "stride": format!("{}x{}", p.stride_x, p.stride_y),
            "pad": format!("l{} r{} t{} b{}", p.pad_left, p.pad_right, p.pad_top, p.pad_bottom),
            "split_num": p.split_num,
        }),
        OpDesc::Cdp(c) => json!({
            "precision": format!("{}->{}", precision(c.in_precision), precision(c.out_precision)),
            "lut_index": c.lut_index,
            "local_size": c.local_size,
            "bypass_sqsum": c.bypass_sqsum,
            "bypass_out_mul": c.bypass_out_mul,
        }),
        OpDesc::Rubik(r) => json!({
            "mode": r.mode,
            "precision": precision(r.precision),
            "stride": format!("{}x{}", r.stride_x, r.stride_y),
        }),
    }
}

fn describe_surface(s: &SurfaceDesc) -> Value {
    match s {
        SurfaceDesc::Bdma(b) => {
            let transfers: Vec<Value> = b
                .active_transfers()
                .iter()
                .map(|t| {
                    json!(format!(
                        "addr[{}] -> addr[{}] line={}x{} src_line={} dst_line={} surf={}x src_surf={} dst_surf={}",
                        t.source_address, t.destination_address, t.line_size, t.line_repeat,
                        t.source_line, t.destination_line, t.surface_repeat, t.source_surface,
                        t.destination_surface
                    ))
                })
                .collect();
            json!({"source_type": b.source_type, "destination_type": b.destination_type,
                   "num_transfers": b.num_transfers, "transfers": transfers})
        }
        SurfaceDesc::Conv(c) => json!({
            "src": cube(&c.src_data), "weight": cube(&c.weight_data),
            "wmb": cube(&c.wmb_data), "wgs": cube(&c.wgs_data), "dst": cube(&c.dst_data),
        }),
        SurfaceDesc::Sdp(s) => json!({
            "src": cube(&s.src_data), "x1": cube(&s.x1_data), "x2": cube(&s.x2_data),
            "y": cube(&s.y_data), "dst": cube(&s.dst_data),
        }),
        SurfaceDesc::Pdp(p) => json!({"src": cube(&p.src_data), "dst": cube(&p.dst_data)}),
        SurfaceDesc::Cdp(c) => json!({"src": cube(&c.src_data), "dst": cube(&c.dst_data)}),
        SurfaceDesc::Rubik(r) => json!({"src": cube(&r.src_data), "dst": cube(&r.dst_data)}),
    }
}

fn describe_dla(l: &Loadable<'_>, t: &TaskListEntry<'_>) -> Result<Value, String> {
    let net_blob = blob_at(l, t, 0)?;
    let net = dla::NetworkDesc::decode_from(net_blob.data()).map_err(|e| e.to_string())?;
    let v = net_blob.version();
    // The layout the descriptors' content shows (see `cubes::detect_layout`), which is not
    // always the one the blob version names (ONNC writes 1.x with legacy data cubes).
    let by_version = Layout::for_version(v.major, v.minor);
    let layout = crate::cubes::dla_task(l, t).map_or(by_version, |d| d.layout);
    let layout_text = if layout == by_version {
        format!("{layout:?}")
    } else {
        format!("{layout:?} (detected from the descriptors; version {v} names {by_version:?})")
    };
    let mut out = json!({
        "network": {
            "blob": net_blob.name(),
            "interface_version": v.to_string(),
            "layout": layout_text,
            "operation_desc_index": net.operation_desc_index,
            "surface_desc_index": net.surface_desc_index,
            "dependency_graph_index": net.dependency_graph_index,
            "lut_data_index": net.lut_data_index,
            "roi_array_index": net.roi_array_index,
            "stat_list_index": net.stat_list_index,
            "op_head": OpType::ALL.iter().map(|o| format!("{o:?}={}", net.head(*o))).collect::<Vec<_>>(),
            "num_operations": net.num_operations,
            "num_rois": net.num_rois,
            "num_luts": net.num_luts,
            "num_addresses": net.num_addresses,
        }
    });
    let lists = (
        blob_at(l, t, net.dependency_graph_index.into()),
        blob_at(l, t, net.operation_desc_index.into()),
        blob_at(l, t, net.surface_desc_index.into()),
    );
    let (deps, ops, surfs) = match lists {
        (Ok(d), Ok(o), Ok(s)) => (d.data(), o.data(), s.data()),
        (d, o, s) => {
            let e = [d.err(), o.err(), s.err()].into_iter().flatten().next();
            out["operations"] = err(e.unwrap_or_default());
            return Ok(out);
        }
    };
    let mut operations = Vec::new();
    for i in 0..net.num_operations as usize {
        let entry = dla::decode_at::<CommonOpDesc>(deps, i)
            .map_err(|e| e.to_string())
            .and_then(|c| c.op_type().map(|ty| (c, ty)).map_err(|e| e.to_string()))
            .and_then(|(c, ty)| {
                let op = OpDesc::decode_slot(ty, ops, i).map_err(|e| e.to_string())?;
                let surf = SurfaceDesc::decode_slot_layout(layout, ty, surfs, i)
                    .map_err(|e| e.to_string())?;
                let consumers: Vec<Value> = c
                    .consumers
                    .iter()
                    .zip(OpType::ALL)
                    .filter(|(k, _)| k.is_present())
                    .map(|(k, ty)| json!(format!("{ty:?}#{} on event {}", k.index, k.event)))
                    .collect();
                Ok(json!({
                    "index": i,
                    "type": format!("{ty:?}"),
                    "roi": c.roi_index,
                    "dependency_count": c.dependency_count,
                    "consumers": consumers,
                    "fused_parent": if c.fused_parent.is_present() {
                        json!(format!("#{} on event {}", c.fused_parent.index, c.fused_parent.event))
                    } else {
                        Value::Null
                    },
                    "op": describe_op(&op),
                    "surface": describe_surface(&surf),
                }))
            })
            .unwrap_or_else(|e| json!({"index": i, "error": e}));
        operations.push(entry);
    }
    out["operations"] = json!(operations);
    Ok(out)
}

fn emu_buffer(b: &emu::BufferDesc) -> Value {
    json!(format!(
        "addr[{}]+{} size={} format={} {}x{}x{} line={} surf={}",
        b.address_index,
        b.address_index_offset,
        b.size,
        b.format,
        b.width,
        b.height,
        b.channel,
        b.line_stride,
        b.surf_stride
    ))
}

fn describe_emu(l: &Loadable<'_>, t: &TaskListEntry<'_>) -> Result<Value, String> {
    let net_blob = blob_at(l, t, 0)?;
    let net = emu::NetworkDesc::decode_from(net_blob.data()).map_err(|e| e.to_string())?;
    let ops = blob_at(l, t, net.operation_desc_index.into())?.data();
    let bufs = blob_at(l, t, net.operation_buffer_desc_index.into())?.data();
    let layout = emu::Layout::from_op_list_len(ops.len(), net.num_operations)
        .ok_or_else(|| format!("operation list of {} bytes fits no EMU1 layout", ops.len()))?;
    let mut operations = Vec::new();
    for i in 0..net.num_operations as usize {
        let entry = emu::OpDesc::decode_slot_layout(layout, ops, i)
            .map_err(|e| e.to_string())
            .and_then(|op| {
                let b = emu::OpBufferDescs::decode_slot_layout(layout, op.op_type(), bufs, i)
                    .map_err(|e| e.to_string())?;
                let (src, dst) = (*b.src_data(), *b.dst_data());
                let params = match op {
                    emu::OpDesc::Power(p) => json!(format!(
                        "power={} scale={} shift={}",
                        p.power, p.scale, p.shift
                    )),
                    emu::OpDesc::Softmax(s) => json!(format!("axis={}", s.axis)),
                    emu::OpDesc::Log(_) => json!("natural log (ONNC)"),
                };
                Ok(json!({"index": i, "type": format!("{:?}", op.op_type()),
                          "params": params, "src": emu_buffer(&src), "dst": emu_buffer(&dst)}))
            })
            .unwrap_or_else(|e| json!({"index": i, "error": e}));
        operations.push(entry);
    }
    Ok(json!({
        "network": {
            "blob": net_blob.name(),
            "layout": format!("{layout:?}"),
            "operation_desc_index": net.operation_desc_index,
            "operation_buffer_desc_index": net.operation_buffer_desc_index,
            "num_operations": net.num_operations,
        },
        "operations": operations,
    }))
}
