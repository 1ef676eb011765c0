//! Every loadable of the shared ground truth parses and validates, with the
//! contents NVIDIA's compiler put there.

use nvdla_loadable::*;
use std::path::{Path, PathBuf};

fn shared() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared");
    if p.join("nvdla-sw-regression").is_dir() {
        Some(p)
    } else {
        eprintln!("skipping: ../shared (ground-truth data) is absent");
        None
    }
}

fn loadables(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let reg = root.join("nvdla-sw-regression/flatbufs/kmd");
    for unit in std::fs::read_dir(reg).unwrap() {
        for f in std::fs::read_dir(unit.unwrap().path()).unwrap() {
            out.push(f.unwrap().path());
        }
    }
    let lenet = root.join("third-party-loadables/lenet-mnist");
    if let Ok(dir) = std::fs::read_dir(lenet) {
        for f in dir {
            let p = f.unwrap().path();
            if p.extension().is_some_and(|e| e == "nvdla") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn all_shared_loadables_validate() {
    let Some(root) = shared() else { return };
    let files = loadables(&root);
    assert_eq!(
        files.len(),
        19,
        "15 regression + 4 LeNet loadables expected"
    );
    for f in &files {
        let bytes = std::fs::read(f).unwrap();
        let l = Loadable::parse(&bytes).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        assert_eq!(l.version(), LOADABLE_VERSION);
        assert!(!l.tasks().is_empty());
        assert!(!l.submits().is_empty());
        // Every memory entry the loadable fills names blobs that resolve.
        for m in l.memory().iter() {
            if m.flags().contains(MemoryFlags::SET) {
                for i in 0..m.contents_len() {
                    let (name, _) = m.content(i).unwrap();
                    assert!(l.blob(name).is_some(), "{}: blob {name}", f.display());
                }
            }
        }
    }
}

#[test]
fn nn_l0_0_contents() {
    let Some(root) = shared() else { return };
    let bytes =
        std::fs::read(root.join("nvdla-sw-regression/flatbufs/kmd/NN/NN_L0_0_fbuf")).unwrap();
    let l = Loadable::parse(&bytes).unwrap();
    let interfaces: Vec<_> = l.tasks().iter().map(|t| t.interface()).collect();
    assert_eq!(
        interfaces,
        [Interface::EMU1, Interface::DLA1, Interface::EMU1]
    );
    assert_eq!(l.memory().len(), 37);
    assert_eq!(l.addresses().len(), 37);
    assert_eq!(l.events().len(), 5);
    assert_eq!(l.relocs().len(), 4);
    let data = l.tensors().get(0).unwrap();
    assert_eq!(data.name(), "data");
    assert_eq!(data.dims(), [1, 1, 28, 28]);
    assert_eq!(data.data_type(), DataType::HALF);
    let prob = l.tensors().get(1).unwrap();
    assert_eq!(prob.name(), "prob");
    assert_eq!(prob.dims(), [1, 10, 1, 1]);
    assert_eq!(prob.data_type(), DataType::HALF);
    // The DLA task's address-list entry 0 holds its 40-byte network descriptor.
    let dla = l.tasks().get(1).unwrap();
    assert_eq!(dla.address_list().get(0), Some(25));
    let net = l.blob_at_address(25).unwrap();
    assert_eq!(net.name(), "task-1-addr0");
    assert_eq!(net.interface(), Interface::DLA1);
    assert_eq!(net.data().len(), 40);
    // Tasks are ordered by events: 0 signals 0, 1 waits on 1 and signals 2 ...
    assert_eq!(dla.pre_actions().iter().collect::<Vec<_>>(), [1]);
    assert_eq!(l.events().get(1).unwrap().op(), EventOp::WAIT);
    assert_eq!(l.events().get(2).unwrap().op(), EventOp::SIGNAL);
}

#[test]
fn rebuild_round_trip() {
    let Some(root) = shared() else { return };
    for f in loadables(&root) {
        let bytes = std::fs::read(&f).unwrap();
        let spec = builder::LoadableSpec::from_loadable(&Loadable::parse(&bytes).unwrap());
        let rebuilt = spec.build();
        let again = Loadable::parse(&rebuilt).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        assert_eq!(
            builder::LoadableSpec::from_loadable(&again),
            spec,
            "{}",
            f.display()
        );
        if std::env::var_os("NVDLA_DUMP_REBUILT").is_some() {
            let out = std::env::temp_dir().join(f.file_name().unwrap());
            std::fs::write(out, &rebuilt).unwrap();
        }
    }
}

#[test]
fn legacy_surface_lists_upgrade() {
    use nvdla_loadable::codec::Descriptor;
    use nvdla_loadable::dla;
    let Some(root) = shared() else { return };
    let mut upgraded = 0;
    for f in loadables(&root) {
        let bytes = std::fs::read(&f).unwrap();
        let l = Loadable::parse(&bytes).unwrap();
        for t in l
            .tasks()
            .iter()
            .filter(|t| t.interface() == Interface::DLA1)
        {
            let blob = |i: i16| {
                l.blob_at_address(t.address_list().get(i as usize).unwrap())
                    .unwrap()
            };
            let net_blob = blob(0);
            let v = net_blob.version();
            let net = dla::NetworkDesc::decode_from(net_blob.data()).unwrap();
            let deps = blob(net.dependency_graph_index).data();
            let mut surfs = blob(net.surface_desc_index).data().to_vec();
            let legacy = dla::Layout::for_version(v.major, v.minor) == dla::Layout::Legacy;
            let n = net.num_operations as usize;
            let before: Vec<_> = (0..n)
                .map(|i| {
                    let ty = dla::OpType::try_from(
                        dla::decode_at::<dla::CommonOpDesc>(deps, i)
                            .unwrap()
                            .op_type,
                    )
                    .unwrap();
                    dla::SurfaceDesc::decode_slot_layout(
                        dla::Layout::for_version(v.major, v.minor),
                        ty,
                        &surfs,
                        i,
                    )
                    .unwrap()
                })
                .collect();
            if legacy {
                upgrade::surfaces_to_current(deps, &mut surfs, n).unwrap();
                upgraded += 1;
            }
            for (i, b) in before.iter().enumerate() {
                let after = dla::SurfaceDesc::decode_slot(b.op_type(), &surfs, i).unwrap();
                assert_eq!(&after, b, "{} op {i}", f.display());
            }
        }
    }
    // The 15 regression loadables are legacy; the 4 LeNet builds are current.
    assert_eq!(upgraded, 15);
}

/// The data-cube layout is found from the descriptors' content: NVIDIA's regression
/// loadables are legacy (blob version 0.10/0.11), its compiler's LeNet builds current, and
/// ONNC's loadables legacy although their blobs say 1.3. The chosen reading has no faulty
/// cube in use and the other reading has some (the choice is never a tie broken by the
/// version, except for BDMA-only tasks, which have no cubes); every loadable passes
/// `cubes::check`.
#[test]
fn data_cube_layout_is_detected_from_content() {
    use nvdla_loadable::dla::{self, Layout};
    let Some(root) = shared() else { return };
    let mut files = loadables(&root);
    let onnc = root.join("third-party-loadables/onnc-tutorial");
    for name in ["test_Add", "test_Log", "test_Relu_Log_Relu"] {
        let f = onnc.join(name).join(format!("{name}.nvdla"));
        if f.is_file() {
            files.push(f);
        }
    }
    let mut tasks = 0;
    let mut mismatched = 0;
    for f in &files {
        let bytes = std::fs::read(f).unwrap();
        let l = Loadable::parse(&bytes).unwrap();
        let name = f.file_name().unwrap().to_string_lossy().to_string();
        let expected = if name.ends_with("_fbuf") || name.starts_with("test_") {
            Layout::Legacy
        } else {
            Layout::Current
        };
        for task in l.tasks().iter() {
            let Some(t) = cubes::dla_task(&l, &task) else {
                continue;
            };
            tasks += 1;
            assert_eq!(t.layout, expected, "{name}");
            mismatched += usize::from(t.layout != t.by_version);
            let count = task.address_list().len();
            let available = |i: usize| {
                let (m, offset, _) = l.resolve_address(task.address_list().get(i)?)?;
                m.size().checked_sub(offset)
            };
            let other = match t.layout {
                Layout::Legacy => Layout::Current,
                Layout::Current => Layout::Legacy,
            };
            assert_eq!(
                cubes::layout_faults(t.layout, &t.lists, count, &available),
                0,
                "{name}"
            );
            let wrong = cubes::layout_faults(other, &t.lists, count, &available);
            let bdma_only = (0..t.lists.count).all(|i| {
                dla::decode_at::<dla::CommonOpDesc>(t.lists.dependency_graph, i)
                    .is_ok_and(|d| d.op_type == dla::OpType::Bdma.raw())
            });
            // A BDMA task has no data cubes, so nothing tells the layouts apart (nor matters).
            assert!(
                wrong > 0 || bdma_only,
                "{name}: both readings are consistent"
            );
            eprintln!(
                "{name}: {:?} (version {:?}); {other:?} reading: {wrong} faulty cubes",
                t.layout, t.by_version
            );
        }
        cubes::check(&l).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    // At least one DLA task per regression and LeNet loadable.
    assert!(tasks >= 19, "{tasks} DLA tasks");
    if files.len() == 22 {
        // ONNC's test_Add (1 task) and test_Relu_Log_Relu (2) say 1.3 with legacy cubes.
        assert_eq!(mismatched, 3);
    }
}
