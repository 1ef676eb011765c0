//! port crate
