//! vp crate
