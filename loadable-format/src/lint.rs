//! Warnings about loadables that are valid but compute something suspicious.
//!
//! Two kinds:
//! - measured in public third-party loadables made by NVIDIA's compiler: an int8 SDP stage
//!   whose per-channel ALU operands (the biases) are all zero while the stage shifts them
//!   left by 16 or more: the compiler quantized every bias to zero (an underflow), so the
//!   network ignores its biases;
//! - activations the hardware cannot apply as asked (see [`activation_warnings`]).

use crate::codec::Descriptor;
use crate::dla::{self, Activation, OpType, Precision, SdpOp, SdpOpMode, SdpOpType};
use crate::loadable::Loadable;
use crate::schema::Interface;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

/// The bytes the loadable sets at `offset..offset + len` of the memory behind address-list
/// entry `address_id` (from the blobs filling it), if all present.
fn set_bytes<'a>(l: &Loadable<'a>, address_id: u16, offset: u64, len: usize) -> Option<&'a [u8]> {
    let (m, base, _) = l.resolve_address(address_id)?;
    let at = base.checked_add(offset)?;
    (0..m.contents_len())
        .filter_map(|i| m.content(i))
        .find_map(|(name, start)| {
            let b = l.blob(name)?;
            let rel = usize::try_from(at.checked_sub(start)?).ok()?;
            b.data().get(rel..rel.checked_add(len)?)
        })
}

/// Every warning of this module, in task and operation order.
pub fn warnings(l: &Loadable<'_>) -> Vec<String> {
    let mut out = zero_bias_warnings(l);
    out.extend(activation_warnings(l));
    out
}

/// One DLA operation as the lints see it: its task, index, op type and decoded
/// descriptors.
struct DlaOp<'a> {
    task: usize,
    index: usize,
    op: dla::OpDesc,
    surface: dla::SurfaceDesc,
    /// The task's address list (surface `address` fields index it).
    list: &'a [u16],
}

/// Calls `f` for each DLA operation whose descriptors decode; others are skipped (the
/// validator reports them).
fn for_each_dla_op(l: &Loadable<'_>, mut f: impl FnMut(&DlaOp<'_>)) {
    for (ti, task) in l.tasks().iter().enumerate() {
        if task.interface() != Interface::DLA1 {
            continue;
        }
        let list: Vec<u16> = task.address_list().iter().collect();
        let Some(net) = list
            .first()
            .and_then(|&a| l.blob_at_address(a))
            .and_then(|b| dla::NetworkDesc::decode_from(b.data()).ok())
        else {
            continue;
        };
        let blob = |i: i16| {
            usize::try_from(i)
                .ok()
                .and_then(|i| list.get(i))
                .and_then(|&a| l.blob_at_address(a))
                .map(|b| b.data())
        };
        let (Some(deps), Some(ops), Some(surfs)) = (
            blob(net.dependency_graph_index),
            blob(net.operation_desc_index),
            blob(net.surface_desc_index),
        ) else {
            continue;
        };
        let layout = crate::cubes::dla_task(l, &task).map_or(dla::Layout::Current, |t| t.layout);
        for i in 0..usize::from(net.num_operations) {
            let Ok(dep) = dla::decode_at::<dla::CommonOpDesc>(deps, i) else {
                continue;
            };
            let Ok(ty) = OpType::from_raw(u32::from(dep.op_type)) else {
                continue;
            };
            let (Ok(op), Ok(surface)) = (
                dla::OpDesc::decode_slot(ty, ops, i),
                dla::SurfaceDesc::decode_slot_layout(layout, ty, surfs, i),
            ) else {
                continue;
            };
            f(&DlaOp {
                task: ti,
                index: i,
                op,
                surface,
                list: &list,
            });
        }
    }
}

/// One warning per int8 SDP stage whose per-channel biases are all zero with an ALU shift
/// of 16 or more.
pub fn zero_bias_warnings(l: &Loadable<'_>) -> Vec<String> {
    let mut out = Vec::new();
    for_each_dla_op(l, |o| {
        let (dla::OpDesc::Sdp(op), dla::SurfaceDesc::Sdp(surf)) = (&o.op, &o.surface) else {
            return;
        };
        if op.src_precision != Precision::Int8.raw() {
            return;
        }
        let stages = [
            ("x1", &op.x1_op, &surf.x1_data),
            ("x2", &op.x2_op, &surf.x2_data),
        ];
        for (name, st, cube) in stages {
            if let Some(w) = zero_bias(l, o.list, name, st, cube) {
                out.push(format!("task {} operation {} (SDP): {w}", o.task, o.index));
            }
        }
    });
    out
}

/// Activations the hardware cannot apply as asked, which the firmware (NVIDIA's and ours)
/// programs without complaint:
/// - ReLU on the SDP Y stage, and a LUT on X1/X2: the X sub-units have a ReLU but no LUT,
///   the Y sub-unit a LUT but no ReLU (NVDLA hwarch, "SDP"), so the activation is dropped;
/// - a LUT activation on SDP, or any CDP, with `lut_index` -1: no table is loaded, so the
///   LUT left behind by an earlier operation (or none) is used.
pub fn activation_warnings(l: &Loadable<'_>) -> Vec<String> {
    let mut out = Vec::new();
    for_each_dla_op(l, |o| {
        let at =
            |w: String, unit: &str| format!("task {} operation {} ({unit}): {w}", o.task, o.index);
        match &o.op {
            dla::OpDesc::Sdp(op) => {
                let stages = [("x1", &op.x1_op), ("x2", &op.x2_op), ("y", &op.y_op)];
                for (name, st) in stages {
                    if st.enable == 0 {
                        continue;
                    }
                    let (relu, lut) = (
                        st.act == Activation::Relu.raw(),
                        st.act == Activation::Lut.raw(),
                    );
                    if name == "y" && relu {
                        out.push(at(
                            "the y stage asks for ReLU, which the Y sub-unit does not have; \
                             it is ignored"
                                .into(),
                            "SDP",
                        ));
                    } else if name != "y" && lut {
                        out.push(at(
                            format!(
                                "the {name} stage asks for a LUT, which only the Y sub-unit \
                                 has; it is ignored"
                            ),
                            "SDP",
                        ));
                    } else if lut && op.lut_index < 0 {
                        out.push(at(
                            "the y stage's LUT activation has no table (lut_index -1): \
                             whatever table an earlier operation loaded is used"
                                .into(),
                            "SDP",
                        ));
                    }
                }
            }
            dla::OpDesc::Cdp(op) if op.lut_index < 0 => out.push(at(
                "no LUT (lut_index -1): whatever table an earlier operation loaded is used".into(),
                "CDP",
            )),
            _ => {}
        }
    });
    out
}

fn zero_bias(
    l: &Loadable<'_>,
    list: &[u16],
    name: &str,
    st: &SdpOp,
    cube: &dla::DataCube,
) -> Option<String> {
    let uses_alu = st.op_type == SdpOpType::Add.raw() || st.op_type == SdpOpType::Both.raw();
    if st.enable == 0 || !uses_alu || st.mode != SdpOpMode::PerKernel.raw() || st.shift_value < 16 {
        return None;
    }
    let bpc = if st.precision == Precision::Int8.raw() {
        1
    } else {
        2
    };
    let comps = if st.op_type == SdpOpType::Both.raw() {
        2
    } else {
        1
    };
    let channels = usize::from(cube.channel);
    let address = *list.get(usize::try_from(cube.address).ok()?)?;
    let data = set_bytes(l, address, u64::from(cube.offset), channels * bpc * comps)?;
    let all_zero = data
        .chunks(bpc * comps)
        .all(|e| e[..bpc].iter().all(|&b| b == 0));
    all_zero.then(|| {
        format!(
            "int8 {name} biases of all {channels} channels are zero with a shift of {}: \
             the biases underflowed when quantized",
            st.shift_value
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::*;
    use crate::schema::*;
    use alloc::vec;

    /// A one-SDP int8 task whose X1 adds 16 per-channel biases `bias` shifted by `shift`.
    fn sdp_task(bias: [u8; 32], shift: u8) -> Vec<u8> {
        sdp_task_with(bias, shift, |_| {})
    }

    /// [`sdp_task`] with `edit` applied to the SDP operation.
    fn sdp_task_with(bias: [u8; 32], shift: u8, edit: impl FnOnce(&mut dla::SdpOpDesc)) -> Vec<u8> {
        let mut s = LoadableSpec::new();
        let version = Version {
            major: 0,
            minor: 12,
            sub_minor: 3,
        };
        let none = dla::Consumer {
            index: -1,
            event: 1,
            res: 0,
        };
        let net = dla::NetworkDesc {
            dependency_graph_index: 1,
            operation_desc_index: 2,
            surface_desc_index: 3,
            lut_data_index: -1,
            roi_array_index: -1,
            surface_index: -1,
            stat_list_index: -1,
            op_head: [-1, -1, 0, -1, -1, -1],
            num_rois: 1,
            num_operations: 1,
            num_addresses: 5,
            ..Default::default()
        };
        let dep = dla::CommonOpDesc {
            op_type: OpType::Sdp.raw(),
            consumers: [none; dla::OP_NUM],
            fused_parent: none,
            ..Default::default()
        };
        let mut op = dla::SdpOpDesc {
            src_precision: Precision::Int8.raw(),
            dst_precision: Precision::Int8.raw(),
            lut_index: -1,
            ..Default::default()
        };
        op.x1_op = SdpOp {
            enable: 1,
            op_type: SdpOpType::Add.raw(),
            mode: SdpOpMode::PerKernel.raw(),
            shift_value: shift,
            precision: Precision::Int16.raw(),
            ..Default::default()
        };
        edit(&mut op);
        let mut surf = dla::SdpSurfaceDesc::default();
        surf.x1_data.address = 4;
        surf.x1_data.channel = 16;
        surf.x1_data.size = 32;
        let mut ops = vec![0u8; dla::OPERATION_CONTAINER_SIZE];
        let mut surfs = vec![0u8; dla::SURFACE_CONTAINER_SIZE];
        dla::OpDesc::Sdp(op).encode_into(&mut ops).unwrap();
        dla::SurfaceDesc::Sdp(surf).encode_into(&mut surfs).unwrap();
        let blobs = [
            ("net", SubInterface::ADDR0, net.to_vec()),
            ("deps", SubInterface::DEPS, dep.to_vec()),
            ("ops", SubInterface::OPS, ops),
            ("surfs", SubInterface::SURFS, surfs),
            ("bias", SubInterface::NONE, bias.to_vec()),
        ];
        let mut addresses = Vec::new();
        for (name, sub, data) in blobs {
            let size = data.len() as u64;
            s.add_blob(BlobSpec {
                name: name.into(),
                interface: Interface::DLA1.raw(),
                sub_interface: sub.raw(),
                version,
                data,
            });
            let m = s.add_memory(MemorySpec {
                flags: (MemoryFlags::ALLOC | MemoryFlags::SET).bits(),
                size,
                alignment: 4096,
                contents: vec![(name.into(), 0)],
                ..Default::default()
            });
            addresses.push(s.add_address(AddressSpec {
                mem_id: m,
                offset: 0,
                size,
            }));
        }
        let t = s.add_task(TaskSpec {
            interface: Interface::DLA1.raw(),
            instance: -1,
            address_list: addresses,
            ..Default::default()
        });
        s.submits.push(vec![t]);
        s.build()
    }

    #[test]
    fn zero_biases_with_a_large_shift_are_reported() {
        let bytes = sdp_task([0; 32], 16);
        let l = Loadable::parse(&bytes).unwrap();
        let w = zero_bias_warnings(&l);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("x1 biases of all 16 channels are zero with a shift of 16"));
        // A real bias, or a small shift, is not reported.
        let mut some = [0u8; 32];
        some[6] = 3;
        assert!(zero_bias_warnings(&Loadable::parse(&sdp_task(some, 16)).unwrap()).is_empty());
        assert!(zero_bias_warnings(&Loadable::parse(&sdp_task([0; 32], 4)).unwrap()).is_empty());
    }

    #[test]
    fn activations_the_hardware_cannot_apply_are_reported() {
        let warn = |edit: fn(&mut dla::SdpOpDesc)| {
            let mut some = [0u8; 32];
            some[0] = 1;
            warnings(&Loadable::parse(&sdp_task_with(some, 0, edit)).unwrap())
        };
        assert!(warn(|_| {}).is_empty());
        let relu_on_y = warn(|op| {
            op.y_op.enable = 1;
            op.y_op.act = Activation::Relu.raw();
        });
        assert_eq!(relu_on_y.len(), 1, "{relu_on_y:?}");
        assert!(relu_on_y[0].starts_with("task 0 operation 0 (SDP): the y stage asks for ReLU"));
        let lut_on_x2 = warn(|op| {
            op.x2_op.enable = 1;
            op.x2_op.act = Activation::Lut.raw();
        });
        assert_eq!(lut_on_x2.len(), 1, "{lut_on_x2:?}");
        assert!(lut_on_x2[0].contains("the x2 stage asks for a LUT"));
        let lut_without_table = warn(|op| {
            op.y_op.enable = 1;
            op.y_op.act = Activation::Lut.raw();
        });
        assert_eq!(lut_without_table.len(), 1, "{lut_without_table:?}");
        assert!(lut_without_table[0].contains("has no table (lut_index -1)"));
        // The same with a table, and ReLU where it exists, are fine; a disabled stage is
        // not looked at.
        assert!(warn(|op| {
            op.y_op.enable = 1;
            op.y_op.act = Activation::Lut.raw();
            op.lut_index = 0;
        })
        .is_empty());
        assert!(warn(|op| op.x1_op.act = Activation::Relu.raw()).is_empty());
        assert!(warn(|op| op.y_op.act = Activation::Relu.raw()).is_empty());
    }
}
