//! The NVDLA loadable: reader, validator, builder and descriptor codecs.
//!
//! A *loadable* is the file the NVDLA compiler produces and the runtime
//! executes: a FlatBuffers buffer (schema `nvdla.loadable`, version 0.7) that
//! lists the memory to allocate, the blobs that fill it, the tasks to submit
//! (DLA1 hardware tasks and EMU1 CPU tasks), their address lists, events,
//! tensor descriptors and relocations. DLA1 and EMU1 tasks point (through
//! address lists) at packed little-endian C descriptors, decoded by [`dla`]
//! and [`emu`].
//!
//! Everything here is `no_std`; reading needs no heap. The builder needs the
//! `alloc` feature.
#![cfg_attr(not(feature = "std"), no_std)]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[cfg(feature = "alloc")]
extern crate alloc;

#[cfg(feature = "alloc")]
pub mod builder;
pub mod codec;
pub mod cubes;
pub mod dla;
pub mod emu;

pub use codec::{ByteReader, ByteWriter, DecodeError, Descriptor, EncodeError};
pub mod error;
#[cfg(feature = "alloc")]
pub mod examples;
pub mod fb;
#[cfg(feature = "cli")]
pub mod inspect;
#[cfg(feature = "cli")]
mod inspect_tasks;
#[cfg(feature = "alloc")]
pub mod lint;
mod loadable;
pub mod schema;
pub mod upgrade;
mod validate;

pub use error::{Error, ErrorKind, List, Location};
pub use loadable::*;
pub use schema::*;
