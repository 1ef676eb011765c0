//! Allocation that fails with `ENOMEM` instead of aborting.
//!
//! Inside a kernel an allocation can fail, and the driver core must then answer `ENOMEM`;
//! the standard collections' growing methods (`push`, `insert`, `collect`, `Box::new`) call
//! the allocation-error handler instead, which in the kernel module is the panic path. So the
//! core reserves memory with `try_reserve` before every insertion that might grow a
//! collection, through these helpers, and never uses the infallible constructors.

use alloc::boxed::Box;
use alloc::vec::Vec;

use crate::error::Error;

/// An empty vector with room for `n` elements.
pub fn vec_with_capacity<T>(n: usize) -> Result<Vec<T>, Error> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| Error::NoMemory)?;
    Ok(v)
}

/// Appends `x` to `v`, growing it fallibly.
pub fn push<T>(v: &mut Vec<T>, x: T) -> Result<(), Error> {
    v.try_reserve(1).map_err(|_| Error::NoMemory)?;
    v.push(x);
    Ok(())
}

/// Inserts `x` at `index` of `v`, growing it fallibly.
pub fn insert<T>(v: &mut Vec<T>, index: usize, x: T) -> Result<(), Error> {
    v.try_reserve(1).map_err(|_| Error::NoMemory)?;
    v.insert(index, x);
    Ok(())
}

/// `x` on the heap (a one-element array: stable Rust has no fallible `Box::new`).
pub fn try_box<T>(x: T) -> Result<Box<[T; 1]>, Error> {
    try_box_with(|| x)
}

/// The value `make` returns, on the heap; `make` runs after the allocation succeeded, so
/// that a large value can be written in place instead of through the stack.
pub fn try_box_with<T>(make: impl FnOnce() -> T) -> Result<Box<[T; 1]>, Error> {
    let mut v = vec_with_capacity(1)?;
    v.push(make());
    // `into_boxed_slice` does not reallocate: the capacity is exactly the length.
    Box::<[T; 1]>::try_from(v.into_boxed_slice()).map_err(|_| Error::NoMemory)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers() {
        let mut v = vec_with_capacity::<u32>(2).unwrap();
        assert!(v.capacity() >= 2);
        push(&mut v, 1).unwrap();
        insert(&mut v, 0, 0).unwrap();
        assert_eq!(v, [0, 1]);
        assert_eq!(*try_box(7u8).unwrap(), [7]);
        assert_eq!(
            vec_with_capacity::<u64>(usize::MAX).err(),
            Some(Error::NoMemory)
        );
    }
}
