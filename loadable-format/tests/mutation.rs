//! Truncated and bit-flipped loadables are rejected or read without panics.
//!
//! Every mutant either fails `Loadable::parse` with an error, or parses, in
//! which case every accessor and the whole `inspect` summary must work on it.

use nvdla_loadable::*;
use std::path::Path;

/// A small deterministic PRNG (xorshift64*), so failures reproduce.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Parse, and when that succeeds read everything through the public API.
fn exercise(bytes: &[u8]) -> bool {
    let Ok(l) = Loadable::parse(bytes) else {
        return false;
    };
    let summary = inspect::summarize(&l);
    let _ = inspect::render_text(&summary);
    let _ = builder::LoadableSpec::from_loadable(&l).build();
    let _ = cubes::check(&l);
    true
}

fn mutate_file(bytes: &[u8], rounds: usize, seed: u64) -> (usize, usize) {
    let mut rng = Rng(seed);
    let mut accepted = 0;
    // Truncations at evenly spread and random lengths.
    for i in 0..rounds {
        let n = if i % 2 == 0 {
            bytes.len() * i / rounds
        } else {
            rng.below(bytes.len())
        };
        accepted += exercise(&bytes[..n]) as usize;
    }
    // Bit flips, biased towards the first 4 KiB where tables and vtables sit.
    let mut m = bytes.to_vec();
    for _ in 0..rounds {
        let span = if rng.below(4) == 0 {
            m.len()
        } else {
            m.len().min(4096)
        };
        let pos = rng.below(span);
        let bit = 1u8 << rng.below(8);
        m[pos] ^= bit;
        accepted += exercise(&m) as usize;
        m[pos] ^= bit;
    }
    // Random 32-bit overwrites (offsets and lengths going wild).
    for _ in 0..rounds {
        let pos = rng.below(m.len().min(4096).saturating_sub(4).max(1));
        let saved: [u8; 4] = m[pos..pos + 4].try_into().unwrap();
        let val = match rng.below(4) {
            0 => u32::MAX,
            1 => 0x8000_0000,
            2 => rng.next() as u32 & 0xffff,
            _ => rng.next() as u32,
        };
        m[pos..pos + 4].copy_from_slice(&val.to_le_bytes());
        accepted += exercise(&m) as usize;
        m[pos..pos + 4].copy_from_slice(&saved);
    }
    (3 * rounds, accepted)
}

#[test]
fn built_loadable_mutants_never_panic() {
    let mut spec = builder::LoadableSpec::new();
    let m = spec.add_memory(builder::MemorySpec {
        flags: (MemoryFlags::ALLOC | MemoryFlags::SET).bits(),
        size: 256,
        contents: vec![("net".into(), 0)],
        ..Default::default()
    });
    let a = spec.add_address(builder::AddressSpec {
        mem_id: m,
        offset: 0,
        size: 256,
    });
    spec.add_blob(builder::BlobSpec {
        name: "net".into(),
        interface: Interface::DLA1.raw(),
        data: vec![0; 40],
        ..Default::default()
    });
    let t = spec.add_task(builder::TaskSpec {
        interface: Interface::DLA1.raw(),
        address_list: vec![a],
        ..Default::default()
    });
    spec.submits.push(vec![t]);
    let bytes = spec.build();
    assert!(exercise(&bytes));
    let (tried, accepted) = mutate_file(&bytes, 3000, 1);
    eprintln!("built loadable: {tried} mutants, {accepted} still valid");
}

#[test]
fn shared_loadable_mutants_never_panic() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/nvdla-sw-regression");
    if !root.is_dir() {
        eprintln!("skipping: ../shared (ground-truth data) is absent");
        return;
    }
    for (i, rel) in [
        "flatbufs/kmd/BDMA/BDMA_L0_0_fbuf",
        "flatbufs/kmd/CONV/CONV_D_L0_0_small_fbuf",
        "flatbufs/kmd/NN/NN_L0_0_fbuf",
    ]
    .iter()
    .enumerate()
    {
        let bytes = std::fs::read(root.join(rel)).unwrap();
        let (tried, accepted) = mutate_file(&bytes, 700, 0x9E37_79B9 + i as u64);
        eprintln!("{rel}: {tried} mutants, {accepted} still valid");
    }
}
