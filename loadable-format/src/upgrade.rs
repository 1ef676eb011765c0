//! Rewriting 2018-layout DLA1 surface lists into the current layout.
//!
//! Loadables built before interface 0.12 (all of NVIDIA's regression
//! flatbuffers) use data cubes without the `offset` field (see
//! [`dla::Layout`]). Rather than teaching the firmware two layouts, the
//! runtime upgrades such surface lists in place before the task runs; the
//! slot stride ([`dla::SURFACE_CONTAINER_SIZE`]) is the same in both layouts,
//! so only the slot contents change. The firmware then reads one layout.

use crate::codec::DecodeError;
use crate::dla::{self, CommonOpDesc, Layout, OpType, SurfaceDesc};

/// Why a surface list could not be upgraded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpgradeError {
    /// A dependency-graph entry or surface slot is missing or short.
    Decode(DecodeError),
    /// Operation `index` has an unknown `op_type`.
    BadOpType {
        /// The operation.
        index: usize,
        /// Its raw type.
        value: u8,
    },
}

impl core::fmt::Display for UpgradeError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            UpgradeError::Decode(e) => write!(f, "{e}"),
            UpgradeError::BadOpType { index, value } => {
                write!(f, "operation {index} has unknown op_type {value}")
            }
        }
    }
}

impl From<DecodeError> for UpgradeError {
    fn from(e: DecodeError) -> Self {
        UpgradeError::Decode(e)
    }
}

/// Rewrite the first `num_operations` slots of a legacy surface list into
/// the current layout, taking each slot's processor from the dependency
/// graph. BDMA surfaces hold no data cubes and are left as they are.
/// Nothing is written unless every slot decodes.
pub fn surfaces_to_current(
    dependency_graph: &[u8],
    surfaces: &mut [u8],
    num_operations: usize,
) -> Result<(), UpgradeError> {
    // Validate everything first, so a bad list is left untouched.
    for pass in 0..2 {
        for index in 0..num_operations {
            let dep: CommonOpDesc = dla::decode_at(dependency_graph, index)?;
            let op_type = OpType::try_from(dep.op_type).map_err(|_| UpgradeError::BadOpType {
                index,
                value: dep.op_type,
            })?;
            if op_type == OpType::Bdma {
                continue;
            }
            let current =
                SurfaceDesc::decode_slot_layout(Layout::Legacy, op_type, surfaces, index)?;
            if pass == 1 {
                // decode_slot_layout checked that this whole slot exists.
                let start = index * dla::SURFACE_CONTAINER_SIZE;
                let out = &mut surfaces[start..start + dla::SURFACE_CONTAINER_SIZE];
                out.fill(0);
                // Cannot fail: a current surface is never larger than its slot.
                let _ = current.encode_into(out);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::Descriptor;

    #[test]
    fn legacy_pdp_surface_gains_offsets() {
        let none = dla::Consumer {
            index: -1,
            event: 0,
            res: 0,
        };
        let dep = CommonOpDesc {
            index: 0,
            roi_index: 0,
            op_type: OpType::Pdp.raw(),
            dependency_count: 0,
            reserved0: [0; 3],
            consumers: [none; dla::OP_NUM],
            fused_parent: none,
        };
        let mut deps = [0u8; CommonOpDesc::SIZE];
        dep.encode_into(&mut deps).unwrap();
        let legacy_cube = dla::legacy::DataCube {
            mem_type: 0,
            address: 4,
            size: 2048,
            width: 8,
            height: 8,
            channel: 32,
            line_stride: 256,
            surf_stride: 2048,
            ..Default::default()
        };
        let legacy = dla::legacy::PdpSurfaceDesc {
            src_data: legacy_cube,
            dst_data: dla::legacy::DataCube {
                address: 5,
                ..legacy_cube
            },
        };
        let mut surfaces = [0u8; dla::SURFACE_CONTAINER_SIZE];
        legacy.encode_into(&mut surfaces).unwrap();
        surfaces_to_current(&deps, &mut surfaces, 1).unwrap();
        let SurfaceDesc::Pdp(p) = SurfaceDesc::decode_slot(OpType::Pdp, &surfaces, 0).unwrap()
        else {
            panic!("not PDP")
        };
        assert_eq!(p.src_data.address, 4);
        assert_eq!(p.src_data.offset, 0);
        assert_eq!(p.src_data.surf_stride, 2048);
        assert_eq!(p.dst_data.address, 5);
        assert_eq!(p.dst_data.channel, 32);
    }

    #[test]
    fn short_lists_are_rejected_untouched() {
        let mut deps = [0u8; 36];
        deps[3] = OpType::Pdp.raw();
        let mut surfaces = [7u8; 10];
        assert!(surfaces_to_current(&deps, &mut surfaces, 1).is_err());
        assert_eq!(surfaces, [7u8; 10]);
    }
}
