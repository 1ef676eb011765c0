//! Helpers shared by the port integration tests: laying a loadable out on any [`Device`]
//! the way the runtime does (buffers, `SET` contents, legacy surface upgrade, address list).
#![allow(dead_code)]

use std::path::PathBuf;

use nvdla_loadable::dla::{self, Layout, NetworkDesc};
use nvdla_loadable::{Descriptor, Interface, Loadable, MemoryFlags};
use nvdla_port::device::{BufferAddress, BufferHandle, Device, Task, Timeout};
use nvdla_port::vp::VpConfig;

/// A loadable laid out on a device: one buffer per memory entry, `SET` contents copied,
/// legacy surface lists upgraded, and the first DLA1 task's address list.
pub struct Loaded {
    pub buffers: Vec<Option<BufferHandle>>,
    pub addresses: Vec<BufferAddress>,
}

pub fn load(dev: &mut dyn Device, bytes: &[u8]) -> Loaded {
    let l = Loadable::parse(bytes).expect("loadable parses");
    let mut buffers = Vec::new();
    for m in l.memory().iter() {
        if !m.flags().contains(MemoryFlags::ALLOC) || m.size() == 0 {
            buffers.push(None);
            continue;
        }
        let h = dev.create_buffer(m.size()).expect("create buffer");
        let buf = dev.map_buffer(h).unwrap();
        for i in 0..m.contents_len() {
            // Contents without a blob are not loaded (the runtime reports them).
            let Some((name, off)) = m.content(i) else {
                continue;
            };
            let Some(data) = l.blob(name).map(|b| b.data()) else {
                continue;
            };
            let off = off as usize;
            let n = data.len().min(buf.len() - off);
            buf[off..off + n].copy_from_slice(&data[..n]);
        }
        buffers.push(Some(h));
    }
    let task = l
        .tasks()
        .iter()
        .find(|t| t.interface() == Interface::DLA1)
        .expect("a DLA1 task");
    let ids: Vec<u16> = task.address_list().iter().collect();
    let addresses: Vec<BufferAddress> = ids
        .iter()
        .map(|&id| {
            let a = l.addresses().get(usize::from(id)).unwrap();
            BufferAddress {
                handle: buffers[usize::from(a.mem_id())].expect("allocated"),
                offset: a.offset(),
            }
        })
        .collect();
    // The layout the descriptors show, as the runtime decides it.
    let v = l.blob_at_address(ids[0]).unwrap().version();
    let layout = nvdla_loadable::cubes::dla_task(&l, &task)
        .map_or(Layout::for_version(v.major, v.minor), |t| t.layout);
    if layout == Layout::Legacy {
        let net = NetworkDesc::decode_from(&read(dev, addresses[0], NetworkDesc::SIZE)).unwrap();
        let n = usize::from(net.num_operations) * usize::from(net.num_rois.max(1));
        let deps = read(
            dev,
            addresses[net.dependency_graph_index as usize],
            n * dla::DEPENDENCY_ENTRY_SIZE,
        );
        let at = addresses[net.surface_desc_index as usize];
        let mut surf = read(dev, at, n * dla::SURFACE_CONTAINER_SIZE);
        nvdla_loadable::upgrade::surfaces_to_current(&deps, &mut surf, n).unwrap();
        write(dev, at, &surf);
    }
    Loaded { buffers, addresses }
}

pub fn read(dev: &mut dyn Device, at: BufferAddress, len: usize) -> Vec<u8> {
    let o = at.offset as usize;
    dev.map_buffer(at.handle).unwrap()[o..o + len].to_vec()
}

pub fn write(dev: &mut dyn Device, at: BufferAddress, data: &[u8]) {
    let o = at.offset as usize;
    dev.map_buffer(at.handle).unwrap()[o..o + data.len()].copy_from_slice(data);
}

pub fn submit(
    dev: &mut dyn Device,
    addresses: &[BufferAddress],
) -> Result<(), nvdla_port::device::DeviceError> {
    dev.submit(&[Task {
        addresses,
        timeout: Timeout::Millis(5_000),
    }])
}

pub fn shared() -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/nvdla-sw-regression");
    if p.is_dir() {
        Some(p)
    } else {
        eprintln!("skipped: {} is absent", p.display());
        None
    }
}

pub fn config_of(test: &str) -> VpConfig {
    if test.ends_with("_small") {
        VpConfig::NvSmall
    } else if test.ends_with("_large") {
        VpConfig::NvLarge
    } else {
        VpConfig::NvFull
    }
}

/// The project's own one-operation BDMA copy, loaded on `dev`.
pub fn bdma(dev: &mut dyn Device) -> Loaded {
    let bytes = nvdla_loadable::examples::bdma_copy(8, 8).build();
    load(dev, &bytes)
}

/// Checks that a good BDMA task runs on `dev` and copies its ramp.
pub fn good_task_succeeds(dev: &mut dyn Device) {
    let l = bdma(dev);
    let dst = *l.buffers.iter().flatten().last().unwrap();
    dev.map_buffer(dst).unwrap().fill(0xee);
    submit(dev, &l.addresses).expect("good task after a failed one");
    let out = dev.map_buffer(dst).unwrap();
    assert!(out.iter().any(|&b| b != 0xee), "BDMA wrote its destination");
    for h in l.buffers.into_iter().flatten() {
        dev.destroy_buffer(h).unwrap();
    }
}
