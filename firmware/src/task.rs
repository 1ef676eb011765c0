//! The running task's descriptors, read from device memory on demand.
//!
//! A DLA1 task reaches the firmware as an address list. Entry 0 is the network descriptor
//! ([`NetworkDesc`]); it names, by address-list index, the blobs that describe the network:
//! the dependency graph (one [`CommonOpDesc`] per operation and ROI), the operation list
//! and the surface list (one container slot per operation and ROI, whose variant is chosen
//! by the operation's processor), the LUT list, and for dynamic ROIs the ROI array and the
//! input surface. Nothing here caches descriptors: each is read and decoded onto the stack
//! when needed, so the firmware's static RAM does not grow with the network. Every index is
//! checked before use and every read is bounds-checked against the buffer behind its
//! address-list entry (see [`Hw::read_indexed`]).

use nvdla_loadable::dla::{
    self, CommonOpDesc, LutParam, NetworkDesc, OpDesc, OpType, RoiDesc, SurfaceDesc,
};
use nvdla_loadable::Descriptor;

use crate::config::Feature;
use crate::error::{Error, ListKind, OpRef};
use crate::hw::Hw;

/// Largest number of ROIs the firmware accepts (`roi_index` is an `i8` in the descriptors).
pub const MAX_ROIS: u16 = 127;

/// Dynamic-ROI inputs: the first layer's input address is computed from a ROI array at run
/// time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DynamicRoi {
    /// Address-list index of the ROI array.
    pub roi_array: u16,
    /// Address-list index of the full input surface.
    pub surface: u16,
    /// Operation whose input is the ROI.
    pub input_layer: i16,
}

/// What the firmware keeps of the network descriptor while a task runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TaskInfo {
    /// Address-list index of the operation list.
    pub op_list: u16,
    /// Address-list index of the surface list.
    pub surface_list: u16,
    /// Address-list index of the dependency graph.
    pub dep_graph: u16,
    /// Address-list index of the LUT list, when the network has LUTs.
    pub lut_list: Option<u16>,
    /// Entries in the LUT list.
    pub num_luts: u16,
    /// Operations per ROI.
    pub num_ops: u16,
    /// ROIs.
    pub num_rois: u16,
    /// First operation of each processor, -1 for none.
    pub op_head: [i16; dla::OP_NUM],
    /// Dynamic-ROI parameters.
    pub dynamic_roi: Option<DynamicRoi>,
}

/// Refuses a processor that no compiled-in build has (BDMA and RUBIK exist only on
/// nv_full), before its descriptors are decoded, so that a firmware compiled without it
/// holds no code for it.
fn compiled_unit(ty: OpType, op: OpRef) -> Result<(), Error> {
    let any = &nvdla_hw::COMPILED_FEATURES;
    let feature = match ty {
        OpType::Bdma if !any.bdma => Feature::Bdma,
        OpType::Rubik if !any.rubik => Feature::Rubik,
        _ => return Ok(()),
    };
    Err(Error::FeatureAbsent { op, feature })
}

/// Reads `D` at `offset` of address-list entry `index`.
fn read_at<H: Hw, D: Descriptor, const N: usize>(
    hw: &mut H,
    index: u16,
    offset: u64,
) -> Result<D, Error> {
    let mut buf = [0u8; N];
    hw.read_indexed(index, offset, &mut buf)?;
    Ok(D::decode_from(&buf)?)
}

/// An address-list index field that must be present.
pub(crate) fn list_index(op: Option<OpRef>, field: &'static str, value: i16) -> Result<u16, Error> {
    u16::try_from(value).map_err(|_| Error::NoAddress { op, field, value })
}

/// Reads the network descriptor at address-list entry 0.
pub(crate) fn read_network<H: Hw>(hw: &mut H) -> Result<NetworkDesc, Error> {
    read_at::<H, NetworkDesc, { NetworkDesc::SIZE }>(hw, 0, 0)
}

impl TaskInfo {
    /// Checks the network descriptor and keeps what the scheduler needs. For dynamic ROIs
    /// this reads the ROI array length, which replaces `num_rois`.
    pub(crate) fn from_network<H: Hw>(hw: &mut H, net: &NetworkDesc) -> Result<TaskInfo, Error> {
        let op_list = list_index(None, "operation_desc_index", net.operation_desc_index)?;
        let surface_list = list_index(None, "surface_desc_index", net.surface_desc_index)?;
        let dep_graph = list_index(None, "dependency_graph_index", net.dependency_graph_index)?;
        let lut_list = if net.num_luts > 0 {
            Some(list_index(None, "lut_data_index", net.lut_data_index)?)
        } else {
            None
        };
        let mut num_rois = net.num_rois;
        let dynamic_roi = if net.is_dynamic_roi() {
            let roi_array = list_index(None, "roi_array_index", net.roi_array_index)?;
            let surface = list_index(None, "surface_index", net.surface_index)?;
            // The array length is read as one 64-bit little-endian word.
            let mut len = [0u8; 8];
            hw.read_indexed(roi_array, 0, &mut len)?;
            let len = u64::from_le_bytes(len);
            if len > u64::from(net.num_rois) {
                return Err(Error::BadIndex {
                    list: ListKind::Rois,
                    index: i32::try_from(len).unwrap_or(i32::MAX),
                    count: u32::from(net.num_rois),
                    field: "dla_roi_array_desc.array_length",
                });
            }
            num_rois = len as u16;
            Some(DynamicRoi {
                roi_array,
                surface,
                input_layer: net.input_layer,
            })
        } else {
            None
        };
        if net.num_operations > 0 && (num_rois == 0 || num_rois > MAX_ROIS) {
            return Err(Error::BadIndex {
                list: ListKind::Rois,
                index: i32::from(num_rois),
                count: u32::from(MAX_ROIS),
                field: "dla_network_desc.num_rois",
            });
        }
        for (i, &head) in net.op_head.iter().enumerate() {
            if head < -1 || head >= 0 && head as u16 >= net.num_operations {
                let _ = i;
                return Err(Error::BadIndex {
                    list: ListKind::Operations,
                    index: i32::from(head),
                    count: u32::from(net.num_operations),
                    field: "dla_network_desc.op_head",
                });
            }
        }
        Ok(TaskInfo {
            op_list,
            surface_list,
            dep_graph,
            lut_list,
            num_luts: net.num_luts,
            num_ops: net.num_operations,
            num_rois,
            op_head: net.op_head,
            dynamic_roi,
        })
    }

    /// Flat index of `op` in the per-ROI lists: `roi * num_ops + index`.
    pub(crate) fn flat(&self, op: OpRef) -> usize {
        usize::from(op.roi) * usize::from(self.num_ops) + usize::from(op.index)
    }

    /// Total operations over all ROIs.
    pub(crate) fn total_ops(&self) -> u32 {
        u32::from(self.num_ops) * u32::from(self.num_rois)
    }

    /// `index` as an operation of ROI `roi`, checked against the operation count.
    pub(crate) fn op_ref(&self, index: i16, roi: u8, field: &'static str) -> Result<OpRef, Error> {
        match u16::try_from(index) {
            Ok(i) if i < self.num_ops => Ok(OpRef { index: i, roi }),
            _ => Err(Error::BadIndex {
                list: ListKind::Operations,
                index: i32::from(index),
                count: u32::from(self.num_ops),
                field,
            }),
        }
    }

    /// The dependency-graph entry of `op`.
    pub(crate) fn read_common<H: Hw>(&self, hw: &mut H, op: OpRef) -> Result<CommonOpDesc, Error> {
        let off = (self.flat(op) * CommonOpDesc::SIZE) as u64;
        read_at::<H, CommonOpDesc, { CommonOpDesc::SIZE }>(hw, self.dep_graph, off)
    }

    /// The processor of `op`, from its dependency-graph entry.
    pub(crate) fn op_type_of(common: &CommonOpDesc, op: OpRef) -> Result<OpType, Error> {
        OpType::try_from(common.op_type).map_err(|_| Error::BadOpType {
            op,
            value: common.op_type,
        })
    }

    /// The operation descriptor of `op` (a processor-`ty` slot of the operation list).
    pub(crate) fn read_op<H: Hw>(
        &self,
        hw: &mut H,
        ty: OpType,
        op: OpRef,
    ) -> Result<OpDesc, Error> {
        compiled_unit(ty, op)?;
        let mut buf = [0u8; dla::OPERATION_CONTAINER_SIZE];
        let off = (self.flat(op) * dla::OPERATION_CONTAINER_SIZE) as u64;
        hw.read_indexed(self.op_list, off, &mut buf)?;
        // Per processor here rather than `OpDesc::decode`, so that a processor no
        // compiled-in build has leaves no decoder behind.
        Ok(match ty {
            OpType::Bdma => OpDesc::Bdma(dla::BdmaOpDesc::decode_from(&buf)?),
            OpType::Conv => OpDesc::Conv(dla::ConvOpDesc::decode_from(&buf)?),
            OpType::Sdp => OpDesc::Sdp(dla::SdpOpDesc::decode_from(&buf)?),
            OpType::Pdp => OpDesc::Pdp(dla::PdpOpDesc::decode_from(&buf)?),
            OpType::Cdp => OpDesc::Cdp(dla::CdpOpDesc::decode_from(&buf)?),
            OpType::Rubik => OpDesc::Rubik(dla::RubikOpDesc::decode_from(&buf)?),
        })
    }

    /// The surface descriptor of `op` (current layout; the runtime upgrades legacy lists).
    pub(crate) fn read_surface<H: Hw>(
        &self,
        hw: &mut H,
        ty: OpType,
        op: OpRef,
    ) -> Result<SurfaceDesc, Error> {
        compiled_unit(ty, op)?;
        let mut buf = [0u8; dla::SURFACE_CONTAINER_SIZE];
        let off = (self.flat(op) * dla::SURFACE_CONTAINER_SIZE) as u64;
        hw.read_indexed(self.surface_list, off, &mut buf)?;
        Ok(match ty {
            OpType::Bdma => SurfaceDesc::Bdma(dla::BdmaSurfaceDesc::decode_from(&buf)?),
            OpType::Conv => SurfaceDesc::Conv(dla::ConvSurfaceDesc::decode_from(&buf)?),
            OpType::Sdp => SurfaceDesc::Sdp(dla::SdpSurfaceDesc::decode_from(&buf)?),
            OpType::Pdp => SurfaceDesc::Pdp(dla::PdpSurfaceDesc::decode_from(&buf)?),
            OpType::Cdp => SurfaceDesc::Cdp(dla::CdpSurfaceDesc::decode_from(&buf)?),
            OpType::Rubik => SurfaceDesc::Rubik(dla::RubikSurfaceDesc::decode_from(&buf)?),
        })
    }

    /// LUT `index` of the LUT list.
    pub(crate) fn read_lut<H: Hw>(&self, hw: &mut H, index: i16) -> Result<LutParam, Error> {
        let bad = Error::BadIndex {
            list: ListKind::Luts,
            index: i32::from(index),
            count: u32::from(self.num_luts),
            field: "lut_index",
        };
        let i = u16::try_from(index).map_err(|_| bad)?;
        if i >= self.num_luts {
            return Err(bad);
        }
        let list = self.lut_list.ok_or(bad)?;
        let off = u64::from(i) * LutParam::SIZE as u64;
        read_at::<H, LutParam, { LutParam::SIZE }>(hw, list, off)
    }

    /// ROI `roi` of the ROI array (dynamic ROIs only).
    pub(crate) fn read_roi<H: Hw>(&self, hw: &mut H, roi: u8) -> Result<Option<RoiDesc>, Error> {
        let Some(d) = self.dynamic_roi else {
            return Ok(None);
        };
        let off = (dla::RoiArrayDesc::SIZE + usize::from(roi) * RoiDesc::SIZE) as u64;
        read_at::<H, RoiDesc, { RoiDesc::SIZE }>(hw, d.roi_array, off).map(Some)
    }
}
