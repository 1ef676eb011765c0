//! The runtime against a mock device: loading, SET filling, address translation, events,
//! EMU tasks, outputs; on every shared loadable.

mod common;

use std::sync::{Arc, Mutex};

use nvdla_loadable::dla::NetworkDesc;
use nvdla_loadable::{Descriptor, Interface, Loadable, MemoryFlags};
use nvdla_port::device::Device;
use nvdla_umd::device::{MockDevice, RecordedTask};
use nvdla_umd::dimg::Numbering;
use nvdla_umd::emu::{self, SlotMemory};
use nvdla_umd::runtime::{Phase, Progress, RunOptions, Runtime};
use nvdla_umd::{Direction, Error};

#[test]
fn nn_l0_0_loads_fills_and_translates() {
    let Some(shared) = common::shared("nn_l0_0_loads_fills_and_translates") else {
        return;
    };
    let bytes = common::nn_l0_0(&shared);
    let l = Loadable::parse(&bytes).unwrap();
    let mut dev = MockDevice::new();
    let mut rt = Runtime::load(&mut dev, &bytes).unwrap();
    // The DLA task's surface list is legacy (pre-0.12): load upgrades it in place. Compute
    // the expected upgrade from the blobs the network descriptor names.
    let dla = l.tasks().get(1).unwrap();
    let slots: Vec<u16> = dla.address_list().iter().collect();
    let net = NetworkDesc::decode_from(l.blob_at_address(slots[0]).unwrap().data()).unwrap();
    let at = |i: i16| l.addresses().get(usize::from(slots[i as usize])).unwrap();
    let surf_mem = usize::from(at(net.surface_desc_index).mem_id());
    let n = usize::from(net.num_operations) * usize::from(net.num_rois.max(1));
    let deps = l
        .blob_at_address(slots[net.dependency_graph_index as usize])
        .unwrap();
    let mut upgraded = l
        .blob_at_address(slots[net.surface_desc_index as usize])
        .unwrap()
        .data()
        .to_vec();
    nvdla_loadable::upgrade::surfaces_to_current(deps.data(), &mut upgraded, n).unwrap();
    // Every ALLOC entry got a buffer of at least its size.
    assert_eq!(dev.created.len(), l.memory().len());
    for (mi, m) in l.memory().iter().enumerate() {
        let h = rt.buffer(mi).expect("allocated");
        let buf = dev.buffer(h).unwrap();
        assert!(buf.len() as u64 >= m.size());
        // SET contents are the blobs at their offsets.
        if m.flags().contains(MemoryFlags::SET) {
            for ci in 0..m.contents_len() {
                let (name, off) = m.content(ci).unwrap();
                let mut blob = l.blob(name).unwrap().data();
                if mi == surf_mem {
                    assert_ne!(blob, &upgraded[..], "the upgrade changes the surface list");
                    blob = &upgraded;
                }
                assert_eq!(
                    &buf[off as usize..off as usize + blob.len()],
                    blob,
                    "mem {mi}"
                );
            }
        } else {
            assert!(buf.iter().all(|&b| b == 0), "mem {mi} not zero");
        }
    }
    assert_eq!(rt.tensor_count(Direction::Input), 1);
    assert_eq!(rt.tensor_count(Direction::Output), 1);
    assert_eq!(rt.tensor(Direction::Input, 0).unwrap().name, "data");
    assert_eq!(rt.tensor(Direction::Output, 0).unwrap().name, "prob");

    let mut seen: Vec<Progress> = Vec::new();
    rt.run(&mut dev, &RunOptions::default(), &mut |p| seen.push(*p))
        .unwrap();
    // Tasks ran in submit order: EMU, DLA, EMU; start and end reported.
    let done: Vec<(usize, Interface)> = seen
        .iter()
        .filter(|p| matches!(p.phase, Phase::Done(_)))
        .map(|p| (p.task, p.interface))
        .collect();
    assert_eq!(
        done,
        vec![
            (0, Interface::EMU1),
            (1, Interface::DLA1),
            (2, Interface::EMU1)
        ]
    );
    // The DLA task's address list is the task's list translated to (handle, offset).
    assert_eq!(dev.submitted.len(), 1);
    let task = l.tasks().get(1).unwrap();
    let rec = &dev.submitted[0];
    assert_eq!(rec.addresses.len(), task.address_list().len());
    for (slot, aid) in task.address_list().iter().enumerate() {
        let a = l.addresses().get(aid as usize).unwrap();
        assert_eq!(
            rec.addresses[slot].handle,
            rt.buffer(a.mem_id() as usize).unwrap()
        );
        assert_eq!(rec.addresses[slot].offset, a.offset());
    }
    rt.release(&mut dev);
    assert_eq!(dev.live_buffers(), 0);
}

/// A DLA "execution" that writes fp16 logits where the softmax task reads them, so the
/// whole EMU → DLA → EMU chain computes a known result.
#[test]
fn nn_l0_0_softmax_of_known_logits() {
    let Some(shared) = common::shared("nn_l0_0_softmax_of_known_logits") else {
        return;
    };
    let bytes = common::nn_l0_0(&shared);
    let l = Loadable::parse(&bytes).unwrap();
    // The softmax (task 2) reads address 10; find its memory's handle once loaded.
    let logits: Vec<f32> = vec![1.0, 2.0, -3.5, 0.25, 7.0, 6.5, -1.0, 0.0, 3.0, 2.5];
    let target: Arc<Mutex<Option<u32>>> = Arc::new(Mutex::new(None));
    let t2 = target.clone();
    let lg = logits.clone();
    let mut dev = MockDevice::with_hook(Box::new(move |_task: &RecordedTask, bufs| {
        let h = t2.lock().unwrap().ok_or(22)?;
        let buf = bufs.get_mut(&h).ok_or(2)?;
        for (i, v) in lg.iter().enumerate() {
            buf[2 * i..2 * i + 2].copy_from_slice(&common::f16(*v).to_le_bytes());
        }
        Ok(())
    }));
    let mut rt = Runtime::load(&mut dev, &bytes).unwrap();
    let mem10 = l.addresses().get(10).unwrap().mem_id() as usize;
    *target.lock().unwrap() = Some(rt.buffer(mem10).unwrap().get());
    rt.run(&mut dev, &RunOptions::default(), &mut |_| {})
        .unwrap();
    let out = rt.read_output(&mut dev, 0).unwrap();
    // Independent softmax in f64; every result within half an fp16 ulp (plus f32 error).
    let max = logits
        .iter()
        .cloned()
        .fold(f64::NEG_INFINITY, |a, b| a.max(f64::from(b)));
    let sum: f64 = logits.iter().map(|&v| (f64::from(v) - max).exp()).sum();
    for (i, &v) in logits.iter().enumerate() {
        let want = (f64::from(v) - max).exp() / sum;
        let got = f64::from(common::h2f(u16::from_le_bytes([
            out[2 * i],
            out[2 * i + 1],
        ])));
        let ulp = 2f64.powi((want.log2().floor() as i32).max(-14) - 10);
        assert!(
            (got - want).abs() <= ulp * 0.5 + 1e-7,
            "ch {i}: {got} vs {want}"
        );
    }
    // Channels beyond 10 are untouched.
    assert!(out[20..].iter().all(|&b| b == 0));
    // The .dimg: x16 fp16, 1x1x10, regression numbering 42.
    let img = rt.output_image(&mut dev, 0, Numbering::Regression).unwrap();
    let bytes = img.write();
    assert_eq!(&bytes[..4], b"DIMG");
    assert_eq!(u32::from_le_bytes(bytes[8..12].try_into().unwrap()), 42);
    assert_eq!(bytes.len(), 36 + 20);
    assert_eq!(&bytes[36..], &out[..20]);
    // Numbered as the last nvdla/sw runtime writes it: D_F16_CxHWx_x16_F is 43 there, and
    // nothing else changes.
    let release = rt
        .output_image(&mut dev, 0, Numbering::Release)
        .unwrap()
        .write();
    assert_eq!(u32::from_le_bytes(release[8..12].try_into().unwrap()), 43);
    assert_eq!((&release[..8], &release[12..]), (&bytes[..8], &bytes[12..]));
}

/// The power task (task 0) copies the input tensor into the DLA's input (power 1, scale 1,
/// shift 0): what we write as input arrives where the DLA task reads it.
#[test]
fn nn_l0_0_power_task_moves_the_input() {
    let Some(shared) = common::shared("nn_l0_0_power_task_moves_the_input") else {
        return;
    };
    let bytes = common::nn_l0_0(&shared);
    let l = Loadable::parse(&bytes).unwrap();
    let mut dev = MockDevice::new();
    let mut rt = Runtime::load(&mut dev, &bytes).unwrap();
    let t = rt.tensor(Direction::Input, 0).unwrap().clone();
    let mut input = vec![0u8; t.size as usize];
    // Channel 0 of a 28x28 x16 fp16 cube: element (x, y) at y*896 + x*32.
    for y in 0..28usize {
        for x in 0..28usize {
            let v = common::f16((x as f32 - y as f32) * 0.125);
            input[y * 896 + x * 32..y * 896 + x * 32 + 2].copy_from_slice(&v.to_le_bytes());
        }
    }
    rt.write_input(&mut dev, 0, &input).unwrap();
    rt.run(&mut dev, &RunOptions::default(), &mut |_| {})
        .unwrap();
    let mem1 = l.addresses().get(1).unwrap().mem_id() as usize;
    let h = rt.buffer(mem1).unwrap();
    let out = dev.map_buffer(h).unwrap();
    for y in 0..28usize {
        for x in 0..28usize {
            let o = y * 896 + x * 32;
            assert_eq!(out[o..o + 2], input[o..o + 2], "({x},{y})");
        }
    }
}

#[test]
fn emu_descriptors_of_nn_l0_0_decode() {
    let Some(shared) = common::shared("emu_descriptors_of_nn_l0_0_decode") else {
        return;
    };
    let bytes = common::nn_l0_0(&shared);
    let l = Loadable::parse(&bytes).unwrap();
    // Slots straight from the blobs (no device).
    struct Blobs(Vec<Option<Vec<u8>>>);
    impl SlotMemory for Blobs {
        fn slot_count(&self) -> usize {
            self.0.len()
        }
        fn slot(&mut self, slot: usize) -> Option<&mut [u8]> {
            self.0.get_mut(slot)?.as_deref_mut()
        }
        fn content_len(&self, slot: usize) -> Option<usize> {
            self.0.get(slot)?.as_ref().map(Vec::len)
        }
    }
    for (ti, kind) in [
        (0usize, emu::EmuTask::is_power as fn(&emu::EmuTask) -> bool),
        (2, emu::EmuTask::is_softmax),
    ] {
        let t = l.tasks().get(ti).unwrap();
        let slots = t
            .address_list()
            .iter()
            .map(|aid| l.blob_at_address(aid).map(|b| b.data().to_vec()))
            .collect();
        let task = emu::decode_task(&mut Blobs(slots)).unwrap();
        assert_eq!(task.layout, nvdla_loadable::emu::Layout::Legacy);
        assert_eq!(task.ops.len(), 1);
        assert!(kind(&task), "task {ti}");
        let src = task.ops[0].buffers.src_data();
        assert_eq!(
            src.format().unwrap(),
            nvdla_loadable::emu::BufferFormat::Fp16
        );
    }
}

#[test]
fn every_shared_loadable_runs_on_the_mock_and_matches_golden_headers() {
    let Some(shared) = common::shared("every_shared_loadable_runs_on_the_mock") else {
        return;
    };
    let mut checked = 0;
    for (test, path) in common::regression_loadables(&shared) {
        let bytes = std::fs::read(&path).unwrap();
        let mut dev = MockDevice::new();
        let mut rt = Runtime::load(&mut dev, &bytes).unwrap_or_else(|e| panic!("{test}: {e}"));
        rt.run(&mut dev, &RunOptions::default(), &mut |_| {})
            .unwrap_or_else(|e| panic!("{test}: {e}"));
        let img = rt.output_image(&mut dev, 0, Numbering::Regression).unwrap();
        let ours = img.write();
        let golden = common::golden(&shared, &test).unwrap_or_else(|| panic!("{test}: no golden"));
        // The header (format number, geometry) and length must be upstream's; the data
        // needs the hardware.
        assert_eq!(ours[..36], golden[..36], "{test}: header");
        assert_eq!(ours.len(), golden.len(), "{test}: length");
        rt.release(&mut dev);
        assert_eq!(dev.live_buffers(), 0, "{test}");
        checked += 1;
    }
    assert_eq!(checked, 15);
    for name in [
        "lenet_nv_full_fp16_nhwc_fast-math.nvdla",
        "lenet_nv_full_int8_nhwc_calib_fast-math.nvdla",
        "lenet_nv_large_fp16_nhwc_fast-math.nvdla",
        "lenet_nv_small_int8_nchw_calib_fast-math.nvdla",
    ] {
        let bytes = common::lenet(&shared, name);
        let mut dev = MockDevice::new();
        let mut rt = Runtime::load(&mut dev, &bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        rt.run(&mut dev, &RunOptions::default(), &mut |_| {})
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        rt.output_image(&mut dev, 0, Numbering::Regression)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[test]
fn garbage_is_a_typed_error_and_leaks_nothing() {
    let mut dev = MockDevice::new();
    for bad in [
        &b""[..],
        b"\x00\x00\x00\x00",
        b"NVDLA loadable? no",
        &[0xffu8; 64],
    ] {
        match Runtime::load(&mut dev, bad) {
            Err(Error::Loadable(_)) => {}
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(dev.created.len(), 0);
    // Truncations of a real loadable never panic, and free what they allocated.
    if let Some(shared) = common::shared("garbage_is_a_typed_error") {
        let bytes = common::nn_l0_0(&shared);
        for cut in (0..bytes.len()).step_by(bytes.len() / 97 + 1) {
            let _ = Runtime::load(&mut dev, &bytes[..cut]);
            assert_eq!(dev.live_buffers(), 0);
        }
    }
}

#[test]
fn device_failures_name_the_task() {
    let Some(shared) = common::shared("device_failures_name_the_task") else {
        return;
    };
    let bytes = common::nn_l0_0(&shared);
    let mut dev = MockDevice::with_hook(Box::new(|_, _| Err(110)));
    let mut rt = Runtime::load(&mut dev, &bytes).unwrap();
    let e = rt
        .run(&mut dev, &RunOptions::default(), &mut |_| {})
        .unwrap_err();
    let msg = e.to_string();
    assert!(msg.starts_with("task 1 (DLA1): SUBMIT failed"), "{msg}");
    assert!(!msg.contains('\n'));
}

#[test]
fn input_size_and_bind_ids_are_checked() {
    let Some(shared) = common::shared("input_size_and_bind_ids_are_checked") else {
        return;
    };
    let bytes = common::nn_l0_0(&shared);
    let mut dev = MockDevice::new();
    let mut rt = Runtime::load(&mut dev, &bytes).unwrap();
    let e = rt.write_input(&mut dev, 0, &vec![0; 25089]).unwrap_err();
    assert!(matches!(e, Error::TensorSize { .. }), "{e}");
    let e = rt.write_input(&mut dev, 1, &[0]).unwrap_err();
    assert!(matches!(e, Error::NoSuchTensor { .. }), "{e}");
    // Binding an application buffer replaces (and frees) the runtime's own.
    let before = dev.live_buffers();
    let h = dev.create_buffer(32).unwrap();
    rt.bind(&mut dev, Direction::Output, 0, h, 32).unwrap();
    assert_eq!(dev.live_buffers(), before);
    let small = dev.create_buffer(8).unwrap();
    assert!(rt.bind(&mut dev, Direction::Output, 0, small, 8).is_err());
    rt.run(&mut dev, &RunOptions::default(), &mut |_| {})
        .unwrap();
    // The softmax wrote into the bound buffer.
    assert!(dev.buffer(h).unwrap().iter().any(|&b| b != 0));
}

#[test]
fn stride_rewrite_patches_reloc_targets() {
    let Some(shared) = common::shared("stride_rewrite_patches_reloc_targets") else {
        return;
    };
    let bytes = common::nn_l0_0(&shared);
    let mut dev = MockDevice::new();
    let mut rt = Runtime::load(&mut dev, &bytes).unwrap();
    // Relocs 0/1 target memory 21 (task 0's buffer list) at bytes 14 and 18.
    let mut strides = [0u32; 8];
    strides[1] = 0x1234;
    strides[2] = 0x56789;
    rt.set_strides(&mut dev, Direction::Input, 0, strides)
        .unwrap();
    let h = rt.buffer(21).unwrap();
    let buf = dev.map_buffer(h).unwrap();
    assert_eq!(u32::from_le_bytes(buf[14..18].try_into().unwrap()), 0x1234);
    assert_eq!(u32::from_le_bytes(buf[18..22].try_into().unwrap()), 0x56789);
    assert_eq!(rt.tensor(Direction::Input, 0).unwrap().strides, strides);
}
