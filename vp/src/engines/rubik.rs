//! RUBIK: data reshape between feature cubes and planes (hwarch "Rubik";
//! movement patterns from `cmod/rubik/NV_NVDLA_rbk.cpp`).
//!
//! - contract: reorders a deconvolution result. Input surface
//!   `(sy * stride_x + sx) * out_surfaces + s`, line `y`, atom `x` moves to output
//!   surface `s`, line `y * CONTRACT_STRIDE_1 + sy * DAOUT_LINE_STRIDE` (bytes), atom
//!   `x * stride_x + sx`. Whole atoms are copied.
//! - split: feature cube to one plane per channel: element (x, y, c) goes to
//!   `dst + c * planar_stride + y * line_stride + x * bpe`; each plane line is written in
//!   whole atoms, zero-filled past the cube width.
//! - merge: the inverse, planes to a feature cube (lanes past the channel count zero).

use super::{addr64, check_precision, CubeLayout, EngineError, Precision};
use crate::config::HwConfig;
use crate::mem::{Memory, RamType};
use crate::regs::{ids, Reg, RegFile};
use ids::rbk::D_MISC_CFG as RBK_MISC_CFG;

const BLOCK: &str = "RUBIK";

/// Runs one layer.
pub fn run(cfg: &HwConfig, rbk: &RegFile, mem: &mut Memory) -> Result<(), EngineError> {
    let misc = rbk.cur_as::<RBK_MISC_CFG::Register>(ids::rbk::D_MISC_CFG);
    let prec = Precision::from_field(misc.read(RBK_MISC_CFG::IN_PRECISION), BLOCK)?;
    check_precision(cfg, prec, BLOCK)?;
    let bpe = prec.bytes() as usize;
    let atom = cfg.hw.memory_atomic as usize;
    let epa = atom / bpe;
    let size0 = rbk.cur(ids::rbk::D_DATAIN_SIZE_0);
    let w = (size0 & 0x1fff) as usize + 1;
    let h = ids::rbk::D_DATAIN_SIZE_0::DATAIN_HEIGHT.read(size0) as usize + 1;
    let c_in = rbk.field(
        ids::rbk::D_DATAIN_SIZE_1,
        ids::rbk::D_DATAIN_SIZE_1::DATAIN_CHANNEL,
    ) as usize
        + 1;
    let c_out = rbk.field(
        ids::rbk::D_DATAOUT_SIZE_1,
        ids::rbk::D_DATAOUT_SIZE_1::DATAOUT_CHANNEL,
    ) as usize
        + 1;
    super::check_cube(BLOCK, w, h, c_in.max(c_out).next_multiple_of(32))?;
    let in_ram = RamType::from_field(rbk.cur(ids::rbk::D_DAIN_RAM_TYPE));
    let out_ram = RamType::from_field(rbk.cur(ids::rbk::D_DAOUT_RAM_TYPE));
    let src = addr64(
        rbk.cur(ids::rbk::D_DAIN_ADDR_HIGH),
        rbk.cur(ids::rbk::D_DAIN_ADDR_LOW),
    );
    let dst = addr64(
        rbk.cur(ids::rbk::D_DAOUT_ADDR_HIGH),
        rbk.cur(ids::rbk::D_DAOUT_ADDR_LOW),
    );
    let u = |n: Reg| u64::from(rbk.cur(n));
    match misc.read(RBK_MISC_CFG::RUBIK_MODE) {
        0 => {
            let ds = rbk.cur(ids::rbk::D_DECONV_STRIDE);
            let sx = (ds & 0x1f) as u64 + 1;
            let sy = ids::rbk::D_DECONV_STRIDE::DECONV_Y_STRIDE.read(ds) as u64 + 1;
            super::check_cube(
                BLOCK,
                w * sx as usize,
                h * sy as usize,
                c_out.next_multiple_of(32),
            )?;
            let surfaces = c_out.div_ceil(epa) as u64;
            let mut line = vec![0u8; w * atom];
            for s in 0..surfaces {
                for y in 0..h as u64 {
                    for iy in 0..sy {
                        for ix in 0..sx {
                            let si = (iy * sx + ix) * surfaces + s;
                            let a = src
                                .wrapping_add(si.wrapping_mul(u(ids::rbk::D_DAIN_SURF_STRIDE)))
                                .wrapping_add(y.wrapping_mul(u(ids::rbk::D_DAIN_LINE_STRIDE)));
                            mem.read(in_ram, a, &mut line)?;
                            let ob = dst
                                .wrapping_add(s.wrapping_mul(u(ids::rbk::D_DAOUT_SURF_STRIDE)))
                                .wrapping_add(y.wrapping_mul(u(ids::rbk::D_CONTRACT_STRIDE_1)))
                                .wrapping_add(iy.wrapping_mul(u(ids::rbk::D_DAOUT_LINE_STRIDE)));
                            for x in 0..w as u64 {
                                let o = ob.wrapping_add((x * sx + ix) * atom as u64);
                                let xs = x as usize * atom;
                                mem.write(out_ram, o, &line[xs..xs + atom])?;
                            }
                        }
                    }
                }
            }
            Ok(())
        }
        1 => {
            let cube = CubeLayout {
                ram: in_ram,
                base: src,
                line_stride: u(ids::rbk::D_DAIN_LINE_STRIDE),
                surf_stride: u(ids::rbk::D_DAIN_SURF_STRIDE),
                w,
                h,
                c: c_out,
                prec,
                atom: cfg.hw.memory_atomic,
            }
            .read(mem)?;
            let row_bytes = (w * bpe).max(atom).div_ceil(atom) * atom;
            let mut row = vec![0u8; row_bytes];
            for ch in 0..c_out {
                for y in 0..h {
                    row.fill(0);
                    for x in 0..w {
                        let v = cube[(ch * h + y) * w + x];
                        if bpe == 1 {
                            row[x] = v as u8;
                        } else {
                            row[x * 2..x * 2 + 2].copy_from_slice(&(v as u16).to_le_bytes());
                        }
                    }
                    let a = dst
                        .wrapping_add((ch as u64).wrapping_mul(u(ids::rbk::D_DAOUT_PLANAR_STRIDE)))
                        .wrapping_add((y as u64).wrapping_mul(u(ids::rbk::D_DAOUT_LINE_STRIDE)));
                    mem.write(out_ram, a, &row)?;
                }
            }
            Ok(())
        }
        2 => {
            let mut cube = vec![0i32; c_in * h * w];
            let mut row = vec![0u8; w * bpe];
            for ch in 0..c_in {
                for y in 0..h {
                    let a = src
                        .wrapping_add((ch as u64).wrapping_mul(u(ids::rbk::D_DAIN_PLANAR_STRIDE)))
                        .wrapping_add((y as u64).wrapping_mul(u(ids::rbk::D_DAIN_LINE_STRIDE)));
                    mem.read(in_ram, a, &mut row)?;
                    for x in 0..w {
                        cube[(ch * h + y) * w + x] = if bpe == 1 {
                            i32::from(row[x] as i8)
                        } else {
                            i32::from(u16::from_le_bytes([row[2 * x], row[2 * x + 1]]))
                        };
                    }
                }
            }
            CubeLayout {
                ram: out_ram,
                base: dst,
                line_stride: u(ids::rbk::D_DAOUT_LINE_STRIDE),
                surf_stride: u(ids::rbk::D_DAOUT_SURF_STRIDE),
                w,
                h,
                c: c_in,
                prec,
                atom: cfg.hw.memory_atomic,
            }
            .write(mem, &cube)
        }
        m => Err(EngineError::Config {
            block: BLOCK,
            msg: format!("reserved RUBIK_MODE {m}"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use crate::config::HwConfig;
    use crate::mem::RamType;
    use crate::regs::{ids, Reg};
    use crate::vp::Vp;

    fn w(vp: &mut Vp, r: Reg, v: u32) {
        let a = vp.addr(r).unwrap();
        vp.csb_write(a, v);
    }

    #[test]
    fn split_then_merge_round_trips() {
        let mut vp = Vp::new(HwConfig::new(&nvdla_hw::NV_FULL));
        // 3x2x40 int8 cube: 2 surfaces, line stride 0x60, surface stride 0x100
        let mut src = vec![0u8; 0x200];
        for s in 0..2 {
            for y in 0..2 {
                for x in 0..3 {
                    for k in 0..32 {
                        let ch = s * 32 + k;
                        if ch < 40 {
                            src[s * 0x100 + y * 0x60 + x * 32 + k] = (ch * 7 + y * 3 + x) as u8;
                        }
                    }
                }
            }
        }
        vp.mem.write(RamType::Dram, 0x1000_0000, &src).unwrap();
        w(&mut vp, ids::rbk::D_MISC_CFG, 1);
        w(&mut vp, ids::rbk::D_DAIN_RAM_TYPE, 1);
        w(&mut vp, ids::rbk::D_DAOUT_RAM_TYPE, 1);
        w(&mut vp, ids::rbk::D_DATAIN_SIZE_0, 2 | (1 << 16));
        w(&mut vp, ids::rbk::D_DATAIN_SIZE_1, 39);
        w(&mut vp, ids::rbk::D_DATAOUT_SIZE_1, 39);
        w(&mut vp, ids::rbk::D_DAIN_ADDR_LOW, 0x1000_0000);
        w(&mut vp, ids::rbk::D_DAIN_LINE_STRIDE, 0x60);
        w(&mut vp, ids::rbk::D_DAIN_SURF_STRIDE, 0x100);
        w(&mut vp, ids::rbk::D_DAOUT_ADDR_LOW, 0x2000_0000);
        w(&mut vp, ids::rbk::D_DAOUT_LINE_STRIDE, 0x20);
        w(&mut vp, ids::rbk::D_DAOUT_PLANAR_STRIDE, 0x40);
        w(&mut vp, ids::rbk::D_OP_ENABLE, 1);
        assert!(vp.irq_pending());
        // channel 33, line 1: 3 bytes then zero fill to the atom
        let row = vp
            .mem
            .read_vec(RamType::Dram, 0x2000_0000 + 33 * 0x40 + 0x20, 32)
            .unwrap();
        assert_eq!(
            &row[..4],
            &[
                (33 * 7 + 3) as u8,
                (33 * 7 + 4) as u8,
                (33 * 7 + 5) as u8,
                0
            ]
        );
        // merge back, programmed into the other register group (ping-pong)
        w(&mut vp, ids::rbk::S_POINTER, 1);
        w(&mut vp, ids::rbk::D_MISC_CFG, 2);
        w(&mut vp, ids::rbk::D_DAIN_RAM_TYPE, 1);
        w(&mut vp, ids::rbk::D_DAOUT_RAM_TYPE, 1);
        w(&mut vp, ids::rbk::D_DATAIN_SIZE_0, 2 | (1 << 16));
        w(&mut vp, ids::rbk::D_DATAIN_SIZE_1, 39);
        w(&mut vp, ids::rbk::D_DAIN_ADDR_LOW, 0x2000_0000);
        w(&mut vp, ids::rbk::D_DAIN_LINE_STRIDE, 0x20);
        w(&mut vp, ids::rbk::D_DAIN_PLANAR_STRIDE, 0x40);
        w(&mut vp, ids::rbk::D_DAOUT_ADDR_LOW, 0x3000_0000);
        w(&mut vp, ids::rbk::D_DAOUT_LINE_STRIDE, 0x60);
        w(&mut vp, ids::rbk::D_DAOUT_SURF_STRIDE, 0x100);
        w(&mut vp, ids::rbk::D_OP_ENABLE, 1);
        vp.run_pending();
        assert!(vp.fault().is_none());
        assert_eq!(
            vp.mem.read_vec(RamType::Dram, 0x3000_0000, 0x200).unwrap(),
            src
        );
    }
}
