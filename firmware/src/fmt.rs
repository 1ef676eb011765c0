//! Private logging shim: `trace!` … `error!` forward to the `log` crate (feature `log`,
//! on by default) or to `defmt` (feature `defmt`, for microcontrollers), or compile to
//! nothing. Messages use plain `{}` placeholders so both back ends accept them.
#![allow(unused_macros)]

#[cfg(all(feature = "log", feature = "defmt"))]
compile_error!("features `log` and `defmt` are mutually exclusive: enable one logging back end");

macro_rules! fw_log {
    ($level:ident, $($arg:tt)+) => {{
        #[cfg(feature = "log")]
        ::log::$level!($($arg)+);
        #[cfg(feature = "defmt")]
        ::defmt::$level!($($arg)+);
        #[cfg(not(any(feature = "log", feature = "defmt")))]
        {
            let _ = format_args_nop!($($arg)+);
        }
    }};
}

/// Swallows a format string and its arguments without evaluating the string, so that
/// variables used only for logging do not warn when logging is compiled out.
macro_rules! format_args_nop {
    ($fmt:literal $(, $arg:expr)* $(,)?) => {{
        $( let _ = &$arg; )*
    }};
}

macro_rules! trace {
    ($($arg:tt)+) => { fw_log!(trace, $($arg)+) };
}
macro_rules! debug {
    ($($arg:tt)+) => { fw_log!(debug, $($arg)+) };
}
macro_rules! info {
    ($($arg:tt)+) => { fw_log!(info, $($arg)+) };
}
macro_rules! warn {
    ($($arg:tt)+) => { fw_log!(warn, $($arg)+) };
}
macro_rules! error {
    ($($arg:tt)+) => { fw_log!(error, $($arg)+) };
}
