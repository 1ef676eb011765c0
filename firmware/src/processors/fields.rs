//! Descriptor field names of the processors' checks, by number.
//!
//! A check passes its field as a one-byte [`Fld`] rather than a string (two words, loaded
//! from a literal pool at every check site); the name is looked up only when an error is
//! built. `fld!("dla_conv_op_desc.batch")` gives a field's number: a name not in the table
//! does not compile.

/// A descriptor field named in errors (an index into [`NAMES`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fld(pub u8);

impl Fld {
    /// The field's name (`struct.field` in C names).
    pub(crate) fn name(self) -> &'static str {
        let i = usize::from(self.0);
        match ENDS.get(i..i + 2) {
            Some(&[start, end]) => NAMES.get(usize::from(start)..usize::from(end)),
            _ => None,
        }
        .unwrap_or("?")
    }
}

/// Every field name, back to back, by [`Fld`] number (one string and its end offsets
/// rather than a table of string references: a quarter of the read-only data).
const NAMES: &str = concat!(
    "dla_bdma_surface_desc.num_transfers",
    "dla_bdma_surface_desc.source_type",
    "dla_bdma_surface_desc.destination_type",
    "dla_bdma_transfer_desc",
    "dla_bdma_transfer_desc.line_repeat",
    "dla_bdma_transfer_desc.surface_repeat",
    "dla_bdma_transfer_desc.line_size",
    "dla_bdma_transfer_desc.source_line",
    "dla_bdma_transfer_desc.destination_line",
    "dla_bdma_transfer_desc.source_surface",
    "dla_bdma_transfer_desc.destination_surface",
    "dla_bdma_transfer_desc.source_address",
    "dla_bdma_transfer_desc.destination_address",
    "dla_cdp_surface_desc.src_data.type",
    "dla_cdp_surface_desc.dst_data.type",
    "dla_cdp_op_desc.out_precision",
    "dla_cdp_op_desc.in_precision",
    "dla_cdp_op_desc.local_size",
    "dla_cdp_surface_desc.src_data.address",
    "dla_cdp_surface_desc.dst_data.address",
    "dla_cdp_surface_desc.src_data.width",
    "dla_cdp_surface_desc.src_data.height",
    "dla_cdp_surface_desc.src_data.channel",
    "dla_conv_op_desc.conv_mode",
    "dla_conv_op_desc.in_precision",
    "dla_conv_op_desc.out_precision",
    "dla_conv_op_desc.data_format",
    "dla_conv_op_desc.weight_format",
    "dla_conv_op_desc.pixel_mapping",
    "dla_conv_op_desc.mean_format",
    "dla_conv_surface_desc.wmb_data.address",
    "dla_conv_surface_desc.wgs_data.address",
    "dla_conv_surface_desc.weight_data.address",
    "dla_conv_surface_desc.dst_data.address",
    "dla_conv_surface_desc.src_data.address",
    "dla_conv_op_desc.out_cvt.scale",
    "dla_conv_op_desc.out_cvt.offset",
    "dla_conv_surface_desc.src_data.type",
    "dla_conv_surface_desc.weight_data.type",
    "S_STATUS (group busy)",
    "dla_conv_surface_desc.dst_data.width",
    "dla_conv_surface_desc.dst_data.height",
    "dla_conv_surface_desc.dst_data.channel",
    "dla_conv_op_desc.batch",
    "dla_conv_surface_desc.dst_data.line_stride",
    "dla_conv_op_desc.input_width_csc",
    "dla_conv_op_desc.input_height_csc",
    "dla_conv_op_desc.input_channel_csc",
    "dla_conv_op_desc.kernel_width_csc",
    "dla_conv_op_desc.kernel_height_csc",
    "dla_conv_op_desc.kernel_channel_csc",
    "dla_conv_op_desc.input_width_cmac",
    "dla_conv_op_desc.input_height_cmac",
    "dla_conv_op_desc.entry_per_slice",
    "dla_conv_op_desc.release",
    "dla_conv_op_desc.data_bank",
    "dla_conv_op_desc.weight_bank",
    "dla_conv_op_desc.dilation_x",
    "dla_conv_op_desc.dilation_y",
    "dla_conv_op_desc.conv_stride_x",
    "dla_conv_op_desc.conv_stride_y",
    "dla_conv_surface_desc.src_data.width",
    "dla_conv_surface_desc.src_data.height",
    "dla_conv_surface_desc.src_data.channel",
    "dla_conv_op_desc.fetch_grain",
    "dla_conv_op_desc.bytes_per_kernel",
    "dla_lut_param.method",
    "dla_lut_param.hybrid_priority",
    "dla_lut_param.underflow_priority",
    "dla_lut_param.overflow_priority",
    "op_type",
    "dla_pdp_surface_desc.dst_data.type",
    "dla_pdp_surface_desc.src_data",
    "dla_pdp_surface_desc.dst_data",
    "dla_pdp_op_desc.precision",
    "dla_pdp_op_desc.stride_x",
    "dla_pdp_op_desc.stride_y",
    "dla_pdp_op_desc.split_num",
    "dla_pdp_op_desc.pool_width",
    "dla_pdp_op_desc.pool_height",
    "dla_pdp_op_desc.pool_mode",
    "dla_pdp_surface_desc.src_data.address",
    "dla_pdp_surface_desc.dst_data.address",
    "dla_pdp_surface_desc.src_data.width",
    "dla_pdp_surface_desc.src_data.height",
    "dla_pdp_surface_desc.src_data.channel",
    "dla_pdp_surface_desc.dst_data.width",
    "dla_pdp_surface_desc.dst_data.height",
    "dla_pdp_surface_desc.dst_data.channel",
    "dla_pdp_surface_desc.src_data.type",
    "dla_pdp_op_desc.padding_value",
    "dla_rubik_surface_desc.src_data.type",
    "dla_rubik_surface_desc.dst_data.type",
    "dla_rubik_op_desc.mode",
    "dla_rubik_op_desc.precision",
    "dla_rubik_surface_desc.src_data.address",
    "dla_rubik_surface_desc.dst_data.address",
    "dla_rubik_surface_desc.src_data.width",
    "dla_rubik_surface_desc.src_data.height",
    "dla_rubik_surface_desc.src_data.channel",
    "dla_rubik_surface_desc.src_data.plane_stride",
    "dla_rubik_surface_desc.dst_data.channel",
    "dla_rubik_op_desc.stride_x",
    "dla_rubik_op_desc.stride_y",
    "dla_sdp_op_desc.src_precision",
    "dla_sdp_op_desc.dst_precision",
    "dla_sdp_op_desc.conv_mode",
    "dla_sdp_op_desc.x1_op",
    "dla_sdp_op_desc.x2_op",
    "dla_sdp_op_desc.y_op",
    "dla_sdp_op_desc.batch_num",
    "dla_sdp_surface_desc.src_data.address",
    "dla_sdp_surface_desc.dst_data.address",
    "dla_sdp_surface_desc.x1_data.address",
    "dla_sdp_surface_desc.x2_data.address",
    "dla_sdp_surface_desc.y_data.address",
    "dla_sdp_surface_desc.x1_data.type",
    "dla_sdp_surface_desc.x2_data.type",
    "dla_sdp_surface_desc.y_data.type",
    "dla_sdp_surface_desc.src_data.type",
    "dla_sdp_surface_desc.dst_data.type",
    "dla_sdp_surface_desc.src_data.width",
    "dla_sdp_surface_desc.src_data.height",
    "dla_sdp_surface_desc.src_data.channel",
);

/// Where each name starts in [`NAMES`], and where the last one ends.
const ENDS: [u16; 125] = [
    0, 35, 68, 106, 128, 162, 199, 231, 265, 304, 341, 383, 420, 462, 496, 530, 559, 587, 613, 650,
    687, 722, 758, 795, 821, 850, 880, 908, 938, 968, 996, 1034, 1072, 1113, 1151, 1189, 1219,
    1250, 1285, 1323, 1344, 1380, 1417, 1455, 1477, 1519, 1551, 1584, 1618, 1651, 1685, 1720, 1753,
    1787, 1819, 1843, 1869, 1897, 1924, 1951, 1981, 2011, 2047, 2084, 2122, 2150, 2183, 2203, 2232,
    2264, 2295, 2302, 2336, 2365, 2394, 2419, 2443, 2467, 2492, 2518, 2545, 2570, 2607, 2644, 2679,
    2715, 2752, 2787, 2823, 2860, 2894, 2923, 2959, 2995, 3017, 3044, 3083, 3122, 3159, 3197, 3236,
    3280, 3319, 3345, 3371, 3400, 3429, 3454, 3475, 3496, 3516, 3541, 3578, 3615, 3651, 3687, 3722,
    3755, 3788, 3820, 3854, 3888, 3923, 3959, 3996,
];

/// The [`Fld`] of a field name.
macro_rules! fld {
    ("dla_bdma_surface_desc.num_transfers") => {
        $crate::processors::fields::Fld(0)
    };
    ("dla_bdma_surface_desc.source_type") => {
        $crate::processors::fields::Fld(1)
    };
    ("dla_bdma_surface_desc.destination_type") => {
        $crate::processors::fields::Fld(2)
    };
    ("dla_bdma_transfer_desc") => {
        $crate::processors::fields::Fld(3)
    };
    ("dla_bdma_transfer_desc.line_repeat") => {
        $crate::processors::fields::Fld(4)
    };
    ("dla_bdma_transfer_desc.surface_repeat") => {
        $crate::processors::fields::Fld(5)
    };
    ("dla_bdma_transfer_desc.line_size") => {
        $crate::processors::fields::Fld(6)
    };
    ("dla_bdma_transfer_desc.source_line") => {
        $crate::processors::fields::Fld(7)
    };
    ("dla_bdma_transfer_desc.destination_line") => {
        $crate::processors::fields::Fld(8)
    };
    ("dla_bdma_transfer_desc.source_surface") => {
        $crate::processors::fields::Fld(9)
    };
    ("dla_bdma_transfer_desc.destination_surface") => {
        $crate::processors::fields::Fld(10)
    };
    ("dla_bdma_transfer_desc.source_address") => {
        $crate::processors::fields::Fld(11)
    };
    ("dla_bdma_transfer_desc.destination_address") => {
        $crate::processors::fields::Fld(12)
    };
    ("dla_cdp_surface_desc.src_data.type") => {
        $crate::processors::fields::Fld(13)
    };
    ("dla_cdp_surface_desc.dst_data.type") => {
        $crate::processors::fields::Fld(14)
    };
    ("dla_cdp_op_desc.out_precision") => {
        $crate::processors::fields::Fld(15)
    };
    ("dla_cdp_op_desc.in_precision") => {
        $crate::processors::fields::Fld(16)
    };
    ("dla_cdp_op_desc.local_size") => {
        $crate::processors::fields::Fld(17)
    };
    ("dla_cdp_surface_desc.src_data.address") => {
        $crate::processors::fields::Fld(18)
    };
    ("dla_cdp_surface_desc.dst_data.address") => {
        $crate::processors::fields::Fld(19)
    };
    ("dla_cdp_surface_desc.src_data.width") => {
        $crate::processors::fields::Fld(20)
    };
    ("dla_cdp_surface_desc.src_data.height") => {
        $crate::processors::fields::Fld(21)
    };
    ("dla_cdp_surface_desc.src_data.channel") => {
        $crate::processors::fields::Fld(22)
    };
    ("dla_conv_op_desc.conv_mode") => {
        $crate::processors::fields::Fld(23)
    };
    ("dla_conv_op_desc.in_precision") => {
        $crate::processors::fields::Fld(24)
    };
    ("dla_conv_op_desc.out_precision") => {
        $crate::processors::fields::Fld(25)
    };
    ("dla_conv_op_desc.data_format") => {
        $crate::processors::fields::Fld(26)
    };
    ("dla_conv_op_desc.weight_format") => {
        $crate::processors::fields::Fld(27)
    };
    ("dla_conv_op_desc.pixel_mapping") => {
        $crate::processors::fields::Fld(28)
    };
    ("dla_conv_op_desc.mean_format") => {
        $crate::processors::fields::Fld(29)
    };
    ("dla_conv_surface_desc.wmb_data.address") => {
        $crate::processors::fields::Fld(30)
    };
    ("dla_conv_surface_desc.wgs_data.address") => {
        $crate::processors::fields::Fld(31)
    };
    ("dla_conv_surface_desc.weight_data.address") => {
        $crate::processors::fields::Fld(32)
    };
    ("dla_conv_surface_desc.dst_data.address") => {
        $crate::processors::fields::Fld(33)
    };
    ("dla_conv_surface_desc.src_data.address") => {
        $crate::processors::fields::Fld(34)
    };
    ("dla_conv_op_desc.out_cvt.scale") => {
        $crate::processors::fields::Fld(35)
    };
    ("dla_conv_op_desc.out_cvt.offset") => {
        $crate::processors::fields::Fld(36)
    };
    ("dla_conv_surface_desc.src_data.type") => {
        $crate::processors::fields::Fld(37)
    };
    ("dla_conv_surface_desc.weight_data.type") => {
        $crate::processors::fields::Fld(38)
    };
    ("S_STATUS (group busy)") => {
        $crate::processors::fields::Fld(39)
    };
    ("dla_conv_surface_desc.dst_data.width") => {
        $crate::processors::fields::Fld(40)
    };
    ("dla_conv_surface_desc.dst_data.height") => {
        $crate::processors::fields::Fld(41)
    };
    ("dla_conv_surface_desc.dst_data.channel") => {
        $crate::processors::fields::Fld(42)
    };
    ("dla_conv_op_desc.batch") => {
        $crate::processors::fields::Fld(43)
    };
    ("dla_conv_surface_desc.dst_data.line_stride") => {
        $crate::processors::fields::Fld(44)
    };
    ("dla_conv_op_desc.input_width_csc") => {
        $crate::processors::fields::Fld(45)
    };
    ("dla_conv_op_desc.input_height_csc") => {
        $crate::processors::fields::Fld(46)
    };
    ("dla_conv_op_desc.input_channel_csc") => {
        $crate::processors::fields::Fld(47)
    };
    ("dla_conv_op_desc.kernel_width_csc") => {
        $crate::processors::fields::Fld(48)
    };
    ("dla_conv_op_desc.kernel_height_csc") => {
        $crate::processors::fields::Fld(49)
    };
    ("dla_conv_op_desc.kernel_channel_csc") => {
        $crate::processors::fields::Fld(50)
    };
    ("dla_conv_op_desc.input_width_cmac") => {
        $crate::processors::fields::Fld(51)
    };
    ("dla_conv_op_desc.input_height_cmac") => {
        $crate::processors::fields::Fld(52)
    };
    ("dla_conv_op_desc.entry_per_slice") => {
        $crate::processors::fields::Fld(53)
    };
    ("dla_conv_op_desc.release") => {
        $crate::processors::fields::Fld(54)
    };
    ("dla_conv_op_desc.data_bank") => {
        $crate::processors::fields::Fld(55)
    };
    ("dla_conv_op_desc.weight_bank") => {
        $crate::processors::fields::Fld(56)
    };
    ("dla_conv_op_desc.dilation_x") => {
        $crate::processors::fields::Fld(57)
    };
    ("dla_conv_op_desc.dilation_y") => {
        $crate::processors::fields::Fld(58)
    };
    ("dla_conv_op_desc.conv_stride_x") => {
        $crate::processors::fields::Fld(59)
    };
    ("dla_conv_op_desc.conv_stride_y") => {
        $crate::processors::fields::Fld(60)
    };
    ("dla_conv_surface_desc.src_data.width") => {
        $crate::processors::fields::Fld(61)
    };
    ("dla_conv_surface_desc.src_data.height") => {
        $crate::processors::fields::Fld(62)
    };
    ("dla_conv_surface_desc.src_data.channel") => {
        $crate::processors::fields::Fld(63)
    };
    ("dla_conv_op_desc.fetch_grain") => {
        $crate::processors::fields::Fld(64)
    };
    ("dla_conv_op_desc.bytes_per_kernel") => {
        $crate::processors::fields::Fld(65)
    };
    ("dla_lut_param.method") => {
        $crate::processors::fields::Fld(66)
    };
    ("dla_lut_param.hybrid_priority") => {
        $crate::processors::fields::Fld(67)
    };
    ("dla_lut_param.underflow_priority") => {
        $crate::processors::fields::Fld(68)
    };
    ("dla_lut_param.overflow_priority") => {
        $crate::processors::fields::Fld(69)
    };
    ("op_type") => {
        $crate::processors::fields::Fld(70)
    };
    ("dla_pdp_surface_desc.dst_data.type") => {
        $crate::processors::fields::Fld(71)
    };
    ("dla_pdp_surface_desc.src_data") => {
        $crate::processors::fields::Fld(72)
    };
    ("dla_pdp_surface_desc.dst_data") => {
        $crate::processors::fields::Fld(73)
    };
    ("dla_pdp_op_desc.precision") => {
        $crate::processors::fields::Fld(74)
    };
    ("dla_pdp_op_desc.stride_x") => {
        $crate::processors::fields::Fld(75)
    };
    ("dla_pdp_op_desc.stride_y") => {
        $crate::processors::fields::Fld(76)
    };
    ("dla_pdp_op_desc.split_num") => {
        $crate::processors::fields::Fld(77)
    };
    ("dla_pdp_op_desc.pool_width") => {
        $crate::processors::fields::Fld(78)
    };
    ("dla_pdp_op_desc.pool_height") => {
        $crate::processors::fields::Fld(79)
    };
    ("dla_pdp_op_desc.pool_mode") => {
        $crate::processors::fields::Fld(80)
    };
    ("dla_pdp_surface_desc.src_data.address") => {
        $crate::processors::fields::Fld(81)
    };
    ("dla_pdp_surface_desc.dst_data.address") => {
        $crate::processors::fields::Fld(82)
    };
    ("dla_pdp_surface_desc.src_data.width") => {
        $crate::processors::fields::Fld(83)
    };
    ("dla_pdp_surface_desc.src_data.height") => {
        $crate::processors::fields::Fld(84)
    };
    ("dla_pdp_surface_desc.src_data.channel") => {
        $crate::processors::fields::Fld(85)
    };
    ("dla_pdp_surface_desc.dst_data.width") => {
        $crate::processors::fields::Fld(86)
    };
    ("dla_pdp_surface_desc.dst_data.height") => {
        $crate::processors::fields::Fld(87)
    };
    ("dla_pdp_surface_desc.dst_data.channel") => {
        $crate::processors::fields::Fld(88)
    };
    ("dla_pdp_surface_desc.src_data.type") => {
        $crate::processors::fields::Fld(89)
    };
    ("dla_pdp_op_desc.padding_value") => {
        $crate::processors::fields::Fld(90)
    };
    ("dla_rubik_surface_desc.src_data.type") => {
        $crate::processors::fields::Fld(91)
    };
    ("dla_rubik_surface_desc.dst_data.type") => {
        $crate::processors::fields::Fld(92)
    };
    ("dla_rubik_op_desc.mode") => {
        $crate::processors::fields::Fld(93)
    };
    ("dla_rubik_op_desc.precision") => {
        $crate::processors::fields::Fld(94)
    };
    ("dla_rubik_surface_desc.src_data.address") => {
        $crate::processors::fields::Fld(95)
    };
    ("dla_rubik_surface_desc.dst_data.address") => {
        $crate::processors::fields::Fld(96)
    };
    ("dla_rubik_surface_desc.src_data.width") => {
        $crate::processors::fields::Fld(97)
    };
    ("dla_rubik_surface_desc.src_data.height") => {
        $crate::processors::fields::Fld(98)
    };
    ("dla_rubik_surface_desc.src_data.channel") => {
        $crate::processors::fields::Fld(99)
    };
    ("dla_rubik_surface_desc.src_data.plane_stride") => {
        $crate::processors::fields::Fld(100)
    };
    ("dla_rubik_surface_desc.dst_data.channel") => {
        $crate::processors::fields::Fld(101)
    };
    ("dla_rubik_op_desc.stride_x") => {
        $crate::processors::fields::Fld(102)
    };
    ("dla_rubik_op_desc.stride_y") => {
        $crate::processors::fields::Fld(103)
    };
    ("dla_sdp_op_desc.src_precision") => {
        $crate::processors::fields::Fld(104)
    };
    ("dla_sdp_op_desc.dst_precision") => {
        $crate::processors::fields::Fld(105)
    };
    ("dla_sdp_op_desc.conv_mode") => {
        $crate::processors::fields::Fld(106)
    };
    ("dla_sdp_op_desc.x1_op") => {
        $crate::processors::fields::Fld(107)
    };
    ("dla_sdp_op_desc.x2_op") => {
        $crate::processors::fields::Fld(108)
    };
    ("dla_sdp_op_desc.y_op") => {
        $crate::processors::fields::Fld(109)
    };
    ("dla_sdp_op_desc.batch_num") => {
        $crate::processors::fields::Fld(110)
    };
    ("dla_sdp_surface_desc.src_data.address") => {
        $crate::processors::fields::Fld(111)
    };
    ("dla_sdp_surface_desc.dst_data.address") => {
        $crate::processors::fields::Fld(112)
    };
    ("dla_sdp_surface_desc.x1_data.address") => {
        $crate::processors::fields::Fld(113)
    };
    ("dla_sdp_surface_desc.x2_data.address") => {
        $crate::processors::fields::Fld(114)
    };
    ("dla_sdp_surface_desc.y_data.address") => {
        $crate::processors::fields::Fld(115)
    };
    ("dla_sdp_surface_desc.x1_data.type") => {
        $crate::processors::fields::Fld(116)
    };
    ("dla_sdp_surface_desc.x2_data.type") => {
        $crate::processors::fields::Fld(117)
    };
    ("dla_sdp_surface_desc.y_data.type") => {
        $crate::processors::fields::Fld(118)
    };
    ("dla_sdp_surface_desc.src_data.type") => {
        $crate::processors::fields::Fld(119)
    };
    ("dla_sdp_surface_desc.dst_data.type") => {
        $crate::processors::fields::Fld(120)
    };
    ("dla_sdp_surface_desc.src_data.width") => {
        $crate::processors::fields::Fld(121)
    };
    ("dla_sdp_surface_desc.src_data.height") => {
        $crate::processors::fields::Fld(122)
    };
    ("dla_sdp_surface_desc.src_data.channel") => {
        $crate::processors::fields::Fld(123)
    };
}
pub(crate) use fld;

#[cfg(test)]
mod tests {
    extern crate std;

    #[test]
    fn numbers_name_their_fields() {
        let mut joined = std::string::String::new();
        for i in 0..super::ENDS.len() - 1 {
            let n = super::Fld(i as u8).name();
            assert!(n.starts_with("dla_") || n == "S_STATUS (group busy)" || n == "op_type");
            joined.push_str(n);
        }
        assert_eq!(joined, super::NAMES);
        assert_eq!(super::Fld(255).name(), "?");
        assert_eq!(
            fld!("dla_conv_op_desc.batch").name(),
            "dla_conv_op_desc.batch"
        );
    }
}
