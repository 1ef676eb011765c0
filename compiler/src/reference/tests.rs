//! Tests of the reference interpreter: every op on tiny graphs with hand-computed values,
//! properties (deconvolution is the adjoint of convolution, a full-size convolution is a
//! fully connected layer), and errors. Also the helpers the pass tests share.

use super::run;
use crate::error::CompileError;
use crate::ir::{
    Activation, Conv, EltwiseKind, Graph, Node, Op, Pool, PoolKind, Shape, TensorId, Weights,
    Window,
};

/// A deterministic xorshift64* generator (no dependencies).
pub(crate) struct Rng(u64);

impl Rng {
    /// A generator from a non-zero seed.
    pub(crate) fn new(seed: u64) -> Self {
        Self(seed.max(1))
    }
    /// The next 64 random bits.
    pub(crate) fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// Uniform in `[lo, hi)`.
    pub(crate) fn uniform(&mut self, lo: f32, hi: f32) -> f32 {
        let u = (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32;
        lo + (hi - lo) * u
    }
    /// `n` values uniform in `[-1, 1)`.
    pub(crate) fn vec(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| self.uniform(-1.0, 1.0)).collect()
    }
    /// `n` values uniform in `[lo, hi)`.
    pub(crate) fn vec_in(&mut self, n: usize, lo: f32, hi: f32) -> Vec<f32> {
        (0..n).map(|_| self.uniform(lo, hi)).collect()
    }
}

/// A node with the given op reading `inputs` and writing `outputs`.
pub(crate) fn node(name: &str, op: Op, inputs: &[TensorId], outputs: &[TensorId]) -> Node {
    Node {
        name: name.into(),
        source_type: op.name().into(),
        op,
        inputs: inputs.to_vec(),
        outputs: outputs.to_vec(),
    }
}

/// A window with `kernel`, `stride`, `pad [t, l, b, r]` and `dilation`.
pub(crate) fn window(
    kernel: [usize; 2],
    stride: [usize; 2],
    pad: [usize; 4],
    dilation: [usize; 2],
) -> Window {
    Window {
        kernel,
        stride,
        pad,
        dilation,
    }
}

/// Convolution parameters.
pub(crate) fn conv_params(
    win: Window,
    groups: usize,
    out_channels: usize,
    weight: Vec<f32>,
    weight_dims: [usize; 4],
    bias: Option<Vec<f32>>,
) -> Conv {
    Conv {
        window: win,
        groups,
        out_channels,
        weight: Weights::new(weight_dims.to_vec(), weight).expect("weight dims"),
        bias: bias.map(Weights::vector),
    }
}

/// A graph of one node `op` over inputs of shapes `ins`, output `out`; tensors are the
/// inputs in order (`x0`, `x1`, ...) then `y`.
pub(crate) fn single(op: Op, ins: &[Shape], out: Shape) -> Graph {
    let mut g = Graph {
        name: "single".into(),
        ..Graph::default()
    };
    let inputs: Vec<TensorId> = ins
        .iter()
        .enumerate()
        .map(|(i, &s)| g.add_tensor(format!("x{i}"), s))
        .collect();
    let y = g.add_tensor("y", out);
    g.add_node(node("op", op, &inputs, &[y]));
    g.inputs = inputs;
    g.outputs = vec![y];
    g
}

/// Evaluate a one-node graph; the output's value.
pub(crate) fn eval1(op: Op, ins: &[(Shape, Vec<f32>)], out: Shape) -> crate::Result<Vec<f32>> {
    let shapes: Vec<Shape> = ins.iter().map(|(s, _)| *s).collect();
    let g = single(op, &shapes, out);
    let values: Vec<(TensorId, Vec<f32>)> = ins
        .iter()
        .enumerate()
        .map(|(i, (_, v))| (TensorId(i), v.clone()))
        .collect();
    let mut all = run(&g, &values)?;
    Ok(all.swap_remove(ins.len()))
}

/// Assert `got` equals `want` within `tol * max(1, |want|)` element-wise.
#[track_caller]
pub(crate) fn assert_close(got: &[f32], want: &[f32], tol: f32) {
    assert_eq!(got.len(), want.len(), "lengths differ: {got:?} vs {want:?}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol * w.abs().max(1.0),
            "element {i}: got {g}, want {w}\n got {got:?}\nwant {want:?}"
        );
    }
}

/// `1, 2, ..., n` as f32.
fn iota(n: usize) -> Vec<f32> {
    (1..=n).map(|v| v as f32).collect()
}

fn s(n: usize, c: usize, h: usize, w: usize) -> Shape {
    Shape::new(n, c, h, w)
}

/// A one-input convolution evaluated.
fn conv_eval(x: Vec<f32>, xs: Shape, p: Conv, ys: Shape) -> Vec<f32> {
    eval1(Op::Conv(p), &[(xs, x)], ys).unwrap()
}

// ---------------------------------------------------------------- convolution

#[test]
fn conv_valid_3x3_with_bias() {
    // x[i][j] - x[i+1][j+1] = -4 everywhere, plus 0.5.
    let p = conv_params(
        window([2, 2], [1, 1], [0; 4], [1, 1]),
        1,
        1,
        vec![1.0, 0.0, 0.0, -1.0],
        [1, 1, 2, 2],
        Some(vec![0.5]),
    );
    let y = conv_eval(iota(9), s(1, 1, 3, 3), p, s(1, 1, 2, 2));
    assert_eq!(y, vec![-3.5; 4]);
}

#[test]
fn conv_padding_same() {
    let p = conv_params(
        window([3, 3], [1, 1], [1; 4], [1, 1]),
        1,
        1,
        vec![1.0; 9],
        [1, 1, 3, 3],
        None,
    );
    let y = conv_eval(iota(9), s(1, 1, 3, 3), p, s(1, 1, 3, 3));
    assert_eq!(
        y,
        vec![12.0, 21.0, 16.0, 27.0, 45.0, 33.0, 24.0, 39.0, 28.0]
    );
}

#[test]
fn conv_stride_2_with_padding() {
    let p = conv_params(
        window([3, 3], [2, 2], [1; 4], [1, 1]),
        1,
        1,
        vec![1.0; 9],
        [1, 1, 3, 3],
        None,
    );
    let y = conv_eval(iota(9), s(1, 1, 3, 3), p, s(1, 1, 2, 2));
    assert_eq!(y, vec![12.0, 16.0, 24.0, 28.0]);
}

#[test]
fn conv_asymmetric_padding() {
    // pad top 1, left 0, bottom 0, right 1.
    let p = conv_params(
        window([2, 2], [1, 1], [1, 0, 0, 1], [1, 1]),
        1,
        1,
        vec![1.0; 4],
        [1, 1, 2, 2],
        None,
    );
    let y = conv_eval(iota(9), s(1, 1, 3, 3), p, s(1, 1, 3, 3));
    assert_eq!(y, vec![3.0, 5.0, 3.0, 12.0, 16.0, 9.0, 24.0, 28.0, 15.0]);
}

#[test]
fn conv_dilation_2() {
    // x[i][j] = 5i + j; taps (0,0), (0,2), (2,0), (2,2): 20i + 4j + 24.
    let x: Vec<f32> = (0..25).map(|v| v as f32).collect();
    let p = conv_params(
        window([2, 2], [1, 1], [0; 4], [2, 2]),
        1,
        1,
        vec![1.0; 4],
        [1, 1, 2, 2],
        None,
    );
    let y = conv_eval(x, s(1, 1, 5, 5), p, s(1, 1, 3, 3));
    let want: Vec<f32> = (0..3)
        .flat_map(|i| (0..3).map(move |j| (20 * i + 4 * j + 24) as f32))
        .collect();
    assert_eq!(y, want);
}

#[test]
fn conv_groups_2() {
    // Channels [1,2,3,4] and [10,20,30,40]; 1x1 weights 1, 2 (group 0) and 3, -1 (group 1).
    let x = vec![1.0, 2.0, 3.0, 4.0, 10.0, 20.0, 30.0, 40.0];
    let p = conv_params(
        window([1, 1], [1, 1], [0; 4], [1, 1]),
        2,
        4,
        vec![1.0, 2.0, 3.0, -1.0],
        [4, 1, 1, 1],
        None,
    );
    let y = conv_eval(x, s(1, 2, 2, 2), p, s(1, 4, 2, 2));
    assert_eq!(
        y,
        vec![
            1.0, 2.0, 3.0, 4.0, 2.0, 4.0, 6.0, 8.0, 30.0, 60.0, 90.0, 120.0, -10.0, -20.0, -30.0,
            -40.0
        ]
    );
}

#[test]
fn conv_depthwise() {
    // Channel 0 = 1..9 through a centre tap (identity); channel 1 = ones through a 3x3 box:
    // the number of in-image neighbours (4 at corners, 6 at edges, 9 in the middle).
    let mut x = iota(9);
    x.extend([1.0; 9]);
    let mut w = vec![0.0; 9];
    w[4] = 1.0;
    w.extend([1.0; 9]);
    let p = conv_params(
        window([3, 3], [1, 1], [1; 4], [1, 1]),
        2,
        2,
        w,
        [2, 1, 3, 3],
        Some(vec![0.0, 0.5]),
    );
    let y = conv_eval(x, s(1, 2, 3, 3), p, s(1, 2, 3, 3));
    let mut want = iota(9);
    want.extend([4.5, 6.5, 4.5, 6.5, 9.5, 6.5, 4.5, 6.5, 4.5]);
    assert_eq!(y, want);
}

#[test]
fn conv_batch_items_are_independent() {
    let mut rng = Rng::new(7);
    let item = rng.vec(2 * 4 * 4);
    let mut x = item.clone();
    x.extend(item.iter().map(|v| v * 2.0));
    let w = rng.vec(3 * 2 * 3 * 3);
    let p = conv_params(
        window([3, 3], [1, 1], [0; 4], [1, 1]),
        1,
        3,
        w,
        [3, 2, 3, 3],
        None,
    );
    let y = conv_eval(x, s(2, 2, 4, 4), p, s(2, 3, 2, 2));
    let (a, b) = y.split_at(12);
    let doubled: Vec<f32> = a.iter().map(|v| v * 2.0).collect();
    assert_close(b, &doubled, 1e-6);
}

#[test]
fn conv_with_full_kernel_is_fully_connected() {
    let mut rng = Rng::new(11);
    let xs = s(2, 3, 4, 5);
    let x = rng.vec(xs.elements());
    let w = rng.vec(6 * xs.per_item());
    let b = rng.vec(6);
    let p = conv_params(
        window([4, 5], [1, 1], [0; 4], [1, 1]),
        1,
        6,
        w.clone(),
        [6, 3, 4, 5],
        Some(b.clone()),
    );
    let via_conv = conv_eval(x.clone(), xs, p, s(2, 6, 1, 1));
    let fc = Op::FullyConnected {
        weight: Weights::new(vec![6, 60], w).unwrap(),
        bias: Some(Weights::vector(b)),
    };
    let via_fc = eval1(fc, &[(xs, x)], s(2, 6, 1, 1)).unwrap();
    assert_close(&via_conv, &via_fc, 1e-6);
}

#[test]
fn conv_rejects_output_shape_that_does_not_fit() {
    let p = conv_params(
        window([3, 3], [1, 1], [0; 4], [1, 1]),
        1,
        1,
        vec![1.0; 9],
        [1, 1, 3, 3],
        None,
    );
    let err = eval1(
        Op::Conv(p),
        &[(s(1, 1, 5, 5), vec![0.0; 25])],
        s(1, 1, 5, 5),
    )
    .unwrap_err();
    assert!(
        matches!(&err, CompileError::Layer { layer, .. } if layer == "op"),
        "{err}"
    );
    assert!(err.to_string().contains("gives 3x3"), "{err}");
}

// ---------------------------------------------------------------- deconvolution

#[test]
fn deconv_stride_2_no_overlap() {
    // Kernel 2x2 stride 2: every input value tiles a 2x2 block scaled by the kernel.
    let p = conv_params(
        window([2, 2], [2, 2], [0; 4], [1, 1]),
        1,
        1,
        vec![1.0, 2.0, 3.0, 4.0],
        [1, 1, 2, 2],
        None,
    );
    let y = eval1(Op::Deconv(p), &[(s(1, 1, 2, 2), iota(4))], s(1, 1, 4, 4)).unwrap();
    #[rustfmt::skip]
    let want = vec![
        1.0, 2.0, 2.0, 4.0,
        3.0, 4.0, 6.0, 8.0,
        3.0, 6.0, 4.0, 8.0,
        9.0, 12.0, 12.0, 16.0,
    ];
    assert_eq!(y, want);
}

#[test]
fn deconv_stride_2_overlapping_kernel() {
    // Kernel 3x3 of ones, stride 2: (2-1)*2 + 3 = 5.
    let p = conv_params(
        window([3, 3], [2, 2], [0; 4], [1, 1]),
        1,
        1,
        vec![1.0; 9],
        [1, 1, 3, 3],
        Some(vec![0.5]),
    );
    let y = eval1(Op::Deconv(p), &[(s(1, 1, 2, 2), iota(4))], s(1, 1, 5, 5)).unwrap();
    #[rustfmt::skip]
    let want: Vec<f32> = [
        1.0, 1.0, 3.0, 2.0, 2.0,
        1.0, 1.0, 3.0, 2.0, 2.0,
        4.0, 4.0, 10.0, 6.0, 6.0,
        3.0, 3.0, 7.0, 4.0, 4.0,
        3.0, 3.0, 7.0, 4.0, 4.0,
    ].iter().map(|v| v + 0.5).collect();
    assert_eq!(y, want);
}

#[test]
fn deconv_padding_crops() {
    // Same with pad 1: (2-1)*2 - 2 + 3 = 3, the centre of the 5x5 result.
    let p = conv_params(
        window([3, 3], [2, 2], [1; 4], [1, 1]),
        1,
        1,
        vec![1.0; 9],
        [1, 1, 3, 3],
        None,
    );
    let y = eval1(Op::Deconv(p), &[(s(1, 1, 2, 2), iota(4))], s(1, 1, 3, 3)).unwrap();
    assert_eq!(y, vec![1.0, 3.0, 2.0, 4.0, 10.0, 6.0, 3.0, 7.0, 4.0]);
}

#[test]
fn deconv_weight_layout_is_input_channel_major() {
    // weight [C=2, K=2, 1, 1] = [[1, 2], [3, 4]]: y0 = 1*x0 + 3*x1, y1 = 2*x0 + 4*x1.
    let p = conv_params(
        window([1, 1], [1, 1], [0; 4], [1, 1]),
        1,
        2,
        vec![1.0, 2.0, 3.0, 4.0],
        [2, 2, 1, 1],
        None,
    );
    let y = eval1(
        Op::Deconv(p),
        &[(s(1, 2, 1, 1), vec![1.0, 10.0])],
        s(1, 2, 1, 1),
    )
    .unwrap();
    assert_eq!(y, vec![31.0, 42.0]);
}

#[test]
fn deconv_larger_output_gets_bias_only_where_nothing_lands() {
    // ONNX output_padding: a 3x3 output from a 1x1 input through a 2x2 kernel.
    let p = conv_params(
        window([2, 2], [2, 2], [0; 4], [1, 1]),
        1,
        1,
        vec![1.0; 4],
        [1, 1, 2, 2],
        Some(vec![0.25]),
    );
    let y = eval1(Op::Deconv(p), &[(s(1, 1, 1, 1), vec![2.0])], s(1, 1, 3, 3)).unwrap();
    assert_eq!(
        y,
        vec![2.25, 2.25, 0.25, 2.25, 2.25, 0.25, 0.25, 0.25, 0.25]
    );
}

/// `<conv(x), y> == <x, deconv(y)>` for the same weight array: deconvolution is the
/// adjoint of convolution, for any stride, dilation, padding and grouping.
#[test]
fn deconv_is_the_adjoint_of_conv() {
    let mut rng = Rng::new(3);
    #[allow(clippy::type_complexity)]
    let cases: &[(
        [usize; 2],
        [usize; 2],
        [usize; 4],
        [usize; 2],
        usize,
        usize,
        usize,
        [usize; 2],
    )] = &[
        // kernel, stride, pad, dilation, groups, C, K, input h/w
        ([3, 3], [1, 1], [0; 4], [1, 1], 1, 2, 3, [5, 6]),
        ([3, 3], [2, 2], [1, 1, 1, 1], [1, 1], 1, 3, 2, [7, 7]),
        ([3, 2], [2, 3], [1, 0, 2, 1], [1, 1], 1, 2, 2, [8, 9]),
        ([3, 3], [1, 2], [2, 2, 2, 2], [2, 2], 2, 4, 6, [7, 8]),
        ([3, 3], [2, 2], [1, 1, 1, 1], [1, 1], 4, 4, 4, [6, 6]),
    ];
    for &(kernel, stride, pad, dilation, g, c, k, [h, w]) in cases {
        let win = window(kernel, stride, pad, dilation);
        let oh = (h + pad[0] + pad[2] - (dilation[0] * (kernel[0] - 1) + 1)) / stride[0] + 1;
        let ow = (w + pad[1] + pad[3] - (dilation[1] * (kernel[1] - 1) + 1)) / stride[1] + 1;
        let weight = rng.vec(k * (c / g) * kernel[0] * kernel[1]);
        let dims = [k, c / g, kernel[0], kernel[1]];
        let xs = s(1, c, h, w);
        let ys = s(1, k, oh, ow);
        let x = rng.vec(xs.elements());
        let y = rng.vec(ys.elements());
        let cx = conv_eval(
            x.clone(),
            xs,
            conv_params(win, g, k, weight.clone(), dims, None),
            ys,
        );
        // The deconvolution maps K channels back to C: its weight [K, C/g, kh, kw] is the
        // same array.
        let dy = eval1(
            Op::Deconv(conv_params(win, g, c, weight, dims, None)),
            &[(ys, y.clone())],
            xs,
        )
        .unwrap();
        let lhs: f64 = cx
            .iter()
            .zip(&y)
            .map(|(a, b)| f64::from(*a) * f64::from(*b))
            .sum();
        let rhs: f64 = x
            .iter()
            .zip(&dy)
            .map(|(a, b)| f64::from(*a) * f64::from(*b))
            .sum();
        assert!(
            (lhs - rhs).abs() < 1e-4 * lhs.abs().max(1.0),
            "{kernel:?} {stride:?} {pad:?} g{g}: {lhs} vs {rhs}"
        );
    }
}

// ---------------------------------------------------------------- fully connected

#[test]
fn fully_connected_flattens_chw_per_item() {
    let fc = Op::FullyConnected {
        weight: Weights::new(vec![2, 4], vec![1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0]).unwrap(),
        bias: Some(Weights::vector(vec![0.5, -1.0])),
    };
    let x = vec![1.0, 2.0, 3.0, 4.0, -1.0, -2.0, -3.0, -4.0];
    let y = eval1(fc, &[(s(2, 2, 1, 2), x)], s(2, 2, 1, 1)).unwrap();
    assert_eq!(y, vec![1.5, 9.0, -0.5, -11.0]);
}

// ---------------------------------------------------------------- pooling

fn pool_op(kind: PoolKind, k: usize, st: usize, pad: usize, ceil: bool, include_pad: bool) -> Op {
    Op::Pool(Pool {
        kind,
        window: window([k, k], [st, st], [pad; 4], [1, 1]),
        ceil_mode: ceil,
        count_include_pad: include_pad,
    })
}

#[test]
fn max_pool_2x2() {
    let x: Vec<f32> = (0..16).map(|v| ((v * 7) % 16) as f32).collect();
    // 0 7 14 5 / 12 3 10 1 / 8 15 6 13 / 4 11 2 9
    let y = eval1(
        pool_op(PoolKind::Max, 2, 2, 0, false, true),
        &[(s(1, 1, 4, 4), x)],
        s(1, 1, 2, 2),
    )
    .unwrap();
    assert_eq!(y, vec![12.0, 14.0, 15.0, 13.0]);
}

#[test]
fn max_pool_ignores_padding() {
    let x: Vec<f32> = iota(9).iter().map(|v| -v).collect();
    let y = eval1(
        pool_op(PoolKind::Max, 2, 2, 1, false, true),
        &[(s(1, 1, 3, 3), x)],
        s(1, 1, 2, 2),
    )
    .unwrap();
    assert_eq!(y, vec![-1.0, -2.0, -4.0, -5.0]);
}

#[test]
fn avg_pool_ceil_mode_caffe_divisor() {
    // 4x4 input 1..16, kernel 3, stride 2, pad 1, ceil: 3x3 output. Row/column windows
    // [-1,2) [1,4) [3,5): divisors (padded window) 3, 3, 2; valid extents 2, 3, 1.
    let x = iota(16);
    let xs = s(1, 1, 4, 4);
    let at = |r: usize, c: usize| x[r * 4 + c];
    let sum = |rows: std::ops::Range<usize>, cols: std::ops::Range<usize>| -> f32 {
        rows.flat_map(|r| cols.clone().map(move |c| (r, c)))
            .map(|(r, c)| at(r, c))
            .sum()
    };
    let spans = [(0..2, 3.0, 2.0), (1..4, 3.0, 3.0), (3..4, 2.0, 1.0)];
    let mut with_pad = Vec::new();
    let mut valid_only = Vec::new();
    for (rows, rdiv, rvalid) in &spans {
        for (cols, cdiv, cvalid) in &spans {
            let t = sum(rows.clone(), cols.clone());
            with_pad.push(t / (rdiv * cdiv));
            valid_only.push(t / (rvalid * cvalid));
        }
    }
    // Spot values computed by hand.
    assert_eq!(with_pad[0], 14.0 / 9.0);
    assert_eq!(with_pad[2], 12.0 / 6.0);
    assert_eq!(with_pad[4], 99.0 / 9.0);
    assert_eq!(with_pad[8], 16.0 / 4.0);
    assert_eq!(valid_only[8], 16.0);
    let y = eval1(
        pool_op(PoolKind::Avg, 3, 2, 1, true, true),
        &[(xs, x.clone())],
        s(1, 1, 3, 3),
    )
    .unwrap();
    assert_close(&y, &with_pad, 1e-7);
    let y = eval1(
        pool_op(PoolKind::Avg, 3, 2, 1, true, false),
        &[(xs, x.clone())],
        s(1, 1, 3, 3),
    )
    .unwrap();
    assert_close(&y, &valid_only, 1e-7);
    let y = eval1(
        pool_op(PoolKind::Max, 3, 2, 1, true, true),
        &[(xs, x)],
        s(1, 1, 3, 3),
    )
    .unwrap();
    assert_eq!(y, vec![6.0, 8.0, 8.0, 14.0, 16.0, 16.0, 14.0, 16.0, 16.0]);
}

#[test]
fn avg_pool_ceil_mode_without_padding_divides_by_clipped_window() {
    // 3x3 input 1..9, kernel 2, stride 2, ceil: windows at the right/bottom edge hang over
    // the (unpadded) input and Caffe divides by the part inside it.
    let y = eval1(
        pool_op(PoolKind::Avg, 2, 2, 0, true, true),
        &[(s(1, 1, 3, 3), iota(9))],
        s(1, 1, 2, 2),
    )
    .unwrap();
    assert_eq!(y, vec![3.0, 4.5, 7.5, 9.0]);
}

#[test]
fn global_avg_pool_per_channel() {
    let mut x = iota(4);
    x.extend([10.0, 10.0, 20.0, 20.0]);
    let y = eval1(
        pool_op(PoolKind::Avg, 2, 1, 0, false, true),
        &[(s(1, 2, 2, 2), x)],
        s(1, 2, 1, 1),
    )
    .unwrap();
    assert_eq!(y, vec![2.5, 15.0]);
}

#[test]
fn pool_window_entirely_outside_is_an_error() {
    // A recorded output one row/column too large for the input.
    let err = eval1(
        pool_op(PoolKind::Max, 2, 2, 0, false, true),
        &[(s(1, 1, 4, 4), vec![0.0; 16])],
        s(1, 1, 3, 3),
    )
    .unwrap_err();
    assert!(err.to_string().contains("covers no input element"), "{err}");
}

// ---------------------------------------------------------------- element-wise

#[test]
fn activations() {
    let xs = s(1, 2, 1, 2);
    let x = vec![-2.0, 3.0, -4.0, 0.5];
    let act = |a: Activation| eval1(Op::Activation(a), &[(xs, x.clone())], xs).unwrap();
    assert_eq!(
        act(Activation::Relu { slope: 0.0 }),
        vec![0.0, 3.0, 0.0, 0.5]
    );
    assert_eq!(
        act(Activation::Relu { slope: 0.25 }),
        vec![-0.5, 3.0, -1.0, 0.5]
    );
    let prelu = Activation::PRelu {
        slopes: Weights::vector(vec![0.5, 0.25]),
    };
    assert_eq!(act(prelu), vec![-1.0, 3.0, -1.0, 0.5]);
    let shared = Activation::PRelu {
        slopes: Weights::vector(vec![0.5]),
    };
    assert_eq!(act(shared), vec![-1.0, 3.0, -2.0, 0.5]);
    assert_eq!(
        act(Activation::Clip { lo: -1.0, hi: 2.0 }),
        vec![-1.0, 2.0, -1.0, 0.5]
    );
    let sig = eval1(
        Op::Activation(Activation::Sigmoid),
        &[(s(1, 1, 1, 3), vec![0.0, 3f32.ln(), -3f32.ln()])],
        s(1, 1, 1, 3),
    )
    .unwrap();
    assert_close(&sig, &[0.5, 0.75, 0.25], 1e-7);
    let th = eval1(
        Op::Activation(Activation::Tanh),
        &[(s(1, 1, 1, 3), vec![0.0, 0.5f32.atanh(), -2.0])],
        s(1, 1, 1, 3),
    )
    .unwrap();
    assert_close(&th, &[0.0, 0.5, -2f32.tanh()], 1e-7);
}

#[test]
fn channel_affine_per_channel_and_shared() {
    let xs = s(2, 2, 1, 2);
    let x = iota(8);
    let op = Op::ChannelAffine {
        scale: Some(Weights::vector(vec![2.0, -1.0])),
        bias: Some(Weights::vector(vec![0.5])),
    };
    let y = eval1(op, &[(xs, x.clone())], xs).unwrap();
    assert_eq!(y, vec![2.5, 4.5, -2.5, -3.5, 10.5, 12.5, -6.5, -7.5]);
    let bias_only = Op::ChannelAffine {
        scale: None,
        bias: Some(Weights::vector(vec![1.0, 2.0])),
    };
    let y = eval1(bias_only, &[(xs, x)], xs).unwrap();
    assert_eq!(y, vec![2.0, 3.0, 5.0, 6.0, 6.0, 7.0, 9.0, 10.0]);
}

#[test]
fn batch_norm() {
    let xs = s(1, 2, 1, 2);
    let op = Op::BatchNorm {
        mean: Weights::vector(vec![1.0, -2.0]),
        var: Weights::vector(vec![4.0 - 1e-5, 0.25 - 1e-5]),
        eps: 1e-5,
    };
    let y = eval1(op, &[(xs, vec![3.0, -1.0, -2.0, 0.0])], xs).unwrap();
    assert_close(&y, &[1.0, -1.0, 0.0, 4.0], 1e-6);
}

#[test]
fn power() {
    let xs = s(1, 1, 1, 3);
    let op = |power, scale, shift| Op::Power {
        power,
        scale,
        shift,
    };
    let y = eval1(op(2.0, 3.0, 2.0), &[(xs, vec![0.0, 1.0, -1.0])], xs).unwrap();
    assert_eq!(y, vec![4.0, 25.0, 1.0]);
    let y = eval1(op(0.5, 1.0, 0.0), &[(xs, vec![4.0, 9.0, 0.25])], xs).unwrap();
    assert_eq!(y, vec![2.0, 3.0, 0.5]);
    let y = eval1(op(1.0, 0.5, -1.0), &[(xs, vec![4.0, 9.0, 0.25])], xs).unwrap();
    assert_eq!(y, vec![1.0, 3.5, -0.875]);
}

#[test]
fn eltwise_sum_prod_max() {
    let xs = s(1, 1, 1, 3);
    let ins = vec![
        (xs, vec![1.0, 2.0, 3.0]),
        (xs, vec![4.0, -5.0, 6.0]),
        (xs, vec![0.5, 0.5, 10.0]),
    ];
    let op = |kind, coeffs: Vec<f32>| Op::Eltwise { kind, coeffs };
    assert_eq!(
        eval1(op(EltwiseKind::Sum, vec![]), &ins, xs).unwrap(),
        vec![5.5, -2.5, 19.0]
    );
    assert_eq!(
        eval1(op(EltwiseKind::Sum, vec![1.0, -1.0, 2.0]), &ins, xs).unwrap(),
        vec![-2.0, 8.0, 17.0]
    );
    assert_eq!(
        eval1(op(EltwiseKind::Prod, vec![]), &ins, xs).unwrap(),
        vec![2.0, -5.0, 180.0]
    );
    assert_eq!(
        eval1(op(EltwiseKind::Max, vec![]), &ins, xs).unwrap(),
        vec![4.0, 2.0, 10.0]
    );
    let err = eval1(op(EltwiseKind::Sum, vec![1.0]), &ins, xs).unwrap_err();
    assert!(err.to_string().contains("coefficients"), "{err}");
}

#[test]
fn concat_along_channels_per_item() {
    let a = vec![1.0, 2.0, 3.0, 4.0]; // 2x1x1x2
    let b = vec![10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0]; // 2x2x1x2
    let y = eval1(
        Op::Concat,
        &[(s(2, 1, 1, 2), a), (s(2, 2, 1, 2), b)],
        s(2, 3, 1, 2),
    )
    .unwrap();
    assert_eq!(
        y,
        vec![1.0, 2.0, 10.0, 20.0, 30.0, 40.0, 3.0, 4.0, 50.0, 60.0, 70.0, 80.0]
    );
}

#[test]
fn softmax_over_channels() {
    // Two positions, three channels; the second has large values (stability).
    let xs = s(1, 3, 1, 2);
    let x = vec![0.0, 1000.0, 1.0, 1001.0, 2.0, 1002.0];
    let y = eval1(Op::Softmax, &[(xs, x)], xs).unwrap();
    let e: Vec<f64> = (0..3).map(|c| (c as f64).exp()).collect();
    let sum: f64 = e.iter().sum();
    let p: Vec<f32> = e.iter().map(|v| (v / sum) as f32).collect();
    assert_close(&y, &[p[0], p[0], p[1], p[1], p[2], p[2]], 1e-6);
    let mut rng = Rng::new(5);
    let xs = s(2, 7, 2, 3);
    let y = eval1(
        Op::Softmax,
        &[(xs, rng.vec_in(xs.elements(), -20.0, 20.0))],
        xs,
    )
    .unwrap();
    for n in 0..2 {
        for p in 0..6 {
            let total: f32 = (0..7).map(|c| y[(n * 7 + c) * 6 + p]).sum();
            assert!((total - 1.0).abs() < 1e-6, "{total}");
        }
    }
}

#[test]
fn lrn_hand_computed() {
    // alpha/size = 1, beta = 1, k = 1: y = x / (1 + window sum of squares).
    let xs = s(1, 3, 1, 1);
    let op = Op::Lrn {
        size: 3,
        alpha: 3.0,
        beta: 1.0,
        k: 1.0,
    };
    let y = eval1(op, &[(xs, vec![1.0, 2.0, 3.0])], xs).unwrap();
    assert_close(&y, &[1.0 / 6.0, 2.0 / 15.0, 3.0 / 14.0], 1e-7);
}

#[test]
fn lrn_matches_direct_formula() {
    let mut rng = Rng::new(9);
    let xs = s(2, 7, 3, 2);
    let x = rng.vec_in(xs.elements(), -3.0, 3.0);
    let (size, alpha, beta, k) = (5usize, 1e-2f32, 0.75f32, 2.0f32);
    let y = eval1(
        Op::Lrn {
            size,
            alpha,
            beta,
            k,
        },
        &[(xs, x.clone())],
        xs,
    )
    .unwrap();
    let plane = 6;
    let mut want = vec![0f32; x.len()];
    for n in 0..2 {
        for c in 0..7usize {
            for p in 0..plane {
                let mut sq = 0f64;
                for cc in c as isize - 2..=c as isize + 2 {
                    if (0..7).contains(&cc) {
                        let v = f64::from(x[(n * 7 + cc as usize) * plane + p]);
                        sq += v * v;
                    }
                }
                let scale = f64::from(k) + f64::from(alpha) / size as f64 * sq;
                let i = (n * 7 + c) * plane + p;
                want[i] = (f64::from(x[i]) / scale.powf(f64::from(beta))) as f32;
            }
        }
    }
    assert_close(&y, &want, 1e-6);
}

#[test]
fn flatten_and_identity_copy() {
    let x = iota(12);
    let y = eval1(Op::Flatten, &[(s(2, 2, 1, 3), x.clone())], s(2, 6, 1, 1)).unwrap();
    assert_eq!(y, x);
    let err = eval1(Op::Flatten, &[(s(2, 2, 1, 3), x.clone())], s(1, 12, 1, 1)).unwrap_err();
    assert!(matches!(err, CompileError::Layer { .. }), "{err}");
    // Identity with two outputs (Caffe Split).
    let mut g = single(Op::Identity, &[s(1, 3, 2, 2)], s(1, 3, 2, 2));
    let y2 = g.add_tensor("y2", s(1, 3, 2, 2));
    g.nodes[0].outputs.push(y2);
    g.outputs.push(y2);
    let v = run(&g, &[(TensorId(0), x.clone())]).unwrap();
    assert_eq!(v[1], x);
    assert_eq!(v[2], x);
}

// ---------------------------------------------------------------- whole graphs, errors

#[test]
fn every_tensor_value_is_returned() {
    // x -> relu -> a -> scale 2 -> b; c is an unused tensor.
    let mut g = Graph::default();
    let sh = s(1, 1, 1, 2);
    let x = g.add_tensor("x", sh);
    let a = g.add_tensor("a", sh);
    let b = g.add_tensor("b", sh);
    let _c = g.add_tensor("c", sh);
    g.add_node(node(
        "relu",
        Op::Activation(Activation::Relu { slope: 0.0 }),
        &[x],
        &[a],
    ));
    let scale = Op::ChannelAffine {
        scale: Some(Weights::vector(vec![2.0])),
        bias: None,
    };
    g.add_node(node("scale", scale, &[a], &[b]));
    g.inputs = vec![x];
    g.outputs = vec![b];
    let v = run(&g, &[(x, vec![-1.0, 3.0])]).unwrap();
    assert_eq!(
        v,
        vec![vec![-1.0, 3.0], vec![0.0, 3.0], vec![0.0, 6.0], vec![]]
    );
}

fn layer_error_names(err: &CompileError, name: &str, fragment: &str) {
    match err {
        CompileError::Layer { layer, reason, .. } => {
            assert_eq!(layer, name, "{err}");
            assert!(reason.contains(fragment), "{err}");
        }
        other => panic!("not a layer error: {other}"),
    }
}

#[test]
fn errors_name_the_node() {
    let xs = s(1, 1, 2, 2);
    // Wrong input count.
    let err = eval1(Op::Softmax, &[(xs, vec![0.0; 4]), (xs, vec![0.0; 4])], xs).unwrap_err();
    layer_error_names(&err, "op", "2 inputs, needs 1");
    let err = eval1(
        Op::Eltwise {
            kind: EltwiseKind::Sum,
            coeffs: vec![],
        },
        &[(xs, vec![0.0; 4])],
        xs,
    )
    .unwrap_err();
    layer_error_names(&err, "op", "at least 2");
    // Missing input value.
    let g = single(Op::Softmax, &[xs], xs);
    layer_error_names(&run(&g, &[]).unwrap_err(), "op", "has no value");
    // Wrong input length.
    layer_error_names(
        &run(&g, &[(TensorId(0), vec![0.0; 3])]).unwrap_err(),
        "op",
        "has 3 values",
    );
    // Wrong constant lengths.
    let bad_affine = Op::ChannelAffine {
        scale: Some(Weights::vector(vec![1.0, 2.0])),
        bias: None,
    };
    layer_error_names(
        &eval1(bad_affine, &[(xs, vec![0.0; 4])], xs).unwrap_err(),
        "op",
        "scale has 2 values",
    );
    let p = conv_params(
        window([2, 2], [1, 1], [0; 4], [1, 1]),
        1,
        1,
        vec![1.0; 4],
        [1, 1, 2, 2],
        Some(vec![0.0, 0.0]),
    );
    layer_error_names(
        &eval1(Op::Conv(p), &[(xs, vec![0.0; 4])], s(1, 1, 1, 1)).unwrap_err(),
        "op",
        "bias has 2 values",
    );
    let fc = Op::FullyConnected {
        weight: Weights::vector(vec![1.0; 5]),
        bias: None,
    };
    layer_error_names(
        &eval1(fc, &[(xs, vec![0.0; 4])], s(1, 1, 1, 1)).unwrap_err(),
        "op",
        "weight",
    );
    // Zero stride, bad groups, even LRN size.
    let p = conv_params(
        window([1, 1], [0, 1], [0; 4], [1, 1]),
        1,
        1,
        vec![1.0],
        [1, 1, 1, 1],
        None,
    );
    layer_error_names(
        &eval1(Op::Conv(p), &[(xs, vec![0.0; 4])], xs).unwrap_err(),
        "op",
        "zero",
    );
    let p = conv_params(
        window([1, 1], [1, 1], [0; 4], [1, 1]),
        2,
        1,
        vec![1.0],
        [1, 1, 1, 1],
        None,
    );
    layer_error_names(
        &eval1(Op::Conv(p), &[(xs, vec![0.0; 4])], xs).unwrap_err(),
        "op",
        "groups",
    );
    let lrn = Op::Lrn {
        size: 2,
        alpha: 1.0,
        beta: 1.0,
        k: 1.0,
    };
    layer_error_names(
        &eval1(lrn, &[(xs, vec![0.0; 4])], xs).unwrap_err(),
        "op",
        "not odd",
    );
}

#[test]
fn network_errors() {
    let xs = s(1, 1, 1, 1);
    let g = single(Op::Softmax, &[xs], xs);
    for inputs in [
        vec![(TensorId(9), vec![0.0])],
        vec![(TensorId(1), vec![0.0])],
        vec![(TensorId(0), vec![0.0]), (TensorId(0), vec![0.0])],
    ] {
        let err = run(&g, &inputs).unwrap_err();
        assert!(matches!(err, CompileError::Network(_)), "{err}");
    }
    let mut broken = g.clone();
    broken.nodes[0].inputs = vec![TensorId(1)];
    assert!(matches!(
        run(&broken, &[]).unwrap_err(),
        CompileError::Network(_)
    ));
}

/// A LeNet-size network in a debug build: conv 20@5x5, pool, conv 50@5x5, pool, fc 500,
/// relu, fc 10, softmax on random weights; checks it runs and the softmax sums to 1.
#[test]
fn lenet_size_network_runs() {
    let mut rng = Rng::new(1);
    let mut g = Graph::default();
    let x = g.add_tensor("data", s(1, 1, 28, 28));
    let c1 = g.add_tensor("conv1", s(1, 20, 24, 24));
    let p1 = g.add_tensor("pool1", s(1, 20, 12, 12));
    let c2 = g.add_tensor("conv2", s(1, 50, 8, 8));
    let p2 = g.add_tensor("pool2", s(1, 50, 4, 4));
    let f1 = g.add_tensor("ip1", s(1, 500, 1, 1));
    let r1 = g.add_tensor("relu1", s(1, 500, 1, 1));
    let f2 = g.add_tensor("ip2", s(1, 10, 1, 1));
    let prob = g.add_tensor("prob", s(1, 10, 1, 1));
    let conv = |rng: &mut Rng, c, k| {
        Op::Conv(conv_params(
            window([5, 5], [1, 1], [0; 4], [1, 1]),
            1,
            k,
            rng.vec(k * c * 25),
            [k, c, 5, 5],
            Some(rng.vec(k)),
        ))
    };
    let fc = |rng: &mut Rng, c, k| Op::FullyConnected {
        weight: Weights::new(vec![k, c], rng.vec_in(k * c, -0.1, 0.1)).unwrap(),
        bias: Some(Weights::vector(rng.vec(k))),
    };
    let op = conv(&mut rng, 1, 20);
    g.add_node(node("conv1", op, &[x], &[c1]));
    g.add_node(node(
        "pool1",
        pool_op(PoolKind::Max, 2, 2, 0, true, true),
        &[c1],
        &[p1],
    ));
    let op = conv(&mut rng, 20, 50);
    g.add_node(node("conv2", op, &[p1], &[c2]));
    g.add_node(node(
        "pool2",
        pool_op(PoolKind::Max, 2, 2, 0, true, true),
        &[c2],
        &[p2],
    ));
    let op = fc(&mut rng, 800, 500);
    g.add_node(node("ip1", op, &[p2], &[f1]));
    g.add_node(node(
        "relu1",
        Op::Activation(Activation::Relu { slope: 0.0 }),
        &[f1],
        &[r1],
    ));
    let op = fc(&mut rng, 500, 10);
    g.add_node(node("ip2", op, &[r1], &[f2]));
    g.add_node(node("prob", Op::Softmax, &[f2], &[prob]));
    g.inputs = vec![x];
    g.outputs = vec![prob];
    let v = run(&g, &[(x, rng.vec_in(784, 0.0, 1.0))]).unwrap();
    let total: f32 = v[prob.0].iter().sum();
    assert!((total - 1.0).abs() < 1e-5, "{total}");
    assert!(v.iter().all(|t| !t.is_empty()));
}

// ---------------------------------------------------------------- LeNet from Caffe

/// The shared Caffe LeNet through the Caffe front end, on the regression digits: the
/// reference reproduces Caffe's own fp32 outputs (`reference_fp32_regression_digits.tsv`,
/// six significant digits), before and after the graph passes. Skips when `../shared` is
/// absent.
#[test]
fn lenet_matches_caffe_fp32() {
    use crate::frontend::{caffe, ModelFiles};
    use std::path::Path;
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared");
    let model = shared.join("models/caffe/lenet");
    let table =
        shared.join("third-party-loadables/lenet-mnist/reference_fp32_regression_digits.tsv");
    let digits = shared.join("nvdla-sw-regression/images/digits");
    if !model.is_dir() || !table.is_file() || !digits.is_dir() {
        eprintln!("skipped: {} not found", shared.display());
        return;
    }
    let files = ModelFiles::Caffe {
        prototxt: model.join("lenet.prototxt"),
        caffemodel: model.join("lenet.caffemodel"),
    };
    let g = caffe::load_files(&files).unwrap();
    let text = crate::passes::dump(&g);
    eprintln!("{text}");
    assert_eq!(
        text.lines().count(),
        1 + g.inputs.len() + g.nodes.len() + g.outputs.len()
    );
    let mut optimised = g.clone();
    crate::passes::run_all(&mut optimised).unwrap();
    let input = g.inputs[0];
    assert_eq!(g.shape(input), s(1, 1, 28, 28));
    let prob = *g.outputs.last().unwrap();
    assert_eq!(g.tensor(prob).name, "prob");
    let table = std::fs::read_to_string(table).unwrap();
    let mut checked = 0;
    let mut worst = 0f32;
    for line in table
        .lines()
        .filter(|l| l.ends_with(".pgm") || l.contains(".pgm\t"))
    {
        let fields: Vec<&str> = line.split('\t').collect();
        let want: Vec<f32> = fields[3].split(' ').map(|v| v.parse().unwrap()).collect();
        let argmax: usize = fields[2].trim_start_matches("argmax=").parse().unwrap();
        let pixels = read_pgm(&std::fs::read(digits.join(fields[0])).unwrap());
        // White-background digits: inverted, then scaled by 1/256 as the table's header says.
        let x: Vec<f32> = pixels
            .iter()
            .map(|&p| (255.0 - f32::from(p)) / 256.0)
            .collect();
        for graph in [&g, &optimised] {
            let values = run(graph, &[(input, x.clone())]).unwrap();
            let got = &values[prob.0];
            let best = (0..10).max_by(|&a, &b| got[a].total_cmp(&got[b])).unwrap();
            assert_eq!(best, argmax, "{}", fields[0]);
            for (a, b) in got.iter().zip(&want) {
                let err = (a - b).abs() / b.abs().max(1e-6);
                worst = worst.max(err);
                assert!(err < 2e-5, "{}: got {got:?}\nwant {want:?}", fields[0]);
            }
        }
        checked += 1;
    }
    assert_eq!(checked, 9);
    eprintln!("LeNet: 9 digits, worst relative error against Caffe {worst:e}");
}

/// A binary (P5) PGM's pixels.
fn read_pgm(bytes: &[u8]) -> Vec<u8> {
    // Header: magic, width, height, maxval as whitespace-separated tokens (with `#`
    // comments), then one whitespace byte and the raster.
    let mut pos = 0;
    let mut tokens = Vec::new();
    while tokens.len() < 4 {
        while bytes[pos].is_ascii_whitespace() {
            pos += 1;
        }
        if bytes[pos] == b'#' {
            while bytes[pos] != b'\n' {
                pos += 1;
            }
            continue;
        }
        let start = pos;
        while !bytes[pos].is_ascii_whitespace() {
            pos += 1;
        }
        tokens.push(std::str::from_utf8(&bytes[start..pos]).unwrap().to_string());
    }
    assert_eq!(tokens[0], "P5");
    let (w, h): (usize, usize) = (tokens[1].parse().unwrap(), tokens[2].parse().unwrap());
    assert_eq!(tokens[3], "255");
    bytes[pos + 1..pos + 1 + w * h].to_vec()
}
