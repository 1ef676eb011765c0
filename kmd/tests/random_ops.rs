//! Property-style test: random create / destroy / pin / submit sequences from several clients
//! never panic, keep every live buffer's device range inside the window and disjoint from the
//! others, and validate exactly the submits a simple model says are valid.

use std::collections::BTreeMap;

use nvdla_kmd::bo::{BoConfig, BoTable, ClientId};
use nvdla_kmd::iova::PAGE_SIZE;
use nvdla_kmd::submit::{validate, MemHandle, Reason, SubmitDesc, TaskDesc};
use nvdla_kmd::Error;

/// xorshift64*: small, deterministic, good enough to drive a test.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn check_invariants(t: &BoTable) {
    let cfg = t.config();
    let mut ranges: Vec<(u64, u64)> = t.iter().map(|(_, bo)| (bo.iova.0, bo.iova_len)).collect();
    ranges.sort_unstable();
    for &(start, len) in &ranges {
        assert_eq!(start % PAGE_SIZE, 0);
        assert!(len >= PAGE_SIZE && len % PAGE_SIZE == 0);
        assert!(start >= cfg.iova_base);
        assert!(start + len <= cfg.iova_base + cfg.iova_size);
    }
    for w in ranges.windows(2) {
        assert!(w[0].0 + w[0].1 <= w[1].0, "device ranges alias: {w:x?}");
    }
    for (_, bo) in t.iter() {
        assert!(bo.iova_len >= bo.size);
    }
}

#[test]
fn random_sequences() {
    for seed in 1..=40u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let mut t = BoTable::new(BoConfig {
            iova_base: 0x10_0000_0000,
            iova_size: 256 * PAGE_SIZE,
            max_bo_size: 40 * PAGE_SIZE,
            max_bos: 64,
            cvsram: None,
        })
        .unwrap();
        // Model: handle -> (owner, size, pins).
        let mut model: BTreeMap<u32, (ClientId, u64, u32)> = BTreeMap::new();
        let mut outcomes: BTreeMap<Result<(), Reason>, usize> = BTreeMap::new();
        for _ in 0..2000 {
            let client = ClientId(rng.below(3) as u32);
            match rng.below(10) {
                0..=2 => {
                    let size = match rng.below(4) {
                        0 => rng.below(16),
                        1 => rng.below(PAGE_SIZE * 2),
                        2 => rng.below(PAGE_SIZE * 48),
                        _ => rng.next(),
                    };
                    let flags = if rng.below(20) == 0 { 1 } else { 0 };
                    match t.create(client, size, flags) {
                        Ok(h) => {
                            assert!(size > 0 && size <= 40 * PAGE_SIZE && flags == 0);
                            assert!(model.insert(h.get(), (client, size, 0)).is_none());
                        }
                        Err(e) => assert!(matches!(
                            e,
                            Error::Invalid | Error::TooBig | Error::NoMemory | Error::Overflow
                        )),
                    }
                }
                3 | 4 => {
                    let h = pick_handle(&mut rng, &model);
                    let expect = match model.get(&h) {
                        Some(&(o, _, p)) if o == client => {
                            if p == 0 {
                                Ok(())
                            } else {
                                Err(Error::Busy)
                            }
                        }
                        _ => Err(Error::NoEntry),
                    };
                    assert_eq!(t.destroy(client, h).map(|_| ()), expect);
                    if expect.is_ok() {
                        model.remove(&h);
                    }
                }
                5 => {
                    let h = pick_handle(&mut rng, &model);
                    let r = t.pin(client, h);
                    match model.get_mut(&h) {
                        Some((o, _, p)) if *o == client => {
                            r.unwrap();
                            *p += 1;
                        }
                        _ => assert_eq!(r, Err(Error::NoEntry)),
                    }
                }
                6 => {
                    let h = pick_handle(&mut rng, &model);
                    let r = t.unpin(client, h);
                    match model.get_mut(&h) {
                        Some((o, _, p)) if *o == client && *p > 0 => {
                            r.unwrap();
                            *p -= 1;
                        }
                        Some((o, _, _)) if *o == client => assert_eq!(r, Err(Error::Invalid)),
                        _ => assert_eq!(r, Err(Error::NoEntry)),
                    }
                }
                _ => {
                    *outcomes
                        .entry(random_submit(&mut rng, &t, client, &model))
                        .or_default() += 1
                }
            }
            check_invariants(&t);
            assert_eq!(t.len(), model.len());
        }
        // The sequence must exercise acceptance and every modelled rejection.
        assert!(outcomes.len() >= 6, "seed {seed}: {outcomes:?}");
        assert!(
            outcomes.get(&Ok(())).copied().unwrap_or(0) >= 10,
            "seed {seed}: {outcomes:?}"
        );
    }
}

fn pick_handle(rng: &mut Rng, model: &BTreeMap<u32, (ClientId, u64, u32)>) -> u32 {
    if model.is_empty() || rng.below(8) == 0 {
        return rng.below(300) as u32;
    }
    let i = rng.below(model.len() as u64) as usize;
    *model.keys().nth(i).unwrap()
}

/// Mostly one of `client`'s own live handles (a valid submit needs them), else anything.
fn pick_own_handle(
    rng: &mut Rng,
    model: &BTreeMap<u32, (ClientId, u64, u32)>,
    client: ClientId,
) -> u32 {
    let own: Vec<u32> = model
        .iter()
        .filter(|(_, m)| m.0 == client)
        .map(|(&h, _)| h)
        .collect();
    if own.is_empty() || rng.below(16) == 0 {
        return pick_handle(rng, model);
    }
    own[rng.below(own.len() as u64) as usize]
}

fn random_submit(
    rng: &mut Rng,
    t: &BoTable,
    client: ClientId,
    model: &BTreeMap<u32, (ClientId, u64, u32)>,
) -> Result<(), Reason> {
    let ntasks = if rng.below(16) == 0 {
        0
    } else {
        1 + rng.below(3) as usize
    };
    let lists: Vec<Vec<MemHandle>> = (0..ntasks)
        .map(|_| {
            let len = if rng.below(16) == 0 {
                0
            } else {
                1 + rng.below(4)
            };
            (0..len)
                .map(|_| {
                    let handle = pick_own_handle(rng, model, client);
                    let size = model.get(&handle).map_or(1, |m| m.1);
                    let offset = match rng.below(24) {
                        0 => size,
                        1 => rng.next(),
                        _ => rng.below(size),
                    };
                    let reserved = u32::from(rng.below(80) == 0);
                    MemHandle {
                        handle,
                        reserved,
                        offset,
                    }
                })
                .collect()
        })
        .collect();
    let tasks: Vec<TaskDesc<'_>> = lists
        .iter()
        .map(|l| TaskDesc {
            timeout: rng.next() as u32,
            addresses: l,
        })
        .collect();
    let desc = SubmitDesc {
        flags: if rng.below(20) == 0 { 2 } else { 1 },
        version: 0,
        tasks: &tasks,
    };
    // The model's verdict, in the documented order.
    let all = || lists.iter().flatten();
    let expected = if ntasks == 0 {
        Err(Reason::NoTasks)
    } else if desc.flags == 2 {
        Err(Reason::UnknownFlags)
    } else if lists.iter().any(|l| l.is_empty()) {
        Err(Reason::NoAddresses)
    } else if all().any(|a| a.reserved != 0) {
        Err(Reason::ReservedNonZero)
    } else if all().any(|a| !matches!(model.get(&a.handle), Some(m) if m.0 == client)) {
        Err(Reason::UnknownHandle)
    } else if all().any(|a| a.offset >= model[&a.handle].1) {
        Err(Reason::OffsetOutOfRange)
    } else {
        Ok(())
    };
    match validate(t, client, &desc) {
        Ok(v) => {
            assert_eq!(expected, Ok(()));
            for (task, list) in v.tasks.iter().zip(&lists) {
                for (addr, a) in task.addresses.iter().zip(list) {
                    let bo = t.lookup(client, a.handle).unwrap();
                    assert_eq!(addr.addr.0, bo.iova.0 + a.offset);
                    assert_eq!(addr.addr.0 + addr.len, bo.iova.0 + bo.size);
                    assert!(addr.len > 0);
                }
            }
        }
        Err(e) => assert_eq!(Err(e.reason), expected, "{e}"),
    }
    expected
}
