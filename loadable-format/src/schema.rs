//! The enums of the loadable schema (`nvdla.loadable`, v0.7), with their wire values.
//!
//! Enums whose values reach hardware or drive allocation (interface, memory
//! domain, event op) are closed: unknown values fail validation. Enums that
//! only describe tensors are open (`Other(raw)`), because real compiler output
//! uses values beyond the schema (e.g. data format 3, `NCxHWx`, which the
//! UMD's type header defines but the schema does not).

// Variant names follow the schema's spelling (`R16_F`, `A16B16G16R16_F`, ...),
// so they can be matched against upstream tools' output.
#![allow(non_camel_case_types)]

use bitflags::bitflags;

macro_rules! closed_enum {
    ($(#[$m:meta])* $name:ident : $raw:ty { $($(#[$vm:meta])* $var:ident = $val:expr),* $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name { $($(#[$vm])* $var),* }
        impl $name {
            /// Decode a wire value; `None` if the schema does not define it.
            pub fn from_raw(v: $raw) -> Option<Self> {
                match v { $($val => Some(Self::$var),)* _ => None }
            }
            /// The wire value.
            pub fn raw(self) -> $raw {
                match self { $(Self::$var => $val),* }
            }
            /// Name as in the schema.
            pub fn name(self) -> &'static str {
                match self { $(Self::$var => stringify!($var)),* }
            }
        }
        impl core::fmt::Display for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

macro_rules! open_enum {
    ($(#[$m:meta])* $name:ident : $raw:ty { $($(#[$vm:meta])* $var:ident = $val:expr),* $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vm])* $var,)*
            /// A value the schema does not name, kept as is.
            Other($raw),
        }
        impl $name {
            /// Decode a wire value (never fails).
            pub fn from_raw(v: $raw) -> Self {
                match v { $($val => Self::$var,)* other => Self::Other(other) }
            }
            /// The wire value.
            pub fn raw(self) -> $raw {
                match self { $(Self::$var => $val,)* Self::Other(v) => v }
            }
        }
        impl core::fmt::Display for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                match self {
                    $(Self::$var => f.write_str(stringify!($var)),)*
                    Self::Other(v) => write!(f, "{}({})", stringify!($name), v),
                }
            }
        }
    };
}

closed_enum! {
    /// Which executor a task or blob is for.
    Interface: u32 {
        /// Raw data (weights, images).
        NONE = 0,
        /// The NVDLA hardware (firmware interface version 1).
        DLA1 = 1,
        /// The CPU emulator (softmax, power).
        EMU1 = 2,
    }
}

closed_enum! {
    /// Where a memory-list entry is allocated.
    MemoryDomain: u8 {
        /// System DRAM.
        SYSTEM = 0,
        /// The accelerator's internal SRAM, where present.
        SRAM = 1,
    }
}

bitflags! {
    /// What to do with a memory-list entry.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct MemoryFlags: u16 {
        /// Allocate the region.
        const ALLOC = 1;
        /// After allocation, fill it from the named blobs.
        const SET = 2;
        /// A re-bindable top-level input.
        const INPUT = 4;
        /// A re-bindable top-level output.
        const OUTPUT = 8;
    }
}

closed_enum! {
    /// Hint for the kind of event chain. Variants are named as in the schema.
    #[allow(missing_docs)]
    EventType: u8 { EVENTTYPE0 = 0, EVENTTYPE1 = 1, EVENTTYPE2 = 2 }
}

closed_enum! {
    /// Whether a task waits for or signals an event.
    EventOp: u8 {
        /// Wait until the event reaches the value.
        WAIT = 0,
        /// Set the event to the value.
        SIGNAL = 1,
    }
}

open_enum! {
    /// Tensor memory order.
    DataFormat: u8 {
        /// Unspecified.
        UNKNOWN = 0,
        /// Planar channels.
        NCHW = 1,
        /// Interleaved channels.
        NHWC = 2,
        /// NVDLA's channel-atom layout (not in the schema; the UMD type header defines it).
        NCxHWx = 3,
    }
}

open_enum! {
    /// Element type of a tensor.
    DataType: u8 {
        /// Unspecified.
        UNKNOWN = 0,
        /// 32-bit float.
        FLOAT = 1,
        /// 16-bit float.
        HALF = 2,
        /// Signed 16-bit integer.
        INT16 = 3,
        /// Signed 8-bit integer.
        INT8 = 4,
        /// Unsigned 8-bit integer (UMD type header only).
        UINT8 = 5,
        /// Unsigned 16-bit integer (UMD type header only).
        UINT16 = 6,
    }
}

open_enum! {
    /// What a tensor holds. Variants are named as in the schema.
    #[allow(missing_docs)]
    DataCategory: u8 { IMAGE = 0, WEIGHT = 1, FEATURE = 2, PLANAR = 3, BIAS = 4 }
}

open_enum! {
    /// How pixels map to memory. Variants are named as in the schema.
    #[allow(missing_docs)]
    PixelMapping: u8 { PITCH_LINEAR = 0, INVALID_PIXEL_MAP = 1 }
}

open_enum! {
    /// Pixel format of an image tensor, or FEATURE / FEATURE_X8 for feature cubes. Variants are named as in the schema.
    #[allow(missing_docs)]
    PixelFormat: u8 {
        R8 = 0, R10 = 1, R12 = 2, R16 = 3, R16_I = 4, R16_F = 5,
        A16B16G16R16 = 6, X16B16G16R16 = 7, A16B16G16R16_F = 8,
        A16Y16U16V16 = 9, V16U16Y16A16 = 10, A16Y16U16V16_F = 11,
        A8B8G8R8 = 12, A8R8G8B8 = 13, B8G8R8A8 = 14, R8G8B8A8 = 15,
        X8B8G8R8 = 16, X8R8G8B8 = 17, B8G8R8X8 = 18, R8G8B8X8 = 19,
        A2B10G10R10 = 20, A2R10G10B10 = 21, B10G10R10A2 = 22, R10G10B10A2 = 23,
        A2Y10U10V10 = 24, V10U10Y10A2 = 25, A8Y8U8V8 = 26, V8U8Y8A8 = 27,
        Y8_U8V8_N444 = 28, Y8_V8U8_N444 = 29, Y10_U10V10_N444 = 30, Y10_V10U10_N444 = 31,
        Y12_U12V12_N444 = 32, Y12_V12U12_N444 = 33, Y16_U16V16_N444 = 34, Y16_V16U16_N444 = 35,
        FEATURE = 36, FEATURE_X8 = 37,
    }
}

open_enum! {
    /// Which stride a relocation rewrites (the UMD's `ELST` enum). Variants are named as in the schema.
    #[allow(missing_docs)]
    RelocType: u8 { ELEMENT = 0, LINE = 1, SURFACE = 2, TENSOR = 3 }
}

open_enum! {
    /// What a DLA1/EMU1 blob holds (`sub_interface`; values from the UMD's loadable header).
    SubInterface: u32 {
        /// Nothing specific.
        NONE = 0,
        /// The task's address-list entry 0: the network descriptor.
        ADDR0 = 1,
        /// The dependency graph (common op descriptors).
        DEPS = 2,
        /// Operation descriptors.
        OPS = 3,
        /// Surface (or buffer) descriptors.
        SURFS = 4,
        /// LUT parameters.
        LUTS = 5,
    }
}

/// The loadable format version this crate reads.
pub const LOADABLE_VERSION: Version = Version {
    major: 0,
    minor: 7,
    sub_minor: 0,
};

/// A three-part version (the schema's `Version` struct: three bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Version {
    /// Major.
    pub major: u8,
    /// Minor.
    pub minor: u8,
    /// Sub-minor.
    pub sub_minor: u8,
}

impl Version {
    /// Decode from the three inline bytes.
    pub fn from_bytes(b: &[u8]) -> Self {
        Self {
            major: b.first().copied().unwrap_or(0),
            minor: b.get(1).copied().unwrap_or(0),
            sub_minor: b.get(2).copied().unwrap_or(0),
        }
    }
}

impl core::fmt::Display for Version {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.sub_minor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enums_round_trip() {
        for v in 0..=2u32 {
            assert_eq!(Interface::from_raw(v).unwrap().raw(), v);
        }
        assert_eq!(Interface::from_raw(3), None);
        assert_eq!(PixelFormat::from_raw(37), PixelFormat::FEATURE_X8);
        assert_eq!(PixelFormat::from_raw(38), PixelFormat::Other(38));
        assert_eq!(DataFormat::from_raw(3).raw(), 3);
        assert_eq!(MemoryFlags::from_bits(16), None);
    }
}
