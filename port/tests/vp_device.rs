//! The driver half of the stack on the virtual platform: KMD + firmware + hardware model
//! behind [`VpDevice`], fed with NVIDIA's regression loadables and with malformed
//! submissions.

mod common;

use common::*;
use nvdla_firmware::hw::DeviceAddr;
use nvdla_firmware::HwError;
use nvdla_kmd::bo::{BoConfig, ClientId};
use nvdla_kmd::submit::{MemHandle, SubmitDesc, TaskDesc, SUBMIT_VERSION};
use nvdla_kmd::{Error as Errno, Kmd, KmdOs, SubmitFailure, Wait};
use nvdla_loadable::dla::{self, CommonOpDesc, NetworkDesc};
use nvdla_loadable::{Descriptor, Loadable};
use nvdla_port::device::{BufferHandle, Device};
use nvdla_port::vp::{VpConfig, VpDevice, VpOs};

/// Runs a regression loadable's DLA1 task; `Ok(interrupts)` or the device error text.
fn run_regression(unit: &str, test: &str) -> Option<Result<(), String>> {
    let path = shared()?.join(format!("flatbufs/kmd/{unit}/{test}_fbuf"));
    let bytes = std::fs::read(&path).unwrap();
    let mut dev = VpDevice::new(config_of(test));
    let loaded = load(&mut dev, &bytes);
    Some(submit(&mut dev, &loaded.addresses).map_err(|e| e.to_string()))
}

/// The loadables whose DLA task only uses engines the model already has.
#[test]
fn regression_tasks_complete_on_the_vp() {
    let tests = [
        ("BDMA", "BDMA_L0_0"),
        ("SDP", "SDP_X1_L0_0"),
        ("SDP", "SDP_X1_L0_0_small"),
        ("SDP", "SDP_X1_L0_0_large"),
        ("PDP", "PDP_L0_0"),
        ("PDP", "PDP_L0_0_small"),
        ("PDP", "PDP_L0_0_large"),
        ("CDP", "CDP_L0_0"),
        ("CDP", "CDP_L0_0_small"),
        ("CDP", "CDP_L0_0_large"),
        ("RBK", "RBK_L0_0"),
    ];
    for (unit, test) in tests {
        let Some(r) = run_regression(unit, test) else {
            return;
        };
        r.unwrap_or_else(|e| panic!("{test}: {e}"));
    }
}

/// The convolution loadables (direct convolution int16/int8, and NN_L0_0's fp16 network).
#[test]
fn convolution_regression_tasks_complete_on_the_vp() {
    for (unit, test) in [
        ("CONV", "CONV_D_L0_0"),
        ("CONV", "CONV_D_L0_0_small"),
        ("CONV", "CONV_D_L0_0_large"),
        ("NN", "NN_L0_0"),
    ] {
        let Some(r) = run_regression(unit, test) else {
            return;
        };
        r.unwrap_or_else(|e| panic!("{test}: {e}"));
    }
}

// --- malformed submissions -------------------------------------------------------------

fn errno_of(r: Result<(), nvdla_port::device::DeviceError>) -> (i32, String) {
    let e = r.expect_err("the submit must fail");
    (e.errno, e.to_string())
}

fn net_mut(dev: &mut dyn Device, l: &Loaded, f: impl FnOnce(&mut NetworkDesc)) {
    let mut net = NetworkDesc::decode_from(&read(dev, l.addresses[0], NetworkDesc::SIZE)).unwrap();
    f(&mut net);
    write(dev, l.addresses[0], &net.to_vec());
}

fn dep_mut(dev: &mut dyn Device, l: &Loaded, f: impl FnOnce(&mut CommonOpDesc)) {
    let net = NetworkDesc::decode_from(&read(dev, l.addresses[0], NetworkDesc::SIZE)).unwrap();
    let at = l.addresses[net.dependency_graph_index as usize];
    let mut dep = CommonOpDesc::decode_from(&read(dev, at, CommonOpDesc::SIZE)).unwrap();
    f(&mut dep);
    write(dev, at, &dep.to_vec());
}

#[test]
fn unknown_handle_is_enoent() {
    let mut dev = VpDevice::new(VpConfig::NvFull);
    let mut l = bdma(&mut dev);
    l.addresses[4].handle = BufferHandle::new(999).unwrap();
    let (errno, msg) = errno_of(submit(&mut dev, &l.addresses));
    assert_eq!(errno, Errno::NoEntry.errno(), "{msg}");
    good_task_succeeds(&mut dev);
}

#[test]
fn offset_past_the_buffer_is_einval() {
    let mut dev = VpDevice::new(VpConfig::NvFull);
    let mut l = bdma(&mut dev);
    l.addresses[5].offset = 1 << 20;
    let (errno, msg) = errno_of(submit(&mut dev, &l.addresses));
    assert_eq!(errno, Errno::Invalid.errno(), "{msg}");
    assert!(msg.contains("entry 5"), "{msg}");
    good_task_succeeds(&mut dev);
}

#[test]
fn garbage_network_descriptor_is_einval() {
    let mut dev = VpDevice::new(VpConfig::NvFull);
    let l = bdma(&mut dev);
    let junk: Vec<u8> = (0..NetworkDesc::SIZE as u32)
        .map(|i| (i.wrapping_mul(0x9e37_79b9) >> 13) as u8)
        .collect();
    write(&mut dev, l.addresses[0], &junk);
    let (errno, msg) = errno_of(submit(&mut dev, &l.addresses));
    assert_eq!(errno, Errno::Invalid.errno(), "{msg}");
    assert!(msg.contains("firmware"), "{msg}");
    good_task_succeeds(&mut dev);
}

#[test]
fn operation_index_out_of_range_is_einval() {
    let mut dev = VpDevice::new(VpConfig::NvFull);
    let l = bdma(&mut dev);
    net_mut(&mut dev, &l, |n| n.op_head[0] = 7);
    let (errno, msg) = errno_of(submit(&mut dev, &l.addresses));
    assert_eq!(errno, Errno::Invalid.errno(), "{msg}");
    assert!(msg.contains("= 7"), "{msg}");
    good_task_succeeds(&mut dev);
}

#[test]
fn dependency_cycle_is_einval() {
    let mut dev = VpDevice::new(VpConfig::NvFull);
    let l = bdma(&mut dev);
    // The BDMA operation names itself as its next BDMA operation: a one-node cycle.
    dep_mut(&mut dev, &l, |d| {
        d.consumers[0] = dla::Consumer {
            index: 0,
            event: 3,
            res: 0,
        }
    });
    let (errno, msg) = errno_of(submit(&mut dev, &l.addresses));
    assert_eq!(errno, Errno::Invalid.errno(), "{msg}");
    good_task_succeeds(&mut dev);
}

#[test]
fn unsatisfiable_dependency_is_einval() {
    let mut dev = VpDevice::new(VpConfig::NvFull);
    let l = bdma(&mut dev);
    dep_mut(&mut dev, &l, |d| d.dependency_count = 3);
    let (errno, msg) = errno_of(submit(&mut dev, &l.addresses));
    assert_eq!(errno, Errno::Invalid.errno(), "{msg}");
    assert!(msg.contains("waits for 3 events"), "{msg}");
    good_task_succeeds(&mut dev);
}

#[test]
fn operation_for_an_absent_engine_is_einval() {
    // nv_small has no BDMA.
    let mut dev = VpDevice::new(VpConfig::NvSmall);
    let l = bdma(&mut dev);
    let (errno, msg) = errno_of(submit(&mut dev, &l.addresses));
    assert_eq!(errno, Errno::Invalid.errno(), "{msg}");
    assert!(msg.contains("Bdma"), "{msg}");
    // The device keeps working for engines it has: an SDP regression task.
    if let Some(r) = run_regression("SDP", "SDP_X1_L0_0_small") {
        r.unwrap();
    }
}

/// An engine that refuses its programming (a loadable for nv_small run on nv_full: the
/// CDMA cannot hold a line in the slice the descriptors give it) ends the task at once with
/// `EINVAL`, the fault named first; it is not a timeout, and the device keeps working.
#[test]
fn an_engine_fault_is_einval_and_not_a_timeout() {
    let Some(dir) = shared() else { return };
    let bytes = std::fs::read(dir.join("flatbufs/kmd/CONV/CONV_D_L0_0_small_fbuf")).unwrap();
    let mut dev = VpDevice::new(VpConfig::NvFull);
    let loaded = load(&mut dev, &bytes);
    let (errno, msg) = errno_of(submit(&mut dev, &loaded.addresses));
    assert_eq!(errno, Errno::Invalid.errno(), "{msg}");
    assert!(
        msg.starts_with("SUBMIT failed: EINVAL (errno 22): task 0: engine fault in CDMA: CDMA: invalid programming: ENTRY_PER_SLICE"),
        "{msg}"
    );
    assert!(msg.contains("0 of 2 operations done"), "{msg}");
    assert!(!msg.contains("timed out"), "{msg}");
    good_task_succeeds(&mut dev);
}

/// A [`KmdOs`] over the model whose interrupt line can be cut, as a hung accelerator.
struct HangingOs {
    inner: VpOs,
    hang: bool,
    resets: u32,
}

impl KmdOs for HangingOs {
    fn reg_read(&mut self, offset: u32) -> Result<u32, HwError> {
        self.inner.reg_read(offset)
    }
    fn reg_write(&mut self, offset: u32, value: u32) -> Result<(), HwError> {
        self.inner.reg_write(offset, value)
    }
    fn mem_read(&mut self, addr: DeviceAddr, buf: &mut [u8]) -> Result<(), HwError> {
        self.inner.mem_read(addr, buf)
    }
    fn mem_write(&mut self, addr: DeviceAddr, data: &[u8]) -> Result<(), HwError> {
        self.inner.mem_write(addr, data)
    }
    fn now_ms(&mut self) -> u64 {
        self.inner.now_ms()
    }
    fn wait_for_interrupt(&mut self, deadline_ms: Option<u64>) -> Wait {
        if !self.hang {
            return self.inner.wait_for_interrupt(deadline_ms);
        }
        // A real wait: sleep until the deadline.
        let deadline = deadline_ms.expect("the test sets a timeout");
        while self.inner.now_ms() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        Wait::TimedOut
    }
    fn reset(&mut self) {
        self.resets += 1;
        self.inner.reset();
    }
}

#[test]
fn a_task_that_never_completes_times_out_and_the_next_one_runs() {
    let os = HangingOs {
        inner: VpOs::new(VpConfig::NvFull),
        hang: true,
        resets: 0,
    };
    let mut kmd = Kmd::new(
        os,
        nvdla_firmware::HwConfig::new(&nvdla_hw::NV_FULL),
        BoConfig::default(),
    )
    .unwrap();
    let client = ClientId(7);
    // Lay the BDMA copy out through the KMD: buffers in the model's DRAM at their IOVAs.
    let bytes = nvdla_loadable::examples::bdma_copy(8, 8).build();
    let l = Loadable::parse(&bytes).unwrap();
    let mut handles = Vec::new();
    for m in l.memory().iter() {
        let h = kmd.gem_create(client, m.size(), 0).unwrap().get();
        let iova = kmd.bo(client, h).unwrap().iova;
        for i in 0..m.contents_len() {
            let (name, off) = m.content(i).unwrap();
            let data = l.blob(name).unwrap().data();
            kmd.os_mut()
                .inner
                .mem_write(DeviceAddr(iova.0 + off), data)
                .unwrap();
        }
        handles.push(h);
    }
    let task = l.tasks().get(0).unwrap();
    let list: Vec<MemHandle> = task
        .address_list()
        .iter()
        .map(|id| {
            let a = l.addresses().get(usize::from(id)).unwrap();
            MemHandle {
                handle: handles[usize::from(a.mem_id())],
                reserved: 0,
                offset: a.offset(),
            }
        })
        .collect();
    let tasks = [TaskDesc {
        timeout: 40,
        addresses: &list,
    }];
    let desc = SubmitDesc {
        flags: 0,
        version: SUBMIT_VERSION,
        tasks: &tasks,
    };

    let failure = kmd.submit(client, &desc).unwrap_err();
    assert_eq!(failure.error(), Errno::TimedOut);
    let msg = failure.to_string();
    assert!(msg.starts_with("task 0: timed out after "), "{msg}");
    assert!(
        matches!(failure, SubmitFailure::Task { task: 0, .. }),
        "{msg}"
    );
    assert!(msg.contains("0 of 1 operations done"), "{msg}");
    assert!(msg.contains("BDMA: g0 operation 0 (ROI 0)"), "{msg}");
    let waited: u64 = msg
        .split("after ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|s| s.parse().ok())
        .unwrap();
    assert!(waited >= 40, "waited {waited} ms, timeout 40 ms");
    assert_eq!(kmd.os().resets, 2, "reset at open and after the timeout");
    // Buffers are no longer pinned: destroy would work. Run the same task again on a
    // healthy line: it completes.
    kmd.os_mut().hang = false;
    let report = kmd.submit(client, &desc).expect("the next task succeeds");
    assert_eq!(report.tasks, 1);
    assert!(report.interrupts >= 1);
    for h in handles {
        kmd.gem_destroy(client, h).unwrap();
    }
    assert!(kmd.bos().is_empty());
}

#[test]
fn buffers_in_use_by_another_client_are_invisible() {
    let mut kmd = Kmd::new(
        VpOs::new(VpConfig::NvFull),
        nvdla_firmware::HwConfig::new(&nvdla_hw::NV_FULL),
        BoConfig::default(),
    )
    .unwrap();
    let a = kmd.gem_create(ClientId(1), 4096, 0).unwrap().get();
    assert_eq!(kmd.gem_destroy(ClientId(2), a), Err(Errno::NoEntry));
    assert_eq!(kmd.gem_mmap(ClientId(2), a), Err(Errno::NoEntry));
    let list = [MemHandle {
        handle: a,
        reserved: 0,
        offset: 0,
    }];
    let tasks = [TaskDesc {
        timeout: 10,
        addresses: &list,
    }];
    let desc = SubmitDesc {
        flags: 0,
        version: SUBMIT_VERSION,
        tasks: &tasks,
    };
    let f = kmd.submit(ClientId(2), &desc).unwrap_err();
    assert_eq!(f.error(), Errno::NoEntry);
    assert_eq!(kmd.close_client(ClientId(1)), 0);
    assert!(kmd.bos().is_empty());
}
