//! umd crate
