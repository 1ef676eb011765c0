//! Small loadables built from scratch, for examples, tests and demos.

use crate::builder::*;
use crate::codec::{Descriptor, EncodeError};
use crate::dla;
use crate::schema::*;
use alloc::vec;
use alloc::vec::Vec;

/// DLA1 interface version written into descriptor blobs (current layout).
pub const DLA1_VERSION: Version = Version {
    major: 0,
    minor: 12,
    sub_minor: 0,
};

fn descriptor_blob(name: &str, sub: SubInterface, data: Vec<u8>) -> BlobSpec {
    BlobSpec {
        name: name.into(),
        interface: Interface::DLA1.raw(),
        sub_interface: sub.raw(),
        version: DLA1_VERSION,
        data,
    }
}

/// A one-operation DLA1 task: BDMA copies an int8 feature cube of
/// `width x height x 32` channels (one 32-byte channel atom per pixel) from a
/// buffer the loadable fills with a byte ramp to the output tensor `output`.
///
/// The address list is `[network, op list, surface list, dependency graph,
/// source, destination]`, as NVIDIA's compiler lays out its BDMA tests.
pub fn bdma_copy(width: u16, height: u16) -> LoadableSpec {
    let line = u32::from(width) * 32;
    let surface = line * u32::from(height);

    let net = dla::NetworkDesc {
        operation_desc_index: 1,
        surface_desc_index: 2,
        dependency_graph_index: 3,
        lut_data_index: -1,
        roi_array_index: -1,
        surface_index: -1,
        stat_list_index: -1,
        reserved1: 0,
        op_head: [0, -1, -1, -1, -1, -1],
        num_rois: 1,
        num_operations: 1,
        num_luts: 0,
        num_addresses: 6,
        input_layer: 0,
        dynamic_roi: 0,
        reserved0: 0,
    };
    let none = dla::Consumer {
        index: -1,
        event: 0,
        res: 0,
    };
    let dep = dla::CommonOpDesc {
        index: 0,
        roi_index: 0,
        op_type: dla::OpType::Bdma.raw(),
        dependency_count: 0,
        reserved0: [0; 3],
        consumers: [none; dla::OP_NUM],
        fused_parent: none,
    };
    let op = dla::BdmaOpDesc {
        num_transfers: 1,
        reserved0: 0,
    };
    let mut surf = dla::BdmaSurfaceDesc {
        source_type: dla::MemType::Mc.raw(),
        destination_type: dla::MemType::Mc.raw(),
        num_transfers: 1,
        ..Default::default()
    };
    surf.transfers[0] = dla::BdmaTransferDesc {
        source_address: 4,
        destination_address: 5,
        line_size: line,
        line_repeat: u32::from(height),
        source_line: line,
        destination_line: line,
        surface_repeat: 1,
        source_surface: surface,
        destination_surface: surface,
    };

    let mut op_list = vec![0u8; dla::OPERATION_CONTAINER_SIZE];
    let mut surf_list = vec![0u8; dla::SURFACE_CONTAINER_SIZE];
    // Cannot fail: the buffers hold a whole container slot.
    let _ = op.encode_into(&mut op_list);
    let _ = surf.encode_into(&mut surf_list);
    let blobs = [
        ("bdma-network", SubInterface::ADDR0, net.to_vec()),
        ("bdma-ops", SubInterface::OPS, op_list),
        ("bdma-surfaces", SubInterface::SURFS, surf_list),
        ("bdma-deps", SubInterface::DEPS, dep.to_vec()),
    ];
    one_copy_task("bdma", DLA1_VERSION, blobs, width, height)
}

/// A one-operation DLA1 task: the SDP applies ReLU to an int8 feature cube of
/// `width x height x 32` channels that the loadable fills with a byte ramp
/// (`i % 251`, so every other 128 bytes are negative), writing the output
/// tensor `output`. The X1 unit is enabled with no operation (bypass) and a
/// ReLU, as NVIDIA's `SDP_X1_L0_0` does; no operand comes from memory.
///
/// The surface list is written in `layout` (legacy 28-byte data cubes or
/// current 32-byte ones) and every descriptor blob carries `version`, which
/// need not agree with the layout: ONNC writes 1.x blobs with legacy cubes,
/// and readers must tell the layout from the descriptors' content. With
/// `dst_size` the output cube claims that many bytes instead of its real size
/// (to build loadables whose cubes overrun their buffers).
///
/// The address list is `[network, op list, surface list, dependency graph,
/// source, destination]`.
pub fn sdp_relu(
    width: u16,
    height: u16,
    layout: dla::Layout,
    version: Version,
    dst_size: Option<u32>,
) -> LoadableSpec {
    let line = u32::from(width) * 32;
    let surface = line * u32::from(height);

    let net = dla::NetworkDesc {
        operation_desc_index: 1,
        surface_desc_index: 2,
        dependency_graph_index: 3,
        lut_data_index: -1,
        roi_array_index: -1,
        surface_index: -1,
        stat_list_index: -1,
        reserved1: 0,
        op_head: [-1, -1, 0, -1, -1, -1],
        num_rois: 1,
        num_operations: 1,
        num_luts: 0,
        num_addresses: 6,
        input_layer: 0,
        dynamic_roi: 0,
        reserved0: 0,
    };
    let none = dla::Consumer {
        index: -1,
        event: 0,
        res: 0,
    };
    let dep = dla::CommonOpDesc {
        index: 0,
        roi_index: 0,
        op_type: dla::OpType::Sdp.raw(),
        dependency_count: 0,
        reserved0: [0; 3],
        consumers: [none; dla::OP_NUM],
        fused_parent: none,
    };
    let op = dla::SdpOpDesc {
        src_precision: dla::Precision::Int8.raw(),
        dst_precision: dla::Precision::Int8.raw(),
        lut_index: -1,
        out_cvt: dla::CvtParam {
            scale: 1,
            truncate: 0,
            enable: 1,
            offset: 0,
        },
        conv_mode: dla::ConvMode::Direct.raw(),
        batch_num: 1,
        x1_op: dla::SdpOp {
            enable: 1,
            alu_type: dla::SdpAluType::Sum.raw(),
            op_type: dla::SdpOpType::None.raw(),
            mode: dla::SdpOpMode::PerLayer.raw(),
            act: dla::Activation::Relu.raw(),
            precision: dla::Precision::Int8.raw(),
            mul_operand: 1,
            ..Default::default()
        },
        ..Default::default()
    };
    let cube = |address: i16, size: u32| dla::DataCube {
        mem_type: dla::MemType::Mc.raw().into(),
        address,
        offset: 0,
        size,
        width,
        height,
        channel: 32,
        reserved0: 0,
        line_stride: line,
        surf_stride: surface,
        plane_stride: 0,
    };
    let unused = dla::DataCube {
        mem_type: dla::MemType::Hw.raw().into(),
        address: -1,
        ..Default::default()
    };
    let surf = dla::SdpSurfaceDesc {
        src_data: cube(4, surface),
        x1_data: unused,
        x2_data: unused,
        y_data: unused,
        dst_data: cube(5, dst_size.unwrap_or(surface)),
    };

    let mut op_list = vec![0u8; dla::OPERATION_CONTAINER_SIZE];
    let mut surf_list = vec![0u8; dla::SURFACE_CONTAINER_SIZE];
    // Cannot fail: the buffers hold a whole container slot, and no cube has an offset.
    let _ = op.encode_into(&mut op_list);
    let _ = match layout {
        dla::Layout::Current => surf.encode_into(&mut surf_list),
        dla::Layout::Legacy => dla::legacy::SdpSurfaceDesc::try_from(surf)
            .map_err(|_| EncodeError {
                descriptor: "dla_sdp_surface_desc (legacy)",
                needed: 0,
                available: 0,
            })
            .and_then(|l| l.encode_into(&mut surf_list)),
    };
    let blobs = [
        ("sdp-network", SubInterface::ADDR0, net.to_vec()),
        ("sdp-ops", SubInterface::OPS, op_list),
        ("sdp-surfaces", SubInterface::SURFS, surf_list),
        ("sdp-deps", SubInterface::DEPS, dep.to_vec()),
    ];
    one_copy_task("sdp", version, blobs, width, height)
}

/// The rest of a one-task example: a memory per descriptor blob (written with
/// `version`), a source memory filled with a byte ramp, an int8 output tensor of
/// `width x height x 32`, and the task over `[descriptors..., source, destination]`.
fn one_copy_task<const N: usize>(
    prefix: &str,
    version: Version,
    blobs: [(&str, SubInterface, Vec<u8>); N],
    width: u16,
    height: u16,
) -> LoadableSpec {
    let line = u32::from(width) * 32;
    let surface = line * u32::from(height);
    let mut s = LoadableSpec::new();
    let mut addresses = Vec::new();
    for (name, sub, data) in blobs {
        let size = data.len() as u64;
        s.add_blob(BlobSpec {
            version,
            ..descriptor_blob(name, sub, data)
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

    let source = format!("{prefix}-source");
    let ramp: Vec<u8> = (0..surface).map(|i| (i % 251) as u8).collect();
    s.add_blob(BlobSpec {
        name: source.clone(),
        data: ramp,
        ..Default::default()
    });
    let src = s.add_memory(MemorySpec {
        flags: (MemoryFlags::ALLOC | MemoryFlags::SET).bits(),
        size: surface.into(),
        alignment: 4096,
        contents: vec![(source, 0)],
        ..Default::default()
    });
    addresses.push(s.add_address(AddressSpec {
        mem_id: src,
        offset: 0,
        size: surface.into(),
    }));
    let tensor = s.add_tensor(TensorSpec {
        name: "output".into(),
        mem_id: 5,
        size: surface.into(),
        offset: 0,
        data_format: DataFormat::NCxHWx.raw(),
        data_type: DataType::INT8.raw(),
        data_category: DataCategory::FEATURE.raw(),
        pixel_format: PixelFormat::FEATURE.raw(),
        pixel_mapping: PixelMapping::PITCH_LINEAR.raw(),
        dims: [1, 32, i32::from(height), i32::from(width)],
        strides: [1, line, surface, 0, 0, 0, 0, 0],
    });
    let dst = s.add_memory(MemorySpec {
        flags: (MemoryFlags::ALLOC | MemoryFlags::OUTPUT).bits(),
        size: surface.into(),
        alignment: 4096,
        tensor_desc_id: tensor,
        ..Default::default()
    });
    addresses.push(s.add_address(AddressSpec {
        mem_id: dst,
        offset: 0,
        size: surface.into(),
    }));

    let done = s.add_event(EventSpec {
        op: EventOp::SIGNAL.raw(),
        val: 1,
        ..Default::default()
    });
    let task = s.add_task(TaskSpec {
        interface: Interface::DLA1.raw(),
        instance: -1,
        address_list: addresses,
        post_actions: vec![done],
        ..Default::default()
    });
    s.submits.push(vec![task]);
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Loadable;

    #[test]
    fn bdma_copy_decodes() {
        let bytes = bdma_copy(8, 8).build();
        let l = Loadable::parse(&bytes).unwrap();
        let t = l.tasks().get(0).unwrap();
        assert_eq!(t.address_list().len(), 6);
        let net = dla::NetworkDesc::decode_from(l.blob_at_address(0).unwrap().data()).unwrap();
        assert_eq!(net.head(dla::OpType::Bdma), 0);
        let surf = dla::SurfaceDesc::decode_slot(
            dla::OpType::Bdma,
            l.blob_at_address(2).unwrap().data(),
            0,
        )
        .unwrap();
        let dla::SurfaceDesc::Bdma(b) = surf else {
            panic!("not a BDMA surface")
        };
        assert_eq!(b.active_transfers()[0].line_size, 256);
        assert_eq!(b.active_transfers()[0].source_surface, 2048);
        assert_eq!(l.tensors().get(0).unwrap().dims(), [1, 32, 8, 8]);
    }

    const V0_11: Version = Version {
        major: 0,
        minor: 11,
        sub_minor: 0,
    };
    const V1_3: Version = Version {
        major: 1,
        minor: 3,
        sub_minor: 0,
    };

    /// Both layouts, with versions that name them and with versions that name the other
    /// one (as ONNC's 1.x blobs with legacy cubes do): the layout is found from the
    /// descriptors, and the cubes decode to the same surface.
    #[test]
    fn sdp_relu_layout_is_detected_from_content() {
        use crate::cubes;
        use dla::Layout::{Current, Legacy};
        let mut surfaces = Vec::new();
        for (layout, version) in [
            (Current, DLA1_VERSION),
            (Legacy, V0_11),
            (Legacy, V1_3),
            (Current, V0_11),
        ] {
            let bytes = sdp_relu(8, 8, layout, version, None).build();
            let l = Loadable::parse(&bytes).unwrap();
            let t = cubes::dla_task(&l, &l.tasks().get(0).unwrap()).unwrap();
            assert_eq!(t.layout, layout, "{layout:?} written, version {version}");
            assert_eq!(
                t.by_version,
                dla::Layout::for_version(version.major, version.minor)
            );
            let available = |_| Some(2048);
            assert_eq!(cubes::layout_faults(layout, &t.lists, 6, &available), 0);
            let other = if layout == Current { Legacy } else { Current };
            assert_eq!(cubes::layout_faults(other, &t.lists, 6, &available), 2);
            assert_eq!(cubes::check(&l), Ok(()));
            surfaces.push(
                dla::SurfaceDesc::decode_slot_layout(layout, dla::OpType::Sdp, t.lists.surfaces, 0)
                    .unwrap(),
            );
        }
        assert!(surfaces.windows(2).all(|w| w[0] == w[1]));
    }

    /// `check` rejects a cube larger than its buffer, naming task, operation and cube, in
    /// either layout and whatever the version says.
    #[test]
    fn oversized_cube_is_rejected() {
        use crate::cubes::{self, CubeFault};
        for (layout, version) in [
            (dla::Layout::Current, DLA1_VERSION),
            (dla::Layout::Legacy, V1_3),
        ] {
            let bytes = sdp_relu(8, 8, layout, version, Some(4096)).build();
            let l = Loadable::parse(&bytes).unwrap();
            let e = cubes::check(&l).unwrap_err();
            assert_eq!((e.task, e.op, e.op_type), (0, 0, dla::OpType::Sdp));
            assert_eq!(e.cube, "dla_sdp_surface_desc.dst_data");
            assert_eq!(e.layout, layout);
            assert_eq!((e.address, e.offset, e.size), (5, 0, 4096));
            assert_eq!(e.fault, CubeFault::TooLarge { available: 2048 });
            let text = e.to_string();
            assert!(text.contains("task 0 operation 0 (Sdp)"), "{text}");
            assert!(text.contains("2048 bytes available"), "{text}");
        }
    }
}
